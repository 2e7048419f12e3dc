//! Redo-log transactions (Mnemosyne-style word log).
//!
//! A transaction's writes do not touch their home locations: each is appended to the
//! thread's log as an `(address, value)` pair with a non-temporal store, and reads of words
//! written earlier in the transaction are served from the log (read-your-writes). Commit:
//!
//! 1. `sfence`: the log entries are durable;
//! 2. commit record `[gen, commit_gen = gen, count, checksum]` (header line: count and
//!    checksum stored before `commit_gen`), `clwb`, `sfence` — the commit point;
//! 3. apply every entry in place, `clwb` the lines, `sfence`;
//! 4. retire: `gen + 1` persisted (`clwb`, `sfence`).
//!
//! Recovery replays the log when `commit_gen == gen` and the checksum over the `count`
//! entries matches, then retires it; anything else is an uncommitted transaction whose home
//! locations were never touched.

use crate::heap::LINE_BYTES;
use crate::layout::{self, LOG_BYTES};
use crate::rng::mix64;

use super::undo::lines_of;
use super::Tx;

const ENTRY_BYTES: u64 = 16;

/// Most entries a redo log holds.
pub const MAX_REDO_ENTRIES: u64 = (LOG_BYTES - LINE_BYTES) / ENTRY_BYTES;

fn redo_checksum(gen: u64, entries: &[(u64, u64)]) -> u64 {
    let mut h = mix64(0xbb67_ae85_84ca_a73b ^ gen);
    for &(a, v) in entries {
        h = mix64(h ^ a);
        h = mix64(h ^ v);
    }
    h.max(1)
}

#[inline]
fn entry_addr(base: u64, i: u64) -> u64 {
    base + LINE_BYTES + i * ENTRY_BYTES
}

impl Tx {
    pub(super) fn redo_init(&mut self) {
        let base = layout::log_base(self.thread());
        self.write(base, 1);
        self.ts().gen = 1;
    }

    pub(super) fn redo_write(&mut self, addr: u64, v: u64) {
        let t = self.thread();
        let i = self.st[t as usize].redo.len() as u64;
        assert!(
            i < MAX_REDO_ENTRIES,
            "redo log of thread {t} full ({MAX_REDO_ENTRIES} entries): transaction too large"
        );
        let e = entry_addr(layout::log_base(t), i);
        let mut rec = [0u8; 16];
        rec[..8].copy_from_slice(&addr.to_le_bytes());
        rec[8..].copy_from_slice(&v.to_le_bytes());
        self.heap().ntstore(e, &rec);
        let ts = &mut self.st[t as usize];
        ts.redo.push((addr, v));
        ts.redo_index.insert(addr, i as usize);
    }

    pub(super) fn redo_read_hit(&mut self, i: usize) -> u64 {
        let e = entry_addr(layout::log_base(self.thread()), i as u64);
        self.heap().load_u64(e + 8)
    }

    pub(super) fn redo_commit(&mut self) {
        let t = self.thread();
        let entries = std::mem::take(&mut self.st[t as usize].redo);
        self.st[t as usize].redo_index.clear();
        if entries.is_empty() {
            return;
        }
        let base = layout::log_base(t);
        let gen = self.st[t as usize].gen;
        let h = self.heap();
        h.sfence();
        h.store_u64(base + 16, entries.len() as u64);
        h.store_u64(base + 24, redo_checksum(gen, &entries));
        h.store_u64(base + 8, gen);
        h.clwb(base);
        h.sfence();
        // From here on the transaction survives a crash: recovery replays the log.
        let point = h.events(t);
        let mut ranges = Vec::with_capacity(entries.len());
        for &(a, v) in &entries {
            h.store_u64(a, v);
            ranges.push((a, a + 8));
        }
        for l in lines_of(&ranges) {
            h.clwb(l);
        }
        h.sfence();
        h.store_u64(base, gen + 1);
        h.clwb(base);
        h.sfence();
        self.st[t as usize].gen = gen + 1;
        self.st[t as usize].durable_point = Some(point);
    }

    pub(super) fn redo_recover(&mut self) -> Result<(), String> {
        let t = self.thread();
        let base = layout::log_base(t);
        let (lo, hi) = (layout::span(t), layout::heap_end(t));
        let h = self.heap();
        let gen = h.load_u64(base);
        let commit_gen = h.load_u64(base + 8);
        let count = h.load_u64(base + 16);
        let sum = h.load_u64(base + 24);
        let mut next_gen = gen;
        if gen != 0 && commit_gen == gen && count > 0 && count <= MAX_REDO_ENTRIES {
            let entries: Vec<(u64, u64)> = (0..count)
                .map(|i| {
                    let e = entry_addr(base, i);
                    (h.load_u64(e), h.load_u64(e + 8))
                })
                .collect();
            if redo_checksum(gen, &entries) == sum {
                let mut ranges = Vec::with_capacity(entries.len());
                for &(a, v) in &entries {
                    if a < lo || a + 8 > hi {
                        return Err(format!(
                            "thread {t}: committed redo entry targets {a:#x}, outside the thread's partition"
                        ));
                    }
                    h.store_u64(a, v);
                    ranges.push((a, a + 8));
                }
                for l in lines_of(&ranges) {
                    h.clwb(l);
                }
                h.sfence();
                next_gen = gen + 1;
                h.store_u64(base, next_gen);
                h.clwb(base);
                h.sfence();
            }
        }
        let ts = self.ts();
        ts.gen = next_gen;
        ts.redo.clear();
        ts.redo_index.clear();
        Ok(())
    }
}
