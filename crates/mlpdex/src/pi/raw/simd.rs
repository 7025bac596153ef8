//! The rank of a query key in one index entry: how many of the entry's [`M`] keys are at most
//! the query, found with one SIMD compare where the CPU has one (pi-parallel-skiplist.txt
//! §3.2.2 and §4.2: "keys in an entry exactly occupy a whole SIMD vector").
//!
//! Keys are `u64` and x86 compares 64-bit lanes as signed, so an entry stores its keys with the
//! top bit flipped ([`flip`]): signed order of flipped keys is unsigned order of the keys. The
//! query is flipped once per query, not per compare.
//!
//! Backends, chosen once per index with [`Kind::detect`] (or forced, for the paper's §6.8
//! breakdown): [`Avx2`] compares all four keys in one `vpcmpgtq`; [`Sse42`] in two `pcmpgtq`;
//! [`Scalar`] in four compares the compiler turns into branch-free code. A traversal is
//! generic over [`Rank`] and entered through a `#[target_feature]` function per backend, so
//! the intrinsics inline into its loops. Under miri only [`Scalar`] exists.

/// Keys per entry: one 256-bit vector of `u64`.
pub(crate) const M: usize = 4;

/// A key as entries store it: top bit flipped, so that signed compares order keys unsigned.
#[inline(always)]
pub(crate) const fn flip(key: u64) -> u64 {
    key ^ (1 << 63)
}

/// A way to rank a query among an entry's keys; implemented by zero-sized tokens.
pub(crate) trait Rank: Copy {
    /// Number of `keys` (flipped, ascending) at most `query` (flipped).
    fn rank(self, keys: &[u64; M], query: u64) -> usize;
}

/// Four scalar compares.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scalar;

impl Rank for Scalar {
    #[inline(always)]
    fn rank(self, keys: &[u64; M], query: u64) -> usize {
        let q = query as i64;
        keys.iter().map(|&k| usize::from(k as i64 <= q)).sum()
    }
}

/// The backends a CPU may offer, fastest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
// Under miri, which runs no vector code, only `Scalar` is ever chosen.
#[cfg_attr(miri, allow(dead_code))]
pub(crate) enum Kind {
    /// One 256-bit compare an entry.
    Avx2,
    /// Two 128-bit compares an entry.
    Sse42,
    /// No vector compare.
    Scalar,
}

impl Kind {
    /// The fastest backend this CPU runs (detected by the standard library, which caches it).
    pub(crate) fn detect() -> Kind {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                return Kind::Avx2;
            }
            if std::arch::is_x86_feature_detected!("sse4.2") {
                return Kind::Sse42;
            }
        }
        Kind::Scalar
    }

    /// Whether this CPU runs `self`.
    #[cfg(test)]
    pub(crate) fn available(self) -> bool {
        match self {
            Kind::Scalar => true,
            Kind::Sse42 => Kind::detect() != Kind::Scalar,
            Kind::Avx2 => Kind::detect() == Kind::Avx2,
        }
    }

    /// Every backend this CPU runs.
    #[cfg(test)]
    pub(crate) fn all_available() -> Vec<Kind> {
        [Kind::Avx2, Kind::Sse42, Kind::Scalar]
            .into_iter()
            .filter(|k| k.available())
            .collect()
    }
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
pub(crate) use x86::{Avx2, Sse42};

#[cfg(all(target_arch = "x86_64", not(miri)))]
mod x86 {
    use core::arch::x86_64::{
        __m128i, __m256i, _mm_castsi128_pd, _mm_cmpgt_epi64, _mm_loadu_si128, _mm_movemask_pd,
        _mm_set1_epi64x, _mm256_castsi256_pd, _mm256_cmpgt_epi64, _mm256_loadu_si256,
        _mm256_movemask_pd, _mm256_set1_epi64x,
    };

    use super::{M, Rank};

    /// AVX2. Invariant: a value exists only where the CPU has AVX2 (made by
    /// [`Avx2::new`], which checks).
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Avx2(());

    impl Avx2 {
        /// The token, when this CPU has AVX2.
        pub(crate) fn new() -> Option<Avx2> {
            std::arch::is_x86_feature_detected!("avx2").then_some(Avx2(()))
        }
    }

    impl Rank for Avx2 {
        #[inline(always)]
        fn rank(self, keys: &[u64; M], query: u64) -> usize {
            // SAFETY: the CPU has AVX2 (type invariant). The load reads the 32 bytes of
            // `keys` (`loadu`: no alignment needed); the rest works on registers.
            unsafe {
                let k = _mm256_loadu_si256(keys.as_ptr().cast::<__m256i>());
                let gt = _mm256_cmpgt_epi64(k, _mm256_set1_epi64x(query as i64));
                M - _mm256_movemask_pd(_mm256_castsi256_pd(gt)).count_ones() as usize
            }
        }
    }

    /// SSE4.2 (`pcmpgtq`). Invariant: a value exists only where the CPU has SSE4.2.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Sse42(());

    impl Sse42 {
        /// The token, when this CPU has SSE4.2.
        pub(crate) fn new() -> Option<Sse42> {
            std::arch::is_x86_feature_detected!("sse4.2").then_some(Sse42(()))
        }
    }

    impl Rank for Sse42 {
        #[inline(always)]
        fn rank(self, keys: &[u64; M], query: u64) -> usize {
            // SAFETY: the CPU has SSE4.2 (type invariant). The loads read bytes 0..16 and
            // 16..32 of `keys` (`loadu`: no alignment needed).
            unsafe {
                let q = _mm_set1_epi64x(query as i64);
                let lo = _mm_loadu_si128(keys.as_ptr().cast::<__m128i>());
                let hi = _mm_loadu_si128(keys.as_ptr().add(2).cast::<__m128i>());
                let a = _mm_movemask_pd(_mm_castsi128_pd(_mm_cmpgt_epi64(lo, q)));
                let b = _mm_movemask_pd(_mm_castsi128_pd(_mm_cmpgt_epi64(hi, q)));
                M - (a.count_ones() + b.count_ones()) as usize
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type RankFn = fn(&[u64; M], u64) -> usize;

    /// Every backend this CPU runs, as a rank function.
    fn backends() -> Vec<(Kind, RankFn)> {
        #[cfg_attr(miri, allow(unused_mut))]
        let mut out: Vec<(Kind, RankFn)> = vec![(Kind::Scalar, |k, q| Scalar.rank(k, q))];
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        {
            if Avx2::new().is_some() {
                out.push((Kind::Avx2, |k, q| Avx2::new().expect("checked").rank(k, q)));
            }
            if Sse42::new().is_some() {
                out.push((Kind::Sse42, |k, q| {
                    Sse42::new().expect("checked").rank(k, q)
                }));
            }
        }
        assert_eq!(out.len(), Kind::all_available().len());
        out
    }

    fn naive(keys: &[u64; M], query: u64) -> usize {
        keys.iter().filter(|&&k| k <= query).count()
    }

    #[test]
    fn every_backend_ranks_like_counting_across_the_sign_bit() {
        let edges = [
            0,
            1,
            2,
            (1 << 63) - 1,
            1 << 63,
            (1 << 63) + 1,
            u64::MAX - 1,
            u64::MAX,
        ];
        let mut pool: Vec<u64> = edges.to_vec();
        // Under miri the edges alone (330 entries instead of 1365: the ranks are scalar there).
        if !cfg!(miri) {
            pool.extend([17, 1000, 1 << 40, (1 << 63) + 12345]);
        }
        pool.sort_unstable();
        let mut entries = Vec::new();
        // Every ascending (non-strict: padding repeats the last key) choice of 4 from the pool.
        for a in 0..pool.len() {
            for b in a..pool.len() {
                for c in b..pool.len() {
                    for d in c..pool.len() {
                        entries.push([pool[a], pool[b], pool[c], pool[d]]);
                    }
                }
            }
        }
        let queries: Vec<u64> = pool
            .iter()
            .flat_map(|&k| [k.wrapping_sub(1), k, k.wrapping_add(1)])
            .collect();
        for (kind, rank) in backends() {
            for e in &entries {
                let flipped = e.map(flip);
                for &q in &queries {
                    assert_eq!(rank(&flipped, flip(q)), naive(e, q), "{kind:?} {e:?} {q}");
                }
            }
        }
    }

    #[test]
    fn detection_is_consistent() {
        let k = Kind::detect();
        assert!(k.available());
        assert!(Kind::Scalar.available());
        assert_eq!(Kind::all_available()[0], k);
    }
}
