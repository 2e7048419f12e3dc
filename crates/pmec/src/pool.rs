//! Multi-threaded batch encoding: splits a batch of stripes into contiguous shares, one per
//! worker (`std::thread::scope`), and tells the coordinator how many encoders run at once so
//! it can switch to its high-pressure schedule. Workers are capped at the cores the process
//! may use: threads beyond that only time-slice the same cores and add contention, so asking
//! for more never costs throughput.

use crate::codec::{Codec, Decoder};
use crate::error::{mismatch, Result};

/// A thread count for batch operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadPool {
    threads: usize,
}

/// Cores available to this process.
pub fn available_cores() -> usize {
    // available_parallelism reads cgroup files on every call: ask once.
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

#[derive(Clone, Copy)]
struct Ptrs<'a> {
    srcs: &'a [*const u8],
    dsts: &'a [*mut u8],
}

// SAFETY: the pointer arrays are only read; each worker writes through a disjoint share of the
// destination pointers (the caller guarantees destinations do not overlap).
unsafe impl Send for Ptrs<'_> {}
// SAFETY: as above.
unsafe impl Sync for Ptrs<'_> {}

impl ThreadPool {
    /// A pool of `threads` workers (at least 1).
    pub fn new(threads: usize) -> ThreadPool {
        ThreadPool {
            threads: threads.max(1),
        }
    }

    /// Requested workers.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Workers actually started: min(requested, available cores).
    pub fn effective_threads(&self) -> usize {
        self.threads.min(available_cores())
    }

    /// Run `f(first_stripe, stripe_count)` over `n` stripes split across the workers.
    pub fn split<F: Fn(usize, usize) + Sync>(&self, n: usize, f: F) {
        let t = self.effective_threads().min(n.max(1));
        if t <= 1 {
            f(0, n);
            return;
        }
        let per = n.div_ceil(t);
        std::thread::scope(|s| {
            for w in 1..t {
                let f = &f;
                let start = w * per;
                if start < n {
                    s.spawn(move || f(start, per.min(n - start)));
                }
            }
            f(0, per.min(n));
        });
    }

    /// Encode a batch (`n * k` data, `n * m` parity blocks) across the workers.
    pub fn encode_batch(
        &self,
        codec: &Codec,
        data: &[&[u8]],
        parity: &mut [&mut [u8]],
    ) -> Result<()> {
        let (k, m) = (codec.data_shards(), codec.parity_shards());
        if data.is_empty() || !data.len().is_multiple_of(k) || parity.len() != data.len() / k * m {
            return mismatch(format!(
                "{} data / {} parity blocks: need n*{k} and n*{m}",
                data.len(),
                parity.len()
            ));
        }
        let len = data[0].len();
        if data.iter().any(|d| d.len() != len) || parity.iter().any(|p| p.len() != len) {
            return mismatch(format!("all blocks must have {len} bytes"));
        }
        let srcs: Vec<*const u8> = data.iter().map(|d| d.as_ptr()).collect();
        let dsts: Vec<*mut u8> = parity.iter_mut().map(|p| p.as_mut_ptr()).collect();
        // SAFETY: slices of `len` bytes; parity slices are distinct &mut borrows.
        unsafe { self.encode_raw(codec, len, &srcs, &dsts) };
        Ok(())
    }

    /// Encode raw stripes across the workers.
    ///
    /// # Safety
    /// As [`Codec::encode_raw`].
    pub unsafe fn encode_raw(
        &self,
        codec: &Codec,
        len: usize,
        srcs: &[*const u8],
        dsts: &[*mut u8],
    ) {
        let (k, m) = (codec.data_shards(), codec.parity_shards());
        let n = srcs.len() / k;
        let threads = self.effective_threads();
        let p = Ptrs { srcs, dsts };
        self.split(n, move |first, count| {
            let p = p;
            // SAFETY: this worker's share of stripes; shares are disjoint.
            unsafe {
                codec.encode_raw(
                    len,
                    &p.srcs[first * k..(first + count) * k],
                    &p.dsts[first * m..(first + count) * m],
                    threads,
                )
            };
        });
    }

    /// Decode raw stripes across the workers.
    ///
    /// # Safety
    /// As [`Decoder::decode_raw`].
    pub unsafe fn decode_raw(
        &self,
        dec: &Decoder,
        len: usize,
        srcs: &[*const u8],
        dsts: &[*mut u8],
    ) {
        let (k, e) = (dec.survivors().len(), dec.erased().len());
        let n = srcs.len() / k;
        let threads = self.effective_threads();
        let p = Ptrs { srcs, dsts };
        self.split(n, move |first, count| {
            let p = p;
            // SAFETY: disjoint share of stripes.
            unsafe {
                dec.decode_raw(
                    len,
                    &p.srcs[first * k..(first + count) * k],
                    &p.dsts[first * e..(first + count) * e],
                    threads,
                )
            };
        });
    }
}
