//! The bucket seqlock of cuckoo-trie.txt §5: one 64-byte bucket as eight 64-bit words whose
//! last word's high half is a version, and the commit of a writer's changes to many buckets.
//!
//! # Protocol
//!
//! * **Writers** run optimistically: they read like readers (copies taken under the seqlock,
//!   their versions logged; `table::session`), and copy a bucket privately when they first
//!   change it, reading it from that copy from then on. To commit ([`commit`]), a writer locks
//!   its written buckets in increasing bucket order, each with one compare-and-swap from the
//!   exact last word it copied to the same word with the version made odd
//!   ([`Bucket::try_lock`]), so a lock succeeds only if nobody wrote the bucket since the copy.
//!   Then, with sequentially consistent loads, it checks that every bucket it read still has
//!   the version it read (for a bucket it holds: that its copy was taken at that version) and
//!   that the table is not frozen; then it stores its copies, makes every version even again
//!   ([`Bucket::unlock`]) and is done. If a lock or a check fails it puts back the last words
//!   it locked ([`Bucket::restore`]: nothing was written) and starts its operation over.
//!
//!   *No deadlock:* a writer never waits while it holds a lock: a failed compare-and-swap
//!   releases everything. Locking in bucket order makes the writer that reaches a common
//!   bucket first the one that goes on, so two writers do not keep failing each other.
//!
//!   *Serializable:* at the instant of its first check a committing writer holds every bucket it
//!   writes, at the version it copied, and every bucket it read is unchanged since it read it
//!   (one it read and later copied, it copied at the version read). Two writers whose reads
//!   and writes cross cannot both pass: each locks, with a sequentially consistent
//!   compare-and-swap, before it checks, with sequentially consistent loads, and in the one
//!   order of all such operations the later checker's loads see the earlier one's locks. So
//!   the writer's reads and writes all happened at that instant. (On x86 these loads are
//!   plain loads: the locked compare-and-swap already orders them, and no fence instruction
//!   is needed; a fence cost 120 ns per operation of YCSB-A.)
//! * **Readers** never write. They copy a bucket between two reads of its version
//!   ([`Bucket::try_snapshot`]) and keep the `(bucket, version)` pair; at the end of the
//!   operation they re-read every version they kept ([`Bucket::validate`], after one
//!   [`Word::fence_acquire`]). If all match, every copy still held at that instant, and since a
//!   writer holds all the buckets of a commit until all are written, the copies together are
//!   one committed state of the table: the operation linearizes at that instant. Otherwise it
//!   restarts.
//! * **Freezing** (a resize copying the table, or an audit): the freezer sets the table's
//!   frozen word and waits until no bucket is locked (sequentially consistent store and loads,
//!   against the writers' locks and checks as above); a writer that locked first finishes its
//!   commit, one that locks later sees the word and backs out. Readers are not affected.
//!
//! Versions count in steps of `1 << 32` in the last word and wrap after 2³¹ writes to one
//! bucket; a reader or writer would be fooled only if exactly that many writes hit one bucket
//! during one of its operations.
//!
//! Every access is atomic (relaxed for data), so racing readers and writers are not data races.
//! The protocol is generic over [`Word`] so the loom models in this module's tests check this
//! very code.

use core::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};

/// Words per bucket.
pub(crate) const WORDS: usize = 8;
/// The version's unit in the last word.
const ONE: u64 = 1 << 32;

pub(crate) use crate::sync::Word;

/// One bucket: words 0..8, the version in the high half of word 7.
#[repr(C, align(64))]
pub(crate) struct Bucket<W = core::sync::atomic::AtomicU64> {
    pub(crate) w: [W; WORDS],
}

const _: () = assert!(core::mem::size_of::<Bucket>() == 64);
const _: () = assert!(core::mem::align_of::<Bucket>() == 64);

impl<W: Word> Bucket<W> {
    /// Data word `i`, relaxed (for the writer, or for a reader that validates later).
    #[inline(always)]
    pub(crate) fn word(&self, i: usize) -> u64 {
        self.w[i].load(Relaxed)
    }

    /// Stores the bits of `v` under `mask` into word `i` (the writer holds the bucket, or the
    /// table is not shared). The version bits are outside every entry's mask.
    #[inline(always)]
    pub(crate) fn store_masked(&self, i: usize, v: u64, mask: u64) {
        debug_assert!(
            i < WORDS - 1 || mask >> 32 == 0,
            "entry bits overlap the version"
        );
        self.w[i].clear_set(mask, v & mask);
    }

    /// The current version, ordered after this thread's earlier data reads only if a
    /// [`Word::fence_acquire`] came between (see [`validate`](Self::validate)).
    #[inline(always)]
    pub(crate) fn version(&self) -> u32 {
        (self.w[WORDS - 1].load(Relaxed) >> 32) as u32
    }

    /// A copy of the bucket and the even version it was taken at, or `None` when a writer
    /// holds the bucket or changed it during the copy (for the models; the table copies in
    /// place with [`try_copy_into`](Self::try_copy_into)).
    #[cfg(all(test, mlpdex_loom))]
    pub(crate) fn try_snapshot(&self) -> Option<([u64; WORDS], u32)> {
        let mut out = [0u64; WORDS];
        self.try_copy_into(&mut out)
            .then(|| (out, (out[WORDS - 1] >> 32) as u32))
    }

    /// Copies the bucket into `out` (its last word carrying the even version the copy was
    /// taken at); false when a writer holds the bucket or changed it during the copy (`out`
    /// then holds garbage).
    #[inline(always)]
    pub(crate) fn try_copy_into(&self, out: &mut [u64; WORDS]) -> bool {
        let last = self.w[WORDS - 1].load(Acquire);
        if last & ONE != 0 {
            return false;
        }
        for (o, w) in out.iter_mut().zip(&self.w[..WORDS - 1]) {
            *o = w.load(Relaxed);
        }
        out[WORDS - 1] = last;
        W::fence_acquire();
        let again = self.w[WORDS - 1].load(Relaxed);
        again >> 32 == last >> 32
    }

    /// Copies a bucket that no writer changes any more (its table is frozen), ignoring the
    /// version: the data bits, of the last word too, are stable.
    #[inline(always)]
    pub(crate) fn copy_frozen(&self, out: &mut [u64; WORDS]) {
        for (o, w) in out.iter_mut().zip(&self.w) {
            *o = w.load(Relaxed);
        }
        W::fence_acquire();
    }

    /// True when the version is still `v`. Call [`Word::fence_acquire`] once after the last
    /// data read and before a run of validations.
    #[inline(always)]
    pub(crate) fn validate(&self, v: u32) -> bool {
        self.version() == v
    }

    /// Whether a writer holds the bucket.
    #[inline(always)]
    pub(crate) fn is_locked(&self) -> bool {
        self.w[WORDS - 1].load(Relaxed) & ONE != 0
    }

    /// Locks the bucket if its last word is still `last` (so nobody wrote it since a copy
    /// taken with that word): makes the version odd. False, changing nothing, otherwise.
    #[inline(always)]
    pub(crate) fn try_lock(&self, last: u64) -> bool {
        debug_assert_eq!(last & ONE, 0, "a copy is taken at an even version");
        if !self.w[WORDS - 1].cas(last, last.wrapping_add(ONE)) {
            return false;
        }
        // Orders the odd version before the data stores that follow: a reader that sees one
        // of them sees the odd version (or a later one) when it validates.
        W::fence_release();
        true
    }

    /// Undoes [`try_lock`](Self::try_lock) when nothing was written: the bucket gets back
    /// `last`, its version before the lock, so readers that copied it before stay valid.
    #[inline(always)]
    pub(crate) fn restore(&self, last: u64) {
        debug_assert!(self.is_locked());
        self.w[WORDS - 1].store(last, Release);
    }

    /// Stores a changed copy of the bucket (the caller holds its lock); the version stays.
    #[inline(always)]
    pub(crate) fn store_all(&self, words: &[u64; WORDS]) {
        debug_assert!(self.is_locked());
        for (w, &v) in self.w[..WORDS - 1].iter().zip(words) {
            w.store(v, Relaxed);
        }
        self.w[WORDS - 1].clear_set(0xFFFF_FFFF, words[WORDS - 1] & 0xFFFF_FFFF);
    }

    /// Makes the version even again, publishing the writer's stores.
    #[inline(always)]
    pub(crate) fn unlock(&self) {
        debug_assert!(self.is_locked(), "unlocking a bucket that is not locked");
        self.w[WORDS - 1].add(ONE, Release);
    }
}

/// A bucket a writer changes: its private copy with the writer's changes, and the last word of
/// the table's bucket when the copy was taken (the commit locks from exactly that word).
#[derive(Clone, Debug)]
pub(crate) struct Own {
    pub(crate) bucket: usize,
    pub(crate) last: u64,
    pub(crate) words: [u64; WORDS],
}

/// The buckets a writer read, with the versions it read them at.
pub(crate) trait Reads {
    /// Whether `f(bucket, version)` holds for every read.
    fn all(&self, f: impl FnMut(usize, u32) -> bool) -> bool;
}

impl Reads for [(usize, u32)] {
    fn all(&self, mut f: impl FnMut(usize, u32) -> bool) -> bool {
        self.iter().all(|&(b, v)| f(b, v))
    }
}

/// Why a [`commit`] stored nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Another writer changed a bucket this one copied: run the operation again.
    Conflict,
    /// The table is frozen (being copied by a resize): wait for the copy, then run again.
    Frozen,
}

/// Commits a writer's changes (see the module docs): locks the buckets of `writes` in bucket
/// order, checks that every `(bucket, version)` of `reads` still holds and that `frozen` is
/// zero, stores the copies, runs `publish` while they are all still locked (for state kept
/// outside the table that readers validate through one of these buckets), and unlocks.
///
/// A bucket appears in `writes` at most once; it may appear in `reads` too (read before the
/// writer copied it to change it), and then the version read must be the one its copy was
/// taken at. `order` is working memory.
pub(crate) fn commit<'t, W: Word + 't>(
    bucket: impl Fn(usize) -> &'t Bucket<W>,
    frozen: &W,
    writes: &[Own],
    reads: &(impl Reads + ?Sized),
    order: &mut Vec<u32>,
    publish: impl FnOnce(),
) -> Result<(), Refused> {
    order.clear();
    order.extend(0..writes.len() as u32);
    order.sort_unstable_by_key(|&i| writes[i as usize].bucket);
    debug_assert!(
        order
            .windows(2)
            .all(|p| writes[p[0] as usize].bucket < writes[p[1] as usize].bucket),
        "a bucket copied twice"
    );
    let back_out = |locked: &[u32]| {
        for &i in locked {
            let o = &writes[i as usize];
            bucket(o.bucket).restore(o.last);
        }
    };
    for (k, &i) in order.iter().enumerate() {
        let o = &writes[i as usize];
        if !bucket(o.bucket).try_lock(o.last) {
            back_out(&order[..k]);
            return Err(Refused::Conflict);
        }
    }
    // Sequentially consistent loads after the sequentially consistent locks: against another
    // committing writer's locks and checks, or a freezer's flag and scan (module docs).
    if frozen.load_sc() != 0 {
        back_out(order);
        return Err(Refused::Frozen);
    }
    // A bucket this writer locked reads as odd: it held at the version read if its copy was
    // taken at that version (the lock then proves nobody wrote it since). Found by binary
    // search in `order`: a long key's write set has thousands of buckets.
    let holds = |b: usize, v: u32| {
        (bucket(b).w[WORDS - 1].load_sc() >> 32) as u32 == v
            || order
                .binary_search_by_key(&b, |&i| writes[i as usize].bucket)
                .is_ok_and(|k| (writes[order[k] as usize].last >> 32) as u32 == v)
    };
    if !reads.all(holds) {
        back_out(order);
        return Err(Refused::Conflict);
    }
    for o in writes {
        bucket(o.bucket).store_all(&o.words);
    }
    publish();
    for o in writes {
        bucket(o.bucket).unlock();
    }
    Ok(())
}

/// Freezes a table (see the module docs): sets `frozen`, then waits until none of `buckets` is
/// locked. From its return until `frozen` is cleared, no writer stores to these buckets, and
/// this thread sees every store of the commits that finished before.
pub(crate) fn freeze<'t, W: Word + 't>(
    frozen: &W,
    buckets: impl IntoIterator<Item = &'t Bucket<W>>,
    mut wait: impl FnMut(u32),
) {
    frozen.store(1, SeqCst);
    for bucket in buckets {
        let mut spins = 0u32;
        while bucket.w[WORDS - 1].load_sc() & ONE != 0 {
            wait(spins);
            spins += 1;
        }
    }
    // Pairs with the unlocks seen above: the commits' stores happen before what follows.
    W::fence_acquire();
}

#[cfg(all(test, mlpdex_loom))]
mod loom_model {
    //! Run with `RUSTFLAGS="--cfg mlpdex_loom" cargo test -p mlpdex --lib --release loom_model`.
    use super::*;
    use crate::sync::loom::{
        self,
        sync::{Arc, atomic::AtomicU64},
    };

    fn bucket() -> Bucket<AtomicU64> {
        Bucket {
            w: core::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Explores `f` with at most two preemptions per execution: the retry loops of racing
    /// commits make unbounded exploration intractable, and the races these models are about
    /// (a lock or check between another writer's lock and its check) need two.
    fn model(f: impl Fn() + Sync + Send + 'static) {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(2);
        b.check(f);
    }

    /// Two buckets and a table's frozen word.
    type Shared = ([Bucket<AtomicU64>; 2], AtomicU64);

    fn buckets() -> Arc<Shared> {
        Arc::new(([bucket(), bucket()], AtomicU64::new(0)))
    }

    /// Runs `writer(me, &shared)` on two threads (`me` 0 and 1) and waits for both.
    /// (`writer` is `Copy`, not shared through an `Arc`: loom would model its counts too.)
    fn two_writers(s: &Arc<Shared>, writer: impl Fn(usize, &Shared) + Copy + Send + 'static) {
        let threads: Vec<_> = (0..2)
            .map(|me| {
                let s = s.clone();
                loom::thread::spawn(move || writer(me, &s))
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }

    /// A writer's copy of bucket `i`, as a write session takes it.
    fn copy(b: &[Bucket<AtomicU64>; 2], i: usize) -> Own {
        let mut words = [0; WORDS];
        while !b[i].try_copy_into(&mut words) {
            loom::thread::yield_now();
        }
        Own {
            bucket: i,
            last: words[WORDS - 1],
            words,
        }
    }

    /// Runs `op` on fresh copies of both buckets and commits the ones it marks changed (in its
    /// second argument), until a commit succeeds; gives up (returning false) when the table is
    /// frozen. Both buckets count as read, so a changed one is also checked as a bucket the
    /// writer both read and holds.
    fn write(shared: &Shared, mut op: impl FnMut(&mut [Own; 2], &mut [bool; 2])) -> bool {
        let (b, frozen) = shared;
        let mut order = Vec::new();
        loop {
            let mut copies = [copy(b, 0), copy(b, 1)];
            let mut dirty = [false; 2];
            op(&mut copies, &mut dirty);
            let reads: Vec<(usize, u32)> = copies
                .iter()
                .map(|o| (o.bucket, (o.last >> 32) as u32))
                .collect();
            let writes: Vec<Own> = copies
                .into_iter()
                .zip(dirty)
                .filter_map(|(o, d)| d.then_some(o))
                .collect();
            match commit(|i| &b[i], frozen, &writes, &reads[..], &mut order, || {}) {
                Ok(()) => return true,
                Err(Refused::Frozen) => return false,
                Err(Refused::Conflict) => loom::thread::yield_now(),
            }
        }
    }

    /// A writer rewrites an "entry" spanning words 0, 6 and the low half of 7 (like slot 3,
    /// which shares the version's word); a reader's accepted copies are never torn.
    #[test]
    fn snapshot_is_never_torn() {
        model(|| {
            let s = buckets();
            let w = s.clone();
            let writer = loom::thread::spawn(move || {
                for x in 1..=2u64 {
                    write(&w, |c, dirty| {
                        dirty[0] = true;
                        c[0].words[0] = x;
                        c[0].words[6] = x;
                        c[0].words[7] = (c[0].words[7] & !0xFFFF_FFFF) | x;
                    });
                }
            });
            if let Some((c, v)) = s.0[0].try_snapshot() {
                assert_eq!(v % 2, 0);
                assert_eq!(c[0], c[6]);
                assert_eq!(c[0], c[7] & 0xFFFF_FFFF);
                assert_eq!(u64::from(v), 2 * c[0], "version matches the data it guards");
            }
            writer.join().unwrap();
        });
    }

    /// A writer moves a token from bucket A to bucket B in one commit (as a cuckoo relocation
    /// does); a reader that copies A then B and validates both sees the token exactly once.
    #[test]
    fn two_bucket_commit_is_atomic_to_validating_readers() {
        model(|| {
            let s = buckets();
            s.0[0].store_masked(0, 1, u64::MAX);
            let w = s.clone();
            let writer = loom::thread::spawn(move || {
                write(&w, |c, dirty| {
                    c[0].words[0] = 0;
                    c[1].words[0] = 1;
                    dirty[0] = true;
                    dirty[1] = true;
                });
            });
            let sa = s.0[0].try_snapshot();
            let sb = s.0[1].try_snapshot();
            if let (Some((ca, va)), Some((cb, vb))) = (sa, sb) {
                AtomicU64::fence_acquire();
                if s.0[0].validate(va) && s.0[1].validate(vb) {
                    assert_eq!(ca[0] + cb[0], 1, "token seen once");
                }
            }
            writer.join().unwrap();
        });
    }

    /// Two writers whose bucket sets overlap (both increment counters in A and B): no update
    /// is lost, and the two buckets always agree.
    #[test]
    fn overlapping_writers_lose_no_update() {
        model(|| {
            let s = buckets();
            two_writers(&s, |_, w| {
                write(w, |c, dirty| {
                    for o in c.iter_mut() {
                        o.words[0] += 1;
                    }
                    *dirty = [true; 2];
                });
            });
            assert_eq!(s.0[0].word(0), 2);
            assert_eq!(s.0[1].word(0), 2);
        });
    }

    /// Write skew: each writer reads both buckets and, if both are 0, sets its own to 1. Run
    /// one after the other, exactly one sets its bucket; the commit's check of the buckets
    /// only read must refuse the second writer even though their write sets are disjoint.
    #[test]
    fn reads_are_validated_so_write_skew_is_refused() {
        model(|| {
            let s = buckets();
            two_writers(&s, |me, w| {
                write(w, |c, dirty| {
                    if c[0].words[0] + c[1].words[0] == 0 {
                        c[me].words[0] = 1;
                        dirty[me] = true;
                    }
                });
            });
            assert_eq!(s.0[0].word(0) + s.0[1].word(0), 1);
        });
    }

    /// A write session reads a bucket (logging its version) and copies it to change it only
    /// later. Two writers each add one to the bucket's counter from the value they *read*: if
    /// the other committed between a writer's read and its copy, the commit must refuse (its
    /// copy is current, but the read it computed from is not), or an update is lost.
    #[test]
    fn bucket_read_before_its_copy_is_checked_at_the_version_read() {
        model(|| {
            let s = buckets();
            two_writers(&s, |_, (b, frozen)| {
                let mut order = Vec::new();
                loop {
                    let read = copy(b, 0);
                    let reads = [(0, (read.last >> 32) as u32)];
                    let mut own = copy(b, 0);
                    own.words[0] = read.words[0] + 1;
                    if commit(|i| &b[i], frozen, &[own], &reads[..], &mut order, || {}).is_ok() {
                        break;
                    }
                    loom::thread::yield_now();
                }
            });
            assert_eq!(s.0[0].word(0), 2, "an update was lost");
        });
    }

    /// A writer races a freeze (a resize step): once the freezer has waited out the locks, the
    /// table never changes again; the writer either committed before (and the freezer sees
    /// its value) or was refused.
    #[test]
    fn writer_racing_a_freeze_commits_before_it_or_not_at_all() {
        model(|| {
            let s = buckets();
            let w = s.clone();
            let writer = loom::thread::spawn(move || {
                write(&w, |c, dirty| {
                    c[0].words[0] = 1;
                    dirty[0] = true;
                })
            });
            freeze(&s.1, &s.0, |_| loom::thread::yield_now());
            let mut seen = [0; WORDS];
            s.0[0].copy_frozen(&mut seen);
            let committed = writer.join().unwrap();
            let mut after = [0; WORDS];
            s.0[0].copy_frozen(&mut after);
            assert_eq!(seen[0], after[0], "a frozen table changed");
            assert_eq!(after[0], u64::from(committed));
        });
    }
}
