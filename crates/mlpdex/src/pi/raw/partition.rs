//! Splitting a sorted batch across the workers (pi-parallel-skiplist.txt §3.2.1, §3.2.2
//! Algorithm 3, §3.2.5).
//!
//! The sorted queries are cut into shares (the sort's buckets, `sort.rs`); then each cut
//! moves left past the queries whose interception is the next share's first interception
//! (the *interception adjustment*), so that no two workers start from one interception. After it, worker `t`
//! owns the nodes from its first interception up to the next non-empty worker's first
//! interception: every query it holds has a key below that node's key (its interception is a
//! smaller index node, and an interception is the largest index node at most the key), so the
//! workers' walks and links never meet, and no latch is needed.
//!
//! The paper's workers exchange the boundary keys by messages; here the cuts are computed in
//! one pass over the `T` boundaries after all interceptions are known, with the same result.
//!
//! A range is executed by the worker holding its start key, up to that worker's segment end;
//! every later segment it reaches gets a *part*: the same range from that segment's first
//! key, run by that segment's worker (§3.2.5). The parts' entries, in worker order, follow
//! the owner's: key order.

use core::cmp::Ordering::{Greater, Less};
use core::ops::Bound;
use core::ptr;

use super::execute::{Item, Op, Part};
use super::node::Node;
use crate::pi::key::sealed::Key;

/// The workers' shares of one batch.
#[derive(Debug)]
pub(crate) struct Plan<'b, 's, K: Key> {
    /// Worker `t` holds `items[bounds[t]..bounds[t + 1]]`.
    pub(crate) bounds: Vec<usize>,
    /// Per worker: the first interception (`None`: the head, or no share).
    pub(crate) first: Vec<Option<&'s Node<K>>>,
    /// Per worker: the node whose key its segment ends before (`None`: no bound).
    pub(crate) end: Vec<Option<&'s Node<K>>>,
    /// Per worker: range parts from earlier workers, sorted by position.
    pub(crate) parts: Vec<Vec<Part<'b, K>>>,
}

fn same<K: Key>(a: Option<&Node<K>>, b: Option<&Node<K>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => ptr::eq(a, b),
        _ => false,
    }
}

/// Shares of `items` (sorted by order) with interceptions `starts` for `bounds.len() - 1`
/// workers, from first cuts `bounds` (ascending, from 0 to `items.len()`).
pub(crate) fn plan<'b, 's, K: Key>(
    items: &[Item<'b, K>],
    starts: &[Option<&'s Node<K>>],
    mut bounds: Vec<usize>,
) -> Plan<'b, 's, K> {
    let threads = bounds.len() - 1;
    assert!(threads >= 1);
    debug_assert_eq!(items.len(), starts.len());
    debug_assert!(items.windows(2).all(|w| w[0].order(&w[1]) == Less));
    let n = items.len();
    debug_assert!(bounds[0] == 0 && bounds[threads] == n);
    debug_assert!(bounds.windows(2).all(|w| w[0] <= w[1]));
    // The interception adjustment (Algorithm 3), cut by cut from the left: a cut that meets
    // the previous one leaves its worker empty, and the previous cut already separates
    // different interceptions.
    for t in 1..threads {
        while bounds[t] > bounds[t - 1]
            && bounds[t] < n
            && same(starts[bounds[t] - 1], starts[bounds[t]])
        {
            bounds[t] -= 1;
        }
    }
    let first: Vec<Option<&'s Node<K>>> = (0..threads)
        .map(|t| {
            (bounds[t] < bounds[t + 1])
                .then(|| starts[bounds[t]])
                .flatten()
        })
        .collect();
    // A segment ends at the next non-empty worker's first interception.
    let mut end = vec![None; threads];
    let mut next_start: Option<&'s Node<K>> = None;
    for t in (0..threads).rev() {
        end[t] = next_start;
        if bounds[t] < bounds[t + 1] {
            // Non-empty and after another non-empty worker: its first interception is a node
            // (only the first non-empty worker can start from the head).
            next_start = first[t];
        }
    }
    let mut parts = vec![Vec::new(); threads];
    for t in 0..threads {
        for item in &items[bounds[t]..bounds[t + 1]] {
            let Op::Range { hi, limit, .. } = item.op else {
                continue;
            };
            if end[t].is_none_or(|e| !admits::<K>(hi, e)) {
                continue;
            }
            for u in t + 1..threads {
                let Some(f) = first[u].filter(|_| bounds[u] < bounds[u + 1]) else {
                    continue;
                };
                if !admits::<K>(hi, f) {
                    break;
                }
                parts[u].push(Part {
                    pos: item.pos,
                    hi,
                    limit,
                });
            }
        }
    }
    for p in &mut parts {
        p.sort_unstable_by_key(|i| i.pos);
    }
    Plan {
        bounds,
        first,
        end,
        parts,
    }
}

/// Whether a range of upper bound `hi` reaches the key of node `n`.
fn admits<K: Key>(hi: Bound<K::Ref<'_>>, n: &Node<K>) -> bool {
    match hi {
        Bound::Included(h) => K::order(n.key(), h) != Greater,
        Bound::Excluded(h) => K::order(n.key(), h) == Less,
        Bound::Unbounded => true,
    }
}
