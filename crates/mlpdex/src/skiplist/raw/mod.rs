//! The skip list's core: node layout ([`node`]), the lock-free link protocol ([`list`]), the
//! MLP prefetcher ([`prefetch`]), the readers' typed API under an epoch guard ([`read`]),
//! epoch reclamation of what the protocol retires ([`reclaim`]), and the atomics shim that
//! lets loom check the protocol ([`sync`]). Every `unsafe` of the skip list lives here; the
//! front end only forwards.

pub(crate) mod list;
pub(crate) mod node;
pub(crate) mod prefetch;
pub(crate) mod read;
pub(crate) mod reclaim;
pub(crate) mod sync;
