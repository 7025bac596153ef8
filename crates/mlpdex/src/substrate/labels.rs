//! Label search in a sorted run of bytes (a LOUDS-Sparse node's labels), memory-efficient-
//! search-trees.txt §3.6: 16 labels per SSE2 compare on x86-64, a scalar loop elsewhere and
//! under miri.
//!
//! The SIMD path reads whole 16-byte groups, so callers keep [`LABEL_PAD`] readable bytes past
//! the end of the label array ([`padded`]); results past the run are masked off.

/// Bytes of padding a label array needs after its last label for the SIMD path.
pub const LABEL_PAD: usize = 16;

/// `labels` followed by at least [`LABEL_PAD`] zero bytes, up to a multiple of 8 (the length a
/// serialized label section has, so a built and a loaded array are equal).
pub fn padded(mut labels: Vec<u8>) -> Vec<u8> {
    let total = (labels.len() + LABEL_PAD).next_multiple_of(8);
    labels.resize(total, 0);
    labels.shrink_to_fit();
    labels
}

/// Index (relative to `start`) of the first label equal to `b` in `arr[start..end]`.
///
/// `None` also when the run is not inside `arr` (`start > end` or `end > arr.len()`): out-of-
/// range arguments never read outside `arr`. `arr` must extend [`LABEL_PAD`] bytes past `end`
/// for the SIMD path; a shorter `arr` falls back to the scalar loop.
#[inline]
pub fn find_eq(arr: &[u8], start: usize, end: usize, b: u8) -> Option<usize> {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if padded_past(arr, end) {
        return sse2::find(arr, start, end, b, false);
    }
    arr.get(start..end)?.iter().position(|&l| l == b)
}

/// Index (relative to `start`) of the first label `≥ b` in the sorted run `arr[start..end]`.
///
/// Range and padding requirements as for [`find_eq`].
#[inline]
pub fn find_ge(arr: &[u8], start: usize, end: usize, b: u8) -> Option<usize> {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if padded_past(arr, end) {
        return sse2::find(arr, start, end, b, true);
    }
    arr.get(start..end)?.iter().position(|&l| l >= b)
}

/// Whether `arr` holds [`LABEL_PAD`] bytes past `end`, as the SIMD path needs, computed
/// without overflow (the sum once wrapped: issue 16, defect 2). The SIMD loop reads nothing
/// when `start >= end`, so `start` needs no check.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[inline]
fn padded_past(arr: &[u8], end: usize) -> bool {
    end.checked_add(LABEL_PAD).is_some_and(|e| e <= arr.len())
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
mod sse2 {
    use core::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_set1_epi8,
    };

    #[inline]
    pub(super) fn find(arr: &[u8], start: usize, end: usize, b: u8, ge: bool) -> Option<usize> {
        debug_assert!(super::padded_past(arr, end));
        let mut at = start;
        // SAFETY: for the whole block:
        // - SSE2 is part of the x86-64 baseline, so the intrinsics are available;
        // - every load reads arr[at..at + 16] with at < end (none when start >= end), and
        //   the caller checked (`padded_past`) that end + 16 <= arr.len() without overflow.
        unsafe {
            let needle = _mm_set1_epi8(b as i8);
            while at < end {
                let group = _mm_loadu_si128(arr.as_ptr().add(at).cast::<__m128i>());
                let hits = if ge {
                    // max(l, b) == l  <=>  l >= b (unsigned).
                    _mm_cmpeq_epi8(_mm_max_epu8(group, needle), group)
                } else {
                    _mm_cmpeq_epi8(group, needle)
                };
                let mut mask = _mm_movemask_epi8(hits) as u32;
                let valid = end - at;
                if valid < 16 {
                    mask &= (1u32 << valid) - 1;
                }
                if mask != 0 {
                    return Some(at - start + mask.trailing_zeros() as usize);
                }
                at += 16;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(labels: &[u8], b: u8) {
        let arr = padded(labels.to_vec());
        for start in 0..=labels.len() {
            for end in start..=labels.len().min(start + 40) {
                let run = &labels[start..end];
                assert_eq!(
                    find_eq(&arr, start, end, b),
                    run.iter().position(|&l| l == b)
                );
                // Also through the unpadded (scalar) path.
                assert_eq!(
                    find_eq(labels, start, end, b),
                    run.iter().position(|&l| l == b)
                );
                if run.is_sorted() {
                    assert_eq!(
                        find_ge(&arr, start, end, b),
                        run.iter().position(|&l| l >= b)
                    );
                }
            }
        }
    }

    #[test]
    fn every_byte_against_every_run_of_a_full_node() {
        let all: Vec<u8> = (0..=255).collect();
        for b in 0..=255u8 {
            let arr = padded(all.clone());
            assert_eq!(find_eq(&arr, 0, 256, b), Some(b as usize));
            assert_eq!(find_ge(&arr, 0, 256, b), Some(b as usize));
            assert_eq!(find_ge(&arr, 0, b as usize, b), None);
            assert_eq!(find_eq(&arr, b as usize + 1, 256, b), None);
        }
        check(&[0, 0xFF], 0xFF);
        check(&[0xFF, 0, 1, 0xFF], 0xFF);
        check(&[0x80, 0x81, 0x7F], 0x80);
    }

    /// Regression (issue 16, defect 2): the padding check `end + LABEL_PAD <= arr.len()`
    /// wrapped in builds without overflow checks, sending an `end` near `usize::MAX` down the
    /// SSE2 path, which then read far past the array.
    #[test]
    fn end_near_usize_max_is_none() {
        let arr = [0u8; 32];
        assert_eq!(find_ge(&arr, 0, usize::MAX - 15, 1), None);
    }

    /// Every way a run can lie outside the array, including sums that wrap, answers `None`
    /// from both searches, whether the array is padded (SIMD path) or not (scalar path).
    #[test]
    fn runs_outside_the_array_are_none() {
        let labels: Vec<u8> = (1..=40).collect();
        for arr in [padded(labels.clone()), labels] {
            let n = arr.len();
            let cases = [
                (0, usize::MAX),
                (0, usize::MAX - LABEL_PAD),
                (0, usize::MAX - LABEL_PAD + 1),
                (0, n + 1),
                (n, n + 1),
                (n + 1, n + 1),
                (usize::MAX, usize::MAX),
                (usize::MAX - 1, usize::MAX),
                (1, 0),
                (n, 0),
                (usize::MAX, 0),
                (usize::MAX - LABEL_PAD, n - LABEL_PAD),
            ];
            for (start, end) in cases {
                for b in [0, 1, 40, 0xFF] {
                    assert_eq!(
                        find_eq(&arr, start, end, b),
                        None,
                        "find_eq({start}, {end}, {b})"
                    );
                    assert_eq!(
                        find_ge(&arr, start, end, b),
                        None,
                        "find_ge({start}, {end}, {b})"
                    );
                }
            }
            // The run may end exactly at the array's end, and be empty anywhere in it.
            assert_eq!(find_ge(&arr, n - 1, n, 0), Some(0));
            assert_eq!(find_eq(&arr, n, n, 0), None);
            assert_eq!(find_ge(&arr, 0, 0, 0), None);
        }
    }

    proptest! {
        #![proptest_config(crate::substrate::proptest_config())]
        #[test]
        fn random_runs_match_scalar(mut labels in proptest::collection::vec(any::<u8>(), 0..70), b in any::<u8>(), sort in any::<bool>()) {
            if sort { labels.sort(); labels.dedup(); }
            check(&labels, b);
        }
    }
}
