//! The plug-in registry: config names → constructors and one-line descriptions.
//!
//! Adding a mechanism means writing its file under its concern's folder and adding one line
//! here (Ramulator 2 style).

use crate::bmo::{BmoEngine, Dedup, EncBmt, NoBmo};
use crate::config::{ControllerConfig, SimConfig};
use crate::logging::{self, LoggingEngine, NoLogging};
use crate::network::{BspPersistence, NetworkPersistence, SyncPersistence};
use crate::ordering::{BroiOrdering, EpochOrdering, OrderingModel, X86Ordering};
use crate::predict::{IdealPredictor, JanusHints, NoPredictor, PmWeaver, WritePredictor};
use crate::scheduler::{Fcfs, FrFcfs, Scheduler};

/// One registered plug-in.
pub struct PluginInfo<T: ?Sized> {
    /// Name used in configs.
    pub name: &'static str,
    /// What it is, in one line.
    pub description: &'static str,
    /// Builds a fresh instance.
    pub make: fn() -> Box<T>,
}

/// Request schedulers.
pub const SCHEDULERS: &[PluginInfo<dyn Scheduler>] = &[
    PluginInfo {
        name: "frfcfs",
        description: "FR-FCFS: ready row-buffer hits first, then oldest (Rixner et al., ISCA'00)",
        make: || Box::new(FrFcfs),
    },
    PluginInfo {
        name: "fcfs",
        description: "FCFS: strictly oldest first",
        make: || Box::new(Fcfs),
    },
];

/// Persist-ordering models.
pub const ORDERINGS: &[PluginInfo<dyn OrderingModel>] = &[
    PluginInfo {
        name: "x86",
        description: "x86 synchronous ordering: fences stall until earlier persists are acknowledged",
        make: || Box::new(X86Ordering),
    },
    PluginInfo {
        name: "epoch",
        description: "buffered epoch persistency, delegated ordering: per-thread persist buffers, fences do not stall, epochs of all threads flattened into global barrier regions (Kolli et al., MICRO'16; PPO's Epoch baseline)",
        make: || Box::new(EpochOrdering::default()),
    },
    PluginInfo {
        name: "broi",
        description: "PPO's BROI controller: buffered strict persistence, per-thread barrier regions scheduled into the write queue by bank-level parallelism, remote entries per RDMA channel (Hu et al., MICRO'18)",
        make: || Box::new(BroiOrdering::default()),
    },
];

/// PM-support engines.
pub const BMOS: &[PluginInfo<dyn BmoEngine>] = &[
    PluginInfo {
        name: "none",
        description: "no PM-support operations",
        make: || Box::new(NoBmo),
    },
    PluginInfo {
        name: "enc-bmt",
        description: "counter-mode encryption, Bonsai Merkle tree over the counters, MACs; counter and verification caches (PMWeaver's Enc+Veri; Rogers et al., MICRO'07)",
        make: || Box::new(EncBmt::default()),
    },
    PluginInfo {
        name: "dedup",
        description: "inline deduplication: line fingerprints, dedup hash table and address-mapping table behind a metadata cache; duplicates skip the media write (PMWeaver's Dedup; DeWrite, MICRO'18)",
        make: || Box::new(Dedup::default()),
    },
];

/// Write predictors that feed the PM-support engine precomputations.
pub const PREDICTORS: &[PluginInfo<dyn WritePredictor>] = &[
    PluginInfo {
        name: "none",
        description: "no write prediction: every write-back pays the PM-support latency",
        make: || Box::new(NoPredictor),
    },
    PluginInfo {
        name: "pmweaver",
        description: "PMWeaver: weaves write-back addresses and data from earlier stores (PC-path-triggered learner, pending predictions, timeout predictor, validator) (Mahar et al., PACT'21)",
        make: || Box::new(PmWeaver::default()),
    },
    PluginInfo {
        name: "janus",
        description: "Janus-style software hints: the program announces future write-backs (Op::Hint, placed by pmwork's janus_hints) and the controller precomputes them (Liu et al., ISCA'19)",
        make: || Box::new(JanusHints::default()),
    },
    PluginInfo {
        name: "ideal",
        description: "oracle: every write-back precomputed in time (the upper bound of write prediction)",
        make: || Box::new(IdealPredictor::default()),
    },
];

/// Hardware logging engines.
pub const LOGGINGS: &[PluginInfo<dyn LoggingEngine>] = &[
    PluginInfo {
        name: "none",
        description: "no hardware logging (transactions are markers)",
        make: || Box::new(NoLogging),
    },
    PluginInfo {
        name: "redu",
        description: "REDU: hardware redo log, sequential records, header after entries, direct in-place update (Jeong et al., MICRO'18)",
        make: || Box::new(logging::redu::redu()),
    },
    PluginInfo {
        name: "lalea",
        description: "LALEA on REDU: each log entry and header in the least-loaded bank, linked two-line headers (Lu et al.)",
        make: || Box::new(logging::lalea::lalea()),
    },
    PluginInfo {
        name: "blom",
        description: "BLOM on REDU: log headers kept in the ADR buffer (taking WPQ entries) until their transaction is in place; written to PM only when the buffer has no room (Lu et al.)",
        make: || Box::new(logging::blom::blom()),
    },
    PluginInfo {
        name: "lalea+blom",
        description: "LALEA and BLOM together on REDU (Lu et al.)",
        make: || Box::new(logging::blom::lalea_blom()),
    },
    PluginInfo {
        name: "lad",
        description: "LAD: write sets staged in the ADR buffer (the WPQ), committed without a log when they fit, undo log on overflow (Gupta et al., MICRO'19)",
        make: || Box::new(logging::lad::lad()),
    },
    PluginInfo {
        name: "lalea-lad",
        description: "LALEA on LAD: LAD's undo log allocated in the least-loaded bank (Lu et al.)",
        make: || Box::new(logging::lad::lalea_lad()),
    },
];

/// Network persistence modes (`network.persistence`).
pub const NETWORKS: &[PluginInfo<dyn NetworkPersistence>] = &[
    PluginInfo {
        name: "sync",
        description: "synchronous network persistence: each epoch of a client's RDMA writes waits for the persist ACK of the one before (PPO Fig. 4b; Talpey's RDMA extensions)",
        make: || Box::new(SyncPersistence::default()),
    },
    PluginInfo {
        name: "bsp",
        description: "buffered strict network persistence: epochs sent back to back, ordered by the server's remote persist buffers, one ACK per transaction (PPO Fig. 4c, Sec. V-A)",
        make: || Box::new(BspPersistence::default()),
    },
];

/// The network persistence mode `name` (`network.persistence`).
pub fn network(name: &str) -> Result<Box<dyn NetworkPersistence>, String> {
    NETWORKS
        .iter()
        .find(|p| p.name == name)
        .map(|p| (p.make)())
        .ok_or_else(|| {
            let known: Vec<_> = NETWORKS.iter().map(|p| p.name).collect();
            format!(
                "network.persistence = \"{name}\" is not a known mode (known: {})",
                known.join(", ")
            )
        })
}

fn find<'a, T: ?Sized>(
    list: &'a [PluginInfo<T>],
    kind: &str,
    name: &str,
) -> Result<&'a PluginInfo<T>, String> {
    list.iter().find(|p| p.name == name).ok_or_else(|| {
        let known: Vec<_> = list.iter().map(|p| p.name).collect();
        format!(
            "controller.{kind} = \"{name}\" is not a known {kind} (known: {})",
            known.join(", ")
        )
    })
}

/// A fresh instance of the logging engine `name` (`controller.logging`).
pub fn logging(name: &str) -> Result<Box<dyn LoggingEngine>, String> {
    Ok((find(LOGGINGS, "logging", name)?.make)())
}

/// Checks that every plug-in a controller config names exists, with the deliberate fault it
/// names, if any.
pub fn check_names(c: &ControllerConfig) -> Result<(), String> {
    find(SCHEDULERS, "scheduler", &c.scheduler)?;
    (find(ORDERINGS, "ordering", &c.ordering)?.make)().configure(c)?;
    find(BMOS, "bmo", &c.bmo)?;
    // The fault is checked now, not when the run builds the engine: a misspelled one was found
    // only by the job that used it, after the sweep's other jobs had run.
    let mut logging = (find(LOGGINGS, "logging", &c.logging)?.make)();
    if c.logging_fault != "none" {
        logging.inject_fault(&c.logging_fault)?;
    }
    find(PREDICTORS, "predictor", &c.predictor)?;
    Ok(())
}

/// The plug-ins a (validated) controller config selects.
pub struct Plugins {
    /// Request scheduler.
    pub scheduler: Box<dyn Scheduler>,
    /// Persist ordering.
    pub ordering: Box<dyn OrderingModel>,
    /// PM-support engine.
    pub bmo: Box<dyn BmoEngine>,
    /// Hardware logging.
    pub logging: Box<dyn LoggingEngine>,
    /// Write predictor.
    pub predictor: Box<dyn WritePredictor>,
}

impl Plugins {
    /// Instantiates the plug-ins a (validated) config names, with their parameters.
    pub fn build(cfg: &SimConfig) -> Result<Plugins, String> {
        let c = &cfg.controller;
        Ok(Plugins {
            scheduler: (find(SCHEDULERS, "scheduler", &c.scheduler)?.make)(),
            ordering: {
                let mut o = (find(ORDERINGS, "ordering", &c.ordering)?.make)();
                o.configure(c)?;
                o
            },
            bmo: {
                let mut b = (find(BMOS, "bmo", &c.bmo)?.make)();
                b.configure(&cfg.bmo)?;
                b
            },
            predictor: {
                let mut p = (find(PREDICTORS, "predictor", &c.predictor)?.make)();
                p.configure(&cfg.predictor)?;
                p
            },
            logging: {
                let mut l = (find(LOGGINGS, "logging", &c.logging)?.make)();
                if c.logging_fault != "none" {
                    l.inject_fault(&c.logging_fault)?;
                }
                l
            },
        })
    }
}

/// Every registered plug-in as `(concern, name, description)`, for `pmlab plugins`.
pub fn list() -> Vec<(&'static str, &'static str, &'static str)> {
    let mut v = Vec::new();
    v.extend(
        SCHEDULERS
            .iter()
            .map(|p| ("scheduler", p.name, p.description)),
    );
    v.extend(
        ORDERINGS
            .iter()
            .map(|p| ("ordering", p.name, p.description)),
    );
    v.extend(BMOS.iter().map(|p| ("bmo", p.name, p.description)));
    v.extend(
        PREDICTORS
            .iter()
            .map(|p| ("predictor", p.name, p.description)),
    );
    v.extend(LOGGINGS.iter().map(|p| ("logging", p.name, p.description)));
    v.extend(NETWORKS.iter().map(|p| ("network", p.name, p.description)));
    v
}
