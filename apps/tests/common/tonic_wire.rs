//! The in-memory two-node wire of the `TCP_TONIC` tests (`tonic_tcp`, `tonic_tcp_edges`): a
//! checkable byte pattern, a virtual-time stepper that knows both NICs' Tonic deadlines,
//! connection setup with `TCP_TONIC` on either end, and bounded read / write helpers for
//! either node.

use std::net::SocketAddrV4;

use apps::node::{pair_specs, wire_pair, Pair, B_IP};
use dataplane::port::wire::Impairments;
use dataplane::tonic::nic::{TonicNic, TonicNicStats};
use hoststack::stack::{Shutdown, SockOpt, SockOptName, TonicHostStats};
use hoststack::{Context, Errno, Fd};
use offload_api::link::HostEnd;
use offload_api::msg::ModuleName;

use super::pattern::Pattern;

/// A node's host context.
pub type Host = Context<HostEnd>;

/// The port B listens on.
pub const PORT: u16 = 5001;
pub use super::pattern::PERIOD;

/// The pattern both directions' streams come from (at different origins).
fn pattern() -> &'static Pattern {
    static P: std::sync::OnceLock<Pattern> = std::sync::OnceLock::new();
    P.get_or_init(|| Pattern::new(0xD1B5_4A32_D192_ED03))
}

/// Bytes `[start, start + len)` of the endless pattern; `len` ≤ PERIOD.
pub fn slice(start: u64, len: usize) -> &'static [u8] {
    pattern().slice(start, len)
}

/// Two nodes on a wire with impairments `ab` (A → B) and `ba`, with socket buffers of
/// `send_buffer` and `recv_buffer` bytes and a 1 s TIME_WAIT on both.
pub fn pair(ab: Impairments, ba: Impairments, send_buffer: usize, recv_buffer: usize) -> Pair {
    let (mut a, mut b) = pair_specs();
    for s in [&mut a, &mut b] {
        s.host.tcp.time_wait_ns = 1_000_000_000;
        s.host.tcp.send_buffer = send_buffer;
        s.host.tcp.recv_buffer = recv_buffer;
    }
    wire_pair(a, b, ab, ba)
}

/// Steps both nodes; virtual time moves `quantum` per step and, after a stretch with nothing
/// to do and nothing on the wire, jumps to the next host timer or Tonic retransmission
/// deadline of either node.
pub fn step(p: &mut Pair, idle: &mut u32, quantum: u64) {
    let w = p.a.step() + p.b.step();
    *idle = if w == 0 { *idle + 1 } else { 0 };
    let now = p.clock.now_ns();
    let next = [
        p.a.host.next_timer(),
        p.b.host.next_timer(),
        p.a.tonic().next_deadline(),
        p.b.tonic().next_deadline(),
    ]
    .into_iter()
    .flatten()
    .filter(|&t| t > now)
    .min();
    match next {
        Some(t) if *idle > 64 && p.wire_idle() => {
            p.clock.advance(t - now);
            *idle = 0;
        }
        _ => p.clock.advance(quantum),
    }
}

/// Steps (2 µs quanta) until `done` holds, at most `max_steps` steps; returns whether it
/// held.
pub fn run_until(
    p: &mut Pair,
    idle: &mut u32,
    max_steps: u64,
    mut done: impl FnMut(&mut Pair) -> bool,
) -> bool {
    for _ in 0..max_steps {
        if done(p) {
            return true;
        }
        step(p, idle, 2_000);
    }
    done(p)
}

/// B listens on PORT; A opens a non-blocking connection to it. `client` and `listener` are
/// the `TCP_TONIC` modules of A's socket and B's listener (`None`: an ordinary socket).
/// Returns (B's listener, A's socket).
pub fn open_tonic(p: &mut Pair, client: Option<&str>, listener: Option<&str>) -> (Fd, Fd) {
    let set = |h: &mut Host, fd: Fd, module: Option<&str>| {
        let Some(module) = module else { return };
        let m = ModuleName::new(module).unwrap();
        h.setsockopt(fd, SockOpt::Tonic(Some(m))).unwrap();
        assert_eq!(
            h.getsockopt(fd, SockOptName::Tonic),
            Ok(SockOpt::Tonic(Some(m)))
        );
    };
    let l = p.b.host.socket().unwrap();
    p.b.host.set_nonblocking(l, true).unwrap();
    set(&mut p.b.host, l, listener);
    p.b.host
        .bind(l, SocketAddrV4::new([0, 0, 0, 0].into(), PORT))
        .unwrap();
    p.b.host.listen(l, 4).unwrap();

    let c = p.a.host.socket().unwrap();
    p.a.host.set_nonblocking(c, true).unwrap();
    set(&mut p.a.host, c, client);
    assert_eq!(
        p.a.host.connect(c, SocketAddrV4::new(B_IP.into(), PORT)),
        Err(Errno::InProgress)
    );
    (l, c)
}

/// Accepts one connection on listener `l` into `s` (non-blocking) unless `s` has one.
pub fn accept_one(host: &mut Host, l: Fd, s: &mut Option<Fd>) {
    if s.is_none() {
        if let Ok((fd, _)) = host.accept(l) {
            host.set_nonblocking(fd, true).unwrap();
            *s = Some(fd);
        }
    }
}

/// One direction of a transfer: `total` bytes of the pattern from byte `origin` on, with the
/// writer's and the reader's progress.
#[derive(Clone, Copy, Debug)]
pub struct Stream {
    origin: u64,
    /// Bytes to send.
    pub total: u64,
    /// Bytes the writer's socket took.
    pub sent: u64,
    /// Bytes the reader read (all checked).
    pub got: u64,
    /// The writer shut its write side after the last byte.
    pub shut: bool,
    /// The reader saw the end of the stream.
    pub eof: bool,
}

impl Stream {
    /// `total` bytes of the pattern from byte `origin` on.
    pub fn new(origin: u64, total: u64) -> Self {
        Stream {
            origin,
            total,
            sent: 0,
            got: 0,
            shut: false,
            eof: false,
        }
    }

    /// Writes to `fd` until everything is written or its buffer is full.
    pub fn write_some(&mut self, host: &mut Host, fd: Fd) -> Result<(), Errno> {
        while self.sent < self.total {
            let n = ((self.total - self.sent) as usize).min(PERIOD);
            match host.write(fd, slice(self.origin + self.sent, n)) {
                Ok(k) => self.sent += k as u64,
                Err(Errno::Again) => break,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// [`Stream::write_some`], then shuts the write side once everything is written.
    pub fn write_then_shut(&mut self, host: &mut Host, fd: Fd) -> Result<(), Errno> {
        self.write_some(host, fd)?;
        if self.sent == self.total && !self.shut {
            host.shutdown(fd, Shutdown::Write)?;
            self.shut = true;
        }
        Ok(())
    }

    /// Reads everything `fd` has, checking every byte against the pattern; notes the end of
    /// the stream.
    pub fn read_all(&mut self, host: &mut Host, fd: Fd) -> Result<(), Errno> {
        let mut buf = [0u8; 32 * 1024];
        loop {
            match host.read(fd, &mut buf) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(k) => {
                    let got = self.got;
                    assert!(got + k as u64 <= self.total, "{k} bytes past {got}");
                    assert_eq!(&buf[..k], slice(self.origin + got, k), "byte {got} differs");
                    self.got += k as u64;
                }
                Err(Errno::Again) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }

    /// Every byte arrived and the reader saw the end of the stream.
    pub fn complete(&self) -> bool {
        self.eof && self.got == self.total
    }
}

/// The counters that show connection `fd` of `host`, opened with `TCP_TONIC` = `module`, had
/// its `total` data bytes sent by its NIC's engine and none by its TCB (Tonic §5), checked
/// once the sender came back for the FIN.
pub fn assert_nic_sent(
    host: &Host,
    nic: &TonicNic,
    fd: Fd,
    module: &str,
    total: u64,
) -> (TonicHostStats, TonicNicStats) {
    let tcb = host.tcb(fd).expect("connection");
    assert_eq!(tcb.stats().bytes_out, 0, "the TCB sent data itself");
    assert_eq!(tcb.stats().retransmits, 0, "the TCB retransmitted");
    assert!(!tcb.tonic_owns_sender(), "the sender came back for the FIN");
    let ts = *host.tonic_stats();
    assert_eq!(
        (ts.flows_added, ts.flows_removed, ts.flows_refused),
        (1, 1, 0),
        "{ts:?}"
    );
    assert_eq!(ts.tail_bytes, total);
    let ns = *nic.stats();
    let e = nic.engine(module).expect("engine built");
    println!(
        "{module}: host {ts:?}\n  nic {ns:?}\n  engine {:?}",
        e.stats()
    );
    let segs = total.div_ceil(tcb.send_mss() as u64);
    assert!(
        ns.segments_tx >= segs,
        "NIC sent {} segments, need {segs}",
        ns.segments_tx
    );
    assert_eq!(e.stats().retransmitted, ns.retransmits);
    assert_eq!(
        (ns.flows_added, ns.flows_removed),
        (1, 1),
        "the NIC's flow table: {ns:?}"
    );
    assert!(!nic.has_flows());
    assert_eq!(e.dd().live_flows(), 0, "the engine still has the flow");
    (ts, ns)
}

/// Closes A's descriptors `a` and B's `b`, then steps until neither host has a connection
/// left (bounded).
pub fn close_all(p: &mut Pair, idle: &mut u32, a: &[Fd], b: &[Fd]) {
    for &fd in a {
        p.a.host.close(fd).unwrap();
    }
    for &fd in b {
        p.b.host.close(fd).unwrap();
    }
    let gone = run_until(p, idle, 2_000_000, |p| {
        p.a.host.connections() == 0 && p.b.host.connections() == 0
    });
    assert!(
        gone,
        "connections left: A {}, B {}",
        p.a.host.connections(),
        p.b.host.connections()
    );
}
