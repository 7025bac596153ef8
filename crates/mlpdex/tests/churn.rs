#![cfg(target_os = "linux")]
//! Long churn at a stable key count: nothing leaks, and memory stays flat.
//!
//! Every map of the crate that stores values is driven through millions of operations that
//! keep its key count constant: each step either updates a present key (`insert` over it) or
//! removes a present key and inserts an absent one. Keys are numbers drawn from a universe of
//! twice the key count, written as 8 to 20 bytes (a bijective hash of the number, big-endian,
//! then a tail whose length depends on the number) for the byte-string maps, and as the hash
//! itself for [`MlpIndex`]. Each thread owns the keys congruent to its id, so it knows what
//! every `insert` and `remove` must return, and checks it.
//!
//! Values count their live instances ([`Live`]: one more on creation and on clone, one less
//! on drop, in a counter of the test's own), for the maps generic over the value type:
//! [`SkipList`], [`ConcurrentCuckooTrie`] (4 threads) and [`CuckooTrie`] (one thread, behind a
//! mutex). [`MlpIndex`] (one thread, behind a mutex) and [`ConcurrentMlpIndex`] (4 threads,
//! its tables retired through the epoch) store `u64` values only, so they are checked for
//! memory alone.
//!
//! After filling and a warm-up phase, the run is sampled at checkpoints: `memory_usage()`,
//! the process's resident set (`VmRSS` of `/proc/self/status`), `len()` and the live-value
//! count, each taken after flushing epoch-based reclamation (repeated `pin().flush()` of
//! `crossbeam-epoch`, whose global collector both concurrent maps use, with no other thread
//! pinned). Checked at every checkpoint: `len()` is the key count, the live values are exactly
//! the stored ones, `memory_usage()` is within 1.5× + 4 MiB of its value after the warm-up and
//! the resident set within 1.5× + 16 MiB. After dropping the map and flushing again, no value
//! may be alive. These are memory bounds, not timings; the runs are sized by operation counts.
//! A run finishes even when a checkpoint fails, prints its measurements, and then fails with
//! every problem it found.
//!
//! The tests of this file run one at a time (a lock), since the resident set and the epoch
//! collector belong to the whole process.
//!
//! - `small_churn_*` (not ignored, for CI): 10,000 keys, 100,000 operations, 4 checkpoints.
//! - `churn_*_10m` (ignored): 100,000 keys, 10⁷ operations after a warm-up of 10⁶, 10
//!   checkpoints; `churn_concurrent_cuckoo_trie_100m` and `churn_concurrent_mlp_index_100m`
//!   (ignored): 10⁸ operations, 20 checkpoints; a few minutes each at most:
//!   `cargo test --release -p mlpdex --test churn -- --ignored --nocapture`.

use std::sync::atomic::AtomicIsize;
use std::sync::atomic::Ordering::{AcqRel, Acquire};
use std::sync::{Mutex, MutexGuard};
use std::thread;
use std::time::Instant;

use mlpdex::cuckoo_trie::{ConcurrentCuckooTrie, CuckooTrie};
use mlpdex::mlp_index::{ConcurrentMlpIndex, MlpIndex};
use mlpdex::skiplist::SkipList;
use mlpdex::testing::TestRng;
use mlpdex::testing::concurrent::join_all;
use mlpdex::{ConcurrentOrderedMap, OrderedMap};

// ---------------------------------------------------------------------------------------------
// Values that count themselves
// ---------------------------------------------------------------------------------------------

/// A value that counts its live instances (originals and clones) in its test's tally.
#[derive(Debug)]
struct Live {
    id: u64,
    tally: &'static AtomicIsize,
}

impl Live {
    fn new(id: u64, tally: &'static AtomicIsize) -> Live {
        tally.fetch_add(1, AcqRel);
        Live { id, tally }
    }
}

impl Clone for Live {
    fn clone(&self) -> Live {
        Live::new(self.id, self.tally)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.tally.fetch_sub(1, AcqRel);
    }
}

// ---------------------------------------------------------------------------------------------
// The maps, as the churn drives them
// ---------------------------------------------------------------------------------------------

/// A bijection on `u64` (the splitmix64 finaliser): distinct numbers, distinct keys, spread
/// over the key space.
fn mix(k: u64) -> u64 {
    let mut z = k;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Key number `k` as 8 to 20 bytes: `mix(k)` big-endian, then `k % 13` copies of its low byte.
fn key_bytes(k: u64, buf: &mut [u8; 20]) -> &[u8] {
    let h = mix(k);
    buf[..8].copy_from_slice(&h.to_be_bytes());
    let tail = (k % 13) as usize;
    buf[8..8 + tail].fill(h as u8);
    &buf[..8 + tail]
}

/// A map under churn: keys by number, values by id. `insert` and `remove` return the id of
/// the value they hand back.
trait Target: Sync {
    fn insert(&self, k: u64, id: u64) -> Option<u64>;
    fn remove(&self, k: u64) -> Option<u64>;
    fn len(&self) -> usize;
    fn memory_usage(&self) -> usize;
}

/// A concurrent map of [`Live`] values, used from every thread.
struct Concurrent<M> {
    map: M,
    tally: &'static AtomicIsize,
}

impl<M: ConcurrentOrderedMap<Live>> Target for Concurrent<M> {
    fn insert(&self, k: u64, id: u64) -> Option<u64> {
        let mut buf = [0; 20];
        match self
            .map
            .insert(key_bytes(k, &mut buf), Live::new(id, self.tally))
        {
            Ok(old) => old.map(|v| v.id),
            Err(e) => panic!("insert of key number {k} failed: {e}"),
        }
    }
    fn remove(&self, k: u64) -> Option<u64> {
        let mut buf = [0; 20];
        self.map.remove(key_bytes(k, &mut buf)).map(|v| v.id)
    }
    fn len(&self) -> usize {
        self.map.len()
    }
    fn memory_usage(&self) -> usize {
        self.map.memory_usage()
    }
}

/// A single-threaded map of [`Live`] values behind a mutex (driven by one thread).
struct Single<M> {
    map: Mutex<M>,
    tally: &'static AtomicIsize,
}

impl<M> Single<M> {
    fn lock(&self) -> MutexGuard<'_, M> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<M: OrderedMap<Live> + Send> Target for Single<M> {
    fn insert(&self, k: u64, id: u64) -> Option<u64> {
        let mut buf = [0; 20];
        let v = Live::new(id, self.tally);
        match self.lock().insert(key_bytes(k, &mut buf), v) {
            Ok(old) => old.map(|v| v.id),
            Err(e) => panic!("insert of key number {k} failed: {e}"),
        }
    }
    fn remove(&self, k: u64) -> Option<u64> {
        let mut buf = [0; 20];
        self.lock().remove(key_bytes(k, &mut buf)).map(|v| v.id)
    }
    fn len(&self) -> usize {
        self.lock().len()
    }
    fn memory_usage(&self) -> usize {
        self.lock().memory_usage()
    }
}

/// [`MlpIndex`] (integer keys and values) behind a mutex: the value is the id itself.
struct Mlp(Mutex<MlpIndex>);

impl Mlp {
    fn lock(&self) -> MutexGuard<'_, MlpIndex> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Target for Mlp {
    fn insert(&self, k: u64, id: u64) -> Option<u64> {
        match self.lock().insert(mix(k), id) {
            Ok(old) => old,
            Err(e) => panic!("insert of key number {k} failed: {e}"),
        }
    }
    fn remove(&self, k: u64) -> Option<u64> {
        self.lock().remove(mix(k))
    }
    fn len(&self) -> usize {
        self.lock().len()
    }
    fn memory_usage(&self) -> usize {
        self.lock().memory_usage()
    }
}

/// The concurrent MlpIndex, its writers taking turns (values are `u64`: no tally).
struct ConcurrentMlp(ConcurrentMlpIndex);

impl Target for ConcurrentMlp {
    fn insert(&self, k: u64, id: u64) -> Option<u64> {
        match self.0.insert(mix(k), id) {
            Ok(old) => old,
            Err(e) => panic!("insert of key number {k} failed: {e}"),
        }
    }
    fn remove(&self, k: u64) -> Option<u64> {
        self.0.remove(mix(k))
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn memory_usage(&self) -> usize {
        self.0.memory_usage()
    }
}

// ---------------------------------------------------------------------------------------------
// The churn
// ---------------------------------------------------------------------------------------------

/// The size of a churn run.
#[derive(Clone, Copy, Debug)]
struct Size {
    /// Keys stored throughout (a multiple of `threads`).
    keys: usize,
    /// Threads writing at once.
    threads: usize,
    /// Operations after the warm-up (which makes `ops / checkpoints` more).
    ops: u64,
    /// Samples taken after the warm-up, evenly spaced.
    checkpoints: u64,
}

const SMALL: usize = 10_000;
const LARGE: usize = 100_000;

impl Size {
    fn small(threads: usize) -> Size {
        Size {
            keys: SMALL,
            threads,
            ops: 100_000,
            checkpoints: 4,
        }
    }
    fn ten_million(threads: usize) -> Size {
        Size {
            keys: LARGE,
            threads,
            ops: 10_000_000,
            checkpoints: 10,
        }
    }
    fn hundred_million(threads: usize) -> Size {
        Size {
            keys: LARGE,
            threads,
            ops: 100_000_000,
            checkpoints: 20,
        }
    }
}

/// One thread's keys (the numbers congruent to its id modulo the thread count, `2 *
/// keys / threads` of them), which half is stored, and the id of each stored value.
struct Worker {
    t: usize,
    threads: usize,
    rng: TestRng,
    present: Vec<u64>,
    absent: Vec<u64>,
    /// The id stored under each of the thread's keys (by `k / threads`).
    current: Vec<Option<u64>>,
    next_id: u64,
}

impl Worker {
    fn new(t: usize, size: Size) -> Worker {
        let mine = (2 * size.keys / size.threads) as u64;
        let threads = size.threads as u64;
        let (present, absent) = (0..mine)
            .map(|j| j * threads + t as u64)
            .partition(|&k| mix(k ^ 0xA5A5) & 1 == 0);
        Worker {
            t,
            threads: size.threads,
            rng: TestRng::new(0xC4_0000 + t as u64),
            present,
            absent,
            current: vec![None; mine as usize],
            next_id: 0,
        }
    }

    fn new_id(&mut self) -> u64 {
        self.next_id += 1;
        (self.t as u64) << 48 | self.next_id
    }

    fn slot(&self, k: u64) -> usize {
        (k / self.threads as u64) as usize
    }

    /// Stores every key of the present half. The split is random, so rebalance it to exactly
    /// half first.
    fn fill(&mut self, target: &impl Target) {
        let half = self.current.len() / 2;
        while self.present.len() > half {
            let k = self.present.pop().expect("more than half present");
            self.absent.push(k);
        }
        while self.present.len() < half {
            let k = self.absent.pop().expect("more than half absent");
            self.present.push(k);
        }
        for i in 0..self.present.len() {
            let k = self.present[i];
            let id = self.new_id();
            assert_eq!(target.insert(k, id), None, "fill: key number {k}");
            let s = self.slot(k);
            self.current[s] = Some(id);
        }
    }

    /// `ops` operations: a third of the steps update a stored key, the others remove a stored
    /// key and insert an absent one (two operations).
    fn churn(&mut self, target: &impl Target, ops: u64) {
        let mut done = 0;
        while done < ops {
            let i = self.rng.index(self.present.len());
            let k = self.present[i];
            let s = self.slot(k);
            if self.rng.below(3) == 0 {
                let id = self.new_id();
                let old = target.insert(k, id);
                assert_eq!(old, self.current[s], "update of key number {k}");
                self.current[s] = Some(id);
                done += 1;
            } else {
                let old = target.remove(k);
                assert_eq!(old, self.current[s], "remove of key number {k}");
                self.current[s] = None;
                let a = self.rng.index(self.absent.len());
                let k2 = self.absent[a];
                let s2 = self.slot(k2);
                let id = self.new_id();
                assert_eq!(target.insert(k2, id), None, "insert of key number {k2}");
                self.current[s2] = Some(id);
                self.present[i] = k2;
                self.absent[a] = k;
                done += 2;
            }
        }
    }
}

/// Bytes resident in memory for this process (`VmRSS`).
fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("reading /proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .map(|kb| kb * 1024)
        .expect("a VmRSS line in /proc/self/status")
}

/// Flushes epoch-based reclamation: rounds of 256 `pin().flush()`, until `tally` reads `want`
/// (at most 64 rounds; with no tally, one round).
fn flush_epochs(tally: Option<&AtomicIsize>, want: isize) {
    for _ in 0..64 {
        for _ in 0..256 {
            crossbeam_epoch::pin().flush();
        }
        if tally.is_none_or(|t| t.load(Acquire) == want) {
            return;
        }
    }
}

/// What a checkpoint measured.
#[derive(Clone, Copy, Debug)]
struct Sample {
    ops: u64,
    memory: usize,
    rss: usize,
    len: usize,
    live: Option<isize>,
}

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// The tests of this file, one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Fills `target` with `size.keys` keys, warms it up, churns it through `size.ops` operations
/// on `size.threads` threads with checkpoints, drops it, and checks everything described in
/// the [module docs](self). `tally` counts the live values of `target` (none for a map of
/// plain integers).
fn churn<T: Target>(name: &str, target: T, tally: Option<&'static AtomicIsize>, size: Size) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    assert_eq!(size.keys % size.threads, 0, "{size:?}");
    let base = tally.map_or(0, |t| t.load(Acquire));
    assert_eq!(base, 0, "[{name}] values alive before the run");
    let phase = size.ops / size.checkpoints;
    let mut workers: Vec<Worker> = (0..size.threads).map(|t| Worker::new(t, size)).collect();
    let run = |workers: &mut Vec<Worker>, target: &T, fill: bool| {
        thread::scope(|s| {
            let hs: Vec<_> = workers
                .iter_mut()
                .map(|w| {
                    s.spawn(move || {
                        if fill {
                            w.fill(target);
                        }
                        w.churn(target, phase / size.threads as u64);
                    })
                })
                .collect();
            join_all(hs);
        });
    };
    let sample = |target: &T, ops: u64| {
        flush_epochs(tally, size.keys as isize);
        Sample {
            ops,
            memory: target.memory_usage(),
            rss: rss(),
            len: target.len(),
            live: tally.map(|t| t.load(Acquire)),
        }
    };
    let mut problems = Vec::new();
    let mut check = |s: &Sample, start: &Sample| {
        let at = format!("after {} operations", s.ops);
        if s.len != size.keys {
            problems.push(format!(
                "{at}: len() = {}, {} keys stored",
                s.len, size.keys
            ));
        }
        if let Some(live) = s.live
            && live != size.keys as isize
        {
            problems.push(format!(
                "{at}: {live} values alive, {} stored: {} more than stored",
                size.keys,
                live - size.keys as isize
            ));
        }
        if s.memory > start.memory * 3 / 2 + (4 << 20) {
            problems.push(format!(
                "{at}: memory_usage() = {} bytes, over 1.5 × {} + 4 MiB",
                s.memory, start.memory
            ));
        }
        if s.rss > start.rss * 3 / 2 + (16 << 20) {
            problems.push(format!(
                "{at}: resident set {}, over 1.5 × {} + 16 MiB",
                mib(s.rss),
                mib(start.rss)
            ));
        }
    };

    // Fill and warm up (one phase), then the measured phases.
    run(&mut workers, &target, true);
    let start = sample(&target, 0);
    check(&start, &start);
    let clock = Instant::now();
    let mut samples = vec![start];
    for c in 1..=size.checkpoints {
        run(&mut workers, &target, false);
        let s = sample(&target, c * phase);
        check(&s, &start);
        samples.push(s);
    }
    let secs = clock.elapsed().as_secs_f64();
    let end = *samples.last().expect("samples were taken");
    drop(target);
    flush_epochs(tally, 0);
    let after_drop = tally.map(|t| t.load(Acquire));
    if let Some(live) = after_drop.filter(|&l| l != 0) {
        problems.push(format!("{live} values alive after dropping the map"));
    }

    let peak_memory = samples.iter().map(|s| s.memory).max().unwrap_or(0);
    let peak_rss = samples.iter().map(|s| s.rss).max().unwrap_or(0);
    let show_live = |l: Option<isize>| l.map_or("-".to_string(), |l| l.to_string());
    println!(
        "churn | {name} | {} keys | {} threads | {} ops | {secs:.1} s | memory_usage {} -> {} \
         (peak {}) | RSS {} -> {} (peak {}) | live values {} -> {} (stored {}) | after drop {}",
        size.keys,
        size.threads,
        size.ops,
        start.memory,
        end.memory,
        peak_memory,
        mib(start.rss),
        mib(end.rss),
        mib(peak_rss),
        show_live(start.live),
        show_live(end.live),
        size.keys,
        show_live(after_drop),
    );
    assert!(
        problems.is_empty(),
        "[{name}] {size:?}: {} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// The maps
// ---------------------------------------------------------------------------------------------

fn skiplist(tally: &'static AtomicIsize) -> Concurrent<SkipList<Live>> {
    Concurrent {
        map: SkipList::new(),
        tally,
    }
}

fn concurrent_cuckoo_trie(tally: &'static AtomicIsize) -> Concurrent<ConcurrentCuckooTrie<Live>> {
    Concurrent {
        map: ConcurrentCuckooTrie::new(),
        tally,
    }
}

fn cuckoo_trie(tally: &'static AtomicIsize) -> Single<CuckooTrie<Live>> {
    Single {
        map: Mutex::new(CuckooTrie::new()),
        tally,
    }
}

fn mlp_index() -> Mlp {
    Mlp(Mutex::new(MlpIndex::new()))
}

#[test]
fn small_churn_skiplist() {
    static TALLY: AtomicIsize = AtomicIsize::new(0);
    churn("skip list", skiplist(&TALLY), Some(&TALLY), Size::small(4));
}

#[test]
fn small_churn_concurrent_cuckoo_trie() {
    static TALLY: AtomicIsize = AtomicIsize::new(0);
    let map = concurrent_cuckoo_trie(&TALLY);
    churn("concurrent cuckoo trie", map, Some(&TALLY), Size::small(4));
}

#[test]
fn small_churn_cuckoo_trie() {
    static TALLY: AtomicIsize = AtomicIsize::new(0);
    churn(
        "cuckoo trie",
        cuckoo_trie(&TALLY),
        Some(&TALLY),
        Size::small(1),
    );
}

#[test]
fn small_churn_mlp_index() {
    churn("mlp index", mlp_index(), None, Size::small(1));
}

#[test]
fn small_churn_concurrent_mlp_index() {
    let map = ConcurrentMlp(ConcurrentMlpIndex::new());
    churn("concurrent mlp index", map, None, Size::small(4));
}

#[test]
#[ignore = "minutes: run with --release -- --ignored"]
fn churn_skiplist_10m() {
    static TALLY: AtomicIsize = AtomicIsize::new(0);
    churn(
        "skip list",
        skiplist(&TALLY),
        Some(&TALLY),
        Size::ten_million(4),
    );
}

#[test]
#[ignore = "minutes: run with --release -- --ignored"]
fn churn_concurrent_cuckoo_trie_10m() {
    static TALLY: AtomicIsize = AtomicIsize::new(0);
    let map = concurrent_cuckoo_trie(&TALLY);
    churn(
        "concurrent cuckoo trie",
        map,
        Some(&TALLY),
        Size::ten_million(4),
    );
}

/// Issue 22's measure of the concurrent writers' reclamation: 10⁸ operations (two minutes).
#[test]
#[ignore = "minutes: run with --release -- --ignored"]
fn churn_concurrent_cuckoo_trie_100m() {
    static TALLY: AtomicIsize = AtomicIsize::new(0);
    let map = concurrent_cuckoo_trie(&TALLY);
    churn(
        "concurrent cuckoo trie",
        map,
        Some(&TALLY),
        Size::hundred_million(4),
    );
}

#[test]
#[ignore = "minutes: run with --release -- --ignored"]
fn churn_cuckoo_trie_10m() {
    static TALLY: AtomicIsize = AtomicIsize::new(0);
    churn(
        "cuckoo trie",
        cuckoo_trie(&TALLY),
        Some(&TALLY),
        Size::ten_million(1),
    );
}

#[test]
#[ignore = "minutes: run with --release -- --ignored"]
fn churn_mlp_index_10m() {
    churn("mlp index", mlp_index(), None, Size::ten_million(1));
}

#[test]
#[ignore = "minutes: run with --release -- --ignored"]
fn churn_concurrent_mlp_index_100m() {
    let map = ConcurrentMlp(ConcurrentMlpIndex::new());
    churn("concurrent mlp index", map, None, Size::hundred_million(4));
}
