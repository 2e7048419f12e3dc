//! The memory controller of one channel: read queue, write pending queue (WPQ), write-drain
//! mode with high/low watermarks, request scheduling over the banks through a [`Scheduler`]
//! plug-in, write coalescing and read forwarding from the WPQ.
//!
//! The controller holds requests; the [`MemorySystem`](crate::memsys::MemorySystem) drives it
//! with decisions at the times it asks for and turns finished requests into acknowledgements.

use crate::config::ControllerConfig;
use crate::device::{AccessPlan, ChannelDevice};
use crate::image::LineData;
use crate::scheduler::{BuiltinPolicy, Pick, Scheduler};
use crate::time::Ps;
use std::collections::VecDeque;

mod queue;
pub use queue::RequestQueue;

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
    /// Row within its bank.
    pub row: u64,
    /// Flat bank index within its channel (see
    /// [`ChannelDevice::bank_index`](crate::device::ChannelDevice::bank_index)).
    pub bank: u32,
    /// Channel index.
    pub channel: u16,
    /// A write that takes a WPQ entry kept for it since it was sent (see
    /// [`ChannelController::reserve_entry`]): it enters whatever waits.
    pub holds_entry: bool,
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
    pub fn absorb(&mut self, other: QueuedRequest) {
        let p = self.payload.get_or_insert_with(Default::default);
        p.merged.push(other.id);
        if let Some(o) = other.payload {
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

/// What [`ChannelController::settle`] needs of a decision that issued.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settle {
    /// The accessed bank.
    bank: u32,
    /// The access activated a row.
    opened: bool,
    /// A refresh applied before the access.
    refreshed: bool,
    /// The decision served the write queue.
    serve_writes: bool,
    /// The pick's time other banks become ready, when it knows it.
    others_ready: Option<Ps>,
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
    /// Total time reads spent between issue and acceptance into the read queue (waiting for
    /// an entry, or in a PM-support engine in front of the controller).
    pub read_queue_wait_ps: Ps,
    /// The same for writes (acceptance into the WPQ, or merging into an entry of it).
    pub write_queue_wait_ps: Ps,
    /// Times the controller entered write-drain mode.
    pub drain_episodes: u64,
    /// Writes issued while in drain mode.
    pub writes_in_drain: u64,
    /// Scheduling decisions taken (issuing or not).
    pub decisions: u64,
}

/// One channel's controller and device.
#[derive(Clone)]
pub struct ChannelController {
    read_q: RequestQueue,
    write_q: RequestQueue,
    /// Reads and writes waiting for a queue slot, each in arrival order, with their arrival
    /// numbers (to find the oldest waiting request of either class).
    waiting_reads: VecDeque<(u64, QueuedRequest)>,
    waiting_writes: VecDeque<(u64, QueuedRequest)>,
    next_wait_seq: u64,
    read_cap: usize,
    write_cap: usize,
    /// WPQ entries a plug-in keeps (lines held in the ADR domain that are not writes to
    /// issue, e.g. BLOM's buffered log headers): they take room from new writes.
    pinned: usize,
    /// WPQ entries kept for writes on their way that hold one (see
    /// [`reserve_entry`](Self::reserve_entry)).
    reserved: usize,
    drain_high: usize,
    drain_low: usize,
    draining: bool,
    /// The scheduler's built-in policy, evaluated directly on the queues' bank entries.
    policy: Option<BuiltinPolicy>,
    /// What [`next_ready`](Self::next_ready) would find for one queue (`(is_write, time)`),
    /// when the last decision could tell without a scan; dropped when a request enters a
    /// queue.
    ready_hint: Option<(bool, Ps)>,
    /// The device behind the controller.
    pub device: ChannelDevice,
    /// Statistics.
    pub stats: ControllerStats,
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
    /// A controller with empty queues over `device`, for decisions by `sched` (see
    /// [`Scheduler::builtin`]).
    pub fn new(
        cfg: &ControllerConfig,
        device: ChannelDevice,
        sched: &dyn Scheduler,
    ) -> ChannelController {
        ChannelController {
            read_q: RequestQueue::new(device.bank_count()),
            write_q: RequestQueue::new(device.bank_count()),
            waiting_reads: VecDeque::new(),
            waiting_writes: VecDeque::new(),
            next_wait_seq: 0,
            read_cap: cfg.read_queue as usize,
            write_cap: cfg.write_queue as usize,
            pinned: 0,
            reserved: 0,
            drain_high: cfg.drain_high as usize,
            drain_low: cfg.drain_low as usize,
            draining: false,
            policy: sched.builtin(),
            ready_hint: None,
            device,
            stats: ControllerStats::default(),
        }
    }

    /// Entries in the read queue and the WPQ.
    pub fn occupancy(&self) -> (usize, usize) {
        (self.read_q.len(), self.write_q.len())
    }

    /// Every bank with requests queued (read queue or WPQ) and how many, numbered from
    /// `first` on, appended to `out`: a bank with requests in both queues is listed twice.
    pub fn busy_banks(&self, first: u32, out: &mut Vec<(u32, u32)>) {
        out.extend(self.read_q.busy_banks().map(|(b, n)| (first + b, n)));
        out.extend(self.write_q.busy_banks().map(|(b, n)| (first + b, n)));
    }

    /// Requests queued for flat bank `bank` (read queue and WPQ).
    pub fn bank_pending(&self, bank: usize) -> usize {
        self.read_q.bank_len(bank) + self.write_q.bank_len(bank)
    }

    /// WPQ entries (the ADR domain's capacity when ADR is on).
    pub fn write_capacity(&self) -> usize {
        self.write_cap
    }

    /// WPQ entries a plug-in keeps (see [`set_pinned`](Self::set_pinned)).
    pub fn pinned(&self) -> usize {
        self.pinned
    }

    /// A plug-in now keeps `n` WPQ entries: writes find that much less room. Lowering it lets
    /// waiting writes in at the next [`admit_waiting`](Self::admit_waiting).
    pub fn set_pinned(&mut self, n: usize) {
        self.pinned = n;
    }

    /// Keeps a WPQ entry from now for a write on its way that holds it (LAD's staged lines:
    /// reserved in the ADR buffer at the transaction's stores, sent at its commit). The write,
    /// marked [`QueuedRequest::holds_entry`], takes the entry when it arrives, ahead of
    /// writes waiting for room.
    pub fn reserve_entry(&mut self) {
        self.reserved += 1;
    }

    /// WPQ entries kept for writes on their way (see [`reserve_entry`](Self::reserve_entry)).
    pub fn reserved(&self) -> usize {
        self.reserved
    }

    /// A write that held a kept entry became durable without entering the WPQ (a PM-support
    /// engine found no media write needed): the entry is free. Lets waiting writes in at the
    /// next [`admit_waiting`](Self::admit_waiting).
    pub fn release_entry(&mut self) {
        debug_assert!(self.reserved > 0, "no entry kept");
        self.reserved -= 1;
    }

    /// A write holding a kept entry arrives for `line_addr` while writes wait for room: if an
    /// older write of that line is among them, it takes the kept entry now (under ADR it is
    /// appended to `entered_writes`, to be made durable before the arriving write), so that
    /// the arriving write merges into it instead of overtaking it. Returns whether it did.
    pub fn admit_older_of_line(
        &mut self,
        line_addr: u64,
        adr: bool,
        now: Ps,
        entered_writes: &mut Vec<QueuedRequest>,
    ) -> bool {
        let Some(pos) = self
            .waiting_writes
            .iter()
            .position(|(_, w)| w.line_addr == line_addr)
        else {
            return false;
        };
        let (_, older) = self.waiting_writes.remove(pos).expect("found");
        self.release_entry();
        self.count_wait(true, now - older.issued);
        self.admit(true, older, adr, entered_writes);
        true
    }

    /// The WPQ's low watermark (write-drain mode ends at or below it).
    pub fn drain_low(&self) -> usize {
        self.drain_low
    }

    /// Slot of the WPQ entry (not yet issued to the device) for line `line_addr` of flat bank
    /// `bank`, if any.
    #[inline]
    fn wpq_slot(&self, line_addr: u64, bank: u32) -> Option<u32> {
        if self.write_q.is_empty() {
            None
        } else {
            self.write_q.find_line(line_addr, bank)
        }
    }

    /// True when a write to `line_addr` (in flat bank `bank`) is in the WPQ (not yet issued to
    /// the device).
    #[inline]
    pub fn wpq_holds(&self, line_addr: u64, bank: u32) -> bool {
        self.wpq_slot(line_addr, bank).is_some()
    }

    /// Answers a read from a WPQ entry for the same line, if there is one (read forwarding).
    #[inline]
    pub fn forward_read(&mut self, line_addr: u64, bank: u32) -> bool {
        let hit = self.wpq_holds(line_addr, bank);
        self.stats.reads_forwarded += hit as u64;
        hit
    }

    /// Whether [`offer`](Self::offer) would accept this request now (merge or free slot)
    /// rather than make it wait.
    #[inline]
    pub fn would_accept(&self, is_write: bool, line_addr: u64, bank: u32) -> bool {
        (is_write && self.wpq_holds(line_addr, bank) && !self.line_waits(line_addr))
            || self.can_enter(is_write)
    }

    /// Whether a write of `line_addr` waits for a WPQ entry. A later write of the line must
    /// then wait behind it rather than merge into a queued entry of the line: merged (and,
    /// under ADR, durable) first, its bytes were overwritten by the older write's when that
    /// one entered (a committed transaction's line went back to an older value: pmlab crash,
    /// hardware logging with device.channels = 3 and device.banks = 3).
    #[inline]
    fn line_waits(&self, line_addr: u64) -> bool {
        !self.waiting_writes.is_empty()
            && self
                .waiting_writes
                .iter()
                .any(|(_, w)| w.line_addr == line_addr)
    }

    /// A new request of this class may enter its queue now: a slot is free and no earlier
    /// request of the class is still waiting for one.
    #[inline]
    fn can_enter(&self, is_write: bool) -> bool {
        self.waiting(is_write).is_empty() && self.has_room(is_write)
    }

    /// Offers a request at `now`. Writes to a line already in the WPQ merge into that entry,
    /// unless a write of the line waits. A full queue makes the request wait (in order).
    #[inline(always)]
    pub fn offer(&mut self, is_write: bool, req: QueuedRequest, now: Ps) -> Admission {
        let since_issue = now - req.issued;
        if req.holds_entry {
            // Its entry was kept for it: it enters (or merges, freeing the entry) at once.
            debug_assert!(is_write && self.reserved > 0, "a write holding no entry");
            self.reserved -= 1;
            self.count_wait(true, since_issue);
            if let Some(req) = self.coalesce(true, req) {
                self.enqueue(true, req);
            }
            return Admission::Queued;
        }
        let Some(req) = self.coalesce(is_write, req) else {
            self.count_wait(is_write, since_issue);
            return Admission::Queued;
        };
        if !self.can_enter(is_write) {
            self.stats.queue_full_waits += 1;
            let seq = self.next_wait_seq;
            self.next_wait_seq += 1;
            if is_write {
                self.waiting_writes.push_back((seq, req));
            } else {
                self.waiting_reads.push_back((seq, req));
            }
            return Admission::Waiting;
        }
        self.count_wait(is_write, since_issue);
        self.enqueue(is_write, req);
        Admission::Queued
    }

    /// Adds the time a request spent between its issue and its acceptance into a queue.
    #[inline(always)]
    fn count_wait(&mut self, is_write: bool, wait: Ps) {
        if is_write {
            self.stats.write_queue_wait_ps += wait;
        } else {
            self.stats.read_queue_wait_ps += wait;
        }
    }

    #[inline]
    fn has_room(&self, is_write: bool) -> bool {
        if is_write {
            self.write_q.len() + self.pinned + self.reserved < self.write_cap
        } else {
            self.read_q.len() < self.read_cap
        }
    }

    #[inline(always)]
    fn enqueue(&mut self, is_write: bool, req: QueuedRequest) {
        self.ready_hint = None;
        if is_write {
            self.stats.writes_accepted += 1;
            self.write_q.push(req, &self.device);
        } else {
            self.stats.reads_accepted += 1;
            self.read_q.push(req, &self.device);
        }
    }

    /// The requests of one class waiting for a queue slot.
    #[inline]
    fn waiting(&self, is_write: bool) -> &VecDeque<(u64, QueuedRequest)> {
        if is_write {
            &self.waiting_writes
        } else {
            &self.waiting_reads
        }
    }

    /// True when requests wait for a queue slot.
    #[inline]
    pub fn has_waiting(&self) -> bool {
        !self.waiting_reads.is_empty() || !self.waiting_writes.is_empty()
    }

    /// Moves waiting requests into freed slots: the oldest waiting request enters when its
    /// queue has room; when it has none, the oldest of the other class may enter (order is
    /// kept within a class, and one full queue does not block the other). Under ADR the writes
    /// that entered the WPQ become durable now: they are appended to `entered_writes` (with
    /// their ids and data, which the queue entry then no longer keeps). Coalescing applies to
    /// them too.
    pub fn admit_waiting(&mut self, adr: bool, now: Ps, entered_writes: &mut Vec<QueuedRequest>) {
        loop {
            let oldest_is_write = match (self.waiting_reads.front(), self.waiting_writes.front()) {
                (None, None) => return,
                (Some(_), None) => false,
                (None, Some(_)) => true,
                (Some(r), Some(w)) => w.0 < r.0,
            };
            let is_write = if self.has_room(oldest_is_write) {
                oldest_is_write
            } else if self.has_room(!oldest_is_write) && !self.waiting(!oldest_is_write).is_empty()
            {
                !oldest_is_write
            } else {
                return;
            };
            let (_, r) = if is_write {
                self.waiting_writes.pop_front()
            } else {
                self.waiting_reads.pop_front()
            }
            .expect("a request of this class waits");
            self.count_wait(is_write, now - r.issued);
            self.admit(is_write, r, adr, entered_writes);
        }
    }

    fn admit(
        &mut self,
        is_write: bool,
        mut r: QueuedRequest,
        adr: bool,
        entered_writes: &mut Vec<QueuedRequest>,
    ) {
        if is_write && adr {
            // The ADR domain now holds the data: hand ids and payload to the caller.
            entered_writes.push(QueuedRequest {
                payload: r.payload.take(),
                ..r
            });
        }
        if let Some(r) = self.coalesce(is_write, r) {
            self.enqueue(is_write, r);
        }
    }

    /// Merges write `r` into the WPQ entry for its line, if there is one; otherwise (and for
    /// a read) gives it back. (By value, not `&mut`: a request that stays in registers on its way to the queue
    /// avoids a store-forwarding stall on every admission, about 7% of replay time. Always
    /// inlined: compiled out of line, the request went through memory anyway.)
    #[inline(always)]
    fn coalesce(&mut self, is_write: bool, r: QueuedRequest) -> Option<QueuedRequest> {
        if !is_write {
            return Some(r);
        }
        match self.wpq_slot(r.line_addr, r.bank) {
            Some(i) if !self.line_waits(r.line_addr) => {
                self.write_q.get_mut(i).absorb(r);
                self.stats.writes_coalesced += 1;
                None
            }
            _ => Some(r),
        }
    }

    /// True when a read or write is queued or waiting.
    pub fn busy(&self) -> bool {
        !self.read_q.is_empty() || !self.write_q.is_empty() || self.has_waiting()
    }

    /// Makes one scheduling decision at `now` with `sched` (the scheduler the controller was
    /// built for).
    #[inline]
    pub fn decide(&mut self, sched: &mut dyn Scheduler, now: Ps) -> Decision {
        let (decision, settle) = self.decide_unsettled(sched, now);
        if let Some(s) = settle {
            self.settle(s);
        }
        decision
    }

    /// [`decide`](Self::decide) up to the access, without bringing the queues' view of the
    /// banks up to date: when it issues, the caller hands the returned [`Settle`] to
    /// [`settle`](Self::settle) before anything else looks at the queues (it may first deal
    /// with the request, which then is no longer alive beside the queues' update).
    #[inline(always)]
    pub(crate) fn decide_unsettled(
        &mut self,
        sched: &mut dyn Scheduler,
        now: Ps,
    ) -> (Decision, Option<Settle>) {
        self.stats.decisions += 1;
        self.ready_hint = None;
        if self.write_q.len() >= self.drain_high && !self.draining {
            self.draining = true;
            self.stats.drain_episodes += 1;
        } else if self.draining && self.write_q.len() <= self.drain_low {
            self.draining = false;
        }
        let serve_writes = !self.write_q.is_empty() && (self.draining || self.read_q.is_empty());
        if !serve_writes && self.read_q.is_empty() {
            return (Decision::Idle, None);
        }
        let queue = if serve_writes {
            &mut self.write_q
        } else {
            &mut self.read_q
        };
        let builtin = self.policy.is_some();
        let (pick, others_ready) = match self.policy {
            Some(BuiltinPolicy::FrFcfs) => queue.pick_frfcfs(now),
            None => (sched.pick(queue.summarize(now), now), None),
        };
        let (i, hit) = match pick {
            Pick::WaitUntil(t) => return (Decision::WaitUntil(t.max(now + 1)), None),
            Pick::Issue { bank, hit } => (bank, hit),
        };
        let slot = if builtin {
            // The queue's own pick: nothing to check.
            queue.picked_slot(i, hit)
        } else {
            let slot = queue.candidate(i, hit);
            queue.check_slot(slot);
            slot
        };
        let request = queue.remove_slot(slot, &self.device);
        let bank = request.bank as usize;
        // Which device kind is decided once: a device that does not refresh (NVM) never
        // checks for refreshes.
        let (plan, refreshed) = if self.device.refreshes() {
            let plan = self
                .device
                .access_with::<true>(bank, request.row, serve_writes, now);
            (plan, self.device.take_refreshed())
        } else {
            let plan = self
                .device
                .access_with::<false>(bank, request.row, serve_writes, now);
            (plan, false)
        };
        if serve_writes && self.draining {
            self.stats.writes_in_drain += 1;
        }
        let settle = Settle {
            bank: bank as u32,
            opened: plan.activate.is_some(),
            refreshed,
            serve_writes,
            others_ready,
        };
        (
            Decision::Issued {
                request,
                plan,
                is_write: serve_writes,
            },
            Some(settle),
        )
    }

    /// Brings the queues' view of the banks up to date after the access of a decision
    /// ([`decide_unsettled`](Self::decide_unsettled)).
    #[inline(always)]
    pub(crate) fn settle(&mut self, s: Settle) {
        let Settle {
            bank,
            opened,
            refreshed,
            serve_writes,
            others_ready,
        } = s;
        let bank = bank as usize;
        // The bank's readiness changed; when a row opened, its row hits changed with it.
        if refreshed {
            // A refresh closed a rank's rows and moved its banks' readiness.
            self.read_q.all_banks_changed(&self.device);
            self.write_q.all_banks_changed(&self.device);
        } else {
            self.read_q.bank_changed(bank, &self.device, opened);
            self.write_q.bank_changed(bank, &self.device, opened);
        }
        if opened && self.device.has_closed_banks() {
            // Closed banks' readiness follows their rank's activations.
            self.read_q.refresh_all(&self.device);
            self.write_q.refresh_all(&self.device);
        } else if let Some(others) = others_ready {
            // Only this bank's entries changed: the served queue's next issue time is known.
            let served = if serve_writes {
                &self.write_q
            } else {
                &self.read_q
            };
            self.ready_hint = Some((serve_writes, others.min(served.bank_ready(bank))));
        }
    }

    /// Earliest time at or after `t` at which the queue that would be served next has a
    /// request ready to issue (`None` when both queues are empty).
    #[inline]
    pub fn next_ready(&self, t: Ps) -> Option<Ps> {
        let draining = self.draining || self.write_q.len() >= self.drain_high;
        let serve_writes = !self.write_q.is_empty() && (draining || self.read_q.is_empty());
        let queue = if serve_writes {
            &self.write_q
        } else {
            &self.read_q
        };
        match self.ready_hint {
            Some((w, ready)) if w == serve_writes && !queue.is_empty() => Some(ready.max(t)),
            _ => queue.next_ready(t),
        }
    }

    /// Whether the controller is in write-drain mode.
    pub fn draining(&self) -> bool {
        self.draining
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SimConfig;
    use crate::scheduler::{BankCandidates, FrFcfs};

    /// FR-FCFS as a plug-in without the built-in declaration: the controller must take the
    /// generic path (candidate list, `pick`).
    #[derive(Clone)]
    struct PluginFrFcfs;

    impl Scheduler for PluginFrFcfs {
        fn clone_box(&self) -> Box<dyn Scheduler> {
            Box::new(self.clone())
        }

        fn name(&self) -> &'static str {
            "frfcfs-plugin"
        }

        fn pick(&mut self, banks: &[BankCandidates], now: Ps) -> Pick {
            FrFcfs.pick(banks, now)
        }
    }

    fn request(id: u64, line: u64, dev: &ChannelDevice, cfg: &SimConfig) -> QueuedRequest {
        let map = crate::device::AddressMap::new(&cfg.device);
        let loc = map.locate(line * 64);
        QueuedRequest {
            id,
            line_addr: line * 64,
            row: loc.row,
            bank: dev.bank_index(&loc) as u32,
            channel: loc.channel as u16,
            holds_entry: false,
            issued: 0,
            payload: None,
        }
    }

    /// A write of a line that waits for a WPQ entry keeps its place: a later write of the line
    /// waits behind it instead of merging into a queued entry of the line, which (durable first
    /// under ADR) the older write's bytes would then overwrite when it enters.
    #[test]
    fn a_later_write_of_a_line_waits_behind_its_waiting_write() {
        let mut cfg = SimConfig::preset("nvm-ppo").unwrap();
        cfg.controller.write_queue = 2;
        cfg.controller.drain_high = 2;
        cfg.controller.drain_low = 1;
        let mut c =
            ChannelController::new(&cfg.controller, ChannelDevice::new(&cfg.device), &FrFcfs);
        let w = |c: &ChannelController, id, line| request(id, line, &c.device, &cfg);
        // WPQ full with lines 10 and 11; line 1, line 12 and line 1 again wait, in that order.
        for (id, line) in [(0, 10), (1, 11)] {
            assert_eq!(c.offer(true, w(&c, id, line), 0), Admission::Queued);
        }
        for (id, line) in [(2, 1), (3, 12), (4, 1)] {
            assert_eq!(c.offer(true, w(&c, id, line), 0), Admission::Waiting);
        }
        // One write issues; the first waiting write (line 1) takes its entry.
        assert!(matches!(
            c.decide(&mut FrFcfs, 1_000_000),
            Decision::Issued { .. }
        ));
        let mut entered = Vec::new();
        c.admit_waiting(true, 1_000_000, &mut entered);
        assert_eq!(entered.iter().map(|r| r.id).collect::<Vec<_>>(), [2]);
        assert!(c.wpq_holds(64, w(&c, 9, 1).bank));
        // Line 1 is in the WPQ, but its second write still waits: a third may not merge.
        assert!(!c.would_accept(true, 64, w(&c, 9, 1).bank));
        assert_eq!(c.offer(true, w(&c, 5, 1), 1_000_000), Admission::Waiting);
        assert_eq!(
            c.waiting_writes
                .iter()
                .map(|(_, r)| r.id)
                .collect::<Vec<_>>(),
            [3, 4, 5]
        );
    }

    /// The controller's own FR-FCFS evaluation and the plug-in path make the same decisions,
    /// step by step, on random traffic with row hits, drains and full queues.
    #[test]
    fn builtin_frfcfs_decides_as_the_plugin() {
        for preset in crate::config::preset_names() {
            let mut cfg = SimConfig::preset(preset).unwrap();
            cfg.device.row_bytes = 256; // small rows: row hits and conflicts both common
            let mut fused =
                ChannelController::new(&cfg.controller, ChannelDevice::new(&cfg.device), &FrFcfs);
            let mut generic = ChannelController::new(
                &cfg.controller,
                ChannelDevice::new(&cfg.device),
                &PluginFrFcfs,
            );
            assert_eq!(fused.policy, Some(BuiltinPolicy::FrFcfs));
            assert_eq!(generic.policy, None);
            let (mut x, mut now) = (0x2545_f491_4f6c_dd1du64, 0);
            let (mut entered_a, mut entered_b) = (Vec::new(), Vec::new());
            for id in 0..20_000u64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                now += x % 4_000;
                if !x.is_multiple_of(3) {
                    let is_write = x.is_multiple_of(5);
                    let line = (x >> 20) % 512;
                    let a = fused.offer(is_write, request(id, line, &fused.device, &cfg), 0);
                    let b = generic.offer(is_write, request(id, line, &generic.device, &cfg), 0);
                    assert_eq!(a, b);
                }
                let a = fused.decide(&mut FrFcfs, now);
                let b = generic.decide(&mut PluginFrFcfs, now);
                match (&a, &b) {
                    (
                        Decision::Issued {
                            request: ra,
                            plan: pa,
                            is_write: wa,
                        },
                        Decision::Issued {
                            request: rb,
                            plan: pb,
                            is_write: wb,
                        },
                    ) => {
                        assert_eq!((ra.id, pa, wa), (rb.id, pb, wb), "{preset} step {id}");
                        fused.admit_waiting(cfg.controller.adr, 0, &mut entered_a);
                        generic.admit_waiting(cfg.controller.adr, 0, &mut entered_b);
                        assert_eq!(fused.next_ready(now + 1), generic.next_ready(now + 1));
                    }
                    (Decision::WaitUntil(ta), Decision::WaitUntil(tb)) => assert_eq!(ta, tb),
                    (Decision::Idle, Decision::Idle) => {}
                    _ => panic!("{preset} step {id}: {a:?} vs {b:?}"),
                }
                assert_eq!(fused.occupancy(), generic.occupancy());
            }
            assert_eq!(fused.stats, generic.stats);
            assert!(
                fused.device.stats().row_hits > 0,
                "{preset}: no row hits exercised"
            );
        }
    }
}
