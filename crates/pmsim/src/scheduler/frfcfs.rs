//! FR-FCFS (Rixner et al., ISCA 2000): ready row hits first, then the oldest ready request.

use super::{BankCandidates, BuiltinPolicy, Pick, Scheduler};
use crate::time::Ps;

/// First-ready, first-come-first-served.
#[derive(Clone, Copy, Debug, Default)]
pub struct FrFcfs;

impl Scheduler for FrFcfs {
    fn clone_box(&self) -> Box<dyn Scheduler> {
        Box::new(*self)
    }

    fn name(&self) -> &'static str {
        "frfcfs"
    }

    fn builtin(&self) -> Option<BuiltinPolicy> {
        Some(BuiltinPolicy::FrFcfs)
    }

    fn pick(&mut self, banks: &[BankCandidates], now: Ps) -> Pick {
        let mut best_hit: Option<(u64, usize)> = None;
        let mut best_miss: Option<(u64, usize)> = None;
        let mut earliest = Ps::MAX;
        for (i, b) in banks.iter().enumerate() {
            if let Some(h) = b.oldest_hit {
                if b.hit_ready <= now {
                    if best_hit.is_none_or(|(s, _)| h.seq < s) {
                        best_hit = Some((h.seq, i));
                    }
                } else {
                    earliest = earliest.min(b.hit_ready);
                }
            }
            if let Some(m) = b.oldest_miss {
                if b.miss_ready <= now {
                    if best_miss.is_none_or(|(s, _)| m.seq < s) {
                        best_miss = Some((m.seq, i));
                    }
                } else {
                    earliest = earliest.min(b.miss_ready);
                }
            }
        }
        match (best_hit, best_miss) {
            (Some((_, i)), _) => Pick::Issue { bank: i, hit: true },
            (None, Some((_, i))) => Pick::Issue {
                bank: i,
                hit: false,
            },
            (None, None) => Pick::WaitUntil(earliest),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::Aged;

    fn aged(seq: u64) -> Option<Aged> {
        Some(Aged {
            seq,
            slot: seq as u32,
        })
    }

    fn bank(hit: Option<Aged>, miss: Option<Aged>, hr: Ps, mr: Ps) -> BankCandidates {
        BankCandidates {
            oldest_hit: hit,
            oldest_miss: miss,
            hit_ready: hr,
            miss_ready: mr,
        }
    }

    #[test]
    fn prefers_ready_row_hit_over_older_miss() {
        let banks = [bank(None, aged(0), 0, 10), bank(aged(5), None, 10, 0)];
        assert_eq!(FrFcfs.pick(&banks, 10), Pick::Issue { bank: 1, hit: true });
    }

    #[test]
    fn oldest_ready_miss_when_no_hit() {
        let banks = [
            bank(None, aged(0), 0, 50),
            bank(None, aged(2), 0, 10),
            bank(None, aged(1), 0, 10),
        ];
        assert_eq!(
            FrFcfs.pick(&banks, 10),
            Pick::Issue {
                bank: 2,
                hit: false
            }
        );
    }

    #[test]
    fn waits_for_earliest_when_nothing_ready() {
        let banks = [bank(aged(0), None, 50, 0), bank(None, aged(1), 0, 30)];
        assert_eq!(FrFcfs.pick(&banks, 10), Pick::WaitUntil(30));
    }
}
