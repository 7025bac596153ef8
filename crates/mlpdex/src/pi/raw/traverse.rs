//! Finding the interceptions of a share of queries (pi-parallel-skiplist.txt §3.2.1,
//! Algorithm 2, with §4.3.4's group processing and prefetching), on the SIMD backend chosen
//! for the index.
//!
//! Each backend has its own entry function compiled with its target feature, so the generic
//! walk ([`IndexLayer::find_group`]) and the rank it calls inline into one loop with the
//! vector compares; the choice is made once per share.

use super::index::IndexLayer;
use super::simd::{Kind, Rank, Scalar};
use crate::pi::key::sealed::Key;

/// How a share is walked: the paper's optimizations, each of which can be switched off for
/// the §6.8 breakdown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Walk {
    pub(crate) simd: Kind,
    /// Queries walked level by level together (1: one at a time).
    pub(crate) group: usize,
    /// Prefetch each query's next entry.
    pub(crate) prefetch: bool,
}

/// The interception handle of each of `keys` into `out`.
pub(crate) fn find_all<K: Key>(
    ix: &IndexLayer<K>,
    walk: Walk,
    keys: &[K::Ref<'_>],
    out: &mut [Option<u64>],
) {
    match walk.simd {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        Kind::Avx2 => {
            if let Some(r) = super::simd::Avx2::new() {
                // SAFETY: the token exists, so the CPU has AVX2.
                return unsafe { find_avx2(ix, r, walk, keys, out) };
            }
        }
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        Kind::Sse42 => {
            if let Some(r) = super::simd::Sse42::new() {
                // SAFETY: the token exists, so the CPU has SSE4.2.
                return unsafe { find_sse42(ix, r, walk, keys, out) };
            }
        }
        _ => {}
    }
    find_with(ix, Scalar, walk, keys, out);
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
#[target_feature(enable = "avx2")]
fn find_avx2<K: Key>(
    ix: &IndexLayer<K>,
    r: super::simd::Avx2,
    walk: Walk,
    keys: &[K::Ref<'_>],
    out: &mut [Option<u64>],
) {
    find_with(ix, r, walk, keys, out);
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
#[target_feature(enable = "sse4.2")]
fn find_sse42<K: Key>(
    ix: &IndexLayer<K>,
    r: super::simd::Sse42,
    walk: Walk,
    keys: &[K::Ref<'_>],
    out: &mut [Option<u64>],
) {
    find_with(ix, r, walk, keys, out);
}

#[inline(always)]
fn find_with<R: Rank, K: Key>(
    ix: &IndexLayer<K>,
    r: R,
    walk: Walk,
    keys: &[K::Ref<'_>],
    out: &mut [Option<u64>],
) {
    let group = walk.group.max(1);
    for (k, o) in keys.chunks(group).zip(out.chunks_mut(group)) {
        ix.find_group(r, k, o, walk.prefetch);
    }
}
