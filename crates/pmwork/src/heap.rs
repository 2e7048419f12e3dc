//! [`PmHeap`]: a simulated address space whose every access is also a trace event.
//!
//! The heap holds the real bytes of a persistent-memory region (at [`PM_BASE`]) and a DRAM
//! region (at [`DRAM_BASE`]), so data structures built on it are real programs: a load
//! returns what was stored, and emits a `Load` event carrying the call site's PC. Stores carry
//! their values (split per 64-byte line). `clwb`, `clflushopt`, `sfence`, `mfence` and the
//! transaction markers emit events only. [`PmHeap::compute`] accounts non-memory
//! instructions into the next event's `gap`.
//!
//! Events of one thread at a time: [`PmHeap::set_thread`] selects the issuing thread, so a
//! generator interleaves N threads deterministically. Per-thread event counts
//! ([`PmHeap::events`]) are what commit indices are measured in.

use std::panic::Location;

use pmtrace::{Op, TraceEvent, MAX_VALUE_BYTES};

use crate::image::CrashImage;
use crate::memory::Memory;
use crate::pc::PcCache;
use crate::sink::{EventSink, NullSink, BATCH_EVENTS};

/// First byte of the persistent-memory region; the simulator treats every address at or above
/// it as PM.
pub const PM_BASE: u64 = 0x1000_0000_0000;

/// First byte of the DRAM region (volatile data: keys, request buffers, spilled locals).
pub const DRAM_BASE: u64 = 0x0100_0000_0000;

/// Where a remote client's own copy of the PM region lives (volatile memory of the client
/// node): PM address `a` of a client thread is `a - PM_BASE + CLIENT_BASE` in its loads and
/// stores.
pub const CLIENT_BASE: u64 = 0x0800_0000_0000;

/// Cache-line size in bytes.
pub const LINE_BYTES: u64 = 64;

/// Most threads a heap (and a workload) may have.
pub const MAX_THREADS: u16 = 64;

/// True if `addr` lies in the persistent region.
#[inline]
pub fn is_pm(addr: u64) -> bool {
    addr >= PM_BASE
}

/// The address of the line holding `addr`.
#[inline]
pub fn line_of(addr: u64) -> u64 {
    addr & !(LINE_BYTES - 1)
}

/// Calls `f(addr, offset_in_data, len)` for each piece of `[addr, addr+len)` that stays
/// within one line.
#[inline]
fn for_each_line_piece(addr: u64, len: usize, mut f: impl FnMut(u64, usize, usize)) {
    let mut done = 0usize;
    while done < len {
        let a = addr + done as u64;
        let room = (LINE_BYTES - (a & (LINE_BYTES - 1))) as usize;
        let n = room.min(len - done);
        f(a, done, n);
        done += n;
    }
}

/// The simulated PM + DRAM address space, emitting one trace event per access.
pub struct PmHeap {
    mem: Memory,
    pcs: PcCache,
    sink: Box<dyn EventSink>,
    batch: Vec<TraceEvent>,
    thread: u16,
    threads: u16,
    gap: Vec<u32>,
    counts: Vec<u64>,
    error: Option<String>,
    /// Threads in remote-persistence mode (bit `t`).
    remote: u64,
    /// Per thread: PM lines flushed since its last fence, to send at the fence (remote mode).
    remote_dirty: Vec<Vec<u64>>,
    /// The operation being annotated with software hints, while one is (see
    /// [`begin_hint_scope`](Self::begin_hint_scope)).
    scope: Option<HintScope>,
}

/// One operation's events held back until its software hints can be placed among them.
struct HintScope {
    events: Vec<TraceEvent>,
    /// (index in `events`, line, the line's bytes) of each write-back of a PM line.
    flushes: Vec<(usize, u64, [u8; LINE_BYTES as usize])>,
}

impl PmHeap {
    /// An empty (all-zero) heap for `threads` threads (1..=[`MAX_THREADS`]) sending its events
    /// to `sink`.
    ///
    /// # Panics
    /// If `threads` is 0 or above [`MAX_THREADS`] (callers validate user input first).
    pub fn new(threads: u16, sink: Box<dyn EventSink>) -> PmHeap {
        assert!(
            (1..=MAX_THREADS).contains(&threads),
            "thread count {threads} outside 1..={MAX_THREADS}"
        );
        PmHeap {
            mem: Memory::new(),
            pcs: PcCache::new(),
            sink,
            batch: Vec::with_capacity(BATCH_EVENTS),
            thread: 0,
            threads,
            gap: vec![0; threads as usize],
            counts: vec![0; threads as usize],
            error: None,
            remote: 0,
            remote_dirty: vec![Vec::new(); threads as usize],
            scope: None,
        }
    }

    /// A heap whose PM region holds the lines of `image` (DRAM empty, as after a power
    /// failure), discarding its events: the starting point of recovery.
    pub fn from_image(threads: u16, image: &CrashImage) -> PmHeap {
        PmHeap::from_image_into(threads, image, Box::new(NullSink))
    }

    /// [`PmHeap::from_image`] sending the events to `sink` (what recovery persists).
    pub fn from_image_into(threads: u16, image: &CrashImage, sink: Box<dyn EventSink>) -> PmHeap {
        let mut h = PmHeap::new(threads, sink);
        for (addr, line) in image.iter() {
            if is_pm(addr) {
                h.mem.write(addr, line);
            }
        }
        h
    }

    /// Number of threads.
    pub fn threads(&self) -> u16 {
        self.threads
    }

    /// Makes `t` the issuing thread of the following events.
    ///
    /// # Panics
    /// If `t` is not below the thread count.
    pub fn set_thread(&mut self, t: u16) {
        assert!(t < self.threads, "thread {t} of {}", self.threads);
        self.thread = t;
    }

    /// The issuing thread.
    pub fn thread(&self) -> u16 {
        self.thread
    }

    /// Events emitted so far by thread `t`.
    pub fn events(&self, t: u16) -> u64 {
        self.counts[t as usize]
    }

    /// Events emitted so far by every thread.
    pub fn events_per_thread(&self) -> &[u64] {
        &self.counts
    }

    /// Events emitted so far in total.
    pub fn total_events(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// True once the sink has failed (e.g. a streaming consumer hung up): generators stop.
    pub fn stopped(&self) -> bool {
        self.error.is_some()
    }

    /// The PC table: which source site each PC stands for, and any hash collisions.
    pub fn pcs(&self) -> &PcCache {
        &self.pcs
    }

    /// Bytes of simulated memory allocated (grows with the footprint written).
    pub fn resident_bytes(&self) -> usize {
        self.mem.resident_bytes()
    }

    /// Adds `n` non-memory instructions before the current thread's next event.
    #[inline]
    pub fn compute(&mut self, n: u32) {
        let g = &mut self.gap[self.thread as usize];
        *g = g.saturating_add(n);
    }

    /// Puts `threads` in remote-persistence mode: each is a client whose program runs on its
    /// own copy of the PM region (its loads and stores go to [`CLIENT_BASE`]) and persists into
    /// a PM server over RDMA: the lines it flushes (and its non-temporal stores) are sent, with
    /// their bytes at that point, as one `RdmaPwrite` per line at its next fence, which stays
    /// in the trace and closes the `rdma_pwrite` verb (one barrier region at the server).
    /// [`commit_remote`](Self::commit_remote) marks where each operation must be durable.
    pub fn set_remote(&mut self, threads: &[u16]) {
        self.remote = threads.iter().fold(0, |m, &t| m | 1u64 << t);
    }

    /// The end of an operation of the current thread: a remote client waits there until the
    /// server acknowledges its persists (an `mfence`: the transaction's commit, PPO Fig. 8
    /// step 10); local threads emit nothing.
    #[track_caller]
    pub fn commit_remote(&mut self) {
        if self.remote >> self.thread & 1 == 1 {
            self.emit_marker(Op::Mfence, Location::caller());
        }
    }

    #[inline]
    fn push(&mut self, ev: TraceEvent) {
        if self.remote != 0 && self.remote >> ev.thread & 1 == 1 {
            self.push_remote(ev);
            return;
        }
        self.push_raw(ev);
    }

    /// [`push`](Self::push) for a remote client (see [`set_remote`](Self::set_remote)).
    #[inline(never)]
    fn push_remote(&mut self, mut ev: TraceEvent) {
        let t = ev.thread as usize;
        match ev.op {
            Op::Load | Op::Store | Op::NtStore if is_pm(ev.addr) => {
                if ev.op == Op::NtStore {
                    self.note_remote_dirty(t, line_of(ev.addr));
                    ev.op = Op::Store;
                }
                ev.addr = ev.addr - PM_BASE + CLIENT_BASE;
                self.push_raw(ev);
            }
            Op::Clwb | Op::Clflushopt if is_pm(ev.addr) => {
                // The flush joins the verb sent at the next fence; its instructions stay.
                self.note_remote_dirty(t, line_of(ev.addr));
                let g = &mut self.gap[t];
                *g = g.saturating_add(ev.gap).saturating_add(1);
            }
            Op::Sfence | Op::Mfence => {
                let mut lines = std::mem::take(&mut self.remote_dirty[t]);
                let mut bytes = [0u8; LINE_BYTES as usize];
                for &line in &lines {
                    self.mem.read(line, &mut bytes);
                    self.push_raw(TraceEvent::store(
                        Op::RdmaPwrite,
                        ev.thread,
                        ev.pc,
                        line,
                        &bytes,
                        0,
                    ));
                }
                lines.clear();
                self.remote_dirty[t] = lines;
                self.push_raw(ev);
            }
            _ => self.push_raw(ev),
        }
    }

    fn note_remote_dirty(&mut self, t: usize, line: u64) {
        // Repeats are looked for among the latest lines only (a long flush range sends each
        // line once anyway); a line found nowhere there is sent twice, with the same bytes.
        let d = &mut self.remote_dirty[t];
        if !d[d.len().saturating_sub(32)..].contains(&line) {
            d.push(line);
        }
    }

    #[inline]
    fn push_raw(&mut self, ev: TraceEvent) {
        self.counts[self.thread as usize] += 1;
        if let Some(sc) = self.scope.as_mut() {
            if matches!(ev.op, Op::Clwb | Op::Clflushopt) && is_pm(ev.addr) {
                let mut bytes = [0u8; LINE_BYTES as usize];
                self.mem.read(ev.addr, &mut bytes);
                sc.flushes.push((sc.events.len(), ev.addr, bytes));
            }
            sc.events.push(ev);
            return;
        }
        self.emit_batched(ev);
    }

    #[inline]
    fn emit_batched(&mut self, ev: TraceEvent) {
        self.batch.push(ev);
        if self.batch.len() >= BATCH_EVENTS {
            self.flush_batch();
        }
    }

    /// Starts holding the current thread's events back: the operation that follows will be
    /// annotated with Janus-style software hints when it ends
    /// ([`end_hint_scope`](Self::end_hint_scope)). Remote clients are not annotated.
    pub fn begin_hint_scope(&mut self) {
        if self.remote >> self.thread & 1 == 0 {
            self.scope = Some(HintScope {
                events: Vec::new(),
                flushes: Vec::new(),
            });
        }
    }

    /// Ends the operation begun with [`begin_hint_scope`](Self::begin_hint_scope): each
    /// write-back of a PM line the operation modified gets a hint (`Op::Hint`, the line and
    /// its bytes at the write-back), placed as early as the operation could know both. That
    /// is right after the first event of the operation that reveals the line's address (an
    /// access to the line, or a store of a pointer into it), but not before the line's
    /// previous write-back in the operation. Janus's annotations are limited to a function's scope (ISCA'19,
    /// PMWeaver Sec. VI-B3): lines modified in an earlier operation get no hint. Knowing the
    /// data as soon as the address is known is optimistic: Janus hints data only where the
    /// program has computed it.
    pub fn end_hint_scope(&mut self) {
        let Some(sc) = self.scope.take() else {
            return;
        };
        let mut hints: Vec<(usize, TraceEvent)> = Vec::new();
        let mut prev: Vec<(u64, usize)> = Vec::new();
        for &(at, line, bytes) in &sc.flushes {
            let from = prev
                .iter()
                .rev()
                .find(|(l, _)| *l == line)
                .map_or(0, |(_, i)| i + 1);
            prev.push((line, at));
            let window = &sc.events[from..at];
            let modified = window
                .iter()
                .any(|e| matches!(e.op, Op::Store | Op::NtStore) && line_of(e.addr) == line);
            if !modified {
                continue;
            }
            let reveal = window
                .iter()
                .position(|e| {
                    (e.op.has_address() && line_of(e.addr) == line)
                        || (e.op.writes_memory()
                            && e.value_bytes().chunks_exact(8).any(|w| {
                                line_of(u64::from_le_bytes(w.try_into().unwrap())) == line
                            }))
                })
                // Right after that event (the program has the address then), and no later
                // than the write-back itself.
                .map_or(at, |i| (from + i + 1).min(at));
            let flush = &sc.events[at];
            hints.push((
                reveal,
                TraceEvent::store(Op::Hint, flush.thread, flush.pc + 2, line, &bytes, 0),
            ));
        }
        hints.sort_by_key(|h| h.0);
        self.counts[self.thread as usize] += hints.len() as u64;
        let mut next = hints.into_iter().peekable();
        for (i, ev) in sc.events.into_iter().enumerate() {
            while next.peek().is_some_and(|h| h.0 == i) {
                let (_, h) = next.next().expect("peeked");
                self.emit_batched(h);
            }
            self.emit_batched(ev);
        }
    }

    #[cold]
    fn flush_batch(&mut self) {
        if self.error.is_some() {
            self.batch.clear();
            return;
        }
        if let Err(e) = self.sink.consume(&mut self.batch) {
            self.error = Some(e);
        }
        self.batch.clear();
    }

    #[inline]
    fn take_gap(&mut self) -> u32 {
        std::mem::take(&mut self.gap[self.thread as usize])
    }

    #[inline]
    fn emit_access(&mut self, op: Op, loc: &'static Location<'static>, addr: u64, size: u16) {
        let pc = self.pcs.pc(loc);
        let gap = self.take_gap();
        self.push(TraceEvent::access(op, self.thread, pc, addr, size, gap));
    }

    #[inline]
    fn emit_store(&mut self, op: Op, loc: &'static Location<'static>, addr: u64, value: &[u8]) {
        debug_assert!(value.len() <= MAX_VALUE_BYTES);
        let pc = self.pcs.pc(loc);
        let gap = self.take_gap();
        self.push(TraceEvent::store(op, self.thread, pc, addr, value, gap));
    }

    #[inline]
    fn emit_marker(&mut self, op: Op, loc: &'static Location<'static>) {
        let pc = self.pcs.pc(loc);
        let gap = self.take_gap();
        self.push(TraceEvent::marker(op, self.thread, pc, gap));
    }

    /// Emits `op` (a flush at the line of `addr`, or a fence/marker) for instruction `k` of a
    /// compound helper called at `loc`: its PC is the site's PC plus `4 * k`, so the helper's
    /// distinct instructions have distinct PCs.
    pub(crate) fn emit_at(&mut self, op: Op, loc: &'static Location<'static>, addr: u64, k: u64) {
        let pc = self.pcs.pc(loc) + 4 * k;
        let gap = self.take_gap();
        let ev = if op.has_address() {
            TraceEvent::access(op, self.thread, pc, line_of(addr), LINE_BYTES as u16, gap)
        } else {
            TraceEvent::marker(op, self.thread, pc, gap)
        };
        self.push(ev);
    }

    /// Loads `buf.len()` bytes at `addr` (one `Load` event per line touched).
    #[track_caller]
    pub fn load(&mut self, addr: u64, buf: &mut [u8]) {
        let loc = Location::caller();
        for_each_line_piece(addr, buf.len(), |a, off, n| {
            self.mem.read(a, &mut buf[off..off + n]);
            self.emit_access(Op::Load, loc, a, n as u16);
        });
    }

    /// Loads the little-endian `u64` at `addr`.
    #[track_caller]
    #[inline]
    pub fn load_u64(&mut self, addr: u64) -> u64 {
        let loc = Location::caller();
        if addr & (LINE_BYTES - 1) <= LINE_BYTES - 8 {
            let v = self.mem.read_u64(addr);
            self.emit_access(Op::Load, loc, addr, 8);
            v
        } else {
            let mut b = [0u8; 8];
            for_each_line_piece(addr, 8, |a, off, n| {
                self.mem.read(a, &mut b[off..off + n]);
                self.emit_access(Op::Load, loc, a, n as u16);
            });
            u64::from_le_bytes(b)
        }
    }

    fn store_op(&mut self, op: Op, loc: &'static Location<'static>, addr: u64, data: &[u8]) {
        for_each_line_piece(addr, data.len(), |a, off, n| {
            let piece = &data[off..off + n];
            self.mem.write(a, piece);
            self.emit_store(op, loc, a, piece);
        });
    }

    /// Stores `data` at `addr` (one `Store` event per line touched, carrying the bytes).
    #[track_caller]
    pub fn store(&mut self, addr: u64, data: &[u8]) {
        self.store_op(Op::Store, Location::caller(), addr, data);
    }

    /// Stores `v` little-endian at `addr`.
    #[track_caller]
    #[inline]
    pub fn store_u64(&mut self, addr: u64, v: u64) {
        let loc = Location::caller();
        if addr & (LINE_BYTES - 1) <= LINE_BYTES - 8 {
            self.mem.write_u64(addr, v);
            self.emit_store(Op::Store, loc, addr, &v.to_le_bytes());
        } else {
            self.store_op(Op::Store, loc, addr, &v.to_le_bytes());
        }
    }

    /// Non-temporal store of `data` at `addr` (bypasses the caches).
    #[track_caller]
    pub fn ntstore(&mut self, addr: u64, data: &[u8]) {
        self.store_op(Op::NtStore, Location::caller(), addr, data);
    }

    /// Non-temporal store of `v` at `addr`.
    #[track_caller]
    pub fn ntstore_u64(&mut self, addr: u64, v: u64) {
        self.store_op(Op::NtStore, Location::caller(), addr, &v.to_le_bytes());
    }

    /// Writes the line holding `addr` back toward memory, keeping it cached.
    #[track_caller]
    #[inline]
    pub fn clwb(&mut self, addr: u64) {
        self.emit_access(
            Op::Clwb,
            Location::caller(),
            line_of(addr),
            LINE_BYTES as u16,
        );
    }

    /// Writes the line holding `addr` back toward memory and invalidates it.
    #[track_caller]
    pub fn clflushopt(&mut self, addr: u64) {
        self.emit_access(
            Op::Clflushopt,
            Location::caller(),
            line_of(addr),
            LINE_BYTES as u16,
        );
    }

    /// Store fence: earlier write-backs complete before later stores.
    #[track_caller]
    #[inline]
    pub fn sfence(&mut self) {
        self.emit_marker(Op::Sfence, Location::caller());
    }

    /// Full fence.
    #[track_caller]
    pub fn mfence(&mut self) {
        self.emit_marker(Op::Mfence, Location::caller());
    }

    /// A happens-before edge: the current thread goes on only once thread `source` has retired
    /// `count` events (e.g. [`events`](Self::events) of it when it released a lock). Emits an
    /// `Op::Await`; nothing when `count` is 0.
    #[track_caller]
    pub fn await_thread(&mut self, source: u16, count: u64) {
        if count == 0 {
            return;
        }
        let pc = self.pcs.pc(Location::caller());
        let gap = self.take_gap();
        self.push(TraceEvent::await_events(
            self.thread,
            pc,
            source,
            count,
            gap,
        ));
    }

    /// Hardware-transaction begin marker (`Op::TxBegin`).
    #[track_caller]
    pub fn tx_begin_marker(&mut self) {
        self.emit_marker(Op::TxBegin, Location::caller());
    }

    /// Hardware-transaction end marker (`Op::TxEnd`).
    #[track_caller]
    pub fn tx_end_marker(&mut self) {
        self.emit_marker(Op::TxEnd, Location::caller());
    }

    /// `clwb` of every line of `[addr, addr+len)`, no fence.
    #[track_caller]
    pub fn flush_range(&mut self, addr: u64, len: u64) {
        let loc = Location::caller();
        if len == 0 {
            return;
        }
        let mut l = line_of(addr);
        while l < addr + len {
            self.emit_access(Op::Clwb, loc, l, LINE_BYTES as u16);
            l += LINE_BYTES;
        }
    }

    /// Maximal runs `[lo, hi)` within `[from, to)` that were ever written (everything else
    /// reads as zero). For checks that scan huge, mostly empty tables; emits nothing.
    pub fn written_ranges(&self, from: u64, to: u64) -> Vec<(u64, u64)> {
        self.mem.written_ranges(from, to)
    }

    /// The `u64` at `addr` without emitting an event (checks and reports, not programs).
    pub fn peek_u64(&mut self, addr: u64) -> u64 {
        self.mem.read_u64(addr)
    }

    /// The bytes at `addr` without emitting an event.
    pub fn peek(&mut self, addr: u64, buf: &mut [u8]) {
        self.mem.read(addr, buf);
    }

    /// Every PM line the heap holds, as if all of it had persisted (tests, debugging).
    pub fn pm_snapshot(&mut self) -> CrashImage {
        let mut img = CrashImage::new();
        for page in self.mem.page_addrs_from(PM_BASE) {
            let mut buf = [0u8; crate::memory::PAGE_BYTES];
            self.mem.read(page, &mut buf);
            for (i, chunk) in buf.chunks_exact(LINE_BYTES as usize).enumerate() {
                if chunk.iter().any(|&b| b != 0) {
                    let mut l = [0u8; 64];
                    l.copy_from_slice(chunk);
                    img.set_line(page + i as u64 * LINE_BYTES, l);
                }
            }
        }
        img
    }

    /// Sends the last partial batch, finishes the sink and returns it (or the first sink
    /// error).
    pub fn finish(mut self) -> Result<Box<dyn EventSink>, String> {
        if !self.batch.is_empty() {
            self.flush_batch();
        }
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.sink.finish()?;
        Ok(self.sink)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::VecSink;

    fn events(h: PmHeap) -> Vec<TraceEvent> {
        let s = h
            .finish()
            .unwrap()
            .into_any()
            .downcast::<VecSink>()
            .unwrap();
        s.events
    }

    #[test]
    fn hint_scope_announces_each_modified_line_when_the_operation_reveals_it() {
        let mut h = PmHeap::new(1, Box::new(VecSink::default()));
        let (node, other) = (PM_BASE + 0x1000, PM_BASE + 0x2000);
        h.store_u64(other, 5);
        h.begin_hint_scope();
        h.store_u64(DRAM_BASE, node); // the node's address appears: a pointer store
        h.store_u64(node, 7);
        h.clwb(node);
        h.clwb(other); // modified before the operation: out of the hints' scope
        h.sfence();
        h.store_u64(node + 8, 9);
        h.clwb(node);
        h.end_hint_scope();
        assert_eq!(h.events(0), 10, "eight events and two hints");
        let ev = events(h);
        let ops: Vec<Op> = ev.iter().map(|e| e.op).collect();
        use Op::*;
        // Each hint right after the event that reveals the line's address: the pointer store,
        // then (after the first write-back) the next store to the line.
        assert_eq!(
            ops,
            [Store, Store, Hint, Store, Clwb, Clwb, Sfence, Store, Hint, Clwb]
        );
        let mut first = [0u8; 64];
        first[..8].copy_from_slice(&7u64.to_le_bytes());
        assert_eq!((ev[2].addr, ev[2].value_bytes()), (node, &first[..]));
        let mut second = first;
        second[8..16].copy_from_slice(&9u64.to_le_bytes());
        assert_eq!((ev[8].addr, ev[8].value_bytes()), (node, &second[..]));
    }

    #[test]
    fn a_remote_client_computes_on_its_copy_and_persists_over_rdma() {
        let mut h = PmHeap::new(2, Box::<VecSink>::default());
        h.set_remote(&[1]);
        h.set_thread(1);
        h.store_u64(PM_BASE + 8, 42);
        h.clwb(PM_BASE + 8);
        h.compute(3);
        h.store_u64(PM_BASE + 72, 7);
        h.clwb(PM_BASE + 72);
        h.clwb(PM_BASE + 8);
        h.sfence();
        assert_eq!(h.load_u64(PM_BASE + 8), 42);
        h.commit_remote();
        h.set_thread(0);
        h.commit_remote();
        let ev = events(h);
        let ops: Vec<Op> = ev.iter().map(|e| e.op).collect();
        use Op::*;
        assert_eq!(
            ops,
            [Store, Store, RdmaPwrite, RdmaPwrite, Sfence, Load, Mfence]
        );
        // Loads and stores go to the client's copy; the flushed lines, with their bytes at the
        // fence, go to the server's PM; the flushes' instructions stay in the gaps.
        assert_eq!(ev[0].addr, CLIENT_BASE + 8);
        assert_eq!(ev[1].addr, CLIENT_BASE + 72);
        assert_eq!(ev[1].gap, 3 + 1);
        assert_eq!((ev[2].addr, ev[3].addr), (PM_BASE, PM_BASE + 64));
        assert_eq!(&ev[2].value_bytes()[8..16], &42u64.to_le_bytes());
        assert_eq!(&ev[3].value_bytes()[8..16], &7u64.to_le_bytes());
        assert_eq!(ev[4].gap, 2);
        assert_eq!(ev[5].addr, CLIENT_BASE + 8);
        for e in &ev {
            e.check(2).unwrap();
        }
    }

    #[test]
    fn loads_return_stores_and_every_access_is_an_event() {
        let mut h = PmHeap::new(2, Box::<VecSink>::default());
        h.store_u64(PM_BASE + 8, 42);
        h.compute(5);
        assert_eq!(h.load_u64(PM_BASE + 8), 42);
        h.set_thread(1);
        h.clwb(PM_BASE + 9);
        h.sfence();
        assert_eq!(h.events(0), 2);
        assert_eq!(h.events(1), 2);
        let ev = events(h);
        assert_eq!(ev.len(), 4);
        assert_eq!(ev[0].op, Op::Store);
        assert_eq!(ev[0].value_bytes(), &42u64.to_le_bytes());
        assert_eq!(ev[1].op, Op::Load);
        assert_eq!(ev[1].gap, 5);
        assert_eq!((ev[2].op, ev[2].addr, ev[2].thread), (Op::Clwb, PM_BASE, 1));
        assert_eq!(ev[3].op, Op::Sfence);
        for e in &ev {
            e.check(2).unwrap();
        }
    }

    #[test]
    fn call_sites_have_stable_distinct_pcs() {
        let mut h = PmHeap::new(1, Box::<VecSink>::default());
        for i in 0..3 {
            h.store_u64(PM_BASE + i * 8, i);
        }
        h.store_u64(PM_BASE, 9);
        let ev = events(h);
        assert_eq!(ev[0].pc, ev[1].pc);
        assert_eq!(ev[1].pc, ev[2].pc);
        assert_ne!(ev[2].pc, ev[3].pc);
    }

    #[test]
    fn large_and_unaligned_stores_split_per_line() {
        let mut h = PmHeap::new(1, Box::<VecSink>::default());
        let data: Vec<u8> = (0..150).map(|i| i as u8).collect();
        h.store(PM_BASE + 60, &data);
        let mut back = vec![0u8; 150];
        h.load(PM_BASE + 60, &mut back);
        assert_eq!(back, data);
        h.store_u64(PM_BASE + 124, u64::MAX); // crosses a line
        assert_eq!(h.load_u64(PM_BASE + 124), u64::MAX);
        let ev = events(h);
        let stores: Vec<_> = ev.iter().filter(|e| e.op == Op::Store).collect();
        assert_eq!(
            stores.iter().map(|e| e.size).collect::<Vec<_>>(),
            vec![4, 64, 64, 18, 4, 4]
        );
        assert!(stores
            .iter()
            .all(|e| e.addr / 64 == (e.addr + e.size as u64 - 1) / 64));
    }
}
