//! Generator matrices (ISA-L-compatible Vandermonde and Cauchy) and GF(2^8) matrix algebra.
//!
//! Matrices are row-major `rows x cols` byte arrays, the layout ISA-L uses for `a[]`.

use crate::error::{invalid, Error, Result};
use crate::gf;

/// Which generator construction a code uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatrixKind {
    /// ISA-L `gf_gen_rs_matrix`: identity on top, row k+r is 2^(r*j) for column j.
    /// MDS only within ISA-L's documented bounds (see [`vandermonde_is_mds`]).
    Vandermonde,
    /// ISA-L `gf_gen_cauchy1_matrix`: identity on top, element (i, j) = 1/(i ^ j). Always MDS.
    Cauchy,
}

impl MatrixKind {
    /// Lower-case name ("vandermonde" / "cauchy").
    pub fn name(self) -> &'static str {
        match self {
            MatrixKind::Vandermonde => "vandermonde",
            MatrixKind::Cauchy => "cauchy",
        }
    }

    /// Parse a name as printed by [`MatrixKind::name`] (also accepts "rs" and "vand").
    pub fn parse(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "vandermonde" | "vand" | "rs" => Ok(MatrixKind::Vandermonde),
            "cauchy" => Ok(MatrixKind::Cauchy),
            other => invalid(format!(
                "unknown matrix kind '{other}' (use vandermonde or cauchy)"
            )),
        }
    }
}

/// A dense matrix over GF(2^8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matrix {
    rows: usize,
    cols: usize,
    data: Vec<u8>,
}

impl Matrix {
    /// All-zero matrix.
    pub fn zeros(rows: usize, cols: usize) -> Self {
        Matrix {
            rows,
            cols,
            data: vec![0; rows * cols],
        }
    }

    /// Identity matrix of size n.
    pub fn identity(n: usize) -> Self {
        let mut m = Self::zeros(n, n);
        for i in 0..n {
            m.set(i, i, 1);
        }
        m
    }

    /// Wrap row-major data; fails if the length is not rows*cols.
    pub fn from_vec(rows: usize, cols: usize, data: Vec<u8>) -> Result<Self> {
        if data.len() != rows * cols {
            return Err(Error::LengthMismatch(format!(
                "matrix data has {} bytes, expected {rows}x{cols}",
                data.len()
            )));
        }
        Ok(Matrix { rows, cols, data })
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Row-major bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.data
    }

    /// Element (r, c).
    pub fn get(&self, r: usize, c: usize) -> u8 {
        self.data[r * self.cols + c]
    }

    /// Set element (r, c).
    pub fn set(&mut self, r: usize, c: usize, v: u8) {
        self.data[r * self.cols + c] = v;
    }

    /// One row as a slice.
    pub fn row(&self, r: usize) -> &[u8] {
        &self.data[r * self.cols..(r + 1) * self.cols]
    }

    /// New matrix made of the given rows, in order.
    pub fn select_rows(&self, rows: &[usize]) -> Matrix {
        let mut data = Vec::with_capacity(rows.len() * self.cols);
        for &r in rows {
            data.extend_from_slice(self.row(r));
        }
        Matrix {
            rows: rows.len(),
            cols: self.cols,
            data,
        }
    }

    /// Matrix product self x other.
    pub fn mul(&self, other: &Matrix) -> Result<Matrix> {
        if self.cols != other.rows {
            return Err(Error::LengthMismatch(format!(
                "cannot multiply {}x{} by {}x{}",
                self.rows, self.cols, other.rows, other.cols
            )));
        }
        let mut out = Matrix::zeros(self.rows, other.cols);
        for i in 0..self.rows {
            for t in 0..self.cols {
                let a = self.get(i, t);
                if a == 0 {
                    continue;
                }
                let mrow = &gf::MUL[a as usize];
                for j in 0..other.cols {
                    out.data[i * other.cols + j] ^= mrow[other.get(t, j) as usize];
                }
            }
        }
        Ok(out)
    }

    /// Inverse of a square matrix, or [`Error::Singular`].
    pub fn invert(&self) -> Result<Matrix> {
        if self.rows != self.cols {
            return invalid(format!(
                "cannot invert a non-square {}x{} matrix",
                self.rows, self.cols
            ));
        }
        let mut work = self.data.clone();
        let mut out = vec![0u8; self.data.len()];
        if invert_in_place(&mut work, &mut out, self.rows) {
            Ok(Matrix {
                rows: self.rows,
                cols: self.cols,
                data: out,
            })
        } else {
            Err(Error::Singular)
        }
    }
}

/// Gauss-Jordan inversion with the same pivoting as ISA-L's `gf_invert_matrix`
/// (first non-zero row below a zero pivot is swapped in). `input` is destroyed (it ends as the
/// identity on success). Returns false if singular.
pub fn invert_in_place(input: &mut [u8], out: &mut [u8], n: usize) -> bool {
    for v in out.iter_mut() {
        *v = 0;
    }
    for i in 0..n {
        out[i * n + i] = 1;
    }
    for i in 0..n {
        if input[i * n + i] == 0 {
            let Some(j) = (i + 1..n).find(|&j| input[j * n + i] != 0) else {
                return false;
            };
            for c in 0..n {
                input.swap(i * n + c, j * n + c);
                out.swap(i * n + c, j * n + c);
            }
        }
        let p = gf::inv(input[i * n + i]);
        for c in 0..n {
            input[i * n + c] = gf::mul(input[i * n + c], p);
            out[i * n + c] = gf::mul(out[i * n + c], p);
        }
        for j in 0..n {
            if j == i {
                continue;
            }
            let f = input[j * n + i];
            if f == 0 {
                continue;
            }
            for c in 0..n {
                input[j * n + c] ^= gf::mul(f, input[i * n + c]);
                out[j * n + c] ^= gf::mul(f, out[i * n + c]);
            }
        }
    }
    true
}

/// Rank of a matrix (Gaussian elimination on a copy).
pub fn rank(m: &Matrix) -> usize {
    let mut a = m.data.clone();
    let (rows, cols) = (m.rows, m.cols);
    let mut r = 0;
    for c in 0..cols {
        let Some(p) = (r..rows).find(|&i| a[i * cols + c] != 0) else {
            continue;
        };
        for x in 0..cols {
            a.swap(r * cols + x, p * cols + x);
        }
        let iv = gf::inv(a[r * cols + c]);
        for x in 0..cols {
            a[r * cols + x] = gf::mul(a[r * cols + x], iv);
        }
        for i in 0..rows {
            if i != r && a[i * cols + c] != 0 {
                let f = a[i * cols + c];
                for x in 0..cols {
                    a[i * cols + x] ^= gf::mul(f, a[r * cols + x]);
                }
            }
        }
        r += 1;
        if r == rows {
            break;
        }
    }
    r
}

/// ISA-L `gf_gen_rs_matrix(a, n, k)`: n x k, identity on top, parity row r = [2^(r*j)].
pub fn gen_rs_matrix(n: usize, k: usize) -> Matrix {
    let mut m = Matrix::zeros(n, k);
    for i in 0..k.min(n) {
        m.set(i, i, 1);
    }
    let mut gen = 1u8;
    for i in k..n {
        let mut p = 1u8;
        for j in 0..k {
            m.set(i, j, p);
            p = gf::mul(p, gen);
        }
        gen = gf::mul(gen, 2);
    }
    m
}

/// ISA-L `gf_gen_cauchy1_matrix(a, n, k)`: n x k, identity on top, element (i, j) = 1/(i ^ j).
pub fn gen_cauchy1_matrix(n: usize, k: usize) -> Matrix {
    let mut m = Matrix::zeros(n, k);
    for i in 0..k.min(n) {
        m.set(i, i, 1);
    }
    for i in k..n {
        for j in 0..k {
            m.set(i, j, gf::inv((i ^ j) as u8));
        }
    }
    m
}

/// Whether ISA-L documents its Vandermonde matrix as MDS (every k x k sub-matrix invertible)
/// for k data and m parity blocks: k <= 3; k = 4, k+m <= 25; k = 5, k+m <= 10; k <= 21 with
/// m = 4; or m <= 3.
pub fn vandermonde_is_mds(k: usize, m: usize) -> bool {
    let n = k + m;
    k <= 3 || (k == 4 && n <= 25) || (k == 5 && n <= 10) || (k <= 21 && m == 4) || m <= 3
}

/// Build the n x k generator for a kind, checking the parameters.
pub fn generator(kind: MatrixKind, k: usize, m: usize) -> Result<Matrix> {
    check_km(k, m)?;
    match kind {
        MatrixKind::Cauchy => Ok(gen_cauchy1_matrix(k + m, k)),
        MatrixKind::Vandermonde => {
            if !vandermonde_is_mds(k, m) {
                return Err(Error::NotMds(format!(
                    "ISA-L's Vandermonde matrix is not guaranteed MDS for k={k}, m={m} \
                     (bounds: k<=3; k=4,k+m<=25; k=5,k+m<=10; k<=21,m=4; m<=3) - use Cauchy"
                )));
            }
            Ok(gen_rs_matrix(k + m, k))
        }
    }
}

/// Validate k data / m parity counts.
pub fn check_km(k: usize, m: usize) -> Result<()> {
    if k == 0 {
        return invalid("k (data blocks) must be at least 1");
    }
    if k.checked_add(m).is_none_or(|n| n > 255) {
        return invalid(format!("k + m = {k} + {m} exceeds 255 (the GF(2^8) limit)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inverse_times_matrix_is_identity() {
        let g = gen_cauchy1_matrix(12, 8);
        let sub = g.select_rows(&[0, 2, 3, 5, 8, 9, 10, 11]);
        let inv = sub.invert().unwrap();
        assert_eq!(sub.mul(&inv).unwrap(), Matrix::identity(8));
        assert_eq!(inv.mul(&sub).unwrap(), Matrix::identity(8));
    }

    #[test]
    fn singular_detected() {
        let m = Matrix::from_vec(2, 2, vec![3, 6, 3, 6]).unwrap();
        assert_eq!(m.invert(), Err(Error::Singular));
        assert_eq!(rank(&m), 1);
    }

    #[test]
    fn vandermonde_first_parity_row_is_ones() {
        let g = gen_rs_matrix(10, 6);
        assert!(g.row(6).iter().all(|&v| v == 1));
        assert_eq!(g.row(7), &[1, 2, 4, 8, 16, 32]);
    }

    #[test]
    fn parameter_errors() {
        assert!(matches!(
            generator(MatrixKind::Cauchy, 0, 4),
            Err(Error::InvalidParameter(_))
        ));
        assert!(matches!(
            generator(MatrixKind::Cauchy, 200, 56),
            Err(Error::InvalidParameter(_))
        ));
        assert!(generator(MatrixKind::Cauchy, 200, 55).is_ok());
        assert!(matches!(
            generator(MatrixKind::Vandermonde, 24, 4),
            Err(Error::NotMds(_))
        ));
        assert!(generator(MatrixKind::Vandermonde, 8, 4).is_ok());
    }

    #[test]
    fn cauchy_sub_matrices_invertible() {
        // every choice of 4 erased rows out of RS(12,8) leaves an invertible 8x8 matrix
        let g = gen_cauchy1_matrix(12, 8);
        for mask in 0u32..(1 << 12) {
            if mask.count_ones() != 8 {
                continue;
            }
            let rows: Vec<usize> = (0..12).filter(|r| mask >> r & 1 == 1).collect();
            assert!(g.select_rows(&rows).invert().is_ok(), "rows {rows:?}");
        }
    }
}
