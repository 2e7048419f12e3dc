//! DIALGA's operator: pipelined software prefetch driven by prefetch-address arrays built
//! outside the hot loop, XPLine-aware distances, shuffled line order and 256 B bodies.
//!
//! The kernels visit a stripe body by body (64 B lines or 256 B XPLines); within a body they
//! load every source in turn. Number the lines in that visit order 0, 1, 2, ... (continuing
//! into the next stripe of a batch). With distance `d`, the prefetch issued at line `n` is for
//! line `n + d`. With an XPLine distance `d1 > d`, lines that start a 256 B XPLine are issued
//! `d1` lines ahead and the others `d` ahead: targets are ordered by `X - dist(X)` and issued one
//! per visited line. That ordering is periodic, so it is computed once per configuration as a
//! [`Pattern`]; each stripe then only resolves pattern entries to addresses (no branches in the
//! kernels, which just prefetch every listed address). Targets past the end of a batch point at
//! a hot dummy line.

use crate::fork::ForkSafe;
use crate::kernels::{self, identity_offsets, Body, Coefs, Hint, Isa, Plan, Prefetch};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

/// Most bodies a kernel call covers; longer blocks are split into units of this many bodies.
pub const UNIT_BODIES: usize = 64;

pub use crate::kernels::SHUFFLE;

/// Number of leading bodies of an `nb`-body unit visited in shuffled order (whole groups of 8).
#[inline(always)]
fn shuffled_prefix(nb: usize, shuffle: bool) -> usize {
    if shuffle {
        nb / 8 * 8
    } else {
        0
    }
}

/// How one encode call is scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Schedule {
    /// Software prefetch distance in cache lines (0 = no software prefetch).
    pub distance: usize,
    /// Stripe-ahead prefetch (beyond the paper; 0 = off, and then `distance` applies): while
    /// stripe s of a batch is computed, every line loaded from it prefetches the same line of
    /// stripe s + `ahead`. This is the pipelined prefetch with a distance of `ahead` whole
    /// stripes, without a per-line address list, so its cost does not grow with the distance.
    /// When set, `distance` and `xpline_distance` are ignored.
    pub ahead: usize,
    /// Cache level the software prefetches fill.
    pub hint: Hint,
    /// Larger distance for the first line of each 256 B XPLine (None = uniform distance).
    pub xpline_distance: Option<usize>,
    /// Visit lines in the shuffled order that keeps the L2 stream prefetcher from training.
    pub shuffle: bool,
    /// Loop-body granularity.
    pub body: Body,
    /// Non-temporal parity stores.
    pub nt: bool,
    /// How each stripe is brought in before it is computed (beyond the paper; see [`Fetch`]).
    pub fetch: Fetch,
}

/// Bringing a whole stripe in before the kernel reads it (beyond the paper). For a lone stripe
/// of short blocks, where no later stripe can be prefetched and each source is too short a
/// stream for the hardware prefetcher to train on, this fetches the stripe at the memory
/// parallelism of a loop that does nothing else; the kernel then runs from cache. Which form
/// pays depends on the host and the geometry (validation §5), so the coordinator measures them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Fetch {
    /// Nothing before the kernel.
    #[default]
    None,
    /// Load one byte of every line, source by source.
    Load,
    /// Software-prefetch every line into this level in row order: the first line of every
    /// source, then the second line of every source, and so on. On an AMD Zen 4 VM this order
    /// ran RS(12,8) 1 KiB single calls at 1.23-1.28x the rate of the same prefetches issued
    /// source by source (three invocations), at 95-105% of the plain move (validation §5).
    Prefetch(Hint),
    /// The stripe's own pipelined prefetch: the first `ahead` bytes of every source are
    /// software-prefetched into this level (in row order where `rows` is set, as
    /// [`Fetch::Prefetch`], else source by source), and the kernel then prefetches each body's
    /// lines `ahead` bytes further on in the same source as it loads that source, so the fetch
    /// of a source's later lines overlaps the computation of its earlier ones (a lone stripe
    /// has no later stripe to prefetch; validation §5).
    Pipelined {
        /// Cache level the prefetches fill.
        hint: Hint,
        /// Distance in bytes within each source, a multiple of the loop body (so the bodies
        /// prefetch every line after the first `ahead` bytes exactly once).
        ahead: u32,
        /// The first `ahead` bytes in row order instead of source by source.
        rows: bool,
    },
    /// Source-major order (`kernels::by_source`): the sources `group` at a time, each group
    /// multiplied into parity kept in an L1 scratch buffer, its kernel prefetching into L1 the
    /// same lines of the group `ahead` groups later (the first `ahead` groups prefetched before
    /// the kernel), the parity stored at the end. Where it cannot serve a call (blocks not a
    /// whole number of bodies, parity over `by_source::SCRATCH_MAX`, `k <= group`) the call runs
    /// in address order with no fetch.
    BySource {
        /// Sources per kernel call (1 to `by_source::MAX_GROUP`).
        group: u8,
        /// Groups between the one computed and the one prefetched.
        ahead: u8,
    },
}

impl Fetch {
    /// The in-kernel part of a [`Fetch::Pipelined`]: its distance in bytes and level.
    #[inline(always)]
    pub fn in_kernel(self) -> Option<(usize, Hint)> {
        match self {
            Fetch::Pipelined { hint, ahead, .. } => Some((ahead as usize, hint)),
            _ => None,
        }
    }
}

impl Schedule {
    /// Plain kernels: address order, no software prefetch, regular stores.
    pub const VANILLA: Schedule = Schedule {
        distance: 0,
        ahead: 0,
        hint: Hint::L1,
        xpline_distance: None,
        shuffle: false,
        body: Body::Line,
        nt: false,
        fetch: Fetch::None,
    };

    /// Whether the schedule issues software prefetches.
    pub fn prefetches(&self) -> bool {
        self.distance > 0 || self.ahead > 0
    }
}

/// One period of the prefetch ordering: for each slot of the period, which line is prefetched,
/// relative to the first body of the slot's period.
#[derive(Debug)]
pub struct Pattern {
    /// Slots per period (`bodies * k * lines_per_body`).
    pub slots: usize,
    /// Bodies per period.
    pub bodies: usize,
    /// (body delta, source, line within body) for each slot of the period.
    pub entries: Vec<(u32, u16, u8)>,
    /// Targets issued before the first visited line of a call: (body, source, line).
    pub warmup: Vec<(u32, u16, u8)>,
    /// Largest body delta among the entries.
    pub max_delta: u32,
}

fn is_xpline_first(body: Body, body_index: usize, line: usize) -> bool {
    match body {
        // Identity and SHUFFLE both put a line with offset % 256 == 0 at body % 4 == 0.
        Body::Line => body_index.is_multiple_of(4),
        Body::XpLine => line == 0,
    }
}

type PatternKey = (usize, Body, usize, Option<usize>);

thread_local! {
    static RECENT: RefCell<Vec<(PatternKey, Arc<Pattern>)>> = const { RefCell::new(Vec::new()) };
}

/// Build (or fetch from cache) the prefetch pattern for k sources.
pub fn pattern(k: usize, body: Body, d: usize, d1: Option<usize>) -> Arc<Pattern> {
    let key = (k, body, d, d1);
    // per-thread most-recently-used list first: no lock, no hashing on the hot path
    // (`try_with`: an encode from a thread-local destructor finds the list destroyed.)
    if let Ok(Some(p)) = RECENT.try_with(|r| {
        r.borrow()
            .iter()
            .find(|(x, _)| *x == key)
            .map(|(_, p)| p.clone())
    }) {
        return p;
    }
    let p = pattern_shared(key);
    let _ = RECENT.try_with(|r| {
        let mut r = r.borrow_mut();
        if r.len() >= 8 {
            r.remove(0);
        }
        r.push((key, p.clone()));
    });
    p
}

fn pattern_shared(key: PatternKey) -> Arc<Pattern> {
    let (k, body, d, d1) = key;
    // Fork-safe: a child forked while another thread held the lock starts an empty cache.
    static CACHE: ForkSafe<HashMap<PatternKey, Arc<Pattern>>> = ForkSafe::new(HashMap::new);
    if let Some(p) = CACHE.lock().get(&key) {
        return p.clone();
    }
    let p = Arc::new(build_pattern(k, body, d, d1));
    let mut c = CACHE.lock();
    if c.len() > 4096 {
        c.clear();
    }
    c.insert(key, p.clone());
    p
}

fn build_pattern(k: usize, body: Body, d: usize, d1: Option<usize>) -> Pattern {
    let lines = body.lines();
    let per_body = k * lines;
    let bodies = match body {
        Body::Line => 4,
        Body::XpLine => 1,
    };
    let slots = bodies * per_body;
    let dmax = d1.unwrap_or(d).max(d);
    let decompose =
        |x: usize| -> (usize, usize, usize) { (x / per_body, (x / lines) % k, x % lines) };
    let dist = |x: usize| -> usize {
        let (b, _, l) = decompose(x);
        match d1 {
            Some(d1) if is_xpline_first(body, b, l) => d1,
            _ => d,
        }
    };
    // Periods needed so that steady state is reached: w = #targets with key < 0 <= dmax.
    let a = dmax / slots + 2;
    let total = (a + 2) * slots + dmax + 1;
    // Order by issue key X - dist(X); on ties the XPLine-first line (larger distance) goes
    // first, since its latency is the one the longer distance is meant to hide.
    let mut order: Vec<(isize, usize)> = (0..total)
        .map(|x| (x as isize - dist(x) as isize, x))
        .collect();
    order.sort_unstable_by_key(|&(key, x)| (key, std::cmp::Reverse(dist(x)), x));
    let w = order.iter().take_while(|(key, _)| *key < 0).count();
    let warmup = order[..w]
        .iter()
        .map(|&(_, x)| {
            let (b, j, l) = decompose(x);
            (b as u32, j as u16, l as u8)
        })
        .collect();
    let start = a * slots;
    let entries: Vec<(u32, u16, u8)> = (0..slots)
        .map(|t| {
            let x = order[w + start + t].1;
            let (b, j, l) = decompose(x);
            let delta = b as isize - (a * bodies) as isize;
            debug_assert!(delta >= 0);
            (delta.max(0) as u32, j as u16, l as u8)
        })
        .collect();
    let max_delta = entries.iter().map(|e| e.0).max().unwrap_or(0);
    Pattern {
        slots,
        bodies,
        entries,
        warmup,
        max_delta,
    }
}

/// A hot, harmless address for prefetch slots with nothing left to fetch.
fn dummy_line() -> *const u8 {
    #[repr(align(64))]
    struct Line([u8; 64]);
    static DUMMY: Line = Line([0; 64]);
    DUMMY.0.as_ptr()
}

/// A batch of stripes with the same geometry, as flat pointer arrays.
#[derive(Debug, Clone, Copy)]
pub struct StripeSet<'a> {
    /// `count * k` source pointers, stripe-major.
    pub srcs: &'a [*const u8],
    /// `count * m` destination pointers, stripe-major.
    pub dsts: &'a [*mut u8],
    /// Sources per stripe.
    pub k: usize,
    /// Destinations per stripe.
    pub m: usize,
    /// Bytes per block.
    pub len: usize,
}

impl StripeSet<'_> {
    /// Number of stripes.
    pub fn count(&self) -> usize {
        self.srcs.len().checked_div(self.k).unwrap_or(0)
    }
}

thread_local! {
    static PF_BUF: RefCell<Vec<*const u8>> = const { RefCell::new(Vec::new()) };
}

/// Geometry of one execute call, for resolving prefetch targets anywhere in the batch.
struct Geometry<'a> {
    set: &'a StripeSet<'a>,
    n: usize,
    nb: usize,
    bb: usize,
    units: usize,
    shuffle: bool,
    shuf: &'static [u32],
}

impl Geometry<'_> {
    /// Byte offset of body `b` (within its stripe) in visit order.
    #[inline(always)]
    fn body_offset(&self, b: usize) -> usize {
        let u = b / UNIT_BODIES;
        let ub = b % UNIT_BODIES;
        let unb = (self.nb - u * UNIT_BODIES).min(UNIT_BODIES);
        let off = if ub < shuffled_prefix(unb, self.shuffle) {
            self.shuf[ub] as usize
        } else {
            ub * self.bb
        };
        u * UNIT_BODIES * self.bb + off
    }

    /// Address of line `l` of source `j` in body `b` of stripe `s`, where `b` may run past the
    /// stripe into the following ones; a dummy line past the batch.
    fn resolve(&self, mut s: usize, mut b: usize, j: usize, l: usize) -> *const u8 {
        while b >= self.nb {
            b -= self.nb;
            s += 1;
        }
        if s >= self.n {
            return dummy_line();
        }
        // SAFETY: an address inside source block j of stripe s (only ever prefetched).
        unsafe { self.set.srcs[s * self.set.k + j].add(self.body_offset(b) + 64 * l) }
    }
}

/// Encode every stripe of `set` with `isa` under `sched`.
///
/// # Safety
/// Every source pointer must be readable and every destination writable for `set.len` bytes,
/// destinations must not overlap sources or each other, `coefs` must be `m x k`, `isa` must
/// be available. Non-temporal stores are used only where destinations are 64-byte aligned.
pub unsafe fn execute(
    isa: Isa,
    coefs: &Coefs,
    set: &StripeSet,
    sched: &Schedule,
    accumulate: bool,
) {
    let (k, m, len) = (set.k, set.m, set.len);
    let n = set.count();
    if n == 0 || m == 0 || len == 0 {
        return;
    }
    let body = sched.body;
    let bb = body.bytes();
    let nb = len / bb;
    let nt = kernels::nt_usable(sched.nt, set.dsts);
    let ahead = sched.ahead;
    let hint = sched.hint;
    let pat = (ahead == 0 && sched.distance > 0 && nb > 0)
        .then(|| pattern(k, body, sched.distance, sched.xpline_distance));
    let g = Geometry {
        set,
        n,
        nb,
        bb,
        units: nb.div_ceil(UNIT_BODIES),
        shuffle: sched.shuffle,
        shuf: kernels::shuffled_offsets(body),
    };
    let ident = identity_offsets(body);
    if let Some(p) = &pat {
        for &(b, j, l) in &p.warmup {
            kernels::prefetch_line(g.resolve(0, b as usize, j as usize, l as usize), hint);
        }
    }
    if ahead > 0 && nb > 0 {
        // the first `ahead` stripes have no earlier stripe to prefetch them: start their first
        // body now (the hardware prefetcher follows the rest)
        for &src in &set.srcs[..ahead.min(n) * k] {
            for l in 0..body.lines() {
                kernels::prefetch_line(src.wrapping_add(g.body_offset(0) + 64 * l), hint);
            }
        }
    }
    let per_body = k * body.lines();
    // A stripe's own pipelined prefetch or source-major order replaces the schedule's other
    // prefetches.
    let own_loop = matches!(
        sched.fetch,
        Fetch::Pipelined { .. } | Fetch::BySource { .. }
    ) && pat.is_none()
        && ahead == 0
        && !g.shuffle;
    let stripes = |buf: &mut Vec<*const u8>| {
        for s in 0..n {
            let srcs = &set.srcs[s * k..(s + 1) * k];
            let dsts = &set.dsts[s * m..(s + 1) * m];
            kernels::fetch(srcs, len, sched.fetch);
            if own_loop {
                kernels::encode_fetched(
                    isa,
                    srcs,
                    dsts,
                    coefs,
                    len,
                    accumulate,
                    nt,
                    body,
                    sched.fetch,
                );
                continue;
            }
            let later = s + ahead;
            let pf_ahead = if ahead > 0 && later < n {
                Prefetch::Ahead(&set.srcs[later * k..(later + 1) * k])
            } else {
                Prefetch::None
            };
            for u in 0..g.units {
                let b0 = u * UNIT_BODIES;
                let unb = (nb - b0).min(UNIT_BODIES);
                let full = shuffled_prefix(unb, g.shuffle);
                if let Some(p) = &pat {
                    fill_prefetch(buf, p, &g, s, b0, unb);
                }
                let base = b0 * bb;
                if full > 0 {
                    let prefetch = match &pat {
                        Some(_) => Prefetch::Listed(&buf[..full * per_body]),
                        None => pf_ahead,
                    };
                    let plan = Plan {
                        offs: &g.shuf[..full],
                        base,
                        prefetch,
                        hint,
                        body,
                    };
                    kernels::run_plan(isa, srcs, dsts, coefs, &plan, accumulate, nt);
                }
                if unb > full {
                    let prefetch = match &pat {
                        Some(_) => Prefetch::Listed(&buf[full * per_body..]),
                        None => pf_ahead,
                    };
                    let plan = Plan {
                        offs: &ident[full..unb],
                        base,
                        prefetch,
                        hint,
                        body,
                    };
                    kernels::run_plan(isa, srcs, dsts, coefs, &plan, accumulate, nt);
                }
            }
            // whole lines after the last full body, then the byte tail
            let done = nb * bb;
            let rows = (len - done) / 64;
            if rows > 0 {
                let id = identity_offsets(Body::Line);
                let plan = Plan::plain(&id[..rows], done, Body::Line);
                kernels::run_plan(isa, srcs, dsts, coefs, &plan, accumulate, nt);
            }
            if done + rows * 64 < len {
                kernels::scalar::range(srcs, dsts, coefs, done + rows * 64, len, accumulate);
            }
        }
    };
    // (An encode from a thread-local destructor finds the buffer destroyed: it uses its own.)
    if PF_BUF
        .try_with(|buf| stripes(&mut buf.borrow_mut()))
        .is_err()
    {
        stripes(&mut Vec::new());
    }
    if nt {
        kernels::fence();
    }
}

/// The prefetch addresses `execute` would issue for `set` under `sched`: the warm-up list and
/// then one address per loaded line, in load order (for tests and inspection).
pub fn planned_prefetches(set: &StripeSet, sched: &Schedule) -> (Vec<*const u8>, Vec<*const u8>) {
    let k = set.k;
    let body = sched.body;
    let nb = set.len / body.bytes();
    let n = set.count();
    if sched.distance == 0 || nb == 0 || n == 0 {
        return (Vec::new(), Vec::new());
    }
    let p = pattern(k, body, sched.distance, sched.xpline_distance);
    let g = Geometry {
        set,
        n,
        nb,
        bb: body.bytes(),
        units: nb.div_ceil(UNIT_BODIES),
        shuffle: sched.shuffle,
        shuf: kernels::shuffled_offsets(body),
    };
    let warm = p
        .warmup
        .iter()
        .map(|&(b, j, l)| g.resolve(0, b as usize, j as usize, l as usize))
        .collect();
    let mut all = Vec::new();
    let mut buf = Vec::new();
    for s in 0..n {
        for u in 0..g.units {
            let b0 = u * UNIT_BODIES;
            fill_prefetch(&mut buf, &p, &g, s, b0, (nb - b0).min(UNIT_BODIES));
            all.extend_from_slice(&buf);
        }
    }
    (warm, all)
}

/// Line addresses in the order the kernels load them under `sched` (full bodies only).
pub fn load_order(set: &StripeSet, sched: &Schedule) -> Vec<*const u8> {
    let body = sched.body;
    let bb = body.bytes();
    let nb = set.len / bb;
    let shuf = kernels::shuffled_offsets(body);
    let mut out = Vec::new();
    for s in 0..set.count() {
        for u in 0..nb.div_ceil(UNIT_BODIES) {
            let b0 = u * UNIT_BODIES;
            let unb = (nb - b0).min(UNIT_BODIES);
            let full = shuffled_prefix(unb, sched.shuffle);
            for (i, &sh) in shuf.iter().enumerate().take(unb) {
                let off = if i < full { sh as usize } else { i * bb };
                for j in 0..set.k {
                    for l in 0..body.lines() {
                        // SAFETY: address arithmetic inside source block j (never dereferenced).
                        out.push(unsafe { set.srcs[s * set.k + j].add(b0 * bb + off + 64 * l) });
                    }
                }
            }
        }
    }
    out
}

/// Resolve the prefetch addresses for the bodies `[b0, b0 + unb)` of stripe `s`.
///
/// Without shuffling, the address for slot t of pattern period p is `A[t] + p * period_bytes`
/// as long as the target stays in this unit, so whole periods are filled by a vectorisable
/// add; only the last few periods (targets in the next unit or stripe) are resolved one by one.
fn fill_prefetch(
    buf: &mut Vec<*const u8>,
    p: &Pattern,
    g: &Geometry,
    s: usize,
    b0: usize,
    unb: usize,
) {
    let k = g.set.k;
    let per_body = p.slots / p.bodies;
    let total = unb * per_body;
    buf.clear();
    buf.reserve(total);
    let srcs = &g.set.srcs[s * k..(s + 1) * k];
    let full = shuffled_prefix(unb, g.shuffle);
    let base = b0 * g.bb;
    // Slots are numbered from the start of the stripe, so the pattern phase is per stripe.
    let first = b0 * per_body;
    let mut period = first / p.slots;
    let mut t = first % p.slots;
    let mut done = 0;
    if full == 0 && t == 0 && b0.is_multiple_of(p.bodies) {
        // fast path: periods whose targets all lie inside this unit
        let p0 = period;
        let md = p.max_delta as usize;
        let safe = if unb > md {
            (unb - 1 - md) / p.bodies + 1
        } else {
            0
        };
        let safe = safe.min(unb / p.bodies);
        let pb = p.bodies * g.bb;
        // A[t]: address of slot t's target in period 0 of this unit
        let a: Vec<usize> = p
            .entries
            .iter()
            .map(|&(bd, j, l)| {
                srcs[j as usize] as usize + base + bd as usize * g.bb + 64 * l as usize
            })
            .collect();
        for q in 0..safe {
            let add = q * pb;
            buf.extend(a.iter().map(|&x| (x + add) as *const u8));
        }
        done = safe * p.slots;
        period = p0 + safe;
    }
    for _ in done..total {
        let (bd, j, l) = p.entries[t];
        let tb = period * p.bodies + bd as usize; // body within the stripe
        let ub = tb.wrapping_sub(b0);
        let a = if ub < unb {
            let off = if ub < full {
                g.shuf[ub] as usize
            } else {
                ub * g.bb
            };
            // SAFETY: inside source block j (only prefetched).
            unsafe { srcs[j as usize].add(base + off + 64 * l as usize) }
        } else {
            g.resolve(s, tb, j as usize, l as usize)
        };
        buf.push(a);
        t += 1;
        if t == p.slots {
            t = 0;
            period += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_set(k: usize, stripes: usize, len: usize) -> (Vec<*const u8>, Vec<*mut u8>) {
        // Fake, never-dereferenced block addresses far apart (4 MiB each), 4 KiB aligned.
        let srcs = (0..k * stripes)
            .map(|i| ((i + 1) << 22) as *const u8)
            .collect();
        let dsts = (0..stripes)
            .map(|i| ((i + 1000) << 22) as *mut u8)
            .collect();
        let _ = len;
        (srcs, dsts)
    }

    #[test]
    fn uniform_distance_prefetches_the_line_d_ahead_across_stripes() {
        for (k, len, d, body, shuffle) in [
            (8, 1024, 16, Body::Line, false),
            (8, 1024, 64, Body::Line, false),
            (3, 1024 + 320, 7, Body::Line, false),
            (5, 8192, 100, Body::Line, false),
            (8, 1024, 20, Body::Line, true),
            (4, 2048, 9, Body::XpLine, false),
            (6, 1024, 30, Body::XpLine, true),
            (2, 64 * 200, 33, Body::Line, false),
        ] {
            let stripes = 5;
            let (srcs, dsts) = fake_set(k, stripes, len);
            let set = StripeSet {
                srcs: &srcs,
                dsts: &dsts[..stripes],
                k,
                m: 1,
                len,
            };
            let sched = Schedule {
                distance: d,
                xpline_distance: None,
                shuffle,
                body,
                nt: false,
                ..Schedule::VANILLA
            };
            let (warm, slots) = planned_prefetches(&set, &sched);
            let order = load_order(&set, &sched);
            assert_eq!(slots.len(), order.len());
            assert_eq!(
                &warm[..],
                &order[..d.min(order.len())],
                "warm-up k={k} d={d}"
            );
            for (n, &a) in slots.iter().enumerate() {
                let want = order.get(n + d).copied().unwrap_or(dummy_line());
                assert_eq!(
                    a, want,
                    "k={k} len={len} d={d} {body:?} shuffle={shuffle} slot {n}"
                );
            }
        }
    }

    #[test]
    fn xpline_first_lines_are_issued_earlier_and_every_line_once() {
        let (k, len, d, d1, stripes) = (8, 1024, 12, 20, 4);
        let (srcs, dsts) = fake_set(k, stripes, len);
        let set = StripeSet {
            srcs: &srcs,
            dsts: &dsts[..stripes],
            k,
            m: 1,
            len,
        };
        let sched = Schedule {
            distance: d,
            xpline_distance: Some(d1),
            shuffle: false,
            body: Body::Line,
            nt: false,
            ..Schedule::VANILLA
        };
        let (warm, slots) = planned_prefetches(&set, &sched);
        let order = load_order(&set, &sched);
        let issued: Vec<*const u8> = warm
            .iter()
            .chain(&slots)
            .copied()
            .filter(|&a| a != dummy_line())
            .collect();
        let mut a = issued.clone();
        a.sort();
        let mut b = order.clone();
        b.sort();
        assert_eq!(a, b, "every loaded line is prefetched exactly once");
        // issue position (slot index, warm-up counted before slot 0) vs load position
        // One prefetch per loaded line: a burst of k XPLine-first targets shares slots with
        // ordinary ones, so single leads vary by up to k; averages must match d1 and d.
        let w = warm.len() as isize;
        let (mut first_sum, mut first_n, mut rest_sum, mut rest_n) =
            (0isize, 0isize, 0isize, 0isize);
        for (pos, &addr) in issued.iter().enumerate() {
            let load = order.iter().position(|&x| x == addr).unwrap() as isize;
            let lead = load - (pos as isize - w);
            if load > d1 as isize + 8 && load < order.len() as isize - 8 {
                assert!(
                    lead >= (d - k) as isize && lead <= (d1 + k) as isize,
                    "line {load}: lead {lead}"
                );
                if (addr as usize).is_multiple_of(256) {
                    first_sum += lead;
                    first_n += 1;
                } else {
                    rest_sum += lead;
                    rest_n += 1;
                }
            }
        }
        let (f, r) = (
            first_sum as f64 / first_n as f64,
            rest_sum as f64 / rest_n as f64,
        );
        assert!(
            f > r + (d1 - d) as f64 * 0.6,
            "first-line lead {f:.1} vs others {r:.1}"
        );
        assert!(
            (r - d as f64).abs() < 3.0 && (f - d1 as f64).abs() < 4.0,
            "{f:.1} {r:.1}"
        );
    }
}
