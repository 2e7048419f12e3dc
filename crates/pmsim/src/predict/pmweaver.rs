//! PMWeaver (Mahar et al., PACT'21): predicts PM write-backs from the values of earlier store
//! instructions and has the PM-support engine precompute them.
//!
//! Per core (Sec. IV-V, Table I, and the artifact where the paper is silent):
//! * **PC path**: `XOR_i (pc_i << i)` over the last `path_length` store PCs (Fig. 14a).
//! * **Store history** (`history_entries`): each store's PC, its bytes as line-aligned 4 B
//!   chunks, and the PC path before it (Fig. 14b). Lookups by value, as the hardware's
//!   value-indexed structure does.
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
//! * **Validator**: the shared [`ResultBuffer`], `result_addresses` per core x
//!   `result_candidates`; its verdicts train the confidences.

use super::result_buffer::{Candidate, ResultBuffer};
use super::{Backend, RetiredStore, Source, Validation, WritePredictor};
use crate::bmo::BmoEngine;
use crate::config::PredictorConfig;
use crate::time::{ns_to_ps, Ps};
use std::collections::{HashMap, VecDeque};

/// A line's 16 chunks plus its address.
const CHUNKS: usize = 16;
/// Bit of the address in a pending prediction's `filled` mask.
const ADDR_BIT: u32 = 1 << CHUNKS;
const ALL_FILLED: u32 = (1 << (CHUNKS + 1)) - 1;
/// Candidates of the timeout predictor carry no table key.
const NO_KEY: u64 = u64::MAX;

/// Where one chunk of a predicted line comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChunkSrc {
    /// An all-zero chunk (zero-value prediction).
    Zero,
    /// Chunk `chunk` of the line-aligned bytes of the store at `pc`.
    Store { pc: u64, chunk: u8 },
}

/// One store in the history.
#[derive(Clone, Copy, Debug)]
struct HistEntry {
    pc: u64,
    words: [u32; CHUNKS],
    /// Chunks the store wrote entirely.
    valid: u16,
    /// The PC path before the store.
    path: u64,
}

/// A learned address/data-generating pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pattern {
    /// The store whose chunks `chunk`, `chunk + 1` held the line's address.
    addr_pc: u64,
    addr_chunk: u8,
    data: [ChunkSrc; CHUNKS],
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
    pattern: Pattern,
    filled: u32,
    words: [u32; CHUNKS],
    addr: u64,
    with_data: bool,
    stamp: u64,
}

/// One core's predictor state.
#[derive(Default)]
struct Core {
    path: VecDeque<u64>,
    hash: u64,
    history: VecDeque<HistEntry>,
    /// Sequence number of `history[0]`.
    first_seq: u64,
    /// 4 B value -> (store sequence, chunk) of its occurrences in the history, oldest first.
    by_word: HashMap<u32, VecDeque<(u64, u8)>>,
    /// Line address of an 8 B value -> its occurrences, oldest first.
    by_ptr: HashMap<u64, VecDeque<(u64, u8)>>,
    table: HashMap<u64, TableEntry>,
    pending: Vec<Pending>,
    /// Index generator: PC -> pending predictions (bit per slot) it contributes to.
    index: HashMap<u64, u64>,
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
    untimely: u64,
    gap_ps: u64,
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

/// A prediction made this close to its write-back is "untimely" (the artifact: < 50 ns).
const UNTIMELY: Ps = 50_000;

/// The PMWeaver predictor (`controller.predictor = "pmweaver"`).
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
fn store_words(addr: u64, value: &[u8]) -> ([u32; CHUNKS], u16) {
    let mut words = [0u32; CHUNKS];
    let mut valid = 0u16;
    let skip = ((4 - addr % 4) % 4) as usize;
    let mut k = skip;
    while k + 4 <= value.len() {
        let chunk = (((addr + k as u64) % 64) / 4) as usize;
        words[chunk] = u32::from_le_bytes(value[k..k + 4].try_into().expect("4 bytes"));
        valid |= 1 << chunk;
        k += 4;
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
    fn record(&mut self, pc: u64, words: [u32; CHUNKS], valid: u16, p: &Params) {
        if valid != 0 {
            if self.history.len() >= p.history {
                let old = self.history.pop_front().expect("history is full");
                self.first_seq += 1;
                forget(&mut self.by_word, &mut self.by_ptr, &old);
            }
            let seq = self.first_seq + self.history.len() as u64;
            for (c, w) in words.iter().enumerate() {
                if valid & (1 << c) != 0 {
                    self.by_word
                        .entry(*w)
                        .or_default()
                        .push_back((seq, c as u8));
                }
            }
            for c in (0..CHUNKS).step_by(2) {
                if valid & (3 << c) == 3 << c {
                    let v = words[c] as u64 | (words[c + 1] as u64) << 32;
                    self.by_ptr
                        .entry(v & !63)
                        .or_default()
                        .push_back((seq, c as u8));
                }
            }
            self.history.push_back(HistEntry {
                pc,
                words,
                valid,
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

    /// The oldest history occurrence of `q`'s front, as `(seq, chunk)`.
    fn oldest(q: Option<&VecDeque<(u64, u8)>>) -> Option<(u64, u8)> {
        q.and_then(|q| q.front().copied())
    }

    /// Takes pending prediction `slot` out: its PCs leave the index generator and the slots
    /// after it move down by one.
    fn remove_pending(&mut self, slot: usize) -> Pending {
        let bit = 1u64 << slot;
        let high = !((bit << 1) - 1);
        self.index.retain(|_, m| {
            *m = (*m & !(bit | high)) | ((*m & high) >> 1);
            *m != 0
        });
        self.pending.remove(slot)
    }
}

/// Removes `old`'s occurrences (the oldest of each value) from the value indexes.
fn forget(
    by_word: &mut HashMap<u32, VecDeque<(u64, u8)>>,
    by_ptr: &mut HashMap<u64, VecDeque<(u64, u8)>>,
    old: &HistEntry,
) {
    for (c, w) in old.words.iter().enumerate() {
        if old.valid & (1 << c) != 0 {
            if let Some(q) = by_word.get_mut(w) {
                q.pop_front();
                if q.is_empty() {
                    by_word.remove(w);
                }
            }
        }
    }
    for c in (0..CHUNKS).step_by(2) {
        if old.valid & (3 << c) == 3 << c {
            let v = (old.words[c] as u64 | (old.words[c + 1] as u64) << 32) & !63;
            if let Some(q) = by_ptr.get_mut(&v) {
                q.pop_front();
                if q.is_empty() {
                    by_ptr.remove(&v);
                }
            }
        }
    }
}

impl PmWeaver {
    fn core(&mut self, t: u16) -> &mut Core {
        let t = t as usize;
        if self.cores.len() <= t {
            self.cores.resize_with(t + 1, Core::default);
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
        if core.timeouts.is_empty() {
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
        let Some((addr_seq, addr_chunk)) = Core::oldest(core.by_ptr.get(&line_addr)) else {
            self.stats.learn_no_addr += 1;
            return;
        };
        let mut oldest = addr_seq;
        let mut srcs = [ChunkSrc::Zero; CHUNKS];
        for (i, w) in line_words(data).iter().enumerate() {
            if *w == 0 && zero_values {
                continue;
            }
            let Some((seq, chunk)) = Core::oldest(core.by_word.get(w)) else {
                self.stats.learn_no_data += 1;
                return;
            };
            oldest = oldest.min(seq);
            srcs[i] = ChunkSrc::Store {
                pc: core.entry(seq).pc,
                chunk,
            };
        }
        let pattern = Pattern {
            addr_pc: core.entry(addr_seq).pc,
            addr_chunk,
            data: srcs,
        };
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
        }
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

    /// A store's PC path may start a prediction; the store then fills the pending predictions
    /// its PC contributes to. Returns the completed ones.
    fn trigger_and_fill(
        &mut self,
        t: u16,
        pc: u64,
        words: &[u32; CHUNKS],
        valid: u16,
    ) -> Vec<Pending> {
        let p = self.p;
        let core = &mut self.cores[t as usize];
        if let Some(e) = core.table.get_mut(&core.hash) {
            if e.addr_conf >= p.conf_min {
                core.stamp += 1;
                e.stamp = core.stamp;
                let pat = e.pattern;
                let with_data = p.predict_data && e.data_conf >= p.conf_min;
                self.stats.triggered += 1;
                let mut pcs: Vec<u64> = pat
                    .data
                    .iter()
                    .filter_map(|s| match s {
                        ChunkSrc::Store { pc, .. } => Some(*pc),
                        ChunkSrc::Zero => None,
                    })
                    .chain(std::iter::once(pat.addr_pc))
                    .collect();
                pcs.sort_unstable();
                pcs.dedup();
                let new_pcs = pcs.iter().filter(|pc| !core.index.contains_key(pc)).count();
                if core.index.len() + new_pcs > p.index {
                    self.stats.index_full += 1;
                } else {
                    if core.pending.len() >= p.pending {
                        // The oldest pending prediction makes room.
                        let (i, _) = core
                            .pending
                            .iter()
                            .enumerate()
                            .min_by_key(|(_, q)| q.stamp)
                            .expect("pending table is full");
                        self.stats.pending_dropped += 1;
                        core.remove_pending(i);
                    }
                    let mut filled = 0u32;
                    for (i, s) in pat.data.iter().enumerate() {
                        if *s == ChunkSrc::Zero {
                            filled |= 1 << i;
                        }
                    }
                    let slot = core.pending.len();
                    core.pending.push(Pending {
                        key: core.hash,
                        pattern: pat,
                        filled,
                        words: [0; CHUNKS],
                        addr: 0,
                        with_data,
                        stamp: core.stamp,
                    });
                    for pc in pcs {
                        *core.index.entry(pc).or_insert(0) |= 1 << slot;
                    }
                }
            }
        }
        let Some(&mask) = core.index.get(&pc) else {
            return Vec::new();
        };
        let mut done = Vec::new();
        for slot in (0..core.pending.len()).filter(|s| mask & (1 << s) != 0) {
            let q = &mut core.pending[slot];
            let pat = q.pattern;
            if pat.addr_pc == pc && q.filled & ADDR_BIT == 0 {
                let c = pat.addr_chunk as usize;
                if valid & (3 << c) == 3 << c {
                    q.addr = (words[c] as u64 | (words[c + 1] as u64) << 32) & !63;
                    q.filled |= ADDR_BIT;
                }
            }
            for (i, s) in pat.data.iter().enumerate() {
                if let ChunkSrc::Store { pc: spc, chunk } = *s {
                    if spc == pc && q.filled & (1 << i) == 0 && valid & (1 << chunk) != 0 {
                        q.words[i] = words[chunk as usize];
                        q.filled |= 1 << i;
                    }
                }
            }
            if q.filled == ALL_FILLED {
                done.push(slot);
            }
        }
        done.iter()
            .rev()
            .map(|&slot| core.remove_pending(slot))
            .collect()
    }
}

impl WritePredictor for PmWeaver {
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
        for q in self.trigger_and_fill(t, s.pc, &words, valid) {
            let woven = words_line(&q.words);
            self.predict(t, q.addr, woven, q.with_data, Source::Stores, q.key, at, b);
        }
        let p = self.p;
        let core = &mut self.cores[t as usize];
        core.record(s.pc, words, valid, &p);
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
        let gap = now.saturating_sub(c.pre.issued);
        self.stats.gap_ps += gap;
        if gap < UNTIMELY {
            self.stats.untimely += 1;
        }
        if m.data {
            self.stats.data_correct += 1;
        } else if c.woven.is_some() && c.pre.data.is_none() && c.source == Source::Stores {
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
            ("untimely", s.untimely),
            ("gap_ps", s.gap_ps),
            ("unused", s.unused),
            ("results_evicted", r.evicted),
            ("results_aged", r.aged),
        ]
    }
}
