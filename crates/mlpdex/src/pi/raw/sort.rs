//! Sorting a batch on all workers: the batch is bucketed by key range with splitters drawn
//! from a sample of it, then each worker sorts one bucket.
//!
//! The paper sorts the query set before cutting it into shares (Definition 3, §3.2.1) and
//! leaves the sort out of its description; done on the calling thread it was a sixth of a
//! two-worker batch's time. Here the conversion of queries into items and the bucketing run
//! on the workers over contiguous chunks of the batch (each writing its own row of
//! buckets), and worker `b` gathers and sorts bucket `b`. Buckets are ranges of keys (whole
//! keys: byte strings that share a prefix, as e-mail addresses of one host do, still spread
//! over the workers), so their concatenation is the sorted batch, and their boundaries are
//! the first cuts of the partition (which the interception adjustment then moves).
//!
//! Items keep the batch order among equal keys: chunks are gathered in order and each chunk
//! pushes its items in order, and the sort is by `(key, position)`.

use core::cmp::Ordering::{Equal, Greater, Less};
use core::ops::Bound;

use super::execute::{Item, Op, UNLIMITED};
use crate::pi::batch::{Answer, Query};
use crate::pi::key::sealed::Key;

/// Queries sampled a worker to choose the splitters.
const SAMPLE: usize = 64;

/// `threads - 1` keys that cut a sample of `queries` into equal parts, into `out`.
pub(crate) fn splitters<'b, K: Key>(
    queries: &'b [Query<K>],
    threads: usize,
    out: &mut Vec<K::Ref<'b>>,
) {
    out.clear();
    if threads <= 1 || queries.is_empty() {
        return;
    }
    let want = SAMPLE * threads;
    let step = queries.len().div_ceil(want).max(1);
    let mut sample: Vec<K::Ref<'b>> = queries
        .iter()
        .step_by(step)
        .filter_map(|q| op_of(q).map(|(lo, _)| lo))
        .collect();
    if sample.is_empty() {
        return;
    }
    sample.sort_unstable_by(|&a, &b| K::order(a, b));
    out.extend((1..threads).map(|t| sample[t * sample.len() / threads]));
}

/// The bucket of `key`: how many splitters are at most it.
#[inline(always)]
pub(crate) fn bucket<K: Key>(splitters: &[K::Ref<'_>], key: K::Ref<'_>) -> usize {
    splitters.partition_point(|&s| K::order(s, key) != Greater)
}

/// Converts `queries` (positions from `first`) into items, each pushed onto the bucket of its
/// key in `row` (one `Vec` a bucket, emptied first), and sets each answer of `answers` (the
/// same positions) to its default: no value, or no entries for a range (and for a range that
/// holds no key, which gets no item).
pub(crate) fn bucket_chunk<'b, K: Key>(
    queries: &'b [Query<K>],
    first: usize,
    splitters: &[K::Ref<'_>],
    row: &mut [Vec<Item<'b, K>>],
    answers: &mut [Answer<K>],
) {
    debug_assert!(row.len() > splitters.len());
    for b in row.iter_mut() {
        b.clear();
    }
    for (k, (q, a)) in queries.iter().zip(answers.iter_mut()).enumerate() {
        *a = match q {
            Query::Range(..) | Query::Scan(..) => Answer::Entries(Vec::new()),
            _ => Answer::Value(None),
        };
        let Some((lo, op)) = op_of(q) else { continue };
        row[bucket::<K>(splitters, lo)].push(Item {
            key: lo,
            pos: (first + k) as u32,
            op,
        });
    }
}

/// The key a query is sorted by and what it does there; `None` for a range or scan that
/// holds no key.
#[inline]
pub(crate) fn op_of<K: Key>(q: &Query<K>) -> Option<(K::Ref<'_>, Op<K::Ref<'_>>)> {
    Some(match q {
        Query::Get(k) => (k.key_ref(), Op::Get),
        Query::Insert(k, v) => (k.key_ref(), Op::Insert(*v)),
        Query::Remove(k) => (k.key_ref(), Op::Remove),
        // A count beyond `u32::MAX - 1` entries is no limit on any map that fits in memory.
        Query::Scan(_, 0) => return None,
        Query::Scan(k, count) => (
            k.key_ref(),
            Op::Range {
                hi: Bound::Unbounded,
                skip_lo: false,
                limit: u32::try_from(*count).unwrap_or(UNLIMITED),
            },
        ),
        Query::Range(lo, hi) => {
            let (lo, skip_lo) = match lo {
                Bound::Included(k) => (k.key_ref(), false),
                Bound::Excluded(k) => (k.key_ref(), true),
                Bound::Unbounded => (K::min_ref(), false),
            };
            let hi = match hi {
                Bound::Included(k) => Bound::Included(k.key_ref()),
                Bound::Excluded(k) => Bound::Excluded(k.key_ref()),
                Bound::Unbounded => Bound::Unbounded,
            };
            let empty = match hi {
                Bound::Included(h) => match K::order(lo, h) {
                    Less => false,
                    Equal => skip_lo,
                    Greater => true,
                },
                Bound::Excluded(h) => K::order(lo, h) != Less,
                Bound::Unbounded => false,
            };
            if empty {
                return None;
            }
            (
                lo,
                Op::Range {
                    hi,
                    skip_lo,
                    limit: UNLIMITED,
                },
            )
        }
    })
}

/// Gathers bucket `b` of every row into `out` (exactly their length), sorted by
/// `(key, position)`.
///
/// The rows hold their items in batch order, and row after row follows the batch, so an
/// item's index in the rows' concatenation orders equal keys by position. The sort is of
/// integers: each item's 8-byte prefix above that index, in `tags` (scratch), then one
/// gather of the items in that order; byte strings that share a prefix are then sorted by
/// their whole keys, run by run. (Sorting the 40-byte items by comparison took 422 of a
/// lookup's 1,297 instructions, 2M keys and one worker, callgrind; this sort takes 231, and
/// lookups on 16M keys run about 5% faster on one worker: the walks' DRAM misses dominate.)
pub(crate) fn gather_sorted<'b, K: Key>(
    rows: &[Vec<Vec<Item<'b, K>>>],
    b: usize,
    out: &mut [Item<'b, K>],
    tags: &mut Vec<u128>,
) {
    tags.clear();
    for part in rows.iter().map(|row| &row[b]) {
        let at = tags.len() as u128;
        tags.extend(
            part.iter()
                .enumerate()
                .map(|(i, it)| (K::prefix(it.key) as u128) << 32 | (at + i as u128)),
        );
    }
    debug_assert_eq!(tags.len(), out.len());
    debug_assert!(out.len() <= u32::MAX as usize);
    tags.sort_unstable();
    // Where each row's part starts in the concatenation.
    let mut starts = [0usize; 64];
    let many = rows.len() > starts.len();
    if !many {
        let mut at = 0;
        for (s, row) in starts.iter_mut().zip(rows) {
            *s = at;
            at += row[b].len();
        }
    }
    let item = |i: usize| -> Item<'b, K> {
        if many {
            let (mut i, mut r) = (i, 0);
            while i >= rows[r][b].len() {
                i -= rows[r][b].len();
                r += 1;
            }
            rows[r][b][i]
        } else {
            let r = starts[1..rows.len()].partition_point(|&s| s <= i);
            rows[r][b][i - starts[r]]
        }
    };
    for (o, &t) in out.iter_mut().zip(tags.iter()) {
        *o = item(t as u32 as usize);
    }
    if !K::EXACT {
        // Runs of one prefix, in position order: sort each by whole key (then position).
        let mut from = 0;
        while from < out.len() {
            let p = K::prefix(out[from].key);
            let to = from + out[from..].partition_point(|it| K::prefix(it.key) == p);
            if to - from > 1 {
                out[from..to].sort_unstable_by(Item::order);
            }
            from = to;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_concatenate_to_the_sorted_batch() {
        let n: u64 = if cfg!(miri) { 300 } else { 1000 };
        let queries: Vec<Query> = (0..n)
            .map(|i| match i % 6 {
                0 => Query::Get(i * 7919 % 1000),
                1 => Query::Insert(i * 31 % 100, i),
                2 => Query::Remove(u64::MAX - i % 3),
                3 => Query::range(i..i + 10),
                4 => Query::Scan(i * 13 % 1000, (i % 3) as usize),
                _ => Query::range(i + 10..i),
            })
            .collect();
        // 70 workers: more rows than the gather keeps offsets of on its stack.
        for threads in [1, 2, 3, 8, 70] {
            let mut sp = Vec::new();
            splitters(&queries, threads, &mut sp);
            assert!(sp.windows(2).all(|w| w[0] <= w[1]));
            let chunk = queries.len().div_ceil(threads);
            let mut rows = vec![vec![Vec::new(); threads]; threads];
            let mut answers = vec![Answer::Value(Some(1)); queries.len()];
            for (t, (q, a)) in queries
                .chunks(chunk)
                .zip(answers.chunks_mut(chunk))
                .enumerate()
            {
                bucket_chunk(q, t * chunk, &sp, &mut rows[t], a);
            }
            let mut all = Vec::new();
            for b in 0..threads {
                let len: usize = rows.iter().map(|r| r[b].len()).sum();
                let mut out = vec![
                    Item {
                        key: 0,
                        pos: 0,
                        op: Op::Get
                    };
                    len
                ];
                gather_sorted(&rows, b, &mut out, &mut Vec::new());
                all.extend(out);
            }
            let mut want: Vec<Item<'_, u64>> = Vec::new();
            for (pos, q) in queries.iter().enumerate() {
                if let Some((lo, op)) = op_of(q) {
                    want.push(Item {
                        key: lo,
                        pos: pos as u32,
                        op,
                    });
                }
            }
            want.sort_by(Item::order);
            // Items compare by their fields' debug forms (a borrowed key has no `PartialEq`).
            assert_eq!(format!("{all:?}"), format!("{want:?}"), "{threads} workers");
            for (q, a) in queries.iter().zip(&answers) {
                let empty_range = matches!(q, Query::Range(..) | Query::Scan(..));
                assert_eq!(matches!(a, Answer::Entries(e) if e.is_empty()), empty_range);
                assert_eq!(*a == Answer::Value(None), !empty_range);
            }
        }
    }
}
