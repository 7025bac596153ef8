//! The crate's one switch between the standard atomics and loom's, so that the loom models
//! check the very code that ships.
//!
//! Code whose interleavings a loom model explores takes its atomics from here, never from
//! `core::sync::atomic` directly. In the crate's unit tests built with `--cfg mlpdex_loom` (a
//! cfg of this crate's own name, so that turning loom on for a dependent build does not switch
//! this crate too) they are loom's instrumented types; everywhere else, the plain library
//! included, they are the standard ones. The models themselves reach loom through `loom`,
//! re-exported here under the same cfg, so that this file is the only one naming the loom
//! crate. Run the models with
//!
//! ```sh
//! RUSTFLAGS="--cfg mlpdex_loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p mlpdex --lib --release loom_model
//! ```
//!
//! `Ordering` is shared by both (loom re-exports the standard one), and `UnsafeCell` is not
//! swapped: loom's has a closure-based API, and the models check atomics' orderings, not cell
//! accesses.

#[cfg(not(all(test, mlpdex_loom)))]
pub(crate) use core::sync::atomic::{
    AtomicBool, AtomicIsize, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize,
};
#[cfg(all(test, mlpdex_loom))]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicIsize, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize,
};

/// The loom crate, for the models (`loom::model`, `loom::thread`, `loom::sync`).
#[cfg(all(test, mlpdex_loom))]
pub(crate) use loom;
