//! Building a compact B-tree in one pass over sorted keys: keys gather in the open leaf of
//! layer 0, which is encoded once it holds `2^shift` of them (the last one when the input
//! ends); the upper layers are built at the end from the first keys of the leaves below.
//!
//! Memory while building: the finished arrays as they grow (`Vec`s, so up to twice their final
//! size just before a reallocation, trimmed at the end), the open leaf's keys, and a copy of
//! the previous key for the order check.

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
        }
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
    /// Whether a key was accepted (the previous one is then the open leaf's last, or the last
    /// of the previous leaf, kept in `previous`).
    previous: Option<Vec<u8>>,
}

impl TreeBuilder {
    /// A builder of leaves of `2^shift` keys (`shift` in [`super::SHIFTS`]).
    pub(crate) fn new(shift: u32) -> TreeBuilder {
        debug_assert!(super::SHIFTS.contains(&shift));
        TreeBuilder {
            keys: LayerBuilder::new(shift),
            values: Vec::new(),
            previous: None,
        }
    }

    /// Keys accepted so far.
    pub(crate) fn len(&self) -> usize {
        self.values.len()
    }

    /// Appends `key` with `value`: it must sort strictly after the previous key. A refused key
    /// leaves the builder as it was.
    pub(crate) fn push(&mut self, key: &[u8], value: u64) -> Result<(), Error> {
        if let Some(prev) = &self.previous {
            match key.cmp(prev) {
                core::cmp::Ordering::Greater => {}
                core::cmp::Ordering::Equal => {
                    return Err(Error::DuplicateKey { key: key.to_vec() });
                }
                core::cmp::Ordering::Less => {
                    return Err(Error::OutOfOrder {
                        previous: prev.clone(),
                        got: key.to_vec(),
                    });
                }
            }
        }
        let prev = self.previous.get_or_insert_with(Vec::new);
        prev.clear();
        prev.extend_from_slice(key);
        self.keys.push(key);
        self.values.push(value);
        Ok(())
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
