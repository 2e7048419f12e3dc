//! Map workloads: one [`MapDs`] driven by an operation mix.
//!
//! * [`MapMix::InsertOnly`]: insert random 64-bit keys, one transaction each (the PMDK map
//!   examples as PMWeaver's artifact runs them: 512 inserts).
//! * [`MapMix::Toggle`]: search a key drawn uniformly from a key space; insert it if absent,
//!   remove it if found (PPO Table IV's hash / RB-tree / B+tree; LALEA's micro-benchmarks).

use std::collections::BTreeMap;

use crate::alloc::check_heap;
use crate::ds::MapDs;
use crate::kernel::{Kernel, Params, WorkloadInfo};
use crate::layout::root_word;
use crate::models::Tx;
use crate::rng::{mix64, Rng};

/// Which operations a map workload performs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapMix {
    /// Insert random keys.
    InsertOnly,
    /// Insert-if-absent / remove-if-found over `keys` distinct keys in all, split evenly
    /// over the threads.
    Toggle {
        /// Size of the key space (all threads together).
        keys: u64,
    },
}

/// One map operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapOp {
    /// Insert (or replace) `key` → `val`.
    Insert {
        /// Key.
        key: u64,
        /// Value.
        val: u64,
    },
    /// Search `key`; insert `key` → `val` if absent, remove it if present.
    Toggle {
        /// Key.
        key: u64,
        /// Value stored if the key is inserted.
        val: u64,
    },
}

/// A map workload: structure `D` under a mix.
pub struct MapKernel<D: MapDs> {
    /// Registry entry.
    pub info: WorkloadInfo,
    /// The structure.
    pub ds: D,
    /// The operation mix.
    pub mix: MapMix,
}

impl<D: MapDs> Kernel for MapKernel<D> {
    type Op = MapOp;
    type State = BTreeMap<u64, u64>;

    fn info(&self) -> &WorkloadInfo {
        &self.info
    }

    fn sized_values(&self) -> bool {
        self.ds.sized_values()
    }

    fn gen_op(&self, p: &Params, _t: u16, _i: u64, rng: &mut Rng) -> MapOp {
        match self.mix {
            MapMix::InsertOnly => MapOp::Insert {
                key: rng.next_u64(),
                val: rng.next_u64(),
            },
            MapMix::Toggle { keys } => MapOp::Toggle {
                key: mix64(1 + rng.below((keys / u64::from(p.threads)).max(1))),
                val: rng.next_u64(),
            },
        }
    }

    fn request(&self, op: &MapOp, words: &mut Vec<u64>) {
        match *op {
            MapOp::Insert { key, val } => words.extend([1, key, val]),
            MapOp::Toggle { key, val } => words.extend([2, key, val]),
        }
    }

    fn setup(&self, tx: &mut Tx, _p: &Params, t: u16) {
        let root = self.ds.create(tx);
        tx.write(root_word(t, 1), root);
    }

    fn exec(&self, tx: &mut Tx, p: &Params, t: u16, op: &MapOp) {
        let root = tx.read(root_word(t, 1));
        let bytes = u64::from(p.value_bytes);
        match *op {
            MapOp::Insert { key, val } => {
                self.ds.insert_sized(tx, root, key, val, bytes);
            }
            MapOp::Toggle { key, val } => {
                if self.ds.get(tx, root, key).is_some() {
                    self.ds.remove(tx, root, key);
                } else {
                    self.ds.insert_sized(tx, root, key, val, bytes);
                }
            }
        }
    }

    fn initial(&self, _p: &Params, _t: u16) -> BTreeMap<u64, u64> {
        BTreeMap::new()
    }

    fn apply(&self, s: &mut BTreeMap<u64, u64>, _p: &Params, _t: u16, op: &MapOp) {
        match *op {
            MapOp::Insert { key, val } => {
                s.insert(key, val);
            }
            MapOp::Toggle { key, val } => {
                if s.remove(&key).is_none() {
                    s.insert(key, val);
                }
            }
        }
    }

    fn extract(&self, tx: &mut Tx, p: &Params, t: u16) -> Result<BTreeMap<u64, u64>, String> {
        let root = tx.read(root_word(t, 1));
        let mut reach = Vec::new();
        let m = self
            .ds
            .collect_sized(tx, root, &mut reach, u64::from(p.value_bytes))?;
        check_heap(tx, t, &reach)?;
        Ok(m)
    }
}
