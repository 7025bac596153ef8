//! MlpIndex's core: hashing, the two table layouts, the top bitmap, the trie and its cursor.
//!
//! The trie (`trie`) is written once over [`Store`], which each layout implements:
//! `table` (bucketized, the default) and `paper` (24-byte slots, as the paper measured).

use crate::Error;
use crate::HugePages;

#[forbid(unsafe_code)]
pub(crate) mod hash;
pub(crate) mod paper;
pub(crate) mod stripes;
pub(crate) mod table;
pub(crate) mod top;
pub(crate) mod trie;

use table::{Item, Loc, Node, Probe};

/// A hash table of trie items (leaves and nodes) keyed by index.
///
/// Locations ([`Loc`]) stay valid until the next call that places or removes an item; the
/// trie makes every in-place change of an operation before its first placement.
pub(crate) trait Store: Sized {
    /// Slots per unit of [`new`](Self::new)'s size (a bucket's entries, or 1).
    const SLOTS: usize;
    /// Slots a key takes on average (its leaf and its share of nodes), rounded up from what
    /// both layouts measured (1.00–1.03 on random keys from 1000 to 10^6 of them, 1.02–1.04 on
    /// dense ones); sizes [`RawIndex::reserve`](trie::RawIndex::reserve).
    const SLOTS_PER_KEY: f64;
    /// An item's candidate places.
    type Home: Copy;

    /// An empty table of at least `units` units, on pages as `huge` asks.
    fn new(units: usize, huge: HugePages) -> Result<Self, Error>;
    /// Its size in units.
    fn units(&self) -> usize;
    /// Slots covered by items.
    fn used(&self) -> usize;
    /// Slots in all.
    fn capacity(&self) -> usize;
    /// Bytes owned.
    fn bytes(&self) -> usize;

    /// Where an item with index `p` of `len` bytes may be.
    fn probe(&self, p: u64, len: u32) -> Probe;
    /// Starts fetching the lines [`find`](Self::find) will read.
    fn prefetch(&self, pr: &Probe);
    /// The item with the probed index.
    fn find(&self, pr: &Probe) -> Option<Loc>;

    /// Whether the item at `l` is a leaf, and its value (leaf) or minimum key (node).
    fn word(&self, l: Loc) -> (bool, u64);
    /// Sets the value (leaf) or minimum key (node) of the item at `l`.
    fn set_word(&mut self, l: Loc, w: u64);
    /// The value of the leaf at `l`, in place.
    fn value(&self, l: Loc) -> &u64;
    /// The value of the leaf at `l`, in place, for writing.
    fn value_mut(&mut self, l: Loc) -> &mut u64;
    /// The address of the value of the leaf at `l`, computed without reading or borrowing
    /// the table's memory (for handing out several `&mut` values at once). Valid to write
    /// through while the table is exclusively borrowed and does not change shape.
    fn value_ptr(&mut self, l: Loc) -> *mut u64;
    /// The key of the leaf at `l`.
    fn leaf_key(&self, l: Loc) -> u64;
    /// Whether the leaf at `l`, found by its index, holds `key`.
    fn leaf_suffix_is(&self, l: Loc, key: u64) -> bool;
    /// The node at `l`.
    fn node(&self, l: Loc) -> Node;
    /// The item at `l`.
    fn item(&self, l: Loc) -> Item;

    /// Rewrites the node at `l` as `n` (same index) in place; false when it needs more room
    /// than the node has (the caller then removes and places it).
    fn write_node(&mut self, l: Loc, n: &Node) -> bool;
    /// Replaces the leaf at `l` by a node of the same index with two children.
    fn leaf_to_node(&mut self, l: Loc, n: &Node);
    /// Removes the item at `l`; no other item moves.
    fn remove(&mut self, l: Loc);
    /// Where `it` may go (computed once, reused by [`place`](Self::place)); starts fetching
    /// those lines.
    fn home(&self, it: &Item) -> Self::Home;
    /// Places `it`, whose [`home`](Self::home) is `home`, moving other items as cuckoo
    /// hashing does; on failure the items left without a place are in `homeless` (which must
    /// come in empty).
    fn place(&mut self, it: Item, home: Self::Home, homeless: &mut Vec<Item>) -> Result<(), ()>;
    /// Takes the place of `old`, which this table (a grown or shrunk copy) replaces; what a
    /// shared table keeps for its writer passes to the new one (see
    /// [`table::Share`]).
    fn succeed(&mut self, old: Self) {
        drop(old);
    }
    /// Calls `f` with every item's location.
    fn for_each(&self, f: impl FnMut(Loc));
    /// Checks the table's own invariants; returns the number of items.
    fn audit(&self) -> Result<usize, String>;
}
