//! MlpIndex: an ordered map of `u64` keys whose searches probe every trie level at once
//! (Xu, "Building Data Structures to Exploit Memory-Level Parallelism", §4;
//! `mlp-data-structures.txt`).
//!
//! # What it is
//!
//! A path-compressed 256-ary trie over the eight bytes of a key, whose nodes live in a cuckoo
//! hash table indexed by their *index* (the key prefix that leads to them, §4.2). A search
//! knows every prefix of its key up front, so it hashes all of them and issues all their
//! bucket reads at once: one round of parallel DRAM reads finds the longest prefix of the key
//! that is in the trie (the x-fast trie's `QueryLCP`, done as one `D = 8`-ary step). Node
//! payloads sit in the hash slots — the subtree's minimum key, the index and path-compressed
//! lengths, and the children as a short list or a 256-bit bitmap — so a search never follows
//! a pointer (§4.3). The top two trie levels are a flat 2 MiB bitmap instead of hash nodes
//! (§4.3, "Flat Bitmap For Top Layers").
//!
//! Beyond the paper: a map (values live in the leaves, so a lookup is one round of parallel
//! reads), deletion that keeps path compression complete and the minima right, predecessor
//! search and reverse iteration (descending through the largest child, since nodes keep only
//! their minimum), automatic growth and shrinking, and the bucketized layout the paper
//! describes but did not build.
//!
//! # When to use it
//!
//! Large maps of integer keys (ids, timestamps, integer-encoded composite keys) that need
//! point lookups at hash-table speed together with ordered operations. Not for byte-string
//! keys (use [`CuckooTrie`](crate::cuckoo_trie::CuckooTrie)), nor for small maps that fit in
//! cache (a `BTreeMap` is as fast there, and the top bitmap alone takes 2 MiB), nor for
//! insert-heavy loads (an insert costs 1.5–2× a `BTreeMap`'s, growth included), nor for many
//! writer threads (single-threaded; see below).
//!
//! # Measured
//!
//! `mlpdex-bench` on this project's 2-core AMD EPYC VM (2 MiB pages, one dependent DRAM access
//! 286 ns), single thread, default layout, ratios to baselines in the same run; `c` is YCSB-C
//! (lookups of present keys), `lower-bound` 85% absent keys, `e` YCSB-E (short scans, 5%
//! inserts):
//!
//! | dataset, keys | workload | mode | ns/op | DRAM round trips | vs `btreemap` | vs `congee` | bytes/key |
//! |---|---|---|---|---|---|---|---|
//! | rand-8, 10M | c | independent | 267 | 0.93 | 2.41× | 2.13× | 29.4 |
//! | rand-8, 10M | c | dependent | 267 | 0.93 | 2.42× | 2.51× | 29.4 |
//! | rand-8, 10M | lower-bound | independent | 431 | 1.51 | 1.63× | 2.91× | 29.4 |
//! | rand-8, 10M | lower-bound | dependent | 420 | 1.47 | 1.65× | 2.91× | 29.4 |
//! | rand-8, 10M | load | — | 979 | 3.42 | 0.59× | 0.71× | 29.4 |
//! | rand-8, 10M | e | independent | 5082 | 17.7 | 0.38× | 2.55× | 29.4 |
//! | dec-a, 10M | c | independent / dependent | 269 / 282 | 0.94 / 0.98 | 2.80× / 2.74× | 3.45× / 3.10× | 35.7 |
//! | dec-a, 10M | lower-bound | independent / dependent | 519 / 527 | 1.81 / 1.84 | 1.50× / 1.52× | 2.36× / 2.52× | 35.7 |
//! | dec-a, 10M | load | — | 1416 | 4.94 | 0.51× | 0.66× | 35.7 |
//! | dec-b, 10M | c | independent / dependent | 270 / 276 | 0.94 / 0.96 | 2.23× / 2.18× | 3.48× / 4.13× | 29.4 |
//! | dec-b, 10M | lower-bound | independent / dependent | 571 / 582 | 1.99 / 2.03 | 1.31× / 1.26× | 3.33× / 3.23× | 29.4 |
//! | dec-b, 10M | load | — | 1375 | 4.80 | 0.44× | 0.83× | 29.4 |
//! | rand-8, 50M | c | dependent | 341 | 1.19 | 3.15× | 3.03× | 29.8 |
//! | rand-8, 50M | lower-bound | dependent | 588 | 2.05 | 2.14× | 2.80× | 29.8 |
//!
//! (rand-8 10M: median of 3 rounds; the others one round each. A later one-round run on
//! rand-8, after rebuilds stopped hashing items twice, loaded in 923 ns per key (0.69×). An
//! earlier build's dec-a run measured `lower-bound` at 1.31× / 1.42× `btreemap`, whose own
//! time moved from 666–703 to 777–798 ns between the runs. At 50M keys the VM's speed
//! moved between runs: in a second run MlpIndex took 410 ns for `c` and 755 for `lower-bound`,
//! against `hashmap` (hashbrown) at 459 and `sorted-vec` at 2502 / 2480; a run of an earlier
//! build, with `btreemap` at 889 / 934 ns, gave 2.57× and 1.58×. At 10M keys `hashmap` answers
//! dependent lookups in 361 ns.) A lookup that finds its key costs one
//! round of parallel reads (the leaf holds the value); `lower_bound` of an absent key needs a
//! second round for the successor's subtree, and a third when that subtree is a node (its
//! minimum's value is in its leaf). Inserts cost three to four round trips plus growth: a
//! split moves the old leaf to a bucket no search fetched, and rebuilding a 1.5× larger table
//! re-places every item (about 35% of load time; doubling would make loads about a fifth
//! faster and leave tables as little as 45% full: 43 bytes per key at 50M keys instead of 30).
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
//! slot of its 128-byte line for its bitmap, or an external 32-byte block. Simpler, but about
//! 3× larger (89.8 bytes per key on rand-8, 83.7 on dec-a, 94.0 on dec-b, 10M keys: within the
//! paper's 96, which assumes a half-full table) and 8–22% slower on dependent lookups (327 ns
//! against 267 on rand-8): a slot may straddle two cache lines, so a search fetches up to four
//! lines per index length. Its random-walk insertion tries up to 5000 evictions before
//! growing; with 500 it grew early near 50% load (110.9 bytes per key on rand-8).
//!
//! Both grow by about 1.5× when full (the bucketized table's bucket count is any integer;
//! division by it is a Barrett multiplication), so the load stays within 2/3 of the maximum
//! and the maximum; doubling would leave it between 1/2 and the maximum. Both shrink below a
//! quarter of the maximum load.
//!
//! # Compared with the Cuckoo Trie
//!
//! Same runs (rand-8, 10M keys, median of 3): MlpIndex answers `c` in 267 ns against the
//! Cuckoo Trie's 421–474 (1.6–1.8× faster), `lower-bound` in 420–431 ns against 701–739, and
//! takes 29.4 bytes per key against 42.8. The Cuckoo Trie paper found MlpIndex 30–80% faster
//! but 3× larger. The speed matches; the size does not, for two reasons:
//!
//! - The Cuckoo Trie paper measured the MlpIndex paper's layout: 24-byte slots at up to 50%
//!   load. That layout is [`Layout::Paper`] here, at 89.8 bytes per key, about 2× the Cuckoo
//!   Trie.
//! - This MlpIndex stores each value in its leaf, and the key in the bits of the leaf and its
//!   bucket index. A Cuckoo Trie leaf points to a separate record (key and value, 16 bytes
//!   here), which costs memory and a dependent DRAM read per lookup.
//!
//! What the Cuckoo Trie pays for is generality: byte-string keys of any length, which its
//! 5-bit symbols hash incrementally, and a concurrent version. MlpIndex's 8-byte keys let it
//! hash every prefix independently, probe all of them in one round, and keep whole keys in
//! its entries.
//!
//! # Contract
//!
//! - [`MlpIndex`] maps `u64` to `u64`. Writes take `&mut self`; reads `&self`.
//! - Growth never fails an insert short of the operating system refusing memory
//!   ([`Error::OutOfMemory`], after which the map is empty). `remove` may move one node into a
//!   grown table; if that allocation is refused it aborts, as `std`'s collections do.
//! - `memory_usage` counts the table, the top bitmap and scratch space: every byte the map
//!   owns.
//!
//! # Why single-threaded
//!
//! The paper's structure is single-threaded and so is this one. A concurrent version would
//! need what [`ConcurrentCuckooTrie`](crate::cuckoo_trie::ConcurrentCuckooTrie) has: per-bucket
//! version locks read optimistically by searches (a search reads up to 13 lines, so it
//! validates 13 versions), writers locking every bucket they change including the cuckoo
//! relocation path, minima updates along the path made atomic with the leaf insertion, and
//! growth copying into a new table published with epoch reclamation.
//!
//! # Layout
//!
//! - `raw::hash`: the invertible prefix hash, bucket and quotient (key elimination for
//!   leaves).
//! - `raw` (its `Store` trait): what the trie needs from a table.
//! - `raw::table`: the bucketized layout; cuckoo placement with eviction.
//! - `raw::paper`: the paper's layout; borrowed slots and external blocks.
//! - `raw::top`: the flat bitmap of 3-byte prefixes with two summary levels.
//! - `raw::trie`: search, insertion, deletion, bounds, the cursor, the audit.
//! - this file: the map and its range iterator.

mod raw;

use core::fmt;
use core::ops::{Bound, RangeBounds};

use raw::paper::PaperTable;
use raw::table::Table;
use raw::trie::{Cursor, RawIndex};

use crate::Error;

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
    /// The load-factor range the layout's cuckoo table supports, and its default.
    fn load_factors(self) -> (core::ops::RangeInclusive<f64>, f64) {
        match self {
            Layout::Bucketized => (0.5..=0.95, 0.9),
            Layout::Paper => (0.2..=0.5, 0.5),
        }
    }
}

/// Construction settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The table layout.
    pub layout: Layout,
    /// Largest fraction of table slots in use before the table grows (by about 1.5×):
    /// 0.5..=0.95 for [`Layout::Bucketized`] (default 0.9), 0.2..=0.5 for [`Layout::Paper`]
    /// (default 0.5).
    pub max_load_factor: f64,
    /// Whether tables of 2 MiB and more ask for transparent huge pages; default
    /// [`HugePages::Auto`](crate::HugePages::Auto).
    pub huge_pages: crate::HugePages,
}

impl Config {
    /// The defaults for `layout`.
    pub fn with_layout(layout: Layout) -> Config {
        Config {
            layout,
            max_load_factor: layout.load_factors().1,
            huge_pages: crate::HugePages::Auto,
        }
    }
}

impl Default for Config {
    fn default() -> Config {
        Config::with_layout(Layout::Bucketized)
    }
}

/// The map core of either layout.
enum Inner {
    Bucketized(RawIndex<Table>),
    Paper(RawIndex<PaperTable>),
}

/// Runs `$e` with `$r` bound to the layout's core.
macro_rules! with_raw {
    ($inner:expr, $r:ident => $e:expr) => {
        match $inner {
            Inner::Bucketized($r) => $e,
            Inner::Paper($r) => $e,
        }
    };
}

/// The MlpIndex ordered map; see the [module docs](self).
pub struct MlpIndex {
    raw: Inner,
    config: Config,
}

impl MlpIndex {
    /// An empty map with the default [`Config`].
    ///
    /// # Panics
    ///
    /// If the operating system refuses the first table and the top bitmap (about 2 MiB); use
    /// [`with_config`](Self::with_config) to handle that as an error.
    pub fn new() -> MlpIndex {
        Self::with_config(Config::default()).expect("mapping the first table")
    }

    /// An empty map with `config`, or [`Error::InvalidConfig`] naming the bad setting.
    pub fn with_config(config: Config) -> Result<MlpIndex, Error> {
        if !config
            .layout
            .load_factors()
            .0
            .contains(&config.max_load_factor)
        {
            return Err(Error::InvalidConfig {
                what: match config.layout {
                    Layout::Bucketized => "max_load_factor must be 0.5..=0.95 (bucketized)",
                    Layout::Paper => "max_load_factor must be 0.2..=0.5 (paper layout)",
                },
            });
        }
        let raw = match config.layout {
            Layout::Bucketized => {
                Inner::Bucketized(RawIndex::new(config.max_load_factor, config.huge_pages)?)
            }
            Layout::Paper => {
                Inner::Paper(RawIndex::new(config.max_load_factor, config.huge_pages)?)
            }
        };
        Ok(MlpIndex { raw, config })
    }

    /// The settings this map was built with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: u64) -> Option<u64> {
        with_raw!(&self.raw, r => r.get(key))
    }

    /// Whether `key` is present.
    #[inline]
    pub fn contains_key(&self, key: u64) -> bool {
        with_raw!(&self.raw, r => r.get(key)).is_some()
    }

    /// Stores `value` under `key`; returns the previous value.
    pub fn insert(&mut self, key: u64, value: u64) -> Result<Option<u64>, Error> {
        with_raw!(&mut self.raw, r => r.insert(key, value))
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: u64) -> Option<u64> {
        with_raw!(&mut self.raw, r => r.remove(key))
    }

    /// Number of keys.
    #[inline]
    pub fn len(&self) -> usize {
        with_raw!(&self.raw, r => r.len())
    }

    /// Whether the map is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        with_raw!(&self.raw, r => r.len()) == 0
    }

    /// Removes every key, returning the table to its smallest size.
    pub fn clear(&mut self) {
        with_raw!(&mut self.raw, r => r.reset());
    }

    /// Bytes the map owns: table, top bitmap, scratch.
    pub fn memory_usage(&self) -> usize {
        with_raw!(&self.raw, r => r.bytes()) + size_of::<Self>()
    }

    /// Bytes mapped directly from the operating system (the table and the top bitmap), a
    /// part of [`memory_usage`](Self::memory_usage).
    pub fn mapped_bytes(&self) -> usize {
        with_raw!(&self.raw, r => r.mapped_bytes())
    }

    /// The first entry at or after `bound` (`Included(k)`: key `≥ k`; `Excluded(k)`: `> k`;
    /// `Unbounded`: the first entry).
    pub fn lower_bound(&self, bound: Bound<u64>) -> Option<(u64, u64)> {
        match bound {
            Bound::Included(k) => with_raw!(&self.raw, r => r.lower_bound(k)),
            Bound::Excluded(k) => with_raw!(&self.raw, r => r.lower_bound(k.checked_add(1)?)),
            Bound::Unbounded => with_raw!(&self.raw, r => r.lower_bound(0)),
        }
    }

    /// The last entry at or before `bound` (`Included(k)`: key `≤ k`; `Excluded(k)`: `< k`;
    /// `Unbounded`: the last entry).
    pub fn upper_bound(&self, bound: Bound<u64>) -> Option<(u64, u64)> {
        match bound {
            Bound::Included(k) => with_raw!(&self.raw, r => r.upper_bound(k)),
            Bound::Excluded(k) => with_raw!(&self.raw, r => r.upper_bound(k.checked_sub(1)?)),
            Bound::Unbounded => with_raw!(&self.raw, r => r.upper_bound(u64::MAX)),
        }
    }

    /// The smallest entry.
    pub fn first(&self) -> Option<(u64, u64)> {
        with_raw!(&self.raw, r => r.lower_bound(0))
    }

    /// The largest entry.
    pub fn last(&self) -> Option<(u64, u64)> {
        with_raw!(&self.raw, r => r.upper_bound(u64::MAX))
    }

    /// The entries with keys in `range`, in order; double-ended.
    pub fn range<R: RangeBounds<u64>>(&self, range: R) -> Range<'_> {
        let lo = match range.start_bound() {
            Bound::Included(&k) => Some(k),
            Bound::Excluded(&k) => k.checked_add(1),
            Bound::Unbounded => Some(0),
        };
        let hi = match range.end_bound() {
            Bound::Included(&k) => Some(k),
            Bound::Excluded(&k) => k.checked_sub(1),
            Bound::Unbounded => Some(u64::MAX),
        };
        let (lo, hi, done) = match (lo, hi) {
            (Some(lo), Some(hi)) if lo <= hi => (lo, hi, false),
            _ => (0, 0, true),
        };
        Range {
            map: self,
            front: None,
            back: None,
            lo,
            hi,
            done,
        }
    }

    /// Every entry, in order.
    pub fn iter(&self) -> Range<'_> {
        self.range(..)
    }

    /// Audits every structural invariant (slow: reads the whole table). For tests.
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<(), String> {
        with_raw!(&self.raw, r => r.audit())
    }
}

impl Default for MlpIndex {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for MlpIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MlpIndex")
            .field("len", &self.len())
            .field("config", &self.config)
            .field("memory_usage", &self.memory_usage())
            .finish()
    }
}

/// Iterator over a key range of an [`MlpIndex`], from both ends.
pub struct Range<'a> {
    map: &'a MlpIndex,
    front: Option<Cursor>,
    back: Option<Cursor>,
    /// Keys not yet yielded from either end lie in `lo..=hi` (when `!done`).
    lo: u64,
    hi: u64,
    done: bool,
}

impl Iterator for Range<'_> {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        if self.done {
            return None;
        }
        let map = self.map;
        let lo = self.lo;
        let c = self
            .front
            .get_or_insert_with(|| with_raw!(&map.raw, r => Cursor::seek(r, lo, false)));
        let next = with_raw!(&map.raw, r => c.step(r));
        let Some((k, v)) = next.filter(|&(k, _)| k <= self.hi) else {
            self.done = true;
            return None;
        };
        if k == self.hi {
            self.done = true;
        } else {
            self.lo = k + 1;
        }
        Some((k, v))
    }
}

impl DoubleEndedIterator for Range<'_> {
    fn next_back(&mut self) -> Option<(u64, u64)> {
        if self.done {
            return None;
        }
        let map = self.map;
        let hi = self.hi;
        let c = self
            .back
            .get_or_insert_with(|| with_raw!(&map.raw, r => Cursor::seek(r, hi, true)));
        let next = with_raw!(&map.raw, r => c.step(r));
        let Some((k, v)) = next.filter(|&(k, _)| k >= self.lo) else {
            self.done = true;
            return None;
        };
        if k == self.lo {
            self.done = true;
        } else {
            self.hi = k - 1;
        }
        Some((k, v))
    }
}

impl core::iter::FusedIterator for Range<'_> {}

impl fmt::Debug for Range<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Range")
            .field("lo", &self.lo)
            .field("hi", &self.hi)
            .field("done", &self.done)
            .finish()
    }
}
