//! Chain queue: a linked FIFO with a dummy head node (Michael-Scott layout).
//!
//! Queue object `[head, tail]`, node `[value, next]`; `head` points to the dummy, whose
//! successor holds the oldest value. Half the operations enqueue a value, half dequeue one
//! (a dequeue of an empty queue does nothing). The queue starts with 64 values.
//!
//! * `queue` (Janus, [`Model::Barrier`]): enqueue persists the new node, then links it
//!   (`tail.next`, persisted: the commit point), then advances `tail` (persisted); dequeue
//!   advances `head` (persisted: the commit point) and frees the old dummy. Recovery walks a
//!   lagging `tail` forward.
//! * `queue-hw` (LALEA's ChainQueue, [`Model::HwTx`]): the same steps inside a hardware
//!   transaction, no barriers.

use std::collections::VecDeque;

use crate::alloc::check_heap;
use crate::ds::StepLimit;
use crate::kernel::{Kernel, Params, Suite, WorkloadInfo};
use crate::layout::root_word;
use crate::models::{Model, Tx};
use crate::rng::{mix64, Rng};

const INITIAL: u64 = 64;
const NODE_BYTES: u64 = 16;

/// One queue operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueOp {
    /// Append a value.
    Enqueue(u64),
    /// Remove the oldest value, if any.
    Dequeue,
}

/// The queue workload.
pub struct Queue {
    info: WorkloadInfo,
}

impl Queue {
    /// Janus's low-level queue.
    pub fn janus() -> Queue {
        Queue {
            info: WorkloadInfo {
                name: "queue",
                model: Model::Barrier,
                suite: Suite::Janus,
                default_ops: 10_000,
                default_threads: 1,
                size: "64 values initially; 50% enqueue, 50% dequeue",
                source: "Janus/PMWeaver low-level set (Table II); sizes not given: chosen",
                description: "linked FIFO with persist barriers: node, link (commit), tail",
            },
        }
    }

    /// LALEA's ChainQueue.
    pub fn lalea() -> Queue {
        Queue {
            info: WorkloadInfo {
                name: "queue-hw",
                model: Model::HwTx,
                suite: Suite::Lalea,
                default_ops: 40_000,
                default_threads: 4,
                size: "64 values initially per thread; 50% enqueue, 50% dequeue",
                source: "LALEA Sec. IV-A (ChainQueue, 4 cores); sizes not given: chosen",
                description: "linked FIFO in hardware transactions",
            },
        }
    }

    fn initial_value(p: &Params, t: u16, i: u64) -> u64 {
        mix64(p.seed ^ mix64(u64::from(t) << 32 | i))
    }
}

impl Kernel for Queue {
    type Op = QueueOp;
    type State = VecDeque<u64>;

    fn info(&self) -> &WorkloadInfo {
        &self.info
    }

    fn gen_op(&self, _p: &Params, _t: u16, _i: u64, rng: &mut Rng) -> QueueOp {
        if rng.percent(50) {
            QueueOp::Enqueue(rng.next_u64())
        } else {
            QueueOp::Dequeue
        }
    }

    fn request(&self, op: &QueueOp, words: &mut Vec<u64>) {
        match *op {
            QueueOp::Enqueue(v) => words.extend([1, v]),
            QueueOp::Dequeue => words.push(2),
        }
    }

    fn setup(&self, tx: &mut Tx, p: &Params, t: u16) {
        let q = tx.alloc(16);
        let dummy = tx.alloc(NODE_BYTES);
        tx.write(dummy, 0);
        tx.write(dummy + 8, 0);
        let mut last = dummy;
        for i in 0..INITIAL {
            let n = tx.alloc(NODE_BYTES);
            tx.write(n, Self::initial_value(p, t, i));
            tx.write(n + 8, 0);
            tx.write(last + 8, n);
            last = n;
        }
        tx.write(q, dummy);
        tx.write(q + 8, last);
        tx.write(root_word(t, 1), q);
    }

    fn exec(&self, tx: &mut Tx, _p: &Params, t: u16, op: &QueueOp) {
        let q = tx.read(root_word(t, 1));
        let barrier = tx.model() == Model::Barrier;
        match *op {
            QueueOp::Enqueue(v) => {
                let n = tx.alloc(NODE_BYTES);
                tx.write(n, v);
                tx.write(n + 8, 0);
                if barrier {
                    tx.persist(n, NODE_BYTES);
                }
                let tail = tx.read(q + 8);
                tx.add(tail + 8, 8);
                tx.write(tail + 8, n);
                if barrier {
                    tx.persist(tail + 8, 8);
                }
                tx.add(q + 8, 8);
                tx.write(q + 8, n);
                if barrier {
                    tx.persist(q + 8, 8);
                }
            }
            QueueOp::Dequeue => {
                let dummy = tx.read(q);
                let first = tx.read(dummy + 8);
                if first == 0 {
                    return;
                }
                let _value = tx.read(first);
                tx.compute(4);
                tx.add(q, 8);
                tx.write(q, first);
                if barrier {
                    tx.persist(q, 8);
                }
                tx.free(dummy);
            }
        }
    }

    fn initial(&self, p: &Params, t: u16) -> VecDeque<u64> {
        (0..INITIAL).map(|i| Self::initial_value(p, t, i)).collect()
    }

    fn apply(&self, s: &mut VecDeque<u64>, _p: &Params, _t: u16, op: &QueueOp) {
        match *op {
            QueueOp::Enqueue(v) => s.push_back(v),
            QueueOp::Dequeue => {
                s.pop_front();
            }
        }
    }

    fn recover(&self, tx: &mut Tx, _p: &Params, t: u16) -> Result<(), String> {
        if tx.model() != Model::Barrier {
            return Ok(());
        }
        let q = tx.read(root_word(t, 1));
        let tail = tx.read(q + 8);
        let mut last = tail;
        let mut limit = StepLimit::nodes(tx.heap_ref().resident_bytes(), NODE_BYTES, "queue tail");
        loop {
            let nx = tx.read(last + 8);
            if nx == 0 {
                break;
            }
            limit.step()?;
            last = nx;
        }
        if last != tail {
            tx.write(q + 8, last);
            tx.persist(q + 8, 8);
        }
        Ok(())
    }

    fn extract(&self, tx: &mut Tx, _p: &Params, t: u16) -> Result<VecDeque<u64>, String> {
        let q = tx.read(root_word(t, 1));
        let dummy = tx.read(q);
        let mut reach = vec![q, dummy];
        let mut out = VecDeque::new();
        let mut limit = StepLimit::nodes(tx.heap_ref().resident_bytes(), NODE_BYTES, "queue");
        let mut last = dummy;
        let mut x = tx.read(dummy + 8);
        while x != 0 {
            limit.step()?;
            reach.push(x);
            out.push_back(tx.read(x));
            last = x;
            x = tx.read(x + 8);
        }
        let tail = tx.read(q + 8);
        if tail != last {
            return Err(format!(
                "queue: tail {tail:#x} is not the last node {last:#x}"
            ));
        }
        check_heap(tx, t, &reach)?;
        Ok(out)
    }
}
