//! Shared helpers for pmec's integration tests.
#![allow(dead_code)]

/// The system's ISA-L (`libisal.so.2`), or None where it is not installed, the comparisons
/// against it then skipped with a notice; with `PMEC_REQUIRE_ISAL=1` (`make test`, whose `deps`
/// install it) a library that does not load fails the test instead, with the loader's error.
pub fn system_isal() -> Option<&'static pmec::isal_dl::IsaL> {
    let l = pmec::isal_dl::IsaL::get();
    if l.is_none() {
        if std::env::var("PMEC_REQUIRE_ISAL").is_ok_and(|v| v == "1") {
            let e = pmec::isal_dl::IsaL::load("libisal.so.2").err();
            panic!("PMEC_REQUIRE_ISAL=1 but libisal.so.2 does not load: {e:?}");
        }
        eprintln!("NOTICE: libisal.so.2 not found; the comparison with ISA-L is skipped");
    }
    l
}

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

/// `ec_encode_data` of the ISA-L entry points over `data` (k blocks of `len` bytes) with
/// `tables` (k x rows x 32 bytes): the `rows` parity blocks.
pub fn isal_encode(
    tables: &[u8],
    k: usize,
    rows: usize,
    data: &[Vec<u8>],
    len: usize,
) -> Vec<Vec<u8>> {
    let mut par = vec![vec![0u8; len]; rows];
    let srcs: Vec<*const u8> = data.iter().map(|d| d.as_ptr()).collect();
    let dsts: Vec<*mut u8> = par.iter_mut().map(|p| p.as_mut_ptr()).collect();
    // SAFETY: k sources and `rows` destinations of at least `len` bytes; tables of
    // k * rows * 32 bytes.
    unsafe {
        pmec::isal_abi::ec_encode_data(
            len as i32,
            k as i32,
            rows as i32,
            tables.as_ptr(),
            srcs.as_ptr(),
            dsts.as_ptr(),
        )
    };
    par
}
