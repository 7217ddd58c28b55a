//! smoltcp as a peer and as a baseline: a smoltcp [`Device`] over one queue of the in-memory
//! wire, so a smoltcp interface can sit on the far end of a nicemu node's wire (interop tests)
//! or serve the same echo workload (the host-cost comparison of BENCHMARKS.md).
//!
//! With [`WireDevice::with_csum_offload`] the device plays a NIC with checksum offload, as
//! nicemu's emulated NIC is for nicemu's host: smoltcp is told to neither verify nor fill
//! checksums (`ChecksumCapabilities::ignored()`), and the device verifies the IPv4 header
//! and TCP/UDP/ICMP checksums of every received frame (dropping and counting bad ones) and
//! fills them in every sent frame, timing that work with the TSC apart ([`CsumOffloadStats`]).

use dataplane::buf::{HeapBuf, PacketBuf};
use dataplane::cycles::rdtsc;
use dataplane::port::wire::WireQueue;
use dataplane::port::Port;
use offload_api::wire::ethernet::{EthernetFrame, ETHERTYPE_IPV4};
use smoltcp::phy::{ChecksumCapabilities, Device, DeviceCapabilities, Medium, RxToken, TxToken};
use smoltcp::time::Instant;

/// Which way a frame seen by a [`Tap`] goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TapDir {
    /// Received by the smoltcp interface from the wire.
    Rx,
    /// Sent by the smoltcp interface onto the wire.
    Tx,
}

/// An observer of every frame the device receives or sends (tests use it to check TCP flags
/// and options on the wire).
pub type Tap = Box<dyn FnMut(TapDir, &[u8]) + Send>;

/// What a device with checksum offload ([`WireDevice::with_csum_offload`]) did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CsumOffloadStats {
    /// Received IPv4 frames whose checksums verified (handed to smoltcp).
    pub rx_verified: u64,
    /// Received IPv4 frames whose IPv4 header or TCP/UDP/ICMP checksum did not verify
    /// (dropped, never handed to smoltcp).
    pub rx_bad: u64,
    /// Sent IPv4 frames whose checksums the device filled.
    pub tx_filled: u64,
    /// Sent frames with no checksum to fill (ARP).
    pub tx_other: u64,
    /// TSC cycles spent verifying and filling: this device's "NIC" time.
    pub cycles: u64,
}

/// Verifies the checksums of an Ethernet frame as nicemu's NIC does on receive
/// ([`dataplane::net::parse::parse`]: the IPv4 header checksum, then the TCP, UDP or ICMP
/// checksum; RFC 791 §3.1, RFC 9293 §3.1, RFC 768, RFC 792). `Some(false)` for a bad
/// checksum; `None` for a frame that is not IPv4 or that the NIC's parser refuses for another
/// reason (smoltcp parses and drops those itself).
pub fn verify_frame_checksums(frame: &[u8]) -> Option<bool> {
    use dataplane::net::parse::{parse, DropReason, L3};
    match parse(frame) {
        Ok(p) => matches!(p.l3, L3::Ipv4 { .. }).then_some(true),
        Err(DropReason::BadIpChecksum | DropReason::BadL4Checksum) => Some(false),
        Err(_) => None,
    }
}

/// Fills the checksums of an Ethernet frame as nicemu's NIC does on transmit
/// ([`dataplane::net::csum::fill_checksums`]: the IPv4 header and the TCP, UDP or ICMP
/// checksum). False, and the frame untouched, for a frame that is not IPv4 or that the fill
/// refuses.
pub fn fill_frame_checksums(frame: &mut [u8]) -> bool {
    let ipv4 = EthernetFrame::new_checked(&*frame).is_ok_and(|e| e.ethertype() == ETHERTYPE_IPV4);
    ipv4 && dataplane::net::csum::fill_checksums(frame).is_ok()
}

/// A smoltcp device on one wire queue. Frames are received in bursts and sent one by one.
pub struct WireDevice {
    q: WireQueue,
    rx: Vec<HeapBuf>,
    tx: Vec<HeapBuf>,
    tap: Option<Tap>,
    /// Checksum offload: on, and what it did so far.
    csum: Option<CsumOffloadStats>,
    /// Frames the wire refused on send (full).
    pub tx_full: u64,
    /// Frames handed to smoltcp.
    pub rx_frames: u64,
    /// Frames smoltcp sent.
    pub tx_frames: u64,
}

impl WireDevice {
    /// A device on `q`.
    pub fn new(q: WireQueue) -> Self {
        WireDevice {
            q,
            rx: Vec::with_capacity(64),
            tx: Vec::with_capacity(1),
            tap: None,
            csum: None,
            tx_full: 0,
            rx_frames: 0,
            tx_frames: 0,
        }
    }

    /// A device on `q` with checksum offload: smoltcp neither verifies nor fills checksums,
    /// the device does (see the module documentation).
    pub fn with_csum_offload(q: WireQueue) -> Self {
        WireDevice {
            csum: Some(CsumOffloadStats::default()),
            ..WireDevice::new(q)
        }
    }

    /// What the checksum offload did so far; none without it.
    pub fn csum_offload(&self) -> Option<CsumOffloadStats> {
        self.csum
    }

    /// Calls `tap` with every frame received or sent from now on (replaces an earlier tap).
    pub fn set_tap(&mut self, tap: Tap) {
        self.tap = Some(tap);
    }

    /// Frames received plus frames sent so far (a measure of work done).
    pub fn frames(&self) -> u64 {
        self.rx_frames + self.tx_frames
    }
}

/// A received frame.
pub struct Rx(HeapBuf);

/// Permission to send one frame.
pub struct Tx<'a> {
    q: &'a mut WireQueue,
    out: &'a mut Vec<HeapBuf>,
    tap: &'a mut Option<Tap>,
    full: &'a mut u64,
    sent: &'a mut u64,
    csum: &'a mut Option<CsumOffloadStats>,
}

impl RxToken for Rx {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(self.0.data())
    }
}

impl TxToken for Tx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut b = HeapBuf::with_room(len.max(60), 0);
        let Some(bytes) = b.append(len) else {
            // Cannot happen (the room is at least `len`); smoltcp still needs a buffer.
            return f(&mut vec![0u8; len]);
        };
        let r = f(bytes);
        if let Some(c) = self.csum.as_mut() {
            let t0 = rdtsc();
            let filled = fill_frame_checksums(b.data_mut());
            c.cycles += rdtsc().wrapping_sub(t0);
            if filled {
                c.tx_filled += 1;
            } else {
                c.tx_other += 1;
            }
        }
        if let Some(tap) = self.tap.as_mut() {
            tap(TapDir::Tx, b.data());
        }
        *self.sent += 1;
        self.out.push(b);
        self.q.tx_burst(self.out);
        if !self.out.is_empty() {
            *self.full += self.out.len() as u64;
            self.out.clear();
        }
        r
    }
}

impl Device for WireDevice {
    type RxToken<'a> = Rx;
    type TxToken<'a> = Tx<'a>;

    fn receive(&mut self, _: Instant) -> Option<(Rx, Tx<'_>)> {
        let b = loop {
            if self.rx.is_empty() {
                self.q.rx_burst(&mut self.rx, 32);
                self.rx.reverse();
            }
            let b = self.rx.pop()?;
            let Some(c) = self.csum.as_mut() else {
                break b;
            };
            let t0 = rdtsc();
            let ok = verify_frame_checksums(b.data());
            c.cycles += rdtsc().wrapping_sub(t0);
            match ok {
                Some(false) => c.rx_bad += 1,
                Some(true) => {
                    c.rx_verified += 1;
                    break b;
                }
                None => break b,
            }
        };
        self.rx_frames += 1;
        if let Some(tap) = self.tap.as_mut() {
            tap(TapDir::Rx, b.data());
        }
        Some((
            Rx(b),
            Tx {
                q: &mut self.q,
                out: &mut self.tx,
                tap: &mut self.tap,
                full: &mut self.tx_full,
                sent: &mut self.tx_frames,
                csum: &mut self.csum,
            },
        ))
    }

    fn transmit(&mut self, _: Instant) -> Option<Tx<'_>> {
        Some(Tx {
            q: &mut self.q,
            out: &mut self.tx,
            tap: &mut self.tap,
            full: &mut self.tx_full,
            sent: &mut self.tx_frames,
            csum: &mut self.csum,
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut c = DeviceCapabilities::default();
        c.medium = Medium::Ethernet;
        c.max_transmission_unit = 1514;
        c.max_burst_size = Some(32);
        if self.csum.is_some() {
            c.checksum = ChecksumCapabilities::ignored();
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dataplane::frames;

    const A: [u8; 6] = [2, 0, 0, 0, 0, 1];
    const B: [u8; 6] = [2, 0, 0, 0, 0, 2];
    const IP_A: [u8; 4] = [10, 0, 0, 1];
    const IP_B: [u8; 4] = [10, 0, 0, 2];

    /// Frames with valid checksums (filled by the dataplane's own transmit path).
    fn good_frames() -> Vec<Vec<u8>> {
        vec![
            frames::tcp(A, B, IP_A, IP_B, 1000, 7007, 1, 2, 0x18, b"hello, odd"),
            frames::tcp(A, B, IP_A, IP_B, 1000, 7007, 1, 2, 0x10, b""),
            frames::udp(A, B, IP_A, IP_B, 5, 6, b"x"),
            frames::icmp_echo_request(A, B, IP_A, IP_B, 7, 1, b"ping"),
        ]
    }

    /// What the dataplane filled verifies as good; a flipped bit anywhere in the IP packet is
    /// caught; ARP has nothing to check.
    #[test]
    fn verify_accepts_good_frames_and_catches_flipped_bits() {
        for f in good_frames() {
            assert_eq!(verify_frame_checksums(&f), Some(true), "{f:?}");
            // Every byte of the IP packet (not the Ethernet padding after it).
            let ip_len = u16::from_be_bytes([f[16], f[17]]) as usize;
            for i in 14..14 + ip_len {
                let mut g = f.clone();
                g[i] ^= 0x04;
                // A flip in a length or version field may make the frame unparseable
                // (None, left to smoltcp); it never passes as good.
                assert_ne!(verify_frame_checksums(&g), Some(true), "byte {i} of {f:?}");
            }
        }
        let arp = frames::arp_request(A, IP_A, IP_B);
        assert_eq!(verify_frame_checksums(&arp), None);
    }

    /// Scrambled checksum fields are found bad by the receive check and restored exactly by
    /// the fill; ARP is left untouched.
    #[test]
    fn scrambled_checksums_are_caught_and_filled_back() {
        for f in good_frames() {
            let mut g = f.clone();
            // The IPv4 header checksum and the L4 checksum field, scrambled.
            g[24] ^= 0x5a;
            let at = 14
                + 20
                + match g[23] {
                    6 => 16, // TCP (RFC 9293 §3.1)
                    17 => 6, // UDP (RFC 768)
                    _ => 2,  // ICMP (RFC 792)
                };
            g[at] ^= 0xa5;
            assert_eq!(verify_frame_checksums(&g), Some(false));
            assert!(fill_frame_checksums(&mut g));
            assert_eq!(g, f);
        }
        let arp = frames::arp_request(A, IP_A, IP_B);
        let mut g = arp.clone();
        assert!(!fill_frame_checksums(&mut g));
        assert_eq!(g, arp);
    }
}
