//! Drawing random operations: the operation mixes of the growth, churn, shrink and read phases,
//! probe keys near stored ones, and range bounds of every kind.

use core::ops::Bound;

use crate::key::key_to_u64;

use super::{
    apply::Oracle,
    keys::KeyShape,
    ops::{MapOp, Walk},
    rng::TestRng,
};

#[derive(Clone, Copy, Debug)]
pub(super) enum Kind {
    Insert,
    Remove,
    Get,
    ContainsKey,
    Len,
    First,
    Last,
    LowerBound,
    UpperBound,
    Range,
    Iter,
    MemoryUsage,
}

/// An operation mix: weights per operation kind, and the share of inserts that update a stored
/// key rather than draw a key of the shape.
pub(super) struct Mix {
    weights: &'static [(Kind, u64)],
    updates: f64,
}

/// The churn phase of a writing driver: inserts and removes of stored keys balance.
pub(super) const CHURN_MIX: Mix = Mix {
    updates: 0.4,
    weights: &[
        (Kind::Insert, 280),
        (Kind::Remove, 140),
        (Kind::Get, 130),
        (Kind::ContainsKey, 40),
        (Kind::Len, 15),
        (Kind::First, 15),
        (Kind::Last, 15),
        (Kind::LowerBound, 80),
        (Kind::UpperBound, 80),
        (Kind::Range, 190),
        (Kind::Iter, 4),
        (Kind::MemoryUsage, 11),
    ],
};

/// The growth phase: mostly inserts of drawn keys, so the map approaches the size of its key
/// universe (node splits, trie growth).
pub(super) const GROW_MIX: Mix = Mix {
    updates: 0.1,
    weights: &[
        (Kind::Insert, 450),
        (Kind::Remove, 30),
        (Kind::Get, 110),
        (Kind::ContainsKey, 30),
        (Kind::Len, 10),
        (Kind::First, 10),
        (Kind::Last, 10),
        (Kind::LowerBound, 70),
        (Kind::UpperBound, 70),
        (Kind::Range, 196),
        (Kind::Iter, 3),
        (Kind::MemoryUsage, 11),
    ],
};

/// The shrink phase: mostly removes of stored keys, so the map empties again (merges,
/// collapsing nodes).
pub(super) const SHRINK_MIX: Mix = Mix {
    updates: 0.4,
    weights: &[
        (Kind::Insert, 60),
        (Kind::Remove, 420),
        (Kind::Get, 110),
        (Kind::ContainsKey, 30),
        (Kind::Len, 10),
        (Kind::First, 10),
        (Kind::Last, 10),
        (Kind::LowerBound, 70),
        (Kind::UpperBound, 70),
        (Kind::Range, 196),
        (Kind::Iter, 3),
        (Kind::MemoryUsage, 11),
    ],
};

/// Length in steps of one grow–churn–shrink cycle of a writing driver.
pub(super) const PHASE_CYCLE: usize = 8000;

/// The operation weights of a writing driver at `step`: half a cycle of growth, a quarter of
/// churn, a quarter of shrinking.
pub(super) fn write_mix(step: usize) -> &'static Mix {
    match step % PHASE_CYCLE {
        s if s < PHASE_CYCLE / 2 => &GROW_MIX,
        s if s < PHASE_CYCLE * 3 / 4 => &CHURN_MIX,
        _ => &SHRINK_MIX,
    }
}

/// The reads of a static map.
pub(super) const READ_MIX: Mix = Mix {
    updates: 0.0,
    weights: &[
        (Kind::Get, 300),
        (Kind::ContainsKey, 50),
        (Kind::Len, 20),
        (Kind::First, 20),
        (Kind::Last, 20),
        (Kind::LowerBound, 140),
        (Kind::UpperBound, 140),
        (Kind::Range, 300),
        (Kind::Iter, 2),
        (Kind::MemoryUsage, 8),
    ],
};

/// One in this many steps of a writing driver is a `clear()` (or remove-everything).
pub(super) const CLEAR_ONE_IN: u64 = 10_000;

/// Every this many steps a writing driver checks `memory_usage()` on top of the random mix.
pub(super) const MEMORY_EVERY: usize = 1000;

/// A key already stored, found next to a random key of the shape (so not uniform over the
/// stored keys, but covering them all). `oracle` must not be empty.
pub(super) fn existing_key(rng: &mut TestRng, shape: KeyShape, oracle: &Oracle) -> Vec<u8> {
    let probe = shape.gen_key(rng);
    let found = if rng.chance(0.5) {
        oracle
            .range::<[u8], _>((Bound::Included(probe.as_slice()), Bound::Unbounded))
            .next()
    } else {
        oracle
            .range::<[u8], _>((Bound::Unbounded, Bound::Included(probe.as_slice())))
            .next_back()
    };
    match found.or_else(|| oracle.first_key_value()) {
        Some((k, _)) => k.clone(),
        None => probe,
    }
}

/// A key next to `key`: one byte longer or shorter, last byte incremented or decremented, a
/// prefix, or the empty key; for [`KeyShape::U64`], a nearby integer.
pub(super) fn neighbor(rng: &mut TestRng, shape: KeyShape, mut key: Vec<u8>) -> Vec<u8> {
    if shape == KeyShape::U64 {
        let x = key_to_u64(&key).unwrap_or(0);
        let y = match rng.below(4) {
            0 => x.wrapping_add(1),
            1 => x.wrapping_sub(1),
            2 => x ^ (1 << rng.below(64)),
            _ => (x & !0xff) | rng.below(256),
        };
        return y.to_be_bytes().to_vec();
    }
    match rng.below(7) {
        0 => key.push(0x00),
        1 => key.push(0xff),
        2 => {
            key.pop();
        }
        3 => {
            let n = rng.index(key.len() + 1);
            key.truncate(n);
        }
        4 => match key.last_mut() {
            Some(b) if *b < 0xff => *b += 1,
            _ => key.push(0x00),
        },
        5 => match key.last_mut() {
            Some(b) if *b > 0 => *b -= 1,
            _ => {
                key.pop();
            }
        },
        _ => key.clear(),
    }
    key
}

/// A key for lookups and bounds: stored, next to a stored one, or fresh.
pub(super) fn probe_key(rng: &mut TestRng, shape: KeyShape, oracle: &Oracle) -> Vec<u8> {
    if oracle.is_empty() {
        return shape.gen_key(rng);
    }
    match rng.below(10) {
        0..=3 => existing_key(rng, shape, oracle),
        4 | 5 => {
            let k = existing_key(rng, shape, oracle);
            neighbor(rng, shape, k)
        }
        _ => shape.gen_key(rng),
    }
}

pub(super) fn bound_of(rng: &mut TestRng, key: Vec<u8>) -> Bound<Vec<u8>> {
    match rng.below(5) {
        0 | 1 => Bound::Included(key),
        2 | 3 => Bound::Excluded(key),
        _ => Bound::Unbounded,
    }
}

pub(super) fn gen_walk(rng: &mut TestRng) -> Walk {
    let limit = match rng.below(20) {
        0 => usize::MAX,
        1..=5 => rng.index(256),
        _ => rng.index(24),
    };
    match rng.below(3) {
        0 => Walk::Forward(limit),
        1 => Walk::Backward(limit),
        _ => Walk::Alternate(rng.next_u64(), limit),
    }
}

pub(super) fn gen_range(rng: &mut TestRng, shape: KeyShape, oracle: &Oracle) -> MapOp {
    let a = probe_key(rng, shape, oracle);
    let b = probe_key(rng, shape, oracle);
    let (lo, hi) = match rng.below(10) {
        0..=3 if a > b => (b, a),
        0..=3 => (a, b),
        4 => (a.clone(), a),
        5 if a < b => (b, a), // inverted
        _ => (a, b),
    };
    let start = bound_of(rng, lo);
    let end = bound_of(rng, hi);
    MapOp::Range(start, end, gen_walk(rng))
}

pub(super) fn gen_value(rng: &mut TestRng) -> u64 {
    match rng.below(20) {
        0 => 0,
        1 => u64::MAX,
        _ => rng.next_u64(),
    }
}

pub(super) fn gen_op(rng: &mut TestRng, shape: KeyShape, oracle: &Oracle, mix: &Mix) -> MapOp {
    let total: u64 = mix.weights.iter().map(|&(_, w)| w).sum();
    let mut roll = rng.below(total);
    let mut kind = mix.weights[0].0;
    for &(k, w) in mix.weights {
        if roll < w {
            kind = k;
            break;
        }
        roll -= w;
    }
    match kind {
        Kind::Insert => {
            let key = if !oracle.is_empty() && rng.chance(mix.updates) {
                existing_key(rng, shape, oracle)
            } else {
                shape.gen_key(rng)
            };
            MapOp::Insert(key, gen_value(rng))
        }
        Kind::Remove => {
            let key = if !oracle.is_empty() && rng.chance(0.55) {
                existing_key(rng, shape, oracle)
            } else {
                probe_key(rng, shape, oracle)
            };
            MapOp::Remove(key)
        }
        Kind::Get => MapOp::Get(probe_key(rng, shape, oracle)),
        Kind::ContainsKey => MapOp::ContainsKey(probe_key(rng, shape, oracle)),
        Kind::Len => MapOp::Len,
        Kind::First => MapOp::First,
        Kind::Last => MapOp::Last,
        Kind::LowerBound => {
            let k = probe_key(rng, shape, oracle);
            MapOp::LowerBound(bound_of(rng, k))
        }
        Kind::UpperBound => {
            let k = probe_key(rng, shape, oracle);
            MapOp::UpperBound(bound_of(rng, k))
        }
        Kind::Range => gen_range(rng, shape, oracle),
        Kind::Iter => MapOp::Iter,
        Kind::MemoryUsage => MapOp::MemoryUsage,
    }
}
