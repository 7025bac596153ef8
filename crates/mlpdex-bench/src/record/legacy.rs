//! Lines written before records were tagged (before the `kind` field): one flat object with
//! every field of every kind, unused ones `null`. They are converted on reading, here and only
//! here, so results files from earlier runs still feed `report` and `markdown`.
//!
//! The old lines did not type what a record measured; it was spelled in the index and workload
//! names, so this conversion is the one place that reads those names: `encode` records name
//! `<scheme>-<entries>`, `build` and `filter-*` records name a filter as `filter` parses it.

use serde::Deserialize;

use super::{EncoderRecord, FilterOp, FilterRecord, IndexRecord, Measurement, Record};
use crate::adapter::HopeFacts;
use crate::filter::QueryKind;

/// The old flat record.
#[derive(Deserialize)]
struct Flat {
    index: String,
    dataset: String,
    keys: u64,
    workload: String,
    distribution: String,
    mode: String,
    threads: u32,
    #[serde(default = "one")]
    batch: u32,
    ops: u64,
    seconds: f64,
    mops: f64,
    ns_per_op: f64,
    dram_rt_per_op: Option<f64>,
    bytes_per_key: Option<f64>,
    overhead_bytes_per_key: Option<f64>,
    #[serde(default)]
    fpr: Option<f64>,
    #[serde(default)]
    bits_per_key: Option<f64>,
    #[serde(default)]
    compression_rate: Option<f64>,
    #[serde(default)]
    encode_ns_per_byte: Option<f64>,
    #[serde(default)]
    dictionary_bytes: Option<u64>,
    #[serde(default)]
    p50_ns: Option<f64>,
    #[serde(default)]
    p99_ns: Option<f64>,
    #[serde(default)]
    p999_ns: Option<f64>,
    #[serde(default)]
    max_ns: Option<f64>,
    #[serde(default)]
    provenance: Option<crate::provenance::Provenance>,
}

fn one() -> u32 {
    1
}

/// Converts one old line (already parsed as JSON) into a typed record.
pub(super) fn convert(value: serde_json::Value) -> Result<Record, String> {
    let f: Flat = serde_json::from_value(value).map_err(|e| e.to_string())?;
    let m = Measurement {
        index: f.index.clone(),
        dataset: f.dataset.clone(),
        keys: f.keys,
        ops: f.ops,
        seconds: f.seconds,
        mops: f.mops,
        ns_per_op: f.ns_per_op,
        p50_ns: f.p50_ns,
        p99_ns: f.p99_ns,
        p999_ns: f.p999_ns,
        max_ns: f.max_ns,
        series: None,
        spread: None,
        provenance: f.provenance.clone(),
    };
    let hope = match (f.compression_rate, f.encode_ns_per_byte, f.dictionary_bytes) {
        (Some(compression_rate), Some(encode_ns_per_byte), Some(dictionary_bytes)) => {
            Some(HopeFacts {
                compression_rate,
                encode_ns_per_byte,
                dictionary_bytes,
            })
        }
        _ => None,
    };
    let op = if f.workload == "build" {
        Some(FilterOp::Build)
    } else {
        QueryKind::from_workload(&f.workload).map(FilterOp::Query)
    };
    if let Some(op) = op {
        let parsed = crate::filter::parse_indexes(&f.index)?;
        let [filter] = parsed.as_slice() else {
            return Err(format!("old filter record names {:?}", f.index));
        };
        return Ok(Record::Filter(FilterRecord {
            m,
            filter: filter.kind,
            batched: filter.batched,
            scheme: filter.scheme,
            op,
            fpr: f.fpr,
            bits_per_key: f.bits_per_key.unwrap_or(f64::NAN),
            hope,
        }));
    }
    if f.workload == "encode" {
        let (scheme, entries) = f
            .index
            .rsplit_once('-')
            .and_then(|(s, n)| Some((mlpdex::hope::Scheme::from_name(s)?, n.parse().ok()?)))
            .ok_or_else(|| format!("old encoder record names {:?}", f.index))?;
        return Ok(Record::Encoder(EncoderRecord {
            m,
            scheme,
            limit: None,
            entries,
            build_seconds: f64::NAN,
            hope: hope.ok_or("old encoder record without its HOPE figures")?,
        }));
    }
    Ok(Record::Index(IndexRecord {
        m,
        workload: f.workload.parse()?,
        distribution: f.distribution.parse()?,
        mode: f.mode.parse()?,
        threads: f.threads,
        batch: f.batch,
        dram_rt_per_op: f.dram_rt_per_op,
        bytes_per_key: f.bytes_per_key,
        overhead_bytes_per_key: f.overhead_bytes_per_key,
        mean_key_len: None,
        mean_shared_prefix: None,
        hope,
        merges: Vec::new(),
    }))
}

#[cfg(test)]
mod tests {
    use super::super::Record;
    use crate::filter::QueryKind;
    use crate::record::FilterOp;

    #[test]
    fn old_lines_of_every_kind_read_as_typed_records() {
        let index = r#"{"index":"btreemap","dataset":"rand-8","keys":10,"workload":"c",
            "distribution":"uniform","mode":"dependent","threads":1,"ops":5,"seconds":1e-6,
            "mops":5.0,"ns_per_op":200.0,"dram_rt_per_op":null,"bytes_per_key":40.0,
            "overhead_bytes_per_key":24.0}"#;
        let r = Record::from_json(index).unwrap();
        let i = r.as_index().unwrap();
        assert_eq!((i.workload.to_string(), i.batch), ("c".to_string(), 1));
        assert_eq!(i.bytes_per_key, Some(40.0));

        let filter = r#"{"index":"surf-hash-4","dataset":"rand-8","keys":10,
            "workload":"filter-point","distribution":"uniform","mode":"independent",
            "threads":1,"ops":5,"seconds":1e-6,"mops":5.0,"ns_per_op":200.0,
            "dram_rt_per_op":null,"bytes_per_key":1.5,"overhead_bytes_per_key":null,
            "fpr":0.01,"bits_per_key":12.0}"#;
        let r = Record::from_json(filter).unwrap();
        let f = r.as_filter().unwrap();
        assert_eq!(f.op, FilterOp::Query(QueryKind::Point));
        assert_eq!((f.fpr, f.bits_per_key), (Some(0.01), 12.0));

        let encode = r#"{"index":"double-char-65536","dataset":"email","keys":10,
            "workload":"encode","distribution":"uniform","mode":"independent","threads":1,
            "ops":10,"seconds":1e-6,"mops":10.0,"ns_per_op":100.0,"dram_rt_per_op":null,
            "bytes_per_key":null,"overhead_bytes_per_key":null,"compression_rate":1.5,
            "encode_ns_per_byte":2.0,"dictionary_bytes":1000}"#;
        let r = Record::from_json(encode).unwrap();
        let e = r.as_encoder().unwrap();
        assert_eq!((e.scheme.name(), e.entries), ("double-char", 65536));
        assert_eq!(e.hope.compression_rate, 1.5);
    }
}
