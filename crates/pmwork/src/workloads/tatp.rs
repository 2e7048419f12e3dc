//! TATP (Telecom Application Transaction Processing) on persistent tables.
//!
//! Tables (static, per thread): SUBSCRIBER, ACCESS_INFO (4 per subscriber),
//! SPECIAL_FACILITY (4 per subscriber) and CALL_FORWARDING (3 start times per special
//! facility); absent rows are slots with a zero `valid` word. The population follows the
//! TATP specification's rules (1-4 access-info and special-facility rows, 0-3 call
//! forwardings each) with 1000 subscribers per thread (TATP's default is 100 000: scaled).
//! The standard mix: GET_SUBSCRIBER_DATA 35%, GET_NEW_DESTINATION 10%, GET_ACCESS_DATA 35%,
//! UPDATE_SUBSCRIBER_DATA 2%, UPDATE_LOCATION 14%, INSERT_CALL_FORWARDING 2%,
//! DELETE_CALL_FORWARDING 2%.
//!
//! Runs as `tatp` (Janus, hand-rolled undo logging) and `tatp-hw` (LALEA, hardware
//! transactions).

use crate::kernel::{Kernel, Params, Suite, WorkloadInfo};
use crate::layout::root_word;
use crate::models::{Model, Tx};
use crate::rng::Rng;

/// Subscribers per thread.
pub const SUBSCRIBERS: u64 = 1000;
const SUB_WORDS: u64 = 8;
const AI_WORDS: u64 = 4;
const SF_WORDS: u64 = 4;
const CF_WORDS: u64 = 4;
const PER_SUB: u64 = SUB_WORDS + 4 * AI_WORDS + 4 * SF_WORDS + 12 * CF_WORDS;

// Word offsets inside a subscriber's slice of the state vector / tables.
const S_BITS: u64 = 1;
const S_VLR: u64 = 5;
const AI0: u64 = SUB_WORDS;
const SF0: u64 = AI0 + 4 * AI_WORDS;
const CF0: u64 = SF0 + 4 * SF_WORDS;

fn sf_word(sf: u64, w: u64) -> u64 {
    SF0 + sf * SF_WORDS + w
}

fn cf_word(sf: u64, slot: u64, w: u64) -> u64 {
    CF0 + (sf * 3 + slot) * CF_WORDS + w
}

/// One TATP transaction (subscriber `s`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TatpOp {
    /// Read the subscriber row.
    GetSubscriberData {
        /// Subscriber.
        s: u64,
    },
    /// Read a special facility and its call forwardings.
    GetNewDestination {
        /// Subscriber.
        s: u64,
        /// Special-facility type (0..4).
        sf: u64,
        /// Start-time slot (0..3 = 0, 8, 16 h).
        slot: u64,
    },
    /// Read an access-info row.
    GetAccessData {
        /// Subscriber.
        s: u64,
        /// Access-info type (0..4).
        ai: u64,
    },
    /// Set the subscriber's bit field and a special facility's `data_a`.
    UpdateSubscriberData {
        /// Subscriber.
        s: u64,
        /// New bits.
        bits: u64,
        /// Special-facility type.
        sf: u64,
        /// New data_a.
        data_a: u64,
    },
    /// Set the subscriber's VLR location.
    UpdateLocation {
        /// Subscriber.
        s: u64,
        /// New location.
        loc: u64,
    },
    /// Add a call forwarding if the facility exists and the slot is free.
    InsertCallForwarding {
        /// Subscriber.
        s: u64,
        /// Special-facility type.
        sf: u64,
        /// Start-time slot.
        slot: u64,
        /// End time (hours).
        end: u64,
        /// Forwarding number.
        number: u64,
    },
    /// Remove a call forwarding.
    DeleteCallForwarding {
        /// Subscriber.
        s: u64,
        /// Special-facility type.
        sf: u64,
        /// Start-time slot.
        slot: u64,
    },
}

/// The TATP workload.
pub struct Tatp {
    info: WorkloadInfo,
}

impl Tatp {
    /// Janus's tatp (hand-rolled undo logging).
    pub fn janus() -> Tatp {
        Tatp {
            info: WorkloadInfo {
                name: "tatp",
                model: Model::UndoLl,
                suite: Suite::Janus,
                default_ops: 10_000,
                default_threads: 1,
                size: "1000 subscribers per thread (TATP default 100 000, scaled)",
                source: "Janus/PMWeaver low-level set (Table II); sizes not given: chosen",
                description:
                    "TATP standard mix (80% reads) on persistent tables, hand-rolled undo logging",
            },
        }
    }

    /// LALEA's tatp (hardware transactions).
    pub fn lalea() -> Tatp {
        Tatp {
            info: WorkloadInfo {
                name: "tatp-hw",
                model: Model::HwTx,
                suite: Suite::Lalea,
                default_ops: 40_000,
                default_threads: 4,
                size: "1000 subscribers per thread (TATP default 100 000, scaled)",
                source: "LALEA Sec. IV-A (TATP, 4 cores); sizes not given: chosen",
                description: "TATP standard mix in hardware transactions",
            },
        }
    }

    /// The initial tables of thread `t`, word by word.
    fn population(p: &Params, t: u16) -> Vec<u64> {
        let mut r = Rng::stream(p.seed ^ 0x7461_7470, u64::from(t));
        let mut v = vec![0u64; (SUBSCRIBERS * PER_SUB) as usize];
        for s in 0..SUBSCRIBERS {
            let b = (s * PER_SUB) as usize;
            let w = &mut v[b..b + PER_SUB as usize];
            w[0] = s + 1;
            w[S_BITS as usize] = r.below(1 << 10);
            w[2] = r.next_u64() & 0xffff_ffff;
            w[3] = r.below(256);
            w[4] = r.next_u64() >> 32;
            w[S_VLR as usize] = r.next_u64() >> 32;
            for ai in 0..r.range(1, 4) {
                let o = (AI0 + ai * AI_WORDS) as usize;
                w[o] = r.below(256);
                w[o + 1] = r.below(256);
                w[o + 2] = 1;
            }
            for sf in 0..r.range(1, 4) {
                w[sf_word(sf, 0) as usize] = u64::from(r.percent(85));
                w[sf_word(sf, 1) as usize] = r.below(256);
                w[sf_word(sf, 2) as usize] = r.below(256);
                w[sf_word(sf, 3) as usize] = 1;
                for slot in 0..r.below(4) {
                    w[cf_word(sf, slot, 0) as usize] = slot * 8;
                    w[cf_word(sf, slot, 1) as usize] = slot * 8 + r.range(1, 8);
                    w[cf_word(sf, slot, 2) as usize] = r.next_u64() >> 16;
                    w[cf_word(sf, slot, 3) as usize] = 1;
                }
            }
        }
        v
    }
}

/// Where subscriber `s`'s word `w` lives.
fn addr(base: u64, s: u64, w: u64) -> u64 {
    base + 8 * (s * PER_SUB + w)
}

impl Kernel for Tatp {
    type Op = TatpOp;
    /// Every table word, subscriber by subscriber.
    type State = Vec<u64>;

    fn info(&self) -> &WorkloadInfo {
        &self.info
    }

    fn gen_op(&self, _p: &Params, _t: u16, _i: u64, rng: &mut Rng) -> TatpOp {
        let s = rng.below(SUBSCRIBERS);
        let x = rng.below(100);
        let sf = rng.below(4);
        let slot = rng.below(3);
        match x {
            0..=34 => TatpOp::GetSubscriberData { s },
            35..=44 => TatpOp::GetNewDestination { s, sf, slot },
            45..=79 => TatpOp::GetAccessData {
                s,
                ai: rng.below(4),
            },
            80..=81 => TatpOp::UpdateSubscriberData {
                s,
                bits: rng.below(1 << 10),
                sf,
                data_a: rng.below(256),
            },
            82..=95 => TatpOp::UpdateLocation {
                s,
                loc: rng.next_u64() >> 32,
            },
            96..=97 => TatpOp::InsertCallForwarding {
                s,
                sf,
                slot,
                end: slot * 8 + rng.range(1, 8),
                number: rng.next_u64() >> 16,
            },
            _ => TatpOp::DeleteCallForwarding { s, sf, slot },
        }
    }

    fn request(&self, op: &TatpOp, words: &mut Vec<u64>) {
        match *op {
            TatpOp::GetSubscriberData { s } => words.extend([1, s]),
            TatpOp::GetNewDestination { s, sf, slot } => words.extend([2, s, sf, slot]),
            TatpOp::GetAccessData { s, ai } => words.extend([3, s, ai]),
            TatpOp::UpdateSubscriberData {
                s,
                bits,
                sf,
                data_a,
            } => words.extend([4, s, bits, sf, data_a]),
            TatpOp::UpdateLocation { s, loc } => words.extend([5, s, loc]),
            TatpOp::InsertCallForwarding {
                s,
                sf,
                slot,
                end,
                number,
            } => words.extend([6, s, sf, slot, end, number]),
            TatpOp::DeleteCallForwarding { s, sf, slot } => words.extend([7, s, sf, slot]),
        }
    }

    fn setup(&self, tx: &mut Tx, p: &Params, t: u16) {
        let base = tx.alloc_static(8 * SUBSCRIBERS * PER_SUB);
        for (i, &w) in Self::population(p, t).iter().enumerate() {
            if w != 0 {
                tx.write(base + 8 * i as u64, w);
            }
        }
        tx.write(root_word(t, 1), base);
    }

    fn exec(&self, tx: &mut Tx, _p: &Params, t: u16, op: &TatpOp) {
        let b = tx.read(root_word(t, 1));
        match *op {
            TatpOp::GetSubscriberData { s } => {
                let mut row = [0u8; 64];
                tx.read_bytes(addr(b, s, 0), &mut row);
                tx.compute(20);
            }
            TatpOp::GetNewDestination { s, sf, slot } => {
                if tx.read(addr(b, s, sf_word(sf, 3))) == 1
                    && tx.read(addr(b, s, sf_word(sf, 0))) == 1
                {
                    for k in 0..=slot {
                        if tx.read(addr(b, s, cf_word(sf, k, 3))) == 1 {
                            let _ = tx.read(addr(b, s, cf_word(sf, k, 1)));
                            let _ = tx.read(addr(b, s, cf_word(sf, k, 2)));
                        }
                    }
                }
                tx.compute(20);
            }
            TatpOp::GetAccessData { s, ai } => {
                if tx.read(addr(b, s, AI0 + ai * AI_WORDS + 2)) == 1 {
                    let _ = tx.read(addr(b, s, AI0 + ai * AI_WORDS));
                    let _ = tx.read(addr(b, s, AI0 + ai * AI_WORDS + 1));
                }
                tx.compute(20);
            }
            TatpOp::UpdateSubscriberData {
                s,
                bits,
                sf,
                data_a,
            } => {
                let a = addr(b, s, S_BITS);
                tx.add(a, 8);
                tx.write(a, bits);
                if tx.read(addr(b, s, sf_word(sf, 3))) == 1 {
                    let a = addr(b, s, sf_word(sf, 2));
                    tx.add(a, 8);
                    tx.write(a, data_a);
                }
            }
            TatpOp::UpdateLocation { s, loc } => {
                let a = addr(b, s, S_VLR);
                tx.add(a, 8);
                tx.write(a, loc);
            }
            TatpOp::InsertCallForwarding {
                s,
                sf,
                slot,
                end,
                number,
            } => {
                if tx.read(addr(b, s, sf_word(sf, 3))) == 1
                    && tx.read(addr(b, s, cf_word(sf, slot, 3))) == 0
                {
                    let a = addr(b, s, cf_word(sf, slot, 0));
                    tx.add(a, 32);
                    tx.write(a, slot * 8);
                    tx.write(a + 8, end);
                    tx.write(a + 16, number);
                    tx.write(a + 24, 1);
                }
            }
            TatpOp::DeleteCallForwarding { s, sf, slot } => {
                let a = addr(b, s, cf_word(sf, slot, 3));
                if tx.read(a) == 1 {
                    tx.add(a, 8);
                    tx.write(a, 0);
                }
            }
        }
    }

    fn initial(&self, p: &Params, t: u16) -> Vec<u64> {
        Self::population(p, t)
    }

    fn apply(&self, v: &mut Vec<u64>, _p: &Params, _t: u16, op: &TatpOp) {
        let at = |s: u64, w: u64| (s * PER_SUB + w) as usize;
        match *op {
            TatpOp::UpdateSubscriberData {
                s,
                bits,
                sf,
                data_a,
            } => {
                v[at(s, S_BITS)] = bits;
                if v[at(s, sf_word(sf, 3))] == 1 {
                    v[at(s, sf_word(sf, 2))] = data_a;
                }
            }
            TatpOp::UpdateLocation { s, loc } => v[at(s, S_VLR)] = loc,
            TatpOp::InsertCallForwarding {
                s,
                sf,
                slot,
                end,
                number,
            } if v[at(s, sf_word(sf, 3))] == 1 && v[at(s, cf_word(sf, slot, 3))] == 0 => {
                v[at(s, cf_word(sf, slot, 0))] = slot * 8;
                v[at(s, cf_word(sf, slot, 1))] = end;
                v[at(s, cf_word(sf, slot, 2))] = number;
                v[at(s, cf_word(sf, slot, 3))] = 1;
            }
            TatpOp::DeleteCallForwarding { s, sf, slot } => {
                v[at(s, cf_word(sf, slot, 3))] = 0;
            }
            _ => {}
        }
    }

    fn extract(&self, tx: &mut Tx, _p: &Params, t: u16) -> Result<Vec<u64>, String> {
        let b = tx.read(root_word(t, 1));
        let v: Vec<u64> = (0..SUBSCRIBERS * PER_SUB)
            .map(|i| tx.read(b + 8 * i))
            .collect();
        for s in 0..SUBSCRIBERS {
            for sf in 0..4 {
                for slot in 0..3 {
                    let valid = v[(s * PER_SUB + cf_word(sf, slot, 3)) as usize];
                    let sf_valid = v[(s * PER_SUB + sf_word(sf, 3)) as usize];
                    if valid > 1 || (valid == 1 && sf_valid != 1) {
                        return Err(format!(
                            "tatp: subscriber {s}: call forwarding without its special facility"
                        ));
                    }
                }
            }
        }
        Ok(v)
    }
}
