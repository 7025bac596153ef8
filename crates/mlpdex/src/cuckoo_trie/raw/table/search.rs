//! Search: the entries of one full hash, screened by their first byte; SearchByParent and
//! SearchByColor of §4.2.

use super::super::seqlock::WORDS;
use super::entry::ENTRY_MASK;
use super::entry::{F_SEC, F_TAG};
use super::session::{Mode, logged_copy, mode, with_session_copy};
use super::{ENTRY_BYTES, Ent, Loc, SLOTS, Slot, TAGS, Table, Torn, broken_child, dangling};

impl Table {
    /// Calls `f` on every entry whose full hash is `h`, until it returns true; returns that
    /// entry.
    ///
    /// Kind, side and tag share an entry's first byte, so each slot is screened with one byte
    /// compare before the whole entry is decoded (measured: 9% of lookup instructions went to
    /// decoding non-matching entries). In a shared table, each bucket is copied under its
    /// seqlock first (or taken from the write session's copies).
    #[inline(always)]
    fn find(&self, h: u64, mut f: impl FnMut(Ent) -> bool) -> Option<(Slot, Ent)> {
        if self.shared && mode() != Mode::Off {
            return self.find_in_session(h, f);
        }
        let (b1, b2) = self.hasher.buckets(h);
        let tag = (h % TAGS) as u8;
        for (bucket, sec) in [(b1, 0u8), (b2, 1u8)] {
            let want = (tag << F_TAG.0) | (sec << F_SEC.0);
            let base = self.bytes(bucket);
            for idx in 0..SLOTS {
                // SAFETY: byte idx·15 < 60 lies in the bucket (invariant 1); no write runs
                // concurrently (invariant 6).
                let first = unsafe { *base.add(idx * ENTRY_BYTES) };
                if first & 0x7C != want || first & 0x03 == 0 {
                    continue;
                }
                let s = Slot { bucket, idx };
                let e = self.read(s);
                if f(e) {
                    return Some((s, e));
                }
            }
        }
        None
    }

    /// [`find`](Self::find) in a shared table: each bucket is copied under its seqlock and its
    /// version recorded, or taken from the write session's copies (kept out of line so
    /// single-threaded searches keep their tight loop).
    #[inline(never)]
    fn find_in_session(&self, h: u64, mut f: impl FnMut(Ent) -> bool) -> Option<(Slot, Ent)> {
        let (b1, b2) = self.hasher.buckets(h);
        let tag = (h % TAGS) as u8;
        let mode = mode();
        for (bucket, sec) in [(b1, 0u8), (b2, 1u8)] {
            let want = (tag << F_TAG.0) | (sec << F_SEC.0);
            let found = if mode == Mode::Write {
                with_session_copy(self, bucket, |words| scan(words, want, &mut f))
            } else {
                scan(&logged_copy(self, bucket, mode), want, &mut f)
            };
            if let Some((idx, e)) = found {
                return Some((Slot { bucket, idx }, e));
            }
        }
        None
    }

    /// The child with last symbol `sym` of the regular node of color `pcolor` whose child's
    /// name hashes to `h` (SearchByParent).
    #[inline(always)]
    pub(crate) fn find_by_parent(&self, h: u64, sym: u32, pcolor: u8) -> Option<(Slot, Ent)> {
        self.find(h, |e| {
            e.sym() == sym && e.pcolor() == pcolor && !e.by_color()
        })
    }

    /// The key entry under full hash `h` that `f` accepts (see `trie::key_index`).
    #[inline(always)]
    pub(crate) fn find_key_entry(
        &self,
        h: u64,
        mut f: impl FnMut(Ent) -> bool,
    ) -> Option<(Slot, Ent)> {
        self.find(h, |e| e.is_key_entry() && f(e))
    }

    /// The child a parent's bitmap names: present in every committed state, so a miss is a
    /// torn read (shared tables) or a broken invariant.
    #[inline(always)]
    pub(crate) fn child(&self, h: u64, sym: u32, pcolor: u8) -> Result<Ent, Torn> {
        match self.find_by_parent(h, sym, pcolor) {
            Some((_, e)) => Ok(e),
            None if self.shared => Err(Torn),
            None => broken_child(),
        }
    }

    /// The entry a locator names (SearchByColor).
    #[inline(always)]
    pub(crate) fn find_loc(&self, l: Loc) -> Option<(Slot, Ent)> {
        debug_assert!(!l.is_null());
        self.find(l.h.into(), |e| e.color() == l.color)
    }

    /// The entry a locator names, for readers: a miss is a torn read in a shared table (and a
    /// broken invariant otherwise).
    #[inline(always)]
    pub(crate) fn fetch(&self, l: Loc) -> Result<Ent, Torn> {
        match self.find_loc(l) {
            Some((_, e)) => Ok(e),
            None if self.shared => Err(Torn),
            None => dangling(l),
        }
    }

    /// The entry a locator names; the trie's invariants guarantee it exists (unshared tables,
    /// and frozen ones).
    #[inline(always)]
    pub(crate) fn get(&self, l: Loc) -> Ent {
        match self.find_loc(l) {
            Some((_, e)) => e,
            None => dangling(l),
        }
    }
}

/// The first entry of a bucket's copy `words` whose first byte is `want` (kind not empty) and
/// that `f` accepts, with its slot.
#[inline(always)]
fn scan(words: &[u64; WORDS], want: u8, f: &mut impl FnMut(Ent) -> bool) -> Option<(usize, Ent)> {
    let le = words.map(u64::to_le_bytes);
    let bytes: &[u8; 64] = le.as_flattened().try_into().ok()?;
    for idx in 0..SLOTS {
        let first = bytes[idx * ENTRY_BYTES];
        if first & 0x7C != want || first & 0x03 == 0 {
            continue;
        }
        let at = idx * ENTRY_BYTES;
        let raw: [u8; 16] = bytes[at..at + 16].try_into().ok()?;
        let e = Ent(u128::from_le_bytes(raw) & ENTRY_MASK);
        if f(e) {
            return Some((idx, e));
        }
    }
    None
}
