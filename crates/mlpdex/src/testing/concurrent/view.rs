//! What one thread has seen, and the checks on it: per key and writer the counters never go back,
//! visits report known keys within their range, in order and no more than the visitor accepted,
//! seeks stop on the right side of their bound.

use core::fmt;
use core::ops::{Bound, ControlFlow};
use std::collections::HashSet;

use crate::ConcurrentOrderedMap;
use crate::key::{Escaped, after_start, before_end, show_bound};

use super::stamp::{Stamp, Universe};

/// What one thread has seen: per key and writer the largest counter seen (plus one), and
/// every value seen, to be checked against what the writers wrote.
pub(super) struct View {
    pub(super) who: String,
    pub(super) writers: usize,
    pub(super) last: Vec<u64>,
    pub(super) seen: HashSet<u64>,
}

impl View {
    pub(super) fn new(who: String, keys: usize, writers: usize) -> View {
        View {
            who,
            writers,
            last: vec![0; keys * writers],
            seen: HashSet::new(),
        }
    }

    /// Records that `op` saw value `v` under key `idx`: the value must have been written for
    /// that key by a known writer, and must not be older than one this thread saw before from
    /// the same writer for the same key.
    pub(super) fn observe(&mut self, u: &Universe, op: &dyn fmt::Display, idx: usize, v: u64) {
        let s = Stamp::decode(v);
        assert!(
            s.idx == idx && s.writer < self.writers,
            "{}: {op} found the value {v:#x} ({s}) under {}: it was not written for this key",
            self.who,
            u.show(idx)
        );
        let slot = idx * self.writers + s.writer;
        assert!(
            s.counter + 1 >= self.last[slot],
            "{}: {op} found {s} under {} after this thread had seen writer {}'s later \
             operation #{} on it: not linearizable",
            self.who,
            u.show(idx),
            s.writer,
            self.last[slot] - 1
        );
        self.last[slot] = s.counter + 1;
        self.seen.insert(v);
    }
}

/// The result of one visit: the `(index, value)` pairs reported, in order.
pub(super) struct Visit {
    pub(super) entries: Vec<(usize, u64)>,
    pub(super) broke: bool,
    pub(super) unknown: Option<Vec<u8>>,
    pub(super) called_after_break: bool,
}

/// Visits `(s, e)` forward or backward, breaking after `limit` entries.
pub(super) fn visit<M: ConcurrentOrderedMap<u64>>(
    map: &M,
    u: &Universe,
    s: Bound<&[u8]>,
    e: Bound<&[u8]>,
    forward: bool,
    limit: usize,
) -> Visit {
    let mut out = Visit {
        entries: Vec::new(),
        broke: false,
        unknown: None,
        called_after_break: false,
    };
    let f = |k: &[u8], v: &u64| {
        if out.broke {
            out.called_after_break = true;
            return ControlFlow::Break(());
        }
        match u.idx(k) {
            Some(i) => out.entries.push((i, *v)),
            None => {
                out.unknown = Some(k.to_vec());
                out.broke = true;
                return ControlFlow::Break(());
            }
        }
        if out.entries.len() >= limit {
            out.broke = true;
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    if forward {
        map.visit_range((s, e), f);
    } else {
        map.visit_range_rev((s, e), f);
    }
    out
}

/// Checks what a visit of `(s, e)` reported: known keys, within the range, strictly in order,
/// at most `limit` of them, nothing after `Break`.
pub(super) fn check_visit_shape(
    u: &Universe,
    who: &str,
    s: Bound<&[u8]>,
    e: Bound<&[u8]>,
    forward: bool,
    limit: usize,
    v: &Visit,
) {
    let what = || {
        format!(
            "{who}: {}({}, {}) breaking after {limit}",
            if forward {
                "visit_range"
            } else {
                "visit_range_rev"
            },
            show_bound(s),
            show_bound(e)
        )
    };
    if let Some(k) = &v.unknown {
        panic!("{} reported {}, a key never inserted", what(), Escaped(k));
    }
    assert!(
        !v.called_after_break,
        "{} called the visitor again after it returned Break",
        what()
    );
    assert!(v.entries.len() <= limit, "{}: too many entries", what());
    for (n, &(i, _)) in v.entries.iter().enumerate() {
        let k = &u.keys[i][..];
        assert!(
            after_start(k, s) && before_end(k, e),
            "{} reported {} (entry {n}), outside the range",
            what(),
            u.show(i)
        );
        if n > 0 {
            let p = v.entries[n - 1].0;
            assert!(
                if forward { p < i } else { p > i },
                "{} reported {} after {}: out of order or repeated",
                what(),
                u.show(i),
                u.show(p)
            );
        }
    }
}

pub(super) fn visit_name(forward: bool, s: Bound<&[u8]>, e: Bound<&[u8]>) -> String {
    format!(
        "{}({}, {})",
        if forward {
            "visit_range"
        } else {
            "visit_range_rev"
        },
        show_bound(s),
        show_bound(e)
    )
}

pub(super) fn seek_name(lower: bool, b: Bound<&[u8]>) -> String {
    format!(
        "{}({})",
        if lower {
            "lower_bound_with"
        } else {
            "upper_bound_with"
        },
        show_bound(b)
    )
}
