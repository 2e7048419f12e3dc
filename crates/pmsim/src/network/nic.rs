//! The RDMA NIC pair between a client node and this (server) node: one link each way with a
//! one-way latency and a bandwidth; messages on a link leave in order, each after the one
//! before it has been serialised.

use crate::config::NetworkConfig;
use crate::time::{ns_to_ps, Ps};

/// The client→server link (writes) and the server→client link (acknowledgements).
#[derive(Clone, Debug)]
pub struct Nic {
    latency: Ps,
    /// Picoseconds per byte on the wire, times 1024 (so sub-picosecond rates keep precision).
    ps_per_byte_x1024: u64,
    header_bytes: u64,
    ack_bytes: u64,
    /// When the client→server link is free again.
    up_free: Ps,
    /// Time the client→server link spent serialising.
    busy: Ps,
    /// Bytes sent client→server, headers included.
    bytes: u64,
}

impl Nic {
    /// A NIC pair with `cfg`'s latency and bandwidth (validated).
    pub fn new(cfg: &NetworkConfig) -> Nic {
        Nic {
            latency: ns_to_ps(cfg.latency_ns),
            ps_per_byte_x1024: (8000.0 * 1024.0 / cfg.bandwidth_gbps).round() as u64,
            header_bytes: cfg.header_bytes as u64,
            ack_bytes: cfg.ack_bytes as u64,
            up_free: 0,
            busy: 0,
            bytes: 0,
        }
    }

    fn wire(&self, bytes: u64) -> Ps {
        (bytes * self.ps_per_byte_x1024).div_ceil(1024)
    }

    /// The client hands `bytes` of payload to its NIC at `at` (`first`: the first packet of a
    /// verb, which carries the transport headers); returns when the last byte reaches the
    /// server.
    pub fn send(&mut self, at: Ps, bytes: u64, first: bool) -> Ps {
        let total = bytes + if first { self.header_bytes } else { 0 };
        let start = at.max(self.up_free);
        let wire = self.wire(total);
        self.up_free = start + wire;
        self.busy += wire;
        self.bytes += total;
        self.up_free + self.latency
    }

    /// When a message sent at `at` behind everything already on the client→server link (a
    /// barrier closing a verb) reaches the server.
    pub fn behind_sent(&self, at: Ps) -> Ps {
        at.max(self.up_free) + self.latency
    }

    /// When the persist acknowledgement the server's NIC sends at `at` reaches the client.
    pub fn ack_arrival(&self, at: Ps) -> Ps {
        at + self.wire(self.ack_bytes) + self.latency
    }

    /// Time the client→server link spent serialising.
    pub fn busy(&self) -> Ps {
        self.busy
    }

    /// Bytes sent client→server, transport headers included.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The one-way latency.
    pub fn latency(&self) -> Ps {
        self.latency
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nic() -> Nic {
        Nic::new(&NetworkConfig {
            latency_ns: 1000.0,
            bandwidth_gbps: 64.0,
            header_bytes: 64,
            ack_bytes: 0,
            ..NetworkConfig::default()
        })
    }

    #[test]
    fn messages_serialise_in_order_then_take_the_latency() {
        let mut n = nic();
        // 64 Gb/s = 8 bytes/ns: 64 B payload + 64 B header = 16 ns on the wire.
        assert_eq!(n.send(0, 64, true), 16_000 + 1_000_000);
        // Sent at once after: waits for the link, no header.
        assert_eq!(n.send(0, 64, false), 24_000 + 1_000_000);
        // Sent later: the link is free.
        assert_eq!(n.send(100_000, 64, false), 108_000 + 1_000_000);
        assert_eq!(n.behind_sent(0), 108_000 + 1_000_000);
        assert_eq!(n.ack_arrival(5_000), 5_000 + 1_000_000);
        assert_eq!(n.busy(), 32_000);
        assert_eq!(n.bytes(), 256);
    }
}
