//! The ideal predictor: every PM write-back was predicted, address and data, long enough ahead
//! for its precomputation to finish against the metadata as it is at the write-back. The upper
//! bound of any write predictor (PMWeaver Fig. 26b's "ideal").

use super::{Backend, RetiredStore, Validation, WritePredictor};
use crate::bmo::BmoEngine;
use crate::config::PredictorConfig;
use crate::time::{ns_to_ps, Ps};

/// The oracle predictor (`controller.predictor = "ideal"`).
#[derive(Clone, Copy, Debug, Default)]
pub struct IdealPredictor {
    validator: Ps,
    writebacks: u64,
}

impl WritePredictor for IdealPredictor {
    fn name(&self) -> &'static str {
        "ideal"
    }

    fn configure(&mut self, c: &PredictorConfig) -> Result<(), String> {
        self.validator = ns_to_ps(c.validator_ns);
        Ok(())
    }

    fn on_store(&mut self, _: &RetiredStore, _: Ps, _: &Backend) {}

    fn on_flush(&mut self, _: u16, _: u64, _: &[u8; 64], _: Ps, _: &Backend) {}

    fn on_writeback(
        &mut self,
        line_addr: u64,
        data: Option<&[u8; 64]>,
        _now: Ps,
        engine: &dyn BmoEngine,
    ) -> Validation {
        self.writebacks += 1;
        // Precomputed "at time zero" from the metadata as it is now: finished and current.
        Validation {
            pre: engine.precompute(line_addr, data, 0),
            latency: self.validator,
        }
    }

    fn stats(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("writebacks", self.writebacks),
            ("addr_correct", self.writebacks),
            ("data_correct", self.writebacks),
        ]
    }
}
