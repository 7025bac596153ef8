//! `hybrid-cuckoo-trie-<static>`: [`mlpdex::hybrid::Hybrid`] with the Cuckoo Trie as its
//! dynamic stage and the compact ART (`compact-art`), the compact B-tree (`compact-btree`) or
//! the FST (`fst`) as its static stage, default merge ratio 10.
//!
//! Every merge a write runs is logged (entries, time, static stage bytes before and after) and
//! handed to the runner by [`BenchIndex::take_merges`], which puts it in the record of the
//! load or run that ran it (`mlpdex-bench report` draws them as `merge-*.svg`). Detecting a
//! merge costs one compare of the merge count per write; only a write that merged pushes.

use std::ops::Bound;

use mlpdex::cuckoo_trie::CuckooTrie;
use mlpdex::hybrid::{Config, Hybrid, MergeStats, Slot, StaticStage};

use crate::adapter::{BenchIndex, Caps, Merge};
use crate::keys::Keys;

/// A hybrid index over the Cuckoo Trie and static stage `S`, with the log of its merges.
pub struct HybridIndex<S: StaticStage> {
    index: Hybrid<CuckooTrie<Slot>, S>,
    /// `index.stats().merges` as of the last merge logged.
    logged: u64,
    /// Merges since the last [`BenchIndex::take_merges`], oldest first.
    merges: Vec<Merge>,
}

impl<S: StaticStage> HybridIndex<S> {
    /// Logs the merge the last write ran.
    #[cold]
    fn log_merge(&mut self) {
        let s = self.index.stats();
        // A write runs at most one merge, so none goes unlogged.
        debug_assert_eq!(s.merges, self.logged + 1, "one merge per write");
        self.logged = s.merges;
        self.merges.push(last_merge(s));
    }
}

/// The last merge `s` records, as a record's `merges` element (both hybrid adapters).
pub(crate) fn last_merge(s: MergeStats) -> Merge {
    Merge {
        entries: s.last_entries as u64,
        secs: s.last.as_secs_f64(),
        filter_secs: s.last_filter.as_secs_f64(),
        old_bytes: s.last_old_bytes as u64,
        new_bytes: s.last_new_bytes as u64,
    }
}

impl<S: StaticStage> std::fmt::Debug for HybridIndex<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HybridIndex")
            .field("len", &self.index.len())
            .field("stats", &self.index.stats())
            .field("unreported_merges", &self.merges.len())
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
        Ok(HybridIndex {
            index: Hybrid::with_config(Config::default())?,
            logged: 0,
            merges: Vec::new(),
        })
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        self.index.get(key)
    }

    #[inline]
    fn insert(&mut self, key: &[u8], value: u64) -> Option<u64> {
        let old = self
            .index
            .insert(key, value)
            .expect("keys of the benchmark datasets are within the key-length limits");
        if self.index.stats().merges != self.logged {
            self.log_merge();
        }
        old
    }

    #[inline]
    fn lower_bound(&self, key: &[u8]) -> Option<u64> {
        let mut c = self.index.cursor((Bound::Included(key), Bound::Unbounded));
        c.next().map(|(_, v)| v)
    }

    #[inline]
    fn scan(&self, start: &[u8], n: usize) -> Option<u64> {
        super::scan_cursor(
            self.index
                .cursor((Bound::Included(start), Bound::Unbounded)),
            n,
        )
    }

    fn mapped_bytes(&self) -> usize {
        self.index.dynamic().mapped_bytes()
    }

    fn notes(&self, _keys: usize) -> Vec<String> {
        let s = self.index.stats();
        vec![format!(
            "{} merges, {:.2} s merging (last {:.3} s, {} entries, static stage {} -> {} bytes); stages {} static / {} dynamic entries",
            s.merges,
            s.total.as_secs_f64(),
            s.last.as_secs_f64(),
            s.last_entries,
            s.last_old_bytes,
            s.last_new_bytes,
            self.index.static_len(),
            self.index.dynamic_len(),
        )]
    }

    fn take_merges(&mut self) -> Vec<Merge> {
        std::mem::take(&mut self.merges)
    }
}

#[cfg(test)]
mod tests {
    use mlpdex::compact_art::CompactArt;

    use super::*;

    #[test]
    fn every_merge_is_logged_once_in_order() {
        let keys = Keys::default();
        let mut h = HybridIndex::<CompactArt>::create(&keys).unwrap();
        for i in 0u64..60_000 {
            h.insert(&i.to_be_bytes(), i);
        }
        let merges = h.take_merges();
        assert_eq!(merges.len() as u64, h.index.stats().merges);
        assert!(merges.len() >= 2, "{merges:?}");
        assert_eq!(merges[0].entries, 4096, "the first merge at min_merge");
        assert!(merges.windows(2).all(|w| w[0].entries < w[1].entries));
        let last = merges.last().unwrap();
        assert_eq!(last.entries, h.index.stats().last_entries as u64);
        assert!(last.new_bytes > last.old_bytes && last.secs > 0.0);
        assert!(h.take_merges().is_empty(), "taken once");
    }
}
