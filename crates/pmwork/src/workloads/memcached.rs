//! memcached-like cache (WHISPER's Mnemosyne memcached, driven as memslap drives it).
//!
//! Each thread (a client) first SETs every key of its key space, then issues 95% GETs and
//! 5% SETs of uniformly random keys (memslap's default mix). Items carry 1 KiB values
//! (memslap's default value size); a SET writes a new item and replaces the old one, as
//! memcached does, inside a redo transaction (Mnemosyne is a redo-log system). A value's
//! words are derived from its first word, so a torn value is detected.

use std::collections::BTreeMap;

use crate::alloc::check_heap;
use crate::ds::kvstore::{words_to_bytes, KvStore};
use crate::kernel::{Kernel, Params, Suite, WorkloadInfo};
use crate::layout::root_word;
use crate::models::{Model, Tx};
use crate::rng::{mix64, Rng};

const WORDS: u64 = 128;
/// Percentage of run-phase operations that are SETs.
pub const SET_PERCENT: u64 = 5;
const STORE: KvStore = KvStore {
    buckets: 1 << 16,
    words: WORDS,
};

/// One memcached request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McOp {
    /// Store a value derived from `seed` under `key`.
    Set {
        /// Key.
        key: u64,
        /// Value seed.
        seed: u64,
    },
    /// Fetch `key`.
    Get {
        /// Key.
        key: u64,
    },
}

/// The memcached workload.
pub struct Memcached {
    info: WorkloadInfo,
}

impl Memcached {
    /// WHISPER's memcached.
    pub fn new() -> Memcached {
        Memcached {
            info: WorkloadInfo {
                name: "memcached",
                model: Model::Redo,
                suite: Suite::Whisper,
                default_ops: 100_000,
                default_threads: 4,
                size: "per thread ops/threads/10 keys (clamped to 16..10k) SET first; 1 KiB values; 5% SET",
                source: "PPO Table IV: memcached, memslap, 4 clients, 100 k ops, 5% SET",
                description:
                    "key-value cache, redo transactions: 95% GET, 5% SET (item replacement)",
            },
        }
    }

    fn keys(p: &Params, t: u16) -> u64 {
        (p.ops_of(t) / 10).clamp(16, 10_000)
    }

    fn key_of(i: u64) -> u64 {
        mix64(0x6d63 ^ i)
    }

    fn value(seed: u64) -> Vec<u64> {
        (0..WORDS)
            .map(|j| if j == 0 { seed } else { mix64(seed ^ j) })
            .collect()
    }
}

impl Default for Memcached {
    fn default() -> Self {
        Memcached::new()
    }
}

impl Kernel for Memcached {
    type Op = McOp;
    /// Key → seed of its value.
    type State = BTreeMap<u64, u64>;

    fn info(&self) -> &WorkloadInfo {
        &self.info
    }

    fn thread_ops(&self, p: &Params, t: u16) -> u64 {
        Self::keys(p, t) + p.ops_of(t)
    }

    fn gen_op(&self, p: &Params, t: u16, i: u64, rng: &mut Rng) -> McOp {
        let n = Self::keys(p, t);
        if i < n {
            return McOp::Set {
                key: Self::key_of(i),
                seed: rng.next_u64(),
            };
        }
        let key = Self::key_of(rng.below(n));
        if rng.percent(SET_PERCENT) {
            McOp::Set {
                key,
                seed: rng.next_u64(),
            }
        } else {
            McOp::Get { key }
        }
    }

    fn request(&self, op: &McOp, words: &mut Vec<u64>) {
        match *op {
            McOp::Set { key, seed } => words.extend([1, key, WORDS * 8, seed]),
            McOp::Get { key } => words.extend([2, key]),
        }
    }

    fn setup(&self, tx: &mut Tx, _p: &Params, t: u16) {
        let index = STORE.create(tx);
        tx.write(root_word(t, 1), index);
    }

    fn exec(&self, tx: &mut Tx, _p: &Params, t: u16, op: &McOp) {
        let index = tx.read(root_word(t, 1));
        match *op {
            McOp::Set { key, seed } => {
                STORE.put(tx, index, key, &words_to_bytes(&Self::value(seed)));
            }
            McOp::Get { key } => {
                let mut buf = vec![0u8; (WORDS * 8) as usize];
                STORE.get(tx, index, key, &mut buf);
                tx.compute(40);
            }
        }
    }

    fn initial(&self, _p: &Params, _t: u16) -> Self::State {
        BTreeMap::new()
    }

    fn apply(&self, s: &mut Self::State, _p: &Params, _t: u16, op: &McOp) {
        if let McOp::Set { key, seed } = *op {
            s.insert(key, seed);
        }
    }

    fn extract(&self, tx: &mut Tx, _p: &Params, t: u16) -> Result<Self::State, String> {
        let index = tx.read(root_word(t, 1));
        let mut reach = Vec::new();
        let items = STORE.collect(tx, index, &mut reach)?;
        check_heap(tx, t, &reach)?;
        let mut out = BTreeMap::new();
        for (k, v) in items {
            if v != Self::value(v[0]) {
                return Err(format!("memcached: item {k:#x} holds a torn value"));
            }
            out.insert(k, v[0]);
        }
        Ok(out)
    }
}
