//! A key-value store: a fixed, static hash index over records `[key, next, value...]` whose
//! values are `words` 8-byte words (YCSB-style records, memcached items).
//!
//! `put` replaces a record the way memcached replaces an item: a new record is allocated and
//! written, linked in place of the old one, and the old one freed — all in the caller's
//! transaction. `update` overwrites some words of a value in place (a YCSB field update).

use std::collections::BTreeMap;

use super::StepLimit;
use crate::models::Tx;
use crate::rng::mix64;

const KEY: u64 = 0;
const NEXT: u64 = 8;
const VALUE: u64 = 16;

/// The store's geometry.
#[derive(Clone, Copy, Debug)]
pub struct KvStore {
    /// Buckets of the index.
    pub buckets: u64,
    /// Words per value.
    pub words: u64,
}

impl KvStore {
    /// Creates the (static, all-empty) index; returns its address.
    pub fn create(&self, tx: &mut Tx) -> u64 {
        tx.alloc_static(8 * self.buckets)
    }

    fn bucket(&self, index: u64, key: u64) -> u64 {
        index + 8 * (mix64(key) % self.buckets)
    }

    /// The record of `key` and the address of the link pointing to it.
    fn find(&self, tx: &mut Tx, index: u64, key: u64) -> (u64, u64) {
        let mut link = self.bucket(index, key);
        let mut r = tx.read(link);
        while r != 0 {
            tx.compute(2);
            if tx.read(r + KEY) == key {
                break;
            }
            link = r + NEXT;
            r = tx.read(link);
        }
        (r, link)
    }

    /// Reads the value of `key` into `out` (one load per line); false if absent.
    pub fn get(&self, tx: &mut Tx, index: u64, key: u64, out: &mut [u8]) -> bool {
        let (r, _) = self.find(tx, index, key);
        if r == 0 {
            return false;
        }
        tx.read_bytes(r + VALUE, out);
        true
    }

    /// Inserts or replaces `key` with `value` (`words * 8` bytes).
    pub fn put(&self, tx: &mut Tx, index: u64, key: u64, value: &[u8]) {
        debug_assert_eq!(value.len() as u64, self.words * 8);
        let (old, link) = self.find(tx, index, key);
        let next = if old != 0 {
            tx.read(old + NEXT)
        } else {
            tx.read(link)
        };
        let r = tx.alloc(VALUE + 8 * self.words);
        tx.write(r + KEY, key);
        tx.write(r + NEXT, next);
        tx.write_bytes(r + VALUE, value);
        tx.add(link, 8);
        tx.write(link, r);
        if old != 0 {
            tx.free(old);
        }
    }

    /// Overwrites words `[first, first + data.len()/8)` of `key`'s value in place; false if
    /// the key is absent.
    pub fn update(&self, tx: &mut Tx, index: u64, key: u64, first: u64, data: &[u8]) -> bool {
        let (r, _) = self.find(tx, index, key);
        if r == 0 {
            return false;
        }
        let a = r + VALUE + 8 * first;
        tx.add(a, data.len() as u64);
        tx.write_bytes(a, data);
        true
    }

    /// Every record (after checking placement and uniqueness); pushes each record onto
    /// `reach`.
    pub fn collect(
        &self,
        tx: &mut Tx,
        index: u64,
        reach: &mut Vec<u64>,
    ) -> Result<BTreeMap<u64, Vec<u64>>, String> {
        let mut out = BTreeMap::new();
        let mut limit = StepLimit::nodes(tx.heap_ref().resident_bytes(), VALUE + 8, "kv store");
        let end = index + 8 * self.buckets;
        for (lo, hi) in tx.heap().written_ranges(index, end) {
            let mut s = lo.next_multiple_of(8);
            while s + 8 <= hi {
                let mut r = tx.read(s);
                while r != 0 {
                    limit.step()?;
                    reach.push(r);
                    let k = tx.read(r + KEY);
                    if self.bucket(index, k) != s {
                        return Err(format!("kv store: key {k:#x} in the wrong bucket"));
                    }
                    let v: Vec<u64> = (0..self.words)
                        .map(|i| tx.read(r + VALUE + 8 * i))
                        .collect();
                    if out.insert(k, v).is_some() {
                        return Err(format!("kv store: key {k:#x} twice"));
                    }
                    r = tx.read(r + NEXT);
                }
                s += 8;
            }
        }
        Ok(out)
    }
}

/// Little-endian bytes of `words`.
pub fn words_to_bytes(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}
