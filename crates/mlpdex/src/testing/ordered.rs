//! The writing differential drivers: `differential_ordered` for an `OrderedMap` and
//! `differential_concurrent` for a `ConcurrentOrderedMap` run single-threaded, each playing a
//! seeded sequence of operations against the map and the oracle.

use core::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};

use crate::api::{ConcurrentOrderedMap, OrderedMap};

use super::{
    apply::{Oracle, apply_concurrent, apply_ordered},
    generate::{CLEAR_ONE_IN, MEMORY_EVERY, gen_op, write_mix},
    keys::KeyShape,
    ops::MapOp,
    report::{Divergence, Mismatch, panic_message},
    rng::TestRng,
};

/// Runs a writing driver's loop, turning a panic of the map into a [`Divergence`] that names the
/// step and the operation during which it happened.
pub(super) fn drive<S>(
    driver: &'static str,
    shape: KeyShape,
    seed: u64,
    steps: usize,
    mut state: S,
    mut apply: impl FnMut(&mut S, &mut Oracle, &MapOp) -> Result<(), Mismatch>,
) -> Result<(), Divergence> {
    let current = RefCell::new(MapOp::Len);
    let step_now = Cell::new(0usize);
    let divergence = |step: usize, op: &MapOp, m: Mismatch| Divergence {
        driver,
        seed,
        shape,
        step,
        op: op.to_string(),
        expected: m.expected,
        actual: m.actual,
    };
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        let mut rng = TestRng::new(seed);
        let mut oracle = Oracle::new();
        for step in 0..=steps {
            let op = if step == steps {
                MapOp::Iter // a final full comparison
            } else if step % MEMORY_EVERY == MEMORY_EVERY - 1 {
                MapOp::MemoryUsage
            } else if rng.below(CLEAR_ONE_IN) == 0 {
                MapOp::Clear
            } else {
                gen_op(&mut rng, shape, &oracle, write_mix(step))
            };
            step_now.set(step);
            *current.borrow_mut() = op;
            let op = current.borrow();
            apply(&mut state, &mut oracle, &op).map_err(|m| divergence(step, &op, m))?;
        }
        Ok(())
    }));
    match outcome {
        Ok(result) => result,
        Err(payload) => Err(divergence(
            step_now.get(),
            &current.borrow(),
            Mismatch::new("no panic", format!("panic: {}", panic_message(&*payload))),
        )),
    }
}

/// Differential test of an [`OrderedMap`] against `BTreeMap`: `steps` random operations on
/// keys of `shape`, determined by `seed`, on the map `make` returns (which must be empty).
///
/// # Panics
///
/// At the first divergence, with the [`Divergence`] as message (seed, step, operation, expected
/// and actual answers), including when the map itself panics.
pub fn differential_ordered<M: OrderedMap<u64>>(
    make: impl Fn() -> M,
    shape: KeyShape,
    seed: u64,
    steps: usize,
) {
    if let Err(d) = try_differential_ordered(make, shape, seed, steps) {
        panic!("{d}");
    }
}

/// [`differential_ordered`] returning the first divergence instead of panicking.
pub fn try_differential_ordered<M: OrderedMap<u64>>(
    make: impl Fn() -> M,
    shape: KeyShape,
    seed: u64,
    steps: usize,
) -> Result<(), Divergence> {
    drive(
        "differential_ordered",
        shape,
        seed,
        steps,
        make(),
        |map, oracle, op| apply_ordered(map, oracle, op),
    )
}

/// Differential test of a [`ConcurrentOrderedMap`] against `BTreeMap`, single-threaded through
/// its `&self` API: `steps` random operations on keys of `shape`, determined by `seed`, on the
/// map `make` returns (which must be empty).
///
/// Range visits break after a random number of entries; a visitor called again after it
/// returned `Break` is a divergence.
///
/// # Panics
///
/// At the first divergence, with the [`Divergence`] as message.
pub fn differential_concurrent<M: ConcurrentOrderedMap<u64>>(
    make: impl Fn() -> M,
    shape: KeyShape,
    seed: u64,
    steps: usize,
) {
    if let Err(d) = try_differential_concurrent(make, shape, seed, steps) {
        panic!("{d}");
    }
}

/// [`differential_concurrent`] returning the first divergence instead of panicking.
pub fn try_differential_concurrent<M: ConcurrentOrderedMap<u64>>(
    make: impl Fn() -> M,
    shape: KeyShape,
    seed: u64,
    steps: usize,
) -> Result<(), Divergence> {
    drive(
        "differential_concurrent",
        shape,
        seed,
        steps,
        make(),
        |map, oracle, op| apply_concurrent(map, oracle, op),
    )
}
