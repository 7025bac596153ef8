//! The map under test as the harnesses see it: a `Subject` says how to make an empty map, how to
//! check its invariants and the longest key it accepts.

use core::fmt;
use std::panic::{self, AssertUnwindSafe};

/// An invariant check of a map: `Err` says what is wrong.
pub(super) type Audit<M> = dyn Fn(&M) -> Result<(), String>;

/// What an invariant check given to [`Subject::with_audit`] returns: `()` for a check that
/// panics when something is wrong, or `Result<(), E>` for one that says so with `Err`.
pub trait AuditOutcome {
    /// `Ok` when the check passed, else what is wrong.
    fn into_result(self) -> Result<(), String>;
}

impl AuditOutcome for () {
    fn into_result(self) -> Result<(), String> {
        Ok(())
    }
}

impl<E: fmt::Display> AuditOutcome for Result<(), E> {
    fn into_result(self) -> Result<(), String> {
        self.map_err(|e| e.to_string())
    }
}

/// A concurrent map type under test, as the harnesses see it: how to make an empty map, how to
/// check its internal invariants, and the longest key it accepts.
///
/// `M` is the map type with its value type, e.g. `SkipList<u64>` for `stress` and
/// `SkipList<Counted>` for [`values_dropped_once`](super::values_dropped_once).
pub struct Subject<M> {
    name: String,
    make: Box<dyn Fn() -> M>,
    audit: Option<Box<Audit<M>>>,
    max_key_len: Option<usize>,
    key_width: Option<usize>,
}

impl<M> Subject<M> {
    /// A subject called `name` in failure messages, whose empty maps `make` returns; no
    /// invariant check and no key-length limit.
    pub fn new(name: impl Into<String>, make: impl Fn() -> M + 'static) -> Self {
        Subject {
            name: name.into(),
            make: Box::new(make),
            audit: None,
            max_key_len: None,
            key_width: None,
        }
    }

    /// Adds a check of the map's internal invariants, run by the harnesses before and after
    /// their runs (never while other threads use the map). The check either returns
    /// `Result<(), E>` (`E: Display`, e.g. `ConcurrentCuckooTrie::check_invariants`) or
    /// returns `()` and panics when something is wrong; either way the harness's failure
    /// message names the subject and the point of the run.
    pub fn with_audit<R: AuditOutcome>(mut self, audit: impl Fn(&M) -> R + 'static) -> Self {
        self.audit = Some(Box::new(move |map: &M| audit(map).into_result()));
        self
    }

    /// Declares that the map refuses keys longer than `max` bytes with [`Error::KeyTooLong`];
    /// [`values_dropped_once`] then inserts a key of `max + 1` bytes (allocated whole, so
    /// declare only a limit that is cheap to exceed) and checks that it is refused and its
    /// value dropped at once. The harnesses' keys are at most 8 KiB, so `max` must be at
    /// least 8192.
    ///
    /// [`Error::KeyTooLong`]: crate::Error::KeyTooLong
    /// [`values_dropped_once`]: super::values_dropped_once
    pub fn with_max_key_len(mut self, max: usize) -> Self {
        self.max_key_len = Some(max);
        self
    }

    /// Declares that the map stores keys of exactly `width` bytes (an integer map such as
    /// [`ConcurrentMlpIndex`](crate::mlp_index::ConcurrentMlpIndex), `width` 8): the harnesses
    /// then draw their keys from universes cut or padded with zero bytes to `width` (which
    /// keeps their 0x00 and 0xFF bytes and shared prefixes), and
    /// [`linearizable_histories`](super::linearizable_histories) from eight keys of that
    /// shape. Only `width` 8 is supported by the history check.
    pub fn with_key_width(mut self, width: usize) -> Self {
        assert!(width > 0, "keys of at least one byte");
        self.key_width = Some(width);
        self
    }

    /// The key width given to [`with_key_width`](Self::with_key_width).
    pub fn key_width(&self) -> Option<usize> {
        self.key_width
    }

    /// `keys` as this subject's maps store them: unchanged, or each cut or padded with zero
    /// bytes to the [`key_width`](Self::key_width), sorted and without duplicates.
    pub(super) fn fit_keys(&self, keys: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        let Some(w) = self.key_width else {
            return keys;
        };
        let set: std::collections::BTreeSet<Vec<u8>> = keys
            .into_iter()
            .map(|mut k| {
                k.resize(w, 0);
                k
            })
            .collect();
        set.into_iter().collect()
    }

    /// The name given to [`new`](Self::new).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A new empty map.
    pub fn make(&self) -> M {
        (self.make)()
    }

    /// Runs the invariant check, if any; panics with the subject's name, `ctx` and the check's
    /// message if it fails (or panics).
    pub fn audit(&self, map: &M, ctx: &str) {
        let Some(audit) = &self.audit else { return };
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| audit(map)));
        let e = match outcome {
            Ok(Ok(())) => return,
            Ok(Err(e)) => e,
            Err(p) => match (p.downcast_ref::<String>(), p.downcast_ref::<&str>()) {
                (Some(s), _) => format!("panicked: {s}"),
                (None, Some(s)) => format!("panicked: {s}"),
                (None, None) => "panicked".to_string(),
            },
        };
        panic!("[{}] {ctx}: the invariant check failed: {e}", self.name);
    }

    /// The key-length limit given to [`with_max_key_len`](Self::with_max_key_len).
    pub fn max_key_len(&self) -> Option<usize> {
        self.max_key_len
    }
}

impl<M> fmt::Debug for Subject<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subject")
            .field("name", &self.name)
            .field("audit", &self.audit.is_some())
            .field("max_key_len", &self.max_key_len)
            .field("key_width", &self.key_width)
            .finish_non_exhaustive()
    }
}
