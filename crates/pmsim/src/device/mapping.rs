//! Address mapping: physical address → channel, rank, bank, row, column.

use crate::config::{DeviceConfig, MappingScheme};

/// Size of a cache line, the unit of every memory request.
pub const LINE_BYTES: u64 = 64;

/// Where an address lives in the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    /// Channel index.
    pub channel: u32,
    /// Rank within the channel.
    pub rank: u32,
    /// Bank within the rank.
    pub bank: u32,
    /// Row within the bank.
    pub row: u64,
    /// Line-sized column within the row.
    pub column: u32,
}

/// A divisor that is a power of two most of the time: shifts then, division otherwise.
#[derive(Clone, Copy, Debug)]
struct Divisor {
    value: u64,
    shift: Option<u32>,
}

impl Divisor {
    fn new(value: u64) -> Divisor {
        Divisor {
            value,
            shift: value.is_power_of_two().then(|| value.trailing_zeros()),
        }
    }

    /// (x / d, x % d)
    #[inline]
    fn div_rem(self, x: u64) -> (u64, u64) {
        match self.shift {
            Some(s) => (x >> s, x & (self.value - 1)),
            None => (x / self.value, x % self.value),
        }
    }
}

/// Splits addresses by interleaving `granule`-byte chunks over channels, then banks, then
/// ranks; the remaining bits (and the offset inside a chunk) select row and column, so every
/// chunk is contiguous within one row when it is no larger than a row.
#[derive(Clone, Debug)]
pub struct AddressMap {
    granule: Divisor,
    channels: Divisor,
    banks: Divisor,
    ranks: Divisor,
    row_bytes: Divisor,
    /// Every count and size is a power of two (the usual case): decoding is shifts and masks.
    shifts: Option<Shifts>,
}

/// Bit widths of the fields of an address when every divisor is a power of two, and the
/// masks that extract them.
#[derive(Clone, Copy, Debug)]
struct Shifts {
    granule: u32,
    channels: u32,
    banks: u32,
    ranks: u32,
    row_bytes: u32,
    granule_mask: u64,
    channel_mask: u64,
    bank_mask: u64,
    rank_mask: u64,
    row_mask: u64,
}

impl AddressMap {
    /// Builds the mapping a device config describes.
    pub fn new(cfg: &DeviceConfig) -> AddressMap {
        let granule = match cfg.mapping {
            MappingScheme::CacheLine => LINE_BYTES,
            MappingScheme::RowStride => cfg.row_bytes as u64,
            MappingScheme::Page => cfg.page_bytes as u64,
        };
        let granule = Divisor::new(granule);
        let channels = Divisor::new(cfg.channels as u64);
        let banks = Divisor::new(cfg.banks as u64);
        let ranks = Divisor::new(cfg.ranks as u64);
        let row_bytes = Divisor::new(cfg.row_bytes as u64);
        let shifts = (|| {
            Some(Shifts {
                granule: granule.shift?,
                channels: channels.shift?,
                banks: banks.shift?,
                ranks: ranks.shift?,
                row_bytes: row_bytes.shift?,
                granule_mask: granule.value - 1,
                channel_mask: channels.value - 1,
                bank_mask: banks.value - 1,
                rank_mask: ranks.value - 1,
                row_mask: row_bytes.value - 1,
            })
        })();
        AddressMap {
            granule,
            channels,
            banks,
            ranks,
            row_bytes,
            shifts,
        }
    }

    /// Interleaving granularity in bytes.
    pub fn granule(&self) -> u64 {
        self.granule.value
    }

    /// Decodes a byte address. (Always inlined: out of line, the call and the `Location`
    /// returned through memory cost a third of the decoding.)
    #[inline(always)]
    pub fn locate(&self, addr: u64) -> Location {
        if let Some(sh) = &self.shifts {
            return Self::locate_shifts(sh, addr);
        }
        let (chunk, within) = self.granule.div_rem(addr);
        let (chunk, channel) = self.channels.div_rem(chunk);
        let (chunk, bank) = self.banks.div_rem(chunk);
        let (chunk, rank) = self.ranks.div_rem(chunk);
        let bank_offset = chunk * self.granule.value + within;
        let (row, in_row) = self.row_bytes.div_rem(bank_offset);
        Location {
            channel: channel as u32,
            rank: rank as u32,
            bank: bank as u32,
            row,
            column: (in_row / LINE_BYTES) as u32,
        }
    }

    /// [`locate`](Self::locate) when every divisor is a power of two.
    #[inline(always)]
    fn locate_shifts(sh: &Shifts, addr: u64) -> Location {
        let within = addr & sh.granule_mask;
        let chunk = addr >> sh.granule;
        let channel = chunk & sh.channel_mask;
        let chunk = chunk >> sh.channels;
        let bank = chunk & sh.bank_mask;
        let chunk = chunk >> sh.banks;
        let rank = chunk & sh.rank_mask;
        let chunk = chunk >> sh.ranks;
        let bank_offset = (chunk << sh.granule) | within;
        Location {
            channel: channel as u32,
            rank: rank as u32,
            bank: bank as u32,
            row: bank_offset >> sh.row_bytes,
            column: ((bank_offset & sh.row_mask) / LINE_BYTES) as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(mapping: MappingScheme) -> DeviceConfig {
        DeviceConfig {
            channels: 2,
            ranks: 1,
            banks: 4,
            row_bytes: 1024,
            mapping,
            page_bytes: 4096,
            ..DeviceConfig::default()
        }
    }

    #[test]
    fn cache_line_interleaving_spreads_consecutive_lines() {
        let m = AddressMap::new(&cfg(MappingScheme::CacheLine));
        let locs: Vec<_> = (0..8).map(|i| m.locate(i * 64)).collect();
        assert_eq!(locs[0].channel, 0);
        assert_eq!(locs[1].channel, 1);
        assert_eq!((locs[2].channel, locs[2].bank), (0, 1));
        // Line 8 wraps back to channel 0 bank 0, next column of the same row.
        let l8 = m.locate(8 * 64);
        assert_eq!((l8.channel, l8.bank, l8.row, l8.column), (0, 0, 0, 1));
    }

    #[test]
    fn row_stride_keeps_a_row_together_and_strides_rows() {
        let m = AddressMap::new(&cfg(MappingScheme::RowStride));
        let a = m.locate(0);
        let b = m.locate(1023);
        assert_eq!((a.channel, a.bank, a.row), (b.channel, b.bank, b.row));
        assert_eq!(b.column, 15);
        let c = m.locate(1024);
        assert_ne!((a.channel, a.bank), (c.channel, c.bank));
    }

    #[test]
    fn page_mapping_keeps_a_page_in_one_bank() {
        let m = AddressMap::new(&cfg(MappingScheme::Page));
        let a = m.locate(0);
        let b = m.locate(4095);
        assert_eq!((a.channel, a.bank), (b.channel, b.bank));
        assert_eq!(b.row, 3); // 4 KB page over 1 KB rows
        let c = m.locate(4096);
        assert_ne!((a.channel, a.bank), (c.channel, c.bank));
    }

    #[test]
    fn non_power_of_two_counts_use_division() {
        let mut c = cfg(MappingScheme::CacheLine);
        c.channels = 3;
        c.banks = 6;
        let m = AddressMap::new(&c);
        let l = m.locate(64 * 20); // chunk 20: channel 2, then 6 → bank 0, then 1 → rank 0 ...
        assert_eq!((l.channel, l.bank), (20 % 3, (20 / 3) % 6));
    }

    #[test]
    fn power_of_two_fast_path_matches_division() {
        for mapping in [
            MappingScheme::CacheLine,
            MappingScheme::RowStride,
            MappingScheme::Page,
        ] {
            let mut c = cfg(mapping);
            c.ranks = 2;
            let m = AddressMap::new(&c);
            assert!(m.shifts.is_some());
            let mut slow = m.clone();
            slow.shifts = None;
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            for _ in 0..10_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let a = x >> 20;
                assert_eq!(m.locate(a), slow.locate(a));
            }
        }
    }

    #[test]
    fn mapping_is_a_bijection_on_lines() {
        let m = AddressMap::new(&cfg(MappingScheme::Page));
        let mut seen = std::collections::HashSet::new();
        for i in 0..4096u64 {
            let l = m.locate(i * 64);
            assert!(seen.insert((l.channel, l.rank, l.bank, l.row, l.column)));
        }
    }
}
