//! Full-system behaviour: x86 persistence semantics through the cache hierarchy, the store
//! buffer, memory-level parallelism, coherence, regions, and the crash cut.

use pmsim::config::DEFAULT_PM_BASE;
use pmsim::pmtrace::{Op, TraceEvent};
use pmsim::{SimConfig, Stats, System};

const PM: u64 = DEFAULT_PM_BASE;
const DRAM: u64 = 0x0100_0000_0000;

fn cfg(preset: &str, sets: &[&str]) -> SimConfig {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    SimConfig::preset(preset)
        .unwrap()
        .with_overrides(&sets)
        .unwrap()
}

fn run(cfg: &SimConfig, events: &[TraceEvent]) -> (System, Stats) {
    let mut sys = System::new(cfg).unwrap();
    sys.run(events.iter().copied().map(Ok), |_| {}).unwrap();
    let s = sys.stats();
    (sys, s)
}

fn store(t: u16, addr: u64, v: u64, gap: u32) -> TraceEvent {
    TraceEvent::store(Op::Store, t, 0x400000, addr, &v.to_le_bytes(), gap)
}
fn load(t: u16, addr: u64, gap: u32) -> TraceEvent {
    TraceEvent::access(Op::Load, t, 0x400010, addr, 8, gap)
}
fn clwb(t: u16, addr: u64) -> TraceEvent {
    TraceEvent::access(Op::Clwb, t, 0x400020, addr, 64, 0)
}
fn clflushopt(t: u16, addr: u64) -> TraceEvent {
    TraceEvent::access(Op::Clflushopt, t, 0x400030, addr, 64, 0)
}
fn sfence(t: u16) -> TraceEvent {
    TraceEvent::marker(Op::Sfence, t, 0x400040, 0)
}
fn compute(t: u16, n: u32) -> TraceEvent {
    TraceEvent::marker(Op::Compute, t, 0x400050, n)
}
fn ns(ps: u64) -> f64 {
    ps as f64 / 1000.0
}
fn image_u64(sys: &System, addr: u64) -> u64 {
    let mut b = [0u8; 8];
    sys.durable_image().read(addr, &mut b);
    u64::from_le_bytes(b)
}

/// Warm a line into the cache, let the fill finish, then store to it.
fn warm_store(addr: u64, v: u64) -> Vec<TraceEvent> {
    vec![load(0, addr, 0), compute(0, 20_000), store(0, addr, v, 0)]
}

#[test]
fn clwb_sfence_costs_the_persist_round_trip_and_a_plain_store_does_not() {
    let c = cfg("nvm-ppo", &[]); // no ADR: durable when the media write finishes
    let mut persist = warm_store(PM, 7);
    persist.extend([clwb(0, PM), sfence(0)]);
    let (sys, s) = run(&c, &persist);
    let stall = s.counter("cpu.t0.stall_fence_ps");
    // PPO Table III: a row-conflict write takes 300 ns; a row hit still pays tWR (200 ns).
    assert!(ns(stall) > 200.0, "fence stall {} ns", ns(stall));
    assert_eq!(image_u64(&sys, PM), 7, "the fenced line is durable");

    let plain = warm_store(PM, 7);
    let (sys, s) = run(&c, &plain);
    assert_eq!(s.counter("cpu.t0.stall_fence_ps"), 0);
    assert_eq!(
        image_u64(&sys, PM),
        0,
        "a plain store stays in the cache: nothing durable"
    );
    // Same instruction stream up to the store: the persisting run's thread took longer by
    // (at least) the fence stall.
    let (_, s_persist) = run(&c, &persist);
    // 200 ns at 2.5 GHz = 500 cycles.
    assert!(s_persist.counter("cpu.t0.cycles") > s.counter("cpu.t0.cycles") + 500);
}

/// `cpu.writebacks` = N: a `clwb` waits while N of its thread's write-backs are unacknowledged.
/// Flushing 32 dirty lines (one bank each 8th: row-stride lines of one row) with a bound of 1
/// serialises the write-backs, so the run takes at least 32 lone write-back round trips; the
/// unbounded default queues them at the controller instead, where each waits longer. The
/// bytes made durable are the same.
#[test]
fn a_bound_on_writebacks_in_flight_stalls_the_core_instead_of_the_queue() {
    let lines: Vec<u64> = (0..32).map(|i| PM + i * 4096).collect();
    let mut t: Vec<TraceEvent> = lines.iter().map(|&a| load(0, a, 0)).collect();
    t.push(compute(0, 200_000));
    t.extend(
        lines
            .iter()
            .enumerate()
            .map(|(i, &a)| store(0, a, i as u64 + 1, 0)),
    );
    t.extend(lines.iter().map(|&a| clwb(0, a)));
    t.push(sfence(0));
    let one = {
        let mut o: Vec<TraceEvent> = vec![load(0, PM, 0), compute(0, 200_000), store(0, PM, 1, 0)];
        o.extend([clwb(0, PM), sfence(0)]);
        run(&cfg("nvm-ppo", &[]), &o)
            .1
            .counter("cpu.t0.stall_fence_ps")
    };
    let (free_sys, free) = run(&cfg("nvm-ppo", &[]), &t);
    let (bound_sys, bound) = run(&cfg("nvm-ppo", &["cpu.writebacks=1"]), &t);
    for (i, &a) in lines.iter().enumerate() {
        assert_eq!(image_u64(&free_sys, a), i as u64 + 1);
        assert_eq!(image_u64(&bound_sys, a), i as u64 + 1);
    }
    assert!(
        !free.counters().any(|(k, _)| k == "cpu.stall_writebacks_ps"),
        "unbounded: no such stall"
    );
    let stall = bound.counter("cpu.stall_writebacks_ps");
    assert!(ns(stall) > 0.0);
    // 31 of the 32 write-backs wait for the one before; the last one's wait is the fence's.
    assert!(
        stall + bound.counter("cpu.t0.stall_fence_ps") >= 31 * one,
        "write-back stall {} ns, fence {} ns, one round trip {} ns",
        ns(stall),
        ns(bound.counter("cpu.t0.stall_fence_ps")),
        ns(one)
    );
    let mean = |s: &Stats| s.value("pm.persist_latency_ns_mean").unwrap();
    assert!(
        mean(&bound) < mean(&free) / 3.0,
        "persist latency bounded {} ns, unbounded {} ns",
        mean(&bound),
        mean(&free)
    );
}

#[test]
fn with_adr_the_fence_waits_for_wpq_acceptance_only() {
    let mut t = warm_store(PM, 9);
    t.extend([clwb(0, PM), sfence(0)]);
    let adr = cfg("nvm-lalea", &["controller.adr=true"]);
    let no_adr = cfg("nvm-lalea", &["controller.adr=false"]);
    let (_, s_adr) = run(&adr, &t);
    let (_, s_no) = run(&no_adr, &t);
    let a = ns(s_adr.counter("cpu.t0.stall_fence_ps"));
    let n = ns(s_no.counter("cpu.t0.stall_fence_ps"));
    // LALEA Table I: L1+L2+LLC = 2+8+25 cycles at 2 GHz = 17.5 ns to reach the controller; the
    // media write takes 300 ns.
    assert!(a > 17.0 && a < 40.0, "ADR fence stall {a} ns");
    assert!(n > 300.0, "no-ADR fence stall {n} ns");
}

#[test]
fn clflushopt_invalidates_and_clwb_keeps_the_line() {
    let c = cfg("nvm-lalea", &[]);
    let t = |flush: TraceEvent| {
        vec![
            store(0, PM, 1, 0),
            compute(0, 20_000),
            flush,
            sfence(0),
            load(0, PM, 0),
        ]
    };
    let (sys, s) = run(&c, &t(clflushopt(0, PM)));
    assert_eq!(s.counter("pm.reads"), 2, "the load after clflushopt misses");
    assert_eq!(s.counter("pm.writebacks"), 1);
    assert_eq!(image_u64(&sys, PM), 1);
    let (sys, s) = run(&c, &t(clwb(0, PM)));
    assert_eq!(s.counter("pm.reads"), 1, "clwb keeps the line cached");
    assert_eq!(s.counter("pm.writebacks"), 1);
    assert_eq!(image_u64(&sys, PM), 1);
    // A clean line has nothing to write back.
    let (_, s) = run(
        &c,
        &[load(0, PM, 0), compute(0, 20_000), clwb(0, PM), sfence(0)],
    );
    assert_eq!(s.counter("pm.writebacks"), 0);
}

#[test]
fn ntstore_bypasses_the_caches_and_merges_a_cached_copy() {
    let c = cfg("nvm-lalea", &[]);
    let line = [5u8; 64];
    let (sys, s) = run(
        &c,
        &[
            TraceEvent::store(Op::NtStore, 0, 1, PM + 64, &line, 0),
            sfence(0),
        ],
    );
    assert_eq!(s.counter("pm.reads"), 0, "no fill (no read-for-ownership)");
    assert_eq!(s.counter("cache.llc.misses"), 0);
    assert_eq!(s.counter("pm.nt_writes"), 1, "one full-line write");
    let mut b = [0u8; 64];
    sys.durable_image().read(PM + 64, &mut b);
    assert_eq!(b, line);
    // A cached dirty copy is evicted into the non-temporal write.
    let (sys, s) = run(
        &c,
        &[
            store(0, PM, 0x1111, 0),
            compute(0, 20_000),
            TraceEvent::store(Op::NtStore, 0, 1, PM + 8, &0x2222u64.to_le_bytes(), 0),
            sfence(0),
        ],
    );
    assert_eq!(image_u64(&sys, PM), 0x1111);
    assert_eq!(image_u64(&sys, PM + 8), 0x2222);
    assert_eq!(s.counter("pm.writebacks"), 0);
}

#[test]
fn a_full_store_buffer_stalls_the_core() {
    let stores: Vec<TraceEvent> = (0..64).map(|i| store(0, PM + i * 4096, i, 0)).collect();
    let (_, small) = run(&cfg("nvm-lalea", &["cpu.store_buffer=4"]), &stores);
    let (_, big) = run(&cfg("nvm-lalea", &["cpu.store_buffer=1024"]), &stores);
    assert!(small.counter("cpu.t0.stall_store_buffer_ps") > 0);
    assert_eq!(big.counter("cpu.t0.stall_store_buffer_ps"), 0);
    assert!(small.counter("cpu.t0.cycles") > 4 * big.counter("cpu.t0.cycles").max(1));
}

#[test]
fn independent_misses_overlap_up_to_the_mlp_limit() {
    let loads: Vec<TraceEvent> = (0..32).map(|i| load(0, PM + i * 8192, 0)).collect();
    let (_, one) = run(&cfg("nvm-lalea", &["cpu.mlp=1"]), &loads);
    let (_, many) = run(&cfg("nvm-lalea", &["cpu.mlp=16"]), &loads);
    let (t1, t16) = (one.counter("sim.time_ps"), many.counter("sim.time_ps"));
    assert!(t1 > 3 * t16, "mlp=1 {} ns vs mlp=16 {} ns", ns(t1), ns(t16));
    assert!(one.counter("cpu.t0.stall_mlp_ps") > 0);
    // The reorder buffer bounds how far execution runs ahead of a miss.
    let mut t = vec![load(0, PM, 0)];
    t.extend((0..10).map(|_| compute(0, 100)));
    let (_, rob) = run(&cfg("nvm-lalea", &["cpu.rob=64"]), &t);
    assert!(rob.counter("cpu.t0.stall_rob_ps") > 0);
}

#[test]
fn writes_from_two_cores_are_serialised_and_expose_the_last_writer() {
    let c = cfg("nvm-lalea", &[]);
    let t = [
        store(0, PM, 1, 0),
        store(1, PM + 8, 2, 40_000),
        clwb(1, PM),
        sfence(1),
    ];
    let (sys, s) = run(&c, &t);
    assert!(s.counter("cache.coherence_actions") >= 1);
    assert_eq!(sys.hierarchy().last_writer(PM >> 6), Some(1));
    // Core 1's write-back carries core 0's bytes too: one coherent line.
    assert_eq!(image_u64(&sys, PM), 1);
    assert_eq!(image_u64(&sys, PM + 8), 2);
}

#[test]
fn dram_lines_are_not_persists() {
    let c = cfg("pcm-pmweaver", &[]);
    let t = [
        store(0, DRAM, 3, 0),
        load(0, DRAM + 4096, 0),
        clwb(0, DRAM),
        sfence(0),
    ];
    let (sys, s) = run(&c, &t);
    assert_eq!(s.counter("pm.reads"), 0);
    assert_eq!(s.counter("pm.writebacks"), 0);
    assert_eq!(s.counter("dram.reads"), 2);
    assert_eq!(s.counter("dram.writebacks"), 1);
    assert!(sys.durable_image().is_empty());
}

#[test]
fn a_thread_beyond_the_configured_cores_is_a_clear_error() {
    let c = cfg("nvm-lalea", &[]); // 4 cores x 1 thread
    let mut sys = System::new(&c).unwrap();
    let e = sys
        .run([Ok(load(4, PM, 0))], |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("thread 4") && e.contains("cpu.cores"), "{e}");
}

/// A deterministic pseudo-random trace: per-thread disjoint PM lines written with globally
/// increasing values, flushed and fenced at random.
fn random_trace(threads: u16, n: usize, seed: u64, nt_stores: bool) -> Vec<TraceEvent> {
    let mut x = seed;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut v = 0u64;
    let mut out = Vec::new();
    for _ in 0..n {
        let t = (rnd() % threads as u64) as u16;
        let line = PM + (t as u64 * 1024 + rnd() % 48) * 64;
        match rnd() % 10 {
            0..=3 => {
                v += 1;
                out.push(store(t, line, v, (rnd() % 20) as u32));
            }
            4..=5 => out.push(clwb(t, line)),
            6 => out.push(clflushopt(t, line)),
            7 => out.push(sfence(t)),
            8 if nt_stores => {
                v += 1;
                out.push(nt(t, line, v));
            }
            8 => out.push(load(t, line, 3)),
            _ => out.push(store(t, DRAM + (rnd() % 512) * 64, rnd(), 1)),
        }
    }
    out
}

/// For thread `t`: lines and the value each must hold at least, given that the thread's first
/// `retired` events completed (every fence among them completed).
fn guaranteed(events: &[TraceEvent], t: u16, retired: u64) -> Vec<(u64, u64)> {
    use std::collections::HashMap;
    let mut cur: HashMap<u64, u64> = HashMap::new();
    let mut flushed: HashMap<u64, u64> = HashMap::new();
    let mut sure: HashMap<u64, u64> = HashMap::new();
    for ev in events
        .iter()
        .filter(|e| e.thread == t)
        .take(retired as usize)
    {
        match ev.op {
            Op::Store if ev.addr >= PM => {
                cur.insert(
                    ev.addr,
                    u64::from_le_bytes(ev.value[..8].try_into().unwrap()),
                );
            }
            Op::Clwb | Op::Clflushopt => {
                if let Some(&v) = cur.get(&ev.addr) {
                    flushed.insert(ev.addr, v);
                }
            }
            Op::Sfence => {
                for (a, v) in flushed.drain() {
                    let e = sure.entry(a).or_insert(0);
                    *e = (*e).max(v);
                }
            }
            _ => {}
        }
    }
    sure.into_iter().collect()
}

fn check_crash_cuts(preset: &str, threads: u16) {
    check_crash_cuts_with(preset, threads, &[], false);
}

fn check_crash_cuts_with(preset: &str, threads: u16, sets: &[&str], nt_stores: bool) {
    let events = random_trace(threads, 3000, 0x9e37_79b9 + threads as u64, nt_stores);
    let c = cfg(preset, sets);
    let (_, full) = run(&c, &events);
    let end = full.counter("sim.time_ps");
    let mut checked_lines = 0;
    for k in 1..=25u64 {
        let t = end * k / 26;
        let mut sys = System::new(&c).unwrap().crash_at(t).record_persists();
        let sum = sys.run(events.iter().copied().map(Ok), |_| {}).unwrap();
        assert!(sum.crashed && sum.sim_time == t);
        // Never a line that was not acknowledged by the persistence domain by t.
        let acked: std::collections::HashSet<u64> = sys
            .persist_log()
            .iter()
            .filter(|(at, _)| *at <= t)
            .map(|(_, l)| *l)
            .collect();
        for l in sys.durable_image().line_addrs() {
            assert!(
                acked.contains(&l),
                "{preset}: line {l:#x} durable but never acknowledged"
            );
        }
        // Always every line whose fence completed, with at least the fenced value.
        for th in 0..threads {
            for (addr, v) in guaranteed(&events, th, sys.retired_events(th as usize)) {
                let got = image_u64(&sys, addr);
                assert!(
                    got >= v,
                    "{preset}, crash at {} ns, thread {th}: {addr:#x} holds {got}, fenced {v}",
                    ns(t)
                );
                checked_lines += 1;
            }
        }
    }
    assert!(
        checked_lines > 100,
        "the oracle checked {checked_lines} lines"
    );
}

#[test]
fn crash_cut_holds_exactly_what_was_acknowledged_adr() {
    check_crash_cuts("nvm-lalea", 1);
    check_crash_cuts("nvm-lalea", 4);
}

#[test]
fn crash_cut_holds_exactly_what_was_acknowledged_no_adr() {
    check_crash_cuts("nvm-ppo", 1);
    check_crash_cuts("nvm-ppo", 8);
}

#[test]
fn crash_cut_holds_with_evictions_and_non_temporal_stores() {
    // A 4 KiB LLC and 1 KiB L1 against 48 lines per thread: dirty lines are evicted between
    // their stores and their clwb; non-temporal stores mix with cached writes of the lines.
    let small = [
        "caches.llc.size_kib=4",
        "caches.llc.ways=2",
        "caches.l1d.size_kib=1",
        "caches.l1d.ways=2",
        "caches.l2.size_kib=0",
    ];
    for preset in ["nvm-lalea", "nvm-ppo"] {
        check_crash_cuts_with(preset, 1, &small, true);
        check_crash_cuts_with(preset, 4, &small, true);
    }
}

#[test]
fn same_trace_same_statistics() {
    let events = random_trace(4, 5000, 42, true);
    let c = cfg("pcm-pmweaver", &[]);
    let (_, a) = run(&c, &events);
    let (_, b) = run(&c, &events);
    assert_eq!(a.to_json(), b.to_json());
    assert!(a.counter("sim.events") == 5000);
}

#[test]
fn a_thread_starved_by_read_ahead_still_runs_to_the_end() {
    // Thread 0 waits for its second event behind more events of thread 1 than the read-ahead
    // bound holds: thread 1 (seen only while reading ahead) must run meanwhile.
    // Thread 0's first event leaves the memory system idle (nothing else to do meanwhile).
    let mut t = vec![compute(0, 1)];
    t.extend((0..70_000).map(|i| load(1, PM + 4096 + (i % 64) * 64, 1)));
    t.push(store(0, PM, 5, 0));
    t.extend([clwb(0, PM), sfence(0)]);
    let (sys, s) = run(&cfg("nvm-lalea", &[]), &t);
    assert_eq!(s.counter("sim.events"), t.len() as u64);
    assert_eq!(image_u64(&sys, PM), 5);
}

fn nt(t: u16, addr: u64, v: u64) -> TraceEvent {
    TraceEvent::store(Op::NtStore, t, 0x400060, addr, &v.to_le_bytes(), 0)
}

fn remote(t: u16, addr: u64, v: u64) -> TraceEvent {
    TraceEvent::store(Op::RdmaPwrite, t, 0x400070, addr, &v.to_le_bytes(), 0)
}

#[test]
fn a_clwb_of_an_evicted_line_waits_for_the_eviction() {
    // A 1 KiB direct-mapped LLC: line X is evicted by a load of X + 1 KiB, and its write-back
    // is still on its way when the clwb finds no cached copy.
    for preset in ["nvm-ppo", "nvm-lalea"] {
        let c = cfg(
            preset,
            &[
                "caches.llc.size_kib=1",
                "caches.llc.ways=1",
                "caches.l1d.size_kib=1",
                "caches.l1d.ways=1",
                "caches.l2.size_kib=0",
            ],
        );
        let t = [
            store(0, PM, 7, 0),
            compute(0, 20_000),
            load(0, PM + 1024, 0),
            clwb(0, PM),
            sfence(0),
        ];
        let mut sys = System::new(&c).unwrap().record_persists();
        sys.run(t.iter().copied().map(Ok), |_| {}).unwrap();
        let fence_done = sys.fence_log().last().unwrap().0;
        let mut cut = System::new(&c).unwrap().crash_at(fence_done);
        cut.run(t.iter().copied().map(Ok), |_| {}).unwrap();
        assert_eq!(cut.retired_events(0), 5, "{preset}: the fence completed");
        assert_eq!(image_u64(&cut, PM), 7, "{preset}: fenced line durable");
    }
}

#[test]
fn writes_of_one_line_reach_memory_in_program_order() {
    let c = cfg("nvm-ppo", &[]);
    // Cached line: write-back, then a non-temporal write of another word of the line.
    let (sys, _) = run(
        &c,
        &[
            store(0, PM, 1, 0),
            compute(0, 20_000),
            clwb(0, PM),
            nt(0, PM + 8, 2),
            sfence(0),
        ],
    );
    assert_eq!((image_u64(&sys, PM), image_u64(&sys, PM + 8)), (1, 2));
    // Same with the store still missing (the write-back waits for the fill).
    let (sys, _) = run(
        &c,
        &[store(0, PM, 1, 0), clwb(0, PM), nt(0, PM + 8, 2), sfence(0)],
    );
    assert_eq!((image_u64(&sys, PM), image_u64(&sys, PM + 8)), (1, 2));
    // A remote write to a dirty cached line keeps the line's other bytes.
    let (sys, _) = run(
        &c,
        &[
            store(0, PM, 1, 0),
            compute(0, 20_000),
            remote(0, PM + 8, 2),
            sfence(0),
            clwb(0, PM),
            sfence(0),
        ],
    );
    assert_eq!((image_u64(&sys, PM), image_u64(&sys, PM + 8)), (1, 2));
    // A store to the line in the thread's write-combining buffer sees the buffered bytes.
    let (sys, _) = run(
        &c,
        &[nt(0, PM, 1), store(0, PM + 8, 2, 0), clwb(0, PM), sfence(0)],
    );
    assert_eq!((image_u64(&sys, PM), image_u64(&sys, PM + 8)), (1, 2));
}

#[test]
fn a_trailing_ntstore_still_reaches_memory() {
    let (sys, s) = run(&cfg("nvm-lalea", &[]), &[nt(0, PM, 0xabcd)]);
    assert_eq!(image_u64(&sys, PM), 0xabcd);
    assert_eq!(s.counter("mc.writes_accepted"), 1);
    assert_eq!(
        s.counter("pm.write_bytes"),
        8,
        "8 non-temporal bytes, not a line"
    );
}

#[test]
fn dram_write_backs_are_not_pm_persists() {
    let (_, s) = run(
        &cfg("nvm-lalea", &[]),
        &[store(0, DRAM, 1, 0), clwb(0, DRAM), sfence(0)],
    );
    assert_eq!(s.histogram("pm.persist_latency_ps").unwrap().count(), 0);
}

#[test]
fn nothing_executes_after_the_crash_point() {
    // Thread 0's store comes after 4 M instructions (over a millisecond); thread 1 writes the
    // line back at ~1 us. A crash at 3 us must not contain thread 0's store.
    let c = cfg("pcm-pmweaver", &[]);
    let t = [
        store(0, PM, 5, 4_000_000),
        compute(1, 1000),
        clwb(1, PM),
        sfence(1),
    ];
    let mut sys = System::new(&c).unwrap().crash_at(3_000_000);
    let sum = sys.run(t.iter().copied().map(Ok), |_| {}).unwrap();
    assert!(sum.crashed);
    assert_eq!(sys.retired_events(0), 0);
    assert_eq!(image_u64(&sys, PM), 0);
}

#[test]
fn a_fence_waiting_at_a_crash_counts_as_stall_up_to_the_cut() {
    // No ADR: the fence waits about 300 ns for the media write. Cut the run in the middle of
    // that wait, twice: the later cut shows the longer stall.
    let c = cfg("nvm-ppo", &[]);
    let mut t = warm_store(PM, 7);
    t.extend([clwb(0, PM), sfence(0)]);
    let (_, full) = run(&c, &t);
    let total = full.counter("cpu.t0.stall_fence_ps");
    let end = full.counter("cpu.t0.cycles") * 400; // 2.5 GHz: 400 ps per cycle
    let stall_at = |cut: u64| {
        let mut sys = System::new(&c).unwrap().crash_at(cut);
        sys.run(t.iter().copied().map(Ok), |_| {}).unwrap();
        sys.stats().counter("cpu.t0.stall_fence_ps")
    };
    let (early, late) = (stall_at(end - total / 2), stall_at(end - total / 4));
    assert!(early > 0, "the open fence's stall is counted");
    assert_eq!(late - early, total / 4, "and grows with the cut");
}

#[test]
fn a_crash_point_after_the_end_leaves_the_run_as_it_was() {
    let c = cfg("nvm-ppo", &[]);
    let mut t = warm_store(PM, 7);
    t.extend([clwb(0, PM), sfence(0)]);
    let (_, full) = run(&c, &t);
    let end = full.counter("sim.time_ps");
    for cut in [end + 1, u64::MAX] {
        let mut sys = System::new(&c).unwrap().crash_at(cut);
        let s = sys.run(t.iter().copied().map(Ok), |_| {}).unwrap();
        assert!(!s.crashed);
        assert_eq!(s.sim_time, end, "cut at {cut}");
        assert_eq!(sys.stats().to_json(), full.to_json(), "cut at {cut}");
    }
}

#[test]
fn an_await_holds_its_thread_until_the_other_retires_the_events_it_names() {
    let c = cfg("nvm-ppo", &[]);
    let t0 = [compute(0, 1_000_000), store(0, PM, 1, 0)];
    let t1 = [store(1, PM + 64, 2, 0), clwb(1, PM + 64), sfence(1)];
    let cycles = |events: &[TraceEvent]| {
        let (_, s) = run(&c, events);
        (
            s.counter("cpu.t0.cycles"),
            s.counter("cpu.t1.cycles"),
            s.counter("cpu.await_waits"),
        )
    };
    // Thread 1 awaits thread 0's long computation (event 1), or that and its store (event 2).
    // Either way it goes on only once thread 0 got there: whether it had to block (thread 0
    // not there yet when thread 1 reached the await) or thread 0 had been stepped past it
    // already (its clock jumps by the computation's length in one step).
    for count in [1, 2] {
        let edge = TraceEvent::await_events(1, 0x400060, 0, count, 0);
        let mut events = vec![t0[0]];
        if count == 2 {
            events.push(t0[1]);
        }
        events.push(edge);
        events.extend(t1);
        if count == 1 {
            events.push(t0[1]);
        }
        let (c0, c1, _) = cycles(&events);
        assert!(c0 > 200_000, "thread 0 computes for a while: {c0} cycles");
        assert!(
            c1 >= 250_000,
            "await of event {count}: thread 1 went on before thread 0 got there: {c1} cycles"
        );
    }
    // Without the edge thread 1 is done long before.
    let without: Vec<TraceEvent> = t1.iter().chain(t0.iter()).copied().collect();
    let (_, c1, waits) = cycles(&without);
    assert!(c1 < 10_000, "{c1}");
    assert_eq!(waits, 0);
    // An await must follow the events it awaits in the trace: one ahead of them is refused
    // (an edge that could never hold, or a cycle of them, would otherwise never be found).
    let early: Vec<TraceEvent> = std::iter::once(TraceEvent::await_events(1, 0x400060, 0, 1, 0))
        .chain(t0.iter().copied())
        .collect();
    let mut sys = System::new(&c).unwrap();
    let e = sys
        .run(early.iter().copied().map(Ok), |_| {})
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("event 1: thread 1 awaits event 1 of thread 0, but only 0 of thread 0's events come before it"),
        "{e}"
    );
}
