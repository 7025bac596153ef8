//! The bucketized cuckoo hash table with key elimination (cuckoo-trie.txt §4.2).
//!
//! # Layout
//!
//! A table is an array of `S` 64-byte buckets in one [`Region`] (huge pages when large), or,
//! under a 4 KiB page, in one block from the global allocator (so an empty map stays small). A
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
//! | 19      | key entry    | a key entry (leaf-shaped, under the whole key's hash), else 0   |
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
//!
//! # Files
//!
//! This file holds the constants, the [`Table`] and its slot-level reads and writes; the rest
//! is one file per concern: `entry` (the entry format, [`Ent`] and [`Loc`]), `hash` (the
//! peelable [`Hasher`]), `session` (read sessions of shared tables), and the operations
//! `search` (find by parent or by locator), `insert` (cuckoo insertion) and `update` (rewrite
//! and remove entries).

use core::ptr::NonNull;
use core::sync::atomic::Ordering::Relaxed;
use core::sync::atomic::{AtomicU64, AtomicUsize};
use std::alloc::{Layout, alloc_zeroed, dealloc};

use super::Padded;
use super::seqlock::{Bucket, WORDS};
use crate::Error;
use crate::substrate::prefetch::prefetch_read;
use crate::substrate::region::{HugePages, Region};

mod entry;
mod hash;
mod insert;
mod search;
mod session;
mod update;

use entry::ENTRY_MASK;
pub(crate) use entry::{Ent, Loc};
pub(crate) use hash::Hasher;
use session::Mode;
pub(crate) use session::{FrozenRead, ReadSession, WriteSession};

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

/// Tables smaller than this many bytes are allocated, larger ones mapped.
const PAGE: usize = 4096;

/// Where a table's buckets live. A table of a page or more is mapped (on huge pages when
/// large); a smaller one comes from the global allocator at its exact size, so a small or
/// empty map costs less than a page.
enum Backing {
    Mapped(Region),
    Heap(HeapBuckets),
}

impl Backing {
    fn as_ptr(&self) -> *mut u8 {
        match self {
            Backing::Mapped(r) => r.as_ptr(),
            Backing::Heap(h) => h.ptr.as_ptr(),
        }
    }
}

/// Zeroed, 64-byte-aligned bucket memory from the global allocator. Invariant: `ptr` came
/// from `alloc_zeroed(layout)`, `layout.size() > 0`, and this value owns it.
struct HeapBuckets {
    ptr: NonNull<u8>,
    layout: Layout,
}

impl HeapBuckets {
    fn zeroed(bytes: usize) -> Result<HeapBuckets, Error> {
        let layout =
            Layout::from_size_align(bytes.max(64), 64).map_err(|_| Error::OutOfMemory { bytes })?;
        // SAFETY: the layout's size is at least 64, not zero.
        let ptr = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).ok_or(Error::OutOfMemory { bytes })?;
        Ok(HeapBuckets { ptr, layout })
    }
}

impl Drop for HeapBuckets {
    fn drop(&mut self) {
        // SAFETY: allocated by `alloc_zeroed` with this layout (invariant), freed once here.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

/// The table. Invariants:
/// 1. `buckets` points at `nb` buckets inside `backing`, `1 ≤ nb`, `16·nb ≤ u32::MAX`.
/// 2. An entry with tag `t` and side `sec` in bucket `b` has full hash
///    `hasher.hash_of(b, e)`, and sits in that hash's primary (`!sec`) or secondary bucket.
/// 3. Entries with the same full hash have distinct colors.
/// 4. `used` counts the non-empty entries.
/// 5. An unshared table is written by one thread at a time (the front end holds `&mut`),
///    directly. A shared table is written only inside [`WriteSession`]s, which change private
///    copies and commit them under the buckets' locks (`seqlock`).
/// 6. A shared table is read only inside sessions, by copies taken with atomic loads; plain
///    reads are for unshared tables (and a shared one's builder, before it is shared).
pub(crate) struct Table {
    backing: Backing,
    buckets: NonNull<Bucket>,
    nb: usize,
    pub(crate) hasher: Hasher,
    used: Padded<AtomicUsize>,
    /// Readers and writers may run concurrently: use the seqlock protocol and sessions.
    shared: bool,
    /// Nonzero while a resize or an audit copies the table: writers may not commit.
    frozen: AtomicU64,
    /// Cuckoo relocations so far, counted while the table is not shared (a resize's builder
    /// keeps the slots of entries it will patch while this stays the same).
    moves: AtomicUsize,
}

// SAFETY: the table owns its buckets (mapped or allocated) like a Box<[Bucket]>.
unsafe impl Send for Table {}
// SAFETY: writes are atomic stores from one thread at a time (invariant 5); reads that may
// race them are atomic loads inside read sessions (invariant 6).
unsafe impl Sync for Table {}
impl Table {
    /// A zeroed table of at least `min_buckets` buckets (every bucket of the mapped pages is
    /// used; under a page, exactly `min_buckets`), hashing with constants drawn from `seed`,
    /// mapped on pages as `huge` asks.
    pub(crate) fn with_buckets(
        min_buckets: usize,
        seed: u64,
        huge: HugePages,
    ) -> Result<Table, Error> {
        let bytes = min_buckets.max(1).saturating_mul(64);
        if (bytes / 64) as u64 * TAGS > MAX_HASHES {
            return Err(Error::OutOfMemory { bytes });
        }
        let (backing, nb) = if bytes < PAGE {
            // Under a page: exactly the buckets asked for, from the allocator.
            (Backing::Heap(HeapBuckets::zeroed(bytes)?), bytes / 64)
        } else {
            let region = Region::new_zeroed(bytes, huge)?;
            let nb = (region.len() / 64).min((MAX_HASHES / TAGS) as usize);
            (Backing::Mapped(region), nb)
        };
        let buckets =
            NonNull::new(backing.as_ptr().cast::<Bucket>()).expect("buckets are non-null");
        Ok(Table {
            hasher: Hasher::new(nb, seed),
            backing,
            buckets,
            nb,
            used: Padded(AtomicUsize::new(0)),
            shared: false,
            frozen: AtomicU64::new(0),
            moves: AtomicUsize::new(0),
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
        match &self.backing {
            Backing::Mapped(r) => r.memory_usage(),
            Backing::Heap(h) => h.layout.size(),
        }
    }
    /// Bytes mapped from the operating system (0 for a table under a page).
    pub(crate) fn mapped_bytes(&self) -> usize {
        match &self.backing {
            Backing::Mapped(r) => r.memory_usage(),
            Backing::Heap(_) => 0,
        }
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

    /// The words of bucket `b`: a session's copy in a shared table, else read directly.
    #[inline(always)]
    fn words(&self, b: usize) -> [u64; WORDS] {
        if self.shared && session::mode() != Mode::Off {
            return session::with_copy(self, b, |w| *w);
        }
        let bucket = self.bucket(b);
        core::array::from_fn(|i| bucket.word(i))
    }

    /// The entry at `s`.
    #[inline(always)]
    pub(crate) fn read(&self, s: Slot) -> Ent {
        if self.shared && session::mode() != Mode::Off {
            return session::with_copy(self, s.bucket, |w| session::decode(s.idx, |i| w[i]));
        }
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

    /// Writes entry `e` at `s`: into the write session's copy of the bucket when shared
    /// (invariant 5).
    #[inline(always)]
    fn write(&self, s: Slot, e: Ent) {
        if self.shared {
            session::own(self, s.bucket, |words| {
                session::encode(s.idx, e, |i, v, m| words[i] = (words[i] & !m) | (v & m));
            });
        } else {
            let b = self.bucket(s.bucket);
            session::encode(s.idx, e, |i, v, m| b.store_masked(i, v, m));
        }
    }

    /// Cuckoo relocations in this table while it was not shared: a [`Slot`] returned by
    /// [`insert_at`](Self::insert_at) still holds its entry while this has not changed.
    pub(crate) fn moves(&self) -> usize {
        self.moves.load(Relaxed)
    }

    fn moved(&self) {
        if !self.shared {
            self.moves.store(self.moves.load(Relaxed) + 1, Relaxed);
        }
    }

    /// Stores locator `l` into the entry at `s` of an unshared table (a slot from
    /// [`insert_at`](Self::insert_at) while [`moves`](Self::moves) is unchanged).
    pub(crate) fn set_loc_at(&self, s: Slot, l: Loc) {
        debug_assert!(!self.shared);
        debug_assert!(self.read(s).kind() != EMPTY);
        let (bits, mask) = Ent::loc_field(l);
        let b = self.bucket(s.bucket);
        session::encode_masked(s.idx, bits, mask, |i, v, m| b.store_masked(i, v, m));
    }

    /// Adds `delta` to the entry count: at once, or at the write session's commit.
    #[inline(always)]
    fn count(&self, delta: isize) {
        if self.shared {
            session::count(delta);
        } else {
            // One writer (invariant 5): no read-modify-write instruction needed.
            let used = self.used.load(Relaxed).wrapping_add_signed(delta);
            self.used.store(used, Relaxed);
        }
    }

    fn add_used(&self, delta: isize) {
        add_signed(&self.used, delta);
    }

    /// Makes the write session lock the bucket holding the entry `l` names without changing
    /// it: for state kept outside the table (the leaf list's head) that readers validate
    /// through that bucket. Nothing to do in an unshared table.
    pub(crate) fn touch(&self, l: Loc) -> Result<(), Torn> {
        if self.shared {
            let Some((s, _)) = self.find_loc(l) else {
                return Err(Torn);
            };
            session::own(self, s.bucket, |_| {});
        }
        Ok(())
    }

    /// Stops writers from committing to this shared table and waits until none holds a
    /// bucket: from then on the table cannot change until [`thaw`](Self::thaw) (see
    /// `seqlock`, "Freezing"). Readers go on meanwhile.
    pub(crate) fn freeze(&self) {
        let buckets = (0..self.nb).map(|b| self.bucket(b));
        super::seqlock::freeze(&self.frozen, buckets, session::wait_for_holder);
    }

    /// Lets writers commit again (after an audit; a resized table stays frozen for good).
    pub(crate) fn thaw(&self) {
        self.frozen.store(0, core::sync::atomic::Ordering::Release);
    }

    /// Prefetches both buckets of hash `h`.
    #[inline(always)]
    pub(crate) fn prefetch(&self, h: u64) {
        let (b1, b2) = self.hasher.buckets(h);
        prefetch_read(self.bucket(b1) as *const Bucket as *const u8);
        prefetch_read(self.bucket(b2) as *const Bucket as *const u8);
    }

    /// Empties every bucket.
    pub(crate) fn wipe(&mut self) {
        match &mut self.backing {
            Backing::Mapped(r) => r.as_mut_slice().fill(0),
            // SAFETY: the block is ours (HeapBuckets invariant), `layout.size()` bytes long,
            // and `&mut self` means nothing reads it meanwhile.
            Backing::Heap(h) => unsafe { h.ptr.as_ptr().write_bytes(0, h.layout.size()) },
        }
        self.used = Padded(AtomicUsize::new(0));
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

/// Adds `delta` to the count `c` (relaxed).
pub(crate) fn add_signed(c: &AtomicUsize, delta: isize) {
    // An update of a value commits a delta of 0: no store, so no cache-line transfer between
    // writers.
    if delta > 0 {
        c.fetch_add(delta as usize, Relaxed);
    } else if delta < 0 {
        c.fetch_sub(delta.unsigned_abs(), Relaxed);
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
