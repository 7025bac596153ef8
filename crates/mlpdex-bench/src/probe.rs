//! Measures this machine's DRAM latency and memory-level parallelism (MLP).
//!
//! Why: the harness reports every operation's cost in units of one dependent DRAM access
//! (`dram_rt_per_op` in [`crate::record::Record`]), and the design of mlpdex rests on the CPU
//! overlapping several independent cache misses. Both numbers depend on the hardware, so the
//! harness measures them instead of assuming them.
//!
//! How (mlp-data-structures.txt §2.1–2.2): a large array of 64-byte lines, far bigger than the
//! caches, is read at pseudo-random lines. Each *round* issues `K` loads whose addresses depend
//! only on an accumulator `sum` as it stood at the start of the round, so the `K` loads are
//! mutually independent and the CPU may overlap them. Every loaded value is added into `sum`,
//! and the next round's addresses are computed from the new `sum`: the accumulator is a data
//! dependency barrier that stops out-of-order execution from running ahead into later rounds.
//! One round at `K = 1` is therefore one fully serialised DRAM access (the latency), and the
//! time of a round at larger `K`, relative to `K = 1`, shows how many misses overlap. The paper
//! observes `relative ≈ 1 + c·(K−1)`, with `c` a hardware constant (≈ 0.065 on AMD EPYC).
//!
//! Huge pages matter (§2.4): with 4 KiB pages nearly every random access also misses the TLB, and
//! the page walk adds dependent reads that inflate the latency and cap the MLP. The array is
//! therefore an anonymous mapping of its own with `MADV_HUGEPAGE`, and the result records how
//! much of the process's anonymous memory the kernel really backed with huge pages.
//!
//! The result is cached as JSON (see [`cache_path`]) so that benchmark runs need not re-probe,
//! stamped with when, on which machine and under what load it was measured: a figure more than a
//! day old, from another machine or kernel, or probed under load while the machine is quiet now
//! is probed again ([`decide`]), and every figure says where it comes from ([`DramFigure`]).

use std::ffi::OsString;
use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, UNIX_EPOCH};

use anyhow::{Context as _, bail};
use rand::{Rng as _, SeedableRng as _};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use crate::provenance::rfc3339_utc;

/// Bytes in one cache line; the array is addressed in whole lines.
const LINE: usize = 64;
/// `u64` words in one cache line.
const WORDS_PER_LINE: usize = LINE / 8;
/// Entries in the vector of random line indexes (32 MiB of `u64`), at most: a probe reading fewer
/// gets fewer (see [`run_probe`]). It is read sequentially, so
/// the hardware prefetcher streams it and it adds no dependent misses; it is long enough that
/// its reuse (it wraps around) cannot train any predictor, and the XOR with the accumulator
/// makes every reuse hit different lines anyway.
const RANDOM_INDEXES: usize = 1 << 22;
/// Passes over all `K`s; each times a slice of every `K`'s rounds, and the fastest slice counts.
const PASSES: usize = 5;
/// Fixed seed: probes are reproducible run to run.
const SEED: u64 = 0x6d6c_7064_6578_2d70;

/// What to measure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeConfig {
    /// Size of the probed array in bytes. It is rounded down to a power of two number of 64-byte
    /// lines (so that a mask picks a line); it should be far larger than the last-level cache.
    pub array_bytes: usize,
    /// Degrees of parallelism to measure: `K` independent loads per round. `K = 1` is always
    /// measured (it is the baseline), whether listed or not.
    pub ks: Vec<usize>,
    /// Timed rounds per `K` (a round performs `K` loads). They are timed in 5 slices, one in each
    /// of 5 passes over all `K`s, and the fastest slice counts; a warm-up of a tenth of the
    /// slice precedes each slice.
    pub rounds: usize,
    /// Ask for 2 MiB transparent huge pages for the array.
    pub huge_pages: bool,
}

impl Default for ProbeConfig {
    /// 4 GiB on huge pages, `K` = 1..=16, 20, 24, 32, 48, 64, and 1.5 million rounds per `K`: about
    /// half a minute on a 2-core AMD EPYC VM, including the fill of the array.
    fn default() -> Self {
        ProbeConfig {
            array_bytes: 4 << 30,
            ks: (1..=16).chain([20, 24, 32, 48, 64]).collect(),
            rounds: 1_500_000,
            huge_pages: true,
        }
    }
}

/// The measurement at one degree of parallelism `K`.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct KPoint {
    /// Independent loads per round.
    pub k: usize,
    /// Mean wall-clock nanoseconds per round.
    pub ns_per_round: f64,
    /// `ns_per_round` divided by `ns_per_round` at `K = 1`: the round's cost in serial accesses.
    pub relative: f64,
    /// `k / relative`: how many accesses were effectively in flight at once.
    pub mlp: f64,
}

/// The outcome of a probe; this is what the cache file holds.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct ProbeResult {
    /// Nanoseconds of one dependent DRAM access: `ns_per_round` at `K = 1`.
    pub latency_ns: f64,
    /// One point per configured `K`, in the configured order.
    pub curve: Vec<KPoint>,
    /// Least-squares fit of `relative = 1 + c·(K−1)` over the curve (intercept fixed at 1);
    /// 0 when only `K = 1` was measured.
    pub c: f64,
    /// Bytes of the array actually probed (a power of two number of lines).
    pub array_bytes: usize,
    /// Whether huge pages were requested for the array.
    pub huge_pages_requested: bool,
    /// `AnonHugePages` of the process after the array was filled, when the OS reports it. If it
    /// is at least `array_bytes`, the array was on huge pages.
    pub anon_huge_page_bytes: Option<u64>,
}

/// The probed array: a power of two number of 64-byte lines in a [`Mapping`].
///
/// Invariant: `lines` is a power of two, `mask == lines - 1`, and `lines * LINE <= region.len`.
struct Table {
    region: Mapping,
    lines: usize,
    mask: usize,
}

impl Table {
    /// Maps the array and writes a pseudo-random `u64` into the first word of every line. The
    /// writes fault in every page now, so page faults and zeroing stay out of the timings.
    fn new(
        array_bytes: usize,
        huge_pages: bool,
        rng: &mut Xoshiro256PlusPlus,
    ) -> anyhow::Result<Table> {
        let max_lines = array_bytes / LINE;
        if max_lines < 2 {
            bail!("probe array of {array_bytes} bytes is smaller than two cache lines");
        }
        // Largest power of two not above max_lines.
        let lines = 1usize << max_lines.ilog2();
        let mut region = Mapping::new(lines * LINE, huge_pages)
            .with_context(|| format!("mapping a {} MiB probe array", (lines * LINE) >> 20))?;
        for line in region.as_mut_slice()[..lines * LINE].chunks_exact_mut(LINE) {
            line[..8].copy_from_slice(&rng.next_u64().to_ne_bytes());
        }
        Ok(Table {
            region,
            lines,
            mask: lines - 1,
        })
    }

    /// Bytes covered by the lines.
    fn bytes(&self) -> usize {
        self.lines * LINE
    }

    /// The first word of line `line & mask`.
    ///
    /// A volatile read: the compiler must emit exactly one load here, in program order, so it can
    /// neither drop, merge, hoist nor vectorise the loads whose timing is the whole point. It
    /// costs nothing at run time compared with a plain load.
    #[inline(always)]
    fn read(&self, line: usize) -> u64 {
        let word = (line & self.mask) * WORDS_PER_LINE;
        // SAFETY: `line & mask < lines` and `lines * LINE <= region.len` (type invariant), so
        // the word lies inside the live mapping borrowed through `&self`; the mapping is
        // page-aligned, so the `u64` is aligned; it is initialised (anonymous mappings are
        // zero-filled, and `new` wrote it); nothing writes the region while `&self` is held.
        unsafe { core::ptr::read_volatile(self.region.ptr.cast::<u64>().add(word)) }
    }
}

/// Size of a transparent huge page on x86-64 and aarch64.
const HUGE_PAGE: usize = 2 << 20;

/// A zeroed anonymous mapping of `len` bytes at `ptr`, aligned to [`HUGE_PAGE`] and advised
/// `MADV_HUGEPAGE` when huge pages are asked for (the bench maps its probe array itself: the
/// library keeps its memory regions private).
///
/// Invariant: `base..base + mapped` is a live private mapping owned by this value, and
/// `ptr..ptr + len` lies inside it, with `ptr` page-aligned (and huge-page-aligned when asked).
struct Mapping {
    base: *mut u8,
    mapped: usize,
    ptr: *mut u8,
    len: usize,
}

impl Mapping {
    fn new(len: usize, huge: bool) -> anyhow::Result<Mapping> {
        let align = if huge { HUGE_PAGE } else { 4096 };
        let len = len.max(1).next_multiple_of(align);
        let mapped = len + align;
        // SAFETY: an anonymous private mapping at a kernel-chosen address touches no existing
        // memory.
        let base = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                mapped,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error()).context("mmap");
        }
        let base = base.cast::<u8>();
        let ptr = base.wrapping_add((base as usize).next_multiple_of(align) - base as usize);
        #[cfg(target_os = "linux")]
        if huge {
            // SAFETY: advice on a range inside our own fresh mapping; it changes no contents.
            // Failure (THP disabled) leaves normal pages: the result records what the kernel did.
            unsafe { libc::madvise(ptr.cast(), len, libc::MADV_HUGEPAGE) };
        }
        Ok(Mapping {
            base,
            mapped,
            ptr,
            len,
        })
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: invariant: `ptr..ptr + len` is inside a live mapping owned by self, readable,
        // writable and initialised (zero-filled); `&mut self` makes this the only access.
        unsafe { core::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: invariant: `base..base + mapped` is our live mapping; nothing uses it after.
        unsafe { libc::munmap(self.base.cast(), self.mapped) };
    }
}

/// Bytes of this process's anonymous memory currently backed by transparent huge pages
/// (`AnonHugePages` in `/proc/self/smaps_rollup`), or `None` where that is unavailable.
pub fn anon_huge_page_bytes() -> Option<u64> {
    smaps_rollup_field("AnonHugePages:")
}

/// Bytes of this process's anonymous memory (`Anonymous` in `/proc/self/smaps_rollup`).
pub fn anon_bytes() -> Option<u64> {
    smaps_rollup_field("Anonymous:")
}

fn smaps_rollup_field(name: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kib: u64 = line[name.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// Where a chain of rounds stands: the accumulator and the position in the random indexes.
/// Carried from one timed run to the next so no run restarts at a predictable address.
struct Cursor {
    sum: u64,
    pos: usize,
}

/// Runs `rounds` rounds of `k` independent loads each (the loop of the paper's §2.2).
///
/// Not inlined: every `K` runs the same machine code, which keeps the comparison fair.
#[inline(never)]
fn run_rounds(table: &Table, random: &[u64], k: usize, rounds: usize, cur: &mut Cursor) {
    debug_assert!(random.len().is_power_of_two());
    let rmask = random.len() - 1;
    let mut sum = cur.sum;
    let mut pos = cur.pos;
    for _ in 0..rounds {
        // The barrier: all K addresses below derive from `old`, i.e. from every load of all
        // earlier rounds, so no load of this round can issue before the previous round's loads
        // have all returned. Within the round, the K addresses do not depend on each other.
        let old = sum;
        for _ in 0..k {
            // Sequential read of the random stream: prefetched, no dependent miss.
            let r = random[pos & rmask];
            pos = pos.wrapping_add(1);
            // Mask instead of `%`: the line count is a power of two.
            sum = sum.wrapping_add(table.read((r ^ old) as usize));
        }
    }
    // Publish the accumulator so the loads are observably used.
    cur.sum = std::hint::black_box(sum);
    cur.pos = pos;
}

/// Times `rounds` rounds at degree `k` after a warm-up of a tenth as many; returns nanoseconds
/// per round.
fn time_k(table: &Table, random: &[u64], k: usize, rounds: usize, cur: &mut Cursor) -> f64 {
    // Warm-up: brings the loop's code, the stream of random indexes and the page-table entries
    // into a steady state, and lets the core's clock settle.
    run_rounds(table, random, k, (rounds / 10).max(1), cur);
    let start = Instant::now();
    run_rounds(table, random, k, rounds, cur);
    start.elapsed().as_nanos() as f64 / rounds as f64
}

/// Least-squares slope `c` of `relative − 1 = c·(K−1)` (a line through `(1, 1)`); 0 when no point
/// has `K > 1`.
fn fit_c(curve: &[KPoint]) -> f64 {
    let (num, den) = curve.iter().fold((0.0, 0.0), |(num, den), p| {
        let x = p.k as f64 - 1.0;
        (num + x * (p.relative - 1.0), den + x * x)
    });
    if den > 0.0 { num / den } else { 0.0 }
}

/// How many random indexes a probe of these `ks` (sorted, deduplicated) and rounds per slice
/// needs: no more than it reads, warm-ups included, rounded up to a power of two, at most
/// [`RANDOM_INDEXES`]. The quick and the full probe get all of them; a small test probe does
/// not allocate and fill 32 MiB it would never read.
fn random_len(ks: &[usize], slice: usize) -> usize {
    let rounds = slice.saturating_add((slice / 10).max(1));
    let loads = ks.iter().fold(0usize, |sum, &k| {
        sum.saturating_add(k.saturating_mul(rounds).saturating_mul(PASSES))
    });
    loads.clamp(1024, RANDOM_INDEXES).next_power_of_two()
}

/// Measures DRAM latency and the MLP curve as configured. Single-threaded; memory use is
/// `array_bytes` plus up to 32 MiB of random indexes.
pub fn run_probe(cfg: &ProbeConfig) -> anyhow::Result<ProbeResult> {
    if cfg.ks.is_empty() {
        bail!("probe needs at least one K");
    }
    if cfg.ks.contains(&0) {
        bail!("probe K must be at least 1");
    }
    if cfg.rounds == 0 {
        bail!("probe needs at least one round");
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(SEED);
    let table = Table::new(cfg.array_bytes, cfg.huge_pages, &mut rng)?;
    let anon_huge = anon_huge_page_bytes();

    // K = 1 is the baseline, the unit of every relative time: measured whether listed or not.
    let mut ks: Vec<usize> = cfg.ks.clone();
    ks.push(1);
    ks.sort_unstable();
    ks.dedup();
    // The rounds of each K are timed in PASSES slices, one per pass over all Ks, and the fastest
    // slice counts. This machine is a shared VM: a burst of interference (another process
    // compiling, the hypervisor) only ever slows a slice down, and spreading each K over the
    // whole run keeps one burst from spoiling all of one K's slices.
    let slice = cfg.rounds.div_ceil(PASSES);
    let random_len = random_len(&ks, slice);
    let random: Vec<u64> = (0..random_len).map(|_| rng.next_u64()).collect();
    let mut cur = Cursor { sum: 0, pos: 0 };
    let mut best = vec![f64::INFINITY; ks.len()];
    for _ in 0..PASSES {
        for (b, &k) in best.iter_mut().zip(&ks) {
            *b = b.min(time_k(&table, &random, k, slice, &mut cur));
        }
    }
    let base = best[0];
    if !(base.is_finite() && base > 0.0) {
        bail!("probe measured a non-positive time per access ({base} ns)");
    }
    let curve: Vec<KPoint> = cfg
        .ks
        .iter()
        .map(|k| {
            let ns = best[ks.binary_search(k).unwrap_or(0)];
            let relative = ns / base;
            KPoint {
                k: *k,
                ns_per_round: ns,
                relative,
                mlp: *k as f64 / relative,
            }
        })
        .collect();
    Ok(ProbeResult {
        latency_ns: base,
        c: fit_c(&curve),
        curve,
        array_bytes: table.bytes(),
        huge_pages_requested: cfg.huge_pages,
        anon_huge_page_bytes: anon_huge,
    })
}

/// Formats a byte count with a binary unit, e.g. `4.00 GiB`.
fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.2} {}", UNITS[unit])
    }
}

/// A human-readable report: array and huge-page status, latency, `c`, and the `K` table.
pub fn format_probe(r: &ProbeResult) -> String {
    let mut s = String::new();
    let huge = match r.anon_huge_page_bytes {
        Some(b) => human_bytes(b),
        None => "unknown".to_owned(),
    };
    // Writing into a String cannot fail.
    let _ = writeln!(
        s,
        "DRAM probe: {} array, huge pages {}, AnonHugePages after fill: {huge}",
        human_bytes(r.array_bytes as u64),
        if r.huge_pages_requested {
            "requested"
        } else {
            "not requested"
        },
    );
    let _ = writeln!(
        s,
        "latency: {:.1} ns per dependent DRAM access (K = 1)",
        r.latency_ns
    );
    let _ = writeln!(s, "c: {:.4} (fit of relative = 1 + c*(K-1))", r.c);
    let _ = writeln!(
        s,
        "{:>4} {:>11} {:>9} {:>7}",
        "K", "ns/round", "relative", "MLP"
    );
    for p in &r.curve {
        let _ = writeln!(
            s,
            "{:>4} {:>11.1} {:>9.3} {:>7.2}",
            p.k, p.ns_per_round, p.relative, p.mlp
        );
    }
    s
}

/// The cache location from the relevant environment values (empty values count as unset).
fn cache_path_from(
    probe_cache: Option<OsString>,
    xdg_cache_home: Option<OsString>,
    home: Option<OsString>,
) -> PathBuf {
    let set = |v: Option<OsString>| v.filter(|v| !v.is_empty());
    if let Some(p) = set(probe_cache) {
        PathBuf::from(p)
    } else if let Some(x) = set(xdg_cache_home) {
        Path::new(&x).join("mlpdex").join("probe.json")
    } else if let Some(h) = set(home) {
        Path::new(&h)
            .join(".cache")
            .join("mlpdex")
            .join("probe.json")
    } else {
        PathBuf::from("mlpdex-probe.json")
    }
}

/// Where the probe result is cached: `$MLPDEX_PROBE_CACHE`, else
/// `$XDG_CACHE_HOME/mlpdex/probe.json`, else `$HOME/.cache/mlpdex/probe.json`, else
/// `./mlpdex-probe.json`.
pub fn cache_path() -> PathBuf {
    cache_path_from(
        std::env::var_os("MLPDEX_PROBE_CACHE"),
        std::env::var_os("XDG_CACHE_HOME"),
        std::env::var_os("HOME"),
    )
}

/// How old a cached figure may be before `run` probes again: a day. Over days the kernel, the
/// hypervisor's placement of the VM and its neighbours change, and with them the latency.
pub const MAX_AGE_SECS: u64 = 86_400;

/// How far in the future a cache's date may lie (a clock adjusted back) before it is not trusted.
const FUTURE_SLACK_SECS: u64 = 300;

/// The machine a probe ran on. A cached figure from another host, CPU model or kernel is not
/// reused; the core count says what load average means "busy" there.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct HostFacts {
    /// Host name (`/proc/sys/kernel/hostname`); `unknown` where unavailable.
    pub hostname: String,
    /// CPU model, as `/proc/cpuinfo` names it; `unknown` where unavailable.
    pub cpu: String,
    /// Kernel release, as `uname -r` prints it (`/proc/sys/kernel/osrelease`); `unknown` where
    /// unavailable.
    pub kernel: String,
    /// CPUs available to the process; 0 where unknown.
    pub cores: u32,
}

impl HostFacts {
    /// The facts of the machine this process runs on.
    pub fn current() -> HostFacts {
        let read = |path| read_trimmed(path).unwrap_or_else(|| "unknown".to_owned());
        HostFacts {
            hostname: read("/proc/sys/kernel/hostname"),
            cpu: crate::provenance::cpu_model().unwrap_or_else(|| "unknown".to_owned()),
            kernel: read("/proc/sys/kernel/osrelease"),
            cores: std::thread::available_parallelism().map_or(0, |n| n.get() as u32),
        }
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    let s = std::fs::read_to_string(path).ok()?;
    let t = s.trim();
    (!t.is_empty()).then(|| t.to_owned())
}

/// The 1-minute load average (the first field of `/proc/loadavg`), where the OS reports it.
pub fn loadavg() -> Option<f64> {
    parse_loadavg(&std::fs::read_to_string("/proc/loadavg").ok()?)
}

fn parse_loadavg(text: &str) -> Option<f64> {
    text.split_whitespace()
        .next()?
        .parse()
        .ok()
        .filter(|l: &f64| l.is_finite() && *l >= 0.0)
}

/// Whether a 1-minute load average of `load` on `cores` CPUs means other processes were busy:
/// `load >= cores / 2`. A latency probed then is inflated (one run measured 803 ns under load
/// against 286 ns on the quiet machine): the probe's misses queue behind theirs at the memory
/// controller, and the hypervisor may deschedule the probe's virtual CPU.
pub fn is_busy(load: f64, cores: u32) -> bool {
    load >= f64::from(cores.max(1)) / 2.0
}

/// The 1-minute load average at the start and at the end of a probe.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct LoadAvg {
    /// Before the probe: the load of the other processes alone.
    pub start: f64,
    /// After the probe; it includes the probe's own thread for the seconds it ran (a few
    /// seconds of one busy thread add about 0.1).
    pub end: f64,
}

impl LoadAvg {
    /// The larger of the two: what a figure is judged by.
    pub fn worst(self) -> f64 {
        self.start.max(self.end)
    }
}

/// A probe result with when, where and under what load it was measured: what the cache file
/// holds (the result's fields, then these).
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Cached {
    /// The measurement.
    #[serde(flatten)]
    pub result: ProbeResult,
    /// When the probe started, in seconds since the Unix epoch.
    pub measured_at: u64,
    /// The same instant as an RFC 3339 UTC timestamp, for people reading the file.
    pub measured_at_utc: String,
    /// The load average around the probe; `None` where the OS does not report it.
    pub loadavg: Option<LoadAvg>,
    /// The machine it ran on.
    pub host: HostFacts,
}

/// This machine at this moment: what a cached figure is checked against, and what a new probe
/// is stamped with.
#[derive(Clone, Debug, PartialEq)]
pub struct Here {
    /// The machine.
    pub host: HostFacts,
    /// Seconds since the Unix epoch.
    pub now: u64,
    /// The 1-minute load average now; `None` where the OS does not report it.
    pub loadavg: Option<f64>,
}

impl Here {
    /// This machine now.
    pub fn current() -> Here {
        Here {
            host: HostFacts::current(),
            now: std::time::SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            loadavg: loadavg(),
        }
    }
}

/// Runs the probe as configured and stamps the result with the time, the load average before and
/// after, and the machine.
pub fn measure(cfg: &ProbeConfig) -> anyhow::Result<Cached> {
    measure_at(cfg, &Here::current())
}

/// [`measure`], with the start's facts given (`here` must be read just before).
fn measure_at(cfg: &ProbeConfig, here: &Here) -> anyhow::Result<Cached> {
    let result = run_probe(cfg)?;
    let loadavg = here
        .loadavg
        .zip(loadavg())
        .map(|(start, end)| LoadAvg { start, end });
    Ok(Cached {
        result,
        measured_at: here.now,
        measured_at_utc: rfc3339_utc(UNIX_EPOCH + Duration::from_secs(here.now)),
        loadavg,
        host: here.host.clone(),
    })
}

/// Writes `c` as JSON to `path`, creating parent directories. The file is written under a
/// temporary name and renamed, so a concurrent reader never sees half a file.
pub fn save(c: &Cached, path: &Path) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating probe cache directory {}", dir.display()))?;
    }
    let json = serde_json::to_string_pretty(c)?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, json + "\n")
        .with_context(|| format!("writing probe cache {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| {
        let _ = std::fs::remove_file(&tmp);
        format!("renaming probe cache into {}", path.display())
    })
}

/// Why a cached figure is not used, and the DRAM latency probed again.
#[derive(Clone, Debug, PartialEq)]
pub enum Stale {
    /// A new probe was asked for (`--reprobe`).
    Asked,
    /// There is no cache file.
    Missing,
    /// The file cannot be read or holds no probe result; the reason.
    Unreadable(String),
    /// A result without its date, load and machine: written before they were recorded.
    NoFacts,
    /// The cached latency is not a positive number.
    BadFigure,
    /// Measured more than [`MAX_AGE_SECS`] ago.
    Old {
        /// Seconds since it was measured.
        age_secs: u64,
    },
    /// Dated after now: the clock went back, so its age is unknown.
    Future {
        /// Seconds by which its date lies ahead.
        ahead_secs: u64,
    },
    /// Measured on another host.
    OtherHost {
        /// The cache's host name.
        then: String,
        /// This host's name.
        now: String,
    },
    /// Measured on another CPU model.
    OtherCpu {
        /// The cache's CPU model.
        then: String,
        /// This machine's CPU model.
        now: String,
    },
    /// Measured under another kernel release.
    OtherKernel {
        /// The cache's kernel release.
        then: String,
        /// This kernel's release.
        now: String,
    },
    /// Measured while other processes were busy (see [`is_busy`]), and the machine is quiet now.
    BusyThen {
        /// The load average then ([`LoadAvg::worst`]).
        load: f64,
        /// The cores then.
        cores: u32,
    },
}

impl fmt::Display for Stale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stale::Asked => write!(f, "a new probe was asked for"),
            Stale::Missing => write!(f, "nothing cached yet"),
            Stale::Unreadable(why) => write!(f, "unreadable ({why})"),
            Stale::NoFacts => write!(
                f,
                "an older format that does not say when, where and under what load it was measured"
            ),
            Stale::BadFigure => write!(f, "the cached latency is not a positive number"),
            Stale::Old { age_secs } => {
                write!(f, "measured {} ago, more than a day", human_age(*age_secs))
            }
            Stale::Future { ahead_secs } => write!(
                f,
                "dated {} in the future (the clock changed)",
                human_age(*ahead_secs)
            ),
            Stale::OtherHost { then, now } => {
                write!(f, "measured on host {then:?}, this is {now:?}")
            }
            Stale::OtherCpu { then, now } => write!(f, "measured on a {then}, this is a {now}"),
            Stale::OtherKernel { then, now } => {
                write!(f, "measured under kernel {then}, this is {now}")
            }
            Stale::BusyThen { load, cores } => write!(
                f,
                "measured at load {load:.2} on {cores} cores (inflated), and the machine is quiet now"
            ),
        }
    }
}

/// What to do with a cached figure.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// It is recent, from this machine and kernel: use it.
    Use,
    /// Probe again, for this reason.
    Reprobe(Stale),
}

/// Whether the figure `cached` still holds `here`: it is used when it is a positive number, at
/// most [`MAX_AGE_SECS`] old, from the same host name, CPU model and kernel release, and not
/// measured under load while the machine is quiet now.
pub fn decide(cached: &Cached, here: &Here) -> Decision {
    let then = &cached.host;
    let stale = if !(cached.result.latency_ns.is_finite() && cached.result.latency_ns > 0.0) {
        Stale::BadFigure
    } else if cached.measured_at > here.now + FUTURE_SLACK_SECS {
        Stale::Future {
            ahead_secs: cached.measured_at - here.now,
        }
    } else if here.now.saturating_sub(cached.measured_at) > MAX_AGE_SECS {
        Stale::Old {
            age_secs: here.now - cached.measured_at,
        }
    } else if then.hostname != here.host.hostname {
        Stale::OtherHost {
            then: then.hostname.clone(),
            now: here.host.hostname.clone(),
        }
    } else if then.cpu != here.host.cpu {
        Stale::OtherCpu {
            then: then.cpu.clone(),
            now: here.host.cpu.clone(),
        }
    } else if then.kernel != here.host.kernel {
        Stale::OtherKernel {
            then: then.kernel.clone(),
            now: here.host.kernel.clone(),
        }
    } else {
        let busy_then = cached
            .loadavg
            .map(LoadAvg::worst)
            .filter(|&l| is_busy(l, then.cores));
        let quiet_now = here.loadavg.is_some_and(|l| !is_busy(l, here.host.cores));
        match busy_then {
            Some(load) if quiet_now => Stale::BusyThen {
                load,
                cores: then.cores,
            },
            _ => return Decision::Use,
        }
    };
    Decision::Reprobe(stale)
}

/// Reads the cache at `path`; the error says why there is no usable result in it. Whether the
/// result still holds is [`decide`]'s question.
pub fn load(path: &Path) -> Result<Cached, Stale> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Stale::Missing),
        Err(e) => return Err(Stale::Unreadable(e.to_string())),
    };
    serde_json::from_str::<Cached>(&text).map_err(|e| {
        if serde_json::from_str::<ProbeResult>(&text).is_ok() {
            Stale::NoFacts
        } else {
            Stale::Unreadable(e.to_string())
        }
    })
}

/// Where a [`DramFigure`] comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DramSource {
    /// Probed by this process, just now.
    Probed,
    /// Read from the cache.
    Cached {
        /// Seconds since it was probed.
        age_secs: u64,
    },
}

/// The latency of one dependent DRAM access, with where it comes from and the load it was
/// measured under, so that a figure measured on a busy machine does not pass unnoticed.
#[derive(Clone, Debug, PartialEq)]
pub struct DramFigure {
    /// Nanoseconds per dependent access.
    pub ns: f64,
    /// Probed now or cached.
    pub source: DramSource,
    /// The 1-minute load average while it was probed ([`LoadAvg::worst`]); `None` where
    /// unknown.
    pub loadavg: Option<f64>,
    /// CPUs of the machine it was probed on (the scale of `loadavg`).
    pub cores: u32,
}

impl DramFigure {
    fn new(c: &Cached, source: DramSource) -> DramFigure {
        DramFigure {
            ns: c.result.latency_ns,
            source,
            loadavg: c.loadavg.map(LoadAvg::worst),
            cores: c.host.cores,
        }
    }

    /// The figure of `c`, just probed by this process.
    pub fn probed(c: &Cached) -> DramFigure {
        DramFigure::new(c, DramSource::Probed)
    }

    /// The figure and its source in a few words: `274 ns (probed now, load 0.10)` or
    /// `274 ns (cached, probed 3 h ago at load 0.12)`.
    pub fn describe(&self) -> String {
        let load = self
            .loadavg
            .map_or_else(|| "unknown".to_owned(), |l| format!("{l:.2}"));
        match self.source {
            DramSource::Probed => format!("{:.0} ns (probed now, load {load})", self.ns),
            DramSource::Cached { age_secs } => format!(
                "{:.0} ns (cached, probed {} ago at load {load})",
                self.ns,
                human_age(age_secs)
            ),
        }
    }

    /// Whether other processes were busy while it was probed (see [`is_busy`]).
    pub fn busy(&self) -> bool {
        self.loadavg.is_some_and(|l| is_busy(l, self.cores))
    }

    /// A warning for stderr when the figure was probed on a busy machine, `None` otherwise.
    pub fn warning(&self) -> Option<String> {
        let load = self.loadavg.filter(|_| self.busy())?;
        let when = match self.source {
            DramSource::Probed => "just now".to_owned(),
            DramSource::Cached { age_secs } => format!("{} ago", human_age(age_secs)),
        };
        Some(format!(
            "warning: DRAM latency {:.0} ns was probed {when} at load {load:.2} on {} cores: \
             other processes were busy, so it is likely inflated; --reprobe on a quiet machine \
             measures it again",
            self.ns, self.cores
        ))
    }
}

impl fmt::Display for DramFigure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

/// A duration in the largest unit that keeps it readable: `45 s`, `12 min`, `3 h`, `2 d`.
fn human_age(secs: u64) -> String {
    match secs {
        0..90 => format!("{secs} s"),
        90..5400 => format!("{} min", (secs + 30) / 60),
        5400..172_800 => format!("{} h", (secs + 1800) / 3600),
        _ => format!("{} d", (secs + 43_200) / 86_400),
    }
}

/// The configuration of the quick probe behind [`dram_figure`]: `K = 1` only, on the same
/// 4 GiB huge-page array as the full probe, a few seconds.
///
/// The array size matters: on this project's machines (virtualised, nested paging) a 1 GiB array
/// measured ~213 ns and a 4 GiB one ~290 ns, because the larger array's 2 MiB-page translations
/// no longer all fit the TLB. The unit of `dram_rt_per_op` must not depend on which probe ran
/// first, and the indexes measured span gigabytes, so both probes use the full size.
fn quick_config() -> ProbeConfig {
    ProbeConfig {
        ks: vec![1],
        rounds: 3_000_000,
        ..ProbeConfig::default()
    }
}

/// Whether `r` measured what [`dram_figure`] measures (the same array size, on huge pages), so
/// that caching it keeps the unit of `dram_rt_per_op` the same.
pub fn matches_quick_probe(r: &ProbeResult) -> bool {
    let q = quick_config();
    r.huge_pages_requested == q.huge_pages && r.array_bytes == q.array_bytes
}

/// The latency of one dependent DRAM access, with its source.
///
/// Unless `reprobe`, a cached figure at [`cache_path`] answers at once if [`decide`] finds it
/// still holds: at most a day old, from this host, CPU model and kernel, and not measured under
/// load while the machine is quiet now. Otherwise (a stderr line says why) a quick probe runs
/// (`K = 1` only, a 4 GiB array, a few seconds) and its result, stamped with the time, the load
/// and the machine, replaces the cache. Failing to save only warns: the measurement still
/// stands. A figure probed under load (see [`is_busy`]) gets a warning on stderr.
pub fn dram_figure(reprobe: bool) -> anyhow::Result<DramFigure> {
    figure_at(&cache_path(), reprobe, &Here::current(), &quick_config())
}

/// [`dram_figure`] with the cache, the machine, the moment and the probe given.
fn figure_at(
    path: &Path,
    reprobe: bool,
    here: &Here,
    cfg: &ProbeConfig,
) -> anyhow::Result<DramFigure> {
    let stale = if reprobe {
        Stale::Asked
    } else {
        match load(path) {
            Ok(c) => match decide(&c, here) {
                Decision::Use => {
                    let age_secs = here.now.saturating_sub(c.measured_at);
                    let figure = DramFigure::new(&c, DramSource::Cached { age_secs });
                    if let Some(w) = figure.warning() {
                        eprintln!("{w}");
                    }
                    return Ok(figure);
                }
                Decision::Reprobe(stale) => stale,
            },
            Err(stale) => stale,
        }
    };
    eprintln!(
        "DRAM probe cache {}: {stale}; probing DRAM latency",
        path.display()
    );
    let c = measure_at(cfg, here).context("probing DRAM latency")?;
    let figure = DramFigure::new(&c, DramSource::Probed);
    match save(&c, path) {
        Ok(()) => eprintln!("probed DRAM latency: {figure}; cached"),
        Err(e) => eprintln!("probed DRAM latency: {figure}; could not cache it: {e:#}"),
    }
    if let Some(w) = figure.warning() {
        eprintln!("{w}");
    }
    Ok(figure)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> ProbeConfig {
        ProbeConfig {
            array_bytes: 64 << 20,
            ks: vec![1, 2, 4, 8],
            rounds: 20_000,
            huge_pages: true,
        }
    }

    #[test]
    fn small_probe_is_sane() {
        let cfg = small();
        let r = run_probe(&cfg).unwrap();
        assert!(r.latency_ns.is_finite() && r.latency_ns > 0.0);
        assert_eq!(r.curve.len(), cfg.ks.len());
        for (p, &k) in r.curve.iter().zip(&cfg.ks) {
            assert_eq!(p.k, k);
            assert!(p.ns_per_round.is_finite() && p.ns_per_round > 0.0);
            assert!(p.mlp.is_finite() && p.mlp > 0.0);
        }
        assert_eq!(r.curve[0].relative, 1.0);
        assert_eq!(r.curve[0].mlp, 1.0);
        assert!(r.c.is_finite());
        assert_eq!(r.array_bytes, 64 << 20);
        assert!(r.huge_pages_requested);
        let text = format_probe(&r);
        assert!(text.contains("latency"));
        assert_eq!(text.lines().count(), 4 + cfg.ks.len());
    }

    #[test]
    fn k1_is_measured_even_when_not_listed() {
        let cfg = ProbeConfig {
            array_bytes: 1 << 20,
            ks: vec![3],
            rounds: 1000,
            huge_pages: false,
        };
        let r = run_probe(&cfg).unwrap();
        assert_eq!(r.curve.len(), 1);
        assert_eq!(r.curve[0].k, 3);
        assert!(r.latency_ns > 0.0 && r.c.is_finite());
    }

    #[test]
    fn array_is_rounded_to_a_power_of_two_of_lines() {
        let cfg = ProbeConfig {
            array_bytes: 3 << 20,
            ks: vec![1],
            rounds: 100,
            huge_pages: false,
        };
        assert_eq!(run_probe(&cfg).unwrap().array_bytes, 2 << 20);
    }

    #[test]
    fn bad_configs_are_errors() {
        let ok = ProbeConfig {
            array_bytes: 1 << 20,
            ks: vec![1],
            rounds: 10,
            huge_pages: false,
        };
        let mut c = ok.clone();
        c.ks.clear();
        assert!(run_probe(&c).is_err());
        let mut c = ok.clone();
        c.ks = vec![0];
        assert!(run_probe(&c).is_err());
        let mut c = ok.clone();
        c.rounds = 0;
        assert!(run_probe(&c).is_err());
        let mut c = ok;
        c.array_bytes = 64;
        assert!(run_probe(&c).is_err());
    }

    #[test]
    fn fit_recovers_slope() {
        let curve: Vec<KPoint> = [1usize, 2, 4, 8, 16]
            .iter()
            .map(|&k| {
                let relative = 1.0 + 0.1 * (k as f64 - 1.0);
                KPoint {
                    k,
                    ns_per_round: 100.0 * relative,
                    relative,
                    mlp: k as f64 / relative,
                }
            })
            .collect();
        assert!((fit_c(&curve) - 0.1).abs() < 1e-12);
        assert_eq!(fit_c(&curve[..1]), 0.0);
    }

    #[test]
    fn the_quick_probe_reads_every_random_index() {
        // The quick and the full probe keep their full 32 MiB stream of random indexes.
        let q = quick_config();
        assert_eq!(random_len(&[1], q.rounds.div_ceil(PASSES)), RANDOM_INDEXES);
        let d = ProbeConfig::default();
        assert_eq!(random_len(&d.ks, d.rounds.div_ceil(PASSES)), RANDOM_INDEXES);
        // A small probe gets a power of two covering what it reads.
        assert_eq!(random_len(&[1], 200), 2048);
        assert_eq!(random_len(&[1], 1), 1024);
        assert_eq!(random_len(&[1, 64], usize::MAX), RANDOM_INDEXES);
    }

    #[test]
    fn default_config_matches_spec() {
        let d = ProbeConfig::default();
        assert_eq!(d.array_bytes, 4 << 30);
        assert_eq!(d.ks.len(), 21);
        assert_eq!(&d.ks[..16], &(1..=16).collect::<Vec<_>>()[..]);
        assert_eq!(&d.ks[16..], &[20, 24, 32, 48, 64]);
        assert!(d.huge_pages);
    }

    /// A result as a probe of `latency_ns` would give it.
    fn result(latency_ns: f64) -> ProbeResult {
        ProbeResult {
            latency_ns,
            curve: vec![
                KPoint {
                    k: 1,
                    ns_per_round: latency_ns,
                    relative: 1.0,
                    mlp: 1.0,
                },
                KPoint {
                    k: 4,
                    ns_per_round: 160.0,
                    relative: 160.0 / latency_ns,
                    mlp: 4.0 * latency_ns / 160.0,
                },
            ],
            c: 0.1,
            array_bytes: 1 << 30,
            huge_pages_requested: true,
            anon_huge_page_bytes: Some(1 << 30),
        }
    }

    /// A fixed moment on a fixed, quiet, 2-core machine.
    fn here() -> Here {
        Here {
            host: HostFacts {
                hostname: "vm".into(),
                cpu: "AMD EPYC 9B14".into(),
                kernel: "6.18.44-fc-v657".into(),
                cores: 2,
            },
            now: 1_795_446_245,
            loadavg: Some(0.1),
        }
    }

    /// What `here()` cached `age_secs` ago at load `load`.
    fn cached(age_secs: u64, load: f64) -> Cached {
        let h = here();
        let at = h.now - age_secs;
        Cached {
            result: result(274.0),
            measured_at: at,
            measured_at_utc: rfc3339_utc(UNIX_EPOCH + Duration::from_secs(at)),
            loadavg: Some(LoadAvg {
                start: load,
                end: load,
            }),
            host: h.host,
        }
    }

    /// A probe small enough for a test to run it in a few milliseconds.
    fn tiny() -> ProbeConfig {
        ProbeConfig {
            array_bytes: 1 << 20,
            ks: vec![1],
            rounds: 1000,
            huge_pages: false,
        }
    }

    #[test]
    fn cache_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a").join("b").join("probe.json");
        let c = cached(3600, 0.12);
        save(&c, &path).unwrap();
        let back = load(&path).unwrap();
        let r = &c.result;
        assert_eq!(back.result.latency_ns, r.latency_ns);
        assert_eq!(back.result.c, r.c);
        assert_eq!(back.result.curve.len(), 2);
        assert_eq!(back.result.curve[1].k, 4);
        // serde_json's default float parser may be off by one ulp.
        assert!((back.result.curve[1].relative - r.curve[1].relative).abs() < 1e-12);
        assert_eq!(back.result.array_bytes, r.array_bytes);
        assert_eq!(back.result.anon_huge_page_bytes, r.anon_huge_page_bytes);
        assert_eq!(back.measured_at, c.measured_at);
        assert_eq!(back.measured_at_utc, "2026-11-23T14:04:05Z");
        assert_eq!(back.loadavg, c.loadavg);
        assert_eq!(back.host, c.host);
        // The result's fields stay at the top level, beside the new ones.
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(json["latency_ns"], 274.0);
        assert_eq!(json["loadavg"]["start"], 0.12);
        assert_eq!(json["host"]["kernel"], "6.18.44-fc-v657");
        // Only the cache file is left behind, no temporary.
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1
        );
    }

    #[test]
    fn unusable_files_say_why() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            load(&dir.path().join("missing.json")).unwrap_err(),
            Stale::Missing
        );
        let path = dir.path().join("probe.json");
        std::fs::write(&path, "{not json").unwrap();
        assert!(matches!(load(&path), Err(Stale::Unreadable(_))));
        // A cache written before the facts were recorded: the result alone.
        std::fs::write(&path, serde_json::to_string(&result(803.0)).unwrap()).unwrap();
        assert_eq!(load(&path).unwrap_err(), Stale::NoFacts);
        // A directory where the file should be.
        assert!(matches!(load(dir.path()), Err(Stale::Unreadable(_))));
    }

    #[test]
    fn a_recent_figure_from_this_machine_is_used() {
        let h = here();
        assert_eq!(decide(&cached(0, 0.1), &h), Decision::Use);
        assert_eq!(decide(&cached(MAX_AGE_SECS, 0.1), &h), Decision::Use);
        // A little clock skew is tolerated.
        let mut c = cached(0, 0.1);
        c.measured_at += 60;
        assert_eq!(decide(&c, &h), Decision::Use);
        // Busy then and busy now (or load unknown now): a new probe would be no better.
        assert_eq!(
            decide(
                &cached(60, 1.5),
                &Here {
                    loadavg: Some(1.2),
                    ..here()
                }
            ),
            Decision::Use
        );
        assert_eq!(
            decide(
                &cached(60, 1.5),
                &Here {
                    loadavg: None,
                    ..here()
                }
            ),
            Decision::Use
        );
        // The core count may differ (taskset, cgroups): the machine is the same.
        let mut c = cached(60, 0.1);
        c.host.cores = 8;
        assert_eq!(decide(&c, &h), Decision::Use);
    }

    #[test]
    fn stale_figures_are_probed_again() {
        let h = here();
        let reason = |c: &Cached| match decide(c, &h) {
            Decision::Reprobe(s) => s,
            Decision::Use => panic!("{c:?} was used"),
        };
        assert_eq!(
            reason(&cached(MAX_AGE_SECS + 1, 0.1)),
            Stale::Old {
                age_secs: MAX_AGE_SECS + 1
            }
        );
        let mut c = cached(0, 0.1);
        c.measured_at += 3600;
        assert_eq!(reason(&c), Stale::Future { ahead_secs: 3600 });
        let mut c = cached(0, 0.1);
        c.host.hostname = "other".into();
        assert!(matches!(reason(&c), Stale::OtherHost { .. }));
        let mut c = cached(0, 0.1);
        c.host.cpu = "Intel Xeon".into();
        assert!(matches!(reason(&c), Stale::OtherCpu { .. }));
        let mut c = cached(0, 0.1);
        c.host.kernel = "6.1.0".into();
        assert_eq!(
            reason(&c),
            Stale::OtherKernel {
                then: "6.1.0".into(),
                now: "6.18.44-fc-v657".into()
            }
        );
        let mut c = cached(0, 0.1);
        c.result.latency_ns = f64::NAN;
        assert_eq!(reason(&c), Stale::BadFigure);
        // The incident behind these rules: 803 ns probed under load, 286 ns on the quiet machine.
        let mut c = cached(600, 2.3);
        c.result.latency_ns = 803.0;
        assert_eq!(
            reason(&c),
            Stale::BusyThen {
                load: 2.3,
                cores: 2
            }
        );
        for s in [reason(&c), Stale::NoFacts, Stale::Unreadable("eof".into())] {
            assert!(!s.to_string().is_empty());
        }
    }

    #[test]
    fn figures_describe_their_source_and_warn_when_probed_under_load() {
        let quiet = DramFigure::new(
            &cached(3 * 3600, 0.12),
            DramSource::Cached { age_secs: 3 * 3600 },
        );
        assert_eq!(
            quiet.describe(),
            "274 ns (cached, probed 3 h ago at load 0.12)"
        );
        assert_eq!(quiet.to_string(), quiet.describe());
        assert!(!quiet.busy() && quiet.warning().is_none());
        let now = DramFigure::new(&cached(0, 0.1), DramSource::Probed);
        assert_eq!(now.describe(), "274 ns (probed now, load 0.10)");
        let busy = DramFigure::new(&cached(0, 1.0), DramSource::Probed);
        assert!(busy.busy());
        let w = busy.warning().unwrap();
        assert!(
            w.contains("load 1.00 on 2 cores") && w.contains("--reprobe"),
            "{w}"
        );
        let unknown = DramFigure {
            loadavg: None,
            ..now
        };
        assert_eq!(unknown.describe(), "274 ns (probed now, load unknown)");
        assert!(!unknown.busy());
        assert_eq!(human_age(45), "45 s");
        assert_eq!(human_age(12 * 60), "12 min");
        assert_eq!(human_age(2 * 86_400), "2 d");
    }

    #[test]
    fn load_averages_parse_and_scale_with_cores() {
        assert_eq!(parse_loadavg("1.22 0.94 0.65 3/101 24251\n"), Some(1.22));
        assert_eq!(parse_loadavg(""), None);
        assert_eq!(parse_loadavg("x 1 2"), None);
        assert_eq!(parse_loadavg("-1 0 0"), None);
        assert!(is_busy(1.0, 2) && !is_busy(0.99, 2));
        assert!(is_busy(4.0, 8) && !is_busy(3.9, 8));
        // Unknown cores (0) count as one.
        assert!(is_busy(0.5, 0) && !is_busy(0.4, 0));
    }

    #[test]
    fn a_fresh_matching_cache_answers_without_probing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("probe.json");
        save(&cached(3 * 3600, 0.12), &path).unwrap();
        // An impossible probe config: probing would fail, so success means no probe ran.
        let never = ProbeConfig {
            ks: vec![],
            ..tiny()
        };
        let f = figure_at(&path, false, &here(), &never).unwrap();
        assert_eq!(f.ns, 274.0);
        assert_eq!(f.source, DramSource::Cached { age_secs: 3 * 3600 });
        assert_eq!(f.loadavg, Some(0.12));
        // --reprobe probes whatever the cache holds.
        assert!(figure_at(&path, true, &here(), &never).is_err());
    }

    #[test]
    fn stale_caches_are_reprobed_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("probe.json");
        let mut other_host = cached(60, 0.1);
        other_host.host.hostname = "other".into();
        let mut other_kernel = cached(60, 0.1);
        other_kernel.host.kernel = "5.15.0".into();
        let stale: Vec<String> = vec![
            serde_json::to_string(&cached(MAX_AGE_SECS + 3600, 0.1)).unwrap(),
            serde_json::to_string(&other_host).unwrap(),
            serde_json::to_string(&other_kernel).unwrap(),
            serde_json::to_string(&cached(60, 2.3)).unwrap(),
            // Missing fields: the format before the facts were recorded.
            serde_json::to_string(&result(803.0)).unwrap(),
            "garbage".into(),
            String::new(),
        ];
        let h = here();
        for (i, text) in stale.iter().enumerate() {
            std::fs::write(&path, text).unwrap();
            let f = figure_at(&path, false, &h, &tiny()).unwrap();
            assert_eq!(f.source, DramSource::Probed, "case {i}");
            assert!(f.ns.is_finite() && f.ns > 0.0, "case {i}");
            assert_ne!(f.ns, 274.0, "case {i}: the cached figure was used");
            // The new figure replaced the cache, stamped with this machine and moment, and
            // answers the next call.
            let c = load(&path).unwrap();
            assert_eq!((c.measured_at, &c.host), (h.now, &h.host), "case {i}");
            assert_eq!(c.result.latency_ns, f.ns);
            assert_eq!(c.result.array_bytes, 1 << 20);
            assert_eq!(
                decide(
                    &c,
                    &Here {
                        loadavg: None,
                        ..h.clone()
                    }
                ),
                Decision::Use
            );
        }
        // No cache at all is probed too.
        std::fs::remove_file(&path).unwrap();
        let f = figure_at(&path, false, &h, &tiny()).unwrap();
        assert_eq!(f.source, DramSource::Probed);
        assert!(path.exists());
    }

    #[test]
    fn only_the_quick_probes_setup_is_cached_for_run() {
        let mut r = result(290.0);
        r.array_bytes = quick_config().array_bytes;
        assert!(matches_quick_probe(&r));
        r.huge_pages_requested = false;
        assert!(!matches_quick_probe(&r));
        assert!(!matches_quick_probe(&result(213.0)), "1 GiB array");
    }

    #[test]
    fn cache_path_precedence() {
        let os = |s: &str| Some(OsString::from(s));
        assert_eq!(
            cache_path_from(os("/x/p.json"), os("/xdg"), os("/home/u")),
            PathBuf::from("/x/p.json")
        );
        assert_eq!(
            cache_path_from(None, os("/xdg"), os("/home/u")),
            PathBuf::from("/xdg/mlpdex/probe.json")
        );
        assert_eq!(
            cache_path_from(os(""), os(""), os("/home/u")),
            PathBuf::from("/home/u/.cache/mlpdex/probe.json")
        );
        assert_eq!(
            cache_path_from(None, None, None),
            PathBuf::from("mlpdex-probe.json")
        );
    }

    /// The quick probe behind `dram_figure`, without touching the real cache. Run with
    /// `cargo test --release -p mlpdex-bench --lib probe -- --ignored --nocapture`.
    #[test]
    #[ignore = "takes a few seconds and 4 GiB of memory"]
    fn quick_probe() {
        let start = Instant::now();
        let c = measure(&quick_config()).unwrap();
        let took = start.elapsed().as_secs_f64();
        let dir = tempfile::tempdir().unwrap();
        save(&c, &dir.path().join("probe.json")).unwrap();
        println!("{}", format_probe(&c.result));
        println!("{}", DramFigure::new(&c, DramSource::Probed));
        println!("quick probe took {took:.1} s");
    }

    /// The full default probe (4 GiB, ~30 s). Run with
    /// `cargo test --release -p mlpdex-bench --lib probe -- --ignored --nocapture`.
    #[test]
    #[ignore = "takes about half a minute and 4 GiB of memory"]
    fn full_probe() {
        let start = Instant::now();
        let r = run_probe(&ProbeConfig::default()).unwrap();
        println!("{}", format_probe(&r));
        println!("took {:.1} s", start.elapsed().as_secs_f64());
    }
}
