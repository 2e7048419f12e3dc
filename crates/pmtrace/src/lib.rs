//! `pmtrace`: the event vocabulary of pmlab and the `.pmt` trace format.
//!
//! Everything that produces or consumes persistent-memory program behaviour speaks in
//! [`TraceEvent`]s: the workload generators of `pmwork` emit them, `.pmt` files store them,
//! the importers translate other simulators' traces into them, and `pmsim` replays them.
//! This crate is deliberately small and dependency-light so that producers need not link the
//! simulator.

//!
//! # Map
//!
//! | module | owns |
//! |---|---|
//! | [`header`] | [`TraceHeader`], flags, header encoding |
//! | [`writer`] | [`PmtWriter`]; the `.pmt` byte layout (also in `FORMAT.md`) |
//! | [`reader`] | [`PmtReader`], streaming and checksum-verified |
//! | [`text`] | the human-readable dump: [`TextWriter`], [`TextReader`] |
//! | [`import`] | [`PmweaverReader`] (PMWeaver artifact store dump), [`PlainReader`] (`hexaddr R/W cycle`) |
//! | [`detect`] | [`open_trace`] / [`TraceSource`]: any of the above, detected from content |
//! | [`pipeline`] | [`Pipelined`]: a source read on a second core, handed over in batches |
//! | [`stats`] | [`TraceStats`], streaming summary |
//! | [`error`] | [`TraceError`]: where and what, one line |
//!
//! # Checks
//!
//! ```text
//! cargo test -p pmtrace --release                                   # unit, property, corruption, import tests
//! cargo run --release -p pmtrace --example throughput               # write/read events per second
//! CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true \
//!     cargo run --release -p pmtrace --example fuzz -- --seconds 60   # stable-Rust fuzzer
//! ```
//!
//! # Example
//!
//! ```
//! use pmtrace::{Op, PmtReader, PmtWriter, TraceEvent, TraceHeader};
//!
//! let header = TraceHeader::new("example", 1).with_seed(7).with_params("keys=16");
//! let mut w = PmtWriter::new(Vec::new(), header)?;
//! w.write(&TraceEvent::store(Op::Store, 0, 0x401000, 0x1000_0040, &[1, 2, 3, 4], 3))?;
//! w.write(&TraceEvent::access(Op::Clwb, 0, 0x401004, 0x1000_0040, 64, 0))?;
//! w.write(&TraceEvent::marker(Op::Sfence, 0, 0x401008, 0))?;
//! let bytes = w.finish()?;
//!
//! let mut r = PmtReader::new(&bytes[..])?;
//! assert_eq!(r.header().workload, "example");
//! let events: Vec<TraceEvent> = r.by_ref().collect::<Result<_, _>>()?;
//! assert_eq!(events.len(), 3);
//! assert_eq!(events[0].value_bytes(), &[1, 2, 3, 4]);
//! # Ok::<(), pmtrace::TraceError>(())
//! ```

#![warn(missing_docs)]

use std::fmt;

pub mod detect;
pub mod error;
pub mod header;
pub mod import;
mod lines;
pub mod pipeline;
pub mod reader;
pub mod stats;
pub mod text;
mod varint;
pub mod writer;

pub use detect::{detect_format, open_trace, open_trace_with, TraceFormat, TraceSource};
pub use error::{ErrorKind, Location, TraceError};
pub use header::{flags, TraceHeader, FORMAT_VERSION, MAGIC};
pub use import::{ImportOptions, PlainReader, PmweaverReader};
pub use pipeline::Pipelined;
pub use reader::PmtReader;
pub use stats::TraceStats;
pub use text::{format_event, parse_event_line, write_text, TextReader, TextWriter};
pub use writer::{write_pmt, PmtWriter};

/// Something a trace writer can take as an event: a [`TraceEvent`], a reference to one, or a
/// `Result` from a reader (whose error is passed through). Lets [`write_pmt`] and
/// [`write_text`] accept both in-memory event lists and streaming sources.
pub trait EventItem {
    /// The event, or the error the source reported.
    fn into_event(self) -> Result<TraceEvent, TraceError>;
}

impl EventItem for TraceEvent {
    fn into_event(self) -> Result<TraceEvent, TraceError> {
        Ok(self)
    }
}

impl EventItem for &TraceEvent {
    fn into_event(self) -> Result<TraceEvent, TraceError> {
        Ok(*self)
    }
}

impl EventItem for Result<TraceEvent, TraceError> {
    fn into_event(self) -> Result<TraceEvent, TraceError> {
        self
    }
}

/// Largest payload a single store-like event may carry (one cache line).
pub const MAX_VALUE_BYTES: usize = 64;

/// Largest access size (`size`) an event may have, in bytes: one 4 KiB page (RDMA writes may be
/// that large; CPU accesses are at most a line).
pub const MAX_ACCESS_BYTES: u16 = 4096;

/// The operation an event performs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Op {
    /// A load of `size` bytes at `addr`.
    Load = 0,
    /// A (cacheable) store of `size` bytes at `addr`; `value` holds the stored bytes when known.
    Store = 1,
    /// A non-temporal store that bypasses the caches.
    NtStore = 2,
    /// Write the line holding `addr` back toward memory and keep it cached.
    Clwb = 3,
    /// Write the line holding `addr` back toward memory and invalidate it.
    Clflushopt = 4,
    /// Store fence: later stores wait until earlier write-backs are acknowledged.
    Sfence = 5,
    /// Full fence: as `Sfence`, and loads too.
    Mfence = 6,
    /// Start of a (hardware-logged or library) transaction.
    TxBegin = 7,
    /// End of a transaction.
    TxEnd = 8,
    /// A persistent RDMA write arriving from the network (`addr`, `size`, optional value).
    RdmaPwrite = 9,
    /// Non-memory work: `gap` instructions and nothing else.
    Compute = 10,
    /// A software precomputation hint (Janus's `PRE_BOTH`/`PRE_ADDR`, Liu et al., ISCA'19):
    /// the program announces a future write-back of the line at `addr`, with the line's future
    /// bytes as `value` when it knows them. Changes no memory.
    Hint = 11,
    /// A happens-before edge: the thread waits until another thread has retired a number of
    /// its events (a lock hand-off, a join). `addr` packs the edge ([`TraceEvent::awaited`]):
    /// the other thread in the top 16 bits, the event count in the low 48. Changes no memory.
    Await = 12,
}

impl Op {
    /// Every operation, in encoding order.
    pub const ALL: [Op; 13] = [
        Op::Load,
        Op::Store,
        Op::NtStore,
        Op::Clwb,
        Op::Clflushopt,
        Op::Sfence,
        Op::Mfence,
        Op::TxBegin,
        Op::TxEnd,
        Op::RdmaPwrite,
        Op::Compute,
        Op::Hint,
        Op::Await,
    ];

    /// Decodes the on-disk operation code.
    #[inline]
    pub fn from_code(code: u8) -> Option<Op> {
        Op::ALL.get(code as usize).copied()
    }

    /// The lower-case name used in text dumps and statistics.
    pub fn name(self) -> &'static str {
        match self {
            Op::Load => "load",
            Op::Store => "store",
            Op::NtStore => "ntstore",
            Op::Clwb => "clwb",
            Op::Clflushopt => "clflushopt",
            Op::Sfence => "sfence",
            Op::Mfence => "mfence",
            Op::TxBegin => "txbegin",
            Op::TxEnd => "txend",
            Op::RdmaPwrite => "rdmapwrite",
            Op::Compute => "compute",
            Op::Hint => "hint",
            Op::Await => "await",
        }
    }

    /// Parses a name produced by [`Op::name`].
    pub fn from_name(name: &str) -> Option<Op> {
        Op::ALL.iter().copied().find(|op| op.name() == name)
    }

    /// True for operations that write memory (and may carry a value).
    #[inline]
    pub fn writes_memory(self) -> bool {
        matches!(self, Op::Store | Op::NtStore | Op::RdmaPwrite)
    }

    /// True for operations that may carry a value: those that write memory, and hints (the
    /// announced bytes).
    #[inline]
    pub fn carries_value(self) -> bool {
        self.writes_memory() || self == Op::Hint
    }

    /// True for operations that touch an address at all.
    #[inline]
    pub fn has_address(self) -> bool {
        !matches!(
            self,
            Op::Sfence | Op::Mfence | Op::TxBegin | Op::TxEnd | Op::Compute | Op::Await
        )
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One event of a memory trace.
///
/// `gap` is the number of non-memory instructions the thread retired since its previous event
/// (for imported cycle-stamped traces: core cycles since the previous event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    /// What the event does.
    pub op: Op,
    /// Issuing hardware thread (0-based, < header thread count).
    pub thread: u16,
    /// Program counter of the instruction (a stable static site id for generated traces).
    pub pc: u64,
    /// Byte address (0 for events without an address).
    pub addr: u64,
    /// Access size in bytes (0 for events without an address).
    pub size: u16,
    /// Instructions (or cycles) since this thread's previous event.
    pub gap: u32,
    /// Number of valid bytes in `value`; 0 when the stored value is unknown.
    pub value_len: u8,
    /// The stored bytes for store-like events (first `value_len` bytes are valid).
    pub value: [u8; MAX_VALUE_BYTES],
}

impl TraceEvent {
    /// An event with no address, size or value (fences, transaction markers).
    #[inline]
    pub fn marker(op: Op, thread: u16, pc: u64, gap: u32) -> TraceEvent {
        TraceEvent {
            op,
            thread,
            pc,
            addr: 0,
            size: 0,
            gap,
            value_len: 0,
            value: [0; MAX_VALUE_BYTES],
        }
    }

    /// An access (load, clwb, clflushopt, or a store whose value is unknown).
    #[inline]
    pub fn access(op: Op, thread: u16, pc: u64, addr: u64, size: u16, gap: u32) -> TraceEvent {
        TraceEvent {
            addr,
            size,
            ..TraceEvent::marker(op, thread, pc, gap)
        }
    }

    /// A store-like event carrying its value; `value.len()` becomes the access size.
    ///
    /// # Panics
    /// If `value` is longer than [`MAX_VALUE_BYTES`] (a programming error, not user input).
    #[inline]
    pub fn store(op: Op, thread: u16, pc: u64, addr: u64, value: &[u8], gap: u32) -> TraceEvent {
        assert!(
            value.len() <= MAX_VALUE_BYTES,
            "store value longer than a line"
        );
        let mut ev = TraceEvent::access(op, thread, pc, addr, value.len() as u16, gap);
        ev.value[..value.len()].copy_from_slice(value);
        ev.value_len = value.len() as u8;
        ev
    }

    /// A happens-before edge ([`Op::Await`]): thread `thread` waits until thread `source` has
    /// retired `count` of its events (`count` in 1..2^48; [`check`](Self::check) refuses 0).
    ///
    /// # Panics
    /// If `count` is 2^48 or more (it would spill into the thread's bits).
    #[inline]
    pub fn await_events(thread: u16, pc: u64, source: u16, count: u64, gap: u32) -> TraceEvent {
        assert!(
            count < AWAIT_COUNT_LIMIT,
            "an await's event count must be below 2^48"
        );
        TraceEvent {
            addr: u64::from(source) << 48 | count,
            ..TraceEvent::marker(Op::Await, thread, pc, gap)
        }
    }

    /// The edge of an [`Op::Await`] event: (source thread, event count); `None` for other ops.
    #[inline]
    pub fn awaited(&self) -> Option<(u16, u64)> {
        if self.op == Op::Await {
            Some((
                (self.addr >> 48) as u16,
                self.addr & (AWAIT_COUNT_LIMIT - 1),
            ))
        } else {
            None
        }
    }

    /// The valid stored bytes (empty when unknown).
    ///
    /// A `value_len` above [`MAX_VALUE_BYTES`] (only possible by writing the field directly) is
    /// clamped rather than panicking.
    #[inline]
    pub fn value_bytes(&self) -> &[u8] {
        &self.value[..(self.value_len as usize).min(MAX_VALUE_BYTES)]
    }

    /// Checks that the event is well formed for a trace of `threads` threads:
    /// `thread < threads`; events without an address ([`Op::has_address`] false) have
    /// `addr == 0`, `size == 0` and no value, the others `1 <= size <= MAX_ACCESS_BYTES`; a value only on
    /// store-like ops and hints ([`Op::carries_value`]), no longer than `size` nor
    /// [`MAX_VALUE_BYTES`].
    ///
    /// Writers call this for every event, and readers for every decoded event, so anything read
    /// from a trace satisfies it. Bytes of `value` past `value_len` are not checked (and are not
    /// stored: they read back as zero).
    pub fn check(&self, threads: u16) -> Result<(), ErrorKind> {
        if self.thread >= threads {
            return Err(ErrorKind::ThreadOutOfRange {
                thread: self.thread.into(),
                threads,
            });
        }
        if let Some((source, count)) = self.awaited() {
            let reason = if self.size != 0 || self.value_len != 0 {
                format!(
                    "await has no size or value, but size={} value_len={}",
                    self.size, self.value_len
                )
            } else if source >= threads {
                format!("await of thread {source}, but the trace has {threads} thread(s)")
            } else if source == self.thread {
                format!("thread {source} awaits its own events")
            } else if count == 0 {
                format!("await of thread {source}'s event count 0 (counts start at 1)")
            } else {
                return Ok(());
            };
            return Err(ErrorKind::InvalidEvent { reason });
        }
        if !self.op.has_address() {
            if self.addr != 0 || self.size != 0 || self.value_len != 0 {
                return Err(ErrorKind::InvalidEvent {
                    reason: format!(
                        "{} has no address, but addr={:#x} size={} value_len={}",
                        self.op, self.addr, self.size, self.value_len
                    ),
                });
            }
            return Ok(());
        }
        if self.size == 0 {
            return Err(zero_size(self.op, self.addr));
        }
        if self.size > MAX_ACCESS_BYTES {
            return Err(ErrorKind::SizeTooLarge {
                size: self.size.into(),
                max: MAX_ACCESS_BYTES.into(),
            });
        }
        check_span(self.addr, self.size.into())?;
        if self.value_len != 0 {
            if !self.op.carries_value() {
                return Err(ErrorKind::InvalidEvent {
                    reason: format!("{} cannot carry a value", self.op),
                });
            }
            if self.value_len as usize > MAX_VALUE_BYTES {
                return Err(ErrorKind::InvalidEvent {
                    reason: format!("value_len {} exceeds {MAX_VALUE_BYTES}", self.value_len),
                });
            }
            if u16::from(self.value_len) > self.size {
                return Err(ErrorKind::ValueLongerThanSize {
                    value_len: self.value_len.into(),
                    size: self.size.into(),
                });
            }
        }
        Ok(())
    }
}

/// The error of an access of 0 bytes: simulators would make it a one-byte access (or none), a
/// guess either way.
pub(crate) fn zero_size(op: Op, addr: u64) -> ErrorKind {
    ErrorKind::InvalidEvent {
        reason: format!("{op} of 0 bytes at {addr:#x}"),
    }
}

/// Event counts an [`Op::Await`] can name are below this (48 bits).
pub const AWAIT_COUNT_LIMIT: u64 = 1 << 48;

/// An access of `size` bytes at `addr` must end within the 64-bit address space (a simulator
/// that wrapped or cut it short would drop bytes without a word).
pub(crate) fn check_span(addr: u64, size: u64) -> Result<(), ErrorKind> {
    if size > 0 && addr.checked_add(size - 1).is_none() {
        return Err(ErrorKind::InvalidEvent {
            reason: format!(
                "an access of {size} bytes at {addr:#x} runs past the end of the 64-bit address space"
            ),
        });
    }
    Ok(())
}
