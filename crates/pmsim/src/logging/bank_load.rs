//! The banks' pending operations at one moment, as a load-aware log allocator reads them
//! (LALEA's bank information table), kept sparse: only banks with pending operations are
//! listed. A system may have thousands of banks, nearly all of them idle; reading every bank's
//! queues for each log allocation made hash-hw under lalea+blom on a 64-channel x 256-bank
//! `nvm-lalea` take 40x the host time of the same run without logging (1 x 8 banks: 2.0x;
//! validation §8, "Systems with many banks").

use crate::memsys::MemoryView;

/// Systems of up to this many banks are read ([`BankLoad::refresh`]) and compared (LALEA's
/// pick) bank by bank: at these sizes one pass over every bank costs less than finding the
/// busy or idle ones.
pub const DENSE_BANKS: usize = 64;

/// Pending operations per bank: the busy banks and their counts, every other bank at 0.
#[derive(Clone, Debug, Default)]
pub struct BankLoad {
    /// Per bank, its pending operations (0 for idle banks: only the busy ones are written).
    pending: Vec<u32>,
    /// The banks with pending operations, each once, in no particular order.
    busy: Vec<u32>,
    /// Scratch for [`MemoryView::busy_banks`] (which may list a bank twice).
    listed: Vec<(u32, u32)>,
    /// Read bank by bank (at most [`DENSE_BANKS`]): `busy` is not kept.
    dense: bool,
}

impl BankLoad {
    /// Reads the banks' pending operations from `mem` now.
    pub fn refresh(&mut self, mem: &dyn MemoryView) {
        // (the bank count of the previous refresh, if any, saves asking: a system keeps its
        // banks)
        let banks = match self.pending.len() {
            0 => mem.banks(),
            n => n,
        };
        self.dense = banks <= DENSE_BANKS;
        if self.dense {
            // A few banks: read them all in one pass (cheaper than listing the busy ones).
            mem.pending_all(&mut self.pending);
            return;
        }
        if self.pending.len() != banks {
            self.pending = vec![0; banks];
        } else {
            for &b in &self.busy {
                self.pending[b as usize] = 0;
            }
        }
        self.busy.clear();
        mem.busy_banks(&mut self.listed);
        for &(b, n) in &self.listed {
            let p = &mut self.pending[b as usize];
            if *p == 0 && n > 0 {
                self.busy.push(b);
            }
            *p += n;
        }
    }

    /// Banks in the system (at the last refresh).
    pub fn banks(&self) -> usize {
        self.pending.len()
    }

    /// Pending operations of `bank` (0 for a bank the system does not have).
    #[inline]
    pub fn pending(&self, bank: usize) -> u32 {
        self.pending.get(bank).copied().unwrap_or(0)
    }

    /// Pending operations of every bank, indexed by bank.
    #[inline]
    pub fn per_bank(&self) -> &[u32] {
        &self.pending
    }

    /// The banks with pending operations, in no particular order (systems of more than
    /// [`DENSE_BANKS`] banks; the others read [`per_bank`](Self::per_bank)).
    pub fn busy(&self) -> &[u32] {
        debug_assert!(!self.dense, "a small system's busy banks are not listed");
        &self.busy
    }

    /// How uneven the load is: the busiest bank's pending operations over the mean bank's, in
    /// thousandths; `None` when nothing is pending.
    pub fn imbalance_milli(&self) -> Option<u64> {
        let (mut sum, mut max) = (0u64, 0u64);
        let mut add = |n: u32| {
            sum += u64::from(n);
            max = max.max(u64::from(n));
        };
        if self.dense {
            self.pending.iter().for_each(|&n| add(n));
        } else {
            self.busy
                .iter()
                .for_each(|&b| add(self.pending[b as usize]));
        }
        (1000 * max * self.banks() as u64).checked_div(sum)
    }

    /// A load of `pending[b]` per bank (for tests and for allocators driven without a memory
    /// system).
    pub fn from_dense(pending: &[u32]) -> BankLoad {
        BankLoad {
            pending: pending.to_vec(),
            busy: (0..pending.len() as u32)
                .filter(|&b| pending[b as usize] > 0)
                .collect(),
            listed: Vec::new(),
            dense: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bmo::NoBmo;
    use crate::memsys::{MemRequest, MemorySystem};
    use crate::scheduler::FrFcfs;
    use crate::SimConfig;

    #[test]
    fn a_refresh_reads_every_banks_queues_of_every_channel() {
        // Four channels of 8 and of 32 banks (read bank by bank, and as busy banks), reads and
        // writes of random lines submitted at one instant (ADR off: writes stay queued): each
        // bank's load is what its read queue and WPQ hold (a bank with both is listed twice by
        // the controller), banks never used count 0.
        for banks in [8, 32] {
            refresh_matches_the_queues(banks);
        }
    }

    fn refresh_matches_the_queues(banks_per_channel: u32) {
        let cfg = SimConfig::preset("nvm-ppo")
            .unwrap()
            .with_overrides(&[
                "device.channels=4".into(),
                format!("device.banks={banks_per_channel}"),
            ])
            .unwrap();
        let all = 4 * banks_per_channel as usize;
        let mut mem = MemorySystem::new(&cfg, Box::new(FrFcfs), Box::new(NoBmo));
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for id in 0..120 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let req = MemRequest {
                id,
                addr: (x % (1 << 24)) & !63,
                is_write: id % 3 == 0,
                data: None,
                holds_entry: false,
            };
            mem.submit(req, 0);
        }
        let mut load = BankLoad::default();
        load.refresh(&mem);
        assert_eq!(load.banks(), all);
        assert_eq!(load.dense, all <= DENSE_BANKS);
        for b in 0..all {
            assert_eq!(load.pending(b), mem.pending(b), "bank {b}");
        }
        let mut listed = Vec::new();
        mem.busy_banks(&mut listed);
        let mut banks: Vec<u32> = listed.iter().map(|&(b, _)| b).collect();
        banks.sort_unstable();
        let n = banks.len();
        banks.dedup();
        assert!(banks.len() < n, "no bank had reads and writes queued");
        let sum: u32 = load.per_bank().iter().sum();
        assert_eq!(sum, (0..all).map(|b| mem.pending(b)).sum::<u32>());
        if !load.dense {
            let mut busy = load.busy().to_vec();
            busy.sort_unstable();
            let expect: Vec<u32> = (0..all as u32)
                .filter(|&b| mem.pending(b as usize) > 0)
                .collect();
            assert_eq!(busy, expect);
        }
    }

    #[test]
    fn idle_banks_count_zero_and_the_imbalance_is_the_busiest_over_the_mean() {
        let l = BankLoad::from_dense(&[0, 3, 0, 1]);
        assert_eq!((l.pending(0), l.pending(1), l.pending(3)), (0, 3, 1));
        assert_eq!(l.imbalance_milli(), Some(3000));
        assert_eq!(BankLoad::from_dense(&[0, 0]).imbalance_milli(), None);
    }
}
