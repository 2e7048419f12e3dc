//! The crash cut keeps exactly the writes acknowledged as durable by the crash time, and runs
//! are deterministic.

use pmsim::config::SimConfig;
use pmsim::image::{LineData, PmImage};
use pmsim::pmtrace::{Op, TraceEvent};
use pmsim::Replay;

/// A mixed trace: stores with unique values (some to the same lines), loads, fences.
fn trace(seed: u64, n: usize) -> Vec<TraceEvent> {
    let mut x = seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut evs = Vec::new();
    for i in 0..n {
        let r = next();
        let line = (r >> 8) % 64; // a small footprint: repeated lines coalesce in the WPQ
        let addr = line * 64 + (r % 7) * 8;
        let gap = (r >> 40) as u32 % 40;
        match r % 10 {
            0..=5 => {
                let v = (i as u64 + 1).to_le_bytes();
                evs.push(TraceEvent::store(Op::Store, 0, 0x40, addr, &v, gap));
            }
            6..=7 => evs.push(TraceEvent::access(Op::Load, 0, 0x44, addr, 8, gap)),
            _ => evs.push(TraceEvent::marker(Op::Sfence, 0, 0x48, gap)),
        }
    }
    evs
}

/// The image implied by the full run's acknowledgements up to `t`.
fn expected_image(evs: &[TraceEvent], acks: &[pmsim::memsys::Ack], t: u64) -> PmImage {
    let requests: Vec<&TraceEvent> = evs
        .iter()
        .filter(|e| matches!(e.op, Op::Load | Op::Store))
        .collect();
    let mut img = PmImage::new();
    for a in acks.iter().filter(|a| a.is_write && a.time <= t) {
        let e = requests[Replay::request_seq(a.id) as usize];
        img.apply(
            e.addr & !63,
            &LineData::new(e.addr, e.value_bytes()).unwrap(),
        );
    }
    img
}

fn check_cuts(adr: bool) {
    let mut cfg = SimConfig::preset("nvm-ppo").unwrap();
    cfg.controller.adr = adr;
    let evs = trace(0x9e3779b97f4a7c15, 600);
    let mut full = Replay::new(&cfg).unwrap().record_acks();
    let summary = full.run(evs.iter().map(|e| Ok(*e)), |_| {}).unwrap();
    let acks = full.ack_log().to_vec();
    assert!(
        acks.windows(2).all(|w| w[0].time <= w[1].time),
        "acks in time order"
    );
    let final_img = full.durable_image().clone();
    assert_eq!(final_img, expected_image(&evs, &acks, u64::MAX));
    // Cut at every write acknowledgement time, just before it, and at a spread of times.
    let mut cuts: Vec<u64> = acks
        .iter()
        .filter(|a| a.is_write)
        .flat_map(|a| [a.time.saturating_sub(1), a.time])
        .step_by(3)
        .collect();
    cuts.extend((0..50).map(|i| summary.sim_time / 50 * i));
    for t in cuts {
        let mut r = Replay::new(&cfg).unwrap().crash_at(t);
        r.run(evs.iter().map(|e| Ok(*e)), |_| {}).unwrap();
        let got = r.durable_image();
        let want = expected_image(&evs, &acks, t);
        assert_eq!(got, &want, "adr={adr}: crash at {t} ps");
    }
}

#[test]
fn crash_cut_keeps_exactly_acknowledged_writes_with_adr() {
    check_cuts(true);
}

#[test]
fn crash_cut_keeps_exactly_acknowledged_writes_without_adr() {
    check_cuts(false);
}

#[test]
fn without_adr_queued_writes_are_lost_and_with_adr_they_survive() {
    // One write, crash 1 ns after it was issued: with ADR it is in the WPQ (durable); without
    // ADR its media write has not finished (lost).
    let ev = [TraceEvent::store(Op::Store, 0, 0, 128, &[7; 8], 0)];
    for (adr, survives) in [(true, true), (false, false)] {
        let mut cfg = SimConfig::preset("nvm-ppo").unwrap();
        cfg.controller.adr = adr;
        let mut r = Replay::new(&cfg).unwrap().crash_at(1_000);
        r.run(ev.iter().map(|e| Ok(*e)), |_| {}).unwrap();
        assert_eq!(r.durable_image().line(128).is_some(), survives, "adr={adr}");
    }
}

#[test]
fn same_config_and_trace_give_byte_identical_stats() {
    for preset in pmsim::config::preset_names() {
        let cfg = SimConfig::preset(preset).unwrap();
        let evs = trace(42, 3000);
        let json = || {
            let mut r = Replay::new(&cfg).unwrap();
            r.run(evs.iter().map(|e| Ok(*e)), |_| {}).unwrap();
            r.stats().to_json()
        };
        assert_eq!(json(), json(), "{preset}");
    }
}

#[test]
fn unaligned_and_multi_line_stores_reach_every_line() {
    // A 16-byte store straddling two lines and a 4 KiB non-temporal store without a value.
    let mut value = [0u8; 16];
    for (i, b) in value.iter_mut().enumerate() {
        *b = i as u8 + 1;
    }
    let evs = [
        TraceEvent::store(Op::Store, 0, 0, 120, &value, 0),
        TraceEvent::access(Op::NtStore, 0, 0, 8192, 4096, 0),
    ];
    let cfg = SimConfig::preset("optane").unwrap();
    let mut r = Replay::new(&cfg).unwrap();
    let s = r.run(evs.iter().map(|e| Ok(*e)), |_| {}).unwrap();
    assert_eq!(s.writes, 2 + 64, "one request per line touched");
    let mut buf = [0u8; 16];
    r.durable_image().read(120, &mut buf);
    assert_eq!(
        buf, value,
        "both halves of the straddling store are durable"
    );
    assert!(r.durable_image().line(64).is_some() && r.durable_image().line(128).is_some());
}

#[test]
fn a_crash_point_after_the_end_leaves_the_run_as_it_was() {
    // A cut later than the run's end is no cut: the simulated time and every statistic are
    // those of the run without one (it used to report the crash point as the run's time).
    let cfg = SimConfig::preset("nvm-ppo").unwrap();
    let evs = trace(7, 2000);
    let mut plain = Replay::new(&cfg).unwrap();
    let whole = plain.run(evs.iter().map(|e| Ok(*e)), |_| {}).unwrap();
    for t in [whole.sim_time + 1, whole.sim_time * 1000, u64::MAX] {
        let mut r = Replay::new(&cfg).unwrap().crash_at(t);
        let s = r.run(evs.iter().map(|e| Ok(*e)), |_| {}).unwrap();
        assert!(!s.crashed);
        assert_eq!(s.sim_time, whole.sim_time, "cut at {t}");
        assert_eq!(r.stats().to_json(), plain.stats().to_json(), "cut at {t}");
    }
}

/// With a front-end latency, an ADR write is durable when the WPQ takes it and acknowledged
/// `frontend_ns` later: a fence waits for that acknowledgement, and a cut before it leaves the
/// write durable, not acknowledged, and the run cut. (The fence used to end when the write was
/// durable, so the front end added no stall, and a cut counted the write acknowledged.)
#[test]
fn a_fence_waits_for_the_front_ends_acknowledgement() {
    let mut cfg = SimConfig::preset("nvm-lalea").unwrap();
    cfg.controller.frontend_ns = 1000.0;
    let evs = [
        TraceEvent::store(Op::Store, 0, 0x40, 0x1000, &[1; 8], 0),
        TraceEvent::marker(Op::Sfence, 0, 0x44, 0),
        TraceEvent::store(Op::Store, 0, 0x48, 0x2000, &[2; 8], 0),
        TraceEvent::marker(Op::Sfence, 0, 0x4c, 0),
    ];
    let mut r = Replay::new(&cfg).unwrap();
    let summary = r.run(evs.iter().map(|e| Ok(*e)), |_| {}).unwrap();
    let stall = r.stats().counter("replay.fence_stall_ps");
    assert!(!summary.crashed);
    assert!(
        (2_000_000..2_100_000).contains(&stall),
        "two fences each wait 1000 ns for their write's acknowledgement: {stall} ps"
    );
    assert!(summary.sim_time >= 2_000_000, "{}", summary.sim_time);

    // Cut at 500 ns: the first write is durable (ADR) but its acknowledgement is 500 ns away.
    let mut r = Replay::new(&cfg).unwrap().crash_at(500_000);
    let summary = r.run(evs.iter().map(|e| Ok(*e)), |_| {}).unwrap();
    assert!(summary.crashed, "the fence was still waiting at the cut");
    assert_eq!(r.stats().counter("replay.writes_acknowledged"), 0);
    assert_eq!(r.durable_image().len(), 1);
}
