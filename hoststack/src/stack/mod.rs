//! A per-core host context (`mtcp_create_context`): socket table, connection demux, timers and
//! epoll instances, no locks (`docs/architecture.md`, "Life of a connection"). The application
//! calls the mTCP API ([`Context::socket`], ..., [`Context::epoll_wait`]) on the same core, and the
//! stack runs to completion inside those calls (AccelTCP §5.2: no separate stack thread):
//! [`Context::poll`] flushes what the application queued, takes frames from the NIC, fires timers
//! and flushes again.

mod api;
mod config;
mod drive;
mod epoll;
mod input;
mod io;
mod pipe;
mod ports;
mod quasi;
mod setup;
mod sockopt;
mod splice;
mod teardown;
mod tonic;

use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::net::SocketAddrV4;
use std::sync::Arc;

use crate::frame::HostLink;
use crate::tcp::isn::IsnGenerator;
use crate::tcp::tcb::{Endpoints, State, Tcb};
use crate::tcp::TcpConfig;

pub use api::Shutdown;
pub use config::{FdReuse, FlowCore, HostConfig, ListenHook};
pub use epoll::{
    EpollEvent, EpollOp, EPOLLERR, EPOLLET, EPOLLHUP, EPOLLIN, EPOLLONESHOT, EPOLLOUT, EPOLLRDHUP,
};
pub use quasi::QuasiStats;
pub use setup::SetupHostStats;
pub use sockopt::{SockOpt, SockOptName};
pub use splice::{SpliceCallback, SpliceEnd, SpliceHostStats, SpliceReport, SpliceSide};
pub use teardown::TeardownHostStats;
pub use tonic::{TonicHostStats, TAIL_CHUNK};

/// A socket or epoll descriptor, as in mTCP (`int sockid`).
pub type Fd = i32;

/// The time source of a context: nanoseconds, monotonic (the runtime's clock, real or
/// virtual).
pub type Now = Arc<dyn Fn() -> u64 + Send + Sync>;

/// Counters of one context.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct HostStats {
    /// Frames taken from the link.
    pub frames_in: u64,
    /// Frames handed to the link.
    pub frames_out: u64,
    /// Frames the link refused (ring full).
    pub link_full: u64,
    /// Frames that were neither IPv4/TCP nor a host ↔ NIC control message (ARP, IPv6,
    /// IPv4 other than TCP, ...).
    pub not_tcp: u64,
    /// Malformed frames or segments, control messages with an unusable header or fields
    /// included.
    pub malformed: u64,
    /// Well-formed host ↔ NIC control messages (EtherTypes 0x090A–0x090E, AccelTCP App. A)
    /// that this host does not handle yet, counted and dropped: setup notifications
    /// (0x090A, AccelTCP §4.1), splice closure reports (0x090D, §4.3),
    /// install acks of requests other than Tonic flow adds, and host → NIC types.
    pub control_unhandled: u64,
    /// TCP segments to an address that is not ours.
    pub not_ours: u64,
    /// RSTs sent for segments to no connection or listener.
    pub rst_sent: u64,
    /// SYNs dropped: listener's accept backlog full, half-open backlog full without SYN
    /// cookies, or no connection slot.
    pub syn_dropped: u64,
    /// Segments to a listener that were neither SYN nor RST (answered with RST if ACK).
    pub listener_non_syn: u64,
    /// Segments to a listener dropped for a flag combination no stack opens with: SYN+FIN
    /// (Linux's `tcp_rcv_state_process` drops it in LISTEN) and SYN+RST (a RST to a
    /// listener is ignored, RFC 9293 §3.10.7.2). Neither opens a connection nor gets a reply.
    pub bad_flags: u64,
    /// Connections refused because the context held `max_conns` already
    /// ([`HostConfig::max_conns`]): SYNs and completed offloaded handshakes dropped, and
    /// `connect` calls that failed with `Again`.
    pub conn_limit: u64,
    /// Connections opened by connect.
    pub active_opens: u64,
    /// Connections opened from a listener's SYN.
    pub passive_opens: u64,
    /// Connections freed.
    pub conns_freed: u64,
    /// Connections in TIME_WAIT ended by a SYN that starts a new incarnation of their
    /// 4-tuple (RFC 6191), which the listener then took.
    pub time_wait_reused: u64,
    /// Timer expiries handled.
    pub timer_fires: u64,
    /// Closes handed to the NIC, refused by reason, and the NIC's teardown count (AccelTCP
    /// §4.2; see `teardown.rs`).
    pub teardown: TeardownHostStats,
}

/// A connection slot.
struct Conn {
    tcb: Tcb,
    /// The application's descriptor; none while half-open under a listener, queued for
    /// accept, or after close (orphan finishing its close).
    fd: Option<Fd>,
    /// The listener while not yet accepted.
    listener: Option<Fd>,
    /// Earliest pending timer entry (u64::MAX: none).
    timer_at: u64,
    /// On the dirty list.
    dirty: bool,
    /// Counted in the listener's half-open count.
    half_open: bool,
    /// Who drives the connection's sender side.
    owner: Owner,
}

/// Who drives a connection's sender side: the host's TCB, or an engine on the NIC.
///
/// At any time either the host or the NIC owns a connection's state, never both (AccelTCP
/// §3); every change of owner is an explicit message over the link. Today the NIC can own
/// only the sender of a `TCP_TONIC` connection (Tonic §5). Later owners (a teardown
/// offloaded to the NIC, AccelTCP §4.2; a splice in progress, AccelTCP §4.3) become further
/// variants, each holding what the host keeps while the NIC has the connection.
#[derive(Clone, Copy, Debug)]
enum Owner {
    /// The host's TCB sends: every connection that is not `TCP_TONIC`.
    Host,
    /// A `TCP_TONIC` connection (Tonic §5; see `tonic.rs`): Tonic on the NIC drives the
    /// sender while the phase is [`TonicPhase::Active`], the host's TCB before and after.
    Tonic(TonicConn),
}

impl Owner {
    /// A `TCP_TONIC` connection running `module`, before its handover.
    fn tonic(module: offload_api::msg::ModuleName) -> Owner {
        Owner::Tonic(TonicConn {
            module,
            phase: TonicPhase::Pending,
        })
    }

    /// True while the Tonic phase is not over: the context has Tonic work around each
    /// transmit of the connection (the handover, tail updates, the flow removal).
    fn tonic_live(&self) -> bool {
        matches!(self, Owner::Tonic(t) if t.phase != TonicPhase::Over)
    }

    /// The NIC flow id while Tonic on the NIC owns the sender.
    fn tonic_flow(&self) -> Option<u32> {
        match self {
            Owner::Tonic(TonicConn {
                phase: TonicPhase::Active { flow, .. },
                ..
            }) => Some(*flow),
            _ => None,
        }
    }

    /// Moves a `TCP_TONIC` connection to `phase` (nothing for other owners).
    fn set_tonic_phase(&mut self, phase: TonicPhase) {
        if let Owner::Tonic(t) = self {
            t.phase = phase;
        }
    }
}

/// The Tonic side of a `TCP_TONIC` connection (Tonic §5).
#[derive(Clone, Copy, Debug)]
struct TonicConn {
    /// The protocol module the NIC runs for it.
    module: offload_api::msg::ModuleName,
    /// Where the handover stands.
    phase: TonicPhase,
}

/// Where the Tonic handover of a connection stands. Goes Pending → Active → Over, or
/// Pending → Over when the handover is not possible; never back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TonicPhase {
    /// Not yet handed over (the handshake is running): the host's TCB sends.
    Pending,
    /// Tonic on the NIC owns the sender; the TCB keeps the receive side and the send
    /// buffer.
    Active {
        /// The connection's flow id on the NIC (a key of `Context::tonic_flows`).
        flow: u32,
        /// Request id of the flow add (matched with the NIC's install ack).
        request: u32,
    },
    /// The Tonic phase is over (the flow was removed or refused) or never started (the
    /// handover was not possible): the host's TCB sends.
    Over,
}

/// An epoll registration of a socket.
#[derive(Clone, Copy, Debug)]
struct Reg {
    epfd: Fd,
    events: u32,
    data: u64,
    queued: bool,
}

#[derive(Clone, Copy, Debug, Default)]
struct SockOpts {
    reuseaddr: bool,
    nodelay: bool,
    linger: Option<u32>,
    sndbuf: Option<usize>,
    rcvbuf: Option<usize>,
    setup_offload: bool,
    teardown_offload: bool,
    /// `TCP_TONIC`: the module the NIC runs the connection's sender with.
    tonic: Option<offload_api::msg::ModuleName>,
}

struct Listener {
    backlog: usize,
    accept_queue: VecDeque<u32>,
    half_open: usize,
}

enum SockState {
    Fresh,
    Listening(Listener),
    Conn(u32),
    /// A connection still held as a quasi-TCB (index into `Context::quasi`; AccelTCP §5.2).
    Quasi(u32),
}

struct Sock {
    opts: SockOpts,
    nonblocking: bool,
    local: Option<SocketAddrV4>,
    state: SockState,
    reg: Option<Reg>,
    read_shut: bool,
    error_reported: bool,
}

struct Epoll {
    ready: VecDeque<Fd>,
}

enum Entry {
    Free,
    Sock(Box<Sock>),
    Epoll(Epoll),
    /// An end of a pipe (`stack/pipe.rs`).
    Pipe(pipe::PipeEnd),
}

/// FxHash-style hasher for the connection table (keys are not attacker-chosen beyond the
/// peer's address and port; the table is bounded by `max_conns`).
#[derive(Default)]
struct FxHasher(u64);

impl Hasher for FxHasher {
    fn finish(&self) -> u64 {
        // The multiply leaves the low bits depending only on the key's low bits (the local
        // port, the same for every connection of a server); the table indexes by low bits.
        self.0.rotate_left(26)
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(*b as u64);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64)
    }
    fn write_u16(&mut self, v: u16) {
        self.write_u64(v as u64)
    }
    fn write_u128(&mut self, v: u128) {
        self.write_u64(v as u64);
        self.write_u64((v >> 64) as u64)
    }
}

type Fx = BuildHasherDefault<FxHasher>;

/// Free link descriptors a flush wants before it transmits the next dirty connection (an
/// echo or request with its ACK, a retransmission and an ACK: the frames one connection
/// typically emits at once).
const FLUSH_ROOM: usize = 4;

/// Demux key: remote address, remote port, local port, and the local address.
type Key = u128;

fn key(remote_ip: [u8; 4], remote_port: u16, local_ip: [u8; 4], local_port: u16) -> Key {
    ((u32::from_be_bytes(local_ip) as u128) << 64)
        | ((u32::from_be_bytes(remote_ip) as u128) << 32)
        | ((remote_port as u128) << 16)
        | local_port as u128
}

/// The demux key of a connection's endpoints.
fn ep_key(ep: &Endpoints) -> Key {
    key(ep.remote_ip, ep.remote_port, ep.local_ip, ep.local_port)
}

/// One host core's stack. See the module documentation.
pub struct Context<L: HostLink> {
    cfg: HostConfig,
    link: L,
    now: Now,
    entries: Vec<Entry>,
    /// Freed descriptors in the order they were freed ([`FdReuse`] says which end is used).
    free_fds: VecDeque<Fd>,
    open_fds: usize,
    conns: Vec<Option<Conn>>,
    free_conns: Vec<u32>,
    live_conns: usize,
    demux: HashMap<Key, u32, Fx>,
    listeners: HashMap<u16, Fd, Fx>,
    bound: HashMap<u16, u32, Fx>,
    timers: BinaryHeap<std::cmp::Reverse<(u64, u32)>>,
    /// Connections with something to send, in the order they got it (FIFO, so that none
    /// waits behind newer ones while the link is full).
    dirty: VecDeque<u32>,
    isn: IsnGenerator,
    ip_id: u16,
    scratch: Vec<u8>,
    next_ephemeral: u16,
    /// Rotation over the local addresses for `connect` (see [`HostConfig::extra_ips`]).
    next_local_ip: usize,
    stats: HostStats,
    /// The TCP counters of connections already freed (see [`Context::tcp_totals`]).
    freed_tcp: crate::tcp::tcb::TcbStats,
    /// NIC flow id → connection, for `TCP_TONIC` connections the NIC runs.
    tonic_flows: HashMap<u32, u32, Fx>,
    free_flow_ids: Vec<u32>,
    next_flow_id: u32,
    next_request_id: u32,
    tonic_stats: TonicHostStats,
    /// The host's SYN cookies (RFC 4987 §3.6).
    cookies: offload_api::syncookie::SynCookies,
    /// Connections handed to the NIC's teardown offload a moment ago, with the time until
    /// which their stray segments are dropped (see `teardown::HANDOVER_GRACE_NS`), and the
    /// same in handover order for expiry.
    handed_over: HashMap<Key, u64, Fx>,
    handed_over_q: VecDeque<(u64, Key)>,
    setup_stats: SetupHostStats,
    /// Quasi-TCBs (AccelTCP §5.2); their ids carry [`quasi::QUASI`] in `demux`, accept
    /// queues and timers.
    quasi: Vec<Option<quasi::QuasiConn>>,
    free_quasi: Vec<u32>,
    /// Quasi-TCBs written to since the last flush.
    quasi_dirty: Vec<u32>,
    quasi_stats: QuasiStats,
    /// Pairs handed to `nsplice`, by request id, until their closure (AccelTCP §4.3).
    splices: HashMap<u32, splice::Splice, Fx>,
    /// Connection → its pair, while the host still holds the connection.
    splice_conns: HashMap<u32, u32, Fx>,
    /// 4-tuples of pairs on the NIC → their pair (frames that raced the install go back).
    splice_keys: HashMap<Key, u32, Fx>,
    /// Pairs that need a look on every poll (draining, or relayed by the host).
    splice_busy: Vec<u32>,
    splice_stats: SpliceHostStats,
    /// Pipes' buffers, by the index their ends hold (`stack/pipe.rs`).
    pipes: Vec<Option<pipe::Pipe>>,
    free_pipes: Vec<u32>,
}

impl<L: HostLink> Context<L> {
    /// A context over `link` with clock `now`.
    pub fn new(cfg: HostConfig, link: L, now: Now) -> Self {
        let next_ephemeral = cfg.ephemeral.0;
        let cfg_cookie = cfg.cookie;
        Context {
            isn: IsnGenerator::new(cfg.isn_key),
            cfg,
            link,
            now,
            entries: Vec::new(),
            free_fds: VecDeque::new(),
            open_fds: 0,
            conns: Vec::new(),
            free_conns: Vec::new(),
            live_conns: 0,
            demux: HashMap::default(),
            listeners: HashMap::default(),
            bound: HashMap::default(),
            timers: BinaryHeap::new(),
            dirty: VecDeque::new(),
            ip_id: 0,
            scratch: Vec::with_capacity(2048),
            next_ephemeral,
            next_local_ip: 0,
            stats: HostStats::default(),
            freed_tcp: Default::default(),
            tonic_flows: HashMap::default(),
            free_flow_ids: Vec::new(),
            next_flow_id: 0,
            next_request_id: 0,
            tonic_stats: TonicHostStats::default(),
            cookies: offload_api::syncookie::SynCookies::random(cfg_cookie, 0),
            handed_over: HashMap::default(),
            handed_over_q: VecDeque::new(),
            setup_stats: SetupHostStats::default(),
            quasi: Vec::new(),
            free_quasi: Vec::new(),
            quasi_dirty: Vec::new(),
            quasi_stats: QuasiStats::default(),
            splices: HashMap::default(),
            splice_conns: HashMap::default(),
            splice_keys: HashMap::default(),
            splice_busy: Vec::new(),
            splice_stats: SpliceHostStats::default(),
            pipes: Vec::new(),
            free_pipes: Vec::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &HostConfig {
        &self.cfg
    }

    /// Counters.
    pub fn stats(&self) -> &HostStats {
        &self.stats
    }

    /// The TCP counters (segments, retransmissions by cause, duplicate ACKs, out-of-order
    /// segments, probes, ...) of every connection this context has had, open and freed,
    /// summed: the host's `netstat -s`. O(open connections): for summaries, not per packet.
    pub fn tcp_totals(&self) -> crate::tcp::tcb::TcbStats {
        let mut t = self.freed_tcp;
        for c in self.conns.iter().flatten() {
            t.add(c.tcb.stats());
        }
        t
    }

    /// The link (for its counters).
    pub fn link(&self) -> &L {
        &self.link
    }

    /// The link, mutably (tests inject frames through it).
    pub fn link_mut(&mut self) -> &mut L {
        &mut self.link
    }

    /// Connections held (open, half-open, or finishing their close).
    pub fn connections(&self) -> usize {
        self.live_conns
    }

    /// The open descriptors (sockets and epolls), in number order.
    pub fn descriptors(&self) -> Vec<Fd> {
        (0..self.entries.len())
            .filter(|&i| !matches!(self.entries[i], Entry::Free))
            .map(|i| i as Fd)
            .collect()
    }

    /// How many held connections are in each TCP state (states with none left out), in
    /// RFC 9293's order; quasi-TCBs (AccelTCP §5.2) count as established.
    pub fn connection_states(&self) -> Vec<(State, usize)> {
        const ORDER: [State; 10] = [
            State::SynSent,
            State::SynReceived,
            State::Established,
            State::FinWait1,
            State::FinWait2,
            State::CloseWait,
            State::Closing,
            State::LastAck,
            State::TimeWait,
            State::Closed,
        ];
        let mut n = [0usize; ORDER.len()];
        for c in self.conns.iter().flatten() {
            if let Some(k) = ORDER.iter().position(|s| *s == c.tcb.state()) {
                n[k] += 1;
            }
        }
        n[2] += self.quasi.iter().flatten().count();
        ORDER.into_iter().zip(n).filter(|(_, k)| *k > 0).collect()
    }

    /// The current time of the context's clock.
    pub fn now(&self) -> u64 {
        (self.now)()
    }

    /// The connection state machine behind a connected socket (for stats and traces). None
    /// for a connection still held as a quasi-TCB (AccelTCP §5.2): looking does not grow it.
    pub fn tcb(&self, fd: Fd) -> Option<&Tcb> {
        match self.sock(fd).ok()?.state {
            SockState::Conn(cid) => self.conns[cid as usize].as_ref().map(|c| &c.tcb),
            _ => None,
        }
    }

    /// True (and counted) when the context holds `max_conns` connections: no new one fits.
    fn at_conn_limit(&mut self) -> bool {
        let full = self.live_conns >= self.cfg.max_conns;
        if full {
            self.stats.conn_limit += 1;
        }
        full
    }

    fn alloc_conn(&mut self, tcb: Tcb) -> u32 {
        let conn = Conn {
            tcb,
            fd: None,
            listener: None,
            timer_at: u64::MAX,
            dirty: false,
            half_open: false,
            owner: Owner::Host,
        };
        self.live_conns += 1;
        match self.free_conns.pop() {
            Some(cid) => {
                self.conns[cid as usize] = Some(conn);
                cid
            }
            None => {
                self.conns.push(Some(conn));
                (self.conns.len() - 1) as u32
            }
        }
    }

    fn free_conn(&mut self, cid: u32) {
        self.tonic_forget(cid);
        if let Some(c) = self.conns[cid as usize].take() {
            let k = ep_key(&c.tcb.endpoints());
            if self.demux.get(&k) == Some(&cid) {
                self.demux.remove(&k);
            }
            self.free_conns.push(cid);
            self.live_conns -= 1;
            self.stats.conns_freed += 1;
            self.freed_tcp.add(c.tcb.stats());
        }
    }

    fn alloc_fd(&mut self, e: Entry) -> Result<Fd, crate::Errno> {
        if self.open_fds >= self.cfg.max_fds {
            return Err(crate::Errno::MFile);
        }
        self.open_fds += 1;
        let reuse = match self.cfg.fd_reuse {
            FdReuse::Recent => self.free_fds.pop_back(),
            FdReuse::Cycle if self.entries.len() < self.cfg.max_fds => None,
            FdReuse::Cycle => self.free_fds.pop_front(),
        };
        match reuse {
            Some(fd) => {
                self.entries[fd as usize] = e;
                Ok(fd)
            }
            None => {
                self.entries.push(e);
                Ok((self.entries.len() - 1) as Fd)
            }
        }
    }

    fn release_fd(&mut self, fd: Fd) {
        self.entries[fd as usize] = Entry::Free;
        self.free_fds.push_back(fd);
        self.open_fds -= 1;
    }

    fn sock(&self, fd: Fd) -> Result<&Sock, crate::Errno> {
        match self
            .entries
            .get(usize::try_from(fd).map_err(|_| crate::Errno::BadF)?)
        {
            Some(Entry::Sock(s)) => Ok(s),
            Some(Entry::Epoll(_) | Entry::Pipe(_)) => Err(crate::Errno::NotSock),
            _ => Err(crate::Errno::BadF),
        }
    }

    fn sock_mut(&mut self, fd: Fd) -> Result<&mut Sock, crate::Errno> {
        match self
            .entries
            .get_mut(usize::try_from(fd).map_err(|_| crate::Errno::BadF)?)
        {
            Some(Entry::Sock(s)) => Ok(s),
            Some(Entry::Epoll(_) | Entry::Pipe(_)) => Err(crate::Errno::NotSock),
            _ => Err(crate::Errno::BadF),
        }
    }

    fn tcp_config_for(&self, opts: &SockOpts) -> TcpConfig {
        let mut t = self.cfg.tcp.clone();
        if let Some(b) = opts.sndbuf {
            t.send_buffer = b;
        }
        if let Some(b) = opts.rcvbuf {
            t.recv_buffer = b;
        }
        t.nodelay = opts.nodelay || t.nodelay;
        t
    }
}
