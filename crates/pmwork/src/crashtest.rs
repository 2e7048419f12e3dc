//! Simulator-free crash testing: generate a workload, cut its trace at many points, build
//! crash images with the reference persistence model ([`crate::persist_model`]) and ask the
//! workload's oracle about each.
//!
//! This is how the crate tests its own recovery code; `pmlab crash` does the same with the
//! simulator's persistence domain instead of the reference model.

use pmtrace::Op;

use crate::kernel::{GenOptions, Params, Workload};
use crate::models::{Fault, Model};
use crate::persist_model::{CutPolicy, PersistModel};
use crate::rng::Rng;
use crate::sink::VecSink;

/// How to sweep.
#[derive(Clone, Debug)]
pub struct SweepConfig {
    /// Cut points (spread evenly over the trace, plus the same number at random).
    pub cuts: usize,
    /// Random-version images per cut (besides the durable and latest ones).
    pub random_images: usize,
    /// Seed of the cut positions and random images.
    pub seed: u64,
    /// Stop at the first failure.
    pub stop_at_first: bool,
    /// A bug to switch on in the generator.
    pub fault: Option<Fault>,
    /// Hardware transactions persist atomically at `TxEnd` (an ideal hardware-logging
    /// scheme); `false` persists their stores like any others, with no recovery.
    pub atomic_hw_tx: bool,
    /// Also cut right after every fence (`sfence`, `mfence`) and `TxEnd` of the trace.
    pub fence_cuts: bool,
    /// Also cut right before this many fences (`sfence`, `mfence`), spread evenly over the
    /// trace's fences: where a thread's flushes since its last fence are all still undecided,
    /// so that a missing fence between two of them shows in a random image.
    pub before_fence_cuts: usize,
}

impl Default for SweepConfig {
    fn default() -> Self {
        SweepConfig {
            cuts: 100,
            random_images: 2,
            seed: 1,
            stop_at_first: false,
            fault: None,
            atomic_hw_tx: true,
            fence_cuts: false,
            before_fence_cuts: 0,
        }
    }
}

/// One failing image.
#[derive(Clone, Debug)]
pub struct CutFailure {
    /// Events of the trace before the cut.
    pub at_event: usize,
    /// Which image (`durable`, `latest`, `random`).
    pub image: &'static str,
    /// The oracle's message.
    pub message: String,
}

/// What a sweep found.
#[derive(Clone, Debug, Default)]
pub struct SweepReport {
    /// Events in the trace.
    pub events: usize,
    /// Images checked.
    pub images: usize,
    /// Failing images.
    pub failures: Vec<CutFailure>,
}

impl SweepReport {
    /// How many images failed and the first of them, described; `None` when every image passed.
    pub fn first_failure(&self) -> Option<String> {
        self.failures.first().map(|f| {
            format!(
                "{} of {} images; first: cut after event {} of {} ({} image): {}",
                self.failures.len(),
                self.images,
                f.at_event,
                self.events,
                f.image,
                f.message
            )
        })
    }
}

/// Generates `w` with `p`, then checks crash images at about `2.25 * cfg.cuts` cut points:
/// a quarter spread over the whole trace, the rest over the operations after the setups,
/// half of those evenly and half at random (and after the last event).
pub fn sweep(w: &dyn Workload, p: &Params, cfg: &SweepConfig) -> Result<SweepReport, String> {
    let g = w.generate(
        p,
        Box::<VecSink>::default(),
        GenOptions {
            record_commits: true,
            fault: cfg.fault,
        },
    )?;
    let commits = g.commits.clone().expect("asked for commits");
    let events = g.into_events();
    let n = events.len();
    let mut rng = Rng::new(cfg.seed);
    // Setups run first, thread after thread: operations start after all of them. A quarter
    // of the cuts fall anywhere (setup included), the rest among the operations.
    let ops_start = commits
        .per_thread
        .iter()
        .map(|c| c.first().copied().unwrap_or(0) as usize)
        .sum::<usize>()
        .min(n);
    let span = n - ops_start;
    let anywhere = cfg.cuts.div_ceil(4);
    let mut cuts: Vec<usize> = (1..=anywhere).map(|i| i * n / (anywhere + 1)).collect();
    cuts.extend((1..=cfg.cuts).map(|i| ops_start + i * span / (cfg.cuts + 1)));
    cuts.extend((0..cfg.cuts).map(|_| ops_start + rng.below(span as u64 + 1) as usize));
    cuts.push(ops_start);
    if cfg.fence_cuts {
        cuts.extend(
            events
                .iter()
                .enumerate()
                .filter(|(_, e)| matches!(e.op, Op::Sfence | Op::Mfence | Op::TxEnd))
                .map(|(i, _)| i + 1),
        );
    }
    if cfg.before_fence_cuts > 0 {
        let fences: Vec<usize> = events
            .iter()
            .enumerate()
            .filter(|(_, e)| matches!(e.op, Op::Sfence | Op::Mfence))
            .map(|(i, _)| i)
            .collect();
        let k = fences.len().div_ceil(cfg.before_fence_cuts).max(1);
        cuts.extend(fences.iter().step_by(k));
    }
    cuts.push(n);
    cuts.sort_unstable();
    cuts.dedup();
    let hw = w.info().model == Model::HwTx && cfg.atomic_hw_tx;
    let mut model = PersistModel::new(p.threads, hw);
    let mut report = SweepReport {
        events: n,
        ..SweepReport::default()
    };
    let mut next = 0usize;
    for &cut in &cuts {
        while next < cut {
            model.apply(&events[next]);
            next += 1;
        }
        let mut policies: Vec<(&'static str, CutPolicy)> = vec![
            ("durable", CutPolicy::Durable),
            ("latest", CutPolicy::Latest),
        ];
        for _ in 0..cfg.random_images {
            policies.push(("random", CutPolicy::Random(Rng::new(rng.next_u64()))));
        }
        for (name, mut pol) in policies {
            let img = model.image(&mut pol);
            report.images += 1;
            if let Err(message) = w.oracle(p, &commits, &img, model.completed()) {
                report.failures.push(CutFailure {
                    at_event: cut,
                    image: name,
                    message,
                });
                if cfg.stop_at_first {
                    return Ok(report);
                }
            }
        }
    }
    Ok(report)
}
