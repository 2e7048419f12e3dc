//! Named counters and histograms, written as deterministic JSON.
//!
//! Components keep their statistics in plain fields on the hot path and export them into a
//! [`Stats`] at the end of a run; names are dotted paths (`mc.ch0.row_hits`). Maps are sorted,
//! so the same run always produces byte-identical JSON.

use serde::Serialize;
use std::collections::BTreeMap;

/// Number of power-of-two buckets in a [`Histogram`].
const BUCKETS: usize = 48;

/// A histogram of non-negative integer samples with power-of-two buckets.
///
/// Bucket `i` holds samples in `[2^(i-1), 2^i)` (bucket 0 holds 0). Exact count, sum, min and
/// max are kept alongside, so means are exact and percentiles are bucket-resolution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Histogram {
    buckets: [u64; BUCKETS],
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: [0; BUCKETS],
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }
}

impl Histogram {
    /// Records one sample.
    #[inline]
    pub fn record(&mut self, v: u64) {
        let b = (64 - v.leading_zeros() as usize).min(BUCKETS - 1);
        self.buckets[b] += 1;
        self.count += 1;
        self.sum += v as u128;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Arithmetic mean (0 when empty).
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// Smallest sample (0 when empty).
    pub fn min(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.min
        }
    }

    /// Largest sample.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Upper bound of the bucket holding the `q` quantile (0 < q <= 1), clamped to `max`.
    pub fn quantile_upper(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let target = ((self.count as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= target {
                let upper = if i == 0 { 0 } else { (1u64 << i) - 1 };
                return upper.min(self.max);
            }
        }
        self.max
    }

    /// Adds every sample of `other` into `self`.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.buckets.iter_mut().zip(other.buckets.iter()) {
            *a += b;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    fn summary(&self) -> HistogramSummary {
        let last = self
            .buckets
            .iter()
            .rposition(|&n| n > 0)
            .map_or(0, |i| i + 1);
        HistogramSummary {
            count: self.count,
            mean: round3(self.mean()),
            min: self.min(),
            max: self.max,
            p50: self.quantile_upper(0.5),
            p99: self.quantile_upper(0.99),
            log2_buckets: self.buckets[..last].to_vec(),
        }
    }
}

#[derive(Serialize)]
struct HistogramSummary {
    count: u64,
    mean: f64,
    min: u64,
    max: u64,
    p50: u64,
    p99: u64,
    log2_buckets: Vec<u64>,
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// A collection of named statistics.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    counters: BTreeMap<String, u64>,
    values: BTreeMap<String, f64>,
    histograms: BTreeMap<String, Histogram>,
}

impl Stats {
    /// An empty collection.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets counter `name` to `v`.
    pub fn set(&mut self, name: impl Into<String>, v: u64) {
        self.counters.insert(name.into(), v);
    }

    /// Adds `v` to counter `name` (creating it at 0).
    pub fn add(&mut self, name: impl Into<String>, v: u64) {
        *self.counters.entry(name.into()).or_insert(0) += v;
    }

    /// Sets a derived real-valued figure (rates, ratios), rounded to 6 significant decimals.
    pub fn set_value(&mut self, name: impl Into<String>, v: f64) {
        let v = if v.is_finite() {
            (v * 1e6).round() / 1e6
        } else {
            0.0
        };
        self.values.insert(name.into(), v);
    }

    /// Stores histogram `h` under `name`.
    pub fn set_histogram(&mut self, name: impl Into<String>, h: Histogram) {
        self.histograms.insert(name.into(), h);
    }

    /// Counter `name` (0 when absent).
    pub fn counter(&self, name: &str) -> u64 {
        self.counters.get(name).copied().unwrap_or(0)
    }

    /// Derived value `name`.
    pub fn value(&self, name: &str) -> Option<f64> {
        self.values.get(name).copied()
    }

    /// Histogram `name`.
    pub fn histogram(&self, name: &str) -> Option<&Histogram> {
        self.histograms.get(name)
    }

    /// All counters, sorted by name.
    pub fn counters(&self) -> impl Iterator<Item = (&str, u64)> {
        self.counters.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// All derived values, sorted by name.
    pub fn values(&self) -> impl Iterator<Item = (&str, f64)> {
        self.values.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// The statistics as a JSON value (sorted keys, deterministic).
    pub fn to_json_value(&self) -> serde_json::Value {
        let hist: BTreeMap<&str, HistogramSummary> = self
            .histograms
            .iter()
            .map(|(k, h)| (k.as_str(), h.summary()))
            .collect();
        serde_json::json!({
            "counters": self.counters,
            "values": self.values,
            "histograms": hist,
        })
    }

    /// The statistics as pretty JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&self.to_json_value()).expect("stats serialise")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_and_quantiles() {
        let mut h = Histogram::default();
        for v in [0, 1, 2, 3, 100, 1000] {
            h.record(v);
        }
        assert_eq!(h.count(), 6);
        assert_eq!(h.min(), 0);
        assert_eq!(h.max(), 1000);
        assert!((h.mean() - 1106.0 / 6.0).abs() < 1e-9);
        // 3 of 6 samples are <= 3 → the median bucket is [2,4).
        assert_eq!(h.quantile_upper(0.5), 3);
        assert_eq!(h.quantile_upper(1.0), 1000);
    }

    #[test]
    fn json_is_sorted_and_stable() {
        let mut a = Stats::new();
        a.set("b", 2);
        a.set("a", 1);
        let mut b = Stats::new();
        b.set("a", 1);
        b.set("b", 2);
        assert_eq!(a.to_json(), b.to_json());
        assert!(a.to_json().find("\"a\"").unwrap() < a.to_json().find("\"b\"").unwrap());
    }
}
