//! The compact B-tree's core: its leaves, the route to them, the search, and key decoding by
//! position.
//!
//! The keys form layer 0: a sorted sequence cut into leaves of `2^shift` keys (the last may
//! hold fewer; every other is full, the Compaction rule), so key `p` is key `p % 2^shift` of
//! leaf `p >> shift` and its value is `values[p]`. See [`leaf`] for a leaf's encoding.
//!
//! The inner nodes (the Structural Reduction rule: children found by arithmetic, not
//! pointers) take one of two forms, the [`Route`]:
//!
//! - **Heads**, when the leaves' first keys differ in their first 8 bytes (integer keys, most
//!   random keys): a 16-ary search tree over those 8-byte heads ([`index`]), counted without
//!   decoding anything. A search for a key whose head equals a leaf's first head may belong
//!   at the end of the previous leaf (`ab` before `ab\0...`), so it looks there too.
//! - **Layers**, otherwise (keys sharing 8 bytes across leaves: e-mail addresses, URLs): more
//!   layers of the same leaves, layer `k + 1` holding the first key of each leaf of layer `k`
//!   (key `i` of its leaf `j` is the first key of leaf `j * 2^shift + i` below), up to a layer
//!   of one leaf. Each node strips its keys' common prefix like a leaf, so an inner node over
//!   `com.gmail@...` addresses compares the bytes after that prefix. With 256 keys a node, 10M
//!   keys make upper layers of 39,063, 153 and 1 keys, small enough to stay in the cache.
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
    /// Otherwise (keys sharing 8 bytes across leaves): the upper layers, bottom first.
    Layers(Vec<Layer>),
}

impl Route {
    /// The route over `keys`: heads when they tell the leaves apart, else layers.
    pub(crate) fn build(keys: &Layer, shift: u32) -> Route {
        let mut firsts = Vec::with_capacity(keys.leaves());
        let mut key = Vec::new();
        for j in 0..keys.leaves() {
            key.clear();
            let leaf = keys.leaf(shift, j);
            dispatch!(p => leaf.write_key(p, 0, &keys.tails, &mut key));
            let head = Split::of(&key).head;
            if firsts.last().is_some_and(|&last| last >= head) {
                return Route::Layers(build::upper_layers(keys, shift));
            }
            firsts.push(head);
        }
        let index = Index::build(&firsts);
        Route::Heads {
            firsts: firsts.into_boxed_slice(),
            index,
        }
    }

    fn memory_usage(&self) -> usize {
        match self {
            Route::Heads { firsts, index } => firsts.len() * 8 + index.memory_usage(),
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
        let shift = self.shift;
        if self.keys.leaves() == 0 {
            return (0, false);
        }
        match &self.route {
            Route::Heads { firsts, index } => {
                let head = Split::of(key).head;
                // The leaf offsets of the last node read are what the search reads next.
                let hint = |from: usize| {
                    let at = self.keys.leaf_at.as_ptr().wrapping_add(from);
                    prefetch_read(at);
                    prefetch_read(at.wrapping_add(FANOUT));
                };
                let Some(j) = index.count(firsts, head, hint).checked_sub(1) else {
                    return (0, false);
                };
                self.prefetch_by_heads(firsts, j, head);
                let (at, equal) = self.rank_in(p, j, key, strict, false);
                // The previous leaf may end with keys of this head (`ab` before `ab\0...`);
                // leaves before it have smaller heads.
                if at == 0 && j > 0 && firsts[j] == head {
                    let (before, eq) = self.rank_in(p, j - 1, key, strict, false);
                    if before < self.keys.leaf_len(shift, j - 1) {
                        return (((j - 1) << shift) + before, eq);
                    }
                }
                ((j << shift) + at, equal)
            }
            Route::Layers(upper) => {
                // Down the upper layers: in each, the last key at most `key` is the first key
                // of the leaf to search below.
                let mut j = 0;
                for layer in upper.iter().rev() {
                    let (le, _) = layer.leaf(shift, j).rank(p, key, &layer.tails, true);
                    if le == 0 {
                        // Only at the top: below it, leaf `j` starts with a key at most `key`.
                        return (0, false);
                    }
                    j = (j << shift) + le - 1;
                }
                let (at, equal) = self.rank_in(p, j, key, strict, true);
                ((j << shift) + at, equal)
            }
        }
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

    /// [`Leaf::rank`] in leaf `j` of layer 0, prefetching the leaf's first lines, and with
    /// `guess` the lines of the low part and value its header predicts (the layered route's
    /// prefetch; the heads route predicts them earlier, from the separators).
    #[inline]
    fn rank_in<P: Popcount>(
        &self,
        p: P,
        j: usize,
        key: &[u8],
        strict: bool,
        guess: bool,
    ) -> (usize, bool) {
        // The header, prefix and upper parts of a leaf of 256 integer keys span the first two
        // or three of its lines: ask for them together rather than as the search reaches them.
        if let Some(&a) = self.keys.leaf_at.get(j) {
            let words = self.keys.words.as_ptr().wrapping_add(a as usize);
            prefetch_read(words.wrapping_add(8));
            prefetch_read(words.wrapping_add(16));
        }
        let leaf = self.keys.leaf(self.shift, j);
        if guess {
            self.prefetch_guess(j, &leaf, key);
        }
        leaf.rank(p, key, &self.keys.tails, strict)
    }

    /// Prefetches the lines of the low part and the value at the position `key` predicts in
    /// `leaf` (leaf `j` of layer 0), so that their misses overlap the leaf's upper-part search
    /// instead of following it: a leaf's heads spread about evenly over its range, so the
    /// prediction is usually within a line. A wrong guess costs a wasted fill.
    #[inline]
    fn prefetch_guess(&self, j: usize, leaf: &Leaf<'_>, key: &[u8]) {
        let h = &leaf.header;
        let span = ((h.top as u64 + 1) << h.low).max(1);
        let d = Split::at(key, leaf.skip.min(key.len()))
            .head
            .wrapping_sub(leaf.base)
            >> h.zeros;
        let i = guess(d, span, leaf.n.max(1));
        leaf.prefetch_low(i);
        let per_key = self.keys.tails.len() / self.keys.len.max(1);
        leaf.prefetch_tail(i, &self.keys.tails, per_key);
        prefetch_read(self.values.as_ptr().wrapping_add((j << self.shift) + i));
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
