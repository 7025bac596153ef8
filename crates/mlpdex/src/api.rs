//! The traits every mlpdex structure implements, shaped like `std::collections::BTreeMap`.
//!
//! Four shapes of index share this vocabulary:
//!
//! | trait | writes | iteration | for |
//! |---|---|---|---|
//! | [`OrderedMap`] | `&mut self` | borrowing (or, for decoding maps, owning) `DoubleEndedIterator` | single-threaded maps |
//! | [`ConcurrentOrderedMap`] | `&self`, linearizable | guard-based `DoubleEndedIterator` (inherent), visitor (trait) | maps shared by threads |
//! | [`StaticMap`] | built once by a [`StaticMapBuilder`] | owned `DoubleEndedIterator`, or a lending [`RangeCursor`] | succinct / read-only maps |
//! | [`RangeFilter`] | built once | none | approximate membership (SuRF) |
//!
//! Keys are byte strings compared lexicographically (see [`crate::key`]). Ranges are given as any
//! [`KeyRange`]: `..`, a std range over a byte-like type (`&[u8]`, `Vec<u8>`, `&str`, …) or a
//! pair of `Bound`s; an empty or inverted range yields nothing, where `BTreeMap::range` would
//! panic.
//!
//! Insertion returns `Result` because a structure may refuse a key it cannot hold (for example
//! [`Error::KeyWidth`] for an integer-only map) or fail to get memory; no method panics on input.
//!
//! Why the concurrent trait iterates with a visitor: entries of a concurrent map live only as
//! long as an epoch guard, and a wrapper such as [`Hope`](crate::hope::Hope) rebuilds each key
//! in a buffer of its own, so it cannot lend keys for the guard's lifetime. The concurrent maps
//! themselves lend entries under a caller's [`epoch::Guard`](crate::epoch::Guard) through
//! inherent, guard-based iterators.

use crate::KeyRange;
use core::fmt;
use core::ops::{Bound, ControlFlow, Deref};

use crate::Error;

/// A single-threaded ordered map from byte-string keys to `V`.
///
/// Mirrors `BTreeMap<Vec<u8>, V>`: `get`, `insert` returning the previous value, `remove`, `len`,
/// `first`/`last`, seeks ([`lower_bound`](Self::lower_bound), [`upper_bound`](Self::upper_bound)),
/// and forward and reverse iteration over any range.
///
/// Keys go in as `&[u8]` and come out as [`Key`](Self::Key): a map that stores its keys'
/// bytes lends them (`&'a [u8]` for [`CuckooTrie`](crate::cuckoo_trie::CuckooTrie)); a map that
/// rebuilds keys from its layout hands out owned bytes (`[u8; 8]` for
/// [`MlpIndex`](crate::mlp_index::MlpIndex), whose `u64` keys are big-endian byte strings).
/// Generic code reads either through `AsRef<[u8]>`, cloning a key it wants to keep.
///
/// Values come out the same way, as [`Value`](Self::Value): a map that stores its values lends
/// them (`&'a V`, for every map in this crate), while a map that decodes values on the fly from
/// a compressed layout has nothing to lend and hands out an owned [`ByValue`]. Generic code reads
/// either through `Deref<Target = V>` (`*v`, or `(*v).clone()` to keep one). `insert` and
/// `remove` give values back by value whatever the map.
///
/// ```
/// use mlpdex::OrderedMap;
/// use mlpdex::cuckoo_trie::CuckooTrie;
/// use mlpdex::mlp_index::MlpIndex;
///
/// fn entries<M: OrderedMap<u64>>(m: &M) -> Vec<(Vec<u8>, u64)> {
///     m.iter().map(|(k, v)| (k.as_ref().to_vec(), *v)).collect()
/// }
/// let mut t = CuckooTrie::new();
/// OrderedMap::insert(&mut t, b"b", 2).unwrap();
/// let mut m = MlpIndex::new();
/// OrderedMap::insert(&mut m, &7u64.to_be_bytes(), 1).unwrap();
/// assert_eq!(entries(&t), [(b"b".to_vec(), 2)]);
/// assert_eq!(entries(&m), [(7u64.to_be_bytes().to_vec(), 1)]);
/// assert_eq!(OrderedMap::get(&t, b"b").map(|v| *v), Some(2));
/// ```
pub trait OrderedMap<V> {
    /// A key as the map hands it out: its bytes, in the order the map sorts them.
    type Key<'a>: AsRef<[u8]> + Clone + fmt::Debug
    where
        Self: 'a;

    /// A value as the map hands it out: `&'a V` for maps that store values (every map so far),
    /// or an owned [`ByValue`] for maps that decode them.
    type Value<'a>: Deref<Target = V> + fmt::Debug
    where
        Self: 'a,
        V: 'a;

    /// Iterator over `(key, value)` pairs of a range in key order, from both ends.
    type Range<'a>: DoubleEndedIterator<Item = (Self::Key<'a>, Self::Value<'a>)>
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

    /// Iterates over the keys within `range` in order; empty for an empty or inverted range.
    fn range<R>(&self, range: R) -> Self::Range<'_>
    where
        R: KeyRange;

    /// Bytes of memory the map owns: heap allocations and mapped regions, keys and values included.
    fn memory_usage(&self) -> usize;

    /// Removes every key.
    fn clear(&mut self);

    /// True when the map holds no key.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True when `key` is stored.
    fn contains_key(&self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// Iterates over every key in order.
    fn iter(&self) -> Self::Range<'_> {
        self.range(..)
    }

    /// The smallest key and its value.
    fn first(&self) -> Option<(Self::Key<'_>, Self::Value<'_>)> {
        self.iter().next()
    }

    /// The largest key and its value.
    fn last(&self) -> Option<(Self::Key<'_>, Self::Value<'_>)> {
        self.iter().next_back()
    }

    /// Seek: the first entry whose key is within `bound` from below — `≥ k` for `Included(k)`,
    /// `> k` for `Excluded(k)`, the first entry for `Unbounded`.
    fn lower_bound(&self, bound: Bound<&[u8]>) -> Option<(Self::Key<'_>, Self::Value<'_>)> {
        self.range((bound, Bound::Unbounded)).next()
    }

    /// Predecessor seek: the last entry whose key is `≤ k` for `Included(k)`, `< k` for
    /// `Excluded(k)`, the last entry for `Unbounded`.
    fn upper_bound(&self, bound: Bound<&[u8]>) -> Option<(Self::Key<'_>, Self::Value<'_>)> {
        self.range((Bound::Unbounded, bound)).next_back()
    }
}

/// A value handed out by value: the [`OrderedMap::Value`] of a map that decodes its values
/// rather than storing them, so it has none to lend.
///
/// Derefs to the value, so generic code reads it exactly like a lent `&V`; its `Debug` prints
/// only the value, so a map's `Debug` output does not change with the way it hands values out.
///
/// ```
/// use mlpdex::ByValue;
///
/// let v = ByValue(7u64);
/// assert_eq!(*v, 7);
/// assert_eq!(v.0, 7);
/// assert_eq!(format!("{v:?}"), "7");
/// assert_eq!(ByValue::from(7u64), v);
/// let s = ByValue(String::from("abc"));
/// assert_eq!(s.len(), 3); // methods of the value through `Deref`
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ByValue<V>(pub V);

impl<V> Deref for ByValue<V> {
    type Target = V;

    #[inline]
    fn deref(&self) -> &V {
        &self.0
    }
}

impl<V: fmt::Debug> fmt::Debug for ByValue<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<V> From<V> for ByValue<V> {
    #[inline]
    fn from(value: V) -> Self {
        ByValue(value)
    }
}

/// An ordered map whose operations take `&self` and may run on many threads at once.
///
/// The concurrent maps ([`SkipList`](crate::skiplist::SkipList) and
/// [`ConcurrentCuckooTrie`](crate::cuckoo_trie::ConcurrentCuckooTrie)) have the richer
/// interface inherently, with the same names and signatures on both: `get`, `range`, `iter`,
/// `lower_bound`, `upper_bound`, `first` and `last` take an [`epoch::Guard`](crate::epoch::Guard)
/// and lend `&'g` keys and values, and ranges are `DoubleEndedIterator`s. This trait is the
/// part every concurrent map can offer, wrappers included: [`Hope`](crate::hope::Hope)
/// decodes keys into a buffer of its own, so it cannot lend them for a guard's lifetime, and
/// hands them to a closure instead. The maps' implementations forward to their inherent
/// methods, pinning a guard for the duration of each call.
///
/// Contract: `get_with`, `insert`, `remove`, `lower_bound_with` and `upper_bound_with` are
/// linearizable. Range visits are not atomic, but a visit never reports a key removed before it
/// started, never skips a key present throughout, never reports a key twice, and reports keys in
/// order. Values are returned by clone because a replaced value may still be read by other
/// threads until reclamation.
///
/// ```
/// use mlpdex::ConcurrentOrderedMap;
/// use mlpdex::cuckoo_trie::ConcurrentCuckooTrie;
/// use mlpdex::skiplist::SkipList;
///
/// fn total<M: ConcurrentOrderedMap<u64>>(map: &M) -> u64 {
///     let mut sum = 0;
///     map.visit_range("a".."c", |_, v| {
///         sum += v;
///         core::ops::ControlFlow::Continue(())
///     });
///     sum
/// }
///
/// let list = SkipList::new();
/// let trie = ConcurrentCuckooTrie::new();
/// for (k, v) in [("apple", 1), ("banana", 2), ("cherry", 3)] {
///     ConcurrentOrderedMap::insert(&list, k.as_bytes(), v).unwrap();
///     trie.insert(k.as_bytes(), v).unwrap(); // the same, inherently
/// }
/// assert_eq!((total(&list), total(&trie)), (3, 3));
/// // With the trait in scope the inherent, guard-based `get` is still the one called:
/// assert_eq!(list.get(b"apple", &mlpdex::epoch::pin()), Some(&1));
/// assert_eq!(trie.get_cloned(b"apple"), Some(1));
/// ```
pub trait ConcurrentOrderedMap<V: Clone>: Sync {
    /// Applies `f` to the value stored under `key`, while it is protected from reclamation.
    fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&V) -> R) -> Option<R>;

    /// Stores `value` under `key`, returning a clone of the value it replaces.
    fn insert(&self, key: &[u8], value: V) -> Result<Option<V>, Error>;

    /// Removes `key`, returning a clone of its value.
    fn remove(&self, key: &[u8]) -> Option<V>;

    /// Number of keys stored; exact when no write is in flight.
    fn len(&self) -> usize;

    /// Bytes of memory the map owns, including records awaiting reclamation.
    fn memory_usage(&self) -> usize;

    /// Applies `f` to the first entry within `bound` from below (see [`OrderedMap::lower_bound`]).
    fn lower_bound_with<R>(&self, bound: Bound<&[u8]>, f: impl FnOnce(&[u8], &V) -> R)
    -> Option<R>;

    /// Applies `f` to the last entry within `bound` from above (see [`OrderedMap::upper_bound`]).
    fn upper_bound_with<R>(&self, bound: Bound<&[u8]>, f: impl FnOnce(&[u8], &V) -> R)
    -> Option<R>;

    /// Visits the entries within `range` in ascending order until `f` breaks.
    fn visit_range<Rg>(&self, range: Rg, f: impl FnMut(&[u8], &V) -> ControlFlow<()>)
    where
        Rg: KeyRange;

    /// Visits the entries within `range` in descending order until `f` breaks.
    fn visit_range_rev<Rg>(&self, range: Rg, f: impl FnMut(&[u8], &V) -> ControlFlow<()>)
    where
        Rg: KeyRange;

    /// A clone of the value stored under `key`. (Named apart from the maps' inherent
    /// `get(key, &guard)`, which lends the value instead.)
    fn get_cloned(&self, key: &[u8]) -> Option<V> {
        self.get_with(key, V::clone)
    }

    /// True when `key` is stored.
    fn contains_key(&self, key: &[u8]) -> bool {
        self.get_with(key, |_| ()).is_some()
    }

    /// True when the map holds no key.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A shared reference to a concurrent map is one too (every method takes `&self`), so code
/// generic over [`ConcurrentOrderedMap`] can borrow a map it does not own.
///
/// ```
/// use mlpdex::ConcurrentOrderedMap;
/// use mlpdex::skiplist::SkipList;
///
/// fn fill<M: ConcurrentOrderedMap<u64>>(map: M) {
///     map.insert(b"k", 1).unwrap();
/// }
/// let list = SkipList::new();
/// fill(&list);
/// assert_eq!(list.get_cloned(b"k"), Some(1));
/// ```
impl<V: Clone, M: ConcurrentOrderedMap<V>> ConcurrentOrderedMap<V> for &M {
    fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&V) -> R) -> Option<R> {
        (**self).get_with(key, f)
    }

    fn insert(&self, key: &[u8], value: V) -> Result<Option<V>, Error> {
        (**self).insert(key, value)
    }

    fn remove(&self, key: &[u8]) -> Option<V> {
        (**self).remove(key)
    }

    fn len(&self) -> usize {
        (**self).len()
    }

    fn memory_usage(&self) -> usize {
        (**self).memory_usage()
    }

    fn lower_bound_with<R>(
        &self,
        bound: Bound<&[u8]>,
        f: impl FnOnce(&[u8], &V) -> R,
    ) -> Option<R> {
        (**self).lower_bound_with(bound, f)
    }

    fn upper_bound_with<R>(
        &self,
        bound: Bound<&[u8]>,
        f: impl FnOnce(&[u8], &V) -> R,
    ) -> Option<R> {
        (**self).upper_bound_with(bound, f)
    }

    fn visit_range<Rg>(&self, range: Rg, f: impl FnMut(&[u8], &V) -> ControlFlow<()>)
    where
        Rg: KeyRange,
    {
        (**self).visit_range(range, f)
    }

    fn visit_range_rev<Rg>(&self, range: Rg, f: impl FnMut(&[u8], &V) -> ControlFlow<()>)
    where
        Rg: KeyRange,
    {
        (**self).visit_range_rev(range, f)
    }
}

/// A lending cursor over a range of a [`StaticMap`]: keys are rebuilt into the cursor's own
/// buffer (a succinct trie stores no key whole), so each item borrows the cursor until the next
/// call. The zero-copy way to scan; [`StaticMap::range`] gives the same entries as an
/// [`Iterator`] of owned keys.
///
/// Contract: `next` walks the range up from its start, `next_back` down from its end, the two
/// ends never pass each other, and once an end returns `None` it keeps returning `None`.
pub trait RangeCursor {
    /// The next entry from the front of the range.
    fn next(&mut self) -> Option<(&[u8], u64)>;

    /// The next entry from the back of the range.
    fn next_back(&mut self) -> Option<(&[u8], u64)>;

    /// Calls `f` on every remaining entry, front to back, without copying keys.
    fn for_each(&mut self, mut f: impl FnMut(&[u8], u64))
    where
        Self: Sized,
    {
        while let Some((k, v)) = self.next() {
            f(k, v);
        }
    }

    /// Appends every remaining entry, front to back, to `out`, copying each key once.
    fn collect_into(&mut self, out: &mut Vec<(Vec<u8>, u64)>)
    where
        Self: Sized,
    {
        self.for_each(|k, v| out.push((k.to_vec(), v)));
    }

    /// The remaining keys, front to back.
    fn collect_keys(&mut self) -> Vec<Vec<u8>>
    where
        Self: Sized,
    {
        let mut out = Vec::new();
        self.for_each(|k, _| out.push(k.to_vec()));
        out
    }

    /// This cursor as an [`Iterator`] (and [`DoubleEndedIterator`]) of owned entries.
    fn into_entries(self) -> Entries<Self>
    where
        Self: Sized,
    {
        Entries(self)
    }
}

/// Implements [`RangeCursor`] for a static map's lending cursor `$cursor<'a>` (a type with
/// inherent `next` and `next_back`), and gives it the trait's conveniences as inherent methods,
/// so that a caller needs no trait import; `$map` names the map whose `range` returns
/// `Entries<$cursor<'a>>`, for the docs.
macro_rules! lending_cursor {
    ($cursor:ident, $map:literal) => {
        impl<'a> $cursor<'a> {
            /// Calls `f` on every remaining entry, front to back, without copying keys.
            pub fn for_each(&mut self, f: impl FnMut(&[u8], u64)) {
                $crate::api::RangeCursor::for_each(self, f);
            }

            /// Appends every remaining entry, front to back, to `out`.
            pub fn collect_into(&mut self, out: &mut Vec<(Vec<u8>, u64)>) {
                $crate::api::RangeCursor::collect_into(self, out);
            }

            /// The remaining keys, front to back.
            pub fn collect_keys(&mut self) -> Vec<Vec<u8>> {
                $crate::api::RangeCursor::collect_keys(self)
            }

            #[doc = concat!("This cursor as an iterator of owned entries (what [`", $map, "::range`] returns).")]
            pub fn into_entries(self) -> $crate::api::Entries<$cursor<'a>> {
                $crate::api::RangeCursor::into_entries(self)
            }
        }

        impl $crate::api::RangeCursor for $cursor<'_> {
            fn next(&mut self) -> Option<(&[u8], u64)> {
                $cursor::next(self)
            }

            fn next_back(&mut self) -> Option<(&[u8], u64)> {
                $cursor::next_back(self)
            }
        }
    };
}
pub(crate) use lending_cursor;

/// Implements [`StaticMap`] for `$map` by forwarding to its inherent methods of the same names
/// (which a static map has, shaped like the trait's), with the types `Range` and `Cursor` of
/// the calling module, and `IntoIterator` for `&$map`. With `debug`, also `Debug` printing the
/// entries as `BTreeMap` does (non-printable key bytes as `\xNN`).
macro_rules! static_map_impls {
    ($map:ident $(, $debug:ident)?) => {
        impl $crate::api::StaticMap for $map {
            type Range<'a> = Range<'a>;
            type Cursor<'a> = Cursor<'a>;

            fn get(&self, key: &[u8]) -> Option<u64> {
                $map::get(self, key)
            }

            fn len(&self) -> usize {
                $map::len(self)
            }

            fn range<R>(&self, range: R) -> Range<'_>
            where
                R: $crate::KeyRange,
            {
                $map::range(self, range)
            }

            fn cursor<R>(&self, range: R) -> Cursor<'_>
            where
                R: $crate::KeyRange,
            {
                $map::cursor(self, range)
            }

            fn memory_usage(&self) -> usize {
                $map::memory_usage(self)
            }

            fn lower_bound(&self, bound: core::ops::Bound<&[u8]>) -> Option<(Vec<u8>, u64)> {
                $map::lower_bound(self, bound)
            }

            fn upper_bound(&self, bound: core::ops::Bound<&[u8]>) -> Option<(Vec<u8>, u64)> {
                $map::upper_bound(self, bound)
            }
        }

        impl<'a> IntoIterator for &'a $map {
            type Item = (Vec<u8>, u64);
            type IntoIter = Range<'a>;

            fn into_iter(self) -> Range<'a> {
                self.iter()
            }
        }

        $($crate::api::static_map_impls!(@$debug $map);)?
    };
    (@debug $map:ident) => {
        impl core::fmt::Debug for $map {
            /// The entries, as `BTreeMap` prints them (non-printable key bytes as `\xNN`).
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                let mut m = f.debug_map();
                let mut c = self.cursor(..);
                while let Some((k, v)) = c.next() {
                    m.entry(&$crate::key::Escaped(k), &v);
                }
                m.finish()
            }
        }
    };
}
pub(crate) use static_map_impls;

/// An [`Iterator`] and [`DoubleEndedIterator`] of owned `(key, value)` entries over a
/// [`RangeCursor`]: each step is the cursor's step plus one copy of the key. What
/// [`StaticMap::range`] returns; usable in `for` and with `collect`.
#[derive(Clone, Debug)]
pub struct Entries<C>(C);

impl<C: RangeCursor> Entries<C> {
    /// The cursor underneath, for zero-copy steps in between.
    pub fn cursor(&mut self) -> &mut C {
        &mut self.0
    }

    /// Gives the cursor back.
    pub fn into_cursor(self) -> C {
        self.0
    }
}

impl<C: RangeCursor> Iterator for Entries<C> {
    type Item = (Vec<u8>, u64);

    #[inline]
    fn next(&mut self) -> Option<(Vec<u8>, u64)> {
        self.0.next().map(|(k, v)| (k.to_vec(), v))
    }
}

impl<C: RangeCursor> DoubleEndedIterator for Entries<C> {
    #[inline]
    fn next_back(&mut self) -> Option<(Vec<u8>, u64)> {
        self.0.next_back().map(|(k, v)| (k.to_vec(), v))
    }
}

impl<C: RangeCursor> core::iter::FusedIterator for Entries<C> {}

/// A read-only ordered map from byte-string keys to `u64`, built once from sorted input.
///
/// Two ways to walk a range: [`range`](Self::range), an [`Iterator`] +
/// [`DoubleEndedIterator`] of owned `(Vec<u8>, u64)` entries (a succinct map stores no key
/// whole, so each key is built and copied out), and [`cursor`](Self::cursor), a lending
/// [`RangeCursor`] whose keys borrow its buffer (no copy).
pub trait StaticMap {
    /// Iterator returned by [`range`](Self::range).
    type Range<'a>: DoubleEndedIterator<Item = (Vec<u8>, u64)>
    where
        Self: 'a;

    /// Cursor type returned by [`cursor`](Self::cursor).
    type Cursor<'a>: RangeCursor
    where
        Self: 'a;

    /// The value stored under `key`.
    fn get(&self, key: &[u8]) -> Option<u64>;

    /// Number of keys stored.
    fn len(&self) -> usize;

    /// The entries within `range` in key order, from both ends; empty for an empty or inverted
    /// range.
    fn range<R>(&self, range: R) -> Self::Range<'_>
    where
        R: KeyRange;

    /// A lending cursor over the entries within `range`; empty for an empty or inverted range.
    fn cursor<R>(&self, range: R) -> Self::Cursor<'_>
    where
        R: KeyRange;

    /// Bytes of memory the map owns.
    fn memory_usage(&self) -> usize;

    /// Every entry in key order.
    fn iter(&self) -> Self::Range<'_> {
        self.range(..)
    }

    /// True when the map holds no key.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Seek: the first entry within `bound` from below (`≥ k`, `> k`, or the first entry).
    fn lower_bound(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, u64)> {
        self.range((bound, Bound::Unbounded)).next()
    }

    /// Predecessor seek: the last entry within `bound` from above (`≤ k`, `< k`, or the last
    /// entry).
    fn upper_bound(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, u64)> {
        self.range((Bound::Unbounded, bound)).next_back()
    }
}

/// Builds a [`StaticMap`] from keys given in strictly increasing order.
pub trait StaticMapBuilder {
    /// The map this builder produces.
    type Map: StaticMap;

    /// Appends `key`; fails with [`Error::OutOfOrder`] or [`Error::DuplicateKey`] unless `key`
    /// sorts strictly after the previous key. A failed call leaves the builder unchanged.
    fn push(&mut self, key: &[u8], value: u64) -> Result<(), Error>;

    /// Finishes the map.
    fn finish(self) -> Result<Self::Map, Error>;

    /// Appends every pair of `iter`, stopping at the first error.
    fn extend_sorted<K, I>(&mut self, iter: I) -> Result<(), Error>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (K, u64)>,
    {
        for (k, v) in iter {
            self.push(k.as_ref(), v)?;
        }
        Ok(())
    }
}

/// An approximate-membership filter over a key set that also answers range queries.
///
/// Never a false negative: if a stored key matches, the answer is `true`. A `true` answer may be a
/// false positive, at a rate the structure documents.
pub trait RangeFilter {
    /// False only when `key` is certainly not in the set.
    fn may_contain(&self, key: &[u8]) -> bool;

    /// False only when no key of the set lies within `range`.
    fn may_contain_range<R>(&self, range: R) -> bool
    where
        R: KeyRange;

    /// An estimate of how many keys of the set lie within `range`.
    fn approx_count<R>(&self, range: R) -> u64
    where
        R: KeyRange;

    /// Bytes of memory the filter owns.
    fn memory_usage(&self) -> usize;
}
