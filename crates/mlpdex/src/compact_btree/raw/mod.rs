//! The compact B-tree's core: its leaves, the route to them, the search, and key decoding by
//! position.
//!
//! The keys form layer 0: a sorted sequence cut into leaves of `2^shift` keys (the last may
//! hold fewer; every other is full, the Compaction rule), so key `p` is key `p % 2^shift` of
//! leaf `p >> shift` and its value is `values[p]`. See [`leaf`] for a leaf's encoding.
//!
//! The inner nodes (the Structural Reduction rule: children found by arithmetic, not
//! pointers) take one of three forms, the [`Route`]:
//!
//! - **Heads**, when the leaves' first keys differ in their first 8 bytes (integer keys, most
//!   random keys): a 16-ary search tree over those 8-byte heads ([`index`]), counted without
//!   decoding anything. A search for a key whose head equals a leaf's first head may belong
//!   at the end of the previous leaf (`ab` before `ab\0...`), so it looks there too.
//! - **Wide**, when they share 8 bytes across leaves but differ in their first 16 in all but
//!   a few (at most one leaf in [`MAX_TIED`] ties with the one before): the same search tree
//!   over 16-byte heads. E-mail addresses are the case: the first 8 bytes of `com.gmail@...`
//!   span thousands of leaves, the first 16 seldom more than one. A search whose head equals
//!   the first heads of two or more leaves takes the upper layers below instead, built for
//!   it whenever any two leaves tie. On 10M e-mail addresses this route made lookups 16%
//!   faster than the layers alone (1,638 -> 1,362 ns, interleaved runs of one process).
//! - **Layers**, otherwise (keys sharing 16 bytes across many leaves: URLs, composite keys):
//!   more layers of the same leaves, layer `k + 1` holding the first key of each leaf of layer
//!   `k` (key `i` of its leaf `j` is the first key of leaf `j * 2^shift + i` below), up to a
//!   layer of one leaf. Each node strips its keys' common prefix like a leaf, so an inner node
//!   over `com.gmail@...` addresses compares the bytes after that prefix. With 256 keys a node,
//!   10M keys make upper layers of 39,063, 153 and 1 keys, small enough to stay in the cache.
//!
//! The route is rebuilt from layer 0 when a tree is loaded, not stored.

pub(crate) mod audit;
pub(crate) mod build;
pub(crate) mod format;
pub(crate) mod index;
pub(crate) mod leaf;
pub(crate) mod merge;

use crate::substrate::Frozen;
use crate::substrate::popcount::{Popcount, dispatch};
use crate::substrate::prefetch::prefetch_read;

use index::{FANOUT, Index};
use leaf::{Leaf, Split};

/// Smallest and largest `shift` (log2 of the keys per leaf).
pub(crate) const SHIFTS: core::ops::RangeInclusive<u32> = 3..=16;

/// One layer: a sorted key sequence in leaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layer {
    /// Keys in the layer.
    pub(crate) len: usize,
    /// Where each leaf's words start in `words`, and one entry past the last leaf.
    pub(crate) leaf_at: Frozen<u64>,
    pub(crate) words: Frozen<u64>,
    /// Every leaf's tails (the bytes of its keys past their heads), leaf after leaf.
    pub(crate) tails: Frozen<u8>,
}

impl Layer {
    /// Number of leaves.
    #[inline]
    pub(crate) fn leaves(&self) -> usize {
        self.leaf_at.len().saturating_sub(1)
    }

    /// Keys in leaf `j` of a layer with leaves of `2^shift` keys.
    #[inline]
    pub(crate) fn leaf_len(&self, shift: u32, j: usize) -> usize {
        self.len.saturating_sub(j << shift).min(1 << shift)
    }

    /// Leaf `j` (`j < leaves`). A built or audited layer always decodes; were it broken, the
    /// leaf would read as empty rather than panic.
    ///
    /// `inline(always)`, as [`Leaf::new`]: returned through an `Option` out of line, the
    /// 17-word view was copied with `memcpy` on every search (callgrind, 100K rand-8 keys:
    /// about 60 of the 920 instructions a lookup took).
    #[inline(always)]
    pub(crate) fn leaf(&self, shift: u32, j: usize) -> Leaf<'_> {
        let leaf = Leaf::new(self.leaf_words(j), self.leaf_len(shift, j));
        debug_assert!(leaf.is_some(), "leaf {j} does not decode");
        leaf.unwrap_or_else(Leaf::broken)
    }

    /// The words of leaf `j` (empty when `j` is out of range).
    #[inline(always)]
    pub(crate) fn leaf_words(&self, j: usize) -> &[u64] {
        let at = |i: usize| self.leaf_at.get(i).map_or(0, |&a| a as usize);
        self.words.get(at(j)..at(j + 1)).unwrap_or(&[])
    }

    /// Bytes of memory the layer takes.
    pub(crate) fn memory_usage(&self) -> usize {
        self.leaf_at.bytes() + self.words.bytes() + self.tails.bytes()
    }
}

/// How a search finds the leaf of layer 0 to look in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// The leaves' first keys strictly increase in their first 8 bytes (`firsts`): a search
    /// tree over those heads ([`index`]).
    Heads { firsts: Box<[u64]>, index: Index },
    /// The leaves' first keys share 8 bytes across leaves but seldom 16 (e-mail addresses:
    /// the host's first 8 bytes span thousands of leaves): a search tree over their first 16
    /// bytes. Where several leaves' first keys share their 16 bytes (`tied`), the search
    /// for such a head takes the upper layers.
    Wide {
        firsts: Box<[u128]>,
        index: Index<u128>,
        tied: Option<Vec<Layer>>,
    },
    /// Otherwise (keys sharing 16 bytes across many leaves): the upper layers, bottom first.
    Layers(Vec<Layer>),
}

/// At most one leaf in this many may share its first key's 16 bytes with the leaf before for
/// the [`Route::Wide`] route; past it every search goes through the upper layers.
const MAX_TIED: usize = 4;

/// The first 16 bytes of `key` as a big-endian integer, zero-padded: ordered as the keys are
/// where they differ in those bytes.
#[inline]
pub(crate) fn head16(key: &[u8]) -> u128 {
    match key.first_chunk::<16>() {
        Some(b) => u128::from_be_bytes(*b),
        None => {
            let mut b = [0u8; 16];
            b[..key.len()].copy_from_slice(key);
            u128::from_be_bytes(b)
        }
    }
}

impl Route {
    /// The route over `keys`: 8-byte heads when they tell the leaves apart, 16-byte heads
    /// when they (nearly always) do, else layers.
    pub(crate) fn build(keys: &Layer, shift: u32) -> Route {
        let mut firsts = Vec::with_capacity(keys.leaves());
        let mut wide = Vec::with_capacity(keys.leaves());
        let mut narrow = true;
        let mut tied = 0usize;
        let mut key = Vec::new();
        for j in 0..keys.leaves() {
            key.clear();
            let leaf = keys.leaf(shift, j);
            dispatch!(p => leaf.write_key(p, 0, &keys.tails, &mut key));
            let head = Split::of(&key).head;
            narrow &= firsts.last().is_none_or(|&last| last < head);
            firsts.push(head);
            let h = head16(&key);
            tied += wide.last().is_some_and(|&last| last == h) as usize;
            wide.push(h);
        }
        if narrow {
            let index = Index::build(&firsts);
            return Route::Heads {
                firsts: firsts.into_boxed_slice(),
                index,
            };
        }
        drop(firsts);
        if tied * MAX_TIED > keys.leaves() {
            return Route::Layers(build::upper_layers(keys, shift));
        }
        let index = Index::build(&wide);
        Route::Wide {
            firsts: wide.into_boxed_slice(),
            index,
            tied: (tied > 0).then(|| build::upper_layers(keys, shift)),
        }
    }

    fn memory_usage(&self) -> usize {
        match self {
            Route::Heads { firsts, index } => firsts.len() * 8 + index.memory_usage(),
            Route::Wide {
                firsts,
                index,
                tied,
            } => {
                firsts.len() * 16
                    + index.memory_usage()
                    + tied
                        .iter()
                        .flatten()
                        .map(Layer::memory_usage)
                        .sum::<usize>()
            }
            Route::Layers(layers) => layers.iter().map(Layer::memory_usage).sum(),
        }
    }
}

/// The arrays of a compact B-tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tree {
    pub(crate) shift: u32,
    /// Layer 0: the keys.
    pub(crate) keys: Layer,
    pub(crate) route: Route,
    pub(crate) values: Frozen<u64>,
}

impl Tree {
    /// Number of keys.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.keys.len
    }

    /// Bytes of memory the arrays take.
    pub(crate) fn memory_usage(&self) -> usize {
        self.keys.memory_usage() + self.route.memory_usage() + self.values.bytes()
    }

    /// The position of the first key at least `key` (with `strict`, greater than `key`), and
    /// whether the key there equals `key`.
    #[inline]
    pub(crate) fn search(&self, key: &[u8], strict: bool) -> (usize, bool) {
        dispatch!(p => self.search_with(p, key, strict))
    }

    fn search_with<P: Popcount>(&self, p: P, key: &[u8], strict: bool) -> (usize, bool) {
        if self.keys.leaves() == 0 {
            return (0, false);
        }
        match &self.route {
            Route::Heads { firsts, index } => {
                let head = Split::of(key).head;
                let hint = |from: usize| self.prefetch_leaf_offsets(from);
                let Some(j) = index.count(firsts, head, hint).checked_sub(1) else {
                    return (0, false);
                };
                self.prefetch_by_heads(firsts, j, head);
                self.rank_from(p, j, firsts[j] == head, key, strict)
            }
            Route::Wide {
                firsts,
                index,
                tied,
            } => {
                let head = head16(key);
                let hint = |from: usize| self.prefetch_leaf_offsets(from);
                let Some(j) = index.count(firsts, head, hint).checked_sub(1) else {
                    return (0, false);
                };
                let tie = firsts[j] == head;
                if tie && j > 0 && firsts[j - 1] == head {
                    // The key may belong in any leaf of a run whose first keys share its 16
                    // bytes, or at the end of the leaf before the run: the upper layers tell
                    // them apart (built whenever two leaves' first keys share 16 bytes).
                    debug_assert!(tied.is_some());
                    if let Some(upper) = tied {
                        return self.search_layers(p, upper, key, strict);
                    }
                }
                self.rank_from(p, j, tie, key, strict)
            }
            Route::Layers(upper) => self.search_layers(p, upper, key, strict),
        }
    }

    /// Prefetches the leaf offsets of the node of the route's first heads that starts at
    /// entry `from`: what a search reads right after that node.
    #[inline]
    fn prefetch_leaf_offsets(&self, from: usize) {
        let at = self.keys.leaf_at.as_ptr().wrapping_add(from);
        prefetch_read(at);
        prefetch_read(at.wrapping_add(FANOUT));
    }

    /// The search's answer from leaf `j` of layer 0, the last leaf whose first head is at
    /// most the key's: when they are equal (`tie`), the key may still sort before that first
    /// key (`ab` before `ab\0...`), and belong at the end of the previous leaf; leaves before
    /// that one have smaller heads.
    #[inline]
    fn rank_from<P: Popcount>(
        &self,
        p: P,
        j: usize,
        tie: bool,
        key: &[u8],
        strict: bool,
    ) -> (usize, bool) {
        let shift = self.shift;
        let (at, equal) = self.rank_in(p, j, key, strict);
        if at == 0 && j > 0 && tie {
            let (before, eq) = self.rank_in(p, j - 1, key, strict);
            if before < self.keys.leaf_len(shift, j - 1) {
                return (((j - 1) << shift) + before, eq);
            }
            // A strict search past the previous leaf's last key, which may be the key.
            return ((j << shift) + at, equal || eq);
        }
        ((j << shift) + at, equal)
    }

    /// The search of [`search`](Self::search) down the upper layers `upper`.
    fn search_layers<P: Popcount>(
        &self,
        p: P,
        upper: &[Layer],
        key: &[u8],
        strict: bool,
    ) -> (usize, bool) {
        let shift = self.shift;
        // Down the upper layers: in each, the last key at most `key` is the first key of the
        // leaf to search below.
        let mut j = 0;
        for layer in upper.iter().rev() {
            let (le, _) = layer.leaf(shift, j).rank(p, key, &layer.tails, true);
            if le == 0 {
                // Only at the top: below it, leaf `j` starts with a key at most `key`.
                return (0, false);
            }
            j = (j << shift) + le - 1;
        }
        let (at, equal) = self.rank_in(p, j, key, strict);
        ((j << shift) + at, equal)
    }

    /// Prefetches, before leaf `j`'s header arrives, the lines a search for `head` reads in
    /// it: the header's, the next two (prefix and upper parts), and those of the low part and
    /// the value at the position `head` predicts between this leaf's first head and the next
    /// one's. Heads spread about evenly between the two, so the prediction is usually within
    /// a line; a wrong guess costs a wasted fill. Predicted from the separators alone, as if
    /// the leaf held 8-byte keys (whose low parts count in key units); for other keys the low
    /// part's guess is off and only the value's helps. The last leaf has no next separator.
    #[inline]
    fn prefetch_by_heads(&self, firsts: &[u64], j: usize, head: u64) {
        let (Some(&a), Some(&base), Some(&next)) =
            (self.keys.leaf_at.get(j), firsts.get(j), firsts.get(j + 1))
        else {
            return;
        };
        let words = self.keys.words.as_ptr().wrapping_add(a as usize);
        prefetch_read(words);
        let n = 1usize << self.shift;
        let span = next.wrapping_sub(base).max(1);
        let per = span / n as u64;
        let low = if per == 0 {
            0
        } else {
            63 - per.leading_zeros()
        };
        let top = (span >> low) as usize;
        let i = guess(head.wrapping_sub(base), span, n);
        let prefix = ((base ^ next).leading_zeros() / 8).div_ceil(8) as usize;
        let lows = leaf::HEADER_WORDS + prefix + (n + top + 1).div_ceil(64);
        prefetch_read(words.wrapping_add(lows + i * low as usize / 64));
        prefetch_read(self.values.as_ptr().wrapping_add((j << self.shift) + i));
    }

    /// [`Leaf::rank`] in leaf `j` of layer 0, prefetching the leaf's first lines and, once
    /// its upper parts name the bucket of `key`'s head, the lines of that bucket's first low
    /// part, tail end, likely tail bytes and value, so that those misses overlap one another
    /// instead of following one by one. (A guess of the position from the header alone, by
    /// spreading the leaf's heads evenly, missed often on string keys: e-mail lookups 7%
    /// slower on 10M keys; on integer keys the exact prefetch on top of the separators'
    /// guess made lookups 5% faster.)
    #[inline]
    fn rank_in<P: Popcount>(&self, p: P, j: usize, key: &[u8], strict: bool) -> (usize, bool) {
        // The header, prefix and upper parts of a leaf of 256 integer keys span the first two
        // or three of its lines: ask for them together rather than as the search reaches them.
        if let Some(&a) = self.keys.leaf_at.get(j) {
            let words = self.keys.words.as_ptr().wrapping_add(a as usize);
            prefetch_read(words.wrapping_add(8));
            prefetch_read(words.wrapping_add(16));
        }
        let leaf = self.keys.leaf(self.shift, j);
        let tails = &self.keys.tails;
        let per_key = tails.len() / self.keys.len.max(1);
        leaf.rank_with(p, key, tails, strict, |i| {
            leaf.prefetch_low(i);
            leaf.prefetch_tail(i, tails, per_key);
            prefetch_read(self.values.as_ptr().wrapping_add((j << self.shift) + i));
        })
    }

    /// The leaf of layer 0 holding position `pos`, and the position within it.
    #[inline]
    pub(crate) fn leaf_of(&self, pos: usize) -> (Leaf<'_>, usize) {
        (
            self.keys.leaf(self.shift, pos >> self.shift),
            self.in_leaf(pos),
        )
    }

    /// The position of key `pos` within its leaf.
    #[inline]
    pub(crate) fn in_leaf(&self, pos: usize) -> usize {
        pos & ((1 << self.shift) - 1)
    }

    /// The tail bytes of layer 0.
    #[inline]
    pub(crate) fn tails(&self) -> &[u8] {
        &self.keys.tails
    }

    /// Writes the key at position `pos` (`pos < len`) into `out`.
    #[inline]
    pub(crate) fn key_at(&self, pos: usize, out: &mut Vec<u8>) {
        out.clear();
        let leaf = self.keys.leaf(self.shift, pos >> self.shift);
        dispatch!(p => leaf.write_key(p, self.in_leaf(pos), &self.keys.tails, out));
    }

    /// The value at position `pos`, 0 past the end.
    #[inline]
    pub(crate) fn value_at(&self, pos: usize) -> u64 {
        self.values.get(pos).copied().unwrap_or(0)
    }
}

/// The position among `n` keys spread evenly over `span` of a key `d` past the first, for a
/// prefetch address: both scaled to 32 bits so the product cannot overflow. (A float division
/// took 38 instructions a lookup, the `u64` to `f64` conversions most of them; callgrind.)
#[inline]
fn guess(d: u64, span: u64, n: usize) -> usize {
    let shift = (64 - span.leading_zeros()).saturating_sub(32);
    let (d, span) = ((d >> shift).min(span >> shift), (span >> shift).max(1));
    ((d * n as u64 / span) as usize).min(n - 1)
}

#[cfg(test)]
mod tests {
    use super::build::TreeBuilder;
    use super::*;

    fn tree(keys: &[Vec<u8>], shift: u32) -> Tree {
        let mut b = TreeBuilder::new(shift);
        for (i, k) in keys.iter().enumerate() {
            b.push(k, i as u64).unwrap();
        }
        b.finish()
    }

    /// Every search answers as a binary search of the sorted keys, for every key and the
    /// probes around it (a byte more, a byte less, 0x00 and 0xFF appended).
    fn check_searches(t: &Tree, keys: &[Vec<u8>]) {
        // Miri probes around every 16th key (all of them take minutes there).
        let step = if cfg!(miri) { 16 } else { 1 };
        let mut probes: Vec<Vec<u8>> = Vec::new();
        for k in keys.iter().step_by(step) {
            probes.push(k.clone());
            probes.push([&k[..], b"\0"].concat());
            probes.push([&k[..], b"\xff"].concat());
            if let Some((_, shorter)) = k.split_last() {
                probes.push(shorter.to_vec());
            }
        }
        probes.push(Vec::new());
        for q in &probes {
            for strict in [false, true] {
                let at = keys.partition_point(|k| if strict { k <= q } else { k < q });
                let equal = keys.get(at).is_some_and(|k| k == q) && !strict;
                let want = (at, equal || (strict && at > 0 && &keys[at - 1] == q));
                assert_eq!(t.search(q, strict), want, "{q:?} strict {strict}");
            }
        }
    }

    /// Keys that share their first 8 bytes across leaves take the 16-byte route when few
    /// leaves tie on 16 bytes, and searches that meet a tie take the upper layers; keys that
    /// tie everywhere take the layers; both answer as a binary search.
    #[test]
    fn routes_by_how_leaves_tie() {
        // Host-reversed addresses under one 10-byte host: 16 bytes are the host and 6 bytes
        // of the name.
        let mut keys: Vec<Vec<u8>> = (0..600u32)
            .map(|i| format!("com.mail@{:06}x{}", i * 7, i % 3).into_bytes())
            .collect();
        // A run of 40 names sharing 16 bytes (five leaves of 8 tie), and keys that differ
        // from 16-byte ones only in zero padding or length.
        keys.extend((0..40u32).map(|i| format!("com.mail@000350run{i:03}").into_bytes()));
        keys.extend([
            b"com.mail@000700".to_vec(),
            b"com.mail@000700\0".to_vec(),
            b"com.mail@000700\0\0".to_vec(),
            b"com.mail@0007000".to_vec(),
            b"com.mail@0007000\0".to_vec(),
            b"com.mail@000".to_vec(),
            b"com".to_vec(),
        ]);
        keys.sort();
        keys.dedup();
        let shift = 3;
        let t = tree(&keys, shift);
        assert!(
            matches!(&t.route, Route::Wide { tied: Some(_), .. }),
            "{:?}",
            core::mem::discriminant(&t.route)
        );
        check_searches(&t, &keys);

        // Without the run no leaf ties: the 16-byte route without layers.
        let untied: Vec<Vec<u8>> = keys
            .iter()
            .filter(|k| !k.windows(3).any(|w| w == b"run"))
            .cloned()
            .collect();
        let t = tree(&untied, shift);
        assert!(matches!(&t.route, Route::Wide { tied: None, .. }));
        check_searches(&t, &untied);

        // Every key sharing 16 bytes: the layers.
        let shared: Vec<Vec<u8>> = (0..300u32)
            .map(|i| format!("com.mail@000000-{i:05}").into_bytes())
            .collect();
        let t = tree(&shared, shift);
        assert!(matches!(&t.route, Route::Layers(_)));
        check_searches(&t, &shared);

        // Integers: 8-byte heads.
        let ints: Vec<Vec<u8>> = (0..500u64)
            .map(|i| (i * 0x9E37_79B9).to_be_bytes().to_vec())
            .collect();
        let t = tree(&ints, shift);
        assert!(matches!(&t.route, Route::Heads { .. }));
        check_searches(&t, &ints);
    }
}
