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

enum MemEvent {
    Decide(u32),
    ReadDone(QueuedRequest, Ps),
    WriteDone(QueuedRequest),
    Arrive(bool, QueuedRequest),
}

/// The whole memory system behind the requesters.
pub struct MemorySystem {
    map: AddressMap,
    channels: Vec<ChannelController>,
    scheduler: Box<dyn Scheduler>,
    bmo: Box<dyn BmoEngine>,
    events: EventQueue<MemEvent>,
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
        self.events.peek_time()
    }

    /// True when requests are queued, in flight or waiting.
    pub fn busy(&self) -> bool {
        !self.events.is_empty() || self.channels.iter().any(|c| c.busy())
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
            ids: vec![req.id],
            line_addr,
            loc,
            arrival: now,
            issued: now,
            data: req.data.into_iter().collect(),
        };
        if req.is_write {
            let delay = self.bmo.write_delay(line_addr, now);
            if delay > 0 {
                self.events.push(now + delay, MemEvent::Arrive(true, q));
                return;
            }
        } else if let Some(plan) = self.channels[ch].device.read_from_buffer(line_addr, now) {
            self.reads_from_buffer += 1;
            self.finish_read(q, plan.data_end);
            return;
        }
        self.offer(ch, req.is_write, q, now);
    }

    fn offer(&mut self, ch: usize, is_write: bool, q: QueuedRequest, now: Ps) {
        let adr_copy = (is_write && self.adr).then(|| q.clone());
        match self.channels[ch].offer(is_write, q.clone()) {
            Admission::Forwarded => self.finish_read(q, now),
            Admission::Waiting => {}
            Admission::Queued => {
                if let Some(w) = adr_copy {
                    self.write_durable(&w, now);
                }
                self.decide_now(ch, now);
            }
        }
    }

    fn finish_read(&mut self, q: QueuedRequest, data_ready: Ps) {
        let t = data_ready + self.bmo.read_delay(q.line_addr, data_ready) + self.frontend;
        if t <= self.now {
            self.ack_all(&q, false, t);
        } else {
            self.events.push(t, MemEvent::ReadDone(q, t));
        }
    }

    fn ack_all(&mut self, q: &QueuedRequest, is_write: bool, t: Ps) {
        for &id in &q.ids {
            self.acks.push(Ack {
                id,
                is_write,
                issued: q.issued,
                time: t,
            });
        }
    }

    /// A write became durable at `t`: update the image and acknowledge it.
    fn write_durable(&mut self, q: &QueuedRequest, t: Ps) {
        for d in &q.data {
            self.image.apply(q.line_addr, d);
        }
        self.ack_all(q, true, t + self.frontend);
    }

    fn decide_now(&mut self, ch: usize, now: Ps) {
        let c = &self.channels[ch];
        if c.decision_at.is_some_and(|d| d <= now) {
            return; // a decision at or before now is already pending
        }
        self.channels[ch].decision_at = None;
        self.run_decision(ch, now);
    }

    fn schedule_decision(&mut self, ch: usize, t: Ps) {
        let c = &mut self.channels[ch];
        if c.decision_at.map_or(true, |d| t < d) {
            c.decision_at = Some(t);
            self.events.push(t, MemEvent::Decide(ch as u32));
        }
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
                        self.events.push(plan.done, MemEvent::WriteDone(request));
                    } else {
                        self.media_writes_done += 1;
                    }
                } else {
                    if plan.outcome != RowOutcome::ReadBuffer {
                        self.channels[ch].device.fill_read_buffer(request.line_addr);
                    }
                    self.finish_read(request, plan.data_end);
                }
                let mut entered = std::mem::take(&mut self.entered);
                self.channels[ch].admit_waiting(now, &mut entered);
                if self.adr {
                    for w in &entered {
                        self.write_durable(w, now);
                    }
                }
                entered.clear();
                self.entered = entered;
                if self.channels[ch].busy() {
                    self.schedule_decision(ch, now + self.tck);
                }
            }
        }
    }

    /// Processes every event due at or before `t` and moves the clock to `t`.
    pub fn advance_to(&mut self, t: Ps) {
        while let Some((time, ev)) = self.events.pop_until(t) {
            self.now = self.now.max(time);
            self.handle(time, ev);
        }
        self.now = self.now.max(t);
    }

    /// Processes the next pending event (and every other event at the same time); returns its
    /// time, or `None` when nothing is pending.
    pub fn step(&mut self) -> Option<Ps> {
        let t = self.events.peek_time()?;
        self.advance_to(t);
        Some(t)
    }

    fn handle(&mut self, time: Ps, ev: MemEvent) {
        match ev {
            MemEvent::Decide(ch) => {
                let ch = ch as usize;
                if self.channels[ch].decision_at == Some(time) {
                    self.channels[ch].decision_at = None;
                    self.run_decision(ch, time);
                }
            }
            MemEvent::ReadDone(q, t) => self.ack_all(&q, false, t),
            MemEvent::WriteDone(q) => {
                self.media_writes_done += 1;
                self.write_durable(&q, time);
            }
            MemEvent::Arrive(is_write, q) => {
                let ch = q.loc.channel as usize;
                self.offer(ch, is_write, q, time);
            }
        }
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
        let mut tot = [0u64; 16];
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
            for (j, (k, v)) in vals.iter().enumerate() {
                if self.channels.len() > 1 {
                    stats.set(format!("mc.ch{i}.{k}"), *v);
                }
                tot[j] += v;
            }
            stats.set(format!("mc.ch{i}.bus_busy_ps"), d.bus_busy_ps);
        }
        let names = [
            "reads_accepted",
            "writes_accepted",
            "writes_coalesced",
            "reads_forwarded",
            "queue_full_waits",
            "drain_episodes",
            "writes_in_drain",
            "device_reads",
            "device_writes",
            "row_hits",
            "row_closed",
            "row_conflicts",
            "media_read_bytes",
            "media_write_bytes",
            "read_buffer_hits",
            "read_buffer_misses",
        ];
        for (k, v) in names.iter().zip(tot) {
            stats.set(format!("mc.{k}"), v);
        }
        stats.set("mc.media_writes_done", self.media_writes_done);
        stats.set("mc.reads_served_by_read_buffer", self.reads_from_buffer);
        stats.set("pm.image_lines", self.image.len() as u64);
    }
}
