//! The map's core: leaves of up to [`CAP`] keys in key order, found through a hash table of
//! the prefixes of their anchors.
//!
//! A leaf's *anchor* is a byte string that orders after every key of the leaf before it and not
//! after any key of its own (its lower fence); the head leaf's anchor is empty. A key belongs to
//! the leaf with the greatest anchor `<=` it. To find that leaf, a search looks for the longest
//! prefix of the key that is a prefix of some anchor. The table holds every prefix of every
//! anchor, a set closed under taking prefixes, so "is `key[..m]` in the table" is true up to
//! that length and false after it: a search over `m`. Each round probes up to [`FANOUT`]
//! lengths at once (their buckets are prefetched together, so a round costs about one DRAM
//! round trip); the first round probes up to [`WINDOW`] lengths chosen from where splits have
//! seen searches end ([`best_probes`]: runs of adjacent lengths around the modes, or one run
//! counted from the key's end), which finishes most searches in that one round. The node found
//! then names the leaf (see [`meta::Nodes::leaf_of`]).
//!
//! Table slots hold hashes, not bytes, so a match is confirmed by the leaf: every leaf stores
//! both fences, and a search checks that its key lies between them before trusting the leaf.
//! A hash collision that misleads a search therefore costs a walk of the leaf list
//! ([`RawMap::locate_slow`]), never a wrong answer.
//!
//! Invariants (checked by [`RawMap::audit`]):
//! 1. Leaves are linked in key order from leaf [`HEAD`]; each leaf's keys are sorted and lie
//!    between its fences; a leaf's upper fence is the next leaf's anchor (none for the last).
//! 2. No leaf but the head is empty.
//! 3. The table holds exactly the prefixes of the anchors, each node's fields as described in
//!    [`meta`].

mod hash;
mod leaf;
mod leaves;
mod meta;

use core::sync::atomic::Ordering::Relaxed;
use core::sync::atomic::{AtomicIsize, AtomicUsize};

use hash::PrefixHasher;
pub(crate) use leaf::{CAP, Leaf};
use leaves::Leaves;
pub(crate) use leaves::Superseded;
pub(crate) use meta::GrownSlots;
use meta::Nodes;

use crate::Error;
use crate::key::common_prefix;

/// "No leaf", "no length".
pub(crate) const NONE: u32 = u32::MAX;
/// The first leaf, whose anchor is the empty string; never removed.
pub(crate) const HEAD: u32 = 0;
/// Lengths probed per search round after the first.
const FANOUT: usize = 8;
/// Lengths probed in the first round once they are learned.
const WINDOW: usize = 16;
/// Keys per group of a batched lookup ([`RawMap::find_batch`]).
pub(crate) const BATCH: usize = 8;
/// Splits between two choices of the first round's window.
const RELEARN: u32 = 64;
/// A leaf left with at most this many entries by a removal merges with a neighbour when the
/// two fit in half a leaf (so a merged leaf takes many inserts before it splits again).
const MERGE_AT: usize = CAP / 4;

/// The first round's lengths: either up to `WINDOW` lengths chosen from where searches end
/// (`lens[..k]`, ascending), or `WINDOW` adjacent lengths ending `at` bytes before the key's
/// end (`from_end`).
#[derive(Clone, Copy, Debug, Default)]
struct Window {
    on: bool,
    from_end: bool,
    at: usize,
    lens: [u8; WINDOW],
    k: usize,
}

/// Where searches end, sampled at splits: by prefix length and by distance from the key's end.
#[derive(Clone, Debug)]
struct Histogram {
    abs: [u32; 256],
    rel: [u32; 256],
    splits: u32,
}

/// The at most `WINDOW` lengths (ascending) whose probing in one round answers the most of the
/// searches `hist` counts, and how many that is. A round answers a search ending at length `m`
/// (the longest prefix of its key in the table) when it probes both `m` and `m + 1` (`m = 0`
/// needs no probe: the root is always there), so the best set is a few runs of adjacent
/// lengths, one per mode of the histogram (URLs: short hosts end near 8 bytes, big hosts'
/// paths near 30). Dynamic programming over lengths, probes spent, and whether the length
/// before was probed.
fn best_probes(hist: &[u32; 256]) -> (u32, [u8; WINDOW], usize) {
    const L: usize = 256;
    // best[i][b][p]: the most searches answered by probes among lengths 1..i, b of them,
    // p = whether length i - 1 is probed; with the choice made at i - 1 to rebuild the set.
    let mut best = vec![[[None::<u32>; 2]; WINDOW + 1]; L + 1];
    best[1][0][1] = Some(0);
    for i in 1..L {
        for b in 0..=WINDOW {
            for p in 0..2 {
                let Some(v) = best[i][b][p] else { continue };
                let skip = &mut best[i + 1][b][0];
                *skip = (*skip).max(Some(v));
                if b < WINDOW {
                    let gain = if p == 1 { hist[i - 1] } else { 0 };
                    let take = &mut best[i + 1][b + 1][1];
                    *take = (*take).max(Some(v + gain));
                }
            }
        }
    }
    let (mut b, mut p, hits) = (0..=WINDOW)
        .flat_map(|b| (0..2).map(move |p| (b, p)))
        .filter_map(|(b, p)| best[L][b][p].map(|v| (b, p, v)))
        .max_by_key(|&(b, _, v)| (v, core::cmp::Reverse(b)))
        .expect("the empty set");
    // Walk back: at each length, which of its two predecessors gave the value.
    let mut lens = [0u8; WINDOW];
    let mut k = 0;
    let mut v = hits;
    for i in (1..L).rev() {
        if p == 1 {
            // Length i was probed: the state before had b - 1 probes.
            let from = (0..2).find(|&q| {
                let gain = if q == 1 { hist[i - 1] } else { 0 };
                best[i][b - 1][q].is_some_and(|w| w + gain == v)
            });
            let q = from.expect("a predecessor");
            lens[k] = i as u8;
            k += 1;
            v -= if q == 1 { hist[i - 1] } else { 0 };
            b -= 1;
            p = q;
        } else {
            p = (0..2)
                .find(|&q| best[i][b][q] == Some(v))
                .expect("a predecessor");
        }
    }
    lens[..k].reverse();
    (hits, lens, k)
}

/// A position: entry `i` of leaf `leaf` (`i == len` is the gap after its last entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pos {
    pub(crate) leaf: u32,
    pub(crate) i: usize,
}

/// The core. See the module docs.
pub(crate) struct RawMap<V> {
    leaves: Leaves<V>,
    free: Vec<u32>,
    nodes: Nodes,
    /// Entries; atomic so that a copy-on-write writer can count through `&self`.
    len: AtomicUsize,
    tail: u32,
    max_anchor: usize,
    seed: u64,
    window: Window,
    hist: Box<Histogram>,
    /// Copy-on-write mode (the concurrent map; see [`CowLog`]).
    cow: Option<Box<CowLog<V>>>,
}

/// A copy-on-write writer's record of one operation. In this mode readers on other threads may
/// hold any leaf in the table, so a leaf is never changed in place: its first change in an
/// operation replaces it with a copy ([`Leaf::cow_copy`]), and the version replaced waits in
/// `retired` until the operation is done and its owner can defer the free past the readers.
struct CowLog<V> {
    /// Leaves made or copied in this operation: no reader has seen them.
    fresh: Vec<u32>,
    retired: Vec<Superseded<V>>,
}

/// What a removal leaving `n` entries in a leaf does to the leaves (see
/// [`RawMap::remove_at`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Merge {
    None,
    /// The leaf is empty and not the head: it goes.
    Drop,
    /// It moves into the leaf before it.
    IntoPrev,
    /// The leaf after it moves into it.
    Next,
}

/// The one-byte tag of a key's hash kept beside each entry.
#[inline(always)]
fn tag_of(h: u64) -> u8 {
    (h >> 56) as u8
}

impl<V> RawMap<V> {
    pub(crate) fn new(seed: u64) -> Self {
        let mut leaves = Leaves::new();
        leaves.put(HEAD, Leaf::new(b"", None));
        let mut m = RawMap {
            leaves,
            free: Vec::new(),
            nodes: Nodes::new(),
            len: AtomicUsize::new(0),
            tail: HEAD,
            max_anchor: 0,
            seed,
            window: Window::default(),
            hist: Box::new(Histogram {
                abs: [0; 256],
                rel: [0; 256],
                splits: 0,
            }),
            cow: None,
        };
        let (s, _) = m.nodes.find_or_insert(hash::prefix_hash(b"", 0, seed), 0);
        let root = m.nodes.node_mut(s);
        root.anchor = HEAD;
        root.rmost = HEAD;
        root.nanch = 1;
        m
    }

    /// An empty map in copy-on-write mode, for a writer whose readers run on other threads:
    /// see [`CowLog`], [`insert_published`](Self::insert_published) and
    /// [`end_operation`](Self::end_operation).
    pub(crate) fn new_cow(seed: u64) -> Self {
        let mut m = RawMap::new(seed);
        m.cow = Some(Box::new(CowLog {
            fresh: Vec::new(),
            retired: Vec::new(),
        }));
        m
    }

    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.len.load(Relaxed)
    }

    #[inline(always)]
    pub(crate) fn leaf(&self, id: u32) -> &Leaf<V> {
        self.leaves.get(id).expect("a live leaf")
    }

    /// Leaf `id`, to change. In copy-on-write mode, the leaf's first change in an operation
    /// replaces it with a copy first.
    #[inline(always)]
    #[allow(unsafe_code)]
    fn leaf_mut(&mut self, id: u32) -> &mut Leaf<V> {
        if let Some(cow) = self.cow.as_deref_mut()
            && !cow.fresh.contains(&id)
        {
            let old = self.leaves.get(id).expect("a live leaf");
            // SAFETY: the old version leaves the table at once and goes to `retired` as a
            // `Superseded`, which is only read until it is freed without its values.
            let copy = unsafe { old.cow_copy(0) };
            cow.retired.push(self.leaves.swap(id, copy));
            cow.fresh.push(id);
        }
        self.leaves.get_mut(id).expect("a live leaf")
    }

    /// Ends a copy-on-write operation: the versions it replaced, for the caller to free once
    /// no reader can hold them.
    pub(crate) fn end_operation(&mut self) -> Vec<Superseded<V>> {
        let cow = self.cow.as_deref_mut().expect("copy-on-write mode");
        cow.fresh.clear();
        core::mem::take(&mut cow.retired)
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.leaves.capacity() * core::mem::size_of::<usize>()
            + self.free.capacity() * 4
            + self
                .leaves
                .iter()
                .map(|(_, l)| l.heap_bytes())
                .sum::<usize>()
            + self.nodes.heap_bytes()
            + core::mem::size_of::<Histogram>()
    }

    /// The lengths (ascending, in `lens`) the first round probes for `key` when the longest
    /// prefix to look for is `hi` bytes, and how many; none when no window is learned or none
    /// of its lengths applies.
    #[inline(always)]
    fn first_round(&self, key: &[u8], hi: usize, lens: &mut [usize; WINDOW]) -> usize {
        let w = &self.window;
        if !w.on {
            return 0;
        }
        if w.from_end {
            let start = key.len().saturating_sub(w.at + WINDOW - 1);
            let start = start.clamp(1, (hi + 1).saturating_sub(WINDOW).max(1));
            let k = (hi + 1).saturating_sub(start).min(WINDOW);
            for (t, len) in lens[..k].iter_mut().enumerate() {
                *len = start + t;
            }
            k
        } else {
            let mut k = 0;
            for &len in &w.lens[..w.k] {
                let len = usize::from(len);
                if len > hi {
                    break;
                }
                lens[k] = len;
                k += 1;
            }
            k
        }
    }

    /// Makes room for `more` keys beyond those present: leaf ids and prefix-table slots
    /// (leaves fill to about two thirds between splits; each new leaf's anchor adds a quarter
    /// more prefixes than the present leaves' did on average, or 4 while there are few).
    /// Nodes per leaf depend on the keys' shape and drift as a map grows: inserting 1M keys of
    /// each bench dataset in random order, measured at 10k, 50k, 200k and 1M keys, `paths` gave
    /// 3.57, 3.50, 3.50, 3.04; `urls` 2.41, 1.80, 1.75, 1.60; `composite` 1.53–1.37; `az` 1.20,
    /// 1.37, 1.41, 1.61; `email` 1.53–1.28; `rand-8` 1.00. The leaves themselves are allocated
    /// as they split.
    pub(crate) fn try_reserve(&mut self, more: usize) -> Result<(), Error> {
        let leaves = more.div_ceil(CAP * 2 / 3);
        let nodes = self.nodes_for(more);
        let ids = leaves.saturating_sub(self.free.len());
        self.leaves
            .try_reserve(ids)
            .map_err(|_| Error::OutOfMemory {
                bytes: ids.saturating_mul(core::mem::size_of::<usize>()),
            })?;
        self.nodes.try_reserve(nodes)
    }

    /// Prefix-table nodes that `more` keys' leaves are expected to add (see
    /// [`try_reserve`](Self::try_reserve)).
    fn nodes_for(&self, more: usize) -> usize {
        let leaves = more.div_ceil(CAP * 2 / 3);
        let live = self.leaves.len() - self.free.len();
        if live >= 64 {
            let per = (leaves as u128 * self.nodes.len() as u128).div_ceil(live as u128);
            usize::try_from(per + per / 4).unwrap_or(usize::MAX)
        } else {
            leaves.saturating_mul(4)
        }
    }

    /// Gives back spare capacity: the prefix table's beyond what growth would give it, the
    /// leaves' removed key bytes and key arenas' slack, unused leaf ids at the end.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.nodes.shrink_to_fit();
        // Copy-on-write leaves are not touched in place (their copies have no slack to give:
        // every write copies the leaf's arena to its length).
        if self.cow.is_none() {
            for id in 0..self.leaves.len() as u32 {
                if let Some(l) = self.leaves.get_mut(id) {
                    l.shrink_to_fit();
                }
            }
        }
        self.leaves.shrink_to_fit();
        self.free.shrink_to_fit();
    }

    /// The leaf `key` belongs to, or two adjacent leaves it belongs to one of (second: [`NONE`]
    /// when one), as the table says. A hint: see [`locate`](Self::locate).
    #[inline]
    fn route(&self, key: &[u8], h: &mut PrefixHasher<'_>) -> (u32, u32) {
        let mut lo = 0usize;
        let mut lo_slot = self.nodes.find(h.hash(0), 0).expect("the root node");
        let mut hi = key.len().min(self.max_anchor);
        let mut hashes = [0u64; WINDOW];
        let mut lens = [0usize; WINDOW];
        let mut first = true;
        while lo < hi {
            let span = hi - lo;
            let k;
            if first {
                first = false;
                k = self.first_round(key, hi, &mut lens);
                if k == 0 {
                    continue;
                }
            } else {
                k = span.min(FANOUT);
                for (t, len) in lens[..k].iter_mut().enumerate() {
                    *len = lo + ((t + 1) * span).div_ceil(k);
                }
            }
            for t in 0..k {
                hashes[t] = h.hash(lens[t]);
                self.nodes.prefetch(hashes[t]);
            }
            for t in 0..k {
                match self.nodes.find(hashes[t], lens[t] as u32) {
                    Some(s) => {
                        lo = lens[t];
                        lo_slot = s;
                    }
                    None => {
                        hi = lens[t] - 1;
                        break;
                    }
                }
            }
            if lo < hi
                && let Some(pair) = self.nodes.narrow(lo_slot)
            {
                return pair;
            }
        }
        (self.nodes.leaf_of(lo_slot, key.get(lo).copied()), NONE)
    }

    /// The leaf `key` belongs to, checked against its fences. `seek` says which of the leaf's
    /// lines to prefetch.
    #[inline]
    fn locate(&self, key: &[u8], h: &mut PrefixHasher<'_>, seek: bool) -> u32 {
        let (a, b) = self.route(key, h);
        let la = self.leaf(a);
        let lb = (b != NONE).then(|| self.leaf(b));
        for l in core::iter::once(la).chain(lb) {
            if seek {
                l.prefetch_seek();
            } else {
                l.prefetch_find();
            }
        }
        if key >= la.lower() {
            if la.below_upper(key) {
                return a;
            }
            if lb.is_some_and(|lb| lb.below_upper(key) && la.next == b) {
                return b;
            }
        }
        self.locate_slow(key)
    }

    /// [`locate`](Self::locate) by walking the leaf list: after a hash collision misled the
    /// table search.
    #[cold]
    #[inline(never)]
    fn locate_slow(&self, key: &[u8]) -> u32 {
        let mut x = HEAD;
        loop {
            let l = self.leaf(x);
            if l.below_upper(key) {
                return x;
            }
            x = l.next;
        }
    }

    /// The entry whose key is `key`.
    #[inline]
    pub(crate) fn find(&self, key: &[u8]) -> Option<Pos> {
        let routed = self.find_start(key);
        self.find_end(key, routed)
            .map(|(leaf, _, i)| Pos { leaf, i })
    }

    /// [`find`](Self::find) for readers beside a copy-on-write writer: the leaf version the
    /// entry was found in, and its index there.
    #[inline]
    pub(crate) fn find_version(&self, key: &[u8]) -> Option<(&Leaf<V>, usize)> {
        let routed = self.find_start(key);
        self.find_end(key, routed).map(|(_, l, i)| (l, i))
    }

    /// Lookups of up to [`BATCH`] keys (`out[i]` for `keys[i]`) whose leaf reads overlap:
    /// each key's search runs and prefetches its leaves, then each key is looked for in its
    /// leaves.
    pub(crate) fn find_batch(&self, keys: &[&[u8]], out: &mut [Option<Pos>]) {
        debug_assert!(keys.len() <= BATCH && out.len() == keys.len());
        let mut routed = [(NONE, NONE, 0u8); BATCH];
        for (r, k) in routed.iter_mut().zip(keys) {
            *r = self.find_start(k);
        }
        for ((o, k), r) in out.iter_mut().zip(keys).zip(routed) {
            *o = self.find_end(k, r).map(|(leaf, _, i)| Pos { leaf, i });
        }
    }

    /// A lookup's first half: the one or two leaves the table names for `key` (their lines
    /// prefetched) and the key's tag.
    #[inline]
    pub(crate) fn find_start(&self, key: &[u8]) -> (u32, u32, u8) {
        let mut h = PrefixHasher::new(key, self.seed);
        let (a, b) = self.route(key, &mut h);
        self.leaf(a).prefetch_find();
        if b != NONE {
            self.leaf(b).prefetch_find();
        }
        (a, b, tag_of(h.hash(key.len())))
    }

    /// A lookup's second half, in the leaves [`find_start`](Self::find_start) named: the
    /// entry's leaf id, the leaf (each leaf is read once: in copy-on-write mode, the version
    /// read), and the index.
    #[inline]
    pub(crate) fn find_end(
        &self,
        key: &[u8],
        (a, b, tag): (u32, u32, u8),
    ) -> Option<(u32, &Leaf<V>, usize)> {
        let la = self.leaf(a);
        let lb = (b != NONE).then(|| self.leaf(b));
        if let Some(i) = la.find(key, tag) {
            return Some((a, la, i));
        }
        if let Some(lb) = lb
            && let Some(i) = lb.find(key, tag)
        {
            return Some((b, lb, i));
        }
        // Absent, unless a collision misled the route.
        if la.covers(key) || lb.is_some_and(|lb| lb.covers(key)) {
            return None;
        }
        let x = self.locate_slow(key);
        let lx = self.leaf(x);
        lx.find(key, tag).map(|i| (x, lx, i))
    }

    /// The first entry `>= key` (`inclusive`) or `> key`, as a position that may be the gap
    /// after a leaf's last entry.
    #[inline]
    pub(crate) fn seek(&self, key: &[u8], inclusive: bool) -> Pos {
        let mut h = PrefixHasher::new(key, self.seed);
        let x = self.locate(key, &mut h, true);
        let (i, eq) = self.leaf(x).seek(key);
        Pos {
            leaf: x,
            i: if eq && !inclusive { i + 1 } else { i },
        }
    }

    /// [`seek`](Self::seek) for readers beside a copy-on-write writer: the leaf version read
    /// and the index in it (which may be the gap after its last entry).
    #[inline]
    pub(crate) fn seek_version(&self, key: &[u8], inclusive: bool) -> (&Leaf<V>, usize) {
        let mut h = PrefixHasher::new(key, self.seed);
        let x = self.locate(key, &mut h, true);
        // Fences change only while no reader reads (see the concurrent map), so this version
        // of leaf `x` covers `key` as the one `locate` checked did.
        let l = self.leaf(x);
        let (i, eq) = l.seek(key);
        (l, if eq && !inclusive { i + 1 } else { i })
    }

    /// The first leaf version, for a reader: see [`seek_version`](Self::seek_version).
    pub(crate) fn first_version(&self) -> &Leaf<V> {
        self.leaf(HEAD)
    }

    /// The last leaf version, for a reader.
    pub(crate) fn last_version(&self) -> &Leaf<V> {
        self.leaf(self.tail)
    }

    /// The entry at or after index `i` of `l`, a version read in the same read section
    /// (whose links are therefore current); `None` past the last.
    #[inline]
    pub(crate) fn forward_version<'a>(
        &'a self,
        mut l: &'a Leaf<V>,
        mut i: usize,
    ) -> Option<(&'a Leaf<V>, usize)> {
        while i == l.len() {
            if l.next == NONE {
                return None;
            }
            l = self.leaf(l.next);
            i = 0;
        }
        Some((l, i))
    }

    /// The entry just before the gap `i` of `l`, a version read in the same read section;
    /// `None` before the first.
    #[inline]
    pub(crate) fn back_version<'a>(
        &'a self,
        mut l: &'a Leaf<V>,
        mut i: usize,
    ) -> Option<(&'a Leaf<V>, usize)> {
        while i == 0 {
            if l.prev == NONE {
                return None;
            }
            l = self.leaf(l.prev);
            i = l.len();
        }
        Some((l, i - 1))
    }

    /// The gap where the keys after leaf version `old` begin, now: `old` may be a version a
    /// reader read in an earlier read section, since replaced, split or merged. The leaf its
    /// link names when that leaf still begins at `old`'s upper fence, else a seek to it.
    /// `None` when `old` was the last leaf.
    #[inline]
    pub(crate) fn after_version(&self, old: &Leaf<V>) -> Option<(&Leaf<V>, usize)> {
        if old.next != NONE
            && let Some(n) = self.leaves.get(old.next)
            && n.follows(old)
        {
            return Some((n, 0));
        }
        let up = old.upper()?;
        Some(self.seek_version(&up, true))
    }

    /// The gap where the keys before leaf version `old` end, now (see
    /// [`after_version`](Self::after_version)): entries before the index returned order before
    /// `old`'s lower fence. `None` when `old` was the first leaf.
    #[inline]
    pub(crate) fn before_version(&self, old: &Leaf<V>) -> Option<(&Leaf<V>, usize)> {
        if old.prev == NONE {
            return None;
        }
        if let Some(p) = self.leaves.get(old.prev)
            && old.follows(p)
        {
            return Some((p, p.len()));
        }
        Some(self.seek_version(old.lower(), true))
    }

    /// The gap at a range's bound, for a reader: from the front (`front`), before the first
    /// key within `bound` (`Unbounded`: the start); from the back, after the last key within
    /// it (`Unbounded`: the end).
    #[inline]
    pub(crate) fn seek_bound(
        &self,
        bound: core::ops::Bound<&[u8]>,
        front: bool,
    ) -> (&Leaf<V>, usize) {
        use core::ops::Bound::{Excluded, Included, Unbounded};
        match (bound, front) {
            (Unbounded, true) => (self.first_version(), 0),
            (Unbounded, false) => {
                let l = self.last_version();
                (l, l.len())
            }
            (Included(k), _) => self.seek_version(k, front),
            (Excluded(k), _) => self.seek_version(k, !front),
        }
    }

    /// The position of the first entry in key order (the gap of an empty map).
    pub(crate) fn start(&self) -> Pos {
        Pos { leaf: HEAD, i: 0 }
    }

    /// The gap after the last entry.
    pub(crate) fn end(&self) -> Pos {
        Pos {
            leaf: self.tail,
            i: self.leaf(self.tail).len(),
        }
    }

    /// Moves `p` onto an entry at or after it; `None` past the last.
    #[inline]
    pub(crate) fn settle_forward(&self, mut p: Pos) -> Option<Pos> {
        loop {
            let l = self.leaf(p.leaf);
            if p.i < l.len() {
                return Some(p);
            }
            if l.next == NONE {
                return None;
            }
            p = Pos { leaf: l.next, i: 0 };
        }
    }

    /// The entry just before the gap `p`; `None` before the first.
    #[inline]
    pub(crate) fn before(&self, mut p: Pos) -> Option<Pos> {
        loop {
            if p.i > 0 {
                return Some(Pos {
                    leaf: p.leaf,
                    i: p.i - 1,
                });
            }
            let prev = self.leaf(p.leaf).prev;
            if prev == NONE {
                return None;
            }
            p = Pos {
                leaf: prev,
                i: self.leaf(prev).len(),
            };
        }
    }

    #[inline(always)]
    pub(crate) fn entry(&self, p: Pos) -> (&[u8], &V) {
        let l = self.leaf(p.leaf);
        (l.key(p.i), l.val(p.i))
    }

    #[inline(always)]
    pub(crate) fn val_mut(&mut self, p: Pos) -> &mut V {
        self.leaf_mut(p.leaf).val_mut(p.i)
    }

    /// A pointer to the value at `p`, which must be an entry, made through a shared borrow:
    /// the values are interior-mutable, so a caller with exclusive access to the map may write
    /// through it while it reads the map (see [`Leaf::val_ptr`]).
    #[inline(always)]
    pub(crate) fn val_ptr(&self, p: Pos) -> *mut V {
        self.leaf(p.leaf).val_ptr(p.i)
    }

    /// The leaves, by id (`None`: a free id), and the last one's id; the map is consumed.
    pub(crate) fn into_leaves(self) -> (Vec<Option<Box<Leaf<V>>>>, u32) {
        (self.leaves.into_boxes(), self.tail)
    }

    /// Stores `val` under `key`; where it now is, and the previous value if there was one.
    pub(crate) fn insert(&mut self, key: &[u8], val: V) -> (Pos, Option<V>) {
        let mut h = PrefixHasher::new(key, self.seed);
        let mut x = self.locate(key, &mut h, true);
        let tag = tag_of(h.hash(key.len()));
        let (mut i, eq) = self.leaf(x).seek(key);
        if eq {
            let old = core::mem::replace(self.leaf_mut(x).val_mut(i), val);
            return (Pos { leaf: x, i }, Some(old));
        }
        if self.leaf(x).len() == CAP {
            let z = self.split(x);
            if key >= self.leaf(z).lower() {
                x = z;
            }
            i = self.leaf(x).seek(key).0;
        }
        self.leaf_mut(x).insert_at(i, key, tag, val);
        *self.len.get_mut() += 1;
        (Pos { leaf: x, i }, None)
    }

    /// Removes the entry at `p`; its key and value.
    pub(crate) fn remove_at(&mut self, p: Pos) -> (Vec<u8>, V) {
        let key = self.leaf(p.leaf).key(p.i).to_vec();
        let v = self.leaf_mut(p.leaf).remove_at(p.i);
        *self.len.get_mut() -= 1;
        let x = p.leaf;
        match self.merge_after_remove(x, self.leaf(x).len()) {
            Merge::None => {}
            Merge::Drop => self.drop_leaf(x),
            Merge::IntoPrev => self.absorb(self.leaf(x).prev, x),
            Merge::Next => self.absorb(x, self.leaf(x).next),
        }
        (key, v)
    }

    /// What a removal that leaves `n` entries in leaf `x` does to the leaves: a leaf emptied
    /// goes, one left with at most [`MERGE_AT`] merges with a neighbour when the two fit in
    /// half a leaf.
    fn merge_after_remove(&self, x: u32, n: usize) -> Merge {
        if x != HEAD && n == 0 {
            return Merge::Drop;
        }
        if n <= MERGE_AT {
            let (prev, next) = (self.leaf(x).prev, self.leaf(x).next);
            if x != HEAD && self.leaf(prev).len() + n <= CAP / 2 {
                return Merge::IntoPrev;
            }
            if next != NONE && self.leaf(next).len() + n <= CAP / 2 {
                return Merge::Next;
            }
        }
        Merge::None
    }

    /// [`insert`](Self::insert) by a copy-on-write writer while readers and other such writers
    /// run, when it changes one leaf: a copy of `key`'s leaf with the change replaces it by a
    /// compare-and-swap, retried on the newer version when another writer replaced it first.
    /// The previous value, if any, and the version replaced. `Err(val)` when the leaf is full:
    /// the insertion splits it, which the caller must do through [`insert`](Self::insert) with
    /// readers and these writers kept out. `count`, the caller's entry count, goes up once the
    /// new key is visible.
    ///
    /// Leaf ids and fences must not change meanwhile (the concurrent map calls this in a read
    /// section).
    #[allow(unsafe_code)]
    pub(crate) fn insert_published(
        &self,
        key: &[u8],
        mut val: V,
        count: &AtomicIsize,
    ) -> Result<(Option<V>, Superseded<V>), V> {
        debug_assert!(self.cow.is_some());
        let mut h = PrefixHasher::new(key, self.seed);
        let x = self.locate(key, &mut h, true);
        let tag = tag_of(h.hash(key.len()));
        loop {
            let l = self.leaf(x);
            let (i, eq) = l.seek(key);
            if !eq && l.len() == CAP {
                return Err(val);
            }
            // SAFETY: if the copy is published, the old version leaves the table in the same
            // step and goes to the caller as a `Superseded`, which is only read until it is
            // freed without its values; if not, the copy gives back `val` and forgets the rest.
            let mut copy = unsafe { l.cow_copy(if eq { 0 } else { key.len() }) };
            let old = if eq {
                Some(core::mem::replace(copy.val_mut(i), val))
            } else {
                copy.insert_at(i, key, tag, val);
                None
            };
            match self.leaves.publish_if(x, l, copy) {
                Ok(version) => {
                    if old.is_none() {
                        self.len.fetch_add(1, Relaxed);
                        count.fetch_add(1, Relaxed);
                    }
                    return Ok((old, version));
                }
                Err(mut copy) => {
                    // Another writer was first: take `val` back; the other values are `l`'s.
                    val = match old {
                        Some(o) => core::mem::replace(copy.val_mut(i), o),
                        None => copy.remove_at(i),
                    };
                    copy.forget_values();
                }
            }
        }
    }

    /// [`remove`](Self::remove_at) of `key` by a copy-on-write writer beside readers and other
    /// such writers (see [`insert_published`](Self::insert_published)): `Ok(None)` when `key`
    /// is absent, else its value and the leaf version replaced. `Err(())` when the removal
    /// would drop or merge leaves: the caller must remove through
    /// [`remove_at`](Self::remove_at) with readers and these writers kept out. `count`, the
    /// caller's entry count, goes down before the key disappears (back up if another writer
    /// was first), so that it never counts more keys than are present.
    #[allow(unsafe_code)]
    pub(crate) fn remove_published(
        &self,
        key: &[u8],
        count: &AtomicIsize,
    ) -> Result<Option<(V, Superseded<V>)>, ()> {
        debug_assert!(self.cow.is_some());
        let routed = self.find_start(key);
        loop {
            let Some((x, l, i)) = self.find_end(key, routed) else {
                return Ok(None);
            };
            if self.merge_after_remove(x, l.len() - 1) != Merge::None {
                return Err(());
            }
            // SAFETY: as in `insert_published`; on failure the value taken out of the copy
            // is `l`'s and is forgotten.
            let mut copy = unsafe { l.cow_copy(0) };
            let v = copy.remove_at(i);
            count.fetch_sub(1, Relaxed);
            match self.leaves.publish_if(x, l, copy) {
                Ok(version) => {
                    self.len.fetch_sub(1, Relaxed);
                    return Ok(Some((v, version)));
                }
                Err(mut copy) => {
                    count.fetch_add(1, Relaxed);
                    core::mem::forget(v);
                    copy.forget_values();
                }
            }
        }
    }

    /// Before an insertion of `key` that splits a leaf (see
    /// [`insert_published`](Self::insert_published)): a grown copy of the prefix table when the
    /// split's new anchor might not fit in the current one. Built through `&self`, while
    /// readers go on reading the current table; [`install_slots`](Self::install_slots) puts it
    /// in place.
    pub(crate) fn grown_slots_for(&self, key: &[u8]) -> Result<Option<GrownSlots>, Error> {
        let mut h = PrefixHasher::new(key, self.seed);
        let x = self.locate(key, &mut h, true);
        // The new anchor is a prefix of one of the leaf's keys or of `key`, and each of its
        // prefixes is at most one new node.
        let more = self.leaf(x).longest_key().max(key.len()) + 1;
        self.nodes.grown(more)
    }

    /// [`grown_slots_for`](Self::grown_slots_for) for [`try_reserve`](Self::try_reserve)'s
    /// estimate of `more` keys' prefixes.
    pub(crate) fn grown_slots_reserving(&self, more: usize) -> Result<Option<GrownSlots>, Error> {
        self.nodes.grown(self.nodes_for(more))
    }

    /// The map's hash seed.
    pub(crate) fn seed(&self) -> u64 {
        self.seed
    }

    /// Puts a table from [`grown_slots_for`](Self::grown_slots_for) in place.
    pub(crate) fn install_slots(&mut self, slots: GrownSlots) {
        self.nodes.install(slots);
    }

    /// Moves every entry of leaf `w` into `x`, the leaf before it, and drops `w`.
    fn absorb(&mut self, x: u32, w: u32) {
        debug_assert_eq!(self.leaf(x).next, w);
        let moved = self.leaf_mut(w).take_all();
        self.drop_leaf(w);
        let l = self.leaf_mut(x);
        for (key, tag, val) in moved {
            l.insert_at(l.len(), &key, tag, val);
        }
    }

    /// Splits full leaf `x` near its middle where the anchor comes out shortest; the new leaf.
    fn split(&mut self, x: u32) -> u32 {
        let l = self.leaf(x);
        let n = l.len();
        let (mut at, mut best) = (n / 2, usize::MAX);
        for i in n / 4..=3 * n / 4 {
            let c = common_prefix(l.key(i - 1), l.key(i));
            if c < best || (c == best && i.abs_diff(n / 2) < at.abs_diff(n / 2)) {
                (at, best) = (i, c);
            }
        }
        let anchor = l.key(at)[..best + 1].to_vec();
        self.sample(x);
        let right = self.leaf_mut(x).split_off(at, &anchor);
        let z = self.free.pop().unwrap_or(self.leaves.len() as u32);
        self.leaves.put(z, right);
        if let Some(cow) = self.cow.as_deref_mut() {
            cow.fresh.push(z);
        }
        let w = self.leaf(x).next;
        self.leaf_mut(z).prev = x;
        self.leaf_mut(z).next = w;
        self.leaf_mut(x).next = z;
        if w == NONE {
            self.tail = z;
        } else {
            self.leaf_mut(w).prev = z;
        }
        self.add_anchor(&anchor, z, x, w);
        z
    }

    /// Enters anchor `a` of new leaf `z`, which follows `x` and precedes `w`.
    fn add_anchor(&mut self, a: &[u8], z: u32, x: u32, w: u32) {
        let mut h = PrefixHasher::new(a, self.seed);
        for m in 0..=a.len() {
            let (s, made) = self.nodes.find_or_insert(h.hash(m), m as u32);
            let node = self.nodes.node_mut(s);
            node.nanch += 1;
            if made || node.rmost == x {
                node.rmost = z;
            }
            if m == a.len() {
                node.anchor = z;
            } else if !self.nodes.has_kid(s, a[m]) {
                self.nodes.add_kid(s, a[m], x);
            }
        }
        // Subtrees that began right after `x` (at `w`'s anchor) now begin after `z`.
        if w != NONE {
            let aw = self.leaf(w).lower().to_vec();
            self.retarget(&aw, common_prefix(a, &aw), x, z);
        }
        self.max_anchor = self.max_anchor.max(a.len());
    }

    /// For the kids along `aw`'s path from length `from`: leaf-before `from` becomes `to`.
    fn retarget(&mut self, aw: &[u8], from: usize, old: u32, new: u32) {
        let mut h = PrefixHasher::new(aw, self.seed);
        for (m, &byte) in aw.iter().enumerate().skip(from) {
            if let Some(s) = self.nodes.find(h.hash(m), m as u32) {
                self.nodes.retarget_kid(s, byte, old, new);
            }
        }
    }

    /// Unlinks empty leaf `x` (not the head) and removes its anchor.
    fn drop_leaf(&mut self, x: u32) {
        let (y, w) = (self.leaf(x).prev, self.leaf(x).next);
        let a = self.leaf(x).lower().to_vec();
        let upper = self.leaf(x).upper();
        let mut h = PrefixHasher::new(&a, self.seed);
        let mut orphan = false;
        for m in (0..=a.len()).rev() {
            let s = self
                .nodes
                .find(h.hash(m), m as u32)
                .expect("every prefix of an anchor is in the table");
            if orphan {
                self.nodes.remove_kid(s, a[m]);
            }
            let node = self.nodes.node_mut(s);
            node.nanch -= 1;
            if m == a.len() {
                node.anchor = NONE;
            }
            orphan = node.nanch == 0;
            if orphan {
                self.nodes.remove(s);
            } else if node.rmost == x {
                node.rmost = y;
            }
        }
        if w != NONE {
            let aw = self.leaf(w).lower().to_vec();
            self.retarget(&aw, common_prefix(&a, &aw), x, y);
            self.leaf_mut(w).prev = y;
        } else {
            self.tail = y;
        }
        self.leaf_mut(y).next = w;
        self.leaf_mut(y).set_upper(upper.as_deref());
        match self.cow.as_deref_mut() {
            Some(cow) if !cow.fresh.contains(&x) => cow.retired.push(self.leaves.retire(x)),
            _ => drop(self.leaves.take(x)),
        }
        self.free.push(x);
    }

    /// Records where searches for a few of full leaf `x`'s keys end (the longest prefix each
    /// shares with an anchor: with one of the leaf's fences), and now and then re-chooses the
    /// first round's window from the record.
    fn sample(&mut self, x: u32) {
        let l = self.leaves.get(x).expect("a live leaf");
        let upper = l.upper();
        for i in (0..l.len()).step_by(l.len().div_ceil(4)) {
            let k = l.key(i);
            let m = common_prefix(k, l.lower())
                .max(upper.as_deref().map_or(0, |u| common_prefix(k, u)));
            self.hist.abs[m.min(255)] += 1;
            self.hist.rel[(k.len() - m).min(255)] += 1;
        }
        self.hist.splits += 1;
        if self.hist.splits.is_multiple_of(RELEARN) {
            self.relearn();
        }
    }

    fn relearn(&mut self) {
        let total: u32 = self.hist.abs.iter().sum();
        let (abs_hits, lens, k) = best_probes(&self.hist.abs);
        let (rel_hits, rel_at) = (0..=256 - (WINDOW - 1))
            .map(|a| (self.hist.rel[a..a + WINDOW - 1].iter().sum::<u32>(), a))
            .max_by_key(|&(s, a)| (s, core::cmp::Reverse(a)))
            .expect("a window");
        // From the end, WINDOW adjacent lengths answer for WINDOW - 1 distances: the lengths
        // `len - rel_at - (WINDOW - 2) ..= len - rel_at`, probed as WINDOW lengths ending one
        // past them.
        self.window = if rel_hits > abs_hits {
            Window {
                on: rel_hits * 2 >= total,
                from_end: true,
                at: rel_at.saturating_sub(1),
                ..Window::default()
            }
        } else {
            Window {
                on: abs_hits * 2 >= total,
                lens,
                k,
                ..Window::default()
            }
        };
        // Forget slowly, so the window follows the keys.
        for v in self.hist.abs.iter_mut().chain(self.hist.rel.iter_mut()) {
            *v /= 2;
        }
    }

    /// Removes every entry.
    pub(crate) fn clear(&mut self) {
        debug_assert!(self.cow.is_none(), "readers may hold the leaves");
        *self = RawMap::new(self.seed);
    }

    /// Checks the invariants of the module docs.
    pub(crate) fn audit(&self) -> Result<(), String> {
        use std::collections::BTreeMap;
        #[derive(Default, PartialEq, Debug)]
        struct Want {
            anchor: Option<u32>,
            rmost: u32,
            nanch: u32,
            kids: BTreeMap<u8, u32>,
        }
        let mut want: BTreeMap<Vec<u8>, Want> = BTreeMap::new();
        let (mut x, mut prev, mut count) = (HEAD, NONE, 0usize);
        let mut prev_upper: Option<Vec<u8>> = None;
        let mut seen = 0usize;
        while x != NONE {
            let l = self.leaf(x);
            l.audit().map_err(|e| format!("leaf {x}: {e}"))?;
            if l.prev != prev {
                return Err(format!("leaf {x}: prev {} not {prev}", l.prev));
            }
            if x != HEAD {
                if l.len() == 0 {
                    return Err(format!("leaf {x} is empty"));
                }
                if prev_upper.as_deref() != Some(l.lower()) {
                    return Err(format!(
                        "leaf {x}: anchor is not its predecessor's upper fence"
                    ));
                }
            } else if !l.lower().is_empty() {
                return Err("the head leaf has an anchor".into());
            }
            let a = l.lower();
            for m in 0..=a.len() {
                let e = want.entry(a[..m].to_vec()).or_default();
                e.nanch += 1;
                e.rmost = x;
                if m == a.len() {
                    e.anchor = Some(x);
                } else {
                    e.kids.entry(a[m]).or_insert(prev);
                }
            }
            count += l.len();
            prev_upper = l.upper();
            prev = x;
            x = l.next;
            seen += 1;
        }
        if prev != self.tail || prev_upper.is_some() {
            return Err("the last leaf is not the tail or has an upper fence".into());
        }
        if count != self.len() {
            return Err(format!("{count} entries, len {}", self.len()));
        }
        if seen + self.free.len() != self.leaves.len() {
            return Err("leaves lost from the list".into());
        }
        if want.len() != self.nodes.len() {
            return Err(format!(
                "{} prefixes, {} nodes",
                want.len(),
                self.nodes.len()
            ));
        }
        for (p, w) in &want {
            let s = self
                .nodes
                .find(hash::prefix_hash(p, p.len(), self.seed), p.len() as u32)
                .ok_or_else(|| format!("prefix {p:?} missing"))?;
            let n = self.nodes.node(s);
            let (bytes, before) = self.nodes.kids(s);
            let got = Want {
                anchor: (n.anchor != NONE).then_some(n.anchor),
                rmost: n.rmost,
                nanch: n.nanch,
                kids: bytes.iter().copied().zip(before.iter().copied()).collect(),
            };
            if &got != w {
                return Err(format!("prefix {p:?}: node {got:?}, want {w:?}"));
            }
            if p.len() > self.max_anchor {
                return Err("an anchor longer than max_anchor".into());
            }
        }
        Ok(())
    }
}

impl<V> core::fmt::Debug for RawMap<V> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RawMap")
            .field("len", &self.len())
            .field("leaves", &(self.leaves.len() - self.free.len()))
            .field("nodes", &self.nodes.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The searches a probe set answers, counted directly.
    fn answered(hist: &[u32; 256], lens: &[u8]) -> u32 {
        let has = |m: usize| m == 0 || lens.contains(&(m as u8));
        (0..255)
            .filter(|&m| has(m) && has(m + 1))
            .map(|m| hist[m])
            .sum()
    }

    #[test]
    fn probe_sets_cover_every_mode_they_can_afford() {
        // Two modes (as URLs have): one run of probes each, 7 + 9 = 16 probes.
        let mut hist = [0u32; 256];
        hist[5..=10].fill(100);
        hist[26..=33].fill(50);
        hist[60] = 1;
        let (hits, lens, k) = best_probes(&hist);
        assert_eq!(hits, 1000);
        let want: Vec<u8> = (5..=11).chain(26..=34).collect();
        assert_eq!(&lens[..k], &want[..]);
        // One mode wider than a window: the densest WINDOW - 1 lengths.
        let mut hist = [0u32; 256];
        for (m, h) in hist.iter_mut().enumerate().take(60).skip(20) {
            *h = 1000 - (m as i32 - 40).pow(2) as u32;
        }
        let (hits, lens, k) = best_probes(&hist);
        assert_eq!(hits, answered(&hist, &lens[..k]));
        assert_eq!(&lens[..k], &(33..=48).collect::<Vec<u8>>()[..]);
        // Searches ending at the root need only length 1; lengths past 255 are never chosen.
        let mut hist = [0u32; 256];
        hist[0] = 7;
        hist[255] = 9;
        let (hits, lens, k) = best_probes(&hist);
        assert_eq!((hits, &lens[..k]), (7, &[1u8][..]));
        // Nothing sampled: nothing probed.
        assert_eq!(best_probes(&[0; 256]).2, 0);
    }

    fn path(i: u64) -> Vec<u8> {
        let x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        format!(
            "/srv/data/{}/{}/file-{:06}.log",
            x % 7,
            (x >> 8) % 13,
            x >> 40
        )
        .into_bytes()
    }

    #[test]
    fn splits_and_removals_keep_the_table_exact() {
        let mut m = RawMap::new(5);
        let mut o = BTreeMap::new();
        for i in 0..20_000 {
            let k = path(i);
            assert_eq!(m.insert(&k, i).1, o.insert(k, i));
        }
        m.audit().unwrap();
        let live = m.leaves.len() - m.free.len();
        assert!(live > 20_000 / CAP, "{live} leaves");
        assert!(m.window.on, "a first-round window was learned");
        for (n, k) in o.keys().enumerate() {
            assert!(m.find(k).is_some());
            if n % 2 == 0 {
                let p = m.find(k).unwrap();
                m.remove_at(p);
            }
        }
        m.audit().unwrap();
        for (n, k) in o.keys().enumerate() {
            assert_eq!(m.find(k).is_some(), n % 2 == 1);
        }
        while let Some(p) = m.settle_forward(m.start()) {
            m.remove_at(p);
        }
        m.audit().unwrap();
        assert_eq!((m.leaves.len() - m.free.len(), m.nodes.len()), (1, 1));
    }

    #[test]
    fn reserved_tables_do_not_grow() {
        // Before any leaf (the estimate) and after many (the measured nodes per leaf).
        for pre in [0u64, 20_000] {
            let mut m = RawMap::new(5);
            for i in 0..pre {
                m.insert(&path(i), i);
            }
            m.try_reserve(40_000).unwrap();
            let slots = m.nodes.slots();
            for i in pre..pre + 40_000 {
                m.insert(&path(i), i);
            }
            assert_eq!(m.nodes.slots(), slots, "after {pre} keys");
            m.shrink_to_fit();
            assert!(m.nodes.slots() <= slots);
            m.audit().unwrap();
        }
        // An empty map has no nodes per leaf of its own to go by: it reserves for the most
        // measured (3.57, 1M file paths; see `try_reserve`). The table holds up to half its
        // slots before it grows.
        for more in [10_000usize, 100_000, 1_000_000] {
            let mut m: RawMap<u64> = RawMap::new(5);
            m.try_reserve(more).unwrap();
            let leaves = more.div_ceil(CAP * 2 / 3);
            assert!(m.nodes.slots() / 2 >= leaves * 357 / 100, "{more} keys");
        }
    }

    #[test]
    fn misled_searches_still_answer_right() {
        let mut m = RawMap::new(9);
        let mut o = BTreeMap::new();
        for i in 0..5_000 {
            let k = path(i);
            m.insert(&k, i);
            o.insert(k, i);
        }
        // As if every probe past the root had collided: the table names wrong leaves, which the
        // fences refuse.
        m.max_anchor = 0;
        m.window.on = false;
        for i in 0..6_000 {
            let k = path(i);
            assert_eq!(m.find(&k).map(|p| *m.entry(p).1), o.get(&k).copied(), "{i}");
            let mut cut = k.clone();
            cut.truncate(k.len() - 5);
            let p = m.settle_forward(m.seek(&cut, true));
            let want = o.range(cut.clone()..).next().map(|(_, v)| *v);
            assert_eq!(p.map(|p| *m.entry(p).1), want);
        }
        let k = path(6_001);
        m.insert(&k, 1);
        o.insert(k, 1);
        m.max_anchor = o.keys().map(Vec::len).max().unwrap();
        m.audit().unwrap();
    }
}
