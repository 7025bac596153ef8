//! The copy a resize makes, split so that several threads can share it: *walkers* read
//! subtrees of the old table into runs of [`Rec`]s (entries with their hashes in the new table,
//! in preorder), and one *builder*, the resizing thread, inserts the runs into the new table in
//! key order.
//!
//! The trie's top levels (down to [`SPLIT`] nodes deep) are walked first; each node one level
//! below becomes a [`Task`] whose subtree is walked separately. The builder takes the tasks in
//! order. A task nobody has claimed yet it walks itself, streaming
//! the run straight into the new table; one a helper is walking it waits for. Helpers are
//! writers of the concurrent map that find the table frozen by this resize: instead of only
//! waiting, they claim tasks ahead of the builder (from [`LEAD`] to [`WINDOW`] ahead: the
//! builder walks the next ones itself when a helper falls behind, and the window bounds the
//! memory helpers' runs hold) and walk them. So with two threads the walk of the old table and
//! the insertion into the new one overlap.
//!
//! Only the builder writes the new table (it is not shared yet), so the insertion needs no
//! locks; walkers only read the frozen old one. A failed insertion (the new table is full)
//! ends the migration: helpers stop, and the resize starts over with a larger table.
//!
//! The builder also prefetches: every record carries its new hash, so the buckets it will
//! insert into [`AHEAD`] records later are requested before they are needed (the old
//! single-pass copy knew each hash only just before its insertion). It links each leaf to the
//! next, and each internal node to its subtree's greatest leaf, by storing into the slot it
//! inserted the entry at, unless a cuckoo relocation has happened since ([`Table::moves`]):
//! only then does it find the entry again.

use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use core::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::super::table::{Ent, FrozenRead, Full, Hasher, JUMP, LEAF, Loc, REGULAR, Slot, Table};
use super::{RawTrie, broken};
use crate::sync::AtomicU8;

/// Frames on the walk's stack (the root's included) above which a node becomes a task. With
/// 5-bit symbols that is up to 33³ tasks: about 300 entries each for 10M random keys.
const SPLIT: usize = 3;
/// Tasks a helper may walk ahead of the builder.
const WINDOW: usize = 32;
/// Tasks right ahead of the builder that helpers leave to it.
const LEAD: usize = 2;
/// Records a walker that streams into the builder collects before handing them over.
const FLUSH: usize = 1024;
/// How many records ahead the builder prefetches the new table's buckets.
const AHEAD: usize = 16;
/// Children (of one node) whose old buckets a walk keeps in flight.
const WALK_WINDOW: u32 = 8;

/// What the builder does with one record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    /// Insert a leaf under the current node and link it after the previous leaf.
    Leaf,
    /// Insert a regular node under the current node and descend into it.
    Node,
    /// Insert the regular node that ends a chain of jump nodes (its jumps follow, last first).
    ChainEnd,
    /// Insert a jump node of the current chain above the entry inserted before it.
    Jump,
    /// As `Jump`, for the chain's first jump node (the current node's child): descend into the
    /// chain's end.
    FirstJump,
    /// Leave the current node: its subtree's greatest leaf is the previous one.
    Close,
    /// Insert the run of this task (the current node's children, in preorder).
    Task(u32),
}

/// One entry to insert (or a step of the walk's structure), with its hash in the new table.
#[derive(Clone, Copy, Debug)]
struct Rec {
    /// The entry without its table position: tag, color, side and parent color are set when
    /// it is inserted.
    ent: Ent,
    /// The full hash of the node's name in the new table.
    nh: u32,
    op: Op,
}

impl Rec {
    fn close() -> Rec {
        Rec {
            ent: Ent::EMPTY,
            nh: 0,
            op: Op::Close,
        }
    }
}

/// A node whose children a walk still has to visit: `oha`/`nha` are `mul_a` of its hash in the
/// old and new table (a child's hash is one addition away), `oc` its color in the old table,
/// `rem` its children not visited yet.
#[derive(Clone, Copy, Debug)]
struct Frame {
    oha: u64,
    oc: u8,
    nha: u64,
    rem: u64,
}

impl Frame {
    /// The frame of regular node `e`, whose name hashes to `oh` in the old table (`ohs`) and
    /// `nh` in the new one (`nhs`).
    fn of(e: Ent, (ohs, oh): (&Hasher, u64), (nhs, nh): (&Hasher, u64)) -> Frame {
        Frame {
            oha: ohs.mul_a(oh),
            oc: e.color(),
            nha: nhs.mul_a(nh),
            rem: e.bitmap(),
        }
    }
}

/// Task states.
const FREE: u8 = 0;
const CLAIMED: u8 = 1;
const WALKED: u8 = 2;

/// One subtree to walk: the node's frame, and the run once a helper has walked it.
///
/// The hand-off: whoever moves `state` from `FREE` to `CLAIMED` walks the task (a helper, or
/// the builder, which then streams the run itself). A helper stores the run and then `WALKED`
/// (release); the builder, finding the task claimed by another, waits for `WALKED` (acquire)
/// before it takes the run. So each task is walked once, and the builder sees the whole run.
/// The mutex only gives the run a place to live: the state orders the accesses, so it is
/// never contended. (Loom model at the end of this file.)
struct Task {
    frame: Frame,
    state: AtomicU8,
    run: RunSlot,
}

/// Where a helper leaves a run: a mutex, loom's in the models (so that they see its accesses).
#[cfg(not(all(test, mlpdex_loom)))]
type RunSlot = Mutex<Vec<Rec>>;
#[cfg(all(test, mlpdex_loom))]
type RunSlot = crate::sync::loom::sync::Mutex<Vec<Rec>>;

impl Task {
    fn new(frame: Frame) -> Task {
        Task {
            frame,
            state: AtomicU8::new(FREE),
            run: RunSlot::new(Vec::new()),
        }
    }

    /// Claims the task for walking; false when another thread has.
    fn claim(&self) -> bool {
        self.state
            .compare_exchange(FREE, CLAIMED, Acquire, Relaxed)
            .is_ok()
    }

    /// Hands the run of a task this thread claimed to the builder.
    fn hand_over(&self, run: Vec<Rec>) {
        *self.run.lock().unwrap_or_else(PoisonError::into_inner) = run;
        self.state.store(WALKED, Release);
    }

    /// The run of a task another thread claimed, once it has handed it over.
    fn wait_for_run(&self) -> Vec<Rec> {
        let mut spins = 0u32;
        while self.state.load(Acquire) != WALKED {
            wait(&mut spins);
        }
        core::mem::take(&mut *self.run.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// A running copy, shared with helpers through the map's [`Lobby`].
pub(crate) struct Migration {
    /// Address of the trie being copied: helpers of another trie stay out.
    old: usize,
    /// The new table's hash function.
    hasher: Hasher,
    tasks: Box<[Task]>,
    /// The next task a helper tries to claim.
    next: AtomicUsize,
    /// Tasks the builder has taken; helpers stay within [`WINDOW`] of it.
    taken: AtomicUsize,
    /// The builder is done or gave up: helpers leave.
    over: AtomicBool,
}

impl Migration {
    /// Claims and walks tasks ahead of the builder until none is left (or the copy is over).
    /// Called by a thread that has no session open, under a guard that keeps `old` alive.
    fn help(&self, old: &RawTrie) {
        debug_assert_eq!(self.old, old as *const RawTrie as usize);
        let _frozen = old.table.is_shared().then(FrozenRead::begin);
        let mut spins = 0u32;
        let mut cap = 0;
        loop {
            if self.over.load(Acquire) {
                return;
            }
            let taken = self.taken.load(Acquire);
            let n = self.next.load(Relaxed);
            // Stay LEAD tasks ahead of the builder: the ones right in front of it, it walks
            // itself rather than wait for a walk under way.
            let i = n.max(taken + LEAD);
            if i >= self.tasks.len() {
                return;
            }
            if i >= taken + WINDOW {
                // Far enough ahead: wait for the builder.
                wait(&mut spins);
                continue;
            }
            spins = 0;
            if self
                .next
                .compare_exchange(n, i + 1, Relaxed, Relaxed)
                .is_err()
            {
                continue;
            }
            let task = &self.tasks[i];
            if !task.claim() {
                // The builder got there first.
                continue;
            }
            // Sized like the last run, so that pushing rarely reallocates.
            let mut run = Vec::with_capacity(cap + cap / 4);
            old.walk(
                &self.hasher,
                task.frame,
                usize::MAX,
                &mut run,
                &mut Vec::new(),
                &mut |_| Ok(()),
            )
            .expect("collecting a run never fails");
            cap = run.len();
            task.hand_over(run);
        }
    }
}

/// Where a concurrent map's resize posts its [`Migration`] for the writers that wait on it.
#[derive(Default)]
pub(crate) struct Lobby(Mutex<Option<Arc<Migration>>>);

impl Lobby {
    fn post(&self, m: Option<Arc<Migration>>) {
        *lock(&self.0) = m;
    }

    /// Helps the migration of `trie` running now, if there is one (then returns true, once
    /// no task is left to claim). The caller has no session open and holds a guard under which
    /// `trie` was loaded.
    pub(crate) fn help(&self, trie: &RawTrie) -> bool {
        let m = lock(&self.0).clone();
        match m {
            Some(m) if m.old == trie as *const RawTrie as usize => {
                m.help(trie);
                true
            }
            _ => false,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks leaves nothing half-changed.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One step of waiting on another thread of the migration.
fn wait(spins: &mut u32) {
    #[cfg(all(test, mlpdex_loom))]
    crate::sync::loom::thread::yield_now();
    if *spins < 64 {
        core::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
    *spins += 1;
}

impl RawTrie {
    /// Copies the trie into `new` (empty, unshared), with helpers from `lobby` if given.
    /// Returns the root's and the first leaf's locators. The caller reads the old table as
    /// frozen (or unshared).
    pub(super) fn migrate_into(
        &self,
        new: &Table,
        lobby: Option<&Lobby>,
    ) -> Result<(Loc, Loc), Full> {
        let old = &self.table;
        let oroot = old.get(self.root);
        let root_frame = Frame {
            oha: 0,
            oc: self.root.color,
            nha: 0,
            rem: oroot.bitmap(),
        };
        let mut top = Vec::new();
        let mut frames = Vec::new();
        self.walk(
            &new.hasher,
            root_frame,
            SPLIT,
            &mut top,
            &mut frames,
            &mut |_| Ok(()),
        )?;
        let m = Arc::new(Migration {
            old: self as *const RawTrie as usize,
            hasher: new.hasher.clone(),
            tasks: frames.into_iter().map(Task::new).collect(),
            next: AtomicUsize::new(0),
            taken: AtomicUsize::new(0),
            over: AtomicBool::new(false),
        });
        let helped = lobby.filter(|_| !m.tasks.is_empty());
        if let Some(l) = helped {
            l.post(Some(Arc::clone(&m)));
        }
        let built = self.build(new, oroot.bitmap(), &top, &m);
        m.over.store(true, Release);
        if let Some(l) = helped {
            l.post(None);
        }
        built
    }

    /// The builder's side of [`migrate_into`](Self::migrate_into).
    fn build(
        &self,
        new: &Table,
        root_bitmap: u64,
        top: &[Rec],
        m: &Migration,
    ) -> Result<(Loc, Loc), Full> {
        let root_ent = Ent::regular(0, 0, root_bitmap, Loc::NULL).with_by_color(true);
        let mut b = Builder {
            new,
            stack: Vec::new(),
            pending: Vec::new(),
            prev: None,
            head: Loc::NULL,
            child: 0,
            chain_end: (0, 0),
        };
        let root = b.insert(0, root_ent)?;
        b.stack.push((root.loc.color, 0));
        b.pending.push(root);
        let mut own = Vec::with_capacity(FLUSH);
        for seg in top.split_inclusive(|r| matches!(r.op, Op::Task(_))) {
            let (recs, task) = match seg.split_last() {
                Some((
                    &Rec {
                        op: Op::Task(i), ..
                    },
                    recs,
                )) => (recs, Some(i as usize)),
                _ => (seg, None),
            };
            b.feed(recs)?;
            let Some(i) = task else { continue };
            let t = &m.tasks[i];
            m.taken.store(i + 1, Release);
            if t.claim() {
                own.clear();
                self.walk(
                    &m.hasher,
                    t.frame,
                    usize::MAX,
                    &mut own,
                    &mut Vec::new(),
                    &mut |run| {
                        let r = b.feed(run);
                        run.clear();
                        r
                    },
                )?;
                b.feed(&own)?;
            } else {
                b.feed(&t.wait_for_run())?;
            }
        }
        while let Some((_, pstart)) = b.stack.pop() {
            b.close(pstart);
        }
        Ok((root.loc, b.head))
    }

    /// Walks the subtree below `start` in preorder into `out` (handing full batches to `flush`,
    /// which may empty `out`), with the nodes' hashes in the table of `nh`. A node that would
    /// sit deeper than `split` frames becomes a task: its frame goes to `tasks`, and `out` gets
    /// its entry, a [`Op::Task`] and a [`Op::Close`] instead of its subtree.
    fn walk(
        &self,
        nh: &Hasher,
        start: Frame,
        split: usize,
        out: &mut Vec<Rec>,
        tasks: &mut Vec<Frame>,
        flush: &mut dyn FnMut(&mut Vec<Rec>) -> Result<(), Full>,
    ) -> Result<(), Full> {
        let old = &self.table;
        let oh = &old.hasher;
        let warm = |oha: u64, mut rem: u64| {
            for _ in 0..WALK_WINDOW {
                if rem == 0 {
                    break;
                }
                old.prefetch(oh.child(oha, rem.trailing_zeros()));
                rem &= rem - 1;
            }
        };
        // Pushes the frame of a node just written to `out`, or makes it a task.
        let descend =
            |stack: &mut Vec<Frame>, out: &mut Vec<Rec>, tasks: &mut Vec<Frame>, f: Frame| {
                if stack.len() >= split {
                    out.push(Rec {
                        ent: Ent::EMPTY,
                        nh: 0,
                        op: Op::Task(tasks.len() as u32),
                    });
                    out.push(Rec::close());
                    tasks.push(f);
                } else {
                    warm(f.oha, f.rem);
                    stack.push(f);
                }
            };
        warm(start.oha, start.rem);
        let mut stack = vec![start];
        let mut chain: Vec<(Ent, u64, u32)> = Vec::new();
        while let Some(f) = stack.last_mut() {
            if out.len() >= FLUSH {
                flush(out)?;
            }
            if f.rem == 0 {
                stack.pop();
                if !stack.is_empty() {
                    out.push(Rec::close());
                }
                continue;
            }
            let c = f.rem.trailing_zeros();
            f.rem &= f.rem - 1;
            // Keep the old bucket of the child WALK_WINDOW places ahead in flight (the walk is
            // otherwise a chain of dependent misses).
            let mut ahead = f.rem;
            for _ in 1..WALK_WINDOW {
                ahead &= ahead.wrapping_sub(1);
            }
            if ahead != 0 {
                old.prefetch(oh.child(f.oha, ahead.trailing_zeros()));
            }
            let (ohc, nhc, oc) = (oh.child(f.oha, c), nh.child(f.nha, c), f.oc);
            let Some((_, ce)) = old.find_by_parent(ohc, c, oc) else {
                broken("a child bit without its child")
            };
            match ce.kind() {
                LEAF => out.push(Rec {
                    ent: Ent::leaf(c, 0, ce.rec(), ce.key_len(), Loc::NULL),
                    nh: nhc as u32,
                    op: Op::Leaf,
                }),
                REGULAR => {
                    out.push(Rec {
                        ent: Ent::regular(c, 0, ce.bitmap(), Loc::NULL),
                        nh: nhc as u32,
                        op: Op::Node,
                    });
                    let child = Frame::of(ce, (oh, ohc), (nh, nhc));
                    descend(&mut stack, out, tasks, child);
                }
                _ => {
                    // A chain of jump nodes down to a regular node: the builder inserts the
                    // regular node first and the jumps from the last up, so each knows its
                    // child's color.
                    chain.clear();
                    let (mut e, mut ohh, mut nhh, mut last) = (ce, ohc, nhc, c);
                    let r = loop {
                        chain.push((e, nhh, last));
                        let (s, k) = e.jump_syms();
                        for &x in &s[..k] {
                            ohh = oh.step(ohh, x);
                            nhh = nh.step(nhh, x);
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
                    out.push(Rec {
                        ent: Ent::regular(last, 0, r.bitmap(), Loc::NULL).with_by_color(true),
                        nh: nhh as u32,
                        op: Op::ChainEnd,
                    });
                    for (k, &(je, jh, js)) in chain.iter().enumerate().rev() {
                        let (s, n) = je.jump_syms();
                        out.push(Rec {
                            ent: Ent::jump(js, 0, &s[..n], 0, Loc::NULL),
                            nh: jh as u32,
                            op: if k == 0 { Op::FirstJump } else { Op::Jump },
                        });
                    }
                    let end = Frame::of(r, (oh, ohh), (nh, nhh));
                    descend(&mut stack, out, tasks, end);
                }
            }
        }
        Ok(())
    }
}

/// An entry the builder inserted and will patch: its locator, and its slot while the table's
/// [`moves`](Table::moves) still equal the count taken with it.
#[derive(Clone, Copy)]
struct Placed {
    loc: Loc,
    slot: Slot,
    moves: usize,
}

/// The builder's state: the path of nodes from the root to the current one, as their colors
/// in the new table and where their subtree's internal nodes start in `pending` (which wait
/// for their subtree's greatest leaf), the last leaf inserted, and the chain being inserted.
struct Builder<'t> {
    new: &'t Table,
    stack: Vec<(u8, usize)>,
    pending: Vec<Placed>,
    prev: Option<Placed>,
    head: Loc,
    /// Color of the entry a chain's next jump node points at.
    child: u8,
    /// The chain's end: its color and `pending` start, pushed once its first jump is in.
    chain_end: (u8, usize),
}

impl Builder<'_> {
    fn insert(&self, nh: u64, e: Ent) -> Result<Placed, Full> {
        let (loc, slot) = self.new.insert_at(nh, e)?;
        Ok(Placed {
            loc,
            slot,
            moves: self.new.moves(),
        })
    }

    /// Points the entry `p` at `next`: straight into its slot unless a cuckoo relocation may
    /// have moved it since (then found by locator).
    fn link(&self, p: Placed, next: Loc) {
        if p.moves == self.new.moves() {
            self.new.set_loc_at(p.slot, next);
        } else {
            // The new table is not shared yet: its entries are where the builder put them.
            self.new
                .update(p.loc, |e| e.set_loc(next))
                .expect("an unshared table is never torn");
        }
    }

    /// Closes the nodes from `pending[pstart]` on: their subtree's greatest leaf is the last
    /// one inserted.
    fn close(&mut self, pstart: usize) {
        let max = self.prev.map_or(Loc::NULL, |p| p.loc);
        for i in pstart..self.pending.len() {
            self.link(self.pending[i], max);
        }
        self.pending.truncate(pstart);
    }

    /// Inserts a run of records.
    fn feed(&mut self, recs: &[Rec]) -> Result<(), Full> {
        let new = self.new;
        for a in recs.iter().take(AHEAD) {
            new.prefetch(a.nh.into());
        }
        for (k, r) in recs.iter().enumerate() {
            if let Some(a) = recs.get(k + AHEAD) {
                new.prefetch(a.nh.into());
            }
            let parent = self.stack.last().map_or(0, |p| p.0);
            let nh = u64::from(r.nh);
            match r.op {
                Op::Leaf => {
                    let mut e = r.ent;
                    e.set_pcolor(parent);
                    let l = self.insert(nh, e)?;
                    match self.prev {
                        None => self.head = l.loc,
                        Some(p) => self.link(p, l.loc),
                    }
                    self.prev = Some(l);
                }
                Op::Node => {
                    let mut e = r.ent;
                    e.set_pcolor(parent);
                    let l = self.insert(nh, e)?;
                    self.stack.push((l.loc.color, self.pending.len()));
                    self.pending.push(l);
                }
                Op::ChainEnd => {
                    let l = self.insert(nh, r.ent)?;
                    self.chain_end = (l.loc.color, self.pending.len());
                    self.child = l.loc.color;
                    self.pending.push(l);
                }
                Op::Jump | Op::FirstJump => {
                    let first = r.op == Op::FirstJump;
                    let (s, n) = r.ent.jump_syms();
                    let pc = if first { parent } else { 0 };
                    let e = Ent::jump(r.ent.sym(), pc, &s[..n], self.child, Loc::NULL)
                        .with_by_color(!first);
                    let l = self.insert(nh, e)?;
                    self.child = l.loc.color;
                    self.pending.push(l);
                    if first {
                        self.stack.push(self.chain_end);
                    }
                }
                Op::Close => {
                    let (_, pstart) = self.stack.pop().expect("a close matches an open node");
                    self.close(pstart);
                }
                Op::Task(_) => unreachable!("tasks are resolved before feeding"),
            }
        }
        Ok(())
    }
}

#[cfg(all(test, mlpdex_loom))]
mod loom_models {
    use std::sync::Arc;

    use super::*;
    use crate::sync::loom;

    fn run_of(i: u32) -> Vec<Rec> {
        vec![
            Rec {
                ent: Ent::EMPTY,
                nh: i,
                op: Op::Leaf,
            },
            Rec::close(),
        ]
    }

    /// A helper and the builder race for two tasks: every task is walked exactly once, by
    /// whichever claimed it, and the builder gets each run whole and in order.
    #[test]
    fn loom_model_task_runs_reach_the_builder_whole_and_once() {
        loom::model(|| {
            let frame = Frame {
                oha: 0,
                oc: 0,
                nha: 0,
                rem: 0,
            };
            let tasks = Arc::new([Task::new(frame), Task::new(frame)]);
            let walks = Arc::new(loom::sync::atomic::AtomicUsize::new(0));
            let helper = {
                let (tasks, walks) = (Arc::clone(&tasks), Arc::clone(&walks));
                loom::thread::spawn(move || {
                    for (i, t) in tasks.iter().enumerate() {
                        if t.claim() {
                            walks.fetch_add(1, Relaxed);
                            t.hand_over(run_of(i as u32));
                        }
                    }
                })
            };
            for (i, t) in tasks.iter().enumerate() {
                let run = if t.claim() {
                    walks.fetch_add(1, Relaxed);
                    run_of(i as u32)
                } else {
                    t.wait_for_run()
                };
                assert_eq!(run.len(), 2, "task {i}: a run handed over in part");
                assert_eq!(run[0].nh, i as u32, "task {i}: another task's run");
            }
            helper.join().expect("helper");
            assert_eq!(walks.load(Relaxed), 2, "a task walked twice or never");
        });
    }
}
