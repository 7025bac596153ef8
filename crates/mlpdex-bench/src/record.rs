//! One measurement: the row of the table and the line of the JSON output.
//!
//! The JSON object has exactly these fields, in this order (other tools parse it):
//! `index, dataset, keys, workload, distribution, mode, threads, batch, ops, seconds, mops, ns_per_op,
//! dram_rt_per_op, bytes_per_key, overhead_bytes_per_key, fpr, bits_per_key, compression_rate,
//! encode_ns_per_byte, dictionary_bytes, p50_ns, p99_ns, p999_ns, max_ns, provenance`. Unknown values are `null`: every record has every
//! field.
//!
//! `fpr` and `bits_per_key` came with the `filter` subcommand and are `null` in the records of
//! `run`; the three HOPE fields came last and are set only for encoded indexes
//! (`<index>+<scheme>`) and the `hope` subcommand. Lines written before a field existed still
//! read, with it `None`.

use serde::{Deserialize, Serialize};

/// A measurement of one (index, dataset, workload, distribution, mode, threads) combination.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Stable kebab-case index name, e.g. `btreemap`, `cuckoo-trie-d4`.
    pub index: String,
    /// Dataset name as given on the command line, e.g. `rand-8`, `u64:/data/osm`.
    pub dataset: String,
    /// Keys loaded into the index before the workload ran.
    pub keys: u64,
    /// Workload name: `load`, `a`–`f`, `lookup-miss`, `lower-bound`, `scan-N`.
    pub workload: String,
    /// Key-choice distribution: `uniform` or `zipfian`.
    pub distribution: String,
    /// `independent` (throughput) or `dependent` (latency).
    pub mode: String,
    /// Threads running the workload.
    pub threads: u32,
    /// Reads and lower bounds went to the index in groups of up to this many (1: one by one).
    #[serde(default = "one")]
    pub batch: u32,
    /// Operations timed.
    pub ops: u64,
    /// Wall-clock seconds for all operations.
    pub seconds: f64,
    /// Million operations per second over all threads.
    pub mops: f64,
    /// Nanoseconds per operation per thread (`seconds * threads / ops`).
    pub ns_per_op: f64,
    /// `ns_per_op` divided by the probed latency of one dependent DRAM access.
    pub dram_rt_per_op: Option<f64>,
    /// Bytes the index owns per key after the load (allocator statistics plus mapped regions).
    pub bytes_per_key: Option<f64>,
    /// `bytes_per_key` minus the raw key and value bytes per key.
    pub overhead_bytes_per_key: Option<f64>,
    /// Filters only (`filter-*` workloads): the false-positive rate as a fraction in `[0, 1]`,
    /// false positives divided by the queries whose true answer is negative (`None` when no
    /// query was negative).
    #[serde(default)]
    pub fpr: Option<f64>,
    /// Filters only (`filter-*` and their `build` records): the filter's memory in bits per
    /// stored key.
    #[serde(default)]
    pub bits_per_key: Option<f64>,
    /// HOPE only: total key bytes divided by total encoded key bytes over the dataset.
    #[serde(default)]
    pub compression_rate: Option<f64>,
    /// HOPE only: nanoseconds to encode one input byte (whole dataset, one thread).
    #[serde(default)]
    pub encode_ns_per_byte: Option<f64>,
    /// HOPE only: bytes of the encoder's dictionary (lookup structure and entries).
    #[serde(default)]
    pub dictionary_bytes: Option<u64>,
    /// Median latency of the sampled operations, in ns (see [`crate::exec::Latency`]).
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
    /// Where the measurement comes from: commit, date, host, settings, seed, round, command
    /// (`None` only in lines written before provenance was recorded).
    #[serde(default)]
    pub provenance: Option<crate::provenance::Provenance>,
}

fn one() -> u32 {
    1
}

/// The JSON field names, in output order.
pub const FIELDS: [&str; 25] = [
    "index",
    "dataset",
    "keys",
    "workload",
    "distribution",
    "mode",
    "threads",
    "batch",
    "ops",
    "seconds",
    "mops",
    "ns_per_op",
    "dram_rt_per_op",
    "bytes_per_key",
    "overhead_bytes_per_key",
    "fpr",
    "bits_per_key",
    "compression_rate",
    "encode_ns_per_byte",
    "dictionary_bytes",
    "p50_ns",
    "p99_ns",
    "p999_ns",
    "max_ns",
    "provenance",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_has_exactly_the_documented_fields_in_order() {
        let r = Record {
            index: "btreemap".into(),
            dataset: "rand-8".into(),
            keys: 10,
            workload: "c".into(),
            distribution: "uniform".into(),
            mode: "dependent".into(),
            threads: 1,
            batch: 1,
            ops: 5,
            seconds: 1e-6,
            mops: 5.0,
            ns_per_op: 200.0,
            dram_rt_per_op: None,
            bytes_per_key: Some(40.0),
            overhead_bytes_per_key: Some(24.0),
            fpr: None,
            bits_per_key: Some(10.5),
            compression_rate: Some(1.9),
            encode_ns_per_byte: None,
            dictionary_bytes: Some(4096),
            p50_ns: None,
            p99_ns: None,
            p999_ns: None,
            max_ns: None,
            provenance: None,
        };
        let line = serde_json::to_string(&r).unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        let obj = v.as_object().unwrap();
        assert_eq!(obj.keys().count(), FIELDS.len());
        // serde_json without preserve_order sorts keys; check order on the raw text instead.
        let mut last = 0;
        for f in FIELDS {
            let at = line.find(&format!("\"{f}\":")).unwrap();
            assert!(at >= last, "field {f} out of order");
            last = at;
        }
        assert!(obj["dram_rt_per_op"].is_null());
        assert!(
            obj["fpr"].is_null(),
            "None is written as null, not left out"
        );
        assert_eq!(serde_json::from_str::<Record>(&line).unwrap(), r);
    }

    #[test]
    fn lines_without_the_filter_fields_still_read() {
        let old = r#"{"index":"btreemap","dataset":"rand-8","keys":10,"workload":"c",
            "distribution":"uniform","mode":"dependent","threads":1,"ops":5,"seconds":1e-6,
            "mops":5.0,"ns_per_op":200.0,"dram_rt_per_op":null,"bytes_per_key":40.0,
            "overhead_bytes_per_key":24.0}"#;
        let r: Record = serde_json::from_str(old).unwrap();
        assert_eq!((r.fpr, r.bits_per_key), (None, None));
        assert_eq!((r.compression_rate, r.dictionary_bytes), (None, None));
        assert_eq!(r.bytes_per_key, Some(40.0));
    }
}
