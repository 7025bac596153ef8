//! MlpIndex: an ordered map of `u64` keys whose searches probe every trie level at once
//! (Xu, "Building Data Structures to Exploit Memory-Level Parallelism", §4;
//! `mlp-data-structures.txt`).
//!
//! ```
//! use mlpdex::mlp_index::MlpIndex;
//!
//! let mut m = MlpIndex::new(); // maps no memory until the first insert
//! m.insert(30, 300).unwrap(); // `Err` only if the system refuses memory
//! m.insert(10, 100).unwrap();
//! m.insert(20, 200).unwrap();
//! assert_eq!(m.get(20), Some(200));
//!
//! // Ordered: ranges in any std form, from either end.
//! assert_eq!(m.range(15..).collect::<Vec<_>>(), [(20, 200), (30, 300)]);
//! assert_eq!(m.range(..=20).next_back(), Some((20, 200)));
//!
//! // The BTreeMap vocabulary: entries, in-place values, std traits.
//! *m.entry(40).or_insert(0) += 1;
//! m.entry(10).and_modify(|v| *v += 1);
//! for (_, v) in m.iter_mut() {
//!     *v *= 2;
//! }
//! assert_eq!(format!("{m:?}"), "{10: 202, 20: 400, 30: 600, 40: 2}");
//! assert_eq!(m.pop_first(), Some((10, 202)));
//! ```
//!
//! # When to use it
//!
//! Large maps of integer keys (ids, timestamps, integer-encoded composite keys) that need
//! point lookups at hash-table speed together with ordered operations: a lookup that finds
//! its key is one round of parallel DRAM reads, where a B-tree makes one dependent read per
//! level.
//!
//! Not for:
//! - byte-string keys: use [`CuckooTrie`](crate::cuckoo_trie::CuckooTrie) (or encode them
//!   into `u64`s yourself if they fit);
//! - small maps that fit in cache: a `BTreeMap` is as fast there, and the first insert maps
//!   a 2 MiB top bitmap;
//! - insert-heavy loads: an insert costs more than a `BTreeMap`'s, growth included;
//! - many threads: it is single-threaded (see below); [`ConcurrentMlpIndex`] shares one
//!   between threads, its lookups lock-free and its writers taking turns.
//!
//! Measured speeds and sizes of its layouts, against the baselines and the Cuckoo Trie, on
//! uniform and clustered keys, as the suite `bench/suites/mlp-index.toml` wrote them:
//! [`docs/results/mlp-index.md`](../../../../docs/results/mlp-index.md); at 50M keys:
//! [`docs/results/50m.md`](../../../../docs/results/50m.md).
//!
//! # API
//!
//! [`MlpIndex`] has the methods of a `BTreeMap<u64, u64>` as inherent methods (no trait to
//! import): `get`/`get_mut`/`insert`/`remove`, [`entry`](MlpIndex::entry),
//! `range`/`iter`/`iter_mut`/`keys`/`values`/`values_mut` (double-ended), `retain`,
//! `pop_first`/`pop_last`, `lower_bound`/`upper_bound`, `with_capacity`/`reserve`, and
//! `FromIterator`, `Extend`, `IntoIterator` (owned, `&`, `&mut`), `Index`, `Clone`, `Eq`,
//! `Ord`, `Hash` and a `Debug` that prints the entries. Where it differs from std, and why:
//!
//! - Keys and values come out by value (`(u64, u64)`, `iter_mut` yields `(u64, &mut u64)`):
//!   a key is not stored whole anywhere (its leaf holds the bits its bucket does not imply),
//!   so there is nothing to borrow. Values live inline in the table, and `get_mut`,
//!   `iter_mut` and the entry API hand out `&mut` to them.
//! - `insert` returns `Result`: it fails only with [`Error::OutOfMemory`]. The std-shaped
//!   operations with no `Result` (entry insertion, `Extend`, `FromIterator`, `Clone`,
//!   `reserve`) panic in that case, as std's collections fail on allocation failure;
//!   [`VacantEntry::try_insert`], [`MlpIndex::try_reserve`] and [`MlpIndex::try_clone`]
//!   return the error.
//! - An empty or inverted range yields nothing, where `BTreeMap::range` panics.
//!
//! It also implements [`OrderedMap<u64>`](crate::OrderedMap) with 8-byte big-endian keys, so
//! code written against the shared trait runs on it (`insert` of another width fails with
//! [`Error::KeyWidth`]).
//!
//! # Contract
//!
//! What it is: a path-compressed 256-ary trie over the eight bytes of a key, whose nodes live
//! in a cuckoo hash table indexed by their *index* (the key prefix that leads to them, §4.2).
//! A search knows every prefix of its key up front, so it hashes all of them and issues all
//! their bucket reads at once: one round of parallel DRAM reads finds the longest prefix of
//! the key that is in the trie (the x-fast trie's `QueryLCP`, done as one `D = 8`-ary step).
//! Node payloads sit in the hash slots — the subtree's minimum key, the index and
//! path-compressed lengths, and the children as a short list or a 256-bit bitmap — so a
//! search never follows a pointer (§4.3). The top two trie levels are a flat 2 MiB bitmap
//! instead of hash nodes (§4.3, "Flat Bitmap For Top Layers").
//!
//! Beyond the paper: a map (values live in the leaves, so a lookup is one round of parallel
//! reads), deletion that keeps path compression complete and the minima right, predecessor
//! search and reverse iteration (descending through the largest child, since nodes keep only
//! their minimum), automatic growth and shrinking, and the bucketized layout the paper
//! describes but did not build.
//!
//! - [`MlpIndex`] maps `u64` to `u64`. Writes take `&mut self`; reads `&self`. It is `Send`
//!   and `Sync`, and not concurrent (see below).
//! - Memory: [`new`](MlpIndex::new) and [`clear`](MlpIndex::clear) leave a map that owns no
//!   table (its [`memory_usage`](MlpIndex::memory_usage) is the struct's size, a few hundred
//!   bytes); the first insert maps the top bitmap (2 MiB) and the smallest table. Removing
//!   the last key keeps them, as a `Vec` keeps its capacity.
//! - Growth never fails an insert short of the operating system refusing memory
//!   ([`Error::OutOfMemory`], after which the map is empty). `remove` may move one node into a
//!   grown table; if that allocation is refused it aborts, as `std`'s collections do.
//! - `memory_usage` counts the table, the top bitmap and scratch space: every byte the map
//!   owns.
//! - Invariants (checked by the hidden `check_invariants`, which the tests call): every key
//!   has exactly one leaf; path compression is complete (no node has one child); each node
//!   holds the minimum key below it; a top-bitmap bit is set exactly when an item has that
//!   3-byte prefix as its index.
//!
//! # Layouts
//!
//! [`Layout::Bucketized`] (default): 64-byte buckets of four 16-byte entries, up to 90% full.
//! A leaf is one entry: its value and the key bits its bucket does not imply (the prefix
//! hash is a bijection, split into bucket and quotient, so the bucket index and the stored
//! quotient give back the key's prefix). A node is one to three entries of the same bucket:
//! its minimum key and lengths, then up to 5 children inline, 20 as a list, or a 256-bit
//! bitmap. A search reads two buckets per index length.
//!
//! [`Layout::Paper`]: the layout the paper measured, 24-byte slots (key, value, metadata) in
//! a two-choice cuckoo table at up to 50% load. A node of more than 8 children borrows a free
//! slot of its 128-byte line for its bitmap, or an external 32-byte block. Simpler, but
//! larger and slower on dependent lookups (`mlp-index-paper` in the measured tables): a slot
//! may straddle two cache lines, so a search fetches up to four lines per index length.
//!
//! Both grow by about 1.5× when full (the bucketized table's bucket count is any integer;
//! division by it is a Barrett multiplication), so the load stays within 2/3 of the maximum
//! and the maximum; doubling would leave it between 1/2 and the maximum. Both shrink below a
//! quarter of the maximum load. [`Config`] picks the layout; its load factor defaults to the
//! layout's own.
//!
//! # Threads
//!
//! The paper's structure is single-threaded and so is this one. [`ConcurrentMlpIndex`] (module
//! [`concurrent`]) is the same trie shared between threads: lookups validate the versions of
//! the buckets' stripes after the parallel probe (the paper's future work), writers take turns
//! and lock the stripes of the buckets they store into, and growth builds the new table beside
//! the one lookups read, retiring it through the epoch collector. Writers in parallel would
//! need the Cuckoo Trie's copy-and-commit write sessions
//! ([`ConcurrentCuckooTrie`](crate::cuckoo_trie::ConcurrentCuckooTrie)) over this table.
//!
//! # Files
//!
//! - `raw::hash`: the invertible prefix hash, bucket and quotient (key elimination for
//!   leaves).
//! - `raw` (its `Store` trait): what the trie needs from a table.
//! - `raw::table`: the bucketized layout (buckets of atomic words, so that lookups can read
//!   them while a writer stores); cuckoo placement with eviction.
//! - `raw::stripes`: the stripe versions of the concurrent map's lookups and its writer.
//! - `raw::paper`: the paper's layout; borrowed slots and external blocks.
//! - `raw::top`: the flat bitmap of 3-byte prefixes with two summary levels.
//! - `raw::trie`: search, insertion, deletion, bounds, the cursor, the audit.
//! - this file: the map; `iter`: its iterators; `entry`: the entry API; `traits`: the std
//!   traits and [`OrderedMap`](crate::OrderedMap).
//! - `concurrent`: [`ConcurrentMlpIndex`] and its range iterator.

pub mod concurrent;
mod entry;
mod iter;
mod raw;
mod traits;

// The node-name hash of the tables, for `testing::internals` (the micro-benchmarks).
#[cfg(any(test, feature = "testing"))]
pub(crate) use raw::hash::{Geo, MIN_LEN, mix, prefix};

use core::ops::{Bound, RangeBounds, RangeInclusive};

use raw::paper::PaperTable;
use raw::table::{Loc, Table};
use raw::trie::{Cursor, RawIndex};

use crate::Error;

pub use concurrent::ConcurrentMlpIndex;
pub use entry::{Entry, OccupiedEntry, VacantEntry};
pub use iter::{
    IntoIter, IntoKeys, IntoValues, IterMut, Keys, Range, RangeBytes, Values, ValuesMut,
};

/// Table layouts (§4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Layout {
    /// Four 16-byte entries per 64-byte bucket; nodes of 1–3 entries in one bucket; up to
    /// 90% load (the paper's proposal, which it did not build: at most ~36 bytes per key).
    #[default]
    Bucketized,
    /// The layout the paper measured: 24-byte slots, two-choice cuckoo hashing at up to 50%
    /// load; large nodes borrow a slot of the same 128-byte line or use an external block.
    Paper,
}

impl Layout {
    /// The load factors the layout's cuckoo table supports, and its default.
    fn load_factors(self) -> (RangeInclusive<f64>, f64) {
        match self {
            Layout::Bucketized => (0.5..=0.95, 0.9),
            Layout::Paper => (0.2..=0.5, 0.5),
        }
    }
}

/// Construction settings.
///
/// Every field has a default that suits the chosen layout, so struct-update syntax works
/// whatever the layout:
///
/// ```
/// use mlpdex::mlp_index::{Config, Layout, MlpIndex};
///
/// let config = Config { layout: Layout::Paper, ..Default::default() };
/// assert_eq!(config.effective_max_load_factor(), 0.5);
/// let mut m = MlpIndex::with_config(config).unwrap();
/// m.insert(7, 70).unwrap();
/// assert_eq!(m.get(7), Some(70));
///
/// // A load factor the layout cannot reach is refused, naming the setting.
/// let bad = Config { layout: Layout::Paper, max_load_factor: Some(0.9), ..Default::default() };
/// assert!(MlpIndex::with_config(bad).is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Config {
    /// The table layout.
    pub layout: Layout,
    /// Largest fraction of table slots in use before the table grows (by about 1.5×):
    /// 0.5..=0.95 for [`Layout::Bucketized`], 0.2..=0.5 for [`Layout::Paper`]. `None` (the
    /// default) takes the layout's own: 0.9 bucketized, 0.5 paper.
    pub max_load_factor: Option<f64>,
    /// Whether tables of 2 MiB and more ask for transparent huge pages; default
    /// [`HugePages::Auto`](crate::HugePages::Auto).
    pub huge_pages: crate::HugePages,
}

impl Config {
    /// The defaults for `layout`.
    pub const fn with_layout(layout: Layout) -> Config {
        Config {
            layout,
            max_load_factor: None,
            huge_pages: crate::HugePages::Auto,
        }
    }

    /// The maximum load factor in force: the one set, or the layout's default.
    pub fn effective_max_load_factor(&self) -> f64 {
        self.max_load_factor.unwrap_or(self.layout.load_factors().1)
    }

    /// The maximum load factor in force, or [`Error::InvalidConfig`] naming the bad setting.
    fn validate(&self) -> Result<f64, Error> {
        let lf = self.effective_max_load_factor();
        if self.layout.load_factors().0.contains(&lf) {
            Ok(lf)
        } else {
            Err(Error::InvalidConfig {
                what: match self.layout {
                    Layout::Bucketized => "max_load_factor must be 0.5..=0.95 (bucketized)",
                    Layout::Paper => "max_load_factor must be 0.2..=0.5 (paper layout)",
                },
            })
        }
    }
}

/// The map core of either layout, or nothing yet: an empty map maps no memory until its
/// first insert.
enum Inner {
    Empty,
    Bucketized(RawIndex<Table>),
    Paper(RawIndex<PaperTable>),
}

/// Runs `$e` with `$r` bound to the layout's core, or `$empty` when there is none.
macro_rules! with_raw {
    ($inner:expr, $r:ident => $e:expr, empty => $empty:expr) => {
        match $inner {
            Inner::Bucketized($r) => $e,
            Inner::Paper($r) => $e,
            Inner::Empty => $empty,
        }
    };
}
use with_raw;

/// The smallest key within start bound `b`; `None` when no key is (`Excluded(u64::MAX)`).
fn first_key_in(b: Bound<u64>) -> Option<u64> {
    match b {
        Bound::Included(k) => Some(k),
        Bound::Excluded(k) => k.checked_add(1),
        Bound::Unbounded => Some(0),
    }
}

/// The largest key within end bound `b`; `None` when no key is (`Excluded(0)`).
fn last_key_in(b: Bound<u64>) -> Option<u64> {
    match b {
        Bound::Included(k) => Some(k),
        Bound::Excluded(k) => k.checked_sub(1),
        Bound::Unbounded => Some(u64::MAX),
    }
}

/// The keys of a range as `lo..=hi`; `None` when it is empty or inverted.
fn key_span(start: Bound<u64>, end: Bound<u64>) -> Option<(u64, u64)> {
    let (lo, hi) = (first_key_in(start)?, last_key_in(end)?);
    (lo <= hi).then_some((lo, hi))
}

/// Panics with `err`: for the std-shaped operations that have no `Result` (entry insertion,
/// `Extend`, `FromIterator`, `Clone`, `reserve`) when the operating system refuses memory.
#[cold]
#[track_caller]
fn out_of_memory(err: Error) -> ! {
    panic!("MlpIndex: {err}")
}

/// The MlpIndex ordered map of `u64` keys to `u64` values; see the [module docs](self).
///
/// Shaped like `BTreeMap<u64, u64>`, std traits included:
///
/// ```
/// use mlpdex::mlp_index::MlpIndex;
///
/// let mut m: MlpIndex = (1..=5).map(|k| (k, k * 10)).collect();
/// m.extend([(6, 60), (7, 70)]);
/// m.retain(|&k, _| k % 2 == 1);
/// assert_eq!(m[3], 30);
/// assert_eq!(m.keys().collect::<Vec<_>>(), [1, 3, 5, 7]);
/// assert_eq!(m.values().rev().next(), Some(70));
///
/// let copy = m.clone();
/// assert_eq!(copy, m);
/// for v in m.values_mut() {
///     *v += 1;
/// }
/// assert_ne!(copy, m);
/// let mut total = 0;
/// for (_, v) in &m {
///     total += v;
/// }
/// assert_eq!(total, 31 + 11 + 51 + 71);
/// assert_eq!(m.into_iter().next_back(), Some((7, 71)));
/// ```
pub struct MlpIndex {
    raw: Inner,
    config: Config,
}

impl MlpIndex {
    /// An empty map with the default [`Config`]. Allocates nothing until the first insert:
    ///
    /// ```
    /// use mlpdex::mlp_index::MlpIndex;
    ///
    /// let mut m = MlpIndex::new();
    /// assert!(m.memory_usage() <= 4096);
    /// m.insert(1, 1).unwrap(); // maps the top bitmap and the smallest table
    /// assert!(m.memory_usage() > 2 << 20);
    /// m.clear(); // gives them back
    /// assert!(m.memory_usage() <= 4096);
    /// ```
    pub const fn new() -> MlpIndex {
        MlpIndex {
            raw: Inner::Empty,
            config: Config::with_layout(Layout::Bucketized),
        }
    }

    /// An empty map with `config`, or [`Error::InvalidConfig`] naming the bad setting.
    /// Allocates nothing until the first insert.
    pub fn with_config(config: Config) -> Result<MlpIndex, Error> {
        config.validate()?;
        Ok(MlpIndex {
            raw: Inner::Empty,
            config,
        })
    }

    /// An empty map with room for `capacity` keys (an estimate: how many slots a key takes
    /// depends on the prefixes keys share).
    ///
    /// # Panics
    ///
    /// If the operating system refuses the memory; [`try_reserve`](Self::try_reserve) returns
    /// the error instead.
    pub fn with_capacity(capacity: usize) -> MlpIndex {
        let mut m = MlpIndex::new();
        m.reserve(capacity);
        m
    }

    /// The settings this map was built with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The core, made if the map has none yet.
    #[inline]
    fn allocated(&mut self) -> Result<&mut Inner, Error> {
        if let Inner::Empty = self.raw {
            self.allocate()?;
        }
        Ok(&mut self.raw)
    }

    /// Makes the core of an empty map: the top bitmap and the smallest table.
    #[cold]
    #[inline(never)]
    fn allocate(&mut self) -> Result<(), Error> {
        let lf = self.config.validate()?;
        self.raw = match self.config.layout {
            Layout::Bucketized => Inner::Bucketized(RawIndex::new(lf, self.config.huge_pages)?),
            Layout::Paper => Inner::Paper(RawIndex::new(lf, self.config.huge_pages)?),
        };
        Ok(())
    }

    /// Makes room for `additional` more keys, so that inserting them does not grow the
    /// table (an estimate; removals may shrink it again).
    ///
    /// # Panics
    ///
    /// If the operating system refuses the memory; see [`try_reserve`](Self::try_reserve).
    pub fn reserve(&mut self, additional: usize) {
        if let Err(e) = self.try_reserve(additional) {
            out_of_memory(e)
        }
    }

    /// As [`reserve`](Self::reserve), returning [`Error::OutOfMemory`] instead of panicking
    /// (the map is unchanged then).
    pub fn try_reserve(&mut self, additional: usize) -> Result<(), Error> {
        if additional == 0 {
            return Ok(());
        }
        with_raw!(self.allocated()?, r => r.reserve(additional), empty => Ok(()))
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: u64) -> Option<u64> {
        with_raw!(&self.raw, r => r.get(key), empty => None)
    }

    /// The value of `key`, in place.
    #[inline]
    fn get_ref(&self, key: u64) -> Option<&u64> {
        with_raw!(&self.raw, r => Some(r.value(r.leaf(key)?)), empty => None)
    }

    /// Where the leaf of `key` is.
    fn leaf(&self, key: u64) -> Option<Loc> {
        with_raw!(&self.raw, r => r.leaf(key), empty => None)
    }

    /// The value of the leaf at `l`, in place (`l` from this map, no change since).
    fn value_at(&self, l: Loc) -> &u64 {
        with_raw!(&self.raw, r => r.value(l), empty => unreachable!("a leaf in an empty map"))
    }

    /// As [`value_at`](Self::value_at), for writing.
    fn value_at_mut(&mut self, l: Loc) -> &mut u64 {
        with_raw!(&mut self.raw, r => r.value_mut(l), empty => unreachable!("a leaf in an empty map"))
    }

    /// The key and value of `key`, as `BTreeMap::get_key_value` (the key is the one given:
    /// keys are integers, there is no other copy to return).
    #[inline]
    pub fn get_key_value(&self, key: u64) -> Option<(u64, u64)> {
        self.get(key).map(|v| (key, v))
    }

    /// The value of `key`, for changing in place.
    pub fn get_mut(&mut self, key: u64) -> Option<&mut u64> {
        let l = self.leaf(key)?;
        Some(self.value_at_mut(l))
    }

    /// Whether `key` is present.
    #[inline]
    pub fn contains_key(&self, key: u64) -> bool {
        self.get(key).is_some()
    }

    /// Stores `value` under `key`; returns the previous value.
    ///
    /// Fails only with [`Error::OutOfMemory`] when the operating system refuses a grown
    /// table, after which the map is empty (the items being moved had nowhere to go).
    pub fn insert(&mut self, key: u64, value: u64) -> Result<Option<u64>, Error> {
        with_raw!(self.allocated()?, r => r.insert(key, value), empty => unreachable!("allocated"))
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: u64) -> Option<u64> {
        with_raw!(&mut self.raw, r => r.remove(key), empty => None)
    }

    /// Removes `key`; returns it with its value.
    pub fn remove_entry(&mut self, key: u64) -> Option<(u64, u64)> {
        self.remove(key).map(|v| (key, v))
    }

    /// The entry of `key`, for in-place manipulation; see [`Entry`].
    pub fn entry(&mut self, key: u64) -> Entry<'_> {
        match self.leaf(key) {
            Some(loc) => Entry::Occupied(OccupiedEntry::new(self, key, loc)),
            None => Entry::Vacant(VacantEntry::new(self, key)),
        }
    }

    /// Number of keys.
    #[inline]
    pub fn len(&self) -> usize {
        with_raw!(&self.raw, r => r.len(), empty => 0)
    }

    /// Whether the map is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes every key and releases the table: the map then costs what
    /// [`new`](Self::new)'s does. (Removing the last key one at a time keeps the smallest
    /// table, as a `Vec` keeps its capacity.)
    pub fn clear(&mut self) {
        self.raw = Inner::Empty;
    }

    /// Bytes the map owns: the struct itself, and the table, top bitmap and scratch space
    /// once the first insert has made them.
    pub fn memory_usage(&self) -> usize {
        with_raw!(&self.raw, r => r.bytes(), empty => 0) + size_of::<Self>()
    }

    /// Bytes mapped directly from the operating system (the table and the top bitmap), a
    /// part of [`memory_usage`](Self::memory_usage).
    pub fn mapped_bytes(&self) -> usize {
        with_raw!(&self.raw, r => r.mapped_bytes(), empty => 0)
    }

    /// The first entry at or after `bound`, its value in place.
    fn seek_ge(&self, bound: Bound<u64>) -> Option<(u64, &u64)> {
        let k = first_key_in(bound)?;
        with_raw!(&self.raw, r => r.lower_bound(k).map(|(k, l)| (k, r.value(l))), empty => None)
    }

    /// The last entry at or before `bound`, its value in place.
    fn seek_le(&self, bound: Bound<u64>) -> Option<(u64, &u64)> {
        let k = last_key_in(bound)?;
        with_raw!(&self.raw, r => r.upper_bound(k).map(|(k, l)| (k, r.value(l))), empty => None)
    }

    /// The first entry at or after `bound` (`Included(k)`: key `≥ k`; `Excluded(k)`: `> k`;
    /// `Unbounded`: the first entry).
    pub fn lower_bound(&self, bound: Bound<u64>) -> Option<(u64, u64)> {
        self.seek_ge(bound).map(|(k, v)| (k, *v))
    }

    /// The last entry at or before `bound` (`Included(k)`: key `≤ k`; `Excluded(k)`: `< k`;
    /// `Unbounded`: the last entry).
    pub fn upper_bound(&self, bound: Bound<u64>) -> Option<(u64, u64)> {
        self.seek_le(bound).map(|(k, v)| (k, *v))
    }

    /// The smallest entry.
    pub fn first(&self) -> Option<(u64, u64)> {
        self.lower_bound(Bound::Unbounded)
    }

    /// The largest entry.
    pub fn last(&self) -> Option<(u64, u64)> {
        self.upper_bound(Bound::Unbounded)
    }

    /// The smallest entry (`BTreeMap`'s name for [`first`](Self::first)).
    pub fn first_key_value(&self) -> Option<(u64, u64)> {
        self.first()
    }

    /// The largest entry (`BTreeMap`'s name for [`last`](Self::last)).
    pub fn last_key_value(&self) -> Option<(u64, u64)> {
        self.last()
    }

    /// Removes and returns the smallest entry.
    pub fn pop_first(&mut self) -> Option<(u64, u64)> {
        let (k, _) = self.first()?;
        self.remove_entry(k)
    }

    /// Removes and returns the largest entry.
    pub fn pop_last(&mut self) -> Option<(u64, u64)> {
        let (k, _) = self.last()?;
        self.remove_entry(k)
    }

    /// The entries with keys in `range`, in order; double-ended. An empty or inverted range
    /// yields nothing (where `BTreeMap::range` would panic).
    pub fn range<R: RangeBounds<u64>>(&self, range: R) -> Range<'_> {
        Range::new(
            self,
            range.start_bound().cloned(),
            range.end_bound().cloned(),
        )
    }

    /// Every entry, in order.
    pub fn iter(&self) -> Range<'_> {
        self.range(..)
    }

    /// Every key, in order.
    pub fn keys(&self) -> Keys<'_> {
        Keys(self.iter())
    }

    /// Every value, in key order.
    pub fn values(&self) -> Values<'_> {
        Values(self.iter())
    }

    /// Every entry in order, each value borrowed for changing in place.
    ///
    /// The walk runs when this is called: it records where each value is (16 bytes of
    /// scratch per key, freed with the iterator) before handing out the first `&mut`, because
    /// the trie's walk reads the buckets the values live in.
    pub fn iter_mut(&mut self) -> IterMut<'_> {
        let mut items = Vec::with_capacity(self.len());
        with_raw!(&mut self.raw, r => {
            let mut c = Cursor::ends(false);
            while let Some((k, l)) = c.step(r) {
                items.push((k, r.value_ptr(l)));
            }
        }, empty => {});
        IterMut::new(items)
    }

    /// Every value in key order, borrowed for changing in place (see
    /// [`iter_mut`](Self::iter_mut)).
    pub fn values_mut(&mut self) -> ValuesMut<'_> {
        ValuesMut(self.iter_mut())
    }

    /// The keys, in order, consuming the map.
    pub fn into_keys(self) -> IntoKeys {
        IntoKeys(self.into_iter())
    }

    /// The values, in key order, consuming the map.
    pub fn into_values(self) -> IntoValues {
        IntoValues(self.into_iter())
    }

    /// Keeps only the entries for which `f` returns `true`, visiting them in key order; `f`
    /// may change the values it keeps.
    pub fn retain<F: FnMut(&u64, &mut u64) -> bool>(&mut self, mut f: F) {
        with_raw!(&mut self.raw, r => {
            let mut c = Cursor::ends(false);
            while let Some((k, l)) = c.step(r) {
                if f(&k, r.value_mut(l)) {
                    continue;
                }
                r.remove(k);
                // The removal may have moved items: start again past `k`.
                match k.checked_add(1) {
                    Some(next) => c = Cursor::seek(r, next, false),
                    None => break,
                }
            }
        }, empty => {});
    }

    /// A copy of the map, or [`Error::OutOfMemory`] (the `Clone` impl panics instead).
    pub fn try_clone(&self) -> Result<MlpIndex, Error> {
        let raw = match &self.raw {
            Inner::Empty => Inner::Empty,
            Inner::Bucketized(r) => Inner::Bucketized(r.try_clone()?),
            Inner::Paper(r) => Inner::Paper(r.try_clone()?),
        };
        Ok(MlpIndex {
            raw,
            config: self.config.clone(),
        })
    }

    /// Audits every structural invariant (slow: reads the whole table). For tests.
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<(), String> {
        with_raw!(&self.raw, r => r.audit(), empty => Ok(()))
    }
}
