//! What libmtcp's namespace tests share: temporary directories, child processes with their
//! output in a file, bounded waits, the directory of libmtcp.so, DPDK runtime directories
//! removed on drop, and gcc.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A temporary directory, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// `$TMPDIR/nicemu-mtcp-<tag>-<pid>`, emptied.
    pub fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("nicemu-mtcp-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    /// `name` inside the directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child process whose output goes to a file; killed when dropped.
pub struct Proc {
    pub child: Child,
    out: PathBuf,
    name: String,
}

impl Proc {
    /// Starts `cmd` with stdout and stderr in `out`.
    pub fn spawn(mut cmd: Command, out: PathBuf, name: &str) -> Proc {
        let f = std::fs::File::create(&out).unwrap();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(f.try_clone().unwrap())
            .stderr(f)
            .spawn()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        Proc {
            child,
            out,
            name: name.into(),
        }
    }
    /// Everything it printed so far.
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.out).unwrap_or_default()
    }
    /// Waits up to `limit` for the exit; its status code (None: still running; -1: killed
    /// by a signal).
    pub fn wait(&mut self, limit: Duration) -> Option<i32> {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if let Ok(Some(s)) = self.child.try_wait() {
                return Some(s.code().unwrap_or(-1));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
    /// Whether it has exited.
    pub fn exited(&mut self) -> bool {
        self.child.try_wait().ok().flatten().is_some()
    }
    /// Sends it `sig`.
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid; no memory is involved.
        unsafe { libc::kill(self.child.id() as i32, sig) };
    }
    /// Its name and output, for assertion messages.
    pub fn describe(&self) -> String {
        format!("{} output:\n{}", self.name, self.output())
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `f` every 20 ms for up to `limit`; whether it held.
pub fn wait_for(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f()
}

/// The directory with libmtcp.so: the one of this test's executable (`target/<profile>/deps`),
/// where cargo put the library's cdylib when it built the library for this test.
pub fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().to_path_buf();
    assert!(
        dir.join("libmtcp.so").exists(),
        "no libmtcp.so next to {}",
        exe.display()
    );
    dir
}

/// The crate's directory.
pub fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs gcc with `args`, then links against the headers and libmtcp.so into `exe`;
/// panics with gcc's messages when it fails.
pub fn gcc(exe: &Path, args: &[String]) {
    let lib = lib_dir();
    let out = Command::new("gcc")
        .arg("-o")
        .arg(exe)
        .args(args)
        .arg(format!("-I{}", crate_dir().join("include").display()))
        .arg(format!("-L{}", lib.display()))
        .arg("-lmtcp")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .output()
        .expect("gcc (ci/install-deps.sh installs it)");
    assert!(
        out.status.success(),
        "gcc {args:?}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A command that runs the C program `exe` with the libmtcp.so this test was built with:
/// the test runner's `LD_LIBRARY_PATH` (which takes precedence over the program's run path)
/// may name `target/<profile>`, where an older `cargo build` may have left another one.
/// It also sets [`ASAN_OPTIONS`] (no effect on a program built without the sanitizer).
pub fn c_program(exe: &Path) -> Command {
    let mut c = Command::new(exe);
    c.env("LD_LIBRARY_PATH", lib_dir())
        .env("ASAN_OPTIONS", ASAN_OPTIONS);
    c
}

/// Removes DPDK's runtime directory of `prefix` when dropped (the program removes it
/// itself in mtcp_destroy; this covers a program that was killed).
pub struct RuntimeDir(pub String);

impl Drop for RuntimeDir {
    fn drop(&mut self) {
        dataplane::runtime_dpdk::remove_runtime_dir(&self.0);
    }
}

/// The `nicemu` binary of this profile: `make test` builds it before the tests; built here
/// when it is missing.
pub fn nicemu_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(Path::parent).unwrap().to_path_buf();
    let bin = dir.join("nicemu");
    if bin.exists() {
        return bin;
    }
    let mut cmd = Command::new(option_env!("CARGO").unwrap_or("cargo"));
    cmd.args([
        "build",
        "-p",
        "apps",
        "--features",
        "dpdk",
        "--bin",
        "nicemu",
    ])
    .current_dir(env!("CARGO_MANIFEST_DIR"));
    if dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let out = cmd.output().expect("cargo build");
    assert!(
        out.status.success(),
        "cargo build -p apps: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    bin
}

/// AddressSanitizer's compiler flags.
pub const ASAN_CFLAGS: &[&str] = &["-fsanitize=address", "-fno-omit-frame-pointer"];
/// The exit status AddressSanitizer gives a program in which it found something.
pub const ASAN_EXIT: i32 = 86;
/// Leak checking on, a distinct exit status, full allocation stacks, and `stdbuf`'s
/// preloaded library allowed before the sanitizer's runtime (no effect on a program built
/// without ASan).
pub const ASAN_OPTIONS: &str =
    "detect_leaks=1:exitcode=86:verify_asan_link_order=0:fast_unwind_on_malloc=0";

/// Fails on any AddressSanitizer error in `out`, and on any leak LeakSanitizer reports whose
/// allocation went through libmtcp, the Rust code under it or DPDK; leaks of a C program's
/// own buffers (allocated in its C files and never freed) are allowed.
pub fn check_asan(out: &str) {
    assert!(!out.contains("ERROR: AddressSanitizer"), "{out}");
    for block in out.split("\n\n") {
        let leak = block.contains("leak of ");
        let ours = [".rs:", "libmtcp.so", "librte_"]
            .iter()
            .any(|m| block.contains(m));
        assert!(!(leak && ours), "a leak inside libmtcp:\n{block}");
    }
}

/// A nicemu TOML with one `shared` lcore on `core`, DPDK file prefix `prefix`, the virtual
/// device `vdev` (its EAL `--vdev` value) as port `p0` at `cidr`.
pub fn one_lcore_toml(core: usize, prefix: &str, vdev: &str, cidr: &str) -> String {
    let device = vdev.split(',').next().unwrap_or(vdev);
    format!(
        r#"
[eal]
args = ["--no-huge", "--no-pci", "-m", "256", "-l", "{core}", "--file-prefix={prefix}",
        "--vdev={vdev}"]
[runtime]
stats_interval_s = 0.0
[[port]]
name = "p0"
driver = "dpdk"
device = "{device}"
ipv4 = ["{cidr}"]
rss = "off"
[[lcore]]
core = {core}
role = "shared"
"#
    )
}

/// [`one_lcore_toml`] on net_memif: `role` server or client of the socket `sock`, MAC
/// 02:00:00:00:00:0`m`, address `<net>.<m>/24`, on the `m`-th usable core (wrapping).
pub fn memif_toml(sock: &Path, role: &str, net: &str, m: u8, prefix: &str) -> String {
    let cores = dataplane::sys::allowed_cores().unwrap();
    let core = cores[(m as usize - 1) % cores.len()];
    let vdev = format!(
        "net_memif0,role={role},socket={},socket-abstract=no,id=0,mac=02:00:00:00:00:0{m}",
        sock.display()
    );
    one_lcore_toml(core, prefix, &vdev, &format!("{net}.{m}/24"))
}
