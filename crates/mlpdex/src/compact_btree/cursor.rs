//! Walking a range of a [`CompactBTree`] from both ends.
//!
//! A range is a pair of positions, found by two searches when the cursor is made; a step
//! decodes the key at one end into the cursor's buffer. Each end keeps the leaf it is in and
//! the position of its key's bit among the leaf's upper parts, so a step within a leaf finds
//! the next key's bit by scanning forward (or back) from there rather than selecting from the
//! leaf's start.

use super::CompactBTree;
use super::raw::leaf::Leaf;
use crate::api::Entries;
use crate::substrate::popcount::dispatch;

/// The iterator of [`CompactBTree::range`] and [`CompactBTree::iter`]: a [`Cursor`] whose keys
/// are copied out.
pub type Range<'a> = Entries<Cursor<'a>>;

/// A cursor over a range of a [`CompactBTree`], from both ends: a lending iterator whose keys
/// borrow its buffer until the next step.
///
/// ```
/// use mlpdex::compact_btree::CompactBTree;
///
/// let map = CompactBTree::from_sorted([("a", 1), ("b", 2), ("c", 3)])?;
/// let mut c = map.cursor(..);
/// assert_eq!(c.next(), Some((&b"a"[..], 1)));
/// assert_eq!(c.next_back(), Some((&b"c"[..], 3)));
/// assert_eq!(c.remaining(), 1);
/// # Ok::<(), mlpdex::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Cursor<'a> {
    map: &'a CompactBTree,
    /// Position of the next key from the front.
    front: usize,
    /// One past the position of the next key from the back.
    back: usize,
    /// The leaf of the front key and the position of that key's upper-part bit, once known.
    front_at: Option<(Leaf<'a>, usize)>,
    /// The same for the back key (at `back - 1`).
    back_at: Option<(Leaf<'a>, usize)>,
    out: Vec<u8>,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(map: &'a CompactBTree, front: usize, back: usize) -> Self {
        Cursor {
            map,
            front,
            back: back.max(front),
            front_at: None,
            back_at: None,
            out: Vec::new(),
        }
    }

    /// Entries left between the two ends.
    pub fn remaining(&self) -> usize {
        self.back - self.front
    }

    /// The next entry from the front.
    #[allow(clippy::should_implement_trait)]
    #[inline]
    pub fn next(&mut self) -> Option<(&[u8], u64)> {
        if self.front == self.back {
            return None;
        }
        let tree = &self.map.tree;
        let (leaf, i, one) = match self.front_at {
            Some((leaf, one)) => (leaf, tree.in_leaf(self.front), one),
            None => {
                let (leaf, i) = tree.leaf_of(self.front);
                (leaf, i, dispatch!(p => leaf.select1(p, i)))
            }
        };
        self.out.clear();
        leaf.write_key_at(i, one, tree.tails(), &mut self.out);
        let value = tree.value_at(self.front);
        self.front += 1;
        // The next key's bit follows in the same leaf, unless this was the leaf's last key.
        self.front_at = (i + 1 < leaf.n).then(|| (leaf, leaf.next_one(one)));
        Some((&self.out, value))
    }

    /// The next entry from the back.
    #[inline]
    pub fn next_back(&mut self) -> Option<(&[u8], u64)> {
        if self.front == self.back {
            return None;
        }
        self.back -= 1;
        let tree = &self.map.tree;
        let (leaf, i, one) = match self.back_at {
            Some((leaf, one)) => (leaf, tree.in_leaf(self.back), one),
            None => {
                let (leaf, i) = tree.leaf_of(self.back);
                (leaf, i, dispatch!(p => leaf.select1(p, i)))
            }
        };
        self.out.clear();
        leaf.write_key_at(i, one, tree.tails(), &mut self.out);
        self.back_at = (i > 0).then(|| (leaf, leaf.prev_one(one)));
        Some((&self.out, tree.value_at(self.back)))
    }
}

crate::api::lending_cursor!(Cursor, "CompactBTree");
