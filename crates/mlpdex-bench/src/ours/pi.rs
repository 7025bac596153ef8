//! `pi`: [`mlpdex::pi::Pi`], the batched skip list, on a pool of the run's thread count
//! (8-byte keys only).
//!
//! A batched index ([`BenchIndex::BATCHED`]): the runner hands it groups of `--batch`
//! operations, each run as one [`Batch`]. Reads are `Get`, updates and inserts `Insert`,
//! lower bounds a `Scan` of one entry, scans a `Scan` of their length. The batch's queries
//! and answers are kept between batches, so a batch allocates only the answers of scans.

use mlpdex::pi::{Answer, Batch, Config, Pi, Query};

use crate::adapter::{BenchIndex, Caps, fold, unsupported, value_of};
use crate::baselines::{check_width, u64_key};
use crate::keys::Keys;
use crate::workload::{Op, OpKind};

/// The full PI.
pub const FULL: u8 = 0;
/// PI with scalar compares in the index layer (§6.8's breakdown).
pub const NO_SIMD: u8 = 1;
/// PI walking the index one query at a time (no group processing).
pub const NO_GROUP: u8 = 2;
/// PI without prefetching the next index entries in group walks.
pub const NO_PREFETCH: u8 = 3;

/// A [`Pi`] with one of §6.8's optimizations switched off (`V`, [`FULL`]: none), and the
/// batch it reuses.
pub struct PiIndex<const V: u8 = FULL> {
    pi: Pi,
    batch: Batch,
}

impl<const V: u8> std::fmt::Debug for PiIndex<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PiIndex")
    }
}

impl<const V: u8> BenchIndex for PiIndex<V> {
    const CAPS: Caps = Caps {
        writes: true,
        ordered: true,
        concurrent: false,
    };
    const BATCHED: bool = true;

    fn create(load_set: &Keys) -> anyhow::Result<Self> {
        check_width::<u64>(load_set, "pi")?;
        let full = Config::default();
        let pi = Pi::with_config(Config {
            threads: 1,
            simd: V != NO_SIMD,
            group: if V == NO_GROUP { 1 } else { full.group },
            prefetch: V != NO_PREFETCH,
            ..full
        })?;
        Ok(PiIndex {
            pi,
            batch: Batch::new(),
        })
    }

    fn get(&self, key: &[u8]) -> Option<u64> {
        self.pi.get(u64_key(key))
    }

    fn set_threads(&mut self, threads: usize) -> anyhow::Result<()> {
        Ok(self.pi.set_threads(threads)?)
    }

    fn execute_batch(&mut self, ops: &[Op], keys: &Keys, first: usize, out: &mut [Option<u64>]) {
        self.batch.clear();
        self.batch.extend(ops.iter().enumerate().map(|(k, op)| {
            let key = u64_key(keys.get(first + k));
            match op.kind {
                OpKind::Read => Query::Get(key),
                OpKind::Update | OpKind::Insert => Query::Insert(key, value_of(first + k)),
                OpKind::LowerBound => Query::Scan(key, 1),
                OpKind::Scan => Query::Scan(key, op.len as usize),
                // The runner skips workloads with them for batched indexes.
                OpKind::ReadModifyWrite => unsupported("a read-modify-write in a batch"),
            }
        }));
        self.pi.execute(&mut self.batch);
        for (o, a) in out.iter_mut().zip(self.batch.answers()) {
            *o = match a {
                Answer::Value(v) => *v,
                Answer::Entries(e) => e.iter().map(|&(_, v)| v).reduce(fold),
            };
        }
    }

    fn finish_load(&mut self) {
        self.pi.finish_rebuild();
    }

    fn before_run(&mut self) {
        // A rebuild the last run started ends before this one is timed.
        self.pi.finish_rebuild();
    }

    fn notes(&self, keys: usize) -> Vec<String> {
        vec![format!(
            "index layer and nodes {:.1} B/key",
            self.pi.memory_usage() as f64 / keys.max(1) as f64
        )]
    }
}
