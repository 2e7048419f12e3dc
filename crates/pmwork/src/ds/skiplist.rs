//! Skip list map (PMDK `skiplist_map`): 4 levels, a sentinel head node, levels drawn by coin
//! flips (here: from a hash of the key, so a key's level is deterministic).
//!
//! Node: `[key, val, next[4]]` (48 bytes). Root object: `[head]`. The search path
//! (`update[]`) is a volatile local array, kept in the thread's DRAM scratch area as a
//! compiled program would spill it.

use std::collections::{BTreeMap, HashSet};

use super::{MapDs, StepLimit};
use crate::layout;
use crate::models::Tx;
use crate::rng::mix64;

/// Number of levels.
pub const LEVELS: usize = 4;
const KEY: u64 = 0;
const VAL: u64 = 8;
const NEXT: u64 = 16;
/// Bytes of one node.
pub const NODE_BYTES: u64 = NEXT + 8 * LEVELS as u64;

/// The level (1..=4) of `key`: 1 + the number of leading heads in fair coin flips.
pub fn level_of(key: u64) -> usize {
    1 + (mix64(key ^ 0x5ca1_ab1e).trailing_ones() as usize).min(LEVELS - 1)
}

/// The skip list map.
#[derive(Clone, Copy, Debug, Default)]
pub struct SkipList;

#[inline]
fn next_addr(x: u64, l: usize) -> u64 {
    x + NEXT + 8 * l as u64
}

impl SkipList {
    /// Fills `update` with the last node before `key` on each level; returns the level-0
    /// successor (the candidate node).
    fn find(&self, tx: &mut Tx, head: u64, key: u64, update: &mut [u64; LEVELS]) -> u64 {
        let scratch = layout::scratch(tx.thread());
        let mut x = head;
        for l in (0..LEVELS).rev() {
            loop {
                let nx = tx.read(next_addr(x, l));
                if nx == 0 {
                    break;
                }
                let k = tx.read(nx + KEY);
                tx.compute(3);
                if k >= key {
                    break;
                }
                x = nx;
            }
            update[l] = x;
            tx.heap().store_u64(scratch + 8 * l as u64, x);
        }
        tx.read(next_addr(x, 0))
    }
}

impl MapDs for SkipList {
    fn create(&self, tx: &mut Tx) -> u64 {
        let robj = tx.alloc(8);
        let head = tx.alloc(NODE_BYTES);
        tx.write(head + KEY, 0);
        tx.write(head + VAL, 0);
        for l in 0..LEVELS {
            tx.write(next_addr(head, l), 0);
        }
        tx.write(robj, head);
        robj
    }

    fn get(&self, tx: &mut Tx, robj: u64, key: u64) -> Option<u64> {
        let head = tx.read(robj);
        let mut u = [0; LEVELS];
        let c = self.find(tx, head, key, &mut u);
        (c != 0 && tx.read(c + KEY) == key).then(|| tx.read(c + VAL))
    }

    fn insert(&self, tx: &mut Tx, robj: u64, key: u64, val: u64) -> bool {
        let head = tx.read(robj);
        let mut u = [0; LEVELS];
        let c = self.find(tx, head, key, &mut u);
        if c != 0 && tx.read(c + KEY) == key {
            tx.add(c + VAL, 8);
            tx.write(c + VAL, val);
            return false;
        }
        let level = level_of(key);
        let n = tx.alloc(NODE_BYTES);
        tx.write(n + KEY, key);
        tx.write(n + VAL, val);
        let scratch = layout::scratch(tx.thread());
        for (l, &ul) in u.iter().enumerate() {
            let nx = if l < level {
                let p = tx.heap().load_u64(scratch + 8 * l as u64);
                debug_assert_eq!(p, ul);
                tx.read(next_addr(p, l))
            } else {
                0
            };
            tx.write(next_addr(n, l), nx);
        }
        for (l, &p) in u.iter().enumerate().take(level) {
            tx.add(next_addr(p, l), 8);
            tx.write(next_addr(p, l), n);
        }
        true
    }

    fn remove(&self, tx: &mut Tx, robj: u64, key: u64) -> bool {
        let head = tx.read(robj);
        let mut u = [0; LEVELS];
        let c = self.find(tx, head, key, &mut u);
        if c == 0 || tx.read(c + KEY) != key {
            return false;
        }
        for (l, &p) in u.iter().enumerate() {
            if tx.read(next_addr(p, l)) == c {
                let nx = tx.read(next_addr(c, l));
                tx.add(next_addr(p, l), 8);
                tx.write(next_addr(p, l), nx);
            }
        }
        tx.free(c);
        true
    }

    fn collect(
        &self,
        tx: &mut Tx,
        robj: u64,
        reach: &mut Vec<u64>,
    ) -> Result<BTreeMap<u64, u64>, String> {
        let head = tx.read(robj);
        reach.push(robj);
        reach.push(head);
        let mut out = BTreeMap::new();
        let mut limit = StepLimit::new(1 << 26, "skiplist");
        let mut below: HashSet<u64> = HashSet::new();
        // Highest level each node is linked on, and its key: a node must be linked on exactly
        // the levels its key draws (a torn insert or remove would leave it short).
        let mut top: BTreeMap<u64, (usize, u64)> = BTreeMap::new();
        for l in 0..LEVELS {
            let mut here = HashSet::new();
            let mut prev: Option<u64> = None;
            let mut x = tx.read(next_addr(head, l));
            while x != 0 {
                limit.step()?;
                let k = tx.read(x + KEY);
                if prev.is_some_and(|p| p >= k) {
                    return Err(format!("skiplist level {l}: keys not increasing at {x:#x}"));
                }
                if l > 0 && !below.contains(&x) {
                    return Err(format!("skiplist level {l}: node {x:#x} missing below"));
                }
                if l == 0 {
                    reach.push(x);
                    out.insert(k, tx.read(x + VAL));
                }
                here.insert(x);
                top.insert(x, (l, k));
                prev = Some(k);
                x = tx.read(next_addr(x, l));
            }
            below = here;
        }
        for (&x, &(l, k)) in &top {
            if l + 1 != level_of(k) {
                return Err(format!(
                    "skiplist: node {x:#x} (key {k:#x}) is linked on {} levels, its key draws {}",
                    l + 1,
                    level_of(k)
                ));
            }
        }
        Ok(out)
    }
}
