//! SVG charts from a JSON-lines results file.
//!
//! Why: a run of the harness produces hundreds of [`Record`]s; two kinds of chart make them
//! comparable at a glance.
//!
//! 1. **Throughput** (`throughput-<dataset>-<keys>-<distribution>-<mode>-<threads>t.svg`): one
//!    chart per (dataset, keys, distribution, mode, threads, batch), grouped bars with one group
//!    per workload and one bar per index, in million operations per second. Filter builds
//!    (`build-<dataset>-<keys>.svg`) and HOPE encoders (`encode-<dataset>-<keys>.svg`) are
//!    measured in keys per second and get bar charts of their own, never an axis shared with
//!    operations.
//! 2. **Latency versus memory** (`cost-<dataset>-<keys>-<workload>-<distribution>-<mode>-<threads>t.svg`):
//!    one chart per (dataset, keys, workload, distribution, mode, threads) whose records carry
//!    `bytes_per_key`; each index is a labelled point at (bytes per key, ns per operation) on
//!    log-log axes; each index also has its own marker shape, points on one spot are set apart,
//!    and labels take free lines near their points. Dashed *equal-cost curves* `ns_per_op × bytes_per_key = C` pass through or
//!    near the points: the cost function `C = P·S` (latency times space) of
//!    memory-efficient-search-trees.txt §3.7.1, which treats performance and memory as equally
//!    important, so points on one curve are "indifferent" and lower curves are better. On log-log
//!    axes every such curve is a straight line of slope −1.
//! 3. **False-positive rate versus size** (`fpr-<dataset>-<keys>-<point|range|mixed>.svg`), only
//!    when the file holds records of `mlpdex-bench filter`: the shape of
//!    memory-efficient-search-trees.txt Figure 4.4, one chart per (dataset, keys stored, query
//!    kind). The x axis is the filter's bits per key, the y axis its false-positive rate in per
//!    cent on a log scale (rates span orders of magnitude; a rate of 0 sits on the bottom edge,
//!    labelled `0%`); each filter family, with a marker shape of its own, is one line through its configurations in order of size
//!    (SuRF-Hash, SuRF-Real and SuRF-Mixed over their suffix bits, Bloom over its bits per key),
//!    each point labelled with its suffix bits (`4+4`: hashed + real) or Bloom bits, and
//!    SuRF-Base is a single point. Families have fixed colours, the same on every such chart.
//!    (A filter run's `build` and query records also appear in charts 1 and 2: Figures 4.5 and
//!    4.6 in another form.)
//! 4. **Merge time against size** (`merge-<dataset>-<keys>.svg`), only when index records carry
//!    `merges` (the hybrid indexes, see [`crate::adapter::Merge`]): one chart per (dataset,
//!    keys), each merge a point at (entries written to the new static stage, seconds) on linear
//!    axes, one series per index with every merge of all its records (load and runs), and
//!    through each series its least-squares line (`fit_line`, affine), whose slope in ns per
//!    entry and R² the legend gives. Points on their line mean a merge costs time linear in the
//!    index's size, so the ratio trigger's amortised cost per write is constant; the slope is
//!    that cost per key rewritten (memory-efficient-search-trees.txt §5.2).
//! 5. **Load time against keys** (`load-<dataset>-<keys>.svg`), only when load records carry a
//!    latency series (`--latency-series N`): one chart per (dataset, keys), each index a line
//!    of the time its load had taken (seconds, accumulated window by window) against the keys
//!    inserted, the shape of vm-shortcuts-extendible-hashing.txt Figure 7(a): a table that
//!    rehashes whole climbs a staircase, one that splits buckets a line; the legend gives each
//!    load's slowest insert and 99.9th percentile when they were measured.
//! 6. **DRAM round trips against shared prefix**
//!    (`prefix-<keys>-<workload>-<distribution>-<mode>-<threads>t.svg`, `-b<batch>` appended
//!    for batches), only when index records of at least two datasets carry both
//!    `mean_shared_prefix` and `dram_rt_per_op` for one (keys, workload, distribution, mode,
//!    threads, batch): the plot issue 23 asks for. x is the dataset's mean prefix shared with
//!    its sorted neighbour (bytes), y the DRAM round trips per operation, both linear from 0;
//!    each index is a line with markers (its colour and a shape of its own) through its
//!    datasets in order of x, and each dataset is named once, over a faint vertical line at its
//!    x, not at every point (the indexes share it); the x axis runs on past the data to leave
//!    the legend a corner of its own. A line that climbs belongs to an index whose operations
//!    pay for the bytes keys share; a flat one to an index that skips them.
//!
//! How: records are read and de-duplicated (the last record for an (index, dataset, keys,
//! workload, distribution, mode, threads) wins, so a re-run measurement replaces the old one),
//! grouped, and drawn with plotters' SVG backend. Each index gets a colour from its rank among
//! all index names of the file, so an index has the same colour on every chart of a report.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, anyhow};
use plotters::coord::CoordTranslate;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::adapter::Merge;
use crate::filter::QueryKind;
use crate::markdown::thousands;
use crate::record::{FilterOp, Record, RecordKey};

/// Reads a JSON-lines results file: one [`Record`] object per line, blank lines skipped.
///
/// A line that is not a record is an error naming its (1-based) line number.
pub fn read_records(path: &Path) -> anyhow::Result<Vec<Record>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading results file {}", path.display()))?;
    let mut records = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let r = Record::from_json(line).map_err(|e| {
            anyhow!(
                "{}: line {}: not a result record: {e}",
                path.display(),
                i + 1
            )
        })?;
        records.push(r);
    }
    Ok(records)
}

/// Writes the throughput, cost, (for filter records) false-positive-rate, (for records with
/// merges) merge, (for loads with a latency series) load and (for records of several datasets
/// with their shared prefix) prefix charts for the results in `json` into `out_dir` (created if
/// missing) and returns the paths of the SVG files written, in that order of charts, each kind
/// in order of their group keys.
pub fn write_report(json: &Path, out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let records = dedup_last(read_records(json)?);
    std::fs::create_dir_all(out_dir)
        .with_context(|| format!("creating report directory {}", out_dir.display()))?;
    let colours = Colours::new(&records);
    let mut names = FileNames::default();
    let mut written = Vec::new();

    // Chart 1: throughput, grouped by everything but workload and index. Filter builds and
    // encoders are measured in keys per second, not operations: they get charts of their own.
    let mut groups: BTreeMap<ThroughputGroup, Vec<&Record>> = BTreeMap::new();
    for r in &records {
        let k = r.key();
        let chart = match r {
            Record::Filter(f) if f.op == FilterOp::Build => BarChart::Build,
            Record::Encoder(_) => BarChart::Encode,
            _ => BarChart::Throughput,
        };
        groups
            .entry((
                chart,
                k.dataset,
                k.keys,
                k.distribution,
                k.mode,
                k.threads,
                k.batch,
            ))
            .or_default()
            .push(r);
    }
    for ((chart, dataset, keys, distribution, mode, threads, batch), rs) in &groups {
        let batched = if *batch > 1 {
            format!(", batches of {batch}")
        } else {
            String::new()
        };
        let (name, title, y_desc) = match chart {
            BarChart::Throughput => (
                format!(
                    "throughput-{}-{keys}-{}-{}-{threads}t{}",
                    sanitise(dataset),
                    sanitise(distribution),
                    sanitise(mode),
                    if *batch > 1 {
                        format!("-b{batch}")
                    } else {
                        String::new()
                    }
                ),
                format!(
                    "Throughput: {dataset}, {} keys, {distribution}, {mode}, {threads} thread{}{batched}",
                    thousands(*keys),
                    plural(*threads)
                ),
                "throughput (Mops/s)",
            ),
            BarChart::Build => (
                format!("build-{}-{keys}", sanitise(dataset)),
                format!("Build speed: {dataset}, {} keys stored", thousands(*keys)),
                "build speed (million keys/s)",
            ),
            BarChart::Encode => (
                format!("encode-{}-{keys}", sanitise(dataset)),
                format!("HOPE encoding speed: {dataset}, {} keys", thousands(*keys)),
                "encoding speed (million keys/s)",
            ),
        };
        let name = names.claim(&name);
        let svg = throughput_chart(&title, y_desc, rs, &colours)?;
        written.push(write_svg(out_dir, &name, &svg)?);
    }

    // Chart 2: latency versus memory, one chart per workload as well, only records with memory.
    let mut groups: BTreeMap<CostGroup, Vec<&Record>> = BTreeMap::new();
    for r in records.iter().filter(|r| usable_point(r).is_some()) {
        let k = r.key();
        groups
            .entry((
                k.dataset,
                k.keys,
                k.workload,
                k.distribution,
                k.mode,
                k.threads,
            ))
            .or_default()
            .push(r);
    }
    for ((dataset, keys, workload, distribution, mode, threads), rs) in &groups {
        let name = names.claim(&format!(
            "cost-{}-{keys}-{}-{}-{}-{threads}t",
            sanitise(dataset),
            sanitise(workload),
            sanitise(distribution),
            sanitise(mode)
        ));
        let title = format!(
            "Latency vs memory: {dataset}, {} keys, workload {workload}, {distribution}, \
             {mode}, {threads} thread{}",
            thousands(*keys),
            plural(*threads)
        );
        let svg = cost_chart(&title, rs, &colours)?;
        written.push(write_svg(out_dir, &name, &svg)?);
    }

    // Chart 3: false-positive rate versus bits per key, per dataset and query kind.
    let mut groups: BTreeMap<FprGroup, Vec<&Record>> = BTreeMap::new();
    for r in &records {
        let Some(f) = r.as_filter() else { continue };
        let FilterOp::Query(kind) = f.op else {
            continue;
        };
        if fpr_point(r).is_some() {
            groups
                .entry((&f.m.dataset, f.m.keys, kind))
                .or_default()
                .push(r);
        }
    }
    for ((dataset, keys, kind), rs) in &groups {
        let name = names.claim(&format!("fpr-{}-{keys}-{kind}", sanitise(dataset)));
        let title = format!(
            "False positive rate: {dataset}, {} keys stored, {kind} queries",
            thousands(*keys)
        );
        let svg = fpr_chart(&title, rs)?;
        written.push(write_svg(out_dir, &name, &svg)?);
    }

    // Chart 4: merge time against size, per dataset and keys.
    for ((dataset, keys), series) in &merge_groups(&records) {
        let name = names.claim(&format!("merge-{}-{keys}", sanitise(dataset)));
        let title = format!(
            "Merge time against size: {dataset}, {} keys",
            thousands(*keys)
        );
        let svg = merge_chart(&title, series, &colours)?;
        written.push(write_svg(out_dir, &name, &svg)?);
    }
    // Chart 5: load time against keys inserted, per dataset and keys.
    for ((dataset, keys), loads) in &load_groups(&records) {
        let name = names.claim(&format!("load-{}-{keys}", sanitise(dataset)));
        let title = format!(
            "Load time against keys inserted: {dataset}, {} keys",
            thousands(*keys)
        );
        let svg = load_chart(&title, loads, &colours)?;
        written.push(write_svg(out_dir, &name, &svg)?);
    }
    // Chart 6: DRAM round trips against the datasets' shared prefix, per everything but the
    // dataset.
    for ((keys, workload, distribution, mode, threads, batch), rs) in &prefix_groups(&records) {
        let name = names.claim(&format!(
            "prefix-{keys}-{}-{}-{}-{threads}t{}",
            sanitise(workload),
            sanitise(distribution),
            sanitise(mode),
            if *batch > 1 {
                format!("-b{batch}")
            } else {
                String::new()
            }
        ));
        let title = format!(
            "DRAM round trips against shared prefix: {} keys, workload {workload}, \
             {distribution}, {mode}, {threads} thread{}{}",
            thousands(*keys),
            plural(*threads),
            if *batch > 1 {
                format!(", batches of {batch}")
            } else {
                String::new()
            }
        );
        let svg = prefix_chart(&title, rs, &colours)?;
        written.push(write_svg(out_dir, &name, &svg)?);
    }
    Ok(written)
}

/// A prefix chart's records share (keys, workload, distribution, mode, threads, batch).
type PrefixGroup = (u64, String, String, &'static str, u32, u32);

/// `(mean_shared_prefix, dram_rt_per_op)` of an index record when both are known and finite.
fn prefix_point(r: &Record) -> Option<(f64, f64)> {
    let r = r.as_index()?;
    let (x, y) = (r.mean_shared_prefix?, r.dram_rt_per_op?);
    (x.is_finite() && x >= 0.0 && y.is_finite() && y >= 0.0).then_some((x, y))
}

/// The records with a [`prefix_point`] per (keys, workload, distribution, mode, threads,
/// batch), in file order; groups of fewer than two datasets are left out (one x is no line).
fn prefix_groups(records: &[Record]) -> BTreeMap<PrefixGroup, Vec<&Record>> {
    let mut groups: BTreeMap<PrefixGroup, Vec<&Record>> = BTreeMap::new();
    for r in records.iter().filter(|r| prefix_point(r).is_some()) {
        let k = r.key();
        groups
            .entry((
                k.keys,
                k.workload,
                k.distribution,
                k.mode,
                k.threads,
                k.batch,
            ))
            .or_default()
            .push(r);
    }
    groups.retain(|_, rs| {
        let datasets: HashSet<&str> = rs.iter().map(|r| r.m().dataset.as_str()).collect();
        datasets.len() >= 2
    });
    groups
}

/// Rows for labels `(left, width)` in pixels, given in order of `left`: each takes the first
/// row whose last label ends at least `gap` pixels before it starts.
fn label_rows(labels: &[(f64, f64)], gap: f64) -> Vec<usize> {
    let mut ends: Vec<f64> = Vec::new();
    labels
        .iter()
        .map(|&(left, width)| {
            let row = ends
                .iter()
                .position(|&end| end + gap <= left)
                .unwrap_or(ends.len());
            if row == ends.len() {
                ends.push(0.0);
            }
            ends[row] = left + width;
            row
        })
        .collect()
}

/// DRAM round trips per operation against the datasets' mean shared prefix, linear axes: one
/// line with markers per index, each dataset named once over a faint line at its x, and the
/// legend right of all of them.
fn prefix_chart(title: &str, rs: &[&Record], colours: &Colours) -> anyhow::Result<String> {
    // Every record of a dataset has its x (one key count, one load set); the first one names it.
    let mut datasets: Vec<(String, f64)> = Vec::new();
    for r in rs {
        let Some((x, _)) = prefix_point(r) else {
            continue;
        };
        if !datasets.iter().any(|d| d.0 == r.m().dataset) {
            datasets.push((r.m().dataset.clone(), x));
        }
    }
    datasets.sort_by(|a, b| a.1.total_cmp(&b.1));
    // Per index, one point per dataset: the last record, as a re-run replaces the earlier one.
    let series: Vec<(&str, Vec<(f64, f64)>)> = colours
        .indexes_of(rs)
        .into_iter()
        .map(|index| {
            let mut by_dataset: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
            for r in rs.iter().filter(|r| r.m().index == index) {
                if let Some(p) = prefix_point(r) {
                    by_dataset.insert(&r.m().dataset, p);
                }
            }
            let mut points: Vec<(f64, f64)> = by_dataset.into_values().collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            (index, points)
        })
        .collect();

    let all = || series.iter().flat_map(|s| &s.1);
    let x_hi = all().map(|p| p.0).fold(0.0, f64::max);
    let y_hi = all().map(|p| p.1).fold(0.0, f64::max);
    // The legend takes the upper right of the plot, right of every point and dataset line
    // (which may cross any other corner): the x axis runs on past the data by the legend's
    // width and a gap. The plot's size is estimated from the margins below: 16 px each side,
    // 70 px of y labels, 50 px of x labels, the caption.
    let (width, height) = (1000u32, 640u32);
    let plot_w = f64::from(width) - 2.0 * 16.0 - 70.0;
    let widest = series
        .iter()
        .map(|s| text_px(s.0, 14.0))
        .fold(0.0, f64::max);
    let legend_w = (widest + 60.0) * 1.15 + 16.0;
    let data_w = plot_w - legend_w.min(plot_w / 2.0);
    let x1 = if x_hi > 0.0 {
        x_hi * plot_w / data_w
    } else {
        1.0
    };
    // Dataset names stack in rows at the top of the plot where close x values would make them
    // overlap, and the y range leaves them that band. A name sits right of its line, or left
    // of it where it would reach the legend.
    let label = |(name, x): &(String, f64)| format!("{name} ({} B)", compact(*x));
    let widths: Vec<f64> = datasets
        .iter()
        .map(|d| text_px(&label(d), 13.0) * 1.15)
        .collect();
    let flipped: Vec<bool> = datasets
        .iter()
        .zip(&widths)
        .map(|(d, w)| d.1 / x1 * plot_w + 4.0 + w > data_w)
        .collect();
    let mut estimated: Vec<(f64, f64)> = datasets
        .iter()
        .zip(&widths)
        .zip(&flipped)
        .map(|((d, &w), &flip)| {
            let x = d.1 / x1 * plot_w;
            (if flip { x - 4.0 - w } else { x + 4.0 }, w)
        })
        .collect();
    // A flipped name can start left of names before it: rows go by where names start.
    let mut order: Vec<usize> = (0..datasets.len()).collect();
    order.sort_by(|&a, &b| estimated[a].0.total_cmp(&estimated[b].0));
    estimated = order.iter().map(|&i| estimated[i]).collect();
    let mut rows = vec![0; datasets.len()];
    for (&i, row) in order.iter().zip(label_rows(&estimated, 8.0)) {
        rows[i] = row;
    }
    let band = 15.0 * (rows.iter().max().map_or(0, |r| r + 1) as f64) + 10.0;
    let plot_h = f64::from(height) - 2.0 * 16.0 - 50.0 - 40.0;
    let y1 = if y_hi > 0.0 {
        y_hi * 1.08 / (1.0 - (band / plot_h).min(0.5))
    } else {
        1.0
    };

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, TITLE_FONT)
            .margin(16)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..x1, 0.0..y1)
            .map_err(plot_err)?;
        let fmt = |v: &f64| compact(*v);
        chart
            .configure_mesh()
            .x_desc("mean prefix shared with the sorted neighbour (bytes)")
            .y_desc("DRAM round trips per operation")
            .x_label_formatter(&fmt)
            .y_label_formatter(&fmt)
            .axis_desc_style(DESC_FONT)
            .label_style(LABEL_FONT)
            .light_line_style(BLACK.mix(0.05))
            .bold_line_style(BLACK.mix(0.15))
            .draw()
            .map_err(plot_err)?;

        // The datasets first, so lines and markers are drawn over their guides.
        let guide = BLACK.mix(0.25).stroke_width(1);
        let grey = BLACK.mix(0.75);
        let style = TextStyle::from(("sans-serif", 13).into_font()).color(&grey);
        for (i, d) in datasets.iter().enumerate() {
            chart
                .draw_series(DashedLineSeries::new([(d.1, 0.0), (d.1, y1)], 4, 4, guide))
                .map_err(plot_err)?;
            let (dx, hpos) = if flipped[i] {
                (-4, HPos::Right)
            } else {
                (4, HPos::Left)
            };
            let dy = 4 + 15 * rows[i] as i32;
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at((d.1, y1))
                        + Text::new(label(d), (dx, dy), style.pos(Pos::new(hpos, VPos::Top))),
                ))
                .map_err(plot_err)?;
        }

        // Markers of different indexes on one spot are set apart.
        let pixels: Vec<(i32, i32)> = all().map(|p| chart.backend_coord(p)).collect();
        let mut shifts = dodge(&pixels, 6).into_iter();
        for (index, points) in &series {
            // Shape and colour by the index's rank: the same on every prefix chart.
            let (colour, shape) = (colours.of(index), colours.rank(index) % SHAPES);
            if points.len() > 1 {
                chart
                    .draw_series(LineSeries::new(
                        points.iter().copied(),
                        colour.stroke_width(2),
                    ))
                    .map_err(plot_err)?;
            }
            for (k, &p) in points.iter().enumerate() {
                let dx = shifts.next().unwrap_or(0);
                let legend = (k == 0).then_some(*index);
                draw_marker(&mut chart, shape, p, dx, 5, colour, legend, true)?;
            }
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// One load's line: index, accumulated `(keys, seconds)` points, slowest insert and p99.9.
pub(crate) type LoadLine = (String, Vec<(f64, f64)>, Option<f64>, Option<f64>);

/// The loads with a latency series, per (dataset, keys), in order of appearance.
pub(crate) fn load_groups(records: &[Record]) -> BTreeMap<(String, u64), Vec<LoadLine>> {
    let mut groups: BTreeMap<(String, u64), Vec<LoadLine>> = BTreeMap::new();
    for r in records {
        let Record::Index(ir) = r else { continue };
        if ir.workload != crate::workload::Workload::Load {
            continue;
        }
        let Some(series) = &ir.m.series else { continue };
        let mut at = (0.0, 0.0);
        let mut points = vec![at];
        for &ns in &series.ns {
            at = (
                at.0 + series.window as f64,
                at.1 + ns * series.window as f64 / 1e9,
            );
            points.push(at);
        }
        groups
            .entry((ir.m.dataset.clone(), ir.m.keys))
            .or_default()
            .push((ir.m.index.clone(), points, ir.m.max_ns, ir.m.p999_ns));
    }
    groups
}

fn load_chart(title: &str, loads: &[LoadLine], colours: &Colours) -> anyhow::Result<String> {
    let x_hi = loads
        .iter()
        .flat_map(|l| l.1.last())
        .map(|p| p.0)
        .fold(0.0, f64::max);
    let y_hi = loads
        .iter()
        .flat_map(|l| l.1.last())
        .map(|p| p.1)
        .fold(0.0, f64::max);
    let (x1, y1) = (x_hi.max(1.0) * 1.02, y_hi.max(1e-6) * 1.1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, 640)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, TITLE_FONT)
            .margin(16)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..x1, 0.0..y1)
            .map_err(plot_err)?;
        let fmt = |v: &f64| compact(*v);
        chart
            .configure_mesh()
            .x_desc("keys inserted")
            .y_desc("time (s)")
            .x_label_formatter(&fmt)
            .y_label_formatter(&fmt)
            .axis_desc_style(DESC_FONT)
            .label_style(LABEL_FONT)
            .light_line_style(BLACK.mix(0.05))
            .bold_line_style(BLACK.mix(0.15))
            .draw()
            .map_err(plot_err)?;
        let mut widest = 0.0f64;
        let mut obstacles: Vec<[f64; 4]> = Vec::new();
        for (index, points, max, p999) in loads {
            let colour = colours.of(index);
            let legend = match (max, p999) {
                (Some(m), Some(p)) => format!(
                    "{index}: slowest insert {}, p99.9 {}",
                    duration(*m),
                    duration(*p)
                ),
                _ => index.clone(),
            };
            widest = widest.max(text_px(&legend, 14.0));
            for p in points.iter().step_by(points.len().div_ceil(200).max(1)) {
                let (px, py) = chart.backend_coord(p);
                let (px, py) = (f64::from(px), f64::from(py));
                obstacles.push([px - 2.0, px + 2.0, py - 2.0, py + 2.0]);
            }
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    colour.stroke_width(2),
                ))
                .map_err(plot_err)?
                .label(legend)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
                });
        }
        let (xr, yr) = chart.plotting_area().get_pixel_range();
        let legend = (widest + 60.0, 18.0 * loads.len() as f64 + 20.0);
        draw_legend(&mut chart, legend_corner(xr, yr, legend, &obstacles))?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// A duration in ns as text in the unit that reads best (`850 ns`, `12.5 µs`, `1.2 s`).
fn duration(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.1} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// The merges of one index: its name and every merge of its records, in file order.
pub(crate) type MergeSeries = (String, Vec<Merge>);

/// The merges recorded in `records`, per (dataset, keys), then per index in order of first
/// appearance (the order of a suite's index list); groups without merges are left out.
pub(crate) fn merge_groups(records: &[Record]) -> BTreeMap<(String, u64), Vec<MergeSeries>> {
    let mut groups: BTreeMap<(String, u64), Vec<MergeSeries>> = BTreeMap::new();
    for r in records.iter().filter_map(Record::as_index) {
        if r.merges.is_empty() {
            continue;
        }
        let series = groups.entry((r.m.dataset.clone(), r.m.keys)).or_default();
        match series.iter_mut().find(|(index, _)| *index == r.m.index) {
            Some((_, merges)) => merges.extend_from_slice(&r.merges),
            None => series.push((r.m.index.clone(), r.merges.clone())),
        }
    }
    groups
}

/// A least-squares line `y = intercept + slope · x` and how well it fits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Fit {
    /// Change of y per unit of x.
    pub slope: f64,
    /// y at x = 0.
    pub intercept: f64,
    /// Coefficient of determination, `1 − SS_res / SS_tot`: 1 when every point is on the line,
    /// 0 when the line explains no more than y's mean does (1 when all y are equal and fitted).
    pub r2: f64,
}

/// The affine least-squares line through `points` (x, y); `None` for fewer than two points,
/// points that are not all finite, or points that all share one x.
pub(crate) fn fit_line(points: &[(f64, f64)]) -> Option<Fit> {
    if points.len() < 2 || points.iter().any(|p| !p.0.is_finite() || !p.1.is_finite()) {
        return None;
    }
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    // Sums of centred products: exact for exact lines far from the origin too.
    let (mut sxx, mut sxy, mut syy) = (0.0, 0.0, 0.0);
    for &(x, y) in points {
        let (dx, dy) = (x - mx, y - my);
        sxx += dx * dx;
        sxy += dx * dy;
        syy += dy * dy;
    }
    if sxx <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let ss_res: f64 = points
        .iter()
        .map(|&(x, y)| (y - intercept - slope * x).powi(2))
        .sum();
    let r2 = if syy > 0.0 { 1.0 - ss_res / syy } else { 1.0 };
    Some(Fit {
        slope,
        intercept,
        r2,
    })
}

/// The part of line `f` inside `[0, x1] × [0, y1]`, as its two ends (plotters does not clip
/// what leaves the plotting area); `None` when the line misses the box.
fn clip_line(f: Fit, x1: f64, y1: f64) -> Option<[(f64, f64); 2]> {
    let (mut lo, mut hi) = (0.0, x1);
    if f.slope == 0.0 {
        if !(0.0..=y1).contains(&f.intercept) {
            return None;
        }
    } else {
        // Where the line crosses y = 0 and y = y1, in order of x.
        let (a, b) = (-f.intercept / f.slope, (y1 - f.intercept) / f.slope);
        lo = f64::max(lo, a.min(b));
        hi = f64::min(hi, a.max(b));
    }
    let y = |x: f64| (f.intercept + f.slope * x).clamp(0.0, y1);
    (lo < hi).then(|| [(lo, y(lo)), (hi, y(hi))])
}

/// Merge seconds against static-stage entries on linear axes: per index its points and its
/// least-squares line, labelled with the line's slope (ns per entry) and R².
fn merge_chart(title: &str, series: &[MergeSeries], colours: &Colours) -> anyhow::Result<String> {
    let all = || series.iter().flat_map(|(_, m)| m);
    let x_hi = all().map(|m| m.entries as f64).fold(0.0, f64::max);
    let y_hi = all()
        .map(|m| m.secs)
        .filter(|s| s.is_finite())
        .fold(0.0, f64::max);
    let (x1, y1) = (
        if x_hi > 0.0 { x_hi * 1.05 } else { 1.0 },
        if y_hi > 0.0 { y_hi * 1.1 } else { 1.0 },
    );
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, 640)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, TITLE_FONT)
            .margin(16)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..x1, 0.0..y1)
            .map_err(plot_err)?;
        let fmt = |v: &f64| compact(*v);
        chart
            .configure_mesh()
            .x_desc("entries in the new static stage")
            .y_desc("merge time (s)")
            .x_label_formatter(&fmt)
            .y_label_formatter(&fmt)
            .axis_desc_style(DESC_FONT)
            .label_style(LABEL_FONT)
            .light_line_style(BLACK.mix(0.05))
            .bold_line_style(BLACK.mix(0.15))
            .draw()
            .map_err(plot_err)?;

        let mut obstacles: Vec<[f64; 4]> = Vec::new();
        let mut widest = 0.0f64;
        for (shape, (index, merges)) in series.iter().enumerate() {
            let colour = colours.of(index);
            let points: Vec<(f64, f64)> = merges
                .iter()
                .map(|m| (m.entries as f64, m.secs))
                .filter(|p| p.1.is_finite())
                .collect();
            let fit = fit_line(&points);
            let legend = match fit {
                Some(f) => format!(
                    "{index}: {:.1} ns/entry, R² {:.3} ({} merges)",
                    f.slope * 1e9,
                    f.r2,
                    points.len()
                ),
                None => format!("{index} ({} merges, no fit)", points.len()),
            };
            widest = widest.max(text_px(&legend, 14.0));
            if let Some(segment) = fit.and_then(|f| clip_line(f, x1, y1)) {
                // The legend avoids the line as it avoids the points.
                let [(xa, ya), (xb, yb)] = segment;
                for t in 0..=20 {
                    let t = f64::from(t) / 20.0;
                    let (px, py) = chart.backend_coord(&(xa + (xb - xa) * t, ya + (yb - ya) * t));
                    let (px, py) = (f64::from(px), f64::from(py));
                    obstacles.push([px - 2.0, px + 2.0, py - 2.0, py + 2.0]);
                }
                chart
                    .draw_series(LineSeries::new(segment, colour.mix(0.8).stroke_width(2)))
                    .map_err(plot_err)?;
            }
            for (k, &p) in points.iter().enumerate() {
                let (px, py) = chart.backend_coord(&p);
                let (px, py) = (f64::from(px), f64::from(py));
                obstacles.push([px - 5.0, px + 5.0, py - 5.0, py + 5.0]);
                let legend = (k == 0).then_some(legend.as_str());
                draw_marker(&mut chart, shape, p, 0, 4, colour, legend, true)?;
            }
        }
        let (xr, yr) = chart.plotting_area().get_pixel_range();
        let legend = (widest + 60.0, 18.0 * series.len() as f64 + 20.0);
        draw_legend(&mut chart, legend_corner(xr, yr, legend, &obstacles))?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// An FPR chart's records share (dataset, keys, query kind); charts of one dataset come in the
/// order point, range, mixed.
type FprGroup<'a> = (&'a str, u64, QueryKind);

/// `(bits_per_key, fpr in per cent)` of a filter record when both are known and finite.
fn fpr_point(r: &Record) -> Option<(f64, f64)> {
    let f = r.as_filter()?;
    let (b, f) = (f.bits_per_key, f.fpr?);
    (b.is_finite() && f.is_finite()).then_some((b, f * 100.0))
}

/// The filter families of an FPR chart in drawing order, with their fixed colours; names that
/// are no known filter form families of their own after these.
const FAMILIES: [(&str, RGBColor); 5] = [
    ("SuRF-Base", RGBColor(0x22, 0x22, 0x22)),
    ("SuRF-Hash", PALETTE[0]),
    ("SuRF-Real", PALETTE[2]),
    ("SuRF-Mixed", PALETTE[3]),
    ("Bloom", PALETTE[1]),
];

/// One line of an FPR chart: the family, its colour, and its points (bits per key, FPR in per
/// cent, label), in order of size.
type FprSeries = (String, RGBColor, Vec<(f64, f64, String)>);

/// FPR (per cent, linear) against bits per key: one line per filter family, as Figure 4.4.
fn fpr_chart(title: &str, rs: &[&Record]) -> anyhow::Result<String> {
    let mut series: Vec<FprSeries> = FAMILIES
        .iter()
        .map(|&(f, c)| (f.to_owned(), c, Vec::new()))
        .collect();
    for r in rs {
        let Some((bits, fpr)) = fpr_point(r) else {
            continue;
        };
        let Some(f) = r.as_filter() else { continue };
        let mut family = f.filter.family().to_owned();
        if f.batched {
            family.push_str(" (batched)");
        }
        if let Some(s) = f.scheme {
            family = format!("{family} + {}", s.name());
        }
        let label = f.filter.label();
        match series.iter_mut().find(|s| s.0 == family) {
            Some(s) => s.2.push((bits, fpr, label)),
            None => {
                let colour = PALETTE[4 + (series.len() - FAMILIES.len()) % (PALETTE.len() - 4)];
                series.push((family, colour, vec![(bits, fpr, label)]));
            }
        }
    }
    series.retain(|s| !s.2.is_empty());
    for s in &mut series {
        s.2.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let all = || series.iter().flat_map(|s| &s.2);
    let x_lo = all().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let x_hi = all().map(|p| p.0).fold(0.0, f64::max);
    let (x0, x1) = ((x_lo - 1.0).floor().max(0.0), (x_hi + 1.0).ceil());
    // A log axis: the rates span orders of magnitude (Bloom filters near 0.01%, SuRF-Base near
    // 4%), and on a linear axis the small ones all sit on zero. A rate of exactly 0 has no
    // place on it: such points sit on the bottom edge, labelled "0%".
    let y_hi = all().map(|p| p.1).fold(0.0, f64::max);
    let y_lo = all()
        .map(|p| p.1)
        .filter(|&y| y > 0.0)
        .fold(f64::INFINITY, f64::min);
    let (y0, y1) = if y_lo.is_finite() {
        (y_lo / 3.0, y_hi * 3.0)
    } else {
        (1e-3, 1.0)
    };
    let floor = y0 * 1.05;
    for s in &mut series {
        for p in &mut s.2 {
            if p.1 <= 0.0 {
                p.1 = floor;
                p.2 = if p.2.is_empty() {
                    "0%".into()
                } else {
                    format!("{} (0%)", p.2)
                };
            }
        }
    }
    let (y_bold, y_light) = log_ticks(y0, y1);

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, 640)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, TITLE_FONT)
            .margin(16)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(
                x0..x1,
                (y0..y1)
                    .log_scale()
                    .with_key_points(y_bold)
                    .with_light_points(y_light),
            )
            .map_err(plot_err)?;
        let fmt = |v: &f64| compact(*v);
        chart
            .configure_mesh()
            .x_desc("bits per key")
            .y_desc("false positive rate (%, log scale)")
            .x_label_formatter(&fmt)
            .y_label_formatter(&fmt)
            .axis_desc_style(DESC_FONT)
            .label_style(LABEL_FONT)
            .light_line_style(BLACK.mix(0.05))
            .bold_line_style(BLACK.mix(0.15))
            .draw()
            .map_err(plot_err)?;

        // Pixel boxes of the points and their labels: a label moves up past earlier labels
        // (families often share a size), and the legend avoids them all.
        let mut obstacles: Vec<[f64; 4]> = Vec::new();
        let mut label_boxes: Vec<[f64; 4]> = Vec::new();
        let mut widest = 0.0f64;
        // Markers of different families on one spot are set apart.
        let pixels: Vec<(i32, i32)> = series
            .iter()
            .flat_map(|s| &s.2)
            .map(|p| chart.backend_coord(&(p.0, p.1)))
            .collect();
        let shifts = dodge(&pixels, 6);
        let mut shift = shifts.iter().copied();
        for (shape, (family, colour, points)) in series.iter().enumerate() {
            let colour = *colour;
            widest = widest.max(text_px(family, 14.0));
            if points.len() > 1 {
                chart
                    .draw_series(LineSeries::new(
                        points.iter().map(|p| (p.0, p.1)),
                        colour.stroke_width(2),
                    ))
                    .map_err(plot_err)?;
            }
            for (k, &(b, f, _)) in points.iter().enumerate() {
                let dx = shift.next().unwrap_or(0);
                let legend = (k == 0).then_some(family.as_str());
                draw_marker(&mut chart, shape, (b, f), dx, 5, colour, legend, true)?;
            }
            let style = TextStyle::from(("sans-serif", 12).into_font())
                .color(&colour)
                .pos(Pos::new(HPos::Left, VPos::Bottom));
            for (b, f, label) in points {
                let (px, py) = chart.backend_coord(&(*b, *f));
                let (px, py) = (f64::from(px), f64::from(py));
                obstacles.push([px - 6.0, px + 6.0, py - 6.0, py + 6.0]);
                if label.is_empty() {
                    continue;
                }
                let w = text_px(label, 12.0);
                let at = |dy: i32| {
                    let bottom = py + f64::from(dy);
                    [px + 6.0, px + 6.0 + w, bottom - 12.0, bottom]
                };
                let dy = (0..6)
                    .map(|i| -4 - 13 * i)
                    .find(|&dy| {
                        let a = at(dy);
                        !label_boxes
                            .iter()
                            .any(|o| a[0] < o[1] && o[0] < a[1] && a[2] < o[3] && o[2] < a[3])
                    })
                    .unwrap_or(-4);
                label_boxes.push(at(dy));
                chart
                    .draw_series(std::iter::once(
                        EmptyElement::at((*b, *f))
                            + Text::new(label.clone(), (6, dy), style.clone()),
                    ))
                    .map_err(plot_err)?;
            }
        }
        obstacles.extend(label_boxes);
        let (xr, yr) = chart.plotting_area().get_pixel_range();
        let legend = (widest + 60.0, 18.0 * series.len() as f64 + 20.0);
        draw_legend(&mut chart, legend_corner(xr, yr, legend, &obstacles))?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// Which bar chart a record goes on: operations per second, or keys per second of a build or
/// an encoding pass (never on one axis with operations).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum BarChart {
    Throughput,
    Build,
    Encode,
}

/// A bar chart's records share (chart, dataset, keys, distribution, mode, threads, batch).
type ThroughputGroup = (BarChart, String, u64, String, &'static str, u32, u32);
/// A cost chart's records share (dataset, keys, workload, distribution, mode, threads).
type CostGroup = (String, u64, String, String, &'static str, u32);

/// Keeps the last record of each identity, at the position where the identity first appeared
/// (so workloads keep the order in which the harness ran them).
pub(crate) fn dedup_last(records: Vec<Record>) -> Vec<Record> {
    let mut at: HashMap<RecordKey, usize> = HashMap::new();
    let mut out: Vec<Record> = Vec::with_capacity(records.len());
    for r in records {
        match at.entry(r.key()) {
            std::collections::hash_map::Entry::Occupied(e) => out[*e.get()] = r,
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(out.len());
                out.push(r);
            }
        }
    }
    out
}

/// `(bytes_per_key, ns_per_op)` when both are positive and finite, i.e. plottable on log axes.
fn usable_point(r: &Record) -> Option<(f64, f64)> {
    if matches!(r, Record::Encoder(_)) || matches!(r, Record::Filter(f) if f.op == FilterOp::Build)
    {
        return None;
    }
    let b = r.bytes_per_key()?;
    let ns = r.m().ns_per_op;
    let ok = |v: f64| v.is_finite() && v > 0.0;
    (ok(b) && ok(ns)).then_some((b, ns))
}

fn plural(n: u32) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Replaces every character outside `[A-Za-z0-9._-]` by `_` (so `u64:/a/b` becomes
/// `u64__a_b`), strips leading dots, and bounds the length, giving a safe file-name part.
pub(crate) fn sanitise(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    while out.starts_with('.') {
        out.remove(0);
    }
    if out.len() > 80 {
        out.truncate(80);
    }
    if out.is_empty() {
        out.push('_');
    }
    out
}

/// Hands out file stems, appending `-2`, `-3`, … when two groups sanitise to the same name.
#[derive(Default)]
struct FileNames {
    used: HashSet<String>,
}

impl FileNames {
    fn claim(&mut self, stem: &str) -> String {
        let mut name = stem.to_owned();
        let mut n = 1;
        while !self.used.insert(name.clone()) {
            n += 1;
            name = format!("{stem}-{n}");
        }
        name
    }
}

fn write_svg(out_dir: &Path, stem: &str, svg: &str) -> anyhow::Result<PathBuf> {
    let path = out_dir.join(format!("{stem}.svg"));
    std::fs::write(&path, svg).with_context(|| format!("writing chart {}", path.display()))?;
    Ok(path)
}

/// Draws a chart's legend at `position`, in the one style every chart uses.
fn draw_legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> anyhow::Result<()> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(LABEL_FONT)
        .draw()
        .map_err(plot_err)
}

/// Converts a plotters error (generic over the backend's error) into an `anyhow` error.
pub(crate) fn plot_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("drawing chart: {e}")
}

/// Well-separated colours (Tableau 10, slightly darkened where light) for the first indexes.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0xc9, 0xa8, 0x2c),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0xff, 0x7f, 0x9a),
    RGBColor(0x6b, 0x6b, 0x6b),
];

/// The colour of each index name: its rank among all index names in the file.
struct Colours {
    rank: HashMap<String, usize>,
}

impl Colours {
    fn new(records: &[Record]) -> Colours {
        let names: BTreeSet<&str> = records.iter().map(|r| r.m().index.as_str()).collect();
        Colours {
            rank: names
                .into_iter()
                .enumerate()
                .map(|(i, n)| (n.to_owned(), i))
                .collect(),
        }
    }

    /// Rank of `index` (its position in the sorted list of index names); unknown names sort last.
    fn rank(&self, index: &str) -> usize {
        self.rank.get(index).copied().unwrap_or(usize::MAX)
    }

    fn of(&self, index: &str) -> RGBColor {
        let i = self.rank.get(index).copied().unwrap_or(0);
        if let Some(&c) = PALETTE.get(i) {
            return c;
        }
        // Beyond the palette: hues spaced by the golden angle stay distinct from each other.
        let hue = ((i - PALETTE.len()) as f64 * 0.381_966_011_250_105).fract();
        let (r, g, b) = HSLColor(hue, 0.6, 0.45).rgb();
        RGBColor(r, g, b)
    }

    /// The distinct index names among `rs`, in colour-rank order.
    fn indexes_of<'a>(&self, rs: &[&'a Record]) -> Vec<&'a str> {
        let mut names: Vec<&str> = rs.iter().map(|r| r.m().index.as_str()).collect();
        names.sort_by_key(|n| (self.rank(n), *n));
        names.dedup();
        names
    }
}

/// A number in at most three significant digits with a k/M/G suffix, e.g. `950`, `1.2k`, `35M`.
fn compact(v: f64) -> String {
    let a = v.abs();
    let (scaled, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let s = scaled.abs();
    let digits = if s >= 100.0 || s == 0.0 {
        0
    } else if s >= 10.0 {
        1
    } else if s >= 1.0 {
        2
    } else {
        3
    };
    let text = format!("{scaled:.digits$}");
    // Drop trailing zeros after a decimal point: 1.50 -> 1.5, 2.00 -> 2.
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    };
    format!("{text}{suffix}")
}

/// Rounds `v > 0` to two significant digits.
fn round2(v: f64) -> f64 {
    let scale = 10f64.powi(v.log10().floor() as i32 - 1);
    (v / scale).round() * scale
}

/// The x axis of grouped bars: group `i` spans `[i, i + 1)` and its tick sits at `i + 0.5`.
/// (plotters' own `f64` axis picks "nice" ticks, which would fall between the groups.)
struct GroupAxis {
    groups: usize,
}

impl Ranged for GroupAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let frac = value / self.groups.max(1) as f64;
        limit.0 + (frac * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, _hint: H) -> Vec<f64> {
        (0..self.groups).map(|i| i as f64 + 0.5).collect()
    }

    fn range(&self) -> Range<f64> {
        0.0..self.groups as f64
    }
}

pub(crate) const TITLE_FONT: (&str, u32) = ("sans-serif", 22);
pub(crate) const DESC_FONT: (&str, u32) = ("sans-serif", 17);
pub(crate) const LABEL_FONT: (&str, u32) = ("sans-serif", 14);

/// Grouped bars: x = workload, one bar per index, y = millions per second (`y_desc`).
fn throughput_chart(
    title: &str,
    y_desc: &str,
    rs: &[&Record],
    colours: &Colours,
) -> anyhow::Result<String> {
    let mut workloads: Vec<String> = Vec::new();
    for r in rs {
        let w = r.workload_name();
        if !workloads.contains(&w) {
            workloads.push(w);
        }
    }
    let indexes = colours.indexes_of(rs);
    let values: HashMap<(String, &str), f64> = rs
        .iter()
        .filter(|r| r.m().mops.is_finite() && r.m().mops >= 0.0)
        .map(|r| ((r.workload_name(), r.m().index.as_str()), r.m().mops))
        .collect();
    let max = values.values().copied().fold(0.0, f64::max);
    // Headroom above the tallest bar for the legend (upper right, about 18 px per index of a
    // ~480 px high plot) and the value labels.
    let legend_share = ((indexes.len() as f64 * 18.0 + 30.0) / 480.0).min(0.6);
    let y_max = if max > 0.0 {
        max / (0.95 - legend_share)
    } else {
        1.0
    };

    let (nw, ni) = (workloads.len(), indexes.len());
    let width = (220 + nw * (ni * 26 + 40)).clamp(900, 2400) as u32;
    let height = 600u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        // Bars of workload i span [i + 0.1, i + 0.9]; the tick sits at the group's centre.
        let mut chart = ChartBuilder::on(&root)
            .caption(title, TITLE_FONT)
            .margin(16)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(GroupAxis { groups: nw }, 0.0..y_max)
            .map_err(plot_err)?;
        let x_label = |v: &f64| {
            let i = v.floor().max(0.0) as usize;
            workloads.get(i).cloned().unwrap_or_default()
        };
        let y_label = |v: &f64| compact(*v);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc("workload")
            .y_desc(y_desc)
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label)
            .axis_desc_style(DESC_FONT)
            .label_style(LABEL_FONT)
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.12))
            .draw()
            .map_err(plot_err)?;

        let slot = 0.8 / ni.max(1) as f64;
        // Value labels only when a bar is wide enough to carry one.
        let bar_px = (width as f64 - 120.0) / nw.max(1) as f64 * slot;
        for (j, &index) in indexes.iter().enumerate() {
            let colour = colours.of(index);
            let bars: Vec<(f64, f64)> = workloads
                .iter()
                .enumerate()
                .filter_map(|(i, w)| {
                    let v = *values.get(&(w.clone(), index))?;
                    Some((i as f64 + 0.1 + j as f64 * slot, v))
                })
                .collect();
            chart
                .draw_series(bars.iter().map(|&(x0, v)| {
                    Rectangle::new([(x0, 0.0), (x0 + slot * 0.9, v)], colour.filled())
                }))
                .map_err(plot_err)?
                .label(index)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 6), (x + 14, y + 6)], colour.filled())
                });
            if bar_px >= 30.0 {
                let style = TextStyle::from(("sans-serif", 13).into_font())
                    .pos(Pos::new(HPos::Center, VPos::Bottom));
                chart
                    .draw_series(bars.iter().map(|&(x0, v)| {
                        Text::new(compact(v), (x0 + slot * 0.45, v), style.clone())
                    }))
                    .map_err(plot_err)?;
            }
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// The costs of the equal-cost curves for points with costs `costs` (`> 0`): each point's cost
/// rounded to two significant digits, at most five of them, none within 40 % of another
/// (closer curves would crowd each other and their labels); at least three when there are points.
fn iso_costs(costs: &[f64]) -> Vec<f64> {
    let mut sorted: Vec<f64> = costs.iter().copied().filter(|c| *c > 0.0).collect();
    sorted.sort_by(f64::total_cmp);
    // Evenly spread picks (the cheapest and the dearest included) when there are many points.
    let picks: Vec<f64> = if sorted.len() <= 5 {
        sorted
    } else {
        (0..5).map(|i| sorted[i * (sorted.len() - 1) / 4]).collect()
    };
    let mut out: Vec<f64> = Vec::new();
    for c in picks.into_iter().map(round2) {
        if out.last().is_none_or(|&last| c > last * 1.4) {
            out.push(c);
        }
    }
    // With one or two curves, add one at half the lowest and at twice the highest cost, so the
    // chart shows which way is better.
    if let (1..3, Some(&lo), Some(&hi)) = (out.len(), out.first(), out.last()) {
        out.insert(0, round2(lo / 2.0));
        out.push(round2(hi * 2.0));
    }
    out
}

/// Tick marks of a log axis over `[lo, hi]`: bold at 1, 2 and 5 times powers of ten (every
/// integer multiple when that gives fewer than three), light at every integer multiple.
fn log_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let (e0, e1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let multiples = |ms: &[u32]| -> Vec<f64> {
        (e0..=e1)
            .flat_map(|e| ms.iter().map(move |&m| f64::from(m) * 10f64.powi(e)))
            .filter(|v| (lo..=hi).contains(v))
            .collect()
    };
    let all = multiples(&[1, 2, 3, 4, 5, 6, 7, 8, 9]);
    let bold = multiples(&[1, 2, 5]);
    if bold.len() >= 3 {
        let light = all.into_iter().filter(|v| !bold.contains(v)).collect();
        (bold, light)
    } else {
        (all, Vec::new())
    }
}

/// Marker shapes, cycled through by series: with colour, the shape tells apart series whose
/// points coincide or whose colours are close.
const SHAPES: usize = 6;

/// Draws a marker of `shape` (`0..SHAPES`: filled circle, triangle, square, cross, hollow
/// circle, hollow square) of radius about `size` pixels at `at`, shifted `dx` pixels right (to
/// set apart points that would cover each other). With `legend`, the marker is also the
/// legend entry of that name, after a short line when `line`.
#[allow(clippy::too_many_arguments)]
fn draw_marker<'a, DB: DrawingBackend + 'a, CT: CoordTranslate<From = (f64, f64)>>(
    chart: &mut ChartContext<'a, DB, CT>,
    shape: usize,
    at: (f64, f64),
    dx: i32,
    size: i32,
    colour: RGBColor,
    legend: Option<&str>,
    line: bool,
) -> anyhow::Result<()> {
    let outline = BLACK.stroke_width(1);
    let fill = colour.filled();
    let thick = colour.stroke_width(3);
    let sq = |dx: i32, s: i32| [(dx - s, -s), (dx + s, s)];
    macro_rules! marker {
        ($($element:expr),+ ; $key:expr) => {{
            let anno = chart
                .draw_series(std::iter::once(EmptyElement::at(at) $(+ $element)+))
                .map_err(plot_err)?;
            if let Some(name) = legend {
                let anno = anno.label(name);
                if line {
                    anno.legend(move |(x, y)| {
                        EmptyElement::at((x, y))
                            + PathElement::new([(0, 0), (16, 0)], colour.stroke_width(2))
                            + $key
                    });
                } else {
                    anno.legend(move |(x, y)| EmptyElement::at((x, y)) + $key);
                }
            }
        }};
    }
    match shape % SHAPES {
        0 => marker!(
            Circle::new((dx, 0), size, fill),
            Circle::new((dx, 0), size, outline);
            Circle::new((8, 0), 5, fill)
        ),
        1 => marker!(
            TriangleMarker::new((dx, 0), size + 2, fill);
            TriangleMarker::new((8, 0), 7, fill)
        ),
        2 => marker!(
            Rectangle::new(sq(dx, size), fill),
            Rectangle::new(sq(dx, size), outline);
            Rectangle::new(sq(8, 5), fill)
        ),
        3 => marker!(
            Cross::new((dx, 0), size, thick);
            Cross::new((8, 0), 5, thick)
        ),
        4 => marker!(
            Circle::new((dx, 0), size, thick);
            Circle::new((8, 0), 5, thick)
        ),
        _ => marker!(
            Rectangle::new(sq(dx, size), thick);
            Rectangle::new(sq(8, 5), thick)
        ),
    }
    Ok(())
}

/// The horizontal pixel shift for each of `points` (pixel positions, in drawing order) that
/// sets apart markers within `radius` pixels of an earlier one: the k-th marker on one spot
/// moves `k · 2·radius` right, so every marker of a cluster stays visible.
fn dodge(points: &[(i32, i32)], radius: i32) -> Vec<i32> {
    let mut out = Vec::with_capacity(points.len());
    for (i, &(x, y)) in points.iter().enumerate() {
        let close = points[..i]
            .iter()
            .filter(|&&(px, py)| (px - x).abs() < radius && (py - y).abs() < radius)
            .count();
        out.push(close as i32 * 2 * radius);
    }
    out
}

/// Approximate pixel width of `text` at `size` (plotters' own estimate for the SVG backend).
fn text_px(text: &str, size: f64) -> f64 {
    size / 1.24 / 1.24 * 0.7 * text.chars().count() as f64
}

/// Picks the corner of the plotting area (`xr` × `yr` in pixels) where a legend of `w` × `h`
/// pixels covers the least of the `obstacles` (pixel boxes `[x0, x1, y0, y1]`).
fn legend_corner(
    xr: Range<i32>,
    yr: Range<i32>,
    (w, h): (f64, f64),
    obstacles: &[[f64; 4]],
) -> SeriesLabelPosition {
    let (l, r, t, b) = (
        f64::from(xr.start),
        f64::from(xr.end),
        f64::from(yr.start),
        f64::from(yr.end),
    );
    let candidates = [
        (SeriesLabelPosition::UpperRight, [r - w, r, t, t + h]),
        (SeriesLabelPosition::UpperLeft, [l, l + w, t, t + h]),
        (SeriesLabelPosition::LowerRight, [r - w, r, b - h, b]),
        (SeriesLabelPosition::LowerLeft, [l, l + w, b - h, b]),
    ];
    let overlap = |a: &[f64; 4]| -> f64 {
        obstacles
            .iter()
            .map(|o| {
                let dx = (a[1].min(o[1]) - a[0].max(o[0])).max(0.0);
                let dy = (a[3].min(o[3]) - a[2].max(o[2])).max(0.0);
                dx * dy
            })
            .sum()
    };
    let mut best = (f64::INFINITY, SeriesLabelPosition::UpperRight);
    for (pos, area) in candidates {
        let o = overlap(&area);
        if o < best.0 {
            best = (o, pos);
        }
    }
    best.1
}

/// Log-log scatter of ns/op against bytes/key with dashed equal-cost curves.
fn cost_chart(title: &str, rs: &[&Record], colours: &Colours) -> anyhow::Result<String> {
    let points: Vec<(&str, f64, f64)> = colours
        .indexes_of(rs)
        .into_iter()
        .filter_map(|index| {
            let r = rs.iter().find(|r| r.m().index == index)?;
            let (b, ns) = usable_point(r)?;
            Some((index, b, ns))
        })
        .collect();
    // Pad the ranges by a factor of 2 on each side: room for labels and the curves' ends.
    let span = |vals: &mut dyn Iterator<Item = f64>| {
        let (lo, hi) = vals.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
        (lo / 2.0, hi * 2.0)
    };
    let (x0, x1) = span(&mut points.iter().map(|p| p.1));
    let (y0, y1) = span(&mut points.iter().map(|p| p.2));
    let (x_bold, x_light) = log_ticks(x0, x1);
    let (y_bold, y_light) = log_ticks(y0, y1);
    let costs = iso_costs(&points.iter().map(|p| p.1 * p.2).collect::<Vec<_>>());

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, 680)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, TITLE_FONT)
            .margin(16)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(
                (x0..x1)
                    .log_scale()
                    .with_key_points(x_bold)
                    .with_light_points(x_light),
                (y0..y1)
                    .log_scale()
                    .with_key_points(y_bold)
                    .with_light_points(y_light),
            )
            .map_err(plot_err)?;
        let fmt = |v: &f64| compact(*v);
        chart
            .configure_mesh()
            .x_desc("memory (bytes per key, log scale)")
            .y_desc("latency (ns per operation, log scale)")
            .x_label_formatter(&fmt)
            .y_label_formatter(&fmt)
            .axis_desc_style(DESC_FONT)
            .label_style(LABEL_FONT)
            .light_line_style(BLACK.mix(0.05))
            .bold_line_style(BLACK.mix(0.15))
            .draw()
            .map_err(plot_err)?;

        // Pixel boxes of the points and their labels: curve labels and the legend avoid them.
        let point_labels: Vec<String> = points
            .iter()
            .map(|&(index, b, ns)| format!("{index} ({} B/key, {} ns)", compact(b), compact(ns)))
            .collect();
        let mut obstacles: Vec<[f64; 4]> = points
            .iter()
            .zip(&point_labels)
            .map(|(&(_, b, ns), label)| {
                let (px, py) = chart.backend_coord(&(b, ns));
                let (px, py) = (f64::from(px), f64::from(py));
                [
                    px - 8.0,
                    px + 12.0 + text_px(label, 14.0),
                    py - 20.0,
                    py + 8.0,
                ]
            })
            .collect();
        let (xr, yr) = chart.plotting_area().get_pixel_range();
        let inside = |o: &[f64; 4]| {
            o[0] >= f64::from(xr.start)
                && o[1] <= f64::from(xr.end)
                && o[2] >= f64::from(yr.start)
                && o[3] <= f64::from(yr.end)
        };
        let hits = |a: &[f64; 4], obstacles: &[[f64; 4]]| {
            obstacles
                .iter()
                .any(|o| a[0] < o[1] && o[0] < a[1] && a[2] < o[3] && o[2] < a[3])
        };

        // Equal-cost curves first, so the points are drawn over them.
        let curve_colour = RGBColor(0x33, 0x66, 0xcc);
        let curve_style = curve_colour.mix(0.55).stroke_width(2);
        let mut first_curve = true;
        for c in costs {
            // The visible part of ns = c / bytes: from where it enters at the top edge (or the
            // left) to where it leaves at the bottom edge (or the right).
            let (from, to) = (x0.max(c / y1), x1.min(c / y0));
            if from >= to {
                continue;
            }
            let at = |t: f64| {
                let x = from * (to / from).powf(t);
                (x, c / x)
            };
            let line: Vec<(f64, f64)> = (0..=32).map(|i| at(f64::from(i) / 32.0)).collect();
            let series = chart
                .draw_series(DashedLineSeries::new(line, 8, 6, curve_style))
                .map_err(plot_err)?;
            if std::mem::take(&mut first_curve) {
                series
                    .label("equal cost C = ns/op × bytes/key")
                    .legend(move |(x, y)| {
                        PathElement::new([(x, y), (x + 16, y)], curve_colour.stroke_width(2))
                    });
            }
            // The label sits just above and right of a point on the curve; as the curve falls
            // to the right, the text stays clear of it. The first spot along the curve that
            // is inside the plot and clear of points and other labels wins.
            let label = format!("C = {} ns·B", compact(c));
            let box_at = |t: f64| {
                let (px, py) = chart.backend_coord(&at(t));
                let (px, py) = (f64::from(px) + 5.0, f64::from(py) - 3.0);
                [px, px + text_px(&label, 13.0), py - 12.0, py]
            };
            let spots = [0.72, 0.6, 0.84, 0.5, 0.4, 0.3, 0.2, 0.1];
            let t = spots
                .iter()
                .copied()
                .find(|&t| inside(&box_at(t)) && !hits(&box_at(t), &obstacles))
                .unwrap_or(spots[0]);
            obstacles.push(box_at(t));
            let style = TextStyle::from(("sans-serif", 13).into_font())
                .color(&curve_colour)
                .pos(Pos::new(HPos::Left, VPos::Bottom));
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at(at(t)) + Text::new(label.clone(), (5, -3), style),
                ))
                .map_err(plot_err)?;
        }

        let mut widest = text_px("equal cost C = ns/op × bytes/key", 14.0);
        // Points on one spot (filters of one size and speed, say) are set apart, and each
        // label takes the first free line near its point instead of stacking on another.
        let pixels: Vec<(i32, i32)> = points
            .iter()
            .map(|&(_, b, ns)| chart.backend_coord(&(b, ns)))
            .collect();
        let shifts = dodge(&pixels, 7);
        let mut label_boxes: Vec<[f64; 4]> = Vec::new();
        for (i, (&(index, b, ns), label)) in points.iter().zip(point_labels).enumerate() {
            let colour = colours.of(index);
            let shape = colours.rank(index) / PALETTE.len() + i % SHAPES;
            widest = widest.max(text_px(index, 14.0));
            let px = f64::from(pixels[i].0 + shifts[i]);
            let py = f64::from(pixels[i].1);
            // Renderers set this font a little wider than plotters' estimate: leave room.
            let w = text_px(&label, 14.0) * 1.15;
            let at = |dy: i32| {
                let top = py + f64::from(dy);
                [px + 9.0, px + 9.0 + w, top, top + 14.0]
            };
            // The first line near the point that no other label covers; in a crowd, the one
            // covered least.
            let covered = |dy: i32| -> f64 {
                let a = at(dy);
                label_boxes
                    .iter()
                    .map(|o| {
                        let x = (a[1].min(o[1]) - a[0].max(o[0])).max(0.0);
                        let y = (a[3].min(o[3]) - a[2].max(o[2])).max(0.0);
                        x * y
                    })
                    .sum()
            };
            let spots = [-18, -4, 10, -32, 24, -46, 38, -60, 52, -74, 66];
            let dy = spots
                .into_iter()
                .find(|&dy| covered(dy) == 0.0)
                .unwrap_or_else(|| {
                    spots
                        .into_iter()
                        .min_by(|&a, &b| covered(a).total_cmp(&covered(b)))
                        .unwrap_or(-18)
                });
            label_boxes.push(at(dy));
            draw_marker(
                &mut chart,
                shape,
                (b, ns),
                shifts[i],
                6,
                colour,
                Some(index),
                false,
            )?;
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at((b, ns))
                        + Text::new(label, (9 + shifts[i], dy), ("sans-serif", 14).into_font()),
                ))
                .map_err(plot_err)?;
        }
        let legend = (widest + 60.0, 18.0 * (points.len() + 1) as f64 + 20.0);
        draw_legend(&mut chart, legend_corner(xr, yr, legend, &obstacles))?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(index: &str, workload: &str, mops: f64, bytes: Option<f64>) -> Record {
        let mut r = crate::record::tests::index_rec(index, workload, mops);
        if let Record::Index(i) = &mut r {
            i.m.dataset = "u64:/data/osm".into();
            i.m.ops = 1000;
            i.bytes_per_key = bytes;
            i.overhead_bytes_per_key = bytes.map(|b| b - 16.0);
        }
        r
    }

    fn write_lines(dir: &Path, records: &[Record]) -> PathBuf {
        let path = dir.join("results.json");
        let mut text = String::new();
        for r in records {
            text.push_str(&serde_json::to_string(r).unwrap());
            text.push('\n');
        }
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn report_writes_expected_charts() {
        let dir = tempfile::tempdir().unwrap();
        let records = [
            rec("btreemap", "load", 2.0, Some(48.0)),
            rec("mlpdex", "load", 5.0, Some(20.0)),
            rec("btreemap", "c", 3.0, Some(48.0)),
            rec("mlpdex", "c", 9.0, None),
            rec("btreemap", "c", 4.0, Some(50.0)),
        ];
        let json = write_lines(dir.path(), &records);
        let out = dir.path().join("charts");
        let written = write_report(&json, &out).unwrap();
        let names: Vec<String> = written
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "throughput-u64__data_osm-1000-uniform-independent-1t.svg",
                "cost-u64__data_osm-1000-c-uniform-independent-1t.svg",
                "cost-u64__data_osm-1000-load-uniform-independent-1t.svg",
            ]
        );
        for p in &written {
            assert!(p.starts_with(&out));
            let svg = std::fs::read_to_string(p).unwrap();
            assert!(svg.contains("<svg"), "{}", p.display());
            assert!(svg.contains("btreemap"), "{}", p.display());
        }
        let throughput = std::fs::read_to_string(&written[0]).unwrap();
        assert!(throughput.contains("mlpdex"));
        assert!(throughput.contains("Mops/s"));
        // The load chart has both indexes; the c chart only btreemap (mlpdex has no memory).
        let load = std::fs::read_to_string(&written[2]).unwrap();
        assert!(load.contains("mlpdex") && load.contains("ns·B"));
        let c = std::fs::read_to_string(&written[1]).unwrap();
        assert!(!c.contains("mlpdex"));
        // The duplicate btreemap/c record: the last one (50 B/key) is plotted.
        assert!(c.contains("50 B/key") && !c.contains("48 B/key"));
    }

    fn filter_rec(index: &str, dataset: &str, workload: &str, bits: f64, fpr: f64) -> Record {
        let op = match workload {
            "build" => FilterOp::Build,
            w => FilterOp::Query(QueryKind::from_workload(w).unwrap()),
        };
        let mut r = crate::record::tests::filter_rec(index, op, bits, Some(fpr));
        let m = r.m_mut();
        m.dataset = dataset.into();
        m.keys = 500;
        m.mops = 4.0;
        r
    }

    #[test]
    fn filter_records_get_fpr_charts() {
        let dir = tempfile::tempdir().unwrap();
        let mut records = vec![rec("btreemap", "c", 3.0, Some(48.0))];
        for (ds, base) in [("rand-8", 10.0), ("email", 14.0)] {
            records.push(filter_rec("surf-base", ds, "filter-point", base, 0.04));
            for n in [2u32, 4, 8] {
                let fpr = 0.04 / f64::from(1 << n);
                let bits = base + f64::from(n);
                records.push(filter_rec(
                    &format!("surf-hash-{n}"),
                    ds,
                    "filter-point",
                    bits,
                    fpr,
                ));
                records.push(filter_rec(
                    &format!("surf-real-{n}"),
                    ds,
                    "filter-point",
                    bits,
                    0.02,
                ));
                records.push(filter_rec(
                    &format!("surf-real-{n}"),
                    ds,
                    "filter-range",
                    bits,
                    0.1,
                ));
                records.push(filter_rec(
                    &format!("bloom-{bits}"),
                    ds,
                    "filter-point",
                    bits,
                    fpr,
                ));
            }
            records.push(filter_rec(
                "surf-mixed-2-2",
                ds,
                "filter-mixed",
                base + 4.0,
                0.01,
            ));
            // A build record has no FPR: it makes no FPR point.
            let mut build = filter_rec("surf-base", ds, "build", base, 0.0);
            if let Record::Filter(f) = &mut build {
                f.fpr = None;
            }
            records.push(build);
        }
        let json = write_lines(dir.path(), &records);
        let written = write_report(&json, &dir.path().join("charts")).unwrap();
        let fpr: Vec<String> = written
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("fpr-"))
            .collect();
        assert_eq!(
            fpr,
            [
                "fpr-email-500-point.svg",
                "fpr-email-500-range.svg",
                "fpr-email-500-mixed.svg",
                "fpr-rand-8-500-point.svg",
                "fpr-rand-8-500-range.svg",
                "fpr-rand-8-500-mixed.svg",
            ]
        );
        let point =
            std::fs::read_to_string(dir.path().join("charts/fpr-rand-8-500-point.svg")).unwrap();
        for family in [
            "SuRF-Base",
            "SuRF-Hash",
            "SuRF-Real",
            "Bloom",
            "bits per key",
        ] {
            assert!(point.contains(family), "{family} missing");
        }
        assert!(
            !point.contains("SuRF-Mixed"),
            "no mixed filter made point queries"
        );
        // Lines join a family's points; the lone SuRF-Base point has none of its own.
        assert!(point.contains("<polyline"), "family lines are drawn");
        let range =
            std::fs::read_to_string(dir.path().join("charts/fpr-rand-8-500-range.svg")).unwrap();
        assert!(range.contains("SuRF-Real") && !range.contains("Bloom"));
        assert!(point.contains("log scale"), "FPR on a log axis");
        assert!(point.contains("500 keys stored"));
        // Builds get their own chart, in keys per second; the throughput chart has none.
        let build =
            std::fs::read_to_string(dir.path().join("charts/build-rand-8-500.svg")).unwrap();
        assert!(build.contains("million keys/s"), "{build}");
        let names: Vec<String> = written
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        for n in names.iter().filter(|n| n.starts_with("throughput-")) {
            let svg = std::fs::read_to_string(dir.path().join("charts").join(n)).unwrap();
            assert!(!svg.contains(">build<"), "{n} mixes builds with queries");
        }
    }

    #[test]
    fn a_zero_false_positive_rate_is_drawn_on_the_log_axis_floor() {
        let dir = tempfile::tempdir().unwrap();
        let records = [
            filter_rec("surf-real-8", "rand-8", "filter-point", 18.0, 0.001),
            filter_rec("bloom-18", "rand-8", "filter-point", 18.0, 0.0),
        ];
        let json = write_lines(dir.path(), &records);
        let written = write_report(&json, &dir.path().join("charts")).unwrap();
        let fpr = written
            .iter()
            .find(|p| p.to_string_lossy().contains("fpr-"))
            .unwrap();
        let svg = std::fs::read_to_string(fpr).unwrap();
        assert!(svg.contains("18 (0%)"), "the zero is labelled");
    }

    #[test]
    fn an_exact_line_is_recovered_with_r2_one() {
        let points: Vec<(f64, f64)> = (1..=10)
            .map(|x| (f64::from(x), 3.0 + 2.0 * f64::from(x)))
            .collect();
        let f = fit_line(&points).unwrap();
        assert_eq!((f.slope, f.intercept, f.r2), (2.0, 3.0, 1.0));
        // Merge-like figures: 40 ns per entry through the origin, 4k to 10M entries.
        let points: Vec<(f64, f64)> = (0..60)
            .map(|i| {
                let x = (4096.0 * 1.1f64.powi(i)).round();
                (x, 40e-9 * x)
            })
            .collect();
        let f = fit_line(&points).unwrap();
        assert!((f.slope * 1e9 - 40.0).abs() < 1e-9, "{f:?}");
        assert!(
            f.intercept.abs() < 1e-12 && (f.r2 - 1.0).abs() < 1e-12,
            "{f:?}"
        );
    }

    #[test]
    fn a_noisy_line_fits_below_one_and_degenerate_inputs_do_not_fit() {
        let f = fit_line(&[(0.0, 0.0), (1.0, 2.0), (2.0, 1.0), (3.0, 3.0)]).unwrap();
        assert!((f.slope - 0.8).abs() < 1e-12 && (f.intercept - 0.3).abs() < 1e-12);
        assert!((f.r2 - 0.64).abs() < 1e-12, "{f:?}");
        assert_eq!(fit_line(&[(1.0, 1.0)]), None);
        assert_eq!(fit_line(&[(2.0, 1.0), (2.0, 3.0)]), None);
        assert_eq!(fit_line(&[(1.0, f64::NAN), (2.0, 3.0)]), None);
        let flat = fit_line(&[(1.0, 5.0), (2.0, 5.0)]).unwrap();
        assert_eq!((flat.slope, flat.r2), (0.0, 1.0));
    }

    #[test]
    fn a_line_is_clipped_to_the_plot() {
        let f = |slope, intercept| Fit {
            slope,
            intercept,
            r2: 1.0,
        };
        assert_eq!(
            clip_line(f(1.0, 0.0), 10.0, 5.0),
            Some([(0.0, 0.0), (5.0, 5.0)])
        );
        assert_eq!(
            clip_line(f(1.0, -2.0), 10.0, 20.0),
            Some([(2.0, 0.0), (10.0, 8.0)])
        );
        assert_eq!(
            clip_line(f(0.0, 1.0), 10.0, 5.0),
            Some([(0.0, 1.0), (10.0, 1.0)])
        );
        assert_eq!(clip_line(f(1.0, -20.0), 10.0, 5.0), None);
    }

    fn merge_rec(index: &str, dataset: &str, workload: &str, ns_per_entry: f64) -> Record {
        let mut r = rec(index, workload, 1.0, Some(20.0));
        if let Record::Index(i) = &mut r {
            i.m.dataset = dataset.into();
            i.m.keys = 1_000_000;
            let sizes: &[u64] = if workload == "load" {
                &[4096, 45_056, 100_000, 500_000, 1_000_000]
            } else {
                &[1_050_000]
            };
            i.merges = sizes
                .iter()
                .map(|&entries| Merge {
                    entries,
                    secs: ns_per_entry * 1e-9 * entries as f64,
                    filter_secs: 0.0,
                    old_bytes: entries * 9,
                    new_bytes: entries * 10,
                })
                .collect();
        }
        r
    }

    #[test]
    fn merges_get_a_chart_per_dataset_with_a_fit_per_index() {
        let dir = tempfile::tempdir().unwrap();
        let records = [
            rec("btreemap", "load", 2.0, Some(48.0)),
            merge_rec("hybrid-a", "rand-8", "load", 40.0),
            merge_rec("hybrid-b", "rand-8", "load", 120.0),
            merge_rec("hybrid-a", "rand-8", "a", 40.0),
            merge_rec("hybrid-a", "email", "load", 80.0),
        ];
        let json = write_lines(dir.path(), &records);
        let written = write_report(&json, &dir.path().join("charts")).unwrap();
        let merge: Vec<String> = written
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("merge-"))
            .collect();
        assert_eq!(
            merge,
            ["merge-email-1000000.svg", "merge-rand-8-1000000.svg"]
        );
        let svg =
            std::fs::read_to_string(dir.path().join("charts/merge-rand-8-1000000.svg")).unwrap();
        // hybrid-a: its load's 5 merges and workload a's one, on one line.
        assert!(
            svg.contains("hybrid-a: 40.0 ns/entry, R² 1.000 (6 merges)"),
            "{svg}"
        );
        assert!(
            svg.contains("hybrid-b: 120.0 ns/entry, R² 1.000 (5 merges)"),
            "{svg}"
        );
        assert!(!svg.contains("btreemap"), "no merges, no series");
        assert!(svg.contains("merge time (s)") && svg.contains("1,000,000 keys"));
        let groups = merge_groups(&records);
        let rand: Vec<&str> = groups[&("rand-8".to_string(), 1_000_000)]
            .iter()
            .map(|(i, _)| i.as_str())
            .collect();
        assert_eq!(rand, ["hybrid-a", "hybrid-b"]);
    }

    #[test]
    fn loads_with_a_series_get_a_time_chart_with_their_slowest_insert() {
        let dir = tempfile::tempdir().unwrap();
        let mut with = rec("ht", "load", 1.0, Some(32.0));
        if let Record::Index(i) = &mut with {
            i.m.dataset = "rand-8".into();
            i.m.series = Some(crate::record::Series {
                window: 1000,
                ns: vec![100.0, 100.0, 5000.0, 100.0],
            });
            i.m.max_ns = Some(4_000_000.0);
            i.m.p999_ns = Some(2500.0);
        }
        let mut without = rec("eh", "load", 1.0, Some(32.0));
        if let Record::Index(i) = &mut without {
            i.m.dataset = "rand-8".into();
        }
        let records = [with, without];
        let groups = load_groups(&records);
        let lines = &groups[&("rand-8".to_string(), 1000)];
        assert_eq!(lines.len(), 1, "only loads with a series");
        let last = *lines[0].1.last().unwrap();
        assert_eq!(last.0, 4000.0);
        assert!((last.1 - 5300.0 * 1000.0 / 1e9).abs() < 1e-12, "{last:?}");
        let json = write_lines(dir.path(), &records);
        write_report(&json, &dir.path().join("charts")).unwrap();
        let svg = std::fs::read_to_string(dir.path().join("charts/load-rand-8-1000.svg")).unwrap();
        assert!(
            svg.contains("ht: slowest insert 4.0 ms, p99.9 2.5 µs"),
            "{svg}"
        );
    }

    /// An index record on `dataset` with its shared prefix and DRAM round trips.
    fn prefix_rec(
        index: &str,
        dataset: &str,
        workload: &str,
        shared: Option<f64>,
        rt: Option<f64>,
    ) -> Record {
        let mut r = rec(index, workload, 1.0, Some(80.0));
        if let Record::Index(i) = &mut r {
            i.m.dataset = dataset.into();
            i.mean_shared_prefix = shared;
            i.dram_rt_per_op = rt;
        }
        r
    }

    #[test]
    fn round_trips_against_shared_prefix_get_a_chart_per_setting_with_two_datasets() {
        let dir = tempfile::tempdir().unwrap();
        let mut records = Vec::new();
        for (dataset, shared) in [("rand-8", 2.6), ("urls", 23.3), ("paths", 50.4)] {
            records.push(prefix_rec(
                "btreemap",
                dataset,
                "c",
                Some(shared),
                Some(4.0),
            ));
            let trie = 1.0 + shared / 10.0;
            records.push(prefix_rec(
                "cuckoo-trie",
                dataset,
                "c",
                Some(shared),
                Some(trie),
            ));
        }
        // Batches of 16: a chart of its own.
        for (dataset, shared) in [("rand-8", 2.6), ("paths", 50.4)] {
            let mut r = prefix_rec("cuckoo-trie", dataset, "c", Some(shared), Some(1.0));
            if let Record::Index(i) = &mut r {
                i.batch = 16;
            }
            records.push(r);
        }
        // One dataset only: no chart.
        records.push(prefix_rec("btreemap", "paths", "e", Some(50.4), Some(9.0)));
        records.push(prefix_rec(
            "cuckoo-trie",
            "paths",
            "e",
            Some(50.4),
            Some(7.0),
        ));
        // Two datasets, but one lacks its shared prefix (an old record) and one the round
        // trips (DRAM not probed): no chart.
        records.push(prefix_rec(
            "btreemap",
            "rand-8",
            "lower-bound",
            Some(2.6),
            Some(4.0),
        ));
        records.push(prefix_rec(
            "btreemap",
            "email",
            "lower-bound",
            None,
            Some(5.0),
        ));
        records.push(prefix_rec(
            "btreemap",
            "paths",
            "lower-bound",
            Some(50.4),
            None,
        ));
        let json = write_lines(dir.path(), &records);
        let written = write_report(&json, &dir.path().join("charts")).unwrap();
        let prefix: Vec<String> = written
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("prefix-"))
            .collect();
        assert_eq!(
            prefix,
            [
                "prefix-1000-c-uniform-independent-1t.svg",
                "prefix-1000-c-uniform-independent-1t-b16.svg",
            ]
        );
        let svg = std::fs::read_to_string(
            dir.path()
                .join("charts/prefix-1000-c-uniform-independent-1t.svg"),
        )
        .unwrap();
        for text in [
            "btreemap",
            "cuckoo-trie",
            "rand-8 (2.6 B)",
            "urls (23.3 B)",
            "paths (50.4 B)",
            "DRAM round trips per operation",
            "mean prefix shared with the sorted neighbour (bytes)",
            "1,000 keys, workload c",
        ] {
            assert!(svg.contains(text), "{text} missing");
        }
        assert!(svg.contains("<polyline"), "each index is a line");
        let batched = std::fs::read_to_string(
            dir.path()
                .join("charts/prefix-1000-c-uniform-independent-1t-b16.svg"),
        )
        .unwrap();
        assert!(batched.contains("batches of 16") && !batched.contains("btreemap"));
    }

    #[test]
    fn dataset_labels_stack_only_where_they_would_overlap() {
        let rows = label_rows(
            &[(0.0, 50.0), (40.0, 50.0), (70.0, 50.0), (200.0, 10.0)],
            8.0,
        );
        assert_eq!(rows, [0, 1, 0, 0]);
    }

    #[test]
    fn coincident_markers_are_set_apart() {
        let d = dodge(&[(100, 100), (101, 99), (300, 300), (100, 102)], 6);
        assert_eq!(d, [0, 12, 0, 24]);
    }

    #[test]
    fn malformed_line_names_its_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.json");
        let good = serde_json::to_string(&rec("a", "c", 1.0, None)).unwrap();
        std::fs::write(&path, format!("{good}\n\n{{\"index\": 3}}\n{good}\n")).unwrap();
        let err = format!("{:#}", read_records(&path).unwrap_err());
        assert!(err.contains("line 3"), "{err}");
        assert!(write_report(&path, &dir.path().join("out")).is_err());
    }

    #[test]
    fn blank_lines_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        let good = serde_json::to_string(&rec("a", "c", 1.0, None)).unwrap();
        std::fs::write(&path, format!("\n{good}\n   \n{good}\n\n")).unwrap();
        assert_eq!(read_records(&path).unwrap().len(), 2);
    }

    #[test]
    fn duplicates_keep_the_last_in_first_position() {
        let out = dedup_last(vec![
            rec("a", "load", 1.0, None),
            rec("b", "load", 2.0, None),
            rec("a", "load", 3.0, None),
            rec("a", "c", 4.0, None),
        ]);
        let got: Vec<(&str, String, f64)> = out
            .iter()
            .map(|r| (r.m().index.as_str(), r.workload_name(), r.m().mops))
            .collect();
        assert_eq!(
            got,
            [
                ("a", "load".to_string(), 3.0),
                ("b", "load".to_string(), 2.0),
                ("a", "c".to_string(), 4.0)
            ]
        );
    }

    #[test]
    fn names_are_safe_and_unique() {
        assert_eq!(sanitise("u64:/a/b"), "u64__a_b");
        assert_eq!(sanitise("rand-8"), "rand-8");
        assert_eq!(sanitise("../x"), "_x");
        assert_eq!(sanitise(""), "_");
        assert!(sanitise(&"x".repeat(500)).len() <= 80);
        let mut names = FileNames::default();
        assert_eq!(names.claim("a"), "a");
        assert_eq!(names.claim("a"), "a-2");
        assert_eq!(names.claim("a"), "a-3");
    }

    #[test]
    fn colours_are_stable_and_distinct() {
        let records: Vec<Record> = (0..14)
            .map(|i| rec(&format!("idx{i:02}"), "c", 1.0, None))
            .collect();
        let colours = Colours::new(&records);
        let all: HashSet<(u8, u8, u8)> = records
            .iter()
            .map(|r| {
                let c = colours.of(&r.m().index);
                (c.0, c.1, c.2)
            })
            .collect();
        assert_eq!(all.len(), records.len());
        // The colour depends on the name's rank in the whole file, not on the chart.
        let c = colours.of("idx03");
        assert_eq!((c.0, c.1, c.2), (PALETTE[3].0, PALETTE[3].1, PALETTE[3].2));
    }

    #[test]
    fn iso_costs_are_near_the_points() {
        let costs = [960.0, 1000.0, 5000.0, 20_000.0];
        let got = iso_costs(&costs);
        assert_eq!(got, [960.0, 5000.0, 20_000.0]);
        assert!(iso_costs(&(1..100).map(f64::from).collect::<Vec<_>>()).len() <= 5);
        assert!(iso_costs(&[]).is_empty());
        assert_eq!(iso_costs(&[400.0]), [200.0, 400.0, 800.0]);
    }

    #[test]
    fn compact_numbers() {
        assert_eq!(compact(950.0), "950");
        assert_eq!(compact(1234.0), "1.23k");
        assert_eq!(compact(20_000.0), "20k");
        assert_eq!(compact(2.5e6), "2.5M");
        assert_eq!(compact(0.5), "0.5");
        assert_eq!(compact(0.0), "0");
        assert_eq!(compact(50.0), "50");
    }
}
