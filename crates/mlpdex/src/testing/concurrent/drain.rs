//! Draining a map after a run: every remaining entry is removed, each removal must answer its
//! value, and the map must then be empty by `len` and by a visit and pass its audit.

use core::fmt;

use crate::ConcurrentOrderedMap;
use crate::key::Escaped;

use super::{helpers::entries, subject::Subject};

/// Removes every entry of `got` (the map's final contents), each removal answering its value;
/// then the map must be empty both by `len` and by a visit, and pass the subject's audit.
pub(super) fn drain<M: ConcurrentOrderedMap<u64>>(
    subject: &Subject<M>,
    map: &M,
    got: &[(Vec<u8>, u64)],
    ctx: &str,
    plan: &dyn fmt::Debug,
) {
    for (k, v) in got {
        assert_eq!(map.remove(k), Some(*v), "{ctx}: draining {}", Escaped(k));
    }
    assert!(map.is_empty(), "{ctx}: drained map has len {}", map.len());
    assert!(entries(map).is_empty(), "{ctx}: drained map visits entries");
    subject.audit(map, &format!("{plan:?}: drained"));
}
