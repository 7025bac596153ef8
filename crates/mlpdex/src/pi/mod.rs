//! PI: a skip list that executes queries in batches on a pool of threads, latch-free, with
//! a SIMD-searched index layer (Xie et al., "PI: a Parallel in-memory skip list based Index";
//! `pi-parallel-skiplist.txt`).
//!
//! ```
//! use mlpdex::pi::{Answer, Batch, Config, Pi, Query};
//!
//! let mut pi = Pi::with_config(Config { threads: 2, ..Config::default() })?;
//! let mut batch: Batch = (0..1000u64).map(|k| Query::Insert(k * 2, k)).collect();
//! pi.execute(&mut batch);
//! assert_eq!(pi.len(), 1000);
//!
//! // Any mix, in any order; answers come back in the batch's order, as if the queries had
//! // run one at a time in that order.
//! let mut batch = Batch::new();
//! batch.push(Query::Get(10));
//! batch.push(Query::Remove(10));
//! batch.push(Query::Get(10));
//! batch.push(Query::Insert(11, 7));
//! batch.push(Query::range(9..=12));
//! pi.execute(&mut batch);
//! assert_eq!(
//!     batch.answers(),
//!     [
//!         Answer::Value(Some(5)),
//!         Answer::Value(Some(5)),
//!         Answer::Value(None),
//!         Answer::Value(None),
//!         Answer::Entries(vec![(11, 7), (12, 6)]),
//!     ]
//! );
//! # Ok::<(), mlpdex::Error>(())
//! ```
//!
//! One query at a time, `Pi` is also a map shaped like `BTreeMap<u64, u64>` (and an
//! [`OrderedMap`](crate::OrderedMap) of 8-byte keys): `get`, `range`, `iter`,
//! `first_key_value` read on the calling thread; `insert` and `remove` run a batch of one;
//! `extend` and `collect` run batches of [`EXTEND_BATCH`].
//!
//! Byte-string keys: `Pi<Vec<u8>>` takes the same batches (`Batch<Vec<u8>>`) and one query at
//! a time reads and writes keys as `&[u8]`, like the crate's other byte maps:
//!
//! ```
//! use mlpdex::pi::{Batch, Pi, Query};
//!
//! let mut pi: Pi<Vec<u8>> = Pi::new();
//! let mut batch: Batch<Vec<u8>> = ["user:17", "user:3", "", "user:170"]
//!     .iter()
//!     .enumerate()
//!     .map(|(i, k)| Query::Insert(k.as_bytes().to_vec(), i as u64))
//!     .collect();
//! batch.push(Query::Scan(b"user:17".to_vec(), 2));
//! pi.execute(&mut batch);
//! assert_eq!(
//!     batch.answers()[4].entries(),
//!     [(b"user:17".to_vec(), 0), (b"user:170".to_vec(), 3)]
//! );
//! assert_eq!(pi.get(b"user:3"), Some(1));
//! ```
//!
//! # When to use it
//!
//! Many queries at a time on many cores: a server that gathers requests for a few
//! microseconds, a bulk join or lookup step. A batch is sorted, cut into one share per worker
//! so that each storage node is touched by one worker only, and each worker walks the index
//! for a group of queries at once with prefetching, so its DRAM misses overlap.
//!
//! Not for: one query at a time with low latency (a batch's queries all wait for the batch;
//! use [`MlpIndex`](crate::mlp_index::MlpIndex) or a concurrent map); long scans (a scan
//! walks the list node by node, and a count-limited one is read by every worker it may
//! reach: a B+-tree's leaves scan several times faster). Byte strings that share long
//! prefixes (URLs, paths) tie on every index compare and cost a whole-key comparison each;
//! a trie ([`CuckooTrie`](crate::cuckoo_trie::CuckooTrie)) does not pay for shared
//! prefixes.
//!
//! Measured (bench name `pi`, batches of 8192 from the harness's batched mode, against
//! `congee`, `scc-tree` and `skipmap` on as many threads as PI has workers; thread,
//! batch-size and insert-mix sweeps, ranges of 100 and 1000 keys, and the §6.8 breakdown
//! `pi-no-simd`, `pi-no-group`, `pi-no-prefetch`), as `bench/suites/pi.toml` wrote them:
//! [`docs/results/pi.md`](../../../../docs/results/pi.md). On this 2-core machine 4 threads
//! oversubscribe the cores; PI's latency percentiles there are of whole batches. Byte-string
//! keys (`bench/suites/pi-bytes.toml`: random 16-byte keys, and e-mail addresses whose
//! first 8 and often 16 bytes tie, against `scc-tree` and `skipmap`):
//! [`docs/results/pi-bytes.md`](../../../../docs/results/pi-bytes.md).
//!
//! # Contract
//!
//! - **Structure** (§3.1, §4.1): a sorted linked list of data nodes (key, value, tower
//!   height drawn with p = 1/4, deleted flag) under an *index layer* of levels of 64-byte
//!   entries, four keys and their routes down each, one contiguous array a level, searched
//!   with one AVX2 compare an entry (two SSE4.2 compares, or scalar ones, on CPUs without
//!   AVX2; detected at run time).
//! - **Keys** ([`PiKey`]): `u64`, or byte strings in lexicographic order (`Vec<u8>`; every
//!   key legal, the empty one included). The index layer holds 8-byte prefixes (a byte
//!   string's first eight bytes, big-endian, zero-padded), which order keys of different
//!   prefixes; where a query's prefix equals an entry's, the whole keys are compared (the
//!   index keeps each slot's node for that). A byte-string node keeps its prefix beside its
//!   key's bytes, so list walks read the bytes only on such ties.
//! - **Execution** (§3.2, Algorithms 1–4): [`Pi::execute`] sorts the batch by key (then by
//!   position), cuts it into one share per worker, finds every query's *interception* (the
//!   index node of largest key at most the query's) in parallel, moves the cuts so that no
//!   two workers share an interception (Algorithm 3), and lets each worker execute its share
//!   on its own stretch of the list without latches. Ranges are cut at the workers'
//!   boundaries (§3.2.5) and their pieces joined in key order.
//! - **Order rule**: a batch's answers are those of running its queries one at a time in
//!   batch order. Queries on one key run in batch order on one worker (they share an
//!   interception); a range or scan sees exactly the writes before it in the batch (a worker
//!   runs a range at its start key and overlays the writes on later keys of the range that
//!   precede it in the batch). A count-limited [`Query::Scan`] is a range to the end of the
//!   key space: every worker it reaches reads up to the count, and the first entries in key
//!   order make its answer.
//! - **Deletes** mark their node (§3.2.3). The index layer is rebuilt from the list in the
//!   background once the batches' writes reach [`Config::rebuild_fraction`] of the keys
//!   (default 15%): a thread of its own scans the list while batches keep running, and the
//!   first batch after it ends swaps the new index in ([`Pi::finish_rebuild`] waits for it).
//!   Right after a swap the workers unlink and free the deleted nodes the new index does not
//!   name, as an internal batch of unlinks; nodes deleted after the scan passed them wait for
//!   the next rebuild. Until a rebuild, new nodes are found by walking the list from an older
//!   one.
//! - **Memory**: nodes live in chunks the map owns (each worker takes slots from a chunk of
//!   its own, and freed nodes' slots are reused before any new chunk); chunks grow from
//!   4 KiB to 2 MiB, and the 2 MiB ones, like index levels of 2 MiB and more, ask for
//!   transparent huge pages ([`Config::huge_pages`]), so a walk's dependent node reads do not
//!   each also miss the TLB. Memory of freed nodes stays with the map for its next inserts.
//!   [`Pi::memory_usage`] counts the chunks whole.
//! - **Threads**: a pool of [`Config::threads`] workers owned by the map
//!   ([`Pi::set_threads`] replaces it between batches; on a single NUMA node, as on the
//!   machines measured so far, nothing is pinned). `Pi` is `Send` and `Sync`;
//!   `execute` takes `&mut self`, so batches run one after another.

mod batch;
mod key;
mod map;
pub(crate) mod raw;

pub use batch::{Answer, Batch, Query};
pub use key::PiKey;
pub use map::{EXTEND_BATCH, Range, RangeByteStrings, RangeBytes};

use key::sealed::Key;
use raw::execute::{self, Item, Op, Output, Work, handle_of};
use raw::index::IndexLayer;
use raw::node::{Heights, Node, Storage};
use raw::partition;
use raw::simd::Kind;
use raw::slab::Alloc;
use raw::sort;
use raw::traverse::{self, Walk};

use core::cmp::Ordering::{Equal, Greater, Less};
use core::ops::Bound;
use std::sync::Arc;

use crate::{Error, HugePages};

/// How a [`Pi`] runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// Worker threads (default: the machine's available parallelism).
    pub threads: usize,
    /// Rebuild the index layer once writes since the last rebuild reach this fraction of the
    /// keys (default 0.15; at least 1,024 writes).
    pub rebuild_fraction: f64,
    /// Use SIMD compares where the CPU has them (default on; off for the §6.8 breakdown).
    pub simd: bool,
    /// Queries walked through the index level by level together (default 16; 1: one at a
    /// time; at most 64).
    pub group: usize,
    /// Prefetch each query's next index entry during group walks (default on).
    pub prefetch: bool,
    /// Whether the list's node chunks and the index layer's large levels ask for 2 MiB
    /// transparent huge pages (see [`HugePages`]; default
    /// [`Auto`](crate::HugePages::Auto)).
    pub huge_pages: HugePages,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            rebuild_fraction: 0.15,
            simd: true,
            group: 16,
            prefetch: true,
            huge_pages: HugePages::Auto,
        }
    }
}

/// Writes before the first rebuild, and the least between two (fewer under miri, so that its
/// small tests rebuild too).
const MIN_REBUILD: usize = if cfg!(miri) { 32 } else { 1024 };

/// A batched skip list of `K` keys (`u64` by default, or `Vec<u8>` byte strings) and `u64`
/// values (see the module docs).
pub struct Pi<K: PiKey = u64> {
    /// Shared with the background rebuild's scan.
    storage: Arc<Storage<K>>,
    index: IndexLayer<K>,
    /// The current index layer's generation (nodes it names carry it in `indexed`).
    generation: u32,
    /// The background rebuild, while one runs: it returns the next generation's index.
    rebuild: Option<std::thread::JoinHandle<IndexLayer<K>>>,
    /// Handles of the nodes deleted and not yet unlinked.
    deleted: Vec<u64>,
    len: usize,
    /// Heap bytes of the nodes' keys (byte strings).
    key_bytes: usize,
    /// Writes since the last rebuild.
    writes: usize,
    config: Config,
    walk: Walk,
    /// `None` with one worker: shares run on the calling thread.
    pool: Option<rayon_core::ThreadPool>,
    /// Seeds the workers' tower heights, one seed a batch.
    batches: u64,
    /// Each worker's cursor into the list's node slots (kept between batches).
    allocs: Vec<Alloc<K>>,
    /// Scratch kept between batches, empty between them: the sorted items, their
    /// interceptions, the sort's splitters and its rows of buckets (one row a worker).
    /// Items borrow their batch, so between batches these hold only the allocations
    /// ([`recycle`]).
    items: Vec<Item<'static, K>>,
    handles: Vec<Option<u64>>,
    splitters: Vec<<K as Key>::Ref<'static>>,
    rows: Vec<Vec<Vec<Item<'static, K>>>>,
    /// The sort's integer tags, one vector a bucket.
    tags: Vec<Vec<u128>>,
}

/// The worker pool for `threads` workers (`None` for one: shares run on the caller).
fn pool_of(threads: usize) -> Result<Option<rayon_core::ThreadPool>, Error> {
    if threads == 0 || threads > 1024 {
        return Err(Error::InvalidConfig {
            what: "PI needs 1 to 1024 worker threads",
        });
    }
    if threads == 1 {
        return Ok(None);
    }
    rayon_core::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("mlpdex-pi-{i}"))
        .build()
        .map(Some)
        .map_err(|_| Error::InvalidConfig {
            what: "PI's worker threads could not be started",
        })
}

/// `s` cut into consecutive pieces of `sizes` (which sum to at most its length).
fn split_by<'a, T>(mut s: &'a mut [T], sizes: &[usize]) -> Vec<&'a mut [T]> {
    let mut out = Vec::with_capacity(sizes.len());
    for &n in sizes {
        let (a, rest) = core::mem::take(&mut s).split_at_mut(n);
        out.push(a);
        s = rest;
    }
    out
}

/// An empty vector of `U` on the allocation of `v` (emptied first), so that scratch of items
/// borrowing one batch can serve the next: collecting a vector's iterator in place keeps its
/// allocation when the element layouts agree, as they do for items of any two lifetimes
/// (when it did not, this would allocate anew, never misbehave).
fn recycle<T, U>(mut v: Vec<T>) -> Vec<U> {
    v.clear();
    v.into_iter().filter_map(|_| None).collect()
}

/// [`recycle`] for rows of buckets.
fn recycle_rows<T, U>(rows: Vec<Vec<Vec<T>>>) -> Vec<Vec<Vec<U>>> {
    rows.into_iter()
        .map(|row| row.into_iter().map(recycle).collect())
        .collect()
}

impl<K: PiKey> Default for Pi<K> {
    fn default() -> Self {
        Pi::new()
    }
}

impl<K: PiKey> Pi<K> {
    /// An empty map with the default [`Config`].
    ///
    /// # Panics
    /// If the operating system refuses to start the worker threads (see
    /// [`with_config`](Self::with_config) for the fallible form).
    pub fn new() -> Pi<K> {
        Pi::with_config(Config::default()).expect("starting PI's worker threads")
    }

    /// An empty map with `config`; `Err` for no threads, a fraction outside `(0, 1]`, or when
    /// the workers cannot be started.
    pub fn with_config(config: Config) -> Result<Pi<K>, Error> {
        let pool = pool_of(config.threads)?;
        if !(config.rebuild_fraction > 0.0 && config.rebuild_fraction <= 1.0) {
            return Err(Error::InvalidConfig {
                what: "PI's rebuild fraction lies in (0, 1]",
            });
        }
        let simd = if config.simd {
            Kind::detect()
        } else {
            Kind::Scalar
        };
        Ok(Pi {
            storage: Arc::new(Storage::new(config.huge_pages)),
            index: IndexLayer::default(),
            generation: 0,
            rebuild: None,
            deleted: Vec::new(),
            len: 0,
            key_bytes: 0,
            writes: 0,
            walk: Walk {
                simd,
                group: config.group.clamp(1, raw::index::MAX_GROUP),
                prefetch: config.prefetch,
            },
            config,
            pool,
            batches: 0,
            allocs: Vec::new(),
            items: Vec::new(),
            handles: Vec::new(),
            splitters: Vec::new(),
            rows: Vec::new(),
            tags: Vec::new(),
        })
    }

    /// Replaces the pool with one of `threads` workers for the batches to come; `Err` (and
    /// the old pool kept) for no threads, more than 1,024, or when they cannot be started.
    pub fn set_threads(&mut self, threads: usize) -> Result<(), Error> {
        if threads != self.config.threads {
            self.pool = pool_of(threads)?;
            self.config.threads = threads;
        }
        Ok(())
    }

    /// The configuration.
    pub fn config(&self) -> Config {
        self.config
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the map holds no key.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The value of `key`, looked up on the calling thread without a batch: one walk down
    /// the index layer and along the list (no batch can run meanwhile: `execute` needs
    /// `&mut self`).
    fn get_ref(&self, key: K::Ref<'_>) -> Option<u64> {
        let f = self.floor(key);
        if self.storage.is_head(f) || K::order(f.key(), key) != Equal {
            return None;
        }
        f.live_value()
    }

    /// The node of largest key at most `key` (deleted ones included), or the head.
    fn floor(&self, key: K::Ref<'_>) -> &Node<K> {
        let mut handle = [None];
        traverse::find_all(&self.index, self.walk, &[key], &mut handle);
        let start = match handle[0] {
            // SAFETY: as for the handles of a batch (`run_rows`): the node was indexed by the
            // current index layer, whose nodes are not freed while `self` is borrowed.
            Some(h) => unsafe { self.storage.node_at(h) },
            None => self.storage.head(),
        };
        execute::floor_of(start, key, false)
    }

    /// The first node (deleted ones included) with a key at least `key` (above it, with
    /// `skip`).
    fn first_node(&self, key: K::Ref<'_>, skip: bool) -> Option<&Node<K>> {
        let f = self.floor(key);
        if !skip && !self.storage.is_head(f) && K::order(f.key(), key) == Equal {
            Some(f)
        } else {
            f.next()
        }
    }

    /// The first live entry with a key at least `key` (above it, with `skip`), read on the
    /// calling thread.
    fn scan_one(&self, key: K::Ref<'_>, skip: bool) -> Option<(K, u64)> {
        let mut node = self.first_node(key, skip);
        while let Some(n) = node {
            if let Some(v) = n.live_value() {
                return Some((K::owned(n.key()), v));
            }
            node = n.next();
        }
        None
    }

    /// The live entries with keys in `(lo, hi)`, in order, read on the calling thread.
    fn collect_range(&self, lo: Bound<K::Ref<'_>>, hi: Bound<K::Ref<'_>>) -> Vec<(K, u64)> {
        let mut node = match lo {
            Bound::Included(k) => self.first_node(k, false),
            Bound::Excluded(k) => self.first_node(k, true),
            Bound::Unbounded => self.storage.head().next(),
        };
        let within = |n: &Node<K>| match hi {
            Bound::Included(h) => K::order(n.key(), h) != Greater,
            Bound::Excluded(h) => K::order(n.key(), h) == Less,
            Bound::Unbounded => true,
        };
        let mut out = Vec::new();
        while let Some(n) = node.filter(|n| within(n)) {
            if let Some(v) = n.live_value() {
                out.push((K::owned(n.key()), v));
            }
            node = n.next();
        }
        out
    }

    /// Bytes of the list's node chunks (slots of deleted nodes and spare slots included),
    /// of the keys' own heap blocks (byte strings), and of the index layer.
    pub fn memory_usage(&self) -> usize {
        self.storage.memory_usage() + self.key_bytes + self.index.memory_usage()
    }

    /// Executes every query of `batch` and stores the answers in it, one per query in the
    /// batch's order: those of running the queries one at a time in that order.
    pub fn execute(&mut self, batch: &mut Batch<K>) {
        assert!(
            batch.queries.len() <= u32::MAX as usize,
            "a batch holds at most 2^32 - 1 queries"
        );
        if self.rebuild.as_ref().is_some_and(|r| r.is_finished()) {
            self.finish_rebuild();
        }
        let outputs = self.run(batch);
        for mut out in outputs {
            self.len = self.len.wrapping_add_signed(out.delta);
            self.writes += out.updates;
            self.key_bytes += out.key_bytes;
            self.deleted.append(&mut out.deleted);
            for (pos, a) in out.points {
                batch.answers[pos as usize] = Answer::Value(a);
            }
            // Workers in key order: a range's parts join in key order. A scan's parts each
            // read up to its count; the first ones in key order make the answer.
            for (pos, mut entries) in out.ranges {
                if let Answer::Entries(e) = &mut batch.answers[pos as usize] {
                    if let Query::Scan(_, count) = batch.queries[pos as usize] {
                        entries.truncate(count.saturating_sub(e.len()));
                    }
                    e.append(&mut entries);
                }
            }
        }
        let due = MIN_REBUILD.max((self.len as f64 * self.config.rebuild_fraction) as usize);
        if self.writes >= due && self.rebuild.is_none() {
            self.start_rebuild();
        }
    }

    /// Whether a rebuild of the index layer is running in the background.
    pub fn is_rebuilding(&self) -> bool {
        self.rebuild.is_some()
    }

    /// Waits for a background rebuild of the index layer, if one runs, and swaps it in (which
    /// `execute` otherwise does at the first batch after it ends): afterwards the nodes
    /// deleted before the rebuild began are freed.
    pub fn finish_rebuild(&mut self) {
        let Some(handle) = self.rebuild.take() else {
            return;
        };
        // A panic in the rebuild is a bug: it surfaces here, on the map's thread.
        let index = handle
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        self.index = index;
        self.generation += 1;
        self.unlink_deleted();
    }

    /// Starts rebuilding the index layer on its own thread, from a scan of the list made
    /// while batches keep running: the scan reads keys, heights and deleted flags and follows
    /// links published with release stores, and no node is freed while it runs (frees happen
    /// only in [`unlink_deleted`](Self::unlink_deleted), after it ended).
    fn start_rebuild(&mut self) {
        let storage = Arc::clone(&self.storage);
        let generation = self.generation + 1;
        let huge = self.config.huge_pages;
        let spawned = std::thread::Builder::new()
            .name("mlpdex-pi-rebuild".into())
            .spawn(move || build_index(&storage, generation, huge));
        match spawned {
            Ok(handle) => self.rebuild = Some(handle),
            // No thread to be had: rebuild here (the result is the same, only later).
            Err(_) => {
                self.index = build_index(&self.storage, generation, self.config.huge_pages);
                self.generation = generation;
                self.unlink_deleted();
            }
        }
        self.writes = 0;
    }

    /// After a new index layer was swapped in: unlinks and frees the deleted nodes it does not
    /// name, as an internal batch of unlinks that the workers run like any batch (sorted,
    /// partitioned, each on its own stretch of the list). Nodes deleted after the rebuild's
    /// scan passed them are in the new index; they wait for the next rebuild.
    fn unlink_deleted(&mut self) {
        let handles = core::mem::take(&mut self.deleted);
        if handles.is_empty() {
            return;
        }
        let storage = Arc::clone(&self.storage);
        let mut nodes: Vec<(u64, &Node<K>)> = handles
            .into_iter()
            .map(|h| {
                // SAFETY: a handle in `deleted` is the address of a node a batch marked
                // deleted; nodes are freed only by this pass (those it hands back as kept
                // stay linked) or when the storage drops, and `storage` keeps it alive.
                (h, unsafe { storage.node_at(h) })
            })
            .collect();
        nodes.sort_unstable_by(|a, b| K::order(a.1.key(), b.1.key()));
        // A node deleted, revived and deleted again is listed twice.
        nodes.dedup_by_key(|n| n.0);
        let threads = self.config.threads;
        // The nodes are sorted: cut them into equal parts.
        let mut splitters: Vec<K::Ref<'_>> = recycle(core::mem::take(&mut self.splitters));
        splitters.extend((1..threads).map(|t| nodes[t * nodes.len() / threads].1.key()));
        let mut rows: Vec<Vec<Vec<Item<'_, K>>>> = recycle_rows(core::mem::take(&mut self.rows));
        if rows.len() != threads {
            rows = vec![vec![Vec::new(); threads]; threads];
        }
        for (pos, &(handle, node)) in nodes.iter().enumerate() {
            let key = node.key();
            let b = sort::bucket::<K>(&splitters, key);
            rows[0][b].push(Item {
                key,
                pos: pos as u32,
                op: Op::Unlink(handle),
            });
        }
        self.splitters = recycle(splitters);
        let outputs = self.run_rows(&mut rows);
        self.rows = recycle_rows(rows);
        drop(nodes);
        for mut out in outputs {
            self.deleted.append(&mut out.kept);
            // SAFETY: every worker is done, so no walk stands on an unlinked node; the list
            // no longer links it (nor does any other unlinked node still in use: all are
            // freed here together); the index names it not (its generation differs from the
            // current one); no rebuild scan runs (swaps and this pass happen between a
            // rebuild's end and the next one's start); and `nodes`, which borrowed it, is
            // dropped above.
            self.key_bytes -= unsafe { self.storage.free(out.unlinked) };
        }
    }

    /// Runs `job(t)` for every worker `t`: on the pool, or here with one worker.
    fn on_workers<J: FnOnce() + Send>(pool: Option<&rayon_core::ThreadPool>, jobs: Vec<J>) {
        match pool {
            Some(pool) if jobs.len() > 1 => pool.scope(|s| {
                for job in jobs {
                    s.spawn(move |_| job());
                }
            }),
            _ => jobs.into_iter().for_each(|job| job()),
        }
    }

    /// Sorts the batch into items, finds their interceptions, plans the shares and runs them
    /// (Algorithm 1), every step but the planning on all workers; the workers' outputs in
    /// worker order. Leaves each answer at its default (no value, or no entries).
    fn run(&mut self, batch: &mut Batch<K>) -> Vec<Output<K>> {
        let threads = self.config.threads;
        let n = batch.queries.len();
        let queries = &batch.queries;
        let answers = &mut batch.answers;
        answers.clear();
        answers.resize(n, Answer::Value(None));
        // 1. Items bucketed by key range, one chunk of the batch a worker (`sort.rs`).
        let mut splitters: Vec<K::Ref<'_>> = recycle(core::mem::take(&mut self.splitters));
        sort::splitters(queries, threads, &mut splitters);
        let mut rows: Vec<Vec<Vec<Item<'_, K>>>> = recycle_rows(core::mem::take(&mut self.rows));
        if rows.len() != threads {
            rows = vec![vec![Vec::new(); threads]; threads];
        }
        let chunk = n.div_ceil(threads).max(1);
        let sp = &splitters;
        let chunks = queries.chunks(chunk).zip(answers.chunks_mut(chunk));
        let mut row_iter = rows.iter_mut();
        let jobs: Vec<_> = chunks
            .zip(row_iter.by_ref())
            .enumerate()
            .map(|(t, ((q, a), row))| move || sort::bucket_chunk(q, t * chunk, sp, row, a))
            .collect();
        Self::on_workers(self.pool.as_ref(), jobs);
        for row in row_iter {
            row.iter_mut().for_each(Vec::clear);
        }
        self.splitters = recycle(splitters);
        let outputs = self.run_rows(&mut rows);
        self.rows = recycle_rows(rows);
        outputs
    }

    /// Phases 2–4 of [`run`](Self::run), from the items bucketed in `rows`.
    fn run_rows<'b>(&mut self, rows: &mut [Vec<Vec<Item<'b, K>>>]) -> Vec<Output<K>> {
        let threads = self.config.threads;
        let pool = self.pool.as_ref();
        // 2. Each bucket gathered and sorted, and its interceptions found (Algorithm 1,
        // lines 2–6), by one worker.
        let sizes: Vec<usize> = (0..threads)
            .map(|b| rows.iter().map(|r| r[b].len()).sum())
            .collect();
        let total: usize = sizes.iter().sum();
        let blank = Item {
            key: K::min_ref(),
            pos: 0,
            op: Op::Get,
        };
        let mut items: Vec<Item<'b, K>> = recycle(core::mem::take(&mut self.items));
        items.resize(total, blank);
        self.handles.clear();
        self.handles.resize(total, None);
        let mut starts: Vec<Option<&Node<K>>> = vec![None; total];
        let storage: &Storage<K> = &self.storage;
        let (rows, index, walk) = (&*rows, &self.index, self.walk);
        self.tags.resize_with(threads, Vec::new);
        let parts = split_by(&mut items, &sizes)
            .into_iter()
            .zip(split_by(&mut self.handles, &sizes))
            .zip(split_by(&mut starts, &sizes))
            .zip(self.tags.iter_mut());
        let jobs: Vec<_> = parts
            .enumerate()
            .map(|(b, (((items, handles), starts), tags))| {
                move || {
                    sort::gather_sorted(rows, b, items, tags);
                    let keys: Vec<K::Ref<'b>> = items.iter().map(|i| i.key).collect();
                    traverse::find_all(index, walk, &keys, handles);
                    for (s, h) in starts.iter_mut().zip(handles.iter()) {
                        // SAFETY: a handle is the address of a node the current index was
                        // built from, stamped with its generation; nodes are freed only by
                        // `unlink_deleted`, which takes out only nodes whose stamp differs
                        // from the current generation, or when the map drops. So the node is
                        // alive while `self` is borrowed, for the whole batch.
                        *s = h.map(|h| unsafe { storage.node_at(h) });
                    }
                }
            })
            .collect();
        Self::on_workers(pool, jobs);
        // 3. The interception adjustment, from the buckets as first cuts.
        let mut bounds = Vec::with_capacity(threads + 1);
        bounds.push(0);
        for s in &sizes {
            bounds.push(bounds[bounds.len() - 1] + s);
        }
        let plan = partition::plan(&items, &starts, bounds);
        // 4. Each share executed on its own stretch of the list (Algorithm 4).
        self.batches += 1;
        let seed = self.batches.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut outputs: Vec<Output<K>> = (0..threads).map(|_| Output::default()).collect();
        // The cursors belong to this storage (the map never changes its storage; `clear`
        // replaces the whole map, cursors included). Those of workers gone since the last
        // batch give their slots back.
        let keep = threads.min(self.allocs.len());
        for a in self.allocs.drain(keep..) {
            self.storage.retire(a);
        }
        self.allocs.resize_with(threads, Alloc::default);
        let jobs: Vec<_> = outputs
            .iter_mut()
            .zip(self.allocs.iter_mut())
            .enumerate()
            .map(|(t, (out, alloc))| {
                let work = Work {
                    items: &items[plan.bounds[t]..plan.bounds[t + 1]],
                    starts: &starts[plan.bounds[t]..plan.bounds[t + 1]],
                    parts: &plan.parts[t],
                    first: plan.first[t],
                    end: plan.end[t],
                    generation: self.generation,
                };
                move || {
                    if work.items.is_empty() && work.parts.is_empty() {
                        return;
                    }
                    let salt = (t as u64).wrapping_mul(0xD1B5_4A32_D192_ED03);
                    let mut heights = Heights::new(seed ^ salt);
                    out.points.reserve(work.items.len());
                    execute::run(storage, &work, &mut heights, alloc, out);
                }
            })
            .collect();
        Self::on_workers(pool, jobs);
        drop(plan);
        self.items = recycle(items);
        outputs
    }
}

/// The index layer of the list's live nodes of height 2 and up, each stamped with
/// `generation` (the stamp keeps a node deleted later linked while this index names it),
/// its large levels on huge pages as `huge` asks.
fn build_index<K: Key>(storage: &Storage<K>, generation: u32, huge: HugePages) -> IndexLayer<K> {
    IndexLayer::build(
        storage
            .iter()
            .filter(|n| n.height >= 2 && n.live_value().is_some())
            .map(|n| {
                n.indexed
                    .store(generation, core::sync::atomic::Ordering::Relaxed);
                let key = n.key();
                (
                    K::prefix(key),
                    n.height as usize,
                    handle_of(n),
                    K::second(key),
                )
            }),
        huge,
    )
}

impl<K: PiKey> Drop for Pi<K> {
    fn drop(&mut self) {
        // The rebuild thread shares the list; let it end before the map goes.
        if let Some(h) = self.rebuild.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scratch of items outlives its batch as an allocation only (`recycle`), and the
    /// next batch reuses it rather than allocating anew.
    #[test]
    fn item_scratch_is_reused_across_batches() {
        let mut m: Pi = Pi::with_config(Config {
            threads: 2,
            ..Config::default()
        })
        .unwrap();
        // Fewer than the rebuild threshold (32 writes under miri, 1024 otherwise).
        let n: u64 = if cfg!(miri) { 30 } else { 500 };
        let mut b: Batch = (0..n).map(|k| Query::Insert(k, k)).collect();
        m.execute(&mut b);
        let (items, rows) = (m.items.as_ptr(), m.rows[0][0].as_ptr());
        assert!(m.items.is_empty() && m.items.capacity() >= n as usize);
        let mut b: Batch = (0..n - 10).map(Query::Get).collect();
        m.execute(&mut b);
        assert_eq!((m.items.as_ptr(), m.rows[0][0].as_ptr()), (items, rows));
        assert_eq!(b.answers()[5], Answer::Value(Some(5)));
    }

    /// The whole life of nodes on one and two workers, small enough for miri: links,
    /// background rebuilds (the scan beside batches), deletes, unlinks and frees after the
    /// swap, and the drop of what is left.
    #[test]
    fn nodes_are_linked_rebuilt_unlinked_and_freed() {
        // Above the rebuild threshold (1024 writes, 32 under miri) at each step.
        let n: u64 = if cfg!(miri) { 60 } else { 1500 };
        for threads in [1, 2] {
            let mut m = Pi::with_config(Config {
                threads,
                ..Config::default()
            })
            .unwrap();
            let mut b: Batch = (0..n).map(|k| Query::Insert(k * 2, k)).collect();
            m.execute(&mut b);
            // Deletes run beside the rebuild's scan.
            let gone = n * 13 / 15;
            let mut b: Batch = (0..gone).map(|k| Query::Remove(k * 2)).collect();
            m.execute(&mut b);
            m.finish_rebuild();
            let added = n * 11 / 15;
            let mut b: Batch = (0..added).map(|k| Query::Insert(k * 2 + 1, k)).collect();
            m.execute(&mut b);
            m.finish_rebuild();
            let live = (n - gone + added) as usize;
            assert_eq!(m.len(), live);
            let mut b = Batch::new();
            b.push(Query::range(..));
            b.push(Query::Get(2 * (n - 1)));
            b.push(Query::Get(2));
            m.execute(&mut b);
            assert_eq!(b.answers()[0].entries().len(), live);
            assert_eq!(b.answers()[1], Answer::Value(Some(n - 1)));
            assert_eq!(b.answers()[2], Answer::Value(None));
            // The last rebuild began after every delete: no deleted node is left.
            assert_eq!(m.storage.iter().count(), live, "{threads} workers");
        }
    }
}
