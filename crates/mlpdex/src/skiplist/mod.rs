//! A lock-free skip list whose iterator prefetches ahead along the towers
//! (Xu, "Building Data Structures to Exploit Memory-Level Parallelism", §3;
//! `mlp-data-structures.txt`).
//!
//! # What it is
//!
//! [`SkipList`] is a concurrent ordered map from byte-string keys to values of any type. Every
//! operation takes `&self`: insertion links a node with CAS, level 0 first (Herlihy and Shavit's
//! lock-free skip list); removal marks the key deleted with one CAS and then unlinks the node
//! from every level; memory is reclaimed with epochs (`crossbeam-epoch`).
//!
//! A plain range scan walks level 0, one dependent DRAM miss per entry: the next node's
//! address is only known once the current node arrives. This list's iterator uses the towers
//! to learn addresses early (§3.1): a queue of `(start, end, level)` prefetch tasks keeps about
//! `2^K` independent prefetches in flight, so a long scan costs a fraction of a round trip per
//! entry. `K` is [`Config::prefetch_depth`]; `0` gives the plain iterator. The iterator is an
//! ordinary [`Iterator`]: callers get the speed without knowing about the queue.
//!
//! # When to use it
//!
//! When many threads insert, remove and scan byte-string keys at once and scans are long
//! (tens of entries or more): the prefetching iterator is where this list beats other
//! concurrent maps, and writers never block each other or readers. Not for point-heavy
//! loads: a search is about 24 levels of mostly dependent misses at 10M keys, where a hashed
//! trie ([`ConcurrentCuckooTrie`](crate::cuckoo_trie::ConcurrentCuckooTrie)) needs two or
//! three round trips. Not for integer keys where memory matters (68 bytes per 8-byte key).
//! Single-threaded maps are faster without the atomics and reclamation.
//!
//! # Measured
//!
//! `mlpdex-bench` on this project's 2-core AMD EPYC VM (2 MiB pages, one dependent DRAM access
//! 286 ns), 10M keys inserted in random order, one thread, independent mode. `scan-N` seeks a
//! random key and reads `N` entries; nanoseconds per scan, seek included. Median of 3 rounds
//! (rand-8 after the seek started feeding the prefetcher, email just before):
//!
//! | dataset | N | `skiplist` (`K = 3`) | `skiplist-plain` | `skipmap` | vs plain | vs `skipmap` |
//! |---|---|---|---|---|---|---|
//! | rand-8 | 20 | 5302 | 6795 | 6263 | 1.28× | 1.18× |
//! | rand-8 | 100 | 8654 | 22368 | 19902 | 2.58× | 2.30× |
//! | rand-8 | 1000 | 38983 | 230354 | 190878 | 5.91× | 4.90× |
//! | email | 20 | 6246 | 8096 | 8376 | 1.30× | 1.34× |
//! | email | 100 | 11242 | 27402 | 26842 | 2.44× | 2.39× |
//! | email | 1000 | 45887 | 248611 | 229694 | 5.42× | 5.01× |
//!
//! The depth sweep, one round each, before the seek fed the prefetcher:
//!
//! | dataset | N | plain (`K = 0`) | `K = 1` | 2 | **3 (default)** | 4 | 5 | 6 | `skipmap` |
//! |---|---|---|---|---|---|---|---|---|---|
//! | rand-8 | 20 | 10035 | 8143 | 7699 | **7439** | 7775 | 8771 | 10721 | 6842 |
//! | rand-8 | 100 | 28576 | 16293 | 11789 | **11636** | 11679 | 12975 | 16446 | 21530 |
//! | rand-8 | 1000 | 249681 | 102243 | 56956 | **39454** | 34573 | 39806 | 73761 | 216817 |
//! | email | 20 | 9483 | | 7161 | **7099** | 7911 | 9317 | | 9164 |
//! | email | 100 | 28116 | | 13077 | **11262** | 11196 | 16858 | | 26452 |
//! | email | 1000 | 230649 | | 61438 | **42935** | 38134 | 55018 | | 244129 |
//!
//! So with the default `K = 3` a scan of 1000 entries runs 5.4–5.9× faster than the plain
//! iterator and about 5× faster than crossbeam's `SkipMap`; 100 entries 2.4–2.6× (2.9–3.0×
//! in some single rounds) and 2.3–2.4×; 20 entries 1.3×. The prefetcher pays off from about
//! 10 entries (rand-8: 5 entries cost the same both ways, 10 entries 4564 against 5071 ns).
//! In steady state a scan costs 36–43 ns per entry at `K = 3` (7–8 entries per DRAM round
//! trip, the `2^K` of §3.1) and 31–38 at `K = 4`; `K = 5` and 6 lose, with more tasks per
//! phase than the core keeps misses in flight. `K = 3` stays the default because it is the
//! best at 20 and 100 entries. A short scan is dominated by its seek (about 3 µs, 24 levels
//! at 10M keys), which the plain iterator pays too, and by the `K` phases the queue needs to
//! fill; that is why 100 entries gain about 2.5× rather than the paper's 4× for "a few
//! hundred". Two threads scanning (rand-8, one round) deliver 1.88× the throughput of one
//! at 100 entries and 1.92× at 1000.
//!
//! Point operations are plain skip-list searches (about 24 levels, 25 nodes visited), made
//! partly parallel by prefetching the next node one and two levels down while the current
//! level's candidate is fetched. Nanoseconds per operation, independent / dependent mode:
//!
//! | dataset | workload | `skiplist` | `skipmap` | ratio |
//! |---|---|---|---|---|
//! | rand-8 | load | 3025 | 2289 | 0.76× |
//! | rand-8 | c | 3027 / 3167 | 2530 / 3017 | 0.84× / 0.95× |
//! | rand-8 | lower-bound | 3379 / 3227 | 2511 / 2564 | 0.74× / 0.79× |
//! | email | load | 2924 | 3993 | 1.37× |
//! | email | c | 3186 / 3755 | 4514 / 4567 | 1.42× / 1.22× |
//! | email | lower-bound | 3575 / 4533 | 4545 / 5724 | 1.27× / 1.26× |
//!
//! On byte-string keys (email) this list beats `SkipMap`, whose keys live in separate
//! allocations; on rand-8 the harness gives `SkipMap` native `u64` keys (an integer compare,
//! 32-byte nodes: 42.7 bytes per key against 68 here), and it is 5–26% faster.
//!
//! Memory: 68 bytes per key on rand-8 (`SkipMap`: 42.7), 85.5 on email (84.8): nodes are
//! aligned to a cache line so that a scan step reads one line.
//!
//! # Contract
//!
//! - [`get`](SkipList::get), [`insert`](SkipList::insert), [`remove`](SkipList::remove),
//!   [`lower_bound`](SkipList::lower_bound) and [`upper_bound`](SkipList::upper_bound) are
//!   linearizable and lock-free.
//! - An iteration ([`range`](SkipList::range), [`iter`](SkipList::iter)) is not a snapshot, but
//!   it yields keys in strictly increasing order (decreasing for
//!   [`next_back`](DoubleEndedIterator::next_back)), never yields a key removed before it
//!   started, never skips a key present throughout, and yields each key at most once.
//! - References handed out live as long as the [`Guard`] passed in (made by [`pin`], on the
//!   collector every list retires into; a guard of any other collector does not type-check):
//!   a removed or replaced entry stays readable until every guard pinned before its removal
//!   is dropped. Holding a guard for a long time delays reclamation for the whole process.
//! - Updates never change a value in place: [`insert`](SkipList::insert) of a present key
//!   installs a boxed replacement with one CAS (the first value lives inside the node, later
//!   ones in their own allocation), and returns a clone of the value it replaced. Every
//!   replaced value, the first one included, is dropped once the guards that could see it are
//!   gone; a removed key's value and node likewise.
//! - Backward iteration re-seeks from the head for every step (`O(log n)` dependent misses per
//!   entry), since the lists are singly linked; forward iteration is the fast direction.
//!
//! # Protocol
//!
//! Numbered rules (the code cites them):
//!
//! 1. A key is present while its node's value word lacks the deleted bit. Setting that bit is
//!    a removal's linearization point; the CAS linking a new node at level 0 is an insertion's;
//!    the CAS swapping the value word is an update's.
//! 2. A node is linked at level 0 first, then upward. A node's link at level `i` is marked
//!    only after its key was removed, and a marked link never changes, so nothing is linked
//!    after a dying node.
//! 3. Writers' searches unlink every removed node they meet; readers never write shared
//!    memory: they step over removed nodes and never take one as a predecessor.
//! 4. A removed node is retired once, by whichever of its inserter (done with the tower) and
//!    its remover (done unlinking) finishes second, after an unlinking search of its own.
//! 5. The first update of a node retires its inline value on its own (the node stays). The
//!    node's memory is then freed by whichever runs second of the inline value's deferred drop
//!    and the node's release (its retirement past the epoch, or the list's drop).
//! 6. The key count reads low, never high: an insertion counts after its linking CAS, a
//!    removal uncounts before its tagging CAS.
//!
//! Details and the arguments for rules 4–6 are in `raw::list`.
//!
//! # Layout
//!
//! - `raw::node`: one allocation per node, aligned to a cache line: value word, `next[0]`,
//!   key length, height, the inline value and the key come first, so a scan step reads one
//!   line for keys up to about 32 bytes; the upper tower follows. Links to nodes longer than a
//!   line carry a bit telling the prefetcher to fetch two lines (§2.3's adjacent-line
//!   observation: the second line comes nearly free once requested together).
//! - `raw::list`: the link protocol: writers' helping search, insert, remove, readers'
//!   descent.
//! - `raw::prefetch`: the prefetch task queue, fed by the seek while it descends so that its
//!   first phases overlap the seek's last round trips.
//! - this file: [`SkipList`], its [`Config`] and the [`Range`] iterator.

mod raw;

use crate::KeyRange;
use core::fmt;
use core::marker::PhantomData;
use core::ops::{Bound, ControlFlow};
use core::sync::atomic::Ordering::{Acquire, Relaxed};
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use self::raw::list::{RawList, Retire, Seek};
use self::raw::node::{self, DELETED, MAX_HEIGHT, Node, addr};
use self::raw::prefetch::{MAX_DEPTH, Prefetcher};
use crate::epoch::{Guard, pin};
use crate::key::{after_start, before_end, is_empty_range};
use crate::{ConcurrentOrderedMap, Error};

/// Settings of a [`SkipList`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// The prefetcher's tower level `K`: an iterator keeps about `2^K` prefetches in flight.
    /// `0` gives the plain iterator; at most 6. Default 3.
    pub prefetch_depth: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config { prefetch_depth: 3 }
    }
}

/// The lock-free skip list map; see the [module docs](self).
pub struct SkipList<V> {
    raw: RawList<V>,
    config: Config,
}

/// Defers destruction of unlinked nodes and replaced values past every pinned guard.
struct EpochRetire<'g, V> {
    guard: &'g crossbeam_epoch::Guard,
    bytes: &'g Arc<AtomicUsize>,
    _values: PhantomData<V>,
}

impl<V: Send + Sync + 'static> EpochRetire<'_, V> {
    /// Runs `free` once every guard pinned now is gone, and takes the bytes it reports freeing
    /// off the list's count.
    ///
    /// # Safety
    /// `free` may run on any thread after the epoch has moved past every current guard, and
    /// only then is it sound: what it frees is unreachable for guards pinned later.
    unsafe fn defer(&self, free: impl FnOnce() -> usize + 'static) {
        let bytes = Arc::clone(self.bytes);
        // SAFETY: the closure owns what it touches (an address of ours, a counter handle; V
        // is Send); the caller vouches that running it past the epoch is sound.
        unsafe {
            self.guard
                .defer_unchecked(move || bytes.fetch_sub(free(), Relaxed))
        };
    }
}

impl<V: Send + Sync + 'static> Retire<V> for EpochRetire<'_, V> {
    fn retire_node(&self, link: usize) {
        // SAFETY: rule 4: the node is unreachable and retired once; by the time this
        // runs the epoch has moved past every guard that could hold it.
        unsafe { self.defer(move || node::release::<V>(link)) };
    }

    fn retire_value(&self, word: usize) {
        // SAFETY: the box stopped being current before it was retired, is retired
        // once, and no guard that could read it is left when this runs.
        unsafe { self.defer(move || node::drop_box::<V>(word)) };
    }

    fn retire_inline(&self, link: usize) {
        // SAFETY: rule 5: the update that replaced the inline value retired it once; no
        // guard that could hold a reference to it is left when this runs, and the node is
        // freed only by the second of this drop and the node's release.
        unsafe { self.defer(move || node::drop_replaced_inline::<V>(link)) };
    }
}

thread_local! {
    static HEIGHT_RNG: Cell<u64> = Cell::new(seed());
}

/// A distinct odd seed per thread.
fn seed() -> u64 {
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    let n = NEXT.fetch_add(1, Relaxed) as u64;
    crate::substrate::hash::hash_u64(n, 0x5eed) | 1
}

/// A tower height: `h` with probability `2^-h` (capped at [`MAX_HEIGHT`]).
fn random_height() -> usize {
    HEIGHT_RNG.with(|c| {
        let mut x = c.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.set(x);
        1 + (x | 1 << (MAX_HEIGHT - 1)).trailing_zeros() as usize
    })
}

impl<V: Send + Sync + 'static> SkipList<V> {
    /// An empty list with the default [`Config`].
    pub fn new() -> Self {
        Self::with_config(Config::default()).expect("allocating the head node")
    }

    /// An empty list; [`Error::InvalidConfig`] when `prefetch_depth` exceeds 6.
    pub fn with_config(config: Config) -> Result<Self, Error> {
        if config.prefetch_depth > MAX_DEPTH {
            return Err(Error::InvalidConfig {
                what: "prefetch_depth must be 0..=6",
            });
        }
        Ok(SkipList {
            raw: RawList::new()?,
            config,
        })
    }

    /// Stores `value` under `key`; returns a clone of the value it replaces. Fails only with
    /// [`Error::KeyTooLong`] (keys up to `u32::MAX` bytes) or [`Error::OutOfMemory`].
    pub fn insert(&self, key: &[u8], value: V) -> Result<Option<V>, Error>
    where
        V: Clone,
    {
        let guard = pin();
        self.raw
            .insert(key, value, random_height(), &self.retirer(&guard))
    }

    /// Removes `key`; returns a clone of its value.
    pub fn remove(&self, key: &[u8]) -> Option<V>
    where
        V: Clone,
    {
        let guard = pin();
        self.raw.remove(key, &self.retirer(&guard))
    }

    fn retirer<'g>(&'g self, guard: &'g Guard) -> EpochRetire<'g, V> {
        EpochRetire {
            guard: guard.crossbeam(),
            bytes: &self.raw.bytes,
            _values: PhantomData,
        }
    }
}

impl<V> SkipList<V> {
    /// The settings the list was made with.
    pub fn config(&self) -> Config {
        self.config
    }

    /// Number of keys present.
    ///
    /// Exact when no write is in flight. While other threads insert and remove, it never
    /// counts more keys than are present, and fewer by at most the number of writes in flight
    /// (an insertion counts itself just after its linearization point, a removal just before
    /// its own). So `len() <= n` holds whenever at most `n` distinct keys were ever stored, and
    /// `is_empty()` is true whenever the list is empty.
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// True when no key is present.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of nodes and values the list owns, including removed ones awaiting reclamation.
    pub fn memory_usage(&self) -> usize {
        core::mem::size_of::<Self>() + self.raw.bytes.load(Relaxed)
    }

    /// The value stored under `key`, readable while `guard` lives.
    pub fn get<'g>(&'g self, key: &[u8], guard: &'g Guard) -> Option<&'g V> {
        let _ = guard;
        let (_, stop) = self.raw.descend(key, Seek::Ge, |_, _| {});
        // SAFETY: links read under `guard`, which outlives the result.
        let (n, w) = unsafe { RawList::<V>::first_from(stop, key, Seek::Ge)? };
        // SAFETY: `n` is not the head; `guard` keeps it and its value alive.
        (n.key() == key).then(|| unsafe { n.value_at(w) })
    }

    /// True when `key` is present.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.get(key, &pin()).is_some()
    }

    /// The smallest key and its value.
    pub fn first<'g>(&'g self, guard: &'g Guard) -> Option<(&'g [u8], &'g V)> {
        self.lower_bound(Bound::Unbounded, guard)
    }

    /// The largest key and its value.
    pub fn last<'g>(&'g self, guard: &'g Guard) -> Option<(&'g [u8], &'g V)> {
        self.upper_bound(Bound::Unbounded, guard)
    }

    /// The first entry within `bound` from below: `≥ k`, `> k`, or the first entry.
    pub fn lower_bound<'g>(
        &'g self,
        bound: Bound<&[u8]>,
        guard: &'g Guard,
    ) -> Option<(&'g [u8], &'g V)> {
        let _ = guard;
        let (key, seek) = match bound {
            Bound::Included(k) => (k, Seek::Ge),
            Bound::Excluded(k) => (k, Seek::Gt),
            Bound::Unbounded => (&[][..], Seek::Ge),
        };
        let stop = match bound {
            Bound::Unbounded => first_after::<V>(self.raw.head()),
            _ => self.raw.descend(key, seek, |_, _| {}).1,
        };
        // SAFETY: links read under `guard`, which outlives the result.
        let (n, w) = unsafe { RawList::<V>::first_from(stop, key, seek)? };
        // SAFETY: as above; `n` is not the head.
        Some((n.key(), unsafe { n.value_at(w) }))
    }

    /// The last entry within `bound` from above: `≤ k`, `< k`, or the last entry.
    pub fn upper_bound<'g>(
        &'g self,
        bound: Bound<&[u8]>,
        guard: &'g Guard,
    ) -> Option<(&'g [u8], &'g V)> {
        let _ = guard;
        // SAFETY: links read under `guard`, which outlives the result.
        unsafe { self.last_before(bound) }
    }

    /// The last live node within `bound` from above.
    ///
    /// # Safety
    /// Called under a guard that outlives `'g`.
    unsafe fn last_before<'g>(&'g self, bound: Bound<&[u8]>) -> Option<(&'g [u8], &'g V)> {
        let pred = match bound {
            Bound::Included(k) => self.raw.descend(k, Seek::Gt, |_, _| {}),
            Bound::Excluded(k) => self.raw.descend(k, Seek::Ge, |_, _| {}),
            Bound::Unbounded => self.raw.descend(&[], Seek::Last, |_, _| {}),
        }
        .0;
        if addr::<V>(pred) == addr::<V>(self.raw.head()) {
            return None;
        }
        // SAFETY: a node reached under the caller's guard.
        let n = unsafe { &*addr::<V>(pred) };
        // Present when the descent chose it; if removed since, its value word is frozen.
        let w = n.value.load(Acquire) & !DELETED;
        // SAFETY: as above; `n` is not the head.
        Some((n.key(), unsafe { n.value_at(w) }))
    }

    /// The entries within `range`, in order from either end, readable while `guard` lives.
    pub fn range<'g, R>(&'g self, range: R, guard: &'g Guard) -> Range<'g, V, R>
    where
        R: KeyRange,
    {
        let (s, e) = range.key_bounds();
        let done = is_empty_range(s, e);
        Range {
            list: self,
            _guard: guard,
            range,
            front: Front::Unstarted,
            prefetch: None,
            front_last: None,
            back_last: None,
            back_done: done,
        }
        .with_front_done(done)
    }

    /// Every entry in order, readable while `guard` lives.
    pub fn iter<'g>(&'g self, guard: &'g Guard) -> Range<'g, V, core::ops::RangeFull> {
        self.range(.., guard)
    }

    /// Checks the structure: every level sorted and holding only present nodes that are also
    /// on the level below, heights within the top, `len` and the byte count right. Only
    /// meaningful when no write is in flight; panics with a description otherwise.
    #[doc(hidden)]
    pub fn check_invariants(&self) {
        let head = self.raw.head();
        let top = self.raw.top();
        let mut count = 0usize;
        let mut bytes = Node::<V>::size(0, MAX_HEIGHT);
        let mut below: Vec<usize> = Vec::new();
        for lvl in 0..MAX_HEIGHT {
            let mut on_level = Vec::new();
            // SAFETY: quiescent list (the documented precondition): every linked node is live.
            let mut link = unsafe { &*addr::<V>(head) }.next(lvl).load(Acquire);
            let mut prev: Option<&[u8]> = None;
            while !addr::<V>(link).is_null() {
                assert!(
                    lvl < top,
                    "a node is linked at level {lvl}, above the top {top}"
                );
                // SAFETY: as above.
                let n = unsafe { &*addr::<V>(link) };
                assert!(lvl < n.height(), "node linked above its height");
                let w = n.value.load(Acquire);
                assert_eq!(
                    w & DELETED,
                    0,
                    "a removed node is still linked at level {lvl}"
                );
                let next = n.next(lvl).load(Acquire);
                assert_eq!(next & node::MARK, 0, "a marked link at level {lvl}");
                if let Some(p) = prev {
                    assert!(p < n.key(), "level {lvl} is not strictly increasing");
                }
                prev = Some(n.key());
                on_level.push(addr::<V>(link) as usize);
                if lvl == 0 {
                    count += 1;
                    bytes += Node::<V>::size(n.key().len(), n.height());
                    if w != 0 {
                        bytes += core::mem::size_of::<node::Boxed<V>>();
                    }
                }
                link = next;
            }
            if lvl > 0 {
                let mut it = below.iter();
                for a in &on_level {
                    assert!(it.any(|b| b == a), "a node on level {lvl} is missing below");
                }
            }
            below = on_level;
        }
        assert_eq!(count, self.len(), "len disagrees with the level-0 count");
        let counted = self.raw.bytes.load(Relaxed);
        assert!(
            counted >= bytes,
            "byte count {counted} below the {bytes} bytes of linked nodes"
        );
    }
}

/// The level-0 link after `pred`.
#[inline(always)]
fn first_after<V>(pred: usize) -> usize {
    // SAFETY: `pred` is the head or a node reached under the caller's guard.
    unsafe { &*addr::<V>(pred) }.next(0).load(Acquire)
}

impl<V: Send + Sync + 'static> Default for SkipList<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V> fmt::Debug for SkipList<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SkipList")
            .field("len", &self.raw.len())
            .field("config", &self.config)
            .finish()
    }
}

enum Front {
    /// No seek yet (done on the first `next`).
    Unstarted,
    /// The next level-0 link to look at.
    At(usize),
    Done,
}

/// An iterator over a range of a [`SkipList`], from both ends; see
/// [`SkipList::range`]. Forward steps use the prefetcher; backward steps re-seek.
pub struct Range<'g, V, R> {
    list: &'g SkipList<V>,
    _guard: &'g Guard,
    range: R,
    front: Front,
    prefetch: Option<Prefetcher>,
    front_last: Option<&'g [u8]>,
    back_last: Option<&'g [u8]>,
    back_done: bool,
}

impl<V, R> fmt::Debug for Range<'_, V, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Range")
            .field("prefetch_depth", &self.list.config.prefetch_depth)
            .field("front_last", &self.front_last.map(crate::key::Escaped))
            .field("back_last", &self.back_last.map(crate::key::Escaped))
            .finish_non_exhaustive()
    }
}

impl<'g, V, R> Range<'g, V, R>
where
    R: KeyRange,
{
    fn with_front_done(mut self, done: bool) -> Self {
        if done {
            self.front = Front::Done;
        }
        self
    }

    /// Seeks the range's start and sets up the prefetcher.
    fn start(&mut self) -> usize {
        let raw = &self.list.raw;
        let depth = self.list.config.prefetch_depth;
        // The descent's predecessors at levels 0..=depth, for a list too short to reach level
        // `depth` (and for an unbounded start, where they stay the head).
        let mut preds = [raw.head(); MAX_DEPTH + 1];
        let mut early: Option<Prefetcher> = None;
        let mut on_level = |lvl: usize, p: usize| {
            if depth == 0 || lvl > depth {
                return;
            }
            preds[lvl] = p;
            if lvl == depth {
                // SAFETY: `p` is on level `depth`, reached under the iterator's guard, which
                // outlives the prefetcher.
                early = Some(unsafe { Prefetcher::begin::<V>(depth, p) });
            } else if let Some(pf) = &mut early {
                // SAFETY: `p` is on level `lvl`, reached under the iterator's guard.
                unsafe { pf.descend_level::<V>(lvl, p) };
            }
        };
        let (s, _) = self.range.key_bounds();
        let first = match s {
            Bound::Included(k) => raw.descend(k, Seek::Ge, &mut on_level).1,
            Bound::Excluded(k) => raw.descend(k, Seek::Gt, &mut on_level).1,
            Bound::Unbounded => first_after::<V>(raw.head()),
        };
        if depth > 0 {
            self.prefetch = Some(match early {
                Some(pf) => pf,
                // SAFETY: the head or nodes reached under the iterator's guard, which outlives
                // the prefetcher; `preds[i]` is on level `i`.
                None => unsafe { Prefetcher::new::<V>(depth, &preds[..=depth]) },
            });
        }
        // The walk starts where the descent stopped, a node found not before the start bound;
        // every node after it on level 0 is past the bound too.
        first
    }
}

impl<'g, V, R> Iterator for Range<'g, V, R>
where
    R: KeyRange,
{
    type Item = (&'g [u8], &'g V);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let mut link = match self.front {
            Front::At(l) => l,
            Front::Unstarted => self.start(),
            Front::Done => return None,
        };
        loop {
            if addr::<V>(link).is_null() {
                self.front = Front::Done;
                return None;
            }
            // SAFETY: reached under the iterator's guard, which outlives 'g.
            let n: &'g Node<V> = unsafe { &*addr::<V>(link) };
            if let Some(p) = &mut self.prefetch {
                // SAFETY: as above.
                unsafe { p.step::<V>(link) };
            }
            let w = n.value.load(Acquire);
            link = n.next(0).load(Acquire);
            if w & DELETED != 0 {
                continue;
            }
            let key = n.key();
            let (_, e) = self.range.key_bounds();
            if !before_end(key, e) || self.back_last.is_some_and(|b| key >= b) {
                self.front = Front::Done;
                return None;
            }
            self.front = Front::At(link);
            self.front_last = Some(key);
            // SAFETY: `n` is not the head; the guard keeps its value alive.
            return Some((key, unsafe { n.value_at(w) }));
        }
    }
}

impl<'g, V, R> DoubleEndedIterator for Range<'g, V, R>
where
    R: KeyRange,
{
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.back_done {
            return None;
        }
        let (s, e) = self.range.key_bounds();
        let bound = match self.back_last {
            Some(k) => Bound::Excluded(k),
            None => e,
        };
        // SAFETY: the iterator's guard outlives 'g.
        let found = unsafe { self.list.last_before(bound) };
        let Some((key, v)) = found else {
            self.back_done = true;
            return None;
        };
        if !after_start(key, s) || self.front_last.is_some_and(|f| key <= f) {
            self.back_done = true;
            return None;
        }
        self.back_last = Some(key);
        Some((key, v))
    }
}

impl<V: Clone + Send + Sync + 'static> ConcurrentOrderedMap<V> for SkipList<V> {
    fn get_with<T>(&self, key: &[u8], f: impl FnOnce(&V) -> T) -> Option<T> {
        let guard = pin();
        self.get(key, &guard).map(f)
    }

    fn insert(&self, key: &[u8], value: V) -> Result<Option<V>, Error> {
        SkipList::insert(self, key, value)
    }

    fn remove(&self, key: &[u8]) -> Option<V> {
        SkipList::remove(self, key)
    }

    fn len(&self) -> usize {
        SkipList::len(self)
    }

    fn memory_usage(&self) -> usize {
        SkipList::memory_usage(self)
    }

    fn lower_bound_with<T>(
        &self,
        bound: Bound<&[u8]>,
        f: impl FnOnce(&[u8], &V) -> T,
    ) -> Option<T> {
        let guard = pin();
        self.lower_bound(bound, &guard).map(|(k, v)| f(k, v))
    }

    fn upper_bound_with<T>(
        &self,
        bound: Bound<&[u8]>,
        f: impl FnOnce(&[u8], &V) -> T,
    ) -> Option<T> {
        let guard = pin();
        self.upper_bound(bound, &guard).map(|(k, v)| f(k, v))
    }

    fn visit_range<Rg>(&self, range: Rg, mut f: impl FnMut(&[u8], &V) -> ControlFlow<()>)
    where
        Rg: KeyRange,
    {
        let guard = pin();
        for (k, v) in self.range(range, &guard) {
            if f(k, v).is_break() {
                return;
            }
        }
    }

    fn visit_range_rev<Rg>(&self, range: Rg, mut f: impl FnMut(&[u8], &V) -> ControlFlow<()>)
    where
        Rg: KeyRange,
    {
        let guard = pin();
        for (k, v) in self.range(range, &guard).rev() {
            if f(k, v).is_break() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! Small tests of the unsafe core through the front end, sized for miri.
    use super::*;

    /// Issue 16, defect 1: an entry read under a guard stays readable after it is removed and
    /// the collector is flushed many times (miri flags the read if the node was freed; with a
    /// guard of another collector, which no longer type-checks, it was).
    #[test]
    fn a_guard_keeps_removed_and_replaced_entries_readable() {
        let list = SkipList::<Box<u64>>::new();
        list.insert(b"key", Box::new(7)).unwrap();
        list.insert(b"other", Box::new(8)).unwrap();
        let guard = pin();
        let removed = list.get(b"key", &guard).unwrap();
        let (k, replaced) = list.lower_bound(Bound::Excluded(b"key"), &guard).unwrap();
        assert_eq!(list.remove(b"key").as_deref(), Some(&7));
        assert_eq!(
            list.insert(b"other", Box::new(9)).unwrap().as_deref(),
            Some(&8)
        );
        for _ in 0..256 {
            pin().flush();
        }
        assert_eq!((**removed, k, **replaced), (7, &b"other"[..], 8));
        drop(guard);
        assert_eq!(list.len(), 1);
        list.check_invariants();
    }
}
