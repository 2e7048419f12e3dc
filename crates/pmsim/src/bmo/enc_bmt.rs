//! Counter-mode encryption with a Bonsai Merkle tree over the counters and per-line MACs
//! (PMWeaver Sec. II-B 1, Fig. 4; Rogers et al., MICRO'07).
//!
//! Functional state: every line's encryption counter moves on with each write-back (pmlab keeps
//! the number of the line's last write-back); counter blocks (one per 4 KiB page) are the
//! tree's leaves, and every tree node records the last write-back that changed its hash. Counter blocks and tree nodes pass
//! through a counter cache and a verification cache (tags only). The one-time pad, the tree
//! path and the MAC are not computed bit for bit: the durable image holds the plaintext, what a
//! reader through this controller sees.
//!
//! Latency (the PMWeaver artifact's model, `../shared/REFERENCE.md`), for a write whose address
//! is known at `t_addr` and data at `t_data`:
//! * address path: `t_addr` + AES + counter-cache miss + hash x (1 + tree height) + one miss
//!   per tree level fetched (up to the first cached node);
//! * data path: `max(t_addr + AES, t_data)` + hash (the MAC over the ciphertext).
//!
//! A precomputation records how many write-backs the engine had seen. Tree nodes change only
//! with write-backs that no valid precomputation covered (Sec. V-C3: the metadata updates of
//! unpredicted or mispredicted write-backs invalidate the dependent precomputations). At the
//! write-back, a line written since voids the precomputation (its counter moved on); tree
//! nodes changed since are recalculated from the lowest changed level up, each level starting
//! when its node's change was known, unless computing the path afresh at the write-back is
//! done sooner.

use super::meta_cache::MetaCache;
use super::{BmoEngine, Precomputed, WriteOutcome, MAX_DEPS};
use crate::config::BmoConfig;
use crate::fast_hash::FastMap;
use crate::time::{ns_to_ps, Ps};

/// Bytes covered by one counter block (a 4 KiB page of 64 lines: split counters, Yan et al.,
/// ISCA 2006). An assumption: neither PMWeaver nor its artifact (REFERENCE.md) says how many
/// lines share a counter block.
const COUNTER_BLOCK_SHIFT: u32 = 12;

/// The encryption + integrity-verification engine (`controller.bmo = "enc-bmt"`).
#[derive(Clone)]
pub struct EncBmt {
    aes: Ps,
    hash: Ps,
    miss: Ps,
    height: u32,
    arity_bits: u32,
    counters: MetaCache,
    nodes: MetaCache,
    /// Write-backs so far: write `n` is the `n`th (from 1); a precomputation records how many
    /// there had been.
    seq: u64,
    /// Per line: the number of its last write-back (its encryption counter moved on then).
    line_seq: FastMap<u64, u64>,
    /// Per tree node key: the number of the last write-back that changed it, and when that
    /// write-back's new node values were known.
    node_state: FastMap<u64, (u64, Ps)>,
    stats: EncStats,
}

#[derive(Clone, Copy, Debug, Default)]
struct EncStats {
    writes: u64,
    reads: u64,
    counter_misses: u64,
    tree_misses: u64,
    addr_precomputed: u64,
    data_precomputed: u64,
    counter_stale: u64,
    tree_recalculated: u64,
    delay_ps: u64,
}

impl Default for EncBmt {
    fn default() -> Self {
        let mut e = EncBmt {
            aes: 0,
            hash: 0,
            miss: 0,
            height: 1,
            arity_bits: 3,
            counters: MetaCache::new(1, 1),
            nodes: MetaCache::new(1, 1),
            seq: 0,
            line_seq: FastMap::default(),
            node_state: FastMap::default(),
            stats: EncStats::default(),
        };
        e.configure(&BmoConfig::default())
            .expect("default BMO parameters are valid");
        e
    }
}

impl EncBmt {
    /// Key of the tree node at `level` (0: the counter block) above line `line_addr`.
    #[inline]
    fn node_key(&self, line_addr: u64, level: u32) -> u64 {
        let block = line_addr >> COUNTER_BLOCK_SHIFT;
        let idx = block.checked_shr(self.arity_bits * level).unwrap_or(0);
        ((level as u64) << 56) | (idx & ((1 << 56) - 1))
    }

    /// Tree levels fetched on a write or a precomputation: from level 1 up to and including
    /// the first cached node (a cached node is trusted, PMWeaver Fig. 4b / Bonsai Merkle tree).
    fn fetched_levels(&self, line_addr: u64) -> u32 {
        let mut n = 0;
        for level in 1..=self.height {
            if self.nodes.probe(self.node_key(line_addr, level)) {
                break;
            }
            n += 1;
        }
        n
    }

    /// Address-path latency with the given misses.
    fn addr_path(&self, counter_miss: bool, tree_misses: u32) -> Ps {
        self.aes
            + if counter_miss { self.miss } else { 0 }
            + self.hash * (1 + self.height as Ps)
            + self.miss * tree_misses as Ps
    }

    fn changed(&self, key: u64) -> (u64, Ps) {
        self.node_state.get(&key).copied().unwrap_or((0, 0))
    }
}

/// How many write-backs a precomputation had seen.
#[inline]
fn seen(p: &Precomputed) -> u64 {
    p.versions[0] as u64 | (p.versions[1] as u64) << 32
}

impl BmoEngine for EncBmt {
    fn clone_box(&self) -> Box<dyn BmoEngine> {
        Box::new(self.clone())
    }

    fn name(&self) -> &'static str {
        "enc-bmt"
    }

    fn configure(&mut self, c: &BmoConfig) -> Result<(), String> {
        self.aes = ns_to_ps(c.aes_ns);
        self.hash = ns_to_ps(c.hash_ns);
        self.miss = ns_to_ps(c.metadata_miss_ns);
        self.height = c.tree_height;
        self.arity_bits = c.tree_arity.trailing_zeros();
        self.counters = MetaCache::new(c.counter_cache_kib, c.metadata_cache_ways);
        self.nodes = MetaCache::new(c.verification_cache_kib, c.metadata_cache_ways);
        Ok(())
    }

    fn precompute(&self, line_addr: u64, data: Option<&[u8; 64]>, now: Ps) -> Option<Precomputed> {
        let counter_miss = !self.counters.probe(self.node_key(line_addr, 0));
        let tree_misses = self.fetched_levels(line_addr);
        // What the precomputation read is what the first `seq` write-backs left: a line or
        // node changed by a later one is stale.
        let mut versions = [0u32; MAX_DEPS];
        versions[0] = self.seq as u32;
        versions[1] = (self.seq >> 32) as u32;
        Some(Precomputed {
            line_addr,
            data: data.copied(),
            issued: now,
            addr_ready: now + self.addr_path(counter_miss, tree_misses),
            data_ready: if data.is_some() {
                now + self.aes + self.hash
            } else {
                Ps::MAX
            },
            versions,
            deps: 2,
        })
    }

    fn write(
        &mut self,
        line_addr: u64,
        _line: Option<&[u8; 64]>,
        now: Ps,
        pre: Option<&Precomputed>,
    ) -> WriteOutcome {
        self.stats.writes += 1;
        let last = self.line_seq.get(&line_addr).copied().unwrap_or(0);
        // The precomputed pad is void if the line was written since (its counter moved on).
        let pre = pre.filter(|p| {
            let fresh = last <= seen(p);
            if !fresh {
                self.stats.counter_stale += 1;
            }
            fresh
        });
        let counter_miss = !self.counters.probe(self.node_key(line_addr, 0));
        let tree_misses = self.fetched_levels(line_addr);
        let fresh_addr = now + self.addr_path(counter_miss, tree_misses);
        let (addr_done, data_done) = match pre {
            None => (fresh_addr, now + self.aes + self.hash),
            Some(p) => {
                self.stats.addr_precomputed += 1;
                // Recalculate the tree path from the lowest node that changed since the
                // precomputation, each level once its node's last change is known.
                let mut ready = p.addr_ready;
                let mut recalculating = false;
                for level in 0..=self.height {
                    let (by, changed) = self.changed(self.node_key(line_addr, level));
                    if !recalculating && by > seen(p) {
                        recalculating = true;
                        self.stats.tree_recalculated += 1;
                    }
                    if recalculating {
                        ready = ready.max(changed) + self.hash;
                    }
                }
                // Recalculating never takes longer than computing afresh at the write-back.
                let ready = ready.min(fresh_addr);
                let data_done = match p.data {
                    Some(_) => {
                        self.stats.data_precomputed += 1;
                        p.data_ready
                    }
                    // The pad is ready; the ciphertext's MAC waits for the data.
                    None => (p.issued + self.aes).max(now) + self.hash,
                };
                (ready, data_done)
            }
        };
        let done = addr_done.max(data_done).max(now);
        // Commit the write: the counter cache and the fetched tree path are filled, the
        // counter moves on and every node on the path changes.
        if !self.counters.access(self.node_key(line_addr, 0)) {
            self.stats.counter_misses += 1;
        }
        for level in 1..=self.height {
            let hit = self.nodes.access(self.node_key(line_addr, level));
            if hit {
                break;
            }
            self.stats.tree_misses += 1;
        }
        self.seq += 1;
        self.line_seq.insert(line_addr, self.seq);
        // A validated precomputation's tree update was anticipated (predictions are computed
        // in order, each on the metadata the earlier ones leave): only unpredicted or
        // mispredicted write-backs change the metadata other precomputations depend on
        // (PMWeaver Sec. V-C3).
        let anticipated = pre.is_some();
        for level in (0..=self.height).filter(|_| !anticipated) {
            let key = self.node_key(line_addr, level);
            self.node_state.insert(key, (self.seq, done));
        }
        let delay = done - now;
        self.stats.delay_ps += delay;
        WriteOutcome { delay, media: true }
    }

    fn read_delay(&mut self, line_addr: u64, _now: Ps) -> Ps {
        self.stats.reads += 1;
        // The pad is generated while the line is read; a counter miss adds its fetch, and the
        // MAC is checked before the data is used.
        let miss = !self.counters.access(self.node_key(line_addr, 0));
        if miss {
            self.stats.counter_misses += 1;
        }
        if miss {
            self.miss + self.hash
        } else {
            self.hash
        }
    }

    fn stats(&self) -> Vec<(&'static str, u64)> {
        let s = &self.stats;
        vec![
            ("writes", s.writes),
            ("reads", s.reads),
            ("counter_misses", s.counter_misses),
            ("tree_misses", s.tree_misses),
            ("addr_precomputed", s.addr_precomputed),
            ("data_precomputed", s.data_precomputed),
            ("counter_stale", s.counter_stale),
            ("tree_recalculated", s.tree_recalculated),
            ("write_delay_ps", s.delay_ps),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: Ps = 1000;

    fn engine() -> EncBmt {
        EncBmt::default()
    }

    #[test]
    fn unpredicted_write_pays_the_whole_address_path() {
        let mut e = engine();
        // Cold: counter miss + 12 tree misses: 40 + 40 + 13 x 40 + 12 x 40 = 1080 ns.
        let out = e.write(0x1000_0000, None, 0, None);
        assert_eq!(out.delay, 1080 * NS);
        assert!(out.media);
        // Warm, same page: 40 + 13 x 40 = 560 ns.
        let out = e.write(0x1000_0040, None, 10_000 * NS, None);
        assert_eq!(out.delay, 560 * NS);
    }

    #[test]
    fn precomputation_hides_the_address_path_and_changes_nothing() {
        let mut e = engine();
        e.write(0x2000_0000, None, 0, None);
        let before = (e.seq, e.line_seq.clone(), e.node_state.clone());
        let p = e
            .precompute(0x2000_0000, Some(&[7; 64]), 2_000 * NS)
            .unwrap();
        assert_eq!(
            (e.seq, e.line_seq.clone(), e.node_state.clone()),
            before,
            "a precomputation changes no engine state"
        );
        // Address and data both predicted, validated long after: only what is left.
        let out = e.write(0x2000_0000, Some(&[7; 64]), 10_000 * NS, Some(&p));
        assert_eq!(out.delay, 0);
        // Address only: the MAC over the data still waits (40 ns).
        let p = e.precompute(0x2000_0000, None, 11_000 * NS).unwrap();
        let out = e.write(0x2000_0000, None, 20_000 * NS, Some(&p));
        assert_eq!(out.delay, 40 * NS);
    }

    #[test]
    fn a_changed_shared_tree_node_invalidates_the_dependent_precomputation() {
        let mut e = engine();
        let (a, b) = (0x3000_0000u64, 0x3000_0040u64); // same page: every node shared
        e.write(a, None, 0, None);
        e.write(b, None, 2_000 * NS, None);
        let p = e.precompute(a, None, 4_000 * NS).unwrap();
        // A write-back of the sibling changes the shared counter block and tree path at 9 us.
        e.write(b, None, 9_000 * NS, None);
        let changed_at = 9_000 * NS + 560 * NS;
        let out = e.write(a, None, 9_700 * NS, Some(&p));
        assert_eq!(
            e.stats.tree_recalculated, 1,
            "the dependent path is recalculated"
        );
        // All 13 levels (counter block to the top) are recalculated after the change: later
        // than the 40 ns an intact precomputation leaves, sooner than the 560 ns from scratch.
        assert_eq!(out.delay, changed_at + 13 * 40 * NS - 9_700 * NS);
        assert!(out.delay > 40 * NS && out.delay < 560 * NS);
        // A precomputation of a line written since (its counter moved on) is void.
        let p = e.precompute(a, None, 20_000 * NS).unwrap();
        e.write(a, None, 21_000 * NS, None);
        e.write(a, None, 30_000 * NS, Some(&p));
        assert_eq!(e.stats.counter_stale, 1);
    }
}
