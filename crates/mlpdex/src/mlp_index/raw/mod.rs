//! MlpIndex's core: hashing, the bucketized table, the top bitmap, the trie and its cursor.

pub(crate) mod hash;
pub(crate) mod table;
pub(crate) mod top;
pub(crate) mod trie;
