//! The skip list's core: node layout ([`node`]), the lock-free link protocol ([`list`]), the
//! MLP prefetcher ([`prefetch`]), the readers' typed API under an epoch guard ([`read`]), and
//! epoch reclamation of what the protocol retires ([`reclaim`]). Every `unsafe` of the skip
//! list lives here; the front end only forwards. The protocol's atomics come from
//! [`crate::sync`], which swaps in loom's for the loom models.

pub(crate) mod list;
pub(crate) mod node;
pub(crate) mod prefetch;
pub(crate) mod read;
pub(crate) mod reclaim;
