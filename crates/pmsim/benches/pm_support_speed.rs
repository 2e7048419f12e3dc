//! Host cost of the PM-support engines and write prediction: the ten PMWeaver Table II
//! workloads (pmwork) on the full system under `pcm-pmweaver` with no engine, `enc-bmt`,
//! `enc-bmt` + PMWeaver and `dedup` + PMWeaver, interleaved over several rounds (only
//! `System::run` is timed; the trace is generated once, in memory). Prints each design's median
//! host time per workload and its ratio to the first (target: `enc-bmt` + PMWeaver at most 2x
//! the run without them).
//!
//! `cargo bench -p pmsim --bench pm_support_speed -- [OPS] [ROUNDS]`

mod common;
use common::{plugin_host_cost, positional_args};

fn main() {
    let args = positional_args();
    let ops: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let rounds: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    let workloads: Vec<&'static dyn pmwork::Workload> = pmwork::PMWEAVER_TABLE_II
        .iter()
        .map(|w| pmwork::workload(w).expect("a Table II workload"))
        .collect();
    plugin_host_cost(
        "pm_support_speed",
        &workloads,
        "pcm-pmweaver",
        &[
            &["controller.bmo=none", "controller.predictor=none"],
            &["controller.bmo=enc-bmt", "controller.predictor=none"],
            &["controller.bmo=enc-bmt", "controller.predictor=pmweaver"],
            &["controller.bmo=dedup", "controller.predictor=pmweaver"],
        ],
        1,
        ops,
        rounds,
    );
}
