//! Sizes of the trie's parts.

use super::Trie;

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
    /// Labels (branches and terminators) and chain bytes in LOUDS-Sparse.
    pub sparse_labels: usize,
    /// Chain bytes in LOUDS-Sparse: labels of single-child nodes folded into the node below
    /// (path compression), each read by one comparison instead of one level.
    pub chain_bytes: usize,
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

impl Trie {
    pub(crate) fn stats(&self) -> TrieStats {
        TrieStats {
            dense_levels: self.dense_height,
            levels: self.height,
            dense_nodes: self.dense_nodes,
            sparse_nodes: self.s_louds.count_ones(),
            sparse_labels: self.s_len,
            chain_bytes: self.s_chain.count_ones(),
            dense_bits: 8
                * (self.d_labels.memory_usage()
                    + self.d_has_child.memory_usage()
                    + self.d_is_prefix.memory_usage()),
            sparse_bits: 8
                * (self.s_len
                    + self.s_has_child.memory_usage()
                    + self.s_louds.memory_usage()
                    + self.s_chain.memory_usage()
                    + self.s_child_starts.capacity() * 4),
        }
    }

    pub(crate) fn memory_usage(&self) -> usize {
        self.d_labels.memory_usage()
            + self.d_has_child.memory_usage()
            + self.d_is_prefix.memory_usage()
            + self.s_labels.bytes()
            + self.s_has_child.memory_usage()
            + self.s_louds.memory_usage()
            + self.s_chain.memory_usage()
            + self.s_child_starts.capacity() * 4
    }
}
