//! ISA-L's erasure-code API implemented on pmec, with ISA-L's table layout (32 bytes per
//! coefficient: `c*{0..15}` then `c*{0x00,0x10,..,0xf0}`, row-major `[rows][k]`).
//!
//! The raw `unsafe fn`s here have ISA-L's exact C signatures' semantics; the `isal-shim`
//! cdylib exports them under ISA-L's names so an ISA-L program runs on pmec with `LD_PRELOAD`.
//! Encoding goes through the DIALGA coordinator, as the paper builds DIALGA into ISA-L's
//! `ec_encode_data` entry point. Tables that are exactly what `ec_init_tables` builds may run
//! on the GFNI kernels; any other table contents run on split-nibble kernels using the 32 bytes
//! as given, as ISA-L's SIMD kernels do. Tables `ec_init_tables` did not build can still give
//! other bytes than ISA-L for short buffers: ISA-L sends a call shorter than its vector width
//! (16, 32 or 64 bytes by host) to its base C code, which reads only byte 1 of each table
//! (the coefficient), while pmec uses the whole table at every length.

use crate::dialga::coordinator::{
    self, CallInProgress, Coordinator, CoordinatorConfig, Strategy, REUSE_CALLS,
};
use crate::dialga::prefetch::{self, Fetch, Schedule, StripeSet};
use crate::gf;
use crate::kernels::{self, Coefs, Isa};
use crate::matrix;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

/// `ec_init_tables` into a new vector.
pub fn init_tables(k: usize, rows: usize, a: &[u8]) -> Vec<u8> {
    let mut t = Vec::with_capacity(k * rows * 32);
    for &c in &a[..k * rows] {
        t.extend_from_slice(&gf::nibble_table(c));
    }
    t
}

/// Best kernel that reads split-nibble tables as given.
fn nibble_isa() -> Isa {
    [Isa::Avx512, Isa::Avx2, Isa::Ssse3]
        .into_iter()
        .find(|i| i.available())
        .unwrap_or(Isa::Scalar)
}

/// The kernel for tables `coefs` came from: tables exactly as `ec_init_tables` builds them may
/// run on any kernel (GFNI too); others on split-nibble kernels, which use their bytes as given.
fn isa_for(coefs: &Coefs) -> Isa {
    if coefs.canonical() {
        Isa::best()
    } else {
        nibble_isa()
    }
}

struct Prepared {
    k: usize,
    rows: usize,
    tables: Vec<u8>,
    coefs: Coefs,
    isa: Isa,
    coord: Coordinator,
    /// This thread's call slot ([`coordinator::thread_slot`]): a `Prepared` serves the thread
    /// that made it only.
    slot: usize,
    /// The last unmeasured decision, the block length it was made for and how many more calls
    /// of that length may reuse it without asking the coordinator (kept apart: the common
    /// call reads the two counts and copies the decision only when it reuses it).
    reuse: Cell<Schedule>,
    reuse_len: Cell<usize>,
    reuse_left: Cell<u32>,
}

impl Prepared {
    /// Whether a call of `len` bytes may reuse the last decision.
    #[inline(always)]
    fn reusable(&self, len: usize) -> bool {
        self.reuse_left.get() > 0 && self.reuse_len.get() == len
    }

    /// Takes one reuse of the last decision for a call of `len` bytes, if one is left.
    #[inline(always)]
    fn take_reuse(&self, len: usize) -> Option<Schedule> {
        if !self.reusable(len) {
            return None;
        }
        self.reuse_left.set(self.reuse_left.get() - 1);
        Some(self.reuse.get())
    }
}

/// What the common call needs of its thread, in one thread-local without a destructor: one
/// lookup per call (each a `__tls_get_addr` call in the shim), never destroyed, and set before
/// anything allocates (the first access to a thread-local with a destructor registers it, an
/// allocation).
struct Hot {
    /// An [`ec_encode_data`] of this thread is under way: a call from a signal handler that
    /// interrupted it must not touch the thread's caches (their borrows are held). At thread
    /// exit it still guards the calls that find [`LAST`] destroyed.
    busy: Cell<bool>,
    /// [`LAST`]'s geometry, which keeps it alive; null when there is none or [`LAST`] is gone.
    last: Cell<*const Prepared>,
}

/// The geometry used last on this thread, whose [`Hot::last`] it keeps valid: set together
/// (by [`prepared`]) and cleared together (when the thread's locals are destroyed).
struct LastGeometry(RefCell<Option<Rc<Prepared>>>);

impl Drop for LastGeometry {
    fn drop(&mut self) {
        HOT.with(|h| h.last.set(std::ptr::null()));
    }
}

thread_local! {
    static HOT: Hot = const {
        Hot {
            busy: Cell::new(false),
            last: Cell::new(std::ptr::null()),
        }
    };
    static PREPARED: RefCell<HashMap<(usize, usize), Rc<Prepared>>> = RefCell::new(HashMap::new());
    /// The geometry used last on this thread: a client encoding stripe after stripe finds it
    /// here (through [`Hot::last`]) without hashing.
    static LAST: LastGeometry = const { LastGeometry(RefCell::new(None)) };
    /// Coefficients of the single-row and single-column entry points (`gf_vect_mul`,
    /// `gf_vect_dot_prod`, `gf_vect_mad`, `ec_encode_data_update`), refilled in place on each
    /// call: once it has room for a call's tables, such a call allocates nothing (see
    /// [`with_scratch`]).
    static SCRATCH: RefCell<Coefs> = const { RefCell::new(Coefs::empty()) };
}

/// Runs `kernel` on this thread's scratch coefficients refilled with the `rows x cols` ISA-L
/// tables that `table(r, j)` points to (32 bytes each), or, where the scratch is in use (a
/// signal handler that interrupted such a call) or destroyed (a call from a thread-local
/// destructor), computes the same with [`encode_reentrant`], which allocates nothing.
///
/// # Safety
/// Every table readable for 32 bytes, every source readable and destination writable for
/// `len` bytes.
#[allow(clippy::too_many_arguments)]
unsafe fn with_scratch(
    rows: usize,
    cols: usize,
    table: impl Fn(usize, usize) -> *const u8,
    srcs: &[*const u8],
    dsts: &[*mut u8],
    len: usize,
    accumulate: bool,
    kernel: impl FnOnce(&Coefs),
) {
    let done = SCRATCH
        .try_with(|s| {
            let Ok(mut c) = s.try_borrow_mut() else {
                return false;
            };
            if !c.try_reserve_for(rows, cols) {
                return false; // no memory for the scratch: the loop below allocates nothing
            }
            c.refill_with(rows, cols, |nibble| {
                for r in 0..rows {
                    for j in 0..cols {
                        nibble.extend_from_slice(std::slice::from_raw_parts(table(r, j), 32));
                    }
                }
            });
            kernel(&c);
            true
        })
        .unwrap_or(false);
    if !done {
        encode_reentrant(rows, cols, table, srcs, dsts, len, accumulate);
    }
}

/// Clears [`Hot::busy`] when the call that set it returns.
struct NotBusy<'a>(&'a Cell<bool>);

impl Drop for NotBusy<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

/// Encodes one stripe as ISA-L does, with no per-thread state, no coordinator and no
/// prefetching: for calls that cannot use the thread's caches (made while the thread's locals
/// are being destroyed: from an `atexit` handler, a global destructor or a thread-local
/// destructor; or where preparing them found no memory). Where the coefficients' memory
/// cannot be had either, with [`encode_tables_reentrant`].
///
/// # Safety
/// As [`ec_encode_data`].
unsafe fn encode_plain(
    k: usize,
    rows: usize,
    tables: &[u8],
    srcs: &[*const u8],
    dsts: &[*mut u8],
    len: usize,
) {
    if !can_allocate(k * rows * 32 * 4) {
        encode_tables_reentrant(k, rows, tables, srcs, dsts, len);
        return;
    }
    let coefs = Coefs::from_isal_tables(rows, k, tables);
    kernels::encode_linear(isa_for(&coefs), srcs, dsts, &coefs, len, false, false);
}

/// [`encode_reentrant`] over `ec_encode_data`'s `rows x k` tables.
///
/// # Safety
/// As [`ec_encode_data`].
unsafe fn encode_tables_reentrant(
    k: usize,
    rows: usize,
    tables: &[u8],
    srcs: &[*const u8],
    dsts: &[*mut u8],
    len: usize,
) {
    let table = |r: usize, j: usize| tables[(r * k + j) * 32..].as_ptr();
    encode_reentrant(rows, k, table, srcs, dsts, len, false);
}

/// `dsts[r] (^)= sum over j of table(r, j) x srcs[j]` for `rows x cols` ISA-L tables (32 bytes
/// each; a product is the low-nibble table's entry XOR the high-nibble table's, as ISA-L's x86
/// kernels compute it) with a byte loop that allocates nothing, takes no lock and touches no
/// thread-local: for a call from a signal handler that interrupted another call of this thread.
/// That call may have been inside `malloc`, whose lock an allocating handler would wait for
/// forever (the vector kernels' prepared coefficients are heap-allocated), while ISA-L's entry
/// points allocate nothing.
///
/// # Safety
/// Every table readable for 32 bytes, every source readable and destination writable for
/// `len` bytes.
unsafe fn encode_reentrant(
    rows: usize,
    cols: usize,
    table: impl Fn(usize, usize) -> *const u8,
    srcs: &[*const u8],
    dsts: &[*mut u8],
    len: usize,
    accumulate: bool,
) {
    for (r, &d) in dsts.iter().enumerate().take(rows) {
        for i in 0..len {
            let mut acc = if accumulate { *d.add(i) } else { 0 };
            for (j, &s) in srcs.iter().enumerate().take(cols) {
                let t = std::slice::from_raw_parts(table(r, j), 32);
                let x = *s.add(i);
                acc ^= t[(x & 15) as usize] ^ t[16 + (x >> 4) as usize];
            }
            *d.add(i) = acc;
        }
    }
}

/// The DIALGA strategy of the ISA-L entry points: `auto`, or the one named by `PMEC_STRATEGY`
/// (`vanilla`, `sw`, `bf`, `nohw`, `pressure`, `ahead`), so that each layer can be measured
/// through the single-call path an unmodified ISA-L client takes. An unknown name is reported
/// once on standard error and `auto` is used.
fn shim_strategy() -> Strategy {
    static S: std::sync::OnceLock<Strategy> = std::sync::OnceLock::new();
    *S.get_or_init(|| match std::env::var("PMEC_STRATEGY") {
        Ok(name) => Strategy::parse(&name).unwrap_or_else(|e| {
            eprintln!("pmec: PMEC_STRATEGY: {e}; using auto");
            Strategy::Auto
        }),
        Err(_) => Strategy::Auto,
    })
}

/// Prepared coefficients and coordinator for these tables (cached per thread and geometry,
/// rebuilt when the table bytes change), made this thread's last geometry (`last`).
fn prepared(k: usize, rows: usize, tables: &[u8], last: &LastGeometry) -> Option<Rc<Prepared>> {
    if let Some(p) = last
        .0
        .borrow()
        .as_ref()
        .filter(|p| p.k == k && p.rows == rows && kernels::same_bytes(&p.tables, tables))
    {
        return Some(p.clone());
    }
    let p = PREPARED.try_with(|c| {
        let mut c = c.borrow_mut();
        if let Some(p) = c.get(&(k, rows)) {
            if kernels::same_bytes(&p.tables, tables) {
                return Some(p.clone());
            }
        }
        if !can_allocate(prepare_bytes(k, rows)) {
            return None;
        }
        let coefs = Coefs::from_isal_tables(rows, k, tables);
        let isa = isa_for(&coefs);
        let coord = Coordinator::new(shim_strategy(), CoordinatorConfig::default(), isa, &coefs);
        let p = Rc::new(Prepared {
            k,
            rows,
            tables: tables.to_vec(),
            coefs,
            isa,
            coord,
            slot: coordinator::thread_slot(),
            reuse: Cell::new(Schedule::VANILLA),
            reuse_len: Cell::new(0),
            reuse_left: Cell::new(0),
        });
        if c.len() > 64 {
            c.clear();
        }
        c.insert((k, rows), p.clone());
        Some(p)
    });
    let p = p.ok()??;
    HOT.with(|h| h.last.set(Rc::as_ptr(&p)));
    *last.0.borrow_mut() = Some(p.clone());
    Some(p)
}

/// Whether `bytes` can be allocated now (tried and given back). ISA-L's entry points allocate
/// nothing, so a client may call them where allocation fails (an address-space limit, memory
/// exhausted): there the shim encodes with [`encode_reentrant`], which allocates nothing,
/// instead of letting a failed allocation abort the process (it did, at the first call of a
/// geometry under `RLIMIT_AS`).
fn can_allocate(bytes: usize) -> bool {
    Vec::<u8>::new().try_reserve_exact(bytes).is_ok()
}

/// A generous bound on what preparing a geometry allocates: the coordinator's calibration
/// stripes (256 KiB, or one stripe of 1 KiB blocks), the caller's tables and the coefficients
/// in their forms, and the coordinator's own state.
fn prepare_bytes(k: usize, rows: usize) -> usize {
    ((k + rows) << 10).max(256 << 10) + k * rows * 32 * 4 + (64 << 10)
}

/// `ec_init_tables(k, rows, a, gftbls)`.
///
/// # Safety
/// `a` points to `k * rows` bytes, `gftbls` to `k * rows * 32` writable bytes.
pub unsafe fn ec_init_tables(k: i32, rows: i32, a: *const u8, gftbls: *mut u8) {
    if k <= 0 || rows <= 0 {
        return;
    }
    let n = (k * rows) as usize;
    let a = std::slice::from_raw_parts(a, n);
    let out = std::slice::from_raw_parts_mut(gftbls, n * 32);
    for (c, t) in a.iter().zip(out.chunks_mut(32)) {
        t.copy_from_slice(&gf::nibble_table(*c));
    }
}

/// `ec_encode_data(len, k, rows, gftbls, data, coding)`.
///
/// # Safety
/// As ISA-L: `data` holds k readable and `coding` rows writable pointers to `len` bytes each
/// (outputs not overlapping inputs); `gftbls` holds `k * rows * 32` bytes.
pub unsafe fn ec_encode_data(
    len: i32,
    k: i32,
    rows: i32,
    gftbls: *const u8,
    data: *const *const u8,
    coding: *const *mut u8,
) {
    if len <= 0 || rows <= 0 {
        return;
    }
    if k <= 0 {
        // No sources: every parity byte is the empty sum. (ISA-L's kernels read data[0] and the
        // table even then and store bytes derived from them; its API leaves k = 0 undefined.)
        for p in 0..rows as usize {
            std::ptr::write_bytes(*coding.add(p), 0, len as usize);
        }
        return;
    }
    let (len, k, rows) = (len as usize, k as usize, rows as usize);
    let tables = std::slice::from_raw_parts(gftbls, k * rows * 32);
    let srcs = std::slice::from_raw_parts(data, k);
    let dsts = std::slice::from_raw_parts(coding, rows);
    // `with`: a thread-local without a destructor is never destroyed, so it cannot fail.
    HOT.with(|hot| {
        if hot.busy.replace(true) {
            // a signal handler interrupting this thread's call, which may be inside the
            // allocator
            encode_tables_reentrant(k, rows, tables, srcs, dsts, len);
            return;
        }
        let _not_busy = NotBusy(&hot.busy);
        let set = StripeSet {
            srcs,
            dsts,
            k,
            m: rows,
            len,
        };
        // The common call: this thread's last geometry, with a decision to reuse for this
        // block length and the same tables, served without another thread-local lookup, a
        // borrow, the reference count or the geometry table. The stripe is brought in as the
        // decision says before the caller's tables are compared, whose lines usually miss as
        // well: the two overlap, and the fetch only reads (a table that turns out different
        // just gets the stripe fetched again).
        let mut fetched = None;
        // SAFETY: `last` is null or the Prepared that LAST holds, which only `prepared` (not
        // before this reference's last use) and LAST's destruction (which nulls it) release;
        // `busy` keeps a signal handler's call off this path.
        if let Some(p) = hot.last.get().as_ref() {
            if p.k == k && p.rows == rows && p.reusable(len) {
                let _in_call = CallInProgress::in_slot(p.slot);
                let fetch = p.reuse.get().fetch;
                kernels::fetch(srcs, len, fetch);
                if kernels::same_bytes(&p.tables, tables) {
                    let sched = p.take_reuse(len).expect("checked above");
                    run_one(p.isa, &p.coefs, &set, &sched, true);
                    return;
                }
                fetched = Some(fetch);
            }
        }
        if LAST
            .try_with(|last| encode_on_thread(last, tables, &set, fetched))
            .is_err()
        {
            // the thread's locals are being destroyed
            encode_plain(k, rows, tables, srcs, dsts, len);
        }
    });
}

/// [`ec_encode_data`] of the stripe `set` on a thread whose last geometry is in `last`
/// ([`LAST`]) when the common call's path did not serve it; `fetched`: how that path brought
/// the stripe in, if it did.
///
/// # Safety
/// As [`ec_encode_data`].
unsafe fn encode_on_thread(
    last: &LastGeometry,
    tables: &[u8],
    set: &StripeSet,
    fetched: Option<Fetch>,
) {
    let StripeSet {
        srcs,
        dsts,
        k,
        m: rows,
        len,
    } = *set;
    let Some(p) = prepared(k, rows, tables, last) else {
        encode_plain(k, rows, tables, srcs, dsts, len);
        return;
    };
    let _in_call = CallInProgress::in_slot(p.slot);
    // Another geometry than the last call's (or other tables) may have a decision to reuse too.
    if let Some(sched) = p.take_reuse(len) {
        run_one(p.isa, &p.coefs, set, &sched, fetched == Some(sched.fetch));
        return;
    }
    // A call the coordinator decides fetches its stripe itself: a timed one must time the fetch.
    let mut ticket = p.coord.begin(len, 1, 1);
    let sched = ticket.decision.schedule;
    if ticket.decision.measured {
        if ticket.wants_latency() {
            if fetched.is_some() {
                // the sources were just brought in for another decision: neither the latency
                // nor the cost would be theirs
                ticket.discard();
            } else {
                ticket.set_latency(kernels::first_line_latency(srcs));
                ticket.restart();
            }
        }
        if ticket.residency_probe() {
            kernels::own_lines(dsts, len);
            ticket.restart();
        }
        run_one(p.isa, &p.coefs, set, &sched, false);
        p.coord.end(ticket, (k * len) as u64);
    } else {
        // Nothing to time: close the ticket before the stores, whose draining its atomic
        // operation would otherwise wait for, and reuse the decision for the next calls.
        p.coord.end(ticket, 0);
        p.reuse.set(sched);
        p.reuse_len.set(len);
        p.reuse_left.set(REUSE_CALLS);
        run_one(p.isa, &p.coefs, set, &sched, false);
    }
}

/// Encodes the one stripe of `set` under `sched`. A schedule without software prefetch at a
/// distance or a shuffled order (the lone-stripe schedules, vanilla) fetches the stripe as it
/// says and runs the kernel straight over it in address order, without the batch machinery's
/// per-call set-up; `fetched`: the stripe was already brought in as the schedule says.
///
/// # Safety
/// As [`prefetch::execute`].
unsafe fn run_one(isa: Isa, coefs: &Coefs, set: &StripeSet, sched: &Schedule, fetched: bool) {
    if sched.prefetches() || sched.shuffle {
        prefetch::execute(isa, coefs, set, sched, false);
        return;
    }
    if !fetched {
        kernels::fetch(set.srcs, set.len, sched.fetch);
    }
    // `isa` was chosen among the available kernels when the tables were prepared.
    kernels::encode_available(
        isa,
        set.srcs,
        set.dsts,
        coefs,
        set.len,
        sched.nt,
        sched.body,
        sched.fetch,
    );
}

/// `ec_encode_data_update(len, k, rows, vec_i, gftbls, data, coding)`: `coding[r] ^=
/// table(r, vec_i) x data`.
///
/// # Safety
/// As ISA-L: `data` readable and each of the `rows` coding buffers writable for `len` bytes;
/// `gftbls` holds `k * rows * 32` bytes.
pub unsafe fn ec_encode_data_update(
    len: i32,
    k: i32,
    rows: i32,
    vec_i: i32,
    gftbls: *const u8,
    data: *const u8,
    coding: *const *mut u8,
) {
    if len <= 0 || k <= 0 || rows <= 0 || vec_i < 0 || vec_i >= k {
        return;
    }
    let (len, k, rows, vi) = (len as usize, k as usize, rows as usize, vec_i as usize);
    let dsts = std::slice::from_raw_parts(coding, rows);
    let table = |r: usize, _: usize| gftbls.add((r * k + vi) * 32);
    with_scratch(rows, 1, table, &[data], dsts, len, true, |coefs| {
        kernels::encode_linear(nibble_isa(), &[data], dsts, coefs, len, true, false)
    });
}

/// `gf_vect_mul(len, gftbl, src, dest)`: dest = C x src. Like ISA-L, `len` must be a positive
/// multiple of 32; otherwise nothing is written and 1 is returned, as ISA-L 2.32.1's x86 kernels
/// (all of its SSE, AVX, AVX-512 and GFNI versions) return (only its C fallback returns -1).
///
/// # Safety
/// `gftbl` has 32 bytes; `src` readable and `dest` writable for `len` bytes.
pub unsafe fn gf_vect_mul(len: i32, gftbl: *const u8, src: *const u8, dest: *mut u8) -> i32 {
    if len <= 0 || len % 32 != 0 {
        return 1;
    }
    let len = len as usize;
    with_scratch(
        1,
        1,
        |_, _| gftbl,
        &[src],
        &[dest],
        len,
        false,
        |coefs| kernels::encode_linear(nibble_isa(), &[src], &[dest], coefs, len, false, false),
    );
    0
}

/// `gf_vect_dot_prod(len, vlen, gftbls, src, dest)`: dest = sum of C_j x src_j.
///
/// # Safety
/// `gftbls` has `vlen * 32` bytes; `src` holds vlen readable pointers and `dest` is writable,
/// all for `len` bytes.
pub unsafe fn gf_vect_dot_prod(
    len: i32,
    vlen: i32,
    gftbls: *const u8,
    src: *const *const u8,
    dest: *mut u8,
) {
    if len <= 0 || vlen <= 0 {
        return;
    }
    let (v, len) = (vlen as usize, len as usize);
    let srcs = std::slice::from_raw_parts(src, v);
    let table = |_: usize, j: usize| gftbls.add(j * 32);
    with_scratch(1, v, table, srcs, &[dest], len, false, |coefs| {
        kernels::encode_linear(nibble_isa(), srcs, &[dest], coefs, len, false, false)
    });
}

/// `gf_vect_mad(len, vec, vec_i, gftbls, src, dest)`: dest ^= C_{vec_i} x src, with the
/// table of source `vec_i` at `gftbls + 32 * vec_i`. `vec` is not read, as ISA-L reads it in
/// none of its single-destination versions (2.30 and 2.32.1: C, SSE, AVX, AVX2, AVX-512, GFNI):
/// a call with `vec` 0, or with `vec_i` not below `vec`, updates `dest` from the table at
/// `vec_i` there too (the shim returned without writing).
///
/// # Safety
/// `gftbls` has `(vec_i + 1) * 32` bytes; `src` readable and `dest` writable for `len` bytes.
pub unsafe fn gf_vect_mad(
    len: i32,
    _vec: i32,
    vec_i: i32,
    gftbls: *const u8,
    src: *const u8,
    dest: *mut u8,
) {
    if len <= 0 || vec_i < 0 {
        return;
    }
    let (t, len) = (gftbls.add(vec_i as usize * 32), len as usize);
    with_scratch(
        1,
        1,
        |_, _| t,
        &[src],
        &[dest],
        len,
        true,
        |coefs| kernels::encode_linear(nibble_isa(), &[src], &[dest], coefs, len, true, false),
    );
}

/// `gf_vect_mul_init(c, gftbl)`.
///
/// # Safety
/// `gftbl` has 32 writable bytes.
pub unsafe fn gf_vect_mul_init(c: u8, gftbl: *mut u8) {
    std::slice::from_raw_parts_mut(gftbl, 32).copy_from_slice(&gf::nibble_table(c));
}

/// `gf_gen_rs_matrix(a, m, k)` (m = total rows).
///
/// # Safety
/// `a` has `m * k` writable bytes.
pub unsafe fn gf_gen_rs_matrix(a: *mut u8, m: i32, k: i32) {
    if m <= 0 || k <= 0 {
        return;
    }
    let g = matrix::gen_rs_matrix(m as usize, k as usize);
    std::slice::from_raw_parts_mut(a, g.as_bytes().len()).copy_from_slice(g.as_bytes());
}

/// `gf_gen_cauchy1_matrix(a, m, k)` (m = total rows).
///
/// # Safety
/// `a` has `m * k` writable bytes.
pub unsafe fn gf_gen_cauchy1_matrix(a: *mut u8, m: i32, k: i32) {
    if m <= 0 || k <= 0 {
        return;
    }
    let g = matrix::gen_cauchy1_matrix(m as usize, k as usize);
    std::slice::from_raw_parts_mut(a, g.as_bytes().len()).copy_from_slice(g.as_bytes());
}

/// `gf_invert_matrix(in, out, n)`: 0 on success, -1 if singular; `in` is destroyed as ISA-L
/// destroys it.
///
/// # Safety
/// `input` and `out` have `n * n` bytes each.
pub unsafe fn gf_invert_matrix(input: *mut u8, out: *mut u8, n: i32) -> i32 {
    if n <= 0 {
        return 0; /* nothing to invert, as ISA-L (whose loops do not run) */
    }
    let n = n as usize;
    let i = std::slice::from_raw_parts_mut(input, n * n);
    let o = std::slice::from_raw_parts_mut(out, n * n);
    if matrix::invert_in_place(i, o, n) {
        0
    } else {
        -1
    }
}

/// Safe `gf_vect_mul` on slices (same return convention).
pub fn vect_mul(tbl: &[u8; 32], src: &[u8], dst: &mut [u8]) -> i32 {
    assert_eq!(src.len(), dst.len(), "source and destination lengths");
    // SAFETY: slices of equal length; the table has 32 bytes.
    unsafe {
        gf_vect_mul(
            src.len() as i32,
            tbl.as_ptr(),
            src.as_ptr(),
            dst.as_mut_ptr(),
        )
    }
}

/// Safe `gf_vect_dot_prod` on slices.
pub fn vect_dot_prod(tables: &[u8], srcs: &[&[u8]], dst: &mut [u8]) {
    assert!(srcs.iter().all(|s| s.len() == dst.len()) && tables.len() >= srcs.len() * 32);
    let p: Vec<*const u8> = srcs.iter().map(|s| s.as_ptr()).collect();
    // SAFETY: checked lengths above.
    unsafe {
        gf_vect_dot_prod(
            dst.len() as i32,
            srcs.len() as i32,
            tables.as_ptr(),
            p.as_ptr(),
            dst.as_mut_ptr(),
        )
    }
}

/// Safe `gf_vect_mad` on slices.
pub fn vect_mad(vec: usize, vec_i: usize, tables: &[u8], src: &[u8], dst: &mut [u8]) {
    assert!(src.len() == dst.len() && tables.len() >= vec * 32 && vec_i < vec);
    // SAFETY: checked lengths above.
    unsafe {
        gf_vect_mad(
            dst.len() as i32,
            vec as i32,
            vec_i as i32,
            tables.as_ptr(),
            src.as_ptr(),
            dst.as_mut_ptr(),
        )
    }
}
