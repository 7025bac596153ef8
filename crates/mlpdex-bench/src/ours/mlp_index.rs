//! `mlp-index` (default layout), `mlp-index-bucketized` and `mlp-index-paper`:
//! [`mlpdex::mlp_index::MlpIndex`], and `mlp-index-concurrent`:
//! [`mlpdex::mlp_index::ConcurrentMlpIndex`], over big-endian 8-byte keys (8-byte datasets
//! only).

use std::ops::Bound;
use std::sync::Arc;

use mlpdex::mlp_index::{ConcurrentMlpIndex, Config, Layout, MlpIndex};

use super::resize_driver::{Rebuilds, Resizable};
use crate::adapter::{BenchIndex, Caps, Merge, fold};
use crate::baselines::{check_width, u64_key};
use crate::keys::Keys;

/// MlpIndex: the default configuration (`L = 0`), the bucketized layout (`L = 1`) or the
/// paper's layout (`L = 2`).
#[derive(Debug)]
pub struct Mlp<const L: u8>(MlpIndex);

impl<const L: u8> BenchIndex for Mlp<L> {
    const CAPS: Caps = Caps {
        writes: true,
        ordered: true,
        concurrent: false,
    };

    fn create(load_set: &Keys) -> anyhow::Result<Self> {
        check_width::<u64>(load_set, "mlp-index")?;
        let config = match L {
            0 => Config::default(),
            1 => Config::with_layout(Layout::Bucketized),
            _ => Config::with_layout(Layout::Paper),
        };
        Ok(Mlp(MlpIndex::with_config(config)?))
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        self.0.get(u64_key(key))
    }

    #[inline]
    fn insert(&mut self, key: &[u8], value: u64) -> Option<u64> {
        self.0
            .insert(u64_key(key), value)
            .expect("the system has memory for the benchmark's table")
    }

    #[inline]
    fn lower_bound(&self, key: &[u8]) -> Option<u64> {
        self.0
            .lower_bound(Bound::Included(u64_key(key)))
            .map(|(_, v)| v)
    }

    #[inline]
    fn scan(&self, start: &[u8], n: usize) -> Option<u64> {
        self.0
            .range(u64_key(start)..)
            .take(n)
            .map(|(_, v)| v)
            .reduce(fold)
    }

    fn mapped_bytes(&self) -> usize {
        self.0.mapped_bytes()
    }
}

/// `mlp-index-concurrent`: [`ConcurrentMlpIndex`], lock-free lookups and writers taking
/// turns. Scans are its range iterator (batches of 64 read under the shared lock).
///
/// With `GROWING` (`mlp-index-concurrent-growing`), every run is measured while a resize
/// driver ([`Rebuilds`]) rebuilds the table again and again (each rebuild takes seconds at
/// 10M keys, so one is under way for the whole run). Comparing the two indexes' `p999_ns` and
/// `max_ns` on `c` says how long a lookup waits for a resize.
pub struct ConcurrentMlp<const GROWING: bool> {
    map: Arc<ConcurrentMlpIndex>,
    resizes: Rebuilds,
}

impl Resizable for ConcurrentMlpIndex {
    fn keys(&self) -> usize {
        ConcurrentMlpIndex::len(self)
    }
    fn table_bytes(&self) -> usize {
        self.memory_usage()
    }
    fn reserve(&self, keys: usize) {
        ConcurrentMlpIndex::reserve(self, keys);
    }
    fn shrink_to_fit(&self) {
        ConcurrentMlpIndex::shrink_to_fit(self);
    }
}

impl<const GROWING: bool> std::fmt::Debug for ConcurrentMlp<GROWING> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConcurrentMlp")
            .field("len", &self.map.len())
            .field("growing", &GROWING)
            .finish()
    }
}

impl<const GROWING: bool> ConcurrentMlp<GROWING> {
    #[inline]
    fn put(&self, key: &[u8], value: u64) -> Option<u64> {
        self.map
            .insert(u64_key(key), value)
            .expect("the system has memory for the benchmark's table")
    }
}

impl<const GROWING: bool> BenchIndex for ConcurrentMlp<GROWING> {
    const CAPS: Caps = Caps {
        writes: true,
        ordered: true,
        concurrent: true,
    };

    fn create(load_set: &Keys) -> anyhow::Result<Self> {
        check_width::<u64>(load_set, "mlp-index-concurrent")?;
        Ok(ConcurrentMlp {
            map: Arc::new(ConcurrentMlpIndex::new()),
            resizes: Rebuilds::default(),
        })
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        self.map.get(u64_key(key))
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
        self.map
            .lower_bound(Bound::Included(u64_key(key)))
            .map(|(_, v)| v)
    }

    #[inline]
    fn scan(&self, start: &[u8], n: usize) -> Option<u64> {
        self.map
            .range(u64_key(start)..)
            .take(n)
            .map(|(_, v)| v)
            .reduce(fold)
    }

    fn mapped_bytes(&self) -> usize {
        self.map.memory_usage()
    }

    fn before_run(&mut self) {
        self.resizes.start(GROWING, &self.map);
    }

    fn after_run(&mut self) {
        self.resizes.stop();
    }

    fn take_merges(&mut self) -> Vec<Merge> {
        self.resizes.take()
    }
}
