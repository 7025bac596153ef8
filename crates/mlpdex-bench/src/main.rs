//! `mlpdex-bench`: measures mlpdex's indexes against the best existing ones, on the same data,
//! in one run. See `mlpdex-bench --help` and the crate README.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

use mlpdex_bench::harness::spec::{Experiment, FilterSpec, HopeSpec, RunSpec};
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
    /// List indexes, datasets and workloads; with `--stats`, measure the generated datasets'
    /// shapes instead.
    List(ListArgs),
    /// Measure DRAM latency and memory-level parallelism on this machine (and cache the latency).
    MlpProbe(ProbeArgs),
    /// Measure range filters (SuRF) and Bloom filters: false-positive rate, query and build
    /// speed at each filter's bits per key (memory-efficient-search-trees.txt §4.3).
    Filter(FilterArgs),
    /// Measure HOPE encoders (memory-efficient-search-trees.txt ch. 6): compression rate,
    /// encoding speed and dictionary size per scheme and dictionary size limit.
    Hope(HopeArgs),
    /// Shortcut extendible hashing's mixed-workload experiment (vm-shortcuts-extendible-
    /// hashing.txt Figure 8): waves of inserts then lookups, the shortcut's version catching
    /// up with the directory's; writes a JSON of windows and an SVG chart.
    EhSync(EhSyncArgs),
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
    /// Dataset: rand-8, mono-8, rand-16, dec-a, dec-b, email, az, paths, urls, composite,
    /// u64:PATH, lines:PATH.
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
    /// Record the load's latency over time: mean ns per insert in windows of N inserts, in the
    /// JSON's `series` (for insert-latency plots during growth); 0 turns it off.
    #[arg(long, default_value_t = 0, value_parser = parse_count)]
    latency_series: usize,
}

#[derive(clap::Args, Debug)]
struct ListArgs {
    /// Instead of the lists, load every generated dataset and print one row of statistics
    /// for each: keys, mean length, mean prefix shared with the next key in sorted order (in
    /// bytes), and the number of distinct prefixes of 1, 2, 4, 8, 16, 32 and 64 bytes (a key
    /// shorter than that counts whole). Times go to stderr.
    #[arg(long)]
    stats: bool,
    /// Keys per dataset for `--stats` (accepts 10M, 500k).
    #[arg(long, default_value = "1M", value_parser = parse_count, requires = "stats")]
    keys: usize,
    /// Seed of the datasets for `--stats`.
    #[arg(long, default_value_t = 42, requires = "stats")]
    seed: u64,
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
struct EhSyncArgs {
    /// Keys loaded first (accepts 92M).
    #[arg(long, default_value = "92M", value_parser = parse_count)]
    keys: usize,
    /// Waves of accesses.
    #[arg(long, default_value_t = 4)]
    waves: usize,
    /// Accesses per wave (accepts 2M).
    #[arg(long, default_value = "2M", value_parser = parse_count)]
    wave: usize,
    /// Inserts at the start of each wave, in per cent of its accesses.
    #[arg(long, default_value_t = 1.0)]
    insert_percent: f64,
    /// Accesses per recorded window.
    #[arg(long, default_value_t = 10_000)]
    window: usize,
    /// Seed for the dataset and the lookups.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// JSON file for the windows (replaced).
    #[arg(long, default_value = "docs/results/shortcut-eh-sync.json")]
    json: PathBuf,
    /// SVG chart (replaced).
    #[arg(long, default_value = "docs/results/shortcut-eh-sync.svg")]
    svg: PathBuf,
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
        Command::List(args) if args.stats => list_stats(args.keys, args.seed),
        Command::List(_) => {
            list();
            Ok(())
        }
        Command::MlpProbe(args) => mlp_probe(args),
        Command::Filter(args) => filter_bench(args),
        Command::Hope(args) => hope_bench(args),
        Command::EhSync(a) => mlpdex_bench::eh_sync::run(&mlpdex_bench::eh_sync::SyncArgs {
            keys: a.keys,
            waves: a.waves,
            wave: a.wave,
            insert_percent: a.insert_percent,
            window: a.window,
            seed: a.seed,
            json: a.json,
            svg: a.svg,
        }),
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
    let mut spec = run_spec(
        &args,
        indexes.iter().map(|e| e.name.to_string()).collect(),
        dram_ns,
    )?;
    spec.dram_source = dram.as_ref().map(|d| d.describe());
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
    let (distribution, rounds) = (spec.distribution, spec.rounds);
    let measured = execute(&Experiment::Run(spec), args.json.as_deref())?;
    println!(
        "\n{} keys of {} ({distribution} distribution); median of {rounds} round(s), ± the \
         spread of the rounds; DRAM latency {}\n",
        measured
            .records
            .first()
            .map_or(args.keys as u64, |r| r.m().keys),
        args.dataset,
        dram.as_ref().map_or("not probed".into(), |d| d.describe())
    );
    print!("{}", table::format_table(&measured.records));
    print_notes(&measured);
    measured.check()
}

/// Runs `spec` on the engine (it validates the spec; children are this executable) and
/// appends the records to `json`, if given, before any failure is reported.
fn execute(spec: &Experiment, json: Option<&std::path::Path>) -> Result<harness::parent::Measured> {
    let exe = std::env::current_exe().context("locating this executable to run children")?;
    let measured = harness::parent::measure(spec, &exe, exec::progress_wanted())?;
    if let Some(path) = json {
        table::append_json(path, &measured.records)?;
    }
    Ok(measured)
}

/// The skipped measurements, after the table.
fn print_notes(measured: &harness::parent::Measured) {
    if !measured.skipped.is_empty() {
        println!();
        for why in &measured.skipped {
            println!("note: {why}");
        }
    }
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
    let mut all = Vec::new();
    let mut failures = Vec::new();
    for (i, e) in suite.experiments.iter().enumerate() {
        let mut spec = e.spec(dram_ns)?;
        if let Experiment::Run(s) = &mut spec {
            s.dram_source = dram.as_ref().map(|d| d.describe());
        }
        eprintln!(
            "suite {}: experiment {}/{}: {:?} of {}",
            args.name,
            i + 1,
            suite.experiments.len(),
            e.kind,
            spec.indexes().join(","),
        );
        let mut measured = execute(&spec, None)?;
        print!("{}", table::format_records(&measured.records));
        print_notes(&measured);
        failures.extend(measured.failures);
        for r in &mut measured.records {
            if let Some(p) = &mut r.m_mut().provenance {
                p.experiment = Some(i as u32 + 1);
            }
        }
        all.extend(measured.records);
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
    anyhow::ensure!(
        failures.is_empty(),
        "measurements failed: {}",
        failures.join("; ")
    );
    Ok(())
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
        dram_source: None,
        sample_every: args.sample_every,
        batch: args.batch,
        series_window: args.latency_series,
    };
    spec.validate()?;
    Ok(spec)
}

/// `filter`: the range-filter experiment on the engine: a child process per filter and
/// round builds it from a random half of the dataset and times its query loops, rounds
/// round-robin; prints the median round of each measurement and optionally appends JSON. A
/// false negative fails the command (after the results are written).
fn filter_bench(args: FilterArgs) -> Result<()> {
    let indexes = filter::parse_indexes(&args.index).map_err(anyhow::Error::msg)?;
    let spec = Experiment::Filter(FilterSpec {
        indexes: indexes.into_iter().map(|f| f.name).collect(),
        dataset: args.dataset.clone(),
        keys: args.keys,
        queries: parse_list(&args.query)?,
        ops: args.ops,
        seed: args.seed,
        rounds: args.repeat,
    });
    let measured = execute(&spec, args.json.as_deref())?;
    println!(
        "\n{} keys of {} stored; {} queries per workload; median of {} round(s), ± the spread \
         of the rounds\n",
        measured.records.first().map_or(0, |r| r.m().keys),
        args.dataset,
        args.ops,
        args.repeat
    );
    print!("{}", table::format_filter_table(&measured.records));
    let notes: Vec<&String> = measured
        .notes
        .iter()
        .filter(|n| n.contains("positive answer") || n.contains("bits per key, the size"))
        .chain(&measured.skipped)
        .collect();
    if !notes.is_empty() {
        println!();
        for n in notes {
            println!("note: {n}");
        }
    }
    measured.check()
}

/// `hope`: the HOPE encoder experiment on the engine: a child process per encoder and round
/// builds the dictionary from a 1% sample and times the encoding of the whole dataset.
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
    let spec = Experiment::Hope(HopeSpec {
        indexes: mlpdex_bench::ours::hope::encoder_names(&schemes, &limits),
        dataset: args.dataset.clone(),
        keys: args.keys,
        seed: args.seed,
        rounds: args.repeat,
    });
    let measured = execute(&spec, args.json.as_deref())?;
    println!(
        "\n{} keys of {}; dictionaries from a 1% sample; encoding time median of {} round(s)\n",
        measured.records.first().map_or(0, |r| r.m().keys),
        args.dataset,
        args.repeat
    );
    print!("{}", table::format_encoder_table(&measured.records));
    print_notes(&measured);
    measured.check()
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

/// `list --stats`: every generated dataset at `keys` keys, one row of [`dataset::stats`] each,
/// printed as soon as it is measured; generation and measuring times to stderr.
fn list_stats(keys: usize, seed: u64) -> Result<()> {
    use std::time::Instant;
    let names: Vec<&str> = dataset::generated().collect();
    let width = names
        .iter()
        .map(|n| n.len())
        .max()
        .unwrap_or(0)
        .max("dataset".len());
    println!(
        "generated datasets, {keys} keys, seed {seed}: mean length and mean prefix shared with \
         the sorted neighbour in bytes; pN: distinct N-byte prefixes"
    );
    print!(
        "{:<width$} {:>10} {:>8} {:>8}",
        "dataset", "keys", "length", "shared"
    );
    for depth in dataset::PREFIX_DEPTHS {
        print!(" {:>9}", format!("p{depth}"));
    }
    println!();
    for name in names {
        let start = Instant::now();
        let ds = dataset::load(name, keys, seed)?;
        let generated = start.elapsed();
        let s = dataset::stats(&ds.keys);
        eprintln!(
            "{name}: generated {} + {} reserve keys in {:.2} s, measured in {:.2} s",
            ds.keys.len(),
            ds.reserve.len(),
            generated.as_secs_f64(),
            (start.elapsed() - generated).as_secs_f64()
        );
        print!(
            "{name:<width$} {:>10} {:>8.1} {:>8.1}",
            s.keys, s.mean_len, s.mean_shared_prefix
        );
        for count in s.distinct_prefixes {
            print!(" {count:>9}");
        }
        println!();
    }
    Ok(())
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
