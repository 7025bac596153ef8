//! The adapter interface every measured index implements, mlpdex structures and baselines alike.
//!
//! An adapter wraps one index behind a handful of operations with `u64` values:
//! [`BenchIndex::get`], `insert`, `lower_bound`, `scan`, and for concurrent indexes
//! `insert_shared`. Keys arrive as byte slices; an adapter for an integer-keyed index converts
//! 8-byte keys with [`mlpdex::key::key_to_u64`] (one load and a byte swap).
//!
//! What an index can serve is declared once in [`Caps`]; the runner skips workloads an index
//! cannot serve and never calls an operation its capabilities exclude. Methods outside an
//! index's capabilities keep their default body, which reports that internal contract breach.
//!
//! Each operation returns an *answer* (`Option<u64>`): the value found, the value replaced, or a
//! checksum of a scan. In dependent mode the runner derives the next operation's key position
//! from it (see [`crate::exec`]), so an adapter must return something computed from what the
//! index read, never a constant when the index found something.

use crate::keys::Keys;
use crate::workload::Op;

/// What an index can do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    /// Supports `insert` (and so `load`, YCSB a, b, d, e, f). False for static indexes, which
    /// are built from the whole load set by [`BenchIndex::create`].
    pub writes: bool,
    /// Supports `lower_bound` and `scan` (ordered indexes).
    pub ordered: bool,
    /// Supports `insert_shared` and concurrent calls from several threads.
    pub concurrent: bool,
}

/// An index under measurement.
pub trait BenchIndex: Sized + Send + Sync {
    /// What this index can do.
    const CAPS: Caps;

    /// Whether the index executes whole batches of mixed operations on a pool of its own
    /// threads (PI): the runner then sizes the pool to each run's thread count
    /// ([`set_threads`](Self::set_threads)) and hands it the run's operations from one thread
    /// in batches of `--batch` ([`execute_batch`](Self::execute_batch)), the load's inserts
    /// included; it never calls the one-at-a-time operations.
    const BATCHED: bool = false;

    /// A new index. Static indexes (`!CAPS.writes`) are built from the whole load set, values
    /// given by [`value_of`], and the runner times this call as their `load`; dynamic indexes
    /// come back empty and the runner times the inserts.
    fn create(load_set: &Keys) -> anyhow::Result<Self>;

    /// The value stored under `key`.
    fn get(&self, key: &[u8]) -> Option<u64>;

    /// Stores `value` under `key`; returns the previous value (or, for indexes whose insert does
    /// not report it, `Some(value)` when it stored the key).
    fn insert(&mut self, key: &[u8], value: u64) -> Option<u64> {
        let _ = (key, value);
        unsupported("insert")
    }

    /// The value of the first key `≥ key`.
    fn lower_bound(&self, key: &[u8]) -> Option<u64> {
        let _ = key;
        unsupported("lower_bound")
    }

    /// Visits up to `n` keys in order from the first key `≥ start`; returns a checksum of the
    /// values visited (`None` when none was).
    fn scan(&self, start: &[u8], n: usize) -> Option<u64> {
        let _ = (start, n);
        unsupported("scan")
    }

    /// [`get`](Self::get) for a batch: `out[i]` is the value of `keys[i]`. Indexes with a batched
    /// lookup (whose queries overlap their cache misses) override it; the default loops, so
    /// every index answers the same keys in the same groups.
    fn get_batch(&self, keys: &[&[u8]], out: &mut [Option<u64>]) {
        for (k, o) in keys.iter().zip(out) {
            *o = self.get(k);
        }
    }

    /// [`lower_bound`](Self::lower_bound) for a batch, as [`get_batch`](Self::get_batch).
    fn lower_bound_batch(&self, keys: &[&[u8]], out: &mut [Option<u64>]) {
        for (k, o) in keys.iter().zip(out) {
            *o = self.lower_bound(k);
        }
    }

    /// `insert` through a shared reference, callable from many threads at once.
    fn insert_shared(&self, key: &[u8], value: u64) -> Option<u64> {
        let _ = (key, value);
        unsupported("insert_shared")
    }

    /// For a [`BATCHED`](Self::BATCHED) index: the number of threads its batches run on.
    fn set_threads(&mut self, threads: usize) -> anyhow::Result<()> {
        let _ = threads;
        unsupported("set_threads")
    }

    /// For a [`BATCHED`](Self::BATCHED) index: executes `ops` as one batch, operation `k` on
    /// key `keys.get(first + k)` (writes store [`value_of`]`(first + k)`), and writes into
    /// `out[k]` the answer the one-at-a-time operation would give (scans: the checksum of the
    /// values visited).
    fn execute_batch(&mut self, ops: &[Op], keys: &Keys, first: usize, out: &mut [Option<u64>]) {
        let _ = (ops, keys, first, out);
        unsupported("execute_batch")
    }

    /// Bytes the index maps outside the global allocator (e.g. huge-page regions).
    fn mapped_bytes(&self) -> usize {
        0
    }

    /// Facts about the loaded index worth a note beside its records (e.g. the space of its
    /// parts), given the number of keys.
    fn notes(&self, keys: usize) -> Vec<String> {
        let _ = keys;
        Vec::new()
    }

    /// For an index behind a HOPE encoder: the encoder's figures, copied into every record.
    fn hope_facts(&self) -> Option<HopeFacts> {
        None
    }

    /// Called at the end of the load, inside its timing and before its memory is measured:
    /// an index that works in the background finishes that work (a load is done when the
    /// index has settled). By default nothing.
    fn finish_load(&mut self) {}

    /// Called before each measured run, after the load: an index that works in the
    /// background can finish that work first, or start background work the run is to be
    /// measured under (the `-merging` hybrid). By default nothing.
    fn before_run(&mut self) {}

    /// Called after each measured run, before its record is made: stops what
    /// [`before_run`](Self::before_run) started. By default nothing.
    fn after_run(&mut self) {}

    /// The merges the index ran since the last call, oldest first, for an index that rebuilds
    /// part of itself in batches (the hybrid indexes). The runner drains them after the load
    /// and after each run, so a record carries the merges its own operations ran.
    fn take_merges(&mut self) -> Vec<Merge> {
        Vec::new()
    }
}

/// One merge of a hybrid index: its dynamic stage merged into a new static stage (an element
/// of an index record's JSON field `merges`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Merge {
    /// Entries written to the new static stage: the index's keys after the merge.
    pub entries: u64,
    /// Seconds the merge took (inside the write that triggered it).
    pub secs: f64,
    /// Seconds the same write then spent rebuilding the hybrid's filter over its static
    /// stage's keys (0 when it did not; absent from older records).
    #[serde(default)]
    pub filter_secs: f64,
    /// Bytes of the static stage before the merge.
    pub old_bytes: u64,
    /// Bytes of the new static stage (both exist during the merge).
    pub new_bytes: u64,
}

/// The figures of a HOPE encoder in front of an index (the JSON fields `compression_rate`,
/// `encode_ns_per_byte`, `dictionary_bytes`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HopeFacts {
    /// Key bytes over encoded key bytes, whole load set.
    pub compression_rate: f64,
    /// Nanoseconds per input byte to encode the load set, one thread.
    pub encode_ns_per_byte: f64,
    /// Bytes of the dictionary.
    pub dictionary_bytes: u64,
}

/// Reached only if the runner breaks its contract of checking [`Caps`] first.
#[cold]
#[inline(never)]
pub(crate) fn unsupported(op: &str) -> ! {
    panic!("internal error: the runner called `{op}` on an index whose Caps exclude it")
}

/// The value the harness stores for key number `i` of the load set (and for inserts).
///
/// Non-zero and different per key, so answers carry information and a wrong hit is visible.
#[inline]
pub fn value_of(i: usize) -> u64 {
    (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1
}

/// Folds a visited value into a scan checksum.
#[inline]
pub fn fold(acc: u64, v: u64) -> u64 {
    acc.rotate_left(5) ^ v
}
