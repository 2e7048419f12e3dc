//! Synchronous network persistence (PPO Fig. 4b, after Talpey's RDMA extensions for remote
//! persistent memory \[48\]): the client verifies that each epoch is durable before it sends the
//! next, so every barrier costs a network round trip.

use super::NetworkPersistence;

/// Every client fence waits for the persist acknowledgement of the epoch before it.
#[derive(Clone, Copy, Debug, Default)]
pub struct SyncPersistence;

impl NetworkPersistence for SyncPersistence {
    fn fence_waits_for_ack(&self, _full: bool) -> bool {
        true
    }

    fn needs_server_ordering(&self) -> bool {
        false
    }
}
