//! The persistent allocator (PMDK's `pmemobj_tx_alloc` / `TX_NEW` / `TX_FREE` role).
//!
//! Each thread owns a heap (see [`crate::layout`]) with a persistent header: a bump pointer
//! and one free list per power-of-two size class (32 B .. 64 MiB, 16-byte block header
//! included). A block is `[tag, link, payload...]`: `tag` says allocated or free and the
//! class; `link` chains free blocks. All allocator metadata is read and written through the
//! [`Tx`] like any other data, so it is exactly as crash-consistent as the model makes it:
//!
//! * undo: the bump pointer, list heads and block headers are `add`ed before they change, so a
//!   rolled-back transaction also rolls back its allocations; the new block is marked fresh
//!   (written without snapshots, flushed at commit). Frees are deferred to commit, as PMDK
//!   does, so a block freed and reused in one transaction cannot lose its old contents.
//! * redo: metadata updates go through the redo log; frees deferred to commit.
//! * hwtx: plain stores inside the hardware transaction; frees deferred to `TxEnd`.
//! * barrier: each metadata update is persisted before the next step (pop/bump, persist;
//!   tag, persist). A crash in between leaks the block, never corrupts a list.
//!
//! [`check_heap`] verifies the invariants an oracle relies on: free lists are acyclic, inside
//! the heap and hold only free-tagged blocks; every block a structure reaches is allocated,
//! reached once, and not on a free list. Under the transactional models it also walks the heap
//! and rejects leaks (they roll interrupted allocations back); under persist barriers a crash
//! between an allocation's steps leaks a block, which is allowed (no recovery-time garbage
//! collection).

use std::collections::HashSet;

use crate::layout;
use crate::models::{Model, Tx};

/// Bytes of the block header before each payload.
pub const BLOCK_HEADER: u64 = 16;
/// Smallest block (header included).
pub const MIN_BLOCK: u64 = 32;
/// Number of size classes (32 B << c for c in 0..NCLASS: up to 64 MiB).
pub const NCLASS: usize = 22;
/// Tag of an allocated block (low byte: class).
pub const ALLOC_TAG: u64 = 0xa110_ca7e_d000_0000;
/// Tag of a free block (low byte: class).
pub const FREE_TAG: u64 = 0xf4ee_b10c_0000_0000;
/// Tag of a static block (never freed; word 1 holds its size).
pub const STATIC_TAG: u64 = 0x57a7_1c00_0000_0000;
const TAG_MASK: u64 = !0xff;
/// Offset of a static block's payload from its header (one line, so arrays stay aligned).
pub const STATIC_HEADER: u64 = 64;

/// Block size of class `c`.
#[inline]
pub fn class_bytes(c: usize) -> u64 {
    MIN_BLOCK << c
}

/// The smallest class whose blocks hold `payload` bytes, if any.
#[inline]
pub fn class_for(payload: u64) -> Option<usize> {
    let need = payload + BLOCK_HEADER;
    (0..NCLASS).find(|&c| class_bytes(c) >= need)
}

#[inline]
fn bump_addr(t: u16) -> u64 {
    layout::alloc_header(t)
}

#[inline]
fn head_addr(t: u16, c: usize) -> u64 {
    layout::alloc_header(t) + 8 + c as u64 * 8
}

impl Tx {
    fn barrier_mode(&self) -> bool {
        self.model() == Model::Barrier && !self.in_setup()
    }

    /// Allocates a block with at least `size` payload bytes and returns the payload address.
    /// The payload is *not* zeroed when the block is reused: initialise every field.
    ///
    /// # Panics
    /// If `size` exceeds the largest class (use [`Tx::alloc_static`]) or the thread's heap is
    /// exhausted.
    pub fn alloc(&mut self, size: u64) -> u64 {
        let t = self.thread();
        let c = class_for(size)
            .unwrap_or_else(|| panic!("alloc of {size} bytes exceeds the largest size class"));
        let cb = class_bytes(c);
        let ha = head_addr(t, c);
        let head = self.read(ha);
        let block = if head != 0 {
            let next = self.read(head + 8);
            self.add(ha, 8);
            self.write(ha, next);
            if self.barrier_mode() {
                self.persist(ha, 8);
            }
            self.add(head, BLOCK_HEADER);
            head
        } else {
            let ba = bump_addr(t);
            let bump = self.read(ba);
            let align = cb.min(64);
            let block = bump.div_ceil(align) * align;
            assert!(
                block + cb <= layout::heap_end(t),
                "thread {t}: persistent heap exhausted"
            );
            self.add(ba, 8);
            self.write(ba, block + cb);
            if self.barrier_mode() {
                self.persist(ba, 8);
            }
            block
        };
        // The transaction flushes the object it asked for (PMDK's tx_alloc registers the
        // object's own range), not the rest of the power-of-two block.
        self.mark_fresh(block, BLOCK_HEADER + size.next_multiple_of(8));
        self.write(block, ALLOC_TAG | c as u64);
        self.write(block + 8, 0);
        if self.barrier_mode() {
            self.persist(block, BLOCK_HEADER);
        }
        block + BLOCK_HEADER
    }

    /// Frees the block whose payload is at `ptr`. Inside a transaction the free happens at
    /// commit; under the barrier model (and in setup) immediately, persisted.
    pub fn free(&mut self, ptr: u64) {
        let ts = self.ts();
        if ts.active && !ts.setup && self.model() != Model::Barrier {
            self.ts().frees.push(ptr);
        } else {
            self.free_now(ptr);
        }
    }

    fn free_now(&mut self, ptr: u64) {
        let t = self.thread();
        let block = ptr - BLOCK_HEADER;
        let tag = self.read(block);
        assert_eq!(
            tag & TAG_MASK,
            ALLOC_TAG,
            "free of {ptr:#x}: not an allocated block (tag {tag:#x})"
        );
        let c = (tag & 0xff) as usize;
        let ha = head_addr(t, c);
        let head = self.read(ha);
        self.add(block, BLOCK_HEADER);
        self.write(block, FREE_TAG | c as u64);
        self.write(block + 8, head);
        if self.barrier_mode() {
            self.persist(block, BLOCK_HEADER);
        }
        self.add(ha, 8);
        self.write(ha, block);
        if self.barrier_mode() {
            self.persist(ha, 8);
        }
    }

    pub(crate) fn run_deferred_frees(&mut self) {
        let frees = std::mem::take(&mut self.ts().frees);
        for p in frees {
            self.free_now(p);
        }
    }

    /// Allocates `bytes` of never-freed, line-aligned storage (tables, arrays) and returns
    /// its address. Fresh memory reads as zero.
    pub fn alloc_static(&mut self, bytes: u64) -> u64 {
        let t = self.thread();
        let ba = bump_addr(t);
        let bump = self.read(ba);
        let block = bump.div_ceil(64) * 64;
        let end = (block + STATIC_HEADER + bytes).div_ceil(64) * 64;
        assert!(
            end <= layout::heap_end(t),
            "thread {t}: persistent heap exhausted"
        );
        self.add(ba, 8);
        self.write(ba, end);
        if self.barrier_mode() {
            self.persist(ba, 8);
        }
        self.mark_fresh(block, end - block);
        self.write(block, STATIC_TAG);
        self.write(block + 8, bytes);
        if self.barrier_mode() {
            self.persist(block, BLOCK_HEADER);
        }
        block + STATIC_HEADER
    }

    /// Initialises thread `t`'s allocator header (called in setup, before any allocation).
    pub(crate) fn init_allocator(&mut self) {
        let t = self.thread();
        self.write(bump_addr(t), layout::heap_start(t));
    }
}

/// What [`check_heap`] saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeapStats {
    /// Bytes between the heap start and the bump pointer.
    pub used_bytes: u64,
    /// Blocks on free lists.
    pub free_blocks: u64,
    /// Reachable blocks checked.
    pub reachable_blocks: u64,
}

/// Checks thread `t`'s allocator metadata and that every payload in `reachable` is a
/// distinct allocated block not on a free list. Reads through `tx` (events are discarded in
/// recovery contexts).
pub fn check_heap(tx: &mut Tx, t: u16, reachable: &[u64]) -> Result<HeapStats, String> {
    let start = layout::heap_start(t);
    let end = layout::heap_end(t);
    let bump = tx.read(bump_addr(t));
    if bump < start || bump > end {
        return Err(format!(
            "thread {t}: allocator bump pointer {bump:#x} outside the heap"
        ));
    }
    let max_blocks = (bump - start) / MIN_BLOCK + 1;
    let mut free = HashSet::new();
    for c in 0..NCLASS {
        let mut b = tx.read(head_addr(t, c));
        let mut steps = 0u64;
        while b != 0 {
            if b < start || b + class_bytes(c) > bump || !b.is_multiple_of(16) {
                return Err(format!(
                    "thread {t}: free list {c} holds {b:#x}, outside the allocated heap"
                ));
            }
            let tag = tx.read(b);
            if tag != FREE_TAG | c as u64 {
                return Err(format!(
                    "thread {t}: block {b:#x} on free list {c} has tag {tag:#x}"
                ));
            }
            if !free.insert(b) {
                return Err(format!(
                    "thread {t}: free list {c} revisits {b:#x} (cycle or cross-link)"
                ));
            }
            steps += 1;
            if steps > max_blocks {
                return Err(format!("thread {t}: free list {c} does not end"));
            }
            b = tx.read(b + 8);
        }
    }
    let mut seen = HashSet::new();
    for &p in reachable {
        let block = p.wrapping_sub(BLOCK_HEADER);
        if block < start || p >= bump {
            return Err(format!(
                "thread {t}: reachable object {p:#x} outside the allocated heap"
            ));
        }
        let tag = tx.read(block);
        if tag & TAG_MASK != ALLOC_TAG || (tag & 0xff) as usize >= NCLASS {
            return Err(format!(
                "thread {t}: reachable object {p:#x} is not an allocated block (tag {tag:#x})"
            ));
        }
        if free.contains(&block) {
            return Err(format!(
                "thread {t}: reachable object {p:#x} is on a free list"
            ));
        }
        if !seen.insert(p) {
            return Err(format!("thread {t}: object {p:#x} is reachable twice"));
        }
    }
    if tx.model() != Model::Barrier {
        // Transactional models roll an interrupted allocation or free back with its operation,
        // so no block may leak: walk the heap and require every allocated block to be reached
        // and every free block to be on a list. (Under persist barriers a crash between the
        // steps of an allocation legitimately leaks one block.)
        let mut pos = start;
        while pos < bump {
            let tag = tx.read(pos);
            if tag == 0 {
                pos += 16; // alignment gap (blocks are at least 32-byte aligned)
                continue;
            }
            let c = (tag & 0xff) as usize;
            match tag & TAG_MASK {
                ALLOC_TAG if c < NCLASS => {
                    if !seen.contains(&(pos + BLOCK_HEADER)) {
                        return Err(format!(
                            "thread {t}: allocated block {pos:#x} is not reachable (leaked)"
                        ));
                    }
                    pos += class_bytes(c);
                }
                FREE_TAG if c < NCLASS => {
                    if !free.contains(&pos) {
                        return Err(format!(
                            "thread {t}: free block {pos:#x} is on no free list (leaked)"
                        ));
                    }
                    pos += class_bytes(c);
                }
                STATIC_TAG => {
                    let bytes = tx.read(pos + 8);
                    pos = (pos + STATIC_HEADER + bytes).div_ceil(64) * 64;
                }
                _ => {
                    return Err(format!(
                        "thread {t}: heap walk found tag {tag:#x} at {pos:#x}, not a block"
                    ))
                }
            }
        }
    }
    Ok(HeapStats {
        used_bytes: bump - start,
        free_blocks: free.len() as u64,
        reachable_blocks: seen.len() as u64,
    })
}
