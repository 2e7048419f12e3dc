//! [`PmtReader`]: streams [`TraceEvent`]s out of a `.pmt` file, verifying every checksum.
//!
//! Memory use is one block buffer (at most [`MAX_BLOCK_PAYLOAD`]) plus 16 bytes per declared
//! thread, independent of trace length. Each block's CRC is checked before any of its events is
//! returned; the trailer (event count, block count, chain CRC) is checked when the last block has
//! been consumed, and the iterator only ends (`None`) after a valid trailer. A file cut short
//! anywhere yields an error, never a silent end.

use std::io::Read;

use crate::error::{ErrorKind, Location, TraceError};
use crate::header::{read_up_to, TraceHeader};
use crate::varint::{self, unzigzag, VarintError};
use crate::writer::{
    ThreadState, KIND_BLOCK, KIND_TRAILER, MAX_BLOCK_PAYLOAD, TAG_OP_MASK, TAG_RESERVED,
    TAG_THREAD, TAG_VALUE_EXPLICIT, TAG_VALUE_MASK, TAG_VALUE_SIZED, TRAILER_BYTES,
};
use crate::{Op, TraceEvent, MAX_ACCESS_BYTES, MAX_VALUE_BYTES};

/// Reads a `.pmt` trace from any [`Read`].
///
/// The reader issues large reads (one per block payload) plus a few small ones per block; pass a
/// `BufReader` if `r` is slow for small reads. After an error the reader is finished: further
/// calls return `Ok(None)` (and the iterator `None`).
pub struct PmtReader<R: Read> {
    r: R,
    header: TraceHeader,
    /// Current block payload.
    buf: Vec<u8>,
    /// Decode position in `buf`.
    pos: usize,
    /// Records of the current block not yet decoded.
    remaining: u32,
    /// Index of the current block within it (for error locations).
    record_in_block: u32,
    /// Index of the current block (blocks read so far minus one while inside a block).
    block_index: u64,
    /// File offset of `buf[0]`.
    payload_offset: u64,
    /// File offset of the next unread byte of `r`.
    offset: u64,
    blocks: u64,
    events: u64,
    chain: crc32fast::Hasher,
    state: Vec<ThreadState>,
    prev_thread: u16,
    done: bool,
}

impl<R: Read> PmtReader<R> {
    /// Reads and verifies the header.
    pub fn new(mut r: R) -> Result<Self, TraceError> {
        let (header, offset) = TraceHeader::decode(&mut r)?;
        Ok(PmtReader {
            r,
            state: vec![ThreadState::default(); header.threads as usize],
            header,
            buf: Vec::new(),
            pos: 0,
            remaining: 0,
            record_in_block: 0,
            block_index: 0,
            payload_offset: 0,
            offset,
            blocks: 0,
            events: 0,
            chain: crc32fast::Hasher::new(),
            prev_thread: 0,
            done: false,
        })
    }

    /// The trace's header.
    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    /// Events returned so far.
    pub fn events_read(&self) -> u64 {
        self.events
    }

    /// Bytes consumed from the input so far.
    pub fn bytes_read(&self) -> u64 {
        self.offset
    }

    /// The next event; `Ok(None)` once the trailer has been verified.
    #[inline]
    pub fn next_event(&mut self) -> Result<Option<TraceEvent>, TraceError> {
        if self.remaining == 0 {
            if self.done {
                return Ok(None);
            }
            match self.next_frame() {
                Ok(true) => {}
                Ok(false) => {
                    self.done = true;
                    return Ok(None);
                }
                Err(e) => {
                    self.done = true;
                    return Err(e);
                }
            }
        }
        match self.decode_record() {
            Ok(ev) => Ok(Some(ev)),
            Err(e) => {
                self.done = true;
                self.remaining = 0;
                Err(e)
            }
        }
    }

    fn here(&self) -> Location {
        Location::byte(self.offset)
    }

    fn record_location(&self, start: usize) -> Location {
        Location::Byte {
            offset: self.payload_offset + start as u64,
            block: Some(self.block_index),
            record: Some(self.record_in_block),
        }
    }

    /// Reads the next frame. `Ok(true)`: a block with records is loaded. `Ok(false)`: the trailer
    /// was read and verified.
    fn next_frame(&mut self) -> Result<bool, TraceError> {
        let frame_start = self.offset;
        let mut kind = [0u8; 1];
        let got = read_up_to(&mut self.r, &mut kind)
            .map_err(|e| TraceError::io("reading a frame kind", e, self.here()))?;
        if got == 0 {
            return Err(TraceError::new(
                ErrorKind::MissingTrailer {
                    blocks: self.blocks,
                    events: self.events,
                },
                self.here(),
            ));
        }
        self.offset += 1;
        match kind[0] {
            KIND_BLOCK => self.read_block(frame_start).map(|()| true),
            KIND_TRAILER => self.read_trailer(frame_start).map(|()| false),
            k => Err(TraceError::new(
                ErrorKind::BadBlock {
                    reason: format!(
                        "unknown frame kind {k:#04x} (expected block {KIND_BLOCK:#04x} or trailer {KIND_TRAILER:#04x})"
                    ),
                },
                Location::byte(frame_start),
            )),
        }
    }

    fn read_block(&mut self, frame_start: u64) -> Result<(), TraceError> {
        let block = self.blocks;
        let at_block = |offset: u64| Location::Byte {
            offset,
            block: Some(block),
            record: None,
        };
        let mut hdr = [0u8; 12];
        let got = read_up_to(&mut self.r, &mut hdr)
            .map_err(|e| TraceError::io("reading a block header", e, at_block(self.offset)))?;
        if got < hdr.len() {
            return Err(TraceError::new(
                ErrorKind::Truncated {
                    what: format!("input ends inside the header of block {block}"),
                },
                at_block(self.offset + got as u64),
            ));
        }
        let len = u32::from_le_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]) as usize;
        let count = u32::from_le_bytes([hdr[4], hdr[5], hdr[6], hdr[7]]);
        let stored = u32::from_le_bytes([hdr[8], hdr[9], hdr[10], hdr[11]]);
        if len == 0 || len > MAX_BLOCK_PAYLOAD {
            return Err(TraceError::new(
                ErrorKind::BadBlock {
                    reason: format!("payload length {len} outside 1..={MAX_BLOCK_PAYLOAD}"),
                },
                at_block(self.offset),
            ));
        }
        if count == 0 || count as usize > len {
            return Err(TraceError::new(
                ErrorKind::BadBlock {
                    reason: format!("record count {count} impossible for a {len}-byte payload"),
                },
                at_block(self.offset + 4),
            ));
        }
        self.offset += 12;
        // `len` is capped above, so this allocation is bounded.
        if self.buf.len() < len {
            self.buf.resize(len, 0);
        }
        let got = read_up_to(&mut self.r, &mut self.buf[..len])
            .map_err(|e| TraceError::io("reading a block payload", e, at_block(self.offset)))?;
        if got < len {
            return Err(TraceError::new(
                ErrorKind::Truncated {
                    what: format!(
                        "input ends inside the payload of block {block} ({got} of {len} bytes)"
                    ),
                },
                at_block(self.offset + got as u64),
            ));
        }
        let computed = crc32fast::hash(&self.buf[..len]);
        if computed != stored {
            return Err(TraceError::new(
                ErrorKind::BlockChecksum { stored, computed },
                at_block(frame_start),
            ));
        }
        self.chain.update(&hdr);
        self.payload_offset = self.offset;
        self.offset += len as u64;
        self.buf.truncate(len);
        self.pos = 0;
        self.remaining = count;
        self.record_in_block = 0;
        self.block_index = block;
        self.blocks += 1;
        self.prev_thread = 0;
        self.state.fill(ThreadState::default());
        Ok(())
    }

    fn read_trailer(&mut self, frame_start: u64) -> Result<(), TraceError> {
        let mut t = [0u8; TRAILER_BYTES];
        t[0] = KIND_TRAILER;
        let got = read_up_to(&mut self.r, &mut t[1..])
            .map_err(|e| TraceError::io("reading the trailer", e, self.here()))?;
        if got < TRAILER_BYTES - 1 {
            return Err(TraceError::new(
                ErrorKind::Truncated {
                    what: "input ends inside the trailer".into(),
                },
                Location::byte(self.offset + got as u64),
            ));
        }
        self.offset += got as u64;
        let u64_at = |o: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&t[o..o + 8]);
            u64::from_le_bytes(b)
        };
        let u32_at = |o: usize| u32::from_le_bytes([t[o], t[o + 1], t[o + 2], t[o + 3]]);
        let bad = |reason: String| {
            TraceError::new(
                ErrorKind::BadTrailer { reason },
                Location::byte(frame_start),
            )
        };
        let stored_crc = u32_at(21);
        let computed_crc = crc32fast::hash(&t[..21]);
        if stored_crc != computed_crc {
            return Err(bad(format!(
                "checksum mismatch (stored {stored_crc:#010x}, computed {computed_crc:#010x})"
            )));
        }
        let events = u64_at(1);
        let blocks = u64_at(9);
        let chain = u32_at(17);
        if events != self.events {
            return Err(bad(format!(
                "declares {events} events but {} were read",
                self.events
            )));
        }
        if blocks != self.blocks {
            return Err(bad(format!(
                "declares {blocks} blocks but {} were read",
                self.blocks
            )));
        }
        let computed_chain = self.chain.clone().finalize();
        if chain != computed_chain {
            return Err(bad(format!(
                "block chain checksum mismatch (stored {chain:#010x}, computed {computed_chain:#010x}): blocks dropped, duplicated or reordered"
            )));
        }
        let mut extra = [0u8; 1];
        let got = read_up_to(&mut self.r, &mut extra)
            .map_err(|e| TraceError::io("checking for the end of input", e, self.here()))?;
        if got != 0 {
            return Err(TraceError::new(ErrorKind::TrailingData, self.here()));
        }
        Ok(())
    }

    /// Decodes the next record of the current block (`remaining > 0`).
    #[inline]
    fn decode_record(&mut self) -> Result<TraceEvent, TraceError> {
        let start = self.pos;
        let buf = &self.buf[..];
        let mut p = start;
        let fail =
            |this: &Self, kind: ErrorKind| Err(TraceError::new(kind, this.record_location(start)));
        let tag = match buf.get(p) {
            Some(&t) => t,
            None => return fail(self, truncated_record("tag")),
        };
        p += 1;
        if tag & TAG_RESERVED != 0 {
            return fail(
                self,
                ErrorKind::BadRecord {
                    reason: format!("reserved tag bit set (tag {tag:#04x})"),
                },
            );
        }
        let code = tag & TAG_OP_MASK;
        let op = match Op::from_code(code) {
            Some(op) => op,
            None => {
                return fail(
                    self,
                    ErrorKind::UnknownOp {
                        found: format!("code {code}"),
                    },
                )
            }
        };
        let thread = if tag & TAG_THREAD != 0 {
            let t = match varint::get(buf, &mut p) {
                Ok(v) => v,
                Err(e) => return fail(self, varint_error(e, "thread")),
            };
            if t >= self.header.threads as u64 {
                return fail(
                    self,
                    ErrorKind::ThreadOutOfRange {
                        thread: t,
                        threads: self.header.threads,
                    },
                );
            }
            t as u16
        } else {
            self.prev_thread
        };
        // `prev_thread` is always < threads (0 at block start, threads >= 1).
        let Some(st) = self.state.get(thread as usize).copied() else {
            return fail(
                self,
                ErrorKind::ThreadOutOfRange {
                    thread: thread.into(),
                    threads: self.header.threads,
                },
            );
        };
        let pc = match varint::get(buf, &mut p) {
            Ok(v) => st.pc.wrapping_add(unzigzag(v) as u64),
            Err(e) => return fail(self, varint_error(e, "pc")),
        };
        let mut addr = 0;
        let mut size = 0u16;
        if op.has_address() {
            addr = match varint::get(buf, &mut p) {
                Ok(v) => st.addr.wrapping_add(unzigzag(v) as u64),
                Err(e) => return fail(self, varint_error(e, "addr")),
            };
            let s = match varint::get(buf, &mut p) {
                Ok(v) => v,
                Err(e) => return fail(self, varint_error(e, "size")),
            };
            if s > MAX_ACCESS_BYTES as u64 {
                return fail(
                    self,
                    ErrorKind::SizeTooLarge {
                        size: s,
                        max: MAX_ACCESS_BYTES.into(),
                    },
                );
            }
            if s == 0 {
                return fail(self, crate::zero_size(op, addr));
            }
            size = s as u16;
            if let Err(e) = crate::check_span(addr, s) {
                return fail(self, e);
            }
        } else if op == Op::Await {
            addr = match varint::get(buf, &mut p) {
                Ok(v) => v,
                Err(e) => return fail(self, varint_error(e, "await edge")),
            };
        }
        let gap = match varint::get(buf, &mut p) {
            Ok(v) if v <= u32::MAX as u64 => v as u32,
            Ok(v) => {
                return fail(
                    self,
                    ErrorKind::BadRecord {
                        reason: format!("gap {v} does not fit in 32 bits"),
                    },
                )
            }
            Err(e) => return fail(self, varint_error(e, "gap")),
        };
        let mut ev = TraceEvent {
            op,
            thread,
            pc,
            addr,
            size,
            gap,
            value_len: 0,
            value: [0; MAX_VALUE_BYTES],
        };
        if op == Op::Await {
            if let Err(e) = ev.check(self.header.threads) {
                return fail(self, e);
            }
        }
        let mode = tag & TAG_VALUE_MASK;
        if mode != 0 {
            if !op.carries_value() {
                return fail(
                    self,
                    ErrorKind::BadRecord {
                        reason: format!("value flag set on a {op} record"),
                    },
                );
            }
            let vlen = if mode == TAG_VALUE_SIZED {
                size as usize
            } else if mode == TAG_VALUE_EXPLICIT {
                match buf.get(p) {
                    Some(&l) => {
                        p += 1;
                        l as usize
                    }
                    None => return fail(self, truncated_record("value length")),
                }
            } else {
                return fail(
                    self,
                    ErrorKind::BadRecord {
                        reason: format!("invalid value mode 3 (tag {tag:#04x})"),
                    },
                );
            };
            if vlen == 0 || vlen > MAX_VALUE_BYTES {
                return fail(
                    self,
                    ErrorKind::BadRecord {
                        reason: format!("value length {vlen} outside 1..={MAX_VALUE_BYTES}"),
                    },
                );
            }
            if vlen > size as usize {
                return fail(
                    self,
                    ErrorKind::ValueLongerThanSize {
                        value_len: vlen,
                        size: size.into(),
                    },
                );
            }
            let Some(bytes) = buf.get(p..p + vlen) else {
                return fail(self, truncated_record("value"));
            };
            ev.value[..vlen].copy_from_slice(bytes);
            ev.value_len = vlen as u8;
            p += vlen;
        }

        // Commit: update delta state and position.
        if let Some(s) = self.state.get_mut(thread as usize) {
            s.pc = pc;
            if op.has_address() {
                s.addr = addr;
            }
        }
        self.prev_thread = thread;
        self.pos = p;
        self.remaining -= 1;
        self.record_in_block += 1;
        if self.remaining == 0 && self.pos != self.buf.len() {
            let left = self.buf.len() - self.pos;
            return Err(TraceError::new(
                ErrorKind::BadBlock {
                    reason: format!("{left} bytes left after the block's last record"),
                },
                Location::Byte {
                    offset: self.payload_offset + self.pos as u64,
                    block: Some(self.block_index),
                    record: None,
                },
            ));
        }
        self.events += 1;
        Ok(ev)
    }
}

fn truncated_record(field: &str) -> ErrorKind {
    ErrorKind::BadRecord {
        reason: format!("truncated record: block payload ends inside the {field}"),
    }
}

fn varint_error(e: VarintError, field: &str) -> ErrorKind {
    match e {
        VarintError::Truncated => truncated_record(field),
        VarintError::Overlong => ErrorKind::BadRecord {
            reason: format!("over-long varint in the {field}"),
        },
    }
}

impl<R: Read> Iterator for PmtReader<R> {
    type Item = Result<TraceEvent, TraceError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.next_event().transpose()
    }
}

impl<R: Read> std::iter::FusedIterator for PmtReader<R> {}
