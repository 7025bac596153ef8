//! The harness's memory setting: jemalloc on 2 MiB transparent huge pages, and its statistics.
//!
//! Fairness: the papers measured every index with huge pages (mlp-data-structures.txt §2.4,
//! cuckoo-trie.txt §6), and an index that maps its own huge-page table would otherwise get an
//! advantage over baselines on the 4 KiB-page system allocator. So the whole process allocates
//! through jemalloc with `thp:always` (jemalloc then `madvise(MADV_HUGEPAGE)`s every extent it
//! maps, which is what the kernel's THP `madvise` mode needs) and `metadata_thp:always`.
//!
//! Purging is off (`dirty_decay_ms:-1,muzzy_decay_ms:-1`): jemalloc would otherwise return
//! freed pages to the kernel on a timer, and purging part of a huge page splits it, so memory
//! an index reuses after a resize would land on 4 KiB pages at times that vary from run to run.
//! Each index also runs in a process of its own (see `mlpdex-bench run`), so none inherits
//! another's heap. `oversize_threshold:0` keeps large allocations in the same arena as small
//! ones, so pages the harness faults in before a load (`prefault_heap` in `main.rs`) serve every
//! allocation of the index.
//! `mlpdex-bench run --no-huge-pages` re-executes the process with `thp:never` (jemalloc reads
//! its `_RJEM_MALLOC_CONF` environment variable after this compiled-in default, so it wins) and
//! `MLPDEX_HUGE_PAGES=0` for regions mapped by mlpdex itself.
//!
//! Memory accounting: [`allocated_bytes`] is jemalloc's `stats.allocated`, the bytes currently
//! handed out to the program (exact, excluding allocator fragmentation). The harness reads it
//! before and after building an index; the difference plus the regions the index maps directly
//! is the index's footprint.

use std::ffi::CStr;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// A `const char *` jemalloc reads at start-up.
#[derive(Debug)]
#[repr(transparent)]
pub struct ConfPtr(*const u8);

// SAFETY: the pointer refers to an immutable 'static string; sharing it between threads is safe.
unsafe impl Sync for ConfPtr {}

/// jemalloc's compiled-in options (the crate builds jemalloc with the `_rjem_` symbol prefix).
// SAFETY: jemalloc defines no symbol of this name itself; it reads it as a NUL-terminated C string
// during initialisation, and `ConfPtr` is a single pointer to one, as `const char *` is.
#[unsafe(export_name = "_rjem_malloc_conf")]
pub static MALLOC_CONF: ConfPtr = ConfPtr(
    c"thp:always,metadata_thp:always,dirty_decay_ms:-1,muzzy_decay_ms:-1,oversize_threshold:0"
        .as_ptr()
        .cast(),
);

/// Environment variable through which jemalloc options override [`MALLOC_CONF`].
pub const ENV_CONF: &str = "_RJEM_MALLOC_CONF";

/// Options that switch huge pages off, for `--no-huge-pages`.
pub const NO_HUGE_PAGES_CONF: &str = "thp:never,metadata_thp:disabled";

/// Bytes currently allocated by the program (jemalloc `stats.allocated`, refreshed first).
pub fn allocated_bytes() -> usize {
    // Statistics are cached per epoch; advancing it refreshes them. Both calls only fail if
    // jemalloc was built without statistics, which this crate's features rule out.
    let _ = tikv_jemalloc_ctl::epoch::advance();
    tikv_jemalloc_ctl::stats::allocated::read().unwrap_or(0)
}

/// jemalloc's effective `opt.thp` setting: "always", "never" or "default".
pub fn thp_mode() -> String {
    // SAFETY: `opt.thp` is a read-only jemalloc option of type `const char *`, pointing to a
    // static string for the process's lifetime.
    let p = unsafe { tikv_jemalloc_ctl::raw::read::<*const libc::c_char>(b"opt.thp\0") };
    match p {
        // SAFETY: see above: a valid NUL-terminated static string.
        Ok(p) if !p.is_null() => unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned(),
        _ => "unknown".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiled_in_thp_setting_is_in_effect() {
        // The test binary links this module too; unless the environment overrides it,
        // jemalloc runs with huge pages on.
        if std::env::var_os(ENV_CONF).is_none() {
            assert_eq!(thp_mode(), "always");
        }
    }

    #[test]
    fn allocation_statistics_track_allocations() {
        // The counter is process-wide: tests running on other threads free memory at the same
        // time and can hide part of the block. A few attempts; one clean one proves the point.
        let mut seen = Vec::new();
        for _ in 0..5 {
            let before = allocated_bytes();
            let block = vec![7u8; 64 << 20];
            let during = allocated_bytes();
            drop(block);
            if during >= before + (64 << 20) - (1 << 20) {
                return;
            }
            seen.push((before, during));
        }
        panic!("a 64 MiB block never showed in the statistics: {seen:?}");
    }
}
