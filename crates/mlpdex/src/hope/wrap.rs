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
//! | [`OrderedMap`] (Cuckoo Trie) | [`EncodedMap`]: the same methods, with owned decoded keys wherever keys come out (decoded keys are not stored anywhere) and values as the inner map hands them out |
//!
//! Each is written against the trait alone, so structures added later plug in unchanged.
//! Query keys are encoded into a per-thread scratch buffer: lookups allocate nothing once it
//! has grown.

use core::cell::RefCell;
use core::fmt;
use core::ops::{Bound, ControlFlow, Deref};
use std::sync::Arc;

use super::Encoder;
use crate::Error;
use crate::api::{
    ConcurrentOrderedMap, Entries, OrderedMap, RangeCursor, RangeFilter, StaticMap,
    StaticMapBuilder,
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

/// Decodes `k` into `buf`; [`Error::Format`] (and `buf` empty) when `k` is no encoding, as in
/// a structure filled around the wrapper: such a key is never handed out as if it were a
/// plain key. The inner structure holds what the encoder produced, so the decoder's
/// re-encoding check is skipped.
fn decode_to(enc: &Encoder, k: &[u8], buf: &mut Vec<u8>) -> Result<(), Error> {
    buf.clear();
    enc.decode_codes(k, buf).inspect_err(|_| buf.clear())
}

/// The decoded form of `k`, or `None` when it is no encoding (see [`decode_to`]).
fn decoded(enc: &Encoder, k: &[u8]) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    decode_to(enc, k, &mut buf).ok()?;
    Some(buf)
}

impl<M> Hope<M> {
    /// Wraps `inner`, which must be empty or hold keys encoded by `encoder` (as built by
    /// [`HopeBuilder`] or filled through this wrapper). `encoder` is an [`Encoder`] or an
    /// `Arc<Encoder>` shared with other wrappers.
    ///
    /// A key of `inner` that is not an encoding is never handed out as a plain key: a
    /// [`HopeCursor`] stops there and says why in [`HopeCursor::error`]; ordered and
    /// concurrent iteration, seeks and visitors skip it.
    pub fn new(encoder: impl Into<Arc<Encoder>>, inner: M) -> Hope<M> {
        Hope {
            encoder: encoder.into(),
            inner,
        }
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

/// A cursor of a [`Hope`] static map: the inner cursor's keys, decoded into the cursor's own
/// buffer.
///
/// If the inner map holds a key that is not an encoding (a map built around the wrapper), the
/// cursor stops there: both ends return `None` from then on and [`error`](Self::error) says
/// why, rather than handing the undecoded bytes out as a key.
#[derive(Debug)]
pub struct HopeCursor<'a, C> {
    inner: C,
    encoder: &'a Encoder,
    buf: Vec<u8>,
    error: Option<Error>,
}

/// The iterator of [`Hope::range`] over a static map: a [`HopeCursor`] whose keys are copied
/// out.
pub type HopeRange<'a, C> = Entries<HopeCursor<'a, C>>;

impl<C: RangeCursor> HopeCursor<'_, C> {
    /// Why the cursor stopped early: an [`Error::Format`] when the inner map held a key that
    /// is not an encoding. `None` while every key decoded.
    pub fn error(&self) -> Option<&Error> {
        self.error.as_ref()
    }

    /// The next entry from the front, its key decoded.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<(&[u8], u64)> {
        self.step(false)
    }

    /// The next entry from the back, its key decoded.
    pub fn next_back(&mut self) -> Option<(&[u8], u64)> {
        self.step(true)
    }

    /// Calls `f` on every remaining entry, front to back.
    pub fn for_each(&mut self, f: impl FnMut(&[u8], u64)) {
        RangeCursor::for_each(self, f);
    }

    /// Appends every remaining entry, front to back, to `out`.
    pub fn collect_into(&mut self, out: &mut Vec<(Vec<u8>, u64)>) {
        RangeCursor::collect_into(self, out);
    }

    /// The remaining keys, front to back.
    pub fn collect_keys(&mut self) -> Vec<Vec<u8>> {
        RangeCursor::collect_keys(self)
    }

    fn step(&mut self, back: bool) -> Option<(&[u8], u64)> {
        if self.error.is_some() {
            return None;
        }
        let (k, v) = if back {
            self.inner.next_back()?
        } else {
            self.inner.next()?
        };
        match decode_to(self.encoder, k, &mut self.buf) {
            Ok(()) => Some((&self.buf, v)),
            Err(e) => {
                self.error = Some(e);
                None
            }
        }
    }
}

impl<C: RangeCursor> RangeCursor for HopeCursor<'_, C> {
    fn next(&mut self) -> Option<(&[u8], u64)> {
        self.step(false)
    }

    fn next_back(&mut self) -> Option<(&[u8], u64)> {
        self.step(true)
    }
}

/// The static-map operations, inherent so that no trait import is needed.
impl<M: StaticMap> Hope<M> {
    /// The value stored under `key`.
    pub fn get(&self, key: &[u8]) -> Option<u64> {
        with_encoded(&self.encoder, key, |k| self.inner.get(k))
    }

    /// True when `key` is stored.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// Number of keys stored.
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// True when no key is stored.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// The entries within `range` (plain keys), in key order from both ends, keys decoded
    /// and owned; usable in `for` and with `collect`.
    pub fn range<R>(&self, range: R) -> HopeRange<'_, M::Cursor<'_>>
    where
        R: KeyRange,
    {
        self.cursor(range).into_entries()
    }

    /// Every entry in key order, keys decoded (see [`range`](Self::range)).
    pub fn iter(&self) -> HopeRange<'_, M::Cursor<'_>> {
        self.range(..)
    }

    /// A lending cursor over the entries within `range`, keys decoded into its buffer.
    pub fn cursor<R>(&self, range: R) -> HopeCursor<'_, M::Cursor<'_>>
    where
        R: KeyRange,
    {
        let (lo, hi) = encode_range(&self.encoder, &range);
        HopeCursor {
            inner: self.inner.cursor((as_ref(&lo), as_ref(&hi))),
            encoder: &self.encoder,
            buf: Vec::new(),
            error: None,
        }
    }

    /// The inner map's memory plus the encoder's.
    pub fn memory_usage(&self) -> usize {
        self.inner.memory_usage() + self.encoder.memory_usage()
    }
}

impl<M: StaticMap> StaticMap for Hope<M> {
    type Range<'a>
        = HopeRange<'a, M::Cursor<'a>>
    where
        Self: 'a;
    type Cursor<'a>
        = HopeCursor<'a, M::Cursor<'a>>
    where
        Self: 'a;

    fn get(&self, key: &[u8]) -> Option<u64> {
        Hope::<M>::get(self, key)
    }

    fn len(&self) -> usize {
        Hope::<M>::len(self)
    }

    fn range<R>(&self, range: R) -> Self::Range<'_>
    where
        R: KeyRange,
    {
        Hope::<M>::range(self, range)
    }

    fn cursor<R>(&self, range: R) -> Self::Cursor<'_>
    where
        R: KeyRange,
    {
        Hope::<M>::cursor(self, range)
    }

    /// The inner structure's memory plus the encoder's.
    fn memory_usage(&self) -> usize {
        Hope::<M>::memory_usage(self)
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
    /// Encodes into `inner`; `encoder` is an [`Encoder`] or an `Arc<Encoder>`.
    pub fn new(encoder: impl Into<Arc<Encoder>>, inner: B) -> HopeBuilder<B> {
        HopeBuilder {
            encoder: encoder.into(),
            inner,
            buf: Vec::new(),
        }
    }
}

impl<B: StaticMapBuilder> HopeBuilder<B> {
    /// Encodes `key` and appends it with `value`; see [`StaticMapBuilder::push`].
    /// Out-of-order and duplicate errors name the *encoded* key the inner builder saw.
    pub fn push(&mut self, key: &[u8], value: u64) -> Result<(), Error> {
        self.buf.clear();
        self.encoder.encode_into(key, &mut self.buf);
        self.inner.push(&self.buf, value)
    }

    /// Finishes the inner map and wraps it.
    pub fn finish(self) -> Result<Hope<B::Map>, Error> {
        Ok(Hope::new(self.encoder, self.inner.finish()?))
    }
}

impl<B: StaticMapBuilder> StaticMapBuilder for HopeBuilder<B> {
    type Map = Hope<B::Map>;

    fn push(&mut self, key: &[u8], value: u64) -> Result<(), Error> {
        HopeBuilder::push(self, key, value)
    }

    fn finish(self) -> Result<Hope<B::Map>, Error> {
        HopeBuilder::finish(self)
    }
}

/// The range-filter operations, inherent so that no trait import is needed.
impl<M: RangeFilter> Hope<M> {
    /// False only when `key` is certainly not in the set.
    pub fn may_contain(&self, key: &[u8]) -> bool {
        with_encoded(&self.encoder, key, |k| self.inner.may_contain(k))
    }

    /// False only when no key of the set lies within `range`.
    pub fn may_contain_range<R>(&self, range: R) -> bool
    where
        R: KeyRange,
    {
        let (lo, hi) = encode_range(&self.encoder, &range);
        self.inner.may_contain_range((as_ref(&lo), as_ref(&hi)))
    }

    /// An estimate of how many keys of the set lie within `range`.
    pub fn approx_count<R>(&self, range: R) -> u64
    where
        R: KeyRange,
    {
        let (lo, hi) = encode_range(&self.encoder, &range);
        self.inner.approx_count((as_ref(&lo), as_ref(&hi)))
    }
}

impl<M: RangeFilter> RangeFilter for Hope<M> {
    fn may_contain(&self, key: &[u8]) -> bool {
        Hope::<M>::may_contain(self, key)
    }

    fn may_contain_range<R>(&self, range: R) -> bool
    where
        R: KeyRange,
    {
        Hope::<M>::may_contain_range(self, range)
    }

    fn approx_count<R>(&self, range: R) -> u64
    where
        R: KeyRange,
    {
        Hope::<M>::approx_count(self, range)
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
        // A key that is no encoding is skipped: the seek then answers `None`.
        let g = |k: &[u8], v: &V| {
            decode_to(&self.encoder, k, &mut buf)
                .ok()
                .map(|()| f(&buf, v))
        };
        if upper {
            self.inner.upper_bound_with(as_ref(&b), g).flatten()
        } else {
            self.inner.lower_bound_with(as_ref(&b), g).flatten()
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
        let g = |k: &[u8], v: &V| match decode_to(&self.encoder, k, &mut buf) {
            Ok(()) => f(&buf, v),
            Err(_) => ControlFlow::Continue(()),
        };
        if rev {
            self.inner.visit_range_rev(bounds, g);
        } else {
            self.inner.visit_range(bounds, g);
        }
    }
}

/// The [`OrderedMap`] methods for a [`Hope`] over one, with owned decoded keys wherever keys
/// come out, and values as the inner map hands them out ([`Value`](Self::Value)).
pub trait EncodedMap<V> {
    /// A value as the inner map hands it out, its [`OrderedMap::Value`]: `&'a V` for a map that
    /// stores values (the [`CuckooTrie`](crate::cuckoo_trie::CuckooTrie)), an owned
    /// [`ByValue`](crate::ByValue) for one that decodes them.
    type Value<'a>: Deref<Target = V> + fmt::Debug
    where
        Self: 'a,
        V: 'a;

    /// The value stored under `key`.
    fn get(&self, key: &[u8]) -> Option<Self::Value<'_>>;
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
    fn range<'a, R>(
        &'a self,
        range: R,
    ) -> impl DoubleEndedIterator<Item = (Vec<u8>, Self::Value<'a>)> + 'a
    where
        V: 'a,
        R: KeyRange;
    /// The first entry at or after `bound`.
    fn lower_bound(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, Self::Value<'_>)>;
    /// The last entry at or before `bound`.
    fn upper_bound(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, Self::Value<'_>)>;
    /// Memory of the inner map and the encoder.
    fn memory_usage(&self) -> usize;
    /// Removes every key.
    fn clear(&mut self);
}

impl<V, M: OrderedMap<V>> EncodedMap<V> for Hope<M> {
    type Value<'a>
        = M::Value<'a>
    where
        Self: 'a,
        V: 'a;

    fn get(&self, key: &[u8]) -> Option<M::Value<'_>> {
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

    fn range<'a, R>(
        &'a self,
        range: R,
    ) -> impl DoubleEndedIterator<Item = (Vec<u8>, M::Value<'a>)> + 'a
    where
        V: 'a,
        R: KeyRange,
    {
        let (lo, hi) = encode_range(&self.encoder, &range);
        let enc = &*self.encoder;
        self.inner
            .range((as_ref(&lo), as_ref(&hi)))
            .filter_map(move |(k, v)| Some((decoded(enc, k.as_ref())?, v)))
    }

    fn lower_bound(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, M::Value<'_>)> {
        let b = encode_bound(&self.encoder, bound);
        let (k, v) = self.inner.lower_bound(as_ref(&b))?;
        Some((decoded(&self.encoder, k.as_ref())?, v))
    }

    fn upper_bound(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, M::Value<'_>)> {
        let b = encode_bound(&self.encoder, bound);
        let (k, v) = self.inner.upper_bound(as_ref(&b))?;
        Some((decoded(&self.encoder, k.as_ref())?, v))
    }

    fn memory_usage(&self) -> usize {
        self.inner.memory_usage() + self.encoder.memory_usage()
    }

    fn clear(&mut self) {
        self.inner.clear();
    }
}

/// The ordered-map operations of a HOPE-wrapped [`CuckooTrie`](crate::cuckoo_trie::CuckooTrie),
/// inherent so that no trait import is needed; they forward to [`EncodedMap`] (hence
/// `V: Debug`, which the trie's [`OrderedMap`] implementation asks for).
///
/// ```
/// use mlpdex::cuckoo_trie::CuckooTrie;
/// use mlpdex::hope::{Encoder, Hope, Scheme};
///
/// let encoder = Encoder::build(Scheme::DoubleChar, ["apple", "banana"])?;
/// let mut map = Hope::new(encoder, CuckooTrie::new());
/// map.insert(b"cherry", 3)?;
/// assert_eq!(map.get(b"cherry"), Some(&3));
/// assert_eq!(map.range(..).next(), Some((b"cherry".to_vec(), &3)));
/// # Ok::<(), mlpdex::Error>(())
/// ```
impl<V: fmt::Debug> Hope<crate::cuckoo_trie::CuckooTrie<V>> {
    /// The value stored under `key`.
    pub fn get(&self, key: &[u8]) -> Option<&V> {
        EncodedMap::get(self, key)
    }

    /// True when `key` is stored.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        EncodedMap::get(self, key).is_some()
    }

    /// Stores `value` under `key`, returning the value it replaces.
    pub fn insert(&mut self, key: &[u8], value: V) -> Result<Option<V>, Error> {
        EncodedMap::insert(self, key, value)
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &[u8]) -> Option<V> {
        EncodedMap::remove(self, key)
    }

    /// Number of keys stored.
    pub fn len(&self) -> usize {
        EncodedMap::len(self)
    }

    /// True when no key is stored.
    pub fn is_empty(&self) -> bool {
        EncodedMap::is_empty(self)
    }

    /// The entries within `range`, in order from both ends, keys decoded.
    pub fn range<'a, R>(
        &'a self,
        range: R,
    ) -> impl DoubleEndedIterator<Item = (Vec<u8>, &'a V)> + 'a
    where
        V: 'a,
        R: KeyRange,
    {
        EncodedMap::range(self, range)
    }

    /// The first entry at or after `bound`.
    pub fn lower_bound(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, &V)> {
        EncodedMap::lower_bound(self, bound)
    }

    /// The last entry at or before `bound`.
    pub fn upper_bound(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, &V)> {
        EncodedMap::upper_bound(self, bound)
    }

    /// Memory of the inner map and the encoder.
    pub fn memory_usage(&self) -> usize {
        EncodedMap::memory_usage(self)
    }

    /// Removes every key.
    pub fn clear(&mut self) {
        EncodedMap::clear(self);
    }
}

/// Inherent forwarding of the [`ConcurrentOrderedMap`] operations for a HOPE-wrapped
/// concurrent map, so that no trait import is needed.
macro_rules! concurrent_inherent {
    ($map:ty) => {
        impl<V: Clone + Send + Sync + 'static> Hope<$map> {
            /// A clone of the value stored under `key`.
            pub fn get(&self, key: &[u8]) -> Option<V> {
                ConcurrentOrderedMap::get_cloned(self, key)
            }

            /// Applies `f` to the value stored under `key`.
            pub fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&V) -> R) -> Option<R> {
                ConcurrentOrderedMap::get_with(self, key, f)
            }

            /// True when `key` is stored.
            pub fn contains_key(&self, key: &[u8]) -> bool {
                self.get_with(key, |_| ()).is_some()
            }

            /// Stores `value` under `key`, returning a clone of the value it replaces.
            pub fn insert(&self, key: &[u8], value: V) -> Result<Option<V>, Error> {
                ConcurrentOrderedMap::insert(self, key, value)
            }

            /// Removes `key`, returning a clone of its value.
            pub fn remove(&self, key: &[u8]) -> Option<V> {
                ConcurrentOrderedMap::remove(self, key)
            }

            /// Number of keys stored; exact when no write is in flight.
            pub fn len(&self) -> usize {
                ConcurrentOrderedMap::len(self)
            }

            /// True when no key is stored.
            pub fn is_empty(&self) -> bool {
                ConcurrentOrderedMap::is_empty(self)
            }

            /// Visits the entries within `range` in ascending order, keys decoded, until `f`
            /// breaks.
            pub fn visit_range<Rg>(&self, range: Rg, f: impl FnMut(&[u8], &V) -> ControlFlow<()>)
            where
                Rg: KeyRange,
            {
                ConcurrentOrderedMap::visit_range(self, range, f);
            }

            /// Visits the entries within `range` in descending order, keys decoded, until `f`
            /// breaks.
            pub fn visit_range_rev<Rg>(
                &self,
                range: Rg,
                f: impl FnMut(&[u8], &V) -> ControlFlow<()>,
            ) where
                Rg: KeyRange,
            {
                ConcurrentOrderedMap::visit_range_rev(self, range, f);
            }

            /// Memory of the inner map and the encoder.
            pub fn memory_usage(&self) -> usize {
                ConcurrentOrderedMap::memory_usage(self)
            }
        }
    };
}

concurrent_inherent!(crate::skiplist::SkipList<V>);
concurrent_inherent!(crate::cuckoo_trie::ConcurrentCuckooTrie<V>);
