//! Small helpers shared by the harnesses and by structures' own tests: collecting a map's contents
//! through full visits, and joining scoped threads while counting finished ones.

use core::ops::{Bound, ControlFlow};
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Release;
use std::thread;

use crate::ConcurrentOrderedMap;

/// Every entry of `map` in ascending order, through `visit_range(..)`.
pub fn entries<V: Clone, M: ConcurrentOrderedMap<V>>(map: &M) -> Vec<(Vec<u8>, V)> {
    let mut out = Vec::new();
    map.visit_range(.., |k, v| {
        out.push((k.to_vec(), v.clone()));
        ControlFlow::Continue(())
    });
    out
}

/// Every entry of `map` in descending order, through `visit_range_rev(..)`.
pub fn entries_rev<V: Clone, M: ConcurrentOrderedMap<V>>(map: &M) -> Vec<(Vec<u8>, V)> {
    let mut out = Vec::new();
    map.visit_range_rev(.., |k, v| {
        out.push((k.to_vec(), v.clone()));
        ControlFlow::Continue(())
    });
    out
}

/// An owned bound as a borrowed one.
pub fn as_slice(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(Vec::as_slice)
}

/// Counts a finished (or panicked) worker thread when dropped, so that the threads waiting
/// for the writers never wait for one that panicked.
#[derive(Debug)]
pub struct Done<'a>(pub &'a AtomicUsize);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Release);
    }
}

/// Joins scoped threads, re-raising the first panic (the scope still waits for the others).
pub fn join_all<T>(handles: Vec<thread::ScopedJoinHandle<'_, T>>) -> Vec<T> {
    handles
        .into_iter()
        .map(|h| match h.join() {
            Ok(x) => x,
            Err(p) => std::panic::resume_unwind(p),
        })
        .collect()
}
