//! SPS (PPO Table IV, after Kiln): random swaps between entries of a 1 GB vector, one undo
//! transaction per swap.
//!
//! The vector (2^27 8-byte entries, split evenly over the threads) starts as a pseudo-random
//! permutation `v(i) = mix(i)`. To keep memory proportional to what is touched, an entry
//! stores `value ^ v(i)`: a never-written (zero) entry holds its initial value, so the
//! vector needs no initialisation pass and only swapped entries cost memory, while every swap
//! still reads and writes real, random-looking data at uniformly random addresses over the
//! whole gigabyte.

use std::collections::BTreeMap;

use crate::kernel::{Kernel, Params, Suite, WorkloadInfo};
use crate::layout::root_word;
use crate::models::{Model, Tx};
use crate::rng::{mix64, Rng};
use crate::workloads::arrayswap::{two_indices, SwapOp};

/// Entries of the whole vector (1 GB of 8-byte values).
pub const TOTAL_ENTRIES: u64 = 1 << 27;

/// The SPS workload.
pub struct Sps {
    info: WorkloadInfo,
}

impl Sps {
    /// PPO's SPS.
    pub fn new() -> Sps {
        Sps {
            info: WorkloadInfo {
                name: "ppo-sps",
                model: Model::Undo,
                suite: Suite::Ppo,
                default_ops: 100_000,
                default_threads: 8,
                size: "1 GB vector (2^27 entries) split over the threads",
                source: "PPO Table IV: SPS, 1 GB; ops not given: 100 k chosen",
                description: "random swaps between vector entries, one undo transaction each",
            },
        }
    }

    fn entries(p: &Params) -> u64 {
        TOTAL_ENTRIES / u64::from(p.threads)
    }

    fn init(i: u64) -> u64 {
        mix64(i ^ 0x5b5b_5b5b_5b5b_5b5b)
    }
}

impl Default for Sps {
    fn default() -> Self {
        Sps::new()
    }
}

impl Kernel for Sps {
    type Op = SwapOp;
    /// Entries whose value differs from their initial one.
    type State = BTreeMap<u64, u64>;

    fn info(&self) -> &WorkloadInfo {
        &self.info
    }

    fn gen_op(&self, p: &Params, _t: u16, _i: u64, rng: &mut Rng) -> SwapOp {
        two_indices(rng, Self::entries(p))
    }

    fn request(&self, op: &SwapOp, words: &mut Vec<u64>) {
        words.extend([op.i, op.j]);
    }

    fn setup(&self, tx: &mut Tx, p: &Params, t: u16) {
        let a = tx.alloc_static(8 * Self::entries(p));
        tx.write(root_word(t, 1), a);
    }

    fn exec(&self, tx: &mut Tx, _p: &Params, t: u16, op: &SwapOp) {
        let a = tx.read(root_word(t, 1));
        let (ai, aj) = (a + 8 * op.i, a + 8 * op.j);
        let vi = tx.read(ai) ^ Self::init(op.i);
        let vj = tx.read(aj) ^ Self::init(op.j);
        tx.compute(6);
        tx.add(ai, 8);
        tx.add(aj, 8);
        tx.write(ai, vj ^ Self::init(op.i));
        tx.write(aj, vi ^ Self::init(op.j));
    }

    fn initial(&self, _p: &Params, _t: u16) -> BTreeMap<u64, u64> {
        BTreeMap::new()
    }

    fn apply(&self, s: &mut BTreeMap<u64, u64>, _p: &Params, _t: u16, op: &SwapOp) {
        let vi = s.get(&op.i).copied().unwrap_or_else(|| Self::init(op.i));
        let vj = s.get(&op.j).copied().unwrap_or_else(|| Self::init(op.j));
        for (k, v) in [(op.i, vj), (op.j, vi)] {
            if v == Self::init(k) {
                s.remove(&k);
            } else {
                s.insert(k, v);
            }
        }
    }

    fn extract(&self, tx: &mut Tx, p: &Params, t: u16) -> Result<BTreeMap<u64, u64>, String> {
        let a = tx.read(root_word(t, 1));
        let end = a + 8 * Self::entries(p);
        let mut out = BTreeMap::new();
        for (lo, hi) in tx.heap().written_ranges(a, end) {
            let mut x = lo.next_multiple_of(8);
            while x + 8 <= hi {
                let i = (x - a) / 8;
                let raw = tx.read(x);
                if raw != 0 {
                    out.insert(i, raw ^ Self::init(i));
                }
                x += 8;
            }
        }
        Ok(out)
    }
}
