//! A set-associative tag array with LRU replacement; each way carries a small state value
//! chosen by the level that uses it.

use crate::config::CacheLevelConfig;

/// One cache level's tags, LRU stamps and per-way state.
#[derive(Clone)]
pub struct CacheArray<S: Copy + Default> {
    set_mask: u64,
    ways: usize,
    /// Line number + 1 per way; 0 marks an invalid way.
    tags: Vec<u64>,
    stamps: Vec<u64>,
    state: Vec<S>,
    clock: u64,
}

/// What an install displaced.
pub struct Displaced<S> {
    /// Line number (byte address / 64) of the displaced line.
    pub line: u64,
    /// Its state.
    pub state: S,
}

/// Lines (slots) an array of cache level `c` holds.
pub fn level_lines(c: &CacheLevelConfig) -> usize {
    (c.size_kib as usize * 1024 / 64).max(c.ways as usize)
}

impl<S: Copy + Default> CacheArray<S> {
    /// An empty array of the configured size (validated: a power-of-two number of sets).
    pub fn new(c: &CacheLevelConfig) -> Self {
        let lines = level_lines(c);
        let ways = c.ways.max(1) as usize;
        let sets = lines / ways;
        CacheArray {
            set_mask: sets as u64 - 1,
            ways,
            tags: vec![0; sets * ways],
            stamps: vec![0; sets * ways],
            state: vec![S::default(); sets * ways],
            clock: 0,
        }
    }

    /// Number of ways (slots) in the array.
    pub fn slots(&self) -> usize {
        self.tags.len()
    }

    #[inline]
    fn set_start(&self, line: u64) -> usize {
        (line & self.set_mask) as usize * self.ways
    }

    /// The slot holding `line`, if present.
    #[inline]
    pub fn find(&self, line: u64) -> Option<usize> {
        let start = self.set_start(line);
        let tag = line + 1;
        self.tags[start..start + self.ways]
            .iter()
            .position(|&t| t == tag)
            .map(|w| start + w)
    }

    /// Marks `slot` most recently used.
    #[inline]
    pub fn touch(&mut self, slot: usize) {
        self.clock += 1;
        self.stamps[slot] = self.clock;
    }

    /// The slot `line` would be installed in: an invalid way, else the least recently used.
    pub fn victim(&self, line: u64) -> usize {
        let start = self.set_start(line);
        let mut best = start;
        for s in start..start + self.ways {
            if self.tags[s] == 0 {
                return s;
            }
            if self.stamps[s] < self.stamps[best] {
                best = s;
            }
        }
        best
    }

    /// The line held in `slot`, if valid.
    #[inline]
    pub fn line_at(&self, slot: usize) -> Option<u64> {
        let t = self.tags[slot];
        (t != 0).then(|| t - 1)
    }

    /// Installs `line` with `state` in `slot` (from [`victim`](Self::victim)) as most recently
    /// used; returns what was there.
    pub fn install(&mut self, slot: usize, line: u64, state: S) -> Option<Displaced<S>> {
        let old = self.line_at(slot).map(|l| Displaced {
            line: l,
            state: self.state[slot],
        });
        self.tags[slot] = line + 1;
        self.state[slot] = state;
        self.touch(slot);
        old
    }

    /// Invalidates `slot`, returning its state.
    pub fn invalidate(&mut self, slot: usize) -> S {
        self.tags[slot] = 0;
        std::mem::take(&mut self.state[slot])
    }

    /// The state of `slot`.
    #[inline]
    pub fn state(&self, slot: usize) -> &S {
        &self.state[slot]
    }

    /// The state of `slot`, mutably.
    #[inline]
    pub fn state_mut(&mut self, slot: usize) -> &mut S {
        &mut self.state[slot]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> CacheArray<u8> {
        // 2 sets x 2 ways.
        CacheArray::new(&CacheLevelConfig {
            size_kib: 0,
            ways: 2,
            latency_cycles: 1,
        })
        .with_lines(4)
    }

    impl<S: Copy + Default> CacheArray<S> {
        fn with_lines(self, n: usize) -> Self {
            let sets = n / self.ways;
            CacheArray {
                set_mask: sets as u64 - 1,
                tags: vec![0; n],
                stamps: vec![0; n],
                state: vec![S::default(); n],
                ..self
            }
        }
    }

    #[test]
    fn lru_evicts_the_least_recently_used_way_of_the_set() {
        let mut c = tiny();
        for line in [0u64, 2] {
            let v = c.victim(line);
            assert!(c.install(v, line, 1).is_none());
        }
        // Touch line 0 so line 2 is LRU in set 0.
        c.touch(c.find(0).unwrap());
        let v = c.victim(4);
        let d = c.install(v, 4, 7).expect("set full");
        assert_eq!(d.line, 2);
        assert!(c.find(0).is_some() && c.find(4).is_some() && c.find(2).is_none());
        // Set 1 is untouched.
        assert!(c.find(1).is_none());
        assert_eq!(*c.state(c.find(4).unwrap()), 7);
        let s = c.find(4).unwrap();
        assert_eq!(c.invalidate(s), 7);
        assert!(c.find(4).is_none());
    }
}
