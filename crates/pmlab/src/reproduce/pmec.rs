//! Reproduction section "pmec": the DIALGA paper's encoding experiments (Figs. 10-16, 18) run
//! on this machine with pmec and ISA-L (the system's libisal.so.2) in the same process on the
//! same pre-filled data, stripes visited in random order.

use crate::report::svg::{LineChart, Series};
use crate::report::{write_file, Table};
use pmec::bench::{self, Axis, BenchConfig, BenchResult, DataPool, Workload};
use pmec::Isa;
use std::path::{Path, PathBuf};

/// One figure's points: (x label, x value, result).
struct Figure {
    id: &'static str,
    title: String,
    x_label: &'static str,
    log2_x: bool,
    /// (series label, x, result)
    points: Vec<(String, f64, BenchResult)>,
    paper: &'static str,
    /// The paper's numbers for the figure, as far as its text gives them.
    paper_ratios: Vec<PaperRatio>,
}

/// A ratio range the paper states for some points of a figure (Sec. 5 text).
struct PaperRatio {
    /// Which points it covers, in words.
    points: &'static str,
    /// Those points: (series label, x).
    applies: fn(&str, f64) -> bool,
    /// DIALGA over what.
    over: &'static str,
    /// The stated range; `lo` None for an "up to" figure.
    lo: Option<f64>,
    hi: f64,
}

/// This machine's last-level cache in MiB (the largest cache level sysfs lists for CPU 0).
fn llc_mib() -> Option<usize> {
    (0..8)
        .filter_map(|i| {
            let s = std::fs::read_to_string(format!(
                "/sys/devices/system/cpu/cpu0/cache/index{i}/size"
            ))
            .ok()?;
            let s = s.trim();
            let (n, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit())?);
            let n: usize = n.parse().ok()?;
            Some(match unit {
                "K" => n >> 10,
                "M" => n,
                "G" => n << 10,
                _ => return None,
            })
        })
        .max()
}

fn base(quick: bool) -> BenchConfig {
    let mut c = BenchConfig::default();
    if quick {
        c.bytes_per_rep = 32 << 20;
        c.reps = 3;
    }
    c
}

fn rs(k: usize, m: usize) -> String {
    format!("RS({},{})", k + m, k)
}

fn add(
    fig: &mut Figure,
    pool: &DataPool,
    cfg: &BenchConfig,
    label: String,
    x: f64,
) -> Result<(), String> {
    let r = bench::run(pool, cfg).map_err(|e| e.to_string())?;
    fig.points.push((label, x, r));
    Ok(())
}

fn figures(pool: &DataPool, quick: bool) -> Result<Vec<Figure>, String> {
    let b = base(quick);
    let mut figs = Vec::new();
    let threads_max = std::thread::available_parallelism().map_or(1, |n| n.get());

    let ks: &[usize] = if quick {
        &[4, 8, 24, 48, 128]
    } else {
        &[4, 8, 16, 24, 32, 48, 64, 96, 128]
    };
    let mut f = Figure {
        id: "fig10",
        title: "Encoding throughput vs data blocks k (m = 4, 1 KiB blocks)".into(),
        x_label: "k",
        log2_x: true,
        points: Vec::new(),
        paper: "DIALGA +53.9-102.0% over the best other library for narrow stripes on Optane PM",
        paper_ratios: vec![
            PaperRatio {
                points: "k < 20",
                applies: |_, k| k < 20.0,
                over: "the best other library",
                lo: Some(1.539),
                hi: 2.020,
            },
            // "At the threshold k = 32 ... DIALGA achieves only a 22.1% performance improvement
            // over ISA-L."
            PaperRatio {
                points: "k = 32",
                applies: |_, k| k == 32.0,
                over: "ISA-L",
                lo: Some(1.221),
                hi: 1.221,
            },
            // Wide stripes (k > 32): "DIALGA, even without decomposing, attained a
            // 193.6-198.9% improvement" (over ISA-L without prefetching, the text's baseline).
            PaperRatio {
                points: "k > 32",
                applies: |_, k| k > 32.0,
                over: "ISA-L",
                lo: Some(2.936),
                hi: 2.989,
            },
        ],
    };
    for r in bench::sweep(pool, &b, Axis::K, ks).map_err(|e| e.to_string())? {
        let k = r.config.k as f64;
        f.points.push(("m=4".into(), k, r));
    }
    figs.push(f);

    let mut f = Figure {
        id: "fig11",
        title: "Encoding throughput vs parity blocks m (1 KiB blocks)".into(),
        x_label: "m",
        log2_x: false,
        points: Vec::new(),
        paper: "DIALGA keeps its lead as m grows; minimal degradation for RS(52,48)",
        // "DIALGA outperforms other methods significantly under different parameters,
        // achieving improvements of 20.1-96.6% over the best alternative strategies."
        paper_ratios: vec![PaperRatio {
            points: "every point",
            applies: |_, _| true,
            over: "the best alternative",
            lo: Some(1.201),
            hi: 1.966,
        }],
    };
    for k in [8usize, 48] {
        for m in [2usize, 4, 6, 8] {
            let c = BenchConfig { k, m, ..b.clone() };
            add(&mut f, pool, &c, format!("k={k}"), m as f64)?;
        }
    }
    figs.push(f);

    let blocks: &[usize] = if quick {
        &[256, 1024, 4096]
    } else {
        &[256, 512, 1024, 2048, 4096, 8192]
    };
    let mut f = Figure {
        id: "fig12",
        title: "Encoding throughput vs block size".into(),
        x_label: "block bytes",
        log2_x: true,
        points: Vec::new(),
        paper:
            "DIALGA +63.8-180.5% over the best alternative for blocks <= 1 KiB; small gain at 4 KiB",
        paper_ratios: vec![PaperRatio {
            points: "blocks <= 1 KiB",
            applies: |_, b| b <= 1024.0,
            over: "the best alternative",
            lo: Some(1.638),
            hi: 2.805,
        }],
    };
    for (k, m) in [(8usize, 4usize), (24, 4)] {
        for &blk in blocks {
            let c = BenchConfig {
                k,
                m,
                block: blk,
                ..b.clone()
            };
            add(&mut f, pool, &c, rs(k, m), blk as f64)?;
        }
    }
    figs.push(f);

    let mut f = Figure {
        id: "fig13",
        title: format!("Encoding throughput vs threads (1 KiB blocks, {threads_max} cores here)"),
        x_label: "threads",
        log2_x: false,
        points: Vec::new(),
        paper: "RS(28,24): +50.0% peak over ISA-L; RS(52,48): up to +182.8% (16+ threads on PM)",
        // "achieving up to 182.8% better performance compared to ISA-L" (RS(52,48)); the
        // RS(28,24) "50.0% higher peak" compares peaks over the thread counts, not points.
        paper_ratios: vec![PaperRatio {
            points: "RS(52,48), every thread count",
            applies: |label, _| label == "RS(52,48)",
            over: "ISA-L",
            lo: None,
            hi: 2.828,
        }],
    };
    for (k, m) in [(24usize, 4usize), (48, 4)] {
        for t in 1..=threads_max.max(2) {
            let c = BenchConfig {
                k,
                m,
                threads: t,
                ..b.clone()
            };
            add(&mut f, pool, &c, rs(k, m), t as f64)?;
        }
    }
    figs.push(f);

    let mut f = Figure {
        id: "fig14",
        title: "Decoding throughput (m erasures, 1 KiB blocks)".into(),
        x_label: "k",
        log2_x: true,
        points: Vec::new(),
        paper: "table-lookup decoders (ISA-L, DIALGA) stay stable; DIALGA decodes 76.1-88.1% \
                above ISA-L",
        // Sec. 5.4: "DIALGA achieves decoding throughput that is ... 76.1-88.1% higher than
        // ISA-L".
        paper_ratios: vec![PaperRatio {
            points: "every point",
            applies: |_, _| true,
            over: "ISA-L",
            lo: Some(1.761),
            hi: 1.881,
        }],
    };
    for k in [8usize, 24, 48] {
        let c = BenchConfig {
            k,
            m: 4,
            workload: Workload::Decode { erasures: 4 },
            ..b.clone()
        };
        add(&mut f, pool, &c, "4 erasures".into(), k as f64)?;
    }
    figs.push(f);

    let mut f = Figure {
        id: "fig15",
        title: "Encoding throughput by SIMD width (m = 4, 1 KiB)".into(),
        x_label: "k",
        log2_x: true,
        points: Vec::new(),
        paper:
            "AVX256 vs AVX512: ISA-L -12.3-23.6%, DIALGA -24.9-31.1%, still +37.5-104.4% over ISA-L",
        paper_ratios: vec![PaperRatio {
            points: "AVX2 (the paper's AVX256)",
            applies: |label, _| label.starts_with("AVX2"),
            over: "ISA-L",
            lo: Some(1.375),
            hi: 2.044,
        }],
    };
    for (isa, variant, label) in [
        (Isa::Avx2, "avx2", "AVX2 (pmec avx2 / ISA-L avx2)"),
        (
            Isa::Avx512,
            "avx512",
            "AVX-512 (pmec avx512 / ISA-L avx512)",
        ),
    ] {
        if !isa.available() {
            continue;
        }
        for k in [8usize, 24] {
            let c = BenchConfig {
                k,
                isa: Some(isa),
                isal_variant: Some(variant.into()),
                ..b.clone()
            };
            add(&mut f, pool, &c, label.into(), k as f64)?;
        }
    }
    figs.push(f);

    let mut f = Figure {
        id: "fig16",
        title: "LRC(k, m, l) encoding throughput (1 KiB blocks)".into(),
        x_label: "k",
        log2_x: true,
        points: Vec::new(),
        paper: "DIALGA +24.3-32.7% (non-wide) and +35.2-37.8% (wide) over the best other library",
        paper_ratios: vec![PaperRatio {
            points: "every LRC point",
            applies: |_, _| true,
            over: "the best other library",
            lo: Some(1.243),
            hi: 1.378,
        }],
    };
    for (k, m, l) in [(12usize, 2usize, 2usize), (24, 2, 4), (48, 4, 4)] {
        let c = BenchConfig {
            k,
            m,
            workload: Workload::Lrc { l },
            ..b.clone()
        };
        add(&mut f, pool, &c, "LRC".into(), k as f64)?;
    }
    figs.push(f);
    Ok(figs)
}

/// The paper's Fig. 18 steps (Sec. 5.8: "+29.4-48.6%", "+8.6-15.9%", "+18.3-29.3%"): (layer
/// before, layer, the step's range as a ratio).
const FIG18_PAPER_STEPS: [(&str, &str, f64, f64); 3] = [
    ("Vanilla", "+SW", 1.294, 1.486),
    ("+SW", "+HW", 1.086, 1.159),
    ("+HW", "+BF", 1.183, 1.293),
];

/// Each of the paper's Fig. 18 layers against the one before it in this run's medians, with a
/// verdict from the runs (adds, takes away, or the runs overlap) and the paper's step beside
/// it; `layers` are (variant, pmec's measurement).
fn fig18_steps(layers: &[(String, bench::Measurement)]) -> String {
    let layer = |n: &str| layers.iter().find(|(name, _)| name == n).map(|(_, m)| m);
    let steps: Vec<String> = FIG18_PAPER_STEPS
        .iter()
        .filter_map(|&(a, b, lo, hi)| {
            let (x, y) = (layer(a)?, layer(b)?);
            let r = y.gbps / x.gbps;
            let verdict = if !y.apart_from(x) {
                "runs overlap"
            } else if r > 1.0 {
                "adds"
            } else {
                "takes away"
            };
            Some(format!(
                "{b} {r:.2}x {a} ({verdict}; paper {lo:.2}-{hi:.2}x)"
            ))
        })
        .collect();
    if steps.is_empty() {
        "n/a".to_string()
    } else {
        steps.join(", ")
    }
}

/// A headline ratio for the point at `x` of figure `id`. A point several figures measure (the
/// same configuration: RS(12,8) 1 KiB on one thread is in Figs. 10-12) is given as the median
/// of their ratios with their range, not as one figure's: the runs of one figure understate
/// how much the machine moves a ratio, and any one figure's may be the range's end. A lone
/// point keeps its `~` where its runs overlap ISA-L's.
fn headline_ratio(figs: &[Figure], id: &str, x: f64) -> Option<String> {
    let r = figs
        .iter()
        .filter(|f| f.id == id)
        .flat_map(|f| f.points.iter())
        .find(|(_, px, _)| *px == x)
        .map(|(_, _, r)| r)?;
    r.ratio?;
    let same = format!("{:?}", r.config);
    let points: Vec<&BenchResult> = figs
        .iter()
        .flat_map(|f| f.points.iter())
        .filter(|(_, _, o)| format!("{:?}", o.config) == same && o.ratio.is_some())
        .map(|(_, _, o)| o)
        .collect();
    if points.len() < 2 {
        return Some(bench::ratio_text(r));
    }
    let all: Vec<f64> = points.iter().filter_map(|o| o.ratio).collect();
    // Points whose pmec runs overlap ISA-L's (`~` in their figure) are counted in the text.
    let overlapping = points
        .iter()
        .filter(|o| o.isal.as_ref().is_some_and(|i| !o.pmec.apart_from(i)))
        .count();
    let sp = crate::report::Spread::of(&all);
    Some(format!(
        "{:.2}x{} (median of the {} figures measuring it, {:.2}-{:.2}x{})",
        sp.median,
        if overlapping > 0 { " ~" } else { "" },
        all.len(),
        sp.min,
        sp.max,
        if overlapping > 0 {
            format!("; in {overlapping} of them the runs overlap ISA-L's")
        } else {
            String::new()
        }
    ))
}

fn ratio_cell(r: &BenchResult) -> String {
    r.ratio.map_or("n/a".into(), |x| format!("{x:.2}"))
}

/// CSV cells of one side: median, slowest and fastest run (empty when not measured).
fn side_cells(m: Option<&bench::Measurement>) -> [String; 3] {
    match m {
        Some(m) => [
            format!("{:.3}", m.gbps),
            format!("{:.3}", m.min()),
            format!("{:.3}", m.max()),
        ],
        None => [String::new(), String::new(), String::new()],
    }
}

/// One `results.csv` row.
fn csv_row(figure: &str, series: &str, x: &str, r: &BenchResult) -> Vec<String> {
    let [pm, pmin, pmax] = side_cells(Some(&r.pmec));
    let [im, imin, imax] = side_cells(r.isal.as_ref());
    vec![
        figure.into(),
        series.into(),
        x.into(),
        r.config.label(),
        pm,
        pmin,
        pmax,
        im,
        imin,
        imax,
        r.pmec.runs.len().to_string(),
        ratio_cell(r),
        r.isal
            .as_ref()
            .map_or("".into(), |i| r.pmec.apart_from(i).to_string()),
        r.schedule.clone(),
    ]
}

/// Runs the section, writing CSV, SVG and `section.md` under `out/pmec`.
/// The system's `libisal.so.2` folder (Debian's multiarch path first).
fn system_isal_dir() -> Option<PathBuf> {
    [
        "/usr/lib/x86_64-linux-gnu",
        "/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|d| d.join("libisal.so.2").exists())
}

/// The single-call path as ISA-L clients take it: the `percall` client (built by `make build`)
/// on the system's ISA-L, on ISA-L 2.32.1 where `make isal-anchor` built it, and on pmec's
/// shim, with the plain move of the same bytes beside each point (docs/validation.md §5).
fn single_calls(dir: &Path, quick: bool) -> Result<String, String> {
    let client = Path::new("target/percall");
    let shim = Path::new("target/pmec-isal");
    let heading = "### Single calls: one stripe per `ec_encode_data`, as ISA-L clients call it\n\n";
    if !client.exists() || !shim.join("libisal.so.2").exists() {
        return Ok(format!(
            "{heading}Not run: the client `target/percall` and the shim folder \
             `target/pmec-isal` are made by `make build`.\n\n"
        ));
    }
    let mut libs = Vec::new();
    if let Some(d) = system_isal_dir() {
        libs.push(crate::percall::Library {
            name: "isal-system".into(),
            dir: d,
            env: Vec::new(),
        });
    }
    let newest = Path::new("target/isa-l-2.32.1/inst/lib");
    if newest.join("libisal.so.2").exists() {
        libs.push(crate::percall::Library {
            name: "isal-2.32.1".into(),
            dir: newest.into(),
            env: Vec::new(),
        });
    }
    let against = libs.last().map(|l| l.name.clone());
    libs.push(crate::percall::Library {
        name: "pmec".into(),
        dir: shim.into(),
        env: Vec::new(),
    });
    let points: Vec<String> = if quick {
        vec!["8:4:1024".into(), "24:4:1024".into()]
    } else {
        ["8:4:1024", "24:4:1024", "48:4:1024", "8:4:4096"]
            .map(String::from)
            .to_vec()
    };
    let (rounds, seconds, pool_mib) = if quick { (3, 0.1, 256) } else { (3, 0.5, 1024) };
    let rows = crate::percall::compare(client, &libs, &points, rounds, false, seconds, pool_mib)?;
    write_file(dir, "single_call.csv", &percall_csv(&rows).to_csv())?;
    // DIALGA's layers on the same path: the shim with each strategy (PMEC_STRATEGY), against
    // vanilla, in interleaved rounds of their own.
    let layers: Vec<crate::percall::Library> = [
        ("vanilla", "vanilla"),
        ("+sw", "sw"),
        ("+bf", "bf"),
        ("nohw", "nohw"),
        ("auto", "auto"),
    ]
    .iter()
    .map(|&(name, strategy)| crate::percall::Library {
        name: name.into(),
        dir: shim.into(),
        env: vec![("PMEC_STRATEGY".into(), strategy.into())],
    })
    .collect();
    let layer_points = &points[..if quick { 1 } else { 2 }];
    let layer_rows = crate::percall::compare(
        client,
        &layers,
        layer_points,
        rounds,
        false,
        seconds,
        pool_mib,
    )?;
    write_file(
        dir,
        "single_call_layers.csv",
        &percall_csv(&layer_rows).to_csv(),
    )?;
    let layer_md = format!(
        "DIALGA's layers on this path (the paper's Fig. 18 breakdown, here for one stripe per \
         call): the shim with `PMEC_STRATEGY` = `vanilla` (no software prefetch, address order: \
         ISA-L's behaviour), `sw` (+SW: software prefetch at the tuned distance), `bf` (+BF: \
         the larger distance for each XPLine's first line), `nohw` (shuffled line order, which \
         starves the hardware prefetcher, with software prefetch) and `auto` (the coordinator's \
         choice, which adds pmlab's lone-stripe schedules), in {rounds} interleaved rounds of \
         their own; ratio over vanilla. Data: `pmec/single_call_layers.csv`.\n\n{}\n",
        crate::percall::markdown(&layer_rows, Some("vanilla"))
    );
    Ok(format!(
        "{heading}An unmodified C client linked against `libisal.so.2` (`crates/pmec/bench/percall.c`) \
         encodes RS(k+4,k) stripes of a {pool_mib} MiB pool in random order, one \
         `ec_encode_data` call per stripe, run on each library by `LD_LIBRARY_PATH` ({rounds} \
         interleaved round(s), {seconds} s per point); \"plain move\" is the same client moving \
         the same bytes without GF arithmetic (the better of regular and non-temporal stores), \
         what the memory allows: one reference per point, the median of the move runs of every \
         library's processes. `ratio`: the median over the newest ISA-L's here (its 1.00x row), \
         `~` where their runs overlap (a difference the runs cannot tell apart). Parity is identical on every \
         library (checked). ISA-L 2.32.1 \
         is present where `make isal-anchor` built it from `../shared/anchors`.\n\n{}\n\
         Data: `pmec/single_call.csv`.\n\n{layer_md}",
        crate::percall::markdown(&rows, against.as_deref())
    ))
}

/// The runs of single-call rows, one CSV row per run.
fn percall_csv(rows: &[crate::percall::Row]) -> Table {
    let mut csv = Table::new(&[
        "point",
        "block",
        "library",
        "run",
        "encode_gbps",
        "move_gbps",
    ]);
    for r in rows {
        for (i, (e, mv)) in r.encode.iter().zip(&r.moved).enumerate() {
            csv.push(vec![
                r.point.clone(),
                r.block.to_string(),
                r.lib.clone(),
                i.to_string(),
                format!("{e:.3}"),
                format!("{mv:.3}"),
            ]);
        }
    }
    csv
}

pub fn run(out: &Path, quick: bool) -> Result<(), String> {
    let dir = out.join("pmec");
    let pool_mb = if quick { 256 } else { 1024 };
    let pool = DataPool::new(pool_mb << 20).map_err(|e| e.to_string())?;
    let figs = figures(&pool, quick)?;
    let mut all = Table::new(&[
        "figure",
        "series",
        "x",
        "config",
        "pmec_gbps",
        "pmec_min_gbps",
        "pmec_max_gbps",
        "isal_gbps",
        "isal_min_gbps",
        "isal_max_gbps",
        "runs",
        "pmec/isal",
        "distinguishable",
        "schedule",
    ]);
    let mut md = String::new();
    let mut isal_note = None;
    for f in &figs {
        let mut t = Table::new(&[
            "series",
            f.x_label,
            "pmec GB/s median [min-max]",
            "ISA-L GB/s median [min-max]",
            "pmec/ISA-L",
            "runs",
        ]);
        let mut series: Vec<Series> = Vec::new();
        for (label, x, r) in &f.points {
            let isal = r.isal.as_ref().map(|m| m.gbps);
            isal_note = isal_note.or(r.isal_note.clone());
            all.push(csv_row(f.id, label, &format!("{x}"), r));
            t.push(vec![
                label.clone(),
                format!("{x}"),
                r.pmec.summary(),
                r.isal.as_ref().map_or("n/a".into(), |m| m.summary()),
                bench::ratio_text(r),
                r.pmec.runs.len().to_string(),
            ]);
            for (name, v) in [
                (format!("pmec {label}"), Some(r.pmec.gbps)),
                (format!("ISA-L {label}"), isal),
            ] {
                let Some(v) = v else { continue };
                match series.iter_mut().find(|s| s.label == name) {
                    Some(s) => s.points.push((*x, v)),
                    None => series.push(Series {
                        label: name,
                        points: vec![(*x, v)],
                    }),
                }
            }
        }
        let chart = LineChart {
            title: format!("{}: {}", f.id, f.title),
            x_label: f.x_label.into(),
            y_label: "GB/s (data encoded)".into(),
            log2_x: f.log2_x,
            series,
            references: Vec::new(),
        };
        let file = format!("{}.svg", f.id);
        write_file(&dir, &file, &chart.to_svg())?;
        md.push_str(&format!(
            "### {} — {}\n\nPaper (on Optane PM, 16+ cores): {}.\n\n{}\n![{}](pmec/{file})\n\n",
            f.id,
            f.title,
            f.paper,
            t.to_markdown(),
            f.id
        ));
    }
    // The paper's numbers beside pmlab's, per figure where its text gives one.
    let mut beside = Table::new(&[
        "figure",
        "points",
        "paper: DIALGA over",
        "paper",
        "pmlab: pmec over ISA-L (medians of those points)",
    ]);
    for (f, p) in figs
        .iter()
        .flat_map(|f| f.paper_ratios.iter().map(move |p| (f, p)))
    {
        let ours: Vec<f64> = f
            .points
            .iter()
            .filter(|(label, x, _)| (p.applies)(label, *x))
            .filter_map(|(_, _, r)| r.ratio)
            .collect();
        if ours.is_empty() {
            continue;
        }
        let (lo, hi) = ours
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
        beside.push(vec![
            f.id.into(),
            p.points.into(),
            p.over.into(),
            match p.lo {
                Some(lo) if lo == p.hi => format!("{lo:.2}x"),
                Some(lo) => format!("{lo:.2}-{:.2}x", p.hi),
                None => format!("up to {:.2}x", p.hi),
            },
            if ours.len() == 1 {
                format!("{lo:.2}x (1 point)")
            } else {
                format!("{lo:.2}-{hi:.2}x ({} points)", ours.len())
            },
        ]);
    }
    write_file(&dir, "paper_vs_pmlab.csv", &beside.to_csv())?;
    md.push_str(&format!(
        "### Beside the paper's numbers

Where the paper's text gives a number for a figure \
         (Sec. 5: DIALGA over ISA-L or over the best library it compares, on Optane PM), the \
         range of pmlab's pmec / ISA-L medians at the same points here. The paper's machine reads \
         from PM at a fraction of DRAM's speed; this one reads DRAM.\n\n{}\n",
        beside.to_markdown()
    ));
    // Fig. 18: breakdown of the scheduling layers for RS(12,8) 1 KiB.
    let b = base(quick);
    let br = bench::breakdown(&pool, &b, b.k).map_err(|e| e.to_string())?;
    let mut t = Table::new(&[
        "variant",
        "pmec GB/s median [min-max]",
        "vs Vanilla",
        "runs",
    ]);
    let vanilla = br.first().map(|(_, r)| r.pmec.clone());
    for (name, r) in &br {
        all.push(csv_row("fig18", name, "", r));
        let vs = vanilla.as_ref().map_or("n/a".into(), |v| {
            format!(
                "{:.2}{}",
                r.pmec.gbps / v.gbps,
                if r.pmec.apart_from(v) || name == "Vanilla" {
                    ""
                } else {
                    " ~"
                }
            )
        });
        t.push(vec![
            name.clone(),
            r.pmec.summary(),
            vs,
            r.pmec.runs.len().to_string(),
        ]);
    }
    let layers: Vec<(String, bench::Measurement)> = br
        .iter()
        .map(|(n, r)| (n.clone(), r.pmec.clone()))
        .collect();
    let steps = fig18_steps(&layers);
    md.push_str(&format!(
        "### fig18 — Breakdown of RS(12,8) 1 KiB encoding (prefetch distance d = k)\n\n\
         Paper (Sec. 5.8, on PM): each layer adds throughput (software prefetch +29.4-48.6%, \
         then re-enabled hardware prefetch +8.6-15.9%, then the buffer-friendly XPLine distance \
         +18.3-29.3%). Here, layer by layer, the paper's step beside each: {}. The \
         paper's layers are tuned for Optane PM (\"+BF\", a larger distance for the first line \
         of each 256 B XPLine, serves its XPLine read buffer, which DRAM does not have); this \
         machine reads DRAM (`docs/validation.md` §5). The last two rows are not the \
         paper's: pmlab's stripe-ahead prefetch (each line loaded prefetches the same line of the \
         next stripe, issued source by source with the loads) into L2 and into L1, one stripe \
         ahead, 64 B bodies, address order; for batches the coordinator hill-climbs the stripes \
         ahead, the level, the line order and the loop body.\n\n{}\n",
        steps,
        t.to_markdown()
    ));
    md.push_str(&single_calls(&dir, quick)?);
    write_file(&dir, "results.csv", &all.to_csv())?;
    // Which kernels the two sides have here: a baseline without GFNI kernels on a GFNI CPU
    // (Debian's ISA-L 2.30) is slower than the newest ISA-L (`make bench-ec` compares both).
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let isal_gfni = pmec::isal_dl::IsaL::get().map(|l| {
        l.encode_variant("avx512_gfni").is_some() || l.encode_variant("avx2_gfni").is_some()
    });
    let host_line = format!(
        "Host: {cpu}; pmec's kernel here: {}; the system's ISA-L {}. ",
        Isa::best().name(),
        match isal_gfni {
            Some(true) => "has GFNI kernels",
            Some(false) =>
                "has no GFNI kernels (Debian's 2.30; 2.32 added them), so on a GFNI \
                            CPU it is slower than the newest ISA-L: `make bench-ec` compares \
                            single calls with ISA-L 2.32.1 too",
            None => "is absent",
        }
    );
    let section = format!(
        "## pmec (DIALGA erasure coding)\n\n{host_line}\
         The paper's methodology on this machine: RS(k+m, k) encoding in GF(2^8) over {pool_mb} \
         MiB of pre-filled data, stripes in random order, m = 4 and 1 KiB blocks unless stated, \
         median of {} runs of {} MiB each, the same stripes in every run{} (tables give it with \
         the slowest and fastest run; \
         `~` marks a ratio whose two sides' runs overlap, a difference the runs cannot tell \
         apart); ISA-L (system libisal.so.2, loaded at run time) encodes \
         the same stripes in the same process. pmec calls encode {} stripes per call (batch API). \
         This machine has DRAM, not Optane PM, and {} cores: the paper's absolute numbers and its \
         thread counts do not transfer, only the comparison with ISA-L does. {}Regenerate with \
         `pmlab reproduce --only pmec{}`.\n\n{md}Data: `pmec/results.csv`, `pmec/paper_vs_pmlab.csv`.\n",
        b.reps,
        b.bytes_per_rep >> 20,
        // A run's stripes and their parity, once touched, may stay in the last-level cache.
        match llc_mib() {
            Some(llc) if (b.bytes_per_rep + b.bytes_per_rep / 2) >> 20 <= llc => format!(
                ": with their parity ({} MiB) they fit this machine's {llc} MiB last-level cache, \
                 so these figures are partly cache-resident and higher than a run over more \
                 data gives (`pmlab reproduce --only pmec` runs 256 MiB per run)",
                (b.bytes_per_rep + b.bytes_per_rep / 2) >> 20
            ),
            Some(llc) => format!(" (with their parity more than this machine's {llc} MiB last-level cache)"),
            None => String::new(),
        },
        b.batch,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        isal_note.map_or(String::new(), |n| format!("Note: {n}. ")),
        if quick { " --quick" } else { "" },
    );
    write_file(&dir, "section.md", &section)?;
    let find = |id: &str, x: f64| headline_ratio(&figs, id, x);
    // Every point of every figure where ISA-L's median is ahead, marked `~` where the runs
    // cannot tell the two apart.
    let isal_ahead: Vec<String> = figs
        .iter()
        .flat_map(|f| f.points.iter().map(move |p| (f.id, p)))
        .filter(|(_, (_, _, r))| r.ratio.is_some_and(|x| x < 1.0))
        .map(|(id, (label, x, r))| format!("{id} {label} {x} ({})", bench::ratio_text(r)))
        .collect();
    let fmt = |v: Option<String>| v.unwrap_or_else(|| "n/a".into());
    write_file(
        &dir,
        "headline.md",
        &format!(
            "* **pmec beside ISA-L** (same process, same data, 1 KiB blocks): RS(12,8) {}, \
             RS(28,24) {}, decode RS(12,8) with 4 erasures {}; {}.\n",
            fmt(find("fig10", 8.0)),
            fmt(find("fig10", 24.0)),
            fmt(find("fig14", 8.0)),
            if isal_ahead.is_empty() {
                "ISA-L's median is ahead at no measured point".to_string()
            } else {
                format!(
                    "ISA-L's median is ahead at {} (`~`: the runs overlap)",
                    isal_ahead.join(", ")
                )
            }
        ),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fig18_steps_stand_beside_the_papers() {
        let m = |runs: Vec<f64>| bench::Measurement {
            gbps: runs[1],
            runs,
        };
        let layers = vec![
            ("Vanilla".to_string(), m(vec![2.88, 3.13, 3.19])),
            ("+SW".to_string(), m(vec![3.05, 3.11, 3.20])),
            ("+HW".to_string(), m(vec![4.10, 4.11, 4.13])),
            ("+BF".to_string(), m(vec![4.16, 4.27, 4.38])),
        ];
        let t = fig18_steps(&layers);
        assert!(
            t.contains("+SW 0.99x Vanilla (runs overlap; paper 1.29-1.49x)"),
            "{t}"
        );
        assert!(t.contains("+HW 1.32x +SW (adds; paper 1.09-1.16x)"), "{t}");
        assert!(t.contains("+BF 1.04x +HW (adds; paper 1.18-1.29x)"), "{t}");
        assert_eq!(fig18_steps(&layers[..1]), "n/a");
    }

    #[test]
    fn a_headline_ratio_is_the_median_of_the_figures_measuring_the_point() {
        let point = |k: usize, block: usize, ratio: f64| BenchResult {
            config: BenchConfig {
                k,
                block,
                ..BenchConfig::default()
            },
            pmec: bench::Measurement {
                gbps: 8.0,
                runs: vec![7.5, 8.0, 8.5],
            },
            isal: Some(bench::Measurement {
                gbps: 8.0 / ratio,
                runs: vec![8.0 / ratio - 0.1, 8.0 / ratio, 8.0 / ratio + 0.1],
            }),
            ratio: Some(ratio),
            isal_note: None,
            schedule: String::new(),
        };
        let fig = |id: &'static str, points: Vec<(f64, BenchResult)>| Figure {
            id,
            title: String::new(),
            x_label: "k",
            log2_x: false,
            points: points
                .into_iter()
                .map(|(x, r)| ("s".to_string(), x, r))
                .collect(),
            paper: "",
            paper_ratios: Vec::new(),
        };
        // RS(12,8) 1 KiB in three figures: 3.48x, 3.39x, 3.10x; fig10's is the largest.
        let figs = vec![
            fig(
                "fig10",
                vec![(8.0, point(8, 1024, 3.48)), (4.0, point(4, 1024, 2.79))],
            ),
            fig("fig11", vec![(4.0, point(8, 1024, 3.39))]),
            fig("fig12", vec![(1024.0, point(8, 1024, 3.10))]),
        ];
        assert_eq!(
            headline_ratio(&figs, "fig10", 8.0).unwrap(),
            "3.39x (median of the 3 figures measuring it, 3.10-3.48x)"
        );
        // A point one figure measures keeps its own ratio.
        assert_eq!(headline_ratio(&figs, "fig10", 4.0).unwrap(), "2.79x");
        assert!(headline_ratio(&figs, "fig14", 8.0).is_none());
    }
}
