//! The serialized form of a compact ART (format version 2). All integers little-endian.
//!
//! ```text
//! offset  size  field
//! 0       8     magic: "MLPDXCAR"
//! 8       4     format version (2)
//! 12      4     zero
//! 16      8     number of keys
//! 24      8     the root ref (zero when there are no keys)
//! 32      8     arena bytes, a multiple of 8
//! 40      ...   the arena (layout in `super`)
//! last 8        XXH3-64 (seed 0) of every byte before it
//! ```
//!
//! Loading checks the frame (magic, version, checksum), the sizes against the buffer, and
//! then every invariant of the tree ([`Tree::audit`]), in time linear in the image; any
//! failure is an [`Error::Format`] naming the broken rule and its byte, or an
//! [`Error::Version`]. Damage that yields another valid tree (a changed value, say) is what
//! the checksum guards against. An aligned buffer is used in place.
//!
//! Version 2 stores a Linear node's child bytes unpadded, right before its records (version 1
//! padded them to a word); a version 1 image is refused as [`Error::Version`].

use super::{Ref, Tree};
use crate::Error;
use crate::substrate::Shared;
use crate::substrate::hash::hash_bytes;
use crate::substrate::image::check_frame;

/// Magic of a serialized compact ART.
pub(crate) const MAGIC: [u8; 8] = *b"MLPDXCAR";
/// Version written and the newest one read.
pub(crate) const VERSION: u32 = 2;
/// Bytes before the arena.
const HEADER: usize = 40;

/// Serializes `tree`.
pub(crate) fn write(tree: &Tree) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + 8 + tree.arena.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    for field in [tree.len as u64, tree.root.0, tree.arena.len() as u64] {
        out.extend_from_slice(&field.to_le_bytes());
    }
    out.extend_from_slice(&tree.arena);
    let sum = hash_bytes(&out, 0);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// Loads a tree from `shared`, checking everything.
pub(crate) fn read(shared: &Shared) -> Result<Tree, Error> {
    let bad = |what, offset| Error::Format { what, offset };
    let buf = shared.bytes();
    let body = check_frame(buf, MAGIC, VERSION, HEADER + 8)?;
    let field = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&buf[at..at + 8]);
        u64::from_le_bytes(b)
    };
    if buf[12..16] != [0; 4] {
        return Err(bad("reserved header bytes are not zero", 12));
    }
    let len = usize::try_from(field(16)).map_err(|_| bad("key count too large", 16))?;
    let root = Ref(field(24));
    let size = field(32);
    if size != (body - HEADER) as u64 {
        return Err(bad("arena size differs from the image", 32));
    }
    let arena = shared
        .section::<u8>(HEADER, body - HEADER)
        .ok_or(bad("truncated arena", HEADER))?;
    let tree = Tree { arena, root, len };
    tree.audit()
        .map_err(|f| bad(f.what, HEADER.saturating_add(f.at)))?;
    Ok(tree)
}
