//! `pmlab sim`: run a trace on the full system (cores, caches, DRAM + PM) or, for memory-request
//! traces, on the memory system alone.

use crate::simulate;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use pmsim::config::SystemModel;
use pmsim::time::ps_to_ns;
use pmsim::SimConfig;
use std::path::PathBuf;

/// Arguments of `pmlab sim`.
#[derive(Args)]
pub struct SimArgs {
    /// Config file (TOML) or preset name (`pmlab presets` lists them).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// The trace to replay (.pmt, text dump, PMWeaver dump or plain memory trace).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "workload",
        conflicts_with = "workload"
    )]
    trace: Option<PathBuf>,
    /// Generate a pmwork workload and stream it into the simulator, no file in between
    /// (`pmlab workloads` lists them).
    #[arg(long, value_name = "NAME")]
    workload: Option<String>,
    /// Workload threads (default: the workload's).
    #[arg(long, value_name = "N")]
    threads: Option<u16>,
    /// Workload operations in total (default: the workload's).
    #[arg(long, value_name = "N")]
    ops: Option<u64>,
    /// Workload seed (default 1).
    #[arg(long, value_name = "S")]
    seed: Option<u64>,
    #[command(flatten)]
    options: crate::workload_options::WorkloadOptions,
    /// Write as JSON: pmlab's version and commit, the configuration as run (a trace's clock
    /// included), the trace's source, threads, seed and parameters (a generated workload's
    /// options too), the summary, all statistics and the host timing.
    #[arg(long, value_name = "OUT")]
    json: Option<PathBuf>,
    /// Override a config key, e.g. `--set controller.adr=false` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Which clock a memory-request trace's cycle column counts: `cpu` (requester cycles at
    /// `replay.cpu_ghz`) or `memory` (the device's command clock, as DRAMsim3 reads the same
    /// `0xADDR READ|WRITE CYCLE` lines). Default: what the `.pmt` header records, else
    /// `replay.trace_clock` (`cpu`).
    #[arg(long, value_name = "CLOCK", value_parser = ["cpu", "memory"])]
    trace_clock: Option<String>,
    /// Stop at this simulated time (ns) as if power failed; report what survived.
    // A negative time reaches the check below (clap took `-5` for an unknown option).
    #[arg(long, value_name = "NS", allow_negative_numbers = true)]
    crash_at_ns: Option<f64>,
}

/// Runs `pmlab sim`.
pub fn run(a: SimArgs) -> Result<(), String> {
    // Options of the other input kind are refused rather than ignored (clap's `requires` did
    // not hold here: `--trace T --ops 5` ran the trace as it is and said nothing).
    if a.trace.is_some() {
        let workload_only = [
            ("--threads", a.threads.is_some()),
            ("--ops", a.ops.is_some()),
            ("--seed", a.seed.is_some()),
        ];
        let options = a.options.given();
        if let Some(flag) = workload_only
            .iter()
            .filter_map(|&(flag, given)| given.then_some(flag))
            .chain(options)
            .next()
        {
            return Err(format!("{flag} applies to --workload, not to --trace"));
        }
    } else if a.trace_clock.is_some() {
        return Err("--trace-clock applies to --trace, not to --workload".into());
    }
    // The JSON file's temporary file is made now: an output that cannot be written (a
    // directory, a read-only place) is found before the simulation, not after it.
    let mut json_file = match &a.json {
        Some(p) => {
            crate::atomic_file::check_parent_dir("--json", p)?;
            let inputs: Vec<&std::path::Path> = a
                .trace
                .iter()
                .chain([&a.config])
                .map(|p| p.as_path())
                .collect();
            crate::atomic_file::check_not_input("--json", p, &inputs)?;
            if p.is_dir() {
                return Err(format!("--json {}: is a directory", p.display()));
            }
            Some(crate::atomic_file::AtomicFile::create(p)?)
        }
        None => None,
    };
    let cfg = SimConfig::load(&a.config)
        .and_then(|c| c.with_overrides(&a.sets))
        .map_err(|e| e.to_string())?;
    let crash_at = match a.crash_at_ns {
        Some(ns) if !ns.is_finite() || ns < 0.0 => {
            return Err(format!("--crash-at-ns {ns}: must be a non-negative time"))
        }
        // Picoseconds in a u64: about 213 days (a larger time was quietly cut to it).
        // (Said as "below": the bound itself is refused, and "at most" the value given read
        // as a contradiction.)
        Some(ns) if ns >= u64::MAX as f64 / 1e3 => {
            return Err(format!(
                "--crash-at-ns {ns}: beyond the simulator's clock (must be below {:.0} ns)",
                u64::MAX as f64 / 1e3
            ))
        }
        Some(ns) => Some(pmsim::time::ns_to_ps(ns)),
        None => None,
    };
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {elapsed} {msg}").expect("static template"),
    );
    let progress = |n| bar.set_message(format!("{n} events"));
    // What the generator was given beyond its header's seed and parameters (JSON).
    let mut generator_options = serde_json::Value::Null;
    let (out, source) = match (&a.trace, &a.workload) {
        (Some(t), _) => (
            simulate::run_trace(
                &cfg,
                t,
                crash_at,
                a.trace_clock
                    .as_deref()
                    .map(pmsim::config::TraceClock::parse)
                    .transpose()?,
                progress,
            )?,
            t.display().to_string(),
        ),
        (None, Some(name)) => {
            let w = pmwork::workload(name)?;
            let mut p = w.info().default_params(a.seed.unwrap_or(1));
            match a.threads {
                Some(t) => p.threads = t,
                None => cap_threads(&cfg, &mut p, w.info().name),
            }
            if let Some(n) = a.ops {
                p.ops = n;
            }
            a.options.apply(&mut p);
            let desc = format!(
                "{} thread(s), {} ops, seed {}{}",
                p.threads,
                p.ops,
                p.seed,
                crate::workload_options::describe(&p)
            );
            generator_options = serde_json::json!({
                "ops": p.ops,
                "remote_threads": p.remote_threads,
                "janus_hints": p.janus_hints,
                "value_bytes": p.value_bytes,
            });
            (
                simulate::run_generated(&cfg, w, &p, crash_at, progress)?,
                desc,
            )
        }
        (None, None) => return Err("give --trace FILE or --workload NAME".into()),
    };
    bar.finish_and_clear();
    // The JSON first: a standard output that cannot be written (a closed pipe, a full device)
    // must not cost the file of a finished simulation.
    if let (Some(path), Some(mut file)) = (a.json.as_ref(), json_file.take()) {
        // The config as run: a trace's clock may come from its header or --trace-clock.
        let mut run_cfg = cfg.clone();
        run_cfg.replay.trace_clock = out.trace_clock;
        let h = &out.header;
        let doc = serde_json::json!({
            "pmlab": { "version": env!("CARGO_PKG_VERSION"), "commit": env!("PMLAB_COMMIT") },
            "config": run_cfg,
            "model": match out.model { SystemModel::Full => "full", SystemModel::Memory => "memory" },
            "trace": {
                "source": source,
                "format": out.format,
                "workload": h.workload,
                "threads": h.threads,
                "seed": h.seed,
                "params": h.params,
                "generator": generator_options,
            },
            "summary": {
                "events": out.events,
                "sim_time_ps": out.sim_time,
                "crashed": out.crashed,
            },
            "stats": out.stats.to_json_value(),
            "host": {
                "events": out.events,
                "seconds": out.host_seconds,
                "events_per_sec": out.events as f64 / out.host_seconds.max(1e-9),
            },
        });
        let text = serde_json::to_string_pretty(&doc).expect("json");
        use std::io::Write;
        file.write_all((text + "\n").as_bytes())
            .map_err(|e| format!("{}: cannot write: {e}", path.display()))?;
        file.commit()?;
    }
    let mut rows: Vec<(&str, String)> = vec![
        ("config", format!("{} ({})", cfg.name, a.config.display())),
        (
            "trace",
            format!(
                "{source} [{}, workload '{}']",
                out.format, out.header.workload
            ),
        ),
    ];
    match out.model {
        SystemModel::Memory => memory_rows(&cfg, &out, &mut rows),
        SystemModel::Full => full_rows(&cfg, &out, &mut rows),
    }
    rows.push((
        "host speed",
        format!(
            "{:.2} M events/s ({:.2} s)",
            out.events as f64 / out.host_seconds.max(1e-9) / 1e6,
            out.host_seconds
        ),
    ));
    if out.crashed {
        let (acked, writes) = match out.model {
            // A replayed write counts once acknowledged (ADR: accepted into the write queue;
            // else its media write done).
            SystemModel::Memory => (
                out.stats.counter("replay.writes_acknowledged"),
                out.stats.counter("replay.writes"),
            ),
            // Every PM line write issued: the cores' (less the write-backs a logging engine
            // took over, which never leave for the controller) and the logging engine's own;
            // it reached the controller when the write queue took it, alone or merged into a
            // queued write of its line, or when the PM-support engine found it needs no media
            // write (dedup: a duplicate line).
            SystemModel::Full => (
                out.stats.counter("mc.writes_accepted")
                    + out.stats.counter("mc.writes_coalesced")
                    + out.stats.counter("bmo.media_writes_skipped"),
                (out.stats.counter("pm.writebacks")
                    + out.stats.counter("pm.evictions")
                    + out.stats.counter("pm.nt_writes"))
                .saturating_sub(out.stats.counter("logging.absorbed_writebacks"))
                    + out.stats.counter("pm.engine_writes"),
            ),
        };
        rows.push((
            "crash",
            format!(
                "power failed at {:.1} ns: {acked} of {writes} PM writes {} ({} PM lines with \
                 known data durable)",
                out.sim_time as f64 / 1e3,
                match out.model {
                    SystemModel::Memory => "acknowledged",
                    SystemModel::Full => "reached the controller",
                },
                out.durable_lines
            ),
        ));
    } else if let Some(t) = crash_at {
        rows.push((
            "crash",
            format!(
                "none: the run ended at {:.1} ns, before the crash point ({:.1} ns)",
                out.sim_time as f64 / 1e3,
                t as f64 / 1e3
            ),
        ));
    }
    for (k, v) in &rows {
        println!("{k:<26} {v}");
    }
    Ok(())
}

fn pct(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        100.0 * part / whole
    } else {
        0.0
    }
}

/// The summary a researcher reads first for a full-system run.
fn full_rows(cfg: &SimConfig, out: &simulate::Outcome, rows: &mut Vec<(&'static str, String)>) {
    let s = &out.stats;
    let threads = s.counter("cpu.threads");
    let ipcs: Vec<String> = (0..threads)
        .map(|t| format!("{:.2}", s.value(&format!("cpu.t{t}.ipc")).unwrap_or(0.0)))
        .collect();
    let l1 = (s.counter("cache.l1d.hits") + s.counter("cache.l1d.misses")) as f64;
    let llc = (s.counter("cache.llc.hits") + s.counter("cache.llc.misses")) as f64;
    rows.extend([
        (
            "model",
            "full system (cores, caches, DRAM + PM)".to_string(),
        ),
        ("events", out.events.to_string()),
        (
            "execution time",
            format!("{:.3} us", out.sim_time as f64 / 1e6),
        ),
        (
            "IPC per thread",
            format!(
                "{} (cpu.cores = {}, {} thread(s) per core)",
                ipcs.join(" "),
                cfg.cpu.cores,
                cfg.cpu.threads_per_core
            ),
        ),
        (
            "fence stall share",
            format!(
                "{:.1} % of thread time ({} fences{})",
                100.0 * s.value("cpu.fence_stall_share").unwrap_or(0.0),
                s.counter("cpu.fences"),
                // Under hardware logging a transaction's end waits for its commit as a fence does
                // (a read-only transaction's does not).
                match s.counter("cpu.commit_waits") {
                    0 => String::new(),
                    n => format!(", {n} hardware-transaction commits waited for"),
                }
            ),
        ),
    ]);
    if let Some(share) = s.value("cpu.writeback_stall_share") {
        rows.push((
            "write-back stall share",
            format!(
                "{:.1} % of thread time (clwb/clflushopt waiting for one of cpu.writebacks = {} in flight)",
                100.0 * share,
                cfg.cpu.writebacks
            ),
        ));
    }
    rows.extend([
        (
            "PM traffic",
            format!(
                "read {}, written {} ({} clwb/clflushopt write-backs, {} evictions, {} non-temporal{}{})",
                bytes_text(s.counter("pm.read_bytes")),
                bytes_text(s.counter("pm.write_bytes") + 64 * s.counter("pm.engine_writes")),
                s.counter("pm.writebacks"),
                s.counter("pm.evictions"),
                // `pm.nt_writes` counts the line writes that arrived over RDMA too.
                s.counter("pm.nt_writes")
                    .saturating_sub(s.counter("pm.rdma_writes")),
                match s.counter("pm.rdma_writes") {
                    0 => String::new(),
                    n => format!(", {n} RDMA line writes"),
                },
                match s.counter("pm.engine_writes") {
                    0 => String::new(),
                    n => format!("; {n} line writes of the logging engine"),
                }
            ),
        ),
        (
            "persist latency (mean)",
            format!(
                "{:.1} ns from the controller's doorstep to the ack ({})",
                s.value("pm.persist_latency_ns_mean").unwrap_or(0.0),
                if cfg.controller.adr {
                    "ADR: on WPQ accept"
                } else {
                    "no ADR: media write done"
                }
            ),
        ),
        (
            "DRAM traffic",
            format!(
                "read {}, written {}",
                bytes_text(s.counter("dram.read_bytes")),
                bytes_text(s.counter("dram.write_bytes"))
            ),
        ),
        (
            "cache miss rates",
            format!(
                "L1D {:.1} %, LLC {:.1} %",
                pct(s.counter("cache.l1d.misses") as f64, l1),
                pct(s.counter("cache.llc.misses") as f64, llc)
            ),
        ),
    ]);
}

/// The summary of a memory-only replay.
fn memory_rows(cfg: &SimConfig, out: &simulate::Outcome, rows: &mut Vec<(&'static str, String)>) {
    let stats = &out.stats;
    let hits = stats.counter("mc.row_hits") as f64;
    let accesses =
        hits + (stats.counter("mc.row_closed") + stats.counter("mc.row_conflicts")) as f64;
    let fence_stall = stats.counter("replay.fence_stall_ps");
    rows.extend([
        ("model", "memory-only replay".to_string()),
        (
            "requester",
            // How the trace's time column was read: other simulators read a plain trace's
            // cycles as memory-clock cycles and keep no window, so say what pmlab assumed.
            match out.trace_clock {
                pmsim::config::TraceClock::Cpu => format!(
                    "gaps in {} GHz requester cycles (trace clock `cpu`, replay.cpu_ghz), at \
                     most {} requests in flight (replay.max_outstanding)",
                    cfg.replay.cpu_ghz, cfg.replay.max_outstanding
                ),
                pmsim::config::TraceClock::Memory => format!(
                    "gaps in {} ns memory clock cycles (trace clock `memory`, \
                     device.timing.tck_ns), at most {} requests in flight \
                     (replay.max_outstanding)",
                    cfg.device.timing.tck_ns, cfg.replay.max_outstanding
                ),
            },
        ),
        ("events", out.events.to_string()),
        (
            "reads / writes",
            format!(
                "{} / {}",
                stats.counter("replay.reads"),
                stats.counter("replay.writes")
            ),
        ),
        (
            "simulated time",
            format!("{:.3} us", out.sim_time as f64 / 1e6),
        ),
        (
            "bandwidth",
            format!(
                "{:.3} GB/s",
                stats.value("replay.bandwidth_gbps").unwrap_or(0.0)
            ),
        ),
        (
            "read latency (mean)",
            format!(
                "{:.1} ns from issue, {:.1} ns from queue acceptance (as DRAMsim3 and \
                 Ramulator count it)",
                stats.value("replay.read_latency_ns_mean").unwrap_or(0.0),
                stats
                    .value("replay.read_latency_accepted_ns_mean")
                    .unwrap_or(0.0)
            ),
        ),
        (
            "write ack latency (mean)",
            format!(
                "{:.1} ns from issue, {:.1} ns from acceptance ({})",
                stats
                    .value("replay.write_ack_latency_ns_mean")
                    .unwrap_or(0.0),
                stats
                    .value("replay.write_ack_latency_accepted_ns_mean")
                    .unwrap_or(0.0),
                if cfg.controller.adr {
                    "ADR: on WPQ accept"
                } else {
                    "no ADR: media write done"
                }
            ),
        ),
        (
            "row-buffer hit rate",
            format!("{:.1} %", pct(hits, accesses)),
        ),
        (
            "fences / stall",
            format!(
                "{} / {:.1} ns ({:.1} % of time)",
                stats.counter("replay.fences"),
                ps_to_ns(fence_stall),
                pct(fence_stall as f64, out.sim_time as f64)
            ),
        ),
        (
            "WPQ drain episodes",
            stats.counter("mc.drain_episodes").to_string(),
        ),
    ]);
    if let Some(amp) = stats.value("mc.read_amplification") {
        if cfg.device.read_buffer.entries > 0 || cfg.device.media_access_bytes > 64 {
            // Every row activation reads a media access unit, a write's too (the read of an
            // XPLine's read-modify-write), so with writes in the mix this exceeds what reads
            // alone fetch (at most one unit per 64 B read).
            rows.push((
                "read amplification",
                format!(
                    "{amp:.2} x (media bytes read per byte the host read; the activations of \
                     writes read media too)"
                ),
            ));
        }
    }
}

/// A workload's default thread count may exceed the config's hardware threads (the PPO set
/// runs 8 threads, the PMWeaver and LALEA presets have 4): run with as many as fit, and say so.
pub fn cap_threads(cfg: &SimConfig, p: &mut pmwork::Params, name: &str) {
    let hw = (cfg.cpu.cores * cfg.cpu.threads_per_core) as u16;
    if p.threads > hw {
        eprintln!(
            "pmlab: note: {name} defaults to {} threads; {} has {hw} hardware threads \
             (cpu.cores x cpu.threads_per_core), so it runs with {hw} (--threads to choose)",
            p.threads, cfg.name
        );
        p.threads = hw;
    }
}

/// `b` bytes in the largest binary unit that keeps the figure at least 1 (exact below 1 KiB),
/// so a few write-backs do not show as "0.00 MiB".
fn bytes_text(b: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if b < 1024 {
        return format!("{b} B");
    }
    let mut v = b as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.2} {}", UNITS[u])
}

#[cfg(test)]
mod tests {
    use super::bytes_text;

    #[test]
    fn small_traffic_is_not_shown_as_zero() {
        assert_eq!(bytes_text(0), "0 B");
        assert_eq!(bytes_text(50 * 64), "3.12 KiB");
        assert_eq!(bytes_text(1000), "1000 B");
        assert_eq!(bytes_text(3 << 20), "3.00 MiB");
        assert_eq!(bytes_text(5 << 30), "5.00 GiB");
    }
}
