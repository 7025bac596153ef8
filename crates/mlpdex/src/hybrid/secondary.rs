//! Secondary-index semantics (thesis §5.3.5): one key, any number of values.
//!
//! A [`Secondary`] stores each `(key, value)` pair as one key of a [`Hybrid`]: the key's
//! bytes escaped (0x00 becomes 0x00 0xFF), a terminator 0x00 0x00, then the value in 8
//! big-endian bytes. The encoding keeps the order of keys and, within a key, of values, so a
//! key's values are one contiguous range, and a static trie stage stores the key's bytes once
//! however many values follow them: the thesis' "each key once, followed by its values", with
//! no array to rewrite when a value comes or goes. A value is added or removed in place like
//! any hybrid key; nothing is ever duplicated across the stages.

use core::ops::Bound;

use super::{Cursor, DynamicStage, Hybrid, MergeStats, StaticStage};
use crate::Error;
use crate::KeyRange;
use crate::api::RangeCursor;
use crate::key::is_empty_range;

/// The first composite key of `key`'s pairs with its terminator's second byte `end` (0: the
/// first pair's key without the value, 1: past every pair of `key`).
fn encode_key(key: &[u8], end: u8, out: &mut Vec<u8>) {
    out.clear();
    for &b in key {
        out.push(b);
        if b == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0, end]);
}

/// The composite key of `(key, value)`.
fn encode(key: &[u8], value: u64, out: &mut Vec<u8>) {
    encode_key(key, 0, out);
    out.extend_from_slice(&value.to_be_bytes());
}

/// The `(key, value)` of a composite key; `None` for bytes no pair encodes to.
fn decode(composite: &[u8]) -> Option<(Vec<u8>, u64)> {
    let (body, value) = composite.split_at_checked(composite.len().checked_sub(8)?)?;
    let value = u64::from_be_bytes(value.try_into().ok()?);
    let mut key = Vec::with_capacity(body.len());
    let mut bytes = body.iter();
    while let Some(&b) = bytes.next() {
        if b != 0 {
            key.push(b);
            continue;
        }
        match bytes.next() {
            Some(0xFF) => key.push(0),
            Some(0) if bytes.as_slice().is_empty() => return Some((key, value)),
            _ => return None,
        }
    }
    None
}

/// A hybrid index with secondary-index semantics: each key maps to a set of `u64` values.
///
/// ```
/// use mlpdex::hybrid::Secondary;
///
/// let mut ix = Secondary::new();
/// ix.insert(b"red", 3)?;
/// ix.insert(b"red", 1)?;
/// ix.insert(b"blue", 2)?;
/// assert!(!ix.insert(b"red", 3)?); // already there
/// assert_eq!(ix.values(b"red").collect::<Vec<_>>(), [1, 3]);
/// assert!(ix.remove(b"red", 1));
/// assert_eq!(ix.len(), 2);
/// let pairs: Vec<(Vec<u8>, u64)> = ix.range(..).collect();
/// assert_eq!(pairs, [(b"blue".to_vec(), 2), (b"red".to_vec(), 3)]);
/// # Ok::<(), mlpdex::Error>(())
/// ```
pub struct Secondary<
    D = crate::cuckoo_trie::CuckooTrie<super::Slot>,
    S = crate::compact_art::CompactArt,
> {
    pairs: Hybrid<D, S>,
    scratch: Vec<u8>,
}

impl Secondary {
    /// An empty index with the default stages and configuration.
    pub fn new() -> Self {
        Secondary {
            pairs: Hybrid::new(),
            scratch: Vec::new(),
        }
    }
}

impl Default for Secondary {
    fn default() -> Self {
        Self::new()
    }
}

impl<D: DynamicStage, S: StaticStage> Secondary<D, S> {
    /// An empty index with these stages and `config` (see [`Hybrid::with_config`]).
    pub fn with_config(config: super::Config) -> Result<Self, Error> {
        Ok(Secondary {
            pairs: Hybrid::with_config(config)?,
            scratch: Vec::new(),
        })
    }

    /// Adds `value` to `key`'s values; `false` when it was there already.
    pub fn insert(&mut self, key: &[u8], value: u64) -> Result<bool, Error> {
        let mut k = core::mem::take(&mut self.scratch);
        encode(key, value, &mut k);
        let fresh = self.pairs.insert(&k, 0);
        self.scratch = k;
        Ok(fresh?.is_none())
    }

    /// Removes `value` from `key`'s values; `true` when it was there.
    pub fn remove(&mut self, key: &[u8], value: u64) -> bool {
        let mut k = core::mem::take(&mut self.scratch);
        encode(key, value, &mut k);
        let was = self.pairs.remove(&k).is_some();
        self.scratch = k;
        was
    }

    /// Removes every value of `key`, returning how many there were.
    pub fn remove_key(&mut self, key: &[u8]) -> usize {
        let values: Vec<u64> = self.values(key).collect();
        for &v in &values {
            self.remove(key, v);
        }
        values.len()
    }

    /// True when `value` is one of `key`'s values.
    pub fn contains(&self, key: &[u8], value: u64) -> bool {
        let mut k = Vec::new();
        encode(key, value, &mut k);
        self.pairs.contains_key(&k)
    }

    /// `key`'s values, increasing, from both ends.
    pub fn values(&self, key: &[u8]) -> Values<'_, D, S> {
        let (mut lo, mut hi) = (Vec::new(), Vec::new());
        encode_key(key, 0, &mut lo);
        encode_key(key, 1, &mut hi);
        Values(
            self.pairs
                .cursor((Bound::Included(&lo[..]), Bound::Excluded(&hi[..]))),
        )
    }

    /// The `(key, value)` pairs whose key is within `range`, in key then value order, from
    /// both ends.
    pub fn range<R: KeyRange>(&self, range: R) -> Pairs<'_, D, S> {
        let (start, end) = range.key_bounds();
        if is_empty_range(start, end) {
            let none = Bound::Excluded(&[][..]);
            return Pairs(self.pairs.cursor((none, none)));
        }
        let bound = |b: Bound<&[u8]>, past: bool| -> Bound<Vec<u8>> {
            let mut out = Vec::new();
            match b {
                Bound::Unbounded => Bound::Unbounded,
                Bound::Included(k) => {
                    encode_key(k, past as u8, &mut out);
                    if past {
                        Bound::Excluded(out)
                    } else {
                        Bound::Included(out)
                    }
                }
                Bound::Excluded(k) => {
                    encode_key(k, !past as u8, &mut out);
                    if past {
                        Bound::Excluded(out)
                    } else {
                        Bound::Included(out)
                    }
                }
            }
        };
        let (lo, hi) = (bound(start, false), bound(end, true));
        Pairs(
            self.pairs
                .cursor((lo.as_ref().map(|k| &k[..]), hi.as_ref().map(|k| &k[..]))),
        )
    }

    /// Number of `(key, value)` pairs.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// True when no pair is stored.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Merges now (see [`Hybrid::merge`]).
    pub fn merge(&mut self) -> Result<(), Error> {
        self.pairs.merge()
    }

    /// What the merges did so far.
    pub fn stats(&self) -> MergeStats {
        self.pairs.stats()
    }

    /// Bytes of memory owned.
    pub fn memory_usage(&self) -> usize {
        self.pairs.memory_usage() + self.scratch.capacity()
    }
}

impl<D: DynamicStage, S: StaticStage> core::fmt::Debug for Secondary<D, S> {
    /// The pairs, as a list of `(key, value)` with non-printable key bytes as `\xNN`.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut l = f.debug_list();
        for (k, v) in self.range(..) {
            l.entry(&(crate::key::Escaped(&k), v));
        }
        l.finish()
    }
}

/// The values of one key of a [`Secondary`], increasing, from both ends.
///
/// ```
/// use mlpdex::hybrid::Secondary;
///
/// let mut ix = Secondary::new();
/// ix.insert(b"k", 5)?;
/// ix.insert(b"k", 2)?;
/// assert_eq!(ix.values(b"k").rev().collect::<Vec<_>>(), [5, 2]);
/// # Ok::<(), mlpdex::Error>(())
/// ```
pub struct Values<'a, D: DynamicStage + 'a, S: StaticStage + 'a>(Cursor<'a, D, S>);

impl<'a, D: DynamicStage + 'a, S: StaticStage + 'a> Iterator for Values<'a, D, S> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        let (k, _) = RangeCursor::next(&mut self.0)?;
        Some(decode(k)?.1)
    }
}

impl<'a, D: DynamicStage + 'a, S: StaticStage + 'a> DoubleEndedIterator for Values<'a, D, S> {
    fn next_back(&mut self) -> Option<u64> {
        let (k, _) = RangeCursor::next_back(&mut self.0)?;
        Some(decode(k)?.1)
    }
}

impl<'a, D: DynamicStage + 'a, S: StaticStage + 'a> core::fmt::Debug for Values<'a, D, S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Values").finish_non_exhaustive()
    }
}

/// The `(key, value)` pairs of a range of a [`Secondary`], from both ends.
///
/// ```
/// use mlpdex::hybrid::Secondary;
///
/// let mut ix = Secondary::new();
/// ix.insert(b"a", 1)?;
/// ix.insert(b"b", 2)?;
/// assert_eq!(ix.range(&b"b"[..]..).collect::<Vec<_>>(), [(b"b".to_vec(), 2)]);
/// # Ok::<(), mlpdex::Error>(())
/// ```
pub struct Pairs<'a, D: DynamicStage + 'a, S: StaticStage + 'a>(Cursor<'a, D, S>);

impl<'a, D: DynamicStage + 'a, S: StaticStage + 'a> Iterator for Pairs<'a, D, S> {
    type Item = (Vec<u8>, u64);

    fn next(&mut self) -> Option<(Vec<u8>, u64)> {
        let (k, _) = RangeCursor::next(&mut self.0)?;
        decode(k)
    }
}

impl<'a, D: DynamicStage + 'a, S: StaticStage + 'a> DoubleEndedIterator for Pairs<'a, D, S> {
    fn next_back(&mut self) -> Option<(Vec<u8>, u64)> {
        let (k, _) = RangeCursor::next_back(&mut self.0)?;
        decode(k)
    }
}

impl<'a, D: DynamicStage + 'a, S: StaticStage + 'a> core::fmt::Debug for Pairs<'a, D, S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Pairs").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_encoding_keeps_key_then_value_order_and_decodes() {
        let keys: [&[u8]; 7] = [
            b"",
            b"\x00",
            b"\x00\x00",
            b"\x00\x01",
            b"\x00\xff",
            b"a",
            b"a\x00",
        ];
        let mut all = Vec::new();
        for k in keys {
            for v in [0, 1, u64::MAX] {
                let mut out = Vec::new();
                encode(k, v, &mut out);
                assert_eq!(decode(&out), Some((k.to_vec(), v)));
                all.push(((k.to_vec(), v), out));
            }
        }
        let mut by_pair = all.clone();
        by_pair.sort_by(|a, b| a.0.cmp(&b.0));
        all.sort_by(|a, b| a.1.cmp(&b.1));
        assert_eq!(all, by_pair);
        assert_eq!(decode(b"short"), None);
        assert_eq!(
            decode(b"a\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x01"),
            None
        );
    }
}
