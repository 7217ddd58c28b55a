//! Waking a sleeping NIC lcore when a frame arrives on a `net_af_packet` port.
//!
//! DPDK's af_packet driver has no Rx interrupts, so an adaptive lcore could only sleep on a
//! timer and poll again, and the first frame after a quiet spell waited out the rest of a
//! sleep (up to the idle policy's deep sleep, 500 µs). [`PacketWake`] gives it what DPDK's
//! l3fwd-power gets from Rx interrupts on a physical NIC: one extra `AF_PACKET` socket per
//! interface, bound to the interface the port's driver reads, whose only use is to become
//! readable when a frame comes in. The lcore sleeps in `ppoll(2)` on those sockets and on an
//! eventfd that its host link's [`Doorbell`] writes, so a frame from the wire or from the
//! host ends the sleep within the kernel's wake-up latency.
//!
//! Cost while the lcore is busy: the kernel runs the socket's filter (drops outgoing
//! frames) on each frame and queues it only while the socket's small receive buffer has room
//! (`packet(7)`: a full buffer is a counted drop, no copy), so a loaded port pays one filter
//! run per frame; the lcore reads the socket only after a sleep.
//!
//! This is one of the few places outside the DPDK FFI crate allowed `unsafe`: each block calls
//! one libc function on file descriptors and memory this module owns.
#![allow(unsafe_code)]

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

use crate::idle::{Doorbell, WakeSource};

/// `ETH_P_ALL` in network byte order, as `socket(2)` and `bind(2)` of `AF_PACKET` take it.
const ETH_P_ALL_BE: u16 = (libc::ETH_P_ALL as u16).to_be();

/// The receive buffer asked of each wake socket: the kernel's minimum holds a frame or two,
/// all a wake-up needs.
const WAKE_RCVBUF: libc::c_int = 2048;

/// Arrivals on `net_af_packet` ports' interfaces (and the host link's doorbell) as a
/// [`WakeSource`].
///
/// Invariant: every socket is non-blocking, bound to one interface, and filtered to incoming
/// frames. The descriptors that ended a wait are drained at the start of the next one
/// (before it polls), not when they wake the loop: the loop serves the frame that woke it
/// first, without two more system calls on its way to the reply. A frame that arrives after
/// that drain leaves a socket readable, so the `wait` returns at once.
#[derive(Debug)]
pub struct PacketWake {
    socks: Vec<OwnedFd>,
    /// Written by the doorbell's notifier while this loop sleeps.
    event: Option<Arc<File>>,
    /// Descriptors found readable by the last wait, still to be drained.
    pending: Vec<libc::c_int>,
    /// The poll set, kept between waits.
    fds: Vec<libc::pollfd>,
    /// Frames (notifications) read and discarded.
    pub drained: u64,
    /// Sockets given up because they reported an error (interface down or removed).
    pub dropped: u64,
}

/// `SO_ATTACH_FILTER`'s program: drop frames this host sends (`PACKET_OUTGOING`, e.g. the
/// port's own transmissions seen by the kernel's taps), keep 64 bytes of the others.
fn incoming_only() -> [libc::sock_filter; 4] {
    let op = |code: u32, jt: u8, jf: u8, k: u32| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    [
        // ld #pkttype (ancillary load, linux/filter.h: SKF_AD_OFF + SKF_AD_PKTTYPE)
        op(
            libc::BPF_LD | libc::BPF_W | libc::BPF_ABS,
            0,
            0,
            (libc::SKF_AD_OFF + libc::SKF_AD_PKTTYPE) as u32,
        ),
        // jeq #PACKET_OUTGOING, drop, keep
        op(
            libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
            0,
            1,
            libc::PACKET_OUTGOING as u32,
        ),
        op(libc::BPF_RET | libc::BPF_K, 0, 0, 0),
        op(libc::BPF_RET | libc::BPF_K, 0, 0, 64),
    ]
}

fn check(rc: libc::c_int, what: &str) -> io::Result<()> {
    if rc < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(())
}

/// One wake socket on interface `ifindex` of the caller's network namespace.
fn packet_socket(ifindex: u32) -> io::Result<OwnedFd> {
    // Protocol 0: the socket receives nothing until bind() names the protocol, so no frame
    // of another interface is queued before the bind.
    // SAFETY: plain socket(2) call; the result is checked before use.
    let fd = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    check(fd, "socket(AF_PACKET)")?;
    // SAFETY: fd was just returned by socket(2) and is owned by nobody else.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    let prog = incoming_only();
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: fprog points at `prog`, alive for the call; the kernel copies the program.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            (&fprog as *const libc::sock_fprog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    check(rc, "setsockopt(SO_ATTACH_FILTER)")?;
    // SAFETY: a c_int option value of the right size.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&WAKE_RCVBUF as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    check(rc, "setsockopt(SO_RCVBUF)")?;
    // SAFETY: sockaddr_ll is plain data; zeroed is a valid value to fill in.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = ETH_P_ALL_BE;
    sll.sll_ifindex = ifindex as i32;
    // SAFETY: sll is a valid sockaddr_ll and its size is passed.
    let rc = unsafe {
        libc::bind(
            sock.as_raw_fd(),
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    check(rc, &format!("bind(AF_PACKET, ifindex {ifindex})"))?;
    Ok(sock)
}

impl PacketWake {
    /// Wake sockets on the interfaces `ifindexes` (of the caller's network namespace); with
    /// `bell`, an eventfd that a ring of it writes (the host link's frames end a sleep too).
    ///
    /// Errors: the socket, filter or bind call that failed (e.g. `EPERM` without
    /// `CAP_NET_RAW`, `ENODEV` for a vanished interface); the caller falls back to timed
    /// sleeps.
    pub fn new(ifindexes: &[u32], bell: Option<&Arc<Doorbell>>) -> io::Result<PacketWake> {
        let socks = ifindexes
            .iter()
            .map(|&i| packet_socket(i))
            .collect::<io::Result<Vec<_>>>()?;
        let event = match bell {
            Some(bell) => {
                // SAFETY: plain eventfd(2) call; the result is checked before use.
                let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
                check(fd, "eventfd")?;
                // SAFETY: fd was just returned by eventfd(2) and is owned by nobody else.
                let file = Arc::new(File::from(unsafe { OwnedFd::from_raw_fd(fd) }));
                let w = file.clone();
                // A doorbell takes one notifier: a second lcore on the same link keeps timed
                // sleeps for the host's frames (its wire still wakes it).
                let set = bell.set_notifier(Box::new(move || {
                    let _ = (&*w).write(&1u64.to_ne_bytes());
                }));
                set.then_some(file)
            }
            None => None,
        };
        Ok(PacketWake {
            socks,
            event,
            pending: Vec::new(),
            fds: Vec::new(),
            drained: 0,
            dropped: 0,
        })
    }

    /// Reads and discards what is queued on `fd`: a wake socket's frames (notifications,
    /// not data) or the eventfd's counter. `read(2)`, not `recv(2)`, which an eventfd
    /// refuses (`ENOTSOCK`): both descriptors are non-blocking.
    fn drain(&mut self, fd: libc::c_int) {
        let mut b = [0u8; 64];
        for _ in 0..64 {
            // SAFETY: b is a valid buffer of the given length; fd is non-blocking, so the
            // read never blocks.
            let n = unsafe { libc::read(fd, b.as_mut_ptr().cast(), b.len()) };
            if n < 0 {
                break;
            }
            self.drained += 1;
        }
    }
}

impl WakeSource for PacketWake {
    fn hears_doorbell(&self) -> bool {
        self.event.is_some()
    }

    fn wait(&mut self, d: Duration, _bell: Option<&Doorbell>) -> bool {
        // What woke the last wait: emptied now, so that only later arrivals end this one.
        for k in 0..self.pending.len() {
            let fd = self.pending[k];
            self.drain(fd);
        }
        self.pending.clear();
        let mut fds = std::mem::take(&mut self.fds);
        fds.clear();
        fds.extend(
            self.socks
                .iter()
                .map(|s| s.as_raw_fd())
                .chain(self.event.as_ref().map(|f| f.as_raw_fd()))
                .map(|fd| libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                }),
        );
        let ts = libc::timespec {
            tv_sec: d.as_secs() as libc::time_t,
            tv_nsec: d.subsec_nanos() as libc::c_long,
        };
        // SAFETY: fds is a valid array of fds.len() pollfds; ts a valid timespec; no
        // signal mask change (null).
        let n = unsafe {
            libc::ppoll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                &ts,
                std::ptr::null(),
            )
        };
        if n <= 0 {
            self.fds = fds;
            return false;
        }
        let mut woken = false;
        let mut failed = Vec::new();
        for (i, p) in fds.iter().enumerate() {
            if p.revents & libc::POLLIN != 0 {
                // Drained at the next wait (the eventfd reads as a u64 counter, a packet
                // socket as frames: both are emptied the same way, a read of an eventfd
                // resets it).
                self.pending.push(p.fd);
                woken = true;
            } else if p.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0
                && i < self.socks.len()
            {
                failed.push(i);
            }
        }
        // A socket in error (its interface went down or away: ENETDOWN, ENODEV) would make
        // every later wait return at once and the loop spin: it is dropped, and the loop
        // sleeps on its timer for that interface from now on.
        for i in failed.into_iter().rev() {
            let s = self.socks.remove(i);
            self.dropped += 1;
            tracing::warn!(
                fd = s.as_raw_fd(),
                "wake socket in error (interface down or gone): idle sleeps on this port end on their timer"
            );
        }
        self.fds = fds;
        woken
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_doorbell_ring_ends_the_wait_and_a_quiet_wait_times_out() {
        // No interface: only the eventfd (no CAP_NET_RAW needed).
        let bell = Doorbell::new();
        let mut w = PacketWake::new(&[], Some(&bell)).unwrap();
        let t0 = Instant::now();
        assert!(!bell.sleep_with(Duration::from_millis(20), |d| w.wait(d, None)));
        assert!(t0.elapsed() >= Duration::from_millis(19));
        let ringer = {
            let bell = bell.clone();
            std::thread::spawn(move || {
                for _ in 0..2_000 {
                    if bell.is_sleeping() {
                        bell.ring();
                        return true;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                false
            })
        };
        let t0 = Instant::now();
        let woken = bell.sleep_with(Duration::from_secs(5), |d| w.wait(d, None));
        assert!(ringer.join().unwrap(), "the ringer never saw the sleeper");
        assert!(woken);
        assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
        // The ring that ended that wait is drained by the next one before it polls: a quiet
        // wait times out again.
        let t0 = Instant::now();
        assert!(!bell.sleep_with(Duration::from_millis(20), |d| w.wait(d, None)));
        assert!(t0.elapsed() >= Duration::from_millis(19));
        assert_eq!(w.drained, 1);
    }

    #[test]
    fn a_second_lcore_on_one_doorbell_keeps_timed_sleeps() {
        let bell = Doorbell::new();
        let a = PacketWake::new(&[], Some(&bell)).unwrap();
        let b = PacketWake::new(&[], Some(&bell)).unwrap();
        assert!(a.event.is_some() && a.hears_doorbell());
        assert!(b.event.is_none() && !b.hears_doorbell());
    }
}
