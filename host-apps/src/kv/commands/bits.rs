//! Bit commands on strings (Redis 7.0 `bitops.c`): SETBIT and GETBIT. Bit 0 is the most
//! significant bit of the first byte; a string grows with zero bytes to hold the bit set.

use super::*;

/// Redis's getBitOffsetFromArgument: a non-negative integer whose byte (offset / 8) is below
/// `proto-max-bulk-len`.
fn bit_offset(e: &Engine, a: &[u8], out: &mut Vec<u8>) -> Result<usize, ()> {
    match string2ll(a) {
        Some(n) if n >= 0 && ((n as u64) >> 3) < e.cfg.max_bulk_len => Ok(n as usize),
        _ => {
            resp::error(out, b"bit offset is not an integer or out of range");
            Err(())
        }
    }
}

pub(super) fn setbit(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let Ok(off) = bit_offset(e, &a[2], out) else {
        return;
    };
    let on = match string2ll(&a[3]) {
        Some(0) => false,
        Some(1) => true,
        _ => return resp::error(out, b"bit is not an integer or out of range"),
    };
    if e.read::<Vec<u8>>(&a[1], now, out).is_err() {
        return;
    }
    let (byte, mask) = (off >> 3, 0x80u8 >> (off & 7));
    let old = e.write::<Vec<u8>, _>(&a[1], now, out, true, |s| {
        if s.len() <= byte {
            s.resize(byte + 1, 0);
        }
        let was = s[byte] & mask != 0;
        if on {
            s[byte] |= mask;
        } else {
            s[byte] &= !mask;
        }
        was
    });
    if let Ok(old) = old {
        resp::int(out, old.unwrap_or(false) as i64);
    }
}

pub(super) fn getbit(e: &mut Engine, a: &[Vec<u8>], now: i64, out: &mut Vec<u8>) {
    let Ok(off) = bit_offset(e, &a[2], out) else {
        return;
    };
    let Ok(s) = e.read::<Vec<u8>>(&a[1], now, out) else {
        return;
    };
    let bit = s
        .and_then(|s| s.get(off >> 3))
        .is_some_and(|b| b & (0x80 >> (off & 7)) != 0);
    resp::int(out, bit as i64);
}
