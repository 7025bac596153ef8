//! The raw Cuckoo Trie: the hash table with key elimination ([`table`]) and the trie algorithms
//! over it ([`trie`]), non-generic, with records as opaque addresses; and the typed layer
//! ([`typed`]) that owns the records of the single-threaded map and holds its `unsafe`; its
//! concurrent counterpart ([`shared`]) holds the concurrent map's.

pub(crate) mod cursor;
pub(crate) mod seqlock;
pub(crate) mod shared;
pub(crate) mod table;
pub(crate) mod trie;
pub(crate) mod typed;

/// A value on cache lines of its own: for counters every writer updates, so their stores do
/// not take away lines that every operation reads (and for writers' scratch slots).
#[repr(align(128))]
pub(crate) struct Padded<T>(pub(crate) T);

impl<T> core::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// Largest supported prefetch depth (the search keeps a ring of this many hashes ahead).
pub(crate) const MAX_PREFETCH: usize = 16;
