//! The NIC offload seam: an ordered chain of offloads on each NIC lcore (`docs/architecture.md`,
//! "Life of a frame through an NIC lcore", step 3; "Adding an offload").
//!
//! An offload is one piece of smart-NIC work that sits between the wire and the host: Tonic's
//! sender engines (Tonic §5), and AccelTCP's SYN-cookie responder, teardown engine and splice
//! table (AccelTCP §4.1–§4.3). Each implements [`Offload`], one small trait with a hook per
//! place where the lcore meets traffic:
//!
//! | hook | called with | typical use |
//! |---|---|---|
//! | [`Offload::wire_rx`] | a validated frame from a wire port and its parsed headers | consume ACKs, answer SYNs, translate spliced segments |
//! | [`Offload::host_control`] | a control message from the host (AccelTCP App. A EtherTypes) | flow add / remove, splice install, listen registration |
//! | [`Offload::host_tcp`] | an IPv4/TCP frame from the host, before checksum fill and TSO | rewrite fields the host does not know |
//! | [`Offload::poll`] | once per loop iteration while the offload is [active](Offload::active) | timers, transmission, notifications |
//! | [`Offload::next_deadline`] | — | virtual-time drivers jump to it |
//!
//! Each data hook returns a [`Verdict`]; the [`OffloadChain`] offers a frame to its offloads
//! in order until one returns something other than [`Verdict::Pass`], counts every verdict
//! per offload, and tells the lcore what to do with the frame. The lcore loop
//! ([`crate::lcore`]) knows no offload by name: it parses a frame once, calls the chain, and
//! moves the buffer where the verdict says.
//!
//! The shape follows packet-graph designs (VPP's graph nodes, DPDK's `rte_graph`: a frame
//! travels with its parsed metadata from node to node, and each node names the next) and
//! smoltcp's `Interface` dispatch, kept as small as today's offloads need: a fixed order, no
//! graph, one frame at a time. Everything here is sans-I/O: the
//! caller passes `now`, the NIC stack and an [`OffloadIo`] to send frames through.
//!
//! Adding an offload: implement [`Offload`] for its state, push it on the chain that
//! [`build_chain`] (or a test) assembles, and read its counters back from
//! [`crate::lcore::LcoreReport::offloads`] or with [`OffloadChain::get`].

pub mod setup;
pub mod splice;
pub mod teardown;

use std::any::Any;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use offload_api::msg::MsgType;

use crate::buf::PacketBuf;
use crate::config::{OffloadConfig, TonicConfig};
use crate::net::parse::{Parsed, IPPROTO_TCP, L3};
use crate::net::stack::NicStack;
use crate::tonic::module::TonicModule;
use crate::tonic::nic::{TonicNic, TonicNicConfig};
use crate::tonic::plugin::{self, PluginError};
use crate::tonic::registry::{params_from_config, Registry};
use splice::{SpliceConfig, SpliceOffload, SpliceTable};
use teardown::TeardownOffload;

pub use crate::net::Verdict;

/// How an offload sends frames it builds itself (retransmissions, window probes, messages to
/// the host). Implemented by the lcore over its port queues and PCIe link.
pub trait OffloadIo {
    /// Copies `frame` (a whole Ethernet frame, checksums filled) into a buffer of port `port`
    /// and queues it for this iteration's tx burst. False: not sent (no such port on this
    /// lcore, or no buffer).
    fn to_port(&mut self, port: u16, frame: &[u8]) -> bool;
    /// Sends `frame` to the host core over the PCIe link, tagged with NIC port `port`. False:
    /// not sent (no host link, or its ring is full; the offload retries or counts it).
    fn to_host(&mut self, port: u16, frame: &[u8]) -> bool;
}

/// What every hook gets besides its frame: the time, the lcore's NIC stack (interfaces, ARP
/// table) and the way out.
pub struct OffloadCtx<'a, B: PacketBuf> {
    /// The lcore's clock, nanoseconds.
    pub now: u64,
    /// The lcore's L2/L3 stack: interface addresses, ARP lookups and resolution.
    pub stack: &'a mut NicStack<B>,
    /// Frames the offload builds itself go out through this.
    pub io: &'a mut dyn OffloadIo,
}

/// A frame from a wire port, as the chain offers it to [`Offload::wire_rx`].
pub struct RxFrame<'a, B: PacketBuf> {
    /// Index of the port it arrived on.
    pub port: usize,
    /// The buffer; an offload that answers [`Verdict::Reply`] or [`Verdict::Out`] rewrites it.
    pub buf: &'a mut B,
    /// Its headers, parsed once by the lcore (Ethernet, IPv4, the L4 offsets) and validated:
    /// lengths, the IPv4 header checksum and, where the NIC stack checks it, the L4 checksum.
    pub hdr: &'a Parsed,
}

impl<B: PacketBuf> RxFrame<'_, B> {
    /// The frame's TCP segment with its IPv4 addresses, when it is an IPv4/TCP frame (the
    /// lcore checked the bounds, RFC 9293 §3.1); `None` for anything else.
    #[inline]
    pub fn tcp(&self) -> Option<RxTcp<'_>> {
        let L3::Ipv4 {
            proto: IPPROTO_TCP,
            src,
            dst,
            l4_off,
            l4_len,
        } = self.hdr.l3
        else {
            return None;
        };
        let seg = self.buf.data().get(l4_off..l4_off + l4_len)?;
        Some(RxTcp {
            src,
            dst,
            l4_off,
            seg,
        })
    }
}

/// The TCP segment of a wire frame, as [`RxFrame::tcp`] finds it.
#[derive(Clone, Copy, Debug)]
pub struct RxTcp<'a> {
    /// IPv4 source address.
    pub src: [u8; 4],
    /// IPv4 destination address.
    pub dst: [u8; 4],
    /// Offset of the TCP header in the frame.
    pub l4_off: usize,
    /// The TCP header and payload (up to the IPv4 total length).
    pub seg: &'a [u8],
}

/// Where the TCP segment sits in a frame from the host (found once by the lcore for all
/// offloads; the host leaves checksums to the NIC, so they are not checked).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostTcp {
    /// IPv4 source address.
    pub src: [u8; 4],
    /// IPv4 destination address.
    pub dst: [u8; 4],
    /// Offset of the TCP header in the frame.
    pub l4_off: usize,
    /// Length of the TCP header and payload (up to the IPv4 total length).
    pub l4_len: usize,
}

impl HostTcp {
    /// The TCP segment of an Ethernet/IPv4 frame whose IPv4 header passes the NIC's transmit
    /// checks (version, lengths, no fragment: RFC 791 §3.1) and whose TCP header is whole
    /// (RFC 9293 §3.1); `None` for anything else.
    pub fn find(frame: &[u8]) -> Option<HostTcp> {
        use crate::net::parse::{check_l4_header, ETH_HDR_LEN, IPPROTO_TCP};
        use offload_api::wire::EthernetFrame;
        let eth = EthernetFrame::new_checked(frame).ok()?;
        if eth.ethertype() != offload_api::ETHERTYPE_IPV4 {
            return None;
        }
        let ip = crate::net::csum::ipv4_for_tx(eth.payload_slice()).ok()?;
        if ip.protocol() != IPPROTO_TCP {
            return None;
        }
        let tcp = ip.payload_slice();
        check_l4_header(IPPROTO_TCP, tcp).ok()?;
        Some(HostTcp {
            src: ip.src_addr(),
            dst: ip.dst_addr(),
            l4_off: ETH_HDR_LEN + ip.header_len(),
            l4_len: tcp.len(),
        })
    }
}

/// The counters an offload reports, as `(name, value)` pairs in a stable order.
pub type CounterSink<'a> = &'a mut dyn FnMut(&'static str, u64);

/// One NIC offload on the chain. See the module documentation for the hooks.
///
/// Every hook but [`Offload::host_control`] runs only while [`Offload::active`] is true, so
/// an offload with nothing to do costs the per-frame path nothing but one flag test.
/// Invariant: hooks never panic on any frame or message; what they cannot use they count and
/// pass on or drop.
pub trait Offload<B: PacketBuf>: Any + Send {
    /// Short name in reports (`tonic`, `syn-cookie`, `splice`, ...).
    fn name(&self) -> &'static str;

    /// True while the offload has state that traffic can hit (flows, listeners, spliced
    /// pairs). Asked after every hook call; while false only control messages reach it.
    fn active(&self) -> bool;

    /// A validated frame from a wire port.
    fn wire_rx(&mut self, cx: &mut OffloadCtx<'_, B>, rx: &mut RxFrame<'_, B>) -> Verdict {
        let _ = (cx, rx);
        Verdict::Pass
    }

    /// A control message from the host (a frame with one of the host ↔ NIC EtherTypes of
    /// AccelTCP App. A, `msg` its type). Answers go through [`OffloadIo::to_host`].
    fn host_control(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        port: u16,
        msg: MsgType,
        frame: &[u8],
    ) -> Verdict {
        let _ = (cx, port, msg, frame);
        Verdict::Pass
    }

    /// An IPv4/TCP frame from the host for port `port`, before the NIC fills checksums and
    /// segments it; the offload may rewrite it in place.
    fn host_tcp(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        port: u16,
        frame: &mut Vec<u8>,
        tcp: HostTcp,
    ) -> Verdict {
        let _ = (cx, port, frame, tcp);
        Verdict::Pass
    }

    /// Periodic work: timers, transmission, notifications to the host (data path steps 5
    /// and 6). Runs once per lcore iteration while active.
    fn poll(&mut self, cx: &mut OffloadCtx<'_, B>) {
        let _ = cx;
    }

    /// The earliest time the offload has work to do without new traffic (none: idle).
    fn next_deadline(&self) -> Option<u64> {
        None
    }

    /// For an offload whose state other lcores can change (the shared splice table): a
    /// counter that is non-zero while it may be active. The chain reads it on every frame
    /// while it believes every offload idle, since no hook of this lcore ran to tell it.
    fn shared_activity(&self) -> Option<Arc<AtomicUsize>> {
        None
    }

    /// Reports the offload's own counters, each as `(name, value)`, always the same names in
    /// the same order.
    fn counters(&self, out: CounterSink<'_>) {
        let _ = out;
    }
}

/// What the chain counted for one offload: the verdicts it returned, by hook.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VerdictCounts {
    /// Wire frames it consumed.
    pub wire_consumed: u64,
    /// Wire frames it answered on the same port.
    pub wire_replied: u64,
    /// Wire frames it sent out of another port.
    pub wire_out: u64,
    /// Wire frames it handed straight to the host.
    pub wire_to_host: u64,
    /// Control messages from the host it took.
    pub control: u64,
    /// Host frames it consumed or redirected (anything but pass).
    pub host_taken: u64,
}

/// The report of one offload: its name, the chain's counts of its verdicts, and its own
/// counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OffloadReport {
    /// [`Offload::name`].
    pub name: &'static str,
    /// Verdicts it returned.
    pub verdicts: VerdictCounts,
    /// [`Offload::counters`], in its order.
    pub counters: Vec<(&'static str, u64)>,
}

impl OffloadReport {
    /// The counter called `name` (0 when it has none).
    pub fn counter(&self, name: &str) -> u64 {
        self.counters
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |&(_, v)| v)
    }
}

struct Slot<B: PacketBuf> {
    offload: Box<dyn Offload<B>>,
    verdicts: VerdictCounts,
}

/// The ordered offloads of one NIC lcore (AccelTCP §4 order: splice, teardown, Tonic, SYN
/// cookies; whatever passes goes to the host).
///
/// Invariant: `any_active` is true exactly when some offload reported [`Offload::active`]
/// after its last hook call; `shared` holds the [`Offload::shared_activity`] counters, which
/// other lcores may raise at any time.
pub struct OffloadChain<B: PacketBuf> {
    slots: Vec<Slot<B>>,
    any_active: bool,
    shared: Vec<Arc<AtomicUsize>>,
}

impl<B: PacketBuf> Default for OffloadChain<B> {
    fn default() -> Self {
        OffloadChain {
            slots: Vec::new(),
            any_active: false,
            shared: Vec::new(),
        }
    }
}

impl<B: PacketBuf> OffloadChain<B> {
    /// An empty chain: every wire frame goes to the host, every host frame to the wire.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `offload` at the end of the chain (it sees what the earlier ones pass).
    pub fn push(&mut self, offload: Box<dyn Offload<B>>) {
        self.any_active |= offload.active();
        self.shared.extend(offload.shared_activity());
        self.slots.push(Slot {
            offload,
            verdicts: VerdictCounts::default(),
        });
    }

    /// Builder form of [`OffloadChain::push`].
    pub fn with(mut self, offload: Box<dyn Offload<B>>) -> Self {
        self.push(offload);
        self
    }

    /// Number of offloads.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True without offloads.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// True while some offload is active (or a shared one may have become active on another
    /// lcore): only then do frames visit the chain.
    #[inline(always)]
    pub fn any_active(&self) -> bool {
        self.any_active || self.shared.iter().any(|c| c.load(Ordering::Relaxed) != 0)
    }

    fn refresh(&mut self) {
        self.any_active = self.slots.iter().any(|s| s.offload.active());
    }

    /// The first offload of type `T`, for reading its state (tests, reports).
    pub fn get<T: Offload<B>>(&self) -> Option<&T> {
        self.slots.iter().find_map(|s| {
            let any: &dyn Any = s.offload.as_ref();
            any.downcast_ref::<T>()
        })
    }

    /// The first offload of type `T`, writable (configuration between runs, tests).
    pub fn get_mut<T: Offload<B>>(&mut self) -> Option<&mut T> {
        let r = self.slots.iter_mut().find_map(|s| {
            let any: &mut dyn Any = s.offload.as_mut();
            any.downcast_mut::<T>()
        });
        self.any_active = true; // the caller may change what is active; re-read next time
        r
    }

    /// Offers a wire frame to the active offloads in order; returns the first verdict that
    /// is not [`Verdict::Pass`] (or `Pass` when all passed).
    pub fn wire_rx(&mut self, cx: &mut OffloadCtx<'_, B>, rx: &mut RxFrame<'_, B>) -> Verdict {
        self.first_taker(
            true,
            |o| o.wire_rx(cx, rx),
            |c, v| match v {
                Verdict::Consumed | Verdict::Drop(_) => c.wire_consumed += 1,
                Verdict::Reply => c.wire_replied += 1,
                Verdict::Out(_) => c.wire_out += 1,
                Verdict::ToHost => c.wire_to_host += 1,
                Verdict::Pass => {}
            },
        )
    }

    /// Offers a control message from the host to every offload in order until one takes it;
    /// `Pass` when none did (the lcore counts it as unhandled).
    pub fn host_control(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        port: u16,
        msg: MsgType,
        frame: &[u8],
    ) -> Verdict {
        self.first_taker(
            false,
            |o| o.host_control(cx, port, msg, frame),
            |c, _| c.control += 1,
        )
    }

    /// Offers an IPv4/TCP frame from the host to the active offloads in order; returns the
    /// first verdict that is not [`Verdict::Pass`].
    pub fn host_tcp(
        &mut self,
        cx: &mut OffloadCtx<'_, B>,
        port: u16,
        frame: &mut Vec<u8>,
        tcp: HostTcp,
    ) -> Verdict {
        self.first_taker(
            true,
            |o| o.host_tcp(cx, port, frame, tcp),
            |c, _| c.host_taken += 1,
        )
    }

    /// Calls `hook` on the offloads in order (only the active ones when `active_only`) until
    /// one returns something other than [`Verdict::Pass`], counts that verdict for it with
    /// `count`, refreshes the activity flag, and returns the verdict (`Pass` when all passed).
    #[inline]
    fn first_taker(
        &mut self,
        active_only: bool,
        mut hook: impl FnMut(&mut dyn Offload<B>) -> Verdict,
        count: impl Fn(&mut VerdictCounts, Verdict),
    ) -> Verdict {
        let mut verdict = Verdict::Pass;
        for s in &mut self.slots {
            if active_only && !s.offload.active() {
                continue;
            }
            verdict = hook(s.offload.as_mut());
            if verdict != Verdict::Pass {
                count(&mut s.verdicts, verdict);
                break;
            }
        }
        self.refresh();
        verdict
    }

    /// Periodic work of every active offload.
    pub fn poll(&mut self, cx: &mut OffloadCtx<'_, B>) {
        for s in &mut self.slots {
            if s.offload.active() {
                s.offload.poll(cx);
            }
        }
        self.refresh();
    }

    /// The earliest deadline of any offload.
    pub fn next_deadline(&self) -> Option<u64> {
        self.slots
            .iter()
            .filter_map(|s| s.offload.next_deadline())
            .min()
    }

    /// Writes one report per offload into `out`, reusing its allocations.
    pub fn report(&self, out: &mut Vec<OffloadReport>) {
        out.truncate(self.slots.len());
        while out.len() < self.slots.len() {
            out.push(OffloadReport::default());
        }
        for (r, s) in out.iter_mut().zip(&self.slots) {
            r.name = s.offload.name();
            r.verdicts = s.verdicts;
            r.counters.clear();
            s.offload.counters(&mut |n, v| r.counters.push((n, v)));
        }
    }
}

/// Why the offloads of a configuration could not be built.
#[derive(Debug, thiserror::Error)]
pub enum OffloadError {
    /// A Tonic plugin (`[tonic] plugins`) did not load or register.
    #[error("[tonic] plugins: {path}: {message}")]
    Plugin {
        /// The library's path as configured.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// The teardown engine's settings (`[offloads]`) make no timer wheel.
    #[error("[offloads] teardown: {0}")]
    Teardown(String),
}

/// The Tonic modules loaded from shared libraries, loaded once per process and registered
/// on every lcore's registry.
#[derive(Clone, Default)]
pub struct LoadedPlugins {
    modules: Vec<(String, Arc<dyn TonicModule>)>,
}

impl LoadedPlugins {
    /// Loads every library of `[tonic] plugins` (the C ABI of `offload_api::tonic_abi`).
    pub fn load(cfg: &TonicConfig) -> Result<Self, OffloadError> {
        let mut modules = Vec::new();
        for p in &cfg.plugins {
            let m = plugin::load(Path::new(p)).map_err(|e: PluginError| OffloadError::Plugin {
                path: p.clone(),
                message: e.to_string(),
            })?;
            modules.push((p.clone(), m));
        }
        Ok(LoadedPlugins { modules })
    }

    /// The built-in modules plus the loaded ones.
    pub fn registry(&self) -> Result<Registry, OffloadError> {
        let mut reg = Registry::builtin();
        for (path, m) in &self.modules {
            let name = m.name().to_string();
            reg.register(
                &name,
                &format!("loaded from {path}"),
                plugin::factory(m.clone()),
            )
            .map_err(|e| OffloadError::Plugin {
                path: path.clone(),
                message: e.to_string(),
            })?;
        }
        Ok(reg)
    }
}

/// The Tonic side of a NIC lcore as `[tonic]` configures it: engine sizes and module
/// parameters from the configuration, the loaded plugins in its registry.
pub fn tonic_from_config(
    cfg: &TonicConfig,
    plugins: &LoadedPlugins,
) -> Result<TonicNic, OffloadError> {
    let (module, engine) = params_from_config(cfg);
    let mut nic = TonicNic::new(TonicNicConfig {
        engine,
        module,
        ..TonicNicConfig::default()
    });
    *nic.registry_mut() = plugins.registry()?;
    Ok(nic)
}

/// State the offloads of all NIC lcores of a process share, made once per process: the
/// splice table (AccelTCP §4.3; RSS may bring a spliced pair's segments to any lcore).
#[derive(Clone, Debug, Default)]
pub struct SharedOffloads {
    /// The splice table, when `[offloads] splice` is on.
    pub splice: Option<Arc<SpliceTable>>,
}

impl SharedOffloads {
    /// The shared state `[offloads]` asks for.
    pub fn new(offloads: &OffloadConfig) -> SharedOffloads {
        SharedOffloads {
            splice: offloads.splice.then(|| {
                SpliceTable::new(SpliceConfig {
                    max_pairs: offloads.splice_max_pairs,
                    idle_timeout_ns: offloads.splice_idle_timeout_ms.saturating_mul(1_000_000),
                    linger_ns: offloads.splice_linger_ms.saturating_mul(1_000_000),
                })
            }),
        }
    }
}

/// The offload chain of one NIC lcore for a configuration, in AccelTCP §4's order: the
/// splice offload over the process's shared table (AccelTCP §4.3; idle until the host
/// installs a pair), the teardown offload (AccelTCP §4.2; idle until the host hands a close
/// over), Tonic (idle until the host adds a flow), configured from `[tonic]`, then the
/// SYN-cookie responder (AccelTCP §4.1; idle until the host registers a setup-offloaded
/// listener). `[offloads]` turns the AccelTCP engines on or off and sets them up; `shared`
/// comes from [`SharedOffloads::new`] with the same `offloads`, once per process.
pub fn build_chain<B: PacketBuf>(
    cfg: &TonicConfig,
    offloads: &OffloadConfig,
    plugins: &LoadedPlugins,
    shared: &SharedOffloads,
) -> Result<OffloadChain<B>, OffloadError> {
    let mut chain = OffloadChain::new();
    if let Some(t) = &shared.splice {
        chain.push(Box::new(SpliceOffload::new(t.clone())));
    }
    if offloads.teardown {
        let td = TeardownOffload::new(teardown::TeardownConfig {
            max_flows: offloads.teardown_max_flows,
            time_wait_ns: offloads.teardown_time_wait_ms.saturating_mul(1_000_000),
            fin_wait2_ns: offloads.teardown_fin_wait2_ms.saturating_mul(1_000_000),
            max_retries: offloads.teardown_max_retries,
            ..teardown::TeardownConfig::default()
        })
        .map_err(|e| OffloadError::Teardown(e.to_string()))?;
        chain.push(Box::new(td));
    }
    chain.push(Box::new(tonic_from_config(cfg, plugins)?));
    if offloads.setup {
        chain.push(Box::new(setup::SetupOffload::new(
            offload_api::syncookie::CookieConfig {
                period_ns: offloads.cookie_period_s.saturating_mul(1_000_000_000),
                max_age: offloads.cookie_max_age,
                rotate_ticks: offloads.cookie_rotate_ticks,
            },
        )));
    }
    Ok(chain)
}

/// The chain every lcore gets without a configuration: splice (over a table of its own),
/// teardown, Tonic and the SYN-cookie responder with their defaults.
pub fn default_chain<B: PacketBuf>() -> OffloadChain<B> {
    OffloadChain::new()
        .with(Box::new(SpliceOffload::default()))
        .with(Box::new(TeardownOffload::default()))
        .with(Box::new(TonicNic::default()))
        .with(Box::new(setup::SetupOffload::default()))
}
