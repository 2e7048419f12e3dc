//! Low-level persist barriers: the primitive every other model is built from.
//!
//! `persist_barrier(addr, len)` writes back every line of a range (`clwb`) and waits for the
//! write-backs (`sfence`). Programs in the [`super::Model::Barrier`] model order their updates
//! with it directly (write a node, persist it, then publish it with one 8-byte store and
//! persist that), which is how the Janus/PMWeaver low-level workloads are written.

use std::panic::Location;

use pmtrace::Op;

use crate::heap::{line_of, PmHeap, LINE_BYTES};

impl PmHeap {
    /// `clwb` each line of `[addr, addr+len)`, then `sfence`. With `len == 0`, only the fence.
    #[track_caller]
    pub fn persist_barrier(&mut self, addr: u64, len: u64) {
        let loc = Location::caller();
        if len > 0 {
            let mut l = line_of(addr);
            while l < addr + len {
                self.emit_at(Op::Clwb, loc, l, 0);
                l += LINE_BYTES;
            }
        }
        self.emit_at(Op::Sfence, loc, 0, 1);
    }
}
