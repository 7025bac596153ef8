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
//! The result is cached as JSON (see [`cache_path`]) so that benchmark runs need not re-probe.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, bail};
use rand::{Rng as _, SeedableRng as _};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

/// Bytes in one cache line; the array is addressed in whole lines.
const LINE: usize = 64;
/// `u64` words in one cache line.
const WORDS_PER_LINE: usize = LINE / 8;
/// Entries in the vector of random line indexes (32 MiB of `u64`). It is read sequentially, so
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

/// Measures DRAM latency and the MLP curve as configured. Single-threaded; memory use is
/// `array_bytes` plus 32 MiB.
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
    let random: Vec<u64> = (0..RANDOM_INDEXES).map(|_| rng.next_u64()).collect();
    let mut cur = Cursor { sum: 0, pos: 0 };

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

/// Writes `r` as JSON to `path`, creating parent directories. The file is written under a
/// temporary name and renamed, so a concurrent reader never sees half a file.
pub fn save(r: &ProbeResult, path: &Path) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating probe cache directory {}", dir.display()))?;
    }
    let json = serde_json::to_string_pretty(r)?;
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

/// Reads a cached probe result; `None` if the file is missing, unreadable or not a result.
pub fn load(path: &Path) -> Option<ProbeResult> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// The configuration of the quick probe behind [`dram_latency_ns`]: `K = 1` only, on the same
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

/// The latency of one dependent DRAM access in nanoseconds.
///
/// Unless `reprobe`, a valid cached result at [`cache_path`] answers at once. Otherwise a quick
/// probe runs (`K = 1` only, a 4 GiB array, a few seconds), its result is saved to the cache, and
/// a one-line note on stderr says so. Failing to save only warns: the measurement still stands.
pub fn dram_latency_ns(reprobe: bool) -> anyhow::Result<f64> {
    let path = cache_path();
    if !reprobe {
        let cached = load(&path).map(|r| r.latency_ns);
        if let Some(ns) = cached.filter(|ns| ns.is_finite() && *ns > 0.0) {
            return Ok(ns);
        }
    }
    let r = run_probe(&quick_config()).context("probing DRAM latency")?;
    match save(&r, &path) {
        Ok(()) => eprintln!(
            "probed DRAM latency: {:.1} ns per access; cached in {}",
            r.latency_ns,
            path.display()
        ),
        Err(e) => eprintln!(
            "probed DRAM latency: {:.1} ns per access; could not cache it: {e:#}",
            r.latency_ns
        ),
    }
    Ok(r.latency_ns)
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
    fn default_config_matches_spec() {
        let d = ProbeConfig::default();
        assert_eq!(d.array_bytes, 4 << 30);
        assert_eq!(d.ks.len(), 21);
        assert_eq!(&d.ks[..16], &(1..=16).collect::<Vec<_>>()[..]);
        assert_eq!(&d.ks[16..], &[20, 24, 32, 48, 64]);
        assert!(d.huge_pages);
    }

    #[test]
    fn cache_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a").join("b").join("probe.json");
        let r = ProbeResult {
            latency_ns: 123.5,
            curve: vec![
                KPoint {
                    k: 1,
                    ns_per_round: 123.5,
                    relative: 1.0,
                    mlp: 1.0,
                },
                KPoint {
                    k: 4,
                    ns_per_round: 160.0,
                    relative: 160.0 / 123.5,
                    mlp: 4.0 * 123.5 / 160.0,
                },
            ],
            c: 0.1,
            array_bytes: 1 << 30,
            huge_pages_requested: true,
            anon_huge_page_bytes: Some(1 << 30),
        };
        save(&r, &path).unwrap();
        let back = load(&path).unwrap();
        assert_eq!(back.latency_ns, r.latency_ns);
        assert_eq!(back.c, r.c);
        assert_eq!(back.curve.len(), 2);
        assert_eq!(back.curve[1].k, 4);
        // serde_json's default float parser may be off by one ulp.
        assert!((back.curve[1].relative - r.curve[1].relative).abs() < 1e-12);
        assert_eq!(back.array_bytes, r.array_bytes);
        assert_eq!(back.anon_huge_page_bytes, r.anon_huge_page_bytes);
        // Only the cache file is left behind, no temporary.
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1
        );
        // Missing and malformed files read as no cache.
        assert!(load(&dir.path().join("missing.json")).is_none());
        std::fs::write(&path, "{not json").unwrap();
        assert!(load(&path).is_none());
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

    /// The quick probe behind `dram_latency_ns`, without touching the real cache. Run with
    /// `cargo test --release -p mlpdex-bench --lib probe -- --ignored --nocapture`.
    #[test]
    #[ignore = "takes a few seconds and 4 GiB of memory"]
    fn quick_probe() {
        let start = Instant::now();
        let r = run_probe(&quick_config()).unwrap();
        let took = start.elapsed().as_secs_f64();
        let dir = tempfile::tempdir().unwrap();
        save(&r, &dir.path().join("probe.json")).unwrap();
        println!("{}", format_probe(&r));
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
