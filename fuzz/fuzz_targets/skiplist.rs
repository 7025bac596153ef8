//! The lock-free skip list against `BTreeMap`, single-threaded through the
//! `ConcurrentOrderedMap` trait only (`get_with`, `insert`, `remove`, `lower_bound_with`,
//! `upper_bound_with`, `visit_range`, `visit_range_rev`, `len`), with a fuzzer-chosen iterator
//! prefetch depth, then its invariant check. Tower heights come from a per-thread generator,
//! not from the input, so a failure may need its input run a few times to reproduce.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mlpdex::skiplist::{Config, SkipList};
use mlpdex::testing::run_ops_concurrent;
use mlpdex_fuzz::{OpSpec, map_ops, report};

#[derive(Arbitrary, Debug)]
struct Input {
    prefetch_depth: u8,
    ops: Vec<OpSpec>,
}

fuzz_target!(|input: Input| {
    let config = Config {
        prefetch_depth: usize::from(input.prefetch_depth % 7),
    };
    let ops = map_ops(&input.ops);
    let list = SkipList::<u64>::with_config(config).expect("a valid config");
    if let Err(e) = run_ops_concurrent(&list, &ops) {
        report("skiplist", &ops, &format!("{config:?}\n{e}"));
    }
    list.check_invariants();
});
