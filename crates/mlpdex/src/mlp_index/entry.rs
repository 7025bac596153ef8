//! The entry API, shaped like `std::collections::btree_map::Entry`.
//!
//! Insertion through an entry has no `Result` in std's shape; here it panics if the operating
//! system refuses a grown table (as std's collections fail on allocation failure), and
//! [`VacantEntry::try_insert`] returns the error instead.

use core::fmt;

use super::raw::table::Loc;
use super::{MlpIndex, out_of_memory};

/// A view into one key of an [`MlpIndex`], present or not; made by [`MlpIndex::entry`].
///
/// ```
/// use mlpdex::mlp_index::MlpIndex;
///
/// let mut counts = MlpIndex::new();
/// for k in [3, 1, 3, 3] {
///     *counts.entry(k).or_insert(0) += 1;
/// }
/// assert_eq!(counts.get(3), Some(3));
/// counts.entry(1).and_modify(|v| *v *= 10).or_default();
/// assert_eq!(counts.get(1), Some(10));
/// ```
pub enum Entry<'a> {
    /// The key is absent.
    Vacant(VacantEntry<'a>),
    /// The key is present.
    Occupied(OccupiedEntry<'a>),
}

/// An absent key of an [`MlpIndex`]; see [`Entry`].
pub struct VacantEntry<'a> {
    map: &'a mut MlpIndex,
    key: u64,
}

/// A present key of an [`MlpIndex`] and where its value is; see [`Entry`].
pub struct OccupiedEntry<'a> {
    map: &'a mut MlpIndex,
    key: u64,
    /// The key's leaf: valid while the entry borrows the map, which nothing else changes.
    loc: Loc,
}

impl<'a> Entry<'a> {
    /// The entry's key.
    pub fn key(&self) -> &u64 {
        match self {
            Entry::Vacant(e) => e.key(),
            Entry::Occupied(e) => e.key(),
        }
    }

    /// The value, inserting `default` if the key is absent.
    ///
    /// # Panics
    ///
    /// If the operating system refuses a grown table.
    pub fn or_insert(self, default: u64) -> &'a mut u64 {
        self.or_insert_with(|| default)
    }

    /// The value, inserting `default()` if the key is absent.
    ///
    /// # Panics
    ///
    /// If the operating system refuses a grown table.
    pub fn or_insert_with<F: FnOnce() -> u64>(self, default: F) -> &'a mut u64 {
        match self {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(default()),
        }
    }

    /// The value, inserting `default(key)` if the key is absent.
    ///
    /// # Panics
    ///
    /// If the operating system refuses a grown table.
    pub fn or_insert_with_key<F: FnOnce(u64) -> u64>(self, default: F) -> &'a mut u64 {
        match self {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let v = default(e.key);
                e.insert(v)
            }
        }
    }

    /// The value, inserting 0 if the key is absent.
    ///
    /// # Panics
    ///
    /// If the operating system refuses a grown table.
    pub fn or_default(self) -> &'a mut u64 {
        self.or_insert(0)
    }

    /// Applies `f` to the value if the key is present; the entry is returned for chaining.
    pub fn and_modify<F: FnOnce(&mut u64)>(self, f: F) -> Entry<'a> {
        match self {
            Entry::Occupied(mut e) => {
                f(e.get_mut());
                Entry::Occupied(e)
            }
            vacant => vacant,
        }
    }
}

impl<'a> VacantEntry<'a> {
    pub(super) fn new(map: &'a mut MlpIndex, key: u64) -> VacantEntry<'a> {
        VacantEntry { map, key }
    }

    /// The key that would be inserted.
    pub fn key(&self) -> &u64 {
        &self.key
    }

    /// The key, giving up the entry.
    pub fn into_key(self) -> u64 {
        self.key
    }

    /// Inserts `value` under the key, returning it in place.
    ///
    /// # Panics
    ///
    /// If the operating system refuses a grown table; see [`try_insert`](Self::try_insert).
    pub fn insert(self, value: u64) -> &'a mut u64 {
        self.try_insert(value).unwrap_or_else(|e| out_of_memory(e))
    }

    /// Inserts `value` under the key, returning it in place, or [`Error::OutOfMemory`]
    /// (after which the map is empty, as after a failed [`MlpIndex::insert`]).
    ///
    /// [`Error::OutOfMemory`]: crate::Error::OutOfMemory
    pub fn try_insert(self, value: u64) -> Result<&'a mut u64, crate::Error> {
        let map = self.map;
        let prev = map.insert(self.key, value)?;
        debug_assert!(prev.is_none(), "a vacant entry's key is absent");
        let loc = map.leaf(self.key).expect("a key just inserted is present");
        Ok(map.value_at_mut(loc))
    }
}

impl<'a> OccupiedEntry<'a> {
    pub(super) fn new(map: &'a mut MlpIndex, key: u64, loc: Loc) -> OccupiedEntry<'a> {
        OccupiedEntry { map, key, loc }
    }

    /// The key.
    pub fn key(&self) -> &u64 {
        &self.key
    }

    /// The value.
    pub fn get(&self) -> &u64 {
        self.map.value_at(self.loc)
    }

    /// The value, for changing in place.
    pub fn get_mut(&mut self) -> &mut u64 {
        self.map.value_at_mut(self.loc)
    }

    /// The value, for changing in place, for as long as the map is borrowed.
    pub fn into_mut(self) -> &'a mut u64 {
        self.map.value_at_mut(self.loc)
    }

    /// Replaces the value, returning the old one.
    pub fn insert(&mut self, value: u64) -> u64 {
        core::mem::replace(self.get_mut(), value)
    }

    /// Removes the key, returning its value.
    pub fn remove(self) -> u64 {
        self.remove_entry().1
    }

    /// Removes the key, returning it and its value.
    pub fn remove_entry(self) -> (u64, u64) {
        let v = self
            .map
            .remove(self.key)
            .expect("an occupied entry's key is present");
        (self.key, v)
    }
}

impl fmt::Debug for Entry<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Entry::Vacant(e) => f.debug_tuple("Entry").field(e).finish(),
            Entry::Occupied(e) => f.debug_tuple("Entry").field(e).finish(),
        }
    }
}

impl fmt::Debug for VacantEntry<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("VacantEntry").field(&self.key).finish()
    }
}

impl fmt::Debug for OccupiedEntry<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OccupiedEntry")
            .field("key", &self.key)
            .field("value", self.get())
            .finish()
    }
}
