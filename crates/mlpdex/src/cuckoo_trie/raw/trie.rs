//! The trie of unique key prefixes over the hash table (cuckoo-trie.txt §4.1, §4.3–4.5).
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

use core::cmp::Ordering;
use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use core::sync::atomic::{AtomicU64, AtomicUsize};

use super::table::{Ent, Full, JUMP, JUMP_MAX, LEAF, Loc, Locks, REGULAR, Table, Torn};
use crate::Error;
use crate::substrate::region::HugePages;

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

/// Ring of prefix hashes `h(k[:i])`, computed (and their buckets prefetched) `depth` ahead of
/// the search, with the key's symbols read on the way (so the search does not read them again).
struct Hashes {
    ring: [u64; RING],
    /// `syms[i % RING]` is symbol `i` of the key, for `i + 1 < known`.
    syms: [u8; RING],
    /// Hashes of prefixes `0..known` have been computed.
    known: usize,
    total: usize,
}

const RING: usize = 32;
/// Children whose buckets (old and new table) a rebuild keeps in flight.
const REBUILD_WINDOW: u32 = 8;
const _: () = assert!(RING > JUMP_MAX + super::MAX_PREFETCH + 1);

impl Hashes {
    /// Nothing computed yet but `h(ε) = 0`. Built in place by the search (returning this
    /// 300-byte struct from a constructor cost a copy per search).
    #[inline(always)]
    fn empty(total: usize) -> Hashes {
        Hashes {
            ring: [0; RING],
            syms: [0; RING],
            known: 1,
            total,
        }
    }

    /// Computes hashes up to prefix `upto` (capped at the full string), prefetching each.
    #[inline(always)]
    fn advance(&mut self, t: &Table, syms: Syms, key: &[u8], upto: usize) {
        let upto = upto.min(self.total);
        while self.known <= upto {
            let i = self.known;
            let c = syms.at(key, i - 1);
            self.syms[(i - 1) % RING] = c as u8;
            let h = t.hasher.step(self.ring[(i - 1) % RING], c);
            self.ring[i % RING] = h;
            t.prefetch(h);
            self.known += 1;
        }
    }

    #[inline(always)]
    fn get(&self, i: usize) -> u64 {
        debug_assert!(i < self.known && i + RING > self.known);
        self.ring[i % RING]
    }

    /// Symbol `i` of `key`: from the ring when it has been read, else read now.
    #[inline(always)]
    fn sym(&self, syms: Syms, key: &[u8], i: usize) -> u32 {
        if i + 1 < self.known {
            debug_assert!(i + RING + 1 > self.known);
            u32::from(self.syms[i % RING])
        } else {
            syms.at(key, i)
        }
    }
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
}

/// A writer's working memory, kept between operations so writes allocate nothing. There is
/// one per map, and `&mut Scratch` is what makes a thread the map's (only) writer.
///
/// The buffers grow to what the longest operation needed (a `MAX_KEY_LEN` key's path and jump
/// chain take megabytes), so each write ends with [`settle`](Self::settle), which gives memory
/// back once the buffers are far larger than what recent writes used: over
/// [`SCRATCH_KEEP`] bytes in all and more than [`SCRATCH_SLACK`] times a decaying high-water
/// mark of recent use. The mark decays by an eighth per write, so a shrink needs about a dozen
/// writes of far less than the peak; alternating large and small writes keep their buffers.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    /// Buckets locked by the operation in progress (shared tables).
    pub(crate) locks: Locks,
    /// The search path.
    path: Vec<PathNode>,
    /// Entries created by the operation in progress (for rollback).
    created: Vec<Loc>,
    /// The symbols of a new jump chain.
    chain: Vec<u32>,
    /// Decaying high-water marks of the lengths recent writes gave `locks`, `path`, `created`
    /// and `chain`, in elements.
    recent: [HighWater; 4],
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
        self.locks.capacity_bytes()
            + self.path.capacity() * core::mem::size_of::<PathNode>()
            + self.created.capacity() * core::mem::size_of::<Loc>()
            + self.chain.capacity() * core::mem::size_of::<u32>()
    }

    /// Bytes the buffers' recent high-water marks stand for.
    fn recent_bytes(&self) -> usize {
        let [locks, path, created, chain] = self.recent.map(|h| h.0);
        locks * Locks::ELEM_BYTES
            + path * core::mem::size_of::<PathNode>()
            + created * core::mem::size_of::<Loc>()
            + chain * core::mem::size_of::<u32>()
    }

    /// Ends a write (its locks, if any, still held): empties the buffers only it used, notes
    /// how much it used, and shrinks the buffers when they are far above recent use (see the
    /// type's docs). Allocates nothing unless it shrinks.
    pub(crate) fn settle(&mut self) {
        let lens = [
            self.locks.len(),
            self.path.len(),
            self.created.len(),
            self.chain.len(),
        ];
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
        let share = SCRATCH_KEEP / 4;
        let [locks, path, created, chain] = self.recent.map(|h| h.0);
        self.locks.shrink_to(locks.max(share / Locks::ELEM_BYTES));
        self.path
            .shrink_to(path.max(share / core::mem::size_of::<PathNode>()));
        self.created
            .shrink_to(created.max(share / core::mem::size_of::<Loc>()));
        self.chain
            .shrink_to(chain.max(share / core::mem::size_of::<u32>()));
        debug_assert!(self.memory_usage() <= 2 * (SCRATCH_KEEP + self.recent_bytes()));
    }
}

/// The table must grow before the operation can complete. Nothing was changed (entries the
/// insert had created are rolled back); the front end builds a larger trie with
/// [`RawTrie::grown`] and retries.
#[derive(Debug)]
pub(crate) struct NeedsGrowth;

/// The trie; see the module docs for its invariants.
///
/// Methods that change it take a [`Scratch`]: one writer at a time (the table's invariant 5).
/// Everything else is read through `&self`, from any number of threads when the table is
/// shared; fields a writer updates are therefore atomics (relaxed: readers of a shared table
/// validate through bucket versions instead, see `first`).
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
    len: AtomicUsize,
    /// Moving average of the depth of new leaves, in 1/16 symbols.
    depth_avg: AtomicUsize,
    /// Deepest prefix a search prefetches: the average leaf depth plus [`HORIZON_MARGIN`].
    horizon: AtomicUsize,
}

/// Symbols past the average leaf depth that searches still prefetch. Prefetches beyond a
/// search's leaf are wasted DRAM reads that compete with the useful ones (16 parallel misses
/// cost 1.54× one on this machine); the margin covers leaves deeper than average.
const HORIZON_MARGIN: usize = 3;

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
            len: AtomicUsize::new(len),
            depth_avg: AtomicUsize::new(depth_avg),
            horizon: AtomicUsize::new(horizon),
        };
        t.refresh_root();
        t
    }

    fn empty_table(buckets: usize, seed: u64, huge: HugePages) -> Result<(Table, Loc), Error> {
        let table = Table::with_buckets(buckets, seed, huge)?;
        let root = table
            .insert(
                &mut Locks::default(),
                0,
                Ent::regular(0, 0, 0, Loc::NULL).with_by_color(true),
            )
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
                    .insert(
                        &mut Locks::default(),
                        0,
                        Ent::regular(0, 0, 0, Loc::NULL).with_by_color(true),
                    )
                    .expect("an empty table has room for the root");
            }
        }
        self.head = AtomicU64::new(pack(Loc::NULL));
        self.len = AtomicUsize::new(0);
        self.refresh_root();
    }

    /// Re-reads the root's entry into the copy unshared searches start from.
    fn refresh_root(&self) {
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

    /// Searches `key` from the root, recording the path in `path` when given. With `PRED`, the
    /// buckets of each new predecessor candidate are prefetched as soon as it is known, so
    /// resolving the last one afterwards (seeks and writes do) overlaps with the descent.
    #[inline(always)]
    pub(super) fn descend<const PRED: bool>(
        &self,
        key: &[u8],
        mut path: Option<&mut Vec<PathNode>>,
    ) -> Result<(End, Cand), Torn> {
        let syms = self.syms;
        let t = &self.table;
        let total = syms.count(key.len());
        let d = self.params.prefetch_depth;
        let cap = self.horizon.load(Relaxed);
        let mut hs = Hashes::empty(total);
        hs.advance(t, syms, key, d.min(cap));
        let mut loc = self.root;
        let mut ent = self.root_entry()?;
        let mut i = 0usize;
        let mut cand = Cand::None;
        loop {
            if let Some(p) = path.as_deref_mut() {
                p.push(PathNode {
                    loc,
                    ent,
                    depth: i,
                    cand_before: cand,
                });
            }
            match ent.kind() {
                LEAF => return Ok((End::Leaf { loc, ent }, cand)),
                REGULAR => {
                    if i >= total {
                        // Past the end symbol, whose child is always a leaf: a torn view.
                        return Err(self.torn());
                    }
                    let c = hs.sym(syms, key, i);
                    let bm = ent.bitmap();
                    let below = bm & ((1u64 << c) - 1);
                    if below != 0 {
                        let (h, sym) = (hs.get(i), 63 - below.leading_zeros());
                        if PRED {
                            t.prefetch(t.hasher.step(h, sym));
                        }
                        cand = Cand::Sibling {
                            h,
                            sym,
                            pcolor: ent.color(),
                        };
                    }
                    if (bm >> c) & 1 == 0 {
                        return Ok((End::NoChild { sym: c }, cand));
                    }
                    hs.advance(t, syms, key, (i + 1 + d).min(cap.max(i + 1)));
                    let h = hs.get(i + 1);
                    let e = t.child(h, c, ent.color())?;
                    loc = Loc {
                        h: h as u32,
                        color: e.color(),
                    };
                    ent = e;
                    i += 1;
                }
                JUMP => {
                    let n = ent.jump_len();
                    for at in 0..n {
                        let c = hs.sym(syms, key, i + at);
                        let s = ent.jump_sym(at);
                        if c != s {
                            if c > s {
                                cand = Cand::Leaf(ent.loc());
                                if PRED {
                                    t.prefetch(ent.loc().h.into());
                                }
                            }
                            return Ok((End::JumpMismatch { at }, cand));
                        }
                    }
                    hs.advance(t, syms, key, (i + n + d).min(cap.max(i + n)));
                    let h = hs.get(i + n);
                    loc = Loc {
                        h: h as u32,
                        color: ent.jump_child(),
                    };
                    ent = t.fetch(loc)?;
                    i += n;
                }
                _ => return Err(self.torn()),
            }
        }
    }

    /// A reader of a shared table met an impossible state; elsewhere an invariant is broken.
    #[cold]
    fn torn(&self) -> Torn {
        if !self.table.is_shared() {
            broken("an impossible path");
        }
        Torn
    }

    /// Starts the second read of resolving `cand` (a sibling's maximum) so it overlaps with
    /// the writer's next reads (the split leaf's record, new entries' buckets).
    #[inline]
    fn prefetch_pred(&self, cand: Cand) {
        if let Cand::Sibling { h, sym, pcolor } = cand {
            let hc = self.table.hasher.step(h, sym);
            if let Some((_, e)) = self.table.find_by_parent(hc, sym, pcolor)
                && e.kind() != LEAF
            {
                self.table.prefetch(e.loc().h.into());
            }
        }
    }

    /// The leaf a predecessor candidate stands for.
    fn resolve(&self, cand: Cand) -> Result<Option<LeafRef>, Torn> {
        match cand {
            Cand::None => Ok(None),
            Cand::Leaf(l) => Ok(Some((l, self.table.fetch(l)?))),
            Cand::Sibling { h, sym, pcolor } => {
                let hc = self.table.hasher.step(h, sym);
                let e = self.table.child(hc, sym, pcolor)?;
                if e.kind() == LEAF {
                    Ok(Some((
                        Loc {
                            h: hc as u32,
                            color: e.color(),
                        },
                        e,
                    )))
                } else {
                    let m = e.loc();
                    Ok(Some((m, self.table.fetch(m)?)))
                }
            }
        }
    }

    /// The leaf after `e` in key order.
    #[inline]
    pub(crate) fn next(&self, e: Ent) -> Result<Option<LeafRef>, Torn> {
        let l = e.loc();
        if l.is_null() {
            return Ok(None);
        }
        Ok(Some((l, self.table.fetch(l)?)))
    }

    /// Prefetches the buckets a locator names.
    #[inline]
    pub(crate) fn prefetch_loc(&self, l: Loc) {
        if !l.is_null() {
            self.table.prefetch(l.h.into());
        }
    }

    /// The first leaf. In a shared table, `head` is read after a copy of the root's bucket,
    /// which every change of `head` locks: validating that bucket validates `head`.
    pub(crate) fn first(&self) -> Result<Option<LeafRef>, Torn> {
        if self.table.is_shared() {
            self.root_entry()?;
        }
        let head = unpack(self.head.load(Acquire));
        if head.is_null() {
            return Ok(None);
        }
        Ok(Some((head, self.table.fetch(head)?)))
    }

    /// The last leaf.
    pub(crate) fn last(&self) -> Result<Option<LeafRef>, Torn> {
        let m = self.root_entry()?.loc();
        if m.is_null() {
            return Ok(None);
        }
        Ok(Some((m, self.table.fetch(m)?)))
    }

    /// The record of `key`.
    #[inline]
    pub(crate) fn get(&self, key: &[u8]) -> Result<Option<*mut u8>, Torn> {
        Ok(match self.descend::<false>(key, None)?.0 {
            // SAFETY: `ent` is a leaf of this trie, read under `&self`.
            End::Leaf { ent, .. } if unsafe { self.key_of(ent) } == key => Some(ent.rec()),
            _ => None,
        })
    }

    /// The neighbour of `key` that `op` asks for.
    pub(crate) fn seek(&self, key: &[u8], op: Seek) -> Result<Option<LeafRef>, Torn> {
        let (end, cand) = self.descend::<true>(key, None)?;
        match end {
            End::Leaf { loc, ent } => {
                if matches!(op, Seek::Ge | Seek::Gt) {
                    // The answer may be the next leaf: fetch its buckets while the record's
                    // key is read for the comparison (two independent DRAM reads).
                    self.prefetch_loc(ent.loc());
                }
                // SAFETY: a leaf of this trie under `&self`.
                let ord = unsafe { self.key_of(ent) }.cmp(key);
                let here = match op {
                    Seek::Ge => ord != Ordering::Less,
                    Seek::Gt => ord == Ordering::Greater,
                    Seek::Le => ord != Ordering::Greater,
                    Seek::Lt => ord == Ordering::Less,
                };
                if here {
                    Ok(Some((loc, ent)))
                } else if matches!(op, Seek::Ge | Seek::Gt) {
                    // The leaf is below the probe: its successor is the answer.
                    self.next(ent)
                } else {
                    // The leaf is above the probe: the predecessor of its subtree is.
                    self.resolve(cand)
                }
            }
            _ => {
                let pred = self.resolve(cand)?;
                match op {
                    Seek::Le | Seek::Lt => Ok(pred),
                    Seek::Ge | Seek::Gt => match pred {
                        Some((_, e)) => self.next(e),
                        None => self.first(),
                    },
                }
            }
        }
    }

    /// Grows when the table would pass its load limit with `extra` more entries.
    fn needs_growth(&self, extra: usize) -> bool {
        (self.table.used() + extra) as f64
            > self.table.capacity() as f64 * self.params.max_load_factor
    }

    /// Inserts `key` with the record `make` returns, unless present. `make` may be called
    /// before a [`NeedsGrowth`]: the caller keeps that record for the retry. In a shared
    /// table the buckets written stay locked until the caller's `unlock_all`.
    pub(crate) fn insert(
        &self,
        w: &mut Scratch,
        key: &[u8],
        make: &mut dyn FnMut() -> *mut u8,
    ) -> Result<Inserted, NeedsGrowth> {
        let mut path = core::mem::take(&mut w.path);
        path.clear();
        let result = (|| {
            let (end, cand) = stable(self.descend::<true>(key, Some(&mut path)));
            self.prefetch_pred(cand);
            let last = *path.last().expect("the path holds the root");
            // For a leaf split, where the two keys' strings part (computed once, here).
            let mut split_at = 0;
            let extra = match end {
                End::Leaf { loc, ent } => {
                    // SAFETY: a leaf of this trie; no record is freed during insert.
                    let other = unsafe { self.key_of(ent) };
                    if other == key {
                        return Ok(Inserted::Existing {
                            loc,
                            rec: ent.rec(),
                        });
                    }
                    split_at = self.first_difference(key, other, last.depth);
                    (split_at - last.depth).div_ceil(JUMP_MAX) + 3
                }
                _ => 3,
            };
            if self.needs_growth(extra) {
                return Err(NeedsGrowth);
            }
            let r = make();
            w.created.clear();
            let done = match end {
                End::NoChild { sym } => self.insert_under(w, key, &last, sym, cand, r, &path),
                End::Leaf { .. } => self.insert_split_leaf(w, key, &last, split_at, cand, r, &path),
                End::JumpMismatch { at } => {
                    self.insert_split_jump(w, key, &last, at, cand, r, &path)
                }
            };
            match done {
                Ok(depth) => {
                    self.len.fetch_add(1, Relaxed);
                    self.note_leaf_depth(depth);
                    Ok(Inserted::New)
                }
                Err(Full) => {
                    for l in core::mem::take(&mut w.created) {
                        self.table.remove(&mut w.locks, l);
                    }
                    Err(NeedsGrowth)
                }
            }
        })();
        w.path = path;
        w.settle();
        self.refresh_root();
        result
    }

    /// Points leaf `l` at a new record (an update of an existing key's value).
    pub(crate) fn set_record(&self, w: &mut Scratch, l: Loc, rec: *mut u8) {
        self.table.update(&mut w.locks, l, |e| {
            *e = Ent::leaf(e.sym(), e.pcolor(), rec, e.key_len(), e.loc()).in_place_of(*e);
        });
    }

    /// Folds the depth of a new leaf into the average that sets the prefetch horizon.
    fn note_leaf_depth(&self, depth: usize) {
        let d16 = depth.min(1 << 20) * 16;
        let avg = self.depth_avg.load(Relaxed);
        let avg = avg - avg / 16 + d16 / 16;
        self.depth_avg.store(avg, Relaxed);
        self.horizon
            .store(avg.div_ceil(16) + HORIZON_MARGIN, Relaxed);
    }

    /// The first symbol position `>= from` where the strings of `a` and `b` differ.
    fn first_difference(&self, a: &[u8], b: &[u8], from: usize) -> usize {
        let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
        let mut j = (common * 8 / self.syms.bits as usize).max(from);
        while self.syms.at(a, j) == self.syms.at(b, j) {
            j += 1;
        }
        j
    }

    /// Inserts a new entry, remembering it for rollback.
    fn create(&self, w: &mut Scratch, h: u64, e: Ent) -> Result<Loc, Full> {
        let l = self.table.insert(&mut w.locks, h, e)?;
        w.created.push(l);
        Ok(l)
    }

    /// Links leaf `l` after `pred` (or first).
    fn link_after(&self, w: &mut Scratch, pred: Option<LeafRef>, l: Loc) {
        match pred {
            Some((p, _)) => self.table.update(&mut w.locks, p, |e| e.set_loc(l)),
            None => {
                self.table.touch(&mut w.locks, self.root);
                self.head.store(pack(l), Release);
            }
        }
    }

    /// The leaf after `pred` (or the first leaf).
    fn next_of(&self, pred: Option<LeafRef>) -> Loc {
        match pred {
            Some((_, e)) => e.loc(),
            None => unpack(self.head.load(Relaxed)),
        }
    }
    /// Replaces subtree maxima along `path[..=from]`, bottom-up, while they are one of the
    /// `repl` sources (a suffix of the path holds each; see invariant 4).
    fn fix_max(&self, w: &mut Scratch, path: &[PathNode], from: usize, repl: &[(Loc, Loc)]) {
        for p in path[..=from].iter().rev() {
            let replaced = self.table.update_if(&mut w.locks, p.loc, |e| {
                match repl.iter().find(|(old, _)| *old == e.loc()) {
                    Some(&(_, new)) => {
                        e.set_loc(new);
                        true
                    }
                    None => false,
                }
            });
            if !replaced {
                break;
            }
        }
    }

    /// Case 1 of §4.5: the search stopped at regular node `n`, which lacks child `c`.
    #[allow(clippy::too_many_arguments)]
    fn insert_under(
        &self,
        w: &mut Scratch,
        key: &[u8],
        n: &PathNode,
        c: u32,
        cand: Cand,
        rec: *mut u8,
        path: &[PathNode],
    ) -> Result<usize, Full> {
        let pred = stable(self.resolve(cand));
        let h = self.table.hasher.step(n.loc.h.into(), c);
        let leaf = Ent::leaf(c, n.ent.color(), rec, key.len(), self.next_of(pred));
        let l = self.create(w, h, leaf)?;
        self.link_after(w, pred, l);
        let bm = n.ent.bitmap();
        self.table
            .update(&mut w.locks, n.loc, |e| e.set_bitmap(bm | 1 << c));
        if bm >> c == 0 {
            // The new leaf is the greatest below `n`.
            self.fix_max(w, path, path.len() - 1, &[(n.ent.loc(), l)]);
        }
        Ok(n.depth + 1)
    }

    /// Jump nodes (bottom-up creation) for the chain of symbols `syms` starting at depth
    /// `depth` with hash `h`, above a node of color `child`; the top one is not created but
    /// returned as content. Returns (top content, hash after the chain).
    #[allow(clippy::too_many_arguments)]
    fn build_chain(
        &self,
        w: &mut Scratch,
        syms: &[u32],
        h: u64,
        top_sym: u32,
        top_pcolor: u8,
        mut child: u8,
        max: Loc,
    ) -> Result<Ent, Full> {
        debug_assert!(!syms.is_empty());
        if syms.len() <= JUMP_MAX {
            // One jump node, the top: nothing to create (the common case; no allocation).
            return Ok(Ent::jump(top_sym, top_pcolor, syms, child, max));
        }
        // Hashes at each chunk start.
        let mut starts: Vec<(usize, u64)> = Vec::with_capacity(syms.len() / JUMP_MAX + 1);
        let mut hh = h;
        for (k, &s) in syms.iter().enumerate() {
            if k % JUMP_MAX == 0 {
                starts.push((k, hh));
            }
            hh = self.table.hasher.step(hh, s);
        }
        for (idx, &(k, hk)) in starts.iter().enumerate().rev() {
            let chunk = &syms[k..(k + JUMP_MAX).min(syms.len())];
            if idx == 0 {
                return Ok(Ent::jump(top_sym, top_pcolor, chunk, child, max));
            }
            let e = Ent::jump(syms[k - 1], 0, chunk, child, max).with_by_color(true);
            child = self.create(w, hk, e)?.color;
        }
        unreachable!("the chain has a first chunk")
    }

    /// Case 2 of §4.5: the search reached leaf `leaf` (at depth `i`) of another key `e`.
    /// `j` is the first symbol position where `key` and the leaf's key differ.
    #[allow(clippy::too_many_arguments)]
    fn insert_split_leaf(
        &self,
        w: &mut Scratch,
        key: &[u8],
        leaf: &PathNode,
        j: usize,
        cand: Cand,
        rec: *mut u8,
        path: &[PathNode],
    ) -> Result<usize, Full> {
        let i = leaf.depth;
        let old = leaf.ent;
        // SAFETY: a leaf of this trie; its record stays alive (it moves to the new leaf).
        let other = unsafe { self.key_of(old) };
        debug_assert_eq!(j, self.first_difference(key, other, i));
        let hasher = &self.table.hasher;
        let mut hj = u64::from(leaf.loc.h);
        let mut chain = core::mem::take(&mut w.chain);
        chain.clear();
        for p in i..j {
            let s = self.syms.at(key, p);
            chain.push(s);
            hj = hasher.step(hj, s);
        }
        let (ck, co) = (self.syms.at(key, j), self.syms.at(other, j));
        let (hk, ho) = (hasher.step(hj, ck), hasher.step(hj, co));
        // The moved leaf's bucket depends on the other key's record: start fetching it now.
        self.table.prefetch(ho);
        let pred = stable(self.resolve(cand));
        let bitmap = (1u64 << ck) | (1u64 << co);
        // The regular node R at depth j: in place of the old leaf when j == i.
        let r_color = if j == i {
            leaf.loc.color
        } else {
            let last = *chain.last().expect("j > i");
            let r = Ent::regular(last, 0, bitmap, Loc::NULL).with_by_color(true);
            self.create(w, hj, r)?.color
        };
        let new_leaf = Ent::leaf(ck, r_color, rec, key.len(), Loc::NULL);
        let moved = Ent::leaf(co, r_color, old.rec(), old.key_len(), Loc::NULL);
        // Insert the greater leaf first so the smaller can point at it.
        let (small, big) = if ck < co {
            ((hk, new_leaf), (ho, moved))
        } else {
            ((ho, moved), (hk, new_leaf))
        };
        let mut big_e = big.1;
        big_e.set_loc(old.loc());
        let big_l = self.create(w, big.0, big_e)?;
        let mut small_e = small.1;
        small_e.set_loc(big_l);
        let small_l = self.create(w, small.0, small_e)?;
        let top = if j == i {
            Ent::regular(old.sym(), old.pcolor(), bitmap, big_l)
        } else {
            self.table.update(
                &mut w.locks,
                Loc {
                    h: hj as u32,
                    color: r_color,
                },
                |e| e.set_loc(big_l),
            );
            self.build_chain(
                w,
                &chain,
                leaf.loc.h.into(),
                old.sym(),
                old.pcolor(),
                r_color,
                big_l,
            )?
        };
        w.chain = chain;
        // Everything new is in place; now link it (these writes cannot fail).
        self.table.replace(&mut w.locks, leaf.loc, top);
        self.link_after(w, pred, small_l);
        self.fix_max(w, path, path.len() - 2, &[(leaf.loc, big_l)]);
        Ok(j + 1)
    }

    /// Case 3 of §4.5: the search left jump node `jn` at its symbol `at`.
    #[allow(clippy::too_many_arguments)]
    fn insert_split_jump(
        &self,
        w: &mut Scratch,
        key: &[u8],
        jn: &PathNode,
        at: usize,
        cand: Cand,
        rec: *mut u8,
        path: &[PathNode],
    ) -> Result<usize, Full> {
        let j = jn.ent;
        let (syms, n) = j.jump_syms();
        let hasher = &self.table.hasher;
        let mut hd = u64::from(jn.loc.h);
        for &s in &syms[..at] {
            hd = hasher.step(hd, s);
        }
        let c = self.syms.at(key, jn.depth + at);
        let sd = syms[at];
        let h_below = hasher.step(hd, sd);
        let h_leaf = hasher.step(hd, c);
        let pred = stable(self.resolve(cand));
        let bitmap = (1u64 << c) | (1u64 << sd);
        let r_color = if at == 0 {
            jn.loc.color
        } else {
            let r = Ent::regular(syms[at - 1], 0, bitmap, Loc::NULL).with_by_color(true);
            self.create(w, hd, r)?.color
        };
        let child_color = j.jump_child();
        if at + 1 < n {
            let e = Ent::jump(sd, r_color, &syms[at + 1..n], child_color, j.loc());
            self.create(w, h_below, e)?;
        }
        let leaf = Ent::leaf(c, r_color, rec, key.len(), self.next_of(pred));
        let l = self.create(w, h_leaf, leaf)?;
        // Linking.
        if at + 1 == n {
            // The jump's child now hangs under R: it must carry R's color.
            let cl = Loc {
                h: h_below as u32,
                color: child_color,
            };
            self.table
                .update(&mut w.locks, cl, |e| *e = e.with_by_color(false));
            self.table
                .update(&mut w.locks, cl, |e| e.set_pcolor(r_color));
        }
        let r_max = if c > sd { l } else { j.loc() };
        if at == 0 {
            self.table.replace(
                &mut w.locks,
                jn.loc,
                Ent::regular(j.sym(), j.pcolor(), bitmap, r_max),
            );
        } else {
            self.table.update(
                &mut w.locks,
                Loc {
                    h: hd as u32,
                    color: r_color,
                },
                |e| e.set_loc(r_max),
            );
            let top = Ent::jump(j.sym(), j.pcolor(), &syms[..at], r_color, r_max);
            self.table.replace(&mut w.locks, jn.loc, top);
        }
        self.link_after(w, pred, l);
        if c > sd {
            self.fix_max(w, path, path.len() - 2, &[(j.loc(), l)]);
        }
        Ok(jn.depth + at + 1)
    }

    /// Removes `key`; returns its record. In a shared table the buckets written stay locked
    /// until the caller's `unlock_all`.
    pub(crate) fn remove(&self, w: &mut Scratch, key: &[u8]) -> Option<*mut u8> {
        let mut path = core::mem::take(&mut w.path);
        path.clear();
        let (end, _) = stable(self.descend::<true>(key, Some(&mut path)));
        let found = match end {
            // SAFETY: a leaf of this trie, record alive until we return it.
            End::Leaf { ent, .. } if unsafe { self.key_of(ent) } == key => Some(ent.rec()),
            _ => None,
        };
        if found.is_some() {
            self.remove_leaf(w, &path);
            self.len.fetch_sub(1, Relaxed);
        }
        w.path = path;
        w.settle();
        self.refresh_root();
        found
    }

    /// Whether the table is so empty that a smaller one ([`shrunk`](Self::shrunk)) should
    /// replace it: under a quarter of the load limit, and larger than the first table.
    pub(crate) fn wants_shrink(&self) -> bool {
        self.table.buckets() > self.params.initial_buckets.max(64)
            && (self.table.used() as f64)
                < self.table.capacity() as f64 * self.params.max_load_factor / 4.0
    }

    /// Unlinks the leaf at the end of `path` (§4.5, deletion).
    fn remove_leaf(&self, w: &mut Scratch, path: &[PathNode]) {
        let leaf = path[path.len() - 1];
        let n_idx = path.len() - 2;
        let n = path[n_idx];
        let pred = stable(self.resolve(leaf.cand_before));
        let nxt = leaf.ent.loc();
        self.link_after(w, pred, nxt);
        self.table.remove(&mut w.locks, leaf.loc);
        let c = leaf.ent.sym();
        let bm = n.ent.bitmap() & !(1u64 << c);
        self.table.update(&mut w.locks, n.loc, |e| e.set_bitmap(bm));
        let pred_loc = pred.map_or(Loc::NULL, |(l, _)| l);
        if n_idx == 0 || bm.count_ones() != 1 {
            self.fix_max(w, path, n_idx, &[(leaf.loc, pred_loc)]);
            return;
        }
        // `n` has one child left.
        let r = bm.trailing_zeros();
        let hx = self.table.hasher.step(n.loc.h.into(), r);
        let Some((_, x)) = self.table.find_by_parent(hx, r, n.ent.color()) else {
            broken("a child bit without its child")
        };
        let x_old = Loc {
            h: hx as u32,
            color: x.color(),
        };
        if x.kind() == LEAF {
            // A tail: the remaining leaf moves up to the top of the single-child run.
            let mut t = n_idx;
            while path[t - 1].ent.kind() == JUMP {
                t -= 1;
            }
            let top = path[t];
            let x_new = top.loc;
            let moved = Ent::leaf(
                top.ent.sym(),
                top.ent.pcolor(),
                x.rec(),
                x.key_len(),
                x.loc(),
            );
            self.table.remove(&mut w.locks, x_old);
            for p in &path[t + 1..=n_idx] {
                self.table.remove(&mut w.locks, p.loc);
            }
            self.table.replace(&mut w.locks, top.loc, moved);
            if r > c {
                // x followed the removed key: its predecessor is `pred`.
                self.link_after(w, pred, x_new);
            } else {
                // x preceded it (pred == x): relink x's own predecessor.
                let before = stable(self.resolve(top.cand_before));
                self.link_after(w, before, x_new);
            }
            let pred_new = if pred_loc == x_old { x_new } else { pred_loc };
            self.fix_max(w, path, t - 1, &[(leaf.loc, pred_new), (x_old, x_new)]);
            return;
        }
        // `n` becomes a jump node over symbol r (absorbing x when x is a short jump).
        let mut syms = vec![r];
        let mut child = x.color();
        if x.kind() == JUMP && x.jump_len() < JUMP_MAX {
            let (xs, xn) = x.jump_syms();
            syms.extend_from_slice(&xs[..xn]);
            child = x.jump_child();
            self.table.remove(&mut w.locks, x_old);
        } else {
            // x now hangs under a jump node: found by color only.
            self.table
                .update(&mut w.locks, x_old, |e| *e = e.with_by_color(true));
        }
        let cur_max = self.table.get(n.loc).loc();
        let mut walk_from = n_idx;
        let parent = path[n_idx - 1];
        if parent.ent.kind() == JUMP && parent.ent.jump_len() + syms.len() <= JUMP_MAX {
            let (ps, pn) = parent.ent.jump_syms();
            let mut all = ps[..pn].to_vec();
            all.extend_from_slice(&syms);
            let merged = Ent::jump(parent.ent.sym(), parent.ent.pcolor(), &all, child, cur_max);
            self.table.remove(&mut w.locks, n.loc);
            self.table.replace(&mut w.locks, parent.loc, merged);
            walk_from = n_idx - 1;
        } else {
            let e = Ent::jump(n.ent.sym(), n.ent.pcolor(), &syms, child, cur_max);
            self.table.replace(&mut w.locks, n.loc, e);
        }
        self.fix_max(w, path, walk_from, &[(leaf.loc, pred_loc)]);
    }

    /// A copy of this trie in a table of twice the buckets (readers may keep using `self`
    /// meanwhile: it only reads).
    #[cold]
    pub(crate) fn grown(&self) -> Result<RawTrie, Error> {
        self.resized(self.table.buckets() * 2)
    }

    /// A copy of this trie in a table sized for its entries at half the load limit.
    #[cold]
    pub(crate) fn shrunk(&self) -> Result<RawTrie, Error> {
        let entries = self.table.used();
        let want = (entries as f64 / (self.params.max_load_factor / 2.0) / 4.0).ceil() as usize;
        self.resized(want.max(self.params.initial_buckets))
    }

    fn resized(&self, mut buckets: usize) -> Result<RawTrie, Error> {
        let mut seed = self.seed;
        for attempt in 0u64.. {
            seed = seed.wrapping_add(0x9E37_79B9 + attempt);
            let mut table = Table::with_buckets(buckets, seed, self.params.huge_pages)?;
            match self.rebuild_into(&table) {
                Ok((root, head)) => {
                    table.set_shared(self.table.is_shared());
                    return Ok(Self::assemble(
                        table,
                        self.params,
                        seed,
                        root,
                        head,
                        self.len(),
                        (self.depth_avg.load(Relaxed), self.horizon.load(Relaxed)),
                    ));
                }
                Err(Full) => buckets = buckets + buckets / 2 + 1,
            }
        }
        unreachable!()
    }

    /// Copies the trie into `new` (preorder, so parents' colors are known before their
    /// children's entries are written), patching leaf links and maxima as subtrees close.
    fn rebuild_into(&self, new: &Table) -> Result<(Loc, Loc), Full> {
        /// A node with children left to copy; `oha`/`nha` are `mul_a` of its hash in the old
        /// and new table (a child's hash is then one addition away).
        struct Frame {
            oha: u64,
            oc: u8,
            nha: u64,
            nc: u8,
            rem: u64,
            pstart: usize,
        }
        let old = &self.table;
        // `new` is not shared yet: nothing is ever locked.
        let lk = &mut Locks::default();
        let oroot = old.get(self.root);
        let root_ent = Ent::regular(0, 0, oroot.bitmap(), Loc::NULL).with_by_color(true);
        let root = new.insert(lk, 0, root_ent)?;
        let mut pending = vec![root];
        let mut stack = vec![Frame {
            oha: 0,
            oc: self.root.color,
            nha: 0,
            nc: root.color,
            rem: oroot.bitmap(),
            pstart: 0,
        }];
        let mut prev = Loc::NULL;
        let mut head = Loc::NULL;
        let mut chain: Vec<(Ent, u64, u32)> = Vec::new();
        let warm = |new: &Table, oha: u64, nha: u64, mut rem: u64| {
            for _ in 0..REBUILD_WINDOW {
                if rem == 0 {
                    break;
                }
                let c = rem.trailing_zeros();
                old.prefetch(old.hasher.child(oha, c));
                new.prefetch(new.hasher.child(nha, c));
                rem &= rem - 1;
            }
        };
        warm(new, 0, 0, oroot.bitmap());
        while let Some(f) = stack.last_mut() {
            if f.rem == 0 {
                let start = f.pstart;
                stack.pop();
                for l in pending.drain(start..) {
                    new.update(lk, l, |e| e.set_loc(prev));
                }
                continue;
            }
            let c = f.rem.trailing_zeros();
            f.rem &= f.rem - 1;
            // Children's hashes in both tables follow from the bitmap: keep the buckets of the
            // child REBUILD_WINDOW places ahead in flight (the walk is otherwise a chain of
            // dependent misses).
            let mut ahead = f.rem;
            for _ in 1..REBUILD_WINDOW {
                ahead &= ahead.wrapping_sub(1);
            }
            if ahead != 0 {
                let a = ahead.trailing_zeros();
                old.prefetch(old.hasher.child(f.oha, a));
                new.prefetch(new.hasher.child(f.nha, a));
            }
            let (oh, nh, oc, nc) = (
                old.hasher.child(f.oha, c),
                new.hasher.child(f.nha, c),
                f.oc,
                f.nc,
            );
            let Some((_, ce)) = old.find_by_parent(oh, c, oc) else {
                broken("a child bit without its child")
            };
            match ce.kind() {
                LEAF => {
                    let l =
                        new.insert(lk, nh, Ent::leaf(c, nc, ce.rec(), ce.key_len(), Loc::NULL))?;
                    if prev.is_null() {
                        head = l;
                    } else {
                        new.update(lk, prev, |e| e.set_loc(l));
                    }
                    prev = l;
                }
                REGULAR => {
                    let l = new.insert(lk, nh, Ent::regular(c, nc, ce.bitmap(), Loc::NULL))?;
                    let (oha, nha) = (old.hasher.mul_a(oh), new.hasher.mul_a(nh));
                    warm(new, oha, nha, ce.bitmap());
                    let pstart = pending.len();
                    pending.push(l);
                    stack.push(Frame {
                        oha,
                        oc: ce.color(),
                        nha,
                        nc: l.color,
                        rem: ce.bitmap(),
                        pstart,
                    });
                }
                _ => {
                    chain.clear();
                    let (mut e, mut ohh, mut nhh, mut last) = (ce, oh, nh, c);
                    let r = loop {
                        chain.push((e, nhh, last));
                        let (s, k) = e.jump_syms();
                        for &x in &s[..k] {
                            ohh = old.hasher.step(ohh, x);
                            nhh = new.hasher.step(nhh, x);
                            last = x;
                        }
                        let ch = old.get(Loc {
                            h: ohh as u32,
                            color: e.jump_child(),
                        });
                        if ch.kind() == JUMP {
                            e = ch;
                        } else {
                            debug_assert_eq!(ch.kind(), REGULAR);
                            break ch;
                        }
                    };
                    let r_ent = Ent::regular(last, 0, r.bitmap(), Loc::NULL).with_by_color(true);
                    let rl = new.insert(lk, nhh, r_ent)?;
                    let (oha, nha) = (old.hasher.mul_a(ohh), new.hasher.mul_a(nhh));
                    warm(new, oha, nha, r.bitmap());
                    let pstart = pending.len();
                    pending.push(rl);
                    let mut child = rl.color;
                    for (k, &(je, jh, js)) in chain.iter().enumerate().rev() {
                        let (s, n) = je.jump_syms();
                        let pc = if k == 0 { nc } else { 0 };
                        let je = Ent::jump(js, pc, &s[..n], child, Loc::NULL).with_by_color(k != 0);
                        let jl = new.insert(lk, jh, je)?;
                        child = jl.color;
                        pending.push(jl);
                    }
                    stack.push(Frame {
                        oha,
                        oc: r.color(),
                        nha,
                        nc: rl.color,
                        rem: r.bitmap(),
                        pstart,
                    });
                }
            }
        }
        Ok((root, head))
    }

    /// Every record, in key order (for the front end's drop and clear).
    pub(crate) fn for_each_leaf(&self, mut f: impl FnMut(Ent)) {
        let mut cur = stable(self.first());
        while let Some((_, e)) = cur {
            f(e);
            cur = stable(self.next(e));
        }
    }

    /// Checks every invariant of the module docs and of the table; slow.
    pub(crate) fn audit(&self) -> Result<(), String> {
        let t = &self.table;
        let root = t.get(self.root);
        if root.kind() != REGULAR {
            return Err("root is not a regular node".into());
        }
        // DFS in key order, checking structure, names, maxima and the leaf list.
        struct Frame {
            loc: Loc,
            ent: Ent,
            name: Vec<u32>,
            rem: u64,
            first_leaf_idx: usize,
        }
        let mut leaves: Vec<Loc> = Vec::new();
        let mut nodes = 1usize;
        let mut stack = vec![Frame {
            loc: self.root,
            ent: root,
            name: Vec::new(),
            rem: root.bitmap(),
            first_leaf_idx: 0,
        }];
        let mut last_key: Option<&[u8]> = None;
        while let Some(f) = stack.last_mut() {
            if f.rem == 0 {
                let f = stack.pop().expect("non-empty");
                let want = if leaves.len() > f.first_leaf_idx {
                    *leaves.last().expect("non-empty")
                } else {
                    Loc::NULL
                };
                if f.ent.loc() != want {
                    return Err(format!(
                        "node {:?} (name {:?}) has max {:?}, its last leaf is {want:?}",
                        f.loc,
                        f.name,
                        f.ent.loc()
                    ));
                }
                continue;
            }
            let c = f.rem.trailing_zeros();
            f.rem &= f.rem - 1;
            let mut name = f.name.clone();
            name.push(c);
            let h = t.hasher.step(f.loc.h.into(), c);
            let Some((_, mut e)) = t.find_by_parent(h, c, f.ent.color()) else {
                return Err(format!("child {c} of {:?} missing", f.loc));
            };
            let mut loc = Loc {
                h: h as u32,
                color: e.color(),
            };
            if e.by_color() {
                return Err(format!(
                    "child {loc:?} of a regular node is marked by-color"
                ));
            }
            nodes += 1;
            // Follow jump chains.
            let first_leaf_idx = leaves.len();
            let mut chain_heads = Vec::new();
            while e.kind() == JUMP {
                if !(1..=JUMP_MAX).contains(&e.jump_len()) {
                    return Err(format!("jump {loc:?} has length {}", e.jump_len()));
                }
                chain_heads.push((loc, e));
                let mut hh = u64::from(loc.h);
                for k in 0..e.jump_len() {
                    let s = e.jump_sym(k);
                    if s == 0 {
                        return Err(format!("jump {loc:?} holds the end symbol"));
                    }
                    name.push(s);
                    hh = t.hasher.step(hh, s);
                }
                loc = Loc {
                    h: hh as u32,
                    color: e.jump_child(),
                };
                let Some((_, ce)) = t.find_loc(loc) else {
                    return Err(format!("jump child {loc:?} missing"));
                };
                if ce.kind() == LEAF {
                    return Err(format!("jump above leaf {loc:?}"));
                }
                if !ce.by_color() {
                    return Err(format!("jump child {loc:?} lacks the by-color bit"));
                }
                e = ce;
                nodes += 1;
            }
            match e.kind() {
                LEAF => {
                    // SAFETY: a leaf of this trie under `&self`.
                    let key = unsafe { self.key_of(e) };
                    for (k, &s) in name.iter().enumerate() {
                        if self.syms.at(key, k) != s {
                            return Err(format!(
                                "leaf {loc:?} key {} does not match its name at symbol {k} of {}",
                                crate::key::Escaped(key),
                                name.len()
                            ));
                        }
                    }
                    if name.len() > self.syms.count(key.len()) {
                        return Err(format!("leaf {loc:?} deeper than its key"));
                    }
                    if let Some(prev) = last_key
                        && prev >= key
                    {
                        return Err(format!("leaves out of order at {loc:?}"));
                    }
                    last_key = Some(key);
                    leaves.push(loc);
                }
                REGULAR => {
                    if e.bitmap().count_ones() < 2 {
                        return Err(format!("regular node {loc:?} has < 2 children"));
                    }
                    // Chain heads check their max against the regular node's when it closes:
                    // check them now through the regular node's own max (same subtree).
                    for (jl, je) in &chain_heads {
                        if je.loc() != e.loc() {
                            return Err(format!("jump {jl:?} max differs from its child's"));
                        }
                    }
                    stack.push(Frame {
                        loc,
                        ent: e,
                        name,
                        rem: e.bitmap(),
                        first_leaf_idx,
                    });
                }
                k => return Err(format!("entry {loc:?} of kind {k}")),
            }
        }
        if leaves.len() != self.len() {
            return Err(format!("{} leaves, len {}", leaves.len(), self.len()));
        }
        // The leaf list.
        let mut cur = unpack(self.head.load(Relaxed));
        for (k, &l) in leaves.iter().enumerate() {
            if cur != l {
                return Err(format!("leaf list position {k}: {cur:?}, expected {l:?}"));
            }
            cur = t.get(l).loc();
        }
        if !cur.is_null() {
            return Err("leaf list runs past the last leaf".into());
        }
        if t.used() != nodes {
            return Err(format!(
                "table holds {} entries, trie {nodes} nodes",
                t.used()
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for (h, e) in t.entries() {
            if !seen.insert((h, e.color())) {
                return Err(format!("color {} used twice under hash {h}", e.color()));
            }
        }
        if seen.len() != t.used() {
            return Err("used count differs from the table's content".into());
        }
        Ok(())
    }
}

#[cold]
#[inline(never)]
fn broken(what: &str) -> ! {
    panic!("cuckoo trie invariant broken: {what}")
}
