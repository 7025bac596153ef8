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
//! stopped.
//!
//! Segment rule (the partition's guarantee, `partition.rs`): every key this worker is given
//! lies below `end`, the key of the next worker's first interception, and every range is cut
//! at `end`; so this worker's walks never pass that node, and it links new nodes only after
//! nodes of its own segment.

use core::sync::atomic::Ordering::Relaxed;

use super::node::{Heights, MAX_HEIGHT, Node, Storage, UNLINKED, Unlinked};
use crate::substrate::prefetch::prefetch_read;

/// What a query does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Get,
    Insert(u64),
    Remove,
    /// Keys from the item's key to `hi`, both included, at most `limit` entries
    /// ([`UNLIMITED`]: all).
    Range {
        hi: u64,
        limit: u32,
    },
    /// Internal, after a rebuild: unlink the key's node if it is deleted and the current
    /// index does not name it.
    Unlink,
}

impl Op {
    /// Whether the query changes the map.
    fn writes(self) -> bool {
        matches!(self, Op::Insert(_) | Op::Remove)
    }
}

/// The `limit` of a range without one.
pub(crate) const UNLIMITED: u32 = u32::MAX;

/// A query as the workers see it: key, position in the batch, operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Item {
    pub(crate) key: u64,
    pub(crate) pos: u32,
    pub(crate) op: Op,
}

impl Item {
    /// The execution order: by key, then by position in the batch.
    #[inline(always)]
    pub(crate) fn order(&self) -> (u64, u32) {
        (self.key, self.pos)
    }

    /// The key whose floor the query needs: its own, or for an unlink the key before it
    /// (its node's predecessor; `None`: the head).
    #[inline(always)]
    fn target(&self) -> Option<u64> {
        match self.op {
            Op::Unlink => self.key.checked_sub(1),
            _ => Some(self.key),
        }
    }
}

/// One worker's share of a batch.
pub(crate) struct Work<'a, 's> {
    pub(crate) items: &'a [Item],
    /// The interception of each item (`None`: the head).
    pub(crate) starts: &'a [Option<&'s Node>],
    /// Parts of ranges that started on earlier workers, as items (op `Range`) at this
    /// segment's first key, sorted by order; they start at `first`.
    pub(crate) parts: &'a [Item],
    pub(crate) first: Option<&'s Node>,
    /// Keys of this segment lie below `end` (`None`: no bound).
    pub(crate) end: Option<u64>,
    /// The generation of the current index layer (see [`Node::indexed`]).
    pub(crate) generation: u32,
}

/// What a worker hands back.
#[derive(Debug, Default)]
pub(crate) struct Output {
    /// `(position, answer)` of each point query.
    pub(crate) points: Vec<(u32, Option<u64>)>,
    /// `(position, entries)` of each range or range part, in key order.
    pub(crate) ranges: Vec<(u32, Vec<(u64, u64)>)>,
    /// Keys added minus keys removed.
    pub(crate) delta: isize,
    /// Queries that changed the map.
    pub(crate) updates: usize,
    /// Nodes linked.
    pub(crate) linked: usize,
    /// Keys whose nodes this batch marked deleted.
    pub(crate) deleted: Vec<u64>,
    /// Nodes unlinked, to be freed once every worker is done.
    pub(crate) unlinked: Vec<Unlinked>,
    /// Keys of deleted nodes an unlink left linked: the current index names them.
    pub(crate) kept: Vec<u64>,
}

/// Executes `work` on `storage`, appending to `out`.
pub(crate) fn run<'s>(
    storage: &'s Storage,
    work: &Work<'_, 's>,
    heights: &mut Heights,
    out: &mut Output,
) {
    debug_assert_eq!(work.items.len(), work.starts.len());
    let mut cursor: &'s Node = storage.head();
    let (mut i, mut j) = (0, 0);
    // Floors found ahead for own items `i..window`, at `ahead[k - i_window]`.
    let mut ahead: [Option<&'s Node>; WINDOW] = [None; WINDOW];
    let (mut window_start, mut window_end) = (0, 0);
    loop {
        if i == window_end && i < work.items.len() {
            window_start = i;
            window_end = (i + WINDOW).min(work.items.len());
            find_floors(
                storage,
                &work.items[window_start..window_end],
                &work.starts[window_start..window_end],
                &mut ahead,
            );
        }
        // The next query in order: an own item or a range part.
        let take_part = match (work.items.get(i), work.parts.get(j)) {
            (None, None) => break,
            (Some(_), None) => false,
            (None, Some(_)) => true,
            (Some(a), Some(b)) => b.order() < a.order(),
        };
        let (item, start) = if take_part {
            j += 1;
            (&work.parts[j - 1], work.first)
        } else {
            i += 1;
            (&work.items[i - 1], ahead[i - 1 - window_start])
        };
        debug_assert!(
            work.end.is_none_or(|e| item.key < e),
            "key past the segment"
        );
        if item.op == Op::Unlink {
            // A floor found ahead may be a node an earlier unlink of this share took out;
            // the cursor (the last predecessor used) is still linked.
            let start = start.filter(|s| s.indexed.load(Relaxed) != UNLINKED);
            let from = later(storage, cursor, start);
            let pred = match item.target() {
                Some(t) => floor(from, t),
                None => storage.head(),
            };
            cursor = pred;
            unlink(storage, pred, item.key, work.generation, out);
            continue;
        }
        let from = later(storage, cursor, start);
        let f = floor(from, item.key);
        cursor = f;
        let found = !storage.is_head(f) && f.key == item.key;
        let answer = match item.op {
            Op::Get => found.then(|| f.live_value()).flatten(),
            Op::Insert(v) => {
                out.updates += 1;
                if found {
                    let old = f.live_value();
                    f.value.store(v, core::sync::atomic::Ordering::Relaxed);
                    if old.is_none() {
                        f.deleted
                            .store(false, core::sync::atomic::Ordering::Relaxed);
                        out.delta += 1;
                    }
                    old
                } else {
                    cursor = storage.insert_after(f, item.key, v, heights.next());
                    out.delta += 1;
                    out.linked += 1;
                    None
                }
            }
            Op::Remove => {
                out.updates += 1;
                let old = found.then(|| f.live_value()).flatten();
                if old.is_some() {
                    f.deleted.store(true, core::sync::atomic::Ordering::Relaxed);
                    out.delta -= 1;
                    out.deleted.push(item.key);
                }
                old
            }
            Op::Unlink => unreachable!("unlinks run above"),
            Op::Range { hi, limit } => {
                let hi = work.end.map_or(hi, |e| hi.min(e - 1));
                // Later items (own items only: parts do not write) within the range and
                // earlier in the batch.
                let overlay = Overlay {
                    later: &work.items[i..],
                    pos: item.pos,
                };
                let first = if found { Some(f) } else { f.next() };
                out.ranges
                    .push((item.pos, scan(first, item.key, hi, limit, overlay)));
                continue;
            }
        };
        out.points.push((item.pos, answer));
    }
}

/// Unlinks the node of `key` after `pred` if it is deleted and the index of `generation`
/// does not name it; a deleted node the index names is kept for a later try.
///
/// `pred` is the floor of `key - 1` walked from the key's interception, which is the node
/// itself when the index names it (the walk cannot go back): then it stays. A key the pass
/// does not find (which its contract rules out) is kept too, never dropped.
fn unlink(storage: &Storage, pred: &Node, key: u64, generation: u32, out: &mut Output) {
    if !storage.is_head(pred) && pred.key == key {
        debug_assert_eq!(pred.indexed.load(Relaxed), generation);
        if pred.deleted.load(Relaxed) {
            out.kept.push(key);
        }
        return;
    }
    let Some(node) = pred.next().filter(|n| n.key == key) else {
        debug_assert!(false, "the deleted node of {key} is gone");
        out.kept.push(key);
        return;
    };
    if !node.deleted.load(Relaxed) {
        return; // inserted again since
    }
    if node.indexed.load(Relaxed) == generation {
        out.kept.push(key);
        return;
    }
    out.unlinked.push(storage.unlink_after(pred, node));
}

/// Own items whose floors are found together, ahead of their execution.
const WINDOW: usize = 32;

/// For each of `items` (with interceptions `starts`), a node at most its key at or before
/// its floor, into `out`: the walks of the whole window advance together, one hop a round,
/// each prefetching its next node, so that the list's cache misses overlap across the window
/// instead of following one another (a walk from an interception is a chain of dependent
/// misses, the executor's main cost).
fn find_floors<'s>(
    storage: &'s Storage,
    items: &[Item],
    starts: &[Option<&'s Node>],
    out: &mut [Option<&'s Node>; WINDOW],
) {
    debug_assert!(items.len() <= WINDOW && items.len() == starts.len());
    // Per walk: the node reached and the next one, prefetched, not yet read.
    let mut walk: [(Option<&'s Node>, Option<&'s Node>); WINDOW] = [(None, None); WINDOW];
    for (k, s) in starts.iter().enumerate() {
        let node = s.unwrap_or_else(|| storage.head());
        prefetch_read(node);
        walk[k] = (Some(node), None);
    }
    // The start nodes' links, then one hop a round; a walk that starts on its key's node
    // (an interception of the key itself) is done.
    for (k, w) in walk.iter_mut().enumerate().take(items.len()) {
        let exact = w
            .0
            .is_some_and(|n| Some(n.key) == items[k].target() && n.height as usize <= MAX_HEIGHT);
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
            let Some(next) =
                w.1.filter(|n| items[k].target().is_some_and(|t| n.key <= t))
            else {
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
fn later<'s>(storage: &'s Storage, cursor: &'s Node, start: Option<&'s Node>) -> &'s Node {
    match start {
        None => cursor,
        Some(s) if storage.is_head(cursor) || s.key > cursor.key => s,
        Some(_) => cursor,
    }
}

/// The node of largest key at most `key`, walking from `from` (whose key is at most `key`,
/// or the head).
#[inline(always)]
pub(crate) fn floor(from: &Node, key: u64) -> &Node {
    // The node itself (the head's key is 0 too, but its next one is what a walk needs):
    // then its successor, likely a cache miss, need not be read.
    if from.key == key && from.height as usize <= MAX_HEIGHT {
        return from;
    }
    let mut n = from;
    while let Some(next) = n.next() {
        if next.key > key {
            break;
        }
        n = next;
    }
    n
}

/// The writes a range overlays on the list: of the queries after it in key order (`later`,
/// sorted by key, then position), those that precede it in the batch (`pos`), the last write
/// of each key. Read lazily, only as far as the scan gets.
struct Overlay<'a> {
    later: &'a [Item],
    pos: u32,
}

impl Overlay<'_> {
    /// The next overlaid key at most `upto` as `(key, new value or removed)`; passes the keys
    /// up to it without such a write.
    fn next_upto(&mut self, upto: u64) -> Option<(u64, Option<u64>)> {
        loop {
            let key = self.later.first().filter(|l| l.key <= upto)?.key;
            let n = self.later.iter().take_while(|l| l.key == key).count();
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

/// The live entries of the nodes from `first` with keys in `lo..=hi`, with the `overlay`
/// applied, at most `limit` of them. The overlay is read only up to the last key passed, so
/// a short scan reads few of the queries after it however many there are.
fn scan(
    first: Option<&Node>,
    lo: u64,
    hi: u64,
    limit: u32,
    mut overlay: Overlay<'_>,
) -> Vec<(u64, u64)> {
    let limit = if limit == UNLIMITED {
        usize::MAX
    } else {
        limit as usize
    };
    let mut out = Vec::new();
    let mut node = first.filter(|n| n.key >= lo);
    while out.len() < limit {
        let n = node.filter(|n| n.key <= hi);
        match overlay.next_upto(n.map_or(hi, |n| n.key)) {
            Some((k, effect)) => {
                if let Some(v) = effect {
                    out.push((k, v));
                }
                // The overlay replaces the stored entry of the same key.
                if let Some(n) = n.filter(|n| n.key == k) {
                    node = n.next();
                }
            }
            None => {
                let Some(n) = n else { break };
                if let Some(v) = n.live_value() {
                    out.push((n.key, v));
                }
                node = n.next();
            }
        }
    }
    out
}
