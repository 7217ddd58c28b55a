//! Child processes of the kernel-interop tests (`netns_tcp`, `netns_offload`): python
//! programs, hping3, `ss` inside a test's network namespace, their output collected without
//! blocking the polling loop, killed when dropped.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread::JoinHandle;
use std::time::Duration;

use super::netns::Netns;

/// A child process in the namespace whose stdout lines arrive on a channel (a reader thread
/// blocks on the pipe, so the polling loop never does). Killed when dropped.
pub struct Proc {
    pub what: String,
    pub child: Child,
    pub lines: Receiver<String>,
    pub out: Vec<String>,
    pub stderr: Option<JoinHandle<String>>,
    pub status: Option<ExitStatus>,
}

impl Proc {
    pub fn spawn(net: &Netns, args: &[&str]) -> Proc {
        let what = args.first().copied().unwrap_or_default();
        Proc::spawn_command(what, net.command(args))
    }

    /// Starts `cmd` (any command, in whatever namespace it names), described as `what`.
    pub fn spawn_command(what: &str, mut cmd: Command) -> Proc {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let mut stderr = child.stderr.take().expect("piped stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        Proc {
            what: what.to_string(),
            child,
            lines,
            out: Vec::new(),
            stderr: Some(stderr),
            status: None,
        }
    }

    pub fn drain(&mut self) {
        while let Ok(l) = self.lines.try_recv() {
            self.out.push(l);
        }
    }

    /// True when some line of its output so far starts with `prefix`.
    pub fn has_line(&mut self, prefix: &str) -> bool {
        self.drain();
        self.out.iter().any(|l| l.starts_with(prefix))
    }

    /// The exit status once the child has exited (all its output collected then).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().expect("try_wait");
            if self.status.is_some() {
                // The pipe closes at exit: the reader thread ends after the last line.
                while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(2)) {
                    self.out.push(l);
                }
            }
        }
        self.drain();
        self.status
    }

    pub fn stdout(&self) -> String {
        self.out.join("\n")
    }

    /// Its standard error once it has exited.
    pub fn stderr(&mut self) -> String {
        if self.status.is_some() {
            self.stderr
                .take()
                .and_then(|h| h.join().ok())
                .unwrap_or_default()
        } else {
            String::from("(still running)")
        }
    }

    /// Everything known about the child, for failure messages.
    pub fn describe(&mut self) -> String {
        let stderr = self.stderr();
        format!(
            "{} exit {:?}\n--- stdout:\n{}\n--- stderr:\n{}",
            self.what,
            self.status,
            self.stdout(),
            stderr
        )
    }

    /// Sends SIGINT (hping3 then prints its statistics and exits).
    pub fn interrupt(&mut self) {
        if self.status.is_none() {
            let pid = self.child.id().to_string();
            let _ = Command::new("kill")
                .args(["-INT", &pid])
                .stdin(Stdio::null())
                .status();
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.status.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
