//! `pmlab sim`: replay a trace on a configured memory system.

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use pmsim::pmtrace::open_trace;
use pmsim::time::ps_to_ns;
use pmsim::{Replay, SimConfig};
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `pmlab sim`.
#[derive(Args)]
pub struct SimArgs {
    /// Config file (TOML) or preset name (`pmlab presets` lists them).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// The trace to replay (.pmt, text dump, PMWeaver dump or plain memory trace).
    #[arg(long, value_name = "FILE")]
    trace: PathBuf,
    /// Write the configuration, summary, all statistics and host timing as JSON.
    #[arg(long, value_name = "OUT")]
    json: Option<PathBuf>,
    /// Override a config key, e.g. `--set controller.adr=false` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Stop at this simulated time (ns) as if power failed; report what survived.
    #[arg(long, value_name = "NS")]
    crash_at_ns: Option<f64>,
}

/// Runs `pmlab sim`.
pub fn run(a: SimArgs) -> Result<(), String> {
    let cfg = SimConfig::load(&a.config)
        .and_then(|c| c.with_overrides(&a.sets))
        .map_err(|e| e.to_string())?;
    let source = open_trace(&a.trace).map_err(|e| format!("{}: {e}", a.trace.display()))?;
    let format = source.format().name();
    let workload = source.header().workload.clone();
    let mut replay = Replay::new(&cfg).map_err(|e| e.to_string())?;
    if let Some(ns) = a.crash_at_ns {
        if !ns.is_finite() || ns < 0.0 {
            return Err(format!("--crash-at-ns {ns}: must be a non-negative time"));
        }
        replay = replay.crash_at(pmsim::time::ns_to_ps(ns));
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {elapsed} {msg}").expect("static template"),
    );
    let start = Instant::now();
    let summary = replay
        .run(source, |n| bar.set_message(format!("{n} events")))
        .map_err(|e| format!("{}: {e}", a.trace.display()))?;
    let host_s = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let stats = replay.stats();
    let hits = stats.counter("mc.row_hits") as f64;
    let accesses =
        hits + (stats.counter("mc.row_closed") + stats.counter("mc.row_conflicts")) as f64;
    let fence_stall = stats.counter("replay.fence_stall_ps");
    let rows: Vec<(&str, String)> = vec![
        ("config", format!("{} ({})", cfg.name, a.config.display())),
        (
            "trace",
            format!("{} [{format}, workload '{workload}']", a.trace.display()),
        ),
        ("events", summary.events.to_string()),
        (
            "reads / writes",
            format!("{} / {}", summary.reads, summary.writes),
        ),
        (
            "simulated time",
            format!("{:.3} us", summary.sim_time as f64 / 1e6),
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
                "{:.1} ns",
                stats.value("replay.read_latency_ns_mean").unwrap_or(0.0)
            ),
        ),
        (
            "write ack latency (mean)",
            format!(
                "{:.1} ns ({})",
                stats
                    .value("replay.write_ack_latency_ns_mean")
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
            format!(
                "{:.1} %",
                if accesses > 0.0 {
                    100.0 * hits / accesses
                } else {
                    0.0
                }
            ),
        ),
        (
            "fences / stall",
            format!(
                "{} / {:.1} ns ({:.1} % of time)",
                stats.counter("replay.fences"),
                ps_to_ns(fence_stall),
                if summary.sim_time > 0 {
                    100.0 * fence_stall as f64 / summary.sim_time as f64
                } else {
                    0.0
                }
            ),
        ),
        (
            "WPQ drain episodes",
            stats.counter("mc.drain_episodes").to_string(),
        ),
        (
            "host speed",
            format!(
                "{:.2} M events/s ({host_s:.2} s)",
                summary.events as f64 / host_s / 1e6
            ),
        ),
    ];
    let mut rows = rows;
    if let Some(amp) = stats.value("mc.read_amplification") {
        if cfg.device.read_buffer.entries > 0 || cfg.device.media_access_bytes > 64 {
            rows.push(("read amplification", format!("{amp:.2} x")));
        }
    }
    if summary.crashed {
        rows.push((
            "crash",
            format!(
                "power failed at {:.1} ns: {} of {} writes durable ({} PM lines with known data)",
                summary.sim_time as f64 / 1e3,
                stats.counter("replay.writes_acknowledged"),
                summary.writes,
                replay.durable_image().len()
            ),
        ));
    }
    for (k, v) in &rows {
        println!("{k:<26} {v}");
    }
    if let Some(path) = a.json {
        let doc = serde_json::json!({
            "config": cfg,
            "trace": { "path": a.trace.display().to_string(), "format": format, "workload": workload },
            "summary": {
                "events": summary.events,
                "reads": summary.reads,
                "writes": summary.writes,
                "sim_time_ps": summary.sim_time,
                "crashed": summary.crashed,
            },
            "stats": stats.to_json_value(),
            "host": {
                "events": summary.events,
                "seconds": host_s,
                "events_per_sec": summary.events as f64 / host_s.max(1e-9),
            },
        });
        let text = serde_json::to_string_pretty(&doc).expect("json");
        std::fs::write(&path, text + "\n")
            .map_err(|e| format!("{}: cannot write: {e}", path.display()))?;
    }
    Ok(())
}
