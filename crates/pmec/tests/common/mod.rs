//! Shared helpers for pmec's integration tests.
#![allow(dead_code)]

/// Small deterministic xorshift generator (tests need no external crates).
pub struct Rng(pub u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = vec![0u8; n];
        self.fill(&mut v);
        v
    }
}

/// `count` buffers of `len` bytes starting at byte offset `align` inside a larger allocation,
/// so tests cover unaligned addresses.
pub struct Blocks {
    store: Vec<Vec<u8>>,
    pub align: usize,
    pub len: usize,
}

impl Blocks {
    pub fn new(count: usize, len: usize, align: usize, rng: &mut Rng) -> Blocks {
        let store = (0..count).map(|_| rng.bytes(len + align + 64)).collect();
        Blocks { store, align, len }
    }
    pub fn get(&self, i: usize) -> &[u8] {
        &self.store[i][self.align..self.align + self.len]
    }
    pub fn slices(&self) -> Vec<&[u8]> {
        (0..self.store.len()).map(|i| self.get(i)).collect()
    }
    pub fn slices_mut(&mut self) -> Vec<&mut [u8]> {
        let (a, l) = (self.align, self.len);
        self.store.iter_mut().map(|v| &mut v[a..a + l]).collect()
    }
    pub fn to_vecs(&self) -> Vec<Vec<u8>> {
        (0..self.store.len())
            .map(|i| self.get(i).to_vec())
            .collect()
    }
}
