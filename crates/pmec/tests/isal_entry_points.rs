//! pmec's ISA-L entry points as a client calls them, stripe after stripe: the single-call path
//! keeps per-thread state (the last geometry, a reused scheduling decision, the stripe fetched
//! before the caller's tables are compared), and none of it may change the parity. Checked
//! against a plain GF(2^8) reference, including a table rewritten in place between calls and
//! block lengths that change from call to call.

mod common;
use common::Rng;
use pmec::{gf, isal_abi, matrix};

fn reference(coef: &[u8], k: usize, rows: usize, data: &[Vec<u8>], len: usize) -> Vec<Vec<u8>> {
    (0..rows)
        .map(|r| {
            (0..len)
                .map(|i| (0..k).fold(0u8, |acc, j| acc ^ gf::mul(coef[r * k + j], data[j][i])))
                .collect()
        })
        .collect()
}

/// `k` blocks of `len` random bytes.
fn random_blocks(rng: &mut Rng, k: usize, len: usize) -> Vec<Vec<u8>> {
    (0..k)
        .map(|_| (0..len).map(|_| rng.next() as u8).collect())
        .collect()
}

#[test]
fn stripe_after_stripe_with_tables_rewritten_in_place_and_lengths_changing() {
    let (k, rows) = (8, 4);
    let a = matrix::gen_cauchy1_matrix(k + rows, k);
    let b = matrix::gen_rs_matrix(k + rows, k);
    let coef_a = a.as_bytes()[k * k..].to_vec();
    let coef_b = b.as_bytes()[k * k..].to_vec();
    // one buffer for the tables, as a client that reuses it would have
    let mut tables = isal_abi::init_tables(k, rows, &coef_a);
    let mut rng = Rng::new(31);
    let mut coef = coef_a.clone();
    for call in 0..400 {
        if call == 250 {
            // same geometry, same buffer, other contents
            tables.copy_from_slice(&isal_abi::init_tables(k, rows, &coef_b));
            coef = coef_b.clone();
        }
        // mostly 1 KiB, sometimes 4 KiB or an odd length (the reused decision is per length)
        let len = match call % 17 {
            5 => 4096,
            11 => 1000,
            _ => 1024,
        };
        let data = random_blocks(&mut rng, k, len);
        let got = common::isal_encode(&tables, k, rows, &data, len);
        assert_eq!(
            got,
            reference(&coef, k, rows, &data, len),
            "call {call}, len {len}"
        );
    }
}

/// Parity of `data` under ISA-L tables as given (split-nibble: a coefficient's 32 bytes are its
/// products with the low nibbles, then with the high nibbles), as ISA-L's SIMD kernels use them.
fn reference_tables(tables: &[u8], k: usize, rows: usize, data: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let len = data[0].len();
    (0..rows)
        .map(|r| {
            (0..len)
                .map(|i| {
                    (0..k).fold(0u8, |acc, j| {
                        let t = &tables[(r * k + j) * 32..][..32];
                        let x = data[j][i];
                        acc ^ t[(x & 15) as usize] ^ t[16 + (x >> 4) as usize]
                    })
                })
                .collect()
        })
        .collect()
}

#[test]
fn one_table_byte_changed_anywhere_between_calls_is_seen() {
    // 1 KiB of tables (whole 256-byte steps of the comparison) and 480 bytes (a 32-byte tail)
    for (k, rows) in [(8, 4), (5, 3)] {
        let a = matrix::gen_cauchy1_matrix(k + rows, k);
        let mut tables = isal_abi::init_tables(k, rows, &a.as_bytes()[k * k..]);
        let mut rng = Rng::new(7 + k as u64);
        let len = 1024;
        for call in 0..3 * tables.len() {
            if call % 3 == 2 {
                // the caller edits one byte of its table in place (positions in every part of
                // the buffer over the calls), then keeps calling with it
                let at = (call / 3 * 37) % tables.len();
                tables[at] ^= 1 + (rng.next() % 255) as u8;
            }
            let data = random_blocks(&mut rng, k, len);
            let got = common::isal_encode(&tables, k, rows, &data, len);
            assert_eq!(
                got,
                reference_tables(&tables, k, rows, &data),
                "k {k} rows {rows} call {call}"
            );
        }
    }
}

#[test]
fn geometries_taking_turns_each_reuse_their_own_decision() {
    // a client alternating two geometries (e.g. two pools with other codes): each call's
    // parity under its own tables
    let geos = [(8usize, 4usize), (6, 2)];
    let tables: Vec<(Vec<u8>, Vec<u8>)> = geos
        .iter()
        .map(|&(k, rows)| {
            let a = matrix::gen_cauchy1_matrix(k + rows, k);
            let coef = a.as_bytes()[k * k..].to_vec();
            (isal_abi::init_tables(k, rows, &coef), coef)
        })
        .collect();
    let mut rng = Rng::new(5);
    for call in 0..300 {
        let g = call % 2;
        let (k, rows) = geos[g];
        let len = if call % 7 == 3 { 2048 } else { 1024 };
        let data = random_blocks(&mut rng, k, len);
        let got = common::isal_encode(&tables[g].0, k, rows, &data, len);
        assert_eq!(
            got,
            reference(&tables[g].1, k, rows, &data, len),
            "call {call}"
        );
    }
}

#[test]
fn same_bytes_finds_a_difference_at_every_position() {
    use pmec::kernels::same_bytes;
    for n in (0..=300).chain([1024, 1056, 4096]) {
        let a: Vec<u8> = (0..n).map(|i| (i * 7 + 3) as u8).collect();
        assert!(same_bytes(&a, &a.clone()), "n {n}");
        for at in 0..n {
            let mut b = a.clone();
            b[at] ^= 0x80;
            assert!(!same_bytes(&a, &b), "n {n}, byte {at}");
        }
        if n > 0 {
            assert!(!same_bytes(&a, &a[..n - 1]), "lengths {n} and {}", n - 1);
        }
    }
}
