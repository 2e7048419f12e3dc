//! A reference persistence model: which crash images an x86 PM program may leave.
//!
//! This is the simulator-free judge used by the crash tests. It consumes a trace in order and
//! tracks, for every PM line, its *versions* since the last version that is guaranteed
//! durable:
//!
//! * a store or non-temporal store creates a new version (the line after that store);
//! * `clwb` / `clflushopt` by thread `t` remembers the line's current version as pending for
//!   `t` (a non-temporal store is pending at once);
//! * `sfence` / `mfence` by `t` makes each of `t`'s pending versions durable: older versions
//!   can no longer be what survives.
//!
//! At a cut, every line may hold any of its versions from the durable one to the latest: the
//! cache may have written a dirty line back at any time, an unfenced flush may or may not have
//! completed. [`CutPolicy`] picks one: the durable version (nothing beyond the guarantees),
//! the latest (everything executed persisted), or a random version per line (an adversary).
//! A crash-consistent program must recover from every choice.
//!
//! With `hw_atomic`, stores between a thread's `TxBegin` and `TxEnd` are buffered and made
//! durable together at `TxEnd`: an ideal hardware-logging scheme, after its recovery.

use pmtrace::{Op, TraceEvent};

use crate::heap::{is_pm, line_of};
use crate::image::CrashImage;
use crate::memory::IntMap;
use crate::rng::Rng;

/// Most versions kept per line; older intermediate versions are dropped (a dropped version
/// only narrows the adversary's choices, it never produces an illegal image).
const MAX_VERSIONS: usize = 24;

/// How a cut chooses each line's surviving version.
pub enum CutPolicy {
    /// The guaranteed-durable version only.
    Durable,
    /// The latest version (every executed store persisted).
    Latest,
    /// A random version between durable and latest, per line.
    Random(Rng),
}

struct LineState {
    next_ver: u64,
    /// (version, bytes); element 0 is the durable version, the last the latest.
    versions: Vec<(u64, [u8; 64])>,
}

/// The reference persistence model (see the module documentation).
pub struct PersistModel {
    lines: IntMap<u64, LineState>,
    pending: Vec<Vec<(u64, u64)>>,
    completed: Vec<u64>,
    hw_atomic: bool,
    in_tx: Vec<bool>,
    tx_stores: Vec<Vec<(u64, Vec<u8>)>>,
}

impl PersistModel {
    /// A model for `threads` threads; `hw_atomic` makes hardware transactions atomic.
    pub fn new(threads: u16, hw_atomic: bool) -> PersistModel {
        let n = threads as usize;
        PersistModel {
            lines: IntMap::default(),
            pending: vec![Vec::new(); n],
            completed: vec![0; n],
            hw_atomic,
            in_tx: vec![false; n],
            tx_stores: vec![Vec::new(); n],
        }
    }

    /// A model whose PM holds the lines of `image`, all durable (a crash image, before
    /// recovery runs on it).
    pub fn over_image(threads: u16, image: &CrashImage) -> PersistModel {
        let mut m = PersistModel::new(threads, false);
        for (addr, line) in image.iter() {
            m.lines.insert(
                addr,
                LineState {
                    next_ver: 1,
                    versions: vec![(0, *line)],
                },
            );
        }
        m
    }

    /// Events applied so far, per thread (the completed counts for an oracle).
    pub fn completed(&self) -> &[u64] {
        &self.completed
    }

    fn line_mut(&mut self, line: u64) -> &mut LineState {
        self.lines.entry(line).or_insert_with(|| LineState {
            next_ver: 1,
            versions: vec![(0, [0u8; 64])],
        })
    }

    fn write(&mut self, addr: u64, bytes: &[u8]) -> u64 {
        let line = line_of(addr);
        let ls = self.line_mut(line);
        let mut content = ls.versions.last().expect("non-empty").1;
        let off = (addr - line) as usize;
        content[off..off + bytes.len()].copy_from_slice(bytes);
        let v = ls.next_ver;
        ls.next_ver += 1;
        ls.versions.push((v, content));
        if ls.versions.len() > MAX_VERSIONS {
            ls.versions.remove(1);
        }
        v
    }

    fn make_durable(&mut self, line: u64, ver: u64) {
        if let Some(ls) = self.lines.get_mut(&line) {
            // The first kept version at or after `ver` (a later one if `ver` was dropped).
            if let Some(i) = ls.versions.iter().position(|&(v, _)| v >= ver) {
                ls.versions.drain(..i);
            }
        }
    }

    fn current_ver(&self, line: u64) -> u64 {
        self.lines
            .get(&line)
            .map_or(0, |ls| ls.versions.last().expect("non-empty").0)
    }

    /// Applies one event.
    pub fn apply(&mut self, ev: &TraceEvent) {
        let t = ev.thread as usize;
        self.completed[t] += 1;
        match ev.op {
            Op::Store | Op::NtStore if is_pm(ev.addr) => {
                let bytes = ev.value_bytes();
                if self.hw_atomic && self.in_tx[t] {
                    self.tx_stores[t].push((ev.addr, bytes.to_vec()));
                    return;
                }
                let v = self.write(ev.addr, bytes);
                if ev.op == Op::NtStore {
                    self.pending[t].push((line_of(ev.addr), v));
                }
            }
            Op::Clwb | Op::Clflushopt if is_pm(ev.addr) => {
                let line = line_of(ev.addr);
                let v = self.current_ver(line);
                self.pending[t].push((line, v));
            }
            Op::Sfence | Op::Mfence => {
                let pending = std::mem::take(&mut self.pending[t]);
                for (line, v) in pending {
                    self.make_durable(line, v);
                }
            }
            Op::TxBegin if self.hw_atomic => self.in_tx[t] = true,
            Op::TxEnd if self.hw_atomic => {
                self.in_tx[t] = false;
                let stores = std::mem::take(&mut self.tx_stores[t]);
                let mut touched = Vec::new();
                for (addr, bytes) in stores {
                    let v = self.write(addr, &bytes);
                    touched.push((line_of(addr), v));
                }
                for (line, v) in touched {
                    self.make_durable(line, v);
                }
            }
            _ => {}
        }
    }

    /// The crash image at this point, each line's version chosen by `policy`.
    pub fn image(&self, policy: &mut CutPolicy) -> CrashImage {
        let mut img = CrashImage::new();
        let mut addrs: Vec<u64> = self.lines.keys().copied().collect();
        addrs.sort_unstable();
        for a in addrs {
            let ls = &self.lines[&a];
            let i = match policy {
                CutPolicy::Durable => 0,
                CutPolicy::Latest => ls.versions.len() - 1,
                CutPolicy::Random(rng) => rng.below(ls.versions.len() as u64) as usize,
            };
            let bytes = ls.versions[i].1;
            if bytes.iter().any(|&b| b != 0) {
                img.set_line(a, bytes);
            }
        }
        img
    }

    /// Lines with more than one possible surviving version.
    pub fn undecided_lines(&self) -> usize {
        self.lines.values().filter(|l| l.versions.len() > 1).count()
    }
}

impl Default for PersistModel {
    fn default() -> Self {
        PersistModel::new(1, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heap::PM_BASE;

    fn st(addr: u64, v: u64) -> TraceEvent {
        TraceEvent::store(Op::Store, 0, 1, addr, &v.to_le_bytes(), 0)
    }

    #[test]
    fn only_flushed_and_fenced_stores_are_guaranteed() {
        let mut m = PersistModel::new(1, false);
        m.apply(&st(PM_BASE, 1));
        m.apply(&TraceEvent::access(Op::Clwb, 0, 2, PM_BASE, 64, 0));
        m.apply(&st(PM_BASE + 64, 2));
        assert!(m.image(&mut CutPolicy::Durable).is_empty());
        m.apply(&TraceEvent::marker(Op::Sfence, 0, 3, 0));
        let d = m.image(&mut CutPolicy::Durable);
        assert_eq!(d.read_u64(PM_BASE), 1);
        assert_eq!(d.read_u64(PM_BASE + 64), 0);
        let l = m.image(&mut CutPolicy::Latest);
        assert_eq!(l.read_u64(PM_BASE + 64), 2);
        assert_eq!(m.completed(), &[4]);
    }

    #[test]
    fn a_store_after_the_flush_is_not_guaranteed_by_the_fence() {
        let mut m = PersistModel::new(1, false);
        m.apply(&st(PM_BASE, 1));
        m.apply(&TraceEvent::access(Op::Clwb, 0, 2, PM_BASE, 64, 0));
        m.apply(&st(PM_BASE + 8, 2));
        m.apply(&TraceEvent::marker(Op::Sfence, 0, 3, 0));
        let d = m.image(&mut CutPolicy::Durable);
        assert_eq!((d.read_u64(PM_BASE), d.read_u64(PM_BASE + 8)), (1, 0));
        assert_eq!(m.undecided_lines(), 1);
    }

    #[test]
    fn hardware_transactions_persist_atomically_at_tx_end() {
        let mut m = PersistModel::new(1, true);
        m.apply(&TraceEvent::marker(Op::TxBegin, 0, 1, 0));
        m.apply(&st(PM_BASE, 1));
        m.apply(&st(PM_BASE + 640, 2));
        assert!(m.image(&mut CutPolicy::Latest).is_empty());
        m.apply(&TraceEvent::marker(Op::TxEnd, 0, 1, 0));
        let d = m.image(&mut CutPolicy::Durable);
        assert_eq!((d.read_u64(PM_BASE), d.read_u64(PM_BASE + 640)), (1, 2));
    }
}
