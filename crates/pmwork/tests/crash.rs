//! Crash consistency without a simulator: every workload's trace is cut at many points, the
//! reference persistence model builds crash images (guaranteed-only, everything-executed and
//! random per-line versions), and the workload's oracle must accept each; with a deliberate
//! bug switched on, some image must be rejected.

use pmwork::crashtest::{sweep, SweepConfig};
use pmwork::{registry, workload, CrashImage, Fault, Model, Params};

fn params(ops: u64, threads: u16) -> Params {
    Params {
        ops,
        threads,
        seed: 5,
        remote_threads: 0,
        janus_hints: false,
        value_bytes: 8,
    }
}

fn assert_clean(name: &str, p: &Params, cfg: &SweepConfig) -> usize {
    let w = workload(name).unwrap();
    let r = sweep(w, p, cfg).unwrap();
    if let Some(f) = r.first_failure() {
        panic!("{name}: rejected {f}");
    }
    r.images
}

/// The big one: every workload, two threads, ~100 cut points with four images each.
#[test]
fn every_workload_survives_every_cut() {
    for w in registry() {
        let name = w.info().name;
        // TATP's setup populates 1000 subscribers per thread: fewer cuts keep this quick.
        let cuts = if name.starts_with("tatp") { 12 } else { 44 };
        let cfg = SweepConfig {
            cuts,
            random_images: 2,
            seed: 11,
            ..SweepConfig::default()
        };
        let images = assert_clean(name, &params(48, 2), &cfg);
        assert!(images >= 4 * cuts, "{name}: only {images} images");
    }
}

/// Longer runs, checked at the end of setup and at the end: the structures agree with the
/// in-memory models (std collections) after thousands of operations.
#[test]
fn every_workload_matches_its_model_after_many_operations() {
    for w in registry() {
        let name = w.info().name;
        let ops = match name {
            n if n.starts_with("tatp") => 3000,
            "memcached" | "ycsb" => 3000,
            _ => 2500,
        };
        let cfg = SweepConfig {
            cuts: 0,
            random_images: 0,
            ..SweepConfig::default()
        };
        assert_clean(name, &params(ops, 3), &cfg);
    }
}

#[test]
fn cuts_after_every_fence_of_small_runs() {
    for name in [
        "btree",
        "rbtree",
        "ycsb",
        "queue",
        "hashmap-ll",
        "tpcc-ll",
        "rbtree-hw",
    ] {
        let cfg = SweepConfig {
            cuts: 4,
            random_images: 2,
            fence_cuts: true,
            ..SweepConfig::default()
        };
        assert_clean(name, &params(16, 2), &cfg);
    }
}

#[test]
fn skipping_the_undo_log_fence_is_caught() {
    for name in [
        "btree",
        "hashmap-tx",
        "ppo-sps",
        "tpcc",
        "arrayswap",
        "tpcc-ll",
    ] {
        let w = workload(name).unwrap();
        let model = w.info().model;
        assert!(matches!(model, Model::Undo | Model::UndoLl));
        let cfg = SweepConfig {
            cuts: 200,
            random_images: 4,
            fault: Some(Fault::SkipLogFence),
            stop_at_first: true,
            ..SweepConfig::default()
        };
        let r = sweep(w, &params(60, 1), &cfg).unwrap();
        assert!(
            !r.failures.is_empty(),
            "{name}: the oracle accepted all {} images of a trace with the undo fence removed",
            r.images
        );
    }
}

#[test]
fn hardware_transactions_need_the_hardware_log() {
    // Without an atomic hardware-logging scheme, a crash inside a transaction leaves it
    // half-applied: the oracle must notice on some cut.
    let w = workload("tpcc-hw").unwrap();
    let cfg = SweepConfig {
        cuts: 100,
        random_images: 3,
        atomic_hw_tx: false,
        stop_at_first: true,
        ..SweepConfig::default()
    };
    let r = sweep(w, &params(40, 1), &cfg).unwrap();
    assert!(
        !r.failures.is_empty(),
        "non-atomic hardware transactions went unnoticed"
    );
    // With the ideal scheme, every cut is fine.
    assert_clean("tpcc-hw", &params(40, 1), &SweepConfig::default());
}

#[test]
fn an_all_zero_image_is_an_uninitialised_pool() {
    for w in registry() {
        let p = params(10, 2);
        let g = w
            .generate(
                &p,
                Box::new(pmwork::NullSink),
                pmwork::GenOptions {
                    record_commits: true,
                    fault: None,
                },
            )
            .unwrap();
        let commits = g.commits.unwrap();
        let name = w.info().name;
        w.oracle(&p, &commits, &CrashImage::new(), &[0, 0])
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        // ...but not once every operation has committed.
        let all = g.events_per_thread.clone();
        assert!(
            w.oracle(&p, &commits, &CrashImage::new(), &all).is_err(),
            "{name}: an empty image passed as a finished run"
        );
    }
}

#[test]
fn the_oracle_rejects_a_lost_committed_operation() {
    // Recover from an image taken mid-run, but claim every event completed: operations that
    // committed after the image was taken are missing, which the oracle must report.
    let w = workload("rbtree").unwrap();
    let p = params(30, 1);
    let g = w
        .generate(
            &p,
            Box::<pmwork::VecSink>::default(),
            pmwork::GenOptions {
                record_commits: true,
                fault: None,
            },
        )
        .unwrap();
    let commits = g.commits.clone().unwrap();
    let events = g
        .sink
        .into_any()
        .downcast::<pmwork::VecSink>()
        .unwrap()
        .events;
    let mut m = pmwork::persist_model::PersistModel::new(1, false);
    let half = commits.per_thread[0][15] as usize;
    for ev in &events[..half] {
        m.apply(ev);
    }
    let img = m.image(&mut pmwork::persist_model::CutPolicy::Durable);
    w.oracle(&p, &commits, &img, &[half as u64]).unwrap();
    let err = w
        .oracle(&p, &commits, &img, &[events.len() as u64])
        .unwrap_err();
    assert!(err.contains("neither the committed state"), "{err}");
}
