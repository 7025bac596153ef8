//! MlpIndex (`u64` keys) against `BTreeMap<u64, u64>`: inserts, removes, gets, seeks with
//! every bound kind, ranges walked from either end or both, `first`/`last`, `clear`, on either
//! table layout with a fuzzer-chosen load factor; then a full comparison and the invariant
//! audit. Keys favour the edges (0, `u64::MAX`, 2^63), dense small ranges, runs that differ
//! only in the last byte, and neighbours of keys already used.

#![no_main]

use std::collections::BTreeMap;
use std::fmt::Write;
use std::ops::Bound;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mlpdex::mlp_index::{Config, Layout, MlpIndex};
use mlpdex::testing::TestRng;
use mlpdex_fuzz::{MAX_OPS, WalkSpec};

#[derive(Arbitrary, Debug, Clone, Copy)]
enum KeySpec {
    Edge(u8),
    Small(u16),
    NearMax(u16),
    LastByte(u8, u8),
    Neighbour(u8, i8),
    Any(u64),
}

const EDGES: [u64; 10] = [
    0,
    1,
    0xff,
    0x100,
    u64::MAX,
    u64::MAX - 1,
    1 << 63,
    (1 << 63) - 1,
    1 << 32,
    (1 << 32) - 1,
];

const RUNS: [u64; 4] = [
    0x0102_0304_0506_0700,
    0xdead_beef_0000_0000,
    0xffff_ffff_ffff_ff00,
    0x00ff_00ff_00ff_0000,
];

impl KeySpec {
    fn make(self, used: &mut Vec<u64>) -> u64 {
        let k = match self {
            KeySpec::Edge(i) => EDGES[usize::from(i) % EDGES.len()],
            KeySpec::Small(x) => u64::from(x % 1024),
            KeySpec::NearMax(x) => u64::MAX - u64::from(x % 1024),
            KeySpec::LastByte(r, b) => RUNS[usize::from(r) % RUNS.len()] | u64::from(b),
            KeySpec::Neighbour(i, d) => {
                if used.is_empty() {
                    0
                } else {
                    used[usize::from(i) % used.len()].wrapping_add(d as i64 as u64)
                }
            }
            KeySpec::Any(x) => x,
        };
        if used.len() < 256 {
            used.push(k);
        }
        k
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum BoundSpec {
    Included(KeySpec),
    Excluded(KeySpec),
    Unbounded,
}

impl BoundSpec {
    fn make(self, used: &mut Vec<u64>) -> Bound<u64> {
        match self {
            BoundSpec::Included(k) => Bound::Included(k.make(used)),
            BoundSpec::Excluded(k) => Bound::Excluded(k.make(used)),
            BoundSpec::Unbounded => Bound::Unbounded,
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Op {
    Insert(KeySpec, u64),
    Remove(KeySpec),
    Get(KeySpec),
    Len,
    First,
    Last,
    LowerBound(BoundSpec),
    UpperBound(BoundSpec),
    Range(BoundSpec, BoundSpec, WalkSpec),
    Iter,
    Clear,
    MemoryUsage,
}

#[derive(Arbitrary, Debug)]
struct Input {
    paper: bool,
    load: u8,
    ops: Vec<Op>,
}

fn in_bounds(k: u64, lo: Bound<u64>, hi: Bound<u64>) -> bool {
    let above = match lo {
        Bound::Included(l) => k >= l,
        Bound::Excluded(l) => k > l,
        Bound::Unbounded => true,
    };
    let below = match hi {
        Bound::Included(h) => k <= h,
        Bound::Excluded(h) => k < h,
        Bound::Unbounded => true,
    };
    above && below
}

/// The resolved operations so far, printed with a divergence as its reproducer.
struct Log(String);

impl Log {
    fn fail(&self, what: String) -> ! {
        panic!(
            "mlp_index: divergence from BTreeMap\n{what}\noperations:\n{}",
            self.0
        )
    }
}

fuzz_target!(|input: Input| {
    let layout = if input.paper {
        Layout::Paper
    } else {
        Layout::Bucketized
    };
    let max_load_factor = match layout {
        Layout::Bucketized => 0.5 + 0.45 * f64::from(input.load) / 255.0,
        Layout::Paper => 0.2 + 0.3 * f64::from(input.load) / 255.0,
    };
    let config = Config {
        layout,
        max_load_factor: Some(max_load_factor),
        ..Config::default()
    };
    let mut map = MlpIndex::with_config(config.clone()).expect("a valid config");
    let mut oracle = BTreeMap::<u64, u64>::new();
    let mut used = Vec::new();
    let mut log = Log(format!("{config:?}\n"));
    for op in input.ops.iter().take(MAX_OPS) {
        match *op {
            Op::Insert(k, v) => {
                let k = k.make(&mut used);
                let got = map.insert(k, v);
                let want = oracle.insert(k, v);
                let line = format!("insert({k:#x}, {v})");
                writeln!(log.0, "{line}").unwrap();
                if got != Ok(want) {
                    log.fail(format!("{line}: got {got:?}, expected {want:?}"));
                }
                if map.get(k) != Some(v) || map.len() != oracle.len() {
                    log.fail(format!(
                        "after {line}: get = {:?}, len = {} (expected {})",
                        map.get(k),
                        map.len(),
                        oracle.len()
                    ));
                }
            }
            Op::Remove(k) => {
                let k = k.make(&mut used);
                let got = map.remove(k);
                let want = oracle.remove(&k);
                let line = format!("remove({k:#x})");
                writeln!(log.0, "{line}").unwrap();
                if got != want || map.get(k).is_some() || map.len() != oracle.len() {
                    log.fail(format!(
                        "{line}: got {got:?} (expected {want:?}), then get = {:?}, len = {} (expected {})",
                        map.get(k),
                        map.len(),
                        oracle.len()
                    ));
                }
            }
            Op::Get(k) => {
                let k = k.make(&mut used);
                let line = format!("get({k:#x})");
                writeln!(log.0, "{line}").unwrap();
                let (got, want) = (map.get(k), oracle.get(&k).copied());
                if got != want || map.contains_key(k) != want.is_some() {
                    log.fail(format!("{line}: got {got:?}, expected {want:?}"));
                }
            }
            Op::Len => {
                writeln!(log.0, "len()").unwrap();
                if map.len() != oracle.len() || map.is_empty() != oracle.is_empty() {
                    log.fail(format!(
                        "len(): got {}, expected {}",
                        map.len(),
                        oracle.len()
                    ));
                }
            }
            Op::First => {
                writeln!(log.0, "first()").unwrap();
                let want = oracle.first_key_value().map(|(k, v)| (*k, *v));
                if map.first() != want {
                    log.fail(format!("first(): got {:?}, expected {want:?}", map.first()));
                }
            }
            Op::Last => {
                writeln!(log.0, "last()").unwrap();
                let want = oracle.last_key_value().map(|(k, v)| (*k, *v));
                if map.last() != want {
                    log.fail(format!("last(): got {:?}, expected {want:?}", map.last()));
                }
            }
            Op::LowerBound(b) => {
                let b = b.make(&mut used);
                let want = oracle
                    .iter()
                    .find(|(k, _)| in_bounds(**k, b, Bound::Unbounded))
                    .map(|(k, v)| (*k, *v));
                let got = map.lower_bound(b);
                let line = format!("lower_bound({b:x?})");
                writeln!(log.0, "{line}").unwrap();
                if got != want {
                    log.fail(format!("{line}: got {got:x?}, expected {want:x?}"));
                }
            }
            Op::UpperBound(b) => {
                let b = b.make(&mut used);
                let want = oracle
                    .iter()
                    .rev()
                    .find(|(k, _)| in_bounds(**k, Bound::Unbounded, b))
                    .map(|(k, v)| (*k, *v));
                let got = map.upper_bound(b);
                let line = format!("upper_bound({b:x?})");
                writeln!(log.0, "{line}").unwrap();
                if got != want {
                    log.fail(format!("{line}: got {got:x?}, expected {want:x?}"));
                }
            }
            Op::Range(lo, hi, walk) => {
                let (lo, hi) = (lo.make(&mut used), hi.make(&mut used));
                let line = format!("range({lo:x?}, {hi:x?}) walked {walk:?}");
                walk_range(&map, &oracle, (lo, hi), walk, line, &mut log);
            }
            Op::Iter => {
                for walk in [WalkSpec::Forward(0), WalkSpec::Backward(0)] {
                    let line = format!("iter() walked {walk:?}");
                    let all = (Bound::Unbounded, Bound::Unbounded);
                    walk_range(&map, &oracle, all, walk, line, &mut log);
                }
            }
            Op::Clear => {
                writeln!(log.0, "clear()").unwrap();
                map.clear();
                oracle.clear();
            }
            Op::MemoryUsage => {
                writeln!(log.0, "memory_usage()").unwrap();
                if map.memory_usage() == 0 {
                    log.fail("memory_usage() is 0".to_string());
                }
            }
        }
    }
    let got: Vec<(u64, u64)> = map.iter().collect();
    let want: Vec<(u64, u64)> = oracle.iter().map(|(k, v)| (*k, *v)).collect();
    if got != want {
        log.fail(format!("final iter(): got {got:x?}, expected {want:x?}"));
    }
    if let Err(e) = map.check_invariants() {
        log.fail(format!("check_invariants: {e}"));
    }
});

/// Walks `range(lo, hi)` as `walk` says and compares each answer with the oracle's.
fn walk_range(
    map: &MlpIndex,
    oracle: &BTreeMap<u64, u64>,
    (lo, hi): (Bound<u64>, Bound<u64>),
    walk: WalkSpec,
    line: String,
    log: &mut Log,
) {
    writeln!(log.0, "{line}").unwrap();
    let want: Vec<(u64, u64)> = oracle
        .iter()
        .filter(|(k, _)| in_bounds(**k, lo, hi))
        .map(|(k, v)| (*k, *v))
        .collect();
    let mut it = map.range((lo, hi));
    let (mut front, mut back) = (0usize, want.len());
    let mut rng = TestRng::new(match walk {
        WalkSpec::Alternate(seed, _) => seed,
        _ => 0,
    });
    for _ in 0..walk.walk().limit().min(want.len() + 1) {
        let from_back = match walk {
            WalkSpec::Forward(_) => false,
            WalkSpec::Backward(_) => true,
            WalkSpec::Alternate(..) => rng.chance(0.5),
        };
        let got = if from_back { it.next_back() } else { it.next() };
        let expected = if front < back {
            if from_back {
                back -= 1;
                Some(want[back])
            } else {
                front += 1;
                Some(want[front - 1])
            }
        } else {
            None
        };
        if got != expected {
            log.fail(format!(
                "{line}: got {got:x?} from the {}, expected {expected:x?}",
                if from_back { "back" } else { "front" }
            ));
        }
        if expected.is_none() {
            break;
        }
    }
}
