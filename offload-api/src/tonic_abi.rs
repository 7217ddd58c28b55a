//! The versioned C ABI through which out-of-tree Tonic protocol modules load from a shared
//! library (Tonic §3.3; `docs/architecture.md`, "Adding a Tonic protocol module").
//!
//! A Tonic protocol module is the programmable part of a Tonic transport: the second stage of
//! the Incoming module, the Periodic Updates module and a configuration (Tonic §3.5, App. D).
//! Inside nicemu a module is a Rust value implementing `dataplane::tonic::module::TonicModule`.
//! This file defines how a module built *outside* nicemu, in any language with a C ABI, plugs
//! into the same interface: `#[repr(C)]` mirrors of the hook inputs and outputs and of the
//! configuration (fixed-size arrays and integers only), the two symbols a module library
//! exports, and the rules both sides follow. `dataplane::tonic::plugin` is the loading side;
//! `dataplane/tonic-example` is an example module crate, and
//! `dataplane/tonic-example/include/nicemu_tonic.h` is the same ABI as a C header.
//!
//! # Exported symbols
//!
//! A module library (a `cdylib`, or a C shared object) exports exactly these two functions,
//! with C linkage and unmangled names:
//!
//! | symbol | C signature | returns |
//! |---|---|---|
//! | [`TONIC_ABI_VERSION_SYMBOL`] | `uint32_t nicemu_tonic_abi_version(void)` | the [`TONIC_ABI_VERSION`] the module was built against |
//! | [`TONIC_MODULE_SYMBOL`] | `const struct nicemu_tonic_module_vtable *nicemu_tonic_module(void)` | the module's [`TonicModuleVTable`] |
//!
//! # Version rule
//!
//! The loader calls `nicemu_tonic_abi_version` first and refuses the library unless the value
//! equals its own [`TONIC_ABI_VERSION`] exactly: there is no backward or forward
//! compatibility between versions. Any change to a type, a constant value, a function
//! signature or the meaning of a field in this file bumps [`TONIC_ABI_VERSION`]. Only then does
//! the loader call `nicemu_tonic_module`, so a module may assume the vtable layout of its own
//! version. Fields named `reserved*` are written as zero by their producer and ignored by
//! their consumer.
//!
//! # The contract
//!
//! **Ownership and lifetimes.**
//! - The vtable returned by `nicemu_tonic_module` is owned by the library and must stay valid
//!   and unchanged for as long as the library is loaded (a `static` / `static const`). It is
//!   read once, at load: the loader copies the name, the configuration and the function
//!   pointers. The loader keeps the library loaded (never `dlclose`s it) while any copy of the
//!   module is in use.
//! - Every pointer passed to a hook is owned by the caller and valid only for the duration of
//!   that call: a module must not keep, return or free it. Inputs (`*const`) are read-only.
//!   The user context (`ctx`, `ctx_words` 64-bit words) and the output (`*mut`) are writable
//!   for the call only.
//! - `ctx` points to the flow's user context of exactly `ctx_words` words, which is
//!   [`TonicAbiModuleConfig::user_ctx_bytes`] rounded up to whole words. It is zeroed when a
//!   flow is created, then `init_flow` may set it; afterwards only this module's hooks change
//!   it. When `ctx_words` is 0 the pointer may be dangling and must not be read.
//! - No allocation crosses the boundary: neither side frees or reallocates memory the other
//!   side allocated. Every type here is fixed-size plain data.
//!
//! **Threads.** Hooks may be called concurrently from several NIC lcores (threads), on
//! different flows, so they must be reentrant and thread-safe: keep per-flow state only in
//! the user context and use no mutable global state (read-only tables are fine). Two calls
//! for the same flow never overlap; the same flow's user context is never handed to two calls
//! at once (when both hooks touch a flow in one engine cycle they work on separate copies,
//! merged afterwards by `merge_user_ctx` or the engine's default rule).
//!
//! **What a hook must not do.** Block, sleep or take locks that other lcores may hold; perform
//! I/O or system calls (the hooks run inside a poll-mode loop and should be O(1)); read a
//! clock (use the `now` it is given: the engines run in virtual time in tests); call back into
//! nicemu; unwind across the boundary (a Rust panic escaping an `extern "C"` function aborts
//! the whole process; C++ exceptions must be caught); touch memory outside its inputs, its
//! output and `ctx[0..ctx_words]`; keep pointers between calls.
//!
//! **Values.** Enumerations and booleans cross as integers (`u8`) so that every bit pattern is
//! a valid value on both sides; the loader rejects unknown enumeration values in the
//! configuration at load. Segments are numbered per flow from 0, times are nanoseconds on the
//! engine's clock, rates are bits per second, credit is bytes, windows are segments.
//!
//! # Writing a module in Rust
//!
//! Implement [`TonicAbiModule`] for a type and invoke [`export_tonic_module!`](crate::export_tonic_module)
//! once in the `cdylib` crate:
//!
//! ```
//! use offload_api::tonic_abi::*;
//!
//! struct Fixed;
//!
//! impl TonicAbiModule for Fixed {
//!     const NAME: &'static str = "fixed-window";
//!     const CONFIG: TonicAbiModuleConfig = TonicAbiModuleConfig {
//!         init_wnd_size: 16,
//!         ..TonicAbiModuleConfig::DEFAULT
//!     };
//!
//!     fn incoming(input: &TonicAbiIncomingInput, _ctx: &mut [u64], out: &mut TonicAbiHookOutput) {
//!         if input.new_wnd_start > input.old_wnd_start {
//!             out.reset_rtx_timer();
//!         }
//!     }
//!
//!     fn periodic(input: &TonicAbiPeriodicInput, _ctx: &mut [u64], out: &mut TonicAbiHookOutput) {
//!         if input.timeout_expired != 0 {
//!             out.mark_for_rtx(input.flow.wnd_start, input.flow.next_new);
//!         }
//!     }
//! }
//!
//! offload_api::export_tonic_module!(Fixed);
//! # fn main() {}
//! ```
//!
//! The macro expands, in the calling crate, to the two `#[no_mangle]` exported functions, a
//! `static` vtable, and `unsafe extern "C"` trampolines that turn the raw pointers into
//! references and a slice before calling the trait's functions; the module's own code stays
//! safe Rust. rustc does not apply the `unsafe_code` lint to expansions of another crate's
//! macro, so the module crate may keep `#![forbid(unsafe_code)]` for its own code (the example
//! crate does); should a future rustc disagree, allow `unsafe_code` at the invocation.

/// Version of this ABI. A module library declares the version it was built against through
/// [`TONIC_ABI_VERSION_SYMBOL`]; the loader accepts only an exact match.
pub const TONIC_ABI_VERSION: u32 = 1;

/// Name of the exported `uint32_t nicemu_tonic_abi_version(void)` function.
pub const TONIC_ABI_VERSION_SYMBOL: &std::ffi::CStr = c"nicemu_tonic_abi_version";

/// Name of the exported `const struct nicemu_tonic_module_vtable *nicemu_tonic_module(void)`
/// function.
pub const TONIC_MODULE_SYMBOL: &std::ffi::CStr = c"nicemu_tonic_module";

/// Bytes of [`TonicModuleVTable::name`], the terminating NUL included (so a name has at most
/// 31 bytes).
pub const TONIC_ABI_NAME_LEN: usize = 32;

/// Largest window bitmap in segments (Tonic Tab. 4: 256).
pub const TONIC_ABI_MAX_WINDOW_SEGMENTS: u32 = 256;

/// 64-bit words of a [`TonicAbiWindowBits`].
pub const TONIC_ABI_WINDOW_WORDS: usize = 4;

/// Selective-ack blocks in a [`TonicAbiIncomingPkt`].
pub const TONIC_ABI_MAX_SACK_BLOCKS: usize = 4;

/// 32-bit words of protocol-specific data in a [`TonicAbiIncomingPkt`].
pub const TONIC_ABI_PKT_DATA_WORDS: usize = 4;

/// Largest per-flow user context of any credit scheme, in bytes (Tonic Tab. 4).
pub const TONIC_ABI_MAX_USER_CTX_BYTES: u32 = 448;

/// Credit scheme value: congestion window (Tonic §3.3.1); user context at most 448 bytes.
pub const TONIC_ABI_CREDIT_WINDOW: u8 = 0;
/// Credit scheme value: rate with a maximum burst; user context at most 340 bytes.
pub const TONIC_ABI_CREDIT_RATE: u8 = 1;
/// Credit scheme value: grant tokens; user context at most 256 bytes.
pub const TONIC_ABI_CREDIT_GRANT: u8 = 2;

/// The user-context limit in bytes of credit scheme `scheme` (Tonic Tab. 4), or `None` for an
/// unknown scheme value.
pub const fn tonic_abi_user_ctx_limit(scheme: u8) -> Option<u32> {
    match scheme {
        TONIC_ABI_CREDIT_WINDOW => Some(448),
        TONIC_ABI_CREDIT_RATE => Some(340),
        TONIC_ABI_CREDIT_GRANT => Some(256),
        _ => None,
    }
}

/// Context priority value: the Incoming hook's user-context update wins a same-cycle conflict.
pub const TONIC_ABI_CTX_PRIORITY_INCOMING: u8 = 0;
/// Context priority value: the Periodic Updates hook's update wins.
pub const TONIC_ABI_CTX_PRIORITY_PERIODIC: u8 = 1;

/// Packet type value: a cumulative acknowledgment.
pub const TONIC_ABI_PKT_ACK: u8 = 0;
/// Packet type value: a cumulative acknowledgment with selective-ack blocks.
pub const TONIC_ABI_PKT_SACK: u8 = 1;
/// Packet type value: a negative acknowledgment naming [`TonicAbiIncomingPkt::nack`].
pub const TONIC_ABI_PKT_NACK: u8 = 2;
/// Packet type value: a congestion notification packet.
pub const TONIC_ABI_PKT_CNP: u8 = 3;
/// Packet type value: a grant of [`TonicAbiIncomingPkt::grant_bytes`] tokens.
pub const TONIC_ABI_PKT_GRANT: u8 = 4;

/// [`TonicAbiIncomingPkt::flags`]: the receiver echoed congestion experienced.
pub const TONIC_ABI_FLAG_ECN_ECHO: u16 = 1 << 0;
/// [`TonicAbiIncomingPkt::flags`]: the packet reports a trimmed data packet named by `nack`.
pub const TONIC_ABI_FLAG_TRIMMED: u16 = 1 << 1;
/// [`TonicAbiIncomingPkt::flags`]: `rcv_wnd` is valid.
pub const TONIC_ABI_FLAG_RCV_WND: u16 = 1 << 2;
/// [`TonicAbiIncomingPkt::flags`]: `ts_echo` is valid.
pub const TONIC_ABI_FLAG_TS_ECHO: u16 = 1 << 3;

/// [`TonicAbiHookOutput::set`]: `mark_rtx` is valid.
pub const TONIC_ABI_OUT_MARK_RTX: u32 = 1 << 0;
/// [`TonicAbiHookOutput::set`]: mark only never-retransmitted segments of `mark_rtx`.
pub const TONIC_ABI_OUT_MARK_RTX_FRESH_ONLY: u32 = 1 << 1;
/// [`TonicAbiHookOutput::set`]: `mark_acked` is valid.
pub const TONIC_ABI_OUT_MARK_ACKED: u32 = 1 << 2;
/// [`TonicAbiHookOutput::set`]: `cum_ack` is valid.
pub const TONIC_ABI_OUT_CUM_ACK: u32 = 1 << 3;
/// [`TonicAbiHookOutput::set`]: `wnd_size` is valid.
pub const TONIC_ABI_OUT_WND_SIZE: u32 = 1 << 4;
/// [`TonicAbiHookOutput::set`]: `add_credit` is valid.
pub const TONIC_ABI_OUT_ADD_CREDIT: u32 = 1 << 5;
/// [`TonicAbiHookOutput::set`]: `rate_bps` is valid.
pub const TONIC_ABI_OUT_RATE: u32 = 1 << 6;
/// [`TonicAbiHookOutput::set`]: `rtx_timer_amount` is valid.
pub const TONIC_ABI_OUT_RTX_TIMER_AMOUNT: u32 = 1 << 7;
/// [`TonicAbiHookOutput::set`]: restart the retransmission timer at `now + period`.
pub const TONIC_ABI_OUT_RESET_RTX_TIMER: u32 = 1 << 8;
/// [`TonicAbiHookOutput::set`]: disarm the retransmission timer.
pub const TONIC_ABI_OUT_STOP_RTX_TIMER: u32 = 1 << 9;
/// Every [`TonicAbiHookOutput::set`] bit this version defines; the loader ignores others.
pub const TONIC_ABI_OUT_ALL: u32 = (1 << 10) - 1;

/// A half-open range of segments `[start, end)`; empty when `end <= start`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TonicAbiSegRange {
    /// First segment of the range.
    pub start: u64,
    /// One past the last segment.
    pub end: u64,
}

impl TonicAbiSegRange {
    /// The range `[start, end)`.
    pub const fn new(start: u64, end: u64) -> Self {
        TonicAbiSegRange { start, end }
    }
}

/// One incoming control packet (Tonic App. D `pkt_type`, `cumulative_ack`, `selective_ack`,
/// `pkt_data_in`, ...). 120 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TonicAbiIncomingPkt {
    /// `TONIC_ABI_PKT_*`.
    pub pkt_type: u8,
    /// Valid entries in [`sack`](Self::sack) (at most [`TONIC_ABI_MAX_SACK_BLOCKS`]).
    pub sack_cnt: u8,
    /// `TONIC_ABI_FLAG_*` bits.
    pub flags: u16,
    /// Receiver window in segments, valid with [`TONIC_ABI_FLAG_RCV_WND`].
    pub rcv_wnd: u32,
    /// Cumulative ack: the next segment the receiver expects.
    pub cumulative_ack: u64,
    /// Selectively acknowledged ranges.
    pub sack: [TonicAbiSegRange; TONIC_ABI_MAX_SACK_BLOCKS],
    /// The segment a NACK or a trimmed-packet notification reports lost.
    pub nack: u64,
    /// Grant tokens in bytes.
    pub grant_bytes: u32,
    /// Bytes the receiver saw ECN-marked.
    pub ecn_bytes: u32,
    /// Echoed transmit timestamp, valid with [`TONIC_ABI_FLAG_TS_ECHO`].
    pub ts_echo: u64,
    /// Protocol-specific data (App. D `pkt_data_in`).
    pub data: [u32; TONIC_ABI_PKT_DATA_WORDS],
}

impl TonicAbiIncomingPkt {
    /// Whether flag bit(s) `f` are all set.
    pub const fn has(&self, f: u16) -> bool {
        self.flags & f == f
    }

    /// The valid selective-ack blocks.
    pub fn sack_blocks(&self) -> &[TonicAbiSegRange] {
        &self.sack[..(self.sack_cnt as usize).min(TONIC_ABI_MAX_SACK_BLOCKS)]
    }
}

/// A window bitmap, window-relative: bit `i` is segment `wnd_start + i`, word 0 first, least
/// significant bit first. 32 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TonicAbiWindowBits {
    /// The bits.
    pub words: [u64; TONIC_ABI_WINDOW_WORDS],
}

impl TonicAbiWindowBits {
    /// Whether bit `i` is set; false beyond the bitmap.
    pub const fn get(&self, i: u32) -> bool {
        i < TONIC_ABI_MAX_WINDOW_SEGMENTS && self.words[(i / 64) as usize] >> (i % 64) & 1 == 1
    }

    /// The first set bit at or after `from`, if any.
    pub fn find_first_set(&self, from: u32) -> Option<u32> {
        let first = (from / 64) as usize;
        (first..TONIC_ABI_WINDOW_WORDS).find_map(|w| {
            let mut bits = self.words[w];
            if w == first {
                bits &= !0u64 << (from % 64);
            }
            (bits != 0).then(|| w as u32 * 64 + bits.trailing_zeros())
        })
    }

    /// Number of set bits.
    pub fn count_ones(&self) -> u32 {
        self.words.iter().map(|w| w.count_ones()).sum()
    }
}

/// The flow's data-delivery state (Tonic Tab. 2) as a module sees it, read-only. 176 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TonicAbiFlowView {
    /// `wnd-start`: the first unacknowledged segment.
    pub wnd_start: u64,
    /// The next new segment to generate (`highest-sent + 1`).
    pub next_new: u64,
    /// One past the last segment the host has made available (`tonic-tail`).
    pub tail: u64,
    /// Segments transmitted so far, retransmissions included.
    pub total_sent: u64,
    /// Retransmission timer period in nanoseconds.
    pub rtx_timer_amount: u64,
    /// When the retransmission timer expires; 0 when it is not armed.
    pub rtx_deadline: u64,
    /// The current rate in bits per second (rate scheme; 0 otherwise).
    pub rate_bps: u64,
    /// `wnd-size`: the module's window in segments.
    pub wnd_size: u32,
    /// The receiver's advertised window in segments (`u32::MAX` when none).
    pub rcv_wnd: u32,
    /// Segments the window bitmaps track.
    pub window_capacity: u32,
    /// Generated segment addresses not yet transmitted.
    pub outstanding_cnt: u32,
    /// Segment size in bytes.
    pub mss: u32,
    /// 1 when the flow has nothing to generate, else 0.
    pub is_idle: u8,
    /// Zero.
    pub reserved: [u8; 3],
    /// Selectively acknowledged segments.
    pub acked: TonicAbiWindowBits,
    /// Segments marked lost and not yet retransmitted.
    pub marked_for_rtx: TonicAbiWindowBits,
    /// Segments retransmitted at least once.
    pub rtx_cnt: TonicAbiWindowBits,
}

impl TonicAbiFlowView {
    /// Segments sent and not cumulatively acknowledged (`next_new - wnd_start`).
    pub const fn sent_out(&self) -> u64 {
        self.next_new.saturating_sub(self.wnd_start)
    }
}

/// Inputs of the Incoming hook: the packet, what the fixed stage made of it, and the flow's
/// state after the fixed stage. 328 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TonicAbiIncomingInput {
    /// Current time in nanoseconds.
    pub now: u64,
    /// The packet.
    pub pkt: TonicAbiIncomingPkt,
    /// Segments newly acknowledged by this packet, cumulatively or selectively.
    pub newly_acked_cnt: u32,
    /// Zero.
    pub reserved: u32,
    /// `wnd-start` before the packet.
    pub old_wnd_start: u64,
    /// `wnd-start` after the fixed stage.
    pub new_wnd_start: u64,
    /// The flow's state after the fixed stage.
    pub flow: TonicAbiFlowView,
}

/// Inputs of the Periodic Updates hook. 192 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TonicAbiPeriodicInput {
    /// Current time in nanoseconds.
    pub now: u64,
    /// 1 when the retransmission timer expired (the engine has disarmed it), else 0.
    pub timeout_expired: u8,
    /// Zero.
    pub reserved: [u8; 7],
    /// The flow's state.
    pub flow: TonicAbiFlowView,
}

/// What a hook asks the engines to do; each field applies only when its `TONIC_ABI_OUT_*`
/// bit is set in [`set`](Self::set). The caller hands it in with `set == 0` or with earlier
/// requests; a hook adds to it (the setters below set field and bit). 72 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TonicAbiHookOutput {
    /// `TONIC_ABI_OUT_*` bits.
    pub set: u32,
    /// New `wnd-size` in segments.
    pub wnd_size: u32,
    /// Segments to mark lost for retransmission.
    pub mark_rtx: TonicAbiSegRange,
    /// Segments to mark acknowledged.
    pub mark_acked: TonicAbiSegRange,
    /// A new cumulative ack (moves `wnd-start` forward only).
    pub cum_ack: u64,
    /// Credit to add, in bytes (grant scheme).
    pub add_credit: u32,
    /// Zero.
    pub reserved: u32,
    /// New rate in bits per second (rate scheme).
    pub rate_bps: u64,
    /// New retransmission timer period in nanoseconds.
    pub rtx_timer_amount: u64,
}

impl TonicAbiHookOutput {
    /// Whether bit(s) `bits` are all set.
    pub const fn has(&self, bits: u32) -> bool {
        self.set & bits == bits
    }

    /// Mark `[from, to)` lost for retransmission.
    pub fn mark_for_rtx(&mut self, from: u64, to: u64) {
        self.mark_rtx = TonicAbiSegRange::new(from, to);
        self.set |= TONIC_ABI_OUT_MARK_RTX;
    }

    /// Mark the never-retransmitted segments of `[from, to)` lost.
    pub fn mark_fresh_for_rtx(&mut self, from: u64, to: u64) {
        self.mark_for_rtx(from, to);
        self.set |= TONIC_ABI_OUT_MARK_RTX_FRESH_ONLY;
    }

    /// Mark `[from, to)` acknowledged.
    pub fn mark_acked(&mut self, from: u64, to: u64) {
        self.mark_acked = TonicAbiSegRange::new(from, to);
        self.set |= TONIC_ABI_OUT_MARK_ACKED;
    }

    /// Move the cumulative ack to `seg`.
    pub fn set_cum_ack(&mut self, seg: u64) {
        self.cum_ack = seg;
        self.set |= TONIC_ABI_OUT_CUM_ACK;
    }

    /// Set `wnd-size` to `w` segments.
    pub fn set_wnd_size(&mut self, w: u32) {
        self.wnd_size = w;
        self.set |= TONIC_ABI_OUT_WND_SIZE;
    }

    /// Add `bytes` of credit.
    pub fn add_credit(&mut self, bytes: u32) {
        self.add_credit = self.add_credit.saturating_add(bytes);
        self.set |= TONIC_ABI_OUT_ADD_CREDIT;
    }

    /// Set the rate to `bps` bits per second.
    pub fn set_rate(&mut self, bps: u64) {
        self.rate_bps = bps;
        self.set |= TONIC_ABI_OUT_RATE;
    }

    /// Set the retransmission timer period.
    pub fn set_rtx_timer_amount(&mut self, ns: u64) {
        self.rtx_timer_amount = ns;
        self.set |= TONIC_ABI_OUT_RTX_TIMER_AMOUNT;
    }

    /// Restart the retransmission timer.
    pub fn reset_rtx_timer(&mut self) {
        self.set |= TONIC_ABI_OUT_RESET_RTX_TIMER;
    }

    /// Disarm the retransmission timer.
    pub fn stop_rtx_timer(&mut self) {
        self.set |= TONIC_ABI_OUT_STOP_RTX_TIMER;
    }
}

/// A module's configuration (the paper's `user_configs.vh`). The loader checks it at load:
/// known enumeration values, booleans 0 or 1, `user_ctx_bytes` within the credit scheme's
/// limit (Tonic Tab. 4: 448 / 340 / 256 bytes for window / rate / grant), a non-zero initial
/// window and timer, and a non-zero burst for the rate scheme. 40 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TonicAbiModuleConfig {
    /// `TONIC_ABI_CREDIT_*`.
    pub credit_scheme: u8,
    /// `TONIC_ABI_CTX_PRIORITY_*`: which hook wins a same-cycle user-context conflict when the
    /// module has no `merge_user_ctx`.
    pub ctx_priority: u8,
    /// 1: call Periodic Updates on every sweep visit; 0: only when the timer expired.
    pub periodic_every_visit: u8,
    /// Zero.
    pub reserved0: u8,
    /// Bytes of per-flow user context.
    pub user_ctx_bytes: u32,
    /// Initial `wnd-size` in segments.
    pub init_wnd_size: u32,
    /// Maximum burst in bytes (rate scheme).
    pub max_burst_bytes: u32,
    /// Credit a new flow starts with, in bytes (grant and rate schemes).
    pub init_credit_bytes: u32,
    /// Zero.
    pub reserved1: u32,
    /// Initial rate in bits per second (rate scheme).
    pub init_rate_bps: u64,
    /// Initial retransmission timer period in nanoseconds.
    pub init_rtx_timer_ns: u64,
}

impl TonicAbiModuleConfig {
    /// Window scheme, no user context, initial window 10 segments, 200 ms retransmission
    /// timer: a base for `..TonicAbiModuleConfig::DEFAULT` in constant expressions.
    pub const DEFAULT: TonicAbiModuleConfig = TonicAbiModuleConfig {
        credit_scheme: TONIC_ABI_CREDIT_WINDOW,
        ctx_priority: TONIC_ABI_CTX_PRIORITY_INCOMING,
        periodic_every_visit: 0,
        reserved0: 0,
        user_ctx_bytes: 0,
        init_wnd_size: 10,
        max_burst_bytes: 0,
        init_credit_bytes: 0,
        reserved1: 0,
        init_rate_bps: 0,
        init_rtx_timer_ns: 200_000_000,
    };
}

impl Default for TonicAbiModuleConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// `init_flow(now, flow, ctx, ctx_words)`: sets up a new flow's user context (already
/// zeroed). Optional.
pub type TonicAbiInitFlowFn =
    unsafe extern "C" fn(now: u64, flow: *const TonicAbiFlowView, ctx: *mut u64, ctx_words: usize);

/// `incoming(input, ctx, ctx_words, out)`: the programmable stage of Incoming. Required.
pub type TonicAbiIncomingFn = unsafe extern "C" fn(
    input: *const TonicAbiIncomingInput,
    ctx: *mut u64,
    ctx_words: usize,
    out: *mut TonicAbiHookOutput,
);

/// `periodic(input, ctx, ctx_words, out)`: Periodic Updates. Required.
pub type TonicAbiPeriodicFn = unsafe extern "C" fn(
    input: *const TonicAbiPeriodicInput,
    ctx: *mut u64,
    ctx_words: usize,
    out: *mut TonicAbiHookOutput,
);

/// `merge_user_ctx(before, from_incoming, from_periodic, merged, ctx_words)`: merges the user
/// contexts both hooks produced for one flow in the same cycle (Tonic §3.4); all four point to
/// `ctx_words` words, `merged` is write-only and does not alias the others. Optional: without
/// it the engine keeps the [`TonicAbiModuleConfig::ctx_priority`] hook's context if it
/// changed anything, else the other one's.
pub type TonicAbiMergeFn = unsafe extern "C" fn(
    before: *const u64,
    from_incoming: *const u64,
    from_periodic: *const u64,
    merged: *mut u64,
    ctx_words: usize,
);

/// Signature of the exported [`TONIC_ABI_VERSION_SYMBOL`] function.
pub type TonicAbiVersionFn = unsafe extern "C" fn() -> u32;

/// Signature of the exported [`TONIC_MODULE_SYMBOL`] function.
pub type TonicAbiModuleFn = unsafe extern "C" fn() -> *const TonicModuleVTable;

/// What `nicemu_tonic_module` returns: the module's name, configuration and hooks. Owned by
/// the library, valid and unchanged while it is loaded, read once at load. 104 bytes on
/// 64-bit targets.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TonicModuleVTable {
    /// The registry name: UTF-8, 1 to 31 bytes, NUL-terminated, zero-padded.
    pub name: [u8; TONIC_ABI_NAME_LEN],
    /// The configuration.
    pub config: TonicAbiModuleConfig,
    /// Optional (NULL: the user context stays zeroed).
    pub init_flow: Option<TonicAbiInitFlowFn>,
    /// Required (NULL: the library is refused).
    pub incoming: Option<TonicAbiIncomingFn>,
    /// Required (NULL: the library is refused).
    pub periodic: Option<TonicAbiPeriodicFn>,
    /// Optional (NULL: the engine's default merge rule).
    pub merge_user_ctx: Option<TonicAbiMergeFn>,
}

/// `name` as a [`TonicModuleVTable::name`] array. Meant for constant evaluation: a name that
/// is empty, longer than 31 bytes or contains a NUL fails to compile (panics) there.
pub const fn tonic_abi_name(name: &str) -> [u8; TONIC_ABI_NAME_LEN] {
    let bytes = name.as_bytes();
    assert!(!bytes.is_empty(), "a Tonic module name must not be empty");
    assert!(
        bytes.len() < TONIC_ABI_NAME_LEN,
        "a Tonic module name has at most 31 bytes"
    );
    let mut out = [0u8; TONIC_ABI_NAME_LEN];
    let mut i = 0;
    while i < bytes.len() {
        assert!(bytes[i] != 0, "a Tonic module name must not contain NUL");
        out[i] = bytes[i];
        i += 1;
    }
    out
}

/// A Tonic protocol module written in safe Rust over the ABI types, exported from a `cdylib`
/// with [`export_tonic_module!`](crate::export_tonic_module).
///
/// The functions are associated functions (no `self`): a module holds no state of its own,
/// every per-flow variable lives in `ctx` (see the module documentation for the threading
/// rules). They must not panic: a panic aborts the process.
pub trait TonicAbiModule {
    /// The registry name (1 to 31 bytes of UTF-8, no NUL).
    const NAME: &'static str;

    /// The configuration.
    const CONFIG: TonicAbiModuleConfig;

    /// Whether the module overrides [`merge_user_ctx`](Self::merge_user_ctx); when false the
    /// vtable's `merge_user_ctx` is NULL and the engine's default rule applies.
    const CUSTOM_MERGE: bool = false;

    /// Sets up a new flow's (zeroed) user context. Default: leaves it zeroed.
    fn init_flow(now: u64, flow: &TonicAbiFlowView, ctx: &mut [u64]) {
        let _ = (now, flow, ctx);
    }

    /// The programmable stage of Incoming.
    fn incoming(input: &TonicAbiIncomingInput, ctx: &mut [u64], out: &mut TonicAbiHookOutput);

    /// Periodic Updates.
    fn periodic(input: &TonicAbiPeriodicInput, ctx: &mut [u64], out: &mut TonicAbiHookOutput);

    /// Merges same-cycle user contexts; used only when [`CUSTOM_MERGE`](Self::CUSTOM_MERGE)
    /// is true. All slices have the same length. Default: copies `from_incoming`.
    fn merge_user_ctx(
        before: &[u64],
        from_incoming: &[u64],
        from_periodic: &[u64],
        merged: &mut [u64],
    ) {
        let _ = (before, from_periodic);
        merged.copy_from_slice(from_incoming);
    }
}

/// Exports a [`TonicAbiModule`](crate::tonic_abi::TonicAbiModule) implementation from a
/// `cdylib`: `export_tonic_module!(MyModule);`, once per library.
///
/// Expands, in the calling crate, to the `#[no_mangle]` functions `nicemu_tonic_abi_version`
/// and `nicemu_tonic_module`, a `static` [`TonicModuleVTable`](crate::tonic_abi::TonicModuleVTable)
/// built at compile time (an invalid name fails the build), and `unsafe extern "C"` trampolines
/// that rely on the loader's side of the contract (valid, non-aliased pointers for the call;
/// `ctx` holding `ctx_words` words) to call the trait's safe functions. The expansion's
/// `unsafe` is this crate's code, not the caller's (see the module documentation).
#[macro_export]
macro_rules! export_tonic_module {
    ($module:ty) => {
        const _: () = {
            use $crate::tonic_abi as __abi;

            static __NICEMU_TONIC_VTABLE: __abi::TonicModuleVTable = __abi::TonicModuleVTable {
                name: __abi::tonic_abi_name(<$module as __abi::TonicAbiModule>::NAME),
                config: <$module as __abi::TonicAbiModule>::CONFIG,
                init_flow: Some(__nicemu_tonic_init_flow),
                incoming: Some(__nicemu_tonic_incoming),
                periodic: Some(__nicemu_tonic_periodic),
                merge_user_ctx: if <$module as __abi::TonicAbiModule>::CUSTOM_MERGE {
                    Some(__nicemu_tonic_merge)
                } else {
                    None
                },
            };

            /// The Tonic ABI version this module was built against.
            #[unsafe(no_mangle)]
            pub extern "C" fn nicemu_tonic_abi_version() -> u32 {
                __abi::TONIC_ABI_VERSION
            }

            /// This module's vtable.
            #[unsafe(no_mangle)]
            pub extern "C" fn nicemu_tonic_module() -> *const __abi::TonicModuleVTable {
                &__NICEMU_TONIC_VTABLE
            }

            fn __nicemu_tonic_ctx<'a>(ctx: *mut u64, words: usize) -> &'a mut [u64] {
                if ctx.is_null() || words == 0 {
                    &mut []
                } else {
                    // SAFETY: the loader passes `words` initialized, writable words that no
                    // one else touches during the call (ABI contract).
                    unsafe { ::core::slice::from_raw_parts_mut(ctx, words) }
                }
            }

            fn __nicemu_tonic_words<'a>(p: *const u64, words: usize) -> &'a [u64] {
                if p.is_null() || words == 0 {
                    &[]
                } else {
                    // SAFETY: as above, read-only.
                    unsafe { ::core::slice::from_raw_parts(p, words) }
                }
            }

            unsafe extern "C" fn __nicemu_tonic_init_flow(
                now: u64,
                flow: *const __abi::TonicAbiFlowView,
                ctx: *mut u64,
                ctx_words: usize,
            ) {
                // SAFETY: `flow` is valid and read-only for the call (ABI contract).
                let flow = unsafe { &*flow };
                <$module as __abi::TonicAbiModule>::init_flow(
                    now,
                    flow,
                    __nicemu_tonic_ctx(ctx, ctx_words),
                );
            }

            unsafe extern "C" fn __nicemu_tonic_incoming(
                input: *const __abi::TonicAbiIncomingInput,
                ctx: *mut u64,
                ctx_words: usize,
                out: *mut __abi::TonicAbiHookOutput,
            ) {
                // SAFETY: `input` is valid and read-only, `out` valid, writable and not
                // aliased, both for the call (ABI contract).
                let (input, out) = unsafe { (&*input, &mut *out) };
                <$module as __abi::TonicAbiModule>::incoming(
                    input,
                    __nicemu_tonic_ctx(ctx, ctx_words),
                    out,
                );
            }

            unsafe extern "C" fn __nicemu_tonic_periodic(
                input: *const __abi::TonicAbiPeriodicInput,
                ctx: *mut u64,
                ctx_words: usize,
                out: *mut __abi::TonicAbiHookOutput,
            ) {
                // SAFETY: as in `__nicemu_tonic_incoming`.
                let (input, out) = unsafe { (&*input, &mut *out) };
                <$module as __abi::TonicAbiModule>::periodic(
                    input,
                    __nicemu_tonic_ctx(ctx, ctx_words),
                    out,
                );
            }

            unsafe extern "C" fn __nicemu_tonic_merge(
                before: *const u64,
                from_incoming: *const u64,
                from_periodic: *const u64,
                merged: *mut u64,
                ctx_words: usize,
            ) {
                <$module as __abi::TonicAbiModule>::merge_user_ctx(
                    __nicemu_tonic_words(before, ctx_words),
                    __nicemu_tonic_words(from_incoming, ctx_words),
                    __nicemu_tonic_words(from_periodic, ctx_words),
                    __nicemu_tonic_ctx(merged, ctx_words),
                );
            }
        };
    };
}

// The layout is part of the ABI: the sizes and offsets below are those of the C header
// (`dataplane/tonic-example/include/nicemu_tonic.h`), which checks the same numbers.
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<TonicAbiSegRange>() == 16);
    assert!(size_of::<TonicAbiIncomingPkt>() == 120);
    assert!(offset_of!(TonicAbiIncomingPkt, cumulative_ack) == 8);
    assert!(offset_of!(TonicAbiIncomingPkt, nack) == 80);
    assert!(offset_of!(TonicAbiIncomingPkt, ts_echo) == 96);
    assert!(size_of::<TonicAbiWindowBits>() == 32);
    assert!(size_of::<TonicAbiFlowView>() == 176);
    assert!(offset_of!(TonicAbiFlowView, is_idle) == 76);
    assert!(offset_of!(TonicAbiFlowView, acked) == 80);
    assert!(size_of::<TonicAbiIncomingInput>() == 328);
    assert!(offset_of!(TonicAbiIncomingInput, newly_acked_cnt) == 128);
    assert!(offset_of!(TonicAbiIncomingInput, flow) == 152);
    assert!(size_of::<TonicAbiPeriodicInput>() == 192);
    assert!(offset_of!(TonicAbiPeriodicInput, flow) == 16);
    assert!(size_of::<TonicAbiHookOutput>() == 72);
    assert!(offset_of!(TonicAbiHookOutput, cum_ack) == 40);
    assert!(offset_of!(TonicAbiHookOutput, rtx_timer_amount) == 64);
    assert!(size_of::<TonicAbiModuleConfig>() == 40);
    assert!(offset_of!(TonicAbiModuleConfig, user_ctx_bytes) == 4);
    assert!(offset_of!(TonicAbiModuleConfig, init_rate_bps) == 24);
    assert!(offset_of!(TonicModuleVTable, config) == 32);
    assert!(offset_of!(TonicModuleVTable, init_flow) == 72);
    assert!(size_of::<TonicModuleVTable>() == 72 + 4 * size_of::<Option<TonicAbiIncomingFn>>());
    assert!(TONIC_ABI_WINDOW_WORDS * 64 == TONIC_ABI_MAX_WINDOW_SEGMENTS as usize);
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_nul_terminated_and_padded() {
        let n = tonic_abi_name("reno");
        assert_eq!(&n[..5], b"reno\0");
        assert!(n[5..].iter().all(|b| *b == 0));
        let long = tonic_abi_name("abcdefghijklmnopqrstuvwxyz01234");
        assert_eq!(long[30], b'4');
        assert_eq!(long[31], 0);
    }

    #[test]
    #[should_panic(expected = "at most 31 bytes")]
    fn overlong_names_are_refused() {
        let _ = tonic_abi_name("abcdefghijklmnopqrstuvwxyz012345");
    }

    #[test]
    fn user_ctx_limits_follow_table_4() {
        assert_eq!(tonic_abi_user_ctx_limit(TONIC_ABI_CREDIT_WINDOW), Some(448));
        assert_eq!(tonic_abi_user_ctx_limit(TONIC_ABI_CREDIT_RATE), Some(340));
        assert_eq!(tonic_abi_user_ctx_limit(TONIC_ABI_CREDIT_GRANT), Some(256));
        assert_eq!(tonic_abi_user_ctx_limit(3), None);
        assert_eq!(TONIC_ABI_MAX_USER_CTX_BYTES, 448);
    }

    #[test]
    fn output_setters_and_bitmap_queries() {
        let mut o = TonicAbiHookOutput::default();
        o.mark_fresh_for_rtx(4, 6);
        o.set_wnd_size(5);
        o.add_credit(u32::MAX);
        o.add_credit(1);
        assert!(o.has(TONIC_ABI_OUT_MARK_RTX | TONIC_ABI_OUT_MARK_RTX_FRESH_ONLY));
        assert!(o.has(TONIC_ABI_OUT_WND_SIZE | TONIC_ABI_OUT_ADD_CREDIT));
        assert!(!o.has(TONIC_ABI_OUT_RATE));
        assert_eq!(o.add_credit, u32::MAX);
        assert_eq!(o.set & !TONIC_ABI_OUT_ALL, 0);

        let mut b = TonicAbiWindowBits::default();
        b.words[1] = 1 << 3;
        b.words[3] = 1 << 63;
        assert!(b.get(67) && b.get(255) && !b.get(66) && !b.get(256));
        assert_eq!(b.find_first_set(0), Some(67));
        assert_eq!(b.find_first_set(68), Some(255));
        assert_eq!(b.find_first_set(256), None);
        assert_eq!(b.count_ones(), 2);

        let mut p = TonicAbiIncomingPkt {
            sack_cnt: 9,
            flags: TONIC_ABI_FLAG_ECN_ECHO | TONIC_ABI_FLAG_TS_ECHO,
            ..Default::default()
        };
        assert_eq!(p.sack_blocks().len(), TONIC_ABI_MAX_SACK_BLOCKS);
        p.sack_cnt = 1;
        assert_eq!(p.sack_blocks().len(), 1);
        assert!(p.has(TONIC_ABI_FLAG_TS_ECHO) && !p.has(TONIC_ABI_FLAG_TRIMMED));
    }
}
