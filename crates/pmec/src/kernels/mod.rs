//! GF(2^8) multiply-accumulate kernels, one file per instruction set, one signature, one
//! dispatch point.
//!
//! Every kernel computes, for each destination row p, `dst[p] = sum_j coef[p][j] * src[j]`
//! (or `dst[p] ^= ...` when accumulating) over a list of *bodies*: 64 B cache-line rows
//! ([`Body::Line`]) or 256 B XPLine rows ([`Body::XpLine`]). Within a body every source is
//! loaded once and multiplied into up to `max_group` parity accumulators held in registers;
//! larger parity counts are done in groups over the same body, which is then in L1, so each
//! source byte is read from memory once per stripe. Before a body is computed the kernel issues
//! the plan's software prefetches for it ([`Prefetch`]): either the addresses listed for it (built
//! by the DIALGA layer outside the hot loop), or the same body of another stripe's sources; the
//! choice is made once per call, so the inner loop has no branches for prefetching.

pub mod avx2;
pub mod avx512;
pub mod by_source;
pub mod gfni;
pub mod scalar;
pub mod ssse3;

use crate::error::{Error, Result};
use crate::gf;
use crate::matrix::Matrix;
use std::sync::OnceLock;

/// Instruction set a kernel is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Isa {
    /// Portable table-lookup code.
    Scalar,
    /// 16-byte split-nibble `pshufb`.
    Ssse3,
    /// 32-byte split-nibble `vpshufb`.
    Avx2,
    /// 64-byte split-nibble `vpshufb` (AVX-512BW).
    Avx512,
    /// 32-byte `vgf2p8affineqb` (GFNI + AVX2).
    Avx2Gfni,
    /// 64-byte `vgf2p8affineqb` (GFNI + AVX-512).
    Avx512Gfni,
}

/// All kernels, slowest first.
pub const ALL_ISAS: [Isa; 6] = [
    Isa::Scalar,
    Isa::Ssse3,
    Isa::Avx2,
    Isa::Avx512,
    Isa::Avx2Gfni,
    Isa::Avx512Gfni,
];

impl Isa {
    /// Short name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Ssse3 => "ssse3",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
            Isa::Avx2Gfni => "avx2-gfni",
            Isa::Avx512Gfni => "avx512-gfni",
        }
    }

    /// Parse a name printed by [`Isa::name`].
    pub fn parse(s: &str) -> Result<Isa> {
        ALL_ISAS.into_iter().find(|i| i.name() == s).ok_or_else(|| {
            Error::InvalidParameter(format!(
                "unknown instruction set '{s}' (one of: scalar, ssse3, avx2, avx512, avx2-gfni, avx512-gfni)"
            ))
        })
    }

    /// Whether this CPU (and OS) supports the kernel.
    pub fn available(self) -> bool {
        match self {
            Isa::Scalar => true,
            Isa::Ssse3 => std::is_x86_feature_detected!("ssse3"),
            Isa::Avx2 => std::is_x86_feature_detected!("avx2"),
            Isa::Avx512 => {
                std::is_x86_feature_detected!("avx512f")
                    && std::is_x86_feature_detected!("avx512bw")
            }
            Isa::Avx2Gfni => {
                std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("gfni")
            }
            Isa::Avx512Gfni => Isa::Avx512.available() && std::is_x86_feature_detected!("gfni"),
        }
    }

    /// The fastest kernel this CPU supports (detected once). `PMEC_ISA=<name>` overrides it.
    pub fn best() -> Isa {
        static BEST: OnceLock<Isa> = OnceLock::new();
        *BEST.get_or_init(|| {
            if let Ok(s) = std::env::var("PMEC_ISA") {
                if let Ok(i) = Isa::parse(&s) {
                    if i.available() {
                        return i;
                    }
                }
            }
            ALL_ISAS
                .into_iter()
                .rev()
                .find(|i| i.available())
                .unwrap_or(Isa::Scalar)
        })
    }

    /// Kernels usable on this machine.
    pub fn available_all() -> Vec<Isa> {
        ALL_ISAS.into_iter().filter(|i| i.available()).collect()
    }

    /// Fail with a clear message if the kernel cannot run here.
    pub fn require(self) -> Result<Isa> {
        if self.available() {
            Ok(self)
        } else {
            Err(Error::UnsupportedIsa(format!(
                "this CPU lacks the features for {}",
                self.name()
            )))
        }
    }

    /// Whether the kernel reads the split-nibble tables (and so can run ISA-L tables as given).
    pub fn uses_nibble_tables(self) -> bool {
        matches!(self, Isa::Ssse3 | Isa::Avx2 | Isa::Avx512)
    }
}

/// Loop-body granularity of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Body {
    /// One 64 B cache line of every source per iteration.
    Line,
    /// One 256 B XPLine of every source per iteration (DIALGA's high-pressure body).
    XpLine,
}

impl Body {
    /// Bytes of each source covered by one body.
    pub const fn bytes(self) -> usize {
        match self {
            Body::Line => 64,
            Body::XpLine => 256,
        }
    }

    /// Cache lines of each source covered by one body.
    pub const fn lines(self) -> usize {
        self.bytes() / 64
    }
}

/// Coefficients of a `rows x cols` matrix prepared for every kernel: the raw bytes, ISA-L's
/// 32-byte split-nibble tables and GFNI affine matrices.
#[derive(Debug, Clone)]
pub struct Coefs {
    rows: usize,
    cols: usize,
    coef: Vec<u8>,
    nibble: Vec<u8>,
    affine: Vec<u64>,
    /// Every nibble table is the one `coef` gives (false for hand-made ISA-L tables, whose
    /// bytes the split-nibble and scalar kernels use as given).
    canonical: bool,
    /// The coefficients of each group of `g` consecutive sources, index `g - 1`, made on first
    /// use ([`column_groups`](Self::column_groups)); `None` where the memory could not be had.
    groups: [OnceLock<Option<Box<[Coefs]>>>; by_source::MAX_GROUP],
}

impl Coefs {
    /// Prepare all rows of a matrix.
    pub fn new(m: &Matrix) -> Coefs {
        Self::from_bytes(m.rows(), m.cols(), m.as_bytes())
    }

    /// Prepare from row-major coefficient bytes (`rows * cols` of them).
    pub fn from_bytes(rows: usize, cols: usize, coef: &[u8]) -> Coefs {
        assert_eq!(coef.len(), rows * cols, "coefficient count");
        let mut nibble = Vec::with_capacity(coef.len() * 32);
        for &c in coef {
            nibble.extend_from_slice(&gf::nibble_table(c));
        }
        let affine = affine_by_source(rows, cols, coef);
        Coefs {
            rows,
            cols,
            coef: coef.to_vec(),
            nibble,
            affine,
            canonical: true,
            groups: Default::default(),
        }
    }

    /// Use ISA-L tables exactly as a caller built them (32 bytes per coefficient, row-major).
    /// The coefficient is byte 1 of each table (as in ISA-L's base code); it is used only when
    /// every table is exactly what `ec_init_tables` builds from it (`canonical`), else every
    /// kernel uses the 32 bytes as given.
    pub fn from_isal_tables(rows: usize, cols: usize, tables: &[u8]) -> Coefs {
        assert!(tables.len() >= rows * cols * 32, "table length");
        let mut c = Coefs::empty();
        c.refill_with(rows, cols, |nibble| {
            nibble.extend_from_slice(&tables[..rows * cols * 32])
        });
        c
    }

    /// No coefficients yet (0 x 0): storage for [`refill_with`](Self::refill_with).
    pub const fn empty() -> Coefs {
        Coefs {
            rows: 0,
            cols: 0,
            coef: Vec::new(),
            nibble: Vec::new(),
            affine: Vec::new(),
            canonical: true,
            groups: [const { OnceLock::new() }; by_source::MAX_GROUP],
        }
    }

    /// Makes these the coefficients of the `rows x cols` ISA-L tables that `fill` appends to
    /// the (emptied) table bytes, as [`from_isal_tables`](Self::from_isal_tables) does, reusing
    /// this value's storage: with capacity for them it allocates nothing (ISA-L's entry points
    /// allocate nothing, and a caller may be a signal handler that interrupted `malloc`).
    pub fn refill_with(&mut self, rows: usize, cols: usize, fill: impl FnOnce(&mut Vec<u8>)) {
        let n = rows * cols;
        self.nibble.clear();
        fill(&mut self.nibble);
        assert_eq!(self.nibble.len(), n * 32, "table length");
        self.coef.clear();
        self.coef.extend(self.nibble.chunks_exact(32).map(|t| t[1]));
        self.affine.clear();
        self.affine
            .extend(affine_by_source_iter(rows, cols, &self.coef));
        self.canonical = self
            .coef
            .iter()
            .zip(self.nibble.chunks_exact(32))
            .all(|(&c, t)| t == gf::nibble_table(c));
        self.rows = rows;
        self.cols = cols;
        for g in &mut self.groups {
            g.take();
        }
    }

    /// Makes room for `rows x cols` coefficients, so that [`refill_with`](Self::refill_with)
    /// of them allocates nothing; false where the memory cannot be had. Either way the values
    /// may be gone: refill before use.
    pub fn try_reserve_for(&mut self, rows: usize, cols: usize) -> bool {
        fn room<T>(v: &mut Vec<T>, n: usize) -> bool {
            n <= v.capacity() || {
                v.clear();
                v.try_reserve_exact(n).is_ok()
            }
        }
        let n = rows * cols;
        room(&mut self.nibble, n * 32) && room(&mut self.coef, n) && room(&mut self.affine, n)
    }

    /// Whether every table is the one its coefficient gives (see [`from_isal_tables`]).
    ///
    /// [`from_isal_tables`]: Self::from_isal_tables
    pub fn canonical(&self) -> bool {
        self.canonical
    }

    /// The 32-byte split-nibble table of coefficient (row, col), as given.
    pub fn nibble_table(&self, row: usize, col: usize) -> &[u8] {
        let i = (row * self.cols + col) * 32;
        &self.nibble[i..i + 32]
    }

    /// Number of destination rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of sources.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Raw coefficient (row, col).
    pub fn coef(&self, row: usize, col: usize) -> u8 {
        self.coef[row * self.cols + col]
    }

    pub(crate) fn nibble_ptr(&self) -> *const u8 {
        self.nibble.as_ptr()
    }

    /// The coefficients of the sources taken `g` at a time (`1..=by_source::MAX_GROUP`): one
    /// `rows x g` value per group, the last holding what is left. Made on the first call for
    /// each `g` (without aborting where memory is short: `None` then, and for good).
    pub fn column_groups(&self, g: usize) -> Option<&[Coefs]> {
        let cell = self.groups.get(g.checked_sub(1)?)?;
        cell.get_or_init(|| {
            let mut out = Vec::new();
            out.try_reserve_exact(self.cols.div_ceil(g)).ok()?;
            for j0 in (0..self.cols).step_by(g) {
                let c = g.min(self.cols - j0);
                let n = self.rows * c;
                let mut part = Coefs::empty();
                if !part.try_reserve_for(self.rows, c) {
                    return None;
                }
                for r in 0..self.rows {
                    let row = r * self.cols + j0;
                    part.coef.extend_from_slice(&self.coef[row..row + c]);
                    part.nibble
                        .extend_from_slice(&self.nibble[row * 32..(row + c) * 32]);
                }
                part.affine
                    .extend_from_slice(&self.affine[j0 * self.rows..(j0 + c) * self.rows]);
                debug_assert_eq!(part.coef.len(), n);
                part.rows = self.rows;
                part.cols = c;
                part.canonical = self.canonical;
                out.push(part);
            }
            Some(out.into_boxed_slice())
        })
        .as_deref()
    }

    /// The GFNI matrices, source-major: (row, col) at `col * rows + row`, so that the
    /// matrices one source needs for consecutive rows lie side by side.
    pub(crate) fn affine_ptr(&self) -> *const u64 {
        self.affine.as_ptr()
    }
}

/// The GFNI affine matrices of row-major `coef` (`rows x cols`), source-major (see
/// [`Coefs::affine_ptr`]).
fn affine_by_source(rows: usize, cols: usize, coef: &[u8]) -> Vec<u64> {
    affine_by_source_iter(rows, cols, coef).collect()
}

/// The GFNI affine matrices of `coef` (`rows x cols`, row-major), source by source.
fn affine_by_source_iter(rows: usize, cols: usize, coef: &[u8]) -> impl Iterator<Item = u64> + '_ {
    (0..cols).flat_map(move |j| (0..rows).map(move |r| gf::affine_matrix(coef[r * cols + j])))
}

/// Brings `len` bytes of each source in as `how` says (see
/// [`Fetch`](crate::dialga::prefetch::Fetch)), source by source or in row order.
///
/// # Safety
/// Every source readable for `len` bytes.
#[inline]
pub unsafe fn fetch(srcs: &[*const u8], len: usize, how: crate::dialga::prefetch::Fetch) {
    use crate::dialga::prefetch::Fetch;
    match how {
        Fetch::None => {}
        Fetch::Load => touch(srcs, len),
        Fetch::Prefetch(hint) => prefetch_rows(srcs, len, hint),
        Fetch::Pipelined { hint, ahead, rows } => {
            let head = len.min(ahead as usize);
            if rows {
                prefetch_rows(srcs, head, hint)
            } else {
                prefetch_sources(srcs, head, hint)
            }
        }
        Fetch::BySource { group, ahead } => {
            by_source::prefetch_head(srcs, len, group as usize, ahead as usize)
        }
    }
}

/// Software-prefetches the first `len` bytes of every source into `hint`'s level, source by
/// source.
#[inline]
fn prefetch_sources(srcs: &[*const u8], len: usize, hint: Hint) {
    for &s in srcs {
        for o in (0..len).step_by(64) {
            prefetch_line(s.wrapping_add(o), hint);
        }
    }
}

/// Software-prefetches the first `len` bytes of every source into `hint`'s level in row order:
/// line 0 of every source, then line 1 of every source, and so on, one prefetch per visit of a
/// source. The number of lines per visit (1) is hidden from the compiler, so that it does not
/// unroll the loop over the sources into a burst of prefetches: on the AMD Zen 4 VM the burst
/// (eight back to back, about one a cycle) ran RS(12,8) 1 KiB single calls at 80-85% of the
/// plain move, this loop (about one prefetch per 3-4 cycles) at 95-105%, a loop slowed further
/// by a dependency through memory per prefetch at 86% (validation §5; the likely cause, the
/// core's few miss buffers turning a burst's excess prefetches away, is not confirmed without
/// hardware counters).
#[inline]
fn prefetch_rows(srcs: &[*const u8], len: usize, hint: Hint) {
    let per_visit = std::hint::black_box(1usize);
    let mut o = 0;
    while o < len {
        for &s in srcs {
            for l in 0..per_visit {
                prefetch_line(s.wrapping_add(o + 64 * l), hint);
            }
        }
        o += 64 * per_visit;
    }
}

/// Loads one byte of every 64-byte line of each source (`len` bytes each), source by source,
/// so that the lines are in cache when a kernel reads them.
///
/// # Safety
/// Every source readable for `len` bytes.
#[inline]
pub unsafe fn touch(srcs: &[*const u8], len: usize) {
    let mut sum = 0u8;
    for &s in srcs {
        let mut o = 0;
        while o < len {
            // SAFETY: within the source's `len` bytes (a byte needs no alignment); a volatile
            // read is never elided.
            sum = sum.wrapping_add(std::ptr::read_volatile(s.add(o)));
            o += 64;
        }
    }
    std::hint::black_box(sum);
}

/// Which cache level software prefetches fill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Hint {
    /// `prefetcht0`: every level down to L1 (what DIALGA issues).
    #[default]
    L1,
    /// `prefetcht1`: L2 and below. The line does not hold one of the core's few L1 miss
    /// buffers while it is in flight, so many more prefetches can be outstanding; the load
    /// then finds the line in L2.
    L2,
}

/// The software prefetches a kernel call issues, body by body.
#[derive(Debug, Clone, Copy, Default)]
pub enum Prefetch<'a> {
    /// None.
    #[default]
    None,
    /// `k * body.lines()` addresses per body (`pf[i * k * lines ..]`), in any order, issued
    /// when the body begins.
    Listed(&'a [*const u8]),
    /// The same body (`base + offs[i]`, every line) of these `k` source blocks: another stripe
    /// of the same geometry, usually the one a few stripes ahead in a batch.
    Ahead(&'a [*const u8]),
}

/// What a kernel call processes: bodies at `base + offs[i]` of every source/destination, and
/// the software prefetches to issue with each body.
#[derive(Debug, Clone, Copy)]
pub struct Plan<'a> {
    /// Byte offsets of the bodies, relative to `base`.
    pub offs: &'a [u32],
    /// Added to every offset.
    pub base: usize,
    /// Software prefetches.
    pub prefetch: Prefetch<'a>,
    /// Cache level the prefetches fill.
    pub hint: Hint,
    /// Body granularity.
    pub body: Body,
}

impl Plan<'_> {
    /// A plan without software prefetch.
    pub fn plain(offs: &[u32], base: usize, body: Body) -> Plan<'_> {
        Plan {
            offs,
            base,
            prefetch: Prefetch::None,
            hint: Hint::L1,
            body,
        }
    }
}

/// Number of bodies in each identity-offset table (and so the most one plan chunk covers).
pub const IDENT_BODIES: usize = 4096;

/// Offsets 0, b, 2b, ... for a body size b (cached).
pub fn identity_offsets(body: Body) -> &'static [u32] {
    static LINE: OnceLock<Vec<u32>> = OnceLock::new();
    static XP: OnceLock<Vec<u32>> = OnceLock::new();
    let cell = match body {
        Body::Line => &LINE,
        Body::XpLine => &XP,
    };
    cell.get_or_init(|| {
        (0..IDENT_BODIES as u32)
            .map(|i| i * body.bytes() as u32)
            .collect()
    })
}

/// Body visit permutation within groups of 8 bodies used by DIALGA's shuffle mapping: no two
/// consecutive visits are adjacent, so the L2 stream prefetcher sees no ascending run.
pub const SHUFFLE: [u32; 8] = [0, 5, 2, 7, 4, 1, 6, 3];

/// Offsets of bodies visited in [`SHUFFLE`] order, groups of 8 (cached, `IDENT_BODIES` long).
pub fn shuffled_offsets(body: Body) -> &'static [u32] {
    static LINE: OnceLock<Vec<u32>> = OnceLock::new();
    static XP: OnceLock<Vec<u32>> = OnceLock::new();
    let cell = match body {
        Body::Line => &LINE,
        Body::XpLine => &XP,
    };
    cell.get_or_init(|| {
        (0..IDENT_BODIES as u32)
            .map(|i| (i / 8 * 8 + SHUFFLE[(i % 8) as usize]) * body.bytes() as u32)
            .collect()
    })
}

/// Run `plan` with the given kernel.
///
/// # Safety
/// Every `srcs[j] + base + off .. + body.bytes()` must be readable and every
/// `dsts[p] + base + off ..` writable (and not overlapping the sources) for all offsets in the
/// plan; `coefs` must be `dsts.len() x srcs.len()`; `isa` must be available; when `nt` is set
/// all destination body addresses must be 64-byte aligned. Prefetch addresses may be anything.
pub unsafe fn run_plan(
    isa: Isa,
    srcs: &[*const u8],
    dsts: &[*mut u8],
    coefs: &Coefs,
    plan: &Plan,
    accumulate: bool,
    nt: bool,
) {
    debug_assert_eq!(coefs.rows(), dsts.len());
    debug_assert_eq!(coefs.cols(), srcs.len());
    if dsts.is_empty() || plan.offs.is_empty() {
        return;
    }
    match isa {
        Isa::Scalar => scalar::run(srcs, dsts, coefs, plan, accumulate),
        Isa::Ssse3 => ssse3::run(srcs, dsts, coefs, plan, accumulate),
        Isa::Avx2 => avx2::run(srcs, dsts, coefs, plan, accumulate, nt),
        Isa::Avx512 => avx512::run(srcs, dsts, coefs, plan, accumulate, nt),
        Isa::Avx2Gfni => gfni::run256(srcs, dsts, coefs, plan, accumulate, nt),
        Isa::Avx512Gfni => gfni::run512(srcs, dsts, coefs, plan, accumulate, nt),
    }
}

/// Encode bytes `[0, len)` in address order, no prefetch: 256 B bodies, then whole 64 B rows
/// with `isa`, the tail with scalar code.
///
/// # Safety
/// Every source must be readable and every destination writable for `len` bytes; no
/// destination may overlap a source; `coefs` must be `dsts.len() x srcs.len()`.
pub unsafe fn encode_linear(
    isa: Isa,
    srcs: &[*const u8],
    dsts: &[*mut u8],
    coefs: &Coefs,
    len: usize,
    accumulate: bool,
    nt: bool,
) {
    encode_linear_body(isa, srcs, dsts, coefs, len, accumulate, nt, Body::XpLine);
}

/// [`encode_linear`] with loop bodies of at most `body`: 256-byte bodies where they fit (a
/// quarter of the per-body set-up, faster on cached data), or 64-byte rows only (faster when
/// the hardware prefetcher streams long blocks in, validation §5).
///
/// # Safety
/// As [`encode_linear`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn encode_linear_body(
    isa: Isa,
    srcs: &[*const u8],
    dsts: &[*mut u8],
    coefs: &Coefs,
    len: usize,
    accumulate: bool,
    nt: bool,
    body: Body,
) {
    let isa = if isa.available() { isa } else { Isa::Scalar };
    encode_bodies(isa, srcs, dsts, coefs, len, accumulate, nt, body, None);
}

/// [`encode_linear_body`] (not accumulating) for an `isa` the caller knows is available, without
/// the availability check, which in-cache single calls would pay on every stripe; with the
/// in-kernel part of `fetch` (the caller has done the rest, see [`fetch`]).
///
/// # Safety
/// As [`encode_linear`]; `isa` must be available on this CPU.
#[allow(clippy::too_many_arguments)]
pub unsafe fn encode_available(
    isa: Isa,
    srcs: &[*const u8],
    dsts: &[*mut u8],
    coefs: &Coefs,
    len: usize,
    nt: bool,
    body: Body,
    fetch: crate::dialga::prefetch::Fetch,
) {
    encode_fetched(isa, srcs, dsts, coefs, len, false, nt, body, fetch);
}

/// The kernel part of a stripe fetched as `fetch` says (the caller has done [`fetch`]): the
/// source-major order where [`Fetch::BySource`] serves the call (not accumulating), else
/// [`encode_bodies`] in address order with `fetch`'s in-kernel prefetch. What both the ISA-L
/// entry points and the schedule executor run for a lone-stripe schedule.
///
/// # Safety
/// As [`encode_available`].
///
/// [`Fetch::BySource`]: crate::dialga::prefetch::Fetch::BySource
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn encode_fetched(
    isa: Isa,
    srcs: &[*const u8],
    dsts: &[*mut u8],
    coefs: &Coefs,
    len: usize,
    accumulate: bool,
    nt: bool,
    body: Body,
    fetch: crate::dialga::prefetch::Fetch,
) {
    if let crate::dialga::prefetch::Fetch::BySource { group, ahead } = fetch {
        let (g, a) = (group as usize, ahead as usize);
        if !accumulate && by_source::encode(isa, srcs, dsts, coefs, len, nt, body, g, a) {
            return;
        }
    }
    encode_bodies(
        isa,
        srcs,
        dsts,
        coefs,
        len,
        accumulate,
        nt,
        body,
        fetch.in_kernel(),
    );
}

/// Whether parity may be stored non-temporally: asked for (`nt`) and every destination 64-byte
/// aligned, as the streaming stores need.
pub(crate) fn nt_usable(nt: bool, dsts: &[*mut u8]) -> bool {
    nt && dsts.iter().all(|d| (*d as usize).is_multiple_of(64))
}

/// Most sources a stripe's own pipelined prefetch serves (wider stripes run without it).
const PIPELINED_MAX_K: usize = 256;

/// [`encode_linear_body`] for an available `isa`: bodies of at most `body` in address order (a
/// block of whole bodies is one kernel call), then the byte tail. With `ahead` = (d, level),
/// each whole body prefetches the lines `d` bytes further on in each source while that line
/// is still within the source (a stripe's own pipelined prefetch, [`Fetch::Pipelined`]).
///
/// [`Fetch::Pipelined`]: crate::dialga::prefetch::Fetch::Pipelined
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn encode_bodies(
    isa: Isa,
    srcs: &[*const u8],
    dsts: &[*mut u8],
    coefs: &Coefs,
    len: usize,
    accumulate: bool,
    nt: bool,
    body: Body,
    ahead: Option<(usize, Hint)>,
) {
    let nt = nt_usable(nt, dsts);
    // The usual block, whole bodies: one kernel call and nothing after it (single calls pay the
    // general loop's set-up on every stripe otherwise).
    let whole = len / body.bytes();
    if len == whole * body.bytes() && (1..=IDENT_BODIES).contains(&whole) {
        let offs = &identity_offsets(body)[..whole];
        // Bodies whose lines `d` bytes on are still in the source prefetch them; the rest were
        // prefetched by earlier bodies (or before the kernel).
        let split = match ahead {
            Some((d, _)) if d < len && srcs.len() <= PIPELINED_MAX_K => (len - d) / body.bytes(),
            _ => 0,
        };
        if split > 0 {
            let (d, hint) = ahead.expect("split > 0 needs a distance");
            // (not zero-filled: that would write 2 KiB on every call)
            let mut later = [core::mem::MaybeUninit::<*const u8>::uninit(); PIPELINED_MAX_K];
            for (l, s) in later.iter_mut().zip(srcs) {
                l.write(s.wrapping_add(d));
            }
            // SAFETY: the first `srcs.len()` (at most PIPELINED_MAX_K) entries were written.
            let later = std::slice::from_raw_parts(later.as_ptr().cast::<*const u8>(), srcs.len());
            let plan = Plan {
                offs: &offs[..split],
                base: 0,
                prefetch: Prefetch::Ahead(later),
                hint,
                body,
            };
            run_plan(isa, srcs, dsts, coefs, &plan, accumulate, nt);
        }
        if split < whole {
            let plan = Plan::plain(&offs[split..], 0, body);
            run_plan(isa, srcs, dsts, coefs, &plan, accumulate, nt);
        }
        if nt {
            fence();
        }
        return;
    }
    let bodies: &[Body] = match body {
        Body::XpLine => &[Body::XpLine, Body::Line],
        Body::Line => &[Body::Line],
    };
    let mut done = 0;
    for &body in bodies {
        let bb = body.bytes();
        let count = (len - done) / bb;
        let offs = identity_offsets(body);
        let mut b = 0;
        while b < count {
            let n = (count - b).min(IDENT_BODIES);
            let plan = Plan::plain(&offs[..n], done + b * bb, body);
            run_plan(isa, srcs, dsts, coefs, &plan, accumulate, nt);
            b += n;
        }
        done += count * bb;
    }
    let rows = done / 64;
    if nt {
        fence();
    }
    if rows * 64 < len {
        scalar::range(srcs, dsts, coefs, rows * 64, len, accumulate);
    }
}

/// Whether `a` and `b` hold the same bytes (false when their lengths differ). The ISA-L entry
/// points compare the caller's tables with their cached copy on every call (1 KiB at RS(12,8)),
/// so this runs on every single-call stripe: with AVX-512 or AVX2 it folds the differences of
/// whole vectors and tests once at the end, where `memcmp` tests every vector.
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let n = a.len();
    // SAFETY: both slices hold n bytes; the kernels read below n only.
    let head = unsafe {
        if n >= 64 && std::is_x86_feature_detected!("avx512f") {
            same_avx512(a.as_ptr(), b.as_ptr(), n / 64 * 64)
        } else if n >= 32 && std::is_x86_feature_detected!("avx2") {
            same_avx2(a.as_ptr(), b.as_ptr(), n / 32 * 32)
        } else {
            Some(0)
        }
    };
    match head {
        Some(done) => a[done..] == b[done..],
        None => false,
    }
}

/// The first `n` bytes (a multiple of 64) of `a` and `b` are equal: `Some(n)`, else `None`.
/// Four vectors per step, each folded in with one ternary-logic instruction (`d | (x ^ y)`).
#[target_feature(enable = "avx512f")]
unsafe fn same_avx512(a: *const u8, b: *const u8, n: usize) -> Option<usize> {
    use core::arch::x86_64::*;
    const OR_XOR: i32 = 0xf6; // a | (b ^ c)
    let (mut d0, mut d1) = (_mm512_setzero_si512(), _mm512_setzero_si512());
    let mut o = 0;
    while o + 256 <= n {
        let ld = |p: *const u8, i: usize| _mm512_loadu_si512(p.add(o + 64 * i) as *const _);
        d0 = _mm512_ternarylogic_epi64::<OR_XOR>(d0, ld(a, 0), ld(b, 0));
        d1 = _mm512_ternarylogic_epi64::<OR_XOR>(d1, ld(a, 1), ld(b, 1));
        d0 = _mm512_ternarylogic_epi64::<OR_XOR>(d0, ld(a, 2), ld(b, 2));
        d1 = _mm512_ternarylogic_epi64::<OR_XOR>(d1, ld(a, 3), ld(b, 3));
        o += 256;
    }
    while o < n {
        let x = _mm512_loadu_si512(a.add(o) as *const _);
        d0 = _mm512_ternarylogic_epi64::<OR_XOR>(d0, x, _mm512_loadu_si512(b.add(o) as *const _));
        o += 64;
    }
    let d = _mm512_or_si512(d0, d1);
    (_mm512_test_epi64_mask(d, d) == 0).then_some(n)
}

/// The first `n` bytes (a multiple of 32) of `a` and `b` are equal: `Some(n)`, else `None`.
#[target_feature(enable = "avx2")]
unsafe fn same_avx2(a: *const u8, b: *const u8, n: usize) -> Option<usize> {
    use core::arch::x86_64::*;
    let (mut d0, mut d1) = (_mm256_setzero_si256(), _mm256_setzero_si256());
    let mut o = 0;
    while o + 128 <= n {
        let ld = |p: *const u8, i: usize| _mm256_loadu_si256(p.add(o + 32 * i) as *const _);
        d0 = _mm256_or_si256(d0, _mm256_xor_si256(ld(a, 0), ld(b, 0)));
        d1 = _mm256_or_si256(d1, _mm256_xor_si256(ld(a, 1), ld(b, 1)));
        d0 = _mm256_or_si256(d0, _mm256_xor_si256(ld(a, 2), ld(b, 2)));
        d1 = _mm256_or_si256(d1, _mm256_xor_si256(ld(a, 3), ld(b, 3)));
        o += 128;
    }
    while o < n {
        let x = _mm256_loadu_si256(a.add(o) as *const _);
        d0 = _mm256_or_si256(
            d0,
            _mm256_xor_si256(x, _mm256_loadu_si256(b.add(o) as *const _)),
        );
        o += 32;
    }
    let d = _mm256_or_si256(d0, d1);
    (_mm256_testz_si256(d, d) == 1).then_some(n)
}

/// Store fence after non-temporal stores.
pub fn fence() {
    // SAFETY: sfence has no memory-safety preconditions; SSE is baseline on x86_64.
    unsafe { core::arch::x86_64::_mm_sfence() }
}

/// Most sources [`first_line_latency`] loads.
pub const LATENCY_SOURCES: usize = 8;

/// Where the sources are: the time-stamp-counter ticks per load of loading the first line of
/// each of (at most [`LATENCY_SOURCES`] of) the sources one after another (each load completes
/// before the next starts), then of the same loads again, now L1 hits. Compared with
/// [`memory_latency`] it tells lines in cache from lines in memory; the coordinator's
/// residency verdict uses it, since a call's duration does not tell them apart where the
/// hardware prefetcher hides memory well (RS(12,8) 4 KiB blocks from memory cost 1.4-2.5x the
/// in-cache compute cost per line on a Xeon VM, validation §5). `(0, 0)` for no sources.
///
/// # Safety
/// Every source readable for at least one byte.
pub unsafe fn first_line_latency(srcs: &[*const u8]) -> (u64, u64) {
    use core::arch::x86_64::{_mm_lfence, _rdtsc};
    let srcs = &srcs[..srcs.len().min(LATENCY_SOURCES)];
    if srcs.is_empty() {
        return (0, 0);
    }
    let mut ticks = [0u64; 2];
    for t in &mut ticks {
        _mm_lfence();
        let t0 = _rdtsc();
        for &s in srcs {
            // lfence: the load completes before the next one issues (serialised misses)
            core::ptr::read_volatile(s);
            _mm_lfence();
        }
        *t = _rdtsc().saturating_sub(t0) / srcs.len() as u64;
    }
    (ticks[0], ticks[1])
}

/// The ticks of one [`first_line_latency`] load from memory on this machine: the median of 7
/// measurements over [`LATENCY_SOURCES`] lines flushed from every cache level (measured once
/// per process).
pub fn memory_latency() -> u64 {
    static LAT: OnceLock<u64> = OnceLock::new();
    *LAT.get_or_init(|| {
        // one line per page, so no two share a prefetcher's page
        let buf = vec![1u8; LATENCY_SOURCES * 4096];
        let srcs: Vec<*const u8> = (0..LATENCY_SOURCES)
            .map(|i| buf[i * 4096..].as_ptr())
            .collect();
        let mut cold: Vec<u64> = (0..7)
            .map(|_| {
                // SAFETY: every pointer is within `buf`; clflush and mfence have no other
                // preconditions.
                unsafe {
                    for &s in &srcs {
                        core::arch::x86_64::_mm_clflush(s);
                    }
                    core::arch::x86_64::_mm_mfence();
                    first_line_latency(&srcs).0
                }
            })
            .collect();
        cold.sort_unstable();
        std::hint::black_box(&buf);
        cold[cold.len() / 2]
    })
}

/// Brings every 64-byte line of the destinations (`len` bytes each) into this core's cache in
/// the modified state, by storing back one byte of each as it is, and waits until those stores
/// are done (`mfence`). A call whose parity an earlier call wrote with non-temporal stores then
/// times only its sources and its arithmetic, not the read-for-ownership misses that pmec's own
/// stores caused (the coordinator's residency probe, validation §5). The bytes stay as they
/// were: a destination may be a source too (ISA-L encodes in place; storing zeros here made
/// such a call's parity wrong whenever it probed).
///
/// # Safety
/// Every destination readable and writable for `len` bytes, and no other thread writing them.
pub unsafe fn own_lines(dsts: &[*mut u8], len: usize) {
    for &d in dsts {
        let mut o = 0;
        while o < len {
            // SAFETY: within the destination's `len` bytes; volatile, so neither access is
            // elided.
            let p = d.add(o);
            std::ptr::write_volatile(p, std::ptr::read_volatile(p));
            o += 64;
        }
    }
    // SAFETY: mfence has no memory-safety preconditions; SSE2 is baseline on x86_64.
    unsafe { core::arch::x86_64::_mm_mfence() }
}

/// Fast-path kinds of a kernel call (see [`fast_path`]): regular stores and no prefetch;
/// non-temporal stores and no prefetch; non-temporal stores with the same body of other sources
/// prefetched (`Prefetch::Ahead`) into L1 / into L2; and (below) the source-major kinds.
pub(crate) const FAST_PLAIN: u8 = 0;
pub(crate) const FAST_NT: u8 = 1;
pub(crate) const FAST_NT_T0: u8 = 2;
pub(crate) const FAST_NT_T1: u8 = 3;
/// Regular stores with the `Ahead` prefetch into L1: the first group of a source-major call
/// ([`by_source`]).
pub(crate) const FAST_T0: u8 = 4;
/// Accumulating, regular stores, with / without the `Ahead` prefetch into L1: the later groups
/// of a source-major call.
pub(crate) const FAST_ACC_T0: u8 = 5;
pub(crate) const FAST_ACC: u8 = 6;

/// Whether fast-path kind `how` accumulates into its destinations.
#[inline(always)]
pub(crate) const fn fast_accumulates(how: u8) -> bool {
    how == FAST_ACC_T0 || how == FAST_ACC
}

/// Whether fast-path kind `how` stores non-temporally.
#[inline(always)]
pub(crate) const fn fast_nt(how: u8) -> bool {
    how == FAST_NT || how == FAST_NT_T0 || how == FAST_NT_T1
}

/// Whether a kernel call of `plan` over `m` destinations can run its fast path, and how: every
/// parity row in one group of at most `maxp`, and no software prefetch or the same body of
/// other sources (`Prefetch::Ahead`: into L1 or L2 with non-temporal stores, into L1 with
/// regular ones); accumulating only with regular stores and no prefetch or `Ahead` into L1.
/// Returns the kind (`FAST_*`) and the `Ahead` source pointers (null for none). The loop over bodies
/// is then the group's own, with the group size, store kind and prefetch known to the
/// compiler: the general loop pays a dispatch per body, which cost a lone RS(12,8) 4 KiB stripe
/// (64 bodies of 64 B) a tenth of its time (validation §5).
#[inline(always)]
pub(crate) fn fast_path(
    plan: &Plan,
    acc: bool,
    nt: bool,
    m: usize,
    maxp: usize,
) -> Option<(u8, *const *const u8)> {
    if group(m, maxp) != m {
        return None;
    }
    match (plan.prefetch, acc, nt, plan.hint) {
        (Prefetch::None, false, false, _) => Some((FAST_PLAIN, core::ptr::null())),
        (Prefetch::None, false, true, _) => Some((FAST_NT, core::ptr::null())),
        (Prefetch::Ahead(a), false, true, Hint::L1) => Some((FAST_NT_T0, a.as_ptr())),
        (Prefetch::Ahead(a), false, true, Hint::L2) => Some((FAST_NT_T1, a.as_ptr())),
        (Prefetch::Ahead(a), false, false, Hint::L1) => Some((FAST_T0, a.as_ptr())),
        (Prefetch::Ahead(a), true, false, Hint::L1) => Some((FAST_ACC_T0, a.as_ptr())),
        (Prefetch::None, true, false, _) => Some((FAST_ACC, core::ptr::null())),
        _ => None,
    }
}

/// Calls `$bodies::<P, $r, HOW>($args)` for a fast-path call (see [`fast_path`]) with `$m`
/// parity rows (1, 2, 4 or 8) of kind `$how`.
macro_rules! fast_dispatch {
    ($bodies:ident, $r:ident, $m:expr, $how:expr, ($($arg:expr),*)) => {{
        match $m {
            8 => $crate::kernels::fast_dispatch!(@how $bodies, 8, $r, $how, ($($arg),*)),
            4 => $crate::kernels::fast_dispatch!(@how $bodies, 4, $r, $how, ($($arg),*)),
            2 => $crate::kernels::fast_dispatch!(@how $bodies, 2, $r, $how, ($($arg),*)),
            _ => $crate::kernels::fast_dispatch!(@how $bodies, 1, $r, $how, ($($arg),*)),
        }
    }};
    (@how $bodies:ident, $p:literal, $r:ident, $how:expr, ($($arg:expr),*)) => {{
        use $crate::kernels::{
            FAST_ACC, FAST_ACC_T0, FAST_NT, FAST_NT_T0, FAST_NT_T1, FAST_PLAIN, FAST_T0,
        };
        match $how {
            FAST_PLAIN => $bodies::<$p, $r, FAST_PLAIN>($($arg),*),
            FAST_NT => $bodies::<$p, $r, FAST_NT>($($arg),*),
            FAST_NT_T0 => $bodies::<$p, $r, FAST_NT_T0>($($arg),*),
            FAST_NT_T1 => $bodies::<$p, $r, FAST_NT_T1>($($arg),*),
            FAST_T0 => $bodies::<$p, $r, FAST_T0>($($arg),*),
            FAST_ACC_T0 => $bodies::<$p, $r, FAST_ACC_T0>($($arg),*),
            _ => $bodies::<$p, $r, FAST_ACC>($($arg),*),
        }
    }};
}
pub(crate) use fast_dispatch;

/// Defines `$name`, one kernel's fast-path call (see [`fast_path`]): every body of `plan` with
/// all `P` parity rows in one group, stored as `HOW` says. `$body` runs the kernel's body at
/// offset `$o`, with `$nt` the store kind and `$spf` the body's prefetch.
macro_rules! fast_bodies {
    ($name:ident, $features:literal, $tbl:ty,
     |$sp:ident, $k:ident, $dp:ident, $t:ident, $o:ident, $acc:ident, $nt:ident, $spf:ident|
     $body:expr) => {
        /// A fast-path call (see [`super::fast_path`]): every body of `plan` with all `P`
        /// parity rows in one group, stored as `HOW` says.
        #[target_feature(enable = $features)]
        unsafe fn $name<const P: usize, const R: usize, const HOW: u8>(
            $sp: *const *const u8,
            $k: usize,
            $dp: *const *mut u8,
            $t: $tbl,
            plan: &super::Plan,
            ahead: *const *const u8,
        ) {
            for &o in plan.offs {
                let $o = plan.base + o as usize;
                let $spf = super::SourcePrefetch::fast::<HOW>(ahead, $o, plan.body.lines());
                let $acc = super::fast_accumulates(HOW);
                let $nt = super::fast_nt(HOW);
                $body;
            }
        }
    };
}
pub(crate) use fast_bodies;

/// Parity accumulator group size for `left` remaining rows with at most `maxp` per group.
#[inline(always)]
pub(crate) fn group(left: usize, maxp: usize) -> usize {
    if left >= 8 && maxp >= 8 {
        8
    } else if left >= 4 && maxp >= 4 {
        4
    } else if left >= 2 && maxp >= 2 {
        2
    } else {
        1
    }
}

/// Issue one software prefetch with `hint`.
#[inline(always)]
pub(crate) fn prefetch_line(a: *const u8, hint: Hint) {
    use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0, _MM_HINT_T1};
    // SAFETY: prefetching never faults, whatever the address.
    unsafe {
        match hint {
            Hint::L1 => _mm_prefetch::<_MM_HINT_T0>(a as *const i8),
            Hint::L2 => _mm_prefetch::<_MM_HINT_T1>(a as *const i8),
        }
    }
}

#[inline(always)]
fn prefetch_lines<const H: i32>(a: *const u8, n: usize) {
    for l in 0..n {
        // SAFETY: prefetching never faults, whatever the address.
        unsafe { core::arch::x86_64::_mm_prefetch::<H>(a.wrapping_add(64 * l) as *const i8) };
    }
}

/// The software prefetches of one body. A `Listed` plan's addresses are all issued when the
/// body begins (the paper's short line distances need them as early as possible: RS(12,8)
/// 1 KiB at d = 8, 11.0-11.2 GB/s against 9.6-9.9 when spread over the loads). Stripe-ahead
/// prefetches are issued source by source, just before that source's loads: a stripe ahead is
/// early enough, and a burst of `k * lines` prefetches ahead of the body's first load measured
/// slower for wide stripes (RS(52,48) 1 KiB, one or two stripes ahead into L1: 19.3-20.3 GB/s
/// against 16.5-17.5 for the burst, 256 B bodies 21.3-22.3 against 12.7-13.0; validation §5).
#[derive(Clone, Copy)]
pub(crate) struct SourcePrefetch {
    /// The other stripe's `k` source pointers; null for none.
    ahead: *const *const u8,
    /// Byte offset of the body in each source.
    off: usize,
    lines: usize,
    hint: Hint,
}

impl SourcePrefetch {
    /// No per-source prefetch (also what every parity group after a body's first gets: the
    /// sources are prefetched once per body).
    pub(crate) const NONE: SourcePrefetch = SourcePrefetch {
        ahead: core::ptr::null(),
        off: 0,
        lines: 0,
        hint: Hint::L1,
    };

    /// The per-source prefetches of a fast-path body (see [`fast_path`]) of kind `HOW` at byte
    /// `off`: `lines` lines of each of the sources at `ahead`, for the `FAST_NT_T*` kinds.
    #[inline(always)]
    pub(crate) fn fast<const HOW: u8>(ahead: *const *const u8, off: usize, lines: usize) -> Self {
        let hint = match HOW {
            FAST_NT_T0 | FAST_T0 | FAST_ACC_T0 => Hint::L1,
            FAST_NT_T1 => Hint::L2,
            _ => return SourcePrefetch::NONE,
        };
        SourcePrefetch {
            ahead,
            off,
            lines,
            hint,
        }
    }

    /// Begin body `i` of `plan` over `k` sources: issue its listed prefetches and return its
    /// per-source ones.
    ///
    /// # Safety
    /// A `Listed` plan must hold at least `(i + 1) * k * body.lines()` addresses, an `Ahead`
    /// plan `k` pointers, and `i < offs.len()`; prefetching itself never faults.
    #[inline(always)]
    pub(crate) unsafe fn begin_body(plan: &Plan, i: usize, k: usize) -> SourcePrefetch {
        let lines = plan.body.lines();
        match plan.prefetch {
            Prefetch::None => SourcePrefetch::NONE,
            Prefetch::Listed(pf) => {
                let n = k * lines;
                let p = pf.as_ptr().add(i * n);
                for t in 0..n {
                    prefetch_line(*p.add(t), plan.hint);
                }
                SourcePrefetch::NONE
            }
            Prefetch::Ahead(a) => SourcePrefetch {
                ahead: a.as_ptr(),
                off: plan.base + *plan.offs.get_unchecked(i) as usize,
                lines,
                hint: plan.hint,
            },
        }
    }

    /// Issue source `j`'s prefetches.
    ///
    /// # Safety
    /// `j` below the `k` given to [`SourcePrefetch::begin_body`]; prefetching never faults.
    #[inline(always)]
    pub(crate) unsafe fn source(&self, j: usize) {
        use core::arch::x86_64::{_MM_HINT_T0, _MM_HINT_T1};
        if !self.ahead.is_null() {
            let s = (*self.ahead.add(j)).wrapping_add(self.off);
            match self.hint {
                Hint::L1 => prefetch_lines::<_MM_HINT_T0>(s, self.lines),
                Hint::L2 => prefetch_lines::<_MM_HINT_T1>(s, self.lines),
            }
        }
    }
}
