//! FCFS: strictly the oldest request, whatever the row-buffer state (a baseline for FR-FCFS).

use super::{Candidate, Pick, Scheduler};
use crate::time::Ps;

/// First-come, first-served.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fcfs;

impl Scheduler for Fcfs {
    fn name(&self) -> &'static str {
        "fcfs"
    }

    fn pick(&mut self, candidates: &[Candidate], now: Ps) -> Pick {
        let oldest = &candidates[0];
        if oldest.ready_at <= now {
            Pick::Issue(0)
        } else {
            Pick::WaitUntil(oldest.ready_at)
        }
    }
}
