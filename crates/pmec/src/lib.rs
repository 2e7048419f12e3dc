//! # pmec — erasure coding for persistent memory
//!
//! Reed-Solomon and LRC codes over GF(2^8) (polynomial 0x11d, matrices identical to ISA-L's),
//! SIMD kernels (SSSE3, AVX2, AVX-512BW, GFNI; scalar fallback) chosen at run time, and the
//! DIALGA prefetch-scheduling layer (pipelined software prefetch, XPLine-aware distances,
//! hill-climbing tuner, hardware-prefetcher suppression by shuffled line order, 256 B loop
//! bodies, an adaptive coordinator), plus batch and multi-threaded APIs, a C ABI
//! (`include/pmec.h`), an ISA-L-compatible API ([`isal_abi`], exported by the
//! `isal-shim` cdylib for `LD_PRELOAD`), file sharding tools ([`files`]) and benchmarks against
//! the system's ISA-L ([`bench`](mod@bench), [`isal_dl`]).
//!
//! ```
//! use pmec::Codec;
//! let codec = Codec::new(4, 2).unwrap();
//! let data: Vec<Vec<u8>> = (0..4).map(|i| vec![i as u8; 1024]).collect();
//! let mut parity = vec![vec![0u8; 1024]; 2];
//! let d: Vec<&[u8]> = data.iter().map(|v| v.as_slice()).collect();
//! let mut p: Vec<&mut [u8]> = parity.iter_mut().map(|v| v.as_mut_slice()).collect();
//! codec.encode(&d, &mut p).unwrap();
//! ```

#![warn(missing_docs)]

pub mod bench;
pub mod codec;
pub mod dialga;
pub mod error;
pub mod ffi;
pub mod files;
pub mod fork;
pub mod gf;
pub mod isal_abi;
pub mod isal_dl;
pub mod kernels;
pub mod lrc;
pub mod matrix;
pub mod pool;

pub use codec::{Codec, CodecBuilder, Decoder};
pub use dialga::{Schedule, Strategy};
pub use error::{Error, Result};
pub use kernels::Isa;
pub use lrc::Lrc;
pub use matrix::{Matrix, MatrixKind};
pub use pool::ThreadPool;
