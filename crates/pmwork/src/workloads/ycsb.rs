//! YCSB over a persistent key-value store (WHISPER's N-store ycsb, as PPO runs it).
//!
//! Each thread (a client) loads its records, then reads or updates records chosen by YCSB's
//! scrambled Zipfian distribution (constant 0.99). A record is 8 fields of 16 bytes; an
//! update rewrites one field in place, a read fetches the whole record. Transactions use
//! the redo-log model (writes go to the log, commit, apply in place).

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::alloc::check_heap;
use crate::ds::kvstore::{words_to_bytes, KvStore};
use crate::kernel::{Kernel, Params, Suite, WorkloadInfo};
use crate::layout::root_word;
use crate::models::{Model, Tx};
use crate::rng::{mix64, Rng, Zipf};

const FIELDS: u64 = 8;
const FIELD_WORDS: u64 = 2;
const WORDS: u64 = FIELDS * FIELD_WORDS;
/// Percentage of run-phase operations that update.
pub const UPDATE_PERCENT: u64 = 50;
const STORE: KvStore = KvStore {
    buckets: 1 << 16,
    words: WORDS,
};

/// One YCSB operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YcsbOp {
    /// Load phase: insert a record whose words derive from `seed`.
    Insert {
        /// Key.
        key: u64,
        /// Value seed.
        seed: u64,
    },
    /// Read a whole record.
    Read {
        /// Key.
        key: u64,
    },
    /// Rewrite one field with words derived from `seed`.
    Update {
        /// Key.
        key: u64,
        /// Field (0..8).
        field: u64,
        /// Value seed.
        seed: u64,
    },
}

/// The YCSB workload.
pub struct Ycsb {
    info: WorkloadInfo,
    zipf: Mutex<Vec<(u64, Zipf)>>,
}

impl Ycsb {
    /// WHISPER's ycsb.
    pub fn new() -> Ycsb {
        Ycsb {
            info: WorkloadInfo {
                name: "ycsb",
                model: Model::Redo,
                suite: Suite::Whisper,
                default_ops: 800_000,
                default_threads: 4,
                size: "per thread ops/threads/5 records (clamped to 16..10k) of 128 B loaded first; zipfian 0.99; 50% updates",
                source: "PPO Table IV: ycsb, 4 clients, 8 M transactions (1/10 by default), 50-80% writes",
                description: "key-value store, redo transactions: zipfian reads and field updates",
            },
            zipf: Mutex::new(Vec::new()),
        }
    }

    fn records(p: &Params, t: u16) -> u64 {
        (p.ops_of(t) / 5).clamp(16, 10_000)
    }

    fn key_of(i: u64) -> u64 {
        mix64(i + 1)
    }

    fn pick(&self, n: u64, rng: &mut Rng) -> u64 {
        let mut cache = self.zipf.lock().expect("zipf cache");
        if let Some((_, z)) = cache.iter_mut().find(|(m, _)| *m == n) {
            return z.next(rng);
        }
        let mut z = Zipf::new(n, Zipf::YCSB_THETA);
        let r = z.next(rng);
        cache.push((n, z));
        r
    }

    fn value(seed: u64) -> Vec<u64> {
        (0..WORDS).map(|j| mix64(seed ^ j)).collect()
    }

    fn field(seed: u64, field: u64) -> Vec<u64> {
        (0..FIELD_WORDS)
            .map(|j| mix64(seed ^ (field * FIELD_WORDS + j)))
            .collect()
    }
}

impl Default for Ycsb {
    fn default() -> Self {
        Ycsb::new()
    }
}

impl Kernel for Ycsb {
    type Op = YcsbOp;
    type State = BTreeMap<u64, Vec<u64>>;

    fn info(&self) -> &WorkloadInfo {
        &self.info
    }

    fn thread_ops(&self, p: &Params, t: u16) -> u64 {
        Self::records(p, t) + p.ops_of(t)
    }

    fn gen_op(&self, p: &Params, t: u16, i: u64, rng: &mut Rng) -> YcsbOp {
        let n = Self::records(p, t);
        if i < n {
            return YcsbOp::Insert {
                key: Self::key_of(i),
                seed: rng.next_u64(),
            };
        }
        let key = Self::key_of(self.pick(n, rng));
        if rng.percent(UPDATE_PERCENT) {
            YcsbOp::Update {
                key,
                field: rng.below(FIELDS),
                seed: rng.next_u64(),
            }
        } else {
            YcsbOp::Read { key }
        }
    }

    fn request(&self, op: &YcsbOp, words: &mut Vec<u64>) {
        match *op {
            YcsbOp::Insert { key, seed } => words.extend([1, key, seed]),
            YcsbOp::Read { key } => words.extend([2, key]),
            YcsbOp::Update { key, field, seed } => words.extend([3, key, field, seed]),
        }
    }

    fn setup(&self, tx: &mut Tx, _p: &Params, t: u16) {
        let index = STORE.create(tx);
        tx.write(root_word(t, 1), index);
    }

    fn exec(&self, tx: &mut Tx, _p: &Params, t: u16, op: &YcsbOp) {
        let index = tx.read(root_word(t, 1));
        match *op {
            YcsbOp::Insert { key, seed } => {
                STORE.put(tx, index, key, &words_to_bytes(&Self::value(seed)));
            }
            YcsbOp::Read { key } => {
                let mut buf = [0u8; (WORDS * 8) as usize];
                STORE.get(tx, index, key, &mut buf);
                tx.compute(20);
            }
            YcsbOp::Update { key, field, seed } => {
                let data = words_to_bytes(&Self::field(seed, field));
                STORE.update(tx, index, key, field * FIELD_WORDS, &data);
            }
        }
    }

    fn initial(&self, _p: &Params, _t: u16) -> Self::State {
        BTreeMap::new()
    }

    fn apply(&self, s: &mut Self::State, _p: &Params, _t: u16, op: &YcsbOp) {
        match *op {
            YcsbOp::Insert { key, seed } => {
                s.insert(key, Self::value(seed));
            }
            YcsbOp::Read { .. } => {}
            YcsbOp::Update { key, field, seed } => {
                if let Some(v) = s.get_mut(&key) {
                    let f = (field * FIELD_WORDS) as usize;
                    v[f..f + FIELD_WORDS as usize].copy_from_slice(&Self::field(seed, field));
                }
            }
        }
    }

    fn extract(&self, tx: &mut Tx, _p: &Params, t: u16) -> Result<Self::State, String> {
        let index = tx.read(root_word(t, 1));
        let mut reach = Vec::new();
        let s = STORE.collect(tx, index, &mut reach)?;
        check_heap(tx, t, &reach)?;
        Ok(s)
    }
}
