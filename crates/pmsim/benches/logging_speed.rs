//! Host cost of hardware logging: each of the six hardware-transaction workloads (pmwork
//! `btree-hw` ... `tatp-hw`, 4 threads) on the full system under `nvm-lalea` with
//! `controller.logging` = none, redu and lalea+blom, interleaved over several rounds (only
//! `System::run` is timed; the trace is generated once, in memory). Prints each scheme's
//! median host time per workload and its ratio to `none` (target: lalea+blom at most 2x).
//!
//! `cargo bench -p pmsim --bench logging_speed -- [OPS] [ROUNDS]`

mod common;
use common::{plugin_host_cost, positional_args};

fn main() {
    let args = positional_args();
    let ops: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(4000);
    let rounds: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    plugin_host_cost(
        "logging_speed",
        &pmwork::suite(pmwork::Suite::Lalea),
        "nvm-lalea",
        &[
            &["controller.logging=none"],
            &["controller.logging=redu"],
            &["controller.logging=lalea+blom"],
        ],
        4,
        ops,
        rounds,
    );
}
