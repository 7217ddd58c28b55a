//! Tonic's programmable transport engines in software (Tonic, NSDI '20, §3–§5;
//! `docs/architecture.md`, "Adding a Tonic protocol module").
//!
//! Tonic splits a sender's transport logic into *fixed* engines and small *programmable*
//! protocol modules (Fig. 2):
//!
//! - the **data delivery engine** ([`dd`]) decides *which* segment a flow sends next: the
//!   per-flow state of Table 2, window bitmaps as rings with find-first-set after the head
//!   ([`bitmap`], App. C), the active set, and the Incoming, Periodic Updates, Segment
//!   Generation and Segment Transmitted event processors with the merge rules of §3.4;
//! - the **credit engine** ([`credit`]) decides *when*: a ring of N generated segment
//!   addresses per flow, the ready-to-transmit set, and the window, rate ([`rate`], App. B's
//!   multi-precision rates, with per-flow timers on a wheel: [`timer`]) and grant-token credit
//!   schemes;
//! - a **protocol module** ([`module::TonicModule`]) supplies the two hooks (`incoming`,
//!   `periodic`) and a configuration; [`modules`] holds the built-in ones (Reno, NewReno,
//!   SACK, NDP, RoCEv2/DCQCN, IRN, DCTCP) and [`registry`] picks one by name.
//!
//! [`TonicEngine`] ([`engine`]) wires them together for a NIC lcore: add/remove flows,
//! `tonic-tail` updates, incoming control packets (with delivery notifications for the host),
//! periodic updates, and one scheduling decision per [`TonicEngine::next_segment`] call.
//! Both sets are rings of flow ids in round-robin order ([`rrset`]); per-flow state is kept
//! in flat, cache-line-aligned tables (a hot record and a slab per flow in the data delivery
//! engine, a record in the credit engine), and with many flows the engine prefetches the
//! state of the flows a few round-robin steps ahead. A decision allocates nothing and costs
//! O(1) whatever the number of flows ([`bench`] measures it).
//!
//! On a NIC lcore, [`nic::TonicNic`] runs the engines for the sender side of `TCP_TONIC`
//! connections (§5) as an offload on the lcore's offload chain ([`crate::offload`]), and
//! [`plugin`] loads out-of-tree modules from shared libraries.
//!
//! Everything here is sans-I/O: flow ids, segment numbers and an explicit `now` in
//! nanoseconds; no DPDK, no threads, no clock.

pub mod bench;
pub mod bitmap;
pub mod credit;
pub mod dd;
pub mod engine;
pub mod module;
pub mod modules;
pub mod nic;
pub mod plugin;
pub mod rate;
pub mod registry;
pub mod rrset;
pub mod testbench;
pub mod timer;

pub use dd::IncomingReport;
pub use engine::{Ack, EngineParams, EngineStats, PeriodicReport, TonicEngine, TxSegment};

/// A flow id, dense in `[0, max_flows)` (Tonic §2.1, §5: the rest of the stack maps each
/// established connection to an id).
pub type FlowId = u32;

/// A segment index within a flow, counted from 0 at flow creation (Tonic §3.2.1: fixed
/// segment boundaries). 64 bits, so it never wraps.
pub type SegId = u64;

/// Time in nanoseconds, from an arbitrary origin chosen by the caller (the engines are sans-I/O
/// and never read a clock).
pub type Nanos = u64;

/// Errors of the Tonic engines, registry and modules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TonicError {
    /// A module's user context is larger than its credit scheme allows (Tonic Tab. 4).
    #[error("module {module}: user context of {bytes} B exceeds the {limit} B limit of the {scheme} credit scheme (Tonic Table 4)")]
    UserCtxTooLarge {
        /// The module.
        module: String,
        /// Declared size.
        bytes: u32,
        /// The limit.
        limit: u32,
        /// The module's credit scheme.
        scheme: module::CreditScheme,
    },
    /// An engine parameter is out of range.
    #[error("tonic: {0}")]
    InvalidParam(String),
    /// A flow id beyond the engine's capacity.
    #[error("flow {0} is out of range (the engine holds flows 0..{1})")]
    FlowOutOfRange(FlowId, u32),
    /// No flow with this id.
    #[error("flow {0} does not exist")]
    NoSuchFlow(FlowId),
    /// The flow id is taken.
    #[error("flow {0} already exists")]
    FlowExists(FlowId),
    /// The host moved `tonic-tail` backwards.
    #[error("flow {flow}: tail moved backwards from byte {old} to {new}")]
    TailBackwards {
        /// The flow.
        flow: FlowId,
        /// The current tail.
        old: u64,
        /// The refused tail.
        new: u64,
    },
    /// No module of that name.
    #[error("unknown Tonic module {name:?}, expected one of {known}")]
    UnknownModule {
        /// The name asked for.
        name: String,
        /// The registered names.
        known: String,
    },
    /// A module name registered twice.
    #[error("a Tonic module named {0:?} is already registered")]
    DuplicateModule(String),
    /// New data while a small segment is undelivered (§5: segmentation waits for it).
    #[error("flow {0}: a final small segment is not yet delivered; new data must wait (Tonic §5)")]
    SmallSegmentPending(FlowId),
    /// A module's configuration is unusable.
    #[error("module {module}: {reason}")]
    InvalidModuleConfig {
        /// The module.
        module: String,
        /// What is wrong.
        reason: String,
    },
}
