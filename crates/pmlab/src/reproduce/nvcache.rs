//! Reproduction section "nvcache": the NVRAM MPI-IO cache against plain MPI-IO on this
//! machine — small-request latency, sequential bandwidth and the Cannon's-algorithm figures of
//! the paper — from the benchmark driver `nvcache/bench/run_bench.sh` (real mpiexec, real
//! libpmem, the same binaries run with the cache on and off).

use crate::report::svg::{LineChart, Series};
use crate::report::{write_file, Spread, Table};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Rows of one CSV block: header names → values.
type Rows = Vec<BTreeMap<String, String>>;

/// A speed-up with two decimals, or with three significant digits below 0.1 (the open's,
/// hundreds of times slower, read as 0.00).
fn ratio_text(r: f64) -> String {
    if r > 0.0 && r < 0.1 {
        let decimals = (2.0 - r.log10().floor()) as usize;
        format!("{r:.decimals$}")
    } else {
        format!("{r:.2}")
    }
}

/// Splits the driver's output (several CSV blocks, each starting with a header whose first
/// column is `bench` or `figure`) into blocks keyed by their first column's value.
fn parse_blocks(text: &str) -> BTreeMap<String, Rows> {
    let mut blocks: BTreeMap<String, Rows> = BTreeMap::new();
    let mut header: Vec<String> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let cells: Vec<String> = line.split(',').map(|c| c.trim().to_string()).collect();
        if cells[0] == "bench" || cells[0] == "figure" {
            header = cells;
            continue;
        }
        if header.len() != cells.len() {
            continue;
        }
        let row: BTreeMap<String, String> =
            header.iter().cloned().zip(cells.iter().cloned()).collect();
        let key = if cells[0].starts_with("fig") {
            "cannon".to_string()
        } else {
            cells[0].clone()
        };
        blocks.entry(key).or_default().push(row);
    }
    blocks
}

/// Collapses repeated Cannon runs of one configuration into one row whose `total_s` and
/// `io_s` are the medians over the repeats (and `runs` says how many there were).
fn median_rows(rows: &Rows) -> Rows {
    let key_cols = ["figure", "label", "n", "procs", "power", "delete_on_close"];
    let mut groups: BTreeMap<Vec<String>, Vec<&BTreeMap<String, String>>> = BTreeMap::new();
    let mut order: Vec<Vec<String>> = Vec::new();
    for r in rows {
        let key: Vec<String> = key_cols.iter().map(|k| get(r, k).to_string()).collect();
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        groups.entry(key).or_default().push(r);
    }
    order
        .into_iter()
        .map(|key| {
            let g = &groups[&key];
            let mut row = g[0].clone();
            for col in ["total_s", "io_s"] {
                let v: Vec<f64> = g.iter().map(|r| num(r, col)).collect();
                let m = Spread::of(&v).median;
                row.insert(col.to_string(), format!("{m:.6}"));
            }
            row.insert("runs".to_string(), g.len().to_string());
            row
        })
        .collect()
}

/// The runs of two labels of one configuration paired in the order they ran (`run_bench.sh`
/// interleaves them A B B A ..., so the i-th runs of the two labels ran back to back):
/// the per-pair ratios `a_total / b_total` (median, smallest, largest), the pairs where b was
/// faster, and the number of pairs. None when either label has no runs.
fn paired(
    rows: &Rows,
    r: &BTreeMap<String, String>,
    a: &str,
    b: &str,
) -> Option<(Spread, usize, usize)> {
    let key_cols = ["figure", "n", "procs", "power", "delete_on_close"];
    let runs = |label: &str| -> Vec<f64> {
        rows.iter()
            .filter(|x| get(x, "label") == label && key_cols.iter().all(|k| get(x, k) == get(r, k)))
            .map(|x| num(x, "total_s"))
            .collect()
    };
    let (ra, rb) = (runs(a), runs(b));
    let ratios: Vec<f64> = ra
        .iter()
        .zip(&rb)
        .filter(|(_, &y)| y > 0.0)
        .map(|(x, y)| x / y)
        .collect();
    if ratios.is_empty() {
        return None;
    }
    let faster = ratios.iter().filter(|&&x| x > 1.0).count();
    Some((Spread::of(&ratios), faster, ratios.len()))
}

/// The Cannon comparison table from every run (`runs`) and their per-configuration medians
/// (`cannon`, from [`median_rows`]): per configuration each side's median time with its
/// fastest and slowest run, the ratio of the medians, the paired ratios and the pairs nvcache
/// won. Also returns the configurations nvcache won by the medians, their count, and those
/// where it won every pair.
fn cannon_table(runs: &Rows, cannon: &Rows) -> (Table, usize, usize, usize) {
    let mut cannon_cmp = Table::new(&[
        "figure",
        "n",
        "procs",
        "power",
        "doc",
        "plain_s median [min-max]",
        "nvcache_s median [min-max]",
        "speedup",
        "paired_speedup median [min-max]",
        "nvcache_faster_pairs",
    ]);
    let mut wins = 0;
    let mut total = 0;
    // Configurations where nvcache won every pair of runs.
    let mut clear_wins = 0;
    for r in cannon.iter().filter(|r| get(r, "label") == "plain") {
        let same = |x: &&BTreeMap<String, String>| {
            get(x, "label") == "nvcache"
                && ["figure", "n", "procs", "power", "delete_on_close"]
                    .iter()
                    .all(|k| get(x, k) == get(r, k))
        };
        if let Some(n) = cannon.iter().find(same) {
            let (p, c) = (num(r, "total_s"), num(n, "total_s"));
            total += 1;
            wins += (c < p) as usize;
            let (pair, pair_cells) = match paired(runs, r, "plain", "nvcache") {
                Some((m, f, k)) => {
                    clear_wins += (m.min > 1.0) as usize;
                    (m.text(), format!("{f} of {k}"))
                }
                None => ("".into(), "".into()),
            };
            cannon_cmp.push(vec![
                get(r, "figure").into(),
                get(r, "n").into(),
                get(r, "procs").into(),
                get(r, "power").into(),
                get(r, "delete_on_close").into(),
                time_cell(runs, r, "plain", p),
                time_cell(runs, r, "nvcache", c),
                format!("{:.2}", p / c),
                pair,
                pair_cells,
            ]);
        }
    }
    (cannon_cmp, wins, total, clear_wins)
}

/// `median [fastest-slowest]` of the runs of `label` in `r`'s configuration, `median` being
/// the one [`median_rows`] gave (the median alone where no run is found).
fn time_cell(runs: &Rows, r: &BTreeMap<String, String>, label: &str, median: f64) -> String {
    let key_cols = ["figure", "n", "procs", "power", "delete_on_close"];
    let v: Vec<f64> = runs
        .iter()
        .filter(|x| get(x, "label") == label && key_cols.iter().all(|k| get(x, k) == get(r, k)))
        .map(|x| num(x, "total_s"))
        .collect();
    if v.is_empty() {
        return format!("{median:.4}");
    }
    let sp = Spread::of(&v);
    format!("{median:.4} [{:.4}-{:.4}]", sp.min, sp.max)
}

fn num(r: &BTreeMap<String, String>, k: &str) -> f64 {
    r.get(k).and_then(|v| v.parse().ok()).unwrap_or(f64::NAN)
}

fn get<'a>(r: &'a BTreeMap<String, String>, k: &str) -> &'a str {
    r.get(k).map(String::as_str).unwrap_or("")
}

/// The sequential-bandwidth table from the driver's `bandwidth` rows: per case the runs, each
/// side's median time with the fastest and slowest, the bandwidths of the medians and the
/// speedup (`~` where the runs overlap).
fn bandwidth_table(bw: &Rows) -> Table {
    // Times and bandwidths over the interleaved runs; `close_flush` is a time only (plain's
    // data reached the file system at MPI_File_sync, nvcache's leaves NVRAM at the close), and
    // the end-to-end row adds it to the durable write of the same run.
    let mut bt = Table::new(&[
        "case",
        "runs",
        "plain_s median [min-max]",
        "nvcache_s median [min-max]",
        "plain_MiB_s",
        "nvcache_MiB_s",
        "nvcache_speedup",
    ]);
    let seconds = |label: &str, case: &str| -> Vec<f64> {
        bw.iter()
            .filter(|x| get(x, "label") == label && get(x, "case") == case)
            .map(|x| num(x, "seconds"))
            .collect()
    };
    let mib = bw
        .first()
        .map_or(0.0, |r| num(r, "total_bytes") / 1048576.0);
    let mut bw_row = |case: &str, p: Vec<f64>, c: Vec<f64>, rate: bool| {
        if p.is_empty() || c.is_empty() {
            return;
        }
        let (ps, cs) = (Spread::of(&p), Spread::of(&c));
        let (pm, pl, ph, cm, cl, ch) = (ps.median, ps.min, ps.max, cs.median, cs.min, cs.max);
        let apart = ps.apart_from(&cs);
        bt.push(vec![
            case.into(),
            p.len().min(c.len()).to_string(),
            format!("{pm:.4} [{pl:.4}-{ph:.4}]"),
            format!("{cm:.4} [{cl:.4}-{ch:.4}]"),
            if rate {
                format!("{:.0}", mib / pm)
            } else {
                "-".into()
            },
            if rate {
                format!("{:.0}", mib / cm)
            } else {
                "-".into()
            },
            if rate {
                format!("{:.2}{}", pm / cm, if apart { "" } else { " ~" })
            } else {
                "-".into()
            },
        ]);
    };
    for case in ["durable_write", "cold_read", "warm_read", "close_flush"] {
        bw_row(
            case,
            seconds("plain", case),
            seconds("nvcache", case),
            case != "close_flush",
        );
    }
    let end_to_end = |label: &str| -> Vec<f64> {
        seconds(label, "durable_write")
            .iter()
            .zip(seconds(label, "close_flush"))
            .map(|(w, c)| w + c)
            .collect()
    };
    bw_row(
        "write, sync and close",
        end_to_end("plain"),
        end_to_end("nvcache"),
        true,
    );
    bt
}

/// The MiB/s of every run of one side (`label`) at one point of the access-pattern benchmark.
fn ior_rates(rows: &Rows, label: &str, hosts: &str, variant: &str, phase: &str) -> Vec<f64> {
    rows.iter()
        .filter(|x| {
            get(x, "label") == label
                && get(x, "hosts") == hosts
                && get(x, "variant") == variant
                && get(x, "phase") == phase
        })
        .map(|x| num(x, "MiB_per_s"))
        .collect()
}

/// The access-pattern table from the driver's `ior` rows (IOR's segmented layout, five
/// variants, on one host and on emulated hosts): per (hosts, variant, phase) the interleaved
/// runs, each side's median MiB/s with the slowest and fastest run, and nvcache's speedup
/// (median over median; `~` where the two sides' runs overlap).
fn ior_table(rows: &Rows) -> Table {
    let mut t = Table::new(&[
        "hosts",
        "variant",
        "phase",
        "runs",
        "plain_MiB_s median [min-max]",
        "nvcache_MiB_s median [min-max]",
        "nvcache_speedup",
    ]);
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for r in rows {
        let k = (
            get(r, "hosts").to_string(),
            get(r, "variant").to_string(),
            get(r, "phase").to_string(),
        );
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    for (hosts, variant, phase) in keys {
        let rate = |label: &str| ior_rates(rows, label, &hosts, &variant, &phase);
        let (p, c) = (rate("plain"), rate("nvcache"));
        if p.is_empty() || c.is_empty() {
            continue;
        }
        let (ps, cs) = (Spread::of(&p), Spread::of(&c));
        let apart = ps.apart_from(&cs);
        t.push(vec![
            hosts.clone(),
            variant.clone(),
            phase.clone(),
            p.len().min(c.len()).to_string(),
            format!("{:.0} [{:.0}-{:.0}]", ps.median, ps.min, ps.max),
            format!("{:.0} [{:.0}-{:.0}]", cs.median, cs.min, cs.max),
            format!(
                "{:.2}{}",
                cs.median / ps.median,
                if apart { "" } else { " ~" }
            ),
        ]);
    }
    t
}

/// Runs the section; `build` is the nvcache CMake build directory. Returns whether it ran:
/// without the library or the benchmark driver (both found from the current directory) it
/// writes a section saying so and returns `false`.
pub fn run(out: &Path, quick: bool, build: &Path) -> Result<bool, String> {
    let dir = out.join("nvcache");
    let script = PathBuf::from("nvcache/bench/run_bench.sh");
    let lib = build.join("libnvcache.so");
    let missing: Vec<String> = [&lib, &script]
        .into_iter()
        .filter(|p| !p.exists())
        .map(|p| format!("`{}`", p.display()))
        .collect();
    if !missing.is_empty() {
        let md = format!(
            "## nvcache (NVRAM MPI-IO cache)\n\nSkipped: {} not found from {}. Build nvcache \
             with `make build-nvcache` (or `make demo`) and run `pmlab reproduce --only nvcache` \
             from the repository root.\n",
            missing.join(" and "),
            std::env::current_dir().map_or_else(|_| "here".into(), |d| d.display().to_string())
        );
        write_file(&dir, "section.md", &md)?;
        write_file(
            &dir,
            "headline.md",
            &format!(
                "* **nvcache**: skipped ({} not found).\n",
                missing.join(" and ")
            ),
        )?;
        eprintln!("  nvcache: skipped ({} not found)", missing.join(" and "));
        return Ok(false);
    }
    let mut cmd = Command::new("bash");
    cmd.arg(&script).arg(build).arg("");
    if quick {
        cmd.arg("quick");
    }
    // In a process group of its own, to which pmlab passes an interrupt on: the driver then
    // ends the MPI job in flight and removes what it leaves (NVRAM parts, mailboxes in
    // /dev/shm, scratch files) before it exits. (Left in pmlab's group, a SIGTERM to pmlab
    // alone left it running; killed by the broken pipe, it left 130 MiB in /dev/shm.)
    use std::os::unix::process::CommandExt;
    // (Its standard input is closed, as `output()` leaves it: outside the terminal's
    // foreground group, mpiexec reading the terminal would be stopped.)
    cmd.process_group(0)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd
        .spawn()
        .map_err(|e| format!("{}: cannot run: {e}", script.display()))?;
    let _forward = crate::signals::forward_to_group(child.id());
    let output = child
        .wait_with_output()
        .map_err(|e| format!("{}: cannot run: {e}", script.display()))?;
    if !output.status.success() {
        let err = String::from_utf8_lossy(&output.stderr);
        return Err(format!(
            "{} failed ({}): {}",
            script.display(),
            output.status,
            err.lines().last().unwrap_or("")
        ));
    }
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    // The driver's output as it printed it: blocks of CSV, each with its own header.
    write_file(&dir, "raw.txt", &text)?;
    let blocks = parse_blocks(&text);
    let lat = blocks.get("latency").cloned().unwrap_or_default();
    let bw = blocks.get("bandwidth").cloned().unwrap_or_default();
    let cannon_runs = blocks.get("cannon").cloned().unwrap_or_default();
    let cannon = median_rows(&cannon_runs);
    if lat.is_empty() {
        return Err(format!(
            "{}: no latency rows in its output",
            script.display()
        ));
    }

    // Latency: plain vs nvcache per case, size and process count, over the interleaved runs:
    // each figure is the median of the runs' figures with their smallest and largest.
    let mut lt = Table::new(&[
        "case",
        "bytes",
        "procs",
        "runs",
        "ops",
        "plain_mean_us median [min-max]",
        "plain_p50_us median [min-max]",
        "plain_p99_us median [min-max]",
        "nvcache_mean_us median [min-max]",
        "nvcache_p50_us median [min-max]",
        "nvcache_p99_us median [min-max]",
        "speedup_mean",
        "speedup_p50",
    ]);
    let mut key_rows = Vec::new();
    let mut open_rows = Vec::new();
    let mut charts: BTreeMap<String, Vec<Series>> = BTreeMap::new();
    let mut seen: Vec<(String, String, String)> = Vec::new();
    for r in lat.iter().filter(|r| get(r, "label") == "plain") {
        let (case, size, procs) = (get(r, "case"), get(r, "size_bytes"), get(r, "procs"));
        let key = (case.to_string(), size.to_string(), procs.to_string());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let runs = |label: &str, col: &str| -> Vec<f64> {
            lat.iter()
                .filter(|x| {
                    get(x, "label") == label
                        && get(x, "case") == case
                        && get(x, "size_bytes") == size
                        && get(x, "procs") == procs
                })
                .map(|x| num(x, col))
                .collect()
        };
        let (pp50, np50) = (runs("plain", "p50_us"), runs("nvcache", "p50_us"));
        if np50.is_empty() {
            continue;
        }
        let spread = |label: &str, col: &str| Spread::of(&runs(label, col));
        let (sp, sn) = (Spread::of(&pp50), Spread::of(&np50));
        let (pm, cm) = (spread("plain", "mean_us"), spread("nvcache", "mean_us"));
        let (p, c) = (pm.median, cm.median);
        // Where the two sides' runs overlap, the p50 ratio is not distinguishable.
        let overlap = sp.min <= sn.max && sn.min <= sp.max;
        let range = |s: &Spread| format!("{:.2} [{:.2}-{:.2}]", s.median, s.min, s.max);
        lt.push(vec![
            case.into(),
            size.into(),
            procs.into(),
            format!("{}/{}", pp50.len(), np50.len()),
            get(r, "ops").into(),
            range(&pm),
            range(&sp),
            range(&spread("plain", "p99_us")),
            range(&cm),
            range(&sn),
            range(&spread("nvcache", "p99_us")),
            ratio_text(p / c),
            format!(
                "{}{}",
                ratio_text(sp.median / sn.median),
                if overlap { " ~" } else { "" }
            ),
        ]);
        if case == "open" {
            open_rows.push((procs.to_string(), sp.median, sn.median, size.to_string()));
            continue;
        }
        if size == "4096" && (case == "durable_write" || case == "cold_read") {
            // Medians: a few slow operations (plain's fsyncs reach ms) move the means.
            key_rows.push((case.to_string(), procs.to_string(), sp, sn, p / c));
        }
        let chart = charts
            .entry(format!("{case}, {procs} rank(s)"))
            .or_default();
        for (label, v) in [("plain MPI-IO", p), ("nvcache", c)] {
            let x: f64 = size.parse().unwrap_or(0.0);
            match chart.iter_mut().find(|s| s.label == label) {
                Some(s) => s.points.push((x, v)),
                None => chart.push(Series {
                    label: label.into(),
                    points: vec![(x, v)],
                }),
            }
        }
    }
    let mut figs = String::new();
    for (name, series) in &charts {
        if !(name.starts_with("durable_write") || name.starts_with("cold_read")) {
            continue;
        }
        let file = format!("latency-{}.svg", name.replace([',', ' ', '(', ')'], ""));
        let chart = LineChart {
            title: format!("nvcache: {name} mean latency"),
            x_label: "request size (bytes)".into(),
            y_label: "microseconds".into(),
            log2_x: true,
            series: series.clone(),
            references: Vec::new(),
        };
        write_file(&dir, &file, &chart.to_svg())?;
        figs.push_str(&format!("![{name}](nvcache/{file})\n\n"));
    }

    let bt = bandwidth_table(&bw);
    let ior = blocks.get("ior").cloned().unwrap_or_default();
    let it = ior_table(&ior);
    // What the prose below quotes, from this run: the matrix sizes, the host's cores, and plain
    // MPI-IO's independent read over its collective one (ROMIO's two-phase exchange).
    let ns: Vec<f64> = cannon
        .iter()
        .map(|r| num(r, "n"))
        .filter(|n| *n > 0.0)
        .collect();
    let n_range = match (
        ns.iter().copied().reduce(f64::min),
        ns.iter().copied().reduce(f64::max),
    ) {
        (Some(lo), Some(hi)) if lo < hi => format!("n = {lo:.0}-{hi:.0}"),
        (Some(lo), _) => format!("n = {lo:.0}"),
        _ => "small matrices".to_string(),
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let plain_read = |hosts: &str, variant: &str| {
        let v = ior_rates(&ior, "plain", hosts, variant, "read");
        (!v.is_empty()).then(|| Spread::of(&v).median)
    };
    let coll_ratio: Vec<String> = ["1", "2"]
        .iter()
        .filter_map(|h| {
            let (i, c) = (plain_read(h, "indep")?, plain_read(h, "coll")?);
            (c > 0.0).then(|| {
                format!(
                    "{:.0}x with {h} host{}",
                    i / c,
                    if *h == "1" { "" } else { "s" }
                )
            })
        })
        .collect();
    let coll_text = if coll_ratio.is_empty() {
        String::new()
    } else {
        format!(
            " The collective variant's read ratio measures plain MPI-IO's collective read more \
             than the cache: plain's independent read ran faster than its collective read by \
             {} here (medians; ROMIO's two-phase exchange with 4 ranks on {cores} cores), \
             which nvcache's independent copies avoid.",
            coll_ratio.join(", ")
        )
    };

    let mut ct = Table::new(&[
        "figure",
        "n",
        "procs",
        "power",
        "delete_on_close",
        "variant",
        "total_s",
        "io_s",
    ]);
    for r in &cannon_runs {
        ct.push(vec![
            get(r, "figure").into(),
            get(r, "n").into(),
            get(r, "procs").into(),
            get(r, "power").into(),
            get(r, "delete_on_close").into(),
            get(r, "label").into(),
            get(r, "total_s").into(),
            get(r, "io_s").into(),
        ]);
    }
    let (cannon_cmp, wins, total, clear_wins) = cannon_table(&cannon_runs, &cannon);
    // Fig. 2: synchronous vs asynchronous write replies, both through nvcache.
    let mut sync_async = Table::new(&[
        "n",
        "procs",
        "power",
        "sync_s median [min-max]",
        "async_s median [min-max]",
        "async/sync",
        "paired async/sync median [min-max]",
        "runs",
    ]);
    for r in cannon
        .iter()
        .filter(|r| get(r, "figure") == "fig2" && get(r, "label") == "nvcache")
    {
        if let Some(a) = cannon.iter().find(|x| {
            get(x, "figure") == "fig2"
                && get(x, "label") == "nvcache-async"
                && ["n", "procs", "power"]
                    .iter()
                    .all(|k| get(x, k) == get(r, k))
        }) {
            let (s, a) = (num(r, "total_s"), num(a, "total_s"));
            let (pair, runs) = paired(&cannon_runs, r, "nvcache-async", "nvcache")
                .map_or(("".into(), "".into()), |(m, _, k)| {
                    (m.text(), k.to_string())
                });
            sync_async.push(vec![
                get(r, "n").into(),
                get(r, "procs").into(),
                get(r, "power").into(),
                time_cell(&cannon_runs, r, "nvcache", s),
                time_cell(&cannon_runs, r, "nvcache-async", a),
                format!("{:.2}", a / s),
                pair,
                runs,
            ]);
        }
    }
    // The paper's figures, as far as its text gives numbers (Sec. 4), beside ours.
    let run_time = |fig: &str, label: &str, power: &str| -> Option<(String, f64)> {
        let mut rows: Vec<_> = cannon
            .iter()
            .filter(|x| {
                get(x, "figure") == fig && get(x, "label") == label && get(x, "power") == power
            })
            .collect();
        rows.sort_by_key(|x| get(x, "n").parse::<u64>().unwrap_or(0));
        rows.first()
            .map(|x| (get(x, "n").to_string(), num(x, "total_s")))
    };
    let powers = |fig: &str| -> Vec<String> {
        let mut p: Vec<u64> = cannon
            .iter()
            .filter(|x| get(x, "figure") == fig)
            .filter_map(|x| get(x, "power").parse().ok())
            .collect();
        p.sort_unstable();
        p.dedup();
        p.iter().map(|v| v.to_string()).collect()
    };
    let mut paper = Table::new(&[
        "figure",
        "point",
        "paper (text of Sec. 4)",
        "paper value",
        "pmlab",
        "pmlab paired median [min-max]",
        "runs",
    ]);
    // The ratio of the medians, and the paired ratios' median and range with their count
    // (`~` where the pairs disagree on the direction).
    let speedup = |fig: &str, a: &str, b: &str, power: &str| {
        run_time(fig, a, power)
            .zip(run_time(fig, b, power))
            .map(|((n, x), (_, y))| {
                let row = cannon.iter().find(|r| {
                    get(r, "figure") == fig
                        && get(r, "label") == a
                        && get(r, "power") == power
                        && get(r, "n") == n
                });
                let pair = row
                    .and_then(|r| paired(&cannon_runs, r, a, b))
                    .map_or(("".into(), "".into()), |(m, _, k)| {
                        (m.text(), k.to_string())
                    });
                (n, x / y, pair)
            })
    };
    if let Some(p) = powers("fig2").first() {
        if let Some((n, r, (pair, runs))) = speedup("fig2", "nvcache-async", "nvcache", p) {
            paper.push(vec![
                "Fig. 2".into(),
                format!("n = {n}, power {p}: asynchronous over synchronous time"),
                "synchronous replies cut execution time by 30% at small powers".into(),
                "1.43".into(),
                format!("{r:.2}"),
                pair,
                runs,
            ]);
        }
    }
    let p3 = powers("fig3");
    if let (Some(lo), Some(hi)) = (p3.first(), p3.last()) {
        for (p, says, value) in [
            (lo, "power 2: the cache is less than 20% faster", "< 1.20"),
            (hi, "larger powers: more than 40% faster", "> 1.40"),
        ] {
            if let Some((n, r, (pair, runs))) = speedup("fig3", "plain", "nvcache", p) {
                paper.push(vec![
                    "Fig. 3".into(),
                    format!("n = {n}, power {p}: plain over nvcache time"),
                    says.into(),
                    value.into(),
                    format!("{r:.2}"),
                    pair,
                    runs,
                ]);
            }
        }
    }
    write_file(&dir, "paper_vs_pmlab.csv", &paper.to_csv())?;
    write_file(&dir, "latency.csv", &lt.to_csv())?;
    write_file(&dir, "bandwidth.csv", &bt.to_csv())?;
    write_file(&dir, "access_patterns.csv", &it.to_csv())?;
    write_file(&dir, "cannon.csv", &ct.to_csv())?;
    write_file(&dir, "cannon_summary.csv", &cannon_cmp.to_csv())?;
    // Runs per configuration: one count when every configuration ran as often, else the range.
    let counts: Vec<u64> = cannon
        .iter()
        .filter_map(|r| get(r, "runs").parse().ok())
        .collect();
    let repeats = match (counts.iter().min(), counts.iter().max()) {
        (Some(lo), Some(hi)) if lo < hi => format!("{lo}-{hi}"),
        (Some(lo), _) => lo.to_string(),
        _ => "0".to_string(),
    };
    // nvcache's open reads the whole file into NVRAM: its cold reads find the data there, so
    // each cold-read figure is quoted with the opens.
    let opens = |procs: &str| {
        open_rows
            .iter()
            .find(|(p, ..)| p == procs)
            .map_or(String::new(), |(_, a, b, bytes)| {
                format!(
                    " (after an open that read the whole {} MiB file into NVRAM: {:.1} ms, \
                     plain's open {:.1} ms)",
                    bytes.parse::<f64>().unwrap_or(0.0) / 1048576.0,
                    b / 1e3,
                    a / 1e3
                )
            })
    };
    let key =
        key_rows
            .iter()
            .map(|(c, p, a, b, mean_ratio)| {
                format!(
                "{c} 4 KiB, {p} rank(s): median p50 {:.1} us plain vs {:.1} us nvcache ({:.1}x; \
                 {mean_ratio:.1}x by the means){}",
                a.median,
                b.median,
                a.median / b.median,
                if c == "cold_read" { opens(p) } else { String::new() }
            )
            })
            .collect::<Vec<_>>()
            .join("; ");
    let md = format!(
        "## nvcache (NVRAM MPI-IO cache)\n\n\
         `nvcache/bench/run_bench.sh` runs each program under `mpiexec` twice with \
         `LD_PRELOAD=libnvcache.so`: cache enabled, and cache disabled (every MPI-IO call \
         forwarded to MPICH unchanged). Like with like: a durable write is nvcache's write \
         (acknowledged once persistent in NVRAM, here /dev/shm through libpmem) against plain \
         `MPI_File_write_at` + `MPI_File_sync`; a cold read follows `posix_fadvise(DONTNEED)` on \
         the real file, and the warm read reads the same offsets again. Before each size's \
         writes the file is read once, so plain writes smaller than a page never wait for the \
         page to be read from disk. Warm, non-durable cases are listed too. \
         The paper ran 10-20k-vertex matrices on a cluster with a parallel file system; this \
         machine runs {n_range} on one host, where per-open cache setup and, from \
         power 4 on, compute weigh more than I/O. Regenerate with \
         `pmlab reproduce --only nvcache{}`.\n\n\
         Key figures: {key}.\n\n\
         ### Cannon's algorithm (paper Figs. 2-8), plain vs nvcache\n\n\
         Each time is the median of {repeats} runs (`NVCACHE_BENCH_REPEAT`) with the fastest \
         and slowest, plain and nvcache interleaved; nvcache is faster in {wins} of {total} configurations here (by those \
         medians). `paired_speedup` is the median (with the smallest and largest) of plain/nvcache \
         over the pairs of runs that \
         ran back to back, which a slow stretch of the shared machine moves less; \
         `nvcache_faster_pairs` counts the pairs nvcache won; `~` marks a configuration whose \
         pairs disagree on which side is faster. Ranks are bound to this host's {cores} \
         cores. Figs. 3-7 run \
         on this host as it is, one node with 4 ranks; `fig6-2nodes` repeats Fig. 6 with two \
         emulated nodes of 2 ranks on the same {cores} cores (each node's ranks find their block rows \
         in their own node's part: Cannon passes a block row as MPI's `striping_unit`); Fig. 8 \
         emulates one node per rank.\n\n{}\n\
         Beside the paper: its text gives three numbers (Figs. 4-8 are drawn without \
         any); the paper ran n = 10 000-20 000 on a cluster, this machine {n_range} on one \
         host, so the comparison is of direction and rough size only. `pmlab`: the ratio of \
         the two sides' median times; beside it the ratios of the interleaved pairs of runs \
         (median [min-max], `~` where the pairs disagree on which side is faster).\n\n{}\n\
         Fig. 2, synchronous vs asynchronous write replies (both through nvcache; the same \
         columns):\n\n{}\n\
         ### Small-request latency\n\n{}\n`ops`: timed operations behind each figure (all \
         ranks together); `runs`: interleaved runs per side; each figure is the median over the \
         runs of the run's mean, median (p50, with the runs' smallest and largest) and 99th \
         percentile (of 300 operations in `--quick`, the 4th largest); the speedups are plain's \
         over nvcache's, `~` where the two sides' p50s overlap. `open`: the `MPI_File_open` \
         before the others (bytes: the file's size), where nvcache reads the whole file into \
         NVRAM: its cold reads then find their data there, which this row's time pays for.\n\n{figs}\
         ### Sequential bandwidth (1 MiB requests)\n\n{}\n\
         `close_flush` is the time `MPI_File_close` takes, every rank's, from a barrier to a \
         barrier: with plain MPI-IO the data reached the file system at `MPI_File_sync`, so its \
         close has no data left to write; nvcache writes the NVRAM copy back to the file there. It has no bandwidth of its own: `write, sync and close` \
         adds it to the durable write of the same run, end to end. Times are the median of the \
         interleaved runs with the fastest and slowest; `nvcache_speedup` is plain's median \
         time over nvcache's, marked `~` where the two sides' runs overlap.\n\n\
         ### Access patterns (IOR's segmented layout), plain vs nvcache\n\n{}\n\
         4 ranks each write 4 segments of a 4 MiB block in 64 KiB transfers and call \
         `MPI_File_sync` (`write_sync`: the write phase ends when the data is durable), then \
         read a neighbour's blocks (`read`), in one shared file with independent or collective \
         calls, in one file per process, and in random transfer order (`bench/ior_patterns.c`). \
         `hosts` 1: this host as one node; 2: two emulated hosts (`tests/emu_mpiexec.sh`: each \
         with its own /dev/shm, so every request for the other host's part travels over MPI \
         through its agent). The emulated hosts share one kernel: plain reads of the \
         neighbour's data come from the one page cache both hosts see, where real hosts would \
         read them over the network file system, and nvcache's requests cross between \
         processes on the same {cores} cores. Where nvcache is slower across hosts in this \
         table, docs/validation.md §4 traced the cause on the shared file: every request for \
         the other host's part is a round trip through that host's agent, 100-200 µs more per \
         64 KiB than the same request to another node of one host (measured there).{coll_text} \
         Median MiB/s of the interleaved runs with the slowest \
         and fastest; `nvcache_speedup` is nvcache's median over plain's, `~` where the runs \
         overlap.\n\n\
         Data: `nvcache/raw.txt` (driver output, one CSV block per benchmark), `nvcache/latency.csv`, `nvcache/bandwidth.csv`, \
         `nvcache/access_patterns.csv`, \
         `nvcache/cannon.csv` (every run), `nvcache/cannon_summary.csv`, \
         `nvcache/paper_vs_pmlab.csv`.\n",
        if quick { " --quick" } else { "" },
        cannon_cmp.to_markdown(),
        paper.to_markdown(),
        sync_async.to_markdown(),
        lt.to_markdown(),
        bt.to_markdown(),
        it.to_markdown(),
    );
    write_file(&dir, "section.md", &md)?;
    // The median runs' ratio, with the range from the slowest run of one side against the
    // fastest of the other.
    let one_rank = |case: &str| {
        key_rows
            .iter()
            .find(|(c, p, ..)| c == case && p == "1")
            .map_or("n/a".to_string(), |(_, _, a, b, _)| {
                format!(
                    "{:.1}x [{:.1}-{:.1}x: one side's slowest run against the other's fastest, \
                     {} runs each]",
                    a.median / b.median,
                    a.min / b.max,
                    a.max / b.min,
                    lat.iter()
                        .filter(|r| get(r, "label") == "plain"
                            && get(r, "case") == case
                            && get(r, "size_bytes") == "4096"
                            && get(r, "procs") == "1")
                        .count()
                )
            })
    };
    // Plain's durable write is a write and the file system's sync; where its median is the
    // same at every size, the sync's wait (for ext4, the journal commit, which other I/O on the
    // machine stretches to milliseconds) sets it, and the ratio measures that wait.
    let sync_floor = {
        let plain: Vec<_> = lat
            .iter()
            .filter(|r| {
                get(r, "label") == "plain"
                    && get(r, "case") == "durable_write"
                    && get(r, "procs") == "1"
            })
            .collect();
        let p50s: Vec<f64> = plain.iter().map(|r| num(r, "p50_us")).collect();
        let (lo, hi) = p50s
            .iter()
            .fold((f64::MAX, 0.0f64), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        let sizes: std::collections::BTreeSet<&str> =
            plain.iter().map(|r| get(r, "size_bytes")).collect();
        // Flat over three or more sizes, every figure finite, and at a millisecond or more,
        // where a 64 KiB write costs a small part of it: the sync's wait sets it.
        if sizes.len() >= 3 && p50s.iter().all(|v| v.is_finite()) && lo >= 1000.0 && hi <= 1.05 * lo
        {
            format!(
                " (plain's durable write took {:.0}-{:.0} µs at every size: the file system's \
                 sync waiting for its journal, which other I/O on the machine lengthens, sets \
                 it and so this ratio)",
                lo, hi
            )
        } else {
            String::new()
        }
    };
    write_file(
        &dir,
        "headline.md",
        &format!(
            "* **nvcache beside plain MPI-IO** (real mpiexec, 1 rank, 4 KiB random): durable \
             writes {} lower median latency{sync_floor}, cold reads {} lower{}; Cannon's algorithm faster \
             with nvcache in {wins} of {total} configurations by the medians, in {clear_wins} of \
             them in every pair of interleaved runs.\n",
            one_rank("durable_write"),
            one_rank("cold_read"),
            opens("1")
        ),
    )?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_speedups_keep_three_significant_digits() {
        assert_eq!(ratio_text(0.0032839), "0.00328");
        assert_eq!(ratio_text(0.05), "0.0500");
        assert_eq!(ratio_text(0.5), "0.50");
        assert_eq!(ratio_text(1922.68), "1922.68");
    }

    #[test]
    fn access_pattern_rows_give_medians_ranges_speedups_and_overlaps() {
        let mut text = String::from(
            "bench,label,hosts,variant,phase,procs,xfer_bytes,total_bytes,seconds,MiB_per_s\n",
        );
        for (label, hosts, w, r) in [
            ("plain", 1, 500.0, 7000.0),
            ("nvcache", 1, 900.0, 6000.0),
            ("nvcache", 1, 1000.0, 7500.0),
            ("plain", 1, 600.0, 8000.0),
            ("plain", 2, 700.0, 8000.0),
            ("nvcache", 2, 400.0, 200.0),
        ] {
            for (phase, v) in [("write_sync", w), ("read", r)] {
                text.push_str(&format!(
                    "ior,{label},{hosts},indep,{phase},4,65536,67108864,0.1,{v}\n"
                ));
            }
        }
        let md = ior_table(&parse_blocks(&text)["ior"]).to_markdown();
        // Two runs a side: the median is the mean of the middle two (Spread); apart: no `~`.
        assert!(
            md.contains("| 1 | indep | write_sync | 2 | 550 [500-600] | 950 [900-1000] | 1.73 |"),
            "{md}"
        );
        // Overlapping runs are marked.
        assert!(md.contains("| 1 | indep | read | 2 |"), "{md}");
        assert!(md.contains("~"), "{md}");
        // Emulated hosts are their own rows, losses included.
        assert!(
            md.contains("| 2 | indep | read | 1 | 8000 [8000-8000] | 200 [200-200] | 0.03 |"),
            "{md}"
        );
    }

    #[test]
    fn bandwidth_rows_give_runs_medians_ranges_and_mark_overlaps() {
        let mut text =
            String::from("bench,label,case,req_bytes,procs,total_bytes,seconds,MiB_per_s\n");
        for (label, w, r, c) in [
            ("plain", 0.04, 0.036, 0.0002),
            ("nvcache", 0.06, 0.007, 0.048),
            ("nvcache", 0.05, 0.006, 0.047),
            ("plain", 0.038, 0.034, 0.0001),
            ("plain", 0.041, 0.037, 0.0002),
            ("nvcache", 0.07, 0.008, 0.059),
        ] {
            for (case, t) in [
                ("durable_write", w),
                ("cold_read", r),
                ("warm_read", r),
                ("close_flush", c),
            ] {
                text.push_str(&format!(
                    "bandwidth,{label},{case},1048576,1,67108864,{t},0\n"
                ));
            }
        }
        let md = bandwidth_table(&parse_blocks(&text)["bandwidth"]).to_markdown();
        assert!(
            md.contains("| durable_write | 3 | 0.0400 [0.0380-0.0410] | 0.0600 [0.0500-0.0700] |"),
            "{md}"
        );
        assert!(md.contains("| cold_read | 3 |"), "{md}");
        // End to end: each run's write plus its own close.
        assert!(
            md.contains(
                "| write, sync and close | 3 | 0.0402 [0.0381-0.0412] | 0.1080 [0.0970-0.1290] |"
            ),
            "{md}"
        );
        // No two sides overlap here: nothing is marked `~`.
        assert!(!md.contains("~"), "{md}");
    }

    #[test]
    fn splits_blocks_by_header() {
        let text = "bench,label,case\nlatency,plain,a\nlatency,nvcache,a\n\
                    figure,label,n\nfig2,plain,480\nfig3,nvcache,480\n";
        let b = parse_blocks(text);
        assert_eq!(b["latency"].len(), 2);
        assert_eq!(b["cannon"].len(), 2);
        assert_eq!(get(&b["cannon"][1], "n"), "480");
    }

    #[test]
    fn repeated_runs_collapse_to_their_median() {
        let text = "figure,label,app,n,procs,power,delete_on_close,total_s,io_s\n\
                    fig3,plain,cannon,480,4,2,0,0.30,0.1\n\
                    fig3,plain,cannon,480,4,2,0,0.10,0.2\n\
                    fig3,plain,cannon,480,4,2,0,0.20,0.3\n\
                    fig3,nvcache,cannon,480,4,2,0,0.05,0.1\n";
        let rows = median_rows(&parse_blocks(text)["cannon"]);
        assert_eq!(rows.len(), 2);
        assert_eq!(get(&rows[0], "total_s"), "0.200000");
        assert_eq!(get(&rows[0], "io_s"), "0.200000");
        assert_eq!(get(&rows[0], "runs"), "3");
        assert_eq!(get(&rows[1], "runs"), "1");
    }

    #[test]
    fn cannon_times_give_median_fastest_and_slowest() {
        let text = "figure,label,app,n,procs,power,delete_on_close,total_s,io_s\n\
                    fig3,plain,cannon,480,4,2,0,0.30,0.1\n\
                    fig3,nvcache,cannon,480,4,2,0,0.20,0.1\n\
                    fig3,nvcache,cannon,480,4,2,0,0.12,0.1\n\
                    fig3,plain,cannon,480,4,2,0,0.10,0.1\n\
                    fig3,plain,cannon,480,4,2,0,0.20,0.1\n\
                    fig3,nvcache,cannon,480,4,2,0,0.10,0.1\n";
        let runs = &parse_blocks(text)["cannon"];
        let (t, wins, total, clear) = cannon_table(runs, &median_rows(runs));
        let md = t.to_markdown();
        assert!(
            md.contains("| plain_s median [min-max] | nvcache_s median [min-max] |"),
            "{md}"
        );
        assert!(
            md.contains(
                "| fig3 | 480 | 4 | 2 | 0 | 0.2000 [0.1000-0.3000] | 0.1200 [0.1000-0.2000] | 1.67 |"
            ),
            "{md}"
        );
        assert_eq!((wins, total, clear), (1, 1, 0));
    }

    #[test]
    fn runs_pair_in_the_order_they_ran() {
        // A B B A A B: pairs (0.30, 0.20), (0.10, 0.12), (0.20, 0.10); a row of another
        // configuration in between does not take part.
        let text = "figure,label,app,n,procs,power,delete_on_close,total_s,io_s\n\
                    fig6,plain,cannon,480,4,2,1,0.30,0.1\n\
                    fig6,nvcache,cannon,480,4,2,1,0.20,0.1\n\
                    fig6,nvcache,cannon,480,4,8,1,9.00,0.1\n\
                    fig6,nvcache,cannon,480,4,2,1,0.12,0.1\n\
                    fig6,plain,cannon,480,4,2,1,0.10,0.1\n\
                    fig6,plain,cannon,480,4,2,1,0.20,0.1\n\
                    fig6,nvcache,cannon,480,4,2,1,0.10,0.1\n";
        let rows = &parse_blocks(text)["cannon"];
        let (p, faster, n) = paired(rows, &rows[0], "plain", "nvcache").unwrap();
        let m = p.median;
        assert_eq!((faster, n), (2, 3));
        assert!((m - 1.5).abs() < 1e-9, "{m}");
        assert!(paired(rows, &rows[0], "plain", "nvcache-async").is_none());
    }
}
