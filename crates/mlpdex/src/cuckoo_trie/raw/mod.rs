//! The raw Cuckoo Trie: the hash table with key elimination ([`table`]) and the trie algorithms
//! over it ([`trie`]), non-generic, with records as opaque addresses; and the typed layer
//! ([`typed`]) that owns the records of the single-threaded map and holds its `unsafe`.

pub(crate) mod cursor;
pub(crate) mod seqlock;
pub(crate) mod table;
pub(crate) mod trie;
pub(crate) mod typed;

/// Largest supported prefetch depth (the search keeps a ring of this many hashes ahead).
pub(crate) const MAX_PREFETCH: usize = 16;
