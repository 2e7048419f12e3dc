//! The workloads: kernels (operation streams over data structures and tables) that the
//! registry ([`crate::registry()`]) instantiates under their papers' programming models and
//! sizes.

pub mod arrayswap;
pub mod hashmap_ll;
pub mod linkedlist;
pub mod map;
pub mod memcached;
pub mod queue;
pub mod shared_log;
pub mod sps;
pub mod ssca2;
pub mod tatp;
pub mod tpcc;
pub mod ycsb;
