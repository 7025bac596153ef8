//! The hash tables of vm-shortcuts-extendible-hashing.txt §4.2, the baselines of
//! `shortcut-eh`: `ht` (open addressing with linear probing, doubled and rehashed in one go),
//! `hti` (the same, rehashed incrementally as Redis' dict does) and `ch` (chaining from a
//! table sized up front). All take 8-byte keys as `u64` and hash them with
//! [`mlpdex::shortcut_eh::hash`], the function `shortcut-eh` uses, so the comparison is of
//! structures; `eh`, the fourth baseline, is `ShortcutEh` itself without its shortcut.
//! They serve `get` and `insert` (no removes), which is what the §4.2 experiments run.

use mlpdex::shortcut_eh::hash;

use crate::adapter::{BenchIndex, Caps};
use crate::baselines::{check_width, u64_key};
use crate::keys::Keys;

/// The key marking an empty slot; the key itself is kept apart. Zero, so that a new table
/// is zeroed memory, which the allocator takes fresh from the kernel for large tables: its
/// pages are faulted in as probes first touch them instead of all at once when the table is
/// made (as Redis' dict, whose tables come from `calloc`). For `hti` this is the difference
/// between a growth spread over the following inserts and one insert writing the whole new
/// table: the slowest of 100M inserts took 2.5 s with a nonzero marker, 0.12 s with zero.
const EMPTY: u64 = 0;
/// The key marking a slot moved out by an incremental rehash (probes go on past it); the
/// key itself is kept apart like [`EMPTY`].
const MOVED: u64 = 1;

const CAPS: Caps = Caps {
    writes: true,
    ordered: false,
    concurrent: false,
};

/// Tables grow once their entries pass this fraction of the slots.
const MAX_LOAD: f64 = 0.75;

/// One open-addressing table of `(key, value)` slots, a power of two of them.
#[derive(Debug)]
struct Table {
    slots: Vec<(u64, u64)>,
    len: usize,
    mask: usize,
}

impl Table {
    fn new(slots: usize) -> Table {
        let slots = slots.next_power_of_two().max(16);
        Table {
            slots: vec![(EMPTY, 0); slots],
            len: 0,
            mask: slots - 1,
        }
    }

    #[inline(always)]
    fn home(&self, key: u64) -> usize {
        (hash(key) >> 32) as usize & self.mask
    }

    /// The slot of `key`, or the first empty slot of its probe.
    #[inline(always)]
    fn probe(&self, key: u64) -> Result<usize, usize> {
        let mut i = self.home(key);
        loop {
            match self.slots[i].0 {
                k if k == key => return Ok(i),
                EMPTY => return Err(i),
                _ => i = (i + 1) & self.mask,
            }
        }
    }

    fn full(&self) -> bool {
        (self.len + 1) as f64 > self.slots.len() as f64 * MAX_LOAD
    }
}

/// Entries of the two special keys, kept beside the table.
#[derive(Debug, Default)]
struct Specials([Option<u64>; 2]);

impl Specials {
    fn slot(key: u64) -> Option<usize> {
        match key {
            EMPTY => Some(0),
            MOVED => Some(1),
            _ => None,
        }
    }
}

/// `ht`: linear probing, doubled and rehashed whole when full.
#[derive(Debug)]
pub struct Ht {
    t: Table,
    special: Specials,
}

impl BenchIndex for Ht {
    const CAPS: Caps = CAPS;

    fn create(load_set: &Keys) -> anyhow::Result<Self> {
        check_width::<u64>(load_set, "ht")?;
        Ok(Ht {
            t: Table::new(16),
            special: Specials::default(),
        })
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        let key = u64_key(key);
        if let Some(s) = Specials::slot(key) {
            return self.special.0[s];
        }
        self.t.probe(key).ok().map(|i| self.t.slots[i].1)
    }

    #[inline]
    fn insert(&mut self, key: &[u8], value: u64) -> Option<u64> {
        let key = u64_key(key);
        if let Some(s) = Specials::slot(key) {
            return self.special.0[s].replace(value);
        }
        match self.t.probe(key) {
            Ok(i) => Some(core::mem::replace(&mut self.t.slots[i].1, value)),
            Err(_) if self.t.full() => {
                let mut bigger = Table::new(self.t.slots.len() * 2);
                for &(k, v) in &self.t.slots {
                    if k != EMPTY {
                        let Err(j) = bigger.probe(k) else { continue };
                        bigger.slots[j] = (k, v);
                        bigger.len += 1;
                    }
                }
                self.t = bigger;
                self.insert_new(key, value);
                None
            }
            Err(i) => {
                self.t.slots[i] = (key, value);
                self.t.len += 1;
                None
            }
        }
    }
}

impl Ht {
    fn insert_new(&mut self, key: u64, value: u64) {
        if let Err(i) = self.t.probe(key) {
            self.t.slots[i] = (key, value);
            self.t.len += 1;
        }
    }
}

/// `hti`: linear probing, grown into a table twice the size while both are in use: each
/// operation moves [`HTI_STEP`] slots of the old table over, and lookups try the new table,
/// then the old one, until the move is done.
#[derive(Debug)]
pub struct Hti {
    new: Table,
    /// The table being moved out, and the first slot not moved yet.
    old: Option<(Table, usize)>,
    special: Specials,
}

/// Slots of the old table moved a operation during an incremental rehash.
pub const HTI_STEP: usize = 64;

impl Hti {
    /// Moves the next [`HTI_STEP`] slots of the old table into the new one.
    fn step(&mut self) {
        let Some((old, at)) = &mut self.old else {
            return;
        };
        let end = (*at + HTI_STEP).min(old.slots.len());
        for i in *at..end {
            let (k, v) = old.slots[i];
            if k != EMPTY && k != MOVED {
                if let Err(j) = self.new.probe(k) {
                    self.new.slots[j] = (k, v);
                    self.new.len += 1;
                }
                old.slots[i].0 = MOVED;
            }
        }
        *at = end;
        if end == old.slots.len() {
            self.old = None;
        }
    }

    /// The old table's slot of `key` (probes go on past moved slots).
    fn in_old(&self, key: u64) -> Option<usize> {
        let (old, _) = self.old.as_ref()?;
        old.probe(key).ok()
    }
}

impl BenchIndex for Hti {
    const CAPS: Caps = CAPS;

    fn create(load_set: &Keys) -> anyhow::Result<Self> {
        check_width::<u64>(load_set, "hti")?;
        Ok(Hti {
            new: Table::new(16),
            old: None,
            special: Specials::default(),
        })
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        // Lookups do not move slots: `get` takes `&self` in the harness. Inserts move them,
        // and a load inserts every key, so moves finish long before the next growth.
        let key = u64_key(key);
        if let Some(s) = Specials::slot(key) {
            return self.special.0[s];
        }
        if let Ok(i) = self.new.probe(key) {
            return Some(self.new.slots[i].1);
        }
        let (old, _) = self.old.as_ref()?;
        old.probe(key).ok().map(|i| old.slots[i].1)
    }

    #[inline]
    fn insert(&mut self, key: &[u8], value: u64) -> Option<u64> {
        let key = u64_key(key);
        if let Some(s) = Specials::slot(key) {
            return self.special.0[s].replace(value);
        }
        self.step();
        if let Some(i) = self.in_old(key)
            && let Some((old, _)) = &mut self.old
        {
            return Some(core::mem::replace(&mut old.slots[i].1, value));
        }
        match self.new.probe(key) {
            Ok(i) => Some(core::mem::replace(&mut self.new.slots[i].1, value)),
            Err(_) => {
                if self.new.full() {
                    // Finish any move still under way, then start the next one.
                    while self.old.is_some() {
                        self.step();
                    }
                    let bigger = Table::new(self.new.slots.len() * 2);
                    let old = core::mem::replace(&mut self.new, bigger);
                    self.old = Some((old, 0));
                    self.step();
                }
                if let Err(i) = self.new.probe(key) {
                    self.new.slots[i] = (key, value);
                    self.new.len += 1;
                }
                None
            }
        }
    }
}

/// Entries of a chain chunk (128 bytes: seven entries, a count and a link).
const CHUNK: usize = 7;

/// One chunk of a chain.
#[derive(Debug)]
struct Chunk {
    entries: [(u64, u64); CHUNK],
    len: u32,
    next: Option<Box<Chunk>>,
}

/// A slot of `ch`: one entry in place, then a chain of chunks.
#[derive(Debug)]
struct ChSlot {
    entry: (u64, u64),
    chain: Option<Box<Chunk>>,
}

/// `ch`: chained hashing from a table sized up front (one slot for every two keys of the
/// load set, as the paper sizes its 1 GB table for 100M keys), never resized; a slot holds
/// one entry and then links chunks of seven.
#[derive(Debug)]
pub struct Ch {
    slots: Vec<ChSlot>,
    mask: usize,
    special: Specials,
}

impl Ch {
    #[inline(always)]
    fn home(&self, key: u64) -> usize {
        (hash(key) >> 32) as usize & self.mask
    }
}

impl BenchIndex for Ch {
    const CAPS: Caps = CAPS;

    fn create(load_set: &Keys) -> anyhow::Result<Self> {
        check_width::<u64>(load_set, "ch")?;
        let n = (load_set.len() / 2).next_power_of_two().max(16);
        let slots = (0..n)
            .map(|_| ChSlot {
                entry: (EMPTY, 0),
                chain: None,
            })
            .collect();
        Ok(Ch {
            slots,
            mask: n - 1,
            special: Specials::default(),
        })
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        let key = u64_key(key);
        if let Some(s) = Specials::slot(key) {
            return self.special.0[s];
        }
        let slot = &self.slots[self.home(key)];
        if slot.entry.0 == key {
            return Some(slot.entry.1);
        }
        let mut c = slot.chain.as_deref();
        while let Some(chunk) = c {
            for &(k, v) in &chunk.entries[..chunk.len as usize] {
                if k == key {
                    return Some(v);
                }
            }
            c = chunk.next.as_deref();
        }
        None
    }

    #[inline]
    fn insert(&mut self, key: &[u8], value: u64) -> Option<u64> {
        let key = u64_key(key);
        if let Some(s) = Specials::slot(key) {
            return self.special.0[s].replace(value);
        }
        let h = self.home(key);
        let slot = &mut self.slots[h];
        if slot.entry.0 == key {
            return Some(core::mem::replace(&mut slot.entry.1, value));
        }
        if slot.entry.0 == EMPTY {
            slot.entry = (key, value);
            return None;
        }
        let mut link = &mut slot.chain;
        loop {
            match link {
                Some(chunk) => {
                    let len = chunk.len as usize;
                    if let Some(e) = chunk.entries[..len].iter_mut().find(|e| e.0 == key) {
                        return Some(core::mem::replace(&mut e.1, value));
                    }
                    if len < CHUNK && chunk.next.is_none() {
                        chunk.entries[len] = (key, value);
                        chunk.len += 1;
                        return None;
                    }
                    link = &mut chunk.next;
                }
                None => {
                    let mut entries = [(EMPTY, 0); CHUNK];
                    entries[0] = (key, value);
                    *link = Some(Box::new(Chunk {
                        entries,
                        len: 1,
                        next: None,
                    }));
                    return None;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every table answers like a `HashMap` through its growth (and `hti` through its moves),
    /// the two special keys included.
    fn check<I: BenchIndex>() {
        let mut keys = Keys::new();
        for k in 0..20_000u64 {
            keys.push(&k.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes());
        }
        keys.push(&EMPTY.to_be_bytes());
        keys.push(&MOVED.to_be_bytes());
        let mut t = I::create(&keys).unwrap();
        let mut want = std::collections::HashMap::new();
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(t.insert(k, i as u64), want.insert(k.to_vec(), i as u64));
            if i % 97 == 0 {
                assert_eq!(
                    t.insert(k, i as u64 + 1),
                    want.insert(k.to_vec(), i as u64 + 1)
                );
            }
        }
        for k in keys.iter() {
            assert_eq!(t.get(k), want.get(k).copied());
        }
        assert_eq!(t.get(&12345u64.to_be_bytes()), None);
    }

    #[test]
    fn every_table_answers_like_a_hash_map() {
        check::<Ht>();
        check::<Hti>();
        check::<Ch>();
    }
}
