//! End-to-end tests of `pmlab sweep`: one process, `--shard`, launcher environments and
//! `sweep merge` must all give the same CSV, byte for byte; bad input gives one-line errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Launcher variables that would make a test's `pmlab` a shard without being asked.
const LAUNCHER_VARS: &[&str] = &[
    "PMI_RANK",
    "PMI_SIZE",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_MAX",
    "SLURM_ARRAY_TASK_COUNT",
    "SLURM_ARRAY_TASK_STEP",
    "MPI_LOCALNRANKS",
    "OMPI_COMM_WORLD_LOCAL_SIZE",
];

fn pmlab_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pmlab"));
    for v in LAUNCHER_VARS {
        cmd.env_remove(v);
    }
    cmd.args(args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .output()
        .expect("run pmlab")
}

fn pmlab(dir: &Path, args: &[&str]) -> Output {
    pmlab_env(dir, args, &[])
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pmlab-sweep-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A plain memory trace (`0xADDR READ|WRITE CYCLE`): reads and writes over a few rows;
/// `stride` varies the address pattern between workloads.
fn plain_trace(dir: &Path, name: &str, stride: u64) -> String {
    let mut s = String::from("# addr op cycle\n");
    for i in 0..400u64 {
        let addr = (i * stride % 4096) * 64;
        let op = if i % 3 == 0 { "WRITE" } else { "READ" };
        s.push_str(&format!("0x{addr:x} {op} {}\n", i * 10));
    }
    std::fs::write(dir.join(name), s).unwrap();
    name.to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// 2 configs × 2 workloads × adr=true,false: 8 jobs.
fn grid_args<'a>(out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "sweep",
        "--config",
        "optane",
        "nvm-ppo",
        "--workload",
        "a.trace",
        "b.trace",
        "--set",
        "controller.adr=true,false",
        "--out",
        out,
    ];
    a.extend_from_slice(extra);
    a
}

fn setup(name: &str) -> PathBuf {
    let d = tmpdir(name);
    plain_trace(&d, "a.trace", 7919);
    plain_trace(&d, "b.trace", 13);
    d
}

#[test]
fn sharded_and_launcher_runs_equal_the_single_process_csv() {
    let d = setup("shards");
    let o = pmlab(&d, &grid_args("one.csv", &["--jobs", "3"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let one = read(&d, "one.csv");

    // Layout: header + 8 rows, grid order, --set column, stats columns.
    let lines: Vec<&str> = one.lines().collect();
    assert_eq!(lines.len(), 9, "{one}");
    let header: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(
        header[..7],
        [
            "job",
            "config",
            "config_file",
            "workload",
            "controller.adr",
            "sim_time_ns",
            "events"
        ]
    );
    let mut sorted = header[7..].to_vec();
    sorted.sort();
    assert_eq!(sorted, header[7..], "stat columns are sorted by name");
    assert!(header.contains(&"mc.row_hits") && header.contains(&"replay.read_latency_ns_mean"));
    assert!(
        lines[1].starts_with("0,optane,optane,a.trace,true,"),
        "{}",
        lines[1]
    );
    assert!(
        lines[4].starts_with("3,optane,optane,b.trace,false,"),
        "{}",
        lines[4]
    );
    assert!(
        lines[8].starts_with("7,nvm-ppo,nvm-ppo,b.trace,false,"),
        "{}",
        lines[8]
    );
    // ADR acknowledges a write when the WPQ accepts it; without ADR, when the media has it.
    let ack = header
        .iter()
        .position(|h| *h == "replay.write_ack_latency_ns_mean")
        .unwrap();
    let cell = |row: usize| -> f64 { lines[row + 1].split(',').nth(ack).unwrap().parse().unwrap() };
    for pair in [0, 2, 4, 6] {
        assert!(
            cell(pair + 1) > cell(pair),
            "adr=false must ack later: {} vs {}",
            cell(pair + 1),
            cell(pair)
        );
    }
    // Host timing stays out of the main CSV.
    assert!(!one.contains("seconds") && !one.contains("events_per_sec"));
    let host = read(&d, "one.csv.host.csv");
    assert!(
        host.starts_with("job,host,seconds,events,events_per_sec\n"),
        "{host}"
    );
    assert_eq!(host.lines().count(), 9);

    // The same sweep, again, on one thread: the same bytes.
    let o = pmlab(&d, &grid_args("again.csv", &["--jobs", "1"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(read(&d, "again.csv"), one);

    // --shard I/N: the last shard merges.
    for i in 0..2 {
        let s = format!("{i}/2");
        let o = pmlab(&d, &grid_args("sharded.csv", &["--shard", &s]));
        assert!(o.status.success(), "{}", stderr(&o));
    }
    assert_eq!(read(&d, "sharded.csv"), one);
    let shard0 = read(&d, "sharded.csv.shard-0-of-2");
    assert_eq!(shard0.lines().count(), 5, "{shard0}");

    // Three uneven shards, finishing in reverse order.
    for i in (0..3).rev() {
        let s = format!("{i}/3");
        let o = pmlab(&d, &grid_args("three.csv", &["--shard", &s]));
        assert!(o.status.success(), "{}", stderr(&o));
    }
    assert_eq!(read(&d, "three.csv"), one);
    assert_eq!(read(&d, "three.csv.host.csv").lines().count(), 9);

    // Rank and size from MPICH's, Open MPI's and a Slurm array's environment.
    for (out, envs) in [
        (
            "pmi.csv",
            [
                vec![("PMI_RANK", "0"), ("PMI_SIZE", "2")],
                vec![("PMI_RANK", "1"), ("PMI_SIZE", "2")],
            ],
        ),
        (
            "ompi.csv",
            [
                vec![("OMPI_COMM_WORLD_RANK", "1"), ("OMPI_COMM_WORLD_SIZE", "2")],
                vec![("OMPI_COMM_WORLD_RANK", "0"), ("OMPI_COMM_WORLD_SIZE", "2")],
            ],
        ),
        (
            "slurm.csv",
            [
                vec![
                    ("SLURM_ARRAY_TASK_ID", "1"),
                    ("SLURM_ARRAY_TASK_MIN", "1"),
                    ("SLURM_ARRAY_TASK_MAX", "2"),
                    ("SLURM_ARRAY_TASK_COUNT", "2"),
                ],
                vec![
                    ("SLURM_ARRAY_TASK_ID", "2"),
                    ("SLURM_ARRAY_TASK_MIN", "1"),
                    ("SLURM_ARRAY_TASK_MAX", "2"),
                    ("SLURM_ARRAY_TASK_COUNT", "2"),
                ],
            ],
        ),
    ] {
        for env in &envs {
            let o = pmlab_env(&d, &grid_args(out, &[]), env);
            assert!(o.status.success(), "{out}: {}", stderr(&o));
        }
        assert_eq!(read(&d, out), one, "{out}");
    }
    // An explicit --shard beats the environment.
    let o = pmlab_env(
        &d,
        &grid_args("x.csv", &["--shard", "0/1"]),
        &[("PMI_RANK", "1"), ("PMI_SIZE", "2")],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(read(&d, "x.csv"), one);
}

#[test]
fn merge_joins_shards_from_elsewhere_and_checks_them() {
    let d = setup("merge");
    let o = pmlab(&d, &grid_args("one.csv", &[]));
    assert!(o.status.success(), "{}", stderr(&o));
    let one = read(&d, "one.csv");
    // Shards "on other machines": each in its own directory, then gathered here.
    for i in 0..2 {
        let m = d.join(format!("node{i}"));
        std::fs::create_dir_all(&m).unwrap();
        for t in ["a.trace", "b.trace"] {
            std::fs::copy(d.join(t), m.join(t)).unwrap();
        }
        let s = format!("{i}/2");
        let o = pmlab(&m, &grid_args("s.csv", &["--shard", &s]));
        assert!(o.status.success(), "{}", stderr(&o));
        let name = format!("s.csv.shard-{i}-of-2");
        std::fs::copy(m.join(&name), d.join(&name)).unwrap();
    }
    let o = pmlab(
        &d,
        &[
            "sweep",
            "merge",
            "--out",
            "merged.csv",
            "s.csv.shard-1-of-2",
            "s.csv.shard-0-of-2",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(read(&d, "merged.csv"), one);

    // A missing shard, or one given twice, is refused with one line.
    for args in [
        vec!["sweep", "merge", "--out", "m.csv", "s.csv.shard-0-of-2"],
        vec![
            "sweep",
            "merge",
            "--out",
            "m.csv",
            "s.csv.shard-0-of-2",
            "s.csv.shard-0-of-2",
        ],
    ] {
        let o = pmlab(&d, &args);
        assert!(!o.status.success());
        assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
        assert!(!d.join("m.csv").exists());
    }

    // With the shards' host files beside them, a host file that cannot be written (a
    // directory of its name) is found before FILE.csv is written (it was written, then the
    // error).
    for i in 0..2 {
        let name = format!("s.csv.shard-{i}-of-2.host.csv");
        std::fs::copy(d.join(format!("node{i}")).join(&name), d.join(&name)).unwrap();
    }
    std::fs::create_dir(d.join("h.csv.host.csv")).unwrap();
    let o = pmlab(
        &d,
        &[
            "sweep",
            "merge",
            "--out",
            "h.csv",
            "s.csv.shard-0-of-2",
            "s.csv.shard-1-of-2",
        ],
    );
    assert!(!o.status.success());
    assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
    assert!(!d.join("h.csv").exists());
}

type Case = (Vec<String>, Vec<(&'static str, &'static str)>, &'static str);

#[test]
fn bad_arguments_give_one_line_errors() {
    let d = setup("errors");
    let base = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = ["sweep", "--workload", "a.trace", "--out", "e.csv"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    // (arguments, environment, what the error line must mention)
    let cases: Vec<Case> = vec![
        (
            base(&["--config", "optane", "--shard", "2/2"]),
            vec![],
            "--shard 2/2",
        ),
        (
            base(&["--config", "optane", "--shard", "x/y"]),
            vec![],
            "--shard x/y",
        ),
        (
            base(&["--config", "optane", "--set", "controller.nope=1,2"]),
            vec![],
            "controller.nope",
        ),
        (
            base(&["--config", "optane", "--set", "controller.adr=true,"]),
            vec![],
            "empty value",
        ),
        // Faults only a run's plug-ins knew were found by the job that used them, after the
        // others had run ("1 of 2 jobs failed"); now with the config, before any job.
        (
            base(&[
                "--config",
                "optane",
                "--set",
                "controller.logging_fault=none,nope",
            ]),
            vec![],
            "job 1 (config optane, workload a.trace, controller.logging_fault=nope): --set: \
             controller.logging_fault",
        ),
        (
            base(&["--config", "optane", "--set", "network.fault=none,nope"]),
            vec![],
            "job 1 (config optane, workload a.trace, network.fault=nope): --set: network.fault",
        ),
        // A config the workload's model cannot run: found by the job that used it, after the
        // others had run.
        (
            base(&[
                "--config",
                "optane",
                "--set",
                "controller.logging=none,redu",
            ]),
            vec![],
            "job 1 (config optane, workload a.trace, controller.logging=redu): \
             controller.logging = \"redu\" needs the full-system model",
        ),
        (
            vec![
                "sweep",
                "--workload",
                "btree:ops=10",
                "--out",
                "e.csv",
                "--config",
                "optane",
                "--set",
                "system.model=full,memory",
            ]
            .into_iter()
            .map(String::from)
            .collect(),
            vec![],
            "job 1 (config optane, workload btree:ops=10, system.model=memory): system.model",
        ),
        // More workload threads than the config's hardware threads: the run failed at the
        // first event of the thread beyond them.
        (
            vec![
                "sweep",
                "--workload",
                "hashmap-tx:threads=8:ops=10",
                "--out",
                "e.csv",
                "--config",
                "nvm-ppo",
                "optane",
            ]
            .into_iter()
            .map(String::from)
            .collect(),
            vec![],
            "job 1 (config optane, workload hashmap-tx:threads=8:ops=10): the workload has 8 \
             threads; optane has 4 hardware threads",
        ),
        (
            base(&["--config", "optane", "no-such.toml"]),
            vec![],
            "job 1 (config no-such.toml",
        ),
        (
            base(&["--config", "optane"]),
            vec![("PMI_RANK", "abc"), ("PMI_SIZE", "2")],
            "PMI_RANK=abc",
        ),
        (
            base(&["--config", "optane"]),
            vec![("SLURM_ARRAY_TASK_ID", "3")],
            "SLURM_ARRAY_TASK_COUNT",
        ),
    ];
    for (args, env, needle) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = pmlab_env(&d, &args, &env);
        let err = stderr(&o);
        assert!(!o.status.success(), "{args:?} should fail");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("pmlab: ") && err.contains(needle),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        // Refused before any job ran.
        assert!(!err.contains("jobs failed"), "{err}");
        assert!(!d.join("e.csv").exists());
    }
}

#[test]
fn a_failing_job_is_named_and_nothing_is_written() {
    let d = setup("jobfail");
    std::fs::write(
        d.join("bad.trace"),
        "0x1000 READ 10\nthis is not a trace line\n",
    )
    .unwrap();
    let o = pmlab(
        &d,
        &[
            "sweep",
            "--config",
            "optane",
            "--workload",
            "a.trace",
            "bad.trace",
            "--jobs",
            "2",
            "--out",
            "f.csv",
        ],
    );
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("job 1 (config optane, workload bad.trace)"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(!d.join("f.csv").exists());
}

#[test]
fn full_system_sweep_shards_equal_one_process() {
    // A full-system trace (text format: cores + caches + DRAM + PM), 2 presets x ADR on/off.
    let d = tmpdir("full");
    let trace =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples/persist-epochs.txt");
    std::fs::copy(&trace, d.join("epochs.txt")).unwrap();
    let args = |out: &'static str, shard: Option<&'static str>| {
        let mut a = vec![
            "sweep",
            "--config",
            "nvm-lalea",
            "--config",
            "pcm-pmweaver",
            "--workload",
            "epochs.txt",
            "--set",
            "controller.adr=true,false",
            "--out",
            out,
        ];
        if let Some(s) = shard {
            a.extend(["--shard", s]);
        }
        a
    };
    let o = pmlab(&d, &args("one.csv", None));
    assert!(o.status.success(), "{}", stderr(&o));
    for s in ["0/2", "1/2"] {
        let o = pmlab(&d, &args("sharded.csv", Some(s)));
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let one = read(&d, "one.csv");
    assert_eq!(one, read(&d, "sharded.csv"));
    assert_eq!(one.lines().count(), 5, "header + 4 jobs");
    // Full-system statistics are there, and ADR changes the fence stall.
    let header: Vec<&str> = one.lines().next().unwrap().split(',').collect();
    let col = header
        .iter()
        .position(|h| *h == "cpu.stall_fence_ps")
        .expect("full-system column");
    let stalls: Vec<u64> = one
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(col).unwrap().parse().unwrap())
        .collect();
    assert!(
        stalls[1] > 5 * stalls[0],
        "adr=false stalls more: {stalls:?}"
    );
}

#[test]
fn generated_workloads_sweep_and_shard_identically() {
    let d = tmpdir("gen");
    let args = |out: &'static str, shard: Option<&'static str>| {
        let mut a = vec![
            "sweep",
            "--config",
            "nvm-ppo",
            "--workload",
            "linkedlist:ops=100",
            "ycsb:ops=200:threads=2:seed=3",
            "--set",
            "controller.adr=true,false",
            "--out",
            out,
        ];
        if let Some(s) = shard {
            a.extend(["--shard", s]);
        }
        a
    };
    let o = pmlab(&d, &args("one.csv", None));
    assert!(o.status.success(), "{}", stderr(&o));
    for s in ["0/2", "1/2"] {
        let o = pmlab(&d, &args("sharded.csv", Some(s)));
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let one = read(&d, "one.csv");
    assert_eq!(one, read(&d, "sharded.csv"));
    assert_eq!(one.lines().count(), 5, "header + 2 workloads x 2 settings");
    assert!(one.contains("ycsb:ops=200:threads=2:seed=3"));
    // A bad spec is a one-line error naming it.
    let o = pmlab(
        &d,
        &[
            "sweep",
            "--config",
            "nvm-ppo",
            "--workload",
            "ycsb:ops=x",
            "--out",
            "bad.csv",
        ],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("ycsb:ops=x"), "{}", stderr(&o));
}

#[test]
fn bad_workload_specs_and_repeated_keys_are_refused_before_any_job_runs() {
    let d = tmpdir("bad-spec");
    for (workloads, says) in [
        // A later bad spec used to fail only when its job ran, after the ones before it.
        (
            ["btree:ops=200000", "btree:ops=abc"],
            "ops = `abc` is not a number",
        ),
        // A key given twice used to take the last value without a word.
        (["btree:ops=20", "btree:ops=20:ops=30"], "`ops` given twice"),
        // A number out of its type's range was called "not a number".
        (
            ["btree:ops=20", "btree:threads=100000"],
            "threads = `100000` is too large",
        ),
    ] {
        let mut a = vec![
            "sweep", "--config", "optane", "--jobs", "1", "--out", "x.csv",
        ];
        a.push("--workload");
        a.extend(workloads);
        let o = pmlab(&d, &a);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains(says), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!d.join("x.csv").exists());
    }
}

#[test]
fn a_shard_never_merges_results_of_other_inputs() {
    // Found by an audit: a shard whose job failed left its earlier file for the other shard to
    // merge, and a shard file of a config changed since (same name) was merged as this sweep's.
    let d = setup("stale");
    // Job 0 (a.trace) is shard 0's, job 1 (b.trace) shard 1's.
    let shard = |i: usize| {
        let s = format!("{i}/2");
        pmlab(
            &d,
            &[
                "sweep",
                "--config",
                "optane",
                "--workload",
                "a.trace",
                "b.trace",
                "--out",
                "s.csv",
                "--shard",
                &s,
            ],
        )
    };
    for i in 0..2 {
        assert!(shard(i).status.success());
    }
    assert!(d.join("s.csv").exists());
    // b.trace goes bad: shard 1 (which runs b.trace's jobs) fails and leaves no file of its
    // earlier run; shard 0 then waits instead of merging the old rows, and no merged result of
    // the earlier sweep stands.
    std::fs::write(d.join("b.trace"), "0x40 READ 0\nnot a trace line\n").unwrap();
    let o = shard(1);
    assert!(!o.status.success());
    assert!(!d.join("s.csv.shard-1-of-2").exists());
    let o = shard(0);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!d.join("s.csv").exists());
    // The same names with other contents: a whole sweep of good inputs, then b.trace changes
    // and only shard 0 runs again: shard 1's file, of the old b.trace, is another sweep's.
    plain_trace(&d, "b.trace", 13);
    for i in 0..2 {
        assert!(shard(i).status.success());
    }
    assert!(d.join("s.csv").exists(), "both shards of one sweep merge");
    plain_trace(&d, "b.trace", 17);
    let o = shard(0);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("inputs differ"), "{out}");
    assert!(!d.join("s.csv").exists());
}

#[test]
fn merge_refuses_a_shard_file_cut_short() {
    let d = setup("cut");
    for i in 0..2 {
        let s = format!("{i}/2");
        assert!(pmlab(&d, &grid_args("s.csv", &["--shard", &s]))
            .status
            .success());
    }
    let merge = |dir: &Path| {
        pmlab(
            dir,
            &[
                "sweep",
                "merge",
                "--out",
                "m.csv",
                "s.csv.shard-0-of-2",
                "s.csv.shard-1-of-2",
            ],
        )
    };
    // Cut inside the last number: the file lacks its last line end.
    let c = d.join("c");
    std::fs::create_dir_all(&c).unwrap();
    let text = read(&d, "s.csv.shard-1-of-2");
    std::fs::write(c.join("s.csv.shard-1-of-2"), &text[..text.len() - 3]).unwrap();
    std::fs::copy(d.join("s.csv.shard-0-of-2"), c.join("s.csv.shard-0-of-2")).unwrap();
    let o = merge(&c);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("cut short"), "{}", stderr(&o));
    // Cut at a line end (a whole job gone): the .grid files name the grid's 8 jobs.
    let e = d.join("e");
    std::fs::create_dir_all(&e).unwrap();
    for f in [
        "s.csv.shard-0-of-2",
        "s.csv.shard-0-of-2.grid",
        "s.csv.shard-1-of-2.grid",
    ] {
        std::fs::copy(d.join(f), e.join(f)).unwrap();
    }
    let lines: Vec<&str> = text.lines().collect();
    let short = lines[..lines.len() - 1].join("\n") + "\n";
    std::fs::write(e.join("s.csv.shard-1-of-2"), short).unwrap();
    let o = merge(&e);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("hold 7 jobs, their sweep has 8"),
        "{}",
        stderr(&o)
    );
    assert!(!e.join("m.csv").exists());
}

#[test]
fn overlapping_keys_and_an_overflowing_grid_are_refused() {
    let d = setup("overlap");
    // `device.timing` holds `device.timing.twr_ns`: one value would win while the CSV labels
    // the rows with both.
    let o = pmlab(
        &d,
        &[
            "sweep",
            "--config",
            "optane",
            "--workload",
            "a.trace",
            "--set",
            "device.timing.twr_ns=50,2000",
            "--set",
            "device.timing={twr_ns=225.0}",
            "--out",
            "o.csv",
        ],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("overlaps"), "{}", stderr(&o));
    assert!(!d.join("o.csv").exists());
    let o = pmlab(
        &d,
        &[
            "sim",
            "--config",
            "optane",
            "--trace",
            "a.trace",
            "--set",
            "device.timing={twr_ns=225.0}",
            "--set",
            "device.timing.twr_ns=50",
        ],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("overlaps"), "{}", stderr(&o));
    // 64 axes of two values: 2^64 jobs.
    let mut args: Vec<String> = ["sweep", "--config", "optane", "--workload", "a.trace"]
        .map(String::from)
        .to_vec();
    for i in 0..64 {
        args.extend(["--set".into(), format!("k{i}=1,2")]);
    }
    args.extend(["--out".into(), "g.csv".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = pmlab(&d, &args);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("overflows"), "{}", stderr(&o));
    assert!(!d.join("g.csv").exists());
}

/// An output that cannot be written is refused before any job runs: `--out` naming a
/// directory failed only after every job had run (here the bad trace's job would have failed
/// first), and a directory where FILE.csv.host.csv goes left FILE.csv written and the command
/// failing.
#[test]
fn an_unwritable_output_is_refused_before_any_job_runs() {
    let d = setup("unwritable");
    std::fs::write(d.join("bad.trace"), "0x1000 READ 10\nnot a trace line\n").unwrap();
    std::fs::create_dir(d.join("dir.csv")).unwrap();
    let o = pmlab(
        &d,
        &[
            "sweep",
            "--config",
            "optane",
            "--workload",
            "bad.trace",
            "--out",
            "dir.csv",
        ],
    );
    let err = stderr(&o);
    assert!(!o.status.success());
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--out dir.csv: is a directory"), "{err}");
    std::fs::create_dir(d.join("h.csv.host.csv")).unwrap();
    for shard in [None, Some("0/2")] {
        let mut args = vec![
            "sweep",
            "--config",
            "optane",
            "--workload",
            "bad.trace",
            "--out",
            "h.csv",
        ];
        if let Some(s) = shard {
            std::fs::create_dir(d.join(format!("h.csv.shard-{}-of-2.host.csv", &s[..1]))).unwrap();
            args.extend(["--shard", s]);
        }
        let o = pmlab(&d, &args);
        let err = stderr(&o);
        assert!(!o.status.success());
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains(".host.csv: ") && !err.contains("bad.trace"),
            "{shard:?}: {err}"
        );
    }
    let left: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .map(|f| f.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("h.csv") && !n.ends_with(".host.csv"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A shard clears earlier results before its jobs run, but only regular files: a FIFO (as a
/// device node would be) named as the output stays (`--shard 0/2 --out /dev/full`, run as
/// root, deleted the device).
#[test]
fn a_shard_removes_no_output_that_is_not_a_regular_file() {
    let d = setup("special-out");
    let fifo = d.join("pipe.csv");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let o = pmlab(&d, &grid_args("pipe.csv", &["--shard", "0/2"]));
    assert!(o.status.success(), "{}", stderr(&o));
    use std::os::unix::fs::FileTypeExt;
    let kept = std::fs::symlink_metadata(&fifo).map(|m| m.file_type().is_fifo());
    assert!(matches!(kept, Ok(true)), "{kept:?}");
    assert!(d.join("pipe.csv.shard-0-of-2").is_file());
}

/// An output under `/dev` gets the CSV and nothing beside it: `--out /dev/stdout` writes the
/// CSV to standard output and the summary to standard error (the host timing file
/// `/dev/stdout.host.csv` cannot be created: the sweep failed after its jobs with "No such
/// file"), and a shard, whose files go beside FILE.csv, is refused before any job.
#[test]
fn an_output_in_dev_gets_the_csv_and_nothing_beside_it() {
    let d = setup("dev-out");
    let whole = pmlab(&d, &grid_args("one.csv", &[]));
    assert!(whole.status.success(), "{}", stderr(&whole));
    let o = pmlab(&d, &grid_args("/dev/stdout", &[]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), read(&d, "one.csv"));
    assert!(
        stderr(&o).contains("host timing not written"),
        "{}",
        stderr(&o)
    );
    let o = pmlab(&d, &grid_args("/dev/null", &["--shard", "0/2"]));
    assert!(!o.status.success());
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("--out /dev/null: a sharded sweep"), "{e}");
}

/// A shard waiting for many others names a few, not all (with --shard 0/65536 the line listed
/// 65535 numbers, some 400 KB).
#[test]
fn a_shard_waiting_for_many_lists_a_few() {
    let d = setup("many-shards");
    let o = pmlab(
        &d,
        &[
            "sweep",
            "--config",
            "optane",
            "--workload",
            "a.trace",
            "--shard",
            "0/40",
            "--out",
            "m.csv",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out.lines().find(|l| l.starts_with("waiting for")).unwrap();
    assert!(
        line.starts_with("waiting for 39 of 40 shards (1, 2, 3, 4, 5, 6, 7, 8, and 31 more)"),
        "{line}"
    );
}

#[test]
fn a_shard_never_removes_or_replaces_an_input_named_like_its_files() {
    // A shard removes its earlier files (its CSV, `.host.csv` and `.grid`, and the merged CSV)
    // before its jobs, and the last one merges every shard's files: a config or trace named
    // like one of them was deleted or overwritten. Refused before any of that; so is a merge
    // whose output is a shard's `.grid`.
    let d = setup("shard-input");
    let trace = plain_trace(&d, "x.csv.shard-1-of-2", 7);
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/optane.toml"),
        d.join("x.csv.shard-0-of-2.grid"),
    )
    .unwrap();
    let config = std::fs::read(d.join("x.csv.shard-0-of-2.grid")).unwrap();
    let traced = std::fs::read(d.join(&trace)).unwrap();
    for args in [
        vec![
            "sweep",
            "--config",
            "x.csv.shard-0-of-2.grid",
            "--workload",
            "btree:ops=5",
        ],
        vec!["sweep", "--config", "optane", "--workload", &trace],
    ] {
        let mut args = args.clone();
        args.extend(["--shard", "0/2", "--out", "x.csv"]);
        let o = pmlab(&d, &args);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {e}");
        assert_eq!(e.trim().lines().count(), 1, "{e}");
        assert!(e.contains("--out x.csv: writes x.csv.shard-"), "{e}");
    }
    assert_eq!(
        std::fs::read(d.join("x.csv.shard-0-of-2.grid")).unwrap(),
        config
    );
    assert_eq!(std::fs::read(d.join(&trace)).unwrap(), traced);
    for i in 0..2 {
        let shard = format!("{i}/2");
        let o = pmlab(&d, &grid_args("s.csv", &["--shard", &shard]));
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let grid = std::fs::read(d.join("s.csv.shard-0-of-2.grid")).unwrap();
    let o = pmlab(
        &d,
        &[
            "sweep",
            "merge",
            "--out",
            "s.csv.shard-0-of-2.grid",
            "s.csv.shard-0-of-2",
            "s.csv.shard-1-of-2",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("(the output would replace it)"));
    assert_eq!(
        std::fs::read(d.join("s.csv.shard-0-of-2.grid")).unwrap(),
        grid
    );
}

/// A `--workload` that is a directory is refused before any job runs: it opens, so the read
/// failed only in its job, after the jobs before it had run, and the sweep's work was lost.
#[test]
fn a_directory_as_a_workload_is_refused_before_any_job_runs() {
    let d = setup("dir-workload");
    std::fs::create_dir(d.join("adir")).unwrap();
    let o = pmlab(
        &d,
        &[
            "sweep",
            "--jobs",
            "1",
            "--config",
            "optane",
            "--workload",
            "ycsb:ops=20",
            "adir",
            "--out",
            "s.csv",
        ],
    );
    let err = stderr(&o);
    assert!(!o.status.success());
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--workload adir: is a directory, not a trace file"),
        "{err}"
    );
    assert!(!err.contains("job 0"), "a job ran first: {err}");
}

/// `sweep merge` of a named file that is not there says so, not that a shard number is missing
/// (and prints no note about `.grid` files first).
#[test]
fn merge_of_a_missing_file_names_it() {
    let d = setup("merge-missing");
    let o = pmlab(
        &d,
        &["sweep", "merge", "--out", "n.csv", "nonexist.shard-0-of-2"],
    );
    let err = stderr(&o);
    assert!(!o.status.success());
    assert_eq!(err.trim(), "pmlab: nonexist.shard-0-of-2: no such file");
    assert!(String::from_utf8_lossy(&o.stdout).is_empty());
    assert!(!d.join("n.csv").exists());
}
