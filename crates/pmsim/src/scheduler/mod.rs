//! Memory-request schedulers: which queued request a channel serves next.
//!
//! A scheduler sees the candidates of one queue in arrival order (index 0 is the oldest) with
//! the earliest time each one's first command could issue and whether it would hit the open
//! row, and either picks one that is ready now or says when to look again.

mod fcfs;
mod frfcfs;

pub use fcfs::Fcfs;
pub use frfcfs::FrFcfs;

use crate::time::Ps;

/// What a scheduler knows about one queued request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// When the request entered the queue.
    pub arrival: Ps,
    /// Earliest time its first command can issue.
    pub ready_at: Ps,
    /// Whether it would hit the open row.
    pub row_hit: bool,
}

/// A scheduler's decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// Serve candidate `i` now.
    Issue(usize),
    /// Nothing can issue now; decide again at this time.
    WaitUntil(Ps),
}

/// A request-scheduling policy (plug-in).
pub trait Scheduler: Send {
    /// Registry name.
    fn name(&self) -> &'static str;
    /// Chooses among `candidates` (non-empty, oldest first) at time `now`.
    fn pick(&mut self, candidates: &[Candidate], now: Ps) -> Pick;
}
