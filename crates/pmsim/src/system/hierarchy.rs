//! The cache hierarchy: private L1D (and optional L2) per core, a shared inclusive LLC with a
//! directory, and the bytes every cached line holds.
//!
//! Data: each cached line's bytes live once, in its LLC entry. The hierarchy is inclusive and
//! coherent (one writer at a time), so the newest bytes of a line are unique; private levels
//! keep tags and state (exclusive, dirty, fill pending) and the LLC entry keeps the bytes, the
//! sharer set, the exclusive owner and the line's last writer. A write-back (eviction, `clwb`,
//! `clflushopt`) therefore delivers exactly the line the program wrote. Memory's functional
//! contents (`backing`) are updated when a write-back leaves the hierarchy, so a line refetched
//! later comes back with the bytes it was evicted with.
//!
//! Coherence is MESI-like at line granularity, resolved at the LLC directory: a write
//! invalidates other cores' copies (collecting their dirty state), a read of a line another core
//! holds exclusively downgrades that copy. Each coherence action costs one more LLC latency.

use super::cache::{level_lines, CacheArray};
use crate::config::{CacheLevelConfig, CachesConfig};
use crate::fast_hash::FastMap;
use crate::time::Ps;

const DIRTY: u8 = 1;
const EXCL: u8 = 2;
const PENDING: u8 = 4;

/// State of a private (L1/L2) copy: flag bits and the LLC slot holding the line (valid while
/// the copy exists: the LLC is inclusive, so evicting the LLC entry removes the copy first).
#[derive(Clone, Copy, Default)]
struct Priv {
    bits: u8,
    llc: u32,
}

/// Directory and bookkeeping of one LLC entry.
#[derive(Clone, Copy, Default)]
struct LlcMeta {
    /// Cores whose private caches hold the line.
    sharers: u64,
    /// Core + 1 holding the line exclusively (0: none).
    owner: u8,
    /// The LLC copy is newer than memory.
    dirty: bool,
    /// The fill from memory has not returned yet.
    pending: bool,
    /// Hardware thread + 1 that last wrote the line (0: none since it was filled).
    last_writer: u32,
}

/// Per-core cache statistics.
#[derive(Clone, Copy, Debug, Default)]
pub struct CoreCacheStats {
    /// L1D hits.
    pub l1_hits: u64,
    /// L1D misses (including write upgrades of shared lines).
    pub l1_misses: u64,
    /// L2 hits.
    pub l2_hits: u64,
    /// L2 misses.
    pub l2_misses: u64,
    /// LLC hits.
    pub llc_hits: u64,
    /// LLC misses (fills from memory).
    pub llc_misses: u64,
    /// Coherence actions this core's accesses caused (invalidations or downgrades elsewhere).
    pub coherence: u64,
}

/// Result of one access.
#[derive(Clone, Copy, Debug)]
pub struct Access {
    /// Lookup latency up to the level that answered (for an LLC miss: up to the memory request).
    pub latency: Ps,
    /// The LLC missed: the caller must fetch the line from memory.
    pub memory: bool,
    /// The line's fill from memory is still in flight: the access completes with that fill.
    pub pending: bool,
    /// Deepest level consulted: 1 = L1, 2 = L2, 3 = LLC, 4 = memory.
    pub level: u8,
    /// Where the line's bytes live (for [`Hierarchy::write_bytes`]).
    pub slot: u32,
}

/// A dirty line leaving the hierarchy, with its bytes.
#[derive(Clone, Copy, Debug)]
pub struct Writeback {
    /// Line number (byte address / 64).
    pub line: u64,
    /// The line's bytes.
    pub data: [u8; 64],
    /// The hardware thread that last wrote the line while it was cached, if known: whose
    /// persist epoch a buffered ordering model files the write-back under.
    pub last_writer: Option<u16>,
}

/// The whole cache hierarchy.
#[derive(Clone)]
pub struct Hierarchy {
    l1: Vec<CacheArray<Priv>>,
    l2: Vec<CacheArray<Priv>>,
    llc: CacheArray<LlcMeta>,
    data: Vec<[u8; 64]>,
    backing: FastMap<u64, [u8; 64]>,
    lat_l1: Ps,
    lat_l2: Ps,
    lat_llc: Ps,
    /// Statistics per core.
    pub stats: Vec<CoreCacheStats>,
}

/// Bytes the arrays of one cache level take per line: tag and stamp words and the state.
const ARRAY_BYTES_PER_LINE: u64 = 8 + 8 + 1;

/// Refuses caches whose arrays need more memory than the machine has (read from
/// `/proc/meminfo`; not checked where it cannot be read): a size a user mistyped by 1024 then
/// gets one line naming the keys instead of an allocation failure that aborts the process.
pub(crate) fn fits_in_memory(c: &CachesConfig, cores: usize) -> Result<(), String> {
    let lines = |l: &CacheLevelConfig| level_lines(l) as u64;
    let private = if c.l2.size_kib > 0 {
        lines(&c.l1d) + lines(&c.l2)
    } else {
        lines(&c.l1d)
    };
    // The shared level keeps each line's data too.
    let need =
        cores as u64 * private * ARRAY_BYTES_PER_LINE + lines(&c.llc) * (ARRAY_BYTES_PER_LINE + 64);
    let ram = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| kib * 1024)
    });
    // The process's address-space limit (`ulimit -v`), when lower.
    let address_space = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("Max address space"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        });
    let total = match (ram, address_space) {
        (Some(r), Some(a)) => Some(r.min(a)),
        (r, a) => r.or(a),
    };
    match total {
        Some(t) if need > t => Err(format!(
            "caches: l1d, l2 and llc (caches.*.size_kib, {cores} core(s)) need {:.1} GiB for their \
             tags, states and data, more than the {:.1} GiB of memory this process may use",
            need as f64 / (1u64 << 30) as f64,
            t as f64 / (1u64 << 30) as f64
        )),
        _ => Ok(()),
    }
}

impl Hierarchy {
    /// A cold hierarchy for `cores` cores with the given levels and core cycle length.
    pub fn new(c: &CachesConfig, cores: usize, cycle: Ps) -> Hierarchy {
        let llc = CacheArray::new(&c.llc);
        let slots = llc.slots();
        Hierarchy {
            l1: (0..cores).map(|_| CacheArray::new(&c.l1d)).collect(),
            l2: if c.l2.size_kib > 0 {
                (0..cores).map(|_| CacheArray::new(&c.l2)).collect()
            } else {
                Vec::new()
            },
            llc,
            data: vec![[0; 64]; slots],
            backing: FastMap::default(),
            lat_l1: c.l1d.latency_cycles as Ps * cycle,
            lat_l2: if c.l2.size_kib > 0 {
                c.l2.latency_cycles as Ps * cycle
            } else {
                0
            },
            lat_llc: c.llc.latency_cycles as Ps * cycle,
            stats: vec![CoreCacheStats::default(); cores],
        }
    }

    /// L1 hit latency.
    pub fn l1_latency(&self) -> Ps {
        self.lat_l1
    }

    /// Latency from the core to the memory controller's doorstep (all lookups).
    pub fn path_latency(&self) -> Ps {
        self.lat_l1 + self.lat_l2 + self.lat_llc
    }

    /// A load (`write = false`) or a store's ownership request (`write = true`) by `core` for
    /// `line`. Dirty lines pushed out of the LLC go to `out`.
    pub fn access(
        &mut self,
        core: usize,
        line: u64,
        write: bool,
        out: &mut Vec<Writeback>,
    ) -> Access {
        let st = &mut self.stats[core];
        let mut upgrade = false;
        if let Some(s) = self.l1[core].find(line) {
            let state = *self.l1[core].state(s);
            if !write || state.bits & EXCL != 0 {
                st.l1_hits += 1;
                self.l1[core].touch(s);
                if write {
                    self.l1[core].state_mut(s).bits |= DIRTY;
                }
                return Access {
                    latency: self.lat_l1,
                    memory: false,
                    pending: state.bits & PENDING != 0,
                    level: 1,
                    slot: state.llc,
                };
            }
            upgrade = true;
        }
        st.l1_misses += 1;
        let mut latency = self.lat_l1;
        let mut level = 1;
        let mut l2_hit = false;
        if !self.l2.is_empty() {
            latency += self.lat_l2;
            level = 2;
            if let Some(s) = self.l2[core].find(line) {
                let state = *self.l2[core].state(s);
                self.l2[core].touch(s);
                if !write || state.bits & EXCL != 0 {
                    st.l2_hits += 1;
                    l2_hit = true;
                }
            }
            if !l2_hit {
                st.l2_misses += 1;
            }
        }
        let mut memory = false;
        let slot = if l2_hit {
            self.llc
                .find(line)
                .expect("inclusive LLC holds every L2 line")
        } else {
            latency += self.lat_llc;
            level = 3;
            match self.llc.find(line) {
                Some(s) => {
                    self.stats[core].llc_hits += 1;
                    self.llc.touch(s);
                    s
                }
                None => {
                    self.stats[core].llc_misses += 1;
                    memory = true;
                    level = 4;
                    self.fill_llc(line, out)
                }
            }
        };
        // Coherence at the directory.
        let bit = 1u64 << core;
        let meta = *self.llc.state(slot);
        let mut meta_new = meta;
        if !l2_hit || write {
            let others = meta.sharers & !bit;
            if write && others != 0 {
                self.stats[core].coherence += 1;
                latency += self.lat_llc;
                for d in bits(others) {
                    if self.drop_private(d, line, true) {
                        meta_new.dirty = true;
                    }
                }
                meta_new.sharers = bit;
                meta_new.owner = core as u8 + 1;
            } else if !write && meta.owner != 0 && meta.owner as usize != core + 1 {
                self.stats[core].coherence += 1;
                latency += self.lat_llc;
                if self.drop_private(meta.owner as usize - 1, line, false) {
                    meta_new.dirty = true;
                }
                meta_new.owner = 0;
            }
            meta_new.sharers |= bit;
            if write || meta_new.sharers == bit {
                meta_new.owner = core as u8 + 1;
            }
            *self.llc.state_mut(slot) = meta_new;
        }
        let excl = meta_new.owner as usize == core + 1;
        let pending = if meta_new.pending { PENDING } else { 0 };
        let private = if excl { EXCL } else { 0 } | pending;
        let llc = slot as u32;
        if !self.l2.is_empty() {
            match self.l2[core].find(line) {
                Some(s) => self.l2[core].state_mut(s).bits |= if excl { EXCL } else { 0 },
                None => self.install_l2(core, line, Priv { bits: private, llc }),
            }
        }
        let l1_bits = private | if write { DIRTY } else { 0 };
        if upgrade {
            let s = self.l1[core].find(line).expect("upgrade of a present line");
            self.l1[core].state_mut(s).bits |= l1_bits;
            self.l1[core].touch(s);
        } else {
            self.install_l1(core, line, Priv { bits: l1_bits, llc });
        }
        Access {
            latency,
            memory,
            pending: meta_new.pending,
            level,
            slot: llc,
        }
    }

    /// Writes `bytes` at byte `offset` of a line `core` has just gained ownership of (after an
    /// [`access`](Self::access) with `write = true`); records `thread` as its last writer.
    pub fn write_bytes(&mut self, slot: u32, offset: usize, bytes: &[u8], thread: u16) {
        let slot = slot as usize;
        self.data[slot][offset..offset + bytes.len()].copy_from_slice(bytes);
        self.llc.state_mut(slot).last_writer = thread as u32 + 1;
    }

    /// The bytes of the line in LLC slot `slot` (as returned by [`access`](Self::access)).
    pub fn slot_bytes(&self, slot: u32) -> &[u8; 64] {
        &self.data[slot as usize]
    }

    /// The hardware thread that last wrote `line` while it has been cached, if any: what
    /// inter-thread persist-dependency tracking needs.
    pub fn last_writer(&self, line: u64) -> Option<u16> {
        let slot = self.llc.find(line)?;
        writer(self.llc.state(slot).last_writer)
    }

    /// Records `thread` as the last writer of the line in LLC slot `slot` (a store whose bytes
    /// the trace does not carry: [`write_bytes`](Self::write_bytes) records it otherwise).
    pub fn note_writer(&mut self, slot: u32, thread: u16) {
        self.llc.state_mut(slot as usize).last_writer = thread as u32 + 1;
    }

    /// The line's fill from memory returned: clear its pending marks.
    pub fn fill_done(&mut self, line: u64) {
        let Some(slot) = self.llc.find(line) else {
            return;
        };
        let meta = self.llc.state_mut(slot);
        if !meta.pending {
            return;
        }
        meta.pending = false;
        let sharers = meta.sharers;
        for d in bits(sharers) {
            if let Some(s) = self.l1[d].find(line) {
                self.l1[d].state_mut(s).bits &= !PENDING;
            }
            if let Some(l2) = self.l2.get_mut(d) {
                if let Some(s) = l2.find(line) {
                    l2.state_mut(s).bits &= !PENDING;
                }
            }
        }
    }

    /// `clwb` (`invalidate = false`) or `clflushopt` (`invalidate = true`) of `line`, from any
    /// core (the instructions act on the whole coherence domain). Returns the line's bytes when
    /// some copy was dirty: the write-back the caller must send to memory.
    pub fn flush(&mut self, line: u64, invalidate: bool) -> Option<Writeback> {
        let slot = self.llc.find(line)?;
        let meta = *self.llc.state(slot);
        let mut dirty = meta.dirty;
        for d in bits(meta.sharers) {
            if invalidate {
                dirty |= self.drop_private(d, line, true);
            } else {
                dirty |= self.clean_private(d, line);
            }
        }
        let data = self.data[slot];
        if invalidate {
            self.llc.invalidate(slot);
        } else {
            self.llc.state_mut(slot).dirty = false;
        }
        if dirty {
            self.backing.insert(line, data);
            Some(Writeback {
                line,
                data,
                last_writer: writer(meta.last_writer),
            })
        } else {
            None
        }
    }

    /// Records bytes that went to memory without passing through the caches (non-temporal
    /// stores, remote writes): memory's functional contents.
    pub fn memory_write(&mut self, line: u64, offset: usize, bytes: &[u8]) {
        let l = self.backing.entry(line).or_insert([0; 64]);
        l[offset..offset + bytes.len()].copy_from_slice(bytes);
    }

    /// The newest bytes of `line`: the cached copy if there is one (the LLC holds every cached
    /// line's bytes), memory's otherwise. Changes nothing.
    pub fn current_line(&self, line: u64) -> [u8; 64] {
        match self.llc.find(line) {
            Some(slot) => self.data[slot],
            None => self.memory_line(line),
        }
    }

    /// Memory's functional contents of `line`: what a fill returns.
    pub fn memory_line(&self, line: u64) -> [u8; 64] {
        self.backing.get(&line).copied().unwrap_or([0; 64])
    }

    fn fill_llc(&mut self, line: u64, out: &mut Vec<Writeback>) -> usize {
        let slot = self.llc.victim(line);
        if let Some(v) = self.llc.line_at(slot) {
            let meta = *self.llc.state(slot);
            let mut dirty = meta.dirty;
            for d in bits(meta.sharers) {
                dirty |= self.drop_private(d, v, true);
            }
            if dirty {
                let data = self.data[slot];
                self.backing.insert(v, data);
                out.push(Writeback {
                    line: v,
                    data,
                    last_writer: writer(meta.last_writer),
                });
            }
        }
        self.data[slot] = self.memory_line(line);
        self.llc.install(
            slot,
            line,
            LlcMeta {
                pending: true,
                ..LlcMeta::default()
            },
        );
        slot
    }

    fn install_l1(&mut self, core: usize, line: u64, state: Priv) {
        let slot = self.l1[core].victim(line);
        if let Some(v) = self.l1[core].install(slot, line, state) {
            if let Some(l2) = self.l2.get_mut(core) {
                if v.state.bits & DIRTY != 0 {
                    if let Some(s) = l2.find(v.line) {
                        l2.state_mut(s).bits |= DIRTY;
                    }
                }
            } else {
                self.leave_private(core, v.line, v.state.llc, v.state.bits & DIRTY != 0);
            }
        }
    }

    fn install_l2(&mut self, core: usize, line: u64, state: Priv) {
        let slot = self.l2[core].victim(line);
        if let Some(v) = self.l2[core].install(slot, line, state) {
            let mut dirty = v.state.bits & DIRTY != 0;
            if let Some(s) = self.l1[core].find(v.line) {
                dirty |= self.l1[core].invalidate(s).bits & DIRTY != 0;
            }
            self.leave_private(core, v.line, v.state.llc, dirty);
        }
    }

    /// Core `core` no longer holds `line` (whose LLC entry is `slot`) privately: update the
    /// directory.
    fn leave_private(&mut self, core: usize, line: u64, slot: u32, dirty: bool) {
        let s = slot as usize;
        if self.llc.line_at(s) == Some(line) {
            let m = self.llc.state_mut(s);
            m.sharers &= !(1u64 << core);
            if m.owner as usize == core + 1 {
                m.owner = 0;
            }
            m.dirty |= dirty;
        }
    }

    /// Removes (`invalidate`) or downgrades core `d`'s private copies of `line`; returns
    /// whether any was dirty. The directory entry is the caller's to update.
    fn drop_private(&mut self, d: usize, line: u64, invalidate: bool) -> bool {
        let mut dirty = false;
        if let Some(s) = self.l1[d].find(line) {
            if invalidate {
                dirty |= self.l1[d].invalidate(s).bits & DIRTY != 0;
            } else {
                let st = &mut self.l1[d].state_mut(s).bits;
                dirty |= *st & DIRTY != 0;
                *st &= !(DIRTY | EXCL);
            }
        }
        if let Some(l2) = self.l2.get_mut(d) {
            if let Some(s) = l2.find(line) {
                if invalidate {
                    dirty |= l2.invalidate(s).bits & DIRTY != 0;
                } else {
                    let st = &mut l2.state_mut(s).bits;
                    dirty |= *st & DIRTY != 0;
                    *st &= !(DIRTY | EXCL);
                }
            }
        }
        if invalidate {
            if let Some(s) = self.llc.find(line) {
                let m = self.llc.state_mut(s);
                m.sharers &= !(1u64 << d);
                if m.owner as usize == d + 1 {
                    m.owner = 0;
                }
            }
        }
        dirty
    }

    /// Clears the dirty bits of core `d`'s copies of `line` (they stay valid and exclusive);
    /// returns whether any was dirty.
    fn clean_private(&mut self, d: usize, line: u64) -> bool {
        let mut dirty = false;
        if let Some(s) = self.l1[d].find(line) {
            let st = &mut self.l1[d].state_mut(s).bits;
            dirty |= *st & DIRTY != 0;
            *st &= !DIRTY;
        }
        if let Some(l2) = self.l2.get_mut(d) {
            if let Some(s) = l2.find(line) {
                let st = &mut l2.state_mut(s).bits;
                dirty |= *st & DIRTY != 0;
                *st &= !DIRTY;
            }
        }
        dirty
    }
}

/// The indices of the set bits of `m`.
fn bits(mut m: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (m != 0).then(|| {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            i
        })
    })
}

/// The thread an [`LlcMeta::last_writer`] field names (thread + 1; 0: none).
fn writer(field: u32) -> Option<u16> {
    (field != 0).then(|| (field - 1) as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{CacheLevelConfig, CachesConfig};

    fn small() -> Hierarchy {
        let lvl = |kib, ways, lat| CacheLevelConfig {
            size_kib: kib,
            ways,
            latency_cycles: lat,
        };
        Hierarchy::new(
            &CachesConfig {
                l1d: lvl(1, 2, 1),
                l2: lvl(2, 2, 4),
                llc: lvl(4, 4, 10),
            },
            2,
            1000,
        )
    }

    #[test]
    fn miss_then_hit_and_latencies() {
        let mut h = small();
        let mut out = Vec::new();
        let a = h.access(0, 5, false, &mut out);
        assert!(a.memory && a.level == 4);
        assert_eq!(a.latency, 15_000);
        h.fill_done(5);
        let b = h.access(0, 5, false, &mut out);
        assert!(!b.memory && !b.pending && b.level == 1);
        assert_eq!(b.latency, 1000);
        assert!(out.is_empty());
    }

    #[test]
    fn dirty_lines_come_back_with_their_bytes() {
        let mut h = small();
        let mut out = Vec::new();
        let a = h.access(0, 7, true, &mut out);
        h.write_bytes(a.slot, 8, &[1, 2, 3], 0);
        assert_eq!(h.last_writer(7), Some(0));
        let wb = h.flush(7, false).expect("dirty");
        assert_eq!(&wb.data[8..11], &[1, 2, 3]);
        assert!(h.flush(7, false).is_none(), "clwb cleaned it");
        // clflushopt invalidates: the next access misses and refetches the written bytes.
        let a = h.access(0, 7, true, &mut out);
        h.write_bytes(a.slot, 0, &[9], 0);
        assert!(h.flush(7, true).is_some());
        assert!(h.access(0, 7, false, &mut out).memory);
        h.fill_done(7);
        let wb = {
            h.access(0, 7, true, &mut out);
            h.flush(7, false).unwrap()
        };
        assert_eq!(wb.data[0], 9);
        assert_eq!(&wb.data[8..11], &[1, 2, 3]);
    }

    #[test]
    fn writes_invalidate_other_cores_and_evictions_write_back() {
        let mut h = small();
        let mut out = Vec::new();
        let a = h.access(0, 3, true, &mut out);
        h.write_bytes(a.slot, 0, &[1], 0);
        h.fill_done(3);
        // Core 1 reads: core 0's exclusive copy is downgraded (one coherence action).
        let r = h.access(1, 3, false, &mut out);
        assert_eq!(h.stats[1].coherence, 1);
        assert!(!r.memory);
        // Core 1 writes: core 0's copy is invalidated.
        let a = h.access(1, 3, true, &mut out);
        h.write_bytes(a.slot, 1, &[2], 1);
        assert_eq!(h.last_writer(3), Some(1));
        assert_eq!(h.l1[0].find(3), None);
        // Fill the LLC set of line 3 (16 sets x 4 ways: lines 3 + 16k) to evict it.
        for k in 1..=4 {
            h.access(0, 3 + 16 * k, false, &mut out);
        }
        let wb = out
            .iter()
            .find(|w| w.line == 3)
            .expect("dirty line written back");
        assert_eq!(&wb.data[..2], &[1, 2]);
        assert_eq!(h.memory_line(3)[..2], [1, 2]);
    }
}
