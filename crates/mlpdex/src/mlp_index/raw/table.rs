//! The bucketized cuckoo table: 64-byte buckets of four 16-byte entries; nodes of one, two or
//! three entries kept whole inside one bucket (paper §4.3, "Bucketized Cuckoo Hashing").
//!
//! Entry encodings (`w1` low bits first):
//!
//! | field | leaf | node header |
//! |---|---|---|
//! | bits 0–1 | type 1 | type 2 |
//! | bit 2 | in its secondary bucket | same |
//! | bits 3–5 | index length − 1 | same |
//! | rest of `w1` | bits 6–63: `q` then the key bytes after the index | bits 6–8 path-compressed length `pc`; 9–10 size in entries; 11–19 child count; 24–63 up to 5 child bytes |
//! | `w0` | the value | the subtree's minimum key (its first `len` bytes are the index, its first `pc` the node's string) |
//!
//! A node of 6–21 children adds one continuation entry of 16 more child bytes (sorted); a node
//! of 22 or more adds two continuation entries holding a 256-bit child bitmap. Continuation
//! entries carry no type bits: a bucket is parsed from slot 0, each item's header telling its
//! size, so items in a bucket are contiguous.
//!
//! Invariants:
//! 1. Every item lies in one of its two buckets (`b1`, `b1 ^ alt`), its sec bit saying which.
//! 2. An item's entries are contiguous; slots not covered by an item are all-zero.
//! 3. `used` is the number of slots covered by items.
//! 4. No two items have the same index (length and prefix).

use core::sync::atomic::AtomicU64;
use core::sync::atomic::Ordering::Relaxed;

use core::marker::PhantomData;
use core::ptr::NonNull;
use std::sync::Arc;

use crate::Error;
use crate::substrate::prefetch::{prefetch_read, prefetch_write};
use crate::substrate::region::{HugePages, Region};

use super::Store;
use super::hash::{Geo, MIN_LEN, mask, mix, prefix, unmix};
use super::stripes::Stripes;

/// Entries per bucket.
pub(crate) const SLOTS: usize = 4;

/// One 16-byte entry.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
#[repr(C, align(16))]
pub(crate) struct Entry {
    pub(crate) w0: u64,
    pub(crate) w1: u64,
}

/// One cache line of entries, held as atomic words: the lookups of a
/// [`ConcurrentMlpIndex`](crate::mlp_index::ConcurrentMlpIndex) read buckets while its writer
/// changes them (and validate what they read with the stripe versions of `stripes`). Every
/// access is a relaxed load or store, a plain move on x86-64 and AArch64.
#[repr(C, align(64))]
pub(crate) struct Bucket {
    /// Entry `i` is words `2i` (`w0`) and `2i + 1` (`w1`).
    w: [AtomicU64; 2 * SLOTS],
}

const _: () = assert!(size_of::<Entry>() == 16 && size_of::<Bucket>() == 64);
const _: () = assert!(align_of::<Bucket>() == 64);
const _: () = assert!(core::mem::offset_of!(Entry, w0) == 0);

impl Bucket {
    #[inline(always)]
    pub(crate) fn get(&self, i: usize) -> Entry {
        Entry {
            w0: self.w[2 * i].load(Relaxed),
            w1: self.w[2 * i + 1].load(Relaxed),
        }
    }

    #[inline(always)]
    fn w0(&self, i: usize) -> u64 {
        self.w[2 * i].load(Relaxed)
    }

    #[inline(always)]
    fn w1(&self, i: usize) -> u64 {
        self.w[2 * i + 1].load(Relaxed)
    }

    /// Every entry.
    #[inline(always)]
    pub(crate) fn all(&self) -> [Entry; SLOTS] {
        core::array::from_fn(|i| self.get(i))
    }

    #[inline(always)]
    fn set(&self, i: usize, e: Entry) {
        self.w[2 * i].store(e.w0, Relaxed);
        self.w[2 * i + 1].store(e.w1, Relaxed);
    }

    #[inline(always)]
    fn set_w0(&self, i: usize, w0: u64) {
        self.w[2 * i].store(w0, Relaxed);
    }
}

pub(crate) const T_LEAF: u64 = 1;
pub(crate) const T_NODE: u64 = 2;
/// A node's continuation entry: type bits in every slot let a search test each slot on its
/// own, without parsing the bucket from its first slot.
const T_CONT: u64 = 3;
const SEC: u64 = 1 << 2;
const HEAD_MASK: u64 = 0x3F;
const STORED_SHIFT: u32 = 6;
const PC_SHIFT: u32 = 6;
const SIZE_SHIFT: u32 = 9;
const COUNT_SHIFT: u32 = 11;
const INLINE_SHIFT: u32 = 24;
/// Child bytes held in a header.
const INLINE: usize = 5;
/// Child bytes held by a medium node (header and one continuation, whose first byte holds
/// its type).
const MEDIUM: usize = INLINE + 15;

/// Type, sec bit and length, the low six bits of `w1`.
#[inline(always)]
pub(crate) fn head(ty: u64, sec: bool, len: u32) -> u64 {
    ty | if sec { SEC } else { 0 } | (u64::from(len - 1) << 3)
}

#[inline(always)]
pub(crate) fn ty(w1: u64) -> u64 {
    w1 & 3
}

#[inline(always)]
pub(crate) fn len_of(w1: u64) -> u32 {
    ((w1 >> 3) & 7) as u32 + 1
}

#[inline(always)]
fn is_sec(w1: u64) -> bool {
    w1 & SEC != 0
}

/// Slots taken by the item whose first entry has `w1` (1 for empty slots).
#[inline(always)]
pub(crate) fn span(w1: u64) -> usize {
    if ty(w1) == T_NODE {
        ((w1 >> SIZE_SHIFT) & 3) as usize
    } else {
        1
    }
}

/// Where an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Loc {
    pub(crate) b: usize,
    pub(crate) slot: usize,
}

/// An internal node, decoded; children as a 256-bit map whatever the stored form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Node {
    /// Index length in bytes.
    pub(crate) len: u32,
    /// Length of the node's string (index plus path-compressed bytes); children branch on
    /// byte `pc` of the key.
    pub(crate) pc: u32,
    /// Smallest key in the subtree.
    pub(crate) min: u64,
    pub(crate) count: u32,
    pub(crate) kids: [u64; 4],
}

impl Node {
    /// Entries a node of `count` children takes.
    #[inline]
    pub(crate) fn size_for(count: u32) -> usize {
        if count as usize <= INLINE {
            1
        } else if count as usize <= MEDIUM {
            2
        } else {
            3
        }
    }

    #[inline]
    pub(crate) fn size(&self) -> usize {
        Self::size_for(self.count)
    }

    #[inline]
    pub(crate) fn has(&self, c: u32) -> bool {
        self.kids[(c >> 6) as usize] >> (c & 63) & 1 != 0
    }

    #[inline]
    pub(crate) fn set(&mut self, c: u32) {
        debug_assert!(!self.has(c));
        self.kids[(c >> 6) as usize] |= 1 << (c & 63);
        self.count += 1;
    }

    #[inline]
    pub(crate) fn unset(&mut self, c: u32) {
        debug_assert!(self.has(c));
        self.kids[(c >> 6) as usize] &= !(1 << (c & 63));
        self.count -= 1;
    }

    /// Smallest child byte greater than `c` (`c` may be −1).
    #[inline]
    pub(crate) fn next_after(&self, c: i32) -> Option<u32> {
        let from = (c + 1) as u32;
        let mut w = (from >> 6) as usize;
        if w >= 4 {
            return None;
        }
        let mut bits = self.kids[w] & (!0u64 << (from & 63));
        loop {
            if bits != 0 {
                return Some((w as u32) << 6 | bits.trailing_zeros());
            }
            w += 1;
            if w == 4 {
                return None;
            }
            bits = self.kids[w];
        }
    }

    /// Largest child byte smaller than `c` (`c` may be 256).
    #[inline]
    pub(crate) fn prev_before(&self, c: i32) -> Option<u32> {
        if c <= 0 {
            return None;
        }
        let to = (c - 1) as u32;
        let mut w = (to >> 6) as i32;
        let mut bits = self.kids[w as usize] & (!0u64 >> (63 - (to & 63)));
        loop {
            if bits != 0 {
                return Some((w as u32) << 6 | (63 - bits.leading_zeros()));
            }
            w -= 1;
            if w < 0 {
                return None;
            }
            bits = self.kids[w as usize];
        }
    }

    /// A node of `count` children spread over the byte range, for tests.
    #[cfg(test)]
    pub(crate) fn with_children(len: u32, pc: u32, min: u64, count: u32) -> Node {
        let mut n = Node {
            len,
            pc,
            min,
            count: 0,
            kids: [0; 4],
        };
        for i in 0..count {
            n.set((i * 7 + 3) % 256);
        }
        n
    }

    /// The index (first `len` bytes) of child `c`'s node.
    #[inline]
    pub(crate) fn child_prefix(&self, c: u32) -> u64 {
        (prefix(self.min, self.pc) << 8) | u64::from(c)
    }

    fn encode(&self, sec: bool) -> ([Entry; 3], usize) {
        let size = self.size();
        let mut out = [Entry::default(); 3];
        let mut w1 = head(T_NODE, sec, self.len)
            | u64::from(self.pc) << PC_SHIFT
            | (size as u64) << SIZE_SHIFT
            | u64::from(self.count) << COUNT_SHIFT;
        if size == 3 {
            let k = self.kids;
            out[1] = Entry {
                w0: k[0],
                w1: T_CONT | k[1] << 2,
            };
            out[2] = Entry {
                w0: k[2],
                w1: T_CONT | k[3] << 2,
            };
            // The two top bits the continuations' type fields displace.
            w1 |= (k[1] >> 62 | (k[3] >> 62) << 2) << INLINE_SHIFT;
        } else {
            let mut i = 0;
            let mut c = self.next_after(-1);
            while let Some(b) = c {
                let b = u64::from(b);
                if i < INLINE {
                    w1 |= b << (INLINE_SHIFT + 8 * i as u32);
                } else if i < INLINE + 8 {
                    out[1].w0 |= b << (8 * (i - INLINE));
                } else {
                    out[1].w1 |= b << (8 * (i - INLINE - 7));
                }
                i += 1;
                c = self.next_after(b as i32);
            }
            debug_assert_eq!(i, self.count as usize);
            if size == 2 {
                out[1].w1 |= T_CONT;
            }
        }
        out[0] = Entry { w0: self.min, w1 };
        (out, size)
    }

    /// Decodes the node whose header is `ents[0]`.
    pub(crate) fn decode(ents: &[Entry]) -> Node {
        let h = ents[0];
        debug_assert_eq!(ty(h.w1), T_NODE);
        let count = ((h.w1 >> COUNT_SHIFT) & 0x1FF) as u32;
        let size = span(h.w1);
        let mut n = Node {
            len: len_of(h.w1),
            pc: ((h.w1 >> PC_SHIFT) & 7) as u32,
            min: h.w0,
            count,
            kids: [0; 4],
        };
        if size == 3 {
            let top = h.w1 >> INLINE_SHIFT;
            n.kids = [
                ents[1].w0,
                ents[1].w1 >> 2 | (top & 3) << 62,
                ents[2].w0,
                ents[2].w1 >> 2 | ((top >> 2) & 3) << 62,
            ];
        } else {
            for i in 0..count as usize {
                let b = if i < INLINE {
                    h.w1 >> (INLINE_SHIFT + 8 * i as u32)
                } else if i < INLINE + 8 {
                    ents[1].w0 >> (8 * (i - INLINE))
                } else {
                    ents[1].w1 >> (8 * (i - INLINE - 7))
                } & 0xFF;
                n.kids[(b >> 6) as usize] |= 1 << (b & 63);
            }
        }
        debug_assert_eq!(size, Node::size_for(count));
        n
    }
}

/// A leaf or node out of the table: what placement moves around.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Item {
    Leaf { key: u64, len: u32, value: u64 },
    Node(Node),
}

impl Item {
    #[inline]
    fn len(&self) -> u32 {
        match self {
            Item::Leaf { len, .. } => *len,
            Item::Node(n) => n.len,
        }
    }

    #[inline]
    fn size(&self) -> usize {
        match self {
            Item::Leaf { .. } => 1,
            Item::Node(n) => n.size(),
        }
    }

    /// The item's index: prefix and length.
    #[cfg(test)]
    pub(crate) fn index(&self) -> (u64, u32) {
        match self {
            Item::Leaf { key, len, .. } => (prefix(*key, *len), *len),
            Item::Node(n) => (prefix(n.min, n.len), n.len),
        }
    }

    /// The hash of the item's index.
    #[inline]
    fn hash(&self) -> u64 {
        match self {
            Item::Leaf { key, len, .. } => mix(prefix(*key, *len), *len),
            Item::Node(n) => mix(prefix(n.min, n.len), n.len),
        }
    }
}

/// The two buckets and the quotient of an index: what a search needs to find it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Probe {
    pub(crate) b1: usize,
    pub(crate) b2: usize,
    pub(crate) q: u64,
    pub(crate) p: u64,
    pub(crate) len: u32,
}

/// An item's two buckets and quotient.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Home {
    b1: usize,
    b2: usize,
    q: u64,
}

/// Kicks a placement may make before the table is declared full.
const MAX_KICKS: usize = 500;

/// The hash table.
pub(crate) struct Table {
    region: Region,
    pub(crate) geo: Geo,
    /// Slots covered by items (invariant 3).
    used: usize,
    rng: u64,
    /// Set while the table belongs to a `ConcurrentMlpIndex`: see [`Share`].
    share: Option<Box<Share>>,
}

/// What a table shared with lock-free lookups keeps for its writer (one writer at a time):
/// every store first locks the stripe of its bucket ([`Stripes::lock`]), and the stripes
/// stay locked until the operation is done ([`Table::unlock`]); a table that replaces this
/// one (growth) takes the locks over and keeps the old one for the map to retire once no
/// lookup can read it ([`Table::take_retired`]).
pub(crate) struct Share {
    stripes: Arc<Stripes>,
    /// Stripes locked by the operation under way.
    held: Vec<usize>,
    /// Tables replaced during the operation under way.
    retired: Vec<Table>,
}

/// Read access to a table's buckets that does not borrow the [`Table`]: the lookups of a
/// `ConcurrentMlpIndex`, which run while its writer holds the table mutably, read through it.
#[derive(Clone, Copy)]
pub(crate) struct View<'t> {
    base: NonNull<Bucket>,
    pub(crate) geo: Geo,
    _buckets: PhantomData<&'t Bucket>,
}

// SAFETY: a view only reads buckets, whose words are atomics, for as long as `'t` guarantees
// they are mapped.
unsafe impl Send for View<'_> {}
// SAFETY: as above.
unsafe impl Sync for View<'_> {}

impl<'t> View<'t> {
    /// A view of the `geo.buckets()` buckets at `base`.
    ///
    /// # Safety
    ///
    /// The buckets must stay mapped (and hold valid `Bucket`s, which any bit pattern is) for
    /// `'t`.
    pub(crate) unsafe fn new(base: NonNull<Bucket>, geo: Geo) -> View<'t> {
        View {
            base,
            geo,
            _buckets: PhantomData,
        }
    }

    /// The address of the first bucket (what identifies a table).
    pub(crate) fn base(&self) -> NonNull<Bucket> {
        self.base
    }

    #[inline(always)]
    pub(crate) fn bucket(&self, b: usize) -> &'t Bucket {
        debug_assert!(b < self.geo.buckets());
        // SAFETY: `new`'s contract keeps `geo.buckets()` buckets mapped at `base` for `'t`;
        // `b` is in range: every bucket index comes from `geo`, which reduces it.
        unsafe { &*self.base.as_ptr().add(b) }
    }

    #[inline(always)]
    pub(crate) fn bucket_ptr(&self, b: usize) -> *const Bucket {
        // Address arithmetic only.
        self.base.as_ptr().wrapping_add(b).cast_const()
    }

    #[inline(always)]
    pub(crate) fn entry(&self, l: Loc) -> Entry {
        self.bucket(l.b).get(l.slot)
    }

    /// The buckets and quotient of index `p` of `len` bytes.
    #[inline(always)]
    pub(crate) fn probe(&self, p: u64, len: u32) -> Probe {
        let (b1, q) = self.geo.place(mix(p, len), len);
        Probe {
            b1,
            b2: self.geo.secondary(b1, q, len),
            q,
            p,
            len,
        }
    }

    #[inline(always)]
    pub(crate) fn prefetch(&self, pr: &Probe) {
        prefetch_read(self.bucket_ptr(pr.b1));
        prefetch_read(self.bucket_ptr(pr.b2));
    }

    /// Where the item with index `pr` is, if anywhere.
    #[inline(always)]
    pub(crate) fn find(&self, pr: &Probe) -> Option<Loc> {
        let k = 8 * pr.len;
        // A leaf matches on its head and quotient bits in one masked comparison.
        let qshift = STORED_SHIFT + 64 - k;
        let lmask = HEAD_MASK | (!0u64).checked_shl(qshift).unwrap_or(0);
        for (b, sec) in [(pr.b1, false), (pr.b2, true)] {
            let leaf = head(T_LEAF, sec, pr.len) | pr.q.checked_shl(qshift).unwrap_or(0);
            let node = head(T_NODE, sec, pr.len);
            let bk = self.bucket(b);
            for slot in 0..SLOTS {
                let w1 = bk.w1(slot);
                if w1 & lmask == leaf
                    || (w1 & HEAD_MASK == node && prefix(bk.w0(slot), pr.len) == pr.p)
                {
                    return Some(Loc { b, slot });
                }
            }
        }
        None
    }

    /// Whether the item at `l` is a leaf, and its value (leaf) or minimum key (node).
    #[inline(always)]
    pub(crate) fn word(&self, l: Loc) -> (bool, u64) {
        let e = self.entry(l);
        (ty(e.w1) == T_LEAF, e.w0)
    }

    /// Whether the leaf at `l`, found by its index, holds `key`.
    #[inline(always)]
    pub(crate) fn leaf_suffix_is(&self, l: Loc, key: u64) -> bool {
        let w1 = self.entry(l).w1;
        let k = 8 * len_of(w1);
        k == 64 || (w1 >> STORED_SHIFT) & mask(64 - k) == key & mask(64 - k)
    }
}

impl Table {
    /// An empty table of `buckets` buckets (at least [`MIN_BUCKETS`](super::hash::MIN_BUCKETS)),
    /// on pages as `huge` asks.
    pub(crate) fn new(buckets: usize, huge: HugePages) -> Result<Table, Error> {
        let region = Region::new_zeroed(Geo::new(buckets).buckets() * size_of::<Bucket>(), huge)?;
        // The mapping is rounded up to whole pages: use all of it.
        let geo = Geo::new(region.len() / size_of::<Bucket>());
        Ok(Table {
            region,
            geo,
            used: 0,
            rng: 0x2545_F491_4F6C_DD1D ^ buckets as u64,
            share: None,
        })
    }

    /// The buckets, for reading.
    #[inline(always)]
    pub(crate) fn view(&self) -> View<'_> {
        // SAFETY: the region holds `geo.buckets()` buckets (it was sized so), is 64-byte
        // aligned (page aligned) and zero-initialised; it lives as long as `self`.
        unsafe { View::new(self.region.base().cast::<Bucket>(), self.geo) }
    }

    #[inline(always)]
    pub(crate) fn bucket(&self, b: usize) -> &Bucket {
        self.view().bucket(b)
    }

    /// Bucket `b`, for storing into: when the table is shared, its stripe is locked first.
    #[inline(always)]
    fn write(&mut self, b: usize) -> &Bucket {
        if let Some(s) = self.share.as_deref_mut()
            && s.stripes.lock(b)
        {
            s.held.push(Stripes::of(b));
        }
        self.bucket(b)
    }

    #[inline(always)]
    pub(crate) fn bucket_ptr(&self, b: usize) -> *const Bucket {
        self.view().bucket_ptr(b)
    }

    #[inline(always)]
    pub(crate) fn entry(&self, l: Loc) -> Entry {
        self.view().entry(l)
    }

    /// Shares the table with lock-free lookups validating against `stripes`: from now on its
    /// stores lock stripes (see [`Share`]).
    pub(crate) fn share(&mut self, stripes: Arc<Stripes>) {
        debug_assert!(self.share.is_none());
        self.share = Some(Box::new(Share {
            stripes,
            held: Vec::new(),
            retired: Vec::new(),
        }));
    }

    /// The tables this one replaced during the operation under way; the caller retires them
    /// once no lookup can reach them.
    pub(crate) fn take_retired(&mut self) -> Vec<Table> {
        self.share
            .as_deref_mut()
            .map_or_else(Vec::new, |s| core::mem::take(&mut s.retired))
    }

    /// Ends the operation under way: unlocks the stripes its stores locked.
    pub(crate) fn unlock(&mut self) {
        if let Some(s) = self.share.as_deref_mut() {
            for i in s.held.drain(..) {
                s.stripes.unlock(i);
            }
        }
    }

    /// The entries of `it` (in its primary bucket; set [`SEC`] in the first `w1` for the
    /// secondary), given its quotient `q`.
    fn encode(it: &Item, q: u64) -> ([Entry; 3], usize) {
        let sec = false;
        match *it {
            Item::Leaf { key, len, value } => {
                let k = 8 * len;
                let suffix = if k == 64 { 0 } else { key & mask(64 - k) };
                let stored = if k == 64 { q } else { (q << (64 - k)) | suffix };
                debug_assert!(stored >> (64 - STORED_SHIFT) == 0);
                let w1 = head(T_LEAF, sec, len) | stored << STORED_SHIFT;
                (
                    [Entry { w0: value, w1 }, Entry::default(), Entry::default()],
                    1,
                )
            }
            Item::Node(n) => n.encode(sec),
        }
    }

    /// Rewrites the node at `l` as `n`, which takes no more entries; freed slots are zeroed.
    pub(crate) fn write_node_smaller(&mut self, l: Loc, n: &Node) {
        let old = self.entry(l).w1;
        debug_assert_eq!(ty(old), T_NODE);
        let was = span(old);
        let (ents, size) = n.encode(is_sec(old));
        debug_assert!(size <= was);
        let bk = self.write(l.b);
        // `encode` leaves the entries past the node's size zero: they clear the freed slots.
        for (i, e) in ents.iter().take(was).enumerate() {
            bk.set(l.slot + i, *e);
        }
        self.used -= was - size;
    }

    fn free_in(&self, b: usize) -> usize {
        let e = self.bucket(b).all();
        let mut i = 0;
        let mut taken = 0;
        while i < SLOTS {
            let w1 = e[i].w1;
            if ty(w1) != 0 {
                taken += span(w1);
            }
            i += span(w1);
        }
        SLOTS - taken
    }

    /// Moves the items of bucket `b` to its first slots; returns the first free slot.
    fn compact(&mut self, b: usize) -> usize {
        let e = self.bucket(b).all();
        let mut out = [Entry::default(); SLOTS];
        let (mut i, mut o) = (0, 0);
        while i < SLOTS {
            let n = span(e[i].w1);
            if ty(e[i].w1) != 0 {
                out[o..o + n].copy_from_slice(&e[i..i + n]);
                o += n;
            }
            i += n;
        }
        let bk = self.write(b);
        for (i, x) in out.into_iter().enumerate() {
            if x != e[i] {
                bk.set(i, x);
            }
        }
        o
    }

    /// Puts the `n` entries `ents` into bucket `b` if it has room (`sec`: `b` is the item's
    /// secondary bucket).
    fn try_put(&mut self, b: usize, ents: &[Entry; 3], n: usize, sec: bool) -> bool {
        let e = self.bucket(b).all();
        // The first run of `n` free slots; failing that, compact if there is room.
        let (mut i, mut run, mut free) = (0, 0, 0);
        let mut at = None;
        while i < SLOTS {
            let w1 = e[i].w1;
            if ty(w1) == 0 {
                run += 1;
                free += 1;
                if run == n {
                    at = Some(i + 1 - n);
                    break;
                }
                i += 1;
            } else {
                run = 0;
                i += span(w1);
            }
        }
        let at = match at {
            Some(at) => at,
            None if free >= n => self.compact(b),
            None => return false,
        };
        let bk = self.write(b);
        for (i, &x) in ents[..n].iter().enumerate() {
            bk.set(at + i, x);
        }
        if sec {
            bk.set(
                at,
                Entry {
                    w0: ents[0].w0,
                    w1: ents[0].w1 | SEC,
                },
            );
        }
        self.used += n;
        true
    }

    fn random(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }
}

impl Store for Table {
    const SLOTS: usize = SLOTS;
    const SLOTS_PER_KEY: f64 = 1.05;
    type Home = Home;

    fn new(units: usize, huge: HugePages) -> Result<Self, Error> {
        Table::new(units, huge)
    }
    fn units(&self) -> usize {
        self.geo.buckets()
    }
    fn used(&self) -> usize {
        self.used
    }
    fn capacity(&self) -> usize {
        self.geo.buckets() * SLOTS
    }
    fn bytes(&self) -> usize {
        self.region.memory_usage()
    }
    #[inline(always)]
    fn probe(&self, p: u64, len: u32) -> Probe {
        self.view().probe(p, len)
    }
    #[inline(always)]
    fn prefetch(&self, pr: &Probe) {
        self.view().prefetch(pr);
    }
    #[inline(always)]
    fn find(&self, pr: &Probe) -> Option<Loc> {
        self.view().find(pr)
    }
    #[inline(always)]
    fn word(&self, l: Loc) -> (bool, u64) {
        self.view().word(l)
    }
    #[inline]
    fn set_word(&mut self, l: Loc, w: u64) {
        self.write(l.b).set_w0(l.slot, w);
    }
    #[inline]
    fn value(&self, l: Loc) -> &u64 {
        debug_assert_eq!(ty(self.entry(l).w1), T_LEAF);
        // SAFETY: the word is in a live bucket; `&self` rules out stores through this table
        // while the reference lives, and a table shared with lookups (the only other
        // readers) is never asked for values in place: they load words atomically.
        unsafe { &*self.bucket(l.b).w[2 * l.slot].as_ptr() }
    }
    #[inline]
    fn value_mut(&mut self, l: Loc) -> &mut u64 {
        debug_assert_eq!(ty(self.entry(l).w1), T_LEAF);
        debug_assert!(
            self.share.is_none(),
            "values in place only for an unshared table"
        );
        // SAFETY: `&mut self` makes the reference unique: the table is not shared (above),
        // so nothing else reads or writes the word while it lives.
        unsafe { &mut *self.bucket(l.b).w[2 * l.slot].as_ptr() }
    }
    #[inline]
    fn value_ptr(&mut self, l: Loc) -> *mut u64 {
        debug_assert!(l.b < self.geo.buckets() && l.slot < SLOTS);
        // Address arithmetic only (no reference to the bucket is made).
        self.region
            .as_ptr()
            .cast::<Bucket>()
            .wrapping_add(l.b)
            .cast::<u64>()
            .wrapping_add(2 * l.slot)
    }
    /// The key of the leaf at `l`.
    #[inline]
    fn leaf_key(&self, l: Loc) -> u64 {
        let w1 = self.entry(l).w1;
        debug_assert_eq!(ty(w1), T_LEAF);
        let len = len_of(w1);
        let k = 8 * len;
        let stored = w1 >> STORED_SHIFT;
        let q = stored >> (64 - k);
        let b1 = if is_sec(w1) {
            self.geo.primary(l.b, q, len)
        } else {
            l.b
        };
        let p = unmix(self.geo.unplace(b1, q, len), len);
        if k == 64 {
            p
        } else {
            (p << (64 - k)) | (stored & mask(64 - k))
        }
    }
    /// Whether the leaf at `l` holds `key` (cheaper than [`leaf_key`](Self::leaf_key): its
    /// index was already matched by [`find`](Self::find)).
    #[inline(always)]
    fn leaf_suffix_is(&self, l: Loc, key: u64) -> bool {
        self.view().leaf_suffix_is(l, key)
    }
    /// The node whose header is at `l`.
    #[inline]
    fn node(&self, l: Loc) -> Node {
        let e = self.bucket(l.b).all();
        Node::decode(&e[l.slot..(l.slot + span(e[l.slot].w1)).min(SLOTS)])
    }
    /// The item at `l`, decoded.
    fn item(&self, l: Loc) -> Item {
        let e = self.entry(l);
        match ty(e.w1) {
            T_LEAF => Item::Leaf {
                key: self.leaf_key(l),
                len: len_of(e.w1),
                value: e.w0,
            },
            _ => Item::Node(self.node(l)),
        }
    }
    fn write_node(&mut self, l: Loc, n: &Node) -> bool {
        if n.size() > span(self.entry(l).w1) {
            return false;
        }
        self.write_node_smaller(l, n);
        true
    }
    /// Replaces the leaf at `l` by node `n` of the same index, in place (`n` is small).
    fn leaf_to_node(&mut self, l: Loc, n: &Node) {
        let old = self.entry(l).w1;
        debug_assert_eq!(ty(old), T_LEAF);
        debug_assert_eq!(n.size(), 1);
        let (ents, _) = n.encode(is_sec(old));
        self.write(l.b).set(l.slot, ents[0]);
    }
    /// Removes the item at `l`; other items do not move.
    fn remove(&mut self, l: Loc) {
        let n = span(self.entry(l).w1);
        let bk = self.write(l.b);
        for i in l.slot..l.slot + n {
            bk.set(i, Entry::default());
        }
        self.used -= n;
    }
    /// The two buckets `it` may go to, both fetched at once (the second is needed whenever
    /// the first is full).
    #[inline]
    fn home(&self, it: &Item) -> Home {
        let len = it.len();
        let (b1, q) = self.geo.place(it.hash(), len);
        let b2 = self.geo.secondary(b1, q, len);
        prefetch_write(self.bucket_ptr(b1));
        prefetch_write(self.bucket_ptr(b2));
        Home { b1, b2, q }
    }
    /// Places `it`, moving other items between their buckets as cuckoo hashing does. When the
    /// kicks run out, returns the items left without a place (to be re-placed after growth);
    /// everything else is in the table.
    fn place(&mut self, it: Item, home: Home, homeless: &mut Vec<Item>) -> Result<(), ()> {
        debug_assert!(homeless.is_empty());
        let mut next = Some((it, home));
        let mut kicks = 0;
        while let Some((it, Home { b1, b2, q })) = next.take().or_else(|| {
            let it = homeless.pop()?;
            Some((it, self.home(&it)))
        }) {
            let len = it.len();
            debug_assert!(len >= MIN_LEN);
            let (ents, n) = Self::encode(&it, q);
            if self.try_put(b1, &ents, n, false) || self.try_put(b2, &ents, n, true) {
                continue;
            }
            kicks += 1;
            if kicks > MAX_KICKS {
                homeless.push(it);
                return Err(());
            }
            let r = self.random();
            let (b, sec) = if r & 1 == 0 { (b1, false) } else { (b2, true) };
            // Evict random items from `b` until `it` fits.
            while self.free_in(b) < it.size() {
                let want = (self.random() >> 7) as usize % SLOTS;
                let e = self.bucket(b).all();
                let mut i = 0;
                while i + span(e[i].w1) <= want {
                    i += span(e[i].w1);
                }
                if ty(e[i].w1) == 0 {
                    continue;
                }
                let victim = self.item(Loc { b, slot: i });
                self.remove(Loc { b, slot: i });
                homeless.push(victim);
            }
            let placed = self.try_put(b, &ents, n, sec);
            debug_assert!(placed);
        }
        Ok(())
    }
    /// Takes over `old`'s sharing (its held stripes included), keeping `old` to be retired.
    fn succeed(&mut self, mut old: Table) {
        if let Some(mut s) = old.share.take() {
            s.retired.push(old);
            self.share = Some(s);
        }
    }
    /// Every item's location, in bucket order.
    fn for_each(&self, mut f: impl FnMut(Loc)) {
        for b in 0..self.geo.buckets() {
            let e = self.bucket(b).all();
            let mut i = 0;
            while i < SLOTS {
                if ty(e[i].w1) != 0 {
                    f(Loc { b, slot: i });
                }
                i += span(e[i].w1);
            }
        }
    }
    /// Checks invariants 1–3 of every bucket; returns the item count.
    fn audit(&self) -> Result<usize, String> {
        let mut used = 0;
        let mut items = 0;
        for b in 0..self.geo.buckets() {
            let e = self.bucket(b).all();
            let mut i = 0;
            while i < SLOTS {
                let w1 = e[i].w1;
                let n = span(w1);
                if ty(w1) == 0 {
                    if e[i] != Entry::default() {
                        return Err(format!("bucket {b} slot {i}: stray bits in a free slot"));
                    }
                } else {
                    if n == 0 || i + n > SLOTS {
                        return Err(format!("bucket {b} slot {i}: node of size {n} overflows"));
                    }
                    let it = self.item(Loc { b, slot: i });
                    let len = it.len();
                    let (b1, q) = self.geo.place(it.hash(), len);
                    let home = if is_sec(w1) {
                        self.geo.secondary(b1, q, len)
                    } else {
                        b1
                    };
                    if home != b {
                        return Err(format!(
                            "bucket {b} slot {i}: item {it:?} belongs in {home}"
                        ));
                    }
                    used += n;
                    items += 1;
                }
                i += n.max(1);
            }
        }
        if used != self.used {
            return Err(format!("{used} slots in use, counted {}", self.used));
        }
        Ok(items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(count: u32) -> Node {
        Node::with_children(4, 5, 0x0102_0304_0506_0000, count)
    }

    #[test]
    fn nodes_round_trip_at_every_size() {
        for count in [1, 2, 5, 6, 13, 21, 22, 100, 256] {
            let n = node(count);
            let (ents, size) = n.encode(true);
            assert_eq!(size, Node::size_for(count));
            assert_eq!(Node::decode(&ents[..size]), n);
            assert_eq!(span(ents[0].w1), size);
        }
    }

    #[test]
    fn child_search_both_ways() {
        let mut n = node(0);
        for c in [0, 63, 64, 200, 255] {
            n.set(c);
        }
        assert_eq!(n.next_after(-1), Some(0));
        assert_eq!(n.next_after(0), Some(63));
        assert_eq!(n.next_after(63), Some(64));
        assert_eq!(n.next_after(64), Some(200));
        assert_eq!(n.next_after(255), None);
        assert_eq!(n.prev_before(256), Some(255));
        assert_eq!(n.prev_before(255), Some(200));
        assert_eq!(n.prev_before(64), Some(63));
        assert_eq!(n.prev_before(0), None);
        assert_eq!(n.prev_before(1), Some(0));
    }

    #[test]
    fn leaves_and_nodes_survive_cuckoo_placement() {
        let mut t = Table::new(64, HugePages::Auto).unwrap();
        let mut homeless = Vec::new();
        let mut placed = Vec::new();
        let mut x = 1u64;
        for i in 0..400u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let it = if i % 5 == 0 {
                let mut n = node(((x >> 40) % 40 + 1) as u32);
                n.min = x & !0xFFFF;
                n.len = 3 + (i % 3) as u32;
                Item::Node(n)
            } else {
                Item::Leaf {
                    key: x,
                    len: 3 + (i % 6) as u32,
                    value: i,
                }
            };
            placed.push(it);
            if t.place(it, t.home(&it), &mut homeless).is_err() {
                // The items left without a place are out of the table; all others are in.
                placed.retain(|p| !homeless.contains(p));
                break;
            }
        }
        let load = t.used as f64 / t.capacity() as f64;
        assert!(load > 0.85, "cuckoo placement stopped at load {load}");
        assert_eq!(t.audit().unwrap(), placed.len());
        for it in &placed {
            let (p, len) = it.index();
            let l = t.find(&t.probe(p, len)).expect("placed item is found");
            assert_eq!(t.item(l), *it);
        }
    }
}
