//! The skip list's core: node layout ([`node`]), the lock-free link protocol ([`list`]), the
//! MLP prefetcher ([`prefetch`]), and the atomics shim that lets loom check the protocol
//! ([`sync`]).

pub(crate) mod list;
pub(crate) mod node;
pub(crate) mod prefetch;
pub(crate) mod sync;
