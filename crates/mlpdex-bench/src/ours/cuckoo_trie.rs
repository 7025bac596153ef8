//! `cuckoo-trie` (and `cuckoo-trie-dN`): [`mlpdex::cuckoo_trie::CuckooTrie`] with `u64` values;
//! `cuckoo-trie-concurrent`: [`mlpdex::cuckoo_trie::ConcurrentCuckooTrie`].

use std::ops::Bound;

use mlpdex::ConcurrentOrderedMap;
use mlpdex::cuckoo_trie::{ConcurrentCuckooTrie, Config, CuckooTrie};

use crate::adapter::{BenchIndex, Caps, fold};
use crate::keys::Keys;

/// The Cuckoo Trie with prefetch depth `D` (0: the library's default configuration).
#[derive(Debug)]
pub struct Cuckoo<const D: usize>(CuckooTrie<u64>);

impl<const D: usize> BenchIndex for Cuckoo<D> {
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
        Ok(Cuckoo(CuckooTrie::with_config(config)?))
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        self.0.get(key).copied()
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

/// The concurrent Cuckoo Trie, default configuration. Scans are range visits: validated
/// batches of the prefetching cursor (the concurrent map's range contract).
#[derive(Debug)]
pub struct ConcurrentCuckoo(ConcurrentCuckooTrie<u64>);

impl ConcurrentCuckoo {
    #[inline]
    fn put(&self, key: &[u8], value: u64) -> Option<u64> {
        self.0
            .insert(key, value)
            .expect("keys of the benchmark datasets are within the key-length limit")
    }
}

impl BenchIndex for ConcurrentCuckoo {
    const CAPS: Caps = Caps {
        writes: true,
        ordered: true,
        concurrent: true,
    };

    fn create(_load_set: &Keys) -> anyhow::Result<Self> {
        Ok(ConcurrentCuckoo(ConcurrentCuckooTrie::new()))
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        self.0.get_with(key, |&v| v)
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
        self.0.lower_bound_with(Bound::Included(key), |_, &v| v)
    }

    #[inline]
    fn scan(&self, start: &[u8], n: usize) -> Option<u64> {
        let mut acc: Option<u64> = None;
        let mut left = n;
        if left == 0 {
            return None;
        }
        self.0
            .visit_range((Bound::Included(start), Bound::Unbounded), |_, &v| {
                acc = Some(acc.map_or(v, |a| fold(a, v)));
                left -= 1;
                if left == 0 {
                    std::ops::ControlFlow::Break(())
                } else {
                    std::ops::ControlFlow::Continue(())
                }
            });
        acc
    }

    fn mapped_bytes(&self) -> usize {
        self.0.mapped_bytes()
    }
}
