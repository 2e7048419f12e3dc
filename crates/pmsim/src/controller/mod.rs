//! The memory controller of one channel: read queue, write pending queue (WPQ), write-drain
//! mode with high/low watermarks, request scheduling over the banks through a [`Scheduler`]
//! plug-in, write coalescing and read forwarding from the WPQ.
//!
//! The controller holds requests; the [`MemorySystem`](crate::memsys::MemorySystem) drives it
//! with decisions at the times it asks for and turns finished requests into acknowledgements.

use crate::config::ControllerConfig;
use crate::device::{AccessPlan, ChannelDevice, Location};
use crate::image::LineData;
use crate::scheduler::{BankCandidates, Pick, Scheduler};
use crate::time::Ps;
use std::collections::VecDeque;

mod queue;
pub use queue::{BankKey, RequestQueue};

/// What some queued requests carry besides their id: ids of writes coalesced into them and
/// the bytes written (only when the trace knows them). Kept out of line so the common request
/// stays small.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Payload {
    /// Ids of later writes coalesced into this entry.
    pub merged: Vec<u64>,
    /// Write payloads, in arrival order.
    pub data: Vec<LineData>,
}

/// A request as a queue holds it.
#[derive(Clone, Debug)]
pub struct QueuedRequest {
    /// Id of the request that created the entry.
    pub id: u64,
    /// Line address.
    pub line_addr: u64,
    /// Decoded location.
    pub loc: Location,
    /// When it entered the queue.
    pub arrival: Ps,
    /// When the requester issued the first request of this entry.
    pub issued: Ps,
    /// Coalesced ids and write data, when there are any.
    pub payload: Option<Box<Payload>>,
}

impl QueuedRequest {
    /// Ids of writes coalesced into this entry (besides `id`).
    pub fn merged(&self) -> &[u64] {
        self.payload.as_deref().map_or(&[], |p| &p.merged)
    }

    /// The bytes written, in arrival order (empty when unknown).
    pub fn data(&self) -> &[LineData] {
        self.payload.as_deref().map_or(&[], |p| &p.data)
    }

    /// Absorbs `other` (a later write to the same line): its ids and data follow ours.
    pub fn absorb(&mut self, other: &mut QueuedRequest) {
        let p = self.payload.get_or_insert_with(Default::default);
        p.merged.push(other.id);
        if let Some(o) = other.payload.take() {
            p.merged.extend_from_slice(&o.merged);
            p.data.extend_from_slice(&o.data);
        }
    }
}

/// What a decision did.
#[derive(Clone, Debug)]
pub enum Decision {
    /// Served `request` with the command schedule `plan`; `is_write` says from which queue.
    Issued {
        /// The request served.
        request: QueuedRequest,
        /// Its command schedule.
        plan: AccessPlan,
        /// Whether it was a write.
        is_write: bool,
    },
    /// Nothing could issue; decide again at this time.
    WaitUntil(Ps),
    /// Both queues are empty.
    Idle,
}

/// Per-channel controller statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ControllerStats {
    /// Reads accepted into the read queue.
    pub reads_accepted: u64,
    /// Writes accepted into the WPQ (after coalescing).
    pub writes_accepted: u64,
    /// Writes merged into a WPQ entry for the same line.
    pub writes_coalesced: u64,
    /// Reads answered from the WPQ.
    pub reads_forwarded: u64,
    /// Requests that found their queue full and waited.
    pub queue_full_waits: u64,
    /// Times the controller entered write-drain mode.
    pub drain_episodes: u64,
    /// Writes issued while in drain mode.
    pub writes_in_drain: u64,
    /// Scheduling decisions taken (issuing or not).
    pub decisions: u64,
}

/// One channel's controller and device.
pub struct ChannelController {
    read_q: RequestQueue,
    write_q: RequestQueue,
    /// Requests waiting for a queue slot: (is_write, request).
    waiting: VecDeque<(bool, QueuedRequest)>,
    read_cap: usize,
    write_cap: usize,
    drain_high: usize,
    drain_low: usize,
    draining: bool,
    bank_cands: Vec<BankCandidates>,
    bank_ids: Vec<u32>,
    /// The device behind the controller.
    pub device: ChannelDevice,
    /// Statistics.
    pub stats: ControllerStats,
    /// Time of the pending decision event, if one is scheduled.
    pub decision_at: Option<Ps>,
}

/// Result of offering a request to the controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Entered its queue (or merged into a queued write).
    Queued,
    /// The queue was full: the request waits and enters when a slot frees.
    Waiting,
}

impl ChannelController {
    /// A controller with empty queues over `device`.
    pub fn new(cfg: &ControllerConfig, device: ChannelDevice) -> ChannelController {
        ChannelController {
            read_q: RequestQueue::new(device.bank_count()),
            write_q: RequestQueue::new(device.bank_count()),
            waiting: VecDeque::new(),
            read_cap: cfg.read_queue as usize,
            write_cap: cfg.write_queue as usize,
            drain_high: cfg.drain_high as usize,
            drain_low: cfg.drain_low as usize,
            draining: false,
            bank_cands: Vec::new(),
            bank_ids: Vec::new(),
            device,
            stats: ControllerStats::default(),
            decision_at: None,
        }
    }

    /// Entries in the read queue and the WPQ.
    pub fn occupancy(&self) -> (usize, usize) {
        (self.read_q.len(), self.write_q.len())
    }

    /// True when a write to `line_addr` is in the WPQ (not yet issued to the device).
    pub fn wpq_holds(&self, line_addr: u64) -> bool {
        self.write_q.find_line(line_addr).is_some()
    }

    /// Answers a read from a WPQ entry for the same line, if there is one (read forwarding).
    pub fn forward_read(&mut self, line_addr: u64) -> bool {
        let hit = self.wpq_holds(line_addr);
        self.stats.reads_forwarded += hit as u64;
        hit
    }

    /// Whether [`offer`](Self::offer) would accept this request now (merge or free slot)
    /// rather than make it wait.
    pub fn would_accept(&self, is_write: bool, line_addr: u64) -> bool {
        (is_write && self.wpq_holds(line_addr)) || self.can_enter(is_write)
    }

    /// A new request of this class may enter its queue now: a slot is free and no earlier
    /// request of the class is still waiting for one.
    fn can_enter(&self, is_write: bool) -> bool {
        !self.waiting.iter().any(|(w, _)| *w == is_write) && self.has_room(is_write)
    }

    /// Offers a request. Writes to a line already in the WPQ merge into that entry. A full
    /// queue makes the request wait (in order).
    pub fn offer(&mut self, is_write: bool, mut req: QueuedRequest) -> Admission {
        if is_write && self.coalesce(&mut req) {
            return Admission::Queued;
        }
        if !self.can_enter(is_write) {
            self.stats.queue_full_waits += 1;
            self.waiting.push_back((is_write, req));
            return Admission::Waiting;
        }
        self.enqueue(is_write, req);
        Admission::Queued
    }

    fn has_room(&self, is_write: bool) -> bool {
        if is_write {
            self.write_q.len() < self.write_cap
        } else {
            self.read_q.len() < self.read_cap
        }
    }

    fn enqueue(&mut self, is_write: bool, req: QueuedRequest) {
        let bank = self.device.bank_index(&req.loc);
        let key = BankKey {
            bank: bank as u32,
            rank: req.loc.rank,
            row: req.loc.row,
        };
        let open = self.device.open_row(bank);
        if is_write {
            self.stats.writes_accepted += 1;
            self.write_q.push(req, key, open);
        } else {
            self.stats.reads_accepted += 1;
            self.read_q.push(req, key, open);
        }
    }

    /// Moves waiting requests into freed slots at time `now`. Under ADR the writes that entered
    /// the WPQ become durable now: they are appended to `entered_writes` (with their ids and
    /// data, which the queue entry then no longer keeps). Coalescing applies to them too.
    pub fn admit_waiting(&mut self, now: Ps, adr: bool, entered_writes: &mut Vec<QueuedRequest>) {
        while let Some((is_write, _)) = self.waiting.front() {
            let is_write = *is_write;
            if !self.has_room(is_write) {
                // Keep order within a class, but let the other class through.
                let other = self.waiting.iter().position(|(w, _)| *w != is_write);
                match other {
                    Some(i) if self.has_room(!is_write) => {
                        let (w, r) = self.waiting.remove(i).expect("index valid");
                        self.admit(w, r, now, adr, entered_writes);
                        continue;
                    }
                    _ => break,
                }
            }
            let (w, r) = self.waiting.pop_front().expect("front exists");
            self.admit(w, r, now, adr, entered_writes);
        }
    }

    fn admit(
        &mut self,
        is_write: bool,
        mut r: QueuedRequest,
        now: Ps,
        adr: bool,
        entered_writes: &mut Vec<QueuedRequest>,
    ) {
        r.arrival = now;
        if is_write && adr {
            // The ADR domain now holds the data: hand ids and payload to the caller.
            entered_writes.push(QueuedRequest {
                payload: r.payload.take(),
                ..r.clone()
            });
        }
        if !(is_write && self.coalesce(&mut r)) {
            self.enqueue(is_write, r);
        }
    }

    fn coalesce(&mut self, r: &mut QueuedRequest) -> bool {
        match self.write_q.find_line(r.line_addr) {
            Some(i) => {
                self.write_q.get_mut(i).absorb(r);
                self.stats.writes_coalesced += 1;
                true
            }
            None => false,
        }
    }

    /// True when a read or write is queued or waiting.
    pub fn busy(&self) -> bool {
        !self.read_q.is_empty() || !self.write_q.is_empty() || !self.waiting.is_empty()
    }

    /// Makes one scheduling decision at `now`.
    pub fn decide(&mut self, sched: &mut dyn Scheduler, now: Ps) -> Decision {
        self.stats.decisions += 1;
        if self.write_q.len() >= self.drain_high && !self.draining {
            self.draining = true;
            self.stats.drain_episodes += 1;
        } else if self.draining && self.write_q.len() <= self.drain_low {
            self.draining = false;
        }
        let serve_writes = !self.write_q.is_empty() && (self.draining || self.read_q.is_empty());
        if !serve_writes && self.read_q.is_empty() {
            return Decision::Idle;
        }
        let queue = if serve_writes {
            &mut self.write_q
        } else {
            &mut self.read_q
        };
        queue.summarize(&self.device, now, &mut self.bank_cands, &mut self.bank_ids);
        match sched.pick(&self.bank_cands, now) {
            Pick::WaitUntil(t) => Decision::WaitUntil(t.max(now + 1)),
            Pick::Issue { bank: i, hit } => {
                let c = &self.bank_cands[i];
                let chosen = if hit { c.oldest_hit } else { c.oldest_miss };
                let slot = chosen.expect("scheduler picked an existing request").slot;
                let bank = self.bank_ids[i];
                let request = queue.remove(slot, self.device.open_row(bank as usize));
                let plan = self.device.plan(&request.loc, serve_writes, now);
                self.device.commit(&request.loc, serve_writes, &plan);
                if plan.activate.is_some() {
                    let open = self.device.open_row(bank as usize);
                    self.read_q.recount(bank, open);
                    self.write_q.recount(bank, open);
                }
                if serve_writes && self.draining {
                    self.stats.writes_in_drain += 1;
                }
                Decision::Issued {
                    request,
                    plan,
                    is_write: serve_writes,
                }
            }
        }
    }

    /// Earliest time at or after `t` at which the queue that would be served next has a
    /// request ready to issue (`None` when both queues are empty).
    pub fn next_ready(&self, t: Ps) -> Option<Ps> {
        let draining = self.draining || self.write_q.len() >= self.drain_high;
        let serve_writes = !self.write_q.is_empty() && (draining || self.read_q.is_empty());
        let queue = if serve_writes {
            &self.write_q
        } else {
            &self.read_q
        };
        queue.next_ready(&self.device, t)
    }

    /// Whether the controller is in write-drain mode.
    pub fn draining(&self) -> bool {
        self.draining
    }
}
