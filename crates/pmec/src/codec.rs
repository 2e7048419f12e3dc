//! Systematic Reed-Solomon codes RS(k + m, k): encode, decode any <= m erasures (decode
//! matrices cached), parity update, verification, and the batch entry points the thread pool
//! and the DIALGA scheduler build on.

use crate::dialga::coordinator::{
    CallInProgress, Coordinator, CoordinatorConfig, Decision, Strategy, REUSE_CALLS,
};
use crate::dialga::prefetch::{self, Schedule, StripeSet};
use crate::error::{invalid, mismatch, Error, Result};
use crate::kernels::{self, Coefs, Isa};
use crate::matrix::{self, Matrix, MatrixKind};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Builder for [`Codec`] (matrix kind, kernel, scheduling strategy).
#[derive(Debug, Clone)]
pub struct CodecBuilder {
    k: usize,
    m: usize,
    kind: MatrixKind,
    isa: Option<Isa>,
    strategy: Strategy,
    cfg: CoordinatorConfig,
}

impl CodecBuilder {
    /// Generator matrix kind (default Cauchy).
    pub fn matrix(mut self, kind: MatrixKind) -> Self {
        self.kind = kind;
        self
    }

    /// Force a kernel (default: the best this CPU has).
    pub fn isa(mut self, isa: Isa) -> Self {
        self.isa = Some(isa);
        self
    }

    /// Prefetch strategy (default [`Strategy::Auto`]).
    pub fn strategy(mut self, s: Strategy) -> Self {
        self.strategy = s;
        self
    }

    /// Coordinator thresholds.
    pub fn coordinator(mut self, cfg: CoordinatorConfig) -> Self {
        self.cfg = cfg;
        self
    }

    /// Build the codec, validating every parameter (the coordinator's configuration too).
    pub fn build(self) -> Result<Codec> {
        self.cfg.validate()?;
        if let Strategy::Fixed(s) = self.strategy {
            let max = crate::dialga::coordinator::MAX_DISTANCE;
            if s.distance > max || s.xpline_distance.is_some_and(|d| d > max) {
                return Err(crate::Error::InvalidParameter(format!(
                    "fixed schedule distance {} (XPLine {:?}) exceeds {max} cache lines",
                    s.distance, s.xpline_distance
                )));
            }
        }
        let gen = matrix::generator(self.kind, self.k, self.m)?;
        let isa = match self.isa {
            Some(i) => i.require()?,
            None => Isa::best(),
        };
        Codec::from_generator(gen, self.kind, isa, self.strategy, self.cfg)
    }
}

/// A prepared decode: which shards are read and the matrix that rebuilds the missing ones.
#[derive(Debug)]
struct DecodePlan {
    survivors: Vec<usize>,
    erased: Vec<usize>,
    coefs: Coefs,
    coord: Coordinator,
}

type ErasureKey = [u64; 4];

fn key_of(erased: &[usize]) -> ErasureKey {
    let mut k = [0u64; 4];
    for &e in erased {
        k[e / 64] |= 1 << (e % 64);
    }
    k
}

/// A systematic RS(k + m, k) code. Shards 0..k are data, k..k+m parity.
#[derive(Debug)]
pub struct Codec {
    k: usize,
    m: usize,
    kind: MatrixKind,
    gen: Matrix,
    parity: Coefs,
    isa: Isa,
    strategy: Strategy,
    cfg: CoordinatorConfig,
    coord: Coordinator,
    decode_cache: Mutex<HashMap<ErasureKey, Arc<DecodePlan>>>,
}

/// Most decode plans kept per codec.
const DECODE_CACHE_MAX: usize = 1024;

impl Codec {
    /// RS with k data and m parity blocks, Cauchy matrix, best kernel, automatic scheduling.
    pub fn new(k: usize, m: usize) -> Result<Codec> {
        Codec::builder(k, m).build()
    }

    /// Builder for non-default options.
    pub fn builder(k: usize, m: usize) -> CodecBuilder {
        CodecBuilder {
            k,
            m,
            kind: MatrixKind::Cauchy,
            isa: None,
            strategy: Strategy::Auto,
            cfg: CoordinatorConfig::default(),
        }
    }

    fn from_generator(
        gen: Matrix,
        kind: MatrixKind,
        isa: Isa,
        strategy: Strategy,
        cfg: CoordinatorConfig,
    ) -> Result<Codec> {
        let (n, k) = (gen.rows(), gen.cols());
        let m = n - k;
        let prow: Vec<usize> = (k..n).collect();
        let parity = Coefs::new(&gen.select_rows(&prow));
        let coord = Coordinator::new(strategy, cfg, isa, &parity);
        Ok(Codec {
            k,
            m,
            kind,
            gen,
            parity,
            isa,
            strategy,
            cfg,
            coord,
            decode_cache: Mutex::new(HashMap::new()),
        })
    }

    /// Data blocks per stripe.
    pub fn data_shards(&self) -> usize {
        self.k
    }

    /// Parity blocks per stripe.
    pub fn parity_shards(&self) -> usize {
        self.m
    }

    /// k + m.
    pub fn total_shards(&self) -> usize {
        self.k + self.m
    }

    /// Matrix kind.
    pub fn matrix_kind(&self) -> MatrixKind {
        self.kind
    }

    /// The (k + m) x k generator matrix (identical to ISA-L's for the same kind).
    pub fn generator(&self) -> &Matrix {
        &self.gen
    }

    /// Kernel in use.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// The encode coordinator (for inspection: tuned distances, decisions).
    pub fn coordinator(&self) -> &Coordinator {
        &self.coord
    }

    fn check_len(&self, what: &str, lens: impl Iterator<Item = usize>, len: usize) -> Result<()> {
        for (i, l) in lens.enumerate() {
            if l != len {
                return mismatch(format!("{what} {i} has {l} bytes, expected {len}"));
            }
        }
        Ok(())
    }

    /// Compute the m parity blocks of one stripe.
    pub fn encode(&self, data: &[&[u8]], parity: &mut [&mut [u8]]) -> Result<()> {
        self.encode_batch(data, parity)
    }

    /// Encode a stripe given as k + m shards (data first); parity shards are overwritten.
    pub fn encode_shards(&self, shards: &mut [&mut [u8]]) -> Result<()> {
        if shards.len() != self.k + self.m {
            return mismatch(format!(
                "{} shards given, code has {}",
                shards.len(),
                self.k + self.m
            ));
        }
        let (d, p) = shards.split_at_mut(self.k);
        let d: Vec<&[u8]> = d.iter().map(|s| &**s).collect();
        self.encode(&d, p)
    }

    /// Encode many stripes at once: `data` holds `n * k` blocks (stripe-major), `parity`
    /// `n * m`. Prefetching runs across stripe boundaries.
    pub fn encode_batch(&self, data: &[&[u8]], parity: &mut [&mut [u8]]) -> Result<()> {
        if data.is_empty() || !data.len().is_multiple_of(self.k) {
            return mismatch(format!(
                "{} data blocks given, need a positive multiple of k = {}",
                data.len(),
                self.k
            ));
        }
        let n = data.len() / self.k;
        if parity.len() != n * self.m {
            return mismatch(format!(
                "{} parity blocks given for {n} stripes, need {}",
                parity.len(),
                n * self.m
            ));
        }
        let len = data[0].len();
        self.check_len("data block", data.iter().map(|d| d.len()), len)?;
        self.check_len("parity block", parity.iter().map(|p| p.len()), len)?;
        let srcs: Vec<*const u8> = data.iter().map(|d| d.as_ptr()).collect();
        let dsts: Vec<*mut u8> = parity.iter_mut().map(|p| p.as_mut_ptr()).collect();
        // SAFETY: all pointers come from slices of `len` bytes; parity slices are distinct
        // &mut borrows so they cannot overlap each other or the shared data slices.
        unsafe { self.encode_raw(len, &srcs, &dsts, 1) };
        Ok(())
    }

    /// Encode `srcs.len() / k` stripes of `len`-byte blocks from raw pointers, as
    /// [`Codec::encode_batch`] does; `threads` is the concurrency the caller runs at (a hint
    /// for the coordinator). Returns the coordinator's decision.
    ///
    /// # Safety
    /// Every source pointer must be readable and every destination writable for `len` bytes;
    /// destinations must not overlap each other or any source; `srcs.len()` must be a
    /// multiple of k and `dsts.len()` the matching multiple of m.
    pub unsafe fn encode_raw(
        &self,
        len: usize,
        srcs: &[*const u8],
        dsts: &[*mut u8],
        threads: usize,
    ) -> Decision {
        let set = StripeSet {
            srcs,
            dsts,
            k: self.k,
            m: self.m,
            len,
        };
        run_coordinated(&self.coord, self.isa, &self.parity, &set, threads, false)
    }

    /// ISA-L's incremental encode (`ec_encode_data_update`): parity ^= column `index` x data.
    /// Starting from zeroed parity and feeding every data block once yields the parity.
    pub fn encode_incremental(
        &self,
        index: usize,
        data: &[u8],
        parity: &mut [&mut [u8]],
    ) -> Result<()> {
        if index >= self.k {
            return invalid(format!("data index {index} out of range (k = {})", self.k));
        }
        if parity.len() != self.m {
            return mismatch(format!(
                "{} parity blocks given, need {}",
                parity.len(),
                self.m
            ));
        }
        self.check_len("parity block", parity.iter().map(|p| p.len()), data.len())?;
        let col: Vec<u8> = (0..self.m).map(|p| self.parity.coef(p, index)).collect();
        let coefs = Coefs::from_bytes(self.m, 1, &col);
        let dsts: Vec<*mut u8> = parity.iter_mut().map(|p| p.as_mut_ptr()).collect();
        // SAFETY: one source and m distinct destinations of data.len() bytes.
        unsafe {
            kernels::encode_linear(
                self.isa,
                &[data.as_ptr()],
                &dsts,
                &coefs,
                data.len(),
                true,
                false,
            )
        };
        Ok(())
    }

    /// Update parity after data block `index` changed from `old` to `new`:
    /// parity ^= column(index) x (old ^ new).
    pub fn update(
        &self,
        index: usize,
        old: &[u8],
        new: &[u8],
        parity: &mut [&mut [u8]],
    ) -> Result<()> {
        if old.len() != new.len() {
            return mismatch(format!(
                "old block has {} bytes, new {}",
                old.len(),
                new.len()
            ));
        }
        let delta: Vec<u8> = old.iter().zip(new).map(|(a, b)| a ^ b).collect();
        self.encode_incremental(index, &delta, parity)
    }

    /// Whether the parity shards match the data shards.
    pub fn verify(&self, shards: &[&[u8]]) -> Result<bool> {
        if shards.len() != self.k + self.m {
            return mismatch(format!(
                "{} shards given, code has {}",
                shards.len(),
                self.k + self.m
            ));
        }
        let len = shards[0].len();
        self.check_len("shard", shards.iter().map(|s| s.len()), len)?;
        let mut parity = vec![vec![0u8; len]; self.m];
        let mut p: Vec<&mut [u8]> = parity.iter_mut().map(|v| v.as_mut_slice()).collect();
        self.encode(&shards[..self.k], &mut p)?;
        Ok(parity
            .iter()
            .zip(&shards[self.k..])
            .all(|(a, b)| a.as_slice() == *b))
    }

    fn decode_plan(&self, erased: &[usize]) -> Result<Arc<DecodePlan>> {
        let key = key_of(erased);
        if let Some(p) = self
            .decode_cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(p.clone());
        }
        let n = self.k + self.m;
        let survivors: Vec<usize> = (0..n)
            .filter(|i| !erased.contains(i))
            .take(self.k)
            .collect();
        let inv = self.gen.select_rows(&survivors).invert().map_err(|_| {
            Error::NotMds(format!(
                "survivors {survivors:?} give a singular matrix ({} matrix, k={}, m={})",
                self.kind.name(),
                self.k,
                self.m
            ))
        })?;
        // Row for an erased shard e: gen[e] x inv (data rows of inv are gen rows of identity).
        let rows = self.gen.select_rows(erased).mul(&inv)?;
        let coefs = Coefs::new(&rows);
        let coord = Coordinator::new(self.strategy, self.cfg, self.isa, &coefs);
        let plan = Arc::new(DecodePlan {
            survivors,
            erased: erased.to_vec(),
            coefs,
            coord,
        });
        let mut c = self.decode_cache.lock().unwrap_or_else(|e| e.into_inner());
        if c.len() >= DECODE_CACHE_MAX {
            c.clear();
        }
        c.insert(key, plan.clone());
        Ok(plan)
    }

    fn check_erasures(&self, erased: &[usize]) -> Result<Vec<usize>> {
        let n = self.k + self.m;
        let mut e = erased.to_vec();
        e.sort_unstable();
        e.dedup();
        if e.len() != erased.len() {
            return invalid(format!("erasure list {erased:?} has duplicates"));
        }
        if let Some(&bad) = e.iter().find(|&&i| i >= n) {
            return invalid(format!("erased shard {bad} out of range (k + m = {n})"));
        }
        if e.len() > self.m {
            return Err(Error::TooManyErasures {
                erased: e.len(),
                max: self.m,
            });
        }
        Ok(e)
    }

    /// Rebuild the shards listed in `erased` (data or parity) in place from the others.
    /// `shards` holds all k + m buffers of equal length; the erased ones are outputs.
    pub fn decode(&self, shards: &mut [&mut [u8]], erased: &[usize]) -> Result<()> {
        let n = self.k + self.m;
        if shards.len() != n {
            return mismatch(format!("{} shards given, code has {n}", shards.len()));
        }
        let e = self.check_erasures(erased)?;
        let len = shards[0].len();
        self.check_len("shard", shards.iter().map(|s| s.len()), len)?;
        if e.is_empty() {
            return Ok(());
        }
        let plan = self.decode_plan(&e)?;
        let srcs: Vec<*const u8> = plan.survivors.iter().map(|&i| shards[i].as_ptr()).collect();
        let dsts: Vec<*mut u8> = plan
            .erased
            .iter()
            .map(|&i| shards[i].as_mut_ptr())
            .collect();
        let set = StripeSet {
            srcs: &srcs,
            dsts: &dsts,
            k: self.k,
            m: dsts.len(),
            len,
        };
        // SAFETY: survivors and erased shards are disjoint index sets of distinct &mut slices
        // of `len` bytes each.
        unsafe { run_coordinated(&plan.coord, self.isa, &plan.coefs, &set, 1, false) };
        Ok(())
    }

    /// Decode many stripes with the same erasure pattern: `shards` holds `n * (k + m)` blocks.
    pub fn decode_batch(&self, shards: &mut [&mut [u8]], erased: &[usize]) -> Result<()> {
        let n = self.k + self.m;
        if shards.is_empty() || !shards.len().is_multiple_of(n) {
            return mismatch(format!(
                "{} shards given, need a multiple of {n}",
                shards.len()
            ));
        }
        let e = self.check_erasures(erased)?;
        let len = shards[0].len();
        self.check_len("shard", shards.iter().map(|s| s.len()), len)?;
        if e.is_empty() {
            return Ok(());
        }
        let plan = self.decode_plan(&e)?;
        let stripes = shards.len() / n;
        let mut srcs = Vec::with_capacity(stripes * self.k);
        let mut dsts = Vec::with_capacity(stripes * e.len());
        for s in 0..stripes {
            srcs.extend(plan.survivors.iter().map(|&i| shards[s * n + i].as_ptr()));
            dsts.extend(plan.erased.iter().map(|&i| shards[s * n + i].as_mut_ptr()));
        }
        let set = StripeSet {
            srcs: &srcs,
            dsts: &dsts,
            k: self.k,
            m: e.len(),
            len,
        };
        // SAFETY: per stripe, survivors and erased are disjoint distinct &mut slices.
        unsafe { run_coordinated(&plan.coord, self.isa, &plan.coefs, &set, 1, false) };
        Ok(())
    }

    /// Rebuild missing shards (`None`) and return them filled in; klauspost-style.
    pub fn reconstruct(&self, shards: &mut [Option<Vec<u8>>]) -> Result<()> {
        let n = self.k + self.m;
        if shards.len() != n {
            return mismatch(format!("{} shards given, code has {n}", shards.len()));
        }
        let len =
            shards
                .iter()
                .flatten()
                .map(|s| s.len())
                .next()
                .ok_or(Error::TooManyErasures {
                    erased: n,
                    max: self.m,
                })?;
        let erased: Vec<usize> = (0..n).filter(|&i| shards[i].is_none()).collect();
        if erased.len() > self.m {
            return Err(Error::TooManyErasures {
                erased: erased.len(),
                max: self.m,
            });
        }
        // Checked before any shard is filled: a failed call leaves `shards` as it found them
        // (zero-filled entries left behind looked present to a retry, which then "rebuilt" the
        // stripe from zeros without an error).
        if let Some((i, l)) = shards
            .iter()
            .enumerate()
            .find_map(|(i, s)| s.as_ref().map(|s| (i, s.len())).filter(|&(_, l)| l != len))
        {
            return mismatch(format!("shard {i} has {l} bytes, expected {len}"));
        }
        for s in shards.iter_mut() {
            if s.is_none() {
                *s = Some(vec![0u8; len]);
            }
        }
        let mut views: Vec<&mut [u8]> = shards
            .iter_mut()
            .map(|s| s.as_mut().expect("filled above").as_mut_slice())
            .collect();
        let r = self.decode(&mut views, &erased);
        if r.is_err() {
            for &i in &erased {
                shards[i] = None;
            }
        }
        r
    }

    /// A reusable decoder for one erasure pattern (for batch/raw decoding and benchmarks).
    pub fn decoder(&self, erased: &[usize]) -> Result<Decoder> {
        let e = self.check_erasures(erased)?;
        if e.is_empty() {
            return invalid("decoder needs at least one erased shard");
        }
        Ok(Decoder {
            plan: self.decode_plan(&e)?,
            isa: self.isa,
        })
    }

    /// Decode matrices cached so far.
    pub fn cached_decode_plans(&self) -> usize {
        self.decode_cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }
}

/// Rebuilds one erasure pattern: reads the `survivors()` shards, writes the `erased()` ones.
#[derive(Debug, Clone)]
pub struct Decoder {
    plan: Arc<DecodePlan>,
    isa: Isa,
}

impl Decoder {
    /// Shard indices read, in the order `decode_raw` expects their pointers.
    pub fn survivors(&self) -> &[usize] {
        &self.plan.survivors
    }

    /// The coordinator scheduling this decoder's calls.
    pub fn coordinator(&self) -> &Coordinator {
        &self.plan.coord
    }

    /// Shard indices rebuilt, in the order `decode_raw` expects their pointers.
    pub fn erased(&self) -> &[usize] {
        &self.plan.erased
    }

    /// Decode `srcs.len() / k` stripes: `srcs` holds k survivor pointers per stripe, `dsts`
    /// one pointer per erased shard per stripe.
    ///
    /// # Safety
    /// As [`Codec::encode_raw`], with k sources and `erased().len()` destinations per stripe.
    pub unsafe fn decode_raw(
        &self,
        len: usize,
        srcs: &[*const u8],
        dsts: &[*mut u8],
        threads: usize,
    ) -> Decision {
        let k = self.plan.survivors.len();
        let set = StripeSet {
            srcs,
            dsts,
            k,
            m: self.plan.erased.len(),
            len,
        };
        run_coordinated(
            &self.plan.coord,
            self.isa,
            &self.plan.coefs,
            &set,
            threads,
            false,
        )
    }
}

/// The last unmeasured single-stripe decision of this thread, and for which coordinator and
/// block length it was made.
#[derive(Clone, Copy)]
struct Reuse {
    coord: u64,
    len: usize,
    decision: Decision,
    left: u32,
}

thread_local! {
    // Without a destructor, so a call from another thread-local's destructor still finds it.
    static REUSE: std::cell::Cell<Option<Reuse>> = const { std::cell::Cell::new(None) };
}

/// This thread's reusable decision for a single-stripe call of `len`-byte blocks under
/// `coord`, taken (one call fewer left).
fn take_reuse(coord: &Coordinator, len: usize) -> Option<Decision> {
    REUSE.with(|r| {
        let mut v = r.get()?;
        if v.coord != coord.id() || v.len != len || v.left == 0 {
            return None;
        }
        v.left -= 1;
        r.set(Some(v));
        Some(v.decision)
    })
}

/// Run a stripe set under a coordinator: choose, execute, measure. A single stripe reuses this
/// thread's last unmeasured decision for the same coordinator and block length for up to
/// [`REUSE_CALLS`] calls: asking the coordinator takes its lock, whose locked operation waits
/// for the previous call's non-temporal parity stores to drain (a `Codec` fixed to a lone
/// schedule ran RS(12,8) 1 KiB stripes at 73% of the plain move where the same kernel called
/// directly ran at 100%; validation §5). Any schedule gives the same parity, so a decision
/// reused under a coordinator that has since changed its mind costs speed, never correctness.
///
/// # Safety
/// As [`prefetch::execute`].
pub(crate) unsafe fn run_coordinated(
    coord: &Coordinator,
    isa: Isa,
    coefs: &Coefs,
    set: &StripeSet,
    threads: usize,
    accumulate: bool,
) -> Decision {
    let stripes = set.count();
    if stripes == 0 {
        // Nothing to encode, and nothing for the coordinator to learn: timed as a call of one
        // stripe (its cost per line near zero), an empty call made the first call of a block
        // length's cache-residency probe conclude "resident", and the real batches after it
        // ran without prefetch until the verdict was voted out.
        return Decision {
            schedule: Schedule::VANILLA,
            pressure: false,
            cache_resident: false,
            threads,
            measured: false,
        };
    }
    let _in_call = CallInProgress::begin();
    let single = stripes == 1 && threads <= 1;
    if single {
        if let Some(d) = take_reuse(coord, set.len) {
            prefetch::execute(isa, coefs, set, &d.schedule, accumulate);
            return d;
        }
    }
    let mut ticket = coord.begin(set.len, stripes, threads);
    let d = ticket.decision;
    // (empty blocks have no first line to load: their pointers may dangle)
    if ticket.wants_latency() && set.len > 0 {
        ticket.set_latency(kernels::first_line_latency(set.srcs));
        ticket.restart();
    }
    if ticket.residency_probe() && !accumulate {
        kernels::own_lines(set.dsts, set.len);
        ticket.restart();
    }
    if d.measured {
        prefetch::execute(isa, coefs, set, &d.schedule, accumulate);
        coord.end(ticket, (stripes * set.k * set.len) as u64);
    } else {
        // Nothing to time: close the ticket first, as the ISA-L entry points do. Its locked
        // atomic operation after the kernel would wait for the kernel's parity stores to drain
        // (validation §5, "Only calls that run the tuned distance are timed").
        coord.end(ticket, 0);
        if single {
            REUSE.with(|r| {
                r.set(Some(Reuse {
                    coord: coord.id(),
                    len: set.len,
                    decision: d,
                    left: REUSE_CALLS,
                }))
            });
        }
        prefetch::execute(isa, coefs, set, &d.schedule, accumulate);
    }
    d
}
