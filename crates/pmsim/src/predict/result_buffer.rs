//! The validator's prediction result buffer (PMWeaver Sec. V-C2, Fig. 14d): precomputations
//! keyed by predicted line address, several candidate lines per address, validated against the
//! write-back that reaches the controller.

use super::Source;
use crate::bmo::Precomputed;
use crate::fast_hash::FastMap;
use crate::time::Ps;

/// A validated precomputation started this close to its write-back was too late to help much
/// (the PMWeaver artifact's "untimely": < 50 ns).
pub const UNTIMELY: Ps = 50_000;

/// Prediction-to-write-back times of validated precomputations.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timeliness {
    /// Sum of the times from precomputation start to validation.
    pub gap_ps: u64,
    /// Validations less than [`UNTIMELY`] after their precomputation started.
    pub untimely: u64,
}

impl Timeliness {
    /// Notes a precomputation started at `issued` and validated at `now`.
    pub fn record(&mut self, issued: Ps, now: Ps) {
        let gap = now.saturating_sub(issued);
        self.gap_ps += gap;
        self.untimely += u64::from(gap < UNTIMELY);
    }
}

/// One buffered precomputation.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// What the engine precomputed (`pre.data`: the bytes sent for precomputation, if any).
    pub pre: Precomputed,
    /// The bytes the predictor wove, sent or not (its data confidence is judged on them).
    pub woven: Option<[u8; 64]>,
    /// Which predictor made it.
    pub source: Source,
    /// The predictor's own tag (a prediction-table key), for its confidence feedback.
    pub tag: u64,
    /// The core whose predictor made it.
    pub thread: u16,
}

/// What validating a write-back found.
#[derive(Clone, Debug, Default)]
pub struct Match {
    /// The candidate used (address matched), if any.
    pub candidate: Option<Candidate>,
    /// Whether its predicted bytes equal the write-back's.
    pub data: bool,
    /// Other candidates for the address, discarded unused.
    pub discarded: Vec<Candidate>,
}

/// Counters of the buffer.
#[derive(Clone, Copy, Debug, Default)]
pub struct BufferStats {
    /// Precomputations inserted.
    pub inserted: u64,
    /// Candidates dropped because their address was the least recently used of a full buffer,
    /// or their address already held the most candidates.
    pub evicted: u64,
    /// Candidates aged out before any write-back used them.
    pub aged: u64,
}

/// The prediction result buffer.
#[derive(Clone)]
pub struct ResultBuffer {
    addresses: usize,
    candidates: usize,
    max_age: Ps,
    entries: FastMap<u64, (u64, Vec<Candidate>)>,
    clock: u64,
    /// Candidates dropped unused (eviction, ageing), for the predictor's feedback.
    dropped: Vec<Candidate>,
    /// Counters.
    pub stats: BufferStats,
}

impl ResultBuffer {
    /// An empty buffer of `addresses` x `candidates`; precomputations older than `max_age`
    /// are not used.
    pub fn new(addresses: usize, candidates: usize, max_age: Ps) -> ResultBuffer {
        ResultBuffer {
            addresses: addresses.max(1),
            candidates: candidates.max(1),
            max_age,
            entries: FastMap::default(),
            clock: 0,
            dropped: Vec::new(),
            stats: BufferStats::default(),
        }
    }

    /// Changes the number of addresses (the buffer scales with the cores, PMWeaver Sec. VI-B7).
    pub fn set_addresses(&mut self, addresses: usize) {
        self.addresses = addresses.max(1);
    }

    /// Buffers `c`. A candidate with the same bytes as one already held replaces it (a fresher
    /// precomputation of the same prediction).
    pub fn insert(&mut self, c: Candidate) {
        self.clock += 1;
        self.stats.inserted += 1;
        let line = c.pre.line_addr;
        if !self.entries.contains_key(&line) && self.entries.len() >= self.addresses {
            let victim = self
                .entries
                .iter()
                .min_by_key(|(_, (stamp, _))| *stamp)
                .map(|(&l, _)| l)
                .expect("buffer is full");
            let (_, cands) = self.entries.remove(&victim).expect("victim exists");
            self.stats.evicted += cands.len() as u64;
            self.dropped.extend(cands);
        }
        let cap = self.candidates;
        let e = self.entries.entry(line).or_insert((0, Vec::new()));
        e.0 = self.clock;
        if let Some(i) = e.1.iter().position(|o| o.pre.data == c.pre.data) {
            // The same line predicted again: the fresher precomputation replaces the held one
            // (a refresh, not a prediction gone unused).
            e.1[i] = c;
            return;
        }
        if e.1.len() >= cap {
            let old = e.1.remove(0);
            self.stats.evicted += 1;
            self.dropped.push(old);
        }
        e.1.push(c);
    }

    /// Validates a write-back of `line_addr` with bytes `data` at `now`: takes the address's
    /// candidates out; the one with the same bytes wins, else the newest.
    pub fn validate(&mut self, line_addr: u64, data: Option<&[u8; 64]>, now: Ps) -> Match {
        let Some((_, mut cands)) = self.entries.remove(&line_addr) else {
            return Match::default();
        };
        let mut i = 0;
        while i < cands.len() {
            if now.saturating_sub(cands[i].pre.issued) > self.max_age {
                self.stats.aged += 1;
                self.dropped.push(cands.remove(i));
            } else {
                i += 1;
            }
        }
        if cands.is_empty() {
            return Match::default();
        }
        let exact = data.and_then(|d| cands.iter().position(|c| c.pre.data.as_ref() == Some(d)));
        let (i, data_ok) = match exact {
            Some(i) => (i, true),
            None => (cands.len() - 1, false),
        };
        let mut chosen = cands.remove(i);
        if !data_ok {
            chosen.pre.data = None;
        }
        Match {
            candidate: Some(chosen),
            data: data_ok,
            discarded: cands,
        }
    }

    /// Takes the candidates dropped unused since the last call.
    pub fn take_dropped(&mut self) -> Vec<Candidate> {
        std::mem::take(&mut self.dropped)
    }

    /// Addresses held now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing is buffered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bmo::MAX_DEPS;

    fn cand(line: u64, data: Option<[u8; 64]>, issued: Ps) -> Candidate {
        Candidate {
            pre: Precomputed {
                line_addr: line,
                data,
                issued,
                addr_ready: issued,
                data_ready: issued,
                versions: [0; MAX_DEPS],
                deps: 0,
            },
            woven: data,
            source: Source::Stores,
            tag: 0,
            thread: 0,
        }
    }

    #[test]
    fn the_matching_candidate_wins_and_a_wrong_one_keeps_only_its_address() {
        let mut b = ResultBuffer::new(16, 16, 1_000_000);
        b.insert(cand(0x40, Some([1; 64]), 0));
        b.insert(cand(0x40, Some([2; 64]), 10));
        let m = b.validate(0x40, Some(&[1; 64]), 100);
        assert!(m.data);
        assert_eq!(m.candidate.unwrap().pre.data, Some([1; 64]));
        assert_eq!(m.discarded.len(), 1);
        assert!(b.is_empty(), "the address's candidates leave the buffer");
        b.insert(cand(0x80, Some([3; 64]), 0));
        let m = b.validate(0x80, Some(&[4; 64]), 100);
        assert!(!m.data, "a wrong data prediction is discarded");
        assert_eq!(
            m.candidate.unwrap().pre.data,
            None,
            "only its address part is used"
        );
        assert!(b.validate(0xc0, None, 0).candidate.is_none());
    }

    #[test]
    fn full_buffer_evicts_the_least_recent_address_and_old_results_age_out() {
        let mut b = ResultBuffer::new(2, 1, 1000);
        b.insert(cand(0x40, None, 0));
        b.insert(cand(0x80, None, 0));
        b.insert(cand(0xc0, None, 0));
        assert_eq!(b.stats.evicted, 1);
        assert!(b.validate(0x40, None, 10).candidate.is_none());
        assert!(b.validate(0xc0, None, 2000).candidate.is_none(), "aged out");
        assert_eq!(b.stats.aged, 1);
        assert_eq!(b.take_dropped().len(), 2);
    }
}
