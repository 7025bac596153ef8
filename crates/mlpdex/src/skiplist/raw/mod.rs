//! The skip list's core: node layout ([`node`]), the lock-free link protocol ([`list`]), the
//! MLP prefetcher ([`prefetch`]). The protocol's atomics come from [`crate::sync`], which swaps
//! in loom's for the loom models.

pub(crate) mod list;
pub(crate) mod node;
pub(crate) mod prefetch;
