//! The forwarding fast path agrees with the full parser, and the L4-checksum policy of a
//! forwarding NIC: transit frames are checked like a router checks them, frames for the NIC's
//! own addresses are fully verified.

use dataplane::buf::HeapBuf;
use dataplane::frames;
use dataplane::net::parse::{fast_transit, parse, parse_headers, DropReason, L3};
use dataplane::net::stack::{IfaceConfig, L4Checksum, NicStack, StackConfig};
use dataplane::net::Verdict;
use proptest::prelude::*;

const OUR_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x99];
const OUR_IP: [u8; 4] = [192, 0, 2, 1];
const A_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 1];
const B_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 2];
const A_IP: [u8; 4] = [192, 0, 2, 10];
const B_IP: [u8; 4] = [198, 51, 100, 10];

fn stack(policy: L4Checksum) -> NicStack<HeapBuf> {
    NicStack::new(
        vec![IfaceConfig::new(OUR_MAC, vec![(OUR_IP, 24)])],
        StackConfig {
            l4_checksum: policy,
            ..StackConfig::default()
        },
    )
}

fn seeds() -> Vec<Vec<u8>> {
    vec![
        frames::udp(A_MAC, B_MAC, A_IP, B_IP, 1000, 2000, b"transit udp"),
        frames::udp(A_MAC, B_MAC, A_IP, B_IP, 1000, 2000, &[7; 600]),
        frames::tcp(
            A_MAC,
            B_MAC,
            A_IP,
            B_IP,
            1000,
            80,
            7,
            9,
            0x18,
            b"transit tcp",
        ),
        frames::tcp(A_MAC, OUR_MAC, A_IP, OUR_IP, 1000, 80, 7, 9, 0x02, &[]),
        frames::icmp_echo_request(A_MAC, B_MAC, A_IP, B_IP, 1, 1, b"ping"),
    ]
}

/// Frames built from `seeds()`: for each (seed, at, v), seed `seed` with byte `at` flipped by
/// `v | 1` when `v` is a multiple of 3 (so about a third are damaged).
fn mutated(picks: &[(usize, usize, u8)]) -> Vec<Vec<u8>> {
    picks
        .iter()
        .map(|&(seed, at, v)| {
            let mut f = seeds()[seed].clone();
            if at < f.len() && v % 3 == 0 {
                f[at] ^= v | 1;
            }
            f
        })
        .collect()
}

#[test]
fn valid_transit_frames_take_the_fast_path() {
    for f in &seeds()[..3] {
        assert_eq!(fast_transit(f, &OUR_MAC), Some(B_IP));
    }
    // Not transit: addressed to our MAC, ICMP, broadcast.
    assert_eq!(fast_transit(&seeds()[3], &OUR_MAC), None);
    assert_eq!(fast_transit(&seeds()[4], &OUR_MAC), None);
    let mut bcast = seeds()[0].clone();
    bcast[..6].fill(0xff);
    assert_eq!(fast_transit(&bcast, &OUR_MAC), None);
}

#[test]
fn transit_bad_l4_checksum_is_forwarded_but_local_is_dropped() {
    let mut transit = seeds()[0].clone();
    transit[40] ^= 0x55; // UDP checksum
    let mut local = frames::udp(A_MAC, OUR_MAC, A_IP, OUR_IP, 1000, 2000, b"to the nic");
    local[40] ^= 0x55;
    assert_eq!(parse(&transit), Err(DropReason::BadL4Checksum));

    let mut fwd = stack(L4Checksum::Terminating);
    assert_eq!(
        fwd.rx(0, &mut HeapBuf::from_frame(&transit), 0),
        Verdict::Pass
    );
    assert_eq!(
        fwd.rx(0, &mut HeapBuf::from_frame(&local), 0),
        Verdict::Drop(DropReason::BadL4Checksum)
    );
    // A NIC that hands frames to its host verifies every one (the host relies on it).
    let mut nic = stack(L4Checksum::All);
    assert_eq!(
        nic.rx(0, &mut HeapBuf::from_frame(&transit), 0),
        Verdict::Drop(DropReason::BadL4Checksum)
    );
    // The IP header checksum is checked on transit frames too.
    let mut bad_ip = seeds()[0].clone();
    bad_ip[24] ^= 1;
    assert_eq!(
        fwd.rx(0, &mut HeapBuf::from_frame(&bad_ip), 0),
        Verdict::Drop(DropReason::BadIpChecksum)
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    /// Whatever the fast path accepts, the full parser accepts with the same facts.
    #[test]
    fn fast_path_never_accepts_what_the_parser_refuses(
        seed in 0usize..5,
        flips in proptest::collection::vec((0usize..700, any::<u8>()), 0..4),
        cut in 0usize..700,
    ) {
        let mut f = seeds()[seed].clone();
        for (at, v) in flips {
            if at < f.len() {
                f[at] = v;
            }
        }
        f.truncate(cut.max(1).min(f.len()));
        if let Some(dst) = fast_transit(&f, &OUR_MAC) {
            let p = parse_headers(&f).expect("fast path accepted a frame the parser refuses");
            let same = matches!(p.l3, L3::Ipv4 { proto: 6 | 17, dst: d, .. } if d == dst);
            prop_assert!(same, "fast path and parser disagree: {:?}", p.l3);
            prop_assert!(p.dst_mac != OUR_MAC && p.dst_mac[0] & 1 == 0);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    /// `rx_burst` decides each frame exactly as `rx` does, counters included, under both
    /// checksum policies; with `verdicts` one slot short, every frame is still handled and
    /// counted once (the slots there are get their verdicts) and it returns false.
    #[test]
    fn rx_burst_matches_rx_frame_by_frame(
        picks in proptest::collection::vec((0usize..5, 0usize..80, any::<u8>()), 1..80),
        all in any::<bool>(),
        short in any::<bool>(),
    ) {
        let policy = if all { L4Checksum::All } else { L4Checksum::Terminating };
        let frames = mutated(&picks);
        let mut one = stack(policy);
        let expect: Vec<Verdict> = frames
            .iter()
            .map(|f| one.rx(0, &mut HeapBuf::from_frame(f), 0))
            .collect();
        let mut burst = stack(policy);
        let mut bufs: Vec<HeapBuf> = frames.iter().map(|f| HeapBuf::from_frame(f)).collect();
        let slots = bufs.len() - usize::from(short);
        let mut verdicts = vec![Verdict::Consumed; slots];
        let all_pass = burst.rx_burst(0, &mut bufs, 0, &mut verdicts);
        prop_assert_eq!(&verdicts[..], &expect[..slots]);
        prop_assert_eq!(all_pass, !short && expect.iter().all(|d| *d == Verdict::Pass));
        prop_assert_eq!(burst.counters(), one.counters());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// `transit_mask` sets bit k exactly for the frames the fast path accepts whose
    /// destination is not one of the port's addresses (one address or several), and counts
    /// only those as passed; bursts of every length up to 64 (the prefetching loop and its
    /// tail).
    #[test]
    fn transit_mask_marks_exactly_the_fast_path_frames(
        picks in proptest::collection::vec((0usize..5, 0usize..80, any::<u8>()), 0..=64),
        several in any::<bool>(),
    ) {
        let frames = mutated(&picks);
        // With several addresses, B_IP (the seeds' transit destination) is one of ours.
        let ips = if several { vec![(OUR_IP, 24), (B_IP, 24)] } else { vec![(OUR_IP, 24)] };
        let mut s = NicStack::<HeapBuf>::new(
            vec![IfaceConfig::new(OUR_MAC, ips.clone())],
            StackConfig { l4_checksum: L4Checksum::Terminating, ..StackConfig::default() },
        );
        let bufs: Vec<HeapBuf> = frames.iter().map(|f| HeapBuf::from_frame(f)).collect();
        let mask = s.transit_mask(0, &bufs).expect("fast path applies");
        for (k, f) in frames.iter().enumerate() {
            let want = fast_transit(f, &OUR_MAC).is_some_and(|d| !ips.iter().any(|(a, _)| *a == d));
            prop_assert_eq!(mask >> k & 1 == 1, want, "frame {}", k);
        }
        prop_assert_eq!(mask >> frames.len().min(63) >> 1, 0);
        prop_assert_eq!(s.counters().passed, u64::from(mask.count_ones()));
    }
}
