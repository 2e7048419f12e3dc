//! [`TraceStats`]: a streaming summary of a trace (events per op and thread, bytes moved, known
//! store values, distinct lines, total gap) with a human-readable table.

use std::collections::HashSet;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

use crate::{Op, TraceEvent};

/// Cache-line size used for the distinct-lines count.
pub const LINE_BYTES: u64 = 64;

/// A multiplicative hasher for line numbers (keys are already well spread; SipHash would
/// dominate the cost of [`TraceStats::add`]).
#[derive(Default, Clone, Copy)]
pub struct LineHasher(u64);

impl Hasher for LineHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0 ^ v)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(29);
    }
}

/// Summary statistics of a trace, accumulated one event at a time.
///
/// Memory: constant, except the distinct-lines set, which grows with the trace's *footprint*
/// (number of distinct 64-byte lines touched, 8-16 bytes each), not with its length.
#[derive(Clone, Debug)]
pub struct TraceStats {
    /// Events seen.
    pub events: u64,
    /// Events per op, indexed by `op as usize` (order of [`Op::ALL`]).
    pub per_op: [u64; Op::ALL.len()],
    /// Events per thread (grows to the highest thread seen + 1).
    pub per_thread: Vec<u64>,
    /// Bytes read by loads.
    pub bytes_loaded: u64,
    /// Bytes written by store-like ops (store, ntstore, rdmapwrite).
    pub bytes_stored: u64,
    /// Store-like events.
    pub stores: u64,
    /// Store-like events that carry their value.
    pub stores_with_value: u64,
    /// Sum of all gaps (instructions, or cycles for imported traces).
    pub total_gap: u64,
    /// Lowest address accessed (`u64::MAX` if none).
    pub min_addr: u64,
    /// One past the highest byte accessed (0 if none).
    pub max_addr_end: u64,
    lines: HashSet<u64, BuildHasherDefault<LineHasher>>,
}

impl TraceStats {
    /// Empty statistics.
    pub fn new() -> TraceStats {
        TraceStats {
            events: 0,
            per_op: [0; Op::ALL.len()],
            per_thread: Vec::new(),
            bytes_loaded: 0,
            bytes_stored: 0,
            stores: 0,
            stores_with_value: 0,
            total_gap: 0,
            min_addr: u64::MAX,
            max_addr_end: 0,
            lines: HashSet::default(),
        }
    }

    /// Statistics of all `events`.
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a TraceEvent>) -> TraceStats {
        let mut s = TraceStats::new();
        for ev in events {
            s.add(ev);
        }
        s
    }

    /// Accounts one event.
    pub fn add(&mut self, ev: &TraceEvent) {
        self.events += 1;
        if let Some(n) = self.per_op.get_mut(ev.op as usize) {
            *n += 1;
        }
        let t = ev.thread as usize;
        if self.per_thread.len() <= t {
            self.per_thread.resize(t + 1, 0);
        }
        self.per_thread[t] += 1;
        self.total_gap += ev.gap as u64;
        if ev.op == Op::Load {
            self.bytes_loaded += ev.size as u64;
        }
        if ev.op.writes_memory() {
            self.bytes_stored += ev.size as u64;
            self.stores += 1;
            if ev.value_len > 0 {
                self.stores_with_value += 1;
            }
        }
        if ev.op.has_address() {
            let end = ev.addr.saturating_add((ev.size as u64).max(1));
            self.min_addr = self.min_addr.min(ev.addr);
            self.max_addr_end = self.max_addr_end.max(end);
            let first = ev.addr / LINE_BYTES;
            let last = (end - 1) / LINE_BYTES;
            for line in first..=last {
                self.lines.insert(line);
            }
        }
    }

    /// Number of events of `op`.
    pub fn count(&self, op: Op) -> u64 {
        self.per_op.get(op as usize).copied().unwrap_or(0)
    }

    /// Distinct 64-byte lines touched by events with an address.
    pub fn distinct_lines(&self) -> u64 {
        self.lines.len() as u64
    }
}

impl Default for TraceStats {
    fn default() -> Self {
        TraceStats::new()
    }
}

impl fmt::Display for TraceStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = |n: u64, d: u64| {
            if d == 0 {
                0.0
            } else {
                100.0 * n as f64 / d as f64
            }
        };
        writeln!(f, "{:<24}{:>16}", "events", self.events)?;
        for op in Op::ALL {
            let n = self.count(op);
            if n > 0 {
                writeln!(
                    f,
                    "  {:<22}{:>16}  {:>6.2}%",
                    op.name(),
                    n,
                    pct(n, self.events)
                )?;
            }
        }
        writeln!(f, "{:<24}{:>16}", "threads", self.per_thread.len())?;
        for (t, &n) in self.per_thread.iter().enumerate() {
            writeln!(
                f,
                "  {:<22}{:>16}  {:>6.2}%",
                format!("t{t}"),
                n,
                pct(n, self.events)
            )?;
        }
        writeln!(f, "{:<24}{:>16}", "bytes loaded", self.bytes_loaded)?;
        writeln!(f, "{:<24}{:>16}", "bytes stored", self.bytes_stored)?;
        writeln!(
            f,
            "{:<24}{:>16}  {:>6.2}%",
            "stores with value",
            self.stores_with_value,
            pct(self.stores_with_value, self.stores)
        )?;
        writeln!(
            f,
            "{:<24}{:>16}",
            "distinct 64 B lines",
            self.distinct_lines()
        )?;
        if self.max_addr_end > 0 {
            writeln!(
                f,
                "{:<24}{:>#16x}..{:#x}",
                "address range", self.min_addr, self.max_addr_end
            )?;
        }
        write!(f, "{:<24}{:>16}", "total gap", self.total_gap)
    }
}
