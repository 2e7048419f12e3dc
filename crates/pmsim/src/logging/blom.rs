//! BLOM (LALEA paper Sec. III-B): log metadata buffered in the ADR domain. A record's header
//! stays in the ADR buffer from the moment its entries are durable until its transaction's
//! in-place updates are durable, so it is never written to PM unless power fails (the ADR
//! flush writes every buffered header). The buffered header takes WPQ entries (the WPQ is the
//! ADR buffer), which the controller then has fewer of for writes; when the buffer has no
//! entry for it beside one left for writes, the header is written to PM as REDU's is ("when
//! the ADR buffer is used up, the memory controller writes the buffered metadata block of a
//! selected transaction to PM": pmlab selects the arriving one). The commit no longer waits
//! for a header write: the intra-record ordering is gone.
//!
//! BLOM applies to REDU's sequential log (`blom`) and to LALEA's load-aware log
//! (`lalea+blom`); the engine is [`RedoEngine`] with [`MetaPolicy::BufferInAdr`].

use super::lalea::BankAwareLog;
use super::redo::{MetaPolicy, RedoEngine};
use super::redu::SequentialLog;

/// BLOM on REDU.
pub fn blom() -> RedoEngine {
    RedoEngine::new(
        "blom",
        Box::<SequentialLog>::default(),
        MetaPolicy::BufferInAdr,
    )
}

/// BLOM on LALEA (the paper's LALEA+BLOM).
pub fn lalea_blom() -> RedoEngine {
    RedoEngine::new(
        "lalea+blom",
        Box::<BankAwareLog>::default(),
        MetaPolicy::BufferInAdr,
    )
}
