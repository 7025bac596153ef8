//! Ranks: how many keys lie before a position, level by level, for approximate counts.

use super::{Path, Trie};

impl Trie {
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
            let children = self.s_has_child.rank1(p) - self.s_has_child.rank1(s);
            let chains = self.s_chain.rank1(p) - self.s_chain.rank1(s);
            (p - s) - children - chains
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
        self.level_shape()
            .into_iter()
            .map(|(leaves, _)| leaves)
            .collect()
    }

    /// Leaves and branches with a child on each level.
    pub(crate) fn level_shape(&self) -> Vec<(usize, usize)> {
        let mut out = Vec::with_capacity(self.height);
        let (mut first, mut nodes) = (0usize, 1usize);
        for level in 0..self.height {
            let end_pos = self.node_pos(level, first + nodes);
            let start = self.node_pos(level, first);
            let children =
                self.children_before(level, end_pos) - self.children_before(level, start);
            out.push((self.leaves_before(level, first, end_pos, false), children));
            first += nodes;
            nodes = children;
        }
        out
    }

    /// Number of keys from the key at `a` to the key at `b`, both included (0 if `b < a`).
    pub(crate) fn count_between(&self, a: &Path, b: &Path) -> usize {
        (self.rank_of(b) + 1).saturating_sub(self.rank_of(a))
    }
}
