//! `pmlab crash` and `pmlab sim --workload`: generated workloads on the full system, crash
//! points recovered and checked by the workloads' oracles, a broken library caught.

use std::process::{Command, Output};

fn pmlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pmlab"))
        .args(args)
        .output()
        .expect("run pmlab")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn correct_libraries_pass_every_crash_point() {
    for (config, workload) in [
        ("nvm-lalea", "linkedlist"), // persist barriers, ADR
        ("nvm-ppo", "btree"),        // PMDK-style undo log, no ADR
        ("pcm-pmweaver", "ycsb"),    // redo log, 4 threads
    ] {
        let o = pmlab(&[
            "crash",
            "--config",
            config,
            "--workload",
            workload,
            "--ops",
            "150",
            "--points",
            "300",
        ]);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{config} {workload}: {out}{err}");
        assert!(out.contains("passed 300 / 300, failed 0"), "{out}");
    }
}

#[test]
fn a_dropped_undo_log_fence_is_caught_and_replayable() {
    let o = pmlab(&[
        "crash",
        "--config",
        "nvm-lalea",
        "--workload",
        "btree",
        "--ops",
        "300",
        "--points",
        "600",
        "--fault",
        "skip-log-fence",
    ]);
    let (out, err) = text(&o);
    assert!(!o.status.success(), "the broken library passed: {out}");
    assert!(err.contains("first failing crash point"), "{err}");
    let replay = err
        .lines()
        .find_map(|l| l.trim().strip_prefix("replay it: pmlab "))
        .expect("a replay command");
    // The printed command reproduces the failure at that one point.
    let args: Vec<&str> = replay.split_whitespace().collect();
    let o = pmlab(&args);
    let (out, err) = text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(out.contains("passed 0 / 1, failed 1"), "{out}{err}");
}

#[test]
fn sim_streams_a_workload_without_a_file_deterministically() {
    let dir = std::env::temp_dir().join(format!("pmlab-crash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |name: &str| {
        let json = dir.join(name);
        let o = pmlab(&[
            "sim",
            "--config",
            "nvm-ppo",
            "--workload",
            "ycsb",
            "--ops",
            "400",
            "--json",
            json.to_str().unwrap(),
        ]);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{out}{err}");
        assert!(out.contains("IPC per thread"), "{out}");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert!(v["host"]["events"].as_u64().unwrap() > 1000);
        assert!(v["host"]["events_per_sec"].as_f64().unwrap() > 0.0);
        assert_eq!(v["stats"]["counters"]["cpu.threads"], 4);
        assert!(v["stats"]["counters"]["pm.writebacks"].as_u64().unwrap() > 0);
        v["stats"].clone()
    };
    assert_eq!(run("a.json"), run("b.json"), "same seed, same statistics");
}

#[test]
fn bad_workload_arguments_are_one_line_errors() {
    for args in [
        vec!["crash", "--config", "nvm-ppo", "--workload", "nope"],
        vec!["sim", "--config", "nvm-ppo", "--workload", "nope"],
        vec![
            "crash",
            "--config",
            "nvm-ppo",
            "--workload",
            "btree",
            "--fault",
            "x",
        ],
        // 8 threads asked for on a 4-core, 1-thread-per-core preset.
        vec![
            "sim",
            "--config",
            "nvm-lalea",
            "--workload",
            "ppo-hash",
            "--ops",
            "100",
            "--threads",
            "8",
        ],
    ] {
        let o = pmlab(&args);
        let (_, err) = text(&o);
        assert!(!o.status.success(), "{args:?}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}
