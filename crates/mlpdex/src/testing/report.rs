//! How a difference between a map and the oracle is reported: the public `Divergence` (seed, step,
//! operation, expected and actual answers) and the internal `Mismatch` with the helpers that build
//! one.

use core::fmt;

use crate::Error;
use crate::key::Escaped;

use super::keys::KeyShape;

/// The first difference a driver found between a structure and the `BTreeMap` oracle.
///
/// Its `Display` is the panic message of the panicking drivers:
/// `<driver> diverged from BTreeMap: seed=<seed> shape=<shape> step=<step>`, then the operation
/// and the expected and actual answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// The driver that found it, e.g. `"differential_ordered"`.
    pub driver: &'static str,
    /// The seed of the run; the same call with this seed reproduces the failure.
    pub seed: u64,
    /// The key shape of the run.
    pub shape: KeyShape,
    /// The 0-based step (operation or query number) at which the answers differed.
    pub step: usize,
    /// The operation, keys printed as [`Escaped`].
    pub op: String,
    /// What the oracle answered.
    pub expected: String,
    /// What the structure answered, or the message it panicked with.
    pub actual: String,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} diverged from BTreeMap: seed={} shape={:?} step={}\n  op:       {}\n  expected: {}\n  actual:   {}",
            self.driver, self.seed, self.shape, self.step, self.op, self.expected, self.actual
        )
    }
}

impl std::error::Error for Divergence {}

/// Expected and actual answers of one operation, before the driver adds its context.
#[derive(Debug)]
pub(super) struct Mismatch {
    pub(super) expected: String,
    pub(super) actual: String,
}

impl Mismatch {
    pub(super) fn new(expected: impl Into<String>, actual: impl Into<String>) -> Self {
        Mismatch {
            expected: expected.into(),
            actual: actual.into(),
        }
    }

    pub(super) fn call(call: usize, back: bool, want: Option<(&[u8], u64)>, got: String) -> Self {
        let name = if back { "next_back" } else { "next" };
        Mismatch::new(
            format!("call #{call} {name}() -> {}", show_entry(want)),
            format!("call #{call} {name}() -> {got}"),
        )
    }
}

pub(super) fn show_entry(e: Option<(&[u8], u64)>) -> String {
    match e {
        Some((k, v)) => format!("Some(({}, {v}))", Escaped(k)),
        None => "None".to_string(),
    }
}

pub(super) fn show_insert(r: &Result<Option<u64>, Error>) -> String {
    match r {
        Ok(v) => format!("Ok({v:?})"),
        Err(e) => format!("Err({e})"),
    }
}

pub(super) fn expect_eq<T: PartialEq + fmt::Debug>(
    what: &str,
    want: T,
    got: T,
) -> Result<(), Mismatch> {
    if want == got {
        Ok(())
    } else {
        Err(Mismatch::new(
            format!("{what} = {want:?}"),
            format!("{what} = {got:?}"),
        ))
    }
}

/// Compares an entry with the oracle's; `got`'s key is whatever the map hands out
/// ([`OrderedMap::Key`](crate::OrderedMap::Key)).
pub(super) fn expect_entry<K: AsRef<[u8]>>(
    what: &str,
    want: Option<(&[u8], u64)>,
    got: Option<(K, u64)>,
) -> Result<(), Mismatch> {
    let got = got.as_ref().map(|(k, v)| (k.as_ref(), *v));
    if want == got {
        Ok(())
    } else {
        Err(Mismatch::new(
            format!("{what} = {}", show_entry(want)),
            format!("{what} = {}", show_entry(got)),
        ))
    }
}

pub(super) fn expect_memory(what: &str, non_empty: bool, bytes: usize) -> Result<(), Mismatch> {
    if non_empty && bytes == 0 {
        Err(Mismatch::new(
            format!("{what} > 0 for a non-empty map"),
            format!("{what} = 0"),
        ))
    } else {
        Ok(())
    }
}

pub(super) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_string()
    }
}
