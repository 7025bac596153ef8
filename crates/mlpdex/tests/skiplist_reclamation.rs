//! Reclamation of the skip list's values and nodes (issue 16, defect 4), in a test binary of
//! its own: these tests wait for epochs to advance, which a guard held for seconds by a test
//! running beside them (a long iteration, say) would hold up.

use mlpdex::epoch::pin;
use mlpdex::skiplist::{Config, SkipList};

fn list<V: Send + Sync + 'static>(depth: usize) -> SkipList<V> {
    SkipList::with_config(Config {
        prefetch_depth: depth,
    })
    .expect("valid depth")
}

/// Runs deferred frees until `done()` holds: this thread's bag goes to the global queue on
/// each flush, and the epoch advances once every thread pinned meanwhile (other tests of this
/// binary included) has unpinned. Bounded, so a value that is never freed fails the test.
fn flush_until(done: impl Fn() -> bool) -> bool {
    for _ in 0..100_000 {
        if done() {
            return true;
        }
        pin().flush();
        std::thread::yield_now();
    }
    done()
}

/// Issue 16, defect 4: a key's first value lived inline in its node until the key was
/// removed, so a replaced value of 100 MiB stayed alive through any number of updates.
#[test]
fn replaced_values_are_dropped_once_no_guard_can_see_them() {
    use std::sync::Arc;
    for depth in [0, 3] {
        let map = list::<Arc<Vec<u8>>>(depth);
        let first = Arc::new(vec![1u8; 1 << 10]);
        map.insert(b"key", Arc::clone(&first)).unwrap();
        let mut replaced = vec![Arc::downgrade(&first)];
        drop(first);
        for i in 0..11u8 {
            let next = Arc::new(vec![i; 1 << 10]);
            replaced.push(Arc::downgrade(&next));
            let old = map
                .insert(b"key", next)
                .unwrap()
                .expect("the key is present");
            drop(old);
        }
        let current = replaced.pop().expect("the last value stays");
        for (i, w) in replaced.iter().enumerate() {
            assert!(
                flush_until(|| w.strong_count() == 0),
                "value {i} of 12 is still alive after it was replaced and epochs were flushed"
            );
        }
        assert_eq!(
            current.strong_count(),
            1,
            "the current value is held by the map"
        );
        // Removing the key drops the current value too, and nothing twice.
        drop(map.remove(b"key"));
        assert!(flush_until(|| current.strong_count() == 0));
        map.check_invariants();
    }
}

/// Defect 4's other side: a node whose inline value was retired by an update is freed once,
/// whether the list drops it while linked or the key is removed while the retired value is
/// still waiting for its epoch. Drop-counted values: every value made is dropped exactly once.
#[test]
fn retired_inline_values_and_their_nodes_are_freed_once() {
    use std::sync::atomic::{AtomicIsize, Ordering::SeqCst};
    static LIVE: AtomicIsize = AtomicIsize::new(0);
    struct Counted(#[allow(dead_code)] u64);
    impl Counted {
        fn new(v: u64) -> Self {
            LIVE.fetch_add(1, SeqCst);
            Counted(v)
        }
    }
    impl Clone for Counted {
        fn clone(&self) -> Self {
            Counted::new(self.0)
        }
    }
    impl Drop for Counted {
        fn drop(&mut self) {
            LIVE.fetch_sub(1, SeqCst);
        }
    }
    {
        let map = SkipList::<Counted>::new();
        for k in 0..2_000u64 {
            map.insert(&k.to_be_bytes(), Counted::new(k)).unwrap();
        }
        // Update half the keys (their inline values are retired), then remove a quarter of
        // all keys right away, some updated and some not; drop the list with the rest linked.
        for k in (0..2_000u64).step_by(2) {
            drop(map.insert(&k.to_be_bytes(), Counted::new(k + 1)).unwrap());
        }
        for k in (0..2_000u64).step_by(4).chain((1..2_000).step_by(4)) {
            drop(map.remove(&k.to_be_bytes()));
        }
        assert_eq!(map.len(), 1_000);
        map.check_invariants();
    }
    assert!(
        flush_until(|| LIVE.load(SeqCst) == 0),
        "{} values never dropped",
        LIVE.load(SeqCst)
    );
}
