//! The lock-free link protocol: searches, insertion, removal and the unlinking handshake.
//!
//! The rules (numbered as in the [module docs](crate::skiplist)):
//!
//! 1. A key is *present* while its node's value word lacks [`DELETED`]. Setting that bit with
//!    one CAS is a removal's linearization point; a CAS of pred's `next[0]` to a new node is an
//!    insertion's; a CAS of the value word to a new box is an update's.
//! 2. A node is published at level 0 first and then linked upward, one level at a time. A
//!    node's `next[i]` gets [`MARK`] only after its key was removed; a marked link never
//!    changes again, so nothing can be linked after a dying node.
//! 3. Writers' searches ([`RawList::find`]) unlink every removed node they meet, at every
//!    level: mark its link, then CAS the predecessor past it. Readers never write: they step
//!    over removed nodes and never use one as a predecessor.
//! 4. A removed node is retired exactly once, by whichever of its inserter (done building the
//!    tower: [`BUILT`]) and its remover (done marking and unlinking: [`UNLINKED`]) finishes
//!    second, after its own unlinking search. Whichever finishes second, a search for the node
//!    ran after its last link was made, and a node once unreachable never becomes reachable
//!    again (links only ever point to new nodes or to successors of reachable ones), so the
//!    retired node is unreachable for every thread that pins after the retirement.
//!
//! Every access in the writers' protocol is `SeqCst`: rule 4 needs the inserter's final check
//! of the value word and the remover's search to be ordered (a store-then-load on each side),
//! and on x86-64 a `SeqCst` load is a plain load. Readers use `Acquire`.

use core::marker::PhantomData;
use core::sync::atomic::Ordering::{Acquire, Relaxed, SeqCst};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize as Counter;

use super::node::{
    self, BUILT, DELETED, MARK, MAX_HEIGHT, Node, UNLINKED, addr, new_box, take_box,
    take_unpublished,
};
use crate::Error;

/// Where removed nodes and replaced values go once unlinked: the front end defers their
/// destruction past every epoch guard that could still see them.
pub(crate) trait Retire<V> {
    /// `link`'s node is unreachable; free it once no thread can still hold it.
    fn retire_node(&self, link: usize);
    /// The box `word` is no longer current; free it once no thread can still hold it.
    fn retire_value(&self, word: usize);
}

/// Per-level predecessors and successors of a key, as link words.
pub(crate) struct Path {
    preds: [usize; MAX_HEIGHT],
    succs: [usize; MAX_HEIGHT],
}

impl Path {
    pub(crate) fn new() -> Path {
        Path {
            preds: [0; MAX_HEIGHT],
            succs: [0; MAX_HEIGHT],
        }
    }
}

/// How a reader's descent compares nodes with the search key.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Seek {
    /// Stop before the first key `>= k`.
    Ge,
    /// Stop before the first key `> k`.
    Gt,
    /// Never stop: the descent ends at the last node.
    Last,
}

impl Seek {
    /// Whether a node holding `node_key` goes before the search key `key`.
    #[inline(always)]
    fn before(self, node_key: &[u8], key: &[u8]) -> bool {
        match self {
            Seek::Ge => key_lt(node_key, key),
            Seek::Gt => !key_lt(key, node_key),
            Seek::Last => true,
        }
    }
}

/// The skip list's shared state; the node memory belongs to it.
pub(crate) struct RawList<V> {
    /// The head node's link: no key, every level.
    head: usize,
    /// Levels in use: at least the height of every node ever inserted (searches start there).
    top: Counter,
    /// Keys present; exact when no write is in flight.
    len: Counter,
    /// Bytes of nodes and boxed values, retired ones included until freed.
    pub(crate) bytes: Arc<Counter>,
    _values: PhantomData<V>,
}

/// The node behind a link.
///
/// # Safety
/// `link` points to a node that is not freed while the reference lives: the head, or a node
/// reached by following links under a pinned guard (rule 4).
#[inline(always)]
unsafe fn at<'a, V>(link: usize) -> &'a Node<V> {
    // SAFETY: per the contract.
    unsafe { &*addr::<V>(link) }
}

/// `a < b` in key order. Keys of 8 bytes or more are first told apart by their leading 8
/// bytes as one big-endian integer, which settles nearly every comparison of a search without
/// a call to `memcmp`.
#[inline(always)]
pub(crate) fn key_lt(a: &[u8], b: &[u8]) -> bool {
    if let (Some(x), Some(y)) = (a.first_chunk::<8>(), b.first_chunk::<8>()) {
        let (x, y) = (u64::from_be_bytes(*x), u64::from_be_bytes(*y));
        if x != y {
            return x < y;
        }
    }
    a < b
}

#[inline(always)]
fn same(a: usize, b: usize) -> bool {
    addr::<u8>(a) == addr::<u8>(b)
}

impl<V> RawList<V> {
    pub(crate) fn new() -> Result<RawList<V>, Error> {
        let (head, bytes) = node::alloc_head::<V>()?;
        Ok(RawList {
            head,
            top: Counter::new(1),
            len: Counter::new(0),
            bytes: Arc::new(Counter::new(bytes)),
            _values: PhantomData,
        })
    }

    pub(crate) fn head(&self) -> usize {
        self.head
    }

    pub(crate) fn len(&self) -> usize {
        self.len.load(Relaxed)
    }

    /// Levels a search starts from.
    #[inline]
    pub(crate) fn top(&self) -> usize {
        self.top.load(Relaxed)
    }

    /// Writers' search: fills `path` for `key` at levels `0..levels`, unlinking every removed
    /// node met on the way (rule 3). Each `preds[i]` is a live node (or the head) with a key
    /// below `key`, and `succs[i]` the link that followed it. Returns the live level-0 node
    /// holding `key` (0 if none).
    ///
    /// With `target` set (a removed node holding `key`), the search also walks each level's
    /// run of nodes holding `key`, so that `target` is unlinked wherever it is still linked,
    /// and returns 0. The run is walked apart from the descent: nodes of equal key need not
    /// be in the same order on every level (a dying node's tower may be linked in front of
    /// its successor's), so a descent from one of them could pass `target` on the level
    /// below.
    pub(crate) fn find(&self, key: &[u8], target: usize, path: &mut Path, levels: usize) -> usize {
        'retry: loop {
            let mut pred = self.head;
            let mut found = 0;
            for lvl in (0..levels).rev() {
                // The node whose link we follow: `pred`, or inside the run of equal keys the
                // last live node of the run.
                let mut at_link = pred;
                // SAFETY: the head, or a node reached by links under the caller's guard.
                let mut an = unsafe { at::<V>(at_link) };
                let mut curr = an.next(lvl).load(SeqCst);
                let mut succ_of_pred = curr;
                loop {
                    if curr & MARK != 0 {
                        // The node we follow is being unlinked: it can no longer be a
                        // predecessor.
                        continue 'retry;
                    }
                    if addr::<V>(curr).is_null() {
                        break;
                    }
                    // SAFETY: reached by a link under the caller's guard.
                    let cn = unsafe { at::<V>(curr) };
                    let succ = cn.next(lvl).load(SeqCst);
                    if succ & MARK != 0 || cn.value.load(SeqCst) & DELETED != 0 {
                        // Removed: freeze its link (rule 2), then unlink it here. On a failed
                        // CAS the link changed under us: continue from its new value (the
                        // loop top restarts if the node we follow is now marked).
                        let succ = cn.next(lvl).fetch_or(MARK, SeqCst) & !MARK;
                        curr = match an.next(lvl).compare_exchange(curr, succ, SeqCst, SeqCst) {
                            Ok(_) => succ,
                            Err(now) => now,
                        };
                        if same(at_link, pred) {
                            succ_of_pred = curr;
                        }
                        continue;
                    }
                    let ck = cn.key();
                    if key_lt(ck, key) {
                        debug_assert!(same(at_link, pred));
                        pred = curr;
                        at_link = curr;
                        an = cn;
                        curr = succ;
                        succ_of_pred = succ;
                        continue;
                    }
                    if target != 0 && ck == key {
                        // Inside the run of `key`: walk it without moving `pred`.
                        at_link = curr;
                        an = cn;
                        curr = succ;
                        continue;
                    }
                    if lvl == 0 && target == 0 && ck == key {
                        found = curr;
                    }
                    break;
                }
                path.preds[lvl] = pred;
                path.succs[lvl] = succ_of_pred;
            }
            return found;
        }
    }

    /// Inserts `key` with a new node of `height` levels, or replaces the value of the present
    /// node; returns a clone of the replaced value.
    pub(crate) fn insert(
        &self,
        key: &[u8],
        value: V,
        height: usize,
        retire: &impl Retire<V>,
    ) -> Result<Option<V>, Error>
    where
        V: Clone,
    {
        debug_assert!((1..=MAX_HEIGHT).contains(&height));
        /// Where the value waits between attempts.
        enum Pending<V> {
            Value(V),
            Boxed(usize),
            Node(usize),
        }
        self.top.fetch_max(height, SeqCst);
        let levels = self.top.load(SeqCst);
        let mut path = Path::new();
        let mut pending = Pending::Value(value);
        'attempt: loop {
            let found = self.find(key, 0, &mut path, levels);
            if found != 0 {
                // SAFETY: reached under the caller's guard.
                let n = unsafe { at::<V>(found) };
                let b = match pending {
                    Pending::Value(v) => self.boxed(v),
                    Pending::Boxed(b) => b,
                    Pending::Node(link) => {
                        // SAFETY: allocated by an earlier attempt and never published.
                        let v = unsafe { take_unpublished::<V>(link) };
                        self.released(link_size::<V>(key.len(), height));
                        self.boxed(v)
                    }
                };
                let mut w = n.value.load(SeqCst);
                loop {
                    if w & DELETED != 0 {
                        // Removed meanwhile: the next search unlinks it.
                        pending = Pending::Boxed(b);
                        continue 'attempt;
                    }
                    match n.value.compare_exchange(w, b, SeqCst, SeqCst) {
                        Ok(_) => {
                            // SAFETY: `w` was current, so it stays alive while we are pinned.
                            let old = unsafe { n.value_at(w) }.clone();
                            if w != 0 {
                                retire.retire_value(w);
                            }
                            return Ok(Some(old));
                        }
                        Err(now) => w = now,
                    }
                }
            }
            let link = match pending {
                Pending::Node(link) => link,
                Pending::Value(v) => self.alloc(key, v, height)?,
                Pending::Boxed(b) => {
                    // SAFETY: made by an earlier attempt and never published.
                    let v = unsafe { take_box::<V>(b) };
                    self.released(core::mem::size_of::<node::Boxed<V>>());
                    self.alloc(key, v, height)?
                }
            };
            pending = Pending::Node(link);
            // SAFETY: our own unpublished node.
            let n = unsafe { at::<V>(link) };
            for lvl in 0..height {
                n.next(lvl).store(path.succs[lvl], Relaxed);
            }
            // SAFETY: a live predecessor found under the caller's guard.
            let pred = unsafe { at::<V>(path.preds[0]) };
            if pred
                .next(0)
                .compare_exchange(path.succs[0], link, SeqCst, SeqCst)
                .is_err()
            {
                continue;
            }
            self.len.fetch_add(1, Relaxed);
            self.build_tower(key, link, height, &mut path, levels, retire);
            return Ok(None);
        }
    }

    /// Links a published node at levels `1..height`, giving up once it is removed; then takes
    /// its part in the retirement handshake (rule 4).
    fn build_tower(
        &self,
        key: &[u8],
        link: usize,
        height: usize,
        path: &mut Path,
        levels: usize,
        retire: &impl Retire<V>,
    ) {
        // SAFETY: our own node; it is retired only after we set BUILT below.
        let n = unsafe { at::<V>(link) };
        'levels: for lvl in 1..height {
            loop {
                if n.value.load(SeqCst) & DELETED != 0 {
                    break 'levels;
                }
                let cur = n.next(lvl).load(SeqCst);
                if cur & MARK != 0 {
                    break 'levels;
                }
                let want = path.succs[lvl];
                if cur != want
                    && n.next(lvl)
                        .compare_exchange(cur, want, SeqCst, SeqCst)
                        .is_err()
                {
                    continue;
                }
                // SAFETY: a live predecessor found under the caller's guard.
                let pred = unsafe { at::<V>(path.preds[lvl]) };
                if pred
                    .next(lvl)
                    .compare_exchange(want, link, SeqCst, SeqCst)
                    .is_ok()
                {
                    break;
                }
                self.find(key, 0, path, levels);
            }
        }
        if n.value.load(SeqCst) & DELETED != 0 {
            // Removed while we were linking: our links may postdate the remover's search.
            self.find(key, link, path, levels);
        }
        if n.state.fetch_or(BUILT, SeqCst) & UNLINKED != 0 {
            retire.retire_node(link);
        }
    }

    /// Removes `key`; returns a clone of its value.
    pub(crate) fn remove(&self, key: &[u8], retire: &impl Retire<V>) -> Option<V>
    where
        V: Clone,
    {
        let mut path = Path::new();
        loop {
            let levels = self.top.load(SeqCst);
            let found = self.find(key, 0, &mut path, levels);
            if found == 0 {
                return None;
            }
            // SAFETY: reached under the caller's guard.
            let n = unsafe { at::<V>(found) };
            let mut w = n.value.load(SeqCst);
            while w & DELETED == 0 {
                match n.value.compare_exchange(w, w | DELETED, SeqCst, SeqCst) {
                    Ok(_) => {
                        self.len.fetch_sub(1, Relaxed);
                        // SAFETY: the value word is frozen now; the node is retired only
                        // after this thread sets UNLINKED below.
                        let old = unsafe { n.value_at(w) }.clone();
                        for lvl in (0..n.height()).rev() {
                            n.next(lvl).fetch_or(MARK, SeqCst);
                        }
                        self.find(key, found, &mut path, levels.max(n.height()));
                        if n.state.fetch_or(UNLINKED, SeqCst) & BUILT != 0 {
                            retire.retire_node(found);
                        }
                        return Some(old);
                    }
                    Err(now) => w = now,
                }
            }
            // Another thread removed it first; search again (it may be back already).
        }
    }

    /// Readers' descent: at each level from the top, the last live node (or the head) whose
    /// key goes before `key` in the sense of `seek`; `on_level` sees each level's predecessor.
    /// Returns the level-0 predecessor and the link after it where the descent stopped: the
    /// first node found live and not before `key` (0 at the end of the list).
    #[inline]
    pub(crate) fn descend(
        &self,
        key: &[u8],
        seek: Seek,
        mut on_level: impl FnMut(usize, usize),
    ) -> (usize, usize) {
        let mut pred = self.head;
        // The node that ended the previous level: known not to go before `key`.
        let mut stop = 0;
        for lvl in (0..self.top()).rev() {
            // SAFETY: the head, or a node reached by links under the caller's guard.
            let mut curr = unsafe { at::<V>(pred) }.next(lvl).load(Acquire);
            while !addr::<V>(curr).is_null() && !same(curr, stop) {
                // SAFETY: as above.
                let cn = unsafe { at::<V>(curr) };
                if cn.value.load(Acquire) & DELETED == 0 {
                    if !seek.before(cn.key(), key) {
                        break;
                    }
                    pred = curr;
                }
                curr = cn.next(lvl).load(Acquire);
            }
            stop = curr & !MARK;
            on_level(lvl, pred);
        }
        (pred, stop)
    }

    /// The first node from `link` on level 0 that is live and not before `key` (per `seek`),
    /// with its value word.
    ///
    /// # Safety
    /// `link` was read under the caller's guard, which outlives the returned reference.
    #[inline]
    pub(crate) unsafe fn first_from<'g>(
        mut link: usize,
        key: &[u8],
        seek: Seek,
    ) -> Option<(&'g Node<V>, usize)> {
        loop {
            if addr::<V>(link).is_null() {
                return None;
            }
            // SAFETY: per the contract.
            let n = unsafe { at::<'g, V>(link) };
            let w = n.value.load(Acquire);
            if w & DELETED == 0 && !seek.before(n.key(), key) {
                return Some((n, w));
            }
            link = n.next(0).load(Acquire);
        }
    }

    fn alloc(&self, key: &[u8], value: V, height: usize) -> Result<usize, Error> {
        let (link, bytes) = node::alloc(key, value, height)?;
        self.bytes.fetch_add(bytes, Relaxed);
        Ok(link)
    }

    fn boxed(&self, value: V) -> usize {
        let (word, bytes) = new_box(value);
        self.bytes.fetch_add(bytes, Relaxed);
        word
    }

    fn released(&self, bytes: usize) {
        self.bytes.fetch_sub(bytes, Relaxed);
    }
}

/// Bytes of a node with a `key_len`-byte key and `height` levels.
fn link_size<V>(key_len: usize, height: usize) -> usize {
    Node::<V>::layout(key_len, height).map_or(0, |l| l.size())
}

impl<V> Drop for RawList<V> {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no other thread is inside the list. Every node still linked at
        // level 0 is owned by the list (removed ones were unlinked before being retired, and
        // retired ones belong to their reclamation closures); each is freed once.
        unsafe {
            let mut link = at::<V>(self.head).next(0).load(Relaxed);
            while !addr::<V>(link).is_null() {
                let next = at::<V>(link).next(0).load(Relaxed);
                node::free::<V>(link, true);
                link = next;
            }
            node::free::<V>(self.head, false);
        }
    }
}

// SAFETY: the list owns its nodes and values; values move between threads (`V: Send`) and are
// read from many threads at once (`V: Sync`). All shared mutation is through atomics.
unsafe impl<V: Send + Sync> Send for RawList<V> {}
// SAFETY: as above.
unsafe impl<V: Send + Sync> Sync for RawList<V> {}
