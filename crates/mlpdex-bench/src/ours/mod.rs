//! Adapters for mlpdex's own structures.

pub mod compact_art;
pub mod compact_btree;
pub mod concurrent_hybrid;
pub mod cuckoo_trie;
pub mod fst;
pub mod hope;
pub mod hybrid;
pub mod mlp_index;
pub mod mlp_index_bytes;
pub mod pi;
pub mod resize_driver;
pub mod shortcut_eh;
pub mod skiplist;

/// Runs a batched lookup that answers with references 64 keys at a time, into a buffer on
/// the stack (no allocation while timing), and copies the values out.
pub fn copied<'a>(
    keys: &[&[u8]],
    out: &mut [Option<u64>],
    mut batch: impl FnMut(&[&[u8]], &mut [Option<&'a u64>]),
) {
    let mut refs = [None; 64];
    for (ks, os) in keys.chunks(64).zip(out.chunks_mut(64)) {
        let refs = &mut refs[..ks.len()];
        batch(ks, refs);
        for (o, r) in os.iter_mut().zip(refs.iter()) {
            *o = r.copied();
        }
    }
}

/// A scan through a static map's lending cursor: up to `n` entries from its front, their
/// values folded into a checksum ([`crate::adapter::fold`]); `None` when it visits none.
pub fn scan_cursor<C: mlpdex::RangeCursor>(mut cursor: C, n: usize) -> Option<u64> {
    let mut acc = None;
    for _ in 0..n {
        match cursor.next() {
            Some((_, v)) => acc = Some(acc.map_or(v, |a| crate::adapter::fold(a, v))),
            None => break,
        }
    }
    acc
}

/// A static map built by `builder` from the load set in key order, each key with its
/// [`value_of`](crate::adapter::value_of) (the timed `load` of a static index: sorting
/// included).
pub fn build_sorted<B: mlpdex::StaticMapBuilder>(
    load_set: &crate::keys::Keys,
    mut builder: B,
) -> anyhow::Result<B::Map> {
    for i in crate::baselines::sorted_order(load_set) {
        let i = i as usize;
        builder.push(load_set.get(i), crate::adapter::value_of(i))?;
    }
    Ok(builder.finish()?)
}
