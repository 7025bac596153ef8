//! `compact-art`: [`mlpdex::compact_art::CompactArt`], built once from the sorted load set
//! (the timed `load` includes sorting, as for the other static indexes).

use std::ops::Bound;

use mlpdex::compact_art::{CompactArt, CompactArtBuilder};

use crate::adapter::{BenchIndex, Caps};
use crate::keys::Keys;

/// The compact ART.
#[derive(Debug)]
pub struct CompactArtIndex(CompactArt);

impl BenchIndex for CompactArtIndex {
    const CAPS: Caps = Caps {
        writes: false,
        ordered: true,
        concurrent: false,
    };

    fn create(load_set: &Keys) -> anyhow::Result<Self> {
        Ok(CompactArtIndex(super::build_sorted(
            load_set,
            CompactArtBuilder::new(),
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
            "structure {:.1} bits/key without values",
            self.0.structure_bytes() as f64 * 8.0 / n,
        )]
    }
}
