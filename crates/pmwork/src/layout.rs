//! Where things live in the simulated address space.
//!
//! ```text
//! PM_BASE                      root table: one 64-byte root slot per thread
//!                                 word 0: ROOT_MAGIC once the thread's setup persisted
//!                                 words 1-7: the workload's root fields
//! span(t) = PM_BASE + 64 KiB + t * THREAD_SPAN + stagger(t)
//!                              (THREAD_SPAN = 4 GiB; stagger(t): a hashed line offset < 32 KiB)
//!   span(t) + 0                log area (undo / redo log of thread t), LOG_BYTES
//!   span(t) + LOG_BYTES        allocator header (bump pointer, free-list heads)
//!   heap_start(t) .. span end  thread t's persistent heap (alloc.rs)
//! DRAM_BASE + t * DRAM_SPAN    thread t's volatile data: request buffer, scratch
//! ```
//!
//! Threads own disjoint partitions (their own structure, log and heap): the generator can
//! interleave them freely, and a crash oracle can judge each thread on its own.

use crate::heap::{DRAM_BASE, PM_BASE};

/// Value of a root slot's word 0 once the thread's initial state is persistent.
pub const ROOT_MAGIC: u64 = 0x504d_574f_524b_0101;

/// Bytes of PM each thread's partition spans (address space, not memory).
pub const THREAD_SPAN: u64 = 4 << 30;

/// Bytes reserved for a thread's transaction log.
pub const LOG_BYTES: u64 = 64 << 20;

/// Bytes of the allocator header.
pub const ALLOC_HEADER_BYTES: u64 = 4096;

/// Bytes of DRAM address space per thread.
pub const DRAM_SPAN: u64 = 1 << 30;

/// The root slot of thread `t` (64 bytes, line-aligned).
#[inline]
pub fn root_slot(t: u16) -> u64 {
    PM_BASE + u64::from(t) * 64
}

/// Address of word `i` (1..8) of thread `t`'s root slot.
#[inline]
pub fn root_word(t: u16, i: u64) -> u64 {
    debug_assert!((1..8).contains(&i));
    root_slot(t) + i * 8
}

/// How far thread `t`'s partition starts past its 4 GiB boundary: a hashed whole number of
/// lines below 32 KiB (0 for thread 0). Without it every thread's log and heap would start at
/// the same offset from a 4 GiB boundary, so under any bank interleaving finer than that the
/// threads' sequential log writes would march through the banks in lock step and collide (a
/// layout no allocator produces: per-thread logs land wherever the pool has room).
#[inline]
pub fn stagger(t: u16) -> u64 {
    ((u64::from(t).wrapping_mul(0x9e37_79b9_7f4a_7c15)) >> 55) * 64
}

/// Start of thread `t`'s partition.
#[inline]
pub fn span(t: u16) -> u64 {
    PM_BASE + (64 << 10) + u64::from(t) * THREAD_SPAN + stagger(t)
}

/// Start of thread `t`'s log area.
#[inline]
pub fn log_base(t: u16) -> u64 {
    span(t)
}

/// Address of thread `t`'s allocator header.
#[inline]
pub fn alloc_header(t: u16) -> u64 {
    span(t) + LOG_BYTES
}

/// First byte of thread `t`'s persistent heap.
#[inline]
pub fn heap_start(t: u16) -> u64 {
    span(t) + LOG_BYTES + ALLOC_HEADER_BYTES
}

/// One past the last byte of thread `t`'s persistent heap.
#[inline]
pub fn heap_end(t: u16) -> u64 {
    span(t) + THREAD_SPAN
}

/// Thread `t`'s request buffer in DRAM (where an operation's inputs arrive).
#[inline]
pub fn request_buffer(t: u16) -> u64 {
    DRAM_BASE + u64::from(t) * DRAM_SPAN
}

/// Thread `t`'s DRAM scratch area (spilled locals, search paths), after the request buffer.
#[inline]
pub fn scratch(t: u16) -> u64 {
    request_buffer(t) + 4096
}
