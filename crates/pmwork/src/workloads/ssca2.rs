//! SSCA2-like graph kernel (PPO Table IV, after the HPCS SSCA #2 benchmark): kernel 1, the
//! transactional construction of a scale-free graph from R-MAT edge tuples.
//!
//! Each thread builds its own graph of 2^16 / threads vertices (SCALE 16 in all; R-MAT
//! probabilities a, b, c, d = 0.55, 0.10, 0.10, 0.25 and integer weights up to 2^SCALE, as
//! SSCA #2 v2.2 specifies). A static vertex table holds `[degree, capacity, edges]` per
//! vertex; adjacency arrays of `[target, weight]` grow by doubling (allocate, copy, free the
//! old one) inside the inserting transaction. With the default 8 edges per vertex the graph
//! occupies about 16 MB, PPO's footprint.

use std::collections::BTreeMap;

use crate::alloc::{check_heap, class_bytes, BLOCK_HEADER, NCLASS};
use crate::kernel::{Kernel, Params, Suite, WorkloadInfo};
use crate::layout::root_word;
use crate::models::{Model, Tx};
use crate::rng::Rng;

/// log2 of the vertices of all threads' graphs together.
pub const SCALE: u32 = 16;
const VERTEX_BYTES: u64 = 32;

/// Insert edge `u → v` with weight `w`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EdgeOp {
    /// Source vertex.
    pub u: u64,
    /// Target vertex.
    pub v: u64,
    /// Weight.
    pub w: u64,
}

/// The SSCA2 graph-construction workload.
pub struct Ssca2 {
    info: WorkloadInfo,
}

impl Ssca2 {
    /// PPO's SSCA2.
    pub fn new() -> Ssca2 {
        Ssca2 {
            info: WorkloadInfo {
                name: "ppo-ssca2",
                model: Model::Undo,
                suite: Suite::Ppo,
                default_ops: 8 << SCALE,
                default_threads: 8,
                size: "SCALE 16 (65536 vertices in all), 8 edges per vertex: ~16 MB",
                source: "PPO Table IV: SSCA2, 16 MB; SSCA #2 v2.2 R-MAT parameters",
                description: "transactional graph construction: append R-MAT edges to growing adjacency arrays",
            },
        }
    }

    /// log2 of one thread's vertex count.
    fn scale(p: &Params) -> u32 {
        let t = u32::from(p.threads).next_power_of_two().trailing_zeros();
        SCALE.saturating_sub(t).max(1)
    }
}

impl Default for Ssca2 {
    fn default() -> Self {
        Ssca2::new()
    }
}

impl Kernel for Ssca2 {
    type Op = EdgeOp;
    /// Vertex → its adjacency list (target, weight), in insertion order.
    type State = BTreeMap<u64, Vec<(u64, u64)>>;

    fn info(&self) -> &WorkloadInfo {
        &self.info
    }

    fn gen_op(&self, p: &Params, _t: u16, _i: u64, rng: &mut Rng) -> EdgeOp {
        let scale = Self::scale(p);
        let (mut u, mut v) = (0u64, 0u64);
        for _ in 0..scale {
            let r = rng.unit();
            let (bu, bv) = if r < 0.55 {
                (0, 0)
            } else if r < 0.65 {
                (0, 1)
            } else if r < 0.75 {
                (1, 0)
            } else {
                (1, 1)
            };
            u = u << 1 | bu;
            v = v << 1 | bv;
        }
        EdgeOp {
            u,
            v,
            w: 1 + rng.below(1 << SCALE),
        }
    }

    fn request(&self, op: &EdgeOp, words: &mut Vec<u64>) {
        words.extend([op.u, op.v, op.w]);
    }

    fn setup(&self, tx: &mut Tx, p: &Params, t: u16) {
        let table = tx.alloc_static(VERTEX_BYTES << Self::scale(p));
        tx.write(root_word(t, 1), table);
    }

    fn exec(&self, tx: &mut Tx, _p: &Params, t: u16, op: &EdgeOp) {
        let table = tx.read(root_word(t, 1));
        let ve = table + VERTEX_BYTES * op.u;
        let deg = tx.read(ve);
        let cap = tx.read(ve + 8);
        let mut edges = tx.read(ve + 16);
        tx.add(ve, 24);
        if deg == cap {
            let ncap = if cap == 0 { 4 } else { 2 * cap };
            let ne = tx.alloc(16 * ncap);
            for k in 0..deg {
                let a = tx.read(edges + 16 * k);
                let b = tx.read(edges + 16 * k + 8);
                tx.write(ne + 16 * k, a);
                tx.write(ne + 16 * k + 8, b);
            }
            if edges != 0 {
                tx.free(edges);
            }
            tx.write(ve + 8, ncap);
            tx.write(ve + 16, ne);
            edges = ne;
        }
        let slot = edges + 16 * deg;
        tx.add(slot, 16);
        tx.write(slot, op.v);
        tx.write(slot + 8, op.w);
        tx.write(ve, deg + 1);
    }

    fn initial(&self, _p: &Params, _t: u16) -> Self::State {
        BTreeMap::new()
    }

    fn apply(&self, s: &mut Self::State, _p: &Params, _t: u16, op: &EdgeOp) {
        s.entry(op.u).or_default().push((op.v, op.w));
    }

    fn extract(&self, tx: &mut Tx, p: &Params, t: u16) -> Result<Self::State, String> {
        let table = tx.read(root_word(t, 1));
        let end = table + (VERTEX_BYTES << Self::scale(p));
        let mut out = BTreeMap::new();
        let mut reach = Vec::new();
        for (lo, hi) in tx.heap().written_ranges(table, end) {
            let first = (lo - table) / VERTEX_BYTES;
            let last = (hi - table).div_ceil(VERTEX_BYTES);
            for u in first..last {
                let ve = table + VERTEX_BYTES * u;
                let (deg, cap, edges) = (tx.read(ve), tx.read(ve + 8), tx.read(ve + 16));
                if cap == 0 {
                    if deg != 0 || edges != 0 {
                        return Err(format!("ssca2: vertex {u} has edges but no array"));
                    }
                    continue;
                }
                if deg > cap || edges == 0 {
                    return Err(format!("ssca2: vertex {u}: degree {deg} capacity {cap}"));
                }
                let class = (tx.read(edges - BLOCK_HEADER) & 0xff) as usize;
                if class >= NCLASS {
                    return Err(format!("ssca2: vertex {u}: edge array has no size class"));
                }
                let room = class_bytes(class) - BLOCK_HEADER;
                if room < 16 * cap {
                    return Err(format!(
                        "ssca2: vertex {u}: array of {room} bytes for {cap} edges"
                    ));
                }
                reach.push(edges);
                if deg > 0 {
                    let list = (0..deg)
                        .map(|k| (tx.read(edges + 16 * k), tx.read(edges + 16 * k + 8)))
                        .collect();
                    out.insert(u, list);
                }
            }
        }
        check_heap(tx, t, &reach)?;
        Ok(out)
    }
}
