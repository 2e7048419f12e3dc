//! The list of workloads: name → kernel, model, defaults and sources.
//!
//! Sizes follow `REFERENCE.md` and the papers where they give one; where they do not, the
//! choice is stated in the entry's `size` and `source` (and in the crate README).

use std::sync::OnceLock;

use crate::ds::bplustree::BPlusTree;
use crate::ds::btree::BTree;
use crate::ds::ctree::CTree;
use crate::ds::hashmap::HashMapDs;
use crate::ds::rbtree::RbTree;
use crate::ds::skiplist::SkipList;
use crate::ds::MapDs;
use crate::kernel::{Kernel, KernelWorkload, Suite, Workload, WorkloadInfo};
use crate::models::Model;
use crate::workloads::{
    arrayswap::ArraySwap,
    hashmap_ll::HashMapLl,
    linkedlist::LinkedList,
    map::{MapKernel, MapMix},
    memcached::Memcached,
    queue::Queue,
    shared_log::SharedLog,
    sps::Sps,
    ssca2::Ssca2,
    tatp::Tatp,
    tpcc::Tpcc,
    ycsb::Ycsb,
};

/// Key space of PPO's hash / RB-tree / B+tree: 2^22 keys, i.e. a full structure of about
/// 256 MB (PPO Table IV's footprint) with 64-byte entries.
const PPO_KEYS: u64 = 1 << 22;
/// Key space of LALEA's micro-benchmarks (the paper gives none).
const LALEA_KEYS: u64 = 1 << 14;

const PMWEAVER_PMDK: &str =
    "REFERENCE.md, PMWeaver artifact: PMDK maps insert 512 random keys, one transaction per insert";
const PPO_TABLE: &str =
    "PPO Table IV (footprint) and Sec. VI (4 cores x 2 threads); ops not given: 100 k chosen";
const LALEA_SETUP: &str =
    "LALEA Sec. IV-A (4 cores, each running the workload); sizes not given: chosen";

#[allow(clippy::too_many_arguments)]
fn info(
    name: &'static str,
    model: Model,
    suite: Suite,
    default_ops: u64,
    default_threads: u16,
    size: &'static str,
    source: &'static str,
    description: &'static str,
) -> WorkloadInfo {
    WorkloadInfo {
        name,
        model,
        suite,
        default_ops,
        default_threads,
        size,
        source,
        description,
    }
}

fn boxed<K: Kernel>(k: K) -> Box<dyn Workload> {
    Box::new(KernelWorkload(k))
}

fn map<D: MapDs>(info: WorkloadInfo, ds: D, mix: MapMix) -> Box<dyn Workload> {
    boxed(MapKernel { info, ds, mix })
}

fn build() -> Vec<Box<dyn Workload>> {
    use Model::*;
    use Suite::*;
    let insert512 = "random 64-bit keys, one insert per transaction";
    vec![
        // PMDK map examples (PMWeaver's transaction workloads).
        map(
            info("btree", Undo, Pmdk, 512, 1, insert512, PMWEAVER_PMDK,
                "PMDK btree_map: order-8 B-tree, whole nodes TX_ADDed, proactive split"),
            BTree,
            MapMix::InsertOnly,
        ),
        map(
            info("ctree", Undo, Pmdk, 512, 1, insert512, PMWEAVER_PMDK,
                "PMDK ctree_map: crit-bit tree, one new node per insert"),
            CTree,
            MapMix::InsertOnly,
        ),
        map(
            info("rbtree", Undo, Pmdk, 512, 1, insert512, PMWEAVER_PMDK,
                "PMDK rbtree_map: red-black tree with sentinel, CLRS fix-ups"),
            RbTree,
            MapMix::InsertOnly,
        ),
        map(
            info("skiplist", Undo, Pmdk, 512, 1, insert512, PMWEAVER_PMDK,
                "PMDK skiplist_map: 4-level skip list, search path spilled to DRAM"),
            SkipList,
            MapMix::InsertOnly,
        ),
        map(
            info("hashmap-tx", Undo, Pmdk, 512, 1, insert512, PMWEAVER_PMDK,
                "PMDK hashmap_tx: chained hash, 10 buckets doubling inside the inserting transaction"),
            HashMapDs::growable(),
            MapMix::InsertOnly,
        ),
        // PPO micro-benchmarks.
        map(
            info("ppo-hash", Undo, Ppo, 100_000, 8,
                "2^22 keys in all (full table ~256 MB), 2^20 buckets per thread", PPO_TABLE,
                "NV-heaps-style open-chaining hash: search, insert if absent, remove if found"),
            HashMapDs::fixed(1 << 20),
            MapMix::Toggle { keys: PPO_KEYS },
        ),
        map(
            info("ppo-rbtree", Undo, Ppo, 100_000, 8, "2^22 keys in all (full tree ~256 MB)",
                PPO_TABLE, "red-black tree: search, insert if absent, remove if found"),
            RbTree,
            MapMix::Toggle { keys: PPO_KEYS },
        ),
        boxed(Sps::new()),
        map(
            info("ppo-bplustree", Undo, Ppo, 100_000, 8, "2^22 keys in all (full tree ~256 MB)",
                PPO_TABLE, "STX-style B+ tree (13 keys/node): search, insert if absent, remove if found"),
            BPlusTree,
            MapMix::Toggle { keys: PPO_KEYS },
        ),
        boxed(Ssca2::new()),
        // WHISPER applications used by PPO.
        boxed(Ycsb::new()),
        boxed(Memcached::new()),
        boxed(Tpcc::whisper()),
        // Janus / PMWeaver low-level workloads.
        boxed(LinkedList::new()),
        boxed(HashMapLl::new()),
        boxed(ArraySwap::new()),
        boxed(Queue::janus()),
        boxed(Tatp::janus()),
        boxed(Tpcc::janus()),
        // LALEA hardware-transaction workloads.
        map(
            info("btree-hw", HwTx, Lalea, 40_000, 4, "2^14 keys in all", LALEA_SETUP,
                "B-tree in hardware transactions: insert if absent, remove if found"),
            BTree,
            MapMix::Toggle { keys: LALEA_KEYS },
        ),
        boxed(Queue::lalea()),
        map(
            info("hash-hw", HwTx, Lalea, 40_000, 4, "2^14 keys in all, 4096 buckets per thread",
                LALEA_SETUP, "chained hash table in hardware transactions: insert if absent, remove if found"),
            HashMapDs::fixed(4096),
            MapMix::Toggle { keys: LALEA_KEYS },
        ),
        map(
            info("rbtree-hw", HwTx, Lalea, 40_000, 4, "2^14 keys in all", LALEA_SETUP,
                "red-black tree in hardware transactions: insert if absent, remove if found"),
            RbTree,
            MapMix::Toggle { keys: LALEA_KEYS },
        ),
        boxed(Tpcc::lalea()),
        boxed(Tatp::lalea()),
        // pmlab's own.
        Box::new(SharedLog::new()),
    ]
}

/// Every workload, in registry order (names are unique).
pub fn registry() -> &'static [Box<dyn Workload>] {
    static REG: OnceLock<Vec<Box<dyn Workload>>> = OnceLock::new();
    REG.get_or_init(build)
}

/// The names of every workload, in registry order.
pub fn names() -> Vec<&'static str> {
    registry().iter().map(|w| w.info().name).collect()
}

/// The workloads of `suite`, in registry order (e.g. [`Suite::Lalea`]: the LALEA paper's
/// hardware-transaction workloads).
pub fn suite(suite: Suite) -> Vec<&'static dyn Workload> {
    registry()
        .iter()
        .filter(|w| w.info().suite == suite)
        .map(|w| w.as_ref())
        .collect()
}

/// The ten workloads PMWeaver evaluates (PACT'21 Table II): the PMDK maps and the Janus set
/// but its queue.
pub const PMWEAVER_TABLE_II: [&str; 10] = [
    "btree",
    "ctree",
    "rbtree",
    "skiplist",
    "hashmap-tx",
    "linkedlist",
    "hashmap-ll",
    "arrayswap",
    "tatp",
    "tpcc-ll",
];

/// The workload called `name`, or an error listing the known names.
pub fn workload(name: &str) -> Result<&'static dyn Workload, String> {
    registry()
        .iter()
        .find(|w| w.info().name == name)
        .map(|w| w.as_ref())
        .ok_or_else(|| format!("unknown workload '{name}' (known: {})", names().join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_lookups_work() {
        let mut n = names();
        let len = n.len();
        n.sort_unstable();
        n.dedup();
        assert_eq!(n.len(), len);
        assert_eq!(workload("tpcc").unwrap().info().name, "tpcc");
        let e = workload("nope").err().unwrap();
        assert!(
            e.contains("unknown workload 'nope'") && e.contains("btree"),
            "{e}"
        );
    }
}
