//! Adapters for mlpdex's own structures.

pub mod compact_btree;
pub mod cuckoo_trie;
pub mod fst;
pub mod hope;
pub mod mlp_index;
pub mod skiplist;
