//! `shortcut-eh` and `eh`: [`mlpdex::shortcut_eh::ShortcutEh`] over big-endian 8-byte keys
//! (8-byte datasets only), with its shortcut directory, and without it (classic extendible
//! hashing on the traditional directory: the paper's EH baseline, the same code).
//!
//! The fan-in sweep's variants (`shortcut-eh-d20`, `eh-d20`, §3.2) start with a directory of
//! 2^20 slots, so that the load set's size sets the fan-in (slots per bucket), and the
//! shortcut variant takes its shortcut at any fan-in.

use mlpdex::shortcut_eh::{Config, ShortcutEh};

use crate::adapter::{BenchIndex, Caps};
use crate::baselines::{check_width, u64_key};
use crate::keys::Keys;

/// Shortcut extendible hashing (`S = true`) or classic extendible hashing (`S = false`),
/// with a directory of `2^D` slots to start with (`D > 0`: a fan-in sweep variant, whose
/// shortcut is taken whatever the fan-in).
#[derive(Debug)]
pub struct Eh<const S: bool, const D: u32 = 0>(ShortcutEh);

impl<const S: bool, const D: u32> BenchIndex for Eh<S, D> {
    const CAPS: Caps = Caps {
        writes: true,
        ordered: false,
        concurrent: false,
    };

    fn create(load_set: &Keys) -> anyhow::Result<Self> {
        check_width::<u64>(load_set, if S { "shortcut-eh" } else { "eh" })?;
        Ok(Eh(ShortcutEh::with_config(Config {
            shortcut: S,
            initial_depth: D,
            fan_in_threshold: if D > 0 { f64::INFINITY } else { 8.0 },
            ..Config::default()
        })?))
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        self.0.get(u64_key(key))
    }

    #[inline]
    fn insert(&mut self, key: &[u8], value: u64) -> Option<u64> {
        self.0
            .insert(u64_key(key), value)
            .expect("the system has memory for the benchmark's table")
    }

    fn before_run(&mut self) {
        // Runs start with the shortcut in step with the directory (the paper's lookups run
        // on a synchronized shortcut); the mapper keeps up with the load on the other core,
        // and this wait is timed by no measurement.
        self.0.wait_for_shortcut();
    }

    fn mapped_bytes(&self) -> usize {
        // The pool and the shortcut's kernel cost; the directory is on the global allocator,
        // which the harness counts itself.
        self.0.memory_usage() - self.0.stats().slots * 4
    }

    fn notes(&self, keys: usize) -> Vec<String> {
        // After the load, untimed: let the mapper catch up, so the note says whether runs
        // will take the shortcut rather than whether it had caught up the instant the load
        // ended.
        self.0.wait_for_shortcut();
        let s = self.0.stats();
        let mut out = vec![format!(
            "{} buckets, {} directory slots (fan-in {:.2}), {} pool pages, {:.1} B/key; shortcut {}",
            s.buckets,
            s.slots,
            s.fan_in,
            s.pool_pages,
            self.0.memory_usage() as f64 / keys.max(1) as f64,
            if s.shortcut_in_use {
                "in use"
            } else {
                "not in use"
            },
        )];
        if let Some(e) = self.0.shortcut_error() {
            out.push(format!("shortcut given up: {e}"));
        }
        out
    }
}
