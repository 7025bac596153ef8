//! The raw Cuckoo Trie: the hash table with key elimination ([`table`]) and the trie algorithms
//! over it ([`trie`]). Non-generic; records are opaque addresses owned by the front end.

pub(crate) mod cursor;
pub(crate) mod seqlock;
pub(crate) mod shared;
pub(crate) mod table;
pub(crate) mod trie;

/// Largest supported prefetch depth (the search keeps a ring of this many hashes ahead).
pub(crate) const MAX_PREFETCH: usize = 16;
