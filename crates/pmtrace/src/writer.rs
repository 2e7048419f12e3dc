//! [`PmtWriter`]: streams [`TraceEvent`]s into a `.pmt` file.
//!
//! The byte layout, reproduced from `crates/pmtrace/FORMAT.md`:
//!
#![doc = include_str!("../FORMAT.md")]

use std::io::Write;

use crate::error::{ErrorKind, Location, TraceError};
use crate::header::TraceHeader;
use crate::varint::{self, zigzag};
use crate::{EventItem, Op, TraceEvent, MAX_VALUE_BYTES};

/// Frame kind byte of a block.
pub(crate) const KIND_BLOCK: u8 = 0x42;
/// Frame kind byte of the trailer.
pub(crate) const KIND_TRAILER: u8 = 0x45;
/// Bytes of a block frame before its payload (kind, length, count, CRC).
pub(crate) const BLOCK_HEADER_BYTES: usize = 13;
/// Bytes of the trailer frame, kind included.
pub(crate) const TRAILER_BYTES: usize = 25;

/// Largest block payload a reader accepts (and a writer may be configured to produce).
pub const MAX_BLOCK_PAYLOAD: usize = 1 << 20;
/// Block payload size writers aim for by default.
pub const DEFAULT_BLOCK_PAYLOAD: usize = 64 * 1024;
/// Smallest block payload a writer can be configured to aim for.
pub const MIN_BLOCK_PAYLOAD: usize = 256;

/// Tag bit: an explicit thread varint follows.
pub(crate) const TAG_THREAD: u8 = 0x10;
/// Tag value-mode bits.
pub(crate) const TAG_VALUE_MASK: u8 = 0x60;
/// Value mode 1: value of exactly `size` bytes.
pub(crate) const TAG_VALUE_SIZED: u8 = 0x20;
/// Value mode 2: explicit length byte.
pub(crate) const TAG_VALUE_EXPLICIT: u8 = 0x40;
/// Reserved tag bit.
pub(crate) const TAG_RESERVED: u8 = 0x80;
/// Op code bits.
pub(crate) const TAG_OP_MASK: u8 = 0x0f;

/// Upper bound of one encoded record (tag, thread, pc, addr, size, gap, length, value).
pub(crate) const MAX_RECORD_BYTES: usize =
    1 + 3 + 2 * varint::MAX_VARINT_BYTES + 2 + 5 + 1 + MAX_VALUE_BYTES;

/// Per-thread delta state, shared with the reader.
#[derive(Clone, Copy, Default)]
pub(crate) struct ThreadState {
    pub(crate) pc: u64,
    pub(crate) addr: u64,
}

/// Writes a `.pmt` trace to any [`Write`].
///
/// Events are validated ([`TraceEvent::check`]), encoded into a block buffer and written one
/// block at a time; memory use is one block regardless of trace length. Call
/// [`finish`](PmtWriter::finish) at the end: it writes the last block and the trailer. A writer
/// dropped without `finish` leaves a file that readers reject as truncated.
///
/// The writer does its own block buffering, so wrapping `w` in a `BufWriter` is unnecessary.
pub struct PmtWriter<W: Write> {
    out: W,
    header: TraceHeader,
    /// Block frame being built: 13 bytes reserved for the frame header, then the payload.
    block: Vec<u8>,
    block_records: u32,
    max_payload: usize,
    state: Vec<ThreadState>,
    prev_thread: u16,
    events: u64,
    blocks: u64,
    bytes_written: u64,
    chain: crc32fast::Hasher,
    failed: bool,
}

impl<W: Write> PmtWriter<W> {
    /// Validates `header`, writes it to `w` and returns a writer with the default block size.
    pub fn new(w: W, header: TraceHeader) -> Result<Self, TraceError> {
        Self::with_block_payload(w, header, DEFAULT_BLOCK_PAYLOAD)
    }

    /// As [`new`](PmtWriter::new), with blocks of at most `max_payload` payload bytes
    /// (clamped to [`MIN_BLOCK_PAYLOAD`]`..=`[`MAX_BLOCK_PAYLOAD`]). Small blocks are useful for
    /// tests.
    pub fn with_block_payload(
        mut w: W,
        header: TraceHeader,
        max_payload: usize,
    ) -> Result<Self, TraceError> {
        header
            .validate()
            .map_err(|k| TraceError::new(k, Location::Unknown))?;
        let bytes = header.encode();
        w.write_all(&bytes)
            .map_err(|e| TraceError::io("writing the header", e, Location::byte(0)))?;
        let max_payload = max_payload.clamp(MIN_BLOCK_PAYLOAD, MAX_BLOCK_PAYLOAD);
        let mut block = Vec::with_capacity(BLOCK_HEADER_BYTES + max_payload);
        block.resize(BLOCK_HEADER_BYTES, 0);
        Ok(PmtWriter {
            out: w,
            state: vec![ThreadState::default(); header.threads as usize],
            header,
            block,
            block_records: 0,
            max_payload,
            prev_thread: 0,
            events: 0,
            blocks: 0,
            bytes_written: bytes.len() as u64,
            chain: crc32fast::Hasher::new(),
            failed: false,
        })
    }

    /// The header being written.
    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    /// Number of events accepted so far.
    pub fn events_written(&self) -> u64 {
        self.events
    }

    /// Bytes handed to the underlying writer so far (header and complete blocks).
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// Validates and appends one event. On error nothing is written for this event; an invalid
    /// event leaves the writer usable, an I/O error makes later calls fail with
    /// [`ErrorKind::WriterFailed`].
    pub fn write(&mut self, ev: &TraceEvent) -> Result<(), TraceError> {
        if self.failed {
            return Err(TraceError::new(
                ErrorKind::WriterFailed,
                Location::Event(self.events),
            ));
        }
        ev.check(self.header.threads)
            .map_err(|k| TraceError::new(k, Location::Event(self.events)))?;
        // Flush first if a worst-case record might not fit (wastes < MAX_RECORD_BYTES per block
        // and lets the record be encoded once, against the state it will be decoded with).
        if self.block.len() - BLOCK_HEADER_BYTES + MAX_RECORD_BYTES > self.max_payload {
            self.flush_block()?;
        }

        let mut rec = [0u8; MAX_RECORD_BYTES];
        let mut p = 1;
        let mut tag = ev.op as u8;
        let t = ev.thread;
        if t != self.prev_thread {
            tag |= TAG_THREAD;
            p = varint::put(&mut rec, p, t as u64);
            self.prev_thread = t;
        }
        // `check` guaranteed t < threads == state.len().
        let st = &mut self.state[t as usize];
        p = varint::put(&mut rec, p, zigzag(ev.pc.wrapping_sub(st.pc) as i64));
        st.pc = ev.pc;
        if ev.op.has_address() {
            p = varint::put(&mut rec, p, zigzag(ev.addr.wrapping_sub(st.addr) as i64));
            st.addr = ev.addr;
            p = varint::put(&mut rec, p, ev.size as u64);
        } else if ev.op == Op::Await {
            // The packed edge, absolute (it is no address: the delta state stays).
            p = varint::put(&mut rec, p, ev.addr);
        }
        p = varint::put(&mut rec, p, ev.gap as u64);
        let vlen = ev.value_len as usize;
        if vlen > 0 {
            if vlen == ev.size as usize {
                tag |= TAG_VALUE_SIZED;
            } else {
                tag |= TAG_VALUE_EXPLICIT;
                rec[p] = ev.value_len;
                p += 1;
            }
            rec[p..p + vlen].copy_from_slice(&ev.value[..vlen]);
            p += vlen;
        }
        rec[0] = tag;
        self.block.extend_from_slice(&rec[..p]);
        self.block_records += 1;
        self.events += 1;
        Ok(())
    }

    /// Writes the current block (if it holds records) and resets the delta state.
    fn flush_block(&mut self) -> Result<(), TraceError> {
        if self.block_records == 0 {
            return Ok(());
        }
        let payload_len = (self.block.len() - BLOCK_HEADER_BYTES) as u32;
        let crc = crc32fast::hash(&self.block[BLOCK_HEADER_BYTES..]);
        self.block[0] = KIND_BLOCK;
        self.block[1..5].copy_from_slice(&payload_len.to_le_bytes());
        self.block[5..9].copy_from_slice(&self.block_records.to_le_bytes());
        self.block[9..13].copy_from_slice(&crc.to_le_bytes());
        self.chain.update(&self.block[1..13]);
        if let Err(e) = self.out.write_all(&self.block) {
            self.failed = true;
            return Err(TraceError::io(
                format!("writing block {}", self.blocks),
                e,
                Location::byte(self.bytes_written),
            ));
        }
        self.bytes_written += self.block.len() as u64;
        self.blocks += 1;
        self.block.truncate(BLOCK_HEADER_BYTES);
        self.block_records = 0;
        self.prev_thread = 0;
        self.state.fill(ThreadState::default());
        Ok(())
    }

    /// Writes the last block and the trailer, flushes, and returns the underlying writer.
    pub fn finish(mut self) -> Result<W, TraceError> {
        if self.failed {
            return Err(TraceError::new(
                ErrorKind::WriterFailed,
                Location::Event(self.events),
            ));
        }
        self.flush_block()?;
        let mut t = [0u8; TRAILER_BYTES];
        t[0] = KIND_TRAILER;
        t[1..9].copy_from_slice(&self.events.to_le_bytes());
        t[9..17].copy_from_slice(&self.blocks.to_le_bytes());
        t[17..21].copy_from_slice(&self.chain.clone().finalize().to_le_bytes());
        let crc = crc32fast::hash(&t[..21]);
        t[21..25].copy_from_slice(&crc.to_le_bytes());
        let at = Location::byte(self.bytes_written);
        self.out
            .write_all(&t)
            .map_err(|e| TraceError::io("writing the trailer", e, at.clone()))?;
        self.out
            .flush()
            .map_err(|e| TraceError::io("flushing the output", e, at))?;
        Ok(self.out)
    }
}

/// Writes a whole trace: `header`, then every event of `events` (stopping at the first error an
/// event source reports), then the trailer. Returns the writer and the number of events written.
/// `events` may yield `TraceEvent`, `&TraceEvent` or `Result<TraceEvent, TraceError>`.
///
/// Handy for conversions: `write_pmt(&src.header().clone(), &mut src, file)` turns any
/// [`TraceSource`](crate::TraceSource) into a `.pmt` file.
pub fn write_pmt<W, I>(header: &TraceHeader, events: I, w: W) -> Result<(W, u64), TraceError>
where
    W: Write,
    I: IntoIterator,
    I::Item: EventItem,
{
    let mut writer = PmtWriter::new(w, header.clone())?;
    for item in events {
        writer.write(&item.into_event()?)?;
    }
    let n = writer.events_written();
    Ok((writer.finish()?, n))
}
