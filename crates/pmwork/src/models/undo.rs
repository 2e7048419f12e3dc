//! Undo-log transactions, in two flavours.
//!
//! **PMDK flavour** ([`Model::Undo`]). Before a range is modified, `add` copies its old bytes
//! into an entry `[addr, len, gen, checksum, data...]` (64-byte aligned) at the log tail,
//! writes it back and fences: the entry is durable before the data changes. No count is
//! kept: an entry is valid when its generation equals the log header's and its checksum
//! matches, so one fence per `add` suffices. Commit writes back every modified range
//! (snapshotted or freshly allocated), fences, then *retires* the whole log by persisting
//! `gen + 1` in the header: that fence is the commit point. Recovery rolls back the valid
//! entries in reverse order, persists them, and retires the log.
//!
//! **Hand-rolled flavour** ([`Model::UndoLl`]), as low-level PM code writes it: entries
//! `[addr, len, data...]` without checksum; after each entry is persisted, the entry count in
//! the header is incremented and persisted (two fences per `add`). Commit persists the data
//! and then a zero count. Recovery rolls back `count` entries.
//!
//! [`Fault::SkipLogFence`] drops the fence that orders the entry before what depends on it
//! (the data in the PMDK flavour, the count in the hand-rolled one).

use crate::heap::{line_of, LINE_BYTES};
use crate::layout::{self, LOG_BYTES};
use crate::rng::mix64;

use super::{Fault, Model, Tx};

/// Largest range one undo entry holds; larger `add`s are split.
pub const MAX_ENTRY_DATA: u64 = 4096;

const PMDK_ENTRY_HEADER: u64 = 32;
const LL_ENTRY_HEADER: u64 = 16;

/// Checksum of a PMDK-flavour entry (never 0, so an all-zero entry is invalid).
pub fn entry_checksum(gen: u64, addr: u64, len: u64, data: &[u8]) -> u64 {
    let mut h = mix64(0x6a09_e667_f3bc_c908 ^ gen);
    h = mix64(h ^ addr);
    h = mix64(h ^ len);
    for chunk in data.chunks(8) {
        let mut w = [0u8; 8];
        w[..chunk.len()].copy_from_slice(chunk);
        h = mix64(h ^ u64::from_le_bytes(w));
    }
    h.max(1)
}

#[inline]
fn pad8(n: u64) -> u64 {
    (n + 7) & !7
}

#[inline]
fn entry_size(header: u64, len: u64) -> u64 {
    (header + pad8(len)).div_ceil(LINE_BYTES) * LINE_BYTES
}

/// Every line of every range, sorted and deduplicated.
pub(crate) fn lines_of(ranges: &[(u64, u64)]) -> Vec<u64> {
    let mut lines = Vec::new();
    lines_into(ranges, &mut lines);
    lines
}

/// [`lines_of`] into a reused vector.
pub(crate) fn lines_into(ranges: &[(u64, u64)], lines: &mut Vec<u64>) {
    lines.clear();
    for &(s, e) in ranges {
        let mut l = line_of(s);
        while l < e {
            lines.push(l);
            l += LINE_BYTES;
        }
    }
    lines.sort_unstable();
    lines.dedup();
}

impl Tx {
    pub(super) fn undo_init(&mut self) {
        let t = self.thread();
        let base = layout::log_base(t);
        match self.model() {
            Model::Undo => {
                self.write(base, 1);
                self.ts().gen = 1;
            }
            _ => {
                self.write(base, 0);
                self.ts().entries = 0;
            }
        }
        self.ts().log_tail = 0;
    }

    pub(super) fn undo_add(&mut self, addr: u64, len: u64) {
        let t = self.thread();
        let base = layout::log_base(t);
        let pmdk = self.model() == Model::Undo;
        let skip_fence = self.fault() == Some(Fault::SkipLogFence);
        let mut done = 0u64;
        while done < len {
            let a = addr + done;
            let n = (len - done).min(MAX_ENTRY_DATA);
            let mut data = std::mem::take(&mut self.scratch);
            data.clear();
            data.resize(pad8(n) as usize, 0);
            self.heap().load(a, &mut data[..n as usize]);
            let header = if pmdk {
                PMDK_ENTRY_HEADER
            } else {
                LL_ENTRY_HEADER
            };
            let size = entry_size(header, n);
            let tail = self.ts().log_tail;
            assert!(
                64 + tail + size <= LOG_BYTES,
                "undo log of thread {t} full ({LOG_BYTES} bytes): transaction too large"
            );
            let entry = base + 64 + tail;
            let h = self.heap();
            h.store(entry + header, &data);
            h.store_u64(entry, a);
            h.store_u64(entry + 8, n);
            if pmdk {
                let gen = self.st[t as usize].gen;
                let h = self.heap();
                h.store_u64(entry + 16, gen);
                h.store_u64(entry + 24, entry_checksum(gen, a, n, &data[..n as usize]));
                h.flush_range(entry, size);
                if !skip_fence {
                    h.sfence();
                }
            } else {
                let h = self.heap();
                h.flush_range(entry, size);
                if !skip_fence {
                    h.sfence();
                }
                let count = self.st[t as usize].entries + 1;
                self.st[t as usize].entries = count;
                let h = self.heap();
                h.store_u64(base, count);
                h.clwb(base);
                h.sfence();
            }
            self.ts().log_tail = tail + size;
            self.scratch = data;
            done += n;
        }
        let ts = self.ts();
        ts.covered.insert(addr, addr + len);
        ts.flush.push((addr, addr + len));
    }

    pub(super) fn undo_commit(&mut self) {
        let logged = self.ts().log_tail > 0;
        if self.ts().flush.is_empty() && !logged {
            return;
        }
        let mut lines = std::mem::take(&mut self.lines);
        lines_into(&self.st[self.thread() as usize].flush, &mut lines);
        self.ts().flush.clear();
        let h = self.heap();
        for &l in &lines {
            h.clwb(l);
        }
        h.sfence();
        self.lines = lines;
        if logged {
            let t = self.thread();
            let base = layout::log_base(t);
            let v = if self.model() == Model::Undo {
                let ts = self.ts();
                ts.gen += 1;
                ts.gen
            } else {
                self.ts().entries = 0;
                0
            };
            let h = self.heap();
            h.store_u64(base, v);
            h.clwb(base);
            h.sfence();
        }
        self.ts().log_tail = 0;
    }

    pub(super) fn undo_recover(&mut self) -> Result<(), String> {
        let t = self.thread();
        let base = layout::log_base(t);
        let (lo, hi) = (layout::span(t), layout::heap_end(t));
        let pmdk = self.model() == Model::Undo;
        let head = self.heap().load_u64(base);
        let mut entries: Vec<(u64, Vec<u8>)> = Vec::new();
        let mut pos = 64u64;
        let header = if pmdk {
            PMDK_ENTRY_HEADER
        } else {
            LL_ENTRY_HEADER
        };
        let max_entries = (LOG_BYTES - 64) / 64;
        if !pmdk && head > max_entries {
            return Err(format!(
                "thread {t}: undo log count {head} exceeds the log's capacity"
            ));
        }
        loop {
            if pmdk && pos + header > LOG_BYTES {
                break;
            }
            if !pmdk && entries.len() as u64 == head {
                break;
            }
            let e = base + pos;
            let h = self.heap();
            let addr = h.load_u64(e);
            let len = h.load_u64(e + 8);
            if len == 0 || len > MAX_ENTRY_DATA || pos + entry_size(header, len) > LOG_BYTES {
                if pmdk {
                    break;
                }
                return Err(format!(
                    "thread {t}: undo entry {} has impossible length {len}",
                    entries.len()
                ));
            }
            let mut data = vec![0u8; len as usize];
            if pmdk {
                let gen = h.load_u64(e + 16);
                let sum = h.load_u64(e + 24);
                if gen != head {
                    break;
                }
                h.load(e + header, &mut data);
                if sum != entry_checksum(gen, addr, len, &data) {
                    break;
                }
            } else {
                h.load(e + header, &mut data);
            }
            if addr < lo || addr + len > hi {
                return Err(format!(
                    "thread {t}: undo entry {} targets {addr:#x}+{len}, outside the thread's partition",
                    entries.len()
                ));
            }
            entries.push((addr, data));
            pos += entry_size(header, len);
        }
        if !entries.is_empty() {
            let mut ranges = Vec::with_capacity(entries.len());
            for (addr, data) in entries.iter().rev() {
                self.heap().store(*addr, data);
                ranges.push((*addr, *addr + data.len() as u64));
            }
            let lines = lines_of(&ranges);
            let h = self.heap();
            for &l in &lines {
                h.clwb(l);
            }
            h.sfence();
        }
        // Retire: a new generation (PMDK flavour: always, so that no entry written before
        // the crash can ever validate again) or a zero count.
        let newv = if pmdk { head + 1 } else { 0 };
        if pmdk || head != 0 {
            let h = self.heap();
            h.store_u64(base, newv);
            h.clwb(base);
            h.sfence();
        }
        let ts = self.ts();
        ts.gen = if pmdk { newv } else { 0 };
        ts.entries = 0;
        ts.log_tail = 0;
        Ok(())
    }
}
