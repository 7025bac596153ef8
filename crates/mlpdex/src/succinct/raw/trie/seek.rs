//! Seeks: positioning a [`Path`] at the first leaf at or after a key (or the last at or before
//! it), one seek at a time or many interleaved.

use core::cmp::Ordering;

use super::{Path, Trie, search::LANES};
use crate::substrate::popcount::{Popcount, dispatch};
use crate::substrate::prefetch::prefetch_read;

/// What a leaf's stored suffix says about a probe, given the leaf's level, the number of the
/// probe's bytes the trie matched to reach it (the leaf's label included) and its position:
/// the order of the stored key against the probe, or `None` when the store cannot tell.
/// Taking the position rather than the leaf number lets a store without suffixes skip the
/// rank that numbers the leaf.
pub(crate) type LeafCmp<'a> = &'a dyn Fn(usize, usize, usize) -> Option<Ordering>;

/// A [`LeafCmp`] that also takes the probe key first, for seeks of many keys.
pub(crate) type KeyLeafCmp<'a> = &'a dyn Fn(&[u8], usize, usize, usize) -> Option<Ordering>;

/// How a node's chain orders against the probe's bytes that remain.
enum Chain {
    /// The chain matches: the probe goes on into the node's items at the new depth.
    Matches(usize),
    /// Every key below the node is greater than the probe (the chain is greater, or the probe
    /// ends inside it).
    Above,
    /// Every key below the node is less than the probe.
    Below,
}

/// Orders the `len` chain bytes of the sparse node at `start` against `key` from `depth`.
#[inline]
fn order_chain(t: &Trie, start: usize, len: usize, key: &[u8], depth: usize) -> Chain {
    if len == 0 {
        return Chain::Matches(depth);
    }
    let rest = key.get(depth..).unwrap_or(&[]);
    let n = len.min(rest.len());
    match t.chain(start, len)[..n].cmp(&rest[..n]) {
        Ordering::Less => Chain::Below,
        Ordering::Greater => Chain::Above,
        Ordering::Equal if n < len => Chain::Above,
        Ordering::Equal => Chain::Matches(depth + len),
    }
}

std::thread_local! {
    /// Spare paths for batched seeks, so they reuse their buffers (see [`Path::spare`]).
    static SPARE_BATCH: core::cell::Cell<Vec<Path>> = const { core::cell::Cell::new(Vec::new()) };
}

/// A bound's key and whether it excludes the key; `None` for no bound.
#[inline]
pub(crate) fn bound_key(b: core::ops::Bound<&[u8]>) -> Option<(&[u8], bool)> {
    match b {
        core::ops::Bound::Included(k) => Some((k, false)),
        core::ops::Bound::Excluded(k) => Some((k, true)),
        core::ops::Bound::Unbounded => None,
    }
}

/// `n` empty paths for a batched seek, keeping keys unless `keyless` (see
/// [`Path::spare_keyless`]), reusing this thread's spares; give them back with
/// [`recycle_paths`].
fn spare_paths(n: usize, keyless: bool) -> Vec<Path> {
    let mut v = SPARE_BATCH.with(|s| s.take());
    v.resize_with(n.max(v.len()), Path::new);
    for p in &mut v {
        p.reset(keyless);
    }
    v
}

/// Returns paths taken with [`spare_paths`].
fn recycle_paths(v: Vec<Path>) {
    SPARE_BATCH.with(|s| s.set(v));
}
/// Where one seek of a batched seek stands.
#[derive(Clone, Copy, Debug)]
enum Seek {
    /// Searching the node starting at `pos` for the key's byte.
    Descend(usize),
    /// Taking the first item of the node starting at `pos`, down to a leaf.
    Leftmost(usize),
    /// About to find where sparse node `node` starts, then descend or go leftmost.
    Select(usize, bool),
    /// Answered.
    Done,
}

impl Trie {
    /// Moves a seek to the child of the branch at `pos` on `level`: a dense child is reached
    /// directly (its label word prefetched), a sparse one after a select step (its LOUDS word
    /// prefetched now).
    fn seek_child(&self, level: usize, pos: usize, key: &[u8], leftmost: bool) -> Seek {
        // A dense child's byte is `key[level + 1]`: dense levels hold no chain.
        let node = if level < self.dense_height {
            self.d_has_child.rank1(pos + 1)
        } else {
            self.dense_children + self.s_has_child.rank1(pos + 1)
        };
        if level + 1 < self.dense_height {
            let start = node * 256;
            let b = if leftmost {
                0
            } else {
                key.get(level + 1).map_or(0, |&b| b as usize)
            };
            self.d_labels.prefetch(start + b);
            self.d_has_child.prefetch(start + b);
            if leftmost {
                Seek::Leftmost(start)
            } else {
                Seek::Descend(start)
            }
        } else {
            self.s_louds
                .prefetch_select(node.wrapping_sub(self.dense_nodes));
            Seek::Select(node, leftmost)
        }
    }

    /// [`Path::seek_ge`] for many keys at once, interleaved like
    /// [`lookup_batch`](Self::lookup_batch): up to [`LANES`] seeks advance in turn, one level
    /// or one select per turn, prefetching what each reads next. `paths[i]` ends at the first
    /// leaf `≥ keys[i]` (`>` when `strict[i]`) and `found[i]` says whether there is one; `cmp`
    /// is the leaf comparison of [`LeafCmp`] with the query number first. The rare steps that
    /// climb back up (no label at or above the key's byte) run synchronously.
    pub(crate) fn seek_ge_batch(
        &self,
        keys: &[&[u8]],
        strict: &[bool],
        paths: &mut [Path],
        found: &mut [bool],
        cmp: &dyn Fn(usize, usize, usize, usize) -> Option<Ordering>,
    ) {
        // Per lane: the query, its level, its depth in the key, and its step.
        let mut lanes = [(0usize, 0usize, 0usize, Seek::Done); LANES];
        let mut next = 0;
        let mut active = 0;
        let root = Seek::Descend(0);
        loop {
            for lane in lanes.iter_mut() {
                if let Seek::Done = lane.3 {
                    while next < keys.len() {
                        let q = next;
                        next += 1;
                        paths[q].clear();
                        found[q] = false;
                        if self.height > 0 {
                            *lane = (q, 0, 0, root);
                            active += 1;
                            break;
                        }
                    }
                    if let Seek::Done = lane.3 {
                        continue;
                    }
                }
                let (q, level, depth, mode) = *lane;
                let key = keys[q];
                let path = &mut paths[q];
                let outcome: Option<bool> = match mode {
                    Seek::Select(node, leftmost) => {
                        let start = self
                            .s_louds
                            .select1(node.wrapping_sub(self.dense_nodes))
                            .unwrap_or(self.s_len);
                        prefetch_read(self.s_labels.as_ptr().wrapping_add(start));
                        self.s_has_child.prefetch(start);
                        if self.folded {
                            self.s_chain.prefetch(start);
                        }
                        lane.3 = if leftmost {
                            Seek::Leftmost(start)
                        } else {
                            Seek::Descend(start)
                        };
                        None
                    }
                    Seek::Leftmost(start) => {
                        path.enter(self, level, start);
                        let (p, term) = self.first_item(level, start);
                        path.push(self, p, term);
                        if term || !self.has_child(level, p) {
                            Some(true)
                        } else {
                            lane.1 = level + 1;
                            lane.3 = self.seek_child(level, p, key, true);
                            None
                        }
                    }
                    Seek::Descend(start) => {
                        let chain = path.enter(self, level, start);
                        match order_chain(self, start, chain, key, depth) {
                            Chain::Below => Some(path.next(self)),
                            Chain::Above => {
                                path.leftmost(self, level, start);
                                Some(true)
                            }
                            Chain::Matches(depth) if depth == key.len() => {
                                path.leftmost(self, level, start);
                                if strict[q] && path.term && path.pos.len() == level + 1 {
                                    Some(path.next(self))
                                } else {
                                    Some(true)
                                }
                            }
                            Chain::Matches(depth) => {
                                let b = key[depth];
                                match self.find_ge(level, start, b) {
                                    None => Some(path.next(self)),
                                    Some(p) => {
                                        path.push(self, p, false);
                                        let child = self.has_child(level, p);
                                        let above = self.label(level, p) > b;
                                        if child {
                                            lane.1 = level + 1;
                                            lane.2 = depth + 1;
                                            lane.3 = self.seek_child(level, p, key, above);
                                            None
                                        } else if above {
                                            Some(true)
                                        } else {
                                            Some(match cmp(q, level, depth + 1, p) {
                                                Some(Ordering::Less) => path.next(self),
                                                Some(Ordering::Equal) if strict[q] => {
                                                    path.next(self)
                                                }
                                                _ => true,
                                            })
                                        }
                                    }
                                }
                            }
                        }
                    }
                    Seek::Done => None,
                };
                if let Some(f) = outcome {
                    found[q] = f;
                    lane.3 = Seek::Done;
                    active -= 1;
                }
            }
            if active == 0 && next >= keys.len() {
                return;
            }
        }
    }
}

impl Trie {
    /// Seeks each of `n` start bounds (`bound(i)`: `≥` or `>` its key, the first key when
    /// unbounded) with [`seek_ge_batch`](Self::seek_ge_batch), 64 at a time on this thread's
    /// spare paths, then calls `each(i, path, found)` in order. `cmp(key, level, pos)` is the
    /// leaf comparison of [`LeafCmp`] for the seek's key. With `keyless`, the paths keep no
    /// key (see [`Path::spare_keyless`]).
    pub(crate) fn seek_ge_many<'k>(
        &self,
        n: usize,
        bound: impl Fn(usize) -> core::ops::Bound<&'k [u8]>,
        keyless: bool,
        cmp: KeyLeafCmp,
        mut each: impl FnMut(usize, &mut Path, bool),
    ) {
        const CHUNK: usize = 64;
        let mut paths = spare_paths(CHUNK.min(n), keyless);
        let mut starts: [&[u8]; CHUNK] = [&[]; CHUNK];
        let mut strict = [false; CHUNK];
        let mut found = [false; CHUNK];
        for base in (0..n).step_by(CHUNK) {
            let m = CHUNK.min(n - base);
            for i in 0..m {
                // No bound seeks like `≥` the empty key: the trie's first key.
                (starts[i], strict[i]) = bound_key(bound(base + i)).unwrap_or((&[], false));
            }
            let leaf_cmp = |q: usize, level, depth, pos| cmp(starts[q], level, depth, pos);
            self.seek_ge_batch(
                &starts[..m],
                &strict[..m],
                &mut paths[..m],
                &mut found[..m],
                &leaf_cmp,
            );
            for i in 0..m {
                each(base + i, &mut paths[i], found[i]);
            }
        }
        recycle_paths(paths);
    }
}

impl Path {
    /// Positions at the first leaf whose key is `≥ key` (`> key` when `strict`). `cmp` orders a
    /// leaf's stored key against `key` when the trie path alone matched (see [`LeafCmp`]);
    /// `None` (unknown) keeps the leaf. False when no leaf qualifies.
    pub(crate) fn seek_ge(&mut self, t: &Trie, key: &[u8], strict: bool, cmp: LeafCmp) -> bool {
        dispatch!(pc => self.seek_ge_with(pc, t, key, strict, cmp))
    }

    /// [`seek_ge`](Self::seek_ge) with one popcount for the whole descent.
    #[inline(always)]
    fn seek_ge_with<P: Popcount>(
        &mut self,
        pc: P,
        t: &Trie,
        key: &[u8],
        strict: bool,
        cmp: LeafCmp,
    ) -> bool {
        self.clear();
        if t.is_empty() {
            return false;
        }
        let mut level = 0;
        let mut start = 0;
        let mut depth = 0;
        loop {
            // Read on arrival, as an exact lookup does (see `Trie::child_hint`).
            let hint = (level >= t.dense_height).then(|| t.child_hint(start));
            let chain = self.enter(t, level, start);
            match order_chain(t, start, chain, key, depth) {
                Chain::Matches(d) => depth = d,
                Chain::Above => {
                    self.leftmost(t, level, start);
                    return true;
                }
                Chain::Below => return self.next(t),
            }
            if depth == key.len() {
                // Everything below is ≥ key; the prefix key, if any, equals it.
                self.leftmost(t, level, start);
                if strict && self.term && self.pos.len() == level + 1 {
                    return self.next(t);
                }
                return true;
            }
            let b = key[depth];
            let Some(p) = t.find_ge(level, start, b) else {
                // Every key of this node is < key: continue after the branch above.
                return self.next(t);
            };
            self.push(t, p, false);
            let child = t.has_child(level, p);
            if t.label(level, p) > b {
                if child {
                    self.leftmost(t, level + 1, t.child_with(pc, level, p));
                }
                return true;
            }
            if child {
                start = t.child_hinted(pc, level, p, hint);
                level += 1;
                depth += 1;
                continue;
            }
            return match cmp(level, depth + 1, p) {
                Some(Ordering::Less) => self.next(t),
                Some(Ordering::Equal) if strict => self.next(t),
                _ => true,
            };
        }
    }

    /// Positions at the last leaf whose key is `≤ key` (`< key` when `strict`); `cmp` as for
    /// [`seek_ge`](Self::seek_ge), `None` keeping the leaf.
    pub(crate) fn seek_le(&mut self, t: &Trie, key: &[u8], strict: bool, cmp: LeafCmp) -> bool {
        dispatch!(pc => self.seek_le_with(pc, t, key, strict, cmp))
    }

    /// [`seek_le`](Self::seek_le) with one popcount for the whole descent.
    #[inline(always)]
    fn seek_le_with<P: Popcount>(
        &mut self,
        pc: P,
        t: &Trie,
        key: &[u8],
        strict: bool,
        cmp: LeafCmp,
    ) -> bool {
        self.clear();
        if t.is_empty() {
            return false;
        }
        let mut level = 0;
        let mut start = 0;
        let mut depth = 0;
        loop {
            // Read on arrival, as an exact lookup does (see `Trie::child_hint`).
            let hint = (level >= t.dense_height).then(|| t.child_hint(start));
            let chain = self.enter(t, level, start);
            match order_chain(t, start, chain, key, depth) {
                Chain::Matches(d) => depth = d,
                Chain::Above => return self.prev(t),
                Chain::Below => {
                    self.rightmost(t, level, start);
                    return true;
                }
            }
            if depth == key.len() {
                // Everything below is > key except the prefix key, which equals it.
                let (first, term) = t.first_item(level, start);
                if !strict && term {
                    self.push(t, first, true);
                    return true;
                }
                return self.prev(t);
            }
            let b = key[depth];
            let Some(p) = t.find_le(level, start, b) else {
                let (first, term) = t.first_item(level, start);
                if term {
                    // The prefix key is key[..depth], shorter than key.
                    self.push(t, first, true);
                    return true;
                }
                return self.prev(t);
            };
            self.push(t, p, false);
            let child = t.has_child(level, p);
            if t.label(level, p) < b {
                if child {
                    self.rightmost(t, level + 1, t.child_with(pc, level, p));
                }
                return true;
            }
            if child {
                start = t.child_hinted(pc, level, p, hint);
                level += 1;
                depth += 1;
                continue;
            }
            return match cmp(level, depth + 1, p) {
                Some(Ordering::Greater) => self.prev(t),
                Some(Ordering::Equal) if strict => self.prev(t),
                _ => true,
            };
        }
    }
}
