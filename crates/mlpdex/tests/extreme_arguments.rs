//! Issue 16's overflow audit, for the public entry points of the structures (the substrate's
//! functions and the HOPE internals, `hope::{dict, select}`, are tested beside their code): every argument that is an index, a length, a
//! capacity, a ratio or an integer key at or near its type's maximum either works or is
//! refused with a typed `Error`; nothing wraps into a wrong answer.
//!
//! Meant to pass both in the test profile (overflow checks on, so an overflow would panic) and
//! in a build without overflow checks (where it would wrap):
//! `CARGO_PROFILE_TEST_OVERFLOW_CHECKS=false CARGO_PROFILE_TEST_DEBUG_ASSERTIONS=false
//! cargo test -p mlpdex --test extreme_arguments`.

use std::ops::Bound;

use mlpdex::Error;
use mlpdex::fst::{Config as FstConfig, FstBuilder, KeyStorage};
use mlpdex::hope::{Encoder, Scheme};
use mlpdex::mlp_index::{Config as MlpConfig, Layout, MlpIndex};
use mlpdex::skiplist::{Config as SkipConfig, SkipList};
use mlpdex::surf::{SurfBuilder, SurfKind};

fn keys() -> Vec<Vec<u8>> {
    let mut k: Vec<Vec<u8>> = (0..500u32)
        .map(|i| format!("key{:05}", i * 7 % 1000).into_bytes())
        .collect();
    k.sort();
    k.dedup();
    k
}

#[test]
fn skiplist_prefetch_depth_past_the_limit_is_refused() {
    for depth in [7, usize::MAX - 1, usize::MAX] {
        assert!(
            matches!(
                SkipList::<u64>::with_config(SkipConfig {
                    prefetch_depth: depth
                }),
                Err(Error::InvalidConfig { .. })
            ),
            "prefetch_depth = {depth}"
        );
    }
}

#[test]
fn fst_builds_at_extreme_dense_ratios() {
    let keys = keys();
    for ratio in [0, 1, u32::MAX - 1, u32::MAX] {
        for storage in [KeyStorage::Complete, KeyStorage::UniquePrefixes] {
            let mut b = FstBuilder::with_config(FstConfig {
                dense_ratio: ratio,
                keys: storage,
                ..FstConfig::default()
            });
            for (i, k) in keys.iter().enumerate() {
                b.push(k, i as u64).unwrap();
            }
            let fst = b.finish().unwrap();
            assert_eq!(fst.len(), keys.len(), "ratio {ratio}");
            for (i, k) in keys.iter().enumerate() {
                assert_eq!(fst.get(k), Some(i as u64), "ratio {ratio} key #{i}");
            }
        }
    }
}

#[test]
fn surf_builds_at_extreme_dense_ratios_and_refuses_bad_bit_counts() {
    let keys = keys();
    for ratio in [0, u32::MAX] {
        let mut b = SurfBuilder::with_dense_ratio(SurfKind::Real(8), ratio).unwrap();
        for k in &keys {
            b.push(k).unwrap();
        }
        let surf = b.finish().unwrap();
        for k in &keys {
            assert!(surf.may_contain(k), "ratio {ratio}: false negative");
        }
    }
    for kind in [
        SurfKind::Hash(0),
        SurfKind::Hash(65),
        SurfKind::Hash(u8::MAX),
        SurfKind::Real(u8::MAX),
        SurfKind::Mixed {
            hash: u8::MAX,
            real: u8::MAX,
        },
        SurfKind::Mixed { hash: 33, real: 1 },
    ] {
        assert!(
            matches!(
                SurfBuilder::with_dense_ratio(kind, u32::MAX),
                Err(Error::InvalidConfig { .. })
            ),
            "{kind:?}"
        );
    }
}

#[test]
fn hope_takes_any_limit_and_block_size() {
    let keys = keys();
    let sample: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    for &scheme in Scheme::ALL.iter() {
        for limit in [257, 1 << 20, usize::MAX - 1, usize::MAX] {
            let enc = Encoder::build_with_limit(scheme, sample.iter().copied(), limit)
                .unwrap_or_else(|e| panic!("{scheme:?} limit {limit}: {e}"));
            let one_by_one: Vec<Vec<u8>> = keys.iter().map(|k| enc.encode(k)).collect();
            assert!(one_by_one.is_sorted(), "{scheme:?}: order not kept");
            for block in [0, 1, usize::MAX - 1, usize::MAX] {
                let mut out = Vec::new();
                enc.encode_batch(&keys, block, &mut out);
                assert_eq!(out, one_by_one, "{scheme:?} limit {limit} block {block}");
            }
        }
        if scheme != Scheme::SingleChar && scheme != Scheme::DoubleChar {
            assert!(matches!(
                Encoder::build_with_limit(scheme, sample.iter().copied(), 0),
                Err(Error::InvalidConfig { .. })
            ));
        }
    }
}

#[test]
fn mlp_index_keys_at_the_ends_of_u64() {
    for layout in [Layout::Bucketized, Layout::Paper] {
        let mut m = MlpIndex::with_config(MlpConfig::with_layout(layout)).unwrap();
        for k in [0, 1, u64::MAX - 1, u64::MAX] {
            assert_eq!(m.insert(k, k ^ 1), Ok(None));
        }
        assert_eq!(m.lower_bound(Bound::Excluded(u64::MAX)), None);
        assert_eq!(m.upper_bound(Bound::Excluded(0)), None);
        assert_eq!(
            m.lower_bound(Bound::Excluded(u64::MAX - 1)),
            Some((u64::MAX, u64::MAX ^ 1))
        );
        assert_eq!(m.upper_bound(Bound::Excluded(1)), Some((0, 1)));
        let got: Vec<u64> = m.range(u64::MAX - 1..).map(|(k, _)| k).collect();
        assert_eq!(got, [u64::MAX - 1, u64::MAX], "{layout:?}");
        let got: Vec<u64> = m.range(..=u64::MAX).rev().map(|(k, _)| k).collect();
        assert_eq!(got, [u64::MAX, u64::MAX - 1, 1, 0], "{layout:?}");
        let got: Vec<u64> = m.range(..1).rev().map(|(k, _)| k).collect();
        assert_eq!(got, [0], "{layout:?}");
        assert_eq!(m.range(..0).count(), 0);
        assert_eq!(
            m.range((Bound::Excluded(u64::MAX), Bound::Unbounded))
                .count(),
            0
        );
        assert_eq!(m.range(u64::MAX..=u64::MAX).count(), 1);
        m.check_invariants().unwrap();
    }
}

#[test]
fn mlp_index_refuses_non_finite_load_factors() {
    for layout in [Layout::Bucketized, Layout::Paper] {
        for f in [f64::NAN, f64::INFINITY, f64::MAX, f64::MIN_POSITIVE, 0.0] {
            assert!(
                matches!(
                    MlpIndex::with_config(MlpConfig {
                        max_load_factor: Some(f),
                        ..MlpConfig::with_layout(layout)
                    }),
                    Err(Error::InvalidConfig { .. })
                ),
                "{layout:?} max_load_factor {f}"
            );
        }
    }
}
