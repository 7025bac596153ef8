//! The comparison table printed on stdout, and the JSON-lines output.

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
        let key = format!("{}|{}|{}|{}", r.workload, r.distribution, r.mode, r.threads);
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
        "ops",
        "Mops/s",
        "ns/op",
        "DRAM rt",
        "B/key",
        "ovh B/key",
        "vs ref",
    ];
    let mut rows: Vec<[String; 12]> = Vec::new();
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
                r.ops.to_string(),
                format!("{:.3}", r.mops),
                format!("{:.1}", r.ns_per_op),
                opt(r.dram_rt_per_op, 2),
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
            if i < 4 || i == 11 {
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
            ops: 100,
            seconds: 1.0,
            mops,
            ns_per_op: 1000.0 / mops,
            dram_rt_per_op: None,
            bytes_per_key: Some(40.0),
            overhead_bytes_per_key: Some(24.0),
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
