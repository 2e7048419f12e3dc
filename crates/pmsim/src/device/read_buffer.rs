//! The on-DIMM read buffer of Optane-like devices: an LRU set of 256 B XPLines.

/// A set of XPLine numbers mapped to slots: open addressing with linear probing in a table of
/// at least sixteen times the capacity (four for buffers over 1024 lines), deletion by backward
/// shifting (no tombstones). XPLine numbers need no protection against adversarial keys, and a
/// table this sparse answers nearly always in one probe (a lookup of random traffic nearly
/// always misses; at a quarter full, its probe loop was a frequent branch misprediction), where a
/// general hash map costs several times more per lookup.
#[derive(Clone, Debug)]
struct SlotIndex {
    keys: Vec<u64>,
    slots: Vec<u32>,
    shift: u32,
}

/// An empty table entry (no XPLine number reaches it: they are addresses / XPLine size).
const EMPTY: u64 = u64::MAX;

impl SlotIndex {
    fn new(capacity: usize) -> SlotIndex {
        let factor = if capacity <= 1024 { 16 } else { 4 };
        let size = (capacity.max(1) * factor).next_power_of_two();
        SlotIndex {
            keys: vec![EMPTY; size],
            slots: vec![0; size],
            shift: 64 - size.trailing_zeros(),
        }
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// Table position of `key`, or of the empty entry where it would go.
    #[inline]
    fn find(&self, key: u64) -> usize {
        let mask = self.keys.len() - 1;
        let mut i = self.home(key);
        while self.keys[i] != key && self.keys[i] != EMPTY {
            i = (i + 1) & mask;
        }
        i
    }

    #[inline]
    fn get(&self, key: u64) -> Option<u32> {
        let i = self.find(key);
        (self.keys[i] == key).then(|| self.slots[i])
    }

    /// Inserts `key` (not present) with `slot`.
    fn insert(&mut self, key: u64, slot: u32) {
        let i = self.find(key);
        self.keys[i] = key;
        self.slots[i] = slot;
    }

    /// Removes `key` (present), shifting later entries of its probe run back.
    fn remove(&mut self, key: u64) {
        let mask = self.keys.len() - 1;
        let mut hole = self.find(key);
        let mut i = hole;
        loop {
            i = (i + 1) & mask;
            let k = self.keys[i];
            if k == EMPTY {
                break;
            }
            // The entry at `i` may fill the hole unless its home lies cyclically in (hole, i].
            let home = self.home(k);
            if (i.wrapping_sub(home) & mask) >= (i.wrapping_sub(hole) & mask) {
                self.keys[hole] = k;
                self.slots[hole] = self.slots[i];
                hole = i;
            }
        }
        self.keys[hole] = EMPTY;
    }
}

const NIL: u32 = u32::MAX;

/// An LRU set of XPLine numbers with O(1) lookup, insert and eviction.
#[derive(Clone, Debug)]
pub struct ReadBuffer {
    capacity: usize,
    index: SlotIndex,
    keys: Vec<u64>,
    prev: Vec<u32>,
    next: Vec<u32>,
    head: u32, // most recently used
    tail: u32, // least recently used
    /// Reads served from the buffer.
    pub hits: u64,
    /// Reads that had to go to the media.
    pub misses: u64,
}

impl ReadBuffer {
    /// A buffer holding `capacity` XPLines.
    pub fn new(capacity: usize) -> ReadBuffer {
        ReadBuffer {
            capacity,
            index: SlotIndex::new(capacity),
            keys: Vec::with_capacity(capacity),
            prev: Vec::with_capacity(capacity),
            next: Vec::with_capacity(capacity),
            head: NIL,
            tail: NIL,
            hits: 0,
            misses: 0,
        }
    }

    fn unlink(&mut self, i: u32) {
        let (p, n) = (self.prev[i as usize], self.next[i as usize]);
        if p != NIL {
            self.next[p as usize] = n;
        } else {
            self.head = n;
        }
        if n != NIL {
            self.prev[n as usize] = p;
        } else {
            self.tail = p;
        }
    }

    fn push_front(&mut self, i: u32) {
        self.prev[i as usize] = NIL;
        self.next[i as usize] = self.head;
        if self.head != NIL {
            self.prev[self.head as usize] = i;
        }
        self.head = i;
        if self.tail == NIL {
            self.tail = i;
        }
    }

    /// Looks up `xpline`; on a hit it becomes most recently used. Counts hits and misses.
    pub fn lookup(&mut self, xpline: u64) -> bool {
        match self.index.get(xpline) {
            Some(i) => {
                self.unlink(i);
                self.push_front(i);
                self.hits += 1;
                true
            }
            None => {
                self.misses += 1;
                false
            }
        }
    }

    /// Inserts `xpline` as most recently used, evicting the least recently used when full.
    pub fn insert(&mut self, xpline: u64) {
        if self.capacity == 0 || self.index.get(xpline).is_some() {
            return;
        }
        let slot = if self.keys.len() < self.capacity {
            self.keys.push(xpline);
            self.prev.push(NIL);
            self.next.push(NIL);
            (self.keys.len() - 1) as u32
        } else {
            let victim = self.tail;
            self.unlink(victim);
            self.index.remove(self.keys[victim as usize]);
            self.keys[victim as usize] = xpline;
            victim
        };
        self.index.insert(xpline, slot);
        self.push_front(slot);
    }

    /// Number of XPLines held.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when nothing is buffered.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recently_used() {
        let mut b = ReadBuffer::new(2);
        b.insert(1);
        b.insert(2);
        assert!(b.lookup(1)); // 1 becomes MRU, 2 is LRU
        b.insert(3); // evicts 2
        assert!(b.lookup(1));
        assert!(!b.lookup(2));
        assert!(b.lookup(3));
        assert_eq!(b.len(), 2);
        assert_eq!((b.hits, b.misses), (3, 1));
    }

    #[test]
    fn slot_index_matches_a_map() {
        let mut idx = SlotIndex::new(16);
        let mut reference = std::collections::HashMap::new();
        let mut x = 99u64;
        for i in 0..20_000u32 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Few distinct keys, so probe runs collide and removals shift entries.
            let key = (x >> 40) % 48;
            match reference.get(&key) {
                Some(_) if x.is_multiple_of(2) => {
                    idx.remove(key);
                    reference.remove(&key);
                }
                None if reference.len() < 16 => {
                    idx.insert(key, i);
                    reference.insert(key, i);
                }
                _ => {}
            }
            for k in 0..48 {
                assert_eq!(
                    idx.get(k),
                    reference.get(&k).copied(),
                    "key {k} after step {i}"
                );
            }
        }
    }

    #[test]
    fn matches_a_reference_lru() {
        let mut b = ReadBuffer::new(8);
        let mut reference: Vec<u64> = Vec::new(); // front = MRU
        let mut x = 12345u64;
        for _ in 0..5000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let key = (x >> 33) % 20;
            let hit = b.lookup(key);
            assert_eq!(hit, reference.contains(&key));
            if hit {
                reference.retain(|&k| k != key);
                reference.insert(0, key);
            } else {
                b.insert(key);
                reference.insert(0, key);
                reference.truncate(8);
            }
        }
    }
}
