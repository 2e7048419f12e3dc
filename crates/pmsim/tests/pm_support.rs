//! PM-support engines and write prediction on the ten PMWeaver Table II workloads: predictions,
//! software hints and deduplication never change what becomes durable, the engines' latency
//! reaches the program, and PMWeaver, Janus hints, the ideal predictor and dedup do the work
//! they claim.

use pmsim::pmtrace::TraceEvent;
use pmsim::{SimConfig, Stats, System};
use pmwork::{GenOptions, VecSink};

/// PMWeaver Table II.
const TABLE_II: [&str; 10] = [
    "btree",
    "ctree",
    "rbtree",
    "skiplist",
    "hashmap-tx",
    "linkedlist",
    "hashmap-ll",
    "arrayswap",
    "tatp",
    "tpcc-ll",
];

fn events(name: &str, janus_hints: bool) -> Vec<TraceEvent> {
    let w = pmwork::workload(name).unwrap();
    let mut p = w.info().default_params(3);
    p.ops = (p.ops / 8).max(20);
    p.janus_hints = janus_hints;
    let gen = w
        .generate(&p, Box::new(VecSink::default()), GenOptions::default())
        .expect("generate");
    gen.sink
        .into_any()
        .downcast::<VecSink>()
        .expect("a VecSink")
        .events
}

/// Runs `events` on pcm-pmweaver with `bmo` and `predictor`: the durable image's lines, the
/// simulated time and the statistics.
fn run(ev: &[TraceEvent], bmo: &str, predictor: &str) -> (Vec<(u64, [u8; 64])>, u64, Stats) {
    let cfg = SimConfig::preset("pcm-pmweaver")
        .unwrap()
        .with_overrides(&[
            format!("controller.bmo={bmo}"),
            format!("controller.predictor={predictor}"),
        ])
        .unwrap();
    let mut sys = System::new(&cfg).unwrap();
    let s = sys.run(ev.iter().copied().map(Ok), |_| {}).unwrap();
    let img = sys.durable_image();
    let lines = img
        .line_addrs()
        .into_iter()
        .map(|a| (a, *img.line(a).unwrap()))
        .collect();
    (lines, s.sim_time, sys.stats())
}

#[test]
fn predictions_and_dedup_never_change_the_durable_image() {
    let mut predicted = 0;
    let mut hinted = 0;
    let mut skipped = 0;
    for name in TABLE_II {
        let ev = events(name, false);
        let (original, t0, _) = run(&ev, "none", "none");
        let (enc, t_enc, _) = run(&ev, "enc-bmt", "none");
        assert!(t_enc > t0, "{name}: encryption and verification cost time");
        assert_eq!(enc, original, "{name}: enc-bmt's durable image");
        for (bmo, pred) in [
            ("enc-bmt", "pmweaver"),
            ("enc-bmt", "ideal"),
            ("dedup", "none"),
            ("dedup", "pmweaver"),
        ] {
            let (img, t, s) = run(&ev, bmo, pred);
            assert_eq!(
                img, original,
                "{name}: {bmo} + {pred} changed the durable image"
            );
            predicted += s.counter("predict.addr_correct");
            skipped += s.counter("bmo.media_writes_skipped");
            if pred == "ideal" {
                assert!(
                    t < t_enc,
                    "{name}: the ideal predictor hides the engine's latency"
                );
            }
        }
        // The same program annotated with software hints, precomputed by Janus.
        let hints = events(name, true);
        assert!(hints.len() > ev.len(), "{name}: hints were placed");
        let (img, _, s) = run(&hints, "enc-bmt", "janus");
        assert_eq!(
            img, original,
            "{name}: janus hints changed the durable image"
        );
        hinted += s.counter("predict.addr_correct");
    }
    assert!(hinted > 0, "Janus hints covered some write-backs");
    assert!(predicted > 0, "PMWeaver predicted some write-backs");
    assert!(
        skipped > 0,
        "dedup found duplicate lines and skipped their media writes"
    );
}

#[test]
fn predictor_without_an_engine_is_refused() {
    let e = SimConfig::preset("pcm-pmweaver")
        .unwrap()
        .with_overrides(&["controller.predictor=pmweaver".into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("controller.bmo"), "{e}");
    let e = SimConfig::preset("pcm-pmweaver")
        .unwrap()
        .with_overrides(&[
            "controller.predictor=oracle".into(),
            "controller.bmo=dedup".into(),
        ])
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a known predictor"), "{e}");
}
