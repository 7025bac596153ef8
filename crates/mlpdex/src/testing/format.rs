//! Helpers for tests of the serialized FST, SuRF and HOPE images: recomputing the trailing checksum
//! after a deliberate change, damaging an image while keeping it sealed, and finding the first
//! LOUDS-Sparse label. They know the image format, so they live in the library rather than beside
//! the public-API driver.

use super::rng::TestRng;

/// A copy of a serialized FST or SuRF image (`fst::raw::format`: XXH3 of the body in the last
/// 8 bytes) with 1 to 3 bytes past the magic and version damaged (one bit flipped, zeroed,
/// set to 0xFF or random) and the checksum recomputed, so the damage reaches the loader's
/// structural checks.
pub fn damage_keeping_checksum(img: &[u8], rng: &mut TestRng) -> Vec<u8> {
    let mut bad = img.to_vec();
    let body = img.len().saturating_sub(8);
    if body <= 12 {
        return bad;
    }
    for _ in 0..1 + rng.index(3) {
        let at = 12 + rng.index(body - 12);
        bad[at] = match rng.index(4) {
            0 => bad[at] ^ (1 << rng.index(8)),
            1 => 0,
            2 => 0xFF,
            _ => rng.next_u64() as u8,
        };
    }
    reseal(&mut bad);
    bad
}

/// Rewrites the trailing checksum of a serialized FST, SuRF or HOPE image (XXH3-64, seed 0, of
/// every byte before the last 8) after its body was changed, as a buggy writer or an attacker
/// could; an image shorter than 8 bytes is left as it is.
pub fn reseal(img: &mut [u8]) {
    let Some(body) = img.len().checked_sub(8) else {
        return;
    };
    let sum = crate::substrate::hash::hash_bytes(&img[..body], 0).to_le_bytes();
    img[body..].copy_from_slice(&sum);
}

/// Byte offset of the first LOUDS-Sparse label of an FST or SuRF image (format version 4: a
/// 64-byte header, three dense bit vectors each a `u64` bit count and its words, then the
/// label count).
pub fn first_sparse_label_at(img: &[u8]) -> usize {
    let u64_at = |at: usize| u64::from_le_bytes(img[at..at + 8].try_into().unwrap()) as usize;
    let mut at = 64;
    for _ in 0..3 {
        at += 8 + u64_at(at).div_ceil(64) * 8;
    }
    at + 8
}

/// Byte offset of the words of the LOUDS-Sparse chain bits (`s_chain`) of an FST or SuRF image,
/// and their bit count: after the labels (a count, then the labels zero-padded to a multiple of
/// 8 that leaves at least 16 bytes) come `s_has_child`, `s_louds` and `s_chain`, each a `u64`
/// bit count and its words.
pub fn sparse_chain_bits_at(img: &[u8]) -> (usize, usize) {
    let u64_at = |at: usize| u64::from_le_bytes(img[at..at + 8].try_into().unwrap()) as usize;
    let mut at = first_sparse_label_at(img) - 8;
    let labels = u64_at(at);
    at += 8 + (labels + crate::substrate::labels::LABEL_PAD).next_multiple_of(8);
    for _ in 0..2 {
        at += 8 + u64_at(at).div_ceil(64) * 8;
    }
    (at + 8, u64_at(at))
}
