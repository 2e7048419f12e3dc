//! Helpers shared by the integration tests that run pmwork's programs.

use pmsim::pmtrace::TraceEvent;
use pmwork::{GenOptions, VecSink};

/// The events of pmwork workload `w`: `threads` threads (the last `clients` of them RDMA
/// clients of the simulated PM), `ops` operations, seed `seed`.
pub fn workload_events(
    w: &dyn pmwork::Workload,
    threads: u16,
    clients: u16,
    ops: u64,
    seed: u64,
) -> Vec<TraceEvent> {
    let mut p = w.info().default_params(seed);
    p.threads = threads;
    p.remote_threads = clients;
    p.ops = ops;
    w.generate(&p, Box::new(VecSink::default()), GenOptions::default())
        .expect("generate")
        .into_events()
}
