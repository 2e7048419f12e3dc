//! Array swap (Janus / PMWeaver low-level set): swap two random items of a persistent array,
//! made atomic by a hand-rolled undo log ([`Model::UndoLl`]: each old item is logged and
//! persisted, then the log count persisted, before the item changes).
//!
//! REFERENCE.md: the PMWeaver artifact runs 10k items and 1000 swaps.

use crate::kernel::{Kernel, Params, Suite, WorkloadInfo};
use crate::layout::root_word;
use crate::models::{Model, Tx};
use crate::rng::{mix64, Rng};

/// Items per thread.
pub const ITEMS: u64 = 10_000;

/// Swap items `i` and `j`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwapOp {
    /// First index.
    pub i: u64,
    /// Second index (different from `i`).
    pub j: u64,
}

/// Draws two distinct indices below `n`.
pub(crate) fn two_indices(rng: &mut Rng, n: u64) -> SwapOp {
    let i = rng.below(n);
    let mut j = rng.below(n - 1);
    if j >= i {
        j += 1;
    }
    SwapOp { i, j }
}

/// The array-swap workload.
pub struct ArraySwap {
    info: WorkloadInfo,
}

impl ArraySwap {
    /// Janus's array swap.
    pub fn new() -> ArraySwap {
        ArraySwap {
            info: WorkloadInfo {
                name: "arrayswap",
                model: Model::UndoLl,
                suite: Suite::Janus,
                default_ops: 1000,
                default_threads: 1,
                size: "10k 8-byte items per thread",
                source: "REFERENCE.md, PMWeaver artifact: array swap 10k items, 1000 swaps",
                description: "swap two random items under a hand-rolled undo log",
            },
        }
    }

    fn item(p: &Params, t: u16, k: u64) -> u64 {
        mix64(p.seed ^ mix64(u64::from(t) << 40 | k))
    }
}

impl Default for ArraySwap {
    fn default() -> Self {
        ArraySwap::new()
    }
}

impl Kernel for ArraySwap {
    type Op = SwapOp;
    type State = Vec<u64>;

    fn info(&self) -> &WorkloadInfo {
        &self.info
    }

    fn gen_op(&self, _p: &Params, _t: u16, _i: u64, rng: &mut Rng) -> SwapOp {
        two_indices(rng, ITEMS)
    }

    fn request(&self, op: &SwapOp, words: &mut Vec<u64>) {
        words.extend([op.i, op.j]);
    }

    fn setup(&self, tx: &mut Tx, p: &Params, t: u16) {
        let a = tx.alloc_static(8 * ITEMS);
        for k in 0..ITEMS {
            tx.write(a + 8 * k, Self::item(p, t, k));
        }
        tx.write(root_word(t, 1), a);
    }

    fn exec(&self, tx: &mut Tx, _p: &Params, t: u16, op: &SwapOp) {
        let a = tx.read(root_word(t, 1));
        let (ai, aj) = (a + 8 * op.i, a + 8 * op.j);
        let vi = tx.read(ai);
        let vj = tx.read(aj);
        tx.add(ai, 8);
        tx.add(aj, 8);
        tx.write(ai, vj);
        tx.write(aj, vi);
    }

    fn initial(&self, p: &Params, t: u16) -> Vec<u64> {
        (0..ITEMS).map(|k| Self::item(p, t, k)).collect()
    }

    fn apply(&self, s: &mut Vec<u64>, _p: &Params, _t: u16, op: &SwapOp) {
        s.swap(op.i as usize, op.j as usize);
    }

    fn extract(&self, tx: &mut Tx, _p: &Params, t: u16) -> Result<Vec<u64>, String> {
        let a = tx.read(root_word(t, 1));
        Ok((0..ITEMS).map(|k| tx.read(a + 8 * k)).collect())
    }
}
