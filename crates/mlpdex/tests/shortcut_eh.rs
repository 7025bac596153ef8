//! Shortcut extendible hashing against `HashMap<u64, u64>` (`cargo test -p mlpdex --test
//! shortcut_eh`).
//!
//! 1. **Differential runs** across splits, directory doublings and merges: long random
//!    operation sequences over adversarial key shapes (0 and `u64::MAX`, dense runs, keys
//!    whose hashes share long prefixes so one bucket splits many times), with and without the
//!    shortcut; the structure is audited along the way, and, each time the shortcut is in
//!    sync, every one of its slots is checked to map the page the traditional directory names.
//! 2. **Growth and shrinking**: a table grown to many buckets and emptied again merges back
//!    to a few buckets and gives its pool's pages back.
//! 3. **Concurrent readers** during the writer's splits, merges and the mapper's remaps never
//!    answer wrong: values encode their key and a version, and keys present throughout are
//!    always found.
//! 4. **Failures**: a pool size limit makes inserts fail with `OutOfMemory`, losing nothing;
//!    a directory past the kernel's mapping limit gives the shortcut up and keeps working.

#![cfg(target_os = "linux")]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use mlpdex::Error;
use mlpdex::shortcut_eh::{Config, ShortcutEh, hash};
use mlpdex::testing::TestRng;

fn map(shortcut: bool) -> ShortcutEh {
    ShortcutEh::with_config(Config {
        shortcut,
        ..Config::default()
    })
    .unwrap()
}

/// Key shapes.
#[derive(Clone, Copy, Debug)]
enum Shape {
    Uniform,
    Dense,
    Extremes,
    /// Keys whose hashes share their top 8 bits: one region of the directory splits deep.
    HashPrefix,
}

const SHAPES: [Shape; 4] = [
    Shape::Uniform,
    Shape::Dense,
    Shape::Extremes,
    Shape::HashPrefix,
];

/// `n` distinct keys of `shape`.
fn keys(shape: Shape, n: usize, rng: &mut TestRng) -> Vec<u64> {
    let mut out: Vec<u64> = match shape {
        Shape::Uniform => (0..n).map(|_| rng.next_u64()).collect(),
        Shape::Dense => (0..n as u64).collect(),
        Shape::Extremes => (0..n as u64 / 2).flat_map(|i| [i, u64::MAX - i]).collect(),
        Shape::HashPrefix => {
            let top = hash(0) >> 56;
            (0u64..).filter(|&k| hash(k) >> 56 == top).take(n).collect()
        }
    };
    out.sort_unstable();
    out.dedup();
    out
}

/// Random inserts, updates, removes and lookups over `pool` (with a bias towards growing
/// first, then shrinking), against a `HashMap`; the whole map is compared and audited every
/// `audit_every` steps.
fn differential(
    m: &mut ShortcutEh,
    pool: &[u64],
    steps: usize,
    rng: &mut TestRng,
    audit_every: usize,
) {
    let mut want: HashMap<u64, u64> = HashMap::new();
    for step in 0..steps {
        let k = pool[rng.index(pool.len())];
        let growing = step < steps / 2;
        match rng.index(10) {
            0..=4 if growing => {
                let v = rng.next_u64();
                assert_eq!(m.insert(k, v).unwrap(), want.insert(k, v), "insert {k}");
            }
            0..=1 => {
                let v = rng.next_u64();
                assert_eq!(m.insert(k, v).unwrap(), want.insert(k, v), "insert {k}");
            }
            2..=6 => assert_eq!(m.remove(k), want.remove(&k), "remove {k}"),
            _ => assert_eq!(m.get(k), want.get(&k).copied(), "get {k}"),
        }
        assert_eq!(m.len(), want.len());
        if step % audit_every == 0 {
            check_whole(m, &want);
            if m.wait_for_shortcut() {
                m.check_invariants().unwrap();
                assert!(
                    m.stats().shortcut_in_use || m.stats().fan_in > m.config().fan_in_threshold
                );
            }
        }
    }
    check_whole(m, &want);
}

fn check_whole(m: &ShortcutEh, want: &HashMap<u64, u64>) {
    m.check_invariants().unwrap();
    let mut got: Vec<(u64, u64)> = m.iter().collect();
    got.sort_unstable();
    let mut w: Vec<(u64, u64)> = want.iter().map(|(&k, &v)| (k, v)).collect();
    w.sort_unstable();
    assert_eq!(got, w);
    let r = m.reader();
    for (&k, &v) in want.iter().take(2000) {
        assert_eq!(m.get(k), Some(v));
        assert_eq!(r.get(k), Some(v));
    }
}

#[test]
fn differential_every_shape_with_and_without_the_shortcut() {
    for shortcut in [true, false] {
        for (i, &shape) in SHAPES.iter().enumerate() {
            let mut rng = TestRng::new(i as u64 * 31 + u64::from(shortcut));
            let pool = keys(shape, 20_000, &mut rng);
            let mut m = map(shortcut);
            differential(&mut m, &pool, 120_000, &mut rng, 10_000);
        }
    }
}

#[test]
fn growth_then_emptying_merges_buckets_and_gives_pages_back() {
    let mut m = map(true);
    let n = 200_000u64;
    for k in 0..n {
        assert_eq!(m.insert(k, !k).unwrap(), None);
    }
    let grown = m.stats();
    assert!(grown.buckets > 1000, "{grown:?}");
    assert!(m.wait_for_shortcut());
    m.check_invariants().unwrap();
    assert!(m.stats().shortcut_in_use, "{:?}", m.stats());
    for k in 0..n {
        assert_eq!(m.get(k), Some(!k));
    }
    for k in 0..n - 100 {
        assert_eq!(m.remove(k), Some(!k));
    }
    let shrunk = m.stats();
    assert!(shrunk.buckets < 10, "{shrunk:?}");
    // The pool shrinks once the readers of the planned shrink are gone: a few more removes
    // let the epoch move on.
    for k in n - 100..n - 50 {
        assert_eq!(m.remove(k), Some(!k));
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    assert!(m.wait_for_shortcut());
    // On a loaded machine the epoch may need longer than those removes to move on: keep
    // writing (a key removed and put back) and flushing until the pool shrinks, for up to
    // 2,000 rounds, so that the check waits on the condition rather than on a fixed time.
    let k = n - 1;
    for _ in 0..2_000 {
        if m.stats().pool_pages < grown.pool_pages / 2 {
            break;
        }
        assert_eq!(m.remove(k), Some(!k));
        m.insert(k, !k).unwrap();
        mlpdex::epoch::pin().flush();
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(m.wait_for_shortcut());
    m.check_invariants().unwrap();
    assert!(
        m.stats().pool_pages < grown.pool_pages / 2,
        "{:?} after {grown:?}",
        m.stats()
    );
    assert_eq!(m.len(), 50);
    for k in n - 50..n {
        assert_eq!(m.get(k), Some(!k));
    }
    // And it grows again.
    for k in 0..50_000 {
        m.insert(k, k).unwrap();
    }
    m.check_invariants().unwrap();
    assert_eq!(m.len(), 50_050);
}

/// Values encode their key and a round: a reader can tell a right value from a wrong one.
fn value(k: u64, round: u64) -> u64 {
    hash(k ^ 0x5bd1_e995).wrapping_add(round) & !0xFF | round & 0xFF
}

#[test]
fn readers_beside_the_writer_never_answer_wrong() {
    let mut m = map(true);
    // Keys present throughout, and keys the writer inserts, updates and removes in rounds,
    // splitting and merging buckets (and remapping shortcut slots) all the while.
    let stable: Vec<u64> = (0..20_000u64).map(|i| i * 2).collect();
    let churn: Vec<u64> = (0..60_000u64).map(|i| i * 2 + 1).collect();
    for &k in &stable {
        m.insert(k, value(k, 0)).unwrap();
    }
    let stop = AtomicBool::new(false);
    let reader = m.reader();
    std::thread::scope(|s| {
        for t in 0..3u64 {
            let (reader, stable, churn, stop) = (reader.clone(), &stable, &churn, &stop);
            s.spawn(move || {
                let mut rng = TestRng::new(t + 100);
                let mut reads = 0u64;
                while !stop.load(Ordering::Relaxed) || reads < 100_000 {
                    let k = stable[rng.index(stable.len())];
                    assert_eq!(reader.get(k), Some(value(k, 0)), "stable key {k}");
                    let c = churn[rng.index(churn.len())];
                    if let Some(v) = reader.get(c) {
                        let round = v & 0xFF;
                        assert_eq!(v, value(c, round), "churned key {c}: {v:#x}");
                    }
                    reads += 1;
                }
            });
        }
        for round in 1..=6u64 {
            for &k in &churn {
                m.insert(k, value(k, round)).unwrap();
            }
            for &k in churn.iter().step_by(1 + (round as usize % 3)) {
                m.remove(k);
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    m.check_invariants().unwrap();
    for &k in &stable {
        assert_eq!(m.get(k), Some(value(k, 0)));
    }
}

#[test]
fn a_pool_limit_makes_inserts_fail_and_loses_nothing() {
    for shortcut in [true, false] {
        let mut m = ShortcutEh::with_config(Config {
            shortcut,
            max_pool_bytes: 300 * 4096,
            ..Config::default()
        })
        .unwrap();
        let mut stored = Vec::new();
        let mut failed = 0;
        for k in 0..100_000u64 {
            match m.insert(k.wrapping_mul(0x9E37_79B9_7F4A_7C15), k) {
                Ok(None) => stored.push(k),
                Ok(Some(_)) => unreachable!("distinct keys"),
                Err(Error::OutOfMemory { .. }) => failed += 1,
                Err(e) => panic!("unexpected error {e:?}"),
            }
        }
        assert!(failed > 0, "the limit was reached");
        assert!(m.stats().pool_pages <= 300);
        assert_eq!(m.len(), stored.len());
        m.check_invariants().unwrap();
        for &k in &stored {
            assert_eq!(m.get(k.wrapping_mul(0x9E37_79B9_7F4A_7C15)), Some(k));
        }
        // Removing makes room again.
        for &k in stored.iter().take(stored.len() / 2) {
            assert_eq!(m.remove(k.wrapping_mul(0x9E37_79B9_7F4A_7C15)), Some(k));
        }
        assert!(m.insert(1, 1).is_ok());
        m.check_invariants().unwrap();
    }
}

#[test]
fn a_directory_past_the_mapping_limit_gives_the_shortcut_up() {
    let limit: usize = std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(65_530);
    if limit > 300_000 {
        eprintln!("vm.max_map_count is {limit}: too many keys to reach it in a test, skipped");
        return;
    }
    let mut m = map(true);
    let mut k = 0u64;
    // Grow until the directory has more slots than the process may have mappings.
    while m.stats().slots <= limit {
        for _ in 0..100_000 {
            m.insert(k, k).unwrap();
            k += 1;
        }
    }
    assert!(
        !m.wait_for_shortcut(),
        "the shortcut cannot map {} slots",
        m.stats().slots
    );
    assert!(matches!(
        m.shortcut_error(),
        Some(Error::OutOfMemory { .. })
    ));
    assert!(!m.stats().shortcut_in_use);
    for j in (0..k).step_by(997) {
        assert_eq!(m.get(j), Some(j));
    }
    m.insert(k, 1).unwrap();
    assert_eq!(m.remove(k), Some(1));
    assert_eq!(m.len() as u64, k);
}

#[test]
fn std_conveniences() {
    let m: ShortcutEh = (0..100u64).map(|k| (k, k + 1)).collect();
    assert_eq!(m.len(), 100);
    let mut pairs: Vec<(u64, u64)> = (&m).into_iter().collect();
    pairs.sort_unstable();
    assert_eq!(pairs[5], (5, 6));
    let small: ShortcutEh = [(1u64, 2u64)].into_iter().collect();
    assert_eq!(format!("{small:?}"), "{1: 2}");
    let mut m = m;
    m.extend([(1000, 1)]);
    assert!(m.contains_key(1000));
    m.clear().unwrap();
    assert!(m.is_empty());
    assert!(
        ShortcutEh::with_config(Config {
            fan_in_threshold: 0.5,
            ..Config::default()
        })
        .is_err()
    );
}

#[test]
fn a_map_can_start_from_a_wide_directory() {
    let mut m = ShortcutEh::with_config(Config {
        initial_depth: 10,
        fan_in_threshold: f64::INFINITY,
        ..Config::default()
    })
    .unwrap();
    assert_eq!(m.stats().slots, 1024);
    assert_eq!(m.stats().buckets, 1);
    let mut rng = TestRng::new(9);
    let pool = keys(Shape::Uniform, 30_000, &mut rng);
    differential(&mut m, &pool, 60_000, &mut rng, 15_000);
    assert!(m.wait_for_shortcut());
    assert!(m.stats().shortcut_in_use, "{:?}", m.stats());
    assert_eq!(
        m.stats().shortcut_version,
        Some(m.stats().directory_version)
    );
    assert!(
        ShortcutEh::with_config(Config {
            initial_depth: 29,
            ..Config::default()
        })
        .is_err()
    );
}
