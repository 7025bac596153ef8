//! `skiplist` (default prefetch depth), `skiplist-plain` (depth 0, the plain iterator) and
//! `skiplist-kN` (depth N, for the sweep): [`mlpdex::skiplist::SkipList`] with `u64` values.

use std::ops::Bound;

use mlpdex::epoch::pin;
use mlpdex::skiplist::{Config, SkipList};

use crate::adapter::{BenchIndex, Caps, fold};
use crate::keys::Keys;

/// The lock-free skip list with prefetch depth `K`; `K = usize::MAX` takes the library's
/// default.
#[derive(Debug)]
pub struct Skiplist<const K: usize>(SkipList<u64>);

impl<const K: usize> Skiplist<K> {
    #[inline]
    fn put(&self, key: &[u8], value: u64) -> Option<u64> {
        self.0
            .insert(key, value)
            .expect("keys of the benchmark datasets are within the key-length limit")
    }
}

impl<const K: usize> BenchIndex for Skiplist<K> {
    const CAPS: Caps = Caps {
        writes: true,
        ordered: true,
        concurrent: true,
    };

    fn create(_load_set: &Keys) -> anyhow::Result<Self> {
        let config = if K == usize::MAX {
            Config::default()
        } else {
            Config { prefetch_depth: K }
        };
        Ok(Skiplist(SkipList::with_config(config)?))
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        let guard = pin();
        self.0.get(key, &guard).copied()
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
        let guard = pin();
        self.0
            .lower_bound(Bound::Included(key), &guard)
            .map(|(_, &v)| v)
    }

    #[inline]
    fn scan(&self, start: &[u8], n: usize) -> Option<u64> {
        let guard = pin();
        self.0
            .range((Bound::Included(start), Bound::Unbounded), &guard)
            .take(n)
            .map(|(_, &v)| v)
            .reduce(fold)
    }
}
