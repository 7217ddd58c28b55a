//! libmtcp: mTCP's C API (mTCP, NSDI '14) with AccelTCP's additions (NSDI '20, §5.1) over
//! nicemu's host stack and NIC lcores, so that programs written for mTCP build against
//! `mtcp/include/mtcp_api.h` and `mtcp_epoll.h` and link with `-lmtcp` unchanged.
//!
//! Layers: [`ffi`] is the C boundary (`errno`, no panic crosses it) with [`cptr`]'s pointer
//! and length checks; [`ctx`] holds the logic in safe Rust over one `hoststack::Context`; [`topology`]
//! builds the DPDK topology from the configuration ([`conf`]) and hands out contexts;
//! [`signal`] implements `mtcp_register_signal`. See docs/c-api.md.

#![warn(missing_docs)]
pub mod conf;
pub mod cptr;
pub mod ctx;
pub mod err;
pub mod ffi;
pub mod signal;
pub mod topology;

use std::sync::{Mutex, RwLock};

use offload_api::link::HostEnd;

use crate::ctx::{Ctx, PendingSplices};

/// What an `mctx_t` points to: one context, `None` once destroyed. Handles are never
/// freed, so a stale `mctx_t` fails with EBADF instead of touching freed memory.
pub struct Handle {
    ctx: Mutex<Option<Ctx<HostEnd>>>,
    pending: PendingSplices,
}

impl Handle {
    /// A handle for `ctx`.
    pub fn new(ctx: Ctx<HostEnd>) -> Handle {
        let pending = ctx.pending.clone();
        Handle {
            ctx: Mutex::new(Some(ctx)),
            pending,
        }
    }

    /// Closes the context's sockets and lets their FINs go out ([`ctx::Ctx::wind_down`]),
    /// prints its counters on stderr (one line, [`ctx::Ctx::summary`]), and drops it (its
    /// connections and, on a shared lcore, the NIC lcore).
    pub fn close(&self) {
        let ctx = match self.ctx.lock() {
            Ok(mut g) => g.take(),
            Err(p) => p.into_inner().take(),
        };
        if let Some(mut c) = ctx {
            c.wind_down();
            eprintln!("libmtcp: {}", c.summary());
        }
    }
}

/// Every handle ever made (to recognise an `mctx_t` that is ours).
static HANDLES: RwLock<Vec<&'static Handle>> = RwLock::new(Vec::new());

/// Records `h` as a valid `mctx_t`.
#[cfg_attr(not(feature = "dpdk"), allow(dead_code))]
pub(crate) fn register_handle(h: &'static Handle) {
    if let Ok(mut v) = HANDLES.write() {
        v.push(h);
    }
}

/// The handle at address `p`, if it is one of ours.
pub(crate) fn handle_at(p: usize) -> Option<&'static Handle> {
    HANDLES
        .read()
        .ok()?
        .iter()
        .copied()
        .find(|h| std::ptr::from_ref::<Handle>(*h) as usize == p)
}
