//! LOUDS-DS: the trie's upper levels in LOUDS-Dense, the rest in LOUDS-Sparse
//! (memory-efficient-search-trees.txt §3.2–3.4), and the per-level cursor ([`Path`]) that
//! seeks and iterates.
//!
//! ```text
//! LOUDS-Dense, per node n (positions n*256 + byte):
//!   d_labels[p]     the node has a branch for this byte          rank, 64-bit blocks
//!   d_has_child[p]  that branch leads to a node (else a leaf)    rank, 64-bit blocks
//!   d_is_prefix[n]  the path to n is itself a key                rank, 64-bit blocks
//! LOUDS-Sparse, per label p:
//!   s_labels[p]     the byte (sorted within a node; a terminator first)
//!   s_has_child[p]  as above                                     rank, 512-bit blocks
//!   s_louds[p]      p is the first label of its node             select, every 64th one
//! ```
//!
//! Nodes are numbered in level order over both parts (the root is 0); the child of the branch
//! at `p` is node `1 + (branches with a child before p)`, found with one rank, and a sparse
//! node's first label with one select. Leaves are numbered in the same level order: dense
//! leaves first (a node's prefix key before its labels), then sparse ones; leaf `i` owns value
//! and suffix `i`.
//!
//! Terminator rule (§3.3, made unambiguous): in LOUDS-Sparse a prefix key is a 0xFF label
//! without a child placed first in its node. A real 0xFF byte sorts last, so it can be first
//! only as the node's single label; hence a node's first label is a terminator exactly when it
//! is 0xFF, has no child, and the node has another label (a node that holds a prefix key always
//! has a longer key below it). The empty key is never in the trie.
//!
//! Invariants, all checked on load by [`Trie::validate`] in one pass over the levels (so a
//! loaded image never gives a wrong answer, see `format`):
//!
//! 1. Sizes agree: 256 bits of `d_labels` and `d_has_child` per dense node, one bit of
//!    `s_has_child` and `s_louds` per sparse label; dense height ≤ height; a trie of height 0
//!    has no node.
//! 2. LOUDS shape: level 0 is one node; level `l + 1` has exactly as many nodes as level `l`
//!    has branches with a child; the dense levels use exactly the dense nodes; each sparse node
//!    starts at a one of `s_louds` where the previous one ended; the last level has no branch
//!    with a child and nothing follows it. So every rank-and-select child step lands on a node
//!    of the next level, the one the per-level cursors of [`Path`] step to.
//! 3. Every node has a label (a dense node may also hold its prefix key).
//! 4. `d_has_child ⊆ d_labels`.
//! 5. The root holds no prefix key: the empty key lives beside the trie.
//! 6. A sparse node's labels strictly increase after its optional terminator (dense bitmaps
//!    are ordered by construction). With 2 and 5, the leaves in leaf order spell strictly
//!    increasing keys, which lookups, seeks and iteration both ways agree on.
//! 7. A prefix key's leaf adds nothing to its key: no suffix byte, zero real bits (the loader
//!    checks the payloads of the leaves `validate` reports). Hash bits of a prefix key are
//!    never read: a lookup ending at one has matched the whole key.

use core::cmp::Ordering;

use super::build::{Level, TERMINATOR};
use crate::Error;
use crate::substrate::labels;
use crate::substrate::rank::{RankBits, SelectBits, next_one, prev_one};
use crate::substrate::{BitVec, Frozen, FrozenBits, prefetch::prefetch_read};

/// The LOUDS-DS encoded trie (no leaf payloads).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Trie {
    pub(crate) dense_height: usize,
    pub(crate) height: usize,
    d_labels: RankBits<1>,
    d_has_child: RankBits<1>,
    d_is_prefix: RankBits<1>,
    dense_nodes: usize,
    dense_children: usize,
    dense_leaves: usize,
    /// Labels followed by at least [`LABEL_PAD`] bytes.
    ///
    /// [`LABEL_PAD`]: labels::LABEL_PAD
    s_labels: Frozen<u8>,
    s_len: usize,
    s_has_child: RankBits<8>,
    s_louds: SelectBits,
    leaves: usize,
}

/// Space of the parts of a trie, in bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrieStats {
    /// LOUDS-Dense levels.
    pub dense_levels: usize,
    /// Trie levels.
    pub levels: usize,
    /// Nodes in LOUDS-Dense.
    pub dense_nodes: usize,
    /// Nodes in LOUDS-Sparse.
    pub sparse_nodes: usize,
    /// Labels (branches and terminators) in LOUDS-Sparse.
    pub sparse_labels: usize,
    /// Bits of LOUDS-Dense: bitmaps and rank directories.
    pub dense_bits: usize,
    /// Bits of LOUDS-Sparse: labels, bit vectors, rank and select directories.
    pub sparse_bits: usize,
}

impl TrieStats {
    /// LOUDS-Sparse bits per sparse node, counting every label as a node as §3.5 does.
    pub fn sparse_bits_per_node(&self) -> f64 {
        self.sparse_bits as f64 / self.sparse_labels.max(1) as f64
    }
}

/// A part of a serialized trie and its payloads, for locating a [`Flaw`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    /// The header; the index is a byte offset.
    Header,
    /// The LOUDS-Dense bitmaps; the index is a bit.
    DLabels,
    DHasChild,
    DIsPrefix,
    /// The LOUDS-Sparse labels; the index is a label.
    SLabels,
    /// The LOUDS-Sparse bit vectors; the index is a bit.
    SHasChild,
    SLouds,
    /// The full suffixes' end markers; the index is a bit.
    SuffixEnds,
    /// The fixed-width suffix bits; the index is a bit.
    SuffixBits,
}

/// A broken invariant of a loaded image: what, and where (the loader turns the place into a
/// byte offset).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Flaw {
    pub(crate) what: &'static str,
    pub(crate) part: Part,
    pub(crate) index: usize,
}

impl Flaw {
    pub(crate) fn new(what: &'static str, part: Part, index: usize) -> Flaw {
        Flaw { what, part, index }
    }
}

fn capacity(what: &'static str) -> Error {
    Error::Capacity { what }
}

impl Trie {
    /// Encodes finished levels; levels `0..h` go to LOUDS-Dense, where `h` is the most levels
    /// whose dense size times `ratio` stays within the sparse size of the rest.
    pub(crate) fn from_levels(levels: &[Level], ratio: u32) -> Result<Trie, Error> {
        let dense_height = choose_dense_height(levels, ratio);
        let dense_nodes: usize = levels[..dense_height].iter().map(Level::nodes).sum();
        let dense_bits = dense_nodes
            .checked_mul(256)
            .filter(|&b| b <= crate::substrate::rank::MAX_BITS)
            .ok_or(capacity("LOUDS-Dense exceeds 2^32 bits"))?;
        let mut d_labels = BitVec::zeros(dense_bits);
        let mut d_has_child = BitVec::zeros(dense_bits);
        let mut d_is_prefix = BitVec::zeros(dense_nodes);
        let mut node = 0usize;
        for lv in &levels[..dense_height] {
            let mut i = 0;
            while i < lv.labels.len() {
                let end = next_one(lv.louds.words(), i + 1).unwrap_or(lv.labels.len());
                let mut j = i;
                if is_terminator(&lv.labels, &lv.has_child, i, end) {
                    d_is_prefix.set(node, true);
                    j += 1;
                }
                for p in j..end {
                    let pos = node * 256 + lv.labels[p] as usize;
                    d_labels.set(pos, true);
                    let child = lv.has_child.get(p) == Some(true);
                    d_has_child.set(pos, child);
                }
                node += 1;
                i = end;
            }
        }
        let mut s_labels = Vec::new();
        let mut s_has_child = BitVec::new();
        let mut s_louds = BitVec::new();
        for lv in &levels[dense_height..] {
            s_labels.extend_from_slice(&lv.labels);
            append(&mut s_has_child, &lv.has_child);
            append(&mut s_louds, &lv.louds);
        }
        let s_len = s_labels.len();
        Self::assemble(
            dense_height,
            levels.len(),
            d_labels.into(),
            d_has_child.into(),
            d_is_prefix.into(),
            Frozen::from(labels::padded(s_labels)),
            s_len,
            s_has_child.into(),
            s_louds.into(),
        )
    }

    /// Builds the directories over encoded parts (owned or borrowed from an image) and derives
    /// the counts. `s_labels` holds `s_len` labels and then at least [`LABEL_PAD`] more bytes.
    ///
    /// [`LABEL_PAD`]: labels::LABEL_PAD
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn assemble(
        dense_height: usize,
        height: usize,
        d_labels: FrozenBits,
        d_has_child: FrozenBits,
        d_is_prefix: FrozenBits,
        s_labels: Frozen<u8>,
        s_len: usize,
        s_has_child: FrozenBits,
        s_louds: FrozenBits,
    ) -> Result<Trie, Error> {
        if s_len > crate::substrate::rank::MAX_BITS {
            return Err(capacity("LOUDS-Sparse exceeds 2^32 labels"));
        }
        if s_labels.len() < s_len.saturating_add(labels::LABEL_PAD) {
            return Err(Error::Format {
                what: "LOUDS-Sparse labels without their padding",
                offset: 0,
            });
        }
        let d_labels = RankBits::over(d_labels).ok_or(capacity("LOUDS-Dense too large"))?;
        let d_has_child = RankBits::over(d_has_child).ok_or(capacity("LOUDS-Dense too large"))?;
        let d_is_prefix = RankBits::over(d_is_prefix).ok_or(capacity("LOUDS-Dense too large"))?;
        let s_has_child = RankBits::over(s_has_child).ok_or(capacity("LOUDS-Sparse too large"))?;
        let s_louds = SelectBits::over(s_louds).ok_or(capacity("LOUDS-Sparse too large"))?;
        let dense_nodes = d_is_prefix.len();
        let dense_children = d_has_child.count_ones();
        // Saturating: a loaded image is only validated after assembly (a valid trie never
        // saturates, since every branch with a child is a labelled branch).
        let dense_leaves =
            (d_labels.count_ones() + d_is_prefix.count_ones()).saturating_sub(dense_children);
        let leaves = (dense_leaves + s_len).saturating_sub(s_has_child.count_ones());
        Ok(Trie {
            dense_height,
            height,
            d_labels,
            d_has_child,
            d_is_prefix,
            dense_nodes,
            dense_children,
            dense_leaves,
            s_labels,
            s_len,
            s_has_child,
            s_louds,
            leaves,
        })
    }

    /// Checks, in one pass over the levels, every invariant of the module docs that queries
    /// rely on, calling `prefix_key(leaf)` for each prefix key's leaf in increasing order (the
    /// caller checks that leaf's payload). Invariants 1–4 keep every query in bounds; 5–7 make
    /// the trie spell strictly increasing keys in leaf order, which lookups, seeks and
    /// iteration in both directions then agree on.
    pub(crate) fn validate(
        &self,
        prefix_key: &mut dyn FnMut(usize) -> Result<(), Flaw>,
    ) -> Result<(), Flaw> {
        let dl = self.d_labels.bits().words();
        let dc = self.d_has_child.bits().words();
        if self.d_labels.len() != self.dense_nodes * 256 {
            return Err(Flaw::new(
                "LOUDS-Dense label bitmap size disagrees",
                Part::DLabels,
                0,
            ));
        }
        if self.d_has_child.len() != self.d_labels.len() {
            return Err(Flaw::new(
                "LOUDS-Dense bitmap sizes disagree",
                Part::DHasChild,
                0,
            ));
        }
        if self.s_has_child.len() != self.s_len {
            return Err(Flaw::new(
                "LOUDS-Sparse sequence sizes disagree",
                Part::SHasChild,
                0,
            ));
        }
        if self.s_louds.len() != self.s_len {
            return Err(Flaw::new(
                "LOUDS-Sparse sequence sizes disagree",
                Part::SLouds,
                0,
            ));
        }
        if self.height < self.dense_height {
            return Err(Flaw::new(
                "dense height above trie height",
                Part::Header,
                40,
            ));
        }
        if self.height == 0 {
            return if self.dense_nodes == 0 && self.s_len == 0 {
                Ok(())
            } else {
                Err(Flaw::new("empty trie with nodes", Part::Header, 48))
            };
        }
        // Invariant 5: the empty key lives beside the trie, never as the root's prefix key.
        if self.dense_height > 0 {
            if self.d_is_prefix.get(0) {
                return Err(Flaw::new("root holds a prefix key", Part::DIsPrefix, 0));
            }
        } else if self.s_len > 0 && self.sparse_terminator(0, self.sparse_end(0)) {
            return Err(Flaw::new("root holds a prefix key", Part::SLabels, 0));
        }
        let mut nodes = 1usize;
        let mut dense_node = 0usize;
        let mut leaf = 0usize;
        for _ in 0..self.dense_height {
            let end = dense_node
                .checked_add(nodes)
                .filter(|&e| e <= self.dense_nodes)
                .ok_or(Flaw::new("more dense nodes than encoded", Part::Header, 56))?;
            let mut children = 0usize;
            for n in dense_node..end {
                let (l, c) = (&dl[n * 4..n * 4 + 4], &dc[n * 4..n * 4 + 4]);
                if l.iter().all(|&x| x == 0) {
                    return Err(Flaw::new(
                        "dense node without labels",
                        Part::DLabels,
                        n * 256,
                    ));
                }
                if l.iter().zip(c).any(|(l, c)| c & !l != 0) {
                    let what = "dense branch with a child but no label";
                    return Err(Flaw::new(what, Part::DHasChild, n * 256));
                }
                // Leaves are numbered node by node: the prefix key, then the labels without
                // a child.
                if self.d_is_prefix.get(n) {
                    prefix_key(leaf)?;
                    leaf += 1;
                }
                let kids: usize = c.iter().map(|w| w.count_ones() as usize).sum();
                let labels: usize = l.iter().map(|w| w.count_ones() as usize).sum();
                leaf += labels - kids;
                children += kids;
            }
            dense_node = end;
            nodes = children;
        }
        if dense_node != self.dense_nodes {
            return Err(Flaw::new(
                "dense nodes left over",
                Part::DIsPrefix,
                dense_node,
            ));
        }
        let mut at = 0usize;
        for _ in self.dense_height..self.height {
            if nodes == 0 {
                return Err(Flaw::new("trie level without nodes", Part::Header, 48));
            }
            let level_start = at;
            for _ in 0..nodes {
                if at >= self.s_len || !self.s_louds.get(at) {
                    return Err(Flaw::new("sparse node missing", Part::SLouds, at));
                }
                let end = self.sparse_end(at);
                let term = self.sparse_terminator(at, end);
                if term {
                    prefix_key(self.dense_leaves + at - self.s_has_child.rank1(at))?;
                }
                let s = at + term as usize;
                if let Some(i) = self.s_labels[s..end].windows(2).position(|w| w[0] >= w[1]) {
                    let what = "sparse node labels out of order";
                    return Err(Flaw::new(what, Part::SLabels, s + i + 1));
                }
                at = end;
            }
            // Two ranks per level, not per node: the level's nodes are contiguous.
            nodes = self.s_has_child.rank1(at) - self.s_has_child.rank1(level_start);
        }
        if at != self.s_len {
            return Err(Flaw::new("sparse labels left over", Part::SLouds, at));
        }
        if nodes != 0 {
            return Err(Flaw::new("branches below the last level", Part::Header, 48));
        }
        Ok(())
    }

    /// True when the labels and the LOUDS-Sparse bits lie in a loaded image (the loader
    /// borrows all sections of an aligned image or copies the word sections of all).
    pub(crate) fn is_borrowed(&self) -> bool {
        self.s_labels.is_borrowed() && self.s_louds.bits().is_borrowed()
    }

    /// Number of leaves (keys in the trie).
    pub(crate) fn leaves(&self) -> usize {
        self.leaves
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.height == 0
    }

    pub(crate) fn parts(&self) -> TrieParts<'_> {
        TrieParts {
            dense_height: self.dense_height,
            height: self.height,
            d_labels: self.d_labels.bits(),
            d_has_child: self.d_has_child.bits(),
            d_is_prefix: self.d_is_prefix.bits(),
            s_labels: &self.s_labels,
            s_len: self.s_len,
            s_has_child: self.s_has_child.bits(),
            s_louds: self.s_louds.bits(),
        }
    }

    pub(crate) fn stats(&self) -> TrieStats {
        TrieStats {
            dense_levels: self.dense_height,
            levels: self.height,
            dense_nodes: self.dense_nodes,
            sparse_nodes: self.s_louds.count_ones(),
            sparse_labels: self.s_len,
            dense_bits: 8
                * (self.d_labels.memory_usage()
                    + self.d_has_child.memory_usage()
                    + self.d_is_prefix.memory_usage()),
            sparse_bits: 8
                * (self.s_len + self.s_has_child.memory_usage() + self.s_louds.memory_usage()),
        }
    }

    pub(crate) fn memory_usage(&self) -> usize {
        self.d_labels.memory_usage()
            + self.d_has_child.memory_usage()
            + self.d_is_prefix.memory_usage()
            + self.s_labels.bytes()
            + self.s_has_child.memory_usage()
            + self.s_louds.memory_usage()
    }

    // ---- navigation primitives -------------------------------------------------------------

    #[inline]
    fn sparse_end(&self, start: usize) -> usize {
        self.s_louds.next_one(start + 1).unwrap_or(self.s_len)
    }

    /// Whether the sparse node `[start, end)` begins with a terminator.
    #[inline]
    fn sparse_terminator(&self, start: usize, end: usize) -> bool {
        end - start > 1 && self.s_labels[start] == TERMINATOR && !self.s_has_child.get(start)
    }

    /// Whether the node starting at `start` on `level` holds a prefix key.
    #[inline]
    pub(crate) fn has_prefix_key(&self, level: usize, start: usize) -> bool {
        if level < self.dense_height {
            self.d_is_prefix.get(start / 256)
        } else {
            self.sparse_terminator(start, self.sparse_end(start))
        }
    }

    #[inline]
    pub(crate) fn has_child(&self, level: usize, pos: usize) -> bool {
        if level < self.dense_height {
            self.d_has_child.get(pos)
        } else {
            self.s_has_child.get(pos)
        }
    }

    #[inline]
    pub(crate) fn label(&self, level: usize, pos: usize) -> u8 {
        if level < self.dense_height {
            pos as u8
        } else {
            self.s_labels[pos]
        }
    }

    /// Start of the node the branch at `pos` on `level` leads to.
    #[inline]
    pub(crate) fn child(&self, level: usize, pos: usize) -> usize {
        let node = if level < self.dense_height {
            self.d_has_child.rank1(pos + 1)
        } else {
            self.dense_children + self.s_has_child.rank1(pos + 1)
        };
        if level + 1 < self.dense_height {
            node * 256
        } else {
            // A valid trie has the node; a corrupt one cannot pass `validate`.
            let start = self
                .s_louds
                .select1(node.wrapping_sub(self.dense_nodes))
                .unwrap_or(self.s_len);
            // The next step reads the node's labels and child bits (§3.6: prefetch across
            // sequences once the position is known).
            prefetch_read(self.s_labels.as_ptr().wrapping_add(start));
            prefetch_read(
                self.s_has_child
                    .bits()
                    .words()
                    .as_ptr()
                    .wrapping_add(start / 64),
            );
            start
        }
    }

    /// Leaf number of the branch at `pos` (which has no child) on `level`.
    #[inline]
    pub(crate) fn leaf(&self, level: usize, pos: usize) -> usize {
        if level < self.dense_height {
            self.d_labels.rank1(pos) - self.d_has_child.rank1(pos)
                + self.d_is_prefix.rank1(pos / 256 + 1)
        } else {
            self.dense_leaves + pos - self.s_has_child.rank1(pos)
        }
    }

    /// Leaf number of the prefix key of the node starting at `start` on `level`.
    #[inline]
    pub(crate) fn prefix_leaf(&self, level: usize, start: usize) -> usize {
        if level < self.dense_height {
            self.d_labels.rank1(start) - self.d_has_child.rank1(start)
                + self.d_is_prefix.rank1(start / 256)
        } else {
            self.leaf(level, start)
        }
    }

    /// First label of a node at or after byte offset `from` (dense), as a position.
    #[inline]
    fn dense_next(&self, start: usize, from: usize) -> Option<usize> {
        if from >= 256 {
            return None;
        }
        next_one(self.d_labels.bits().words(), start + from).filter(|&p| p < start + 256)
    }

    /// Last label of a node at or before byte offset `upto` (dense), as a position.
    #[inline]
    fn dense_prev(&self, start: usize, upto: usize) -> Option<usize> {
        prev_one(self.d_labels.bits().words(), start + upto).filter(|&p| p >= start)
    }

    /// The node's first item: `(pos, true)` for its prefix key, else its first label.
    #[inline]
    fn first_item(&self, level: usize, start: usize) -> (usize, bool) {
        if level < self.dense_height {
            if self.d_is_prefix.get(start / 256) {
                (start, true)
            } else {
                (self.dense_next(start, 0).unwrap_or(start), false)
            }
        } else {
            (start, self.sparse_terminator(start, self.sparse_end(start)))
        }
    }

    /// The node's last label.
    #[inline]
    fn last_item(&self, level: usize, start: usize) -> usize {
        if level < self.dense_height {
            self.dense_prev(start, 255).unwrap_or(start)
        } else {
            self.sparse_end(start) - 1
        }
    }

    /// The label after item `(pos, term)` in its node.
    #[inline]
    fn next_item(&self, level: usize, pos: usize, term: bool) -> Option<usize> {
        if level < self.dense_height {
            let start = pos & !255;
            let from = if term { 0 } else { pos % 256 + 1 };
            self.dense_next(start, from)
        } else {
            let n = pos + 1;
            (n < self.s_len && !self.s_louds.get(n)).then_some(n)
        }
    }

    /// The item before label `pos` in its node.
    #[inline]
    fn prev_item(&self, level: usize, pos: usize) -> Option<(usize, bool)> {
        if level < self.dense_height {
            let start = pos & !255;
            if !pos.is_multiple_of(256)
                && let Some(p) = self.dense_prev(start, pos % 256 - 1)
            {
                return Some((p, false));
            }
            self.d_is_prefix.get(start / 256).then_some((start, true))
        } else {
            if self.s_louds.get(pos) {
                return None;
            }
            let p = pos - 1;
            let term =
                self.s_louds.get(p) && self.s_labels[p] == TERMINATOR && !self.s_has_child.get(p);
            Some((p, term))
        }
    }

    /// First label `≥ b` of the node at `start` (its terminator excluded).
    #[inline]
    fn find_ge(&self, level: usize, start: usize, b: u8) -> Option<usize> {
        if level < self.dense_height {
            self.dense_next(start, b as usize)
        } else {
            let end = self.sparse_end(start);
            let s = start + self.sparse_terminator(start, end) as usize;
            labels::find_ge(&self.s_labels, s, end, b).map(|i| s + i)
        }
    }

    /// Last label `≤ b` of the node at `start` (its terminator excluded).
    #[inline]
    fn find_le(&self, level: usize, start: usize, b: u8) -> Option<usize> {
        if level < self.dense_height {
            self.dense_prev(start, b as usize)
        } else {
            let end = self.sparse_end(start);
            let s = start + self.sparse_terminator(start, end) as usize;
            let first_above = if b == u8::MAX {
                None
            } else {
                labels::find_ge(&self.s_labels, s, end, b + 1).map(|i| s + i)
            };
            let p = first_above.unwrap_or(end);
            (p > s).then(|| p - 1)
        }
    }

    /// Start of node number `node` if it lies on `level`, else the end of that level.
    fn node_pos(&self, level: usize, node: usize) -> usize {
        if level < self.dense_height {
            node * 256
        } else {
            self.s_louds
                .select1(node.wrapping_sub(self.dense_nodes))
                .unwrap_or(self.s_len)
        }
    }

    /// Branches with a child before position `pos` of `level`, over the whole trie.
    fn children_before(&self, level: usize, pos: usize) -> usize {
        if level < self.dense_height {
            self.d_has_child.rank1(pos)
        } else {
            self.dense_children + self.s_has_child.rank1(pos)
        }
    }

    /// Leaves of `level` (whose first node is `first`) before position `p`; the prefix key of
    /// the node holding `p` counts when `term_before`.
    fn leaves_before(&self, level: usize, first: usize, p: usize, term_before: bool) -> usize {
        if level < self.dense_height {
            let s = first * 256;
            let node = p / 256;
            let labels = self.d_labels.rank1(p) - self.d_labels.rank1(s);
            let children = self.d_has_child.rank1(p) - self.d_has_child.rank1(s);
            let prefixes = self.d_is_prefix.rank1(node) - self.d_is_prefix.rank1(first);
            let own = term_before && node < self.dense_nodes && self.d_is_prefix.get(node);
            labels - children + prefixes + own as usize
        } else {
            let s = self.node_pos(level, first);
            let p = p.max(s);
            (p - s) - (self.s_has_child.rank1(p) - self.s_has_child.rank1(s))
        }
    }

    /// Number of keys before the key at `path`, in key order: on each level, the leaves left
    /// of where the path (or, below its leaf, the first node after it) crosses that level.
    pub(crate) fn rank_of(&self, path: &Path) -> usize {
        let depth = path.pos.len();
        let mut first = 0usize;
        let mut nodes = 1usize;
        let mut total = 0;
        let mut boundary = 0usize;
        for level in 0..self.height {
            let (p, term_before) = if level < depth {
                (path.pos[level], !(level + 1 == depth && path.term))
            } else {
                let node = self.children_before(level - 1, boundary) + 1;
                (self.node_pos(level, node), false)
            };
            total += self.leaves_before(level, first, p, term_before);
            boundary = p;
            let start = self.node_pos(level, first);
            let end = self.node_pos(level, first + nodes);
            let children = self.children_before(level, end) - self.children_before(level, start);
            first += nodes;
            nodes = children;
        }
        total
    }

    /// Number of leaves on each level (leaves are numbered level by level, so level `l` owns
    /// the leaf numbers after those of levels `0..l`).
    pub(crate) fn leaves_per_level(&self) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.height);
        let (mut first, mut nodes) = (0usize, 1usize);
        for level in 0..self.height {
            let end_pos = self.node_pos(level, first + nodes);
            out.push(self.leaves_before(level, first, end_pos, false));
            let start = self.node_pos(level, first);
            let children =
                self.children_before(level, end_pos) - self.children_before(level, start);
            first += nodes;
            nodes = children;
        }
        out
    }

    /// Number of keys from the key at `a` to the key at `b`, both included (0 if `b < a`).
    pub(crate) fn count_between(&self, a: &Path, b: &Path) -> usize {
        (self.rank_of(b) + 1).saturating_sub(self.rank_of(a))
    }

    /// Exact search: the leaf where `key` (non-empty) would end, the length of the prefix of
    /// `key` the trie consumed to reach it, and the leaf's level; `None` when no key can match.
    #[inline]
    pub(crate) fn lookup(&self, key: &[u8]) -> Option<(usize, usize, usize)> {
        debug_assert!(!key.is_empty());
        if self.height == 0 {
            return None;
        }
        let mut level = 0;
        let mut pos = 0;
        while level < self.dense_height {
            if level == key.len() {
                let node = pos / 256;
                return self
                    .d_is_prefix
                    .get(node)
                    .then(|| (self.prefix_leaf(level, pos), level, level));
            }
            let p = pos + key[level] as usize;
            if !self.d_labels.get(p) {
                return None;
            }
            if !self.d_has_child.get(p) {
                return Some((self.leaf(level, p), level + 1, level));
            }
            pos = self.child(level, p);
            level += 1;
        }
        loop {
            let end = self.sparse_end(pos);
            let term = self.sparse_terminator(pos, end);
            if level == key.len() {
                return term.then(|| (self.leaf(level, pos), level, level));
            }
            let s = pos + term as usize;
            let p = s + labels::find_eq(&self.s_labels, s, end, key[level])?;
            if !self.s_has_child.get(p) {
                return Some((self.leaf(level, p), level + 1, level));
            }
            pos = self.child(level, p);
            level += 1;
        }
    }
}

/// Queries a batched lookup keeps in flight.
pub(crate) const LANES: usize = 16;

/// Where one query of a batched lookup stands.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// At the dense node starting at `pos`.
    Dense(usize),
    /// About to find where sparse node number `node` starts.
    Select(usize),
    /// At the sparse node starting at `pos`.
    Sparse(usize),
    /// Answered, or no query.
    Idle,
}

impl Trie {
    /// [`lookup`](Self::lookup) for many keys at once: up to [`LANES`] queries advance in turn,
    /// one level (or one select) per turn, each turn prefetching what the query reads next, so
    /// the cache misses of different queries overlap instead of queueing (the MLP of
    /// mlp-data-structures.txt applied to the succinct trie). `out[i]` gets the answer for
    /// `keys[i]` (empty keys get `None`; callers answer them beside the trie).
    pub(crate) fn lookup_batch(&self, keys: &[&[u8]], out: &mut [Option<(usize, usize, usize)>]) {
        debug_assert_eq!(keys.len(), out.len());
        let mut lanes = [(0usize, 0usize, Step::Idle); LANES];
        let mut next = 0;
        let mut active = 0;
        let root = if self.dense_height > 0 {
            Step::Dense(0)
        } else {
            Step::Sparse(0)
        };
        loop {
            for lane in lanes.iter_mut() {
                if let Step::Idle = lane.2 {
                    // Refill with the next non-trivial query.
                    while next < keys.len() {
                        let q = next;
                        next += 1;
                        out[q] = None;
                        if !keys[q].is_empty() && self.height > 0 {
                            *lane = (q, 0, root);
                            active += 1;
                            break;
                        }
                    }
                    if let Step::Idle = lane.2 {
                        continue;
                    }
                }
                let (q, level, step) = *lane;
                let key = keys[q];
                let done = |lane: &mut (usize, usize, Step), active: &mut usize| {
                    lane.2 = Step::Idle;
                    *active -= 1;
                };
                match step {
                    Step::Dense(pos) => {
                        if level == key.len() {
                            out[q] = self
                                .d_is_prefix
                                .get(pos / 256)
                                .then(|| (self.prefix_leaf(level, pos), level, level));
                            done(lane, &mut active);
                            continue;
                        }
                        let p = pos + key[level] as usize;
                        if !self.d_labels.get(p) {
                            done(lane, &mut active);
                            continue;
                        }
                        if !self.d_has_child.get(p) {
                            out[q] = Some((self.leaf(level, p), level + 1, level));
                            done(lane, &mut active);
                            continue;
                        }
                        let node = self.d_has_child.rank1(p + 1);
                        lane.1 = level + 1;
                        if level + 1 < self.dense_height {
                            let np = node * 256;
                            let b = key.get(level + 1).map_or(0, |&b| b as usize);
                            self.d_labels.prefetch(np + b);
                            self.d_has_child.prefetch(np + b);
                            lane.2 = Step::Dense(np);
                        } else {
                            self.s_louds
                                .prefetch_select(node.wrapping_sub(self.dense_nodes));
                            lane.2 = Step::Select(node);
                        }
                    }
                    Step::Select(node) => {
                        let start = self
                            .s_louds
                            .select1(node.wrapping_sub(self.dense_nodes))
                            .unwrap_or(self.s_len);
                        prefetch_read(self.s_labels.as_ptr().wrapping_add(start));
                        self.s_has_child.prefetch(start);
                        lane.2 = Step::Sparse(start);
                    }
                    Step::Sparse(pos) => {
                        let end = self.sparse_end(pos);
                        let term = self.sparse_terminator(pos, end);
                        if level == key.len() {
                            out[q] = term.then(|| (self.leaf(level, pos), level, level));
                            done(lane, &mut active);
                            continue;
                        }
                        let s = pos + term as usize;
                        let Some(i) = labels::find_eq(&self.s_labels, s, end, key[level]) else {
                            done(lane, &mut active);
                            continue;
                        };
                        let p = s + i;
                        if !self.s_has_child.get(p) {
                            out[q] = Some((self.leaf(level, p), level + 1, level));
                            done(lane, &mut active);
                            continue;
                        }
                        let node = self.dense_children + self.s_has_child.rank1(p + 1);
                        self.s_louds
                            .prefetch_select(node.wrapping_sub(self.dense_nodes));
                        lane.1 = level + 1;
                        lane.2 = Step::Select(node);
                    }
                    Step::Idle => {}
                }
            }
            if active == 0 && next >= keys.len() {
                return;
            }
        }
    }
}

/// Where one seek of a batched seek stands.
#[derive(Clone, Copy, Debug)]
enum Seek {
    /// Searching the node starting at `pos` for the key's byte.
    Descend(usize),
    /// Taking the first item of the node starting at `pos`, down to a leaf.
    Leftmost(usize),
    /// About to find where sparse node `node` starts, then descend or go leftmost.
    Select(usize, bool),
    /// Answered.
    Done,
}

impl Trie {
    /// Moves a seek to the child of the branch at `pos` on `level`: a dense child is reached
    /// directly (its label word prefetched), a sparse one after a select step (its LOUDS word
    /// prefetched now).
    fn seek_child(&self, level: usize, pos: usize, key: &[u8], leftmost: bool) -> Seek {
        let node = if level < self.dense_height {
            self.d_has_child.rank1(pos + 1)
        } else {
            self.dense_children + self.s_has_child.rank1(pos + 1)
        };
        if level + 1 < self.dense_height {
            let start = node * 256;
            let b = if leftmost {
                0
            } else {
                key.get(level + 1).map_or(0, |&b| b as usize)
            };
            self.d_labels.prefetch(start + b);
            self.d_has_child.prefetch(start + b);
            if leftmost {
                Seek::Leftmost(start)
            } else {
                Seek::Descend(start)
            }
        } else {
            self.s_louds
                .prefetch_select(node.wrapping_sub(self.dense_nodes));
            Seek::Select(node, leftmost)
        }
    }

    /// [`Path::seek_ge`] for many keys at once, interleaved like
    /// [`lookup_batch`](Self::lookup_batch): up to [`LANES`] seeks advance in turn, one level
    /// or one select per turn, prefetching what each reads next. `paths[i]` ends at the first
    /// leaf `≥ keys[i]` (`>` when `strict[i]`) and `found[i]` says whether there is one; `cmp`
    /// is the leaf comparison of [`LeafCmp`] with the query number first. The rare steps that
    /// climb back up (no label at or above the key's byte) run synchronously.
    pub(crate) fn seek_ge_batch(
        &self,
        keys: &[&[u8]],
        strict: &[bool],
        paths: &mut [Path],
        found: &mut [bool],
        cmp: &dyn Fn(usize, usize, usize) -> Option<Ordering>,
    ) {
        let mut lanes = [(0usize, 0usize, Seek::Done); LANES];
        let mut next = 0;
        let mut active = 0;
        let root = Seek::Descend(0);
        loop {
            for lane in lanes.iter_mut() {
                if let Seek::Done = lane.2 {
                    while next < keys.len() {
                        let q = next;
                        next += 1;
                        paths[q].clear();
                        found[q] = false;
                        if self.height > 0 {
                            *lane = (q, 0, root);
                            active += 1;
                            break;
                        }
                    }
                    if let Seek::Done = lane.2 {
                        continue;
                    }
                }
                let (q, level, mode) = *lane;
                let key = keys[q];
                let path = &mut paths[q];
                let outcome: Option<bool> = match mode {
                    Seek::Select(node, leftmost) => {
                        let start = self
                            .s_louds
                            .select1(node.wrapping_sub(self.dense_nodes))
                            .unwrap_or(self.s_len);
                        prefetch_read(self.s_labels.as_ptr().wrapping_add(start));
                        self.s_has_child.prefetch(start);
                        lane.2 = if leftmost {
                            Seek::Leftmost(start)
                        } else {
                            Seek::Descend(start)
                        };
                        None
                    }
                    Seek::Leftmost(start) => {
                        path.enter(level, start);
                        let (p, term) = self.first_item(level, start);
                        path.push(self, p, term);
                        if term || !self.has_child(level, p) {
                            Some(true)
                        } else {
                            lane.1 = level + 1;
                            lane.2 = self.seek_child(level, p, key, true);
                            None
                        }
                    }
                    Seek::Descend(start) => {
                        path.enter(level, start);
                        if level == key.len() {
                            path.leftmost(self, level, start);
                            if strict[q] && path.term && path.pos.len() == level + 1 {
                                Some(path.next(self))
                            } else {
                                Some(true)
                            }
                        } else {
                            let b = key[level];
                            match self.find_ge(level, start, b) {
                                None => Some(path.next(self)),
                                Some(p) => {
                                    path.push(self, p, false);
                                    let child = self.has_child(level, p);
                                    if self.label(level, p) > b {
                                        if child {
                                            lane.1 = level + 1;
                                            lane.2 = self.seek_child(level, p, key, true);
                                            None
                                        } else {
                                            Some(true)
                                        }
                                    } else if child {
                                        lane.1 = level + 1;
                                        lane.2 = self.seek_child(level, p, key, false);
                                        None
                                    } else {
                                        Some(match cmp(q, level, p) {
                                            Some(Ordering::Less) => path.next(self),
                                            Some(Ordering::Equal) if strict[q] => path.next(self),
                                            _ => true,
                                        })
                                    }
                                }
                            }
                        }
                    }
                    Seek::Done => None,
                };
                if let Some(f) = outcome {
                    found[q] = f;
                    lane.2 = Seek::Done;
                    active -= 1;
                }
            }
            if active == 0 && next >= keys.len() {
                return;
            }
        }
    }
}

impl Trie {
    /// Seeks each of `n` start bounds (`bound(i)`: `≥` or `>` its key, the first key when
    /// unbounded) with [`seek_ge_batch`](Self::seek_ge_batch), 64 at a time on this thread's
    /// spare paths, then calls `each(i, path, found)` in order. `cmp(key, level, pos)` is the
    /// leaf comparison of [`LeafCmp`] for the seek's key.
    pub(crate) fn seek_ge_many<'k>(
        &self,
        n: usize,
        bound: impl Fn(usize) -> core::ops::Bound<&'k [u8]>,
        cmp: KeyLeafCmp,
        mut each: impl FnMut(usize, &mut Path, bool),
    ) {
        const CHUNK: usize = 64;
        let mut paths = spare_paths(CHUNK.min(n));
        let mut starts: [&[u8]; CHUNK] = [&[]; CHUNK];
        let mut strict = [false; CHUNK];
        let mut found = [false; CHUNK];
        for base in (0..n).step_by(CHUNK) {
            let m = CHUNK.min(n - base);
            for i in 0..m {
                // No bound seeks like `≥` the empty key: the trie's first key.
                (starts[i], strict[i]) = bound_key(bound(base + i)).unwrap_or((&[], false));
            }
            let leaf_cmp = |q: usize, level, pos| cmp(starts[q], level, pos);
            self.seek_ge_batch(
                &starts[..m],
                &strict[..m],
                &mut paths[..m],
                &mut found[..m],
                &leaf_cmp,
            );
            for i in 0..m {
                each(base + i, &mut paths[i], found[i]);
            }
        }
        recycle_paths(paths);
    }
}

/// The encoded parts of a trie, for serialization.
pub(crate) struct TrieParts<'a> {
    pub(crate) dense_height: usize,
    pub(crate) height: usize,
    pub(crate) d_labels: &'a FrozenBits,
    pub(crate) d_has_child: &'a FrozenBits,
    pub(crate) d_is_prefix: &'a FrozenBits,
    /// Labels and their padding.
    pub(crate) s_labels: &'a [u8],
    pub(crate) s_len: usize,
    pub(crate) s_has_child: &'a FrozenBits,
    pub(crate) s_louds: &'a FrozenBits,
}

fn is_terminator(labels: &[u8], has_child: &BitVec, start: usize, end: usize) -> bool {
    end - start > 1 && labels[start] == TERMINATOR && has_child.get(start) == Some(false)
}

fn append(dst: &mut BitVec, src: &BitVec) {
    let mut left = src.len();
    for &w in src.words() {
        let n = left.min(64) as u32;
        dst.push_bits(w, n);
        left -= n as usize;
    }
}

/// How many top levels to encode dense: the longest run of levels from the root each of
/// which either keeps the dense part within `1/ratio` of the sparse rest (§3.4's cutoff R) or
/// is no larger dense than sparse (§3.5: nodes with more than about 51 branches; with rank
/// directories counted, about 76). The second rule only ever saves space, and a dense level
/// costs one bitmap probe where a sparse one costs a select and a label search.
fn choose_dense_height(levels: &[Level], ratio: u32) -> usize {
    // Bits with directories: dense two 256-bit maps with 50% rank tables and a prefix bit per
    // node; sparse a label byte, a child bit with a 6.25% rank table, and a LOUDS bit.
    let dense = |l: &Level| l.nodes() as u128 * 770;
    let sparse = |l: &Level| l.labels.len() as u128 * 101 / 10;
    let mut dense_sum = 0u128;
    let mut sparse_rest: u128 = levels.iter().map(sparse).sum();
    for (h, lv) in levels.iter().enumerate() {
        dense_sum += dense(lv);
        sparse_rest -= sparse(lv);
        let within_ratio = dense_sum * ratio as u128 <= sparse_rest;
        if !within_ratio && dense(lv) > sparse(lv) {
            return h;
        }
    }
    levels.len()
}

/// A root-to-leaf position in a trie: one cursor per level (§3.4's per-level cursors) and the
/// key those labels spell.
#[derive(Clone, Debug, Default)]
pub(crate) struct Path {
    /// Position on each level from the root; the last is the leaf.
    pos: Vec<usize>,
    /// The leaf is the prefix key of the node at `pos[last]`.
    term: bool,
    /// Labels on the path (the leaf's label included unless `term`).
    key: Vec<u8>,
    /// Start of the node last entered on each level since the path was positioned, moving in
    /// `dir`. At least as long as `pos`; deeper entries are nodes of subtrees already left.
    /// Moving on through the trie in key order enters the nodes of each level in level order,
    /// so the next subtree's node is the one after (or, backwards, before) the last entered:
    /// §3.4's per-level cursors, which step along each level instead of a rank and a select.
    nodes: Vec<usize>,
    dir: Dir,
}

/// Which way a path has been moving since it was positioned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Dir {
    #[default]
    Unmoved,
    Forward,
    Backward,
}

/// What a leaf's stored suffix says about a probe, given the leaf's level and position (the
/// trie matched the probe's first `level + 1` bytes): the order of the stored key against the
/// probe, or `None` when the store cannot tell. Taking the position rather than the leaf
/// number lets a store without suffixes skip the rank that numbers the leaf.
pub(crate) type LeafCmp<'a> = &'a dyn Fn(usize, usize) -> Option<Ordering>;

/// A [`LeafCmp`] that also takes the probe key first, for seeks of many keys.
pub(crate) type KeyLeafCmp<'a> = &'a dyn Fn(&[u8], usize, usize) -> Option<Ordering>;

std::thread_local! {
    /// One spare path per thread, so one-shot seeks (range filters, `lower_bound`) reuse its
    /// buffers instead of allocating two vectors per query.
    static SPARE: core::cell::Cell<Path> = const { core::cell::Cell::new(Path::new()) };
    /// Spare paths for batched seeks, likewise.
    static SPARE_BATCH: core::cell::Cell<Vec<Path>> = const { core::cell::Cell::new(Vec::new()) };
}

/// A bound's key and whether it excludes the key; `None` for no bound.
#[inline]
pub(crate) fn bound_key(b: core::ops::Bound<&[u8]>) -> Option<(&[u8], bool)> {
    match b {
        core::ops::Bound::Included(k) => Some((k, false)),
        core::ops::Bound::Excluded(k) => Some((k, true)),
        core::ops::Bound::Unbounded => None,
    }
}

/// `n` empty paths for a batched seek, reusing this thread's spares; give them back with
/// [`recycle_paths`].
fn spare_paths(n: usize) -> Vec<Path> {
    let mut v = SPARE_BATCH.with(|s| s.take());
    v.resize_with(n.max(v.len()), Path::new);
    v
}

/// Returns paths taken with [`spare_paths`].
fn recycle_paths(v: Vec<Path>) {
    SPARE_BATCH.with(|s| s.set(v));
}

impl Path {
    pub(crate) const fn new() -> Path {
        Path {
            pos: Vec::new(),
            term: false,
            key: Vec::new(),
            nodes: Vec::new(),
            dir: Dir::Unmoved,
        }
    }

    /// This thread's spare path (empty, with whatever capacity it has); give it back with
    /// [`recycle`](Self::recycle).
    pub(crate) fn spare() -> Path {
        SPARE.with(|s| s.take())
    }

    /// Returns a path taken with [`spare`](Self::spare).
    pub(crate) fn recycle(mut self) {
        self.clear();
        SPARE.with(|s| s.set(self));
    }

    pub(crate) fn is_valid(&self) -> bool {
        !self.pos.is_empty()
    }

    pub(crate) fn clear(&mut self) {
        self.pos.clear();
        self.key.clear();
        self.term = false;
        self.nodes.clear();
        self.dir = Dir::Unmoved;
    }

    /// Records entering the node starting at `start` on `level` (one below the path).
    #[inline]
    fn enter(&mut self, level: usize, start: usize) {
        debug_assert!(level <= self.nodes.len() && level == self.pos.len());
        if level < self.nodes.len() {
            self.nodes[level] = start;
        } else {
            self.nodes.push(start);
        }
    }

    /// Turns the path to move in `dir`: a change of direction forgets the nodes below the path
    /// (they were entered going the other way).
    #[inline]
    fn turn(&mut self, dir: Dir) {
        if self.dir != dir {
            if self.dir != Dir::Unmoved {
                self.nodes.truncate(self.pos.len());
            }
            self.dir = dir;
        }
    }

    /// Start of the child of the branch at `pos` on `level`, moving forward: the node after the
    /// last one entered on `level + 1` when known, else by rank and select.
    #[inline]
    fn child_forward(&self, t: &Trie, level: usize, pos: usize) -> usize {
        let below = level + 1;
        let start = match self.nodes.get(below) {
            Some(&last) if self.dir == Dir::Forward => {
                if below < t.dense_height {
                    last + 256
                } else {
                    t.sparse_end(last)
                }
            }
            _ => return t.child(level, pos),
        };
        debug_assert_eq!(start, t.child(level, pos), "per-level cursor out of step");
        start
    }

    /// Start of the child of the branch at `pos` on `level`, moving backward: the node before
    /// the last one entered on `level + 1` when known, else by rank and select.
    #[inline]
    fn child_backward(&self, t: &Trie, level: usize, pos: usize) -> usize {
        let below = level + 1;
        let start = match self.nodes.get(below) {
            Some(&last) if self.dir == Dir::Backward && last > 0 => {
                if below < t.dense_height {
                    last - 256
                } else {
                    t.s_louds.prev_one(last - 1).unwrap_or(0)
                }
            }
            _ => return t.child(level, pos),
        };
        debug_assert_eq!(start, t.child(level, pos), "per-level cursor out of step");
        start
    }

    /// The labels on the path: the key's unique prefix.
    pub(crate) fn key(&self) -> &[u8] {
        &self.key
    }

    /// Level of the current leaf.
    pub(crate) fn level(&self) -> usize {
        self.pos.len().saturating_sub(1)
    }

    /// Leaf number of the current position.
    pub(crate) fn leaf(&self, t: &Trie) -> usize {
        let l = self.pos.len() - 1;
        if self.term {
            t.prefix_leaf(l, self.pos[l])
        } else {
            t.leaf(l, self.pos[l])
        }
    }

    fn push(&mut self, t: &Trie, pos: usize, term: bool) {
        let level = self.pos.len();
        self.pos.push(pos);
        self.term = term;
        if !term {
            self.key.push(t.label(level, pos));
        }
    }

    fn pop(&mut self) -> (usize, bool) {
        let p = self.pos.pop().unwrap_or(0);
        let t = self.term;
        if !t {
            self.key.pop();
        }
        self.term = false;
        (p, t)
    }

    fn leftmost(&mut self, t: &Trie, mut level: usize, mut start: usize) {
        loop {
            self.enter(level, start);
            let (p, term) = t.first_item(level, start);
            self.push(t, p, term);
            if term || !t.has_child(level, p) {
                return;
            }
            start = self.child_forward(t, level, p);
            level += 1;
        }
    }

    fn rightmost(&mut self, t: &Trie, mut level: usize, mut start: usize) {
        loop {
            self.enter(level, start);
            let p = t.last_item(level, start);
            self.push(t, p, false);
            if !t.has_child(level, p) {
                return;
            }
            start = self.child_backward(t, level, p);
            level += 1;
        }
    }

    /// Positions at the first leaf; false for an empty trie.
    pub(crate) fn first(&mut self, t: &Trie) -> bool {
        self.clear();
        if t.is_empty() {
            return false;
        }
        self.leftmost(t, 0, 0);
        true
    }

    /// Positions at the last leaf; false for an empty trie.
    pub(crate) fn last(&mut self, t: &Trie) -> bool {
        self.clear();
        if t.is_empty() {
            return false;
        }
        self.rightmost(t, 0, 0);
        true
    }

    /// Moves to the next leaf; false (and cleared) past the last.
    pub(crate) fn next(&mut self, t: &Trie) -> bool {
        self.turn(Dir::Forward);
        while self.is_valid() {
            let level = self.pos.len() - 1;
            let (p, term) = self.pop();
            if let Some(n) = t.next_item(level, p, term) {
                self.push(t, n, false);
                if t.has_child(level, n) {
                    let child = self.child_forward(t, level, n);
                    self.leftmost(t, level + 1, child);
                }
                return true;
            }
        }
        false
    }

    /// Moves to the previous leaf; false (and cleared) before the first.
    pub(crate) fn prev(&mut self, t: &Trie) -> bool {
        self.turn(Dir::Backward);
        while self.is_valid() {
            let level = self.pos.len() - 1;
            let (p, term) = self.pop();
            if term {
                continue;
            }
            if let Some((n, nterm)) = t.prev_item(level, p) {
                self.push(t, n, nterm);
                if !nterm && t.has_child(level, n) {
                    let child = self.child_backward(t, level, n);
                    self.rightmost(t, level + 1, child);
                }
                return true;
            }
        }
        false
    }

    /// Positions at the first leaf whose key is `≥ key` (`> key` when `strict`). `cmp` orders a
    /// leaf's stored key against `key` when the trie path alone matched (see [`LeafCmp`]);
    /// `None` (unknown) keeps the leaf. False when no leaf qualifies.
    pub(crate) fn seek_ge(&mut self, t: &Trie, key: &[u8], strict: bool, cmp: LeafCmp) -> bool {
        self.clear();
        if t.is_empty() {
            return false;
        }
        let mut level = 0;
        let mut start = 0;
        loop {
            self.enter(level, start);
            if level == key.len() {
                // Everything below is ≥ key; the prefix key, if any, equals it.
                self.leftmost(t, level, start);
                if strict && self.term && self.pos.len() == level + 1 {
                    return self.next(t);
                }
                return true;
            }
            let b = key[level];
            let Some(p) = t.find_ge(level, start, b) else {
                // Every key of this node is < key: continue after the branch above.
                return self.next(t);
            };
            self.push(t, p, false);
            let child = t.has_child(level, p);
            if t.label(level, p) > b {
                if child {
                    self.leftmost(t, level + 1, t.child(level, p));
                }
                return true;
            }
            if child {
                start = t.child(level, p);
                level += 1;
                continue;
            }
            return match cmp(level, p) {
                Some(Ordering::Less) => self.next(t),
                Some(Ordering::Equal) if strict => self.next(t),
                _ => true,
            };
        }
    }

    /// Positions at the last leaf whose key is `≤ key` (`< key` when `strict`); `cmp` as for
    /// [`seek_ge`](Self::seek_ge), `None` keeping the leaf.
    pub(crate) fn seek_le(&mut self, t: &Trie, key: &[u8], strict: bool, cmp: LeafCmp) -> bool {
        self.clear();
        if t.is_empty() {
            return false;
        }
        let mut level = 0;
        let mut start = 0;
        loop {
            self.enter(level, start);
            if level == key.len() {
                // Everything below is > key except the prefix key, which equals it.
                if !strict && t.has_prefix_key(level, start) {
                    self.push(t, start, true);
                    return true;
                }
                return self.prev(t);
            }
            let b = key[level];
            let Some(p) = t.find_le(level, start, b) else {
                if t.has_prefix_key(level, start) {
                    // The prefix key is key[..level], shorter than key.
                    self.push(t, start, true);
                    return true;
                }
                return self.prev(t);
            };
            self.push(t, p, false);
            let child = t.has_child(level, p);
            if t.label(level, p) < b {
                if child {
                    self.rightmost(t, level + 1, t.child(level, p));
                }
                return true;
            }
            if child {
                start = t.child(level, p);
                level += 1;
                continue;
            }
            return match cmp(level, p) {
                Some(Ordering::Greater) => self.prev(t),
                Some(Ordering::Equal) if strict => self.prev(t),
                _ => true,
            };
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::fst::raw::build::LevelBuilder;
    use crate::fst::raw::suffix::SuffixKind;

    pub(crate) fn trie_of(keys: &[&[u8]], ratio: u32) -> Trie {
        let mut b = LevelBuilder::new(SuffixKind::None);
        for (i, k) in keys.iter().enumerate() {
            b.push(k, i as u64).unwrap();
        }
        b.finish_levels();
        Trie::from_levels(&b.levels, ratio).unwrap()
    }

    #[test]
    fn iteration_spells_unique_prefixes_in_order_both_ways() {
        let keys: [&[u8]; 7] = [b"a", b"ab", b"abc", b"ba", b"b\xff", b"b\xff\xff", b"c"];
        for ratio in [0, 1, 64, u32::MAX] {
            let t = trie_of(&keys, ratio);
            t.validate(&mut |_| Ok(())).unwrap();
            let mut p = Path::default();
            let mut fwd = Vec::new();
            let mut ok = p.first(&t);
            while ok {
                fwd.push((p.key().to_vec(), p.leaf(&t)));
                ok = p.next(&t);
            }
            let want: Vec<&[u8]> = vec![b"a", b"ab", b"abc", b"ba", b"b\xff", b"b\xff\xff", b"c"];
            assert_eq!(
                fwd.iter().map(|(k, _)| k.as_slice()).collect::<Vec<_>>(),
                want,
                "ratio {ratio}"
            );
            let mut leaves: Vec<usize> = fwd.iter().map(|x| x.1).collect();
            leaves.sort();
            assert_eq!(leaves, (0..keys.len()).collect::<Vec<_>>());
            let mut back = Vec::new();
            let mut ok = p.last(&t);
            while ok {
                back.push(p.key().to_vec());
                ok = p.prev(&t);
            }
            back.reverse();
            assert_eq!(back, fwd.iter().map(|x| x.0.clone()).collect::<Vec<_>>());
        }
    }
}
