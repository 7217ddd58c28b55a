//! Unit tests of Tonic testbench scenarios.

use super::*;

fn err(text: &str) -> ConfigError {
    parse_scenario(text, "t.toml").unwrap_err()
}

#[test]
fn parses_units_and_defaults() {
    let s = parse_scenario(
        "[module]\nname = \"dcqcn\"\n[tonic]\nrtt = \"4us\"\n[link]\nrate = \"40Gbps\"\nbuffer = \"1MB\"\n[flows]\nbytes = \"1.5KB\"\n",
        "dir/x.toml",
    )
    .unwrap();
    assert_eq!(s.name, "x");
    assert_eq!(
        (s.rtt(), s.forward_delay(), s.reverse_delay()),
        (4000, 2000, 2000)
    );
    assert_eq!(s.link.rate, 40_000_000_000);
    assert_eq!(s.link.buffer, 1_000_000);
    assert_eq!((s.flow_bytes(), s.flow_segments()), (1500, 2));
    assert_eq!(s.module_params().line_rate_bps, 40_000_000_000);
}

#[test]
fn errors_name_the_key() {
    assert_eq!(err("[module]\nname = \"cubic\"\n").key, "module.name");
    assert_eq!(
        err("[module]\nname = \"reno\"\nbogus = 1\n").key,
        "module.bogus"
    );
    assert_eq!(
        err("[module]\nname = \"reno\"\n[link]\nrate = \"fast\"\n").key,
        "link.rate"
    );
    let e = err("[module]\nname = \"reno\"\n[tonic]\nloss_prob = 1.5\n");
    assert_eq!(e.key, "tonic.loss_prob");
    assert!(e.to_string().contains("t.toml"), "{e}");
    let e = err("[module]\nname = \"reno\"\n[[drop]]\nflow = 3\nsegment = 1\n");
    assert_eq!(e.key, "drop[0].flow");
    assert_eq!(err("seed = 1\n").key, "(top level)");
    assert_eq!(err("[module\n").key, "line 1");
}
