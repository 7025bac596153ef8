//! The single-threaded Cuckoo Trie against `BTreeMap`: fuzzer-chosen operation sequences over
//! adversarial keys, on a fuzzer-chosen configuration (small first tables force growth early,
//! small symbols make deep tries), then the trie's own invariant audit.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mlpdex::cuckoo_trie::{Config, CuckooTrie};
use mlpdex::testing::run_ops;
use mlpdex_fuzz::{OpSpec, map_ops, report};

#[derive(Arbitrary, Debug)]
struct Input {
    symbol_bits: u8,
    prefetch_depth: u8,
    load: u8,
    buckets: u8,
    ops: Vec<OpSpec>,
}

fuzz_target!(|input: Input| {
    let config = Config {
        symbol_bits: 1 + u32::from(input.symbol_bits % 5),
        prefetch_depth: 1 + usize::from(input.prefetch_depth % 16),
        max_load_factor: 0.5 + 0.45 * f64::from(input.load) / 255.0,
        initial_buckets: 1 + usize::from(input.buckets % 128),
        ..Config::default()
    };
    let ops = map_ops(&input.ops);
    let mut map = CuckooTrie::<u64>::with_config(config.clone()).expect("a valid config");
    if let Err(e) = run_ops(&mut map, &ops) {
        report("cuckoo_trie", &ops, &format!("{config:?}\n{e}"));
    }
    if let Err(e) = map.check_invariants() {
        report(
            "cuckoo_trie",
            &ops,
            &format!("{config:?}\ncheck_invariants: {e}"),
        );
    }
});
