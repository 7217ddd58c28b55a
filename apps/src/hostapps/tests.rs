//! Unit tests of the applications' command-line adapters.

use super::*;

#[test]
fn client_addresses() {
    let p = [192, 0, 2, 1];
    assert_eq!(
        client_addrs("2", p, 24).unwrap(),
        vec![[192, 0, 2, 2], [192, 0, 2, 3]]
    );
    assert_eq!(
        client_addrs("192.0.2.65/31", p, 24).unwrap(),
        vec![[192, 0, 2, 64], [192, 0, 2, 65]]
    );
    assert_eq!(
        client_addrs("192.0.2.0/31", p, 24).unwrap(),
        vec![[192, 0, 2, 0]]
    );
    assert!(client_addrs("10.0.0.0/30", p, 24).is_err());
    assert!(client_addrs("300", p, 24).is_err());
    assert!(client_addrs("x", p, 24).is_err());
    assert!(client_addrs("1.2.3.4/33", p, 24).is_err());
    assert!(client_addrs("192.0.0.0/8", p, 24).is_err());
}

#[test]
fn port_ranges() {
    assert_eq!(port_range("40000-40099"), Ok((40000, 40099)));
    assert!(port_range("0-5").is_err());
    assert!(port_range("9-5").is_err());
    assert!(port_range("9").is_err());
    assert!(port_range("a-b").is_err());
}

#[test]
fn shares_add_up() {
    for n in 1..5 {
        for total in [0u64, 1, 7, 100] {
            assert_eq!((0..n).map(|k| share(total, n, k)).sum::<u64>(), total);
        }
    }
}
