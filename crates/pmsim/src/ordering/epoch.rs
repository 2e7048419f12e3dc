//! Buffered epoch persistency with delegated ordering (Kolli et al., "Delegated persist
//! ordering", MICRO'16): PPO's *Epoch* baseline.
//!
//! Each hardware thread has a persist buffer (`controller.persist_buffer` entries; PPO
//! Sec. IV-E: 8). A fence does not stall its thread: it closes the thread's epoch, and only a
//! full persist buffer stalls the thread. Inter-thread dependencies from the directory's last
//! writer (persist-persist and epoch-persist) hold a dependent epoch back until the epochs it
//! depends on are persisted.
//!
//! At the memory controller the barriers of all threads become global (PPO Sec. III, Fig. 3a:
//! "after the barrier region management, the requests sent to the memory controller are as
//! follows: (1.1, 1.2, 2.1, 3.1), barrier, (1.3, 2.2, 3.2), barrier, (1.4, 2.3, 3.3)"): the
//! model releases a *barrier region* made of the oldest epoch of every thread whose
//! dependencies are met, and the next region only when every persist of this one is
//! acknowledged. Persists a thread adds to an epoch of the current region (one it has not
//! closed yet) join the region at once. Remote persists (one epoch per `rdma_pwrite` verb) take part
//! like a thread's.

use super::epochs::{StreamId, Streams};
use super::{FenceAction, OrderingModel, Persist};
use crate::config::ControllerConfig;
use crate::memsys::MemoryView;
use crate::stats::Stats;
use crate::time::Ps;

/// PPO's Epoch baseline.
#[derive(Clone, Debug)]
pub struct EpochOrdering {
    streams: Streams,
    persist_buffer: usize,
    /// The epochs of the current barrier region.
    region: Vec<(StreamId, u64)>,
    /// Persists of the region released and not yet acknowledged.
    region_inflight: u32,
    regions: u64,
    released: u64,
    /// The `ignore-dependencies` fault: inter-thread dependencies are dropped.
    ignore_dependencies: bool,
}

impl Default for EpochOrdering {
    fn default() -> Self {
        EpochOrdering {
            streams: Streams::default(),
            persist_buffer: 8,
            region: Vec::new(),
            region_inflight: 0,
            regions: 0,
            released: 0,
            ignore_dependencies: false,
        }
    }
}

impl EpochOrdering {
    /// Forms the next barrier region from the oldest epoch of every stream whose dependencies
    /// are met, and releases what it holds.
    fn next_region(&mut self, release: &mut Vec<Persist>) {
        self.region.clear();
        let ready: Vec<(StreamId, u64)> = self.streams.ready_fronts().collect();
        for (id, n) in ready {
            self.region.push((id, n));
            while !self.streams.get(id).epochs[0].held.is_empty() {
                release.push(self.streams.release(id, n, 0));
                self.region_inflight += 1;
                self.released += 1;
            }
        }
        self.regions += 1;
    }
}

impl OrderingModel for EpochOrdering {
    fn clone_box(&self) -> Box<dyn OrderingModel> {
        Box::new(self.clone())
    }

    fn name(&self) -> &'static str {
        "epoch"
    }

    fn configure(&mut self, c: &ControllerConfig) -> Result<(), String> {
        self.ignore_dependencies = match c.ordering_fault.as_str() {
            "none" => false,
            "ignore-dependencies" => true,
            f => {
                return Err(format!(
                    "controller.ordering_fault = \"{f}\": ordering \"epoch\" knows only \
                     \"ignore-dependencies\""
                ))
            }
        };
        self.persist_buffer = c.persist_buffer as usize;
        Ok(())
    }

    fn on_persist(
        &mut self,
        p: Persist,
        now: Ps,
        _mem: &dyn MemoryView,
        release: &mut Vec<Persist>,
    ) {
        let id = StreamId::of(&p);
        let n = self.streams.push(p, now);
        if self.region.contains(&(id, n)) {
            let s = self.streams.get(id);
            let held = &s.epochs[(n - s.base) as usize].held;
            let i = held.len() - 1;
            release.push(self.streams.release(id, n, i));
            self.region_inflight += 1;
            self.released += 1;
        } else if self.region_inflight == 0 {
            self.next_region(release);
        }
    }

    fn on_fence(&mut self, thread: u16) -> FenceAction {
        self.streams.get(StreamId::local(thread)).barrier();
        FenceAction::Proceed
    }

    fn on_remote_epoch_end(&mut self, channel: u16) {
        self.streams.get(StreamId::remote(channel)).barrier();
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
        _now: Ps,
        _mem: &dyn MemoryView,
        release: &mut Vec<Persist>,
    ) {
        if self.streams.acked(id).is_none() {
            return;
        }
        self.region_inflight -= 1;
        if self.region_inflight == 0 {
            self.next_region(release);
        }
    }

    fn persist_buffer(&self) -> Option<usize> {
        Some(self.persist_buffer)
    }

    fn export_stats(&self, s: &mut Stats) {
        s.set("ordering.released", self.released);
        s.set("ordering.barrier_regions", self.regions);
        s.set("ordering.dependencies", self.streams.dependencies);
    }
}
