//! Every persistent map, under every model it runs under, against `std::collections::BTreeMap`
//! after many random inserts, replacements, removals and lookups.

use std::collections::BTreeMap;

use pmwork::alloc::check_heap;
use pmwork::ds::bplustree::BPlusTree;
use pmwork::ds::btree::BTree;
use pmwork::ds::ctree::CTree;
use pmwork::ds::hashmap::HashMapDs;
use pmwork::ds::rbtree::RbTree;
use pmwork::ds::skiplist::SkipList;
use pmwork::ds::MapDs;
use pmwork::layout::root_word;
use pmwork::rng::Rng;
use pmwork::{Model, NullSink, Tx};

fn exercise<D: MapDs>(ds: &D, model: Model, ops: usize, keyspace: u64, seed: u64) {
    let mut tx = Tx::new(model, 1, Box::new(NullSink));
    tx.begin_setup(0);
    let root = ds.create(&mut tx);
    tx.write(root_word(0, 1), root);
    tx.end_setup();
    let mut m = BTreeMap::new();
    let mut rng = Rng::new(seed);
    for i in 0..ops {
        let key = 1 + rng.below(keyspace);
        let val = rng.next_u64();
        tx.begin();
        match rng.below(5) {
            0..=2 => assert_eq!(
                ds.insert(&mut tx, root, key, val),
                m.insert(key, val).is_none(),
                "insert {key} at op {i}"
            ),
            3 => assert_eq!(
                ds.remove(&mut tx, root, key),
                m.remove(&key).is_some(),
                "remove {key} at op {i}"
            ),
            _ => assert_eq!(
                ds.get(&mut tx, root, key),
                m.get(&key).copied(),
                "get {key}"
            ),
        }
        tx.commit();
        if i % 211 == 0 || i + 1 == ops {
            let mut reach = Vec::new();
            let got = ds.collect(&mut tx, root, &mut reach).unwrap();
            assert_eq!(got, m, "contents after op {i}");
            check_heap(&mut tx, 0, &reach).unwrap();
        }
    }
    // Drain: remove everything, the structure must end empty and the heap consistent.
    let keys: Vec<u64> = m.keys().copied().collect();
    for k in keys {
        tx.begin();
        assert!(ds.remove(&mut tx, root, k));
        tx.commit();
    }
    let mut reach = Vec::new();
    assert!(ds.collect(&mut tx, root, &mut reach).unwrap().is_empty());
    check_heap(&mut tx, 0, &reach).unwrap();
}

const MODELS: [Model; 4] = [Model::Undo, Model::UndoLl, Model::Redo, Model::HwTx];

#[test]
fn btree_matches_std() {
    for (i, m) in MODELS.iter().enumerate() {
        exercise(&BTree, *m, 3000, 400, 10 + i as u64);
    }
    exercise(&BTree, Model::Undo, 4000, 1 << 40, 99);
}

#[test]
fn rbtree_matches_std() {
    for (i, m) in MODELS.iter().enumerate() {
        exercise(&RbTree, *m, 3000, 400, 20 + i as u64);
    }
}

#[test]
fn ctree_matches_std() {
    for (i, m) in MODELS.iter().enumerate() {
        exercise(&CTree, *m, 3000, 400, 30 + i as u64);
    }
    exercise(&CTree, Model::Undo, 3000, u64::MAX, 31);
}

#[test]
fn skiplist_matches_std() {
    for (i, m) in MODELS.iter().enumerate() {
        exercise(&SkipList, *m, 3000, 400, 40 + i as u64);
    }
}

#[test]
fn growable_hashmap_matches_std_across_rebuilds() {
    for (i, m) in MODELS.iter().enumerate() {
        exercise(&HashMapDs::growable(), *m, 3000, 600, 50 + i as u64);
    }
}

#[test]
fn fixed_hashmap_matches_std() {
    for (i, m) in MODELS.iter().enumerate() {
        exercise(&HashMapDs::fixed(64), *m, 3000, 400, 60 + i as u64);
    }
    exercise(&HashMapDs::fixed(1 << 22), Model::Undo, 2000, 1 << 30, 61);
}

#[test]
fn bplustree_matches_std() {
    for (i, m) in MODELS.iter().enumerate() {
        exercise(&BPlusTree, *m, 3000, 400, 70 + i as u64);
    }
    exercise(&BPlusTree, Model::Undo, 5000, 1 << 40, 71);
}
