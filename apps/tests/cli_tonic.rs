//! The Tonic commands of `nicemu` (`docs/architecture.md`, "Adding a Tonic protocol module"):
//! changing the module name in a scenario, with no rebuild, changes the protocol the next run uses
//! (its summary, counters and traces show it); `nicemu modules` lists built-in and loaded modules;
//! a library that is not a module is refused with a clear error and a non-zero exit.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn nicemu(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nicemu"))
        .args(args)
        .output()
        .expect("run nicemu")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("apps lives in the workspace")
        .to_path_buf()
}

/// A private temporary directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Self {
        let d = std::env::temp_dir().join(format!("nicemu-cli-tonic-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Sum of the `retransmissions` column of the last row of each flow trace in `dir`.
fn trace_summary(dir: &Path) -> (usize, String) {
    let mut files = 0;
    let mut last_rows = String::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with("flow-") {
            files += 1;
            let t = std::fs::read_to_string(&p).unwrap();
            assert!(
                t.lines().next().unwrap().contains("wnd_size"),
                "{name}: header"
            );
            last_rows.push_str(t.lines().last().unwrap());
            last_rows.push('\n');
        }
    }
    (files, last_rows)
}

#[test]
fn changing_the_module_name_changes_the_protocol_of_the_next_run() {
    let dir = Scratch::new("swap");
    let base = std::fs::read_to_string(workspace().join("configs/tonic/newreno.toml")).unwrap();
    assert!(base.contains("name = \"newreno\""));
    let mut outcomes = Vec::new();
    for module in ["newreno", "sack", "dcqcn"] {
        let scenario = dir.0.join(format!("{module}.toml"));
        std::fs::write(
            &scenario,
            base.replace("name = \"newreno\"", &format!("name = \"{module}\"")),
        )
        .unwrap();
        let csv = dir.0.join(format!("csv-{module}"));
        let out = nicemu(&[
            "testbench",
            scenario.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
        ]);
        let t = text(&out);
        assert!(out.status.success(), "{module}: {t}");
        assert!(t.contains(&format!("module {module},")), "{module}: {t}");
        assert!(t.contains("all complete"), "{module}: {t}");
        let (files, rows) = trace_summary(&csv);
        assert_eq!(files, 4, "{module}: one trace per flow");
        outcomes.push((module, t, rows));
    }
    // The receiver the testbench pairs with each module differs, and so do the runs.
    assert!(outcomes[0].1.contains("receiver tcp-cumulative"));
    assert!(outcomes[1].1.contains("receiver tcp-sack"));
    assert!(outcomes[2].1.contains("receiver roce-go-back-n"));
    assert_ne!(
        outcomes[0].2, outcomes[1].2,
        "newreno and sack traces are identical"
    );
    assert_ne!(
        outcomes[0].2, outcomes[2].2,
        "newreno and dcqcn traces are identical"
    );
}

#[test]
fn unknown_module_in_a_scenario_names_the_key() {
    let dir = Scratch::new("bad");
    let base = std::fs::read_to_string(workspace().join("configs/tonic/newreno.toml")).unwrap();
    let scenario = dir.0.join("bad.toml");
    std::fs::write(
        &scenario,
        base.replace("name = \"newreno\"", "name = \"cubic\""),
    )
    .unwrap();
    let out = nicemu(&["testbench", scenario.to_str().unwrap()]);
    let t = text(&out);
    assert!(!out.status.success());
    assert!(t.contains("module.name") && t.contains("cubic"), "{t}");
    assert!(!t.contains("panicked"), "{t}");
}

/// The example module library next to the nicemu binary (cargo nextest --workspace builds
/// it); built now when missing.
fn example_lib() -> PathBuf {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_nicemu"));
    let profile_dir = bin.parent().unwrap().to_path_buf();
    let lib = profile_dir.join("libnicemu_tonic_example.so");
    if !lib.is_file() {
        let status = Command::new(env!("CARGO"))
            .current_dir(workspace())
            .env("CARGO_TARGET_DIR", profile_dir.parent().unwrap())
            .args(["build", "--quiet", "-p", "nicemu-tonic-example"])
            .status()
            .unwrap();
        assert!(status.success());
    }
    lib
}

#[test]
fn modules_lists_builtins_and_a_loaded_library() {
    let out = nicemu(&["modules"]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    for m in ["reno", "newreno", "sack", "ndp", "dcqcn", "irn", "dctcp"] {
        assert!(
            t.lines()
                .any(|l| l.starts_with(m) && l.contains("built-in")),
            "{m}: {t}"
        );
    }
    let lib = example_lib();
    let out = nicemu(&["modules", "--plugin", lib.to_str().unwrap()]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(
        t.lines()
            .any(|l| l.starts_with("reno-example") && l.contains("loaded") && l.contains("wnd")),
        "{t}"
    );
    // Something that is not a module library: refused, named, non-zero exit.
    let dir = Scratch::new("notlib");
    let fake = dir.0.join("libfake.so");
    std::fs::write(&fake, b"not an ELF file").unwrap();
    let out = nicemu(&["modules", "--plugin", fake.to_str().unwrap()]);
    let t = text(&out);
    assert!(!out.status.success());
    assert!(t.contains("libfake.so"), "{t}");
    assert!(!t.contains("panicked"), "{t}");
}

/// `nicemu testbench --csv DIR --plot` writes `DIR/<scenario>.svg` beside the CSV traces
/// (title, axes with units, a legend); `--plot` without `--csv` is a usage error.
#[test]
fn testbench_plot_writes_an_svg_beside_the_csv() {
    let dir = Scratch::new("plot");
    let scenario = workspace().join("configs/tonic/homa-incast.toml");
    let out = nicemu(&[
        "testbench",
        scenario.to_str().unwrap(),
        "--csv",
        dir.0.to_str().unwrap(),
        "--plot",
    ]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    let svg = dir.0.join("homa-incast.svg");
    assert!(t.contains(&format!("plot: {}", svg.display())), "{t}");
    assert!(dir.0.join("flow-0.csv").exists());
    let s = std::fs::read_to_string(&svg).unwrap();
    for want in [
        "homa-incast: module homa, receiver homa-grant, 8 flows",
        "acknowledged (KB)",
        "throughput (Gbit/s)",
        "virtual time (µs)",
        "flow 7",
    ] {
        assert!(s.contains(want), "no {want:?} in the SVG");
    }
    let out = nicemu(&["testbench", scenario.to_str().unwrap(), "--plot"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("--csv"), "{}", text(&out));
}
