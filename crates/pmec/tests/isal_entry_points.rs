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

fn encode(tables: &[u8], k: usize, rows: usize, data: &[Vec<u8>], len: usize) -> Vec<Vec<u8>> {
    let mut par = vec![vec![0u8; len]; rows];
    let srcs: Vec<*const u8> = data.iter().map(|d| d.as_ptr()).collect();
    let dsts: Vec<*mut u8> = par.iter_mut().map(|p| p.as_mut_ptr()).collect();
    // SAFETY: k sources and `rows` destinations of at least `len` bytes; tables of
    // k * rows * 32 bytes.
    unsafe {
        isal_abi::ec_encode_data(
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
        let data: Vec<Vec<u8>> = (0..k)
            .map(|_| (0..len).map(|_| rng.next() as u8).collect())
            .collect();
        let got = encode(&tables, k, rows, &data, len);
        assert_eq!(
            got,
            reference(&coef, k, rows, &data, len),
            "call {call}, len {len}"
        );
    }
}
