//! Loading out-of-tree Tonic protocol modules from shared libraries through the versioned C
//! ABI of [`offload_api::tonic_abi`] (`docs/architecture.md`, "Adding a Tonic protocol module").
//!
//! [`load`] opens a library with `dlopen`, checks it (ABI version, both symbols, the name, the
//! configuration against Tonic Tab. 4) and returns it as an `Arc<dyn TonicModule>` that the
//! engines use exactly like a built-in module. Each hook call converts the engine's types to
//! the ABI's `#[repr(C)]` mirrors on the stack and back (no allocation per call).
//!
//! This file is one of the few documented `unsafe` wrappers outside the DPDK FFI crate: it calls
//! `dlopen`/`dlsym`/`dlerror`/`dlclose` and the module's `extern "C"` functions. Every block says
//! why it is sound given the ABI contract; what the loader cannot check (that the library's
//! functions really have the ABI's signatures and follow its rules) is the contract the library's
//! author signs by exporting the symbols.
#![allow(unsafe_code)]

use std::ffi::{c_void, CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Arc;

use offload_api::tonic_abi::{self as abi, TonicModuleVTable};

use crate::tonic::module::{
    CreditScheme, CtxPriority, FlowView, HookOutput, IncomingInput, ModuleConfig, NewAckInput,
    NewAckOutput, PeriodicInput, SegRange, TonicModule, WindowBits, MAX_SACK_BLOCKS,
    MAX_USER_CTX_BYTES, MAX_WINDOW_SEGMENTS, PKT_DATA_WORDS, WINDOW_WORDS,
};
use crate::tonic::{Nanos, TonicError};

// The ABI mirrors the engine's interface value for value; a drift fails the build.
const _: () = {
    assert!(abi::TONIC_ABI_WINDOW_WORDS == WINDOW_WORDS);
    assert!(abi::TONIC_ABI_MAX_WINDOW_SEGMENTS == MAX_WINDOW_SEGMENTS);
    assert!(abi::TONIC_ABI_MAX_SACK_BLOCKS == MAX_SACK_BLOCKS);
    assert!(abi::TONIC_ABI_PKT_DATA_WORDS == PKT_DATA_WORDS);
    assert!(abi::TONIC_ABI_MAX_USER_CTX_BYTES == MAX_USER_CTX_BYTES);
    assert!(abi::TONIC_ABI_CREDIT_WINDOW == CreditScheme::Window as u8);
    assert!(abi::TONIC_ABI_CREDIT_RATE == CreditScheme::Rate as u8);
    assert!(abi::TONIC_ABI_CREDIT_GRANT == CreditScheme::Grant as u8);
    assert!(abi::TONIC_ABI_CTX_PRIORITY_INCOMING == CtxPriority::Incoming as u8);
    assert!(abi::TONIC_ABI_CTX_PRIORITY_PERIODIC == CtxPriority::Periodic as u8);
    assert!(abi::TONIC_ABI_FLAG_ECN_ECHO == crate::tonic::module::IncomingPkt::FLAG_ECN_ECHO);
    assert!(abi::TONIC_ABI_FLAG_TRIMMED == crate::tonic::module::IncomingPkt::FLAG_TRIMMED);
    assert!(abi::TONIC_ABI_FLAG_RCV_WND == crate::tonic::module::IncomingPkt::FLAG_RCV_WND);
    assert!(abi::TONIC_ABI_FLAG_TS_ECHO == crate::tonic::module::IncomingPkt::FLAG_TS_ECHO);
    assert!(abi::TONIC_ABI_OUT_MARK_RTX == HookOutput::OUT_MARK_RTX);
    assert!(abi::TONIC_ABI_OUT_MARK_RTX_FRESH_ONLY == HookOutput::OUT_MARK_RTX_FRESH_ONLY);
    assert!(abi::TONIC_ABI_OUT_MARK_ACKED == HookOutput::OUT_MARK_ACKED);
    assert!(abi::TONIC_ABI_OUT_CUM_ACK == HookOutput::OUT_CUM_ACK);
    assert!(abi::TONIC_ABI_OUT_WND_SIZE == HookOutput::OUT_WND_SIZE);
    assert!(abi::TONIC_ABI_OUT_ADD_CREDIT == HookOutput::OUT_ADD_CREDIT);
    assert!(abi::TONIC_ABI_OUT_RATE == HookOutput::OUT_RATE);
    assert!(abi::TONIC_ABI_OUT_RTX_TIMER_AMOUNT == HookOutput::OUT_RTX_TIMER_AMOUNT);
    assert!(abi::TONIC_ABI_OUT_RESET_RTX_TIMER == HookOutput::OUT_RESET_RTX_TIMER);
    assert!(abi::TONIC_ABI_OUT_STOP_RTX_TIMER == HookOutput::OUT_STOP_RTX_TIMER);
};

/// Why a module library was refused. Every message starts with the library's path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    /// `dlopen` failed (no such file, not a shared object, unresolved dependencies, ...).
    #[error("{}: cannot load the Tonic module library: {reason}", path.display())]
    Open {
        /// The library.
        path: PathBuf,
        /// `dlerror`'s explanation.
        reason: String,
    },
    /// The library does not export a symbol the ABI requires.
    #[error("{}: missing symbol `{symbol}`: not a nicemu Tonic module library ({reason})", path.display())]
    MissingSymbol {
        /// The library.
        path: PathBuf,
        /// The missing symbol.
        symbol: String,
        /// `dlerror`'s explanation.
        reason: String,
    },
    /// The library was built for another version of the ABI.
    #[error(
        "{}: Tonic module ABI version {found}, but this nicemu expects version {expected}; \
         rebuild the module against offload-api's tonic_abi",
        path.display()
    )]
    AbiVersion {
        /// The library.
        path: PathBuf,
        /// The version the library declares.
        found: u32,
        /// [`offload_api::tonic_abi::TONIC_ABI_VERSION`].
        expected: u32,
    },
    /// `nicemu_tonic_module` returned NULL.
    #[error("{}: nicemu_tonic_module() returned NULL instead of a module vtable", path.display())]
    NullVTable {
        /// The library.
        path: PathBuf,
    },
    /// A required hook pointer is NULL.
    #[error("{}: module {module}: the required `{hook}` hook is NULL", path.display())]
    MissingHook {
        /// The library.
        path: PathBuf,
        /// The module's name.
        module: String,
        /// `incoming` or `periodic`.
        hook: &'static str,
    },
    /// The module's name is unusable.
    #[error("{}: invalid module name: {reason}", path.display())]
    InvalidName {
        /// The library.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The module's user context exceeds its credit scheme's limit (Tonic Tab. 4).
    #[error(
        "{}: module {module}: user context of {bytes} B exceeds the {limit} B limit of the \
         {scheme} credit scheme (Tonic Table 4)",
        path.display()
    )]
    UserCtxTooLarge {
        /// The library.
        path: PathBuf,
        /// The module's name.
        module: String,
        /// The declared user-context size.
        bytes: u32,
        /// The scheme's limit.
        limit: u32,
        /// The module's credit scheme.
        scheme: CreditScheme,
    },
    /// The module's configuration is otherwise unusable.
    #[error("{}: module {module}: invalid configuration: {reason}", path.display())]
    InvalidConfig {
        /// The library.
        path: PathBuf,
        /// The module's name.
        module: String,
        /// What is wrong.
        reason: String,
    },
}

/// Loads the Tonic protocol module in the shared library at `path` and checks it: the ABI
/// version must equal [`abi::TONIC_ABI_VERSION`], both exported symbols must exist, the name
/// must be non-empty UTF-8, the required hooks non-NULL, and the configuration valid (known
/// credit scheme, user context within the scheme's limit, [`ModuleConfig::validate`]).
///
/// `path` is a file path (a bare file name means the current directory): the system's library
/// search path is never consulted. The library stays loaded as long as the returned module
/// (or any clone of the `Arc`) lives. Loading the same file twice yields two independent
/// modules sharing one mapping (the dynamic loader counts references).
pub fn load(path: &Path) -> Result<Arc<dyn TonicModule>, PluginError> {
    Ok(Arc::new(PluginModule::open(path)?))
}

/// [`load`], boxed: what `TonicEngine::new` takes. Each NIC lcore's engine may load its own
/// copy (the dynamic loader maps the library once and counts references).
pub fn load_boxed(path: &Path) -> Result<Box<dyn TonicModule>, PluginError> {
    Ok(Box::new(PluginModule::open(path)?))
}

/// A [`Registry`](crate::tonic::registry::Registry) factory for a loaded module: every
/// instance it makes shares `module` (one library mapping, one vtable). The module's
/// parameters come from its own configuration, so the factory ignores the `ModuleParams`.
///
/// ```no_run
/// # use dataplane::tonic::registry::Registry;
/// # use dataplane::tonic::plugin::{factory, load};
/// let mut registry = Registry::builtin();
/// let m = load("./libmy_module.so".as_ref())?;
/// let name = m.name().to_owned();
/// registry.register(&name, "loaded from ./libmy_module.so", factory(m))?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn factory(module: Arc<dyn TonicModule>) -> crate::tonic::registry::ModuleFactory {
    Box::new(move |_params| Box::new(Shared(Arc::clone(&module))))
}

/// A shared module as a `Box<dyn TonicModule>` (delegates every hook).
struct Shared(Arc<dyn TonicModule>);

impl TonicModule for Shared {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn config(&self) -> ModuleConfig {
        self.0.config()
    }

    fn init_flow(&self, now: Nanos, flow: &FlowView, ctx: &mut [u64]) {
        self.0.init_flow(now, flow, ctx)
    }

    fn init_wnd_size(&self, flow: &FlowView) -> Option<u32> {
        self.0.init_wnd_size(flow)
    }

    fn incoming(&self, input: &IncomingInput, ctx: &mut [u64], out: &mut HookOutput) {
        self.0.incoming(input, ctx, out)
    }

    fn incoming_new_ack(&self, input: &NewAckInput<'_>, ctx: &mut [u64]) -> Option<NewAckOutput> {
        self.0.incoming_new_ack(input, ctx)
    }

    fn has_new_ack_fast_path(&self) -> bool {
        self.0.has_new_ack_fast_path()
    }

    fn periodic(&self, input: &PeriodicInput, ctx: &mut [u64], out: &mut HookOutput) {
        self.0.periodic(input, ctx, out)
    }

    fn merge_user_ctx(
        &self,
        before: &[u64],
        from_incoming: &[u64],
        from_periodic: &[u64],
        merged: &mut [u64],
    ) {
        self.0
            .merge_user_ctx(before, from_incoming, from_periodic, merged)
    }
}

/// A Tonic module loaded from a shared library: implements [`TonicModule`] by calling the
/// library's hooks through the C ABI.
pub struct PluginModule {
    path: PathBuf,
    name: String,
    config: ModuleConfig,
    init_flow: Option<abi::TonicAbiInitFlowFn>,
    incoming: abi::TonicAbiIncomingFn,
    periodic: abi::TonicAbiPeriodicFn,
    merge: Option<abi::TonicAbiMergeFn>,
    /// Declared last: dropped (and `dlclose`d) after everything else.
    _lib: Library,
}

impl std::fmt::Debug for PluginModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginModule")
            .field("path", &self.path)
            .field("name", &self.name)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl PluginModule {
    /// Opens and checks the library at `path` (see [`load`]).
    pub fn open(path: &Path) -> Result<Self, PluginError> {
        let lib = Library::open(path)?;
        let version_fn = lib.symbol(abi::TONIC_ABI_VERSION_SYMBOL)?;
        // SAFETY: by exporting this symbol the library promises it is a function with the
        // `TonicAbiVersionFn` signature (the ABI's only requirement on it); function and data
        // pointers have the same size and representation on the platforms dlsym serves.
        let version_fn = unsafe {
            std::mem::transmute::<*mut c_void, abi::TonicAbiVersionFn>(version_fn.as_ptr())
        };
        // SAFETY: calls the library's version function, which takes nothing and only returns
        // a constant (ABI contract).
        let found = unsafe { version_fn() };
        if found != abi::TONIC_ABI_VERSION {
            return Err(PluginError::AbiVersion {
                path: path.to_path_buf(),
                found,
                expected: abi::TONIC_ABI_VERSION,
            });
        }
        let module_fn = lib.symbol(abi::TONIC_MODULE_SYMBOL)?;
        // SAFETY: as for the version function, with the `TonicAbiModuleFn` signature.
        let module_fn = unsafe {
            std::mem::transmute::<*mut c_void, abi::TonicAbiModuleFn>(module_fn.as_ptr())
        };
        // SAFETY: the version matched, so the library follows this ABI version: the function
        // takes nothing and returns a pointer to its static vtable (or NULL).
        let vtable = unsafe { module_fn() };
        if vtable.is_null() {
            return Err(PluginError::NullVTable {
                path: path.to_path_buf(),
            });
        }
        // SAFETY: non-NULL, and the contract makes it point to a `TonicModuleVTable` that
        // lives while the library is loaded; read by value (unaligned-tolerant) once. Every
        // field is an integer, a byte array or a nullable function pointer, so any bytes a
        // well-behaved C library leaves in it are a valid value.
        let vt: TonicModuleVTable = unsafe { vtable.read_unaligned() };
        Self::check(path, lib, &vt)
    }

    /// Validates a copied vtable and builds the module (owning `lib`).
    fn check(path: &Path, lib: Library, vt: &TonicModuleVTable) -> Result<Self, PluginError> {
        let name = parse_name(path, &vt.name)?;
        let c = &vt.config;
        let bad = |reason: String| PluginError::InvalidConfig {
            path: path.to_path_buf(),
            module: name.clone(),
            reason,
        };
        let credit_scheme = CreditScheme::from_u8(c.credit_scheme)
            .ok_or_else(|| bad(format!("unknown credit scheme {}", c.credit_scheme)))?;
        let ctx_priority = match c.ctx_priority {
            abi::TONIC_ABI_CTX_PRIORITY_INCOMING => CtxPriority::Incoming,
            abi::TONIC_ABI_CTX_PRIORITY_PERIODIC => CtxPriority::Periodic,
            v => return Err(bad(format!("unknown ctx_priority {v}"))),
        };
        let periodic_every_visit = match c.periodic_every_visit {
            0 => false,
            1 => true,
            v => return Err(bad(format!("periodic_every_visit is {v}, not 0 or 1"))),
        };
        // The update keeps this compiling (with defaults) when module.rs gains fields.
        #[allow(clippy::needless_update)]
        let config = ModuleConfig {
            credit_scheme,
            ctx_priority,
            periodic_every_visit,
            user_ctx_bytes: c.user_ctx_bytes,
            init_wnd_size: c.init_wnd_size,
            init_rate_bps: c.init_rate_bps,
            max_burst_bytes: c.max_burst_bytes,
            init_credit_bytes: c.init_credit_bytes,
            init_rtx_timer_ns: c.init_rtx_timer_ns,
            ..ModuleConfig::default()
        };
        config.validate(&name).map_err(|e| match e {
            TonicError::UserCtxTooLarge {
                bytes,
                limit,
                scheme,
                ..
            } => PluginError::UserCtxTooLarge {
                path: path.to_path_buf(),
                module: name.clone(),
                bytes,
                limit,
                scheme,
            },
            TonicError::InvalidModuleConfig { reason, .. } => bad(reason),
            #[allow(unreachable_patterns)]
            other => bad(other.to_string()),
        })?;
        let missing = |hook| PluginError::MissingHook {
            path: path.to_path_buf(),
            module: name.clone(),
            hook,
        };
        let incoming = vt.incoming.ok_or_else(|| missing("incoming"))?;
        let periodic = vt.periodic.ok_or_else(|| missing("periodic"))?;
        Ok(PluginModule {
            path: path.to_path_buf(),
            name,
            config,
            init_flow: vt.init_flow,
            incoming,
            periodic,
            merge: vt.merge_user_ctx,
            _lib: lib,
        })
    }

    /// The library this module was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl TonicModule for PluginModule {
    fn name(&self) -> &str {
        &self.name
    }

    fn config(&self) -> ModuleConfig {
        self.config
    }

    fn init_flow(&self, now: Nanos, flow: &FlowView, ctx: &mut [u64]) {
        let Some(f) = self.init_flow else { return };
        let flow = flow_to_abi(flow);
        // SAFETY: `flow` and `ctx` are valid for the call and not aliased (we own `flow`, the
        // engine lent us `ctx` exclusively); `ctx.len()` words are writable; the library is
        // loaded (we own it). The module follows the ABI contract (no retained pointers).
        unsafe { f(now, &flow, ctx.as_mut_ptr(), ctx.len()) };
    }

    fn incoming(&self, input: &IncomingInput, ctx: &mut [u64], out: &mut HookOutput) {
        let input = incoming_to_abi(input);
        let mut o = out_to_abi(out);
        // SAFETY: as in `init_flow`; `o` is ours, writable and exclusive.
        unsafe { (self.incoming)(&input, ctx.as_mut_ptr(), ctx.len(), &mut o) };
        out_from_abi(&o, out);
    }

    fn periodic(&self, input: &PeriodicInput, ctx: &mut [u64], out: &mut HookOutput) {
        let input = periodic_to_abi(input);
        let mut o = out_to_abi(out);
        // SAFETY: as in `incoming`.
        unsafe { (self.periodic)(&input, ctx.as_mut_ptr(), ctx.len(), &mut o) };
        out_from_abi(&o, out);
    }

    fn merge_user_ctx(
        &self,
        before: &[u64],
        from_incoming: &[u64],
        from_periodic: &[u64],
        merged: &mut [u64],
    ) {
        let n = merged.len();
        match self.merge {
            Some(f)
                if before.len() == n && from_incoming.len() == n && from_periodic.len() == n =>
            {
                // SAFETY: the four slices hold `n` words each, `merged` is exclusively
                // borrowed so it aliases none of the others; valid for the call only.
                unsafe {
                    f(
                        before.as_ptr(),
                        from_incoming.as_ptr(),
                        from_periodic.as_ptr(),
                        merged.as_mut_ptr(),
                        n,
                    )
                };
            }
            _ => {
                // The engine's default rule (the module has no merge hook, or the engine
                // passed mismatched lengths, which the C signature cannot express).
                let (first, second) = match self.config.ctx_priority {
                    CtxPriority::Incoming => (from_incoming, from_periodic),
                    CtxPriority::Periodic => (from_periodic, from_incoming),
                };
                let pick = if first != before { first } else { second };
                let k = n.min(pick.len());
                merged[..k].copy_from_slice(&pick[..k]);
            }
        }
    }
}

/// The name in a vtable: NUL-terminated within the array, non-empty, UTF-8.
fn parse_name(path: &Path, raw: &[u8; abi::TONIC_ABI_NAME_LEN]) -> Result<String, PluginError> {
    let bad = |reason: String| PluginError::InvalidName {
        path: path.to_path_buf(),
        reason,
    };
    let name = CStr::from_bytes_until_nul(raw).map_err(|_| {
        bad(format!(
            "not NUL-terminated within {} bytes",
            abi::TONIC_ABI_NAME_LEN
        ))
    })?;
    let name = name
        .to_str()
        .map_err(|e| bad(format!("not valid UTF-8 ({e})")))?;
    if name.is_empty() {
        return Err(bad("the name is empty".into()));
    }
    Ok(name.to_owned())
}

fn range_to_abi(r: &SegRange) -> abi::TonicAbiSegRange {
    abi::TonicAbiSegRange::new(r.start, r.end)
}

fn bits_to_abi(b: &WindowBits) -> abi::TonicAbiWindowBits {
    abi::TonicAbiWindowBits { words: b.words }
}

fn flow_to_abi(f: &FlowView) -> abi::TonicAbiFlowView {
    abi::TonicAbiFlowView {
        wnd_start: f.wnd_start,
        next_new: f.next_new,
        tail: f.tail,
        total_sent: f.total_sent,
        rtx_timer_amount: f.rtx_timer_amount,
        rtx_deadline: f.rtx_deadline,
        rate_bps: f.rate_bps,
        wnd_size: f.wnd_size,
        rcv_wnd: f.rcv_wnd,
        window_capacity: f.window_capacity,
        outstanding_cnt: f.outstanding_cnt,
        mss: f.mss,
        is_idle: f.is_idle as u8,
        reserved: [0; 3],
        acked: bits_to_abi(&f.acked),
        marked_for_rtx: bits_to_abi(&f.marked_for_rtx),
        rtx_cnt: bits_to_abi(&f.rtx_cnt),
    }
}

fn incoming_to_abi(i: &IncomingInput) -> abi::TonicAbiIncomingInput {
    let p = &i.pkt;
    abi::TonicAbiIncomingInput {
        now: i.now,
        pkt: abi::TonicAbiIncomingPkt {
            pkt_type: p.pkt_type as u8,
            sack_cnt: p.sack_cnt,
            flags: p.flags,
            rcv_wnd: p.rcv_wnd,
            cumulative_ack: p.cumulative_ack,
            sack: p.sack.map(|r| range_to_abi(&r)),
            nack: p.nack,
            grant_bytes: p.grant_bytes,
            ecn_bytes: p.ecn_bytes,
            ts_echo: p.ts_echo,
            data: p.data,
        },
        newly_acked_cnt: i.newly_acked_cnt,
        reserved: 0,
        old_wnd_start: i.old_wnd_start,
        new_wnd_start: i.new_wnd_start,
        flow: flow_to_abi(&i.flow),
    }
}

fn periodic_to_abi(i: &PeriodicInput) -> abi::TonicAbiPeriodicInput {
    abi::TonicAbiPeriodicInput {
        now: i.now,
        timeout_expired: i.timeout_expired as u8,
        reserved: [0; 7],
        flow: flow_to_abi(&i.flow),
    }
}

fn out_to_abi(o: &HookOutput) -> abi::TonicAbiHookOutput {
    abi::TonicAbiHookOutput {
        set: o.set & abi::TONIC_ABI_OUT_ALL,
        wnd_size: o.wnd_size,
        mark_rtx: range_to_abi(&o.mark_rtx),
        mark_acked: range_to_abi(&o.mark_acked),
        cum_ack: o.cum_ack,
        add_credit: o.add_credit,
        reserved: 0,
        rate_bps: o.rate_bps,
        rtx_timer_amount: o.rtx_timer_amount,
    }
}

/// Writes the module's answer back; bits the engine set beyond this ABI version are kept,
/// bits the module set beyond it are ignored.
fn out_from_abi(a: &abi::TonicAbiHookOutput, o: &mut HookOutput) {
    o.set = (o.set & !abi::TONIC_ABI_OUT_ALL) | (a.set & abi::TONIC_ABI_OUT_ALL);
    o.wnd_size = a.wnd_size;
    o.mark_rtx = SegRange::new(a.mark_rtx.start, a.mark_rtx.end);
    o.mark_acked = SegRange::new(a.mark_acked.start, a.mark_acked.end);
    o.cum_ack = a.cum_ack;
    o.add_credit = a.add_credit;
    o.rate_bps = a.rate_bps;
    o.rtx_timer_amount = a.rtx_timer_amount;
}

/// A `dlopen` handle; `dlclose`d on drop.
struct Library {
    handle: NonNull<c_void>,
    path: PathBuf,
}

// SAFETY: a dlopen handle is an opaque token that the (thread-safe) dl* functions accept from
// any thread; this type only passes it to dlsym (while loading) and dlclose (on drop, once).
unsafe impl Send for Library {}
// SAFETY: as above; `&Library` only allows `symbol`, and dlsym is thread-safe.
unsafe impl Sync for Library {}

impl Library {
    /// `dlopen(path, RTLD_NOW | RTLD_LOCAL)`: every undefined symbol resolved now (a broken
    /// library fails here, not in the middle of a hook), none leaking into other libraries.
    fn open(path: &Path) -> Result<Self, PluginError> {
        let err = |reason: String| PluginError::Open {
            path: path.to_path_buf(),
            reason,
        };
        // A name without a slash would make dlopen search the library path instead.
        let file = if path.as_os_str().as_bytes().contains(&b'/') {
            path.to_path_buf()
        } else {
            Path::new(".").join(path)
        };
        let c_path = CString::new(file.as_os_str().as_bytes())
            .map_err(|_| err("the path contains a NUL byte".into()))?;
        // SAFETY: `c_path` is a valid NUL-terminated string for the call. Loading runs the
        // library's initializers: loading a library at all means trusting its code.
        let handle = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        match NonNull::new(handle) {
            Some(handle) => Ok(Library {
                handle,
                path: path.to_path_buf(),
            }),
            None => Err(err(last_dl_error())),
        }
    }

    /// The address of exported symbol `name`.
    fn symbol(&self, name: &CStr) -> Result<NonNull<c_void>, PluginError> {
        // SAFETY: clears this thread's pending dl error (dlerror's state is per thread).
        unsafe { libc::dlerror() };
        // SAFETY: a live handle (dlclose happens only in drop) and a NUL-terminated name.
        let sym = unsafe { libc::dlsym(self.handle.as_ptr(), name.as_ptr()) };
        NonNull::new(sym).ok_or_else(|| PluginError::MissingSymbol {
            path: self.path.clone(),
            symbol: name.to_string_lossy().into_owned(),
            reason: last_dl_error(),
        })
    }
}

impl Drop for Library {
    fn drop(&mut self) {
        // SAFETY: the handle came from a successful dlopen and is closed exactly once. The
        // module's function pointers live in the `PluginModule` that owns this value and are
        // dropped with it, so none can be called after the library is unmapped.
        unsafe { libc::dlclose(self.handle.as_ptr()) };
    }
}

/// This thread's last dl error message (or a generic one).
fn last_dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string valid until the next dl* call on
    // this thread; it is copied out at once.
    let msg = unsafe { libc::dlerror() };
    if msg.is_null() {
        "unknown dynamic loader error".into()
    } else {
        // SAFETY: non-NULL, NUL-terminated, still valid (no dl* call in between).
        unsafe { CStr::from_ptr(msg) }
            .to_string_lossy()
            .into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tonic::module::IncomingPkt;

    #[test]
    fn conversions_preserve_every_field() {
        let mut flow = FlowView {
            wnd_start: 7,
            next_new: 19,
            tail: 40,
            total_sent: 21,
            rtx_timer_amount: 5,
            rtx_deadline: 6,
            rate_bps: 8,
            wnd_size: 9,
            rcv_wnd: 10,
            window_capacity: 128,
            outstanding_cnt: 3,
            mss: 1460,
            is_idle: true,
            ..Default::default()
        };
        flow.acked.words[1] = 0xf0;
        flow.rtx_cnt.words[3] = 1 << 63;
        let mut pkt = IncomingPkt::sack(7, &[SegRange::new(9, 11), SegRange::new(13, 14)]);
        pkt.flags = IncomingPkt::FLAG_TS_ECHO;
        pkt.ts_echo = 77;
        pkt.data = [1, 2, 3, 4];
        let input = IncomingInput {
            now: 1000,
            pkt,
            newly_acked_cnt: 3,
            old_wnd_start: 5,
            new_wnd_start: 7,
            flow,
        };
        let a = incoming_to_abi(&input);
        assert_eq!(
            (a.now, a.newly_acked_cnt, a.old_wnd_start, a.new_wnd_start),
            (1000, 3, 5, 7)
        );
        assert_eq!(
            (a.pkt.pkt_type, a.pkt.sack_cnt),
            (abi::TONIC_ABI_PKT_SACK, 2)
        );
        assert_eq!((a.pkt.sack[1].start, a.pkt.sack[1].end), (13, 14));
        assert_eq!((a.pkt.ts_echo, a.pkt.data), (77, [1, 2, 3, 4]));
        assert_eq!(
            (a.flow.wnd_start, a.flow.next_new, a.flow.mss),
            (7, 19, 1460)
        );
        assert_eq!((a.flow.is_idle, a.flow.window_capacity), (1, 128));
        assert_eq!(a.flow.acked.words[1], 0xf0);
        assert_eq!(a.flow.rtx_cnt.words[3], 1 << 63);

        let mut out = HookOutput::default();
        out.set_rate(5);
        let mut o = out_to_abi(&out);
        o.set |= abi::TONIC_ABI_OUT_WND_SIZE | 1 << 31;
        o.wnd_size = 4;
        o.mark_rtx = abi::TonicAbiSegRange::new(2, 3);
        out_from_abi(&o, &mut out);
        assert!(out.has(HookOutput::OUT_RATE | HookOutput::OUT_WND_SIZE));
        assert_eq!(
            out.set & 1 << 31,
            0,
            "unknown bits from a module are dropped"
        );
        assert_eq!(
            (out.wnd_size, out.rate_bps, out.mark_rtx),
            (4, 5, SegRange::new(2, 3))
        );
    }

    #[test]
    fn names_are_checked() {
        let p = Path::new("/x.so");
        let mut raw = abi::tonic_abi_name("ok");
        assert_eq!(parse_name(p, &raw).unwrap(), "ok");
        raw = [b'a'; abi::TONIC_ABI_NAME_LEN];
        assert!(matches!(
            parse_name(p, &raw),
            Err(PluginError::InvalidName { .. })
        ));
        raw = [0; abi::TONIC_ABI_NAME_LEN];
        let e = parse_name(p, &raw).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/x.so: invalid module name: the name is empty"
        );
        raw[0] = 0xff;
        assert!(parse_name(p, &raw)
            .unwrap_err()
            .to_string()
            .contains("UTF-8"));
    }

    #[test]
    fn missing_files_are_refused_with_the_path() {
        let e = PluginModule::open(Path::new("/nonexistent/libnope.so")).unwrap_err();
        assert!(matches!(e, PluginError::Open { .. }));
        assert!(
            e.to_string()
                .starts_with("/nonexistent/libnope.so: cannot load"),
            "{e}"
        );
    }
}
