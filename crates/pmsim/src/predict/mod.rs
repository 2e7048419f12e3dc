//! Write predictors: they watch the stores a program retires and the lines it writes back, guess
//! future PM write-backs (address, and data when they can) and have the PM-support engine
//! precompute them, so the engine's latency leaves the write-back's critical path (PMWeaver,
//! PACT'21).
//!
//! A predictor is called from fixed hooks of the data path (ChampSim style):
//! * [`WritePredictor::on_store`]: a store retired (PM or DRAM: PC, address, bytes);
//! * [`WritePredictor::on_flush`]: a `clwb`/`clflushopt` wrote a dirty PM line back;
//! * [`WritePredictor::on_hint`]: the program announced a future write-back (`Op::Hint`, a
//!   Janus-style software hint);
//! * [`WritePredictor::on_writeback`]: a PM write-back reached the memory controller: the
//!   validator returns the matching precomputation, if any.
//!
//! Predictions go to the engine through [`Backend`]; its answers ([`Precomputed`]) stay in the
//! predictor's volatile result buffer until a write-back validates or ages them out. Nothing a
//! predictor does changes persistent state or the engine's metadata.
//!
//! The baseline is [`NoPredictor`]. Predictors: [`PmWeaver`], [`JanusHints`], [`IdealPredictor`].

use crate::bmo::{BmoEngine, Precomputed};
use crate::config::PredictorConfig;
use crate::time::Ps;

pub mod ideal;
pub mod janus;
pub mod pmweaver;
pub mod result_buffer;
pub mod value_index;

pub use ideal::IdealPredictor;
pub use janus::JanusHints;
pub use pmweaver::PmWeaver;
pub use result_buffer::ResultBuffer;

/// A retired store as the predictor's frontend sees it.
#[derive(Clone, Copy, Debug)]
pub struct RetiredStore<'a> {
    /// Hardware thread.
    pub thread: u16,
    /// The store instruction's PC.
    pub pc: u64,
    /// Byte address.
    pub addr: u64,
    /// The stored bytes (empty when the trace does not carry them).
    pub value: &'a [u8],
    /// Whether the address is persistent memory.
    pub pm: bool,
}

/// What the predictor may consult: the cache hierarchy's current contents and the PM-support
/// engine that precomputes.
pub trait LineView {
    /// The newest bytes of the line at `line_addr` (cached or in memory).
    fn line_bytes(&self, line_addr: u64) -> [u8; 64];
    /// Whether `addr` is persistent memory.
    fn is_pm(&self, addr: u64) -> bool;
}

/// The engine and the hierarchy, as the hooks pass them.
pub struct Backend<'a> {
    /// The PM-support engine (asked to precompute; never changed).
    pub engine: &'a dyn BmoEngine,
    /// The caches' contents.
    pub lines: &'a dyn LineView,
}

/// Where a correct prediction came from (for the coverage breakdown, PMWeaver Fig. 22).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Woven from earlier store instructions (the main predictor).
    Stores,
    /// The timeout predictor: the line sat idle after its last store.
    Timeout,
    /// An oracle (the ideal predictor).
    Oracle,
    /// A software hint (`Op::Hint`).
    Hint,
}

/// The validator's answer for a write-back at the controller.
#[derive(Clone, Debug, Default)]
pub struct Validation {
    /// The precomputation to use: its address is the write-back's, and its `data` is `Some`
    /// only when the predicted bytes equal the write-back's.
    pub pre: Option<Precomputed>,
    /// Time the lookup adds before the engine starts.
    pub latency: Ps,
}

impl Clone for Box<dyn WritePredictor> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// A write predictor (plug-in).
pub trait WritePredictor: Send {
    /// A copy of this plug-in with its whole state: a run forked at a crash point
    /// ([`crate::system::System::run_to_crash_points`]) goes on with the copy. (`Box::new(self.clone())`.)
    fn clone_box(&self) -> Box<dyn WritePredictor>;

    /// Registry name.
    fn name(&self) -> &'static str;
    /// Takes the predictor's parameters from the config.
    fn configure(&mut self, _c: &PredictorConfig) -> Result<(), String> {
        Ok(())
    }
    /// True for the baseline that predicts nothing: the hooks are skipped.
    fn is_passive(&self) -> bool {
        false
    }
    /// Hook: `s` retired at `now`.
    fn on_store(&mut self, s: &RetiredStore, now: Ps, b: &Backend);
    /// Hook: thread `thread` wrote back PM line `line_addr` holding `data` (`clwb`,
    /// `clflushopt`) at `now`.
    fn on_flush(&mut self, thread: u16, line_addr: u64, data: &[u8; 64], now: Ps, b: &Backend);
    /// Hook: thread `thread`'s program announced, at `now`, that PM line `line_addr` will be
    /// written back (with these bytes when `data` is given). Predictors that take no software
    /// hints ignore it.
    fn on_hint(
        &mut self,
        _thread: u16,
        _line_addr: u64,
        _data: Option<&[u8; 64]>,
        _now: Ps,
        _b: &Backend,
    ) {
    }
    /// Hook (validator): a PM write-back of `line_addr` reached the controller at `now`, with
    /// the line's bytes when known.
    fn on_writeback(
        &mut self,
        line_addr: u64,
        data: Option<&[u8; 64]>,
        now: Ps,
        engine: &dyn BmoEngine,
    ) -> Validation;
    /// Counters for the statistics, as `(name, value)`.
    fn stats(&self) -> Vec<(&'static str, u64)>;
}

/// No prediction: every write-back pays the engine's full latency.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoPredictor;

impl WritePredictor for NoPredictor {
    fn clone_box(&self) -> Box<dyn WritePredictor> {
        Box::new(*self)
    }

    fn name(&self) -> &'static str {
        "none"
    }
    fn is_passive(&self) -> bool {
        true
    }
    fn on_store(&mut self, _: &RetiredStore, _: Ps, _: &Backend) {}
    fn on_flush(&mut self, _: u16, _: u64, _: &[u8; 64], _: Ps, _: &Backend) {}
    fn on_writeback(
        &mut self,
        _: u64,
        _: Option<&[u8; 64]>,
        _: Ps,
        _: &dyn BmoEngine,
    ) -> Validation {
        Validation::default()
    }
    fn stats(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}
