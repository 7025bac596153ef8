//! The succinct static structures: one LOUDS-DS trie core (`raw`) under two front ends, the
//! [`Fst`](crate::fst::Fst) map and the [`Surf`](crate::surf::Surf) range filter
//! (memory-efficient-search-trees.txt, chapters 3 and 4).
//!
//! The front ends differ only in what a leaf keeps (a value and the rest of the key, or a few
//! suffix bits) and in what a query answers; the trie, its builder, its cursors, its suffix
//! stores and its serialized format are shared, so both live here beside `raw`. The crate root
//! re-exports them as [`crate::fst`] and [`crate::surf`], their public paths.

pub mod fst;
pub(crate) mod raw;
pub mod surf;
