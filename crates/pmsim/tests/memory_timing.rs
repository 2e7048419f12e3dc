//! Analytic timing cases of the device and controller: each expected value is derived by hand
//! from the timing parameters, so a wrong constraint shows up as a wrong number.

use pmsim::config::{MappingScheme, SimConfig};
use pmsim::memsys::Ack;
use pmsim::pmtrace::{Op, TraceEvent};
use pmsim::Replay;

/// 1 GHz requester, 1 channel, 1 rank, 4 banks, 1 KB rows, row-stride mapping, round timings.
fn base() -> SimConfig {
    let mut c = SimConfig::default();
    c.replay.cpu_ghz = 1.0;
    c.replay.max_outstanding = 64;
    let d = &mut c.device;
    d.channels = 1;
    d.ranks = 1;
    d.banks = 4;
    d.row_bytes = 1024;
    d.mapping = MappingScheme::RowStride;
    let t = &mut d.timing;
    t.tck_ns = 1.0;
    t.trcd_ns = 10.0;
    t.tcl_ns = 5.0;
    t.tcwd_ns = 4.0;
    t.tburst_ns = 2.0;
    t.trp_ns = 3.0;
    t.tras_ns = 0.0;
    t.twr_ns = 20.0;
    t.twtr_ns = 0.0;
    t.trtp_ns = 0.0;
    t.tfaw_ns = 0.0;
    t.trrd_ns = 0.0;
    c.controller.adr = false;
    c.validate().unwrap();
    c
}

/// Byte address of (bank, row, column) under `base()`'s row-stride mapping.
fn addr(bank: u64, row: u64, col: u64) -> u64 {
    (row * 4 + bank) * 1024 + col * 64
}

fn load(a: u64, gap: u32) -> TraceEvent {
    TraceEvent::access(Op::Load, 0, 0, a, 64, gap)
}

fn store(a: u64, gap: u32) -> TraceEvent {
    TraceEvent::store(Op::Store, 0, 0, a, &[0xab; 8], gap)
}

fn run(cfg: &SimConfig, evs: &[TraceEvent]) -> Vec<Ack> {
    let mut r = Replay::new(cfg).unwrap().record_acks();
    r.run(evs.iter().map(|e| Ok(*e)), |_| {}).unwrap();
    let mut acks = r.ack_log().to_vec();
    acks.sort_by_key(|a| Replay::request_seq(a.id));
    acks
}

fn latency_ns(a: &Ack) -> u64 {
    (a.time - a.issued) / 1000
}

#[test]
fn single_read_is_activate_plus_cas_plus_burst() {
    let acks = run(&base(), &[load(0, 0)]);
    assert_eq!(latency_ns(&acks[0]), 10 + 5 + 2);
}

#[test]
fn row_hit_versus_conflict() {
    let mut c = base();
    c.replay.max_outstanding = 1; // one at a time: no overlap
    let acks = run(
        &c,
        &[
            load(addr(0, 0, 0), 0),
            load(addr(0, 0, 1), 0),
            load(addr(0, 1, 0), 0),
        ],
    );
    assert_eq!(latency_ns(&acks[0]), 17, "closed row: tRCD + tCL + tBURST");
    assert_eq!(latency_ns(&acks[1]), 7, "row hit: tCL + tBURST");
    assert_eq!(
        latency_ns(&acks[2]),
        3 + 17,
        "conflict: tRP + tRCD + tCL + tBURST"
    );
}

#[test]
fn two_banks_overlap_one_bank_serializes() {
    // Different banks: second ACT one tCK later, its burst follows the first on the bus.
    let acks = run(&base(), &[load(addr(0, 0, 0), 0), load(addr(1, 0, 0), 0)]);
    assert_eq!(acks[1].time / 1000, 19);
    // Same bank, other row: precharge waits for the first read's column (tRTP = 0),
    // then tRP + tRCD + tCL + tBURST = 10 + 3 + 10 + 5 + 2.
    let acks = run(&base(), &[load(addr(0, 0, 0), 0), load(addr(0, 1, 0), 0)]);
    assert_eq!(acks[1].time / 1000, 30);
}

#[test]
fn tfaw_limits_the_fifth_activate() {
    let mut c = base();
    c.device.banks = 8;
    c.device.timing.tfaw_ns = 40.0;
    let a = |bank: u64| bank * 1024; // row 0 of each of 8 banks
    let evs: Vec<_> = (0..5).map(|b| load(a(b), 0)).collect();
    let acks = run(&c, &evs);
    // ACTs at 0,1,2,3; the fifth must wait for the window: ACT at 40 → data end 57.
    assert_eq!(acks[4].time / 1000, 40 + 17);
    c.device.timing.tfaw_ns = 0.0;
    let acks = run(&c, &evs);
    assert!(
        acks[4].time / 1000 < 30,
        "without tFAW the fifth read is not delayed"
    );
}

#[test]
fn trtp_delays_the_precharge_after_a_read() {
    let mut c = base();
    c.device.timing.trtp_ns = 8.0;
    // Two reads of bank 0, rows 0 and 1: the first's column at 10; the precharge for the second
    // not before 10 + tRTP = 18, then tRP 3, tRCD 10, tCL 5, burst 2: data ends at 38. Without
    // tRTP the precharge follows the column at once: 30. (No test set tRTP: a controller that
    // ignored it passed.)
    let evs = [load(addr(0, 0, 0), 0), load(addr(0, 1, 0), 0)];
    assert_eq!(run(&c, &evs)[1].time / 1000, 18 + 3 + 10 + 5 + 2);
    c.device.timing.trtp_ns = 0.0;
    assert_eq!(run(&c, &evs)[1].time / 1000, 10 + 3 + 10 + 5 + 2);
}

#[test]
fn trrd_spaces_the_activates_of_one_rank() {
    let mut c = base();
    c.device.timing.trrd_ns = 6.0;
    // Reads of banks 0 and 1: the second ACT not before 0 + tRRD = 6, its column at 16 (after
    // the first's at 10), data ends at 23; without tRRD the ACT follows one command clock
    // later and the data ends at 19.
    let evs = [load(addr(0, 0, 0), 0), load(addr(1, 0, 0), 0)];
    assert_eq!(run(&c, &evs)[1].time / 1000, 6 + 10 + 5 + 2);
    c.device.timing.trrd_ns = 0.0;
    assert_eq!(run(&c, &evs)[1].time / 1000, 19);
}

#[test]
fn twtr_delays_a_read_after_a_write() {
    let mut c = base();
    c.controller.adr = true;
    c.device.timing.twtr_ns = 6.0;
    // Write to bank 0 at t=0: ACT 0, column 10, data 14..16. Read to bank 1 at t=1: its
    // column may not issue before the write data ends plus tWTR: 16 + 6 = 22 → data 27..29,
    // latency 28. With tWTR = 0 the column still waits for the write data: 16 → latency 22.
    let evs = [store(addr(0, 0, 0), 0), load(addr(1, 0, 0), 1)];
    let acks = run(&c, &evs);
    assert_eq!(latency_ns(&acks[1]), 28);
    c.device.timing.twtr_ns = 0.0;
    let acks = run(&c, &evs);
    assert_eq!(latency_ns(&acks[1]), 22);
}

#[test]
fn adr_changes_when_a_write_is_acknowledged() {
    let mut c = base();
    c.controller.adr = true;
    let acks = run(&c, &[store(0, 0)]);
    assert_eq!(latency_ns(&acks[0]), 0, "ADR: durable on WPQ acceptance");
    c.controller.adr = false;
    let acks = run(&c, &[store(0, 0)]);
    assert_eq!(
        latency_ns(&acks[0]),
        10 + 4 + 2 + 20,
        "no ADR: durable when the media write ends (tRCD + tCWD + tBURST + tWR)"
    );
}

#[test]
fn fence_waits_for_persist_ack() {
    let mut c = base();
    c.controller.adr = false;
    let fence = TraceEvent::marker(Op::Sfence, 0, 0, 0);
    let mut r = Replay::new(&c).unwrap();
    r.run([store(0, 0), fence, load(addr(1, 0, 0), 0)].map(Ok), |_| {})
        .unwrap();
    let s = r.stats();
    assert_eq!(s.counter("replay.fence_stall_ps"), 36_000);
}

/// With reads always waiting, writes stay queued until the WPQ reaches its high watermark.
#[test]
fn write_drain_triggers_at_its_watermark() {
    let mut c = base();
    c.controller.write_queue = 8;
    c.controller.drain_high = 4;
    c.controller.drain_low = 1;
    c.controller.adr = false;
    let reads: Vec<_> = (0..40).map(|i| load(addr(i % 4, i / 4, 0), 0)).collect();
    // All writes go to bank 0: the first issues at t=0 (no reads queued yet) and keeps the
    // bank busy, so the rest stay in the WPQ while the reads arrive.
    let run_with = |n: u64| {
        let mut evs: Vec<_> = (0..n).map(|i| store(addr(0, 100 + i, 0), 0)).collect();
        evs.extend(reads.iter().copied());
        let mut r = Replay::new(&c).unwrap().record_acks();
        r.run(evs.iter().map(|e| Ok(*e)), |_| {}).unwrap();
        let acks = r.ack_log().to_vec();
        let last_read = acks
            .iter()
            .filter(|a| !a.is_write)
            .map(|a| a.time)
            .max()
            .unwrap();
        let mut writes: Vec<_> = acks.iter().filter(|a| a.is_write).map(|a| a.time).collect();
        writes.sort_unstable();
        (r.stats().counter("mc.drain_episodes"), writes, last_read)
    };
    // 4 writes leave 3 queued, below the watermark: they wait behind every read.
    let (episodes, writes, last_read) = run_with(4);
    assert_eq!(episodes, 0);
    assert!(
        writes[1..].iter().all(|&w| w > last_read),
        "{writes:?} vs {last_read}"
    );
    // 5 writes leave 4 queued, at the watermark: the controller drains while reads are
    // pending, so queued writes complete before the last read.
    let (episodes, writes, last_read) = run_with(5);
    assert_eq!(episodes, 1);
    assert!(writes[1] < last_read, "{writes:?} vs {last_read}");
}

#[test]
fn read_buffer_amplification_random_vs_sequential() {
    let c = SimConfig::preset("optane").unwrap();
    let mut x = 7u64;
    let random: Vec<_> = (0..4000)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            load(((x >> 20) % (1 << 30)) & !63, 0)
        })
        .collect();
    let mut r = Replay::new(&c).unwrap();
    r.run(random.iter().map(|e| Ok(*e)), |_| {}).unwrap();
    let amp = r.stats().value("mc.read_amplification").unwrap();
    assert!(
        (amp - 4.0).abs() < 0.1,
        "random 64 B reads fetch a 256 B XPLine each: {amp}"
    );
    let seq: Vec<_> = (0..4000).map(|i| load(i * 64, 0)).collect();
    let mut r = Replay::new(&c).unwrap();
    r.run(seq.iter().map(|e| Ok(*e)), |_| {}).unwrap();
    let amp = r.stats().value("mc.read_amplification").unwrap();
    assert!(
        (amp - 1.0).abs() < 0.05,
        "sequential reads use every byte fetched: {amp}"
    );
}

/// A memory system on `base()` with ADR and a 4-entry WPQ (drain watermarks 3 / 1), for the
/// tests of entries kept by plug-ins.
fn adr_wpq4() -> pmsim::memsys::MemorySystem {
    let mut cfg = base();
    cfg.controller.adr = true;
    cfg.controller.write_queue = 4;
    cfg.controller.drain_high = 3;
    cfg.controller.drain_low = 1;
    cfg.validate().unwrap();
    pmsim::memsys::MemorySystem::new(
        &cfg,
        Box::new(pmsim::scheduler::FrFcfs),
        Box::new(pmsim::bmo::NoBmo),
    )
}

/// Write `id` of the whole line at `a` (every byte `id`), holding a kept entry or not.
fn line_write(id: u64, a: u64, holds_entry: bool) -> pmsim::memsys::MemRequest {
    pmsim::memsys::MemRequest {
        id,
        addr: a,
        is_write: true,
        data: pmsim::image::LineData::new(a, &[id as u8; 64]),
        holds_entry,
    }
}

/// The acknowledgements produced so far, as (id, time).
fn acked(mem: &mut pmsim::memsys::MemorySystem) -> Vec<(u64, u64)> {
    let mut acks = Vec::new();
    mem.take_acks(&mut acks);
    acks.iter().map(|a| (a.id, a.time)).collect()
}

#[test]
fn pinned_wpq_entries_keep_writes_out_until_released() {
    // ADR with a 4-entry WPQ, 3 of them kept by a plug-in (BLOM's buffered headers).
    let mut mem = adr_wpq4();
    mem.set_pinned(&[3], 0);
    // Three writes to one bank at once: the first takes the free entry (durable at once under
    // ADR) and leaves it for the device at once; the second takes it and waits for the bank
    // (the cell write takes 10 + 4 + 2 + 20 ns); the third finds no entry.
    for id in 1..=3 {
        mem.submit(line_write(id, addr(0, id, 0), false), 0);
    }
    mem.advance_to(1000);
    let mut acks = Vec::new();
    mem.take_acks(&mut acks);
    assert_eq!(acks.iter().map(|a| a.id).collect::<Vec<_>>(), vec![1, 2]);
    // Releasing the kept entries lets it in (durable) at that moment.
    mem.set_pinned(&[0], 2000);
    acks.clear();
    mem.take_acks(&mut acks);
    assert_eq!(acks.len(), 1);
    assert_eq!((acks[0].id, acks[0].time), (3, 2000));
}

#[test]
#[should_panic(expected = "lines in a 4-entry WPQ")]
fn a_plug_in_cannot_keep_more_adr_lines_than_the_wpq_has_entries() {
    // ADR with a 4-entry WPQ: two writes wait in it for their bank (one more left for the
    // device), so keeping 3 entries now would hold 5 lines in the ADR domain (a LAD that
    // committed a write set without room for it once passed every crash point).
    let mut mem = adr_wpq4();
    for id in 1..=3 {
        mem.submit(line_write(id, addr(0, id, 0), false), 0);
    }
    mem.set_pinned(&[3], 0);
}

#[test]
fn a_write_holding_a_kept_entry_enters_ahead_of_waiting_writes() {
    // ADR with a 4-entry WPQ, 3 of them kept by a plug-in (LAD's reserved lines).
    let mut mem = adr_wpq4();
    mem.set_pinned(&[3], 0);
    // As in `pinned_wpq_entries_keep_writes_out_until_released`: 1 and 2 enter (2 waits in
    // the WPQ for the busy bank), 3 finds no entry.
    for id in 1..=3 {
        mem.submit(line_write(id, addr(0, id, 0), false), 0);
    }
    mem.advance_to(10_000);
    assert_eq!(acked(&mut mem), vec![(1, 0), (2, 0)]);
    // At 10 ns the plug-in sends one kept line (write 10, same bank): its entry stays kept
    // while it travels, so lowering the pins lets nothing in; when it arrives it enters at
    // once although 3 has waited longer.
    mem.reserve_entry(addr(0, 10, 0));
    mem.set_pinned(&[2], 10_000);
    assert_eq!(acked(&mut mem), vec![]);
    mem.submit(line_write(10, addr(0, 10, 0), true), 10_000);
    mem.advance_to(20_000);
    assert_eq!(acked(&mut mem), vec![(10, 10_000)]);
    // At 20 ns another kept line, for the line 10 still waits in the WPQ with: it merges into
    // that entry, so the entry kept for it is free, and 3 enters then.
    mem.reserve_entry(addr(0, 10, 0));
    mem.set_pinned(&[1], 20_000);
    mem.submit(line_write(11, addr(0, 10, 0), true), 20_000);
    assert_eq!(acked(&mut mem), vec![(11, 20_000), (3, 20_000)]);
}

#[test]
fn a_write_holding_a_kept_entry_never_overtakes_an_older_write_of_its_line() {
    let mut mem = adr_wpq4();
    let line = addr(0, 3, 0);
    mem.set_pinned(&[3], 0);
    // 1 and 2 enter; 3, a write of `line`, waits for an entry.
    mem.submit(line_write(1, addr(0, 1, 0), false), 0);
    mem.submit(line_write(2, addr(0, 2, 0), false), 0);
    mem.submit(line_write(3, line, false), 0);
    mem.advance_to(10_000);
    assert_eq!(acked(&mut mem), vec![(1, 0), (2, 0)]);
    // A kept line of the same address arrives holding its entry: the older write 3 takes that
    // entry first (durable first), and 4 merges into it, so the line ends with 4's bytes.
    mem.reserve_entry(line);
    mem.set_pinned(&[2], 10_000);
    mem.submit(line_write(4, line, true), 10_000);
    assert_eq!(acked(&mut mem), vec![(3, 10_000), (4, 10_000)]);
    assert_eq!(mem.durable_image().line(line), Some(&[4u8; 64]));
    assert_eq!(mem.channels()[0].reserved(), 0);
}

/// `base()` with a refresh every 1000 ns taking 100 ns (tRFC).
fn refreshing() -> SimConfig {
    let mut c = base();
    c.replay.max_outstanding = 1;
    c.device.timing.trefi_ns = 1000.0;
    c.device.timing.trfc_ns = 100.0;
    c.validate().unwrap();
    c
}

#[test]
fn a_read_meeting_a_refresh_waits_for_trp_plus_trfc() {
    // Read 1 opens row 0 of bank 0 (done at 17 ns). Read 2 to another row of bank 0 arrives at
    // 1005 ns, inside the refresh due at 1000: the refresh precharges the open bank (tRP, 1000
    // to 1003), refreshes (tRFC, to 1103), and leaves the bank closed, so read 2 is an
    // activate + column at 1103: data end 1103 + 17 = 1120 (latency 115 instead of a
    // conflict's 20).
    let acks = run(
        &refreshing(),
        &[load(addr(0, 0, 0), 0), load(addr(0, 1, 0), 1005)],
    );
    assert_eq!(latency_ns(&acks[0]), 17);
    assert_eq!(acks[1].time / 1000, 1000 + 3 + 100 + 17);
    // Without refresh the same read is a row conflict.
    let mut c = refreshing();
    c.device.timing.trefi_ns = 0.0;
    let acks = run(&c, &[load(addr(0, 0, 0), 0), load(addr(0, 1, 0), 1005)]);
    assert_eq!(latency_ns(&acks[1]), 3 + 17);
}

#[test]
fn a_refresh_closes_rows_and_idle_intervals_cost_nothing() {
    // Read 2 comes 2.5 intervals later to the row read 1 opened: the refreshes closed it, so
    // it activates again (17 ns, not a 7 ns row hit) but waits for no refresh.
    let acks = run(
        &refreshing(),
        &[load(addr(0, 0, 0), 0), load(addr(0, 0, 1), 2500)],
    );
    assert_eq!(latency_ns(&acks[1]), 17);
    let mut r = Replay::new(&refreshing()).unwrap();
    r.run(
        [load(addr(0, 0, 0), 0), load(addr(0, 0, 1), 2500)]
            .iter()
            .map(|e| Ok(*e)),
        |_| {},
    )
    .unwrap();
    assert_eq!(
        r.stats().counter("mc.refreshes"),
        1,
        "only the latest is applied"
    );
}

#[test]
fn refresh_costs_bandwidth_in_proportion_to_trfc_over_trefi() {
    // Back-to-back row hits of one row: the bus is the limit without refresh; with it, every
    // 1000 ns the rank stops for tRP + tRFC + a new activate (about 11% here).
    let evs: Vec<_> = (0..20_000).map(|i| load(addr(0, 0, i % 16), 0)).collect();
    let mut with = refreshing();
    with.replay.max_outstanding = 64;
    let mut without = with.clone();
    without.device.timing.trefi_ns = 0.0;
    let end = |c: &SimConfig| run(c, &evs).iter().map(|a| a.time).max().unwrap() as f64;
    let ratio = end(&with) / end(&without);
    let expected = 1000.0 / (1000.0 - (3.0 + 100.0 + 10.0));
    assert!(
        (ratio - expected).abs() < 0.02,
        "refresh slowdown {ratio:.3}, expected about {expected:.3}"
    );
}

#[test]
fn impossible_refresh_intervals_are_rejected() {
    let mut c = base();
    c.device.timing.trefi_ns = 100.0;
    c.device.timing.trfc_ns = 350.0;
    let e = c.validate().unwrap_err();
    assert!(e.contains("trefi_ns"), "{e}");
    c.device.timing.trfc_ns = 0.0;
    assert!(c.validate().is_err(), "a refresh of no duration");
}

#[test]
fn memory_trace_clock_counts_device_cycles() {
    // Two reads 100 cycles apart on different banks: at 1 GHz requester cycles and a 1 ns
    // device clock the same; with a 4 ns device clock, 400 ns apart.
    let mut c = base();
    c.device.timing.tck_ns = 4.0;
    c.replay.trace_clock = pmsim::config::TraceClock::Memory;
    let acks = run(&c, &[load(addr(0, 0, 0), 0), load(addr(1, 0, 0), 100)]);
    assert_eq!(acks[1].issued / 1000, 400);
    c.replay.trace_clock = pmsim::config::TraceClock::Cpu;
    let acks = run(&c, &[load(addr(0, 0, 0), 0), load(addr(1, 0, 0), 100)]);
    assert_eq!(acks[1].issued / 1000, 100);
}

#[test]
fn latency_from_acceptance_leaves_out_the_wait_for_a_queue_entry() {
    // A 2-entry read queue and 8 reads issued at once to one bank's open row: the reads that
    // wait for an entry are late from their issue but not from their acceptance.
    let mut c = base();
    c.controller.read_queue = 2;
    c.validate().unwrap();
    let evs: Vec<_> = (0..8).map(|i| load(addr(0, 0, i), 0)).collect();
    let mut r = Replay::new(&c).unwrap();
    r.run(evs.iter().map(|e| Ok(*e)), |_| {}).unwrap();
    let s = r.stats();
    let from_issue = s.value("replay.read_latency_ns_mean").unwrap();
    let from_accept = s.value("replay.read_latency_accepted_ns_mean").unwrap();
    let wait = s.counter("mc.read_queue_wait_ps") as f64 / 8.0 / 1000.0;
    assert!(wait > 0.0, "some reads waited");
    assert!((from_issue - from_accept - wait).abs() < 0.01);
    // Idle: the two are the same.
    let mut r = Replay::new(&c).unwrap();
    r.run([load(0, 0)].iter().map(|e| Ok(*e)), |_| {}).unwrap();
    let s = r.stats();
    assert_eq!(
        s.value("replay.read_latency_ns_mean"),
        s.value("replay.read_latency_accepted_ns_mean")
    );
}
