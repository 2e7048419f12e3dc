//! The bytes behind the simulated address space: a sparse, two-level page table.
//!
//! Addresses are grouped in 1 MiB *superpages* (found through a hash map, with the last one
//! cached) whose tables index 4096 lazily allocated 256-byte pages. Pages are carved from
//! 64 KiB slabs (a table entry is a 32-bit page number), so allocating and dropping millions
//! of pages costs little. Memory therefore grows with the footprint actually written, at
//! 256 B granularity, not with trace length nor with the span of the address space: a
//! billion-element array that is touched in a few thousand places costs a few megabytes.
//! Unwritten bytes read as zero.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Bytes per page (the allocation unit).
pub const PAGE_BYTES: usize = 256;
const PAGE_SHIFT: u32 = 8;
const SUPER_SHIFT: u32 = 20;
const PAGES_PER_SUPER: usize = 1 << (SUPER_SHIFT - PAGE_SHIFT);

type Page = [u8; PAGE_BYTES];
const SLAB_PAGES: usize = 256;
type Slab = Box<[Page; SLAB_PAGES]>;

/// A hasher for integer keys: one multiply (keys are already well spread above the low bits).
#[derive(Default, Clone, Copy)]
pub struct IntHasher(u64);

impl Hasher for IntHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = (n ^ (n >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// `HashMap` with integer keys hashed by [`IntHasher`].
pub type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;

/// Sparse byte-addressable memory.
#[derive(Default)]
pub struct Memory {
    /// Per superpage: page numbers + 1 (0 = never written).
    supers: Vec<Box<[u32]>>,
    index: IntMap<u64, u32>,
    last_key: u64,
    last_idx: u32,
    slabs: Vec<Slab>,
    pages: usize,
}

impl Memory {
    /// Empty memory (all zero).
    pub fn new() -> Memory {
        Memory {
            last_key: u64::MAX,
            ..Memory::default()
        }
    }

    /// Number of 256-byte pages allocated.
    pub fn pages(&self) -> usize {
        self.pages
    }

    /// Bytes of page storage allocated.
    pub fn resident_bytes(&self) -> usize {
        self.slabs.len() * SLAB_PAGES * PAGE_BYTES + self.supers.len() * PAGES_PER_SUPER * 4
    }

    #[inline]
    fn super_index(&mut self, addr: u64, create: bool) -> Option<usize> {
        let key = addr >> SUPER_SHIFT;
        if key == self.last_key {
            return Some(self.last_idx as usize);
        }
        let idx = match self.index.get(&key) {
            Some(&i) => i,
            None if create => {
                let i = self.supers.len() as u32;
                self.supers
                    .push(vec![0u32; PAGES_PER_SUPER].into_boxed_slice());
                self.index.insert(key, i);
                i
            }
            None => return None,
        };
        self.last_key = key;
        self.last_idx = idx;
        Some(idx as usize)
    }

    #[inline]
    fn page_slot(addr: u64) -> usize {
        ((addr >> PAGE_SHIFT) as usize) & (PAGES_PER_SUPER - 1)
    }

    #[inline]
    fn page_at(&self, n: u32) -> &Page {
        let i = (n - 1) as usize;
        &self.slabs[i / SLAB_PAGES][i % SLAB_PAGES]
    }

    /// The page holding `addr`, if it was ever written.
    #[inline]
    fn page(&mut self, addr: u64) -> Option<&Page> {
        let s = self.super_index(addr, false)?;
        let n = self.supers[s][Self::page_slot(addr)];
        (n != 0).then(|| self.page_at(n))
    }

    /// The page holding `addr`, allocated (zeroed) if needed.
    #[inline]
    fn page_mut(&mut self, addr: u64) -> &mut Page {
        let s = self.super_index(addr, true).expect("created");
        let slot = Self::page_slot(addr);
        let mut n = self.supers[s][slot];
        if n == 0 {
            if self.pages.is_multiple_of(SLAB_PAGES) {
                self.slabs.push(Box::new([[0u8; PAGE_BYTES]; SLAB_PAGES]));
            }
            self.pages += 1;
            n = u32::try_from(self.pages).expect("fewer than 2^32 pages (1 TiB)");
            self.supers[s][slot] = n;
        }
        let i = (n - 1) as usize;
        &mut self.slabs[i / SLAB_PAGES][i % SLAB_PAGES]
    }

    /// Reads `buf.len()` bytes at `addr`.
    pub fn read(&mut self, addr: u64, buf: &mut [u8]) {
        let mut done = 0usize;
        while done < buf.len() {
            let a = addr + done as u64;
            let off = (a as usize) & (PAGE_BYTES - 1);
            let n = (PAGE_BYTES - off).min(buf.len() - done);
            match self.page(a) {
                Some(p) => buf[done..done + n].copy_from_slice(&p[off..off + n]),
                None => buf[done..done + n].fill(0),
            }
            done += n;
        }
    }

    /// Writes `data` at `addr`.
    pub fn write(&mut self, addr: u64, data: &[u8]) {
        let mut done = 0usize;
        while done < data.len() {
            let a = addr + done as u64;
            let off = (a as usize) & (PAGE_BYTES - 1);
            let n = (PAGE_BYTES - off).min(data.len() - done);
            self.page_mut(a)[off..off + n].copy_from_slice(&data[done..done + n]);
            done += n;
        }
    }

    /// Reads the little-endian `u64` at `addr`.
    #[inline]
    pub fn read_u64(&mut self, addr: u64) -> u64 {
        let off = (addr as usize) & (PAGE_BYTES - 1);
        if off + 8 <= PAGE_BYTES {
            match self.page(addr) {
                Some(p) => u64::from_le_bytes(p[off..off + 8].try_into().expect("8 bytes")),
                None => 0,
            }
        } else {
            let mut b = [0u8; 8];
            self.read(addr, &mut b);
            u64::from_le_bytes(b)
        }
    }

    /// Writes `v` little-endian at `addr`.
    #[inline]
    pub fn write_u64(&mut self, addr: u64, v: u64) {
        let off = (addr as usize) & (PAGE_BYTES - 1);
        if off + 8 <= PAGE_BYTES {
            self.page_mut(addr)[off..off + 8].copy_from_slice(&v.to_le_bytes());
        } else {
            self.write(addr, &v.to_le_bytes());
        }
    }

    /// Maximal runs `[lo, hi)` of allocated pages within `[from, to)`, in address order.
    pub fn written_ranges(&self, from: u64, to: u64) -> Vec<(u64, u64)> {
        let mut keys: Vec<(u64, u32)> = self
            .index
            .iter()
            .filter(|(&k, _)| (k + 1) << SUPER_SHIFT > from && k << SUPER_SHIFT < to)
            .map(|(&k, &i)| (k, i))
            .collect();
        keys.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::new();
        for (key, i) in keys {
            for (slot, &p) in self.supers[i as usize].iter().enumerate() {
                if p == 0 {
                    continue;
                }
                let lo = (key << SUPER_SHIFT) | ((slot as u64) << PAGE_SHIFT);
                let hi = lo + PAGE_BYTES as u64;
                if hi <= from || lo >= to {
                    continue;
                }
                let (lo, hi) = (lo.max(from), hi.min(to));
                match out.last_mut() {
                    Some(last) if last.1 == lo => last.1 = hi,
                    _ => out.push((lo, hi)),
                }
            }
        }
        out
    }

    /// Addresses of every allocated page at or above `from` (unordered).
    pub fn page_addrs_from(&self, from: u64) -> Vec<u64> {
        let mut out = Vec::new();
        for (&key, &i) in &self.index {
            for (slot, &p) in self.supers[i as usize].iter().enumerate() {
                if p != 0 {
                    let a = (key << SUPER_SHIFT) | ((slot as u64) << PAGE_SHIFT);
                    if a >= from {
                        out.push(a);
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwritten_reads_zero_and_writes_read_back_across_pages() {
        let mut m = Memory::new();
        assert_eq!(m.read_u64(0x1000_0000_0000), 0);
        let data: Vec<u8> = (0..600).map(|i| i as u8).collect();
        m.write(0x1000_0000_00f0, &data);
        let mut back = vec![0u8; 600];
        m.read(0x1000_0000_00f0, &mut back);
        assert_eq!(back, data);
        m.write_u64(0x1000_000f_fffc, 0x1122_3344_5566_7788); // straddles a superpage
        assert_eq!(m.read_u64(0x1000_000f_fffc), 0x1122_3344_5566_7788);
        assert_eq!(m.pages(), 4 + 2);
    }

    #[test]
    fn sparse_touches_cost_pages_not_span() {
        let mut m = Memory::new();
        for i in 0..200u64 {
            m.write_u64(0x1000_0000_0000 + i * (1 << 30), i);
        }
        assert_eq!(m.pages(), 200);
        assert_eq!(m.read_u64(0x1000_0000_0000 + 199 * (1 << 30)), 199);
    }
}
