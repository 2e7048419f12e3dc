//! Hardware logging engines: transaction-aware schemes in the memory controller that log the
//! stores of `TxBegin`/`TxEnd` transactions, decide when a transaction is committed, update
//! data in place and recover a crash image (REDU, LAD, LALEA, BLOM and their combinations).
//!
//! The full system calls an engine from fixed hooks of the data path:
//!
//! | hook | when |
//! |---|---|
//! | [`on_tx_begin`](LoggingEngine::on_tx_begin) / [`on_tx_end`](LoggingEngine::on_tx_end) | a thread retires `TxBegin` / `TxEnd` |
//! | [`on_store`](LoggingEngine::on_store) | a PM store retires into the L1 (with the whole line after it) |
//! | [`on_write_durable`](LoggingEngine::on_write_durable) | a write the engine issued reached the persistence domain |
//! | [`absorbs_writeback`](LoggingEngine::absorbs_writeback) | a cache write-back of a PM line leaves for the controller |
//! | [`crash_flush`](LoggingEngine::crash_flush) / [`recover`](LoggingEngine::recover) | power fails / the machine restarts |
//!
//! Engines issue real writes with real bytes ([`LogWrite`]): log entries, headers and in-place
//! updates land in the [`PmImage`] like any other write, so a crash image holds exactly the log
//! the scheme had made durable and recovery reads nothing else (plus the engine's non-volatile
//! registers and what ADR flushes at the crash).
//!
//! The baseline is [`NoLogging`]: transactions are markers only, nothing is logged in hardware
//! (software logging, if any, is already in the trace).
//!
//! Files: [`bank_load`] (the banks' pending operations a load-aware allocator reads),
//! [`record`] (the log-record format and the recovery scan shared by the redo schemes),
//! [`redo`] (the hardware redo-logging engine: log buffer, records, commit, in-place update,
//! reclamation, and LAD's staging with its undo fallback), [`redu`] (sequential log
//! allocation), [`lalea`] (load-aware allocation), [`blom`] (log metadata buffered in ADR),
//! [`lad`] (write sets staged in ADR).

pub mod bank_load;
pub mod blom;
pub mod lad;
pub mod lalea;
pub mod record;
pub mod redo;
pub mod redu;

use crate::image::PmImage;
use crate::stats::Stats;
use crate::time::Ps;

/// Where a write an engine issues starts its way to memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogSource {
    /// The core's log buffer (next to the L1): the write crosses the cache path first.
    Core,
    /// The memory controller's logging unit: the write enters the controller at once.
    Controller,
}

/// A write a logging engine asks the memory system to perform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogWrite {
    /// Line address written.
    pub line_addr: u64,
    /// Thread whose transaction it belongs to.
    pub thread: u16,
    /// The whole line.
    pub data: [u8; 64],
    /// Engine token handed back through [`LoggingEngine::on_write_durable`].
    pub tag: u64,
    /// The thread's commit (and fences) wait for it.
    pub tracked: bool,
    /// Where it starts.
    pub source: LogSource,
    /// It takes a WPQ entry the engine kept for it (counted in
    /// [`adr_pinned`](LoggingEngine::adr_pinned) until the engine issued the write, which
    /// stops counting it there): the system keeps that entry at the controller while the
    /// write is on its way, and the write takes it when it arrives (LAD's staged lines).
    pub holds_entry: bool,
}

/// What the commit of a transaction requires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitAction {
    /// The transaction is committed when `TxEnd` retires.
    Immediate,
    /// The thread waits until every tracked write it issued (its log) is durable.
    WaitForLog,
}

pub use crate::memsys::MemoryView;

/// The PM range reserved for the hardware log (never used by programs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogRegion {
    /// First byte address.
    pub base: u64,
    /// Size in bytes.
    pub bytes: u64,
}

impl LogRegion {
    /// True when `addr` lies in the region.
    pub fn contains(&self, addr: u64) -> bool {
        addr >= self.base && addr - self.base < self.bytes
    }
}

/// Bytes the full system reserves for the hardware log at the top of the PM range by default
/// (`controller.log_bytes`).
pub const LOG_REGION_BYTES: u64 = 64 << 20;

impl Clone for Box<dyn LoggingEngine> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// A hardware logging scheme (plug-in).
pub trait LoggingEngine: Send {
    /// A copy of this plug-in with its whole state: a run forked at a crash point
    /// ([`crate::system::System::run_to_crash_points`]) goes on with the copy. (`Box::new(self.clone())`.)
    fn clone_box(&self) -> Box<dyn LoggingEngine>;

    /// Registry name.
    fn name(&self) -> &'static str;
    /// Called once before the run: the log region and the memory system behind it.
    fn attach(&mut self, _region: LogRegion, _mem: &dyn MemoryView) {}
    /// `thread` begins a transaction at `now`.
    fn on_tx_begin(&mut self, thread: u16, now: Ps);
    /// `thread` stored to PM line `line_addr` at `now`; `before` and `line` are the whole line
    /// before and after the store (an undo log takes the old contents from the first).
    /// Writes to issue go to `out`.
    #[allow(clippy::too_many_arguments)]
    fn on_store(
        &mut self,
        thread: u16,
        line_addr: u64,
        before: &[u8; 64],
        line: &[u8; 64],
        now: Ps,
        mem: &dyn MemoryView,
        out: &mut Vec<LogWrite>,
    );
    /// `thread` ends its transaction at `now`; writes to issue go to `out`.
    fn on_tx_end(
        &mut self,
        thread: u16,
        now: Ps,
        mem: &dyn MemoryView,
        out: &mut Vec<LogWrite>,
    ) -> CommitAction;
    /// The write with `tag` became durable at `now`; further writes (a header after its
    /// entries, in-place updates after a commit) go to `out`.
    fn on_write_durable(
        &mut self,
        _tag: u64,
        _now: Ps,
        _mem: &dyn MemoryView,
        _out: &mut Vec<LogWrite>,
    ) {
    }
    /// A cache write-back of PM line `line_addr` is on its way. Returning true takes it over:
    /// the line belongs to an uncommitted transaction, whose data the engine writes in place
    /// after the commit (no-steal), so the write-back must not reach the home location.
    fn absorbs_writeback(&mut self, _line_addr: u64) -> bool {
        false
    }
    /// WPQ entries the engine keeps now, per channel (lines it holds in the ADR domain that
    /// are not writes to issue, such as BLOM's buffered headers, or reserves for writes it
    /// will issue, such as LAD's staged lines); empty when it keeps none. The system hands
    /// them to the controller after every hook (after keeping the entries of the hook's
    /// [`LogWrite::holds_entry`] writes), so they take room from writes.
    fn adr_pinned(&self) -> &[u32] {
        &[]
    }
    /// Power fails: what the engine keeps in the ADR domain goes to `image`.
    fn crash_flush(&self, _image: &mut PmImage) {}
    /// The recovered image of crash image `image` (after [`crash_flush`](Self::crash_flush)),
    /// read with the engine's non-volatile registers only.
    fn recover(&self, image: &PmImage) -> PmImage {
        image.clone()
    }
    /// A problem that made the run invalid (e.g. the log region ran out), if any.
    fn error(&self) -> Option<String> {
        None
    }
    /// Switches on deliberate bug `fault` (see `controller.logging_fault`), so tests can
    /// check that crash oracles catch it.
    fn inject_fault(&mut self, fault: &str) -> Result<(), String> {
        Err(format!(
            "controller.logging_fault = \"{fault}\": not a fault of logging engine \"{}\"",
            self.name()
        ))
    }
    /// Adds the engine's statistics (under `logging.`).
    fn export_stats(&self, _stats: &mut Stats) {}
    /// True when the engine never asks for writes, keeps no state and takes no write-backs:
    /// requesters may then skip [`on_store`](Self::on_store) and
    /// [`absorbs_writeback`](Self::absorbs_writeback). Engines leave the default.
    fn is_passive(&self) -> bool {
        false
    }
}

/// No hardware logging.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoLogging;

impl LoggingEngine for NoLogging {
    fn clone_box(&self) -> Box<dyn LoggingEngine> {
        Box::new(*self)
    }

    fn name(&self) -> &'static str {
        "none"
    }

    fn on_tx_begin(&mut self, _thread: u16, _now: Ps) {}

    fn on_store(
        &mut self,
        _thread: u16,
        _line_addr: u64,
        _before: &[u8; 64],
        _line: &[u8; 64],
        _now: Ps,
        _mem: &dyn MemoryView,
        _out: &mut Vec<LogWrite>,
    ) {
    }

    fn on_tx_end(
        &mut self,
        _thread: u16,
        _now: Ps,
        _mem: &dyn MemoryView,
        _out: &mut Vec<LogWrite>,
    ) -> CommitAction {
        CommitAction::Immediate
    }

    fn is_passive(&self) -> bool {
        true
    }
}
