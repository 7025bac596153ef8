//! Merging a sorted batch of updates into a compact B-tree: a new tree, built in one pass over
//! the old tree's leaves and the batch (the thesis' merge of two sorted sequences, §5.2.1).
//!
//! Two things make it cheaper than decoding every key into a builder:
//!
//! - **Whole leaves.** While the new tree's open leaf is empty and the next update sorts after
//!   an old leaf's last key, that leaf's keys land at the same positions within a leaf of the
//!   new tree, so its words are copied as they are (only the tail offset moves) with its
//!   values, and nothing is decoded or encoded. This is every leaf before the first update
//!   and, when updates only append (rising keys: timestamps, sequence numbers), every old leaf
//!   but the last.
//! - **Each leaf's prefix once.** A leaf that must be re-encoded is decoded key by key into a
//!   buffer that keeps the leaf's common prefix and rewrites only what follows it.
//!
//! Extra memory: the new tree's arrays as they grow, and two key buffers.

use super::Tree;
use super::build::TreeBuilder;
use super::leaf::Leaf;
use crate::Error;
use crate::substrate::popcount::{Popcount, dispatch};

/// The updates of a merge, checked to strictly increase as they are taken.
struct Updates<I, K> {
    rest: I,
    /// The next update.
    next: Option<(K, Option<u64>)>,
    /// The key of the update taken last, for the order check.
    taken: Vec<u8>,
    any_taken: bool,
}

impl<I: Iterator<Item = (K, Option<u64>)>, K: AsRef<[u8]>> Updates<I, K> {
    fn new(mut rest: I) -> Self {
        let next = rest.next();
        Updates {
            rest,
            next,
            taken: Vec::new(),
            any_taken: false,
        }
    }

    /// The next update's key.
    #[inline]
    fn key(&self) -> Option<&[u8]> {
        self.next.as_ref().map(|(k, _)| k.as_ref())
    }

    /// Takes the next update (there is one), refusing it unless it sorts after the one taken
    /// before: a batch out of order would otherwise be caught only where it breaks the new
    /// tree's order, and a repeated key only when both copies store a value.
    fn take(&mut self) -> Result<(K, Option<u64>), Error> {
        let (k, v) = self.next.take().expect("an update to take");
        let key = k.as_ref();
        if self.any_taken {
            match key.cmp(&self.taken[..]) {
                core::cmp::Ordering::Greater => {}
                core::cmp::Ordering::Equal => {
                    return Err(Error::DuplicateKey { key: key.to_vec() });
                }
                core::cmp::Ordering::Less => {
                    return Err(Error::OutOfOrder {
                        previous: self.taken.clone(),
                        got: key.to_vec(),
                    });
                }
            }
        }
        self.taken.clear();
        self.taken.extend_from_slice(key);
        self.any_taken = true;
        self.next = self.rest.next();
        Ok((k, v))
    }
}

/// `tree` with the sorted `updates` applied (`None` removes a key); keys strictly increasing,
/// else [`Error::OutOfOrder`] or [`Error::DuplicateKey`].
pub(crate) fn merged<K: AsRef<[u8]>>(
    tree: &Tree,
    updates: impl IntoIterator<Item = (K, Option<u64>)>,
) -> Result<Tree, Error> {
    dispatch!(p => merge_with(p, tree, updates.into_iter()))
}

fn merge_with<P: Popcount, K: AsRef<[u8]>>(
    p: P,
    tree: &Tree,
    updates: impl Iterator<Item = (K, Option<u64>)>,
) -> Result<Tree, Error> {
    let shift = tree.shift;
    let layer = &tree.keys;
    let tails = &layer.tails[..];
    let mut out = TreeBuilder::new(shift);
    let mut ups = Updates::new(updates);
    // An old key, its leaf's prefix kept in front of what follows it.
    let mut key = Vec::new();
    for j in 0..layer.leaves() {
        let leaf = layer.leaf(shift, j);
        let first = j << shift;
        if leaf.n == 0 {
            continue;
        }
        let words = layer.leaf_words(j);
        let values = tree.values.get(first..first + leaf.n).unwrap_or(&[]);
        if leaf.n == 1 << shift && out.at_leaf_start() {
            key.clear();
            leaf.write_key_at(leaf.n - 1, leaf.select1(p, leaf.n - 1), tails, &mut key);
            if ups.key().is_none_or(|u| u > &key[..]) && out.last().is_none_or(|l| l < &key[..]) {
                out.push_leaf(&leaf, words, tails, values, &key);
                continue;
            }
        }
        merge_leaf(p, &leaf, tails, values, &mut ups, &mut out, &mut key)?;
    }
    while ups.next.is_some() {
        let (k, v) = ups.take()?;
        if let Some(v) = v {
            out.push(k.as_ref(), v)?;
        }
    }
    Ok(out.finish())
}

/// Merges the keys of `leaf` (values `values`) with the updates that sort before its last key
/// or equal it, into `out`.
fn merge_leaf<P: Popcount, K: AsRef<[u8]>>(
    p: P,
    leaf: &Leaf<'_>,
    tails: &[u8],
    values: &[u64],
    ups: &mut Updates<impl Iterator<Item = (K, Option<u64>)>, K>,
    out: &mut TreeBuilder,
    key: &mut Vec<u8>,
) -> Result<(), Error> {
    key.clear();
    leaf.write_prefix(key);
    let mut one = leaf.select1(p, 0);
    for (i, &value) in values.iter().enumerate().take(leaf.n) {
        key.truncate(leaf.skip);
        leaf.write_rest_at(i, one, tails, key);
        one = leaf.next_one(one);
        let mut keep = true;
        while let Some(u) = ups.key() {
            let order = u.cmp(&key[..]);
            if order.is_gt() {
                break;
            }
            let (k, v) = ups.take()?;
            keep = order.is_lt();
            if let Some(v) = v {
                out.push(k.as_ref(), v)?;
            }
        }
        if keep {
            out.push(key, value)?;
        }
    }
    Ok(())
}
