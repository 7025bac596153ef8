//! The merge of a [`ConcurrentHybrid`](super::ConcurrentHybrid): freeze, build, swap (see
//! the module docs' protocol), and the thread that runs it in the background.

use core::ops::Bound;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::stages::{Dynamic, Stages};
use super::{Inner, lock};
use crate::Error;
use crate::cuckoo_trie::ConcurrentCuckooTrie;
use crate::epoch::pin;
use crate::hybrid::{MergeStats, Slot, StaticStage};

/// Entries copied out of the frozen stage per pin: the copy re-pins between batches so that
/// a long copy does not hold back reclamation.
const COPY_BATCH: usize = 4096;

/// How long a merge waits for the last readers of the stages it replaced before it leaves
/// their freeing to whoever drops them last.
const RECLAIM_PATIENCE: Duration = Duration::from_secs(1);

/// The merge thread's state and the merges' record.
#[derive(Default)]
pub(crate) struct Merger {
    state: Mutex<State>,
    /// Signalled when a merge is requested or the thread should stop.
    wake: Condvar,
    /// Signalled when the thread goes idle.
    idle: Condvar,
}

#[derive(Default)]
struct State {
    requested: bool,
    running: bool,
    shutdown: bool,
    thread: Option<JoinHandle<()>>,
    stats: MergeStats,
    failures: u64,
    last_error: Option<Error>,
}

impl Merger {
    /// Asks the merge thread (started on the first request) for a merge; returns at once.
    pub(crate) fn request<S: StaticStage + Send + Sync + 'static>(&self, inner: &Arc<Inner<S>>) {
        let mut st = lock(&self.state);
        if st.shutdown || st.requested || st.running {
            // A running merge checks the threshold again when it is done.
            return;
        }
        st.requested = true;
        if st.thread.is_none() {
            let inner = Arc::clone(inner);
            let spawned = std::thread::Builder::new()
                .name("mlpdex-hybrid-merge".into())
                .spawn(move || merge_thread(&inner));
            match spawned {
                Ok(handle) => st.thread = Some(handle),
                Err(e) => {
                    // No thread: the next write asks again.
                    st.requested = false;
                    st.failures += 1;
                    // Spawning fails when the system is out of threads or of memory for
                    // the thread's stack.
                    let _ = e;
                    st.last_error = Some(Error::OutOfMemory { bytes: 2 << 20 });
                    return;
                }
            }
        }
        self.wake.notify_one();
    }

    /// Waits until no merge is requested or running.
    pub(crate) fn wait_idle(&self) {
        let mut st = lock(&self.state);
        while st.requested || st.running {
            st = self
                .idle
                .wait(st)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    pub(crate) fn busy(&self) -> bool {
        let st = lock(&self.state);
        st.requested || st.running
    }

    pub(crate) fn stats(&self) -> MergeStats {
        let st = lock(&self.state);
        MergeStats {
            failures: st.failures,
            ..st.stats
        }
    }

    pub(crate) fn last_error(&self) -> Option<Error> {
        lock(&self.state).last_error.clone()
    }

    /// Stops the merge thread after the merge under way, and waits for it.
    pub(crate) fn shut_down(&self) {
        let thread = {
            let mut st = lock(&self.state);
            st.shutdown = true;
            self.wake.notify_all();
            st.thread.take()
        };
        if let Some(t) = thread {
            // A panic in a merge has already been reported by the thread.
            let _ = t.join();
        }
    }

    /// Records a merge's outcome.
    fn record(&self, outcome: &Result<Option<Done>, Error>) {
        let mut st = lock(&self.state);
        match outcome {
            Ok(Some(done)) => {
                let s = &mut st.stats;
                s.merges += 1;
                s.total += done.took;
                s.last = done.took;
                s.last_entries = done.entries;
                s.last_old_bytes = done.old_bytes;
                s.last_new_bytes = done.new_bytes;
            }
            Ok(None) => {}
            Err(e) => {
                st.failures += 1;
                st.last_error = Some(e.clone());
            }
        }
    }
}

/// The merge thread: waits for requests and merges until the map is dropped.
fn merge_thread<S: StaticStage + Send + Sync + 'static>(inner: &Inner<S>) {
    let m = &inner.merger;
    loop {
        {
            let mut st = lock(&m.state);
            while !st.requested && !st.shutdown {
                st = m
                    .wake
                    .wait(st)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
            if st.shutdown {
                st.requested = false;
                m.idle.notify_all();
                return;
            }
            st.requested = false;
            st.running = true;
        }
        let outcome = {
            let _m = lock(&inner.merging);
            inner.merge_once()
        };
        let again = outcome.is_ok() && inner.wants_merge(inner.current.load(&pin()));
        let mut st = lock(&m.state);
        st.running = false;
        st.requested |= again;
        if !st.requested {
            m.idle.notify_all();
        }
    }
}

/// What a merge did.
pub(crate) struct Done {
    took: Duration,
    entries: usize,
    old_bytes: usize,
    new_bytes: usize,
}

/// The frozen stage's entries, copied out in key order: keys end to end, and each entry's
/// end offset and update (`None` for a tombstone).
struct Batch {
    keys: Vec<u8>,
    ends: Vec<usize>,
    updates: Vec<Option<u64>>,
}

impl Batch {
    /// Copies every entry of `trie` (which no one writes any more), re-pinning every
    /// [`COPY_BATCH`] entries.
    fn copy(trie: &ConcurrentCuckooTrie<Slot>) -> Batch {
        let mut b = Batch {
            keys: Vec::new(),
            ends: Vec::with_capacity(trie.len()),
            updates: Vec::with_capacity(trie.len()),
        };
        let mut guard = pin();
        let mut after: Option<Vec<u8>> = None;
        loop {
            let mut n = 0;
            let start = after.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
            for (k, slot) in trie.range((start, Bound::Unbounded), &guard) {
                b.keys.extend_from_slice(k);
                b.ends.push(b.keys.len());
                b.updates.push(slot.update());
                n += 1;
                if n == COPY_BATCH {
                    break;
                }
            }
            if n < COPY_BATCH {
                return b;
            }
            let last_start = b.ends.len().checked_sub(2).map_or(0, |i| b.ends[i]);
            after = Some(b.keys[last_start..].to_vec());
            guard.repin();
        }
    }

    fn iter(&self) -> impl Iterator<Item = (&[u8], Option<u64>)> {
        let starts = core::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .zip(&self.updates)
            .map(|((s, &e), &u)| (&self.keys[s..e], u))
    }
}

impl<S: StaticStage> Inner<S> {
    /// One merge: freeze the dynamic stage (unless a failed merge left one frozen), build the
    /// next static stage from it, swap. `None` when there was nothing to merge. The caller
    /// holds `merging`.
    pub(crate) fn merge_once(&self) -> Result<Option<Done>, Error> {
        let outcome = self.try_merge();
        self.merger.record(&outcome);
        outcome
    }

    fn try_merge(&self) -> Result<Option<Done>, Error> {
        let start = Instant::now();
        let frozen = match self.freeze()? {
            Some(f) => f,
            None => return Ok(None),
        };
        let stat = Arc::clone(&self.current.load(&pin()).stat);
        let old_bytes = stat.memory_usage();
        let batch = Batch::copy(&frozen.trie);
        let new = stat.merged(batch.iter())?;
        drop(batch);
        let (entries, new_bytes) = (new.len(), new.memory_usage());
        {
            let _w = lock(&self.writer);
            let guard = pin();
            let cur = self.current.load(&guard);
            debug_assert!(cur.frozen.as_ref().is_some_and(|f| Arc::ptr_eq(f, &frozen)));
            let swapped = Stages {
                dynamic: Arc::clone(&cur.dynamic),
                frozen: None,
                stat: Arc::new(new),
            };
            self.current.publish(swapped, &guard);
        }
        reclaim(frozen);
        reclaim(stat);
        Ok(Some(Done {
            took: start.elapsed(),
            entries,
            old_bytes,
            new_bytes,
        }))
    }

    /// Publishes a new, empty dynamic stage with the current one as the frozen stage, and
    /// returns it; or the stage a failed merge left frozen; or `None` when the dynamic stage
    /// is empty and nothing is frozen.
    fn freeze(&self) -> Result<Option<Arc<Dynamic>>, Error> {
        let guard = pin();
        let cur = self.current.load(&guard);
        if let Some(f) = &cur.frozen {
            return Ok(Some(Arc::clone(f)));
        }
        if cur.dynamic.trie.is_empty() {
            return Ok(None);
        }
        // Sized for the next merge after this one (made before taking the lock).
        let next = self.threshold(cur.stat.len() + cur.dynamic.trie.len());
        let fresh = Arc::new(Dynamic::new(next)?);
        let _w = lock(&self.writer);
        let cur = self.current.load(&guard);
        let frozen = Arc::clone(&cur.dynamic);
        let stages = Stages {
            dynamic: fresh,
            frozen: Some(Arc::clone(&frozen)),
            stat: Arc::clone(&cur.stat),
        };
        self.current.publish(stages, &guard);
        Ok(Some(frozen))
    }
}

/// Frees a stage a swap replaced, here on the merge's thread, once the last reader pinned
/// before the swap has let go of it (the retired [`Stages`] hold it until then). Gives up
/// after [`RECLAIM_PATIENCE`] (a reader holding a guard that long), leaving the freeing to
/// whoever drops it last.
fn reclaim<T>(mut stage: Arc<T>) {
    let start = Instant::now();
    loop {
        match Arc::try_unwrap(stage) {
            Ok(s) => return drop(s),
            Err(shared) => stage = shared,
        }
        if start.elapsed() > RECLAIM_PATIENCE {
            return;
        }
        // Pinning moves the epoch on, and flushing runs the destructions whose epoch passed.
        pin().flush();
        std::thread::sleep(Duration::from_micros(200));
    }
}
