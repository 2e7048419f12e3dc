//! FR-FCFS (Rixner et al., ISCA 2000): ready row hits first, then the oldest ready request.

use super::{Candidate, Pick, Scheduler};
use crate::time::Ps;

/// First-ready, first-come-first-served.
#[derive(Clone, Copy, Debug, Default)]
pub struct FrFcfs;

impl Scheduler for FrFcfs {
    fn name(&self) -> &'static str {
        "frfcfs"
    }

    fn pick(&mut self, candidates: &[Candidate], now: Ps) -> Pick {
        let mut oldest_ready = None;
        let mut earliest = Ps::MAX;
        for (i, c) in candidates.iter().enumerate() {
            if c.ready_at <= now {
                if c.row_hit {
                    return Pick::Issue(i);
                }
                oldest_ready.get_or_insert(i);
            } else {
                earliest = earliest.min(c.ready_at);
            }
        }
        oldest_ready.map_or(Pick::WaitUntil(earliest), Pick::Issue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(arrival: Ps, ready_at: Ps, row_hit: bool) -> Candidate {
        Candidate {
            arrival,
            ready_at,
            row_hit,
        }
    }

    #[test]
    fn prefers_ready_row_hit_over_older_miss() {
        let cands = [c(0, 10, false), c(5, 10, true)];
        assert_eq!(FrFcfs.pick(&cands, 10), Pick::Issue(1));
    }

    #[test]
    fn oldest_ready_when_no_hit() {
        let cands = [c(0, 50, false), c(1, 10, false), c(2, 10, false)];
        assert_eq!(FrFcfs.pick(&cands, 10), Pick::Issue(1));
    }

    #[test]
    fn waits_for_earliest_when_nothing_ready() {
        let cands = [c(0, 50, true), c(1, 30, false)];
        assert_eq!(FrFcfs.pick(&cands, 10), Pick::WaitUntil(30));
    }
}
