//! REDU (Jeong et al., MICRO'18): hardware redo logging with asynchronous direct in-place
//! update, its log in one contiguous region allocated sequentially: record after record, each
//! seven entry lines followed by their one-line header (ATOM's log entry collation, as LALEA
//! Sec. II-B describes the conventional organisation).

use super::bank_load::BankLoad;
use super::record::{Layout, ENTRIES_PER_RECORD};
use super::redo::{LogAllocator, MetaPolicy, RedoEngine};
use super::{LogRegion, MemoryView};

/// Bytes of one sequential record: seven entries and the header.
const RECORD_BYTES: u64 = (ENTRIES_PER_RECORD as u64 + 1) * 64;
/// Offset of the header within its record.
const HEADER_OFFSET: u64 = ENTRIES_PER_RECORD as u64 * 64;

/// Sequential allocation: a ring of records; a record is reused once reclaimed.
#[derive(Clone, Default)]
pub struct SequentialLog {
    base: u64,
    live: Vec<bool>,
    next: usize,
}

impl SequentialLog {
    fn slot_of(&self, header: u64) -> usize {
        ((header - HEADER_OFFSET - self.base) / RECORD_BYTES) as usize
    }
}

impl LogAllocator for SequentialLog {
    fn clone_box(&self) -> Box<dyn LogAllocator> {
        Box::new(self.clone())
    }

    fn header_lines(&self) -> usize {
        1
    }

    fn layout(&self) -> Layout {
        Layout::Sequential
    }

    fn attach(&mut self, region: LogRegion, _mem: &dyn MemoryView) {
        self.base = region.base;
        self.live = vec![false; (region.bytes / RECORD_BYTES) as usize];
        self.next = 0;
    }

    fn header(&mut self, _load: &BankLoad) -> Option<[u64; 2]> {
        if self.live.is_empty() || self.live[self.next] {
            return None;
        }
        self.live[self.next] = true;
        let h = self.base + self.next as u64 * RECORD_BYTES + HEADER_OFFSET;
        self.next = (self.next + 1) % self.live.len();
        Some([h, 0])
    }

    fn entry(&mut self, header: [u64; 2], index: usize, _load: &BankLoad) -> Option<u64> {
        Some(header[0] - HEADER_OFFSET + index as u64 * 64)
    }

    fn release(&mut self, header: [u64; 2], _entries: &[u64]) {
        let s = self.slot_of(header[0]);
        self.live[s] = false;
    }

    fn header_slot(&self, addr: u64) -> Option<[u64; 2]> {
        let off = addr.checked_sub(self.base)?;
        (off % RECORD_BYTES == HEADER_OFFSET && off / RECORD_BYTES < self.live.len() as u64)
            .then_some([addr, 0])
    }
}

/// The REDU engine.
pub fn redu() -> RedoEngine {
    RedoEngine::new(
        "redu",
        Box::<SequentialLog>::default(),
        MetaPolicy::WriteToPm,
    )
}
