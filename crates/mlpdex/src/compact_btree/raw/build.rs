//! Building a compact B-tree in one pass over sorted keys: keys gather in the open leaf of
//! layer 0, which is encoded once it holds `2^shift` of them (the last one when the input
//! ends); the upper layers are built at the end from the first keys of the leaves below.
//!
//! Memory while building: the finished arrays as they grow (`Vec`s, so up to twice their final
//! size just before a reallocation, trimmed at the end), the open leaf's keys, and a copy of
//! the last closed leaf's last key (the order check reads the open leaf's last key otherwise).
//!
//! A merge can also append a finished leaf of another tree with the same `shift` whole
//! ([`TreeBuilder::push_leaf`]): its words are copied with their tail offset moved, nothing
//! is decoded or encoded.

use super::leaf::{self, Scratch};
use super::{Layer, Route, Tree};
use crate::Error;
use crate::substrate::popcount::dispatch;

/// One layer under construction.
#[derive(Debug)]
struct LayerBuilder {
    shift: u32,
    len: usize,
    /// The open leaf's keys, concatenated, and where each ends.
    open: Vec<u8>,
    open_ends: Vec<usize>,
    leaf_at: Vec<u64>,
    words: Vec<u64>,
    tails: Vec<u8>,
    scratch: Scratch,
    /// The last key of the last closed leaf, once one closed.
    closed_last: Option<Vec<u8>>,
}

impl LayerBuilder {
    fn new(shift: u32) -> LayerBuilder {
        LayerBuilder {
            shift,
            len: 0,
            open: Vec::new(),
            open_ends: Vec::with_capacity(1 << shift),
            leaf_at: vec![0],
            words: Vec::new(),
            tails: Vec::new(),
            scratch: Scratch::default(),
            closed_last: None,
        }
    }

    /// The last key appended, if any.
    fn last(&self) -> Option<&[u8]> {
        match *self.open_ends.as_slice() {
            [] => self.closed_last.as_deref(),
            [end] => Some(&self.open[..end]),
            [.., start, end] => Some(&self.open[start..end]),
        }
    }

    /// Appends leaf `leaf` of another layer, whose tails are `tails`, whole: it must be full
    /// (`2^shift` keys), this layer's open leaf empty, and `last` the leaf's last key, sorting
    /// after every key so far.
    fn push_leaf(&mut self, leaf: &leaf::Leaf<'_>, words: &[u64], tails: &[u8], last: &[u8]) {
        debug_assert!(self.open_ends.is_empty() && leaf.n == 1 << self.shift);
        debug_assert!(self.last().is_none_or(|prev| prev < last));
        let (from, to) = (leaf.tail_at, leaf.tail_range(leaf.n - 1).1);
        let at = self.words.len();
        self.words.extend_from_slice(words);
        // Word 1 of a leaf is where its tails start in its layer's tail bytes.
        self.words[at + 1] = self.tails.len() as u64;
        self.tails
            .extend_from_slice(tails.get(from..to).unwrap_or(&[]));
        self.leaf_at.push(self.words.len() as u64);
        self.len += leaf.n;
        let prev = self.closed_last.get_or_insert_with(Vec::new);
        prev.clear();
        prev.extend_from_slice(last);
    }

    /// Appends a key sorting after every key so far.
    fn push(&mut self, key: &[u8]) {
        self.open.extend_from_slice(key);
        self.open_ends.push(self.open.len());
        self.len += 1;
        if self.open_ends.len() == 1 << self.shift {
            self.close_leaf();
        }
    }

    /// Encodes the open leaf.
    fn close_leaf(&mut self) {
        if self.open_ends.is_empty() {
            return;
        }
        let (open, ends) = (&self.open, &self.open_ends);
        let keys = (0..ends.len()).map(|i| {
            let start = if i == 0 { 0 } else { ends[i - 1] };
            &open[start..ends[i]]
        });
        leaf::encode(keys, &mut self.words, &mut self.tails, &mut self.scratch);
        self.leaf_at.push(self.words.len() as u64);
        let start = ends.len().checked_sub(2).map_or(0, |i| ends[i]);
        let last = self.closed_last.get_or_insert_with(Vec::new);
        last.clear();
        last.extend_from_slice(&open[start..]);
        self.open.clear();
        self.open_ends.clear();
    }

    fn finish(mut self) -> Layer {
        self.close_leaf();
        self.leaf_at.shrink_to_fit();
        self.words.shrink_to_fit();
        self.tails.shrink_to_fit();
        Layer {
            len: self.len,
            leaf_at: self.leaf_at.into(),
            words: self.words.into(),
            tails: self.tails.into(),
        }
    }
}

/// The layers above `keys`, built from the first keys of its leaves, bottom first.
pub(crate) fn upper_layers(keys: &Layer, shift: u32) -> Vec<Layer> {
    let mut out: Vec<Layer> = Vec::new();
    let mut key = Vec::new();
    loop {
        let below = out.last().unwrap_or(keys);
        if below.leaves() <= 1 {
            return out;
        }
        let mut b = LayerBuilder::new(shift);
        for j in 0..below.leaves() {
            key.clear();
            let leaf = below.leaf(shift, j);
            dispatch!(p => leaf.write_key(p, 0, &below.tails, &mut key));
            b.push(&key);
        }
        out.push(b.finish());
    }
}

/// A tree under construction.
#[derive(Debug)]
pub(crate) struct TreeBuilder {
    keys: LayerBuilder,
    values: Vec<u64>,
}

impl TreeBuilder {
    /// A builder of leaves of `2^shift` keys (`shift` in [`super::SHIFTS`]).
    pub(crate) fn new(shift: u32) -> TreeBuilder {
        debug_assert!(super::SHIFTS.contains(&shift));
        TreeBuilder {
            keys: LayerBuilder::new(shift),
            values: Vec::new(),
        }
    }

    /// Keys accepted so far.
    pub(crate) fn len(&self) -> usize {
        self.values.len()
    }

    /// The last key accepted, if any.
    pub(crate) fn last(&self) -> Option<&[u8]> {
        self.keys.last()
    }

    /// Appends `key` with `value`: it must sort strictly after the previous key. A refused key
    /// leaves the builder as it was.
    pub(crate) fn push(&mut self, key: &[u8], value: u64) -> Result<(), Error> {
        if let Some(prev) = self.keys.last() {
            match key.cmp(prev) {
                core::cmp::Ordering::Greater => {}
                core::cmp::Ordering::Equal => {
                    return Err(Error::DuplicateKey { key: key.to_vec() });
                }
                core::cmp::Ordering::Less => {
                    return Err(Error::OutOfOrder {
                        previous: prev.to_vec(),
                        got: key.to_vec(),
                    });
                }
            }
        }
        self.keys.push(key);
        self.values.push(value);
        Ok(())
    }

    /// Whether the open leaf is empty, so that [`push_leaf`](Self::push_leaf) may be called.
    pub(crate) fn at_leaf_start(&self) -> bool {
        self.keys.open_ends.is_empty()
    }

    /// Appends a full leaf of a tree with the same `shift` whole: `leaf` is its view,
    /// `words` its words, `tails` its layer's tail bytes, `values` its values and `last` its
    /// last key. Requires [`at_leaf_start`](Self::at_leaf_start) and its first key sorting
    /// after every key so far (the caller's merge order guarantees both).
    pub(crate) fn push_leaf(
        &mut self,
        leaf: &leaf::Leaf<'_>,
        words: &[u64],
        tails: &[u8],
        values: &[u64],
        last: &[u8],
    ) {
        debug_assert_eq!(values.len(), leaf.n);
        self.keys.push_leaf(leaf, words, tails, last);
        self.values.extend_from_slice(values);
    }

    /// The finished tree.
    pub(crate) fn finish(mut self) -> Tree {
        let shift = self.keys.shift;
        let keys = self.keys.finish();
        let route = Route::build(&keys, shift);
        self.values.shrink_to_fit();
        debug_assert_eq!(keys.len, self.values.len());
        Tree {
            shift,
            keys,
            route,
            values: self.values.into(),
        }
    }
}
