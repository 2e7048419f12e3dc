//! Linked list (Janus / PMWeaver low-level set; PMWeaver's `listInsertHead` example).
//!
//! List object `[head]`, node `[value, next]`. Operations: insert a value at the head
//! (60%: the node is written and persisted, then published by one persisted 8-byte store of
//! `head`), update the value of the k-th node in place (30%: one persisted 8-byte store) and
//! remove the head node (10%: `head` advanced and persisted, then the node freed). Every
//! operation has a single 8-byte commit store, so persist barriers alone make it atomic.

use crate::alloc::check_heap;
use crate::ds::StepLimit;
use crate::kernel::{Kernel, Params, Suite, WorkloadInfo};
use crate::layout::root_word;
use crate::models::{Model, Tx};
use crate::rng::{mix64, Rng};

const INITIAL: u64 = 16;
const NODE_BYTES: u64 = 16;

/// One list operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListOp {
    /// Insert a value at the head.
    InsertHead(u64),
    /// Overwrite the value of node `k` (counted from the head, clamped to the last node).
    Update {
        /// Position.
        k: u64,
        /// New value.
        v: u64,
    },
    /// Remove the head node, if any.
    RemoveHead,
}

/// The linked-list workload.
pub struct LinkedList {
    info: WorkloadInfo,
}

impl LinkedList {
    /// Janus's linked list.
    pub fn new() -> LinkedList {
        LinkedList {
            info: WorkloadInfo {
                name: "linkedlist",
                model: Model::Barrier,
                suite: Suite::Janus,
                default_ops: 10_000,
                default_threads: 1,
                size: "16 nodes initially; 60% insert-head, 30% update, 10% remove-head",
                source: "Janus/PMWeaver low-level set (Table II); sizes not given: chosen",
                description: "singly linked list with persist barriers, 8-byte commit stores",
            },
        }
    }
}

impl Default for LinkedList {
    fn default() -> Self {
        LinkedList::new()
    }
}

impl Kernel for LinkedList {
    type Op = ListOp;
    type State = Vec<u64>;

    fn info(&self) -> &WorkloadInfo {
        &self.info
    }

    fn gen_op(&self, _p: &Params, _t: u16, _i: u64, rng: &mut Rng) -> ListOp {
        match rng.below(10) {
            0..=5 => ListOp::InsertHead(rng.next_u64()),
            6..=8 => ListOp::Update {
                k: rng.below(32),
                v: rng.next_u64(),
            },
            _ => ListOp::RemoveHead,
        }
    }

    fn request(&self, op: &ListOp, words: &mut Vec<u64>) {
        match *op {
            ListOp::InsertHead(v) => words.extend([1, v]),
            ListOp::Update { k, v } => words.extend([2, k, v]),
            ListOp::RemoveHead => words.push(3),
        }
    }

    fn setup(&self, tx: &mut Tx, p: &Params, t: u16) {
        let l = tx.alloc(8);
        let mut head = 0;
        for i in (0..INITIAL).rev() {
            let n = tx.alloc(NODE_BYTES);
            tx.write(n, mix64(p.seed ^ (u64::from(t) << 32 | i)));
            tx.write(n + 8, head);
            head = n;
        }
        tx.write(l, head);
        tx.write(root_word(t, 1), l);
    }

    fn exec(&self, tx: &mut Tx, _p: &Params, t: u16, op: &ListOp) {
        let l = tx.read(root_word(t, 1));
        match *op {
            ListOp::InsertHead(v) => {
                let n = tx.alloc(NODE_BYTES);
                let head = tx.read(l);
                tx.write(n, v);
                tx.write(n + 8, head);
                tx.persist(n, NODE_BYTES);
                tx.write(l, n);
                tx.persist(l, 8);
            }
            ListOp::Update { k, v } => {
                let mut x = tx.read(l);
                if x == 0 {
                    return;
                }
                for _ in 0..k {
                    let nx = tx.read(x + 8);
                    tx.compute(2);
                    if nx == 0 {
                        break;
                    }
                    x = nx;
                }
                tx.write(x, v);
                tx.persist(x, 8);
            }
            ListOp::RemoveHead => {
                let head = tx.read(l);
                if head == 0 {
                    return;
                }
                let next = tx.read(head + 8);
                tx.write(l, next);
                tx.persist(l, 8);
                tx.free(head);
            }
        }
    }

    fn initial(&self, p: &Params, t: u16) -> Vec<u64> {
        (0..INITIAL)
            .map(|i| mix64(p.seed ^ (u64::from(t) << 32 | i)))
            .collect()
    }

    fn apply(&self, s: &mut Vec<u64>, _p: &Params, _t: u16, op: &ListOp) {
        match *op {
            ListOp::InsertHead(v) => s.insert(0, v),
            ListOp::Update { k, v } => {
                if !s.is_empty() {
                    let i = (k as usize).min(s.len() - 1);
                    s[i] = v;
                }
            }
            ListOp::RemoveHead => {
                if !s.is_empty() {
                    s.remove(0);
                }
            }
        }
    }

    fn extract(&self, tx: &mut Tx, _p: &Params, t: u16) -> Result<Vec<u64>, String> {
        let l = tx.read(root_word(t, 1));
        let mut reach = vec![l];
        let mut out = Vec::new();
        let mut limit = StepLimit::nodes(tx.heap_ref().resident_bytes(), NODE_BYTES, "linked list");
        let mut x = tx.read(l);
        while x != 0 {
            limit.step()?;
            reach.push(x);
            out.push(tx.read(x));
            x = tx.read(x + 8);
        }
        check_heap(tx, t, &reach)?;
        Ok(out)
    }
}
