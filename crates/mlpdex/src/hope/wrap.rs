//! [`Hope`]: an [`Encoder`] in front of any byte-key mlpdex structure.
//!
//! The inner structure holds encoded keys only. Every key going in (lookups, inserts, range
//! bounds) is encoded first; since encoding is a strictly increasing map on byte strings (see
//! [`super`]), a range `[lo, hi)` of plain keys is exactly the range `[enc(lo), enc(hi))` of
//! encoded ones, bound kinds unchanged, so range results are exact. Keys coming out (cursors,
//! seeks, visitors) are decoded back into caller-visible buffers.
//!
//! Which trait each inner shape gets:
//!
//! | inner | `Hope<M>` implements |
//! |---|---|
//! | [`StaticMap`] (FST) | [`StaticMap`], cursors decode into their own buffer; [`HopeBuilder`] wraps the builder |
//! | [`RangeFilter`] (SuRF) | [`RangeFilter`] |
//! | [`ConcurrentOrderedMap`] (skip list, concurrent Cuckoo Trie) | [`ConcurrentOrderedMap`], visitors see decoded keys |
//! | [`OrderedMap`] (Cuckoo Trie) | [`EncodedMap`]: the same methods, with iteration yielding owned decoded keys, because `OrderedMap`'s iterators lend keys stored in the map and decoded keys are not stored anywhere |
//!
//! Each is written against the trait alone, so structures added later plug in unchanged.
//! Query keys are encoded into a per-thread scratch buffer: lookups allocate nothing once it
//! has grown.

use core::cell::RefCell;
use core::ops::{Bound, ControlFlow};
use std::sync::Arc;

use super::Encoder;
use crate::Error;
use crate::api::{
    ConcurrentOrderedMap, OrderedMap, RangeCursor, RangeFilter, StaticMap, StaticMapBuilder,
};
use crate::key::KeyRange;

/// A structure over encoded keys and the encoder that made them.
#[derive(Clone, Debug)]
pub struct Hope<M> {
    encoder: Arc<Encoder>,
    inner: M,
}

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on the encoding of `key`, in the thread's scratch buffer (taken out for the call,
/// so a nested call gets a fresh buffer instead of a borrow conflict).
#[inline]
fn with_encoded<R>(enc: &Encoder, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
    let mut buf = SCRATCH.with(|s| core::mem::take(&mut *s.borrow_mut()));
    buf.clear();
    enc.encode_into(key, &mut buf);
    let r = f(&buf);
    SCRATCH.with(|s| *s.borrow_mut() = buf);
    r
}

/// The encoded form of a bound.
fn encode_bound(enc: &Encoder, b: Bound<&[u8]>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(enc.encode(k)),
        Bound::Excluded(k) => Bound::Excluded(enc.encode(k)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The encoded bounds of `range`.
fn encode_range<R>(enc: &Encoder, range: &R) -> (Bound<Vec<u8>>, Bound<Vec<u8>>)
where
    R: KeyRange,
{
    let (lo, hi) = range.key_bounds();
    (encode_bound(enc, lo), encode_bound(enc, hi))
}

/// Decodes `k` into `buf`; keys that are no encoding (a structure filled around the wrapper)
/// come out unchanged rather than being lost. The inner structure holds what the encoder
/// produced, so the decoder's re-encoding check is skipped.
fn decode_to(enc: &Encoder, k: &[u8], buf: &mut Vec<u8>) {
    buf.clear();
    if enc.decode_codes(k, buf).is_err() {
        buf.clear();
        buf.extend_from_slice(k);
    }
}

impl<M> Hope<M> {
    /// Wraps `inner`, which must be empty or hold keys encoded by `encoder` (as built by
    /// [`HopeBuilder`] or filled through this wrapper).
    pub fn new(encoder: Arc<Encoder>, inner: M) -> Hope<M> {
        Hope { encoder, inner }
    }

    /// The encoder.
    pub fn encoder(&self) -> &Encoder {
        &self.encoder
    }

    /// The structure over encoded keys.
    pub fn inner(&self) -> &M {
        &self.inner
    }

    /// Gives the inner structure back.
    pub fn into_inner(self) -> M {
        self.inner
    }
}

/// A cursor of a [`Hope`] static map: the inner cursor's keys, decoded.
#[derive(Debug)]
pub struct HopeCursor<'a, C> {
    inner: C,
    encoder: &'a Encoder,
    buf: Vec<u8>,
}

impl<C: RangeCursor> RangeCursor for HopeCursor<'_, C> {
    fn next(&mut self) -> Option<(&[u8], u64)> {
        let (k, v) = self.inner.next()?;
        decode_to(self.encoder, k, &mut self.buf);
        Some((&self.buf, v))
    }

    fn next_back(&mut self) -> Option<(&[u8], u64)> {
        let (k, v) = self.inner.next_back()?;
        decode_to(self.encoder, k, &mut self.buf);
        Some((&self.buf, v))
    }
}

impl<M: StaticMap> StaticMap for Hope<M> {
    type Cursor<'a>
        = HopeCursor<'a, M::Cursor<'a>>
    where
        Self: 'a;

    fn get(&self, key: &[u8]) -> Option<u64> {
        with_encoded(&self.encoder, key, |k| self.inner.get(k))
    }

    fn len(&self) -> usize {
        self.inner.len()
    }

    fn range<R>(&self, range: R) -> Self::Cursor<'_>
    where
        R: KeyRange,
    {
        let (lo, hi) = encode_range(&self.encoder, &range);
        HopeCursor {
            inner: self.inner.range((as_ref(&lo), as_ref(&hi))),
            encoder: &self.encoder,
            buf: Vec::new(),
        }
    }

    /// The inner structure's memory plus the encoder's.
    fn memory_usage(&self) -> usize {
        self.inner.memory_usage() + self.encoder.memory_usage()
    }
}

/// Builds a [`Hope`] static map: keys are encoded on the way into the inner builder (their
/// order is kept, so sorted input stays sorted).
#[derive(Debug)]
pub struct HopeBuilder<B> {
    encoder: Arc<Encoder>,
    inner: B,
    buf: Vec<u8>,
}

impl<B> HopeBuilder<B> {
    /// Encodes into `inner`.
    pub fn new(encoder: Arc<Encoder>, inner: B) -> HopeBuilder<B> {
        HopeBuilder {
            encoder,
            inner,
            buf: Vec::new(),
        }
    }
}

impl<B: StaticMapBuilder> StaticMapBuilder for HopeBuilder<B> {
    type Map = Hope<B::Map>;

    /// Out-of-order and duplicate errors name the *encoded* key the inner builder saw.
    fn push(&mut self, key: &[u8], value: u64) -> Result<(), Error> {
        self.buf.clear();
        self.encoder.encode_into(key, &mut self.buf);
        self.inner.push(&self.buf, value)
    }

    fn finish(self) -> Result<Hope<B::Map>, Error> {
        Ok(Hope::new(self.encoder, self.inner.finish()?))
    }
}

impl<M: RangeFilter> RangeFilter for Hope<M> {
    fn may_contain(&self, key: &[u8]) -> bool {
        with_encoded(&self.encoder, key, |k| self.inner.may_contain(k))
    }

    fn may_contain_range<R>(&self, range: R) -> bool
    where
        R: KeyRange,
    {
        let (lo, hi) = encode_range(&self.encoder, &range);
        self.inner.may_contain_range((as_ref(&lo), as_ref(&hi)))
    }

    fn approx_count<R>(&self, range: R) -> u64
    where
        R: KeyRange,
    {
        let (lo, hi) = encode_range(&self.encoder, &range);
        self.inner.approx_count((as_ref(&lo), as_ref(&hi)))
    }

    fn memory_usage(&self) -> usize {
        self.inner.memory_usage() + self.encoder.memory_usage()
    }
}

impl<V: Clone, M: ConcurrentOrderedMap<V>> ConcurrentOrderedMap<V> for Hope<M> {
    fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&V) -> R) -> Option<R> {
        with_encoded(&self.encoder, key, |k| self.inner.get_with(k, f))
    }

    fn insert(&self, key: &[u8], value: V) -> Result<Option<V>, Error> {
        with_encoded(&self.encoder, key, |k| self.inner.insert(k, value))
    }

    fn remove(&self, key: &[u8]) -> Option<V> {
        with_encoded(&self.encoder, key, |k| self.inner.remove(k))
    }

    fn len(&self) -> usize {
        self.inner.len()
    }

    fn memory_usage(&self) -> usize {
        self.inner.memory_usage() + self.encoder.memory_usage()
    }

    fn lower_bound_with<R>(
        &self,
        bound: Bound<&[u8]>,
        f: impl FnOnce(&[u8], &V) -> R,
    ) -> Option<R> {
        self.seek_with(bound, false, f)
    }

    fn upper_bound_with<R>(
        &self,
        bound: Bound<&[u8]>,
        f: impl FnOnce(&[u8], &V) -> R,
    ) -> Option<R> {
        self.seek_with(bound, true, f)
    }

    fn visit_range<Rg>(&self, range: Rg, f: impl FnMut(&[u8], &V) -> ControlFlow<()>)
    where
        Rg: KeyRange,
    {
        self.visit_with(&range, false, f);
    }

    fn visit_range_rev<Rg>(&self, range: Rg, f: impl FnMut(&[u8], &V) -> ControlFlow<()>)
    where
        Rg: KeyRange,
    {
        self.visit_with(&range, true, f);
    }
}

impl<M> Hope<M> {
    /// `lower_bound_with` (or, when `upper`, `upper_bound_with`) of the inner concurrent map
    /// with the bound encoded and the key handed to `f` decoded.
    fn seek_with<V: Clone, R>(
        &self,
        bound: Bound<&[u8]>,
        upper: bool,
        f: impl FnOnce(&[u8], &V) -> R,
    ) -> Option<R>
    where
        M: ConcurrentOrderedMap<V>,
    {
        let b = encode_bound(&self.encoder, bound);
        let mut buf = Vec::new();
        let g = |k: &[u8], v: &V| {
            decode_to(&self.encoder, k, &mut buf);
            f(&buf, v)
        };
        if upper {
            self.inner.upper_bound_with(as_ref(&b), g)
        } else {
            self.inner.lower_bound_with(as_ref(&b), g)
        }
    }

    /// `visit_range` (or, when `rev`, `visit_range_rev`) of the inner concurrent map over the
    /// encoded range, each key handed to `f` decoded.
    fn visit_with<V: Clone, Rg>(
        &self,
        range: &Rg,
        rev: bool,
        mut f: impl FnMut(&[u8], &V) -> ControlFlow<()>,
    ) where
        M: ConcurrentOrderedMap<V>,
        Rg: KeyRange,
    {
        let (lo, hi) = encode_range(&self.encoder, range);
        let bounds = (as_ref(&lo), as_ref(&hi));
        let mut buf = Vec::new();
        let g = |k: &[u8], v: &V| {
            decode_to(&self.encoder, k, &mut buf);
            f(&buf, v)
        };
        if rev {
            self.inner.visit_range_rev(bounds, g);
        } else {
            self.inner.visit_range(bounds, g);
        }
    }
}

/// The [`OrderedMap`] methods for a [`Hope`] over one, with owned decoded keys wherever keys
/// come out.
pub trait EncodedMap<V> {
    /// The value stored under `key`.
    fn get(&self, key: &[u8]) -> Option<&V>;
    /// Stores `value` under `key`, returning the value it replaces.
    fn insert(&mut self, key: &[u8], value: V) -> Result<Option<V>, Error>;
    /// Removes `key`, returning its value.
    fn remove(&mut self, key: &[u8]) -> Option<V>;
    /// Number of keys stored.
    fn len(&self) -> usize;
    /// True when no key is stored.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The entries within `range`, in order from both ends, keys decoded.
    fn range<'a, R>(&'a self, range: R) -> impl DoubleEndedIterator<Item = (Vec<u8>, &'a V)> + 'a
    where
        V: 'a,
        R: KeyRange;
    /// The first entry at or after `bound`.
    fn lower_bound(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, &V)>;
    /// The last entry at or before `bound`.
    fn upper_bound(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, &V)>;
    /// Memory of the inner map and the encoder.
    fn memory_usage(&self) -> usize;
    /// Removes every key.
    fn clear(&mut self);
}

impl<V, M: OrderedMap<V>> EncodedMap<V> for Hope<M> {
    fn get(&self, key: &[u8]) -> Option<&V> {
        with_encoded(&self.encoder, key, |k| self.inner.get(k))
    }

    fn insert(&mut self, key: &[u8], value: V) -> Result<Option<V>, Error> {
        let inner = &mut self.inner;
        with_encoded(&self.encoder, key, |k| inner.insert(k, value))
    }

    fn remove(&mut self, key: &[u8]) -> Option<V> {
        let inner = &mut self.inner;
        with_encoded(&self.encoder, key, |k| inner.remove(k))
    }

    fn len(&self) -> usize {
        self.inner.len()
    }

    fn range<'a, R>(&'a self, range: R) -> impl DoubleEndedIterator<Item = (Vec<u8>, &'a V)> + 'a
    where
        V: 'a,
        R: KeyRange,
    {
        let (lo, hi) = encode_range(&self.encoder, &range);
        let enc = &*self.encoder;
        self.inner
            .range((as_ref(&lo), as_ref(&hi)))
            .map(move |(k, v)| {
                let mut buf = Vec::new();
                decode_to(enc, k.as_ref(), &mut buf);
                (buf, v)
            })
    }

    fn lower_bound(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, &V)> {
        let b = encode_bound(&self.encoder, bound);
        let (k, v) = self.inner.lower_bound(as_ref(&b))?;
        let mut buf = Vec::new();
        decode_to(&self.encoder, k.as_ref(), &mut buf);
        Some((buf, v))
    }

    fn upper_bound(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, &V)> {
        let b = encode_bound(&self.encoder, bound);
        let (k, v) = self.inner.upper_bound(as_ref(&b))?;
        let mut buf = Vec::new();
        decode_to(&self.encoder, k.as_ref(), &mut buf);
        Some((buf, v))
    }

    fn memory_usage(&self) -> usize {
        self.inner.memory_usage() + self.encoder.memory_usage()
    }

    fn clear(&mut self) {
        self.inner.clear();
    }
}
