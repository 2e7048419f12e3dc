//! TPC-C, simplified: New-Order, Payment and Order-Status on persistent tables, one
//! warehouse per thread.
//!
//! Tables (static arrays): warehouse (YTD, tax, history count), 10 districts (next order id,
//! YTD, tax), 30 customers per district (balance, YTD payment, payment count, last order,
//! discount), 100 items (price), 100 stock rows (quantity, YTD, order count), a per-district
//! order index and a history table. New-Order allocates an order record with its 5-15 lines
//! and updates the district and each item's stock row; Payment updates warehouse, district
//! and customer and appends a history row; Order-Status reads a customer's last order.
//! Mix: 45% New-Order, 43% Payment, 12% Order-Status (Delivery and Stock-Level omitted).
//!
//! Shortcuts, named: 30 customers per district instead of 3000, no initial orders, uniform
//! item and customer choice instead of NURand, no 1% New-Order rollback.
//!
//! The same kernel runs as `tpcc` (WHISPER, PMDK-style undo), `tpcc-ll` (Janus, hand-rolled
//! undo; REFERENCE.md: 100 orders, 1 warehouse, 100 items) and `tpcc-hw` (LALEA, hardware
//! transactions).

use crate::alloc::check_heap;
use crate::kernel::{Kernel, Params, Suite, WorkloadInfo};
use crate::layout::root_word;
use crate::models::{Model, Tx};
use crate::rng::Rng;

/// Districts per warehouse.
pub const DISTRICTS: u64 = 10;
/// Customers per district (TPC-C: 3000).
pub const CUSTOMERS: u64 = 30;
/// Items (REFERENCE.md: the PMWeaver artifact uses 100).
pub const ITEMS: u64 = 100;
const MAX_LINES: u64 = 15;
const ORDER_WORDS: u64 = 3 + 3 * MAX_LINES;
const ROW: u64 = 64;

/// One TPC-C transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TpccOp {
    /// New-Order: customer `c` of district `d` orders `(item, quantity)` lines.
    NewOrder {
        /// District.
        d: u64,
        /// Customer.
        c: u64,
        /// Lines: item, quantity.
        lines: Vec<(u64, u64)>,
    },
    /// Payment of `amount` cents by customer `c` of district `d`.
    Payment {
        /// District.
        d: u64,
        /// Customer.
        c: u64,
        /// Cents.
        amount: u64,
    },
    /// Order-Status of customer `c` of district `d` (read-only).
    OrderStatus {
        /// District.
        d: u64,
        /// Customer.
        c: u64,
    },
}

/// One order as stored: customer and lines (item, quantity, amount).
pub type Order = (u64, Vec<(u64, u64, u64)>);

/// The logical database of one warehouse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TpccState {
    /// Warehouse YTD.
    pub w_ytd: u64,
    /// Districts: next order id, YTD.
    pub districts: Vec<(u64, u64)>,
    /// Customers: balance (two's complement), YTD payment, payment count, last order id.
    pub customers: Vec<(u64, u64, u64, u64)>,
    /// Stock: quantity, YTD, order count.
    pub stock: Vec<(u64, u64, u64)>,
    /// Orders per district, by order id - 1.
    pub orders: Vec<Vec<Order>>,
    /// History rows: district, customer, amount.
    pub history: Vec<(u64, u64, u64)>,
}

/// Read-only initial values (taxes, discounts, prices) and initial stock.
struct InitData {
    w_tax: u64,
    d_tax: Vec<u64>,
    c_discount: Vec<u64>,
    price: Vec<u64>,
    quantity: Vec<u64>,
}

fn init_data(p: &Params, t: u16) -> InitData {
    let mut r = Rng::stream(p.seed ^ 0x7470_6363, u64::from(t));
    InitData {
        w_tax: r.below(2001),
        d_tax: (0..DISTRICTS).map(|_| r.below(2001)).collect(),
        c_discount: (0..DISTRICTS * CUSTOMERS).map(|_| r.below(5001)).collect(),
        price: (0..ITEMS).map(|_| r.range(100, 10_000)).collect(),
        quantity: (0..ITEMS).map(|_| r.range(10, 100)).collect(),
    }
}

const W_YTD0: u64 = 30_000_000;
const D_YTD0: u64 = 3_000_000;
const C_BALANCE0: u64 = (-1000i64) as u64;
const C_YTD0: u64 = 1000;

/// Table addresses of one warehouse (root words 1-7).
struct Tables {
    w: u64,
    d: u64,
    c: u64,
    i: u64,
    s: u64,
    o: u64,
    h: u64,
}

impl Tables {
    fn read(tx: &mut Tx, t: u16) -> Tables {
        Tables {
            w: tx.read(root_word(t, 1)),
            d: tx.read(root_word(t, 2)),
            c: tx.read(root_word(t, 3)),
            i: tx.read(root_word(t, 4)),
            s: tx.read(root_word(t, 5)),
            o: tx.read(root_word(t, 6)),
            h: tx.read(root_word(t, 7)),
        }
    }

    fn district(&self, d: u64) -> u64 {
        self.d + ROW * d
    }

    fn customer(&self, d: u64, c: u64) -> u64 {
        self.c + ROW * (d * CUSTOMERS + c)
    }

    fn stock(&self, i: u64) -> u64 {
        self.s + 32 * i
    }

    fn order_slot(&self, cap: u64, d: u64, o_id: u64) -> u64 {
        self.o + 8 * (d * cap + o_id - 1)
    }
}

/// The TPC-C workload.
pub struct Tpcc {
    info: WorkloadInfo,
}

impl Tpcc {
    /// WHISPER's tpcc (undo transactions).
    pub fn whisper() -> Tpcc {
        Tpcc {
            info: WorkloadInfo {
                name: "tpcc",
                model: Model::Undo,
                suite: Suite::Whisper,
                default_ops: 40_000,
                default_threads: 4,
                size: "1 warehouse per thread, 10 districts x 30 customers, 100 items",
                source: "PPO Table IV: tpcc, 4 clients, 400 k transactions (1/10 by default)",
                description:
                    "TPC-C New-Order / Payment / Order-Status, PMDK-style undo transactions",
            },
        }
    }

    /// Janus's tpcc (hand-rolled undo logging).
    pub fn janus() -> Tpcc {
        Tpcc {
            info: WorkloadInfo {
                name: "tpcc-ll",
                model: Model::UndoLl,
                suite: Suite::Janus,
                default_ops: 100,
                default_threads: 1,
                size: "1 warehouse, 10 districts x 30 customers, 100 items",
                source: "REFERENCE.md, PMWeaver artifact: TPC-C 100 orders, 1 warehouse, 100 items",
                description: "TPC-C New-Order / Payment / Order-Status, hand-rolled undo logging",
            },
        }
    }

    /// LALEA's tpcc (hardware transactions).
    pub fn lalea() -> Tpcc {
        Tpcc {
            info: WorkloadInfo {
                name: "tpcc-hw",
                model: Model::HwTx,
                suite: Suite::Lalea,
                default_ops: 4000,
                default_threads: 4,
                size: "1 warehouse per thread, 10 districts x 30 customers, 100 items",
                source: "LALEA Sec. IV-A (TPCC, 4 cores); sizes not given: chosen",
                description: "TPC-C New-Order / Payment / Order-Status in hardware transactions",
            },
        }
    }

    /// Order-index capacity per district: every operation of the thread could be a New-Order.
    fn cap(p: &Params, t: u16) -> u64 {
        p.ops_of(t) + 1
    }
}

impl Kernel for Tpcc {
    type Op = TpccOp;
    type State = TpccState;

    fn info(&self) -> &WorkloadInfo {
        &self.info
    }

    fn gen_op(&self, _p: &Params, _t: u16, _i: u64, rng: &mut Rng) -> TpccOp {
        let d = rng.below(DISTRICTS);
        let c = rng.below(CUSTOMERS);
        let x = rng.below(100);
        if x < 45 {
            let n = rng.range(5, MAX_LINES);
            let lines = (0..n)
                .map(|_| (rng.below(ITEMS), rng.range(1, 10)))
                .collect();
            TpccOp::NewOrder { d, c, lines }
        } else if x < 88 {
            TpccOp::Payment {
                d,
                c,
                amount: rng.range(100, 500_000),
            }
        } else {
            TpccOp::OrderStatus { d, c }
        }
    }

    fn request(&self, op: &TpccOp, words: &mut Vec<u64>) {
        match op {
            TpccOp::NewOrder { d, c, lines } => {
                words.extend([1, *d, *c, lines.len() as u64]);
                for &(i, q) in lines {
                    words.extend([i, q]);
                }
            }
            TpccOp::Payment { d, c, amount } => words.extend([2, *d, *c, *amount]),
            TpccOp::OrderStatus { d, c } => words.extend([3, *d, *c]),
        }
    }

    fn setup(&self, tx: &mut Tx, p: &Params, t: u16) {
        let init = init_data(p, t);
        let cap = Self::cap(p, t);
        let w = tx.alloc_static(ROW);
        let d = tx.alloc_static(ROW * DISTRICTS);
        let c = tx.alloc_static(ROW * DISTRICTS * CUSTOMERS);
        let i = tx.alloc_static(16 * ITEMS);
        let s = tx.alloc_static(32 * ITEMS);
        let o = tx.alloc_static(8 * DISTRICTS * cap);
        let h = tx.alloc_static(32 * cap);
        tx.write(w, W_YTD0);
        tx.write(w + 8, init.w_tax);
        tx.write(w + 16, 0);
        for k in 0..DISTRICTS {
            let r = d + ROW * k;
            tx.write(r, 1);
            tx.write(r + 8, D_YTD0);
            tx.write(r + 16, init.d_tax[k as usize]);
        }
        for k in 0..DISTRICTS * CUSTOMERS {
            let r = c + ROW * k;
            tx.write(r, C_BALANCE0);
            tx.write(r + 8, C_YTD0);
            tx.write(r + 16, 1);
            tx.write(r + 24, 0);
            tx.write(r + 32, init.c_discount[k as usize]);
        }
        for k in 0..ITEMS {
            tx.write(i + 16 * k, init.price[k as usize]);
            tx.write(i + 16 * k + 8, k + 1);
            let r = s + 32 * k;
            tx.write(r, init.quantity[k as usize]);
            tx.write(r + 8, 0);
            tx.write(r + 16, 0);
        }
        for (n, a) in [w, d, c, i, s, o, h].into_iter().enumerate() {
            tx.write(root_word(t, n as u64 + 1), a);
        }
    }

    fn exec(&self, tx: &mut Tx, p: &Params, t: u16, op: &TpccOp) {
        let tb = Tables::read(tx, t);
        match op {
            TpccOp::NewOrder { d, c, lines } => {
                let w_tax = tx.read(tb.w + 8);
                let dr = tb.district(*d);
                let o_id = tx.read(dr);
                let d_tax = tx.read(dr + 16);
                tx.add(dr, 8);
                tx.write(dr, o_id + 1);
                let cr = tb.customer(*d, *c);
                let discount = tx.read(cr + 32);
                tx.compute(10 + (w_tax + d_tax + discount) as u32 % 4);
                let ord = tx.alloc(8 * ORDER_WORDS);
                tx.write(ord, o_id);
                tx.write(ord + 8, *c);
                tx.write(ord + 16, lines.len() as u64);
                for (j, &(item, qty)) in lines.iter().enumerate() {
                    let price = tx.read(tb.i + 16 * item);
                    let sr = tb.stock(item);
                    let q = tx.read(sr);
                    let ytd = tx.read(sr + 8);
                    let cnt = tx.read(sr + 16);
                    let nq = if q >= qty + 10 { q - qty } else { q + 91 - qty };
                    tx.add(sr, 24);
                    tx.write(sr, nq);
                    tx.write(sr + 8, ytd + qty);
                    tx.write(sr + 16, cnt + 1);
                    let l = ord + 24 + 24 * j as u64;
                    tx.write(l, item);
                    tx.write(l + 8, qty);
                    tx.write(l + 16, qty * price);
                }
                tx.add(cr + 24, 8);
                tx.write(cr + 24, o_id);
                let slot = tb.order_slot(Self::cap(p, t), *d, o_id);
                tx.add(slot, 8);
                tx.write(slot, ord);
            }
            TpccOp::Payment { d, c, amount } => {
                let w_ytd = tx.read(tb.w);
                tx.add(tb.w, 8);
                tx.write(tb.w, w_ytd + amount);
                let dr = tb.district(*d);
                let d_ytd = tx.read(dr + 8);
                tx.add(dr + 8, 8);
                tx.write(dr + 8, d_ytd + amount);
                let cr = tb.customer(*d, *c);
                let bal = tx.read(cr);
                let ytd = tx.read(cr + 8);
                let cnt = tx.read(cr + 16);
                tx.add(cr, 24);
                tx.write(cr, bal.wrapping_sub(*amount));
                tx.write(cr + 8, ytd + amount);
                tx.write(cr + 16, cnt + 1);
                let n = tx.read(tb.w + 16);
                let hr = tb.h + 32 * n;
                tx.add(hr, 24);
                tx.write(hr, *d);
                tx.write(hr + 8, *c);
                tx.write(hr + 16, *amount);
                tx.add(tb.w + 16, 8);
                tx.write(tb.w + 16, n + 1);
            }
            TpccOp::OrderStatus { d, c } => {
                let cr = tb.customer(*d, *c);
                let _balance = tx.read(cr);
                let last = tx.read(cr + 24);
                if last > 0 {
                    let ord = tx.read(tb.order_slot(Self::cap(p, t), *d, last));
                    let n = tx.read(ord + 16);
                    for j in 0..n {
                        let l = ord + 24 + 24 * j;
                        let _ = (tx.read(l), tx.read(l + 8), tx.read(l + 16));
                    }
                }
                tx.compute(30);
            }
        }
    }

    fn initial(&self, p: &Params, t: u16) -> TpccState {
        let init = init_data(p, t);
        TpccState {
            w_ytd: W_YTD0,
            districts: vec![(1, D_YTD0); DISTRICTS as usize],
            customers: vec![(C_BALANCE0, C_YTD0, 1, 0); (DISTRICTS * CUSTOMERS) as usize],
            stock: init.quantity.iter().map(|&q| (q, 0, 0)).collect(),
            orders: vec![Vec::new(); DISTRICTS as usize],
            history: Vec::new(),
        }
    }

    fn apply(&self, s: &mut TpccState, p: &Params, t: u16, op: &TpccOp) {
        match op {
            TpccOp::NewOrder { d, c, lines } => {
                let price = init_data(p, t).price;
                let dist = &mut s.districts[*d as usize];
                let o_id = dist.0;
                dist.0 += 1;
                let mut ls = Vec::with_capacity(lines.len());
                for &(item, qty) in lines {
                    let st = &mut s.stock[item as usize];
                    st.0 = if st.0 >= qty + 10 {
                        st.0 - qty
                    } else {
                        st.0 + 91 - qty
                    };
                    st.1 += qty;
                    st.2 += 1;
                    ls.push((item, qty, qty * price[item as usize]));
                }
                s.customers[(d * CUSTOMERS + c) as usize].3 = o_id;
                s.orders[*d as usize].push((*c, ls));
            }
            TpccOp::Payment { d, c, amount } => {
                s.w_ytd += amount;
                s.districts[*d as usize].1 += amount;
                let cu = &mut s.customers[(d * CUSTOMERS + c) as usize];
                cu.0 = cu.0.wrapping_sub(*amount);
                cu.1 += amount;
                cu.2 += 1;
                s.history.push((*d, *c, *amount));
            }
            TpccOp::OrderStatus { .. } => {}
        }
    }

    fn extract(&self, tx: &mut Tx, p: &Params, t: u16) -> Result<TpccState, String> {
        let tb = Tables::read(tx, t);
        let cap = Self::cap(p, t);
        let h_count = tx.read(tb.w + 16);
        if h_count >= cap {
            return Err(format!("tpcc: history count {h_count} beyond capacity"));
        }
        let history = (0..h_count)
            .map(|n| {
                let r = tb.h + 32 * n;
                (tx.read(r), tx.read(r + 8), tx.read(r + 16))
            })
            .collect();
        let districts: Vec<(u64, u64)> = (0..DISTRICTS)
            .map(|d| {
                let r = tb.district(d);
                (tx.read(r), tx.read(r + 8))
            })
            .collect();
        let customers = (0..DISTRICTS * CUSTOMERS)
            .map(|k| {
                let r = tb.c + ROW * k;
                (tx.read(r), tx.read(r + 8), tx.read(r + 16), tx.read(r + 24))
            })
            .collect();
        let stock = (0..ITEMS)
            .map(|i| {
                let r = tb.stock(i);
                (tx.read(r), tx.read(r + 8), tx.read(r + 16))
            })
            .collect();
        let mut reach = Vec::new();
        let mut orders = Vec::new();
        for (d, &(next, _)) in districts.iter().enumerate() {
            let d = d as u64;
            if next == 0 || next > cap {
                return Err(format!("tpcc: district {d}: next order id {next}"));
            }
            let mut list = Vec::new();
            for o_id in 1..next {
                let ord = tx.read(tb.order_slot(cap, d, o_id));
                if ord == 0 {
                    return Err(format!("tpcc: district {d}: order {o_id} missing"));
                }
                reach.push(ord);
                if tx.read(ord) != o_id {
                    return Err(format!("tpcc: district {d}: order {o_id} has a wrong id"));
                }
                let c = tx.read(ord + 8);
                let n = tx.read(ord + 16);
                if n > MAX_LINES {
                    return Err(format!("tpcc: order {o_id}: {n} lines"));
                }
                let lines = (0..n)
                    .map(|j| {
                        let l = ord + 24 + 24 * j;
                        (tx.read(l), tx.read(l + 8), tx.read(l + 16))
                    })
                    .collect();
                list.push((c, lines));
            }
            if next < cap && tx.read(tb.order_slot(cap, d, next)) != 0 {
                return Err(format!(
                    "tpcc: district {d}: order slot {next} filled beyond the next order id"
                ));
            }
            orders.push(list);
        }
        check_heap(tx, t, &reach)?;
        Ok(TpccState {
            w_ytd: tx.read(tb.w),
            districts,
            customers,
            stock,
            orders,
            history,
        })
    }
}
