//! Memory-request schedulers: which queued request a channel serves next.
//!
//! A scheduler sees, for every bank with queued requests, the oldest request that would hit
//! the bank's open row and the oldest that would not, with the earliest time each kind could
//! issue; it picks one that is ready now or says when to look again. Ages are arrival
//! sequence numbers (smaller is older).

mod fcfs;
mod frfcfs;

pub use fcfs::Fcfs;
pub use frfcfs::FrFcfs;

use crate::time::Ps;

/// A queued request's age and where it sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aged {
    /// Arrival sequence number within its queue (smaller is older).
    pub seq: u64,
    /// Its queue slot (opaque to schedulers).
    pub slot: u32,
}

/// The requests waiting for one bank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BankCandidates {
    /// Oldest request that would hit the open row.
    pub oldest_hit: Option<Aged>,
    /// Oldest request that would not.
    pub oldest_miss: Option<Aged>,
    /// Earliest issue time of a row hit (column command).
    pub hit_ready: Ps,
    /// Earliest issue time of a row miss (precharge or activate).
    pub miss_ready: Ps,
}

/// A scheduler's decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// Serve bank `bank`'s (index into the slice) oldest hit (`hit`) or oldest miss now.
    Issue {
        /// Index into the candidates slice.
        bank: usize,
        /// Whether to serve the bank's oldest row hit (else its oldest miss).
        hit: bool,
    },
    /// Nothing can issue now; decide again at this time.
    WaitUntil(Ps),
}

/// A policy the controller can evaluate itself, on the per-bank state its queues keep, instead
/// of building the candidate list and calling [`Scheduler::pick`] (see [`Scheduler::builtin`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuiltinPolicy {
    /// Exactly [`FrFcfs`].
    FrFcfs,
}

impl Clone for Box<dyn Scheduler> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// A request-scheduling policy (plug-in).
pub trait Scheduler: Send {
    /// A copy of this plug-in with its whole state: a run forked at a crash point
    /// ([`crate::system::System::run_to_crash_points`]) goes on with the copy. (`Box::new(self.clone())`.)
    fn clone_box(&self) -> Box<dyn Scheduler>;

    /// Registry name.
    fn name(&self) -> &'static str;
    /// Chooses among `banks` (non-empty; each with at least one request) at time `now`.
    fn pick(&mut self, banks: &[BankCandidates], now: Ps) -> Pick;
    /// `Some(policy)` when [`pick`](Self::pick) is stateless and answers exactly as the
    /// built-in `policy`: the controller then evaluates the policy on its own state (the same
    /// picks, without the candidate list) and does not call `pick`. Plug-ins leave the
    /// default, `None`.
    fn builtin(&self) -> Option<BuiltinPolicy> {
        None
    }
}
