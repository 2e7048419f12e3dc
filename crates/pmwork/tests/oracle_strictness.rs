//! Oracles reject images a correct run cannot produce: a skip-list node linked on fewer levels
//! than its key draws, and effects of an operation none of whose events has executed.

use pmtrace::TraceEvent;
use pmwork::persist_model::{CutPolicy, PersistModel};
use pmwork::{layout, workload, CommitLog, CrashImage, GenOptions, Model, Params, VecSink};

fn gen(name: &str, p: &Params) -> (Vec<TraceEvent>, CommitLog) {
    let w = workload(name).unwrap();
    let opts = GenOptions {
        record_commits: true,
        fault: None,
    };
    let g = w.generate(p, Box::<VecSink>::default(), opts).unwrap();
    let c = g.commits.clone().unwrap();
    (g.into_events(), c)
}

fn durable_image(ev: &[TraceEvent], hw: bool) -> (CrashImage, Vec<u64>) {
    let mut m = PersistModel::new(1, hw);
    for e in ev {
        m.apply(e);
    }
    (m.image(&mut CutPolicy::Durable), m.completed().to_vec())
}

#[test]
fn a_skiplist_node_missing_from_an_upper_level_is_rejected() {
    let p = Params {
        ops: 40,
        threads: 1,
        seed: 3,
        remote_threads: 0,
        janus_hints: false,
        value_bytes: 8,
    };
    let (ev, c) = gen("skiplist", &p);
    let (mut img, done) = durable_image(&ev, false);
    let w = workload("skiplist").unwrap();
    assert!(
        w.oracle(&p, &c, &img, &done).is_ok(),
        "the intact image passes"
    );
    // Level-1 links live at node + 16 + 8 (next pointers follow key and value). Unlink a node
    // that draws two levels from level 1 only: what a torn insert would leave.
    let next1 = |n: u64| n + 16 + 8;
    let robj = img.read_u64(layout::root_word(0, 1));
    let head = img.read_u64(robj);
    let (mut prev, mut x) = (head, img.read_u64(next1(head)));
    while x != 0 && pmwork::ds::skiplist::level_of(img.read_u64(x)) != 2 {
        prev = x;
        x = img.read_u64(next1(x));
    }
    assert!(x != 0, "some key draws exactly two levels");
    let after = img.read_u64(next1(x));
    img.write_u64(next1(prev), after);
    let e = w.oracle(&p, &c, &img, &done).unwrap_err();
    assert!(e.contains("levels"), "{e}");
}

#[test]
fn an_operation_that_has_not_started_cannot_show() {
    let p = Params {
        ops: 20,
        threads: 1,
        seed: 1,
        remote_threads: 0,
        janus_hints: false,
        value_bytes: 8,
    };
    for name in ["btree", "ycsb", "linkedlist", "arrayswap", "rbtree-hw"] {
        let (ev, c) = gen(name, &p);
        let w = workload(name).unwrap();
        let k = 5;
        let before_k = c.per_thread[0][k]; // events up to the end of operation k - 1
        let after_k = c.per_thread[0][k + 1] as usize; // ... of operation k
        let hw = w.info().model == Model::HwTx;
        let (img, _) = durable_image(&ev[..after_k], hw);
        // Operation k is complete in the image, but the thread is said to have executed none of
        // its events: impossible, so rejected.
        assert!(
            w.oracle(&p, &c, &img, &[before_k]).is_err(),
            "{name}: op {k}'s effects accepted before it started"
        );
        // With one of its events executed, the same image is acceptable.
        assert!(
            w.oracle(&p, &c, &img, &[before_k + 1]).is_ok(),
            "{name}: op {k} in flight rejected"
        );
    }
}

#[test]
fn a_redo_transaction_is_required_once_its_commit_record_is_durable() {
    let p = Params {
        ops: 40,
        threads: 1,
        seed: 2,
        remote_threads: 0,
        janus_hints: false,
        value_bytes: 8,
    };
    let (ev, c) = gen("ycsb", &p);
    let w = workload("ycsb").unwrap();
    // Find an operation whose commit record became durable before its last event.
    let k = (1..c.per_thread[0].len())
        .find(|&k| c.durable[0][k] < c.per_thread[0][k])
        .expect("redo commits end after their commit record");
    // The image before operation k's first event (k - 1 operations durable)...
    let (img, _) = durable_image(&ev[..c.per_thread[0][k - 1] as usize], false);
    // ...is fine while the commit record's fence has not completed...
    assert!(w.oracle(&p, &c, &img, &[c.durable[0][k] - 1]).is_ok());
    // ...and wrong once it has: recovery must then replay operation k.
    assert!(w.oracle(&p, &c, &img, &[c.durable[0][k]]).is_err());
}

#[test]
fn a_leaked_block_is_rejected_in_transactional_models() {
    let p = Params {
        ops: 30,
        threads: 1,
        seed: 4,
        remote_threads: 0,
        janus_hints: false,
        value_bytes: 8,
    };
    for name in ["btree", "ycsb"] {
        let (ev, c) = gen(name, &p);
        let (mut img, done) = durable_image(&ev, false);
        let w = workload(name).unwrap();
        assert!(
            w.oracle(&p, &c, &img, &done).is_ok(),
            "{name}: intact image"
        );
        // Allocate a 32-byte block at the bump pointer that nothing reaches.
        let bump_addr = layout::alloc_header(0);
        let bump = img.read_u64(bump_addr).div_ceil(32) * 32;
        img.write_u64(bump, pmwork::alloc::ALLOC_TAG);
        img.write_u64(bump_addr, bump + 32);
        let e = w.oracle(&p, &c, &img, &done).unwrap_err();
        assert!(e.contains("leaked"), "{name}: {e}");
    }
}

#[test]
fn a_torn_long_hashmap_value_is_rejected() {
    let p = Params {
        ops: 30,
        threads: 1,
        seed: 5,
        remote_threads: 0,
        janus_hints: false,
        value_bytes: 1024,
    };
    let (ev, c) = gen("hashmap-tx", &p);
    let (mut img, done) = durable_image(&ev, false);
    let w = workload("hashmap-tx").unwrap();
    assert!(
        w.oracle(&p, &c, &img, &done).is_ok(),
        "the intact image passes"
    );
    // Entry layout [key, val, next, rest of the value]: the first chain's first entry.
    let robj = img.read_u64(layout::root_word(0, 1));
    let buckets = img.read_u64(robj + 24);
    let n = img.read_u64(buckets);
    let e = (0..n)
        .map(|i| img.read_u64(buckets + 8 + 8 * i))
        .find(|&e| e != 0)
        .expect("some bucket holds an entry");
    // The value's last word keeps what an older value held: a write that did not all persist.
    let last = e + 24 + (1024 - 16);
    let v = img.read_u64(last);
    img.write_u64(last, v ^ 1);
    let err = w.oracle(&p, &c, &img, &done).unwrap_err();
    assert!(err.contains("torn value"), "{err}");
}

#[test]
fn value_sizes_are_refused_where_a_workload_stores_words() {
    let mut p = workload("btree").unwrap().info().default_params(1);
    p.value_bytes = 256;
    let e = workload("btree").unwrap().check_params(&p).unwrap_err();
    assert!(e.contains("8-byte values"), "{e}");
    p.value_bytes = 100;
    assert!(workload("hashmap-tx").unwrap().check_params(&p).is_err());
    p.value_bytes = 4096;
    assert!(workload("hashmap-tx").unwrap().check_params(&p).is_ok());
}
