//! Host cost of the persist-ordering models: each PPO micro-benchmark (pmwork `ppo-hash`,
//! `ppo-rbtree`, `ppo-sps`, `ppo-bplustree`, `ppo-ssca2`; 8 threads, PPO's 4 cores x 2 threads)
//! on the full system under `nvm-ppo` with `controller.ordering` = x86, epoch and broi,
//! interleaved over several rounds (only `System::run` is timed; the trace is generated once,
//! in memory). Prints each model's median host time per workload and its ratio to x86
//! (target: broi at most 2x).
//!
//! `cargo bench -p pmsim --bench ordering_speed -- [OPS] [ROUNDS]`

mod common;
use common::{plugin_host_cost, positional_args};

fn main() {
    let args = positional_args();
    let ops: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(4000);
    let rounds: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    plugin_host_cost(
        "ordering_speed",
        &pmwork::suite(pmwork::Suite::Ppo),
        "nvm-ppo",
        &[
            &["controller.ordering=x86"],
            &["controller.ordering=epoch"],
            &["controller.ordering=broi"],
        ],
        8,
        ops,
        rounds,
    );
}
