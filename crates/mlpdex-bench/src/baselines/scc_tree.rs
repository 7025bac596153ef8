//! `scc-tree`: `scc::TreeIndex`, a concurrent B+-tree with lock-free reads (readers never
//! block; writers lock leaves, entries are immutable once inserted).
//!
//! Quirk: `TreeIndex` never overwrites in place: an update of a present key is `upsert`,
//! a remove and insert of the entry, and its insert reports only whether it stored the key,
//! so writes answer with the value stored.

use std::ops::Bound;

use scc::{Guard, TreeIndex};

use super::Repr;
use crate::adapter::{BenchIndex, Caps, fold};
use crate::keys::Keys;

/// `TreeIndex<R, u64>`.
pub struct SccTree<R: Repr>(TreeIndex<R, u64>);

impl<R: Repr> std::fmt::Debug for SccTree<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SccTree")
    }
}

impl<R: Repr> SccTree<R> {
    #[inline]
    fn put(&self, key: &[u8], value: u64) -> Option<u64> {
        if let Err((k, v)) = self.0.insert_sync(R::owned(key), value) {
            self.0.upsert_sync(k, v);
        }
        Some(value)
    }
}

impl<R: Repr> BenchIndex for SccTree<R> {
    const CAPS: Caps = Caps {
        writes: true,
        ordered: true,
        concurrent: true,
    };

    fn create(load_set: &Keys) -> anyhow::Result<Self> {
        super::check_width::<R>(load_set, "scc-tree")?;
        Ok(SccTree(TreeIndex::new()))
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        R::with_query(key, |q| self.0.peek_with(q, |_, v| *v))
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
            let guard = Guard::new();
            let range: (Bound<&R::Query>, Bound<&R::Query>) =
                (Bound::Included(q), Bound::Unbounded);
            self.0
                .range::<R::Query, _>(range, &guard)
                .next()
                .map(|(_, v)| *v)
        })
    }

    #[inline]
    fn scan(&self, start: &[u8], n: usize) -> Option<u64> {
        R::with_query(start, |q| {
            let guard = Guard::new();
            let range: (Bound<&R::Query>, Bound<&R::Query>) =
                (Bound::Included(q), Bound::Unbounded);
            self.0
                .range::<R::Query, _>(range, &guard)
                .take(n)
                .map(|(_, v)| *v)
                .reduce(fold)
        })
    }
}
