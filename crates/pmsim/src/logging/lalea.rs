//! LALEA (LALEA paper Sec. III-A): load-aware log entry allocation. The controller's bank
//! information table keeps, per bank, a pending-operation count and two FIFOs of free log
//! addresses in that bank: FLE (1024 free 64 B entry blocks) and FH (256 free 128 B header
//! blocks, two lines of one bank). Each log entry and each header goes to the bank with the
//! fewest pending operations at that moment. Entries of one record may then lie in different
//! banks, so the header grows a second line with the entries' addresses and `next_ptr`, the
//! header of the transaction's next record; recovery walks that chain.
//!
//! The pending count of a bank is what its read queue and write pending queue hold plus the
//! log writes LALEA sent there that are not yet durable (on their way to the controller).
//! `lalea` applies LALEA to REDU; [`super::blom`] adds BLOM on top.

use super::record::Layout;
use super::redo::{LogAllocator, MetaPolicy, RedoEngine};
use super::{LogRegion, MemoryView};
use crate::fast_hash::FastMap;
use std::collections::VecDeque;

/// Free log-entry addresses per bank (LALEA Sec. III-A: "FLE FIFO ... 1024").
pub const FLE_ENTRIES: usize = 1024;
/// Free header addresses per bank (LALEA Sec. III-A: "FH FIFO ... 256").
pub const FH_ENTRIES: usize = 256;

/// Load-aware allocation over per-bank entry and header regions.
#[derive(Default)]
pub struct BankAwareLog {
    fle: Vec<VecDeque<u64>>,
    fh: Vec<VecDeque<[u64; 2]>>,
    /// Bank of every log line this allocator hands out: entry lines, then header lines.
    entry_banks: LineBanks,
    header_banks: LineBanks,
    /// Second line of every header slot, by first line.
    pairs: FastMap<u64, u64>,
    /// Log writes issued per bank and not yet durable.
    inflight: Vec<u32>,
}

/// The bank of each line of a contiguous range of the log region (`u32::MAX`: a line the
/// allocator never hands out). Looked up on every log write issued and made durable, so a
/// table indexed by line rather than a map.
#[derive(Default)]
struct LineBanks {
    base: u64,
    banks: Vec<u32>,
}

impl LineBanks {
    fn new(base: u64) -> LineBanks {
        LineBanks {
            base,
            banks: Vec::new(),
        }
    }

    fn set(&mut self, addr: u64, bank: usize) {
        let i = ((addr - self.base) / 64) as usize;
        if self.banks.len() <= i {
            self.banks.resize(i + 1, u32::MAX);
        }
        self.banks[i] = bank as u32;
    }

    fn get(&self, addr: u64) -> Option<usize> {
        let i = addr.checked_sub(self.base)? / 64;
        match self.banks.get(usize::try_from(i).ok()?) {
            Some(&b) if b != u32::MAX => Some(b as usize),
            _ => None,
        }
    }
}

/// The bank with the fewest pending operations among those with a free address, given each
/// bank's `(load, has_free)` in bank order; ties go to the lowest bank number.
pub fn least_loaded(banks: impl Iterator<Item = (u32, bool)>) -> Option<usize> {
    // One running minimum of (load, bank) packed into a u64, branch-free: which bank is least
    // loaded changes from call to call, and a branch on it is mispredicted about every other
    // bank (valgrind's branch simulator). Taking the banks as an iterator lets a caller zip
    // its per-bank tables without an index check per bank.
    let mut best = u64::MAX;
    for (b, (load, has_free)) in banks.enumerate() {
        let key = (u64::from(load) << 32) | b as u64;
        best = best.min(std::hint::select_unpredictable(has_free, key, u64::MAX));
    }
    (best != u64::MAX).then_some((best & u64::from(u32::MAX)) as usize)
}

/// [`least_loaded`] over the banks with a free address in `free`, a bank's load being its
/// `pending` operations plus its `inflight` log writes (all three indexed by bank, of equal
/// length).
fn pick_from<T>(pending: &[u32], inflight: &[u32], free: &[VecDeque<T>]) -> Option<usize> {
    least_loaded(
        pending
            .iter()
            .zip(inflight)
            .zip(free)
            .map(|((&p, &n), f)| (p + n, !f.is_empty())),
    )
}

impl BankAwareLog {
    /// The bank for a header or an entry, given the banks' pending operations.
    fn pick(&self, pending: &[u32], header: bool) -> Option<usize> {
        if header {
            pick_from(pending, &self.inflight, &self.fh)
        } else {
            pick_from(pending, &self.inflight, &self.fle)
        }
    }

    fn bank(&self, addr: u64) -> Option<usize> {
        self.entry_banks
            .get(addr)
            .or_else(|| self.header_banks.get(addr))
    }
}

impl LogAllocator for BankAwareLog {
    fn header_lines(&self) -> usize {
        2
    }

    fn layout(&self) -> Layout {
        Layout::Linked
    }

    /// Entry blocks come from the first half of the region, header blocks from the second,
    /// each bank's FIFOs filled with the first lines of that half that map to it.
    fn attach(&mut self, region: LogRegion, mem: &dyn MemoryView) {
        let banks = mem.banks().max(1);
        self.fle = vec![VecDeque::new(); banks];
        self.fh = vec![VecDeque::new(); banks];
        self.inflight = vec![0; banks];
        let half = region.bytes / 2;
        self.entry_banks = LineBanks::new(region.base);
        self.header_banks = LineBanks::new(region.base + half);
        let mut missing = banks;
        let mut a = region.base;
        while missing > 0 && a < region.base + half {
            let b = mem.bank_of(a);
            if self.fle[b].len() < FLE_ENTRIES {
                self.fle[b].push_back(a);
                self.entry_banks.set(a, b);
                if self.fle[b].len() == FLE_ENTRIES {
                    missing -= 1;
                }
            }
            a += 64;
        }
        let mut partner: Vec<Option<u64>> = vec![None; banks];
        let mut missing = banks;
        let mut a = region.base + half;
        while missing > 0 && a < region.base + region.bytes {
            let b = mem.bank_of(a);
            if self.fh[b].len() < FH_ENTRIES {
                match partner[b].take() {
                    None => partner[b] = Some(a),
                    Some(first) => {
                        self.fh[b].push_back([first, a]);
                        self.pairs.insert(first, a);
                        self.header_banks.set(first, b);
                        self.header_banks.set(a, b);
                        if self.fh[b].len() == FH_ENTRIES {
                            missing -= 1;
                        }
                    }
                }
            }
            a += 64;
        }
    }

    fn header(&mut self, pending: &[u32]) -> Option<[u64; 2]> {
        let b = self.pick(pending, true)?;
        self.fh[b].pop_front()
    }

    fn entry(&mut self, _header: [u64; 2], _index: usize, pending: &[u32]) -> Option<u64> {
        let b = self.pick(pending, false)?;
        self.fle[b].pop_front()
    }

    fn bank_of(&self, addr: u64, mem: &dyn MemoryView) -> usize {
        // The bank attach found for the line (from `mem.bank_of`).
        self.bank(addr).unwrap_or_else(|| mem.bank_of(addr))
    }

    fn issued(&mut self, addr: u64) {
        if let Some(b) = self.bank(addr) {
            self.inflight[b] += 1;
        }
    }

    fn durable(&mut self, addr: u64) {
        if let Some(b) = self.bank(addr) {
            let n = &mut self.inflight[b];
            *n = n.saturating_sub(1);
        }
    }

    fn release(&mut self, header: [u64; 2], entries: &[u64]) {
        if let Some(b) = self.header_banks.get(header[0]) {
            self.fh[b].push_back(header);
        }
        for e in entries {
            if let Some(b) = self.entry_banks.get(*e) {
                self.fle[b].push_back(*e);
            }
        }
    }

    fn header_slot(&self, addr: u64) -> Option<[u64; 2]> {
        self.pairs.get(&addr).map(|&second| [addr, second])
    }
}

/// LALEA applied to REDU.
pub fn lalea() -> RedoEngine {
    RedoEngine::new(
        "lalea",
        Box::<BankAwareLog>::default(),
        MetaPolicy::WriteToPm,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fig2a_example_spreads_three_log_requests_over_two_banks() {
        // LALEA Fig. 2(a): bank 0 has two pending in-place updates, bank 1 one. Each
        // allocation counts toward its bank's pending operations.
        let mut pending = [2u32, 1];
        let mut picks = Vec::new();
        for _ in 0..3 {
            let b = least_loaded(pending.iter().map(|&p| (p, true))).unwrap();
            pending[b] += 1;
            picks.push(b);
        }
        assert_eq!(picks, vec![1, 0, 1]);
        // A conventional sequential log would have put all three in bank 0.
        let only_bank0 = pending.iter().enumerate().map(|(b, &p)| (p, b == 0));
        assert_eq!(least_loaded(only_bank0), Some(0));
        assert_eq!(least_loaded(pending.iter().map(|&p| (p, false))), None);
        // The allocator's own pick: load = pending + in flight, among banks with free lines.
        let free = [VecDeque::from([0u64]), VecDeque::from([64u64])];
        assert_eq!(pick_from(&[2, 1], &[0, 2], &free), Some(0));
        assert_eq!(pick_from(&[2, 1], &[0, 0], &free), Some(1));
        assert_eq!(
            pick_from(&[2, 1], &[0, 0], &[free[0].clone(), VecDeque::new()]),
            Some(0)
        );
    }
}
