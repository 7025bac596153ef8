//! The key index (`Config::key_index`): beside the trie, one *key entry* per key, stored under
//! a hash of the whole key ([`Hasher::key_hash`]) and naming the key's record. A point lookup
//! probes it once instead of descending the trie, so its cost no longer grows with the depth
//! of the key's leaf: on keys with long shared prefixes (file paths: leaves about 84 symbols
//! deep, 40 nodes on the way) the descent costs about 10,000 instructions, the probe a few
//! hundred. A seek whose bound is an included key the trie holds is answered by that key's
//! entry too (`RawTrie::seek_exact`). Other seeks, scans and writes still walk the trie;
//! writes also keep the index.
//!
//! The index holds exactly one key entry per leaf, naming the leaf's record (checked by
//! [`RawTrie::audit`]). In a shared table the key entries are written in the same write
//! session as the leaf they mirror, so every committed state holds both or neither; a reader
//! compares its query with the record a key entry names before its session validates, which
//! is safe because the entry comes from one consistent bucket copy taken under the reader's
//! guard, so the record was linked after the guard was pinned and is freed only after it is
//! dropped (rule 2 of `shared`). A copy missing a key entry is torn, never an answer: the
//! session fails to validate.
//!
//! [`Hasher::key_hash`]: super::super::table::Hasher::key_hash

use super::super::table::{Ent, Full, Loc, Torn};
use super::{RawTrie, Scratch};

impl RawTrie {
    /// Whether this trie keeps key entries.
    #[inline(always)]
    pub(crate) fn has_key_index(&self) -> bool {
        self.params.key_index
    }

    /// The key entry of `key` (leaf-shaped: its record and key length).
    #[inline]
    pub(super) fn indexed(&self, key: &[u8]) -> Option<Ent> {
        self.indexed_under(self.table.hasher.key_hash(key), key)
    }

    /// [`indexed`](Self::indexed) for a caller that has hashed `key` already (`h`).
    #[inline]
    pub(super) fn indexed_under(&self, h: u64, key: &[u8]) -> Option<Ent> {
        // SAFETY: key entries name live records of this trie, read under `&self`.
        let found = self
            .table
            .find_key_entry(h, |e| unsafe { self.key_of(e) } == key);
        found.map(|(_, e)| e)
    }

    /// Prefetches the buckets of `key`'s key entry.
    #[inline]
    pub(super) fn prefetch_indexed(&self, key: &[u8]) {
        self.table.prefetch(self.table.hasher.key_hash(key));
    }

    /// The locator of the key entry naming `rec`, the record of `key`; `Err(Torn)` when a
    /// shared table's copies miss it (every committed state has it).
    fn key_entry_of(&self, key: &[u8], rec: *mut u8) -> Result<Loc, Torn> {
        let h = self.table.hasher.key_hash(key);
        match self.table.find_key_entry(h, |e| e.rec() == rec) {
            Some((_, e)) => Ok(Loc {
                h: h as u32,
                color: e.color(),
            }),
            None if self.table.is_shared() => Err(Torn),
            None => super::broken("a key without its key entry"),
        }
    }

    /// Adds the key entry of a new key's record `rec`, noting it in `w.created` so a failed
    /// insertion removes it again.
    pub(super) fn add_key_entry(
        &self,
        w: &mut Scratch,
        key: &[u8],
        rec: *mut u8,
    ) -> Result<(), Full> {
        if self.params.key_index {
            w.created.push(self.insert_key_entry(key, rec)?);
        }
        Ok(())
    }

    /// Inserts the key entry of `key`, whose record is `rec`.
    fn insert_key_entry(&self, key: &[u8], rec: *mut u8) -> Result<Loc, Full> {
        let h = self.table.hasher.key_hash(key);
        self.table.insert(h, Ent::key_entry(rec, key.len()))
    }

    /// Points `key`'s key entry at its new record `new` (it named `old`).
    pub(super) fn repoint_key_entry(
        &self,
        key: &[u8],
        old: *mut u8,
        new: *mut u8,
    ) -> Result<(), Torn> {
        let l = self.key_entry_of(key, old)?;
        self.table.update(l, |e| {
            *e = Ent::key_entry(new, e.key_len()).in_place_of(*e);
        })
    }

    /// Removes the key entry of `key`, whose record is `rec` (when the trie keeps an index).
    pub(super) fn remove_key_entry(&self, key: &[u8], rec: *mut u8) -> Result<(), Torn> {
        if !self.params.key_index {
            return Ok(());
        }
        let l = self.key_entry_of(key, rec)?;
        self.table.remove(l)
    }

    /// Adds the key entry of every leaf, when the trie keeps an index (a resize's copy holds
    /// only the trie's nodes).
    pub(super) fn index_all_keys(&self) -> Result<(), Full> {
        if !self.params.key_index {
            return Ok(());
        }
        let mut cur = super::stable(self.first());
        while let Some((_, e)) = cur {
            // SAFETY: a leaf of this trie; its record lives as long as the trie holds it.
            self.insert_key_entry(unsafe { self.key_of(e) }, e.rec())?;
            cur = super::stable(self.next(e));
        }
        Ok(())
    }

    /// Checks the index: one key entry per leaf of `leaves` (the trie's), naming the leaf's
    /// record, and none in a trie without an index. Returns the number of key entries.
    pub(super) fn audit_key_index(&self, leaves: &[Ent]) -> Result<usize, String> {
        let t = &self.table;
        let mut entries = 0;
        for (h, e) in t.entries() {
            if e.is_key_entry() {
                if !self.params.key_index {
                    return Err(format!("a key entry under hash {h} without a key index"));
                }
                // SAFETY: key entries name live records (checked against the leaves below).
                let key = unsafe { self.key_of(e) };
                if t.hasher.key_hash(key) != h {
                    return Err(format!("key entry of {key:?} under hash {h}"));
                }
                entries += 1;
            }
        }
        if self.params.key_index {
            if entries != leaves.len() {
                return Err(format!("{entries} key entries, {} leaves", leaves.len()));
            }
            for &leaf in leaves {
                // SAFETY: a leaf of this trie.
                let key = unsafe { self.key_of(leaf) };
                let h = t.hasher.key_hash(key);
                match t.find_key_entry(h, |e| e.rec() == leaf.rec()) {
                    Some((_, e)) if e.key_len() == key.len() => {}
                    _ => return Err(format!("no key entry for {key:?}")),
                }
            }
        }
        Ok(entries)
    }
}
