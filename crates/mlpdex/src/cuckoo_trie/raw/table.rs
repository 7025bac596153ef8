//! The bucketized cuckoo hash table with key elimination (cuckoo-trie.txt §4.2).
//!
//! # Layout
//!
//! A table is an array of `S` 64-byte buckets in one [`Region`] (huge pages when large). A
//! bucket holds four 15-byte entries at byte offsets 0, 15, 30, 45 and a 32-bit version/lock
//! word at offset 60 (the seqlock of §5, see [`seqlock`](super::seqlock); a table that is not
//! shared between threads leaves it zero). The bucket is stored as eight atomic 64-bit words so
//! readers may race writers; an entry is a little-endian 120-bit word, decoded as [`Ent`]:
//!
//! | bits    | field        | meaning                                                         |
//! |---------|--------------|-----------------------------------------------------------------|
//! | 0..2    | kind         | 0 empty, 1 leaf, 2 regular node, 3 jump node                    |
//! | 2       | sec          | the entry sits in its secondary bucket                          |
//! | 3..7    | tag          | `h mod 16`: with the bucket and `sec` it gives the full hash `h` |
//! | 7..13   | sym          | last symbol of the node's name                                  |
//! | 13..16  | color        | unique among entries with the same full hash                    |
//! | 16..19  | parent color | color of the parent node (meaningful under regular parents)     |
//! | 19      | dirty        | unused: see the concurrency notes in the front end's docs       |
//! | 20..55  | locator      | leaf: next leaf; regular and jump: maximal leaf of the subtree  |
//! | 55..99  | leaf record  | record address >> 4                                             |
//! | 99..119 | leaf key len | key length in bytes                                             |
//! | 55..88  | bitmap       | regular node: one bit per child symbol                          |
//! | 55..58  | jump child   | jump node: color of its only child                              |
//! | 58..62  | jump length  | jump node: number of symbols, 1..=[`JUMP_MAX`]                  |
//! | 62..116 | jump symbols | jump node: 6 bits each                                          |
//! | 119     | by color     | not a regular node's child (the root, a jump node's child)      |
//!
//! A locator is a full hash plus a color ([`Loc`]); it names one entry wherever cuckoo
//! relocation has moved it.
//!
//! The *by color* bit closes a gap in the verification of §4.2: the child `C` of a jump node
//! has a name `x·s` whose parent prefix `x` is not a node, so no color protects `h(x)`; a
//! regular node `y` with `h(y) = h(x)` would accept `C` as its child `s` if only symbol and
//! parent color were compared. Entries with the bit set are found only by locator.
//!
//! # Hash
//!
//! Node names are hashed with a *peelable* function (§4.2): `h(ε) = 0`,
//! `h(x·c) = ((h(x) + g[c]) mod N) · A mod N` with `N = 16·S`, `g` random and `A` a unit mod
//! `N`. Given `h(x·c)` and `c`, `h(x)` is determined (multiply by `A⁻¹`, subtract `g[c]`), which
//! is what lets an entry be verified from its last symbol and its parent's color alone. The
//! paper's XOR-and-rotate function is peelable too but linear over GF(2); this one also mixes
//! carries, and it works for any `S`, so tables need not be powers of two (memory: a table fills
//! exactly the pages it maps). Tables grown by doubling are powers of two, though, and for them
//! `mod N` is a mask: a key's prefix hashes form a chain of dependent steps, and the mask makes
//! each step an add, a multiply and an AND. The primary bucket is `h / 16`, the secondary
//! `(h/16 + alt[h mod 16]) mod S`.

use core::cell::{Cell, RefCell};
use core::ptr::NonNull;
use core::sync::atomic::AtomicUsize;
use core::sync::atomic::Ordering::Relaxed;

use super::seqlock::{Bucket, WORDS, Word};
use crate::Error;
use crate::substrate::prefetch::prefetch_read;
use crate::substrate::region::{HugePages, Region};

/// Entries per bucket.
pub(crate) const SLOTS: usize = 4;
/// Bytes per entry.
const ENTRY_BYTES: usize = 15;
/// Number of distinct tags (`t` in the paper).
const TAGS: u64 = 16;
/// Distinct colors, so at most this many entries may share one full hash.
const COLORS: u32 = 8;
/// Most symbols one jump node holds.
pub(crate) const JUMP_MAX: usize = 9;
/// Largest key length a leaf can record (20 bits).
pub(crate) const MAX_KEY_LEN: usize = (1 << 20) - 1;
/// Largest `N = 16·S`: hashes and locators are 32-bit.
const MAX_HASHES: u64 = u32::MAX as u64;

const _: () = assert!(core::mem::size_of::<Bucket>() == 64);
const _: () = assert!(SLOTS * ENTRY_BYTES + 4 == 64 && WORDS * 8 == 64);

/// Kinds of entries.
pub(crate) const EMPTY: u32 = 0;
pub(crate) const LEAF: u32 = 1;
pub(crate) const REGULAR: u32 = 2;
pub(crate) const JUMP: u32 = 3;

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
pub(crate) struct Ent(u128);

const F_KIND: (u32, u32) = (0, 2);
const F_SEC: (u32, u32) = (2, 1);
const F_TAG: (u32, u32) = (3, 4);
const F_SYM: (u32, u32) = (7, 6);
const F_COLOR: (u32, u32) = (13, 3);
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
const ENTRY_MASK: u128 = (1 << 120) - 1;

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
    fn set(&mut self, (off, bits): (u32, u32), v: u64) {
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
    fn sec(self) -> bool {
        self.get(F_SEC) != 0
    }
    #[inline(always)]
    fn tag(self) -> u64 {
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

/// The peelable hash of node names for one table size; see the module docs.
#[derive(Clone, Debug)]
pub(crate) struct Hasher {
    /// `N = 16·S`, the number of hash values.
    n: u64,
    /// `S`, the number of buckets.
    s: u64,
    /// Multiplier, a unit modulo `n`.
    a: u64,
    /// `⌊(2⁶⁴−1)/n⌋` for Barrett reduction.
    inv: u64,
    /// `n − 1` when `n` is a power of two (every table grown by doubling), else 0. Reduction
    /// is then one AND, which shortens the chain of dependent steps that hashes a key's
    /// prefixes: about 5 cycles per symbol instead of 15.
    mask: u64,
    /// Per-symbol offsets, in `[0, n)`.
    g: [u64; 64],
    /// `g[c]·a mod n`: `h(x·c) = (h(x)·a + ga[c]) mod n`, so the children of one node cost one
    /// multiplication for the node and one addition each ([`mul_a`](Self::mul_a),
    /// [`child`](Self::child)).
    ga: [u64; 64],
    /// Secondary-bucket offsets per tag, in `[1, s)` (0 when `s == 1`).
    alt: [u64; TAGS as usize],
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Hasher {
    fn new(buckets: usize, seed: u64) -> Hasher {
        let s = buckets as u64;
        let n = s * TAGS;
        debug_assert!(n <= MAX_HASHES);
        let mut st = seed ^ n.rotate_left(17);
        let a = loop {
            let a = splitmix(&mut st) % n;
            if a > 1 && gcd(a, n) == 1 {
                break a;
            }
            if n <= 2 {
                break 1;
            }
        };
        let mut g = [0; 64];
        for x in &mut g {
            *x = splitmix(&mut st) % n;
        }
        let mut alt = [0; TAGS as usize];
        for x in &mut alt {
            *x = if s > 1 {
                1 + splitmix(&mut st) % (s - 1)
            } else {
                0
            };
        }
        let mut h = Hasher {
            n,
            s,
            a,
            inv: u64::MAX / n,
            mask: if n.is_power_of_two() { n - 1 } else { 0 },
            g,
            ga: [0; 64],
            alt,
        };
        for c in 0..64 {
            h.ga[c] = h.reduce(h.g[c] * a);
        }
        h
    }

    /// `x mod n` for any `x` (Barrett reduction: the estimated quotient is short by at most 2).
    #[inline(always)]
    fn reduce(&self, x: u64) -> u64 {
        if self.mask != 0 {
            return x & self.mask;
        }
        let q = ((u128::from(x) * u128::from(self.inv)) >> 64) as u64;
        let mut r = x - q * self.n;
        // Two conditional subtractions rather than a loop: they compile to conditional moves.
        if r >= self.n {
            r -= self.n;
        }
        if r >= self.n {
            r -= self.n;
        }
        debug_assert!(r < self.n);
        r
    }

    /// `h(x·c)` from `h = h(x)`.
    #[inline(always)]
    pub(crate) fn step(&self, h: u64, c: u32) -> u64 {
        debug_assert!(h < self.n);
        if self.mask != 0 {
            // Reducing once at the end is the same modulo a power of two (wrapping modulo 2⁶⁴
            // keeps the low bits exact).
            return (h + self.g[c as usize]).wrapping_mul(self.a) & self.mask;
        }
        let mut x = h + self.g[c as usize];
        if x >= self.n {
            x -= self.n;
        }
        // x < n ≤ 2³², a < n: the product fits in 64 bits.
        self.reduce(x * self.a)
    }

    /// `h·a mod n`: the part of every child's hash shared by the children of the node `h`.
    #[inline(always)]
    pub(crate) fn mul_a(&self, h: u64) -> u64 {
        debug_assert!(h < self.n);
        self.reduce(h * self.a)
    }

    /// `h(x·c)` from `ha = mul_a(h(x))`: equal to `step(h(x), c)`.
    #[inline(always)]
    pub(crate) fn child(&self, ha: u64, c: u32) -> u64 {
        let x = ha + self.ga[c as usize];
        if self.mask != 0 {
            return x & self.mask;
        }
        if x >= self.n { x - self.n } else { x }
    }

    /// Primary and secondary bucket of hash `h`.
    #[inline(always)]
    fn buckets(&self, h: u64) -> (usize, usize) {
        let b1 = h / TAGS;
        let mut b2 = b1 + self.alt[(h % TAGS) as usize];
        if b2 >= self.s {
            b2 -= self.s;
        }
        (b1 as usize, b2 as usize)
    }

    /// The bucket an entry with `tag` and side `sec` in `bucket` would move to.
    #[inline]
    fn other_bucket(&self, bucket: usize, tag: u64, sec: bool) -> usize {
        let off = self.alt[tag as usize];
        let b = bucket as u64;
        (if sec {
            (b + self.s - off) % self.s
        } else {
            (b + off) % self.s
        }) as usize
    }

    /// The full hash of the entry `e` found in `bucket`.
    pub(crate) fn hash_of(&self, bucket: usize, e: Ent) -> u64 {
        let primary = if e.sec() {
            self.other_bucket(bucket, e.tag(), true)
        } else {
            bucket
        };
        primary as u64 * TAGS + e.tag()
    }
}

/// A position in the table: bucket and slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    bucket: usize,
    idx: usize,
}

/// The insertion could not place an entry (no cuckoo path, or all colors of its hash in use);
/// the caller grows the table.
#[derive(Debug)]
pub(crate) struct Full;

/// A reader of a shared table met a state no committed trie has (an entry its parent names is
/// missing): its copies mix states from before and after a write. It restarts.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Torn;

/// Breadth-first cuckoo search limit, in buckets visited.
const BFS_NODES: usize = 512;

/// The buckets a writer holds locked in a shared table (see [`super::seqlock`]); it releases
/// them all with [`Table::unlock_all`] when its operation is done.
#[derive(Debug, Default)]
pub(crate) struct Locks {
    held: Vec<usize>,
}

impl Locks {
    /// Bytes of one held lock.
    pub(crate) const ELEM_BYTES: usize = core::mem::size_of::<usize>();

    pub(crate) fn capacity_bytes(&self) -> usize {
        self.held.capacity() * Self::ELEM_BYTES
    }

    /// Buckets held.
    pub(crate) fn len(&self) -> usize {
        self.held.len()
    }

    /// Gives back memory beyond `min` held locks (and beyond those held now).
    pub(crate) fn shrink_to(&mut self, min: usize) {
        self.held.shrink_to(min);
    }
}

/// What a reader of a shared table copied: `(bucket, version)` pairs, validated at the end of
/// its operation ([`ReadSession`]). Thread-local, so the table's read methods need no extra
/// argument; outside a session (single-threaded maps, the writer) nothing is recorded.
struct ReadLog {
    active: Cell<bool>,
    reads: RefCell<Vec<(usize, u32)>>,
}

thread_local! {
    static LOG: ReadLog = const {
        ReadLog {
            active: Cell::new(false),
            reads: RefCell::new(Vec::new()),
        }
    };
}

/// One optimistic read of a shared table (§5): while it lives, the table's read methods copy
/// buckets under their seqlock and record their versions; [`validate`](Self::validate) tells
/// whether all of them still hold.
pub(crate) struct ReadSession(());

impl ReadSession {
    /// Starts recording on this thread.
    pub(crate) fn begin() -> ReadSession {
        LOG.with(|l| {
            debug_assert!(!l.active.get(), "nested read sessions");
            l.active.set(true);
            l.reads.borrow_mut().clear();
        });
        ReadSession(())
    }

    /// True when no bucket read since [`begin`](Self::begin) (or the last `validate`) has
    /// changed: the reads form one committed state of `t`. Clears the record.
    pub(crate) fn validate(&self, t: &Table) -> bool {
        <core::sync::atomic::AtomicU64 as Word>::fence_acquire();
        LOG.with(|l| {
            let mut reads = l.reads.borrow_mut();
            let ok = reads.iter().all(|&(b, v)| t.bucket(b).validate(v));
            reads.clear();
            ok
        })
    }
}

impl Drop for ReadSession {
    fn drop(&mut self) {
        LOG.with(|l| l.active.set(false));
    }
}

/// Whether this thread is inside a [`ReadSession`].
#[inline(always)]
fn reading() -> bool {
    LOG.with(|l| l.active.get())
}

/// A consistent copy of bucket `b`, waiting out a writer that holds it; recorded in the log.
#[inline]
fn snapshot(t: &Table, b: usize) -> [u64; WORDS] {
    let bucket = t.bucket(b);
    let mut spins = 0u32;
    loop {
        if let Some((words, v)) = bucket.try_snapshot() {
            LOG.with(|l| {
                let mut reads = l.reads.borrow_mut();
                if reads.last() != Some(&(b, v)) {
                    reads.push((b, v));
                }
            });
            return words;
        }
        spins += 1;
        if spins < 64 {
            core::hint::spin_loop();
        } else {
            // The writer may be descheduled (more threads than cores): let it run.
            std::thread::yield_now();
        }
    }
}

/// Entry `idx` of a bucket whose words `word` reads. Slot `idx` starts at byte `15·idx`:
/// words 0–1 for slot 0, three words for the others; the version bits fall outside the mask.
#[inline(always)]
fn decode(idx: usize, word: impl Fn(usize) -> u64) -> Ent {
    let off = idx * ENTRY_BYTES;
    let (w0, sh) = (off / 8, (off % 8) * 8);
    let lo = u128::from(word(w0)) | (u128::from(word(w0 + 1)) << 64);
    let v = if sh == 0 {
        lo
    } else {
        (lo >> sh) | (u128::from(word(w0 + 2)) << (128 - sh))
    };
    Ent(v & ENTRY_MASK)
}

/// First byte (kind, side, tag) of entry `idx`.
#[inline(always)]
fn first_byte(idx: usize, word: impl Fn(usize) -> u64) -> u8 {
    let off = idx * ENTRY_BYTES;
    (word(off / 8) >> ((off % 8) * 8)) as u8
}

/// The table. Invariants:
/// 1. `buckets` points at `nb` buckets inside `region`, `1 ≤ nb`, `16·nb ≤ u32::MAX`.
/// 2. An entry with tag `t` and side `sec` in bucket `b` has full hash
///    `hasher.hash_of(b, e)`, and sits in that hash's primary (`!sec`) or secondary bucket.
/// 3. Entries with the same full hash have distinct colors.
/// 4. `used` counts the non-empty entries.
/// 5. Writes (methods taking [`Locks`]) come from one thread at a time: the front end holds
///    `&mut` (single-threaded map) or its writer mutex (concurrent map). When `shared`, a write
///    locks each bucket it touches until [`unlock_all`](Self::unlock_all).
/// 6. Outside a [`ReadSession`], a shared table is read only by the writer (the thread holding
///    the writer mutex), so plain reads there never race a write; readers on other threads
///    read only inside sessions, with atomic loads. Writes are always atomic stores.
pub(crate) struct Table {
    region: Region,
    buckets: NonNull<Bucket>,
    nb: usize,
    pub(crate) hasher: Hasher,
    used: AtomicUsize,
    /// Readers may run concurrently with the writer: use the seqlock protocol.
    shared: bool,
}

// SAFETY: the table owns its region like a Box<[Bucket]>.
unsafe impl Send for Table {}
// SAFETY: writes are atomic stores from one thread at a time (invariant 5); reads that may
// race them are atomic loads inside read sessions (invariant 6).
unsafe impl Sync for Table {}

impl Table {
    /// A zeroed table of at least `min_buckets` buckets (every bucket of the mapped pages is
    /// used), hashing with constants drawn from `seed`, on pages as `huge` asks.
    pub(crate) fn with_buckets(
        min_buckets: usize,
        seed: u64,
        huge: HugePages,
    ) -> Result<Table, Error> {
        let bytes = min_buckets.max(1).saturating_mul(64);
        if (bytes / 64) as u64 * TAGS > MAX_HASHES {
            return Err(Error::OutOfMemory { bytes });
        }
        let region = Region::new_zeroed(bytes, huge)?;
        let nb = (region.len() / 64).min((MAX_HASHES / TAGS) as usize);
        let buckets = NonNull::new(region.as_ptr().cast::<Bucket>()).expect("mapping is non-null");
        Ok(Table {
            hasher: Hasher::new(nb, seed),
            region,
            buckets,
            nb,
            used: AtomicUsize::new(0),
            shared: false,
        })
    }

    /// From now on readers may race the writer (set before the table is published).
    pub(crate) fn set_shared(&mut self, shared: bool) {
        self.shared = shared;
    }

    pub(crate) fn is_shared(&self) -> bool {
        self.shared
    }

    pub(crate) fn buckets(&self) -> usize {
        self.nb
    }
    pub(crate) fn capacity(&self) -> usize {
        self.nb * SLOTS
    }
    pub(crate) fn used(&self) -> usize {
        self.used.load(Relaxed)
    }
    pub(crate) fn memory_usage(&self) -> usize {
        self.region.memory_usage()
    }

    #[inline(always)]
    fn bucket(&self, b: usize) -> &Bucket {
        debug_assert!(b < self.nb);
        // SAFETY: invariant 1, b < nb: inside the region, which lives as long as `self`; the
        // zeroed mapping is a valid array of atomic words.
        unsafe { &*self.buckets.as_ptr().add(b) }
    }

    /// Start of bucket `b`'s bytes, for plain (non-atomic) reads: see invariant 6.
    #[inline(always)]
    fn bytes(&self, b: usize) -> *const u8 {
        debug_assert!(b < self.nb);
        // SAFETY: invariant 1, b < nb: inside the region.
        unsafe { self.buckets.as_ptr().add(b).cast::<u8>() }
    }

    /// The entry at `s`, read outside a read session (invariant 6).
    #[inline(always)]
    pub(crate) fn read(&self, s: Slot) -> Ent {
        // SAFETY: slot idx < 4, so the 16 bytes at idx·15 end at most at byte 61 of the
        // 64-byte bucket (the extra byte is the version's, masked off below). No write runs
        // concurrently with this read (invariant 6), so a plain read is no data race.
        let raw = unsafe {
            self.bytes(s.bucket)
                .add(s.idx * ENTRY_BYTES)
                .cast::<[u8; 16]>()
                .read_unaligned()
        };
        Ent(u128::from_le_bytes(raw) & ENTRY_MASK)
    }

    #[inline(always)]
    fn write(&self, w: &mut Locks, s: Slot, e: Ent) {
        let b = self.bucket(s.bucket);
        if self.shared && !b.is_locked() {
            b.lock();
            w.held.push(s.bucket);
        }
        let off = s.idx * ENTRY_BYTES;
        let (w0, sh) = (off / 8, (off % 8) * 8);
        let (v, m) = (e.0 << sh, ENTRY_MASK << sh);
        b.store_masked(w0, v as u64, m as u64);
        b.store_masked(w0 + 1, (v >> 64) as u64, (m >> 64) as u64);
        if sh != 0 {
            let (v2, m2) = (e.0 >> (128 - sh), ENTRY_MASK >> (128 - sh));
            b.store_masked(w0 + 2, v2 as u64, m2 as u64);
        }
    }

    /// Ends a writer's operation: releases every bucket it locked.
    pub(crate) fn unlock_all(&self, w: &mut Locks) {
        for b in w.held.drain(..) {
            self.bucket(b).unlock();
        }
    }

    /// Locks the bucket holding the entry `l` names without changing it: for state kept
    /// outside the table (the leaf list's head) that readers validate through that bucket.
    pub(crate) fn touch(&self, w: &mut Locks, l: Loc) {
        if self.shared {
            let Some((s, _)) = self.find_loc(l) else {
                dangling(l)
            };
            let b = self.bucket(s.bucket);
            if !b.is_locked() {
                b.lock();
                w.held.push(s.bucket);
            }
        }
    }

    /// Prefetches both buckets of hash `h`.
    #[inline(always)]
    pub(crate) fn prefetch(&self, h: u64) {
        let (b1, b2) = self.hasher.buckets(h);
        prefetch_read(self.bucket(b1) as *const Bucket as *const u8);
        prefetch_read(self.bucket(b2) as *const Bucket as *const u8);
    }

    /// Calls `f` on every entry whose full hash is `h`, until it returns true; returns that
    /// entry.
    ///
    /// Kind, side and tag share an entry's first byte, so each slot is screened with one byte
    /// compare before the whole entry is decoded (measured: 9% of lookup instructions went to
    /// decoding non-matching entries). Inside a [`ReadSession`] on a shared table, each bucket
    /// is copied under its seqlock first.
    #[inline(always)]
    fn find(&self, h: u64, mut f: impl FnMut(Ent) -> bool) -> Option<(Slot, Ent)> {
        if self.shared && reading() {
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

    /// [`find`](Self::find) for a reader of a shared table: each bucket is copied under its
    /// seqlock and its version recorded (kept out of line so single-threaded searches keep
    /// their tight loop).
    #[inline(never)]
    fn find_in_session(&self, h: u64, mut f: impl FnMut(Ent) -> bool) -> Option<(Slot, Ent)> {
        let (b1, b2) = self.hasher.buckets(h);
        let tag = (h % TAGS) as u8;
        for (bucket, sec) in [(b1, 0u8), (b2, 1u8)] {
            let want = (tag << F_TAG.0) | (sec << F_SEC.0);
            let copy = snapshot(self, bucket);
            let word = |i: usize| copy[i];
            for idx in 0..SLOTS {
                let first = first_byte(idx, word);
                if first & 0x7C != want || first & 0x03 == 0 {
                    continue;
                }
                let e = decode(idx, word);
                if f(e) {
                    return Some((Slot { bucket, idx }, e));
                }
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

    /// The entry a locator names; the trie's invariants guarantee it exists (writers and
    /// single-threaded readers).
    #[inline(always)]
    pub(crate) fn get(&self, l: Loc) -> Ent {
        match self.find_loc(l) {
            Some((_, e)) => e,
            None => dangling(l),
        }
    }

    /// Rewrites the entry `l` names with `f`, which must keep its position fields.
    pub(crate) fn update(&self, w: &mut Locks, l: Loc, f: impl FnOnce(&mut Ent)) {
        let Some((s, mut e)) = self.find_loc(l) else {
            dangling(l)
        };
        f(&mut e);
        debug_assert_eq!(e.color(), l.color);
        self.write(w, s, e);
    }

    /// Rewrites the entry `l` names with `f` if it returns true (same contract as `update`);
    /// returns what `f` returned.
    pub(crate) fn update_if(
        &self,
        w: &mut Locks,
        l: Loc,
        f: impl FnOnce(&mut Ent) -> bool,
    ) -> bool {
        let Some((s, mut e)) = self.find_loc(l) else {
            dangling(l)
        };
        let changed = f(&mut e);
        if changed {
            debug_assert_eq!(e.color(), l.color);
            self.write(w, s, e);
        }
        changed
    }

    /// Replaces the entry `l` names by `content` (which keeps `l`).
    pub(crate) fn replace(&self, w: &mut Locks, l: Loc, content: Ent) {
        self.update(w, l, |e| *e = content.in_place_of(*e));
    }

    /// Removes the entry `l` names.
    pub(crate) fn remove(&self, w: &mut Locks, l: Loc) {
        let Some((s, _)) = self.find_loc(l) else {
            dangling(l)
        };
        self.write(w, s, Ent::EMPTY);
        self.used.fetch_sub(1, Relaxed);
    }

    /// Inserts `e` (whose position fields are ignored) under full hash `h` with a fresh color,
    /// relocating other entries if both buckets are full. Returns the new entry's locator.
    pub(crate) fn insert(&self, w: &mut Locks, h: u64, mut e: Ent) -> Result<Loc, Full> {
        debug_assert!(e.kind() != EMPTY);
        let (b1, b2) = self.hasher.buckets(h);
        let tag = (h % TAGS) as u8;
        // One pass over both buckets: colors in use under `h`, and the first free slot.
        let mut used = 0u32;
        let mut free: Option<Slot> = None;
        for (bucket, sec) in [(b1, 0u8), (b2, 1u8)] {
            let want = (tag << F_TAG.0) | (sec << F_SEC.0);
            let b = self.bucket(bucket);
            for idx in 0..SLOTS {
                let first = first_byte(idx, |i| b.word(i));
                if first & 0x03 == 0 {
                    if free.is_none() {
                        free = Some(Slot { bucket, idx });
                    }
                } else if first & 0x7C == want {
                    used |= 1 << self.read(Slot { bucket, idx }).color();
                }
            }
        }
        if used == (1 << COLORS) - 1 {
            return Err(Full);
        }
        let color = used.trailing_ones() as u8;
        e.set(F_COLOR, color.into());
        e.set(F_TAG, h % TAGS);
        let slot = match free {
            Some(s) => s,
            None => self.make_room_slow(w, b1, b2)?,
        };
        e.set(F_SEC, u64::from(slot.bucket != b1));
        self.write(w, slot, e);
        self.used.fetch_add(1, Relaxed);
        Ok(Loc { h: h as u32, color })
    }

    fn free_slot(&self, bucket: usize) -> Option<usize> {
        (0..SLOTS).find(|&idx| self.read(Slot { bucket, idx }).kind() == EMPTY)
    }

    /// Frees a slot in `b1` or `b2` by a breadth-first search for a cuckoo path, moving entries
    /// from the path's end backwards so every entry stays in one of its two buckets. (In a
    /// shared table every bucket on the path stays locked until the operation ends, so readers
    /// never see an entry in neither or both of its buckets.)
    #[cold]
    fn make_room_slow(&self, w: &mut Locks, b1: usize, b2: usize) -> Result<Slot, Full> {
        struct Node {
            bucket: usize,
            parent: usize,
            pslot: usize,
        }
        let mut nodes: Vec<Node> = Vec::with_capacity(64);
        nodes.push(Node {
            bucket: b1,
            parent: usize::MAX,
            pslot: 0,
        });
        if b2 != b1 {
            nodes.push(Node {
                bucket: b2,
                parent: usize::MAX,
                pslot: 0,
            });
        }
        let on_path = |nodes: &[Node], mut k: usize, b: usize| {
            while k != usize::MAX {
                if nodes[k].bucket == b {
                    return true;
                }
                k = nodes[k].parent;
            }
            false
        };
        let mut head = 0;
        while head < nodes.len() && nodes.len() < BFS_NODES {
            let bucket = nodes[head].bucket;
            for idx in 0..SLOTS {
                let victim = self.read(Slot { bucket, idx });
                let alt = self.hasher.other_bucket(bucket, victim.tag(), victim.sec());
                if alt == bucket || on_path(&nodes, head, alt) {
                    continue;
                }
                if let Some(free) = self.free_slot(alt) {
                    // Move the victim out, then each parent's victim into the slot it freed.
                    let mut to = Slot {
                        bucket: alt,
                        idx: free,
                    };
                    let mut from = Slot { bucket, idx };
                    let mut k = head;
                    loop {
                        let mut moved = self.read(from);
                        moved.set(F_SEC, u64::from(!moved.sec()));
                        self.write(w, to, moved);
                        to = from;
                        if nodes[k].parent == usize::MAX {
                            self.write(w, to, Ent::EMPTY);
                            return Ok(to);
                        }
                        from = Slot {
                            bucket: nodes[nodes[k].parent].bucket,
                            idx: nodes[k].pslot,
                        };
                        k = nodes[k].parent;
                    }
                }
                nodes.push(Node {
                    bucket: alt,
                    parent: head,
                    pslot: idx,
                });
            }
            head += 1;
        }
        Err(Full)
    }

    /// Empties every bucket.
    pub(crate) fn wipe(&mut self) {
        self.region.as_mut_slice().fill(0);
        self.used = AtomicUsize::new(0);
    }

    /// Every non-empty entry with its full hash (for audits).
    pub(crate) fn entries(&self) -> impl Iterator<Item = (u64, Ent)> + '_ {
        (0..self.nb).flat_map(move |bucket| {
            (0..SLOTS).filter_map(move |idx| {
                let e = self.read(Slot { bucket, idx });
                (e.kind() != EMPTY).then(|| (self.hasher.hash_of(bucket, e), e))
            })
        })
    }
}

#[cold]
#[inline(never)]
fn broken_child() -> ! {
    panic!("cuckoo trie invariant broken: a child bit without its child")
}
#[cold]
#[inline(never)]
fn dangling(l: Loc) -> ! {
    panic!("cuckoo trie invariant broken: no entry for locator {l:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_of_mul_a_is_step_and_step_is_peelable() {
        // Fewer hashes per table size under miri, which interprets every multiplication.
        let per_size = if cfg!(miri) { 40 } else { 2000 };
        for buckets in [1usize, 2, 3, 64, 1000, 65_537, (1 << 27) + 5] {
            let hs = Hasher::new(buckets, 42);
            let mut x = 0x9E37_79B9_7F4A_7C15_u64;
            for _ in 0..per_size {
                x = x.rotate_left(17).wrapping_mul(0xBF58_476D_1CE4_E5B9) ^ 0x94D0_49BB;
                let h = x % hs.n;
                let c = (x >> 40) as u32 % 33;
                let stepped = hs.step(h, c);
                assert!(stepped < hs.n);
                assert_eq!(hs.child(hs.mul_a(h), c), stepped, "S={buckets} h={h} c={c}");
                // Peelable: another parent hash gives another child hash for the same symbol.
                let other = (h + 1) % hs.n;
                if other != h {
                    assert_ne!(hs.step(other, c), stepped, "S={buckets} h={h} c={c}");
                }
            }
        }
    }

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
