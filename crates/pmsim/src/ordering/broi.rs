//! PPO's BROI controller (Hu et al., MICRO'18, Sec. IV): buffered strict persistence with
//! BLP-aware barrier-region scheduling into the memory controller's write queue.
//!
//! * **Persist buffers** (`controller.persist_buffer` entries per thread, Sec. IV-E: 8) hold a
//!   thread's persists; a fence does not stall the thread (a full buffer does). Inter-thread
//!   dependencies from the directory's last writer hold a dependent epoch back until the
//!   epochs it depends on are persisted (Sec. IV-C 1-i).
//! * **Local BROI queue**: one entry per hardware thread. An entry sees its *SubReady-SET*
//!   (the requests of its oldest unpersisted epoch) and its *Next-SET* (the following epoch),
//!   as its two barrier index registers allow, within `controller.broi_units` units (Sec. IV-E:
//!   8). Requests after a barrier stay in the entry until every request before it is persisted.
//! * **Priority** (Equation 2): `Priority(R_i) = BLP(R - R_i^0 + R_i^1) - sigma * size(R_i^0)`,
//!   where `R` is the Ready-SET (the SubReady-SETs of all entries), `BLP` counts the banks a set
//!   touches, and `sigma` (`controller.broi_sigma`) weighs size against BLP.
//! * **Bank-candidate queues**: the Ready-SET's requests queue by bank; each bank outputs its
//!   highest-priority request (ties: the oldest) into the write queue when the bank has no BROI
//!   request in flight, forming the Sch-SET. FR-FCFS then schedules the write queue as usual.
//! * **Remote BROI queue**: one entry per RDMA channel (`controller.broi_remote_entries`,
//!   Sec. IV-E: 2), one epoch per `rdma_pwrite` verb (a client's `RdmaPwrite`s up to its
//!   fence). Local requests go first; remote ones wait until the write queue is at or below
//!   its low watermark (low utilisation), nothing local is in flight, or they have waited
//!   `controller.broi_remote_threshold_ns` (then they go first).
//!
//! Requests are persisted when acknowledged by the persistence domain (the NVM device in PPO's
//! setup, the WPQ under ADR).

use super::epochs::{Epoch, StreamId, Streams};
use super::{FenceAction, OrderingModel, Persist};
use crate::config::ControllerConfig;
use crate::memsys::MemoryView;
use crate::stats::Stats;
use crate::time::{ns_to_ps, Ps};

/// Bank sets are bit masks; banks beyond this many fold onto the same bits (BLP is then
/// undercounted, never overcounted beyond the true bank count).
const MASK_BANKS: usize = 128;

fn bit(bank: u32) -> u128 {
    1u128 << (bank as usize % MASK_BANKS)
}

/// One local entry's view for scheduling.
#[derive(Clone, Copy, Debug)]
struct Entry {
    id: StreamId,
    /// Banks of the SubReady-SET's requests not yet scheduled.
    ready: u128,
    /// Banks of the Next-SET's requests (within the entry's units).
    next: u128,
    /// Requests of the SubReady-SET not yet persisted.
    size: usize,
    priority: f64,
}

/// The BROI controller.
#[derive(Clone, Debug)]
pub struct BroiOrdering {
    streams: Streams,
    persist_buffer: usize,
    sigma: f64,
    units: usize,
    remote_entries: u16,
    remote_threshold: Ps,
    /// Deliberate bug for checker tests: requests after a barrier are scheduled as if there
    /// were none.
    ignore_barriers: bool,
    /// The `ignore-dependencies` fault: inter-thread dependencies are dropped.
    ignore_dependencies: bool,
    /// BROI requests in flight per bank.
    bank_busy: Vec<u32>,
    /// Banks with no BROI request in flight.
    banks_idle: usize,
    local_inflight: u32,
    entries: Vec<Entry>,
    released_local: u64,
    released_remote: u64,
    remote_starved: u64,
}

impl Default for BroiOrdering {
    fn default() -> Self {
        let c = ControllerConfig::default();
        BroiOrdering {
            streams: Streams::default(),
            persist_buffer: c.persist_buffer as usize,
            sigma: c.broi_sigma,
            units: c.broi_units as usize,
            remote_entries: c.broi_remote_entries as u16,
            remote_threshold: ns_to_ps(c.broi_remote_threshold_ns),
            ignore_barriers: false,
            ignore_dependencies: false,
            bank_busy: Vec::new(),
            banks_idle: 0,
            local_inflight: 0,
            entries: Vec::new(),
            released_local: 0,
            released_remote: 0,
            remote_starved: 0,
        }
    }
}

/// The banks of `epoch`'s held requests, at most `limit` of them.
fn banks_of(epoch: &Epoch, limit: usize) -> u128 {
    epoch
        .held
        .iter()
        .take(limit)
        .fold(0, |m, h| m | bit(h.p.bank))
}

impl BroiOrdering {
    /// Builds the local entries' sets and priorities (Equation 2).
    fn compute_entries(&mut self) {
        self.entries.clear();
        for (id, _) in self.streams.ready_fronts() {
            if id.remote {
                continue;
            }
            let s = self.streams.peek(id).expect("a ready stream exists");
            let front = s.epochs.front().expect("a ready stream has an epoch");
            let (ready, size) = if self.ignore_barriers {
                let all = s.epochs.iter();
                (
                    all.clone().fold(0, |m, e| m | banks_of(e, usize::MAX)),
                    all.map(|e| e.remaining()).sum(),
                )
            } else {
                (banks_of(front, usize::MAX), front.remaining())
            };
            if ready == 0 {
                continue;
            }
            let next = match s.epochs.get(1) {
                Some(n) if front.closed && !self.ignore_barriers => {
                    banks_of(n, self.units.saturating_sub(size))
                }
                _ => 0,
            };
            self.entries.push(Entry {
                id,
                ready,
                next,
                size,
                priority: 0.0,
            });
        }
        // BLP(R - R_i^0 + R_i^1): the banks other entries' SubReady-SETs touch, plus entry i's
        // Next-SET.
        let mut count = [0u16; MASK_BANKS];
        let mut union = 0u128;
        for e in &self.entries {
            union |= e.ready;
            let mut m = e.ready;
            while m != 0 {
                count[m.trailing_zeros() as usize] += 1;
                m &= m - 1;
            }
        }
        let mut single = 0u128;
        let mut m = union;
        while m != 0 {
            let b = m.trailing_zeros() as usize;
            if count[b] == 1 {
                single |= 1u128 << b;
            }
            m &= m - 1;
        }
        for e in &mut self.entries {
            let others = union & !(e.ready & single);
            let blp = (others | e.next).count_ones() as f64;
            e.priority = blp - self.sigma * e.size as f64;
        }
    }

    /// The Equation 2 priority of every local entry with requests to schedule, as
    /// `(thread, priority)`, in thread order: the scheduler's view now.
    pub fn priorities(&mut self) -> Vec<(u16, f64)> {
        self.compute_entries();
        self.entries
            .iter()
            .map(|e| (e.id.index, e.priority))
            .collect()
    }

    /// Index of the first held request in bank `bank` among the schedulable epochs of stream
    /// `id`, as (epoch number, index in the epoch).
    fn find(&self, id: StreamId, bank: u32) -> Option<(u64, usize, u64)> {
        let s = self.streams.peek(id)?;
        let upto = self.schedulable_len(s.epochs.len());
        for (k, e) in s.epochs.iter().take(upto).enumerate() {
            if let Some(i) = e.held.iter().position(|h| h.p.bank == bank) {
                return Some((s.base + k as u64, i, e.held[i].p.id));
            }
        }
        None
    }

    /// How many of an entry's `epochs` may be scheduled now: the SubReady-SET's (all of them
    /// when barriers are ignored).
    fn schedulable_len(&self, epochs: usize) -> usize {
        if self.ignore_barriers {
            epochs
        } else {
            1.min(epochs)
        }
    }

    /// The oldest held remote request in bank `bank` whose stream's epoch may go, as
    /// (stream, epoch number, index, arrival time).
    fn remote_candidate(&self, bank: u32) -> Option<(StreamId, u64, usize, Ps)> {
        let mut best: Option<(StreamId, u64, usize, Ps, u64)> = None;
        for id in self.streams.ids().filter(|i| i.remote) {
            let Some(s) = self.streams.peek(id) else {
                continue;
            };
            let upto = self.schedulable_len(s.epochs.len());
            for (k, e) in s.epochs.iter().take(upto).enumerate() {
                if let Some(i) = e.held.iter().position(|h| h.p.bank == bank) {
                    let h = e.held[i];
                    if best.is_none_or(|b| (h.since, h.p.id) < (b.3, b.4)) {
                        best = Some((id, s.base + k as u64, i, h.since, h.p.id));
                    }
                    break;
                }
            }
        }
        best.map(|(s, n, i, t, _)| (s, n, i, t))
    }

    /// One scheduling round: every bank with no BROI request in flight outputs its
    /// highest-priority candidate.
    fn schedule(&mut self, now: Ps, mem: &dyn MemoryView, release: &mut Vec<Persist>) {
        let banks = mem.banks();
        if self.bank_busy.len() < banks {
            self.banks_idle += banks - self.bank_busy.len();
            self.bank_busy.resize(banks, 0);
        }
        if self.banks_idle == 0 || self.streams.held() == 0 {
            // No bank can take a request, or nothing waits: the round would output nothing.
            return;
        }
        self.compute_entries();
        let remote_may_go =
            mem.writes_queued() <= mem.write_queue_low() || self.local_inflight == 0;
        for b in 0..banks {
            if self.bank_busy[b] > 0 {
                continue;
            }
            let bank = b as u32;
            let remote = self.remote_candidate(bank);
            let starved = remote.is_some_and(|r| now.saturating_sub(r.3) >= self.remote_threshold);
            if !starved {
                // The highest-priority local entry with a request in this bank.
                let mut best: Option<(f64, u64, StreamId, u64, usize)> = None;
                for e in &self.entries {
                    if e.ready & bit(bank) == 0 {
                        continue;
                    }
                    let Some((n, i, rid)) = self.find(e.id, bank) else {
                        continue;
                    };
                    let better = match best {
                        None => true,
                        Some((p, old, ..)) => e.priority > p || (e.priority == p && rid < old),
                    };
                    if better {
                        best = Some((e.priority, rid, e.id, n, i));
                    }
                }
                if let Some((_, _, id, n, i)) = best {
                    let p = self.streams.release(id, n, i);
                    self.bank_busy[b] += 1;
                    self.banks_idle -= 1;
                    self.local_inflight += 1;
                    self.released_local += 1;
                    release.push(p);
                    continue;
                }
            }
            if let Some((id, n, i, _)) = remote {
                if starved || remote_may_go {
                    let p = self.streams.release(id, n, i);
                    self.bank_busy[b] += 1;
                    self.banks_idle -= 1;
                    self.released_remote += 1;
                    self.remote_starved += starved as u64;
                    release.push(p);
                }
            }
        }
    }
}

impl OrderingModel for BroiOrdering {
    fn clone_box(&self) -> Box<dyn OrderingModel> {
        Box::new(self.clone())
    }

    fn name(&self) -> &'static str {
        "broi"
    }

    fn configure(&mut self, c: &ControllerConfig) -> Result<(), String> {
        (self.ignore_barriers, self.ignore_dependencies) = match c.ordering_fault.as_str() {
            "none" => (false, false),
            "broi-ignore-barriers" => (true, false),
            "ignore-dependencies" => (false, true),
            f => {
                return Err(format!(
                    "controller.ordering_fault = \"{f}\": ordering \"broi\" knows only \
                     \"broi-ignore-barriers\" and \"ignore-dependencies\""
                ))
            }
        };
        self.persist_buffer = c.persist_buffer as usize;
        self.sigma = c.broi_sigma;
        self.units = c.broi_units as usize;
        self.remote_entries = c.broi_remote_entries as u16;
        self.remote_threshold = ns_to_ps(c.broi_remote_threshold_ns);
        Ok(())
    }

    fn on_persist(
        &mut self,
        mut p: Persist,
        now: Ps,
        mem: &dyn MemoryView,
        release: &mut Vec<Persist>,
    ) {
        if p.remote {
            p.thread %= self.remote_entries;
        }
        self.streams.push(p, now);
        self.schedule(now, mem, release);
    }

    fn on_fence(&mut self, thread: u16) -> FenceAction {
        self.streams.get(StreamId::local(thread)).barrier();
        FenceAction::Proceed
    }

    fn on_remote_epoch_end(&mut self, channel: u16) {
        self.streams
            .get(StreamId::remote(channel % self.remote_entries))
            .barrier();
    }

    fn on_dependency(&mut self, thread: u16, source: u16) {
        if !self.ignore_dependencies {
            self.streams
                .depend(StreamId::local(thread), StreamId::local(source));
        }
    }

    fn on_persist_ack(
        &mut self,
        id: u64,
        now: Ps,
        mem: &dyn MemoryView,
        release: &mut Vec<Persist>,
    ) {
        let Some((stream, bank)) = self.streams.acked(id) else {
            return;
        };
        self.bank_busy[bank as usize] -= 1;
        if self.bank_busy[bank as usize] == 0 {
            self.banks_idle += 1;
        }
        if !stream.remote {
            self.local_inflight -= 1;
        }
        self.schedule(now, mem, release);
    }

    fn persist_buffer(&self) -> Option<usize> {
        Some(self.persist_buffer)
    }

    fn export_stats(&self, s: &mut Stats) {
        s.set(
            "ordering.released",
            self.released_local + self.released_remote,
        );
        s.set("ordering.released_remote", self.released_remote);
        s.set("ordering.remote_starved", self.remote_starved);
        s.set("ordering.dependencies", self.streams.dependencies);
        s.set("ordering.held_at_end", self.streams.held() as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bmo::NoBmo;
    use crate::memsys::MemorySystem;
    use crate::ordering::EpochOrdering;
    use crate::scheduler::FrFcfs;
    use crate::SimConfig;
    use std::collections::HashMap;

    /// PPO's NVRAM (Table III: 8 banks, 2 KB rows, row-sized groups strided over the banks).
    fn ppo_memory() -> MemorySystem {
        let cfg = SimConfig::preset("nvm-ppo").unwrap();
        MemorySystem::new(&cfg, Box::new(FrFcfs), Box::new(NoBmo))
    }

    /// A line in `bank` (row `row` of it).
    fn in_bank(mem: &MemorySystem, bank: u32, row: u64) -> u64 {
        let addr = (row * 8 + bank as u64) * 2048;
        assert_eq!(mem.bank_of(addr), bank as usize, "row-stride mapping");
        addr
    }

    /// The requests of PPO Fig. 3 / Fig. 6(c): three independent threads, barriers between
    /// their epochs. The text gives the banks of 1.1, 1.2, 2.1, 3.1 (bank 0) and 2.2 (bank 1);
    /// the others are chosen here (the figure's labels are not in the text).
    /// `(name, thread, epoch, bank)`.
    const FIG3: [(&str, u16, u32, u32); 10] = [
        ("1.1", 0, 0, 0),
        ("1.2", 0, 0, 0),
        ("1.3", 0, 1, 2),
        ("1.4", 0, 2, 3),
        ("2.1", 1, 0, 0),
        ("2.2", 1, 1, 1),
        ("2.3", 1, 2, 2),
        ("3.1", 2, 0, 0),
        ("3.2", 2, 1, 0),
        ("3.3", 2, 2, 1),
    ];

    /// A persist of `thread` to row `row` of `bank`.
    fn persist(mem: &MemorySystem, id: u64, thread: u16, bank: u32, row: u64) -> Persist {
        Persist {
            id,
            thread,
            line_addr: in_bank(mem, bank, row),
            bank,
            remote: false,
        }
    }

    /// Feeds FIG3 to `model` (fences between a thread's epochs) after a request of a fourth
    /// thread in bank 0, which goes at once and stays in flight (BROI: bank 0 is busy; Epoch:
    /// a barrier region is open), so nothing of FIG3 is released yet. Returns the blocker and
    /// the requests' names by id.
    fn feed_fig3(
        model: &mut dyn OrderingModel,
        mem: &MemorySystem,
    ) -> (Persist, HashMap<u64, &'static str>) {
        let mut release = Vec::new();
        let blocker = persist(mem, 1000, 3, 0, 9);
        model.on_persist(blocker, 0, mem, &mut release);
        assert_eq!(release, vec![blocker], "the first request goes at once");
        release.clear();
        let mut names = HashMap::new();
        let mut epoch = [0u32; 3];
        for (i, &(name, t, e, bank)) in FIG3.iter().enumerate() {
            if e != epoch[t as usize] {
                model.on_fence(t);
                epoch[t as usize] = e;
            }
            let p = persist(mem, i as u64, t, bank, i as u64 + 1);
            names.insert(p.id, name);
            model.on_persist(p, 0, mem, &mut release);
        }
        assert!(
            release.is_empty(),
            "nothing goes while the blocker is in flight"
        );
        (blocker, names)
    }

    /// Feeds FIG3 ([`feed_fig3`]), then acknowledges every released request in release order;
    /// returns the requests' names in release order, each release round separated by `|`.
    fn run_fig3(model: &mut dyn OrderingModel) -> String {
        let mem = ppo_memory();
        let (blocker, names) = feed_fig3(model, &mem);
        let mut release = Vec::new();
        let mut order = Vec::new();
        let mut acks = std::collections::VecDeque::from([blocker.id]);
        while let Some(id) = acks.pop_front() {
            model.on_persist_ack(id, 0, &mem, &mut release);
            if !release.is_empty() {
                order.push(
                    release
                        .iter()
                        .map(|p| names[&p.id])
                        .collect::<Vec<_>>()
                        .join(","),
                );
            }
            acks.extend(release.drain(..).map(|p| p.id));
        }
        order.join("|")
    }

    /// Equation 2 on Fig. 6(c)'s initial Ready-SET (1.1, 1.2, 2.1, 3.1, all in bank 0), by
    /// hand with sigma = 0.5:
    /// * entry 1: BLP({2.1, 3.1} + {1.3: bank 2}) - 0.5 * 2 = 2 - 1 = 1.0
    /// * entry 2: BLP({1.1, 1.2, 3.1} + {2.2: bank 1}) - 0.5 * 1 = 2 - 0.5 = 1.5
    /// * entry 3: BLP({1.1, 1.2, 2.1} + {3.2: bank 0}) - 0.5 * 1 = 1 - 0.5 = 0.5
    #[test]
    fn equation_2_priorities_of_the_fig6c_ready_set() {
        let mem = ppo_memory();
        let mut broi = BroiOrdering::default();
        // Bank 0 busy: everything stays in the BROI queues.
        feed_fig3(&mut broi, &mem);
        assert_eq!(broi.priorities(), vec![(0, 1.0), (1, 1.5), (2, 0.5)]);
        // A larger sigma weighs size more: entry 1 (two requests) drops below entry 3.
        broi.sigma = 2.0;
        assert_eq!(broi.priorities(), vec![(0, -2.0), (1, 0.0), (2, -1.0)]);
    }

    /// Fig. 3(b) / 6(c): BROI issues 2.1 first (completing it brings 2.2 of bank 1 into the
    /// Ready-SET), then keeps one request per bank in flight, by priority. The full order was
    /// worked out by hand from Equation 2 (sigma = 0.5), one round per acknowledgement.
    #[test]
    fn broi_issues_the_fig3_example_by_bank_level_parallelism() {
        let order = run_fig3(&mut BroiOrdering::default());
        assert_eq!(order, "2.1|1.1,2.2|1.2|2.3|3.1|1.3|3.2|1.4|3.3");
    }

    /// Fig. 3(a): the Epoch baseline flattens the threads' barriers into global ones.
    #[test]
    fn epoch_flattens_the_fig3_example_into_global_barrier_regions() {
        let order = run_fig3(&mut EpochOrdering::default());
        assert_eq!(order, "1.1,1.2,2.1,3.1|1.3,2.2,3.2|1.4,2.3,3.3");
    }

    /// A remote request waits while local requests keep the write queue busy, but not past
    /// `broi_remote_threshold_ns`: then it goes ahead of the local ones in its bank.
    #[test]
    fn remote_requests_wait_for_low_utilisation_but_are_not_starved() {
        let mem = ppo_memory();
        let mut broi = BroiOrdering::default();
        let threshold = broi.remote_threshold;
        let mut release = Vec::new();
        let mut id = 0;
        let mut local = |release: &mut Vec<Persist>, broi: &mut BroiOrdering, now: Ps| {
            id += 1;
            let p = persist(&mem, id, 0, 0, id);
            broi.on_persist(p, now, &mem, release);
            p
        };
        let first = local(&mut release, &mut broi, 0);
        assert_eq!(release, vec![first]);
        release.clear();
        let remote = Persist {
            remote: true,
            ..persist(&mem, 500, 0, 0, 77)
        };
        broi.on_persist(remote, 0, &mem, &mut release);
        broi.on_remote_epoch_end(0);
        // Local requests keep arriving in bank 0: each acknowledgement hands the bank to the
        // next local one while the remote request is younger than the threshold.
        let step = threshold / 4;
        let mut inflight = first.id;
        let mut now = 0;
        let mut remote_at = None;
        for _ in 0..8 {
            let next = local(&mut release, &mut broi, now);
            assert!(release.is_empty(), "bank 0 is busy");
            now += step;
            broi.on_persist_ack(inflight, now, &mem, &mut release);
            // The write queue is empty here (this test does not drive the controller), so
            // only the local request in flight holds the remote one back.
            assert_eq!(release.len(), 1);
            if release[0].id == remote.id {
                remote_at = Some(now);
                break;
            }
            assert_eq!(release[0].id, next.id);
            inflight = next.id;
            release.clear();
        }
        let at = remote_at.expect("the remote request went before the local stream ended");
        assert!(
            at >= threshold && at < threshold + step,
            "released at {at} ps"
        );
        assert_eq!(broi.remote_starved, 1);
    }
}
