//! Shortcut extendible hashing: a hash map of `u64` keys and values whose directory is also
//! kept in the page table, so that the CPU's page walk resolves it
//! (vm-shortcuts-extendible-hashing.txt; Linux only).
//!
//! ```
//! use mlpdex::shortcut_eh::ShortcutEh;
//!
//! let mut map = ShortcutEh::new();
//! for k in 0..10_000u64 {
//!     map.insert(k, k * 2)?;
//! }
//! assert_eq!(map.get(4321), Some(8642));
//! assert_eq!(map.remove(4321), Some(8642));
//! assert_eq!(map.len(), 9_999);
//!
//! // Lookups from other threads while this one writes: reader handles.
//! let reader = map.reader();
//! std::thread::scope(|s| {
//!     s.spawn(|| assert_eq!(reader.get(7), Some(14)));
//!     map.insert(10_000, 1).unwrap();
//! });
//! # Ok::<(), mlpdex::Error>(())
//! ```
//!
//! # When to use it
//!
//! A point index (no order, no ranges) whose inserts must never stall: extendible hashing
//! grows one bucket split at a time, so no insert rehashes the table the way a doubling hash
//! table's occasional insert does (the insert-latency profile in the measured results below
//! shows the difference). Its usual price is the directory, one more dependent memory access
//! a lookup; the shortcut removes it: each directory slot is a virtual page mapped onto its
//! bucket's page, and a lookup reads the bucket at `shortcut + slot * 4096`.
//!
//! When not: ordered keys (use a trie or a B-tree of this crate); a table whose size is known
//! up front (a plain open-addressing table is simpler and at least as fast); small tables
//! (every bucket is a 4 KiB page); platforms other than Linux. Each shortcut slot is a kernel
//! memory mapping where the slots of a bucket are not consecutive pages, and Linux caps a
//! process at `vm.max_map_count` of them (65,530 by default): past about that many directory
//! slots the shortcut cannot be built ([`ShortcutEh::shortcut_error`] says so) and lookups
//! use the traditional directory, correct but slower. Raise `vm.max_map_count` (as root,
//! `sysctl vm.max_map_count=4194304`) for tables of more than a few million keys.
//!
//! # Contract
//!
//! - **Structure** (§4, after Fagin et al. 1979): buckets of one 4 KiB page (189 entries in
//!   63 cache-line groups of three, tags and linear probing inside, see `raw::page`), each of
//!   a local depth; a directory of `2^global_depth` slots indexed by a hash's top bits. A full
//!   bucket splits in two (the directory doubles first if needed); a bucket whose buddy's
//!   entries would fit in one page with its own merges with it after a remove.
//! - **The page pool** (§2.1): every bucket page lives in one main-memory file
//!   (`memfd_create`), grown and shrunk with `ftruncate` and mapped linearly, pages faulted in
//!   as it grows; freed pages are reused first, and a free run at the file's end is truncated
//!   away once no reader can still reach it.
//! - **The shortcut** (§4.1): a second directory of virtual slot pages, each mapped with
//!   `mmap(MAP_SHARED | MAP_FIXED)` onto its bucket's page in the pool and faulted in
//!   eagerly, kept up to date asynchronously by a mapper thread from a queue of requests
//!   (a new area after a doubling, slot remaps after splits and merges). Both directories
//!   carry versions; a lookup takes the shortcut only while its version equals the
//!   traditional directory's and the average fan-in (slots per bucket) is at most
//!   [`Config::fan_in_threshold`] (§3.2: more fan-in means more TLB misses than the pointer
//!   saves), so a lookup never reads through a slot the mapper has not caught up with.
//! - **Threads**: one writer, the `ShortcutEh` itself (`&mut self` writes), and any number of
//!   readers: `&self` lookups of the owner, and [`Reader`] handles on other threads, which
//!   read beside the writer without locks (bucket seqlocks; epoch-protected directories,
//!   shortcut areas and pool truncation). Every lookup is linearizable.
//! - **Errors**: a kernel refusal (the pool file, a mapping, a resize) or the pool reaching
//!   [`Config::max_pool_bytes`] makes the write that needed memory return
//!   [`Error::OutOfMemory`], the map unchanged; a shortcut the kernel refuses leaves the map
//!   on its traditional directory.
//! - **Memory** ([`ShortcutEh::memory_usage`]): the pool's pages, 4 bytes a directory slot,
//!   and an estimate of the shortcut's kernel cost: 8 bytes a slot of page-table entries and
//!   about 200 bytes a mapping call.
//!
//! # Measured
//!
//! Against the §4.2 baselines at 100M keys (load percentiles, the load-time chart of
//! Figure 7a with each load's slowest insert and 99.9th percentile in its legend, hit
//! lookups of Figure 7b): [`docs/results/shortcut-eh.md`](../../../../docs/results/shortcut-eh.md)
//! and [`docs/results/shortcut-eh-load.svg`](../../../../docs/results/shortcut-eh-load.svg).
//! On the machine it ran on:
//!
//! - **Inserts** cost a little more than classic extendible hashing's (the mapper's remaps
//!   interrupt the writer), and two to two and a half times a doubling table's on average,
//!   without its stalls: `ht` and `hashmap` stop for seconds to rehash, `eh`'s slowest insert
//!   is milliseconds (a directory doubling, a pool step). A split costs several
//!   microseconds, so the 99th percentile is that slow. In that suite run `shortcut-eh`'s
//!   slowest insert was still a few tenths of a second, from unmapping the previous shortcut
//!   area in one call on whichever thread collected it; the mapper now unmaps retired areas
//!   itself, in steps, and a load since took tens of milliseconds at most, as `eh`'s does
//!   (the suite is to be run again).
//! - **Lookups** take the shortcut's page walk instead of the directory read. With the
//!   benchmark's default of huge pages for every other structure, the directory read is
//!   cheap to translate and overlaps other lookups: the shortcut wins dependent lookups
//!   (about 1.3x `eh`) and independent ones by less, and a plain table on huge pages (`ht`,
//!   `hashmap`) is faster still. With 4 KiB pages everywhere, the paper's setting
//!   ([`docs/results/shortcut-eh-4k.md`](../../../../docs/results/shortcut-eh-4k.md)), every
//!   structure pays a page walk and the shortcut reads at `ht`'s speed, 1.3x to 1.5x `eh`.
//!   A shortcut cannot use huge pages: each slot maps a 4 KiB bucket of its own.
//!
//! The fan-in sweep (§3.2), lookups through the shortcut and through the traditional
//! directory from a directory of 2^20 slots, so that the key count sets the fan-in:
//! [`docs/results/shortcut-eh-fanin.md`](../../../../docs/results/shortcut-eh-fanin.md). On
//! the machine it ran on, the shortcut wins both kinds of lookup at a fan-in of 2, wins
//! dependent lookups but loses independent ones near 8, and loses both from about 32 up; the
//! default [`Config::fan_in_threshold`] of 8 is the paper's and sits at that boundary.
//! Lookups between waves of inserts with both versions traced (Figure 8):
//! [`docs/results/shortcut-eh-sync.svg`](../../../../docs/results/shortcut-eh-sync.svg), from
//! `mlpdex-bench eh-sync` (its JSON beside it).

mod raw;

use core::fmt;

use crossbeam_epoch as epoch;

use crate::Error;
use raw::{Core, PAGE, Settings};

/// The hash every table of this module uses (and the benchmark's baselines with it, so that
/// the comparison is of structures, not of hash functions): the splitmix64 finaliser, two
/// multiplies and three shifts, a bijection of `u64`.
///
/// ```
/// let (a, b) = (mlpdex::shortcut_eh::hash(1), mlpdex::shortcut_eh::hash(2));
/// assert_ne!(a, b);
/// ```
#[inline]
pub fn hash(key: u64) -> u64 {
    raw::hash(key).0
}

/// Settings of a [`ShortcutEh`].
///
/// ```
/// use mlpdex::shortcut_eh::{Config, ShortcutEh};
///
/// // Classic extendible hashing: the traditional directory only.
/// let map = ShortcutEh::with_config(Config { shortcut: false, ..Config::default() })?;
/// assert!(!map.stats().shortcut_in_use);
/// # Ok::<(), mlpdex::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// Keep a shortcut directory beside the traditional one (a mapper thread per map).
    /// Default true.
    pub shortcut: bool,
    /// Lookups take the shortcut only while the directory's slots per bucket average at
    /// most this. Default 8 (the paper's).
    pub fan_in_threshold: f64,
    /// The most bytes the page pool may hold; inserts that need more fail with
    /// [`Error::OutOfMemory`]. The pool reserves this much address space (not memory).
    /// Default: twice the machine's physical memory.
    pub max_pool_bytes: usize,
    /// The directory's depth to start with: `2^initial_depth` slots, all naming the first
    /// bucket (so no doubling happens until a bucket that deep splits). At most 28. Default 0.
    pub initial_depth: u32,
}

impl Default for Config {
    fn default() -> Self {
        // SAFETY: sysconf reads configuration values; no memory is touched.
        let phys = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) };
        let bytes = usize::try_from(phys).unwrap_or(1 << 18).max(1 << 18) * PAGE;
        Config {
            shortcut: true,
            fan_in_threshold: 8.0,
            max_pool_bytes: bytes.saturating_mul(2),
            initial_depth: 0,
        }
    }
}

/// A snapshot of a map's shape, from [`ShortcutEh::stats`].
///
/// ```
/// let mut map = mlpdex::shortcut_eh::ShortcutEh::new();
/// map.insert(1, 2)?;
/// let s = map.stats();
/// assert!(s.buckets >= 1 && s.slots >= s.buckets);
/// # Ok::<(), mlpdex::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Stats {
    /// Directory slots: `2^global_depth`.
    pub slots: usize,
    /// Buckets (pages holding entries).
    pub buckets: usize,
    /// Pages in the pool's file (buckets and free pages).
    pub pool_pages: usize,
    /// Average slots per bucket.
    pub fan_in: f64,
    /// Whether lookups take the shortcut right now (it exists, is in sync, and the fan-in is
    /// at most the threshold).
    pub shortcut_in_use: bool,
    /// Mapping calls of the current shortcut area.
    pub shortcut_mappings: usize,
    /// The traditional directory's version: one more for each change (doubling, split,
    /// merge).
    pub directory_version: u64,
    /// The version of the directory the shortcut reflects (it lags while the mapper catches
    /// up); `None` without a shortcut, once it was given up, or while the mapper remaps slots.
    pub shortcut_version: Option<u64>,
}

/// A hash map from `u64` to `u64` by shortcut extendible hashing (see the module docs).
///
/// ```
/// let mut map = mlpdex::shortcut_eh::ShortcutEh::new();
/// assert_eq!(map.insert(7, 70)?, None);
/// assert_eq!(map.insert(7, 71)?, Some(70));
/// assert_eq!(map.get(7), Some(71));
/// # Ok::<(), mlpdex::Error>(())
/// ```
pub struct ShortcutEh {
    core: Core,
    config: Config,
}

impl ShortcutEh {
    /// An empty map with the default [`Config`] (one bucket, and its mapper thread).
    ///
    /// # Panics
    ///
    /// If the kernel refuses the pool's file or first page, or the mapper thread; use
    /// [`with_config`](Self::with_config) to handle that as an error.
    pub fn new() -> ShortcutEh {
        Self::with_config(Config::default()).expect("creating the page pool")
    }

    /// An empty map with `config`, or an error: [`Error::InvalidConfig`] naming a bad
    /// setting, [`Error::OutOfMemory`] when the kernel refuses the pool.
    pub fn with_config(config: Config) -> Result<ShortcutEh, Error> {
        // NaN is refused too.
        if config
            .fan_in_threshold
            .partial_cmp(&1.0)
            .is_none_or(|o| o.is_lt())
        {
            return Err(Error::InvalidConfig {
                what: "fan_in_threshold must be at least 1",
            });
        }
        let max_pages = (config.max_pool_bytes / PAGE).min(u32::MAX as usize);
        if max_pages == 0 {
            return Err(Error::InvalidConfig {
                what: "max_pool_bytes must hold at least one 4 KiB page",
            });
        }
        if config.initial_depth > 28 {
            return Err(Error::InvalidConfig {
                what: "initial_depth must be at most 28",
            });
        }
        let core = Core::new(Settings {
            shortcut: config.shortcut,
            fan_in: config.fan_in_threshold,
            max_pages,
            depth: config.initial_depth,
        })?;
        Ok(ShortcutEh { core, config })
    }

    /// The settings the map was built with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The value stored under `key`.
    #[inline]
    pub fn get(&self, key: u64) -> Option<u64> {
        self.core.get(key)
    }

    /// True when `key` is stored.
    pub fn contains_key(&self, key: u64) -> bool {
        self.get(key).is_some()
    }

    /// Stores `value` under `key`, returning the value it replaces. Fails, leaving the map
    /// unchanged, when the pool or the directory cannot grow ([`Error::OutOfMemory`],
    /// [`Error::Capacity`]).
    #[inline]
    pub fn insert(&mut self, key: u64, value: u64) -> Result<Option<u64>, Error> {
        self.core.insert(key, value)
    }

    /// Removes `key`, returning its value.
    #[inline]
    pub fn remove(&mut self, key: u64) -> Option<u64> {
        self.core.remove(key)
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.core.len()
    }

    /// True when no key is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the map owns (see the module docs' memory item).
    pub fn memory_usage(&self) -> usize {
        self.core.memory_usage()
    }

    /// The map's shape now.
    pub fn stats(&self) -> Stats {
        let slots = 1usize << self.core.depth();
        let buckets = self.core.buckets();
        Stats {
            slots,
            buckets,
            pool_pages: self.core.pool_pages(),
            fan_in: slots as f64 / buckets.max(1) as f64,
            shortcut_in_use: self.core.shortcut_active(),
            shortcut_mappings: self.core.shortcut_runs(),
            directory_version: self.core.directory_version(),
            shortcut_version: self.core.shortcut_version(),
        }
    }

    /// Waits until the shortcut reflects every change made so far (the mapper applies them
    /// asynchronously); false when the map keeps no shortcut or the kernel refused it.
    pub fn wait_for_shortcut(&self) -> bool {
        self.core.wait_for_shortcut()
    }

    /// Why the shortcut was given up (the kernel refused a mapping), if it was; the map then
    /// works on its traditional directory.
    pub fn shortcut_error(&self) -> Option<Error> {
        self.core.shortcut_error()
    }

    /// Audits every structural invariant (slow: reads every bucket, and every shortcut slot
    /// when the shortcut is in sync). For tests.
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<(), String> {
        self.core.audit()
    }

    /// A handle for lookups from other threads while this map is written (see the module
    /// docs' threads item).
    pub fn reader(&self) -> Reader {
        Reader {
            shared: std::sync::Arc::clone(&self.core.shared),
        }
    }

    /// Every entry, in no particular order (bucket by bucket).
    pub fn iter(&self) -> Iter {
        let mut entries = Vec::with_capacity(self.len());
        self.core.for_each(|k, v| entries.push((k, v)));
        Iter {
            inner: entries.into_iter(),
        }
    }

    /// The keys, in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = u64> {
        self.iter().map(|(k, _)| k)
    }

    /// The values, in no particular order.
    pub fn values(&self) -> impl Iterator<Item = u64> {
        self.iter().map(|(_, v)| v)
    }

    /// Removes every key (a fresh table; the old pool's file goes).
    pub fn clear(&mut self) -> Result<(), Error> {
        *self = Self::with_config(self.config)?;
        Ok(())
    }
}

impl Default for ShortcutEh {
    fn default() -> Self {
        Self::new()
    }
}

/// The entries of a [`ShortcutEh`], in no particular order: a copy taken when the iterator
/// was made.
///
/// ```
/// let mut map = mlpdex::shortcut_eh::ShortcutEh::new();
/// map.insert(2, 20)?;
/// map.insert(1, 10)?;
/// let mut all: Vec<(u64, u64)> = map.iter().collect();
/// all.sort();
/// assert_eq!(all, [(1, 10), (2, 20)]);
/// # Ok::<(), mlpdex::Error>(())
/// ```
#[derive(Debug)]
pub struct Iter {
    inner: std::vec::IntoIter<(u64, u64)>,
}

impl Iterator for Iter {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        self.inner.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl ExactSizeIterator for Iter {}

impl IntoIterator for &ShortcutEh {
    type Item = (u64, u64);
    type IntoIter = Iter;

    fn into_iter(self) -> Iter {
        self.iter()
    }
}

impl Extend<(u64, u64)> for ShortcutEh {
    /// Inserts every pair.
    ///
    /// # Panics
    ///
    /// If an insert fails (the pool cannot grow); use [`ShortcutEh::insert`] to handle that.
    fn extend<I: IntoIterator<Item = (u64, u64)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v).expect("growing the page pool");
        }
    }
}

impl FromIterator<(u64, u64)> for ShortcutEh {
    /// A map of the pairs (a later pair's value replaces an earlier one's).
    ///
    /// # Panics
    ///
    /// As [`ShortcutEh::new`] and [`Extend::extend`].
    fn from_iter<I: IntoIterator<Item = (u64, u64)>>(iter: I) -> Self {
        let mut m = ShortcutEh::new();
        m.extend(iter);
        m
    }
}

impl fmt::Debug for ShortcutEh {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// A lookup handle on a [`ShortcutEh`] for other threads (`Clone`, `Send`, `Sync`): its
/// lookups run beside the map's writer without locks and see every write completed before
/// they began. It keeps the map's memory alive after the map is dropped, empty of meaning:
/// lookups then answer from the last state.
///
/// ```
/// let mut map = mlpdex::shortcut_eh::ShortcutEh::new();
/// map.insert(3, 30)?;
/// let reader = map.reader();
/// std::thread::spawn(move || assert_eq!(reader.get(3), Some(30))).join().unwrap();
/// # Ok::<(), mlpdex::Error>(())
/// ```
#[derive(Clone)]
pub struct Reader {
    shared: std::sync::Arc<raw::Shared>,
}

impl Reader {
    /// The value stored under `key`.
    #[inline]
    pub fn get(&self, key: u64) -> Option<u64> {
        let guard = epoch::pin();
        // SAFETY: `guard` pins this thread for the whole lookup.
        unsafe { self.shared.get(key, &guard) }
    }

    /// True when `key` is stored.
    pub fn contains_key(&self, key: u64) -> bool {
        self.get(key).is_some()
    }
}

impl fmt::Debug for Reader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reader").finish_non_exhaustive()
    }
}
