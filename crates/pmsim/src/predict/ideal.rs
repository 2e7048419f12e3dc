//! The ideal predictor: every PM write-back was predicted, address and data, long enough ahead
//! for its precomputation to finish against the metadata as it is at the write-back. The upper
//! bound of any write predictor (PMWeaver Fig. 26b's "ideal"). With
//! `predictor.ideal_coverage` below 1 it covers only that share of the write-backs (picked by
//! a hash, deterministically): what a predictor of that coverage could at best be worth.

use super::{Backend, RetiredStore, Validation, WritePredictor};
use crate::bmo::BmoEngine;
use crate::config::PredictorConfig;
use crate::time::{ns_to_ps, Ps};

/// The oracle predictor (`controller.predictor = "ideal"`).
#[derive(Clone, Copy, Debug)]
pub struct IdealPredictor {
    validator: Ps,
    /// Covered write-backs out of 2^32.
    threshold: u64,
    writebacks: u64,
    covered: u64,
}

impl Default for IdealPredictor {
    fn default() -> Self {
        IdealPredictor {
            validator: 0,
            threshold: 1 << 32,
            writebacks: 0,
            covered: 0,
        }
    }
}

impl WritePredictor for IdealPredictor {
    fn clone_box(&self) -> Box<dyn WritePredictor> {
        Box::new(*self)
    }

    fn name(&self) -> &'static str {
        "ideal"
    }

    fn configure(&mut self, c: &PredictorConfig) -> Result<(), String> {
        self.validator = ns_to_ps(c.validator_ns);
        self.threshold = (c.ideal_coverage * (1u64 << 32) as f64) as u64;
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
        let pick =
            (line_addr ^ self.writebacks.rotate_left(40)).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32;
        if pick >= self.threshold {
            return Validation {
                pre: None,
                latency: self.validator,
            };
        }
        self.covered += 1;
        // Precomputed "at time zero" from the metadata as it is now: finished and current.
        Validation {
            pre: engine.precompute(line_addr, data, 0),
            latency: self.validator,
        }
    }

    fn stats(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("writebacks", self.writebacks),
            ("addr_correct", self.covered),
            ("data_correct", self.covered),
        ]
    }
}
