//! `skipmap`: `crossbeam_skiplist::SkipMap`, a lock-free concurrent skip list.

use std::ops::Bound;

use crossbeam_skiplist::SkipMap;

use super::Repr;
use crate::adapter::{BenchIndex, Caps, fold};
use crate::keys::Keys;

/// `SkipMap<R, u64>`.
#[derive(Debug)]
pub struct Skip<R: Repr>(SkipMap<R, u64>);

impl<R: Repr> Skip<R> {
    #[inline]
    fn put(&self, key: &[u8], value: u64) -> Option<u64> {
        // SkipMap::insert replaces silently and returns the new entry; answer with its value.
        Some(*self.0.insert(R::owned(key), value).value())
    }
}

impl<R: Repr> BenchIndex for Skip<R> {
    const CAPS: Caps = Caps {
        writes: true,
        ordered: true,
        concurrent: true,
    };

    fn create(load_set: &Keys) -> anyhow::Result<Self> {
        super::check_width::<R>(load_set, "skipmap")?;
        Ok(Skip(SkipMap::new()))
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        R::with_query(key, |q| self.0.get(q).map(|e| *e.value()))
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
        R::with_query(key, |q| {
            self.0.lower_bound(Bound::Included(q)).map(|e| *e.value())
        })
    }

    #[inline]
    fn scan(&self, start: &[u8], n: usize) -> Option<u64> {
        R::with_query(start, |q| {
            self.0
                .range::<R::Query, _>((Bound::Included(q), Bound::Unbounded))
                .take(n)
                .map(|e| *e.value())
                .reduce(fold)
        })
    }
}
