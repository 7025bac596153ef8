//! The serialized form of a compact B-tree (format version 1). All integers little-endian.
//!
//! ```text
//! offset  size  field
//! 0       8     magic: "MLPDXCBT"
//! 8       4     format version (1)
//! 12      4     log2 of the keys per leaf (3 to 16)
//! 16      8     number of keys
//! then sections, each a u64 count followed by that many items, each starting at a multiple
//! of 8 bytes:
//!         leaf words      u64s (layout in `super::leaf`)
//!         tail bytes      bytes (each leaf's prefix and tails), zero-padded to a multiple of 8
//!         values          u64s, one per key
//!         leaf offsets    u64s, one per leaf and one more
//! last 8        XXH3-64 (seed 0) of every byte before it
//! ```
//!
//! Loading checks the magic, the version, the checksum, every count against the buffer and
//! the header, the padding, and then every invariant of the keys' layer ([`Tree::audit`]), in
//! time linear in the image. Only the keys' layer is stored: the route to its leaves (the
//! inner nodes, about 1/256 of the keys) is rebuilt from it. An aligned buffer is used in place:
//! the sections are [`Frozen`](crate::substrate::Frozen) views of it.
//!
//! What no check can catch is damage that yields another valid image (a changed value, a tail
//! byte changed without breaking the order): that is a tree of other keys, consistent in
//! itself; the checksum is what guards against it. Any failure is an [`Error::Format`] naming
//! the broken rule and the byte where it was found, or an [`Error::Version`].

use super::audit::Part;
use super::{Layer, Route, Tree};
use crate::Error;
use crate::substrate::hash::hash_bytes;
use crate::substrate::image::check_frame;
use crate::substrate::{Frozen, Shared};

/// Magic of a serialized compact B-tree.
pub(crate) const MAGIC: [u8; 8] = *b"MLPDXCBT";
/// Version written and the newest one read.
pub(crate) const VERSION: u32 = 1;
/// Bytes before the first section.
const HEADER: usize = 24;

/// Serializes `tree`.
pub(crate) fn write(tree: &Tree) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + 48 + tree.memory_usage());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&tree.shift.to_le_bytes());
    out.extend_from_slice(&(tree.len() as u64).to_le_bytes());
    let words = |out: &mut Vec<u8>, w: &[u64]| {
        out.extend_from_slice(&(w.len() as u64).to_le_bytes());
        for x in w {
            out.extend_from_slice(&x.to_le_bytes());
        }
    };
    let keys = &tree.keys;
    words(&mut out, &keys.words);
    out.extend_from_slice(&(keys.tails.len() as u64).to_le_bytes());
    out.extend_from_slice(&keys.tails);
    out.resize(out.len().next_multiple_of(8), 0);
    words(&mut out, &tree.values);
    words(&mut out, &keys.leaf_at);
    let sum = hash_bytes(&out, 0);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

fn bad(what: &'static str, offset: usize) -> Error {
    Error::Format { what, offset }
}

/// Reads sections in order from a loaded buffer.
struct Reader<'s> {
    shared: &'s Shared,
    /// End of the sections (the checksum's offset).
    end: usize,
    at: usize,
}

impl Reader<'_> {
    fn count(&mut self, what: &'static str) -> Result<usize, Error> {
        let b = self
            .shared
            .bytes()
            .get(self.at..self.at + 8)
            .filter(|_| self.at + 8 <= self.end)
            .ok_or(bad(what, self.at))?;
        let n = u64::from_le_bytes(b.try_into().map_err(|_| bad(what, self.at))?);
        self.at += 8;
        usize::try_from(n).map_err(|_| bad(what, self.at - 8))
    }

    fn words(&mut self, what: &'static str) -> Result<(Frozen<u64>, usize), Error> {
        let n = self.count(what)?;
        let start = self.at;
        let size = n.checked_mul(8).ok_or(bad(what, start - 8))?;
        if size > self.end - start {
            return Err(bad(what, start - 8));
        }
        let w = self
            .shared
            .section::<u64>(start, n)
            .ok_or(bad(what, start))?;
        self.at += size;
        Ok((w, start))
    }

    fn bytes(&mut self, what: &'static str) -> Result<(Frozen<u8>, usize), Error> {
        let n = self.count(what)?;
        let start = self.at;
        let padded = n.checked_next_multiple_of(8).ok_or(bad(what, start - 8))?;
        if padded > self.end - start {
            return Err(bad(what, start - 8));
        }
        let b = self
            .shared
            .section::<u8>(start, n)
            .ok_or(bad(what, start))?;
        if self.shared.bytes()[start + n..start + padded]
            .iter()
            .any(|&x| x != 0)
        {
            return Err(bad("nonzero padding", start + n));
        }
        self.at += padded;
        Ok((b, start))
    }
}

/// Loads and checks a tree.
pub(crate) fn read(shared: &Shared) -> Result<Tree, Error> {
    let buf = shared.bytes();
    let body = check_frame(buf, MAGIC, VERSION, HEADER + 8)?;
    let shift = u32::from_le_bytes([buf[12], buf[13], buf[14], buf[15]]);
    if !super::SHIFTS.contains(&shift) {
        return Err(bad("keys per leaf out of range", 12));
    }
    let mut rd = Reader {
        shared,
        end: body,
        at: 16,
    };
    let len = rd.count("truncated header")?;
    let (words, words_at) = rd.words("truncated leaf words")?;
    let (tails, tails_at) = rd.bytes("truncated tail bytes")?;
    let (values, values_at) = rd.words("truncated values")?;
    let (leaf_at, leaf_at_at) = rd.words("truncated leaf offsets")?;
    if rd.at != body {
        return Err(bad("trailing bytes", rd.at));
    }
    let keys = Layer {
        len,
        leaf_at,
        words,
        tails,
    };
    let mut tree = Tree {
        shift,
        keys,
        route: Route::Layers(Vec::new()),
        values,
    };
    tree.audit().map_err(|f| {
        let (at, size) = match f.part {
            Part::Words => (words_at, 8),
            Part::Tails => (tails_at, 1),
            Part::Values => (values_at, 8),
            Part::LeafAt => (leaf_at_at, 8),
        };
        bad(f.what, at.saturating_add(f.index.saturating_mul(size)))
    })?;
    tree.route = Route::build(&tree.keys, shift);
    Ok(tree)
}
