//! Generator options that change what a workload emits beyond its threads, operations and
//! seed; shared by `pmlab sim --workload` and `pmlab trace gen`, so that a generated run can be
//! exported as the trace it simulated.

use clap::Args;

/// The options (see each field's help).
#[derive(Args, Clone, Default)]
pub struct WorkloadOptions {
    /// The last N of the workload's threads are clients of the simulated PM over RDMA: their
    /// persists travel as `RdmaPwrite`s through the `network` config (PPO's remote mode;
    /// default 0).
    #[arg(long, value_name = "N")]
    pub remote_threads: Option<u16>,
    /// Annotate the workload's operations with Janus-style software hints (`hint` events) for
    /// the `janus` predictor (`controller.predictor = "janus"`).
    #[arg(long)]
    pub janus_hints: bool,
    /// Bytes of each value the workload's map stores (hash maps only; 8..=4096, a multiple
    /// of 8: PPO Fig. 13's element size; default 8).
    #[arg(long, value_name = "BYTES")]
    pub value_bytes: Option<u32>,
}

impl WorkloadOptions {
    /// The flags given, by name (for "applies to --workload" errors).
    pub fn given(&self) -> Vec<&'static str> {
        [
            ("--remote-threads", self.remote_threads.is_some()),
            ("--janus-hints", self.janus_hints),
            ("--value-bytes", self.value_bytes.is_some()),
        ]
        .into_iter()
        .filter_map(|(flag, on)| on.then_some(flag))
        .collect()
    }

    /// Sets them in `p` (defaults where not given).
    pub fn apply(&self, p: &mut pmwork::Params) {
        p.remote_threads = self.remote_threads.unwrap_or(0);
        p.janus_hints = self.janus_hints;
        p.value_bytes = self.value_bytes.unwrap_or(8);
    }
}

/// What `p`'s options add to a run's one-line description (", 2 of them remote clients").
pub fn describe(p: &pmwork::Params) -> String {
    let mut desc = String::new();
    if p.remote_threads > 0 {
        desc += &format!(", {} of them remote clients", p.remote_threads);
    }
    if p.janus_hints {
        desc += ", Janus hints";
    }
    if p.value_bytes != 8 {
        desc += &format!(", {}-byte values", p.value_bytes);
    }
    desc
}
