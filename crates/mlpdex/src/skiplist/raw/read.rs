//! Readers' typed API: lookups, seeks, the prefetching level-0 walk and the audit, each under
//! an [`epoch::Guard`](crate::epoch::Guard) whose lifetime the results borrow.
//!
//! Why that is sound: a node reached by following links from the head while a guard is pinned
//! stays allocated until the guard is dropped (rule 4 of `list`: a node is retired only once
//! unreachable, and freed only past the epoch of every guard pinned before), and its value
//! word designates a value kept alive as long (rule 5, and boxes are retired only after they
//! stopped being current). Every function here takes `&'g self` and `&'g Guard` and returns
//! data borrowed for `'g`, so neither the guard nor the list (whose drop frees the nodes
//! still linked) can go away while it is used. Readers never write shared memory (rule 3).

use core::marker::PhantomData;
use core::ops::Bound;
use core::sync::atomic::Ordering::{Acquire, Relaxed};

use super::list::{RawList, Seek, at};
use super::node::{self, DELETED, MARK, MAX_HEIGHT, Node, addr};
use super::prefetch::{MAX_DEPTH, Prefetcher};
use crate::epoch::Guard;

/// A present node read under a guard that lives for `'g`, with the value word loaded with it.
/// Made only in this module, for nodes other than the head.
pub(crate) struct Entry<'g, V> {
    node: &'g Node<V>,
    word: usize,
}

impl<V> Clone for Entry<'_, V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<V> Copy for Entry<'_, V> {}

impl<'g, V> Entry<'g, V> {
    /// The entry's key.
    #[inline(always)]
    pub(crate) fn key(self) -> &'g [u8] {
        self.node.key()
    }

    /// The entry's value, as of when the entry was read.
    #[inline(always)]
    pub(crate) fn value(self) -> &'g V {
        // SAFETY: `word` was loaded from this node's value word under the guard `'g`, the node
        // is not the head (type invariant), and the guard keeps node and value alive for `'g`
        // (module docs).
        unsafe { self.node.value_at(self.word) }
    }

    /// Key and value.
    #[inline(always)]
    pub(crate) fn pair(self) -> (&'g [u8], &'g V) {
        (self.key(), self.value())
    }
}

/// The first node from `link` on level 0 that is present and not before `key` (per `seek`).
///
/// # Safety
/// `link` was read under a guard that lives for `'g`, from the head or a node reached so.
#[inline]
unsafe fn first_from<'g, V>(mut link: usize, key: &[u8], seek: Seek) -> Option<Entry<'g, V>> {
    loop {
        if addr::<V>(link).is_null() {
            return None;
        }
        // SAFETY: per the contract; every link followed from here was read under the guard.
        let n = unsafe { at::<'g, V>(link) };
        let w = n.value.load(Acquire);
        if w & DELETED == 0 && !seek.before(n.key(), key) {
            return Some(Entry { node: n, word: w });
        }
        link = n.next(0).load(Acquire);
    }
}

impl<V> RawList<V> {
    /// The level-0 link after the head.
    #[inline(always)]
    fn first_link(&self) -> usize {
        // SAFETY: the head lives as long as the list.
        unsafe { at::<V>(self.head()) }.next(0).load(Acquire)
    }

    /// The value stored under `key`.
    #[inline]
    pub(crate) fn get<'g>(&'g self, key: &[u8], _guard: &'g Guard) -> Option<&'g V> {
        let (_, stop) = self.descend(key, Seek::Ge, |_, _| {});
        // SAFETY: `stop` was read under `_guard` by the descent.
        let e = unsafe { first_from::<V>(stop, key, Seek::Ge)? };
        (e.key() == key).then(|| e.value())
    }

    /// The first entry within `bound` from below: `≥ k`, `> k`, or the first entry.
    #[inline]
    pub(crate) fn lower_bound<'g>(
        &'g self,
        bound: Bound<&[u8]>,
        _guard: &'g Guard,
    ) -> Option<Entry<'g, V>> {
        let (key, seek, stop) = match bound {
            Bound::Included(k) => (k, Seek::Ge, self.descend(k, Seek::Ge, |_, _| {}).1),
            Bound::Excluded(k) => (k, Seek::Gt, self.descend(k, Seek::Gt, |_, _| {}).1),
            Bound::Unbounded => (&[][..], Seek::Ge, self.first_link()),
        };
        // SAFETY: `stop` was read under `_guard`.
        unsafe { first_from::<V>(stop, key, seek) }
    }

    /// The last entry within `bound` from above: `≤ k`, `< k`, or the last entry.
    pub(crate) fn upper_bound<'g>(
        &'g self,
        bound: Bound<&[u8]>,
        _guard: &'g Guard,
    ) -> Option<Entry<'g, V>> {
        let pred = match bound {
            Bound::Included(k) => self.descend(k, Seek::Gt, |_, _| {}),
            Bound::Excluded(k) => self.descend(k, Seek::Ge, |_, _| {}),
            Bound::Unbounded => self.descend(&[], Seek::Last, |_, _| {}),
        }
        .0;
        if addr::<V>(pred) == addr::<V>(self.head()) {
            return None;
        }
        // SAFETY: a node the descent reached under `_guard`.
        let n = unsafe { at::<'g, V>(pred) };
        // Present when the descent chose it; if removed since, its value word is frozen.
        let word = n.value.load(Acquire) & !DELETED;
        Some(Entry { node: n, word })
    }

    /// A walk over the present entries from the first one within `start` onwards, prefetching
    /// ahead along the towers at depth `depth` (0: no prefetching).
    pub(crate) fn walk<'g>(
        &'g self,
        start: Bound<&[u8]>,
        depth: usize,
        _guard: &'g Guard,
    ) -> Walk<'g, V> {
        debug_assert!(depth <= MAX_DEPTH);
        // The descent's predecessors at levels 0..=depth, for a list too short to reach level
        // `depth` (and for an unbounded start, where they stay the head).
        let mut preds = [self.head(); MAX_DEPTH + 1];
        let mut early: Option<Prefetcher> = None;
        let mut on_level = |lvl: usize, p: usize| {
            if depth == 0 || lvl > depth {
                return;
            }
            preds[lvl] = p;
            if lvl == depth {
                // SAFETY: `p` is on level `depth`, reached under `_guard`, which outlives the
                // walk and so the prefetcher.
                early = Some(unsafe { Prefetcher::begin::<V>(depth, p) });
            } else if let Some(pf) = &mut early {
                // SAFETY: `p` is on level `lvl`, reached under `_guard`.
                unsafe { pf.descend_level::<V>(lvl, p) };
            }
        };
        let link = match start {
            Bound::Included(k) => self.descend(k, Seek::Ge, &mut on_level).1,
            Bound::Excluded(k) => self.descend(k, Seek::Gt, &mut on_level).1,
            Bound::Unbounded => self.first_link(),
        };
        let prefetch = (depth > 0).then(|| match early {
            Some(pf) => pf,
            // SAFETY: the head or nodes reached under `_guard`, which outlives the prefetcher;
            // `preds[i]` is on level `i`.
            None => unsafe { Prefetcher::new::<V>(depth, &preds[..=depth]) },
        });
        // The walk starts where the descent stopped, a node found not before the start bound;
        // every node after it on level 0 is past the bound too.
        Walk {
            link,
            prefetch,
            _live: PhantomData,
        }
    }

    /// Checks the structure under `_guard`: every level sorted and holding only present nodes
    /// that are also on the level below, heights within the top, `len` and the byte count
    /// right. Only meaningful when no write is in flight (it then panics only on a broken
    /// list); sound at any time.
    pub(crate) fn audit(&self, _guard: &Guard) {
        let head = self.head();
        let top = self.top();
        let mut count = 0usize;
        let mut bytes = Node::<V>::size(0, MAX_HEIGHT);
        let mut below: Vec<usize> = Vec::new();
        for lvl in 0..MAX_HEIGHT {
            let mut on_level = Vec::new();
            // SAFETY: the head lives as long as the list.
            let mut link = unsafe { at::<V>(head) }.next(lvl).load(Acquire);
            let mut prev: Option<&[u8]> = None;
            while !addr::<V>(link).is_null() {
                assert!(
                    lvl < top,
                    "a node is linked at level {lvl}, above the top {top}"
                );
                // SAFETY: reached by links from the head under `_guard`.
                let n = unsafe { at::<V>(link) };
                assert!(lvl < n.height(), "node linked above its height");
                let w = n.value.load(Acquire);
                assert_eq!(
                    w & DELETED,
                    0,
                    "a removed node is still linked at level {lvl}"
                );
                let next = n.next(lvl).load(Acquire);
                assert_eq!(next & MARK, 0, "a marked link at level {lvl}");
                if let Some(p) = prev {
                    assert!(p < n.key(), "level {lvl} is not strictly increasing");
                }
                prev = Some(n.key());
                on_level.push(addr::<V>(link) as usize);
                if lvl == 0 {
                    count += 1;
                    bytes += Node::<V>::size(n.key().len(), n.height());
                    if w != 0 {
                        bytes += core::mem::size_of::<node::Boxed<V>>();
                    }
                }
                link = next;
            }
            if lvl > 0 {
                let mut it = below.iter();
                for a in &on_level {
                    assert!(it.any(|b| b == a), "a node on level {lvl} is missing below");
                }
            }
            below = on_level;
        }
        assert_eq!(count, self.len(), "len disagrees with the level-0 count");
        let counted = self.bytes.load(Relaxed);
        assert!(
            counted >= bytes,
            "byte count {counted} below the {bytes} bytes of linked nodes"
        );
    }
}

/// The present entries of level 0 in order, from where [`RawList::walk`] started, read under a
/// guard that lives for `'g`; with a prefetcher, the nodes ahead are fetched along the towers
/// (mlp-data-structures.txt §3.1).
pub(crate) struct Walk<'g, V> {
    /// The next level-0 link to look at (read under the guard).
    link: usize,
    prefetch: Option<Prefetcher>,
    _live: PhantomData<(&'g Guard, &'g Node<V>)>,
}

impl<'g, V> Walk<'g, V> {
    /// The next present entry, or `None` at the end of the list.
    #[inline]
    pub(crate) fn next(&mut self) -> Option<Entry<'g, V>> {
        loop {
            if addr::<V>(self.link).is_null() {
                return None;
            }
            // SAFETY: `link` was read under the guard `'g` (from the descent or a node reached
            // so), which keeps the node allocated for `'g`.
            let n = unsafe { at::<'g, V>(self.link) };
            if let Some(p) = &mut self.prefetch {
                // SAFETY: as above; the prefetcher's nodes were reached under the same guard.
                unsafe { p.step::<V>(self.link) };
            }
            let word = n.value.load(Acquire);
            self.link = n.next(0).load(Acquire);
            if word & DELETED == 0 {
                return Some(Entry { node: n, word });
            }
        }
    }
}
