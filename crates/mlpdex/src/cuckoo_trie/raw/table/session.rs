//! Sessions on shared tables (§5): bucket copies taken under their seqlock with their versions
//! logged for validation (by readers and writers alike), writers' private copies of the
//! buckets they change, and the copies of a frozen table.
//!
//! The log is per thread, so the table's read and write methods need no extra argument: they
//! ask [`mode`] what the calling thread is doing. Outside a session (single-threaded maps)
//! nothing is recorded and writes go to the table directly.

use core::cell::{Cell, RefCell};

use super::super::seqlock::{self, Own, Reads, Refused, WORDS, Word};
use super::entry::ENTRY_MASK;
use super::{ENTRY_BYTES, Ent, Table};

/// What this thread is doing with a shared table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    /// No session: the table is not shared, or this is the thread building it.
    Off,
    /// A [`ReadSession`]: copies are logged for validation.
    Read,
    /// A [`WriteSession`]: as `Read`, and a bucket is copied privately when first changed;
    /// changes, and later reads of it, use that copy until the commit.
    Write,
    /// A [`FrozenRead`]: copies of a frozen table, which cannot change, are not logged.
    Frozen,
}

// The thread's session state, in thread-locals of its own so that the ones every read touches
// (mode, read log, count of private copies) have no destructor: access to such a thread-local
// is one address computation, where one with a destructor checks its registration first
// (measured: a shared `RefCell` state cost about 50 instructions per bucket read).
thread_local! {
    static MODE: Cell<Mode> = const { Cell::new(Mode::Off) };
    /// `(bucket, version)` of every copy a read or write session took (but not of a write
    /// session's private copies, which `WRITES` keeps with their versions).
    static READS: ReadLog = const { ReadLog::new() };
    /// Logged reads past the first [`READ_LOG`] (long scans, long keys).
    static SPILL: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
    /// A write session's private copies, at most one per bucket: a bucket is copied when the
    /// session first changes it, and read and changed in the copy from then on.
    static WRITES: RefCell<Writes> = const { RefCell::new(Writes::new()) };
    /// How many private copies `WRITES` holds: reads look there only when there are some.
    static OWNED: Cell<usize> = const { Cell::new(0) };
    /// Change in the table's entry count the write session will commit.
    static USED: Cell<isize> = const { Cell::new(0) };
}

/// Reads logged in place before they spill.
const READ_LOG: usize = 128;

/// A session's read log: `bucket << 32 | version` per read, the first [`READ_LOG`] in a
/// fixed array, the rest in `SPILL`. (Buckets number fewer than 2³², since hashes are
/// 32-bit.)
struct ReadLog {
    len: Cell<usize>,
    at: [Cell<u64>; READ_LOG],
}

impl ReadLog {
    const fn new() -> ReadLog {
        ReadLog {
            len: Cell::new(0),
            at: [const { Cell::new(0) }; READ_LOG],
        }
    }

    /// Logs a read of bucket `b` at version `v`, unless it repeats the last one.
    #[inline(always)]
    fn push(&self, b: usize, v: u32) {
        debug_assert!(b <= u32::MAX as usize);
        let e = (b as u64) << 32 | u64::from(v);
        let n = self.len.get();
        if n < READ_LOG {
            if n > 0 && self.at[n - 1].get() == e {
                return;
            }
            self.at[n].set(e);
        } else {
            SPILL.with_borrow_mut(|s| s.push(e));
        }
        self.len.set(n + 1);
    }

    fn clear(&self) {
        if self.len.replace(0) > READ_LOG {
            SPILL.with_borrow_mut(|s| {
                s.clear();
                s.shrink_to(4 * READ_LOG);
            });
        }
    }
}

impl Reads for ReadLog {
    fn all(&self, mut f: impl FnMut(usize, u32) -> bool) -> bool {
        let n = self.len.get();
        let mut g = |e: u64| f((e >> 32) as usize, e as u32);
        self.at[..n.min(READ_LOG)].iter().all(|c| g(c.get()))
            && (n <= READ_LOG || SPILL.with_borrow(|s| s.iter().all(|&e| g(e))))
    }
}

/// A write session's private bucket copies, found by bucket: by a scan while there are few (the
/// common case: an insert changes a few buckets), through an open-addressing index of
/// positions once there are more (a long key's jump chain writes one bucket per 9 symbols).
struct Writes {
    owned: Vec<Own>,
    /// `owned[i].bucket` at `i`, for fast scans.
    ids: Vec<usize>,
    /// The commit's working memory.
    order: Vec<u32>,
    /// Slots of `owned` positions plus one (0: empty), a power of two at least twice
    /// `owned.len()`, or empty while `owned` is short.
    index: Vec<u32>,
}

/// Copies scanned before the index is built.
const SCAN: usize = 24;

impl Writes {
    const fn new() -> Writes {
        Writes {
            owned: Vec::new(),
            ids: Vec::new(),
            order: Vec::new(),
            index: Vec::new(),
        }
    }

    fn clear(&mut self) {
        self.owned.clear();
        self.ids.clear();
        self.index.clear();
        // A long key's write set can be large: give it back unless it is small.
        if self.owned.capacity() > 4 * SCAN {
            self.owned.shrink_to(SCAN);
            self.ids.shrink_to(SCAN);
            self.order.shrink_to(SCAN);
            self.index.shrink_to(0);
        }
    }

    #[inline(always)]
    fn home(bucket: usize, slots: usize) -> usize {
        (bucket.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20) & (slots - 1)
    }

    fn find(&self, bucket: usize) -> Option<usize> {
        if self.index.is_empty() {
            // Recent copies are the likeliest to be read again.
            return self.ids.iter().rposition(|&b| b == bucket);
        }
        let mask = self.index.len() - 1;
        let mut i = Self::home(bucket, self.index.len());
        loop {
            match self.index[i] {
                0 => return None,
                p if self.ids[p as usize - 1] == bucket => return Some(p as usize - 1),
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Copies bucket `b` of `t` into a new entry; returns its position.
    #[inline]
    fn copy(&mut self, t: &Table, b: usize) -> usize {
        let at = self.owned.len();
        self.owned.push(Own {
            bucket: b,
            last: 0,
            words: [0; WORDS],
        });
        self.ids.push(b);
        let own = &mut self.owned[at];
        copy_into(t, b, &mut own.words);
        own.last = own.words[WORDS - 1];
        if self.owned.len() > SCAN {
            if self.index.len() < 2 * self.owned.len() {
                self.reindex();
            } else {
                self.place(at);
            }
        }
        at
    }

    fn place(&mut self, at: usize) {
        let mask = self.index.len() - 1;
        let mut i = Self::home(self.ids[at], self.index.len());
        while self.index[i] != 0 {
            i = (i + 1) & mask;
        }
        self.index[i] = at as u32 + 1;
    }

    #[cold]
    fn reindex(&mut self) {
        let slots = (4 * self.owned.len()).next_power_of_two();
        self.index.clear();
        self.index.resize(slots, 0);
        for at in 0..self.owned.len() {
            self.place(at);
        }
    }
}

/// What the calling thread is doing with shared tables.
#[inline(always)]
pub(super) fn mode() -> Mode {
    MODE.get()
}

/// Starts a session of `mode` on this thread, clearing what an earlier one left.
fn begin(mode: Mode) {
    debug_assert_eq!(MODE.get(), Mode::Off, "nested sessions");
    MODE.set(mode);
    forget();
}

fn end() {
    MODE.set(Mode::Off);
}

/// Clears the session's reads, copies and count.
fn forget() {
    READS.with(ReadLog::clear);
    if OWNED.replace(0) > 0 {
        WRITES.with_borrow_mut(Writes::clear);
    }
    USED.set(0);
}

/// True when no bucket copied since the session began (or since the last validation) has
/// changed: the copies form one committed state of `t`.
fn reads_hold(t: &Table) -> bool {
    <core::sync::atomic::AtomicU64 as Word>::fence_acquire();
    READS.with(|r| r.all(|b, v| t.bucket(b).validate(v)))
        && (OWNED.get() == 0
            || WRITES.with_borrow(|w| {
                w.owned
                    .iter()
                    .all(|o| t.bucket(o.bucket).validate((o.last >> 32) as u32))
            }))
}

/// One optimistic read of a shared table (§5): while it lives, the table's read methods copy
/// buckets under their seqlock and record their versions; [`validate`](Self::validate) tells
/// whether all of them still hold.
pub(crate) struct ReadSession(());

impl ReadSession {
    /// Starts recording on this thread.
    pub(crate) fn begin() -> ReadSession {
        begin(Mode::Read);
        ReadSession(())
    }

    /// True when no bucket read since [`begin`](Self::begin) (or the last `validate`) has
    /// changed: the reads form one committed state of `t`. Clears the record.
    pub(crate) fn validate(&self, t: &Table) -> bool {
        let ok = reads_hold(t);
        READS.with(ReadLog::clear);
        ok
    }
}

impl Drop for ReadSession {
    fn drop(&mut self) {
        end();
    }
}

/// One optimistic write to a shared table (§5, "Updates"): it reads like a [`ReadSession`],
/// copies a bucket privately when it first changes it (reading that copy from then on), and
/// [`commit`](Self::commit) installs the copies all at once, if every read still holds, or
/// refuses (`seqlock::commit`). Dropping the session without a commit discards the changes:
/// the table never saw them.
pub(crate) struct WriteSession(());

impl WriteSession {
    pub(crate) fn begin() -> WriteSession {
        begin(Mode::Write);
        WriteSession(())
    }

    /// True when the session's reads still hold (before acting on what they showed, such as
    /// growing the table because it looked full).
    pub(crate) fn reads_hold(&self, t: &Table) -> bool {
        reads_hold(t)
    }

    /// Installs the session's changes to `t` (and runs `publish` while their buckets are
    /// locked), or stores nothing and says why. Either way the session starts afresh: a
    /// refused operation runs again in the same session.
    pub(crate) fn commit(&self, t: &Table, publish: impl FnOnce()) -> Result<(), Refused> {
        let used = USED.get();
        let r = WRITES.with_borrow_mut(|w| {
            let Writes { owned, order, .. } = w;
            READS.with(|reads| {
                seqlock::commit(
                    |b| t.bucket(b),
                    &t.frozen,
                    owned,
                    reads,
                    order,
                    || {
                        t.add_used(used);
                        publish();
                    },
                )
            })
        });
        forget();
        r
    }

    /// Drops the session's changes and reads, to run the operation again.
    pub(crate) fn discard(&self) {
        forget();
    }
}

impl Drop for WriteSession {
    fn drop(&mut self) {
        self.discard();
        end();
    }
}

/// Reads of a frozen table (by the resize that copies it, or an audit): plain atomic copies,
/// neither validated nor logged, since the contents cannot change (a writer that saw the
/// freeze too late only locks and restores a bucket's last word).
pub(crate) struct FrozenRead(());

impl FrozenRead {
    pub(crate) fn begin() -> FrozenRead {
        begin(Mode::Frozen);
        FrozenRead(())
    }
}

impl Drop for FrozenRead {
    fn drop(&mut self) {
        end();
    }
}

/// Runs `f` on a consistent copy of bucket `b`, waiting out a writer that holds it: in a
/// write session that changed `b`, its private copy; else a fresh copy, logged in a read or
/// write session.
#[inline(always)]
pub(super) fn with_copy<R>(t: &Table, b: usize, f: impl FnOnce(&[u64; WORDS]) -> R) -> R {
    match mode() {
        Mode::Write => with_session_copy(t, b, f),
        mode => f(&logged_copy(t, b, mode)),
    }
}

/// A consistent copy of bucket `b` for a read session (`mode` [`Mode::Read`]: its version
/// logged, waiting out a writer that holds it) or for a reader of a frozen table.
#[inline(always)]
pub(super) fn logged_copy(t: &Table, b: usize, mode: Mode) -> [u64; WORDS] {
    let mut words = [0u64; WORDS];
    if mode == Mode::Frozen {
        // Nothing changes a frozen table's data (a writer that saw the freeze too late only
        // locks and restores a last word): plain atomic loads, no version to check.
        t.bucket(b).copy_frozen(&mut words);
        return words;
    }
    copy_into(t, b, &mut words);
    READS.with(|r| r.push(b, (words[WORDS - 1] >> 32) as u32));
    words
}

/// [`with_copy`] in a write session.
#[inline]
pub(super) fn with_session_copy<R>(t: &Table, b: usize, f: impl FnOnce(&[u64; WORDS]) -> R) -> R {
    if OWNED.get() > 0 {
        let words = WRITES.with_borrow(|w| w.find(b).map(|i| w.owned[i].words));
        if let Some(words) = words {
            return f(&words);
        }
    }
    f(&logged_copy(t, b, Mode::Read))
}

/// Copies bucket `b` into `out`, waiting out a writer that holds it.
#[inline]
fn copy_into(t: &Table, b: usize, out: &mut [u64; WORDS]) {
    let bucket = t.bucket(b);
    let mut spins = 0u32;
    while !bucket.try_copy_into(out) {
        wait_for_holder(spins);
        spins += 1;
    }
}

/// One step of waiting for a writer that holds a bucket: spins at first, then yields, since
/// the writer may be descheduled (more threads than cores) and need this core.
#[inline]
pub(super) fn wait_for_holder(spins: u32) {
    if spins < 64 {
        core::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// Runs `f` on this write session's private copy of bucket `b`, taking the copy first if
/// there is none yet.
///
/// # Panics
/// Outside a write session: a shared table is written only through one.
#[inline]
pub(super) fn own(t: &Table, b: usize, f: impl FnOnce(&mut [u64; WORDS])) {
    assert_eq!(
        MODE.get(),
        Mode::Write,
        "a shared table written outside a write session"
    );
    WRITES.with_borrow_mut(|w| {
        let i = match w.find(b) {
            Some(i) => i,
            None => w.copy(t, b),
        };
        OWNED.set(w.owned.len());
        f(&mut w.owned[i].words);
    })
}

/// Adds `delta` to the entry count a write session commits.
#[inline]
pub(super) fn count(delta: isize) {
    USED.set(USED.get() + delta);
}

/// Entry `idx` of a bucket whose words `word` reads. Slot `idx` starts at byte `15·idx`:
/// words 0–1 for slot 0, three words for the others; the version bits fall outside the mask.
#[inline(always)]
pub(super) fn decode(idx: usize, word: impl Fn(usize) -> u64) -> Ent {
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

/// Writes entry `e` into slot `idx` of a bucket's words through `store(word, value, mask)`.
#[inline(always)]
pub(super) fn encode(idx: usize, e: Ent, store: impl FnMut(usize, u64, u64)) {
    encode_masked(idx, e.0, ENTRY_MASK, store);
}

/// Writes the bits of `bits` under `mask` (within an entry's 120) into slot `idx`, as
/// [`encode`] does.
#[inline(always)]
pub(super) fn encode_masked(
    idx: usize,
    bits: u128,
    mask: u128,
    mut store: impl FnMut(usize, u64, u64),
) {
    debug_assert_eq!(mask & !ENTRY_MASK, 0);
    let off = idx * ENTRY_BYTES;
    let (w0, sh) = (off / 8, (off % 8) * 8);
    let bits = bits & mask;
    let (v, m) = (bits << sh, mask << sh);
    store(w0, v as u64, m as u64);
    store(w0 + 1, (v >> 64) as u64, (m >> 64) as u64);
    if sh != 0 {
        let (v2, m2) = (bits >> (128 - sh), mask >> (128 - sh));
        store(w0 + 2, v2 as u64, m2 as u64);
    }
}

/// First byte (kind, side, tag) of entry `idx`.
#[inline(always)]
pub(super) fn first_byte(idx: usize, word: impl Fn(usize) -> u64) -> u8 {
    let off = idx * ENTRY_BYTES;
    (word(off / 8) >> ((off % 8) * 8)) as u8
}
