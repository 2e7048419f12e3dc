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

use super::bank_load::{BankLoad, DENSE_BANKS};
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
#[derive(Clone, Default)]
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
    /// The banks with log writes in flight, and each bank's index in it (while it is there);
    /// kept only where picks skip idle banks (more than [`DENSE_BANKS`] banks).
    inflight_banks: Vec<u32>,
    inflight_pos: Vec<u32>,
    track_inflight: bool,
}

/// The bank of each line of a contiguous range of the log region (`u32::MAX`: a line the
/// allocator never hands out). Looked up on every log write issued and made durable, so a
/// table indexed by line rather than a map.
#[derive(Clone, Default)]
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

/// The bank with the fewest pending operations among those with a free address, given
/// `(bank, load, has_free)` of candidate banks (a bank may come twice, with the same load);
/// ties go to the lowest bank number.
pub fn least_loaded(banks: impl Iterator<Item = (usize, u32, bool)>) -> Option<usize> {
    // One running minimum of (load, bank) packed into a u64, branch-free: which bank is least
    // loaded changes from call to call, and a branch on it is mispredicted about every other
    // bank (valgrind's branch simulator).
    let mut best = u64::MAX;
    for (b, load, has_free) in banks {
        let key = (u64::from(load) << 32) | b as u64;
        best = best.min(std::hint::select_unpredictable(has_free, key, u64::MAX));
    }
    (best != u64::MAX).then_some((best & u64::from(u32::MAX)) as usize)
}

/// [`least_loaded`] over every bank with a free address in `free`, a bank's load being its
/// pending operations in `load` plus its `inflight` log writes (`free` and `inflight` indexed
/// by bank); `loaded` lists the banks with log writes in flight.
#[inline]
fn pick_from<T>(
    load: &BankLoad,
    inflight: &[u32],
    loaded: &[u32],
    free: &[VecDeque<T>],
) -> Option<usize> {
    if free.len() <= DENSE_BANKS {
        let banks = load.per_bank().iter().zip(inflight).zip(free).enumerate();
        least_loaded(banks.map(|(b, ((&p, &n), f))| (b, p + n, !f.is_empty())))
    } else {
        pick_sparse(load, inflight, loaded, free)
    }
}

/// [`pick_from`] comparing only the busy banks and those with log writes in flight one by
/// one: every other bank's load is 0, so the lowest of them with a free address, if any, wins
/// outright. (Comparing every bank made each allocation cost as much as the system has banks:
/// 64 channels x 256 banks took 40x the host time of a run without logging, bank_load.rs.)
#[inline(never)]
fn pick_sparse<T>(
    load: &BankLoad,
    inflight: &[u32],
    loaded: &[u32],
    free: &[VecDeque<T>],
) -> Option<usize> {
    let idle = (0..free.len().min(inflight.len()))
        .find(|&b| !free[b].is_empty() && inflight[b] == 0 && load.pending(b) == 0);
    if idle.is_some() {
        return idle;
    }
    let bank = |b: usize| (b, load.pending(b) + inflight[b], !free[b].is_empty());
    let busy = load.busy().iter().chain(loaded).map(|&b| b as usize);
    least_loaded(busy.filter(|&b| b < free.len()).map(bank))
}

impl BankAwareLog {
    /// The bank for a header or an entry, given the banks' pending operations.
    #[inline]
    fn pick(&self, load: &BankLoad, header: bool) -> Option<usize> {
        if header {
            pick_from(load, &self.inflight, &self.inflight_banks, &self.fh)
        } else {
            pick_from(load, &self.inflight, &self.inflight_banks, &self.fle)
        }
    }

    fn bank(&self, addr: u64) -> Option<usize> {
        self.entry_banks
            .get(addr)
            .or_else(|| self.header_banks.get(addr))
    }
}

impl LogAllocator for BankAwareLog {
    fn clone_box(&self) -> Box<dyn LogAllocator> {
        Box::new(self.clone())
    }

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
        self.inflight_banks.clear();
        self.inflight_pos = vec![0; banks];
        self.track_inflight = banks > DENSE_BANKS;
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

    fn header(&mut self, load: &BankLoad) -> Option<[u64; 2]> {
        let b = self.pick(load, true)?;
        self.fh[b].pop_front()
    }

    fn entry(&mut self, _header: [u64; 2], _index: usize, load: &BankLoad) -> Option<u64> {
        let b = self.pick(load, false)?;
        self.fle[b].pop_front()
    }

    fn bank_of(&self, addr: u64, mem: &dyn MemoryView) -> usize {
        // The bank attach found for the line (from `mem.bank_of`).
        self.bank(addr).unwrap_or_else(|| mem.bank_of(addr))
    }

    fn issued(&mut self, addr: u64) {
        if let Some(b) = self.bank(addr) {
            self.inflight[b] += 1;
            if self.track_inflight && self.inflight[b] == 1 {
                self.inflight_pos[b] = self.inflight_banks.len() as u32;
                self.inflight_banks.push(b as u32);
            }
        }
    }

    fn durable(&mut self, addr: u64) {
        if let Some(b) = self.bank(addr) {
            if self.inflight[b] == 0 {
                return;
            }
            self.inflight[b] -= 1;
            if self.track_inflight && self.inflight[b] == 0 {
                let i = self.inflight_pos[b] as usize;
                self.inflight_banks.swap_remove(i);
                if let Some(&moved) = self.inflight_banks.get(i) {
                    self.inflight_pos[moved as usize] = i as u32;
                }
            }
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

    /// The allocator's pick for `pending` and `inflight` per bank and the banks with a free
    /// line, checked to be the same with every bank compared and with the idle ones skipped.
    fn pick(pending: &[u32], inflight: &[u32], free: &[bool]) -> Option<usize> {
        let fifos: Vec<VecDeque<u64>> = free
            .iter()
            .map(|&f| {
                if f {
                    VecDeque::from([0])
                } else {
                    VecDeque::new()
                }
            })
            .collect();
        let loaded: Vec<u32> = (0..inflight.len() as u32)
            .filter(|&b| inflight[b as usize] > 0)
            .collect();
        let load = BankLoad::from_dense(pending);
        let dense = pick_from(&load, inflight, &loaded, &fifos);
        let sparse = pick_sparse(&load, inflight, &loaded, &fifos);
        assert_eq!(dense, sparse, "{pending:?} {inflight:?} {free:?}");
        dense
    }

    #[test]
    fn fig2a_example_spreads_three_log_requests_over_two_banks() {
        // LALEA Fig. 2(a): bank 0 has two pending in-place updates, bank 1 one. Each
        // allocation counts toward its bank's pending operations.
        let mut pending = [2u32, 1];
        let mut picks = Vec::new();
        for _ in 0..3 {
            let b = pick(&pending, &[0, 0], &[true, true]).unwrap();
            pending[b] += 1;
            picks.push(b);
        }
        assert_eq!(picks, vec![1, 0, 1]);
        // A conventional sequential log would have put all three in bank 0.
        assert_eq!(pick(&pending, &[0, 0], &[true, false]), Some(0));
        assert_eq!(pick(&pending, &[0, 0], &[false, false]), None);
        // Load = pending + in flight, among banks with free lines.
        assert_eq!(pick(&[2, 1], &[0, 2], &[true, true]), Some(0));
        assert_eq!(pick(&[2, 1], &[0, 0], &[true, true]), Some(1));
        assert_eq!(pick(&[2, 1], &[0, 0], &[true, false]), Some(0));
    }

    #[test]
    fn the_pick_is_the_least_loaded_of_all_banks_however_many() {
        // Against every bank compared one by one (lowest load, then lowest bank), over random
        // loads where most banks are idle, some busy, some with writes in flight or full, on
        // systems below and above DENSE_BANKS.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..5000 {
            let banks = 1 + next(3 * DENSE_BANKS as u64) as usize;
            // (in a quarter of the cases every bank is busy: no idle bank wins outright)
            let all_busy = next(4) == 0;
            let pending: Vec<u32> = (0..banks)
                .map(|_| match (all_busy, next(3)) {
                    (true, _) => 1 + next(5) as u32,
                    (false, 0) => next(5) as u32,
                    _ => 0,
                })
                .collect();
            let inflight: Vec<u32> = (0..banks)
                .map(|_| if next(4) == 0 { next(3) as u32 } else { 0 })
                .collect();
            let free: Vec<bool> = (0..banks).map(|_| next(6) != 0).collect();
            let all = (0..banks)
                .filter(|&b| free[b])
                .min_by_key(|&b| (pending[b] + inflight[b], b));
            assert_eq!(
                pick(&pending, &inflight, &free),
                all,
                "{pending:?} {inflight:?} {free:?}"
            );
        }
    }

    #[test]
    fn writes_in_flight_leave_the_loaded_list_when_durable() {
        let mut log = BankAwareLog {
            entry_banks: LineBanks::new(0),
            header_banks: LineBanks::new(1 << 20),
            inflight: vec![0; 4],
            inflight_pos: vec![0; 4],
            fle: vec![VecDeque::from([0u64]); 4],
            track_inflight: true,
            ..BankAwareLog::default()
        };
        for b in 0..4 {
            log.entry_banks.set(b as u64 * 64, b);
        }
        for a in [64, 128, 64, 192] {
            log.issued(a);
        }
        assert_eq!(log.inflight, vec![0, 2, 1, 1]);
        log.durable(128);
        log.durable(64);
        log.durable(0); // nothing in flight there: stays 0
        let mut loaded = log.inflight_banks.clone();
        loaded.sort_unstable();
        assert_eq!(loaded, vec![1, 3]);
        let idle = BankLoad::from_dense(&[1, 0, 0, 0]);
        assert_eq!(log.pick(&idle, false), Some(2));
        log.durable(64);
        assert_eq!(log.inflight_banks, vec![3]);
        assert_eq!(log.pick(&idle, false), Some(1));
    }
}
