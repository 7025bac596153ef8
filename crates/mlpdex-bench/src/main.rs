//! `mlpdex-bench`: measures mlpdex's indexes against the best existing ones, on the same data,
//! in one run. See `mlpdex-bench --help` and the crate README.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

use mlpdex_bench::exec::{Mode, Plan, PlanSpec};
use mlpdex_bench::workload::{Distribution, Workload};
use mlpdex_bench::{alloc, dataset, exec, probe, registry, report, table};

#[derive(Parser, Debug)]
#[command(
    name = "mlpdex-bench",
    version,
    about = "Benchmark harness for mlpdex's ordered indexes"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Load indexes with a dataset and run workloads; print a table, optionally append JSON.
    Run(RunArgs),
    /// List indexes, datasets and workloads.
    List,
    /// Measure DRAM latency and memory-level parallelism on this machine (and cache the latency).
    MlpProbe(ProbeArgs),
    /// Write SVG charts from a JSON results file.
    Report {
        /// JSON-lines results file written by `run --json`.
        #[arg(long)]
        json: PathBuf,
        /// Directory for the SVG files.
        #[arg(long)]
        out: PathBuf,
    },
}

#[derive(clap::Args, Debug)]
struct RunArgs {
    /// Comma-separated index names, or `all`.
    #[arg(long, default_value = "all")]
    index: String,
    /// Dataset: rand-8, rand-16, dec-a, dec-b, email, az, u64:PATH, lines:PATH.
    #[arg(long, default_value = "rand-8")]
    dataset: String,
    /// Keys to load (accepts 10M, 500k, 2G).
    #[arg(long, default_value = "10M", value_parser = parse_count)]
    keys: usize,
    /// Comma-separated workloads: load, a-f, lookup-miss, lower-bound, scan-N.
    #[arg(long, default_value = "load,c,e")]
    workload: String,
    /// Operations per workload (default: 2M point operations; scans visit ~10M keys).
    #[arg(long, value_parser = parse_count)]
    ops: Option<usize>,
    /// Comma-separated execution modes: independent (throughput), dependent (latency).
    #[arg(long, default_value = "independent,dependent")]
    mode: String,
    /// Comma-separated thread counts.
    #[arg(long, default_value = "1")]
    threads: String,
    /// Key-choice distribution: uniform or zipfian (θ = 0.99).
    #[arg(long, default_value = "uniform")]
    distribution: String,
    /// Seed for datasets and workloads.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Append one JSON object per measurement to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Use 4 KiB pages for every index (re-executes with jemalloc's thp:never).
    #[arg(long)]
    no_huge_pages: bool,
    /// Measure DRAM latency again instead of using the cached figure.
    #[arg(long)]
    reprobe: bool,
    /// Do not probe DRAM latency; report no round-trip figures.
    #[arg(long)]
    no_probe: bool,
}

#[derive(clap::Args, Debug)]
struct ProbeArgs {
    /// Size of the probed array (accepts 4G, 512M).
    #[arg(long, default_value = "4G", value_parser = parse_bytes)]
    size: usize,
    /// Largest degree of parallelism K to measure.
    #[arg(long, default_value_t = 64)]
    max_k: usize,
    /// Use 4 KiB pages for the array.
    #[arg(long)]
    no_huge_pages: bool,
}

/// Parses counts like `10M`, `500k`, `2G`, `1000` (decimal multipliers).
fn parse_count(s: &str) -> Result<usize, String> {
    parse_scaled(s, 1000)
}

/// Parses sizes like `4G`, `512M` (binary multipliers).
fn parse_bytes(s: &str) -> Result<usize, String> {
    parse_scaled(s, 1024)
}

fn parse_scaled(s: &str, base: u64) -> Result<usize, String> {
    let t = s.trim();
    let (digits, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m = match c.to_ascii_lowercase() {
                'k' => base,
                'm' => base * base,
                'g' => base * base * base,
                _ => return Err(format!("unknown suffix in {s:?}; use k, M or G")),
            };
            (&t[..i], m)
        }
        _ => (t, 1),
    };
    let x: f64 = digits
        .parse()
        .map_err(|_| format!("not a number: {s:?} (examples: 10M, 500k, 1000)"))?;
    if !(x >= 0.0 && x.is_finite()) {
        return Err(format!("not a count: {s:?}"));
    }
    Ok((x * mult as f64).round() as usize)
}

fn parse_list<T: std::str::FromStr<Err = String>>(s: &str) -> Result<Vec<T>> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(|x| x.parse::<T>().map_err(anyhow::Error::msg))
        .collect()
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => run(args),
        Command::List => {
            list();
            Ok(())
        }
        Command::MlpProbe(args) => mlp_probe(args),
        Command::Report { json, out } => {
            let files = report::write_report(&json, &out)?;
            for f in files {
                println!("{}", f.display());
            }
            Ok(())
        }
    }
}

/// Re-executes this process with huge pages off when asked and not already done.
fn ensure_page_setting(no_huge_pages: bool) -> Result<()> {
    if !no_huge_pages || std::env::var(alloc::ENV_CONF).as_deref() == Ok(alloc::NO_HUGE_PAGES_CONF)
    {
        return Ok(());
    }
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe().context("locating this executable to re-run it")?;
    let err = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env(alloc::ENV_CONF, alloc::NO_HUGE_PAGES_CONF)
        .env("MLPDEX_HUGE_PAGES", "0")
        .exec();
    Err(err).context("re-executing with huge pages off")
}

fn run(args: RunArgs) -> Result<()> {
    ensure_page_setting(args.no_huge_pages)?;
    let indexes = registry::resolve(&args.index).map_err(anyhow::Error::msg)?;
    let workloads = Workload::parse_list(&args.workload).map_err(anyhow::Error::msg)?;
    let modes: Vec<Mode> = parse_list(&args.mode)?;
    let threads: Vec<usize> = args
        .threads
        .split(',')
        .map(|t| t.trim().parse::<usize>())
        .collect::<Result<_, _>>()
        .context("--threads takes comma-separated positive integers")?;
    let distribution: Distribution = args.distribution.parse().map_err(anyhow::Error::msg)?;
    if modes.is_empty() || threads.is_empty() || threads.contains(&0) || workloads.is_empty() {
        bail!("--mode, --threads and --workload each need at least one value (threads ≥ 1)");
    }
    if args.keys == 0 {
        bail!("--keys must be at least 1");
    }

    let dram_ns = if args.no_probe {
        None
    } else {
        Some(probe::dram_latency_ns(args.reprobe)?)
    };
    eprintln!(
        "mlpdex-bench: jemalloc thp:{}, mlpdex regions huge pages: {}, DRAM latency {}",
        alloc::thp_mode(),
        if mlpdex::substrate::region::huge_pages_enabled() {
            "on"
        } else {
            "off"
        },
        dram_ns.map_or("not probed".to_string(), |d| format!("{d:.0} ns"))
    );
    let t = Instant::now();
    let ds = dataset::load(&args.dataset, args.keys, args.seed)?;
    eprintln!(
        "dataset {}: {} keys (mean {:.1} bytes), {} in reserve, built in {:.1} s",
        ds.name,
        ds.keys.len(),
        ds.keys.mean_len(),
        ds.reserve.len(),
        t.elapsed().as_secs_f64()
    );
    let spec = PlanSpec {
        workloads,
        modes,
        ops: args.ops,
        distribution,
        threads,
        seed: args.seed,
    };
    let t = Instant::now();
    let plan = Plan::prepare(ds, &spec, dram_ns, exec::progress_wanted())?;
    eprintln!("workloads prepared in {:.1} s", t.elapsed().as_secs_f64());

    let mut all = Vec::new();
    for entry in indexes {
        let t = Instant::now();
        match (entry.run)(entry.name, &plan) {
            Ok(exec::IndexRun { records, notes }) => {
                for n in notes {
                    eprintln!("  {n}");
                }
                for r in &records {
                    eprintln!(
                        "  {:<12} {:<11} {:<11} {}t {:>9.3} Mops/s {:>9.1} ns/op",
                        r.index, r.workload, r.mode, r.threads, r.mops, r.ns_per_op
                    );
                }
                if let Some(path) = &args.json {
                    table::append_json(path, &records)?;
                }
                all.extend(records);
            }
            Err(e) => eprintln!("  {}: skipped: {e:#}", entry.name),
        }
        eprintln!(
            "  {} done in {:.1} s",
            entry.name,
            t.elapsed().as_secs_f64()
        );
    }
    println!(
        "\n{} keys of {} ({} distribution); DRAM latency {}\n",
        plan.dataset.keys.len(),
        plan.dataset.name,
        plan.distribution,
        dram_ns.map_or("not probed".into(), |d| format!("{d:.0} ns"))
    );
    print!("{}", table::format_table(&all));
    Ok(())
}

fn list() {
    println!("indexes:");
    for e in registry::INDEXES {
        println!("  {:<14} {}", e.name, e.about);
    }
    println!("datasets:");
    for (name, about) in dataset::DATASETS {
        println!("  {name:<14} {about}");
    }
    println!("workloads:");
    for (name, about) in mlpdex_bench::workload::WORKLOADS {
        println!("  {name:<14} {about}");
    }
}

fn mlp_probe(args: ProbeArgs) -> Result<()> {
    let mut cfg = probe::ProbeConfig {
        array_bytes: args.size,
        huge_pages: !args.no_huge_pages,
        ..probe::ProbeConfig::default()
    };
    cfg.ks.retain(|&k| k <= args.max_k);
    let r = probe::run_probe(&cfg)?;
    print!("{}", probe::format_probe(&r));
    if cfg.huge_pages {
        let path = probe::cache_path();
        probe::save(&r, &path)?;
        eprintln!("DRAM latency cached in {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_parse_with_suffixes() {
        assert_eq!(parse_count("10M"), Ok(10_000_000));
        assert_eq!(parse_count("500k"), Ok(500_000));
        assert_eq!(parse_count("1.5M"), Ok(1_500_000));
        assert_eq!(parse_count("1000"), Ok(1000));
        assert_eq!(parse_bytes("4G"), Ok(4 << 30));
        assert!(parse_count("ten").is_err());
        assert!(parse_count("5x").is_err());
        assert!(parse_count("-1").is_err());
    }
}
