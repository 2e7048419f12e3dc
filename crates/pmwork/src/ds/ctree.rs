//! Crit-bit tree map (PMDK `ctree_map`).
//!
//! An entry is `[kind, key, slot]`: kind 0 empty, 1 leaf (`slot` = value), 2 internal
//! (`slot` = node). A node is `[diff, entry0, entry1]`: the keys under `entry b` have bit
//! `diff` equal to `b`, and agree on every bit above `diff`; `diff` decreases downwards.
//! The root object is one entry. Insert splices a new node above the first entry whose
//! node branches on a lower bit; remove replaces the leaf's parent entry by its sibling.

use std::collections::BTreeMap;

use super::{MapDs, StepLimit};
use crate::models::Tx;

const EMPTY: u64 = 0;
const LEAF: u64 = 1;
const INNER: u64 = 2;
const ENTRY_BYTES: u64 = 24;
/// Bytes of one node.
pub const NODE_BYTES: u64 = 8 + 2 * ENTRY_BYTES;

#[inline]
fn bit(key: u64, d: u64) -> u64 {
    (key >> d) & 1
}

#[inline]
fn child(node: u64, side: u64) -> u64 {
    node + 8 + side * ENTRY_BYTES
}

/// The crit-bit tree map.
#[derive(Clone, Copy, Debug, Default)]
pub struct CTree;

impl CTree {
    /// The leaf entry `key` leads to (or the empty root entry).
    fn find_leaf(&self, tx: &mut Tx, root: u64, key: u64) -> u64 {
        let mut e = root;
        while tx.read(e) == INNER {
            let n = tx.read(e + 16);
            let d = tx.read(n);
            tx.compute(2);
            e = child(n, bit(key, d));
        }
        e
    }

    fn copy_entry(&self, tx: &mut Tx, from: u64, to: u64) {
        let w: Vec<u64> = (0..3).map(|i| tx.read(from + 8 * i)).collect();
        for (i, v) in w.into_iter().enumerate() {
            tx.write(to + 8 * i as u64, v);
        }
    }

    fn walk(
        &self,
        tx: &mut Tx,
        e: u64,
        max_diff: u64,
        keys: &mut Vec<(u64, u64)>,
        reach: &mut Vec<u64>,
        limit: &mut StepLimit,
    ) -> Result<(), String> {
        limit.step()?;
        match tx.read(e) {
            LEAF => {
                keys.push((tx.read(e + 8), tx.read(e + 16)));
                Ok(())
            }
            INNER => {
                let n = tx.read(e + 16);
                reach.push(n);
                let d = tx.read(n);
                if d >= max_diff {
                    return Err(format!(
                        "ctree node {n:#x}: diff {d} not below its parent's"
                    ));
                }
                let mut sides = [Vec::new(), Vec::new()];
                for (side, sv) in sides.iter_mut().enumerate() {
                    let c = child(n, side as u64);
                    if tx.read(c) == EMPTY {
                        return Err(format!("ctree node {n:#x}: empty child {side}"));
                    }
                    self.walk(tx, c, d, sv, reach, limit)?;
                    if let Some(&(k, _)) = sv.iter().find(|&&(k, _)| bit(k, d) != side as u64) {
                        return Err(format!("ctree node {n:#x}: key {k:#x} on the wrong side"));
                    }
                }
                let first = sides[0][0].0;
                let high = |k: u64| if d == 63 { 0 } else { k >> (d + 1) };
                if sides.iter().flatten().any(|&(k, _)| high(k) != high(first)) {
                    return Err(format!("ctree node {n:#x}: keys disagree above bit {d}"));
                }
                let [a, b] = &mut sides;
                keys.append(a);
                keys.append(b);
                Ok(())
            }
            k => Err(format!("ctree entry {e:#x}: kind {k}")),
        }
    }
}

impl MapDs for CTree {
    fn create(&self, tx: &mut Tx) -> u64 {
        let root = tx.alloc(ENTRY_BYTES);
        for i in 0..3 {
            tx.write(root + 8 * i, 0);
        }
        root
    }

    fn get(&self, tx: &mut Tx, root: u64, key: u64) -> Option<u64> {
        let e = self.find_leaf(tx, root, key);
        (tx.read(e) == LEAF && tx.read(e + 8) == key).then(|| tx.read(e + 16))
    }

    fn insert(&self, tx: &mut Tx, root: u64, key: u64, val: u64) -> bool {
        if tx.read(root) == EMPTY {
            tx.add(root, ENTRY_BYTES);
            tx.write(root + 8, key);
            tx.write(root + 16, val);
            tx.write(root, LEAF);
            return true;
        }
        let leaf = self.find_leaf(tx, root, key);
        let lk = tx.read(leaf + 8);
        if lk == key {
            tx.add(leaf + 16, 8);
            tx.write(leaf + 16, val);
            return false;
        }
        let diff = 63 - u64::from((lk ^ key).leading_zeros());
        let mut e = root;
        while tx.read(e) == INNER {
            let n = tx.read(e + 16);
            let d = tx.read(n);
            if d < diff {
                break;
            }
            e = child(n, bit(key, d));
        }
        let n = tx.alloc(NODE_BYTES);
        tx.write(n, diff);
        let side = bit(key, diff);
        let mine = child(n, side);
        tx.write(mine, LEAF);
        tx.write(mine + 8, key);
        tx.write(mine + 16, val);
        self.copy_entry(tx, e, child(n, 1 - side));
        tx.add(e, ENTRY_BYTES);
        tx.write(e + 16, n);
        tx.write(e + 8, 0);
        tx.write(e, INNER);
        true
    }

    fn remove(&self, tx: &mut Tx, root: u64, key: u64) -> bool {
        let mut parent: Option<(u64, u64)> = None;
        let mut e = root;
        while tx.read(e) == INNER {
            let n = tx.read(e + 16);
            let d = tx.read(n);
            parent = Some((e, n));
            e = child(n, bit(key, d));
        }
        if tx.read(e) != LEAF || tx.read(e + 8) != key {
            return false;
        }
        match parent {
            None => {
                tx.add(root, ENTRY_BYTES);
                tx.write(root, EMPTY);
                tx.write(root + 8, 0);
                tx.write(root + 16, 0);
            }
            Some((pe, n)) => {
                let d = tx.read(n);
                let sib = child(n, 1 - bit(key, d));
                tx.add(pe, ENTRY_BYTES);
                self.copy_entry(tx, sib, pe);
                tx.free(n);
            }
        }
        true
    }

    fn collect(
        &self,
        tx: &mut Tx,
        root: u64,
        reach: &mut Vec<u64>,
    ) -> Result<BTreeMap<u64, u64>, String> {
        reach.push(root);
        let mut keys = Vec::new();
        if tx.read(root) != EMPTY {
            let mut limit = StepLimit::new(1 << 26, "ctree");
            self.walk(tx, root, 64, &mut keys, reach, &mut limit)?;
        }
        let n = keys.len();
        let out: BTreeMap<u64, u64> = keys.into_iter().collect();
        if out.len() != n {
            return Err("ctree holds a key twice".into());
        }
        Ok(out)
    }
}
