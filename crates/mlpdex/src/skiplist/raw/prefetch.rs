//! The MLP prefetcher of mlp-data-structures.txt §3.1: a queue of `(start, end, level)` tasks
//! that keeps about `2^K` useful prefetches in flight ahead of a level-0 walk.
//!
//! A task says: `start` is (being) fetched into cache, and every node after it up to `end` on
//! level `level` still needs prefetching. Processing it (one *phase* processes every queued
//! task) reads `start.next[0..=level]`, prefetches those nodes, and queues the tasks
//! `(next[i], next[i+1], i)` for `i < level` plus `(next[level], end, level)`. A level-`K` task
//! is digested in `K` phases, so with one new level-`K` task per phase the queue settles at
//! about `2^K` tasks, each issuing one independent prefetch per phase.
//!
//! Phases run when the walk reaches the first task's start (the paper's trigger) or after `2^K`
//! steps without one (§3.2's rule for concurrent lists: a task's start may have been unlinked,
//! and the walk would then never meet it).
//!
//! The paper seeds the queue from the first node of height `K` found by walking level 0,
//! which costs up to `2^K` dependent misses before any prefetch. Here the seek feeds it
//! while it descends ([`Prefetcher::begin`], [`Prefetcher::descend_level`]): when the descent
//! leaves level `K`, the level-`K` chain from the successor there is queued; on each level
//! below, the interval from that level's successor to the previous one's is queued in front
//! and a phase runs. So the first task starts exactly where the walk does, nothing behind
//! it is fetched, and the queue's first `K` phases overlap the seek's last round trips.
//! (Measured on 4M random 8-byte keys, `K = 3`: the 19 entries after the first of a scan
//! took 1.41 µs instead of 1.75–1.92 µs.)
//!
//! Everything here is a hint: tasks only read links of nodes reached under the iterator's
//! guard (rule 4 of the list keeps them allocated), and a full queue drops tasks, losing
//! prefetches but never entries.

use core::mem::MaybeUninit;
use core::sync::atomic::Ordering::Acquire;

use super::node::{MARK, Node, addr, prefetch_link};

/// Largest prefetch depth `K` accepted.
pub(crate) const MAX_DEPTH: usize = 6;
/// Queue capacity: twice the `2^K` tasks expected at the largest depth.
const CAP: usize = 128;

/// A prefetch task: `start`'s link, and `end`'s link with the level in bits 2..=5 (link
/// words use bits 0 and 1 only; node addresses are multiples of 64).
#[derive(Clone, Copy)]
struct Task {
    start: usize,
    end_level: usize,
}

impl Task {
    #[inline(always)]
    fn new(start: usize, end: usize, level: usize) -> Task {
        debug_assert!(level <= MAX_DEPTH);
        Task {
            start,
            end_level: end | level << 2,
        }
    }

    #[inline(always)]
    fn level(self) -> usize {
        (self.end_level >> 2) & 15
    }
}

/// The prefetch state of one iterator.
pub(crate) struct Prefetcher {
    depth: usize,
    /// Ring buffer of tasks: `len` of them from `first`.
    tasks: [MaybeUninit<Task>; CAP],
    first: usize,
    len: usize,
    /// A node of height above `depth` up to which level-`depth` tasks were queued (0: none).
    furthest: usize,
    /// Steps left before a phase is forced.
    countdown: usize,
    /// The first task's start (0 when the queue is empty): reaching it triggers a phase.
    head_start: usize,
    /// While a seek feeds the prefetcher: the start of the nearest interval queued so far.
    seed_end: usize,
}

impl Prefetcher {
    /// A prefetcher of depth `depth` (1..=MAX_DEPTH) for a walk about to start at
    /// `preds[0].next[0]`, where `preds[i]` is the last node before the walk's start on level
    /// `i` (or the head). The successors `preds[i].next[i]` split the way ahead into one
    /// interval per level, `(s_i, s_{i+1}, i)`, and `s_depth` starts the level-`depth` chain; so
    /// the first task starts where the walk does and nothing behind it is fetched. Used when
    /// no descent fed a prefetcher: an unbounded start (every `preds[i]` is the head) or a list
    /// whose towers do not reach level `depth`.
    ///
    /// # Safety
    /// Every `preds[i]` (and everything reachable from it) stays allocated while the
    /// prefetcher is used: they were reached under the guard that the walk holds.
    pub(crate) unsafe fn new<V>(depth: usize, preds: &[usize]) -> Prefetcher {
        debug_assert!((1..=MAX_DEPTH).contains(&depth) && preds.len() == depth + 1);
        let mut p = Prefetcher {
            depth,
            tasks: [MaybeUninit::uninit(); CAP],
            first: 0,
            len: 0,
            furthest: 0,
            countdown: 1 << depth,
            head_start: 0,
            seed_end: 0,
        };
        let succ = |i: usize| {
            // SAFETY: per the contract; `preds[i]` is on level `i`, so its height exceeds `i`.
            let n: &Node<V> = unsafe { &*addr::<V>(preds[i]) };
            n.next(i).load(Acquire) & !MARK
        };
        let mut prev = succ(0);
        for i in 1..=depth {
            let s = succ(i);
            p.push(Task::new(prev, s, i - 1));
            prev = s;
        }
        p.furthest = prev;
        // SAFETY: per the contract.
        unsafe { p.extend::<V>() };
        p.head_start = p.peek_start();
        p
    }

    /// A prefetcher started *during* a seek, when its descent has finished level `depth` with
    /// predecessor `pred`: the level-`depth` chain from `pred`'s successor (a node past the
    /// walk's start) is queued at once, and [`descend_level`](Self::descend_level) adds the
    /// nearer intervals and runs one phase per level the descent still goes down. The first
    /// `depth` phases so overlap the seek's own last round trips instead of following them.
    ///
    /// # Safety
    /// As for [`new`](Self::new), with `pred` on level `depth`.
    pub(crate) unsafe fn begin<V>(depth: usize, pred: usize) -> Prefetcher {
        debug_assert!((1..=MAX_DEPTH).contains(&depth));
        // SAFETY: per the contract; `pred` is on level `depth`, so its height exceeds it.
        let pn: &Node<V> = unsafe { &*addr::<V>(pred) };
        let s = pn.next(depth).load(Acquire) & !MARK;
        let mut p = Prefetcher {
            depth,
            tasks: [MaybeUninit::uninit(); CAP],
            first: 0,
            len: 0,
            furthest: s,
            countdown: 1 << depth,
            head_start: 0,
            seed_end: s,
        };
        // SAFETY: per the contract.
        unsafe { p.extend::<V>() };
        p.head_start = p.peek_start();
        p
    }

    /// The seek has finished level `lvl < depth` with predecessor `pred`: queue the interval
    /// from `pred`'s successor on that level to the previous level's, in front (it is nearer
    /// the walk's start than everything queued), and run a phase.
    ///
    /// # Safety
    /// As for [`new`](Self::new), with `pred` on level `lvl`.
    pub(crate) unsafe fn descend_level<V>(&mut self, lvl: usize, pred: usize) {
        debug_assert!(lvl < self.depth);
        // SAFETY: per the contract.
        let pn: &Node<V> = unsafe { &*addr::<V>(pred) };
        let s = pn.next(lvl).load(Acquire) & !MARK;
        self.push_front(Task::new(s, self.seed_end, lvl));
        self.seed_end = s;
        // SAFETY: per the contract.
        unsafe { self.phase::<V>() };
    }

    /// Called with each node the walk steps onto; runs a phase when due.
    ///
    /// # Safety
    /// As for [`new`](Self::new): `current` and all queued nodes stay allocated.
    #[inline(always)]
    pub(crate) unsafe fn step<V>(&mut self, current: usize) {
        self.countdown -= 1;
        if self.countdown == 0 || addr::<V>(self.head_start) == addr::<V>(current) {
            // SAFETY: per the contract.
            unsafe { self.phase::<V>() };
        }
    }

    fn peek_start(&self) -> usize {
        if self.len == 0 {
            return 0;
        }
        // SAFETY: slot `first` is initialized when `len > 0`.
        unsafe { self.tasks[self.first].assume_init() }.start
    }

    fn push_front(&mut self, t: Task) {
        if self.len < CAP {
            self.first = (self.first + CAP - 1) % CAP;
            self.tasks[self.first] = MaybeUninit::new(t);
            self.len += 1;
        }
    }

    #[inline(always)]
    fn push(&mut self, t: Task) {
        if self.len < CAP {
            self.tasks[(self.first + self.len) % CAP] = MaybeUninit::new(t);
            self.len += 1;
        }
    }

    /// One phase: process every queued task, then queue the next level-`depth` interval.
    ///
    /// # Safety
    /// As for [`new`](Self::new).
    #[inline(never)]
    unsafe fn phase<V>(&mut self) {
        self.countdown = 1 << self.depth;
        for _ in 0..self.len {
            // SAFETY: the first `len` slots from `first` are initialized.
            let t = unsafe { self.tasks[self.first].assume_init() };
            self.first = (self.first + 1) % CAP;
            self.len -= 1;
            if addr::<V>(t.start).is_null() || addr::<V>(t.start) == addr::<V>(t.end_level) {
                continue;
            }
            let level = t.level();
            // SAFETY: reached under the walk's guard; its height exceeds `level` (it was
            // reached on level `level`).
            let s = unsafe { &*addr::<V>(t.start) };
            let mut prev = s.next(0).load(Acquire) & !MARK;
            prefetch_link(prev);
            for i in 1..=level {
                let nx = s.next(i).load(Acquire) & !MARK;
                prefetch_link(nx);
                self.push(Task::new(prev, nx, i - 1));
                prev = nx;
            }
            self.push(Task {
                start: prev,
                end_level: t.end_level,
            });
        }
        // SAFETY: per the contract.
        unsafe { self.extend::<V>() };
        self.head_start = self.peek_start();
    }

    /// Queues the next level-`depth` interval, from `furthest` to its level-`depth` successor,
    /// and prefetches that successor.
    ///
    /// # Safety
    /// As for [`new`](Self::new).
    #[inline(always)]
    unsafe fn extend<V>(&mut self) {
        if !addr::<V>(self.furthest).is_null() {
            // SAFETY: reached under the walk's guard; its height exceeds `depth`.
            let f: &Node<V> = unsafe { &*addr::<V>(self.furthest) };
            let nx = f.next(self.depth).load(Acquire) & !MARK;
            prefetch_link(nx);
            self.push(Task::new(self.furthest, nx, self.depth));
            self.furthest = nx;
        }
    }
}
