//! `hybrid-cuckoo-trie-concurrent-compact-art`: [`mlpdex::hybrid::ConcurrentHybrid`] (the
//! concurrent Cuckoo Trie in front of a compact ART, ratio 10, merges on their own thread),
//! and its `-merging` twin, which measures every run while a merge is in progress.
//!
//! Both wait for background merges to finish at the end of the load (inside its timing, and
//! before its memory is measured) and before a run starts, so the plain index's runs
//! see no merge (unless its own writes start one). The `-merging` index then starts a merge
//! driver for the length of the run: a thread that re-inserts 1,024 stored entries with their
//! own values (which changes no read's answer) and merges, again and again, so that a merge
//! is under way for nearly all of the run. Its merges land in the run's record (`merges`),
//! whose seconds, against the run's, say how much of the run they covered. Comparing the two
//! indexes' `p999_ns` on `c` answers whether a read ever waits for a merge.
//!
//! Merges the index's own writes start are logged by `insert` (the single-threaded load);
//! it checks the merge count every 64 inserts (a merge needs at least `min_merge` = 4,096
//! writes to start, so none is missed).

use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use mlpdex::epoch::pin;
use mlpdex::hybrid::{ConcurrentHybrid, StaticStage};

use crate::adapter::{BenchIndex, Caps, Merge};
use crate::keys::Keys;

/// Entries the merge driver re-inserts before each merge.
const DRIVER_BATCH: usize = 1024;

/// The concurrent hybrid over static stage `S`; with `MERGING`, runs are measured under a
/// merge driver.
pub struct ConcurrentHybridIndex<S: StaticStage + Send + Sync + 'static, const MERGING: bool> {
    map: Arc<ConcurrentHybrid<S>>,
    /// Inserts since the merge count was last checked.
    unchecked: u32,
    /// `stats().merges` as of the last merge logged.
    logged: u64,
    merges: Vec<Merge>,
    driver: Option<Driver>,
}

/// The merge driver of a `-merging` run.
struct Driver {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<Merge>>,
}

impl<S: StaticStage + Send + Sync + 'static, const MERGING: bool>
    ConcurrentHybridIndex<S, MERGING>
{
    #[inline]
    fn put(&self, key: &[u8], value: u64) -> Option<u64> {
        self.map
            .insert(key, value)
            .expect("keys of the benchmark datasets are within the key-length limit")
    }

    /// Logs the merges that finished since the last check.
    #[cold]
    fn log_merges(&mut self) {
        let s = self.map.stats();
        if s.merges != self.logged {
            // At most one merge finishes between two checks (see the module docs).
            self.logged = s.merges;
            self.merges.push(super::hybrid::last_merge(s));
        }
    }

    /// Starts the merge driver.
    fn start_driver(&mut self) {
        let stop = Arc::new(AtomicBool::new(false));
        let (map, halt) = (Arc::clone(&self.map), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            let mut merges = Vec::new();
            let mut batch: Vec<(Vec<u8>, u64)> = Vec::with_capacity(DRIVER_BATCH);
            let mut start = 0x9E37_79B9_7F4A_7C15u64;
            while !halt.load(Ordering::Acquire) {
                start = start.wrapping_mul(0x2545_F491_4F6C_DD1D).wrapping_add(1);
                let from = start.to_be_bytes();
                batch.clear();
                {
                    // From a pseudo-random key on, wrapping around to the first key.
                    let guard = pin();
                    let tail = (Bound::Included(&from[..]), Bound::Unbounded);
                    batch.extend(map.range(tail, &guard).take(DRIVER_BATCH));
                    let head = (Bound::Unbounded, Bound::Excluded(&from[..]));
                    let rest = DRIVER_BATCH - batch.len();
                    batch.extend(map.range(head, &guard).take(rest));
                }
                if batch.is_empty() {
                    // An empty map: nothing to merge.
                    std::thread::yield_now();
                    continue;
                }
                for (k, v) in &batch {
                    map.insert(k, *v).expect("re-inserting a stored key");
                }
                let before = map.stats().merges;
                map.merge().expect("a merge of the benchmark's keys");
                let after = map.stats();
                if after.merges != before {
                    merges.push(super::hybrid::last_merge(after));
                }
            }
            merges
        });
        self.driver = Some(Driver { stop, thread });
    }
}

impl<S: StaticStage + Send + Sync + 'static, const MERGING: bool> std::fmt::Debug
    for ConcurrentHybridIndex<S, MERGING>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConcurrentHybridIndex")
            .field("map", &self.map)
            .field("merging", &MERGING)
            .finish()
    }
}

impl<S: StaticStage + Send + Sync + 'static, const MERGING: bool> BenchIndex
    for ConcurrentHybridIndex<S, MERGING>
{
    const CAPS: Caps = Caps {
        writes: true,
        ordered: true,
        concurrent: true,
    };

    fn create(_load_set: &Keys) -> anyhow::Result<Self> {
        Ok(ConcurrentHybridIndex {
            map: Arc::new(ConcurrentHybrid::with_config(Default::default())?),
            unchecked: 0,
            logged: 0,
            merges: Vec::new(),
            driver: None,
        })
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        self.map.get(key, &pin())
    }

    #[inline]
    fn insert(&mut self, key: &[u8], value: u64) -> Option<u64> {
        let old = self.put(key, value);
        self.unchecked += 1;
        if self.unchecked == 64 {
            self.unchecked = 0;
            self.log_merges();
        }
        old
    }

    #[inline]
    fn insert_shared(&self, key: &[u8], value: u64) -> Option<u64> {
        self.put(key, value)
    }

    #[inline]
    fn lower_bound(&self, key: &[u8]) -> Option<u64> {
        let guard = pin();
        let mut c = self
            .map
            .cursor((Bound::Included(key), Bound::Unbounded), &guard);
        c.next().map(|(_, v)| v)
    }

    #[inline]
    fn scan(&self, start: &[u8], n: usize) -> Option<u64> {
        let guard = pin();
        super::scan_cursor(
            self.map
                .cursor((Bound::Included(start), Bound::Unbounded), &guard),
            n,
        )
    }

    fn finish_load(&mut self) {
        self.map.wait_for_merges();
        // The load's merges go in the load's record.
        self.log_merges();
    }

    fn mapped_bytes(&self) -> usize {
        self.map.mapped_bytes()
    }

    fn before_run(&mut self) {
        // A merge a previous run's writes started belongs to that run.
        self.map.wait_for_merges();
        self.log_merges();
        if MERGING {
            self.start_driver();
        }
    }

    fn after_run(&mut self) {
        if let Some(d) = self.driver.take() {
            d.stop.store(true, Ordering::Release);
            let merges = d.thread.join().expect("the merge driver");
            self.logged = self.map.stats().merges;
            self.merges.extend(merges);
        }
    }

    fn notes(&self, _keys: usize) -> Vec<String> {
        let s = self.map.stats();
        vec![format!(
            "{} merges, {:.2} s merging (last {:.3} s, {} entries); stages {} static / {} dynamic entries",
            s.merges,
            s.total.as_secs_f64(),
            s.last.as_secs_f64(),
            s.last_entries,
            self.map.static_len(),
            self.map.dynamic_len(),
        )]
    }

    fn take_merges(&mut self) -> Vec<Merge> {
        std::mem::take(&mut self.merges)
    }
}

impl<S: StaticStage + Send + Sync + 'static, const MERGING: bool> Drop
    for ConcurrentHybridIndex<S, MERGING>
{
    fn drop(&mut self) {
        self.after_run();
    }
}

#[cfg(test)]
mod tests {
    use mlpdex::compact_art::CompactArt;

    use super::*;

    #[test]
    fn the_merging_twin_merges_during_a_run_and_logs_it() {
        let keys = Keys::default();
        let mut h = ConcurrentHybridIndex::<CompactArt, true>::create(&keys).unwrap();
        for i in 0u64..20_000 {
            h.insert(&i.to_be_bytes(), i);
        }
        h.before_run();
        let load_merges = h.take_merges();
        assert!(!load_merges.is_empty(), "the load merged");
        let mut merged_during = 0;
        while merged_during < 3 {
            for i in 0u64..20_000 {
                assert_eq!(h.get(&i.to_be_bytes()), Some(i));
            }
            merged_during = h.map.stats().merges - h.logged;
        }
        h.after_run();
        let run_merges = h.take_merges();
        assert!(run_merges.len() >= 3, "{run_merges:?}");
        assert!(run_merges.iter().all(|m| m.entries == 20_000));
    }
}
