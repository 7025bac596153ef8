//! One bucket: a 4 KiB page of 512 atomic words, open addressing over 63 cache-line groups
//! of three entries, one tag byte an entry, and a seqlock (vm-shortcuts-extendible-hashing.txt
//! §4.1: "within each bucket, we use again open addressing/linear probing").
//!
//! # Layout
//!
//! ```text
//! line 0    word 0  version: page number << 32 | write count (odd while a write is in flight)
//!           word 1  prefix: the top `depth` bits of the hashes the bucket holds
//!           word 2  meta: depth (bits 0..8), live entries (8..24), used slots (24..40),
//!                   MAGIC (56..64); zero in a page that holds no bucket
//!           words 3..8 unused
//! line g    word 8g       tags of the group's three slots, one byte each (bytes 3..8 zero)
//! (1..=63)  word 8g+1+2i  key of slot i
//!           word 8g+2+2i  value of slot i
//!           word 8g+7     unused
//! ```
//!
//! A key's hash picks its first group (from its low 32 bits) and its tag (bits 32..40, mapped
//! to 2..=255); a probe walks groups from the first, wrapping, and stops at the key or at a
//! group with an empty slot. A lookup that finds its key in its first group (most do: a
//! bucket splits at 90% of its slots used) reads one line besides the header's. Tag 0 marks
//! an empty slot, 1 a removed one (a tombstone, skipped by probes, reused by inserts); a
//! bucket rebuilt by a split or a merge has none.
//!
//! # Protocol (one writer, any number of readers)
//!
//! The writer makes the version odd before its first store to a bucket visible to readers
//! ([`Page::lock`]) and even after its last ([`Page::unlock`]). A reader
//! ([`Page::read`]) reads the version (even), the header and its probe with relaxed loads,
//! then the version again after an acquire fence: if it changed, or the page holds no bucket
//! (MAGIC missing), or the bucket does not cover the reader's hash (it split or merged since
//! the reader chose it), the reader starts over from the directory. Versions carry the page
//! number, so a reader whose page was remapped under it (a shortcut slot updated while it
//! read) sees a different version even if both pages counted as many writes. Every access is
//! atomic, so racing readers and writers are not data races.
//!
//! # Invariants (checked by [`Page::audit`] in tests)
//!
//! 1. `used` counts the slots whose tag is not 0, `live` those whose tag is at least 2.
//! 2. Every live key's hash has the bucket's prefix as its top `depth` bits, and its tag.
//! 3. Every live key is reached by the probe from its first group: no group before it on
//!    the way has an empty slot.
//! 4. Keys are distinct.

use core::sync::atomic::AtomicU64;
use core::sync::atomic::Ordering::{Acquire, Relaxed};

use crate::sync::Word;

/// Bytes of a page (the kernel's, which shortcuts map one by one).
pub(crate) const PAGE: usize = 4096;
/// Words of a page.
pub(crate) const WORDS: usize = PAGE / 8;
/// Words of a cache line.
const LINE: usize = 8;
/// Groups (cache lines of entries) of a page.
pub(crate) const GROUPS: usize = PAGE / 64 - 1;
/// Entries of a group.
pub(crate) const PER_GROUP: usize = 3;
/// Entries of a page.
pub(crate) const SLOTS: usize = GROUPS * PER_GROUP;
/// A bucket is split (or, when mostly tombstones, rebuilt) once this many slots are used:
/// 90% of them, so that probes stay about one group long.
pub(crate) const MAX_USED: usize = SLOTS * 9 / 10;
/// Two buddy buckets merge when their live entries fit in this many slots together (half a
/// page: the merged bucket then takes many inserts before it splits again).
pub(crate) const MERGE_AT: usize = SLOTS / 2;

const VERSION: usize = 0;
const PREFIX: usize = 1;
const META: usize = 2;
const MAGIC: u64 = 0xEB << 56;
const MAGIC_MASK: u64 = 0xFF << 56;
/// One write in the version word.
const ONE: u64 = 1;
const EMPTY: u8 = 0;
const TOMB: u8 = 1;

const _: () = assert!(WORDS == 512 && GROUPS == 63 && SLOTS == 189);
const _: () = assert!(core::mem::size_of::<Page>() == PAGE);
const _: () = assert!(core::mem::align_of::<Page>() == PAGE);

/// Where a key's hash sends it: its directory slot comes from the top bits (see
/// [`Hashed::slot`]), its first group and tag from the low 40.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hashed(pub(crate) u64);

impl Hashed {
    /// The directory slot at global depth `depth`: the hash's top `depth` bits.
    #[inline(always)]
    pub(crate) fn slot(self, depth: u32) -> usize {
        self.0.checked_shr(64 - depth).unwrap_or(0) as usize
    }

    /// The line of the first group a probe reads in a page of `groups` groups (1..=groups).
    #[inline(always)]
    fn group(self, groups: usize) -> usize {
        1 + ((u64::from(self.0 as u32) * groups as u64) >> 32) as usize
    }

    /// The tag, 2..=255.
    #[inline(always)]
    fn tag(self) -> u8 {
        let t = (self.0 >> 32) as u8;
        if t < 2 { t + 2 } else { t }
    }

    /// Whether a bucket of `depth` and `prefix` holds this hash.
    #[inline(always)]
    fn covered_by(self, depth: u32, prefix: u64) -> bool {
        self.slot(depth) as u64 == prefix
    }
}

/// The line after `g` in probe order over `groups` groups (1..=groups, wrapping).
#[inline(always)]
fn next_group(g: usize, groups: usize) -> usize {
    if g == groups { 1 } else { g + 1 }
}

/// Tag of slot `i` in a group's tag word.
#[inline(always)]
fn tag_of(tags: u64, i: usize) -> u8 {
    (tags >> (8 * i)) as u8
}

/// Where a key was found: the word of its key (its value is the next word).
pub(crate) type At = usize;

/// A bucket's header fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Meta {
    pub(crate) depth: u32,
    pub(crate) prefix: u64,
    pub(crate) live: usize,
    pub(crate) used: usize,
}

/// One bucket page (see the module docs). `N` is its words: [`WORDS`] in the map; the loom
/// model checks the protocol on pages of two lines (one group), whose probes and rebuilds
/// are the same code.
#[repr(C, align(4096))]
pub(crate) struct Page<W = AtomicU64, const N: usize = WORDS> {
    pub(crate) w: [W; N],
}

impl<W: Word, const N: usize> Page<W, N> {
    /// Groups of the page.
    const GROUPS: usize = N / LINE - 1;

    #[inline(always)]
    fn get(&self, i: usize) -> u64 {
        self.w[i].load(Relaxed)
    }

    /// Stores `v` into word `i` (the writer, inside [`lock`](Self::lock) when readers may
    /// see the page).
    #[inline(always)]
    fn set(&self, i: usize, v: u64) {
        self.w[i].clear_set(u64::MAX, v);
    }

    /// The value of `key` if this page holds the bucket of `h`: `Some(Some(value))`,
    /// `Some(None)` when the key is absent, `None` when the reader must start over (a write
    /// was in flight or came between, the page holds no bucket, or its bucket no longer
    /// covers `h`). Linearizes at the second read of the version.
    #[inline]
    pub(crate) fn read(&self, key: u64, h: Hashed) -> Option<Option<u64>> {
        let v = self.w[VERSION].load(Acquire);
        if v & ONE != 0 {
            return None;
        }
        let meta = self.get(META);
        let prefix = self.get(PREFIX);
        // The value is loaded before the version is read again, like every word the answer
        // depends on: loaded after it, a rebuild could have moved another key's into its slot.
        let found = self.probe(key, h).map(|at| self.get(at + 1));
        W::fence_acquire();
        let again = self.w[VERSION].load(Relaxed);
        let depth = (meta & 0xFF) as u32;
        let ok = again == v && meta & MAGIC_MASK == MAGIC && h.covered_by(depth, prefix);
        ok.then_some(found)
    }

    /// The word of `key`'s key, probing from its first group (relaxed loads: the writer's own
    /// view, or a reader's inside [`read`](Self::read)). At most a page's groups, whatever
    /// a racing writer does.
    #[inline(always)]
    fn probe(&self, key: u64, h: Hashed) -> Option<At> {
        let tag = h.tag();
        let mut g = h.group(Self::GROUPS);
        for _ in 0..Self::GROUPS {
            let base = g * LINE;
            let tags = self.get(base);
            for i in 0..PER_GROUP {
                let t = tag_of(tags, i);
                if t == tag && self.get(base + 1 + 2 * i) == key {
                    return Some(base + 1 + 2 * i);
                }
            }
            if (0..PER_GROUP).any(|i| tag_of(tags, i) == EMPTY) {
                return None;
            }
            g = next_group(g, Self::GROUPS);
        }
        None
    }

    /// The header (the writer's view).
    pub(crate) fn meta(&self) -> Meta {
        let m = self.get(META);
        Meta {
            depth: (m & 0xFF) as u32,
            prefix: self.get(PREFIX),
            live: (m >> 8 & 0xFFFF) as usize,
            used: (m >> 24 & 0xFFFF) as usize,
        }
    }

    fn set_meta(&self, m: Meta) {
        self.set(PREFIX, m.prefix);
        self.set(
            META,
            MAGIC | m.depth as u64 | (m.live as u64) << 8 | (m.used as u64) << 24,
        );
    }

    /// The version word (the writer's view; its high half is the page's number).
    pub(crate) fn version(&self) -> u64 {
        self.get(VERSION)
    }

    /// Whether a bucket lives in the page (the writer's view).
    pub(crate) fn holds_bucket(&self) -> bool {
        self.get(META) & MAGIC_MASK == MAGIC
    }

    /// Makes the version odd before the writer's first store to a page readers may see.
    #[inline]
    pub(crate) fn lock(&self) {
        debug_assert!(self.get(VERSION) & ONE == 0, "locking a page twice");
        self.w[VERSION].add(ONE, Relaxed);
        // Orders the odd version before the stores that follow: a reader that sees one of
        // them sees the odd version, or a later one, when it reads the version again.
        W::fence_release();
    }

    /// Makes the version even again, publishing the writer's stores.
    #[inline]
    pub(crate) fn unlock(&self) {
        debug_assert!(self.get(VERSION) & ONE != 0, "unlocking a page not locked");
        self.w[VERSION].add(ONE, core::sync::atomic::Ordering::Release);
    }

    /// Makes a fresh page (its words zero, as the pool hands them out, or left by
    /// [`retire`](Self::retire)) the empty bucket of `depth` and `prefix`, its version
    /// stamped with `number`, the page's number in the pool, and leaves it locked: the writer
    /// fills it, then [`unlock`](Self::unlock)s it. A reader still holding the page from an
    /// earlier life never sees it half filled.
    pub(crate) fn init(&self, number: u32, depth: u32, prefix: u64) {
        // Keep counting writes across the page's lives, so a reader that saw its last life
        // cannot mistake the next one for it.
        let count = self.get(VERSION) & 0xFFFF_FFFF;
        self.set(
            VERSION,
            (u64::from(number) << 32) | ((count + 2) & 0xFFFF_FFFF | ONE),
        );
        W::fence_release();
        for g in 1..=Self::GROUPS {
            for i in 0..LINE {
                self.set(g * LINE + i, 0);
            }
        }
        self.set_meta(Meta {
            depth,
            prefix,
            live: 0,
            used: 0,
        });
    }

    /// Marks the page as holding no bucket (inside [`lock`](Self::lock) when readers may see
    /// it): a reader still on its way here starts over.
    pub(crate) fn retire(&self) {
        self.set(META, 0);
        self.set(PREFIX, 0);
    }

    /// The writer's lookup: the word of `key`'s key.
    #[inline]
    pub(crate) fn find(&self, key: u64, h: Hashed) -> Option<At> {
        self.probe(key, h)
    }

    /// The value stored at `at` (from [`find`](Self::find)).
    #[inline]
    pub(crate) fn value_at(&self, at: At) -> u64 {
        self.get(at + 1)
    }

    /// Replaces the value at `at` (inside [`lock`](Self::lock) when readers may see it).
    #[inline]
    pub(crate) fn set_value(&self, at: At, value: u64) {
        self.set(at + 1, value);
    }

    /// Stores a key that is not in the bucket (inside [`lock`](Self::lock) when readers may
    /// see it), in the first free slot of its probe; false when no slot is free.
    pub(crate) fn put(&self, key: u64, h: Hashed, value: u64) -> bool {
        let mut g = h.group(Self::GROUPS);
        for _ in 0..Self::GROUPS {
            let base = g * LINE;
            let tags = self.get(base);
            if let Some(i) = (0..PER_GROUP).find(|&i| tag_of(tags, i) < 2) {
                let was = tag_of(tags, i);
                self.set(base + 1 + 2 * i, key);
                self.set(base + 2 + 2 * i, value);
                let shift = 8 * i;
                self.set(base, tags & !(0xFF << shift) | u64::from(h.tag()) << shift);
                let mut m = self.meta();
                m.live += 1;
                m.used += usize::from(was == EMPTY);
                self.set_meta(m);
                return true;
            }
            g = next_group(g, Self::GROUPS);
        }
        false
    }

    /// Removes the entry at `at` (inside [`lock`](Self::lock) when readers may see it),
    /// leaving a tombstone.
    pub(crate) fn remove_at(&self, at: At) {
        let base = at / LINE * LINE;
        let i = (at - base - 1) / 2;
        let tags = self.get(base);
        self.set(base, tags & !(0xFF << (8 * i)) | u64::from(TOMB) << (8 * i));
        let mut m = self.meta();
        m.live -= 1;
        self.set_meta(m);
    }

    /// Calls `f` with every live entry (the writer's view).
    pub(crate) fn for_each(&self, mut f: impl FnMut(u64, u64)) {
        for g in 1..=Self::GROUPS {
            let base = g * LINE;
            let tags = self.get(base);
            for i in 0..PER_GROUP {
                if tag_of(tags, i) >= 2 {
                    f(self.get(base + 1 + 2 * i), self.get(base + 2 + 2 * i));
                }
            }
        }
    }

    /// The live entries, into `out` (emptied first).
    pub(crate) fn entries(&self, out: &mut Vec<(u64, u64)>) {
        out.clear();
        self.for_each(|k, v| out.push((k, v)));
    }

    /// Rebuilds the bucket as `depth`, `prefix` holding exactly `entries` (their hashes
    /// under `hash`), without tombstones (inside [`lock`](Self::lock) when readers may see
    /// it). False, with the bucket emptied, if they do not fit (never, with at most
    /// [`SLOTS`] entries).
    pub(crate) fn rebuild(
        &self,
        depth: u32,
        prefix: u64,
        entries: &[(u64, u64)],
        hash: impl Fn(u64) -> Hashed,
    ) -> bool {
        for g in 1..=Self::GROUPS {
            self.set(g * LINE, 0);
        }
        self.set_meta(Meta {
            depth,
            prefix,
            live: 0,
            used: 0,
        });
        entries.iter().all(|&(k, v)| self.put(k, hash(k), v))
    }

    /// Checks the invariants of the module docs (tests and the map's audit).
    pub(crate) fn check(&self, hash: impl Fn(u64) -> Hashed) -> Result<(), String> {
        let m = self.meta();
        if !self.holds_bucket() {
            return Err("no bucket".into());
        }
        if self.get(VERSION) & ONE != 0 {
            return Err("locked".into());
        }
        let (mut used, mut live, mut keys) = (0, 0, std::collections::HashSet::new());
        for g in 1..=Self::GROUPS {
            let tags = self.get(g * LINE);
            if tags >> 24 != 0 {
                return Err(format!("group {g}: tag bytes past its three"));
            }
            for i in 0..PER_GROUP {
                let t = tag_of(tags, i);
                used += usize::from(t != EMPTY);
                if t < 2 {
                    continue;
                }
                live += 1;
                let k = self.get(g * LINE + 1 + 2 * i);
                let h = hash(k);
                if !h.covered_by(m.depth, m.prefix) {
                    return Err(format!("key {k} outside the bucket"));
                }
                if t != h.tag() {
                    return Err(format!("key {k}: tag {t}, hash says {}", h.tag()));
                }
                if !keys.insert(k) {
                    return Err(format!("key {k} twice"));
                }
                if self.find(k, h) != Some(g * LINE + 1 + 2 * i) {
                    return Err(format!("key {k} unreachable"));
                }
            }
        }
        if (m.used, m.live) != (used, live) {
            return Err(format!(
                "counts {:?} for {used} used, {live} live",
                (m.used, m.live)
            ));
        }
        Ok(())
    }

    #[cfg(test)]
    pub(crate) fn audit(&self, hash: impl Fn(u64) -> Hashed) {
        if let Err(e) = self.check(hash) {
            panic!("{e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestRng;

    fn page() -> Box<Page> {
        let p: Box<Page> = Box::new(Page {
            w: core::array::from_fn(|_| AtomicU64::new(0)),
        });
        p.init(7, 0, 0);
        p.unlock();
        p
    }

    fn hash(k: u64) -> Hashed {
        Hashed(crate::substrate::hash::hash_u64(k, 0))
    }

    /// Inserts, updates, removes and lookups against a `HashMap`, through tombstones and a
    /// full page, then a rebuild; the invariants hold after every step.
    #[test]
    fn operations_answer_like_a_hash_map() {
        let p = page();
        let mut want = std::collections::HashMap::new();
        let mut rng = TestRng::new(3);
        let steps = if cfg!(miri) { 300 } else { 5000 };
        for step in 0..steps {
            let k = rng.index(400) as u64;
            let h = hash(k);
            match rng.index(3) {
                0 => match p.find(k, h) {
                    Some(at) => {
                        p.set_value(at, k * 3);
                        want.insert(k, k * 3);
                    }
                    None if p.meta().used < SLOTS => {
                        assert!(p.put(k, h, k * 2));
                        want.insert(k, k * 2);
                    }
                    None => {}
                },
                1 => {
                    if let Some(at) = p.find(k, h) {
                        p.remove_at(at);
                        assert!(want.remove(&k).is_some());
                    } else {
                        assert!(!want.contains_key(&k));
                    }
                }
                _ => {
                    assert_eq!(p.read(k, h), Some(want.get(&k).copied()));
                }
            }
            if p.meta().used >= MAX_USED {
                let mut e = Vec::new();
                p.entries(&mut e);
                assert!(p.rebuild(0, 0, &e, hash));
                assert_eq!(p.meta().used, p.meta().live);
            }
            // Under miri the audit (every entry rehashed) runs every 25th step.
            if !cfg!(miri) || step % 25 == 0 {
                p.audit(hash);
            }
        }
        p.audit(hash);
        assert_eq!(p.meta().live, want.len());
    }

    /// A reader rejects a page whose bucket does not cover its hash, a retired page, and a
    /// page locked by the writer.
    #[test]
    fn readers_reject_pages_that_do_not_hold_their_bucket() {
        let p = page();
        let k = (0..).find(|&k| hash(k).slot(1) == 1).unwrap();
        p.init(7, 1, 0);
        assert_eq!(p.read(k, hash(k)), None, "being filled");
        p.unlock();
        assert_eq!(p.read(k, hash(k)), None, "the other half's bucket");
        p.init(7, 1, 1);
        assert!(p.put(k, hash(k), 5));
        p.unlock();
        assert_eq!(p.read(k, hash(k)), Some(Some(5)));
        p.lock();
        assert_eq!(p.read(k, hash(k)), None, "a write in flight");
        p.retire();
        p.unlock();
        assert_eq!(p.read(k, hash(k)), None, "no bucket");
        p.init(7, 0, 0);
        p.unlock();
        assert_eq!(p.read(k, hash(k)), Some(None), "a new life, empty");
    }

    /// A full page refuses one more key, and every key of it stays reachable.
    #[test]
    fn a_full_page_keeps_every_key_reachable() {
        let p = page();
        for k in 0..SLOTS as u64 {
            assert!(p.put(k, hash(k), k));
        }
        assert!(!p.put(1 << 40, hash(1 << 40), 0));
        for k in 0..SLOTS as u64 {
            assert_eq!(p.read(k, hash(k)), Some(Some(k)));
        }
        assert_eq!(p.read(1 << 40, hash(1 << 40)), Some(None));
        p.audit(hash);
    }
}

#[cfg(all(test, mlpdex_loom))]
mod loom_model {
    //! The writer's split and merge sequences (`write`) against a reader, on pages of two
    //! lines (one group of three slots) and a directory of two slots, with loom's atomics.
    //! Run with `RUSTFLAGS="--cfg mlpdex_loom" cargo test -p mlpdex --lib --release
    //! loom_model`.
    use super::*;
    use crate::sync::loom::{
        self,
        sync::{
            Arc,
            atomic::{AtomicU32, AtomicU64},
        },
    };

    type Small = Page<AtomicU64, 16>;

    /// Loom's coroutines have small stacks that a page's sixteen loom atomics outgrow, so
    /// the model body and its writer run on threads given 1 MiB; three preemptions per run.
    fn model(f: impl Fn() + Sync + Send + Copy + 'static) {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(3);
        b.check(move || spawn(f).join().unwrap());
    }

    fn spawn(f: impl FnOnce() + Send + 'static) -> loom::thread::JoinHandle<()> {
        loom::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(f)
            .unwrap()
    }

    fn page() -> Small {
        Page {
            w: core::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    fn hash(k: u64) -> Hashed {
        Hashed(crate::substrate::hash::hash_u64(k, 0))
    }

    /// Two keys, one of each half of the hash space (top bit 0, then 1).
    fn halves() -> (u64, u64) {
        let a = (0..).find(|&k| hash(k).slot(1) == 0).unwrap();
        let b = (0..).find(|&k| hash(k).slot(1) == 1).unwrap();
        (a, b)
    }

    /// The reader's lookup through the two-slot directory, retrying as `Shared::get` does.
    fn lookup(dir: &[AtomicU32; 2], pages: &[Small; 2], key: u64) -> Option<u64> {
        let h = hash(key);
        loop {
            let n = dir[h.slot(1)].load(core::sync::atomic::Ordering::Acquire);
            if let Some(found) = pages[n as usize].read(key, h) {
                return found;
            }
            loom::thread::yield_now();
        }
    }

    /// A split moves key `b` to a new page while a reader looks it up: the reader finds it,
    /// with its value, whichever page it reads.
    #[test]
    fn a_split_never_hides_a_key_from_a_reader() {
        model(|| {
            let (a, b) = halves();
            let pages = Arc::new([page(), page()]);
            pages[0].init(0, 0, 0);
            assert!(pages[0].put(a, hash(a), 10));
            assert!(pages[0].put(b, hash(b), 20));
            pages[0].unlock();
            let dir = Arc::new([AtomicU32::new(0), AtomicU32::new(0)]);
            let (wp, wd) = (Arc::clone(&pages), Arc::clone(&dir));
            let writer = spawn(move || {
                let new = &wp[1];
                new.init(1, 1, 1);
                new.put(b, hash(b), 20);
                new.unlock();
                wd[1].store(1, core::sync::atomic::Ordering::Release);
                let old = &wp[0];
                old.lock();
                assert!(old.rebuild(1, 0, &[(a, 10)], hash));
                old.unlock();
            });
            assert_eq!(lookup(&dir, &pages, b), Some(20));
            writer.join().unwrap();
            assert_eq!(lookup(&dir, &pages, a), Some(10));
        });
    }

    /// A merge rebuilds key `a`'s page in place to take in key `b`, then retires `b`'s page,
    /// while a reader looks up both: the reader finds each, whichever page it reads.
    #[test]
    fn a_merge_never_hides_a_key_from_a_reader() {
        model(|| {
            let (a, b) = halves();
            let pages = Arc::new([page(), page()]);
            pages[0].init(0, 1, 0);
            assert!(pages[0].put(a, hash(a), 10));
            pages[0].unlock();
            pages[1].init(1, 1, 1);
            assert!(pages[1].put(b, hash(b), 20));
            pages[1].unlock();
            let dir = Arc::new([AtomicU32::new(0), AtomicU32::new(1)]);
            let (wp, wd) = (Arc::clone(&pages), Arc::clone(&dir));
            let writer = spawn(move || {
                let target = &wp[0];
                target.lock();
                assert!(target.rebuild(0, 0, &[(a, 10), (b, 20)], hash));
                target.unlock();
                wd[1].store(0, core::sync::atomic::Ordering::Release);
                let other = &wp[1];
                other.lock();
                other.retire();
                other.unlock();
            });
            assert_eq!(lookup(&dir, &pages, a), Some(10));
            assert_eq!(lookup(&dir, &pages, b), Some(20));
            writer.join().unwrap();
            assert_eq!(lookup(&dir, &pages, b), Some(20));
        });
    }
}
