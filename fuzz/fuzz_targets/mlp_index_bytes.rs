//! `MlpIndexBytes` against `BTreeMap`: fuzzer-chosen operation sequences over adversarial keys,
//! then the map's own invariant audit (leaf order and fences, the prefix table's nodes).

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mlpdex::mlp_index_bytes::MlpIndexBytes;
use mlpdex::testing::run_ops;
use mlpdex_fuzz::{OpSpec, map_ops, report};

#[derive(Arbitrary, Debug)]
struct Input {
    ops: Vec<OpSpec>,
}

fuzz_target!(|input: Input| {
    let ops = map_ops(&input.ops);
    let mut map = MlpIndexBytes::<u64>::new();
    if let Err(e) = run_ops(&mut map, &ops) {
        report("mlp_index_bytes", &ops, &e);
    }
    if let Err(e) = map.check_invariants() {
        report("mlp_index_bytes", &ops, &format!("check_invariants: {e}"));
    }
});
