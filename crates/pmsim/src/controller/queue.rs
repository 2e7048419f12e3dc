//! A controller queue organised for scheduling: requests sit in slots, linked per bank in
//! arrival order, and every bank with requests has an entry holding what a scheduler needs:
//! its oldest row hit, its oldest row miss, and the device times from which each kind could
//! issue. A scheduling decision reads these entries; it never rescans requests or recomputes
//! bank readiness.
//!
//! The entries are kept current on every change:
//! * a new request is the youngest, so it can only fill a missing candidate;
//! * removing a candidate rescans its bank from the removed request on (everything older in
//!   the bank is of the other kind);
//! * bank readiness changes only when the controller commits a request to the device; the
//!   controller then refreshes the bank, and rescans it when its open row changed
//!   ([`bank_changed`](RequestQueue::bank_changed)), or refreshes every bank when a closed
//!   bank's readiness may have moved with its rank ([`refresh_all`](RequestQueue::refresh_all)).

use super::QueuedRequest;
use crate::dense::Dense;
use crate::device::ChannelDevice;
use crate::scheduler::{Aged, BankCandidates, Pick};
use crate::time::Ps;

/// No slot (end of a bank's list).
const NIL: u32 = u32::MAX;

/// No candidate (in a [`BankEntry`] age field).
const NONE: u64 = u64::MAX;

/// Buckets of the line filter ([`RequestQueue::find_line`]).
const LINE_BUCKETS: usize = 256;

/// Buckets of the row filter ([`RequestQueue::bank_changed`]).
const ROW_BUCKETS: usize = 1024;

/// The line filter bucket of a line address.
#[inline]
fn line_bucket(line_addr: u64) -> usize {
    (line_addr >> 6) as usize % LINE_BUCKETS
}

/// The row filter bucket of row `row` of flat bank `bank` (a multiplicative hash).
#[inline]
fn row_bucket(bank: usize, row: u64) -> usize {
    let h = (row ^ ((bank as u64) << 48)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> (64 - ROW_BUCKETS.trailing_zeros())) as usize
}

/// A queue slot: the request, its age and its links in its bank's arrival-order list.
#[derive(Clone, Debug)]
struct Slot {
    req: QueuedRequest,
    seq: u64,
    prev: u32,
    next: u32,
}

/// One bank's requests in this queue.
#[derive(Clone, Copy, Debug)]
struct BankList {
    /// Oldest and youngest slot (`NIL` when empty).
    head: u32,
    tail: u32,
    /// Age of the oldest request (meaningful while `len > 0`).
    head_seq: u64,
    /// Requests queued for the bank.
    len: u32,
    /// Of them, requests whose row is the bank's open row.
    hits: u32,
    /// Index of the bank's entry in `entries` (valid while `len > 0`).
    pos: u32,
}

/// The scheduling view of one bank with requests.
#[derive(Clone, Copy, Debug)]
struct BankEntry {
    /// Age and slot of the oldest row hit (`NONE` when there is none).
    hit_seq: u64,
    /// Age and slot of the oldest row miss (`NONE` when there is none).
    miss_seq: u64,
    /// Device time from which a row hit could issue (not raised to the current time).
    hit_from: Ps,
    /// Device time from which a row miss could issue (not raised to the current time).
    miss_from: Ps,
    hit_slot: u32,
    miss_slot: u32,
    /// Flat bank index.
    bank: u32,
}

impl BankEntry {
    /// Sets the oldest row hit (`hit`) or miss to `(seq, slot)` (`(NONE, NIL)`: none).
    #[inline]
    fn set(&mut self, hit: bool, (seq, slot): (u64, u32)) {
        if hit {
            self.hit_seq = seq;
            self.hit_slot = slot;
        } else {
            self.miss_seq = seq;
            self.miss_slot = slot;
        }
    }

    fn aged(seq: u64, slot: u32) -> Option<Aged> {
        (seq != NONE).then_some(Aged { seq, slot })
    }
}

/// Folds candidate `(seq, from)` of entry `i` (a bank's oldest row hit or oldest row miss; age
/// `NONE` when absent: it never wins and never waits) into a running FR-FCFS pick at `now`: the
/// oldest ready candidate's (age, entry) and the earliest time a waiting one becomes ready; returns
/// both updated. Branch-free selects, as in `pick_oldest_miss`: which bank's candidates are ready and
/// older is data-dependent, and mispredicted branches here cost more than the selects.
#[inline(always)]
fn fold_candidate(
    i: usize,
    seq: u64,
    from: Ps,
    now: Ps,
    (best_seq, best_at): (u64, usize),
    earliest: Ps,
) -> ((u64, usize), Ps) {
    use std::hint::select_unpredictable as select;
    let ready = from <= now;
    let key = select(ready, seq, NONE);
    let older = key < best_seq;
    let best = (select(older, key, best_seq), select(older, i, best_at));
    let waits = !ready & (seq != NONE) & (from < earliest);
    (best, select(waits, from, earliest))
}

/// Requests of one queue (read queue or WPQ) of one channel.
#[derive(Clone, Debug)]
pub struct RequestQueue {
    slots: Dense<Slot>,
    free: Vec<u32>,
    banks: Dense<BankList>,
    /// One entry per bank with requests.
    entries: Dense<BankEntry>,
    /// The entries in the form [`Scheduler`](crate::scheduler::Scheduler) plug-ins take,
    /// filled by [`summarize`](Self::summarize).
    cands: Vec<BankCandidates>,
    next_seq: u64,
    len: usize,
    /// Requests that would hit their bank's open row, over all banks. Random traffic seldom
    /// has any: the scheduling loops then skip the row-hit half of every entry.
    hits: usize,
    /// Queued requests per bucket of line addresses: most searches for a line (read
    /// forwarding, write coalescing) find its bucket empty and skip the bank walk, whose
    /// length is as unpredictable as the traffic.
    lines: [u32; LINE_BUCKETS],
    /// Queued requests per bucket of (bank, row) pairs: when a row opens, its bucket is
    /// nearly always empty, and the bank's requests are then all row misses, found without
    /// walking the bank's list. (`u16`: a queue holds at most 4096 requests.)
    rows: [u16; ROW_BUCKETS],
}

impl RequestQueue {
    /// An empty queue for a channel with `banks` banks (all ranks).
    pub fn new(banks: usize) -> Self {
        RequestQueue {
            slots: Dense::new(Vec::new()),
            free: Vec::new(),
            banks: Dense::new(vec![
                BankList {
                    head: NIL,
                    tail: NIL,
                    head_seq: NONE,
                    len: 0,
                    hits: 0,
                    pos: 0,
                };
                banks
            ]),
            entries: Dense::new(Vec::with_capacity(banks)),
            cands: Vec::with_capacity(banks),
            next_seq: 0,
            len: 0,
            hits: 0,
            lines: [0; LINE_BUCKETS],
            rows: [0; ROW_BUCKETS],
        }
    }

    /// Number of queued requests.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of queued requests for flat bank `bank`.
    pub fn bank_len(&self, bank: usize) -> usize {
        self.check_bank(bank);
        self.banks[bank].len as usize
    }

    /// Every bank with requests in this queue and how many, in no particular order.
    pub fn busy_banks(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.entries
            .iter()
            .map(|e| (e.bank, self.banks[e.bank as usize].len))
    }

    /// Panics unless `bank` is one of this queue's banks: public methods check the bank
    /// numbers they are given once, so that the tables can be indexed without checks after
    /// (see [`Dense`]).
    #[inline(always)]
    fn check_bank(&self, bank: usize) {
        assert!(
            bank < self.banks.len(),
            "bank {bank} of {}",
            self.banks.len()
        );
    }

    /// Adds a request (the youngest) for its bank of `dev`.
    #[inline(always)]
    pub fn push(&mut self, req: QueuedRequest, dev: &ChannelDevice) {
        let bank = req.bank;
        let b = bank as usize;
        self.check_bank(b);
        let hit = req.row == dev.open_row(b);
        self.lines[line_bucket(req.line_addr)] += 1;
        self.rows[row_bucket(b, req.row)] += 1;
        let seq = self.next_seq;
        self.next_seq += 1;
        let tail = self.banks[b].tail;
        let s = match self.free.pop() {
            Some(s) => {
                let sl = &mut self.slots[s as usize];
                // A free slot's request has no payload ([`remove`](Self::remove) took it):
                // nothing to drop, and forgetting it skips the drop call.
                let old = std::mem::replace(&mut sl.req, req);
                debug_assert!(old.payload.is_none(), "a free slot kept a payload");
                std::mem::forget(old);
                sl.seq = seq;
                sl.prev = tail;
                sl.next = NIL;
                s
            }
            None => {
                self.slots.push(Slot {
                    req,
                    seq,
                    prev: tail,
                    next: NIL,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let list = &mut self.banks[b];
        if tail == NIL {
            list.head = s;
            list.head_seq = seq;
            list.pos = self.entries.len() as u32;
            let (hit_from, miss_from) = dev.raw_readiness(b);
            self.entries.push(BankEntry {
                hit_seq: NONE,
                miss_seq: NONE,
                hit_from,
                miss_from,
                hit_slot: NIL,
                miss_slot: NIL,
                bank,
            });
        } else {
            self.slots[tail as usize].next = s;
        }
        list.tail = s;
        list.len += 1;
        list.hits += hit as u32;
        self.hits += hit as usize;
        let e = &mut self.entries[list.pos as usize];
        if hit {
            if e.hit_seq == NONE {
                e.hit_seq = seq;
                e.hit_slot = s;
            }
        } else if e.miss_seq == NONE {
            e.miss_seq = seq;
            e.miss_slot = s;
        }
        self.len += 1;
    }

    /// Removes the request in `slot` (`dev` is the device it was queued for, before the
    /// request is committed to it).
    #[inline]
    pub fn remove(&mut self, slot: u32, dev: &ChannelDevice) -> QueuedRequest {
        self.check_slot(slot);
        self.remove_slot(slot, dev)
    }

    /// Panics unless `slot` holds a request.
    #[inline]
    pub(crate) fn check_slot(&self, slot: u32) {
        let s = slot as usize;
        assert!(
            s < self.slots.len() && self.slots[s].seq != NONE,
            "slot {slot} holds no request"
        );
    }

    /// The slot of the request [`pick_frfcfs`](Self::pick_frfcfs) picked as
    /// `Pick::Issue { bank: i, hit }` (nothing changed since): entry `i`'s oldest row hit
    /// (`hit`) or row miss. Unlike [`candidate`](Self::candidate) (a plug-in's pick) it checks
    /// nothing: `i` is one of this queue's own entry positions, and an entry's candidate of a
    /// kind it has is a slot holding a request.
    #[inline]
    pub(crate) fn picked_slot(&self, i: usize, hit: bool) -> u32 {
        let e = &self.entries[i];
        let slot = if hit { e.hit_slot } else { e.miss_slot };
        debug_assert!(
            slot != NIL && self.slots[slot as usize].seq != NONE,
            "entry {i} has no candidate of the picked kind"
        );
        slot
    }

    /// [`remove`](Self::remove) of a slot known to hold a request (checked with
    /// [`check_slot`](Self::check_slot) or found by [`picked_slot`](Self::picked_slot)).
    #[inline]
    pub(crate) fn remove_slot(&mut self, slot: u32, dev: &ChannelDevice) -> QueuedRequest {
        let s = slot as usize;
        let Slot { prev, next, .. } = self.slots[s];
        let bank = self.slots[s].req.bank;
        self.lines[line_bucket(self.slots[s].req.line_addr)] -= 1;
        self.rows[row_bucket(bank as usize, self.slots[s].req.row)] -= 1;
        let open_row = dev.open_row(bank as usize);
        let hit = self.slots[s].req.row == open_row;
        if prev == NIL {
            self.banks[bank as usize].head = next;
        } else {
            self.slots[prev as usize].next = next;
        }
        if next == NIL {
            self.banks[bank as usize].tail = prev;
        } else {
            self.slots[next as usize].prev = prev;
        }
        let list = &mut self.banks[bank as usize];
        list.len -= 1;
        list.hits -= hit as u32;
        self.hits -= hit as usize;
        let pos = list.pos as usize;
        if list.len == 0 {
            self.entries.swap_remove(pos);
            if let Some(moved) = self.entries.get(pos) {
                self.banks[moved.bank as usize].pos = pos as u32;
            }
        } else {
            let (len, hits) = (list.len, list.hits);
            if prev == NIL {
                list.head_seq = self.slots[next as usize].seq;
            }
            let e = &self.entries[pos];
            let oldest = if hit { e.hit_slot } else { e.miss_slot };
            if oldest == slot {
                // Everything older than the removed request is of the other kind: the next
                // candidate of this kind, if any, comes after it.
                let more = if hit { hits > 0 } else { len > hits };
                let found = if more {
                    self.first_from(next, |r| (r == open_row) == hit)
                } else {
                    (NONE, NIL)
                };
                self.entries[pos].set(hit, found);
            }
        }
        self.free.push(slot);
        self.len -= 1;
        self.slots[s].seq = NONE;
        let r = &mut self.slots[s].req;
        QueuedRequest {
            payload: r.payload.take(),
            ..*r
        }
    }

    /// Age and slot of the first request from slot `from` on (following the bank's list)
    /// whose row satisfies `pred`; `(NONE, NIL)` when there is none.
    #[inline]
    fn first_from(&self, mut from: u32, pred: impl Fn(u64) -> bool) -> (u64, u32) {
        while from != NIL {
            let sl = &self.slots[from as usize];
            if pred(sl.req.row) {
                return (sl.seq, from);
            }
            from = sl.next;
        }
        (NONE, NIL)
    }

    /// A request to flat bank `bank` was committed to `dev`: re-read the bank's readiness and,
    /// when the commit opened a row (`opened`), recount the bank's row hits and find its
    /// oldest hit and miss.
    #[inline(always)]
    pub fn bank_changed(&mut self, bank: usize, dev: &ChannelDevice, opened: bool) {
        self.check_bank(bank);
        let list = self.banks[bank];
        if list.len == 0 {
            return;
        }
        let e = &mut self.entries[list.pos as usize];
        (e.hit_from, e.miss_from) = dev.raw_readiness(bank);
        if opened {
            let open_row = dev.open_row(bank);
            if self.rows[row_bucket(bank, open_row)] == 0 {
                // No request of the queue is for the new row: all of the bank's are misses.
                e.set(true, (NONE, NIL));
                e.set(false, (list.head_seq, list.head));
                self.hits -= list.hits as usize;
                self.banks[bank].hits = 0;
            } else {
                self.recount(bank, list, open_row);
            }
        }
    }

    /// Recounts the row hits of `bank` (whose list is `list`, not empty) against `open_row`
    /// and finds its oldest hit and miss.
    #[inline]
    fn recount(&mut self, bank: usize, list: BankList, open_row: u64) {
        let mut hits = 0;
        let (mut hit, mut miss) = ((NONE, NIL), (NONE, NIL));
        let mut s = list.head;
        while s != NIL {
            let sl = &self.slots[s as usize];
            if sl.req.row == open_row {
                hits += 1;
                if hit.0 == NONE {
                    hit = (sl.seq, s);
                }
            } else if miss.0 == NONE {
                miss = (sl.seq, s);
            }
            s = sl.next;
        }
        self.hits = self.hits - list.hits as usize + hits as usize;
        self.banks[bank].hits = hits;
        let e = &mut self.entries[list.pos as usize];
        e.set(true, hit);
        e.set(false, miss);
    }

    /// Every bank's state may have changed (a refresh closed rows): re-read each queued
    /// bank's readiness and recount its row hits.
    #[cold]
    pub fn all_banks_changed(&mut self, dev: &ChannelDevice) {
        for bank in 0..self.banks.len() {
            self.bank_changed(bank, dev, true);
        }
    }

    /// Rank state changed in a way that moves closed banks' readiness: re-read every bank's.
    pub fn refresh_all(&mut self, dev: &ChannelDevice) {
        for e in self.entries.iter_mut() {
            (e.hit_from, e.miss_from) = dev.raw_readiness(e.bank as usize);
        }
    }

    /// Slot of the youngest request for line `line_addr`, which maps to flat bank `bank`, if
    /// any. The youngest: a queue may hold several writes of a line (they entered one by one
    /// while a later one waited), and a write merged into an older one became durable before
    /// the ones between them, which then wrote their older bytes over it.
    #[inline]
    pub fn find_line(&self, line_addr: u64, bank: u32) -> Option<u32> {
        if self.lines[line_bucket(line_addr)] == 0 {
            return None;
        }
        self.check_bank(bank as usize);
        let mut s = self.banks[bank as usize].tail;
        while s != NIL {
            let sl = &self.slots[s as usize];
            if sl.req.line_addr == line_addr {
                return Some(s);
            }
            s = sl.prev;
        }
        None
    }

    /// The request in `slot`.
    pub fn get_mut(&mut self, slot: u32) -> &mut QueuedRequest {
        assert!(
            (slot as usize) < self.slots.len(),
            "slot {slot} of {}",
            self.slots.len()
        );
        &mut self.slots[slot as usize].req
    }

    /// For every bank with requests, its oldest row hit, its oldest row miss and when each
    /// could issue at `now` (one entry per such bank), for a scheduler plug-in.
    pub fn summarize(&mut self, now: Ps) -> &[BankCandidates] {
        self.cands.clear();
        self.cands
            .extend(self.entries.iter().map(|e| BankCandidates {
                oldest_hit: BankEntry::aged(e.hit_seq, e.hit_slot),
                oldest_miss: BankEntry::aged(e.miss_seq, e.miss_slot),
                hit_ready: now.max(e.hit_from),
                miss_ready: now.max(e.miss_from),
            }));
        &self.cands
    }

    /// FR-FCFS evaluated on the entries: exactly what
    /// [`FrFcfs::pick`](crate::scheduler::FrFcfs) answers for [`summarize`](Self::summarize)'s
    /// candidates, without building them (checked against the plug-in path by
    /// `controller::tests::builtin_frfcfs_decides_as_the_plugin`).
    ///
    /// When the pick issues and no request would hit its open row, also returns a time no
    /// earlier than `now` (or `Ps::MAX`) which, raised to any time after `now`, is the earliest
    /// time a request of another bank than the picked one could issue: the picked bank's
    /// commit leaves the other banks' entries as they are, so
    /// [`bank_ready`](Self::bank_ready) completes [`next_ready`](Self::next_ready) after it.
    #[inline]
    pub fn pick_frfcfs(&self, now: Ps) -> (Pick, Option<Ps>) {
        if self.hits == 0 {
            return self.pick_oldest_miss(now);
        }
        let (mut hit, mut miss, mut earliest) = ((NONE, 0), (NONE, 0), Ps::MAX);
        for (i, e) in self.entries.iter().enumerate() {
            (hit, earliest) = fold_candidate(i, e.hit_seq, e.hit_from, now, hit, earliest);
            (miss, earliest) = fold_candidate(i, e.miss_seq, e.miss_from, now, miss, earliest);
        }
        let ((hit_seq, hit_at), (miss_seq, miss_at)) = (hit, miss);
        let pick = if hit_seq != NONE {
            Pick::Issue {
                bank: hit_at,
                hit: true,
            }
        } else if miss_seq != NONE {
            Pick::Issue {
                bank: miss_at,
                hit: false,
            }
        } else {
            Pick::WaitUntil(earliest)
        };
        (pick, None)
    }

    /// [`pick_frfcfs`](Self::pick_frfcfs) when no request would hit its open row: every bank
    /// has a row miss and nothing else.
    #[inline]
    fn pick_oldest_miss(&self, now: Ps) -> (Pick, Option<Ps>) {
        use std::hint::select_unpredictable as select;
        let (mut miss_seq, mut miss_at) = (NONE, 0);
        let mut earliest = Ps::MAX;
        let mut ready_banks = 0;
        for (i, e) in self.entries.iter().enumerate() {
            let ready = e.miss_from <= now;
            let key = select(ready, e.miss_seq, NONE);
            let older = key < miss_seq;
            miss_seq = select(older, key, miss_seq);
            miss_at = select(older, i, miss_at);
            earliest = earliest.min(select(ready, Ps::MAX, e.miss_from));
            ready_banks += ready as usize;
        }
        if miss_seq != NONE {
            // Another ready bank keeps the next decision at the next command clock; otherwise
            // the other banks become ready at `earliest`.
            let others = if ready_banks > 1 { now } else { earliest };
            (
                Pick::Issue {
                    bank: miss_at,
                    hit: false,
                },
                Some(others),
            )
        } else {
            (Pick::WaitUntil(earliest), None)
        }
    }

    /// Earliest time from which a request of flat bank `bank` could issue (`Ps::MAX` when the
    /// bank has none), not raised to the current time.
    #[inline]
    pub fn bank_ready(&self, bank: usize) -> Ps {
        self.check_bank(bank);
        let list = &self.banks[bank];
        if list.len == 0 {
            return Ps::MAX;
        }
        let e = &self.entries[list.pos as usize];
        let hit = if e.hit_seq != NONE {
            e.hit_from
        } else {
            Ps::MAX
        };
        let miss = if e.miss_seq != NONE {
            e.miss_from
        } else {
            Ps::MAX
        };
        hit.min(miss)
    }

    /// The slot of candidate `i` (an index into the candidates, as in [`Pick::Issue`]): its
    /// oldest row hit (`hit`) or oldest row miss.
    #[inline]
    pub fn candidate(&self, i: usize, hit: bool) -> u32 {
        let e = self
            .entries
            .get(i)
            .expect("scheduler picked a bank with requests");
        let slot = if hit { e.hit_slot } else { e.miss_slot };
        assert!(slot != NIL, "scheduler picked an existing request");
        slot
    }

    /// Earliest time at or after `t` at which some request of this queue could issue.
    #[inline]
    pub fn next_ready(&self, t: Ps) -> Option<Ps> {
        if self.entries.is_empty() {
            return None;
        }
        let mut min = Ps::MAX;
        if self.hits == 0 {
            // Every bank has a row miss and nothing else.
            for e in self.entries.iter() {
                min = min.min(e.miss_from);
            }
        } else {
            use std::hint::select_unpredictable as select;
            for e in self.entries.iter() {
                min = select((e.hit_seq != NONE) & (e.hit_from < min), e.hit_from, min);
                min = select((e.miss_seq != NONE) & (e.miss_from < min), e.miss_from, min);
            }
        }
        Some(min.max(t))
    }
}
