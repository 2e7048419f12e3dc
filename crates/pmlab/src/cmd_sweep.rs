//! `pmlab sweep`: run a grid of simulations (configs × workloads × `--set` values) on local
//! threads, optionally as one shard of many processes, and write one deterministic CSV.
//!
//! The grid lives in `grid`, shard selection and file names in `shard`, the CSV layout and
//! the merge of shard files in `table`; this file runs the jobs and writes the files.

mod grid;
mod shard;
mod table;

use crate::atomic_file::{host_name, with_suffix, AtomicFile};
use crate::simulate::run_workload;
use clap::{Args, Subcommand};
use grid::{Grid, SetAxis};
use indicatif::{ProgressBar, ProgressStyle};
use pmsim::SimConfig;
use shard::Shard;
use std::num::NonZeroUsize;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use table::{Row, Table};

/// Shown after `pmlab sweep --help`: the grid and sharding explained with examples.
pub const AFTER_HELP: &str = "\
THE GRID
  Every --config x every --workload x every combination of the --set value lists is one job:
    pmlab sweep --config optane nvm-ppo --workload a.trace b.trace \\
        --set controller.adr=true,false --set controller.write_queue=32,64 --out s.csv
  runs 2 x 2 x (2 x 2) = 16 jobs. Jobs are numbered from 0 in grid order: config-major, then
  workload, then the --set combinations with the first --set varying slowest. Values are split
  on commas except inside [...], {...} or quotes (--set k=[1,2],[3,4] is two values). Every
  config is loaded and every override applied before any job runs. At most 100000 configurations (configs x --set combinations) and 10000000 jobs.

OUTPUT
  FILE.csv has one row per job, in job order, with the columns
    job, config, config_file, workload, <one per --set key>, sim_time_ns, events,
    <every simulator statistic: counters and derived values, sorted by name>
  (a cell is empty where a job lacks a statistic). Only simulated figures go there, so a sweep
  always writes the same bytes. Host timing (host, seconds, events/s) goes to FILE.csv.host.csv.
  If a job fails, the sweep names it, lets running jobs finish, starts no more and writes
  nothing.

SHARDING (several processes or machines)
  --shard I/N runs only the jobs whose index % N == I (0 <= I < N). Without --shard, the rank
  and size come from the launcher when there is one: mpiexec (PMI_RANK/PMI_SIZE, or Open MPI's
  OMPI_COMM_WORLD_RANK/SIZE) or a Slurm job array (SLURM_ARRAY_TASK_ID with _MIN/_MAX or
  _COUNT). A shard writes FILE.csv.shard-I-of-N (and .host.csv beside it); the last shard to
  finish finds all N files and merges them into FILE.csv, byte-identical to a one-process run.
  When shards finish on machines without a shared directory, gather the files and run
    pmlab sweep merge --out FILE.csv FILE.csv.shard-*-of-N
  Examples:
    mpiexec -n 4 pmlab sweep --jobs 4 --config optane --workload t.pmt \\
        --set controller.adr=true,false --out s.csv
    sbatch --array=0-3 --wrap 'pmlab sweep --config optane --workload t.pmt --out s.csv'
  More in docs/sweep.md.";

/// Arguments of `pmlab sweep`.
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct SweepArgs {
    #[command(subcommand)]
    command: Option<SweepCommand>,
    /// Config files (TOML) or preset names; one or more, e.g. `--config optane nvm-ppo`.
    #[arg(long, value_name = "FILE", num_args = 1.., required = true)]
    config: Vec<PathBuf>,
    /// Workloads, one or more: trace files, or generated workloads as
    /// `NAME[:ops=N][:threads=T][:seed=S][:remote=R][:value=BYTES]` (`pmlab workloads` lists the names; the
    /// last R threads are RDMA clients of the simulated PM).
    #[arg(long, value_name = "NAME", num_args = 1.., required = true)]
    workload: Vec<String>,
    /// Sweep a config key over comma-separated values, e.g. `controller.adr=true,false`
    /// (repeatable: the grid takes every combination).
    #[arg(long = "set", value_name = "KEY=V1,V2,...")]
    sets: Vec<String>,
    /// Run only shard I of N: the jobs whose index % N == I (default: from mpiexec's or a
    /// Slurm array's environment, else the whole grid).
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// Worker threads (default: the available cores, shared among the launcher's ranks on
    /// this node).
    #[arg(long, value_name = "J")]
    jobs: Option<NonZeroUsize>,
    /// The CSV to write (sharded runs write FILE.csv.shard-I-of-N first).
    #[arg(long, value_name = "FILE.csv", required = true)]
    out: Option<PathBuf>,
}

#[derive(Subcommand)]
enum SweepCommand {
    /// Merge shard files (FILE.csv.shard-I-of-N) into FILE.csv.
    ///
    /// For shards that ran on machines without a shared directory: gather their files and
    /// merge them. Checks that every job is there exactly once; the result is byte-identical
    /// to a one-process run.
    Merge(MergeArgs),
}

#[derive(Args)]
struct MergeArgs {
    /// The merged CSV to write (host timing, if every shard has it, to FILE.csv.host.csv).
    #[arg(long, value_name = "FILE.csv")]
    out: PathBuf,
    /// The shard files, all N of them, in any order.
    #[arg(value_name = "SHARD", required = true)]
    shards: Vec<PathBuf>,
}

/// Host timing header (FILE.csv.host.csv).
const HOST_HEADER: [&str; 5] = ["job", "host", "seconds", "events", "events_per_sec"];

/// What one finished job produced.
struct Done {
    row: Row,
    host_seconds: f64,
    events: u64,
}

/// Refuses, before any job, an output that is one of the `inputs`: the CSV `out` and its
/// `.host.csv`, and with `shards` (N > 1) every shard's file and sidecars, which a shard
/// removes before its jobs, writes, or (the last one) merges and removes.
fn check_outputs(out: &Path, shards: usize, inputs: &[&Path]) -> Result<(), String> {
    let mut outputs = vec![out.to_path_buf(), with_suffix(out, ".host.csv")];
    if shards > 1 {
        for index in 0..shards {
            let file = Shard {
                index,
                count: shards,
            }
            .file(out);
            outputs.push(with_suffix(&file, ".host.csv"));
            outputs.push(with_suffix(&file, ".grid"));
            outputs.push(file);
        }
    }
    for o in &outputs {
        if let Some(i) = crate::atomic_file::input_named_by(o, inputs) {
            let what = if o == out {
                "is".to_string()
            } else {
                format!("writes {}, which is", o.display())
            };
            return Err(format!(
                "--out {}: {what} the input {} (the output would replace it)",
                out.display(),
                i.display()
            ));
        }
    }
    Ok(())
}

/// Runs `pmlab sweep` or `pmlab sweep merge`.
pub fn run(a: SweepArgs) -> Result<(), String> {
    if let Some(SweepCommand::Merge(m)) = a.command {
        // (the shards' host timing files are read too)
        let host: Vec<PathBuf> = m
            .shards
            .iter()
            .map(|p| with_suffix(p, ".host.csv"))
            .collect();
        let grid: Vec<PathBuf> = m.shards.iter().map(|p| with_suffix(p, ".grid")).collect();
        let inputs = m.shards.iter().chain(&host).chain(&grid);
        let inputs: Vec<&Path> = inputs.map(|p| p.as_path()).collect();
        check_outputs(&m.out, 1, &inputs)?;
        return merge_files(&m.out, &m.shards);
    }
    let out = a.out.expect("clap requires --out");
    let axes = a
        .sets
        .iter()
        .map(|s| SetAxis::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    // (the config and trace files, for the output checks below)
    let input_files: Vec<PathBuf> = a
        .config
        .iter()
        .cloned()
        .chain(a.workload.iter().map(PathBuf::from))
        .collect();
    let grid = Grid::new(a.config, a.workload, axes)?;
    let env = |k: &str| std::env::var(k).ok();
    let shard = match &a.shard {
        Some(s) => Some((Shard::parse(s)?, "--shard".to_string())),
        None => shard::from_env(env)?,
    };
    // One shard of one is the whole grid: write FILE.csv directly.
    let shard = shard.filter(|(s, _)| s.count > 1);
    let inputs: Vec<&Path> = input_files.iter().map(|p| p.as_path()).collect();
    check_outputs(&out, shard.as_ref().map_or(1, |(s, _)| s.count), &inputs)?;
    crate::atomic_file::check_parent_dir("--out", &out)?;
    if out.is_dir() {
        return Err(format!("--out {}: is a directory", out.display()));
    }
    // A device or descriptor (`/dev/null`, `/dev/stdout`) takes the CSV as it is written; the
    // files that go beside FILE.csv (host timing, shards) cannot be created in `/dev`.
    let through = crate::atomic_file::in_device_tree(&out);
    if through && shard.is_some() {
        return Err(format!(
            "--out {}: a sharded sweep writes its shard files beside FILE.csv, which cannot be \
             created there",
            out.display()
        ));
    }
    let configs = grid.validate()?;

    let mine: Vec<usize> = (0..grid.job_count())
        .filter(|&j| shard.as_ref().is_none_or(|(s, _)| s.owns(j)))
        .collect();
    let threads = a.jobs.map_or_else(
        || {
            let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
            let ranks = if shard.is_some() {
                shard::local_ranks(env).unwrap_or(1)
            } else {
                1
            };
            (cores / ranks).max(1)
        },
        NonZeroUsize::get,
    );
    // A shard's earlier files go before its jobs run: should they fail, no file of an earlier
    // run of this shard is left for another shard to merge as this sweep's, and no merged
    // result of an earlier sweep stands for this one. Only regular files go: a device, FIFO
    // or link named as the output is no earlier result (`--shard 0/2 --out /dev/full` deleted
    // the device node).
    let identity = match &shard {
        Some((s, _)) => {
            let file = s.file(&out);
            for f in [
                file.clone(),
                with_suffix(&file, ".host.csv"),
                with_suffix(&file, ".grid"),
                out.clone(),
                with_suffix(&out, ".host.csv"),
            ] {
                let regular = std::fs::symlink_metadata(&f).is_ok_and(|m| m.file_type().is_file());
                if !regular {
                    continue;
                }
                match std::fs::remove_file(&f) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(format!("{}: {e}", f.display())),
                }
            }
            Some(grid_identity(&grid, &configs)?)
        }
        None => None,
    };
    // The files this process writes are opened now: one that cannot be written (a directory
    // where FILE.csv.host.csv goes, a read-only place) is found before the jobs run, not after
    // them, when their results were lost (or FILE.csv was written and its host file was not).
    let data_path = match &shard {
        Some((s, _)) => s.file(&out),
        None => out.clone(),
    };
    let grid_file = match &shard {
        Some(_) => Some(AtomicFile::create(&with_suffix(&data_path, ".grid"))?),
        None => None,
    };
    let host_file = match through {
        false => Some(AtomicFile::create(&with_suffix(&data_path, ".host.csv"))?),
        true => None,
    };
    let data_file = AtomicFile::create(&data_path)?;
    let done = run_jobs(&grid, &configs, &mine, threads)?;

    let host = host_name();
    let mut host_csv = String::new();
    table::write_record(&mut host_csv, HOST_HEADER);
    for d in &done {
        let job = d.row.job.to_string();
        let secs = format!("{:.6}", d.host_seconds);
        let events = d.events.to_string();
        let rate = format!("{:.0}", d.events as f64 / d.host_seconds.max(1e-9));
        table::write_record(&mut host_csv, [job.as_str(), &host, &secs, &events, &rate]);
    }
    let result = Table {
        set_keys: grid.axes.iter().map(|a| a.key.clone()).collect(),
        rows: done.into_iter().map(|d| d.row).collect(),
    };
    let shape = format!(
        "{} x {} x {}",
        plural(grid.configs.len(), "config"),
        plural(grid.workloads.len(), "workload"),
        plural(grid.combinations(), "setting")
    );
    match shard {
        None => {
            finish(data_file, &out, &result.to_csv())?;
            let jobs = plural(grid.job_count(), "job");
            match host_file {
                Some(f) => {
                    let host_path = with_suffix(&out, ".host.csv");
                    finish(f, &host_path, &host_csv)?;
                    println!(
                        "wrote {} ({jobs}: {shape}); host timing in {}",
                        out.display(),
                        host_path.display()
                    );
                }
                // On stderr: the CSV may be going to standard output.
                None => eprintln!(
                    "wrote {} ({jobs}: {shape}); host timing not written (no file beside it)",
                    out.display()
                ),
            }
        }
        Some((s, from)) => {
            let file = s.file(&out);
            // The grid and host files go first: a merger that sees the data file sees them.
            let identity = identity.expect("a shard has its grid identity");
            let grid_file = grid_file.expect("a shard opened its grid file");
            finish(grid_file, &with_suffix(&file, ".grid"), &identity)?;
            let host_file = host_file.expect("a shard writes a regular file");
            finish(host_file, &with_suffix(&file, ".host.csv"), &host_csv)?;
            finish(data_file, &file, &result.to_csv())?;
            println!(
                "shard {}/{} (from {from}): wrote {} ({} of {} jobs: {shape})",
                s.index,
                s.count,
                file.display(),
                mine.len(),
                grid.job_count()
            );
            merge_if_complete(&grid, &configs, &identity, &out, s.count)?;
        }
    }
    Ok(())
}

/// What a shard's file holds results of: a digest of the whole grid's inputs (pmlab's version,
/// every resolved config with its overrides, the `--set` keys and values, the workloads and
/// the bytes of every trace file) and its job count, written beside the shard file as
/// `FILE.csv.shard-I-of-N.grid`. A shard file from a sweep whose config or trace files changed
/// since, under the same names, then counts as left from another sweep; and `sweep merge`
/// knows how many jobs make the whole grid.
fn grid_identity(grid: &Grid, configs: &[SimConfig]) -> Result<String, String> {
    // FNV-1a, 64 bits: stable across builds and hosts, unlike std's hasher.
    struct Fnv(u64);
    impl Fnv {
        fn bytes(&mut self, bytes: &[u8]) {
            for &b in bytes {
                self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01b3);
            }
        }
        /// `bytes`, then a separator, so that ("ab", "c") and ("a", "bc") differ.
        fn feed(&mut self, bytes: &[u8]) {
            self.bytes(bytes);
            self.0 = (self.0 ^ 0xff).wrapping_mul(0x100_0000_01b3);
        }
    }
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    h.feed(env!("CARGO_PKG_VERSION").as_bytes());
    for c in configs {
        let text = serde_json::to_string(c).map_err(|e| format!("config digest: {e}"))?;
        h.feed(text.as_bytes());
    }
    for a in &grid.axes {
        h.feed(a.key.as_bytes());
        for v in &a.values {
            h.feed(v.as_bytes());
        }
    }
    for w in &grid.workloads {
        h.feed(w.as_bytes());
        let path = Path::new(w);
        if path.is_file() {
            // Streamed: a trace of gigabytes is hashed without holding it in memory.
            let mut f = std::fs::File::open(path).map_err(|e| format!("--workload {w}: {e}"))?;
            let mut buf = vec![0u8; 1 << 20];
            loop {
                let n = std::io::Read::read(&mut f, &mut buf)
                    .map_err(|e| format!("--workload {w}: {e}"))?;
                if n == 0 {
                    break;
                }
                h.bytes(&buf[..n]);
            }
            h.feed(&[]);
        }
    }
    Ok(format!("grid {:016x} jobs {}\n", h.0, grid.job_count()))
}

/// The job count a `.grid` file (see [`grid_identity`]) names.
fn identity_jobs(identity: &str) -> Option<usize> {
    identity.trim_end().rsplit_once(" jobs ")?.1.parse().ok()
}

/// The identity columns of job `job` (results left empty).
fn job_row(grid: &Grid, configs: &[SimConfig], job: usize) -> Row {
    let p = grid.position(job);
    Row {
        job,
        config: configs[grid.config_index(p)].name.clone(),
        config_file: grid.configs[p.config].display().to_string(),
        workload: grid.workloads[p.workload].clone(),
        settings: grid
            .combination(p.combo)
            .into_iter()
            .map(String::from)
            .collect(),
        sim_time_ns: String::new(),
        events: String::new(),
        stats: Default::default(),
    }
}

/// Runs one job; a panic inside the simulator becomes this job's error.
fn run_job(grid: &Grid, configs: &[SimConfig], job: usize) -> Result<Done, String> {
    let p = grid.position(job);
    let cfg = &configs[grid.config_index(p)];
    let workload = &grid.workloads[p.workload];
    let outcome = catch_unwind(AssertUnwindSafe(|| run_workload(cfg, workload, |_| {}))).map_err(
        |panic| {
            let msg = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)");
            format!("the simulator panicked: {msg}")
        },
    )??;
    let mut row = job_row(grid, configs, job);
    // Exact decimal of the integer ps count; left empty if the simulator did not report it.
    if let Some((_, ps)) = outcome.stats.counters().find(|(k, _)| *k == "sim.time_ps") {
        row.sim_time_ns = format!("{}.{:03}", ps / 1000, ps % 1000);
    }
    row.events = outcome.events.to_string();
    for (k, v) in outcome.stats.counters() {
        row.stats.insert(k.to_string(), v.to_string());
    }
    // Counters and values share one column namespace (pmsim never uses a name for both).
    for (k, v) in outcome.stats.values() {
        row.stats.insert(k.to_string(), v.to_string());
    }
    Ok(Done {
        row,
        host_seconds: outcome.host_seconds,
        events: outcome.events,
    })
}

/// Runs the jobs `mine` on `threads` workers; results come back in job order. After a failure
/// no new job starts; the running ones finish, and the first failure (by job index) is the error.
fn run_jobs(
    grid: &Grid,
    configs: &[SimConfig],
    mine: &[usize],
    threads: usize,
) -> Result<Vec<Done>, String> {
    let bar = ProgressBar::new(mine.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} jobs  {elapsed} (eta {eta})  {msg}")
            .expect("static template"),
    );
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    // A worker that cannot start (the process's threads or memory exhausted: a large --jobs
    // under a limit) leaves the jobs to those that did; it panicked.
    let mut spawn_error = None;
    let mut started = 0;
    let mut results: Vec<(usize, Result<Done, String>)> = std::thread::scope(|s| {
        let mut workers = Vec::new();
        for _ in 0..threads.min(mine.len()) {
            let worker = std::thread::Builder::new().spawn_scoped(s, || {
                let mut done = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let Some(&job) = mine.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        break;
                    };
                    let r = run_job(grid, configs, job);
                    if r.is_err() {
                        stop.store(true, Ordering::Relaxed);
                        bar.set_message("a job failed: finishing the running ones");
                    }
                    bar.inc(1);
                    done.push((job, r));
                }
                done
            });
            match worker {
                Ok(w) => workers.push(w),
                Err(e) => {
                    spawn_error = Some(e);
                    break;
                }
            }
        }
        started = workers.len();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_default())
            .collect()
    });
    bar.finish_and_clear();
    if let Some(e) = spawn_error {
        if started == 0 {
            return Err(format!(
                "cannot start a worker thread: {e}; no job ran, no CSV written"
            ));
        }
        eprintln!(
            "pmlab: note: ran the jobs on {started} worker thread(s): no more could start ({e})"
        );
    }
    results.sort_by_key(|(job, _)| *job);
    let failed: Vec<(usize, String)> = results
        .iter()
        .filter_map(|(j, r)| r.as_ref().err().map(|e| (*j, e.clone())))
        .collect();
    if let Some((job, msg)) = failed.first() {
        for (j, m) in &failed[1..] {
            eprintln!("pmlab: {}: {m}", grid.describe(*j));
        }
        let not_run = mine.len() - results.len();
        return Err(format!(
            "{}: {msg} ({} of {} jobs failed, {not_run} not started; no CSV written)",
            grid.describe(*job),
            failed.len(),
            mine.len()
        ));
    }
    if results.len() != mine.len() {
        return Err("a sweep worker thread died; no CSV written".into());
    }
    Ok(results.into_iter().filter_map(|(_, r)| r.ok()).collect())
}

/// After a shard wrote its file: if all `count` shard files of this sweep are there, merge them
/// into `out`. Shards finishing together both merge the same rows and rename atomically, so
/// `out` is always whole. A shard file whose jobs differ from this grid's (left over from
/// another sweep) counts as not written yet.
fn merge_if_complete(
    grid: &Grid,
    configs: &[SimConfig],
    identity: &str,
    out: &Path,
    count: usize,
) -> Result<(), String> {
    let mut parts = Vec::with_capacity(count);
    let mut waiting = Vec::new();
    for index in 0..count {
        let file = Shard { index, count }.file(out);
        let Ok(text) = std::fs::read_to_string(&file) else {
            waiting.push(format!("{index}"));
            continue;
        };
        // Same names, other contents (a config or trace file changed since that shard ran).
        if std::fs::read_to_string(with_suffix(&file, ".grid"))
            .ok()
            .as_deref()
            != Some(identity)
        {
            waiting.push(format!(
                "{index}: {} is left from another sweep (its inputs differ)",
                file.display()
            ));
            continue;
        }
        let expected: Vec<Row> = (index..grid.job_count())
            .step_by(count)
            .map(|j| job_row(grid, configs, j))
            .collect();
        let set_keys: Vec<String> = grid.axes.iter().map(|a| a.key.clone()).collect();
        match Table::parse(&text, &file.display().to_string()) {
            Ok(t)
                if t.set_keys == set_keys
                    && t.rows.len() == expected.len()
                    && t.rows.iter().zip(&expected).all(|(a, b)| a.same_job(b)) =>
            {
                parts.push((file.display().to_string(), t));
            }
            _ => waiting.push(format!(
                "{index}: {} is left from another sweep",
                file.display()
            )),
        }
    }
    if !waiting.is_empty() {
        // The first few: with thousands of shards, every number made a line of hundreds of KB.
        const LISTED: usize = 8;
        let mut listed = waiting[..waiting.len().min(LISTED)].join(", ");
        if waiting.len() > LISTED {
            listed += &format!(", and {} more", waiting.len() - LISTED);
        }
        println!(
            "waiting for {} of {count} shards ({listed}): the last to finish writes {} (or run \
             `pmlab sweep merge --out {} {}`)",
            waiting.len(),
            out.display(),
            out.display(),
            shard_glob(out, count)
        );
        return Ok(());
    }
    let files: Vec<PathBuf> = (0..count)
        .map(|index| Shard { index, count }.file(out))
        .collect();
    write_merged(out, parts, &files)?;
    println!(
        "all {count} shards present: wrote {} ({})",
        out.display(),
        plural(grid.job_count(), "job")
    );
    Ok(())
}

/// `pmlab sweep merge`: joins shard files, checking that together they hold every job once.
fn merge_files(out: &Path, shards: &[PathBuf]) -> Result<(), String> {
    // Named files that are not there, before what their names or absence would imply.
    if let Some(p) = shards.iter().find(|p| !p.exists()) {
        return Err(format!("{}: no such file", p.display()));
    }
    // Files still named `.shard-I-of-N` are also checked against their numbers.
    let named: Option<Vec<Shard>> = shards.iter().map(|p| Shard::from_file_name(p)).collect();
    if let Some(named) = &named {
        let count = named[0].count;
        if let Some(s) = named.iter().find(|s| s.count != count) {
            return Err(format!(
                "shard files of different sweeps: -of-{count} and -of-{}",
                s.count
            ));
        }
        for index in 0..count {
            match named.iter().filter(|s| s.index == index).count() {
                0 => {
                    let base = shard::strip_shard_suffix(&shards[0]);
                    return Err(format!(
                        "shard {index} of {count} is missing ({})",
                        Shard { index, count }.file(&base).display()
                    ));
                }
                1 => {}
                _ => return Err(format!("shard {index} of {count} given more than once")),
            }
        }
    }
    // The shards' `.grid` files (see grid_identity), where copied beside them: one sweep's,
    // and the whole grid's job count to check the merge against.
    let identities: Vec<Option<String>> = shards
        .iter()
        .map(|p| std::fs::read_to_string(with_suffix(p, ".grid")).ok())
        .collect();
    let mut total = None;
    // Any shard with a .grid file: every shard must have the same.
    if let Some((i, first)) = identities
        .iter()
        .enumerate()
        .find_map(|(i, id)| id.as_ref().map(|id| (i, id)))
    {
        for (p, id) in shards.iter().zip(&identities) {
            match id {
                Some(id) if id == first => {}
                Some(_) => {
                    return Err(format!(
                        "{}: from another sweep than {} (their .grid files differ)",
                        p.display(),
                        shards[i].display()
                    ))
                }
                None => {
                    return Err(format!(
                        "{}: no {} beside it, though {} has one",
                        p.display(),
                        with_suffix(p, ".grid").display(),
                        shards[i].display()
                    ))
                }
            }
        }
        total = identity_jobs(first);
    } else {
        let note = "note: no .grid files beside the shard files: whether they hold the whole \
                    grid, and are of one sweep's inputs, is not checked (copy \
                    FILE.csv.shard-I-of-N.grid too)";
        // On stderr when the CSV may be going to standard output.
        match crate::atomic_file::in_device_tree(out) {
            false => println!("{note}"),
            true => eprintln!("{note}"),
        }
    }
    let mut parts = Vec::with_capacity(shards.len());
    for (i, path) in shards.iter().enumerate() {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{origin}: {e}"))?;
        let t = Table::parse(&text, &origin)?;
        if let Some(s) = named.as_ref().map(|n| n[i]) {
            if let Some(r) = t.rows.iter().find(|r| !s.owns(r.job)) {
                return Err(format!(
                    "{origin}: holds job {}, which is not in shard {} of {}",
                    r.job, s.index, s.count
                ));
            }
        }
        parts.push((origin, t));
    }
    if let Some(total) = total {
        let have: usize = parts.iter().map(|(_, t)| t.rows.len()).sum();
        if have != total {
            return Err(format!(
                "the shards hold {have} jobs, their sweep has {total}: a shard file is missing \
                 or was cut short"
            ));
        }
    }
    let jobs = write_merged(out, parts, shards)?;
    let summary = format!(
        "wrote {} ({} from {})",
        out.display(),
        plural(jobs, "job"),
        plural(shards.len(), "shard file")
    );
    // On stderr when the CSV may be going to standard output.
    match crate::atomic_file::in_device_tree(out) {
        false => println!("{summary}"),
        true => eprintln!("{summary}; host timing not written (no file beside it)"),
    }
    Ok(())
}

/// Merges `parts` into `out` (and the shards' host files into `out.host.csv` when every shard
/// has one); returns the number of jobs.
fn write_merged(
    out: &Path,
    parts: Vec<(String, Table)>,
    files: &[PathBuf],
) -> Result<usize, String> {
    let merged = Table::merge(parts)?;
    let host: Option<Vec<(String, String)>> = files
        .iter()
        .map(|f| {
            let h = with_suffix(f, ".host.csv");
            let text = std::fs::read_to_string(&h).ok()?;
            Some((h.display().to_string(), text))
        })
        .collect();
    // Host timing is a by-product: a missing or odd host file costs only the timing file.
    let host_text = host
        .filter(|_| !crate::atomic_file::in_device_tree(out))
        .and_then(|h| table::merge_host_csv(&h).ok());
    // Both outputs are opened before either is written: a host file that cannot be written
    // (a directory of its name) left FILE.csv written and an error.
    let host_path = with_suffix(out, ".host.csv");
    let data = AtomicFile::create(out)?;
    let host_file = match &host_text {
        Some(_) => Some(AtomicFile::create(&host_path)?),
        None => None,
    };
    finish(data, out, &merged.to_csv())?;
    if let (Some(f), Some(text)) = (host_file, host_text) {
        finish(f, &host_path, &text)?;
    }
    Ok(merged.rows.len())
}

/// Writes `text` into `f` (opened for `path`) and puts it in place.
fn finish(mut f: AtomicFile, path: &Path, text: &str) -> Result<(), String> {
    use std::io::Write;
    f.write_all(text.as_bytes())
        .map_err(|e| format!("{}: cannot write: {e}", path.display()))?;
    f.commit()
}

/// `n thing` or `n things`.
fn plural(n: usize, thing: &str) -> String {
    format!("{n} {thing}{}", if n == 1 { "" } else { "s" })
}

/// `OUT.shard-*-of-N`, for messages.
fn shard_glob(out: &Path, count: usize) -> String {
    with_suffix(out, &format!(".shard-*-of-{count}"))
        .display()
        .to_string()
}
