//! A set-associative LRU cache of metadata blocks (counters, tree nodes, dedup table blocks),
//! tags only: the engines keep the metadata values themselves.

/// A set-associative, LRU cache of 64 B metadata blocks identified by a `u64` key.
#[derive(Clone, Debug)]
pub struct MetaCache {
    ways: usize,
    sets: usize,
    /// Per way: key + 1 (0 = empty).
    tags: Vec<u64>,
    /// Per way: last use (larger = more recent).
    stamps: Vec<u64>,
    clock: u64,
}

impl MetaCache {
    /// A cold cache of `kib` KiB of 64 B blocks, `ways`-way (sets must come out a power of
    /// two; config validation checks it).
    pub fn new(kib: u32, ways: u32) -> MetaCache {
        let blocks = (kib as usize * 1024 / 64).max(1);
        let ways = (ways as usize).clamp(1, blocks);
        let sets = (blocks / ways).max(1);
        MetaCache {
            ways,
            sets,
            tags: vec![0; sets * ways],
            stamps: vec![0; sets * ways],
            clock: 0,
        }
    }

    #[inline]
    fn set_of(&self, key: u64) -> usize {
        // Mix the key so that strided keys (tree levels) spread over the sets.
        let h = key.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        ((h >> 32) as usize) & (self.sets - 1)
    }

    /// Whether `key` is cached, without touching the LRU state.
    pub fn probe(&self, key: u64) -> bool {
        let base = self.set_of(key) * self.ways;
        self.tags[base..base + self.ways].contains(&(key + 1))
    }

    /// Accesses `key`: true on a hit; on a miss the block is filled, replacing the set's
    /// least recently used one.
    pub fn access(&mut self, key: u64) -> bool {
        self.clock += 1;
        let base = self.set_of(key) * self.ways;
        let set = base..base + self.ways;
        if let Some(w) = self.tags[set.clone()].iter().position(|&t| t == key + 1) {
            self.stamps[base + w] = self.clock;
            return true;
        }
        let victim = set
            .min_by_key(|&i| (self.tags[i] != 0, self.stamps[i]))
            .expect("at least one way");
        self.tags[victim] = key + 1;
        self.stamps[victim] = self.clock;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_after_fill_and_evicts_lru() {
        // 1 KiB, 16-way: one set of 16 blocks.
        let mut c = MetaCache::new(1, 16);
        for k in 0..16 {
            assert!(!c.access(k));
        }
        assert!(c.access(0), "block 0 was filled");
        assert!(
            !c.access(100),
            "a 17th block misses and replaces the LRU (block 1)"
        );
        assert!(!c.probe(1));
        assert!(c.probe(0) && c.probe(100));
        assert!(!c.probe(200) && !c.probe(200), "probing does not fill");
    }
}
