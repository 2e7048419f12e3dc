//! Persist-ordering models: when a thread's persists may enter the memory controller and what
//! a fence costs the thread.
//!
//! The baseline is x86 (synchronous ordering): persists go to the controller at once and a
//! fence stalls its thread until every earlier persist of that thread is acknowledged by the
//! persistence domain. Buffered models hold persists in per-thread persist buffers and release
//! them epoch by epoch, so a fence does not stall its thread (only a full persist buffer does):
//! [`epoch`] (buffered epoch persistency with delegated ordering, Kolli et al. MICRO'16: the
//! epochs of all threads flattened into global barrier regions at the controller) and [`broi`]
//! (PPO's BROI controller: per-thread barrier regions scheduled into the write queue by
//! bank-level parallelism).
//!
//! The requesters (full system, memory-only replay) call a model from fixed hooks:
//!
//! | hook | when |
//! |---|---|
//! | [`on_persist`](OrderingModel::on_persist) | a persist (`clwb`/`clflushopt` write-back, non-temporal or remote write; under a buffered model also the eviction of a line a thread wrote) leaves the cache hierarchy for the PM controller |
//! | [`on_fence`](OrderingModel::on_fence) | a thread executes `sfence`/`mfence` (an epoch boundary) |
//! | [`on_dependency`](OrderingModel::on_dependency) | a thread accesses a PM line another thread wrote last (the directory's last writer): an inter-thread persist dependency |
//! | [`on_persist_ack`](OrderingModel::on_persist_ack) | the persistence domain acknowledged a persist the model released |
//!
//! A model releases persists by appending them to `release`; a released persist enters the
//! memory controller's write queue, where the request scheduler takes over. Which persists a
//! model released when, and in which order they became durable, is checked independently of
//! the models by [`crate::persist_check`].

pub mod broi;
pub mod epoch;
mod epochs;
mod x86;

pub use broi::BroiOrdering;
pub use epoch::EpochOrdering;
pub use x86::X86Ordering;

use crate::config::ControllerConfig;
use crate::memsys::MemoryView;
use crate::stats::Stats;
use crate::time::Ps;

/// A persist (a write to PM) on its way to the memory controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Persist {
    /// Request id.
    pub id: u64,
    /// The thread whose persist order it belongs to (for a write-back of a line evicted from
    /// the caches: the line's last writer; for a remote persist: its RDMA channel).
    pub thread: u16,
    /// Line address.
    pub line_addr: u64,
    /// Bank of the line (in `0..MemoryView::banks()`).
    pub bank: u32,
    /// Arrived over the network (`RdmaPwrite`): BROI files it in a remote entry.
    pub remote: bool,
}

/// What a fence does to its thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FenceAction {
    /// The thread stalls until all its earlier persists are acknowledged.
    StallUntilDrained,
    /// The thread goes on at once (ordering is enforced below it).
    Proceed,
}

impl Clone for Box<dyn OrderingModel> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// A persist-ordering model (plug-in).
pub trait OrderingModel: Send {
    /// A copy of this plug-in with its whole state: a run forked at a crash point
    /// ([`crate::system::System::run_to_crash_points`]) goes on with the copy. (`Box::new(self.clone())`.)
    fn clone_box(&self) -> Box<dyn OrderingModel>;

    /// Registry name.
    fn name(&self) -> &'static str;
    /// Takes the model's parameters from the controller config (`persist_buffer`,
    /// `broi_sigma`, `broi_remote_threshold_ns`, `ordering_fault`); called once before the run.
    /// Models without parameters accept no fault.
    fn configure(&mut self, c: &ControllerConfig) -> Result<(), String> {
        if c.ordering_fault != "none" {
            return Err(format!(
                "controller.ordering_fault = \"{}\": ordering \"{}\" has no such fault",
                c.ordering_fault,
                self.name()
            ));
        }
        Ok(())
    }
    /// A persist leaves for the controller at `now`; the model appends to `release` every
    /// persist (this one or earlier held ones) that may enter the controller now.
    fn on_persist(&mut self, p: Persist, now: Ps, mem: &dyn MemoryView, release: &mut Vec<Persist>);
    /// A thread executes a fence.
    fn on_fence(&mut self, thread: u16) -> FenceAction;
    /// The `rdma_pwrite` verb of RDMA channel `channel` (the client's `RdmaPwrite`s up to its
    /// fence) ended: its persists form one
    /// epoch (PPO Sec. IV-C, "the hardware will treat the data block in `rdma_pwrite` as in one
    /// barrier region"). Synchronous models ignore it.
    fn on_remote_epoch_end(&mut self, _channel: u16) {}
    /// `thread` accessed a PM line whose last writer is `source` (another thread): the
    /// persists `thread` issues from now on must not become durable before those `source`
    /// issued so far (buffered strict persistency's persist-persist and epoch-persist
    /// dependencies). Synchronous models ignore it.
    fn on_dependency(&mut self, _thread: u16, _source: u16) {}
    /// The persistence domain acknowledged persist `id` at `now`; newly releasable persists go
    /// to `release`. Ids the model never held are ignored.
    fn on_persist_ack(
        &mut self,
        id: u64,
        now: Ps,
        mem: &dyn MemoryView,
        release: &mut Vec<Persist>,
    );
    /// Persist-buffer entries per hardware thread, for buffered models: a thread with this many
    /// persists issued and not yet acknowledged stalls before issuing another. `None`: no
    /// persist buffer (the thread never stalls for one).
    fn persist_buffer(&self) -> Option<usize> {
        None
    }
    /// True when the model holds nothing: [`on_persist`](Self::on_persist) releases exactly
    /// its persist at once and [`on_persist_ack`](Self::on_persist_ack) releases nothing, and
    /// neither keeps state. Requesters may then skip both calls and
    /// [`on_dependency`](Self::on_dependency) (fences still go to [`on_fence`](Self::on_fence)).
    /// Models leave the default.
    fn releases_at_once(&self) -> bool {
        false
    }
    /// Adds the model's statistics (under `ordering.`).
    fn export_stats(&self, _stats: &mut Stats) {}
}

/// Persists an ordering model holds back, with their payloads, until it releases them: the
/// bookkeeping every requester (memory-only replay, full system) needs around
/// [`OrderingModel::on_persist`] and [`OrderingModel::on_persist_ack`].
#[derive(Clone)]
pub struct PersistGate<R> {
    release: Vec<Persist>,
    held: Vec<(u64, R)>,
    banks: BankUse,
}

/// How the released persist stream uses the banks (PPO Sec. III, Fig. 2): a persist released
/// into a bank that already has requests queued or in flight waits for them (a bank
/// conflict); the banks with work right after a release are the stream's bank-level
/// parallelism.
#[derive(Clone, Default)]
struct BankUse {
    released: u64,
    conflicts: u64,
    samples: u64,
    busy_banks: u64,
    /// Scratch: banks released into during the current call.
    marked: Vec<bool>,
}

impl BankUse {
    fn measure(&mut self, released: &[Persist], mem: &dyn MemoryView) {
        if released.is_empty() {
            return;
        }
        let n = mem.banks();
        if self.marked.len() != n {
            self.marked = vec![false; n];
        }
        for p in released {
            let b = p.bank as usize % n;
            self.released += 1;
            self.conflicts += u64::from(self.marked[b] || mem.pending(b) > 0);
            self.marked[b] = true;
        }
        self.samples += 1;
        for b in 0..n {
            self.busy_banks += u64::from(self.marked[b] || mem.pending(b) > 0);
            self.marked[b] = false;
        }
    }
}

impl<R> Default for PersistGate<R> {
    fn default() -> Self {
        PersistGate {
            release: Vec::new(),
            held: Vec::new(),
            banks: BankUse::default(),
        }
    }
}

impl<R> PersistGate<R> {
    /// Persist `p` is issued at `now` with `payload`. Returns the payload when the model
    /// releases it at once; otherwise holds it (and whatever the model released meanwhile is
    /// available from [`take_released`](Self::take_released)).
    pub fn offer(
        &mut self,
        model: &mut dyn OrderingModel,
        p: Persist,
        now: Ps,
        mem: &dyn MemoryView,
        payload: R,
    ) -> Option<R> {
        let from = self.release.len();
        model.on_persist(p, now, mem, &mut self.release);
        self.banks.measure(&self.release[from..], mem);
        if self.release.len() == 1 && self.release[0].id == p.id {
            self.release.clear();
            Some(payload)
        } else {
            self.held.push((p.id, payload));
            None
        }
    }

    /// The persistence domain acknowledged persist `id` at `now`: the model may release held
    /// persists.
    pub fn acked(&mut self, model: &mut dyn OrderingModel, id: u64, now: Ps, mem: &dyn MemoryView) {
        let from = self.release.len();
        model.on_persist_ack(id, now, mem, &mut self.release);
        self.banks.measure(&self.release[from..], mem);
    }

    /// The released stream's bank use: `ordering.released_into_busy_bank` (persists released
    /// into a bank with requests queued or in flight), `ordering.releases` and
    /// `ordering.busy_banks_sum` / `ordering.busy_bank_samples` (banks with work right after
    /// each release: the mean is the stream's bank-level parallelism).
    pub fn export_stats(&self, s: &mut Stats) {
        s.set("ordering.releases", self.banks.released);
        s.set("ordering.released_into_busy_bank", self.banks.conflicts);
        s.set("ordering.busy_banks_sum", self.banks.busy_banks);
        s.set("ordering.busy_bank_samples", self.banks.samples);
    }

    /// True when released persists wait to be taken.
    pub fn has_released(&self) -> bool {
        !self.release.is_empty()
    }

    /// Hands each held persist the model has released to `send`, in the order the model
    /// released them.
    pub fn take_released(&mut self, mut send: impl FnMut(R)) {
        for p in self.release.drain(..) {
            if let Some(i) = self.held.iter().position(|(id, _)| *id == p.id) {
                let (_, payload) = self.held.remove(i);
                send(payload);
            }
        }
    }
}
