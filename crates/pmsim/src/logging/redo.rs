//! The hardware redo-logging engine that REDU, LALEA and BLOM share; they differ in where log
//! entries and headers go ([`LogAllocator`]) and in whether headers are written to PM or kept
//! in the ADR domain ([`MetaPolicy`]).
//!
//! Per transaction (REDU, Jeong et al. MICRO'18, with ATOM's log entry collation):
//!
//! 1. Stores to PM lines inside `TxBegin`/`TxEnd` fill the core's log buffer (8 lines, LALEA
//!    Table I); a store to a buffered line updates it, a new line when the buffer is full
//!    sends the oldest out as a log entry (a whole line of new data). `TxEnd` sends the rest.
//! 2. Every seven entries form a record; its header is issued only once its entries are
//!    durable (intra-record ordering). Under BLOM the header is instead kept in the ADR
//!    domain from that moment (durable at once, written to PM only on ADR overflow or by
//!    the ADR flush at a crash).
//! 3. The transaction is committed once every header of it is durable (the last one marked
//!    last); `TxEnd` stalls the core until then.
//! 4. After the commit the controller writes the transaction's lines in place from the log
//!    data (asynchronous direct update); cache write-backs of lines an uncommitted
//!    transaction wrote are taken over (no-steal), since recovery can only redo.
//! 5. Once every in-place write of a transaction is durable, its records are reclaimed and
//!    the thread's non-volatile `applied` register passes its stamp: recovery skips it.

use super::record::{self, HeaderMeta, Layout, ENTRIES_PER_RECORD};
use super::{CommitAction, LogRegion, LogSource, LogWrite, LoggingEngine, MemoryView};
use crate::image::{LineData, PmImage};
use crate::stats::{Histogram, Stats};
use crate::time::Ps;
use std::collections::{HashMap, VecDeque};

/// Lines of the core's log buffer (LALEA Table I: "8 log buffer entries" beside the L1).
pub const LOG_BUFFER_LINES: usize = 8;

/// Where log records go.
pub trait LogAllocator: Send {
    /// Lines per header (1: ATOM's header; 2: LALEA's header with entry addresses).
    fn header_lines(&self) -> usize;
    /// How recovery finds a record's entries.
    fn layout(&self) -> Layout;
    /// Lays out the log region.
    fn attach(&mut self, region: LogRegion, mem: &dyn MemoryView);
    /// The header lines of a new record (`[line0, 0]` for one-line headers); `None` when the
    /// log is full.
    fn header(&mut self, mem: &dyn MemoryView) -> Option<[u64; 2]>;
    /// The log line of entry `index` of the record with header `header`; `None` when full.
    fn entry(&mut self, header: [u64; 2], index: usize, mem: &dyn MemoryView) -> Option<u64>;
    /// A write to log line `addr` was issued.
    fn issued(&mut self, _addr: u64) {}
    /// A write to log line `addr` became durable.
    fn durable(&mut self, _addr: u64) {}
    /// The record with `header` and `entries` is reclaimed: its lines are free again.
    fn release(&mut self, header: [u64; 2], entries: &[u64]);
    /// The header lines of the slot whose first line is `addr`, if it is a header slot.
    fn header_slot(&self, addr: u64) -> Option<[u64; 2]>;
}

/// Deliberate bugs (`controller.logging_fault`), for checking crash oracles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fault {
    /// The engine as designed.
    #[default]
    None,
    /// Headers are issued without waiting for their entries (no intra-record ordering).
    HeaderBeforeEntries,
    /// The ADR flush at a crash loses the buffered log metadata.
    NoAdrFlush,
}

/// Where headers live once their entries are durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaPolicy {
    /// Written to PM (REDU, LALEA).
    WriteToPm,
    /// Kept in the ADR domain until the transaction's in-place updates are durable (BLOM).
    BufferInAdr,
}

#[derive(Clone, Copy, Debug)]
enum Tag {
    Entry {
        thread: u16,
        rec: usize,
        addr: u64,
        issued: Ps,
    },
    Header {
        thread: u16,
        rec: usize,
        addr: u64,
    },
    InPlace {
        stamp: u32,
    },
    Spill {
        id: u64,
    },
}

struct Record {
    header: [u64; 2],
    homes: Vec<u64>,
    entries: Vec<u64>,
    /// Entry writes not yet durable.
    outstanding: u32,
    /// Header lines written and not yet durable.
    meta_pending: u32,
    closed: bool,
    last: bool,
    next: u64,
    meta_issued: bool,
    meta_durable: bool,
}

#[derive(Default)]
struct ThreadLog {
    active: bool,
    ending: bool,
    stamp: u32,
    end_time: Ps,
    buffer: VecDeque<(u64, [u8; 64])>,
    /// The transaction's lines with their newest data, in first-store order.
    write_set: Vec<(u64, [u8; 64])>,
    ws_index: HashMap<u64, usize>,
    records: Vec<Record>,
}

struct Applying {
    thread: u16,
    outstanding: usize,
    records: Vec<([u64; 2], Vec<u64>)>,
}

struct Held {
    id: u64,
    stamp: u32,
    lines: Vec<(u64, [u8; 64])>,
    spilling: bool,
    /// Spill writes not yet durable.
    spill_pending: u32,
}

#[derive(Default)]
struct Counters {
    commits: u64,
    entries: u64,
    header_writes: u64,
    headers_buffered: u64,
    spills: u64,
    inplace_writes: u64,
    absorbed: u64,
    commit_latency: Histogram,
    entry_latency: Histogram,
}

/// A hardware redo-logging engine (see the module documentation).
pub struct RedoEngine {
    name: &'static str,
    alloc: Box<dyn LogAllocator>,
    meta: MetaPolicy,
    region: LogRegion,
    adr_capacity: usize,
    next_stamp: u32,
    threads: Vec<ThreadLog>,
    tags: HashMap<u64, Tag>,
    next_tag: u64,
    applying: HashMap<u32, Applying>,
    /// Lines in the write sets of uncommitted transactions (count of transactions).
    open_lines: HashMap<u64, u32>,
    /// Non-volatile per-thread register: every transaction of the thread with a smaller
    /// stamp is durable in place.
    applied: Vec<u32>,
    /// Per thread, committed stamps in order and whether their in-place updates are done.
    order: Vec<VecDeque<(u32, bool)>>,
    held: VecDeque<Held>,
    held_lines: usize,
    error: Option<String>,
    fault: Fault,
    c: Counters,
}

impl RedoEngine {
    /// An engine named `name` allocating with `alloc` under metadata policy `meta`.
    pub fn new(name: &'static str, alloc: Box<dyn LogAllocator>, meta: MetaPolicy) -> Self {
        RedoEngine {
            name,
            alloc,
            meta,
            region: LogRegion { base: 0, bytes: 0 },
            adr_capacity: 0,
            next_stamp: 1,
            threads: Vec::new(),
            tags: HashMap::new(),
            next_tag: 0,
            applying: HashMap::new(),
            open_lines: HashMap::new(),
            applied: Vec::new(),
            order: Vec::new(),
            held: VecDeque::new(),
            held_lines: 0,
            error: None,
            fault: Fault::None,
            c: Counters::default(),
        }
    }

    fn thread(&mut self, t: u16) -> &mut ThreadLog {
        let t = t as usize;
        while self.threads.len() <= t {
            self.threads.push(ThreadLog::default());
            self.applied.push(0);
            self.order.push(VecDeque::new());
        }
        &mut self.threads[t]
    }

    fn tag(&mut self, tag: Tag) -> u64 {
        let id = self.next_tag;
        self.next_tag += 1;
        self.tags.insert(id, tag);
        id
    }

    fn full(&mut self) {
        if self.error.is_none() {
            self.error = Some(format!(
                "controller.logging = \"{}\": the {} MiB hardware log region is full (in-place \
                 updates fell too far behind)",
                self.name,
                self.region.bytes >> 20
            ));
        }
    }

    /// Opens a new record for thread `t`; returns its index.
    fn open_record(&mut self, t: u16, mem: &dyn MemoryView) -> Option<usize> {
        let Some(header) = self.alloc.header(mem) else {
            self.full();
            return None;
        };
        let th = &mut self.threads[t as usize];
        th.records.push(Record {
            header,
            homes: Vec::with_capacity(ENTRIES_PER_RECORD),
            entries: Vec::with_capacity(ENTRIES_PER_RECORD),
            outstanding: 0,
            meta_pending: 0,
            closed: false,
            last: false,
            next: 0,
            meta_issued: false,
            meta_durable: false,
        });
        Some(th.records.len() - 1)
    }

    /// The open record of `t`, opening one when there is none.
    fn current_record(&mut self, t: u16, mem: &dyn MemoryView) -> Option<usize> {
        let th = &self.threads[t as usize];
        match th.records.last() {
            Some(r) if !r.closed => Some(th.records.len() - 1),
            _ => self.open_record(t, mem),
        }
    }

    /// Sends a log entry of `line` (new data `data`).
    fn emit_entry(
        &mut self,
        t: u16,
        line: u64,
        data: [u8; 64],
        now: Ps,
        mem: &dyn MemoryView,
        out: &mut Vec<LogWrite>,
    ) {
        let Some(ri) = self.current_record(t, mem) else {
            return;
        };
        let header = self.threads[t as usize].records[ri].header;
        let idx = self.threads[t as usize].records[ri].entries.len();
        let Some(addr) = self.alloc.entry(header, idx, mem) else {
            self.full();
            return;
        };
        self.alloc.issued(addr);
        let tag = self.tag(Tag::Entry {
            thread: t,
            rec: ri,
            addr,
            issued: now,
        });
        let r = &mut self.threads[t as usize].records[ri];
        r.homes.push(line);
        r.entries.push(addr);
        r.outstanding += 1;
        self.c.entries += 1;
        out.push(LogWrite {
            line_addr: addr,
            thread: t,
            data,
            tag,
            tracked: true,
            source: LogSource::Core,
        });
        if r.entries.len() == ENTRIES_PER_RECORD {
            self.close_record(t, ri, false, now, mem, out);
        }
    }

    /// Record `ri` of `t` takes no more entries; a record that is not the last links to a
    /// freshly opened successor.
    fn close_record(
        &mut self,
        t: u16,
        ri: usize,
        last: bool,
        now: Ps,
        mem: &dyn MemoryView,
        out: &mut Vec<LogWrite>,
    ) {
        let next = if last {
            0
        } else {
            match self.open_record(t, mem) {
                Some(n) => self.threads[t as usize].records[n].header[0],
                None => return,
            }
        };
        let r = &mut self.threads[t as usize].records[ri];
        r.closed = true;
        r.last = last;
        r.next = next;
        self.try_meta(t, ri, now, out);
    }

    /// Issues (or buffers) the header of a closed record whose entries are all durable.
    fn try_meta(&mut self, t: u16, ri: usize, now: Ps, out: &mut Vec<LogWrite>) {
        let stamp = self.threads[t as usize].stamp;
        let two = self.alloc.header_lines() == 2;
        let r = &mut self.threads[t as usize].records[ri];
        let ordered = self.fault != Fault::HeaderBeforeEntries;
        if !r.closed || (ordered && r.outstanding > 0) || r.meta_issued {
            return;
        }
        r.meta_issued = true;
        let meta = HeaderMeta {
            stamp,
            thread: t as u8,
            index: ri as u8,
            count: r.homes.len() as u8,
            last: r.last,
        };
        let mut lines = vec![(r.header[0], record::header_line(meta, &r.homes))];
        if two {
            lines.push((r.header[1], record::links_line(meta, &r.entries, r.next)));
        }
        match self.meta {
            MetaPolicy::BufferInAdr => {
                r.meta_durable = true;
                self.c.headers_buffered += 1;
                let id = self.next_tag;
                self.next_tag += 1;
                self.held_lines += lines.len();
                self.held.push_back(Held {
                    id,
                    stamp,
                    lines,
                    spilling: false,
                    spill_pending: 0,
                });
                self.spill_overflow(t, out);
                self.check_commit(t, now, out);
            }
            MetaPolicy::WriteToPm => {
                r.meta_pending = lines.len() as u32;
                for (addr, data) in lines {
                    self.alloc.issued(addr);
                    self.c.header_writes += 1;
                    let tag = self.tag(Tag::Header {
                        thread: t,
                        rec: ri,
                        addr,
                    });
                    out.push(LogWrite {
                        line_addr: addr,
                        thread: t,
                        data,
                        tag,
                        tracked: true,
                        source: LogSource::Controller,
                    });
                }
            }
        }
    }

    /// BLOM: when buffered metadata exceeds the ADR domain, the oldest buffered header goes
    /// to PM (it stays buffered until that write is durable).
    fn spill_overflow(&mut self, t: u16, out: &mut Vec<LogWrite>) {
        let mut spilling: usize = self
            .held
            .iter()
            .filter(|h| h.spilling)
            .map(|h| h.lines.len())
            .sum();
        let mut i = 0;
        while self.held_lines - spilling > self.adr_capacity && i < self.held.len() {
            if !self.held[i].spilling {
                self.held[i].spilling = true;
                self.held[i].spill_pending = self.held[i].lines.len() as u32;
                spilling += self.held[i].lines.len();
                self.c.spills += 1;
                let id = self.held[i].id;
                let lines = self.held[i].lines.clone();
                for (addr, data) in lines {
                    let tag = self.tag(Tag::Spill { id });
                    out.push(LogWrite {
                        line_addr: addr,
                        thread: t,
                        data,
                        tag,
                        tracked: false,
                        source: LogSource::Controller,
                    });
                }
            }
            i += 1;
        }
    }

    /// Commits `t`'s ended transaction once every header is durable: the controller then
    /// writes its lines in place.
    fn check_commit(&mut self, t: u16, now: Ps, out: &mut Vec<LogWrite>) {
        let th = &mut self.threads[t as usize];
        if !th.ending
            || !th
                .records
                .iter()
                .all(|r| r.meta_durable && r.outstanding == 0)
        {
            return;
        }
        self.c.commits += 1;
        self.c
            .commit_latency
            .record(now.saturating_sub(th.end_time));
        let stamp = th.stamp;
        th.active = false;
        th.ending = false;
        th.ws_index.clear();
        let write_set = std::mem::take(&mut th.write_set);
        let records = std::mem::take(&mut th.records)
            .into_iter()
            .map(|r| (r.header, r.entries))
            .collect();
        self.order[t as usize].push_back((stamp, false));
        for (line, _) in &write_set {
            if let Some(n) = self.open_lines.get_mut(line) {
                *n -= 1;
                if *n == 0 {
                    self.open_lines.remove(line);
                }
            }
        }
        self.applying.insert(
            stamp,
            Applying {
                thread: t,
                outstanding: write_set.len(),
                records,
            },
        );
        if write_set.is_empty() {
            self.reclaim(stamp);
            return;
        }
        for (line, data) in write_set {
            self.c.inplace_writes += 1;
            let tag = self.tag(Tag::InPlace { stamp });
            out.push(LogWrite {
                line_addr: line,
                thread: t,
                data,
                tag,
                tracked: false,
                source: LogSource::Controller,
            });
        }
    }

    /// Every in-place write of `stamp` is durable: free its log and advance the register.
    fn reclaim(&mut self, stamp: u32) {
        let Some(a) = self.applying.remove(&stamp) else {
            return;
        };
        for (header, entries) in &a.records {
            self.alloc.release(*header, entries);
        }
        let before = self.held.len();
        self.held.retain(|h| h.stamp != stamp);
        if self.held.len() != before {
            self.held_lines = self.held.iter().map(|h| h.lines.len()).sum();
        }
        let t = a.thread as usize;
        if let Some(e) = self.order[t].iter_mut().find(|(s, _)| *s == stamp) {
            e.1 = true;
        }
        while let Some(&(s, true)) = self.order[t].front() {
            self.applied[t] = s + 1;
            self.order[t].pop_front();
        }
    }
}

impl LoggingEngine for RedoEngine {
    fn name(&self) -> &'static str {
        self.name
    }

    fn attach(&mut self, region: LogRegion, mem: &dyn MemoryView) {
        self.region = region;
        self.adr_capacity = mem.adr_lines();
        self.alloc.attach(region, mem);
    }

    fn on_tx_begin(&mut self, thread: u16, _now: Ps) {
        let stamp = self.next_stamp;
        self.next_stamp += 1;
        let th = self.thread(thread);
        if th.active {
            // Nested TxBegin: the hardware flattens it into the open transaction.
            return;
        }
        th.active = true;
        th.stamp = stamp;
    }

    fn on_store(
        &mut self,
        thread: u16,
        line_addr: u64,
        line: &[u8; 64],
        now: Ps,
        mem: &dyn MemoryView,
        out: &mut Vec<LogWrite>,
    ) {
        let th = self.thread(thread);
        if !th.active || th.ending {
            return;
        }
        match th.ws_index.get(&line_addr) {
            Some(&i) => th.write_set[i].1 = *line,
            None => {
                th.ws_index.insert(line_addr, th.write_set.len());
                th.write_set.push((line_addr, *line));
                *self.open_lines.entry(line_addr).or_insert(0) += 1;
            }
        }
        let th = &mut self.threads[thread as usize];
        if let Some(b) = th.buffer.iter_mut().find(|(l, _)| *l == line_addr) {
            b.1 = *line;
            return;
        }
        let evicted = if th.buffer.len() >= LOG_BUFFER_LINES {
            th.buffer.pop_front()
        } else {
            None
        };
        th.buffer.push_back((line_addr, *line));
        if let Some((l, d)) = evicted {
            self.emit_entry(thread, l, d, now, mem, out);
        }
    }

    fn on_tx_end(
        &mut self,
        thread: u16,
        now: Ps,
        mem: &dyn MemoryView,
        out: &mut Vec<LogWrite>,
    ) -> CommitAction {
        let th = self.thread(thread);
        if !th.active {
            return CommitAction::Immediate;
        }
        if th.write_set.is_empty() {
            th.active = false;
            return CommitAction::Immediate;
        }
        th.ending = true;
        th.end_time = now;
        while let Some((l, d)) = self.threads[thread as usize].buffer.pop_front() {
            self.emit_entry(thread, l, d, now, mem, out);
        }
        if let Some(ri) = self.current_record(thread, mem) {
            self.close_record(thread, ri, true, now, mem, out);
        }
        CommitAction::WaitForLog
    }

    fn on_write_durable(
        &mut self,
        tag: u64,
        now: Ps,
        _mem: &dyn MemoryView,
        out: &mut Vec<LogWrite>,
    ) {
        let Some(tag) = self.tags.remove(&tag) else {
            return;
        };
        match tag {
            Tag::Entry {
                thread,
                rec,
                addr,
                issued,
            } => {
                self.c.entry_latency.record(now.saturating_sub(issued));
                self.threads[thread as usize].records[rec].outstanding -= 1;
                self.alloc.durable(addr);
                self.try_meta(thread, rec, now, out);
                // The commit also waits for entries (with `header-before-entries` the headers
                // may be durable first).
                self.check_commit(thread, now, out);
            }
            Tag::Header { thread, rec, addr } => {
                let r = &mut self.threads[thread as usize].records[rec];
                r.meta_pending -= 1;
                if r.meta_pending == 0 {
                    r.meta_durable = true;
                }
                self.alloc.durable(addr);
                self.check_commit(thread, now, out);
            }
            Tag::InPlace { stamp } => {
                let done = match self.applying.get_mut(&stamp) {
                    Some(a) => {
                        a.outstanding -= 1;
                        a.outstanding == 0
                    }
                    None => false,
                };
                if done {
                    self.reclaim(stamp);
                }
            }
            Tag::Spill { id } => {
                if let Some(i) = self.held.iter().position(|h| h.id == id) {
                    // A header leaves the buffer once all its lines are durable in PM.
                    let h = &mut self.held[i];
                    h.spill_pending -= 1;
                    if h.spill_pending == 0 {
                        self.held_lines -= h.lines.len();
                        self.held.remove(i);
                    }
                }
            }
        }
    }

    fn absorbs_writeback(&mut self, line_addr: u64) -> bool {
        let hit = self.open_lines.contains_key(&line_addr);
        self.c.absorbed += hit as u64;
        hit
    }

    fn crash_flush(&self, image: &mut PmImage) {
        if self.fault == Fault::NoAdrFlush {
            return;
        }
        for h in &self.held {
            for (addr, data) in &h.lines {
                image.apply(*addr, &LineData::new(*addr, data).expect("a whole line"));
            }
        }
    }

    fn recover(&self, image: &PmImage) -> PmImage {
        record::recover(
            image,
            self.region,
            self.alloc.layout(),
            &self.applied,
            |a| self.alloc.header_slot(a),
        )
    }

    fn error(&self) -> Option<String> {
        self.error.clone()
    }

    fn inject_fault(&mut self, fault: &str) -> Result<(), String> {
        self.fault = match fault {
            "header-before-entries" => Fault::HeaderBeforeEntries,
            "no-adr-flush" if self.meta == MetaPolicy::BufferInAdr => Fault::NoAdrFlush,
            _ => {
                return Err(format!(
                    "controller.logging_fault = \"{fault}\": not a fault of logging engine \"{}\" \
                     (it has header-before-entries{})",
                    self.name,
                    if self.meta == MetaPolicy::BufferInAdr {
                        ", no-adr-flush"
                    } else {
                        ""
                    }
                ))
            }
        };
        Ok(())
    }

    fn export_stats(&self, s: &mut Stats) {
        s.set("logging.commits", self.c.commits);
        s.set("logging.entries", self.c.entries);
        s.set("logging.header_writes", self.c.header_writes);
        s.set("logging.headers_buffered", self.c.headers_buffered);
        s.set("logging.adr_spills", self.c.spills);
        s.set("logging.inplace_writes", self.c.inplace_writes);
        s.set("logging.absorbed_writebacks", self.c.absorbed);
        s.set_histogram("logging.commit_latency_ps", self.c.commit_latency.clone());
        s.set_histogram(
            "logging.entry_persist_latency_ps",
            self.c.entry_latency.clone(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logging::{blom, lalea, redu};
    use std::cell::Cell;

    /// A controller with 8 banks, 4 KiB pages interleaved over them, and settable loads.
    struct FakeMem {
        pending: [Cell<u32>; 8],
    }

    impl FakeMem {
        fn new() -> FakeMem {
            FakeMem {
                pending: Default::default(),
            }
        }
    }

    impl MemoryView for FakeMem {
        fn banks(&self) -> usize {
            8
        }
        fn bank_of(&self, addr: u64) -> usize {
            (addr >> 12) as usize % 8
        }
        fn pending(&self, bank: usize) -> u32 {
            self.pending[bank].get()
        }
        fn adr_lines(&self) -> usize {
            16
        }
    }

    const REGION: LogRegion = LogRegion {
        base: 0x7000_0000,
        bytes: 1 << 24,
    };
    const HOME: u64 = 0x1000_0000;

    fn line_of(i: u64) -> [u8; 64] {
        [i as u8 + 1; 64]
    }

    /// Runs one transaction of `lines` distinct lines on thread 0 and returns every write the
    /// engine issued up to the commit (in-place updates excluded), acknowledging each log
    /// write once issued unless `lost` says to drop it (the write never becomes durable).
    fn transaction(
        e: &mut RedoEngine,
        mem: &FakeMem,
        lines: u64,
        mut lost: impl FnMut(&LogWrite) -> bool,
    ) -> (Vec<LogWrite>, Vec<LogWrite>) {
        e.attach(REGION, mem);
        let mut out = Vec::new();
        e.on_tx_begin(0, 0);
        for i in 0..lines {
            // two stores per line: the log keeps the newest bytes
            e.on_store(0, HOME + i * 64, &[0xee; 64], 1, mem, &mut out);
            e.on_store(0, HOME + i * 64, &line_of(i), 2, mem, &mut out);
        }
        assert_eq!(e.on_tx_end(0, 3, mem, &mut out), CommitAction::WaitForLog);
        let (mut durable, mut inplace) = (Vec::new(), Vec::new());
        let mut now = 4;
        while let Some(w) = (!out.is_empty()).then(|| out.remove(0)) {
            if !w.tracked && w.line_addr >= HOME && w.line_addr < HOME + lines * 64 {
                inplace.push(w);
                continue;
            }
            if lost(&w) {
                continue;
            }
            durable.push(w);
            now += 1;
            e.on_write_durable(w.tag, now, mem, &mut out);
        }
        (durable, inplace)
    }

    fn image_of(writes: &[LogWrite]) -> PmImage {
        let mut img = PmImage::new();
        for w in writes {
            img.apply(w.line_addr, &LineData::new(w.line_addr, &w.data).unwrap());
        }
        img
    }

    #[test]
    fn lalea_recovery_follows_next_ptr_to_entries_in_several_banks() {
        let mem = FakeMem::new();
        // bank 0 busy: LALEA must place the log elsewhere, and spread it as loads change
        mem.pending[0].set(50);
        let mut e = lalea::lalea();
        let (durable, inplace) = transaction(&mut e, &mem, 9, |_| false);
        assert_eq!(
            inplace.len(),
            9,
            "committed: every line is written in place"
        );
        let entry_banks: std::collections::HashSet<usize> = durable
            .iter()
            .filter(|w| w.source == LogSource::Core)
            .map(|w| mem.bank_of(w.line_addr))
            .collect();
        assert!(entry_banks.len() >= 2, "entries in banks {entry_banks:?}");
        assert!(!entry_banks.contains(&0));
        // Crash after the commit, before any in-place update: recovery alone restores all
        // nine lines, walking two records (7 + 2 entries) through next_ptr.
        let rec = e.recover(&image_of(&durable));
        for i in 0..9 {
            assert_eq!(rec.line(HOME + i * 64), Some(&line_of(i)), "line {i}");
        }
        // Once the in-place updates are durable the log is retired: recovery replays nothing.
        let mut out = Vec::new();
        for w in &inplace {
            e.on_write_durable(w.tag, 100, &mem, &mut out);
        }
        let rec = e.recover(&image_of(&durable));
        assert_eq!(rec.line(HOME), None);
    }

    #[test]
    fn a_transaction_whose_log_is_incomplete_is_not_replayed() {
        let mem = FakeMem::new();
        for make in [redu::redu, lalea::lalea, blom::blom] {
            let mut e = make();
            // the third log entry never becomes durable: no header may be written for its
            // record, the transaction never commits, and recovery changes nothing
            let mut n = 0;
            let (durable, inplace) = transaction(&mut e, &mem, 9, |w| {
                n += (w.source == LogSource::Core) as u32;
                w.source == LogSource::Core && n == 3
            });
            assert!(inplace.is_empty(), "{}", e.name());
            let mut img = image_of(&durable);
            e.crash_flush(&mut img);
            let rec = e.recover(&img);
            for i in 0..9 {
                assert_eq!(rec.line(HOME + i * 64), None, "{}: line {i}", e.name());
            }
        }
    }

    #[test]
    fn blom_writes_no_metadata_to_pm_unless_adr_overflows() {
        let mem = FakeMem::new();
        let mut b = blom::blom();
        let (durable, inplace) = transaction(&mut b, &mem, 9, |_| false);
        assert_eq!(inplace.len(), 9);
        assert!(
            durable.iter().all(|w| w.source == LogSource::Core),
            "only entries"
        );
        let mut s = Stats::new();
        b.export_stats(&mut s);
        assert_eq!(s.counter("logging.header_writes"), 0);
        assert_eq!(s.counter("logging.adr_spills"), 0);
        assert_eq!(s.counter("logging.headers_buffered"), 2);
        // the buffered headers are what a crash flushes: recovery then finds the transaction
        let mut img = image_of(&durable);
        b.crash_flush(&mut img);
        assert_eq!(b.recover(&img).line(HOME + 8 * 64), Some(&line_of(8)));
        // REDU writes both headers, after their entries
        let mut r = redu::redu();
        let (durable, _) = transaction(&mut r, &mem, 9, |_| false);
        let headers: Vec<usize> = durable
            .iter()
            .enumerate()
            .filter(|(_, w)| w.source == LogSource::Controller)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(headers.len(), 2);
        assert!(headers[0] > 6, "first header after its seven entries");
        // 18 records (120 lines) outgrow a 16-line ADR buffer: BLOM spills the oldest
        let mut b = blom::blom();
        transaction(&mut b, &mem, 120, |_| false);
        let mut s = Stats::new();
        b.export_stats(&mut s);
        assert_eq!(s.counter("logging.header_writes"), 0);
        assert!(s.counter("logging.adr_spills") >= 2, "{:?}", s.to_json());
    }

    #[test]
    fn writebacks_of_uncommitted_lines_are_taken_over_until_the_commit() {
        let mem = FakeMem::new();
        let mut e = redu::redu();
        e.attach(REGION, &mem);
        let mut out = Vec::new();
        e.on_tx_begin(0, 0);
        e.on_store(0, HOME, &line_of(0), 1, &mem, &mut out);
        assert!(e.absorbs_writeback(HOME));
        assert!(!e.absorbs_writeback(HOME + 64));
        e.on_tx_end(0, 2, &mem, &mut out);
        while let Some(w) = (!out.is_empty()).then(|| out.remove(0)) {
            if w.tracked {
                e.on_write_durable(w.tag, 3, &mem, &mut out);
            }
        }
        assert!(
            !e.absorbs_writeback(HOME),
            "committed: write-backs pass again"
        );
    }
}
