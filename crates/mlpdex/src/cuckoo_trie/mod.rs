//! The Cuckoo Trie: an ordered map whose lookups read all trie levels in parallel
//! (Zeitak and Morrison, SOSP 2021; `cuckoo-trie.txt`).
//!
//! # What it is
//!
//! A path-compressed trie of unique key prefixes (§4) whose nodes live in a bucketized cuckoo
//! hash table keyed by node name. Because a lookup knows every prefix of its key up front, it
//! computes the hashes of the next `D` prefixes and prefetches their buckets while it verifies
//! the current node (§4.1): the DRAM reads of one search overlap instead of forming a chain.
//! Hash entries store no key: a 15-byte entry holds a 4-bit tag, the name's last symbol, a color
//! and its parent's color, which with a *peelable* hash identify the node exactly (§4.2).
//! Single-child chains become jump nodes (§4.3); each leaf points to a record holding the full
//! key and the value, and leaves form a sorted list through locators (§4.4).
//!
//! Beyond the paper's implementation: deletion with tail collapse and jump merging (§4.5),
//! automatic growth and shrinking, prefix keys and the empty key, reverse iteration, and
//! generic values.
//!
//! # When to use it
//!
//! For large maps (far beyond the last-level cache) of short to medium keys whose unique
//! prefixes are short: random or hashed ids, integers, user names. A lookup costs about two
//! DRAM round trips whatever the map's size: one for the trie levels, read in parallel, and one
//! for the record the leaf points to.
//!
//! When not: keys with long shared prefixes (the `az` shape) read one bucket pair per symbol of
//! the shared part (§4.7); small maps that fit in cache, where a B-tree is as fast and simpler;
//! workloads dominated by long scans, where a B-tree's sorted leaves win (below); write-heavy
//! loads, where inserts cost 1.3–1.5× a `BTreeMap`'s; many threads writing at once, since the
//! concurrent map serializes its writers.
//!
//! # Measured
//!
//! `mlpdex-bench` on this project's 2-core AMD EPYC VM (2 MiB pages, one dependent DRAM access
//! 286 ns), single thread, ratios to baselines in the same run:
//!
//! | dataset, keys | workload | mode | vs `btreemap` | vs `congee` | DRAM round trips | bytes/key |
//! |---|---|---|---|---|---|---|
//! | rand-8, 10M | c | independent | 1.41× | 1.22× | 1.63 | 42.8 |
//! | rand-8, 10M | c | dependent | 1.46× | 1.59× | 1.58 | 42.8 |
//! | rand-8, 10M | load | — | 0.68× | 1.04× | — | 42.8 |
//! | rand-8, 10M | e | independent | 0.42× (skipmap: 2.2×) | 3.1× | — | 42.8 |
//! | rand-8, 50M | c | independent | 1.81× | 1.50× | 2.15 | 58.9 |
//! | rand-8, 50M | c | dependent | 1.59× | 1.59× | 2.19 | 58.9 |
//! | rand-8, 50M | load | — | 0.69× | 0.64× | — | 58.9 |
//! | email, 10M | c | independent | 1.91× (skipmap: 4.6×) | — | 3.40 | 91.0 |
//! | email, 10M | c | dependent | 1.84× (skipmap: 4.8×) | — | 3.36 | 91.0 |
//! | email, 10M | e | independent | 0.27× (skipmap: 1.1×) | — | — | 91.0 |
//! | email, 10M | load | — | 0.86× | — | — | 91.0 |
//!
//! (rand-8 10M and email: median of 3 rounds; rand-8 50M one round. Supporting the
//! concurrent protocol costs the single-threaded map about 7% more instructions: a shared-table
//! check per probe and atomic entry stores. `btreemap`'s own speed on email moves by up to 35%
//! between runs (up to 11% at 50M).) Memory is the table plus a 16-byte record per key
//! (value and key); the table's share depends on where the last doubling left its load factor:
//! 75% at 10M keys, 47% at 50M.
//!
//! [`ConcurrentCuckooTrie`], rand-8, 10M keys, Mops/s (median of 3 rounds for `c`, one round
//! for the others; YCSB-A is 50% updates, YCSB-B 5%, YCSB-E short scans and 5% inserts):
//!
//! | workload, mode | 1 thread | 2 threads | scaling | single-threaded map, 1 thread |
//! |---|---|---|---|---|
//! | c, independent | 2.00 | 3.73 | 1.87× | 2.44 |
//! | c, dependent | 2.00 | 3.70 | 1.85× | 2.20 |
//! | b, independent | 1.95 | 3.48 | 1.79× | — |
//! | a, independent | 1.77 | 2.46 | 1.39× | — |
//! | e, independent | 0.119 | 0.194 | 1.63× | 0.148 |
//!
//! (The `a`, `b` and `e` rows predate the power-of-two hashing that made the `c` rows' single-
//! threaded map 10–20% faster than the concurrent one's read sessions.)
//!
//! Readers scale with threads; writers are serialized, so update-heavy loads scale only as far as
//! a waiting writer's path read overlaps the running writer's changes (`congee` reaches 3.0
//! Mops/s on `a` with two threads, its one thread 1.2).
//!
//! Prefetch depth `D` (YCSB-C, 10M keys, one round each, Mops/s independent / dependent):
//!
//! | D | 1 | 2 | 3 | 4 | 5 | 6 | 8 | 10 |
//! |---|---|---|---|---|---|---|---|---|
//! | rand-8 | 1.47 / 1.35 | 1.68 / 1.66 | 1.60 / 1.73 | 1.77 / 1.75 | 1.68 / 1.67 | 1.88 / 1.83 | 1.78 / 1.77 | 1.86 / 1.61 |
//! | email | | | | | 0.91 / 0.91 | | 1.03 / 0.94 | 1.00 / 0.97 |
//!
//! Depths from 4 to 10 are within this machine's noise on rand-8; email's jump nodes (up to 9
//! symbols) outrun shorter pipelines, hence the default of 8.
//!
//! # Contract
//!
//! - [`CuckooTrie`] implements [`OrderedMap`]: `&mut self` for writes, so any number of readers
//!   or one writer, checked by the borrow checker. It is `Send`/`Sync` when `V` is.
//! - [`ConcurrentCuckooTrie`] implements [`ConcurrentOrderedMap`](crate::ConcurrentOrderedMap):
//!   every operation through `&self` from any number of threads, linearizable point
//!   operations and seeks, optimistic readers over per-bucket seqlocks, epoch-based
//!   reclamation of records (§5). Writers are serialized by a mutex (a documented deviation:
//!   readers run in parallel with the writer and with each other, writers with no one). Its
//!   range visits walk the prefetching cursor (forwards or backwards) in validated batches of
//!   32 keys. Contract and protocol: the docs of [`ConcurrentCuckooTrie`].
//! - Keys: any byte string up to [`CuckooTrie::MAX_KEY_LEN`] bytes (1 MiB − 1); longer keys
//!   are rejected with [`Error::KeyTooLong`]. Order is lexicographic, a proper prefix first.
//! - Growth never fails an insert short of the operating system refusing memory
//!   ([`Error::OutOfMemory`]) or the table passing 2³² hash values (about 700 million keys).
//! - `memory_usage` counts the table (exact mapped bytes), the records (requested bytes) and
//!   the writer's scratch buffers. Scratch grows with the longest key written (megabytes for
//!   a `MAX_KEY_LEN` key) and is given back after about a dozen writes that need far less;
//!   up to 64 KiB of it is always kept.
//!
//! # Invariants
//!
//! Listed in `raw/trie.rs` (structure) and `raw/table.rs` (table), and checked by
//! [`CuckooTrie::check_invariants`], which the tests call throughout their random runs.
//!
//! # Layout
//!
//! - `raw::table`: 64-byte buckets of four 15-byte entries and a version word; the peelable
//!   hash; cuckoo insertion by breadth-first search; read sessions and bucket locks for shared
//!   tables.
//! - `raw::seqlock`: the bucket seqlock protocol (with its loom model).
//! - `raw::trie`: search with prefetching, predecessor search, insertion (three cases),
//!   deletion, rebuild on growth, audit.
//! - `raw::cursor`: in-order walk for forward ranges, prefetching a window of children per
//!   node (the leaf list of §4.4 costs one dependent bucket read per key; the walk does not).
//! - `record`: records (value and key in one allocation).
//! - `concurrent`: the concurrent map.
//! - this file: the single-threaded map, iteration.

mod concurrent;
mod raw;
mod record;

pub use concurrent::ConcurrentCuckooTrie;

use crate::KeyRange;
use core::fmt;
use core::marker::PhantomData;
use core::ops::Bound;
use core::ptr::NonNull;

use raw::cursor::Cursor;
use raw::table::{Ent, Loc};
use raw::trie::{Inserted, NeedsGrowth, Params, RawTrie, Scratch, Seek, stable};

use crate::key::is_empty_range;
use crate::substrate::prefetch::prefetch_read;
use crate::{Error, OrderedMap};

/// Construction settings; [`Config::default`] holds the measured defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Bits per trie symbol, 1..=5 (default 5, as in the paper). Smaller symbols make deeper
    /// tries with smaller nodes.
    pub symbol_bits: u32,
    /// How many prefixes ahead a search prefetches (`D` in §4.1), 1..=16. Default 8, from
    /// the sweep in the module docs: flat from 4 to 10 on random 8-byte keys, best at 8–10 on
    /// email addresses, whose jump nodes (up to 9 symbols) outrun a shorter pipeline.
    pub prefetch_depth: usize,
    /// Largest fraction of table slots in use before the table grows, 0.5..=0.95.
    pub max_load_factor: f64,
    /// Buckets of the first table (rounded up to whole 4 KiB pages of 64-byte buckets), ≥ 1.
    pub initial_buckets: usize,
    /// Whether tables of 2 MiB and more ask for transparent huge pages; default
    /// [`HugePages::Auto`](crate::HugePages::Auto).
    pub huge_pages: crate::HugePages,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            symbol_bits: 5,
            prefetch_depth: 8,
            max_load_factor: 0.85,
            initial_buckets: 64,
            huge_pages: crate::HugePages::Auto,
        }
    }
}

impl Config {
    /// The raw trie's settings for values of type `V`.
    fn params<V>(&self) -> Params {
        Params {
            symbol_bits: self.symbol_bits,
            prefetch_depth: self.prefetch_depth,
            max_load_factor: self.max_load_factor,
            initial_buckets: self.initial_buckets,
            val_size: core::mem::size_of::<V>(),
            huge_pages: self.huge_pages,
        }
    }

    fn validate(&self) -> Result<(), Error> {
        let what = if !(1..=5).contains(&self.symbol_bits) {
            "symbol_bits must be 1..=5"
        } else if !(1..=raw::MAX_PREFETCH).contains(&self.prefetch_depth) {
            "prefetch_depth must be 1..=16"
        } else if !(0.5..=0.95).contains(&self.max_load_factor) {
            "max_load_factor must be 0.5..=0.95"
        } else if self.initial_buckets == 0 {
            "initial_buckets must be at least 1"
        } else {
            return Ok(());
        };
        Err(Error::InvalidConfig { what })
    }
}

/// The Cuckoo Trie ordered map; see the [module docs](self).
pub struct CuckooTrie<V> {
    raw: RawTrie,
    scratch: Scratch,
    config: Config,
    /// Bytes of live records (their layouts' sizes).
    record_bytes: usize,
    _values: PhantomData<V>,
}

// SAFETY: the map owns its records (keys and `V`s) exclusively, like a `Vec<(Box<[u8]>, V)>`;
// sending it sends the `V`s.
unsafe impl<V: Send> Send for CuckooTrie<V> {}
// SAFETY: `&CuckooTrie` only reads the table and hands out `&V`; writes need `&mut`.
unsafe impl<V: Sync> Sync for CuckooTrie<V> {}

impl<V> CuckooTrie<V> {
    /// Longest key accepted, in bytes.
    pub const MAX_KEY_LEN: usize = raw::table::MAX_KEY_LEN;

    /// An empty map with the default [`Config`].
    ///
    /// # Panics
    ///
    /// If the operating system refuses the first 4 KiB table; use
    /// [`with_config`](Self::with_config) to handle that as an error.
    pub fn new() -> Self {
        Self::with_config(Config::default()).expect("mapping the first table page")
    }

    /// An empty map with `config`, or [`Error::InvalidConfig`] naming the bad setting.
    pub fn with_config(config: Config) -> Result<Self, Error> {
        config.validate()?;
        let raw = RawTrie::new(config.params::<V>())?;
        Ok(CuckooTrie {
            raw,
            scratch: Scratch::default(),
            config,
            record_bytes: 0,
            _values: PhantomData,
        })
    }

    /// The settings this map was built with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Bytes mapped directly from the operating system (the hash table), a part of
    /// [`memory_usage`](OrderedMap::memory_usage); the rest (records) comes from the global
    /// allocator.
    pub fn mapped_bytes(&self) -> usize {
        self.raw.table_bytes()
    }

    /// Audits every structural invariant (slow: reads the whole table). For tests.
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<(), String> {
        self.raw.audit()
    }

    /// Frees a record, returning its value.
    ///
    /// # Safety
    /// `p` came from `record::alloc` with a key of `key_len` bytes and is no longer in the
    /// trie.
    unsafe fn take_record(&mut self, p: *mut u8, key_len: usize) -> V {
        // SAFETY: per the contract; `&mut self` means no reader holds it.
        let (v, bytes) = unsafe { record::free::<V>(p, key_len) };
        self.record_bytes -= bytes;
        v
    }

    /// The value in record `p`.
    ///
    /// # Safety
    /// `p` is a live record of this map, and the reference is not used past the next `&mut`
    /// access to the map.
    #[inline(always)]
    unsafe fn value<'a>(p: *mut u8) -> &'a V {
        // SAFETY: per the contract.
        unsafe { record::value::<V>(p) }
    }

    /// The key and value of leaf `e`.
    #[inline(always)]
    fn item(&self, e: Ent) -> (&[u8], &V) {
        // SAFETY: `e` is a leaf of this map read under `&self`; records live while `&self`.
        unsafe { (self.raw.key_of(e), Self::value(e.rec())) }
    }

    /// Drops every record.
    fn free_all(&mut self) {
        let mut recs: Vec<(NonNull<u8>, usize)> = Vec::with_capacity(self.raw.len());
        self.raw.for_each_leaf(|e| {
            recs.push((
                NonNull::new(e.rec()).expect("records are non-null"),
                e.key_len(),
            ));
        });
        for (p, len) in recs {
            // SAFETY: each leaf's record once; the trie is reset right after.
            drop(unsafe { self.take_record(p.as_ptr(), len) });
        }
    }

    /// The last leaf within the end bound `bound` (`<= k`, `< k`, or the last leaf).
    fn seek_end(&self, bound: Bound<&[u8]>) -> Option<(Loc, Ent)> {
        match bound {
            Bound::Included(k) => stable(self.raw.seek(k, Seek::Le)),
            Bound::Excluded(k) => stable(self.raw.seek(k, Seek::Lt)),
            Bound::Unbounded => stable(self.raw.last()),
        }
    }

    /// The record of `key`, mutably.
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        let p = stable(self.raw.get(key))?;
        // SAFETY: a live record; `&mut self` makes the reference unique.
        Some(unsafe { &mut *p.cast::<V>() })
    }
}

impl<V> Default for CuckooTrie<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V> Drop for CuckooTrie<V> {
    fn drop(&mut self) {
        self.free_all();
    }
}

impl<V> fmt::Debug for CuckooTrie<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CuckooTrie")
            .field("len", &self.raw.len())
            .field("config", &self.config)
            .field("memory_usage", &self.memory_usage())
            .finish()
    }
}

/// A double-ended iterator over a key range of a [`CuckooTrie`], in key order.
///
/// Going forward walks the trie in order, prefetching the buckets of the next several children
/// of each node together (see `raw/cursor.rs`) and each record one step ahead; going backward
/// runs the same walk in reverse (started by one predecessor search), prefetching each record
/// one step ahead.
pub struct Range<'a, V> {
    map: &'a CuckooTrie<V>,
    /// The next leaf from the front; `None` once the range is exhausted.
    front: Option<(Loc, Ent)>,
    /// Leaves after `front` that the cursor has already found (their records prefetched).
    ahead: Ahead,
    cursor: Cursor,
    back: Back,
    /// The reverse walk, once the range has been walked from the back.
    back_cursor: Option<Cursor>,
}

/// Most leaves a forward walk keeps found ahead of the front, records prefetched.
const LOOKAHEAD: usize = 8;

/// A ring of leaves found ahead of the front.
#[derive(Debug, Default)]
struct Ahead {
    ring: [Option<(Loc, Ent)>; LOOKAHEAD],
    head: usize,
    len: usize,
    /// Items yielded so far: the lookahead ramps up with it, so a short range does not walk far
    /// past its end.
    yielded: usize,
    /// The cursor has no more leaves.
    exhausted: bool,
}

/// The back end of a [`Range`].
#[derive(Clone, Copy, Debug)]
enum Back {
    /// Unbounded: the last leaf, looked up only if the range is walked backwards.
    Last,
    /// The next leaf from the back.
    At((Loc, Ent)),
}

impl<V> fmt::Debug for Range<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let back = match self.back {
            Back::Last => None,
            Back::At((_, e)) => Some(self.map.item(e).0),
        };
        f.debug_struct("Range")
            .field("front", &self.front.map(|(_, e)| self.map.item(e).0))
            .field("back", &back)
            .finish()
    }
}

impl<V> Range<'_, V> {
    /// The leaf after `front`, topping the lookahead up first.
    #[inline]
    fn advance(&mut self) -> Option<(Loc, Ent)> {
        let a = &mut self.ahead;
        a.yielded += 1;
        let want = (a.yielded + 1).min(LOOKAHEAD);
        while a.len < want && !a.exhausted {
            match stable(self.map.raw.cursor_next(&mut self.cursor)) {
                Some(leaf) => {
                    prefetch_read(leaf.1.rec());
                    a.ring[(a.head + a.len) % LOOKAHEAD] = Some(leaf);
                    a.len += 1;
                }
                None => a.exhausted = true,
            }
        }
        if a.len == 0 {
            return None;
        }
        let leaf = a.ring[a.head].take();
        a.head = (a.head + 1) % LOOKAHEAD;
        a.len -= 1;
        leaf
    }
}

impl<'a, V> Iterator for Range<'a, V> {
    type Item = (&'a [u8], &'a V);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let (fl, fe) = self.front?;
        self.front = match self.back {
            Back::At((bl, _)) if bl == fl => None,
            _ => self.advance(),
        };
        Some(self.map.item(fe))
    }
}

impl<V> DoubleEndedIterator for Range<'_, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let (fl, _) = self.front?;
        let raw = &self.map.raw;
        let (bl, be) = match self.back {
            Back::At(b) => b,
            Back::Last => {
                let (cur, last) = stable(raw.cursor_first(true));
                self.back_cursor = Some(cur);
                last.expect("a non-empty range has a last leaf")
            }
        };
        let item = self.map.item(be);
        if fl == bl {
            self.front = None;
        } else {
            // The walk backwards runs the cursor in reverse (prefetching a window of smaller
            // siblings per node), started where the back end first moves.
            let prev = match &mut self.back_cursor {
                Some(cur) => stable(raw.cursor_next(cur)),
                None => {
                    let (cur, prev) = stable(raw.cursor_seek(item.0, true, true));
                    self.back_cursor = Some(cur);
                    prev
                }
            };
            let prev = prev.expect("the front leaf precedes the back leaf");
            prefetch_read(prev.1.rec());
            self.back = Back::At(prev);
        }
        Some(item)
    }
}

impl<V> OrderedMap<V> for CuckooTrie<V> {
    type Range<'a>
        = Range<'a, V>
    where
        V: 'a;

    #[inline]
    fn get(&self, key: &[u8]) -> Option<&V> {
        let p = stable(self.raw.get(key))?;
        // SAFETY: a live record, borrowed for `&self`.
        Some(unsafe { Self::value(p) })
    }

    fn insert(&mut self, key: &[u8], value: V) -> Result<Option<V>, Error> {
        if key.len() > Self::MAX_KEY_LEN {
            return Err(Error::KeyTooLong {
                len: key.len(),
                max: Self::MAX_KEY_LEN,
            });
        }
        let mut slot = Some(value);
        let mut made: Option<*mut u8> = None;
        loop {
            let CuckooTrie {
                raw,
                scratch,
                record_bytes,
                ..
            } = self;
            let mut make = || {
                *made.get_or_insert_with(|| {
                    let (p, bytes) = record::alloc(key, slot.take().expect("made once"));
                    *record_bytes += bytes;
                    p
                })
            };
            match raw.insert(scratch, key, &mut make) {
                Ok(Inserted::New) => return Ok(None),
                Ok(Inserted::Existing { rec, .. }) => {
                    let v = slot.take().expect("not consumed for an existing key");
                    // SAFETY: a live record of this map; `&mut self` gives exclusive access.
                    return Ok(Some(core::mem::replace(
                        unsafe { &mut *rec.cast::<V>() },
                        v,
                    )));
                }
                Err(NeedsGrowth) => match self.raw.grown() {
                    Ok(bigger) => self.raw = bigger,
                    Err(e) => {
                        if let Some(p) = made {
                            // SAFETY: made by `record::alloc` for this key and never linked
                            // (the insert rolled back before linking it).
                            drop(unsafe { self.take_record(p, key.len()) });
                        }
                        return Err(e);
                    }
                },
            }
        }
    }

    fn remove(&mut self, key: &[u8]) -> Option<V> {
        let p = self.raw.remove(&mut self.scratch, key)?;
        if self.raw.wants_shrink() {
            // Shrinking only returns memory; if it fails the trie stays as it is.
            if let Ok(smaller) = self.raw.shrunk() {
                self.raw = smaller;
            }
        }
        // SAFETY: the record of `key`, just unlinked from the trie.
        Some(unsafe { self.take_record(p, key.len()) })
    }

    fn len(&self) -> usize {
        self.raw.len()
    }

    fn range<R>(&self, range: R) -> Range<'_, V>
    where
        R: KeyRange,
    {
        let (start, end) = range.key_bounds();
        let empty = || Range {
            map: self,
            front: None,
            ahead: Ahead::default(),
            cursor: Cursor::default(),
            back: Back::Last,
            back_cursor: None,
        };
        if is_empty_range(start, end) {
            return empty();
        }
        let back = match end {
            Bound::Unbounded => Some(Back::Last),
            bounded => self.seek_end(bounded).map(Back::At),
        };
        let Some(back) = back else {
            return empty();
        };
        let (cursor, front) = match start {
            Bound::Included(k) => stable(self.raw.cursor_seek(k, false, false)),
            Bound::Excluded(k) => stable(self.raw.cursor_seek(k, true, false)),
            Bound::Unbounded => stable(self.raw.cursor_first(false)),
        };
        let Some(front) = front else {
            return empty();
        };
        if let Back::At(b) = back
            && self.item(front.1).0 > self.item(b.1).0
        {
            return empty();
        }
        prefetch_read(front.1.rec());
        Range {
            map: self,
            front: Some(front),
            ahead: Ahead::default(),
            cursor,
            back,
            back_cursor: None,
        }
    }

    fn memory_usage(&self) -> usize {
        core::mem::size_of::<Self>()
            + self.raw.table_bytes()
            + self.scratch.memory_usage()
            + self.record_bytes
    }

    fn clear(&mut self) {
        self.free_all();
        self.record_bytes = 0;
        self.raw.reset();
        self.scratch = Scratch::default();
    }

    fn first(&self) -> Option<(&[u8], &V)> {
        stable(self.raw.first()).map(|(_, e)| self.item(e))
    }

    fn last(&self) -> Option<(&[u8], &V)> {
        stable(self.raw.last()).map(|(_, e)| self.item(e))
    }

    fn lower_bound(&self, bound: Bound<&[u8]>) -> Option<(&[u8], &V)> {
        let r = match bound {
            Bound::Included(k) => self.raw.seek(k, Seek::Ge),
            Bound::Excluded(k) => self.raw.seek(k, Seek::Gt),
            Bound::Unbounded => self.raw.first(),
        };
        let r = stable(r);
        r.map(|(_, e)| self.item(e))
    }

    fn upper_bound(&self, bound: Bound<&[u8]>) -> Option<(&[u8], &V)> {
        self.seek_end(bound).map(|(_, e)| self.item(e))
    }
}

#[cfg(test)]
mod tests {
    //! Small-size unit tests (also the ones to run under miri); the long differential and
    //! property suites are in `tests/cuckoo_trie.rs`.
    use super::*;
    use crate::testing::{KeyShape, TestRng, differential_ordered};
    use std::collections::BTreeMap;

    fn audited_run(cfg: Config, shape: KeyShape, seed: u64, steps: usize) {
        let mut m: CuckooTrie<u64> = CuckooTrie::with_config(cfg).unwrap();
        let mut model = BTreeMap::new();
        let mut rng = TestRng::new(seed);
        for step in 0..steps {
            let k = shape.gen_key(&mut rng);
            if rng.chance(0.6) {
                let v = rng.next_u64();
                assert_eq!(
                    m.insert(&k, v).unwrap(),
                    model.insert(k.clone(), v),
                    "step {step}"
                );
            } else {
                assert_eq!(m.remove(&k), model.remove(&k), "step {step}");
            }
            if step % 7 == 0
                && let Err(e) = m.check_invariants()
            {
                panic!("seed {seed} step {step} ({shape:?}): {e}");
            }
        }
        let got: Vec<_> = m.iter().map(|(k, v)| (k.to_vec(), *v)).collect();
        let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), *v)).collect();
        assert_eq!(got, want);
        let got: Vec<_> = m.iter().rev().map(|(k, v)| (k.to_vec(), *v)).collect();
        let want: Vec<_> = model.iter().rev().map(|(k, v)| (k.clone(), *v)).collect();
        assert_eq!(got, want);
    }

    /// Steps of the runs below: short under miri, which interprets every table probe.
    const fn steps(long_keys: bool) -> usize {
        match (cfg!(miri), long_keys) {
            (false, false) => 300,
            (false, true) => 60,
            (true, _) => 24,
        }
    }

    /// The key shapes of the runs below. Under miri, not [`KeyShape::Long`] nor
    /// [`KeyShape::Mixed`] (which draws some long keys): a 1–8 KiB key is thousands of jump
    /// nodes, more interpretation than all the short keys together; the short shapes already
    /// reach every kind of node and split.
    fn shapes() -> impl Iterator<Item = KeyShape> {
        KeyShape::ALL_BYTES
            .iter()
            .copied()
            .chain([KeyShape::U64])
            .filter(|&s| !(cfg!(miri) && matches!(s, KeyShape::Long | KeyShape::Mixed)))
    }

    #[test]
    fn audited_small_runs() {
        // Under miri, the two ends only.
        let all_bits: &[u32] = if cfg!(miri) { &[1, 5] } else { &[1, 3, 5] };
        for shape in shapes() {
            for &bits in all_bits {
                let cfg = Config {
                    symbol_bits: bits,
                    ..Config::default()
                };
                let steps = steps(shape == KeyShape::Long);
                audited_run(cfg, shape, 7 + u64::from(bits), steps);
            }
        }
    }

    #[test]
    fn differential_default() {
        for shape in shapes() {
            let steps = if cfg!(miri) { steps(false) } else { 2000 };
            differential_ordered(CuckooTrie::<u64>::new, shape, 1, steps);
        }
    }

    #[test]
    fn zero_sized_values_and_empty_key() {
        let mut m: CuckooTrie<()> = CuckooTrie::new();
        assert_eq!(m.insert(b"", ()).unwrap(), None);
        assert_eq!(m.insert(b"", ()).unwrap(), Some(()));
        assert_eq!(m.insert(b"a", ()).unwrap(), None);
        assert_eq!(m.len(), 2);
        assert_eq!(m.first().map(|(k, _)| k.to_vec()), Some(vec![]));
        assert_eq!(m.remove(b""), Some(()));
        m.check_invariants().unwrap();
    }
}
