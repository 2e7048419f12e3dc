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

    pub(crate) fn step(&mut self) -> Result<(), String> {
        if self.left == 0 {
            return Err(format!("{}: traversal does not end (cycle?)", self.what));
        }
        self.left -= 1;
        Ok(())
    }
}
