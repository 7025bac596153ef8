//! Workloads: the operation streams the harness times, after YCSB (Cooper et al., SoCC 2010) as
//! the Cuckoo Trie paper uses it (§4, Table 2), plus the miss and `lower_bound` streams of the
//! MLP-data-structures paper (§4.4).
//!
//! A workload is turned into an [`Ops`] ahead of time by [`generate`]: a vector of operation kinds
//! and, in a [`Keys`] store, the key of every operation in op order. The runner then streams
//! through both arrays, so choosing and copying keys costs nothing in the timed loop and the
//! hardware prefetcher hides reading them.
//!
//! | name          | mix                                 | keys                                       |
//! |---------------|-------------------------------------|--------------------------------------------|
//! | `load`        | 100% insert                         | the load set, in order                     |
//! | `a`           | 50% read, 50% update                | load set, by the distribution              |
//! | `b`           | 95% read, 5% update                 | load set, by the distribution              |
//! | `c`           | 100% read                           | load set, by the distribution              |
//! | `d`           | 95% read, 5% insert                 | reads: "latest" (always); inserts: fresh   |
//! | `e`           | 95% scan (length 1..=100), 5% insert | scan starts by the distribution; fresh    |
//! | `f`           | 50% read, 50% read-modify-write     | load set, by the distribution              |
//! | `lookup-miss` | 100% read                           | absent keys (second half of the reserve)   |
//! | `lower-bound` | 100% `lower_bound`                  | ~15% present, ~85% absent (MLP §4.4)       |
//! | `scan-N`      | 100% scan of length N               | scan starts by the distribution            |
//!
//! Key sources. Reads, updates and scan starts choose among the load set `ds.keys`. Inserts take
//! fresh keys from the *first* half of `ds.reserve`, in order, through a [`Fresh`] cursor that
//! lives as long as the loaded index, so successive workloads never insert the same key twice.
//! Absent keys come from the *second* half of the reserve, which is never inserted.
//!
//! Distributions. [`Distribution::Uniform`] picks every key with equal probability;
//! [`Distribution::Zipfian`] draws a rank from YCSB's zipfian generator ([`Zipf`], θ = 0.99) and
//! uses rank `r` as key index `r` directly. The load set is in random order, so the hot keys are
//! scattered over the key space exactly as YCSB's `ScrambledZipfianGenerator` scatters them by
//! hashing the rank. Workload `d` ignores the distribution: its reads follow YCSB's "latest"
//! distribution, which favours the most recently inserted keys.
//!
//! Every stream is deterministic from its seed: random numbers come from
//! [`Xoshiro256PlusPlus`] and are turned into ranges and floats here, not by `rand`'s
//! distributions, so streams stay the same across `rand` versions.

use std::fmt;
use std::str::FromStr;

use anyhow::{Result, bail, ensure};
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::dataset::Dataset;
use crate::keys::Keys;
use crate::random::{ZIPF_THETA, Zipf, below, hash_bytes, unit_f64};

/// A named operation stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Insert every key of the load set, in order.
    Load,
    /// YCSB A: 50% reads, 50% updates.
    A,
    /// YCSB B: 95% reads, 5% updates.
    B,
    /// YCSB C: 100% reads.
    C,
    /// YCSB D: 95% reads of recently inserted keys, 5% inserts.
    D,
    /// YCSB E: 95% short scans, 5% inserts.
    E,
    /// YCSB F: 50% reads, 50% read-modify-writes.
    F,
    /// Reads of keys that are not in the index.
    LookupMiss,
    /// `lower_bound` queries, about 15% of them on present keys.
    LowerBound,
    /// Scans of exactly this many keys.
    Scan(usize),
    /// This percentage of inserts of new keys, the rest reads (PI's §6.3 mix).
    Inserts(u8),
}

/// Every workload name with a one-line description, for `mlpdex-bench list`.
pub const WORKLOADS: &[(&str, &str)] = &[
    ("load", "insert every key of the load set (the load phase)"),
    ("a", "YCSB A, update heavy: 50% read, 50% update"),
    ("b", "YCSB B, read mostly: 95% read, 5% update"),
    ("c", "YCSB C, read only: 100% read"),
    (
        "d",
        "YCSB D, read latest: 95% read of recent keys, 5% insert (ignores the distribution)",
    ),
    (
        "e",
        "YCSB E, short ranges: 95% scan of 1..=100 keys, 5% insert",
    ),
    (
        "f",
        "YCSB F, read-modify-write: 50% read, 50% read-modify-write",
    ),
    ("lookup-miss", "100% read of absent keys"),
    (
        "lower-bound",
        "100% lower_bound, ~15% present and ~85% absent keys (MLP paper §4.4)",
    ),
    (
        "scan-N",
        "100% scan of N keys from a chosen start, e.g. scan-100",
    ),
    (
        "insert-N",
        "N% insert of new keys, the rest read (N in 0..=100), e.g. insert-25",
    ),
];

impl Workload {
    /// Parses a comma-separated list such as `load,c,e`.
    pub fn parse_list(s: &str) -> Result<Vec<Workload>, String> {
        if s.trim().is_empty() {
            return Err("empty workload list; expected e.g. `load,c,e`".to_string());
        }
        s.split(',')
            .map(|item| {
                if item.trim().is_empty() {
                    Err(format!("empty workload name in list `{s}`"))
                } else {
                    item.parse()
                }
            })
            .collect()
    }

    /// True when the workload issues inserts or updates (`load`, `a`, `b`, `d`, `e`, `f`,
    /// `insert-N`).
    pub fn writes(&self) -> bool {
        matches!(
            self,
            Workload::Load
                | Workload::A
                | Workload::B
                | Workload::D
                | Workload::E
                | Workload::F
                | Workload::Inserts(_)
        )
    }

    /// True when the workload needs ordered operations, scans or `lower_bound`
    /// (`e`, `lower-bound`, `scan-N`).
    pub fn ordered(&self) -> bool {
        matches!(self, Workload::E | Workload::LowerBound | Workload::Scan(_))
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Workload::Load => "load",
            Workload::A => "a",
            Workload::B => "b",
            Workload::C => "c",
            Workload::D => "d",
            Workload::E => "e",
            Workload::F => "f",
            Workload::LookupMiss => "lookup-miss",
            Workload::LowerBound => "lower-bound",
            Workload::Scan(n) => return write!(f, "scan-{n}"),
            Workload::Inserts(pct) => return write!(f, "insert-{pct}"),
        };
        f.write_str(name)
    }
}

impl FromStr for Workload {
    type Err = String;

    /// Parses a workload name, ignoring surrounding spaces and ASCII case.
    fn from_str(s: &str) -> Result<Self, String> {
        let name = s.trim().to_ascii_lowercase();
        let w = match name.as_str() {
            "load" => Workload::Load,
            "a" => Workload::A,
            "b" => Workload::B,
            "c" => Workload::C,
            "d" => Workload::D,
            "e" => Workload::E,
            "f" => Workload::F,
            "lookup-miss" => Workload::LookupMiss,
            "lower-bound" => Workload::LowerBound,
            _ if name.starts_with("insert-") => match name["insert-".len()..].parse::<u8>() {
                Ok(pct) if pct <= 100 => Workload::Inserts(pct),
                _ => {
                    return Err(format!(
                        "bad insert percentage in `{s}`: expected insert-N with N in 0..=100"
                    ));
                }
            },
            _ => match name.strip_prefix("scan-").map(str::parse::<u32>) {
                Some(Ok(n)) if n > 0 => Workload::Scan(n as usize),
                Some(_) => {
                    return Err(format!(
                        "bad scan length in `{s}`: expected scan-N with N in 1..={}",
                        u32::MAX
                    ));
                }
                None => {
                    let names: Vec<&str> = WORKLOADS.iter().map(|(n, _)| *n).collect();
                    let s = s.trim();
                    let suggestion = crate::names::suggest(s, &names);
                    return Err(crate::names::unknown("workload", s, suggestion.as_deref()));
                }
            },
        };
        Ok(w)
    }
}

/// How reads, updates and scan starts choose their key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distribution {
    /// Every key equally likely.
    Uniform,
    /// YCSB's scrambled zipfian, θ = [`ZIPF_THETA`]: a few hot keys scattered over the key space.
    Zipfian,
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Distribution::Uniform => "uniform",
            Distribution::Zipfian => "zipfian",
        })
    }
}

impl FromStr for Distribution {
    type Err = String;

    /// Parses `uniform` or `zipfian`, ignoring surrounding spaces and ASCII case.
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "uniform" => Ok(Distribution::Uniform),
            "zipfian" => Ok(Distribution::Zipfian),
            _ => {
                // `list` does not show distributions: name both.
                let s = s.trim();
                let hint = crate::names::suggest(s, &["uniform", "zipfian"])
                    .map_or_else(String::new, |d| format!("did you mean {d:?}? "));
                Err(format!(
                    "unknown distribution {s:?}; {hint}(valid: uniform, zipfian)"
                ))
            }
        }
    }
}

/// What one operation does with its key.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// Look the key up.
    Read,
    /// Overwrite the value of a present key.
    Update,
    /// Insert a key that is not present.
    Insert,
    /// Visit `len` keys in order, starting at the first key `>=` the op's key.
    Scan,
    /// Read the key's value, then write a new value.
    ReadModifyWrite,
    /// Find the first key `>=` the op's key.
    LowerBound,
}

/// One operation of a stream; its key is the entry with the same index in [`Ops::keys`].
#[derive(Clone, Copy, Debug)]
pub struct Op {
    /// What to do.
    pub kind: OpKind,
    /// Scan length for [`OpKind::Scan`], 0 otherwise.
    pub len: u32,
}

/// A generated operation stream: `ops[i]` uses key `keys.get(i)`.
///
/// Keys are materialised in op order so the runner reads both arrays sequentially.
#[derive(Clone, Debug)]
pub struct Ops {
    /// The operations, in execution order.
    pub ops: Vec<Op>,
    /// The key of each operation, in the same order.
    pub keys: Keys,
}

/// Cursor over the insert half (the first half) of a dataset's reserve.
///
/// Keep one `Fresh` per loaded index and pass it to every [`generate`] call for that index:
/// each call takes its insert keys after the ones earlier calls took, so no key is inserted twice.
#[derive(Clone, Debug, Default)]
pub struct Fresh {
    next: usize,
}

impl Fresh {
    /// A cursor at the start of the reserve.
    pub fn new() -> Fresh {
        Fresh { next: 0 }
    }

    /// Number of reserve keys handed out for inserts so far.
    pub fn used(&self) -> usize {
        self.next
    }
}

/// Share of `lower_bound` keys taken from the load set (MLP paper §4.4: about 15% present).
const LOWER_BOUND_PRESENT: f64 = 0.15;

/// Chooses an index into a key source of a fixed size by a [`Distribution`].
enum Picker {
    Uniform(u64),
    Zipfian(Zipf),
}

impl Picker {
    fn new(dist: Distribution, n: usize) -> Picker {
        match dist {
            Distribution::Uniform => Picker::Uniform(n as u64),
            // Rank r is key index r: the source is in random order, which scrambles the hot
            // keys over the key space like YCSB's ScrambledZipfianGenerator.
            Distribution::Zipfian => Picker::Zipfian(Zipf::new(n as u64, ZIPF_THETA)),
        }
    }

    #[inline]
    fn pick(&self, rng: &mut Xoshiro256PlusPlus) -> usize {
        match self {
            Picker::Uniform(n) => below(rng, *n) as usize,
            Picker::Zipfian(z) => z.sample(rng) as usize,
        }
    }
}

/// Draws `n_ops` op kinds: `first` with probability `p_first`, otherwise `second`.
fn mix(
    rng: &mut Xoshiro256PlusPlus,
    n_ops: usize,
    p_first: f64,
    first: OpKind,
    second: OpKind,
) -> Vec<Op> {
    (0..n_ops)
        .map(|_| {
            let kind = if unit_f64(rng) < p_first {
                first
            } else {
                second
            };
            Op { kind, len: 0 }
        })
        .collect()
}

/// Generates `n_ops` operations of workload `w` over dataset `ds` (`load` ignores `n_ops` and
/// `dist` and inserts the whole load set).
///
/// Inserts take keys from the first half of `ds.reserve` after those `fresh` already handed
/// out, and advance `fresh` only when generation succeeds. Errors when the reserve's insert half
/// has too few keys left, or when a key source the workload reads from is empty.
///
/// The stream is deterministic from `seed` (and differs between workloads for one seed).
pub fn generate(
    w: Workload,
    dist: Distribution,
    ds: &Dataset,
    n_ops: usize,
    fresh: &mut Fresh,
    seed: u64,
) -> Result<Ops> {
    let load = &ds.keys;
    if w == Workload::Load {
        return Ok(Ops {
            ops: vec![
                Op {
                    kind: OpKind::Insert,
                    len: 0
                };
                load.len()
            ],
            keys: load.clone(),
        });
    }
    let insert_half = ds.reserve.len() / 2;
    let miss_half = ds.reserve.len() - insert_half;

    // Two independent streams: one decides the op kinds, one chooses the keys. Mixing the
    // workload name into the seed keeps, say, `c` and `a` from reading the same key sequence.
    let base = hash_bytes(w.to_string().as_bytes(), seed);
    let mut kind_rng = Xoshiro256PlusPlus::seed_from_u64(base);
    let mut key_rng = Xoshiro256PlusPlus::seed_from_u64(base ^ 0x6B65_7973_5F72_6E67);

    // Pass 1: op kinds.
    let rng = &mut kind_rng;
    let ops = match w {
        Workload::Load => unreachable!("handled above"),
        Workload::A => mix(rng, n_ops, 0.5, OpKind::Read, OpKind::Update),
        Workload::B => mix(rng, n_ops, 0.95, OpKind::Read, OpKind::Update),
        Workload::C | Workload::LookupMiss => mix(rng, n_ops, 1.0, OpKind::Read, OpKind::Read),
        Workload::D => mix(rng, n_ops, 0.95, OpKind::Read, OpKind::Insert),
        Workload::E => {
            let mut ops = mix(rng, n_ops, 0.95, OpKind::Scan, OpKind::Insert);
            for op in ops.iter_mut().filter(|op| op.kind == OpKind::Scan) {
                op.len = 1 + below(rng, 100) as u32;
            }
            ops
        }
        Workload::F => mix(rng, n_ops, 0.5, OpKind::Read, OpKind::ReadModifyWrite),
        Workload::LowerBound => mix(rng, n_ops, 1.0, OpKind::LowerBound, OpKind::LowerBound),
        Workload::Inserts(pct) => {
            let reads = 1.0 - f64::from(pct) / 100.0;
            mix(rng, n_ops, reads, OpKind::Read, OpKind::Insert)
        }
        Workload::Scan(len) => {
            let len = u32::try_from(len).ok().filter(|&l| l > 0).ok_or_else(|| {
                anyhow::anyhow!("scan length {len} out of range 1..={}", u32::MAX)
            })?;
            vec![
                Op {
                    kind: OpKind::Scan,
                    len
                };
                n_ops
            ]
        }
    };

    // Check the key sources before touching them.
    let inserts = ops.iter().filter(|op| op.kind == OpKind::Insert).count();
    let start = fresh.next;
    let left = insert_half.saturating_sub(start);
    if inserts > left {
        bail!(
            "workload {w} needs {inserts} fresh keys to insert, but only {left} of the \
             {insert_half} keys in the insert half of {}'s reserve are left \
             ({start} used by earlier workloads); use fewer ops or a larger dataset",
            ds.name
        );
    }
    let reads_load = !matches!(w, Workload::LookupMiss);
    ensure!(
        !reads_load || !load.is_empty(),
        "workload {w} reads the load set of {}, which is empty",
        ds.name
    );
    let reads_miss = matches!(w, Workload::LookupMiss | Workload::LowerBound);
    ensure!(
        !reads_miss || miss_half > 0,
        "workload {w} needs absent keys, but {}'s reserve is empty",
        ds.name
    );

    // Pass 2: keys, in op order.
    let rng = &mut key_rng;
    let load_picker = (reads_load && w != Workload::D).then(|| Picker::new(dist, load.len()));
    let miss_picker = reads_miss.then(|| Picker::new(dist, miss_half));
    // YCSB's "latest": a zipfian rank counted back from the newest key. The population grows by
    // the inserts of this run; the generator is sized for the load set (the ≤5% growth barely
    // changes the skew) and the index is clamped, as YCSB's SkewedLatestGenerator does.
    let latest = (w == Workload::D).then(|| Zipf::new(load.len() as u64, ZIPF_THETA));
    let fresh_key = |j: usize| ds.reserve.get(start + j);
    let miss_key = |j: usize| ds.reserve.get(insert_half + j);

    let mean_len = load.mean_len().max(ds.reserve.mean_len());
    let mut keys = Keys::with_capacity((n_ops as f64 * mean_len).ceil() as usize);
    let mut inserted = 0usize;
    for op in &ops {
        let key = match op.kind {
            OpKind::Insert => {
                inserted += 1;
                fresh_key(inserted - 1)
            }
            OpKind::LowerBound => {
                let (Some(lp), Some(mp)) = (&load_picker, &miss_picker) else {
                    unreachable!("lower-bound builds both pickers")
                };
                if unit_f64(rng) < LOWER_BOUND_PRESENT {
                    load.get(lp.pick(rng))
                } else {
                    miss_key(mp.pick(rng))
                }
            }
            _ => {
                if let Some(z) = &latest {
                    let population = load.len() + inserted;
                    let rank = (z.sample(rng) as usize).min(population - 1);
                    let i = population - 1 - rank;
                    if i < load.len() {
                        load.get(i)
                    } else {
                        fresh_key(i - load.len())
                    }
                } else if let Some(mp) = &miss_picker {
                    miss_key(mp.pick(rng))
                } else if let Some(lp) = &load_picker {
                    load.get(lp.pick(rng))
                } else {
                    unreachable!("every read workload builds a picker")
                }
            }
        };
        keys.push(key);
    }
    debug_assert_eq!(inserted, inserts);
    fresh.next = start + inserts;
    Ok(Ops { ops, keys })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset;
    use hashbrown::HashSet;

    fn dataset(n: usize) -> Dataset {
        dataset::load("rand-8", n, 7).unwrap()
    }

    fn share(ops: &Ops, kind: OpKind) -> f64 {
        ops.ops.iter().filter(|op| op.kind == kind).count() as f64 / ops.ops.len() as f64
    }

    fn load_set(ds: &Dataset) -> HashSet<&[u8]> {
        ds.keys.iter().collect()
    }

    #[test]
    fn names_round_trip() {
        let all = [
            Workload::Load,
            Workload::A,
            Workload::B,
            Workload::C,
            Workload::D,
            Workload::E,
            Workload::F,
            Workload::LookupMiss,
            Workload::LowerBound,
            Workload::Scan(1),
            Workload::Scan(100),
            Workload::Inserts(0),
            Workload::Inserts(25),
            Workload::Inserts(100),
        ];
        for w in all {
            assert_eq!(w.to_string().parse::<Workload>(), Ok(w));
        }
        assert_eq!("scan-100".parse::<Workload>(), Ok(Workload::Scan(100)));
        assert_eq!(" C ".parse::<Workload>(), Ok(Workload::C));
        for d in [Distribution::Uniform, Distribution::Zipfian] {
            assert_eq!(d.to_string().parse::<Distribution>(), Ok(d));
        }
        // Every listed name except the pattern parses.
        for (name, _) in WORKLOADS
            .iter()
            .filter(|(n, _)| !["scan-N", "insert-N"].contains(n))
        {
            assert_eq!(name.parse::<Workload>().unwrap().to_string(), *name);
        }
        assert_eq!(
            Workload::parse_list("load,c,e").unwrap(),
            vec![Workload::Load, Workload::C, Workload::E]
        );
    }

    #[test]
    fn unknown_names_are_errors() {
        let e = "g".parse::<Workload>().unwrap_err();
        assert_eq!(e, r#"unknown workload "g" (mlpdex-bench list shows all)"#);
        let e = "lookup-mis".parse::<Workload>().unwrap_err();
        assert!(e.contains(r#"did you mean "lookup-miss"?"#), "{e}");
        let e = "scna-100".parse::<Workload>().unwrap_err();
        assert!(e.contains(r#"did you mean "scan-100"?"#), "{e}");
        for bad in ["scan-0", "scan-", "scan-x", "scan--3", "scan-99999999999"] {
            let e = bad.parse::<Workload>().unwrap_err();
            assert!(e.contains("scan length"), "{bad}: {e}");
        }
        let e = "zipf".parse::<Distribution>().unwrap_err();
        assert!(
            e.contains(r#"did you mean "zipfian"?"#) && e.contains("uniform, zipfian"),
            "{e}"
        );
        let e = "normal".parse::<Distribution>().unwrap_err();
        assert!(
            !e.contains("did you mean") && e.contains("uniform, zipfian"),
            "{e}"
        );
        assert!(Workload::parse_list("load,,c").is_err());
        assert!(Workload::parse_list("").is_err());
        assert!(
            Workload::parse_list("load,x")
                .unwrap_err()
                .contains(r#""x""#)
        );
    }

    #[test]
    fn flags() {
        let writes: Vec<bool> = [
            Workload::Load,
            Workload::A,
            Workload::C,
            Workload::F,
            Workload::LookupMiss,
        ]
        .iter()
        .map(Workload::writes)
        .collect();
        assert_eq!(writes, [true, true, false, true, false]);
        assert!(Workload::E.ordered() && Workload::LowerBound.ordered());
        assert!(Workload::Scan(5).ordered() && !Workload::D.ordered());
    }

    #[test]
    fn insert_mixes_insert_new_keys_at_their_percentage() {
        let ds = dataset(100_000);
        let n = 10_000;
        for pct in [0u8, 30, 100] {
            let ops = generate(
                Workload::Inserts(pct),
                Distribution::Uniform,
                &ds,
                n,
                &mut Fresh::new(),
                5,
            )
            .unwrap();
            let got = share(&ops, OpKind::Insert);
            assert!(
                (got - f64::from(pct) / 100.0).abs() <= 0.02,
                "insert-{pct}: {got}"
            );
            assert_eq!(share(&ops, OpKind::Read), 1.0 - got);
        }
        for bad in ["insert-101", "insert-", "insert-x"] {
            assert!(bad.parse::<Workload>().is_err(), "{bad}");
        }
    }

    #[test]
    fn mixes() {
        let ds = dataset(100_000);
        let n = 100_000;
        let cases = [
            (Workload::A, OpKind::Read, 0.5),
            (Workload::B, OpKind::Read, 0.95),
            (Workload::C, OpKind::Read, 1.0),
            (Workload::D, OpKind::Read, 0.95),
            (Workload::E, OpKind::Scan, 0.95),
            (Workload::F, OpKind::Read, 0.5),
        ];
        for dist in [Distribution::Uniform, Distribution::Zipfian] {
            for (w, kind, p) in cases {
                let mut fresh = Fresh::new();
                let ops = generate(w, dist, &ds, n, &mut fresh, 3).unwrap();
                assert_eq!(ops.ops.len(), n);
                assert_eq!(ops.keys.len(), n);
                let got = share(&ops, kind);
                assert!((got - p).abs() <= 0.015, "{w} {dist}: {kind:?} share {got}");
                let other = match w {
                    Workload::A | Workload::B => OpKind::Update,
                    Workload::D | Workload::E => OpKind::Insert,
                    Workload::F => OpKind::ReadModifyWrite,
                    _ => kind,
                };
                if other != kind {
                    let got = share(&ops, other);
                    assert!((got - (1.0 - p)).abs() <= 0.015, "{w}: {other:?} {got}");
                }
            }
        }
    }

    #[test]
    fn load_inserts_the_load_set() {
        let ds = dataset(10_000);
        let ops = generate(
            Workload::Load,
            Distribution::Zipfian,
            &ds,
            5,
            &mut Fresh::new(),
            1,
        )
        .unwrap();
        assert_eq!(ops.keys, ds.keys);
        assert!(ops.ops.iter().all(|op| op.kind == OpKind::Insert));
    }

    #[test]
    fn scan_lengths() {
        let ds = dataset(100_000);
        let ops = generate(
            Workload::E,
            Distribution::Uniform,
            &ds,
            100_000,
            &mut Fresh::new(),
            5,
        )
        .unwrap();
        let lens: Vec<u32> = ops
            .ops
            .iter()
            .filter(|op| op.kind == OpKind::Scan)
            .map(|op| op.len)
            .collect();
        assert!(lens.iter().all(|l| (1..=100).contains(l)));
        assert!(lens.contains(&1) && lens.contains(&100));
        let mean = lens.iter().map(|&l| l as f64).sum::<f64>() / lens.len() as f64;
        assert!((mean - 50.5).abs() < 0.5, "mean scan length {mean}");
        let load = load_set(&ds);
        for (op, key) in ops.ops.iter().zip(ops.keys.iter()) {
            assert_eq!(op.kind == OpKind::Scan, load.contains(key));
        }

        let ops = generate(
            Workload::Scan(7),
            Distribution::Zipfian,
            &ds,
            1000,
            &mut Fresh::new(),
            5,
        )
        .unwrap();
        assert!(
            ops.ops
                .iter()
                .all(|op| op.kind == OpKind::Scan && op.len == 7)
        );
        assert!(ops.keys.iter().all(|k| load.contains(k)));
    }

    #[test]
    fn zipfian_reads_are_skewed() {
        let ds = dataset(50_000);
        let ops = generate(
            Workload::C,
            Distribution::Zipfian,
            &ds,
            100_000,
            &mut Fresh::new(),
            2,
        )
        .unwrap();
        let hot = ds.keys.get(0);
        let hits = ops.keys.iter().filter(|&k| k == hot).count();
        // zeta(50k, 0.99) ≈ 11.6, so the hottest key gets about 8.6% of reads.
        assert!(hits > 6_000, "hottest key read {hits} times");
    }

    #[test]
    fn inserts_are_fresh_across_calls() {
        let ds = dataset(100_000);
        let load = load_set(&ds);
        let mut fresh = Fresh::new();
        let mut inserted = HashSet::new();
        for (w, seed) in [(Workload::D, 1), (Workload::E, 1), (Workload::A, 2)] {
            let ops = generate(w, Distribution::Uniform, &ds, 50_000, &mut fresh, seed).unwrap();
            for (op, key) in ops.ops.iter().zip(ops.keys.iter()) {
                if op.kind == OpKind::Insert {
                    assert!(!load.contains(key));
                    assert!(inserted.insert(key.to_vec()), "key inserted twice");
                }
            }
        }
        assert!(inserted.len() > 4000);
        assert_eq!(fresh.used(), inserted.len());

        // Exhausting the insert half is an error that says how many keys were needed, and
        // leaves the cursor where it was.
        let before = fresh.used();
        let e = generate(
            Workload::D,
            Distribution::Uniform,
            &ds,
            1_000_000,
            &mut fresh,
            1,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("needs") && e.contains("fresh keys"), "{e}");
        assert_eq!(fresh.used(), before);
    }

    #[test]
    fn latest_reads_recent_keys() {
        let ds = dataset(100_000);
        let ops = generate(
            Workload::D,
            Distribution::Uniform,
            &ds,
            100_000,
            &mut Fresh::new(),
            4,
        )
        .unwrap();
        let position: hashbrown::HashMap<&[u8], usize> =
            ds.keys.iter().enumerate().map(|(i, k)| (k, i)).collect();
        let mut recent = 0;
        let mut reads = 0;
        let mut inserted: HashSet<&[u8]> = HashSet::new();
        for (op, key) in ops.ops.iter().zip(ops.keys.iter()) {
            match op.kind {
                OpKind::Insert => {
                    inserted.insert(key);
                }
                _ => {
                    reads += 1;
                    // Every read hits a key that is present at that point.
                    let present = position.contains_key(key) || inserted.contains(key);
                    assert!(present, "read of a key not yet inserted");
                    if inserted.contains(key) || position[key] >= ds.keys.len() - 1000 {
                        recent += 1;
                    }
                }
            }
        }
        assert!(recent as f64 / reads as f64 > 0.5, "{recent} of {reads}");
    }

    #[test]
    fn lookup_miss_keys_are_absent() {
        let ds = dataset(100_000);
        let load = load_set(&ds);
        let mut fresh = Fresh::new();
        let d = generate(
            Workload::D,
            Distribution::Uniform,
            &ds,
            50_000,
            &mut fresh,
            1,
        )
        .unwrap();
        let inserted: HashSet<&[u8]> = d
            .ops
            .iter()
            .zip(d.keys.iter())
            .filter(|(op, _)| op.kind == OpKind::Insert)
            .map(|(_, k)| k)
            .collect();
        for dist in [Distribution::Uniform, Distribution::Zipfian] {
            let ops = generate(Workload::LookupMiss, dist, &ds, 50_000, &mut fresh, 1).unwrap();
            assert!(ops.ops.iter().all(|op| op.kind == OpKind::Read));
            for key in ops.keys.iter() {
                assert!(!load.contains(key) && !inserted.contains(key));
            }
        }
    }

    #[test]
    fn lower_bound_mix() {
        let ds = dataset(100_000);
        let load = load_set(&ds);
        let ops = generate(
            Workload::LowerBound,
            Distribution::Uniform,
            &ds,
            100_000,
            &mut Fresh::new(),
            9,
        )
        .unwrap();
        assert!(ops.ops.iter().all(|op| op.kind == OpKind::LowerBound));
        let present = ops.keys.iter().filter(|k| load.contains(k)).count() as f64 / 100_000.0;
        assert!((present - 0.15).abs() < 0.015, "present share {present}");
    }

    #[test]
    fn deterministic() {
        let ds = dataset(20_000);
        for w in [Workload::A, Workload::D, Workload::E, Workload::LowerBound] {
            let a = generate(w, Distribution::Zipfian, &ds, 5000, &mut Fresh::new(), 8).unwrap();
            let b = generate(w, Distribution::Zipfian, &ds, 5000, &mut Fresh::new(), 8).unwrap();
            let c = generate(w, Distribution::Zipfian, &ds, 5000, &mut Fresh::new(), 9).unwrap();
            assert_eq!(a.keys, b.keys);
            let kinds = |o: &Ops| o.ops.iter().map(|op| (op.kind, op.len)).collect::<Vec<_>>();
            assert_eq!(kinds(&a), kinds(&b));
            assert_ne!(a.keys, c.keys);
        }
    }

    #[test]
    fn empty_sources_are_errors() {
        let ds = Dataset {
            name: "tiny".to_string(),
            keys: Keys::new(),
            reserve: Keys::new(),
        };
        let mut fresh = Fresh::new();
        for w in [Workload::C, Workload::LookupMiss, Workload::D] {
            assert!(generate(w, Distribution::Uniform, &ds, 10, &mut fresh, 1).is_err());
        }
    }

    /// Release-mode timing: `cargo test --release -p mlpdex-bench --lib workload::tests::timing
    /// -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn timing() {
        let ds = dataset::load("rand-8", 10_000_000, 1).unwrap();
        for (w, dist) in [
            (Workload::C, Distribution::Uniform),
            (Workload::C, Distribution::Zipfian),
            (Workload::D, Distribution::Uniform),
            (Workload::E, Distribution::Zipfian),
        ] {
            let t = std::time::Instant::now();
            let ops = generate(w, dist, &ds, 10_000_000, &mut Fresh::new(), 1).unwrap();
            eprintln!("{w} {dist}: 10M ops in {:?}", t.elapsed());
            assert_eq!(ops.keys.len(), 10_000_000);
        }
    }
}
