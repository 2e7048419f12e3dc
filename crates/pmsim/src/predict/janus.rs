//! Janus-style software hints (Liu et al., ISCA'19; PMWeaver's comparison point, Sec. VI-B3):
//! the program announces future write-backs (`Op::Hint`: the line, and its bytes when known),
//! the controller precomputes them, and the validator matches them against the write-backs
//! that come. No learning: what is precomputed, and how early, is what the annotations say
//! (pmwork places them: `Params::janus_hints`).

use super::result_buffer::{Candidate, ResultBuffer, Timeliness};
use super::{Backend, RetiredStore, Source, Validation, WritePredictor};
use crate::bmo::BmoEngine;
use crate::config::PredictorConfig;
use crate::time::{ns_to_ps, Ps};

/// The software-hint predictor (`controller.predictor = "janus"`).
#[derive(Clone)]
pub struct JanusHints {
    frontend: Ps,
    validator: Ps,
    per_thread_addresses: usize,
    threads: usize,
    results: ResultBuffer,
    hints: u64,
    writebacks: u64,
    addr_correct: u64,
    data_correct: u64,
    timeliness: Timeliness,
}

impl Default for JanusHints {
    fn default() -> Self {
        let mut j = JanusHints {
            frontend: 0,
            validator: 0,
            per_thread_addresses: 1,
            threads: 1,
            results: ResultBuffer::new(1, 1, 0),
            hints: 0,
            writebacks: 0,
            addr_correct: 0,
            data_correct: 0,
            timeliness: Timeliness::default(),
        };
        j.configure(&PredictorConfig::default())
            .expect("default predictor parameters are valid");
        j
    }
}

impl WritePredictor for JanusHints {
    fn clone_box(&self) -> Box<dyn WritePredictor> {
        Box::new(self.clone())
    }

    fn name(&self) -> &'static str {
        "janus"
    }

    fn configure(&mut self, c: &PredictorConfig) -> Result<(), String> {
        self.frontend = ns_to_ps(c.frontend_ns);
        self.validator = ns_to_ps(c.validator_ns);
        // Janus's pre-execution results wait in a buffer at the controller; it is sized as
        // PMWeaver's result buffer (an assumption: the comparison is about when the
        // precomputation starts, not where it waits).
        self.per_thread_addresses = c.result_addresses as usize;
        self.results = ResultBuffer::new(
            c.result_addresses as usize,
            c.result_candidates as usize,
            ns_to_ps(c.max_age_ns),
        );
        Ok(())
    }

    fn on_store(&mut self, _: &RetiredStore, _: Ps, _: &Backend) {}

    fn on_flush(&mut self, _: u16, _: u64, _: &[u8; 64], _: Ps, _: &Backend) {}

    fn on_hint(
        &mut self,
        thread: u16,
        line_addr: u64,
        data: Option<&[u8; 64]>,
        now: Ps,
        b: &Backend,
    ) {
        if !b.lines.is_pm(line_addr) {
            return;
        }
        if thread as usize >= self.threads {
            self.threads = thread as usize + 1;
            self.results
                .set_addresses(self.per_thread_addresses * self.threads);
        }
        let Some(pre) = b.engine.precompute(line_addr, data, now + self.frontend) else {
            return;
        };
        self.hints += 1;
        self.results.insert(Candidate {
            pre,
            woven: data.copied(),
            source: Source::Hint,
            tag: 0,
            thread,
        });
        self.results.take_dropped();
    }

    fn on_writeback(
        &mut self,
        line_addr: u64,
        data: Option<&[u8; 64]>,
        now: Ps,
        _engine: &dyn BmoEngine,
    ) -> Validation {
        self.writebacks += 1;
        let m = self.results.validate(line_addr, data, now);
        self.results.take_dropped();
        if let Some(c) = &m.candidate {
            self.addr_correct += 1;
            self.data_correct += u64::from(m.data);
            self.timeliness.record(c.pre.issued, now);
        }
        Validation {
            pre: m.candidate.map(|c| c.pre),
            latency: self.validator,
        }
    }

    fn stats(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("hints", self.hints),
            ("predictions", self.hints),
            ("writebacks", self.writebacks),
            ("addr_correct", self.addr_correct),
            ("data_correct", self.data_correct),
            ("gap_ps", self.timeliness.gap_ps),
            ("untimely", self.timeliness.untimely),
            ("results_evicted", self.results.stats.evicted),
            ("results_aged", self.results.stats.aged),
        ]
    }
}
