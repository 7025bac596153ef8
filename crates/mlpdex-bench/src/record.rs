//! One measurement: the row of a table and the line of the JSON output.
//!
//! A [`Record`] is a tagged enum, one variant per kind of experiment, each with typed fields:
//!
//! - [`Record::Index`]: an ordered index under a workload (`run`);
//! - [`Record::Filter`]: a range filter's build or query loop (`filter`);
//! - [`Record::Encoder`]: a HOPE encoder encoding a dataset (`hope`).
//!
//! Every variant carries the same [`Measurement`] (identity, timing, latency percentiles,
//! spread over rounds, provenance). In JSON a record is one object: `"kind"` names the variant,
//! the measurement's fields sit beside the variant's own (`{"kind":"index","index":"fst",
//! "dataset":"rand-8",…,"workload":"c","mode":"dependent",…}`). Readers (`report`,
//! `markdown`) use the typed fields and never parse an index name; lines written before records
//! were tagged still read (see [`Record::from_json`]), converted once on reading.

use serde::{Deserialize, Serialize};

use crate::adapter::{HopeFacts, Merge};
use crate::exec::Mode;
use crate::filter::{FilterKind, QueryKind};
use crate::provenance::Provenance;
use crate::workload::{Distribution, Workload};

mod legacy;

/// What every record has: what was measured, how fast, how spread over rounds, and where from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// The name the structure was asked for by: `btreemap`, `cuckoo-trie-d4`,
    /// `surf-real-8+double-char`, `alm-improved-4096`. A label: its parts are typed fields.
    pub index: String,
    /// Dataset name as given, e.g. `rand-8`, `u64:/data/osm`.
    pub dataset: String,
    /// Keys in the structure while it was measured (for filters: the stored half).
    pub keys: u64,
    /// Operations timed (keys built or encoded, for builds and encoders).
    pub ops: u64,
    /// Wall-clock seconds for all operations.
    pub seconds: f64,
    /// Million operations per second over all threads.
    pub mops: f64,
    /// Nanoseconds per operation per thread (`seconds * threads / ops`).
    pub ns_per_op: f64,
    /// Median latency of the sampled operations, ns (see [`crate::exec::Latency`]).
    #[serde(default)]
    pub p50_ns: Option<f64>,
    /// 99th-percentile latency, ns.
    #[serde(default)]
    pub p99_ns: Option<f64>,
    /// 99.9th-percentile latency, ns.
    #[serde(default)]
    pub p999_ns: Option<f64>,
    /// Slowest sampled operation, ns.
    #[serde(default)]
    pub max_ns: Option<f64>,
    /// Latency over time: mean ns per operation in consecutive windows of the run, when asked
    /// for (`--latency-series`).
    #[serde(default)]
    pub series: Option<Series>,
    /// How the rounds spread around the reported (median) one; `None` for a single round.
    #[serde(default)]
    pub spread: Option<Spread>,
    /// Where the measurement comes from (`None` only in lines written before it was recorded).
    #[serde(default)]
    pub provenance: Option<Provenance>,
}

/// The spread of one measurement over its rounds, by throughput.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Rounds measured.
    pub rounds: u32,
    /// The slowest round's Mops/s.
    pub min_mops: f64,
    /// The fastest round's Mops/s.
    pub max_mops: f64,
}

impl Spread {
    /// The spread of `mops` (one figure per round); `None` for fewer than two rounds.
    pub fn of(mops: &[f64]) -> Option<Spread> {
        (mops.len() >= 2).then(|| Spread {
            rounds: mops.len() as u32,
            min_mops: mops.iter().copied().fold(f64::INFINITY, f64::min),
            max_mops: mops.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }

    /// Half the range of the rounds relative to `median` Mops/s: `0.03` reads "±3%".
    pub fn relative(&self, median: f64) -> f64 {
        if median > 0.0 {
            (self.max_mops - self.min_mops) / (2.0 * median)
        } else {
            0.0
        }
    }
}

/// Latency over the course of a run: the mean latency of each window of `window` consecutive
/// operations (of one thread), in order. Shows what percentiles hide: a load that slows down as
/// the structure grows, or stalls while it resizes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Operations per window.
    pub window: u64,
    /// Mean ns per operation of each window.
    pub ns: Vec<f64>,
}

/// An ordered index under a workload (`mlpdex-bench run`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexRecord {
    /// Identity and timing.
    #[serde(flatten)]
    pub m: Measurement,
    /// The workload.
    pub workload: Workload,
    /// How its keys were chosen.
    pub distribution: Distribution,
    /// Throughput (`independent`) or latency (`dependent`).
    pub mode: Mode,
    /// Threads running the workload.
    pub threads: u32,
    /// Reads and lower bounds went to the index in groups of up to this many (1: one by one).
    pub batch: u32,
    /// `ns_per_op` divided by the probed latency of one dependent DRAM access.
    pub dram_rt_per_op: Option<f64>,
    /// Bytes the index owns per key after the load (allocator statistics plus mapped regions).
    pub bytes_per_key: Option<f64>,
    /// `bytes_per_key` minus the raw key and value bytes per key.
    pub overhead_bytes_per_key: Option<f64>,
    /// The load set's mean key length in bytes. Left out of the JSON when unknown: lines
    /// written before it was recorded read as `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_key_len: Option<f64>,
    /// The load set's mean prefix shared with the sorted neighbour, in bytes
    /// ([`crate::dataset::KeyStats::mean_shared_prefix`]): how much of a key a trie's upper
    /// levels or path compression share. Measured once per process for load sets of up to
    /// [`crate::exec::SHARED_PREFIX_MAX_KEYS`] keys, `None` (left out of the JSON) above that
    /// and in lines written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_shared_prefix: Option<f64>,
    /// For an index behind a HOPE encoder (`<index>+<scheme>`): the encoder's figures.
    #[serde(default)]
    pub hope: Option<HopeFacts>,
    /// Every merge a hybrid index ran during the measured operations, oldest first, as
    /// `{"entries":…,"secs":…,"filter_secs":…,"old_bytes":…,"new_bytes":…}` objects. Empty for other indexes
    /// and left out of their JSON; lines written before it was recorded read as empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merges: Vec<Merge>,
}

/// What a filter record timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FilterOp {
    /// Building the filter from the stored keys (ops = keys; Mops/s = million keys per second).
    Build,
    /// A query loop.
    Query(QueryKind),
}

/// A range filter's build or query loop (`mlpdex-bench filter`, memory-efficient-search-trees.txt
/// §4.3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FilterRecord {
    /// Identity and timing.
    #[serde(flatten)]
    pub m: Measurement,
    /// The filter: SuRF variant and suffix bits, or Bloom bits per key.
    pub filter: FilterKind,
    /// Queries went through SuRF's batch interface.
    pub batched: bool,
    /// The HOPE scheme in front of the SuRF, if any.
    #[serde(with = "scheme_name::option", default)]
    pub scheme: Option<mlpdex::hope::Scheme>,
    /// Build or which queries.
    pub op: FilterOp,
    /// False positives over negative queries, in `[0, 1]`; `None` for a build or when no query
    /// was negative.
    pub fpr: Option<f64>,
    /// The filter's memory in bits per stored key (the dictionary included, with HOPE).
    pub bits_per_key: f64,
    /// With a HOPE encoder: its figures.
    #[serde(default)]
    pub hope: Option<HopeFacts>,
}

/// A HOPE encoder encoding a dataset (`mlpdex-bench hope`, memory-efficient-search-trees.txt
/// ch. 6). Ops are keys encoded; `ns_per_op` is per key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EncoderRecord {
    /// Identity and timing of the encoding pass.
    #[serde(flatten)]
    pub m: Measurement,
    /// The scheme.
    #[serde(with = "scheme_name")]
    pub scheme: mlpdex::hope::Scheme,
    /// The dictionary size limit it was built with (`None` for fixed-size schemes).
    pub limit: Option<u64>,
    /// Dictionary entries.
    pub entries: u64,
    /// Seconds to build the dictionary from the sample.
    pub build_seconds: f64,
    /// Compression rate, encoding speed, dictionary size.
    pub hope: HopeFacts,
}

/// One measurement of any kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Record {
    /// An ordered index under a workload.
    Index(IndexRecord),
    /// A range filter's build or query loop.
    Filter(FilterRecord),
    /// A HOPE encoder's encoding pass.
    Encoder(EncoderRecord),
}

impl Record {
    /// The measurement every kind has.
    pub fn m(&self) -> &Measurement {
        match self {
            Record::Index(r) => &r.m,
            Record::Filter(r) => &r.m,
            Record::Encoder(r) => &r.m,
        }
    }

    /// The measurement, to stamp or adjust.
    pub fn m_mut(&mut self) -> &mut Measurement {
        match self {
            Record::Index(r) => &mut r.m,
            Record::Filter(r) => &mut r.m,
            Record::Encoder(r) => &mut r.m,
        }
    }

    /// The index record, if it is one.
    pub fn as_index(&self) -> Option<&IndexRecord> {
        match self {
            Record::Index(r) => Some(r),
            _ => None,
        }
    }

    /// The filter record, if it is one.
    pub fn as_filter(&self) -> Option<&FilterRecord> {
        match self {
            Record::Filter(r) => Some(r),
            _ => None,
        }
    }

    /// The encoder record, if it is one.
    pub fn as_encoder(&self) -> Option<&EncoderRecord> {
        match self {
            Record::Encoder(r) => Some(r),
            _ => None,
        }
    }

    /// What was run, as a table prints it: the workload (`c`, `scan-100`), `build`,
    /// `filter-point`, or `encode`.
    pub fn workload_name(&self) -> String {
        match self {
            Record::Index(r) => r.workload.to_string(),
            Record::Filter(r) => match r.op {
                FilterOp::Build => "build".into(),
                FilterOp::Query(q) => q.workload().into(),
            },
            Record::Encoder(_) => "encode".into(),
        }
    }

    /// Everything that identifies the measurement apart from its round: records with the same
    /// key are rounds (or repeated runs) of one measurement.
    pub fn key(&self) -> RecordKey {
        let m = self.m();
        let (distribution, mode, threads, batch) = match self {
            Record::Index(r) => (
                r.distribution.to_string(),
                r.mode.name(),
                r.threads,
                r.batch,
            ),
            _ => ("uniform".to_string(), "independent", 1, 1),
        };
        RecordKey {
            kind: self.kind_name(),
            index: m.index.clone(),
            dataset: m.dataset.clone(),
            keys: m.keys,
            workload: self.workload_name(),
            distribution,
            mode,
            threads,
            batch,
            experiment: m.provenance.as_ref().and_then(|p| p.experiment),
        }
    }

    /// `index`, `filter` or `encoder`: the JSON tag.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Record::Index(_) => "index",
            Record::Filter(_) => "filter",
            Record::Encoder(_) => "encoder",
        }
    }

    /// Bytes per key the structure occupies, where measured: an index's allocation, a filter's
    /// bits over 8.
    pub fn bytes_per_key(&self) -> Option<f64> {
        match self {
            Record::Index(r) => r.bytes_per_key,
            Record::Filter(r) => Some(r.bits_per_key / 8.0),
            Record::Encoder(_) => None,
        }
    }

    /// The HOPE figures, for encoded structures and encoders.
    pub fn hope(&self) -> Option<HopeFacts> {
        match self {
            Record::Index(r) => r.hope,
            Record::Filter(r) => r.hope,
            Record::Encoder(r) => Some(r.hope),
        }
    }

    /// Reads one JSON line: a tagged record, or a line written before records were tagged
    /// (converted; see the `legacy` module).
    pub fn from_json(line: &str) -> Result<Record, String> {
        let value: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        if value.get("kind").is_some() {
            serde_json::from_value(value).map_err(|e| e.to_string())
        } else {
            legacy::convert(value)
        }
    }
}

/// What identifies a measurement apart from its round (see [`Record::key`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordKey {
    /// The record's kind.
    pub kind: &'static str,
    /// Index name.
    pub index: String,
    /// Dataset.
    pub dataset: String,
    /// Keys.
    pub keys: u64,
    /// Workload name.
    pub workload: String,
    /// Distribution name.
    pub distribution: String,
    /// Mode name.
    pub mode: &'static str,
    /// Threads.
    pub threads: u32,
    /// Batch size.
    pub batch: u32,
    /// The suite experiment, if any (see [`Provenance::experiment`]).
    pub experiment: Option<u32>,
}

/// Serde of a HOPE [`Scheme`](mlpdex::hope::Scheme) by its name (`double-char`).
pub(crate) mod scheme_name {
    use mlpdex::hope::Scheme;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(s: &Scheme, ser: S) -> Result<S::Ok, S::Error> {
        ser.serialize_str(s.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Scheme, D::Error> {
        let name = String::deserialize(d)?;
        Scheme::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown HOPE scheme {name:?}")))
    }

    /// The same for `Option<Scheme>` (`null` for none).
    pub mod option {
        use super::*;

        pub fn serialize<S: Serializer>(s: &Option<Scheme>, ser: S) -> Result<S::Ok, S::Error> {
            match s {
                Some(s) => ser.serialize_some(s.name()),
                None => ser.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Scheme>, D::Error> {
            match Option::<String>::deserialize(d)? {
                None => Ok(None),
                Some(name) => Scheme::from_name(&name).map(Some).ok_or_else(|| {
                    serde::de::Error::custom(format!("unknown HOPE scheme {name:?}"))
                }),
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An index record for tests: `index` on rand-8 under `workload`, at `mops`.
    pub(crate) fn index_rec(index: &str, workload: &str, mops: f64) -> Record {
        Record::Index(IndexRecord {
            m: Measurement {
                index: index.into(),
                dataset: "rand-8".into(),
                keys: 1000,
                ops: 100,
                seconds: 100.0 / mops / 1e6,
                mops,
                ns_per_op: 1e3 / mops,
                ..Measurement::default()
            },
            workload: workload.parse().unwrap(),
            distribution: Distribution::Uniform,
            mode: Mode::Independent,
            threads: 1,
            batch: 1,
            dram_rt_per_op: None,
            bytes_per_key: Some(40.0),
            overhead_bytes_per_key: Some(24.0),
            mean_key_len: None,
            mean_shared_prefix: None,
            hope: None,
            merges: Vec::new(),
        })
    }

    /// A filter query record for tests.
    pub(crate) fn filter_rec(name: &str, op: FilterOp, bits: f64, fpr: Option<f64>) -> Record {
        Record::Filter(FilterRecord {
            m: Measurement {
                index: name.into(),
                dataset: "rand-8".into(),
                keys: 1000,
                ops: 100,
                seconds: 1e-4,
                mops: 1.0,
                ns_per_op: 1e3,
                ..Measurement::default()
            },
            filter: crate::filter::parse_indexes(name.split('+').next().unwrap()).unwrap()[0].kind,
            batched: false,
            scheme: None,
            op,
            fpr,
            bits_per_key: bits,
            hope: None,
        })
    }

    #[test]
    fn every_kind_round_trips_through_one_tagged_json_object() {
        let encoder = Record::Encoder(EncoderRecord {
            m: Measurement {
                index: "alm-improved-4096".into(),
                dataset: "email".into(),
                keys: 10,
                ops: 10,
                seconds: 1e-6,
                mops: 10.0,
                ns_per_op: 100.0,
                spread: Spread::of(&[9.0, 10.0, 11.0]),
                ..Measurement::default()
            },
            scheme: mlpdex::hope::Scheme::AlmImproved,
            limit: Some(4096),
            entries: 4000,
            build_seconds: 0.5,
            hope: HopeFacts {
                compression_rate: 1.9,
                encode_ns_per_byte: 3.0,
                dictionary_bytes: 65536,
            },
        });
        let records = [
            index_rec("fst", "scan-100", 3.0),
            filter_rec(
                "surf-real-8",
                FilterOp::Query(QueryKind::Range),
                12.5,
                Some(0.01),
            ),
            filter_rec("bloom-10", FilterOp::Build, 10.0, None),
            encoder,
        ];
        for r in &records {
            let line = serde_json::to_string(r).unwrap();
            assert!(!line.contains('\n'));
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            assert_eq!(v["kind"], r.kind_name(), "{line}");
            assert_eq!(v["index"], r.m().index.as_str(), "flattened: {line}");
            assert_eq!(&Record::from_json(&line).unwrap(), r, "{line}");
        }
        let line = serde_json::to_string(&records[1]).unwrap();
        assert!(line.contains(r#""op":{"query":"range"}"#), "{line}");
        assert!(
            line.contains(r#""filter":{"family":"surf-real","bits":8}"#),
            "{line}"
        );
    }

    #[test]
    fn merges_round_trip_and_are_left_out_when_empty() {
        let plain = index_rec("btreemap", "load", 1.0);
        let line = serde_json::to_string(&plain).unwrap();
        assert!(!line.contains("merges"), "{line}");
        assert_eq!(Record::from_json(&line).unwrap(), plain);

        let mut hybrid = index_rec("hybrid-cuckoo-trie-fst", "load", 1.0);
        if let Record::Index(r) = &mut hybrid {
            r.merges = vec![
                Merge {
                    entries: 4096,
                    secs: 0.000_5,
                    filter_secs: 0.0,
                    old_bytes: 0,
                    new_bytes: 40_000,
                },
                Merge {
                    entries: 45_056,
                    secs: 0.003,
                    filter_secs: 0.25,
                    old_bytes: 40_000,
                    new_bytes: 400_000,
                },
            ];
        }
        let line = serde_json::to_string(&hybrid).unwrap();
        assert!(
            line.contains(
                r#""merges":[{"entries":4096,"secs":0.0005,"filter_secs":0.0,"old_bytes":0,"new_bytes":40000},"#
            ),
            "{line}"
        );
        assert_eq!(Record::from_json(&line).unwrap(), hybrid);
        // A merge written before filter rebuilds were timed (no `filter_secs`) reads as none.
        let older = line.replace(r#""filter_secs":0.25,"#, "");
        assert_ne!(older, line);
        let Record::Index(r) = Record::from_json(&older).unwrap() else {
            panic!("an index record")
        };
        assert_eq!(r.merges[1].filter_secs, 0.0);
        assert_eq!(r.merges[1].secs, 0.003);

        // A line written before merges were recorded (it has no such field) reads as none.
        let old = r#"{"kind":"index","index":"hybrid-cuckoo-trie-fst","dataset":"rand-8",
            "keys":10,"ops":10,"seconds":1e-6,"mops":10.0,"ns_per_op":100.0,"workload":"load",
            "distribution":"uniform","mode":"independent","threads":1,"batch":1,
            "dram_rt_per_op":null,"bytes_per_key":20.0,"overhead_bytes_per_key":4.0,
            "hope":null}"#;
        let r = Record::from_json(old).unwrap();
        assert!(r.as_index().unwrap().merges.is_empty());
    }

    #[test]
    fn key_shape_round_trips_and_is_left_out_when_unknown() {
        let plain = index_rec("btreemap", "c", 1.0);
        let line = serde_json::to_string(&plain).unwrap();
        assert!(!line.contains("mean_key_len"), "{line}");
        assert!(!line.contains("mean_shared_prefix"), "{line}");
        assert_eq!(Record::from_json(&line).unwrap(), plain);

        let mut long = plain.clone();
        if let Record::Index(r) = &mut long {
            r.mean_key_len = Some(61.9);
            r.mean_shared_prefix = Some(50.4);
        }
        let line = serde_json::to_string(&long).unwrap();
        assert!(
            line.contains(r#""mean_key_len":61.9,"mean_shared_prefix":50.4"#),
            "{line}"
        );
        assert_eq!(Record::from_json(&line).unwrap(), long);

        // A line written before the key shape was recorded reads as unknown.
        let old = r#"{"kind":"index","index":"btreemap","dataset":"paths","keys":10,"ops":10,
            "seconds":1e-6,"mops":10.0,"ns_per_op":100.0,"workload":"c",
            "distribution":"uniform","mode":"independent","threads":1,"batch":1,
            "dram_rt_per_op":1.2,"bytes_per_key":90.0,"overhead_bytes_per_key":20.0}"#;
        let r = Record::from_json(old).unwrap();
        let r = r.as_index().unwrap();
        assert_eq!((r.mean_key_len, r.mean_shared_prefix), (None, None));
    }

    #[test]
    fn spread_is_half_the_range_over_the_median() {
        let s = Spread::of(&[9.0, 10.0, 11.0]).unwrap();
        assert_eq!((s.rounds, s.min_mops, s.max_mops), (3, 9.0, 11.0));
        assert!((s.relative(10.0) - 0.1).abs() < 1e-12);
        assert_eq!(Spread::of(&[5.0]), None);
    }

    #[test]
    fn records_of_different_kinds_or_settings_have_different_keys() {
        let a = index_rec("fst", "c", 1.0);
        let mut b = a.clone();
        assert_eq!(a.key(), b.key());
        if let Record::Index(r) = &mut b {
            r.batch = 16;
        }
        assert_ne!(a.key(), b.key());
        let f = filter_rec("surf-base", FilterOp::Build, 10.0, None);
        assert_eq!(f.workload_name(), "build");
        assert_ne!(f.key().kind, a.key().kind);
    }

    #[test]
    fn a_bad_line_is_an_error_not_a_panic() {
        for line in [
            "",
            "{",
            "3",
            r#"{"kind":"index"}"#,
            r#"{"kind":"nope","index":"x"}"#,
        ] {
            assert!(Record::from_json(line).is_err(), "{line}");
        }
    }
}
