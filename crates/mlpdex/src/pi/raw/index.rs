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
//! 1. Keys ascend along each level (strictly for `u64` keys; byte strings' prefixes may
//!    repeat, their whole keys ascend strictly); each level's keys are a subset of the level
//!    below's, and level 1's are the nodes' keys in node order.
//! 2. Every entry but a level's last is full; the last holds `1..=M` keys, the slots after
//!    them repeat its last key and route (so a rank that counts them takes the same route).
//! 3. A route down on level `h > 1` names the entry of level `h - 1` holding the same key.

use core::cmp::Ordering::Greater;
use core::marker::PhantomData;

use super::node::Node;
use super::simd::{M, Rank, flip};
use crate::HugePages;
use crate::pi::key::sealed::Key;
use crate::substrate::prefetch::prefetch_read;
use crate::substrate::region::HugeSlice;

/// `M` keys (stored [`flip`]ped) and the route down from each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
pub(crate) struct Entry {
    keys: [u64; M],
    down: [u64; M],
}

const _: () = assert!(size_of::<Entry>() == 64 && align_of::<Entry>() == 64);

/// One level: its entries (on huge pages when they fill one) and how many keys they hold.
#[derive(Debug, Default)]
struct Level {
    entries: HugeSlice<Entry>,
    /// Read by the tests' audit only (walks need no count: invariant 2).
    #[cfg(test)]
    keys: usize,
    /// For keys that can tie on their prefix: each slot's second word and node (slot `s` of
    /// entry `e` at `e * M + s`, padded like the entries), to settle a tie; empty for `u64`
    /// keys.
    ties: HugeSlice<Tie>,
}

/// A level while [`IndexLayer::build`] fills it.
#[derive(Debug, Default)]
struct Growing {
    entries: Vec<Entry>,
    keys: usize,
    /// For keys that can tie on their prefix: each slot's second word and node (slot `s` of
    /// entry `e` at `e * M + s`, padded like the entries), to settle a tie; empty for `u64`
    /// keys.
    ties: Vec<Tie>,
}

/// What settles a tie on a slot's prefix: the key's second word, then the whole key, read
/// through its node's handle.
#[derive(Clone, Copy, Debug)]
struct Tie {
    second: u64,
    handle: u64,
}

impl Growing {
    fn push(&mut self, prefix: u64, down: u64, handle: Option<Tie>) {
        let slot = self.keys % M;
        if slot == 0 {
            self.entries.push(Entry {
                keys: [flip(prefix); M],
                down: [down; M],
            });
            if let Some(h) = handle {
                self.ties.extend([h; M]);
            }
        } else if let Some(e) = self.entries.last_mut() {
            // The slots after this one keep repeating the last key (invariant 2).
            e.keys[slot..].fill(flip(prefix));
            e.down[slot..].fill(down);
            if let Some(h) = handle {
                let at = self.ties.len() - M;
                self.ties[at + slot..].fill(h);
            }
        }
        self.keys += 1;
    }

    fn done(self, huge: HugePages) -> Level {
        Level {
            entries: HugeSlice::new(self.entries, huge),
            #[cfg(test)]
            keys: self.keys,
            ties: HugeSlice::new(self.ties, huge),
        }
    }
}

impl Level {
    /// Number of keys of entry `e` (`e < entries.len()`) at most the (flipped) query. Exact
    /// without knowing how many slots are filled: the slots after a last entry's keys repeat
    /// its last key and route (invariant 2), so counting them changes no route taken.
    ///
    /// The SIMD compare ranks the prefix; for keys that can tie on it (`!K::EXACT`), the
    /// slots ranked of the query's own prefix are then compared whole, from the last one
    /// back (keys ascend, so those above the query form a run at the end).
    #[inline(always)]
    fn rank<R: Rank, K: Key>(&self, r: R, e: usize, query: u64, key: K::Ref<'_>) -> usize {
        debug_assert!(e < self.entries.len());
        // SAFETY: callers pass `e` below `entries.len()`: 0 on a non-empty level (levels are
        // made by pushing a key), a route down (invariant 3: an entry of this level), or
        // `e + 1` checked against the length.
        let entry = unsafe { self.entries.get_unchecked(e) };
        let mut rank = r.rank(&entry.keys, query);
        if !K::EXACT {
            while rank > 0 && entry.keys[rank - 1] == query {
                let tie = self.ties[e * M + rank - 1];
                let second = K::second(key);
                let above = if tie.second != second {
                    tie.second > second
                } else {
                    // SAFETY: an index of keys that can tie is built by `IndexLayer::build`
                    // with a node handle per slot (the `ties` of every level), each the
                    // address of a `Node<K>` its storage keeps alive while this index is
                    // current (the same guarantee as for level 1's routes, `Pi::run_rows`).
                    let node = unsafe {
                        &*core::ptr::with_exposed_provenance::<Node<K>>(tie.handle as usize)
                    };
                    K::order(node.key(), key) == Greater
                };
                if !above {
                    break;
                }
                rank -= 1;
            }
        }
        rank
    }

    /// From entry `e`, where the walk entered this level, the entry and rank of the last key
    /// at most the query: moves right while the next entry starts at most the query.
    #[inline(always)]
    fn walk<R: Rank, K: Key>(
        &self,
        r: R,
        mut e: usize,
        query: u64,
        key: K::Ref<'_>,
    ) -> (usize, usize) {
        let mut rank = self.rank::<R, K>(r, e, query, key);
        while rank == M && e + 1 < self.entries.len() {
            let next = self.rank::<R, K>(r, e + 1, query, key);
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

/// The levels above the storage layer, over the nodes of a `Storage<K>`.
#[derive(Debug)]
pub(crate) struct IndexLayer<K> {
    /// `levels[0]` is the paper's level 1.
    levels: Vec<Level>,
    _keys: PhantomData<fn() -> K>,
}

impl<K> Default for IndexLayer<K> {
    fn default() -> Self {
        IndexLayer {
            levels: Vec::new(),
            _keys: PhantomData,
        }
    }
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

impl<K: Key> IndexLayer<K> {
    /// Builds the levels from the data nodes of height at least 2, in ascending key order:
    /// `(prefix, height, handle, second word)`, the handle the address of a `Node<K>`. One
    /// scan fills every level at once; levels that fill a huge page move to huge pages as
    /// `huge` asks.
    pub(crate) fn build(
        nodes: impl IntoIterator<Item = (u64, usize, u64, u64)>,
        huge: HugePages,
    ) -> IndexLayer<K> {
        let mut levels: Vec<Growing> = Vec::new();
        let mut last: Option<u64> = None;
        for (key, height, handle, second) in nodes {
            debug_assert!(height >= 2, "level 1 holds nodes of height above 1");
            // Prefixes of keys that can tie ascend; `u64` keys ascend strictly.
            debug_assert!(
                last.is_none_or(|l| l < key || (!K::EXACT && l == key)),
                "keys ascend"
            );
            last = Some(key);
            if levels.len() < height - 1 {
                levels.resize_with(height - 1, Growing::default);
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
                lv.push(key, down, (!K::EXACT).then_some(Tie { second, handle }));
                down = entry as u64;
            }
        }
        IndexLayer {
            levels: levels.into_iter().map(|lv| lv.done(huge)).collect(),
            _keys: PhantomData,
        }
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
            .map(|lv| lv.entries.memory_usage() + lv.ties.memory_usage())
            .sum()
    }

    /// The interception of `query`: the handle of the node of largest key at most `query`
    /// among the nodes of height above 1, or `None` when there is none. (The executor walks
    /// groups with [`find_group`](Self::find_group); this one-query walk is the tests'
    /// reference.)
    #[cfg(test)]
    pub(crate) fn find<R: Rank>(&self, r: R, query: K::Ref<'_>) -> Option<u64> {
        let q = flip(K::prefix(query));
        let mut next = Next::First;
        for lv in self.levels.iter().rev() {
            let start = match next {
                Next::First => 0,
                Next::At(e) => e as usize,
            };
            let (e, rank) = lv.walk::<R, K>(r, start, q, query);
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
        queries: &[K::Ref<'_>],
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
            *f = flip(K::prefix(q));
        }
        let n = queries.len();
        for h in (0..upper.len()).rev() {
            let lv = &upper[h];
            let below = if h == 0 { bottom } else { &upper[h - 1] };
            for k in 0..n {
                let (e, rank) = lv.walk::<R, K>(r, at[k] as usize, flipped[k], queries[k]);
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
                    if !K::EXACT {
                        // Keys that tie on their prefix read the slots' ties too.
                        let t = below.ties.as_ptr().wrapping_add(next * M);
                        prefetch_read(t);
                        prefetch_read(t.wrapping_add(2 * M - 1));
                    }
                }
                at[k] = next as u32;
            }
        }
        for k in 0..n {
            let (e, rank) = bottom.walk::<R, K>(r, at[k] as usize, flipped[k], queries[k]);
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
        ix: &IndexLayer<u64>,
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
    fn check(ix: &IndexLayer<u64>, nodes: &[(u64, usize, u64)], queries: &[u64]) {
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
        let ix = IndexLayer::<u64>::build([], HugePages::Never);
        assert_eq!(ix.height(), 0);
        check(&ix, &[], &[0, 5, u64::MAX]);
        for n in [vec![(7, 2, 1)], vec![(0, 3, 1)], vec![(u64::MAX, 5, 9)]] {
            let ix =
                IndexLayer::<u64>::build(n.iter().map(|&(k, h, x)| (k, h, x, 0)), HugePages::Never);
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
                let ix = IndexLayer::<u64>::build(
                    ns.iter().map(|&(k, h, x)| (k, h, x, 0)),
                    HugePages::Never,
                );
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

    /// Byte-string keys: prefixes tie in long runs (keys that share eight bytes, keys that
    /// differ only past them or by trailing zero bytes), so ranks resolve ties by comparing
    /// whole keys.
    #[test]
    fn ties_on_prefixes_compare_whole_keys() {
        use crate::pi::key::{BytesRef, sealed::Key as _};
        use crate::pi::raw::node::Storage;

        let mut rng = TestRng::new(21);
        let n = if cfg!(miri) { 60 } else { 3000 };
        let mut keys: Vec<Vec<u8>> = (0..n)
            .map(|_| {
                let mut k = match rng.below(4) {
                    0 => b"shared-prefix/".to_vec(),
                    1 => b"ab".to_vec(),
                    2 => vec![0xff; 8],
                    _ => Vec::new(),
                };
                let tail = rng.below(12) as usize;
                k.extend((0..tail).map(|_| [0u8, 1, b'x', 0xff][rng.below(4) as usize]));
                k
            })
            .collect();
        keys.sort();
        keys.dedup();
        let storage = Storage::<Vec<u8>>::default();
        let mut pred = storage.head();
        let mut nodes = Vec::new();
        let mut alloc = super::super::slab::Alloc::default();
        for k in &keys {
            let h = 2 + (rng.below(4) == 0) as u8 + (rng.below(16) == 0) as u8;
            pred = storage.insert_after(&mut alloc, pred, BytesRef::new(k), 0, h);
            let handle = (pred as *const Node<Vec<u8>>).expose_provenance() as u64;
            nodes.push((k.clone(), h as usize, handle));
        }
        let ix = IndexLayer::<Vec<u8>>::build(
            nodes.iter().map(|(k, h, handle)| {
                let r = BytesRef::new(k);
                (<Vec<u8>>::prefix(r), *h, *handle, <Vec<u8>>::second(r))
            }),
            HugePages::Never,
        );
        let mut queries: Vec<Vec<u8>> = Vec::new();
        for k in &keys {
            queries.push(k.clone());
            let mut longer = k.clone();
            longer.push(0);
            queries.push(longer);
            if let Some((last, init)) = k.split_last() {
                queries.push(init.to_vec());
                let mut below = init.to_vec();
                below.push(last.wrapping_sub(1));
                queries.push(below);
            }
        }
        queries.extend([Vec::new(), vec![0xff; 20], b"shared-prefix".to_vec()]);
        let want: Vec<Option<u64>> = queries
            .iter()
            .map(|q| nodes.iter().rev().find(|n| n.0 <= *q).map(|n| n.2))
            .collect();
        let refs: Vec<BytesRef<'_>> = queries.iter().map(|q| BytesRef::new(q)).collect();
        for kind in Kind::all_available() {
            let mut got = vec![None; refs.len()];
            match kind {
                Kind::Scalar => {
                    for (q, o) in refs.chunks(7).zip(got.chunks_mut(7)) {
                        ix.find_group(Scalar, q, o, true);
                    }
                    for (i, q) in refs.iter().enumerate() {
                        assert_eq!(ix.find(Scalar, *q), want[i], "{:?}", queries[i]);
                    }
                }
                #[cfg(all(target_arch = "x86_64", not(miri)))]
                Kind::Avx2 => {
                    let r = super::super::simd::Avx2::new().expect("available");
                    for (q, o) in refs.chunks(MAX_GROUP).zip(got.chunks_mut(MAX_GROUP)) {
                        ix.find_group(r, q, o, true);
                    }
                }
                #[cfg(all(target_arch = "x86_64", not(miri)))]
                Kind::Sse42 => {
                    let r = super::super::simd::Sse42::new().expect("available");
                    for (q, o) in refs.chunks(1).zip(got.chunks_mut(1)) {
                        ix.find_group(r, q, o, false);
                    }
                }
                #[allow(unreachable_patterns)]
                _ => unreachable!("not available under this build"),
            }
            assert_eq!(got, want, "{kind:?}");
        }
    }
}
