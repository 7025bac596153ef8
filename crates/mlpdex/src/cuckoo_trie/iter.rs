//! Iterators of [`CuckooTrie`] beyond [`Range`]: mutable, owning, keys and values; and the
//! `IntoIterator`, `FromIterator` and `Extend` impls.

use core::fmt;
use core::iter::FusedIterator;

use super::raw::typed::{Drain, WalkMut};
use super::{CuckooTrie, Range};
use crate::key::Escaped;
use crate::{Error, KeyRange};

impl<V> CuckooTrie<V> {
    /// A double-ended iterator over every entry in key order, values mutable.
    pub fn iter_mut(&mut self) -> IterMut<'_, V> {
        self.range_mut(..)
    }

    /// A double-ended iterator over the entries with keys in `range`, values mutable.
    pub fn range_mut<R: KeyRange>(&mut self, range: R) -> IterMut<'_, V> {
        let (start, end) = range.key_bounds();
        IterMut {
            walk: self.raw.walk_mut(start, end),
        }
    }

    /// The keys, in order.
    pub fn keys(&self) -> Keys<'_, V> {
        Keys { inner: self.iter() }
    }

    /// The values, in key order.
    pub fn values(&self) -> Values<'_, V> {
        Values { inner: self.iter() }
    }

    /// The values, mutably, in key order.
    pub fn values_mut(&mut self) -> ValuesMut<'_, V> {
        ValuesMut {
            inner: self.iter_mut(),
        }
    }

    /// The keys, owned, in order (the map is consumed).
    pub fn into_keys(self) -> IntoKeys<V> {
        IntoKeys {
            inner: self.into_iter(),
        }
    }

    /// The values, in key order (the map is consumed).
    pub fn into_values(self) -> IntoValues<V> {
        IntoValues {
            inner: self.into_iter(),
        }
    }

    /// Inserts every pair of `iter`, stopping at the first error: [`Error::KeyTooLong`] (that
    /// pair is dropped; earlier ones stay inserted) or [`Error::OutOfMemory`].
    pub fn try_extend<K, I>(&mut self, iter: I) -> Result<(), Error>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (K, V)>,
    {
        for (k, v) in iter {
            self.insert(k.as_ref(), v)?;
        }
        Ok(())
    }
}

/// A double-ended iterator over entries of a [`CuckooTrie`] with mutable values; from
/// [`CuckooTrie::iter_mut`] or [`CuckooTrie::range_mut`].
pub struct IterMut<'a, V> {
    walk: WalkMut<'a, V>,
}

impl<'a, V> Iterator for IterMut<'a, V> {
    type Item = (&'a [u8], &'a mut V);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.walk.next()
    }
}

impl<V> DoubleEndedIterator for IterMut<'_, V> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        self.walk.next_back()
    }
}

impl<V> FusedIterator for IterMut<'_, V> {}

impl<V> fmt::Debug for IterMut<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (front, back) = self.walk.ends();
        f.debug_struct("IterMut")
            .field("front", &front.map(Escaped))
            .field("back", &back.map(Escaped))
            .finish()
    }
}

/// The entries of a [`CuckooTrie`], owned, in key order from both ends; from its
/// `into_iter()`.
///
/// Built by taking every record out of the trie at once (one address and length per key,
/// 16 bytes, while the table is freed); each step then copies a key out and frees its record.
pub struct IntoIter<V> {
    drain: Drain<V>,
}

impl<V> Iterator for IntoIter<V> {
    type Item = (Vec<u8>, V);

    fn next(&mut self) -> Option<(Vec<u8>, V)> {
        self.drain.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.drain.size_hint()
    }
}

impl<V> DoubleEndedIterator for IntoIter<V> {
    fn next_back(&mut self) -> Option<(Vec<u8>, V)> {
        self.drain.next_back()
    }
}

impl<V> ExactSizeIterator for IntoIter<V> {}
impl<V> FusedIterator for IntoIter<V> {}

impl<V> fmt::Debug for IntoIter<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntoIter")
            .field("remaining", &self.drain.len())
            .finish()
    }
}

impl<V> IntoIterator for CuckooTrie<V> {
    type Item = (Vec<u8>, V);
    type IntoIter = IntoIter<V>;

    fn into_iter(mut self) -> IntoIter<V> {
        IntoIter {
            drain: self.raw.drain(),
        }
    }
}

impl<'a, V> IntoIterator for &'a CuckooTrie<V> {
    type Item = (&'a [u8], &'a V);
    type IntoIter = Range<'a, V>;

    fn into_iter(self) -> Range<'a, V> {
        self.iter()
    }
}

impl<'a, V> IntoIterator for &'a mut CuckooTrie<V> {
    type Item = (&'a [u8], &'a mut V);
    type IntoIter = IterMut<'a, V>;

    fn into_iter(self) -> IterMut<'a, V> {
        self.iter_mut()
    }
}

/// Defines an iterator that maps another one's items, both ends.
macro_rules! mapped_iter {
    ($(#[$doc:meta])* $name:ident<$($lt:lifetime,)? V>, $inner:ty, $item:ty, |$x:pat_param| $map:expr) => {
        $(#[$doc])*
        pub struct $name<$($lt,)? V> {
            inner: $inner,
        }

        impl<$($lt,)? V> Iterator for $name<$($lt,)? V> {
            type Item = $item;

            #[inline]
            fn next(&mut self) -> Option<$item> {
                self.inner.next().map(|$x| $map)
            }

            fn size_hint(&self) -> (usize, Option<usize>) {
                self.inner.size_hint()
            }
        }

        impl<$($lt,)? V> DoubleEndedIterator for $name<$($lt,)? V> {
            #[inline]
            fn next_back(&mut self) -> Option<$item> {
                self.inner.next_back().map(|$x| $map)
            }
        }

        impl<$($lt,)? V> FusedIterator for $name<$($lt,)? V> {}

        impl<$($lt,)? V> fmt::Debug for $name<$($lt,)? V> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name)).finish_non_exhaustive()
            }
        }
    };
}

mapped_iter!(
    /// The keys of a [`CuckooTrie`] in order; from [`CuckooTrie::keys`].
    Keys<'a, V>, Range<'a, V>, &'a [u8], |(k, _)| k
);
mapped_iter!(
    /// The values of a [`CuckooTrie`] in key order; from [`CuckooTrie::values`].
    Values<'a, V>, Range<'a, V>, &'a V, |(_, v)| v
);
mapped_iter!(
    /// The values of a [`CuckooTrie`], mutable, in key order; from
    /// [`CuckooTrie::values_mut`].
    ValuesMut<'a, V>, IterMut<'a, V>, &'a mut V, |(_, v)| v
);
mapped_iter!(
    /// The keys of a consumed [`CuckooTrie`] in order; from [`CuckooTrie::into_keys`].
    IntoKeys<V>, IntoIter<V>, Vec<u8>, |(k, _)| k
);
mapped_iter!(
    /// The values of a consumed [`CuckooTrie`] in key order; from
    /// [`CuckooTrie::into_values`].
    IntoValues<V>, IntoIter<V>, V, |(_, v)| v
);

impl<V> ExactSizeIterator for IntoKeys<V> {}
impl<V> ExactSizeIterator for IntoValues<V> {}

/// Inserts every pair, a later value replacing an earlier one under the same key.
///
/// # Panics
///
/// On a key longer than [`CuckooTrie::MAX_KEY_LEN`], or if the operating system refuses
/// memory; [`CuckooTrie::try_extend`] returns those as errors.
impl<K: AsRef<[u8]>, V> Extend<(K, V)> for CuckooTrie<V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        if let Err(e) = self.try_extend(iter) {
            panic!("CuckooTrie::extend: {e}");
        }
    }
}

/// A map of every pair, with the default config (see [`Extend`] for later duplicates and
/// panics).
///
/// ```
/// use mlpdex::cuckoo_trie::CuckooTrie;
///
/// let t: CuckooTrie<u32> = [("b", 2), ("a", 1)].into_iter().collect();
/// assert_eq!(t.keys().collect::<Vec<_>>(), [b"a", b"b"]);
/// ```
impl<K: AsRef<[u8]>, V> FromIterator<(K, V)> for CuckooTrie<V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut t = CuckooTrie::new();
        t.extend(iter);
        t
    }
}
