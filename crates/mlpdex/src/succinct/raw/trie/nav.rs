//! The navigation primitives every query is made of: a node's extent and terminator, a branch's
//! label, child and leaf number, and the items of a node in order.

use super::super::build::TERMINATOR;
use super::Trie;
use crate::substrate::labels;
use crate::substrate::popcount::{Popcount, dispatch};
use crate::substrate::prefetch::prefetch_read;
use crate::substrate::rank::{next_one, next_zero, prev_one};

/// A node's entry of the child start directory, read when a walk reaches the node: see
/// [`Trie::child_hint`].
#[derive(Clone, Copy, Debug)]
pub(super) struct ChildHint {
    /// The child-bit word the entry belongs to.
    word: usize,
    /// The entry: where the children of that word's branches begin.
    from: usize,
}

impl Trie {
    #[inline]
    pub(super) fn sparse_end(&self, start: usize) -> usize {
        self.s_louds.next_one(start + 1).unwrap_or(self.s_len)
    }

    /// Number of chain bytes the sparse node starting at `start` opens with (see `compress`).
    #[inline]
    pub(crate) fn chain_len(&self, start: usize) -> usize {
        if !self.folded {
            return 0;
        }
        next_zero(self.s_chain.bits().words(), start) - start
    }

    /// The `len` chain bytes of the sparse node starting at `start`.
    #[inline]
    pub(crate) fn chain(&self, start: usize, len: usize) -> &[u8] {
        &self.s_labels[start..start + len]
    }

    /// Position of the first item (after the chain) of the node starting at `start`.
    #[inline]
    pub(super) fn sparse_items(&self, start: usize) -> usize {
        start + self.chain_len(start)
    }

    /// Whether the sparse node whose items are `[items, end)` begins with a terminator.
    #[inline]
    pub(super) fn sparse_terminator(&self, items: usize, end: usize) -> bool {
        end - items > 1 && self.s_labels[items] == TERMINATOR && !self.s_has_child.get(items)
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
        dispatch!(p => self.child_with(p, level, pos))
    }

    /// [`child`](Self::child) with the popcount chosen by the caller: the walks of one query
    /// dispatch once ([`dispatch!`]), not once per rank or select.
    #[inline(always)]
    pub(super) fn child_with<P: Popcount>(&self, p: P, level: usize, pos: usize) -> usize {
        if level >= self.dense_height {
            return self.sparse_child_with(p, pos, None);
        }
        let node = self.d_has_child.rank1_with(p, pos + 1);
        if level + 1 < self.dense_height {
            node * 256
        } else {
            // From the last dense level to the first sparse one: a select. A valid trie has
            // the node; a corrupt one cannot pass `validate`.
            let start = self
                .s_louds
                .select1_with(p, node.wrapping_sub(self.dense_nodes))
                .unwrap_or(self.s_len);
            self.prefetch_node(start);
            start
        }
    }

    /// [`child_with`](Self::child_with) with the hint read on reaching a sparse node.
    #[inline(always)]
    pub(super) fn child_hinted<P: Popcount>(
        &self,
        p: P,
        level: usize,
        pos: usize,
        hint: Option<ChildHint>,
    ) -> usize {
        if level >= self.dense_height {
            self.sparse_child_with(p, pos, hint)
        } else {
            self.child_with(p, level, pos)
        }
    }

    /// The child start directory's entry for the child-bit word of sparse position `at` (see
    /// [`Trie::s_child_starts`]), with the LOUDS bits there prefetched. A walk reads it as it
    /// reaches a node, before searching the labels, so that the LOUDS scan of its child step
    /// finds its words on the way instead of after a rank and a select sample.
    #[inline(always)]
    pub(super) fn child_hint(&self, at: usize) -> ChildHint {
        let word = at / 64;
        let from = self.child_start_entry(word);
        self.s_louds.prefetch_at(from);
        ChildHint { word, from }
    }

    #[inline(always)]
    pub(super) fn child_start_entry(&self, word: usize) -> usize {
        self.s_child_starts
            .get(word)
            .map_or(self.s_len, |&c| c as usize)
    }

    /// Branches with a child before sparse position `pos` in its child-bit word.
    #[inline(always)]
    pub(super) fn children_before_in_word<P: Popcount>(&self, p: P, pos: usize) -> usize {
        let word = self
            .s_has_child
            .bits()
            .words()
            .get(pos / 64)
            .copied()
            .unwrap_or(0);
        p.count(word & ((1u64 << (pos % 64)) - 1)) as usize
    }

    /// Start of the node the branch at sparse position `pos` (which has a child) leads to:
    /// the directory entry of its word (`hint`'s when it is that word's, read when the walk
    /// reached the node; else read now), then as many LOUDS
    /// ones further as the word has branches with a child before `pos`. No rank and no select
    /// sample: one short scan of LOUDS words from a position known when the node was reached.
    #[inline(always)]
    pub(super) fn sparse_child_with<P: Popcount>(
        &self,
        p: P,
        pos: usize,
        hint: Option<ChildHint>,
    ) -> usize {
        let word = pos / 64;
        let from = match hint {
            Some(h) if h.word == word => h.from,
            _ => self.child_start_entry(word),
        };
        let start = self
            .s_louds
            .select_from_with(p, from, self.children_before_in_word(p, pos));
        debug_assert_eq!(
            start,
            self.s_louds
                .select1(
                    (self.dense_children + self.s_has_child.rank1(pos + 1))
                        .wrapping_sub(self.dense_nodes)
                )
                .unwrap_or(self.s_len),
            "child start directory disagrees with rank and select at {pos}"
        );
        self.prefetch_node(start);
        start
    }

    /// Prefetches what a step at the sparse node starting at `start` reads first: its labels,
    /// its child bits with their rank directory (for the leaf number where a walk ends), its
    /// chain bits, and its entry of the child start directory (§3.6: prefetch across
    /// sequences once the position is known).
    #[inline(always)]
    pub(super) fn prefetch_node(&self, start: usize) {
        prefetch_read(self.s_labels.as_ptr().wrapping_add(start));
        self.s_has_child.prefetch(start);
        if self.folded {
            self.s_chain.prefetch(start);
        }
        prefetch_read(self.s_child_starts.as_ptr().wrapping_add(start / 64));
    }

    /// Leaf number of the branch at `pos` (which has no child) on `level`.
    #[inline]
    pub(crate) fn leaf(&self, level: usize, pos: usize) -> usize {
        dispatch!(p => self.leaf_with(p, level, pos))
    }

    /// [`leaf`](Self::leaf) with the popcount chosen by the caller.
    #[inline(always)]
    pub(super) fn leaf_with<P: Popcount>(&self, p: P, level: usize, pos: usize) -> usize {
        if level < self.dense_height {
            self.d_labels.rank1_with(p, pos) - self.d_has_child.rank1_with(p, pos)
                + self.d_is_prefix.rank1_with(p, pos / 256 + 1)
        } else {
            let chained = if self.folded {
                self.s_chain.rank1_with(p, pos)
            } else {
                0
            };
            self.dense_leaves + pos - self.s_has_child.rank1_with(p, pos) - chained
        }
    }

    /// Leaf number of the prefix key of the node starting at `start` on `level` (a sparse
    /// node's terminator position: its first item), with the popcount chosen by the caller.
    #[inline(always)]
    pub(super) fn prefix_leaf_with<P: Popcount>(&self, p: P, level: usize, start: usize) -> usize {
        if level < self.dense_height {
            self.d_labels.rank1_with(p, start) - self.d_has_child.rank1_with(p, start)
                + self.d_is_prefix.rank1_with(p, start / 256)
        } else {
            self.leaf_with(p, level, start)
        }
    }

    /// First label of a node at or after byte offset `from` (dense), as a position.
    #[inline]
    pub(super) fn dense_next(&self, start: usize, from: usize) -> Option<usize> {
        if from >= 256 {
            return None;
        }
        next_one(self.d_labels.bits().words(), start + from).filter(|&p| p < start + 256)
    }

    /// Last label of a node at or before byte offset `upto` (dense), as a position.
    #[inline]
    pub(super) fn dense_prev(&self, start: usize, upto: usize) -> Option<usize> {
        prev_one(self.d_labels.bits().words(), start + upto).filter(|&p| p >= start)
    }

    /// The node's first item: `(pos, true)` for its prefix key, else its first label.
    #[inline]
    pub(super) fn first_item(&self, level: usize, start: usize) -> (usize, bool) {
        if level < self.dense_height {
            if self.d_is_prefix.get(start / 256) {
                (start, true)
            } else {
                (self.dense_next(start, 0).unwrap_or(start), false)
            }
        } else {
            let items = self.sparse_items(start);
            (items, self.sparse_terminator(items, self.sparse_end(start)))
        }
    }

    /// The node's last label.
    #[inline]
    pub(super) fn last_item(&self, level: usize, start: usize) -> usize {
        if level < self.dense_height {
            self.dense_prev(start, 255).unwrap_or(start)
        } else {
            self.sparse_end(start) - 1
        }
    }

    /// The label after item `(pos, term)` in its node.
    #[inline]
    pub(super) fn next_item(&self, level: usize, pos: usize, term: bool) -> Option<usize> {
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
    pub(super) fn prev_item(&self, level: usize, pos: usize) -> Option<(usize, bool)> {
        if level < self.dense_height {
            let start = pos & !255;
            if !pos.is_multiple_of(256)
                && let Some(p) = self.dense_prev(start, pos % 256 - 1)
            {
                return Some((p, false));
            }
            self.d_is_prefix.get(start / 256).then_some((start, true))
        } else {
            // `pos` is the node's first item when a node or its chain ends before it.
            if self.s_louds.get(pos) || self.s_chain.get(pos - 1) {
                return None;
            }
            let p = pos - 1;
            let first = self.s_louds.get(p) || (p > 0 && self.s_chain.get(p - 1));
            let term = first && self.s_labels[p] == TERMINATOR && !self.s_has_child.get(p);
            Some((p, term))
        }
    }

    /// First label `≥ b` of the node at `start` (its terminator excluded).
    #[inline]
    pub(super) fn find_ge(&self, level: usize, start: usize, b: u8) -> Option<usize> {
        if level < self.dense_height {
            self.dense_next(start, b as usize)
        } else {
            let (items, end) = (self.sparse_items(start), self.sparse_end(start));
            let s = items + self.sparse_terminator(items, end) as usize;
            labels::find_ge(&self.s_labels, s, end, b).map(|i| s + i)
        }
    }

    /// Last label `≤ b` of the node at `start` (its terminator excluded).
    #[inline]
    pub(super) fn find_le(&self, level: usize, start: usize, b: u8) -> Option<usize> {
        if level < self.dense_height {
            self.dense_prev(start, b as usize)
        } else {
            let (items, end) = (self.sparse_items(start), self.sparse_end(start));
            let s = items + self.sparse_terminator(items, end) as usize;
            let first_above = if b == u8::MAX {
                None
            } else {
                labels::find_ge(&self.s_labels, s, end, b + 1).map(|i| s + i)
            };
            let p = first_above.unwrap_or(end);
            (p > s).then(|| p - 1)
        }
    }
}
