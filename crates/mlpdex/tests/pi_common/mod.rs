//! What PI's integration tests of both key types share (`tests/pi.rs`, `tests/pi_bytes.rs`).

use std::fmt::Debug;

use mlpdex::pi::{Answer, Batch, Pi, PiKey};

/// Executes a copy of `batch` on every map of `maps` and checks each answer against `want`
/// (the oracle's, in batch order) and each map's length against `len`.
pub fn run_on_all<K: PiKey + Debug + PartialEq>(
    maps: &mut [Pi<K>],
    batch: &Batch<K>,
    want: &[Answer<K>],
    len: usize,
    round: usize,
) {
    for m in maps {
        let mut b = batch.clone();
        m.execute(&mut b);
        assert_eq!(b.answers().len(), want.len());
        for (i, (got, w)) in b.answers().iter().zip(want).enumerate() {
            assert_eq!(
                got,
                w,
                "round {round}, {} workers, query {i}: {:?}",
                m.config().threads,
                batch.queries()[i]
            );
        }
        assert_eq!(m.len(), len, "round {round}");
    }
}
