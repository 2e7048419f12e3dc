//! `pmlab crash`: run a workload on the full system, cut it at many power-failure points,
//! recover each crash image with the workload's own recovery and check its oracle.

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use pmsim::fast_hash::FastMap;
use pmsim::pmtrace::{Op, TraceEvent};
use pmsim::time::Ps;
use pmsim::{SimConfig, System, SystemError, SNAPSHOT_EVERY};
use pmwork::{CommitLog, CrashImage, Fault, GenOptions, Params, Workload};
use std::path::PathBuf;
use std::sync::Mutex;

/// Crash points when `--points` is not given.
const DEFAULT_POINTS: usize = 1000;

/// Arguments of `pmlab crash`.
#[derive(Args)]
pub struct CrashArgs {
    /// Config file (TOML) or preset name.
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// Workload name (`pmlab workloads` lists them).
    #[arg(long, value_name = "NAME")]
    workload: String,
    /// Threads (default: the workload's).
    #[arg(long, value_name = "N")]
    threads: Option<u16>,
    /// Operations in total (default 400).
    #[arg(long, value_name = "N", default_value_t = 400)]
    ops: u64,
    /// Seed of the workload's operation stream (and of the random crash points).
    #[arg(long, value_name = "S", default_value_t = 1)]
    seed: u64,
    /// The last N threads are clients of the simulated PM over RDMA (their persists are
    /// `rdma_pwrite`s, as with `pmlab sim`'s workload key `remote=`): the oracle reads their
    /// data in the server's crash image.
    #[arg(long, value_name = "N", default_value_t = 0)]
    remote: u16,
    /// Bytes of each value the workload's map stores (hash maps only), as in `pmlab sim`.
    #[arg(long, value_name = "BYTES", default_value_t = 8)]
    value_bytes: u32,
    /// Crash points: half at fence completions (every k-th fence, k chosen so they spread over
    /// the whole run; alternately at and just before the fence), the rest at random times, and
    /// the last at the end of the run. At most 1000000; default 1000.
    #[arg(long, value_name = "N", conflicts_with = "at_ps",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    points: Option<usize>,
    /// Replay a single crash point (picoseconds, at most the run's end), e.g. one a failing run
    /// printed.
    #[arg(long, value_name = "PS")]
    at_ps: Option<u64>,
    /// Override a config key (repeatable), as in `pmlab sim`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Switch on a deliberate bug in the programming library, to see the oracle catch it
    /// (`skip-log-fence`: the undo log drops the fence between logging and updating).
    #[arg(long, value_name = "FAULT")]
    fault: Option<String>,
    /// Fail unless the uncut run's counter NAME (as `pmlab sim --json` names it) is above zero
    /// (repeatable): shows that the crash points cut through the path it counts, e.g.
    /// `logging.absorbed_writebacks` for a logging scheme's no-steal write-backs.
    #[arg(long = "require-counter", value_name = "NAME")]
    require_counters: Vec<String>,
    /// Skip the reference-model pass. By default, after the simulator's crash points, the same
    /// trace is also cut under the reference x86 persistence model (`pmwork::persist_model`:
    /// at a cut any line may hold any version from its last flushed-and-fenced one to its
    /// latest), about one image per simulator point: a missing fence between two flushes of
    /// one thread is a bug on any x86 machine even where the simulated memory system happens
    /// to persist that thread's write-backs in program order, so that no simulator point can
    /// tell. Not with `--at-ps` or `--remote`.
    #[arg(long)]
    no_reference: bool,
    /// Simulate each crash point from the start of the trace (a run of its own per point, as
    /// `--at-ps` does), instead of running the trace once and finishing each point's run from a
    /// snapshot of it taken shortly before the point. The results are the same (the snapshots
    /// are exact; `cargo test -p pmsim --test fork` compares the two); this is the slow check
    /// of that.
    #[arg(long)]
    rerun: bool,
    /// Worker threads (default: available cores; at most 1024). Without `--rerun` each thread
    /// runs the whole trace for its share of the points and holds three copies of the system
    /// (its run, a snapshot, a cut run): more threads than cores only cost time and memory.
    #[arg(long, value_name = "J",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024))]
    jobs: Option<usize>,
}

/// A crash point and why it was chosen.
#[derive(Clone, Copy)]
struct Point {
    time: Ps,
    why: Why,
}

#[derive(Clone, Copy)]
enum Why {
    Random,
    AtFence { thread: u16, index: usize },
    BeforeFence { thread: u16, index: usize },
    End,
    Given,
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Why::Random => f.write_str("random point"),
            Why::AtFence { thread, index } => {
                write!(f, "completion of fence #{index} (thread {thread})")
            }
            Why::BeforeFence { thread, index } => {
                write!(f, "1 ps before fence #{index} completes (thread {thread})")
            }
            Why::End => f.write_str("end of the run"),
            Why::Given => f.write_str("--at-ps"),
        }
    }
}

fn parse_fault(s: &str) -> Result<Fault, String> {
    match s {
        "skip-log-fence" => Ok(Fault::SkipLogFence),
        _ => Err(format!(
            "--fault {s}: unknown fault (known: skip-log-fence)"
        )),
    }
}

/// Runs `pmlab crash`.
pub fn run(a: CrashArgs) -> Result<(), String> {
    let cfg = SimConfig::load(&a.config)
        .and_then(|c| c.with_overrides(&a.sets))
        .map_err(|e| e.to_string())?;
    if cfg.system.model != pmsim::config::SystemModel::Full {
        return Err(
            "pmlab crash runs the full system (caches hold what is not yet persistent): \
             system.model = \"memory\" does not apply"
                .into(),
        );
    }
    let w = pmwork::workload(&a.workload)?;
    let info = w.info();
    let mut p: Params = info.default_params(a.seed);
    p.ops = a.ops;
    match a.threads {
        Some(t) => p.threads = t,
        None => crate::cmd_sim::cap_threads(&cfg, &mut p, info.name),
    }
    p.value_bytes = a.value_bytes;
    p.remote_threads = a.remote;
    w.check_params(&p)
        .map_err(|e| format!("--workload {}: {e}", a.workload))?;
    // Before the workload is generated: a thread without a hardware thread failed the run at
    // its first event, after the generation.
    crate::simulate::check_job(
        &cfg,
        crate::simulate::JobInput::Generated { threads: p.threads },
    )?;
    if cfg.device.technology == "dram" {
        return Err(format!(
            "{}'s PM device is DRAM (device.technology = \"dram\"): nothing it \
             holds survives a crash, so no crash image can be checked; choose a persistent-memory \
             preset (pmlab presets)",
            cfg.name
        ));
    }
    let fault = a.fault.as_deref().map(parse_fault).transpose()?;
    if info.model == pmwork::Model::HwTx && cfg.controller.logging == "none" {
        eprintln!(
            "pmlab crash: note: {} relies on hardware logging for atomicity (TxBegin/TxEnd, no \
             software log) and this config has controller.logging = \"none\": crash points \
             inside a transaction are expected to fail (choose a scheme with --set \
             controller.logging=redu, lad, lalea, blom, lalea+blom or lalea-lad)",
            info.name
        );
    }
    let (events, gen) = crate::simulate::generate_in_memory(
        w,
        &p,
        GenOptions {
            record_commits: true,
            fault,
        },
    )?;
    if let Some(e) = events
        .iter()
        .find_map(|ev| crate::simulate::check_pm_window(&cfg, ev).err())
    {
        return Err(format!("workload {}: {e}", info.name));
    }
    let commits = gen
        .commits
        .ok_or("internal: the generator recorded no commits")?;

    // One full run: how long the program takes and when its fences complete.
    let mut full = System::new(&cfg)
        .map_err(|e| e.to_string())?
        .record_persists()
        .record_persist_order();
    let sum = full
        .run(events.iter().copied().map(Ok), |_| {})
        .map_err(|e| e.to_string())?;
    let end = sum.sim_time;
    let stats = full.stats();
    for name in &a.require_counters {
        if stats.counter(name) == 0 {
            // Some counters appear only once above 0 (`cpu.commit_waits`): absent reads as 0.
            return Err(format!(
                "--require-counter {name}: 0 in the uncut run (or no such counter: `pmlab sim \
                 --json` lists them), so no crash point cuts through what it counts"
            ));
        }
    }
    let points = match a.at_ps {
        Some(t) if t > end => {
            return Err(format!(
                "--at-ps {t}: past the end of the run ({end} ps), where nothing is cut; give a \
                 time up to {end}"
            ))
        }
        Some(t) => vec![Point {
            time: t,
            why: Why::Given,
        }],
        None => choose_points(
            a.points.unwrap_or(DEFAULT_POINTS),
            end,
            full.fence_log(),
            a.seed,
        ),
    };
    // The fence log holds every completed persist wait: fences, and under hardware logging the
    // transaction commits a core waited for.
    let commit_waits = stats.counter("cpu.commit_waits") as usize;
    println!(
        "{} ({}, {} thread(s){}, {} ops{}, seed {}) on {}: {} events, {:.1} us, {} fences{}; {} crash points",
        info.name,
        info.model,
        p.threads,
        match p.remote_threads {
            0 => String::new(),
            n => format!(", the last {n} RDMA clients"),
        },
        p.ops,
        match p.value_bytes {
            8 => String::new(),
            n => format!(", {n}-byte values"),
        },
        p.seed,
        cfg.name,
        events.len(),
        end as f64 / 1e6,
        full.fence_log().len().saturating_sub(commit_waits),
        match commit_waits {
            0 => String::new(),
            n => format!(" and {n} hardware-transaction commits"),
        },
        points.len()
    );

    // Under a buffered ordering the uncut run's persist order goes through the independent
    // checker: a crash run is a prefix of this deterministic run, so a persist made durable too
    // early anywhere is caught here even where no oracle sees its effect.
    // A violation is reported after the crash points, which run all the same: whether the
    // workloads' oracles see it too is worth knowing.
    let mut uncut_violation = None;
    if let Some(log) = full.persist_order().filter(|l| !l.issued.is_empty()) {
        match pmsim::persist_check::check(log, true) {
            Ok(c) => println!(
                "persist order checked: {} persists in {} epochs, {} inter-thread dependencies",
                c.persists, c.epochs, c.dependencies
            ),
            Err(e) => {
                println!("persist order violated: {e}");
                uncut_violation = Some(format!("persist order of the uncut run: {e}"));
            }
        }
    }
    // Every PM write of the uncut run, ordered or not (in-place updates, evictions), lands in
    // the order its line's writes left the caches: one landing late puts older bytes back.
    if let Some(log) = full.persist_order() {
        match pmsim::persist_check::check_line_order(log, true) {
            Ok(lines) => println!(
                "line order checked: {} PM writes to {lines} lines",
                log.line_writes.len()
            ),
            Err(e) => {
                println!("line order violated: {e}");
                if uncut_violation.is_none() {
                    uncut_violation = Some(format!("line order of the uncut run: {e}"));
                }
            }
        }
    }
    // Hardware logging: by the end of the uncut run every transaction's log is reclaimed. A log
    // the engine never frees in order (its register stuck) goes unseen at every crash point of a
    // run too short for the log to wrap, and replays stale records over reused lines once it does.
    let unreclaimed = stats.counter("logging.logs_unreclaimed");
    if unreclaimed > 0 && uncut_violation.is_none() {
        println!("logs never reclaimed: {unreclaimed} transaction(s)");
        uncut_violation = Some(format!(
            "the uncut run ended with the logs of {unreclaimed} transaction(s) not reclaimed \
             (the engine's register did not pass them)"
        ));
    }
    for name in &a.require_counters {
        println!("{name}: {}", stats.counter(name));
    }

    let promises = ClientPromises::new(
        &events,
        &p,
        &cfg.network.persistence,
        cfg.controller.logging == "none",
    );

    let bar = ProgressBar::new(points.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} crash points {elapsed}")
            .expect("static template"),
    );
    let failures: Mutex<Vec<(usize, String)>> = Mutex::new(Vec::new());
    let jobs = a
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, points.len().max(1));
    let judge = |i: usize, sys: &System| {
        if let Err(msg) = check_cut(sys, w, &p, &commits, &promises) {
            failures.lock().expect("lock").push((i, msg));
        }
        bar.inc(1);
    };
    let ran = if a.rerun || a.at_ps.is_some() {
        rerun_points(&cfg, &events, &points, jobs, &judge)
    } else {
        fork_points(&cfg, &events, &points, jobs, &judge)
    };
    bar.finish_and_clear();
    ran?;
    let mut failures = failures.into_inner().expect("lock");
    failures.sort_by_key(|(i, _)| (points[*i].time, *i));
    println!(
        "passed {} / {}, failed {}",
        points.len() - failures.len(),
        points.len(),
        failures.len()
    );
    let reference = if a.no_reference || a.at_ps.is_some() {
        None
    } else if p.remote_threads != 0 {
        println!("reference model: skipped (it does not model this run's RDMA clients)");
        None
    } else {
        reference_pass(w, &p, points.len(), a.seed, fault)?
    };
    if let Some((i, msg)) = failures.first() {
        let pt = points[*i];
        let mut replay = format!(
            "pmlab crash --config {} --workload {} --threads {} --ops {} --seed {} --at-ps {}",
            a.config.display(),
            a.workload,
            p.threads,
            p.ops,
            p.seed,
            pt.time
        );
        if p.value_bytes != 8 {
            replay.push_str(&format!(" --value-bytes {}", p.value_bytes));
        }
        if p.remote_threads != 0 {
            replay.push_str(&format!(" --remote {}", p.remote_threads));
        }
        for s in &a.sets {
            replay.push_str(&format!(" --set {s}"));
        }
        if let Some(f) = &a.fault {
            replay.push_str(&format!(" --fault {f}"));
        }
        return Err(format!(
            "first failing crash point: {:.3} ns ({}): {msg}\n  replay it: {replay}{}",
            pt.time as f64 / 1e3,
            pt.why,
            uncut_violation.map_or(String::new(), |v| format!("\n  {v}"))
        ));
    }
    if let Some(r) = reference {
        return Err(format!(
            "every simulator crash point passed, but the reference model rejected {r}{}",
            uncut_violation.map_or(String::new(), |v| format!("\n  {v}"))
        ));
    }
    match uncut_violation {
        Some(v) => Err(format!("{v} (every crash point passed its oracle)")),
        None => Ok(()),
    }
}

/// The reference-model pass (see `--no-reference`): about `points` images of the same trace
/// under the x86 persistence model. Returns the first rejection, described, if any.
fn reference_pass(
    w: &dyn Workload,
    p: &Params,
    points: usize,
    seed: u64,
    fault: Option<Fault>,
) -> Result<Option<String>, String> {
    let cfg = pmwork::crashtest::SweepConfig {
        // About 4 images per cut point: 2.25 cut points per cut, as many again just before
        // fences.
        cuts: points.div_ceil(18).max(4),
        before_fence_cuts: points.div_ceil(8).max(4),
        random_images: 2,
        seed,
        fault,
        ..Default::default()
    };
    let r = pmwork::crashtest::sweep(w, p, &cfg)?;
    println!(
        "reference model (x86 persistency): passed {} / {} images, failed {}",
        r.images - r.failures.len(),
        r.images,
        r.failures.len()
    );
    Ok(r.first_failure())
}

/// Crash points: half at fence completions (every k-th fence, alternately at and 1 ps before
/// the completion), the rest uniformly random in (0, end], the last one at the end.
fn choose_points(n: usize, end: Ps, fences: &[(Ps, u16)], seed: u64) -> Vec<Point> {
    let mut out = Vec::with_capacity(n);
    let at_fences = if fences.is_empty() { 0 } else { n / 2 };
    if at_fences > 0 {
        let k = fences.len().div_ceil(at_fences).max(1);
        let mut per_thread: std::collections::HashMap<u16, usize> = Default::default();
        let mut numbered = Vec::with_capacity(fences.len());
        for &(t, th) in fences {
            let c = per_thread.entry(th).or_insert(0);
            numbered.push((t, th, *c));
            *c += 1;
        }
        for (j, &(t, thread, index)) in numbered.iter().step_by(k).enumerate() {
            out.push(if j % 2 == 0 || t == 0 {
                Point {
                    time: t,
                    why: Why::AtFence { thread, index },
                }
            } else {
                Point {
                    time: t - 1,
                    why: Why::BeforeFence { thread, index },
                }
            });
        }
    }
    let mut x = seed ^ 0x9e37_79b9_7f4a_7c15;
    // The last point is the end of the run: the complete image must pass too.
    while out.len() + 1 < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.push(Point {
            time: 1 + x % end.max(1),
            why: Why::Random,
        });
    }
    if out.len() < n {
        out.push(Point {
            time: end,
            why: Why::End,
        });
    }
    out
}

/// What the network persistence mode promises an RDMA client (the last `remote_threads`
/// threads) when one of its fences completes, written down here from the modes' definitions
/// (PPO Fig. 4) rather than asked of the model under test: under `sync` every fence returns
/// once the thread's remote writes before it are durable on the server, under `bsp` every full
/// fence (a transaction's end). A client whose fence returned early (a model that stops waiting
/// for the acknowledgement) then has events the oracle counts as complete whose data the
/// server's image lacks.
///
/// The workload's oracle judges the client by meaning (its recovered data structure); the
/// promise is also checked byte by byte: every byte a client's `RdmaPwrite` wrote last in the
/// whole trace, before a fence that completed, must be in the server's image: only final
/// values, so a byte the trace writes again later, by the client or anyone, is left to the
/// oracle, even at points before that later write. (A mutation audit's server that
/// acknowledged a client's write one write early under `bsp` passed 1000 of 1000 points of the
/// oracle at 100 ns links; the byte check failed some.) Under hardware
/// logging the server's recovery may roll a client's bytes back with their transaction, so
/// only the oracle judges there.
struct ClientPromises {
    /// Per thread, the thread's event counts just after each promising fence, in order (empty
    /// for local threads and modes that promise nothing).
    after_fence: Vec<Vec<u64>>,
    /// Per client thread, (the thread's event count at, address, value) of each byte one of
    /// its `RdmaPwrite`s wrote last in the trace, in order; empty where bytes are not checked.
    final_bytes: Vec<Vec<(u64, u64, u8)>>,
}

impl ClientPromises {
    fn new(events: &[TraceEvent], p: &Params, mode: &str, check_bytes: bool) -> ClientPromises {
        let threads = p.threads as usize;
        let first_client = threads - (p.remote_threads as usize).min(threads);
        let promises = |op: Op| {
            matches!(
                (mode, op),
                ("sync", Op::Sfence | Op::Mfence) | ("bsp", Op::Mfence)
            )
        };
        // Bytes are checked for a mode that promises anything (every such mode promises at a
        // full fence), with clients; event indices fit the table's u32 (crash traces are far
        // smaller).
        let check_bytes = check_bytes
            && promises(Op::Mfence)
            && first_client < threads
            && events.len() < u32::MAX as usize;
        // The last writer (event index + 1; 0: none) of every byte written in the trace, per
        // 64-byte line.
        let mut last: FastMap<u64, [u32; 64]> = FastMap::default();
        if check_bytes {
            for (i, ev) in events.iter().enumerate() {
                if ev.op.writes_memory() {
                    let n = u64::from(ev.size.max(u16::from(ev.value_len)));
                    for a in ev.addr..ev.addr + n {
                        last.entry(a & !63).or_insert([0; 64])[(a & 63) as usize] = i as u32 + 1;
                    }
                }
            }
        }
        let mut after_fence = vec![Vec::new(); threads];
        let mut final_bytes = vec![Vec::new(); threads];
        let mut seen = vec![0u64; threads];
        for (i, ev) in events.iter().enumerate() {
            let t = ev.thread as usize;
            if t >= threads {
                continue;
            }
            seen[t] += 1;
            if t < first_client {
                continue;
            }
            if promises(ev.op) {
                after_fence[t].push(seen[t]);
            }
            if check_bytes && ev.op == Op::RdmaPwrite {
                for (b, &v) in ev.value[..ev.value_len as usize].iter().enumerate() {
                    let a = ev.addr + b as u64;
                    if last.get(&(a & !63)).map(|l| l[(a & 63) as usize]) == Some(i as u32 + 1) {
                        final_bytes[t].push((seen[t], a, v));
                    }
                }
            }
        }
        ClientPromises {
            after_fence,
            final_bytes,
        }
    }

    /// The first byte thread `t`'s completed fences promised durable (see the type) that
    /// `image` lacks, described, given `retired` events of the thread retired.
    fn missing_byte(&self, t: usize, retired: u64, image: &CrashImage) -> Option<String> {
        let promised = self.promised(t, retired);
        self.final_bytes[t]
            .iter()
            .take_while(|&&(e, _, _)| e <= promised)
            .find_map(|&(e, a, v)| {
                let got = image.line(a & !63).map_or(0, |l| l[(a & 63) as usize]);
                (got != v).then(|| {
                    format!(
                        "RDMA client thread {t}: byte {a:#x} of its event {e}, which a completed \
                         fence promised durable, is {got:#04x} in the server's image, not {v:#04x}"
                    )
                })
            })
    }

    /// Events of thread `t` its completed fences promise durable, given `retired` events retired.
    fn promised(&self, t: usize, retired: u64) -> u64 {
        let f = &self.after_fence[t];
        match f.partition_point(|&n| n <= retired) {
            0 => 0,
            k => f[k - 1],
        }
    }
}

/// Each point's run simulated from the start of the trace.
fn rerun_points(
    cfg: &SimConfig,
    events: &[TraceEvent],
    points: &[Point],
    jobs: usize,
    judge: &(dyn Fn(usize, &System) + Sync),
) -> Result<(), String> {
    in_shares(points, jobs, |share, stopped| {
        for &i in share {
            if stopped() {
                break;
            }
            let mut sys = System::new(cfg)
                .map_err(|e| e.to_string())?
                .crash_at(points[i].time);
            sys.run(events.iter().copied().map(Ok), |_| {})
                .map_err(|e| e.to_string())?;
            judge(i, &sys);
        }
        Ok(())
    })
}

/// Each point's run finished from a snapshot of one run of the trace
/// ([`System::run_to_crash_points`]), which each thread makes for its share of the points.
fn fork_points(
    cfg: &SimConfig,
    events: &[TraceEvent],
    points: &[Point],
    jobs: usize,
    judge: &(dyn Fn(usize, &System) + Sync),
) -> Result<(), String> {
    in_shares(points, jobs, |share, stopped| {
        let times: Vec<Ps> = share.iter().map(|&i| points[i].time).collect();
        let sys = System::new(cfg).map_err(|e| e.to_string())?;
        sys.run_to_crash_points(
            events.iter().copied().map(Ok),
            &times,
            SNAPSHOT_EVERY,
            |k, cut| {
                if stopped() {
                    // Another share failed: the run ends with its error.
                    return Err(SystemError::Internal("stopped".into()));
                }
                judge(share[k], &cut);
                Ok(())
            },
        )
        .map_err(|e| e.to_string())
    })
}

/// Runs `work` on the points, in time order, dealt round-robin to `jobs` threads (this one
/// among them; a thread that cannot start, for a thread limit or memory, leaves its share to
/// this one): the threads never wait for each other, and each reuses the memory of its own
/// systems. `work` gets its share and a test that says another share failed; the first error
/// is returned.
fn in_shares<W>(points: &[Point], jobs: usize, work: W) -> Result<(), String>
where
    W: Fn(&[usize], &dyn Fn() -> bool) -> Result<(), String> + Sync,
{
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by_key(|&i| (points[i].time, i));
    let shares: Vec<Vec<usize>> = (0..jobs)
        .map(|j| order.iter().copied().skip(j).step_by(jobs).collect())
        .collect();
    let error: Mutex<Option<String>> = Mutex::new(None);
    let stopped = || error.lock().expect("lock").is_some();
    let run = |share: &[usize]| {
        if let Err(e) = work(share, &stopped) {
            error.lock().expect("lock").get_or_insert(e);
        }
    };
    std::thread::scope(|s| {
        let mut left = Vec::new();
        for share in &shares[1..] {
            if std::thread::Builder::new()
                .spawn_scoped(s, || run(share))
                .is_err()
            {
                left.push(share);
            }
        }
        run(&shares[0]);
        for share in left {
            run(share);
        }
    });
    match error.into_inner().expect("lock") {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Judges a run cut at a crash point: its image after the logging engine's recovery against
/// the workload's oracle and the RDMA clients' promises; the failure, described.
fn check_cut(
    sys: &System,
    w: &dyn Workload,
    p: &Params,
    commits: &CommitLog,
    promises: &ClientPromises,
) -> Result<(), String> {
    // What survives the failure, after the logging engine's recovery (the durable image
    // itself when there is no hardware logging).
    let img = sys.recovered_image();
    let image = CrashImage::from_lines(
        img.line_addrs()
            .into_iter()
            .filter_map(|l| img.line(l).map(|b| (l, *b))),
    );
    // How far each thread got in persistence terms: under a buffered ordering model a thread
    // runs ahead of its persists, and only events whose persists are durable count; an RDMA
    // client also counts what its completed fences promised (ClientPromises).
    let completed: Vec<u64> = (0..p.threads as usize)
        .map(|th| {
            sys.persisted_events(th)
                .max(promises.promised(th, sys.retired_events(th)))
        })
        .collect();
    if let Some(m) = (0..p.threads as usize)
        .find_map(|th| promises.missing_byte(th, sys.retired_events(th), &image))
    {
        return Err(m);
    }
    w.oracle(p, commits, &image, &completed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(threads: u16, remote: u16) -> Params {
        Params {
            ops: 1,
            threads,
            seed: 1,
            remote_threads: remote,
            janus_hints: false,
            value_bytes: 8,
        }
    }

    /// Thread 1 (the client) writes 0x46 at A over RDMA and fences; thread 0 (local) stores
    /// at B later, and the client's second write of B is overwritten by it.
    fn trace() -> Vec<TraceEvent> {
        let (a, b) = (0x1000u64, 0x2000u64);
        vec![
            TraceEvent::store(Op::RdmaPwrite, 1, 1, a, &[0x45], 0),
            TraceEvent::store(Op::RdmaPwrite, 1, 1, a, &[0x46], 0),
            TraceEvent::store(Op::RdmaPwrite, 1, 1, b, &[0x11], 0),
            TraceEvent::marker(Op::Sfence, 1, 2, 0),
            TraceEvent::store(Op::Store, 0, 3, b, &[0x22], 0),
            TraceEvent::store(Op::RdmaPwrite, 1, 1, a + 64, &[0x77], 0),
        ]
    }

    fn image(bytes: &[(u64, u8)]) -> CrashImage {
        let mut img = CrashImage::new();
        for &(a, v) in bytes {
            let mut line = img.line(a & !63).copied().unwrap_or([0; 64]);
            line[(a & 63) as usize] = v;
            img.set_line(a & !63, line);
        }
        img
    }

    #[test]
    fn a_byte_a_completed_fence_promised_must_be_in_the_image() {
        let pr = ClientPromises::new(&trace(), &params(2, 1), "sync", true);
        // Before the fence completed (3 events retired): nothing promised.
        assert_eq!(pr.missing_byte(1, 3, &image(&[])), None);
        // After it: A's last value is promised; B's client write is not (a later store of
        // thread 0 overwrites it), nor the write after the fence.
        let err = pr.missing_byte(1, 5, &image(&[])).expect("A missing");
        assert!(err.contains("0x1000") && err.contains("not 0x46"), "{err}");
        assert!(pr.missing_byte(1, 5, &image(&[(0x1000, 0x45)])).is_some());
        assert_eq!(pr.missing_byte(1, 5, &image(&[(0x1000, 0x46)])), None);
        // A local thread promises nothing; modes that promise nothing check nothing.
        assert_eq!(pr.missing_byte(0, 5, &image(&[])), None);
        let none = ClientPromises::new(&trace(), &params(2, 1), "none", true);
        assert_eq!(none.missing_byte(1, 5, &image(&[])), None);
        // Under bsp only a full fence promises.
        let bsp = ClientPromises::new(&trace(), &params(2, 1), "bsp", true);
        assert_eq!(bsp.missing_byte(1, 5, &image(&[])), None);
        // Bytes not checked (a logging engine's recovery judges the image).
        let off = ClientPromises::new(&trace(), &params(2, 1), "sync", false);
        assert_eq!(off.missing_byte(1, 5, &image(&[])), None);
    }
}
