//! A controller queue kept as parallel arrays: the scheduler's scan and the same-line lookups
//! touch only compact keys (8-16 bytes per entry), not whole requests.

use super::QueuedRequest;

/// Where a queued request goes, in the form the scan needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BankKey {
    /// Flat bank index within the channel (rank * banks + bank).
    pub bank: u32,
    /// Rank within the channel.
    pub rank: u32,
    /// Row within the bank.
    pub row: u64,
}

/// Requests in arrival order (index 0 is the oldest).
#[derive(Clone, Debug, Default)]
pub struct RequestQueue {
    entries: Vec<QueuedRequest>,
    lines: Vec<u64>,
    keys: Vec<BankKey>,
    arrivals: Vec<crate::time::Ps>,
}

impl RequestQueue {
    /// An empty queue with room for `cap` entries.
    pub fn with_capacity(cap: usize) -> Self {
        RequestQueue {
            entries: Vec::with_capacity(cap),
            lines: Vec::with_capacity(cap),
            keys: Vec::with_capacity(cap),
            arrivals: Vec::with_capacity(cap),
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Appends a request (the youngest).
    pub fn push(&mut self, req: QueuedRequest, key: BankKey) {
        self.lines.push(req.line_addr);
        self.keys.push(key);
        self.arrivals.push(req.arrival);
        self.entries.push(req);
    }

    /// Removes entry `i`, keeping the others in arrival order.
    pub fn remove(&mut self, i: usize) -> QueuedRequest {
        self.lines.remove(i);
        self.keys.remove(i);
        self.arrivals.remove(i);
        self.entries.remove(i)
    }

    /// Index of the entry for line `line_addr`, if any.
    #[inline]
    pub fn find_line(&self, line_addr: u64) -> Option<usize> {
        self.lines.iter().position(|&l| l == line_addr)
    }

    /// Entry `i`.
    pub fn get_mut(&mut self, i: usize) -> &mut QueuedRequest {
        &mut self.entries[i]
    }

    /// The scan keys, in arrival order.
    pub fn keys(&self) -> &[BankKey] {
        &self.keys
    }

    /// Arrival times, in arrival order.
    pub fn arrivals(&self) -> &[crate::time::Ps] {
        &self.arrivals
    }

    /// The requests, in arrival order.
    pub fn entries(&self) -> &[QueuedRequest] {
        &self.entries
    }
}
