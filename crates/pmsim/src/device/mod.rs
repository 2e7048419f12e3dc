//! The PM (or DRAM) device of one channel: ranks, banks, open-page row buffers, the data bus,
//! media timing constraints and the optional XPLine read buffer.
//!
//! The model is request-level and analytic: for a request it computes when each command
//! (precharge, activate, column read/write) can issue given the bank, rank and bus state, and
//! when its data and media work finish. Nothing ticks; a request costs a handful of `max`
//! operations. Constraints honoured: tRCD, tCL, tCWD, tBURST (also as tCCD), tRP, tRAS, tWR,
//! tWTR, tRTP, tFAW, tRRD, data-bus occupancy and, for DRAM, all-bank refresh (tREFI, tRFC). Not
//! modelled: bank groups, command-bus contention (one request is committed per controller
//! decision, one decision per tCK).
//!
//! Refresh is applied lazily, per rank: when an access's column command would issue at or
//! after the rank's next refresh time, the refresh happens first. It waits until every open bank
//! of the rank may be precharged (a refresh postponed behind committed commands, which JEDEC
//! allows for up to 8 intervals), precharges them (tRP), keeps every bank busy for tRFC and
//! leaves them closed; then the access is scheduled again. A rank idle over several intervals
//! applies only the last one (the earlier ones delayed nothing).

pub mod mapping;
pub mod read_buffer;

use crate::config::{DeviceConfig, Timing};
use crate::dense::Dense;
use crate::time::Ps;
pub use mapping::{AddressMap, Location, LINE_BYTES};
pub use read_buffer::ReadBuffer;

const NO_ROW: u64 = u64::MAX;

/// What a request found in its bank's row buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowOutcome {
    /// The row was open: column command only.
    Hit,
    /// No row was open: activate, then column command.
    Closed,
    /// Another row was open: precharge, activate, column command.
    Conflict,
    /// Served by the on-DIMM read buffer; the bank was not touched.
    ReadBuffer,
}

/// The command schedule of one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessPlan {
    /// Row-buffer outcome.
    pub outcome: RowOutcome,
    /// Precharge time (conflicts only).
    pub precharge: Option<Ps>,
    /// Activate time (closed and conflict).
    pub activate: Option<Ps>,
    /// Column command time.
    pub column: Ps,
    /// Last data beat on the bus.
    pub data_end: Ps,
    /// When the media has finished the access (reads: `data_end`; writes: + tWR).
    pub done: Ps,
}

#[derive(Clone, Copy, Debug)]
struct Bank {
    open_row: u64,
    next_act: Ps,
    next_pre: Ps,
    next_col: Ps,
    /// The rank holding the bank.
    rank: u32,
}

#[derive(Clone, Copy, Debug, Default)]
struct Rank {
    last_acts: [Ps; 4],
    acts_seen: u64,
    next_act: Ps,
    next_read_col: Ps,
    /// When the next refresh is due (`Ps::MAX` without refresh).
    next_refresh: Ps,
}

impl Rank {
    fn faw_ready(&self, tfaw: Ps) -> Ps {
        if tfaw == 0 || self.acts_seen < 4 {
            0
        } else {
            self.last_acts[(self.acts_seen % 4) as usize] + tfaw
        }
    }
}

/// Per-channel device statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceStats {
    /// Column reads served by the banks.
    pub reads: u64,
    /// Column writes.
    pub writes: u64,
    /// Row-buffer hits.
    pub row_hits: u64,
    /// Accesses to a bank with no open row.
    pub row_closed: u64,
    /// Accesses that had to close another row.
    pub row_conflicts: u64,
    /// Activations.
    pub activates: u64,
    /// Bytes read from the media array.
    pub media_read_bytes: u64,
    /// Bytes written to the media array.
    pub media_write_bytes: u64,
    /// Time the data bus carried data.
    pub bus_busy_ps: Ps,
    /// All-bank refreshes applied (per rank; a rank idle over several intervals applies only
    /// the last of them).
    pub refreshes: u64,
}

/// What the device counts as it goes; [`ChannelDevice::stats`] derives the rest (every access
/// activates at most once, moves `media_access_bytes` and holds the bus for one burst).
#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    reads: u64,
    writes: u64,
    row_hits: u64,
    row_closed: u64,
    row_conflicts: u64,
    /// Reads served by the read buffer (bus only).
    buffer_reads: u64,
    refreshes: u64,
}

/// The command times an access would get from the current state (see
/// [`ChannelDevice::access`]).
#[derive(Clone, Copy)]
struct Schedule {
    outcome: RowOutcome,
    precharge: Option<Ps>,
    activate: Option<Ps>,
    column: Ps,
    data_start: Ps,
}

/// The device side of one channel.
#[derive(Clone, Debug)]
pub struct ChannelDevice {
    t: Timing,
    banks_per_rank: u32,
    /// Indexed by flat bank numbers the public methods check once on entry
    /// ([`check_bank`](Self::check_bank)).
    banks: Dense<Bank>,
    /// Indexed by [`Bank::rank`], below the rank count by construction.
    ranks: Dense<Rank>,
    bus_free: Ps,
    media_access_bytes: u64,
    write_blocks_bank: bool,
    xpline_bytes: u64,
    /// log2 of `xpline_bytes` (a power of two in every validated config).
    xpline_shift: Option<u32>,
    read_buffer: Option<ReadBuffer>,
    /// Banks with no open row (banks stay open once activated, until a refresh closes them).
    closed_banks: usize,
    /// A refresh closed rows since [`take_refreshed`](Self::take_refreshed) last ran.
    refreshed: bool,
    /// The device refreshes (DRAM: every rank's `next_refresh` is a time, never `Ps::MAX`);
    /// otherwise (NVM) no rank ever refreshes and `refreshed` stays false.
    refreshes: bool,
    stats: Counters,
}

impl ChannelDevice {
    /// A channel of the device `cfg` describes, with every bank idle and closed.
    pub fn new(cfg: &DeviceConfig) -> ChannelDevice {
        let nbanks = (cfg.ranks * cfg.banks) as usize;
        ChannelDevice {
            t: cfg.timing.to_ps(),
            banks_per_rank: cfg.banks,
            banks: (0..nbanks)
                .map(|i| Bank {
                    open_row: NO_ROW,
                    next_act: 0,
                    next_pre: 0,
                    next_col: 0,
                    rank: i as u32 / cfg.banks,
                })
                .collect(),
            ranks: Dense::new(vec![
                Rank {
                    next_refresh: if cfg.timing.trefi_ns > 0.0 {
                        crate::time::ns_to_ps(cfg.timing.trefi_ns)
                    } else {
                        Ps::MAX
                    },
                    ..Rank::default()
                };
                cfg.ranks as usize
            ]),
            bus_free: 0,
            media_access_bytes: cfg.media_access_bytes as u64,
            write_blocks_bank: cfg.array_write_blocks_bank,
            xpline_bytes: cfg.read_buffer.xpline_bytes as u64,
            xpline_shift: cfg
                .read_buffer
                .xpline_bytes
                .is_power_of_two()
                .then(|| cfg.read_buffer.xpline_bytes.trailing_zeros()),
            read_buffer: (cfg.read_buffer.entries > 0)
                .then(|| ReadBuffer::new(cfg.read_buffer.entries as usize)),
            closed_banks: nbanks,
            refreshed: false,
            refreshes: cfg.timing.trefi_ns > 0.0,
            stats: Counters::default(),
        }
    }

    /// Statistics so far.
    pub fn stats(&self) -> DeviceStats {
        let c = &self.stats;
        let activates = c.row_closed + c.row_conflicts;
        DeviceStats {
            reads: c.reads,
            writes: c.writes,
            row_hits: c.row_hits,
            row_closed: c.row_closed,
            row_conflicts: c.row_conflicts,
            activates,
            media_read_bytes: activates * self.media_access_bytes,
            media_write_bytes: c.writes * self.media_access_bytes,
            bus_busy_ps: (c.reads + c.writes + c.buffer_reads) * self.t.tburst,
            refreshes: c.refreshes,
        }
    }

    /// Device timing in picoseconds.
    pub fn timing(&self) -> &Timing {
        &self.t
    }

    /// The read buffer, when the device has one.
    pub fn read_buffer(&self) -> Option<&ReadBuffer> {
        self.read_buffer.as_ref()
    }

    /// Panics unless `bank` is one of the channel's banks: the public methods given a bank
    /// number check it once, then index the tables without checks (see [`Dense`]).
    #[inline(always)]
    fn check_bank(&self, bank: usize) {
        assert!(
            bank < self.banks.len(),
            "bank {bank} of {}",
            self.banks.len()
        );
    }

    /// Flat index of the bank `loc` names within this channel.
    #[inline]
    pub fn bank_index(&self, loc: &Location) -> usize {
        (loc.rank * self.banks_per_rank + loc.bank) as usize
    }

    /// Earliest time the first command of an access to row `row` of flat bank `bank` could
    /// issue, and whether it would be a row hit.
    #[inline]
    pub fn readiness(&self, bank: usize, row: u64, now: Ps) -> (Ps, bool) {
        self.check_bank(bank);
        let b = &self.banks[bank];
        if b.open_row == row {
            (now.max(b.next_col), true)
        } else if b.open_row == NO_ROW {
            let r = &self.ranks[b.rank as usize];
            (
                now.max(b.next_act)
                    .max(r.next_act)
                    .max(r.faw_ready(self.t.tfaw)),
                false,
            )
        } else {
            (now.max(b.next_pre), false)
        }
    }

    /// Number of banks in the channel (all ranks).
    pub fn bank_count(&self) -> usize {
        self.banks.len()
    }

    /// The open row of flat bank `bank` (`u64::MAX` when closed).
    #[inline]
    pub fn open_row(&self, bank: usize) -> u64 {
        self.check_bank(bank);
        self.banks[bank].open_row
    }

    /// For flat bank `bank` at `now`: the earliest time a column command to its open row could
    /// issue, and the earliest time the first command of an access to another row could issue
    /// (activate when closed, precharge when another row is open).
    #[inline]
    pub fn bank_readiness(&self, bank: usize, now: Ps) -> (Ps, Ps) {
        let (hit, miss) = self.raw_readiness(bank);
        (now.max(hit), now.max(miss))
    }

    /// [`bank_readiness`](Self::bank_readiness) before raising to the current time: the times
    /// from which a row hit and a row miss to flat bank `bank` could issue. They change only
    /// when a request is committed to this bank, or, for a closed bank, when another bank of
    /// its rank is activated.
    #[inline(always)]
    pub fn raw_readiness(&self, bank: usize) -> (Ps, Ps) {
        self.check_bank(bank);
        let b = &self.banks[bank];
        let miss = if b.open_row == NO_ROW {
            let r = &self.ranks[b.rank as usize];
            b.next_act.max(r.next_act).max(r.faw_ready(self.t.tfaw))
        } else {
            b.next_pre
        };
        (b.next_col, miss)
    }

    /// True while some bank is closed (its readiness follows its rank's).
    #[inline]
    pub fn has_closed_banks(&self) -> bool {
        self.closed_banks > 0
    }

    /// True (once) when a refresh applied since the last call closed a rank's banks and
    /// moved their readiness.
    #[inline]
    pub fn take_refreshed(&mut self) -> bool {
        if self.refreshed {
            self.refreshed = false;
            true
        } else {
            false
        }
    }

    /// The command times of an access to row `row` of flat bank `bank` starting no earlier
    /// than `now`, from the current bank, rank and bus state (nothing changes). `bank` was
    /// checked by the caller.
    #[inline(always)]
    fn schedule(&self, bank: usize, row: u64, is_write: bool, now: Ps) -> Schedule {
        let t = &self.t;
        let b = &self.banks[bank];
        let r = &self.ranks[b.rank as usize];
        let (outcome, precharge, activate, col_min) = if b.open_row == row {
            (RowOutcome::Hit, None, None, now.max(b.next_col))
        } else {
            let (outcome, pre) = if b.open_row == NO_ROW {
                (RowOutcome::Closed, None)
            } else {
                (RowOutcome::Conflict, Some(now.max(b.next_pre)))
            };
            let act = pre
                .map_or(now, |p| p + t.trp)
                .max(b.next_act)
                .max(r.next_act)
                .max(r.faw_ready(t.tfaw));
            (outcome, pre, Some(act), (act + t.trcd).max(b.next_col))
        };
        let (column, data_start) = if is_write {
            let col = col_min.max(self.bus_free.saturating_sub(t.tcwd));
            (col, col + t.tcwd)
        } else {
            let col = col_min
                .max(r.next_read_col)
                .max(self.bus_free.saturating_sub(t.tcl));
            (col, col + t.tcl)
        };
        Schedule {
            outcome,
            precharge,
            activate,
            column,
            data_start,
        }
    }

    /// [`schedule`](Self::schedule) on a refreshing device (DRAM) whose schedule `s` has its
    /// column command at or after the next refresh of the rank of `bank`: applies the
    /// refreshes due before the access's column command would issue, and schedules anew.
    #[inline(never)]
    #[cold]
    fn schedule_after_refreshes(
        &mut self,
        bank: usize,
        row: u64,
        is_write: bool,
        now: Ps,
        mut s: Schedule,
    ) -> Schedule {
        let rank = self.banks[bank].rank as usize;
        loop {
            self.refresh(rank, s.column);
            s = self.schedule(bank, row, is_write, now);
            if s.column < self.ranks[rank].next_refresh {
                return s;
            }
        }
    }

    /// Applies the refresh of `rank` due at or before `upto` (the latest one, when several
    /// intervals passed): waits for the rank's open banks to allow a precharge, precharges
    /// them, keeps every bank busy for tRFC, leaves them closed.
    #[cold]
    fn refresh(&mut self, rank: usize, upto: Ps) {
        let t = self.t;
        let r = &mut self.ranks[rank];
        let due = r.next_refresh + (upto - r.next_refresh) / t.trefi * t.trefi;
        r.next_refresh = due + t.trefi;
        let banks = rank * self.banks_per_rank as usize..(rank + 1) * self.banks_per_rank as usize;
        let mut start = due;
        let mut open = false;
        for b in &self.banks.as_slice()[banks.clone()] {
            if b.open_row != NO_ROW {
                open = true;
                start = start.max(b.next_pre);
            }
            start = start.max(b.next_act);
        }
        let end = start + if open { t.trp } else { 0 } + t.trfc;
        for b in &mut self.banks.as_mut_slice()[banks] {
            if b.open_row != NO_ROW {
                b.open_row = NO_ROW;
                self.closed_banks += 1;
            }
            b.next_act = b.next_act.max(end);
        }
        self.refreshed = true;
        self.stats.refreshes += 1;
    }

    /// Schedules and commits an access to row `row` of flat bank `bank` starting no earlier
    /// than `now`: computes when each command can issue given bank, rank and bus state (and a
    /// refresh due before its column command), then applies the schedule to that state.
    /// Returns the schedule.
    #[inline]
    pub fn access(&mut self, bank: usize, row: u64, is_write: bool, now: Ps) -> AccessPlan {
        if self.refreshes {
            self.access_with::<true>(bank, row, is_write, now)
        } else {
            self.access_with::<false>(bank, row, is_write, now)
        }
    }

    /// Whether the device refreshes (DRAM). On a device that does not,
    /// [`access_with::<false>`](Self::access_with) is [`access`](Self::access) and
    /// [`take_refreshed`](Self::take_refreshed) is always false.
    #[inline]
    pub fn refreshes(&self) -> bool {
        self.refreshes
    }

    /// [`access`](Self::access) for a device that refreshes (`REFRESH`, DRAM) or not (NVM:
    /// every rank's `next_refresh` is `Ps::MAX`, so the refresh check is left out). The
    /// caller decides once which, from [`refreshes`](Self::refreshes).
    #[inline(always)]
    pub fn access_with<const REFRESH: bool>(
        &mut self,
        bank: usize,
        row: u64,
        is_write: bool,
        now: Ps,
    ) -> AccessPlan {
        debug_assert_eq!(REFRESH, self.refreshes);
        self.check_bank(bank);
        let rank = self.banks[bank].rank as usize;
        let mut s = self.schedule(bank, row, is_write, now);
        if REFRESH && s.column >= self.ranks[rank].next_refresh {
            s = self.schedule_after_refreshes(bank, row, is_write, now, s);
        }
        let Schedule {
            outcome,
            precharge,
            activate,
            column,
            data_start,
        } = s;
        let t = &self.t;
        let r = &mut self.ranks[rank];
        let data_end = data_start + t.tburst;
        let done = if is_write { data_end + t.twr } else { data_end };
        // Its effect on the bank, the rank and the bus.
        let bk = &mut self.banks[bank];
        match activate {
            None => self.stats.row_hits += 1,
            Some(act) => {
                if outcome == RowOutcome::Closed {
                    self.stats.row_closed += 1;
                    self.closed_banks -= 1;
                } else {
                    self.stats.row_conflicts += 1;
                }
                r.last_acts[(r.acts_seen % 4) as usize] = act;
                r.acts_seen += 1;
                r.next_act = act + t.trrd;
                bk.open_row = row;
                bk.next_pre = act + t.tras;
                bk.next_col = act + t.trcd;
            }
        }
        bk.next_col = bk.next_col.max(column + t.tburst);
        if is_write {
            bk.next_pre = bk.next_pre.max(done);
            if self.write_blocks_bank {
                // NVM: the cell write occupies the bank until it completes.
                bk.next_col = bk.next_col.max(done);
            }
            r.next_read_col = r.next_read_col.max(data_end + t.twtr);
            self.stats.writes += 1;
        } else {
            bk.next_pre = bk.next_pre.max(column + t.trtp);
            self.stats.reads += 1;
        }
        self.bus_free = data_end;
        AccessPlan {
            outcome,
            precharge,
            activate,
            column,
            data_end,
            done,
        }
    }

    /// Tries the read buffer for a read of the line at `addr`: on a hit returns the plan of a
    /// buffer-served read (bus only) and commits it; on a miss returns `None`.
    pub fn read_from_buffer(&mut self, addr: u64, now: Ps) -> Option<AccessPlan> {
        let buffer = self.read_buffer.as_mut()?;
        let xpline = match self.xpline_shift {
            Some(s) => addr >> s,
            None => addr / self.xpline_bytes,
        };
        if !buffer.lookup(xpline) {
            return None;
        }
        let column = now.max(self.bus_free.saturating_sub(self.t.tcl));
        let data_end = column + self.t.tcl + self.t.tburst;
        self.bus_free = data_end;
        self.stats.buffer_reads += 1;
        Some(AccessPlan {
            outcome: RowOutcome::ReadBuffer,
            precharge: None,
            activate: None,
            column,
            data_end,
            done: data_end,
        })
    }

    /// Records that a media read of the line at `addr` filled its XPLine into the read buffer.
    #[inline]
    pub fn fill_read_buffer(&mut self, addr: u64) {
        if let Some(rb) = self.read_buffer.as_mut() {
            let xpline = match self.xpline_shift {
                Some(s) => addr >> s,
                None => addr / self.xpline_bytes,
            };
            rb.insert(xpline);
        }
    }
}
