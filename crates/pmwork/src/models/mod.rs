//! Programming models: how a program makes its PM updates crash-consistent.
//!
//! A data structure is written once against [`Tx`] (`read`, `add`, `write`, `alloc`, `free`)
//! and runs under any [`Model`]:
//!
//! | model | `add` | `write` | commit | recovery |
//! |---|---|---|---|---|
//! | [`Model::Barrier`] | nothing | plain store | none: the program places [`Tx::persist`] barriers itself | workload-specific |
//! | [`Model::Undo`] | PMDK-style undo entry (checksummed), persisted before the data changes | plain store | flush modified ranges, fence, retire log (generation bump), fence | roll back valid entries of the current generation |
//! | [`Model::UndoLl`] | hand-rolled undo entry, persisted, then the entry count persisted | plain store | flush, fence, count = 0, fence | roll back `count` entries |
//! | [`Model::Redo`] | nothing | appended to the redo log (non-temporal), read-your-writes | fence log, persist commit record, apply in place, fence, retire | replay a valid commit record |
//! | [`Model::HwTx`] | nothing | plain store | `TxEnd` marker (after `TxBegin`) | none in software: the hardware logging scheme's job |
//!
//! Files: [`barrier`] (persist barriers, setup), [`undo`] (both undo flavours), [`redo`],
//! [`hwtx`]. The persistent allocator that all of them use is [`crate::alloc`].
//!
//! Recovery for [`Model::HwTx`] is deliberately absent: a hardware-logging scheme (REDU, LALEA,
//! BLOM in the simulator) owns both logging and recovery, so an oracle over an
//! `HwTx` trace must be given the image *after* the scheme's recovery.

pub mod barrier;
pub mod hwtx;
pub mod redo;
pub mod undo;

use std::fmt;
use std::panic::Location;

use crate::heap::{line_of, PmHeap, LINE_BYTES};
use crate::image::CrashImage;
use crate::layout;
use crate::memory::IntMap;
use crate::sink::EventSink;

/// A crash-consistency programming model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Model {
    /// Low-level persist barriers (`clwb` + `sfence`) placed by the program.
    Barrier,
    /// PMDK-style undo-log transactions (checksummed entries, generation-retired log).
    Undo,
    /// Hand-rolled undo logging from low-level primitives (entry, then count, persisted).
    UndoLl,
    /// Redo-log transactions (Mnemosyne-style word log, commit record, in-place apply).
    Redo,
    /// Hardware transactions: `TxBegin`/`TxEnd` around plain stores, no software log.
    HwTx,
}

impl Model {
    /// Every model.
    pub const ALL: [Model; 5] = [
        Model::Barrier,
        Model::Undo,
        Model::UndoLl,
        Model::Redo,
        Model::HwTx,
    ];

    /// Short name (`barrier`, `undo`, `undo-ll`, `redo`, `hwtx`).
    pub fn name(self) -> &'static str {
        match self {
            Model::Barrier => "barrier",
            Model::Undo => "undo",
            Model::UndoLl => "undo-ll",
            Model::Redo => "redo",
            Model::HwTx => "hwtx",
        }
    }

    /// True for the models whose operations are bracketed by `begin`/`commit` transactions
    /// with a software log.
    pub fn has_software_log(self) -> bool {
        matches!(self, Model::Undo | Model::UndoLl | Model::Redo)
    }
}

impl fmt::Display for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A deliberate bug, for showing that crash tests catch it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Undo models: omit the `sfence` between writing an undo entry and making it valid or
    /// modifying the data it protects, so the data (or the entry count) may persist before
    /// the entry does.
    SkipLogFence,
}

/// Per-thread transaction state (volatile: rebuilt from PM by recovery).
#[derive(Default)]
pub(crate) struct ThreadTx {
    /// Inside `begin`..`commit`.
    pub active: bool,
    /// Inside setup (plain stores, tracked for the final flush).
    pub setup: bool,
    /// Undo: next free byte offset in the log area; redo: entries appended.
    pub log_tail: u64,
    /// Undo (PMDK flavour) / redo: current log generation.
    pub gen: u64,
    /// Undo flavours: number of valid entries (the hand-rolled flavour persists it).
    pub entries: u64,
    /// Undo: ranges snapshotted or freshly allocated in this transaction.
    pub covered: RangeSet,
    /// Ranges to flush at commit.
    pub flush: Vec<(u64, u64)>,
    /// Redo: (address, value) in program order.
    pub redo: Vec<(u64, u64)>,
    /// Event count at which the last committed transaction became durable, when that comes
    /// before the commit's last event (redo).
    pub durable_point: Option<u64>,
    /// Redo: word address → index of its latest entry.
    pub redo_index: IntMap<u64, usize>,
    /// Frees deferred to commit (payload pointers).
    pub frees: Vec<u64>,
    /// Setup: lines written.
    pub dirty: Vec<u64>,
}

/// A heap plus the programming model's per-thread transaction state: what data structures
/// are written against.
pub struct Tx {
    heap: PmHeap,
    model: Model,
    fault: Option<Fault>,
    pub(crate) st: Vec<ThreadTx>,
    /// Reused buffers (undo snapshots, commit line lists).
    pub(crate) scratch: Vec<u8>,
    pub(crate) lines: Vec<u64>,
}

impl Tx {
    /// A model context over a new heap of `threads` threads emitting into `sink`.
    pub fn new(model: Model, threads: u16, sink: Box<dyn EventSink>) -> Tx {
        Tx::over(model, PmHeap::new(threads, sink))
    }

    /// A model context over an existing heap.
    pub fn over(model: Model, heap: PmHeap) -> Tx {
        let st = (0..heap.threads()).map(|_| ThreadTx::default()).collect();
        Tx {
            heap,
            model,
            fault: None,
            st,
            scratch: Vec::new(),
            lines: Vec::new(),
        }
    }

    /// A context over the PM lines of a crash image (DRAM empty, events discarded), ready for
    /// [`Tx::recover_thread`].
    pub fn from_image(model: Model, threads: u16, image: &CrashImage) -> Tx {
        Tx::over(model, PmHeap::from_image(threads, image))
    }

    /// The same context with a deliberate bug switched on.
    pub fn with_fault(mut self, fault: Fault) -> Tx {
        self.fault = Some(fault);
        self
    }

    /// The fault switched on, if any.
    pub fn fault(&self) -> Option<Fault> {
        self.fault
    }

    /// The programming model.
    pub fn model(&self) -> Model {
        self.model
    }

    /// The heap underneath (for direct loads, stores, fences, `compute`).
    #[inline]
    pub fn heap(&mut self) -> &mut PmHeap {
        &mut self.heap
    }

    /// The heap underneath, read-only.
    pub fn heap_ref(&self) -> &PmHeap {
        &self.heap
    }

    /// Selects the issuing thread.
    pub fn set_thread(&mut self, t: u16) {
        self.heap.set_thread(t);
    }

    /// The issuing thread.
    #[inline]
    pub fn thread(&self) -> u16 {
        self.heap.thread()
    }

    #[inline]
    pub(crate) fn ts(&mut self) -> &mut ThreadTx {
        let t = self.heap.thread() as usize;
        &mut self.st[t]
    }

    /// Adds `n` non-memory instructions before the next event.
    #[inline]
    pub fn compute(&mut self, n: u32) {
        self.heap.compute(n);
    }

    /// Finishes the heap's sink and returns it.
    pub fn finish(self) -> Result<Box<dyn EventSink>, String> {
        self.heap.finish()
    }

    /// Starts an operation's transaction on the current thread (a `TxBegin` marker under
    /// [`Model::HwTx`]; nothing is emitted by the software-log models until the first write).
    #[track_caller]
    pub fn begin(&mut self) {
        let ts = self.ts();
        assert!(!ts.active, "nested transactions are not supported");
        ts.active = true;
        if self.model == Model::HwTx {
            self.hw_begin();
        }
    }

    /// The event count from which thread `t`'s last committed transaction survives a crash,
    /// when that is earlier than its last event (redo: the commit record's fence); taken once.
    pub fn take_durable_point(&mut self, t: u16) -> Option<u64> {
        self.st[t as usize].durable_point.take()
    }

    /// Commits the current thread's transaction: the operation is durable once this returns
    /// (its last event is the commit fence, or `TxEnd`).
    pub fn commit(&mut self) {
        assert!(self.ts().active, "commit without begin");
        self.run_deferred_frees();
        match self.model {
            Model::Barrier => {}
            Model::Undo | Model::UndoLl => self.undo_commit(),
            Model::Redo => self.redo_commit(),
            Model::HwTx => self.hw_commit(),
        }
        let ts = self.ts();
        ts.active = false;
        ts.covered.clear();
        ts.flush.clear();
    }

    /// Reads the `u64` at `addr` (seeing this transaction's own writes under redo).
    #[track_caller]
    #[inline]
    pub fn read(&mut self, addr: u64) -> u64 {
        if self.model == Model::Redo {
            let t = self.heap.thread() as usize;
            if let Some(&i) = self.st[t].redo_index.get(&addr) {
                return self.redo_read_hit(i);
            }
        }
        self.heap.load_u64(addr)
    }

    /// Reads `buf.len()` bytes at `addr` (8-byte aligned, length a multiple of 8).
    #[track_caller]
    pub fn read_bytes(&mut self, addr: u64, buf: &mut [u8]) {
        debug_assert!(addr.is_multiple_of(8) && buf.len().is_multiple_of(8));
        if self.model == Model::Redo {
            let t = self.heap.thread() as usize;
            let idx = &self.st[t].redo_index;
            if !idx.is_empty()
                && (0..buf.len() as u64 / 8).any(|i| idx.contains_key(&(addr + i * 8)))
            {
                for (i, chunk) in buf.chunks_exact_mut(8).enumerate() {
                    let v = self.read(addr + i as u64 * 8);
                    chunk.copy_from_slice(&v.to_le_bytes());
                }
                return;
            }
        }
        self.heap.load(addr, buf);
    }

    /// Declares that `[addr, addr+len)` is about to be modified: under the undo models its
    /// old contents are logged and persisted first (PMDK's `TX_ADD_RANGE`); a no-op otherwise.
    #[track_caller]
    pub fn add(&mut self, addr: u64, len: u64) {
        if matches!(self.model, Model::Undo | Model::UndoLl) {
            let ts = self.ts();
            if ts.setup {
                return;
            }
            assert!(ts.active, "tx.add outside a transaction");
            if ts.covered.contains(addr, len) {
                return;
            }
            self.undo_add(addr, len);
        }
    }

    /// Writes `v` at `addr` under the model's rules.
    ///
    /// # Panics
    /// Under the undo models, if the word was neither `add`ed nor freshly allocated in this
    /// transaction: that is a missing `TX_ADD`, a bug in the data structure.
    #[track_caller]
    #[inline]
    pub fn write(&mut self, addr: u64, v: u64) {
        let t = self.heap.thread() as usize;
        if self.st[t].setup {
            self.heap.store_u64(addr, v);
            self.st[t].dirty.push(line_of(addr));
            return;
        }
        match self.model {
            Model::Undo | Model::UndoLl => {
                self.check_covered(addr, 8);
                self.heap.store_u64(addr, v);
            }
            Model::Redo => self.redo_write(addr, v),
            Model::Barrier | Model::HwTx => self.heap.store_u64(addr, v),
        }
    }

    /// Writes `data` (8-byte aligned, length a multiple of 8) at `addr` under the model's
    /// rules (one store per line; one log entry per word under redo).
    #[track_caller]
    pub fn write_bytes(&mut self, addr: u64, data: &[u8]) {
        debug_assert!(addr.is_multiple_of(8) && data.len().is_multiple_of(8));
        let t = self.heap.thread() as usize;
        if self.st[t].setup {
            self.heap.store(addr, data);
            let mut l = line_of(addr);
            while l < addr + data.len() as u64 {
                self.st[t].dirty.push(l);
                l += LINE_BYTES;
            }
            return;
        }
        match self.model {
            Model::Undo | Model::UndoLl => {
                self.check_covered(addr, data.len() as u64);
                self.heap.store(addr, data);
            }
            Model::Redo => {
                for (i, chunk) in data.chunks_exact(8).enumerate() {
                    let v = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
                    self.redo_write(addr + i as u64 * 8, v);
                }
            }
            Model::Barrier | Model::HwTx => self.heap.store(addr, data),
        }
    }

    #[track_caller]
    fn check_covered(&mut self, addr: u64, len: u64) {
        let t = self.heap.thread() as usize;
        let ts = &self.st[t];
        if ts.active && !ts.covered.contains(addr, len) {
            panic!(
                "undo model: write of {len} bytes at {addr:#x} (thread {t}) was not tx.add'ed \
                 nor allocated in this transaction (missing TX_ADD) at {}",
                Location::caller()
            );
        }
    }

    /// Persist barrier: `clwb` every line of `[addr, addr+len)`, then `sfence`.
    #[track_caller]
    pub fn persist(&mut self, addr: u64, len: u64) {
        self.heap.persist_barrier(addr, len);
    }

    /// Starts thread `t`'s setup: until [`Tx::end_setup`], writes are plain stores whose
    /// lines are flushed at the end (no transaction, no log).
    pub fn begin_setup(&mut self, t: u16) {
        self.set_thread(t);
        let ts = self.ts();
        ts.setup = true;
        ts.dirty.clear();
        self.init_allocator();
    }

    /// Ends thread `t`'s setup: initialises its log, persists everything written, then sets
    /// and persists the root magic (the "pool is valid" flag, written last).
    pub fn end_setup(&mut self) {
        self.init_log();
        let mut lines = std::mem::take(&mut self.ts().dirty);
        lines.sort_unstable();
        lines.dedup();
        for &l in &lines {
            self.heap.clwb(l);
        }
        self.heap.sfence();
        let t = self.thread();
        self.heap
            .store_u64(layout::root_slot(t), layout::ROOT_MAGIC);
        self.heap.clwb(layout::root_slot(t));
        self.heap.sfence();
        self.ts().setup = false;
    }

    /// True while thread `t`'s setup runs.
    pub fn in_setup(&self) -> bool {
        self.st[self.heap.thread() as usize].setup
    }

    fn init_log(&mut self) {
        match self.model {
            Model::Undo | Model::UndoLl => self.undo_init(),
            Model::Redo => self.redo_init(),
            Model::Barrier | Model::HwTx => {}
        }
    }

    /// Recovers thread `t` after a crash: if its root magic is set, runs the model's log
    /// recovery (undo rollback, redo replay). Returns whether the thread's state was
    /// initialised at all. [`Model::HwTx`] and [`Model::Barrier`] have no software log.
    pub fn recover_thread(&mut self, t: u16) -> Result<bool, String> {
        self.set_thread(t);
        if self.heap.load_u64(layout::root_slot(t)) != layout::ROOT_MAGIC {
            return Ok(false);
        }
        *self.ts() = ThreadTx::default();
        match self.model {
            Model::Undo | Model::UndoLl => self.undo_recover()?,
            Model::Redo => self.redo_recover()?,
            Model::Barrier | Model::HwTx => {}
        }
        Ok(true)
    }

    /// Recovers every thread of a crash image (PMDK's pool open after a crash): a context
    /// over the image with each initialised thread's log rolled back or replayed. Returns it
    /// and, per thread, whether the thread's state had been initialised.
    pub fn recover(
        model: Model,
        threads: u16,
        image: &CrashImage,
    ) -> Result<(Tx, Vec<bool>), String> {
        let mut tx = Tx::from_image(model, threads, image);
        let init = (0..threads)
            .map(|t| tx.recover_thread(t))
            .collect::<Result<Vec<bool>, String>>()?;
        Ok((tx, init))
    }

    /// Marks `[addr, addr+len)` as freshly allocated in this transaction: writable without a
    /// snapshot, flushed at commit.
    pub(crate) fn mark_fresh(&mut self, addr: u64, len: u64) {
        let ts = self.ts();
        if ts.setup || !ts.active {
            return;
        }
        ts.covered.insert(addr, addr + len);
        ts.flush.push((addr, addr + len));
    }
}

/// A set of disjoint half-open address ranges, merged on insert.
#[derive(Default, Debug)]
pub(crate) struct RangeSet {
    /// start → end, disjoint and non-adjacent.
    map: std::collections::BTreeMap<u64, u64>,
}

impl RangeSet {
    /// True if `[addr, addr+len)` lies inside the set.
    #[inline]
    pub fn contains(&self, addr: u64, len: u64) -> bool {
        self.map
            .range(..=addr)
            .next_back()
            .is_some_and(|(_, &e)| addr + len <= e)
    }

    /// Adds `[start, end)`, merging with overlapping or adjacent ranges.
    pub fn insert(&mut self, mut start: u64, mut end: u64) {
        if let Some((&s, &e)) = self.map.range(..=start).next_back() {
            if e >= start {
                start = s;
                end = end.max(e);
                self.map.remove(&s);
            }
        }
        while let Some((&s, &e)) = self.map.range(start..).next() {
            if s > end {
                break;
            }
            end = end.max(e);
            self.map.remove(&s);
        }
        self.map.insert(start, end);
    }

    /// Empties the set.
    pub fn clear(&mut self) {
        self.map.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_set_merges_and_answers_containment() {
        let mut r = RangeSet::default();
        r.insert(100, 200);
        r.insert(300, 400);
        assert!(r.contains(100, 100) && !r.contains(150, 100) && !r.contains(90, 20));
        r.insert(200, 300); // adjacent on both sides: one range
        assert!(r.contains(100, 300));
        r.insert(50, 120);
        assert!(r.contains(50, 350) && !r.contains(40, 20));
        assert_eq!(r.map.len(), 1);
    }
}
