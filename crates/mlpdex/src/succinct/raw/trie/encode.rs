//! Encoding: finished levels into LOUDS-DS, and the directories over encoded parts.

use super::super::build::{Level, TERMINATOR};
use super::Trie;
use crate::Error;
use crate::substrate::labels;
use crate::substrate::rank::{RankBits, SelectBits, next_one};
use crate::substrate::{BitVec, Frozen, FrozenBits};

fn capacity(what: &'static str) -> Error {
    Error::Capacity { what }
}

impl Trie {
    /// Encodes finished levels, levels `0..dense_height` in LOUDS-Dense (which holds no chain).
    pub(crate) fn from_levels(levels: &[Level], dense_height: usize) -> Result<Trie, Error> {
        let dense_height = dense_height.min(levels.len());
        debug_assert!(
            levels[..dense_height]
                .iter()
                .all(|lv| lv.chain.count_ones() == 0),
            "a chain on a dense level"
        );
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
        // A trie without chains keeps no chain bits (see `compress::worth_folding`).
        let folded = levels[dense_height..].iter().any(|lv| lv.chain.len() > 0);
        let mut s_chain = BitVec::new();
        for lv in &levels[dense_height..] {
            s_labels.extend_from_slice(&lv.labels);
            append(&mut s_has_child, &lv.has_child);
            append(&mut s_louds, &lv.louds);
            if folded {
                // `compress` marks every position of every level it writes.
                debug_assert_eq!(lv.chain.len(), lv.labels.len());
                append(&mut s_chain, &lv.chain);
            }
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
            s_chain.into(),
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
        s_chain: FrozenBits,
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
        let s_chain = RankBits::over(s_chain).ok_or(capacity("LOUDS-Sparse too large"))?;
        let dense_nodes = d_is_prefix.len();
        let dense_children = d_has_child.count_ones();
        let s_child_starts = child_starts(&s_has_child, &s_louds, dense_children, dense_nodes);
        // Saturating: a loaded image is only validated after assembly (a valid trie never
        // saturates, since every branch with a child is a labelled branch).
        let dense_leaves =
            (d_labels.count_ones() + d_is_prefix.count_ones()).saturating_sub(dense_children);
        let leaves = (dense_leaves + s_len)
            .saturating_sub(s_has_child.count_ones())
            .saturating_sub(s_chain.count_ones());
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
            s_child_starts,
            folded: s_chain.len() != 0,
            s_chain,
            leaves,
        })
    }
}

/// For each word `w` of the sparse child bits: the start of the node the first branch with a
/// child at a position `≥ 64 w` leads to (`s_len` when none does). One pass over both bit
/// vectors: that node's number only grows with `w`.
fn child_starts(
    has_child: &RankBits<8>,
    louds: &SelectBits,
    dense_children: usize,
    dense_nodes: usize,
) -> Vec<u32> {
    let words = has_child.bits().words();
    let mut starts = louds.bits().iter_ones().enumerate().peekable();
    let mut before = dense_children + 1;
    words
        .iter()
        .map(|w| {
            // The sparse node numbered `before - dense_nodes` (positions fit `u32`: checked
            // by the caller's `MAX_BITS` test).
            let k = before.checked_sub(dense_nodes);
            before += w.count_ones() as usize;
            let Some(k) = k else {
                return louds.len() as u32;
            };
            while starts.next_if(|&(i, _)| i < k).is_some() {}
            starts.peek().map_or(louds.len(), |&(_, p)| p) as u32
        })
        .collect()
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
/// costs one bitmap probe where a sparse one costs a select and a label search. Chosen on the
/// levels before path compression, which then folds chains below the dense levels only.
pub(crate) fn choose_dense_height(levels: &[Level], ratio: u32) -> usize {
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
