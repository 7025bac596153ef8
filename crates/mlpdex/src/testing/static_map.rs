//! Checks of static maps: `check_static` compares a built `StaticMap` with the oracle it was built
//! from, and `check_builder_rejects` checks that a `StaticMapBuilder` refuses out-of-order and
//! repeated keys as its contract says.

use core::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};

use crate::Error;
use crate::api::{StaticMap, StaticMapBuilder};
use crate::key::Escaped;

use super::{
    apply::{Oracle, apply_static},
    generate::{READ_MIX, gen_op},
    keys::KeyShape,
    ops::MapOp,
    report::{Divergence, Mismatch, panic_message},
    rng::TestRng,
};

/// Checks a [`StaticMap`] against the `oracle` it was built from: `len`, a full scan both ways,
/// then `queries` random reads (gets of present, absent and neighbouring keys drawn with
/// `shape`, seeks, cursors over ranges with every bound kind walked forward, backward or
/// alternating), determined by `seed`.
///
/// # Panics
///
/// At the first divergence, with the [`Divergence`] as message. Its steps 0 to 2 are the opening
/// `len`, full scan and `memory_usage` checks, step `3 + i` is query `i`.
pub fn check_static<M: StaticMap>(
    map: &M,
    oracle: &BTreeMap<Vec<u8>, u64>,
    shape: KeyShape,
    seed: u64,
    queries: usize,
) {
    if let Err(d) = try_check_static(map, oracle, shape, seed, queries) {
        panic!("{d}");
    }
}

/// [`check_static`] returning the first divergence instead of panicking.
pub fn try_check_static<M: StaticMap>(
    map: &M,
    oracle: &BTreeMap<Vec<u8>, u64>,
    shape: KeyShape,
    seed: u64,
    queries: usize,
) -> Result<(), Divergence> {
    let current = RefCell::new(MapOp::Len);
    let step_now = Cell::new(0usize);
    let divergence = |step: usize, op: &MapOp, m: Mismatch| Divergence {
        driver: "check_static",
        seed,
        shape,
        step,
        op: op.to_string(),
        expected: m.expected,
        actual: m.actual,
    };
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        let mut rng = TestRng::new(seed);
        let opening = [MapOp::Len, MapOp::Iter, MapOp::MemoryUsage];
        for step in 0..opening.len() + queries {
            let op = match opening.get(step) {
                Some(op) => op.clone(),
                None => gen_op(&mut rng, shape, oracle, &READ_MIX),
            };
            step_now.set(step);
            *current.borrow_mut() = op;
            let op = current.borrow();
            apply_static(map, oracle, &op).map_err(|m| divergence(step, &op, m))?;
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

/// Applies a merge batch to the oracle: `(key, Some(v))` stores `v`, `(key, None)` removes the
/// key (what a static map's `merged` must do).
pub fn apply_batch<'b>(
    oracle: &mut BTreeMap<Vec<u8>, u64>,
    batch: impl IntoIterator<Item = (&'b Vec<u8>, &'b Option<u64>)>,
) {
    for (k, v) in batch {
        match v {
            Some(v) => oracle.insert(k.clone(), *v),
            None => oracle.remove(k),
        };
    }
}

/// Checks that a [`StaticMapBuilder`] refuses bad input as its contract says.
///
/// In several scenarios (plain keys, the empty key, prefix keys, 0x00/0xFF keys, 2 KiB keys,
/// `extend_sorted`, no key at all) it checks that a key sorting before the previous one yields
/// [`Error::OutOfOrder`] with the right `previous` and `got`, that a repeated key yields
/// [`Error::DuplicateKey`], that a refused push leaves the builder unchanged (later errors still
/// name the last accepted key, and keys after it are still accepted), and that the finished
/// map holds exactly the accepted keys (checked with [`check_static`]).
///
/// The keys are byte strings of every kind (the empty key, 0x00/0xFF, 2 KiB keys), so builders
/// of integer-only maps cannot use this check.
///
/// # Panics
///
/// At the first violation, with a message naming the scenario, the keys pushed so far and the
/// expected and actual results.
pub fn check_builder_rejects<B: StaticMapBuilder>(make: impl Fn() -> B) {
    fn long(fill: u8, last: u8) -> Vec<u8> {
        let mut k = vec![fill; 2048];
        k[2047] = last;
        k
    }
    let ooo = |previous: &[u8], got: &[u8]| {
        Err(Error::OutOfOrder {
            previous: previous.to_vec(),
            got: got.to_vec(),
        })
    };
    let dup = |key: &[u8]| Err(Error::DuplicateKey { key: key.to_vec() });

    /// A scenario's name, and its pushes with the result each must have.
    type Scenario = (&'static str, Vec<(Vec<u8>, Result<(), Error>)>);
    let scenarios: Vec<Scenario> = vec![
        (
            "out of order",
            vec![
                (b"b".to_vec(), Ok(())),
                (b"a".to_vec(), ooo(b"b", b"a")),
                (b"a\xff\xff".to_vec(), ooo(b"b", b"a\xff\xff")),
                (b"b".to_vec(), dup(b"b")),
                (b"ba".to_vec(), Ok(())),
                (b"b".to_vec(), ooo(b"ba", b"b")),
                (b"c".to_vec(), Ok(())),
            ],
        ),
        (
            "empty key",
            vec![
                (b"".to_vec(), Ok(())),
                (b"".to_vec(), dup(b"")),
                (b"\x00".to_vec(), Ok(())),
                (b"".to_vec(), ooo(b"\x00", b"")),
                (b"\x00".to_vec(), dup(b"\x00")),
                (b"\xff".to_vec(), Ok(())),
            ],
        ),
        (
            "prefix keys",
            vec![
                (b"abc".to_vec(), Ok(())),
                (b"ab".to_vec(), ooo(b"abc", b"ab")),
                (b"abc".to_vec(), dup(b"abc")),
                (b"abc\x00".to_vec(), Ok(())),
                (b"abc".to_vec(), ooo(b"abc\x00", b"abc")),
                (b"abd".to_vec(), Ok(())),
                (b"abc\xff".to_vec(), ooo(b"abd", b"abc\xff")),
                (b"abd\x00\x00".to_vec(), Ok(())),
            ],
        ),
        (
            "0x00 and 0xFF keys",
            vec![
                (b"\xff".to_vec(), Ok(())),
                (b"\x00\x00\x00".to_vec(), ooo(b"\xff", b"\x00\x00\x00")),
                (b"\xff\x00".to_vec(), Ok(())),
                (b"\xff".to_vec(), ooo(b"\xff\x00", b"\xff")),
                (b"\xff\x00".to_vec(), dup(b"\xff\x00")),
                (b"\xff\xff".to_vec(), Ok(())),
            ],
        ),
        (
            "2 KiB keys differing in the last byte",
            vec![
                (long(b'k', b'm'), Ok(())),
                (long(b'k', b'l'), ooo(&long(b'k', b'm'), &long(b'k', b'l'))),
                (long(b'k', b'm'), dup(&long(b'k', b'm'))),
                (long(b'k', b'n'), Ok(())),
            ],
        ),
        ("no key at all", vec![]),
    ];

    for (scenario, pushes) in &scenarios {
        let mut builder = make();
        let mut accepted = Oracle::new();
        let mut history: Vec<String> = Vec::new();
        for (i, (key, want)) in pushes.iter().enumerate() {
            let value = 1000 + i as u64;
            let got = builder.push(key, value);
            if &got != want {
                panic!(
                    "check_builder_rejects [{scenario}]: push({}) after pushes [{}]\n  expected: {}\n  actual:   {}",
                    Escaped(key),
                    history.join(", "),
                    show_unit_result(want),
                    show_unit_result(&got),
                );
            }
            history.push(format!(
                "{}{}",
                Escaped(key),
                if got.is_ok() { "" } else { " (refused)" }
            ));
            if got.is_ok() {
                accepted.insert(key.clone(), value);
            }
        }
        finish_and_check(builder, &accepted, scenario);
    }

    // `extend_sorted` stops at the first error and keeps what came before it.
    let mut builder = make();
    let got = builder.extend_sorted([
        (b"m".as_slice(), 1),
        (b"n".as_slice(), 2),
        (b"l".as_slice(), 3),
        (b"o".as_slice(), 4),
    ]);
    let want = ooo(b"n", b"l");
    if got != want {
        panic!(
            "check_builder_rejects [extend_sorted]: extend_sorted([m, n, l, o])\n  expected: {}\n  actual:   {}",
            show_unit_result(&want),
            show_unit_result(&got)
        );
    }
    if let Err(e) = builder.push(b"o", 4) {
        panic!(
            "check_builder_rejects [extend_sorted]: push(\"o\") after extend_sorted stopped at \"l\"\n  expected: Ok(())\n  actual:   Err({e})"
        );
    }
    let accepted: Oracle = [(b"m".to_vec(), 1), (b"n".to_vec(), 2), (b"o".to_vec(), 4)]
        .into_iter()
        .collect();
    finish_and_check(builder, &accepted, "extend_sorted");
}

pub(super) fn show_unit_result(r: &Result<(), Error>) -> String {
    match r {
        Ok(()) => "Ok(())".to_string(),
        Err(e) => format!("Err({e}) = {e:?}"),
    }
}

pub(super) fn finish_and_check<B: StaticMapBuilder>(builder: B, accepted: &Oracle, scenario: &str) {
    let map = match builder.finish() {
        Ok(map) => map,
        Err(e) => panic!("check_builder_rejects [{scenario}]: finish() failed: {e}"),
    };
    if let Err(d) = try_check_static(&map, accepted, KeyShape::PrefixChains, 0, 200) {
        panic!(
            "check_builder_rejects [{scenario}]: the finished map holds other than the accepted keys: {d}"
        );
    }
}
