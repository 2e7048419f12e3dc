//! [`CrashImage`]: the persistent memory that survived a crash, line by line.
//!
//! The simulator's `PmImage` (or the reference persistence model in [`crate::persist_model`])
//! fills one with [`CrashImage::set_line`]; recovery and the oracles read it through a
//! [`crate::PmHeap`] built by [`crate::PmHeap::from_image`]. Lines never set read as zero,
//! which is also what a freshly created PM pool holds.

use crate::heap::{line_of, LINE_BYTES};
use crate::memory::IntMap;

/// Line address → the line's 64 bytes; absent lines read as zero. (Integer-keyed with
/// [`IntMap`]: the standard, per-process seeded hasher made building the image of each crash
/// point 9% of a `pmlab crash` run's instructions, against 4%; and iteration is now the same
/// on every run.)
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrashImage {
    lines: IntMap<u64, [u8; 64]>,
}

impl CrashImage {
    /// An empty (all-zero) image.
    pub fn new() -> CrashImage {
        CrashImage::default()
    }

    /// An image holding `lines` (line address, bytes); addresses are aligned down to a line.
    pub fn from_lines(lines: impl IntoIterator<Item = (u64, [u8; 64])>) -> CrashImage {
        let lines = lines.into_iter();
        let mut img = CrashImage::new();
        img.lines.reserve(lines.size_hint().0);
        for (a, l) in lines {
            img.set_line(a, l);
        }
        img
    }

    /// Sets the line holding `line_addr` (aligned down) to `bytes`.
    pub fn set_line(&mut self, line_addr: u64, bytes: [u8; 64]) {
        self.lines.insert(line_of(line_addr), bytes);
    }

    /// The bytes of the line at `line_addr`, if it was set.
    pub fn line(&self, line_addr: u64) -> Option<&[u8; 64]> {
        self.lines.get(&line_of(line_addr))
    }

    /// Number of lines set.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// True if no line was set.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Line addresses in ascending order.
    pub fn line_addrs(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.lines.keys().copied().collect();
        v.sort_unstable();
        v
    }

    /// (line address, bytes) pairs, in an order that depends only on the lines set.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &[u8; 64])> {
        self.lines.iter().map(|(&a, l)| (a, l))
    }

    /// Reads `buf.len()` bytes at `addr` (zeros where no line was set).
    pub fn read(&self, addr: u64, buf: &mut [u8]) {
        for (i, b) in buf.iter_mut().enumerate() {
            let a = addr + i as u64;
            *b = self
                .lines
                .get(&line_of(a))
                .map_or(0, |l| l[(a % LINE_BYTES) as usize]);
        }
    }

    /// The little-endian `u64` at `addr`.
    pub fn read_u64(&self, addr: u64) -> u64 {
        let mut b = [0u8; 8];
        self.read(addr, &mut b);
        u64::from_le_bytes(b)
    }

    /// Writes `v` little-endian at `addr`, within one line (a line not set yet starts as zeros):
    /// for building damaged images that oracles must reject.
    ///
    /// # Panics
    /// If the 8 bytes cross a line boundary.
    pub fn write_u64(&mut self, addr: u64, v: u64) {
        let l = line_of(addr);
        let o = (addr - l) as usize;
        assert!(
            o + 8 <= LINE_BYTES as usize,
            "a u64 across lines at {addr:#x}"
        );
        let line = self.lines.entry(l).or_insert([0; 64]);
        line[o..o + 8].copy_from_slice(&v.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_absent_lines_are_zero() {
        let mut l = [0u8; 64];
        l[8..16].copy_from_slice(&7u64.to_le_bytes());
        let img = CrashImage::from_lines([(0x1000_0000_0040 + 3, l)]);
        assert_eq!(img.line_addrs(), vec![0x1000_0000_0040]);
        assert_eq!(img.read_u64(0x1000_0000_0048), 7);
        assert_eq!(img.read_u64(0x1000_0000_0080), 0);
        assert!(img.line(0x1000_0000_0000).is_none());
        // A write keeps the rest of its line, and makes a line not set yet from zeros.
        let mut img = img;
        img.write_u64(0x1000_0000_0050, 9);
        img.write_u64(0x1000_0000_0088, 5);
        assert_eq!(img.read_u64(0x1000_0000_0048), 7);
        assert_eq!(img.read_u64(0x1000_0000_0050), 9);
        assert_eq!(img.read_u64(0x1000_0000_0088), 5);
        assert_eq!(img.line(0x1000_0000_0080).unwrap()[..8], [0; 8]);
    }
}
