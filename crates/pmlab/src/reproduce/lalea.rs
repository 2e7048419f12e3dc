//! Reproduction section "lalea": the LALEA/BLOM paper's headline experiments on the full
//! system. The six hardware-transaction workloads run with 4 threads under the `nvm-lalea`
//! preset (Table I) with each logging scheme, under page interleaving (the paper's default)
//! and cache-line interleaving (its Fig. 7).

use crate::report::svg::BarChart;
use crate::report::{write_file, Table};
use crate::simulate::run_generated;
use pmsim::SimConfig;
use pmwork::Workload;
use std::path::Path;

/// Schemes run; REDU is the baseline of every ratio.
const SCHEMES: [&str; 4] = ["redu", "lalea", "blom", "lalea+blom"];

/// The paper's averages (Lu et al., Sec. IV; REFERENCE.md), by (metric, scheme), in percent:
/// throughput gain over REDU, log-entry persistence latency and commit latency reduction
/// against REDU, throughput gain over REDU under cache-line interleaving.
const PAPER: [(&str, &str, f64); 10] = [
    ("throughput_over_redu", "lalea", 54.04),
    ("throughput_over_redu", "blom", 17.16),
    ("throughput_over_redu", "lalea+blom", 56.62),
    ("log_persist_latency_reduction", "lalea", 92.51),
    ("commit_latency_reduction", "lalea", 86.55),
    ("commit_latency_reduction", "blom", 28.74),
    ("commit_latency_reduction", "lalea+blom", 88.74),
    ("throughput_over_redu_line_interleaving", "lalea", 17.01),
    ("throughput_over_redu_line_interleaving", "blom", 0.99),
    (
        "throughput_over_redu_line_interleaving",
        "lalea+blom",
        24.81,
    ),
];

/// One run's figures.
#[derive(Clone, Copy, Default)]
struct Run {
    tx_per_s: f64,
    entry_ns: f64,
    commit_ns: f64,
}

fn run_one(
    w: &'static dyn Workload,
    scheme: &str,
    line_mapping: bool,
    ops: u64,
) -> Result<Run, String> {
    let mut cfg = SimConfig::preset("nvm-lalea").map_err(|e| e.to_string())?;
    let mut sets = vec![format!("controller.logging={scheme}")];
    if line_mapping {
        sets.push("device.mapping=cache-line".into());
    }
    cfg = cfg.with_overrides(&sets).map_err(|e| e.to_string())?;
    let mut p = w.info().default_params(1);
    p.ops = ops;
    p.threads = 4;
    let o = run_generated(&cfg, w, &p, None, |_| {})?;
    let s = &o.stats;
    let txs = s.counter("cpu.tx_ends");
    let mean_ns = |name: &str| s.histogram(name).map_or(0.0, |h| h.mean() / 1e3);
    Ok(Run {
        tx_per_s: txs as f64 / (o.sim_time as f64 * 1e-12),
        entry_ns: mean_ns("logging.entry_persist_latency_ps"),
        commit_ns: mean_ns("logging.commit_latency_ps"),
    })
}

fn geomean(v: &[f64]) -> f64 {
    if v.is_empty() || v.iter().any(|x| *x <= 0.0) {
        return f64::NAN;
    }
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

/// Runs the section, writing `summary.csv`, SVG charts and `section.md` under `out/lalea`.
pub fn run(out: &Path, quick: bool) -> Result<(), String> {
    let dir = out.join("lalea");
    let ops = if quick { 400 } else { 4000 };
    let mut summary = Table::new(&["metric", "workload", "scheme", "value"]);
    // [mapping][scheme][workload]
    // The paper's workloads (Sec. IV-A): pmwork's LALEA suite.
    let workloads = pmwork::suite(pmwork::Suite::Lalea);
    let names: Vec<&str> = workloads.iter().map(|w| w.info().name).collect();
    let mut runs = vec![vec![vec![Run::default(); names.len()]; SCHEMES.len()]; 2];
    for (wi, &w) in workloads.iter().enumerate() {
        eprintln!("  lalea: {}", names[wi]);
        for (m, line) in [false, true].into_iter().enumerate() {
            for (si, scheme) in SCHEMES.iter().enumerate() {
                runs[m][si][wi] = run_one(w, scheme, line, ops)?;
            }
        }
    }
    // Ratios against REDU, per workload; geomeans over workloads.
    let mut geo: Vec<(String, String, f64)> = Vec::new();
    let mut thr_series = Vec::new();
    for (si, scheme) in SCHEMES.iter().enumerate() {
        let mut cols: [Vec<f64>; 5] = Default::default();
        for wi in 0..names.len() {
            let (r, b) = (runs[0][si][wi], runs[0][0][wi]);
            let (rl, bl) = (runs[1][si][wi], runs[1][0][wi]);
            let vals = [
                ("throughput_over_redu", r.tx_per_s / b.tx_per_s),
                ("log_persist_latency_ns", r.entry_ns),
                ("commit_latency_ns", r.commit_ns),
                (
                    "throughput_over_redu_line_interleaving",
                    rl.tx_per_s / bl.tx_per_s,
                ),
                ("tx_per_s", r.tx_per_s),
            ];
            for (k, (metric, v)) in vals.iter().enumerate() {
                summary.push(vec![
                    metric.to_string(),
                    names[wi].into(),
                    scheme.to_string(),
                    format!("{v:.4}"),
                ]);
                cols[k].push(*v);
            }
        }
        thr_series.push((scheme.to_string(), cols[0].clone()));
        for (k, metric) in [
            "throughput_over_redu",
            "log_persist_latency_ns",
            "commit_latency_ns",
            "throughput_over_redu_line_interleaving",
            "tx_per_s",
        ]
        .iter()
        .enumerate()
        {
            let g = geomean(&cols[k]);
            summary.push(vec![
                metric.to_string(),
                "geomean".into(),
                scheme.to_string(),
                format!("{g:.4}"),
            ]);
            geo.push((metric.to_string(), scheme.to_string(), g));
        }
    }
    let g = |metric: &str, scheme: &str| {
        geo.iter()
            .find(|(m, s, _)| m == metric && s == scheme)
            .map_or(f64::NAN, |x| x.2)
    };
    // The paper's figures beside ours: gains in percent over REDU, reductions in percent.
    let mut cmp = Table::new(&["metric", "scheme", "paper_pct", "pmlab_pct", "pmlab/paper"]);
    for (metric, scheme, paper) in PAPER.iter() {
        let ours = match *metric {
            "throughput_over_redu" | "throughput_over_redu_line_interleaving" => {
                100.0 * (g(metric, scheme) - 1.0)
            }
            "log_persist_latency_reduction" => {
                100.0
                    * (1.0
                        - g("log_persist_latency_ns", scheme) / g("log_persist_latency_ns", "redu"))
            }
            _ => 100.0 * (1.0 - g("commit_latency_ns", scheme) / g("commit_latency_ns", "redu")),
        };
        cmp.push(vec![
            metric.to_string(),
            scheme.to_string(),
            format!("{paper:.2}"),
            format!("{ours:.2}"),
            format!("{:.2}", ours / paper),
        ]);
    }
    let chart = BarChart {
        title: "Transaction throughput over REDU (nvm-lalea, 4 threads, page interleaving)".into(),
        y_label: "x REDU".into(),
        categories: names.iter().map(|s| s.to_string()).collect(),
        series: thr_series,
    };
    write_file(&dir, "throughput_over_redu.svg", &chart.to_svg())?;
    write_file(&dir, "summary.csv", &summary.to_csv())?;
    write_file(&dir, "paper_vs_pmlab.csv", &cmp.to_csv())?;
    let md = format!(
        "## LALEA / BLOM: hardware logging\n\n\
         Command: `pmlab reproduce{q} --only lalea`. The six hardware-transaction workloads \
         (pmwork `btree-hw` ... `tatp-hw`, {ops} operations, 4 threads, seed 1) on the \
         `nvm-lalea` preset (LALEA Table I: 4 cores at 2 GHz, 1 channel x 8 banks, 16-entry ADR \
         WPQ, 48/300 ns NVM) under each logging scheme, once with page interleaving (the \
         paper's default) and once with cache-line interleaving (`device.mapping = \
         cache-line`, the paper's Fig. 7). Throughput is committed transactions per second of \
         simulated time; log-entry persistence latency runs from an entry leaving the core's \
         log buffer to its acknowledgement; commit latency from `TxEnd` to the commit. One run \
         per point: the simulator is deterministic for a fixed seed, so there is no run-to-run \
         spread to report.\n\n\
         Not reproduced yet: LAD and LALEA-LAD (not implemented), the per-bank load \
         imbalance figure.\n\n\
         ![throughput over REDU](lalea/throughput_over_redu.svg)\n\n\
         ### Geometric means beside the paper's averages\n\n{}\n\
         Per-workload figures: `summary.csv` (rows `metric, workload, scheme, value`, plus \
         `geomean` rows); this table: `paper_vs_pmlab.csv`. `docs/validation.md` discusses the \
         gaps.\n",
        cmp.to_markdown(),
        q = if quick { " --quick" } else { "" },
    );
    write_file(&dir, "section.md", &md)?;
    write_file(
        &dir,
        "headline.md",
        &format!(
            "* **LALEA/BLOM**: over REDU, geomean throughput {:+.1}% LALEA, {:+.1}% BLOM, \
             {:+.1}% LALEA+BLOM (paper +54.04%, +17.16%, +56.62%); six `-hw` workloads, \
             4 threads, `nvm-lalea`.\n",
            100.0 * (g("throughput_over_redu", "lalea") - 1.0),
            100.0 * (g("throughput_over_redu", "blom") - 1.0),
            100.0 * (g("throughput_over_redu", "lalea+blom") - 1.0),
        ),
    )?;
    Ok(())
}
