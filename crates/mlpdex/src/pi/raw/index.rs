//! The index layer (pi-parallel-skiplist.txt §3.1, §4.1): levels of fixed-size entries above
//! the storage layer, read-only once built, searched for a query's *interception*.
//!
//! Level `h` (1-based, as in the paper) holds the keys of the data nodes of height above
//! `h`, ascending, packed [`M`] to an [`Entry`], the entries of one level in one contiguous
//! array. Each key of an entry carries its route down (the paper's routing table, §3.2.2):
//! on level `h > 1` the number of the entry of level `h - 1` that holds the same key; on level
//! 1 the data node's handle. The route right is implicit: the next entry of the array. An
//! entry's keys and routes fill one 64-byte line, so each entry visited costs one cache miss.
//!
//! The search (Algorithm 2) starts at the top level's first entry, moves right while the next
//! entry's first key is at most the query, then descends through the route of the last key at
//! most the query, or, when the query is below every key it was shown on this level (which
//! happens only on the leftmost path), to the first entry of the level below, as from a head
//! node of full height. On level 1 the route found is the interception (Definition 4): the
//! node of largest key at most the query among the nodes of height above 1, or none when
//! the query is below all of them (the storage layer's head then). [`IndexLayer::find_group`]
//! runs a group of queries level by level and prefetches each one's next entry before
//! turning to the next query (§4.3.4).
//!
//! Invariants (checked by `debug_assert!` in [`IndexLayer::build`] and by the tests):
//! 1. Keys ascend strictly along each level; each level's keys are a subset of the level
//!    below's, and level 1's are the nodes' keys in node order.
//! 2. Every entry but a level's last is full; the last holds `1..=M` keys, the slots after
//!    them repeat its last key and route (so a rank that counts them takes the same route).
//! 3. A route down on level `h > 1` names the entry of level `h - 1` holding the same key.

use super::simd::{M, Rank, flip};
use crate::substrate::prefetch::prefetch_read;

/// `M` keys (stored [`flip`]ped) and the route down from each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
pub(crate) struct Entry {
    keys: [u64; M],
    down: [u64; M],
}

const _: () = assert!(size_of::<Entry>() == 64 && align_of::<Entry>() == 64);

/// One level: its entries and how many keys they hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Level {
    entries: Vec<Entry>,
    keys: usize,
}

impl Level {
    fn push(&mut self, key: u64, down: u64) {
        let slot = self.keys % M;
        if slot == 0 {
            self.entries.push(Entry {
                keys: [flip(key); M],
                down: [down; M],
            });
        } else if let Some(e) = self.entries.last_mut() {
            // The slots after this one keep repeating the last key (invariant 2).
            e.keys[slot..].fill(flip(key));
            e.down[slot..].fill(down);
        }
        self.keys += 1;
    }

    /// Number of keys of entry `e` (`e < entries.len()`) at most the (flipped) query. Exact
    /// without knowing how many slots are filled: the slots after a last entry's keys repeat
    /// its last key and route (invariant 2), so counting them changes no route taken.
    #[inline(always)]
    fn rank<R: Rank>(&self, r: R, e: usize, query: u64) -> usize {
        debug_assert!(e < self.entries.len());
        // SAFETY: callers pass `e` below `entries.len()`: 0 on a non-empty level (levels are
        // made by pushing a key), a route down (invariant 3: an entry of this level), or
        // `e + 1` checked against the length.
        r.rank(&unsafe { self.entries.get_unchecked(e) }.keys, query)
    }

    /// From entry `e`, where the walk entered this level, the entry and rank of the last key
    /// at most the query: moves right while the next entry starts at most the query.
    #[inline(always)]
    fn walk<R: Rank>(&self, r: R, mut e: usize, query: u64) -> (usize, usize) {
        let mut rank = self.rank(r, e, query);
        while rank == M && e + 1 < self.entries.len() {
            let next = self.rank(r, e + 1, query);
            if next == 0 {
                break;
            }
            (e, rank) = (e + 1, next);
        }
        (e, rank)
    }

    /// The route down of slot `rank - 1` of entry `e` (`rank ≥ 1`), as returned by `walk`.
    #[inline(always)]
    fn down(&self, e: usize, rank: usize) -> u64 {
        debug_assert!(e < self.entries.len() && (1..=M).contains(&rank));
        // SAFETY: `walk` returns an entry below `entries.len()` and a rank in `0..=M`; the
        // caller checked `rank ≥ 1`.
        unsafe { *self.entries.get_unchecked(e).down.get_unchecked(rank - 1) }
    }
}

/// Most queries [`IndexLayer::find_group`] walks together.
pub(crate) const MAX_GROUP: usize = 64;

/// The levels above the storage layer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct IndexLayer {
    /// `levels[0]` is the paper's level 1.
    levels: Vec<Level>,
}

/// Where a walk goes on the next level down.
#[cfg(test)]
#[derive(Clone, Copy)]
enum Next {
    /// The first entry, as from a head node: the query is below every key seen.
    First,
    /// This entry (of the next level), or on level 1 this node handle.
    At(u64),
}

impl IndexLayer {
    /// Builds the levels from the data nodes of height at least 2, in ascending key order:
    /// `(key, height, handle)`. One scan fills every level at once.
    pub(crate) fn build(nodes: impl IntoIterator<Item = (u64, usize, u64)>) -> IndexLayer {
        let mut levels: Vec<Level> = Vec::new();
        let mut last: Option<u64> = None;
        for (key, height, handle) in nodes {
            debug_assert!(height >= 2, "level 1 holds nodes of height above 1");
            debug_assert!(last.is_none_or(|l| l < key), "keys ascend strictly");
            last = Some(key);
            if levels.len() < height - 1 {
                levels.resize_with(height - 1, Level::default);
            }
            debug_assert!(handle != u64::MAX);
            let mut down = handle;
            for lv in &mut levels[..height - 1] {
                // Entry numbers travel as `u32` in group walks: 2^32 entries would be 256 GiB.
                assert!(
                    lv.entries.len() < u32::MAX as usize,
                    "index level too large"
                );
                // The entry this key lands in: the route down from the level above.
                let entry = lv.keys / M;
                lv.push(key, down);
                down = entry as u64;
            }
        }
        IndexLayer { levels }
    }

    /// Number of levels.
    #[cfg(test)]
    pub(crate) fn height(&self) -> usize {
        self.levels.len()
    }

    /// Bytes of the entries.
    pub(crate) fn memory_usage(&self) -> usize {
        self.levels
            .iter()
            .map(|lv| lv.entries.capacity() * size_of::<Entry>())
            .sum()
    }

    /// The interception of `query`: the handle of the node of largest key at most `query`
    /// among the nodes of height above 1, or `None` when there is none. (The executor walks
    /// groups with [`find_group`](Self::find_group); this one-query walk is the tests'
    /// reference.)
    #[cfg(test)]
    pub(crate) fn find<R: Rank>(&self, r: R, query: u64) -> Option<u64> {
        let q = flip(query);
        let mut next = Next::First;
        for lv in self.levels.iter().rev() {
            let start = match next {
                Next::First => 0,
                Next::At(e) => e as usize,
            };
            let (e, rank) = lv.walk(r, start, q);
            next = match rank {
                0 => Next::First,
                k => Next::At(lv.entries[e].down[k - 1]),
            };
        }
        match next {
            Next::First => None,
            Next::At(handle) => Some(handle),
        }
    }

    /// [`find`](Self::find) for each of `queries` into `out` (same length, at most
    /// [`MAX_GROUP`]), level by level for the whole group: the next entries of each query are
    /// prefetched before the group's other queries are walked on this level, so the group's
    /// misses overlap.
    #[inline(always)]
    pub(crate) fn find_group<R: Rank>(
        &self,
        r: R,
        queries: &[u64],
        out: &mut [Option<u64>],
        prefetch: bool,
    ) {
        assert!(queries.len() == out.len() && queries.len() <= MAX_GROUP);
        let Some((bottom, upper)) = self.levels.split_first() else {
            out.fill(None);
            return;
        };
        // The entry each query enters the current level at: the first entry of the top level,
        // then the route taken from the level above (rank 0 there means the query is below
        // every key seen, and the walk starts at the first entry again).
        let mut at = [0u32; MAX_GROUP];
        let mut flipped = [0u64; MAX_GROUP];
        for (f, &q) in flipped.iter_mut().zip(queries) {
            *f = flip(q);
        }
        let n = queries.len();
        for h in (0..upper.len()).rev() {
            let lv = &upper[h];
            let below = if h == 0 { bottom } else { &upper[h - 1] };
            for k in 0..n {
                let (e, rank) = lv.walk(r, at[k] as usize, flipped[k]);
                let next = if rank == 0 {
                    0
                } else {
                    lv.down(e, rank) as usize
                };
                if prefetch {
                    // The walk below moves right about half the time (the keys after the
                    // route's key, up to this level's next key, spill into the next entry).
                    let p = below.entries.as_ptr().wrapping_add(next);
                    prefetch_read(p);
                    prefetch_read(p.wrapping_add(1));
                }
                at[k] = next as u32;
            }
        }
        for k in 0..n {
            let (e, rank) = bottom.walk(r, at[k] as usize, flipped[k]);
            out[k] = (rank > 0).then(|| bottom.down(e, rank));
        }
    }

    /// Checks invariants 1–3 (for tests; `nodes` as given to [`build`](Self::build)).
    #[cfg(test)]
    pub(crate) fn audit(&self, nodes: &[(u64, usize, u64)]) {
        for (h, lv) in self.levels.iter().enumerate() {
            let keys: Vec<u64> = (0..lv.keys)
                .map(|i| flip(lv.entries[i / M].keys[i % M]))
                .collect();
            let want: Vec<u64> = nodes.iter().filter(|n| n.1 > h + 1).map(|n| n.0).collect();
            assert_eq!(keys, want, "level {}", h + 1);
            assert_eq!(lv.entries.len(), lv.keys.div_ceil(M));
            for (i, &k) in keys.iter().enumerate() {
                let down = lv.entries[i / M].down[i % M];
                if h == 0 {
                    let node = nodes.iter().find(|n| n.0 == k).expect("a node");
                    assert_eq!(down, node.2);
                } else {
                    let b = &self.levels[h - 1].entries[down as usize];
                    assert!(
                        b.keys.contains(&flip(k)),
                        "route down of {k} on level {}",
                        h + 1
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::simd::{Kind, Scalar};
    use super::*;
    use crate::testing::TestRng;

    /// Nodes of height ≥ 2 out of `n` keys drawn by `key`, heights geometric with p = 1/4.
    fn nodes(
        rng: &mut TestRng,
        n: usize,
        key: impl Fn(&mut TestRng) -> u64,
    ) -> Vec<(u64, usize, u64)> {
        let mut keys: Vec<u64> = (0..n).map(|_| key(rng)).collect();
        keys.sort_unstable();
        keys.dedup();
        keys.into_iter()
            .enumerate()
            .filter_map(|(i, k)| {
                let mut h = 1;
                while h < 20 && rng.below(4) == 0 {
                    h += 1;
                }
                (h >= 2).then_some((k, h, i as u64 * 8))
            })
            .collect()
    }

    fn naive(nodes: &[(u64, usize, u64)], q: u64) -> Option<u64> {
        nodes.iter().rev().find(|n| n.0 <= q).map(|n| n.2)
    }

    /// `find_group` over `queries` in groups of `group`.
    fn grouped<R: Rank>(
        ix: &IndexLayer,
        r: R,
        queries: &[u64],
        out: &mut [Option<u64>],
        group: usize,
        prefetch: bool,
    ) {
        for (q, o) in queries.chunks(group).zip(out.chunks_mut(group)) {
            ix.find_group(r, q, o, prefetch);
        }
    }

    /// Every backend, single and grouped (groups of 1, 7 and the most; with and without
    /// prefetch), against the naive interception.
    fn check(ix: &IndexLayer, nodes: &[(u64, usize, u64)], queries: &[u64]) {
        let want: Vec<Option<u64>> = queries.iter().map(|&q| naive(nodes, q)).collect();
        for kind in Kind::all_available() {
            let mut got = vec![None; queries.len()];
            let mut got_p = vec![None; queries.len()];
            match kind {
                Kind::Scalar => {
                    for (g, &q) in got.iter_mut().zip(queries) {
                        *g = ix.find(Scalar, q);
                    }
                    grouped(ix, Scalar, queries, &mut got_p, 7, true);
                }
                #[cfg(all(target_arch = "x86_64", not(miri)))]
                Kind::Avx2 => {
                    let r = super::super::simd::Avx2::new().expect("available");
                    for (g, &q) in got.iter_mut().zip(queries) {
                        *g = ix.find(r, q);
                    }
                    grouped(ix, r, queries, &mut got_p, MAX_GROUP, false);
                }
                #[cfg(all(target_arch = "x86_64", not(miri)))]
                Kind::Sse42 => {
                    let r = super::super::simd::Sse42::new().expect("available");
                    for (g, &q) in got.iter_mut().zip(queries) {
                        *g = ix.find(r, q);
                    }
                    grouped(ix, r, queries, &mut got_p, 1, true);
                }
                #[allow(unreachable_patterns)]
                _ => unreachable!("not available under this build"),
            }
            assert_eq!(got, want, "{kind:?}");
            assert_eq!(got_p, want, "{kind:?} grouped");
        }
    }

    #[test]
    fn empty_and_tiny_layers() {
        let ix = IndexLayer::build([]);
        assert_eq!(ix.height(), 0);
        check(&ix, &[], &[0, 5, u64::MAX]);
        for n in [vec![(7, 2, 1)], vec![(0, 3, 1)], vec![(u64::MAX, 5, 9)]] {
            let ix = IndexLayer::build(n.iter().copied());
            ix.audit(&n);
            check(&ix, &n, &[0, 1, 6, 7, 8, u64::MAX - 1, u64::MAX]);
        }
    }

    #[test]
    fn random_layers_find_every_interception() {
        let mut rng = TestRng::new(20);
        let sizes: &[usize] = if cfg!(miri) {
            &[30, 100]
        } else {
            &[5, 100, 3000, 40_000]
        };
        for &n in sizes {
            for dense in [false, true] {
                let ns = if dense {
                    // Keys next to each other and at both ends of the range.
                    nodes(&mut rng, n, |r| match r.below(3) {
                        0 => r.below(64),
                        1 => u64::MAX - r.below(64),
                        _ => (1 << 63) + r.below(64) - 32,
                    })
                } else {
                    nodes(&mut rng, n, |r| r.next_u64())
                };
                let ix = IndexLayer::build(ns.iter().copied());
                ix.audit(&ns);
                let mut qs: Vec<u64> = ns
                    .iter()
                    .flat_map(|n| [n.0.wrapping_sub(1), n.0, n.0.wrapping_add(1)])
                    .collect();
                qs.extend((0..200).map(|_| rng.next_u64()));
                qs.extend([0, u64::MAX, 1 << 63, (1 << 63) - 1]);
                // Grouped walks run on groups of any order; sorted is how batches arrive.
                let (a, b) = qs.split_at(qs.len() / 2);
                let mut sorted = a.to_vec();
                sorted.sort_unstable();
                check(&ix, &ns, &sorted);
                check(&ix, &ns, b);
            }
        }
    }
}
