//! Hill climbing of the software prefetch distance (DIALGA §4.1): start at d = k, measure the
//! cost (cycles per byte) of each distance in a neighbourhood of 16 around the current one, move
//! to the best until no neighbour is better, then watch the cost and search again when it
//! drifts by more than the configured fraction (10%).
//!
//! Additions beyond the paper: the 16 neighbours are spaced `max(1, d / 16)` apart, so large
//! distances (wide stripes need several rows of k lines) are reached in a few steps; "no
//! software prefetch" (d = 0) is measured in every search, so prefetching is only kept where it
//! pays; a small number of schedule *variants* (the coordinator uses them for the 64 B vs
//! 256 B loop body) are climbed together with the distance: each search also measures the
//! current distance under every other variant; and samples carry the candidate they ran, so
//! threads sharing a tuner cannot credit one candidate's cost to the next.
//!
//! The drift rule is the paper's, on an exponential average of single windows. On a shared host
//! that average leaves the 10% band now and then with nothing changed, and the searches it
//! starts are the tuner's only way off a poor early choice: requiring four windows in a row
//! beyond the band instead cut the searches per benchmark point from 30-75 to 9-55, and left
//! single-stripe calls at d = 0 for whole runs (6 of 13 runs at 1.33-1.37x ISA-L instead of
//! 1.44-1.72x; docs/validation.md §5), so it was not kept.

/// Tuner parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TunerConfig {
    /// Neighbourhood size explored around the current distance (16: d-8 ..= d+8 steps).
    pub neighbourhood: usize,
    /// Relative drift of the steady-state cost that triggers a new search (0.10).
    pub drift: f64,
    /// Bytes of work measured per probe of one candidate.
    pub probe_bytes: u64,
    /// Smallest distance tried (besides 0).
    pub min_distance: usize,
    /// Largest distance tried.
    pub max_distance: usize,
    /// Also measure d = 0 (no software prefetch) in every search.
    pub try_zero: bool,
}

impl Default for TunerConfig {
    fn default() -> Self {
        TunerConfig {
            neighbourhood: 16,
            drift: 0.10,
            probe_bytes: 512 * 1024,
            min_distance: 1,
            max_distance: 1024,
            try_zero: true,
        }
    }
}

/// A candidate: (distance, variant).
pub type Cand = (usize, usize);

#[derive(Debug, Clone, PartialEq)]
enum Phase {
    /// Measuring candidate `idx` of `cands`.
    Search {
        cands: Vec<Cand>,
        idx: usize,
        costs: Vec<f64>,
    },
    /// Converged; exponentially-weighted cost since.
    Steady { tuned: f64, ewma: f64, seen: u64 },
}

/// Hill-climbing state for one configuration.
#[derive(Debug, Clone)]
pub struct Tuner {
    cfg: TunerConfig,
    variants: usize,
    /// Current centre (never distance 0).
    center: Cand,
    /// The chosen candidate (may have distance 0).
    chosen: Cand,
    phase: Phase,
    acc_cycles: u64,
    acc_bytes: u64,
    searches: u32,
}

impl Tuner {
    /// Start a search at distance `start` (DIALGA starts at k), one variant.
    pub fn new(start: usize, cfg: TunerConfig) -> Tuner {
        Self::with_variants(start, 1, cfg)
    }

    /// Start a search at distance `start` over `variants` schedule variants (variant 0 first).
    ///
    /// # Panics
    /// If `cfg.max_distance` is below `max(cfg.min_distance, 1)` (an empty distance range).
    pub fn with_variants(start: usize, variants: usize, cfg: TunerConfig) -> Tuner {
        let d = start.clamp(cfg.min_distance.max(1), cfg.max_distance);
        let mut t = Tuner {
            cfg,
            variants: variants.max(1),
            center: (d, 0),
            chosen: (d, 0),
            phase: Phase::Steady {
                tuned: 0.0,
                ewma: 0.0,
                seen: 0,
            },
            acc_cycles: 0,
            acc_bytes: 0,
            searches: 0,
        };
        t.start_search();
        t
    }

    fn start_search(&mut self) {
        let half = (self.cfg.neighbourhood / 2).max(1);
        let (c, v) = self.center;
        let step = (c / 16).max(1);
        // The centre first, then its neighbours by increasing distance, the other variants at
        // the centre distance, then d = 0.
        let mut cands = vec![(c, v)];
        for i in 1..=half {
            let hi = c + i * step;
            if hi <= self.cfg.max_distance {
                cands.push((hi, v));
            }
            if let Some(lo) = c.checked_sub(i * step) {
                if lo >= self.cfg.min_distance.max(1) {
                    cands.push((lo, v));
                }
            }
        }
        cands.extend((0..self.variants).filter(|&o| o != v).map(|o| (c, o)));
        if self.cfg.try_zero {
            cands.extend((0..self.variants).map(|o| (0, o)));
        }
        let n = cands.len();
        self.phase = Phase::Search {
            cands,
            idx: 0,
            costs: vec![f64::INFINITY; n],
        };
        self.acc_cycles = 0;
        self.acc_bytes = 0;
        self.searches += 1;
    }

    /// The candidate the next call runs: (distance, variant). A caller that records later
    /// passes it back to [`Tuner::record`].
    pub fn current(&self) -> Cand {
        match &self.phase {
            Phase::Search { cands, idx, .. } => cands[*idx],
            Phase::Steady { .. } => self.chosen,
        }
    }

    /// Distance to use for the next call (0 = no software prefetch).
    pub fn distance(&self) -> usize {
        self.current().0
    }

    /// Variant to use for the next call.
    pub fn variant(&self) -> usize {
        self.current().1
    }

    /// Whether the tuner is still searching.
    pub fn searching(&self) -> bool {
        matches!(self.phase, Phase::Search { .. })
    }

    /// Number of searches started so far (1 after construction).
    pub fn searches(&self) -> u32 {
        self.searches
    }

    /// Report the cost of a call made with candidate `ran` (what [`Tuner::current`] returned
    /// when the call began): `cycles` spent on `bytes`. A sample of any other candidate than the
    /// current one is dropped: with several threads sharing a tuner, a call that began before
    /// another thread's sample moved the search on would otherwise be credited to the next
    /// candidate.
    pub fn record(&mut self, ran: Cand, cycles: u64, bytes: u64) {
        if ran != self.current() {
            return;
        }
        self.acc_cycles += cycles;
        self.acc_bytes += bytes;
        if self.acc_bytes < self.cfg.probe_bytes {
            return;
        }
        let cost = self.acc_cycles as f64 / self.acc_bytes as f64;
        self.acc_cycles = 0;
        self.acc_bytes = 0;
        let mut restart = false;
        match &mut self.phase {
            Phase::Search { cands, idx, costs } => {
                costs[*idx] = cost;
                *idx += 1;
                if *idx == cands.len() {
                    let (bi, &bc) = costs
                        .iter()
                        .enumerate()
                        .min_by(|a, b| a.1.total_cmp(b.1))
                        .expect("non-empty candidates");
                    let best = cands[bi];
                    self.chosen = best;
                    if best == self.center || best.0 == 0 {
                        self.phase = Phase::Steady {
                            tuned: bc,
                            ewma: bc,
                            seen: 0,
                        };
                    } else {
                        self.center = best;
                        restart = true;
                    }
                }
            }
            Phase::Steady { tuned, ewma, seen } => {
                // The search's best cost is biased low (the minimum of noisy samples), so the
                // reference is re-measured: the mean of the first BASELINE steady windows.
                const BASELINE: u64 = 4;
                *seen += 1;
                if *seen <= BASELINE {
                    *tuned = if *seen == 1 {
                        cost
                    } else {
                        *tuned + (cost - *tuned) / *seen as f64
                    };
                    *ewma = *tuned;
                } else {
                    *ewma = 0.75 * *ewma + 0.25 * cost;
                    if *seen >= 2 * BASELINE && (*ewma - *tuned).abs() > self.cfg.drift * *tuned {
                        restart = true;
                    }
                }
            }
        }
        if restart {
            self.start_search();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(t: &mut Tuner, cost_of: impl Fn(usize, usize) -> f64, calls: usize) {
        for _ in 0..calls {
            let (d, v) = t.current();
            let bytes = 64 * 1024;
            t.record((d, v), (cost_of(d, v) * bytes as f64) as u64, bytes);
        }
    }

    #[test]
    fn climbs_to_the_minimum_of_a_convex_cost() {
        let mut t = Tuner::new(8, TunerConfig::default());
        run(&mut t, |d, _| 10.0 + (d as f64 - 40.0).abs(), 4000);
        assert!(!t.searching());
        assert_eq!(t.distance(), 40);
    }

    #[test]
    fn large_distances_are_reached_and_zero_wins_when_prefetch_hurts() {
        let mut t = Tuner::new(48, TunerConfig::default());
        run(
            &mut t,
            |d, _| {
                if d == 0 {
                    500.0
                } else {
                    10.0 + (d as f64 - 150.0).abs() / 10.0
                }
            },
            20000,
        );
        assert!(!t.searching());
        assert!(
            (t.distance() as isize - 150).abs() <= 12,
            "{}",
            t.distance()
        );
        let mut t = Tuner::new(8, TunerConfig::default());
        run(
            &mut t,
            |d, _| if d == 0 { 5.0 } else { 6.0 + d as f64 / 100.0 },
            4000,
        );
        assert_eq!(t.distance(), 0);
    }

    #[test]
    fn variants_are_climbed_with_the_distance() {
        let mut t = Tuner::with_variants(8, 2, TunerConfig::default());
        run(
            &mut t,
            |d, v| 20.0 - 5.0 * v as f64 + (d as f64 - 30.0).abs(),
            20000,
        );
        assert!(!t.searching());
        assert_eq!((t.distance(), t.variant()), (30, 1));
    }

    #[test]
    fn samples_of_a_candidate_the_search_has_left_are_dropped() {
        // Two threads share the tuner: each call begins with the current candidate, and the
        // second thread's call ends after the first's sample moved the search on. Its sample
        // is costed as its own candidate ran, but arrives when the next one is current.
        let cost_of = |d: usize, _| 10.0 + (d as f64 - 40.0).abs();
        let bytes = TunerConfig::default().probe_bytes;
        let mut t = Tuner::new(8, TunerConfig::default());
        for _ in 0..4000 {
            let a = t.current();
            let b = t.current();
            t.record(a, (cost_of(a.0, a.1) * bytes as f64) as u64, bytes);
            // the late sample: credited to the candidate now current, each candidate would
            // carry its predecessor's cost (the climb stayed at 8 that way)
            t.record(b, (cost_of(b.0, b.1) * bytes as f64) as u64, bytes);
        }
        assert!(!t.searching());
        assert_eq!(t.distance(), 40);
    }

    #[test]
    fn drift_restarts_the_search() {
        let mut t = Tuner::new(20, TunerConfig::default());
        run(&mut t, |d, _| 10.0 + (d as f64 - 20.0).abs(), 2000);
        assert_eq!(t.distance(), 20);
        let before = t.searches();
        // the memory got slower and the optimum moved: cost rises > 10%
        run(&mut t, |d, _| 30.0 + (d as f64 - 50.0).abs(), 4000);
        assert!(t.searches() > before);
        assert_eq!(t.distance(), 50);
    }
}
