//! Query execution on one worker's segment of the storage layer (pi-parallel-skiplist.txt
//! §3.2.3, Algorithm 4), with the batch-order rule for ranges.
//!
//! A worker gets its queries sorted by `(key, position in the batch)`, each with its
//! interception, and executes them in that order: for each, it walks the list from the later
//! of its interception and the previous query's node to the *floor* node (largest key at most
//! the query's; the head when none), then reads, updates, marks or links after it. Queries on
//! one key therefore run in batch order, which makes a batch's point answers those of running
//! it one query at a time in batch order.
//!
//! A range runs at its start key, so the writes of the batch that come *later in key order*
//! but *earlier in the batch* have not been applied yet when it scans. It overlays them: the
//! worker's following queries with keys inside the range and smaller positions (the last one
//! per key wins) are merged into the scan as it goes. A range therefore sees exactly the
//! writes before it in the batch, like every other query. A count-limited range (a scan)
//! stops after its count of entries, and reads only the following queries up to where it
//! stopped. The parts of ranges that began on earlier workers run before the worker's own
//! queries, from its segment's first node, and overlay every own write earlier in the batch.
//!
//! Segment rule (the partition's guarantee, `partition.rs`): every key this worker is given
//! lies below `end`, the key of the next worker's first interception, and every range is cut
//! at `end`; so this worker's walks never pass that node, and it links new nodes only after
//! nodes of its own segment.

use core::cmp::Ordering::{self, Equal, Greater, Less};
use core::ops::Bound;
use core::sync::atomic::Ordering::Relaxed;

use super::node::{Heights, MAX_HEIGHT, Node, Storage, UNLINKED, Unlinked};
use super::slab::Alloc;
use crate::pi::key::sealed::Key;
use crate::substrate::prefetch::prefetch_read;

/// What a query does; `R` is a borrowed key.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Op<R> {
    Get,
    Insert(u64),
    Remove,
    /// Keys from the item's key (itself left out with `skip_lo`) up to `hi`, at most `limit`
    /// entries ([`UNLIMITED`]: all).
    Range {
        hi: Bound<R>,
        skip_lo: bool,
        limit: u32,
    },
    /// Internal, after a rebuild: unlink the node (this handle, of the item's key) if it is
    /// deleted and the current index does not name it.
    Unlink(u64),
}

impl<R> Op<R> {
    /// Whether the query changes the map.
    fn writes(&self) -> bool {
        matches!(self, Op::Insert(_) | Op::Remove)
    }
}

/// The `limit` of a range without one.
pub(crate) const UNLIMITED: u32 = u32::MAX;

/// A query as the workers see it: key (borrowed from the batch, or for an unlink from its
/// node), position in the batch, operation.
pub(crate) struct Item<'b, K: Key> {
    pub(crate) key: K::Ref<'b>,
    pub(crate) pos: u32,
    pub(crate) op: Op<K::Ref<'b>>,
}

impl<K: Key> Clone for Item<'_, K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K: Key> Copy for Item<'_, K> {}

impl<K: Key> core::fmt::Debug for Item<'_, K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Item")
            .field("key", &self.key)
            .field("pos", &self.pos)
            .field("op", &self.op)
            .finish()
    }
}

impl<K: Key> Item<'_, K> {
    /// The execution order: by key, then by position in the batch.
    #[inline(always)]
    pub(crate) fn order(&self, other: &Self) -> Ordering {
        K::order(self.key, other.key).then(self.pos.cmp(&other.pos))
    }

    /// Whether the query needs the node before its key's (an unlink needs its node's
    /// predecessor) rather than its key's floor.
    #[inline(always)]
    fn strict(&self) -> bool {
        matches!(self.op, Op::Unlink(_))
    }

    /// Whether a walk toward this query's floor moves on to a node of key `k`.
    #[inline(always)]
    fn passes(&self, k: K::Ref<'_>) -> bool {
        passes::<K>(k, self.key, self.strict())
    }
}

/// The part of a range that began on an earlier worker: it runs on this worker's segment
/// from its first node.
pub(crate) struct Part<'b, K: Key> {
    pub(crate) pos: u32,
    pub(crate) hi: Bound<K::Ref<'b>>,
    pub(crate) limit: u32,
}

impl<K: Key> Clone for Part<'_, K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K: Key> Copy for Part<'_, K> {}

impl<K: Key> core::fmt::Debug for Part<'_, K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Part")
            .field("pos", &self.pos)
            .field("hi", &self.hi)
            .finish()
    }
}

/// One worker's share of a batch.
pub(crate) struct Work<'a, 'b, 's, K: Key> {
    pub(crate) items: &'a [Item<'b, K>],
    /// The interception of each item (`None`: the head).
    pub(crate) starts: &'a [Option<&'s Node<K>>],
    /// Parts of ranges that started on earlier workers, sorted by position; they start at
    /// `first`.
    pub(crate) parts: &'a [Part<'b, K>],
    pub(crate) first: Option<&'s Node<K>>,
    /// Keys of this segment lie below this node's (`None`: no bound).
    pub(crate) end: Option<&'s Node<K>>,
    /// The generation of the current index layer (see [`Node::indexed`]).
    pub(crate) generation: u32,
}

/// What a worker hands back.
#[derive(Debug)]
pub(crate) struct Output<K: Key> {
    /// `(position, answer)` of each point query.
    pub(crate) points: Vec<(u32, Option<u64>)>,
    /// `(position, entries)` of each range or range part, in key order.
    pub(crate) ranges: Vec<(u32, Vec<(K, u64)>)>,
    /// Keys added minus keys removed.
    pub(crate) delta: isize,
    /// Queries that changed the map.
    pub(crate) updates: usize,
    /// Heap bytes of the keys of the nodes linked.
    pub(crate) key_bytes: usize,
    /// Handles of the nodes this batch marked deleted.
    pub(crate) deleted: Vec<u64>,
    /// Nodes unlinked, to be freed once every worker is done.
    pub(crate) unlinked: Vec<Unlinked<K>>,
    /// Handles of deleted nodes an unlink left linked: the current index names them.
    pub(crate) kept: Vec<u64>,
}

impl<K: Key> Default for Output<K> {
    fn default() -> Self {
        Output {
            points: Vec::new(),
            ranges: Vec::new(),
            delta: 0,
            updates: 0,
            key_bytes: 0,
            deleted: Vec::new(),
            unlinked: Vec::new(),
            kept: Vec::new(),
        }
    }
}

/// A node's handle: its address, exposed (the index layer's routes and the deleted lists
/// hold nodes this way).
#[inline(always)]
pub(crate) fn handle_of<K: Key>(n: &Node<K>) -> u64 {
    (n as *const Node<K>).expose_provenance() as u64
}

/// Whether `k` lies within a range's upper bound `hi` and below the segment's end.
#[inline(always)]
fn in_range<K: Key>(k: K::Ref<'_>, hi: Bound<K::Ref<'_>>, end: Option<&Node<K>>) -> bool {
    let below_hi = match hi {
        Bound::Included(h) => K::order(k, h) != Greater,
        Bound::Excluded(h) => K::order(k, h) == Less,
        Bound::Unbounded => true,
    };
    below_hi && end.is_none_or(|e| K::order(k, e.key()) == Less)
}

/// Executes `work` on `storage`, appending to `out`.
pub(crate) fn run<'s, K: Key>(
    storage: &'s Storage<K>,
    work: &Work<'_, '_, 's, K>,
    heights: &mut Heights,
    alloc: &mut Alloc<K>,
    out: &mut Output<K>,
) {
    debug_assert_eq!(work.items.len(), work.starts.len());
    // The parts first: they see the list as the batch found it, with every own write
    // earlier in the batch overlaid.
    debug_assert!(work.parts.is_empty() || work.first.is_some());
    for part in work.parts {
        let overlay = Overlay {
            later: work.items,
            pos: part.pos,
        };
        let entries = scan(work.first, part.hi, work.end, part.limit, overlay);
        out.ranges.push((part.pos, entries));
    }
    let mut cursor: &'s Node<K> = storage.head();
    // Floors found ahead for own items `window_start..window_end`.
    let mut ahead: [Option<&'s Node<K>>; WINDOW] = [None; WINDOW];
    let mut window_start = 0;
    for (i, item) in work.items.iter().enumerate() {
        if i % WINDOW == 0 {
            window_start = i;
            let window_end = (i + WINDOW).min(work.items.len());
            find_floors(
                storage,
                &work.items[i..window_end],
                &work.starts[i..window_end],
                &mut ahead,
            );
        }
        let start = ahead[i - window_start];
        debug_assert!(
            work.end.is_none_or(|e| K::order(item.key, e.key()) == Less),
            "key past the segment"
        );
        if let Op::Unlink(handle) = item.op {
            // A floor found ahead may be a node an earlier unlink of this share took out;
            // the cursor (the last predecessor used) is still linked.
            let start = start.filter(|s| s.indexed.load(Relaxed) != UNLINKED);
            let from = later(storage, cursor, start);
            let pred = floor_of(from, item.key, true);
            cursor = pred;
            unlink(storage, pred, item.key, handle, work.generation, out);
            continue;
        }
        let from = later(storage, cursor, start);
        let f = floor_of(from, item.key, false);
        cursor = f;
        let found = !storage.is_head(f) && K::order(f.key(), item.key) == Equal;
        let answer = match item.op {
            Op::Get => found.then(|| f.live_value()).flatten(),
            Op::Insert(v) => {
                out.updates += 1;
                if found {
                    let old = f.live_value();
                    f.value.store(v, Relaxed);
                    if old.is_none() {
                        f.deleted.store(false, Relaxed);
                        out.delta += 1;
                    }
                    old
                } else {
                    cursor = storage.insert_after(alloc, f, item.key, v, heights.next());
                    out.key_bytes += K::heap_bytes(&cursor.key);
                    out.delta += 1;
                    None
                }
            }
            Op::Remove => {
                out.updates += 1;
                let old = found.then(|| f.live_value()).flatten();
                if old.is_some() {
                    f.deleted.store(true, Relaxed);
                    out.delta -= 1;
                    out.deleted.push(handle_of(f));
                }
                old
            }
            Op::Unlink(_) => unreachable!("unlinks run above"),
            Op::Range { hi, skip_lo, limit } => {
                // Later items (within the range and earlier in the batch) are overlaid.
                let overlay = Overlay {
                    later: &work.items[i + 1..],
                    pos: item.pos,
                };
                let first = if found && !skip_lo { Some(f) } else { f.next() };
                out.ranges
                    .push((item.pos, scan(first, hi, work.end, limit, overlay)));
                continue;
            }
        };
        out.points.push((item.pos, answer));
    }
}

/// Unlinks the node `handle` (of `key`) after `pred` if it is deleted and the index of
/// `generation` does not name it; a deleted node the index names is kept for a later try.
///
/// `pred` is the last node before `key` walked from the key's interception, which is the
/// node itself when the index names it (the walk cannot go back): then it stays. A node the
/// pass does not find (which its contract rules out) is kept too, never dropped.
fn unlink<K: Key>(
    storage: &Storage<K>,
    pred: &Node<K>,
    key: K::Ref<'_>,
    handle: u64,
    generation: u32,
    out: &mut Output<K>,
) {
    if !storage.is_head(pred) && K::order(pred.key(), key) == Equal {
        debug_assert_eq!(pred.indexed.load(Relaxed), generation);
        if pred.deleted.load(Relaxed) {
            out.kept.push(handle);
        }
        return;
    }
    let Some(node) = pred.next().filter(|n| K::order(n.key(), key) == Equal) else {
        debug_assert!(false, "the deleted node of {key:?} is gone");
        out.kept.push(handle);
        return;
    };
    debug_assert_eq!(handle_of(node), handle);
    if !node.deleted.load(Relaxed) {
        return; // inserted again since
    }
    if node.indexed.load(Relaxed) == generation {
        out.kept.push(handle);
        return;
    }
    out.unlinked.push(storage.unlink_after(pred, node));
}

/// A walk of [`find_floors`]: the node reached and the next one, prefetched, not yet read.
type Step<'s, K> = (Option<&'s Node<K>>, Option<&'s Node<K>>);

/// Own items whose floors are found together, ahead of their execution.
const WINDOW: usize = 32;

/// For each of `items` (with interceptions `starts`), a node at or before its floor (for
/// an unlink: at or before its node's predecessor), into `out`: the walks of the whole window
/// advance together, one hop a round, each prefetching its next node, so that the list's
/// cache misses overlap across the window instead of following one another (a walk from an
/// interception is a chain of dependent misses, the executor's main cost).
fn find_floors<'s, K: Key>(
    storage: &'s Storage<K>,
    items: &[Item<'_, K>],
    starts: &[Option<&'s Node<K>>],
    out: &mut [Option<&'s Node<K>>; WINDOW],
) {
    debug_assert!(items.len() <= WINDOW && items.len() == starts.len());
    let mut walk: [Step<'s, K>; WINDOW] = [(None, None); WINDOW];
    for (k, s) in starts.iter().enumerate() {
        let node = s.unwrap_or_else(|| storage.head());
        prefetch_read(node);
        walk[k] = (Some(node), None);
    }
    // The start nodes' links, then one hop a round; a walk that starts on its key's node
    // (an interception of the key itself) is done.
    for (k, w) in walk.iter_mut().enumerate().take(items.len()) {
        let exact = w.0.is_some_and(|n| {
            !items[k].strict()
                && n.height as usize <= MAX_HEIGHT
                && K::order(n.key(), items[k].key) == Equal
        });
        let next = if exact {
            None
        } else {
            w.0.and_then(Node::next)
        };
        if let Some(n) = next {
            prefetch_read(n);
        }
        w.1 = next;
        out[k] = w.0;
    }
    // Walks still moving, compacted each round.
    let mut live: [u8; WINDOW] = core::array::from_fn(|k| k as u8);
    let mut n_live = items.len();
    while n_live > 0 {
        let mut kept = 0;
        for x in 0..n_live {
            let k = live[x] as usize;
            let w = &mut walk[k];
            let Some(next) = w.1.filter(|n| items[k].passes(n.key())) else {
                continue;
            };
            let after = next.next();
            if let Some(a) = after {
                prefetch_read(a);
            }
            *w = (Some(next), after);
            out[k] = Some(next);
            live[kept] = k as u8;
            kept += 1;
        }
        n_live = kept;
    }
}

/// Of the cursor (the previous query's floor) and an interception, the one with the larger
/// key; both lie at or before the current query's floor.
#[inline(always)]
fn later<'s, K: Key>(
    storage: &'s Storage<K>,
    cursor: &'s Node<K>,
    start: Option<&'s Node<K>>,
) -> &'s Node<K> {
    match start {
        None => cursor,
        Some(s) if storage.is_head(cursor) || K::order(s.key(), cursor.key()) == Greater => s,
        Some(_) => cursor,
    }
}

/// The node of largest key at most `key` (below it, with `strict`: an unlink's predecessor),
/// walking from `from` (whose key is at most that, or the head).
#[inline(always)]
pub(crate) fn floor_of<'s, K: Key>(
    from: &'s Node<K>,
    key: K::Ref<'_>,
    strict: bool,
) -> &'s Node<K> {
    // The node itself (the head has no key: its height tells it apart): then its successor,
    // likely a cache miss, need not be read.
    if !strict && from.height as usize <= MAX_HEIGHT && K::order(from.key(), key) == Equal {
        return from;
    }
    let mut n = from;
    while let Some(next) = n.next() {
        if !passes::<K>(next.key(), key, strict) {
            break;
        }
        n = next;
    }
    n
}

/// Whether a walk toward the floor of `key` (`strict`: below it) moves on to a node of key
/// `k`.
#[inline(always)]
fn passes<K: Key>(k: K::Ref<'_>, key: K::Ref<'_>, strict: bool) -> bool {
    match K::order(k, key) {
        Less => true,
        Equal => !strict,
        Greater => false,
    }
}

/// The writes a range overlays on the list: of the queries after it in key order (`later`,
/// sorted by key, then position), those that precede it in the batch (`pos`), the last write
/// of each key. Read lazily, only as far as the scan gets.
struct Overlay<'a, 'b, K: Key> {
    later: &'a [Item<'b, K>],
    pos: u32,
}

impl<'b, K: Key> Overlay<'_, 'b, K> {
    /// The next overlaid key as `(key, new value or removed)` among the keys for which
    /// `within` holds (a prefix of the rest); passes the keys before it without such a
    /// write.
    fn next_within(
        &mut self,
        within: impl Fn(K::Ref<'b>) -> bool,
    ) -> Option<(K::Ref<'b>, Option<u64>)> {
        loop {
            let key = self.later.first().filter(|l| within(l.key))?.key;
            let n = self
                .later
                .iter()
                .take_while(|l| K::order(l.key, key) == Equal)
                .count();
            let (group, rest) = self.later.split_at(n);
            self.later = rest;
            let last = group
                .iter()
                .rev()
                .find(|l| l.op.writes() && l.pos < self.pos);
            if let Some(l) = last {
                let effect = match l.op {
                    Op::Insert(v) => Some(v),
                    _ => None,
                };
                return Some((key, effect));
            }
        }
    }
}

/// The live entries of the nodes from `first` (whose key is in the range) within `hi` and
/// below the segment's `end`, with the `overlay` applied, at most `limit` of them. The
/// overlay is read only up to the last key passed, so a short scan reads few of the queries
/// after it however many there are.
fn scan<K: Key>(
    first: Option<&Node<K>>,
    hi: Bound<K::Ref<'_>>,
    end: Option<&Node<K>>,
    limit: u32,
    mut overlay: Overlay<'_, '_, K>,
) -> Vec<(K, u64)> {
    let limit = if limit == UNLIMITED {
        usize::MAX
    } else {
        limit as usize
    };
    let mut out = Vec::new();
    let mut node = first;
    while out.len() < limit {
        let n = node.filter(|n| in_range(n.key(), hi, end));
        let write = match n {
            Some(n) => overlay.next_within(|k| K::order(k, n.key()) != Greater),
            None => overlay.next_within(|k| in_range(k, hi, end)),
        };
        match write {
            Some((k, effect)) => {
                if let Some(v) = effect {
                    out.push((K::owned(k), v));
                }
                // The overlay replaces the stored entry of the same key.
                if let Some(n) = n.filter(|n| K::order(n.key(), k) == Equal) {
                    node = n.next();
                }
            }
            None => {
                let Some(n) = n else { break };
                if let Some(v) = n.live_value() {
                    out.push((K::owned(n.key()), v));
                }
                node = n.next();
            }
        }
    }
    out
}
