//! The maps a [`Hybrid`](super::Hybrid) can be made of: a dynamic stage for writes, a
//! static stage for the bulk.

use core::cmp::Ordering;

use super::Slot;
use crate::Error;
use crate::api::{OrderedMap, RangeCursor, StaticMap, StaticMapBuilder};
use crate::compact_art::{CompactArt, CompactArtBuilder};
use crate::compact_btree::{CompactBTree, CompactBTreeBuilder};
use crate::cuckoo_trie::CuckooTrie;
use crate::succinct::fst::{Fst, FstBuilder, Scan};

/// A map that can be a hybrid index's dynamic stage: any ordered map of [`Slot`]s.
///
/// ```
/// use mlpdex::cuckoo_trie::CuckooTrie;
/// use mlpdex::hybrid::{DynamicStage, Slot};
///
/// let mut d: CuckooTrie<Slot> = CuckooTrie::new();
/// DynamicStage::reserve(&mut d, 1000); // room for the next merge's entries
/// d.insert(b"k", Slot::Value(1))?;
/// # Ok::<(), mlpdex::Error>(())
/// ```
pub trait DynamicStage: OrderedMap<Slot> + Default {
    /// Makes room for `additional` more entries where the map can, so that refilling after a
    /// merge emptied it does not grow it step by step. By default nothing; a failure is
    /// ignored (the map grows as it fills, and reports running out of memory then).
    fn reserve(&mut self, additional: usize) {
        let _ = additional;
    }
}

impl DynamicStage for CuckooTrie<Slot> {
    fn reserve(&mut self, additional: usize) {
        let _ = self.try_reserve(additional);
    }
}

/// A static map that can be a hybrid index's static stage: one built from a sorted stream by
/// its [`StaticMapBuilder`], which is how a merge makes the next one.
///
/// ```
/// use mlpdex::StaticMap;
/// use mlpdex::fst::Fst;
/// use mlpdex::hybrid::StaticStage;
///
/// let old = Fst::from_sorted([(&b"a"[..], 1), (b"b", 2)])?;
/// let new = old.merged([(&b"a"[..], None), (b"c", Some(3))])?;
/// assert_eq!(new.iter().collect::<Vec<_>>(), [(b"b".to_vec(), 2), (b"c".to_vec(), 3)]);
/// # Ok::<(), mlpdex::Error>(())
/// ```
pub trait StaticStage: StaticMap + Sized {
    /// The builder a merge streams the merged entries into.
    type Builder: StaticMapBuilder<Map = Self>;

    /// A builder with the map's default configuration.
    fn builder() -> Self::Builder;

    /// The map of no keys.
    fn empty() -> Result<Self, Error> {
        Self::builder().finish()
    }

    /// Starts loading what a lookup of `key` will read first, so that the hybrid's insert
    /// overlaps that miss with its write to the dynamic stage. By default nothing.
    #[inline]
    fn prefetch(&self, key: &[u8]) {
        let _ = key;
    }

    /// A new map with a sorted batch of updates applied (`None` removes the key). By
    /// default a streaming merge: both sorted sequences, walked together into a new map
    /// through [`builder`](Self::builder), the thesis' merge of sorted arrays; a map may do
    /// better (the compact ART copies the subtrees no update reaches, the compact B-tree the
    /// leaves).
    fn merged<K: AsRef<[u8]>>(
        &self,
        updates: impl IntoIterator<Item = (K, Option<u64>)>,
    ) -> Result<Self, Error> {
        stream_merge(Self::builder(), self.cursor(..), updates)
    }
}

/// The old entries of a streaming merge, in key order (a lending iterator).
trait OldEntries {
    fn next(&mut self) -> Option<(&[u8], u64)>;
}

impl<C: RangeCursor> OldEntries for C {
    #[inline]
    fn next(&mut self) -> Option<(&[u8], u64)> {
        RangeCursor::next(self)
    }
}

impl OldEntries for Scan<'_> {
    #[inline]
    fn next(&mut self) -> Option<(&[u8], u64)> {
        Scan::next(self)
    }
}

/// The streaming merge of [`StaticStage::merged`] of the entries `stat` into builder `b`.
fn stream_merge<B: StaticMapBuilder, K: AsRef<[u8]>>(
    mut b: B,
    mut stat: impl OldEntries,
    updates: impl IntoIterator<Item = (K, Option<u64>)>,
) -> Result<B::Map, Error> {
    let mut ups = updates.into_iter();
    let mut u = ups.next();
    // The old entry borrows the cursor until the next step (no copy of its key).
    let mut s = stat.next();
    loop {
        let ord = match (&u, &s) {
            (None, None) => break,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some((k, _)), Some((s_key, _))) => k.as_ref().cmp(s_key),
        };
        if ord.is_ge() {
            // The old entry goes in unless an update replaces or removes it.
            if let (true, Some((s_key, v))) = (ord.is_gt(), &s) {
                b.push(s_key, *v)?;
            }
            s = stat.next();
        }
        if ord.is_le() {
            let (k, v) = u.take().expect("an update");
            if let Some(v) = v {
                b.push(k.as_ref(), v)?;
            }
            u = ups.next();
        }
    }
    b.finish()
}

impl StaticStage for Fst {
    type Builder = FstBuilder;

    fn builder() -> FstBuilder {
        FstBuilder::new()
    }

    /// The streaming merge, into a builder with room for the old map's levels grown by the
    /// updates' count (their iterator's upper size bound, else its lower one), so that the
    /// levels do not grow by copies.
    fn merged<K: AsRef<[u8]>>(
        &self,
        updates: impl IntoIterator<Item = (K, Option<u64>)>,
    ) -> Result<Self, Error> {
        let updates = updates.into_iter();
        let (low, high) = updates.size_hint();
        let mut b = FstBuilder::with_config(self.config());
        b.reserve_like(self, high.unwrap_or(low));
        stream_merge(b, Scan::new(self), updates)
    }
}

impl StaticStage for CompactBTree {
    type Builder = CompactBTreeBuilder;

    fn builder() -> CompactBTreeBuilder {
        CompactBTreeBuilder::new()
    }

    fn merged<K: AsRef<[u8]>>(
        &self,
        updates: impl IntoIterator<Item = (K, Option<u64>)>,
    ) -> Result<Self, Error> {
        CompactBTree::merged(self, updates)
    }
}

impl StaticStage for CompactArt {
    type Builder = CompactArtBuilder;

    fn builder() -> CompactArtBuilder {
        CompactArtBuilder::new()
    }

    #[inline]
    fn prefetch(&self, key: &[u8]) {
        self.prefetch_lookup(key);
    }

    fn merged<K: AsRef<[u8]>>(
        &self,
        updates: impl IntoIterator<Item = (K, Option<u64>)>,
    ) -> Result<Self, Error> {
        CompactArt::merged(self, updates)
    }
}
