//! B+ tree map (after STX B+ tree, which PPO's B-tree benchmark uses): items only in leaves,
//! leaves chained left to right, inner nodes hold separators.
//!
//! Leaf `[kind=1, n, next, keys[13], vals[13]]`, inner `[kind=0, n, -, keys[13],
//! children[14]]` (240 bytes each). A key `k` lives under child `i` of an inner node when
//! `keys[i-1] <= k < keys[i]`. Inserts split full nodes bottom-up along the search path.
//!
//! Shortcut: deletion is lazy — the item is removed from its leaf, but under-full leaves
//! are neither merged nor rebalanced (a leaf may even become empty and stay linked). The
//! occupancy invariant is therefore relaxed; ordering, uniform depth, separator bounds and
//! the leaf chain are still checked.

use std::collections::BTreeMap;

use super::{MapDs, StepLimit};
use crate::models::Tx;

/// Most keys in a leaf or inner node.
pub const MAXK: usize = 13;
const KIND: u64 = 0;
const N: u64 = 8;
const NEXT: u64 = 16;
const KEYS: u64 = 24;
const VALS: u64 = KEYS + 8 * MAXK as u64;
/// Bytes of one node.
pub const NODE_BYTES: u64 = VALS + 8 * (MAXK as u64 + 1);

#[derive(Clone, Copy, Debug, PartialEq)]
struct Node {
    leaf: bool,
    n: usize,
    next: u64,
    k: [u64; MAXK],
    /// Values (leaf) or children (inner, `n + 1` of them).
    v: [u64; MAXK + 1],
}

impl Node {
    fn empty(leaf: bool) -> Node {
        Node {
            leaf,
            n: 0,
            next: 0,
            k: [0; MAXK],
            v: [0; MAXK + 1],
        }
    }

    fn nv(&self) -> usize {
        if self.leaf {
            self.n
        } else {
            self.n + 1
        }
    }
}

fn load_checked(tx: &mut Tx, a: u64) -> Result<Node, String> {
    let kind = tx.read(a + KIND);
    let n = tx.read(a + N) as usize;
    if kind > 1 || n > MAXK {
        return Err(format!("b+tree node {a:#x}: kind {kind} n {n}"));
    }
    let mut x = Node::empty(kind == 1);
    x.n = n;
    if x.leaf {
        x.next = tx.read(a + NEXT);
    }
    for i in 0..n {
        x.k[i] = tx.read(a + KEYS + 8 * i as u64);
    }
    for i in 0..x.nv() {
        x.v[i] = tx.read(a + VALS + 8 * i as u64);
    }
    Ok(x)
}

fn load(tx: &mut Tx, a: u64) -> Node {
    load_checked(tx, a).expect("b+tree: corrupt node during an operation")
}

fn store(tx: &mut Tx, a: u64, new: &Node, old: Option<&Node>) {
    if old.is_some() {
        tx.add(a, NODE_BYTES);
    }
    if old.is_none_or(|o| o.leaf != new.leaf) {
        tx.write(a + KIND, u64::from(new.leaf));
    }
    if old.is_none_or(|o| o.n != new.n) {
        tx.write(a + N, new.n as u64);
    }
    if new.leaf && old.is_none_or(|o| o.next != new.next) {
        tx.write(a + NEXT, new.next);
    }
    for i in 0..new.n {
        if old.is_none_or(|o| i >= o.n || o.k[i] != new.k[i]) {
            tx.write(a + KEYS + 8 * i as u64, new.k[i]);
        }
    }
    for i in 0..new.nv() {
        if old.is_none_or(|o| i >= o.nv() || o.v[i] != new.v[i]) {
            tx.write(a + VALS + 8 * i as u64, new.v[i]);
        }
    }
}

/// The B+ tree map.
#[derive(Clone, Copy, Debug, Default)]
pub struct BPlusTree;

impl BPlusTree {
    /// The leaf covering `key` and the inner nodes above it (with the child index taken).
    fn descend(&self, tx: &mut Tx, root: u64, key: u64) -> (u64, Vec<(u64, usize)>) {
        let mut path = Vec::new();
        let mut x = root;
        loop {
            let kind = tx.read(x + KIND);
            if kind == 1 {
                return (x, path);
            }
            let n = tx.read(x + N) as usize;
            let mut i = 0;
            while i < n {
                let s = tx.read(x + KEYS + 8 * i as u64);
                tx.compute(3);
                if s > key {
                    break;
                }
                i += 1;
            }
            path.push((x, i));
            x = tx.read(x + VALS + 8 * i as u64);
        }
    }

    fn leaf_find(&self, tx: &mut Tx, leaf: u64, key: u64) -> Option<usize> {
        let n = tx.read(leaf + N) as usize;
        (0..n).find(|&i| {
            tx.compute(2);
            tx.read(leaf + KEYS + 8 * i as u64) == key
        })
    }

    /// Inserts separator `sep` with right child `right` into the inner nodes of `path`,
    /// splitting upwards; a new root goes to `robj`.
    fn insert_up(
        &self,
        tx: &mut Tx,
        robj: u64,
        mut path: Vec<(u64, usize)>,
        mut left: u64,
        mut sep: u64,
        mut right: u64,
    ) {
        while let Some((x, i)) = path.pop() {
            let x0 = load(tx, x);
            let mut keys: Vec<u64> = x0.k[..x0.n].to_vec();
            let mut ch: Vec<u64> = x0.v[..=x0.n].to_vec();
            debug_assert_eq!(ch[i], left);
            keys.insert(i, sep);
            ch.insert(i + 1, right);
            if keys.len() <= MAXK {
                let mut xn = x0;
                xn.n = keys.len();
                xn.k[..keys.len()].copy_from_slice(&keys);
                xn.v[..ch.len()].copy_from_slice(&ch);
                store(tx, x, &xn, Some(&x0));
                return;
            }
            // Split: left keeps `mid` keys, keys[mid] moves up, the rest go right.
            let mid = keys.len() / 2;
            let mut ln = x0;
            ln.n = mid;
            ln.k[..mid].copy_from_slice(&keys[..mid]);
            ln.v[..=mid].copy_from_slice(&ch[..=mid]);
            let mut rn = Node::empty(false);
            rn.n = keys.len() - mid - 1;
            rn.k[..rn.n].copy_from_slice(&keys[mid + 1..]);
            rn.v[..=rn.n].copy_from_slice(&ch[mid + 1..]);
            let r = tx.alloc(NODE_BYTES);
            store(tx, r, &rn, None);
            store(tx, x, &ln, Some(&x0));
            left = x;
            sep = keys[mid];
            right = r;
        }
        let nr = tx.alloc(NODE_BYTES);
        let mut rn = Node::empty(false);
        rn.n = 1;
        rn.k[0] = sep;
        rn.v[0] = left;
        rn.v[1] = right;
        store(tx, nr, &rn, None);
        tx.add(robj, 8);
        tx.write(robj, nr);
    }

    #[allow(clippy::too_many_arguments)]
    fn walk(
        &self,
        tx: &mut Tx,
        x: u64,
        depth: usize,
        bounds: (Option<u64>, Option<u64>),
        leaves: &mut Vec<u64>,
        leaf_depth: &mut Option<usize>,
        out: &mut BTreeMap<u64, u64>,
        reach: &mut Vec<u64>,
        limit: &mut StepLimit,
    ) -> Result<(), String> {
        limit.step()?;
        if depth > 64 {
            return Err("b+tree deeper than 64 levels".into());
        }
        reach.push(x);
        let xn = load_checked(tx, x)?;
        for i in 0..xn.n {
            let k = xn.k[i];
            if bounds.0.is_some_and(|lo| k < lo) || bounds.1.is_some_and(|hi| k >= hi) {
                return Err(format!("b+tree node {x:#x}: key {k:#x} outside its range"));
            }
            if i > 0 && xn.k[i - 1] >= k {
                return Err(format!("b+tree node {x:#x}: keys not increasing"));
            }
        }
        if xn.leaf {
            match leaf_depth {
                Some(d) if *d != depth => {
                    return Err(format!("b+tree leaves at depths {d} and {depth}"))
                }
                _ => *leaf_depth = Some(depth),
            }
            leaves.push(x);
            for i in 0..xn.n {
                out.insert(xn.k[i], xn.v[i]);
            }
            return Ok(());
        }
        if xn.n == 0 {
            return Err(format!("b+tree inner node {x:#x} without separators"));
        }
        for i in 0..=xn.n {
            let lo = if i == 0 { bounds.0 } else { Some(xn.k[i - 1]) };
            let hi = if i == xn.n { bounds.1 } else { Some(xn.k[i]) };
            self.walk(
                tx,
                xn.v[i],
                depth + 1,
                (lo, hi),
                leaves,
                leaf_depth,
                out,
                reach,
                limit,
            )?;
        }
        Ok(())
    }
}

impl MapDs for BPlusTree {
    fn create(&self, tx: &mut Tx) -> u64 {
        let robj = tx.alloc(8);
        let leaf = tx.alloc(NODE_BYTES);
        store(tx, leaf, &Node::empty(true), None);
        tx.write(robj, leaf);
        robj
    }

    fn get(&self, tx: &mut Tx, robj: u64, key: u64) -> Option<u64> {
        let root = tx.read(robj);
        let (leaf, _) = self.descend(tx, root, key);
        self.leaf_find(tx, leaf, key)
            .map(|i| tx.read(leaf + VALS + 8 * i as u64))
    }

    fn insert(&self, tx: &mut Tx, robj: u64, key: u64, val: u64) -> bool {
        let root = tx.read(robj);
        let (leaf, path) = self.descend(tx, root, key);
        if let Some(i) = self.leaf_find(tx, leaf, key) {
            let a = leaf + VALS + 8 * i as u64;
            tx.add(a, 8);
            tx.write(a, val);
            return false;
        }
        let l0 = load(tx, leaf);
        let pos = l0.k[..l0.n].iter().take_while(|&&k| k < key).count();
        let mut keys: Vec<u64> = l0.k[..l0.n].to_vec();
        let mut vals: Vec<u64> = l0.v[..l0.n].to_vec();
        keys.insert(pos, key);
        vals.insert(pos, val);
        if keys.len() <= MAXK {
            let mut ln = l0;
            ln.n = keys.len();
            ln.k[..ln.n].copy_from_slice(&keys);
            ln.v[..ln.n].copy_from_slice(&vals);
            store(tx, leaf, &ln, Some(&l0));
            return true;
        }
        let mid = keys.len() / 2;
        let r = tx.alloc(NODE_BYTES);
        let mut rn = Node::empty(true);
        rn.n = keys.len() - mid;
        rn.k[..rn.n].copy_from_slice(&keys[mid..]);
        rn.v[..rn.n].copy_from_slice(&vals[mid..]);
        rn.next = l0.next;
        let mut ln = l0;
        ln.n = mid;
        ln.k[..mid].copy_from_slice(&keys[..mid]);
        ln.v[..mid].copy_from_slice(&vals[..mid]);
        ln.next = r;
        store(tx, r, &rn, None);
        store(tx, leaf, &ln, Some(&l0));
        self.insert_up(tx, robj, path, leaf, rn.k[0], r);
        true
    }

    fn remove(&self, tx: &mut Tx, robj: u64, key: u64) -> bool {
        let root = tx.read(robj);
        let (leaf, _) = self.descend(tx, root, key);
        if self.leaf_find(tx, leaf, key).is_none() {
            return false;
        }
        let l0 = load(tx, leaf);
        let mut ln = l0;
        let i = l0.k[..l0.n].iter().position(|&k| k == key).expect("found");
        for j in i..l0.n - 1 {
            ln.k[j] = ln.k[j + 1];
            ln.v[j] = ln.v[j + 1];
        }
        ln.n -= 1;
        store(tx, leaf, &ln, Some(&l0));
        true
    }

    fn collect(
        &self,
        tx: &mut Tx,
        robj: u64,
        reach: &mut Vec<u64>,
    ) -> Result<BTreeMap<u64, u64>, String> {
        reach.push(robj);
        let root = tx.read(robj);
        let mut out = BTreeMap::new();
        let mut leaves = Vec::new();
        let mut leaf_depth = None;
        let mut limit = StepLimit::new(1 << 26, "b+tree");
        self.walk(
            tx,
            root,
            0,
            (None, None),
            &mut leaves,
            &mut leaf_depth,
            &mut out,
            reach,
            &mut limit,
        )?;
        // The leaf chain visits exactly the leaves, in order.
        let mut x = leaves[0];
        for (i, &l) in leaves.iter().enumerate() {
            if x != l {
                return Err(format!(
                    "b+tree leaf chain: leaf {i} is {x:#x}, expected {l:#x}"
                ));
            }
            x = tx.read(l + NEXT);
        }
        if x != 0 {
            return Err("b+tree leaf chain does not end at the last leaf".into());
        }
        Ok(out)
    }
}
