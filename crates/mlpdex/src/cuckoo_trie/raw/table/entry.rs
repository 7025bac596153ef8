//! The entry format: a 120-bit word decoded as [`Ent`] (fields in the module docs of
//! `table`), and the locator [`Loc`] that names one entry.

use super::{JUMP, JUMP_MAX, LEAF, MAX_KEY_LEN, REGULAR};

/// A locator: the full hash of a node's name and the node's color.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Loc {
    pub(crate) h: u32,
    pub(crate) color: u8,
}

impl Loc {
    /// No node (the end of the leaf list, the maximum of an empty trie). `u32::MAX` is never a
    /// hash because `N ≤ u32::MAX`.
    pub(crate) const NULL: Loc = Loc {
        h: u32::MAX,
        color: 0,
    };

    #[inline]
    pub(crate) fn is_null(self) -> bool {
        self.h == u32::MAX
    }
}

/// A decoded entry: 120 bits, the fields of the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ent(pub(super) u128);

const F_KIND: (u32, u32) = (0, 2);
pub(super) const F_SEC: (u32, u32) = (2, 1);
pub(super) const F_TAG: (u32, u32) = (3, 4);
const F_SYM: (u32, u32) = (7, 6);
pub(super) const F_COLOR: (u32, u32) = (13, 3);
const F_PCOLOR: (u32, u32) = (16, 3);
const F_LOC_H: (u32, u32) = (20, 32);
const F_LOC_C: (u32, u32) = (52, 3);
const F_REC: (u32, u32) = (55, 44);
const F_LEN: (u32, u32) = (99, 20);
const F_BITMAP: (u32, u32) = (55, 33);
const F_JCHILD: (u32, u32) = (55, 3);
const F_JLEN: (u32, u32) = (58, 4);
const F_JSYMS: u32 = 62;
const F_BY_COLOR: (u32, u32) = (119, 1);
/// Marks a key entry (see [`Ent::key_entry`]); the bit is unused in every other entry.
const F_KEY_ENTRY: (u32, u32) = (19, 1);
pub(super) const ENTRY_MASK: u128 = (1 << 120) - 1;

const _: () = assert!(F_LEN.0 + F_LEN.1 <= 120);
const _: () = assert!(F_JSYMS + 6 * JUMP_MAX as u32 <= F_BY_COLOR.0);
// `find` screens entries by their first byte: kind, side and tag must all lie in it.
const _: () = assert!(F_KIND.0 == 0 && F_SEC.0 == 2 && F_TAG.0 == 3 && F_TAG.0 + F_TAG.1 <= 8);
const _: () = assert!(F_REC.0 + F_REC.1 + F_LEN.1 <= F_BY_COLOR.0);

impl Ent {
    pub(crate) const EMPTY: Ent = Ent(0);

    /// The entry's 120 bits.
    pub(crate) fn bits(self) -> u128 {
        self.0
    }

    /// The entry with bits `b` (as [`bits`](Self::bits) returned them).
    pub(crate) fn from_bits(b: u128) -> Ent {
        Ent(b & ENTRY_MASK)
    }

    #[inline(always)]
    fn get(self, (off, bits): (u32, u32)) -> u64 {
        ((self.0 >> off) & ((1u128 << bits) - 1)) as u64
    }

    #[inline(always)]
    pub(super) fn set(&mut self, (off, bits): (u32, u32), v: u64) {
        debug_assert!(u128::from(v) < (1u128 << bits), "field overflow");
        let mask = ((1u128 << bits) - 1) << off;
        self.0 = (self.0 & !mask) | (u128::from(v) << off);
    }

    fn node(kind: u32, sym: u32, pcolor: u8, loc: Loc) -> Ent {
        let mut e = Ent(0);
        e.set(F_KIND, kind.into());
        e.set(F_SYM, sym.into());
        e.set(F_PCOLOR, pcolor.into());
        e.set_loc(loc);
        e
    }

    /// A leaf for the record at `rec` holding a key of `len` bytes.
    pub(crate) fn leaf(sym: u32, pcolor: u8, rec: *mut u8, len: usize, next: Loc) -> Ent {
        let addr = rec as usize as u64;
        debug_assert!(addr.is_multiple_of(16) && addr >> 48 == 0, "record address");
        debug_assert!(len <= MAX_KEY_LEN);
        let mut e = Ent::node(LEAF, sym, pcolor, next);
        e.set(F_REC, addr >> 4);
        e.set(F_LEN, len as u64);
        e
    }

    /// The key entry of the record at `rec` holding a key of `len` bytes: a leaf-shaped entry
    /// stored under the hash of the whole key rather than as a node of the trie, so a point
    /// lookup finds the record in one probe (`Config::key_index`). It has the by-color bit
    /// (no parent search finds it) and no locator: nothing names it.
    pub(crate) fn key_entry(rec: *mut u8, len: usize) -> Ent {
        let mut e = Ent::leaf(0, 0, rec, len, Loc::NULL).with_by_color(true);
        e.set(F_KEY_ENTRY, 1);
        e
    }

    /// Whether this is a key entry ([`key_entry`](Self::key_entry)).
    #[inline(always)]
    pub(crate) fn is_key_entry(self) -> bool {
        self.get(F_KEY_ENTRY) != 0
    }

    /// A regular node with children `bitmap`.
    pub(crate) fn regular(sym: u32, pcolor: u8, bitmap: u64, max: Loc) -> Ent {
        let mut e = Ent::node(REGULAR, sym, pcolor, max);
        e.set(F_BITMAP, bitmap);
        e
    }

    /// A jump node over `syms` whose only child has color `child`.
    pub(crate) fn jump(sym: u32, pcolor: u8, syms: &[u32], child: u8, max: Loc) -> Ent {
        debug_assert!((1..=JUMP_MAX).contains(&syms.len()));
        let mut e = Ent::node(JUMP, sym, pcolor, max);
        e.set(F_JCHILD, child.into());
        e.set(F_JLEN, syms.len() as u64);
        for (i, &s) in syms.iter().enumerate() {
            e.set((F_JSYMS + 6 * i as u32, 6), s.into());
        }
        e
    }

    #[inline(always)]
    pub(crate) fn kind(self) -> u32 {
        self.get(F_KIND) as u32
    }
    #[inline(always)]
    pub(super) fn sec(self) -> bool {
        self.get(F_SEC) != 0
    }
    #[inline(always)]
    pub(super) fn tag(self) -> u64 {
        self.get(F_TAG)
    }
    #[inline(always)]
    pub(crate) fn sym(self) -> u32 {
        self.get(F_SYM) as u32
    }
    #[inline(always)]
    pub(crate) fn color(self) -> u8 {
        self.get(F_COLOR) as u8
    }
    #[inline(always)]
    pub(crate) fn pcolor(self) -> u8 {
        self.get(F_PCOLOR) as u8
    }
    /// The locator field: next leaf (leaves) or subtree maximum (internal nodes).
    #[inline(always)]
    pub(crate) fn loc(self) -> Loc {
        Loc {
            h: self.get(F_LOC_H) as u32,
            color: self.get(F_LOC_C) as u8,
        }
    }
    #[inline(always)]
    pub(crate) fn set_loc(&mut self, l: Loc) {
        self.set(F_LOC_H, l.h.into());
        self.set(F_LOC_C, l.color.into());
    }
    /// The locator field holding `l`, as (bits, mask) of an entry's 120 bits.
    #[inline(always)]
    pub(crate) fn loc_field(l: Loc) -> (u128, u128) {
        let mut e = Ent::EMPTY;
        e.set_loc(l);
        let mask = ((1u128 << (F_LOC_H.1 + F_LOC_C.1)) - 1) << F_LOC_H.0;
        const _: () = assert!(F_LOC_C.0 == F_LOC_H.0 + F_LOC_H.1);
        (e.0, mask)
    }
    pub(crate) fn set_pcolor(&mut self, c: u8) {
        self.set(F_PCOLOR, c.into());
    }
    /// Whether the entry is found only by locator (see the module docs).
    #[inline(always)]
    pub(crate) fn by_color(self) -> bool {
        self.get(F_BY_COLOR) != 0
    }
    /// The entry with its by-color bit set to `b`.
    pub(crate) fn with_by_color(mut self, b: bool) -> Ent {
        self.set(F_BY_COLOR, b.into());
        self
    }
    #[inline(always)]
    pub(crate) fn rec(self) -> *mut u8 {
        (self.get(F_REC) << 4) as usize as *mut u8
    }
    #[inline(always)]
    pub(crate) fn key_len(self) -> usize {
        self.get(F_LEN) as usize
    }
    #[inline(always)]
    pub(crate) fn bitmap(self) -> u64 {
        self.get(F_BITMAP)
    }
    pub(crate) fn set_bitmap(&mut self, b: u64) {
        self.set(F_BITMAP, b);
    }
    #[inline(always)]
    pub(crate) fn jump_child(self) -> u8 {
        self.get(F_JCHILD) as u8
    }
    #[inline(always)]
    pub(crate) fn jump_len(self) -> usize {
        self.get(F_JLEN) as usize
    }
    #[inline(always)]
    pub(crate) fn jump_sym(self, i: usize) -> u32 {
        self.get((F_JSYMS + 6 * i as u32, 6)) as u32
    }
    /// The jump node's symbols.
    pub(crate) fn jump_syms(self) -> ([u32; JUMP_MAX], usize) {
        let mut out = [0; JUMP_MAX];
        let n = self.jump_len();
        for (i, o) in out.iter_mut().enumerate().take(n) {
            *o = self.jump_sym(i);
        }
        (out, n)
    }

    /// `self`'s content placed where `old` sits: keeps `old`'s tag, bucket side and color, so
    /// the entry keeps its locator, and its by-color bit, since the parent stays the same.
    pub(crate) fn in_place_of(mut self, old: Ent) -> Ent {
        self.set(F_BY_COLOR, old.get(F_BY_COLOR));
        self.set(F_SEC, old.get(F_SEC));
        self.set(F_TAG, old.get(F_TAG));
        self.set(F_COLOR, old.get(F_COLOR));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::super::{LEAF, MAX_KEY_LEN};
    use super::*;

    #[test]
    fn entry_fields_round_trip() {
        let l = Loc {
            h: 0xDEAD_BEEF,
            color: 5,
        };
        let e = Ent::leaf(17, 3, 0x7FFF_FFFF_FFF0 as *mut u8, MAX_KEY_LEN, l).with_by_color(true);
        assert_eq!(
            (e.kind(), e.sym(), e.pcolor(), e.loc(), e.key_len()),
            (LEAF, 17, 3, l, MAX_KEY_LEN)
        );
        assert_eq!(e.rec() as usize, 0x7FFF_FFFF_FFF0);
        assert!(e.by_color());
        let syms = [1, 32, 0, 17, 5, 9, 31, 2, 33];
        let j = Ent::jump(9, 7, &syms, 6, Loc::NULL);
        assert_eq!(j.jump_syms(), (syms, 9));
        assert_eq!(
            (j.jump_child(), j.loc(), j.by_color()),
            (6, Loc::NULL, false)
        );
        let r = Ent::regular(0, 0, (1 << 33) - 1, l);
        assert_eq!(r.bitmap(), (1 << 33) - 1);
    }
}
