//! `hybrid-cuckoo-trie-<static>`: [`mlpdex::hybrid::Hybrid`] with the Cuckoo Trie as its
//! dynamic stage and the compact ART (`compact-art`), the compact B-tree (`compact-btree`) or
//! the FST (`fst`) as its static stage, default merge ratio 10.

use std::ops::Bound;

use mlpdex::cuckoo_trie::CuckooTrie;
use mlpdex::hybrid::{Config, Hybrid, Slot, StaticStage};

use crate::adapter::{BenchIndex, Caps};
use crate::keys::Keys;

/// A hybrid index over the Cuckoo Trie and static stage `S`.
pub struct HybridIndex<S: StaticStage>(Hybrid<CuckooTrie<Slot>, S>);

impl<S: StaticStage> std::fmt::Debug for HybridIndex<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HybridIndex")
            .field("len", &self.0.len())
            .field("stats", &self.0.stats())
            .finish()
    }
}

impl<S: StaticStage + Send + Sync> BenchIndex for HybridIndex<S> {
    const CAPS: Caps = Caps {
        writes: true,
        ordered: true,
        concurrent: false,
    };

    fn create(_load_set: &Keys) -> anyhow::Result<Self> {
        Ok(HybridIndex(Hybrid::with_config(Config::default())?))
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        self.0.get(key)
    }

    #[inline]
    fn insert(&mut self, key: &[u8], value: u64) -> Option<u64> {
        self.0
            .insert(key, value)
            .expect("keys of the benchmark datasets are within the key-length limits")
    }

    #[inline]
    fn lower_bound(&self, key: &[u8]) -> Option<u64> {
        let mut c = self.0.cursor((Bound::Included(key), Bound::Unbounded));
        c.next().map(|(_, v)| v)
    }

    #[inline]
    fn scan(&self, start: &[u8], n: usize) -> Option<u64> {
        super::scan_cursor(self.0.cursor((Bound::Included(start), Bound::Unbounded)), n)
    }

    fn mapped_bytes(&self) -> usize {
        self.0.dynamic().mapped_bytes()
    }

    fn notes(&self, _keys: usize) -> Vec<String> {
        let s = self.0.stats();
        vec![format!(
            "{} merges, {:.2} s merging (last {:.3} s, {} entries, static stage {} -> {} bytes); stages {} static / {} dynamic entries",
            s.merges,
            s.total.as_secs_f64(),
            s.last.as_secs_f64(),
            s.last_entries,
            s.last_old_bytes,
            s.last_new_bytes,
            self.0.static_len(),
            self.0.dynamic_len(),
        )]
    }
}
