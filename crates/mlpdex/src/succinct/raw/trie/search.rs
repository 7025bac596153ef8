//! Exact search: where a key would end in the trie, one key at a time or many interleaved.

use super::Trie;
use crate::substrate::labels;
use crate::substrate::popcount::{Popcount, dispatch};

/// Where a lookup ended: a leaf that may hold the key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hit {
    /// The leaf's number.
    pub(crate) leaf: usize,
    /// Bytes of the key the trie matched to reach it (its suffix starts there).
    pub(crate) depth: usize,
    /// The leaf's level.
    pub(crate) level: usize,
    /// The leaf is a prefix key, equal to the whole key.
    pub(crate) term: bool,
}

impl Trie {
    /// Exact search: the leaf where `key` (non-empty) would end; `None` when no key can match.
    #[inline]
    pub(crate) fn lookup(&self, key: &[u8]) -> Option<Hit> {
        // A trie without chains gets a walk without chain tests (instructions per `get` on
        // `dec-a`, callgrind: 1,117 before path compression, 1,165 with a test a level).
        if self.folded {
            dispatch!(pc => self.lookup_with::<_, true>(pc, key))
        } else {
            dispatch!(pc => self.lookup_with::<_, false>(pc, key))
        }
    }

    /// The chain of the sparse node starting at `start`, if it has one, matched against `key`
    /// from `depth`: the node's items and the depth after the chain, `None` on a mismatch.
    #[inline(always)]
    fn match_chain<const FOLDED: bool>(
        &self,
        start: usize,
        key: &[u8],
        depth: usize,
    ) -> Option<(usize, usize)> {
        if !FOLDED {
            return Some((start, depth));
        }
        let n = self.chain_len(start);
        if n == 0 {
            return Some((start, depth));
        }
        let k = key.get(depth..depth + n)?;
        let c = self.chain(start, n);
        // Short chains (most, on keys like `dec-b`) byte by byte: a `memcmp` call costs more
        // than the bytes.
        let same = if n <= 8 {
            k.iter().zip(c).all(|(a, b)| a == b)
        } else {
            k == c
        };
        same.then_some((start + n, depth + n))
    }

    /// [`lookup`](Self::lookup) with one popcount for the whole walk.
    #[inline(always)]
    fn lookup_with<P: Popcount, const FOLDED: bool>(&self, pc: P, key: &[u8]) -> Option<Hit> {
        debug_assert!(!key.is_empty());
        if self.height == 0 {
            return None;
        }
        let mut level = 0;
        let mut pos = 0;
        // Dense levels hold no chain: there the depth is the level.
        while level < self.dense_height {
            if level == key.len() {
                let node = pos / 256;
                return self.d_is_prefix.get(node).then(|| Hit {
                    leaf: self.prefix_leaf_with(pc, level, pos),
                    depth: level,
                    level,
                    term: true,
                });
            }
            let p = pos + key[level] as usize;
            if !self.d_labels.get(p) {
                return None;
            }
            if !self.d_has_child.get(p) {
                return Some(Hit {
                    leaf: self.leaf_with(pc, level, p),
                    depth: level + 1,
                    level,
                    term: false,
                });
            }
            pos = self.child_with(pc, level, p);
            level += 1;
        }
        let mut depth = level;
        loop {
            // Read before the labels: the child step's LOUDS words then load beside them.
            let hint = self.child_hint(pos);
            let end = self.sparse_end(pos);
            let items;
            (items, depth) = self.match_chain::<FOLDED>(pos, key, depth)?;
            let term = self.sparse_terminator(items, end);
            if depth == key.len() {
                return term.then(|| Hit {
                    leaf: self.leaf_with(pc, level, items),
                    depth,
                    level,
                    term: true,
                });
            }
            let s = items + term as usize;
            let p = s + labels::find_eq(&self.s_labels, s, end, key[depth])?;
            if !self.s_has_child.get(p) {
                return Some(Hit {
                    leaf: self.leaf_with(pc, level, p),
                    depth: depth + 1,
                    level,
                    term: false,
                });
            }
            pos = self.sparse_child_with(pc, p, Some(hint));
            level += 1;
            depth += 1;
        }
    }
}

/// Queries a batched lookup keeps in flight.
pub(crate) const LANES: usize = 16;

/// Where one query of a batched lookup stands.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// At the dense node starting at `pos`.
    Dense(usize),
    /// About to find where sparse node number `node` starts (below the last dense level).
    Select(usize),
    /// About to find where a sparse node starts: the LOUDS one numbered `.1` from position
    /// `.0` (the child start directory's entry, see `Trie::sparse_child_with`).
    Child(usize, usize),
    /// At the sparse node starting at `pos`.
    Sparse(usize),
    /// Answered, or no query.
    Idle,
}

impl Trie {
    /// [`lookup`](Self::lookup) for many keys at once: up to [`LANES`] queries advance in turn,
    /// one level (or one select) per turn, each turn prefetching what the query reads next, so
    /// the cache misses of different queries overlap instead of queueing (the MLP of
    /// mlp-data-structures.txt applied to the succinct trie). `out[i]` gets the answer for
    /// `keys[i]` (empty keys get `None`; callers answer them beside the trie).
    pub(crate) fn lookup_batch(&self, keys: &[&[u8]], out: &mut [Option<Hit>]) {
        dispatch!(pc => self.lookup_batch_with(pc, keys, out))
    }

    /// [`lookup_batch`](Self::lookup_batch) with one popcount for the whole batch.
    #[inline(always)]
    fn lookup_batch_with<P: Popcount>(&self, pc: P, keys: &[&[u8]], out: &mut [Option<Hit>]) {
        debug_assert_eq!(keys.len(), out.len());
        // Per lane: the query, its level, its depth in the key, and its step.
        let mut lanes = [(0usize, 0usize, 0usize, Step::Idle); LANES];
        let mut next = 0;
        let mut active = 0;
        let root = if self.dense_height > 0 {
            Step::Dense(0)
        } else {
            Step::Sparse(0)
        };
        loop {
            for lane in lanes.iter_mut() {
                if let Step::Idle = lane.3 {
                    // Refill with the next non-trivial query.
                    while next < keys.len() {
                        let q = next;
                        next += 1;
                        out[q] = None;
                        if !keys[q].is_empty() && self.height > 0 {
                            *lane = (q, 0, 0, root);
                            active += 1;
                            break;
                        }
                    }
                    if let Step::Idle = lane.3 {
                        continue;
                    }
                }
                let (q, level, depth, step) = *lane;
                let key = keys[q];
                let done = |lane: &mut (usize, usize, usize, Step), active: &mut usize| {
                    lane.3 = Step::Idle;
                    *active -= 1;
                };
                match step {
                    Step::Dense(pos) => {
                        if level == key.len() {
                            out[q] = self.d_is_prefix.get(pos / 256).then(|| Hit {
                                leaf: self.prefix_leaf_with(pc, level, pos),
                                depth: level,
                                level,
                                term: true,
                            });
                            done(lane, &mut active);
                            continue;
                        }
                        let p = pos + key[level] as usize;
                        if !self.d_labels.get(p) {
                            done(lane, &mut active);
                            continue;
                        }
                        if !self.d_has_child.get(p) {
                            out[q] = Some(Hit {
                                leaf: self.leaf_with(pc, level, p),
                                depth: level + 1,
                                level,
                                term: false,
                            });
                            done(lane, &mut active);
                            continue;
                        }
                        let node = self.d_has_child.rank1_with(pc, p + 1);
                        lane.1 = level + 1;
                        lane.2 = level + 1;
                        if level + 1 < self.dense_height {
                            let np = node * 256;
                            let b = key.get(level + 1).map_or(0, |&b| b as usize);
                            self.d_labels.prefetch(np + b);
                            self.d_has_child.prefetch(np + b);
                            lane.3 = Step::Dense(np);
                        } else {
                            self.s_louds
                                .prefetch_select(node.wrapping_sub(self.dense_nodes));
                            lane.3 = Step::Select(node);
                        }
                    }
                    Step::Select(node) => {
                        let start = self
                            .s_louds
                            .select1_with(pc, node.wrapping_sub(self.dense_nodes))
                            .unwrap_or(self.s_len);
                        self.prefetch_node(start);
                        lane.3 = Step::Sparse(start);
                    }
                    Step::Child(from, j) => {
                        let start = self.s_louds.select_from_with(pc, from, j);
                        self.prefetch_node(start);
                        lane.3 = Step::Sparse(start);
                    }
                    Step::Sparse(pos) => {
                        let end = self.sparse_end(pos);
                        let Some((items, depth)) = self.match_chain::<true>(pos, key, depth) else {
                            done(lane, &mut active);
                            continue;
                        };
                        let term = self.sparse_terminator(items, end);
                        if depth == key.len() {
                            out[q] = term.then(|| Hit {
                                leaf: self.leaf_with(pc, level, items),
                                depth,
                                level,
                                term: true,
                            });
                            done(lane, &mut active);
                            continue;
                        }
                        let s = items + term as usize;
                        let Some(i) = labels::find_eq(&self.s_labels, s, end, key[depth]) else {
                            done(lane, &mut active);
                            continue;
                        };
                        let p = s + i;
                        if !self.s_has_child.get(p) {
                            out[q] = Some(Hit {
                                leaf: self.leaf_with(pc, level, p),
                                depth: depth + 1,
                                level,
                                term: false,
                            });
                            done(lane, &mut active);
                            continue;
                        }
                        let from = self.child_start_entry(p / 64);
                        self.s_louds.prefetch_at(from);
                        lane.1 = level + 1;
                        lane.2 = depth + 1;
                        lane.3 = Step::Child(from, self.children_before_in_word(pc, p));
                    }
                    Step::Idle => {}
                }
            }
            if active == 0 && next >= keys.len() {
                return;
            }
        }
    }
}
