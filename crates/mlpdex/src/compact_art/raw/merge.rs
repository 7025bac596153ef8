//! Merging a sorted batch of updates into a compact ART, as a trie merge (thesis §5.2.1):
//! the new tree is written in one pass over the old one, and only where an update lands.
//!
//! The walk goes down the old tree along the updates. A subtree no update reaches is copied
//! whole: its bytes are one contiguous run of the old arena (post-order puts a subtree before
//! its root, nothing else in between), so it is one copy plus a pass that shifts the refs
//! inside it. A node some updates reach is rebuilt from its old children, copied or merged in
//! turn, and the new keys between them; its layout and record width are chosen afresh.
//! Updates that leave a node's prefix get a new node of the shared part, the old subtree
//! below it with its prefix shortened and merged with the updates that follow it (copied
//! whole when none do, as when keys arrive in increasing order). Where an update lands on a
//! leaf, or the walk is deep, the keys of that subtree are decoded and built again by the
//! streaming builder, in place in the new arena. A node
//! left with one child and no value is merged into that child (path compression holds after
//! deletes too).
//!
//! Work is proportional to the updates and to the nodes on their paths, plus a copy of
//! everything else; memory beyond the new tree is the batch itself and one frame per level.

use core::ops::Range;

use super::build::{Builder, Frame, Kid, emit_leaf, emit_node, pad};
use super::{Child, Kind, LONG_PREFIX, LeafAt, MAX_KEY_LEN, Node, Ref, Tree, bytes, word};
use crate::Error;
use crate::substrate::Frozen;

/// Deeper than this, a touched subtree is rebuilt rather than walked (bounds the recursion).
const MAX_DEPTH: usize = 200;

/// A sorted batch of updates: `None` deletes the key.
#[derive(Debug, Default)]
struct Updates {
    bytes: Vec<u8>,
    /// End of each key in `bytes`.
    ends: Vec<usize>,
    values: Vec<Option<u64>>,
}

impl Updates {
    fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }
}

/// What the old tree has at a place.
#[derive(Clone, Copy, Debug)]
enum Old {
    None,
    Node(Ref),
    /// A leaf (inline or not): value offset, suffix offset and length.
    Leaf {
        value_at: usize,
        at: usize,
        len: usize,
    },
}

impl Old {
    fn of(child: Child) -> Old {
        match child {
            Child::Node(r) => Old::Node(r),
            Child::Leaf(leaf, inline) => Old::Leaf {
                value_at: leaf.at,
                at: leaf.at + 8 + inline as usize,
                len: leaf.len,
            },
        }
    }
}

struct Merger<'a> {
    old: &'a [u8],
    ups: Updates,
    arena: Vec<u8>,
    /// Keys of the new tree.
    len: usize,
    /// Frames and a key buffer to reuse.
    spare: Vec<Frame>,
    scratch: Vec<u8>,
}

impl Tree {
    /// The tree with `updates` applied: each `(key, Some(v))` stores `v` under `key`, each
    /// `(key, None)` removes `key`; keys strictly increasing (else [`Error::OutOfOrder`] or
    /// [`Error::DuplicateKey`]).
    pub(crate) fn merged<K: AsRef<[u8]>>(
        &self,
        updates: impl IntoIterator<Item = (K, Option<u64>)>,
    ) -> Result<Tree, Error> {
        let mut ups = Updates::default();
        for (k, v) in updates {
            let k = k.as_ref();
            if k.len() > MAX_KEY_LEN {
                return Err(Error::KeyTooLong {
                    len: k.len(),
                    max: MAX_KEY_LEN,
                });
            }
            if let Some(last) = ups.ends.len().checked_sub(1) {
                let prev = ups.key(last);
                match k.cmp(prev) {
                    core::cmp::Ordering::Less => {
                        return Err(Error::OutOfOrder {
                            previous: prev.to_vec(),
                            got: k.to_vec(),
                        });
                    }
                    core::cmp::Ordering::Equal => {
                        return Err(Error::DuplicateKey { key: k.to_vec() });
                    }
                    core::cmp::Ordering::Greater => {}
                }
            }
            ups.bytes.extend_from_slice(k);
            ups.ends.push(ups.bytes.len());
            ups.values.push(v);
        }
        let n = ups.values.len();
        let mut m = Merger {
            old: &self.arena,
            ups,
            arena: Vec::with_capacity(self.arena.len() + self.arena.len() / 8),
            len: 0,
            spare: Vec::new(),
            scratch: Vec::new(),
        };
        let old = match self.len {
            0 => Old::None,
            _ => match self.root.kind() {
                Kind::Leaf => Old::of(Child::Leaf(LeafAt::of(self.root), false)),
                _ => Old::Node(self.root),
            },
        };
        let mut path = Vec::new();
        let mut suffixes = Vec::new();
        let root = match m.subtree(old, 0, &mut path, 0..n, &mut suffixes, 0)? {
            None => return Ok(Tree::empty()),
            Some(Kid::Node(r)) => r,
            Some(Kid::Leaf { value, start, len }) => {
                let at = m.arena.len() / 8;
                emit_leaf(&mut m.arena, value, &suffixes[start..start + len]);
                Ref::leaf(at, len)
            }
        };
        let tree = Tree {
            arena: Frozen::from(m.arena),
            root,
            len: m.len,
        };
        debug_assert_eq!(
            tree.audit(),
            Ok(()),
            "a merge wrote a tree the loader would refuse"
        );
        Ok(tree)
    }
}

impl Merger<'_> {
    /// The new form of the subtree at `path` (the key bytes above it, the last one the byte
    /// that leads to it), whose old form is `old` and whose updates are `ups` (all starting
    /// with `path`): a kid for the parent, a leaf's suffix appended to `suffixes`; `None`
    /// when nothing is left. An old node's first `skip` prefix bytes are already in `path`
    /// (a split above consumed them).
    fn subtree(
        &mut self,
        old: Old,
        skip: usize,
        path: &mut Vec<u8>,
        ups: Range<usize>,
        suffixes: &mut Vec<u8>,
        depth: usize,
    ) -> Result<Option<Kid>, Error> {
        if ups.is_empty() {
            return Ok(match self.copy(old, suffixes) {
                Some(Kid::Node(r)) if skip > 0 => Some(Kid::Node(self.set_prefix(r, &[], skip))),
                kid => kid,
            });
        }
        let Old::Node(r) = old else {
            return self.rebuild(old, skip, path, ups, suffixes);
        };
        let a = self.old;
        let node = Node::new(a, r);
        let prefix = &node.prefix(a)[skip..];
        let d = path.len();
        let under = |m: &Merger<'_>, i: usize| {
            let k = m.ups.key(i);
            k.len() >= d + prefix.len() && &k[d..d + prefix.len()] == prefix
        };
        if depth >= MAX_DEPTH {
            return self.rebuild(old, skip, path, ups, suffixes);
        }
        if !under(self, ups.start) || !under(self, ups.end - 1) {
            return self.split(r, skip, path, ups, suffixes, depth);
        }
        let q = d + prefix.len();
        path.extend_from_slice(prefix);
        let mut frame = self.spare.pop().unwrap_or_default();
        frame.value = node.value(a);
        frame.labels.clear();
        frame.kids.clear();
        frame.suffixes.clear();
        let mut i = ups.start;
        if self.ups.key(i).len() == q {
            frame.value = self.ups.values[i];
            i += 1;
        }
        self.len += frame.value.is_some() as usize;
        // Old children and groups of updates, by byte.
        let mut c = 0;
        let mut labels = node.labels(a);
        let mut old_label = labels.next(a);
        loop {
            let up_label = (i < ups.end).then(|| self.ups.key(i)[q]);
            // The old children before the next update's byte are copied as they are.
            while let Some(l) = old_label.filter(|&l| up_label.is_none_or(|u| l < u)) {
                self.copy_child(node.child(a, c), l, &mut frame);
                c += 1;
                old_label = labels.next(a);
            }
            let Some(b) = up_label else { break };
            let j = (i..ups.end)
                .find(|&j| self.ups.key(j)[q] != b)
                .unwrap_or(ups.end);
            let child = match old_label {
                Some(l) if l == b => {
                    let child = Old::of(node.child(a, c));
                    c += 1;
                    old_label = labels.next(a);
                    child
                }
                _ => Old::None,
            };
            path.push(b);
            let kid = self.subtree(child, 0, path, i..j, &mut frame.suffixes, depth + 1)?;
            path.pop();
            if let Some(kid) = kid {
                frame.labels.push(b);
                frame.kids.push(kid);
            }
            i = j;
        }
        path.truncate(d);
        self.finish(frame, prefix, suffixes)
    }

    /// The kid a node of `prefix` with `frame`'s children and value becomes: nothing, a leaf
    /// (only its value left), its one child with the prefix in front, or the node.
    fn finish(
        &mut self,
        frame: Frame,
        prefix: &[u8],
        suffixes: &mut Vec<u8>,
    ) -> Result<Option<Kid>, Error> {
        let out = match (frame.kids.len(), frame.value) {
            (0, None) => None,
            (0, Some(v)) => {
                let start = suffixes.len();
                suffixes.extend_from_slice(prefix);
                Some(Kid::Leaf {
                    value: v,
                    start,
                    len: prefix.len(),
                })
            }
            (1, None) => Some(self.collapse(prefix, &frame, suffixes)),
            _ => Some(Kid::Node(emit_node(&mut self.arena, &frame, prefix)?)),
        };
        self.spare.push(frame);
        Ok(out)
    }

    /// Updates below `path` of which some leave node `r`'s prefix (from byte `skip` on, call
    /// it `prefix`) at its byte `l`: a new node of the shared `prefix[..l]` whose
    /// children are the old subtree, under byte `prefix[l]` with its prefix cut after that
    /// byte and merged with the updates through it (copied whole when there are none, as
    /// for keys arriving in increasing order), and the other updates' subtrees.
    fn split(
        &mut self,
        r: Ref,
        skip: usize,
        path: &mut Vec<u8>,
        ups: Range<usize>,
        suffixes: &mut Vec<u8>,
        depth: usize,
    ) -> Result<Option<Kid>, Error> {
        let a = self.old;
        let prefix = &Node::new(a, r).prefix(a)[skip..];
        let d = path.len();
        let shared = |k: &[u8]| {
            k[d..]
                .iter()
                .zip(prefix)
                .take_while(|(a, b)| a == b)
                .count()
        };
        let l = shared(self.ups.key(ups.start)).min(shared(self.ups.key(ups.end - 1)));
        debug_assert!(l < prefix.len(), "the updates are not all below the prefix");
        let (q, old_label) = (d + l, prefix[l]);
        let mut frame = self.spare.pop().unwrap_or_default();
        frame.labels.clear();
        frame.kids.clear();
        frame.suffixes.clear();
        frame.value = None;
        // Sorted, so a key ending where the prefixes part is the first update.
        let mut i = ups.start;
        if self.ups.key(i).len() == q {
            frame.value = self.ups.values[i];
            self.len += frame.value.is_some() as usize;
            i += 1;
        }
        path.extend_from_slice(&prefix[..l]);
        let mut old_left = true;
        loop {
            // The next group of updates by byte, the old subtree in its place among them.
            let b = match (i < ups.end).then(|| self.ups.key(i)[q]) {
                Some(u) if !old_left || u < old_label => u,
                _ if old_left => old_label,
                _ => break,
            };
            let j = (i..ups.end)
                .find(|&j| self.ups.key(j)[q] != b)
                .unwrap_or(ups.end);
            path.push(b);
            let kid = if b == old_label && old_left {
                old_left = false;
                self.subtree(
                    Old::Node(r),
                    skip + l + 1,
                    path,
                    i..j,
                    &mut frame.suffixes,
                    depth + 1,
                )?
            } else {
                self.subtree(Old::None, 0, path, i..j, &mut frame.suffixes, depth + 1)?
            };
            path.pop();
            if let Some(kid) = kid {
                frame.labels.push(b);
                frame.kids.push(kid);
            }
            i = j;
        }
        path.truncate(d);
        self.finish(frame, &prefix[..l], suffixes)
    }

    /// Node `r`, the last thing written, with its prefix replaced by the bytes of `front`
    /// followed by its own prefix from byte `skip` on.
    fn set_prefix(&mut self, r: Ref, front: &[&[u8]], skip: usize) -> Ref {
        let node = Node::new(&self.arena, r);
        let own = bytes(&self.arena, node.prefix, node.plen)[skip..].to_vec();
        let cut = node.prefix - 8 * (r.plen_field() == LONG_PREFIX) as usize;
        debug_assert_eq!(node.at + node.size(), self.arena.len());
        self.arena.truncate(cut);
        let plen = front.iter().map(|f| f.len()).sum::<usize>() + own.len();
        if plen >= LONG_PREFIX {
            self.arena.extend_from_slice(&(plen as u64).to_le_bytes());
        }
        for f in front {
            self.arena.extend_from_slice(f);
        }
        self.arena.extend_from_slice(&own);
        pad(&mut self.arena);
        Ref::node(r.kind(), r.offset(), r.n(), r.w(), r.has_value(), plen)
    }

    /// A node of `prefix` left with one child and no value, as that child with the prefix
    /// and its byte put in front of its own.
    fn collapse(&mut self, prefix: &[u8], frame: &Frame, suffixes: &mut Vec<u8>) -> Kid {
        let b = frame.labels[0];
        match frame.kids[0] {
            Kid::Leaf { value, start, len } => {
                let at = suffixes.len();
                suffixes.extend_from_slice(prefix);
                suffixes.push(b);
                suffixes.extend_from_slice(&frame.suffixes[start..start + len]);
                Kid::Leaf {
                    value,
                    start: at,
                    len: prefix.len() + 1 + len,
                }
            }
            // The child's node is the last thing written: its prefix is rewritten in place.
            Kid::Node(r) => Kid::Node(self.set_prefix(r, &[prefix, &[b]], 0)),
        }
    }

    /// Old child `child` with byte `label`, unchanged, appended to `frame`.
    #[inline]
    fn copy_child(&mut self, child: Child, label: u8, frame: &mut Frame) {
        frame.labels.push(label);
        let kid = match child {
            Child::Leaf(leaf, inline) => {
                self.len += 1;
                leaf_kid(
                    &mut frame.suffixes,
                    leaf.suffix(self.old, inline),
                    word(self.old, leaf.at),
                )
            }
            Child::Node(r) => Kid::Node(self.copy_node(r)),
        };
        frame.kids.push(kid);
    }

    /// `old` unchanged, as a kid of the new tree.
    fn copy(&mut self, old: Old, suffixes: &mut Vec<u8>) -> Option<Kid> {
        match old {
            Old::None => None,
            Old::Leaf { value_at, at, len } => {
                self.len += 1;
                let start = suffixes.len();
                suffixes.extend_from_slice(bytes(self.old, at, len));
                Some(Kid::Leaf {
                    value: word(self.old, value_at),
                    start,
                    len,
                })
            }
            Old::Node(r) => Some(Kid::Node(self.copy_node(r))),
        }
    }

    /// Copies the subtree of node `r` to the end of the new arena and shifts the refs in it.
    fn copy_node(&mut self, r: Ref) -> Ref {
        let a = self.old;
        let start = subtree_start(a, r);
        let node = Node::new(a, r);
        let end = node.at + node.size();
        let at = self.arena.len();
        self.arena.extend_from_slice(&a[start..end]);
        let shift = (at / 8) as u64;
        let back = (start / 8) as u64;
        let moved = |x: Ref| Ref(x.0 - back + shift);
        // Every node of the copy: shift each ref its records hold, count its entries.
        let mut stack = vec![moved(r)];
        while let Some(r) = stack.pop() {
            let node = Node::new(&self.arena, r);
            self.len += node.r.has_value() as usize;
            let w = r.w();
            for i in 0..node.n() {
                let rec = node.records + i * w;
                match node.child(&self.arena, i) {
                    Child::Leaf(_, true) => self.len += 1,
                    Child::Leaf(_, false) | Child::Node(_) => {
                        let old = Ref(word(&self.arena, rec));
                        let new = moved(old);
                        self.arena[rec..rec + 8].copy_from_slice(&new.0.to_le_bytes());
                        match new.kind() {
                            Kind::Leaf => self.len += 1,
                            _ => stack.push(new),
                        }
                    }
                }
            }
        }
        moved(r)
    }

    /// The subtree at `path` built again from its old keys and its updates.
    fn rebuild(
        &mut self,
        old: Old,
        skip: usize,
        path: &[u8],
        ups: Range<usize>,
        suffixes: &mut Vec<u8>,
    ) -> Result<Option<Kid>, Error> {
        let d = path.len();
        if ups.len() == 1 && !matches!(old, Old::Node(_)) {
            return self.one_update(old, d, ups.start, suffixes);
        }
        // The old entries below `path`, as (key after `path`, value).
        let mut entries: Vec<(Vec<u8>, u64)> = Vec::new();
        match old {
            Old::None => {}
            Old::Leaf { value_at, at, len } => {
                entries.push((bytes(self.old, at, len).to_vec(), word(self.old, value_at)));
            }
            Old::Node(r) => {
                let mut key = Vec::new();
                // Keys relative to the node start with its whole prefix; `skip` of it is in
                // `path` already.
                for_each_entry(self.old, r, &mut key, &mut |k, v| {
                    entries.push((k[skip..].to_vec(), v))
                });
            }
        }
        // Merge with the updates.
        let mut merged: Vec<(Vec<u8>, u64)> = Vec::with_capacity(entries.len() + ups.len());
        let mut e = entries.into_iter().peekable();
        for u in ups {
            let key = &self.ups.key(u)[d..];
            while let Some((k, v)) = e.next_if(|(k, _)| k.as_slice() < key) {
                merged.push((k, v));
            }
            let _ = e.next_if(|(k, _)| k.as_slice() == key);
            if let Some(v) = self.ups.values[u] {
                merged.push((key.to_vec(), v));
            }
        }
        merged.extend(e);
        self.len += merged.len();
        match merged.len() {
            0 => Ok(None),
            1 => {
                let (k, value) = merged.pop().expect("one entry");
                let start = suffixes.len();
                suffixes.extend_from_slice(&k);
                Ok(Some(Kid::Leaf {
                    value,
                    start,
                    len: k.len(),
                }))
            }
            _ => {
                let mut b = Builder::with_arena(core::mem::take(&mut self.arena));
                for (k, v) in &merged {
                    b.push(k, *v)?;
                }
                let (arena, root, _) = b.finish_into()?;
                self.arena = arena;
                Ok(Some(Kid::Node(root)))
            }
        }
    }
}

impl Merger<'_> {
    /// The common case of [`rebuild`](Self::rebuild), without allocating: one update at a
    /// place holding nothing or a leaf.
    fn one_update(
        &mut self,
        old: Old,
        d: usize,
        u: usize,
        suffixes: &mut Vec<u8>,
    ) -> Result<Option<Kid>, Error> {
        let mut key = core::mem::take(&mut self.scratch);
        key.clear();
        key.extend_from_slice(&self.ups.key(u)[d..]);
        let update = self.ups.values[u];
        let out = match old {
            Old::Leaf { value_at, at, len } => {
                let (old_key, old_value) = (bytes(self.old, at, len), word(self.old, value_at));
                match (old_key == &key[..], update) {
                    (true, None) => None,
                    (true, Some(v)) => Some(leaf_kid(suffixes, &key, v)),
                    (false, None) => Some(leaf_kid(suffixes, old_key, old_value)),
                    (false, Some(v)) => {
                        self.len += 1;
                        Some(if old_key < &key[..] {
                            self.pair(old_key, old_value, &key, v)?
                        } else {
                            self.pair(&key, v, old_key, old_value)?
                        })
                    }
                }
            }
            _ => update.map(|v| leaf_kid(suffixes, &key, v)),
        };
        self.len += out.is_some() as usize;
        self.scratch = key;
        Ok(out)
    }

    /// A node of the two keys `k1 < k2`.
    fn pair(&mut self, k1: &[u8], v1: u64, k2: &[u8], v2: u64) -> Result<Kid, Error> {
        let l = k1.iter().zip(k2).take_while(|(a, b)| a == b).count();
        let mut frame = self.spare.pop().unwrap_or_default();
        frame.labels.clear();
        frame.kids.clear();
        frame.suffixes.clear();
        frame.value = None;
        if k1.len() == l {
            frame.value = Some(v1);
        } else {
            frame.labels.push(k1[l]);
            let kid = leaf_kid(&mut frame.suffixes, &k1[l + 1..], v1);
            frame.kids.push(kid);
        }
        frame.labels.push(k2[l]);
        let kid = leaf_kid(&mut frame.suffixes, &k2[l + 1..], v2);
        frame.kids.push(kid);
        let r = emit_node(&mut self.arena, &frame, &k1[..l])?;
        self.spare.push(frame);
        Ok(Kid::Node(r))
    }
}

/// A leaf kid with `suffix`, appended to `suffixes`.
fn leaf_kid(suffixes: &mut Vec<u8>, suffix: &[u8], value: u64) -> Kid {
    let start = suffixes.len();
    suffixes.extend_from_slice(suffix);
    Kid::Leaf {
        value,
        start,
        len: suffix.len(),
    }
}

/// Where the subtree of node `r` starts in the arena: post-order writes a node's child
/// subtrees first, then its out-of-line leaves, then the node.
fn subtree_start(a: &[u8], mut r: Ref) -> usize {
    'down: loop {
        let node = Node::new(a, r);
        let mut first_leaf = None;
        for i in 0..node.n() {
            match node.child(a, i) {
                Child::Node(c) => {
                    r = c;
                    continue 'down;
                }
                Child::Leaf(leaf, false) if first_leaf.is_none() => first_leaf = Some(leaf.at),
                _ => {}
            }
        }
        return first_leaf.unwrap_or(node.at);
    }
}

/// Calls `f` with every entry below node `r`, keys relative to the node (its prefix first),
/// in order.
fn for_each_entry(a: &[u8], r: Ref, key: &mut Vec<u8>, f: &mut dyn FnMut(&[u8], u64)) {
    key.clear();
    // (node, next child, key length before the node's prefix)
    let mut stack: Vec<(Node, usize, usize)> = Vec::new();
    let enter = |stack: &mut Vec<(Node, usize, usize)>, key: &mut Vec<u8>, r: Ref| {
        let node = Node::new(a, r);
        stack.push((node, 0, key.len()));
        key.extend_from_slice(node.prefix(a));
        node
    };
    let node = enter(&mut stack, key, r);
    if let Some(v) = node.value(a) {
        f(key, v);
    }
    while let Some(top) = stack.last_mut() {
        let (node, i, base) = *top;
        if i == node.n() {
            stack.pop();
            continue;
        }
        top.1 += 1;
        key.truncate(base + node.plen);
        key.push(node.label(a, i));
        match node.child(a, i) {
            Child::Leaf(leaf, inline) => {
                key.extend_from_slice(leaf.suffix(a, inline));
                f(key, word(a, leaf.at));
            }
            Child::Node(c) => {
                let child = enter(&mut stack, key, c);
                if let Some(v) = child.value(a) {
                    f(key, v);
                }
            }
        }
    }
}
