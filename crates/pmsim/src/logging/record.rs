//! The hardware log's record format and the recovery scan shared by the logging schemes.
//!
//! A log record is up to [`ENTRIES_PER_RECORD`] log entries (each a whole 64 B line holding
//! the new contents of one home line, or its old contents in LAD's undo log) and a header (ATOM's log entry collation, as REDU and
//! LALEA use it). The first header line holds the seven home addresses (bytes 0..56) and a
//! metadata word (bytes 56..64, [`HeaderMeta`]). LALEA's header has a second line: the log
//! addresses of the seven entries (which may lie in any bank) and `next_ptr`, the header of
//! the transaction's next record (0 in its last record).
//!
//! A transaction is committed when the headers of all its records are durable and the last
//! one says so ([`HeaderMeta::last`]); a header is written only after its entries are durable
//! (or, under BLOM, flushed by ADR only then), so a durable header implies durable entries.
//! Recovery replays committed transactions in stamp order, skipping those a thread's
//! non-volatile `applied` register says are already in place.
//!
//! An undo log (LAD's fallback) is read the other way: a transaction the `applied` register
//! has not passed is not committed, and every durable record of it is rolled back (its
//! entries' old contents written home, newest transaction first). The lines are written in
//! place only once the whole log is durable, so a partial log means nothing to undo, and
//! rolling back a line not yet written is harmless.

use super::LogRegion;
use crate::image::{LineData, PmImage};
use std::collections::BTreeMap;

/// Log entries per record (ATOM LEC: seven entries share one header).
pub const ENTRIES_PER_RECORD: usize = 7;

const MAGIC: u64 = 0xa5;

/// The metadata word of a header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderMeta {
    /// Transaction stamp (global, in `TxBegin` order).
    pub stamp: u32,
    /// Thread of the transaction.
    pub thread: u8,
    /// Index of the record within its transaction.
    pub index: u8,
    /// Valid entries (`valid_cnt`), 0..=7.
    pub count: u8,
    /// The transaction's last record: its durability commits the transaction.
    pub last: bool,
}

impl HeaderMeta {
    /// The word as stored (little-endian at byte 56 of the header's first line).
    pub fn encode(&self) -> u64 {
        self.stamp as u64
            | (self.thread as u64) << 32
            | (self.index as u64) << 40
            | (self.count as u64) << 48
            | (self.last as u64) << 52
            | MAGIC << 56
    }

    /// Decodes a stored word; `None` when it is not a header.
    pub fn decode(w: u64) -> Option<HeaderMeta> {
        let count = (w >> 48 & 0xf) as u8;
        (w >> 56 == MAGIC && count as usize <= ENTRIES_PER_RECORD && w >> 53 & 7 == 0).then_some(
            HeaderMeta {
                stamp: w as u32,
                thread: (w >> 32) as u8,
                index: (w >> 40) as u8,
                count,
                last: w >> 52 & 1 == 1,
            },
        )
    }
}

fn put_words(words: &[u64], last: u64) -> [u8; 64] {
    let mut line = [0u8; 64];
    for (i, w) in words.iter().take(ENTRIES_PER_RECORD).enumerate() {
        line[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
    }
    line[56..64].copy_from_slice(&last.to_le_bytes());
    line
}

fn word(line: &[u8; 64], i: usize) -> u64 {
    u64::from_le_bytes(line[i * 8..i * 8 + 8].try_into().expect("8 bytes"))
}

/// The first header line: home addresses and the metadata word.
pub fn header_line(meta: HeaderMeta, homes: &[u64]) -> [u8; 64] {
    put_words(homes, meta.encode())
}

/// LALEA's second header line: the entries' log addresses and `next_ptr`. The two header
/// lines are written side by side, so a crash may keep one without the other: the second
/// line carries its record's identity (stamp, thread, index: 48 bits) in the six low bits of
/// its eight line-aligned addresses, and recovery accepts a header only when both lines agree.
pub fn links_line(meta: HeaderMeta, entries: &[u64], next: u64) -> [u8; 64] {
    let id = link_id(meta);
    let mut words = [0u64; ENTRIES_PER_RECORD + 1];
    words[..entries.len()].copy_from_slice(entries);
    words[ENTRIES_PER_RECORD] = next;
    for (i, w) in words.iter_mut().enumerate() {
        *w |= id >> (6 * i) & 63;
    }
    put_words(&words[..ENTRIES_PER_RECORD], words[ENTRIES_PER_RECORD])
}

/// The identity a second header line carries.
fn link_id(meta: HeaderMeta) -> u64 {
    meta.stamp as u64 | (meta.thread as u64) << 32 | (meta.index as u64) << 40
}

/// Splits a second header line into its eight addresses and the identity it carries.
fn read_links(line: &[u8; 64]) -> ([u64; ENTRIES_PER_RECORD + 1], u64) {
    let mut words = [0u64; ENTRIES_PER_RECORD + 1];
    let mut id = 0;
    for (i, w) in words.iter_mut().enumerate() {
        let raw = word(line, i);
        *w = raw & !63;
        id |= (raw & 63) << (6 * i);
    }
    (words, id)
}

/// Where a record's entries are, as recovery finds them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// The seven entry lines precede the one-line header (sequential allocation).
    Sequential,
    /// A two-line header lists the entries' addresses and links to the next record.
    Linked,
}

/// How recovery uses the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Entries hold new contents: replay complete transactions.
    Redo,
    /// Entries hold old contents: roll back every logged transaction not committed.
    Undo,
}

/// One parsed header.
#[derive(Clone, Debug)]
struct Parsed {
    meta: HeaderMeta,
    homes: Vec<u64>,
    entries: Vec<u64>,
    next: u64,
}

/// Recovers `image`: under [`Direction::Redo`] replays every committed transaction whose stamp
/// is not below its thread's `applied` register, under [`Direction::Undo`] rolls back every
/// logged one. `header_slot(a)` gives the header lines of the slot whose first line is `a`
/// (`None` when `a` is not a header slot); only lines of `region` are read as log.
pub fn recover(
    image: &PmImage,
    region: LogRegion,
    layout: Layout,
    direction: Direction,
    applied: &[u32],
    header_slot: impl Fn(u64) -> Option<[u64; 2]>,
) -> PmImage {
    let mut headers: BTreeMap<u64, Parsed> = BTreeMap::new();
    let read = |a: u64| image.line(a).copied().unwrap_or([0; 64]);
    for a in image.line_addrs() {
        if !region.contains(a) {
            continue;
        }
        let Some(slot) = header_slot(a) else {
            continue;
        };
        let line = read(slot[0]);
        let Some(meta) = HeaderMeta::decode(word(&line, 7)) else {
            continue;
        };
        if meta.stamp < applied.get(meta.thread as usize).copied().unwrap_or(0) {
            continue;
        }
        let n = meta.count as usize;
        let homes: Vec<u64> = (0..n).map(|i| word(&line, i)).collect();
        let (entries, next) = match layout {
            Layout::Sequential => (
                (0..n)
                    .map(|i| slot[0] - (ENTRIES_PER_RECORD - i) as u64 * 64)
                    .collect(),
                0,
            ),
            Layout::Linked => {
                let (words, id) = read_links(&read(slot[1]));
                if id != link_id(meta) {
                    // The second line is not (yet) this record's.
                    continue;
                }
                (words[..n].to_vec(), words[ENTRIES_PER_RECORD])
            }
        };
        headers.insert(
            slot[0],
            Parsed {
                meta,
                homes,
                entries,
                next,
            },
        );
    }
    let mut out = image.clone();
    let mut put = |home: u64, entry: u64| {
        let data = read(entry);
        out.apply(home, &LineData::new(home, &data).expect("a whole line"));
    };
    if direction == Direction::Undo {
        let mut recs: Vec<&Parsed> = headers.values().collect();
        recs.sort_by_key(|p| std::cmp::Reverse((p.meta.stamp, p.meta.index)));
        for p in recs {
            for (home, entry) in p.homes.iter().zip(&p.entries) {
                put(*home, *entry);
            }
        }
        return out;
    }
    // Committed transactions: (stamp, thread) → records in order.
    let mut txs: Vec<(u32, Vec<&Parsed>)> = Vec::new();
    match layout {
        Layout::Linked => {
            // Walk each transaction's chain from its first record through next_ptr.
            for p in headers.values().filter(|p| p.meta.index == 0) {
                let mut chain = vec![p];
                let mut cur = p;
                while !cur.meta.last {
                    match headers.get(&cur.next) {
                        Some(n)
                            if n.meta.stamp == p.meta.stamp
                                && n.meta.thread == p.meta.thread
                                && n.meta.index as usize == chain.len() =>
                        {
                            chain.push(n);
                            cur = n;
                        }
                        _ => break,
                    }
                }
                if cur.meta.last {
                    txs.push((p.meta.stamp, chain));
                }
            }
        }
        Layout::Sequential => {
            let mut groups: BTreeMap<(u32, u8), Vec<&Parsed>> = BTreeMap::new();
            for p in headers.values() {
                groups
                    .entry((p.meta.stamp, p.meta.thread))
                    .or_default()
                    .push(p);
            }
            for ((stamp, _), mut recs) in groups {
                recs.sort_by_key(|p| p.meta.index);
                let complete = recs
                    .iter()
                    .enumerate()
                    .all(|(i, p)| p.meta.index as usize == i)
                    && recs.last().is_some_and(|p| p.meta.last)
                    && recs.iter().filter(|p| p.meta.last).count() == 1;
                if complete {
                    txs.push((stamp, recs));
                }
            }
        }
    }
    txs.sort_by_key(|(stamp, _)| *stamp);
    for (_, recs) in txs {
        for p in recs {
            for (home, entry) in p.homes.iter().zip(&p.entries) {
                put(*home, *entry);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_round_trips_and_rejects_other_words() {
        let m = HeaderMeta {
            stamp: 0xdead_beef,
            thread: 3,
            index: 2,
            count: 7,
            last: true,
        };
        assert_eq!(HeaderMeta::decode(m.encode()), Some(m));
        assert_eq!(HeaderMeta::decode(0), None);
        assert_eq!(HeaderMeta::decode(m.encode() & !(0xff << 56)), None);
        // a count above 7 is not a header
        assert_eq!(HeaderMeta::decode(m.encode() | 0xf << 48), None);
    }

    #[test]
    fn links_carry_their_record_identity() {
        let m = HeaderMeta {
            stamp: 0x1234_5678,
            thread: 9,
            index: 4,
            count: 2,
            last: false,
        };
        let line = links_line(m, &[0x1000_0000_0040, 0x2000_0000_0080], 0x3000_0000_00c0);
        let (words, id) = read_links(&line);
        assert_eq!(id, link_id(m));
        assert_eq!(&words[..2], &[0x1000_0000_0040, 0x2000_0000_0080]);
        assert_eq!(words[7], 0x3000_0000_00c0);
        let other = HeaderMeta {
            stamp: 0x1234_5679,
            ..m
        };
        assert_ne!(id, link_id(other));
    }
}
