//! `mlpdex-bench eh-sync`: the mixed-workload synchronization experiment of
//! vm-shortcuts-extendible-hashing.txt §4.2 (Figure 8).
//!
//! Both `shortcut-eh` and `eh` are loaded with the same keys, then take waves of accesses:
//! each wave begins with a burst of inserts of new keys (`--insert-percent` of it), which
//! split buckets and put the shortcut out of step with the directory, followed by hit
//! lookups. Every `--window` accesses the experiment records the time per access of the
//! window and both directories' versions: while the mapper catches up, `shortcut-eh`'s
//! lookups go through the traditional directory and cost what `eh`'s cost; once the shortcut
//! is in step again they are cheaper. The result is a JSON file of the windows and an SVG
//! chart of both indexes' lookup times, with the two versions on a second axis.
//!
//! The two indexes run one after the other in this process (not in children: the chart
//! compares their shapes over time, not throughputs measured side by side).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context as _, Result};
use mlpdex::shortcut_eh::{Config, ShortcutEh};
use plotters::prelude::*;
use serde::Serialize;

use crate::adapter::value_of;
use crate::baselines::u64_key;

/// Parameters of `eh-sync` (see `mlpdex-bench eh-sync --help`).
#[derive(Clone, Debug)]
pub struct SyncArgs {
    /// Keys loaded first.
    pub keys: usize,
    /// Waves of accesses.
    pub waves: usize,
    /// Accesses per wave.
    pub wave: usize,
    /// Inserts at the start of each wave, in per cent of its accesses.
    pub insert_percent: f64,
    /// Accesses per recorded window.
    pub window: usize,
    /// Seed for the dataset and the lookups.
    pub seed: u64,
    /// JSON file for the windows (replaced).
    pub json: PathBuf,
    /// SVG chart (replaced).
    pub svg: PathBuf,
}

/// One window of accesses.
#[derive(Clone, Debug, Serialize)]
pub struct Window {
    pub index: String,
    /// Accesses before the window's end, from the first wave's start.
    pub accesses: u64,
    /// Mean ns per access in the window.
    pub ns: f64,
    /// Whether the window held inserts.
    pub inserts: bool,
    /// The traditional directory's version at the window's end.
    pub directory_version: u64,
    /// The shortcut's, when it has one and is not remapping.
    pub shortcut_version: Option<u64>,
}

/// Runs the experiment, writes the JSON and the chart, and prints a summary.
pub fn run(args: &SyncArgs) -> Result<()> {
    let inserts_per_wave = (args.wave as f64 * args.insert_percent / 100.0) as usize;
    let fresh = inserts_per_wave * args.waves;
    let data = crate::dataset::load("rand-8", args.keys, args.seed)?;
    anyhow::ensure!(
        data.reserve.len() >= fresh,
        "the dataset's reserve holds {} keys, the waves insert {fresh}",
        data.reserve.len()
    );
    let mut windows = Vec::new();
    for (name, shortcut) in [("shortcut-eh", true), ("eh", false)] {
        let mut m = ShortcutEh::with_config(Config {
            shortcut,
            ..Config::default()
        })?;
        let started = Instant::now();
        for i in 0..data.keys.len() {
            m.insert(u64_key(data.keys.get(i)), value_of(i))?;
        }
        m.wait_for_shortcut();
        eprintln!(
            "{name}: loaded {} keys in {:.1} s; {:?}",
            data.keys.len(),
            started.elapsed().as_secs_f64(),
            m.stats()
        );
        let mut rng = args.seed ^ 0x5eed_5eed_5eed_5eed | 1;
        let mut next_fresh = 0;
        let mut done = 0u64;
        for _ in 0..args.waves {
            let mut left = args.wave;
            let mut inserts = inserts_per_wave;
            while left > 0 {
                let n = args.window.min(left);
                let ins = inserts.min(n);
                let t = Instant::now();
                let mut sink = 0u64;
                for j in 0..n {
                    if j < ins {
                        let k = u64_key(data.reserve.get(next_fresh));
                        m.insert(k, k)?;
                        next_fresh += 1;
                    } else {
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        let i = ((u128::from(rng) * data.keys.len() as u128) >> 64) as usize;
                        sink = sink.wrapping_add(m.get(u64_key(data.keys.get(i))).unwrap_or(0));
                    }
                }
                std::hint::black_box(sink);
                let ns = t.elapsed().as_nanos() as f64 / n as f64;
                done += n as u64;
                let s = m.stats();
                windows.push(Window {
                    index: name.into(),
                    accesses: done,
                    ns,
                    inserts: ins > 0,
                    directory_version: s.directory_version,
                    shortcut_version: s.shortcut_version,
                });
                inserts -= ins;
                left -= n;
            }
        }
    }
    if let Some(dir) = args.json.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text: String = windows
        .iter()
        .map(|w| serde_json::to_string(w).map(|s| s + "\n"))
        .collect::<Result<_, _>>()?;
    std::fs::write(&args.json, text).with_context(|| format!("writing {}", args.json.display()))?;
    std::fs::write(&args.svg, chart(&windows, args)?)
        .with_context(|| format!("writing {}", args.svg.display()))?;
    for name in ["shortcut-eh", "eh"] {
        let lookups: Vec<f64> = windows
            .iter()
            .filter(|w| w.index == name && !w.inserts)
            .map(|w| w.ns)
            .collect();
        let mut sorted = lookups.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
        println!(
            "{name}: median lookup window {median:.1} ns/access over {} windows",
            lookups.len()
        );
    }
    println!("wrote {} and {}", args.json.display(), args.svg.display());
    Ok(())
}

/// Both indexes' ns per access against accesses, the versions on a second axis.
fn chart(windows: &[Window], args: &SyncArgs) -> Result<String> {
    let x1 = windows.iter().map(|w| w.accesses).max().unwrap_or(1) as f64;
    let y1 = windows
        .iter()
        .filter(|w| !w.inserts)
        .map(|w| w.ns)
        .fold(0.0, f64::max)
        * 1.2;
    let v0 = windows
        .iter()
        .filter(|w| w.index == "shortcut-eh")
        .map(|w| w.directory_version)
        .min()
        .unwrap_or(0) as f64;
    let v1 = windows
        .iter()
        .filter(|w| w.index == "shortcut-eh")
        .map(|w| w.directory_version)
        .max()
        .unwrap_or(1) as f64;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, 640)).into_drawing_area();
        root.fill(&WHITE).map_err(crate::report::plot_err)?;
        let title = format!(
            "Shortcut in step: {} keys, waves of {} accesses, {}% inserts first",
            crate::markdown::thousands(args.keys as u64),
            crate::markdown::thousands(args.wave as u64),
            args.insert_percent
        );
        let mut chart = ChartBuilder::on(&root)
            .caption(title, crate::report::TITLE_FONT)
            .margin(16)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .right_y_label_area_size(70)
            .build_cartesian_2d(0.0..x1, 0.0..y1.max(1.0))
            .map_err(crate::report::plot_err)?
            .set_secondary_coord(0.0..x1, v0..(v1 + 1.0).max(v0 + 1.0));
        chart
            .configure_mesh()
            .x_desc("accesses")
            .y_desc("ns per access (windows of lookups)")
            .axis_desc_style(crate::report::DESC_FONT)
            .label_style(crate::report::LABEL_FONT)
            .light_line_style(BLACK.mix(0.05))
            .draw()
            .map_err(crate::report::plot_err)?;
        chart
            .configure_secondary_axes()
            .y_desc("directory version")
            .axis_desc_style(crate::report::DESC_FONT)
            .label_style(crate::report::LABEL_FONT)
            .draw()
            .map_err(crate::report::plot_err)?;
        for (name, colour) in [
            ("shortcut-eh", RGBColor(0x4e, 0x79, 0xa7)),
            ("eh", RGBColor(0xe1, 0x57, 0x59)),
        ] {
            let points: Vec<(f64, f64)> = windows
                .iter()
                .filter(|w| w.index == name && !w.inserts)
                .map(|w| (w.accesses as f64, w.ns))
                .collect();
            chart
                .draw_series(points.iter().map(|&p| Circle::new(p, 2, colour.filled())))
                .map_err(crate::report::plot_err)?
                .label(format!("{name}: lookups"))
                .legend(move |(x, y)| Circle::new((x + 10, y), 3, colour.filled()));
        }
        let versions = |f: fn(&Window) -> Option<u64>| -> Vec<(f64, f64)> {
            windows
                .iter()
                .filter(|w| w.index == "shortcut-eh")
                .filter_map(|w| f(w).map(|v| (w.accesses as f64, v as f64)))
                .collect()
        };
        let grey = RGBColor(0x6b, 0x6b, 0x6b);
        let green = RGBColor(0x59, 0xa1, 0x4f);
        chart
            .draw_secondary_series(LineSeries::new(
                versions(|w| Some(w.directory_version)),
                grey.stroke_width(2),
            ))
            .map_err(crate::report::plot_err)?
            .label("directory version")
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], grey.stroke_width(2))
            });
        chart
            .draw_secondary_series(LineSeries::new(
                versions(|w| w.shortcut_version),
                green.stroke_width(2),
            ))
            .map_err(crate::report::plot_err)?
            .label("shortcut version")
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], green.stroke_width(2))
            });
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font(crate::report::LABEL_FONT)
            .draw()
            .map_err(crate::report::plot_err)?;
        root.present().map_err(crate::report::plot_err)?;
    }
    Ok(svg)
}
