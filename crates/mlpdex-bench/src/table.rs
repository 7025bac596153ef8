//! The tables printed on stdout, one per kind of record (indexes: [`format_table`]; filters:
//! [`format_filter_table`]; HOPE encoders: [`format_encoder_table`]; any mix:
//! [`format_records`]), and the JSON-lines output.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

use crate::record::{FilterOp, Record};

/// Lays out `rows` under `header` in aligned columns, two spaces apart; columns in `left` are
/// left-aligned, the others right-aligned (numbers). Rows of one group follow each other; a
/// blank line separates groups.
fn layout(header: &[&str], left: &[usize], groups: &[Vec<Vec<String>>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in groups.iter().flatten() {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, cells: &[String]| {
        for (i, (cell, &w)) in cells.iter().zip(&widths).enumerate() {
            if left.contains(&i) {
                let _ = write!(out, "{cell:<w$}");
            } else {
                let _ = write!(out, "{cell:>w$}");
            }
            if i + 1 < cells.len() {
                out.push_str("  ");
            }
        }
        // Left-aligned last cells leave trailing blanks: trim them.
        let trimmed = out.trim_end_matches(' ').len();
        out.truncate(trimmed);
        out.push('\n');
    };
    line(
        &mut out,
        &header.iter().map(|h| h.to_string()).collect::<Vec<_>>(),
    );
    for (g, rows) in groups.iter().enumerate() {
        if g > 0 {
            out.push('\n');
        }
        for row in rows {
            line(&mut out, row);
        }
    }
    out
}

/// `±3%`: half the range of the rounds over the median, or `-` for one round.
fn spread(r: &Record) -> String {
    r.m().spread.map_or_else(
        || "-".into(),
        |s| format!("±{:.0}%", s.relative(r.m().mops) * 100.0),
    )
}

/// Every kind of record in `records`, each kind's table after the other (indexes, filters,
/// encoders), separated by a blank line.
pub fn format_records(records: &[Record]) -> String {
    let mut parts = Vec::new();
    if records.iter().any(|r| r.as_index().is_some()) {
        parts.push(format_table(records));
    }
    if records.iter().any(|r| r.as_filter().is_some()) {
        parts.push(format_filter_table(records));
    }
    if records.iter().any(|r| r.as_encoder().is_some()) {
        parts.push(format_encoder_table(records));
    }
    parts.join("\n")
}

/// Formats the index records as an aligned table, grouped by (workload, distribution, mode,
/// threads, batch) in first-seen order. `±` is the spread of the rounds around the median
/// one; `vs ref` gives each index's throughput relative to the reference index in the same
/// group: `btreemap` when present, else the group's first index.
pub fn format_table(records: &[Record]) -> String {
    let mut groups: Vec<(String, Vec<&Record>)> = Vec::new();
    for r in records.iter().filter(|r| r.as_index().is_some()) {
        let k = r.key();
        let key = format!(
            "{}|{}|{}|{}|{}",
            k.workload, k.distribution, k.mode, k.threads, k.batch
        );
        match groups.iter_mut().find(|(g, _)| *g == key) {
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
        "±",
        "ns/op",
        "DRAM rt",
        "p50 ns",
        "p99 ns",
        "B/key",
        "ovh B/key",
        "vs ref",
    ];
    let rows: Vec<Vec<Vec<String>>> = groups
        .iter()
        .map(|(_, group)| {
            let reference = group
                .iter()
                .find(|r| r.m().index == "btreemap")
                .or(group.first())
                .copied();
            group
                .iter()
                .map(|rec| {
                    let r = rec.as_index().expect("filtered to index records");
                    let vs = reference
                        .filter(|f| f.m().mops > 0.0)
                        .map(|f| format!("{:.2}x {}", r.m.mops / f.m().mops, f.m().index))
                        .unwrap_or_default();
                    vec![
                        r.m.index.clone(),
                        r.workload.to_string(),
                        r.distribution.to_string(),
                        r.mode.name().to_string(),
                        r.threads.to_string(),
                        r.batch.to_string(),
                        r.m.ops.to_string(),
                        format!("{:.3}", r.m.mops),
                        spread(rec),
                        format!("{:.1}", r.m.ns_per_op),
                        opt(r.dram_rt_per_op, 2),
                        opt(r.m.p50_ns, 0),
                        opt(r.m.p99_ns, 0),
                        opt(r.bytes_per_key, 1),
                        opt(r.overhead_bytes_per_key, 1),
                        vs,
                    ]
                })
                .collect()
        })
        .collect();
    layout(&header, &[0, 1, 2, 3, 15], &rows)
}

/// Formats the filter records: one row per (query kind, filter) with its query speed, spread,
/// false-positive rate and bits per key, and the speed of its build (from its `build` record);
/// one group per query kind, and the builds as a group of their own when no query ran.
pub fn format_filter_table(records: &[Record]) -> String {
    let header = [
        "index",
        "dataset",
        "keys",
        "query",
        "Mops/s",
        "±",
        "ns/op",
        "FPR %",
        "bits/key",
        "build Mkeys/s",
    ];
    let filters: Vec<&Record> = records.iter().filter(|r| r.as_filter().is_some()).collect();
    let queries = filters
        .iter()
        .any(|r| r.as_filter().is_some_and(|f| f.op != FilterOp::Build));
    let mut groups: Vec<(FilterOp, Vec<Vec<String>>)> = Vec::new();
    for rec in &filters {
        let r = rec.as_filter().expect("filtered to filter records");
        if queries && r.op == FilterOp::Build {
            continue;
        }
        let build = filters.iter().filter_map(|b| b.as_filter()).find(|b| {
            b.op == FilterOp::Build
                && b.m.index == r.m.index
                && b.m.dataset == r.m.dataset
                && b.m.keys == r.m.keys
        });
        let query = match r.op {
            FilterOp::Build => "build".to_string(),
            FilterOp::Query(q) => q.to_string(),
        };
        let row = vec![
            r.m.index.clone(),
            r.m.dataset.clone(),
            r.m.keys.to_string(),
            query,
            format!("{:.3}", r.m.mops),
            spread(rec),
            format!("{:.1}", r.m.ns_per_op),
            r.fpr.map_or_else(|| "-".into(), |f| percent(f * 100.0)),
            opt(Some(r.bits_per_key), 2),
            opt(build.map(|b| b.m.mops), 2),
        ];
        match groups.iter_mut().find(|(op, _)| *op == r.op) {
            Some((_, rows)) => rows.push(row),
            None => groups.push((r.op, vec![row])),
        }
    }
    let rows: Vec<Vec<Vec<String>>> = groups.into_iter().map(|(_, rows)| rows).collect();
    layout(&header, &[0, 1, 3], &rows)
}

/// Formats the HOPE encoder records: one row per encoder with its dictionary, compression
/// rate and encoding speed.
pub fn format_encoder_table(records: &[Record]) -> String {
    let header = [
        "encoder", "dataset", "keys", "limit", "entries", "dict KiB", "CPR", "ns/byte", "±",
        "Mkeys/s", "build s",
    ];
    let rows: Vec<Vec<String>> = records
        .iter()
        .filter_map(|rec| Some((rec, rec.as_encoder()?)))
        .map(|(rec, r)| {
            vec![
                r.m.index.clone(),
                r.m.dataset.clone(),
                r.m.keys.to_string(),
                r.limit.map_or_else(|| "-".into(), |l| l.to_string()),
                r.entries.to_string(),
                format!("{:.1}", r.hope.dictionary_bytes as f64 / 1024.0),
                format!("{:.2}", r.hope.compression_rate),
                format!("{:.2}", r.hope.encode_ns_per_byte),
                spread(rec),
                format!("{:.2}", r.m.mops),
                opt(Some(r.build_seconds), 2),
            ]
        })
        .collect();
    layout(&header, &[0, 1], &[rows])
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
    use crate::filter::QueryKind;
    use crate::record::tests::{filter_rec, index_rec as rec};
    use crate::record::{Record, Spread};

    #[test]
    fn table_has_ratios_against_btreemap_and_spreads() {
        let mut hashmap = rec("hashmap", "c", 8.0);
        hashmap.m_mut().spread = Spread::of(&[7.6, 8.0, 8.4]);
        let t = format_table(&[
            hashmap,
            rec("btreemap", "c", 2.0),
            rec("btreemap", "e", 1.0),
        ]);
        assert!(t.contains("4.00x btreemap"), "{t}");
        assert!(t.contains("1.00x btreemap"), "{t}");
        assert!(t.contains("±5%"), "{t}");
        assert_eq!(
            t.lines().filter(|l| l.trim().is_empty()).count(),
            1,
            "one blank line between groups:\n{t}"
        );
    }

    #[test]
    fn filter_table_rows_per_query_with_build_speed() {
        let mut build = filter_rec("surf-base", FilterOp::Build, 10.2, None);
        build.m_mut().mops = 20.0;
        let point = filter_rec(
            "surf-base",
            FilterOp::Query(QueryKind::Point),
            10.2,
            Some(0.0344),
        );
        let bloom = filter_rec(
            "bloom-10",
            FilterOp::Query(QueryKind::Point),
            10.0,
            Some(0.0),
        );
        let range = filter_rec(
            "surf-base",
            FilterOp::Query(QueryKind::Range),
            10.2,
            Some(0.5),
        );
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
    fn a_mixed_file_prints_each_kind_in_its_own_table() {
        let t = format_records(&[
            rec("btreemap", "c", 2.0),
            filter_rec(
                "surf-base",
                FilterOp::Query(QueryKind::Point),
                10.0,
                Some(0.1),
            ),
        ]);
        assert!(t.contains("DRAM rt") && t.contains("FPR %"), "{t}");
        assert!(!format_records(&[rec("fst", "c", 1.0)]).contains("FPR"));
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
            .map(|l| Record::from_json(l).unwrap())
            .collect();
        assert_eq!(back.len(), 2);
        assert_eq!(back[1].m().index, "skipmap");
    }
}
