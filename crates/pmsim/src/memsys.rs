//! The memory system: one controller and device per channel, the PM-support engine, the event
//! queue that drives them, acknowledgements to requesters, and the durable [`PmImage`].
//!
//! Requesters call [`MemorySystem::submit`] at their current time after bringing the memory
//! system up to that time with [`MemorySystem::advance_to`]; acknowledgements come back through
//! [`MemorySystem::take_acks`]. A write is acknowledged when it is durable: on acceptance into
//! the WPQ when ADR is on, when the media write finishes otherwise. Reads are acknowledged when
//! their data returns. Reads that hit a WPQ entry or the device read buffer are answered at once,
//! without queue traffic.

use crate::bmo::BmoEngine;
use crate::config::SimConfig;
use crate::controller::{Admission, ChannelController, Decision, QueuedRequest};
use crate::device::{AddressMap, ChannelDevice, RowOutcome, LINE_BYTES};
use crate::event::EventQueue;
use crate::image::{LineData, PmImage};
use crate::scheduler::Scheduler;
use crate::stats::Stats;
use crate::time::{ns_to_ps, Ps};
use std::collections::VecDeque;

/// A request from a requester.
#[derive(Clone, Copy, Debug)]
pub struct MemRequest {
    /// Requester-chosen id, returned in the acknowledgement.
    pub id: u64,
    /// Byte address (the request covers the 64 B line holding it).
    pub addr: u64,
    /// Write (persist) or read.
    pub is_write: bool,
    /// The bytes written, when known (functional simulation).
    pub data: Option<LineData>,
}

/// An acknowledgement to a requester.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    /// The request's id.
    pub id: u64,
    /// Whether it was a write.
    pub is_write: bool,
    /// When the request was submitted.
    pub issued: Ps,
    /// When it is acknowledged (read data usable / write durable).
    pub time: Ps,
}

/// Work scheduled on the shared event queue (anything not in a channel's completion FIFOs).
enum MemEvent {
    ReadDone { id: u64, issued: Ps },
    WriteDone(Box<QueuedRequest>),
    Arrive(bool, Box<QueuedRequest>),
}

/// Completions of one channel. Requests finish in data-bus order, so read completions (data
/// end) and media-write completions (data end + tWR) are each non-decreasing in time: FIFOs
/// replace heap traffic for them. Anything out of order goes to the shared event queue.
#[derive(Default)]
struct Completions {
    reads: VecDeque<(Ps, u64, Ps)>,
    writes: VecDeque<(Ps, QueuedRequest)>,
}

/// Where the next event comes from; ties go to the earlier source in this order.
#[derive(Clone, Copy)]
enum Source {
    Queue,
    Write(usize),
    Read(usize),
    Decide(usize),
}

/// The whole memory system behind the requesters.
pub struct MemorySystem {
    map: AddressMap,
    channels: Vec<ChannelController>,
    scheduler: Box<dyn Scheduler>,
    bmo: Box<dyn BmoEngine>,
    events: EventQueue<MemEvent>,
    completions: Vec<Completions>,
    image: PmImage,
    acks: Vec<Ack>,
    entered: Vec<QueuedRequest>,
    adr: bool,
    frontend: Ps,
    tck: Ps,
    now: Ps,
    media_writes_done: u64,
    reads_from_buffer: u64,
}

impl MemorySystem {
    /// Builds the memory system a (validated) config describes, with the given plug-ins.
    pub fn new(
        cfg: &SimConfig,
        scheduler: Box<dyn Scheduler>,
        bmo: Box<dyn BmoEngine>,
    ) -> MemorySystem {
        let channels = (0..cfg.device.channels)
            .map(|_| ChannelController::new(&cfg.controller, ChannelDevice::new(&cfg.device)))
            .collect();
        MemorySystem {
            map: AddressMap::new(&cfg.device),
            channels,
            scheduler,
            bmo,
            events: EventQueue::new(),
            completions: (0..cfg.device.channels)
                .map(|_| Completions::default())
                .collect(),
            image: PmImage::new(),
            acks: Vec::new(),
            entered: Vec::new(),
            adr: cfg.controller.adr,
            frontend: ns_to_ps(cfg.controller.frontend_ns),
            tck: cfg.device.timing.to_ps().tck.max(1),
            now: 0,
            media_writes_done: 0,
            reads_from_buffer: 0,
        }
    }

    /// Current time of the memory system.
    pub fn now(&self) -> Ps {
        self.now
    }

    /// Time of the next pending event.
    pub fn next_event_time(&self) -> Option<Ps> {
        self.next_source().map(|(t, _)| t)
    }

    #[inline]
    fn next_source(&self) -> Option<(Ps, Source)> {
        // Sentinel arithmetic instead of Options: this runs once per event.
        let mut best_t = self.events.peek_time().unwrap_or(Ps::MAX);
        let mut best = Source::Queue;
        for (i, c) in self.completions.iter().enumerate() {
            if let Some(&(t, _)) = c.writes.front() {
                if t < best_t {
                    best_t = t;
                    best = Source::Write(i);
                }
            }
            if let Some(&(t, _, _)) = c.reads.front() {
                if t < best_t {
                    best_t = t;
                    best = Source::Read(i);
                }
            }
            let d = self.channels[i].decision_at.unwrap_or(Ps::MAX);
            if d < best_t {
                best_t = d;
                best = Source::Decide(i);
            }
        }
        if best_t == Ps::MAX && self.events.is_empty() {
            None
        } else {
            Some((best_t, best))
        }
    }

    /// True when requests are queued, in flight or waiting.
    pub fn busy(&self) -> bool {
        !self.events.is_empty()
            || self
                .channels
                .iter()
                .any(|c| c.busy() || c.decision_at.is_some())
            || self
                .completions
                .iter()
                .any(|c| !c.reads.is_empty() || !c.writes.is_empty())
    }

    /// The per-channel controllers (for inspection and tests).
    pub fn channels(&self) -> &[ChannelController] {
        &self.channels
    }

    /// The address map.
    pub fn address_map(&self) -> &AddressMap {
        &self.map
    }

    /// Submits a request at time `now` (not earlier than [`now`](Self::now)).
    pub fn submit(&mut self, req: MemRequest, now: Ps) {
        debug_assert!(now >= self.now, "submit in the past");
        self.now = self.now.max(now);
        let now = self.now;
        let line_addr = req.addr - req.addr % LINE_BYTES;
        let loc = self.map.locate(line_addr);
        let ch = loc.channel as usize;
        let q = QueuedRequest {
            id: req.id,
            line_addr,
            loc,
            arrival: now,
            issued: now,
            payload: req.data.map(|d| {
                Box::new(crate::controller::Payload {
                    merged: Vec::new(),
                    data: vec![d],
                })
            }),
        };
        if req.is_write {
            let delay = self.bmo.write_delay(line_addr, now);
            if delay > 0 {
                self.events
                    .push(now + delay, MemEvent::Arrive(true, Box::new(q)));
                return;
            }
        } else if let Some(plan) = self.channels[ch].device.read_from_buffer(line_addr, now) {
            self.reads_from_buffer += 1;
            self.finish_read(ch, &q, plan.data_end);
            return;
        }
        self.offer(ch, req.is_write, q, now);
    }

    fn offer(&mut self, ch: usize, is_write: bool, mut q: QueuedRequest, now: Ps) {
        if !is_write && self.channels[ch].forward_read(q.line_addr) {
            self.finish_read(ch, &q, now);
            return;
        }
        if is_write && self.adr && self.channels[ch].would_accept(true, q.line_addr) {
            // Accepted into the ADR domain now: durable and acknowledged at once; the queue
            // entry no longer needs the data.
            self.write_durable(&q, now);
            q.payload = None;
        }
        let loc = q.loc;
        if self.channels[ch].offer(is_write, q) == Admission::Queued {
            self.decide_now(ch, now, &loc);
        }
    }

    fn finish_read(&mut self, ch: usize, q: &QueuedRequest, data_ready: Ps) {
        let t = data_ready + self.bmo.read_delay(q.line_addr, data_ready) + self.frontend;
        let fifo = &mut self.completions[ch].reads;
        if t <= self.now {
            self.ack(q.id, false, q.issued, t);
        } else if fifo.back().is_none_or(|b| b.0 <= t) {
            fifo.push_back((t, q.id, q.issued));
        } else {
            self.events.push(
                t,
                MemEvent::ReadDone {
                    id: q.id,
                    issued: q.issued,
                },
            );
        }
    }

    fn ack(&mut self, id: u64, is_write: bool, issued: Ps, time: Ps) {
        self.acks.push(Ack {
            id,
            is_write,
            issued,
            time,
        });
    }

    fn ack_all(&mut self, q: &QueuedRequest, is_write: bool, t: Ps) {
        self.ack(q.id, is_write, q.issued, t);
        for i in 0..q.merged().len() {
            self.ack(q.merged()[i], is_write, q.issued, t);
        }
    }

    /// A write became durable at `t`: update the image and acknowledge it.
    fn write_durable(&mut self, q: &QueuedRequest, t: Ps) {
        for d in q.data() {
            self.image.apply(q.line_addr, d);
        }
        self.ack_all(q, true, t + self.frontend);
    }

    /// A request entered channel `ch` at `now`: make sure a decision happens no later than the
    /// time it could issue. Nothing else in the queue became ready earlier, so a pending
    /// decision that is due sooner already covers it.
    fn decide_now(&mut self, ch: usize, now: Ps, loc: &crate::device::Location) {
        let (ready, _) = self.channels[ch].device.readiness(loc, now);
        if self.channels[ch].decision_at.is_some_and(|d| d <= ready) {
            return;
        }
        if ready <= now {
            self.channels[ch].decision_at = None;
            self.run_decision(ch, now);
        } else {
            self.schedule_decision(ch, ready);
        }
    }

    fn schedule_decision(&mut self, ch: usize, t: Ps) {
        let c = &mut self.channels[ch];
        c.decision_at = Some(c.decision_at.map_or(t, |d| d.min(t)));
    }

    fn run_decision(&mut self, ch: usize, now: Ps) {
        let decision = self.channels[ch].decide(self.scheduler.as_mut(), now);
        match decision {
            Decision::Idle => {}
            Decision::WaitUntil(t) => self.schedule_decision(ch, t),
            Decision::Issued {
                request,
                plan,
                is_write,
            } => {
                if is_write {
                    if !self.adr {
                        let fifo = &mut self.completions[ch].writes;
                        if fifo.back().is_none_or(|b| b.0 <= plan.done) {
                            fifo.push_back((plan.done, request));
                        } else {
                            self.events
                                .push(plan.done, MemEvent::WriteDone(Box::new(request)));
                        }
                    } else {
                        self.media_writes_done += 1;
                    }
                } else {
                    if plan.outcome != RowOutcome::ReadBuffer {
                        self.channels[ch].device.fill_read_buffer(request.line_addr);
                    }
                    self.finish_read(ch, &request, plan.data_end);
                }
                let mut entered = std::mem::take(&mut self.entered);
                self.channels[ch].admit_waiting(now, self.adr, &mut entered);
                for w in &entered {
                    self.write_durable(w, now);
                }
                entered.clear();
                self.entered = entered;
                // One request per command clock; skip straight to the first time something
                // can issue, so idle decisions are never taken.
                if let Some(t) = self.channels[ch].next_ready(now + self.tck) {
                    self.schedule_decision(ch, t);
                }
            }
        }
    }

    /// Processes every event due at or before `t` and moves the clock to `t`.
    pub fn advance_to(&mut self, t: Ps) {
        while self.step_until(t).is_some() {}
        self.now = self.now.max(t);
    }

    /// Processes the next pending event if it is due at or before `limit`; returns its time.
    pub fn step_until(&mut self, limit: Ps) -> Option<Ps> {
        let (time, src) = self.next_source()?;
        if time > limit {
            return None;
        }
        self.now = self.now.max(time);
        match src {
            Source::Queue => {
                let (time, ev) = self.events.pop().expect("peeked");
                self.handle(time, ev);
            }
            Source::Write(ch) => {
                let (_, q) = self.completions[ch].writes.pop_front().expect("peeked");
                self.media_writes_done += 1;
                self.write_durable(&q, time);
            }
            Source::Read(ch) => {
                let (_, id, issued) = self.completions[ch].reads.pop_front().expect("peeked");
                self.ack(id, false, issued, time);
            }
            Source::Decide(ch) => {
                self.channels[ch].decision_at = None;
                self.run_decision(ch, time);
            }
        }
        Some(time)
    }

    /// Processes the next pending event; returns its time, or `None` when nothing is pending.
    pub fn step(&mut self) -> Option<Ps> {
        self.step_until(Ps::MAX)
    }

    fn handle(&mut self, time: Ps, ev: MemEvent) {
        match ev {
            MemEvent::ReadDone { id, issued } => self.ack(id, false, issued, time),
            MemEvent::WriteDone(q) => {
                self.media_writes_done += 1;
                self.write_durable(&q, time);
            }
            MemEvent::Arrive(is_write, q) => {
                let ch = q.loc.channel as usize;
                self.offer(ch, is_write, *q, time);
            }
        }
    }

    /// True when acknowledgements are waiting to be taken.
    #[inline]
    pub fn has_acks(&self) -> bool {
        !self.acks.is_empty()
    }

    /// Moves the acknowledgements produced so far into `out`.
    pub fn take_acks(&mut self, out: &mut Vec<Ack>) {
        out.append(&mut self.acks);
    }

    /// What survives a power failure now: media contents, plus every write accepted into the
    /// WPQ when ADR is on (the ADR domain drains on power loss). Caches are not part of this
    /// memory-only system.
    pub fn durable_image(&self) -> &PmImage {
        &self.image
    }

    /// Exports statistics under `mc.` (totals) and `mc.chN.` (per channel).
    pub fn export_stats(&self, stats: &mut Stats) {
        let multi = self.channels.len() > 1;
        for (i, c) in self.channels.iter().enumerate() {
            let d = &c.device.stats;
            let s = &c.stats;
            let (rb_hits, rb_misses) = c
                .device
                .read_buffer()
                .map_or((0, 0), |b| (b.hits, b.misses));
            let vals = [
                ("reads_accepted", s.reads_accepted),
                ("writes_accepted", s.writes_accepted),
                ("writes_coalesced", s.writes_coalesced),
                ("reads_forwarded", s.reads_forwarded),
                ("queue_full_waits", s.queue_full_waits),
                ("drain_episodes", s.drain_episodes),
                ("writes_in_drain", s.writes_in_drain),
                ("decisions", s.decisions),
                ("device_reads", d.reads),
                ("device_writes", d.writes),
                ("row_hits", d.row_hits),
                ("row_closed", d.row_closed),
                ("row_conflicts", d.row_conflicts),
                ("media_read_bytes", d.media_read_bytes),
                ("media_write_bytes", d.media_write_bytes),
                ("read_buffer_hits", rb_hits),
                ("read_buffer_misses", rb_misses),
            ];
            for (k, v) in vals {
                if multi {
                    stats.set(format!("mc.ch{i}.{k}"), v);
                }
                stats.add(format!("mc.{k}"), v);
            }
            stats.set(format!("mc.ch{i}.bus_busy_ps"), d.bus_busy_ps);
        }
        stats.set("mc.media_writes_done", self.media_writes_done);
        stats.set("sim.events_scheduled", self.events.scheduled());
        stats.set("mc.reads_served_by_read_buffer", self.reads_from_buffer);
        stats.set("pm.image_lines", self.image.len() as u64);
    }
}
