//! Persistent data structures, written once against [`Tx`] and run under any model.
//!
//! Every structure keeps all of its state in PM (reachable from a root object whose address
//! the workload stores in its root slot), snapshots what it modifies with `tx.add` (a no-op
//! outside the undo models), and can read itself back with invariant checks (`collect`),
//! reporting every allocated block it reaches so the allocator can be checked too.

pub mod bplustree;
pub mod btree;
pub mod ctree;
pub mod hashmap;
pub mod kvstore;
pub mod rbtree;
pub mod skiplist;

use std::collections::BTreeMap;

use crate::models::Tx;

/// A persistent ordered or hashed map from `u64` keys to `u64` values.
pub trait MapDs: Send + Sync + 'static {
    /// Creates an empty map and returns its root object's address.
    fn create(&self, tx: &mut Tx) -> u64;

    /// The value stored under `key`.
    fn get(&self, tx: &mut Tx, root: u64, key: u64) -> Option<u64>;

    /// Stores `val` under `key`; true if the key was new (false: value replaced).
    fn insert(&self, tx: &mut Tx, root: u64, key: u64, val: u64) -> bool;

    /// Removes `key`; true if it was present.
    fn remove(&self, tx: &mut Tx, root: u64, key: u64) -> bool;

    /// Every entry, after checking the structure's invariants; pushes the payload address of
    /// every allocated block the structure reaches onto `reach`.
    fn collect(
        &self,
        tx: &mut Tx,
        root: u64,
        reach: &mut Vec<u64>,
    ) -> Result<BTreeMap<u64, u64>, String>;

    /// True if the structure stores values longer than one word ([`MapDs::insert_sized`]).
    fn sized_values(&self) -> bool {
        false
    }

    /// Stores under `key` a value of `bytes` bytes: `val`, then [`value_word`]s derived from
    /// it. Structures without [`MapDs::sized_values`] take only `bytes == 8`.
    fn insert_sized(&self, tx: &mut Tx, root: u64, key: u64, val: u64, bytes: u64) -> bool {
        assert_eq!(bytes, 8, "this map stores 8-byte values");
        self.insert(tx, root, key, val)
    }

    /// [`MapDs::collect`] of a map whose values are `bytes` long, checking every value whole.
    fn collect_sized(
        &self,
        tx: &mut Tx,
        root: u64,
        reach: &mut Vec<u64>,
        bytes: u64,
    ) -> Result<BTreeMap<u64, u64>, String> {
        assert_eq!(bytes, 8, "this map stores 8-byte values");
        self.collect(tx, root, reach)
    }
}

/// Word `i` (1, 2, ...) of a value whose first word is `val`: a long value is a function of
/// its first word, so the oracle checks it whole from the logical state's `u64`.
pub fn value_word(val: u64, i: u64) -> u64 {
    crate::rng::mix64(val ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// The bytes of a `bytes`-long value after its first word.
pub(crate) fn value_tail(val: u64, bytes: u64) -> Vec<u8> {
    (1..bytes / 8)
        .flat_map(|i| value_word(val, i).to_le_bytes())
        .collect()
}

/// Bounds a traversal: an error once more than `limit` steps were taken (a cycle in a
/// corrupted structure must not hang the oracle).
pub(crate) struct StepLimit {
    left: u64,
    what: &'static str,
}

impl StepLimit {
    pub(crate) fn new(limit: u64, what: &'static str) -> StepLimit {
        StepLimit { left: limit, what }
    }

    /// A traversal of nodes of `node_bytes` each: it cannot visit more distinct nodes than the
    /// memory written so far holds (`resident_bytes` of the heap), so more steps mean a
    /// cycle. (A fixed 2^32 let a cycle in a damaged list run for minutes and grow the oracle's
    /// vectors past the machine's memory.)
    pub(crate) fn nodes(resident_bytes: usize, node_bytes: u64, what: &'static str) -> StepLimit {
        StepLimit::new(resident_bytes as u64 / node_bytes.max(1) + 1, what)
    }

    pub(crate) fn step(&mut self) -> Result<(), String> {
        if self.left == 0 {
            return Err(format!("{}: traversal does not end (cycle?)", self.what));
        }
        self.left -= 1;
        Ok(())
    }
}
