//! A controller queue organised for scheduling: requests sit in slots and, per bank, in arrival
//! order; each bank counts the requests that would hit its open row. A scheduling decision then
//! looks at the banks that have requests, not at every request.

use super::QueuedRequest;
use crate::device::ChannelDevice;
use crate::scheduler::{Aged, BankCandidates};
use crate::time::Ps;

/// Where a queued request goes, in the form the scheduler needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BankKey {
    /// Flat bank index within the channel (rank * banks + bank).
    pub bank: u32,
    /// Rank within the channel.
    pub rank: u32,
    /// Row within the bank.
    pub row: u64,
}

const FREE_LINE: u64 = u64::MAX;

/// Requests of one queue (read queue or WPQ) of one channel.
#[derive(Clone, Debug)]
pub struct RequestQueue {
    reqs: Vec<Option<QueuedRequest>>,
    keys: Vec<BankKey>,
    seqs: Vec<u64>,
    /// Line of each occupied slot (FREE_LINE when free): a compact array for same-line lookups.
    lines: Vec<u64>,
    free: Vec<u32>,
    /// Per bank: occupied slots in arrival order.
    buckets: Vec<Vec<u32>>,
    /// Per bank: queued requests whose row is the bank's open row.
    hits: Vec<u32>,
    /// Banks with at least one request.
    nonempty: Vec<u32>,
    next_seq: u64,
    len: usize,
}

impl RequestQueue {
    /// An empty queue for a channel with `banks` banks (all ranks).
    pub fn new(banks: usize) -> Self {
        RequestQueue {
            reqs: Vec::new(),
            keys: Vec::new(),
            seqs: Vec::new(),
            lines: Vec::new(),
            free: Vec::new(),
            buckets: vec![Vec::new(); banks],
            hits: vec![0; banks],
            nonempty: Vec::new(),
            next_seq: 0,
            len: 0,
        }
    }

    /// Number of queued requests.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds a request (the youngest); `open_row` is its bank's open row now.
    pub fn push(&mut self, req: QueuedRequest, key: BankKey, open_row: u64) {
        let line = req.line_addr;
        let slot = match self.free.pop() {
            Some(s) => {
                let i = s as usize;
                self.reqs[i] = Some(req);
                self.keys[i] = key;
                self.seqs[i] = self.next_seq;
                self.lines[i] = line;
                s
            }
            None => {
                self.reqs.push(Some(req));
                self.keys.push(key);
                self.seqs.push(self.next_seq);
                self.lines.push(line);
                (self.reqs.len() - 1) as u32
            }
        };
        self.next_seq += 1;
        let b = key.bank as usize;
        if self.buckets[b].is_empty() {
            self.nonempty.push(key.bank);
        }
        self.buckets[b].push(slot);
        self.hits[b] += (key.row == open_row) as u32;
        self.len += 1;
    }

    /// Removes the request in `slot`; `open_row` is its bank's open row now.
    pub fn remove(&mut self, slot: u32, open_row: u64) -> QueuedRequest {
        let i = slot as usize;
        let key = self.keys[i];
        let b = key.bank as usize;
        let bucket = &mut self.buckets[b];
        let pos = bucket
            .iter()
            .position(|&s| s == slot)
            .expect("slot in its bucket");
        bucket.remove(pos);
        if bucket.is_empty() {
            let p = self
                .nonempty
                .iter()
                .position(|&x| x == key.bank)
                .expect("bank listed");
            self.nonempty.swap_remove(p);
        }
        self.hits[b] -= (key.row == open_row) as u32;
        self.lines[i] = FREE_LINE;
        self.free.push(slot);
        self.len -= 1;
        self.reqs[i].take().expect("occupied slot")
    }

    /// The bank's open row changed: recount its row hits.
    pub fn recount(&mut self, bank: u32, open_row: u64) {
        let b = bank as usize;
        let keys = &self.keys;
        self.hits[b] = self.buckets[b]
            .iter()
            .filter(|&&s| keys[s as usize].row == open_row)
            .count() as u32;
    }

    /// Slot of the request for line `line_addr`, if any.
    #[inline]
    pub fn find_line(&self, line_addr: u64) -> Option<u32> {
        self.lines
            .iter()
            .position(|&l| l == line_addr)
            .map(|i| i as u32)
    }

    /// The request in `slot`.
    pub fn get_mut(&mut self, slot: u32) -> &mut QueuedRequest {
        self.reqs[slot as usize].as_mut().expect("occupied slot")
    }

    /// Summarises, for every bank with requests, its oldest row hit, its oldest row miss and
    /// when each could issue at `now`. `out` and `banks` receive one entry per such bank.
    pub fn summarize(
        &self,
        dev: &ChannelDevice,
        now: Ps,
        out: &mut Vec<BankCandidates>,
        banks: &mut Vec<u32>,
    ) {
        out.clear();
        banks.clear();
        for &bank in &self.nonempty {
            let b = bank as usize;
            let bucket = &self.buckets[b];
            let rank = self.keys[bucket[0] as usize].rank;
            let (open, hit_ready, miss_ready) = dev.bank_readiness(b, rank as usize, now);
            let aged = |s: u32| Aged {
                seq: self.seqs[s as usize],
                slot: s,
            };
            let (mut oldest_hit, mut oldest_miss) = (None, None);
            if self.hits[b] == 0 {
                oldest_miss = Some(aged(bucket[0]));
            } else {
                for &s in bucket {
                    let hit = self.keys[s as usize].row == open;
                    if hit && oldest_hit.is_none() {
                        oldest_hit = Some(aged(s));
                    } else if !hit && oldest_miss.is_none() {
                        oldest_miss = Some(aged(s));
                    }
                    if oldest_hit.is_some() && oldest_miss.is_some() {
                        break;
                    }
                }
            }
            out.push(BankCandidates {
                oldest_hit,
                oldest_miss,
                hit_ready,
                miss_ready,
            });
            banks.push(bank);
        }
    }

    /// Earliest time at or after `t` at which some request of this queue could issue.
    pub fn next_ready(&self, dev: &ChannelDevice, t: Ps) -> Option<Ps> {
        let mut min = None;
        for &bank in &self.nonempty {
            let b = bank as usize;
            let bucket = &self.buckets[b];
            let rank = self.keys[bucket[0] as usize].rank;
            let (_, hit_ready, miss_ready) = dev.bank_readiness(b, rank as usize, t);
            let hits = self.hits[b] as usize;
            let mut m = Ps::MAX;
            if hits > 0 {
                m = hit_ready;
            }
            if bucket.len() > hits {
                m = m.min(miss_ready);
            }
            min = Some(min.map_or(m, |x: Ps| x.min(m)));
        }
        min
    }
}
