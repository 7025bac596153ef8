//! The entry API of [`CuckooTrie`], shaped like `std::collections::btree_map::Entry`.

use core::fmt;

use super::CuckooTrie;
use super::raw::typed::{Occupied, RawEntry, TypedTrie};
use crate::Error;
use crate::key::Escaped;

impl<V> CuckooTrie<V> {
    /// The entry of `key`, for in-place insertion or update.
    ///
    /// An occupied entry holds the record it found, so reading or updating it searches once.
    /// A vacant entry copies `key` (as `BTreeMap`'s owns its key) and inserts with one more
    /// search.
    ///
    /// ```
    /// use mlpdex::cuckoo_trie::CuckooTrie;
    ///
    /// let mut words: CuckooTrie<usize> = CuckooTrie::new();
    /// for w in ["the", "cat", "the", "hat"] {
    ///     *words.entry(w.as_bytes()).or_insert(0) += 1;
    /// }
    /// assert_eq!(words[b"the"], 2);
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
            Err(e) => panic!("CuckooTrie::entry: {e}"),
        }
    }

    /// [`entry`](Self::entry), or [`Error::KeyTooLong`] for a key over
    /// [`MAX_KEY_LEN`](Self::MAX_KEY_LEN) bytes.
    pub fn try_entry(&mut self, key: &[u8]) -> Result<Entry<'_, V>, Error> {
        super::check_len(key)?;
        Ok(match self.raw.entry(key) {
            RawEntry::Occupied(inner) => Entry::Occupied(OccupiedEntry { inner }),
            RawEntry::Vacant(trie) => Entry::Vacant(VacantEntry {
                trie,
                key: key.to_vec(),
            }),
        })
    }
}

/// A view into one key of a [`CuckooTrie`], from [`CuckooTrie::entry`].
pub enum Entry<'a, V> {
    /// The key is present.
    Occupied(OccupiedEntry<'a, V>),
    /// The key is absent.
    Vacant(VacantEntry<'a, V>),
}

/// A present key of a [`CuckooTrie`]; see [`Entry`].
pub struct OccupiedEntry<'a, V> {
    inner: Occupied<'a, V>,
}

/// An absent key of a [`CuckooTrie`]; see [`Entry`].
pub struct VacantEntry<'a, V> {
    trie: &'a mut TypedTrie<V>,
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

    /// Applies `f` to the value if the key is present.
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
        self.inner.key()
    }

    /// The value.
    pub fn get(&self) -> &V {
        self.inner.get()
    }

    /// The value, mutably, for as long as the entry is borrowed.
    pub fn get_mut(&mut self) -> &mut V {
        self.inner.get_mut()
    }

    /// The value, mutably, for as long as the map is borrowed.
    pub fn into_mut(self) -> &'a mut V {
        self.inner.into_mut()
    }

    /// Replaces the value, returning the old one.
    pub fn insert(&mut self, value: V) -> V {
        core::mem::replace(self.get_mut(), value)
    }

    /// Removes the entry, returning its value.
    pub fn remove(self) -> V {
        self.inner.remove()
    }

    /// Removes the entry, returning its key and value.
    pub fn remove_entry(self) -> (Vec<u8>, V) {
        self.inner.remove_entry()
    }
}

impl<'a, V> VacantEntry<'a, V> {
    /// The key that would be inserted.
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The key, giving up the entry.
    pub fn into_key(self) -> Vec<u8> {
        self.key
    }

    /// Inserts `value` under the entry's key; returns it, mutably.
    ///
    /// # Panics
    ///
    /// If the table cannot grow because the operating system refuses memory (as std's
    /// collections abort on allocation failure); [`CuckooTrie::insert`] returns
    /// [`Error::OutOfMemory`] instead.
    pub fn insert(self, value: V) -> &'a mut V {
        let VacantEntry { trie, key } = self;
        match trie.insert(&key, value) {
            Ok((v, _)) => v,
            Err(e) => panic!("CuckooTrie: VacantEntry::insert: {e}"),
        }
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
            .field(&Escaped(self.key()))
            .finish()
    }
}
