//! Integration tests of [`mlpdex::mlp_index::ConcurrentMlpIndex`]
//! (`cargo test -p mlpdex --release --test concurrent_mlp_index`).
//!
//! The multi-threaded checks are the generic harnesses of [`mlpdex::testing::concurrent`],
//! given the map as a [`Subject`] of 8-byte keys (`with_key_width(8)`: the harnesses' key
//! universes cut or padded to 8 bytes, which keeps their 0x00/0xFF bytes and shared
//! prefixes), audited with `check_invariants()`. What is covered:
//!
//! 1. **Differential runs**, single-threaded through `&self`, against the `BTreeMap` oracle:
//!    8-byte keys, five seeds of 20,000 operations, `check_invariants()` after each; and the
//!    inherent API (`range` both ways and meeting in the middle, bounds, `first`/`last`)
//!    against `BTreeMap` on random ranges.
//! 2. **Property tests**: arbitrary operation sequences on 8-byte keys, then the audit.
//! 3. **Multi-threaded stress** ([`concurrent::stress`]: 2 and 4 writers with 2 readers,
//!    partitioned and shared keys; 6 writers with 2 readers, 8 threads on 2 cores):
//!    linearizability of reads and of returned values, exact final contents; the table grows
//!    and shrinks during the runs (the smallest table is 64 buckets).
//! 4. **Range visits under churn**, **same-key stress**, **linearizable histories** (3,000
//!    runs of 4 and of 8 threads), as for the other concurrent maps.
//! 5. **Lookups during growth**: readers look up a fixed set of keys while a writer inserts
//!    200,000 more, growing the table a dozen times and clearing it at the end; every lookup
//!    of a fixed key finds its value until the clear. **Lookups beside cuckoo relocations**:
//!    the same in the smallest table kept 90 % full, the read window of `get` widened by the
//!    `testing` hook `set_lookup_delay`, so that a lookup trusting a torn read would fail.
//! 6. Config: the paper layout and bad load factors are refused; `clear` gives the memory
//!    back; `FromIterator`, `Extend` and `Debug`.
//!
//! No test asserts on timing.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use mlpdex::mlp_index::{ConcurrentMlpIndex, Config, Layout};
use mlpdex::testing::concurrent::{
    self, ChurnPlan, HistoryPlan, Plan, SameKeyPlan, Sharing, Subject,
};
use mlpdex::testing::{
    KeyShape, TestRng, arb_ops_with, arb_u64_key, run_ops_concurrent, try_differential_concurrent,
};
use mlpdex::{ConcurrentOrderedMap, Error};
use proptest::prelude::*;

type Map = ConcurrentMlpIndex;

/// A lower load factor than the default, so that the table grows and shrinks more often.
fn growth_config() -> Config {
    Config {
        max_load_factor: Some(0.5),
        ..Config::default()
    }
}

fn subject(name: &str, cfg: fn() -> Config) -> Subject<Map> {
    Subject::new(format!("concurrent mlp index, {name} config"), move || {
        Map::with_config(cfg()).expect("a valid config")
    })
    .with_audit(Map::check_invariants)
    .with_key_width(8)
}

fn default_subject() -> Subject<Map> {
    subject("default", Config::default)
}

fn growth_subject() -> Subject<Map> {
    subject("growth", growth_config)
}

/// Sets its flag when dropped: a writer thread holds one so that its readers stop however it
/// ends (a failed check must not leave them spinning).
struct Stop<'a>(&'a AtomicBool);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Differential runs
// ---------------------------------------------------------------------------------------------

#[test]
fn differential_against_btreemap() {
    for seed in [1, 2, 3, 4, 5] {
        for cfg in [Config::default, growth_config] {
            let r = try_differential_concurrent(
                || Map::with_config(cfg()).expect("valid"),
                KeyShape::U64,
                seed,
                20_000,
            );
            if let Err(d) = r {
                panic!("seed {seed}: {d}");
            }
        }
    }
}

/// Keys with the shapes the trie finds hard: shared prefixes of every length, all-zero and
/// all-ones bytes, neighbours.
fn adversarial_key(rng: &mut TestRng) -> u64 {
    match rng.index(6) {
        0 => rng.next_u64(),
        1 => rng.next_u64() & 0xFF,
        2 => u64::MAX - (rng.next_u64() & 0xFF),
        3 => 0x0102_0304_0000_0000 | (rng.next_u64() & 0xFFFF),
        4 => (rng.next_u64() & 0xFF) << 56 | 0x00FF_FFFF_FFFF_FF00 | (rng.next_u64() & 3),
        _ => 0xAB00_0000_0000_0000 | (rng.next_u64() & 0xFF) << (8 * rng.index(7)),
    }
}

fn bound(rng: &mut TestRng, x: u64) -> Bound<u64> {
    match rng.index(3) {
        0 => Bound::Included(x),
        1 => Bound::Excluded(x),
        _ => Bound::Unbounded,
    }
}

#[test]
fn inherent_api_matches_btreemap() {
    let mut rng = TestRng::new(0xC0_4C);
    let map = Map::new();
    let mut model = BTreeMap::new();
    for step in 0..30_000u64 {
        let k = adversarial_key(&mut rng);
        match rng.index(10) {
            0..=4 => assert_eq!(map.insert(k, step).unwrap(), model.insert(k, step)),
            5..=6 => assert_eq!(map.remove(k), model.remove(&k)),
            7 => assert_eq!(map.get(k), model.get(&k).copied(), "get {k:#x}"),
            8 => {
                let k2 = adversarial_key(&mut rng);
                let (lo, hi) = (bound(&mut rng, k.min(k2)), bound(&mut rng, k.max(k2)));
                let valid = match (lo, hi) {
                    (
                        Bound::Included(a) | Bound::Excluded(a),
                        Bound::Included(b) | Bound::Excluded(b),
                    ) => {
                        a < b
                            || (a == b
                                && matches!((lo, hi), (Bound::Included(_), Bound::Included(_))))
                    }
                    _ => true,
                };
                let want: Vec<(u64, u64)> = if valid {
                    model.range((lo, hi)).map(|(k, v)| (*k, *v)).collect()
                } else {
                    Vec::new()
                };
                let got: Vec<(u64, u64)> = map.range((lo, hi)).collect();
                assert_eq!(got, want, "range {lo:?}..{hi:?}");
                let mut back: Vec<(u64, u64)> = map.range((lo, hi)).rev().collect();
                back.reverse();
                assert_eq!(back, want, "reversed range {lo:?}..{hi:?}");
                // Both ends at once, alternating, meet without losing or repeating entries.
                let mut it = map.range((lo, hi));
                let (mut front, mut tail) = (Vec::new(), Vec::new());
                loop {
                    let n = if (front.len() + tail.len()) % 3 == 0 {
                        it.next_back()
                    } else {
                        it.next()
                    };
                    match n {
                        Some(e) if (front.len() + tail.len()) % 3 == 0 => tail.push(e),
                        Some(e) => front.push(e),
                        None => break,
                    }
                }
                tail.reverse();
                front.extend(tail);
                assert_eq!(front, want, "range {lo:?}..{hi:?} from both ends");
            }
            _ => {
                let b = bound(&mut rng, k);
                let lower = match b {
                    Bound::Included(x) => model.range(x..).next(),
                    Bound::Excluded(x) => {
                        model.range((Bound::Excluded(x), Bound::Unbounded)).next()
                    }
                    Bound::Unbounded => model.iter().next(),
                };
                assert_eq!(
                    map.lower_bound(b),
                    lower.map(|(k, v)| (*k, *v)),
                    "lower_bound {b:?}"
                );
                let upper = match b {
                    Bound::Included(x) => model.range(..=x).next_back(),
                    Bound::Excluded(x) => model.range(..x).next_back(),
                    Bound::Unbounded => model.iter().next_back(),
                };
                assert_eq!(
                    map.upper_bound(b),
                    upper.map(|(k, v)| (*k, *v)),
                    "upper_bound {b:?}"
                );
            }
        }
        if step % 5_000 == 0 {
            map.check_invariants().unwrap();
            assert_eq!(map.len(), model.len());
            assert_eq!(map.first(), model.first_key_value().map(|(k, v)| (*k, *v)));
            assert_eq!(map.last(), model.last_key_value().map(|(k, v)| (*k, *v)));
        }
    }
    map.check_invariants().unwrap();
    let all: Vec<(u64, u64)> = map.iter().collect();
    assert_eq!(all, model.into_iter().collect::<Vec<_>>());
}

// ---------------------------------------------------------------------------------------------
// 2. Property tests
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 192,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn proptest_u64_key_ops(ops in arb_ops_with(arb_u64_key())) {
        let map = Map::with_config(growth_config()).unwrap();
        run_ops_concurrent(&map, &ops).map_err(TestCaseError::fail)?;
        map.check_invariants().map_err(TestCaseError::fail)?;
    }
}

// ---------------------------------------------------------------------------------------------
// 3. Multi-threaded stress
// ---------------------------------------------------------------------------------------------

#[test]
fn stress_partitioned_2_writers_2_readers() {
    concurrent::stress(
        &growth_subject(),
        Plan::standard(Sharing::Partitioned, 2, 2, 0x3170_0001),
    );
}

#[test]
fn stress_partitioned_4_writers_2_readers() {
    concurrent::stress(
        &growth_subject(),
        Plan::standard(Sharing::Partitioned, 4, 2, 0x3170_0002),
    );
}

#[test]
fn stress_shared_keys_2_writers_2_readers() {
    concurrent::stress(
        &default_subject(),
        Plan::standard(Sharing::Shared, 2, 2, 0x3170_0003),
    );
}

/// 8 threads on 2 cores.
#[test]
fn stress_shared_keys_6_writers_2_readers() {
    concurrent::stress(
        &growth_subject(),
        Plan {
            phase_ops: 30_000 / 6,
            ..Plan::standard(Sharing::Shared, 6, 2, 0x3170_0006)
        },
    );
}

#[test]
fn stress_small_quick() {
    concurrent::stress(
        &growth_subject(),
        Plan::quick(Sharing::Partitioned, 0x3170_0007),
    );
    concurrent::stress(&growth_subject(), Plan::quick(Sharing::Shared, 0x3170_0008));
}

// ---------------------------------------------------------------------------------------------
// 4. Range visits under churn, same keys, histories
// ---------------------------------------------------------------------------------------------

#[test]
fn range_visits_under_churn_2_writers() {
    concurrent::range_visits_under_churn(&growth_subject(), ChurnPlan::standard(2, 0x3171_0001));
}

#[test]
fn range_visits_under_churn_4_writers() {
    concurrent::range_visits_under_churn(&growth_subject(), ChurnPlan::standard(4, 0x3171_0002));
}

#[test]
fn same_key_stress_1_key_8_threads() {
    concurrent::same_key_stress(&default_subject(), SameKeyPlan::standard(1, 8, 0x3172_0001));
}

#[test]
fn same_key_stress_16_keys_6_threads() {
    concurrent::same_key_stress(&growth_subject(), SameKeyPlan::standard(16, 6, 0x3172_0016));
}

#[test]
fn same_key_stress_400_keys_4_threads() {
    concurrent::same_key_stress(
        &growth_subject(),
        SameKeyPlan {
            ops: 120_000,
            ..SameKeyPlan::standard(400, 4, 0x3172_0400)
        },
    );
}

#[test]
fn linearizable_histories_4_threads() {
    concurrent::linearizable_histories(&default_subject(), HistoryPlan::standard(4, 0x3173_0004));
}

#[test]
fn linearizable_histories_8_threads_growing() {
    concurrent::linearizable_histories(&growth_subject(), HistoryPlan::standard(8, 0x3173_0008));
}

// ---------------------------------------------------------------------------------------------
// 5. Lookups during growth
// ---------------------------------------------------------------------------------------------

#[test]
fn lookups_find_every_fixed_key_while_the_table_grows() {
    const FIXED: u64 = 2_000;
    const MORE: u64 = 200_000;
    let map = Map::new();
    let fixed = |i: u64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for i in 0..FIXED {
        map.insert(fixed(i), i).unwrap();
    }
    let cleared = AtomicBool::new(false);
    let grown_before = map.memory_usage();
    std::thread::scope(|s| {
        for r in 0..2u64 {
            let (map, cleared) = (&map, &cleared);
            s.spawn(move || {
                let mut rng = TestRng::new(r);
                let mut lookups = 0u64;
                while !cleared.load(Ordering::Acquire) {
                    let i = rng.next_u64() % FIXED;
                    let got = map.get(fixed(i));
                    if got != Some(i) {
                        // Only the final clear may take the keys away.
                        assert!(
                            cleared.load(Ordering::Acquire),
                            "fixed key {i} read {got:?}"
                        );
                    }
                    lookups += 1;
                }
                assert!(lookups > 0);
            });
        }
        let (map, cleared) = (&map, &cleared);
        s.spawn(move || {
            let stop = Stop(cleared);
            for j in 0..MORE {
                // Even keys: never a fixed one (those are odd).
                map.insert(j.wrapping_mul(0x2545_F491_4F6C_DD1D) & !1, j)
                    .unwrap();
            }
            // 200,000 keys need a table of about 3.5 MiB (16 bytes a key at 90 % load).
            assert!(
                map.memory_usage() > grown_before + (2 << 20),
                "the table grew"
            );
            for j in (0..MORE).step_by(2) {
                map.remove(j.wrapping_mul(0x2545_F491_4F6C_DD1D) & !1);
            }
            map.check_invariants().unwrap();
            drop(stop);
            map.clear();
        });
    });
    assert!(map.is_empty());
    assert_eq!(map.get(fixed(0)), None);
    map.check_invariants().unwrap();
}

/// The lookups' final re-check, under cuckoo relocations. Readers look up fixed keys, always
/// present with known values, while a writer inserts and removes other keys in the smallest
/// table (64 buckets) kept about 90 % full, so that its cuckoo placements keep evicting the
/// fixed keys' entries and moving them between buckets and slots. `set_lookup_delay` widens
/// the window between a lookup finding an entry and reading it (after it loaded the stripe
/// versions), so that the writer often moves or replaces the entry within it; every lookup
/// must still return the key's value, which only the re-check of the versions at the end of
/// `get` guarantees (without the re-check this test fails).
#[test]
fn lookups_stay_exact_while_cuckoo_relocations_move_their_entries() {
    /// Keys looked up (odd; the other keys are even).
    const FIXED: u64 = 64;
    /// Other keys present at once: with the fixed ones, about 90 % of the 256 slots.
    const CHURN: u64 = 166;
    /// Insertions of other keys, each with the removal of the oldest.
    const WRITES: u64 = 20_000;
    let map = Map::with_config(Config {
        max_load_factor: Some(0.95),
        ..Config::default()
    })
    .unwrap();
    let fixed = |i: u64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let other = |j: u64| j.wrapping_mul(0x2545_F491_4F6C_DD1D) << 1;
    for i in 0..FIXED {
        map.insert(fixed(i), i).unwrap();
    }
    for j in 0..CHURN {
        map.insert(other(j), j).unwrap();
    }
    let smallest = map.memory_usage();
    map.set_lookup_delay(8);
    let done = AtomicBool::new(false);
    let reader_gone = AtomicBool::new(false);
    let lookups = AtomicU64::new(0);
    std::thread::scope(|s| {
        for r in 0..2u64 {
            let (map, done, reader_gone, lookups) = (&map, &done, &reader_gone, &lookups);
            s.spawn(move || {
                // A failed reader must not leave the writer waiting for its lookups.
                let _gone = Stop(reader_gone);
                let mut rng = TestRng::new(0x5EED + r);
                while !done.load(Ordering::Acquire) {
                    let i = rng.next_u64() % FIXED;
                    assert_eq!(map.get(fixed(i)), Some(i), "fixed key {i}");
                    lookups.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let _stop = Stop(&done);
        for j in CHURN..CHURN + WRITES {
            assert_eq!(map.insert(other(j), j).unwrap(), None);
            assert_eq!(map.remove(other(j - CHURN)), Some(j - CHURN));
            // Waits for a lookup to complete: a lookup reads again whenever a write changed
            // its buckets, so back-to-back writes would leave the readers checking nothing.
            let seen = lookups.load(Ordering::Relaxed);
            while lookups.load(Ordering::Relaxed) == seen && !reader_gone.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
        }
    });
    // Still the smallest table: the writes moved entries within it rather than growing it.
    assert_eq!(map.memory_usage(), smallest);
    map.check_invariants().unwrap();
    assert_eq!(map.len(), (FIXED + CHURN) as usize);
}

// ---------------------------------------------------------------------------------------------
// 6. Config, memory, std traits
// ---------------------------------------------------------------------------------------------

#[test]
fn config_refuses_the_paper_layout_and_bad_load_factors() {
    let paper = Config {
        layout: Layout::Paper,
        ..Config::default()
    };
    assert!(matches!(
        Map::with_config(paper),
        Err(Error::InvalidConfig { .. })
    ));
    for lf in [0.3, 0.99] {
        let bad = Config {
            max_load_factor: Some(lf),
            ..Config::default()
        };
        assert!(matches!(
            Map::with_config(bad),
            Err(Error::InvalidConfig { .. })
        ));
    }
    for lf in [0.5, 0.95] {
        let ok = Config {
            max_load_factor: Some(lf),
            ..Config::default()
        };
        let map = Map::with_config(ok).unwrap();
        map.insert(1, 1).unwrap();
        assert_eq!(map.get(1), Some(1));
    }
}

#[test]
fn clear_gives_memory_back_and_the_map_stays_usable() {
    let map = Map::new();
    let empty = map.memory_usage();
    assert!(
        empty < 64 << 10,
        "an empty map maps no table: {empty} bytes"
    );
    for i in 0..50_000u64 {
        map.insert(i * 7919, i).unwrap();
    }
    assert!(map.memory_usage() > 2 << 20);
    map.clear();
    assert_eq!(map.memory_usage(), empty);
    assert!(map.is_empty() && map.iter().next().is_none());
    map.insert(5, 50).unwrap();
    assert_eq!(map.get(5), Some(50));
    map.check_invariants().unwrap();
}

#[test]
fn std_traits_and_the_trait_api() {
    let mut map: Map = (0..10u64).map(|i| (i, i * 10)).collect();
    map.extend([(10, 100), (11, 110)]);
    assert_eq!(map.len(), 12);
    assert_eq!(
        format!("{:?}", Map::from_iter([(2, 20), (1, 10)])),
        "{1: 10, 2: 20}"
    );
    assert_eq!((&map).into_iter().nth(3), Some((3, 30)));
    // The trait: 8-byte big-endian keys; other widths are absent or refused.
    assert_eq!(map.get_cloned(&7u64.to_be_bytes()), Some(70));
    assert_eq!(map.get_cloned(b"short"), None);
    assert!(matches!(
        ConcurrentOrderedMap::insert(&map, b"short", 1),
        Err(Error::KeyWidth {
            len: 5,
            expected: 8
        })
    ));
    let mut seen = Vec::new();
    map.visit_range_rev(..=&5u64.to_be_bytes()[..], |k, v| {
        seen.push((u64::from_be_bytes(k.try_into().unwrap()), *v));
        std::ops::ControlFlow::Continue(())
    });
    assert_eq!(seen, [(5, 50), (4, 40), (3, 30), (2, 20), (1, 10), (0, 0)]);
}

#[test]
fn reserve_and_shrink_to_fit_rebuild_while_lookups_run() {
    let map = Map::new();
    for i in 0..20_000u64 {
        map.insert(i * 104_729, i).unwrap();
    }
    let before = map.memory_usage();
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let (map, done) = (&map, &done);
        s.spawn(move || {
            let mut i = 0u64;
            while !done.load(Ordering::Acquire) {
                assert_eq!(map.get(i * 104_729), Some(i));
                i = (i + 7) % 20_000;
            }
        });
        let _stop = Stop(done);
        for _ in 0..3 {
            map.reserve(200_000);
            assert!(
                map.memory_usage() > before + (2 << 20),
                "reserve grew the table"
            );
            map.check_invariants().unwrap();
            map.shrink_to_fit();
            // Back to the size growth gives 20,000 keys (which may be a little more than the
            // table grown insert by insert, at up to the maximum load).
            assert!(
                map.memory_usage() < before + (1 << 20),
                "shrink_to_fit gave it back"
            );
            map.check_invariants().unwrap();
        }
    });
    assert_eq!(map.len(), 20_000);
    map.try_reserve(10).unwrap();
    // An empty map reserves too (its first table).
    let empty = Map::new();
    empty.reserve(1_000);
    empty.shrink_to_fit();
    empty.check_invariants().unwrap();
}
