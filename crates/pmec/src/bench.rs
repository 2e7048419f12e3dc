//! Benchmarks of pmec beside the system's ISA-L (dlopen'ed), in the same process, on the same
//! data: random-stripe encoding over a large pre-filled pool (the DIALGA methodology: k random
//! source blocks and m random parity blocks per stripe), or over a cache-resident set.
//! Every sweep is a plain function call returning data, for `pmlab ec bench` and
//! `pmlab reproduce`.

use crate::codec::Codec;
use crate::dialga::coordinator::Strategy;
use crate::dialga::prefetch::Schedule;
use crate::error::{invalid, Error, Result};
use crate::isal_dl::{IsaL, IsaLEncode};
use crate::kernels::{Body, Isa};
use crate::lrc::Lrc;
use crate::matrix::Matrix;
use crate::pool::ThreadPool;
use std::time::Instant;

/// A large, pre-filled, page-aligned region: data blocks are drawn from the first part, parity
/// written to the second.
pub struct DataPool {
    base: *mut u8,
    bytes: usize,
    data_bytes: usize,
}

// SAFETY: the mapping is owned by the pool; benchmarks write disjoint parity blocks.
unsafe impl Send for DataPool {}
// SAFETY: as above.
unsafe impl Sync for DataPool {}

impl DataPool {
    /// Map `data_bytes` of data (pre-filled with pseudo-random bytes) plus half as much for
    /// parity. Transparent huge pages are requested.
    pub fn new(data_bytes: usize) -> Result<DataPool> {
        if data_bytes < 1 << 20 {
            return invalid("benchmark pool must be at least 1 MiB");
        }
        let data_bytes = data_bytes & !0xfff;
        let bytes = data_bytes + data_bytes / 2;
        // SAFETY: anonymous private mapping, checked for failure.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::Io(format!(
                "cannot map {bytes} bytes for the benchmark pool"
            )));
        }
        // SAFETY: advice on our own mapping; failure is harmless.
        unsafe { libc::madvise(p, bytes, libc::MADV_HUGEPAGE) };
        let base = p as *mut u8;
        // SAFETY: the mapping is `bytes` long and exclusively ours.
        let all = unsafe { std::slice::from_raw_parts_mut(base as *mut u64, bytes / 8) };
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for w in all.iter_mut() {
            *w = xorshift(&mut x);
        }
        Ok(DataPool {
            base,
            bytes,
            data_bytes,
        })
    }

    /// Bytes of the data region.
    pub fn data_bytes(&self) -> usize {
        self.data_bytes
    }

    /// Bytes of the parity region.
    pub fn parity_bytes(&self) -> usize {
        self.bytes - self.data_bytes
    }
}

impl Drop for DataPool {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the region mapped in `new`.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.bytes) };
    }
}

/// What is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// RS encode.
    Encode,
    /// RS decode of this many lost data blocks (read k survivors, write the lost ones).
    Decode {
        /// Number of lost data blocks.
        erasures: usize,
    },
    /// LRC(k, m, l) encode (m global + l local parities).
    Lrc {
        /// Local groups.
        l: usize,
    },
}

/// One benchmark point.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// Data blocks per stripe.
    pub k: usize,
    /// Parity blocks per stripe.
    pub m: usize,
    /// Block size in bytes.
    pub block: usize,
    /// Encode, decode or LRC.
    pub workload: Workload,
    /// Worker threads (each side runs this many).
    pub threads: usize,
    /// Stripes per pmec call (1 = one call per stripe, like ISA-L).
    pub batch: usize,
    /// With several threads: split each batch across them by one [`ThreadPool`] call, as a
    /// caller of the pool API does (`threads` x fewer stripes per kernel call, one hand-off per
    /// batch), instead of one split per repetition in which every thread calls pmec per batch.
    pub split_batches: bool,
    /// Use a cache-resident working set instead of the random pool.
    pub in_cache: bool,
    /// pmec kernel (None = best).
    pub isa: Option<Isa>,
    /// pmec scheduling.
    pub strategy: Strategy,
    /// ISA-L entry point: None = dispatched `ec_encode_data`, or a variant ("avx2", ...).
    pub isal_variant: Option<String>,
    /// The ISA-L library to compare with (a path for `dlopen`); None = the system's
    /// `libisal.so.2`.
    pub isal_path: Option<String>,
    /// Source bytes processed per timed repetition.
    pub bytes_per_rep: usize,
    /// Timed repetitions per side (median reported).
    pub reps: usize,
    /// Also measure ISA-L.
    pub with_isal: bool,
    /// Seed for block selection.
    pub seed: u64,
}

impl Default for BenchConfig {
    fn default() -> Self {
        BenchConfig {
            k: 8,
            m: 4,
            block: 1024,
            workload: Workload::Encode,
            threads: 1,
            batch: 64,
            split_batches: false,
            in_cache: false,
            isa: None,
            strategy: Strategy::Auto,
            isal_variant: None,
            isal_path: None,
            bytes_per_rep: 256 << 20,
            reps: 5,
            with_isal: true,
            seed: 1,
        }
    }
}

impl BenchConfig {
    /// Short label, e.g. "RS(12,8) 1KiB enc t1 b64".
    pub fn label(&self) -> String {
        let code = match self.workload {
            Workload::Lrc { l } => format!("LRC({},{},{})", self.k, self.m, l),
            _ => format!("RS({},{})", self.k + self.m, self.k),
        };
        let op = match self.workload {
            Workload::Decode { erasures } => format!("dec{erasures}"),
            _ => "enc".into(),
        };
        let size = if self.block.is_multiple_of(1024) {
            format!("{}KiB", self.block / 1024)
        } else {
            format!("{}B", self.block)
        };
        let place = if self.in_cache { " in-cache" } else { "" };
        let split = if self.split_batches && self.threads > 1 {
            " split"
        } else {
            ""
        };
        // The threads that ran: the pool caps them at the cores the process may use.
        let ran = self.threads.min(crate::pool::available_cores());
        let asked = if ran < self.threads {
            format!(" ({} asked)", self.threads)
        } else {
            String::new()
        };
        format!(
            "{code} {size} {op} t{ran}{asked} b{}{split}{place}",
            self.batch
        )
    }
}

/// Throughput of repeated runs, in GB/s of source data (10^9 bytes per second).
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// Median of the runs.
    pub gbps: f64,
    /// Every run.
    pub runs: Vec<f64>,
}

impl Measurement {
    fn from_runs(mut runs: Vec<f64>) -> Measurement {
        let gbps = median(runs.clone());
        runs.shrink_to_fit();
        Measurement { gbps, runs }
    }

    /// The slowest run.
    pub fn min(&self) -> f64 {
        self.runs.iter().cloned().fold(f64::INFINITY, f64::min)
    }

    /// The fastest run.
    pub fn max(&self) -> f64 {
        self.runs.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
    }

    /// `median [min-max]`, two decimals.
    pub fn summary(&self) -> String {
        format!("{:.2} [{:.2}-{:.2}]", self.gbps, self.min(), self.max())
    }

    /// True when every run of `self` is faster than every run of `other`, or every one slower:
    /// the ranges do not overlap, so their ratio is distinguishable from 1.
    pub fn apart_from(&self, other: &Measurement) -> bool {
        self.min() > other.max() || self.max() < other.min()
    }

    /// (max - min) / median of the runs: how noisy the point is.
    pub fn spread(&self) -> f64 {
        if self.gbps > 0.0 {
            (self.max() - self.min()) / self.gbps
        } else {
            0.0
        }
    }
}

/// Result of one benchmark point.
#[derive(Debug, Clone)]
pub struct BenchResult {
    /// The configuration.
    pub config: BenchConfig,
    /// pmec.
    pub pmec: Measurement,
    /// ISA-L, when measured.
    pub isal: Option<Measurement>,
    /// pmec / ISA-L.
    pub ratio: Option<f64>,
    /// Why ISA-L was not measured, if it was not.
    pub isal_note: Option<String>,
    /// The schedule pmec's coordinator used last (debug format).
    pub schedule: String,
}

struct Stripes {
    srcs: Vec<*const u8>,
    dsts: Vec<*mut u8>,
    count: usize,
}

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn make_stripes(pool: &DataPool, cfg: &BenchConfig, outputs: usize) -> Result<Stripes> {
    let (k, b) = (cfg.k, cfg.block);
    let per_stripe = k * b;
    let want = cfg.bytes_per_rep.div_ceil(per_stripe).max(1);
    let mut seed = cfg.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let slot = b.next_multiple_of(64);
    let (pool_data, pool_parity) = (pool.data_bytes() / slot, pool.parity_bytes() / slot);
    let (data_slots, parity_slots) = if cfg.in_cache {
        // a set of stripes totalling about 1 MiB, reused round-robin (stays in L2), as many as
        // the pool holds (a block larger than the pool had pointers built past its end)
        let set = ((1 << 20) / ((k + outputs) * slot))
            .max(1)
            .min(pool_data / k.max(1))
            .min(pool_parity / outputs.max(1));
        (set * k, set * outputs)
    } else {
        (pool_data, pool_parity)
    };
    if data_slots < k || parity_slots < outputs {
        return invalid(format!("pool too small for k={k}, block={b}"));
    }
    let count = if cfg.in_cache {
        want
    } else {
        want.min(parity_slots / outputs.max(1))
    };
    // (fallible: a repetition larger than memory allows is an error, not an abort)
    let too_large = |_| {
        Error::InvalidParameter(format!(
            "{} MiB per repetition at k={k}, block={b}: too many stripes to list in memory",
            cfg.bytes_per_rep >> 20
        ))
    };
    let mut srcs = Vec::new();
    let mut dsts = Vec::new();
    srcs.try_reserve_exact(count.saturating_mul(k))
        .map_err(too_large)?;
    dsts.try_reserve_exact(count.saturating_mul(outputs))
        .map_err(too_large)?;
    // parity slots: a random permutation so no two stripes write the same block
    let mut perm: Vec<usize> = (0..parity_slots).collect();
    for i in (1..perm.len()).rev() {
        let j = (xorshift(&mut seed) % (i as u64 + 1)) as usize;
        perm.swap(i, j);
    }
    let data_base = pool.base;
    // SAFETY: the parity region starts data_bytes into the mapping.
    let parity_base = unsafe { pool.base.add(pool.data_bytes) };
    let mut chosen = Vec::with_capacity(k);
    for s in 0..count {
        if cfg.in_cache {
            let set = data_slots / k;
            let i = s % set;
            for j in 0..k {
                // SAFETY: slot index < data_slots within the data region.
                srcs.push(unsafe { data_base.add((i * k + j) * slot) } as *const u8);
            }
            for p in 0..outputs {
                // SAFETY: slot index < parity_slots within the parity region.
                dsts.push(unsafe { parity_base.add((i * outputs + p) * slot) });
            }
            continue;
        }
        chosen.clear();
        while chosen.len() < k {
            let x = (xorshift(&mut seed) % data_slots as u64) as usize;
            if !chosen.contains(&x) {
                chosen.push(x);
            }
        }
        for &x in &chosen {
            // SAFETY: x < data_slots.
            srcs.push(unsafe { data_base.add(x * slot) } as *const u8);
        }
        for p in 0..outputs {
            // SAFETY: perm values < parity_slots; distinct across stripes.
            dsts.push(unsafe { parity_base.add(perm[s * outputs + p] * slot) });
        }
    }
    Ok(Stripes { srcs, dsts, count })
}

struct SendPtrs<'a>(&'a Stripes);
// SAFETY: pointer lists are read-only; workers write disjoint parity blocks.
unsafe impl Sync for SendPtrs<'_> {}

/// The coefficient rows (outputs x k) a workload computes, for ISA-L's tables.
fn workload_rows(cfg: &BenchConfig) -> Result<(Matrix, usize)> {
    let (k, m) = (cfg.k, cfg.m);
    match cfg.workload {
        Workload::Encode => {
            let g = crate::matrix::generator(crate::MatrixKind::Cauchy, k, m)?;
            let rows: Vec<usize> = (k..k + m).collect();
            Ok((g.select_rows(&rows), m))
        }
        Workload::Decode { erasures } => {
            if erasures == 0 || erasures > m || erasures > k {
                return invalid(format!(
                    "decode needs 1..={} erasures, got {erasures}",
                    m.min(k)
                ));
            }
            let g = crate::matrix::generator(crate::MatrixKind::Cauchy, k, m)?;
            let erased: Vec<usize> = (0..erasures).collect();
            let survivors: Vec<usize> = (erasures..erasures + k).collect();
            let inv = g.select_rows(&survivors).invert()?;
            Ok((g.select_rows(&erased).mul(&inv)?, erasures))
        }
        Workload::Lrc { l } => {
            let lrc = Lrc::new(k, m, l)?;
            let rows: Vec<usize> = (k..k + m + l).collect();
            Ok((lrc.generator().select_rows(&rows), m + l))
        }
    }
}

enum Engine {
    Rs(Box<Codec>),
    Dec(crate::codec::Decoder),
    Lrc(Box<Lrc>),
}

/// Checks a benchmark point's parameters (code, block, threads, batch) without running it: what
/// [`run`] would refuse, found before a pool is filled.
pub fn validate(cfg: &BenchConfig) -> Result<()> {
    engine(cfg).map(|_| ())
}

/// The point's parameters checked, and the engine it times with its coefficient rows and output count.
fn engine(cfg: &BenchConfig) -> Result<(Engine, Matrix, usize)> {
    if cfg.block == 0 || cfg.threads == 0 || cfg.batch == 0 || cfg.reps == 0 {
        return invalid("block, threads, batch and reps must be positive");
    }
    // The block sizes `ec encode` takes (a stripe's pointers and slots are computed from them).
    if let Err(e) = crate::files::check_block(cfg.k, cfg.m, cfg.block) {
        return invalid(&e);
    }
    let (rows, outputs) = workload_rows(cfg)?;
    let mut builder = Codec::builder(cfg.k, cfg.m).strategy(cfg.strategy);
    if let Some(i) = cfg.isa {
        builder = builder.isa(i);
    }
    let engine = match cfg.workload {
        Workload::Encode => Engine::Rs(Box::new(builder.build()?)),
        Workload::Decode { erasures } => {
            let codec = builder.build()?;
            let erased: Vec<usize> = (0..erasures).collect();
            let d = codec.decoder(&erased)?;
            debug_assert_eq!(
                d.survivors(),
                &(erasures..erasures + cfg.k).collect::<Vec<_>>()[..]
            );
            Engine::Dec(d)
        }
        Workload::Lrc { l } => {
            let isa = cfg.isa.unwrap_or_else(Isa::best);
            Engine::Lrc(Box::new(Lrc::with_isa(cfg.k, cfg.m, l, isa)?))
        }
    };
    Ok((engine, rows, outputs))
}

/// Run one benchmark point.
pub fn run(pool: &DataPool, cfg: &BenchConfig) -> Result<BenchResult> {
    let (engine, rows, outputs) = engine(cfg)?;
    let stripes = make_stripes(pool, cfg, outputs)?;
    let bytes = (stripes.count * cfg.k * cfg.block) as f64;
    let tp = ThreadPool::new(cfg.threads);
    let shared = SendPtrs(&stripes);
    let (k, len, batch) = (cfg.k, cfg.block, cfg.batch);
    // one pmec call over stripes [s, s + n)
    let shared_ref = &shared;
    let call = |s: usize, n: usize| {
        let st = shared_ref.0;
        let src = &st.srcs[s * k..(s + n) * k];
        let dst = &st.dsts[s * outputs..(s + n) * outputs];
        // SAFETY: pool blocks of `len` bytes; parity blocks are distinct per stripe and never
        // overlap the data region.
        unsafe {
            match &engine {
                Engine::Rs(c) => c.encode_raw(len, src, dst, tp.effective_threads()),
                Engine::Dec(dec) => dec.decode_raw(len, src, dst, tp.effective_threads()),
                Engine::Lrc(l) => l.encode_raw(len, src, dst, tp.effective_threads()),
            };
        }
    };
    let run_pmec = || {
        let t0 = Instant::now();
        if cfg.split_batches {
            for s in (0..stripes.count).step_by(batch) {
                let n = batch.min(stripes.count - s);
                tp.split(n, |first, count| call(s + first, count));
            }
        } else {
            tp.split(stripes.count, |first, count| {
                for s in (first..first + count).step_by(batch) {
                    call(s, batch.min(first + count - s));
                }
            });
        }
        bytes / t0.elapsed().as_secs_f64() / 1e9
    };
    let lib = match &cfg.isal_path {
        Some(path) => Some(IsaL::get_path(path)?),
        None => IsaL::get(),
    };
    let (isal, isal_note) = match (cfg.with_isal, lib) {
        (false, _) => (None, Some("not requested".to_string())),
        (true, None) => (
            None,
            Some("libisal.so.2 not found: ISA-L comparison skipped".to_string()),
        ),
        (true, Some(l)) => {
            let f: Option<IsaLEncode> = match &cfg.isal_variant {
                None => Some(l.encode_fn()),
                Some(v) => l.encode_variant(v),
            };
            match f {
                Some(f) => (Some((l, f)), None),
                None => (
                    None,
                    Some(format!(
                        "ISA-L has no ec_encode_data_{:?}",
                        cfg.isal_variant
                    )),
                ),
            }
        }
    };
    let tables = isal.map(|(l, _)| l.init_tables(k, outputs, rows.as_bytes()));
    let run_isal = |f: IsaLEncode, tables: &[u8]| {
        let shared = &shared;
        let t0 = Instant::now();
        tp.split(stripes.count, |first, count| {
            let st = shared.0;
            for s in first..first + count {
                // SAFETY: as for pmec above; tables hold k*outputs*32 bytes.
                unsafe {
                    f.call(
                        len,
                        k,
                        outputs,
                        tables.as_ptr(),
                        &st.srcs[s * k..(s + 1) * k],
                        &st.dsts[s * outputs..(s + 1) * outputs],
                    )
                };
            }
        });
        bytes / t0.elapsed().as_secs_f64() / 1e9
    };
    // warm-up (lets the coordinator probe and tune), then alternate timed runs
    run_pmec();
    if let (Some((_, f)), Some(t)) = (isal, &tables) {
        run_isal(f, t);
    }
    let mut p = Vec::with_capacity(cfg.reps);
    let mut q = Vec::with_capacity(cfg.reps);
    for _ in 0..cfg.reps {
        p.push(run_pmec());
        if let (Some((_, f)), Some(t)) = (isal, &tables) {
            q.push(run_isal(f, t));
        }
    }
    let pmec = Measurement::from_runs(p);
    let isal = (!q.is_empty()).then(|| Measurement::from_runs(q));
    let ratio = isal.as_ref().map(|i| pmec.gbps / i.gbps);
    let mut schedule = String::new();
    let stats = match &engine {
        Engine::Rs(c) => c.coordinator().stats(),
        Engine::Dec(d) => d.coordinator().stats(),
        Engine::Lrc(l) => l.coordinator().stats(),
    };
    for ((_, pressure), st) in stats {
        let last = st.last_schedule.map_or("-".to_string(), |s| {
            let what = if s.ahead > 0 {
                format!("ahead={}", s.ahead)
            } else {
                format!("d={}", s.distance)
            };
            format!(
                "{what} {:?}{}{}{}{}",
                s.body,
                if s.prefetches() && s.hint == crate::kernels::Hint::L2 {
                    " L2"
                } else {
                    ""
                },
                if s.shuffle { " shuffled" } else { "" },
                s.xpline_distance
                    .map_or(String::new(), |x| format!(" d1={x}")),
                if s.nt { " nt" } else { "" }
            )
        });
        if !schedule.is_empty() {
            schedule.push_str("; ");
        }
        schedule.push_str(&format!(
            "{}calls {} (prefetch {}, cache-resident {}, searches {}) last: {last}",
            if pressure { "high-pressure " } else { "" },
            st.calls,
            st.prefetch_calls,
            st.cache_resident_calls,
            st.searches,
        ));
    }
    Ok(BenchResult {
        config: cfg.clone(),
        pmec,
        isal,
        ratio,
        isal_note,
        schedule,
    })
}

/// A reference for the memory system, not for pmec: the memory traffic of the encoding point
/// `cfg` (its random stripes: k source blocks read, m parity blocks written with non-temporal
/// stores) moved by a plain loop on `cfg.threads` threads, with the sources of the stripe two
/// ahead prefetched into L1 source by source as pmec's stripe-ahead schedule does, and XOR
/// instead of GF(2^8) arithmetic. Returns GB/s of source data (the median of 3 runs after a
/// warm-up). How this scales from one thread to two bounds what any encoder of those stripes
/// can get from a second core at that moment.
pub fn stripe_traffic_gbps(pool: &DataPool, cfg: &BenchConfig) -> Result<f64> {
    use core::arch::x86_64::{
        __m128i, _mm_loadu_si128, _mm_prefetch, _mm_setzero_si128, _mm_sfence, _mm_stream_si128,
        _mm_xor_si128, _MM_HINT_T0,
    };
    const AHEAD: usize = 2;
    if cfg.block < 64 || cfg.threads == 0 || cfg.k == 0 || cfg.m == 0 {
        return invalid("the traffic reference needs block >= 64, k, m and threads > 0");
    }
    let (k, m, lines) = (cfg.k, cfg.m, cfg.block / 64);
    let stripes = make_stripes(pool, cfg, m)?;
    let tp = ThreadPool::new(cfg.threads);
    let shared = SendPtrs(&stripes);
    let bytes = (stripes.count * k * lines * 64) as f64;
    let run = || {
        let shared = &shared;
        let t0 = Instant::now();
        tp.split(stripes.count, |first, count| {
            let st = shared.0;
            let end = first + count;
            for s in first..end {
                let srcs = &st.srcs[s * k..(s + 1) * k];
                let ahead = &st.srcs[(s + AHEAD).min(end - 1) * k..][..k];
                let dsts = &st.dsts[s * m..(s + 1) * m];
                for l in 0..lines {
                    // SAFETY: every source block has `block` readable bytes and every parity
                    // block `block` writable ones, 64-byte aligned (pool slots are multiples of
                    // 64 bytes in a page-aligned mapping), distinct per stripe and outside the
                    // data region; prefetching never faults.
                    unsafe {
                        let mut acc = [_mm_setzero_si128(); 4];
                        for (src, pf) in srcs.iter().zip(ahead) {
                            _mm_prefetch::<_MM_HINT_T0>(pf.add(64 * l) as *const i8);
                            let v = src.add(64 * l) as *const __m128i;
                            for (c, a) in acc.iter_mut().enumerate() {
                                *a = _mm_xor_si128(*a, _mm_loadu_si128(v.add(c)));
                            }
                        }
                        for d in dsts {
                            let q = d.add(64 * l) as *mut __m128i;
                            for (c, a) in acc.iter().enumerate() {
                                _mm_stream_si128(q.add(c), *a);
                            }
                        }
                    }
                }
            }
            // SAFETY: sfence has no preconditions; SSE is baseline on x86_64.
            unsafe { _mm_sfence() };
        });
        bytes / t0.elapsed().as_secs_f64() / 1e9
    };
    Ok(median_of_3(run))
}

/// A reference for the memory system, not for pmec: the fastest this machine moves the traffic
/// of RS(k+m, k) encoding with m = k/2 when nothing is random. `threads` threads each read a
/// contiguous share of the data region sequentially (16-byte loads folded with XOR) and write
/// half as many bytes to the parity region with non-temporal stores, as pmec's kernels do;
/// returns GB/s read (the median of 3 runs after a warm-up). Comparing its 2-thread and
/// 1-thread figures shows how much a second core adds to what the memory path delivers.
pub fn stream_gbps(pool: &DataPool, bytes: usize, threads: usize) -> f64 {
    use core::arch::x86_64::{
        __m128i, _mm_load_si128, _mm_sfence, _mm_stream_si128, _mm_xor_si128,
    };
    let threads = threads.max(1);
    // each share: whole 128-byte steps, within the data region and with room for its writes
    let per = (bytes.min(pool.data_bytes()).min(2 * pool.parity_bytes()) / threads) & !127;
    if per == 0 {
        return 0.0;
    }
    let tp = ThreadPool::new(threads);
    let base = SendPtr(pool.base);
    let (data_bytes, shares) = (pool.data_bytes(), tp.effective_threads());
    let run = || {
        let base = &base;
        let t0 = Instant::now();
        tp.split(shares, |first, count| {
            for w in first..first + count {
                // SAFETY: share w reads [w*per, (w+1)*per) of the data region and writes
                // [w*per/2, (w+1)*per/2) of the parity region; both lie in the pool's mapping
                // (per * threads <= data bytes and <= 2 * parity bytes), 16-byte aligned (the
                // mapping and `per` are), and shares do not overlap.
                unsafe {
                    let src = base.0.add(w * per) as *const __m128i;
                    let dst = base.0.add(data_bytes + w * per / 2) as *mut __m128i;
                    let mut acc = [_mm_load_si128(src); 4];
                    for i in 0..per / 128 {
                        let s = src.add(8 * i);
                        for (j, a) in acc.iter_mut().enumerate() {
                            *a = _mm_xor_si128(*a, _mm_load_si128(s.add(j)));
                            *a = _mm_xor_si128(*a, _mm_load_si128(s.add(j + 4)));
                        }
                        for (j, a) in acc.iter().enumerate() {
                            _mm_stream_si128(dst.add(4 * i + j), *a);
                        }
                    }
                    _mm_sfence();
                }
            }
        });
        (per * shares) as f64 / t0.elapsed().as_secs_f64() / 1e9
    };
    median_of_3(run)
}

/// One warm-up run of `run`, then the median of three timed ones (the reference readers).
fn median_of_3(run: impl Fn() -> f64) -> f64 {
    run();
    median((0..3).map(|_| run()).collect())
}

/// The median of `v` (the mean of the middle two for an even count; 0 for none).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The pool's base pointer, shared by the reader threads.
struct SendPtr(*mut u8);
// SAFETY: the threads only read through it, within the pool's mapping.
unsafe impl Sync for SendPtr {}

/// The parameter a sweep varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    /// Data blocks k.
    K,
    /// Parity blocks m.
    M,
    /// Block size in bytes.
    Block,
    /// Threads.
    Threads,
    /// Stripes per pmec call.
    Batch,
}

/// Run `base` once per value of `axis`.
pub fn sweep(
    pool: &DataPool,
    base: &BenchConfig,
    axis: Axis,
    values: &[usize],
) -> Result<Vec<BenchResult>> {
    values
        .iter()
        .map(|&v| {
            let mut c = base.clone();
            match axis {
                Axis::K => c.k = v,
                Axis::M => c.m = v,
                Axis::Block => c.block = v,
                Axis::Threads => c.threads = v,
                Axis::Batch => c.batch = v,
            }
            run(pool, &c)
        })
        .collect()
}

/// The paper's breakdown (Fig. 18) with fixed schedules at distance `d`: Vanilla (hardware
/// prefetcher starved by shuffling, no software prefetch), +SW, +HW (address order), +BF
/// (XPLine-first distance d + 4), then pmlab's stripe-ahead prefetch one stripe ahead into L2
/// and into L1 (beyond the paper; for batches the coordinator climbs among such schedules).
/// Returns (name, result) pairs; ISA-L is measured once, with the first.
pub fn breakdown(
    pool: &DataPool,
    base: &BenchConfig,
    d: usize,
) -> Result<Vec<(String, BenchResult)>> {
    let nt = true;
    let variants = [
        (
            "Vanilla",
            Schedule {
                distance: 0,
                xpline_distance: None,
                shuffle: true,
                body: Body::Line,
                nt,
                ..Schedule::VANILLA
            },
        ),
        (
            "+SW",
            Schedule {
                distance: d,
                xpline_distance: None,
                shuffle: true,
                body: Body::Line,
                nt,
                ..Schedule::VANILLA
            },
        ),
        (
            "+HW",
            Schedule {
                distance: d,
                xpline_distance: None,
                shuffle: false,
                body: Body::Line,
                nt,
                ..Schedule::VANILLA
            },
        ),
        (
            "+BF",
            Schedule {
                distance: d,
                xpline_distance: Some(d + 4),
                shuffle: false,
                body: Body::Line,
                nt,
                ..Schedule::VANILLA
            },
        ),
        (
            "stripe-ahead L2 (pmlab)",
            Schedule {
                ahead: 1,
                hint: crate::kernels::Hint::L2,
                nt,
                ..Schedule::VANILLA
            },
        ),
        (
            "stripe-ahead L1 (pmlab)",
            Schedule {
                ahead: 1,
                hint: crate::kernels::Hint::L1,
                nt,
                ..Schedule::VANILLA
            },
        ),
    ];
    let mut out = Vec::new();
    for (i, (name, s)) in variants.into_iter().enumerate() {
        let mut c = base.clone();
        c.strategy = Strategy::Fixed(s);
        c.with_isal = base.with_isal && i == 0;
        out.push((name.to_string(), run(pool, &c)?));
    }
    Ok(out)
}

/// Format results as a Markdown table: medians with the range of the runs, and a note saying
/// what the columns are.
pub fn markdown(results: &[BenchResult]) -> String {
    let mut s = String::from(
        "| point | pmec GB/s median [min-max] | ISA-L GB/s median [min-max] | pmec / ISA-L | runs each |\n\
         |---|---|---|---|---|\n",
    );
    for r in results {
        let (ig, ratio) = match &r.isal {
            Some(i) => (i.summary(), ratio_text(r)),
            None => ("-".into(), "-".into()),
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            r.config.label(),
            r.pmec.summary(),
            ig,
            ratio,
            r.pmec.runs.len()
        ));
    }
    s.push_str(
        "\nGB/s: 10^9 source bytes per second. Each side ran the stated number of timed \
         repetitions, pmec and ISA-L alternating; the median is shown with the slowest and \
         fastest run, and the ratio is of the medians (marked `~` where the two sides' runs \
         overlap, so the difference is not distinguishable).\n",
    );
    s
}

/// The pmec / ISA-L ratio of the medians, `~` appended where the runs overlap.
pub fn ratio_text(r: &BenchResult) -> String {
    match (&r.isal, r.ratio) {
        (Some(i), Some(x)) => {
            format!("{x:.2}x{}", if r.pmec.apart_from(i) { "" } else { " ~" })
        }
        _ => "n/a".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_shows_median_range_and_run_count_and_says_what_they_are() {
        let point = |isal: Vec<f64>| BenchResult {
            config: BenchConfig::default(),
            pmec: Measurement::from_runs(vec![9.0, 10.0, 12.0]),
            isal: Some(Measurement::from_runs(isal)),
            ratio: Some(2.0),
            isal_note: None,
            schedule: String::new(),
        };
        let t = markdown(&[point(vec![4.0, 5.0, 5.5])]);
        assert!(
            t.contains("| 10.00 [9.00-12.00] | 5.00 [4.00-5.50] | 2.00x | 3 |"),
            "{t}"
        );
        assert!(
            t.contains("median is shown with the slowest and fastest run"),
            "{t}"
        );
        // Overlapping runs: the ratio is marked as not distinguishable.
        let t = markdown(&[point(vec![8.0, 9.5, 13.0])]);
        assert!(t.contains("| 2.00x ~ |"), "{t}");
    }
}
