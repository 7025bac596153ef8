//! Integration tests of [`mlpdex::cuckoo_trie::ConcurrentCuckooTrie`] through the
//! [`ConcurrentOrderedMap`] API
//! (`cargo test -p mlpdex --release --test concurrent_cuckoo_trie`).
//!
//! The multi-threaded and edge-case checks are the generic harnesses of
//! [`mlpdex::testing::concurrent`], which every concurrent map of the crate runs; this file
//! gives them the Cuckoo Trie as a [`Subject`] (a map made with a given [`Config`], audited
//! with `check_invariants()`, refusing keys over `MAX_KEY_LEN`) and adds the checks that only
//! make sense for the Cuckoo Trie. What is covered:
//!
//! 1. **Differential runs**, single-threaded through `&self`, against the `BTreeMap` oracle of
//!    the testing driver: every [`KeyShape`] (the byte-string shapes and `U64`), three seeds
//!    each, with the default [`Config`] and with a config that grows the table often
//!    (`initial_buckets: 1`, `max_load_factor: 0.5`); `check_invariants()` after every run.
//! 2. **Property tests**: `run_ops_concurrent` on arbitrary operation sequences (`arb_ops`,
//!    default config, growing config with every symbol size, 8-byte integer keys), then
//!    `check_invariants()`.
//! 3. **Multi-threaded stress** ([`concurrent::stress`], standard plans: 2 writers + 2
//!    readers and 4 writers + 2 readers, partitioned and shared keys; 6 writers + 2 readers
//!    on shared keys with 15 % of the writes, 8 threads on 2 cores) on a universe of about
//!    2000 keys of mixed shapes, with the growing config, so that the fill/drain cycles grow
//!    and shrink the table during the run: linearizability of every read and of the values
//!    `insert`/`remove` return (per-thread monotonic [`Stamp`](concurrent::Stamp)s, no stale `get` after a
//!    completed write), visit shape (known keys, in range, strictly ordered, nothing after
//!    `Break`), exact final contents for partitioned runs and last-writer contents for shared
//!    ones, `check_invariants()` after the run and after draining to empty.
//! 4. **Range visits under churn** ([`concurrent::range_visits_under_churn`], 2 and 4
//!    writers, and 6 with a quarter of the writes; 2 visitors, growing config): keys present
//!    throughout are reported by every visit and seek covering them; keys removed before a
//!    visit starts never are.
//! 5. **Values are dropped exactly once** ([`concurrent::values_dropped_once`] with the
//!    default and the growing config, [`concurrent::values_dropped_once_concurrently`] with
//!    2 writers + 2 readers on the growing config): `insert` and `remove` return clones, no
//!    other clone is made, no stored value is dropped early or twice, dropping the map drops
//!    the stored values at once, a refused insert (key over `MAX_KEY_LEN`) drops its value at
//!    once, and epoch-based reclamation eventually frees every retired value; and
//!    ([`concurrent::replaced_values_dropped_while_key_stays`]) a key updated eleven times has
//!    every replaced value freed, its first one included, while the key stays stored.
//!
//!    5b. **Many threads on a few keys** ([`concurrent::same_key_stress`]): 8 threads on 1
//!    key (default config) and on 2 keys, 6 threads on 16 keys, 4 threads on 400 keys (growing
//!    config), each value inserted unique: every value comes out exactly once (returned by
//!    `insert` or `remove`, or stored at the end), none is invented, and `len()` read after
//!    every operation never exceeds the number of keys.
//!    5c. **Linearizable histories** ([`concurrent::linearizable_histories`]): 3,000 short
//!    runs of 4 threads (default config) and of 8 threads (growing config) on 3 keys each,
//!    every history checked: point operations exactly, seeks and limited visits per key.
//! 6. **Edge cases**: the empty key alone and with others (default and growing config), prefix
//!    keys in every insertion order (default config, and the growing config with
//!    `symbol_bits: 1`), both through the generic harnesses; and, Cuckoo-Trie-specific, a key
//!    of `MAX_KEY_LEN` (accepted) and one byte more (refused with `Error::KeyTooLong`, the map
//!    unchanged), `with_config` refusing every out-of-range field with
//!    `Error::InvalidConfig` and accepting the ends of every range.
//! 7. `stress_small_quick`: the quick plans of 3 (partitioned and shared) and 4, well under a
//!    second, for CI.
//! 8. `clear()` during concurrent reads, and the table shrinking back (`mapped_bytes()`) after
//!    every key is removed.
//! 9. **Growth helped by waiting writers**: 2 and 8 writers fill a one-bucket table with
//!    random, URL-like and 1 KiB keys; contents both ways and `check_invariants()` after.
//! 10. **Explicit resizes**: `reserve` and `shrink_to_fit` while readers look up fixed keys
//!     and a writer churns others.
//! 11. **Batched lookups**: `get_batch` in batches of 1 to 40 keys while the table grows and
//!     other keys churn: fixed keys always found, churned keys never answered with another
//!     key's value, absent keys never found, and `get`'s answers once the writers stop.
//!
//! The checks were tried against deliberately broken copies of the map (no seqlock
//! validation, a visit skipping entries, `insert` returning the new value, retired values
//! freed at once, shrinking from the state before a removal, `Drop` leaking values): each was
//! caught by the multi-threaded tests, and all but the first and the fourth by single-threaded
//! tests too.
//!
//! No test asserts on timing: the stress tests are sized by operation counts, and readers run
//! until every writer is done. The file takes about 30 s on 2 cores, with `--release` or in the
//! test profile.

use std::ops::{Bound, ControlFlow};

use mlpdex::cuckoo_trie::{ConcurrentCuckooTrie, Config};
use mlpdex::testing::concurrent::{
    self, ChurnPlan, HistoryPlan, Plan, SameKeyPlan, Sharing, Subject, entries,
};
use mlpdex::testing::{
    KeyShape, arb_ops, arb_ops_with, arb_u64_key, run_ops_concurrent, try_differential_concurrent,
};
use mlpdex::{ConcurrentOrderedMap, Error};
use proptest::prelude::*;

type Map<V> = ConcurrentCuckooTrie<V>;

// ---------------------------------------------------------------------------------------------
// Configs, subjects and small helpers
// ---------------------------------------------------------------------------------------------

fn default_config() -> Config {
    Config::default()
}

/// A config that makes the table grow often: one bucket to start, resize at half load.
fn growth_config() -> Config {
    Config {
        initial_buckets: 1,
        max_load_factor: 0.5,
        ..Config::default()
    }
}

fn ctrie<V: Clone + Send + Sync + 'static>(cfg: Config) -> Map<V> {
    match Map::with_config(cfg) {
        Ok(map) => map,
        Err(e) => panic!("with_config refused a valid config: {e}"),
    }
}

/// The Cuckoo Trie as the generic harnesses see it: maps made with `cfg`, audited with
/// `check_invariants()`, refusing keys longer than `MAX_KEY_LEN`.
fn subject<V: Clone + Send + Sync + 'static>(
    name: &str,
    cfg: impl Fn() -> Config + 'static,
) -> Subject<Map<V>> {
    Subject::new(format!("cuckoo trie, {name} config"), move || ctrie(cfg()))
        .with_audit(Map::check_invariants)
        .with_max_key_len(Map::<V>::MAX_KEY_LEN)
}

/// [`growth_config`] with the key index ([`Config::key_index`]): point lookups probe key
/// entries, which every insert, update, remove and resize keeps.
fn key_index_config() -> Config {
    Config {
        key_index: true,
        ..growth_config()
    }
}

/// The Cuckoo Trie with [`key_index_config`].
fn key_index_subject<V: Clone + Send + Sync + 'static>() -> Subject<Map<V>> {
    subject("growth + key index", key_index_config)
}

/// The Cuckoo Trie with the default config.
fn default_subject<V: Clone + Send + Sync + 'static>() -> Subject<Map<V>> {
    subject("default", default_config)
}

/// The Cuckoo Trie with [`growth_config`], whose table grows and shrinks during a run.
fn growth_subject<V: Clone + Send + Sync + 'static>() -> Subject<Map<V>> {
    subject("growth", growth_config)
}

fn all_shapes() -> impl Iterator<Item = KeyShape> {
    KeyShape::ALL.iter().copied()
}

fn audit<V: Clone + Send + Sync + 'static>(map: &Map<V>, ctx: &str) {
    if let Err(e) = map.check_invariants() {
        panic!("{ctx}: check_invariants() failed: {e}");
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Differential runs
// ---------------------------------------------------------------------------------------------

/// Steps of one differential run: two grow–churn–shrink cycles of the driver.
const DIFF_STEPS: usize = 16_000;
/// Steps with [`KeyShape::Mixed`], which draws a few multi-KiB keys.
const DIFF_STEPS_MIXED: usize = 8_000;
/// Steps with [`KeyShape::Long`] (1–8 KiB keys: about 0.35 ms a step).
const DIFF_STEPS_LONG: usize = 1_500;

/// Every shape, `seeds` seeds each: a differential run, then `check_invariants()`.
fn differential_suite(config: &str, cfg: fn() -> Config, seeds: &[u64]) {
    for shape in all_shapes() {
        let steps = match shape {
            KeyShape::Long => DIFF_STEPS_LONG,
            KeyShape::Mixed => DIFF_STEPS_MIXED,
            _ => DIFF_STEPS,
        };
        for &seed in seeds {
            let map = ctrie::<u64>(cfg());
            if let Err(d) = try_differential_concurrent(|| &map, shape, seed, steps) {
                panic!("[config {config}] {d}");
            }
            audit(
                &map,
                &format!("[config {config}] after the differential run {shape:?} seed {seed}"),
            );
        }
    }
}

#[test]
fn differential_default_config() {
    differential_suite("default", default_config, &[1, 2, 3]);
}

#[test]
fn differential_frequent_growth() {
    differential_suite(
        "initial_buckets=1 max_load_factor=0.5",
        growth_config,
        &[11, 12, 13],
    );
}

#[test]
fn differential_key_index() {
    differential_suite("growth + key_index", key_index_config, &[21, 22]);
}

// ---------------------------------------------------------------------------------------------
// 2. Property tests
// ---------------------------------------------------------------------------------------------

fn ops_then_audit(map: &Map<u64>, ops: &[mlpdex::testing::MapOp]) -> Result<(), TestCaseError> {
    run_ops_concurrent(map, ops).map_err(TestCaseError::fail)?;
    map.check_invariants()
        .map_err(|e| TestCaseError::fail(format!("check_invariants after the ops: {e}")))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 192,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn proptest_arbitrary_ops(ops in arb_ops()) {
        ops_then_audit(&Map::<u64>::new(), &ops)?;
    }

    #[test]
    fn proptest_arbitrary_ops_growing_any_symbol_size(
        ops in arb_ops(),
        bits in 1u32..=5,
        key_index: bool,
    ) {
        let cfg = Config { symbol_bits: bits, key_index, ..growth_config() };
        ops_then_audit(&ctrie::<u64>(cfg), &ops)?;
    }

    #[test]
    fn proptest_u64_key_ops(ops in arb_ops_with(arb_u64_key())) {
        ops_then_audit(&ctrie::<u64>(growth_config()), &ops)?;
    }
}

// ---------------------------------------------------------------------------------------------
// 3. Multi-threaded stress
// ---------------------------------------------------------------------------------------------

#[test]
fn stress_partitioned_2_writers_2_readers() {
    concurrent::stress(
        &growth_subject(),
        Plan::standard(Sharing::Partitioned, 2, 2, 0x5EED_0001),
    );
}

#[test]
fn stress_partitioned_4_writers_2_readers() {
    concurrent::stress(
        &growth_subject(),
        Plan::standard(Sharing::Partitioned, 4, 2, 0x5EED_0002),
    );
}

#[test]
fn stress_shared_keys_2_writers_2_readers() {
    concurrent::stress(
        &growth_subject(),
        Plan::standard(Sharing::Shared, 2, 2, 0x5EED_0003),
    );
}

#[test]
fn stress_shared_keys_4_writers_2_readers() {
    concurrent::stress(
        &growth_subject(),
        Plan::standard(Sharing::Shared, 4, 2, 0x5EED_0004),
    );
}

#[test]
fn stress_shared_keys_4_writers_2_readers_key_index() {
    concurrent::stress(
        &key_index_subject(),
        Plan::standard(Sharing::Shared, 4, 2, 0x5EED_0014),
    );
}

/// 8 threads on 2 cores: 6 writers on shared keys (15 % of the standard plan's writes)
/// and 2 readers.
#[test]
fn stress_shared_keys_6_writers_2_readers() {
    concurrent::stress(
        &growth_subject(),
        Plan {
            phase_ops: 30_000 / 6,
            ..Plan::standard(Sharing::Shared, 6, 2, 0x5EED_0006)
        },
    );
}

// ---------------------------------------------------------------------------------------------
// 4. Range visits under churn
// ---------------------------------------------------------------------------------------------

#[test]
fn range_visits_under_churn_keep_stable_keys_and_skip_removed_ones() {
    concurrent::range_visits_under_churn(&growth_subject(), ChurnPlan::standard(2, 0xC4A2_0001));
}

#[test]
fn range_visits_under_churn_4_writers() {
    concurrent::range_visits_under_churn(&growth_subject(), ChurnPlan::standard(4, 0xC4A2_0002));
}

/// 8 threads on 2 cores: 6 writers (a quarter of the standard plan's writes) and 2 visitors.
#[test]
fn range_visits_under_churn_6_writers() {
    concurrent::range_visits_under_churn(
        &growth_subject(),
        ChurnPlan {
            phase_ops: 40_000 / 6,
            ..ChurnPlan::standard(6, 0xC4A2_0006)
        },
    );
}

// ---------------------------------------------------------------------------------------------
// 5. Values are cloned on the way out and dropped exactly once
// ---------------------------------------------------------------------------------------------

#[test]
fn values_cloned_on_the_way_out_and_dropped_once_single_thread() {
    concurrent::values_dropped_once(&default_subject(), 0xD209);
    concurrent::values_dropped_once(&growth_subject(), 0xD209);
}

#[test]
fn values_cloned_on_the_way_out_and_dropped_once_concurrently() {
    concurrent::values_dropped_once_concurrently(&growth_subject(), 0xD210);
}

#[test]
fn replaced_values_dropped_while_the_key_stays() {
    concurrent::replaced_values_dropped_while_key_stays(&default_subject());
}

// ---------------------------------------------------------------------------------------------
// 5b. Many threads on a few keys (8 threads on 2 cores)
// ---------------------------------------------------------------------------------------------

#[test]
fn same_key_stress_1_key_8_threads() {
    concurrent::same_key_stress(&default_subject(), SameKeyPlan::standard(1, 8, 0x5A_C001));
}

#[test]
fn same_key_stress_2_keys_8_threads() {
    concurrent::same_key_stress(&growth_subject(), SameKeyPlan::standard(2, 8, 0x5A_C002));
}

/// Updates of a few keys by many threads: each repoints a key entry while readers probe it.
#[test]
fn same_key_stress_2_keys_8_threads_key_index() {
    concurrent::same_key_stress(&key_index_subject(), SameKeyPlan::standard(2, 8, 0x5A_C102));
}

#[test]
fn same_key_stress_16_keys_6_threads() {
    concurrent::same_key_stress(&growth_subject(), SameKeyPlan::standard(16, 6, 0x5A_C016));
}

#[test]
fn same_key_stress_400_keys_4_threads() {
    concurrent::same_key_stress(
        &growth_subject(),
        SameKeyPlan {
            ops: 120_000,
            ..SameKeyPlan::standard(400, 4, 0x5A_C400)
        },
    );
}

#[test]
fn linearizable_histories_4_threads() {
    concurrent::linearizable_histories(&default_subject(), HistoryPlan::standard(4, 0x11_C004));
}

#[test]
fn linearizable_histories_8_threads_growing() {
    concurrent::linearizable_histories(&growth_subject(), HistoryPlan::standard(8, 0x11_C008));
}

#[test]
fn linearizable_histories_4_threads_key_index() {
    concurrent::linearizable_histories(&key_index_subject(), HistoryPlan::standard(4, 0x11_C104));
}

// ---------------------------------------------------------------------------------------------
// 6. Edge cases through the concurrent API
// ---------------------------------------------------------------------------------------------

#[test]
fn empty_key_alone_and_with_others() {
    concurrent::empty_key_alone_and_with_others(&default_subject());
    concurrent::empty_key_alone_and_with_others(&growth_subject());
}

#[test]
fn prefix_keys_in_every_insertion_order() {
    concurrent::prefix_keys_in_every_insertion_order(&default_subject());
    concurrent::prefix_keys_in_every_insertion_order(&subject("symbol_bits=1 growth", || Config {
        symbol_bits: 1,
        ..growth_config()
    }));
}

#[test]
fn max_key_len_is_accepted_and_one_more_refused() {
    let max = Map::<u64>::MAX_KEY_LEN;
    assert_eq!(max, (1 << 20) - 1, "MAX_KEY_LEN is documented as 1 MiB - 1");
    let longest = vec![0xabu8; max];
    let too_long = vec![0xabu8; max + 1];

    // Refused on an empty map, which stays empty.
    let map = Map::<u64>::new();
    assert_eq!(
        map.insert(&too_long, 1),
        Err(Error::KeyTooLong { len: max + 1, max })
    );
    assert!(map.is_empty() && entries(&map).is_empty());
    audit(&map, "empty map after a refused key");

    // Accepted next to other keys, including its own prefixes.
    assert_eq!(map.insert(b"a", 1), Ok(None));
    assert_eq!(map.insert(&[0xab; 10], 2), Ok(None));
    assert_eq!(map.insert(&longest, 3), Ok(None));
    assert_eq!(map.insert(b"\xff", 4), Ok(None));
    assert_eq!(map.get_cloned(&longest), Some(3));
    assert_eq!(map.insert(&longest, 5), Ok(Some(3)));
    let before = entries(&map);
    assert_eq!(before.len(), 4);
    assert!(
        before[2].0 == longest && before[2].1 == 5,
        "the longest key is third in order"
    );

    // One byte more is refused with the lengths, and the map is unchanged.
    assert_eq!(
        map.insert(&too_long, 6),
        Err(Error::KeyTooLong { len: max + 1, max })
    );
    let mut longer = longest.clone();
    longer.extend_from_slice(b"\x00\x00");
    assert_eq!(
        map.insert(&longer, 7),
        Err(Error::KeyTooLong { len: max + 2, max })
    );
    assert!(entries(&map) == before, "a refused insert changed the map");
    assert_eq!(map.len(), 4);
    // Reads with a too-long key answer normally.
    assert_eq!(map.get_cloned(&too_long), None);
    assert_eq!(map.remove(&too_long), None);
    assert_eq!(
        map.lower_bound_with(Bound::Included(&too_long), |_, v| *v),
        Some(4)
    );
    assert_eq!(
        map.upper_bound_with(Bound::Included(&too_long), |_, v| *v),
        Some(5)
    );
    let mut n = 0;
    map.visit_range(
        (
            Bound::Excluded(&longest[..]),
            Bound::Included(&too_long[..]),
        ),
        |_, _| {
            n += 1;
            ControlFlow::Continue(())
        },
    );
    assert_eq!(n, 0);
    audit(&map, "after refused keys");

    // A second key of MAX_KEY_LEN sharing all but its last byte with the first.
    let mut sibling = longest.clone();
    sibling[max - 1] = 0xac;
    assert_eq!(map.insert(&sibling, 8), Ok(None));
    assert_eq!(map.get_cloned(&sibling), Some(8));
    assert_eq!(map.get_cloned(&longest), Some(5));
    assert_eq!(
        map.upper_bound_with(Bound::Excluded(&sibling), |_, v| *v),
        Some(5)
    );
    audit(&map, "two keys of MAX_KEY_LEN");
    assert_eq!(map.remove(&longest), Some(5));
    assert_eq!(map.remove(&sibling), Some(8));
    assert_eq!(map.len(), 3);
    audit(&map, "after removing the longest keys");
}

#[test]
fn with_config_rejects_each_out_of_range_field() {
    type Edit = fn(&mut Config);
    let bad: [(&str, Edit); 11] = [
        ("symbol_bits = 0", |c| c.symbol_bits = 0),
        ("symbol_bits = 6", |c| c.symbol_bits = 6),
        ("prefetch_depth = 0", |c| c.prefetch_depth = 0),
        ("prefetch_depth = 17", |c| c.prefetch_depth = 17),
        ("max_load_factor = 0.49", |c| c.max_load_factor = 0.49),
        ("max_load_factor = 0.951", |c| c.max_load_factor = 0.951),
        ("max_load_factor = NaN", |c| c.max_load_factor = f64::NAN),
        ("max_load_factor = inf", |c| {
            c.max_load_factor = f64::INFINITY
        }),
        ("max_load_factor = 1", |c| c.max_load_factor = 1.0),
        ("initial_buckets = 0", |c| c.initial_buckets = 0),
        ("all at once", |c| {
            c.symbol_bits = 0;
            c.prefetch_depth = 0;
            c.max_load_factor = 0.0;
            c.initial_buckets = 0;
        }),
    ];
    for (what, edit) in bad {
        let mut c = Config::default();
        edit(&mut c);
        match Map::<u64>::with_config(c) {
            Err(Error::InvalidConfig { .. }) => {}
            Err(e) => panic!("with_config({what}) failed with the wrong error: {e:?}"),
            Ok(_) => panic!("with_config({what}) was accepted"),
        }
    }
    // The ends of every range are accepted and give a working map reporting its config.
    let good: [(&str, Edit); 6] = [
        ("symbol_bits = 1", |c| c.symbol_bits = 1),
        ("prefetch_depth = 1", |c| c.prefetch_depth = 1),
        ("prefetch_depth = 16", |c| c.prefetch_depth = 16),
        ("max_load_factor = 0.5", |c| c.max_load_factor = 0.5),
        ("max_load_factor = 0.95", |c| c.max_load_factor = 0.95),
        ("initial_buckets = 1", |c| c.initial_buckets = 1),
    ];
    for (what, edit) in good {
        let mut c = Config::default();
        edit(&mut c);
        let (bits, depth, load) = (c.symbol_bits, c.prefetch_depth, c.max_load_factor);
        let map = match Map::<u64>::with_config(c) {
            Ok(m) => m,
            Err(e) => panic!("with_config({what}) was refused: {e}"),
        };
        assert_eq!(map.config().symbol_bits, bits, "{what}");
        assert_eq!(map.config().prefetch_depth, depth, "{what}");
        assert_eq!(map.config().max_load_factor, load, "{what}");
        for i in 0..300u64 {
            assert_eq!(map.insert(&i.to_be_bytes(), i), Ok(None), "{what}");
        }
        for i in 0..300u64 {
            assert_eq!(map.get_cloned(&i.to_be_bytes()), Some(i), "{what}");
        }
        assert_eq!(map.len(), 300);
        audit(&map, what);
    }
    let map = Map::<u64>::default();
    assert!(map.is_empty());
    assert_eq!(map.config().symbol_bits, Config::default().symbol_bits);
}

// ---------------------------------------------------------------------------------------------
// 7. Quick stress for CI
// ---------------------------------------------------------------------------------------------

#[test]
fn stress_small_quick() {
    for (sharing, seed) in [(Sharing::Partitioned, 71), (Sharing::Shared, 72)] {
        concurrent::stress(&growth_subject(), Plan::quick(sharing, seed));
    }
    concurrent::range_visits_under_churn(&growth_subject(), ChurnPlan::quick(73));
}

// ---------------------------------------------------------------------------------------------
// 8. Clearing and shrinking
// ---------------------------------------------------------------------------------------------

/// `clear` empties the map, drops every value once (after reclamation), returns memory, and
/// leaves a map that works; readers running during a clear see either state, never a mix that
/// loses a key written after it.
#[test]
fn clear_empties_and_the_map_stays_usable() {
    let map = ConcurrentCuckooTrie::<u64>::with_config(Config {
        initial_buckets: 1,
        max_load_factor: 0.5,
        ..Config::default()
    })
    .unwrap();
    let empty = map.memory_usage();
    for i in 0..20_000u64 {
        map.insert(&i.to_be_bytes(), i).unwrap();
    }
    assert!(map.memory_usage() > empty * 4);
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..200 {
                if let Some(v) = map.get_cloned(&7u64.to_be_bytes()) {
                    assert_eq!(v, 7);
                }
                let mut last: Option<Vec<u8>> = None;
                map.visit_range(.., |k, _| {
                    assert!(last.as_deref().is_none_or(|l| l < k), "visit out of order");
                    last = Some(k.to_vec());
                    ControlFlow::Continue(())
                });
            }
        });
        map.clear().unwrap();
    });
    assert_eq!(map.len(), 0);
    assert!(map.is_empty());
    assert_eq!(map.get_cloned(&7u64.to_be_bytes()), None);
    map.check_invariants().unwrap();
    for i in 0..100u64 {
        assert_eq!(map.insert(&i.to_be_bytes(), i + 1).unwrap(), None);
    }
    assert_eq!(map.len(), 100);
    assert_eq!(map.get_cloned(&42u64.to_be_bytes()), Some(43));
    map.check_invariants().unwrap();
}

/// After every key is removed, the table shrinks back near an empty map's (the records go
/// through epoch reclamation, so only the mapped table is compared).
#[test]
fn table_shrinks_back_after_removing_every_key() {
    let map = ConcurrentCuckooTrie::<u64>::new();
    let empty = map.mapped_bytes();
    for i in 0..50_000u64 {
        map.insert(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes(), i)
            .unwrap();
    }
    let full = map.mapped_bytes();
    assert!(full > 16 * empty, "the table grew: {empty} -> {full} bytes");
    for i in 0..50_000u64 {
        assert_eq!(
            map.remove(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes()),
            Some(i)
        );
    }
    assert!(map.is_empty());
    let after = map.mapped_bytes();
    assert!(
        after <= 2 * empty,
        "table after removing everything: {after} bytes, empty map: {empty}"
    );
    map.check_invariants().unwrap();
}

// ---------------------------------------------------------------------------------------------
// 9. Growth helped by waiting writers
// ---------------------------------------------------------------------------------------------

/// Keys of three kinds, so that a copy meets every entry kind below and above its split into
/// tasks: random 8-byte keys (a bushy trie, thousands of tasks), URL-like keys with a long
/// shared prefix (jump chains at the top), and 1 KiB keys that differ only at the end (long
/// chains inside tasks). Distinct, so that each has one writer and one expected value.
fn growth_keys(n: usize) -> Vec<Vec<u8>> {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut seen = std::collections::HashSet::new();
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match i % 8 {
                0..=4 => x.to_be_bytes().to_vec(),
                5 | 6 => format!("https://example.com/items/{}/{x:x}", x % 97).into_bytes(),
                _ => {
                    let mut k = vec![0xAB; 1024];
                    k.extend_from_slice(&x.to_be_bytes()[..3]);
                    k
                }
            }
        })
        .filter(|k| seen.insert(k.clone()))
        .collect()
}

/// Writers insert disjoint keys into a map that starts with one bucket, so it grows a dozen
/// times while they run; the writers that find the table frozen walk subtrees for the
/// resizing one. Every key must be there with its value, in order, and the trie must audit.
fn growth_with_helping_writers(writers: usize, n: usize) {
    let map: Map<u64> = ctrie(growth_config());
    let keys = growth_keys(n);
    std::thread::scope(|s| {
        for w in 0..writers {
            let (map, keys) = (&map, &keys);
            s.spawn(move || {
                for i in (w..keys.len()).step_by(writers) {
                    map.insert(&keys[i], i as u64).expect("insert");
                }
            });
        }
    });
    let want: std::collections::BTreeMap<&[u8], u64> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_slice(), i as u64))
        .collect();
    assert_eq!(map.len(), want.len());
    let guard = mlpdex::epoch::pin();
    let got: Vec<(&[u8], u64)> = map.iter(&guard).map(|(k, v)| (k, *v)).collect();
    let expect: Vec<(&[u8], u64)> = want.iter().map(|(k, v)| (*k, *v)).collect();
    assert!(
        got == expect,
        "the grown map's contents differ from what was inserted"
    );
    let back: Vec<(&[u8], u64)> = map.iter(&guard).rev().map(|(k, v)| (k, *v)).collect();
    assert!(
        back.iter().rev().eq(expect.iter()),
        "reverse iteration differs"
    );
    audit(&map, "after growth with helping writers");
}

#[test]
fn growth_with_2_helping_writers() {
    growth_with_helping_writers(2, 60_000);
}

#[test]
fn growth_with_8_helping_writers_oversubscribed() {
    growth_with_helping_writers(8, 60_000);
}

// ---------------------------------------------------------------------------------------------
// 10. Explicit resizes: reserve and shrink_to_fit
// ---------------------------------------------------------------------------------------------

/// `reserve` grows the table and `shrink_to_fit` gives the memory back, the contents staying
/// as they were; lookups of fixed keys never miss while a driver alternates the two and a
/// writer churns other keys, which waits for each copy and helps with it.
#[test]
fn reserve_and_shrink_to_fit_keep_every_key_while_readers_and_a_writer_run() {
    let map: Map<u64> = ctrie(default_config());
    let fixed = growth_keys(20_000);
    for (i, k) in fixed.iter().enumerate() {
        map.insert(k, i as u64).expect("insert");
    }
    let before = map.mapped_bytes();
    map.reserve(200_000);
    let grown = map.mapped_bytes();
    assert!(grown > before, "reserve kept {before} bytes, now {grown}");
    map.shrink_to_fit();
    let shrunk = map.mapped_bytes();
    assert!(
        shrunk < grown,
        "shrink_to_fit kept {grown} bytes, now {shrunk}"
    );
    audit(&map, "after reserve and shrink_to_fit");
    map.reserve(0);
    assert_eq!(
        map.mapped_bytes(),
        shrunk,
        "reserve(0) resized a table that fits"
    );

    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        for r in 0..2 {
            let (map, fixed, stop) = (&map, &fixed, &stop);
            s.spawn(move || {
                let guard_every = 64;
                let mut i = r;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let guard = mlpdex::epoch::pin();
                    for _ in 0..guard_every {
                        let k = &fixed[i % fixed.len()];
                        assert_eq!(map.get(k, &guard), Some(&((i % fixed.len()) as u64)));
                        i += 7;
                    }
                }
            });
        }
        let (map, stop) = (&map, &stop);
        let writer = s.spawn(move || {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let k = format!("churn-{}", n % 5_000);
                if n % 3 == 2 {
                    map.remove(k.as_bytes());
                } else {
                    map.insert(k.as_bytes(), n).expect("insert");
                }
                n += 1;
            }
        });
        for _ in 0..6 {
            map.reserve(map.len() * 4);
            map.shrink_to_fit();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        writer.join().expect("writer");
    });
    let guard = mlpdex::epoch::pin();
    for (i, k) in fixed.iter().enumerate() {
        assert_eq!(map.get(k, &guard), Some(&(i as u64)));
    }
    audit(&map, "after resizes under churn");
}

// ---------------------------------------------------------------------------------------------
// 11. Batched lookups
// ---------------------------------------------------------------------------------------------

/// `get_batch` in batches of 1 to 40 keys (on, below and across its 16-key chunks) while
/// writers grow the table from one bucket and churn other keys: keys present throughout are
/// always found with their value, churned keys are absent or hold a value of their own (never
/// another key's), keys never inserted are never found, and once the writers stop every
/// answer is `get`'s.
#[test]
fn batched_lookups_under_growth_and_churn() {
    batched_lookups_under_growth_and_churn_with(growth_config());
}

#[test]
fn batched_lookups_under_growth_and_churn_key_index() {
    batched_lookups_under_growth_and_churn_with(key_index_config());
}

fn batched_lookups_under_growth_and_churn_with(cfg: Config) {
    let map: Map<u64> = ctrie(cfg);
    let keys = growth_keys(24_000);
    let (fixed, rest) = keys.split_at(8_000);
    let (grown, absent) = rest.split_at(12_000);
    for (i, k) in fixed.iter().enumerate() {
        map.insert(k, i as u64).expect("insert");
    }
    let churned: Vec<Vec<u8>> = (0..500)
        .map(|i| format!("churn-{i}").into_bytes())
        .collect();
    let writers_left = std::sync::atomic::AtomicUsize::new(2);
    std::thread::scope(|s| {
        for r in 0..2usize {
            let (map, fixed, churned, absent, writers_left) =
                (&map, fixed, &churned, absent, &writers_left);
            s.spawn(move || {
                let mut round = r;
                while writers_left.load(std::sync::atomic::Ordering::Acquire) > 0 {
                    let len = [1, 15, 16, 17, 33, 40][round % 6];
                    // Each key is chosen with its expectation: 0 fixed, 1 churned, 2 absent.
                    let picks: Vec<(usize, usize)> = (0..len)
                        .map(|j| {
                            let x = round * 41 + j * 7;
                            match x % 3 {
                                0 => (0, x % fixed.len()),
                                1 => (1, x % churned.len()),
                                _ => (2, x % absent.len()),
                            }
                        })
                        .collect();
                    let batch: Vec<&[u8]> = picks
                        .iter()
                        .map(|&(kind, i)| match kind {
                            0 => fixed[i].as_slice(),
                            1 => churned[i].as_slice(),
                            _ => absent[i].as_slice(),
                        })
                        .collect();
                    let guard = mlpdex::epoch::pin();
                    let mut out = vec![None; len];
                    map.get_batch(&batch, &mut out, &guard);
                    for (&(kind, i), got) in picks.iter().zip(&out) {
                        match kind {
                            0 => assert_eq!(*got, Some(&(i as u64)), "fixed key {i}"),
                            1 => assert!(
                                got.is_none_or(|v| *v % churned.len() as u64 == i as u64),
                                "churned key {i} answered {got:?}"
                            ),
                            _ => assert_eq!(*got, None, "never-inserted key {i}"),
                        }
                    }
                    round += 1;
                }
            });
        }
        let (map, grown, churned, writers_left) = (&map, grown, &churned, &writers_left);
        s.spawn(move || {
            for (i, k) in grown.iter().enumerate() {
                map.insert(k, (fixed.len() + i) as u64).expect("insert");
            }
            writers_left.fetch_sub(1, std::sync::atomic::Ordering::Release);
        });
        s.spawn(move || {
            for n in 0..60_000u64 {
                let i = (n * 13) as usize % churned.len();
                if n % 3 == 2 {
                    map.remove(&churned[i]);
                } else {
                    // A value that names its key: `value % churned.len() == i`.
                    let v = i as u64 + churned.len() as u64 * n;
                    map.insert(&churned[i], v).expect("insert");
                }
            }
            writers_left.fetch_sub(1, std::sync::atomic::Ordering::Release);
        });
    });
    let guard = mlpdex::epoch::pin();
    let all: Vec<&[u8]> = keys.iter().chain(&churned).map(Vec::as_slice).collect();
    let mut out = vec![None; all.len()];
    map.get_batch(&all, &mut out, &guard);
    for (k, got) in all.iter().zip(&out) {
        assert_eq!(*got, map.get(k, &guard), "get_batch and get differ at rest");
    }
    audit(&map, "after batched lookups under growth and churn");
}
