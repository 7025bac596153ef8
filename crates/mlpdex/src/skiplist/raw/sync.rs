//! The atomics the link protocol uses, swapped for loom's under `--cfg loom` so that the model
//! in [`super::list`]'s tests checks this very code.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicIsize, AtomicU8, AtomicUsize};

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicIsize, AtomicU8, AtomicUsize};
