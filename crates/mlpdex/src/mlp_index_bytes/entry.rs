//! The entry API of [`MlpIndexBytes`], shaped like `std::collections::btree_map::Entry`.

use core::fmt;

use super::raw::{Pos, RawMap};
use super::{MlpIndexBytes, check_len};
use crate::Error;
use crate::key::Escaped;

impl<V> MlpIndexBytes<V> {
    /// The entry of `key`, for in-place insertion or update.
    ///
    /// An occupied entry holds the position it found, so reading or updating it searches once;
    /// a vacant entry copies `key` (as `BTreeMap`'s owns its key) and inserts with one more
    /// search.
    ///
    /// ```
    /// use mlpdex::mlp_index_bytes::MlpIndexBytes;
    ///
    /// let mut words: MlpIndexBytes<usize> = MlpIndexBytes::new();
    /// for w in ["the", "cat", "the", "hat"] {
    ///     *words.entry(w.as_bytes()).or_insert(0) += 1;
    /// }
    /// assert_eq!(words[&b"the"[..]], 2);
    /// words.entry(b"cat").and_modify(|n| *n += 10).or_default();
    /// assert_eq!(words.get(b"cat"), Some(&11));
    /// ```
    ///
    /// # Panics
    ///
    /// If `key` is longer than [`MAX_KEY_LEN`](Self::MAX_KEY_LEN) bytes; use
    /// [`try_entry`](Self::try_entry) to get [`Error::KeyTooLong`] instead.
    pub fn entry(&mut self, key: &[u8]) -> Entry<'_, V> {
        match self.try_entry(key) {
            Ok(e) => e,
            Err(e) => panic!("MlpIndexBytes::entry: {e}"),
        }
    }

    /// [`entry`](Self::entry), or [`Error::KeyTooLong`] for a key over
    /// [`MAX_KEY_LEN`](Self::MAX_KEY_LEN) bytes.
    pub fn try_entry(&mut self, key: &[u8]) -> Result<Entry<'_, V>, Error> {
        check_len(key)?;
        Ok(match self.raw.find(key) {
            Some(at) => Entry::Occupied(OccupiedEntry {
                map: &mut self.raw,
                at,
            }),
            None => Entry::Vacant(VacantEntry {
                map: &mut self.raw,
                key: key.to_vec(),
            }),
        })
    }
}

/// A view into one key of an [`MlpIndexBytes`], from [`MlpIndexBytes::entry`].
pub enum Entry<'a, V> {
    /// The key is present.
    Occupied(OccupiedEntry<'a, V>),
    /// The key is absent.
    Vacant(VacantEntry<'a, V>),
}

/// A present key's entry.
pub struct OccupiedEntry<'a, V> {
    map: &'a mut RawMap<V>,
    at: Pos,
}

/// An absent key's entry.
pub struct VacantEntry<'a, V> {
    map: &'a mut RawMap<V>,
    key: Vec<u8>,
}

impl<'a, V> Entry<'a, V> {
    /// The value, inserting `default` first if the key is absent.
    pub fn or_insert(self, default: V) -> &'a mut V {
        match self {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(v) => v.insert(default),
        }
    }

    /// The value, inserting `default()` first if the key is absent.
    pub fn or_insert_with<F: FnOnce() -> V>(self, default: F) -> &'a mut V {
        match self {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(v) => v.insert(default()),
        }
    }

    /// The value, inserting `default(key)` first if the key is absent.
    pub fn or_insert_with_key<F: FnOnce(&[u8]) -> V>(self, default: F) -> &'a mut V {
        match self {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(v) => {
                let value = default(&v.key);
                v.insert(value)
            }
        }
    }

    /// The entry's key.
    pub fn key(&self) -> &[u8] {
        match self {
            Entry::Occupied(o) => o.key(),
            Entry::Vacant(v) => v.key(),
        }
    }

    /// Runs `f` on the value if the key is present.
    pub fn and_modify<F: FnOnce(&mut V)>(mut self, f: F) -> Self {
        if let Entry::Occupied(o) = &mut self {
            f(o.get_mut());
        }
        self
    }
}

impl<'a, V: Default> Entry<'a, V> {
    /// The value, inserting `V::default()` first if the key is absent.
    pub fn or_default(self) -> &'a mut V {
        self.or_insert_with(V::default)
    }
}

impl<'a, V> OccupiedEntry<'a, V> {
    /// The stored key.
    pub fn key(&self) -> &[u8] {
        self.map.entry(self.at).0
    }

    /// The value.
    pub fn get(&self) -> &V {
        self.map.entry(self.at).1
    }

    /// The value, mutably.
    pub fn get_mut(&mut self) -> &mut V {
        self.map.val_mut(self.at)
    }

    /// The value, mutably, for as long as the map's borrow.
    pub fn into_mut(self) -> &'a mut V {
        self.map.val_mut(self.at)
    }

    /// Replaces the value; returns the old one.
    pub fn insert(&mut self, value: V) -> V {
        core::mem::replace(self.get_mut(), value)
    }

    /// Removes the entry; returns its value.
    pub fn remove(self) -> V {
        self.remove_entry().1
    }

    /// Removes the entry; returns its key and value.
    pub fn remove_entry(self) -> (Vec<u8>, V) {
        self.map.remove_at(self.at)
    }
}

impl<'a, V> VacantEntry<'a, V> {
    /// The key that would be inserted.
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// Takes the key back.
    pub fn into_key(self) -> Vec<u8> {
        self.key
    }

    /// Inserts `value` under the key; returns it, mutably.
    pub fn insert(self, value: V) -> &'a mut V {
        let (at, old) = self.map.insert(&self.key, value);
        debug_assert!(old.is_none(), "a vacant entry's key was absent");
        self.map.val_mut(at)
    }
}

impl<V: fmt::Debug> fmt::Debug for Entry<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Entry::Occupied(o) => f.debug_tuple("Entry").field(o).finish(),
            Entry::Vacant(v) => f.debug_tuple("Entry").field(v).finish(),
        }
    }
}

impl<V: fmt::Debug> fmt::Debug for OccupiedEntry<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OccupiedEntry")
            .field("key", &Escaped(self.key()))
            .field("value", self.get())
            .finish()
    }
}

impl<V> fmt::Debug for VacantEntry<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("VacantEntry")
            .field(&Escaped(&self.key))
            .finish()
    }
}
