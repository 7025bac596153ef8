//! The bench's randomness, in one place: seeded hashes for deriving generator seeds and
//! deduplicating keys, uniform integers and floats, a Fisher–Yates shuffle and YCSB's zipfian
//! generator. Datasets ([`crate::dataset`]), workloads ([`crate::workload`]) and filter queries
//! ([`crate::filter`]) all draw from here, so none of them imports another for a helper.

use rand::Rng;

/// XXH3-64 of `bytes` under `seed`: the bench's seeded hash for deriving generator seeds and
/// deduplicating keys.
#[inline]
pub fn hash_bytes(bytes: &[u8], seed: u64) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(bytes, seed)
}

/// A full-avalanche 64-bit mix of `x` under `seed` (the splitmix64 finaliser), for scrambling
/// item and user numbers into identifiers.
#[inline]
pub fn hash_u64(x: u64, seed: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15 ^ seed.wrapping_mul(0xD6E8_FEB8_6659_FD93));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// θ of YCSB's zipfian distribution (its `ZIPFIAN_CONSTANT`).
pub const ZIPF_THETA: f64 = 0.99;

/// YCSB's zipfian generator (Gray et al., "Quickly generating billion-record synthetic
/// databases", SIGMOD 1994): rank `i` in `0..n` is drawn with probability proportional to
/// `1 / (i + 1)^θ`.
///
/// Construction computes `zeta(n, θ) = Σ 1/i^θ` once, in O(n); sampling is O(1), one uniform
/// number and one `powf`. The method is Gray's closed-form approximation, the one YCSB uses:
/// ranks 0 and 1 get their exact probability, larger ranks follow the continuous approximation.
#[derive(Clone, Debug)]
pub struct Zipf {
    n: u64,
    theta: f64,
    /// `1 / (1 - θ)`.
    alpha: f64,
    /// `zeta(n, θ)`.
    zetan: f64,
    /// Gray's `eta = (1 - (2/n)^(1-θ)) / (1 - zeta(2, θ) / zeta(n, θ))`.
    eta: f64,
    /// `1 + 0.5^θ`: below this (scaled) a draw is rank 1.
    rank1_bound: f64,
}

impl Zipf {
    /// A generator over ranks `0..n`, rank 0 the most popular, with exponent `theta`.
    ///
    /// Panics when `n == 0` or `theta` is not in `(0, 1)` (caller bugs: the closed form needs
    /// `θ < 1`, and YCSB's default is [`ZIPF_THETA`]).
    pub fn new(n: u64, theta: f64) -> Zipf {
        assert!(n > 0, "Zipf over an empty range");
        assert!(
            theta > 0.0 && theta < 1.0,
            "Zipf theta must be in (0, 1), got {theta}"
        );
        let zetan = zeta(n, theta);
        let zeta2 = zeta(2, theta);
        let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
        Zipf {
            n,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta,
            rank1_bound: 1.0 + 0.5f64.powf(theta),
        }
    }

    /// Number of ranks.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The exponent θ.
    pub fn theta(&self) -> f64 {
        self.theta
    }

    /// Draws a rank in `0..n`; 0 is the most popular.
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let u = unit_f64(rng);
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < self.rank1_bound {
            return 1.min(self.n - 1);
        }
        let r = (self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.n - 1)
    }
}

/// `Σ_{i=1..n} 1 / i^θ`.
fn zeta(n: u64, theta: f64) -> f64 {
    (1..=n).map(|i| (i as f64).powf(-theta)).sum()
}

/// A uniform integer in `0..n` (`n > 0`), by Lemire's multiply-shift. The bias, at most
/// `n / 2^64`, is far below anything a benchmark can see, and there is no rejection loop.
#[inline]
pub fn below<R: Rng + ?Sized>(rng: &mut R, n: u64) -> u64 {
    debug_assert!(n > 0);
    ((rng.next_u64() as u128 * n as u128) >> 64) as u64
}

/// A uniform float in `[0, 1)` with 53 random bits.
#[inline]
pub fn unit_f64<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Shuffles `v` in place (Fisher–Yates).
pub fn shuffle<T, R: Rng + ?Sized>(v: &mut [T], rng: &mut R) {
    for i in (1..v.len()).rev() {
        let j = below(rng, i as u64 + 1) as usize;
        v.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn zipf_skew() {
        let n = 1_000_000u64;
        let zipf = Zipf::new(n, ZIPF_THETA);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let samples = 1_000_000;
        let mut counts = vec![0u32; n as usize];
        for _ in 0..samples {
            counts[zipf.sample(&mut rng) as usize] += 1;
        }
        let max = counts.iter().copied().max().unwrap();
        assert_eq!(counts[0], max, "rank 0 must be the most popular");
        assert!(counts[0] > counts[1] && counts[1] > counts[10]);
        let top: u32 = counts[..(n / 100) as usize].iter().sum();
        let top_share = top as f64 / samples as f64;
        assert!(top_share > 0.5, "top 1% of ranks got {top_share}");

        let mut counts = vec![0u32; n as usize];
        for _ in 0..samples {
            counts[below(&mut rng, n) as usize] += 1;
        }
        let top: u32 = counts[..(n / 100) as usize].iter().sum();
        let top_share = top as f64 / samples as f64;
        assert!(
            (top_share - 0.01).abs() < 0.001,
            "uniform top 1%: {top_share}"
        );
    }

    #[test]
    fn zipf_small_ranges() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        for n in 1..5u64 {
            let z = Zipf::new(n, ZIPF_THETA);
            let mut seen = vec![false; n as usize];
            for _ in 0..10_000 {
                seen[z.sample(&mut rng) as usize] = true;
            }
            assert!(seen.iter().all(|&s| s), "n = {n}: {seen:?}");
        }
    }

    #[test]
    fn shuffle_permutes() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut v: Vec<u32> = (0..1000).collect();
        shuffle(&mut v, &mut rng);
        assert_ne!(
            v,
            (0..1000).collect::<Vec<_>>(),
            "a shuffle of 1000 moved nothing"
        );
        v.sort_unstable();
        assert_eq!(v, (0..1000).collect::<Vec<_>>());
    }
}
