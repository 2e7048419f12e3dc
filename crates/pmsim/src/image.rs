//! The functional persistent state: which bytes each PM line holds.

use crate::line_map::LineMap;

/// Bytes per image line.
pub const IMAGE_LINE: usize = 64;

/// A write's payload: `len` bytes at byte `offset` of a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineData {
    /// Offset of the first byte within the line.
    pub offset: u8,
    /// Number of valid bytes.
    pub len: u8,
    /// The bytes (first `len` valid).
    pub bytes: [u8; IMAGE_LINE],
}

impl LineData {
    /// The payload of a store of `value` at byte address `addr` (must not cross a line).
    pub fn new(addr: u64, value: &[u8]) -> Option<LineData> {
        let offset = (addr % IMAGE_LINE as u64) as usize;
        if value.is_empty() || offset + value.len() > IMAGE_LINE {
            return None;
        }
        let mut bytes = [0u8; IMAGE_LINE];
        bytes[..value.len()].copy_from_slice(value);
        Some(LineData {
            offset: offset as u8,
            len: value.len() as u8,
            bytes,
        })
    }

    /// The valid bytes.
    pub fn value(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

/// Line address (byte address of the line start) → the line's bytes. Lines never written
/// read as zero. Memory grows with the footprint written, not with trace length.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PmImage {
    lines: LineMap<[u8; IMAGE_LINE]>,
}

impl PmImage {
    /// An empty (all-zero) image.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies a write's payload to line `line_addr`.
    pub fn apply(&mut self, line_addr: u64, d: &LineData) {
        let line = self
            .lines
            .get_or_insert(line_addr / IMAGE_LINE as u64, [0; IMAGE_LINE]);
        let o = d.offset as usize;
        line[o..o + d.len as usize].copy_from_slice(d.value());
    }

    /// The bytes of line `line_addr`, if it was ever written.
    pub fn line(&self, line_addr: u64) -> Option<&[u8; IMAGE_LINE]> {
        self.lines.get(line_addr / IMAGE_LINE as u64)
    }

    /// Reads `buf.len()` bytes at byte address `addr` (zeros where never written).
    pub fn read(&self, addr: u64, buf: &mut [u8]) {
        for (i, b) in buf.iter_mut().enumerate() {
            let a = addr + i as u64;
            let line = a - a % IMAGE_LINE as u64;
            *b = self.line(line).map_or(0, |l| l[(a - line) as usize]);
        }
    }

    /// Number of lines ever written.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Line addresses in ascending order.
    pub fn line_addrs(&self) -> Vec<u64> {
        self.lines
            .lines()
            .into_iter()
            .map(|l| l * IMAGE_LINE as u64)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_writes_merge_into_lines() {
        let mut img = PmImage::new();
        img.apply(64, &LineData::new(64 + 8, &[1, 2, 3, 4]).unwrap());
        img.apply(64, &LineData::new(64 + 10, &[9, 9]).unwrap());
        let mut buf = [0u8; 6];
        img.read(64 + 8, &mut buf);
        assert_eq!(buf, [1, 2, 9, 9, 0, 0]);
        assert_eq!(img.len(), 1);
        img.apply(64 * 65, &LineData::new(64 * 65, &[0]).unwrap());
        assert_eq!(img.line_addrs(), vec![64, 64 * 65]);
        assert_eq!(img.line(128), None, "same page, never written");
        assert_eq!(img.line(64 * 65), Some(&[0; IMAGE_LINE]));
        assert!(LineData::new(60, &[0; 8]).is_none(), "crosses a line");
    }
}
