//! Unit tests of the configuration.

use super::*;

const GOOD: &str = r#"
    [runtime]
    burst = 64
    [[port]]
    name = "a"
    driver = "wire"
    wire = "w"
    ipv4 = ["10.1.0.1/24"]
    mac = "02:00:00:00:00:0a"
    [[port]]
    name = "b"
    driver = "wire"
    wire = "w"
    [wire.w]
    loss = 0.01
    [[lcore]]
    core = 0
    role = "nic"
"#;

fn err(text: &str) -> ConfigError {
    Config::parse(text, "t.toml").unwrap_err()
}

#[test]
fn good_config_parses_with_defaults() {
    let c = Config::parse(GOOD, "t.toml").unwrap();
    assert_eq!(c.runtime.burst, 64);
    assert_eq!(c.ports[0].ipv4, vec![([10, 1, 0, 1], 24)]);
    assert_eq!(c.ports[0].mac, Some([2, 0, 0, 0, 0, 0xa]));
    assert_eq!(c.ports[1].mtu, 1500);
    assert_eq!(c.wires["w"].loss, 0.01);
    assert_eq!(c.nic_lcores().len(), 1);
}

#[test]
fn unknown_key_names_file_key_and_choices() {
    let e = err(&GOOD.replace("burst = 64", "burts = 64"));
    assert_eq!(e.file, "t.toml");
    assert_eq!(e.key, "runtime.burts");
    assert!(e.message.contains("unknown field `burts`"), "{e}");
    assert!(e.message.contains("burst"), "lists expected keys: {e}");
    let e = err(&GOOD.replace("role = \"nic\"", "role = \"nic\"\nspeed = 1"));
    assert_eq!(e.key, "lcore[0].speed");
}

#[test]
fn wrong_type_names_the_key() {
    let e = err(&GOOD.replace("burst = 64", "burst = \"fast\""));
    assert_eq!(e.key, "runtime.burst");
    assert!(e.message.contains("expected u16"), "{e}");
    let e = err(&GOOD.replace("10.1.0.1/24", "10.1.0.1"));
    assert_eq!(e.key, "port[0].ipv4");
    assert!(e.message.contains("10.0.0.1/24"), "{e}");
    let e = err(&GOOD.replace("\"nic\"", "\"gpu\""));
    assert_eq!(e.key, "lcore[0].role");
    let e = err(&GOOD.replace("02:00:00:00:00:0a", "02:00"));
    assert_eq!(e.key, "port[0].mac");
}

#[test]
fn cross_key_rules() {
    assert_eq!(
        err(&GOOD.replace("name = \"b\"", "name = \"a\"")).key,
        "port[1].name"
    );
    assert_eq!(
        err(&GOOD.replace("loss = 0.01", "loss = 2.0")).key,
        "wire.w.loss"
    );
    let three = GOOD.to_string() + "\n[[port]]\nname = \"c\"\ndriver = \"wire\"\nwire = \"w\"\n";
    assert_eq!(err(&three).key, "wire.w");
    assert_eq!(
        err(&GOOD.replace("burst = 64", "burst = 0")).key,
        "runtime.burst"
    );
    assert_eq!(err(&GOOD.replace("\"nic\"", "\"host\"")).key, "lcore");
    let two = GOOD.to_string() + "\n[[lcore]]\ncore = 0\nrole = \"host\"\n";
    assert_eq!(err(&two).key, "lcore[1].core");
    let e = err(&(GOOD.to_string() + "\n[tonic]\nmodule = \"cubic\"\n"));
    assert_eq!(e.key, "tonic.module");
    assert!(e.message.contains("newreno"));
}

#[test]
fn offload_settings_parse_and_are_checked() {
    let c = Config::parse(GOOD, "t.toml").unwrap();
    assert!(c.offloads.setup && c.offloads.teardown && c.offloads.splice);
    assert_eq!(c.offloads.splice_max_pairs, 65_536);
    assert_eq!(c.offloads.splice_idle_timeout_ms, 60_000);
    assert_eq!(c.offloads.splice_linger_ms, 1_000);
    let c = Config::parse(
        &(GOOD.to_string()
            + "\n[offloads]\nsplice = false\nsplice_max_pairs = 1048576\nsplice_linger_ms = 0\n"),
        "t.toml",
    )
    .unwrap();
    assert!(!c.offloads.splice);
    assert_eq!(c.offloads.splice_max_pairs, 1 << 20);
    assert_eq!(c.offloads.splice_linger_ms, 0);
    let c = Config::parse(
        &(GOOD.to_string()
            + "\n[offloads]\nsetup = false\nteardown_time_wait_ms = 500\ncookie_max_age = 4\n"),
        "t.toml",
    )
    .unwrap();
    assert!(!c.offloads.setup && c.offloads.teardown);
    assert_eq!(c.offloads.teardown_time_wait_ms, 500);
    assert_eq!(c.offloads.cookie_max_age, 4);
    let bad = |extra: &str| err(&(GOOD.to_string() + "\n[offloads]\n" + extra + "\n"));
    assert_eq!(
        bad("teardown_max_flows = 0").key,
        "offloads.teardown_max_flows"
    );
    assert_eq!(bad("cookie_max_age = 31").key, "offloads.cookie_max_age");
    assert_eq!(bad("splice_max_pairs = 0").key, "offloads.splice_max_pairs");
    assert_eq!(
        bad("splice_max_pairs = 16777217").key,
        "offloads.splice_max_pairs"
    );
    assert_eq!(
        bad("splice_idle_timeout_ms = 0").key,
        "offloads.splice_idle_timeout_ms"
    );
    assert_eq!(
        bad("splice_linger_ms = 600001").key,
        "offloads.splice_linger_ms"
    );
    assert_eq!(
        bad("cookie_max_age = 20\ncookie_rotate_ticks = 20").key,
        "offloads.cookie_rotate_ticks"
    );
    assert_eq!(
        bad("teardown_time_wait_ms = 0").key,
        "offloads.teardown_time_wait_ms"
    );
    assert_eq!(bad("cookies = 1").key, "offloads.cookies");
}

#[test]
fn tonic_parameters_parse_and_are_checked() {
    let c = Config::parse(
        &(GOOD.to_string()
            + "\n[tonic]\nmodule = \"dcqcn\"\nwindow = 256\nline_rate_mbps = 40000\n"),
        "t.toml",
    )
    .unwrap();
    assert_eq!(c.tonic.module.as_deref(), Some("dcqcn"));
    assert_eq!((c.tonic.window, c.tonic.line_rate_mbps), (256, 40_000));
    assert_eq!(c.tonic.ring_depth, 4, "defaults for the rest");
    let bad = |extra: &str| err(&(GOOD.to_string() + "\n[tonic]\n" + extra + "\n"));
    assert_eq!(bad("window = 100").key, "tonic.window");
    assert_eq!(bad("ring_depth = 9").key, "tonic.ring_depth");
    assert_eq!(bad("bdp_segments = 200").key, "tonic.bdp_segments");
    assert_eq!(
        bad("line_rate_mbps = 1\nmin_rate_mbps = 5").key,
        "tonic.line_rate_mbps"
    );
    assert_eq!(bad("rto = 5").key, "tonic.rto");
}

#[test]
fn syntax_error_names_the_line() {
    let e = err("[runtime]\nburst = \n");
    assert_eq!(e.key, "line 2");
}

#[test]
fn cores_beyond_the_machine_are_refused() {
    let c = Config::parse(&GOOD.replace("core = 0", "core = 7"), "t.toml").unwrap();
    let e = c.check_cores(&[0, 1]).unwrap_err();
    assert_eq!(e.key, "lcore[0].core");
    assert!(e.message.contains("usable cores: 0-1"), "{e}");
    let three = GOOD.to_string()
        + "\n[[lcore]]\ncore = 1\nrole = \"host\"\n[[lcore]]\ncore = 2\nrole = \"host\"\n";
    let c = Config::parse(&three, "t.toml").unwrap();
    assert!(c
        .check_cores(&[0, 1])
        .unwrap_err()
        .message
        .contains("3 lcores"));
    assert!(c.check_cores(&[0, 1, 2]).is_ok());
}
