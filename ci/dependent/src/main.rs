//! Uses the public API of mlpdex as a dependent crate would: builds an FST, a SuRF filter, a
//! Cuckoo Trie and an MlpIndex, queries each against a `BTreeMap`, and panics on any
//! disagreement. Built with default target flags, it runs the run-time-detected rank and
//! select paths that a user's build runs.

use std::collections::BTreeMap;

use mlpdex::cuckoo_trie::{Config, CuckooTrie};
use mlpdex::fst::Fst;
use mlpdex::mlp_index::MlpIndex;
use mlpdex::surf::{Surf, SurfKind};
use mlpdex::HugePages;

fn main() -> Result<(), mlpdex::Error> {
    let model: BTreeMap<Vec<u8>, u64> = (0..20_000u64)
        .map(|i| (format!("user/{:08}", i.wrapping_mul(7919) % 1_000_003).into_bytes(), i))
        .collect();

    let fst = Fst::from_sorted(model.iter().map(|(k, &v)| (k, v)))?;
    let surf = Surf::from_sorted(SurfKind::Real(8), model.keys())?;
    let mut trie: CuckooTrie<u64> = CuckooTrie::with_config(Config {
        huge_pages: HugePages::Never,
        ..Config::default()
    })?;
    let mut ints = MlpIndex::new();
    for (i, (k, &v)) in model.iter().enumerate() {
        trie.insert(k, v)?;
        ints.insert(i as u64, v)?;
    }

    for (i, (k, &v)) in model.iter().enumerate() {
        assert_eq!(fst.get(k), Some(v), "fst get");
        assert!(surf.may_contain(k), "surf false negative");
        assert_eq!(trie.get(k), Some(&v), "cuckoo trie get");
        assert_eq!(ints.get(i as u64), Some(v), "mlp index get");
    }
    assert_eq!(fst.get(b"user/"), None);
    assert_eq!(trie.get(b"user/"), None);
    let in_range = model.range(b"user/00100000".to_vec()..b"user/00200000".to_vec()).count();
    assert!(surf.may_contain_range(b"user/00100000".as_slice()..b"user/00200000"));
    let mut cursor = fst.range(b"user/00100000".as_slice()..b"user/00200000");
    let mut seen = 0;
    while cursor.next().is_some() {
        seen += 1;
    }
    assert_eq!(seen, in_range, "fst range");

    println!(
        "mlpdex dependent check: {} keys through Fst, Surf, CuckooTrie and MlpIndex agree",
        model.len()
    );
    Ok(())
}
