//! Generation: determinism, headers, well-formed events, PCs, the `.pmt` path and the
//! streaming adapter.

use pmtrace::{Op, PmtReader, PmtWriter, TraceEvent};
use pmwork::{
    registry, workload, CountingSink, EventStream, GenOptions, Params, PmtSink, VecSink, DRAM_BASE,
    PM_BASE,
};

fn events(name: &str, p: &Params) -> Vec<TraceEvent> {
    workload(name)
        .unwrap()
        .generate(p, Box::<VecSink>::default(), GenOptions::default())
        .unwrap()
        .into_events()
}

fn small(seed: u64) -> Params {
    Params {
        ops: 40,
        threads: 2,
        seed,
        remote_threads: 0,
        janus_hints: false,
        value_bytes: 8,
    }
}

#[test]
fn every_workload_is_deterministic_for_a_seed_and_varies_with_it() {
    for w in registry() {
        let name = w.info().name;
        let a = events(name, &small(3));
        let b = events(name, &small(3));
        assert!(a == b, "{name}: two runs with one seed differ");
        let c = events(name, &small(4));
        assert!(a != c, "{name}: seeds 3 and 4 gave the same trace");
    }
}

#[test]
fn events_are_well_formed_and_use_both_regions() {
    for w in registry() {
        let name = w.info().name;
        let p = small(1);
        let ev = events(name, &p);
        let mut pm_stores = 0;
        let mut dram_stores = 0;
        let mut threads = [0u64; 2];
        for e in &ev {
            e.check(p.threads)
                .unwrap_or_else(|k| panic!("{name}: bad event {e:?}: {k}"));
            threads[e.thread as usize] += 1;
            if e.op.writes_memory() {
                assert_eq!(
                    e.value_len as u16, e.size,
                    "{name}: store without its value"
                );
                assert_eq!(
                    e.addr / 64,
                    (e.addr + e.size as u64 - 1) / 64,
                    "{name}: store crosses a line"
                );
                if e.addr >= PM_BASE {
                    pm_stores += 1;
                } else {
                    assert!(e.addr >= DRAM_BASE, "{name}: store below DRAM_BASE");
                    dram_stores += 1;
                }
            }
        }
        assert!(
            pm_stores > 0 && dram_stores > 0,
            "{name}: {pm_stores} PM / {dram_stores} DRAM stores"
        );
        assert!(
            threads.iter().all(|&n| n > 0),
            "{name}: a thread emitted nothing"
        );
        let model = w.info().model;
        let has = |op: Op| ev.iter().any(|e| e.op == op);
        match model {
            pmwork::Model::HwTx => assert!(has(Op::TxBegin) && has(Op::TxEnd), "{name}"),
            _ => assert!(has(Op::Clwb) && has(Op::Sfence), "{name}"),
        }
    }
}

#[test]
fn call_sites_hash_to_distinct_pcs() {
    for w in registry() {
        let g = w
            .generate(
                &small(1),
                Box::<CountingSink>::default(),
                GenOptions::default(),
            )
            .unwrap();
        assert_eq!(g.pc_collisions, 0, "{}", w.info().name);
        assert!(g.pc_sites >= 8, "{}: {} sites", w.info().name, g.pc_sites);
    }
}

#[test]
fn commit_indices_increase_and_end_at_the_last_event() {
    for w in registry() {
        let name = w.info().name;
        let p = small(2);
        let g = w
            .generate(
                &p,
                Box::<CountingSink>::default(),
                GenOptions {
                    record_commits: true,
                    fault: None,
                },
            )
            .unwrap();
        let c = g.commits.unwrap();
        for t in 0..2 {
            let v = &c.per_thread[t];
            assert_eq!(v.len() as u64, 1 + g.ops_per_thread[t], "{name}");
            assert!(v.windows(2).all(|x| x[0] <= x[1]), "{name}: not increasing");
            assert_eq!(*v.last().unwrap(), g.events_per_thread[t], "{name}");
        }
    }
}

#[test]
fn pmt_file_round_trips_with_the_header() {
    let w = workload("tpcc").unwrap();
    let p = small(9);
    let header = w.header(&p);
    assert_eq!(header.workload, "tpcc");
    assert_eq!(header.seed, 9);
    assert!(header.params.contains("ops=40") && header.params.contains("model=undo"));
    let sink = PmtSink::new(PmtWriter::new(Vec::new(), header.clone()).unwrap());
    let g = w
        .generate(&p, Box::new(sink), GenOptions::default())
        .unwrap();
    let bytes = g
        .sink
        .into_any()
        .downcast::<PmtSink<Vec<u8>>>()
        .unwrap()
        .into_inner()
        .unwrap();
    let mut r = PmtReader::new(&bytes[..]).unwrap();
    assert_eq!(r.header(), &header);
    let back: Vec<TraceEvent> = r.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(back, events("tpcc", &p));
}

#[test]
fn the_stream_yields_the_same_events_and_can_be_abandoned() {
    let w = workload("ycsb").unwrap();
    let p = Params {
        ops: 3000,
        threads: 2,
        seed: 1,
        remote_threads: 0,
        janus_hints: false,
        value_bytes: 8,
    };
    let mut s = EventStream::spawn(w, p.clone(), true);
    assert_eq!(s.header().workload, "ycsb");
    let streamed: Vec<TraceEvent> = s.by_ref().collect();
    let summary = s.finish().unwrap();
    assert_eq!(streamed.len() as u64, summary.events);
    assert!(summary.commits.is_some());
    assert!(streamed == events("ycsb", &p));
    // A consumer that stops early: the generator notices and ends.
    let big = Params {
        ops: 10_000_000,
        threads: 1,
        seed: 1,
        remote_threads: 0,
        janus_hints: false,
        value_bytes: 8,
    };
    let mut s = EventStream::spawn(workload("queue").unwrap(), big, false);
    assert_eq!(s.by_ref().take(10_000).count(), 10_000);
    let err = s.finish().unwrap_err();
    assert!(err.contains("hung up"), "{err}");
}

/// A remote client persists what its flushes name at its fences; a hardware transaction
/// flushes nothing, so its clients' transactions never reached the server (every crash point
/// failed): hardware-transaction workloads refuse remote threads, the others take them
/// (but `shared-log`, whose threads share data).
#[test]
fn remote_threads_are_refused_by_hardware_transaction_workloads_only() {
    for w in registry() {
        let info = w.info();
        let p = Params {
            remote_threads: 1,
            ..small(5)
        };
        let r = w.generate(&p, Box::<CountingSink>::default(), GenOptions::default());
        if info.suite == pmwork::Suite::Check {
            continue; // shared-log: threads sharing data, local by construction
        }
        if info.model == pmwork::Model::HwTx {
            let e = r
                .err()
                .unwrap_or_else(|| panic!("{}: remote threads taken", info.name));
            assert!(e.contains("no remote clients"), "{}: {e}", info.name);
        } else {
            assert!(r.is_ok(), "{}: {:?}", info.name, r.err());
        }
    }
}

#[test]
fn bad_parameters_are_errors_not_panics() {
    let w = workload("btree").unwrap();
    for threads in [0, 65] {
        let p = Params {
            ops: 1,
            threads,
            seed: 0,
            remote_threads: 0,
            janus_hints: false,
            value_bytes: 8,
        };
        let e = w
            .generate(&p, Box::<CountingSink>::default(), GenOptions::default())
            .err()
            .unwrap();
        assert!(e.contains("threads"), "{e}");
    }
}

#[test]
fn memory_grows_with_footprint_not_with_trace_length() {
    // The queue's footprint stays small however long it runs; the SPS vector spans 1 GB of
    // address space but costs only what is touched.
    let w = workload("queue").unwrap();
    let run = |ops| {
        w.generate(
            &Params {
                ops,
                threads: 1,
                seed: 1,
                remote_threads: 0,
                janus_hints: false,
                value_bytes: 8,
            },
            Box::<CountingSink>::default(),
            GenOptions::default(),
        )
        .unwrap()
    };
    let (a, b) = (run(20_000), run(200_000));
    assert!(b.events > 9 * a.events);
    assert!(
        b.resident_bytes < 4 * a.resident_bytes + (1 << 20),
        "{} vs {}",
        a.resident_bytes,
        b.resident_bytes
    );
    let s = workload("ppo-sps")
        .unwrap()
        .generate(
            &small(1),
            Box::<CountingSink>::default(),
            GenOptions::default(),
        )
        .unwrap();
    assert!(s.resident_bytes < 64 << 20, "{}", s.resident_bytes);
}

#[test]
fn janus_hints_are_refused_with_crash_recording() {
    let w = pmwork::workload("linkedlist").unwrap();
    let mut p = w.info().default_params(1);
    p.ops = 10;
    p.janus_hints = true;
    let e = w
        .generate(
            &p,
            Box::new(VecSink::default()),
            GenOptions {
                record_commits: true,
                fault: None,
            },
        )
        .err()
        .expect("refused");
    assert!(e.contains("janus hints"), "{e}");
    // Without crash recording the hinted trace generates, with hints in it.
    let ev = w
        .generate(&p, Box::new(VecSink::default()), GenOptions::default())
        .unwrap()
        .into_events();
    assert!(ev.iter().any(|e| e.op == pmtrace::Op::Hint));
}
