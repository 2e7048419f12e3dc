//! [`LineMap`]: a map from cache-line numbers to small values, stored in 64-line pages.
//!
//! The full system keeps per-line state for every line a run ever writes (the persistent image,
//! the latest arrival time of each line's writes). Keyed by line, such a map grows past the
//! caches in a write-heavy run (hardware logging writes every log entry, header and in-place
//! update) and each lookup misses; keyed by 64-line page it is 64x smaller, neighbouring lines
//! share a page, and it rarely rehashes (`cargo bench -p pmsim --bench logging_speed`).

use crate::fast_hash::FastMap;

/// Lines per page.
const PAGE_LINES: u64 = 64;

#[derive(Clone, Debug, PartialEq, Eq)]
struct Page<T> {
    /// Bit `i` set: line `i` of the page holds a value.
    present: u64,
    values: [T; PAGE_LINES as usize],
}

/// Line number → `T`, for the lines given a value so far.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineMap<T> {
    pages: FastMap<u64, Box<Page<T>>>,
    len: usize,
}

impl<T> Default for LineMap<T> {
    fn default() -> Self {
        LineMap {
            pages: FastMap::default(),
            len: 0,
        }
    }
}

/// The page number and slot of `line`.
#[inline]
fn split(line: u64) -> (u64, usize) {
    (line / PAGE_LINES, (line % PAGE_LINES) as usize)
}

impl<T: Copy> LineMap<T> {
    /// The value of `line`, if it has one.
    #[inline]
    pub fn get(&self, line: u64) -> Option<&T> {
        let (page, slot) = split(line);
        self.pages
            .get(&page)
            .filter(|p| p.present & (1 << slot) != 0)
            .map(|p| &p.values[slot])
    }

    /// The value of `line`, given `init` first if it has none.
    #[inline]
    pub fn get_or_insert(&mut self, line: u64, init: T) -> &mut T {
        let (page, slot) = split(line);
        let p = self.pages.entry(page).or_insert_with(|| {
            Box::new(Page {
                present: 0,
                values: [init; PAGE_LINES as usize],
            })
        });
        if p.present & (1 << slot) == 0 {
            p.present |= 1 << slot;
            p.values[slot] = init;
            self.len += 1;
        }
        &mut p.values[slot]
    }

    /// Number of lines with a value.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no line has a value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The lines with a value, in ascending order.
    pub fn lines(&self) -> Vec<u64> {
        let mut pages: Vec<(u64, u64)> = self.pages.iter().map(|(n, p)| (*n, p.present)).collect();
        pages.sort_unstable();
        let mut v = Vec::with_capacity(self.len);
        for (n, present) in pages {
            for slot in 0..PAGE_LINES {
                if present & (1 << slot) != 0 {
                    v.push(n * PAGE_LINES + slot);
                }
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_keep_their_values_and_order() {
        let mut m: LineMap<u64> = LineMap::default();
        *m.get_or_insert(70, 0) = 7;
        *m.get_or_insert(3, 0) = 3;
        assert_eq!(*m.get_or_insert(70, 0), 7, "an existing value is kept");
        *m.get_or_insert(64, 5) = 0;
        assert_eq!(m.len(), 3);
        assert_eq!(m.lines(), vec![3, 64, 70]);
        assert_eq!(m.get(65), None, "same page, never given a value");
        assert_eq!(m.get(64), Some(&0), "a default value still counts");
        assert_eq!(m.get(u64::MAX), None);
        *m.get_or_insert(u64::MAX, 0) = 1;
        assert_eq!(m.get(u64::MAX), Some(&1));
    }
}
