//! The LOUDS-DS core shared by [`crate::fst`] and [`crate::surf`]: construction, the LOUDS-DS
//! encoding and its cursors, leaf suffix stores, and the serialized format.

pub(crate) mod build;
pub(crate) mod compress;
pub(crate) mod format;
pub(crate) mod suffix;
pub(crate) mod suffix_code;
pub(crate) mod trie;
