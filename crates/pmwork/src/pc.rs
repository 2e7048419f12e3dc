//! Static program counters for generated events.
//!
//! Every heap operation is `#[track_caller]`, so it knows the source location (file, line,
//! column) of the statement that issued it. [`site_pc`] hashes that location into a
//! code-segment-like address: the same call site always gets the same PC, on every run and
//! every machine (ASLR does not enter), exactly as one instruction of a compiled program
//! would. PC-keyed mechanisms (PMWeaver's predictor) therefore see the behaviour they see on
//! real code: a few hot sites issuing most stores.
//!
//! [`PcCache`] memoises the hash by the address of the `Location` static, so the common case
//! costs one compare; it also remembers which site each PC stands for
//! ([`PcCache::site`]) and reports hash collisions ([`PcCache::collisions`]).

use std::collections::HashMap;
use std::panic::Location;

/// Lowest PC handed out: where a non-PIE x86-64 binary's text segment starts.
pub const CODE_BASE: u64 = 0x40_0000;

/// Number of 4-byte instruction slots PCs are spread over (2^24 → PCs below 0x440_0000).
const PC_SLOTS: u64 = 1 << 24;

/// The PC of the call site `file:line:column`: FNV-1a of the three, folded into
/// `CODE_BASE..CODE_BASE + 2^26`, 4-byte aligned.
pub fn site_pc(file: &str, line: u32, column: u32) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |b: u8| {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    };
    for &b in file.as_bytes() {
        eat(b);
    }
    eat(b':');
    for b in line.to_le_bytes() {
        eat(b);
    }
    for b in column.to_le_bytes() {
        eat(b);
    }
    let h = crate::rng::mix64(h);
    CODE_BASE + (h % PC_SLOTS) * 4
}

/// A call site: file, line, column.
pub type Site = (&'static str, u32, u32);

const CACHE_SLOTS: usize = 2048;

/// Memoised [`site_pc`] keyed by the `&'static Location` of the caller.
pub struct PcCache {
    slots: Box<[(usize, u64)]>,
    sites: HashMap<u64, Site>,
    collisions: Vec<(u64, Site, Site)>,
}

impl Default for PcCache {
    fn default() -> Self {
        PcCache::new()
    }
}

impl PcCache {
    /// An empty cache.
    pub fn new() -> PcCache {
        PcCache {
            slots: vec![(0usize, 0u64); CACHE_SLOTS].into_boxed_slice(),
            sites: HashMap::new(),
            collisions: Vec::new(),
        }
    }

    /// The PC of `loc`.
    #[inline]
    pub fn pc(&mut self, loc: &'static Location<'static>) -> u64 {
        let key = loc as *const Location<'static> as usize;
        let slot = ((key >> 3) ^ (key >> 13)) & (CACHE_SLOTS - 1);
        let e = self.slots[slot];
        if e.0 == key {
            return e.1;
        }
        self.miss(loc, key, slot)
    }

    #[cold]
    fn miss(&mut self, loc: &'static Location<'static>, key: usize, slot: usize) -> u64 {
        let site = (loc.file(), loc.line(), loc.column());
        let pc = site_pc(site.0, site.1, site.2);
        match self.sites.get(&pc) {
            Some(&other) if other != site => self.collisions.push((pc, other, site)),
            Some(_) => {}
            None => {
                self.sites.insert(pc, site);
            }
        }
        self.slots[slot] = (key, pc);
        pc
    }

    /// The source site a PC was derived from (for reports), if this cache handed it out.
    pub fn site(&self, pc: u64) -> Option<Site> {
        self.sites.get(&pc).copied()
    }

    /// Number of distinct sites seen.
    pub fn site_count(&self) -> usize {
        self.sites.len()
    }

    /// PCs that two different sites hashed to: (pc, first site, second site).
    pub fn collisions(&self) -> &[(u64, Site, Site)] {
        &self.collisions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn here(c: &mut PcCache) -> u64 {
        c.pc(Location::caller())
    }

    #[test]
    fn same_site_same_pc_different_site_different_pc() {
        let mut c = PcCache::new();
        let mut v = Vec::new();
        for _ in 0..3 {
            v.push(here(&mut c));
        }
        let other = here(&mut c);
        assert!(v.iter().all(|&p| p == v[0]));
        assert_ne!(v[0], other);
        assert!(v[0] >= CODE_BASE && v[0] % 4 == 0);
        assert_eq!(c.site_count(), 2);
        assert_eq!(c.site(other).unwrap().0, file!());
    }

    #[test]
    fn pc_is_a_pure_function_of_the_site() {
        assert_eq!(site_pc("a.rs", 3, 9), site_pc("a.rs", 3, 9));
        assert_ne!(site_pc("a.rs", 3, 9), site_pc("a.rs", 4, 9));
    }
}
