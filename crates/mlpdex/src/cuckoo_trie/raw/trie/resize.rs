//! Growth and shrinking: a copy of the trie into a table of another size (the copy itself is
//! `migrate`).

use core::sync::atomic::Ordering::Relaxed;

use super::super::table::{FrozenRead, Full, SLOTS, Table};
use super::RawTrie;
use super::migrate::Lobby;
use crate::Error;

/// Table entries per key that [`RawTrie::reserved`] plans for: the leaf and a share of the
/// internal nodes. Random 8-byte keys measured about 1.3 (10M keys: 42.8 bytes per key,
/// 16 of them the record, at 75% load); keys with long shared prefixes need more, and the map
/// still grows when they do.
const ENTRIES_PER_KEY: f64 = 1.5;

impl RawTrie {
    /// A copy of this trie in a table of twice the buckets (readers may keep using `self`
    /// meanwhile: it only reads). A shared table must be frozen first
    /// ([`Table::freeze`]): the copy reads it as one that cannot change. Writers waiting in
    /// `lobby` help walk the old table.
    #[cold]
    pub(crate) fn grown(&self, lobby: Option<&Lobby>) -> Result<RawTrie, Error> {
        self.resized(self.table.buckets() * 2, lobby)
    }

    /// A copy of this trie in a table sized for its entries at half the load limit.
    #[cold]
    pub(crate) fn shrunk(&self, lobby: Option<&Lobby>) -> Result<RawTrie, Error> {
        self.resized(self.fit_buckets(), lobby)
    }

    /// The table size [`shrunk`](Self::shrunk) copies into: the entries at half the load
    /// limit, at least the initial size.
    pub(crate) fn fit_buckets(&self) -> usize {
        let entries = self.table.used();
        let want = (entries as f64 / (self.params.max_load_factor / 2.0) / 4.0).ceil() as usize;
        want.max(self.params.initial_buckets)
    }

    /// A copy of this trie in a table large enough that `keys` keys fit without growing, or
    /// `None` when this one already is ([`buckets_for`](Self::buckets_for)).
    #[cold]
    pub(crate) fn reserved(&self, keys: usize) -> Result<Option<RawTrie>, Error> {
        match self.buckets_for(keys)? {
            Some(buckets) => self.resized(buckets, None).map(Some),
            None => Ok(None),
        }
    }

    /// The table size in which `keys` keys fit without growing, or `None` when this one is
    /// large enough. The estimate is [`ENTRIES_PER_KEY`] entries per key; the table doubles
    /// from its size, so a power-of-two table stays one (its hash reduces with a mask).
    pub(crate) fn buckets_for(&self, keys: usize) -> Result<Option<usize>, Error> {
        let per_key = ENTRIES_PER_KEY + f64::from(u8::from(self.params.key_index));
        let entries = (keys as f64 * per_key).ceil() + 1.0;
        let slots = entries / self.params.max_load_factor;
        let mut buckets = self.table.buckets();
        if (buckets * SLOTS) as f64 >= slots {
            return Ok(None);
        }
        while ((buckets * SLOTS) as f64) < slots {
            buckets = buckets
                .checked_mul(2)
                .ok_or(Error::OutOfMemory { bytes: usize::MAX })?;
        }
        Ok(Some(buckets))
    }

    /// A copy of this trie in a table of at least `buckets` buckets (more if the copy does not
    /// fit), with helpers from `lobby`. A shared table must be frozen first.
    pub(crate) fn resized(
        &self,
        mut buckets: usize,
        lobby: Option<&Lobby>,
    ) -> Result<RawTrie, Error> {
        let _frozen = self.table.is_shared().then(FrozenRead::begin);
        let mut seed = self.seed;
        for attempt in 0u64.. {
            seed = seed.wrapping_add(0x9E37_79B9 + attempt);
            let table = Table::with_buckets(buckets, seed, self.params.huge_pages)?;
            match self.migrate_into(&table, lobby) {
                Ok((root, head)) => {
                    let mut copy = Self::assemble(
                        table,
                        self.params,
                        seed,
                        root,
                        head,
                        self.len(),
                        (self.depth_avg.load(Relaxed), self.horizon.load(Relaxed)),
                    );
                    // The migration copies the trie's nodes; the key index is rebuilt from
                    // the copy's leaves while only this thread sees the copy, so it is
                    // written directly and marked shared after.
                    match copy.index_all_keys() {
                        Ok(()) => {
                            if self.table.is_shared() {
                                copy.set_shared();
                            }
                            return Ok(copy);
                        }
                        Err(Full) => buckets = buckets + buckets / 2 + 1,
                    }
                }
                Err(Full) => buckets = buckets + buckets / 2 + 1,
            }
        }
        unreachable!()
    }
}
