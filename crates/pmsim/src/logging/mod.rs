//! Hardware logging engines: transaction-aware schemes in the memory controller that create
//! and retire log writes for stores inside `TxBegin`/`TxEnd` (REDU, LAD, LALEA, BLOM).
//!
//! An engine sees transaction boundaries and transactional stores and may ask for extra
//! memory writes (log entries, headers) and for the commit to wait. The baseline is
//! [`NoLogging`]: transactions are markers only, nothing is logged in hardware (software
//! logging, if any, is already in the trace).

/// An extra write a logging engine asks the memory system to perform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogWrite {
    /// Line address of the log write.
    pub line_addr: u64,
    /// Thread whose transaction it belongs to.
    pub thread: u16,
}

/// What the commit of a transaction requires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitAction {
    /// The transaction is committed when `TxEnd` retires.
    Immediate,
    /// The thread waits until every log write it issued is durable.
    WaitForLog,
}

/// A hardware logging scheme (plug-in).
pub trait LoggingEngine: Send {
    /// Registry name.
    fn name(&self) -> &'static str;
    /// `thread` begins a transaction.
    fn on_tx_begin(&mut self, thread: u16);
    /// `thread` stores to `line_addr`; log writes to issue go to `out`.
    fn on_store(&mut self, thread: u16, line_addr: u64, out: &mut Vec<LogWrite>);
    /// `thread` ends its transaction; log writes to issue go to `out`.
    fn on_tx_end(&mut self, thread: u16, out: &mut Vec<LogWrite>) -> CommitAction;
    /// True when [`on_store`](Self::on_store) never asks for writes and keeps no state:
    /// requesters may then skip the call. Engines leave the default.
    fn ignores_stores(&self) -> bool {
        false
    }
}

/// No hardware logging.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoLogging;

impl LoggingEngine for NoLogging {
    fn name(&self) -> &'static str {
        "none"
    }

    fn on_tx_begin(&mut self, _thread: u16) {}

    fn on_store(&mut self, _thread: u16, _line_addr: u64, _out: &mut Vec<LogWrite>) {}

    fn on_tx_end(&mut self, _thread: u16, _out: &mut Vec<LogWrite>) -> CommitAction {
        CommitAction::Immediate
    }

    fn ignores_stores(&self) -> bool {
        true
    }
}
