//! `System::run_to_crash_points` against `crash_at` runs from the start: at every point, the
//! same statistics, the same recovered image and the same progress per thread, under each
//! ordering model, hardware-logging engine and PM-support engine, the PMWeaver and ideal write
//! predictors, the FCFS scheduler, RDMA clients, tiny caches and ADR on or off, and with a
//! snapshot every step.

use pmsim::pmtrace::TraceEvent;
use pmsim::{SimConfig, System, SNAPSHOT_EVERY};

mod common;

/// The events of pmwork workload `name`: `threads` threads (the last `clients` of them RDMA
/// clients), `ops` operations, seed 3.
fn events(name: &str, threads: u16, clients: u16, ops: u64) -> Vec<TraceEvent> {
    let w = pmwork::workload(name).expect("workload");
    common::workload_events(w, threads, clients, ops, 3)
}

/// Everything a crash check reads of a cut run, and its statistics.
fn outcome(sys: &System) -> String {
    let img = sys.recovered_image();
    let mut lines = String::new();
    for l in img.line_addrs() {
        lines.push_str(&format!("{l:x}:{:?};", img.line(l).expect("listed")));
    }
    let progress: Vec<(u64, u64)> = (0..sys.threads())
        .map(|t| (sys.retired_events(t), sys.persisted_events(t)))
        .collect();
    format!("{progress:?}\n{lines}\n{}", sys.stats().to_json())
}

/// Cuts `events` at `n` points over the whole run (evenly spread, and a few at the exact
/// times of the first acknowledgements) both ways and compares them point by point.
fn compare(preset: &str, sets: &[&str], events: &[TraceEvent], n: usize) {
    compare_with(preset, sets, events, n, SNAPSHOT_EVERY);
}

/// [`compare`] with a snapshot every `every` steps.
fn compare_with(preset: &str, sets: &[&str], events: &[TraceEvent], n: usize, every: u32) {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let cfg = SimConfig::preset(preset)
        .unwrap()
        .with_overrides(&sets)
        .unwrap();
    let mut full = System::new(&cfg).unwrap().record_persists();
    let sum = full.run(events.iter().copied().map(Ok), |_| {}).unwrap();
    let end = sum.sim_time;
    let mut points: Vec<u64> = (0..n as u64).map(|i| end * (i + 1) / n as u64).collect();
    // Exact acknowledgement times (a persist completes at the point) and one past the end.
    points.extend(
        full.persist_log()
            .iter()
            .step_by(97)
            .take(8)
            .map(|&(t, _)| t),
    );
    points.push(end + 1_000);
    let mut fast = vec![None; points.len()];
    System::new(&cfg)
        .unwrap()
        .run_to_crash_points(events.iter().copied().map(Ok), &points, every, |i, sys| {
            fast[i] = Some(outcome(&sys));
            Ok(())
        })
        .unwrap();
    for (i, &t) in points.iter().enumerate() {
        let mut slow = System::new(&cfg).unwrap().crash_at(t);
        slow.run(events.iter().copied().map(Ok), |_| {}).unwrap();
        assert_eq!(
            fast[i].as_deref(),
            Some(outcome(&slow).as_str()),
            "{preset} {sets:?}: the forked run cut at {t} ps differs from crash_at"
        );
    }
}

const TINY_CACHES: [&str; 6] = [
    "caches.l1d.size_kib=1",
    "caches.l1d.ways=1",
    "caches.l2.size_kib=1",
    "caches.l2.ways=1",
    "caches.llc.size_kib=1",
    "caches.llc.ways=1",
];

#[test]
fn the_runs_are_long_enough_to_start_from_later_snapshots() {
    // The comparisons below must cross snapshots, or they would only test the first one.
    let ev = events("tpcc-hw", 4, 0, 60);
    assert!(
        ev.len() > 4 * SNAPSHOT_EVERY as usize,
        "{} events",
        ev.len()
    );
}

#[test]
fn hardware_logging_engines_fork_exactly() {
    let ev = events("tpcc-hw", 4, 0, 60);
    for scheme in ["redu", "lad", "lalea", "blom", "lalea+blom", "lalea-lad"] {
        compare(
            "nvm-lalea",
            &[&format!("controller.logging={scheme}")],
            &ev,
            24,
        );
    }
    let mut sets = TINY_CACHES.to_vec();
    sets.push("controller.logging=lalea+blom");
    sets.push("controller.adr=false");
    compare("nvm-lalea", &sets, &events("btree-hw", 4, 0, 40), 24);
}

#[test]
fn ordering_models_fork_exactly_with_and_without_adr() {
    let ev = events("ppo-hash", 4, 0, 80);
    for ordering in ["x86", "epoch", "broi"] {
        for adr in ["true", "false"] {
            compare(
                "nvm-ppo",
                &[
                    &format!("controller.ordering={ordering}"),
                    &format!("controller.adr={adr}"),
                ],
                &ev,
                16,
            );
        }
    }
    // The FCFS scheduler (a plug-in without the built-in FR-FCFS path) beside BROI.
    compare(
        "nvm-ppo",
        &["controller.scheduler=fcfs", "controller.ordering=broi"],
        &ev,
        16,
    );
    let mut sets = TINY_CACHES.to_vec();
    sets.extend(["controller.ordering=epoch", "controller.adr=false"]);
    compare("nvm-ppo", &sets, &events("shared-log", 4, 0, 120), 16);
}

#[test]
fn rdma_clients_fork_exactly() {
    let ev = events("ppo-hash", 4, 2, 60);
    for persistence in ["sync", "bsp"] {
        compare(
            "nvm-ppo",
            &[
                "controller.ordering=broi",
                &format!("network.persistence={persistence}"),
            ],
            &ev,
            16,
        );
    }
}

#[test]
fn pm_support_engines_and_predictors_fork_exactly() {
    let ev = events("btree", 1, 0, 60);
    for (bmo, predictor) in [
        ("enc-bmt", "pmweaver"),
        ("dedup", "pmweaver"),
        ("enc-bmt", "none"),
        ("dedup", "ideal"),
    ] {
        compare(
            "pcm-pmweaver",
            &[
                &format!("controller.bmo={bmo}"),
                &format!("controller.predictor={predictor}"),
            ],
            &ev,
            16,
        );
    }
}

#[test]
fn snapshots_right_before_each_point_fork_exactly() {
    // A snapshot every step or every few, so that cut runs start right before their points (tiny
    // caches keep the copies cheap). With a front-end delay acknowledgements, and so fence
    // completions, fall after the memory event that carries them: the decision whose time runs
    // furthest ahead of the run's.
    let ev = events("ppo-hash", 4, 0, 24);
    let ev_hw = events("btree-hw", 4, 0, 16);
    for ordering in ["x86", "broi"] {
        let mut sets = TINY_CACHES.to_vec();
        let o = format!("controller.ordering={ordering}");
        sets.extend([
            o.as_str(),
            "controller.frontend_ns=40",
            "controller.adr=false",
        ]);
        compare_with("nvm-ppo", &sets, &ev, 60, 1);
    }
    let mut sets = TINY_CACHES.to_vec();
    sets.extend(["controller.logging=lalea+blom", "controller.frontend_ns=40"]);
    compare_with("nvm-lalea", &sets, &ev_hw, 60, 5);
}
