//! Workloads: what a workload is ([`Kernel`]), how it is run ([`Workload::generate`]) and the
//! object-safe face the registry hands out ([`Workload`]).
//!
//! A workload is a data structure or transaction kernel plus an operation stream. Each thread
//! owns a partition (its own instance, log and heap) and performs its own stream of
//! operations, drawn from its own random sub-stream of the seed; the generator interleaves the
//! threads round-robin, one operation at a time. Before its operations, each thread runs a
//! *setup* that builds its initial state with plain stores, persists it, and then persists
//! the root magic (the pool's "valid" flag, written last).
//!
//! For crash testing the generator can record, per thread, the thread's event count at the
//! end of its setup and of each operation (the operation's final fence or `TxEnd` is its
//! last event): a [`CommitLog`]. The oracle ([`crate::oracle`]) replays the operation stream
//! on a simple in-memory model ([`Kernel::State`]) to know what must be in a crash image.

use std::fmt::Debug;

use pmtrace::{flags, TraceHeader};

use crate::heap::PmHeap;
use crate::image::CrashImage;
use crate::layout;
use crate::models::{Fault, Model, Tx};
use crate::oracle::{self, CommitLog};
use crate::rng::Rng;
use crate::sink::{EventSink, VecSink};

/// The knobs of a workload run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// Operations in total, split evenly over the threads (load phases come on top).
    pub ops: u64,
    /// Threads (1..=64), each with its own partition.
    pub threads: u16,
    /// Seed: the whole trace is a function of it.
    pub seed: u64,
    /// The last `remote_threads` threads are clients of a remote PM server: their data lives
    /// in their own (volatile) memory and every persist goes over RDMA (`RdmaPwrite`), see
    /// [`PmHeap::set_remote`](crate::heap::PmHeap::set_remote). 0: all threads are local.
    pub remote_threads: u16,
    /// Annotate each operation with Janus-style software hints (`Op::Hint`) for its
    /// write-backs, see [`PmHeap::end_hint_scope`](crate::heap::PmHeap::end_hint_scope). Only
    /// for timing runs: crash recording refuses it (hints shift the events of an operation
    /// after its commit points were taken).
    pub janus_hints: bool,
    /// Bytes of each value a map stores (8..=4096, a multiple of 8; PPO Fig. 13's element
    /// size). Only workloads whose kernel says [`Kernel::sized_values`] take other than 8.
    pub value_bytes: u32,
}

/// Largest [`Params::value_bytes`] (PPO Fig. 13 sweeps 128 B..4 KB).
pub const MAX_VALUE_BYTES: u32 = 4096;

impl Params {
    /// Operations thread `t` performs when `ops` are split over `threads` (the first
    /// `ops % threads` threads get one more).
    pub fn ops_of(&self, t: u16) -> u64 {
        let n = u64::from(self.threads);
        self.ops / n + u64::from(u64::from(t) < self.ops % n)
    }

    /// Checks the knobs.
    pub fn validate(&self) -> Result<(), String> {
        if self.threads == 0 || self.threads > crate::heap::MAX_THREADS {
            return Err(format!(
                "threads must be 1..={}, got {}",
                crate::heap::MAX_THREADS,
                self.threads
            ));
        }
        if self.remote_threads > self.threads {
            return Err(format!(
                "remote_threads {} exceeds threads {}",
                self.remote_threads, self.threads
            ));
        }
        if self.ops > 1 << 40 {
            return Err(format!("ops {} is too large", self.ops));
        }
        if self.value_bytes < 8
            || self.value_bytes > MAX_VALUE_BYTES
            || !self.value_bytes.is_multiple_of(8)
        {
            return Err(format!(
                "value bytes must be a multiple of 8 in 8..={MAX_VALUE_BYTES}, got {}",
                self.value_bytes
            ));
        }
        Ok(())
    }
}

/// The benchmark suite a workload reproduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suite {
    /// PMDK libpmemobj map examples (as in PMWeaver's evaluation).
    Pmdk,
    /// PPO/BROI micro-benchmarks (PPO Table IV).
    Ppo,
    /// WHISPER applications used by PPO (ycsb, memcached, tpcc).
    Whisper,
    /// Janus low-level workloads (as in PMWeaver's evaluation).
    Janus,
    /// LALEA/BLOM hardware-transaction workloads.
    Lalea,
    /// pmlab's own workloads, for checks the papers' workloads cannot make (threads that share
    /// persistent data); not part of any reproduction.
    Check,
}

impl Suite {
    /// Display name.
    pub fn name(self) -> &'static str {
        match self {
            Suite::Pmdk => "PMDK",
            Suite::Ppo => "PPO",
            Suite::Whisper => "WHISPER",
            Suite::Janus => "Janus",
            Suite::Lalea => "LALEA",
            Suite::Check => "pmlab",
        }
    }
}

/// What the registry says about a workload.
#[derive(Clone, Debug)]
pub struct WorkloadInfo {
    /// Unique name (`pmlab trace gen --workload NAME`).
    pub name: &'static str,
    /// Programming model.
    pub model: Model,
    /// Suite it reproduces.
    pub suite: Suite,
    /// Default total operation count.
    pub default_ops: u64,
    /// Default thread count.
    pub default_threads: u16,
    /// The structure's size (keys, elements, tables) and how it scales with the knobs.
    pub size: &'static str,
    /// Where the defaults come from.
    pub source: &'static str,
    /// One line: what an operation does.
    pub description: &'static str,
}

impl WorkloadInfo {
    /// The default knobs with `seed`.
    pub fn default_params(&self, seed: u64) -> Params {
        Params {
            ops: self.default_ops,
            threads: self.default_threads,
            seed,
            remote_threads: 0,
            janus_hints: false,
            value_bytes: 8,
        }
    }
}

/// Options of one generation run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GenOptions {
    /// Record the [`CommitLog`] (for crash testing).
    pub record_commits: bool,
    /// Switch on a deliberate bug (tests of the crash tests).
    pub fault: Option<Fault>,
}

/// The outcome of a generation run.
pub struct Generated {
    /// Events emitted.
    pub events: u64,
    /// Events per thread.
    pub events_per_thread: Vec<u64>,
    /// Operations per thread (setup not counted).
    pub ops_per_thread: Vec<u64>,
    /// Commit indices, when asked for.
    pub commits: Option<CommitLog>,
    /// Distinct call sites (PCs) seen.
    pub pc_sites: usize,
    /// Call-site pairs that hashed to one PC (should be 0).
    pub pc_collisions: usize,
    /// Bytes of simulated memory at the end.
    pub resident_bytes: usize,
    /// The sink, finished; downcast with `into_any()` to get it back.
    pub sink: Box<dyn EventSink>,
}

/// What a generator's heap counted, taken before the heap is finished.
pub(crate) struct HeapSummary {
    events_per_thread: Vec<u64>,
    pc_sites: usize,
    pc_collisions: usize,
    resident_bytes: usize,
}

impl HeapSummary {
    /// `heap`'s counts now.
    pub(crate) fn of(heap: &PmHeap) -> HeapSummary {
        HeapSummary {
            events_per_thread: heap.events_per_thread().to_vec(),
            pc_sites: heap.pcs().site_count(),
            pc_collisions: heap.pcs().collisions().len(),
            resident_bytes: heap.resident_bytes(),
        }
    }

    /// The run's outcome, with its operations per thread, commit log and finished sink.
    pub(crate) fn into_generated(
        self,
        ops_per_thread: Vec<u64>,
        commits: Option<CommitLog>,
        sink: Box<dyn EventSink>,
    ) -> Generated {
        Generated {
            events: self.events_per_thread.iter().sum(),
            events_per_thread: self.events_per_thread,
            ops_per_thread,
            commits,
            pc_sites: self.pc_sites,
            pc_collisions: self.pc_collisions,
            resident_bytes: self.resident_bytes,
            sink,
        }
    }
}

impl Generated {
    /// The events a [`VecSink`] collected.
    ///
    /// # Panics
    /// If the run's sink was not a `VecSink` (a programming error).
    pub fn into_events(self) -> Vec<pmtrace::TraceEvent> {
        self.sink
            .into_any()
            .downcast::<VecSink>()
            .expect("generated into a VecSink")
            .events
    }
}

/// A workload kernel: setup, operations, and the model of what they do.
pub trait Kernel: Send + Sync + 'static {
    /// One operation's inputs.
    type Op: Clone + Debug + Send;
    /// The logical state of one thread's partition (what the oracle compares).
    type State: Clone + PartialEq + Debug;

    /// Name, model, defaults.
    fn info(&self) -> &WorkloadInfo;

    /// Operations thread `t` performs, load phase included.
    fn thread_ops(&self, p: &Params, t: u16) -> u64 {
        p.ops_of(t)
    }

    /// Operation `i` of thread `t`, drawn from the thread's random stream.
    fn gen_op(&self, p: &Params, t: u16, i: u64, rng: &mut Rng) -> Self::Op;

    /// True if the kernel stores values of [`Params::value_bytes`] bytes; kernels that store
    /// 8-byte words refuse any other size.
    fn sized_values(&self) -> bool {
        false
    }

    /// The words of the request that carries `op` (written to the thread's DRAM request
    /// buffer before the operation runs, as a server receives its inputs).
    fn request(&self, _op: &Self::Op, _words: &mut Vec<u64>) {}

    /// Builds thread `t`'s initial state (setup mode: plain stores, flushed by the driver,
    /// which then sets the root magic). Root fields go to [`layout::root_word`] words 1..8.
    fn setup(&self, tx: &mut Tx, p: &Params, t: u16);

    /// Performs `op` on thread `t`'s partition. The driver wraps it in `tx.begin()` /
    /// `tx.commit()`; barrier-model kernels place their own persist barriers.
    fn exec(&self, tx: &mut Tx, p: &Params, t: u16, op: &Self::Op);

    /// The logical state right after setup.
    fn initial(&self, p: &Params, t: u16) -> Self::State;

    /// Applies `op` to the logical state.
    fn apply(&self, s: &mut Self::State, p: &Params, t: u16, op: &Self::Op);

    /// Structure-specific recovery after the model's log recovery (e.g. fixing a queue's
    /// lagging tail pointer). Default: nothing.
    fn recover(&self, _tx: &mut Tx, _p: &Params, _t: u16) -> Result<(), String> {
        Ok(())
    }

    /// Reads thread `t`'s partition back (after recovery), checking the structure's
    /// invariants and the allocator's; returns its logical state.
    fn extract(&self, tx: &mut Tx, p: &Params, t: u16) -> Result<Self::State, String>;
}

/// A workload as the registry hands it out.
pub trait Workload: Send + Sync {
    /// Name, model, defaults.
    fn info(&self) -> &WorkloadInfo;

    /// The `.pmt` header of a run with `p`: workload name, seed, parameters, store values.
    fn header(&self, p: &Params) -> TraceHeader {
        let i = self.info();
        TraceHeader::new(i.name, p.threads)
            .with_seed(p.seed)
            .with_params(format!(
                "ops={} threads={} model={} suite={}{}{}{}",
                p.ops,
                p.threads,
                i.model,
                i.suite.name(),
                if p.value_bytes == 8 {
                    String::new()
                } else {
                    format!(" value_bytes={}", p.value_bytes)
                },
                if p.remote_threads == 0 {
                    String::new()
                } else {
                    format!(" remote_threads={}", p.remote_threads)
                },
                if p.janus_hints { " janus_hints=1" } else { "" }
            ))
            .with_flags(flags::STORE_VALUES)
    }

    /// Checks knobs `p` for this workload (ranges, and value sizes only where the workload
    /// takes them).
    fn check_params(&self, p: &Params) -> Result<(), String>;

    /// Runs the workload, sending its events to `sink`.
    fn generate(
        &self,
        p: &Params,
        sink: Box<dyn EventSink>,
        opts: GenOptions,
    ) -> Result<Generated, String>;

    /// The crash oracle: recovers `image` with the model's recovery and checks, per thread,
    /// the structure's invariants, that every operation committed within `completed[t]`
    /// events is present and that the operation in flight is all-or-nothing.
    fn oracle(
        &self,
        p: &Params,
        commits: &CommitLog,
        image: &CrashImage,
        completed: &[u64],
    ) -> Result<(), String>;
}

/// Adapts a [`Kernel`] to [`Workload`].
pub struct KernelWorkload<K: Kernel>(pub K);

/// Checks `p` and that kernel `k` takes its value size.
pub(crate) fn check_params<K: Kernel>(k: &K, p: &Params) -> Result<(), String> {
    p.validate()?;
    if p.value_bytes != 8 && !k.sized_values() {
        return Err(format!(
            "{} stores 8-byte values: value bytes {} apply to the hash maps only",
            k.info().name,
            p.value_bytes
        ));
    }
    if p.remote_threads > 0 && k.info().model == Model::HwTx {
        // A remote client sends the lines its flushes name at its fences (PPO's RDMA verbs);
        // a hardware transaction flushes nothing (the server's logging engine makes it
        // durable), so a client's transactions never reached the server.
        return Err(format!(
            "{} runs hardware transactions, which the server's logging engine makes durable: \
             they have no remote clients (remote threads {})",
            k.info().name,
            p.remote_threads
        ));
    }
    Ok(())
}

/// Thread `t`'s operation stream.
pub(crate) fn op_rng(seed: u64, t: u16) -> Rng {
    Rng::stream(seed, u64::from(t))
}

fn deliver_request(tx: &mut Tx, t: u16, words: &[u64]) {
    let buf = layout::request_buffer(t);
    let h = tx.heap();
    h.compute(12);
    for (i, &w) in words.iter().enumerate().take(64) {
        h.store_u64(buf + i as u64 * 8, w);
    }
}

impl<K: Kernel> Workload for KernelWorkload<K> {
    fn info(&self) -> &WorkloadInfo {
        self.0.info()
    }

    fn check_params(&self, p: &Params) -> Result<(), String> {
        check_params(&self.0, p)
    }

    fn generate(
        &self,
        p: &Params,
        sink: Box<dyn EventSink>,
        opts: GenOptions,
    ) -> Result<Generated, String> {
        check_params(&self.0, p)?;
        if p.janus_hints && opts.record_commits {
            return Err(
                "janus hints are for timing runs: they cannot be combined with crash recording"
                    .into(),
            );
        }
        let k = &self.0;
        let threads = p.threads;
        let mut tx = Tx::new(k.info().model, threads, sink);
        tx.heap().set_remote(
            (threads - p.remote_threads..threads)
                .collect::<Vec<_>>()
                .as_slice(),
        );
        if let Some(f) = opts.fault {
            tx = tx.with_fault(f);
        }
        let mut commits: Option<Vec<Vec<u64>>> = opts
            .record_commits
            .then(|| vec![Vec::new(); threads as usize]);
        let mut durable: Option<Vec<Vec<u64>>> = commits.clone();
        for t in 0..threads {
            tx.begin_setup(t);
            k.setup(&mut tx, p, t);
            tx.end_setup();
            if let Some(c) = commits.as_mut() {
                c[t as usize].push(tx.heap_ref().events(t));
            }
            if let Some(d) = durable.as_mut() {
                d[t as usize].push(tx.heap_ref().events(t));
            }
        }
        let counts: Vec<u64> = (0..threads).map(|t| k.thread_ops(p, t)).collect();
        let mut rngs: Vec<Rng> = (0..threads).map(|t| op_rng(p.seed, t)).collect();
        let max = counts.iter().copied().max().unwrap_or(0);
        let mut words = Vec::new();
        'ops: for i in 0..max {
            for t in 0..threads {
                if i >= counts[t as usize] {
                    continue;
                }
                if tx.heap_ref().stopped() {
                    break 'ops;
                }
                let op = k.gen_op(p, t, i, &mut rngs[t as usize]);
                tx.set_thread(t);
                if p.janus_hints {
                    tx.heap().begin_hint_scope();
                }
                words.clear();
                k.request(&op, &mut words);
                deliver_request(&mut tx, t, &words);
                tx.begin();
                k.exec(&mut tx, p, t, &op);
                tx.commit();
                tx.heap().commit_remote();
                tx.heap().end_hint_scope();
                let end = tx.heap_ref().events(t);
                if let Some(c) = commits.as_mut() {
                    c[t as usize].push(end);
                }
                let point = tx.take_durable_point(t).unwrap_or(end);
                if let Some(d) = durable.as_mut() {
                    d[t as usize].push(point);
                }
            }
        }
        let summary = HeapSummary::of(tx.heap_ref());
        let commits = commits.map(|per_thread| CommitLog {
            per_thread,
            durable: durable.unwrap_or_default(),
        });
        Ok(summary.into_generated(counts, commits, tx.finish()?))
    }

    fn oracle(
        &self,
        p: &Params,
        commits: &CommitLog,
        image: &CrashImage,
        completed: &[u64],
    ) -> Result<(), String> {
        oracle::check(&self.0, p, commits, image, completed)
    }
}
