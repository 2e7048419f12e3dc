//! Network persistence: a client node persisting into this node's PM over RDMA (PPO Sec. III,
//! Fig. 4; Sec. V-A).
//!
//! A client thread writes remote PM with `RdmaPwrite` events: one event per line of an
//! `rdma_pwrite` verb (a trace event carries at most one line of bytes), the verb's data block
//! closed by the thread's next fence, which makes it one barrier region on the server (PPO
//! Sec. IV-A, "the hardware will treat the data block in `rdma_pwrite` as in one barrier
//! region"). The [`nic::Nic`] carries the writes to the server over a link with latency and
//! bandwidth, in order; they enter the server's remote persist buffer and its ordering model
//! there; when they are durable the server's memory controller has the NIC send a persist
//! acknowledgement back.
//!
//! A [`NetworkPersistence`] mode decides when the client waits for that acknowledgement:
//! [`sync::SyncPersistence`] at every barrier (each epoch is sent only after the previous one
//! is known durable: one round trip per epoch), [`bsp::BspPersistence`] only at the
//! transaction's commit (`mfence`), leaving the epochs' order to the server's buffered
//! ordering model (one round trip per transaction).

pub mod bsp;
pub mod nic;
pub mod sync;

pub use bsp::BspPersistence;
pub use nic::Nic;
pub use sync::SyncPersistence;

use crate::config::NetworkConfig;

impl Clone for Box<dyn NetworkPersistence> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// When a client waits for its remote persists (one implementation per file, registered in
/// [`crate::plugins::NETWORKS`]).
pub trait NetworkPersistence: Send {
    /// A copy of this plug-in with its whole state: a run forked at a crash point
    /// ([`crate::system::System::run_to_crash_points`]) goes on with the copy. (`Box::new(self.clone())`.)
    fn clone_box(&self) -> Box<dyn NetworkPersistence>;

    /// Must a client fence (`full`: an `mfence`, the commit of a transaction; otherwise an
    /// `sfence`, a barrier between epochs) wait until the persist acknowledgement of every
    /// remote write the thread sent before it has arrived?
    fn fence_waits_for_ack(&self, full: bool) -> bool;

    /// True when the mode relies on the server to keep a client's epochs in order (the
    /// client sends the next epoch before the previous one is durable), so the server needs a
    /// buffered ordering model with remote persist buffers.
    fn needs_server_ordering(&self) -> bool;

    /// Takes the mode's configuration (`network.fault`); called once before the run. The
    /// default knows no fault.
    fn configure(&mut self, c: &NetworkConfig) -> Result<(), String> {
        match c.fault.as_str() {
            "none" => Ok(()),
            f => Err(format!(
                "network.fault = \"{f}\": network persistence \"{}\" has no such fault",
                c.persistence
            )),
        }
    }
}

/// `network.fault` of the modes whose fences wait for acknowledgements: `fence-skips-ack`
/// (true) or `none`.
fn skips_ack(c: &NetworkConfig) -> Result<bool, String> {
    match c.fault.as_str() {
        "none" => Ok(false),
        "fence-skips-ack" => Ok(true),
        f => Err(format!(
            "network.fault = \"{f}\": network persistence \"{}\" knows only \
             \"fence-skips-ack\"",
            c.persistence
        )),
    }
}
