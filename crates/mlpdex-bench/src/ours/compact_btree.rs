//! `compact-btree`: [`mlpdex::compact_btree::CompactBTree`] with the default configuration,
//! built once from the sorted load set (the timed `load` includes sorting, as for the other
//! static indexes).

use std::ops::Bound;

use mlpdex::compact_btree::{CompactBTree, CompactBTreeBuilder};

use crate::adapter::{BenchIndex, Caps};
use crate::keys::Keys;

/// The compact B-tree with the default configuration.
#[derive(Debug)]
pub struct CompactBTreeIndex(CompactBTree);

impl BenchIndex for CompactBTreeIndex {
    const CAPS: Caps = Caps {
        writes: false,
        ordered: true,
        concurrent: false,
    };

    fn create(load_set: &Keys) -> anyhow::Result<Self> {
        Ok(CompactBTreeIndex(super::build_sorted(
            load_set,
            CompactBTreeBuilder::new(),
        )?))
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        self.0.get(key)
    }

    #[inline]
    fn lower_bound(&self, key: &[u8]) -> Option<u64> {
        self.0.lower_bound_value(Bound::Included(key))
    }

    #[inline]
    fn scan(&self, start: &[u8], n: usize) -> Option<u64> {
        super::scan_cursor(self.0.cursor((Bound::Included(start), Bound::Unbounded)), n)
    }

    fn notes(&self, keys: usize) -> Vec<String> {
        let n = keys.max(1) as f64;
        vec![format!(
            "structure {:.1} bits/key without values; {} keys per leaf",
            self.0.structure_bytes() as f64 * 8.0 / n,
            self.0.config().leaf_keys,
        )]
    }
}
