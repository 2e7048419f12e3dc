//! Locally repairable codes LRC(k, m, l): k data blocks, m global Reed-Solomon parities
//! (ISA-L Cauchy rows) and l local XOR parities, one per group of about k/l data blocks
//! (Azure-style). Shard order: data 0..k, global parity k..k+m, local parity k+m..k+m+l.
//!
//! A single lost block of a group is rebuilt from its group alone (k/l reads instead of k);
//! anything else falls back to a global decode over any k linearly independent survivors.

use crate::codec::run_coordinated;
use crate::dialga::coordinator::{Coordinator, CoordinatorConfig, Strategy};
use crate::dialga::prefetch::StripeSet;
use crate::error::{invalid, mismatch, Error, Result};
use crate::kernels::{self, Coefs, Isa};
use crate::matrix::{self, Matrix};
use std::ops::Range;

/// An LRC(k, m, l) code.
#[derive(Debug)]
pub struct Lrc {
    k: usize,
    m: usize,
    l: usize,
    groups: Vec<Range<usize>>,
    gen: Matrix,
    parity: Coefs,
    isa: Isa,
    coord: Coordinator,
}

impl Lrc {
    /// LRC with k data, m global and l local parities (1 <= l <= k, k + m + l <= 255).
    pub fn new(k: usize, m: usize, l: usize) -> Result<Lrc> {
        Self::with_isa(k, m, l, Isa::best())
    }

    /// As [`Lrc::new`] with a chosen kernel.
    pub fn with_isa(k: usize, m: usize, l: usize, isa: Isa) -> Result<Lrc> {
        if l == 0 {
            return invalid("l (local groups) must be at least 1");
        }
        if l > k {
            return invalid(format!(
                "l = {l} local groups cannot exceed k = {k} data blocks"
            ));
        }
        // (checked: `Lrc::new(usize::MAX, 1, 1)` overflowed the sum)
        match k.checked_add(m).and_then(|s| s.checked_add(l)) {
            Some(n) if n <= 255 => {}
            Some(n) => return invalid(format!("k + m + l = {n} exceeds 255")),
            None => return invalid("k + m + l exceeds 255"),
        }
        matrix::check_km(k, m)?;
        let isa = isa.require()?;
        // groups as even as possible: the first k % l groups get one extra block
        let (base, extra) = (k / l, k % l);
        let mut groups = Vec::with_capacity(l);
        let mut start = 0;
        for g in 0..l {
            let size = base + usize::from(g < extra);
            groups.push(start..start + size);
            start += size;
        }
        let cauchy = matrix::gen_cauchy1_matrix(k + m, k);
        let mut gen = Matrix::zeros(k + m + l, k);
        for r in 0..k + m {
            for c in 0..k {
                gen.set(r, c, cauchy.get(r, c));
            }
        }
        for (g, range) in groups.iter().enumerate() {
            for c in range.clone() {
                gen.set(k + m + g, c, 1);
            }
        }
        let prow: Vec<usize> = (k..k + m + l).collect();
        let parity = Coefs::new(&gen.select_rows(&prow));
        let coord = Coordinator::new(Strategy::Auto, CoordinatorConfig::default(), isa, &parity);
        Ok(Lrc {
            k,
            m,
            l,
            groups,
            gen,
            parity,
            isa,
            coord,
        })
    }

    /// Data blocks.
    pub fn data_shards(&self) -> usize {
        self.k
    }

    /// Global parities.
    pub fn global_parities(&self) -> usize {
        self.m
    }

    /// Local parities (= groups).
    pub fn local_parities(&self) -> usize {
        self.l
    }

    /// k + m + l.
    pub fn total_shards(&self) -> usize {
        self.k + self.m + self.l
    }

    /// Data indices of group g.
    ///
    /// # Panics
    /// If `g` is not below l (the number of groups), as slice indexing does.
    pub fn group(&self, g: usize) -> Range<usize> {
        self.groups[g].clone()
    }

    /// Generator matrix ((k + m + l) x k).
    pub fn generator(&self) -> &Matrix {
        &self.gen
    }

    /// The coordinator scheduling encodes.
    pub fn coordinator(&self) -> &Coordinator {
        &self.coord
    }

    /// Group of a shard: data blocks and local parities belong to one; global parities to none.
    pub fn group_of(&self, shard: usize) -> Option<usize> {
        if shard < self.k {
            self.groups.iter().position(|r| r.contains(&shard))
        } else if shard >= self.k + self.m && shard < self.total_shards() {
            Some(shard - self.k - self.m)
        } else {
            None
        }
    }

    /// Compute the m + l parities (global first, then local) of one stripe.
    pub fn encode(&self, data: &[&[u8]], parity: &mut [&mut [u8]]) -> Result<()> {
        self.encode_batch(data, parity)
    }

    /// Encode `n` stripes: `data` has n*k blocks, `parity` n*(m+l).
    pub fn encode_batch(&self, data: &[&[u8]], parity: &mut [&mut [u8]]) -> Result<()> {
        let r = self.m + self.l;
        if data.is_empty()
            || !data.len().is_multiple_of(self.k)
            || parity.len() != data.len() / self.k * r
        {
            return mismatch(format!(
                "{} data and {} parity blocks given; need n*{} and n*{}",
                data.len(),
                parity.len(),
                self.k,
                r
            ));
        }
        let len = data[0].len();
        if data.iter().any(|d| d.len() != len) || parity.iter().any(|p| p.len() != len) {
            return mismatch(format!("all blocks must have {len} bytes"));
        }
        let srcs: Vec<*const u8> = data.iter().map(|d| d.as_ptr()).collect();
        let dsts: Vec<*mut u8> = parity.iter_mut().map(|p| p.as_mut_ptr()).collect();
        let set = StripeSet {
            srcs: &srcs,
            dsts: &dsts,
            k: self.k,
            m: r,
            len,
        };
        // SAFETY: pointers from slices of `len` bytes; parity slices are distinct &mut borrows.
        unsafe { run_coordinated(&self.coord, self.isa, &self.parity, &set, 1, false) };
        Ok(())
    }

    /// Encode raw stripes (k sources, m + l destinations per stripe), as
    /// [`crate::Codec::encode_raw`].
    ///
    /// # Safety
    /// As [`crate::Codec::encode_raw`] with m + l destinations per stripe.
    pub unsafe fn encode_raw(
        &self,
        len: usize,
        srcs: &[*const u8],
        dsts: &[*mut u8],
        threads: usize,
    ) -> crate::dialga::coordinator::Decision {
        let set = StripeSet {
            srcs,
            dsts,
            k: self.k,
            m: self.m + self.l,
            len,
        };
        run_coordinated(&self.coord, self.isa, &self.parity, &set, threads, false)
    }

    /// Rebuild shard `index` (a data block or a local parity) from the rest of its group:
    /// XOR of the group's other data blocks and its local parity. Reads k/l blocks.
    pub fn local_repair(&self, shards: &mut [&mut [u8]], index: usize) -> Result<()> {
        self.check_shards(shards)?;
        if index >= self.total_shards() {
            return invalid(format!(
                "shard {index} out of range (n = {})",
                self.total_shards()
            ));
        }
        let g = self.group_of(index).ok_or_else(|| {
            Error::InvalidParameter(format!("shard {index} is a global parity: no local group"))
        })?;
        let mut members: Vec<usize> = self.groups[g].clone().collect();
        members.push(self.k + self.m + g);
        let srcs: Vec<*const u8> = members
            .iter()
            .filter(|&&i| i != index)
            .map(|&i| shards[i].as_ptr())
            .collect();
        let len = shards[index].len();
        let coefs = Coefs::from_bytes(1, srcs.len(), &vec![1u8; srcs.len()]);
        let dst = shards[index].as_mut_ptr();
        // SAFETY: distinct shards of `len` bytes; the destination is not among the sources.
        unsafe { kernels::encode_linear(self.isa, &srcs, &[dst], &coefs, len, false, false) };
        Ok(())
    }

    fn check_shards(&self, shards: &[&mut [u8]]) -> Result<()> {
        if shards.len() != self.total_shards() {
            return mismatch(format!(
                "{} shards given, code has {}",
                shards.len(),
                self.total_shards()
            ));
        }
        let len = shards[0].len();
        if shards.iter().any(|s| s.len() != len) {
            return mismatch("all shards must have the same length");
        }
        Ok(())
    }

    /// Whether an erasure pattern is recoverable.
    pub fn can_decode(&self, erased: &[usize]) -> bool {
        let survivors: Vec<usize> = (0..self.total_shards())
            .filter(|i| !erased.contains(i))
            .collect();
        matrix::rank(&self.gen.select_rows(&survivors)) == self.k
    }

    /// Rebuild every erased shard: local repair for groups missing one block, then a global
    /// decode for the rest. Returns how many shards were repaired locally.
    pub fn decode(&self, shards: &mut [&mut [u8]], erased: &[usize]) -> Result<usize> {
        self.check_shards(shards)?;
        let n = self.total_shards();
        if let Some(&bad) = erased.iter().find(|&&e| e >= n) {
            return invalid(format!("erased shard {bad} out of range (n = {n})"));
        }
        let mut missing: Vec<usize> = erased.to_vec();
        missing.sort_unstable();
        missing.dedup();
        if missing.len() != erased.len() {
            // As the RS codec: a repeated index is a caller's mistake, not an erasure count.
            return invalid(format!("erasure list {erased:?} has duplicates"));
        }
        if !self.can_decode(&missing) {
            return Err(Error::TooManyErasures {
                erased: missing.len(),
                max: self.m + self.l,
            });
        }
        let mut local = 0;
        // local repairs (may cascade: repeat while progress)
        loop {
            let mut progress = false;
            for g in 0..self.l {
                let mut members: Vec<usize> = self.groups[g].clone().collect();
                members.push(self.k + self.m + g);
                let lost: Vec<usize> = members
                    .iter()
                    .copied()
                    .filter(|i| missing.contains(i))
                    .collect();
                if lost.len() == 1 {
                    self.local_repair(shards, lost[0])?;
                    missing.retain(|&i| i != lost[0]);
                    local += 1;
                    progress = true;
                }
            }
            if !progress || missing.is_empty() {
                break;
            }
        }
        if missing.is_empty() {
            return Ok(local);
        }
        // global: choose k independent survivors greedily
        let mut chosen: Vec<usize> = Vec::with_capacity(self.k);
        for i in (0..n).filter(|i| !missing.contains(i)) {
            let mut trial = chosen.clone();
            trial.push(i);
            if matrix::rank(&self.gen.select_rows(&trial)) == trial.len() {
                chosen = trial;
                if chosen.len() == self.k {
                    break;
                }
            }
        }
        let inv = self.gen.select_rows(&chosen).invert()?;
        let rows = self.gen.select_rows(&missing).mul(&inv)?;
        let coefs = Coefs::new(&rows);
        let len = shards[0].len();
        let srcs: Vec<*const u8> = chosen.iter().map(|&i| shards[i].as_ptr()).collect();
        let dsts: Vec<*mut u8> = missing.iter().map(|&i| shards[i].as_mut_ptr()).collect();
        // SAFETY: chosen and missing are disjoint sets of distinct shards of `len` bytes.
        unsafe { kernels::encode_linear(self.isa, &srcs, &dsts, &coefs, len, false, false) };
        Ok(local)
    }

    /// XOR parity check of group `g` (its data blocks and local parity XOR to zero) in a stripe
    /// of k + m + l shards of equal length. A wrong shard count or length, or a group that does
    /// not exist, is an error (not a verdict on a shortened group).
    pub fn group_consistent(&self, shards: &[&[u8]], g: usize) -> Result<bool> {
        let n = self.total_shards();
        if shards.len() != n {
            return mismatch(format!("{} shards given, code has {n}", shards.len()));
        }
        if g >= self.l {
            return invalid(format!("group {g} out of range ({} groups)", self.l));
        }
        let len = shards[0].len();
        if let Some((i, s)) = shards.iter().enumerate().find(|(_, s)| s.len() != len) {
            return mismatch(format!("shard {i} has {} bytes, expected {len}", s.len()));
        }
        let mut acc = vec![0u8; len];
        for i in self.groups[g]
            .clone()
            .chain(std::iter::once(self.k + self.m + g))
        {
            for (a, b) in acc.iter_mut().zip(shards[i]) {
                *a ^= b;
            }
        }
        Ok(acc.iter().all(|&b| b == 0))
    }
}
