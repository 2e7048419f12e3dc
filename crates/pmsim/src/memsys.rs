//! The memory system: one controller and device per channel, the PM-support engine, the event
//! queue that drives them, acknowledgements to requesters, and the durable [`PmImage`].
//!
//! Requesters call [`MemorySystem::submit`] at their current time after bringing the memory
//! system up to that time with [`MemorySystem::advance_to`]; acknowledgements come back through
//! [`MemorySystem::take_acks`]. A write is acknowledged when it is durable: on acceptance into
//! the WPQ when ADR is on, when the media write finishes otherwise. Reads are acknowledged when
//! their data returns. Reads that hit a WPQ entry or the device read buffer are answered at once,
//! without queue traffic.

use crate::bmo::{BmoEngine, Precomputed};
use crate::config::SimConfig;
use crate::controller::{Admission, ChannelController, Decision, Payload, QueuedRequest};
use crate::dense::Dense;
use crate::device::{AddressMap, ChannelDevice, RowOutcome, LINE_BYTES};
use crate::event::EventQueue;
use crate::image::{LineData, PmImage};
use crate::scheduler::Scheduler;
use crate::stats::Stats;
use crate::time::{ns_to_ps, Ps};
use std::collections::hash_map::Entry;
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
    /// A write that takes the WPQ entry [`MemorySystem::reserve_entry`] kept for it.
    pub holds_entry: bool,
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
#[derive(Clone)]
enum MemEvent {
    ReadDone {
        id: u64,
        issued: Ps,
    },
    WriteDone(Box<QueuedRequest>),
    Arrive(bool, Box<QueuedRequest>),
    /// A write whose media write the PM-support engine made unnecessary (a deduplicated
    /// line) is through the engine.
    ArriveNoMedia(Box<QueuedRequest>),
}

/// A channel's completions. Requests finish in data-bus order, so read completions (data end)
/// and media-write completions (data end + tWR) are each non-decreasing in time: FIFOs replace
/// heap traffic for them. Anything out of order goes to the shared event queue. The times of
/// their first entries are in [`MemorySystem::due`].
#[derive(Clone)]
struct Lane {
    /// Read completions: (time, id, issued).
    reads: VecDeque<(Ps, u64, Ps)>,
    /// Media-write completions.
    writes: VecDeque<(Ps, QueuedRequest)>,
    /// Time of the last read completion pushed (meaningful while `reads` is not empty).
    read_back: Ps,
    /// Time of the last media-write completion pushed (while `writes` is not empty).
    write_back: Ps,
}

impl Lane {
    fn new() -> Lane {
        Lane {
            reads: VecDeque::new(),
            writes: VecDeque::new(),
            read_back: 0,
            write_back: 0,
        }
    }
}

/// A channel's event sources in [`MemorySystem::due`], in tie-break order.
const WRITES: usize = 0;
const READS: usize = 1;
const DECISION: usize = 2;

/// When a channel's own event sources are next due, indexed by `WRITES`, `READS`, `DECISION`
/// (`Ps::MAX`: none).
type Due = [Ps; 3];

/// The earliest of a channel's due times.
#[inline]
fn earliest(d: &Due) -> Ps {
    d[WRITES].min(d[READS]).min(d[DECISION])
}

/// Where an event comes from. When several are due at the same time, the earliest source in
/// the order shared queue, then per channel: writes, reads, decision, goes first.
#[derive(Clone, Copy)]
enum Source {
    Queue,
    Writes(usize),
    Reads(usize),
    Decision(usize),
}

/// The whole memory system behind the requesters.
#[derive(Clone)]
pub struct MemorySystem {
    map: AddressMap,
    channels: Dense<ChannelController>,
    lanes: Dense<Lane>,
    /// When each channel's own event sources are next due: first media-write completion,
    /// first read completion, pending scheduling decision.
    due: Dense<Due>,
    scheduler: Box<dyn Scheduler>,
    bmo: Box<dyn BmoEngine>,
    /// The PM-support engine does nothing ([`BmoEngine::is_passthrough`]): its calls are
    /// skipped.
    bmo_passthrough: bool,
    /// Per line, when its latest write leaves the PM-support engine: writes of a line leave
    /// the engine in arrival order whatever their latencies.
    bmo_line_tail: crate::fast_hash::FastMap<u64, Ps>,
    /// Per line, writes past the engine on their way to the media and not yet durable, and
    /// (for engines that read the bytes) the line's newest bytes while there are any: a
    /// write whose media write the engine skips may not become durable ahead of them, and a
    /// partial write is completed over them, not over stale durable bytes.
    bmo_in_flight: crate::fast_hash::FastMap<u64, (u32, [u8; 64])>,
    events: EventQueue<MemEvent>,
    image: PmImage,
    acks: Vec<Ack>,
    entered: Vec<QueuedRequest>,
    /// Payloads of writes the ADR domain took, kept for reuse by later waiting writes (a
    /// write-heavy run would otherwise allocate and free one per write). Boxed on purpose:
    /// queue entries hold the box, and moving it back and forth allocates nothing.
    #[allow(clippy::vec_box)]
    spare_payloads: Vec<Box<Payload>>,
    adr: bool,
    frontend: Ps,
    tck: Ps,
    now: Ps,
    /// Time of the next event (`Ps::MAX` when none; see [`idle`](Self::idle)). Every public
    /// call that changes state leaves it current, so asking for the next event costs nothing.
    next_t: Ps,
    media_writes_done: u64,
    reads_from_buffer: u64,
    /// Writes the PM-support engine made unnecessary on the media.
    bmo_skipped_media: u64,
}

impl MemorySystem {
    /// Builds the memory system a (validated) config describes, with the given plug-ins.
    pub fn new(
        cfg: &SimConfig,
        scheduler: Box<dyn Scheduler>,
        bmo: Box<dyn BmoEngine>,
    ) -> MemorySystem {
        let channels = (0..cfg.device.channels)
            .map(|_| {
                ChannelController::new(
                    &cfg.controller,
                    ChannelDevice::new(&cfg.device),
                    scheduler.as_ref(),
                )
            })
            .collect();
        MemorySystem {
            map: AddressMap::new(&cfg.device),
            channels,
            lanes: (0..cfg.device.channels).map(|_| Lane::new()).collect(),
            due: Dense::new(vec![[Ps::MAX; 3]; cfg.device.channels as usize]),
            scheduler,
            bmo_passthrough: bmo.is_passthrough(),
            bmo_line_tail: Default::default(),
            bmo_in_flight: Default::default(),
            bmo,
            events: EventQueue::new(),
            image: PmImage::new(),
            acks: Vec::new(),
            entered: Vec::new(),
            spare_payloads: Vec::new(),
            adr: cfg.controller.adr,
            frontend: ns_to_ps(cfg.controller.frontend_ns),
            tck: cfg.device.timing.to_ps().tck.max(1),
            now: 0,
            next_t: Ps::MAX,
            media_writes_done: 0,
            reads_from_buffer: 0,
            bmo_skipped_media: 0,
        }
    }

    /// Current time of the memory system.
    #[inline]
    pub fn now(&self) -> Ps {
        self.now
    }

    /// Time of the next pending event.
    #[inline]
    pub fn next_event_time(&self) -> Option<Ps> {
        (!self.idle()).then_some(self.next_t)
    }

    /// Finds the next event's time after a change.
    #[inline]
    fn refresh_next(&mut self) {
        let own = match self.due.as_slice() {
            [d] => earliest(d),
            all => all.iter().map(earliest).min().unwrap_or(Ps::MAX),
        };
        let t = self.events.next_time().min(own);
        self.next_t = t;
    }

    /// True when nothing is pending: no event time, and no event on the shared queue (whose
    /// events may be due at `Ps::MAX`).
    #[inline]
    fn idle(&self) -> bool {
        self.next_t == Ps::MAX && self.events.is_empty()
    }

    /// The source of the next event, due at `t`: the first in source order with an event at
    /// `t`.
    #[inline]
    fn source_at(&self, t: Ps) -> Source {
        if !self.events.is_empty() && self.events.next_time() == t {
            return Source::Queue;
        }
        if let [d] = self.due.as_slice() {
            // One channel (the usual case): no search.
            return if d[WRITES] == t {
                Source::Writes(0)
            } else if d[READS] == t {
                Source::Reads(0)
            } else {
                Source::Decision(0)
            };
        }
        for (ch, d) in self.due.iter().enumerate() {
            if d[WRITES] == t {
                return Source::Writes(ch);
            }
            if d[READS] == t {
                return Source::Reads(ch);
            }
            if d[DECISION] == t {
                return Source::Decision(ch);
            }
        }
        unreachable!("an event is due at the next event time")
    }

    /// The due time of source `kind` of channel `ch`.
    #[inline]
    fn due(&mut self, ch: usize, kind: usize) -> &mut Ps {
        &mut self.due[ch][kind]
    }

    /// True when requests are queued, in flight or waiting.
    pub fn busy(&self) -> bool {
        !self.events.is_empty()
            || self.channels.iter().any(|c| c.busy())
            || self
                .lanes
                .iter()
                .any(|l| !l.reads.is_empty() || !l.writes.is_empty())
            || self.due.iter().any(|d| d[DECISION] != Ps::MAX)
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
        self.submit_validated(req, now, None, 0);
    }

    /// Submits a write the write predictor's validator has looked up: `pre` is the matching
    /// precomputation (if any) for the PM-support engine, `lookup` the validator's latency
    /// before the engine starts.
    pub fn submit_validated(
        &mut self,
        req: MemRequest,
        now: Ps,
        pre: Option<&Precomputed>,
        lookup: Ps,
    ) {
        // Accepting a request only adds events, each noted as it comes (`earlier`), unless it
        // runs a decision at once, which may cancel one: then the next event is searched anew
        // (`decide_now`).
        self.accept(req, now, pre, lookup);
    }

    /// The PM-support engine (for predictors' precomputations, which must not change it).
    pub fn bmo(&self) -> &dyn BmoEngine {
        self.bmo.as_ref()
    }

    /// Runs write `r` through the PM-support engine at `now`: it reaches the controller when
    /// the engine is done (or becomes durable without a media write).
    fn through_bmo(&mut self, r: QueuedRequest, now: Ps, pre: Option<&Precomputed>, lookup: Ps) {
        let line = if self.bmo.needs_data() {
            // The full line after the write: the payload over the line's newest bytes (those
            // of a write still in flight, else the durable ones).
            r.data().last().map(|d| {
                let mut l = match self.bmo_in_flight.get(&r.line_addr) {
                    Some((_, bytes)) => *bytes,
                    None => self.image.line(r.line_addr).copied().unwrap_or([0; 64]),
                };
                let (o, n) = (d.offset as usize, d.len as usize);
                l[o..o + n].copy_from_slice(d.value());
                l
            })
        } else {
            None
        };
        let out = self
            .bmo
            .write(r.line_addr, line.as_ref(), now + lookup, pre);
        let tail = self.bmo_line_tail.entry(r.line_addr).or_insert(0);
        let leave = (now + lookup + out.delay).max(*tail);
        *tail = leave;
        let e = self
            .bmo_in_flight
            .entry(r.line_addr)
            .or_insert((0, [0; 64]));
        e.0 += 1;
        if let Some(l) = line {
            e.1 = l;
        }
        let q = Box::new(r);
        let ev = if out.media {
            MemEvent::Arrive(true, q)
        } else {
            MemEvent::ArriveNoMedia(q)
        };
        self.schedule_event(leave, ev);
    }

    /// A new event at `t` (on a channel source): the next event is now no later than `t`.
    #[inline]
    fn earlier(&mut self, t: Ps) {
        if t < self.next_t {
            self.next_t = t;
        }
    }

    /// Schedules `ev` at `t` on the shared queue. (Out of line: the channels' completion FIFOs
    /// take nearly every event, and the heap push inlined bloats the paths that avoid it.)
    #[inline(never)]
    fn schedule_event(&mut self, t: Ps, ev: MemEvent) {
        self.events.push(t, ev);
        self.next_t = self.next_t.min(t);
    }

    #[inline]
    fn accept(&mut self, req: MemRequest, now: Ps, pre: Option<&Precomputed>, lookup: Ps) {
        debug_assert!(now >= self.now, "submit in the past");
        self.now = self.now.max(now);
        let now = self.now;
        let line_addr = req.addr - req.addr % LINE_BYTES;
        let loc = self.map.locate(line_addr);
        let ch = loc.channel as usize;
        let mut q = QueuedRequest {
            id: req.id,
            line_addr,
            row: loc.row,
            bank: self.channels[ch].device.bank_index(&loc) as u32,
            channel: loc.channel as u16,
            holds_entry: req.holds_entry,
            issued: now,
            payload: None,
        };
        if req.is_write {
            if !self.bmo_passthrough {
                q.payload = req.data.map(|d| self.boxed(d));
                self.through_bmo(q, now, pre, lookup);
                return;
            }
        } else if let Some(plan) = self.channels[ch].device.read_from_buffer(line_addr, now) {
            self.reads_from_buffer += 1;
            self.finish_read(ch, q.id, q.issued, line_addr, plan.data_end);
            return;
        }
        self.offer_with(req.is_write, q, req.data.as_ref(), now);
    }

    /// A write's bytes as a queue entry's payload (a spare one when there is one).
    fn boxed(&mut self, d: LineData) -> Box<Payload> {
        match self.spare_payloads.pop() {
            Some(mut p) => {
                p.merged.clear();
                p.data.clear();
                p.data.push(d);
                p
            }
            None => Box::new(Payload {
                merged: Vec::new(),
                data: vec![d],
            }),
        }
    }

    /// A request reaches its channel's controller at `now`.
    #[inline(always)]
    fn offer(&mut self, is_write: bool, q: QueuedRequest, now: Ps) {
        self.offer_with(is_write, q, None, now);
    }

    /// [`offer`](Self::offer) of a request whose bytes `data` are not in its payload yet: a
    /// write the ADR domain accepts at once lands in the image without ever being boxed.
    #[inline(always)]
    fn offer_with(
        &mut self,
        is_write: bool,
        mut q: QueuedRequest,
        data: Option<&LineData>,
        now: Ps,
    ) {
        let ch = q.channel as usize;
        let kept_entry = q.holds_entry;
        if q.holds_entry && self.channels[ch].has_waiting() {
            // An older write of the line waiting for room takes the kept entry first (durable
            // first under ADR), so that the line's writes stay in order; this one merges into it.
            let mut entered = std::mem::take(&mut self.entered);
            if self.channels[ch].admit_older_of_line(q.line_addr, self.adr, now, &mut entered) {
                q.holds_entry = false;
            }
            for w in entered.drain(..) {
                self.write_durable(&w, now);
                if let Some(p) = w.payload {
                    self.spare_payloads.push(p);
                }
            }
            self.entered = entered;
        }
        let c = &mut self.channels[ch];
        if !is_write && c.forward_read(q.line_addr, q.bank) {
            self.finish_read(ch, q.id, q.issued, q.line_addr, now);
            return;
        }
        if is_write && self.adr && (q.holds_entry || c.would_accept(true, q.line_addr, q.bank)) {
            // Accepted into the ADR domain now: durable and acknowledged at once; the queue
            // entry no longer needs the data.
            self.write_durable_with(&q, data, now);
            q.payload = None;
        } else if let Some(d) = data {
            q.payload = Some(self.boxed(*d));
        }
        let (bank, row) = (q.bank as usize, q.row);
        if self.channels[ch].offer(is_write, q, now) == Admission::Queued {
            self.decide_now(ch, now, bank, row);
        }
        if kept_entry {
            // It (or the older write of its line that took its entry) may have merged into a
            // queued write: the entry kept for it is then free for those waiting.
            self.admit_freed(ch, now);
        }
    }

    /// The data of read `id` is at the controller at `data_ready`: acknowledge it once the
    /// PM-support engine and the front end have passed it on.
    #[inline(always)]
    fn finish_read(&mut self, ch: usize, id: u64, issued: Ps, line_addr: u64, data_ready: Ps) {
        let delay = if self.bmo_passthrough {
            0
        } else {
            self.bmo.read_delay(line_addr, data_ready)
        };
        let t = data_ready + delay + self.frontend;
        let lane = &mut self.lanes[ch];
        if t <= self.now {
            self.ack(id, false, issued, t);
        } else if lane.reads.is_empty() || lane.read_back <= t {
            if lane.reads.is_empty() {
                self.due[ch][READS] = t;
            }
            lane.read_back = t;
            lane.reads.push_back((t, id, issued));
            self.earlier(t);
        } else {
            self.schedule_event(t, MemEvent::ReadDone { id, issued });
        }
    }

    #[inline]
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
    #[inline]
    fn write_durable(&mut self, q: &QueuedRequest, t: Ps) {
        self.write_durable_with(q, None, t);
    }

    /// [`write_durable`](Self::write_durable) of `q`, whose bytes `data` (if any) follow
    /// those in its payload.
    #[inline(always)]
    fn write_durable_with(&mut self, q: &QueuedRequest, data: Option<&LineData>, t: Ps) {
        if !self.bmo_passthrough {
            self.bmo_landed(q.line_addr, 1 + q.merged().len() as u32);
        }
        if q.payload.is_none() && data.is_none() {
            self.ack(q.id, true, q.issued, t + self.frontend);
            return;
        }
        for d in q.data().iter().chain(data) {
            self.image.apply(q.line_addr, d);
        }
        self.ack_all(q, true, t + self.frontend);
    }

    /// `n` writes of `line` that went through the PM-support engine became durable.
    fn bmo_landed(&mut self, line: u64, n: u32) {
        if let Entry::Occupied(mut e) = self.bmo_in_flight.entry(line) {
            let left = e.get().0.saturating_sub(n);
            if left == 0 {
                e.remove();
            } else {
                e.get_mut().0 = left;
            }
        }
    }

    /// A request for row `row` of bank `bank` entered channel `ch` at `now`: make sure a
    /// decision happens no later than the time it could issue. Nothing else in the queue
    /// became ready earlier, so a pending decision that is due sooner already covers it.
    #[inline(always)]
    fn decide_now(&mut self, ch: usize, now: Ps, bank: usize, row: u64) {
        let (ready, _) = self.channels[ch].device.readiness(bank, row, now);
        let decision_at = self.due(ch, DECISION);
        if *decision_at <= ready {
            return;
        }
        if ready <= now {
            *decision_at = Ps::MAX;
            self.run_decision(ch, now);
            // The decision may have cancelled the next event (this one, if it was next).
            self.refresh_next();
        } else {
            *decision_at = ready;
            self.earlier(ready);
        }
    }

    #[inline]
    fn schedule_decision(&mut self, ch: usize, t: Ps) {
        let decision_at = self.due(ch, DECISION);
        *decision_at = (*decision_at).min(t);
    }

    #[inline]
    fn run_decision(&mut self, ch: usize, now: Ps) {
        // The queues are settled after the request is dealt with (nothing here looks at them),
        // so that the request and its schedule are not kept alive across the update.
        let (decision, settle) = self.channels[ch].decide_unsettled(self.scheduler.as_mut(), now);
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
                        let lane = &mut self.lanes[ch];
                        if lane.writes.is_empty() || lane.write_back <= plan.done {
                            if lane.writes.is_empty() {
                                self.due[ch][WRITES] = plan.done;
                            }
                            lane.write_back = plan.done;
                            lane.writes.push_back((plan.done, request));
                        } else {
                            self.schedule_event(plan.done, MemEvent::WriteDone(Box::new(request)));
                        }
                    } else {
                        self.media_writes_done += 1;
                    }
                } else {
                    if plan.outcome != RowOutcome::ReadBuffer {
                        self.channels[ch].device.fill_read_buffer(request.line_addr);
                    }
                    let (id, issued, line) = (request.id, request.issued, request.line_addr);
                    self.finish_read(ch, id, issued, line, plan.data_end);
                }
                if let Some(s) = settle {
                    self.channels[ch].settle(s);
                }
                if self.channels[ch].has_waiting() {
                    self.admit_waiting(ch, now);
                }
                // One request per command clock; skip straight to the first time something
                // can issue, so idle decisions are never taken.
                if let Some(t) = self.channels[ch].next_ready(now + self.tck) {
                    self.schedule_decision(ch, t);
                }
            }
        }
    }

    /// Lets channel `ch`'s waiting requests into freed queue entries at `now`; under ADR the
    /// writes among them are durable from that moment.
    #[inline]
    fn admit_waiting(&mut self, ch: usize, now: Ps) {
        let mut entered = std::mem::take(&mut self.entered);
        self.channels[ch].admit_waiting(self.adr, now, &mut entered);
        for w in entered.drain(..) {
            self.write_durable(&w, now);
            if let Some(p) = w.payload {
                self.spare_payloads.push(p);
            }
        }
        self.entered = entered;
    }

    /// Keeps a WPQ entry of the channel of line `addr` for a write to it that is on its way
    /// and marked [`MemRequest::holds_entry`] (see [`ChannelController::reserve_entry`]).
    pub fn reserve_entry(&mut self, addr: u64) {
        let ch = self.map.locate(addr - addr % LINE_BYTES).channel as usize;
        self.channels[ch].reserve_entry();
    }

    /// Lets channel `ch`'s waiting requests into entries freed at `now` (a plug-in's, or one kept
    /// for a write) and schedules the channel's next decision.
    fn admit_freed(&mut self, ch: usize, now: Ps) {
        if !self.channels[ch].has_waiting() {
            return;
        }
        self.admit_waiting(ch, now);
        if let Some(t) = self.channels[ch].next_ready(now) {
            self.schedule_decision(ch, t);
        }
        self.refresh_next();
    }

    /// A plug-in keeps `pins[ch]` WPQ entries of channel `ch` from `now` (lines it holds in
    /// the ADR domain, e.g. BLOM's buffered log headers). Where it keeps fewer than before,
    /// writes waiting for a slot may enter now.
    pub fn set_pinned(&mut self, pins: &[u32], now: Ps) {
        let now = now.max(self.now);
        for (ch, &n) in pins.iter().enumerate() {
            let c = &mut self.channels[ch];
            let n = n as usize;
            if c.pinned() == n {
                continue;
            }
            let freed = n < c.pinned();
            c.set_pinned(n);
            // The ADR domain holds no more lines than the WPQ has entries: a plug-in that
            // keeps more (a transaction committed in ADR without room for it) would have its
            // lines survive a crash no hardware could keep.
            let held = n + c.reserved() + c.occupancy().1;
            assert!(
                freed || held <= c.write_capacity(),
                "a plug-in keeps {n} ADR lines of channel {ch} beside {} queued or kept writes: \
                 {held} lines in a {}-entry WPQ",
                held - n,
                c.write_capacity()
            );
            if freed {
                self.admit_freed(ch, now);
            }
        }
    }

    /// Processes every event due at or before `t` and moves the clock to `t`.
    pub fn advance_to(&mut self, t: Ps) {
        while self.step_inner(t).is_some() {}
        self.now = self.now.max(t);
    }

    /// Processes the next pending event if it is due at or before `limit`; returns its time.
    pub fn step_until(&mut self, limit: Ps) -> Option<Ps> {
        self.step_inner(limit)
    }

    /// [`step_until`](Self::step_until), inlined into the loops that call it per event.
    #[inline(always)]
    fn step_inner(&mut self, limit: Ps) -> Option<Ps> {
        let time = self.next_t;
        if time > limit || self.idle() {
            return None;
        }
        self.now = self.now.max(time);
        match self.source_at(time) {
            Source::Queue => {
                let (time, ev) = self.events.pop().expect("peeked");
                self.handle(time, ev);
            }
            Source::Writes(ch) => {
                let lane = &mut self.lanes[ch];
                let (_, q) = lane.writes.pop_front().expect("peeked");
                self.due[ch][WRITES] = lane.writes.front().map_or(Ps::MAX, |w| w.0);
                self.media_writes_done += 1;
                self.write_durable(&q, time);
            }
            Source::Reads(ch) => {
                let lane = &mut self.lanes[ch];
                let (_, id, issued) = lane.reads.pop_front().expect("peeked");
                self.due[ch][READS] = lane.reads.front().map_or(Ps::MAX, |r| r.0);
                self.ack(id, false, issued, time);
            }
            Source::Decision(ch) => {
                *self.due(ch, DECISION) = Ps::MAX;
                self.run_decision(ch, time);
            }
        }
        self.refresh_next();
        Some(time)
    }

    /// Processes events due at or before `limit` until one produces an acknowledgement or none
    /// is left; returns whether any was processed. Equivalent to calling
    /// [`step_until`](Self::step_until) until [`has_acks`](Self::has_acks), in one call.
    #[inline]
    pub fn step_until_ack(&mut self, limit: Ps) -> bool {
        let mut any = false;
        while self.step_inner(limit).is_some() {
            any = true;
            if !self.acks.is_empty() {
                break;
            }
        }
        any
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
            MemEvent::Arrive(is_write, q) => self.offer(is_write, *q, time),
            MemEvent::ArriveNoMedia(q) => {
                let older = self
                    .bmo_in_flight
                    .get(&q.line_addr)
                    .is_some_and(|e| e.0 > 1);
                if older {
                    // An older write of the line is not durable yet (in the WPQ, waiting for a
                    // slot, or being written): this one follows it through the controller, so
                    // the line ends with these bytes.
                    self.offer(true, *q, time);
                } else {
                    self.bmo_skipped_media += 1;
                    self.write_durable(&q, time);
                    if q.holds_entry {
                        // Durable without entering the WPQ: the entry kept for it is free.
                        let ch = q.channel as usize;
                        self.channels[ch].release_entry();
                        self.admit_freed(ch, time);
                    }
                }
            }
        }
    }

    /// True when acknowledgements are waiting to be taken.
    #[inline]
    pub fn has_acks(&self) -> bool {
        !self.acks.is_empty()
    }

    /// Moves the acknowledgements produced so far into `out`.
    #[inline]
    pub fn take_acks(&mut self, out: &mut Vec<Ack>) {
        if out.is_empty() {
            // Into an empty vector (the usual case): exchange the buffers, no copy (an append
            // called memcpy for one or two acknowledgements, 4% of a logging run's samples).
            std::mem::swap(out, &mut self.acks);
        } else {
            out.append(&mut self.acks);
        }
    }

    /// The acknowledgements produced since the last [`clear_acks`](Self::clear_acks) or
    /// [`take_acks`](Self::take_acks), in order (read them in place, then clear them).
    #[inline]
    pub fn acks(&self) -> &[Ack] {
        &self.acks
    }

    /// Drops the acknowledgements read through [`acks`](Self::acks).
    #[inline]
    pub fn clear_acks(&mut self) {
        self.acks.clear();
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
            let d = &c.device.stats();
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
                ("read_queue_wait_ps", s.read_queue_wait_ps),
                ("write_queue_wait_ps", s.write_queue_wait_ps),
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
            if self.channels[i].device.timing().trefi > 0 {
                stats.add("mc.refreshes", d.refreshes);
            }
        }
        stats.set("mc.media_writes_done", self.media_writes_done);
        stats.set("sim.events_scheduled", self.events.scheduled());
        stats.set("mc.reads_served_by_read_buffer", self.reads_from_buffer);
        stats.set("pm.image_lines", self.image.len() as u64);
        if !self.bmo_passthrough {
            for (k, v) in self.bmo.stats() {
                stats.set(format!("bmo.{k}"), v);
            }
            stats.set("bmo.media_writes_skipped", self.bmo_skipped_media);
        }
    }
}

/// The memory controller as a plug-in (a logging engine, an ordering model) may see it.
pub trait MemoryView {
    /// Banks in the memory system (all channels), numbered `0..banks()`.
    fn banks(&self) -> usize;
    /// The bank (in `0..banks()`) that line `addr` lives in.
    fn bank_of(&self, addr: u64) -> usize;
    /// Requests queued for `bank` now (read queue and write pending queue).
    fn pending(&self, bank: usize) -> u32;
    /// [`pending`](Self::pending) of every bank, in bank order, into `out` (cleared first):
    /// one call where a plug-in compares all banks of a small system.
    fn pending_all(&self, out: &mut Vec<u32>) {
        out.clear();
        out.extend((0..self.banks()).map(|b| self.pending(b)));
    }
    /// Every bank with requests queued and how many ([`pending`](Self::pending)), in no
    /// particular order, into `out` (cleared first); a bank may be listed more than once (its
    /// count is then the sum). Idle banks are left out: a system may have thousands of banks,
    /// nearly all idle, and a load-aware plug-in asks on every allocation.
    fn busy_banks(&self, out: &mut Vec<(u32, u32)>) {
        out.clear();
        out.extend(
            (0..self.banks())
                .map(|b| (b as u32, self.pending(b)))
                .filter(|&(_, n)| n > 0),
        );
    }
    /// Lines the ADR domain holds (the WPQ entries of all channels; 0 without ADR).
    fn adr_lines(&self) -> usize;
    /// Of those, the lines in use now (writes accepted and not yet sent to the device, entries
    /// kept for writes on their way, and entries plug-ins keep).
    fn adr_used(&self) -> usize;
    /// The channel (in `0..channels`) that line `addr` lives in.
    fn channel_of(&self, addr: u64) -> usize;
    /// Channel `ch`'s WPQ: writes queued in it or on their way holding an entry (not counting
    /// entries plug-ins keep), and its entries.
    fn wpq(&self, ch: usize) -> (usize, usize);
    /// Writes in the write pending queues of all channels now (accepted, not yet issued to
    /// the device).
    fn writes_queued(&self) -> usize;
    /// The write pending queue entries of all channels.
    fn write_queue_capacity(&self) -> usize;
    /// The write queue's low watermark summed over channels (below it the controller leaves
    /// write-drain mode: the queue is in low utilisation).
    fn write_queue_low(&self) -> usize;
}

impl MemoryView for MemorySystem {
    fn banks(&self) -> usize {
        self.channels.iter().map(|c| c.device.bank_count()).sum()
    }

    fn bank_of(&self, addr: u64) -> usize {
        let loc = self.map.locate(addr - addr % LINE_BYTES);
        let ch = loc.channel as usize;
        // Every channel has the same device (one `device` config), so the same bank count.
        let c = &self.channels[ch];
        ch * c.device.bank_count() + c.device.bank_index(&loc)
    }

    fn pending(&self, bank: usize) -> u32 {
        let mut b = bank;
        for c in self.channels.iter() {
            let n = c.device.bank_count();
            if b < n {
                return c.bank_pending(b) as u32;
            }
            b -= n;
        }
        0
    }

    fn pending_all(&self, out: &mut Vec<u32>) {
        out.clear();
        for c in self.channels.iter() {
            out.extend((0..c.device.bank_count()).map(|b| c.bank_pending(b) as u32));
        }
    }

    fn busy_banks(&self, out: &mut Vec<(u32, u32)>) {
        out.clear();
        let mut first = 0;
        for c in self.channels.iter() {
            c.busy_banks(first, out);
            first += c.device.bank_count() as u32;
        }
    }

    fn adr_lines(&self) -> usize {
        if self.adr {
            self.channels.iter().map(|c| c.write_capacity()).sum()
        } else {
            0
        }
    }

    fn adr_used(&self) -> usize {
        if self.adr {
            self.writes_queued()
                + self
                    .channels
                    .iter()
                    .map(|c| c.pinned() + c.reserved())
                    .sum::<usize>()
        } else {
            0
        }
    }

    fn channel_of(&self, addr: u64) -> usize {
        self.map.locate(addr - addr % LINE_BYTES).channel as usize
    }

    fn wpq(&self, ch: usize) -> (usize, usize) {
        let c = &self.channels[ch];
        (c.occupancy().1 + c.reserved(), c.write_capacity())
    }

    fn writes_queued(&self) -> usize {
        self.channels.iter().map(|c| c.occupancy().1).sum()
    }

    fn write_queue_capacity(&self) -> usize {
        self.channels.iter().map(|c| c.write_capacity()).sum()
    }

    fn write_queue_low(&self) -> usize {
        self.channels.iter().map(|c| c.drain_low()).sum()
    }
}
