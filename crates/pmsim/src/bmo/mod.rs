//! PM-support ("backend memory operation", BMO) engines: work the memory controller does on
//! the write and read paths before data is durable or usable (encryption and integrity trees,
//! deduplication).
//!
//! An engine sees each PM write-back when it reaches the controller, with the line's bytes, and
//! returns how long its operations take (the write is durable only after them: PMWeaver
//! Fig. 6b) and whether the media write is needed at all. Its operations split into
//! address-dependent and data-dependent sub-operations (Janus, ISCA'19), so a write predictor
//! can have them *precomputed* ([`BmoEngine::precompute`]) from a predicted address and
//! possibly data: the engine answers from its state without changing it, the predictor's
//! validator keeps the result, and a write-back that matches hands it back to
//! [`BmoEngine::write`], which checks that the metadata it was computed from is still current
//! and redoes what is not.
//!
//! The baseline is [`NoBmo`]: a plain PM system with no PM-support operations. Engines:
//! [`EncBmt`] (counter-mode encryption + Bonsai Merkle tree + MACs) and [`Dedup`].

use crate::config::BmoConfig;
use crate::time::Ps;

pub mod dedup;
pub mod enc_bmt;
pub mod meta_cache;

pub use dedup::Dedup;
pub use enc_bmt::EncBmt;

/// Most metadata words a precomputation records (enc-bmt keeps a 64-bit write-back count in
/// two; small, because every buffered prediction carries them).
pub const MAX_DEPS: usize = 4;

/// What an engine precomputed for a predicted write-back. Held by the predictor's validator;
/// nothing in it is persistent or visible to the processor until a write-back validates it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Precomputed {
    /// The predicted line address.
    pub line_addr: u64,
    /// The predicted bytes, when the data was predicted.
    pub data: Option<[u8; 64]>,
    /// When the prediction reached the engine.
    pub issued: Ps,
    /// When the address-dependent sub-operations finish.
    pub addr_ready: Ps,
    /// When the data-dependent sub-operations finish (`Ps::MAX` without data).
    pub data_ready: Ps,
    /// What the engine needs to tell whether the metadata the precomputation read is still
    /// current, engine-defined (first `deps` words; enc-bmt: how many write-backs it had
    /// seen).
    pub versions: [u32; MAX_DEPS],
    /// Valid entries of `versions`.
    pub deps: u8,
}

/// What the engine does with a write-back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteOutcome {
    /// Time from arrival until the write may enter the persistence domain.
    pub delay: Ps,
    /// False when the media write is not needed (a deduplicated line: only its mapping
    /// changes). The line is durable after `delay` all the same.
    pub media: bool,
}

impl Clone for Box<dyn BmoEngine> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// A PM-support engine (plug-in).
pub trait BmoEngine: Send {
    /// A copy of this plug-in with its whole state: a run forked at a crash point
    /// ([`crate::system::System::run_to_crash_points`]) goes on with the copy. (`Box::new(self.clone())`.)
    fn clone_box(&self) -> Box<dyn BmoEngine>;

    /// Registry name.
    fn name(&self) -> &'static str;
    /// Takes the engine's parameters from the config.
    fn configure(&mut self, _c: &BmoConfig) -> Result<(), String> {
        Ok(())
    }
    /// A write-back of `line_addr` arrives at `now`. `line` is the line's full contents after
    /// the write when known. `pre` is the precomputation the validator matched: its address is
    /// this line's; its `data` is `Some` only when the predicted bytes equal `line`.
    fn write(
        &mut self,
        line_addr: u64,
        line: Option<&[u8; 64]>,
        now: Ps,
        pre: Option<&Precomputed>,
    ) -> WriteOutcome;
    /// Extra latency after read data for `line_addr` returns at `now` before it is usable.
    fn read_delay(&mut self, line_addr: u64, now: Ps) -> Ps;
    /// Precomputes what can be computed for a predicted write-back of `line_addr` (with its
    /// bytes when predicted) starting at `now`. Must not change the engine's state: a
    /// prediction never changes persistent or processor state (PMWeaver Sec. III-C). `None`:
    /// the engine has nothing to precompute.
    fn precompute(
        &self,
        _line_addr: u64,
        _data: Option<&[u8; 64]>,
        _now: Ps,
    ) -> Option<Precomputed> {
        None
    }
    /// Whether the engine needs write-backs' bytes (the memory system then assembles the full
    /// line for [`write`](Self::write)).
    fn needs_data(&self) -> bool {
        false
    }
    /// Counters for the statistics, as `(name, value)`.
    fn stats(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
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
    fn clone_box(&self) -> Box<dyn BmoEngine> {
        Box::new(*self)
    }

    fn name(&self) -> &'static str {
        "none"
    }

    fn write(
        &mut self,
        _: u64,
        _: Option<&[u8; 64]>,
        _: Ps,
        _: Option<&Precomputed>,
    ) -> WriteOutcome {
        WriteOutcome {
            delay: 0,
            media: true,
        }
    }

    fn read_delay(&mut self, _line_addr: u64, _now: Ps) -> Ps {
        0
    }

    fn is_passthrough(&self) -> bool {
        true
    }
}
