//! Shared log: one persistent append-only log that every thread writes, behind a lock (a
//! write-ahead log shared by a server's worker threads).
//!
//! The papers' workloads give each thread its own partition, so no thread ever reads a line
//! another wrote, and the persist orderings' inter-thread dependencies (PPO Sec. IV-B: a thread
//! that accesses a line another thread wrote last persists after that thread's earlier
//! persists) are never exercised by them. Here every operation reads the tail another thread
//! wrote last:
//!
//! 1. take the lock (a DRAM word), with the trace's happens-before edge ([`pmtrace::Op::Await`])
//!    on the previous operation's thread, as far as its release;
//! 2. read the tail `n` from the log header;
//! 3. write record `n` (sequence number, thread, operation index, payload, check word) and
//!    persist it (`clwb`, `sfence`);
//! 4. write the tail `n + 1` and persist it (the commit point); release the lock.
//!
//! Operations take the lock in round-robin order over the threads, as the generator runs them.
//! Recovery reads the tail; the oracle checks that records `0..tail` are exactly the first
//! `tail` operations of that order (so the durable log is a prefix: a later operation's record
//! or tail never becomes durable without an earlier one's) and that every operation whose
//! commit point completed is within it. Under x86 ordering a fence waits for its persists, so
//! this holds trivially; under a buffered ordering (`epoch`, `broi`) it holds only if the
//! model orders a thread's persists after those of the thread whose tail it read.
//!
//! The log lives at the start of thread 0's heap (`layout::heap_start(0)`); thread 0 sets up
//! the header and every other thread's first operation awaits that setup.

use crate::heap::PmHeap;
use crate::image::CrashImage;
use crate::kernel::{
    op_rng, GenOptions, Generated, HeapSummary, Params, Suite, Workload, WorkloadInfo,
};
use crate::layout::{heap_start, request_buffer, scratch};
use crate::models::Model;
use crate::oracle::CommitLog;
use crate::rng::mix64;
use crate::sink::EventSink;

/// Header word 1 once the header is persistent.
const MAGIC: u64 = 0x5348_4152_4544_4c47; // "SHAREDLG"

/// Bytes of one record (one line).
const RECORD_BYTES: u64 = 64;

/// The shared-log workload.
pub struct SharedLog {
    info: WorkloadInfo,
}

impl Default for SharedLog {
    fn default() -> Self {
        SharedLog::new()
    }
}

/// One operation in lock order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Append {
    thread: u16,
    /// The operation's index among its thread's.
    index: u64,
    payload: u64,
}

impl Append {
    /// The record's five words, for log position `seq - 1`.
    fn words(&self, seq: u64) -> [u64; 5] {
        let (t, i, v) = (u64::from(self.thread), self.index, self.payload);
        [seq, t, i, v, mix64(seq ^ mix64(t ^ mix64(i ^ mix64(v))))]
    }
}

fn header() -> u64 {
    heap_start(0)
}

/// The lock word (volatile: in DRAM, thread 0's scratch area).
fn lock() -> u64 {
    scratch(0)
}

fn record(n: u64) -> u64 {
    header() + RECORD_BYTES + n * RECORD_BYTES
}

/// Every operation of a run with `p`, in lock order (round robin over the threads, as the
/// generator runs them), each thread's payloads drawn from its own stream.
fn lock_order(p: &Params) -> Vec<Append> {
    let counts: Vec<u64> = (0..p.threads).map(|t| p.ops_of(t)).collect();
    let mut rngs: Vec<_> = (0..p.threads).map(|t| op_rng(p.seed, t)).collect();
    let max = counts.iter().copied().max().unwrap_or(0);
    let mut out = Vec::with_capacity(p.ops as usize);
    for index in 0..max {
        for t in 0..p.threads {
            if index < counts[t as usize] {
                out.push(Append {
                    thread: t,
                    index,
                    payload: rngs[t as usize].next_u64(),
                });
            }
        }
    }
    out
}

impl SharedLog {
    /// The workload with its registry entry.
    pub fn new() -> SharedLog {
        SharedLog {
            info: WorkloadInfo {
                name: "shared-log",
                model: Model::Barrier,
                suite: Suite::Check,
                default_ops: 4000,
                default_threads: 4,
                size: "one log of ops x 64 B records, shared by all threads",
                source: "pmlab's own: threads sharing persistent data (PPO Sec. IV-B dependencies)",
                description: "append-only log behind a lock: record, then tail (commit), each \
                              persisted; every operation reads the tail another thread wrote",
            },
        }
    }
}

impl Workload for SharedLog {
    fn info(&self) -> &WorkloadInfo {
        &self.info
    }

    fn check_params(&self, p: &Params) -> Result<(), String> {
        p.validate()?;
        if p.value_bytes != 8 {
            return Err(format!(
                "shared-log stores 8-byte values: value bytes {} apply to the hash maps only",
                p.value_bytes
            ));
        }
        if p.remote_threads > 0 {
            return Err(
                "remote clients each run on their own copy of PM and share nothing: shared-log \
                 takes local threads only"
                    .into(),
            );
        }
        if p.janus_hints {
            return Err("shared-log has no Janus hints".into());
        }
        Ok(())
    }

    fn generate(
        &self,
        p: &Params,
        sink: Box<dyn EventSink>,
        opts: GenOptions,
    ) -> Result<Generated, String> {
        self.check_params(p)?;
        if opts.fault.is_some() {
            return Err("shared-log has no programming-library faults to switch on".into());
        }
        let threads = p.threads;
        let mut heap = PmHeap::new(threads, sink);
        // Setup (thread 0): an empty log.
        heap.set_thread(0);
        heap.store_u64(header(), 0);
        heap.store_u64(header() + 8, MAGIC);
        heap.clwb(header());
        heap.sfence();
        // Per thread: where each unit (setup, then operations) ends, and where it is durable
        // (the tail's fence; the release comes after it).
        let mut commits: Vec<Vec<u64>> = (0..threads).map(|t| vec![heap.events(t)]).collect();
        let mut durable = commits.clone();
        let mut ops = vec![0u64; threads as usize];
        // The lock's last holder and how far it had got when it released the lock.
        let mut holder = (0u16, heap.events(0));
        for a in lock_order(p) {
            if heap.stopped() {
                break;
            }
            let t = a.thread;
            heap.set_thread(t);
            // The request arrives in the thread's DRAM buffer; then the lock (a DRAM word; the
            // trace's edge stands for the hand-off, which the store does not enforce).
            heap.compute(12);
            heap.store_u64(request_buffer(t), a.payload);
            if holder.0 != t {
                heap.await_thread(holder.0, holder.1);
            }
            heap.store_u64(lock(), u64::from(t) + 1);
            heap.compute(20);
            let n = heap.load_u64(header());
            let mut bytes = [0u8; RECORD_BYTES as usize];
            for (i, w) in a.words(n + 1).iter().enumerate() {
                bytes[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
            }
            heap.store(record(n), &bytes[..40]);
            heap.clwb(record(n));
            heap.sfence();
            heap.store_u64(header(), n + 1);
            heap.clwb(header());
            heap.sfence();
            durable[t as usize].push(heap.events(t));
            heap.store_u64(lock(), 0);
            commits[t as usize].push(heap.events(t));
            ops[t as usize] += 1;
            holder = (t, heap.events(t));
        }
        let summary = HeapSummary::of(&heap);
        let commits = opts.record_commits.then_some(CommitLog {
            per_thread: commits,
            durable,
        });
        Ok(summary.into_generated(ops, commits, heap.finish()?))
    }

    fn oracle(
        &self,
        p: &Params,
        commits: &CommitLog,
        image: &CrashImage,
        completed: &[u64],
    ) -> Result<(), String> {
        self.check_params(p)?;
        commits.check_threads("shared-log", p.threads as usize, completed)?;
        // Units each thread must have durable: its setup (thread 0's header; the others have
        // none) and then its operations in order.
        let required: Vec<usize> = (0..p.threads)
            .map(|t| commits.required(t, completed[t as usize]))
            .collect();
        if image.read_u64(header() + 8) != MAGIC {
            return match required.iter().position(|&n| n > 1) {
                None if required[0] == 0 => Ok(()),
                None => Err(
                    "shared-log: the log header is not durable, but thread 0's setup of it \
                     completed"
                        .into(),
                ),
                Some(t) => Err(format!(
                    "shared-log: the log header is not durable, but thread {t} completed an \
                     append"
                )),
            };
        }
        let order = lock_order(p);
        let tail = image.read_u64(header());
        if tail > order.len() as u64 {
            return Err(format!(
                "shared-log: the tail says {tail} records, but the run appends {}",
                order.len()
            ));
        }
        for (n, a) in order.iter().enumerate().take(tail as usize) {
            let want = a.words(n as u64 + 1);
            let got: Vec<u64> = (0..5)
                .map(|i| image.read_u64(record(n as u64) + i * 8))
                .collect();
            if got != want {
                return Err(format!(
                    "shared-log: record {n} of {tail} is not operation {} of thread {} (the \
                     tail is durable before the record it counts: read {got:x?})",
                    a.index, a.thread
                ));
            }
        }
        // Every operation whose commit point is durable is in the log. (Operations past the
        // tail may have durable records: the tail is the commit.)
        for (pos, a) in order.iter().enumerate() {
            let t = a.thread as usize;
            if (a.index as usize) + 1 < required[t] && pos as u64 >= tail {
                return Err(format!(
                    "shared-log: thread {t}'s operation {} completed (record {pos}: a tail \
                     of at least {}), but the durable tail is {tail}",
                    a.index,
                    pos + 1
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist_model::{CutPolicy, PersistModel};
    use crate::sink::VecSink;
    use pmtrace::Op;

    fn params(ops: u64, threads: u16) -> Params {
        Params {
            ops,
            threads,
            ..SharedLog::new().info().default_params(5)
        }
    }

    /// The run's events, its commit log, and its durable image and completed counts at the end.
    fn run(p: &Params) -> (Vec<pmtrace::TraceEvent>, CommitLog, CrashImage, Vec<u64>) {
        let opts = GenOptions {
            record_commits: true,
            fault: None,
        };
        let g = SharedLog::new()
            .generate(p, Box::<VecSink>::default(), opts)
            .unwrap();
        let c = g.commits.clone().unwrap();
        let ev = g.into_events();
        let mut m = PersistModel::new(p.threads, false);
        for e in &ev {
            m.apply(e);
        }
        let img = m.image(&mut CutPolicy::Durable);
        (ev, c, img, m.completed().to_vec())
    }

    #[test]
    fn threads_take_the_lock_in_turn_and_await_its_last_holder() {
        let p = params(12, 3);
        let (ev, ..) = run(&p);
        let awaits: Vec<(u16, u16, u64)> = ev
            .iter()
            .filter_map(|e| e.awaited().map(|(s, n)| (e.thread, s, n)))
            .collect();
        // Every operation but thread 0's first awaits the previous one's thread: 11 edges.
        assert_eq!(awaits.len(), 11, "{awaits:?}");
        let mut counts = [0u64; 3];
        let mut prev = 0u16;
        for e in &ev {
            counts[e.thread as usize] += 1;
            if let Some((s, n)) = e.awaited() {
                assert_eq!(s, prev, "the edge names the last holder");
                // The holder had emitted exactly that many events when it released the lock.
                assert!(counts[s as usize] >= n);
                assert_eq!(e.thread, (s + 1) % 3);
            }
            if e.op == Op::Store && e.addr == lock() && e.value_bytes() == [0; 8] {
                prev = e.thread;
            }
        }
    }

    #[test]
    fn a_complete_run_holds_every_record_in_lock_order() {
        let p = params(40, 4);
        let (_, c, img, done) = run(&p);
        assert_eq!(img.read_u64(header()), 40);
        SharedLog::new().oracle(&p, &c, &img, &done).unwrap();
    }

    #[test]
    fn a_tail_ahead_of_its_records_or_behind_a_completed_operation_is_rejected() {
        let p = params(40, 4);
        let (_, c, img, done) = run(&p);
        let w = SharedLog::new();
        // A hole: record 17 not durable, the tail past it (what a persist order that let a
        // later holder's tail become durable before an earlier holder's record would leave).
        let mut hole = img.clone();
        for i in 0..5 {
            hole.write_u64(record(17) + i * 8, 0);
        }
        let e = w.oracle(&p, &c, &hole, &done).unwrap_err();
        assert!(e.contains("record 17 of 40"), "{e}");
        // The tail behind operations whose commit completed.
        let mut short = img.clone();
        short.write_u64(header(), 30);
        let e = w.oracle(&p, &c, &short, &done).unwrap_err();
        assert!(
            e.contains("completed (record 30: a tail of at least 31)")
                && e.contains("durable tail is 30"),
            "{e}"
        );
        // With the completed counts cut back to before those operations, the short log passes.
        let early: Vec<u64> = (0..4u16)
            .map(|t| {
                let ends = &c.durable[t as usize];
                // The last operation of the thread within the first 30 of the lock order.
                let ops_in = lock_order(&p)[..30]
                    .iter()
                    .filter(|a| a.thread == t)
                    .count();
                ends[ops_in]
            })
            .collect();
        w.oracle(&p, &c, &short, &early).unwrap();
        // Remote clients share nothing: refused in one line.
        let mut remote = p.clone();
        remote.remote_threads = 1;
        assert!(w.check_params(&remote).unwrap_err().contains("remote"));
    }
}
