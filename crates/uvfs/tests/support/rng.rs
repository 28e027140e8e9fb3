//! The deterministic random number generator of the seeded tests.
//!
//! It has two sources of choices: a seed (xorshift64*, the same sequence on
//! every machine, so a printed seed replays a run), or a byte string read
//! front to back, as a coverage-guided fuzzer hands it over (`fuzz/`): then
//! every choice consumes as few bytes as its range needs, so a mutation of
//! one byte changes one choice, and zeros are read once the bytes run out
//! ([`exhausted`](Rng::exhausted) tells a generator to stop).

/// Where the choices come from.
enum Source {
    Seed(u64),
    Bytes { data: Vec<u8>, pos: usize },
}

/// A generator of choices: seeded, or read from a fuzzer's bytes.
pub struct Rng(Source);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(Source::Seed(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1))
    }

    /// Choices read from `data` (see the module doc).
    pub fn from_bytes(data: &[u8]) -> Rng {
        Rng(Source::Bytes {
            data: data.to_vec(),
            pos: 0,
        })
    }

    /// True once a byte source has been read to its end; never for a seed.
    pub fn exhausted(&self) -> bool {
        match &self.0 {
            Source::Seed(_) => false,
            Source::Bytes { data, pos } => *pos >= data.len(),
        }
    }

    /// `k` bytes of a byte source as a little-endian number (zeros past the
    /// end).
    fn take(data: &[u8], pos: &mut usize, k: usize) -> u64 {
        let mut v = 0u64;
        for i in 0..k {
            let b = data.get(*pos).copied().unwrap_or(0);
            *pos += 1;
            v |= u64::from(b) << (8 * i);
        }
        v
    }

    pub fn next(&mut self) -> u64 {
        match &mut self.0 {
            Source::Seed(state) => {
                let mut x = *state;
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                *state = x;
                x.wrapping_mul(0x2545_f491_4f6c_dd1d)
            }
            Source::Bytes { data, pos } => Self::take(data, pos, 8),
        }
    }

    /// A number below `n` from a byte source, reading 1, 2, 4 or 8 bytes as
    /// `n` needs.
    fn below_bytes(&mut self, n: u64) -> Option<u64> {
        let Source::Bytes { data, pos } = &mut self.0 else {
            return None;
        };
        let k = match n {
            0..=0x100 => 1,
            0x101..=0x1_0000 => 2,
            0x1_0001..=0x1_0000_0000 => 4,
            _ => 8,
        };
        Some(Self::take(data, pos, k) % n)
    }

    /// Uniform-ish in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        if let Some(v) = self.below_bytes(n as u64) {
            return v as usize;
        }
        (self.next() % n as u64) as usize
    }

    /// As [`below`](Self::below), for `u64` bounds.
    pub fn below_u64(&mut self, n: u64) -> u64 {
        if let Some(v) = self.below_bytes(n) {
            return v;
        }
        self.next() % n
    }

    /// True with the given percentage.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// One of `items`.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}
