//! The gate between readers' sections and the writer's restructurings.
//!
//! A reader reads the prefix table and the leaf table only inside a *section*; the writer
//! changes them only while the gate is *closed* and no section is under way. A section
//! announces itself in one of [`SLOTS`] counters (a thread's own, on a line of its own, so
//! readers on different threads write no common line), then checks that the gate is open; the
//! writer closes the gate, then waits for every counter to drain. This is Dekker's pattern:
//! each side writes its own flag, then reads the other's (all sequentially consistent), so at
//! least one of them sees the other. Either the writer sees the section and waits for its end
//! (whose release makes the section's reads happen before the writer's changes), or the
//! reader sees the gate closed and steps back out before reading anything, to wait for it to
//! open (the opening's release makes the writer's changes visible to the section that then
//! begins).
//!
//! Only one thread closes the gate at a time (the map's writer lock). Readers never wait for
//! each other; they wait only while the gate is closed.

use core::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};

use crate::sync::{AtomicBool, AtomicUsize};

/// Section counters. Threads share a counter when there are more of them (it counts, so that
/// is still correct); the writer reads every counter when it closes the gate.
#[cfg(not(all(test, mlpdex_loom)))]
pub(crate) const SLOTS: usize = 32;
/// Fewer in the loom models, whose writer would otherwise explore 32 counters' interleavings.
#[cfg(all(test, mlpdex_loom))]
pub(crate) const SLOTS: usize = 4;

/// A counter on a line pair of its own (the adjacent-line prefetcher pairs lines).
#[repr(align(128))]
struct Slot(AtomicUsize);

/// See the module docs.
pub(crate) struct Gate {
    closed: AtomicBool,
    slots: [Slot; SLOTS],
}

/// The fence that makes loom treat a sequentially consistent load as one (loom models such
/// loads as acquire loads only; see [`crate::sync::Word::load_sc`]). The real atomics need
/// none: the store-then-load patterns here use sequentially consistent operations on both
/// sides.
#[inline(always)]
fn sc_fence() {
    #[cfg(all(test, mlpdex_loom))]
    crate::sync::loom::sync::atomic::fence(SeqCst);
}

/// Waits a little while `cond` holds (spinning, then yielding to the other threads).
#[inline]
fn wait_while(mut cond: impl FnMut() -> bool) {
    let mut spins = 0u32;
    while cond() {
        if cfg!(all(test, mlpdex_loom)) {
            #[cfg(all(test, mlpdex_loom))]
            crate::sync::loom::thread::yield_now();
        } else if spins < 64 {
            core::hint::spin_loop();
            spins += 1;
        } else {
            std::thread::yield_now();
        }
    }
}

impl Gate {
    pub(crate) fn new() -> Self {
        Gate {
            closed: AtomicBool::new(false),
            slots: core::array::from_fn(|_| Slot(AtomicUsize::new(0))),
        }
    }

    /// Begins a section on counter `slot % SLOTS`, once the gate is open.
    #[inline]
    pub(crate) fn enter(&self, slot: usize) {
        let c = &self.slots[slot % SLOTS].0;
        loop {
            c.fetch_add(1, SeqCst);
            sc_fence();
            if !self.closed.load(SeqCst) {
                return;
            }
            c.fetch_sub(1, Release);
            wait_while(|| self.closed.load(Acquire));
        }
    }

    /// Ends the section begun on `slot`.
    #[inline]
    pub(crate) fn leave(&self, slot: usize) {
        self.slots[slot % SLOTS].0.fetch_sub(1, Release);
    }

    /// Closes the gate and waits until no section is under way. One closer at a time.
    pub(crate) fn close(&self) {
        debug_assert!(!self.closed.load(Relaxed), "the gate is already closed");
        self.closed.store(true, SeqCst);
        sc_fence();
        for s in &self.slots {
            wait_while(|| s.0.load(SeqCst) != 0);
        }
    }

    /// Opens the gate again.
    pub(crate) fn open(&self) {
        self.closed.store(false, Release);
    }
}

#[cfg(all(test, mlpdex_loom))]
mod loom_model {
    //! Run with `RUSTFLAGS="--cfg mlpdex_loom" cargo test -p mlpdex --lib --release
    //! loom_model`.
    //!
    //! Readers' sections against a writer that changes the data only with the gate closed:
    //! the data is a loom cell, so a section overlapping a change is reported as a race, and
    //! every section must see the data either wholly before or wholly after each change.

    use super::*;
    use crate::sync::loom;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;

    struct Shared {
        gate: Gate,
        /// Two words the writer changes together.
        data: UnsafeCell<(u32, u32)>,
    }

    fn read(s: &Shared, slot: usize) -> (u32, u32) {
        s.gate.enter(slot);
        // SAFETY: inside a section; the writer writes only with the gate closed and every
        // section ended (loom checks this claim).
        let v = s.data.with(|p| unsafe { *p });
        s.gate.leave(slot);
        v
    }

    /// Loom's explorer with a bound on preemptions per run (`bound`): the waits are spin
    /// loops, whose unbounded interleavings would exhaust it.
    fn model(bound: usize, f: impl Fn() + Sync + Send + 'static) {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(bound);
        b.check(f);
    }

    #[test]
    fn sections_never_overlap_a_change() {
        model(3, || {
            let s = Arc::new(Shared {
                gate: Gate::new(),
                data: UnsafeCell::new((0, 0)),
            });
            let readers: Vec<_> = (0..1)
                .map(|slot| {
                    let s = Arc::clone(&s);
                    loom::thread::spawn(move || {
                        let a = read(&s, slot);
                        let b = read(&s, slot);
                        assert_eq!(a.0, a.1, "a section saw half a change");
                        assert!(b.0 >= a.0, "a later section saw an older state");
                    })
                })
                .collect();
            for round in 1..=2 {
                s.gate.close();
                // SAFETY: the gate is closed and no section is under way.
                s.data.with_mut(|p| unsafe {
                    (*p).0 = round;
                    (*p).1 = round;
                });
                s.gate.open();
            }
            for r in readers {
                r.join().unwrap();
            }
            assert_eq!(read(&s, 0), (2, 2));
        });
    }

    #[test]
    fn readers_sharing_a_counter_are_both_waited_for() {
        model(1, || {
            let s = Arc::new(Shared {
                gate: Gate::new(),
                data: UnsafeCell::new((0, 0)),
            });
            let readers: Vec<_> = (0..2)
                .map(|_| {
                    let s = Arc::clone(&s);
                    // Both on counter 3.
                    loom::thread::spawn(move || {
                        let v = read(&s, 3);
                        assert_eq!(v.0, v.1);
                    })
                })
                .collect();
            s.gate.close();
            // SAFETY: as above.
            s.data.with_mut(|p| unsafe { *p = (1, 1) });
            s.gate.open();
            for r in readers {
                r.join().unwrap();
            }
        });
    }
}
