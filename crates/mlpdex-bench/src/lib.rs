//! The `mlpdex-bench` harness as a library, so its parts are testable: datasets, workloads,
//! the adapter interface with baselines, execution modes, the DRAM probe, and output.
//!
//! The harness process allocates through jemalloc configured for 2 MiB transparent huge pages
//! (see [`alloc`]), so every index, baselines included, gets the same memory setting, and its
//! statistics give each index's exact heap footprint.
//!
//! # How a run goes
//!
//! 1. [`probe::dram_figure`] gives the latency of one dependent DRAM access, the unit of the
//!    `dram_rt_per_op` column: cached for a day on the same machine and kernel, and said to be
//!    cached or probed now, and under what load.
//! 2. [`dataset::load`] builds the load set and a reserve of further keys.
//! 3. [`harness::parent::run`] takes the experiment, a [`harness::spec::Experiment`] (indexes
//!    under workloads, range filters, or HOPE encoders: `run`, `filter` and `hope` share the
//!    engine; `suite` runs a file of them, see [`suite`]). Every round,
//!    each index is loaded in a fresh child process of its own (`mlpdex-bench child`), which gets
//!    the spec whole over the [`harness::protocol`] (JSON lines, never re-parsed command-line
//!    arguments), builds the dataset and [`exec::Plan::prepare`]s that round's operation lists
//!    (identical for every index), and serves [`exec::serve`]: the load is timed and the
//!    index's memory read from the allocator.
//! 4. The parent asks the children for measurements round-robin (one (workload, mode, threads)
//!    across all indexes within seconds, order rotated), for `--repeat` rounds, and keeps the
//!    median round with the spread of all rounds: ratios between indexes then hold on a machine
//!    whose speed drifts. A run that measures nothing is an error, and so is a child that fails
//!    mid-run (after the measurements taken are written).
//! 5. [`table::format_records`] prints the comparison; [`table::append_json`] writes
//!    [`record::Record`]s, a tagged enum with typed fields; [`report::write_report`] and
//!    [`markdown::render`] read them later and parse no names.
//!
//! # Filters
//!
//! `mlpdex-bench filter` measures approximate-membership filters instead of indexes: SuRF
//! variants against a Bloom filter, for false-positive rate, query speed and build speed at
//! each filter's bits per key (memory-efficient-search-trees.txt §4.3). A child process per
//! filter and round prepares the queries and their ground truth, builds its filter on `load` and
//! times a query kind per `run`: see [`filter::Prepared`]. `report` draws its false-positive
//! rates as Figure 4.4, on a log axis.
//!
//! # Adding an index
//!
//! Implement [`adapter::BenchIndex`] for a thin wrapper (declare [`adapter::Caps`]; return
//! answers computed from what the index read), then add an [`registry::Entry`] with a stable
//! kebab-case name. Variants of one structure add a suffix (`cuckoo-trie-d4`) and are a
//! [`registry::Kind::Variant`] of their sweep's family: `all` skips them, `list` shows each family
//! on one line. An index that maps memory outside the global allocator reports it through
//! `mapped_bytes`.
//!
//! # Reading the numbers
//!
//! - `independent` is throughput: consecutive operations overlap in the CPU.
//! - `dependent` is latency: each operation waits for the previous one's answer; `DRAM rt` is
//!   its time in dependent DRAM accesses.
//! - `B/key` is everything the index owns divided by the keys loaded; `ovh B/key` subtracts the
//!   raw key and 8-byte value.
//! - `p50 ns` and `p99 ns` (and `p999_ns`, `max_ns` in the JSON; the markdown tables add
//!   `p99.9 ns`) are percentiles of operations timed one by one, every `--sample-every`-th
//!   (see [`exec::Latency`]).
//! - `batch` above 1 (`--batch N`): reads and lower bounds went to the index in groups of N.
//! - `±` is the spread of the rounds: half the range of their Mops/s over the median round's
//!   (`spread` in the JSON: rounds, slowest and fastest Mops/s).
//! - `series` (with `--latency-series N`): the load's mean ns per insert in windows of N
//!   inserts, in order, for plots of latency as the structure grows.
//! - Every JSON record carries its [`provenance::Provenance`]: commit and dirty flag, date,
//!   host, CPU, cores, huge pages, seed, round and the command line.

pub mod adapter;
pub mod alloc;
pub mod baselines;
pub mod dataset;
pub mod eh_sync;
pub mod exec;
pub mod filter;
pub mod harness;
pub mod keys;
pub mod markdown;
pub mod names;
pub mod ours;
pub mod probe;
pub mod provenance;
pub mod random;
pub mod record;
pub mod registry;
pub mod report;
pub mod suite;
pub mod table;
pub mod workload;
