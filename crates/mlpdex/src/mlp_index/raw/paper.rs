//! The paper's layout (§4.3, "Hash Table with Variant-size Payloads"): 24-byte slots in a
//! two-choice cuckoo table at up to 50% load, five slots per 128-byte line pair. A leaf or a
//! node of at most 8 children takes one slot; a node of more children keeps a 256-bit child
//! bitmap, half in its own slot and half in a free slot it borrows from the same 128-byte
//! line (which the adjacent-line prefetcher fetches with it), or, when the line has no free
//! slot, in an external 32-byte block.
//!
//! Slot encodings (`w2`'s low 32 bits are the metadata; its high 32 bits carry bitmap bits):
//!
//! | type | `w0` | `w1` | `w2` metadata |
//! |---|---|---|---|
//! | leaf (1) | value | key | length − 1 (bits 2–4) |
//! | node (2) | minimum key | child list (≤ 8 bytes), bitmap word 0, or block address | length − 1; `pc` (5–7); count (8–16); form (17–18: list, borrowed, external); borrowed slot's offset (19–21) |
//! | borrowed (3) | bitmap word 2 | bitmap word 3 | owner's offset (5–7) |
//!
//! Bitmap word 1 is split: its low half in the owner's `w2` high bits, its high half in the
//! borrowed slot's.
//!
//! Invariants: 1. every item is in one of its two slots; 2. a borrowed slot and its owner are
//! in the same line and name each other; 3. `used` counts leaf, node and borrowed slots;
//! `external` counts blocks.

use crate::Error;
use crate::substrate::prefetch::{prefetch_read, prefetch_write};
use crate::substrate::region::{HugePages, Region};

use super::Store;
use super::hash::{fmix, mix, mulhi, prefix};
use super::table::{Item, Loc, Node, Probe};

#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
#[repr(C)]
struct Slot {
    w0: u64,
    w1: u64,
    w2: u64,
}

const PER_LINE: usize = 5;

#[repr(C, align(128))]
struct Line {
    s: [Slot; PER_LINE],
    _pad: u64,
}

const _: () = assert!(size_of::<Slot>() == 24 && size_of::<Line>() == 128);

const EMPTY: u64 = 0;
const LEAF: u64 = 1;
const NODE: u64 = 2;
const BORROWED: u64 = 3;
const LIST: u64 = 0;
const BORROW: u64 = 1;
const EXTERNAL: u64 = 2;
/// Children a one-slot node lists.
const LIST_MAX: u32 = 8;
const MAX_KICKS: usize = 5000;

#[inline(always)]
fn kind(w2: u64) -> u64 {
    w2 & 3
}
#[inline(always)]
fn len_of(w2: u64) -> u32 {
    ((w2 >> 2) & 7) as u32 + 1
}
#[inline(always)]
fn form(w2: u64) -> u64 {
    (w2 >> 17) & 3
}
#[inline(always)]
fn borrowed_off(w2: u64) -> usize {
    ((w2 >> 19) & 7) as usize
}
#[inline(always)]
fn owner_off(w2: u64) -> usize {
    ((w2 >> 5) & 7) as usize
}

/// The table.
pub(crate) struct PaperTable {
    region: Region,
    /// Slots (five per line).
    n: u64,
    used: usize,
    external: usize,
    rng: u64,
}

impl PaperTable {
    #[inline(always)]
    fn slot_ptr(&self, i: usize) -> *mut Slot {
        // Address arithmetic within the region (`i < n`, checked by callers' construction).
        self.region
            .as_ptr()
            .cast::<Line>()
            .wrapping_add(i / PER_LINE)
            .cast::<Slot>()
            .wrapping_add(i % PER_LINE)
    }

    #[inline(always)]
    fn slot(&self, i: usize) -> Slot {
        debug_assert!((i as u64) < self.n);
        // SAFETY: `i < n`: the slot lies inside the region, which is zero-initialised (a valid
        // `Slot`) and 8-byte aligned.
        unsafe { *self.slot_ptr(i) }
    }

    #[inline(always)]
    fn slot_mut(&mut self, i: usize) -> &mut Slot {
        debug_assert!((i as u64) < self.n);
        // SAFETY: as in `slot`; `&mut self` makes the reference unique.
        unsafe { &mut *self.slot_ptr(i) }
    }

    /// The two slots of an index whose hash is `h`.
    #[inline(always)]
    fn homes(&self, h: u64, len: u32) -> (usize, usize) {
        let z = fmix(h ^ (u64::from(len) << 59));
        let s1 = mulhi(z, self.n);
        let mut s2 = mulhi(fmix(z ^ 0x9E37_79B9_7F4A_7C15), self.n);
        if s2 == s1 {
            s2 = if s1 + 1 == self.n { 0 } else { s1 + 1 };
        }
        (s1 as usize, s2 as usize)
    }

    fn item_homes(&self, it: &Item) -> (usize, usize) {
        match *it {
            Item::Leaf { key, len, .. } => self.homes(mix(prefix(key, len), len), len),
            Item::Node(n) => self.homes(mix(prefix(n.min, n.len), n.len), n.len),
        }
    }

    fn bitmap(&self, i: usize) -> [u64; 4] {
        let s = self.slot(i);
        match form(s.w2) {
            BORROW => {
                let line = i - i % PER_LINE;
                let b = self.slot(line + borrowed_off(s.w2));
                [s.w1, (s.w2 >> 32) | (b.w2 >> 32) << 32, b.w0, b.w1]
            }
            _ => {
                // SAFETY: an external node's `w1` is the address of its live block
                // (`Box<[u64; 4]>::into_raw`), owned by this table.
                unsafe { *(s.w1 as *const [u64; 4]) }
            }
        }
    }

    /// Frees what the node at `i` keeps outside its slot (borrowed slot or block).
    fn free_extra(&mut self, i: usize) {
        let s = self.slot(i);
        if kind(s.w2) != NODE {
            return;
        }
        match form(s.w2) {
            BORROW => {
                let line = i - i % PER_LINE;
                *self.slot_mut(line + borrowed_off(s.w2)) = Slot::default();
                self.used -= 1;
            }
            EXTERNAL => {
                // SAFETY: the block was made by `Box::into_raw` and is dropped once, here,
                // as its node's slot is rewritten or freed right after.
                drop(unsafe { Box::from_raw(s.w1 as *mut [u64; 4]) });
                self.external -= 1;
            }
            _ => {}
        }
    }

    /// Writes `it` into the empty slot `i` (borrowing a slot of its line or an external
    /// block for a large node).
    fn put_at(&mut self, i: usize, it: &Item) {
        debug_assert_eq!(kind(self.slot(i).w2), EMPTY);
        self.used += 1;
        match *it {
            Item::Leaf { key, len, value } => {
                *self.slot_mut(i) = Slot {
                    w0: value,
                    w1: key,
                    w2: LEAF | u64::from(len - 1) << 2,
                };
            }
            Item::Node(n) => self.put_node(i, &n),
        }
    }

    fn put_node(&mut self, i: usize, n: &Node) {
        let meta =
            NODE | u64::from(n.len - 1) << 2 | u64::from(n.pc) << 5 | u64::from(n.count) << 8;
        if n.count <= LIST_MAX {
            let mut list = 0u64;
            let mut c = n.next_after(-1);
            let mut j = 0;
            while let Some(b) = c {
                list |= u64::from(b) << (8 * j);
                j += 1;
                c = n.next_after(b as i32);
            }
            *self.slot_mut(i) = Slot {
                w0: n.min,
                w1: list,
                w2: meta | LIST << 17,
            };
            return;
        }
        let k = n.kids;
        let line = i - i % PER_LINE;
        let free = (0..PER_LINE).find(|&o| line + o != i && kind(self.slot(line + o).w2) == EMPTY);
        if let Some(o) = free {
            *self.slot_mut(line + o) = Slot {
                w0: k[2],
                w1: k[3],
                w2: BORROWED | ((i - line) as u64) << 5 | (k[1] >> 32) << 32,
            };
            self.used += 1;
            *self.slot_mut(i) = Slot {
                w0: n.min,
                w1: k[0],
                w2: meta | BORROW << 17 | (o as u64) << 19 | (k[1] & 0xFFFF_FFFF) << 32,
            };
            return;
        }
        let block = Box::into_raw(Box::new(k)) as u64;
        self.external += 1;
        *self.slot_mut(i) = Slot {
            w0: n.min,
            w1: block,
            w2: meta | EXTERNAL << 17,
        };
    }

    fn random(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    /// Empties slot `v` for a new item: a borrowed slot's owner moves its bitmap half to
    /// another free slot of the line or to a block; an item is taken out (returned).
    fn evict(&mut self, v: usize) -> Option<Item> {
        let s = self.slot(v);
        match kind(s.w2) {
            EMPTY => None,
            BORROWED => {
                let line = v - v % PER_LINE;
                let owner = line + owner_off(s.w2);
                let n = self.node(Loc { b: owner, slot: 0 });
                self.remove(Loc { b: owner, slot: 0 });
                // Hold `v` (uncounted) so the owner cannot borrow it back, re-put the owner.
                self.slot_mut(v).w2 = BORROWED;
                self.put_at(owner, &Item::Node(n));
                *self.slot_mut(v) = Slot::default();
                None
            }
            _ => {
                let it = self.item(Loc { b: v, slot: 0 });
                self.remove(Loc { b: v, slot: 0 });
                Some(it)
            }
        }
    }
}

impl Drop for PaperTable {
    fn drop(&mut self) {
        if self.external > 0 {
            for i in 0..self.n as usize {
                self.free_extra(i);
            }
        }
    }
}

impl Store for PaperTable {
    const SLOTS: usize = 1;
    const SLOTS_PER_KEY: f64 = 1.05;
    type Home = (usize, usize);

    fn new(units: usize, huge: HugePages) -> Result<Self, Error> {
        let lines = units.div_ceil(PER_LINE).max(1);
        let region = Region::new_zeroed(lines * size_of::<Line>(), huge)?;
        let lines = region.len() / size_of::<Line>();
        Ok(PaperTable {
            region,
            n: (lines * PER_LINE) as u64,
            used: 0,
            external: 0,
            rng: 0x2545_F491_4F6C_DD1D ^ units as u64,
        })
    }
    fn units(&self) -> usize {
        self.n as usize
    }
    fn used(&self) -> usize {
        self.used
    }
    fn capacity(&self) -> usize {
        self.n as usize
    }
    fn bytes(&self) -> usize {
        self.region.memory_usage() + self.external * size_of::<[u64; 4]>()
    }

    #[inline(always)]
    fn probe(&self, p: u64, len: u32) -> Probe {
        let (b1, b2) = self.homes(mix(p, len), len);
        Probe {
            b1,
            b2,
            q: 0,
            p,
            len,
        }
    }

    #[inline(always)]
    fn prefetch(&self, pr: &Probe) {
        // A slot may straddle two cache lines.
        for s in [pr.b1, pr.b2] {
            let a = self.slot_ptr(s).cast::<u8>();
            prefetch_read(a);
            prefetch_read(a.wrapping_add(23));
        }
    }

    #[inline(always)]
    fn find(&self, pr: &Probe) -> Option<Loc> {
        for b in [pr.b1, pr.b2] {
            let s = self.slot(b);
            let k = kind(s.w2);
            if (k == LEAF || k == NODE) && len_of(s.w2) == pr.len {
                let key = if k == LEAF { s.w1 } else { s.w0 };
                if prefix(key, pr.len) == pr.p {
                    return Some(Loc { b, slot: 0 });
                }
            }
        }
        None
    }

    #[inline(always)]
    fn word(&self, l: Loc) -> (bool, u64) {
        let s = self.slot(l.b);
        (kind(s.w2) == LEAF, s.w0)
    }
    fn set_word(&mut self, l: Loc, w: u64) {
        self.slot_mut(l.b).w0 = w;
    }
    #[inline]
    fn value(&self, l: Loc) -> &u64 {
        debug_assert_eq!(kind(self.slot(l.b).w2), LEAF);
        debug_assert!((l.b as u64) < self.n);
        // SAFETY: `l.b < n`: the slot lies inside the region, zero-initialised and 8-byte
        // aligned; `&self` keeps the table (and so the slot) unchanged for the borrow.
        unsafe { &(*self.slot_ptr(l.b)).w0 }
    }
    #[inline]
    fn value_mut(&mut self, l: Loc) -> &mut u64 {
        debug_assert_eq!(kind(self.slot(l.b).w2), LEAF);
        &mut self.slot_mut(l.b).w0
    }
    #[inline]
    fn value_ptr(&mut self, l: Loc) -> *mut u64 {
        debug_assert!((l.b as u64) < self.n);
        self.slot_ptr(l.b)
            .cast::<u8>()
            .wrapping_add(core::mem::offset_of!(Slot, w0))
            .cast::<u64>()
    }
    #[inline]
    fn leaf_key(&self, l: Loc) -> u64 {
        self.slot(l.b).w1
    }
    #[inline(always)]
    fn leaf_suffix_is(&self, l: Loc, key: u64) -> bool {
        self.slot(l.b).w1 == key
    }

    fn node(&self, l: Loc) -> Node {
        let s = self.slot(l.b);
        debug_assert_eq!(kind(s.w2), NODE);
        let count = ((s.w2 >> 8) & 0x1FF) as u32;
        let mut n = Node {
            len: len_of(s.w2),
            pc: ((s.w2 >> 5) & 7) as u32,
            min: s.w0,
            count,
            kids: [0; 4],
        };
        if form(s.w2) == LIST {
            for j in 0..count {
                let b = (s.w1 >> (8 * j)) & 0xFF;
                n.kids[(b >> 6) as usize] |= 1 << (b & 63);
            }
        } else {
            n.kids = self.bitmap(l.b);
        }
        n
    }

    fn item(&self, l: Loc) -> Item {
        let s = self.slot(l.b);
        if kind(s.w2) == LEAF {
            Item::Leaf {
                key: s.w1,
                len: len_of(s.w2),
                value: s.w0,
            }
        } else {
            Item::Node(self.node(l))
        }
    }

    fn write_node(&mut self, l: Loc, n: &Node) -> bool {
        self.free_extra(l.b);
        *self.slot_mut(l.b) = Slot::default();
        self.used -= 1;
        self.put_at(l.b, &Item::Node(*n));
        true
    }

    fn leaf_to_node(&mut self, l: Loc, n: &Node) {
        debug_assert_eq!(kind(self.slot(l.b).w2), LEAF);
        *self.slot_mut(l.b) = Slot::default();
        self.used -= 1;
        self.put_at(l.b, &Item::Node(*n));
    }

    fn remove(&mut self, l: Loc) {
        self.free_extra(l.b);
        *self.slot_mut(l.b) = Slot::default();
        self.used -= 1;
    }

    fn place(
        &mut self,
        it: Item,
        home: (usize, usize),
        homeless: &mut Vec<Item>,
    ) -> Result<(), ()> {
        debug_assert!(homeless.is_empty());
        let mut next = Some((it, home));
        let mut kicks = 0;
        while let Some((it, (s1, s2))) = next.take().or_else(|| {
            let it = homeless.pop()?;
            Some((it, self.home(&it)))
        }) {
            if kind(self.slot(s1).w2) == EMPTY {
                self.put_at(s1, &it);
                continue;
            }
            if kind(self.slot(s2).w2) == EMPTY {
                self.put_at(s2, &it);
                continue;
            }
            kicks += 1;
            if kicks > MAX_KICKS {
                homeless.push(it);
                return Err(());
            }
            let v = if self.random() & 1 == 0 { s1 } else { s2 };
            if let Some(victim) = self.evict(v) {
                homeless.push(victim);
            }
            self.put_at(v, &it);
        }
        Ok(())
    }

    fn home(&self, it: &Item) -> (usize, usize) {
        let (s1, s2) = self.item_homes(it);
        prefetch_write(self.slot_ptr(s1));
        prefetch_write(self.slot_ptr(s2));
        (s1, s2)
    }

    fn for_each(&self, mut f: impl FnMut(Loc)) {
        for i in 0..self.n as usize {
            let k = kind(self.slot(i).w2);
            if k == LEAF || k == NODE {
                f(Loc { b: i, slot: 0 });
            }
        }
    }

    fn audit(&self) -> Result<usize, String> {
        let (mut used, mut items, mut external) = (0, 0, 0);
        for i in 0..self.n as usize {
            let s = self.slot(i);
            let line = i - i % PER_LINE;
            match kind(s.w2) {
                EMPTY => {
                    if s != Slot::default() {
                        return Err(format!("slot {i}: stray bits in a free slot"));
                    }
                }
                BORROWED => {
                    used += 1;
                    let o = self.slot(line + owner_off(s.w2));
                    if kind(o.w2) != NODE || form(o.w2) != BORROW || line + borrowed_off(o.w2) != i
                    {
                        return Err(format!("slot {i}: borrowed slot without its owner"));
                    }
                }
                _ => {
                    used += 1;
                    items += 1;
                    if kind(s.w2) == NODE && form(s.w2) == EXTERNAL {
                        external += 1;
                    }
                    let it = self.item(Loc { b: i, slot: 0 });
                    let (s1, s2) = self.item_homes(&it);
                    if i != s1 && i != s2 {
                        return Err(format!("slot {i}: item {it:?} belongs in {s1} or {s2}"));
                    }
                    if let Item::Node(n) = it {
                        let small = form(s.w2) == LIST;
                        if small != (n.count <= LIST_MAX) {
                            return Err(format!("slot {i}: node of {} in the wrong form", n.count));
                        }
                    }
                }
            }
        }
        if used != self.used || external != self.external {
            return Err(format!(
                "{used} slots used and {external} blocks, counted {} and {}",
                self.used, self.external
            ));
        }
        Ok(items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(count: u32, min: u64, len: u32) -> Node {
        Node::with_children(len, 7, min, count)
    }

    /// Large nodes, their borrowed slots and blocks survive cuckoo evictions; the audit
    /// checks every borrowed slot's owner and the counts.
    #[test]
    fn borrowed_slots_and_blocks_survive_evictions() {
        let mut t = PaperTable::new(160, HugePages::Auto).unwrap();
        let mut homeless = Vec::new();
        let mut placed: Vec<Item> = Vec::new();
        let mut x = 3u64;
        for i in 0..400u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let len = 3 + (i % 5) as u32;
            let it = if i % 3 == 0 {
                Item::Node(node(((x >> 50) % 60 + 2) as u32, x & !0xFF, len))
            } else {
                Item::Leaf {
                    key: x,
                    len,
                    value: i,
                }
            };
            placed.push(it);
            if t.place(it, t.home(&it), &mut homeless).is_err() {
                placed.retain(|p| !homeless.contains(p));
                break;
            }
            assert_eq!(t.audit().unwrap(), placed.len());
        }
        assert!(
            t.used() * 2 > t.capacity(),
            "stopped at {} of {}",
            t.used(),
            t.capacity()
        );
        for it in &placed {
            let (p, len) = it.index();
            let l = t.find(&t.probe(p, len)).expect("placed item is found");
            assert_eq!(t.item(l), *it);
        }
        // Rewriting nodes between forms keeps the table consistent.
        for it in placed
            .iter()
            .filter(|it| matches!(it, Item::Node(_)))
            .take(20)
        {
            let Item::Node(n) = it else { unreachable!() };
            let l = t.find(&t.probe(prefix(n.min, n.len), n.len)).unwrap();
            let mut m = *n;
            if m.count > LIST_MAX {
                m = node(3, n.min, n.len);
            } else {
                m = node(40, n.min, n.len);
            }
            assert!(t.write_node(l, &m));
            assert_eq!(t.node(l), m);
            t.audit().unwrap();
        }
    }
}
