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
//! and the walk would then never meet it). The paper seeds the queue from the first node of
//! height `K` found by walking level 0; here the seek's per-level successors seed it instead
//! (one interval per level, all in cache), so the first task starts where the walk does.
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
}

impl Prefetcher {
    /// A prefetcher of depth `depth` (1..=MAX_DEPTH) for a walk about to start at
    /// `preds[0].next[0]`, where `preds[i]` is the last node before the walk's start on level
    /// `i` (or the head). The successors `preds[i].next[i]` split the way ahead into one
    /// interval per level, `(s_i, s_{i+1}, i)`, and `s_depth` starts the level-`depth` chain; so
    /// the first task starts where the walk does and nothing behind it is fetched.
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
