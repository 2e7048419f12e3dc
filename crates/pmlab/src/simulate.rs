//! One simulation job: a config and a workload in, statistics out. Shared by `pmlab sim` and
//! `pmlab sweep`.
//!
//! Which model runs: the full system (cores, caches, DRAM + PM; `system.model = "full"`, the
//! default) or the memory-only replay (`system.model = "memory"`). Plain `hexaddr READ|WRITE
//! cycle` traces are memory-request streams recorded below the caches, so they always replay
//! memory-only.

use pmsim::config::SystemModel;
use pmsim::pmtrace::{open_trace, TraceFormat};
use pmsim::time::Ps;
use pmsim::{Replay, SimConfig, Stats, System};
use std::path::Path;
use std::time::Instant;

/// What one job produced.
pub struct Outcome {
    /// Every simulated statistic.
    pub stats: Stats,
    /// Trace events simulated.
    pub events: u64,
    /// Host seconds the simulation took.
    pub host_seconds: f64,
    /// Simulated time (the crash time when crashed).
    pub sim_time: Ps,
    /// Stopped at the crash point with work left.
    pub crashed: bool,
    /// The model that ran.
    pub model: SystemModel,
    /// Lines with known data in the durable PM image at the end.
    pub durable_lines: usize,
    /// Trace format name and the workload name from its header.
    pub format: &'static str,
    /// Workload name from the trace header.
    pub workload: String,
}

/// Runs a trace file (any format `pmlab` reads) under `cfg`, optionally crashing at `crash_at`.
pub fn run_trace(
    cfg: &SimConfig,
    path: &Path,
    crash_at: Option<Ps>,
    progress: impl FnMut(u64),
) -> Result<Outcome, String> {
    let source = open_trace(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let format = source.format();
    let workload = source.header().workload.clone();
    let model = if format == TraceFormat::Plain {
        SystemModel::Memory
    } else {
        cfg.system.model
    };
    let start = Instant::now();
    let named = |e: String| format!("{}: {e}", path.display());
    let mut out = match model {
        SystemModel::Memory => {
            let mut r = Replay::new(cfg).map_err(|e| e.to_string())?;
            if let Some(t) = crash_at {
                r = r.crash_at(t);
            }
            let s = r.run(source, progress).map_err(|e| named(e.to_string()))?;
            Outcome {
                stats: r.stats(),
                events: s.events,
                host_seconds: 0.0,
                sim_time: s.sim_time,
                crashed: s.crashed,
                model,
                durable_lines: r.durable_image().len(),
                format: format.name(),
                workload,
            }
        }
        SystemModel::Full => {
            let mut sys = System::new(cfg).map_err(|e| e.to_string())?;
            if let Some(t) = crash_at {
                sys = sys.crash_at(t);
            }
            let s = sys
                .run(source, progress)
                .map_err(|e| named(e.to_string()))?;
            Outcome {
                stats: sys.stats(),
                events: s.events,
                host_seconds: 0.0,
                sim_time: s.sim_time,
                crashed: s.crashed,
                model,
                durable_lines: sys.durable_image().len(),
                format: format.name(),
                workload,
            }
        }
    };
    out.host_seconds = start.elapsed().as_secs_f64();
    Ok(out)
}

/// Simulates `workload` (a trace file: .pmt, text dump, PMWeaver dump or plain trace) under
/// `cfg`; `progress` receives the number of events consumed so far.
pub fn run_workload(
    cfg: &SimConfig,
    workload: &str,
    progress: impl FnMut(u64),
) -> Result<Outcome, String> {
    let path = Path::new(workload);
    if !path.exists() {
        return Err(format!("workload `{workload}`: no such trace file"));
    }
    run_trace(cfg, path, None, progress)
}
