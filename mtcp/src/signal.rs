//! `mtcp_register_signal`: the application's handler runs from a trampoline that also
//! counts signals, so that a blocking call or `mtcp_epoll_wait` the signal interrupted
//! returns EINTR (mTCP's applications stop their loops that way on Ctrl-C).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::err::{E, R};

/// Signals are 1..NSIG.
const NSIG: usize = 65;

static COUNT: AtomicU64 = AtomicU64::new(0);
static HANDLERS: [AtomicUsize; NSIG] = [const { AtomicUsize::new(0) }; NSIG];

/// Signals caught so far (a blocking loop compares it with its value at the start).
pub fn count() -> u64 {
    COUNT.load(Ordering::Relaxed)
}

/// Counts a pseudo-signal: `mtcp_destroy` ends the waits of every context this way.
pub fn interrupt_all() {
    COUNT.fetch_add(1, Ordering::Relaxed);
}

extern "C" fn trampoline(sig: libc::c_int) {
    COUNT.fetch_add(1, Ordering::Relaxed);
    let h = usize::try_from(sig)
        .ok()
        .and_then(|s| HANDLERS.get(s))
        .map_or(0, |h| h.load(Ordering::Relaxed));
    if h > 1 {
        // SAFETY: `h` is a handler C registered through mtcp_register_signal, a
        // `void (*)(int)` (values 0 and 1, SIG_DFL and SIG_IGN, are never stored); calling
        // it from a signal handler is what the application asked for.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute::<usize, _>(h) };
        f(sig);
    }
}

/// Installs `handler` (a C `void (*)(int)` as an address; SIG_DFL and SIG_IGN pass through)
/// for `signum`; returns the previous one.
pub fn register(signum: i32, handler: usize) -> R<usize> {
    let slot = usize::try_from(signum)
        .ok()
        .filter(|s| {
            (1..NSIG).contains(s) && *s != libc::SIGKILL as usize && *s != libc::SIGSTOP as usize
        })
        .and_then(|s| HANDLERS.get(s))
        .ok_or(E::INVAL)?;
    let installed = if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        handler
    } else {
        trampoline as extern "C" fn(libc::c_int) as usize
    };
    let prev_user = slot.swap(
        if installed == handler { 0 } else { handler },
        Ordering::Relaxed,
    );
    // SAFETY: sigaction with a zeroed struct, our handler (or SIG_DFL/SIG_IGN) and
    // SA_RESTART; `old` is written by the kernel. No Rust state is shared with the handler
    // beyond atomics.
    let old = unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = installed;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(signum, &sa, &mut old) != 0 {
            return Err(E::INVAL);
        }
        old.sa_sigaction
    };
    Ok(
        if old == trampoline as extern "C" fn(libc::c_int) as usize {
            prev_user
        } else {
            old
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    static SEEN: AtomicUsize = AtomicUsize::new(0);
    extern "C" fn on_usr1(sig: libc::c_int) {
        SEEN.store(sig as usize, Ordering::Relaxed);
    }

    #[test]
    fn handler_runs_and_signals_are_counted() {
        let h = on_usr1 as extern "C" fn(libc::c_int) as usize;
        assert_eq!(register(libc::SIGUSR1, h), Ok(libc::SIG_DFL));
        let before = count();
        // SAFETY: raising a signal whose handler we installed above.
        assert_eq!(unsafe { libc::raise(libc::SIGUSR1) }, 0);
        assert_eq!(SEEN.load(Ordering::Relaxed), libc::SIGUSR1 as usize);
        assert_eq!(count(), before + 1);
        // The previous handler comes back as the application's, not the trampoline.
        assert_eq!(register(libc::SIGUSR1, libc::SIG_DFL), Ok(h));
        assert_eq!(register(0, h), Err(E::INVAL));
        assert_eq!(register(libc::SIGKILL, h), Err(E::INVAL));
        assert_eq!(register(1000, h), Err(E::INVAL));
    }
}
