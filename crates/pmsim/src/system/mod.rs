//! The full system: cores, a data-carrying cache hierarchy, DRAM and PM side by side.
//!
//! One hardware thread per trace thread (`cpu.threads_per_core` threads share a core's private
//! caches). Each thread has its own clock and runs an interval-style timing model:
//!
//! * every event retires `gap + 1` instructions at `cpu.width` per cycle;
//! * loads that miss the L1 are outstanding until their data returns; execution runs past them
//!   until the reorder buffer (`cpu.rob` instructions beyond the oldest) or the miss slots
//!   (`cpu.mlp`) are exhausted, then stalls on the oldest (interval model: Karkhanis & Smith,
//!   ISCA'04; Genbrugge et al., HPCA'10);
//! * stores retire into a store buffer (`cpu.store_buffer`) that drains in order into the L1;
//!   a store that misses requests ownership at once (x86 RFO prefetch) and its entry drains
//!   when the line arrives; a store retiring into a full buffer stalls;
//! * `clwb` / `clflushopt` write a dirty line back toward memory (the latter also invalidates);
//!   a write-back of a line whose fill is still in flight leaves when the fill returns (x86
//!   orders them after older stores to the same line), and a flush of a line whose eviction is
//!   still on its way completes with that eviction; `ntstore` evicts any cached copy (a dirty
//!   one goes to memory first) and bypasses the caches through a write-combining buffer (one
//!   line per thread); writes of one line reach the controller in program order;
//! * with `cpu.writebacks` = N > 0, a `clwb` / `clflushopt` waits while the thread has N of its
//!   write-backs unacknowledged (each holds a line-fill buffer in a real core); 0 leaves them
//!   unbounded;
//! * `sfence` / `mfence` stall until every earlier write-back and non-temporal store of the
//!   thread is acknowledged by the persistence domain (`mfence` also waits for loads and the
//!   store buffer), as the ordering plug-in decides;
//! * `TxBegin` / `TxEnd` go to the logging plug-in;
//! * the write-predictor plug-in sees every retired store, every `clwb`/`clflushopt` write-back,
//!   every software precomputation hint (`Op::Hint`) and every PM write reaching the
//!   controller, where its validator hands the PM-support engine the matching precomputation.
//!
//! Threads run in time order: the runnable thread with the smallest clock executes its next
//! event unless a memory event (a request arriving at a controller, a controller decision, a
//! completion) is due first. A thread waiting for memory is not runnable until the
//! acknowledgement arrives. So requests reach the controllers in time order across threads.
//!
//! Addresses in `[system.pm_base, +pm_bytes)` are PM (the config's device and controller, which
//! see the full address); all others are DRAM (the `system.dram` preset). Only PM lines are
//! persists and only PM writes carry data into the [`PmImage`]. A crash at `t` keeps what the PM
//! memory system had made durable by `t`; caches, store buffers and write-combining buffers are
//! lost.

mod cache;
pub(crate) mod demux;
mod fork;
mod hierarchy;

pub use demux::AwaitOrder;
use fork::Cursor;
pub use fork::SNAPSHOT_EVERY;
pub use hierarchy::{CoreCacheStats, Hierarchy, Writeback};

use crate::config::SimConfig;
use crate::event::EventQueue;
use crate::fast_hash::FastMap;
use crate::image::{LineData, PmImage};
use crate::line_map::LineMap;
use crate::logging::{CommitAction, LogRegion, LogSource, LogWrite, LoggingEngine};
use crate::memsys::MemoryView;
use crate::memsys::{Ack, MemRequest, MemorySystem};
use crate::network::{NetworkPersistence, Nic};
use crate::ordering::{FenceAction, OrderingModel, Persist, PersistGate};
use crate::persist_check::{Dependency, IssuedPersist, PersistOrderLog};
use crate::plugins::Plugins;
use crate::predict::{Backend, LineView, RetiredStore, WritePredictor};
use crate::stats::{Histogram, Stats};
use crate::time::{ps_to_ns, Ps};
use demux::{Demux, Next};
use pmtrace::{Op, TraceEvent};
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, VecDeque};
use std::fmt;

/// Why a full-system run failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SystemError {
    /// The config cannot be simulated.
    Config(String),
    /// The trace is malformed or does not fit the config.
    Trace(String),
    /// An internal invariant broke (a bug: please report it with the trace).
    Internal(String),
}

impl fmt::Display for SystemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SystemError::Config(m) | SystemError::Trace(m) => f.write_str(m),
            SystemError::Internal(m) => write!(f, "internal error: {m}"),
        }
    }
}

impl std::error::Error for SystemError {}

/// The headline figures of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SystemSummary {
    /// Trace events executed.
    pub events: u64,
    /// Simulated execution time (last retirement or acknowledgement), or the crash time.
    pub sim_time: Ps,
    /// True when the run stopped at the crash point with work left.
    pub crashed: bool,
}

const WAITING: Ps = Ps::MAX;

const KIND_FILL: u64 = 0;
const KIND_PERSIST: u64 = 1;
const KIND_EVICT: u64 = 2;
/// A remote write (`RdmaPwrite`): its acknowledgement goes back to the client over the NIC.
const KIND_REMOTE: u64 = 3;
const KIND_SHIFT: u32 = 16;
const SEQ_SHIFT: u32 = 18;

/// Retire clocks a thread keeps for `await`s ([`Thread::retire_clocks`]).
const RETIRE_RING: usize = 4096;
const _: () = assert!(RETIRE_RING.is_power_of_two());

/// An outstanding load or store-buffer entry.
#[derive(Clone, Copy)]
struct Pending {
    /// Instruction count of the thread when it was issued.
    instr: u64,
    /// When it completes ([`WAITING`] until the memory request it waits for is acknowledged).
    done: Ps,
    /// The fill request it waits for (0: none).
    req: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Block {
    None,
    /// Waiting for the oldest load (reorder buffer or miss slots full).
    Load,
    /// Waiting for the oldest store-buffer entry.
    StoreBuffer,
    /// A fence (or a transaction end that waits for its log) waits for persists: the thread's
    /// local ones when `local`, the persist acknowledgement of its remote writes when `remote`.
    Fence {
        full: bool,
        local: bool,
        remote: bool,
    },
    /// A persist waits for a persist-buffer entry (buffered ordering models).
    PersistBuffer,
    /// A `clwb`/`clflushopt` waits for its line's fill (buffered ordering models: the persist
    /// takes its place in the persist buffer, in program order, with the line's bytes).
    FlushFill,
    /// An `await` waits for another thread to retire the events it names (a happens-before
    /// edge of the trace: a lock hand-off).
    Await,
    /// A `clwb` / `clflushopt` waits for one of the thread's write-backs in flight to be
    /// acknowledged (`cpu.writebacks`).
    Writebacks,
}

/// One line in a thread's write-combining buffer.
#[derive(Clone)]
struct WriteCombine {
    line: u64,
    data: [u8; 64],
    mask: u64,
    known: bool,
}

#[derive(Clone)]
struct Thread {
    core: usize,
    clock: Ps,
    instrs: u64,
    retired: u64,
    /// The clock at which each of the last [`RETIRE_RING`] events retired (event `n`, counted
    /// from 1, at `n % RETIRE_RING`): when an `await` finds the events it names already
    /// retired, it goes on no earlier than the last of them did.
    retire_clocks: Box<[Ps; RETIRE_RING]>,
    started: bool,
    finished: bool,
    loads: VecDeque<Pending>,
    sb: VecDeque<Pending>,
    sb_last: Ps,
    persists: u32,
    last_persist_ack: Ps,
    block: Block,
    block_since: Ps,
    retire_rem: u64,
    wc: Option<WriteCombine>,
    stall_rob: Ps,
    stall_mlp: Ps,
    stall_sb: Ps,
    stall_fence: Ps,
    stall_persist_buffer: Ps,
    /// Write-backs of `clwb` / `clflushopt` in flight (counted under `cpu.writebacks` only).
    flushes: u32,
    stall_writebacks: Ps,
    fences: u64,
    /// Barriers that closed a block of `RdmaPwrite`s (the epochs of the thread's remote
    /// stream).
    remote_epochs: u64,
    /// `RdmaPwrite`s sent since the thread's last fence (an open verb).
    remote_open: bool,
    /// Remote line writes sent and not yet durable at the server.
    remote_inflight: u32,
    /// When the persist acknowledgement of the thread's latest durable remote write reaches
    /// it.
    remote_ack: Ps,
    /// Remote writes sent since the thread last waited for an acknowledgement.
    remote_unconfirmed: bool,
    stall_remote_ack: Ps,
    /// The fence the thread waits in would complete past the crash cut (a remote write's
    /// acknowledgement reaches the client one network trip after the write was durable): it is
    /// still waiting at the cut, and its wait counts only up to it.
    fence_past_cut: bool,
    n_loads: u64,
    n_stores: u64,
    n_flushes: u64,
    n_ntstores: u64,
}

impl Thread {
    /// Counts a retired event and notes its clock.
    #[inline]
    fn retire(&mut self) {
        self.retired += 1;
        self.retire_clocks[self.retired as usize & (RETIRE_RING - 1)] = self.clock;
    }

    /// The clock at which event `n` (counted from 1, at most [`retired`](Self::retired))
    /// retired. One more than [`RETIRE_RING`] events back is no longer kept: the oldest clock
    /// kept, later than the real one, stands for it.
    fn retired_at(&self, n: u64) -> Ps {
        let oldest = (self.retired + 1).saturating_sub(RETIRE_RING as u64).max(1);
        self.retire_clocks[n.max(oldest) as usize & (RETIRE_RING - 1)]
    }

    fn new(core: usize) -> Thread {
        Thread {
            core,
            clock: 0,
            instrs: 0,
            retired: 0,
            retire_clocks: Box::new([0; RETIRE_RING]),
            started: false,
            finished: false,
            loads: VecDeque::new(),
            sb: VecDeque::new(),
            sb_last: 0,
            persists: 0,
            last_persist_ack: 0,
            block: Block::None,
            block_since: 0,
            retire_rem: 0,
            wc: None,
            stall_rob: 0,
            stall_mlp: 0,
            stall_sb: 0,
            stall_fence: 0,
            stall_persist_buffer: 0,
            flushes: 0,
            stall_writebacks: 0,
            fences: 0,
            remote_epochs: 0,
            remote_open: false,
            remote_inflight: 0,
            remote_ack: 0,
            remote_unconfirmed: false,
            stall_remote_ack: 0,
            fence_past_cut: false,
            n_loads: 0,
            n_stores: 0,
            n_flushes: 0,
            n_ntstores: 0,
        }
    }
}

/// What a client's NIC delivers to this node.
#[derive(Clone)]
enum NetMessage {
    /// One line of an `rdma_pwrite` verb.
    Write {
        thread: u16,
        addr: u64,
        size: u16,
        value: [u8; 64],
        value_len: u8,
        /// The client's event index.
        event: u64,
    },
    /// The verb's data block ended (the client's barrier): one barrier region.
    EpochEnd { thread: u16 },
}

/// A memory request on its way from the caches to a controller.
#[derive(Clone)]
struct Arrival {
    pm: bool,
    req: MemRequest,
}

/// A PM write waiting in its line's queue for an older write of the line (`System::line_queue`).
#[derive(Clone)]
struct Queued {
    at: Ps,
    arrival: Arrival,
    /// It bypasses the ordering model: it waits for the line's older held writes too.
    ungated: bool,
}

/// A fill in flight and everyone waiting for it.
#[derive(Clone)]
struct Fill {
    line: u64,
    /// (thread, is_store) of loads and store-buffer entries completing with the fill.
    waiters: Vec<(u16, bool)>,
    /// Writes of the line that must leave after the fill (in program order).
    deferred: Vec<LineWrite>,
}

/// How a write leaving the hierarchy is accounted.
#[derive(Clone, Copy, PartialEq, Eq)]
enum WriteKind {
    /// A dirty line pushed out (LLC victim, or made room for a non-temporal/remote write):
    /// nobody's fence waits for it, but a later `clwb` of the line does.
    Evict,
    /// A `clwb`/`clflushopt` write-back, non-temporal store or remote write: the issuing
    /// thread's fences wait for it.
    Tracked,
    /// A write the logging engine issued in the background (in-place update, header spill):
    /// nobody waits for it but the engine.
    Engine,
}

/// A write of (part of) one line on its way to memory.
#[derive(Clone, Copy)]
struct LineWrite {
    thread: u16,
    line: u64,
    /// The bytes, when known and the line is PM (DRAM writes carry no data).
    data: Option<LineData>,
    kind: WriteKind,
    /// The logging engine's tag of a write it issued ([`NO_TAG`] for all others).
    tag: u64,
    /// Under a buffered ordering model, the thread whose persist order the write joins: the
    /// issuing thread for tracked writes, the line's last writer for an eviction (`None`: the
    /// write is not ordered).
    owner: Option<u16>,
    /// The issuing thread's retired-event count when the write was issued.
    event: u64,
    /// A remote write (`RdmaPwrite`).
    remote: bool,
    /// A logging engine's write that takes the WPQ entry kept for it
    /// ([`LogWrite::holds_entry`]).
    holds_entry: bool,
    /// A `clwb` / `clflushopt` write-back, counted against `cpu.writebacks` while in flight.
    flush: bool,
}

/// [`LineWrite::tag`] of writes the logging engine did not issue.
const NO_TAG: u64 = u64::MAX;

/// An eviction in flight and the threads whose `clwb` of the line waits for it (with the
/// event index of the `clwb`).
#[derive(Clone)]
struct Evicting {
    line: u64,
    waiters: Vec<(u16, u64)>,
}

/// An ordered persist in flight whose acknowledgement retires a thread's event from
/// [`System::unacked`] (evictions retire none).
const NO_EVENT: u64 = u64::MAX;

/// Traffic counters of one memory region.
#[derive(Clone, Copy, Default)]
struct RegionTraffic {
    reads: u64,
    writebacks: u64,
    evictions: u64,
    nt_writes: u64,
    nt_bytes: u64,
}

/// Request id → PM line of writes in flight, and (ack time, line) of acknowledged ones.
type PersistLog = (FastMap<u64, u64>, Vec<(Ps, u64)>);

/// The full system.
#[derive(Clone)]
pub struct System {
    cycle: Ps,
    width: u64,
    rob: u64,
    mlp: usize,
    sb_size: usize,
    threads_per_core: usize,
    max_threads: usize,
    pm_base: u64,
    pm_end: u64,
    pm: MemorySystem,
    dram: MemorySystem,
    ordering: Box<dyn OrderingModel>,
    logging: Box<dyn LoggingEngine>,
    /// The ordering model holds nothing (x86): persists skip it.
    ordering_at_once: bool,
    /// Persist-buffer entries per thread of a buffered ordering model.
    persist_buffer: Option<usize>,
    /// `cpu.writebacks`: write-backs of `clwb` / `clflushopt` a thread may have in flight.
    wb_cap: Option<usize>,
    /// The trace's gaps count core cycles, not instructions ([`System::gaps_as_cycles`]).
    gap_cycles: bool,
    /// Under `cpu.writebacks`: request ids of those write-backs in flight.
    flush_ids: FastMap<u64, ()>,
    /// Buffered ordering: per thread, event index → persists issued at that event and not yet
    /// acknowledged (what a crash oracle needs: a thread's events are persisted up to the
    /// first of them).
    unacked: Vec<BTreeMap<u64, u32>>,
    /// Buffered ordering: persists offered to the model and not yet acknowledged, id →
    /// (owner, event or [`NO_EVENT`], line).
    ordered: FastMap<u64, (u16, u64, u64)>,
    /// Buffered ordering: per PM line, the newest local persist of it offered to the model and
    /// not yet acknowledged, (owner, id). While no cache holds the line (evicted, flushed with
    /// invalidation, written non-temporally) its owner is the line's last writer: an access by
    /// another thread then depends on it as on a cached line's last writer, or that thread's
    /// later write of the line could become durable first and the older bytes land last.
    held_writer: FastMap<u64, (u16, u64)>,
    /// The order persists were issued in and became durable, for the persist-order checker.
    order_log: Option<PersistOrderLog>,
    /// The logging engine is passive (none): stores and write-backs skip it.
    logging_passive: bool,
    /// Request id → engine tag of the writes the logging engine issued.
    log_tags: FastMap<u64, u64>,
    /// The write predictor feeding the PM-support engine precomputations.
    predictor: Box<dyn WritePredictor>,
    /// The predictor predicts nothing (none): its hooks are skipped.
    predictor_passive: bool,
    hier: Hierarchy,
    threads: Vec<Thread>,
    arrivals: EventQueue<Arrival>,
    fills: FastMap<u64, Fill>,
    fill_of_line: FastMap<u64, u64>,
    /// PM persists the ordering model holds back, with the time they left the hierarchy.
    gate: PersistGate<(Ps, MemRequest, u64)>,
    log_writes: Vec<LogWrite>,
    /// Of `log_writes`, the first ones whose WPQ entries are kept (see
    /// [`keep_entries_of_log_writes`](Self::keep_entries_of_log_writes)).
    log_writes_kept: usize,
    /// PM line writes the logging engine sent (log entries, headers, in-place updates): they
    /// reach the controller without passing the caches, so `pm_traffic` does not count them.
    engine_writes: u64,
    acks: Vec<Ack>,
    wbs: Vec<Writeback>,
    next_seq: u64,
    stop_at: Option<Ps>,
    /// The latest time any decision so far compared with the crash point (see
    /// [`advance`](Self::advance)): kept by the uncut run of
    /// [`run_to_crash_points`](Self::run_to_crash_points), and at fence completions (rare) by
    /// every run; only that uncut run reads it.
    horizon: Ps,
    /// Whether the run was cut at `stop_at` with work left (a run that ended before it was not).
    cut: bool,
    last_ack: Ps,
    events: u64,
    pm_traffic: RegionTraffic,
    dram_traffic: RegionTraffic,
    persist_latency: Histogram,
    fence_stall: Histogram,
    tx_begins: u64,
    tx_ends: u64,
    /// Transaction ends that waited for their commit (a read-only transaction's does not).
    commit_waits: u64,
    /// Threads blocked on an `await`: (waiting thread, awaited thread, event count).
    awaiting: Vec<(u16, u16, u64)>,
    /// `await` events that blocked their thread.
    await_waits: u64,
    /// PM line writes that arrived over the network (RDMA), also in `pm_traffic.nt_writes`.
    pm_rdma_writes: u64,
    persist_log: Option<PersistLog>,
    fence_log: Option<Vec<(Ps, u16)>>,
    /// Evictions in flight by request id, and the newest one per line.
    evicting: FastMap<u64, Evicting>,
    evict_of_line: FastMap<u64, u64>,
    /// Latest arrival time scheduled for a write of each line: writes of one line reach the
    /// controller in the order they left the hierarchy.
    line_tail: LineMap<Ps>,
    /// Order between a line's writes the ordering model holds and its writes that do not pass
    /// the model (a logging engine's): `line_tail` orders a line's writes only as they leave the
    /// hierarchy, and a held write could otherwise reach the controller after a newer one of its
    /// line and overwrite it (BROI held a transaction's old eviction past the engine's in-place
    /// update of the line, whose log was then freed: a committed update lost at a crash). Every
    /// PM write gets a sequence number as it leaves the hierarchy; `held_seqs`: the numbers of
    /// each line's writes the model holds; `line_queue`: per line, in number order, the writes
    /// waiting for an older one: a write that bypasses the model waits for the older held ones,
    /// and any write newer than a waiting one waits behind it. Writes the model holds keep the
    /// model's order among themselves.
    write_seq: u64,
    held_seqs: FastMap<u64, Vec<u64>>,
    line_queue: FastMap<u64, BTreeMap<u64, Queued>>,
    /// Scratch for the writes the model releases.
    released: Vec<(Ps, MemRequest, u64)>,
    /// The logging engine's PM region and the engine's name: programs may not touch it.
    log_region: Option<(LogRegion, String)>,
    /// When client threads wait for their remote persists.
    net: Box<dyn NetworkPersistence>,
    /// The NIC pair to the client node.
    nic: Nic,
    /// Messages on their way from a client over the network.
    net_arrivals: EventQueue<NetMessage>,
    /// Per client thread: barrier regions of its remote stream that reached this node.
    server_remote_epochs: Vec<u64>,
    /// Client fences that waited for a persist acknowledgement (network round trips).
    net_round_trips: u64,
    /// `RdmaPwrite` line writes and their payload bytes.
    net_writes: u64,
    net_bytes: u64,
}

impl System {
    /// A cold system built from a (validated) config.
    pub fn new(cfg: &SimConfig) -> Result<System, SystemError> {
        let mut p = Plugins::build(cfg).map_err(SystemError::Config)?;
        let dram_cfg = SimConfig::preset(&cfg.system.dram)
            .map_err(|e| SystemError::Config(format!("system.dram: {e}")))?;
        let dp = Plugins::build(&dram_cfg).map_err(SystemError::Config)?;
        let cpu = &cfg.cpu;
        let cycle = cpu.cycle_ps();
        hierarchy::fits_in_memory(&cfg.caches, cpu.cores as usize).map_err(SystemError::Config)?;
        let pm = MemorySystem::new(cfg, p.scheduler, p.bmo);
        let mut log_region = None;
        if !p.logging.is_passive() {
            cfg.check_log_region().map_err(SystemError::Config)?;
            let log_bytes = cfg.controller.log_bytes;
            let region = LogRegion {
                base: cfg.system.pm_base + cfg.system.pm_bytes - log_bytes,
                bytes: log_bytes,
            };
            p.logging.attach(region, &pm);
            log_region = Some((region, cfg.controller.logging.clone()));
        }
        Ok(System {
            cycle,
            width: cpu.width as u64,
            rob: cpu.rob as u64,
            mlp: cpu.mlp as usize,
            sb_size: cpu.store_buffer as usize,
            threads_per_core: cpu.threads_per_core as usize,
            max_threads: (cpu.cores * cpu.threads_per_core) as usize,
            pm_base: cfg.system.pm_base,
            pm_end: cfg.system.pm_base + cfg.system.pm_bytes,
            pm,
            dram: MemorySystem::new(&dram_cfg, dp.scheduler, dp.bmo),
            ordering_at_once: p.ordering.releases_at_once(),
            persist_buffer: p.ordering.persist_buffer(),
            wb_cap: (cpu.writebacks > 0).then_some(cpu.writebacks as usize),
            gap_cycles: false,
            flush_ids: FastMap::default(),
            unacked: Vec::new(),
            ordered: FastMap::default(),
            held_writer: FastMap::default(),
            order_log: None,
            logging_passive: p.logging.is_passive(),
            ordering: p.ordering,
            logging: p.logging,
            log_tags: FastMap::default(),
            predictor_passive: p.predictor.is_passive(),
            predictor: p.predictor,
            hier: Hierarchy::new(&cfg.caches, cpu.cores as usize, cycle),
            threads: Vec::new(),
            arrivals: EventQueue::new(),
            fills: FastMap::default(),
            fill_of_line: FastMap::default(),
            gate: PersistGate::default(),
            log_writes: Vec::new(),
            log_writes_kept: 0,
            engine_writes: 0,
            acks: Vec::new(),
            wbs: Vec::new(),
            next_seq: 1,
            stop_at: None,
            horizon: 0,
            cut: false,
            last_ack: 0,
            events: 0,
            pm_traffic: RegionTraffic::default(),
            dram_traffic: RegionTraffic::default(),
            persist_latency: Histogram::default(),
            fence_stall: Histogram::default(),
            tx_begins: 0,
            tx_ends: 0,
            commit_waits: 0,
            awaiting: Vec::new(),
            await_waits: 0,
            pm_rdma_writes: 0,
            persist_log: None,
            fence_log: None,
            evicting: FastMap::default(),
            evict_of_line: FastMap::default(),
            line_tail: LineMap::default(),
            log_region,
            write_seq: 0,
            held_seqs: FastMap::default(),
            line_queue: FastMap::default(),
            released: Vec::new(),
            net: {
                let mut n = crate::plugins::network(&cfg.network.persistence)
                    .map_err(SystemError::Config)?;
                n.configure(&cfg.network).map_err(SystemError::Config)?;
                n
            },
            nic: Nic::new(&cfg.network),
            net_arrivals: EventQueue::new(),
            server_remote_epochs: Vec::new(),
            net_round_trips: 0,
            net_writes: 0,
            net_bytes: 0,
        })
    }

    /// Checks what a (validated) config needs of the full system beyond validation, without
    /// building it (its caches must fit in the memory this process may use): so a sweep finds
    /// a config this model cannot run before its first job.
    pub fn check_config(cfg: &SimConfig) -> Result<(), String> {
        hierarchy::fits_in_memory(&cfg.caches, cfg.cpu.cores as usize)
    }

    /// Reads every event's gap as core cycles before it, not as instructions retired at
    /// `cpu.width` per cycle: for traces whose header has `pmtrace::flags::GAP_CYCLES` (a
    /// PMWeaver store dump, whose gaps are gem5 time).
    pub fn gaps_as_cycles(mut self) -> Self {
        self.gap_cycles = true;
        self
    }

    /// Stops the run at simulated time `t` (a power failure): nothing after `t` happens.
    pub fn crash_at(mut self, t: Ps) -> Self {
        self.stop_at = Some(t);
        self
    }

    /// Keeps a log of every PM write acknowledgement (time, line address) and of every fence
    /// completion (time, thread), for crash oracles and for choosing crash points.
    pub fn record_persists(mut self) -> Self {
        self.persist_log = Some((FastMap::default(), Vec::new()));
        self.fence_log = Some(Vec::new());
        self
    }

    /// Keeps the log the persist-order checker reads ([`crate::persist_check::check`]): every
    /// persist offered to the ordering model with its stream and epoch, the order they became
    /// durable in, and the inter-thread dependencies the directory reported; and for
    /// [`crate::persist_check::check_line_order`] every PM write in the order it left the
    /// caches and every PM write acknowledgement.
    pub fn record_persist_order(mut self) -> Self {
        self.order_log = Some(PersistOrderLog::default());
        self
    }

    /// The log kept by [`record_persist_order`](Self::record_persist_order).
    pub fn persist_order(&self) -> Option<&PersistOrderLog> {
        self.order_log.as_ref()
    }

    /// Events of thread `t` whose persists are all durable: the crash oracle's view of how far
    /// the thread got. Under x86 ordering a fence completes only when its persists are
    /// acknowledged, so this is every retired event; under a buffered model it stops at the
    /// first event with a persist not yet acknowledged.
    pub fn persisted_events(&self, t: usize) -> u64 {
        let retired = self.retired_events(t);
        match self.unacked.get(t).and_then(|m| m.keys().next()) {
            Some(&e) if !self.ordering_at_once => e.min(retired),
            _ => retired,
        }
    }

    /// Fence completions (time, thread) recorded by [`record_persists`](Self::record_persists),
    /// in completion order.
    pub fn fence_log(&self) -> &[(Ps, u16)] {
        self.fence_log.as_deref().unwrap_or(&[])
    }

    /// The PM write acknowledgements recorded by [`record_persists`](Self::record_persists).
    pub fn persist_log(&self) -> &[(Ps, u64)] {
        self.persist_log.as_ref().map_or(&[], |(_, v)| &v[..])
    }

    /// What survives a power failure now: the PM memory system's durable contents (media plus
    /// the ADR domain when ADR is on). Caches, store buffers and write-combining buffers are
    /// volatile and not part of it.
    pub fn durable_image(&self) -> &PmImage {
        self.pm.durable_image()
    }

    /// The image recovery leaves after a power failure now: the durable image, plus what the
    /// logging engine keeps in the ADR domain (flushed at the failure), recovered by the
    /// logging engine (which reads only that and its non-volatile registers).
    pub fn recovered_image(&self) -> PmImage {
        let mut img = self.pm.durable_image().clone();
        self.logging.crash_flush(&mut img);
        self.logging.recover(&img)
    }

    /// Events thread `t` has retired (a fence counts once it completed): the crash oracle's
    /// view of how far each thread got.
    pub fn retired_events(&self, t: usize) -> u64 {
        self.threads.get(t).map_or(0, |th| th.retired)
    }

    /// Hardware threads that ran.
    pub fn threads(&self) -> usize {
        self.threads.len()
    }

    /// The cache hierarchy (for inspection and dependency tracking).
    pub fn hierarchy(&self) -> &Hierarchy {
        &self.hier
    }

    /// The PM memory system.
    pub fn pm_memory(&self) -> &MemorySystem {
        &self.pm
    }

    #[inline]
    fn is_pm(&self, addr: u64) -> bool {
        addr >= self.pm_base && addr < self.pm_end
    }

    fn new_id(&mut self, kind: u64, thread: usize) -> u64 {
        let id = (self.next_seq << SEQ_SHIFT) | (kind << KIND_SHIFT) | thread as u64;
        self.next_seq += 1;
        id
    }

    /// Runs the trace to its end (or to the crash point); `progress` gets the number of
    /// events executed every 2^16 events.
    pub fn run<I>(
        &mut self,
        events: I,
        mut progress: impl FnMut(u64),
    ) -> Result<SystemSummary, SystemError>
    where
        I: IntoIterator<Item = Result<TraceEvent, pmtrace::TraceError>>,
    {
        let mut cursor = self.start(events.into_iter());
        while self.advance::<_, false>(&mut cursor, &mut progress)? {}
        self.finish(&cursor, progress)
    }

    /// A run's position in its trace, taken by [`advance`](Self::advance).
    fn start<I>(&self, events: I) -> Cursor<I>
    where
        I: Iterator<Item = Result<TraceEvent, pmtrace::TraceError>>,
    {
        let mut dx = Demux::new(events, self.max_threads);
        if let Some((r, name)) = &self.log_region {
            dx.reserve(
                r.base,
                r.base + r.bytes,
                format!(
                    "the hardware log region ({:#x}..{:#x}): controller.logging = \"{name}\" \
                     reserves the top {} MiB of PM (system.pm_base + system.pm_bytes) for its \
                     log; give the program more PM (system.pm_bytes)",
                    r.base,
                    r.base + r.bytes,
                    r.bytes >> 20
                ),
            );
        }
        Cursor {
            dx,
            next_mem: self.next_mem_time(),
        }
    }

    /// One step of the run: a thread's event or a memory event; false once the run is over
    /// (the trace ran out and memory is idle, or the crash point was reached).
    ///
    /// Every decision that depends on the crash point compares a time with it; with `TRACK`
    /// each such time is recorded in `horizon`: the run so far is the same under any crash
    /// point at or after `horizon` (what [`run_to_crash_points`](Self::run_to_crash_points)
    /// relies on). (Off for plain runs: a few instructions per step.)
    #[inline]
    fn advance<I, const TRACK: bool>(
        &mut self,
        cur: &mut Cursor<I>,
        progress: &mut impl FnMut(u64),
    ) -> Result<bool, SystemError>
    where
        I: Iterator<Item = Result<TraceEvent, pmtrace::TraceError>>,
    {
        let limit = self.stop_at.unwrap_or(Ps::MAX);
        let queued = self.arrivals.len();
        let t = self.pick(&mut cur.dx)?;
        if self.arrivals.len() != queued {
            // A finishing thread's write-combining line left.
            cur.next_mem = self.next_mem_time();
        }
        if let (true, Some(t)) = (TRACK, t) {
            self.horizon = self.horizon.max(self.threads[t].clock);
        }
        let runnable = t.filter(|&t| self.threads[t].clock <= limit);
        match runnable {
            Some(t) if self.threads[t].clock < cur.next_mem => {
                if self.step_thread::<I, TRACK>(t, &mut cur.dx)? {
                    cur.next_mem = self.next_mem_time();
                }
                if self.events & 0xffff == 0 && self.threads[t].retired > 0 {
                    progress(self.events);
                }
            }
            _ => {
                let next_mem = cur.next_mem;
                if TRACK && next_mem != Ps::MAX {
                    self.horizon = self.horizon.max(next_mem);
                }
                if next_mem > limit || next_mem == Ps::MAX {
                    if next_mem == Ps::MAX && t.is_none() {
                        // The trace's order guarantees every awaited event is read
                        // before its await (demux.rs): a wait that never ends is a bug.
                        if let Some(&(w, src, count)) = self.awaiting.first() {
                            return Err(SystemError::Internal(format!(
                                "thread {w} awaits event {count} of thread {src}, which \
                                 retired {} and is {:?}",
                                self.threads.get(src as usize).map_or(0, |o| o.retired),
                                self.threads.get(src as usize).map(|o| o.block)
                            )));
                        }
                        // (A fence that completes past the cut waits for good.)
                        if let Some(b) = self
                            .threads
                            .iter()
                            .position(|th| th.block != Block::None && !th.fence_past_cut)
                        {
                            return Err(SystemError::Internal(format!(
                                "thread {b} waits ({:?}) but the memory system is idle",
                                self.threads[b].block
                            )));
                        }
                    }
                    return Ok(false);
                }
                self.step_memory();
                cur.next_mem = self.next_mem_time();
            }
        }
        Ok(true)
    }

    /// Ends a run that [`advance`](Self::advance) finished.
    fn finish<I>(
        &mut self,
        cur: &Cursor<I>,
        mut progress: impl FnMut(u64),
    ) -> Result<SystemSummary, SystemError>
    where
        I: Iterator<Item = Result<TraceEvent, pmtrace::TraceError>>,
    {
        let dx = &cur.dx;
        if self.stop_at.is_none() && (!dx.eof() || self.threads.iter().any(|th| !th.finished)) {
            return Err(SystemError::Internal(format!(
                "the run stopped after {} events with trace left unread",
                self.events
            )));
        }
        if let Some(e) = self.logging.error() {
            return Err(SystemError::Config(e));
        }
        let crashed = self.stop_at.is_some()
            && (self.threads.iter().any(|th| !th.finished)
                || !dx.eof()
                || self.next_mem_time() != Ps::MAX);
        self.cut = crashed;
        progress(self.events);
        Ok(SystemSummary {
            events: self.events,
            sim_time: self.sim_time(),
            crashed,
        })
    }

    /// The runnable thread with the smallest clock, reading ahead in the trace as needed.
    fn pick<I>(&mut self, dx: &mut Demux<I>) -> Result<Option<usize>, SystemError>
    where
        I: Iterator<Item = Result<TraceEvent, pmtrace::TraceError>>,
    {
        loop {
            if dx.threads() == 0 && !dx.pull().map_err(SystemError::Trace)? {
                return Ok(None);
            }
            if dx.threads() != self.threads.len() {
                self.add_threads(dx.threads());
            }
            let mut best: Option<usize> = None;
            for (i, th) in self.threads.iter().enumerate() {
                if th.block == Block::None
                    && !th.finished
                    && best.is_none_or(|b| th.clock < self.threads[b].clock)
                {
                    best = Some(i);
                }
            }
            let Some(b) = best else {
                return Ok(None);
            };
            match dx.next_for(b).map_err(SystemError::Trace)? {
                Next::Ready if dx.threads() == self.threads.len() => return Ok(Some(b)),
                Next::Ready => continue,
                Next::Finished => {
                    self.flush_wc(b);
                    self.threads[b].finished = true;
                }
                Next::Unknown => {
                    // Reading ahead may have found threads not seen before.
                    self.add_threads(dx.threads());
                    let mut alt: Option<usize> = None;
                    for (i, th) in self.threads.iter().enumerate() {
                        if th.block == Block::None
                            && dx.has_queued(i)
                            && alt.is_none_or(|a| th.clock < self.threads[a].clock)
                        {
                            alt = Some(i);
                        }
                    }
                    return Ok(alt);
                }
            }
        }
    }

    fn add_threads(&mut self, n: usize) {
        while self.threads.len() < n {
            let core = self.threads.len() / self.threads_per_core;
            self.threads.push(Thread::new(core));
            self.server_remote_epochs.push(0);
            if !self.ordering_at_once {
                self.unacked.push(BTreeMap::new());
            }
        }
    }

    fn next_mem_time(&self) -> Ps {
        let a = self.arrivals.peek_time().unwrap_or(Ps::MAX);
        let p = self.pm.next_event_time().unwrap_or(Ps::MAX);
        let d = self.dram.next_event_time().unwrap_or(Ps::MAX);
        let n = self.net_arrivals.peek_time().unwrap_or(Ps::MAX);
        a.min(p).min(d).min(n)
    }

    /// Processes the earliest memory event (a network message, an arrival or a controller
    /// event).
    fn step_memory(&mut self) {
        let a = self.arrivals.peek_time().unwrap_or(Ps::MAX);
        let p = self.pm.next_event_time().unwrap_or(Ps::MAX);
        let d = self.dram.next_event_time().unwrap_or(Ps::MAX);
        let n = self.net_arrivals.peek_time().unwrap_or(Ps::MAX);
        if n <= a && n <= p && n <= d {
            let (t, msg) = self.net_arrivals.pop().expect("peeked");
            self.net_arrive(msg, t);
        } else if a <= p && a <= d {
            let (t, arr) = self.arrivals.pop().expect("peeked");
            if arr.pm && arr.req.is_write && !self.predictor_passive {
                self.validated_write(arr.req, t);
            } else {
                let mem = if arr.pm { &mut self.pm } else { &mut self.dram };
                let at = t.max(mem.now());
                mem.submit(arr.req, at);
            }
        } else if p <= d {
            self.pm.step();
        } else {
            self.dram.step();
        }
        self.absorb_acks();
    }

    /// Hook: a PM write reaches the controller at `t`; the predictor's validator looks it up
    /// and the PM-support engine gets the matching precomputation.
    fn validated_write(&mut self, req: MemRequest, t: Ps) {
        let at = t.max(self.pm.now());
        let line = req.data.filter(|d| d.len as usize == 64).map(|d| d.bytes);
        let v = self
            .predictor
            .on_writeback(req.addr & !63, line.as_ref(), at, self.pm.bmo());
        self.pm.submit_validated(req, at, v.pre.as_ref(), v.latency);
    }

    /// Calls write-predictor hook `f` with the engine and the caches' contents.
    fn with_predictor(&mut self, f: impl FnOnce(&mut dyn WritePredictor, &Backend)) {
        let lines = Lines {
            hier: &self.hier,
            pm: (self.pm_base, self.pm_end),
        };
        let b = Backend {
            engine: self.pm.bmo(),
            lines: &lines,
        };
        f(self.predictor.as_mut(), &b);
    }

    /// Hook: thread `t` retired store `ev` (its value in the event).
    fn predict_store(&mut self, t: usize, ev: &TraceEvent) {
        let s = RetiredStore {
            thread: t as u16,
            pc: ev.pc,
            addr: ev.addr,
            value: ev.value_bytes(),
            pm: self.is_pm(ev.addr),
        };
        let now = self.threads[t].clock;
        self.with_predictor(|p, b| p.on_store(&s, now, b));
    }

    /// Hook: thread `t` executed a software precomputation hint (`Op::Hint`).
    fn predict_hint(&mut self, t: usize, ev: &TraceEvent) {
        let line = ev.addr & !63;
        let data: Option<[u8; 64]> = ev.value_bytes().try_into().ok();
        let now = self.threads[t].clock;
        self.with_predictor(|p, b| p.on_hint(t as u16, line, data.as_ref(), now, b));
    }

    /// Hook: thread `t` wrote PM line `line` back with bytes `data`.
    fn predict_flush(&mut self, t: usize, line: u64, data: &[u8; 64]) {
        let now = self.threads[t].clock;
        self.with_predictor(|p, b| p.on_flush(t as u16, line << 6, data, now, b));
    }

    fn absorb_acks(&mut self) {
        if !self.pm.has_acks() && !self.dram.has_acks() {
            return;
        }
        self.pm.take_acks(&mut self.acks);
        let from_pm = self.acks.len();
        self.dram.take_acks(&mut self.acks);
        let acks = std::mem::take(&mut self.acks);
        for (i, a) in acks.iter().enumerate() {
            self.last_ack = self.last_ack.max(a.time);
            let thread = (a.id & 0xffff) as usize;
            if let Some((ids, log)) = self.persist_log.as_mut() {
                if let Some(line) = ids.remove(&a.id) {
                    log.push((a.time, line));
                }
            }
            if !self.log_tags.is_empty() {
                if let Some(tag) = self.log_tags.remove(&a.id) {
                    // Before the thread's persists drop: a header the engine issues now keeps
                    // a waiting commit waiting.
                    self.logging
                        .on_write_durable(tag, a.time, &self.pm, &mut self.log_writes);
                    self.sync_adr_pins(a.time);
                    if !self.log_writes.is_empty() {
                        self.send_log_writes(a.time);
                    }
                }
            }
            if i < from_pm && (a.id >> KIND_SHIFT) & 3 != KIND_FILL {
                if let Some(log) = self.order_log.as_mut() {
                    log.line_acks.push(a.id);
                }
            }
            let mut event = NO_EVENT;
            if !self.ordering_at_once && i < from_pm {
                if let Some((_, e, line)) = self.ordered.remove(&a.id) {
                    event = e;
                    if self
                        .held_writer
                        .get(&line)
                        .is_some_and(|&(_, id)| id == a.id)
                    {
                        self.held_writer.remove(&line);
                    }
                    if let Some(log) = self.order_log.as_mut() {
                        log.durable.push((a.time, a.id));
                    }
                    self.gate
                        .acked(self.ordering.as_mut(), a.id, a.time, &self.pm);
                    self.send_released(a.time);
                }
            }
            match (a.id >> KIND_SHIFT) & 3 {
                KIND_FILL => self.fill_returned(a.id, a.time),
                KIND_PERSIST => {
                    if i < from_pm {
                        self.persist_latency.record(a.time - a.issued);
                    }
                    if !self.flush_ids.is_empty() && self.flush_ids.remove(&a.id).is_some() {
                        self.writeback_done(thread, a.time);
                    }
                    self.persist_done(thread, event, a.time);
                }
                KIND_REMOTE => {
                    self.persist_latency.record(a.time - a.issued);
                    self.remote_done(thread, event, a.time);
                }
                _ => self.eviction_done(a.id, a.time),
            }
        }
        self.acks = acks;
        self.acks.clear();
        if self.pm.has_acks() {
            // Writes that entered the ADR domain when the logging engine released WPQ entries.
            self.absorb_acks();
        }
    }

    /// Hook: hands the WPQ entries the logging engine keeps to the PM controller.
    fn sync_adr_pins(&mut self, now: Ps) {
        // First the entries the hook's writes take with them (the engine stopped counting
        // them as its own), so that no waiting write slips into one.
        self.keep_entries_of_log_writes();
        let pins = self.logging.adr_pinned();
        if !pins.is_empty() {
            self.pm.set_pinned(pins, now);
        }
    }

    fn fill_returned(&mut self, id: u64, time: Ps) {
        let Some(fill) = self.fills.remove(&id) else {
            return;
        };
        if self.fill_of_line.get(&fill.line) == Some(&id) {
            self.fill_of_line.remove(&fill.line);
            // Only the line's current fill clears its pending marks (an older fill of a line
            // that was flushed and refetched meanwhile does not).
            self.hier.fill_done(fill.line);
        }
        for &(t, is_store) in &fill.waiters {
            let th = &mut self.threads[t as usize];
            let q = if is_store { &mut th.sb } else { &mut th.loads };
            for p in q.iter_mut().filter(|p| p.req == id) {
                p.done = time;
                p.req = 0;
            }
            if matches!(th.block, Block::Load | Block::StoreBuffer) {
                th.block = Block::None;
            } else if th.block == Block::FlushFill {
                th.clock = th.clock.max(time);
                th.block = Block::None;
            }
            self.try_finish_fence(t as usize);
        }
        for w in fill.deferred {
            // Counted in its thread's persists when it was deferred.
            self.dispatch(w, time);
        }
    }

    /// An eviction was acknowledged: `clwb`s of its line that found no cached copy were
    /// waiting for it.
    fn eviction_done(&mut self, id: u64, time: Ps) {
        let Some(e) = self.evicting.remove(&id) else {
            return;
        };
        if self.evict_of_line.get(&e.line) == Some(&id) {
            self.evict_of_line.remove(&e.line);
        }
        for (t, event) in e.waiters {
            self.persist_done(t as usize, event, time);
        }
    }

    /// Thread `t` issued a persist of `line` at event `event` (counted toward its fences and,
    /// under a buffered ordering model, its persist buffer).
    fn persist_issued(&mut self, t: usize, event: u64, line: u64) {
        self.threads[t].persists += 1;
        self.note_unacked(t, event, line);
    }

    /// Buffered ordering: thread `t`'s event `event` has one more PM persist not yet durable.
    fn note_unacked(&mut self, t: usize, event: u64, line: u64) {
        if !self.ordering_at_once && self.is_pm(line << 6) {
            *self.unacked[t].entry(event).or_insert(0) += 1;
        }
    }

    /// Buffered ordering: one of thread `t`'s persists of event `event` is durable.
    fn note_acked(&mut self, t: usize, event: u64) {
        if let std::collections::btree_map::Entry::Occupied(mut o) = self.unacked[t].entry(event) {
            *o.get_mut() -= 1;
            if *o.get() == 0 {
                o.remove();
            }
        }
    }

    /// A remote write of client thread `t` (its event `event`) is durable here at `time`: the
    /// acknowledgement the server's NIC sends now reaches the client one network trip later.
    fn remote_done(&mut self, t: usize, event: u64, time: Ps) {
        let ack = self.nic.ack_arrival(time);
        let th = &mut self.threads[t];
        th.remote_inflight -= 1;
        th.remote_ack = th.remote_ack.max(ack);
        if !self.ordering_at_once {
            self.note_acked(t, event);
        }
        self.try_finish_fence(t);
    }

    /// One of thread `t`'s `clwb` / `clflushopt` write-backs is acknowledged at `time`: its
    /// line-fill buffer is free, so a flush waiting for one goes on.
    fn writeback_done(&mut self, t: usize, time: Ps) {
        let th = &mut self.threads[t];
        th.flushes -= 1;
        if th.block == Block::Writebacks {
            th.clock = th.clock.max(time);
            th.stall_writebacks += th.clock - th.block_since;
            th.block = Block::None;
        }
    }

    /// A persist thread `t` issued at event `event` is durable at `time`.
    fn persist_done(&mut self, t: usize, event: u64, time: Ps) {
        let th = &mut self.threads[t];
        th.persists -= 1;
        th.last_persist_ack = th.last_persist_ack.max(time);
        if !self.ordering_at_once {
            self.note_acked(t, event);
            let th = &mut self.threads[t];
            if th.block == Block::PersistBuffer
                && self
                    .persist_buffer
                    .is_some_and(|cap| (th.persists as usize) < cap)
            {
                th.clock = th.clock.max(time);
                th.stall_persist_buffer += th.clock - th.block_since;
                th.block = Block::None;
            }
        }
        self.try_finish_fence(t);
    }

    /// Completes a blocked fence whose condition now holds.
    fn try_finish_fence(&mut self, t: usize) {
        let th = &mut self.threads[t];
        let Block::Fence {
            full,
            local,
            remote,
        } = th.block
        else {
            return;
        };
        if (local && th.persists > 0) || (remote && th.remote_inflight > 0) {
            return;
        }
        let mut done = if local { th.last_persist_ack } else { 0 };
        if remote {
            done = done.max(th.remote_ack);
        }
        if full {
            for p in th.loads.iter().chain(th.sb.iter()) {
                if p.done == WAITING {
                    return;
                }
                done = done.max(p.done);
            }
        }
        self.horizon = self.horizon.max(done);
        if self.stop_at.is_some_and(|cut| done > cut) {
            // Completes after the cut: it never completed (its stall counts up to the cut).
            th.fence_past_cut = true;
            return;
        }
        // (Counted once the fence completes: a full fence still waiting for a load had
        // counted the acknowledgement's wait again at each call.)
        if remote && th.remote_ack > th.clock {
            th.stall_remote_ack += th.remote_ack - th.clock.max(th.block_since);
        }
        if full {
            th.loads.clear();
            th.sb.clear();
            th.sb_last = th.sb_last.max(done);
        }
        th.clock = th.clock.max(done);
        let stall = th.clock - th.block_since;
        th.stall_fence += stall;
        self.fence_stall.record(stall);
        th.block = Block::None;
        self.retire(t);
        let at = self.threads[t].clock;
        if let Some(log) = self.fence_log.as_mut() {
            log.push((at, t as u16));
        }
    }

    /// Thread `t` retires its current event (at its clock) and wakes the threads awaiting it.
    #[inline]
    fn retire(&mut self, t: usize) {
        self.threads[t].retire();
        if !self.awaiting.is_empty() {
            self.wake_awaiting(t);
        }
    }

    /// Thread `t` retired an event: threads awaiting as many of its events go on, no earlier
    /// than `t`'s clock.
    fn wake_awaiting(&mut self, t: usize) {
        let (retired, at) = (self.threads[t].retired, self.threads[t].clock);
        let threads = &mut self.threads;
        self.awaiting.retain(|&(w, src, count)| {
            if src as usize != t || retired < count {
                return true;
            }
            let th = &mut threads[w as usize];
            th.block = Block::None;
            th.clock = th.clock.max(at);
            false
        });
    }

    /// Executes thread `t`'s next event (or blocks it); returns true when memory work was
    /// scheduled.
    fn step_thread<I, const TRACK: bool>(
        &mut self,
        t: usize,
        dx: &mut Demux<I>,
    ) -> Result<bool, SystemError>
    where
        I: Iterator<Item = Result<TraceEvent, pmtrace::TraceError>>,
    {
        let ev = dx.peek(t);
        let cycle = self.cycle;
        let width = self.width;
        let th = &mut self.threads[t];
        if !th.started {
            // Instruction time in units of 1/width ps, so no rounding accumulates.
            // (gap < 2^32 and a cycle < 2^30 ps for any valid cpu.ghz: no overflow.)
            let num = if self.gap_cycles {
                // The gap is core cycles (a PMWeaver dump's time between events): the clock
                // moves by them, and the event itself retires as one instruction.
                th.instrs += 1;
                th.clock = th.clock.saturating_add(ev.gap as u64 * cycle);
                cycle + th.retire_rem
            } else {
                let n = ev.gap as u64 + 1;
                th.instrs += n;
                n * cycle + th.retire_rem
            };
            th.clock = th.clock.saturating_add(num / width);
            th.retire_rem = num % width;
            th.started = true;
        }
        let limit = self.stop_at.unwrap_or(Ps::MAX);
        if TRACK {
            self.horizon = self.horizon.max(self.threads[t].clock);
        }
        if self.threads[t].clock > limit || !self.rob_ready(t, ev.op) {
            return Ok(false);
        }
        if TRACK {
            self.horizon = self.horizon.max(self.threads[t].clock);
        }
        if self.threads[t].clock > limit {
            // A stall moved the thread past the crash point: the event never executes.
            return Ok(false);
        }
        if !self.ordering_at_once && self.waits_for_persist_buffer(t, ev) {
            return Ok(false);
        }
        if let Some(cap) = self.wb_cap {
            let th = &mut self.threads[t];
            if matches!(ev.op, Op::Clwb | Op::Clflushopt) && th.flushes as usize >= cap {
                th.block = Block::Writebacks;
                th.block_since = th.clock;
                return Ok(false);
            }
        }
        if ev.op == Op::Await {
            let (src, count) = ev.awaited().expect("an await");
            let Some(other) = self
                .threads
                .get(src as usize)
                .filter(|o| o.retired >= count)
            else {
                let th = &mut self.threads[t];
                th.block = Block::Await;
                th.block_since = th.clock;
                self.awaiting.push((t as u16, src, count));
                self.await_waits += 1;
                return Ok(false);
            };
            // Retired already (the other thread was stepped ahead): not before it did.
            let at = other.retired_at(count);
            let th = &mut self.threads[t];
            th.clock = th.clock.max(at);
            if TRACK {
                self.horizon = self.horizon.max(th.clock);
            }
            if th.clock > limit {
                return Ok(false);
            }
        }
        let before = self.arrivals.len() + self.net_arrivals.len();
        match ev.op {
            Op::Load => self.do_access(t, ev, false),
            Op::Store => self.do_access(t, ev, true),
            Op::NtStore => self.do_ntstore(t, ev),
            Op::RdmaPwrite => self.do_remote_write(t, ev),
            Op::Clwb | Op::Clflushopt => self.do_flush(t, ev),
            Op::Sfence | Op::Mfence => self.do_fence(t, ev.op == Op::Mfence),
            Op::TxBegin => {
                self.tx_begins += 1;
                self.logging.on_tx_begin(t as u16, self.threads[t].clock);
            }
            Op::TxEnd => {
                self.tx_ends += 1;
                let now = self.threads[t].clock;
                let action = self
                    .logging
                    .on_tx_end(t as u16, now, &self.pm, &mut self.log_writes);
                self.sync_adr_pins(now);
                self.send_log_writes(now);
                if action == CommitAction::WaitForLog {
                    self.commit_waits += 1;
                    self.block_on_persists(t, false);
                }
            }
            Op::Hint => {
                if !self.predictor_passive {
                    self.predict_hint(t, ev);
                }
            }
            // The awaited events retired (checked above).
            Op::Compute | Op::Await => {}
        }
        let th = &mut self.threads[t];
        th.started = false;
        if !matches!(th.block, Block::Fence { .. }) {
            self.retire(t);
        }
        dx.pop(t);
        self.events += 1;
        Ok(self.arrivals.len() + self.net_arrivals.len() != before)
    }

    /// Under a buffered ordering model: blocks thread `t` when `ev` would issue a persist and
    /// the thread's persist buffer is full, or when `ev` flushes a line whose fill is in flight
    /// (the persist enters the buffer in program order, with the line's bytes).
    fn waits_for_persist_buffer(&mut self, t: usize, ev: &TraceEvent) -> bool {
        if !matches!(
            ev.op,
            Op::Clwb | Op::Clflushopt | Op::NtStore | Op::RdmaPwrite
        ) {
            return false;
        }
        let th = &mut self.threads[t];
        if self
            .persist_buffer
            .is_some_and(|cap| th.persists as usize >= cap)
        {
            th.block = Block::PersistBuffer;
            th.block_since = th.clock;
            return true;
        }
        if matches!(ev.op, Op::Clwb | Op::Clflushopt) {
            if let Some(f) = self
                .fill_of_line
                .get(&(ev.addr >> 6))
                .and_then(|id| self.fills.get_mut(id))
            {
                f.waiters.push((t as u16, false));
                let th = &mut self.threads[t];
                th.block = Block::FlushFill;
                th.block_since = th.clock;
                return true;
            }
        }
        false
    }

    /// Checks the reorder buffer, miss slots and store buffer before `op` can execute; stalls
    /// the thread's clock on known completions, blocks it on unknown ones.
    fn rob_ready(&mut self, t: usize, op: Op) -> bool {
        let rob = self.rob;
        let mlp = self.mlp;
        let sb_size = self.sb_size;
        let th = &mut self.threads[t];
        while let Some(&p) = th.loads.front() {
            if p.done <= th.clock {
                th.loads.pop_front();
            } else if th.instrs - p.instr >= rob || (op == Op::Load && th.loads.len() >= mlp) {
                if p.done == WAITING {
                    th.block = Block::Load;
                    return false;
                }
                let stall = p.done - th.clock;
                if th.instrs - p.instr >= rob {
                    th.stall_rob += stall;
                } else {
                    th.stall_mlp += stall;
                }
                th.clock = p.done;
                th.loads.pop_front();
            } else {
                break;
            }
        }
        if op == Op::Store {
            while let Some(&p) = th.sb.front() {
                let done = if p.done == WAITING {
                    WAITING
                } else {
                    p.done.max(th.sb_last)
                };
                if done <= th.clock {
                    th.sb_last = done;
                    th.sb.pop_front();
                } else if th.sb.len() >= sb_size {
                    if done == WAITING {
                        th.block = Block::StoreBuffer;
                        return false;
                    }
                    th.stall_sb += done - th.clock;
                    th.clock = done;
                    th.sb_last = done;
                    th.sb.pop_front();
                } else {
                    break;
                }
            }
        }
        true
    }

    /// A load or store, one cache access per line it touches.
    fn do_access(&mut self, t: usize, ev: &TraceEvent, write: bool) {
        let value = ev.value_bytes();
        for_each_line(ev.addr, ev.size, |line, off, start, len| {
            // A cacheable access to the line in the thread's write-combining buffer sends it
            // first, so the access sees (and a later write-back carries) its bytes.
            if self.threads[t].wc.as_ref().is_some_and(|w| w.line == line) {
                self.flush_wc(t);
            }
            if !self.ordering_at_once && self.is_pm(line << 6) {
                self.note_dependency(t, line);
            }
            let slot = self.access_line(t, line, write);
            if write && !self.ordering_at_once && value.is_empty() {
                self.hier.note_writer(slot, t as u16);
            }
            let tx_store = write && !self.logging_passive && self.is_pm(line << 6);
            let before = if tx_store {
                *self.hier.slot_bytes(slot)
            } else {
                [0; 64]
            };
            if write && !value.is_empty() {
                let lo = start as usize;
                if lo < value.len() {
                    let hi = (lo + len).min(value.len());
                    self.hier.write_bytes(slot, off, &value[lo..hi], t as u16);
                }
            }
            if tx_store {
                let bytes = *self.hier.slot_bytes(slot);
                let now = self.threads[t].clock;
                self.logging.on_store(
                    t as u16,
                    line << 6,
                    &before,
                    &bytes,
                    now,
                    &self.pm,
                    &mut self.log_writes,
                );
                self.sync_adr_pins(now);
            }
        });
        let th = &mut self.threads[t];
        if write {
            th.n_stores += 1;
            if !self.predictor_passive {
                self.predict_store(t, ev);
            }
        } else {
            th.n_loads += 1;
        }
        if !self.log_writes.is_empty() {
            self.send_log_writes(self.threads[t].clock);
        }
    }

    /// Buffered ordering: thread `t` accesses PM line `line`; if another thread wrote it last,
    /// `t`'s later persists depend on that thread's persists so far.
    fn note_dependency(&mut self, t: usize, line: u64) {
        let Some(src) = self
            .hier
            .last_writer(line)
            .or_else(|| self.held_writer.get(&line).map(|&(owner, _)| owner))
        else {
            return;
        };
        if src as usize == t {
            return;
        }
        self.ordering.on_dependency(t as u16, src);
        if let Some(log) = self.order_log.as_mut() {
            log.dependencies.push(Dependency {
                thread: t as u16,
                source: src,
                after: log.issued.len(),
            });
        }
    }

    /// One cache access; returns the LLC slot holding the line.
    fn access_line(&mut self, t: usize, line: u64, write: bool) -> u32 {
        let core = self.threads[t].core;
        let a = self.hier.access(core, line, write, &mut self.wbs);
        let clock = self.threads[t].clock;
        self.send_evictions(t, clock + a.latency);
        let mut entry = Pending {
            instr: self.threads[t].instrs,
            done: clock + a.latency,
            req: 0,
        };
        if a.memory {
            let id = self.new_id(KIND_FILL, t);
            let addr = line << 6;
            let pm = self.is_pm(addr);
            self.fills.insert(
                id,
                Fill {
                    line,
                    waiters: vec![(t as u16, write)],
                    deferred: Vec::new(),
                },
            );
            self.fill_of_line.insert(line, id);
            let region = if pm {
                &mut self.pm_traffic
            } else {
                &mut self.dram_traffic
            };
            region.reads += 1;
            self.arrivals.push(
                clock + a.latency,
                Arrival {
                    pm,
                    req: MemRequest {
                        id,
                        addr,
                        is_write: false,
                        data: None,
                        holds_entry: false,
                    },
                },
            );
            entry.done = WAITING;
            entry.req = id;
        } else if a.pending {
            if let Some(&id) = self.fill_of_line.get(&line) {
                if let Some(f) = self.fills.get_mut(&id) {
                    f.waiters.push((t as u16, write));
                    entry.done = WAITING;
                    entry.req = id;
                }
            }
        }
        let th = &mut self.threads[t];
        if write {
            if entry.done == WAITING || entry.done > th.clock {
                th.sb.push_back(entry);
            }
        } else if entry.done == WAITING || a.latency > self.hier.l1_latency() {
            th.loads.push_back(entry);
        }
        a.slot
    }

    /// Sends the dirty lines the last access pushed out of the LLC.
    fn send_evictions(&mut self, t: usize, at: Ps) {
        while let Some(wb) = self.wbs.pop() {
            self.send_eviction(t, wb, at);
        }
    }

    /// Sends a dirty line pushed out of the hierarchy.
    fn send_eviction(&mut self, t: usize, wb: Writeback, at: Ps) {
        if self.is_pm(wb.line << 6) {
            self.pm_traffic.evictions += 1;
        } else {
            self.dram_traffic.evictions += 1;
        }
        let w = LineWrite {
            thread: t as u16,
            line: wb.line,
            data: self.line_data(wb.line, 0, &wb.data),
            kind: WriteKind::Evict,
            tag: NO_TAG,
            owner: wb.last_writer,
            event: NO_EVENT,
            remote: false,
            holds_entry: false,
            flush: false,
        };
        self.send_line_write(w, at);
    }

    /// The payload of a write of `bytes` at `offset` of `line`: PM lines only.
    fn line_data(&self, line: u64, offset: usize, bytes: &[u8]) -> Option<LineData> {
        let addr = line << 6;
        if self.is_pm(addr) {
            LineData::new(addr + offset as u64, bytes)
        } else {
            None
        }
    }

    /// Sends a write of one line toward memory at `at`. Writes of a line leave in program
    /// order: behind writes of the line still waiting for its fill, and never arriving before
    /// an earlier write of the line.
    fn send_line_write(&mut self, w: LineWrite, at: Ps) {
        if w.kind == WriteKind::Tracked && !w.remote {
            self.persist_issued(w.thread as usize, w.event, w.line);
        }
        if let Some(f) = self
            .fill_of_line
            .get(&w.line)
            .and_then(|id| self.fills.get_mut(id))
        {
            if !f.deferred.is_empty() {
                f.deferred.push(w);
                return;
            }
        }
        self.dispatch(w, at);
    }

    /// Puts a write (already counted in its thread's persists when tracked) on its way.
    fn dispatch(&mut self, w: LineWrite, at: Ps) {
        let t = w.thread as usize;
        let addr = w.line << 6;
        let pm = self.is_pm(addr);
        if pm
            && w.tag == NO_TAG
            && !w.remote
            && !self.logging_passive
            && self.logging.absorbs_writeback(addr)
        {
            // An uncommitted transaction's line: the logging engine writes it in place after
            // the commit, so this write-back never reaches the home location. (An RDMA write
            // is no write-back of the cache: it goes to memory, and its acknowledgement back
            // to the client; taken over here, it was never acknowledged and its fence waited
            // for ever.)
            if w.kind == WriteKind::Tracked {
                self.persist_done(t, w.event, at);
            }
            if w.flush {
                self.writeback_done(t, at);
            }
            return;
        }
        let tail = self.line_tail.get_or_insert(w.line, 0);
        let at = at.max(*tail);
        *tail = at;
        let kind = match w.kind {
            WriteKind::Evict | WriteKind::Engine => KIND_EVICT,
            WriteKind::Tracked if w.remote => KIND_REMOTE,
            WriteKind::Tracked => KIND_PERSIST,
        };
        let id = self.new_id(kind, t);
        if w.flush {
            self.flush_ids.insert(id, ());
        }
        if w.tag != NO_TAG {
            self.log_tags.insert(id, w.tag);
        }
        if pm {
            if let Some((ids, _)) = self.persist_log.as_mut() {
                ids.insert(id, addr);
            }
            if let Some(log) = self.order_log.as_mut() {
                log.line_writes.push((id, w.line));
            }
        }
        let req = MemRequest {
            id,
            addr,
            is_write: true,
            data: w.data,
            holds_entry: w.holds_entry,
        };
        if w.kind == WriteKind::Evict {
            self.evicting.insert(
                id,
                Evicting {
                    line: w.line,
                    waiters: Vec::new(),
                },
            );
            self.evict_of_line.insert(w.line, id);
            match w.owner {
                Some(owner) if pm && !self.ordering_at_once => {
                    self.offer_persist(owner, NO_EVENT, false, req, at);
                }
                _ => self.send_ungated(at, Arrival { pm, req }),
            }
            return;
        }
        if !pm || self.ordering_at_once || w.kind == WriteKind::Engine {
            self.send_ungated(at, Arrival { pm, req });
            return;
        }
        self.offer_persist(w.thread, w.event, w.remote, req, at);
    }

    /// Hands a PM write to the (buffered) ordering model at `at`: it enters the controller
    /// when the model releases it.
    fn offer_persist(&mut self, owner: u16, event: u64, remote: bool, req: MemRequest, at: Ps) {
        let p = Persist {
            id: req.id,
            thread: owner,
            line_addr: req.addr,
            bank: self.pm.bank_of(req.addr) as u32,
            remote,
        };
        let line = req.addr >> 6;
        self.ordered.insert(req.id, (owner, event, line));
        if !remote {
            self.held_writer.insert(line, (owner, req.id));
        }
        if let Some(log) = self.order_log.as_mut() {
            let o = owner as usize;
            log.issued.push(IssuedPersist {
                id: req.id,
                remote,
                stream: owner,
                epoch: if remote {
                    self.server_remote_epochs[o]
                } else {
                    self.threads[o].fences
                },
            });
        }
        let seq = self.next_write_seq();
        match self
            .gate
            .offer(self.ordering.as_mut(), p, at, &self.pm, (at, req, seq))
        {
            Some((at, req, seq)) => {
                self.send_in_line_order(seq, at, Arrival { pm: true, req }, false)
            }
            None => self.held_seqs.entry(line).or_default().push(seq),
        }
        if self.gate.has_released() {
            self.send_released(at);
        }
    }

    fn next_write_seq(&mut self) -> u64 {
        self.write_seq += 1;
        self.write_seq
    }

    /// Sends a write that does not pass the ordering model toward memory at `at` (after the
    /// older writes of its line the model holds, see `line_queue`).
    fn send_ungated(&mut self, at: Ps, a: Arrival) {
        if !a.pm {
            self.arrivals.push(at, a);
            return;
        }
        let seq = self.next_write_seq();
        self.send_in_line_order(seq, at, a, true);
    }

    /// Sends PM write `a` (number `seq` of the writes leaving the hierarchy) toward memory at
    /// `at`, or queues it behind the older writes of its line it must follow.
    fn send_in_line_order(&mut self, seq: u64, at: Ps, a: Arrival, ungated: bool) {
        if self.line_queue.is_empty() && (!ungated || self.held_seqs.is_empty()) {
            self.arrivals.push(at, a);
            return;
        }
        let line = a.req.addr >> 6;
        let queued = self.line_queue.contains_key(&line);
        // (an ungated write was numbered just now: every held write of its line is older)
        let behind_held = ungated && self.held_seqs.contains_key(&line);
        if !queued && !behind_held {
            self.arrivals.push(at, a);
            return;
        }
        self.line_queue.entry(line).or_default().insert(
            seq,
            Queued {
                at,
                arrival: a,
                ungated,
            },
        );
        self.flush_line(line);
    }

    /// Sends the writes at the head of `line`'s queue that wait for nothing any more, in order.
    fn flush_line(&mut self, line: u64) {
        let Some(q) = self.line_queue.get_mut(&line) else {
            return;
        };
        let oldest_held = self
            .held_seqs
            .get(&line)
            .and_then(|h| h.iter().min().copied())
            .unwrap_or(u64::MAX);
        let mut last = 0;
        while let Some(e) = q.first_entry() {
            if e.get().ungated && oldest_held < *e.key() {
                break;
            }
            let w = e.remove();
            last = last.max(w.at);
            self.arrivals.push(last, w.arrival);
        }
        if q.is_empty() {
            self.line_queue.remove(&line);
        }
    }

    fn do_flush(&mut self, t: usize, ev: &TraceEvent) {
        let line = ev.addr >> 6;
        let invalidate = ev.op == Op::Clflushopt;
        self.threads[t].n_flushes += 1;
        if self.threads[t].wc.as_ref().is_some_and(|w| w.line == line) {
            self.flush_wc(t);
        }
        let Some(wb) = self.hier.flush(line, invalidate) else {
            // No dirty copy. If the line's last eviction is still on its way, the flush is
            // complete only when that write is (the hardware finds it in its write-back path).
            if let Some(e) = self
                .evict_of_line
                .get(&line)
                .and_then(|id| self.evicting.get_mut(id))
            {
                e.waiters.push((t as u16, self.threads[t].retired));
                let event = self.threads[t].retired;
                self.persist_issued(t, event, line);
            }
            return;
        };
        if self.is_pm(line << 6) {
            self.pm_traffic.writebacks += 1;
            if !self.predictor_passive {
                self.predict_flush(t, line, &wb.data);
            }
        } else {
            self.dram_traffic.writebacks += 1;
        }
        let w = LineWrite {
            thread: t as u16,
            line,
            data: self.line_data(line, 0, &wb.data),
            kind: WriteKind::Tracked,
            tag: NO_TAG,
            owner: Some(t as u16),
            event: self.threads[t].retired,
            remote: false,
            holds_entry: false,
            flush: self.wb_cap.is_some(),
        };
        if w.flush {
            self.threads[t].flushes += 1;
        }
        if let Some(f) = self
            .fill_of_line
            .get(&line)
            .and_then(|id| self.fills.get_mut(id))
        {
            // x86 orders the write-back after older stores to the line: it leaves with the fill.
            f.deferred.push(w);
            self.persist_issued(t, w.event, line);
            return;
        }
        let at = self.threads[t].clock + self.hier.path_latency();
        self.send_line_write(w, at);
    }

    fn send_released(&mut self, now: Ps) {
        let mut released = std::mem::take(&mut self.released);
        self.gate.take_released(|w| released.push(w));
        for (at, req, seq) in released.drain(..) {
            let line = req.addr >> 6;
            if let Entry::Occupied(mut e) = self.held_seqs.entry(line) {
                e.get_mut().retain(|&s| s != seq);
                if e.get().is_empty() {
                    e.remove();
                }
            }
            // (queued behind an older waiting write of its line, or sent: then the line's
            // writes that waited for it follow, `flush_line`)
            self.send_in_line_order(seq, at.max(now), Arrival { pm: true, req }, false);
        }
        self.released = released;
    }

    /// Sends the writes the logging engine asked for at `now`: from a core's log buffer they
    /// cross the cache path first, from the controller they enter it at once.
    /// Keeps at the controller the WPQ entries of the logging engine's writes not yet sent
    /// that take one with them ([`LogWrite::holds_entry`]), once each.
    fn keep_entries_of_log_writes(&mut self) {
        for w in &self.log_writes[self.log_writes_kept..] {
            if w.holds_entry {
                self.pm.reserve_entry(w.line_addr);
            }
        }
        self.log_writes_kept = self.log_writes.len();
    }

    fn send_log_writes(&mut self, now: Ps) {
        self.keep_entries_of_log_writes();
        self.log_writes_kept = 0;
        let writes = std::mem::take(&mut self.log_writes);
        self.engine_writes += writes.len() as u64;
        for w in &writes {
            let at = match w.source {
                LogSource::Core => now + self.hier.path_latency(),
                LogSource::Controller => now,
            };
            let lw = LineWrite {
                thread: w.thread,
                line: w.line_addr >> 6,
                data: LineData::new(w.line_addr, &w.data),
                kind: if w.tracked {
                    WriteKind::Tracked
                } else {
                    WriteKind::Engine
                },
                tag: w.tag,
                owner: None,
                event: self.threads[w.thread as usize].retired,
                remote: false,
                holds_entry: w.holds_entry,
                flush: false,
            };
            self.send_line_write(lw, at);
        }
        self.log_writes = writes;
        self.log_writes.clear();
    }

    fn do_ntstore(&mut self, t: usize, ev: &TraceEvent) {
        self.threads[t].n_ntstores += 1;
        if !self.predictor_passive {
            self.predict_store(t, ev);
        }
        let value = ev.value_bytes();
        for_each_line(ev.addr, ev.size, |line, off, start, len| {
            if self.threads[t].wc.as_ref().is_some_and(|w| w.line != line) {
                self.flush_wc(t);
            }
            if self.threads[t].wc.is_none() {
                // x86 evicts a cached copy first: a dirty one goes to memory ahead of the
                // non-temporal bytes.
                if let Some(wb) = self.hier.flush(line, true) {
                    let at = self.threads[t].clock + self.hier.path_latency();
                    self.send_eviction(t, wb, at);
                }
                self.threads[t].wc = Some(WriteCombine {
                    line,
                    data: [0; 64],
                    mask: 0,
                    known: true,
                });
            }
            let wc = self.threads[t].wc.as_mut().expect("just opened");
            let lo = start as usize;
            if lo + len <= value.len() {
                wc.data[off..off + len].copy_from_slice(&value[lo..lo + len]);
            } else {
                wc.known = false;
            }
            wc.mask |= span_mask(off, len);
            if wc.mask == u64::MAX {
                self.flush_wc(t);
            }
        });
    }

    /// Sends thread `t`'s open write-combining line to memory (one write per contiguous run of
    /// written bytes: the byte enables of a partial line write).
    fn flush_wc(&mut self, t: usize) {
        let Some(wc) = self.threads[t].wc.take() else {
            return;
        };
        let pm = self.is_pm(wc.line << 6);
        let at = self.threads[t].clock + self.hier.path_latency();
        let mut off = 0usize;
        while off < 64 {
            if wc.mask >> off & 1 == 0 {
                off += 1;
                continue;
            }
            let mut end = off;
            while end < 64 && wc.mask >> end & 1 == 1 {
                end += 1;
            }
            if wc.known {
                self.hier.memory_write(wc.line, off, &wc.data[off..end]);
            }
            let r = if pm {
                &mut self.pm_traffic
            } else {
                &mut self.dram_traffic
            };
            r.nt_writes += 1;
            r.nt_bytes += (end - off) as u64;
            let data = if wc.known {
                self.line_data(wc.line, off, &wc.data[off..end])
            } else {
                None
            };
            let w = LineWrite {
                thread: t as u16,
                line: wc.line,
                data,
                kind: WriteKind::Tracked,
                tag: NO_TAG,
                owner: Some(t as u16),
                event: self.threads[t].retired,
                remote: false,
                holds_entry: false,
                flush: false,
            };
            self.send_line_write(w, at);
            off = end;
        }
    }

    /// Client thread `t` sends one line of an `rdma_pwrite` verb: its NIC puts it on the link
    /// to this node, where it arrives after serialisation and the link latency.
    fn do_remote_write(&mut self, t: usize, ev: &TraceEvent) {
        let first = !self.threads[t].remote_open;
        let arrive = self.nic.send(self.threads[t].clock, ev.size as u64, first);
        let value = ev.value_bytes();
        let mut bytes = [0u8; 64];
        bytes[..value.len()].copy_from_slice(value);
        let event = self.threads[t].retired;
        self.net_arrivals.push(
            arrive,
            NetMessage::Write {
                thread: t as u16,
                addr: ev.addr,
                size: ev.size,
                value: bytes,
                value_len: value.len() as u8,
                event,
            },
        );
        self.net_writes += 1;
        self.net_bytes += ev.size as u64;
        let mut lines = 0;
        for_each_line(ev.addr, ev.size, |line, _, _, _| {
            lines += 1;
            self.note_unacked(t, event, line);
        });
        let th = &mut self.threads[t];
        th.remote_open = true;
        th.remote_unconfirmed = true;
        th.remote_inflight += lines;
    }

    /// A message from a client reaches this node at `at`.
    fn net_arrive(&mut self, msg: NetMessage, at: Ps) {
        match msg {
            NetMessage::Write {
                thread,
                addr,
                size,
                value,
                value_len,
                event,
            } => {
                let value = &value[..value_len as usize];
                for_each_line(addr, size, |line, off, start, len| {
                    // A dirty cached copy goes to memory first, then the remote bytes (the
                    // write bypasses the caches: DDIO-off).
                    if let Some(wb) = self.hier.flush(line, true) {
                        self.send_eviction(thread as usize, wb, at);
                    }
                    let lo = start as usize;
                    let data = if lo + len <= value.len() {
                        let bytes = &value[lo..lo + len];
                        self.hier.memory_write(line, off, bytes);
                        self.line_data(line, off, bytes)
                    } else {
                        None
                    };
                    let r = if self.is_pm(line << 6) {
                        self.pm_rdma_writes += 1;
                        &mut self.pm_traffic
                    } else {
                        &mut self.dram_traffic
                    };
                    // Counted with the non-temporal writes (as DDIO-off RDMA writes are), and on
                    // their own in `pm_rdma_writes`.
                    r.nt_writes += 1;
                    r.nt_bytes += len as u64;
                    let w = LineWrite {
                        thread,
                        line,
                        data,
                        kind: WriteKind::Tracked,
                        tag: NO_TAG,
                        owner: Some(thread),
                        event,
                        remote: true,
                        holds_entry: false,
                        flush: false,
                    };
                    self.send_line_write(w, at);
                });
            }
            NetMessage::EpochEnd { thread } => {
                if !self.ordering_at_once {
                    // The verb's data block is one barrier region (PPO Sec. IV-C).
                    self.ordering.on_remote_epoch_end(thread);
                    if self.gate.has_released() {
                        self.send_released(at);
                    }
                }
                self.server_remote_epochs[thread as usize] += 1;
            }
        }
    }

    fn do_fence(&mut self, t: usize, full: bool) {
        self.flush_wc(t);
        self.threads[t].fences += 1;
        let remote = self.close_remote_epoch(t, full);
        match self.ordering.on_fence(t as u16) {
            FenceAction::StallUntilDrained => self.block_on(t, full, true, remote),
            FenceAction::Proceed if remote => self.block_on(t, full, false, true),
            FenceAction::Proceed => {
                // A buffered model's fence completes at once (its epoch persists later): it
                // still marks a point of the program for crash-point selection.
                let at = self.threads[t].clock;
                if let Some(log) = self.fence_log.as_mut() {
                    log.push((at, t as u16));
                }
            }
        }
    }

    /// A fence of thread `t`: closes the thread's open `rdma_pwrite` verb (its barrier travels
    /// to the server behind the data) and says whether the fence waits for the persist
    /// acknowledgement of the thread's remote writes (the network persistence mode decides).
    fn close_remote_epoch(&mut self, t: usize, full: bool) -> bool {
        let th = &mut self.threads[t];
        if th.remote_open {
            th.remote_open = false;
            th.remote_epochs += 1;
            let at = self.nic.behind_sent(th.clock);
            self.net_arrivals
                .push(at, NetMessage::EpochEnd { thread: t as u16 });
        }
        if th.remote_unconfirmed && self.net.fence_waits_for_ack(full) {
            th.remote_unconfirmed = false;
            self.net_round_trips += 1;
            return true;
        }
        false
    }

    /// Blocks thread `t` until its persists (and, for a full fence, loads and store buffer)
    /// are done; completes at once when nothing is outstanding.
    fn block_on_persists(&mut self, t: usize, full: bool) {
        self.block_on(t, full, true, false);
    }

    /// Blocks thread `t` until its local persists (`local`), the acknowledgement of its remote
    /// writes (`remote`) and, for a full fence, its loads and store buffer are done; completes
    /// at once when nothing is outstanding.
    fn block_on(&mut self, t: usize, full: bool, local: bool, remote: bool) {
        let th = &mut self.threads[t];
        th.block = Block::Fence {
            full,
            local,
            remote,
        };
        th.block_since = th.clock;
        self.try_finish_fence(t);
        if self.threads[t].block == Block::None {
            // Completed at once: try_finish_fence counted it retired; step_thread must not
            // count it again.
            self.threads[t].retired -= 1;
        }
    }

    /// The run's simulated time: the cut, or when the last thread or write finished (also
    /// under a cut that came after that).
    fn sim_time(&self) -> Ps {
        let end = self.threads.iter().map(|t| t.clock).max().unwrap_or(0);
        crate::time::run_time(end.max(self.last_ack), self.stop_at, self.cut)
    }

    /// All statistics: cores under `cpu.`, caches under `cache.`, traffic under `pm.` and
    /// `dram.`, the PM memory system under `mc.` and the DRAM one under `dram.mc.`.
    pub fn stats(&self) -> Stats {
        let mut s = Stats::new();
        let time = self.sim_time();
        s.set("sim.time_ps", time);
        s.set("sim.events", self.events);
        let cycles_total = time / self.cycle.max(1);
        let mut instrs = 0;
        let (mut rob, mut mlp, mut sb, mut fence, mut wb) = (0, 0, 0, 0, 0);
        // A run cut by a power failure: a fence still waiting at the cut has stalled its thread
        // since it began, though it never completed.
        let open_fence = |th: &Thread| match (self.stop_at, th.block) {
            (Some(cut), Block::Fence { .. }) => cut.saturating_sub(th.block_since),
            _ => 0,
        };
        // The same for a `clwb` waiting for a write-back slot (`cpu.writebacks`) at the cut.
        let open_writebacks = |th: &Thread| match (self.stop_at, th.block) {
            (Some(cut), Block::Writebacks) => cut.saturating_sub(th.block_since),
            _ => 0,
        };
        // Cut by a power failure, a thread's time ends at the cut: one waiting there (a fence,
        // a load, the store buffer, ...) has run until it, and none ran past it (an event's
        // time is charged before the cut is checked). A wait other than a fence's or a
        // write-back slot's counts in its time but in no stall counter. (Only a thread's own
        // clock had counted for the other waits: its IPC and shares then disagreed with the
        // run's.)
        let thread_time = |th: &Thread| match self.stop_at {
            Some(cut) if th.block != Block::None && !th.finished => cut,
            Some(cut) => th.clock.min(cut),
            None => th.clock,
        };
        for (i, th) in self.threads.iter().enumerate() {
            let cycles = thread_time(th) / self.cycle.max(1);
            let p = format!("cpu.t{i}.");
            s.set(format!("{p}instructions"), th.instrs);
            s.set(format!("{p}cycles"), cycles);
            s.set_value(format!("{p}ipc"), ratio(th.instrs, cycles));
            s.set(format!("{p}loads"), th.n_loads);
            s.set(format!("{p}stores"), th.n_stores);
            s.set(format!("{p}flushes"), th.n_flushes);
            s.set(format!("{p}ntstores"), th.n_ntstores);
            s.set(format!("{p}fences"), th.fences);
            s.set(format!("{p}stall_rob_ps"), th.stall_rob);
            s.set(format!("{p}stall_mlp_ps"), th.stall_mlp);
            s.set(format!("{p}stall_store_buffer_ps"), th.stall_sb);
            s.set(
                format!("{p}stall_fence_ps"),
                th.stall_fence + open_fence(th),
            );
            if self.wb_cap.is_some() {
                let t_wb = th.stall_writebacks + open_writebacks(th);
                s.set(format!("{p}stall_writebacks_ps"), t_wb);
                wb += t_wb;
            }
            s.set(format!("{p}retired_events"), th.retired);
            instrs += th.instrs;
            rob += th.stall_rob;
            mlp += th.stall_mlp;
            sb += th.stall_sb;
            fence += th.stall_fence + open_fence(th);
        }
        s.set("cpu.threads", self.threads.len() as u64);
        s.set("cpu.instructions", instrs);
        s.set("cpu.cycles", cycles_total);
        s.set_value("cpu.ipc", ratio(instrs, cycles_total));
        s.set("cpu.stall_rob_ps", rob);
        s.set("cpu.stall_mlp_ps", mlp);
        s.set("cpu.stall_store_buffer_ps", sb);
        s.set("cpu.stall_fence_ps", fence);
        s.set("cpu.fences", self.threads.iter().map(|t| t.fences).sum());
        s.set("cpu.tx_begins", self.tx_begins);
        s.set("cpu.tx_ends", self.tx_ends);
        if self.commit_waits > 0 {
            // Only when there are any: the baselines' statistics keep their keys.
            s.set("cpu.commit_waits", self.commit_waits);
        }
        if self.await_waits > 0 {
            s.set("cpu.await_waits", self.await_waits);
        }
        let thread_time: Ps = self.threads.iter().map(thread_time).sum();
        s.set_value("cpu.fence_stall_share", ratio(fence, thread_time));
        if self.wb_cap.is_some() {
            s.set("cpu.stall_writebacks_ps", wb);
            s.set_value("cpu.writeback_stall_share", ratio(wb, thread_time));
        }
        s.set_histogram("cpu.fence_stall_ps", self.fence_stall.clone());
        s.set_histogram("pm.persist_latency_ps", self.persist_latency.clone());
        s.set_value(
            "pm.persist_latency_ns_mean",
            ps_to_ns(self.persist_latency.mean() as Ps),
        );
        let mut c = CoreCacheStats::default();
        for x in &self.hier.stats {
            c.l1_hits += x.l1_hits;
            c.l1_misses += x.l1_misses;
            c.l2_hits += x.l2_hits;
            c.l2_misses += x.l2_misses;
            c.llc_hits += x.llc_hits;
            c.llc_misses += x.llc_misses;
            c.coherence += x.coherence;
        }
        s.set("cache.l1d.hits", c.l1_hits);
        s.set("cache.l1d.misses", c.l1_misses);
        s.set("cache.l2.hits", c.l2_hits);
        s.set("cache.l2.misses", c.l2_misses);
        s.set("cache.llc.hits", c.llc_hits);
        s.set("cache.llc.misses", c.llc_misses);
        s.set("cache.coherence_actions", c.coherence);
        for (name, r) in [("pm", &self.pm_traffic), ("dram", &self.dram_traffic)] {
            s.set(format!("{name}.reads"), r.reads);
            s.set(format!("{name}.writebacks"), r.writebacks);
            s.set(format!("{name}.evictions"), r.evictions);
            s.set(format!("{name}.nt_writes"), r.nt_writes);
            s.set(
                format!("{name}.write_bytes"),
                (r.writebacks + r.evictions) * 64 + r.nt_bytes,
            );
            s.set(format!("{name}.read_bytes"), r.reads * 64);
        }
        // Only when there are any: the baselines' statistics keep their keys.
        if self.engine_writes > 0 {
            s.set("pm.engine_writes", self.engine_writes);
        }
        if self.pm_rdma_writes > 0 {
            s.set("pm.rdma_writes", self.pm_rdma_writes);
        }
        self.pm.export_stats(&mut s);
        self.logging.export_stats(&mut s);
        if !self.predictor_passive {
            for (k, v) in self.predictor.stats() {
                s.set(format!("predict.{k}"), v);
            }
        }
        if self.net_writes > 0 {
            s.set("net.remote_writes", self.net_writes);
            s.set("net.remote_bytes", self.net_bytes);
            s.set("net.wire_bytes", self.nic.bytes());
            s.set("net.link_busy_ps", self.nic.busy());
            s.set(
                "net.epochs",
                self.threads.iter().map(|t| t.remote_epochs).sum(),
            );
            s.set("net.round_trips", self.net_round_trips);
            // A fence that would complete past the cut has waited for its acknowledgement
            // up to the cut.
            let open_ack = |th: &Thread| match (self.stop_at, th.block) {
                (Some(cut), Block::Fence { remote: true, .. })
                    if th.fence_past_cut && th.remote_ack > th.clock =>
                {
                    th.remote_ack
                        .min(cut)
                        .saturating_sub(th.clock.max(th.block_since))
                }
                _ => 0,
            };
            s.set(
                "net.stall_ack_ps",
                self.threads
                    .iter()
                    .map(|t| t.stall_remote_ack + open_ack(t))
                    .sum(),
            );
        }
        if !self.ordering_at_once {
            self.ordering.export_stats(&mut s);
            self.gate.export_stats(&mut s);
            let pb: Ps = self.threads.iter().map(|t| t.stall_persist_buffer).sum();
            s.set("cpu.stall_persist_buffer_ps", pb);
        }
        let mut d = Stats::new();
        self.dram.export_stats(&mut d);
        for (k, v) in d.counters() {
            if k.starts_with("mc.") {
                s.set(format!("dram.{k}"), v);
            }
        }
        s
    }
}

/// Calls `f(line, offset_in_line, offset_in_access, len)` for each 64 B line an access of
/// `size` bytes at `addr` touches.
/// The hierarchy's contents and the PM range, as a write predictor sees them.
struct Lines<'a> {
    hier: &'a Hierarchy,
    pm: (u64, u64),
}

impl LineView for Lines<'_> {
    fn line_bytes(&self, line_addr: u64) -> [u8; 64] {
        self.hier.current_line(line_addr >> 6)
    }

    fn is_pm(&self, addr: u64) -> bool {
        addr >= self.pm.0 && addr < self.pm.1
    }
}

/// `a / b`, 0 when `b` is 0 (a statistic's share or rate).
fn ratio(a: u64, b: u64) -> f64 {
    if b > 0 {
        a as f64 / b as f64
    } else {
        0.0
    }
}

fn for_each_line(addr: u64, size: u16, mut f: impl FnMut(u64, usize, u64, usize)) {
    // Counted in bytes left rather than by an end address, so an access ending at the last
    // byte of the address space keeps it (traces refuse accesses that would run past it).
    let mut left = (size as u64).max(1);
    let mut a = addr;
    while left > 0 {
        let line = a >> 6;
        let off = (a & 63) as usize;
        let len = (64 - off as u64).min(left);
        f(line, off, a - addr, len as usize);
        left -= len;
        a = a.wrapping_add(len);
    }
}

fn span_mask(off: usize, len: usize) -> u64 {
    if len >= 64 {
        u64::MAX
    } else {
        ((1u64 << len) - 1) << off
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retire_clocks_are_exact_for_the_last_ring_of_events_and_the_oldest_kept_before() {
        let mut th = Thread::new(0);
        let n = RETIRE_RING as u64 + 904;
        for e in 1..=n {
            th.clock = e * 10;
            th.retire();
        }
        assert_eq!(th.retired, n);
        // The last RETIRE_RING events: exact.
        for e in [n, n - 1, n - RETIRE_RING as u64 + 1] {
            assert_eq!(th.retired_at(e), e * 10, "event {e}");
        }
        // Further back: the oldest kept (event 905), later than the real clock.
        let oldest = n - RETIRE_RING as u64 + 1;
        assert_eq!(oldest, 905);
        for e in [1, 100, oldest - 1] {
            assert_eq!(th.retired_at(e), oldest * 10, "event {e}");
        }
    }
}
