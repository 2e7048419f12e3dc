//! The adaptive coordinator (DIALGA §4.1): picks a [`Schedule`] for each call from the I/O
//! pattern (stripe width, block size, concurrency) and sampled cache behaviour.
//!
//! Cache events come from hardware counters when `perf_event_open` works; otherwise (as on
//! this VM) the coordinator times calls with the TSC and uses cycles per loaded cache line as
//! its latency sample. Decisions, with the paper's thresholds as configurable defaults:
//!
//! * data found cache-resident (a periodic vanilla probe with regular parity stores runs near
//!   the calibrated compute cost, and the first lines of its sources load faster than from
//!   memory; two sampled calls in a row far above that cost or loading from memory end the
//!   verdict) → plain kernels, no prefetch, regular stores;
//! * high pressure (threads > 12, the larger of the caller's declared count and the encode
//!   calls in progress ([`CallInProgress`]), or latency > 110% of the low-pressure baseline
//!   together with useless prefetches > 150% of theirs — with timing only, together with
//!   concurrency) →
//!   hardware prefetcher starved by the shuffle mapping, 256 B bodies, software prefetch with
//!   the distance capped by the PM read-buffer bound (Eq. 1). These remedies are where the
//!   pressure entry's climb starts, not a fixed choice: the climb also measures the
//!   low-pressure schedule at the capped distance, and batches keep stripe-ahead prefetch with
//!   the remedies as its first variant. With timing only the signal fires on any second thread
//!   sharing the memory, and forcing the remedies cost a codec used first on one thread and
//!   then on two a quarter of its throughput (`codec_reuse` example);
//! * otherwise, for a call over several stripes whose stripe (k blocks) fits comfortably in L2
//!   (beyond the paper) → stripe-ahead prefetch: each loaded line prefetches the same line of
//!   a later stripe ([`Schedule::ahead`]). This is the pipelined prefetch at a distance of
//!   whole stripes, issued without a per-line address list. How many stripes ahead (1-4),
//!   into which cache level (L2, where a prefetch in flight holds none of the core's few L1
//!   miss buffers, or L1), in which line order (address order, or the shuffle mapping that
//!   keeps the L2 stream prefetcher from fetching past the ends of the blocks) and with which
//!   loop body (64 B or 256 B) are hill-climbed like the paper's distance, because the best
//!   choice differs between machines of the same CPU model (L2 won on one 2-core Zen 5 VM, L1
//!   on another) and between stripe widths. Measured 1.4-3x faster than the paper's
//!   line-distance schedule at 1 KiB blocks (`schedule_sweep` example, docs/validation.md §5);
//! * otherwise → software prefetch at the tuned distance, XPLine-first lines further ahead,
//!   hardware prefetcher left on (wide stripes beyond 32 sources disable it themselves, and
//!   4 KB-aligned blocks are its best case, so it is never starved there);
//! * unless the periodic competing vanilla probe (a second probe, three quarters into each
//!   period) runs 10% faster than that schedule's recent samples (a moving average) at two
//!   probes in a row (the hardware prefetcher alone keeps up, as on DRAM with wide stripes):
//!   then vanilla, with the prefetching schedule re-measured once per probe period and the
//!   same margin to switch back. These vanilla probes and calls use the same non-temporal
//!   parity stores as the schedule they compete with, since a regular store's
//!   read-for-ownership and write-back finish after the timed call.

use super::counters::HwCounters;
use super::prefetch::{Fetch, Schedule};
use super::tuner::{Cand, Tuner, TunerConfig};
use crate::fork::ForkSafe;
use crate::kernels::{self, Body, Coefs, Hint, Isa};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Prefetch strategy: chosen by the coordinator, or fixed by hand for experiments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// The coordinator decides per call.
    Auto,
    /// No software prefetch, address order (ISA-L's behaviour).
    Vanilla,
    /// Pipelined software prefetch at the tuned distance; hardware prefetcher left alone.
    SoftwarePrefetch,
    /// Software prefetch plus the larger distance for XPLine-first lines ("+BF").
    BufferFriendly,
    /// Shuffled line order (hardware prefetcher starved) plus software prefetch.
    NoHwPrefetch,
    /// Shuffled order, 256 B bodies and software prefetch with the read-buffer cap.
    HighPressure,
    /// Stripe-ahead prefetch into L2 (beyond the paper; [`Schedule::ahead`]), `ahead` stripes
    /// from the configuration; calls of a single stripe fall back to the tuned distance.
    StripeAhead,
    /// Exactly this schedule, no tuning.
    Fixed(Schedule),
}

impl Strategy {
    /// Name used on command lines and in reports.
    pub fn name(&self) -> &'static str {
        match self {
            Strategy::Auto => "auto",
            Strategy::Vanilla => "vanilla",
            Strategy::SoftwarePrefetch => "sw",
            Strategy::BufferFriendly => "bf",
            Strategy::NoHwPrefetch => "nohw",
            Strategy::HighPressure => "pressure",
            Strategy::StripeAhead => "ahead",
            Strategy::Fixed(_) => "fixed",
        }
    }

    /// Parse a name printed by [`Strategy::name`] (not `fixed`), or `loneN`: fixed to
    /// lone-stripe schedule N of [`LONE_SCHEDULES`] (to measure one through a caller that
    /// cannot name a schedule, such as an ISA-L client with `PMEC_STRATEGY`).
    pub fn parse(s: &str) -> crate::Result<Strategy> {
        if let Some(n) = s.strip_prefix("lone") {
            return match n.parse::<usize>().ok().and_then(|i| LONE_SCHEDULES.get(i)) {
                Some(&sched) => Ok(Strategy::Fixed(sched)),
                None => Err(crate::Error::InvalidParameter(format!(
                    "unknown strategy '{s}' (lone0 to lone{})",
                    LONE_SCHEDULES.len() - 1
                ))),
            };
        }
        Ok(match s {
            "auto" => Strategy::Auto,
            "vanilla" => Strategy::Vanilla,
            "sw" => Strategy::SoftwarePrefetch,
            "bf" => Strategy::BufferFriendly,
            "nohw" => Strategy::NoHwPrefetch,
            "pressure" => Strategy::HighPressure,
            "ahead" => Strategy::StripeAhead,
            _ => {
                return Err(crate::Error::InvalidParameter(format!(
                    "unknown strategy '{s}' (auto, vanilla, sw, bf, nohw, pressure, ahead, lone0-lone{})",
                    LONE_SCHEDULES.len() - 1
                )))
            }
        })
    }
}

/// Coordinator thresholds and knobs (paper defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CoordinatorConfig {
    /// Latency above this multiple of the low-pressure baseline signals contention (1.10).
    pub latency_threshold: f64,
    /// Useless prefetches above this multiple of their baseline mark the hardware prefetcher
    /// inefficient (1.50).
    pub useless_prefetch_threshold: f64,
    /// More concurrent encoders than this is high pressure (12).
    pub thread_threshold: usize,
    /// Stripes wider than this defeat the L2 stream prefetcher on their own (32).
    pub wide_stripe: usize,
    /// Extra distance for the first line of each XPLine (paper: k + 4 when d = k).
    pub xpline_extra: usize,
    /// PM read-buffer bytes for the distance cap of Eq. 1 (96 KiB: six Optane DIMMs).
    pub read_buffer_bytes: usize,
    /// Non-temporal parity stores: None = decide (on unless cache-resident).
    pub nt: Option<bool>,
    /// Fixed prefetch distance instead of hill climbing.
    pub fixed_distance: Option<usize>,
    /// Stripes ahead for stripe-ahead prefetch (0 = never use it: the paper's schedules only);
    /// with `ahead_tune`, where the hill climb starts.
    pub ahead: usize,
    /// Hill-climb the stripes ahead (1..=`ahead_max`), the cache level (L1 or L2), the line
    /// order and the loop body of stripe-ahead prefetch per block length, like the paper's
    /// distance (the tuner's neighbourhood, drift rule and probe size): which pays depends on the
    /// machine (measured: L2 one stripe ahead 10.7 GB/s against 8.8 for L1 on one 2-core Zen 5
    /// VM, L1 18.1 against 13.3-14.9 for L2 on another; docs/validation.md §5). Off: `ahead`,
    /// `ahead_hint`, `ahead_shuffle` and `ahead_body` fixed (under pressure, the paper's order
    /// and body).
    pub ahead_tune: bool,
    /// Most stripes ahead the hill climb tries.
    pub ahead_max: usize,
    /// Largest stripe (k x block bytes) for which the coordinator picks stripe-ahead prefetch:
    /// the stripe being computed and the one prefetched must stay in L2 together (256 KiB is a
    /// quarter of the 1 MiB L2 of this machine's and Intel's server cores).
    pub ahead_max_stripe_bytes: usize,
    /// Cache level stripe-ahead prefetches fill (L2); with `ahead_tune`, the level tried first.
    pub ahead_hint: Hint,
    /// Visit the lines of each stripe-ahead block in DIALGA's shuffled order (off); with
    /// `ahead_tune`, the order tried first. Software prefetch already fetches every line, so
    /// starving the L2 stream prefetcher can only remove its fetches past the ends of the
    /// blocks, the likely gain (no counters on this VM to confirm it). Measured, RS(12,8) 1 KiB
    /// one or two stripes ahead into L1: 21.2-23.2 against 19.5-20.5 GB/s in address order on
    /// one thread, 28.6-45.9 against 27.0-38.9 on two; at k = 48 it collapses (8.4-9.1 against
    /// 19.3-20.3), hence climbed, not fixed (docs/validation.md §5).
    pub ahead_shuffle: bool,
    /// Loop body of stripe-ahead prefetch (64 B lines); with `ahead_tune`, the body tried
    /// first. Measured, RS(52,48) 1 KiB one or two stripes ahead into L1: 256 B bodies
    /// 21.4-21.6 GB/s against 19.4-20.1 for lines; RS(12,8) within 10% either way
    /// (docs/validation.md §5).
    pub ahead_body: Body,
    /// Tuner parameters.
    pub tuner: TunerConfig,
    /// Calls between vanilla probes for cache residency.
    pub probe_every: u64,
    /// A vanilla probe this close to the compute cost (calibrated over a 256 KiB working set,
    /// i.e. in L2) means cache-resident data; data from memory costs 5x and more (RS(12,8) /
    /// RS(28,24) 1 KiB single calls over 1 GiB: 8.6-9.1x an L1-calibrated cost).
    pub cache_factor: f64,
    /// A resident verdict is dropped when a measured call costs this many times the compute
    /// cost.
    pub cache_leave_factor: f64,
    /// Sample one call in this many once the tuner has converged.
    pub sample_every: u64,
    /// Largest stripe (k x block bytes) of a lone-stripe call (one stripe per call) for which
    /// the coordinator picks among [`LONE_SCHEDULES`] by measuring them: the stripe must stay
    /// in L2 once fetched (0 = never; the paper's line-distance schedule then applies).
    pub lone_max_stripe_bytes: usize,
    /// Smaller lone stripes (k x block bytes) run plain, with regular stores: their fixed cost
    /// per call outweighs any fetch, and a non-temporal store's fence costs more than the
    /// stripe (RS(12,8) 64 B blocks in cache: 321 ns a call with the lone-stripe schedules,
    /// 56 plain; 256 B: 84 against 91; validation §5).
    pub lone_min_stripe_bytes: usize,
    /// Measured calls per lone-stripe schedule in each selection round.
    pub lone_trials: u32,
    /// Calls on the chosen lone-stripe schedule before the schedules are measured again.
    pub lone_period: u64,
}

/// The schedules a lone stripe (one stripe per call, nothing after it to prefetch) is run with,
/// one chosen per block length by measuring each: loaded source by source, then computed in
/// 256 B bodies; prefetched into L2, or into L1, in row order (line by line across the
/// sources), then computed likewise; no fetch, 64 B rows, the hardware prefetcher alone (long
/// blocks); the stripe's own pipelined prefetch into L1, 512 bytes ahead in each source with
/// 256 B bodies or 256 bytes ahead with 64 B rows, the first bytes prefetched source by source;
/// the sources in address order, two at a time, the parity accumulated in an L1 scratch
/// buffer, prefetching two pairs ahead (`Fetch::BySource`, offered from [`BY_SOURCE_MIN_K`]
/// sources with the AVX-512 + GFNI kernel); the pipelined prefetch 512 bytes ahead with its
/// first 512 bytes in row order — these eight with non-temporal parity stores — and no fetch,
/// 256 B bodies, regular stores (data and parity resident in cache; the last, see
/// `LonePick`). Which wins depends on the host and moves between selection rounds where
/// two are close (validation §5): on an AMD Zen VM, loading at RS(28,24) and RS(52,48) 1 KiB,
/// loading or the L2 prefetch at RS(12,8) 1 KiB, the hardware prefetcher at RS(12,8) 4 KiB; on
/// an Intel Xeon VM the source-major order at RS(52,48) 1 KiB and mostly the pipelined
/// prefetch at RS(12,8) 1 KiB (`lone_path` example, `pmlab ec percall`; both with the whole-
/// stripe prefetches still source by source). With them in row order, on an AMD Zen 4 VM the
/// L1 and L2 prefetches and the row-head pipelined one take turns at RS(12,8) 1 KiB. The last wins where
/// the caller's stripes stay in cache, whatever the residency probes conclude.
pub const LONE_SCHEDULES: [Schedule; 9] = [
    Schedule {
        body: Body::XpLine,
        nt: true,
        fetch: Fetch::Load,
        ..Schedule::VANILLA
    },
    Schedule {
        body: Body::XpLine,
        nt: true,
        fetch: Fetch::Prefetch(Hint::L2),
        ..Schedule::VANILLA
    },
    Schedule {
        body: Body::XpLine,
        nt: true,
        fetch: Fetch::Prefetch(Hint::L1),
        ..Schedule::VANILLA
    },
    Schedule {
        body: Body::Line,
        nt: true,
        ..Schedule::VANILLA
    },
    Schedule {
        body: Body::XpLine,
        nt: true,
        fetch: Fetch::Pipelined {
            hint: Hint::L1,
            ahead: 512,
            rows: false,
        },
        ..Schedule::VANILLA
    },
    Schedule {
        body: Body::Line,
        nt: true,
        fetch: Fetch::Pipelined {
            hint: Hint::L1,
            ahead: 256,
            rows: false,
        },
        ..Schedule::VANILLA
    },
    Schedule {
        body: Body::Line,
        nt: true,
        fetch: Fetch::BySource { group: 2, ahead: 2 },
        ..Schedule::VANILLA
    },
    Schedule {
        body: Body::XpLine,
        nt: true,
        fetch: Fetch::Pipelined {
            hint: Hint::L1,
            ahead: 512,
            rows: true,
        },
        ..Schedule::VANILLA
    },
    Schedule {
        body: Body::XpLine,
        nt: false,
        ..Schedule::VANILLA
    },
];

/// Fewest sources for which the source-major schedule (`Fetch::BySource`) is among the
/// lone-stripe candidates, and only with the AVX-512 + GFNI kernel (its own loop; the other
/// kernels run it as a kernel call per pair). Through the ISA-L entry points it ran at 0.86x
/// the other schedules' choice at RS(12,8) 1 KiB, 1.02x at RS(28,24) and 1.08x at RS(52,48)
/// (medians of 9 interleaved `pmlab ec percall` rounds), and offered to the other kernels at
/// RS(28,24) and RS(52,48) 0.92-1.01x (validation §5); a 5-call trial does not reliably see
/// such losses.
pub const BY_SOURCE_MIN_K: usize = 16;

/// Whether lone-stripe schedule `s` is a candidate where the source-major order is offered
/// (`by_source`, see [`BY_SOURCE_MIN_K`]).
fn lone_offered(s: &Schedule, by_source: bool) -> bool {
    by_source || !matches!(s.fetch, Fetch::BySource { .. })
}

/// The lone-stripe schedule choice of one block length.
#[derive(Debug, Default, Clone)]
struct LonePick {
    /// Cycles per line measured per schedule in the current round.
    samples: [Vec<f64>; LONE_SCHEDULES.len()],
    /// The chosen schedule, and the calls made on it since.
    chosen: Option<(usize, u64)>,
}

impl LonePick {
    /// The schedule to run next and whether it is a trial of the selection round. The last
    /// schedule (regular stores) competes only if it ran at cache speed (below
    /// `resident_cpl`): its timing leaves out the write-backs its stores cause after the call,
    /// so out of cache it would look cheaper than it is.
    fn next(
        &mut self,
        trials: u32,
        period: u64,
        resident_cpl: f64,
        by_source: bool,
    ) -> (usize, bool) {
        if let Some((c, calls)) = &mut self.chosen {
            *calls += 1;
            if *calls <= period {
                return (*c, false);
            }
            self.chosen = None;
            self.samples = Default::default();
        }
        let n = LONE_SCHEDULES.len();
        let offered = |v: &usize| lone_offered(&LONE_SCHEDULES[*v], by_source);
        let v = (0..n)
            .filter(offered)
            .min_by_key(|&v| self.samples[v].len())
            .expect("lone schedules");
        if self.samples[v].len() < trials as usize {
            return (v, true);
        }
        // every schedule measured: the lowest median wins
        let median = |s: &[f64]| {
            let mut s = s.to_vec();
            s.sort_by(f64::total_cmp);
            s[s.len() / 2]
        };
        let best = (0..n)
            .filter(offered)
            .filter(|&v| v + 1 < n || median(&self.samples[v]) < resident_cpl)
            .min_by(|&a, &b| median(&self.samples[a]).total_cmp(&median(&self.samples[b])))
            .expect("lone schedules");
        self.chosen = Some((best, 1));
        (best, false)
    }
}

/// The largest software prefetch distance a configuration or a fixed schedule may name, in
/// cache lines (4 MiB ahead; the tuner's default range ends at 1024). A prefetch pattern holds
/// about twice its distance in entries: `fixed_distance` = 2^63 overflowed its size and
/// panicked, and a tuner neighbourhood of `usize::MAX` searched for ever.
pub const MAX_DISTANCE: usize = 1 << 16;

impl CoordinatorConfig {
    /// Refuse values the coordinator cannot run with (each panicked or hung in the first
    /// calls): `probe_every` 0 (a division by zero), `lone_trials` 0 (a median of no samples),
    /// a tuner distance range that is empty (`max_distance` below `max(min_distance, 1)`), and
    /// distances beyond [`MAX_DISTANCE`] (`fixed_distance`, the tuner's `max_distance`, a
    /// `neighbourhood` above twice it). [`crate::CodecBuilder::build`] checks this.
    pub fn validate(&self) -> crate::Result<()> {
        let bad = |what: String| Err(crate::Error::InvalidParameter(what));
        if self.probe_every == 0 {
            return bad("coordinator probe_every must be at least 1".into());
        }
        if self.lone_trials == 0 {
            return bad("coordinator lone_trials must be at least 1".into());
        }
        if let Some(d) = self.fixed_distance.filter(|&d| d > MAX_DISTANCE) {
            return bad(format!(
                "coordinator fixed_distance {d} exceeds {MAX_DISTANCE} cache lines"
            ));
        }
        let t = &self.tuner;
        if t.max_distance > MAX_DISTANCE {
            return bad(format!(
                "tuner max_distance {} exceeds {MAX_DISTANCE} cache lines",
                t.max_distance
            ));
        }
        if t.neighbourhood > 2 * MAX_DISTANCE {
            return bad(format!(
                "tuner neighbourhood {} exceeds {} (twice the largest distance)",
                t.neighbourhood,
                2 * MAX_DISTANCE
            ));
        }
        if t.max_distance < t.min_distance.max(1) {
            return bad(format!(
                "tuner distance range {}..={} is empty (max_distance must be at least \
                 max(min_distance, 1))",
                t.min_distance, t.max_distance
            ));
        }
        Ok(())
    }
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        CoordinatorConfig {
            latency_threshold: 1.10,
            useless_prefetch_threshold: 1.50,
            thread_threshold: 12,
            wide_stripe: 32,
            xpline_extra: 4,
            read_buffer_bytes: 96 * 1024,
            nt: None,
            fixed_distance: None,
            ahead: 1,
            ahead_tune: true,
            ahead_max: 4,
            ahead_max_stripe_bytes: 256 * 1024,
            ahead_hint: Hint::L2,
            ahead_shuffle: false,
            ahead_body: Body::Line,
            tuner: TunerConfig::default(),
            probe_every: 256,
            cache_factor: 2.5,
            cache_leave_factor: 4.0,
            sample_every: 8,
            lone_max_stripe_bytes: 256 * 1024,
            lone_min_stripe_bytes: 2048,
            lone_trials: 5,
            lone_period: 4096,
        }
    }
}

/// What the coordinator concluded for a call (for reports and tests).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decision {
    /// Schedule used.
    pub schedule: Schedule,
    /// High pressure detected.
    pub pressure: bool,
    /// Data judged cache-resident.
    pub cache_resident: bool,
    /// Concurrency seen.
    pub threads: usize,
    /// The call is timed for the coordinator (a probe, a tuning step or a sample): a caller
    /// that skips the coordinator for some calls should not repeat this schedule blindly.
    pub measured: bool,
}

/// What the coordinator did for one block length (for reports).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoordinatorStats {
    /// Calls.
    pub calls: u64,
    /// Calls run with software prefetch.
    pub prefetch_calls: u64,
    /// Calls judged cache-resident (plain kernels).
    pub cache_resident_calls: u64,
    /// Calls under high pressure.
    pub pressure_calls: u64,
    /// Schedule of the latest call that was not a cache-residency probe.
    pub last_schedule: Option<Schedule>,
    /// Hill-climb searches started so far (distance and stripe-ahead tuners together; each
    /// tuner starts one when it is created, then one per move and per drift).
    pub searches: u32,
}

#[derive(Debug)]
struct Entry {
    stats: CoordinatorStats,
    tuner: Tuner,
    /// Hill climb of stripe-ahead prefetch: distance = stripes ahead; variant bit 0 flips the
    /// configured hint to the other level, bit 1 the configured line order, bit 2 the
    /// configured loop body.
    ahead_tuner: Tuner,
    cache_resident: bool,
    calls: u64,
    /// Lowest cycles per line seen without pressure (latency baseline).
    base_cpl: f64,
    last_cpl: f64,
    base_useless: f64,
    last_useless: f64,
    /// The periodic vanilla probe ran clearly faster than the prefetching schedule at two
    /// probes in a row: the hardware prefetcher alone keeps up (DRAM-like latency), so software
    /// prefetch only costs issue slots. Re-decided at every probe, with hysteresis.
    prefer_vanilla: bool,
    /// Moving average (weight 1/4) of the prefetching schedule's cycles per line, which the
    /// vanilla probes are compared with: single samples vary by 10-50% when threads share the
    /// memory system, and one lucky probe used to switch a 2-thread run to vanilla.
    pf_cpl: f64,
    /// Consecutive probes that found vanilla faster (switch at 2).
    vanilla_wins: u32,
    /// Consecutive sampled resident calls that cost more than the leave factor (leave at 2):
    /// an interrupt inside one call of a few hundred nanoseconds (seen about once in 5 000
    /// calls) must not send a resident caller to non-temporal stores until the next probe.
    leave_votes: u32,
    /// Lone-stripe calls: which schedule of [`LONE_SCHEDULES`] runs them.
    lone: LonePick,
}

/// A schedule must beat the other by this factor (cycles per line) to switch between vanilla
/// and software prefetch: single samples are noisy.
const SWITCH_MARGIN: f64 = 0.9;

/// Single-stripe calls of one geometry that reuse the coordinator's last unmeasured decision
/// before it is asked again (the ISA-L entry points and a `Codec`'s single-stripe calls). Asking
/// it costs a lock, locked atomic operations, which wait for the
/// previous calls' parity stores to drain, and a time-stamp read: in-cache RS(12,8) 1 KiB
/// single calls spent 7% of their time in it while it timed every call it saw (perf,
/// validation §5). Asked every 32nd call, it keeps its probes, samples and tuning, 32 times
/// sparser in calls (a client encoding 100 000 stripes a second still gives it hundreds of
/// timed samples a second).
pub const REUSE_CALLS: u32 = 31;

/// Slots of encode calls in progress, one per thread (modulo the count): a thread marks its
/// slot for the duration of each call ([`CallInProgress`]) with plain stores, and
/// [`Coordinator::begin`] counts the marked slots as the concurrency it sees besides what the
/// caller declares. A shared counter would need a locked operation per call, which waits for
/// the previous call's non-temporal parity stores to drain (validation §5). Threads beyond the
/// slot count share slots, so they are undercounted, far above the pressure threshold.
const CALL_SLOTS: usize = 64;

/// One thread's in-call mark, alone in its cache line.
#[repr(align(64))]
struct CallSlot(AtomicBool);

static IN_CALL: [CallSlot; CALL_SLOTS] = [const { CallSlot(AtomicBool::new(false)) }; CALL_SLOTS];

/// Threads that have taken a call slot.
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's call slot (`usize::MAX` until its first call).
    static MY_SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// Marks this thread's encode call in progress until dropped: the coordinator counts such calls
/// as concurrency besides what a caller declares. Per-thread slots written with plain stores,
/// since a shared counter's locked operations wait for the previous call's non-temporal parity
/// stores to drain.
pub struct CallInProgress(usize);

impl CallInProgress {
    /// Marks the call.
    #[inline]
    pub fn begin() -> CallInProgress {
        CallInProgress::in_slot(thread_slot())
    }

    /// Marks the call in `slot`, this thread's [`thread_slot`] kept at hand (the ISA-L entry
    /// points keep it with a thread's prepared tables), without the thread-local lookup.
    #[inline]
    pub fn in_slot(slot: usize) -> CallInProgress {
        let slot = slot % CALL_SLOTS;
        IN_CALL[slot].0.store(true, Ordering::Relaxed);
        CallInProgress(slot)
    }
}

/// This thread's call slot for [`CallInProgress::in_slot`] (taken at its first use).
pub fn thread_slot() -> usize {
    MY_SLOT
        .try_with(|s| {
            if s.get() == usize::MAX {
                s.set(NEXT_SLOT.fetch_add(1, Ordering::Relaxed) % CALL_SLOTS);
            }
            s.get()
        })
        // (a call from a thread-local destructor after this one's: the shared last slot)
        .unwrap_or(CALL_SLOTS - 1)
}

impl Drop for CallInProgress {
    #[inline]
    fn drop(&mut self) {
        IN_CALL[self.0].0.store(false, Ordering::Relaxed);
    }
}

/// Encode calls in progress now (marked slots).
fn calls_in_progress() -> usize {
    IN_CALL
        .iter()
        .filter(|s| s.0.load(Ordering::Relaxed))
        .count()
}

/// Coordinators made so far (each gets the next number as its id).
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static COUNTERS: RefCell<Option<Option<HwCounters>>> = const { RefCell::new(None) };
}

fn with_counters<R>(f: impl FnOnce(Option<&HwCounters>) -> R) -> R {
    // Without the thread's counters (destroyed: an encode from a thread-local destructor; or
    // in use: one from a signal handler during another) the call goes unmeasured.
    let mut f = Some(f);
    if let Ok(Some(r)) = COUNTERS.try_with(|c| {
        let mut c = c.try_borrow_mut().ok()?;
        if c.is_none() {
            *c = Some(if std::env::var_os("PMEC_NO_PERF").is_some() {
                None
            } else {
                HwCounters::open()
            });
        }
        Some(f.take()?(c.as_ref().and_then(|o| o.as_ref())))
    }) {
        return r;
    }
    // Not run above: `f` is taken only on the way into its call, which then returns.
    f.take().expect("not called yet")(None)
}

/// Which tuner a measured call reports to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tuned {
    /// None (fixed schedule, probe, vanilla).
    None,
    /// The prefetch distance and loop body; the candidate the call ran.
    Distance(Cand),
    /// Stripes ahead and variant (hint, order, body) of stripe-ahead prefetch; the candidate
    /// the call ran.
    Ahead(Cand),
    /// A trial of lone-stripe schedule `.0`.
    Lone(usize),
}

/// What a vanilla probe call is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
    /// Not a probe.
    None,
    /// Decides cache residency: vanilla with regular parity stores, as a resident caller's
    /// calls run. With non-temporal stores a resident stripe's parity goes to memory, which
    /// on one host cost 4x the compute cost per line and kept every probe's verdict "out of
    /// cache" (RS(12,8) 1 KiB in a 256 KiB working set, Intel VM: 16-24 cycles per line
    /// against a calibrated 4.6-5.2; validation §5).
    Residency,
    /// Competes with the prefetching schedule: vanilla with the same non-temporal stores, so
    /// the two are timed like for like.
    Vanilla,
}

/// A call in progress: the schedule to run and what to measure.
#[derive(Debug)]
pub struct Ticket {
    /// Chosen schedule.
    pub decision: Decision,
    key: (usize, bool),
    probe: Probe,
    measure: bool,
    tuned: Tuned,
    t0: u64,
    c0: Option<super::counters::Sample>,
    lines: u64,
    /// [`kernels::first_line_latency`] of the call's sources, where the caller measured it.
    latency: Option<(u64, u64)>,
}

impl Ticket {
    /// Whether this call is a residency probe. A caller that will overwrite every destination
    /// byte may then bring the destinations into cache ([`own_lines`]) and [`restart`] the
    /// timer, so the verdict does not depend on where pmec's own earlier non-temporal stores
    /// left the parity.
    ///
    /// [`own_lines`]: crate::kernels::own_lines
    /// [`restart`]: Ticket::restart
    pub fn residency_probe(&self) -> bool {
        self.probe == Probe::Residency
    }

    /// Whether the coordinator wants [`kernels::first_line_latency`] of this call's sources
    /// (residency probes, and measured calls while the data is judged resident), given with
    /// [`Ticket::set_latency`] before anything else touches the sources.
    pub fn wants_latency(&self) -> bool {
        self.measure && (self.probe == Probe::Residency || self.decision.cache_resident)
    }

    /// The sources' [`kernels::first_line_latency`] (cold, warm ticks per load).
    pub fn set_latency(&mut self, (cold, warm): (u64, u64)) {
        self.latency = Some((cold, warm));
    }

    /// Leaves this call out of the coordinator's measurements (the caller touched the sources
    /// before a call that wanted their latency, so neither its cost nor the latency is
    /// theirs).
    pub fn discard(&mut self) {
        self.measure = false;
    }

    /// Restarts a measured call's timer (the caller did untimed set-up after `begin`).
    pub fn restart(&mut self) {
        if self.measure {
            self.t0 = tsc();
        }
    }
}

/// Chooses schedules for one codec geometry (k sources, m destinations).
#[derive(Debug)]
pub struct Coordinator {
    cfg: CoordinatorConfig,
    strategy: Strategy,
    k: usize,
    m: usize,
    /// The source-major lone-stripe schedule is a candidate ([`BY_SOURCE_MIN_K`]).
    by_source: bool,
    /// Calibrated cycles per source line with data in L2.
    compute_cpl: f64,
    /// Ticks of one first-line load from memory ([`kernels::memory_latency`]).
    memory_latency: f64,
    /// Unique in the process (for callers that cache a decision per coordinator).
    id: u64,
    /// Per (block length, pressure) state; few entries, searched linearly.
    state: Mutex<Vec<((usize, bool), Entry)>>,
}

/// The sources' first lines came from memory when their loads took more than this share of
/// [`kernels::memory_latency`] each, and more than [`NEAR_RATIO`] times the same loads as L1
/// hits. On a Xeon VM (`first_line_latency` over 8 random lines of a working set, 2,000 tries,
/// p10-p90, cold over warm): 256 KiB 1.3-1.4x, 1 MiB 1.5-1.9x, 16 MiB (in L3) 10-19x, 2 GiB
/// 27-45x; L3 data counts as resident (regular stores ran RS(12,8) stripes of a 16 MiB pool at
/// 83-90% of the plain move, non-temporal ones at 55-62%, `lone_path` with `POOL_KIB=16384`).
const FAR_MEMORY_SHARE: f64 = 0.6;

/// Cold loads within this many times the warm ones are L1/L2 hits, whatever the memory latency.
const NEAR_RATIO: f64 = 2.5;

fn tsc() -> u64 {
    // SAFETY: rdtsc has no preconditions on x86_64.
    unsafe { core::arch::x86_64::_rdtsc() }
}

impl Coordinator {
    /// Coordinator for `coefs` (m x k) run with `isa`; calibrates the in-cache compute cost (once
    /// per kernel and shape in a process).
    ///
    /// # Panics
    /// Here or in later calls, if `cfg` fails [`CoordinatorConfig::validate`].
    pub fn new(strategy: Strategy, cfg: CoordinatorConfig, isa: Isa, coefs: &Coefs) -> Coordinator {
        let (k, m) = (coefs.cols(), coefs.rows());
        let compute_cpl = calibrated(isa, coefs);
        Coordinator {
            cfg,
            strategy,
            k,
            m,
            by_source: isa == Isa::Avx512Gfni && k >= BY_SOURCE_MIN_K,
            compute_cpl,
            memory_latency: kernels::memory_latency() as f64,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            state: Mutex::new(Vec::new()),
        }
    }

    /// Unique among the coordinators of this process (a cached decision's owner).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Whether per-load first-line latencies `(cold, warm)` say the sources came from memory
    /// (not L1, L2 or L3).
    fn far(&self, (cold, warm): (u64, u64)) -> bool {
        let cold = cold as f64;
        cold > NEAR_RATIO * warm.max(1) as f64 && cold > FAR_MEMORY_SHARE * self.memory_latency
    }

    /// The strategy in force.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// Configuration.
    pub fn config(&self) -> &CoordinatorConfig {
        &self.cfg
    }

    /// Calibrated in-cache cycles (TSC ticks) per source cache line.
    pub fn compute_cost(&self) -> f64 {
        self.compute_cpl
    }

    /// Current tuned distance for a block length (None before any call with it).
    pub fn tuned_distance(&self, len: usize, pressure: bool) -> Option<usize> {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.iter()
            .find(|(k, _)| *k == (len, pressure))
            .map(|(_, e)| e.tuner.distance())
    }

    /// Statistics per (block length, pressure) seen so far.
    pub fn stats(&self) -> Vec<((usize, bool), CoordinatorStats)> {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.iter()
            .map(|(k, e)| {
                let searches = e.tuner.searches() + e.ahead_tuner.searches();
                (
                    *k,
                    CoordinatorStats {
                        searches,
                        ..e.stats
                    },
                )
            })
            .collect()
    }

    /// Eq. 1: largest distance keeping `threads * k * 256 B * ceil(d / (k + m))` within the
    /// read buffer (m counts only with cached parity stores); at least k.
    pub fn distance_cap(&self, threads: usize, nt: bool) -> usize {
        let (k, m) = (self.k, if nt { 0 } else { self.m });
        let per_row = threads.max(1) * k * 256;
        let rows = self.cfg.read_buffer_bytes / per_row.max(1);
        (rows * (k + m)).max(k)
    }

    /// Choose the schedule for a call over `stripes` stripes of `len`-byte blocks issued with
    /// `threads` declared concurrent encoders.
    pub fn begin(&self, len: usize, stripes: usize, threads: usize) -> Ticket {
        let threads = threads.max(calls_in_progress());
        let lines = (self.k * len / 64 * stripes.max(1)) as u64;
        let cfg = &self.cfg;
        let mut pressure = threads > cfg.thread_threshold;
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        // latency / useless-prefetch signals from the low-pressure entry
        if !pressure {
            if let Some((_, e)) = st.iter().find(|(k, _)| *k == (len, false)) {
                let lat = e.base_cpl > 0.0 && e.last_cpl > cfg.latency_threshold * e.base_cpl;
                let useless = if e.base_useless > 0.0 {
                    e.last_useless > cfg.useless_prefetch_threshold * e.base_useless
                } else {
                    threads > 1
                };
                pressure = lat && useless && !e.cache_resident;
            }
        }
        let key = (len, pressure);
        let start_d = cfg.fixed_distance.unwrap_or(self.k);
        let auto_s = self.strategy == Strategy::Auto;
        let idx = match st.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                if st.len() >= 64 {
                    st.remove(0);
                }
                let e = Entry {
                    stats: CoordinatorStats::default(),
                    // Auto climbs the loop body (variant 0 = 64 B, 1 = 256 B) with the distance
                    tuner: Tuner::with_variants(start_d, if auto_s { 2 } else { 1 }, cfg.tuner),
                    ahead_tuner: Tuner::with_variants(
                        cfg.ahead.max(1),
                        8,
                        TunerConfig {
                            neighbourhood: 2,
                            min_distance: 1,
                            max_distance: cfg.ahead_max.max(1),
                            try_zero: false,
                            ..cfg.tuner
                        },
                    ),
                    cache_resident: false,
                    calls: 0,
                    base_cpl: 0.0,
                    last_cpl: 0.0,
                    base_useless: 0.0,
                    last_useless: 0.0,
                    prefer_vanilla: false,
                    pf_cpl: 0.0,
                    vanilla_wins: 0,
                    leave_votes: 0,
                    lone: LonePick::default(),
                };
                st.push((key, e));
                st.len() - 1
            }
        };
        let e = &mut st[idx].1;
        e.calls += 1;
        let auto = self.strategy == Strategy::Auto;
        // Vanilla probes, while the data is not known to be resident: a residency probe at the
        // first call, after the first samples and once per probe period; a probe competing with
        // the prefetching schedule three quarters into each period.
        let probe_kind = if !auto || e.cache_resident {
            Probe::None
        } else if e.calls == 1
            || e.calls == 2 * cfg.sample_every + 1
            || e.calls.is_multiple_of(cfg.probe_every)
        {
            Probe::Residency
        } else if e.calls % cfg.probe_every == 3 * cfg.probe_every / 4 {
            Probe::Vanilla
        } else {
            Probe::None
        };
        let probe = probe_kind != Probe::None;
        let tuned = cfg.fixed_distance.unwrap_or_else(|| e.tuner.distance());
        // While vanilla is preferred, the prefetching schedule still runs (measured) once per
        // probe period, so the next probe compares against a fresh sample.
        let prefetch_probe = auto
            && e.prefer_vanilla
            && !e.cache_resident
            && e.calls % cfg.probe_every == cfg.probe_every / 2;
        let vanilla_now = auto && e.prefer_vanilla && !pressure && !prefetch_probe;
        let hw_friendly = len >= 4096 && len.is_multiple_of(4096);
        let wide = self.k > cfg.wide_stripe;
        // stripe-ahead prefetch: a next stripe exists in this call (and, for Auto, both
        // stripes fit in L2 together); it has no distance to tune. Under high pressure too:
        // there the climb starts from the paper's remedies (shuffle mapping where the paper
        // starves the hardware prefetcher, 256 B bodies) and keeps them only if they measure
        // better. Forcing the paper's line-distance schedule on every batch under pressure
        // had cost a quarter of the throughput on two threads here (RS(12,8) 1 KiB, one codec
        // used on one thread and then on two: 15.0-15.6 GB/s against 20.7-21.3 for fresh
        // codecs, `codec_reuse` example), where the pressure signal (latency above 110%,
        // useless prefetches assumed from concurrency without counters) fires on any second
        // thread.
        let ahead_now = cfg.ahead > 0
            && stripes >= 2
            && match self.strategy {
                Strategy::StripeAhead => true,
                Strategy::Auto => {
                    !probe
                        && !e.cache_resident
                        && !vanilla_now
                        && self.k * len <= cfg.ahead_max_stripe_bytes
                }
                _ => false,
            };
        let tune_ahead = ahead_now && auto && cfg.ahead_tune;
        // the paper's high-pressure line order and body: shuffled unless the blocks are the
        // hardware prefetcher's best case or the stripe defeats it anyway, 256 B bodies
        let remedies = (
            !hw_friendly && !wide,
            if len >= 256 { Body::XpLine } else { Body::Line },
        );
        // line order and body variant 0 of the stripe-ahead climb: the configured ones, or
        // under pressure the paper's
        let (base_shuffle, base_body) = if pressure && auto {
            remedies
        } else {
            (cfg.ahead_shuffle, cfg.ahead_body)
        };
        let (ahead, hint, shuffle, body) = if tune_ahead {
            let v = e.ahead_tuner.variant();
            let hint = match (v & 1, cfg.ahead_hint) {
                (0, h) => h,
                (_, Hint::L1) => Hint::L2,
                (_, Hint::L2) => Hint::L1,
            };
            let body = match (v & 4, base_body) {
                (0, b) => b,
                (_, Body::Line) => Body::XpLine,
                (_, Body::XpLine) => Body::Line,
            };
            let shuffle = base_shuffle ^ (v & 2 != 0);
            (e.ahead_tuner.distance(), hint, shuffle, body)
        } else {
            (cfg.ahead, cfg.ahead_hint, base_shuffle, base_body)
        };
        let ahead_schedule = Schedule {
            ahead,
            hint,
            shuffle,
            body,
            nt: cfg.nt.unwrap_or(true),
            ..Schedule::VANILLA
        };
        // A lone stripe with nothing after it to prefetch: one of the lone-stripe schedules,
        // chosen by measuring them (they replace the prefetching schedule, so vanilla probes
        // compare against the chosen one). Not under pressure: there the paper's remedies.
        let resident_cpl = cfg.cache_factor * self.compute_cpl;
        let tiny = auto && stripes <= 1 && self.k * len < cfg.lone_min_stripe_bytes;
        let lone = (auto
            && stripes <= 1
            && !(tiny || probe || e.cache_resident || vanilla_now || pressure)
            && self.k * len <= cfg.lone_max_stripe_bytes)
            .then(|| {
                e.lone.next(
                    cfg.lone_trials,
                    cfg.lone_period,
                    resident_cpl,
                    self.by_source,
                )
            });
        // Vanilla calls chosen by preference are not sampled (resident ones excepted, below):
        // `last_cpl` keeps the prefetching schedule's cost for the next probe to compare with.
        // Only calls that run the tuned distance feed the distance tuner, so only they are
        // timed for it; resident and lone-stripe calls are sampled (timing every one of them
        // had made each single call pay the coordinator's full bookkeeping).
        let runs_tuned = cfg.fixed_distance.is_none()
            && !matches!(self.strategy, Strategy::Fixed(_) | Strategy::Vanilla)
            && !(auto && (e.cache_resident || lone.is_some() || tiny));
        // A resident verdict is sampled whatever else holds: it can only be voted out by its
        // samples (under a vanilla preference nothing else was measured, and random stripes
        // of a 1 GiB pool once stayed "resident" for 150,000 calls that way).
        let measure = probe
            || prefetch_probe
            || lone.is_some_and(|(_, trial)| trial)
            || (auto && e.cache_resident && e.calls.is_multiple_of(16))
            || (!vanilla_now
                && ((runs_tuned && e.tuner.searching() && !ahead_now)
                    || (tune_ahead && e.ahead_tuner.searching())
                    || e.calls.is_multiple_of(cfg.sample_every)));
        let nt_default = cfg.nt.unwrap_or(true);
        let schedule = match self.strategy {
            _ if ahead_now => ahead_schedule,
            Strategy::Fixed(s) => s,
            Strategy::Vanilla => Schedule {
                nt: cfg.nt.unwrap_or(false),
                ..Schedule::VANILLA
            },
            Strategy::SoftwarePrefetch | Strategy::StripeAhead => Schedule {
                distance: tuned,
                xpline_distance: None,
                shuffle: false,
                body: Body::Line,
                nt: nt_default,
                ..Schedule::VANILLA
            },
            Strategy::BufferFriendly => Schedule {
                distance: tuned,
                xpline_distance: (tuned > 0).then_some(tuned + cfg.xpline_extra),
                shuffle: false,
                body: Body::Line,
                nt: nt_default,
                ..Schedule::VANILLA
            },
            Strategy::NoHwPrefetch => Schedule {
                distance: tuned,
                xpline_distance: None,
                shuffle: true,
                body: Body::Line,
                nt: nt_default,
                ..Schedule::VANILLA
            },
            Strategy::HighPressure => Schedule {
                distance: tuned.min(self.distance_cap(threads, nt_default)),
                xpline_distance: None,
                shuffle: true,
                body: Body::XpLine,
                nt: nt_default,
                ..Schedule::VANILLA
            },
            Strategy::Auto => {
                if probe || e.cache_resident || vanilla_now {
                    // No software prefetch. Regular stores where the data may be cache-resident
                    // (residency probes, which decide that, and resident data); otherwise the
                    // prefetching schedules' non-temporal stores, so that vanilla and prefetching
                    // calls are timed like for like: a regular store's read-for-ownership and
                    // write-back complete after the timed call, so vanilla calls with them
                    // looked as cheap as prefetching ones while running 20% slower overall
                    // (RS(12,8) 1 KiB, one stripe per call).
                    let regular_stores = probe_kind == Probe::Residency || e.cache_resident;
                    Schedule {
                        nt: cfg.nt.unwrap_or(!regular_stores),
                        // resident data: 256 B bodies, a quarter of the per-body set-up
                        // (in-cache RS(12,8) 4 KiB single calls 35 -> 43 GB/s)
                        body: if e.cache_resident && !probe && len >= 256 {
                            Body::XpLine
                        } else {
                            Body::Line
                        },
                        ..Schedule::VANILLA
                    }
                } else {
                    // the tuned distance, capped by the read-buffer bound (Eq. 1) under pressure
                    let distance = if pressure {
                        tuned.min(self.distance_cap(threads, nt_default))
                    } else {
                        tuned
                    };
                    if pressure && e.tuner.variant() == 0 {
                        // the paper's high-pressure schedule, variant 0 of the climb
                        Schedule {
                            distance,
                            xpline_distance: None,
                            shuffle: remedies.0,
                            body: remedies.1,
                            nt: nt_default,
                            ..Schedule::VANILLA
                        }
                    } else {
                        // low pressure: tuned body (variant 1: 256 B); XPLine-first lines
                        // further ahead when lines are the loop body. Under pressure this is
                        // the climb's variant 1: the paper's remedies stay only while they
                        // measure better, since without counters the pressure signal fires on
                        // any second thread (RS(12,8) 1 KiB single calls, one codec used on one
                        // thread then on two: 11.4-13.1 GB/s with the remedies forced against
                        // 13.6-15.6 for a fresh codec).
                        let body = if !pressure && e.tuner.variant() == 1 && len >= 256 {
                            Body::XpLine
                        } else {
                            Body::Line
                        };
                        Schedule {
                            distance,
                            xpline_distance: (distance > 0 && body == Body::Line)
                                .then_some(distance + cfg.xpline_extra),
                            shuffle: false,
                            body,
                            nt: nt_default,
                            ..Schedule::VANILLA
                        }
                    }
                }
            }
        };
        let schedule = match lone {
            Some((v, _)) => Schedule {
                nt: cfg.nt.unwrap_or(LONE_SCHEDULES[v].nt),
                ..LONE_SCHEDULES[v]
            },
            None if tiny && !probe => Schedule {
                nt: cfg.nt.unwrap_or(false),
                ..Schedule::VANILLA
            },
            None => schedule,
        };
        let decision = Decision {
            schedule,
            pressure,
            cache_resident: e.cache_resident,
            threads,
            measured: measure,
        };
        let report_to = if let Some((v, true)) = lone {
            Tuned::Lone(v)
        } else if tune_ahead {
            Tuned::Ahead(e.ahead_tuner.current())
        } else if runs_tuned && !ahead_now && !(auto && (probe || vanilla_now)) {
            Tuned::Distance(e.tuner.current())
        } else {
            Tuned::None
        };
        e.stats.calls += 1;
        e.stats.cache_resident_calls += u64::from(e.cache_resident);
        e.stats.pressure_calls += u64::from(pressure);
        e.stats.prefetch_calls += u64::from(schedule.prefetches());
        if !probe {
            e.stats.last_schedule = Some(schedule);
        }
        drop(st);
        let c0 = if measure {
            with_counters(|c| c.and_then(|c| c.read()))
        } else {
            None
        };
        Ticket {
            decision,
            key,
            probe: probe_kind,
            measure,
            tuned: report_to,
            t0: if measure { tsc() } else { 0 },
            c0,
            lines,
            latency: None,
        }
    }

    /// Finish a call started with [`Coordinator::begin`]; `bytes` of source data were encoded.
    pub fn end(&self, t: Ticket, bytes: u64) {
        let cycles = if t.measure {
            tsc().saturating_sub(t.t0)
        } else {
            0
        };
        self.record(t, bytes, cycles);
    }

    /// The bookkeeping of [`Coordinator::end`] for a call that took `cycles`; tests inject
    /// call costs here instead of timing spin loops, which a loaded machine stretches.
    fn record(&self, t: Ticket, bytes: u64, cycles: u64) {
        if !t.measure || t.lines == 0 {
            return;
        }
        let useless = t.c0.and_then(|c0| {
            with_counters(|c| {
                c.and_then(|c| c.read())
                    .map(|s| s.prefetch_misses.saturating_sub(c0.prefetch_misses))
            })
        });
        let cpl = cycles as f64 / t.lines as f64;
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let Some((_, e)) = st.iter_mut().find(|(k, _)| *k == t.key) else {
            return;
        };
        // The sources' first lines came from memory: not resident, however cheap the call.
        let far = t.latency.is_some_and(|l| self.far(l));
        if t.probe == Probe::Residency {
            e.cache_resident = cpl < self.cfg.cache_factor * self.compute_cpl && !far;
            e.leave_votes = 0;
            return;
        }
        if t.probe == Probe::Vanilla {
            if !e.cache_resident && e.pf_cpl > 0.0 {
                if !e.prefer_vanilla {
                    if cpl < SWITCH_MARGIN * e.pf_cpl {
                        e.vanilla_wins += 1;
                        if e.vanilla_wins >= 2 {
                            e.prefer_vanilla = true;
                            e.vanilla_wins = 0;
                            // the next prefetching sample (the period's prefetch probe) alone
                            // decides whether to switch back
                            e.pf_cpl = 0.0;
                        }
                    } else {
                        e.vanilla_wins = 0;
                    }
                } else if e.pf_cpl < SWITCH_MARGIN * cpl {
                    e.prefer_vanilla = false;
                }
            }
            return;
        }
        if e.cache_resident {
            if cpl > self.cfg.cache_leave_factor * self.compute_cpl || far {
                e.leave_votes += 1;
                if e.leave_votes >= 2 {
                    e.cache_resident = false;
                    e.leave_votes = 0;
                }
            } else {
                e.leave_votes = 0;
            }
            return;
        }
        if let Tuned::Lone(v) = t.tuned {
            // a trial of a schedule that may not be chosen: not the competing schedule's sample
            e.lone.samples[v].push(cpl);
            return;
        }
        e.last_cpl = cpl;
        // Every measured call that is not a probe ran the schedule vanilla competes with, so it
        // is that schedule's sample, even where the tuned distance is 0 (counting prefetching
        // calls only had left a preferred vanilla with no sample to compare with, for good).
        e.pf_cpl = if e.pf_cpl == 0.0 || e.prefer_vanilla {
            cpl
        } else {
            0.75 * e.pf_cpl + 0.25 * cpl
        };
        if !t.key.1 && t.decision.threads <= 1 && (e.base_cpl == 0.0 || cpl < e.base_cpl) {
            e.base_cpl = cpl;
        }
        if let Some(u) = useless {
            let u = u as f64 / t.lines as f64;
            e.last_useless = u;
            if t.decision.threads <= 1 && (e.base_useless == 0.0 || u < e.base_useless) {
                e.base_useless = u.max(1e-6);
            }
        }
        match t.tuned {
            Tuned::Distance(ran) => e.tuner.record(ran, cycles, bytes),
            Tuned::Ahead(ran) => e.ahead_tuner.record(ran, cycles, bytes),
            Tuned::None | Tuned::Lone(_) => {}
        }
    }
}

/// Calibrations made so far, by kernel and shape (k, m).
type Calibrations = std::collections::HashMap<(Isa, usize, usize), f64>;

/// [`calibrate`]'s figure for `isa` and `coefs`' shape, measured once per process for the
/// vector kernels, whose cost does not depend on the coefficients' values (none treats a value
/// specially): measuring took tens of microseconds, as long as a hundred cached 4 KiB decodes,
/// for every coordinator, that is every new erasure pattern's decode plan and every new table
/// of the ISA-L entry points. The scalar kernel skips zero coefficients and XORs for ones, so
/// it is measured for each coordinator. A shape's first measurement stands for the process.
fn calibrated(isa: Isa, coefs: &Coefs) -> f64 {
    if isa == Isa::Scalar {
        return calibrate(isa, coefs);
    }
    // Fork-safe: a child forked while another thread held the lock measures afresh.
    static DONE: ForkSafe<Option<Calibrations>> = ForkSafe::new(|| None);
    let key = (isa, coefs.cols(), coefs.rows());
    let known = |d: &Option<Calibrations>| d.as_ref().and_then(|m| m.get(&key).copied());
    if let Some(cpl) = known(&DONE.lock()) {
        return cpl;
    }
    // Measured without the lock held: another thread may measure the same shape meanwhile,
    // and the first figure stored is the one every coordinator of the shape then uses.
    let cpl = calibrate(isa, coefs);
    let mut done = DONE.lock();
    *done
        .get_or_insert_with(Default::default)
        .entry(key)
        .or_insert(cpl)
}

/// Cycles per source line of the kernel on L2-resident data (stripes of k x 1 KiB filling
/// 256 KiB).
fn calibrate(isa: Isa, coefs: &Coefs) -> f64 {
    // Stripes of 1 KiB blocks filling 256 KiB, encoded pass after pass: the cost with the data
    // in L2, where a resident caller's data is (an L1-sized set made L2-resident callers look
    // up to 2x slower than "compute", close to the residency threshold).
    let (k, m) = (coefs.cols(), coefs.rows());
    let len = 1024;
    let stripes = ((256 << 10) / ((k + m.max(1)) * len)).max(1);
    let src = vec![0x5au8; stripes * k * len];
    let mut dst = vec![0u8; stripes * m.max(1) * len];
    let sets: Vec<(Vec<*const u8>, Vec<*mut u8>)> = (0..stripes)
        .map(|s| {
            let sp = (0..k).map(|j| src[(s * k + j) * len..].as_ptr()).collect();
            let dp = (0..m)
                .map(|p| dst[(s * m + p) * len..].as_mut_ptr())
                .collect();
            (sp, dp)
        })
        .collect();
    let mut best = u64::MAX;
    for _ in 0..8 {
        let t0 = tsc();
        for (sp, dp) in &sets {
            // SAFETY: buffers of k*len and m*len bytes per stripe, pointers within them, no
            // overlap.
            unsafe { kernels::encode_linear(isa, sp, dp, coefs, len, false, false) };
        }
        best = best.min(tsc().saturating_sub(t0));
    }
    std::hint::black_box(&dst);
    best as f64 / (stripes * k * len / 64) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix;

    fn coefs(k: usize, m: usize) -> Coefs {
        let g = matrix::gen_cauchy1_matrix(k + m, k);
        let rows: Vec<usize> = (k..k + m).collect();
        Coefs::new(&g.select_rows(&rows))
    }

    /// The default configuration without the cache-residency verdict: tests time no real work.
    fn untimed() -> CoordinatorConfig {
        CoordinatorConfig {
            cache_factor: 0.0,
            ..CoordinatorConfig::default()
        }
    }

    #[test]
    fn lone_schedules_are_named_strategies() {
        for (i, s) in LONE_SCHEDULES.iter().enumerate() {
            assert_eq!(
                Strategy::parse(&format!("lone{i}")).unwrap(),
                Strategy::Fixed(*s)
            );
        }
        let past = format!("lone{}", LONE_SCHEDULES.len());
        for bad in [past.as_str(), "lone", "lonex", "lone-1"] {
            let e = Strategy::parse(bad).unwrap_err().to_string();
            assert!(e.contains("lone0 to lone8"), "{bad}: {e}");
        }
        assert_eq!(Strategy::parse("ahead").unwrap(), Strategy::StripeAhead);
    }

    #[test]
    fn coordinators_of_one_shape_share_one_calibration() {
        // Two different matrices of one shape (6 x 3, which no other test here uses): the second
        // coordinator takes the first's figure instead of measuring its own, which two timings
        // would not give to the bit.
        let cauchy = coefs(6, 3);
        let vandermonde = Coefs::new(&matrix::gen_rs_matrix(9, 6).select_rows(&[6, 7, 8]));
        let isa = Isa::best();
        let a = Coordinator::new(Strategy::Auto, untimed(), isa, &cauchy);
        let b = Coordinator::new(Strategy::Auto, untimed(), isa, &vandermonde);
        assert!(a.compute_cost() > 0.0);
        assert_eq!(a.compute_cost().to_bits(), b.compute_cost().to_bits());
    }

    #[test]
    fn the_scalar_kernel_is_calibrated_for_its_coefficients() {
        // The scalar kernel skips zero coefficients: a shape's first calibration would misstate
        // the cost of every other matrix of the shape (5 x 2, used by no other test here).
        let zeros = Coefs::new(&matrix::Matrix::zeros(2, 5));
        let cauchy = coefs(5, 2);
        let a = Coordinator::new(Strategy::Auto, untimed(), Isa::Scalar, &zeros);
        let b = Coordinator::new(Strategy::Auto, untimed(), Isa::Scalar, &cauchy);
        assert!(
            a.compute_cost() < b.compute_cost() / 2.0,
            "all-zero {} against Cauchy {}",
            a.compute_cost(),
            b.compute_cost()
        );
    }

    #[test]
    fn eq1_caps_the_distance_by_the_read_buffer() {
        let c = Coordinator::new(
            Strategy::Auto,
            CoordinatorConfig::default(),
            Isa::Scalar,
            &coefs(24, 4),
        );
        // 96 KiB / (18 threads * 24 * 256 B) = 0 rows -> at least k
        assert_eq!(c.distance_cap(18, true), 24);
        // 96 KiB / (2 * 24 * 256) = 8 rows of k (+0 with nt) lines
        assert_eq!(c.distance_cap(2, true), 8 * 24);
        // cached parity stores count m too
        assert_eq!(c.distance_cap(2, false), 8 * 28);
    }

    #[test]
    fn many_threads_select_the_high_pressure_schedule() {
        let cfg = untimed();
        let c = Coordinator::new(Strategy::Auto, cfg, Isa::Scalar, &coefs(8, 4));
        let call = |len: usize, stripes: usize| {
            let t = c.begin(len, stripes, 16);
            let d = t.decision;
            c.end(t, 0);
            d
        };
        // the first call of a (length, pressure) key is a cache-residency probe: plain kernels
        let d = call(1024, 1);
        assert!(d.pressure && d.threads >= 16);
        assert_eq!(d.schedule, Schedule::VANILLA);
        // single stripes: the paper's schedule is where the climb starts
        let d = call(1024, 1);
        assert!(
            d.schedule.shuffle && d.schedule.body == Body::XpLine && d.schedule.ahead == 0,
            "{d:?}"
        );
        assert!(d.schedule.distance <= c.distance_cap(d.threads, true));
        // batches: stripe-ahead, starting from the paper's remedies
        let d = call(1024, 4);
        assert!(
            d.pressure
                && d.schedule.ahead > 0
                && d.schedule.shuffle
                && d.schedule.body == Body::XpLine,
            "{d:?}"
        );
        // 4 KiB-aligned blocks keep the hardware prefetcher (no shuffle) even under pressure
        call(8192, 1);
        let d = call(8192, 1);
        assert!(d.pressure && !d.schedule.shuffle, "{d:?}");
    }

    #[test]
    fn the_paper_remedies_under_pressure_are_climbed_not_forced() {
        // Under pressure the climb measures the paper's schedule (variant 0) against the
        // low-pressure one (variant 1); it keeps whichever costs less. Call costs are injected
        // as cycles: the paper's schedule (shuffled) is made five times slower.
        let cfg = CoordinatorConfig {
            ahead: 0,
            sample_every: 1,
            tuner: TunerConfig {
                probe_bytes: 1,
                ..TunerConfig::default()
            },
            ..untimed()
        };
        let c = Coordinator::new(Strategy::Auto, cfg, Isa::Scalar, &coefs(8, 4));
        let mut last = None;
        for _ in 0..400 {
            let t = c.begin(1024, 1, 16);
            let d = t.decision;
            c.record(t, 8192, if d.schedule.shuffle { 100_000 } else { 20_000 });
            last = Some(d);
        }
        let d = last.unwrap();
        assert!(d.pressure && !d.schedule.shuffle, "{d:?}");
        assert_eq!(d.schedule.body, Body::Line, "{d:?}");
    }

    #[test]
    fn vanilla_is_preferred_while_it_wins_and_left_when_it_loses() {
        // Call costs are injected as cycles: vanilla probes first cost a
        // fifth of the tuned schedule, then five times it. The tuned distance is fixed at 0, so
        // the competing schedule prefetches nothing; it must still be sampled, or vanilla is
        // never compared with it (the bug this guards: a tuner that had converged to 0 after a
        // switch to vanilla left vanilla preferred for good).
        let cfg = CoordinatorConfig {
            fixed_distance: Some(0),
            ahead: 0,
            probe_every: 8,
            sample_every: 1,
            ..untimed()
        };
        let c = Coordinator::new(Strategy::Auto, cfg, Isa::Scalar, &coefs(8, 4));
        let prefers_vanilla = || {
            let st = c.state.lock().unwrap();
            st.iter().any(|(_, e)| e.prefer_vanilla)
        };
        let run = |calls: usize, probe_cycles: u64, other_cycles: u64| {
            for _ in 0..calls {
                let t = c.begin(1024, 1, 1);
                let cycles = if t.probe == Probe::None {
                    other_cycles
                } else {
                    probe_cycles
                };
                c.record(t, 8 * 1024, cycles);
            }
        };
        run(128, 20_000, 100_000);
        assert!(
            prefers_vanilla(),
            "cheaper vanilla probes were not followed"
        );
        run(128, 100_000, 20_000);
        assert!(!prefers_vanilla(), "a costlier vanilla stayed preferred");
    }

    #[test]
    fn batches_whose_stripe_fits_in_l2_get_stripe_ahead_prefetch() {
        let cfg = untimed();
        let c = Coordinator::new(Strategy::Auto, cfg, Isa::Scalar, &coefs(8, 4));
        let call = |len: usize, stripes: usize| {
            let t = c.begin(len, stripes, 1);
            let d = t.decision;
            c.end(t, 0);
            d
        };
        // the first call of a block length is a vanilla probe; then a batch of 1 KiB stripes
        call(1024, 64);
        let d = call(1024, 64);
        assert_eq!((d.schedule.ahead, d.schedule.hint), (1, Hint::L2), "{d:?}");
        assert!(d.schedule.prefetches() && d.schedule.nt);
        // a single stripe has nothing ahead in the call: one of the lone-stripe schedules, each
        // tried `lone_trials` times, then the one measured fastest; a stripe too large for L2
        // gets the paper's line-distance schedule
        call(2048, 1);
        let tried: Vec<Schedule> = (0..LONE_SCHEDULES.len() as u32 * cfg.lone_trials + 1)
            .map(|_| call(2048, 1).schedule)
            .collect();
        for s in LONE_SCHEDULES {
            // (a vanilla probe among the calls may equal the hardware-prefetch schedule); the
            // source-major order is no candidate below BY_SOURCE_MIN_K sources or without the
            // AVX-512 + GFNI kernel
            let times = tried.iter().filter(|t| **t == s).count();
            if lone_offered(&s, false) {
                assert!(times >= cfg.lone_trials as usize, "{s:?} in {tried:?}");
            } else {
                assert_eq!(times, 0, "{s:?} in {tried:?}");
            }
        }
        let wide_isa = if Isa::Avx512Gfni.available() {
            Isa::Avx512Gfni
        } else {
            Isa::Scalar
        };
        let wide = Coordinator::new(Strategy::Auto, cfg, wide_isa, &coefs(BY_SOURCE_MIN_K, 4));
        let by_source = (0..LONE_SCHEDULES.len() as u32 * cfg.lone_trials + 2)
            .map(|_| {
                let t = wide.begin(2048, 1, 1);
                let d = t.decision;
                wide.end(t, 0);
                d.schedule.fetch
            })
            .filter(|f| matches!(f, Fetch::BySource { .. }))
            .count();
        if wide_isa == Isa::Avx512Gfni {
            let want = cfg.lone_trials as usize;
            assert!(by_source >= want, "{by_source} source-major trials");
        } else {
            assert_eq!(by_source, 0);
        }
        let d = call(2048, 1);
        assert!(LONE_SCHEDULES.contains(&d.schedule) && !d.schedule.prefetches());
        call(65536, 1);
        let d = call(65536, 1);
        assert_eq!(d.schedule.ahead, 0);
        assert!(
            d.schedule.fetch == Fetch::None && d.schedule.distance > 0,
            "{d:?}"
        );
        // 8 x 64 KiB = 512 KiB per stripe: two of them do not fit in L2 beside each other
        call(65536, 4);
        assert_eq!(call(65536, 4).schedule.ahead, 0);
        // chosen by hand, stripe-ahead applies to any multi-stripe call; 0 turns it off
        let c = Coordinator::new(Strategy::StripeAhead, cfg, Isa::Scalar, &coefs(8, 4));
        let t = c.begin(65536, 4, 1);
        assert_eq!(t.decision.schedule.ahead, 1);
        c.end(t, 0);
        let off = CoordinatorConfig { ahead: 0, ..cfg };
        let c = Coordinator::new(Strategy::Auto, off, Isa::Scalar, &coefs(8, 4));
        for _ in 0..3 {
            let t = c.begin(1024, 64, 1);
            assert_eq!(t.decision.schedule.ahead, 0);
            c.end(t, 0);
        }
    }

    #[test]
    fn stripe_ahead_climbs_the_stripes_ahead_and_the_cache_level() {
        let cfg = untimed();
        let c = Coordinator::new(Strategy::Auto, cfg, Isa::Scalar, &coefs(8, 4));
        let mut seen = Vec::new();
        // each call reports a whole probe's worth of bytes, so every call ends a candidate
        for _ in 0..16 {
            let t = c.begin(1024, 64, 1);
            let s = t.decision.schedule;
            if s.ahead > 0 && !seen.contains(&(s.ahead, s.hint, s.shuffle, s.body)) {
                seen.push((s.ahead, s.hint, s.shuffle, s.body));
            }
            c.end(t, cfg.tuner.probe_bytes);
        }
        // the configured start (1, L2, address order, lines) first, then its neighbour and
        // every combination of the other level, the shuffled order and 256 B bodies
        assert_eq!(seen[0], (1, Hint::L2, false, Body::Line), "{seen:?}");
        assert!(seen.contains(&(2, Hint::L2, false, Body::Line)), "{seen:?}");
        for hint in [Hint::L1, Hint::L2] {
            for shuffle in [false, true] {
                for body in [Body::Line, Body::XpLine] {
                    let v = (1, hint, shuffle, body);
                    assert!(seen.contains(&v), "{v:?} not tried: {seen:?}");
                }
            }
        }
        assert!(seen.iter().all(|&(a, ..)| a <= cfg.ahead_max), "{seen:?}");
        // without tuning, the configured schedule only
        let fixed = CoordinatorConfig {
            ahead_tune: false,
            ahead: 2,
            ahead_hint: Hint::L1,
            ..cfg
        };
        let c = Coordinator::new(Strategy::Auto, fixed, Isa::Scalar, &coefs(8, 4));
        for i in 0..16 {
            let t = c.begin(1024, 64, 1);
            let s = t.decision.schedule;
            assert!(i == 0 || (s.ahead, s.hint) == (2, Hint::L1), "{s:?}");
            c.end(t, cfg.tuner.probe_bytes);
        }
    }

    #[test]
    fn hand_picked_strategies_are_obeyed() {
        let fixed = Schedule {
            distance: 7,
            xpline_distance: Some(11),
            shuffle: true,
            body: Body::Line,
            nt: false,
            ..Schedule::VANILLA
        };
        let c = Coordinator::new(
            Strategy::Fixed(fixed),
            CoordinatorConfig::default(),
            Isa::Scalar,
            &coefs(4, 2),
        );
        for _ in 0..3 {
            let t = c.begin(4096, 1, 1);
            assert_eq!(t.decision.schedule, fixed);
            c.end(t, 4 * 4096);
        }
        let c = Coordinator::new(
            Strategy::Vanilla,
            CoordinatorConfig::default(),
            Isa::Scalar,
            &coefs(4, 2),
        );
        let t = c.begin(4096, 1, 1);
        assert_eq!(t.decision.schedule, Schedule::VANILLA);
        c.end(t, 0);
        let cfg = CoordinatorConfig {
            fixed_distance: Some(40),
            ..CoordinatorConfig::default()
        };
        let c = Coordinator::new(Strategy::NoHwPrefetch, cfg, Isa::Scalar, &coefs(4, 2));
        let t = c.begin(4096, 1, 1);
        assert_eq!(
            (t.decision.schedule.distance, t.decision.schedule.shuffle),
            (40, true)
        );
        c.end(t, 0);
    }

    #[test]
    fn residency_probes_are_flagged_and_their_timer_restarts() {
        // the ISA-L entry points and the codec own the parity lines before a residency probe,
        // then restart its timer: only residency probes say so, and only measured calls time
        let c = Coordinator::new(Strategy::Auto, untimed(), Isa::Scalar, &coefs(8, 4));
        let mut t = c.begin(1024, 1, 1);
        assert!(t.residency_probe() && t.measure, "{t:?}");
        let t0 = t.t0;
        t.restart();
        assert!(t.t0 >= t0);
        c.end(t, 8 * 1024);
        let mut t = c.begin(1024, 1, 1);
        assert!(!t.residency_probe(), "{t:?}");
        if !t.measure {
            t.restart();
            assert_eq!(t.t0, 0);
        }
        c.end(t, 8 * 1024);
        let fixed = Coordinator::new(
            Strategy::Fixed(Schedule::VANILLA),
            untimed(),
            Isa::Scalar,
            &coefs(8, 4),
        );
        let t = fixed.begin(1024, 1, 1);
        assert!(!t.residency_probe());
        fixed.end(t, 8 * 1024);
    }

    /// Taking the destinations' lines leaves their bytes as they were (a destination may be a
    /// source too: the zeros once stored there corrupted in-place encodes). Their cache state,
    /// the point of it, is not observable here.
    #[test]
    fn owning_lines_leaves_the_bytes_as_they_were() {
        let pattern = |n: usize| (0..n).map(|i| (i * 7 + 1) as u8).collect::<Vec<u8>>();
        let (mut a, mut b) = (pattern(320), pattern(320));
        // SAFETY: both buffers are readable and writable for 200 bytes (b from offset 3).
        unsafe {
            crate::kernels::own_lines(&[a.as_mut_ptr(), b.as_mut_ptr().wrapping_add(3)], 200)
        };
        assert_eq!(a, pattern(320));
        assert_eq!(b, pattern(320));
    }

    /// An auto coordinator of RS(12,8) without stripe-ahead prefetch whose compute cost is 100
    /// cycles per line, and the lines of one 4 KiB-block stripe.
    fn lone_4k_coordinator() -> (Coordinator, u64) {
        let cfg = CoordinatorConfig {
            ahead: 0,
            ..CoordinatorConfig::default()
        };
        let mut c = Coordinator::new(Strategy::Auto, cfg, Isa::Scalar, &coefs(8, 4));
        c.compute_cpl = 100.0;
        c.memory_latency = 400.0;
        (c, 8 * 4096 / 64)
    }

    /// First-line latencies (cold, warm ticks per load) against `lone_4k_coordinator`'s memory
    /// latency of 400: from memory, from L3 (resident: regular stores win there), from L2.
    const FROM_MEMORY: (u64, u64) = (500, 25);
    const FROM_L3: (u64, u64) = (150, 25);
    const FROM_L2: (u64, u64) = (40, 25);

    #[test]
    fn sources_whose_first_lines_come_from_memory_are_not_resident_however_cheap_the_call() {
        // Where the hardware prefetcher hides memory well (4 KiB blocks), a call from memory
        // costs under the residency threshold (2.5x compute); the sources' first-line latency
        // decides it. Data found resident by L3 latency is voted out once its samples' latency
        // says memory.
        let (c, lines) = lone_4k_coordinator();
        let mut from_memory = true;
        let mut resident_calls = 0;
        for call in 0..1200u64 {
            let mut t = c.begin(4096, 1, 1);
            if t.decision.cache_resident {
                resident_calls += 1;
            }
            if t.wants_latency() {
                t.set_latency(if from_memory { FROM_MEMORY } else { FROM_L3 });
            }
            // 1.6x compute: under cache_factor whether the data is resident or not
            c.record(t, 8 * 4096, 160 * lines);
            if call == 600 {
                assert_eq!(resident_calls, 0, "cheap calls from memory judged resident");
                from_memory = false;
            }
        }
        assert!(resident_calls > 0, "L3 latency never judged resident");
        let t = c.begin(4096, 1, 1);
        assert!(t.decision.cache_resident);
        c.record(t, 8 * 4096, 0);
        // the same cheap calls, now with memory latency: two samples end the verdict
        let mut samples = 0;
        while samples < 2 {
            let mut t = c.begin(4096, 1, 1);
            assert!(t.decision.cache_resident, "left after {samples} samples");
            if t.wants_latency() {
                t.set_latency(FROM_MEMORY);
                samples += 1;
            }
            c.record(t, 8 * 4096, 160 * lines);
        }
        let t = c.begin(4096, 1, 1);
        assert!(!t.decision.cache_resident);
        c.record(t, 8 * 4096, 0);
    }

    #[test]
    fn a_resident_verdict_is_sampled_and_left_under_a_vanilla_preference() {
        // Resident while vanilla is preferred (both set as a run of probes can leave them):
        // the verdict's samples still come, and far first lines vote it out.
        let (c, lines) = lone_4k_coordinator();
        let t = c.begin(4096, 1, 1);
        c.record(t, 8 * 4096, 160 * lines);
        {
            let mut st = c.state.lock().unwrap();
            let e = &mut st[0].1;
            e.cache_resident = true;
            e.prefer_vanilla = true;
        }
        let mut left_at = None;
        for call in 0..100 {
            let mut t = c.begin(4096, 1, 1);
            if !t.decision.cache_resident {
                left_at = Some(call);
                c.record(t, 8 * 4096, 0);
                break;
            }
            if t.wants_latency() {
                t.set_latency(FROM_MEMORY);
            }
            c.record(t, 8 * 4096, 160 * lines);
        }
        assert!(left_at.is_some_and(|c| c <= 48), "left at {left_at:?}");
    }

    #[test]
    fn first_line_latency_tells_flushed_lines_from_cached_ones() {
        // Sources whose first lines were flushed from every cache level measure as far, with
        // this machine's measured memory latency; the same sources, just loaded, do not; and
        // the injected L3 and L2 latencies are near. A majority of nine tries, each with its
        // own measurement of the memory latency, so that neither one interrupt nor one
        // calibration taken while other tests load the machine decides it (five tries against
        // one calibration failed a CI run: "flushed lines far in 2 of 5 tries").
        let (c, _) = lone_4k_coordinator();
        assert!(c.far(FROM_MEMORY) && !c.far(FROM_L3) && !c.far(FROM_L2));
        let bufs: Vec<Vec<u8>> = (0..8).map(|i| vec![i as u8; 4096]).collect();
        let srcs: Vec<*const u8> = bufs.iter().map(|b| b.as_ptr()).collect();
        let (mut flushed_far, mut cached_far) = (0, 0);
        for _ in 0..9 {
            let c = Coordinator::new(Strategy::Auto, untimed(), Isa::Scalar, &coefs(8, 4));
            assert!(c.memory_latency > 0.0);
            for &s in &srcs {
                // SAFETY: s points to a live 4 KiB buffer; clflush has no other precondition.
                unsafe { core::arch::x86_64::_mm_clflush(s) };
            }
            // SAFETY: mfence has no preconditions; every source is readable for 4 KiB.
            unsafe { core::arch::x86_64::_mm_mfence() };
            flushed_far += u32::from(c.far(unsafe { crate::kernels::first_line_latency(&srcs) }));
            // SAFETY: as above.
            cached_far += u32::from(c.far(unsafe { crate::kernels::first_line_latency(&srcs) }));
        }
        assert!(
            flushed_far >= 5,
            "flushed lines far in {flushed_far} of 9 tries"
        );
        assert!(
            cached_far <= 4,
            "cached lines far in {cached_far} of 9 tries"
        );
    }

    #[test]
    fn residency_is_judged_with_regular_stores_and_kept_through_one_slow_call() {
        // A cache-resident caller on a host where non-temporal parity stores cost 4x the
        // compute cost per line (they send resident parity to memory) and regular ones 2x.
        // Residency probes run with regular stores, so the caller is found resident; probes
        // that compete with the prefetching schedule use non-temporal ones.
        let cfg = CoordinatorConfig {
            ahead: 0,
            ..CoordinatorConfig::default()
        };
        let mut c = Coordinator::new(Strategy::Auto, cfg, Isa::Scalar, &coefs(8, 4));
        c.compute_cpl = 100.0;
        let lines = 8 * 1024 / 64;
        // the first 200 calls find the data cold (it is being brought in)
        let cost = |call: u64, s: &Schedule| match (call < 200, s.nt) {
            (true, _) => 1000 * lines,
            (false, true) => 400 * lines,
            (false, false) => 200 * lines,
        };
        let mut vanilla_probes = 0;
        for call in 0..300 {
            let t = c.begin(1024, 1, 1);
            if t.probe == Probe::Vanilla {
                assert!(t.decision.schedule.nt, "{:?}", t.decision);
                vanilla_probes += 1;
            }
            if t.probe == Probe::Residency {
                assert!(!t.decision.schedule.nt, "{:?}", t.decision);
            }
            assert_eq!(t.decision.cache_resident, call >= 256, "call {call}");
            let cycles = cost(call, &t.decision.schedule);
            c.record(t, 8 * 1024, cycles);
        }
        assert_eq!(vanilla_probes, 1);
        let t = c.begin(1024, 1, 1);
        assert!(t.decision.cache_resident, "{:?}", t.decision);
        assert!(!t.decision.schedule.nt);
        c.record(t, 8 * 1024, 0);
        // one sampled call slowed down (an interrupt) keeps the verdict; two in a row end it
        let mut slow_samples = 0;
        while slow_samples < 2 {
            let t = c.begin(1024, 1, 1);
            let measured = t.measure;
            c.record(t, 8 * 1024, 1000 * lines);
            if measured {
                slow_samples += 1;
                let resident = c.begin(1024, 1, 1);
                let still = resident.decision.cache_resident;
                c.record(resident, 8 * 1024, 0);
                assert_eq!(still, slow_samples < 2, "after {slow_samples} slow samples");
            }
        }
    }
}
