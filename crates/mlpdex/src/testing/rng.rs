//! The deterministic pseudo-random generator every test and generator in this module draws from: a
//! seed names a run, so a failure is reproduced by running the same seed again.

/// A small deterministic pseudo-random generator (SplitMix64), so a seed names a test run.
///
/// Not for cryptography or statistics; its outputs pass the usual smoke tests and it costs a
/// few instructions per number.
#[derive(Clone, Debug)]
pub struct TestRng {
    state: u64,
}

impl TestRng {
    /// A generator whose whole output is determined by `seed`.
    pub fn new(seed: u64) -> Self {
        TestRng { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (multiply-shift, bias below 2⁻⁶⁴·n); `0` when `n` is `0`.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// An index in `0..len`; `0` when `len` is `0`.
    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    /// True with probability `p` (false for `p <= 0`, true for `p >= 1`).
    pub fn chance(&mut self, p: f64) -> bool {
        const SCALE: f64 = 1.0 / (1u64 << 53) as f64;
        ((self.next_u64() >> 11) as f64) * SCALE < p
    }

    /// A random element of `items`.
    ///
    /// # Panics
    ///
    /// If `items` is empty.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.index(items.len())]
    }
}
