//! The comparison tables printed on stdout (indexes: [`format_table`]; filters:
//! [`format_filter_table`]), and the JSON-lines output.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

use crate::record::Record;

/// Formats records as an aligned table, grouped by (workload, distribution, mode, threads) in
/// first-seen order. The `vs REF` column gives each index's throughput relative to the reference
/// index in the same group: `btreemap` when present, else the group's first index.
pub fn format_table(records: &[Record]) -> String {
    let mut groups: Vec<(String, Vec<&Record>)> = Vec::new();
    for r in records {
        let key = format!(
            "{}|{}|{}|{}|{}",
            r.workload, r.distribution, r.mode, r.threads, r.batch
        );
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    let header = [
        "index",
        "workload",
        "dist",
        "mode",
        "thr",
        "batch",
        "ops",
        "Mops/s",
        "ns/op",
        "DRAM rt",
        "p50 ns",
        "p99 ns",
        "B/key",
        "ovh B/key",
        "vs ref",
    ];
    let mut rows: Vec<[String; 15]> = Vec::new();
    for (_, group) in &groups {
        let reference = group
            .iter()
            .find(|r| r.index == "btreemap")
            .or(group.first())
            .copied();
        for r in group {
            let vs = reference
                .filter(|f| f.mops > 0.0)
                .map(|f| format!("{:.2}x {}", r.mops / f.mops, f.index))
                .unwrap_or_default();
            rows.push([
                r.index.clone(),
                r.workload.clone(),
                r.distribution.clone(),
                r.mode.clone(),
                r.threads.to_string(),
                r.batch.to_string(),
                r.ops.to_string(),
                format!("{:.3}", r.mops),
                format!("{:.1}", r.ns_per_op),
                opt(r.dram_rt_per_op, 2),
                opt(r.p50_ns, 0),
                opt(r.p99_ns, 0),
                opt(r.bytes_per_key, 1),
                opt(r.overhead_bytes_per_key, 1),
                vs,
            ]);
        }
    }
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, cells: &[String]| {
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            // Text columns left-aligned, numbers right-aligned.
            if i < 4 || i == 14 {
                let _ = write!(out, "{cell:<w$}");
            } else {
                let _ = write!(out, "{cell:>w$}");
            }
            out.push_str(if i + 1 < cells.len() { "  " } else { "\n" });
        }
    };
    line(&mut out, &header.map(String::from));
    let mut last_group = None;
    for (row, r) in rows.iter().zip(
        groups
            .iter()
            .flat_map(|(k, g)| g.iter().map(move |r| (k, r))),
    ) {
        if last_group.is_some() && last_group != Some(r.0) {
            out.push('\n');
        }
        last_group = Some(r.0);
        line(&mut out, row);
    }
    out
}

/// Formats the records of `mlpdex-bench filter` as an aligned table: one row per (filter, query
/// kind), grouped by query kind, with the filter's false-positive rate (per cent), size (bits per
/// key) and build throughput (million keys per second, from its `build` record).
pub fn format_filter_table(records: &[Record]) -> String {
    let header = [
        "index",
        "dataset",
        "keys",
        "query",
        "Mops/s",
        "ns/op",
        "FPR %",
        "bits/key",
        "build Mkeys/s",
    ];
    let mut groups: Vec<(&str, Vec<[String; 9]>)> = Vec::new();
    for r in records {
        let Some(query) = r.workload.strip_prefix("filter-") else {
            continue;
        };
        let build = records.iter().find(|b| {
            b.workload == "build"
                && b.index == r.index
                && b.dataset == r.dataset
                && b.keys == r.keys
        });
        let row = [
            r.index.clone(),
            r.dataset.clone(),
            r.keys.to_string(),
            query.to_string(),
            format!("{:.3}", r.mops),
            format!("{:.1}", r.ns_per_op),
            r.fpr.map_or_else(|| "-".into(), |f| percent(f * 100.0)),
            opt(r.bits_per_key, 2),
            opt(build.map(|b| b.mops), 2),
        ];
        match groups.iter_mut().find(|(q, _)| *q == query) {
            Some((_, rows)) => rows.push(row),
            None => groups.push((query, vec![row])),
        }
    }
    let mut widths = header.map(str::len);
    for row in groups.iter().flat_map(|(_, rows)| rows) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, cells: &[String]| {
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            // Text columns left-aligned, numbers right-aligned.
            if matches!(i, 0 | 1 | 3) {
                let _ = write!(out, "{cell:<w$}");
            } else {
                let _ = write!(out, "{cell:>w$}");
            }
            out.push_str(if i + 1 < cells.len() { "  " } else { "\n" });
        }
    };
    line(&mut out, &header.map(String::from));
    for (g, (_, rows)) in groups.iter().enumerate() {
        if g > 0 {
            out.push('\n');
        }
        for row in rows {
            line(&mut out, row);
        }
    }
    out
}

/// A percentage with three significant digits where it matters: `47.5`, `3.44`, `0.132`,
/// `0.0042`; exactly `0` as `0`.
fn percent(p: f64) -> String {
    if p == 0.0 {
        "0".into()
    } else if p >= 10.0 {
        format!("{p:.1}")
    } else if p >= 1.0 {
        format!("{p:.2}")
    } else if p >= 0.01 {
        format!("{p:.3}")
    } else {
        format!("{p:.1e}")
    }
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map(|x| {
        let s = format!("{x:.digits$}");
        // A value that rounds to zero prints as zero, not "-0.0".
        match s.strip_prefix('-') {
            Some(rest) if rest.bytes().all(|b| b == b'0' || b == b'.') => rest.to_string(),
            _ => s,
        }
    })
    .unwrap_or_else(|| "-".into())
}

/// Appends records to a JSON-lines file, one object per line.
pub fn append_json(path: &Path, records: &[Record]) -> Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("opening {} for appending", path.display()))?;
    let mut buf = String::new();
    for r in records {
        buf.push_str(&serde_json::to_string(r)?);
        buf.push('\n');
    }
    f.write_all(buf.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(index: &str, workload: &str, mops: f64) -> Record {
        Record {
            index: index.into(),
            dataset: "rand-8".into(),
            keys: 1000,
            workload: workload.into(),
            distribution: "uniform".into(),
            mode: "independent".into(),
            threads: 1,
            batch: 1,
            ops: 100,
            seconds: 1.0,
            mops,
            ns_per_op: 1000.0 / mops,
            dram_rt_per_op: None,
            bytes_per_key: Some(40.0),
            overhead_bytes_per_key: Some(24.0),
            fpr: None,
            bits_per_key: None,
            compression_rate: None,
            encode_ns_per_byte: None,
            dictionary_bytes: None,
            p50_ns: None,
            p99_ns: None,
            p999_ns: None,
            max_ns: None,
            provenance: None,
        }
    }

    #[test]
    fn table_has_ratios_against_btreemap() {
        let t = format_table(&[
            rec("hashmap", "c", 8.0),
            rec("btreemap", "c", 2.0),
            rec("btreemap", "e", 1.0),
        ]);
        assert!(t.contains("4.00x btreemap"), "{t}");
        assert!(t.contains("1.00x btreemap"), "{t}");
        assert_eq!(
            t.lines().filter(|l| l.trim().is_empty()).count(),
            1,
            "one blank line between groups:\n{t}"
        );
    }

    #[test]
    fn filter_table_rows_per_query_with_build_speed() {
        let mut build = rec("surf-base", "build", 20.0);
        build.bits_per_key = Some(10.2);
        let mut point = rec("surf-base", "filter-point", 5.0);
        point.fpr = Some(0.0344);
        point.bits_per_key = Some(10.2);
        let mut bloom = rec("bloom", "filter-point", 30.0);
        bloom.fpr = Some(0.0);
        let mut range = rec("surf-base", "filter-range", 2.0);
        range.fpr = Some(0.5);
        let t = format_filter_table(&[build, point, bloom, range]);
        let lines: Vec<&str> = t.lines().collect();
        assert!(
            lines[0].contains("FPR %") && lines[0].contains("build Mkeys/s"),
            "{t}"
        );
        assert_eq!(
            lines.len(),
            5,
            "header, 2 point rows, a blank line, 1 range row:\n{t}"
        );
        assert!(
            lines[1].contains("point") && lines[1].contains("3.44"),
            "{t}"
        );
        assert!(
            lines[1].contains("10.20") && lines[1].trim_end().ends_with("20.00"),
            "{t}"
        );
        assert!(
            lines[2].starts_with("bloom") && lines[2].trim_end().ends_with('-'),
            "{t}"
        );
        assert!(lines[3].is_empty() && lines[4].contains("50.0"), "{t}");
    }

    #[test]
    fn percentages_keep_their_digits() {
        assert_eq!(percent(0.0), "0");
        assert_eq!(percent(47.51), "47.5");
        assert_eq!(percent(3.4369), "3.44");
        assert_eq!(percent(0.1322), "0.132");
        assert_eq!(percent(0.0042), "4.2e-3");
    }

    #[test]
    fn negative_zero_prints_as_zero() {
        assert_eq!(opt(Some(-0.00001), 1), "0.0");
        assert_eq!(opt(Some(-0.3), 1), "-0.3");
        assert_eq!(opt(None, 1), "-");
    }

    #[test]
    fn json_lines_append_and_parse_back() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.json");
        append_json(&p, &[rec("btreemap", "c", 2.0)]).unwrap();
        append_json(&p, &[rec("skipmap", "c", 1.0)]).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        let back: Vec<Record> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(back.len(), 2);
        assert_eq!(back[1].index, "skipmap");
    }
}
