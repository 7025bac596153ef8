//! One-pass construction from sorted keys (memory-efficient-search-trees.txt §3.4).
//!
//! Keys arrive in strictly increasing order. Each key is placed once its successor is known:
//! with `lp` = the common prefix length with the previous key and `ln` with the next, the key
//! adds labels on levels `lp..=max(lp, ln)`: to the open node of level `lp` (a new node only
//! for the root) and to a new node on every deeper level; the last label is the key's leaf. A
//! key that is a prefix of the next one ends instead in a new node holding the terminator
//! (label 0xFF without a child), which the next key's label joins. Because keys are sorted, the
//! nodes of every level come out in level order, so concatenating the levels is the LOUDS
//! order. The empty key never enters the trie: the front ends keep it aside.
//!
//! Leaf payloads (values, suffixes) are collected per level and concatenated the same way, so
//! payload `i` belongs to the trie's leaf `i`.

use core::cmp::Ordering;

use super::compress;
use super::suffix::SuffixKind;
use super::trie::{Trie, choose_dense_height};
use crate::Error;
use crate::key::common_prefix;
use crate::substrate::BitVec;

/// Label of the terminator that marks a prefix key in a LOUDS-Sparse node.
pub(crate) const TERMINATOR: u8 = 0xFF;

/// One level of the trie under construction.
#[derive(Default)]
pub(crate) struct Level {
    pub(crate) labels: Vec<u8>,
    pub(crate) has_child: BitVec,
    /// One at the first position of each node.
    pub(crate) louds: BitVec,
    /// One at each chain byte (see `compress`); empty before compression, meaning none.
    pub(crate) chain: BitVec,
    /// Leaves of this level, in order: value and suffix payload.
    pub(crate) values: Vec<u64>,
    pub(crate) suffix_bytes: Vec<u8>,
    pub(crate) suffix_ends: BitVec,
    pub(crate) fixed: Vec<u64>,
}

impl Level {
    fn push(&mut self, label: u8, child: bool, new_node: bool) {
        self.labels.push(label);
        self.has_child.push(child);
        self.louds.push(new_node);
    }

    pub(crate) fn nodes(&self) -> usize {
        self.louds.count_ones()
    }
}

/// Streaming builder of the per-level trie.
pub(crate) struct LevelBuilder {
    pub(crate) kind: SuffixKind,
    pub(crate) levels: Vec<Level>,
    /// The last key pushed, not yet placed, its value and its common prefix with the key
    /// before it.
    pending: Option<(Vec<u8>, u64, usize)>,
    /// Value of the empty key, when pushed.
    pub(crate) empty: Option<u64>,
    pub(crate) keys: usize,
    /// Shortest and longest non-empty key pushed.
    lengths: Option<(usize, usize)>,
    /// Fixed-width kinds take each key's hash bits from its pushed value instead of hashing
    /// the key (a rebuild from stored entries, `dynamic_surf`); off by default.
    pub(crate) given_hash: bool,
}

impl LevelBuilder {
    pub(crate) fn new(kind: SuffixKind) -> Self {
        LevelBuilder {
            kind,
            levels: Vec::new(),
            pending: None,
            empty: None,
            keys: 0,
            lengths: None,
            given_hash: false,
        }
    }

    /// Appends a key; leaves the builder unchanged on error.
    pub(crate) fn push(&mut self, key: &[u8], value: u64) -> Result<(), Error> {
        if key.len() > u32::MAX as usize {
            return Err(Error::KeyTooLong {
                len: key.len(),
                max: u32::MAX as usize,
            });
        }
        // One pass gives both the order check and the common prefix the placement needs.
        let lcp = match &self.pending {
            Some((prev, _, _)) => {
                let lcp = common_prefix(prev, key);
                match prev.get(lcp).cmp(&key.get(lcp)) {
                    Ordering::Less => {}
                    Ordering::Equal => return Err(Error::DuplicateKey { key: key.to_vec() }),
                    Ordering::Greater => {
                        return Err(Error::OutOfOrder {
                            previous: prev.clone(),
                            got: key.to_vec(),
                        });
                    }
                }
                lcp
            }
            None if self.empty.is_some() && key.is_empty() => {
                return Err(Error::DuplicateKey { key: Vec::new() });
            }
            None => 0,
        };
        self.keys += 1;
        if key.is_empty() {
            self.empty = Some(value);
            return Ok(());
        }
        let n = key.len();
        self.lengths = Some(
            self.lengths
                .map_or((n, n), |(lo, hi)| (lo.min(n), hi.max(n))),
        );
        // The pending key's buffer is reused for the new one: no allocation a key.
        let (lp, mut buf) = match self.pending.take() {
            Some((prev, v, prev_lp)) => {
                self.place(&prev, v, prev_lp, lcp);
                (lcp, prev)
            }
            None => (0, Vec::new()),
        };
        buf.clear();
        buf.extend_from_slice(key);
        self.pending = Some((buf, value, lp));
        Ok(())
    }

    /// Reserves room on each level for `shape[l] = (labels, leaves, suffix record bytes)`, so
    /// that a merge that knows roughly what it will build fills its levels without growing
    /// them step by step (each step a copy into fresh memory). Room no key uses is never
    /// touched.
    pub(crate) fn reserve(&mut self, shape: &[(usize, usize, usize)]) {
        if self.levels.len() < shape.len() {
            self.levels.resize_with(shape.len(), Level::default);
        }
        for (lv, &(labels, leaves, records)) in self.levels.iter_mut().zip(shape) {
            lv.labels.reserve(labels);
            lv.has_child.reserve(labels);
            lv.louds.reserve(labels);
            match self.kind {
                SuffixKind::None => lv.values.reserve(leaves),
                SuffixKind::Full => {
                    lv.suffix_bytes.reserve(records);
                    lv.suffix_ends.reserve(records.saturating_sub(7 * leaves));
                }
                _ => lv.fixed.reserve(leaves),
            }
        }
    }

    /// Places the last key; the levels are then complete.
    pub(crate) fn finish_levels(&mut self) {
        if let Some((k, v, lp)) = self.pending.take() {
            self.place(&k, v, lp, 0);
        }
        // Levels `reserve` made room on that no key reached.
        while self.levels.last().is_some_and(|lv| lv.labels.is_empty()) {
            self.levels.pop();
        }
    }

    /// Places the last key, folds the chains of single-child sparse nodes (see `compress`)
    /// and encodes the trie, levels `0..h` in LOUDS-Dense where `h` is chosen by `ratio` (see
    /// [`choose_dense_height`]). The levels are left holding the leaf payloads in the trie's
    /// leaf order, level by level.
    ///
    /// Complete keys of one length are not folded: every level's suffixes then have one
    /// length, so a lookup finds its suffix record by arithmetic (`FullSuffixes::get_at`);
    /// folding mixes byte depths on a level and would make that a select per lookup
    /// (instructions per `get` on `dec-b`, callgrind: 833 unfolded, 1,035 folded).
    pub(crate) fn finish_trie(&mut self, ratio: u32) -> Result<Trie, Error> {
        self.finish_levels();
        let dense = choose_dense_height(&self.levels, ratio);
        let one_length = self.lengths.is_some_and(|(lo, hi)| lo == hi);
        if !(self.kind == SuffixKind::Full && one_length)
            && compress::worth_folding(&self.levels, dense)
        {
            self.levels = compress::compress(core::mem::take(&mut self.levels), dense);
        }
        Trie::from_levels(&self.levels, dense)
    }

    fn level(&mut self, l: usize) -> &mut Level {
        if self.levels.len() <= l {
            self.levels.resize_with(l + 1, Level::default);
        }
        &mut self.levels[l]
    }

    /// Places `key`, which shares `lp` bytes with the previous key and `ln` with the next.
    fn place(&mut self, key: &[u8], value: u64, lp: usize, ln: usize) {
        debug_assert!(lp < key.len() && ln <= key.len());
        let last = lp.max(ln);
        let (leaf_level, depth, terminator) = if last < key.len() {
            (last, last + 1, false)
        } else {
            // `key` is a proper prefix of the next key: its path ends in a terminator node.
            (key.len(), key.len(), true)
        };
        let label_end = if terminator { key.len() } else { last + 1 };
        if self.levels.len() < label_end {
            self.levels.resize_with(label_end, Level::default);
        }
        for (l, &byte) in key[lp..label_end].iter().enumerate() {
            let l = lp + l;
            let lv = &mut self.levels[l];
            let new_node = l > lp || lv.labels.is_empty();
            lv.push(byte, terminator || l < last, new_node);
        }
        if terminator {
            self.level(leaf_level).push(TERMINATOR, false, true);
        }
        let (kind, given_hash) = (self.kind, self.given_hash);
        let lv = &mut self.levels[leaf_level];
        match kind {
            SuffixKind::None => lv.values.push(value),
            SuffixKind::Full => {
                // The value travels with the suffix (see `FullSuffixes`).
                let rest = &key[depth..];
                lv.suffix_bytes.extend_from_slice(&value.to_le_bytes());
                lv.suffix_bytes.extend_from_slice(rest);
                // The suffix's bytes as zeros, then its end marker.
                push_ends(&mut lv.suffix_ends, rest.len());
            }
            _ if given_hash => lv.fixed.push(kind.entry_with_hash(key, depth, value)),
            _ => lv.fixed.push(kind.entry(key, depth)),
        }
    }
}

/// Appends the end markers of a full suffix of `len` bytes: `len` zeros, then a one.
pub(crate) fn push_ends(ends: &mut BitVec, mut len: usize) {
    while len >= 64 {
        ends.push_bits(0, 64);
        len -= 64;
    }
    ends.push_bits(1 << len, len as u32 + 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_of_a_small_trie() {
        // Keys: "ab", "abc", "b" → level 0: node {a, b}; level 1: node {b}; level 2: node
        // {terminator, c}.
        let mut b = LevelBuilder::new(SuffixKind::Full);
        for (i, k) in [&b"ab"[..], b"abc", b"b"].iter().enumerate() {
            b.push(k, i as u64).unwrap();
        }
        assert!(matches!(b.push(b"a", 9), Err(Error::OutOfOrder { .. })));
        assert!(matches!(b.push(b"b", 9), Err(Error::DuplicateKey { .. })));
        b.finish_levels();
        assert_eq!(b.levels.len(), 3);
        assert_eq!(b.levels[0].labels, b"ab");
        assert_eq!(b.levels[1].labels, b"b");
        assert_eq!(b.levels[2].labels, [TERMINATOR, b'c']);
        assert_eq!(b.levels[0].suffix_bytes, 2u64.to_le_bytes());
        assert_eq!(b.levels[2].suffix_bytes.len(), 16);
        assert_eq!(b.levels[2].louds.count_ones(), 1);
    }
}
