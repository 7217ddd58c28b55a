//! A small deterministic mutator for the stable smoke run: bit flips, byte sets, inserts,
//! deletes, duplicated ranges, truncation and splices of two inputs, from a seeded xorshift
//! stream. It is no replacement for libFuzzer's coverage guidance; it keeps every target
//! exercised on inputs near its seeds in every `make test`.

/// A xorshift64* random stream (never 0).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A stream from `seed` (0 is replaced by a fixed odd constant).
    pub fn new(seed: u64) -> Rng {
        Rng(if seed == 0 {
            0x9e37_79b9_7f4a_7c15
        } else {
            seed
        })
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
}

/// Bytes that make parsers take unusual branches (lengths, signs, separators).
const INTERESTING: &[u8] = &[
    0, 1, 0x7f, 0x80, 0xff, b'\r', b'\n', b'$', b'*', b':', b'-', b' ',
];

/// A mutation of `input` (1 to 4 edits), splicing in part of `other` now and then.
pub fn mutate(rng: &mut Rng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(8) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = if rng.below(2) == 0 {
                    INTERESTING[rng.below(INTERESTING.len())]
                } else {
                    rng.next_u64() as u8
                };
            }
            2 => {
                let i = rng.below(v.len() + 1);
                let n = 1 + rng.below(8);
                for k in 0..n {
                    v.insert(i + k, rng.next_u64() as u8);
                }
            }
            3 if !v.is_empty() => {
                let i = rng.below(v.len());
                let n = 1 + rng.below((v.len() - i).min(16));
                v.drain(i..i + n);
            }
            4 if !v.is_empty() => {
                let i = rng.below(v.len());
                let n = 1 + rng.below((v.len() - i).min(32));
                let chunk = v[i..i + n].to_vec();
                let at = rng.below(v.len() + 1);
                v.splice(at..at, chunk);
            }
            5 if !v.is_empty() => {
                let n = rng.below(v.len());
                v.truncate(n);
            }
            6 if !other.is_empty() => {
                let i = rng.below(other.len());
                let n = 1 + rng.below((other.len() - i).min(64));
                let at = rng.below(v.len() + 1);
                v.splice(at..at, other[i..i + n].iter().copied());
            }
            _ if v.len() >= 2 => {
                // A 16-bit field set to an edge value (lengths and counts live there).
                let i = rng.below(v.len() - 1);
                let w: u16 = [0, 1, 0x7fff, 0x8000, 0xffff][rng.below(5)];
                v[i..i + 2].copy_from_slice(&w.to_be_bytes());
            }
            _ => v.push(rng.next_u64() as u8),
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_are_deterministic_and_change_the_input() {
        let input = b"*1\r\n$4\r\nPING\r\n".to_vec();
        let run = |seed| {
            let mut rng = Rng::new(seed);
            (0..100)
                .map(|_| mutate(&mut rng, &input, b"other"))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
        let changed = run(7).iter().filter(|m| **m != input).count();
        assert!(
            changed > 90,
            "only {changed} of 100 mutations changed the input"
        );
    }
}
