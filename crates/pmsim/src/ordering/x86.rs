//! x86 ordering: clwb/ntstore persists flow straight to the controller; sfence/mfence stall the
//! thread until they are acknowledged (Intel SDM, "SFENCE"; PMWeaver Fig. 6).

use super::{FenceAction, OrderingModel, Persist};
use crate::memsys::MemoryView;
use crate::time::Ps;

/// Synchronous x86 persist ordering.
#[derive(Clone, Copy, Debug, Default)]
pub struct X86Ordering;

impl OrderingModel for X86Ordering {
    fn clone_box(&self) -> Box<dyn OrderingModel> {
        Box::new(*self)
    }

    fn name(&self) -> &'static str {
        "x86"
    }

    fn on_persist(
        &mut self,
        p: Persist,
        _now: Ps,
        _mem: &dyn MemoryView,
        release: &mut Vec<Persist>,
    ) {
        release.push(p);
    }

    fn on_fence(&mut self, _thread: u16) -> FenceAction {
        FenceAction::StallUntilDrained
    }

    fn on_persist_ack(
        &mut self,
        _id: u64,
        _now: Ps,
        _mem: &dyn MemoryView,
        _release: &mut Vec<Persist>,
    ) {
    }

    fn releases_at_once(&self) -> bool {
        true
    }
}
