//! Adapters for mlpdex's own structures.

pub mod cuckoo_trie;
pub mod fst;
pub mod mlp_index;
pub mod skiplist;
