//! `pmwork`: the persistent-memory programs that drive `pmsim`.
//!
//! A [`PmHeap`] is a simulated address space (a PM region at [`PM_BASE`], a DRAM region at
//! [`DRAM_BASE`]) that holds real bytes and turns every access into a
//! [`pmtrace::TraceEvent`] with a stable per-call-site PC. On it sit the programming models
//! of the papers ([`models`]: persist barriers, PMDK-style and hand-rolled undo logging,
//! redo logging, hardware-transaction markers) with a persistent allocator ([`alloc`]), the
//! data structures written against them ([`ds`]), and the workloads ([`workloads`], listed by
//! [`registry()`]). Every workload can record per-thread commit indices and has a recovery
//! oracle ([`oracle`]) that judges any crash image ([`CrashImage`]).
//!
//! # Map
//!
//! | module | owns |
//! |---|---|
//! | [`heap`], [`memory`], [`pc`] | the address space, its sparse bytes, call-site PCs |
//! | [`sink`], [`stream`] | where events go: counting, in memory, `.pmt`, a bounded channel ([`EventStream`]) |
//! | [`models`], [`alloc`], [`layout`] | programming models ([`Tx`]), allocator, address layout |
//! | [`ds`] | B-tree, crit-bit tree, RB-tree, skip list, hash maps, B+ tree, key-value store |
//! | [`workloads`], [`kernel`], [`mod@registry`] | the 26 workloads, the [`Kernel`] / [`Workload`] traits |
//! | [`image`], [`oracle`], [`persist_model`], [`crashtest`] | crash images, oracles, the reference persistence model, simulator-free crash sweeps |
//! | [`rng`] | SplitMix64 / xoshiro256** / YCSB Zipfian |
//!
//! # Use
//!
//! ```
//! use pmwork::{workload, CountingSink, GenOptions, Params};
//!
//! let w = workload("btree")?;
//! let p = Params { ops: 100, threads: 1, seed: 7, remote_threads: 0, janus_hints: false, value_bytes: 8 };
//! let g = w.generate(&p, Box::<CountingSink>::default(), GenOptions { record_commits: true, fault: None })?;
//! assert!(g.events > 1000);
//! // A crash before any setup persisted leaves an empty image: a legal state.
//! let commits = g.commits.unwrap();
//! assert!(w.oracle(&p, &commits, &pmwork::CrashImage::new(), &[0]).is_ok()); // before setup
//! # Ok::<(), String>(())
//! ```
//!
//! # Checks
//!
//! ```text
//! cargo test --release -p pmwork                                   # unit, structure, crash tests
//! cargo run --release -p pmwork --example gen_speed                # events per second
//! cargo run --release -p pmwork --example sweep_debug -- --fault  # crash sweeps, with the bug on
//! ```

#![warn(missing_docs)]

pub mod alloc;
pub mod crashtest;
pub mod ds;
pub mod heap;
pub mod image;
pub mod kernel;
pub mod layout;
pub mod memory;
pub mod models;
pub mod oracle;
pub mod pc;
pub mod persist_model;
pub mod registry;
pub mod rng;
pub mod sink;
pub mod stream;
pub mod workloads;

pub use heap::{is_pm, line_of, PmHeap, DRAM_BASE, LINE_BYTES, MAX_THREADS, PM_BASE};
pub use image::CrashImage;
pub use kernel::{
    GenOptions, Generated, Kernel, KernelWorkload, Params, Suite, Workload, WorkloadInfo,
    MAX_VALUE_BYTES,
};
pub use models::{Fault, Model, Tx};
pub use oracle::{CommitLog, Recording};
pub use registry::{names, registry, suite, workload, PMWEAVER_TABLE_II};
pub use sink::{CountingSink, EventSink, NullSink, PmtSink, VecSink};
pub use stream::{EventStream, StreamSummary};
