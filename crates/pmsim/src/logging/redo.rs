//! The hardware logging engine that REDU, LAD, LALEA, BLOM and their combinations share; they
//! differ in where log entries and headers go ([`LogAllocator`]), in whether headers are
//! written to PM or kept in the ADR domain ([`MetaPolicy`]) and in what is logged and when a
//! transaction commits ([`LogKind`]: REDU's redo log, or LAD's staging with an undo fallback).
//!
//! Per transaction (REDU, Jeong et al. MICRO'18, with ATOM's log entry collation):
//!
//! 1. Stores to PM lines inside `TxBegin`/`TxEnd` fill the core's log buffer (8 lines, LALEA
//!    Table I); a store to a buffered line updates it, a new line when the buffer is full
//!    sends the oldest out as a log entry (a whole line of new data). `TxEnd` sends the rest.
//! 2. Every seven entries form a record; its header is issued only once its entries are
//!    durable (intra-record ordering). Under BLOM the header is instead kept in the ADR
//!    domain from that moment, in WPQ entries the engine pins (durable at once; never
//!    written to PM unless the ADR flush at a crash writes it); a header that finds no entry
//!    free beside one left for writes is written to PM as REDU's is.
//! 3. The transaction is committed once every header of it is durable (the last one marked
//!    last); `TxEnd` stalls the core until then.
//! 4. After the commit the controller writes the transaction's lines in place from the log
//!    data (asynchronous direct update); cache write-backs of lines an uncommitted
//!    transaction wrote are taken over (no-steal), since recovery can only redo.
//! 5. Once every in-place write of a transaction is durable, its records are reclaimed and
//!    the thread's non-volatile `applied` register passes its stamp: recovery skips it.
//!
//! Under [`LogKind::StageOrUndo`] (LAD, Gupta et al. MICRO'19, as LALEA Sec. II-C and IV-B
//! describe it) a transaction reserves one ADR line per line it writes: at the line's first
//! store the engine keeps a WPQ entry of its channel (the WPQ is the ADR buffer: committed
//! lines drain from it), where one is free beside the queued writes, the entries kept already
//! and one left for writes. If every line gets one, `TxEnd` sends the lines from the cache to
//! the controller, each taking its kept entry with it ([`LogWrite::holds_entry`]), and the
//! transaction commits once all of them are in the ADR domain: no log at all; at a crash ADR
//! discards the lines of a transaction not yet committed. A store that finds no entry gives
//! back its transaction's kept entries and makes it fall back to undo logging: the controller
//! then logs the old contents of every line written so far (and of each later one at its
//! first store) in records as above, headers after their entries; `TxEnd` waits for the log,
//! writes the lines in place and commits once they are durable (the `applied` register is
//! the commit mark). Recovery undoes the transactions the register has not passed.

use super::bank_load::BankLoad;
use super::record::{self, HeaderMeta, Layout, ENTRIES_PER_RECORD};
use super::{CommitAction, LogRegion, LogSource, LogWrite, LoggingEngine, MemoryView};
use crate::fast_hash::FastMap;
use crate::image::{LineData, PmImage};
use crate::stats::{Histogram, Stats};
use crate::time::Ps;
use std::collections::hash_map::Entry;
use std::collections::VecDeque;

/// Lines of the core's log buffer (LALEA Table I: "8 log buffer entries" beside the L1).
pub const LOG_BUFFER_LINES: usize = 8;

impl Clone for Box<dyn LogAllocator> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// Where log records go.
pub trait LogAllocator: Send {
    /// A copy of this plug-in with its whole state: a run forked at a crash point
    /// ([`crate::system::System::run_to_crash_points`]) goes on with the copy. (`Box::new(self.clone())`.)
    fn clone_box(&self) -> Box<dyn LogAllocator>;

    /// Lines per header (1: ATOM's header; 2: LALEA's header with entry addresses).
    fn header_lines(&self) -> usize;
    /// How recovery finds a record's entries.
    fn layout(&self) -> Layout;
    /// Lays out the log region.
    fn attach(&mut self, region: LogRegion, mem: &dyn MemoryView);
    /// The header lines of a new record (`[line0, 0]` for one-line headers), given the banks'
    /// pending operations now; `None` when the log is full.
    fn header(&mut self, load: &BankLoad) -> Option<[u64; 2]>;
    /// The log line of entry `index` of the record with header `header`, given the banks'
    /// pending operations now; `None` when full.
    fn entry(&mut self, header: [u64; 2], index: usize, load: &BankLoad) -> Option<u64>;
    /// The bank (`MemoryView::bank_of`) of log line `addr`, which this allocator handed out
    /// (an allocator that keeps its lines' banks answers without asking `mem`).
    fn bank_of(&self, addr: u64, mem: &dyn MemoryView) -> usize {
        mem.bank_of(addr)
    }
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
    /// LAD: ADR keeps the staged lines of an uncommitted transaction at a crash.
    KeepUncommittedStaged,
    /// Cache write-backs of lines an open transaction wrote reach PM (no no-steal).
    StealWritebacks,
    /// A transaction's log is freed as soon as its in-place updates are durable, and the
    /// thread's register never passes it (the engine's order of reclaim ignored).
    FreeBeforeRegister,
}

/// What is logged, and when a transaction commits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogKind {
    /// New contents, logged from the core's log buffer; committed once the log is durable, in
    /// place afterwards in the background (REDU).
    Redo,
    /// The write set staged in the ADR buffer when it fits (no log, committed once it is in
    /// the ADR domain); otherwise old contents, logged by the controller, the transaction
    /// committed once its in-place updates are durable (LAD).
    StageOrUndo,
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
}

#[derive(Clone)]
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

#[derive(Clone, Default)]
struct ThreadLog {
    active: bool,
    ending: bool,
    stamp: u32,
    end_time: Ps,
    /// When the transaction's latest store retired (the paper's commit latency counts from
    /// the issue of the transaction's last instruction).
    last_store: Ps,
    /// When the transaction's latest log entry became durable.
    last_entry_durable: Ps,
    buffer: VecDeque<(u64, [u8; 64])>,
    /// The transaction's lines with their newest data, in first-store order.
    write_set: Vec<(u64, [u8; 64])>,
    /// LAD: each write-set line's contents before the transaction's first store to it.
    old: Vec<[u8; 64]>,
    /// LAD: the transaction overflowed the ADR buffer and logs.
    logging: bool,
    /// LAD: lines of the write set (its first ones) with an ADR entry reserved.
    reserved: usize,
    /// Write-set line → index, kept only once the write set outgrows [`WS_SCAN_LINES`].
    ws_index: FastMap<u64, usize>,
    records: Vec<Record>,
}

/// Write sets of up to this many lines are searched by a scan; larger ones through
/// [`ThreadLog::ws_index`] (most transactions write a few lines, and a scan of those costs
/// less than hashing every store's line).
const WS_SCAN_LINES: usize = 16;

impl ThreadLog {
    /// The index of `line` in the write set, if the transaction wrote it.
    fn ws_position(&self, line: u64) -> Option<usize> {
        if self.write_set.len() <= WS_SCAN_LINES {
            self.write_set.iter().position(|w| w.0 == line)
        } else {
            self.ws_index.get(&line).copied()
        }
    }

    /// Adds `line` (not in it yet) with `data` to the write set.
    fn ws_push(&mut self, line: u64, data: [u8; 64]) {
        self.write_set.push((line, data));
        let n = self.write_set.len();
        if n == WS_SCAN_LINES + 1 {
            self.ws_index
                .extend(self.write_set.iter().enumerate().map(|(i, w)| (w.0, i)));
        } else if n > WS_SCAN_LINES {
            self.ws_index.insert(line, n - 1);
        }
    }
}

/// A record of a committed transaction: its header lines and its entries' addresses.
type Finished = ([u64; 2], Vec<u64>);

#[derive(Clone)]
struct Applying {
    thread: u16,
    outstanding: usize,
    records: Vec<Finished>,
    /// LAD: the transaction commits when its in-place writes are durable; `TxEnd` time and
    /// the time of its last store.
    commit_pending: Option<(Ps, Ps)>,
    /// LAD, staged: the lines' old contents, which ADR keeps at a crash until the
    /// transaction commits.
    staged_old: Vec<(u64, [u8; 64])>,
}

/// BLOM: a record's header kept in the ADR domain (WPQ entries the engine pins).
#[derive(Clone)]
struct Held {
    stamp: u32,
    /// The header lines (the first `n` of them), each with its channel.
    lines: [(u64, [u8; 64], usize); 2],
    n: usize,
}

impl Held {
    fn lines(&self) -> &[(u64, [u8; 64], usize)] {
        &self.lines[..self.n]
    }
}

#[derive(Clone, Default)]
struct Counters {
    commits: u64,
    staged_commits: u64,
    undo_fallbacks: u64,
    entries: u64,
    header_writes: u64,
    headers_buffered: u64,
    /// BLOM: headers written to PM because the ADR buffer had no room for them.
    adr_overflows: u64,
    inplace_writes: u64,
    absorbed: u64,
    commit_latency: Histogram,
    /// The same from the transaction's last store instead of its `TxEnd`.
    commit_latency_from_store: Histogram,
    /// Redo commits, split: from `TxEnd` to the last log entry durable (0 when all were
    /// durable before it), and from then (or `TxEnd`) to the commit (the headers).
    commit_entry_wait: Histogram,
    commit_header_tail: Histogram,
    entry_latency: Histogram,
    /// Sum over log-entry allocations of the banks' imbalance then (the busiest bank's
    /// pending requests over the mean bank's, in thousandths), and the samples in it.
    bank_imbalance_milli: u64,
    bank_imbalance_samples: u64,
    /// Sum of the pending requests of the bank each log entry went to.
    entry_bank_load: u64,
}

/// A hardware redo-logging engine (see the module documentation).
#[derive(Clone)]
pub struct RedoEngine {
    name: &'static str,
    alloc: Box<dyn LogAllocator>,
    meta: MetaPolicy,
    kind: LogKind,
    region: LogRegion,
    adr_capacity: usize,
    next_stamp: u32,
    threads: Vec<ThreadLog>,
    /// Writes in flight by tag (the tag is the slot); slots of durable writes are reused.
    tags: Vec<Option<Tag>>,
    free_tags: Vec<u64>,
    applying: FastMap<u32, Applying>,
    /// Lines in the write sets of uncommitted transactions (count of transactions).
    open_lines: FastMap<u64, u32>,
    /// Non-volatile per-thread register: every transaction of the thread with a smaller
    /// stamp is durable in place.
    applied: Vec<u32>,
    /// Per thread, committed stamps in order; once a stamp's in-place updates are done, its
    /// records, kept until the register passes the stamp.
    order: Vec<VecDeque<(u32, Option<Vec<Finished>>)>>,
    held: VecDeque<Held>,
    /// BLOM: WPQ entries the held headers take, per channel.
    pinned: Vec<u32>,
    /// The banks' pending operations, read at most once per hook (the memory system does not
    /// change while a hook runs): valid while `load_fresh`.
    load: BankLoad,
    load_fresh: bool,
    /// The banks' imbalance in `load` (the busiest bank's pending operations over the mean
    /// bank's, in thousandths; `None` when none is pending), computed with it.
    load_imbalance: Option<u64>,
    /// The allocator's headers have two lines (LALEA's).
    two_line_headers: bool,
    /// Emptied record lists of reclaimed transactions, reused by committing ones.
    spare_finished: Vec<Vec<Finished>>,
    /// Emptied address lists of finished records, reused by new ones (a record's two lists
    /// were two allocations per record, and the write set one growth per transaction).
    spare: Vec<Vec<u64>>,
    error: Option<String>,
    fault: Fault,
    c: Counters,
}

impl RedoEngine {
    /// A redo engine named `name` allocating with `alloc` under metadata policy `meta`.
    pub fn new(name: &'static str, alloc: Box<dyn LogAllocator>, meta: MetaPolicy) -> Self {
        Self::with_kind(name, alloc, meta, LogKind::Redo)
    }

    /// An engine of `kind` named `name` allocating with `alloc` under metadata policy `meta`.
    pub fn with_kind(
        name: &'static str,
        alloc: Box<dyn LogAllocator>,
        meta: MetaPolicy,
        kind: LogKind,
    ) -> Self {
        let two_line_headers = alloc.header_lines() == 2;
        RedoEngine {
            name,
            alloc,
            meta,
            kind,
            region: LogRegion { base: 0, bytes: 0 },
            adr_capacity: 0,
            next_stamp: 1,
            threads: Vec::new(),
            tags: Vec::new(),
            free_tags: Vec::new(),
            applying: FastMap::default(),
            open_lines: FastMap::default(),
            applied: Vec::new(),
            order: Vec::new(),
            held: VecDeque::new(),
            pinned: Vec::new(),
            load: BankLoad::default(),
            load_fresh: false,
            load_imbalance: None,
            two_line_headers,
            spare_finished: Vec::new(),
            spare: Vec::new(),
            error: None,
            fault: Fault::None,
            c: Counters::default(),
        }
    }

    /// Thread `t`'s log (a hook's first look at it; the state of a new thread is added).
    #[inline]
    fn thread(&mut self, t: u16) -> &mut ThreadLog {
        let t = t as usize;
        if self.threads.len() <= t {
            self.add_threads(t + 1);
        }
        &mut self.threads[t]
    }

    /// Adds the state of threads up to `n`.
    #[cold]
    fn add_threads(&mut self, n: usize) {
        while self.threads.len() < n {
            self.threads.push(ThreadLog::default());
            self.applied.push(0);
            self.order.push(VecDeque::new());
        }
    }

    fn tag(&mut self, tag: Tag) -> u64 {
        match self.free_tags.pop() {
            Some(id) => {
                self.tags[id as usize] = Some(tag);
                id
            }
            None => {
                self.tags.push(Some(tag));
                self.tags.len() as u64 - 1
            }
        }
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

    /// Reads the banks' pending operations into `load` unless this hook did already.
    fn refresh_load(&mut self, mem: &dyn MemoryView) {
        if !self.load_fresh {
            self.load.refresh(mem);
            self.load_fresh = true;
            self.load_imbalance = self.load.imbalance_milli();
        }
    }

    /// Opens a new record for thread `t`; returns its index.
    fn open_record(&mut self, t: u16, mem: &dyn MemoryView) -> Option<usize> {
        self.refresh_load(mem);
        let Some(header) = self.alloc.header(&self.load) else {
            self.full();
            return None;
        };
        let mut list = || {
            self.spare
                .pop()
                .unwrap_or_else(|| Vec::with_capacity(ENTRIES_PER_RECORD))
        };
        let (homes, entries) = (list(), list());
        let th = &mut self.threads[t as usize];
        th.records.push(Record {
            header,
            homes,
            entries,
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
        // The banks' queues now: where a load-aware allocator puts the entry, and the load
        // the entry meets (how uneven the queues are, and the queue of its bank).
        self.refresh_load(mem);
        let Some(addr) = self.alloc.entry(header, idx, &self.load) else {
            self.full();
            return;
        };
        self.alloc.issued(addr);
        if let Some(milli) = self.load_imbalance {
            self.c.bank_imbalance_milli += milli;
            self.c.bank_imbalance_samples += 1;
        }
        self.c.entry_bank_load += u64::from(self.load.pending(self.alloc.bank_of(addr, mem)));
        let source = match self.kind {
            LogKind::Redo => LogSource::Core,
            LogKind::StageOrUndo => LogSource::Controller,
        };
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
            source,
            holds_entry: false,
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
        self.try_meta(t, ri, now, mem, out);
    }

    /// Issues (or buffers) the header of a closed record whose entries are all durable.
    fn try_meta(
        &mut self,
        t: u16,
        ri: usize,
        now: Ps,
        mem: &dyn MemoryView,
        out: &mut Vec<LogWrite>,
    ) {
        let stamp = self.threads[t as usize].stamp;
        let two = self.two_line_headers;
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
        // One or two header lines, without an allocation per record.
        let mut all = [
            (r.header[0], record::header_line(meta, &r.homes)),
            (0, [0; 64]),
        ];
        let n = if two {
            all[1] = (r.header[1], record::links_line(meta, &r.entries, r.next));
            2
        } else {
            1
        };
        let lines = &all[..n];
        if self.meta == MetaPolicy::BufferInAdr && self.adr_capacity > 0 {
            let mut channels = [0; 2];
            for (c, &(a, _)) in channels.iter_mut().zip(lines) {
                *c = mem.channel_of(a);
            }
            // The lines are copied into a held header only when it is kept (mostly the buffer
            // is used up and the header goes to PM).
            if self.pin(&channels[..n], mem) {
                let mut held = Held {
                    stamp,
                    lines: [(0, [0; 64], 0); 2],
                    n,
                };
                for ((h, &c), &(a, d)) in held.lines.iter_mut().zip(&channels).zip(lines) {
                    *h = (a, d, c);
                }
                let r = &mut self.threads[t as usize].records[ri];
                r.meta_durable = true;
                self.c.headers_buffered += 1;
                self.held.push_back(held);
                self.check_commit(t, now, out);
                return;
            }
            // The ADR buffer is used up: the controller writes this header to PM.
            self.c.adr_overflows += 1;
        }
        let r = &mut self.threads[t as usize].records[ri];
        r.meta_pending = n as u32;
        for &(addr, data) in lines {
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
                holds_entry: false,
            });
        }
    }

    /// Pins a WPQ entry in each of `channels` (a channel named twice, two) if each of them
    /// has room for its entries and still one entry for writes (the writes that free pinned
    /// entries must be able to enter, or the buffer would deadlock): BLOM's held headers,
    /// LAD's reserved lines.
    fn pin(&mut self, channels: &[usize], mem: &dyn MemoryView) -> bool {
        let fits = channels.iter().all(|&ch| {
            let need = channels.iter().filter(|&&c| c == ch).count();
            let (queued, cap) = mem.wpq(ch);
            let pinned = self.pinned.get(ch).copied().unwrap_or(0) as usize;
            queued + pinned + need < cap
        });
        if fits {
            for &ch in channels {
                if self.pinned.len() <= ch {
                    self.pinned.resize(ch + 1, 0);
                }
                self.pinned[ch] += 1;
            }
        }
        fits
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
        // A redo transaction is committed now; LAD's once its in-place writes are durable.
        if self.kind == LogKind::Redo {
            self.c.commits += 1;
            self.c
                .commit_latency
                .record(now.saturating_sub(th.end_time));
            self.c
                .commit_latency_from_store
                .record(now.saturating_sub(th.last_store));
            let entries_done = th.last_entry_durable.max(th.end_time);
            self.c.commit_entry_wait.record(entries_done - th.end_time);
            self.c
                .commit_header_tail
                .record(now.saturating_sub(entries_done));
        }
        self.write_in_place(t, now, out);
    }

    /// Sends `t`'s ended transaction's lines to their home locations: in the background once
    /// committed (redo), or as the last step of the commit (LAD: from the cache when staged,
    /// from the controller after the undo log).
    fn write_in_place(&mut self, t: u16, now: Ps, out: &mut Vec<LogWrite>) {
        let th = &mut self.threads[t as usize];
        let stamp = th.stamp;
        th.active = false;
        th.ending = false;
        if !th.ws_index.is_empty() {
            th.ws_index.clear();
        }
        let write_set = std::mem::take(&mut th.write_set);
        let old = std::mem::take(&mut th.old);
        let staged = self.kind == LogKind::StageOrUndo && !th.logging;
        th.logging = false;
        let end_time = (th.end_time, th.last_store);
        let spare = &mut self.spare;
        let mut records = self.spare_finished.pop().unwrap_or_default();
        records.extend(th.records.drain(..).map(|mut r| {
            r.homes.clear();
            spare.push(r.homes);
            (r.header, r.entries)
        }));
        self.order[t as usize].push_back((stamp, None));
        for (line, _) in &write_set {
            // One lookup per line (the entry, not a search and another to remove it).
            if let Entry::Occupied(mut e) = self.open_lines.entry(*line) {
                *e.get_mut() -= 1;
                if *e.get() == 0 {
                    e.remove();
                }
            }
        }
        let undo = self.kind == LogKind::StageOrUndo;
        let staged_old = if staged {
            write_set.iter().map(|w| w.0).zip(old).collect()
        } else {
            Vec::new()
        };
        self.applying.insert(
            stamp,
            Applying {
                thread: t,
                outstanding: write_set.len(),
                records,
                commit_pending: undo.then_some(end_time),
                staged_old,
            },
        );
        if write_set.is_empty() {
            self.reclaim(stamp, now);
            return;
        }
        for &(line, data) in &write_set {
            self.c.inplace_writes += 1;
            let tag = self.tag(Tag::InPlace { stamp });
            out.push(LogWrite {
                line_addr: line,
                thread: t,
                data,
                tag,
                // LAD's commit waits for its in-place writes.
                tracked: undo,
                source: if staged {
                    LogSource::Core
                } else {
                    LogSource::Controller
                },
                // A staged line takes the entry reserved at its first store.
                holds_entry: staged,
            });
        }
        // The thread's next transaction (it begins after this commit) reuses the allocation.
        let th = &mut self.threads[t as usize];
        if th.write_set.is_empty() {
            let mut write_set = write_set;
            write_set.clear();
            th.write_set = write_set;
        }
    }

    /// LAD: `t`'s transaction wrote line `line` (old contents `before`) for the first time.
    /// It reserves an ADR line; when the buffer is full the transaction falls back to undo
    /// logging and logs every line written so far.
    fn stage_or_log(
        &mut self,
        t: u16,
        line: u64,
        before: &[u8; 64],
        now: Ps,
        mem: &dyn MemoryView,
        out: &mut Vec<LogWrite>,
    ) {
        let th = &mut self.threads[t as usize];
        th.old.push(*before);
        if th.logging {
            self.emit_entry(t, line, *before, now, mem, out);
            return;
        }
        // The line's ADR entry, kept from now until the line arrives at the commit.
        if self.adr_capacity > 0 && self.pin(&[mem.channel_of(line)], mem) {
            self.threads[t as usize].reserved += 1;
            return;
        }
        // The buffer is full: give back the entries of the lines reserved so far (the first
        // ones of the write set) and log them.
        let th = &mut self.threads[t as usize];
        for &(l, _) in &th.write_set[..th.reserved] {
            self.pinned[mem.channel_of(l)] -= 1;
        }
        th.reserved = 0;
        th.logging = true;
        self.c.undo_fallbacks += 1;
        let lines: Vec<(u64, [u8; 64])> = th
            .write_set
            .iter()
            .map(|w| w.0)
            .zip(th.old.iter().copied())
            .collect();
        for (l, old) in lines {
            self.emit_entry(t, l, old, now, mem, out);
        }
    }

    /// Every in-place write of `stamp` is durable: free its log and advance the register
    /// (for LAD this is the commit).
    fn reclaim(&mut self, stamp: u32, now: Ps) {
        let Some(a) = self.applying.remove(&stamp) else {
            return;
        };
        if let Some((end, last_store)) = a.commit_pending {
            self.c.commits += 1;
            self.c.staged_commits += !a.staged_old.is_empty() as u64;
            self.c.commit_latency.record(now.saturating_sub(end));
            self.c
                .commit_latency_from_store
                .record(now.saturating_sub(last_store));
        }
        // The log of a transaction whose in-place updates are durable stays until the thread's
        // register passes its stamp. With several channels a later transaction's updates can
        // be durable before an earlier one's; freed at once, its log lines went to other
        // records while its header, at or above the register, still led recovery to them,
        // and the earlier record was replayed over its lines with nothing replayed after it
        // (pmlab crash with device.channels >= 2). Threads own disjoint data (pmwork's
        // partitions), so no transaction waits for another thread's.
        let t = a.thread as usize;
        match self.order[t].iter_mut().find(|(s, _)| *s == stamp) {
            Some(e) if self.fault != Fault::FreeBeforeRegister => e.1 = Some(a.records),
            _ => self.free_log(stamp, a.records),
        }
        while let Some((s, Some(_))) = self.order[t].front() {
            let s = *s;
            let Some((_, Some(records))) = self.order[t].pop_front() else {
                unreachable!("front checked")
            };
            self.applied[t] = s + 1;
            self.free_log(s, records);
        }
    }

    /// Frees the log records of `stamp` and the ADR entries its held headers took.
    fn free_log(&mut self, stamp: u32, mut records: Vec<Finished>) {
        for (header, mut entries) in records.drain(..) {
            self.alloc.release(header, &entries);
            entries.clear();
            self.spare.push(entries);
        }
        self.spare_finished.push(records);
        if self.held.is_empty() {
            return;
        }
        let pinned = &mut self.pinned;
        self.held.retain(|h| {
            if h.stamp != stamp {
                return true;
            }
            for &(_, _, ch) in h.lines() {
                pinned[ch] -= 1;
            }
            false
        });
    }
}

impl LoggingEngine for RedoEngine {
    fn clone_box(&self) -> Box<dyn LoggingEngine> {
        Box::new(self.clone())
    }

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
        th.last_entry_durable = 0;
    }

    fn on_store(
        &mut self,
        thread: u16,
        line_addr: u64,
        before: &[u8; 64],
        line: &[u8; 64],
        now: Ps,
        mem: &dyn MemoryView,
        out: &mut Vec<LogWrite>,
    ) {
        self.load_fresh = false;
        let th = self.thread(thread);
        if !th.active || th.ending {
            return;
        }
        th.last_store = now;
        let first = match th.ws_position(line_addr) {
            Some(i) => {
                th.write_set[i].1 = *line;
                false
            }
            None => {
                th.ws_push(line_addr, *line);
                *self.open_lines.entry(line_addr).or_insert(0) += 1;
                true
            }
        };
        if self.kind == LogKind::StageOrUndo {
            if first {
                self.stage_or_log(thread, line_addr, before, now, mem, out);
            }
            return;
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
        self.load_fresh = false;
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
        if self.kind == LogKind::StageOrUndo && !self.threads[thread as usize].logging {
            // The write set fits the ADR buffer: it goes there, and that commits it. Its lines
            // take the entries reserved for them with them (`LogWrite::holds_entry`).
            let th = &mut self.threads[thread as usize];
            debug_assert_eq!(th.reserved, th.write_set.len());
            for &(l, _) in &th.write_set {
                self.pinned[mem.channel_of(l)] -= 1;
            }
            th.reserved = 0;
            self.write_in_place(thread, now, out);
            return CommitAction::WaitForLog;
        }
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
        mem: &dyn MemoryView,
        out: &mut Vec<LogWrite>,
    ) {
        self.load_fresh = false;
        let Some(tag) = self
            .tags
            .get_mut(tag as usize)
            .and_then(|t| t.take())
            .inspect(|_| {
                self.free_tags.push(tag);
            })
        else {
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
                let th = &mut self.threads[thread as usize];
                th.last_entry_durable = th.last_entry_durable.max(now);
                th.records[rec].outstanding -= 1;
                self.alloc.durable(addr);
                self.try_meta(thread, rec, now, mem, out);
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
                    self.reclaim(stamp, now);
                }
            }
        }
    }

    fn absorbs_writeback(&mut self, line_addr: u64) -> bool {
        let hit = self.fault != Fault::StealWritebacks && self.open_lines.contains_key(&line_addr);
        self.c.absorbed += hit as u64;
        hit
    }

    fn adr_pinned(&self) -> &[u32] {
        &self.pinned
    }

    fn crash_flush(&self, image: &mut PmImage) {
        if self.fault != Fault::KeepUncommittedStaged {
            // LAD: ADR drops the staged lines of transactions not committed yet, so their
            // home lines keep what they held before.
            for a in self.applying.values() {
                for (addr, old) in &a.staged_old {
                    image.apply(*addr, &LineData::new(*addr, old).expect("a whole line"));
                }
            }
        }
        if self.fault == Fault::NoAdrFlush {
            return;
        }
        for h in &self.held {
            for (addr, data, _) in h.lines() {
                image.apply(*addr, &LineData::new(*addr, data).expect("a whole line"));
            }
        }
    }

    fn recover(&self, image: &PmImage) -> PmImage {
        let direction = match self.kind {
            LogKind::Redo => record::Direction::Redo,
            LogKind::StageOrUndo => record::Direction::Undo,
        };
        record::recover(
            image,
            self.region,
            self.alloc.layout(),
            direction,
            &self.applied,
            |a| self.alloc.header_slot(a),
        )
    }

    fn error(&self) -> Option<String> {
        self.error.clone()
    }

    fn inject_fault(&mut self, fault: &str) -> Result<(), String> {
        let blom = self.meta == MetaPolicy::BufferInAdr;
        let lad = self.kind == LogKind::StageOrUndo;
        self.fault = match fault {
            "header-before-entries" => Fault::HeaderBeforeEntries,
            "steal-writebacks" => Fault::StealWritebacks,
            "no-adr-flush" if blom => Fault::NoAdrFlush,
            "keep-uncommitted-staged" if lad => Fault::KeepUncommittedStaged,
            "free-before-register" => Fault::FreeBeforeRegister,
            _ => {
                return Err(format!(
                    "controller.logging_fault = \"{fault}\": not a fault of logging engine \"{}\" \
                     (it has header-before-entries, steal-writebacks, free-before-register{}{})",
                    self.name,
                    if blom { ", no-adr-flush" } else { "" },
                    if lad { ", keep-uncommitted-staged" } else { "" },
                ))
            }
        };
        Ok(())
    }

    fn export_stats(&self, s: &mut Stats) {
        s.set("logging.commits", self.c.commits);
        s.set("logging.bank_imbalance_milli", self.c.bank_imbalance_milli);
        s.set(
            "logging.bank_imbalance_samples",
            self.c.bank_imbalance_samples,
        );
        s.set("logging.entry_bank_load", self.c.entry_bank_load);
        if self.kind == LogKind::StageOrUndo {
            s.set("logging.staged_commits", self.c.staged_commits);
            s.set("logging.undo_fallbacks", self.c.undo_fallbacks);
        }
        s.set("logging.entries", self.c.entries);
        s.set("logging.header_writes", self.c.header_writes);
        s.set("logging.headers_buffered", self.c.headers_buffered);
        s.set("logging.adr_overflows", self.c.adr_overflows);
        s.set("logging.inplace_writes", self.c.inplace_writes);
        s.set("logging.absorbed_writebacks", self.c.absorbed);
        // Transactions whose log is still held (in-place updates outstanding, or the register
        // not past them): 0 once a run has drained, or the log leaks and, where it wraps, a
        // stale header leads recovery to reused lines (`pmlab crash` requires 0).
        s.set(
            "logging.logs_unreclaimed",
            (self.applying.len() + self.order.iter().map(|o| o.len()).sum::<usize>()) as u64,
        );
        s.set_histogram("logging.commit_latency_ps", self.c.commit_latency.clone());
        s.set_histogram(
            "logging.commit_latency_from_last_store_ps",
            self.c.commit_latency_from_store.clone(),
        );
        if self.kind == LogKind::Redo {
            s.set_histogram(
                "logging.commit_entry_wait_ps",
                self.c.commit_entry_wait.clone(),
            );
            s.set_histogram(
                "logging.commit_header_tail_ps",
                self.c.commit_header_tail.clone(),
            );
        }
        s.set_histogram(
            "logging.entry_persist_latency_ps",
            self.c.entry_latency.clone(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logging::{blom, lad, lalea, redu};
    use std::cell::Cell;

    /// A controller with 8 banks, 4 KiB pages interleaved over them, and settable loads.
    struct FakeMem {
        pending: [Cell<u32>; 8],
        adr_used: Cell<usize>,
    }

    impl FakeMem {
        fn new() -> FakeMem {
            FakeMem {
                pending: Default::default(),
                adr_used: Cell::new(0),
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
        fn adr_used(&self) -> usize {
            self.adr_used.get()
        }
        fn writes_queued(&self) -> usize {
            self.adr_used.get()
        }
        fn write_queue_capacity(&self) -> usize {
            16
        }
        fn write_queue_low(&self) -> usize {
            4
        }
        fn channel_of(&self, _addr: u64) -> usize {
            0
        }
        fn wpq(&self, _ch: usize) -> (usize, usize) {
            (self.adr_used.get(), 16)
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
            e.on_store(0, HOME + i * 64, &[0; 64], &[0xee; 64], 1, mem, &mut out);
            e.on_store(0, HOME + i * 64, &[0xee; 64], &line_of(i), 2, mem, &mut out);
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

    /// A crash with `durable` written: recovery leaves every one of the `lines` home lines
    /// untouched (the transaction is not replayed).
    fn assert_nothing_recovered(e: &RedoEngine, durable: &[LogWrite], lines: u64) {
        let mut img = image_of(durable);
        e.crash_flush(&mut img);
        let rec = e.recover(&img);
        for i in 0..lines {
            assert_eq!(rec.line(HOME + i * 64), None, "{}: line {i}", e.name());
        }
    }

    fn image_of(writes: &[LogWrite]) -> PmImage {
        let mut img = PmImage::new();
        for w in writes {
            img.apply(w.line_addr, &LineData::new(w.line_addr, &w.data).unwrap());
        }
        img
    }

    /// Thread 0's second transaction after [`transaction`]: one store of `bytes` to `home`,
    /// committed, its log writes durable, its in-place update not. Returns the durable writes.
    fn second_transaction(
        e: &mut RedoEngine,
        mem: &FakeMem,
        home: u64,
        old: [u8; 64],
        bytes: [u8; 64],
    ) -> Vec<LogWrite> {
        let mut out = Vec::new();
        e.on_tx_begin(0, 200);
        e.on_store(0, home, &old, &bytes, 201, mem, &mut out);
        assert_eq!(e.on_tx_end(0, 202, mem, &mut out), CommitAction::WaitForLog);
        let (mut durable, mut inplace) = (Vec::new(), 0);
        let mut now = 203;
        while let Some(w) = (!out.is_empty()).then(|| out.remove(0)) {
            if !w.tracked && w.line_addr == home {
                inplace += 1;
                continue;
            }
            durable.push(w);
            now += 1;
            e.on_write_durable(w.tag, now, mem, &mut out);
        }
        assert_eq!(inplace, 1, "{}: the second transaction committed", e.name());
        durable
    }

    #[test]
    fn a_thread_s_next_transaction_after_an_applied_one_is_replayed() {
        // The first transaction applied (its in-place updates durable), the second committed and
        // cut before its in-place update: recovery replays the second. Its stamp is the one
        // right after the applied mark, which a `<=` in the replay's test took for applied (a
        // committed transaction lost; every earlier test crashed in a thread's first one).
        let mem = FakeMem::new();
        for make in [redu::redu, lalea::lalea, blom::blom] {
            let mut e = make();
            let (mut durable, inplace) = transaction(&mut e, &mem, 2, |_| false);
            assert_eq!(inplace.len(), 2, "{}", e.name());
            let mut out = Vec::new();
            for w in &inplace {
                e.on_write_durable(w.tag, 100, &mem, &mut out);
            }
            durable.extend(inplace.iter().copied());
            let home2 = HOME + 0x10000;
            durable.extend(second_transaction(&mut e, &mem, home2, [0; 64], [0x77; 64]));
            let mut img = image_of(&durable);
            e.crash_flush(&mut img);
            let rec = e.recover(&img);
            assert_eq!(rec.line(home2), Some(&[0x77u8; 64]), "{}", e.name());
        }
    }

    #[test]
    fn committed_transactions_of_one_line_replay_in_commit_order() {
        // Two committed transactions wrote the same line and neither in-place update is
        // durable: the newer bytes win, whatever order the records are found in (recovery
        // gathers them by header slot; without its sort by stamp the older won in some runs).
        let mem = FakeMem::new();
        for make in [redu::redu, lalea::lalea, blom::blom] {
            let mut e = make();
            let (mut durable, inplace) = transaction(&mut e, &mem, 1, |_| false);
            assert_eq!(inplace.len(), 1, "{}", e.name());
            durable.extend(second_transaction(
                &mut e,
                &mem,
                HOME,
                line_of(0),
                [0x77; 64],
            ));
            for _ in 0..32 {
                let mut img = image_of(&durable);
                e.crash_flush(&mut img);
                let rec = e.recover(&img);
                assert_eq!(rec.line(HOME), Some(&[0x77u8; 64]), "{}", e.name());
            }
        }
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
            assert_nothing_recovered(&e, &durable, 9);
        }
    }

    #[test]
    fn a_transaction_whose_last_header_is_lost_is_neither_committed_nor_replayed() {
        // Nine lines: two records (7 + 2 entries). Every entry and the first record's header
        // become durable, the last record's header (REDU's line, both of LALEA's) never does:
        // the transaction must not commit (no in-place write) and recovery must not replay
        // the first record alone, whose header is complete (a commit or a replay one header
        // early once passed most crash points).
        let mem = FakeMem::new();
        for (make, header_lines) in [(redu::redu as fn() -> RedoEngine, 1), (lalea::lalea, 2)] {
            let mut e = make();
            let mut headers = 0;
            let (durable, inplace) = transaction(&mut e, &mem, 9, |w| {
                headers += (w.source == LogSource::Controller) as u32;
                w.source == LogSource::Controller && headers > header_lines
            });
            assert!(
                inplace.is_empty(),
                "{}: committed without its last header",
                e.name()
            );
            assert_eq!(
                durable
                    .iter()
                    .filter(|w| w.source == LogSource::Controller)
                    .count(),
                header_lines as usize,
                "{}: the first record's header is durable",
                e.name()
            );
            assert_nothing_recovered(&e, &durable, 9);
        }
    }

    #[test]
    fn a_crash_with_an_in_place_write_pending_replays_the_log() {
        // Committed, and eight of the nine in-place writes durable: the log must stay valid
        // (not reclaimed, the thread's register not past the transaction) so that recovery
        // redoes the ninth (reclaiming one in-place write early once passed most crash points).
        let mem = FakeMem::new();
        for make in [redu::redu as fn() -> RedoEngine, lalea::lalea, blom::blom] {
            let mut e = make();
            let (durable, inplace) = transaction(&mut e, &mem, 9, |_| false);
            assert_eq!(inplace.len(), 9, "{}: committed", e.name());
            let mut img = image_of(&durable);
            let mut out = Vec::new();
            for (now, w) in (100..).zip(&inplace[..8]) {
                img.apply(w.line_addr, &LineData::new(w.line_addr, &w.data).unwrap());
                e.on_write_durable(w.tag, now, &mem, &mut out);
            }
            assert!(
                out.is_empty(),
                "{}: wrote {} lines meanwhile",
                e.name(),
                out.len()
            );
            e.crash_flush(&mut img);
            let rec = e.recover(&img);
            for i in 0..9 {
                assert_eq!(
                    rec.line(HOME + i * 64),
                    Some(&line_of(i)),
                    "{}: line {i}",
                    e.name()
                );
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
        assert_eq!(s.counter("logging.adr_overflows"), 0);
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
        // 18 records (120 lines) outgrow a 16-line ADR buffer: BLOM keeps 15 headers (one
        // entry stays free for writes) and writes the other 3 to PM
        let mut b = blom::blom();
        transaction(&mut b, &mem, 120, |_| false);
        let mut s = Stats::new();
        b.export_stats(&mut s);
        assert_eq!(
            s.counter("logging.headers_buffered"),
            15,
            "{:?}",
            s.to_json()
        );
        assert_eq!(s.counter("logging.adr_overflows"), 3);
        assert_eq!(s.counter("logging.header_writes"), 3);
        assert_eq!(b.adr_pinned(), &[15]);
    }

    fn old_of(i: u64) -> [u8; 64] {
        [0x80 | i as u8; 64]
    }

    fn counters(e: &RedoEngine) -> Stats {
        let mut s = Stats::new();
        e.export_stats(&mut s);
        s
    }

    #[test]
    fn lad_commits_without_a_log_when_the_write_set_fits_the_adr_buffer() {
        let mem = FakeMem::new();
        // 11 of the 16 entries hold writes and one stays free for writes: 4 for staging
        mem.adr_used.set(11);
        let mut e = lad::lad();
        e.attach(REGION, &mem);
        let mut out = Vec::new();
        e.on_tx_begin(0, 0);
        for i in 0..4 {
            e.on_store(0, HOME + i * 64, &old_of(i), &line_of(i), 1, &mem, &mut out);
        }
        assert!(out.is_empty(), "nothing leaves before TxEnd");
        // Each line's entry is kept from its first store, so no other write takes it.
        assert_eq!(e.adr_pinned(), &[4]);
        assert_eq!(e.on_tx_end(0, 2, &mem, &mut out), CommitAction::WaitForLog);
        // The four lines go from the cache to the ADR domain, nothing to the log region; each
        // takes its entry with it.
        assert_eq!(out.len(), 4);
        assert!(out.iter().all(|w| w.tracked
            && w.holds_entry
            && w.source == LogSource::Core
            && !REGION.contains(w.line_addr)));
        assert_eq!(e.adr_pinned(), &[0]);
        // A crash with two of them in the ADR domain: ADR drops them (not committed yet).
        let mut img = image_of(&out[..2]);
        e.crash_flush(&mut img);
        let rec = e.recover(&img);
        for i in 0..2 {
            assert_eq!(rec.line(HOME + i * 64), Some(&old_of(i)), "line {i}");
        }
        // With `keep-uncommitted-staged` the half-written transaction stays visible: the
        // check above catches the fault (in full runs the write set enters the ADR domain in
        // one instant, so no crash point finds it in part).
        let mut faulty = lad::lad();
        faulty.inject_fault("keep-uncommitted-staged").unwrap();
        faulty.attach(REGION, &mem);
        let mut fout = Vec::new();
        faulty.on_tx_begin(0, 0);
        for i in 0..4 {
            faulty.on_store(
                0,
                HOME + i * 64,
                &old_of(i),
                &line_of(i),
                1,
                &mem,
                &mut fout,
            );
        }
        faulty.on_tx_end(0, 2, &mem, &mut fout);
        let mut img = image_of(&fout[..2]);
        faulty.crash_flush(&mut img);
        assert_eq!(faulty.recover(&img).line(HOME), Some(&line_of(0)));
        for w in out.clone() {
            e.on_write_durable(w.tag, 3, &mem, &mut out);
        }
        let s = counters(&e);
        assert_eq!(s.counter("logging.commits"), 1);
        assert_eq!(s.counter("logging.staged_commits"), 1);
        assert_eq!(s.counter("logging.entries"), 0);
        assert_eq!(s.counter("logging.header_writes"), 0);
        // Committed: the crash image is the recovered image.
        let mut img = image_of(&out);
        e.crash_flush(&mut img);
        let rec = e.recover(&img);
        for i in 0..4 {
            assert_eq!(rec.line(HOME + i * 64), Some(&line_of(i)), "line {i}");
        }
    }

    #[test]
    fn lad_falls_back_to_an_undo_log_when_the_adr_buffer_overflows() {
        for make in [lad::lad, lad::lalea_lad] {
            let mem = FakeMem::new();
            // nine lines of the ADR buffer hold other writes and one stays free for them: six
            // are left for staging
            mem.adr_used.set(9);
            let mut e = make();
            e.attach(REGION, &mem);
            let mut out = Vec::new();
            e.on_tx_begin(0, 0);
            for i in 0..6 {
                e.on_store(0, HOME + i * 64, &old_of(i), &line_of(i), 1, &mem, &mut out);
            }
            assert!(out.is_empty(), "{}: six lines fit", e.name());
            assert_eq!(e.adr_pinned(), &[6]);
            // the seventh overflows: the controller logs the old contents of all seven, and
            // the six entries kept for the staged lines are free again
            e.on_store(0, HOME + 6 * 64, &old_of(6), &line_of(6), 2, &mem, &mut out);
            assert_eq!(out.len(), 7, "{}", e.name());
            assert_eq!(e.adr_pinned(), &[0]);
            assert!(out.iter().all(|w| !w.holds_entry));
            assert!(out
                .iter()
                .all(|w| REGION.contains(w.line_addr) && w.source == LogSource::Controller));
            let olds: std::collections::HashSet<[u8; 64]> = out.iter().map(|w| w.data).collect();
            assert!(
                (0..7).all(|i| olds.contains(&old_of(i))),
                "entries hold old data"
            );
            // later first stores log at once, a second store to a logged line does not
            e.on_store(0, HOME + 7 * 64, &old_of(7), &line_of(7), 3, &mem, &mut out);
            e.on_store(
                0,
                HOME + 7 * 64,
                &line_of(7),
                &line_of(7),
                3,
                &mem,
                &mut out,
            );
            assert_eq!(out.len(), 8, "{}", e.name());
            e.on_tx_end(0, 4, &mem, &mut out);
            // Acknowledge log writes; in-place writes (home lines) wait, the commit with them.
            let (mut log, mut inplace) = (Vec::new(), Vec::new());
            let mut now = 5;
            while let Some(w) = (!out.is_empty()).then(|| out.remove(0)) {
                if REGION.contains(w.line_addr) {
                    log.push(w);
                    now += 1;
                    e.on_write_durable(w.tag, now, &mem, &mut out);
                } else {
                    assert!(w.tracked, "the commit waits for in-place writes");
                    inplace.push(w);
                }
            }
            assert_eq!(inplace.len(), 8, "{}", e.name());
            assert_eq!(counters(&e).counter("logging.commits"), 0);
            // Crash with the log and half the in-place writes durable: rolled back.
            let mut img = image_of(&[&log[..], &inplace[..4]].concat());
            e.crash_flush(&mut img);
            let rec = e.recover(&img);
            for i in 0..8 {
                assert_eq!(
                    rec.line(HOME + i * 64),
                    Some(&old_of(i)),
                    "{}: line {i}",
                    e.name()
                );
            }
            for w in &inplace {
                e.on_write_durable(w.tag, 100, &mem, &mut out);
            }
            let s = counters(&e);
            assert_eq!(s.counter("logging.commits"), 1);
            assert_eq!(s.counter("logging.undo_fallbacks"), 1);
            assert_eq!(s.counter("logging.staged_commits"), 0);
            // Committed: the stale log is ignored, the new contents stay.
            let rec = e.recover(&image_of(&[log, inplace].concat()));
            for i in 0..8 {
                assert_eq!(
                    rec.line(HOME + i * 64),
                    Some(&line_of(i)),
                    "{}: line {i}",
                    e.name()
                );
            }
        }
    }

    #[test]
    fn writebacks_of_uncommitted_lines_are_taken_over_until_the_commit() {
        let mem = FakeMem::new();
        let mut e = redu::redu();
        e.attach(REGION, &mem);
        let mut out = Vec::new();
        e.on_tx_begin(0, 0);
        e.on_store(0, HOME, &[0; 64], &line_of(0), 1, &mem, &mut out);
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
