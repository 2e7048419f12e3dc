//! GF(2^8) arithmetic with the polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11d), the field ISA-L uses.
//!
//! Log/exp tables and a full 64 KiB multiplication table are built at compile time.

/// The field polynomial (0x11d).
pub const POLY: u16 = 0x11d;

const fn build_exp_log() -> ([u8; 512], [u8; 256]) {
    let mut exp = [0u8; 512];
    let mut log = [0u8; 256];
    let mut x: u16 = 1;
    let mut i = 0;
    while i < 255 {
        exp[i] = x as u8;
        log[x as usize] = i as u8;
        x <<= 1;
        if x & 0x100 != 0 {
            x ^= POLY;
        }
        i += 1;
    }
    while i < 512 {
        exp[i] = exp[i - 255];
        i += 1;
    }
    (exp, log)
}

const EXP_LOG: ([u8; 512], [u8; 256]) = build_exp_log();
/// exp table: `EXP[i] = 2^i`, doubled so that `EXP[log a + log b]` needs no modulo.
pub static EXP: [u8; 512] = EXP_LOG.0;
/// log table: `LOG[2^i] = i` (`LOG[0]` is unused and 0).
pub static LOG: [u8; 256] = EXP_LOG.1;

const fn build_mul() -> [[u8; 256]; 256] {
    let (exp, log) = build_exp_log();
    let mut t = [[0u8; 256]; 256];
    let mut a = 1;
    while a < 256 {
        let mut b = 1;
        while b < 256 {
            t[a][b] = exp[log[a] as usize + log[b] as usize];
            b += 1;
        }
        a += 1;
    }
    t
}

/// Full multiplication table: `MUL[a][b] = a * b`.
pub static MUL: [[u8; 256]; 256] = build_mul();

/// Multiply two field elements.
#[inline]
pub fn mul(a: u8, b: u8) -> u8 {
    MUL[a as usize][b as usize]
}

/// Multiplicative inverse; like ISA-L, `inv(0)` returns 0.
#[inline]
pub fn inv(a: u8) -> u8 {
    if a == 0 {
        0
    } else {
        EXP[255 - LOG[a as usize] as usize]
    }
}

/// Raise `a` to the power `n`.
pub fn pow(a: u8, n: usize) -> u8 {
    if n == 0 {
        return 1;
    }
    if a == 0 {
        return 0;
    }
    EXP[(LOG[a as usize] as usize * n) % 255]
}

/// The 32-byte split-nibble table ISA-L's `gf_vect_mul_init` builds for constant `c`:
/// bytes 0..16 = c*{0..15}, bytes 16..32 = c*{0x00,0x10,..,0xf0}.
pub fn nibble_table(c: u8) -> [u8; 32] {
    let mut t = [0u8; 32];
    for i in 0..16u8 {
        t[i as usize] = mul(c, i);
        t[16 + i as usize] = mul(c, i << 4);
    }
    t
}

/// The 8x8 bit matrix (GF2P8AFFINEQB operand) that multiplies a byte by `c` in this field.
///
/// Byte 7-i of the result holds the row for output bit i: bit b of that row is bit i of c*2^b.
pub fn affine_matrix(c: u8) -> u64 {
    let mut m = 0u64;
    for i in 0..8 {
        let mut row = 0u64;
        for b in 0..8 {
            let col = mul(c, 1u8 << b);
            if col >> i & 1 == 1 {
                row |= 1 << b;
            }
        }
        m |= row << (8 * (7 - i));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slow_mul(mut a: u8, mut b: u8) -> u8 {
        let mut p = 0u8;
        while b != 0 {
            if b & 1 != 0 {
                p ^= a;
            }
            let hi = a & 0x80 != 0;
            a <<= 1;
            if hi {
                a ^= (POLY & 0xff) as u8;
            }
            b >>= 1;
        }
        p
    }

    #[test]
    fn mul_matches_carryless_reference() {
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                assert_eq!(mul(a, b), slow_mul(a, b), "{a}*{b}");
            }
        }
    }

    #[test]
    fn inverse_round_trips() {
        assert_eq!(inv(0), 0);
        for a in 1..=255u8 {
            assert_eq!(mul(a, inv(a)), 1, "a={a}");
        }
    }

    #[test]
    fn nibble_table_reconstructs_product() {
        for c in [0u8, 1, 2, 0x53, 0xff] {
            let t = nibble_table(c);
            for x in 0..=255u8 {
                assert_eq!(t[(x & 15) as usize] ^ t[16 + (x >> 4) as usize], mul(c, x));
            }
        }
    }

    #[test]
    fn pow_matches_repeated_mul() {
        let mut p = 1u8;
        for n in 0..300 {
            assert_eq!(pow(3, n), p);
            p = mul(p, 3);
        }
    }
}
