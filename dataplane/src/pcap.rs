//! Packet capture to classic libpcap files (the format of `tcpdump -w`, read by Wireshark and
//! tshark): a global header, then a record header and the captured bytes per frame.
//!
//! Written with nanosecond timestamps (magic 0xa1b23c4d), version 2.4, LINKTYPE_ETHERNET (1),
//! all fields little-endian. See the file format described by pcap-savefile(5) and
//! draft-ietf-opsawg-pcap.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// Magic of a microsecond-resolution capture, as the writer's byte order stores it.
pub const MAGIC_USEC: u32 = 0xa1b2_c3d4;
/// Magic of a nanosecond-resolution capture.
pub const MAGIC_NSEC: u32 = 0xa1b2_3c4d;
/// Link type of Ethernet II frames (no FCS).
pub const LINKTYPE_ETHERNET: u32 = 1;
/// Snap length used when 0 is asked for (libpcap's MAXIMUM_SNAPLEN).
pub const MAX_SNAPLEN: u32 = 262_144;

/// A buffered writer of a nanosecond pcap file.
///
/// Invariant: the file always starts with a complete global header; each `write` appends one
/// complete record to the buffer; records reach the file on `flush`, when the buffer fills,
/// or when the writer is dropped.
pub struct PcapWriter {
    out: BufWriter<File>,
    snaplen: u32,
    packets: u64,
}

impl PcapWriter {
    /// Creates (truncates) `path` and writes the global header. Frames longer than `snaplen`
    /// are cut to `snaplen` bytes; a `snaplen` of 0 means [`MAX_SNAPLEN`].
    pub fn create(path: &Path, snaplen: u32) -> io::Result<PcapWriter> {
        let snaplen = if snaplen == 0 { MAX_SNAPLEN } else { snaplen };
        let mut out = BufWriter::with_capacity(256 * 1024, File::create(path)?);
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&MAGIC_NSEC.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone = 0 (UTC), sigfigs = 0.
        h[16..20].copy_from_slice(&snaplen.to_le_bytes());
        h[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter {
            out,
            snaplen,
            packets: 0,
        })
    }

    /// Appends `frame` captured at `ts_ns` nanoseconds since the Unix epoch. The captured
    /// length is `min(frame.len(), snaplen)`, the original length `frame.len()`.
    pub fn write(&mut self, ts_ns: u64, frame: &[u8]) -> io::Result<()> {
        let caplen = frame.len().min(self.snaplen as usize);
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&((ts_ns / 1_000_000_000) as u32).to_le_bytes());
        h[4..8].copy_from_slice(&((ts_ns % 1_000_000_000) as u32).to_le_bytes());
        h[8..12].copy_from_slice(&(caplen as u32).to_le_bytes());
        h[12..16].copy_from_slice(&(frame.len().min(u32::MAX as usize) as u32).to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(&frame[..caplen])?;
        self.packets += 1;
        Ok(())
    }

    /// Writes buffered records to the file.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Records written so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }
}

impl Drop for PcapWriter {
    fn drop(&mut self) {
        let _ = self.out.flush();
    }
}

/// Reads a classic pcap file (microsecond or nanosecond magic, either byte order) into
/// `(timestamp in ns since the epoch, captured bytes)` per record. A small reader for tests
/// and tools; it loads the whole file. Errors with `InvalidData` on an unknown magic or a
/// truncated record.
pub fn read_pcap(path: impl AsRef<Path>) -> io::Result<Vec<(u64, Vec<u8>)>> {
    let bytes = std::fs::read(path)?;
    let bad = |m: &str| io::Error::new(io::ErrorKind::InvalidData, m.to_string());
    if bytes.len() < 24 {
        return Err(bad("pcap: short global header"));
    }
    let magic_le = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let (big_endian, nsec) = match magic_le {
        MAGIC_USEC => (false, false),
        MAGIC_NSEC => (false, true),
        m if m.swap_bytes() == MAGIC_USEC => (true, false),
        m if m.swap_bytes() == MAGIC_NSEC => (true, true),
        _ => return Err(bad("pcap: unknown magic")),
    };
    let rd = |b: &[u8]| {
        let a = [b[0], b[1], b[2], b[3]];
        if big_endian {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        }
    };
    let mut recs = Vec::new();
    let mut off = 24;
    while off < bytes.len() {
        if bytes.len() - off < 16 {
            return Err(bad("pcap: short record header"));
        }
        let sec = rd(&bytes[off..]) as u64;
        let frac = rd(&bytes[off + 4..]) as u64;
        let caplen = rd(&bytes[off + 8..]) as usize;
        off += 16;
        if bytes.len() - off < caplen {
            return Err(bad("pcap: short record"));
        }
        let ts = sec * 1_000_000_000 + if nsec { frac } else { frac * 1000 };
        recs.push((ts, bytes[off..off + caplen].to_vec()));
        off += caplen;
    }
    Ok(recs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("nicemu-pcap-{}-{name}.pcap", std::process::id()))
    }

    #[test]
    fn header_bytes_and_roundtrip() {
        let p = tmp("rt");
        let mut w = PcapWriter::create(&p, 64).unwrap();
        w.write(1_700_000_000_123_456_789, &[0xab; 60]).unwrap();
        w.write(5, &[1; 100]).unwrap();
        assert_eq!(w.packets(), 2);
        drop(w);
        let raw = std::fs::read(&p).unwrap();
        assert_eq!(&raw[0..4], &[0x4d, 0x3c, 0xb2, 0xa1]);
        assert_eq!(&raw[4..8], &[2, 0, 4, 0]);
        assert_eq!(&raw[16..24], &[64, 0, 0, 0, 1, 0, 0, 0]);
        // Second record: caplen 64, orig len 100.
        let r2 = 24 + 16 + 60;
        assert_eq!(&raw[r2 + 8..r2 + 16], &[64, 0, 0, 0, 100, 0, 0, 0]);
        let recs = read_pcap(&p).unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0], (1_700_000_000_123_456_789, vec![0xab; 60]));
        assert_eq!(recs[1], (5, vec![1; 64]));
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn reads_big_endian_microsecond_files() {
        let p = tmp("be");
        let mut f = Vec::new();
        f.extend_from_slice(&MAGIC_USEC.to_be_bytes());
        f.extend_from_slice(&[
            0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 1,
        ]);
        f.extend_from_slice(&[0, 0, 0, 3, 0, 0, 0, 7, 0, 0, 0, 2, 0, 0, 0, 2, 9, 8]);
        std::fs::write(&p, &f).unwrap();
        assert_eq!(read_pcap(&p).unwrap(), vec![(3_000_007_000, vec![9, 8])]);
        f.pop();
        std::fs::write(&p, &f).unwrap();
        assert_eq!(
            read_pcap(&p).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        f[0] = 0;
        std::fs::write(&p, &f).unwrap();
        assert_eq!(
            read_pcap(&p).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        std::fs::remove_file(&p).unwrap();
    }
}
