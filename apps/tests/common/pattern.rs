//! The byte streams the transfer tests send and check: a xorshift table of prime length (so
//! no segment, buffer or window size lines up with it), kept twice over so that any run of
//! up to [`PERIOD`] bytes is one slice. The python peers of the kernel-interop tests build the
//! same table from the same seed.

/// Length of the table: a prime.
pub const PERIOD: usize = 65_521;

/// The same table in python, for the peers of the kernel-interop tests: defines `P`
/// ([`PERIOD`]) and `table(seed)`, one period of the stream of `seed` (as [`Pattern::new`]).
/// Goes before the script that uses them (`python3 -c`).
pub const PYTHON_TABLE: &str = r#"
P, M = 65521, (1 << 64) - 1

def table(seed):
    x, out = seed, bytearray(P)
    for i in range(P):
        x ^= (x << 13) & M
        x ^= x >> 7
        x ^= (x << 17) & M
        out[i] = (x >> 24) & 0xFF
    return bytes(out)
"#;

/// The endless stream of one seed.
pub struct Pattern {
    /// The table twice over.
    twice: Vec<u8>,
}

impl Pattern {
    /// The stream of `seed` (xorshift64, the top bits of each state).
    pub fn new(seed: u64) -> Pattern {
        let mut x = seed;
        let mut t: Vec<u8> = (0..PERIOD)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        t.extend_from_within(..);
        Pattern { twice: t }
    }

    /// Bytes `[start, start + len)` of the stream; `len` ≤ [`PERIOD`].
    pub fn slice(&self, start: u64, len: usize) -> &[u8] {
        let off = (start % PERIOD as u64) as usize;
        &self.twice[off..off + len]
    }

    /// Fills `out` with the stream from byte `start`.
    pub fn fill(&self, start: u64, out: &mut [u8]) {
        let mut done = 0;
        while done < out.len() {
            let n = (out.len() - done).min(PERIOD);
            out[done..done + n].copy_from_slice(self.slice(start + done as u64, n));
            done += n;
        }
    }

    /// Offset (in the stream) of the first byte of `got`, read from byte `start` on, that
    /// differs from the stream, if any.
    pub fn first_mismatch(&self, start: u64, got: &[u8]) -> Option<u64> {
        let mut done = 0;
        while done < got.len() {
            let n = (got.len() - done).min(PERIOD);
            let want = self.slice(start + done as u64, n);
            if let Some(i) = got[done..done + n]
                .iter()
                .zip(want)
                .position(|(a, b)| a != b)
            {
                return Some(start + (done + i) as u64);
            }
            done += n;
        }
        None
    }
}
