//! The trie of unique key prefixes over the hash table (cuckoo-trie.txt §4.1, §4.3–4.5).
//!
//! This file holds the shared types (symbols, search paths, the writer's scratch) and the
//! [`RawTrie`] itself; its operations live in one file each: `search` (descent, lookups,
//! seeks, the leaf list), `insert`, `remove`, `key_index` (the optional index of whole keys),
//! `resize` (growth and shrinking), `migrate` (the copy a resize makes, shared with helping
//! writers) and `audit`. The in-order walk is `super::cursor`.
//!
//! Non-generic: records are opaque addresses whose key bytes start `val_size` bytes in. The
//! front end (`super::super`) allocates, fills and frees records.
//!
//! # Names and symbols
//!
//! A key of `L` bytes is read as `⌈8L/s⌉` data symbols of `s` bits (the last one zero-padded),
//! each stored as `chunk + 1`, followed by the end symbol `0`. The end symbol sorts before every
//! data symbol, so the symbol strings sort exactly as the byte strings do, and no key's string
//! is a proper prefix of another's: keys that are byte-prefixes of each other ("ab", "abc") get
//! separate leaves. A node's name is a prefix of these strings; its depth is the name's length.
//!
//! # Invariants (checked by [`RawTrie::audit`])
//!
//! 1. The root (name ε, hash 0) is a regular node; it may have any number of children.
//! 2. Every other regular node has at least two children; a jump node has exactly one, which is
//!    a regular or jump node; a leaf's parent is a regular node. Hence each leaf sits at its
//!    key's shortest unique prefix.
//! 3. A child of a regular node stores the parent's color; the jump node stores its child's,
//!    and its child (like the root) has the by-color bit, so parent search never finds it.
//! 4. Leaves form a list in key order from `head`; every internal node's locator names the
//!    greatest leaf below it (the root's is `NULL` when the trie is empty).
//! 5. `len` is the number of leaves, and the table holds exactly the nodes of the trie.

use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use core::sync::atomic::{AtomicU64, AtomicUsize};

use super::Padded;
use super::table::{Ent, Full, LEAF, Loc, Table, Torn, add_signed};
use crate::Error;
use crate::substrate::region::HugePages;

mod audit;
mod insert;
mod key_index;
mod migrate;
mod remove;
mod resize;
mod search;

pub(crate) use migrate::Lobby;

/// `END_MASK[s][r]` keeps the bytes of a symbol group ([`Syms::group`]) of width `s` whose
/// symbols start in the first `r` bytes of the group (`r < 8`); the others are end symbols.
const END_MASK: [[u64; 8]; 6] = {
    let mut m = [[0; 8]; 6];
    let mut s = 1;
    while s <= 5 {
        let mut r = 0;
        while r < 8 {
            let mut k = 0;
            while k < 8 {
                if k * s < 8 * r {
                    m[s][r] |= 0xFF << (8 * k);
                }
                k += 1;
            }
            r += 1;
        }
        s += 1;
    }
    m
};

/// Reads keys as symbol strings; see the module docs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Syms {
    bits: u32,
    mask: u32,
}

impl Syms {
    pub(crate) fn new(bits: u32) -> Syms {
        debug_assert!((1..=5).contains(&bits));
        Syms {
            bits,
            mask: (1 << bits) - 1,
        }
    }

    /// Length of the symbol string of a `len`-byte key, end symbol included.
    #[inline(always)]
    pub(crate) fn count(self, len: usize) -> usize {
        (len * 8).div_ceil(self.bits as usize) + 1
    }

    /// Symbols `8j..8j + 8` of `key`'s string, symbol `8j + k` in byte `k` (little-endian).
    ///
    /// Eight symbols of `s` bits are exactly `s` bytes, so group `j` is bytes `s·j..s·j + s`
    /// of the key: one unaligned load and eight shifts, where [`at`](Self::at) costs a bounds
    /// check and two byte loads per symbol (a search of a 60-byte key reads about 80 symbols).
    #[inline(always)]
    pub(crate) fn group(self, key: &[u8], j: usize) -> u64 {
        let s = self.bits as usize;
        let b = j * s;
        let Some(word) = key.get(b..b + 8) else {
            return self.group_at_end(key, j);
        };
        // The group's `8s` bits, as the top bits of a big-endian word.
        self.spread(u64::from_be_bytes(word.try_into().expect("8 bytes")))
    }

    /// The eight `s`-bit chunks at the top of `w`, each plus one, in bytes `0..8` (the first
    /// chunk in byte 0). One arm per width, so every shift is a constant.
    #[inline(always)]
    fn spread(self, w: u64) -> u64 {
        #[inline(always)]
        fn by<const S: u32>(w: u64) -> u64 {
            let mut out = 0x0101_0101_0101_0101;
            for k in 0..8 {
                out += ((w >> (64 - S * (k + 1))) & ((1 << S) - 1)) << (8 * k);
            }
            out
        }
        match self.bits {
            1 => by::<1>(w),
            2 => by::<2>(w),
            3 => by::<3>(w),
            4 => by::<4>(w),
            _ => by::<5>(w),
        }
    }

    /// [`group`](Self::group) near the end of the key, where fewer than 8 bytes remain: the
    /// same shifts over a word holding the key's last bytes at its top and zeros below, with
    /// the symbols from the end symbol on cleared.
    #[inline(never)]
    fn group_at_end(self, key: &[u8], j: usize) -> u64 {
        let s = self.bits as usize;
        let b = j * s;
        let len = key.len();
        if b >= len {
            return 0;
        }
        let w = if len >= 8 {
            // Bytes `len - 8..len`, shifted so byte `b` is the top one (`b > len - 8`).
            let last = u64::from_be_bytes(key[len - 8..].try_into().expect("8 bytes"));
            last << (8 * (b + 8 - len))
        } else {
            key[b..]
                .iter()
                .enumerate()
                .fold(0, |w, (i, &x)| w | u64::from(x) << (56 - 8 * i))
        };
        // Symbols whose first bit is past the key are end symbols (0).
        self.spread(w) & END_MASK[s][len - b]
    }

    /// Symbol `i` of `key`'s string (`0`, the end symbol, from the last position on).
    #[inline(always)]
    pub(crate) fn at(self, key: &[u8], i: usize) -> u32 {
        let o = i * self.bits as usize;
        let b = o >> 3;
        if b >= key.len() {
            return 0;
        }
        let hi = u32::from(key[b]) << 8;
        let lo = key.get(b + 1).map_or(0, |&x| u32::from(x));
        (((hi | lo) >> (16 - (o & 7) as u32 - self.bits)) & self.mask) + 1
    }
}

/// Where the deepest smaller sibling seen on a search path is: the predecessor of everything at
/// or below the search point is the greatest leaf below it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Cand {
    /// No smaller key exists.
    None,
    /// The child with symbol `sym` of the regular node with hash `h` and color `pcolor`.
    Sibling { h: u64, sym: u32, pcolor: u8 },
    /// The leaf this locator names.
    Leaf(Loc),
}

/// How a search ended; the node it ended at is the last of the path (when recorded).
#[derive(Clone, Copy, Debug)]
pub(super) enum End {
    /// At the leaf `loc`, whose entry is `ent`.
    Leaf { loc: Loc, ent: Ent },
    /// At a regular node that has no child `sym`.
    NoChild { sym: u32 },
    /// Inside a jump node: its symbol `at` differs from the key's.
    JumpMismatch { at: usize },
}

/// One node of a recorded search path.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PathNode {
    pub(crate) loc: Loc,
    pub(crate) ent: Ent,
    pub(crate) depth: usize,
    /// The predecessor candidate from the nodes above this one.
    pub(crate) cand_before: Cand,
}

/// Result of [`RawTrie::insert`].
pub(crate) enum Inserted {
    /// The key was present: its leaf and record.
    Existing { loc: Loc, rec: *mut u8 },
    /// A new leaf now holds the record.
    New,
}

/// Which neighbour [`RawTrie::seek`] finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Seek {
    /// The least key `>=` the probe.
    Ge,
    /// The least key `>` the probe.
    Gt,
    /// The greatest key `<=` the probe.
    Le,
    /// The greatest key `<` the probe.
    Lt,
}

/// A leaf found by a search: its locator and entry.
pub(crate) type LeafRef = (Loc, Ent);

/// Settings the raw trie needs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Params {
    pub(crate) symbol_bits: u32,
    pub(crate) prefetch_depth: usize,
    pub(crate) max_load_factor: f64,
    pub(crate) initial_buckets: usize,
    /// Bytes before the key in a record.
    pub(crate) val_size: usize,
    /// Page size policy of the table's mapping.
    pub(crate) huge_pages: HugePages,
    /// Keep a key entry per key (`key_index`): point lookups probe it instead of descending.
    pub(crate) key_index: bool,
}

/// A writer's working memory, kept between operations so writes allocate nothing. A
/// single-threaded map has one; the concurrent map one per concurrent writer. `&mut Scratch`
/// is what makes a thread a writer of the trie.
///
/// The buffers grow to what the longest operation needed (a `MAX_KEY_LEN` key's path and jump
/// chain take megabytes), so each write ends with [`settle`](Self::settle), which gives memory
/// back once the buffers are far larger than what recent writes used: over
/// [`SCRATCH_KEEP`] bytes in all and more than [`SCRATCH_SLACK`] times a decaying high-water
/// mark of recent use. The mark decays by an eighth per write, so a shrink needs about a dozen
/// writes of far less than the peak; alternating large and small writes keep their buffers.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    /// Changes to the trie's fields outside the table that the write session in progress
    /// commits (shared tables).
    pub(crate) pending: Pending,
    /// The search path.
    path: Vec<PathNode>,
    /// Entries created by the operation in progress (for rollback).
    created: Vec<Loc>,
    /// The symbols of a new jump chain.
    chain: Vec<u32>,
    /// Decaying high-water marks of the lengths recent writes gave `path`, `created` and
    /// `chain`, in elements.
    recent: [HighWater; 3],
}

/// What a write to a shared trie changes outside the table, applied by
/// [`RawTrie::apply`] when its write session commits.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// The new first leaf (the root's bucket is in the write session).
    head: Option<Loc>,
    /// Change in the number of keys.
    len: isize,
}

/// Scratch bytes a writer keeps whatever it needed before: small-key workloads never
/// reallocate.
pub(crate) const SCRATCH_KEEP: usize = 64 * 1024;
/// Scratch is given back once its capacity is more than this many times the bytes recent
/// writes used.
pub(crate) const SCRATCH_SLACK: usize = 4;

/// The most elements recent operations used: the largest length noted, decaying by an eighth
/// at every note, so a peak stops counting after a few dozen smaller operations.
#[derive(Clone, Copy, Debug, Default)]
struct HighWater(usize);

impl HighWater {
    fn note(&mut self, len: usize) {
        self.0 = (self.0 - self.0 / 8).max(len);
    }
}

impl Scratch {
    pub(crate) fn memory_usage(&self) -> usize {
        self.path.capacity() * core::mem::size_of::<PathNode>()
            + self.created.capacity() * core::mem::size_of::<Loc>()
            + self.chain.capacity() * core::mem::size_of::<u32>()
    }

    /// Bytes the buffers' recent high-water marks stand for.
    fn recent_bytes(&self) -> usize {
        let [path, created, chain] = self.recent.map(|h| h.0);
        path * core::mem::size_of::<PathNode>()
            + created * core::mem::size_of::<Loc>()
            + chain * core::mem::size_of::<u32>()
    }

    /// Ends a write (its locks, if any, still held): empties the buffers only it used, notes
    /// how much it used, and shrinks the buffers when they are far above recent use (see the
    /// type's docs). Allocates nothing unless it shrinks.
    pub(crate) fn settle(&mut self) {
        let lens = [self.path.len(), self.created.len(), self.chain.len()];
        for (h, len) in self.recent.iter_mut().zip(lens) {
            h.note(len);
        }
        self.path.clear();
        self.created.clear();
        self.chain.clear();
        let capacity = self.memory_usage();
        if capacity > SCRATCH_KEEP && capacity / SCRATCH_SLACK > self.recent_bytes() {
            self.shrink();
        }
    }

    /// Shrinks each buffer to its recent high-water mark, but not below an equal share of
    /// [`SCRATCH_KEEP`] (so a shrink leaves at most that much plus recent use, and the next
    /// small write does not reallocate).
    #[cold]
    fn shrink(&mut self) {
        let share = SCRATCH_KEEP / 3;
        let [path, created, chain] = self.recent.map(|h| h.0);
        self.path
            .shrink_to(path.max(share / core::mem::size_of::<PathNode>()));
        self.created
            .shrink_to(created.max(share / core::mem::size_of::<Loc>()));
        self.chain
            .shrink_to(chain.max(share / core::mem::size_of::<u32>()));
        debug_assert!(self.memory_usage() <= 2 * (SCRATCH_KEEP + self.recent_bytes()));
    }
}

/// Why a write stopped without changing the trie.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Retry {
    /// The table must grow before the operation can complete (entries the insert had created
    /// are rolled back, or in a shared table were never committed); the front end builds a
    /// larger trie with [`RawTrie::grown`] and retries. In a shared table, this may come from
    /// torn copies too: check the session's reads before growing.
    Grow,
    /// The copies of a shared table's write session are torn: run the operation again.
    Torn,
}

impl From<Full> for Retry {
    fn from(_: Full) -> Retry {
        Retry::Grow
    }
}

impl From<Torn> for Retry {
    fn from(_: Torn) -> Retry {
        Retry::Torn
    }
}

/// The trie; see the module docs for its invariants.
///
/// Methods that change it take a [`Scratch`]: one writer at a time when unshared, writers in
/// write sessions when shared (the table's invariant 5), whose changes to fields outside the
/// table wait in [`Scratch::pending`] until [`apply`](Self::apply). Everything else is read
/// through `&self`, from any number of threads when the table is shared; fields a writer
/// updates are therefore atomics (relaxed: readers of a shared table validate through bucket
/// versions instead, see `first`).
pub(crate) struct RawTrie {
    pub(crate) table: Table,
    pub(super) syms: Syms,
    params: Params,
    seed: u64,
    root: Loc,
    /// A copy of the root's entry (every search starts there), refreshed after each write;
    /// used only when the table is not shared.
    root_ent: [AtomicU64; 2],
    /// First leaf, packed by [`pack`]; changed only with the root's bucket locked.
    head: AtomicU64,
    len: Padded<AtomicUsize>,
    /// Moving average of the depth of new leaves, in 1/16 symbols.
    depth_avg: Padded<AtomicUsize>,
    /// Deepest prefix a search prefetches: the average leaf depth plus [`HORIZON_MARGIN`].
    horizon: AtomicUsize,
}

/// Symbols past the average leaf depth that searches still prefetch. Prefetches beyond a
/// search's leaf are wasted DRAM reads that compete with the useful ones (16 parallel misses
/// cost 1.54× one on this machine); the margin covers leaves deeper than average.
pub(super) const HORIZON_MARGIN: usize = 3;

fn pack(l: Loc) -> u64 {
    u64::from(l.h) | (u64::from(l.color) << 32)
}

fn unpack(x: u64) -> Loc {
    Loc {
        h: x as u32,
        color: (x >> 32) as u8,
    }
}

/// The result of a read on a view no reader of a shared table can have torn: the writer's own
/// view, or an unshared table's.
#[inline(always)]
pub(crate) fn stable<T>(r: Result<T, Torn>) -> T {
    match r {
        Ok(x) => x,
        Err(Torn) => broken("a torn read outside a read session"),
    }
}

impl RawTrie {
    pub(crate) fn new(params: Params) -> Result<RawTrie, Error> {
        let seed = 0x5EED_C0C0_u64;
        let (table, root) = Self::empty_table(params.initial_buckets, seed, params.huge_pages)?;
        Ok(Self::assemble(
            table,
            params,
            seed,
            root,
            Loc::NULL,
            0,
            (0, HORIZON_MARGIN),
        ))
    }

    fn assemble(
        table: Table,
        params: Params,
        seed: u64,
        root: Loc,
        head: Loc,
        len: usize,
        (depth_avg, horizon): (usize, usize),
    ) -> RawTrie {
        let t = RawTrie {
            table,
            syms: Syms::new(params.symbol_bits),
            params,
            seed,
            root,
            root_ent: [AtomicU64::new(0), AtomicU64::new(0)],
            head: AtomicU64::new(pack(head)),
            len: Padded(AtomicUsize::new(len)),
            depth_avg: Padded(AtomicUsize::new(depth_avg)),
            horizon: AtomicUsize::new(horizon),
        };
        t.refresh_root();
        t
    }

    fn empty_table(buckets: usize, seed: u64, huge: HugePages) -> Result<(Table, Loc), Error> {
        let table = Table::with_buckets(buckets, seed, huge)?;
        let root = table
            .insert(0, Ent::regular(0, 0, 0, Loc::NULL).with_by_color(true))
            .expect("an empty table has room for the root");
        Ok((table, root))
    }

    /// Lets readers on other threads race the writer (the concurrent front end, before it
    /// publishes the trie).
    pub(crate) fn set_shared(&mut self) {
        self.table.set_shared(true);
    }

    pub(crate) fn len(&self) -> usize {
        self.len.load(Relaxed)
    }

    /// Bytes of the table's mapping (records are the front end's).
    pub(crate) fn table_bytes(&self) -> usize {
        self.table.memory_usage()
    }

    /// Empties the trie (the caller has freed the records) and shrinks the table; if no new
    /// table can be mapped, wipes the old one instead.
    pub(crate) fn reset(&mut self) {
        match Self::empty_table(
            self.params.initial_buckets,
            self.seed,
            self.params.huge_pages,
        ) {
            Ok((table, root)) => {
                self.table = table;
                self.root = root;
            }
            Err(_) => {
                self.table.wipe();
                self.root = self
                    .table
                    .insert(0, Ent::regular(0, 0, 0, Loc::NULL).with_by_color(true))
                    .expect("an empty table has room for the root");
            }
        }
        self.head = AtomicU64::new(pack(Loc::NULL));
        self.len = Padded(AtomicUsize::new(0));
        self.refresh_root();
    }

    /// Re-reads the root's entry into the copy unshared searches start from.
    fn refresh_root(&self) {
        if self.table.is_shared() {
            return;
        }
        let e = self.table.get(self.root).bits();
        self.root_ent[0].store(e as u64, Relaxed);
        self.root_ent[1].store((e >> 64) as u64, Relaxed);
    }

    /// The root's entry.
    #[inline(always)]
    pub(super) fn root_entry(&self) -> Result<Ent, Torn> {
        if self.table.is_shared() {
            self.table.fetch(self.root)
        } else {
            let lo = u128::from(self.root_ent[0].load(Relaxed));
            let hi = u128::from(self.root_ent[1].load(Relaxed));
            let e = Ent::from_bits(lo | (hi << 64));
            debug_assert_eq!(e, self.table.get(self.root), "stale root copy");
            Ok(e)
        }
    }

    /// The key bytes of a leaf's record.
    ///
    /// # Safety
    /// `e` is a leaf entry this trie held, and the returned slice is not used after its
    /// record is freed (the single-threaded front end frees records only through `&mut`; the
    /// concurrent one through epoch-based reclamation, so a pinned reader may use any leaf it
    /// read).
    #[inline(always)]
    pub(crate) unsafe fn key_of<'a>(&self, e: Ent) -> &'a [u8] {
        debug_assert_eq!(e.kind(), LEAF);
        // SAFETY: the front end wrote `key_len` key bytes at `val_size` into the record when
        // it created the leaf; the record lives as long as the caller's contract says.
        unsafe { core::slice::from_raw_parts(e.rec().add(self.params.val_size), e.key_len()) }
    }

    /// A reader of a shared table met an impossible state; elsewhere an invariant is broken.
    #[cold]
    fn torn(&self) -> Torn {
        if !self.table.is_shared() {
            broken("an impossible path");
        }
        Torn
    }

    /// Inserts a new entry, remembering it for rollback.
    fn create(&self, w: &mut Scratch, h: u64, e: Ent) -> Result<Loc, Full> {
        let l = self.table.insert(h, e)?;
        w.created.push(l);
        Ok(l)
    }

    /// Links leaf `l` after `pred` (or first).
    fn link_after(&self, w: &mut Scratch, pred: Option<LeafRef>, l: Loc) -> Result<(), Torn> {
        match pred {
            Some((p, _)) => self.table.update(p, |e| e.set_loc(l)),
            None if self.table.is_shared() => {
                // Readers validate `head` through the root's bucket: commit it locked.
                self.table.touch(self.root)?;
                w.pending.head = Some(l);
                Ok(())
            }
            None => {
                self.head.store(pack(l), Release);
                Ok(())
            }
        }
    }

    /// The leaf after `pred` (or the first leaf).
    fn next_of(&self, w: &Scratch, pred: Option<LeafRef>) -> Result<Loc, Torn> {
        match pred {
            Some((_, e)) => Ok(e.loc()),
            None => {
                if let Some(l) = w.pending.head {
                    return Ok(l);
                }
                if self.table.is_shared() {
                    // Copy the root's bucket first: its version validates `head`.
                    self.table.fetch(self.root)?;
                }
                Ok(unpack(self.head.load(Acquire)))
            }
        }
    }

    /// Counts a key in or out: at once, or when the write session commits.
    fn count(&self, w: &mut Scratch, delta: isize) {
        if self.table.is_shared() {
            w.pending.len += delta;
        } else {
            add_signed(&self.len, delta);
        }
    }

    /// Applies the changes outside the table of the write that `w` made, while its write
    /// session commits (its buckets, the root's among them if `head` changed, are locked).
    pub(crate) fn apply(&self, w: &mut Scratch) {
        let Pending { head, len } = core::mem::take(&mut w.pending);
        if let Some(l) = head {
            self.head.store(pack(l), Release);
        }
        add_signed(&self.len, len);
    }

    /// Forgets the changes outside the table of a write whose session did not commit.
    pub(crate) fn forget(&self, w: &mut Scratch) {
        w.pending = Pending::default();
    }

    /// Replaces subtree maxima along `path[..=from]`, bottom-up, while they are one of the
    /// `repl` sources (a suffix of the path holds each; see invariant 4).
    fn fix_max(&self, path: &[PathNode], from: usize, repl: &[(Loc, Loc)]) -> Result<(), Torn> {
        for p in path[..=from].iter().rev() {
            let replaced = self.table.update_if(p.loc, |e| {
                match repl.iter().find(|(old, _)| *old == e.loc()) {
                    Some(&(_, new)) => {
                        e.set_loc(new);
                        true
                    }
                    None => false,
                }
            })?;
            if !replaced {
                break;
            }
        }
        Ok(())
    }
}

#[cold]
#[inline(never)]
fn broken(what: &str) -> ! {
    panic!("cuckoo trie invariant broken: {what}")
}
