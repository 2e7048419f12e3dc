//! End-to-end tests of the `pmlab` binary: real files in, exit codes and outputs checked.

mod common;
use common::{json_counter, one_line_error, sim_with_stats};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn pmlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pmlab"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run pmlab")
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pmlab-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A plain memory trace: reads and writes over a few rows, cycle-stamped.
fn plain_trace(dir: &Path) -> PathBuf {
    let mut s = String::from("# addr op cycle\n");
    for i in 0..500u64 {
        let addr = (i * 7919 % 4096) * 64;
        let op = if i % 3 == 0 { "WRITE" } else { "READ" };
        s.push_str(&format!("0x{addr:x} {op} {}\n", i * 10));
    }
    let p = dir.join("plain.trace");
    std::fs::write(&p, s).unwrap();
    p
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn sim_on_a_plain_trace_prints_a_summary_and_json() {
    let d = tmpdir("sim");
    let t = plain_trace(&d);
    let json = d.join("out.json");
    let o = pmlab(&[
        "sim",
        "--config",
        "optane",
        "--trace",
        t.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("reads / writes"), "{out}");
    assert!(out.contains("333 / 167"), "{out}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["host"]["events"], 500);
    assert!(v["host"]["events_per_sec"].as_f64().unwrap() > 0.0);
    assert_eq!(
        v["model"], "memory",
        "plain traces are memory-request streams"
    );
    assert_eq!(v["stats"]["counters"]["replay.reads"], 333);
    assert!(v["stats"]["counters"]["mc.device_reads"].as_u64().is_some());
    // The file names the code that made it and what remakes the run.
    let version = String::from_utf8_lossy(&pmlab(&["--version"]).stdout).into_owned();
    let commit = v["pmlab"]["commit"].as_str().unwrap();
    assert!(!commit.is_empty());
    assert_eq!(
        version.trim(),
        format!(
            "pmlab {} (commit {commit})",
            v["pmlab"]["version"].as_str().unwrap()
        )
    );
    assert_eq!(v["trace"]["threads"], 1);
    assert_eq!(v["trace"]["generator"], serde_json::Value::Null);
}

#[test]
fn sim_json_of_a_generated_workload_records_its_seed_and_options() {
    let d = tmpdir("sim-gen");
    let json = d.join("g.json");
    let o = pmlab(&[
        "sim",
        "--config",
        "nvm-lalea",
        "--workload",
        "btree-hw",
        "--ops",
        "40",
        "--seed",
        "9",
        "--threads",
        "2",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let t = &v["trace"];
    assert_eq!(
        (t["seed"].as_u64(), t["threads"].as_u64()),
        (Some(9), Some(2))
    );
    assert!(t["params"].as_str().unwrap().contains("ops=40"), "{t}");
    assert_eq!(t["generator"]["ops"], 40);
    assert_eq!(t["generator"]["janus_hints"], false);
}

#[test]
fn sim_json_is_written_even_when_standard_output_fails() {
    // The summary failed to print (a full device, a closed pipe) after the simulation, and the
    // JSON was left as an empty temporary file beside its name.
    let d = tmpdir("sim-full");
    let json = d.join("s.json");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_pmlab"))
        .args([
            "sim",
            "--config",
            "nvm-lalea",
            "--workload",
            "queue-hw",
            "--ops",
            "20",
            "--json",
            json.to_str().unwrap(),
        ])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(v["summary"]["events"].as_u64().unwrap() > 0);
    let names: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["s.json"], "nothing beside it");
}

#[test]
fn sim_json_is_deterministic_apart_from_host_timing() {
    let d = tmpdir("det");
    let t = plain_trace(&d);
    let run = |name: &str| {
        let p = d.join(name);
        let o = pmlab(&[
            "sim",
            "--config",
            "../../configs/nvm-ppo.toml",
            "--trace",
            t.to_str().unwrap(),
            "--json",
            p.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        v.as_object_mut().unwrap().remove("host");
        serde_json::to_string(&v).unwrap()
    };
    assert_eq!(run("a.json"), run("b.json"));
}

#[test]
fn import_then_dump_and_stats_round_trip() {
    let d = tmpdir("import");
    let t = plain_trace(&d);
    let pmt = d.join("t.pmt");
    let o = pmlab(&[
        "trace",
        "import",
        t.to_str().unwrap(),
        "--out",
        pmt.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = pmlab(&["trace", "stats", pmt.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("500"), "{s}");
    let o = pmlab(&["trace", "dump", pmt.to_str().unwrap(), "--limit", "3"]);
    let dump = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        dump.lines().filter(|l| !l.starts_with('#')).count(),
        3,
        "{dump}"
    );
    // The text dump reads back as a trace of its own.
    let txt = d.join("t.txt");
    let full = pmlab(&["trace", "dump", pmt.to_str().unwrap()]);
    std::fs::write(&txt, &full.stdout).unwrap();
    let pmt2 = d.join("t2.pmt");
    let o = pmlab(&[
        "trace",
        "import",
        txt.to_str().unwrap(),
        "--out",
        pmt2.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let a = pmlab(&[
        "sim",
        "--config",
        "nvm-lalea",
        "--trace",
        pmt.to_str().unwrap(),
    ]);
    let b = pmlab(&[
        "sim",
        "--config",
        "nvm-lalea",
        "--trace",
        pmt2.to_str().unwrap(),
    ]);
    let strip = |o: &Output| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| !l.starts_with("host speed") && !l.starts_with("trace"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(strip(&a), strip(&b));
}

#[test]
fn bad_inputs_give_one_line_errors_not_panics() {
    let d = tmpdir("bad");
    let t = plain_trace(&d);
    // A PM window that leaves out the workload's PM heap is an error, not DRAM traffic (and,
    // for crash, not a failing recovery).
    for cmd in [
        vec!["sim", "--workload", "btree", "--ops", "30"],
        vec![
            "crash",
            "--workload",
            "btree",
            "--ops",
            "20",
            "--points",
            "3",
        ],
    ] {
        let mut a = cmd.clone();
        a.extend(["--config", "nvm-ppo", "--set", "system.pm_bytes=64"]);
        let o = pmlab(&a);
        let e = one_line_error(&o, &cmd);
        assert!(e.contains("outside the simulated PM"), "{e}");
    }
    // A generated workload runs on the full system: a config asking for the memory-only
    // replay is refused (the full system ran while the config, and its JSON, said memory).
    let o = pmlab(&[
        "sim",
        "--config",
        "optane",
        "--workload",
        "btree",
        "--ops",
        "10",
        "--set",
        "system.model=memory",
    ]);
    let e = one_line_error(&o, &"sim");
    assert!(
        e.contains("system.model = \"memory\" replays trace files"),
        "{e}"
    );
    // More threads than the config has hardware threads: refused before the run (it failed at
    // the first event of the thread beyond them, however late that came).
    let o = pmlab(&[
        "sim",
        "--config",
        "optane",
        "--workload",
        "hashmap-tx",
        "--threads",
        "8",
        "--ops",
        "10",
    ]);
    let e = one_line_error(&o, &"sim");
    assert!(
        e.contains("the workload has 8 threads; optane has 4 hardware threads"),
        "{e}"
    );
    // Options of the other input kind are refused, not ignored.
    for (args, want) in [
        (
            vec!["--trace", t.to_str().unwrap(), "--ops", "5"],
            "--ops applies to --workload",
        ),
        (
            vec!["--trace", t.to_str().unwrap(), "--seed", "2"],
            "--seed applies to --workload",
        ),
        (
            vec!["--workload", "btree", "--trace-clock", "memory"],
            "--trace-clock applies to --trace",
        ),
    ] {
        let mut a = vec!["sim", "--config", "nvm-ppo"];
        a.extend(args);
        let o = pmlab(&a);
        let e = one_line_error(&o, &a);
        assert!(e.contains(want), "{e}");
    }
    let cfg = d.join("bad.toml");
    std::fs::write(&cfg, "preset = \"optane\"\n[controller]\nwpq = 3\n").unwrap();
    let o = pmlab(&[
        "sim",
        "--config",
        cfg.to_str().unwrap(),
        "--trace",
        t.to_str().unwrap(),
    ]);
    let e = one_line_error(&o, &"sim");
    assert!(e.contains("bad.toml:3") && e.contains("wpq"), "{e}");

    // A truncated .pmt names the byte offset.
    let pmt = d.join("t.pmt");
    assert!(pmlab(&[
        "trace",
        "import",
        t.to_str().unwrap(),
        "--out",
        pmt.to_str().unwrap()
    ])
    .status
    .success());
    let bytes = std::fs::read(&pmt).unwrap();
    let cut = d.join("cut.pmt");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let o = pmlab(&[
        "sim",
        "--config",
        "optane",
        "--trace",
        cut.to_str().unwrap(),
    ]);
    let e = one_line_error(&o, &"sim");
    assert!(e.contains("byte"), "{e}");

    // A garbled plain trace names the line.
    let g = d.join("garbled.trace");
    std::fs::write(&g, "0x40 READ 1\n0x80 READX 2\n").unwrap();
    let o = pmlab(&["sim", "--config", "optane", "--trace", g.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("line 2"), "{}", stderr(&o));

    // Impossible overrides (a timing that rounds to 0 ps is as impossible as 0: it passed the
    // check on the ns value) and unknown section.
    for v in ["0", "0.0004"] {
        let o = pmlab(&[
            "sim",
            "--config",
            "optane",
            "--trace",
            t.to_str().unwrap(),
            "--set",
            &format!("device.timing.tburst_ns={v}"),
        ]);
        assert_eq!(o.status.code(), Some(1));
        assert!(stderr(&o).contains("tburst_ns"), "{v}: {}", stderr(&o));
    }
    let o = pmlab(&["reproduce", "--only", "nope", "--out", d.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("unknown section"));

    // Caches larger than the memory the process may use (here `ulimit -v` 2 GB against a 4 GiB
    // LLC's 5 GiB of arrays): one line naming the keys, before any allocation (an allocation
    // failure aborted the process and left the --json temporary behind).
    let json = d.join("huge.json");
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v 2000000 && exec \"{}\" sim --config nvm-ppo --workload btree --ops 50 \
             --set caches.llc.size_kib=4194304 --json \"{}\"",
            env!("CARGO_BIN_EXE_pmlab"),
            json.display()
        ))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("caches.*.size_kib") && e.trim().lines().count() == 1,
        "{e}"
    );
    assert!(std::fs::read_dir(&d).unwrap().all(|f| !f
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with("huge.json")));

    // An access running past the end of the address space is refused with its line (it was cut
    // short or dropped without a word); one ending at the last byte runs.
    let store_at = |name: &str, addr: &str| {
        let f = d.join(name);
        std::fs::write(
            &f,
            format!("# pmtrace text v1\nt0 store addr={addr} size=8\n"),
        )
        .unwrap();
        pmlab(&["sim", "--config", "nvm-ppo", "--trace", f.to_str().unwrap()])
    };
    let o = store_at("over.txt", "0xfffffffffffffffc");
    let e = one_line_error(&o, &"sim");
    assert!(e.contains("line 2") && e.contains("past the end"), "{e}");
    let o = store_at("edge.txt", "0xfffffffffffffff8");
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn reproduce_device_section_writes_csv_svg_and_report() {
    let d = tmpdir("repro");
    // A file of an earlier run that this one does not write goes with the earlier folder.
    std::fs::create_dir_all(d.join("device")).unwrap();
    std::fs::write(d.join("device/stale.csv"), b"old").unwrap();
    reproduce_quick("device", &d);
    let report = std::fs::read_to_string(d.join("REPORT.md")).unwrap();
    assert!(report.contains("## Device characterisation"));
    assert!(
        report.contains("## Headlines") && report.contains("* **Device presets**: 8 of 13"),
        "{report}"
    );
    assert!(
        report.contains("| optane | read amplification, random 64 B (x) | 4.00 |"),
        "{report}"
    );
    let csv = std::fs::read_to_string(d.join("device/bandwidth.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 5 * 4 * 7);
    for p in pmsim::config::preset_names() {
        let svg = std::fs::read_to_string(d.join(format!("device/bandwidth-{p}.svg"))).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("polyline"));
    }
    assert!(!d.join("device/stale.csv").exists());
    assert_eq!(
        std::fs::read_to_string(d.join("device/scale.txt")).unwrap(),
        "quick\n"
    );
    let left: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().starts_with('.'))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A section that fails leaves the earlier run's folder as it was, with nothing of its own
/// beside it (sections wrote their files one by one into their folder, so an interrupted or
/// failed one left old and new files mixed for the next report); `--only nvcache` where
/// nvcache cannot run (its driver is not found from this directory) fails instead of writing
/// a skipped section with exit 0.
#[test]
fn a_failed_section_leaves_the_earlier_folder_whole() {
    let d = tmpdir("repro-failed");
    std::fs::create_dir_all(d.join("nvcache")).unwrap();
    std::fs::write(d.join("nvcache/section.md"), b"earlier").unwrap();
    let o = pmlab(&[
        "reproduce",
        "--quick",
        "--only",
        "nvcache",
        "--out",
        d.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.trim()
            .lines()
            .last()
            .unwrap()
            .contains("--only nvcache: the section could not run"),
        "{e}"
    );
    assert_eq!(
        std::fs::read(d.join("nvcache/section.md")).unwrap(),
        b"earlier"
    );
    let names: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names, ["nvcache"], "{names:?}");
}

#[test]
fn reproduce_ppo_section_writes_the_summary_other_checks_read() {
    let d = tmpdir("repro-ppo");
    let o = pmlab(&[
        "reproduce",
        "--quick",
        "--only",
        "ppo",
        "--out",
        d.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let csv = std::fs::read_to_string(d.join("ppo/summary.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("experiment,workload,design,value"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let has = |exp: &str, wl: &str, design: &str| {
        rows.iter().any(|r| {
            r[0] == exp && r[1] == wl && r[2] == design && r[3].parse::<f64>().unwrap() > 0.0
        })
    };
    for exp in [
        "op_throughput_local",
        "op_throughput_hybrid",
        "mem_throughput_local",
        "mem_throughput_hybrid",
    ] {
        for design in ["epoch", "broi"] {
            assert!(
                has(exp, "ppo-hash", design) && has(exp, "geomean", design),
                "{exp} {design}"
            );
        }
    }
    for design in ["sync", "bsp"] {
        assert!(has("remote_throughput", "tpcc", design));
        assert!(has("remote_throughput", "geomean", design));
        for v in [128, 4096] {
            assert!(has(
                "element_size_throughput",
                &format!("hashmap-tx/{v}B"),
                design
            ));
        }
    }
    // Fig. 13: BSP is ahead of Sync with small elements.
    let value = |wl: &str, design: &str| -> f64 {
        rows.iter()
            .find(|r| r[0] == "element_size_throughput" && r[1] == wl && r[2] == design)
            .map(|r| r[3].parse().unwrap())
            .unwrap()
    };
    assert!(value("hashmap-tx/128B", "bsp") > 1.5 * value("hashmap-tx/128B", "sync"));
    let report = std::fs::read_to_string(d.join("REPORT.md")).unwrap();
    assert!(report.contains("## PPO / BROI"), "{report}");
    assert!(
        report.contains("**What this section models.** Modelled: buffered epoch"),
        "{report}"
    );
    assert!(
        report.contains("* **PPO/BROI**: BROI over Epoch"),
        "{report}"
    );
    for svg in [
        "broi_over_epoch.svg",
        "bsp_over_sync.svg",
        "fig13_element_size.svg",
    ] {
        let s = std::fs::read_to_string(d.join("ppo").join(svg)).unwrap();
        assert!(s.starts_with("<svg"));
    }
}

#[test]
fn reproduce_pmweaver_section_writes_the_summary_other_checks_read() {
    let d = tmpdir("repro-pmweaver");
    let o = pmlab(&[
        "reproduce",
        "--quick",
        "--only",
        "pmweaver",
        "--out",
        d.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let csv = std::fs::read_to_string(d.join("pmweaver/summary.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (norm, addr, data) = (
        col("exec_time_norm"),
        col("addr_coverage"),
        col("data_coverage"),
    );
    assert_eq!(&header[..3], &["workload", "system", "predictor"]);
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let row = |w: &str, s: &str, p: &str| {
        rows.iter()
            .find(|r| r[0] == w && r[1] == s && r[2] == p)
            .unwrap_or_else(|| panic!("no row {w} {s} {p}"))
    };
    let f = |r: &Vec<&str>, c: usize| r[c].parse::<f64>().unwrap();
    for w in ["btree", "tpcc-ll", "geomean"] {
        assert_eq!(f(row(w, "original", "none"), norm), 1.0);
        for s in ["enc-bmt", "dedup"] {
            assert!(
                f(row(w, s, "none"), norm) > 1.0,
                "{w} {s}: the engine costs time"
            );
            let ideal = f(row(w, s, "ideal"), norm);
            assert!(
                ideal < f(row(w, s, "none"), norm),
                "{w} {s}: ideal hides it"
            );
            assert_eq!(f(row(w, s, "ideal"), addr), 1.0);
            for pred in ["pmweaver", "janus"] {
                let r = row(w, s, pred);
                assert!((0.0..=1.0).contains(&f(r, addr)) && f(r, data) <= f(r, addr));
            }
        }
    }
    let report = std::fs::read_to_string(d.join("REPORT.md")).unwrap();
    assert!(report.contains("## PMWeaver") && report.contains("* **PMWeaver**"));
    for svg in ["fig18_exec_time.svg", "fig21_coverage.svg"] {
        let s = std::fs::read_to_string(d.join("pmweaver").join(svg)).unwrap();
        assert!(s.starts_with("<svg"));
    }
}

#[test]
fn ec_round_trips_with_m_shards_lost_or_corrupt() {
    let d = tmpdir("ec");
    let input = d.join("data.bin");
    let mut x = 12345u64;
    let bytes: Vec<u8> = (0..300_001)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(&input, &bytes).unwrap();
    let shards = d.join("shards");
    let o = pmlab(&[
        "ec",
        "encode",
        input.to_str().unwrap(),
        "--out",
        shards.to_str().unwrap(),
        "-k",
        "5",
        "-m",
        "3",
        "--block",
        "4096",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let manifest = shards.join("data.bin.pmec");
    // Lose two shards and corrupt a third: m = 3 failures.
    std::fs::remove_file(shards.join("data.bin.1.shard")).unwrap();
    std::fs::remove_file(shards.join("data.bin.6.shard")).unwrap();
    let mut c = std::fs::read(shards.join("data.bin.3.shard")).unwrap();
    c[100] ^= 0xff;
    std::fs::write(shards.join("data.bin.3.shard"), c).unwrap();
    let out = d.join("rebuilt.bin");
    let o = pmlab(&[
        "ec",
        "decode",
        manifest.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let report = String::from_utf8_lossy(&o.stdout);
    assert!(
        report.contains("missing [1, 6]") && report.contains("corrupt [3]"),
        "{report}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), bytes);
    // Damaged but recoverable: verify says so and fails, so that a script checking only the exit
    // status does not take the shards for healthy.
    let o = pmlab(&["ec", "verify", manifest.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("can be rebuilt"), "{}", stderr(&o));
    // A fourth loss is beyond m: a clear error, no output claimed.
    std::fs::remove_file(shards.join("data.bin.0.shard")).unwrap();
    let o = pmlab(&["ec", "verify", manifest.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let o = pmlab(&[
        "ec",
        "decode",
        manifest.to_str().unwrap(),
        "--out",
        d.join("x").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
}

#[test]
fn ec_bad_arguments_give_clear_errors() {
    let d = tmpdir("ecbad");
    let input = d.join("f");
    std::fs::write(&input, b"hello").unwrap();
    for (args, needle) in [
        (vec!["-k", "0"], "k"),
        (vec!["-k", "200", "-m", "100"], "255"),
        (vec!["--matrix", "magic"], "magic"),
        (vec!["--block", "0"], "block"),
    ] {
        let mut a = vec![
            "ec",
            "encode",
            input.to_str().unwrap(),
            "--out",
            d.to_str().unwrap(),
        ];
        a.extend(args.iter());
        let o = pmlab(&a);
        let e = one_line_error(&o, &a);
        assert!(e.contains(needle), "{a:?}: {e}");
    }
    let o = pmlab(&[
        "ec",
        "decode",
        d.join("none.pmec").to_str().unwrap(),
        "--out",
        "x",
    ]);
    assert_eq!(o.status.code(), Some(1));
    // Benchmarks: no code without parity (it printed a speed-up for RS(8,8) computing nothing),
    // no endless run (`--seconds inf` never returned), no repeated library or point (their runs
    // merged into one row under a footer counting half of them). Rejected before any run.
    std::fs::write(d.join("libisal.so.2"), b"").unwrap(); // named only, never loaded
    let lib = format!("x={}", d.display());
    let client = input.to_str().unwrap(); // exists: the arguments are refused before it runs
    for (args, needle) in [
        (vec!["ec", "bench", "-m", "0"], "-m"),
        // (a block whose stripe size overflowed panicked dividing by zero)
        (
            vec![
                "ec",
                "bench",
                "--in-cache",
                "--block",
                "18446744073709551615",
            ],
            "block size 18446744073709551615 is larger than the maximum",
        ),
        (
            vec![
                "ec",
                "percall",
                "--client",
                client,
                "--lib",
                &lib,
                "--seconds",
                "inf",
                "8:4:1024",
            ],
            "--seconds",
        ),
        (
            vec![
                "ec", "percall", "--client", client, "--lib", &lib, "--lib", &lib, "8:4:1024",
            ],
            "given twice",
        ),
        (
            vec![
                "ec", "percall", "--client", client, "--lib", &lib, "8:4:1024", "8:4:1024",
            ],
            "given twice",
        ),
        // (the client's usage text came after pmlab's line)
        (
            vec!["ec", "percall", "--client", client, "--lib", &lib, "8:4:3"],
            "percall point \"8:4:3\": BLOCK must be a positive multiple of 64",
        ),
        (
            vec![
                "ec", "percall", "--client", client, "--lib", &lib, "300:4:64",
            ],
            "needs 1 <= K <= 128",
        ),
    ] {
        let o = pmlab(&args);
        let e = stderr(&o);
        assert_ne!(o.status.code(), Some(0), "{args:?}");
        assert!(e.contains(needle), "{args:?}: {e}");
    }
}

#[test]
fn crash_at_reports_what_survived_and_lists_work() {
    let d = tmpdir("crash");
    let t = plain_trace(&d);
    let o = pmlab(&[
        "sim",
        "--config",
        "nvm-ppo",
        "--trace",
        t.to_str().unwrap(),
        "--crash-at-ns",
        "500",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("power failed at 500.0 ns"), "{out}");
    // A replayed write counts once acknowledged (not when it reached the controller, which every
    // issued write has by the cut), and the row says so.
    let row = out.lines().find(|l| l.starts_with("crash")).unwrap();
    assert!(row.contains("PM writes acknowledged"), "{row}");
    let o = pmlab(&[
        "sim",
        "--config",
        "nvm-ppo",
        "--trace",
        t.to_str().unwrap(),
        "--crash-at-ns=-1",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("non-negative"), "{}", stderr(&o));
    // Written `--crash-at-ns -1` too (clap took `-1` for an unknown option: a usage error of
    // several lines that did not say what was wrong); the clock's bound is said as one.
    for (v, want) in [
        ("-1", "--crash-at-ns -1: must be a non-negative time"),
        (
            "1.8446744073709552e16",
            "must be below 18446744073709552 ns",
        ),
    ] {
        let o = pmlab(&[
            "sim",
            "--config",
            "nvm-ppo",
            "--trace",
            t.to_str().unwrap(),
            "--crash-at-ns",
            v,
        ]);
        let e = one_line_error(&o, &v);
        assert!(e.contains(want), "{e}");
    }
    let o = pmlab(&["presets"]);
    let s = String::from_utf8_lossy(&o.stdout);
    for p in [
        "ddr4-2400",
        "pcm-pmweaver",
        "nvm-ppo",
        "nvm-lalea",
        "optane",
    ] {
        assert!(s.contains(p), "{s}");
    }
    let o = pmlab(&["plugins"]);
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("frfcfs") && s.contains("x86"), "{s}");
}

#[test]
fn pmweaver_store_dump_replays() {
    let d = tmpdir("pmw");
    let p = d.join("dump.txt");
    // PC, persistent/volatile, write/clwb, vaddr, size, data, tick (all hex).
    std::fs::write(
        &p,
        "@0x401000 P W 0x0000100000000040 0x8 0x1122334455667788 0x3e8\n\
         @0x401004 V W 0x7fff0000 0x8 0x0000100000000040 0x7d0\n\
         @0x401008 P C 0x0000100000000040 0x1 0x0 0xbb8\n",
    )
    .unwrap();
    let o = pmlab(&[
        "sim",
        "--config",
        "pcm-pmweaver",
        "--trace",
        p.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("pmweaver"), "{out}");
    assert!(out.contains("full system"), "{out}");
    // The PM store's line is written back by the clwb; the volatile store stays in DRAM's cache.
    assert!(out.contains("1 clwb/clflushopt write-backs"), "{out}");
}

/// A PMWeaver dump's gaps are gem5 time: two stores 2,664,000 ticks (2.664 us) apart take at
/// least that long, directly and after `trace import` (its header says GAP_CYCLES). They had
/// been retired as instructions at `cpu.width` per cycle: 0.389 us on pcm-pmweaver, IPC 8.00.
#[test]
fn a_pmweaver_dump_keeps_its_time_between_events() {
    let d = tmpdir("pmw-gap");
    let p = d.join("gap.txt");
    std::fs::write(
        &p,
        "@401a2c P W 100000000040 8 1 0\n@401a2c P W 100000000080 8 2 28a640\n",
    )
    .unwrap();
    let pmt = d.join("gap.pmt");
    let o = pmlab(&[
        "trace",
        "import",
        p.to_str().unwrap(),
        "--out",
        pmt.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    for trace in [&p, &pmt] {
        let o = pmlab(&[
            "sim",
            "--config",
            "pcm-pmweaver",
            "--trace",
            trace.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        let us: f64 = out
            .lines()
            .find_map(|l| l.strip_prefix("execution time"))
            .and_then(|l| l.trim().strip_suffix(" us"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{out}"));
        assert!((2.664..3.0).contains(&us), "{}: {us} us", trace.display());
    }
}

#[test]
fn workloads_lists_every_workload_with_model_and_defaults() {
    let o = pmlab(&["workloads"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(lines.len(), 26, "{out}");
    let btree = lines
        .iter()
        .find(|l| l.starts_with("btree "))
        .expect("btree listed");
    assert!(btree.contains("undo") && btree.contains("512"), "{btree}");
    let tatp = lines
        .iter()
        .find(|l| l.starts_with("tatp-hw "))
        .expect("tatp-hw listed");
    assert!(tatp.contains("hwtx"), "{tatp}");
}

#[test]
fn trace_gen_writes_a_deterministic_pmt_that_dump_and_stats_read() {
    let d = tmpdir("gen");
    let gen = |name: &str, seed: &str| {
        let out = d.join(name);
        let o = pmlab(&[
            "trace",
            "gen",
            "--workload",
            "queue-hw",
            "--threads",
            "2",
            "--ops",
            "300",
            "--seed",
            seed,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stderr(&o).contains("M events/s"), "{}", stderr(&o));
        std::fs::read(out).unwrap()
    };
    let a = gen("a.pmt", "7");
    assert_eq!(a, gen("b.pmt", "7"), "same seed, same bytes");
    assert_ne!(a, gen("c.pmt", "8"));
    let p = d.join("a.pmt");
    let o = pmlab(&["trace", "stats", p.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("workload 'queue-hw' threads 2 seed 7"), "{s}");
    assert!(s.contains("ops=300") && s.contains("txbegin"), "{s}");
    let o = pmlab(&["trace", "dump", p.to_str().unwrap(), "--limit", "5"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn trace_gen_exports_what_sim_simulates_with_every_generator_option() {
    // `trace gen` had no --remote-threads, --janus-hints or --value-bytes, so such a run of
    // `sim --workload` could not be kept as a trace (sim --trace refuses the flags).
    let d = tmpdir("gen-options");
    for (config, sets, workload, option) in [
        ("nvm-ppo", vec![], "ppo-hash", vec!["--remote-threads", "2"]),
        ("nvm-ppo", vec![], "ppo-hash", vec!["--value-bytes", "64"]),
        (
            "pcm-pmweaver",
            vec![
                "--set",
                "controller.bmo=enc-bmt",
                "--set",
                "controller.predictor=janus",
            ],
            "btree",
            vec!["--janus-hints"],
        ),
    ] {
        let pmt = d.join("t.pmt");
        let mut args = vec![
            "trace",
            "gen",
            "--workload",
            workload,
            "--ops",
            "60",
            "--out",
            pmt.to_str().unwrap(),
        ];
        args.extend(&option);
        let o = pmlab(&args);
        assert!(o.status.success(), "{option:?}: {}", stderr(&o));
        let run = |input: &[&str], json: &str| {
            let j = d.join(json);
            let mut args = vec!["sim", "--config", config, "--json", j.to_str().unwrap()];
            args.extend(&sets);
            args.extend(input);
            let o = pmlab(&args);
            assert!(o.status.success(), "{option:?}: {}", stderr(&o));
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
            (v["stats"].clone(), v["trace"]["params"].clone())
        };
        let mut generated = vec!["--workload", workload, "--ops", "60"];
        generated.extend(&option);
        let (from_generator, params) = run(&generated, "g.json");
        let (from_trace, header_params) = run(&["--trace", pmt.to_str().unwrap()], "t.json");
        assert_eq!(from_generator, from_trace, "{option:?}");
        // The option is in the trace's header, so the file says how it was made.
        assert_eq!(params, header_params);
        let name = option[0].trim_start_matches("--").replace('-', "_");
        assert!(
            header_params.as_str().unwrap().contains(&name),
            "{header_params}"
        );
    }
}

#[test]
fn trace_gen_bad_arguments_give_one_line_errors() {
    let d = tmpdir("genbad");
    let out = d.join("x.pmt");
    for (args, needle) in [
        (
            vec!["--workload", "no-such-workload"],
            "unknown workload 'no-such-workload'",
        ),
        (
            vec!["--workload", "btree", "--threads", "0"],
            "threads must be",
        ),
        (
            vec!["--workload", "btree", "--threads", "65"],
            "threads must be",
        ),
    ] {
        let mut a = vec!["trace", "gen"];
        a.extend(args);
        a.extend(["--out", out.to_str().unwrap()]);
        let o = pmlab(&a);
        assert!(!o.status.success());
        let e = stderr(&o);
        assert_eq!(e.trim_end().lines().count(), 1, "{e}");
        assert!(e.starts_with("pmlab: ") && e.contains(needle), "{e}");
    }
    let o = pmlab(&[
        "trace",
        "gen",
        "--workload",
        "btree",
        "--out",
        "/nonexistent-dir/x.pmt",
    ]);
    assert!(!o.status.success());
    assert_eq!(stderr(&o).trim_end().lines().count(), 1, "{}", stderr(&o));
}

#[test]
fn small_input_errors_name_what_is_wrong() {
    // A value of the wrong type names the setting.
    let o = pmlab(&[
        "sim",
        "--config",
        "pcm-pmweaver",
        "--workload",
        "btree",
        "--ops",
        "10",
        "--set",
        "controller.adr=maybe",
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("controller.adr=maybe"),
        "{}",
        stderr(&o)
    );
    // An unknown bare config name lists the presets.
    let o = pmlab(&["sim", "--config", "nosuchpreset", "--workload", "btree"]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("neither a preset") && e.contains("nvm-ppo"),
        "{e}"
    );
    // Zero parity shards protect nothing; zero crash points check nothing.
    let d = tmpdir("small-errors");
    let f = d.join("x.txt");
    std::fs::write(&f, b"hello").unwrap();
    let o = pmlab(&[
        "ec",
        "encode",
        f.to_str().unwrap(),
        "--out",
        d.join("shards").to_str().unwrap(),
        "-k",
        "4",
        "-m",
        "0",
    ]);
    assert!(
        !o.status.success() && stderr(&o).contains("-m"),
        "{}",
        stderr(&o)
    );
    let o = pmlab(&[
        "crash",
        "--config",
        "pcm-pmweaver",
        "--workload",
        "btree",
        "--points",
        "0",
    ]);
    assert!(
        !o.status.success() && stderr(&o).contains("--points"),
        "{}",
        stderr(&o)
    );
    // More points than any run can take: refused before the reference run (it panicked
    // allocating, after that run).
    let o = pmlab(&[
        "crash",
        "--config",
        "pcm-pmweaver",
        "--workload",
        "btree",
        "--points",
        "18446744073709551615",
    ]);
    assert!(
        o.status.code() == Some(2)
            && stderr(&o).contains("--points")
            && !stderr(&o).contains("panicked"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn trace_stats_ends_with_a_newline() {
    let d = tmpdir("stats-nl");
    let t = d.join("t.pmt");
    let o = pmlab(&[
        "trace",
        "gen",
        "--workload",
        "linkedlist",
        "--ops",
        "20",
        "--out",
        t.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = pmlab(&["trace", "stats", t.to_str().unwrap()]);
    assert!(o.status.success());
    assert!(o.stdout.ends_with(b"\n"));
    let left: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
    assert_eq!(left.len(), 1, "trace gen leaves no temporary file");
}

#[test]
fn an_output_in_a_missing_directory_is_refused_before_simulating() {
    // A missing directory, a directory, or a place where no file can be made, as the JSON
    // file: refused at once (the last two were found only after the simulation).
    let d = tmpdir("json-dir");
    for (json, says) in [
        (
            "/nonexistent-pmlab-dir/x.json",
            "no directory /nonexistent-pmlab-dir",
        ),
        (d.to_str().unwrap(), "is a directory"),
        ("/proc/pmlab-x.json", "cannot write"),
    ] {
        let o = pmlab(&[
            "sim",
            "--config",
            "nvm-ppo",
            "--workload",
            "btree",
            "--ops",
            "200",
            "--json",
            json,
        ]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains(says), "{err}");
        assert!(o.stdout.is_empty(), "simulated before refusing");
    }
    assert_eq!(
        std::fs::read_dir(&d).unwrap().count(),
        0,
        "temporary file left"
    );
}

#[test]
fn an_imported_plain_trace_replays_as_the_plain_trace_does() {
    // A memory-request stream stays one after `trace import`: the .pmt replays on the memory
    // system (on the PM device), with the same results as the text it came from.
    let d = tmpdir("import-plain");
    let plain = plain_trace(&d);
    let pmt = d.join("plain.pmt");
    let o = pmlab(&[
        "trace",
        "import",
        plain.to_str().unwrap(),
        "--out",
        pmt.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stats = |trace: &Path, json: &str| {
        let j = d.join(json);
        let o = pmlab(&[
            "sim",
            "--config",
            "optane",
            "--trace",
            trace.to_str().unwrap(),
            "--json",
            j.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
        (v["summary"].clone(), v["stats"].clone())
    };
    let (a, sa) = stats(&plain, "a.json");
    let (b, sb) = stats(&pmt, "b.json");
    assert_eq!(a, b);
    assert_eq!(sa, sb);
    assert!(sb["counters"]["mc.writes_accepted"].as_u64().unwrap() > 0);
}

#[test]
fn pmec_results_give_each_timed_point_its_median_range_and_runs() {
    let d = tmpdir("repro-pmec");
    let o = pmlab(&[
        "reproduce",
        "--quick",
        "--only",
        "pmec",
        "--out",
        d.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let csv = std::fs::read_to_string(d.join("pmec/results.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (med, lo, hi, runs) = (
        col("pmec_gbps"),
        col("pmec_min_gbps"),
        col("pmec_max_gbps"),
        col("runs"),
    );
    let mut rows = 0;
    // Cells split at commas outside double quotes (config and schedule hold commas).
    let cells = |l: &str| -> Vec<String> {
        let (mut out, mut cur, mut quoted) = (Vec::new(), String::new(), false);
        for c in l.chars() {
            match c {
                '"' => quoted = !quoted,
                ',' if !quoted => out.push(std::mem::take(&mut cur)),
                _ => cur.push(c),
            }
        }
        out.push(cur);
        out
    };
    for l in lines {
        let f = cells(l);
        assert_eq!(f.len(), header.len(), "{l}");
        let num = |i: usize| f[i].parse::<f64>().unwrap();
        assert!(num(lo) <= num(med) && num(med) <= num(hi), "{l}");
        assert!(num(runs) >= 2.0, "{l}");
        rows += 1;
    }
    assert!(rows > 10, "{csv}");
}

#[test]
fn trace_clock_is_explicit_and_survives_import() {
    // DRAMsim3 reads a plain trace's cycles on the memory clock: `--trace-clock memory` on the
    // text and on a .pmt imported with it give the same replay, and differ from `cpu`.
    let d = tmpdir("trace-clock");
    let plain = plain_trace(&d);
    let pmt = d.join("mem.pmt");
    let o = pmlab(&[
        "trace",
        "import",
        plain.to_str().unwrap(),
        "--trace-clock",
        "memory",
        "--out",
        pmt.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let sim = |trace: &Path, extra: &[&str], json: &str| {
        let j = d.join(json);
        let mut args = vec![
            "sim",
            "--config",
            "ddr4-2400",
            "--trace",
            trace.to_str().unwrap(),
            "--json",
            j.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = pmlab(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
        // The JSON's config is the one that ran: its clock came from the flag or the header
        // (it said `cpu` for every run, so the file did not name its own run).
        let clock = v["config"]["replay"]["trace_clock"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            out.contains(&format!("trace clock `{clock}`")),
            "{clock}: {out}"
        );
        (out, v["summary"].clone())
    };
    let (text_out, text_mem) = sim(&plain, &["--trace-clock", "memory"], "a.json");
    assert!(text_out.contains("trace clock `memory`"), "{text_out}");
    let (pmt_out, pmt_mem) = sim(&pmt, &[], "b.json");
    assert!(pmt_out.contains("trace clock `memory`"), "{pmt_out}");
    assert_eq!(text_mem, pmt_mem);
    let (cpu_out, cpu) = sim(&plain, &[], "c.json");
    assert!(cpu_out.contains("trace clock `cpu`"), "{cpu_out}");
    assert_ne!(cpu, text_mem, "the clock changes the replay");
    // An explicit flag beats the header.
    let (pmt_cpu_out, pmt_cpu) = sim(&pmt, &["--trace-clock", "cpu"], "d.json");
    assert!(pmt_cpu_out.contains("trace clock `cpu`"), "{pmt_cpu_out}");
    assert_eq!(pmt_cpu, cpu);
    // A program trace has no memory clock to count.
    let prog = d.join("prog.pmt");
    let o = pmlab(&[
        "trace",
        "gen",
        "--workload",
        "queue",
        "--ops",
        "20",
        "--out",
        prog.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = pmlab(&[
        "trace",
        "import",
        prog.to_str().unwrap(),
        "--trace-clock",
        "memory",
        "--out",
        d.join("x.pmt").to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("program trace"), "{}", stderr(&o));
    assert!(!d.join("x.pmt").exists());
    let o = pmlab(&[
        "sim",
        "--config",
        "optane",
        "--trace",
        prog.to_str().unwrap(),
        "--trace-clock",
        "memory",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("program trace"), "{}", stderr(&o));
}

#[test]
fn unwritable_standard_output_is_one_line_or_a_quiet_sigpipe_not_a_panic() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    // A full disk behind standard output: one line, exit status 1; also for the help and the
    // version, which clap printed ignoring the error (exit 0).
    // A trace dump shorter than a buffer (it exited 0: a second buffer hid the failed write).
    let small = std::env::temp_dir().join(format!("pmlab-cli-{}-small.trace", std::process::id()));
    std::fs::write(&small, "0x1000 READ 10\n0x1040 WRITE 15\n").unwrap();
    let dump = ["trace", "dump", small.to_str().unwrap()];
    for args in [
        &["presets"][..],
        &["--help"],
        &["sim", "--help"],
        &["--version"],
        &dump[..],
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_pmlab"))
            .args(args)
            .stdout(full)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("cannot write to standard output"), "{err}");
    }
    // Standard error that cannot be written costs its notes, not the run (`trace gen` ended
    // with a panic's exit status 101 after writing its file).
    let pmt = std::env::temp_dir().join(format!("pmlab-cli-{}-noerr.pmt", std::process::id()));
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_pmlab"))
        .args([
            "trace",
            "gen",
            "--workload",
            "queue",
            "--ops",
            "20",
            "--out",
        ])
        .arg(&pmt)
        .stderr(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(std::fs::metadata(&pmt).unwrap().len() > 0);
    std::fs::remove_file(&pmt).unwrap();
    // A reader that closed the pipe: SIGPIPE ends pmlab as it ends other Unix tools.
    let mut child = Command::new(env!("CARGO_BIN_EXE_pmlab"))
        .arg("presets")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        out.status.success() || out.status.signal() == Some(13),
        "{:?}: {err}",
        out.status
    );
}

#[test]
fn a_missing_config_path_is_an_error_not_the_preset_of_its_name() {
    let out = pmlab(&[
        "sim",
        "--config",
        "/nonexistent-pmlab-dir/optane.toml",
        "--workload",
        "btree",
        "--ops",
        "10",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("/nonexistent-pmlab-dir/optane.toml: cannot read config"),
        "{err}"
    );
}

#[test]
fn ec_bench_refuses_bad_points_and_sizes_before_filling_its_pool() {
    // Each used to fill a 1 GiB pool first (or wrapped to 0 and ran).
    for (args, says) in [
        (vec!["-k", "0"], "k (data blocks) must be at least 1"),
        (vec!["--threads", "0"], "must be positive"),
        (
            vec!["--threads", "100000"],
            "--threads 100000: at most 1024",
        ),
        // A block larger than the pool in cache: built pointers past the pool (a segfault).
        (
            vec!["--in-cache", "--pool-mb", "1", "--block", "1048576"],
            "pool too small for k=8, block=1048576",
        ),
        // (an abort with a backtrace: the stripe list could not be allocated)
        (
            vec![
                "--in-cache",
                "--pool-mb",
                "1",
                "--mb-per-rep",
                "99999999999",
            ],
            "too many stripes to list in memory",
        ),
        (
            vec!["--mb-per-rep", "17592186044416"],
            "--mb-per-rep 17592186044416: too large",
        ),
        (
            vec!["--pool-mb", "17592186044416"],
            "--pool-mb 17592186044416: too large",
        ),
    ] {
        let mut a = vec!["ec", "bench", "--reps", "1"];
        a.extend(args);
        let o = pmlab(&a);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{a:?}: {err}");
        assert!(err.contains(says), "{a:?}: {err}");
        assert!(o.stdout.is_empty(), "{a:?} ran");
    }
}

/// Starts pmlab with `args` in the background, its output discarded.
fn spawn_quiet(args: &[&std::ffi::OsStr]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_pmlab"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// Sends signal `sig` to `child` and checks that it ended by that signal.
fn interrupt(child: &mut std::process::Child, sig: i32) {
    use std::os::unix::process::ExitStatusExt;
    let killed = Command::new("kill")
        .args([format!("-{sig}"), child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(sig), "{status:?}");
}

#[test]
fn an_interrupted_writer_leaves_no_temporary_file() {
    let d = tmpdir("interrupt");
    let out = d.join("big.pmt");
    let mut child = spawn_quiet(&[
        "trace".as_ref(),
        "gen".as_ref(),
        "--workload".as_ref(),
        "ycsb".as_ref(),
        "--ops".as_ref(),
        "100000000".as_ref(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    // Wait until the temporary file exists (the trace is being written), then interrupt.
    let mut waited = 0;
    while std::fs::read_dir(&d).unwrap().count() == 0 && waited < 600 {
        std::thread::sleep(std::time::Duration::from_millis(50));
        waited += 1;
    }
    assert_eq!(
        std::fs::read_dir(&d).unwrap().count(),
        1,
        "no temporary file appeared"
    );
    interrupt(&mut child, 15);
    let left: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn an_interrupted_reproduce_leaves_no_staging_folder() {
    let d = tmpdir("interrupt-reproduce");
    let mut child = spawn_quiet(&[
        "reproduce".as_ref(),
        "--quick".as_ref(),
        "--only".as_ref(),
        "pmweaver".as_ref(),
        "--out".as_ref(),
        d.as_os_str(),
    ]);
    // Wait until the section has written a file into its staging folder, then interrupt.
    let staged_files = || -> usize {
        std::fs::read_dir(&d)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(".staging-"))
            .map(|e| {
                std::fs::read_dir(e.path().join("pmweaver"))
                    .map(|r| r.count())
                    .unwrap_or(0)
            })
            .sum()
    };
    let mut waited = 0;
    while staged_files() == 0 && waited < 1200 {
        std::thread::sleep(std::time::Duration::from_millis(50));
        waited += 1;
    }
    assert!(staged_files() > 0, "no staged file appeared");
    interrupt(&mut child, 2);
    let left: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn an_interrupted_ec_encode_leaves_no_temporary_shard() {
    let d = tmpdir("interrupt-ec");
    // 1 GiB of zeros, sparse: its 1.5 GiB of shards take seconds to write and sync, so the
    // interrupt lands while they are being written.
    let input = d.join("big.bin");
    std::fs::File::create(&input)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let out = d.join("shards");
    let mut child = spawn_quiet(&[
        "ec".as_ref(),
        "encode".as_ref(),
        "-k".as_ref(),
        "4".as_ref(),
        "-m".as_ref(),
        "2".as_ref(),
        input.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    let temps = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&out)
            .map(|r| r.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default()
    };
    let mut waited = 0;
    while temps().len() < 6 && waited < 600 {
        std::thread::sleep(std::time::Duration::from_millis(20));
        waited += 1;
    }
    let before = temps();
    assert!(
        before.len() == 6
            && before
                .iter()
                .all(|p| p.to_string_lossy().ends_with(".pmec-tmp")),
        "not 6 temporary shards being written: {before:?}"
    );
    interrupt(&mut child, 2);
    assert!(temps().is_empty(), "left behind: {:?}", temps());
    // ... nor the folder the run made for them.
    assert!(!out.exists(), "{} left behind", out.display());
    let _ = std::fs::remove_dir_all(&d);
}

/// A write past the file-size limit (`ulimit -f`) ends pmlab with SIGXFSZ, as it ends any
/// program, but after removing the temporary shards (they were left behind).
#[test]
fn an_ec_encode_past_the_file_size_limit_leaves_no_temporary_shard() {
    use std::os::unix::process::ExitStatusExt;
    let d = tmpdir("xfsz-ec");
    let input = d.join("f.bin");
    std::fs::write(&input, vec![7u8; 3 << 20]).unwrap();
    let out = d.join("shards");
    let status = Command::new("bash")
        .arg("-c")
        .arg(r#"ulimit -f 200 && exec "$0" ec encode -k 8 -m 4 "$1" --out "$2""#)
        .arg(env!("CARGO_BIN_EXE_pmlab"))
        .arg(&input)
        .arg(&out)
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.signal(), Some(25), "{status:?}");
    let left: Vec<_> = std::fs::read_dir(&out)
        .map(|r| r.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "left behind: {left:?}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_config_key_set_twice_is_refused() {
    let o = pmlab(&[
        "sim",
        "--config",
        "optane",
        "--workload",
        "btree",
        "--ops",
        "10",
        "--set",
        "controller.adr=true",
        "--set",
        "controller.adr=false",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("key `controller.adr` given twice"), "{err}");
}

/// `pmlab reproduce --quick --only SECTION --out DIR`, which must succeed.
fn reproduce_quick(section: &str, d: &Path) {
    let o = pmlab(&[
        "reproduce",
        "--quick",
        "--only",
        section,
        "--out",
        d.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{section}: {}", stderr(&o));
}

#[test]
fn reproduced_throughputs_count_the_operations_time_only() {
    // Independent oracle: the same runs through `pmlab sim`, the run with no operations (the
    // load phase) subtracted from the run's time and work. tatp-hw's load phase takes nearly
    // all of a 400-operation run, so a throughput over the whole run would be far off; ycsb
    // inserts its records as operations, 16 per thread already in the load run.
    let d = tmpdir("throughputs");
    reproduce_quick("lalea", &d);
    let csv = std::fs::read_to_string(d.join("lalea/summary.csv")).unwrap();
    // A baseline's throughput over itself (1 in every row) is not listed.
    assert!(
        !csv.lines().any(
            |l| l.starts_with("throughput_over_redu") && l.contains(",redu,")
                || l.starts_with("throughput_over_lad") && l.contains(",lad,")
        ),
        "{csv}"
    );
    let reported: f64 = csv
        .lines()
        .find_map(|l| l.strip_prefix("tx_per_s,tatp-hw,redu,"))
        .expect("tatp-hw's throughput under REDU")
        .parse()
        .unwrap();
    let run = |ops: &str| {
        sim_with_stats(&[
            "--config",
            "nvm-lalea",
            "--workload",
            "tatp-hw",
            "--threads",
            "4",
            "--ops",
            ops,
            "--set",
            "controller.logging=redu",
        ])
        .1
    };
    let (full, load) = (run("400"), run("0"));
    let c = |s: &str, k: &str| json_counter(s, k) as f64;
    let expected = (c(&full, "cpu.tx_ends") - c(&load, "cpu.tx_ends"))
        / ((c(&full, "sim.time_ps") - c(&load, "sim.time_ps")) * 1e-12);
    assert!(
        (reported / expected - 1.0).abs() < 1e-3,
        "reported {reported}, expected {expected} transactions/s"
    );
    // The workloads section: ycsb on nvm-lalea.
    reproduce_quick("workloads", &d);
    let csv = std::fs::read_to_string(d.join("workloads/runs.csv")).unwrap();
    let row: Vec<&str> = csv
        .lines()
        .find(|l| l.starts_with("ycsb,nvm-lalea,"))
        .expect("ycsb on nvm-lalea")
        .split(',')
        .collect();
    let reported: f64 = row[5].parse().unwrap();
    let run = |ops: &str| {
        sim_with_stats(&[
            "--config",
            "nvm-lalea",
            "--workload",
            "ycsb",
            "--threads",
            "4",
            "--ops",
            ops,
        ])
        .1
    };
    let (full, load) = (run("400"), run("0"));
    // ycsb's records: a fifth of each thread's operations, at least 16 (pmwork's ycsb.rs); the
    // window holds the requested operations and the inserts past the load run's 16 per thread.
    let window_ops = 400.0 + 4.0 * ((100.0f64 / 5.0).max(16.0) - 16.0);
    let expected = window_ops / ((c(&full, "sim.time_ps") - c(&load, "sim.time_ps")) * 1e-12) / 1e3;
    assert!(
        (reported / expected - 1.0).abs() < 2e-3,
        "reported {reported}, expected {expected} kops/s"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn an_rdma_write_inside_a_hardware_transaction_is_acknowledged() {
    // The logging engine took the RDMA write over as if it were the transaction's cache
    // write-back, so it was never acknowledged and the fence after it waited for ever
    // ("internal error: thread 0 waits ... but the memory system is idle").
    let d = tmpdir("rdma-in-tx");
    let t = d.join("t.txt");
    std::fs::write(
        &t,
        "# pmtrace text v1\nt0 txbegin\nt0 store addr=0x100000000000 size=8\n\
         t0 rdmapwrite addr=0x100000000000 size=8\nt0 sfence\nt0 txend\n",
    )
    .unwrap();
    for (logging, ordering) in [("redu", "x86"), ("lalea+blom", "broi"), ("lad", "epoch")] {
        let (_, stats) = sim_with_stats(&[
            "--config",
            "nvm-lalea",
            "--trace",
            t.to_str().unwrap(),
            "--set",
            &format!("controller.logging={logging}"),
            "--set",
            &format!("controller.ordering={ordering}"),
        ]);
        // The write reached PM as the RDMA write it is, and the fence after it waited for its
        // acknowledgement, which came (the run ended).
        assert_eq!(
            json_counter(&stats, "net.remote_writes"),
            1,
            "{logging}/{ordering}"
        );
        assert_eq!(
            json_counter(&stats, "pm.rdma_writes"),
            1,
            "{logging}/{ordering}"
        );
        assert!(
            json_counter(&stats, "net.stall_ack_ps") > 0,
            "{logging}/{ordering}: the fence did not wait for the acknowledgement"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_text_dump_imports_back_to_the_same_trace() {
    // pmlab's own text dump is no foreign format: dump -> import -> dump gives the same bytes
    // (the import once marked it IMPORTED), and --workload renames it (once ignored).
    let d = tmpdir("dump-import");
    let p = |name: &str| d.join(name).display().to_string();
    let o = pmlab(&[
        "trace",
        "gen",
        "--workload",
        "btree",
        "--ops",
        "50",
        "--out",
        &p("a.pmt"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let dump = |pmt: &str| {
        let o = pmlab(&["trace", "dump", pmt]);
        assert!(o.status.success(), "{}", stderr(&o));
        o.stdout
    };
    let first = dump(&p("a.pmt"));
    std::fs::write(d.join("a.txt"), &first).unwrap();
    let o = pmlab(&["trace", "import", &p("a.txt"), "--out", &p("b.pmt")]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(dump(&p("b.pmt")), first);
    let o = pmlab(&[
        "trace",
        "import",
        &p("a.txt"),
        "--out",
        &p("c.pmt"),
        "--workload",
        "renamed",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(dump(&p("c.pmt"))).unwrap();
    assert!(text.contains("# workload=renamed\n"), "{text}");
}

/// An output path that is a directory is refused before the input is read (it failed when the
/// finished file was renamed over it, after the whole import or generation).
#[test]
fn an_output_that_is_a_directory_is_refused_before_the_work() {
    let d = tmpdir("out-dir");
    let g = d.join("garbled.trace");
    std::fs::write(&g, "0x40 READ 1\n0x80 READX 2\n").unwrap();
    let out = d.join("out.pmt");
    std::fs::create_dir(&out).unwrap();
    for args in [
        vec![
            "trace",
            "import",
            g.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        vec![
            "trace",
            "gen",
            "--workload",
            "btree",
            "--ops",
            "20",
            "--out",
            out.to_str().unwrap(),
        ],
    ] {
        let o = pmlab(&args);
        let e = one_line_error(&o, &args);
        assert!(e.contains("is a directory") && !e.contains("line 2"), "{e}");
        assert!(!e.contains("generated"), "{e}");
    }
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 2);
}

/// A thread that cannot start is one error line, not a panic: the trace reader's, the
/// workload generator's and a sweep's workers (here every thread asks for a 1 PiB stack; under a
/// memory limit, a sweep with many --jobs ran out of threads the same way).
#[test]
fn a_thread_that_cannot_start_is_an_error_not_a_panic() {
    let d = tmpdir("no-threads");
    let t = plain_trace(&d);
    let out = d.join("s.csv");
    for (args, want) in [
        (
            vec!["sim", "--config", "optane", "--trace", t.to_str().unwrap()],
            "starting the trace reader thread",
        ),
        (
            vec![
                "sim",
                "--config",
                "optane",
                "--workload",
                "btree",
                "--ops",
                "10",
            ],
            "cannot start the generator thread",
        ),
        (
            vec![
                "sweep",
                "--config",
                "optane",
                "--workload",
                t.to_str().unwrap(),
                "--jobs",
                "2",
                "--out",
                out.to_str().unwrap(),
            ],
            "cannot start a worker thread",
        ),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_pmlab"))
            .args(&args)
            .env("RUST_MIN_STACK", (1u64 << 50).to_string())
            .output()
            .unwrap();
        let e = one_line_error(&o, &args);
        assert!(e.contains(want) && !e.contains("panicked"), "{e}");
    }
    assert!(!out.exists());
}

#[test]
fn an_output_that_names_an_input_is_refused_and_the_input_kept() {
    // The output is renamed over its name when complete: naming an input there (directly, by a
    // symbolic link or as ./name) replaced the input after the run had read it.
    let d = tmpdir("out-is-input");
    let trace = plain_trace(&d);
    let link = d.join("link.trace");
    std::os::unix::fs::symlink(&trace, &link).unwrap();
    let config = d.join("c.toml");
    std::fs::write(&config, "preset = \"nvm-ppo\"\n").unwrap();
    let dotted = format!("{}/./plain.trace", d.display());
    let (t, l, c) = (
        trace.to_str().unwrap(),
        link.to_str().unwrap(),
        config.to_str().unwrap(),
    );
    let before = std::fs::read(&trace).unwrap();
    for args in [
        vec!["sim", "--config", c, "--trace", t, "--json", l],
        vec!["sim", "--config", c, "--trace", t, "--json", c],
        vec!["trace", "import", t, "--out", &dotted],
        vec!["sweep", "--config", c, "--workload", t, "--out", l],
        vec!["sweep", "merge", "--out", t, t],
    ] {
        let e = one_line_error(&pmlab(&args), &args);
        assert!(e.contains("(the output would replace it)"), "{args:?}: {e}");
        assert_eq!(std::fs::read(&trace).unwrap(), before, "{args:?}");
    }
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "preset = \"nvm-ppo\"\n"
    );
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 3, "files left");
}

#[test]
fn percall_passes_the_clients_warnings_on() {
    // A client that runs but warns (a library variable it does not take: the run measured the
    // default under the name given) said nothing: its standard error was dropped.
    let d = tmpdir("percall-warn");
    std::fs::write(d.join("libisal.so.2"), b"").unwrap(); // named only, never loaded
    let client = d.join("client.sh");
    std::fs::write(
        &client,
        "#!/bin/sh\necho \"pmec: PMEC_STRATEGY: unknown strategy 'bogus'; using auto\" >&2\n\
         echo 'point=RS(12,8) block=1024 in_cache=1 encode_gbps=4.0 move_gbps=5.0 \
         move_nt_gbps=5.5 parity_crc=00ff'\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&client, std::fs::Permissions::from_mode(0o755)).unwrap();
    let lib = format!("p={},PMEC_STRATEGY=bogus", d.display());
    let o = pmlab(&[
        "ec",
        "percall",
        "--client",
        client.to_str().unwrap(),
        "--rounds",
        "2",
        "--lib",
        &lib,
        "8:4:1024",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(
        e.matches("percall on p: pmec: PMEC_STRATEGY: unknown strategy 'bogus'")
            .count(),
        1,
        "once, not once per round: {e}"
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("| RS(12,8) | 1024 | p |"));
}

#[test]
fn reproduce_refuses_an_output_it_cannot_write_before_running_anything() {
    // Found only when the first section wrote its results (7 s into `--only ppo --quick`).
    let d = tmpdir("reproduce-out");
    let file = d.join("a-file");
    std::fs::write(&file, b"keep").unwrap();
    std::fs::create_dir(d.join("dir")).unwrap();
    std::fs::write(d.join("dir").join("ppo"), b"").unwrap();
    let dir = d.join("dir");
    // REPORT.md a directory, a section's folder a dangling link: found after the section ran.
    let odd = d.join("odd");
    std::fs::create_dir_all(odd.join("REPORT.md")).unwrap();
    let linked = d.join("linked");
    std::fs::create_dir(&linked).unwrap();
    std::os::unix::fs::symlink("/nonexistent/x", linked.join("ppo")).unwrap();
    for (out, says) in [
        (file.to_str().unwrap(), "not a directory"),
        (
            dir.to_str().unwrap(),
            "is not a directory (section ppo writes there)",
        ),
        (odd.to_str().unwrap(), "REPORT.md is a directory"),
        (
            linked.to_str().unwrap(),
            "is not a directory (section ppo writes there)",
        ),
    ] {
        let args = ["reproduce", "--quick", "--only", "ppo", "--out", out];
        let e = one_line_error(&pmlab(&args), &args);
        assert!(e.contains(says), "{e}");
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"keep");
}

#[test]
fn an_import_workload_name_too_long_names_the_flag() {
    // (a plain trace's header refused it as "bad header: workload name is 300 bytes")
    let d = tmpdir("import-name");
    let t = plain_trace(&d);
    let long = "w".repeat(300);
    let out = d.join("x.pmt");
    let args = [
        "trace",
        "import",
        t.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--workload",
        &long,
    ];
    let e = one_line_error(&pmlab(&args), &args);
    assert!(e.contains("--workload: 300 bytes (at most 256)"), "{e}");
    assert!(!out.exists());
}

/// `--ticks-per-cycle` applies to PMWeaver dumps only: given for another format it is refused
/// (it was accepted and ignored), and nothing is written.
#[test]
fn ticks_per_cycle_for_a_trace_without_ticks_is_refused() {
    let d = tmpdir("ticks");
    let plain = plain_trace(&d);
    let out = d.join("t.pmt");
    let o = pmlab(&[
        "trace",
        "import",
        plain.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--ticks-per-cycle",
        "5",
    ]);
    let err = one_line_error(&o, &"--ticks-per-cycle on a plain trace");
    assert!(err.contains("only PMWeaver dumps count ticks"), "{err}");
    assert!(!out.exists());
    let dump = d.join("w.txt");
    std::fs::write(&dump, "@401a2c P W 100000000040 8 1 0\n").unwrap();
    let o = pmlab(&[
        "trace",
        "import",
        dump.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--ticks-per-cycle",
        "5",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A run cut by `--crash-at-ns` while its only thread waits (here behind PCM writes): the
/// thread's time runs to the cut, so its cycles are the run's (they stopped at its last event,
/// 37,975 against 57,057, and its IPC read 0.26 against the run's 0.17).
#[test]
fn a_thread_waiting_at_the_cut_has_run_until_it() {
    let (_, stats) = sim_with_stats(&[
        "--config",
        "pcm-pmweaver",
        "--workload",
        "btree",
        "--ops",
        "150",
        "--crash-at-ns",
        "19000",
    ]);
    let run = json_counter(&stats, "cpu.cycles");
    assert_eq!(json_counter(&stats, "cpu.threads"), 1);
    assert!(run > 50_000, "{run} cycles");
    assert_eq!(json_counter(&stats, "cpu.t0.cycles"), run);
}

/// `trace import` refuses an await of events that do not come before it, as `pmlab sim`
/// does (the import had written the `.pmt`, which sim then refused), and writes nothing.
#[test]
fn import_refuses_an_await_of_events_that_come_later() {
    let d = tmpdir("await-order");
    let bad = d.join("aw.txt");
    std::fs::write(
        &bad,
        "# pmtrace text v2\n# threads=2\nt0 await after=t1:1000\nt1 compute gap=1\n# end events=2\n",
    )
    .unwrap();
    let out = d.join("aw.pmt");
    let o = pmlab(&[
        "trace",
        "import",
        bad.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = one_line_error(&o, &"await of later events");
    assert!(
        err.contains("thread 0 awaits event 1000 of thread 1, but only 0"),
        "{err}"
    );
    assert!(!out.exists());
    let good = d.join("ok.txt");
    std::fs::write(
        &good,
        "# pmtrace text v2\n# threads=2\nt1 compute gap=1\nt0 await after=t1:1\n# end events=2\n",
    )
    .unwrap();
    let o = pmlab(&[
        "trace",
        "import",
        good.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}
