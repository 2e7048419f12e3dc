//! PM-support engines and write prediction on the ten PMWeaver Table II workloads: predictions,
//! software hints and deduplication never change what becomes durable, the engines' latency
//! reaches the program, and PMWeaver, Janus hints, the ideal predictor and dedup do the work
//! they claim.

use pmsim::pmtrace::TraceEvent;
use pmsim::{SimConfig, Stats, System};
use pmwork::{GenOptions, VecSink};

use pmwork::PMWEAVER_TABLE_II as TABLE_II;

fn events(name: &str, janus_hints: bool) -> Vec<TraceEvent> {
    let w = pmwork::workload(name).unwrap();
    let mut p = w.info().default_params(3);
    p.ops = (p.ops / 8).max(20);
    p.janus_hints = janus_hints;
    w.generate(&p, Box::new(VecSink::default()), GenOptions::default())
        .expect("generate")
        .into_events()
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

/// The durable image of `ev` run under `sets`, cut at `t`.
fn image_at(ev: &[TraceEvent], sets: &[String], t: u64) -> Vec<(u64, [u8; 64])> {
    let cfg = SimConfig::preset("pcm-pmweaver")
        .unwrap()
        .with_overrides(sets)
        .unwrap();
    let mut sys = System::new(&cfg).unwrap().crash_at(t);
    sys.run(ev.iter().copied().map(Ok), |_| {}).unwrap();
    let img = sys.durable_image();
    img.line_addrs()
        .into_iter()
        .map(|a| (a, *img.line(a).unwrap()))
        .collect()
}

#[test]
fn at_every_fence_the_durable_image_is_the_same_with_and_without_prediction() {
    // Prediction changes when write-backs become durable, never which: cut at the k-th fence's
    // completion, every design has made the same lines durable with the same bytes.
    for name in ["btree", "linkedlist", "tatp"] {
        let ev = events(name, false);
        let designs: Vec<Vec<String>> = [
            ("enc-bmt", "none"),
            ("enc-bmt", "pmweaver"),
            ("enc-bmt", "ideal"),
            ("dedup", "pmweaver"),
        ]
        .iter()
        .map(|(b, p)| {
            vec![
                format!("controller.bmo={b}"),
                format!("controller.predictor={p}"),
            ]
        })
        .collect();
        let fences: Vec<Vec<u64>> = designs
            .iter()
            .map(|sets| {
                let cfg = SimConfig::preset("pcm-pmweaver")
                    .unwrap()
                    .with_overrides(sets)
                    .unwrap();
                let mut sys = System::new(&cfg).unwrap().record_persists();
                sys.run(ev.iter().copied().map(Ok), |_| {}).unwrap();
                sys.fence_log().iter().map(|f| f.0).collect()
            })
            .collect();
        let n = fences[0].len();
        assert!(n > 20, "{name}: fences");
        assert!(fences.iter().all(|f| f.len() == n), "{name}: same fences");
        for k in (0..n).step_by(n / 10) {
            let base = image_at(&ev, &designs[0], fences[0][k]);
            assert!(
                k == 0 || !base.is_empty(),
                "{name}: fence {k} made lines durable"
            );
            for (d, sets) in designs.iter().enumerate().skip(1) {
                assert_eq!(
                    image_at(&ev, sets, fences[d][k]),
                    base,
                    "{name}: fence {k} under {sets:?}"
                );
            }
        }
    }
}

/// A memory system on `nvm-ppo` (no ADR: a media write is durable only when the cell write
/// ends) with the Dedup engine, and two lines L and M of its PM.
fn dedup_mem() -> (pmsim::memsys::MemorySystem, u64, u64) {
    let cfg = SimConfig::preset("nvm-ppo").unwrap();
    let mem = pmsim::memsys::MemorySystem::new(
        &cfg,
        Box::new(pmsim::scheduler::FrFcfs),
        Box::new(pmsim::bmo::Dedup::default()),
    );
    let base = pmsim::config::DEFAULT_PM_BASE;
    (mem, base, base + (1 << 20))
}

/// Write `id` of the whole line at `addr` with `bytes`, holding a kept entry or not.
fn line_write(
    id: u64,
    addr: u64,
    bytes: &[u8; 64],
    holds_entry: bool,
) -> pmsim::memsys::MemRequest {
    pmsim::memsys::MemRequest {
        id,
        addr,
        is_write: true,
        data: pmsim::image::LineData::new(addr, bytes),
        holds_entry,
    }
}

#[test]
fn a_deduplicated_write_never_lands_before_an_older_write_of_its_line() {
    // No ADR: a media write is durable only when the cell write ends, long after a duplicate
    // of other bytes could skip the media.
    let (mut mem, l, m) = dedup_mem();
    let (x, y) = ([1u8; 64], [2u8; 64]);
    let write = |id: u64, addr: u64, bytes: &[u8; 64]| line_write(id, addr, bytes, false);
    // M holds Y, durably; then L is written X (unique: to the media) and at once Y (a
    // duplicate of M's bytes: no media write of its own).
    mem.submit(write(1, m, &y), 0);
    while mem.step().is_some() {}
    let t = mem.now();
    mem.submit(write(2, l, &x), t);
    mem.submit(write(3, l, &y), t + 1000);
    while mem.step().is_some() {}
    assert_eq!(
        mem.durable_image().line(l),
        Some(&y),
        "the younger write's bytes must be the line's last"
    );
}

#[test]
fn an_encrypted_write_never_lands_before_an_older_write_of_its_line() {
    // Counter-mode encryption: the first write of a line misses the counter cache (a metadata
    // fetch from PM), the next one, right behind it, hits and would be ready first. Writes of
    // one line leave the engine in order, so the younger bytes are the line's last.
    let cfg = SimConfig::preset("nvm-ppo").unwrap();
    let mut mem = pmsim::memsys::MemorySystem::new(
        &cfg,
        Box::new(pmsim::scheduler::FrFcfs),
        Box::new(pmsim::bmo::EncBmt::default()),
    );
    let l = pmsim::config::DEFAULT_PM_BASE + (3 << 20);
    let (x, y) = ([1u8; 64], [2u8; 64]);
    mem.submit(line_write(1, l, &x, false), 0);
    mem.submit(line_write(2, l, &y, false), 1000);
    while mem.step().is_some() {}
    assert_eq!(
        mem.durable_image().line(l),
        Some(&y),
        "the younger write's bytes must be the line's last"
    );
}

#[test]
fn a_duplicate_write_holding_a_kept_entry_gives_the_entry_back() {
    // A write that takes a WPQ entry kept for it (LAD's staged lines) but that deduplication
    // finds needs no media write never enters the WPQ: the kept entry must be free again.
    let (mut mem, l, m) = dedup_mem();
    let y = [2u8; 64];
    let write = |id: u64, addr: u64, holds_entry: bool| line_write(id, addr, &y, holds_entry);
    mem.submit(write(1, m, false), 0);
    while mem.step().is_some() {}
    let t = mem.now();
    mem.reserve_entry(l);
    assert_eq!(
        mem.channels().iter().map(|c| c.reserved()).sum::<usize>(),
        1
    );
    mem.submit(write(2, l, true), t);
    while mem.step().is_some() {}
    assert_eq!(mem.durable_image().line(l), Some(&y));
    assert_eq!(
        mem.channels().iter().map(|c| c.reserved()).sum::<usize>(),
        0,
        "the entry kept for a write that skipped the media stays kept"
    );
}
