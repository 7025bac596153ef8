//! The resize driver of the `-growing` twins (`mlp-index-concurrent-growing`,
//! `cuckoo-trie-concurrent-growing`): a thread that, for the whole of a run, doubles the
//! index's table and shrinks it back, again and again, so that the run's lookups are measured
//! while a resize is under way. Its rebuilds land in the run's record as merges (entries,
//! seconds, table bytes before and after).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Instant;

use crate::adapter::Merge;

/// What the driver does to an index: its length and table bytes, and the two resizes.
pub trait Resizable: Send + Sync + 'static {
    /// Keys in the index.
    fn keys(&self) -> usize;
    fn table_bytes(&self) -> usize;
    /// Makes room for `keys` more keys (a rebuild into a table twice as large).
    fn reserve(&self, keys: usize);
    /// Rebuilds the table at the size growth would give the keys present.
    fn shrink_to_fit(&self);
}

/// A running driver; [`stop`](Self::stop) ends it and returns its rebuilds.
#[derive(Debug)]
struct ResizeDriver {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<Merge>>,
}

impl ResizeDriver {
    /// Starts resizing `map`: `reserve(len)`, then `shrink_to_fit`, and so on.
    fn start<M: Resizable>(map: Arc<M>) -> ResizeDriver {
        let stop = Arc::new(AtomicBool::new(false));
        let halt = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut rebuilds = Vec::new();
            let mut grow = true;
            while !halt.load(Ordering::Acquire) {
                let before = map.table_bytes();
                let t = Instant::now();
                if grow {
                    map.reserve(map.keys());
                } else {
                    map.shrink_to_fit();
                }
                rebuilds.push(Merge {
                    entries: map.keys() as u64,
                    secs: t.elapsed().as_secs_f64(),
                    filter_secs: 0.0,
                    old_bytes: before as u64,
                    new_bytes: map.table_bytes() as u64,
                });
                grow = !grow;
            }
            rebuilds
        });
        ResizeDriver { stop, thread }
    }

    /// Stops the driver after its current rebuild; returns every rebuild it made.
    fn stop(self) -> Vec<Merge> {
        self.stop.store(true, Ordering::Release);
        self.thread.join().expect("the resize driver")
    }
}

/// A `-growing` twin's resizes: the driver of the run under way, and the rebuilds of the runs
/// so far (the adapter's `before_run`, `after_run` and `take_merges` forward here).
#[derive(Debug, Default)]
pub struct Rebuilds {
    driver: Option<ResizeDriver>,
    done: Vec<Merge>,
}

impl Rebuilds {
    /// Starts a driver on `map` if `growing`.
    pub fn start<M: Resizable>(&mut self, growing: bool, map: &Arc<M>) {
        if growing {
            self.driver = Some(ResizeDriver::start(Arc::clone(map)));
        }
    }

    /// Stops the running driver, if any, keeping its rebuilds.
    pub fn stop(&mut self) {
        if let Some(d) = self.driver.take() {
            self.done.extend(d.stop());
        }
    }

    /// The rebuilds kept so far.
    pub fn take(&mut self) -> Vec<Merge> {
        std::mem::take(&mut self.done)
    }
}
