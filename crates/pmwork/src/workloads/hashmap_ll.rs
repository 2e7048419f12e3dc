//! Low-level hash map (Janus / PMWeaver "Hashmap Low-Level"): crash consistency by direct
//! pointer updates, no log.
//!
//! A fixed table of 1024 buckets; entry `[key, val, next]`. For a key drawn from 2048 per
//! thread: if absent, insert it (entry written and persisted, then published by a persisted
//! 8-byte bucket-head store); if present, either update its value in place (one persisted
//! 8-byte store) or unlink it (one persisted 8-byte link store) and free it.

use std::collections::BTreeMap;

use crate::alloc::check_heap;
use crate::ds::StepLimit;
use crate::kernel::{Kernel, Params, Suite, WorkloadInfo};
use crate::layout::root_word;
use crate::models::{Model, Tx};
use crate::rng::{mix64, Rng};

const BUCKETS: u64 = 1024;
const KEYS: u64 = 2048;
const ENTRY_BYTES: u64 = 24;

/// One operation: put `key` (insert, or update its value) — or remove it when present and
/// `remove` is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PutOp {
    /// Key.
    pub key: u64,
    /// Value.
    pub val: u64,
    /// Remove instead of updating when the key is present.
    pub remove: bool,
}

/// The low-level hash map workload.
pub struct HashMapLl {
    info: WorkloadInfo,
}

impl HashMapLl {
    /// Janus's low-level hash map.
    pub fn new() -> HashMapLl {
        HashMapLl {
            info: WorkloadInfo {
                name: "hashmap-ll",
                model: Model::Barrier,
                suite: Suite::Janus,
                default_ops: 10_000,
                default_threads: 1,
                size: "1024 buckets, 2048 keys per thread; present keys: 70% update, 30% remove",
                source: "Janus/PMWeaver low-level set (Table II); sizes not given: chosen",
                description: "chained hash map, persist barriers and 8-byte pointer commits",
            },
        }
    }
}

impl Default for HashMapLl {
    fn default() -> Self {
        HashMapLl::new()
    }
}

fn bucket(key: u64) -> u64 {
    mix64(key) % BUCKETS
}

impl Kernel for HashMapLl {
    type Op = PutOp;
    type State = BTreeMap<u64, u64>;

    fn info(&self) -> &WorkloadInfo {
        &self.info
    }

    fn gen_op(&self, _p: &Params, _t: u16, _i: u64, rng: &mut Rng) -> PutOp {
        PutOp {
            key: 1 + rng.below(KEYS),
            val: rng.next_u64(),
            remove: rng.percent(30),
        }
    }

    fn request(&self, op: &PutOp, words: &mut Vec<u64>) {
        words.extend([u64::from(op.remove), op.key, op.val]);
    }

    fn setup(&self, tx: &mut Tx, _p: &Params, t: u16) {
        let table = tx.alloc_static(8 * BUCKETS);
        tx.write(root_word(t, 1), table);
    }

    fn exec(&self, tx: &mut Tx, _p: &Params, t: u16, op: &PutOp) {
        let table = tx.read(root_word(t, 1));
        let mut link = table + 8 * bucket(op.key);
        let mut e = tx.read(link);
        while e != 0 {
            tx.compute(2);
            if tx.read(e) == op.key {
                if op.remove {
                    let next = tx.read(e + 16);
                    tx.write(link, next);
                    tx.persist(link, 8);
                    tx.free(e);
                } else {
                    tx.write(e + 8, op.val);
                    tx.persist(e + 8, 8);
                }
                return;
            }
            link = e + 16;
            e = tx.read(link);
        }
        let head_addr = table + 8 * bucket(op.key);
        let head = tx.read(head_addr);
        let n = tx.alloc(ENTRY_BYTES);
        tx.write(n, op.key);
        tx.write(n + 8, op.val);
        tx.write(n + 16, head);
        tx.persist(n, ENTRY_BYTES);
        tx.write(head_addr, n);
        tx.persist(head_addr, 8);
    }

    fn initial(&self, _p: &Params, _t: u16) -> BTreeMap<u64, u64> {
        BTreeMap::new()
    }

    fn apply(&self, s: &mut BTreeMap<u64, u64>, _p: &Params, _t: u16, op: &PutOp) {
        if s.contains_key(&op.key) && op.remove {
            s.remove(&op.key);
        } else {
            s.insert(op.key, op.val);
        }
    }

    fn extract(&self, tx: &mut Tx, _p: &Params, t: u16) -> Result<BTreeMap<u64, u64>, String> {
        let table = tx.read(root_word(t, 1));
        let mut reach = Vec::new();
        let mut out = BTreeMap::new();
        let mut limit = StepLimit::nodes(tx.heap_ref().resident_bytes(), ENTRY_BYTES, "hashmap-ll");
        for b in 0..BUCKETS {
            let mut e = tx.read(table + 8 * b);
            while e != 0 {
                limit.step()?;
                reach.push(e);
                let k = tx.read(e);
                if bucket(k) != b {
                    return Err(format!("hashmap-ll: key {k} in bucket {b}"));
                }
                if out.insert(k, tx.read(e + 8)).is_some() {
                    return Err(format!("hashmap-ll: key {k} twice"));
                }
                e = tx.read(e + 16);
            }
        }
        check_heap(tx, t, &reach)?;
        Ok(out)
    }
}
