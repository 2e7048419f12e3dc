//! Simulated time: integer picoseconds, so a 3 GHz core and a 266 MHz PCM bus share one clock.

/// A point in simulated time or a duration, in picoseconds.
pub type Ps = u64;

/// Picoseconds per nanosecond.
pub const PS_PER_NS: u64 = 1_000;

/// Converts nanoseconds (as written in configs and papers) to picoseconds, rounding to nearest.
pub fn ns_to_ps(ns: f64) -> Ps {
    (ns * PS_PER_NS as f64).round() as Ps
}

/// Converts picoseconds to nanoseconds for reporting.
pub fn ps_to_ns(ps: Ps) -> f64 {
    ps as f64 / PS_PER_NS as f64
}

/// Length of one clock cycle at `ghz`, in picoseconds (rounded to nearest).
pub fn cycle_ps(ghz: f64) -> Ps {
    (1_000.0 / ghz).round() as Ps
}

/// A run's simulated time: `end`, when its last thread or acknowledgement finished; or the crash
/// point `stop_at` when the run was `cut` there with work left. A crash point after the end is no
/// cut: the time is `end`.
pub fn run_time(end: Ps, stop_at: Option<Ps>, cut: bool) -> Ps {
    match stop_at {
        Some(t) if cut => t,
        later => end.min(later.unwrap_or(Ps::MAX)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_round_to_nearest() {
        assert_eq!(ns_to_ps(7.5), 7_500);
        assert_eq!(ns_to_ps(0.8333), 833);
        assert_eq!(cycle_ps(3.0), 333);
        assert_eq!(cycle_ps(2.5), 400);
        assert!((ps_to_ns(1_500) - 1.5).abs() < 1e-12);
    }
}
