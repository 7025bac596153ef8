//! `btreemap`: `std::collections::BTreeMap`, the standard ordered map.

use std::collections::BTreeMap;
use std::ops::Bound;

use super::Repr;
use crate::adapter::{BenchIndex, Caps, fold};
use crate::keys::Keys;

/// `BTreeMap<R, u64>` with `R` = `u64` or `Box<[u8]>`.
#[derive(Debug)]
pub struct BTree<R: Repr>(BTreeMap<R, u64>);

impl<R: Repr> BenchIndex for BTree<R> {
    const CAPS: Caps = Caps {
        writes: true,
        ordered: true,
        concurrent: false,
    };

    fn create(load_set: &Keys) -> anyhow::Result<Self> {
        super::check_width::<R>(load_set, "btreemap")?;
        Ok(BTree(BTreeMap::new()))
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        R::with_query(key, |q| self.0.get(q).copied())
    }

    #[inline]
    fn insert(&mut self, key: &[u8], value: u64) -> Option<u64> {
        self.0.insert(R::owned(key), value)
    }

    #[inline]
    fn lower_bound(&self, key: &[u8]) -> Option<u64> {
        R::with_query(key, |q| {
            self.0
                .range::<R::Query, _>((Bound::Included(q), Bound::Unbounded))
                .next()
                .map(|(_, &v)| v)
        })
    }

    #[inline]
    fn scan(&self, start: &[u8], n: usize) -> Option<u64> {
        R::with_query(start, |q| {
            self.0
                .range::<R::Query, _>((Bound::Included(q), Bound::Unbounded))
                .take(n)
                .map(|(_, &v)| v)
                .reduce(fold)
        })
    }
}
