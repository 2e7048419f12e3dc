//! Hardware transactions: `TxBegin` / `TxEnd` markers around plain loads and stores.
//!
//! The software writes no log and issues no flush or fence: a hardware logging scheme (ATOM,
//! REDU, LALEA, BLOM — plug-ins of the simulator; LAD is not built yet) captures the transaction's stores,
//! makes them durable atomically and stalls the core at `TxEnd` until the log is durable.
//! Recovery is therefore the scheme's job, not this crate's: an oracle over an `HwTx`
//! workload expects the image the scheme left *after* its recovery, and checks that every
//! transaction is all-or-nothing and every completed one present. The reference
//! persistence model ([`crate::persist_model`]) offers an ideal atomic scheme for tests.

use super::Tx;

impl Tx {
    pub(super) fn hw_begin(&mut self) {
        self.heap().tx_begin_marker();
    }

    pub(super) fn hw_commit(&mut self) {
        self.heap().tx_end_marker();
    }
}
