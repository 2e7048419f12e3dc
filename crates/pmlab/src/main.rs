//! `pmlab`: the persistent-memory systems toolkit's command line.

/// `eprintln!` that ignores a failed write: standard error carries notes and progress, and one
/// that cannot be written (`2>/dev/full`) must not end a run with a panic (exit 101).
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod atomic_file;
mod cmd_crash;
mod cmd_ec;
mod cmd_sim;
mod cmd_sweep;
mod cmd_trace;
mod cmd_workloads;
mod output_errors;
mod percall;
mod report;
mod reproduce;
mod signals;
mod simulate;
mod workload_options;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// The version and the commit the binary was built from (`build.rs`), as `pmlab --version`,
/// `pmlab sim --json` and the report print it.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("PMLAB_COMMIT"),
    ")"
);

/// pmlab: simulate persistent-memory systems, inspect traces, reproduce the papers.
///
/// Start with `pmlab reproduce --quick` (what `make demo` runs), or simulate a trace:
/// `pmlab sim --config configs/optane.toml --trace my.trace`.
#[derive(Parser)]
#[command(name = "pmlab", version = VERSION, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a trace or a generated workload on a configured system and print a summary.
    ///
    /// A program trace runs on the model `system.model` names: the full system (cores, caches,
    /// DRAM and PM) unless set to `memory`; a memory-request trace (a plain `0xADDR
    /// READ|WRITE CYCLE` trace, or a .pmt marked as requests) on the memory system alone. TRACE may be a .pmt file, a pmlab text dump, a PMWeaver store dump
    /// or a plain trace; the format is detected from the content. --workload generates a
    /// pmwork program instead and streams it in, with no file.
    Sim(cmd_sim::SimArgs),
    /// Run a grid of simulations (configs x workloads x --set values) into one CSV.
    ///
    /// Each combination of a --config, a --workload and one value of every --set key is a
    /// job; jobs run on local threads and can be split over processes or machines with
    /// --shard, mpiexec or a Slurm array. The CSV holds one row of simulated statistics per
    /// job and is byte-identical however the sweep was split.
    #[command(after_long_help = cmd_sweep::AFTER_HELP)]
    Sweep(cmd_sweep::SweepArgs),
    /// Cut a workload's run at many power-failure points, recover, and check its oracle.
    ///
    /// Runs the workload on the full system once, then cuts that run at N points (half at
    /// random times, half at fence completions; each point's run finished from a snapshot of
    /// the trace's run, or with `--rerun` simulated from the start), rebuilds each crash image with the
    /// workload's recovery and checks that every committed operation is present and none is
    /// half-applied. Exits non-zero on the first failure, printing how to replay it.
    Crash(cmd_crash::CrashArgs),
    /// Inspect, convert and summarise traces.
    #[command(subcommand)]
    Trace(cmd_trace::TraceCommand),
    /// Erasure-code files with pmec (DIALGA) and benchmark it beside ISA-L.
    #[command(subcommand)]
    Ec(cmd_ec::EcCommand),
    /// Run the papers' headline experiments and write CSV, SVG and REPORT.md.
    Reproduce {
        /// Smaller runs (a few minutes in all instead of much longer); what `make demo` uses.
        #[arg(long)]
        quick: bool,
        /// Run one section only (e.g. `device`).
        #[arg(long, value_name = "SECTION")]
        only: Option<String>,
        /// Output directory.
        #[arg(long, default_value = "results", value_name = "DIR")]
        out: PathBuf,
    },
    /// List the simulator plug-ins a config can name.
    Plugins,
    /// List the built-in configuration presets.
    Presets,
    /// List the built-in workloads (`pmlab trace gen --workload NAME` generates one).
    Workloads,
}

fn main() -> ExitCode {
    signals::install();
    // pmec's shard and manifest files of `ec encode` / `ec decode --repair` are written under
    // temporary names too: an interrupt removes them as it removes pmlab's own.
    pmec::files::set_temp_file_hook(|p| Box::new(signals::remove_on_interrupt(p)));
    output_errors::install();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout, usage errors to stderr (exit 2), as clap's own
            // exit; but a failed write of the help (`pmlab --help >/dev/full`) is an error, not
            // exit 0.
            if e.use_stderr() {
                // A usage error: exit 2 even where standard error cannot be written either.
                let _ = e.print();
                return ExitCode::from(2);
            }
            let written = e
                .print()
                .and_then(|()| std::io::Write::flush(&mut std::io::stdout()));
            if let Err(w) = written {
                eprintln!("pmlab: cannot write to standard output: {w}");
                return ExitCode::from(1);
            }
            return ExitCode::from(0);
        }
    };
    let result = match cli.command {
        Command::Sim(args) => cmd_sim::run(args),
        Command::Sweep(args) => cmd_sweep::run(args),
        Command::Crash(args) => cmd_crash::run(args),
        Command::Trace(cmd) => cmd_trace::run(cmd),
        Command::Ec(cmd) => cmd_ec::run(cmd),
        Command::Reproduce { quick, only, out } => reproduce::run(&out, quick, only.as_deref()),
        Command::Plugins => {
            for (concern, name, desc) in pmsim::plugins::list() {
                println!("{concern:<10} {name:<8} {desc}");
            }
            Ok(())
        }
        Command::Workloads => cmd_workloads::run(),
        Command::Presets => {
            for name in pmsim::config::preset_names() {
                let c = pmsim::SimConfig::preset(name).expect("built-in presets are valid");
                println!("{name:<14} {}", c.description);
            }
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("pmlab: {msg}");
            ExitCode::FAILURE
        }
    }
}
