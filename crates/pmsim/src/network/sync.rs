//! Synchronous network persistence (PPO Fig. 4b, after Talpey's RDMA extensions for remote
//! persistent memory \[48\]): the client verifies that each epoch is durable before it sends the
//! next, so every barrier costs a network round trip.

use super::NetworkPersistence;
use crate::config::NetworkConfig;

/// Every client fence waits for the persist acknowledgement of the epoch before it.
#[derive(Clone, Copy, Debug, Default)]
pub struct SyncPersistence {
    /// `network.fault = fence-skips-ack`: no fence waits (a deliberate bug).
    skip_ack: bool,
}

impl NetworkPersistence for SyncPersistence {
    fn clone_box(&self) -> Box<dyn NetworkPersistence> {
        Box::new(*self)
    }

    fn fence_waits_for_ack(&self, _full: bool) -> bool {
        !self.skip_ack
    }

    fn configure(&mut self, c: &NetworkConfig) -> Result<(), String> {
        self.skip_ack = super::skips_ack(c)?;
        Ok(())
    }

    fn needs_server_ordering(&self) -> bool {
        false
    }
}
