//! The per-level cursor [`Path`]: a root-to-leaf position that moves to the first, last, next
//! and previous leaf, stepping along each level rather than ranking and selecting.

use super::Trie;
use crate::substrate::popcount::dispatch;

/// A root-to-leaf position in a trie: one cursor per level (§3.4's per-level cursors) and the
/// key those labels spell.
#[derive(Clone, Debug, Default)]
pub(crate) struct Path {
    /// Position on each level from the root; the last is the leaf.
    pub(super) pos: Vec<usize>,
    /// The leaf is the prefix key of the node at `pos[last]`.
    pub(super) term: bool,
    /// Labels and chains on the path (the leaf's label included unless `term`).
    key: Vec<u8>,
    /// Per level entered: the length of `key` up to the items of that level's node (its chain
    /// included), where the level's label goes.
    bases: Vec<usize>,
    /// Start of the node last entered on each level since the path was positioned, moving in
    /// `dir`. At least as long as `pos`; deeper entries are nodes of subtrees already left.
    /// Moving on through the trie in key order enters the nodes of each level in level order,
    /// so the next subtree's node is the one after (or, backwards, before) the last entered:
    /// §3.4's per-level cursors, which step along each level instead of a rank and a select.
    nodes: Vec<usize>,
    dir: Dir,
    /// The path keeps no key (`key` and `bases` stay empty): for seeks that want only the
    /// leaf, which then skip copying every chain and label on the way down.
    keyless: bool,
}

/// Which way a path has been moving since it was positioned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Dir {
    #[default]
    Unmoved,
    Forward,
    Backward,
}
std::thread_local! {
    /// One spare path per thread, so one-shot seeks (range filters, `lower_bound`) reuse its
    /// buffers instead of allocating two vectors per query.
    static SPARE: core::cell::Cell<Path> = const { core::cell::Cell::new(Path::new()) };
}

impl Path {
    pub(crate) const fn new() -> Path {
        Path {
            pos: Vec::new(),
            term: false,
            key: Vec::new(),
            bases: Vec::new(),
            nodes: Vec::new(),
            dir: Dir::Unmoved,
            keyless: false,
        }
    }

    /// This thread's spare path (empty, with whatever capacity it has); give it back with
    /// [`recycle`](Self::recycle).
    pub(crate) fn spare() -> Path {
        SPARE.with(|s| s.take())
    }

    /// [`spare`](Self::spare), keeping no key: [`key`](Self::key) is then empty, whatever
    /// the position. For seeks that read only the leaf (its number, level and suffix).
    pub(crate) fn spare_keyless() -> Path {
        let mut p = Self::spare();
        p.reset(true);
        p
    }

    /// Empties the path and says whether it keeps a key from now on (see
    /// [`spare_keyless`](Self::spare_keyless)).
    pub(super) fn reset(&mut self, keyless: bool) {
        self.clear();
        self.keyless = keyless;
    }

    /// Returns a path taken with [`spare`](Self::spare) or
    /// [`spare_keyless`](Self::spare_keyless).
    pub(crate) fn recycle(mut self) {
        self.reset(false);
        SPARE.with(|s| s.set(self));
    }

    pub(crate) fn is_valid(&self) -> bool {
        !self.pos.is_empty()
    }

    pub(crate) fn clear(&mut self) {
        self.pos.clear();
        self.key.clear();
        self.bases.clear();
        self.term = false;
        self.nodes.clear();
        self.dir = Dir::Unmoved;
    }

    /// Records entering the node starting at `start` on `level` (one below the path), its
    /// chain appended to the key; returns the chain's length. Entering the same node again
    /// changes nothing.
    #[inline(always)]
    pub(super) fn enter(&mut self, t: &Trie, level: usize, start: usize) -> usize {
        debug_assert!(level <= self.nodes.len() && level == self.pos.len());
        if level < self.nodes.len() {
            self.nodes[level] = start;
        } else {
            self.nodes.push(start);
        }
        if self.keyless {
            return if t.folded && level >= t.dense_height {
                t.chain_len(start)
            } else {
                0
            };
        }
        if !t.folded {
            // No chain anywhere: the key holds one label a level, as the levels say.
            debug_assert_eq!(self.key.len(), level);
            return 0;
        }
        self.enter_chain(t, level, start)
    }

    /// [`enter`](Self::enter)'s key and bases in a trie with chains.
    fn enter_chain(&mut self, t: &Trie, level: usize, start: usize) -> usize {
        // The key so far: up to the label above (none above the root).
        let above = match level.checked_sub(1) {
            Some(l) => self.bases[l] + 1,
            None => 0,
        };
        self.key.truncate(above);
        let chain = if level < t.dense_height {
            0
        } else {
            t.chain_len(start)
        };
        if chain > 0 {
            self.key.extend_from_slice(t.chain(start, chain));
        }
        self.bases.truncate(level);
        self.bases.push(self.key.len());
        chain
    }

    /// Turns the path to move in `dir`: a change of direction forgets the nodes below the path
    /// (they were entered going the other way).
    #[inline]
    fn turn(&mut self, dir: Dir) {
        if self.dir != dir {
            if self.dir != Dir::Unmoved {
                self.nodes.truncate(self.pos.len());
            }
            self.dir = dir;
        }
    }

    /// Start of the child of the branch at `pos` on `level`, moving forward: the node after the
    /// last one entered on `level + 1` when known, else by rank and select.
    #[inline]
    fn child_forward(&self, t: &Trie, level: usize, pos: usize) -> usize {
        let below = level + 1;
        let start = match self.nodes.get(below) {
            Some(&last) if self.dir == Dir::Forward => {
                if below < t.dense_height {
                    last + 256
                } else {
                    t.sparse_end(last)
                }
            }
            _ => return t.child(level, pos),
        };
        debug_assert_eq!(start, t.child(level, pos), "per-level cursor out of step");
        start
    }

    /// Start of the child of the branch at `pos` on `level`, moving backward: the node before
    /// the last one entered on `level + 1` when known, else by rank and select.
    #[inline]
    fn child_backward(&self, t: &Trie, level: usize, pos: usize) -> usize {
        let below = level + 1;
        let start = match self.nodes.get(below) {
            Some(&last) if self.dir == Dir::Backward && last > 0 => {
                if below < t.dense_height {
                    last - 256
                } else {
                    t.s_louds.prev_one(last - 1).unwrap_or(0)
                }
            }
            _ => return t.child(level, pos),
        };
        debug_assert_eq!(start, t.child(level, pos), "per-level cursor out of step");
        start
    }

    /// The labels and chains on the path: the key's unique prefix (empty for a keyless path).
    pub(crate) fn key(&self) -> &[u8] {
        debug_assert!(!self.keyless || self.key.is_empty());
        &self.key
    }

    /// True when the current leaf is a prefix key (a terminator): its key is exactly
    /// [`key`](Self::key), which is a proper prefix of the next leaf's.
    pub(crate) fn is_term(&self) -> bool {
        self.term
    }

    /// Level of the current leaf.
    pub(crate) fn level(&self) -> usize {
        self.pos.len().saturating_sub(1)
    }

    /// Leaf number of the current position.
    pub(crate) fn leaf(&self, t: &Trie) -> usize {
        let l = self.pos.len() - 1;
        dispatch!(pc => if self.term {
            t.prefix_leaf_with(pc, l, self.pos[l])
        } else {
            t.leaf_with(pc, l, self.pos[l])
        })
    }

    /// Takes item `pos` of the node entered last (its prefix key when `term`). The key then
    /// ends where that node's items start (its label goes there).
    #[inline]
    pub(super) fn push(&mut self, t: &Trie, pos: usize, term: bool) {
        let level = self.pos.len();
        debug_assert!(
            self.keyless
                || Some(&self.key.len())
                    == if t.folded {
                        self.bases.get(level)
                    } else {
                        Some(&level)
                    },
            "push before entering the level"
        );
        self.pos.push(pos);
        self.term = term;
        if !term && !self.keyless {
            self.key.push(t.label(level, pos));
        }
    }

    /// Leaves the item of the deepest level (the node's chain stays on the key).
    #[inline]
    fn pop(&mut self, t: &Trie) -> (usize, bool) {
        let p = self.pos.pop().unwrap_or(0);
        let term = self.term;
        if !self.keyless {
            if t.folded {
                if let Some(&base) = self.bases.get(self.pos.len()) {
                    self.key.truncate(base);
                }
            } else if !term {
                self.key.pop();
            }
        }
        self.term = false;
        (p, term)
    }

    pub(super) fn leftmost(&mut self, t: &Trie, mut level: usize, mut start: usize) {
        loop {
            self.enter(t, level, start);
            let (p, term) = t.first_item(level, start);
            self.push(t, p, term);
            if term || !t.has_child(level, p) {
                return;
            }
            start = self.child_forward(t, level, p);
            level += 1;
        }
    }

    pub(super) fn rightmost(&mut self, t: &Trie, mut level: usize, mut start: usize) {
        loop {
            self.enter(t, level, start);
            let p = t.last_item(level, start);
            self.push(t, p, false);
            if !t.has_child(level, p) {
                return;
            }
            start = self.child_backward(t, level, p);
            level += 1;
        }
    }

    /// Positions at the first leaf; false for an empty trie.
    pub(crate) fn first(&mut self, t: &Trie) -> bool {
        self.clear();
        if t.is_empty() {
            return false;
        }
        self.leftmost(t, 0, 0);
        true
    }

    /// Positions at the last leaf; false for an empty trie.
    pub(crate) fn last(&mut self, t: &Trie) -> bool {
        self.clear();
        if t.is_empty() {
            return false;
        }
        self.rightmost(t, 0, 0);
        true
    }

    /// Moves to the next leaf; false (and cleared) past the last.
    pub(crate) fn next(&mut self, t: &Trie) -> bool {
        self.turn(Dir::Forward);
        while self.is_valid() {
            let level = self.pos.len() - 1;
            let (p, term) = self.pop(t);
            if let Some(n) = t.next_item(level, p, term) {
                self.push(t, n, false);
                if t.has_child(level, n) {
                    let child = self.child_forward(t, level, n);
                    self.leftmost(t, level + 1, child);
                }
                return true;
            }
        }
        false
    }

    /// Moves to the previous leaf; false (and cleared) before the first.
    pub(crate) fn prev(&mut self, t: &Trie) -> bool {
        self.turn(Dir::Backward);
        while self.is_valid() {
            let level = self.pos.len() - 1;
            let (p, term) = self.pop(t);
            if term {
                continue;
            }
            if let Some((n, nterm)) = t.prev_item(level, p) {
                self.push(t, n, nterm);
                if !nterm && t.has_child(level, n) {
                    let child = self.child_backward(t, level, n);
                    self.rightmost(t, level + 1, child);
                }
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::succinct::raw::build::LevelBuilder;
    use crate::succinct::raw::suffix::SuffixKind;

    pub(crate) fn trie_of(keys: &[&[u8]], ratio: u32) -> Trie {
        let mut b = LevelBuilder::new(SuffixKind::None);
        for (i, k) in keys.iter().enumerate() {
            b.push(k, i as u64).unwrap();
        }
        b.finish_trie(ratio).unwrap()
    }

    #[test]
    fn iteration_spells_unique_prefixes_in_order_both_ways() {
        let keys: [&[u8]; 7] = [b"a", b"ab", b"abc", b"ba", b"b\xff", b"b\xff\xff", b"c"];
        for ratio in [0, 1, 64, u32::MAX] {
            let t = trie_of(&keys, ratio);
            t.validate(&mut |_| Ok(())).unwrap();
            let mut p = Path::default();
            let mut fwd = Vec::new();
            let mut ok = p.first(&t);
            while ok {
                fwd.push((p.key().to_vec(), p.leaf(&t)));
                ok = p.next(&t);
            }
            let want: Vec<&[u8]> = vec![b"a", b"ab", b"abc", b"ba", b"b\xff", b"b\xff\xff", b"c"];
            assert_eq!(
                fwd.iter().map(|(k, _)| k.as_slice()).collect::<Vec<_>>(),
                want,
                "ratio {ratio}"
            );
            let mut leaves: Vec<usize> = fwd.iter().map(|x| x.1).collect();
            leaves.sort();
            assert_eq!(leaves, (0..keys.len()).collect::<Vec<_>>());
            let mut back = Vec::new();
            let mut ok = p.last(&t);
            while ok {
                back.push(p.key().to_vec());
                ok = p.prev(&t);
            }
            back.reverse();
            assert_eq!(back, fwd.iter().map(|x| x.0.clone()).collect::<Vec<_>>());
        }
    }
}
