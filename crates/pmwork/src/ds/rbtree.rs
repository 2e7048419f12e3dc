//! Red-black tree map (PMDK `rbtree_map`; CLRS algorithms with a persistent sentinel).
//!
//! Node: `[color, key, val, parent, left, right]` (48 bytes). Root object: `[root, nil]`,
//! where `nil` is the shared black sentinel (its parent field is scratch, as in CLRS). Each
//! node is snapshotted whole before its first change in a transaction.

use std::collections::BTreeMap;

use super::{MapDs, StepLimit};
use crate::models::Tx;

const COLOR: u64 = 0;
const KEY: u64 = 8;
const VAL: u64 = 16;
const PARENT: u64 = 24;
const LEFT: u64 = 32;
const RIGHT: u64 = 40;
/// Bytes of one node.
pub const NODE_BYTES: u64 = 48;
const BLACK: u64 = 0;
const RED: u64 = 1;

/// The red-black tree map.
#[derive(Clone, Copy, Debug, Default)]
pub struct RbTree;

struct Ctx {
    robj: u64,
    nil: u64,
}

#[inline]
fn get(tx: &mut Tx, x: u64, f: u64) -> u64 {
    tx.read(x + f)
}

#[inline]
fn set(tx: &mut Tx, x: u64, f: u64, v: u64) {
    tx.add(x, NODE_BYTES);
    tx.write(x + f, v);
}

impl Ctx {
    fn root(&self, tx: &mut Tx) -> u64 {
        tx.read(self.robj)
    }

    fn set_root(&self, tx: &mut Tx, v: u64) {
        tx.add(self.robj, 8);
        tx.write(self.robj, v);
    }

    fn rotate(&self, tx: &mut Tx, x: u64, left: bool) {
        let (a, b) = if left { (RIGHT, LEFT) } else { (LEFT, RIGHT) };
        let y = get(tx, x, a);
        let yb = get(tx, y, b);
        set(tx, x, a, yb);
        if yb != self.nil {
            set(tx, yb, PARENT, x);
        }
        let xp = get(tx, x, PARENT);
        set(tx, y, PARENT, xp);
        if xp == self.nil {
            self.set_root(tx, y);
        } else if x == get(tx, xp, LEFT) {
            set(tx, xp, LEFT, y);
        } else {
            set(tx, xp, RIGHT, y);
        }
        set(tx, y, b, x);
        set(tx, x, PARENT, y);
    }

    fn insert_fixup(&self, tx: &mut Tx, mut z: u64) {
        loop {
            let p = get(tx, z, PARENT);
            if get(tx, p, COLOR) != RED {
                break;
            }
            let g = get(tx, p, PARENT);
            let p_is_left = p == get(tx, g, LEFT);
            let (near, far) = if p_is_left {
                (LEFT, RIGHT)
            } else {
                (RIGHT, LEFT)
            };
            let y = get(tx, g, far);
            if get(tx, y, COLOR) == RED {
                set(tx, p, COLOR, BLACK);
                set(tx, y, COLOR, BLACK);
                set(tx, g, COLOR, RED);
                z = g;
                continue;
            }
            let mut p = p;
            if z == get(tx, p, far) {
                z = p;
                self.rotate(tx, z, near == LEFT);
                p = get(tx, z, PARENT);
            }
            set(tx, p, COLOR, BLACK);
            set(tx, g, COLOR, RED);
            self.rotate(tx, g, near != LEFT);
        }
        let r = self.root(tx);
        if get(tx, r, COLOR) != BLACK {
            set(tx, r, COLOR, BLACK);
        }
    }

    fn transplant(&self, tx: &mut Tx, u: u64, v: u64) {
        let up = get(tx, u, PARENT);
        if up == self.nil {
            self.set_root(tx, v);
        } else if u == get(tx, up, LEFT) {
            set(tx, up, LEFT, v);
        } else {
            set(tx, up, RIGHT, v);
        }
        set(tx, v, PARENT, up);
    }

    fn minimum(&self, tx: &mut Tx, mut x: u64) -> u64 {
        loop {
            let l = get(tx, x, LEFT);
            if l == self.nil {
                return x;
            }
            x = l;
        }
    }

    fn delete_fixup(&self, tx: &mut Tx, mut x: u64) {
        while x != self.root(tx) && get(tx, x, COLOR) == BLACK {
            let xp = get(tx, x, PARENT);
            let x_is_left = x == get(tx, xp, LEFT);
            let (near, far) = if x_is_left {
                (LEFT, RIGHT)
            } else {
                (RIGHT, LEFT)
            };
            let mut w = get(tx, xp, far);
            if get(tx, w, COLOR) == RED {
                set(tx, w, COLOR, BLACK);
                set(tx, xp, COLOR, RED);
                self.rotate(tx, xp, x_is_left);
                w = get(tx, xp, far);
            }
            let wn = get(tx, w, near);
            let wf = get(tx, w, far);
            if get(tx, wn, COLOR) == BLACK && get(tx, wf, COLOR) == BLACK {
                set(tx, w, COLOR, RED);
                x = xp;
                continue;
            }
            if get(tx, wf, COLOR) == BLACK {
                set(tx, wn, COLOR, BLACK);
                set(tx, w, COLOR, RED);
                self.rotate(tx, w, !x_is_left);
                w = get(tx, xp, far);
            }
            let pc = get(tx, xp, COLOR);
            set(tx, w, COLOR, pc);
            set(tx, xp, COLOR, BLACK);
            let wf = get(tx, w, far);
            set(tx, wf, COLOR, BLACK);
            self.rotate(tx, xp, x_is_left);
            x = self.root(tx);
        }
        if get(tx, x, COLOR) != BLACK {
            set(tx, x, COLOR, BLACK);
        }
    }

    fn find(&self, tx: &mut Tx, key: u64) -> u64 {
        let mut x = self.root(tx);
        while x != self.nil {
            let k = get(tx, x, KEY);
            tx.compute(3);
            if k == key {
                return x;
            }
            x = get(tx, x, if key < k { LEFT } else { RIGHT });
        }
        self.nil
    }

    #[allow(clippy::too_many_arguments)]
    fn walk(
        &self,
        tx: &mut Tx,
        x: u64,
        parent: u64,
        bounds: (Option<u64>, Option<u64>),
        out: &mut BTreeMap<u64, u64>,
        reach: &mut Vec<u64>,
        limit: &mut StepLimit,
    ) -> Result<u64, String> {
        if x == self.nil {
            return Ok(1);
        }
        limit.step()?;
        reach.push(x);
        let color = get(tx, x, COLOR);
        let key = get(tx, x, KEY);
        if color > RED {
            return Err(format!("rbtree node {x:#x}: color {color}"));
        }
        if get(tx, x, PARENT) != parent {
            return Err(format!("rbtree node {x:#x}: wrong parent pointer"));
        }
        if bounds.0.is_some_and(|lo| key <= lo) || bounds.1.is_some_and(|hi| key >= hi) {
            return Err(format!("rbtree node {x:#x}: key {key:#x} out of order"));
        }
        let (l, r) = (get(tx, x, LEFT), get(tx, x, RIGHT));
        if color == RED && (get(tx, l, COLOR) == RED || get(tx, r, COLOR) == RED) {
            return Err(format!("rbtree node {x:#x}: red node with a red child"));
        }
        out.insert(key, get(tx, x, VAL));
        let bl = self.walk(tx, l, x, (bounds.0, Some(key)), out, reach, limit)?;
        let br = self.walk(tx, r, x, (Some(key), bounds.1), out, reach, limit)?;
        if bl != br {
            return Err(format!(
                "rbtree node {x:#x}: black heights {bl} and {br} differ"
            ));
        }
        Ok(bl + u64::from(color == BLACK))
    }
}

impl RbTree {
    fn ctx(tx: &mut Tx, robj: u64) -> Ctx {
        Ctx {
            robj,
            nil: tx.read(robj + 8),
        }
    }
}

impl MapDs for RbTree {
    fn create(&self, tx: &mut Tx) -> u64 {
        let robj = tx.alloc(16);
        let nil = tx.alloc(NODE_BYTES);
        for (f, v) in [
            (COLOR, BLACK),
            (KEY, 0),
            (VAL, 0),
            (PARENT, nil),
            (LEFT, nil),
            (RIGHT, nil),
        ] {
            tx.write(nil + f, v);
        }
        tx.write(robj, nil);
        tx.write(robj + 8, nil);
        robj
    }

    fn get(&self, tx: &mut Tx, robj: u64, key: u64) -> Option<u64> {
        let c = Self::ctx(tx, robj);
        let x = c.find(tx, key);
        (x != c.nil).then(|| get(tx, x, VAL))
    }

    fn insert(&self, tx: &mut Tx, robj: u64, key: u64, val: u64) -> bool {
        let c = Self::ctx(tx, robj);
        let mut y = c.nil;
        let mut x = c.root(tx);
        while x != c.nil {
            y = x;
            let k = get(tx, x, KEY);
            tx.compute(3);
            if k == key {
                set(tx, x, VAL, val);
                return false;
            }
            x = get(tx, x, if key < k { LEFT } else { RIGHT });
        }
        let z = tx.alloc(NODE_BYTES);
        for (f, v) in [
            (COLOR, RED),
            (KEY, key),
            (VAL, val),
            (PARENT, y),
            (LEFT, c.nil),
            (RIGHT, c.nil),
        ] {
            tx.write(z + f, v);
        }
        if y == c.nil {
            c.set_root(tx, z);
        } else if key < get(tx, y, KEY) {
            set(tx, y, LEFT, z);
        } else {
            set(tx, y, RIGHT, z);
        }
        c.insert_fixup(tx, z);
        true
    }

    fn remove(&self, tx: &mut Tx, robj: u64, key: u64) -> bool {
        let c = Self::ctx(tx, robj);
        let z = c.find(tx, key);
        if z == c.nil {
            return false;
        }
        let mut y_color = get(tx, z, COLOR);
        let (zl, zr) = (get(tx, z, LEFT), get(tx, z, RIGHT));
        let x;
        if zl == c.nil {
            x = zr;
            c.transplant(tx, z, zr);
        } else if zr == c.nil {
            x = zl;
            c.transplant(tx, z, zl);
        } else {
            let y = c.minimum(tx, zr);
            y_color = get(tx, y, COLOR);
            x = get(tx, y, RIGHT);
            if get(tx, y, PARENT) == z {
                set(tx, x, PARENT, y);
            } else {
                c.transplant(tx, y, x);
                set(tx, y, RIGHT, zr);
                set(tx, zr, PARENT, y);
            }
            c.transplant(tx, z, y);
            set(tx, y, LEFT, zl);
            set(tx, zl, PARENT, y);
            let zc = get(tx, z, COLOR);
            set(tx, y, COLOR, zc);
        }
        if y_color == BLACK {
            c.delete_fixup(tx, x);
        }
        tx.free(z);
        true
    }

    fn collect(
        &self,
        tx: &mut Tx,
        robj: u64,
        reach: &mut Vec<u64>,
    ) -> Result<BTreeMap<u64, u64>, String> {
        let c = Self::ctx(tx, robj);
        reach.push(robj);
        reach.push(c.nil);
        if get(tx, c.nil, COLOR) != BLACK {
            return Err("rbtree sentinel is not black".into());
        }
        let r = c.root(tx);
        let mut out = BTreeMap::new();
        if r != c.nil && get(tx, r, COLOR) != BLACK {
            return Err("rbtree root is not black".into());
        }
        let mut limit = StepLimit::new(1 << 26, "rbtree");
        c.walk(tx, r, c.nil, (None, None), &mut out, reach, &mut limit)?;
        Ok(out)
    }
}
