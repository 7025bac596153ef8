//! PI's cores: the SIMD rank of a key in an entry, the index layer, the storage layer, the
//! interception search, the partition of a batch and a worker's execution of its share.

pub(crate) mod execute;
pub(crate) mod index;
pub(crate) mod node;
pub(crate) mod partition;
pub(crate) mod simd;
pub(crate) mod slab;
#[forbid(unsafe_code)]
pub(crate) mod sort;
pub(crate) mod traverse;
