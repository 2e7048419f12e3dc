//! `pmlab trace`: dump, summarise and import traces.

use crate::atomic_file::AtomicFile;
use clap::Subcommand;
use indicatif::{ProgressBar, ProgressStyle};
use pmsim::pmtrace::{
    flags, open_trace_with, ImportOptions, PmtWriter, TextWriter, TraceFormat, TraceSource,
    TraceStats,
};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// `pmlab trace` subcommands.
#[derive(Subcommand)]
pub enum TraceCommand {
    /// Print a trace as text, one event per line (the format `trace import` reads back).
    Dump {
        /// Trace file (any supported format).
        file: PathBuf,
        /// Stop after this many events.
        #[arg(long, value_name = "N")]
        limit: Option<u64>,
    },
    /// Summarise a trace: events per operation and thread, bytes, footprint.
    Stats {
        /// Trace file (any supported format).
        file: PathBuf,
    },
    /// Convert a trace (plain, PMWeaver store dump, text dump) into a .pmt file.
    Import {
        /// Input trace.
        file: PathBuf,
        /// Output .pmt file.
        #[arg(long, value_name = "OUT.pmt")]
        out: PathBuf,
        /// Input format; detected from the content when omitted.
        #[arg(long, value_parser = ["plain", "pmweaver", "text", "pmt"])]
        format: Option<String>,
        /// PMWeaver dumps: simulator ticks per cycle (gem5 ticks are ps; default 333 = 3 GHz).
        #[arg(long, value_name = "TICKS",
              value_parser = clap::builder::RangedU64ValueParser::<u64>::new().range(1..))]
        ticks_per_cycle: Option<u64>,
        /// Workload name recorded in the header (default: the input file name).
        #[arg(long, value_name = "NAME")]
        workload: Option<String>,
        /// Plain traces: the clock their cycle column counts, recorded in the header and
        /// honoured by `pmlab sim`. `cpu` (default): requester cycles at `replay.cpu_ghz`;
        /// `memory`: memory command-clock cycles, as DRAMsim3's trace front end reads them.
        #[arg(long, value_name = "CLOCK", value_parser = ["cpu", "memory"])]
        trace_clock: Option<String>,
    },
    /// Generate a .pmt trace from a built-in workload (`pmlab workloads` lists them).
    Gen {
        /// Workload name.
        #[arg(long, value_name = "NAME")]
        workload: String,
        /// Threads (default: the workload's).
        #[arg(long, value_name = "N")]
        threads: Option<u16>,
        /// Operations in total (default: the workload's).
        #[arg(long, value_name = "N")]
        ops: Option<u64>,
        /// Seed: the trace is a function of it.
        #[arg(long, value_name = "S", default_value_t = 1)]
        seed: u64,
        #[command(flatten)]
        options: crate::workload_options::WorkloadOptions,
        /// Output .pmt file.
        #[arg(long, value_name = "OUT.pmt")]
        out: PathBuf,
    },
}

fn open(path: &Path, format: Option<&str>, options: &ImportOptions) -> Result<TraceSource, String> {
    let err = |e: pmsim::pmtrace::TraceError| format!("{}: {e}", path.display());
    match format.and_then(TraceFormat::from_name) {
        None => open_trace_with(path, options).map_err(err),
        Some(f) => {
            let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
            TraceSource::with_format(file, f, options).map_err(err)
        }
    }
}

/// Runs a `pmlab trace` subcommand.
pub fn run(cmd: TraceCommand) -> Result<(), String> {
    match cmd {
        TraceCommand::Dump { file, limit } => {
            let src = open(&file, None, &ImportOptions::default())?;
            let header = src.header().clone();
            // The text writer buffers; a second buffer here hid the failed write of a dump's
            // last few KiB (`> /dev/full` exited 0).
            let stdout_error = |e: String| format!("cannot write to standard output: {e}");
            let mut w = TextWriter::new(std::io::stdout().lock(), &header)
                .map_err(|e| stdout_error(e.to_string()))?;
            for (i, ev) in src.enumerate() {
                if limit.is_some_and(|l| i as u64 >= l) {
                    break;
                }
                let ev = ev.map_err(|e| format!("{}: {e}", file.display()))?;
                if let Err(e) = w.write(&ev) {
                    // A closed pipe (e.g. `| head`) ends the dump quietly.
                    if e.to_string().contains("Broken pipe") {
                        return Ok(());
                    }
                    return Err(stdout_error(e.to_string()));
                }
            }
            w.finish()
                .map_err(|e| e.to_string())
                .and_then(|mut out| out.flush().map_err(|e| e.to_string()))
                .map_err(stdout_error)
        }
        TraceCommand::Stats { file } => {
            let src = open(&file, None, &ImportOptions::default())?;
            let h = src.header().clone();
            let format = src.format();
            let mut stats = TraceStats::new();
            for ev in src {
                stats.add(&ev.map_err(|e| format!("{}: {e}", file.display()))?);
            }
            println!(
                "trace {} [{format}] workload '{}' threads {} seed {}",
                file.display(),
                h.workload,
                h.threads,
                h.seed
            );
            if !h.params.is_empty() {
                println!("params {}", h.params);
            }
            let text = stats.to_string();
            print!("{text}");
            if !text.ends_with('\n') {
                println!();
            }
            Ok(())
        }
        TraceCommand::Import {
            file,
            out,
            format,
            ticks_per_cycle,
            workload,
            trace_clock,
        } => {
            let options = ImportOptions {
                ticks_per_gap_unit: ticks_per_cycle.unwrap_or(333).max(1),
                workload,
            };
            crate::atomic_file::check_not_input("--out", &out, &[&file])?;
            if let Some(w) = options.workload.as_ref() {
                // (the header refused it, saying neither where it came from nor which flag)
                let max = pmtrace::header::MAX_WORKLOAD_NAME_BYTES;
                if w.len() > max {
                    return Err(format!("--workload: {} bytes (at most {max})", w.len()));
                }
            }
            let src = open(&file, format.as_deref(), &options)?;
            if ticks_per_cycle.is_some() && src.format() != TraceFormat::Pmweaver {
                // (it was accepted and ignored)
                return Err(format!(
                    "--ticks-per-cycle: {} is a {} trace; only PMWeaver dumps count ticks",
                    file.display(),
                    src.format().name()
                ));
            }
            // A pmlab text dump is pmlab's own format: its header comes back as it was, and
            // only another tool's format is marked imported.
            let own = matches!(src.format(), TraceFormat::Pmt | TraceFormat::Text);
            let mut header = src.header().clone();
            if !own {
                let f = header.flags | flags::IMPORTED;
                header = header.with_flags(f);
            }
            // --workload names a trace whose format has no name of its own; pmt and text
            // headers have theirs, which it replaces.
            if let (true, Some(w)) = (own, options.workload.as_ref()) {
                header.workload = w.clone();
                header
                    .validate()
                    .map_err(|e| format!("--workload {w}: {e}"))?;
            }
            if let Some(clock) = trace_clock.as_deref() {
                if header.flags & flags::MEMORY_REQUESTS == 0 {
                    return Err(format!(
                        "--trace-clock: {} is a program trace ({}), not a memory-request stream; \
                         its gaps are instructions (PMWeaver dumps: core cycles) of the full-system model",
                        file.display(),
                        src.format().name()
                    ));
                }
                let f = match clock {
                    "memory" => header.flags | flags::MEMORY_CLOCK,
                    _ => header.flags & !flags::MEMORY_CLOCK,
                };
                header = header.with_flags(f);
            }
            let f = AtomicFile::create(&out)?;
            let mut w = PmtWriter::new(f, header).map_err(|e| e.to_string())?;
            // Awaits in the order `pmlab sim` reads them (it refused such a trace only then).
            let mut order = pmsim::system::AwaitOrder::default();
            for ev in src {
                let ev = ev.map_err(|e| format!("{}: {e}", file.display()))?;
                order
                    .take(&ev)
                    .map_err(|e| format!("{}: {e}", file.display()))?;
                w.write(&ev)
                    .map_err(|e| format!("{}: {e}", out.display()))?;
            }
            let n = w.events_written();
            w.finish()
                .map_err(|e| format!("{}: {e}", out.display()))?
                .commit()?;
            eprintln!("imported {n} events into {}", out.display());
            Ok(())
        }
        TraceCommand::Gen {
            workload,
            threads,
            ops,
            seed,
            options,
            out,
        } => generate(&workload, threads, ops, seed, &options, &out),
    }
}

/// `pmlab trace gen`: a workload streamed from its generator thread into a .pmt file.
fn generate(
    name: &str,
    threads: Option<u16>,
    ops: Option<u64>,
    seed: u64,
    options: &crate::workload_options::WorkloadOptions,
    out: &Path,
) -> Result<(), String> {
    let w = pmwork::workload(name)?;
    let info = w.info();
    let mut p = info.default_params(seed);
    p.ops = ops.unwrap_or(p.ops);
    p.threads = threads.unwrap_or(p.threads);
    options.apply(&mut p);
    p.validate().map_err(|e| format!("{name}: {e}"))?;
    w.check_params(&p).map_err(|e| format!("{name}: {e}"))?;
    let err = |e: pmsim::pmtrace::TraceError| format!("{}: {e}", out.display());
    let f = AtomicFile::create(out)?;
    let start = std::time::Instant::now();
    let mut stream = pmwork::EventStream::spawn(w, p.clone(), false);
    let mut w_out = PmtWriter::new(f, stream.header().clone()).map_err(err)?;
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {elapsed} {msg}").expect("static template"),
    );
    let mut n = 0u64;
    for ev in stream.by_ref() {
        w_out.write(&ev).map_err(err)?;
        n += 1;
        if n.is_multiple_of(1 << 20) {
            bar.set_message(format!("{n} events"));
        }
    }
    let summary = stream.finish()?;
    w_out.finish().map_err(err)?.commit()?;
    bar.finish_and_clear();
    debug_assert_eq!(summary.events, n);
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "generated {n} events of {name} ({} model, {} threads, {} ops, seed {seed}{}) into {} \
         at {:.1} M events/s ({secs:.2} s)",
        info.model,
        p.threads,
        p.ops,
        crate::workload_options::describe(&p),
        out.display(),
        n as f64 / secs.max(1e-9) / 1e6,
    );
    Ok(())
}
