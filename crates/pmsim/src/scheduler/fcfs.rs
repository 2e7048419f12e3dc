//! FCFS: strictly the oldest request, whatever the row-buffer state (a baseline for FR-FCFS).

use super::{BankCandidates, Pick, Scheduler};
use crate::time::Ps;

/// First-come, first-served.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fcfs;

impl Scheduler for Fcfs {
    fn clone_box(&self) -> Box<dyn Scheduler> {
        Box::new(*self)
    }

    fn name(&self) -> &'static str {
        "fcfs"
    }

    fn pick(&mut self, banks: &[BankCandidates], now: Ps) -> Pick {
        // (seq, bank index, is hit, ready time) of the oldest request overall.
        let mut oldest: Option<(u64, usize, bool, Ps)> = None;
        for (i, b) in banks.iter().enumerate() {
            for (cand, hit, ready) in [
                (b.oldest_hit, true, b.hit_ready),
                (b.oldest_miss, false, b.miss_ready),
            ] {
                if let Some(a) = cand {
                    if oldest.is_none_or(|(s, ..)| a.seq < s) {
                        oldest = Some((a.seq, i, hit, ready));
                    }
                }
            }
        }
        match oldest {
            Some((_, i, hit, ready)) if ready <= now => Pick::Issue { bank: i, hit },
            Some((_, _, _, ready)) => Pick::WaitUntil(ready),
            None => Pick::WaitUntil(Ps::MAX),
        }
    }
}
