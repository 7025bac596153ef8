//! `mlpdex-bench`: measures mlpdex's indexes against the best existing ones, on the same data,
//! in one run. See `mlpdex-bench --help` and the crate README.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

use mlpdex_bench::harness::spec::RunSpec;
use mlpdex_bench::provenance::Provenance;
use mlpdex_bench::record::Record;
use mlpdex_bench::workload::Workload;
use mlpdex_bench::{
    alloc, dataset, exec, filter, harness, markdown, probe, registry, report, table,
};

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
    /// Measure range filters (SuRF) and Bloom filters: false-positive rate, query and build
    /// speed at each filter's bits per key (memory-efficient-search-trees.txt §4.3).
    Filter(FilterArgs),
    /// Measure HOPE encoders (memory-efficient-search-trees.txt ch. 6): compression rate,
    /// encoding speed and dictionary size per scheme and dictionary size limit.
    Hope(HopeArgs),
    /// Run a declarative suite (`bench/suites/NAME.toml`) and write `docs/results/NAME.json`
    /// and `docs/results/NAME.md`.
    Suite(SuiteArgs),
    /// Internal: serve one index for `run`, reading the experiment from stdin (the parent
    /// starts one child per index and round; see the harness module).
    #[command(hide = true)]
    Child,
    /// Write SVG charts from a JSON results file.
    Report {
        /// JSON-lines results file written by `run --json` or `filter --json`.
        #[arg(long)]
        json: PathBuf,
        /// Directory for the SVG files.
        #[arg(long)]
        out: PathBuf,
    },
    /// Write Markdown tables from a JSON results file (for docs: numbers are generated, not
    /// typed), optionally side by side with an older results file.
    Markdown {
        /// JSON-lines results file written by `run --json` or `filter --json`.
        #[arg(long)]
        json: PathBuf,
        /// An older results file of the same measurements, to compare with.
        #[arg(long)]
        before: Option<PathBuf>,
        /// The document's title.
        #[arg(long, default_value = "Measured results")]
        title: String,
        /// Markdown file to write.
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
    /// Comma-separated HOPE encoders for the byte-key indexes: none, single-char,
    /// double-char, 3-grams, 4-grams, alm, alm-improved; each such index is measured once per
    /// encoder, named `<index>+<scheme>` (`none` keeps the plain index).
    #[arg(long)]
    encoder: Option<String>,
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
    /// Rounds: every index is measured this many times, each round in fresh processes with the
    /// index order rotated; each reported figure is the median round.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Time every N-th operation on its own for latency percentiles (p50, p99, p99.9, max); a
    /// power of two, 0 to turn sampling off.
    #[arg(long, default_value_t = 64)]
    sample_every: usize,
    /// Send reads and lower bounds to each index in groups of up to N (indexes with a batched
    /// lookup overlap the group's cache misses; the others loop over it); 1 runs them one by one.
    #[arg(long, default_value_t = 1)]
    batch: usize,
}

#[derive(clap::Args, Debug)]
struct SuiteArgs {
    /// The suite's name: the file `<dir>/<name>.toml`.
    name: String,
    /// Directory of the suite files.
    #[arg(long, default_value = "bench/suites")]
    dir: PathBuf,
    /// Directory the results go to (`<name>.json`, replaced, and `<name>.md`).
    #[arg(long, default_value = "docs/results")]
    out: PathBuf,
    /// Measure DRAM latency again instead of using the cached figure.
    #[arg(long)]
    reprobe: bool,
    /// Do not probe DRAM latency; report no round-trip figures.
    #[arg(long)]
    no_probe: bool,
}

#[derive(clap::Args, Debug)]
struct FilterArgs {
    /// Comma-separated filters: surf-base, surf-hash-N, surf-real-N, surf-mixed-H-R, bloom-B,
    /// bloom (as many bits per key as the SuRF before it). Default: a Figure 4.4 sweep.
    #[arg(long, default_value = filter::DEFAULT_INDEXES)]
    index: String,
    /// Dataset (see `list`); 8-byte keys get integer range queries, others string ranges.
    #[arg(long, default_value = "rand-8")]
    dataset: String,
    /// Dataset size (accepts 10M, 500k); a random half of it is stored in the filters.
    #[arg(long, default_value = "10M", value_parser = parse_count)]
    keys: usize,
    /// Comma-separated query workloads: point, range, mixed.
    #[arg(long, default_value = "point,range,mixed")]
    query: String,
    /// Queries per workload, keys drawn uniformly from the whole dataset.
    #[arg(long, default_value = "1M", value_parser = parse_count)]
    ops: usize,
    /// Seed for the dataset, the stored half, the queries and the Bloom filters' hashing.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Rounds: every filter is built and queried this many times; each figure is the median.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Append one JSON object per measurement to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
struct HopeArgs {
    /// Comma-separated schemes: single-char, double-char, 3-grams, 4-grams, alm, alm-improved,
    /// or `all`.
    #[arg(long, default_value = "all")]
    scheme: String,
    /// Comma-separated dictionary size limits for the variable-interval schemes (accepts 64k).
    #[arg(long, default_value = "1k,4k,16k,64k")]
    limit: String,
    /// Dataset (see `list`).
    #[arg(long, default_value = "email")]
    dataset: String,
    /// Dataset size (accepts 10M, 500k); dictionaries are built from a 1% sample of it.
    #[arg(long, default_value = "10M", value_parser = parse_count)]
    keys: usize,
    /// Seed for the dataset.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Encoding passes over the dataset per encoder; the median is reported.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Append one JSON object per encoder to this file (workload `encode`).
    #[arg(long)]
    json: Option<PathBuf>,
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
                _ => return Err(format!("not a count: {s:?} (examples: 10M, 500k, 1000)")),
            };
            (&t[..i], m)
        }
        _ => (t, 1),
    };
    let x: f64 = digits
        .parse()
        .map_err(|_| format!("not a count: {s:?} (examples: 10M, 500k, 1000)"))?;
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
        Command::Child => harness::child::serve(),
        Command::Suite(args) => run_suite(args),
        Command::List => {
            list();
            Ok(())
        }
        Command::MlpProbe(args) => mlp_probe(args),
        Command::Filter(args) => filter_bench(args),
        Command::Hope(args) => hope_bench(args),
        Command::Markdown {
            json,
            before,
            title,
            out,
        } => {
            let md = markdown::render(&json, before.as_deref(), &title)?;
            std::fs::write(&out, md).with_context(|| format!("writing {}", out.display()))?;
            println!("{}", out.display());
            Ok(())
        }
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

/// `run`: validates the arguments, probes DRAM latency once, then hands the experiment to the
/// engine ([`harness::parent`]: a child process per index and round, measurements round-robin)
/// and reports the median round of each measurement.
fn run(args: RunArgs) -> Result<()> {
    ensure_page_setting(args.no_huge_pages)?;
    let list = match &args.encoder {
        Some(e) => registry::with_encoders(&args.index, e).map_err(anyhow::Error::msg)?,
        None => args.index.clone(),
    };
    let indexes = registry::resolve(&list).map_err(anyhow::Error::msg)?;
    let dram = if args.no_probe {
        None
    } else {
        Some(probe::dram_figure(args.reprobe)?)
    };
    let dram_ns = dram.as_ref().map(|d| d.ns);
    let spec = run_spec(
        &args,
        indexes.iter().map(|e| e.name.to_string()).collect(),
        dram_ns,
    )?;
    eprintln!(
        "mlpdex-bench: jemalloc thp:{}, mlpdex regions huge pages: {}, DRAM latency {}",
        alloc::thp_mode(),
        if mlpdex::HugePages::Auto.requested() {
            "on"
        } else {
            "off"
        },
        dram.as_ref()
            .map_or("not probed".to_string(), |d| d.describe())
    );
    let exe = std::env::current_exe().context("locating this executable to run children")?;
    let all = harness::parent::measure(&spec, &exe, exec::progress_wanted())?;
    if let Some(path) = &args.json {
        table::append_json(path, &all)?;
    }
    println!(
        "\n{} keys of {} ({} distribution); median of {} round(s); DRAM latency {}\n",
        all.first().map_or(args.keys as u64, |r| r.keys),
        args.dataset,
        spec.distribution,
        spec.rounds,
        dram.as_ref().map_or("not probed".into(), |d| d.describe())
    );
    print!("{}", table::format_table(&all));
    Ok(())
}

/// `suite`: every experiment of the suite on the engine, the records to `<out>/<name>.json`
/// (replacing it), the tables to `<out>/<name>.md`.
fn run_suite(args: SuiteArgs) -> Result<()> {
    let suite = mlpdex_bench::suite::load(&args.dir, &args.name)?;
    let dram = if args.no_probe {
        None
    } else {
        Some(probe::dram_figure(args.reprobe)?)
    };
    eprintln!(
        "suite {}: DRAM latency {}",
        args.name,
        dram.as_ref()
            .map_or("not probed".to_string(), |d| d.describe())
    );
    let dram_ns = dram.as_ref().map(|d| d.ns);
    let exe = std::env::current_exe().context("locating this executable to run children")?;
    let mut all = Vec::new();
    for (i, e) in suite.experiments.iter().enumerate() {
        let spec = e.spec(dram_ns)?;
        eprintln!(
            "suite {}: experiment {}/{}: {} on {} ({} keys)",
            args.name,
            i + 1,
            suite.experiments.len(),
            spec.indexes.join(","),
            spec.dataset,
            spec.keys
        );
        let rows = harness::parent::measure(&spec, &exe, exec::progress_wanted())?;
        print!("{}", table::format_table(&rows));
        all.extend(rows);
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let json = args.out.join(format!("{}.json", args.name));
    if json.exists() {
        std::fs::remove_file(&json).with_context(|| format!("replacing {}", json.display()))?;
    }
    table::append_json(&json, &all)?;
    let md_path = args.out.join(format!("{}.md", args.name));
    let md = markdown::render(&json, None, &suite.title)?;
    std::fs::write(&md_path, md).with_context(|| format!("writing {}", md_path.display()))?;
    println!("{}\n{}", json.display(), md_path.display());
    Ok(())
}

/// Gives every record without provenance `p` (in-process measurements: `filter`, `hope`).
fn stamp(records: &mut [Record], p: Provenance) {
    for r in records {
        r.provenance.get_or_insert_with(|| p.clone());
    }
}

/// The experiment `run`'s arguments describe.
fn run_spec(args: &RunArgs, indexes: Vec<String>, dram_ns: Option<f64>) -> Result<RunSpec> {
    let threads: Vec<usize> = args
        .threads
        .split(',')
        .map(|t| t.trim().parse::<usize>())
        .collect::<Result<_, _>>()
        .context("--threads takes comma-separated positive integers")?;
    let spec = RunSpec {
        indexes,
        dataset: args.dataset.clone(),
        keys: args.keys,
        seed: args.seed,
        workloads: Workload::parse_list(&args.workload).map_err(anyhow::Error::msg)?,
        modes: parse_list(&args.mode)?,
        ops: args.ops,
        distribution: args.distribution.parse().map_err(anyhow::Error::msg)?,
        threads,
        rounds: args.repeat,
        dram_ns,
        sample_every: args.sample_every,
        batch: args.batch,
    };
    spec.validate()?;
    Ok(spec)
}

/// `filter`: builds the filters from a random half of the dataset in this process (filters are
/// small and static, so no child processes), times the query loops, prints a table and
/// optionally appends JSON. A false negative fails the command.
fn filter_bench(args: FilterArgs) -> Result<()> {
    let indexes = filter::parse_indexes(&args.index).map_err(anyhow::Error::msg)?;
    let queries: Vec<filter::QueryKind> = parse_list(&args.query)?;
    if queries.is_empty() {
        bail!("--query needs at least one of point, range, mixed");
    }
    let t = Instant::now();
    let ds = dataset::load(&args.dataset, args.keys, args.seed)?;
    eprintln!(
        "dataset {}: {} keys (mean {:.1} bytes, {} range queries), built in {:.1} s",
        ds.name,
        ds.keys.len(),
        ds.keys.mean_len(),
        if ds.keys.fixed_width() == Some(8) {
            "integer"
        } else {
            "string"
        },
        t.elapsed().as_secs_f64()
    );
    let plan = filter::FilterPlan {
        indexes,
        queries,
        ops: args.ops,
        seed: args.seed,
        rounds: args.repeat.max(1),
    };
    let results = filter::measure(&ds, &plan)?;
    if let Some(path) = &args.json {
        let mut records = results.records.clone();
        stamp(
            &mut records,
            Provenance::now(args.seed, args.repeat, args.keys),
        );
        table::append_json(path, &records)?;
    }
    println!(
        "\n{} of {} keys of {} stored; {} queries per workload; median of {} round(s)\n",
        results.stored,
        ds.keys.len(),
        ds.name,
        args.ops,
        plan.rounds
    );
    print!("{}", table::format_filter_table(&results.records));
    if !results.notes.is_empty() {
        println!();
        for n in &results.notes {
            println!("note: {n}");
        }
    }
    Ok(())
}

fn hope_bench(args: HopeArgs) -> Result<()> {
    use mlpdex::hope::Scheme;
    let schemes: Vec<Scheme> = if args.scheme.trim() == "all" {
        Scheme::ALL.to_vec()
    } else {
        args.scheme
            .split(',')
            .map(str::trim)
            .map(|s| Scheme::from_name(s).ok_or_else(|| anyhow::anyhow!("unknown scheme {s:?}")))
            .collect::<Result<_>>()?
    };
    let limits: Vec<usize> = args
        .limit
        .split(',')
        .map(|s| parse_count_binary(s).map_err(anyhow::Error::msg))
        .collect::<Result<_>>()?;
    let ds = dataset::load(&args.dataset, args.keys, args.seed)?;
    eprintln!(
        "dataset {}: {} keys, mean {:.1} bytes",
        ds.name,
        ds.keys.len(),
        ds.keys.mean_len()
    );
    let rows = mlpdex_bench::ours::hope::sweep(&ds.keys, &schemes, &limits, args.repeat)?;
    println!(
        "\n{} keys of {}; dictionaries from a 1% sample; encode time median of {} pass(es)\n",
        ds.keys.len(),
        ds.name,
        args.repeat.max(1)
    );
    println!(
        "{:<13} {:>7} {:>8} {:>10} {:>6} {:>9} {:>8}",
        "scheme", "limit", "entries", "dict KiB", "CPR", "ns/byte", "build s"
    );
    let mut records = Vec::new();
    for r in &rows {
        let limit = if r.scheme.has_limit() {
            r.limit.to_string()
        } else {
            "-".into()
        };
        println!(
            "{:<13} {:>7} {:>8} {:>10.1} {:>6.2} {:>9.2} {:>8.2}",
            r.scheme.name(),
            limit,
            r.entries,
            r.facts.dictionary_bytes as f64 / 1024.0,
            r.facts.compression_rate,
            r.facts.encode_ns_per_byte,
            r.build_seconds
        );
        let bytes = ds.keys.total_key_bytes() as f64;
        let secs = r.facts.encode_ns_per_byte * bytes / 1e9;
        let n = ds.keys.len();
        let mut rec = Record {
            index: format!("{}-{}", r.scheme.name(), r.entries),
            dataset: ds.name.clone(),
            keys: n as u64,
            workload: "encode".into(),
            distribution: "uniform".into(),
            mode: "independent".into(),
            threads: 1,
            batch: 1,
            ops: n as u64,
            seconds: secs,
            mops: n as f64 / secs.max(1e-9) / 1e6,
            ns_per_op: secs * 1e9 / n.max(1) as f64,
            dram_rt_per_op: None,
            bytes_per_key: None,
            overhead_bytes_per_key: None,
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
        };
        r.facts.apply(&mut rec);
        records.push(rec);
    }
    if let Some(path) = &args.json {
        stamp(
            &mut records,
            Provenance::now(args.seed, args.repeat, args.keys),
        );
        table::append_json(path, &records)?;
    }
    Ok(())
}

/// Parses `64k`-style sizes with binary multipliers (dictionary entries).
fn parse_count_binary(s: &str) -> Result<usize, String> {
    parse_scaled(s, 1024)
}

/// Prints a titled section of `name  description` rows, the descriptions aligned one column
/// past the section's longest name.
fn print_section<S: AsRef<str>>(title: &str, rows: &[(S, &str)]) {
    println!("{title}");
    let width = rows
        .iter()
        .map(|(name, _)| name.as_ref().chars().count())
        .max()
        .unwrap_or(0);
    for (name, about) in rows {
        println!("  {:<width$}  {about}", name.as_ref());
    }
}

fn list() {
    let main: Vec<(&str, &str)> = registry::INDEXES
        .iter()
        .filter(|e| !e.is_variant())
        .map(|e| (e.name, e.about))
        .collect();
    print_section("indexes:", &main);
    print_section("sweep variants:", &registry::variant_rows());
    print_section("datasets:", dataset::DATASETS);
    print_section("workloads:", mlpdex_bench::workload::WORKLOADS);
    print_section("filters (the filter subcommand):", filter::FILTERS);
    let schemes: Vec<&str> = mlpdex::hope::Scheme::ALL.iter().map(|s| s.name()).collect();
    let bases: Vec<&str> = registry::ENCODABLE.iter().map(|(b, _)| *b).collect();
    println!("HOPE encoders (<index>+<scheme>, surf-...+<scheme>, or --encoder):");
    println!("  schemes: {}", schemes.join(", "));
    println!("  indexes: {}, and every SuRF filter", bases.join(", "));
}

fn mlp_probe(args: ProbeArgs) -> Result<()> {
    let mut cfg = probe::ProbeConfig {
        array_bytes: args.size,
        huge_pages: !args.no_huge_pages,
        ..probe::ProbeConfig::default()
    };
    cfg.ks.retain(|&k| k <= args.max_k);
    let c = probe::measure(&cfg)?;
    print!("{}", probe::format_probe(&c.result));
    let figure = probe::DramFigure::probed(&c);
    if let Some(w) = figure.warning() {
        eprintln!("{w}");
    }
    if probe::matches_quick_probe(&c.result) {
        let path = probe::cache_path();
        probe::save(&c, &path)?;
        eprintln!("DRAM latency {figure} cached in {}", path.display());
    } else {
        eprintln!(
            "DRAM latency not cached: `run` measures in units of the latency on a 4 GiB \
             huge-page array (the default --size, with huge pages)"
        );
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
