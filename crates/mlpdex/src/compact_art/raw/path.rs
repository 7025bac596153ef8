//! A position in a compact ART: the nodes from the root down to one entry, with the entry's
//! key built along the way. Cursors and seeks move it one entry at a time, forwards or
//! backwards; a step goes up the path until a node has a next (or previous) child and then
//! down that child's leftmost (or rightmost) path.

use core::cmp::Ordering;

use super::{Child, LeafAt, Node, Ref, Tree, word};

/// Slot of a frame positioned on its node's own value.
const VALUE: usize = usize::MAX;

/// A node on the path, the child (or value) the path goes on through, and how long the key
/// was before the node's prefix.
#[derive(Clone, Copy, Debug)]
struct Frame {
    node: Node,
    /// Index of the child, or [`VALUE`].
    slot: usize,
    /// Byte of the child (when `slot` is one).
    label: u8,
    base: usize,
}

/// The entry a path ends at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Byte offset of the entry's value: unique to it, so two paths at the same entry have
    /// the same `id`.
    pub(crate) id: usize,
    pub(crate) value: u64,
}

/// A path to one entry, or to none.
#[derive(Clone, Debug, Default)]
pub(crate) struct Path {
    frames: Vec<Frame>,
    /// The key of the entry.
    pub(crate) key: Vec<u8>,
    pub(crate) at: Option<Entry>,
}

impl Path {
    /// Moves to the first entry (`back`: the last one) of `tree`.
    pub(crate) fn edge(&mut self, tree: &Tree, back: bool) {
        self.reset();
        if tree.len > 0 {
            match back {
                false => self.first_below(tree, tree.root),
                true => self.last_below(tree, tree.root),
            }
        }
    }

    fn reset(&mut self) {
        self.frames.clear();
        self.key.clear();
        self.at = None;
    }

    /// Enters `r`: a leaf becomes the entry (`None`); a node is pushed with its prefix.
    fn enter(&mut self, tree: &Tree, r: Ref) -> Option<Node> {
        let a = &*tree.arena;
        if r.kind() == super::Kind::Leaf {
            self.land(a, LeafAt::of(r), false);
            return None;
        }
        let node = Node::new(a, r);
        self.frames.push(Frame {
            node,
            slot: VALUE,
            label: 0,
            base: self.key.len(),
        });
        self.key.extend_from_slice(node.prefix(a));
        Some(node)
    }

    /// Ends the path at a leaf whose suffix goes after the current key.
    fn land(&mut self, a: &[u8], leaf: LeafAt, inline: bool) {
        self.key.extend_from_slice(leaf.suffix(a, inline));
        self.at = Some(Entry {
            id: leaf.at,
            value: word(a, leaf.at),
        });
    }

    /// Ends the path at the top node's own value.
    fn land_value(&mut self, tree: &Tree) {
        let f = self.frames.last_mut().expect("a node on the path");
        f.slot = VALUE;
        self.key.truncate(f.base + f.node.plen);
        self.at = Some(Entry {
            id: f.node.at,
            value: word(&tree.arena, f.node.at),
        });
    }

    /// Moves the top node to its child `i` with byte `label`: a leaf child becomes the entry
    /// (`None`), a node child is returned (not yet entered).
    fn go_child(&mut self, tree: &Tree, i: usize, label: u8) -> Option<Ref> {
        let a = &*tree.arena;
        let f = self.frames.last_mut().expect("a node on the path");
        f.slot = i;
        f.label = label;
        let node = f.node;
        self.key.truncate(f.base + node.plen);
        self.key.push(label);
        match node.child(a, i) {
            Child::Node(c) => Some(c),
            Child::Leaf(leaf, inline) => {
                self.land(a, leaf, inline);
                None
            }
        }
    }

    /// Goes down to the first entry at or below `r`.
    fn first_below(&mut self, tree: &Tree, mut r: Ref) {
        while let Some(node) = self.enter(tree, r) {
            match self.first_in_top(tree, node) {
                Some(c) => r = c,
                None => return,
            }
        }
    }

    /// Moves to the top node's first entry: its value, or its first child (returned when a
    /// node).
    fn first_in_top(&mut self, tree: &Tree, node: Node) -> Option<Ref> {
        if node.r.has_value() {
            self.land_value(tree);
            return None;
        }
        let label = node.label(&tree.arena, 0);
        self.go_child(tree, 0, label)
    }

    /// Goes down to the last entry at or below `r`.
    fn last_below(&mut self, tree: &Tree, mut r: Ref) {
        while let Some(node) = self.enter(tree, r) {
            match self.last_in_top(tree, node) {
                Some(c) => r = c,
                None => return,
            }
        }
    }

    fn last_in_top(&mut self, tree: &Tree, node: Node) -> Option<Ref> {
        let i = node.n() - 1;
        let label = node.label(&tree.arena, i);
        self.go_child(tree, i, label)
    }

    /// Moves to the next entry; false (and no entry) past the last.
    pub(crate) fn step(&mut self, tree: &Tree) -> bool {
        let a = &*tree.arena;
        while let Some(f) = self.frames.last() {
            let next = match f.slot {
                VALUE => Some((0, f.node.label(a, 0))),
                i => f.node.next_label(a, i, f.label),
            };
            if let Some((i, label)) = next {
                if let Some(c) = self.go_child(tree, i, label) {
                    self.first_below(tree, c);
                }
                return true;
            }
            self.frames.pop();
        }
        self.at = None;
        false
    }

    /// Moves to the previous entry; false (and no entry) before the first.
    pub(crate) fn step_back(&mut self, tree: &Tree) -> bool {
        let a = &*tree.arena;
        while let Some(f) = self.frames.last() {
            if f.slot != VALUE {
                if let Some((i, label)) = f.node.prev_label(a, f.slot, f.label) {
                    if let Some(c) = self.go_child(tree, i, label) {
                        self.last_below(tree, c);
                    }
                    return true;
                }
                if f.node.r.has_value() {
                    self.land_value(tree);
                    return true;
                }
            }
            self.frames.pop();
        }
        self.at = None;
        false
    }

    /// Moves to the first entry `>= key` (`> key` when `strict`); false when there is none.
    pub(crate) fn seek_ge(&mut self, tree: &Tree, key: &[u8], strict: bool) -> bool {
        self.reset();
        if tree.len == 0 {
            return false;
        }
        let a = &*tree.arena;
        let mut r = tree.root;
        let mut d = 0;
        // How the entry the path reached compares with `key` once it reached a leaf.
        let at_leaf = |p: &mut Path, d: usize| -> bool {
            let len = p.key.len();
            let ord = p.key[len.min(d)..].cmp(&key[d.min(key.len())..]);
            match ord {
                Ordering::Greater => true,
                Ordering::Equal if !strict => true,
                _ => p.step(tree),
            }
        };
        loop {
            let Some(node) = self.enter(tree, r) else {
                return at_leaf(self, d);
            };
            let prefix = node.prefix(a);
            let rest = &key[d..];
            let m = prefix.len().min(rest.len());
            match prefix[..m].cmp(&rest[..m]) {
                Ordering::Less => {
                    self.frames.pop();
                    return self.step(tree);
                }
                Ordering::Greater => return self.first_from_top(tree, node),
                Ordering::Equal if m < prefix.len() => return self.first_from_top(tree, node),
                Ordering::Equal => {}
            }
            d += node.plen;
            let Some(&b) = key.get(d) else {
                if node.r.has_value() {
                    self.land_value(tree);
                    return !strict || self.step(tree);
                }
                return self.first_from_top(tree, node);
            };
            match node.label_ge(a, b) {
                None => {
                    self.frames.pop();
                    return self.step(tree);
                }
                Some((i, label)) if label > b => {
                    if let Some(c) = self.go_child(tree, i, label) {
                        self.first_below(tree, c);
                    }
                    return true;
                }
                Some((i, label)) => {
                    d += 1;
                    match self.go_child(tree, i, label) {
                        Some(c) => r = c,
                        None => return at_leaf(self, d),
                    }
                }
            }
        }
    }

    /// The first entry of the top node's subtree, which is already on the path.
    fn first_from_top(&mut self, tree: &Tree, node: Node) -> bool {
        if let Some(c) = self.first_in_top(tree, node) {
            self.first_below(tree, c);
        }
        true
    }

    /// Moves to the last entry `<= key` (`< key` when `strict`); false when there is none.
    pub(crate) fn seek_le(&mut self, tree: &Tree, key: &[u8], strict: bool) -> bool {
        self.reset();
        if tree.len == 0 {
            return false;
        }
        let a = &*tree.arena;
        let mut r = tree.root;
        let mut d = 0;
        let at_leaf = |p: &mut Path, d: usize| -> bool {
            let len = p.key.len();
            let ord = p.key[len.min(d)..].cmp(&key[d.min(key.len())..]);
            match ord {
                Ordering::Less => true,
                Ordering::Equal if !strict => true,
                _ => p.step_back(tree),
            }
        };
        loop {
            let Some(node) = self.enter(tree, r) else {
                return at_leaf(self, d);
            };
            let prefix = node.prefix(a);
            let rest = &key[d..];
            let m = prefix.len().min(rest.len());
            match prefix[..m].cmp(&rest[..m]) {
                Ordering::Less => {
                    if let Some(c) = self.last_in_top(tree, node) {
                        self.last_below(tree, c);
                    }
                    return true;
                }
                Ordering::Greater => {
                    self.frames.pop();
                    return self.step_back(tree);
                }
                Ordering::Equal if m < prefix.len() => {
                    self.frames.pop();
                    return self.step_back(tree);
                }
                Ordering::Equal => {}
            }
            d += node.plen;
            let Some(&b) = key.get(d) else {
                if node.r.has_value() && !strict {
                    self.land_value(tree);
                    return true;
                }
                self.frames.pop();
                return self.step_back(tree);
            };
            match node.label_le(a, b) {
                None => {
                    if node.r.has_value() {
                        self.land_value(tree);
                        return true;
                    }
                    self.frames.pop();
                    return self.step_back(tree);
                }
                Some((i, label)) if label < b => {
                    if let Some(c) = self.go_child(tree, i, label) {
                        self.last_below(tree, c);
                    }
                    return true;
                }
                Some((i, label)) => {
                    d += 1;
                    match self.go_child(tree, i, label) {
                        Some(c) => r = c,
                        None => return at_leaf(self, d),
                    }
                }
            }
        }
    }
}
