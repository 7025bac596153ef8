//! The per-structure huge-page setting (issue 17, friction 10): every structure that maps
//! tables takes [`HugePages`] in its `Config`, keeps it, and works the same under each choice,
//! including past 2 MiB of table, where the choice takes effect. (That `Never` really maps
//! without `MADV_HUGEPAGE` is checked on the mapping's kernel flags in the library's
//! `substrate::region` unit tests.)

use std::collections::BTreeMap;

use mlpdex::cuckoo_trie::{self, ConcurrentCuckooTrie, CuckooTrie};
use mlpdex::mlp_index::{self, Layout, MlpIndex};
use mlpdex::{ConcurrentOrderedMap, HugePages};

const SETTINGS: [HugePages; 3] = [HugePages::Auto, HugePages::Always, HugePages::Never];

/// Enough keys for tables well past one 2 MiB huge page (smaller under miri).
fn keys() -> Vec<[u8; 8]> {
    let n: u64 = if cfg!(miri) { 200 } else { 60_000 };
    (0..n)
        .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_be_bytes())
        .collect()
}

#[test]
fn default_is_auto_everywhere() {
    assert_eq!(HugePages::default(), HugePages::Auto);
    assert_eq!(cuckoo_trie::Config::default().huge_pages, HugePages::Auto);
    assert_eq!(mlp_index::Config::default().huge_pages, HugePages::Auto);
    assert_eq!(
        mlp_index::Config::with_layout(Layout::Paper).huge_pages,
        HugePages::Auto
    );
    assert!(HugePages::Always.requested());
    assert!(!HugePages::Never.requested());
}

#[test]
fn cuckoo_tries_work_under_every_setting() {
    let keys = keys();
    for huge_pages in SETTINGS {
        let config = cuckoo_trie::Config {
            huge_pages,
            ..cuckoo_trie::Config::default()
        };
        let mut map: CuckooTrie<u64> = CuckooTrie::with_config(config.clone()).unwrap();
        let shared: ConcurrentCuckooTrie<u64> = ConcurrentCuckooTrie::with_config(config).unwrap();
        assert_eq!(map.config().huge_pages, huge_pages);
        assert_eq!(shared.config().huge_pages, huge_pages);
        let mut model = BTreeMap::new();
        for (i, k) in keys.iter().enumerate() {
            map.insert(k, i as u64).unwrap();
            shared.insert(k, i as u64).unwrap();
            model.insert(k.to_vec(), i as u64);
        }
        assert_eq!(map.len(), model.len());
        if !cfg!(miri) {
            assert!(map.memory_usage() > 2 << 20, "{}", map.memory_usage());
        }
        assert_eq!(ConcurrentOrderedMap::len(&shared), model.len());
        for (k, v) in &model {
            assert_eq!(map.get(k), Some(v), "{huge_pages:?}");
            assert_eq!(ConcurrentOrderedMap::get_cloned(&shared, k), Some(*v));
        }
    }
}

#[test]
fn mlp_indexes_work_under_every_setting() {
    let keys = keys();
    for layout in [Layout::Bucketized, Layout::Paper] {
        for huge_pages in SETTINGS {
            let config = mlp_index::Config {
                huge_pages,
                ..mlp_index::Config::with_layout(layout)
            };
            let mut map = MlpIndex::with_config(config).unwrap();
            assert_eq!(map.config().huge_pages, huge_pages);
            for (i, k) in keys.iter().enumerate() {
                map.insert(u64::from_be_bytes(*k), i as u64).unwrap();
            }
            assert_eq!(map.len(), keys.len());
            if !cfg!(miri) {
                assert!(map.mapped_bytes() > 2 << 20, "{}", map.mapped_bytes());
            }
            for (i, k) in keys.iter().enumerate() {
                assert_eq!(map.get(u64::from_be_bytes(*k)), Some(i as u64));
            }
        }
    }
}
