//! Small deterministic random number generators: SplitMix64 for seeding and hashing,
//! xoshiro256** for streams, and YCSB's scrambled Zipfian distribution.
//!
//! Everything a workload does is a function of its seed, so the same seed gives the same trace
//! on every machine. No external crate is needed.

/// One step of SplitMix64: advances `state` and returns the next output.
#[inline]
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    mix64(*state)
}

/// A stateless 64-bit mixing function (the SplitMix64 / Stafford variant 13 finaliser):
/// a bijection on `u64` whose outputs look random. Used to derive values and encodings.
#[inline]
pub fn mix64(x: u64) -> u64 {
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// xoshiro256**: a fast generator with 256 bits of state.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator seeded from `seed` through SplitMix64 (any seed, including 0, is fine).
    pub fn new(seed: u64) -> Rng {
        let mut st = seed;
        let s = [
            splitmix64(&mut st),
            splitmix64(&mut st),
            splitmix64(&mut st),
            splitmix64(&mut st),
        ];
        Rng { s }
    }

    /// A generator for sub-stream `stream` of `seed` (e.g. one per thread), independent of
    /// the other sub-streams.
    pub fn stream(seed: u64, stream: u64) -> Rng {
        Rng::new(mix64(
            seed ^ mix64(stream.wrapping_add(0x5851_f42d_4c95_7f2d)),
        ))
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// A uniform value in `0..n` (`n > 0`), without modulo bias (Lemire's method).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        let mut m = u128::from(self.next_u64()) * u128::from(n);
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = u128::from(self.next_u64()) * u128::from(n);
            }
        }
        (m >> 64) as u64
    }

    /// A uniform value in `lo..=hi`.
    #[inline]
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `percent` / 100.
    #[inline]
    pub fn percent(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// A uniform float in `[0, 1)`.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// YCSB's Zipfian generator over `0..items` (Gray et al., "Quickly generating billion-record
/// synthetic databases"), with YCSB's default constant 0.99 and its scrambling (item ranks are
/// hashed so popular items are spread over the key space).
#[derive(Clone, Debug)]
pub struct Zipf {
    items: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
}

impl Zipf {
    /// YCSB's default Zipfian constant.
    pub const YCSB_THETA: f64 = 0.99;

    /// A generator over `0..items` (`items >= 1`) with skew `theta` (0 < theta < 1).
    pub fn new(items: u64, theta: f64) -> Zipf {
        let items = items.max(1);
        let zeta = |n: u64| (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum::<f64>();
        let zetan = zeta(items);
        let zeta2 = zeta(2.min(items));
        let alpha = 1.0 / (1.0 - theta);
        let eta = if items <= 1 {
            0.0
        } else {
            (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan)
        };
        Zipf {
            items,
            theta,
            alpha,
            zetan,
            eta,
        }
    }

    /// The next rank (0 = most popular), unscrambled.
    pub fn rank(&mut self, rng: &mut Rng) -> u64 {
        let u = rng.unit();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1.min(self.items - 1);
        }
        let r = (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.items - 1)
    }

    /// The next item, scrambled over `0..items` as YCSB's `ScrambledZipfianGenerator` does.
    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        mix64(self.rank(rng)) % self.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_deterministic_and_distinct() {
        let a: Vec<u64> = (0..4).map(|_| Rng::new(7).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let mut s0 = Rng::stream(7, 0);
        let mut s1 = Rng::stream(7, 1);
        assert_ne!(s0.next_u64(), s1.next_u64());
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut r = Rng::new(1);
        let mut seen = [0u32; 10];
        for _ in 0..10_000 {
            let v = r.below(10);
            seen[v as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 800 && c < 1200), "{seen:?}");
    }

    #[test]
    fn zipf_is_skewed() {
        let mut r = Rng::new(3);
        let mut z = Zipf::new(1000, Zipf::YCSB_THETA);
        let mut hits0 = 0;
        for _ in 0..10_000 {
            let k = z.rank(&mut r);
            assert!(k < 1000);
            if k == 0 {
                hits0 += 1;
            }
        }
        // Rank 0 of a 0.99-Zipf over 1000 items has probability ~13%.
        assert!(hits0 > 800 && hits0 < 1800, "{hits0}");
    }
}
