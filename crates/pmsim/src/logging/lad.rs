//! LAD (Gupta et al., MICRO'19, as the LALEA paper Sec. II-C and IV-B uses it): logless
//! atomic durability in the ADR buffer. A transaction whose write set fits the 16-line ADR
//! buffer (shared with the other transactions in flight) commits without any log: its lines
//! go from the cache to the ADR domain, which drops them at a crash until all have arrived.
//! A transaction that overflows the buffer falls back to undo logging in the controller,
//! issued at the overflow (LALEA Sec. IV-B: "LAD issues log requests when LAD buffer
//! overflows"), with its in-place updates on the commit's critical path.
//!
//! `lad` logs sequentially like REDU; `lalea-lad` (the paper's LALEA-LAD) allocates each
//! log entry and header in the least-loaded bank. The engine is [`RedoEngine`] with
//! [`LogKind::StageOrUndo`].

use super::lalea::BankAwareLog;
use super::redo::{LogKind, MetaPolicy, RedoEngine};
use super::redu::SequentialLog;

/// LAD with its undo log allocated sequentially.
pub fn lad() -> RedoEngine {
    RedoEngine::with_kind(
        "lad",
        Box::<SequentialLog>::default(),
        MetaPolicy::WriteToPm,
        LogKind::StageOrUndo,
    )
}

/// LAD with LALEA's load-aware allocation of its undo log (the paper's LALEA-LAD).
pub fn lalea_lad() -> RedoEngine {
    RedoEngine::with_kind(
        "lalea-lad",
        Box::<BankAwareLog>::default(),
        MetaPolicy::WriteToPm,
        LogKind::StageOrUndo,
    )
}
