//! ARP (RFC 826) for Ethernet/IPv4: reading and writing ARP bodies and the per-port
//! translation table.
//!
//! The table maps IPv4 addresses to MAC addresses with a learn time; entries older than the
//! configured timeout are stale (not returned by [`ArpTable::lookup`]) but still take part in
//! RFC 826's "merge" step. A full table evicts its oldest entry.
//!
//! Several NIC lcores on one port each keep their own table (no lock on the per-frame path)
//! and share what they learn through the port's [`SharedNeighbours`]: an ARP reply reaches
//! only the lcore whose queue the NIC steered it to (RSS sends every non-IP frame to queue 0;
//! Linux's packet fanout hashes it to one socket), while every lcore sends to that neighbour.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use offload_api::wire::ethernet::BROADCAST;
use offload_api::wire::{EthernetFrame, EthernetRepr};

use super::parse::{ARP_LEN, ETHERTYPE_ARP, ETHERTYPE_IPV4, ETH_HDR_LEN};

/// ARP opcode of a request (RFC 826 "ar$op": ares_op$REQUEST).
pub const OP_REQUEST: u16 = 1;
/// ARP opcode of a reply (RFC 826 "ar$op": ares_op$REPLY).
pub const OP_REPLY: u16 = 2;
/// Length of the ARP request frames this NIC emits: padded to the 60-byte Ethernet minimum
/// (IEEE 802.3, FCS excluded) so that ports which do not pad in hardware still send valid
/// frames.
pub const ARP_FRAME_LEN: usize = 60;

/// The fields of an Ethernet/IPv4 ARP body (RFC 826 "Packet format").
///
/// Invariant: only built from a body that [`super::parse::parse`] accepted (hrd 1, pro
/// 0x0800, hln 6, pln 4, 28 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArpFields {
    /// Opcode: [`OP_REQUEST`] or [`OP_REPLY`].
    pub op: u16,
    /// Sender hardware address.
    pub sha: [u8; 6],
    /// Sender protocol address.
    pub spa: [u8; 4],
    /// Target hardware address.
    pub tha: [u8; 6],
    /// Target protocol address.
    pub tpa: [u8; 4],
}

impl ArpFields {
    /// Reads the fields of the 28-byte ARP body `b`; `None` when `b` is shorter than 28 bytes.
    #[inline]
    pub fn read(b: &[u8]) -> Option<ArpFields> {
        if b.len() < ARP_LEN {
            return None;
        }
        let mut f = ArpFields {
            op: u16::from_be_bytes([b[6], b[7]]),
            sha: [0; 6],
            spa: [0; 4],
            tha: [0; 6],
            tpa: [0; 4],
        };
        f.sha.copy_from_slice(&b[8..14]);
        f.spa.copy_from_slice(&b[14..18]);
        f.tha.copy_from_slice(&b[18..24]);
        f.tpa.copy_from_slice(&b[24..28]);
        Some(f)
    }

    /// Writes these fields as a complete Ethernet/IPv4 ARP body into `b[..28]`.
    ///
    /// Panics if `b` is shorter than 28 bytes (callers size it).
    #[inline]
    pub fn write(&self, b: &mut [u8]) {
        b[0..2].copy_from_slice(&1u16.to_be_bytes());
        b[2..4].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        b[4] = 6;
        b[5] = 4;
        b[6..8].copy_from_slice(&self.op.to_be_bytes());
        b[8..14].copy_from_slice(&self.sha);
        b[14..18].copy_from_slice(&self.spa);
        b[18..24].copy_from_slice(&self.tha);
        b[24..28].copy_from_slice(&self.tpa);
    }
}

/// Rewrites the ARP request `frame` (validated by `parse`, at least 42 bytes) into the reply
/// for `our_mac`, in place, as RFC 826 prescribes: swap the sender and target fields, put our
/// hardware address and the requested protocol address in the sender fields, set the opcode
/// to reply; the Ethernet header goes back to the requester's hardware address. The frame's
/// length (Ethernet padding included) is unchanged.
#[inline]
pub fn reply_in_place(frame: &mut [u8], our_mac: [u8; 6]) {
    let mut eth = EthernetFrame::new_unchecked(frame);
    let Some(req) = ArpFields::read(eth.payload()) else {
        return;
    };
    let rep = ArpFields {
        op: OP_REPLY,
        sha: our_mac,
        spa: req.tpa,
        tha: req.sha,
        tpa: req.spa,
    };
    eth.set_dst_addr(req.sha);
    eth.set_src_addr(our_mac);
    rep.write(eth.payload_mut());
}

/// Writes a broadcast ARP request asking for `target_ip` from (`our_mac`, `our_ip`) into
/// `frame` (exactly [`ARP_FRAME_LEN`] bytes; zero padding after the 42 bytes of headers).
/// RFC 826: target hardware address unknown, sent as zero.
pub fn write_request(frame: &mut [u8], our_mac: [u8; 6], our_ip: [u8; 4], target_ip: [u8; 4]) {
    let mut eth = EthernetFrame::new_unchecked(&mut *frame);
    EthernetRepr {
        dst: BROADCAST,
        src: our_mac,
        ethertype: ETHERTYPE_ARP,
    }
    .emit(&mut eth);
    ArpFields {
        op: OP_REQUEST,
        sha: our_mac,
        spa: our_ip,
        tha: [0; 6],
        tpa: target_ip,
    }
    .write(eth.payload_mut());
    frame[ETH_HDR_LEN + ARP_LEN..].fill(0);
}

/// A multiplicative hasher for IPv4 addresses as `u32`. Table keys are addresses learnt on
/// the port's own subnets; multiplication by an odd constant is a bijection on the low bits,
/// so hosts of one subnet never share a bucket index.
#[derive(Default, Clone, Copy)]
pub struct IpHasher(u64);

impl Hasher for IpHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0 ^ n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    mac: [u8; 6],
    learnt_ns: u64,
}

/// One port's ARP translation table (RFC 826 "translation table").
///
/// Invariant: `len() <= capacity()`; inserting into a full table evicts the entry learnt
/// longest ago first.
#[derive(Clone, Debug)]
pub struct ArpTable {
    map: HashMap<u32, Entry, BuildHasherDefault<IpHasher>>,
    cap: usize,
    timeout_ns: u64,
}

impl ArpTable {
    /// An empty table holding at most `cap` entries (at least 1) that are fresh for
    /// `timeout_ns` after they were learnt.
    pub fn new(cap: usize, timeout_ns: u64) -> Self {
        let cap = cap.max(1);
        ArpTable {
            map: HashMap::with_capacity_and_hasher(cap, Default::default()),
            cap,
            timeout_ns,
        }
    }

    /// The MAC of `ip` if known and fresh at `now_ns`.
    #[inline]
    pub fn lookup(&self, ip: [u8; 4], now_ns: u64) -> Option<[u8; 6]> {
        match self.lookup_any(ip, now_ns) {
            Some((mac, true)) => Some(mac),
            _ => None,
        }
    }

    /// The MAC of `ip` if present, fresh or not, with `true` when fresh at `now_ns`.
    #[inline]
    pub fn lookup_any(&self, ip: [u8; 4], now_ns: u64) -> Option<([u8; 6], bool)> {
        self.map
            .get(&u32::from_be_bytes(ip))
            .map(|e| (e.mac, now_ns.saturating_sub(e.learnt_ns) < self.timeout_ns))
    }

    /// RFC 826 merge step: if `ip` is present, update its MAC and learn time and return true.
    #[inline]
    pub fn update_if_present(&mut self, ip: [u8; 4], mac: [u8; 6], now_ns: u64) -> bool {
        match self.map.get_mut(&u32::from_be_bytes(ip)) {
            Some(e) => {
                e.mac = mac;
                e.learnt_ns = now_ns;
                true
            }
            None => false,
        }
    }

    /// Inserts or refreshes `ip → mac`; returns true when an older entry had to be evicted to
    /// make room.
    pub fn insert(&mut self, ip: [u8; 4], mac: [u8; 6], now_ns: u64) -> bool {
        if self.update_if_present(ip, mac, now_ns) {
            return false;
        }
        let mut evicted = false;
        if self.map.len() >= self.cap {
            let oldest = self
                .map
                .iter()
                .min_by_key(|(_, e)| e.learnt_ns)
                .map(|(k, _)| *k);
            if let Some(k) = oldest {
                self.map.remove(&k);
                evicted = true;
            }
        }
        self.map.insert(
            u32::from_be_bytes(ip),
            Entry {
                mac,
                learnt_ns: now_ns,
            },
        );
        evicted
    }

    /// Forgets `ip`.
    pub fn remove(&mut self, ip: [u8; 4]) {
        self.map.remove(&u32::from_be_bytes(ip));
    }

    /// Number of entries, stale ones included.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when the table holds no entry.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The most entries the table holds.
    pub fn capacity(&self) -> usize {
        self.cap
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smoltcp::wire::{ArpOperation, ArpPacket, ArpRepr, EthernetAddress, Ipv4Address};

    const M1: [u8; 6] = [2, 0, 0, 0, 0, 1];
    const M2: [u8; 6] = [2, 0, 0, 0, 0, 2];

    #[test]
    fn request_is_what_smoltcp_reads() {
        let mut f = [0xaau8; ARP_FRAME_LEN];
        write_request(&mut f, M1, [10, 0, 0, 1], [10, 0, 0, 9]);
        assert_eq!(&f[0..6], &[0xff; 6]);
        assert_eq!(&f[12..14], &[0x08, 0x06]);
        assert!(f[42..].iter().all(|&b| b == 0));
        let repr = ArpRepr::parse(&ArpPacket::new_checked(&f[14..]).unwrap()).unwrap();
        assert_eq!(
            repr,
            ArpRepr::EthernetIpv4 {
                operation: ArpOperation::Request,
                source_hardware_addr: EthernetAddress(M1),
                source_protocol_addr: Ipv4Address::new(10, 0, 0, 1),
                target_hardware_addr: EthernetAddress([0; 6]),
                target_protocol_addr: Ipv4Address::new(10, 0, 0, 9),
            }
        );
    }

    #[test]
    fn table_fresh_stale_and_merge() {
        let mut t = ArpTable::new(4, 100);
        assert!(!t.update_if_present([1, 1, 1, 1], M1, 0));
        assert!(!t.insert([1, 1, 1, 1], M1, 10));
        assert_eq!(t.lookup([1, 1, 1, 1], 50), Some(M1));
        assert_eq!(t.lookup([1, 1, 1, 1], 110), None);
        assert_eq!(t.lookup_any([1, 1, 1, 1], 110), Some((M1, false)));
        assert!(t.update_if_present([1, 1, 1, 1], M2, 120));
        assert_eq!(t.lookup([1, 1, 1, 1], 150), Some(M2));
        t.remove([1, 1, 1, 1]);
        assert!(t.is_empty());
    }

    #[test]
    fn full_table_evicts_oldest() {
        let mut t = ArpTable::new(3, u64::MAX);
        assert!(!t.insert([10, 0, 0, 1], M1, 5));
        assert!(!t.insert([10, 0, 0, 2], M1, 1));
        assert!(!t.insert([10, 0, 0, 3], M1, 9));
        assert!(!t.insert([10, 0, 0, 3], M2, 10), "refresh does not evict");
        assert!(t.insert([10, 0, 0, 4], M1, 11));
        assert_eq!(t.len(), 3);
        assert_eq!(t.lookup([10, 0, 0, 2], 12), None, "oldest evicted");
        assert_eq!(t.lookup([10, 0, 0, 1], 12), Some(M1));
        assert_eq!(t.lookup([10, 0, 0, 3], 12), Some(M2));
    }
}

/// The neighbours one port's NIC lcores have learnt, shared between them: each lcore adds
/// what it learns from ARP and consults this table when its own has no entry (a lock only
/// then), so that an ARP reply steered to one lcore's queue resolves the address for all.
///
/// Invariant: holds at most the capacity it was made with (an [`ArpTable`] inside);
/// [`SharedNeighbours::generation`] grows with every insert, so an lcore with frames held for
/// an address can tell cheaply that something new was learnt.
#[derive(Debug)]
pub struct SharedNeighbours {
    table: Mutex<ArpTable>,
    generation: AtomicU64,
}

impl SharedNeighbours {
    /// An empty shared table of at most `cap` entries, fresh for `timeout_ns`.
    pub fn new(cap: usize, timeout_ns: u64) -> Self {
        SharedNeighbours {
            table: Mutex::new(ArpTable::new(cap, timeout_ns)),
            generation: AtomicU64::new(0),
        }
    }

    /// Records `ip → mac`, learnt at `now_ns`.
    pub fn insert(&self, ip: [u8; 4], mac: [u8; 6], now_ns: u64) {
        if let Ok(mut t) = self.table.lock() {
            t.insert(ip, mac, now_ns);
        }
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// The MAC of `ip` with its learn time, if some lcore learnt it and it is fresh at
    /// `now_ns`.
    pub fn lookup(&self, ip: [u8; 4], now_ns: u64) -> Option<([u8; 6], u64)> {
        let t = self.table.lock().ok()?;
        let e = t.map.get(&u32::from_be_bytes(ip))?;
        (now_ns.saturating_sub(e.learnt_ns) < t.timeout_ns).then_some((e.mac, e.learnt_ns))
    }

    /// How many inserts there have been (a change means something new may be known).
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }
}
