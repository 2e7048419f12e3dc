//! One simulation job: a config and a workload in, statistics out. Shared by `pmlab sim` and
//! `pmlab sweep`.
//!
//! Which model runs: the full system (cores, caches, DRAM + PM; `system.model = "full"`, the
//! default) or the memory-only replay (`system.model = "memory"`). Plain `hexaddr READ|WRITE
//! cycle` traces are memory-request streams recorded below the caches, so they always replay
//! memory-only.

use pmsim::config::{SystemModel, TraceClock};
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
    /// The clock a memory-request trace's gaps were read in (memory-only replays).
    pub trace_clock: TraceClock,
    /// The trace's header (a generated workload's: what `pmlab trace gen` would write): the
    /// workload's name, and the seed and parameters that remake the run.
    pub header: pmsim::pmtrace::TraceHeader,
}

/// Runs a trace file (any format `pmlab` reads) under `cfg`, optionally crashing at `crash_at`.
/// A memory-request trace's gaps count the clock `clock` when given (`pmlab sim
/// --trace-clock`), else the one its `.pmt` header records (`MEMORY_CLOCK`), else
/// `replay.trace_clock`.
pub fn run_trace(
    cfg: &SimConfig,
    path: &Path,
    crash_at: Option<Ps>,
    clock: Option<TraceClock>,
    progress: impl FnMut(u64),
) -> Result<Outcome, String> {
    let source = open_trace(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let format = source.format();
    let header = source.header().clone();
    let flags = header.flags;
    let mut cfg = cfg.clone();
    if let Some(c) = clock {
        cfg.replay.trace_clock = c;
    } else if flags & pmsim::pmtrace::flags::MEMORY_CLOCK != 0 {
        cfg.replay.trace_clock = TraceClock::Memory;
    }
    let cfg = &cfg;
    // Parse and decode on a second core while the simulator runs.
    let source = pmsim::pmtrace::Pipelined::new(source);
    let model = model_of(
        cfg,
        JobInput::Trace {
            requests: is_request_stream(format, flags),
        },
    )?;
    if clock.is_some() && model == SystemModel::Full {
        return Err(format!(
            "--trace-clock: {} is a program trace ({}); its gaps are instructions (PMWeaver \
             dumps: core cycles) of the full-system model (cpu.ghz)",
            path.display(),
            format.name()
        ));
    }
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
                trace_clock: cfg.replay.trace_clock,
                header,
            }
        }
        SystemModel::Full => {
            let mut sys = System::new(cfg).map_err(|e| e.to_string())?;
            if let Some(t) = crash_at {
                sys = sys.crash_at(t);
            }
            if flags & pmsim::pmtrace::flags::GAP_CYCLES != 0 {
                sys = sys.gaps_as_cycles();
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
                trace_clock: cfg.replay.trace_clock,
                header,
            }
        }
    };
    out.host_seconds = start.elapsed().as_secs_f64();
    Ok(out)
}

/// A memory-request stream (a plain trace, or one imported from it) replays on the memory
/// system alone, however it is stored.
fn is_request_stream(format: TraceFormat, flags: u32) -> bool {
    format == TraceFormat::Plain || flags & pmsim::pmtrace::flags::MEMORY_REQUESTS != 0
}

/// Whether the trace file `path` is a memory-request stream (see [`model_of`]), from its
/// header, without reading its events.
pub fn trace_is_request_stream(path: &Path) -> Result<bool, String> {
    let source = open_trace(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(is_request_stream(source.format(), source.header().flags))
}

/// What a job simulates, as far as choosing and checking its model goes.
#[derive(Clone, Copy, Debug)]
pub enum JobInput {
    /// A trace file; `requests`: it is a memory-request stream.
    Trace {
        /// See [`trace_is_request_stream`].
        requests: bool,
    },
    /// A generated workload of `threads` threads.
    Generated {
        /// The workload's threads.
        threads: u16,
    },
}

/// The model a workload runs on under `cfg`: a memory-request trace on the memory system
/// alone, another trace on `system.model`; a generated workload on the full system, and a
/// config asking for the memory-only replay is refused (it ran the full system while the config
/// said memory).
pub fn model_of(cfg: &SimConfig, input: JobInput) -> Result<SystemModel, String> {
    match input {
        JobInput::Trace { requests: true } => Ok(SystemModel::Memory),
        JobInput::Trace { requests: false } => Ok(cfg.system.model),
        JobInput::Generated { .. } if cfg.system.model == SystemModel::Memory => Err(
            "system.model = \"memory\" replays trace files; a generated workload runs on the \
             full system (write it with `pmlab trace gen` to replay it memory-only)"
                .into(),
        ),
        JobInput::Generated { .. } => Ok(SystemModel::Full),
    }
}

/// Checks, before anything runs, that `cfg` can run `input` on the model it would run on: what
/// the model needs of a config beyond its validation (no hardware logging in the memory-only
/// replay; caches that fit in memory), and a hardware thread for every thread of a generated
/// workload (a thread beyond them failed the run at its first event, possibly late).
pub fn check_job(cfg: &SimConfig, input: JobInput) -> Result<(), String> {
    if let JobInput::Generated { threads } = input {
        let hw = cfg.cpu.cores * cfg.cpu.threads_per_core;
        if u32::from(threads) > hw {
            return Err(format!(
                "the workload has {threads} threads; {} has {hw} hardware threads (cpu.cores x \
                 cpu.threads_per_core)",
                cfg.name
            ));
        }
    }
    match model_of(cfg, input)? {
        SystemModel::Memory => Replay::check_config(cfg),
        SystemModel::Full => System::check_config(cfg),
    }
}

/// Streams a generated workload (pmwork) through the full system, without a trace file.
pub fn run_generated(
    cfg: &SimConfig,
    w: &'static dyn pmwork::Workload,
    p: &pmwork::Params,
    crash_at: Option<Ps>,
    progress: impl FnMut(u64),
) -> Result<Outcome, String> {
    check_job(cfg, JobInput::Generated { threads: p.threads })
        .map_err(|e| format!("workload {}: {e}", w.info().name))?;
    w.check_params(p)
        .map_err(|e| format!("workload {}: {e}", w.info().name))?;
    let start = Instant::now();
    let mut sys = System::new(cfg).map_err(|e| e.to_string())?;
    if let Some(t) = crash_at {
        sys = sys.crash_at(t);
    }
    let mut stream = pmwork::EventStream::spawn(w, p.clone(), false);
    let mut outside = None;
    let events = stream
        .by_ref()
        .map_while(|ev| match check_pm_window(cfg, &ev) {
            Ok(()) => Some(Ok(ev)),
            Err(e) => {
                outside = Some(e);
                None
            }
        });
    let s = sys.run(events, progress);
    if let Some(e) = outside {
        return Err(format!("workload {}: {e}", w.info().name));
    }
    let s = s.map_err(|e| format!("workload {}: {e}", w.info().name))?;
    // A crash stops consuming early; the generator notices the hang-up.
    if !s.crashed {
        stream.finish()?;
    }
    Ok(Outcome {
        stats: sys.stats(),
        events: s.events,
        host_seconds: start.elapsed().as_secs_f64(),
        sim_time: s.sim_time,
        crashed: s.crashed,
        model: SystemModel::Full,
        durable_lines: sys.durable_image().len(),
        format: "generated",
        trace_clock: cfg.replay.trace_clock,
        header: w.header(p),
    })
}

/// An event of a pmwork workload must lie in the simulated PM when pmwork put it in its PM heap
/// (at and above `pmwork::heap::PM_BASE`): a `system.pm_base`/`pm_bytes` that leaves the heap
/// out made its writes DRAM traffic, and its crash points fail as if recovery were broken.
pub fn check_pm_window(cfg: &SimConfig, ev: &pmsim::pmtrace::TraceEvent) -> Result<(), String> {
    let (lo, bytes) = (cfg.system.pm_base, cfg.system.pm_bytes);
    if ev.op.has_address()
        && ev.addr >= pmwork::heap::PM_BASE
        && !(ev.addr >= lo && ev.addr - lo < bytes)
    {
        return Err(format!(
            "the workload's PM heap (from {:#x}) reaches {:#x}, outside the simulated PM \
             (system.pm_base = {lo:#x}, system.pm_bytes = {bytes:#x})",
            pmwork::heap::PM_BASE,
            ev.addr
        ));
    }
    Ok(())
}

/// Generates a workload into memory: its events, and what the generator reported (the events
/// moved out of its sink). For crash tests and characterisation of small runs.
pub fn generate_in_memory(
    w: &dyn pmwork::Workload,
    p: &pmwork::Params,
    opts: pmwork::GenOptions,
) -> Result<(Vec<pmsim::pmtrace::TraceEvent>, pmwork::Generated), String> {
    let mut gen = w.generate(p, Box::new(pmwork::VecSink::default()), opts)?;
    let sink = std::mem::replace(&mut gen.sink, Box::new(pmwork::NullSink));
    let events = sink
        .into_any()
        .downcast::<pmwork::VecSink>()
        .map_err(|_| "internal: unexpected sink".to_string())?
        .events;
    Ok((events, gen))
}

/// A workload argument: a trace file, or `NAME[:ops=N][:threads=T][:seed=S][:remote=R][:hints=0|1][:value=BYTES]` naming a
/// pmwork workload (defaults: the workload's own ops and threads, seed 1).
pub fn parse_generated(
    spec: &str,
) -> Result<(&'static dyn pmwork::Workload, pmwork::Params), String> {
    let mut parts = spec.split(':');
    let name = parts.next().unwrap_or("");
    let w = pmwork::workload(name).map_err(|e| format!("workload `{spec}`: {e}"))?;
    let mut p = w.info().default_params(1);
    let mut seen: Vec<&str> = Vec::new();
    for kv in parts {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("workload `{spec}`: `{kv}` is not KEY=VALUE"))?;
        if seen.contains(&k) {
            return Err(format!("workload `{spec}`: `{k}` given twice"));
        }
        seen.push(k);
        let bad = |e: std::num::ParseIntError| {
            let why = match e.kind() {
                std::num::IntErrorKind::PosOverflow => "is too large",
                _ => "is not a number",
            };
            format!("workload `{spec}`: {k} = `{v}` {why}")
        };
        match k {
            "ops" => p.ops = v.parse().map_err(bad)?,
            "threads" => p.threads = v.parse().map_err(bad)?,
            "seed" => p.seed = v.parse().map_err(bad)?,
            "remote" => p.remote_threads = v.parse().map_err(bad)?,
            "value" => p.value_bytes = v.parse().map_err(bad)?,
            "hints" => {
                p.janus_hints = match v {
                    "0" => false,
                    "1" => true,
                    _ => return Err(format!("workload `{spec}`: hints = `{v}` is not 0 or 1")),
                }
            }
            _ => {
                return Err(format!(
                "workload `{spec}`: unknown key `{k}` (known: ops, threads, seed, remote, hints, value)"
            ))
            }
        }
    }
    w.check_params(&p)
        .map_err(|e| format!("workload `{spec}`: {e}"))?;
    Ok((w, p))
}

/// Simulates `workload` under `cfg`: a trace file (.pmt, text dump, PMWeaver dump or plain
/// trace) if one exists at that path, else a pmwork workload spec (see [`parse_generated`]);
/// `progress` receives the number of events consumed so far.
pub fn run_workload(
    cfg: &SimConfig,
    workload: &str,
    progress: impl FnMut(u64),
) -> Result<Outcome, String> {
    let path = Path::new(workload);
    if path.exists() {
        return run_trace(cfg, path, None, None, progress);
    }
    let (w, p) =
        parse_generated(workload).map_err(|e| format!("{e} (and no trace file has that name)"))?;
    run_generated(cfg, w, &p, None, progress)
}
