//! The load-time audit: [`Trie::validate`] checks every invariant of the module docs that
//! queries rely on, and a [`Flaw`] names the part and place that breaks one.

use super::Trie;

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
    SChain,
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

impl Trie {
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
        // (No chain bits at all: a trie without chains.)
        if self.s_chain.len() != self.s_len && self.s_chain.len() != 0 {
            return Err(Flaw::new(
                "LOUDS-Sparse sequence sizes disagree",
                Part::SChain,
                0,
            ));
        }
        // A chain byte is no branch: it has no child (child numbers count branches only).
        let (sc, sx) = (self.s_has_child.bits().words(), self.s_chain.bits().words());
        if let Some(w) = sc.iter().zip(sx).position(|(c, x)| c & x != 0) {
            let what = "chain byte with a child";
            return Err(Flaw::new(what, Part::SChain, w * 64));
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
        } else if self.s_len > 0
            && self.chain_len(0) == 0
            && self.sparse_terminator(0, self.sparse_end(0))
        {
            // (Behind a chain, the root's prefix key is the chain: not the empty key.)
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
            let mut chained = 0usize;
            for _ in 0..nodes {
                if at >= self.s_len || !self.s_louds.get(at) {
                    return Err(Flaw::new("sparse node missing", Part::SLouds, at));
                }
                let end = self.sparse_end(at);
                // A chain opens the node and leaves it at least one item.
                let chain = self.chain_len(at);
                let items = at + chain;
                if items >= end {
                    return Err(Flaw::new("chain without a node", Part::SChain, at));
                }
                chained += chain;
                let term = self.sparse_terminator(items, end);
                if term {
                    let before = self.s_has_child.rank1(items) + self.s_chain.rank1(items);
                    prefix_key(self.dense_leaves + items - before)?;
                }
                let s = items + term as usize;
                if let Some(i) = self.s_labels[s..end].windows(2).position(|w| w[0] >= w[1]) {
                    let what = "sparse node labels out of order";
                    return Err(Flaw::new(what, Part::SLabels, s + i + 1));
                }
                at = end;
            }
            // Two ranks per level, not per node: the level's nodes are contiguous. Chain bytes
            // lie only where a node's chain was counted.
            if self.s_chain.rank1(at) - self.s_chain.rank1(level_start) != chained {
                return Err(Flaw::new(
                    "chain byte inside a node",
                    Part::SChain,
                    level_start,
                ));
            }
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
}
