//! PM-support ("backend memory operation", BMO) engines: work the memory controller does on
//! the write and read paths before data is durable or usable (encryption and integrity trees,
//! deduplication). An engine returns the extra latency it adds to each request.
//!
//! The baseline is [`NoBmo`]: a plain PM system with no PM-support operations.

use crate::time::Ps;

/// A PM-support engine (plug-in).
pub trait BmoEngine: Send {
    /// Registry name.
    fn name(&self) -> &'static str;
    /// Extra latency before a write of `line_addr` arriving at `now` may enter the persistence
    /// domain.
    fn write_delay(&mut self, line_addr: u64, now: Ps) -> Ps;
    /// Extra latency after read data for `line_addr` returns at `now` before it is usable.
    fn read_delay(&mut self, line_addr: u64, now: Ps) -> Ps;
    /// True when the engine does nothing at all: both delays are always 0 and the calls
    /// change no state. The memory system then skips the calls. Engines leave the default.
    fn is_passthrough(&self) -> bool {
        false
    }
}

/// No PM-support operations: writes and reads pass untouched.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoBmo;

impl BmoEngine for NoBmo {
    fn name(&self) -> &'static str {
        "none"
    }

    fn write_delay(&mut self, _line_addr: u64, _now: Ps) -> Ps {
        0
    }

    fn read_delay(&mut self, _line_addr: u64, _now: Ps) -> Ps {
        0
    }

    fn is_passthrough(&self) -> bool {
        true
    }
}
