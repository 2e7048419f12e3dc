//! Buffered strict network persistence (BSP; PPO Fig. 4c, Sec. V-A, Fig. 8): the client sends
//! a transaction's epochs back to back; the server's remote persist buffer and BROI entry keep
//! their order, and the client checks only that the transaction's last epoch is durable.

use super::NetworkPersistence;
use crate::config::NetworkConfig;

/// Only the commit (`mfence`) waits for a persist acknowledgement; barriers between epochs
/// travel to the server and are enforced there.
#[derive(Clone, Copy, Debug, Default)]
pub struct BspPersistence {
    /// `network.fault = fence-skips-ack`: the commit does not wait either (a deliberate bug).
    skip_ack: bool,
}

impl NetworkPersistence for BspPersistence {
    fn clone_box(&self) -> Box<dyn NetworkPersistence> {
        Box::new(*self)
    }

    fn fence_waits_for_ack(&self, full: bool) -> bool {
        full && !self.skip_ack
    }

    fn configure(&mut self, c: &NetworkConfig) -> Result<(), String> {
        self.skip_ack = super::skips_ack(c)?;
        Ok(())
    }

    fn needs_server_ordering(&self) -> bool {
        true
    }
}
