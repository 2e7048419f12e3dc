//! Persist-ordering models: when a thread's persists may enter the memory controller and what
//! a fence costs the thread.
//!
//! The baseline is x86 (synchronous ordering): persists go to the controller at once and a
//! fence stalls its thread until every earlier persist of that thread is acknowledged by the
//! persistence domain. Buffered models (epoch persistency, BROI) implement the same trait by
//! holding persists and releasing them epoch by epoch.

mod x86;

pub use x86::X86Ordering;

/// A persist (a write to PM) on its way to the memory controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Persist {
    /// Request id.
    pub id: u64,
    /// Issuing thread.
    pub thread: u16,
}

/// What a fence does to its thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FenceAction {
    /// The thread stalls until all its earlier persists are acknowledged.
    StallUntilDrained,
    /// The thread goes on at once (ordering is enforced below it).
    Proceed,
}

/// A persist-ordering model (plug-in).
pub trait OrderingModel: Send {
    /// Registry name.
    fn name(&self) -> &'static str;
    /// A thread issues a persist; the model appends to `release` every persist (this one or
    /// earlier held ones) that may go to the memory controller now.
    fn on_persist(&mut self, p: Persist, release: &mut Vec<Persist>);
    /// A thread executes a fence.
    fn on_fence(&mut self, thread: u16) -> FenceAction;
    /// The persistence domain acknowledged persist `p`; newly releasable persists go to `release`.
    fn on_persist_ack(&mut self, p: Persist, release: &mut Vec<Persist>);
    /// True when the model holds nothing: [`on_persist`](Self::on_persist) releases exactly
    /// its persist at once and [`on_persist_ack`](Self::on_persist_ack) releases nothing, and
    /// neither keeps state. Requesters may then skip both calls (fences still go to
    /// [`on_fence`](Self::on_fence)). Models leave the default.
    fn releases_at_once(&self) -> bool {
        false
    }
}

/// Persists an ordering model holds back, with their payloads, until it releases them: the
/// bookkeeping every requester (memory-only replay, full system) needs around
/// [`OrderingModel::on_persist`] and [`OrderingModel::on_persist_ack`].
pub struct PersistGate<R> {
    release: Vec<Persist>,
    held: Vec<(u64, R)>,
}

impl<R> Default for PersistGate<R> {
    fn default() -> Self {
        PersistGate {
            release: Vec::new(),
            held: Vec::new(),
        }
    }
}

impl<R> PersistGate<R> {
    /// Persist `p` is issued with `payload`. Returns the payload when the model releases it at
    /// once; otherwise holds it (and whatever the model released meanwhile is available from
    /// [`take_released`](Self::take_released)).
    pub fn offer(&mut self, model: &mut dyn OrderingModel, p: Persist, payload: R) -> Option<R> {
        model.on_persist(p, &mut self.release);
        if self.release.len() == 1 && self.release[0].id == p.id {
            self.release.clear();
            Some(payload)
        } else {
            self.held.push((p.id, payload));
            None
        }
    }

    /// The persistence domain acknowledged `p`: the model may release held persists.
    pub fn acked(&mut self, model: &mut dyn OrderingModel, p: Persist) {
        model.on_persist_ack(p, &mut self.release);
    }

    /// True when released persists wait to be taken.
    pub fn has_released(&self) -> bool {
        !self.release.is_empty()
    }

    /// Hands each held persist the model has released to `send`.
    pub fn take_released(&mut self, mut send: impl FnMut(R)) {
        while let Some(p) = self.release.pop() {
            if let Some(i) = self.held.iter().position(|(id, _)| *id == p.id) {
                let (_, payload) = self.held.swap_remove(i);
                send(payload);
            }
        }
    }
}
