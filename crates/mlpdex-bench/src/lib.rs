//! The `mlpdex-bench` harness as a library, so its parts are testable: datasets, workloads,
//! the adapter interface with baselines, execution modes, the DRAM probe, and output.
//!
//! The harness process allocates through jemalloc configured for 2 MiB transparent huge pages
//! (see [`alloc`]), so every index, baselines included, gets the same memory setting, and its
//! statistics give each index's exact heap footprint.

pub mod adapter;
pub mod alloc;
pub mod baselines;
pub mod dataset;
pub mod exec;
pub mod keys;
pub mod probe;
pub mod record;
pub mod registry;
pub mod report;
pub mod table;
pub mod workload;
