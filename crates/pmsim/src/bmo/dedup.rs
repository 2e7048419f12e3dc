//! Inline deduplication of PM writes (PMWeaver Sec. II-B 2, Fig. 5; DeWrite, MICRO'18).
//!
//! Functional state: an address-mapping table (logical line -> the fingerprint of its
//! contents) and a dedup hash table (fingerprint -> reference count and the stored bytes),
//! both read through one metadata cache (tags only). A write-back's line is fingerprinted; when
//! the table already holds the same bytes the line is a duplicate: only its mapping changes,
//! the media write is skipped. The durable image stays the logical one (what a read returns),
//! so a deduplicated line reads back its own bytes.
//!
//! Latency (the PMWeaver artifact's model, `../shared/REFERENCE.md`): `max(t_addr + mapping
//! miss, t_data + hash + table miss)`: the mapping lookup depends on the address, the
//! fingerprint and the table lookup on the data.

use super::meta_cache::MetaCache;
use super::{BmoEngine, Precomputed, WriteOutcome, MAX_DEPS};
use crate::config::BmoConfig;
use crate::fast_hash::FastMap;
use crate::time::{ns_to_ps, Ps};

/// Hash-table buckets whose blocks the metadata cache holds (2^20 buckets of 64 B). An
/// assumption: neither PMWeaver nor its artifact (REFERENCE.md) sizes the fingerprint table; 2^20
/// buckets (64 MiB of table) is far beyond the 256 KB metadata cache, so a lookup misses it as
/// a table the size of PM's would.
const TABLE_BUCKET_BITS: u32 = 20;

/// The deduplication engine (`controller.bmo = "dedup"`).
#[derive(Clone)]
pub struct Dedup {
    hash: Ps,
    miss: Ps,
    cache: MetaCache,
    /// Logical line -> fingerprint of the contents it maps to ([`UNIQUE`]: stored on its own,
    /// after a fingerprint collision).
    mapping: FastMap<u64, u64>,
    /// Fingerprint -> (lines mapped to it, the stored bytes).
    table: FastMap<u64, (u32, [u8; 64])>,
    stats: DedupStats,
}

#[derive(Clone, Copy, Debug, Default)]
struct DedupStats {
    writes: u64,
    reads: u64,
    duplicates: u64,
    unknown_data: u64,
    mapping_misses: u64,
    table_misses: u64,
    addr_precomputed: u64,
    data_precomputed: u64,
    delay_ps: u64,
}

impl Default for Dedup {
    fn default() -> Self {
        let mut d = Dedup {
            hash: 0,
            miss: 0,
            cache: MetaCache::new(1, 1),
            mapping: FastMap::default(),
            table: FastMap::default(),
            stats: DedupStats::default(),
        };
        d.configure(&BmoConfig::default())
            .expect("default BMO parameters are valid");
        d
    }
}

/// The 64-bit fingerprint of a line (a stand-in for the engine's SHA-1: collisions are caught
/// by comparing the stored bytes, never trusted).
pub fn fingerprint(line: &[u8; 64]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for chunk in line.chunks_exact(8) {
        let w = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        h = (h ^ w).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(29);
    }
    h ^ (h >> 31)
}

/// Mapping of a line stored on its own: its bytes collided with a different line's
/// fingerprint, so it holds no reference in the table.
const UNIQUE: u64 = u64::MAX;

/// Metadata-cache key of the mapping-table block holding `line_addr`'s entry (8 B entries).
#[inline]
fn mapping_key(line_addr: u64) -> u64 {
    (1 << 63) | (line_addr >> 9)
}

/// Metadata-cache key of the hash-table bucket of fingerprint `fp`.
#[inline]
fn bucket_key(fp: u64) -> u64 {
    (1 << 62) | (fp & ((1 << TABLE_BUCKET_BITS) - 1))
}

impl Dedup {
    fn miss_if(&self, hit: bool) -> Ps {
        if hit {
            0
        } else {
            self.miss
        }
    }

    /// Points `line_addr` at fingerprint `fp` (with `bytes`), dropping its old reference.
    /// Returns whether the bytes were already stored (a duplicate).
    fn remap(&mut self, line_addr: u64, fp: u64, bytes: &[u8; 64]) -> bool {
        let (duplicate, mapped) = match self.table.get_mut(&fp) {
            Some((refs, stored)) if stored == bytes => {
                *refs += 1;
                (true, fp)
            }
            // A fingerprint collision: the line is stored on its own (a fingerprint is never
            // trusted without its bytes), holding no reference.
            Some(_) => (false, UNIQUE),
            None if fp == UNIQUE => (false, UNIQUE),
            None => {
                self.table.insert(fp, (1, *bytes));
                (false, fp)
            }
        };
        if let Some(old) = self.mapping.insert(line_addr, mapped) {
            if let Some(e) = self.table.get_mut(&old) {
                e.0 -= 1;
                if e.0 == 0 {
                    self.table.remove(&old);
                }
            }
        }
        duplicate
    }
}

impl BmoEngine for Dedup {
    fn clone_box(&self) -> Box<dyn BmoEngine> {
        Box::new(self.clone())
    }

    fn name(&self) -> &'static str {
        "dedup"
    }

    fn configure(&mut self, c: &BmoConfig) -> Result<(), String> {
        self.hash = ns_to_ps(c.dedup_hash_ns);
        self.miss = ns_to_ps(c.metadata_miss_ns);
        self.cache = MetaCache::new(c.dedup_cache_kib, c.metadata_cache_ways);
        Ok(())
    }

    fn needs_data(&self) -> bool {
        true
    }

    fn precompute(&self, line_addr: u64, data: Option<&[u8; 64]>, now: Ps) -> Option<Precomputed> {
        Some(Precomputed {
            line_addr,
            data: data.copied(),
            issued: now,
            addr_ready: now + self.miss_if(self.cache.probe(mapping_key(line_addr))),
            // The fingerprint; the table lookup happens at the write-back, against the table
            // as it is then.
            data_ready: if data.is_some() {
                now + self.hash
            } else {
                Ps::MAX
            },
            versions: [0; MAX_DEPS],
            deps: 0,
        })
    }

    fn write(
        &mut self,
        line_addr: u64,
        line: Option<&[u8; 64]>,
        now: Ps,
        pre: Option<&Precomputed>,
    ) -> WriteOutcome {
        self.stats.writes += 1;
        let mapping_hit = self.cache.access(mapping_key(line_addr));
        if !mapping_hit {
            self.stats.mapping_misses += 1;
        }
        // Nothing a precomputation holds can go stale: the fingerprint depends on the bytes
        // alone (a mismatch is caught by the validator), and the mapping lookup only brought
        // the entry's block into the cache; the table is looked up at the write-back.
        let fresh_addr = now + self.miss_if(mapping_hit);
        let addr_done = match pre {
            Some(p) => {
                self.stats.addr_precomputed += 1;
                p.addr_ready.min(fresh_addr)
            }
            None => fresh_addr,
        };
        let fp_done = match pre.filter(|p| p.data.is_some()) {
            Some(p) => {
                self.stats.data_precomputed += 1;
                p.data_ready.max(now)
            }
            None => now + self.hash,
        };
        let (data_done, media) = match line {
            Some(bytes) => {
                let fp = fingerprint(bytes);
                let table_hit = self.cache.access(bucket_key(fp));
                if !table_hit {
                    self.stats.table_misses += 1;
                }
                let duplicate = self.remap(line_addr, fp, bytes);
                if duplicate {
                    self.stats.duplicates += 1;
                }
                (fp_done + self.miss_if(table_hit), !duplicate)
            }
            None => {
                // Bytes unknown (a trace without values): hashed and stored as unique.
                self.stats.unknown_data += 1;
                (fp_done, true)
            }
        };
        let delay = addr_done.max(data_done).max(now) - now;
        self.stats.delay_ps += delay;
        WriteOutcome { delay, media }
    }

    fn read_delay(&mut self, line_addr: u64, _now: Ps) -> Ps {
        self.stats.reads += 1;
        // The mapping is looked up before the physical line can be read; its fetch is what
        // a miss adds.
        let hit = self.cache.access(mapping_key(line_addr));
        if !hit {
            self.stats.mapping_misses += 1;
        }
        self.miss_if(hit)
    }

    fn stats(&self) -> Vec<(&'static str, u64)> {
        let s = &self.stats;
        vec![
            ("writes", s.writes),
            ("reads", s.reads),
            ("duplicates", s.duplicates),
            ("unknown_data", s.unknown_data),
            ("mapping_misses", s.mapping_misses),
            ("table_misses", s.table_misses),
            ("addr_precomputed", s.addr_precomputed),
            ("data_precomputed", s.data_precomputed),
            ("write_delay_ps", s.delay_ps),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: Ps = 1000;

    #[test]
    fn a_duplicate_line_skips_the_media_write_and_keeps_its_mapping() {
        let mut d = Dedup::default();
        let a = [5u8; 64];
        let out = d.write(0x1000, Some(&a), 0, None);
        assert!(out.media, "first copy is written");
        // Cold: hash 300 + table miss 40 (mapping miss 40 overlaps).
        assert_eq!(out.delay, 340 * NS);
        let out = d.write(0x2000, Some(&a), 1_000 * NS, None);
        assert!(
            !out.media,
            "same bytes elsewhere: a duplicate, no media write"
        );
        assert_eq!(d.stats.duplicates, 1);
        assert_eq!(d.table[&fingerprint(&a)].0, 2);
        // Overwriting one copy drops its reference; the other still maps to the bytes.
        let b = [6u8; 64];
        assert!(d.write(0x2000, Some(&b), 2_000 * NS, None).media);
        assert_eq!(d.table[&fingerprint(&a)].0, 1);
        assert_eq!(d.mapping[&0x1000], fingerprint(&a));
        // Unknown bytes cannot be deduplicated.
        assert!(d.write(0x3000, None, 3_000 * NS, None).media);
    }

    #[test]
    fn predicted_data_hides_the_fingerprint() {
        let mut d = Dedup::default();
        let a = [9u8; 64];
        d.write(0x1000, Some(&a), 0, None);
        let p = d.precompute(0x1000, Some(&a), 1_000 * NS).unwrap();
        // Fingerprint ready at 1.3 us; at the write-back only the (cached) lookup remains.
        let out = d.write(0x1000, Some(&a), 5_000 * NS, Some(&p));
        assert_eq!(out.delay, 0);
        // Address only: the fingerprint is computed at the write-back.
        let p = d.precompute(0x1000, None, 6_000 * NS).unwrap();
        let out = d.write(0x1000, Some(&a), 9_000 * NS, Some(&p));
        assert_eq!(out.delay, 300 * NS);
    }
}
