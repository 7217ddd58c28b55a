//! SYN cookies: stateless handshakes, shared by the NIC's setup offload (AccelTCP §4.1) and
//! the host stack's SYN-flood fallback (RFC 4987 §3.6, as Linux does with
//! `tcp_syncookies = 1`).
//!
//! # The cookie (our ISN in the SYN-ACK)
//!
//! ```text
//!  31                                  8 7     5 4       0
//! +-------------------------------------+-------+---------+
//! | hash: 24 bits                        | MSS   | counter |
//! +-------------------------------------+-------+---------+
//! ```
//!
//! - `hash`: the top 24 bits of SipHash-2-4 (keyed; AccelTCP's prototype used unkeyed CRC32,
//!   and §6 of the paper says a cryptographic hash is needed) over the 4-tuple, the peer's
//!   ISN, the full time counter and the MSS class (so that neither can be altered). The key
//!   rotates (see [`SynCookies`]).
//! - `MSS`: the index into [`MSS_TABLE`] of the largest entry not above the peer's MSS.
//! - `counter`: the low 5 bits of the time counter (one tick per [`CookieConfig::period_ns`]).
//!   A cookie is accepted while its age in ticks is at most [`CookieConfig::max_age`].
//!
//! # Options in the timestamp (the SYN-ACK's TSval)
//!
//! The options of the SYN that the ISN cannot hold ride in the low bits of the SYN-ACK's
//! TSval and come back in the final ACK's TSecr (AccelTCP §4.1, after Linux's
//! `cookie_init_timestamp`):
//!
//! | bits | meaning |
//! |---|---|
//! | 0 | [`TS_NIC_MARK`]: set only in SYN-ACKs the NIC made, so the NIC checks a cookie only for ACKs that echo one; TSvals of every other segment of such a connection are even |
//! | 1–4 | the peer's window-scale shift, 15 when the SYN offered none |
//! | 5 | the SYN offered SACK |
//!
//! A SYN without timestamps cannot carry these: the NIC hands it to the host (AccelTCP §3,
//! "full control by the host side"); the host's own cookies then keep only the MSS, as
//! Linux's do.

use crate::wire::siphash::siphash24;

/// The MSS classes a cookie can encode in 3 bits (RFC 4987 §3.6: a few common values). The
/// largest entry not above the peer's MSS is used; a peer announcing less than 536 gets 536
/// (RFC 9293 §3.7.1: the default every host accepts).
pub const MSS_TABLE: [u16; 8] = [536, 1220, 1300, 1380, 1440, 1452, 1460, 8960];

/// TSval bit set only in SYN-ACKs made by the NIC (AccelTCP §4.1).
pub const TS_NIC_MARK: u32 = 1;
/// Low TSval bits that carry the encoded options.
pub const TS_OPTION_BITS: u32 = 6;
const TS_WSCALE_NONE: u32 = 15;

/// Settings of a cookie generator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CookieConfig {
    /// Length of one time-counter tick, nanoseconds (Linux: 64 s).
    pub period_ns: u64,
    /// Oldest accepted cookie, in ticks (Linux accepts 2 minutes' worth).
    pub max_age: u32,
    /// The key rotates every this many ticks; must exceed `max_age` so that a cookie is
    /// always checkable with the current or the previous key.
    pub rotate_ticks: u32,
}

impl Default for CookieConfig {
    fn default() -> Self {
        CookieConfig {
            period_ns: 64_000_000_000,
            max_age: 2,
            rotate_ticks: 16,
        }
    }
}

/// Why a cookie was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CookieError {
    /// Its time counter is older than [`CookieConfig::max_age`] ticks (or from the future).
    #[error("cookie expired")]
    Expired,
    /// It was made with a key that has rotated out.
    #[error("cookie key rotated out")]
    Rotated,
    /// The hash does not match: forged, another connection's, or a corrupted ACK number.
    #[error("cookie hash mismatch")]
    BadHash,
}

/// The connection a cookie is bound to (addresses and ports as the SYN carried them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CookieTuple {
    /// The peer's (the SYN's source) IPv4 address.
    pub remote_ip: [u8; 4],
    /// The peer's port.
    pub remote_port: u16,
    /// Our (the SYN's destination) IPv4 address.
    pub local_ip: [u8; 4],
    /// Our port.
    pub local_port: u16,
}

/// Options of a SYN carried through a cookie and its timestamp.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CookieOptions {
    /// The peer's MSS class value (an entry of [`MSS_TABLE`]).
    pub mss: u16,
    /// The peer's window-scale shift, when its SYN offered one (clamped to 14, RFC 7323 §2.3).
    pub peer_wscale: Option<u8>,
    /// The peer's SYN offered SACK.
    pub sack_permitted: bool,
}

/// The MSS class index for a peer MSS (see [`MSS_TABLE`]).
pub fn mss_class(peer_mss: u16) -> u32 {
    MSS_TABLE.iter().rposition(|&m| m <= peer_mss).unwrap_or(0) as u32
}

/// Writes the SYN's options into the low bits of `clock` (a TSval clock reading), for the
/// SYN-ACK's TSval; `nic` sets [`TS_NIC_MARK`].
pub fn encode_ts(clock: u32, o: &CookieOptions, nic: bool) -> u32 {
    let ws = o.peer_wscale.map_or(TS_WSCALE_NONE, |w| w.min(14) as u32);
    let bits = (nic as u32) | (ws << 1) | ((o.sack_permitted as u32) << 5);
    (clock & !((1 << TS_OPTION_BITS) - 1)) | bits
}

/// True when `tsecr` echoes a NIC-made SYN-ACK's TSval.
#[inline]
pub fn ts_is_nic(tsecr: u32) -> bool {
    tsecr & TS_NIC_MARK != 0
}

/// Reads the options [`encode_ts`] put in a TSval (echoed as TSecr), with the MSS from the
/// cookie's class. `None` for a window-scale field that no encoder writes (16 > ws > 14).
pub fn decode_ts(tsecr: u32, mss: u16) -> Option<CookieOptions> {
    let ws = (tsecr >> 1) & 0xF;
    let peer_wscale = match ws {
        TS_WSCALE_NONE => None,
        0..=14 => Some(ws as u8),
        _ => return None,
    };
    Some(CookieOptions {
        mss,
        peer_wscale,
        sack_permitted: tsecr & (1 << 5) != 0,
    })
}

#[derive(Clone, Copy, Debug)]
struct Key {
    /// First time-counter tick this key covers.
    from: u64,
    key: [u8; 16],
}

/// A SYN-cookie generator and checker with a rotating key (see the module documentation).
///
/// Keys derive from a random master secret by SipHash (key *i* = SipHash(master, *i*)), so the
/// generator stays sans-I/O: it draws no randomness after [`SynCookies::new`]. Invariant: the
/// current key covers the ticks from its `from` on, the previous key the ticks before it down
/// to its own `from`; older cookies are refused as [`CookieError::Rotated`].
#[derive(Clone, Debug)]
pub struct SynCookies {
    cfg: CookieConfig,
    master: [u8; 16],
    rotations: u64,
    cur: Key,
    prev: Option<Key>,
}

impl SynCookies {
    /// A generator with `cfg` and the random `master` secret, started at `now` (ns).
    pub fn new(cfg: CookieConfig, master: [u8; 16], now: u64) -> SynCookies {
        let cfg = CookieConfig {
            period_ns: cfg.period_ns.max(1),
            max_age: cfg.max_age.min(30),
            rotate_ticks: cfg.rotate_ticks.max(cfg.max_age.min(30) + 1),
        };
        let mut s = SynCookies {
            cfg,
            master,
            rotations: 0,
            cur: Key {
                from: 0,
                key: [0; 16],
            },
            prev: None,
        };
        s.cur = Key {
            from: s.tick(now),
            key: s.derive(0),
        };
        s
    }

    /// A generator keyed from the operating system's randomness (std's `RandomState`).
    pub fn random(cfg: CookieConfig, now: u64) -> SynCookies {
        use std::hash::BuildHasher;
        let r = std::collections::hash_map::RandomState::new();
        let a = r.hash_one(now);
        let b = r.hash_one(a ^ 0x5bd1_e995);
        let mut master = [0u8; 16];
        master[..8].copy_from_slice(&a.to_le_bytes());
        master[8..].copy_from_slice(&b.to_le_bytes());
        SynCookies::new(cfg, master, now)
    }

    /// The settings in force.
    pub fn config(&self) -> &CookieConfig {
        &self.cfg
    }

    /// How many times the key has rotated.
    pub fn rotations(&self) -> u64 {
        self.rotations
    }

    fn derive(&self, i: u64) -> [u8; 16] {
        let a = siphash24(&self.master, &i.to_le_bytes());
        let b = siphash24(&self.master, &(!i).to_le_bytes());
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&a.to_le_bytes());
        k[8..].copy_from_slice(&b.to_le_bytes());
        k
    }

    /// The time counter at `now`.
    pub fn tick(&self, now: u64) -> u64 {
        now / self.cfg.period_ns
    }

    /// Rotates the key when `now` has reached the end of the current key's span. Called by
    /// [`SynCookies::make`] and [`SynCookies::check`]; callers may call it from a timer too.
    pub fn rotate(&mut self, now: u64) {
        let t = self.tick(now);
        let span = self.cfg.rotate_ticks as u64;
        if t < self.cur.from + span {
            return;
        }
        let k = (t - self.cur.from) / span;
        self.rotations += k;
        // After one span the old key still checks the cookies of its last ticks; after an
        // idle gap of several spans no live cookie can have been made with the key before
        // (every `make` rotates first), so none is kept.
        self.prev = (k == 1).then_some(self.cur);
        self.cur = Key {
            from: self.cur.from + k * span,
            key: self.derive(self.rotations),
        };
    }

    fn key_for(&self, t: u64) -> Option<&[u8; 16]> {
        if t >= self.cur.from {
            return Some(&self.cur.key);
        }
        match &self.prev {
            Some(p) if t >= p.from => Some(&p.key),
            _ => None,
        }
    }

    fn hash24(key: &[u8; 16], c: &CookieTuple, peer_isn: u32, t: u64, class: u32) -> u32 {
        let mut m = [0u8; 25];
        m[0..4].copy_from_slice(&c.remote_ip);
        m[4..8].copy_from_slice(&c.local_ip);
        m[8..10].copy_from_slice(&c.remote_port.to_be_bytes());
        m[10..12].copy_from_slice(&c.local_port.to_be_bytes());
        m[12..16].copy_from_slice(&peer_isn.to_be_bytes());
        m[16..24].copy_from_slice(&t.to_le_bytes());
        m[24] = class as u8;
        (siphash24(key, &m) >> 40) as u32
    }

    /// The cookie (our ISN) for a SYN on `c` with sequence number `peer_isn` and MSS option
    /// `peer_mss` (536 when absent), at `now`.
    pub fn make(&mut self, c: &CookieTuple, peer_isn: u32, peer_mss: u16, now: u64) -> u32 {
        self.rotate(now);
        let t = self.tick(now);
        // The key `check` will pick for tick `t` (a clock read just before a rotation by
        // another caller may lie in the previous key's span).
        let key = self.key_for(t).unwrap_or(&self.cur.key);
        let class = mss_class(peer_mss);
        let h = Self::hash24(key, c, peer_isn, t, class);
        (h << 8) | (class << 5) | (t as u32 & 31)
    }

    /// Checks the cookie of a final ACK on `c`: `cookie` is the ACK number minus one,
    /// `peer_isn` the ACK's sequence number minus one. Gives the MSS the cookie encodes.
    pub fn check(
        &mut self,
        c: &CookieTuple,
        cookie: u32,
        peer_isn: u32,
        now: u64,
    ) -> Result<u16, CookieError> {
        self.rotate(now);
        let now_t = self.tick(now);
        let age = (now_t as u32).wrapping_sub(cookie) & 31;
        if age > self.cfg.max_age || (age as u64) > now_t {
            return Err(CookieError::Expired);
        }
        let t = now_t - age as u64;
        let key = self.key_for(t).ok_or(CookieError::Rotated)?;
        let class = (cookie >> 5) & 7;
        if Self::hash24(key, c, peer_isn, t, class) != cookie >> 8 {
            return Err(CookieError::BadHash);
        }
        Ok(MSS_TABLE[class as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: CookieTuple = CookieTuple {
        remote_ip: [10, 0, 0, 2],
        remote_port: 40_000,
        local_ip: [10, 0, 0, 1],
        local_port: 7,
    };
    const SEC: u64 = 1_000_000_000;

    fn gen() -> SynCookies {
        SynCookies::new(CookieConfig::default(), [7; 16], 1_000 * SEC)
    }

    #[test]
    fn layout_fields() {
        let mut g = gen();
        let now = 1_000 * SEC;
        for (i, &m) in MSS_TABLE.iter().enumerate() {
            let c = g.make(&C, 1234, m, now);
            assert_eq!((c >> 5) & 7, i as u32, "class of {m}");
            assert_eq!(c & 31, (g.tick(now) & 31) as u32);
            assert_eq!(g.check(&C, c, 1234, now), Ok(m));
            // One below the entry falls to the class below (or 536).
            let c = g.make(&C, 1234, m - 1, now);
            assert_eq!((c >> 5) & 7, i.saturating_sub(1) as u32);
        }
        assert_eq!(mss_class(0), 0);
        assert_eq!(mss_class(u16::MAX), 7);
    }

    #[test]
    fn accepts_within_age_refuses_beyond() {
        let mut g = gen();
        let p = g.config().period_ns;
        let t0 = 1_000 * SEC;
        let c = g.make(&C, 99, 1460, t0);
        for k in 0..=2u64 {
            assert_eq!(g.check(&C, c, 99, t0 + k * p), Ok(1460), "age {k}");
        }
        assert_eq!(g.check(&C, c, 99, t0 + 3 * p), Err(CookieError::Expired));
        // 32 ticks later the 5-bit counter matches again, but the hash uses the full counter.
        assert_ne!(g.check(&C, c, 99, t0 + 32 * p), Ok(1460));
    }

    #[test]
    fn counter_wraps_through_all_values() {
        let mut g = gen();
        let p = g.config().period_ns;
        for k in 0..70u64 {
            let now = 1_000 * SEC + k * p + p / 2;
            let c = g.make(&C, k as u32, 1440, now);
            assert_eq!(c & 31, (g.tick(now) & 31) as u32);
            assert_eq!(g.check(&C, c, k as u32, now + p), Ok(1440), "k {k}");
            assert_eq!(g.check(&C, c, k as u32, now + 2 * p), Ok(1440), "k {k}");
        }
    }

    #[test]
    fn refuses_forgeries() {
        let mut g = gen();
        let now = 1_000 * SEC;
        let c = g.make(&C, 5, 1460, now);
        let mut other = C;
        other.remote_port += 1;
        assert_eq!(g.check(&other, c, 5, now), Err(CookieError::BadHash));
        assert_eq!(g.check(&C, c, 6, now), Err(CookieError::BadHash));
        assert_eq!(g.check(&C, c ^ 0x100, 5, now), Err(CookieError::BadHash));
        // Another key never validates this generator's cookies.
        let mut h = SynCookies::new(CookieConfig::default(), [8; 16], now);
        assert_eq!(h.check(&C, c, 5, now), Err(CookieError::BadHash));
        // Random ACK numbers: at most a 2^-24 chance each, so none of 20,000.
        let mut x = 0x1234_5678u32;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            assert!(g.check(&C, x, 5, now).is_err());
        }
    }

    #[test]
    fn rotation_keeps_the_window_and_drops_older_keys() {
        let cfg = CookieConfig {
            period_ns: SEC,
            max_age: 2,
            rotate_ticks: 4,
        };
        let mut g = SynCookies::new(cfg, [1; 16], 0);
        // Made on the last tick of the first key, checked after the rotation: the previous
        // key still covers it.
        let c = g.make(&C, 1, 1460, 3 * SEC);
        assert_eq!(g.check(&C, c, 1, 5 * SEC), Ok(1460));
        assert_eq!(g.rotations(), 1);
        // Replayed 32 ticks later (its 5-bit counter looks fresh again), after several
        // rotations: refused.
        assert!(g.check(&C, c, 1, 35 * SEC).is_err());
        // After an idle gap of several spans the previous key is gone: a cookie claiming a
        // tick before the current key is refused as rotated, whatever its hash.
        let mut g = SynCookies::new(cfg, [1; 16], 0);
        g.rotate(13 * SEC); // three spans: the current key covers ticks 12..
        assert_eq!(g.rotations(), 3);
        let forged = (0xabcdef << 8) | (6 << 5) | 11;
        assert_eq!(g.check(&C, forged, 1, 13 * SEC), Err(CookieError::Rotated));
        // Keys differ after each rotation: a cookie made now does not check under a
        // generator that has not rotated.
        let mut fresh = SynCookies::new(cfg, [1; 16], 0);
        let c = g.make(&C, 1, 1460, 13 * SEC);
        fresh.cur.from = 12;
        assert_eq!(fresh.check(&C, c, 1, 13 * SEC), Err(CookieError::BadHash));
    }

    #[test]
    fn timestamp_options_round_trip() {
        for ws in (0..=14u8).map(Some).chain([None]) {
            for sack in [false, true] {
                for nic in [false, true] {
                    let o = CookieOptions {
                        mss: 1460,
                        peer_wscale: ws,
                        sack_permitted: sack,
                    };
                    let ts = encode_ts(0xdead_beef, &o, nic);
                    assert_eq!(ts >> 6, 0xdead_beef >> 6);
                    assert_eq!(ts_is_nic(ts), nic);
                    assert_eq!(decode_ts(ts, 1460), Some(o));
                }
            }
        }
        // A window scale above 14 is clamped (RFC 7323 §2.3).
        let o = CookieOptions {
            mss: 536,
            peer_wscale: Some(20),
            sack_permitted: false,
        };
        assert_eq!(
            decode_ts(encode_ts(0, &o, true), 536).unwrap().peer_wscale,
            Some(14)
        );
    }
}
