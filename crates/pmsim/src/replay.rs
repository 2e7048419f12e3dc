//! Memory-only trace replay: feeds a trace's memory events straight to the memory system.
//!
//! Each trace thread is a requester with its own clock: an event's `gap` advances the clock by
//! that many cycles of `replay.cpu_ghz` (or of the device's command clock with
//! `replay.trace_clock = "memory"`); loads and stores become 64 B reads and writes (there
//! are no caches in this mode, so every store is a memory write and `clwb`/`clflushopt` have no
//! further effect); at most `replay.max_outstanding` requests per thread are in flight; fences
//! go through the ordering plug-in (x86: stall until the thread's writes are acknowledged).
//! Events are consumed in trace order, so a stalled thread also delays the events of other
//! threads behind it in the file (a single in-order feeder; the full-system core model replaces
//! this). Memory use is independent of trace length.

use crate::config::SimConfig;
use crate::image::{LineData, PmImage};
use crate::memsys::{Ack, MemRequest, MemorySystem, MemoryView};
use crate::ordering::{FenceAction, OrderingModel, Persist, PersistGate};
use crate::plugins::Plugins;
use crate::stats::{Histogram, Stats};
use crate::time::{ps_to_ns, Ps};
use pmtrace::{Op, TraceEvent};
use std::fmt;

/// Largest thread count a replay accepts.
pub const MAX_THREADS: usize = 4096;

/// Why a replay stopped with an error.
#[derive(Debug)]
pub enum ReplayError {
    /// The trace could not be read.
    Trace(String),
    /// The trace asks for something the simulator cannot do.
    Invalid(String),
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::Trace(m) => write!(f, "trace: {m}"),
            ReplayError::Invalid(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for ReplayError {}

#[derive(Clone, Debug, Default)]
struct ThreadState {
    clock: Ps,
    outstanding: u32,
    outstanding_writes: u32,
    fence_stall: Ps,
    fences: u64,
    /// `RdmaPwrite`s since the thread's last fence (an open verb: the fence closes its
    /// barrier region).
    remote_open: bool,
    /// Events of the thread consumed so far.
    events: u64,
    /// When the thread's latest acknowledgement of any request reaches it. With
    /// `controller.frontend_ns` > 0 an acknowledgement is known before it arrives (a write is
    /// durable, its acknowledgement still travels back): a fence's wait ends at this time.
    acked_until: Ps,
    /// [`acked_until`](Self::acked_until) for the thread's writes only (an `sfence`'s wait).
    writes_acked_until: Ps,
    /// The earliest arrival of an acknowledgement taken while the thread waits (`Ps::MAX`
    /// when none): a full request window has a slot from then.
    first_ack_in_wait: Ps,
}

/// Ids carry their thread in the low 16 bits and a write flag in bit 16.
const ID_THREAD_BITS: u32 = 16;
const ID_WRITE_BIT: u64 = 1 << ID_THREAD_BITS;

/// Results of a replay.
#[derive(Clone, Debug)]
pub struct ReplaySummary {
    /// Trace events consumed.
    pub events: u64,
    /// Memory reads issued.
    pub reads: u64,
    /// Memory writes issued.
    pub writes: u64,
    /// Simulated time at which the last thread finished and every request was acknowledged.
    pub sim_time: Ps,
    /// Whether the run stopped early at a crash point.
    pub crashed: bool,
}

/// A memory-only replay in progress.
pub struct Replay {
    mem: MemorySystem,
    ordering: Box<dyn OrderingModel>,
    /// [`OrderingModel::releases_at_once`]: persists go straight to memory, no calls.
    ordering_passthrough: bool,
    threads: Vec<ThreadState>,
    cycle: Ps,
    max_outstanding: u32,
    next_seq: u64,
    /// Persists the ordering model holds back.
    gate: PersistGate<MemRequest>,
    read_latency: Histogram,
    write_latency: Histogram,
    events: u64,
    reads: u64,
    writes: u64,
    flushes: u64,
    tx_begins: u64,
    tx_ends: u64,
    computes: u64,
    last_ack: Ps,
    writes_acked: u64,
    /// Acknowledgements that would arrive after the crash point (durable before it, their
    /// return path cut): not counted as acknowledged, and the run counts as cut.
    acks_past_cut: u64,
    /// `controller.frontend_ns` > 0: a write's acknowledgement arrives after the write is
    /// durable, so waits follow the acknowledgements' times (skipped without a front end).
    delayed_acks: bool,
    stop_at: Option<Ps>,
    /// Whether the run was cut at `stop_at` with work left (a run that ended before it was not).
    cut: bool,
    ack_log: Option<Vec<Ack>>,
}

impl Replay {
    /// A replay over a fresh memory system built from `cfg`.
    pub fn new(cfg: &SimConfig) -> Result<Replay, ReplayError> {
        let p = Plugins::build(cfg).map_err(ReplayError::Invalid)?;
        Replay::check_config(cfg).map_err(ReplayError::Invalid)?;
        Ok(Replay {
            mem: MemorySystem::new(cfg, p.scheduler, p.bmo),
            ordering_passthrough: p.ordering.releases_at_once(),
            ordering: p.ordering,
            threads: Vec::new(),
            cycle: cfg.trace_cycle_ps(cfg.replay.trace_clock),
            max_outstanding: cfg.replay.max_outstanding,
            next_seq: 0,
            gate: PersistGate::default(),
            read_latency: Histogram::default(),
            write_latency: Histogram::default(),
            events: 0,
            reads: 0,
            writes: 0,
            flushes: 0,
            tx_begins: 0,
            tx_ends: 0,
            computes: 0,
            last_ack: 0,
            writes_acked: 0,
            acks_past_cut: 0,
            delayed_acks: cfg.controller.frontend_ns > 0.0,
            stop_at: None,
            cut: false,
            ack_log: None,
        })
    }

    /// Checks what a (validated) config needs of the memory-only replay beyond validation, without
    /// building it: so a sweep finds a config this model cannot run before its first job.
    pub fn check_config(cfg: &SimConfig) -> Result<(), String> {
        if !crate::plugins::logging(&cfg.controller.logging)?.is_passive() {
            // Hardware logging works on cache lines, commits and write-backs: it needs the
            // caches of the full system.
            return Err(format!(
                "controller.logging = \"{}\" needs the full-system model (system.model = \"full\"); \
                 the memory-only replay has no caches to log from",
                cfg.controller.logging
            ));
        }
        Ok(())
    }

    /// Stops the replay at simulated time `t` (a power failure): nothing after `t` happens.
    pub fn crash_at(mut self, t: Ps) -> Self {
        self.stop_at = Some(t);
        self
    }

    /// Keeps every acknowledgement (for tests and crash oracles).
    pub fn record_acks(mut self) -> Self {
        self.ack_log = Some(Vec::new());
        self
    }

    /// The acknowledgements recorded by [`record_acks`](Self::record_acks), in processing order.
    pub fn ack_log(&self) -> &[Ack] {
        self.ack_log.as_deref().unwrap_or(&[])
    }

    /// Position of a request among all memory requests the replay issued (0-based, in trace
    /// order), recovered from its acknowledgement id.
    pub fn request_seq(id: u64) -> u64 {
        id >> (ID_THREAD_BITS + 1)
    }

    /// The memory system.
    pub fn memory(&self) -> &MemorySystem {
        &self.mem
    }

    /// What survives a power failure at the current time.
    pub fn durable_image(&self) -> &PmImage {
        self.mem.durable_image()
    }

    fn limit(&self) -> Ps {
        self.stop_at.unwrap_or(Ps::MAX)
    }

    /// Takes the memory system's new acknowledgements, if any.
    #[inline]
    fn absorb_acks(&mut self) {
        if self.mem.has_acks() {
            self.absorb_new_acks();
        }
    }

    #[inline(always)]
    fn absorb_new_acks(&mut self) {
        let limit = self.limit();
        for a in self.mem.acks() {
            let th = &mut self.threads[(a.id & 0xffff) as usize];
            th.outstanding -= 1;
            th.outstanding_writes -= u32::from(a.is_write);
            if self.delayed_acks {
                th.acked_until = th.acked_until.max(a.time);
                th.first_ack_in_wait = th.first_ack_in_wait.min(a.time);
                if a.is_write {
                    th.writes_acked_until = th.writes_acked_until.max(a.time);
                }
                if a.time > limit {
                    // Durable before the cut (the image has it), acknowledged after it: a
                    // wait for it ends the run at the cut.
                    self.acks_past_cut += 1;
                    continue;
                }
            }
            if a.is_write {
                self.writes_acked += 1;
                self.write_latency.record(a.time - a.issued);
                if !self.ordering_passthrough {
                    self.gate
                        .acked(self.ordering.as_mut(), a.id, a.time, &self.mem);
                }
            } else {
                self.read_latency.record(a.time - a.issued);
            }
            self.last_ack = self.last_ack.max(a.time);
            if let Some(log) = self.ack_log.as_mut() {
                log.push(*a);
            }
        }
        self.mem.clear_acks();
        if self.gate.has_released() {
            self.submit_released();
        }
    }

    fn submit_released(&mut self) {
        let mem = &mut self.mem;
        self.gate.take_released(|req| {
            let now = mem.now();
            mem.submit(req, now);
        });
    }

    /// Advances the memory system until an acknowledgement arrives (nothing else can change a
    /// waiting thread's state); returns false when the crash point is reached.
    #[inline]
    fn wait_step(&mut self) -> Result<bool, ReplayError> {
        if self.mem.step_until_ack(self.limit()) {
            self.absorb_acks();
            Ok(true)
        } else if self.mem.next_event_time().is_some() {
            Ok(false)
        } else {
            Err(ReplayError::Invalid(
                "internal: a thread waits for an acknowledgement but the memory system is idle"
                    .into(),
            ))
        }
    }

    /// Waits (in simulated time) until `cond` holds for thread `t`, and then, with delayed
    /// acknowledgements, until `until` of the thread's state (a fence: its requests'
    /// acknowledgements) and, when it had to wait for an acknowledgement, until the first one
    /// arrived; returns false if the crash point was reached first. (Inlined: the request
    /// window's wait runs per request.)
    #[inline(always)]
    fn wait_for(
        &mut self,
        t: usize,
        cond: impl Fn(&ThreadState) -> bool,
        until: impl Fn(&ThreadState) -> Ps,
    ) -> Result<bool, ReplayError> {
        let mut waited = false;
        if self.delayed_acks {
            self.threads[t].first_ack_in_wait = Ps::MAX;
        }
        while !cond(&self.threads[t]) {
            waited = true;
            if !self.wait_step()? {
                return Ok(false);
            }
        }
        let now = self.mem.now();
        let th = &mut self.threads[t];
        th.clock = th.clock.max(now);
        if self.delayed_acks {
            let arrival = if waited && th.first_ack_in_wait != Ps::MAX {
                th.first_ack_in_wait.max(until(th))
            } else {
                until(th)
            };
            if arrival > self.stop_at.unwrap_or(Ps::MAX) {
                return Ok(false);
            }
            th.clock = th.clock.max(arrival);
        }
        Ok(true)
    }

    #[inline(always)]
    fn issue(
        &mut self,
        t: usize,
        addr: u64,
        is_write: bool,
        remote: bool,
        data: Option<LineData>,
    ) -> bool {
        let seq = self.next_seq;
        self.next_seq += 1;
        let id = (seq << (ID_THREAD_BITS + 1)) | if is_write { ID_WRITE_BIT } else { 0 } | t as u64;
        let th = &mut self.threads[t];
        th.outstanding += 1;
        let now = th.clock.max(self.mem.now());
        let req = MemRequest {
            id,
            addr,
            is_write,
            data,
            holds_entry: false,
        };
        if is_write {
            th.outstanding_writes += 1;
            self.writes += 1;
            if self.ordering_passthrough {
                self.mem.submit(req, now);
                self.absorb_acks();
                return true;
            }
            let p = Persist {
                id,
                thread: t as u16,
                line_addr: addr & !63,
                bank: self.mem.bank_of(addr) as u32,
                remote,
            };
            if let Some(req) = self
                .gate
                .offer(self.ordering.as_mut(), p, now, &self.mem, req)
            {
                self.mem.submit(req, now);
            }
            if self.gate.has_released() {
                self.submit_released();
            }
        } else {
            self.reads += 1;
            self.mem.submit(req, now);
        }
        // Acknowledgements that were immediate (ADR, forwarding) arrive now.
        self.absorb_acks();
        true
    }

    /// Replays events until the trace ends (or the crash point); `progress` is called with the
    /// number of events consumed every 2^16 events.
    pub fn run<I>(
        &mut self,
        events: I,
        mut progress: impl FnMut(u64),
    ) -> Result<ReplaySummary, ReplayError>
    where
        I: IntoIterator<Item = Result<TraceEvent, pmtrace::TraceError>>,
    {
        let limit = self.limit();
        let mut crashed = false;
        for ev in events {
            let ev = ev.map_err(|e| ReplayError::Trace(e.to_string()))?;
            self.events += 1;
            if self.events & 0xffff == 0 {
                progress(self.events);
            }
            let t = ev.thread as usize;
            if t >= self.threads.len() {
                if t >= MAX_THREADS {
                    return Err(ReplayError::Invalid(format!(
                        "event {}: thread {t} exceeds the {MAX_THREADS}-thread limit",
                        self.events
                    )));
                }
                self.threads.resize(t + 1, ThreadState::default());
            }
            let th = &mut self.threads[t];
            th.events += 1;
            th.clock = th.clock.saturating_add(ev.gap as Ps * self.cycle);
            if th.clock > limit {
                crashed = true;
                break;
            }
            let now = th.clock;
            if self.mem.next_event_time().is_some_and(|t| t <= now) {
                self.mem.advance_to(now);
                self.absorb_acks();
            }
            let ok = match ev.op {
                Op::Load | Op::Store | Op::NtStore | Op::RdmaPwrite => {
                    match self.issue_access(t, &ev)? {
                        true => {
                            if ev.op == Op::RdmaPwrite {
                                self.threads[t].remote_open = true;
                            }
                            true
                        }
                        false => {
                            crashed = true;
                            break;
                        }
                    }
                }
                Op::Clwb | Op::Clflushopt => {
                    self.flushes += 1;
                    true
                }
                Op::Sfence | Op::Mfence => {
                    self.threads[t].fences += 1;
                    if std::mem::take(&mut self.threads[t].remote_open)
                        && !self.ordering_passthrough
                    {
                        // The verb's data block is one barrier region (PPO Sec. IV-C).
                        self.ordering.on_remote_epoch_end(ev.thread);
                    }
                    match self.ordering.on_fence(ev.thread) {
                        FenceAction::Proceed => true,
                        FenceAction::StallUntilDrained => {
                            let start = self.threads[t].clock;
                            let full = ev.op == Op::Mfence;
                            let ok = self.wait_for(
                                t,
                                |th| {
                                    if full {
                                        th.outstanding == 0
                                    } else {
                                        th.outstanding_writes == 0
                                    }
                                },
                                |th| {
                                    if full {
                                        th.acked_until
                                    } else {
                                        th.writes_acked_until
                                    }
                                },
                            )?;
                            let th = &mut self.threads[t];
                            th.fence_stall += th.clock - start;
                            ok
                        }
                    }
                }
                Op::TxBegin => {
                    self.tx_begins += 1;
                    true
                }
                Op::TxEnd => {
                    self.tx_ends += 1;
                    true
                }
                Op::Compute => {
                    self.computes += 1;
                    true
                }
                // A memory request stream has no write predictor to tell.
                Op::Hint => true,
                // Events run in trace order, where the awaited events come first (checked):
                // the thread goes on no earlier than the other thread's clock now (later than
                // the awaited event's when the other thread ran on past it).
                Op::Await => {
                    let (src, count) = ev.awaited().unwrap_or((0, 0));
                    let (before, other) = self
                        .threads
                        .get(src as usize)
                        .map_or((0, 0), |o| (o.events, o.clock));
                    crate::system::demux::check_await_order(self.events, t, src, count, before)
                        .map_err(ReplayError::Invalid)?;
                    let th = &mut self.threads[t];
                    th.clock = th.clock.max(other);
                    true
                }
            };
            if !ok {
                crashed = true;
                break;
            }
        }
        if !crashed {
            // Drain: every request in flight is acknowledged (or the crash point comes first).
            while self.mem.step_until(limit).is_some() {
                self.absorb_acks();
            }
            crashed = self.mem.next_event_time().is_some() || self.acks_past_cut > 0;
        }
        if let Some(t) = self.stop_at {
            self.mem.advance_to(t);
            self.absorb_acks();
        }
        self.cut = crashed;
        progress(self.events);
        Ok(ReplaySummary {
            events: self.events,
            reads: self.reads,
            writes: self.writes,
            sim_time: self.sim_time(),
            crashed,
        })
    }

    /// Issues one 64 B memory request per line the access touches (an unaligned or large access
    /// spans several lines), each carrying its part of the stored value when the value is known.
    /// Returns false when the crash point was reached.
    #[inline(always)]
    fn issue_access(&mut self, t: usize, ev: &TraceEvent) -> Result<bool, ReplayError> {
        let is_write = ev.op != Op::Load;
        let size = (ev.size as u64).max(1);
        let first = ev.addr & !63;
        let last = (ev.addr.saturating_add(size - 1)) & !63;
        // Only writes carry data (taken without a branch: loads and stores come in random
        // order).
        let value = ev.value_bytes();
        let value = &value[..value.len() * is_write as usize];
        let mut line = first;
        loop {
            let max = self.max_outstanding;
            if !self.wait_for(t, |th| th.outstanding < max, |_| 0)? {
                return Ok(false);
            }
            let data = if !value.is_empty() {
                let start = ev.addr.max(line);
                let end = (ev.addr + value.len() as u64).min(line + 64);
                (start < end).then(|| {
                    let part = &value[(start - ev.addr) as usize..(end - ev.addr) as usize];
                    LineData::new(start, part).expect("part lies within one line")
                })
            } else {
                None
            };
            self.issue(
                t,
                line.max(ev.addr),
                is_write,
                ev.op == Op::RdmaPwrite,
                data,
            );
            if line >= last {
                return Ok(true);
            }
            line += 64;
        }
    }

    /// The replay's simulated time: the cut, or when the last request was acknowledged (also
    /// under a cut that came after that).
    fn sim_time(&self) -> Ps {
        let end = self.threads.iter().map(|t| t.clock).max().unwrap_or(0);
        crate::time::run_time(end.max(self.last_ack), self.stop_at, self.cut)
    }

    /// All statistics of the run: replay figures under `replay.`, memory system under `mc.`.
    pub fn stats(&self) -> Stats {
        let mut s = Stats::new();
        let time = self.sim_time();
        s.set("sim.time_ps", time);
        s.set("replay.events", self.events);
        s.set("replay.reads", self.reads);
        s.set("replay.writes", self.writes);
        s.set("replay.writes_acknowledged", self.writes_acked);
        s.set("replay.flushes", self.flushes);
        s.set("replay.tx_begins", self.tx_begins);
        s.set("replay.tx_ends", self.tx_ends);
        s.set("replay.computes", self.computes);
        s.set("replay.threads", self.threads.len() as u64);
        let fences: u64 = self.threads.iter().map(|t| t.fences).sum();
        let stall: Ps = self.threads.iter().map(|t| t.fence_stall).sum();
        s.set("replay.fences", fences);
        s.set("replay.fence_stall_ps", stall);
        let secs = time as f64 * 1e-12;
        let bytes = (self.reads + self.writes) as f64 * 64.0;
        s.set_value(
            "replay.bandwidth_gbps",
            if secs > 0.0 { bytes / secs / 1e9 } else { 0.0 },
        );
        s.set_value(
            "replay.read_latency_ns_mean",
            ps_to_ns(self.read_latency.mean() as Ps),
        );
        s.set_value(
            "replay.write_ack_latency_ns_mean",
            ps_to_ns(self.write_latency.mean() as Ps),
        );
        s.set_histogram("replay.read_latency_ps", self.read_latency.clone());
        s.set_histogram("replay.write_ack_latency_ps", self.write_latency.clone());
        self.mem.export_stats(&mut s);
        // From acceptance into the controller's queue, as DRAMsim3 and Ramulator count: the
        // latencies above less the controller's total wait from issue to acceptance (over
        // accepted requests: after a crash, a few accepted requests are not acknowledged).
        let from_accept = |h: &Histogram, wait: u64| {
            if h.count() == 0 {
                0.0
            } else {
                (h.mean() - wait as f64 / h.count() as f64).max(0.0) / 1000.0
            }
        };
        let read_wait = s.counter("mc.read_queue_wait_ps");
        let write_wait = s.counter("mc.write_queue_wait_ps");
        s.set_value(
            "replay.read_latency_accepted_ns_mean",
            from_accept(&self.read_latency, read_wait),
        );
        s.set_value(
            "replay.write_ack_latency_accepted_ns_mean",
            from_accept(&self.write_latency, write_wait),
        );
        if !self.ordering_passthrough {
            self.ordering.export_stats(&mut s);
        }
        let host_reads = self.reads * 64;
        if host_reads > 0 {
            let media = s.counter("mc.media_read_bytes");
            s.set_value("mc.read_amplification", media as f64 / host_reads as f64);
        }
        s
    }
}
