//! `cuckoo-trie` (and `cuckoo-trie-dN`, `cuckoo-trie-keyed`): [`mlpdex::cuckoo_trie::CuckooTrie`]
//! with `u64` values;
//! `cuckoo-trie-concurrent` (and `-growing`, `-keyed`):
//! [`mlpdex::cuckoo_trie::ConcurrentCuckooTrie`].

use std::ops::Bound;
use std::sync::Arc;

use mlpdex::cuckoo_trie::{ConcurrentCuckooTrie, Config, CuckooTrie};
use mlpdex::epoch::pin;

use super::copied;
use super::resize_driver::{Rebuilds, Resizable};
use crate::adapter::{BenchIndex, Caps, Merge, fold};
use crate::keys::Keys;

/// The Cuckoo Trie with prefetch depth `D` (0: the library's default configuration), with
/// the key index when `KEYED`.
#[derive(Debug)]
pub struct Cuckoo<const D: usize, const KEYED: bool = false>(CuckooTrie<u64>);

impl<const D: usize, const KEYED: bool> BenchIndex for Cuckoo<D, KEYED> {
    const CAPS: Caps = Caps {
        writes: true,
        ordered: true,
        concurrent: false,
    };

    fn create(_load_set: &Keys) -> anyhow::Result<Self> {
        let mut config = Config::default();
        if D != 0 {
            config.prefetch_depth = D;
        }
        config.key_index = KEYED;
        Ok(Cuckoo(CuckooTrie::with_config(config)?))
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        self.0.get(key).copied()
    }

    fn get_batch(&self, keys: &[&[u8]], out: &mut [Option<u64>]) {
        copied(keys, out, |ks, refs| self.0.get_batch(ks, refs));
    }

    #[inline]
    fn insert(&mut self, key: &[u8], value: u64) -> Option<u64> {
        self.0
            .insert(key, value)
            .expect("keys of the benchmark datasets are within the key-length limit")
    }

    #[inline]
    fn lower_bound(&self, key: &[u8]) -> Option<u64> {
        self.0.lower_bound(Bound::Included(key)).map(|(_, &v)| v)
    }

    #[inline]
    fn scan(&self, start: &[u8], n: usize) -> Option<u64> {
        self.0
            .range((Bound::Included(start), Bound::Unbounded))
            .take(n)
            .map(|(_, &v)| v)
            .reduce(fold)
    }

    fn mapped_bytes(&self) -> usize {
        self.0.mapped_bytes()
    }
}

/// The concurrent Cuckoo Trie, default configuration. Scans are its range iterator: validated
/// batches of the prefetching cursor (the concurrent map's range contract).
///
/// With `GROWING` (`cuckoo-trie-concurrent-growing`), every run is measured while a resize
/// driver ([`Rebuilds`]) doubles the table and shrinks it back, again and again; comparing
/// the two indexes' `p999_ns` and `max_ns` on `c` says what a resize costs a lookup. With
/// `KEYED` (`cuckoo-trie-concurrent-keyed`), the map keeps its key index
/// ([`Config::key_index`]).
pub struct ConcurrentCuckoo<const GROWING: bool, const KEYED: bool = false> {
    map: Arc<ConcurrentCuckooTrie<u64>>,
    resizes: Rebuilds,
}

impl Resizable for ConcurrentCuckooTrie<u64> {
    fn keys(&self) -> usize {
        ConcurrentCuckooTrie::len(self)
    }
    fn table_bytes(&self) -> usize {
        self.mapped_bytes()
    }
    fn reserve(&self, keys: usize) {
        ConcurrentCuckooTrie::reserve(self, keys);
    }
    fn shrink_to_fit(&self) {
        ConcurrentCuckooTrie::shrink_to_fit(self);
    }
}

impl<const GROWING: bool, const KEYED: bool> std::fmt::Debug for ConcurrentCuckoo<GROWING, KEYED> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConcurrentCuckoo")
            .field("len", &self.map.len())
            .field("growing", &GROWING)
            .field("keyed", &KEYED)
            .finish()
    }
}

impl<const GROWING: bool, const KEYED: bool> ConcurrentCuckoo<GROWING, KEYED> {
    #[inline]
    fn put(&self, key: &[u8], value: u64) -> Option<u64> {
        self.map
            .insert(key, value)
            .expect("keys of the benchmark datasets are within the key-length limit")
    }
}

impl<const GROWING: bool, const KEYED: bool> BenchIndex for ConcurrentCuckoo<GROWING, KEYED> {
    const CAPS: Caps = Caps {
        writes: true,
        ordered: true,
        concurrent: true,
    };

    fn create(_load_set: &Keys) -> anyhow::Result<Self> {
        let config = Config {
            key_index: KEYED,
            ..Config::default()
        };
        Ok(ConcurrentCuckoo {
            map: Arc::new(ConcurrentCuckooTrie::with_config(config)?),
            resizes: Rebuilds::default(),
        })
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        self.map.get(key, &pin()).copied()
    }

    fn get_batch(&self, keys: &[&[u8]], out: &mut [Option<u64>]) {
        let guard = pin();
        copied(keys, out, |ks, refs| self.map.get_batch(ks, refs, &guard));
    }

    #[inline]
    fn insert(&mut self, key: &[u8], value: u64) -> Option<u64> {
        self.put(key, value)
    }

    #[inline]
    fn insert_shared(&self, key: &[u8], value: u64) -> Option<u64> {
        self.put(key, value)
    }

    #[inline]
    fn lower_bound(&self, key: &[u8]) -> Option<u64> {
        self.map
            .lower_bound(Bound::Included(key), &pin())
            .map(|(_, &v)| v)
    }

    #[inline]
    fn scan(&self, start: &[u8], n: usize) -> Option<u64> {
        let guard = pin();
        self.map
            .range((Bound::Included(start), Bound::Unbounded), &guard)
            .take(n)
            .map(|(_, &v)| v)
            .reduce(fold)
    }

    fn mapped_bytes(&self) -> usize {
        self.map.mapped_bytes()
    }

    fn before_run(&mut self) {
        self.resizes.start(GROWING, &self.map);
    }

    fn after_run(&mut self) {
        self.resizes.stop();
    }

    fn take_merges(&mut self) -> Vec<Merge> {
        self.resizes.take()
    }
}
