//! PI's cores: the SIMD rank of a key in an entry and the index layer built from the storage
//! layer's towers.

pub(crate) mod index;
pub(crate) mod simd;
