//! B-tree map (PMDK `btree_map`): order 8 (at most 7 items and 8 children per node),
//! items held in every node, proactive split on insert and CLRS deletion (borrow from a
//! sibling or merge before descending, so a node is never left under-full).
//!
//! Node: `[n, leaf, keys[7], vals[7], children[8]]` (192 bytes). Root object: `[root]`.
//! Every modified node is snapshotted whole (`tx.add(node, 192)`), as PMDK does.

use std::collections::BTreeMap;

use super::{MapDs, StepLimit};
use crate::models::Tx;

const T: usize = 4;
const MAXK: usize = 2 * T - 1;
const N: u64 = 0;
const LEAF: u64 = 8;
const KEYS: u64 = 16;
const VALS: u64 = KEYS + 8 * MAXK as u64;
const CH: u64 = VALS + 8 * MAXK as u64;
/// Bytes of one node.
pub const NODE_BYTES: u64 = CH + 8 * (MAXK as u64 + 1);

#[derive(Clone, Copy, Debug, PartialEq)]
struct Node {
    n: usize,
    leaf: bool,
    k: [u64; MAXK],
    v: [u64; MAXK],
    c: [u64; MAXK + 1],
}

impl Node {
    fn empty(leaf: bool) -> Node {
        Node {
            n: 0,
            leaf,
            k: [0; MAXK],
            v: [0; MAXK],
            c: [0; MAXK + 1],
        }
    }
}

fn load_checked(tx: &mut Tx, a: u64) -> Result<Node, String> {
    let n = tx.read(a + N);
    let leaf = tx.read(a + LEAF);
    if n as usize > MAXK || leaf > 1 {
        return Err(format!("btree node {a:#x}: n={n} leaf={leaf}"));
    }
    let mut x = Node::empty(leaf == 1);
    x.n = n as usize;
    for i in 0..x.n {
        x.k[i] = tx.read(a + KEYS + 8 * i as u64);
    }
    for i in 0..x.n {
        x.v[i] = tx.read(a + VALS + 8 * i as u64);
    }
    if !x.leaf {
        for i in 0..=x.n {
            x.c[i] = tx.read(a + CH + 8 * i as u64);
        }
    }
    Ok(x)
}

fn load(tx: &mut Tx, a: u64) -> Node {
    load_checked(tx, a).expect("btree: corrupt node during an operation")
}

/// Writes the words of `new` that differ from `old` (all valid words for a fresh node).
fn store(tx: &mut Tx, a: u64, new: &Node, old: Option<&Node>) {
    if old.is_some() {
        tx.add(a, NODE_BYTES);
    }
    if old.is_none_or(|o| o.n != new.n) {
        tx.write(a + N, new.n as u64);
    }
    if old.is_none_or(|o| o.leaf != new.leaf) {
        tx.write(a + LEAF, u64::from(new.leaf));
    }
    for i in 0..new.n {
        let fresh = old.is_none_or(|o| i >= o.n);
        if fresh || old.is_some_and(|o| o.k[i] != new.k[i]) {
            tx.write(a + KEYS + 8 * i as u64, new.k[i]);
        }
    }
    for i in 0..new.n {
        let fresh = old.is_none_or(|o| i >= o.n);
        if fresh || old.is_some_and(|o| o.v[i] != new.v[i]) {
            tx.write(a + VALS + 8 * i as u64, new.v[i]);
        }
    }
    if !new.leaf {
        for i in 0..=new.n {
            let fresh = old.is_none_or(|o| o.leaf || i > o.n);
            if fresh || old.is_some_and(|o| o.c[i] != new.c[i]) {
                tx.write(a + CH + 8 * i as u64, new.c[i]);
            }
        }
    }
}

/// The B-tree map.
#[derive(Clone, Copy, Debug, Default)]
pub struct BTree;

impl BTree {
    fn search(&self, tx: &mut Tx, root: u64, key: u64) -> Option<(u64, usize)> {
        let mut x = tx.read(root);
        while x != 0 {
            let n = tx.read(x + N) as usize;
            let leaf = tx.read(x + LEAF) == 1;
            let mut i = 0;
            let mut k = 0;
            while i < n {
                k = tx.read(x + KEYS + 8 * i as u64);
                tx.compute(3);
                if k >= key {
                    break;
                }
                i += 1;
            }
            if i < n && k == key {
                return Some((x, i));
            }
            if leaf {
                return None;
            }
            x = tx.read(x + CH + 8 * i as u64);
        }
        None
    }

    /// Splits the full child `i` of `x` (whose current contents are `xn`, updated in place).
    fn split_child(&self, tx: &mut Tx, x: u64, xn: &mut Node, i: usize) {
        let y = xn.c[i];
        let y0 = load(tx, y);
        let mut yn = y0;
        let z = tx.alloc(NODE_BYTES);
        let mut zn = Node::empty(yn.leaf);
        zn.n = T - 1;
        for j in 0..T - 1 {
            zn.k[j] = yn.k[j + T];
            zn.v[j] = yn.v[j + T];
        }
        if !yn.leaf {
            for j in 0..T {
                zn.c[j] = yn.c[j + T];
            }
        }
        let (mk, mv) = (yn.k[T - 1], yn.v[T - 1]);
        yn.n = T - 1;
        let x0 = *xn;
        for j in (i + 1..=xn.n).rev() {
            xn.c[j + 1] = xn.c[j];
        }
        xn.c[i + 1] = z;
        for j in (i..xn.n).rev() {
            xn.k[j + 1] = xn.k[j];
            xn.v[j + 1] = xn.v[j];
        }
        xn.k[i] = mk;
        xn.v[i] = mv;
        xn.n += 1;
        store(tx, z, &zn, None);
        store(tx, y, &yn, Some(&y0));
        store(tx, x, xn, Some(&x0));
    }

    fn insert_nonfull(&self, tx: &mut Tx, mut x: u64, key: u64, val: u64) {
        loop {
            let x0 = load(tx, x);
            let mut xn = x0;
            let mut i = xn.n;
            while i > 0 && key < xn.k[i - 1] {
                i -= 1;
                tx.compute(3);
            }
            if xn.leaf {
                for j in (i..xn.n).rev() {
                    xn.k[j + 1] = xn.k[j];
                    xn.v[j + 1] = xn.v[j];
                }
                xn.k[i] = key;
                xn.v[i] = val;
                xn.n += 1;
                store(tx, x, &xn, Some(&x0));
                return;
            }
            let child_n = tx.read(xn.c[i] + N) as usize;
            if child_n == MAXK {
                self.split_child(tx, x, &mut xn, i);
                if key > xn.k[i] {
                    i += 1;
                }
            }
            x = xn.c[i];
        }
    }

    /// Largest item of the subtree at `x`.
    fn max_of(&self, tx: &mut Tx, mut x: u64) -> (u64, u64) {
        loop {
            let n = tx.read(x + N);
            if tx.read(x + LEAF) == 1 {
                let i = n - 1;
                return (tx.read(x + KEYS + 8 * i), tx.read(x + VALS + 8 * i));
            }
            x = tx.read(x + CH + 8 * n);
        }
    }

    /// Smallest item of the subtree at `x`.
    fn min_of(&self, tx: &mut Tx, mut x: u64) -> (u64, u64) {
        loop {
            if tx.read(x + LEAF) == 1 {
                return (tx.read(x + KEYS), tx.read(x + VALS));
            }
            x = tx.read(x + CH);
        }
    }

    /// Merges child `i + 1` of `x` and the separating item into child `i`; frees the former.
    fn merge(&self, tx: &mut Tx, x: u64, xn: &mut Node, i: usize) {
        let (y, z) = (xn.c[i], xn.c[i + 1]);
        let y0 = load(tx, y);
        let zn = load(tx, z);
        let mut yn = y0;
        yn.k[yn.n] = xn.k[i];
        yn.v[yn.n] = xn.v[i];
        for j in 0..zn.n {
            yn.k[yn.n + 1 + j] = zn.k[j];
            yn.v[yn.n + 1 + j] = zn.v[j];
        }
        if !yn.leaf {
            for j in 0..=zn.n {
                yn.c[yn.n + 1 + j] = zn.c[j];
            }
        }
        yn.n += 1 + zn.n;
        let x0 = *xn;
        for j in i..xn.n - 1 {
            xn.k[j] = xn.k[j + 1];
            xn.v[j] = xn.v[j + 1];
        }
        for j in i + 1..xn.n {
            xn.c[j] = xn.c[j + 1];
        }
        xn.n -= 1;
        store(tx, y, &yn, Some(&y0));
        store(tx, x, xn, Some(&x0));
        tx.free(z);
    }

    /// Deletes `key` from the subtree at `x`, which holds at least `T` items (or is the root).
    fn delete_from(&self, tx: &mut Tx, mut x: u64, mut key: u64) {
        loop {
            let x0 = load(tx, x);
            let mut xn = x0;
            let mut i = 0;
            while i < xn.n && xn.k[i] < key {
                i += 1;
                tx.compute(3);
            }
            if i < xn.n && xn.k[i] == key {
                if xn.leaf {
                    for j in i..xn.n - 1 {
                        xn.k[j] = xn.k[j + 1];
                        xn.v[j] = xn.v[j + 1];
                    }
                    xn.n -= 1;
                    store(tx, x, &xn, Some(&x0));
                    return;
                }
                let (y, z) = (xn.c[i], xn.c[i + 1]);
                if tx.read(y + N) as usize >= T {
                    let (pk, pv) = self.max_of(tx, y);
                    xn.k[i] = pk;
                    xn.v[i] = pv;
                    store(tx, x, &xn, Some(&x0));
                    x = y;
                    key = pk;
                } else if tx.read(z + N) as usize >= T {
                    let (sk, sv) = self.min_of(tx, z);
                    xn.k[i] = sk;
                    xn.v[i] = sv;
                    store(tx, x, &xn, Some(&x0));
                    x = z;
                    key = sk;
                } else {
                    self.merge(tx, x, &mut xn, i);
                    x = y;
                }
                continue;
            }
            if xn.leaf {
                return;
            }
            let c = xn.c[i];
            let c0 = load(tx, c);
            if c0.n >= T {
                x = c;
                continue;
            }
            if i > 0 {
                let l = xn.c[i - 1];
                let l0 = load(tx, l);
                if l0.n >= T {
                    // Borrow the left sibling's last item through the parent.
                    let (mut cn, mut ln) = (c0, l0);
                    for j in (0..cn.n).rev() {
                        cn.k[j + 1] = cn.k[j];
                        cn.v[j + 1] = cn.v[j];
                    }
                    if !cn.leaf {
                        for j in (0..=cn.n).rev() {
                            cn.c[j + 1] = cn.c[j];
                        }
                        cn.c[0] = ln.c[ln.n];
                    }
                    cn.k[0] = xn.k[i - 1];
                    cn.v[0] = xn.v[i - 1];
                    cn.n += 1;
                    xn.k[i - 1] = ln.k[ln.n - 1];
                    xn.v[i - 1] = ln.v[ln.n - 1];
                    ln.n -= 1;
                    store(tx, c, &cn, Some(&c0));
                    store(tx, x, &xn, Some(&x0));
                    store(tx, l, &ln, Some(&l0));
                    x = c;
                    continue;
                }
            }
            if i < xn.n {
                let r = xn.c[i + 1];
                let r0 = load(tx, r);
                if r0.n >= T {
                    // Borrow the right sibling's first item through the parent.
                    let (mut cn, mut rn) = (c0, r0);
                    cn.k[cn.n] = xn.k[i];
                    cn.v[cn.n] = xn.v[i];
                    if !cn.leaf {
                        cn.c[cn.n + 1] = rn.c[0];
                        for j in 0..rn.n {
                            rn.c[j] = rn.c[j + 1];
                        }
                    }
                    cn.n += 1;
                    xn.k[i] = rn.k[0];
                    xn.v[i] = rn.v[0];
                    for j in 0..rn.n - 1 {
                        rn.k[j] = rn.k[j + 1];
                        rn.v[j] = rn.v[j + 1];
                    }
                    rn.n -= 1;
                    store(tx, c, &cn, Some(&c0));
                    store(tx, x, &xn, Some(&x0));
                    store(tx, r, &rn, Some(&r0));
                    x = c;
                    continue;
                }
                self.merge(tx, x, &mut xn, i);
                x = c;
            } else {
                self.merge(tx, x, &mut xn, i - 1);
                x = xn.c[i - 1];
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn walk(
        &self,
        tx: &mut Tx,
        x: u64,
        depth: usize,
        bounds: (Option<u64>, Option<u64>),
        is_root: bool,
        leaf_depth: &mut Option<usize>,
        out: &mut BTreeMap<u64, u64>,
        reach: &mut Vec<u64>,
        limit: &mut StepLimit,
    ) -> Result<(), String> {
        limit.step()?;
        if depth > 64 {
            return Err("btree deeper than 64 levels".into());
        }
        reach.push(x);
        let xn = load_checked(tx, x)?;
        if xn.n == 0 || (!is_root && xn.n < T - 1) {
            return Err(format!("btree node {x:#x} holds {} items", xn.n));
        }
        for i in 0..xn.n {
            let k = xn.k[i];
            if bounds.0.is_some_and(|lo| k <= lo) || bounds.1.is_some_and(|hi| k >= hi) {
                return Err(format!("btree node {x:#x}: key {k:#x} outside its range"));
            }
            if i > 0 && xn.k[i - 1] >= k {
                return Err(format!("btree node {x:#x}: keys not increasing"));
            }
            out.insert(k, xn.v[i]);
        }
        if xn.leaf {
            match leaf_depth {
                Some(d) if *d != depth => {
                    return Err(format!("btree leaves at depths {d} and {depth}"))
                }
                _ => *leaf_depth = Some(depth),
            }
            return Ok(());
        }
        for i in 0..=xn.n {
            if xn.c[i] == 0 {
                return Err(format!("btree node {x:#x}: null child {i}"));
            }
            let lo = if i == 0 { bounds.0 } else { Some(xn.k[i - 1]) };
            let hi = if i == xn.n { bounds.1 } else { Some(xn.k[i]) };
            self.walk(
                tx,
                xn.c[i],
                depth + 1,
                (lo, hi),
                false,
                leaf_depth,
                out,
                reach,
                limit,
            )?;
        }
        Ok(())
    }
}

impl MapDs for BTree {
    fn create(&self, tx: &mut Tx) -> u64 {
        let root = tx.alloc(8);
        tx.write(root, 0);
        root
    }

    fn get(&self, tx: &mut Tx, root: u64, key: u64) -> Option<u64> {
        self.search(tx, root, key)
            .map(|(x, i)| tx.read(x + VALS + 8 * i as u64))
    }

    fn insert(&self, tx: &mut Tx, root: u64, key: u64, val: u64) -> bool {
        if let Some((x, i)) = self.search(tx, root, key) {
            let a = x + VALS + 8 * i as u64;
            tx.add(a, 8);
            tx.write(a, val);
            return false;
        }
        let r = tx.read(root);
        if r == 0 {
            let x = tx.alloc(NODE_BYTES);
            let mut xn = Node::empty(true);
            xn.n = 1;
            xn.k[0] = key;
            xn.v[0] = val;
            store(tx, x, &xn, None);
            tx.add(root, 8);
            tx.write(root, x);
            return true;
        }
        if tx.read(r + N) as usize == MAXK {
            let s = tx.alloc(NODE_BYTES);
            let mut sn = Node::empty(false);
            sn.c[0] = r;
            store(tx, s, &sn, None);
            tx.add(root, 8);
            tx.write(root, s);
            self.split_child(tx, s, &mut sn, 0);
            self.insert_nonfull(tx, s, key, val);
        } else {
            self.insert_nonfull(tx, r, key, val);
        }
        true
    }

    fn remove(&self, tx: &mut Tx, root: u64, key: u64) -> bool {
        if self.search(tx, root, key).is_none() {
            return false;
        }
        let r = tx.read(root);
        self.delete_from(tx, r, key);
        if tx.read(r + N) == 0 {
            let next = if tx.read(r + LEAF) == 1 {
                0
            } else {
                tx.read(r + CH)
            };
            tx.add(root, 8);
            tx.write(root, next);
            tx.free(r);
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
        let mut out = BTreeMap::new();
        let r = tx.read(root);
        if r != 0 {
            let mut leaf_depth = None;
            let mut limit = StepLimit::new(1 << 26, "btree");
            self.walk(
                tx,
                r,
                0,
                (None, None),
                true,
                &mut leaf_depth,
                &mut out,
                reach,
                &mut limit,
            )?;
        }
        Ok(out)
    }
}
