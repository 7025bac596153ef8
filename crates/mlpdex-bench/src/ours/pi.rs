//! `pi`: [`mlpdex::pi::Pi`], the batched skip list, on a pool of the run's thread count:
//! `Pi<u64>` on datasets of 8-byte keys, `Pi<Vec<u8>>` on the others.
//!
//! A batched index ([`BenchIndex::BATCHED`]): the runner hands it groups of `--batch`
//! operations, each run as one [`Batch`]. Reads are `Get`, updates and inserts `Insert`,
//! lower bounds a `Scan` of one entry, scans a `Scan` of their length. The batch's queries
//! and answers are kept between batches, so a batch allocates only the answers of scans.

use mlpdex::pi::{Answer, Batch, Config, Pi, PiKey, Query};

use crate::adapter::{BenchIndex, Caps, fold, unsupported, value_of};
use crate::baselines::u64_key;
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

/// The key types the bench runs PI on: `u64` for 8-byte datasets, byte strings for the rest.
pub trait BenchKey: PiKey {
    /// The key of a dataset's bytes.
    fn of(bytes: &[u8]) -> Self;
    /// The one-query lookup.
    fn get(pi: &Pi<Self>, key: &[u8]) -> Option<u64>;
}

impl BenchKey for u64 {
    fn of(bytes: &[u8]) -> u64 {
        u64_key(bytes)
    }
    fn get(pi: &Pi<u64>, key: &[u8]) -> Option<u64> {
        pi.get(u64_key(key))
    }
}

impl BenchKey for Vec<u8> {
    fn of(bytes: &[u8]) -> Vec<u8> {
        bytes.to_vec()
    }
    fn get(pi: &Pi<Vec<u8>>, key: &[u8]) -> Option<u64> {
        pi.get(key)
    }
}

/// A [`Pi`] with one of §6.8's optimizations switched off (`V`, [`FULL`]: none), on keys `K`,
/// and the batch it reuses.
pub struct Typed<const V: u8, K: BenchKey> {
    pi: Pi<K>,
    batch: Batch<K>,
}

impl<const V: u8, K: BenchKey> std::fmt::Debug for Typed<V, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Typed({} keys)", self.pi.len())
    }
}

impl<const V: u8, K: BenchKey> Typed<V, K> {
    fn new() -> anyhow::Result<Self> {
        let full = Config::default();
        let pi = Pi::with_config(Config {
            threads: 1,
            simd: V != NO_SIMD,
            group: if V == NO_GROUP { 1 } else { full.group },
            prefetch: V != NO_PREFETCH,
            ..full
        })?;
        Ok(Typed {
            pi,
            batch: Batch::new(),
        })
    }

    fn execute_batch(&mut self, ops: &[Op], keys: &Keys, first: usize, out: &mut [Option<u64>]) {
        self.batch.clear();
        self.batch.extend(ops.iter().enumerate().map(|(k, op)| {
            let key = K::of(keys.get(first + k));
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
}

/// PI on `u64` keys for datasets of 8-byte keys, on byte strings for the others.
pub enum PiIndex<const V: u8 = FULL> {
    Ints(Typed<V, u64>),
    Bytes(Typed<V, Vec<u8>>),
}

/// `$body` with `$t` bound to the [`Typed`] map of either kind.
macro_rules! either {
    ($self:expr, $t:ident => $body:expr) => {
        match $self {
            PiIndex::Ints($t) => $body,
            PiIndex::Bytes($t) => $body,
        }
    };
}

impl<const V: u8> std::fmt::Debug for PiIndex<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PiIndex::Ints(_) => "PiIndex<u64>",
            PiIndex::Bytes(_) => "PiIndex<Vec<u8>>",
        })
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
        Ok(if load_set.fixed_width() == Some(8) {
            PiIndex::Ints(Typed::new()?)
        } else {
            PiIndex::Bytes(Typed::new()?)
        })
    }

    fn get(&self, key: &[u8]) -> Option<u64> {
        match self {
            PiIndex::Ints(t) => u64::get(&t.pi, key),
            PiIndex::Bytes(t) => <Vec<u8>>::get(&t.pi, key),
        }
    }

    fn set_threads(&mut self, threads: usize) -> anyhow::Result<()> {
        Ok(either!(self, t => t.pi.set_threads(threads))?)
    }

    fn execute_batch(&mut self, ops: &[Op], keys: &Keys, first: usize, out: &mut [Option<u64>]) {
        either!(self, t => t.execute_batch(ops, keys, first, out))
    }

    fn finish_load(&mut self) {
        either!(self, t => t.pi.finish_rebuild())
    }

    fn before_run(&mut self) {
        // A rebuild the last run started ends before this one is timed.
        either!(self, t => t.pi.finish_rebuild())
    }

    fn notes(&self, keys: usize) -> Vec<String> {
        vec![format!(
            "index layer, nodes and keys {:.1} B/key",
            either!(self, t => t.pi.memory_usage()) as f64 / keys.max(1) as f64
        )]
    }
}
