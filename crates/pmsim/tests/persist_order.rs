//! The persist-order checker over the PPO workloads: every persist of a later epoch of a
//! thread durable only after its earlier epochs, every inter-thread dependency respected, under
//! the buffered ordering models; a BROI that ignores barriers is caught.

use pmsim::persist_check::{check, CheckSummary};
use pmsim::pmtrace::TraceEvent;
use pmsim::{SimConfig, System};
use pmwork::Suite;

mod common;

/// The events of PPO workload `w` with `threads` threads and `ops` operations.
fn events(w: &dyn pmwork::Workload, threads: u16, ops: u64) -> Vec<TraceEvent> {
    events_with_clients(w, threads, 0, ops)
}

/// As [`events`], the last `clients` of the threads RDMA clients of the simulated PM.
fn events_with_clients(
    w: &dyn pmwork::Workload,
    threads: u16,
    clients: u16,
    ops: u64,
) -> Vec<TraceEvent> {
    common::workload_events(w, threads, clients, ops, 7)
}

/// Runs `events` on nvm-ppo with `sets` and checks the persist order of the whole run.
fn run_checked(events: &[TraceEvent], sets: &[&str]) -> Result<CheckSummary, String> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let cfg = SimConfig::preset("nvm-ppo")
        .unwrap()
        .with_overrides(&sets)
        .unwrap();
    let mut sys = System::new(&cfg).unwrap().record_persist_order();
    let sum = sys.run(events.iter().copied().map(Ok), |_| {}).unwrap();
    assert!(!sum.crashed);
    check(sys.persist_order().expect("recorded"), true)
}

#[test]
fn every_ppo_workload_persists_in_order_under_epoch_and_broi() {
    let ppo = pmwork::suite(Suite::Ppo);
    assert!(ppo.len() >= 5, "the PPO micro set");
    for w in ppo {
        let ev = events(w, 8, 160);
        for ordering in ["epoch", "broi"] {
            let s = run_checked(&ev, &[&format!("controller.ordering={ordering}")])
                .unwrap_or_else(|e| panic!("{} {ordering}: {e}", w.info().name));
            assert!(
                s.persists > 100 && s.epochs > 20,
                "{} {ordering}: too little checked: {s:?}",
                w.info().name
            );
        }
    }
}

#[test]
fn hybrid_and_remote_runs_persist_in_order_under_epoch_and_broi() {
    // Hybrid: 8 local threads and 2 RDMA clients (on a fifth core) running the same workload.
    for w in pmwork::suite(Suite::Ppo) {
        let ev = events_with_clients(w, 10, 2, 200);
        for ordering in ["epoch", "broi"] {
            for net in ["sync", "bsp"] {
                let s = run_checked(
                    &ev,
                    &[
                        &format!("controller.ordering={ordering}"),
                        &format!("network.persistence={net}"),
                        "cpu.cores=5",
                    ],
                )
                .unwrap_or_else(|e| panic!("{} {ordering}/{net}: {e}", w.info().name));
                assert!(s.persists > 100, "{}: {s:?}", w.info().name);
            }
        }
    }
    // Remote: the WHISPER-like clients, every persist over RDMA.
    for name in ["tpcc", "ycsb", "ctree", "hashmap-tx", "memcached"] {
        let ev = events_with_clients(pmwork::workload(name).unwrap(), 4, 4, 80);
        assert!(ev.iter().any(|e| e.op == pmsim::pmtrace::Op::RdmaPwrite));
        for ordering in ["epoch", "broi"] {
            let s = run_checked(
                &ev,
                &[
                    &format!("controller.ordering={ordering}"),
                    "network.persistence=bsp",
                ],
            )
            .unwrap_or_else(|e| panic!("{name} {ordering}: {e}"));
            assert!(s.persists > 50 && s.epochs > 20, "{name}: {s:?}");
        }
    }
}

#[test]
fn broi_and_epoch_compose_with_pm_support_engines_and_prediction() {
    // The orderings release persists; the engine delays each on its way into the controller
    // (and dedup may drop its media write); acknowledgements still come in an order the
    // checker accepts.
    for name in ["ppo-hash", "ppo-sps"] {
        let ev = events(pmwork::workload(name).unwrap(), 8, 160);
        for ordering in ["epoch", "broi"] {
            for (bmo, pred) in [
                ("enc-bmt", "pmweaver"),
                ("dedup", "pmweaver"),
                ("enc-bmt", "ideal"),
            ] {
                let s = run_checked(
                    &ev,
                    &[
                        &format!("controller.ordering={ordering}"),
                        &format!("controller.bmo={bmo}"),
                        &format!("controller.predictor={pred}"),
                    ],
                )
                .unwrap_or_else(|e| panic!("{name} {ordering} {bmo}+{pred}: {e}"));
                assert!(s.persists > 100, "{name}: {s:?}");
            }
        }
    }
}

#[test]
fn the_checker_catches_a_broi_that_ignores_barriers() {
    let ev = events(pmwork::workload("ppo-hash").unwrap(), 8, 160);
    let e = run_checked(
        &ev,
        &[
            "controller.ordering=broi",
            "controller.ordering_fault=broi-ignore-barriers",
        ],
    )
    .expect_err("a BROI without barriers passed the checker");
    assert!(
        e.contains("became durable") && e.contains("before persist"),
        "{e}"
    );
}

#[test]
fn buffered_models_persist_across_threads_that_share_lines() {
    // Two threads taking turns on the same PM lines: each access of the other's line is a
    // dependency the models must respect (and the checker verifies).
    let mut ev = Vec::new();
    for i in 0..200u64 {
        let t = (i % 2) as u16;
        let addr = pmsim::config::DEFAULT_PM_BASE + (i % 5) * 64;
        ev.push(TraceEvent::store(
            pmsim::pmtrace::Op::Store,
            t,
            0,
            addr,
            &i.to_le_bytes(),
            3,
        ));
        ev.push(TraceEvent::access(
            pmsim::pmtrace::Op::Clwb,
            t,
            0,
            addr,
            64,
            1,
        ));
        ev.push(TraceEvent::marker(pmsim::pmtrace::Op::Sfence, t, 0, 1));
    }
    for ordering in ["epoch", "broi"] {
        let s = run_checked(&ev, &[&format!("controller.ordering={ordering}")]).unwrap();
        assert!(s.dependencies > 50, "{ordering}: {s:?}");
    }
}

#[test]
fn threads_sharing_a_log_persist_after_the_thread_whose_tail_they_read() {
    // pmwork's shared-log: every operation reads the tail the previous lock holder wrote, so
    // nearly every operation brings a dependency on another thread.
    let ev = events(pmwork::workload("shared-log").unwrap(), 4, 200);
    for ordering in ["epoch", "broi"] {
        let s = run_checked(&ev, &[&format!("controller.ordering={ordering}")])
            .unwrap_or_else(|e| panic!("{ordering}: {e}"));
        assert!(s.dependencies > 150, "{ordering}: {s:?}");
        // Dropping them breaks the order the checker verifies.
        let e = run_checked(
            &ev,
            &[
                &format!("controller.ordering={ordering}"),
                "controller.ordering_fault=ignore-dependencies",
            ],
        )
        .expect_err("a model that ignores dependencies passed");
        assert!(e.contains("accessed a line thread"), "{ordering}: {e}");
    }
}
