//! [`TraceHeader`]: what a trace is (threads, workload, seed, parameters, flags) and its `.pmt`
//! encoding. The byte layout is described in `FORMAT.md` and in [`crate::writer`].

use std::io::{self, Read};

use crate::error::{ErrorKind, Location, TraceError};

/// The eight bytes every `.pmt` file starts with.
pub const MAGIC: &[u8; 8] = b"PMTRACE\0";

/// The `.pmt` format version this library writes and reads.
pub const FORMAT_VERSION: u16 = 1;

/// Longest workload name accepted, in bytes of UTF-8.
pub const MAX_WORKLOAD_NAME_BYTES: usize = 256;

/// Longest `params` string accepted, in bytes of UTF-8.
pub const MAX_PARAMS_BYTES: usize = 64 * 1024;

/// Size of the fixed part of the binary header (before the name and params strings).
pub(crate) const FIXED_HEADER_BYTES: usize = 30;

/// Header flag bits.
///
/// Bits 0-15 are *advisory*: a reader that does not know one ignores it. Bits 16-31 are
/// *required*: a reader rejects a trace with a required bit it does not know, so a future
/// incompatible extension can be signalled without a version bump.
pub mod flags {
    /// Store-like events carry their stored values (the trace is functional, not just timed).
    pub const STORE_VALUES: u32 = 1 << 0;
    /// The trace was converted from another tool's format by an importer.
    pub const IMPORTED: u32 = 1 << 1;
    /// The events are a stream of memory requests (e.g. imported from a `hexaddr READ|WRITE
    /// cycle` trace), not a program's accesses: replay them on the memory system alone.
    pub const MEMORY_REQUESTS: u32 = 1 << 2;
    /// The gaps count memory command-clock cycles (DRAMsim3's trace convention), not
    /// requester cycles: a replay must use the device clock. Required, because a reader that
    /// ignored it would replay the trace at a different load.
    pub const MEMORY_CLOCK: u32 = 1 << 16;
    /// A program trace whose gaps count core cycles, not instructions (a PMWeaver store dump:
    /// gem5 ticks over the importer's ticks per cycle): a replay must advance the thread's
    /// clock by them, not retire them as instructions at `cpu.width` per cycle. Required,
    /// because a reader that ignored it would run the trace several times faster.
    pub const GAP_CYCLES: u32 = 1 << 17;
    /// Mask of the required bits (16-31).
    pub const REQUIRED_MASK: u32 = 0xffff_0000;
    /// Required bits this library understands.
    pub const KNOWN_REQUIRED: u32 = MEMORY_CLOCK | GAP_CYCLES;
}

/// Describes a trace: how many threads issue its events and how it was made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceHeader {
    /// Number of hardware threads; every event's `thread` is below this. At least 1.
    pub threads: u16,
    /// Name of the workload that produced the trace (at most [`MAX_WORKLOAD_NAME_BYTES`]).
    pub workload: String,
    /// Seed of the generator run, so the trace can be regenerated.
    pub seed: u64,
    /// Free-form workload parameters (sizes, key counts...), at most [`MAX_PARAMS_BYTES`].
    pub params: String,
    /// Bit set of [`flags`].
    pub flags: u32,
}

impl TraceHeader {
    /// A header for `threads` threads of `workload`, seed 0, no params, no flags.
    pub fn new(workload: impl Into<String>, threads: u16) -> TraceHeader {
        TraceHeader {
            threads,
            workload: workload.into(),
            seed: 0,
            params: String::new(),
            flags: 0,
        }
    }

    /// Sets the seed.
    pub fn with_seed(mut self, seed: u64) -> TraceHeader {
        self.seed = seed;
        self
    }

    /// Sets the parameter string.
    pub fn with_params(mut self, params: impl Into<String>) -> TraceHeader {
        self.params = params.into();
        self
    }

    /// Sets the flags.
    pub fn with_flags(mut self, flags: u32) -> TraceHeader {
        self.flags = flags;
        self
    }

    /// True if the flag bit(s) `flag` are all set.
    pub fn has_flag(&self, flag: u32) -> bool {
        self.flags & flag == flag
    }

    /// Checks the fields against the format's limits.
    pub fn validate(&self) -> Result<(), ErrorKind> {
        if self.threads == 0 {
            return Err(bad_header("thread count is 0 (must be at least 1)"));
        }
        if self.workload.len() > MAX_WORKLOAD_NAME_BYTES {
            return Err(bad_header(format!(
                "workload name is {} bytes (max {MAX_WORKLOAD_NAME_BYTES})",
                self.workload.len()
            )));
        }
        if self.params.len() > MAX_PARAMS_BYTES {
            return Err(bad_header(format!(
                "params string is {} bytes (max {MAX_PARAMS_BYTES})",
                self.params.len()
            )));
        }
        let unknown = self.flags & flags::REQUIRED_MASK & !flags::KNOWN_REQUIRED;
        if unknown != 0 {
            return Err(bad_header(format!(
                "unknown required flag bits {unknown:#010x} (written by a newer pmtrace?)"
            )));
        }
        if self.flags & flags::MEMORY_CLOCK != 0 && self.flags & flags::MEMORY_REQUESTS == 0 {
            // A program trace's gaps are core cycles of the full-system model: a replay would
            // silently ignore the memory clock.
            return Err(bad_header(format!(
                "flags={:#x}: MEMORY_CLOCK ({:#x}, gaps in memory cycles) is set without \
                 MEMORY_REQUESTS ({:#x}); only a memory-request stream has a memory clock",
                self.flags,
                flags::MEMORY_CLOCK,
                flags::MEMORY_REQUESTS
            )));
        }
        Ok(())
    }

    /// The binary encoding, including the trailing header CRC.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(FIXED_HEADER_BYTES + self.workload.len() + 4);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&self.threads.to_le_bytes());
        out.extend_from_slice(&self.flags.to_le_bytes());
        out.extend_from_slice(&self.seed.to_le_bytes());
        out.extend_from_slice(&(self.workload.len() as u16).to_le_bytes());
        out.extend_from_slice(&(self.params.len() as u32).to_le_bytes());
        out.extend_from_slice(self.workload.as_bytes());
        out.extend_from_slice(self.params.as_bytes());
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Reads and checks a binary header; returns it and the number of bytes consumed.
    pub(crate) fn decode<R: Read>(r: &mut R) -> Result<(TraceHeader, u64), TraceError> {
        let mut fixed = [0u8; FIXED_HEADER_BYTES];
        // Magic first, so that a short non-trace file reports "bad magic", not "truncated".
        let got = read_up_to(r, &mut fixed[..8])
            .map_err(|e| TraceError::io("reading the header", e, Location::byte(0)))?;
        if fixed[..got] != MAGIC[..got] || got == 0 {
            return Err(TraceError::new(
                ErrorKind::BadMagic {
                    found: fixed[..got].to_vec(),
                },
                Location::byte(0),
            ));
        }
        if got < 8 {
            return Err(truncated("header (magic)", got as u64));
        }
        let got = read_up_to(r, &mut fixed[8..10])
            .map_err(|e| TraceError::io("reading the header", e, Location::byte(8)))?;
        if got < 2 {
            return Err(truncated("header (version)", 8 + got as u64));
        }
        let version = u16::from_le_bytes([fixed[8], fixed[9]]);
        if version != FORMAT_VERSION {
            return Err(TraceError::new(
                ErrorKind::UnsupportedVersion {
                    found: version.into(),
                    supported: FORMAT_VERSION.into(),
                },
                Location::byte(8),
            ));
        }
        let got = read_up_to(r, &mut fixed[10..])
            .map_err(|e| TraceError::io("reading the header", e, Location::byte(10)))?;
        if got < FIXED_HEADER_BYTES - 10 {
            return Err(truncated("header", 10 + got as u64));
        }
        let u16_at = |o: usize| u16::from_le_bytes([fixed[o], fixed[o + 1]]);
        let u32_at =
            |o: usize| u32::from_le_bytes([fixed[o], fixed[o + 1], fixed[o + 2], fixed[o + 3]]);
        let threads = u16_at(10);
        let flags_word = u32_at(12);
        let mut seed_bytes = [0u8; 8];
        seed_bytes.copy_from_slice(&fixed[16..24]);
        let seed = u64::from_le_bytes(seed_bytes);
        let name_len = u16_at(24) as usize;
        let params_len = u32_at(26) as usize;
        if name_len > MAX_WORKLOAD_NAME_BYTES {
            return Err(TraceError::new(
                bad_header(format!(
                    "workload name length {name_len} exceeds {MAX_WORKLOAD_NAME_BYTES}"
                )),
                Location::byte(24),
            ));
        }
        if params_len > MAX_PARAMS_BYTES {
            return Err(TraceError::new(
                bad_header(format!(
                    "params length {params_len} exceeds {MAX_PARAMS_BYTES}"
                )),
                Location::byte(26),
            ));
        }
        // Both lengths are capped above, so this allocation is bounded.
        let var_len = name_len + params_len + 4;
        let mut var = vec![0u8; var_len];
        let got = read_up_to(r, &mut var).map_err(|e| {
            TraceError::io(
                "reading the header",
                e,
                Location::byte(FIXED_HEADER_BYTES as u64),
            )
        })?;
        if got < var_len {
            return Err(truncated(
                "header (workload name, params, checksum)",
                (FIXED_HEADER_BYTES + got) as u64,
            ));
        }
        let crc_off = name_len + params_len;
        let stored = u32::from_le_bytes([
            var[crc_off],
            var[crc_off + 1],
            var[crc_off + 2],
            var[crc_off + 3],
        ]);
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&fixed);
        hasher.update(&var[..crc_off]);
        let computed = hasher.finalize();
        let crc_pos = (FIXED_HEADER_BYTES + crc_off) as u64;
        if stored != computed {
            return Err(TraceError::new(
                ErrorKind::HeaderChecksum { stored, computed },
                Location::byte(crc_pos),
            ));
        }
        let workload = String::from_utf8(var[..name_len].to_vec()).map_err(|_| {
            TraceError::new(
                bad_header("workload name is not valid UTF-8"),
                Location::byte(FIXED_HEADER_BYTES as u64),
            )
        })?;
        let params = String::from_utf8(var[name_len..crc_off].to_vec()).map_err(|_| {
            TraceError::new(
                bad_header("params string is not valid UTF-8"),
                Location::byte((FIXED_HEADER_BYTES + name_len) as u64),
            )
        })?;
        let header = TraceHeader {
            threads,
            workload,
            seed,
            params,
            flags: flags_word,
        };
        header
            .validate()
            .map_err(|k| TraceError::new(k, Location::byte(10)))?;
        Ok((header, crc_pos + 4))
    }
}

fn bad_header(reason: impl Into<String>) -> ErrorKind {
    ErrorKind::BadHeader {
        reason: reason.into(),
    }
}

fn truncated(what: &str, offset: u64) -> TraceError {
    TraceError::new(
        ErrorKind::Truncated {
            what: format!("input ends inside the {what}"),
        },
        Location::byte(offset),
    )
}

/// Reads until `buf` is full or the input ends; returns the number of bytes read.
pub(crate) fn read_up_to<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            // min(): a misbehaving reader reporting more than it was given must not panic us.
            Ok(n) => filled += n.min(buf.len() - filled),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}
