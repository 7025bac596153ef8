//! Running workloads against an index: the two execution modes, threads, timing and memory.
//!
//! # Execution modes
//!
//! `independent` is a plain loop over the operations. The CPU may overlap consecutive
//! operations (out-of-order execution runs ahead into the next lookup while the previous one
//! waits on DRAM), so time per operation measures *throughput*.
//!
//! `dependent` makes each operation's input depend on the previous operation's *result*, so the
//! CPU cannot start operation `i + 1` before operation `i` has produced its answer, and time per
//! operation measures *latency* — the quantity MLP designs reduce (mlp-data-structures.txt §4.4,
//! "query encryption"). The technique, in `exec_ops`:
//!
//! ```text
//! mask = black_box(0)              // zero, but the compiler cannot know it
//! dep  = 0
//! for i in 0..n:
//!     j   = i + dep                // always i; yet its address waits for `dep`
//!     ans = run(ops[j], keys[j])   // the key's address depends on the previous answer
//!     dep = ans & mask             // data dependency on the answer: cheap (one AND)
//! ```
//!
//! `black_box` hides the mask's value from the compiler, which therefore has to keep the
//! dependency; the CPU has no value prediction, so it must wait for the answer's load before it
//! can compute `j`'s address. Keys are laid out in operation order ([`crate::workload::Ops`]), so
//! fetching `keys[j]` is a streaming access that costs no DRAM round trip of its own.
//!
//! An operation that finds nothing answers with a constant chosen after a branch, and branch
//! prediction would let the CPU run ahead past it. For those answers the loop executes `lfence`,
//! which on x86-64 does not let later instructions start before every earlier one — including
//! the lookup's loads — has completed. On other targets misses are serialized only as far as the
//! index's own data flow goes.
//!
//! # Batched indexes
//!
//! With `--batch B`, every index gets the run's operations in the same groups of `B`: an
//! index with a batched lookup answers a group of reads at once
//! ([`BenchIndex::get_batch`]), the others loop over it. An index that executes whole
//! batches on its own pool of threads ([`BenchIndex::BATCHED`], PI) gets each group of `B`
//! consecutive operations of any kind as one batch from one driving thread, with its pool
//! sized to the run's thread count, while `--threads T` runs the one-at-a-time indexes on `T`
//! threads, each looping over its contiguous share of the same operations. Both are timed by
//! the wall clock over all operations, so `mops` compares directly.
//!
//! # Memory
//!
//! Each index is measured by jemalloc's `stats.allocated` before and after its load (the dataset
//! and the operation lists are allocated before, so they do not count), plus the regions it maps
//! outside the allocator ([`BenchIndex::mapped_bytes`]).

use std::hint::black_box;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::adapter::{BenchIndex, value_of};
use crate::alloc::allocated_bytes;
use crate::dataset::Dataset;
use crate::keys::Keys;
use crate::record::{IndexRecord, Measurement, Record, Series};
use crate::workload::{Distribution, Fresh, Op, OpKind, Ops, Workload};

/// How operations follow one another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A plain loop: throughput.
    Independent,
    /// Each operation's key position depends on the previous answer: latency.
    Dependent,
}

impl Mode {
    /// Stable name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Independent => "independent",
            Mode::Dependent => "dependent",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "independent" => Ok(Mode::Independent),
            "dependent" => Ok(Mode::Dependent),
            _ => Err(format!(
                "unknown mode {s:?}; expected independent or dependent"
            )),
        }
    }
}

/// Operations prepared for one (round, workload, mode), generated identically for every index
/// so all of them execute the same sequence.
#[derive(Debug)]
pub struct Run {
    /// The round (0-based) this run belongs to.
    pub round: usize,
    /// The workload.
    pub workload: Workload,
    /// The execution mode.
    pub mode: Mode,
    /// The operations and their keys.
    pub ops: Ops,
}

/// Everything one `mlpdex-bench run` measures, prepared before any index is built.
#[derive(Debug)]
pub struct Plan {
    /// The dataset; its `keys` are the load set.
    pub dataset: Dataset,
    /// Whether `load` is reported (the load always happens).
    pub report_load: bool,
    /// Mode of the load loop (the first mode asked for).
    pub load_mode: Mode,
    /// Workloads other than `load`, numbered as in [`PlanSpec::run_list`]; `None` for runs of
    /// rounds this process does not serve ([`PlanSpec::only_round`]).
    pub runs: Vec<Option<Run>>,
    /// Key distribution of the workloads.
    pub distribution: Distribution,
    /// Thread counts to run each workload with.
    pub threads: Vec<usize>,
    /// Latency of one dependent DRAM access, to express times in round trips.
    pub dram_ns: Option<f64>,
    /// Show progress bars on long loads (stdout is a terminal).
    pub progress: bool,
    /// Latency sampling interval (see [`PlanSpec::sample_every`]).
    pub sample_every: usize,
    /// Batch size (see [`PlanSpec::batch`]).
    pub batch: usize,
    /// Latency-series window (see [`PlanSpec::series_window`]).
    pub series_window: usize,
    /// The load set's mean prefix shared with the sorted neighbour, in bytes, for every
    /// record's `mean_shared_prefix`; `None` above [`SHARED_PREFIX_MAX_KEYS`] keys.
    pub mean_shared_prefix: Option<f64>,
}

/// The largest load set whose mean shared prefix [`Plan::prepare`] measures.
///
/// [`crate::dataset::stats`] sorts references to the keys (16 bytes each; the keys are not
/// copied): about 1–2 s and 64 MiB at 4M keys, a couple of seconds and 160 MiB at 10M. It runs
/// once per process, that is per index and round, before anything is timed, and its memory is
/// freed before the load. At 50M keys it would take 800 MiB and over five times as long in
/// every child, for a figure only the long-key charts use: above this bound records go
/// without it.
pub const SHARED_PREFIX_MAX_KEYS: usize = 16_000_000;

/// Workload-generation parameters for [`Plan::prepare`].
#[derive(Clone, Debug)]
pub struct PlanSpec {
    /// Workloads in order; `load` among them only controls reporting.
    pub workloads: Vec<Workload>,
    /// Modes in order.
    pub modes: Vec<Mode>,
    /// Operations per workload; `None` picks [`default_ops`].
    pub ops: Option<usize>,
    /// Key distribution.
    pub distribution: Distribution,
    /// Thread counts.
    pub threads: Vec<usize>,
    /// Seed for operation generation.
    pub seed: u64,
    /// Rounds: each (workload, mode) is measured once per round, on operations of its own.
    pub rounds: usize,
    /// Prepare only this round's runs (a child process serves one round); `None` for all.
    pub only_round: Option<usize>,
    /// Time every `sample_every`-th operation on its own for latency percentiles (a power of
    /// two; 0 turns sampling off). See [`Latency`].
    pub sample_every: usize,
    /// Reads and lower bounds go to the index in groups of up to this many (1: one by one).
    pub batch: usize,
    /// Record the load's latency over time: the mean ns per insert of every window of this
    /// many inserts (0: off). Single-threaded loads only.
    pub series_window: usize,
}

impl PlanSpec {
    /// The (round, workload, mode) of every run, in the order of [`Plan::runs`]: rounds, then
    /// workloads, then modes. Schedulers outside the process index runs by this list.
    pub fn run_list(&self) -> Vec<(usize, Workload, Mode)> {
        let mut v = Vec::new();
        for round in 0..self.rounds.max(1) {
            for &w in self.workloads.iter().filter(|&&w| w != Workload::Load) {
                for &m in &self.modes {
                    v.push((round, w, m));
                }
            }
        }
        v
    }
}

/// Default number of operations for a workload: 2M point operations, and for scans as many as
/// visit about 10M keys in all.
pub fn default_ops(w: Workload) -> usize {
    match w {
        Workload::E => 200_000,
        Workload::Scan(n) => (10_000_000 / n.max(1)).clamp(10_000, 2_000_000),
        _ => 2_000_000,
    }
}

impl Plan {
    /// Generates every (workload, mode) operation list up front, and measures the load set's
    /// mean shared prefix (up to [`SHARED_PREFIX_MAX_KEYS`] keys).
    pub fn prepare(
        dataset: Dataset,
        spec: &PlanSpec,
        dram_ns: Option<f64>,
        progress: bool,
    ) -> Result<Plan> {
        let mut fresh = Fresh::new();
        let mut runs = Vec::new();
        let list = spec.run_list();
        // Inserts (5% of d and e) take fresh keys from half the reserve, and every run needs
        // its own; scale default op counts down so small datasets still have enough. An
        // explicit --ops that asks for too many is an error from `generate` instead.
        let inserting = list
            .iter()
            .filter(|(_, w, _)| matches!(w, Workload::D | Workload::E))
            .count()
            .max(1);
        let insert_budget = dataset.reserve.len() / 2 / inserting;
        let max_inserting_ops = (insert_budget * 18).max(1);
        for (i, (round, w, mode)) in list.into_iter().enumerate() {
            if spec.only_round.is_some_and(|r| r != round) {
                runs.push(None);
                continue;
            }
            let n_ops = spec.ops.unwrap_or_else(|| match w {
                Workload::D | Workload::E => default_ops(w).min(max_inserting_ops),
                _ => default_ops(w),
            });
            let seed = spec.seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let ops =
                crate::workload::generate(w, spec.distribution, &dataset, n_ops, &mut fresh, seed)?;
            runs.push(Some(Run {
                round,
                workload: w,
                mode,
                ops,
            }));
        }
        let mean_shared_prefix = (dataset.keys.len() <= SHARED_PREFIX_MAX_KEYS)
            .then(|| crate::dataset::stats(&dataset.keys).mean_shared_prefix);
        Ok(Plan {
            dataset,
            report_load: spec.workloads.contains(&Workload::Load),
            load_mode: spec.modes.first().copied().unwrap_or(Mode::Independent),
            runs,
            distribution: spec.distribution,
            threads: spec.threads.clone(),
            dram_ns,
            progress,
            sample_every: spec.sample_every,
            batch: spec.batch.max(1),
            series_window: spec.series_window,
            mean_shared_prefix,
        })
    }
}

/// Why a workload was not run on an index.
pub fn unsupported_reason<I: BenchIndex>(w: Workload, threads: usize) -> Option<&'static str> {
    let caps = I::CAPS;
    if w.writes() && w != Workload::Load && !caps.writes {
        Some("static index: no inserts or updates")
    } else if w.ordered() && !caps.ordered {
        Some("unordered index: no scans or seeks")
    } else if I::BATCHED && w == Workload::F {
        Some(
            "batched index: a read-modify-write's write needs its read's answer, which a batch gives only at its end",
        )
    } else if threads > 1 && w.writes() && !caps.concurrent && !I::BATCHED {
        Some("single-threaded index: no concurrent writes")
    } else {
        None
    }
}

/// What a driver asks a served index to do (on the wire: one JSON object per line, see
/// [`crate::harness::protocol`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "request", rename_all = "kebab-case")]
pub enum Request {
    /// Drop the index (if any) and load a new one from the load set, timing it.
    Load,
    /// Measure `plan.runs[run]` on `threads` threads.
    Run {
        /// Position in [`Plan::runs`].
        run: usize,
        /// Threads to run it with.
        threads: usize,
    },
}

/// The outcome of a [`Request`].
#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)] // one reply per measurement: its size does not matter
pub enum Reply {
    /// The measurement.
    Record(Record),
    /// The index cannot serve this workload; why.
    Skipped(String),
}

/// Whoever schedules the measurements of an index: the parent process through a pipe, or
/// [`RunAll`] in-process.
pub trait Driver {
    /// The next request, or `None` when done.
    fn next(&mut self) -> Result<Option<Request>>;
    /// The outcome of a `Load`: its record (`None` unless `load` is reported) and notes (load
    /// time, memory, huge-page use).
    fn loaded(&mut self, load: Option<Record>, notes: Vec<String>) -> Result<()>;
    /// The outcome of a `Run`.
    fn reply(&mut self, reply: Reply) -> Result<()>;
}

/// A [`Driver`] that loads once, then measures every run with every thread count in plan
/// order, and keeps all records and notes.
#[derive(Debug, Default)]
pub struct RunAll {
    queue: std::collections::VecDeque<Request>,
    /// Records in the order measured (the load first, when reported).
    pub records: Vec<Record>,
    /// Notes, including one per skipped workload.
    pub notes: Vec<String>,
}

impl RunAll {
    /// A driver for a load and then every run of `plan` with each of its thread counts.
    pub fn new(plan: &Plan) -> RunAll {
        let runs = plan.threads.iter().flat_map(|&threads| {
            (0..plan.runs.len())
                .filter(|&run| plan.runs[run].is_some())
                .map(move |run| Request::Run { run, threads })
        });
        RunAll {
            queue: std::iter::once(Request::Load).chain(runs).collect(),
            ..RunAll::default()
        }
    }
}

impl RunAll {
    /// A driver that sends exactly `requests`, in order.
    pub fn with_requests(requests: Vec<Request>) -> RunAll {
        RunAll {
            queue: requests.into(),
            ..RunAll::default()
        }
    }
}

impl Driver for RunAll {
    fn next(&mut self) -> Result<Option<Request>> {
        Ok(self.queue.pop_front())
    }
    fn loaded(&mut self, load: Option<Record>, notes: Vec<String>) -> Result<()> {
        self.records.extend(load);
        self.notes.extend(notes);
        Ok(())
    }
    fn reply(&mut self, reply: Reply) -> Result<()> {
        match reply {
            Reply::Record(r) => self.records.push(r),
            Reply::Skipped(why) => {
                if !self.notes.contains(&why) {
                    self.notes.push(why);
                }
            }
        }
        Ok(())
    }
}

/// Serves `driver`'s requests on index `I`: `Load` (re)builds it from the plan's load set,
/// timing the load and measuring its memory; `Run` measures a prepared run on it.
///
/// A second `Load` drops the index first. `mlpdex-bench run` never sends one: some indexes get
/// slower with each reload in one process (congee's `c` went 1.92 → 1.58 → 1.37 Mops/s over
/// three, against 1.8–2.2 for first loads in fresh processes), so every round uses fresh
/// processes instead.
pub fn serve<I: BenchIndex>(name: &str, plan: &Plan, driver: &mut dyn Driver) -> Result<()> {
    let mut index: Option<(I, f64)> = None;
    while let Some(request) = driver.next()? {
        match request {
            Request::Load => {
                drop(index.take());
                let (built, load, notes) = load_index::<I>(name, plan)?;
                index = Some(built);
                driver.loaded(load, notes)?;
            }
            Request::Run { run, threads } => {
                let Some((idx, bytes_per_key)) = index.as_mut() else {
                    anyhow::bail!("run requested before the first load");
                };
                let Some(run) = plan.runs.get(run).and_then(Option::as_ref) else {
                    anyhow::bail!(
                        "run {run} is not prepared in this process (the plan numbers {})",
                        plan.runs.len()
                    );
                };
                if let Some(why) = unsupported_reason::<I>(run.workload, threads) {
                    driver.reply(Reply::Skipped(format!(
                        "{name}: skipped {} with {threads} thread(s): {why}",
                        run.workload
                    )))?;
                    continue;
                }
                idx.before_run();
                let (secs, mut samples) = if I::BATCHED {
                    idx.set_threads(threads)?;
                    time_batched(idx, &run.ops, run.mode, plan.sample_every, plan.batch)
                } else if threads == 1 {
                    time_exclusive(idx, &run.ops, run.mode, plan.sample_every, plan.batch)
                } else {
                    time_shared(
                        idx,
                        &run.ops,
                        run.mode,
                        threads,
                        plan.sample_every,
                        plan.batch,
                    )
                };
                idx.after_run();
                let mut r = record(
                    name,
                    plan,
                    run.workload,
                    run.mode,
                    threads,
                    run.ops.ops.len(),
                    secs,
                    *bytes_per_key,
                );
                r.hope = idx.hope_facts();
                r.merges = idx.take_merges();
                if let Some(l) = Latency::of(&mut samples) {
                    l.apply(&mut r.m);
                }
                let r = Record::Index(r);
                driver.reply(Reply::Record(r))?;
            }
        }
    }
    Ok(())
}

/// Builds and loads index `I`; returns it with its bytes per key, the load record (when
/// reported) and notes.
#[allow(clippy::type_complexity)]
fn load_index<I: BenchIndex>(
    name: &str,
    plan: &Plan,
) -> Result<((I, f64), Option<Record>, Vec<String>)> {
    let keys = &plan.dataset.keys;
    let n = keys.len();
    let load_threads = if I::CAPS.concurrent || I::BATCHED {
        plan.threads.first().copied().unwrap_or(1)
    } else {
        1
    };
    let mut notes = Vec::new();
    let load_ops = if I::BATCHED {
        vec![
            Op {
                kind: OpKind::Insert,
                len: 0
            };
            plan.batch.max(1)
        ]
    } else {
        Vec::new()
    };
    let before = allocated_bytes();
    let start = Instant::now();
    let mut index = I::create(keys)?;
    let mut series = None;
    let mut load_latency = None;
    if I::CAPS.writes {
        if I::BATCHED {
            index.set_threads(load_threads)?;
            load_batched(&mut index, keys, &load_ops);
        } else if load_threads > 1 {
            load_shared(&index, keys, load_threads);
        } else {
            (series, load_latency) = load_exclusive(
                &mut index,
                keys,
                plan.load_mode,
                plan.progress,
                name,
                plan.series_window,
            );
        }
    }
    index.finish_load();
    let load_seconds = start.elapsed().as_secs_f64();
    let owned = allocated_bytes().saturating_sub(before) + index.mapped_bytes();
    if let (Some(huge), Some(anon)) = (
        crate::probe::anon_huge_page_bytes(),
        crate::probe::anon_bytes(),
    ) {
        notes.push(format!(
            "{name}: loaded {n} keys in {load_seconds:.2} s; owns {:.1} MiB; process anonymous memory {:.0} MiB, of which {:.0} MiB on huge pages",
            owned as f64 / 1048576.0,
            anon as f64 / 1048576.0,
            huge as f64 / 1048576.0
        ));
    }
    notes.extend(
        index
            .notes(n)
            .into_iter()
            .map(|note| format!("{name}: {note}")),
    );
    let bytes_per_key = owned as f64 / n.max(1) as f64;
    // The load's merges go in its record, or nowhere when the load is not reported.
    let merges = index.take_merges();
    let load = plan.report_load.then(|| {
        let mode = if I::CAPS.writes && load_threads == 1 && !I::BATCHED {
            plan.load_mode
        } else {
            Mode::Independent
        };
        let mut r = record(
            name,
            plan,
            Workload::Load,
            mode,
            load_threads,
            n,
            load_seconds,
            bytes_per_key,
        );
        r.hope = index.hope_facts();
        r.m.series = series;
        if let Some(l) = load_latency {
            l.apply(&mut r.m);
        }
        r.merges = merges;
        Record::Index(r)
    });
    Ok(((index, bytes_per_key), load, notes))
}

/// A measurement record for index `name` on `plan`.
#[allow(clippy::too_many_arguments)]
fn record(
    name: &str,
    plan: &Plan,
    workload: Workload,
    mode: Mode,
    threads: usize,
    ops: usize,
    secs: f64,
    bytes_per_key: f64,
) -> IndexRecord {
    let secs = secs.max(1e-9);
    let ns_per_op = secs * 1e9 * threads as f64 / ops.max(1) as f64;
    IndexRecord {
        m: Measurement {
            index: name.to_string(),
            dataset: plan.dataset.name.clone(),
            keys: plan.dataset.keys.len() as u64,
            ops: ops as u64,
            seconds: secs,
            mops: ops as f64 / secs / 1e6,
            ns_per_op,
            ..Measurement::default()
        },
        workload,
        distribution: plan.distribution,
        mode,
        threads: threads as u32,
        batch: plan.batch as u32,
        dram_rt_per_op: plan.dram_ns.map(|d| ns_per_op / d),
        bytes_per_key: Some(bytes_per_key),
        overhead_bytes_per_key: Some(bytes_per_key - plan.dataset.raw_bytes_per_key()),
        mean_key_len: Some(plan.dataset.keys.mean_len()),
        mean_shared_prefix: plan.mean_shared_prefix,
        hope: None,
        merges: Vec::new(),
    }
}

/// Inserts the load set in order, timing nothing itself; shows a progress bar after a second.
///
/// With `window > 0`, the inserts go in chunks of `window` keys, each timed, and the mean ns per
/// insert of each chunk comes back as a [`Series`]: one clock read per chunk, nothing per key.
///
/// With a series, every insert is also timed on its own (one clock read per insert, the time
/// since the previous one ended) into a [`LoadHistogram`], for the load's percentiles and its
/// slowest insert: a rehash or a split shows there, where a window's mean spreads it out.
fn load_exclusive<I: BenchIndex>(
    index: &mut I,
    keys: &Keys,
    mode: Mode,
    progress: bool,
    name: &str,
    window: usize,
) -> (Option<Series>, Option<Latency>) {
    let chunk = if window > 0 { window } else { 1 << 16 };
    let mut hist = (window > 0).then(LoadHistogram::default);
    let started = Instant::now();
    let mut bar: Option<indicatif::ProgressBar> = None;
    let mut windows = Vec::new();
    let mut at = 0;
    let mut last = Instant::now();
    while at < keys.len() {
        let end = (at + chunk).min(keys.len());
        match (mode, &mut hist) {
            (_, Some(h)) => load_chunk_timed(index, keys, at, end, h),
            (Mode::Independent, None) => load_chunk::<I, false>(index, keys, at, end),
            (Mode::Dependent, None) => load_chunk::<I, true>(index, keys, at, end),
        }
        if window > 0 {
            let now = Instant::now();
            windows.push((now - last).as_nanos() as f64 / (end - at) as f64);
            last = now;
        }
        at = end;
        if progress && bar.is_none() && started.elapsed() > Duration::from_secs(1) {
            let b = indicatif::ProgressBar::new(keys.len() as u64)
                .with_message(format!("loading {name}"));
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{msg} {bar:40} {pos}/{len} keys, eta {eta}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            // The bar appears a second into the load: start it where the load is, and let the
            // ETA estimate from here rather than from a jump out of zero.
            b.set_position(at as u64);
            b.reset_eta();
            bar = Some(b);
        }
        if let Some(b) = &bar {
            b.set_position(at as u64);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    (
        (window > 0).then_some(Series {
            window: window as u64,
            ns: windows,
        }),
        hist.and_then(|h| h.latency()),
    )
}

/// Inserts keys `from..to`, each timed on its own into `hist` (see [`load_exclusive`]).
#[inline(never)]
fn load_chunk_timed<I: BenchIndex>(
    index: &mut I,
    keys: &Keys,
    from: usize,
    to: usize,
    hist: &mut LoadHistogram,
) {
    let mut last = Instant::now();
    for i in from..to {
        black_box(index.insert(keys.get(i), value_of(i)));
        let now = Instant::now();
        hist.add((now - last).as_nanos() as u64);
        last = now;
    }
}

/// Latencies of every insert of a load, as counts in buckets of 1/32 relative width (a
/// 100M-key load would take 400 MB as samples), and the exact slowest.
#[derive(Clone, Debug)]
pub struct LoadHistogram {
    counts: Vec<u64>,
    max: u64,
}

impl Default for LoadHistogram {
    fn default() -> Self {
        LoadHistogram {
            counts: vec![0; 64 * 32],
            max: 0,
        }
    }
}

impl LoadHistogram {
    /// The bucket of `ns`: exact below 32, then 32 buckets for each power of two.
    fn bucket(ns: u64) -> usize {
        if ns < 32 {
            return ns as usize;
        }
        let e = 63 - ns.leading_zeros() as usize;
        (e - 4) * 32 + ((ns >> (e - 5)) & 31) as usize
    }

    /// The largest value of bucket `b`.
    fn top(b: usize) -> u64 {
        if b < 32 {
            return b as u64;
        }
        let (e, sub) = (b / 32 + 4, (b % 32) as u64);
        ((32 + sub + 1) << (e - 5)) - 1
    }

    /// Counts one insert of `ns`.
    pub fn add(&mut self, ns: u64) {
        self.counts[Self::bucket(ns)] += 1;
        self.max = self.max.max(ns);
    }

    /// The percentiles (each a bucket's top, the maximum exact), or `None` when empty.
    pub fn latency(&self) -> Option<Latency> {
        let n: u64 = self.counts.iter().sum();
        if n == 0 {
            return None;
        }
        let rank = |q: f64| {
            let want = ((q * n as f64).ceil() as u64).clamp(1, n);
            let mut seen = 0;
            for (b, &c) in self.counts.iter().enumerate() {
                seen += c;
                if seen >= want {
                    return (Self::top(b).min(self.max)) as f64;
                }
            }
            self.max as f64
        };
        Some(Latency {
            p50_ns: rank(0.5),
            p99_ns: rank(0.99),
            p999_ns: rank(0.999),
            max_ns: self.max as f64,
        })
    }
}

#[inline(never)]
fn load_chunk<I: BenchIndex, const DEP: bool>(index: &mut I, keys: &Keys, from: usize, to: usize) {
    let mask = black_box(0usize);
    let mut dep = 0usize;
    for i in from..to {
        let j = i + dep;
        let ans = index.insert(keys.get(j), value_of(j));
        if DEP {
            dep = depend(ans, mask);
        }
    }
    black_box(dep);
}

/// Inserts the load set in order in batches of `ops.len()` inserts (a batched index).
fn load_batched<I: BenchIndex>(index: &mut I, keys: &Keys, ops: &[Op]) {
    let mut out = vec![None; ops.len()];
    let mut at = 0;
    while at < keys.len() {
        let n = ops.len().min(keys.len() - at);
        index.execute_batch(&ops[..n], keys, at, &mut out[..n]);
        at += n;
    }
    black_box(&out);
}

fn load_shared<I: BenchIndex>(index: &I, keys: &Keys, threads: usize) {
    let n = keys.len();
    std::thread::scope(|s| {
        for t in 0..threads {
            let (lo, hi) = (t * n / threads, (t + 1) * n / threads);
            s.spawn(move || {
                for i in lo..hi {
                    black_box(index.insert_shared(keys.get(i), value_of(i)));
                }
            });
        }
    });
}

/// Turns an answer into the next operation's offset (always 0) in dependent mode; serializes
/// with `lfence` when there is no answer to depend on (see the module docs).
#[inline(always)]
fn depend(ans: Option<u64>, mask: usize) -> usize {
    match ans {
        Some(v) => v as usize & mask,
        None => {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: LFENCE has no memory or register effects; it only orders execution.
            unsafe {
                core::arch::x86_64::_mm_lfence();
            }
            0
        }
    }
}

/// Write access to an index: exclusive (one thread) or shared (concurrent indexes).
trait Access {
    type I: BenchIndex;
    fn index(&self) -> &Self::I;
    fn write(&mut self, key: &[u8], value: u64) -> Option<u64>;
}

struct Exclusive<'a, I>(&'a mut I);
struct Shared<'a, I>(&'a I);

impl<I: BenchIndex> Access for Exclusive<'_, I> {
    type I = I;
    #[inline(always)]
    fn index(&self) -> &I {
        self.0
    }
    #[inline(always)]
    fn write(&mut self, key: &[u8], value: u64) -> Option<u64> {
        self.0.insert(key, value)
    }
}

impl<I: BenchIndex> Access for Shared<'_, I> {
    type I = I;
    #[inline(always)]
    fn index(&self) -> &I {
        self.0
    }
    #[inline(always)]
    fn write(&mut self, key: &[u8], value: u64) -> Option<u64> {
        self.0.insert_shared(key, value)
    }
}

/// Executes `ops[from..to]`; returns a checksum of the answers (kept so no work is dead).
///
/// `mask` is always zero in measurements, passed through `black_box` so that the compiler must
/// keep the dependency; tests pass other masks to observe the data flow.
///
/// With `SAMPLE`, every operation whose number `i` has `i & every_mask == 0` is timed on its
/// own into `lat` (nanoseconds, saturating). `lat` has the capacity for them: pushing never
/// allocates in the loop. Without `SAMPLE` the loop is the plain one.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn exec_ops<A: Access, const DEP: bool, const SAMPLE: bool>(
    a: &mut A,
    ops: &[Op],
    keys: &Keys,
    from: usize,
    to: usize,
    mask: usize,
    every_mask: usize,
    lat: &mut Vec<u32>,
) -> u64 {
    let mut dep = 0usize;
    let mut sum = 0u64;
    for i in from..to {
        let j = i + dep;
        let op = ops[j];
        let key = keys.get(j);
        let t0 = (SAMPLE && i & every_mask == 0).then(Instant::now);
        let ans = match op.kind {
            OpKind::Read => a.index().get(key),
            OpKind::Update | OpKind::Insert => a.write(key, value_of(j)),
            OpKind::Scan => a.index().scan(key, op.len as usize),
            OpKind::LowerBound => a.index().lower_bound(key),
            OpKind::ReadModifyWrite => {
                let v = a.index().get(key).unwrap_or(0);
                a.write(key, v.wrapping_add(1))
            }
        };
        if let Some(t0) = t0 {
            debug_assert!(lat.len() < lat.capacity(), "latency buffer sized up front");
            lat.push(t0.elapsed().as_nanos().min(u32::MAX as u128) as u32);
        }
        sum = sum.wrapping_add(ans.unwrap_or(0));
        if DEP {
            dep = depend(ans, mask);
        }
    }
    black_box(dep);
    sum
}

/// Whether consecutive operations of this kind go to the index as one batch in batch mode.
fn batchable(kind: OpKind) -> bool {
    matches!(kind, OpKind::Read | OpKind::LowerBound)
}

/// Buffers of batch mode, allocated before timing starts.
struct Batch<'k> {
    /// Largest batch.
    size: usize,
    keys: Vec<&'k [u8]>,
    out: Vec<Option<u64>>,
}

impl<'k> Batch<'k> {
    fn new(size: usize) -> Batch<'k> {
        Batch {
            size,
            keys: Vec::with_capacity(size),
            out: vec![None; size],
        }
    }
}

/// [`exec_ops`] in batch mode: runs of up to `b.size` consecutive reads (or lower bounds) go to
/// the index as one [`BenchIndex::get_batch`] ([`BenchIndex::lower_bound_batch`]); other
/// operations run one by one. Every index gets the same keys in the same groups. In dependent
/// mode the next group's position depends on every answer of the previous one. With `SAMPLE`,
/// every `every_mask + 1`-th group is timed whole.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn exec_batched<'k, A: Access, const DEP: bool, const SAMPLE: bool>(
    a: &mut A,
    ops: &[Op],
    keys: &'k Keys,
    from: usize,
    to: usize,
    mask: usize,
    every_mask: usize,
    lat: &mut Vec<u32>,
    b: &mut Batch<'k>,
) -> u64 {
    let mut dep = 0usize;
    let mut sum = 0u64;
    let mut i = from;
    let mut group = 0usize;
    while i < to {
        let j = i + dep;
        let op = ops[j];
        let t0 = (SAMPLE && group & every_mask == 0).then(Instant::now);
        let (n, ans) = if batchable(op.kind) {
            b.keys.clear();
            while b.keys.len() < b.size
                && i + b.keys.len() < to
                && ops[j + b.keys.len()].kind == op.kind
            {
                b.keys.push(keys.get(j + b.keys.len()));
            }
            let n = b.keys.len();
            let out = &mut b.out[..n];
            if op.kind == OpKind::Read {
                a.index().get_batch(&b.keys, out);
            } else {
                a.index().lower_bound_batch(&b.keys, out);
            }
            (n, fold_group(out, &mut sum))
        } else {
            let key = keys.get(j);
            let ans = match op.kind {
                OpKind::Update | OpKind::Insert => a.write(key, value_of(j)),
                OpKind::Scan => a.index().scan(key, op.len as usize),
                OpKind::ReadModifyWrite => {
                    let v = a.index().get(key).unwrap_or(0);
                    a.write(key, v.wrapping_add(1))
                }
                OpKind::Read | OpKind::LowerBound => unreachable!("batched above"),
            };
            sum = sum.wrapping_add(ans.unwrap_or(0));
            (1, ans)
        };
        if let Some(t0) = t0 {
            debug_assert!(lat.len() < lat.capacity(), "latency buffer sized up front");
            lat.push(t0.elapsed().as_nanos().min(u32::MAX as u128) as u32);
        }
        i += n;
        group += 1;
        if DEP {
            dep = depend(ans, mask);
        }
    }
    black_box(dep);
    sum
}

/// Adds a group's answers to `sum` and returns one answer standing for all of them: absent
/// if any is, so that a dependency on it waits for every answer of the group.
#[inline]
fn fold_group(out: &[Option<u64>], sum: &mut u64) -> Option<u64> {
    let mut all = Some(0u64);
    for o in out {
        *sum = sum.wrapping_add(o.unwrap_or(0));
        all = all.zip(*o).map(|(x, y)| x ^ y);
    }
    all
}

/// Sampled operations among `from..to` for an interval of `every` (a power of two; 0: none).
fn samples_in(from: usize, to: usize, every: usize) -> usize {
    if every == 0 || to <= from {
        return 0;
    }
    // Multiples of `every` in [from, to).
    (to - 1) / every + 1 - from.div_ceil(every)
}

#[allow(clippy::too_many_arguments)]
fn run_slice<'k, A: Access>(
    a: &mut A,
    ops: &'k Ops,
    mode: Mode,
    from: usize,
    to: usize,
    every: usize,
    lat: &mut Vec<u32>,
    batch: &mut Option<Batch<'k>>,
) -> u64 {
    let (o, k) = (&ops.ops, &ops.keys);
    let dep_mask = match mode {
        Mode::Independent => 0,
        Mode::Dependent => black_box(0usize),
    };
    let em = every.wrapping_sub(1);
    match (batch, mode, every > 0) {
        (None, Mode::Independent, false) => {
            exec_ops::<A, false, false>(a, o, k, from, to, 0, 0, lat)
        }
        (None, Mode::Dependent, false) => {
            exec_ops::<A, true, false>(a, o, k, from, to, dep_mask, 0, lat)
        }
        (None, Mode::Independent, true) => {
            exec_ops::<A, false, true>(a, o, k, from, to, 0, em, lat)
        }
        (None, Mode::Dependent, true) => {
            exec_ops::<A, true, true>(a, o, k, from, to, dep_mask, em, lat)
        }
        (Some(b), Mode::Independent, false) => {
            exec_batched::<A, false, false>(a, o, k, from, to, 0, 0, lat, b)
        }
        (Some(b), Mode::Dependent, false) => {
            exec_batched::<A, true, false>(a, o, k, from, to, dep_mask, 0, lat, b)
        }
        (Some(b), Mode::Independent, true) => {
            exec_batched::<A, false, true>(a, o, k, from, to, 0, em, lat, b)
        }
        (Some(b), Mode::Dependent, true) => {
            exec_batched::<A, true, true>(a, o, k, from, to, dep_mask, em, lat, b)
        }
    }
}

/// The latency buffer for a slice (sized so the timed loop never grows it) and the batch
/// buffers (`None` unless `batch > 1`), allocated before timing.
fn buffers<'k>(
    from: usize,
    to: usize,
    every: usize,
    batch: usize,
) -> (Vec<u32>, Option<Batch<'k>>) {
    let samples = match (every, batch) {
        (0, _) => 0,
        (_, 0 | 1) => samples_in(from, to, every),
        // Groups, not operations, are sampled: at most one per `every` operations, plus one.
        _ => (to - from) / every + 1,
    };
    (
        Vec::with_capacity(samples),
        (batch > 1).then(|| Batch::new(batch)),
    )
}

/// Seconds to run all operations on one thread, and the sampled latencies (every `every`-th
/// operation; 0 samples none).
pub fn time_exclusive<I: BenchIndex>(
    index: &mut I,
    ops: &Ops,
    mode: Mode,
    every: usize,
    batch: usize,
) -> (f64, Vec<u32>) {
    let n = ops.ops.len();
    let (mut lat, mut b) = buffers(0, n, every, batch);
    let mut a = Exclusive(index);
    let t = Instant::now();
    black_box(run_slice(&mut a, ops, mode, 0, n, every, &mut lat, &mut b));
    (t.elapsed().as_secs_f64(), lat)
}

/// Seconds of wall time for `threads` threads to run the operations, each a contiguous share,
/// and the latencies every thread sampled.
pub fn time_shared<I: BenchIndex>(
    index: &I,
    ops: &Ops,
    mode: Mode,
    threads: usize,
    every: usize,
    batch: usize,
) -> (f64, Vec<u32>) {
    let n = ops.ops.len();
    let barrier = std::sync::Barrier::new(threads + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let barrier = &barrier;
                s.spawn(move || {
                    let (from, to) = (t * n / threads, (t + 1) * n / threads);
                    let (mut lat, mut b) = buffers(from, to, every, batch);
                    let mut a = Shared(index);
                    barrier.wait();
                    black_box(run_slice(
                        &mut a, ops, mode, from, to, every, &mut lat, &mut b,
                    ));
                    lat
                })
            })
            .collect();
        barrier.wait();
        let t = Instant::now();
        let mut all = Vec::new();
        for h in handles {
            // A panicking worker is a harness bug; propagate it.
            match h.join() {
                Ok(lat) => all.push(lat),
                Err(p) => std::panic::resume_unwind(p),
            }
        }
        let secs = t.elapsed().as_secs_f64();
        (secs, all.concat())
    })
}

/// Seconds for a batched index ([`BenchIndex::BATCHED`]) to run all operations, handed to it
/// from this thread in consecutive batches of `batch`, and the latencies of every
/// `every`-th batch, each timed whole. In dependent mode each batch's position depends on
/// every answer of the one before, as in batch mode (`exec_batched`).
pub fn time_batched<I: BenchIndex>(
    index: &mut I,
    ops: &Ops,
    mode: Mode,
    every: usize,
    batch: usize,
) -> (f64, Vec<u32>) {
    let n = ops.ops.len();
    let size = batch.max(1);
    // Every `every`-th batch is sampled.
    let mut lat = Vec::with_capacity(
        n.div_ceil(size)
            .checked_div(every)
            .map_or(0, |groups| groups + 1),
    );
    let mut out = vec![None; size];
    let mask = black_box(0usize);
    let every_mask = every.wrapping_sub(1);
    let (mut i, mut dep, mut group, mut sum) = (0usize, 0usize, 0usize, 0u64);
    let t = Instant::now();
    while i < n {
        let from = i + dep;
        let to = (from + size).min(n);
        let t0 = (every > 0 && group & every_mask == 0).then(Instant::now);
        let out = &mut out[..to - from];
        index.execute_batch(&ops.ops[from..to], &ops.keys, from, out);
        let all = fold_group(out, &mut sum);
        if let Some(t0) = t0 {
            debug_assert!(lat.len() < lat.capacity(), "latency buffer sized up front");
            lat.push(t0.elapsed().as_nanos().min(u32::MAX as u128) as u32);
        }
        i += to - from;
        group += 1;
        if mode == Mode::Dependent {
            dep = depend(all, mask);
        }
    }
    black_box((dep, sum));
    (t.elapsed().as_secs_f64(), lat)
}

/// Latency percentiles of one measurement, from individually timed operations.
///
/// Every `--sample-every`-th operation (64 by default) is timed with two clock reads around it.
/// In `dependent` mode that is the operation's latency. In `independent` mode neighbouring
/// operations overlap in the CPU, so a sample is the time the operation occupied the loop
/// (throughput's view of it), and the tail shows stalls: cache misses that did not overlap,
/// resizes, page faults. A sample costs 50–85 ns on the development machine (two clock reads,
/// and the overlap they interrupt), under 1.5 ns per operation at the default interval: within
/// 2% of throughput for cache-resident operations of 40 ns, under 1% at DRAM latencies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Latency {
    /// Median.
    pub p50_ns: f64,
    /// 99th percentile.
    pub p99_ns: f64,
    /// 99.9th percentile.
    pub p999_ns: f64,
    /// Slowest sample.
    pub max_ns: f64,
}

impl Latency {
    /// The percentiles of `samples` (reordered), or `None` when there are none. Each percentile
    /// is a sample (nearest rank), never an interpolation.
    pub fn of(samples: &mut [u32]) -> Option<Latency> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable();
        let n = samples.len();
        let rank = |q: f64| samples[((q * n as f64).ceil() as usize).clamp(1, n) - 1] as f64;
        Some(Latency {
            p50_ns: rank(0.5),
            p99_ns: rank(0.99),
            p999_ns: rank(0.999),
            max_ns: samples[n - 1] as f64,
        })
    }

    /// Copies the percentiles into `r`.
    pub fn apply(self, r: &mut Measurement) {
        r.p50_ns = Some(self.p50_ns);
        r.p99_ns = Some(self.p99_ns);
        r.p999_ns = Some(self.p999_ns);
        r.max_ns = Some(self.max_ns);
    }
}

/// Whether progress bars may be drawn: only when stdout is a terminal.
pub fn progress_wanted() -> bool {
    std::io::stdout().is_terminal()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::Caps;
    use std::sync::Mutex;

    /// A recording index: remembers every key it was asked about and answers with a value
    /// derived from the key, so tests can see the loop's data flow.
    struct Recorder {
        seen: Mutex<Vec<Vec<u8>>>,
        miss: bool,
    }

    impl BenchIndex for Recorder {
        const CAPS: Caps = Caps {
            writes: true,
            ordered: true,
            concurrent: false,
        };
        fn create(_: &Keys) -> Result<Self> {
            Ok(Recorder {
                seen: Mutex::new(Vec::new()),
                miss: false,
            })
        }
        fn get(&self, key: &[u8]) -> Option<u64> {
            self.seen.lock().unwrap().push(key.to_vec());
            (!self.miss).then(|| key[0] as u64)
        }
        fn insert(&mut self, key: &[u8], value: u64) -> Option<u64> {
            self.seen.lock().unwrap().push(key.to_vec());
            Some(value)
        }
    }

    fn ops_of(n: usize) -> Ops {
        let mut keys = Keys::new();
        for i in 0..n {
            keys.push(&[i as u8, 0xAA]);
        }
        Ops {
            ops: vec![
                Op {
                    kind: OpKind::Read,
                    len: 0,
                };
                n
            ],
            keys,
        }
    }

    #[test]
    fn both_modes_execute_the_same_operations_in_order() {
        for mode in [Mode::Independent, Mode::Dependent] {
            for miss in [false, true] {
                let ops = ops_of(50);
                let mut r = Recorder::create(&Keys::new()).unwrap();
                r.miss = miss;
                let (_, lat) = time_exclusive(&mut r, &ops, mode, 8, 1);
                assert_eq!(lat.len(), 7, "operations 0, 8, .., 48 of 50 are timed");
                let seen = r.seen.into_inner().unwrap();
                assert_eq!(seen.len(), 50);
                for (i, k) in seen.iter().enumerate() {
                    assert_eq!(k.as_slice(), &[i as u8, 0xAA]);
                }
            }
        }
    }

    #[test]
    fn dependent_mode_derives_each_position_from_the_previous_answer() {
        // With an all-ones mask instead of the measured zero, the data flow becomes visible:
        // the Recorder answers each read with the key's first byte (its position), so
        // operation i runs at position i + answer(i - 1) = i + (position of op i - 1).
        let ops = ops_of(40);
        let mut r = Recorder::create(&Keys::new()).unwrap();
        let mut a = Exclusive(&mut r);
        exec_ops::<_, true, false>(
            &mut a,
            &ops.ops,
            &ops.keys,
            0,
            9,
            usize::MAX,
            0,
            &mut Vec::new(),
        );
        let seen: Vec<u8> = r.seen.into_inner().unwrap().iter().map(|k| k[0]).collect();
        assert_eq!(seen, vec![0, 1, 3, 6, 10, 15, 21, 28, 36]);
        // Without the dependency (independent mode) the mask is ignored.
        let mut r = Recorder::create(&Keys::new()).unwrap();
        let mut a = Exclusive(&mut r);
        exec_ops::<_, false, false>(
            &mut a,
            &ops.ops,
            &ops.keys,
            0,
            10,
            usize::MAX,
            0,
            &mut Vec::new(),
        );
        let seen: Vec<u8> = r.seen.into_inner().unwrap().iter().map(|k| k[0]).collect();
        assert_eq!(seen, (0..10).collect::<Vec<u8>>());
        assert_eq!(depend(None, usize::MAX), 0);
    }

    fn small_plan(workloads: &str) -> Plan {
        let ds = crate::dataset::load("rand-8", 2_000, 7).unwrap();
        let spec = PlanSpec {
            workloads: Workload::parse_list(workloads).unwrap(),
            modes: vec![Mode::Independent, Mode::Dependent],
            ops: Some(500),
            distribution: Distribution::Uniform,
            threads: vec![1, 2],
            seed: 3,
            rounds: 2,
            only_round: None,
            sample_every: 16,
            batch: 1,
            series_window: 300,
        };
        Plan::prepare(ds, &spec, Some(100.0), false).unwrap()
    }

    #[test]
    fn serve_measures_every_supported_run_and_explains_the_rest() {
        use crate::baselines::{btree::BTree, skipmap::Skip, sorted_vec::SortedVec};
        let plan = small_plan("load,c,e");
        assert_eq!(plan.runs.len(), 2 * 2 * 2, "rounds x workloads x modes");

        // A single-threaded ordered map: everything but concurrent writes (e with 2 threads).
        let mut d = RunAll::new(&plan);
        serve::<BTree<u64>>("btreemap", &plan, &mut d).unwrap();
        let count = |w: &str, t: u32| {
            d.records
                .iter()
                .filter_map(Record::as_index)
                .filter(|r| r.workload.to_string() == w && r.threads == t)
                .count()
        };
        assert_eq!(count("load", 1), 1);
        // The load's latency over time: 2,000 inserts in windows of 300.
        let load = d
            .records
            .iter()
            .find(|r| r.workload_name() == "load")
            .unwrap();
        let series = load.m().series.as_ref().expect("a series was asked for");
        assert_eq!((series.window, series.ns.len()), (300, 7));
        assert!(
            series.ns.iter().all(|&ns| ns > 0.0 && ns.is_finite()),
            "{series:?}"
        );
        assert!(
            d.records
                .iter()
                .filter(|r| r.workload_name() != "load")
                .all(|r| r.m().series.is_none()),
            "only the load has a series"
        );
        assert_eq!(count("c", 1), 4);
        assert_eq!(count("c", 2), 4, "reads run on two threads");
        assert_eq!(count("e", 1), 4);
        assert_eq!(count("e", 2), 0);
        assert!(
            d.notes
                .iter()
                .any(|n| n.contains("skipped e with 2 thread(s)"))
        );
        for r in d.records.iter().filter_map(Record::as_index) {
            assert_eq!(r.m.keys, 2_000);
            // Memory is exact only at realistic sizes: at 2,000 keys, thread caches and the
            // other tests allocating concurrently blur the allocator's delta.
            assert!(r.m.mops > 0.0 && r.bytes_per_key.unwrap().is_finite());
            assert_eq!(r.dram_rt_per_op, Some(r.m.ns_per_op / 100.0));
            // The key shape, measured once for the plan, is in every record.
            assert_eq!(r.mean_key_len, Some(8.0));
            assert_eq!(r.mean_shared_prefix, plan.mean_shared_prefix);
        }
        let shared = plan.mean_shared_prefix.expect("measured below the bound");
        assert_eq!(
            shared,
            crate::dataset::stats(&plan.dataset.keys).mean_shared_prefix
        );
        // 2,000 random 8-byte keys: sorted neighbours share a byte or two.
        assert!((0.5..3.0).contains(&shared), "{shared}");

        // A static index serves no writes; a concurrent one serves them on two threads.
        let mut d = RunAll::new(&plan);
        serve::<SortedVec>("sorted-vec", &plan, &mut d).unwrap();
        assert!(d.records.iter().all(|r| r.workload_name() != "e"));
        let mut d = RunAll::new(&plan);
        serve::<Skip<u64>>("skipmap", &plan, &mut d).unwrap();
        assert_eq!(
            d.records
                .iter()
                .filter_map(Record::as_index)
                .filter(|r| r.workload == Workload::E && r.threads == 2)
                .count(),
            4
        );
    }

    #[test]
    fn a_child_prepares_only_its_round_with_stable_numbering() {
        let ds = crate::dataset::load("rand-8", 2_000, 7).unwrap();
        let spec = PlanSpec {
            workloads: Workload::parse_list("c,e").unwrap(),
            modes: vec![Mode::Dependent],
            ops: Some(300),
            distribution: Distribution::Uniform,
            threads: vec![1],
            seed: 3,
            rounds: 3,
            only_round: Some(1),
            sample_every: 0,
            batch: 1,
            series_window: 0,
        };
        let plan = Plan::prepare(ds, &spec, None, false).unwrap();
        let list = spec.run_list();
        assert_eq!(plan.runs.len(), list.len());
        for (run, (round, w, _)) in plan.runs.iter().zip(&list) {
            assert_eq!(run.is_some(), *round == 1);
            if let Some(run) = run {
                assert_eq!((run.round, run.workload), (*round, *w));
            }
        }
        let mut d = RunAll::new(&plan);
        serve::<crate::baselines::btree::BTree<u64>>("btreemap", &plan, &mut d).unwrap();
        assert_eq!(d.records.len(), 2, "c and e of round 1, no load reported");
    }

    #[test]
    fn serve_rejects_requests_before_a_load_and_out_of_range() {
        use crate::baselines::btree::BTree;
        struct Script(Vec<Request>);
        impl Driver for Script {
            fn next(&mut self) -> Result<Option<Request>> {
                Ok((!self.0.is_empty()).then(|| self.0.remove(0)))
            }
            fn loaded(&mut self, _: Option<Record>, _: Vec<String>) -> Result<()> {
                Ok(())
            }
            fn reply(&mut self, _: Reply) -> Result<()> {
                Ok(())
            }
        }
        let plan = small_plan("c");
        let early = Request::Run { run: 0, threads: 1 };
        assert!(serve::<BTree<u64>>("b", &plan, &mut Script(vec![early])).is_err());
        let far = Request::Run {
            run: 99,
            threads: 1,
        };
        assert!(serve::<BTree<u64>>("b", &plan, &mut Script(vec![Request::Load, far])).is_err());
    }

    #[test]
    fn sampled_operations_are_counted_exactly_for_every_slice() {
        for every in [0usize, 1, 2, 8, 32] {
            for (from, to) in [(0, 0), (0, 1), (0, 50), (3, 50), (16, 17), (17, 31), (5, 5)] {
                let expect = if every == 0 {
                    0
                } else {
                    (from..to).filter(|i| i % every == 0).count()
                };
                assert_eq!(
                    samples_in(from, to, every),
                    expect,
                    "{from}..{to} every {every}"
                );
            }
        }
        // Sampling times the chosen operations without changing which ones run, in order.
        for mode in [Mode::Independent, Mode::Dependent] {
            let ops = ops_of(50);
            let mut r = Recorder::create(&Keys::new()).unwrap();
            let (_, lat) = time_exclusive(&mut r, &ops, mode, 4, 1);
            assert_eq!(lat.len(), 13);
            let seen = r.seen.into_inner().unwrap();
            assert_eq!(
                seen.iter().map(|k| k[0]).collect::<Vec<_>>(),
                (0..50).collect::<Vec<u8>>()
            );
        }
    }

    #[test]
    fn batch_mode_runs_the_same_operations_in_the_same_order() {
        for mode in [Mode::Independent, Mode::Dependent] {
            for batch in [1, 2, 3, 16, 64] {
                let ops = ops_of(50);
                let mut r = Recorder::create(&Keys::new()).unwrap();
                let (_, lat) = time_exclusive(&mut r, &ops, mode, 4, batch);
                let groups = 50usize.div_ceil(batch);
                assert_eq!(lat.len(), groups.div_ceil(4), "one sample per 4 groups");
                let seen: Vec<u8> = r.seen.into_inner().unwrap().iter().map(|k| k[0]).collect();
                assert_eq!(seen, (0..50).collect::<Vec<u8>>(), "batch {batch} {mode}");
            }
        }
    }

    /// A batched index that records the batches it was handed.
    struct BatchRecorder {
        /// `(first, keys)` of each batch.
        batches: Vec<(usize, Vec<u8>)>,
        threads: usize,
    }

    impl BenchIndex for BatchRecorder {
        const CAPS: Caps = Caps {
            writes: true,
            ordered: true,
            concurrent: false,
        };
        const BATCHED: bool = true;
        fn create(_: &Keys) -> Result<Self> {
            Ok(BatchRecorder {
                batches: Vec::new(),
                threads: 0,
            })
        }
        fn get(&self, _: &[u8]) -> Option<u64> {
            unreachable!("a batched index is never asked one key at a time")
        }
        fn set_threads(&mut self, threads: usize) -> Result<()> {
            self.threads = threads;
            Ok(())
        }
        fn execute_batch(
            &mut self,
            ops: &[Op],
            keys: &Keys,
            first: usize,
            out: &mut [Option<u64>],
        ) {
            let seen = (first..first + ops.len()).map(|i| keys.get(i)[0]).collect();
            self.batches.push((first, seen));
            for (k, o) in out.iter_mut().enumerate() {
                *o = Some((first + k) as u64);
            }
        }
    }

    #[test]
    fn a_batched_index_gets_consecutive_batches_of_the_batch_size() {
        for mode in [Mode::Independent, Mode::Dependent] {
            for batch in [1, 7, 16, 64] {
                let ops = ops_of(50);
                let mut r = BatchRecorder::create(&Keys::new()).unwrap();
                let (_, lat) = time_batched(&mut r, &ops, mode, 2, batch);
                let groups = 50usize.div_ceil(batch);
                assert_eq!(r.batches.len(), groups, "batch {batch} {mode}");
                assert_eq!(lat.len(), groups.div_ceil(2), "one sample per 2 batches");
                let mut at = 0;
                for (first, seen) in &r.batches {
                    assert_eq!(*first, at);
                    assert_eq!(seen.len(), batch.min(50 - at));
                    assert_eq!(
                        *seen,
                        (at as u8..(at + seen.len()) as u8).collect::<Vec<_>>()
                    );
                    at += seen.len();
                }
            }
        }
    }

    #[test]
    fn batched_indexes_skip_only_read_modify_writes() {
        assert!(unsupported_reason::<BatchRecorder>(Workload::F, 1).is_some());
        for w in [Workload::A, Workload::E, Workload::C, Workload::Load] {
            assert_eq!(unsupported_reason::<BatchRecorder>(w, 4), None, "{w}");
        }
    }

    /// PI through the harness's batches answers every operation as a `BTreeMap` answers it
    /// one at a time: reads, writes, lower bounds and scans in one mixed stream.
    #[test]
    fn pi_batches_answer_as_one_at_a_time_operations() {
        use crate::ours::pi;
        pi_answers_as_one_at_a_time::<{ pi::FULL }>();
        pi_answers_as_one_at_a_time::<{ pi::NO_SIMD }>();
        pi_answers_as_one_at_a_time::<{ pi::NO_GROUP }>();
        pi_answers_as_one_at_a_time::<{ pi::NO_PREFETCH }>();
    }

    fn pi_answers_as_one_at_a_time<const V: u8>() {
        use crate::baselines::btree::BTree;
        use crate::ours::pi::PiIndex;
        let mut keys = Keys::new();
        let mut ops = Vec::new();
        let mut x = 7u64;
        for i in 0..20_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            keys.push(&(x >> 52).to_be_bytes());
            let (kind, len) = match i % 7 {
                0 | 1 => (OpKind::Insert, 0),
                2 => (OpKind::Update, 0),
                3 => (OpKind::LowerBound, 0),
                4 => (OpKind::Scan, (x % 40) as u32),
                _ => (OpKind::Read, 0),
            };
            ops.push(Op { kind, len });
        }
        let mut pi = PiIndex::<V>::create(&keys).unwrap();
        let mut tree = BTree::<u64>::create(&keys).unwrap();
        for threads in [1, 2, 3] {
            pi.set_threads(threads).unwrap();
            let n = ops.len() / 3;
            let (lo, hi) = ((threads - 1) * n, threads * n);
            for first in (lo..hi).step_by(999) {
                let to = (first + 999).min(hi);
                let mut out = vec![None; to - first];
                pi.execute_batch(&ops[first..to], &keys, first, &mut out);
                for (k, o) in out.iter().enumerate() {
                    let (i, key) = (first + k, keys.get(first + k));
                    let want = match ops[i].kind {
                        OpKind::Read => tree.get(key),
                        OpKind::Insert | OpKind::Update => tree.insert(key, value_of(i)),
                        OpKind::LowerBound => tree.lower_bound(key),
                        OpKind::Scan => tree.scan(key, ops[i].len as usize),
                        OpKind::ReadModifyWrite => unreachable!(),
                    };
                    assert_eq!(*o, want, "variant {V}, op {i} ({:?})", ops[i].kind);
                }
            }
        }
    }

    #[test]
    fn batched_lookups_answer_as_single_ones() {
        // The FST overrides get_batch and lower_bound_batch with its interleaved lookups; the
        // checksum of every answer must not depend on the batch size, for reads, lower bounds
        // and a mix with writes (which a static index skips, so a B-tree runs that one).
        use crate::baselines::btree::BTree;
        use crate::ours::fst::FstIndex;
        let plan = small_plan("c,lower-bound,b");
        let keys = &plan.dataset.keys;
        let mut fst = <FstIndex>::create(keys).unwrap();
        for run in plan.runs.iter().flatten() {
            let n = run.ops.ops.len();
            let mut reference = None;
            for batch in [1, 5, 16, 100] {
                let mut b = (batch > 1).then(|| Batch::new(batch));
                let mut lat = Vec::new();
                let got = if run.workload == Workload::B {
                    // Writes change the map: a fresh one per batch size.
                    let mut bt = BTree::<u64>::create(keys).unwrap();
                    for i in 0..keys.len() {
                        bt.insert(keys.get(i), value_of(i));
                    }
                    let mut a = Exclusive(&mut bt);
                    run_slice(&mut a, &run.ops, run.mode, 0, n, 0, &mut lat, &mut b)
                } else {
                    let mut a = Exclusive(&mut fst);
                    run_slice(&mut a, &run.ops, run.mode, 0, n, 0, &mut lat, &mut b)
                };
                assert_eq!(
                    *reference.get_or_insert(got),
                    got,
                    "{} batch {batch}",
                    run.workload
                );
            }
        }
    }

    #[test]
    fn load_histogram_buckets_within_a_32nd_and_keeps_the_maximum() {
        for ns in [
            0u64,
            1,
            31,
            32,
            33,
            63,
            64,
            100,
            1000,
            123_456,
            1 << 40,
            u64::MAX >> 1,
        ] {
            let b = LoadHistogram::bucket(ns);
            let top = LoadHistogram::top(b);
            assert!(top >= ns, "{ns}: bucket {b} tops at {top}");
            assert!(top - ns <= ns / 32, "{ns}: bucket {b} tops at {top}");
            if b > 0 {
                assert!(LoadHistogram::top(b - 1) < ns, "{ns}: bucket {b} too high");
            }
        }
        let mut h = LoadHistogram::default();
        for ns in 1..=1000u64 {
            h.add(ns * 10);
        }
        h.add(5_000_000);
        let l = h.latency().unwrap();
        assert_eq!(l.max_ns, 5_000_000.0);
        assert!((4900.0..=5200.0).contains(&l.p50_ns), "{l:?}");
        assert!((9800.0..=10_300.0).contains(&l.p999_ns), "{l:?}");
    }

    #[test]
    fn percentiles_are_nearest_rank_samples() {
        assert_eq!(Latency::of(&mut []), None);
        let mut one = [7];
        let l = Latency::of(&mut one).unwrap();
        assert_eq!(
            (l.p50_ns, l.p99_ns, l.p999_ns, l.max_ns),
            (7.0, 7.0, 7.0, 7.0)
        );
        // 1..=1000 shuffled: p50 = 500, p99 = 990, p99.9 = 999, max = 1000.
        let mut v: Vec<u32> = (1..=1000).map(|i| (i * 7919) % 1000 + 1).collect();
        let l = Latency::of(&mut v).unwrap();
        assert_eq!(
            (l.p50_ns, l.p99_ns, l.p999_ns, l.max_ns),
            (500.0, 990.0, 999.0, 1000.0)
        );
    }

    #[test]
    fn served_records_carry_percentiles_when_sampling() {
        use crate::baselines::btree::BTree;
        let plan = small_plan("c");
        let mut d = RunAll::new(&plan);
        serve::<BTree<u64>>("btreemap", &plan, &mut d).unwrap();
        assert!(!d.records.is_empty());
        for r in &d.records {
            let m = r.m();
            let (p50, p99, p999, max) = (
                m.p50_ns.unwrap(),
                m.p99_ns.unwrap(),
                m.p999_ns.unwrap(),
                m.max_ns.unwrap(),
            );
            assert!(p50 <= p99 && p99 <= p999 && p999 <= max, "{r:?}");
        }
    }

    #[test]
    fn unsupported_workloads_are_reported() {
        struct Static;
        impl BenchIndex for Static {
            const CAPS: Caps = Caps {
                writes: false,
                ordered: false,
                concurrent: false,
            };
            fn create(_: &Keys) -> Result<Self> {
                Ok(Static)
            }
            fn get(&self, _: &[u8]) -> Option<u64> {
                None
            }
        }
        assert!(unsupported_reason::<Static>(Workload::A, 1).is_some());
        assert!(unsupported_reason::<Static>(Workload::E, 1).is_some());
        assert!(unsupported_reason::<Static>(Workload::LowerBound, 1).is_some());
        assert!(unsupported_reason::<Static>(Workload::C, 1).is_none());
        assert!(unsupported_reason::<Static>(Workload::C, 4).is_none());
        assert!(unsupported_reason::<Recorder>(Workload::A, 2).is_some());
        assert!(unsupported_reason::<Recorder>(Workload::A, 1).is_none());
    }
}
