//! The Linux kernel baseline: an epoll echo server on kernel TCP sockets (non-blocking,
//! level-triggered, TCP_NODELAY), the classic shape of a kernel-stack server. `nicemu bench
//! echo` runs it as `nicemu bench kernel-echo-server` inside the namespace it creates.
//!
//! The server prints `ready` on stdout once it listens, and exits when its standard input
//! closes (the benchmark holds the other end, so the server never outlives it) or when its
//! parent dies.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};

/// Largest `listen` backlog asked for (the kernel caps it at `net.core.somaxconn`): room
/// for the benchmark's whole burst of connections (`--conns` is at most 64,000), as the
/// nicemu server's half-open bound is raised to `--conns`.
const BACKLOG: i32 = 65_535;
const STDIN_TOKEN: u64 = u64::MAX;
const LISTEN_TOKEN: u64 = u64::MAX - 1;

fn os_err(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

/// A listening TCP socket on `0.0.0.0:port` with a large backlog (std's `bind` uses 128,
/// too few for 1,024 connections arriving at once).
fn listener(port: u16) -> Result<TcpListener, String> {
    // SAFETY: plain socket calls on a descriptor this function owns; `addr` is a valid,
    // initialised sockaddr_in whose size is passed along.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(os_err("socket"));
        }
        let l = TcpListener::from_raw_fd(fd);
        let one: libc::c_int = 1;
        if libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_REUSEADDR,
            &one as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        ) != 0
        {
            return Err(os_err("SO_REUSEADDR"));
        }
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_port = port.to_be();
        addr.sin_addr.s_addr = 0;
        if libc::bind(
            fd,
            &addr as *const libc::sockaddr_in as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        ) != 0
        {
            return Err(os_err("bind"));
        }
        if libc::listen(fd, BACKLOG) != 0 {
            return Err(os_err("listen"));
        }
        Ok(l)
    }
}

/// An epoll instance (the thin wrapper around the three epoll calls).
struct Epoll(std::fs::File);

impl Epoll {
    fn new() -> Result<Epoll, String> {
        // SAFETY: epoll_create1 takes no pointers; the new descriptor is owned by the File.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(os_err("epoll_create1"));
        }
        // SAFETY: `fd` is a fresh descriptor nobody else owns.
        Ok(Epoll(unsafe { std::fs::File::from_raw_fd(fd) }))
    }

    fn ctl(&self, op: i32, fd: RawFd, events: u32, token: u64) -> Result<(), String> {
        let mut ev = libc::epoll_event { events, u64: token };
        // SAFETY: `ev` is a valid epoll_event for the duration of the call.
        if unsafe { libc::epoll_ctl(self.0.as_raw_fd(), op, fd, &mut ev) } != 0 {
            return Err(os_err("epoll_ctl"));
        }
        Ok(())
    }

    fn wait(&self, events: &mut [libc::epoll_event], timeout_ms: i32) -> usize {
        // SAFETY: the kernel writes at most `events.len()` entries into `events`.
        let n = unsafe {
            libc::epoll_wait(
                self.0.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as i32,
                timeout_ms,
            )
        };
        n.max(0) as usize
    }
}

/// Runs the echo server on `port` until standard input closes. Pins itself to `core` when
/// given.
pub fn kernel_echo_server(port: u16, core: Option<usize>) -> Result<(), String> {
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes integer arguments only.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
    }
    if let Some(c) = core {
        dataplane::sys::pin_current_thread(c).map_err(|e| format!("pin to core {c}: {e}"))?;
    }
    let l = listener(port)?;
    l.set_nonblocking(true).map_err(|e| e.to_string())?;
    let ep = Epoll::new()?;
    ep.ctl(
        libc::EPOLL_CTL_ADD,
        l.as_raw_fd(),
        libc::EPOLLIN as u32,
        LISTEN_TOKEN,
    )?;
    ep.ctl(
        libc::EPOLL_CTL_ADD,
        libc::STDIN_FILENO,
        libc::EPOLLIN as u32,
        STDIN_TOKEN,
    )?;
    let mut conns: Vec<Option<TcpStream>> = Vec::new();
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 512];
    let mut buf = vec![0u8; 16384];
    println!("ready");
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    loop {
        let n = ep.wait(&mut events, 1000);
        for ev in &events[..n] {
            let token = ev.u64;
            if token == STDIN_TOKEN {
                return Ok(());
            }
            if token == LISTEN_TOKEN {
                while let Ok((s, _)) = l.accept() {
                    let _ = s.set_nonblocking(true);
                    let _ = s.set_nodelay(true);
                    let fd = s.as_raw_fd();
                    let i = fd as usize;
                    if conns.len() <= i {
                        conns.resize_with(i + 1, || None);
                    }
                    if ep
                        .ctl(libc::EPOLL_CTL_ADD, fd, libc::EPOLLIN as u32, fd as u64)
                        .is_ok()
                    {
                        conns[i] = Some(s);
                    }
                }
                continue;
            }
            let i = token as usize;
            let Some(s) = conns.get_mut(i).and_then(Option::as_mut) else {
                continue;
            };
            if !echo(s, &mut buf) {
                // Dropping the stream closes it (and removes it from the epoll set).
                conns[i] = None;
            }
        }
    }
}

/// Echoes what `s` has to read; false when the connection is over.
fn echo(s: &mut TcpStream, buf: &mut [u8]) -> bool {
    loop {
        match s.read(buf) {
            Ok(0) => return false,
            Ok(k) => {
                // Small requests always fit the send buffer; if the peer stops reading,
                // the connection is dropped rather than buffered without bound.
                if s.write_all(&buf[..k]).is_err() {
                    return false;
                }
                if k < buf.len() {
                    return true;
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}
