//! The on-DIMM read buffer of Optane-like devices: an LRU set of 256 B XPLines.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A multiplicative hasher for integer keys: XPLine numbers need no DoS resistance, and
/// SipHash would dominate the cost of a buffer lookup.
#[derive(Clone, Copy, Debug, Default)]
pub struct IntHasher(u64);

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = (x ^ (x >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type IntMap<V> = HashMap<u64, V, BuildHasherDefault<IntHasher>>;

const NIL: u32 = u32::MAX;

/// An LRU set of XPLine numbers with O(1) lookup, insert and eviction.
#[derive(Clone, Debug)]
pub struct ReadBuffer {
    capacity: usize,
    index: IntMap<u32>,
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
            index: IntMap::with_capacity_and_hasher(capacity, Default::default()),
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
        match self.index.get(&xpline).copied() {
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
        if self.capacity == 0 || self.index.contains_key(&xpline) {
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
            self.index.remove(&self.keys[victim as usize]);
            self.keys[victim as usize] = xpline;
            victim
        };
        self.index.insert(xpline, slot);
        self.push_front(slot);
    }

    /// Number of XPLines held.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// True when nothing is buffered.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
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
