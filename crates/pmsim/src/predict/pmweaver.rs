//! PMWeaver (Mahar et al., PACT'21): predicts PM write-backs from the values of earlier store
//! instructions and has the PM-support engine precompute them.
//!
//! Per hardware thread, i.e. per core in the presets (Sec. IV-V, Table I, and the artifact where
//! the paper is silent):
//! * **PC path**: `XOR_i (pc_i << i)` over the last `path_length` store PCs (Fig. 14a).
//! * **Store history** (`history_entries`): each store's PC, its bytes as line-aligned 4 B
//!   chunks, and the PC path before it (Fig. 14b). Lookups by value, as the hardware's
//!   value-indexed structure does ([`ValueIndex`]).
//! * **Learner**: on a `clwb`/`clflushopt` of a PM line, the line's address must equal two
//!   adjacent chunks (a pointer) of an earlier store, and each of its 16 data chunks a chunk of
//!   an earlier store (or zero, predicted as a constant: Sec. V-D1); the oldest match wins.
//!   The pattern (per chunk: generating PC and field) goes into the **prediction table**
//!   (`table_entries`, LRU), keyed by the PC path of its oldest generating store, with 3-bit
//!   address and data confidences.
//! * **Predictor**: a store whose PC path hits the table starts a **pending prediction**
//!   (`pending_entries`; the **index generator** maps up to `index_entries` PCs to them);
//!   later stores with the pattern's PCs fill its chunks; when all 17 are filled the line goes
//!   to the engine: the address alone, or with the data when the data confidence allows.
//! * **Timeout predictor** (`timeout_entries`): a PM line with no store for `timeout_ns` is
//!   sent with its cached contents (Sec. V-D2).
//! * **Validator**: the shared [`ResultBuffer`], `result_addresses` per thread x
//!   `result_candidates`; its verdicts train the confidences.

use super::result_buffer::{Candidate, ResultBuffer, Timeliness};
use super::value_index::ValueIndex;
use super::{Backend, RetiredStore, Source, Validation, WritePredictor};
use crate::bmo::BmoEngine;
use crate::config::PredictorConfig;
use crate::fast_hash::FastMap;
use crate::time::{ns_to_ps, Ps};
use std::collections::hash_map::Entry;
use std::collections::VecDeque;

/// A line's 16 chunks plus its address.
const CHUNKS: usize = 16;
/// Bit of the address in a pending prediction's `filled` mask.
const ADDR_BIT: u32 = 1 << CHUNKS;
const ALL_FILLED: u32 = (1 << (CHUNKS + 1)) - 1;
/// Candidates of the timeout predictor carry no table key.
const NO_KEY: u64 = u64::MAX;

/// One store in the history (its chunks are in the value indexes).
#[derive(Clone, Copy, Debug)]
struct HistEntry {
    pc: u64,
    /// The PC path before the store.
    path: u64,
}

/// A learned address/data-generating pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pattern {
    /// The store whose chunks `chunk`, `chunk + 1` held the line's address.
    addr_pc: u64,
    addr_chunk: u8,
    /// Per data chunk: the generating store's PC and the chunk of its line-aligned bytes
    /// (unused where `zero` has the chunk's bit).
    pcs: [u64; CHUNKS],
    chunks: [u8; CHUNKS],
    /// Chunks predicted as constant zeros (zero-value prediction, Sec. V-D1).
    zero: u16,
}

#[derive(Clone, Copy, Debug)]
struct TableEntry {
    pattern: Pattern,
    addr_conf: u32,
    data_conf: u32,
    stamp: u64,
}

/// A prediction waiting for its stores.
#[derive(Clone, Copy, Debug)]
struct Pending {
    key: u64,
    /// The pattern's address source and, per data chunk, the chunk of its store's bytes.
    addr_pc: u64,
    addr_chunk: u8,
    chunks: [u8; CHUNKS],
    filled: u32,
    words: [u32; CHUNKS],
    addr: u64,
    with_data: bool,
    stamp: u64,
    /// The distinct PCs the prediction waits for (its index-generator entries) and the data
    /// chunks each fills.
    pcs: [u64; CHUNKS + 1],
    masks: [u16; CHUNKS + 1],
    n_pcs: u8,
}

/// One core's predictor state.
#[derive(Clone, Default)]
struct Core {
    path: VecDeque<u64>,
    hash: u64,
    history: VecDeque<HistEntry>,
    /// Sequence number of `history[0]`.
    first_seq: u64,
    /// 4 B value -> its oldest and newest occurrences in the history.
    by_word: ValueIndex,
    /// Line address of an 8 B value -> its oldest and newest occurrences.
    by_ptr: ValueIndex,
    table: FastMap<u64, TableEntry>,
    /// Pending predictions by slot (slots never move, so index-generator entries stay valid).
    pending: Vec<Option<Pending>>,
    /// Index generator (Fig. 15): PC -> the pending prediction its next store fills. A newer
    /// prediction waiting for the same PC takes the entry over; the older one then waits for
    /// that PC in vain and leaves when evicted.
    index: FastMap<u64, u8>,
    /// Filters in front of the maps (host speed only): a bit per hashed table key, a count per
    /// hashed index PC. Most stores match neither, and a filter answers without hashing.
    table_filter: Filter,
    index_filter: Vec<u32>,
    /// Timeout predictor: (line, time of its last store).
    timeouts: Vec<(u64, Ps)>,
    stamp: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct PwStats {
    stores: u64,
    flushes: u64,
    learned: u64,
    learn_no_addr: u64,
    learn_no_data: u64,
    triggered: u64,
    pending_dropped: u64,
    index_full: u64,
    predictions: u64,
    data_predictions: u64,
    timeout_predictions: u64,
    writebacks: u64,
    addr_correct: u64,
    data_correct: u64,
    timeout_addr_correct: u64,
    timeout_data_correct: u64,
    data_wrong: u64,
    timeliness: Timeliness,
    unused: u64,
}

/// Parameters in simulator units.
#[derive(Clone, Copy, Debug)]
struct Params {
    path_length: usize,
    history: usize,
    table: usize,
    index: usize,
    pending: usize,
    timeouts: usize,
    timeout: Ps,
    result_addresses: usize,
    conf_init: u32,
    conf_max: u32,
    conf_min: u32,
    zero_values: bool,
    predict_data: bool,
    frontend: Ps,
    validator: Ps,
}

/// The PMWeaver predictor (`controller.predictor = "pmweaver"`).
#[derive(Clone)]
pub struct PmWeaver {
    p: Params,
    cores: Vec<Core>,
    results: ResultBuffer,
    stats: PwStats,
}

impl Default for PmWeaver {
    fn default() -> Self {
        let mut w = PmWeaver {
            p: Params {
                path_length: 1,
                history: 1,
                table: 1,
                index: 1,
                pending: 1,
                timeouts: 0,
                timeout: 0,
                result_addresses: 1,
                conf_init: 0,
                conf_max: 0,
                conf_min: 0,
                zero_values: true,
                predict_data: true,
                frontend: 0,
                validator: 0,
            },
            cores: Vec::new(),
            results: ResultBuffer::new(1, 1, 0),
            stats: PwStats::default(),
        };
        w.configure(&PredictorConfig::default())
            .expect("default predictor parameters are valid");
        w
    }
}

/// The line-aligned 4 B chunks a store of `value` at `addr` writes entirely.
#[inline]
fn store_words(addr: u64, value: &[u8]) -> ([u32; CHUNKS], u16) {
    let mut words = [0u32; CHUNKS];
    let mut valid = 0u16;
    let skip = ((4 - addr % 4) % 4) as usize;
    let Some(aligned) = value.get(skip..) else {
        return (words, 0);
    };
    let first = ((addr + skip as u64) % 64 / 4) as usize;
    let n = aligned.len() / 4;
    if first + n <= CHUNKS {
        // Within one line (the common case): a straight copy.
        for (w, c) in words[first..first + n]
            .iter_mut()
            .zip(aligned.chunks_exact(4))
        {
            *w = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        valid = (((1u32 << n) - 1) << first) as u16;
    } else {
        for (j, c) in aligned.chunks_exact(4).enumerate() {
            // A store of at most 64 B wraps into the next line at most once.
            let chunk = (first + j) % CHUNKS;
            words[chunk] = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            valid |= 1 << chunk;
        }
    }
    (words, valid)
}

fn line_words(data: &[u8; 64]) -> [u32; CHUNKS] {
    let mut w = [0u32; CHUNKS];
    for (i, c) in data.chunks_exact(4).enumerate() {
        w[i] = u32::from_le_bytes(c.try_into().expect("4 bytes"));
    }
    w
}

fn words_line(w: &[u32; CHUNKS]) -> [u8; 64] {
    let mut d = [0u8; 64];
    for (i, x) in w.iter().enumerate() {
        d[i * 4..i * 4 + 4].copy_from_slice(&x.to_le_bytes());
    }
    d
}

impl Core {
    fn entry(&self, seq: u64) -> &HistEntry {
        &self.history[(seq - self.first_seq) as usize]
    }

    /// Appends a store to the history (dropping the oldest beyond `cap`) and moves the PC
    /// path on.
    ///
    /// Only what the learner can use is indexed: no zero words when zeros are predicted as
    /// constants, and as pointers only 8 B values `is_pm` accepts (a PM write-back's address).
    fn record(
        &mut self,
        pc: u64,
        words: [u32; CHUNKS],
        valid: u16,
        p: &Params,
        is_pm: impl Fn(u64) -> bool,
    ) {
        if valid != 0 {
            if self.history.len() >= p.history {
                self.history.pop_front();
                self.first_seq += 1;
            }
            let seq = self.first_seq + self.history.len() as u64;
            let first = self.first_seq;
            for (c, w) in words.iter().enumerate() {
                if valid & (1 << c) != 0 && !(*w == 0 && p.zero_values) {
                    self.by_word.note(*w as u64, (seq, c as u8), first);
                }
            }
            for c in (0..CHUNKS).step_by(2) {
                if valid & (3 << c) == 3 << c {
                    let v = words[c] as u64 | (words[c + 1] as u64) << 32;
                    if is_pm(v) {
                        self.by_ptr.note(v & !63, (seq, c as u8), first);
                    }
                }
            }
            self.history.push_back(HistEntry {
                pc,
                path: self.hash,
            });
        }
        // hash = XOR_i (pc_i << i), i = 0 the newest: every older PC shifts by one.
        self.path.push_front(pc);
        let n = p.path_length;
        if self.path.len() > n {
            let oldest = self.path.pop_back().expect("path is full");
            self.hash ^= oldest.wrapping_shl(n as u32 - 1);
        }
        self.hash = self.hash.wrapping_shl(1) ^ pc;
    }

    /// Takes pending prediction `slot` out; its PCs leave the index generator. Returns what a
    /// completed one sends: (table key, line address, woven chunks, with data).
    fn remove_pending(&mut self, slot: usize) -> (u64, u64, [u32; CHUNKS], bool) {
        let q = self.pending[slot].as_ref().expect("an occupied slot");
        for pc in &q.pcs[..q.n_pcs as usize] {
            if let Entry::Occupied(e) = self.index.entry(*pc) {
                if *e.get() == slot as u8 {
                    e.remove();
                    self.index_filter[filter_slot(*pc)] -= 1;
                }
            }
        }
        let out = (q.key, q.addr, q.words, q.with_data);
        self.pending[slot] = None;
        out
    }
}

/// A bit set of hashed keys ([`FILTER_SLOTS`] bits).
type Filter = Vec<u64>;

/// Slots of the host-speed filters.
const FILTER_SLOTS: usize = 4096;

/// The filter slot of `key` (a multiplicative hash's top 12 bits).
#[inline]
fn filter_slot(key: u64) -> usize {
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 52) as usize
}

#[inline]
fn filter_has(f: &[u64], key: u64) -> bool {
    let s = filter_slot(key);
    f[s / 64] & (1 << (s % 64)) != 0
}

#[inline]
fn filter_set(f: &mut [u64], key: u64) {
    let s = filter_slot(key);
    f[s / 64] |= 1 << (s % 64);
}

impl PmWeaver {
    fn core(&mut self, t: u16) -> &mut Core {
        let t = t as usize;
        if self.cores.len() <= t {
            let slots = self.p.pending;
            let history = self.p.history;
            self.cores.resize_with(t + 1, || Core {
                pending: vec![None; slots],
                // Two chunks and at most one pointer per store, commonly.
                by_word: ValueIndex::new(2 * history),
                by_ptr: ValueIndex::new(history),
                table_filter: vec![0; FILTER_SLOTS / 64],
                index_filter: vec![0; FILTER_SLOTS],
                ..Core::default()
            });
            self.results
                .set_addresses(self.p.result_addresses * self.cores.len());
        }
        &mut self.cores[t]
    }

    /// Sends a predicted line to the engine and buffers the result.
    #[allow(clippy::too_many_arguments)]
    fn predict(
        &mut self,
        thread: u16,
        line_addr: u64,
        woven: [u8; 64],
        with_data: bool,
        source: Source,
        tag: u64,
        at: Ps,
        b: &Backend,
    ) {
        if !b.lines.is_pm(line_addr) {
            return;
        }
        let data = with_data.then_some(&woven);
        let Some(pre) = b.engine.precompute(line_addr, data, at) else {
            return;
        };
        self.stats.predictions += 1;
        if with_data {
            self.stats.data_predictions += 1;
        }
        if source == Source::Timeout {
            self.stats.timeout_predictions += 1;
        }
        self.results.insert(Candidate {
            pre,
            woven: Some(woven),
            source,
            tag,
            thread,
        });
        self.feedback_dropped();
    }

    /// Lowers the address confidence of table entries whose predictions went unused.
    fn feedback_dropped(&mut self) {
        for c in self.results.take_dropped() {
            self.stats.unused += 1;
            if c.tag == NO_KEY {
                continue;
            }
            if let Some(e) = self
                .cores
                .get_mut(c.thread as usize)
                .and_then(|core| core.table.get_mut(&c.tag))
            {
                e.addr_conf = e.addr_conf.saturating_sub(1);
            }
        }
    }

    /// Fires the timeout predictor's entries of core `t` idle since `now - timeout`.
    fn fire_timeouts(&mut self, t: u16, now: Ps, b: &Backend) {
        let timeout = self.p.timeout;
        let core = &mut self.cores[t as usize];
        if !core.timeouts.iter().any(|&(_, last)| last + timeout <= now) {
            return;
        }
        let mut due = Vec::new();
        core.timeouts.retain(|&(line, last)| {
            let fire = last + timeout <= now;
            if fire {
                due.push((line, last + timeout));
            }
            !fire
        });
        for (line, at) in due {
            let bytes = b.lines.line_bytes(line);
            let with_data = self.p.predict_data;
            self.predict(t, line, bytes, with_data, Source::Timeout, NO_KEY, at, b);
        }
    }

    /// Learns the address/data-generating stores of PM line `line_addr` holding `data`.
    fn learn(&mut self, t: u16, line_addr: u64, data: &[u8; 64]) {
        let zero_values = self.p.zero_values;
        let core = &mut self.cores[t as usize];
        let first = core.first_seq;
        let Some((addr_seq, addr_chunk)) = core.by_ptr.oldest(line_addr, first) else {
            self.stats.learn_no_addr += 1;
            return;
        };
        let mut oldest = addr_seq;
        let mut pattern = Pattern {
            addr_pc: core.entry(addr_seq).pc,
            addr_chunk,
            pcs: [0; CHUNKS],
            chunks: [0; CHUNKS],
            zero: 0,
        };
        for (i, w) in line_words(data).iter().enumerate() {
            if *w == 0 && zero_values {
                pattern.zero |= 1 << i;
                continue;
            }
            let Some((seq, chunk)) = core.by_word.oldest(*w as u64, first) else {
                self.stats.learn_no_data += 1;
                return;
            };
            oldest = oldest.min(seq);
            pattern.pcs[i] = core.entry(seq).pc;
            pattern.chunks[i] = chunk;
        }
        let key = core.entry(oldest).path;
        core.stamp += 1;
        let stamp = core.stamp;
        self.stats.learned += 1;
        if let Some(e) = core.table.get_mut(&key) {
            e.stamp = stamp;
            if e.pattern != pattern {
                e.pattern = pattern;
                e.addr_conf = self.p.conf_init;
                e.data_conf = self.p.conf_init;
            }
            return;
        }
        if core.table.len() >= self.p.table {
            let victim = core
                .table
                .iter()
                .min_by_key(|(_, e)| e.stamp)
                .map(|(&k, _)| k)
                .expect("table is full");
            core.table.remove(&victim);
            core.table_filter.fill(0);
            for k in core.table.keys() {
                filter_set(&mut core.table_filter, *k);
            }
        }
        filter_set(&mut core.table_filter, key);
        core.table.insert(
            key,
            TableEntry {
                pattern,
                addr_conf: self.p.conf_init,
                data_conf: self.p.conf_init,
                stamp,
            },
        );
    }

    /// A store's PC path may start a prediction; the store then fills the pending prediction
    /// its PC is mapped to. Returns it when that completed it.
    fn trigger_and_fill(
        &mut self,
        t: u16,
        pc: u64,
        words: &[u32; CHUNKS],
        valid: u16,
    ) -> Option<(u64, u64, [u32; CHUNKS], bool)> {
        let p = self.p;
        let core = &mut self.cores[t as usize];
        let hit = filter_has(&core.table_filter, core.hash);
        if let Some(e) = hit.then(|| core.table.get_mut(&core.hash)).flatten() {
            if e.addr_conf >= p.conf_min {
                core.stamp += 1;
                e.stamp = core.stamp;
                let pat = e.pattern;
                let with_data = p.predict_data && e.data_conf >= p.conf_min;
                self.stats.triggered += 1;
                let mut pcs = [0u64; CHUNKS + 1];
                let mut masks = [0u16; CHUNKS + 1];
                let mut n = 0;
                let sources = (0..CHUNKS)
                    .filter(|i| pat.zero & (1 << i) == 0)
                    .map(|i| (pat.pcs[i], 1u16 << i));
                for (pc, m) in sources.chain(std::iter::once((pat.addr_pc, 0))) {
                    match pcs[..n].iter().position(|&p| p == pc) {
                        Some(k) => masks[k] |= m,
                        None => {
                            pcs[n] = pc;
                            masks[n] = m;
                            n += 1;
                        }
                    }
                }
                // Counting the PCs new to the index generator takes lookups; the bound
                // "all are new" usually fits already.
                let fits = core.index.len() + n <= p.index
                    || core.index.len()
                        + pcs[..n]
                            .iter()
                            .filter(|pc| !core.index.contains_key(pc))
                            .count()
                        <= p.index;
                if !fits {
                    self.stats.index_full += 1;
                } else {
                    let slot = match core.pending.iter().position(Option::is_none) {
                        Some(free) => free,
                        None => {
                            // The oldest pending prediction makes room.
                            let (i, _) = core
                                .pending
                                .iter()
                                .enumerate()
                                .min_by_key(|(_, q)| q.as_ref().map_or(0, |q| q.stamp))
                                .expect("a pending table has slots");
                            self.stats.pending_dropped += 1;
                            core.remove_pending(i);
                            i
                        }
                    };
                    let filled = pat.zero as u32;
                    for pc in &pcs[..n] {
                        if core.index.insert(*pc, slot as u8).is_none() {
                            core.index_filter[filter_slot(*pc)] += 1;
                        }
                    }
                    core.pending[slot] = Some(Pending {
                        key: core.hash,
                        addr_pc: pat.addr_pc,
                        addr_chunk: pat.addr_chunk,
                        chunks: pat.chunks,
                        filled,
                        words: [0; CHUNKS],
                        addr: 0,
                        with_data,
                        stamp: core.stamp,
                        pcs,
                        masks,
                        n_pcs: n as u8,
                    });
                }
            }
        }
        if core.index_filter[filter_slot(pc)] == 0 {
            return None;
        }
        let slot = *core.index.get(&pc)? as usize;
        let q = core.pending[slot].as_mut()?;
        if q.addr_pc == pc && q.filled & ADDR_BIT == 0 {
            let c = q.addr_chunk as usize;
            if valid & (3 << c) == 3 << c {
                q.addr = (words[c] as u64 | (words[c + 1] as u64) << 32) & !63;
                q.filled |= ADDR_BIT;
            }
        }
        if let Some(k) = q.pcs[..q.n_pcs as usize].iter().position(|&p| p == pc) {
            let mut todo = q.masks[k] & !(q.filled as u16);
            while todo != 0 {
                let i = todo.trailing_zeros() as usize;
                todo &= todo - 1;
                let chunk = q.chunks[i] as usize;
                if valid & (1 << chunk) != 0 {
                    q.words[i] = words[chunk];
                    q.filled |= 1 << i;
                }
            }
        }
        (q.filled == ALL_FILLED).then(|| core.remove_pending(slot))
    }
}

impl WritePredictor for PmWeaver {
    fn clone_box(&self) -> Box<dyn WritePredictor> {
        Box::new(self.clone())
    }

    fn name(&self) -> &'static str {
        "pmweaver"
    }

    fn configure(&mut self, c: &PredictorConfig) -> Result<(), String> {
        self.p = Params {
            path_length: c.path_length as usize,
            history: c.history_entries as usize,
            table: c.table_entries as usize,
            index: c.index_entries as usize,
            pending: c.pending_entries as usize,
            timeouts: c.timeout_entries as usize,
            timeout: ns_to_ps(c.timeout_ns),
            result_addresses: c.result_addresses as usize,
            conf_init: c.confidence_init,
            conf_max: c.confidence_max,
            conf_min: c.confidence_threshold,
            zero_values: c.zero_values,
            predict_data: c.predict_data,
            frontend: ns_to_ps(c.frontend_ns),
            validator: ns_to_ps(c.validator_ns),
        };
        self.results = ResultBuffer::new(
            c.result_addresses as usize,
            c.result_candidates as usize,
            ns_to_ps(c.max_age_ns),
        );
        Ok(())
    }

    fn on_store(&mut self, s: &RetiredStore, now: Ps, b: &Backend) {
        self.stats.stores += 1;
        let t = s.thread;
        self.core(t);
        self.fire_timeouts(t, now, b);
        let (words, valid) = store_words(s.addr, s.value);
        let at = now + self.p.frontend;
        if let Some((key, addr, chunks, with_data)) = self.trigger_and_fill(t, s.pc, &words, valid)
        {
            let woven = words_line(&chunks);
            self.predict(t, addr, woven, with_data, Source::Stores, key, at, b);
        }
        let p = self.p;
        let core = &mut self.cores[t as usize];
        core.record(s.pc, words, valid, &p, |v| b.lines.is_pm(v));
        if s.pm && p.timeouts > 0 {
            let line = s.addr & !63;
            if let Some(e) = core.timeouts.iter_mut().find(|e| e.0 == line) {
                e.1 = now;
            } else {
                if core.timeouts.len() >= p.timeouts {
                    let (i, _) = core
                        .timeouts
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, e)| e.1)
                        .expect("timeout table is full");
                    core.timeouts.remove(i);
                }
                core.timeouts.push((line, now));
            }
        }
    }

    fn on_flush(&mut self, thread: u16, line_addr: u64, data: &[u8; 64], now: Ps, b: &Backend) {
        self.stats.flushes += 1;
        self.core(thread);
        self.fire_timeouts(thread, now, b);
        // The line is written back now: nothing is left for its timer to predict.
        self.cores[thread as usize]
            .timeouts
            .retain(|e| e.0 != line_addr);
        self.learn(thread, line_addr, data);
    }

    fn on_writeback(
        &mut self,
        line_addr: u64,
        data: Option<&[u8; 64]>,
        now: Ps,
        _engine: &dyn BmoEngine,
    ) -> Validation {
        self.stats.writebacks += 1;
        let m = self.results.validate(line_addr, data, now);
        let max = self.p.conf_max;
        // Other candidates of the address lost to this one: their address was right, so no
        // confidence penalty, but they were not used.
        self.stats.unused += m.discarded.len() as u64;
        let Some(c) = m.candidate else {
            self.feedback_dropped();
            return Validation {
                pre: None,
                latency: self.p.validator,
            };
        };
        self.stats.addr_correct += 1;
        self.stats.timeliness.record(c.pre.issued, now);
        if m.data {
            self.stats.data_correct += 1;
        } else if data.is_some() && c.source == Source::Stores && c.woven.as_ref() != data {
            self.stats.data_wrong += 1;
        }
        if c.source == Source::Timeout {
            self.stats.timeout_addr_correct += 1;
            if m.data {
                self.stats.timeout_data_correct += 1;
            }
        }
        if c.tag != NO_KEY {
            let woven_ok = data.is_some() && c.woven.as_ref() == data;
            if let Some(e) = self
                .cores
                .get_mut(c.thread as usize)
                .and_then(|core| core.table.get_mut(&c.tag))
            {
                e.addr_conf = (e.addr_conf + 1).min(max);
                e.data_conf = if woven_ok {
                    (e.data_conf + 1).min(max)
                } else {
                    e.data_conf.saturating_sub(1)
                };
            }
        }
        self.feedback_dropped();
        Validation {
            pre: Some(c.pre),
            latency: self.p.validator,
        }
    }

    fn stats(&self) -> Vec<(&'static str, u64)> {
        let s = &self.stats;
        let r = &self.results.stats;
        vec![
            ("stores", s.stores),
            ("flushes", s.flushes),
            ("learned", s.learned),
            ("learn_no_addr", s.learn_no_addr),
            ("learn_no_data", s.learn_no_data),
            ("triggered", s.triggered),
            ("pending_dropped", s.pending_dropped),
            ("index_full", s.index_full),
            ("predictions", s.predictions),
            ("data_predictions", s.data_predictions),
            ("timeout_predictions", s.timeout_predictions),
            ("writebacks", s.writebacks),
            ("addr_correct", s.addr_correct),
            ("data_correct", s.data_correct),
            ("timeout_addr_correct", s.timeout_addr_correct),
            ("timeout_data_correct", s.timeout_data_correct),
            ("data_wrong", s.data_wrong),
            ("untimely", s.timeliness.untimely),
            ("gap_ps", s.timeliness.gap_ps),
            ("unused", s.unused),
            ("results_evicted", r.evicted),
            ("results_aged", r.aged),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bmo::EncBmt;
    use crate::predict::LineView;
    use std::cell::RefCell;

    const NS: Ps = 1000;
    const PM: u64 = 0x1000_0000_0000;

    /// The caches as the test's program leaves them.
    #[derive(Default)]
    struct Lines(RefCell<FastMap<u64, [u8; 64]>>);

    impl LineView for Lines {
        fn line_bytes(&self, line_addr: u64) -> [u8; 64] {
            self.0.borrow().get(&line_addr).copied().unwrap_or([0; 64])
        }
        fn is_pm(&self, addr: u64) -> bool {
            addr >= PM
        }
    }

    struct Bench {
        w: PmWeaver,
        engine: EncBmt,
        lines: Lines,
        now: Ps,
    }

    impl Bench {
        fn new(path_length: u32) -> Bench {
            let mut w = PmWeaver::default();
            let c = PredictorConfig {
                path_length,
                ..PredictorConfig::default()
            };
            w.configure(&c).unwrap();
            Bench {
                w,
                engine: EncBmt::default(),
                lines: Lines::default(),
                now: 0,
            }
        }

        fn store(&mut self, pc: u64, addr: u64, value: u64) {
            self.now += 10 * NS;
            let bytes = value.to_le_bytes();
            {
                let mut l = self.lines.0.borrow_mut();
                let line = l.entry(addr & !63).or_insert([0; 64]);
                let o = (addr % 64) as usize;
                line[o..o + 8].copy_from_slice(&bytes);
            }
            let s = RetiredStore {
                thread: 0,
                pc,
                addr,
                value: &bytes,
                pm: addr >= PM,
            };
            let b = Backend {
                engine: &self.engine,
                lines: &self.lines,
            };
            self.w.on_store(&s, self.now, &b);
        }

        /// `clwb` of `line` and its write-back reaching the controller 30 ns later.
        fn persist(&mut self, line: u64) -> Validation {
            self.now += 10 * NS;
            let data = self.lines.line_bytes(line);
            let b = Backend {
                engine: &self.engine,
                lines: &self.lines,
            };
            self.w.on_flush(0, line, &data, self.now, &b);
            self.now += 30 * NS;
            self.w
                .on_writeback(line, Some(&data), self.now, &self.engine)
        }

        /// PMWeaver Fig. 13's procedure: a fixed context, then a pointer to a new node, the
        /// node's two fields, and the node's write-back.
        fn procedure(&mut self, node: u64, a: u64, b: u64) -> Validation {
            self.store(0x10, 0x7000, 1); // context (volatile)
            self.store(0x14, 0x7008, 2);
            self.store(0x20, 0x7010, node); // St-A: the pointer (address generator)
            self.store(0x24, node, a); // St-B: data
            self.store(0x28, node + 8, b); // St-C: data
            self.persist(node)
        }

        fn stat(&self, k: &str) -> u64 {
            self.w.stats().iter().find(|s| s.0 == k).unwrap().1
        }
    }

    #[test]
    fn fig13_walkthrough_is_learned_then_predicted() {
        let mut b = Bench::new(2);
        let v = b.procedure(PM + 0x1000, 11, 12);
        assert!(v.pre.is_none(), "nothing is predicted before learning");
        assert_eq!(b.stat("learned"), 1);
        // Second invocation, new node and values: woven from St-A, St-B, St-C.
        let v = b.procedure(PM + 0x2040, 21, 22);
        let pre = v.pre.expect("the write-back was predicted");
        assert_eq!(pre.line_addr, PM + 0x2040);
        let mut want = [0u8; 64];
        want[..8].copy_from_slice(&21u64.to_le_bytes());
        want[8..16].copy_from_slice(&22u64.to_le_bytes());
        assert_eq!(pre.data, Some(want), "address and data predicted");
        assert_eq!((b.stat("addr_correct"), b.stat("data_correct")), (1, 1));
        assert_eq!(v.latency, 5 * NS, "the validator's lookup");
    }

    #[test]
    fn a_wrong_data_prediction_is_discarded_and_recomputed() {
        let mut b = Bench::new(2);
        b.procedure(PM + 0x1000, 11, 12);
        // The node's field changes after St-C (a store the pattern does not know).
        b.store(0x10, 0x7000, 1);
        b.store(0x14, 0x7008, 2);
        b.store(0x20, 0x7010, PM + 0x3000);
        b.store(0x24, PM + 0x3000, 31);
        b.store(0x28, PM + 0x3008, 32);
        b.store(0x30, PM + 0x3000, 99);
        let v = b.persist(PM + 0x3000);
        let pre = v.pre.expect("the address was right");
        assert_eq!(pre.data, None, "the wrong data is not used");
        assert_eq!((b.stat("addr_correct"), b.stat("data_correct")), (1, 0));
        assert_eq!(b.stat("data_wrong"), 1);
        // The engine recomputes the data path at the write-back: the MAC's 40 ns remain.
        let line = b.lines.line_bytes(PM + 0x3000);
        let out = b
            .engine
            .write(PM + 0x3000, Some(&line), b.now + 10_000 * NS, Some(&pre));
        assert_eq!(out.delay, 40 * NS);
    }

    #[test]
    fn the_timeout_predictor_fires_after_150_ns_idle() {
        let mut b = Bench::new(32);
        b.store(0x40, PM + 0x5000, 7); // t = 10 ns, no pattern learned
        b.store(0x44, 0x7000, 1); // t = 20 ns: the line is idle for 10 ns only
        assert_eq!(b.stat("timeout_predictions"), 0);
        b.now += 150 * NS;
        b.store(0x44, 0x7000, 1); // t = 180 ns: idle 170 ns, fires at 160 ns
        assert_eq!(b.stat("timeout_predictions"), 1);
        b.now += 1000 * NS;
        let v = b.persist(PM + 0x5000);
        let pre = v.pre.expect("predicted by the timeout predictor");
        assert_eq!(pre.issued, 160 * NS);
        assert!(pre.data.is_some());
        assert_eq!(b.stat("timeout_data_correct"), 1);
    }
}
