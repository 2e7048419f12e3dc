//! Chained hash map (PMDK `hashmap_tx`), growable or fixed.
//!
//! Root object: `[hash_a, hash_b, count, buckets]`; bucket array `[nbuckets, head...]`;
//! entry `[key, val, next, rest of the value...]` (a value longer than a word, PPO Fig. 13's
//! element size, continues after `next`). The hash is PMDK's universal one,
//! `((a * key + b) mod p) mod nbuckets` with `p = 2^32 - 5`. New entries go to the head of
//! their chain. The growable map starts with 10 buckets and, like PMDK, rebuilds itself with
//! twice the buckets (inside the same transaction) once it holds more than twice as many
//! entries as buckets. The fixed map (PPO's open-chaining hash, LALEA's hash table) has a
//! static bucket array sized at creation; an all-zero bucket array is an empty map, so a huge
//! table costs nothing until used.

use std::collections::BTreeMap;

use super::{value_tail, value_word, MapDs, StepLimit};
use crate::models::Tx;

const HASH_P: u64 = 4_294_967_291;
const KEY: u64 = 0;
const VAL: u64 = 8;
const NEXT: u64 = 16;
/// Where a value's words after the first start.
const TAIL: u64 = 24;
/// Bytes of one entry with an 8-byte value.
pub const ENTRY_BYTES: u64 = 24;
/// PMDK's initial bucket count.
pub const INIT_BUCKETS: u64 = 10;

/// The chained hash map.
#[derive(Clone, Copy, Debug)]
pub struct HashMapDs {
    /// Buckets at creation.
    pub buckets: u64,
    /// Rebuild with twice the buckets when entries exceed twice the buckets.
    pub growable: bool,
}

impl HashMapDs {
    /// PMDK's growable `hashmap_tx`.
    pub const fn growable() -> HashMapDs {
        HashMapDs {
            buckets: INIT_BUCKETS,
            growable: true,
        }
    }

    /// A fixed table of `buckets` buckets.
    pub const fn fixed(buckets: u64) -> HashMapDs {
        HashMapDs {
            buckets,
            growable: false,
        }
    }
}

#[inline]
fn hash(a: u64, b: u64, key: u64, n: u64) -> u64 {
    let h = (u128::from(a) * u128::from(key) + u128::from(b)) % u128::from(HASH_P);
    (h as u64) % n
}

struct Hdr {
    a: u64,
    b: u64,
    buckets: u64,
    n: u64,
}

impl HashMapDs {
    fn hdr(&self, tx: &mut Tx, robj: u64) -> Hdr {
        let a = tx.read(robj);
        let b = tx.read(robj + 8);
        let buckets = tx.read(robj + 24);
        let n = tx.read(buckets);
        Hdr { a, b, buckets, n }
    }

    fn slot(h: &Hdr, key: u64) -> u64 {
        h.buckets + 8 + 8 * hash(h.a, h.b, key, h.n)
    }

    fn rebuild(&self, tx: &mut Tx, robj: u64, h: &Hdr, new_n: u64) {
        let nb = tx.alloc(8 + 8 * new_n);
        tx.write(nb, new_n);
        let zeros = vec![0u8; (8 * new_n) as usize];
        tx.write_bytes(nb + 8, &zeros);
        for i in 0..h.n {
            let mut e = tx.read(h.buckets + 8 + 8 * i);
            while e != 0 {
                let next = tx.read(e + NEXT);
                let k = tx.read(e + KEY);
                let s = nb + 8 + 8 * hash(h.a, h.b, k, new_n);
                let head = tx.read(s);
                tx.add(e + NEXT, 8);
                tx.write(e + NEXT, head);
                tx.write(s, e);
                e = next;
            }
        }
        tx.add(robj + 24, 8);
        tx.write(robj + 24, nb);
        tx.free(h.buckets);
    }
}

impl MapDs for HashMapDs {
    fn create(&self, tx: &mut Tx) -> u64 {
        let robj = tx.alloc(32);
        // PMDK seeds a and b from rand(); here from the root's address (deterministic).
        let seed = crate::rng::mix64(robj);
        tx.write(robj, 1 + seed % (HASH_P - 1));
        tx.write(robj + 8, (seed >> 32) % HASH_P);
        tx.write(robj + 16, 0);
        let buckets = if self.growable {
            let b = tx.alloc(8 + 8 * self.buckets);
            let zeros = vec![0u8; (8 * self.buckets) as usize];
            tx.write_bytes(b + 8, &zeros);
            b
        } else {
            tx.alloc_static(8 + 8 * self.buckets)
        };
        tx.write(buckets, self.buckets);
        tx.write(robj + 24, buckets);
        robj
    }

    fn get(&self, tx: &mut Tx, robj: u64, key: u64) -> Option<u64> {
        let h = self.hdr(tx, robj);
        let mut e = tx.read(Self::slot(&h, key));
        while e != 0 {
            tx.compute(2);
            if tx.read(e + KEY) == key {
                return Some(tx.read(e + VAL));
            }
            e = tx.read(e + NEXT);
        }
        None
    }

    fn insert(&self, tx: &mut Tx, robj: u64, key: u64, val: u64) -> bool {
        self.insert_sized(tx, robj, key, val, 8)
    }

    fn sized_values(&self) -> bool {
        true
    }

    fn insert_sized(&self, tx: &mut Tx, robj: u64, key: u64, val: u64, bytes: u64) -> bool {
        let h = self.hdr(tx, robj);
        let s = Self::slot(&h, key);
        let head = tx.read(s);
        let mut e = head;
        while e != 0 {
            tx.compute(2);
            if tx.read(e + KEY) == key {
                tx.add(e + VAL, 8);
                tx.write(e + VAL, val);
                if bytes > 8 {
                    tx.add(e + TAIL, bytes - 8);
                    tx.write_bytes(e + TAIL, &value_tail(val, bytes));
                }
                return false;
            }
            e = tx.read(e + NEXT);
        }
        let n = tx.alloc(ENTRY_BYTES - 8 + bytes);
        tx.write(n + KEY, key);
        tx.write(n + VAL, val);
        tx.write(n + NEXT, head);
        if bytes > 8 {
            tx.write_bytes(n + TAIL, &value_tail(val, bytes));
        }
        tx.add(s, 8);
        tx.write(s, n);
        let count = tx.read(robj + 16) + 1;
        tx.add(robj + 16, 8);
        tx.write(robj + 16, count);
        if self.growable && count > 2 * h.n {
            self.rebuild(tx, robj, &h, 2 * h.n);
        }
        true
    }

    fn remove(&self, tx: &mut Tx, robj: u64, key: u64) -> bool {
        let h = self.hdr(tx, robj);
        let mut link = Self::slot(&h, key);
        let mut e = tx.read(link);
        while e != 0 {
            tx.compute(2);
            if tx.read(e + KEY) == key {
                let next = tx.read(e + NEXT);
                tx.add(link, 8);
                tx.write(link, next);
                let count = tx.read(robj + 16) - 1;
                tx.add(robj + 16, 8);
                tx.write(robj + 16, count);
                tx.free(e);
                return true;
            }
            link = e + NEXT;
            e = tx.read(link);
        }
        false
    }

    fn collect(
        &self,
        tx: &mut Tx,
        robj: u64,
        reach: &mut Vec<u64>,
    ) -> Result<BTreeMap<u64, u64>, String> {
        self.collect_sized(tx, robj, reach, 8)
    }

    fn collect_sized(
        &self,
        tx: &mut Tx,
        robj: u64,
        reach: &mut Vec<u64>,
        bytes: u64,
    ) -> Result<BTreeMap<u64, u64>, String> {
        reach.push(robj);
        let h = self.hdr(tx, robj);
        if h.n == 0 {
            return Err("hashmap with 0 buckets".into());
        }
        if self.growable {
            reach.push(h.buckets);
        }
        let mut out = BTreeMap::new();
        let mut limit = StepLimit::new(1 << 26, "hashmap");
        // Only bucket lines that were ever written can hold a chain.
        let first = h.buckets + 8;
        let last = first + 8 * h.n;
        let pages = tx.heap().written_ranges(first, last);
        for (lo, hi) in pages {
            let mut s = lo.max(first);
            s = first + (s - first).div_ceil(8) * 8;
            while s < hi.min(last) {
                let i = (s - first) / 8;
                let mut e = tx.read(s);
                while e != 0 {
                    limit.step()?;
                    reach.push(e);
                    let k = tx.read(e + KEY);
                    if hash(h.a, h.b, k, h.n) != i {
                        return Err(format!(
                            "hashmap: key {k:#x} in bucket {i}, hashes elsewhere"
                        ));
                    }
                    let val = tx.read(e + VAL);
                    for w in 1..bytes / 8 {
                        if tx.read(e + TAIL + 8 * (w - 1)) != value_word(val, w) {
                            return Err(format!(
                                "hashmap: key {k:#x}: word {w} of its {bytes}-byte value \
                                 does not belong to it (torn value)"
                            ));
                        }
                    }
                    if out.insert(k, val).is_some() {
                        return Err(format!("hashmap: key {k:#x} twice"));
                    }
                    e = tx.read(e + NEXT);
                }
                s += 8;
            }
        }
        let count = tx.read(robj + 16);
        if count != out.len() as u64 {
            return Err(format!(
                "hashmap: count says {count}, chains hold {}",
                out.len()
            ));
        }
        Ok(out)
    }
}
