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
    /// below `key`, and `succs[i]` the link that followed it. With `target` set, equal keys
    /// other than `target` count as smaller, so the search passes every node of that key and
    /// `target` (removed) is unlinked wherever it is still linked. Returns the live level-0
    /// node holding `key` (0 if none; always 0 with a target).
    pub(crate) fn find(&self, key: &[u8], target: usize, path: &mut Path, levels: usize) -> usize {
        'retry: loop {
            let mut pred = self.head;
            let mut found = 0;
            for lvl in (0..levels).rev() {
                // SAFETY: the head, or a node reached by links under the caller's guard.
                let mut pn = unsafe { at::<V>(pred) };
                let mut curr = pn.next(lvl).load(SeqCst);
                loop {
                    if curr & MARK != 0 {
                        // `pred` is being unlinked: it can no longer be a predecessor.
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
                        // CAS `pred` changed under us: continue from its new successor (the
                        // loop top restarts if `pred` itself is now marked).
                        let succ = cn.next(lvl).fetch_or(MARK, SeqCst) & !MARK;
                        curr = match pn.next(lvl).compare_exchange(curr, succ, SeqCst, SeqCst) {
                            Ok(_) => succ,
                            Err(now) => now,
                        };
                        continue;
                    }
                    let ck = cn.key();
                    if ck < key || (target != 0 && ck == key && !same(curr, target)) {
                        pred = curr;
                        pn = cn;
                        curr = succ;
                        continue;
                    }
                    if lvl == 0 && target == 0 && ck == key {
                        found = curr;
                    }
                    break;
                }
                path.preds[lvl] = pred;
                path.succs[lvl] = curr;
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
    /// Returns the level-0 predecessor.
    #[inline]
    pub(crate) fn descend(
        &self,
        key: &[u8],
        seek: Seek,
        mut on_level: impl FnMut(usize, usize),
    ) -> usize {
        let mut pred = self.head;
        for lvl in (0..self.top()).rev() {
            // SAFETY: the head, or a node reached by links under the caller's guard.
            let mut curr = unsafe { at::<V>(pred) }.next(lvl).load(Acquire);
            while !addr::<V>(curr).is_null() {
                // SAFETY: as above.
                let cn = unsafe { at::<V>(curr) };
                let succ = cn.next(lvl).load(Acquire);
                if cn.value.load(Acquire) & DELETED == 0 {
                    let before = match seek {
                        Seek::Ge => cn.key() < key,
                        Seek::Gt => cn.key() <= key,
                        Seek::Last => true,
                    };
                    if !before {
                        break;
                    }
                    pred = curr;
                }
                curr = succ;
            }
            on_level(lvl, pred);
        }
        pred
    }

    /// The first present node at or after `link` on level 0, with its value word.
    ///
    /// # Safety
    /// `link` was read under the caller's guard, which outlives the returned reference.
    #[inline]
    pub(crate) unsafe fn live_from<'g>(mut link: usize) -> Option<(&'g Node<V>, usize)> {
        loop {
            if addr::<V>(link).is_null() {
                return None;
            }
            // SAFETY: per the contract.
            let n = unsafe { at::<'g, V>(link) };
            let w = n.value.load(Acquire);
            if w & DELETED == 0 {
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
