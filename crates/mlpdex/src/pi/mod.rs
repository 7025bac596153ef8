//! PI, the batched latch-free SIMD skip list (pi-parallel-skiplist.txt). Under construction
//! (issue 20): the index layer and its SIMD search have landed; the storage layer, the batch
//! executor and the public front end come next.

pub(crate) mod raw;
