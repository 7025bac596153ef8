//! Checking every invariant a query relies on, for trees loaded from untrusted bytes.
//!
//! The audit walks the tree depth-first from the root and requires each node and
//! out-of-line leaf to lie exactly where post-order writing would have put it: a node's child
//! subtrees in child order, then its out-of-line leaves, then the node itself, each starting
//! where the previous one ended, the last one ending the arena. That one rule rules out
//! overlapping parts, shared subtrees and cycles, and bounds the walk by the arena's size.
//! Besides, every node must have a valid layout (a Linear node's bytes strictly increasing, a
//! Bitmap node's bit count equal to its child count, a Full node 256 children), every inline
//! leaf must fit its record, every part must lie inside the arena, and the entries counted
//! must be the tree's length. Keys then iterate strictly increasing, since a trie's order is
//! its labels' order.

use super::{
    Child, Kind, LINEAR_MAX, LONG_PREFIX, LeafAt, MAX_KEY_LEN, Node, Ref, Tree, bytes, word,
};

/// A broken invariant and the byte of the arena where it was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fault {
    pub(crate) what: &'static str,
    pub(crate) at: usize,
}

fn fault(what: &'static str, at: usize) -> Fault {
    Fault { what, at }
}

impl Tree {
    /// Checks the invariants (see the module docs) in time linear in the arena.
    pub(crate) fn audit(&self) -> Result<(), Fault> {
        let a = &*self.arena;
        if self.len == 0 {
            return match (a.is_empty(), self.root.0) {
                (true, 0) => Ok(()),
                _ => Err(fault("an empty tree has an arena or a root", 0)),
            };
        }
        if !a.len().is_multiple_of(8) {
            return Err(fault("arena is not whole words", a.len()));
        }
        let mut walk = Walk {
            a,
            expect: 0,
            count: 0,
        };
        match self.root.kind() {
            Kind::Leaf => walk.leaf(LeafAt::of(self.root))?,
            _ => walk.tree(self.root)?,
        }
        if walk.expect != a.len() {
            return Err(fault("arena holds bytes no node reaches", walk.expect));
        }
        if walk.count != self.len {
            return Err(fault("entry count differs from the length", 0));
        }
        Ok(())
    }
}

struct Walk<'a> {
    a: &'a [u8],
    /// Where the next part must start.
    expect: usize,
    /// Entries seen.
    count: usize,
}

impl Walk<'_> {
    /// An out-of-line leaf, which must start at `expect`.
    fn leaf(&mut self, leaf: LeafAt) -> Result<(), Fault> {
        if leaf.at != self.expect {
            return Err(fault("leaf out of post-order place", leaf.at));
        }
        let end = leaf.at + 8 + leaf.len.next_multiple_of(8);
        if end > self.a.len() {
            return Err(fault("leaf runs past the arena", leaf.at));
        }
        self.expect = end;
        self.count += 1;
        Ok(())
    }

    /// A node's layout, before its subtree is walked.
    fn node(&self, r: Ref) -> Result<Node, Fault> {
        let a = self.a;
        let at = r.offset() * 8;
        if at >= a.len() {
            return Err(fault("node ref past the arena", at));
        }
        let node = Node::new(a, r);
        if r.plen_field() == LONG_PREFIX
            && (node.prefix > a.len() || !(LONG_PREFIX..=MAX_KEY_LEN).contains(&node.plen))
        {
            return Err(fault("bad long prefix length", node.prefix - 8));
        }
        if node.prefix + node.plen.next_multiple_of(8) > a.len() {
            return Err(fault("node runs past the arena", at));
        }
        let n = node.n();
        if r.w() < super::REF_W {
            return Err(fault("record narrower than a ref", at));
        }
        match r.kind() {
            Kind::Linear => {
                let labels = bytes(a, node.labels, n);
                if n > LINEAR_MAX || labels.windows(2).any(|p| p[0] >= p[1]) {
                    return Err(fault("linear node bytes not increasing", node.labels));
                }
            }
            Kind::Bitmap => {
                let bits: u32 = (0..4)
                    .map(|j| word(a, node.labels + 8 * j).count_ones())
                    .sum();
                if bits as usize != n {
                    return Err(fault("bitmap bit count differs from children", node.labels));
                }
            }
            Kind::Full if n != 256 => {
                return Err(fault("full node without 256 children", at));
            }
            _ => {}
        }
        Ok(node)
    }

    /// The subtree of node `root`.
    fn tree(&mut self, root: Ref) -> Result<(), Fault> {
        let mut stack = vec![(self.node(root)?, 0usize)];
        while let Some((node, i)) = stack.last_mut() {
            let node = *node;
            if *i < node.n() {
                let at = *i;
                *i += 1;
                match node.child(self.a, at) {
                    Child::Node(c) => {
                        // Checked before the walk goes down, so that a ref back up the
                        // tree (a cycle) or to a subtree already walked (sharing) is refused
                        // at once rather than walked again.
                        let at = c.offset() * 8;
                        if at < self.expect || at >= node.at {
                            return Err(fault("node out of post-order place", at));
                        }
                        let child = self.node(c)?;
                        stack.push((child, 0));
                    }
                    Child::Leaf(leaf, true) => {
                        if leaf.len + 9 > node.r.w() {
                            return Err(fault("inline leaf overflows its record", leaf.at));
                        }
                        self.count += 1;
                    }
                    Child::Leaf(_, false) => {}
                }
                continue;
            }
            stack.pop();
            for at in 0..node.n() {
                if let Child::Leaf(leaf, false) = node.child(self.a, at) {
                    self.leaf(leaf)?;
                }
            }
            if node.at != self.expect {
                return Err(fault("node out of post-order place", node.at));
            }
            self.expect = node.at + node.size();
            self.count += node.r.has_value() as usize;
        }
        Ok(())
    }
}
