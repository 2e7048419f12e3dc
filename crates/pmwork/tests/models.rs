//! The programming models on their own: event order of logging, rollback and replay, the
//! hardware-transaction markers, and the undo model's missing-TX_ADD check.

use pmtrace::{Op, TraceEvent};
use pmwork::layout::{heap_start, log_base};
use pmwork::persist_model::{CutPolicy, PersistModel};
use pmwork::{Model, NullSink, Tx, VecSink};

/// A context with one allocated, persisted word holding 1; returns it and the word.
fn one_word(model: Model, sink: Box<dyn pmwork::EventSink>) -> (Tx, u64) {
    let mut tx = Tx::new(model, 1, sink);
    tx.begin_setup(0);
    let a = tx.alloc(8);
    tx.write(a, 1);
    tx.end_setup();
    (tx, a)
}

fn events(tx: Tx) -> Vec<TraceEvent> {
    tx.finish()
        .unwrap()
        .into_any()
        .downcast::<VecSink>()
        .unwrap()
        .events
}

#[test]
fn undo_persists_the_entry_before_the_data_changes() {
    for model in [Model::Undo, Model::UndoLl] {
        let (mut tx, a) = one_word(model, Box::<VecSink>::default());
        let before = tx.heap_ref().events(0) as usize;
        tx.begin();
        tx.add(a, 8);
        tx.write(a, 2);
        tx.commit();
        let ev = events(tx);
        let ev = &ev[before..];
        let log = log_base(0)..heap_start(0);
        let data_store = ev
            .iter()
            .position(|e| e.op == Op::Store && e.addr == a)
            .expect("data store");
        let first_fence = ev.iter().position(|e| e.op == Op::Sfence).unwrap();
        assert!(
            first_fence < data_store,
            "{model}: data changed before the log fence"
        );
        assert!(ev[..first_fence]
            .iter()
            .any(|e| e.op == Op::Store && log.contains(&e.addr)));
        assert!(ev[..first_fence]
            .iter()
            .any(|e| e.op == Op::Clwb && log.contains(&e.addr)));
        // The entry carries the old value.
        assert!(ev[..first_fence].iter().any(|e| e.op == Op::Store
            && log.contains(&e.addr)
            && e.value_bytes() == 1u64.to_le_bytes()));
        // Commit: the data line is written back and fenced before the log is retired.
        let flush = ev
            .iter()
            .rposition(|e| e.op == Op::Clwb && e.addr == a & !63)
            .unwrap();
        assert!(flush > data_store);
        assert_eq!(ev.last().unwrap().op, Op::Sfence);
    }
}

#[test]
fn undo_recovery_rolls_back_an_uncommitted_transaction() {
    for model in [Model::Undo, Model::UndoLl] {
        let (mut tx, a) = one_word(model, Box::new(NullSink));
        tx.begin();
        tx.add(a, 8);
        tx.write(a, 2);
        let b = tx.alloc(64);
        tx.write(b, 3);
        // Crash with everything executed persisted (the most a cache could have written back).
        let img = tx.heap().pm_snapshot();
        let (mut r, init) = Tx::recover(model, 1, &img).unwrap();
        assert_eq!(init, vec![true]);
        assert_eq!(r.read(a), 1, "{model}: not rolled back");
        // Recovery is idempotent: recovering the recovered image changes nothing.
        let again = r.heap().pm_snapshot();
        let (mut r2, _) = Tx::recover(model, 1, &again).unwrap();
        assert_eq!(r2.read(a), 1);
        tx.commit();
        let img = tx.heap().pm_snapshot();
        let (mut r, _) = Tx::recover(model, 1, &img).unwrap();
        assert_eq!(r.read(a), 2, "{model}: committed value lost");
    }
}

#[test]
fn undo_rollback_restores_overlapping_entries_newest_first() {
    // A wider add after a write logs bytes the transaction already changed (a = 1): rolled
    // back oldest first, that entry would put the 1 back over the first entry's 0.
    for model in [Model::Undo, Model::UndoLl] {
        let mut tx = Tx::new(model, 1, Box::new(NullSink));
        tx.begin_setup(0);
        let a = tx.alloc(16);
        tx.write(a, 0);
        tx.write(a + 8, 0);
        tx.end_setup();
        tx.begin();
        tx.add(a, 8);
        tx.write(a, 1);
        tx.add(a, 16);
        tx.write(a + 8, 2);
        let img = tx.heap().pm_snapshot();
        let (mut r, _) = Tx::recover(model, 1, &img).unwrap();
        assert_eq!((r.read(a), r.read(a + 8)), (0, 0), "{model}");
    }
}

#[test]
fn redo_leaves_home_untouched_until_commit_and_replays_a_committed_log() {
    let (mut tx, a) = one_word(Model::Redo, Box::<VecSink>::default());
    let before = tx.heap_ref().events(0) as usize;
    tx.begin();
    tx.write(a, 2);
    assert_eq!(tx.read(a), 2, "read-your-writes");
    assert_eq!(tx.heap().peek_u64(a), 1, "home written before commit");
    tx.commit();
    assert_eq!(tx.heap().peek_u64(a), 2);
    let ev = events(tx);
    // Cut after every event of the transaction: the value is old or new, never torn, and new
    // once the commit record's fence has completed.
    let fences: Vec<usize> = (before..ev.len())
        .filter(|&i| ev[i].op == Op::Sfence)
        .collect();
    assert_eq!(fences.len(), 4, "log, commit record, apply, retire");
    let mut m = PersistModel::new(1, false);
    for (i, e) in ev.iter().enumerate() {
        m.apply(e);
        for mut pol in [CutPolicy::Durable, CutPolicy::Latest] {
            let img = m.image(&mut pol);
            let (mut r, init) = Tx::recover(Model::Redo, 1, &img).unwrap();
            if !init[0] {
                continue;
            }
            let v = r.read(a);
            assert!(v == 1 || v == 2, "torn value {v} after event {i}");
            if i >= fences[1] {
                assert_eq!(v, 2, "committed transaction lost after event {i}");
            }
            if i < fences[0] {
                assert_eq!(v, 1, "uncommitted transaction visible after event {i}");
            }
        }
    }
}

#[test]
fn hardware_transactions_are_markers_around_plain_stores() {
    let (mut tx, a) = one_word(Model::HwTx, Box::<VecSink>::default());
    let before = tx.heap_ref().events(0) as usize;
    tx.begin();
    tx.add(a, 8);
    tx.write(a, 2);
    tx.commit();
    let ops: Vec<Op> = events(tx)[before..].iter().map(|e| e.op).collect();
    assert_eq!(ops, vec![Op::TxBegin, Op::Store, Op::TxEnd]);
}

#[test]
#[should_panic(expected = "missing TX_ADD")]
fn undo_refuses_a_write_that_was_not_added() {
    let (mut tx, a) = one_word(Model::Undo, Box::new(NullSink));
    tx.begin();
    tx.write(a, 2);
}
