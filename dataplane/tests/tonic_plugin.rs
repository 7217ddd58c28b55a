//! Out-of-tree Tonic modules through the C ABI (`docs/architecture.md`, "Adding a Tonic protocol
//! module"): the example cdylib (`dataplane/tonic-example`) loads and runs through
//! `dyn TonicModule`; a C module built on the fly from `nicemu_tonic.h` sees every field where the
//! Rust side put it; libraries with the wrong ABI version, a missing symbol, an oversized user
//! context or other defects are refused with a clear error.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use dataplane::tonic::module::{
    CreditScheme, CtxPriority, FlowView, HookOutput, IncomingInput, IncomingPkt, PeriodicInput,
    SegRange,
};
use dataplane::tonic::modules::ModuleParams;
use dataplane::tonic::plugin::{factory, load, load_boxed, PluginError};
use dataplane::tonic::registry::Registry;
use dataplane::tonic::{EngineParams, TonicEngine, TxSegment};

/// The workspace root.
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("dataplane lives in the workspace")
        .to_path_buf()
}

/// The example module's cdylib: the one next to this test's profile directory (built there
/// by `cargo nextest run --workspace` / `cargo build --workspace`) when it is not older than
/// its sources, else built now with `cargo build -p nicemu-tonic-example` into the same target
/// directory and profile.
fn example_lib() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let exe = std::env::current_exe().expect("test executable path");
        // <target>/<profile>/deps/tonic_plugin-<hash>
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("test executable under <target>/<profile>/deps");
        let lib = profile_dir.join("libnicemu_tonic_example.so");
        if !is_fresh(&lib) {
            let target_dir = profile_dir.parent().expect("profile dir in a target dir");
            let mut cmd = Command::new(env!("CARGO"));
            cmd.current_dir(workspace())
                .env("CARGO_TARGET_DIR", target_dir)
                .args(["build", "--quiet", "-p", "nicemu-tonic-example"]);
            match profile_dir.file_name().and_then(|n| n.to_str()) {
                Some("debug") | None => {}
                Some("release") => {
                    cmd.arg("--release");
                }
                Some(other) => {
                    cmd.args(["--profile", other]);
                }
            }
            let status = cmd.status().expect("run cargo build");
            assert!(
                status.success(),
                "cargo build -p nicemu-tonic-example failed"
            );
        }
        assert!(lib.is_file(), "{} missing after the build", lib.display());
        lib
    })
}

/// Whether `lib` exists and is at least as new as the example's sources and the ABI.
fn is_fresh(lib: &Path) -> bool {
    let mtime = |p: &Path| p.metadata().and_then(|m| m.modified()).ok();
    let Some(built) = mtime(lib) else {
        return false;
    };
    let root = workspace();
    [
        "dataplane/tonic-example/src/lib.rs",
        "dataplane/tonic-example/Cargo.toml",
        "offload-api/src/tonic_abi.rs",
    ]
    .iter()
    .all(|src| mtime(&root.join(src)).is_none_or(|t: SystemTime| t <= built))
}

/// A private temporary directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Self {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!(
            "nicemu-tonic-plugin-{}-{nanos}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&dir).expect("create scratch dir");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Checks that a C compiler is available. Rust links with `cc` on Linux and DPDK's shim is
/// built with it, so it always is where these tests build; a missing one fails the test
/// (a skipped test must not pass).
fn have_cc() -> bool {
    let ok = Command::new("cc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(ok, "no `cc` to build the test libraries with");
    ok
}

/// A C module over `nicemu_tonic.h`, shaped by preprocessor switches: a valid module by
/// default. Its hooks echo their inputs into distinct outputs and context words so that the
/// test can check the layout field by field.
const C_MODULE: &str = r#"
#include "nicemu_tonic.h"

#ifndef ABI_VERSION
#define ABI_VERSION NICEMU_TONIC_ABI_VERSION
#endif
#ifndef NAME
#define NAME "c-echo"
#endif
#ifndef SCHEME
#define SCHEME NICEMU_TONIC_CREDIT_RATE
#endif
#ifndef CTX_BYTES
#define CTX_BYTES 60
#endif
#ifndef INCOMING
#define INCOMING incoming
#endif

static void init_flow(uint64_t now, const struct nicemu_tonic_flow_view *flow, uint64_t *ctx,
                      size_t ctx_words) {
    for (size_t i = 0; i < ctx_words; i++) ctx[i] = 100 + i;
    ctx[0] = now + flow->next_new;
}

static void incoming(const struct nicemu_tonic_incoming_input *in, uint64_t *ctx,
                     size_t ctx_words, struct nicemu_tonic_hook_output *out) {
    out->set |= NICEMU_TONIC_OUT_WND_SIZE | NICEMU_TONIC_OUT_CUM_ACK | NICEMU_TONIC_OUT_MARK_RTX
        | NICEMU_TONIC_OUT_MARK_ACKED | NICEMU_TONIC_OUT_ADD_CREDIT | NICEMU_TONIC_OUT_RATE
        | NICEMU_TONIC_OUT_RTX_TIMER_AMOUNT;
    out->wnd_size = in->flow.mss;
    out->cum_ack = in->pkt.cumulative_ack;
    out->mark_rtx = in->pkt.sack[1];
    out->mark_acked.start = in->flow.wnd_start;
    out->mark_acked.end = in->flow.tail;
    out->add_credit = in->pkt.grant_bytes;
    out->rate_bps = ctx_words;
    out->rtx_timer_amount = in->flow.rtx_deadline;
    ctx[0] = in->now;
    ctx[1] = in->pkt.ts_echo;
    ctx[2] = in->pkt.data[3];
    ctx[3] = in->flow.rtx_cnt.words[3];
    ctx[4] = in->flow.is_idle;
    ctx[5] = in->old_wnd_start * 1000 + in->new_wnd_start;
    ctx[6] = (uint64_t)in->pkt.pkt_type << 32 | (uint64_t)in->pkt.flags << 16 | in->pkt.sack_cnt;
    ctx[7] = (uint64_t)in->newly_acked_cnt << 32 | in->flow.window_capacity;
}

static void periodic(const struct nicemu_tonic_periodic_input *in, uint64_t *ctx,
                     size_t ctx_words, struct nicemu_tonic_hook_output *out) {
    (void)ctx_words;
    out->set |= NICEMU_TONIC_OUT_WND_SIZE | NICEMU_TONIC_OUT_STOP_RTX_TIMER;
    out->wnd_size = in->flow.outstanding_cnt;
    ctx[0] = in->now;
    ctx[1] = in->timeout_expired;
    ctx[2] = in->flow.total_sent;
    ctx[3] = in->flow.marked_for_rtx.words[0];
}

static void merge(const uint64_t *before, const uint64_t *from_incoming,
                  const uint64_t *from_periodic, uint64_t *merged, size_t ctx_words) {
    for (size_t i = 0; i < ctx_words; i++)
        merged[i] = before[i] + 10 * from_incoming[i] + 100 * from_periodic[i];
}

static const struct nicemu_tonic_module_vtable VTABLE = {
    NAME,
    { SCHEME, NICEMU_TONIC_CTX_PRIORITY_PERIODIC, 1, 0, CTX_BYTES, 4, 9000, 3000, 0,
      10000000000ull, 1000000 },
    init_flow,
    INCOMING,
    periodic,
    merge,
};

#ifndef NO_VERSION_SYMBOL
uint32_t nicemu_tonic_abi_version(void) { return ABI_VERSION; }
#endif

#ifndef NO_MODULE_SYMBOL
const struct nicemu_tonic_module_vtable *nicemu_tonic_module(void) { return &VTABLE; }
#endif
"#;

/// Compiles [`C_MODULE`] with `defines` (`-D` arguments) into `<scratch>/<name>.so`.
fn build_c(scratch: &Scratch, name: &str, defines: &[&str]) -> PathBuf {
    let src = scratch.0.join(format!("{name}.c"));
    let lib = scratch.0.join(format!("{name}.so"));
    std::fs::write(&src, C_MODULE).expect("write C source");
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("tonic-example/include");
    let out = Command::new("cc")
        .args([
            "-std=c11",
            "-Wall",
            "-Werror",
            "-Wno-unused",
            "-shared",
            "-fPIC",
            "-o",
        ])
        .arg(&lib)
        .arg("-I")
        .arg(&include)
        .args(defines.iter().map(|d| format!("-D{d}")))
        .arg(&src)
        .output()
        .expect("run cc");
    assert!(
        out.status.success(),
        "cc failed for {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    lib
}

fn refusal(lib: &Path) -> PluginError {
    match load(lib) {
        Ok(m) => panic!("{} loaded as module {:?}", lib.display(), m.name()),
        Err(e) => e,
    }
}

fn flow(wnd_start: u64, next_new: u64, wnd_size: u32) -> FlowView {
    FlowView {
        wnd_start,
        next_new,
        tail: 1000,
        wnd_size,
        rcv_wnd: u32::MAX,
        window_capacity: 128,
        mss: 1460,
        rtx_timer_amount: 200_000_000,
        ..Default::default()
    }
}

fn ack(old: u64, cum: u64, flow: FlowView) -> IncomingInput {
    IncomingInput {
        now: 5_000,
        pkt: IncomingPkt::ack(cum),
        newly_acked_cnt: cum.saturating_sub(old) as u32,
        old_wnd_start: old,
        new_wnd_start: old.max(cum),
        flow,
    }
}

#[test]
fn example_module_loads_and_runs() {
    let m = load(example_lib()).expect("the example module loads");
    assert_eq!(m.name(), "reno-example");
    let cfg = m.config();
    assert_eq!(cfg.credit_scheme, CreditScheme::Window);
    assert_eq!((cfg.user_ctx_bytes, cfg.user_ctx_words()), (32, 4));
    assert_eq!(
        (cfg.init_wnd_size, cfg.init_rtx_timer_ns),
        (10, 200_000_000)
    );
    cfg.validate(m.name()).expect("a valid config");

    let mut ctx = vec![0u64; cfg.user_ctx_words()];
    m.init_flow(0, &flow(0, 0, 10), &mut ctx);
    assert_eq!(ctx[0], u64::from(u32::MAX), "ssthresh starts infinite");

    // A cumulative ACK of 4 new segments: slow start grows the window by 4, timer restarted.
    let mut out = HookOutput::default();
    m.incoming(&ack(0, 4, flow(4, 10, 10)), &mut ctx, &mut out);
    assert!(out.has(HookOutput::OUT_WND_SIZE | HookOutput::OUT_RESET_RTX_TIMER));
    assert!(!out.has(HookOutput::OUT_MARK_RTX));
    assert_eq!(out.wnd_size, 14);

    // Three duplicate ACKs of segment 4 with 16 in flight: the third marks segment 4 for
    // retransmission and halves the window to ssthresh = 8.
    let in_flight = flow(4, 20, 14);
    for n in 1..=2 {
        let mut out = HookOutput::default();
        m.incoming(&ack(4, 4, in_flight), &mut ctx, &mut out);
        assert_eq!(out, HookOutput::default(), "duplicate {n} changes nothing");
    }
    let mut out = HookOutput::default();
    m.incoming(&ack(4, 4, in_flight), &mut ctx, &mut out);
    assert!(out.has(HookOutput::OUT_MARK_RTX | HookOutput::OUT_WND_SIZE));
    assert_eq!(out.mark_rtx, SegRange::new(4, 5));
    assert_eq!(out.wnd_size, 8);

    // The retransmission is acknowledged: fast recovery ends with the window at ssthresh.
    let mut out = HookOutput::default();
    m.incoming(&ack(4, 20, flow(20, 20, 9)), &mut ctx, &mut out);
    assert_eq!(out.wnd_size, 8);
    assert!(!out.has(HookOutput::OUT_MARK_RTX));

    // No timeout: nothing. A timeout: window 1, everything outstanding marked, backoff.
    let idle = PeriodicInput {
        now: 9_000,
        timeout_expired: false,
        flow: flow(20, 30, 8),
    };
    let mut out = HookOutput::default();
    m.periodic(&idle, &mut ctx, &mut out);
    assert_eq!(out, HookOutput::default());
    let expired = PeriodicInput {
        timeout_expired: true,
        ..idle
    };
    m.periodic(&expired, &mut ctx, &mut out);
    assert_eq!(out.wnd_size, 1);
    assert_eq!(out.mark_rtx, SegRange::new(20, 30));
    assert!(out.has(HookOutput::OUT_RTX_TIMER_AMOUNT | HookOutput::OUT_RESET_RTX_TIMER));
    assert_eq!(out.rtx_timer_amount, 400_000_000);
    assert_eq!(ctx[0], 5, "ssthresh = 10 in flight / 2");
}

/// Every segment the engine sends at `now`, as (segment, retransmission) pairs.
fn drain(e: &mut TonicEngine, now: u64) -> Vec<(u64, bool)> {
    std::iter::from_fn(|| e.next_segment(now))
        .take(1000)
        .map(|t: TxSegment| (t.seg, t.rtx))
        .collect()
}

fn fresh(range: std::ops::Range<u64>) -> Vec<(u64, bool)> {
    range.map(|s| (s, false)).collect()
}

#[test]
fn example_module_drives_a_tonic_engine() {
    let module = load_boxed(example_lib()).expect("loads");
    let mut e = TonicEngine::new(module, EngineParams::default()).expect("an engine");
    e.add_flow(0, 1000, 0).expect("flow 0");
    e.update_tail(0, 40 * 1000).expect("40 segments of data");
    let ms = 1_000_000;

    assert_eq!(drain(&mut e, ms), fresh(0..10), "initial window 10");
    e.incoming(0, &IncomingPkt::ack(10), 2 * ms).expect("ack");
    assert_eq!(
        drain(&mut e, 2 * ms),
        fresh(10..30),
        "slow start: window 20"
    );
    for _ in 0..3 {
        e.incoming(0, &IncomingPkt::ack(10), 3 * ms)
            .expect("dup ack");
    }
    assert_eq!(
        drain(&mut e, 3 * ms),
        [(10, true)],
        "fast retransmit, window halved"
    );
    e.incoming(0, &IncomingPkt::ack(30), 4 * ms).expect("ack");
    assert_eq!(
        drain(&mut e, 4 * ms),
        fresh(30..40),
        "window = ssthresh = 10"
    );
    assert_eq!(e.stats().retransmitted, 1);

    // Nothing acked for a second: the 200 ms timer expires, the window drops to 1.
    let late = 1_004 * ms;
    assert_eq!(e.periodic(late, 1024).timeouts, 1);
    assert_eq!(drain(&mut e, late), [(30, true)]);
    assert_eq!(e.flow_view(0).expect("flow 0").wnd_size, 1);
}

#[test]
fn example_module_registers_beside_the_builtins() {
    let mut r = Registry::builtin();
    let m = load(example_lib()).expect("loads");
    r.register(
        m.name(),
        "Reno-like example (cdylib)",
        factory(Arc::clone(&m)),
    )
    .expect("registers");
    let info = r.info("reno-example").expect("listed");
    assert_eq!(info.credit_scheme, CreditScheme::Window);
    assert_eq!(info.user_ctx_bytes, 32);
    assert!(!info.builtin);
    let made = r
        .create("reno-example", &ModuleParams::default())
        .expect("creates");
    assert_eq!((made.name(), made.config()), (m.name(), m.config()));
    let mut ctx = [0u64; 4];
    made.init_flow(0, &flow(0, 0, 10), &mut ctx);
    let mut out = HookOutput::default();
    made.incoming(&ack(0, 2, flow(2, 10, 10)), &mut ctx, &mut out);
    assert_eq!(
        out.wnd_size, 12,
        "the registry's instance runs the library's hooks"
    );
    assert!(
        r.register("reno-example", "again", factory(m)).is_err(),
        "one name, one module"
    );
}

#[test]
fn example_module_serves_flows_on_several_threads() {
    let m = load(example_lib()).expect("loads");
    let again = load(example_lib()).expect("loads twice");
    drop(again); // the first copy keeps the library mapped
    let workers: Vec<_> = (0..2u64)
        .map(|t| {
            let m = Arc::clone(&m);
            std::thread::spawn(move || {
                let mut ctx = vec![0u64; m.config().user_ctx_words()];
                m.init_flow(0, &flow(0, 0, 10), &mut ctx);
                let mut wnd = 10;
                for i in 0..1000u64 {
                    let mut out = HookOutput::default();
                    let f = flow(i + 1, i + 1 + u64::from(wnd), wnd);
                    m.incoming(&ack(i, i + 1, f), &mut ctx, &mut out);
                    wnd = out.wnd_size;
                }
                (t, wnd)
            })
        })
        .collect();
    for w in workers {
        let (t, wnd) = w.join().expect("worker");
        assert_eq!(
            wnd, 256,
            "thread {t}: slow start capped at the largest window"
        );
    }
}

#[test]
fn c_module_sees_every_field_in_place() {
    if !have_cc() {
        return;
    }
    let scratch = Scratch::new();
    let lib = build_c(&scratch, "echo", &[]);
    let m = load(&lib).expect("the C module loads");
    assert_eq!(m.name(), "c-echo");
    let cfg = m.config();
    assert_eq!(cfg.credit_scheme, CreditScheme::Rate);
    assert_eq!(cfg.ctx_priority, CtxPriority::Periodic);
    assert!(cfg.periodic_every_visit);
    assert_eq!((cfg.user_ctx_bytes, cfg.user_ctx_words()), (60, 8));
    assert_eq!((cfg.init_wnd_size, cfg.max_burst_bytes), (4, 9000));
    assert_eq!(
        (cfg.init_credit_bytes, cfg.init_rate_bps),
        (3000, 10_000_000_000)
    );
    assert_eq!(cfg.init_rtx_timer_ns, 1_000_000);

    let mut f = flow(30, 50, 12);
    f.rtx_deadline = 777;
    f.is_idle = true;
    f.total_sent = 61;
    f.outstanding_cnt = 3;
    f.rtx_cnt.words[3] = 1 << 62;
    f.marked_for_rtx.words[0] = 0b1010;
    let mut ctx = vec![0u64; cfg.user_ctx_words()];
    m.init_flow(40, &f, &mut ctx);
    assert_eq!(ctx, [90, 101, 102, 103, 104, 105, 106, 107]);

    let mut pkt = IncomingPkt::sack(30, &[SegRange::new(32, 33), SegRange::new(35, 38)]);
    pkt.flags = IncomingPkt::FLAG_ECN_ECHO | IncomingPkt::FLAG_TS_ECHO;
    pkt.ts_echo = 4242;
    pkt.grant_bytes = 1500;
    pkt.data = [0, 0, 0, 0xabcd];
    let input = IncomingInput {
        now: 123_456,
        pkt,
        newly_acked_cnt: 4,
        old_wnd_start: 29,
        new_wnd_start: 30,
        flow: f,
    };
    let mut out = HookOutput::default();
    out.reset_rtx_timer(); // an earlier request survives the call
    m.incoming(&input, &mut ctx, &mut out);
    assert!(out.has(HookOutput::OUT_RESET_RTX_TIMER | HookOutput::OUT_RATE));
    assert_eq!(out.wnd_size, 1460);
    assert_eq!(out.cum_ack, 30);
    assert_eq!(out.mark_rtx, SegRange::new(35, 38));
    assert_eq!(out.mark_acked, SegRange::new(30, 1000));
    assert_eq!(
        (out.add_credit, out.rate_bps, out.rtx_timer_amount),
        (1500, 8, 777)
    );
    assert_eq!(&ctx[..6], [123_456, 4242, 0xabcd, 1 << 62, 1, 29_030]);
    assert_eq!(
        ctx[6],
        1 << 32 | (0b1001 << 16) | 2,
        "type, flags, sack count"
    );
    assert_eq!(ctx[7], 4 << 32 | 128, "newly acked, window capacity");

    let mut out = HookOutput::default();
    let p = PeriodicInput {
        now: 99,
        timeout_expired: true,
        flow: f,
    };
    m.periodic(&p, &mut ctx, &mut out);
    assert!(out.has(HookOutput::OUT_WND_SIZE | HookOutput::OUT_STOP_RTX_TIMER));
    assert_eq!(out.wnd_size, 3);
    assert_eq!(&ctx[..4], [99, 1, 61, 0b1010]);

    let before = [1u64; 8];
    let mut merged = [0u64; 8];
    m.merge_user_ctx(&before, &[2; 8], &[3; 8], &mut merged);
    assert_eq!(merged, [321; 8]);
}

#[test]
fn wrong_abi_version_is_refused() {
    if !have_cc() {
        return;
    }
    let scratch = Scratch::new();
    let lib = build_c(&scratch, "v2", &["ABI_VERSION=2"]);
    let e = refusal(&lib);
    assert_eq!(
        e,
        PluginError::AbiVersion {
            path: lib.clone(),
            found: 2,
            expected: 1,
        }
    );
    let msg = e.to_string();
    assert!(msg.starts_with(&format!("{}: ", lib.display())), "{msg}");
    assert!(
        msg.contains("ABI version 2") && msg.contains("expects version 1"),
        "{msg}"
    );
}

#[test]
fn missing_symbols_are_refused() {
    if !have_cc() {
        return;
    }
    let scratch = Scratch::new();
    for (name, define, symbol) in [
        ("nomod", "NO_MODULE_SYMBOL", "nicemu_tonic_module"),
        ("nover", "NO_VERSION_SYMBOL", "nicemu_tonic_abi_version"),
    ] {
        let lib = build_c(&scratch, name, &[define]);
        let e = refusal(&lib);
        match &e {
            PluginError::MissingSymbol {
                path, symbol: s, ..
            } => {
                assert_eq!((path, s.as_str()), (&lib, symbol));
            }
            other => panic!("{name}: expected MissingSymbol, got {other:?}"),
        }
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!("{}: missing symbol `{symbol}`", lib.display())),
            "{msg}"
        );
    }
}

#[test]
fn oversized_user_context_is_refused() {
    if !have_cc() {
        return;
    }
    let scratch = Scratch::new();
    // Window: 448 B allowed, 456 refused; grant: 256 allowed, 264 refused (Tonic Tab. 4).
    for (name, scheme, bytes, limit, want) in [
        (
            "wnd",
            "NICEMU_TONIC_CREDIT_WINDOW",
            456,
            448,
            CreditScheme::Window,
        ),
        (
            "grant",
            "NICEMU_TONIC_CREDIT_GRANT",
            264,
            256,
            CreditScheme::Grant,
        ),
    ] {
        let ok = build_c(
            &scratch,
            &format!("{name}-ok"),
            &[&format!("SCHEME={scheme}"), &format!("CTX_BYTES={limit}")],
        );
        assert_eq!(
            load(&ok).expect("at the limit").config().user_ctx_bytes,
            limit
        );
        let lib = build_c(
            &scratch,
            &format!("{name}-big"),
            &[&format!("SCHEME={scheme}"), &format!("CTX_BYTES={bytes}")],
        );
        let e = refusal(&lib);
        assert_eq!(
            e,
            PluginError::UserCtxTooLarge {
                path: lib.clone(),
                module: "c-echo".into(),
                bytes,
                limit,
                scheme: want,
            }
        );
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!(
                "{}: module c-echo: user context of {bytes} B exceeds the {limit} B limit",
                lib.display()
            )),
            "{msg}"
        );
    }
}

#[test]
fn other_defects_are_refused() {
    if !have_cc() {
        return;
    }
    let scratch = Scratch::new();
    let lib = build_c(&scratch, "noname", &["NAME=\"\""]);
    assert!(matches!(refusal(&lib), PluginError::InvalidName { .. }));

    let lib = build_c(&scratch, "nohook", &["INCOMING=0"]);
    let e = refusal(&lib);
    assert!(
        matches!(
            e,
            PluginError::MissingHook {
                hook: "incoming",
                ..
            }
        ),
        "{e:?}"
    );

    let lib = build_c(&scratch, "scheme9", &["SCHEME=9"]);
    let e = refusal(&lib);
    assert!(matches!(e, PluginError::InvalidConfig { .. }), "{e:?}");
    assert!(e.to_string().contains("unknown credit scheme 9"), "{e}");

    let not_a_lib = scratch.0.join("plain.so");
    std::fs::write(&not_a_lib, b"not an ELF file").expect("write");
    let e = refusal(&not_a_lib);
    assert!(matches!(e, PluginError::Open { .. }), "{e:?}");
    assert!(e
        .to_string()
        .starts_with(&format!("{}: cannot load", not_a_lib.display())));
}

/// Sends a `TonicFlowAdd` for module `module` and remote port `rport` over the host link and
/// returns the status of the install ack the lcore answers with.
fn flow_add_status(
    lcore: &mut dataplane::lcore::NicLcore<dataplane::port::wire::WireQueue>,
    host: &mut offload_api::link::HostEnd,
    flow_id: u32,
    module: &str,
    rport: u16,
) -> offload_api::msg::AckStatus {
    use offload_api::msg::{FourTuple, Message, ModuleName, TonicFlowAddRepr};
    let add = Message::TonicFlowAdd(TonicFlowAddRepr {
        request_id: flow_id + 100,
        flow_id,
        tuple: FourTuple {
            local_ip: [192, 0, 2, 1],
            local_port: 5001,
            remote_ip: [192, 0, 2, 10],
            remote_port: rport,
        },
        local_mac: [0; 6],
        remote_mac: [2, 0, 0, 0, 0, 10],
        port: 0,
        mss: 1448,
        init_seq: 1,
        init_cwnd: 0,
        init_rate_bps: 0,
        init_credit: 0,
        snd_wscale: 0,
        module: ModuleName::new(module).unwrap(),
    });
    let mut f = Vec::new();
    add.write_frame([0; 6], [0; 6], &[], &mut f).unwrap();
    host.send(0, &f).unwrap();
    for _ in 0..10 {
        lcore.poll_once();
        while let Some((_, r)) = host.recv() {
            if let Ok(p) = offload_api::msg::parse_frame(&r) {
                if let Message::InstallAck(a) = p.message {
                    assert_eq!(a.request_id, flow_id + 100);
                    return a.status;
                }
            }
        }
    }
    panic!("no install ack for flow {flow_id}");
}

/// `[tonic]` reaches the NIC lcores that `nicemu run` builds: the configured plugin's module
/// serves flows (unknown to a default lcore) and the configured table size bounds them.
#[test]
fn run_configuration_reaches_every_lcore() {
    use dataplane::clock::Clock;
    use dataplane::config::Config;
    use dataplane::lcore::Mode;
    use dataplane::runtime::{build_wire, RunOptions};
    use offload_api::msg::AckStatus;

    let lib = example_lib();
    let cfg_text = format!(
        r#"
[[port]]
name = "p0"
driver = "wire"
wire = "left"
ipv4 = ["192.0.2.1/24"]
[[lcore]]
core = 0
role = "nic"
[[lcore]]
core = 1
role = "nic"
[tonic]
max_flows = 1
plugins = ["{}"]
"#,
        lib.display()
    );
    let opts = RunOptions {
        mode: Mode::Nic,
        pin: false,
        host_channels: true,
        ..RunOptions::default()
    };
    let cfg = Config::parse(&cfg_text, "test.toml").unwrap();
    let mut topo = build_wire(&cfg, &opts, Clock::real()).unwrap();
    assert_eq!(topo.lcores.len(), 2);
    for (k, (lcore, host)) in topo.lcores.iter_mut().zip(&mut topo.host).enumerate() {
        let name = "reno-example"; // the example module's registry name
        assert_eq!(
            flow_add_status(lcore, host, 1, name, 40_000),
            AckStatus::Ok,
            "lcore {k}: the plugin's module is registered"
        );
        assert_eq!(
            flow_add_status(lcore, host, 2, "newreno", 40_001),
            AckStatus::Ok,
            "lcore {k}: a second module gets an engine of its own"
        );
        assert_eq!(
            flow_add_status(lcore, host, 3, name, 40_002),
            AckStatus::TableFull,
            "lcore {k}: [tonic] max_flows = 1 bounds each engine"
        );
    }

    // A plugin that does not load is an error naming the file and the key.
    let bad = cfg_text.replace(&lib.display().to_string(), "/nonexistent/libnothing.so");
    let cfg = Config::parse(&bad, "test.toml").unwrap();
    let err = build_wire(&cfg, &opts, Clock::real())
        .err()
        .expect("refused");
    let msg = err.to_string();
    assert!(
        msg.contains("test.toml") && msg.contains("tonic.plugins") && msg.contains("libnothing"),
        "{msg}"
    );
}
