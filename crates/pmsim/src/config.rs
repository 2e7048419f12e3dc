//! Simulator configuration: typed TOML with defaults, presets and validation.
//!
//! A config file may name a `preset` (one of the files in `configs/`, built into the binary)
//! and override any of its keys. Unknown keys, out-of-range values, impossible timings and
//! unknown presets or plug-ins are reported as one line naming the key and the file.

use crate::time::{cycle_ps, ns_to_ps, Ps};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

/// The presets shipped in `configs/`, compiled into the binary so `pmlab` runs anywhere.
pub const PRESETS: &[(&str, &str)] = &[
    ("ddr4-2400", include_str!("../../../configs/ddr4-2400.toml")),
    (
        "pcm-pmweaver",
        include_str!("../../../configs/pcm-pmweaver.toml"),
    ),
    ("nvm-ppo", include_str!("../../../configs/nvm-ppo.toml")),
    ("nvm-lalea", include_str!("../../../configs/nvm-lalea.toml")),
    ("optane", include_str!("../../../configs/optane.toml")),
];

/// Names of the built-in presets.
pub fn preset_names() -> Vec<&'static str> {
    PRESETS.iter().map(|(n, _)| *n).collect()
}

/// A configuration error: one line saying what is wrong and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// How physical addresses are spread over channels, banks and ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MappingScheme {
    /// Consecutive 64 B lines go to successive channels, then banks, then ranks.
    CacheLine,
    /// Consecutive row-sized groups go to successive channels/banks/ranks (PPO's stride mapping).
    RowStride,
    /// Consecutive `page_bytes` pages go to successive channels/banks/ranks (page interleaving).
    Page,
}

/// Media timing parameters, in nanoseconds as datasheets and papers state them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TimingConfig {
    /// Command clock period.
    pub tck_ns: f64,
    /// Activate to column command (row/array read into the row buffer).
    pub trcd_ns: f64,
    /// Read column command to first data.
    pub tcl_ns: f64,
    /// Write column command to first data.
    pub tcwd_ns: f64,
    /// Data burst of one 64 B line on the bus.
    pub tburst_ns: f64,
    /// Precharge (close a row) to next activate.
    pub trp_ns: f64,
    /// Activate to precharge, minimum.
    pub tras_ns: f64,
    /// End of write data to precharge (write recovery; the cell write time for NVM).
    pub twr_ns: f64,
    /// End of write data to a read command in the same rank.
    pub twtr_ns: f64,
    /// Read command to precharge.
    pub trtp_ns: f64,
    /// Four-activate window per rank.
    pub tfaw_ns: f64,
    /// Activate to activate in the same rank.
    pub trrd_ns: f64,
    /// Refresh interval: every `trefi_ns` each rank precharges all its banks and refreshes
    /// (DRAM only; 0 = no refresh, as for non-volatile media).
    pub trefi_ns: f64,
    /// Refresh cycle time: how long an all-bank refresh keeps the rank's banks busy.
    pub trfc_ns: f64,
}

impl Default for TimingConfig {
    fn default() -> Self {
        TimingConfig {
            tck_ns: 1.0,
            trcd_ns: 0.0,
            tcl_ns: 0.0,
            tcwd_ns: 0.0,
            tburst_ns: 4.0,
            trp_ns: 0.0,
            tras_ns: 0.0,
            twr_ns: 0.0,
            twtr_ns: 0.0,
            trtp_ns: 0.0,
            tfaw_ns: 0.0,
            trrd_ns: 0.0,
            trefi_ns: 0.0,
            trfc_ns: 0.0,
        }
    }
}

/// The on-DIMM read buffer (Optane's XPLine buffer): off when `entries` is 0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReadBufferConfig {
    /// Number of XPLines buffered per channel (0 disables the buffer).
    pub entries: u32,
    /// Size of one buffered line in bytes.
    pub xpline_bytes: u32,
}

impl Default for ReadBufferConfig {
    fn default() -> Self {
        ReadBufferConfig {
            entries: 0,
            xpline_bytes: 256,
        }
    }
}

/// The memory device (DIMM) organisation and timing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DeviceConfig {
    /// Technology (`dram`, `pcm`, `nvm`, `optane`): a label for reports; `dram` marks a volatile
    /// device, which `pmlab crash` refuses.
    pub technology: String,
    /// Independent channels, each with its own controller queues and data bus.
    pub channels: u32,
    /// Ranks per channel.
    pub ranks: u32,
    /// Banks per rank.
    pub banks: u32,
    /// Row-buffer size in bytes.
    pub row_bytes: u32,
    /// Bytes the media reads or writes per array access (64 for DRAM/PCM, 256 for Optane).
    pub media_access_bytes: u32,
    /// NVM: a write occupies its bank until the cell write (tWR) completes, so the next column
    /// command to that bank waits. DRAM: false (writes to an open row pipeline at tCCD).
    pub array_write_blocks_bank: bool,
    /// Address mapping scheme.
    pub mapping: MappingScheme,
    /// Interleaving granularity of the `page` mapping.
    pub page_bytes: u32,
    /// Media timing.
    pub timing: TimingConfig,
    /// Optional on-DIMM read buffer.
    pub read_buffer: ReadBufferConfig,
}

impl Default for DeviceConfig {
    fn default() -> Self {
        DeviceConfig {
            technology: "dram".into(),
            channels: 1,
            ranks: 1,
            banks: 8,
            row_bytes: 2048,
            media_access_bytes: 64,
            array_write_blocks_bank: false,
            mapping: MappingScheme::RowStride,
            page_bytes: 4096,
            timing: TimingConfig::default(),
            read_buffer: ReadBufferConfig::default(),
        }
    }
}

/// The memory controller: queues, persistence domain and the plug-ins it runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ControllerConfig {
    /// Read queue entries per channel.
    pub read_queue: u32,
    /// Write pending queue (WPQ) entries per channel.
    pub write_queue: u32,
    /// ADR: a write is durable (and acknowledged) once accepted into the WPQ.
    pub adr: bool,
    /// Enter write-drain mode when the WPQ holds this many entries.
    pub drain_high: u32,
    /// Leave write-drain mode when the WPQ falls to this many entries.
    pub drain_low: u32,
    /// Fixed controller front-end latency added to every request (queue entry, PHY), ns.
    pub frontend_ns: f64,
    /// Request scheduler plug-in (`pmlab plugins` lists them).
    pub scheduler: String,
    /// Persist-ordering plug-in.
    pub ordering: String,
    /// PM-support (BMO) engine plug-in.
    pub bmo: String,
    /// Hardware logging plug-in.
    pub logging: String,
    /// A deliberate bug to switch on in the logging engine, to see crash oracles catch it
    /// (`none`; `header-before-entries`: headers do not wait for their entries;
    /// `steal-writebacks`: write-backs of lines an open transaction wrote reach PM;
    /// `no-adr-flush`: buffered log metadata is lost at a crash; `keep-uncommitted-staged`:
    /// LAD's ADR keeps an uncommitted transaction's staged lines at a crash).
    pub logging_fault: String,
    /// Bytes at the top of the PM range reserved for the hardware log (a logging engine's
    /// records, entries and headers live there; default 64 MiB). Not from a paper: the papers
    /// do not size the log area. A small one makes a short run reuse its log (REDU's ring
    /// wraps, LALEA's per-bank free lists run short), which crash checks want to exercise; a
    /// multiple of 4 KiB, at least 64 KiB.
    pub log_bytes: u64,
    /// Persist-buffer entries per hardware thread of the buffered ordering models (`epoch`,
    /// `broi`): a thread with this many persists unacknowledged stalls. PPO Sec. IV-E: "each
    /// persist buffer requires 8 persist buffer entries".
    pub persist_buffer: u32,
    /// BROI's sigma in Equation 2 (PPO Sec. IV-D): how much a SubReady-SET's size weighs
    /// against bank-level parallelism. The paper gives no value, only that "the BLP is more
    /// important than the size"; 0.5 weighs one request at half a bank.
    pub broi_sigma: f64,
    /// Request units of a BROI entry (PPO Sec. IV-E: 8): how much of the Next-SET the
    /// priority sees.
    pub broi_units: u32,
    /// Remote BROI entries, one per RDMA channel (PPO Sec. IV-E: 2).
    pub broi_remote_entries: u32,
    /// A remote request held this long goes to the write queue ahead of local ones (PPO
    /// Sec. IV-D 1: "flushed ... if the blocked time ... exceeds the threshold"; the paper gives
    /// no value; 1 us is a tenth of the remote response time it quotes, "about 10x us").
    pub broi_remote_threshold_ns: f64,
    /// A deliberate bug to switch on in the ordering model, to see the persist-order checker
    /// catch it (`none`; `broi-ignore-barriers`: BROI schedules requests after a barrier
    /// before those ahead of it are persisted; `ignore-dependencies`: `epoch` or `broi` drops
    /// the inter-thread dependencies the directory reports).
    pub ordering_fault: String,
    /// Write-predictor plug-in that feeds the PM-support engine precomputations (`none`,
    /// `pmweaver`, `ideal`; `pmlab plugins` lists them). Parameters in `[predictor]`.
    pub predictor: String,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            read_queue: 64,
            write_queue: 64,
            adr: true,
            drain_high: 48,
            drain_low: 16,
            frontend_ns: 0.0,
            scheduler: "frfcfs".into(),
            ordering: "x86".into(),
            bmo: "none".into(),
            logging: "none".into(),
            logging_fault: "none".into(),
            log_bytes: crate::logging::LOG_REGION_BYTES,
            persist_buffer: 8,
            broi_sigma: 0.5,
            broi_units: 8,
            broi_remote_entries: 2,
            broi_remote_threshold_ns: 1000.0,
            ordering_fault: "none".into(),
            predictor: "none".into(),
        }
    }
}

/// Which clock a memory trace's time column counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TraceClock {
    /// Requester (CPU) cycles at `replay.cpu_ghz`: what a trace recorded at the core counts.
    Cpu,
    /// Memory command-clock cycles (`device.timing.tck_ns`): how DRAMsim3's trace front end
    /// and Ramulator's memory-clock traces read the same `0xADDR READ|WRITE CYCLE` lines.
    Memory,
}

impl TraceClock {
    /// The config spelling (`cpu`, `memory`).
    pub fn name(self) -> &'static str {
        match self {
            TraceClock::Cpu => "cpu",
            TraceClock::Memory => "memory",
        }
    }

    /// Parses the config spelling.
    pub fn parse(s: &str) -> Result<TraceClock, String> {
        match s {
            "cpu" => Ok(TraceClock::Cpu),
            "memory" => Ok(TraceClock::Memory),
            _ => Err(format!("trace clock `{s}` is not `cpu` or `memory`")),
        }
    }
}

/// How a memory trace is fed to the memory system (memory-only replay).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReplayConfig {
    /// Clock of the requester: a trace gap of N is N cycles at this frequency (with
    /// `trace_clock = "cpu"`).
    pub cpu_ghz: f64,
    /// Which clock the trace's gaps count: `cpu` (cycles of `cpu_ghz`, the default) or
    /// `memory` (the device's command clock, DRAMsim3's convention). A `.pmt` imported with
    /// `--trace-clock memory` says so in its header and replays on the memory clock.
    pub trace_clock: TraceClock,
    /// Outstanding memory requests allowed per trace thread (memory-level parallelism).
    pub max_outstanding: u32,
}

impl Default for ReplayConfig {
    fn default() -> Self {
        ReplayConfig {
            cpu_ghz: 3.0,
            trace_clock: TraceClock::Cpu,
            max_outstanding: 16,
        }
    }
}

/// The cores of the full-system model (one hardware thread per trace thread).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CpuConfig {
    /// Physical cores; each has private L1D (and L2) caches.
    pub cores: u32,
    /// Hardware threads per core (SMT); threads of a core share its private caches.
    pub threads_per_core: u32,
    /// Core clock.
    pub ghz: f64,
    /// Instructions retired per cycle when nothing stalls.
    pub width: u32,
    /// Reorder-buffer entries: how far execution runs past an incomplete load.
    pub rob: u32,
    /// Outstanding L1D misses per thread (MSHRs / line-fill buffers): memory-level parallelism.
    pub mlp: u32,
    /// Store-buffer entries per thread; a store retiring into a full buffer stalls.
    pub store_buffer: u32,
    /// Cache-line write-backs (`clwb` / `clflushopt` that find a dirty line) a thread has in
    /// flight at most: a real core holds each in a line-fill buffer until the memory
    /// controller acknowledges it, so one more stalls until one is acknowledged. 0: unbounded
    /// (the default, which every preset keeps: a flush storm then queues at the controller
    /// instead of in the core; `docs/validation.md` shows where that matters).
    pub writebacks: u32,
}

impl Default for CpuConfig {
    fn default() -> Self {
        CpuConfig {
            cores: 4,
            threads_per_core: 1,
            ghz: 3.0,
            width: 4,
            rob: 192,
            mlp: 10,
            store_buffer: 48,
            writebacks: 0,
        }
    }
}

impl CpuConfig {
    /// Core cycle length in picoseconds.
    pub fn cycle_ps(&self) -> Ps {
        cycle_ps(self.ghz)
    }
}

/// One cache level: set-associative, LRU, write-back, write-allocate, 64 B lines.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CacheLevelConfig {
    /// Capacity in KiB (per core for private levels, in total for the shared LLC); 0 = absent.
    pub size_kib: u32,
    /// Associativity.
    pub ways: u32,
    /// Hit latency in core cycles (added for every access that reaches this level).
    pub latency_cycles: u32,
}

impl Default for CacheLevelConfig {
    fn default() -> Self {
        CacheLevelConfig {
            size_kib: 0,
            ways: 8,
            latency_cycles: 0,
        }
    }
}

/// The cache hierarchy: private L1D and L2 per core, one shared inclusive LLC.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CachesConfig {
    /// Private first-level data cache.
    pub l1d: CacheLevelConfig,
    /// Private second level (`size_kib = 0` for two-level hierarchies such as PPO's).
    pub l2: CacheLevelConfig,
    /// Shared last-level cache (inclusive of the private levels).
    pub llc: CacheLevelConfig,
}

impl Default for CachesConfig {
    fn default() -> Self {
        CachesConfig {
            l1d: CacheLevelConfig {
                size_kib: 32,
                ways: 8,
                latency_cycles: 4,
            },
            l2: CacheLevelConfig {
                size_kib: 256,
                ways: 8,
                latency_cycles: 12,
            },
            llc: CacheLevelConfig {
                size_kib: 8192,
                ways: 16,
                latency_cycles: 40,
            },
        }
    }
}

/// Which model `pmlab sim` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SystemModel {
    /// Cores, caches, DRAM and PM ([`crate::system::System`]).
    Full,
    /// The trace is already a memory-request stream: straight to the PM memory system
    /// ([`crate::replay::Replay`]).
    Memory,
}

/// The full system around the PM memory system: region map and the DRAM beside it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SystemConfig {
    /// Full system or memory-only replay.
    pub model: SystemModel,
    /// First byte address of the persistent region; addresses outside it are DRAM.
    pub pm_base: u64,
    /// Size of the persistent region in bytes.
    pub pm_bytes: u64,
    /// Preset of the volatile DRAM region's device and controller.
    pub dram: String,
}

/// Default start of the PM region: where the PMWeaver artifact's store dumps put PM
/// (`0x0000100000000040`) and where `pmwork` allocates.
pub const DEFAULT_PM_BASE: u64 = 0x1000_0000_0000;

impl Default for SystemConfig {
    fn default() -> Self {
        SystemConfig {
            model: SystemModel::Full,
            pm_base: DEFAULT_PM_BASE,
            pm_bytes: 1 << 40,
            dram: "ddr4-2400".into(),
        }
    }
}

/// The RDMA network between a client node and this node (PPO Sec. III and V-A), used by
/// `RdmaPwrite` events in the full-system model.
///
/// Link figures: Mellanox ConnectX-3 VPI with FDR InfiniBand, the adapter generation of the
/// PPO paper's Sandy Bridge client nodes (Sec. VI-A): "up to 56 Gb/s" FDR 4x signalling with
/// 64b/66b encoding (54.3 Gb/s of data) and "1 us MPI ping latency" (a one-way figure) from
/// the ConnectX-3 VPI product brief. Transport headers of an RC RDMA WRITE packet: LRH 8 +
/// BTH 12 + RETH 16 + ICRC 4 + VCRC 2 = 42 B; of an acknowledgement (LRH, BTH, AETH 4, ICRC,
/// VCRC): 30 B (InfiniBand Architecture Specification Vol. 1, ch. 9).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetworkConfig {
    /// Network persistence mode (`sync`, `bsp`; `pmlab plugins` lists them): when a client
    /// waits for the persist acknowledgement of its remote writes.
    pub persistence: String,
    /// One-way latency of a message, NIC to NIC, ns.
    pub latency_ns: f64,
    /// Data bandwidth of each direction of the link, Gb/s.
    pub bandwidth_gbps: f64,
    /// Transport header bytes of the first packet of an `rdma_pwrite` verb.
    pub header_bytes: u32,
    /// Bytes of a persist acknowledgement.
    pub ack_bytes: u32,
    /// A deliberate bug to switch on in the network persistence mode, to see `pmlab crash`
    /// catch it (`none`; `fence-skips-ack`: a client fence that should wait for the persist
    /// acknowledgement of its remote writes returns without it).
    pub fault: String,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        NetworkConfig {
            persistence: "sync".into(),
            latency_ns: 1000.0,
            bandwidth_gbps: 54.3,
            header_bytes: 42,
            ack_bytes: 30,
            fault: "none".into(),
        }
    }
}

/// A complete simulator configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimConfig {
    /// Built-in preset this file starts from (its keys override the preset's).
    pub preset: Option<String>,
    /// Short name used in reports.
    pub name: String,
    /// One-line description (cite the source system).
    pub description: String,
    /// The memory device.
    pub device: DeviceConfig,
    /// The memory controller.
    pub controller: ControllerConfig,
    /// Memory-only replay settings.
    pub replay: ReplayConfig,
    /// Cores of the full-system model.
    pub cpu: CpuConfig,
    /// Cache hierarchy of the full-system model.
    pub caches: CachesConfig,
    /// Region map and DRAM of the full-system model.
    pub system: SystemConfig,
    /// The RDMA network to client nodes (full-system model).
    pub network: NetworkConfig,
    /// Parameters of the PM-support engines (`controller.bmo`).
    pub bmo: BmoConfig,
    /// Parameters of the write predictors (`controller.predictor`).
    pub predictor: PredictorConfig,
}

/// Parameters of the PM-support (BMO) engines. Defaults: PMWeaver (PACT'21) Table I and the
/// latency model of its public artifact (`../shared/REFERENCE.md`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BmoConfig {
    /// One AES-128 block (a one-time pad), ns. Table I: "AES-128: 40 ns".
    pub aes_ns: f64,
    /// One SHA-1 hash (a tree node or a MAC), ns. Table I: "SHA-1 40 ns".
    pub hash_ns: f64,
    /// Levels of the Bonsai Merkle tree above the counter blocks. The artifact's latency model
    /// hashes "1 + tree height 12" times per write.
    pub tree_height: u32,
    /// Children per tree node (8 x 8 B hashes in a 64 B node: Rogers et al., MICRO'07).
    pub tree_arity: u32,
    /// A metadata-cache miss (counter, tree node, dedup table entry), ns. The artifact: "counter
    /// cache miss 40", "40 per verification-cache miss".
    pub metadata_miss_ns: f64,
    /// Counter cache, KiB of 64 B counter blocks. Table I: "Counter cache: 256kB".
    pub counter_cache_kib: u32,
    /// Verification (tree-node) cache, KiB of 64 B nodes. Table I: "Integrity cache: 256kB".
    pub verification_cache_kib: u32,
    /// Ways of every metadata cache (the artifact's counter cache is 16-way).
    pub metadata_cache_ways: u32,
    /// Deduplication fingerprint (hash of a line), ns. The artifact: "hash 300".
    pub dedup_hash_ns: f64,
    /// Deduplication metadata cache (address-mapping and hash-table blocks), KiB. Not in
    /// Table I; assumption: the size of the other metadata caches.
    pub dedup_cache_kib: u32,
}

impl Default for BmoConfig {
    fn default() -> Self {
        BmoConfig {
            aes_ns: 40.0,
            hash_ns: 40.0,
            tree_height: 12,
            tree_arity: 8,
            metadata_miss_ns: 40.0,
            counter_cache_kib: 256,
            verification_cache_kib: 256,
            metadata_cache_ways: 16,
            dedup_hash_ns: 300.0,
            dedup_cache_kib: 256,
        }
    }
}

/// Parameters of the write predictors. Defaults: PMWeaver (PACT'21) Table I and Sec. V, and its
/// artifact where the paper is silent (`../shared/REFERENCE.md`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PredictorConfig {
    /// Store PCs in the PC-path hash. Table I: "PC-Path Length 32".
    pub path_length: u32,
    /// Store-history entries per core. Table I: "Store History Buffer ... 512 entries".
    pub history_entries: u32,
    /// Prediction-table entries per core. Table I: "Predictor Table 32 entries".
    pub table_entries: u32,
    /// PCs the pending table's index generator tracks per core. Table I: "Index Generator:
    /// 128 entries".
    pub index_entries: u32,
    /// Pending predictions per core. Table I: "Pending Predictions: 8 entries".
    pub pending_entries: u32,
    /// Timeout-predictor entries per core. Table I: "Timeout Predictor Table 4 entries".
    pub timeout_entries: u32,
    /// Idle time after a line's last store before the timeout predictor sends it, ns.
    /// Sec. V-D2: the knee of Fig. 7 "at around 150 ns".
    pub timeout_ns: f64,
    /// Distinct line addresses in the prediction result buffer, per core. Table I: "16 unique
    /// addresses".
    pub result_addresses: u32,
    /// Candidate lines kept per address. Table I: "16 data entries per address".
    pub result_candidates: u32,
    /// Initial confidence of a new prediction-table entry (artifact: 6).
    pub confidence_init: u32,
    /// Saturation of the 3-bit confidences (artifact: 7).
    pub confidence_max: u32,
    /// A table entry predicts while its confidence is at least this (artifact: 1).
    pub confidence_threshold: u32,
    /// Predict all-zero 4 B chunks as constants (Sec. V-D1, zero-value prediction).
    pub zero_values: bool,
    /// Send predicted data for precomputation; `false` sends addresses only (the
    /// address-only share of PMWeaver Fig. 19).
    pub predict_data: bool,
    /// Learner and predictor access latency, ns. Table I: 1 ns (the L1 latency).
    pub frontend_ns: f64,
    /// Validator (result buffer) lookup on each PM write-back, ns. Table I: 5 ns.
    pub validator_ns: f64,
    /// Precomputations older than this are aged out of the result buffer, ns. The artifact:
    /// "older than ~25-30 us".
    pub max_age_ns: f64,
    /// Share of write-backs the `ideal` predictor covers (1: all; less picks that share by a
    /// hash of the line and the write-back's number, to see what a given coverage is worth).
    pub ideal_coverage: f64,
}

impl Default for PredictorConfig {
    fn default() -> Self {
        PredictorConfig {
            path_length: 32,
            history_entries: 512,
            table_entries: 32,
            index_entries: 128,
            pending_entries: 8,
            timeout_entries: 4,
            timeout_ns: 150.0,
            result_addresses: 16,
            result_candidates: 16,
            confidence_init: 6,
            confidence_max: 7,
            confidence_threshold: 1,
            zero_values: true,
            predict_data: true,
            frontend_ns: 1.0,
            validator_ns: 5.0,
            max_age_ns: 30_000.0,
            ideal_coverage: 1.0,
        }
    }
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            preset: None,
            name: "custom".into(),
            description: String::new(),
            device: DeviceConfig::default(),
            controller: ControllerConfig::default(),
            replay: ReplayConfig::default(),
            cpu: CpuConfig::default(),
            caches: CachesConfig::default(),
            system: SystemConfig::default(),
            network: NetworkConfig::default(),
            bmo: BmoConfig::default(),
            predictor: PredictorConfig::default(),
        }
    }
}

/// Device timing converted to picoseconds, as the simulator uses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// See [`TimingConfig`] for each field.
    pub tck: Ps,
    #[allow(missing_docs)]
    pub trcd: Ps,
    #[allow(missing_docs)]
    pub tcl: Ps,
    #[allow(missing_docs)]
    pub tcwd: Ps,
    #[allow(missing_docs)]
    pub tburst: Ps,
    #[allow(missing_docs)]
    pub trp: Ps,
    #[allow(missing_docs)]
    pub tras: Ps,
    #[allow(missing_docs)]
    pub twr: Ps,
    #[allow(missing_docs)]
    pub twtr: Ps,
    #[allow(missing_docs)]
    pub trtp: Ps,
    #[allow(missing_docs)]
    pub tfaw: Ps,
    #[allow(missing_docs)]
    pub trrd: Ps,
    /// Refresh interval (0: no refresh).
    pub trefi: Ps,
    #[allow(missing_docs)]
    pub trfc: Ps,
}

impl TimingConfig {
    /// Converts to picoseconds.
    pub fn to_ps(&self) -> Timing {
        Timing {
            tck: ns_to_ps(self.tck_ns),
            trcd: ns_to_ps(self.trcd_ns),
            tcl: ns_to_ps(self.tcl_ns),
            tcwd: ns_to_ps(self.tcwd_ns),
            tburst: ns_to_ps(self.tburst_ns),
            trp: ns_to_ps(self.trp_ns),
            tras: ns_to_ps(self.tras_ns),
            twr: ns_to_ps(self.twr_ns),
            twtr: ns_to_ps(self.twtr_ns),
            trtp: ns_to_ps(self.trtp_ns),
            tfaw: ns_to_ps(self.tfaw_ns),
            trrd: ns_to_ps(self.trrd_ns),
            trefi: ns_to_ps(self.trefi_ns),
            trfc: ns_to_ps(self.trfc_ns),
        }
    }
}

impl ReplayConfig {
    /// Requester cycle length in picoseconds (of `cpu_ghz`, whatever `trace_clock` says).
    pub fn cycle_ps(&self) -> Ps {
        cycle_ps(self.cpu_ghz)
    }
}

impl SimConfig {
    /// Length in picoseconds of one cycle of a memory trace's time column under `clock`: a
    /// requester cycle, or the device's command clock (rounded to whole picoseconds).
    pub fn trace_cycle_ps(&self, clock: TraceClock) -> Ps {
        match clock {
            TraceClock::Cpu => self.replay.cycle_ps(),
            TraceClock::Memory => ns_to_ps(self.device.timing.tck_ns).max(1),
        }
    }
}

fn toml_error(origin: &str, text: &str, e: &toml::de::Error) -> ConfigError {
    let line = e
        .span()
        .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
    let msg = e.message().replace('\n', " ");
    match line {
        Some(l) => ConfigError(format!("{origin}:{l}: {msg}")),
        None => ConfigError(format!("{origin}: {msg}")),
    }
}

/// Longest config file read (presets are about 3 KiB): `--config /dev/zero` read until the
/// machine ran out of memory.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The text of config file `path`, at most one byte beyond [`MAX_CONFIG_BYTES`].
fn read_config_text(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(MAX_CONFIG_BYTES + 1)
        .read_to_string(&mut text)?;
    Ok(text)
}

/// Refuses a section written as an array (`[[controller]]`, `[[caches.l1d]]`, `cpu = [1, 2]`):
/// serde reads an array into a struct field by field, so `[[controller]]` reported "invalid
/// type: map, expected u32" and `cpu = [1, 2]` set `cpu.cores` and `cpu.threads_per_core`
/// without a word. The sections are the tables of the default config.
fn check_sections_are_tables(text: &str, origin: &str) -> Result<(), ConfigError> {
    fn find(t: &toml::Table, shape: &toml::Table, prefix: &str) -> Option<(String, bool)> {
        for (k, v) in t {
            let Some(toml::Value::Table(sub)) = shape.get(k) else {
                continue;
            };
            let path = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            match v {
                toml::Value::Array(a) => return Some((path, a.iter().any(toml::Value::is_table))),
                toml::Value::Table(inner) => {
                    if let Some(found) = find(inner, sub, &path) {
                        return Some(found);
                    }
                }
                _ => {}
            }
        }
        None
    }
    let Ok(table) = toml::from_str::<toml::Table>(text) else {
        return Ok(()); // a syntax error: the typed parse reports it with its line
    };
    let Ok(toml::Value::Table(shape)) = toml::Value::try_from(SimConfig::default()) else {
        return Ok(());
    };
    let Some((path, of_tables)) = find(&table, &shape, "") else {
        return Ok(());
    };
    let leaf = path.rsplit('.').next().unwrap_or(&path);
    let at = text
        .lines()
        .position(|l| {
            let l = l.trim();
            if of_tables {
                l == format!("[[{path}]]")
            } else {
                l.starts_with(leaf) && l[leaf.len()..].trim_start().starts_with('=')
            }
        })
        .map_or(String::new(), |i| format!(":{}", i + 1));
    let what = if of_tables {
        "an array of tables"
    } else {
        "a list"
    };
    Err(ConfigError(format!(
        "{origin}{at}: `{path}` must be one table (`[{path}]`), not {what}"
    )))
}

fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

fn preset_text(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

impl SimConfig {
    /// Loads a built-in preset by name (e.g. `optane`).
    pub fn preset(name: &str) -> Result<SimConfig, ConfigError> {
        let text = preset_text(name).ok_or_else(|| {
            ConfigError(format!(
                "unknown preset `{name}` (known: {})",
                preset_names().join(", ")
            ))
        })?;
        SimConfig::from_toml_str(text, &format!("configs/{name}.toml"))
    }

    /// Loads a config file, or a preset when `path` names one (`optane`, `configs/optane.toml`
    /// that does not exist locally, ...).
    pub fn load(path: &Path) -> Result<SimConfig, ConfigError> {
        let origin = path.display().to_string();
        match read_config_text(path) {
            Ok(text) if text.len() as u64 > MAX_CONFIG_BYTES => Err(ConfigError(format!(
                "{origin}: larger than {} KiB: not a config file",
                MAX_CONFIG_BYTES >> 10
            ))),
            Ok(text) => SimConfig::from_toml_str(&text, &origin),
            Err(e) => {
                let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
                let bare = !origin.contains('/') && !origin.ends_with(".toml");
                // `configs/NAME.toml` (the repository's copy of a preset, as the README writes
                // it) is the built-in preset where that file is absent, e.g. outside the
                // repository; any other missing path is an error, not a silent preset.
                let repo_copy = path.parent() == Some(Path::new("configs"))
                    && path.extension().is_some_and(|x| x == "toml");
                if preset_text(stem).is_some()
                    && (bare || (repo_copy && e.kind() == std::io::ErrorKind::NotFound))
                {
                    SimConfig::preset(stem)
                } else if bare {
                    Err(ConfigError(format!(
                        "`{origin}` is neither a preset (known: {}) nor a readable config file ({e})",
                        preset_names().join(", ")
                    )))
                } else {
                    Err(ConfigError(format!("{origin}: cannot read config: {e}")))
                }
            }
        }
    }

    /// Parses config text; `origin` names it in error messages.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<SimConfig, ConfigError> {
        check_sections_are_tables(text, origin)?;
        // First pass on the file alone: reports unknown keys and type errors with line numbers.
        let own: SimConfig = toml::from_str(text).map_err(|e| toml_error(origin, text, &e))?;
        let cfg = match &own.preset {
            None => own,
            Some(p) => {
                let base_text = preset_text(p).ok_or_else(|| {
                    ConfigError(format!(
                        "{origin}: preset = \"{p}\" is not a known preset (known: {})",
                        preset_names().join(", ")
                    ))
                })?;
                let mut base: toml::Table = toml::from_str(base_text)
                    .map_err(|e| toml_error(&format!("configs/{p}.toml"), base_text, &e))?;
                let over: toml::Table =
                    toml::from_str(text).map_err(|e| toml_error(origin, text, &e))?;
                merge(&mut base, over);
                SimConfig::deserialize(toml::Value::Table(base))
                    .map_err(|e| ConfigError(format!("{origin}: {}", e.message())))?
            }
        };
        cfg.validate()
            .map_err(|m| ConfigError(format!("{origin}: {m}")))?;
        Ok(cfg)
    }

    /// Applies `key=value` overrides (dotted keys, TOML values; bare words are strings). A key
    /// may be given once, and not beside a section that holds it (`a` with `a.b`).
    pub fn with_overrides(&self, sets: &[String]) -> Result<SimConfig, ConfigError> {
        if sets.is_empty() {
            return Ok(self.clone());
        }
        let mut table = toml::Table::try_from(self)
            .map_err(|e| ConfigError(format!("cannot re-serialise config: {e}")))?;
        let mut seen: Vec<&str> = Vec::new();
        for s in sets {
            let (key, raw) = s
                .split_once('=')
                .ok_or_else(|| ConfigError(format!("--set {s}: expected KEY=VALUE")))?;
            // The second value would silently win over the first, also where one key is a
            // section holding the other (`a` and `a.b`).
            let k = key.trim();
            if let Some(other) = seen.iter().find(|o| overlapping_keys(o, k)) {
                return Err(ConfigError(if *other == k {
                    format!("--set {s}: key `{k}` given twice")
                } else {
                    format!("--set {s}: key `{k}` overlaps `{other}`, also given")
                }));
            }
            seen.push(key.trim());
            if k == "preset" {
                // The preset is merged when the file is read: setting the key afterwards changed
                // only the name the config reported (and a sweep's CSV column), not one setting.
                return Err(ConfigError(format!(
                    "--set {s}: a preset is chosen with --config (a preset name, or a config file \
                     with `preset = ...`), not with --set"
                )));
            }
            let parsed = format!("v = {raw}")
                .parse::<toml::Table>()
                .ok()
                .and_then(|mut t| t.remove("v"));
            let digits = raw.trim().trim_start_matches(['-', '+']);
            if parsed.is_none() && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
            {
                // Not a string the key wants but an integer TOML cannot hold.
                return Err(ConfigError(format!(
                    "--set {s}: {} is out of range",
                    raw.trim()
                )));
            }
            let value = parsed.unwrap_or_else(|| toml::Value::String(raw.to_string()));
            let parts: Vec<&str> = key.trim().split('.').collect();
            let mut cur = &mut table;
            for p in &parts[..parts.len() - 1] {
                cur = match cur.get_mut(*p) {
                    Some(toml::Value::Table(t)) => t,
                    _ => return Err(ConfigError(format!("--set {s}: unknown key `{key}`"))),
                };
            }
            let last = parts[parts.len() - 1];
            if !cur.contains_key(last) {
                return Err(ConfigError(format!("--set {s}: unknown key `{key}`")));
            }
            match (cur.get_mut(last), value) {
                // `--set 'device.timing={tck_ns=1}'` changes that key: the section's other keys
                // keep their values (replacing the table set them to the built-in defaults).
                (Some(toml::Value::Table(old)), toml::Value::Table(new)) => merge(old, new),
                // serde would fill the section's fields from the list in order.
                (Some(toml::Value::Table(_)), toml::Value::Array(_)) => {
                    return Err(ConfigError(format!(
                        "--set {s}: `{k}` is a section: set its keys (`{k}.KEY=VALUE`) or give \
                         a table (`{k}={{KEY=VALUE}}`), not a list"
                    )))
                }
                (_, v) => {
                    cur.insert(last.to_string(), v);
                }
            }
            // Type errors name the setting that caused them.
            SimConfig::deserialize(toml::Value::Table(table.clone()))
                .map_err(|e| ConfigError(format!("--set {s}: {}", e.message())))?;
        }
        let cfg = SimConfig::deserialize(toml::Value::Table(table))
            .map_err(|e| ConfigError(format!("--set: {}", e.message())))?;
        cfg.validate()
            .map_err(|m| ConfigError(format!("--set: {m}")))?;
        Ok(cfg)
    }

    /// Checks ranges and cross-field constraints; the message names the offending key.
    pub fn validate(&self) -> Result<(), String> {
        let d = &self.device;
        // `pmlab crash` refuses a volatile device by this label: one it does not know was taken.
        const TECHNOLOGIES: [&str; 4] = ["dram", "pcm", "nvm", "optane"];
        if !TECHNOLOGIES.contains(&d.technology.as_str()) {
            return Err(format!(
                "device.technology = \"{}\" is not a known technology (known: {})",
                d.technology,
                TECHNOLOGIES.join(", ")
            ));
        }
        range("device.channels", d.channels, 1, 64)?;
        range("device.ranks", d.ranks, 1, 16)?;
        range("device.banks", d.banks, 1, 256)?;
        pow2("device.row_bytes", d.row_bytes, 64, 1 << 20)?;
        pow2(
            "device.media_access_bytes",
            d.media_access_bytes,
            64,
            d.row_bytes,
        )?;
        pow2("device.page_bytes", d.page_bytes, 64, 1 << 30)?;
        let t = &d.timing;
        let fields = [
            ("tck_ns", t.tck_ns),
            ("trcd_ns", t.trcd_ns),
            ("tcl_ns", t.tcl_ns),
            ("tcwd_ns", t.tcwd_ns),
            ("tburst_ns", t.tburst_ns),
            ("trp_ns", t.trp_ns),
            ("tras_ns", t.tras_ns),
            ("twr_ns", t.twr_ns),
            ("twtr_ns", t.twtr_ns),
            ("trtp_ns", t.trtp_ns),
            ("tfaw_ns", t.tfaw_ns),
            ("trrd_ns", t.trrd_ns),
            ("trefi_ns", t.trefi_ns),
            ("trfc_ns", t.trfc_ns),
        ];
        for (k, v) in fields {
            if !v.is_finite() || !(0.0..=1.0e6).contains(&v) {
                return Err(format!(
                    "device.timing.{k} = {v} is impossible (must be between 0 and 1e6 ns)"
                ));
            }
        }
        // Checked after rounding to the simulator's picoseconds: 0.0004 ns is 0 ps.
        if ns_to_ps(t.tck_ns) == 0 {
            return Err("device.timing.tck_ns must be at least 0.0005 ns (1 ps)".into());
        }
        if ns_to_ps(t.tburst_ns) == 0 {
            return Err(
                "device.timing.tburst_ns must be at least 0.0005 ns (1 ps; a burst takes time)"
                    .into(),
            );
        }
        if t.trefi_ns > 0.0 {
            // A refresh, plus what an access after it needs, must fit well inside an
            // interval, or the rank would do nothing but refresh.
            let access = t.trfc_ns + t.trp_ns + t.tras_ns + t.trcd_ns + t.tcl_ns + t.twr_ns;
            if t.trfc_ns <= 0.0 || 2.0 * (access + t.tburst_ns) > t.trefi_ns {
                return Err(format!(
                    "device.timing.trefi_ns = {} with trfc_ns = {}: a refresh interval must be > 0 \
                     and at least twice tRFC + tRP + tRAS + tRCD + tCL + tWR + tBURST ({} ns)",
                    t.trefi_ns,
                    t.trfc_ns,
                    access + t.tburst_ns
                ));
            }
        }
        if t.tras_ns > 0.0 && t.tras_ns < t.trcd_ns {
            return Err(format!(
                "device.timing.tras_ns = {} is shorter than trcd_ns = {} (a row cannot close before it opens)",
                t.tras_ns, t.trcd_ns
            ));
        }
        let rb = &d.read_buffer;
        range("device.read_buffer.entries", rb.entries, 0, 1 << 16)?;
        if rb.entries > 0 {
            pow2(
                "device.read_buffer.xpline_bytes",
                rb.xpline_bytes,
                64,
                d.row_bytes,
            )?;
        }
        let c = &self.controller;
        range("controller.read_queue", c.read_queue, 1, 4096)?;
        range("controller.write_queue", c.write_queue, 1, 4096)?;
        range("controller.drain_high", c.drain_high, 1, c.write_queue)?;
        if c.drain_low >= c.drain_high {
            return Err(format!(
                "controller.drain_low = {} must be below drain_high = {}",
                c.drain_low, c.drain_high
            ));
        }
        if !c.frontend_ns.is_finite() || !(0.0..=1.0e6).contains(&c.frontend_ns) {
            return Err(format!(
                "controller.frontend_ns = {} is out of range (0..1e6 ns)",
                c.frontend_ns
            ));
        }
        range("controller.persist_buffer", c.persist_buffer, 1, 4096)?;
        range("controller.broi_units", c.broi_units, 1, 4096)?;
        range(
            "controller.broi_remote_entries",
            c.broi_remote_entries,
            1,
            1024,
        )?;
        if !c.broi_sigma.is_finite() || !(0.0..=1.0e3).contains(&c.broi_sigma) {
            return Err(format!(
                "controller.broi_sigma = {} is out of range (0..1000)",
                c.broi_sigma
            ));
        }
        nanos(
            "controller.broi_remote_threshold_ns",
            c.broi_remote_threshold_ns,
        )?;
        // Names first: a misspelled predictor was told to set a PM-support engine.
        crate::plugins::check_names(c)?;
        self.validate_bmo()?;
        let r = &self.replay;
        // The lower bound keeps a cycle at most 1e6 ps, so that a trace's largest gap
        // (u32::MAX cycles) stays within the simulator's u64 clock: 1e-300 GHz made a cycle of
        // u64::MAX ps, and the first gap overflowed.
        if !r.cpu_ghz.is_finite() || !(0.001..=100.0).contains(&r.cpu_ghz) {
            return Err(format!(
                "replay.cpu_ghz = {} is out of range (0.001 <= f <= 100)",
                r.cpu_ghz
            ));
        }
        range("replay.max_outstanding", r.max_outstanding, 1, 4096)?;
        self.validate_full_system()
    }

    fn validate_full_system(&self) -> Result<(), String> {
        let p = &self.cpu;
        range("cpu.cores", p.cores, 1, 64)?;
        range("cpu.threads_per_core", p.threads_per_core, 1, 8)?;
        if p.cores * p.threads_per_core > 1024 {
            return Err("cpu.cores x cpu.threads_per_core exceeds 1024 threads".into());
        }
        if !p.ghz.is_finite() || !(0.001..=100.0).contains(&p.ghz) {
            return Err(format!(
                "cpu.ghz = {} is out of range (0.001 <= f <= 100)",
                p.ghz
            ));
        }
        range("cpu.width", p.width, 1, 64)?;
        range("cpu.rob", p.rob, 1, 1 << 16)?;
        range("cpu.mlp", p.mlp, 1, 1024)?;
        range("cpu.store_buffer", p.store_buffer, 1, 1 << 16)?;
        range("cpu.writebacks", p.writebacks, 0, 1 << 16)?;
        for (name, c, may_be_absent) in [
            ("caches.l1d", &self.caches.l1d, false),
            ("caches.l2", &self.caches.l2, true),
            ("caches.llc", &self.caches.llc, false),
        ] {
            if c.size_kib == 0 && may_be_absent {
                continue;
            }
            range(&format!("{name}.size_kib"), c.size_kib, 1, 1 << 22)?;
            range(&format!("{name}.ways"), c.ways, 1, 64)?;
            range(
                &format!("{name}.latency_cycles"),
                c.latency_cycles,
                0,
                10_000,
            )?;
            let lines = c.size_kib as u64 * 1024 / 64;
            if !lines.is_multiple_of(c.ways as u64) || !(lines / c.ways as u64).is_power_of_two() {
                return Err(format!(
                    "{name}: {} KiB / 64 B lines / {} ways must give a power-of-two number of sets",
                    c.size_kib, c.ways
                ));
            }
        }
        let s = &self.system;
        if s.pm_bytes == 0 || s.pm_base.checked_add(s.pm_bytes).is_none() {
            return Err(format!(
                "system.pm_base = {:#x} + system.pm_bytes = {:#x} is not a valid region",
                s.pm_base, s.pm_bytes
            ));
        }
        if !s.pm_base.is_multiple_of(64) {
            return Err(format!(
                "system.pm_base = {:#x} must be 64 B aligned",
                s.pm_base
            ));
        }
        let log = self.controller.log_bytes;
        if log < 64 << 10 || !log.is_multiple_of(4096) {
            return Err(format!(
                "controller.log_bytes = {log} must be a multiple of 4096 and at least 65536 (64 KiB)"
            ));
        }
        // Checked here as well as where the system is built: a sweep found it after its other
        // jobs had run.
        if self.controller.logging != "none" {
            self.check_log_region()?;
        }
        let n = &self.network;
        nanos("network.latency_ns", n.latency_ns)?;
        if !n.bandwidth_gbps.is_finite() || !(0.001..=1.0e6).contains(&n.bandwidth_gbps) {
            return Err(format!(
                "network.bandwidth_gbps = {} is out of range (0.001..1e6 Gb/s)",
                n.bandwidth_gbps
            ));
        }
        range("network.header_bytes", n.header_bytes, 0, 1 << 16)?;
        range("network.ack_bytes", n.ack_bytes, 0, 1 << 16)?;
        let mut mode = crate::plugins::network(&n.persistence)?;
        // `network.fault` was checked only where a run had RDMA clients: a sweep found a
        // misspelled fault after its other jobs had run, and a run without clients took it.
        mode.configure(n)?;
        if mode.needs_server_ordering() && self.controller.ordering == "x86" {
            return Err(format!(
                "network.persistence = \"{}\" sends epochs before earlier ones are durable and \
                 needs the server to order them: set controller.ordering to a buffered model \
                 (epoch or broi), not x86",
                n.persistence
            ));
        }
        if preset_text(&s.dram).is_none() {
            return Err(format!(
                "system.dram = \"{}\" is not a known preset (known: {})",
                s.dram,
                preset_names().join(", ")
            ));
        }
        Ok(())
    }
}

impl SimConfig {
    fn validate_bmo(&self) -> Result<(), String> {
        let b = &self.bmo;
        for (k, v) in [
            ("aes_ns", b.aes_ns),
            ("hash_ns", b.hash_ns),
            ("metadata_miss_ns", b.metadata_miss_ns),
            ("dedup_hash_ns", b.dedup_hash_ns),
        ] {
            nanos(&format!("bmo.{k}"), v)?;
        }
        range("bmo.tree_height", b.tree_height, 1, 20)?;
        pow2("bmo.tree_arity", b.tree_arity, 2, 64)?;
        range("bmo.metadata_cache_ways", b.metadata_cache_ways, 1, 64)?;
        for (k, v) in [
            ("counter_cache_kib", b.counter_cache_kib),
            ("verification_cache_kib", b.verification_cache_kib),
            ("dedup_cache_kib", b.dedup_cache_kib),
        ] {
            range(&format!("bmo.{k}"), v, 1, 1 << 20)?;
            let lines = v as u64 * 16;
            if !lines.is_multiple_of(b.metadata_cache_ways as u64)
                || !(lines / b.metadata_cache_ways as u64).is_power_of_two()
            {
                return Err(format!(
                    "bmo.{k} = {v}: {v} KiB / 64 B / {} ways must give a power-of-two number of sets",
                    b.metadata_cache_ways
                ));
            }
        }
        let p = &self.predictor;
        range("predictor.path_length", p.path_length, 1, 64)?;
        range("predictor.history_entries", p.history_entries, 1, 1 << 20)?;
        range("predictor.table_entries", p.table_entries, 1, 1 << 20)?;
        range("predictor.index_entries", p.index_entries, 1, 1 << 20)?;
        range("predictor.pending_entries", p.pending_entries, 1, 64)?;
        range("predictor.timeout_entries", p.timeout_entries, 0, 1 << 16)?;
        range("predictor.result_addresses", p.result_addresses, 1, 1 << 20)?;
        range(
            "predictor.result_candidates",
            p.result_candidates,
            1,
            1 << 10,
        )?;
        range("predictor.confidence_max", p.confidence_max, 1, 255)?;
        range(
            "predictor.confidence_init",
            p.confidence_init,
            0,
            p.confidence_max,
        )?;
        range(
            "predictor.confidence_threshold",
            p.confidence_threshold,
            0,
            p.confidence_max,
        )?;
        for (k, v) in [
            ("timeout_ns", p.timeout_ns),
            ("frontend_ns", p.frontend_ns),
            ("validator_ns", p.validator_ns),
            ("max_age_ns", p.max_age_ns),
        ] {
            nanos(&format!("predictor.{k}"), v)?;
        }
        if !(0.0..=1.0).contains(&p.ideal_coverage) {
            return Err(format!(
                "predictor.ideal_coverage = {} is out of range (0..1)",
                p.ideal_coverage
            ));
        }
        if self.controller.predictor != "none" && self.controller.bmo == "none" {
            return Err(format!(
                "controller.predictor = \"{}\" precomputes PM-support operations: set \
                 controller.bmo to an engine (enc-bmt or dedup)",
                self.controller.predictor
            ));
        }
        Ok(())
    }

    /// Whether PM has room for the hardware log (`controller.log_bytes` at its top) beside the
    /// programs: at least twice the log.
    pub(crate) fn check_log_region(&self) -> Result<(), String> {
        let log = self.controller.log_bytes;
        if self.system.pm_bytes / 2 < log {
            return Err(format!(
                "controller.logging = \"{}\" reserves the top {} KiB of PM for its log \
                 (controller.log_bytes): system.pm_bytes must be at least {} KiB",
                self.controller.logging,
                log >> 10,
                (2 * log) >> 10
            ));
        }
        Ok(())
    }
}

/// Checks a duration in nanoseconds: finite, between 0 and 1e9.
fn nanos(key: &str, v: f64) -> Result<(), String> {
    if !v.is_finite() || !(0.0..=1.0e9).contains(&v) {
        return Err(format!("{key} = {v} is out of range (0..1e9 ns)"));
    }
    Ok(())
}

fn range(key: &str, v: u32, lo: u32, hi: u32) -> Result<(), String> {
    if v < lo || v > hi {
        Err(format!("{key} = {v} is out of range ({lo}..={hi})"))
    } else {
        Ok(())
    }
}

fn pow2(key: &str, v: u32, lo: u32, hi: u32) -> Result<(), String> {
    range(key, v, lo, hi)?;
    if !v.is_power_of_two() {
        return Err(format!("{key} = {v} must be a power of two"));
    }
    Ok(())
}

/// Whether two dotted `--set` keys name the same setting, or one a section holding the other.
pub fn overlapping_keys(a: &str, b: &str) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    long == short || (long.starts_with(short) && long.as_bytes()[short.len()] == b'.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_loads_and_validates() {
        for name in preset_names() {
            let c = SimConfig::preset(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(c.name, name);
        }
    }

    #[test]
    fn unknown_key_names_key_line_and_file() {
        let e = SimConfig::from_toml_str("[controller]\nread_queue = 8\nfoo = 1\n", "x.toml")
            .unwrap_err();
        assert!(e.0.starts_with("x.toml:3:"), "{e}");
        assert!(e.0.contains("foo"), "{e}");
        assert!(!e.0.contains('\n'));
    }

    #[test]
    fn out_of_range_and_impossible_values() {
        let e = SimConfig::from_toml_str("[controller]\nwrite_queue = 0\n", "y.toml").unwrap_err();
        assert!(e.0.contains("controller.write_queue = 0"), "{e}");
        let e = SimConfig::from_toml_str("[device.timing]\ntrcd_ns = -3\n", "y.toml").unwrap_err();
        assert!(e.0.contains("device.timing.trcd_ns = -3"), "{e}");
        let e = SimConfig::from_toml_str("[device.timing]\ntburst_ns = 0\n", "y.toml").unwrap_err();
        assert!(e.0.contains("tburst_ns"), "{e}");
        let e = SimConfig::from_toml_str("[device]\nrow_bytes = 1000\n", "y.toml").unwrap_err();
        assert!(e.0.contains("power of two"), "{e}");
    }

    /// A requester clock so slow that a cycle overflows the picosecond clock is refused (1e-300
    /// GHz passed `> 0` and the replay's first gap overflowed: a panic in a debug build, a
    /// wrapped time in a release build).
    #[test]
    fn a_requester_clock_too_slow_for_the_clock_is_refused() {
        for v in ["1e-300", "1e-7", "0.0009"] {
            let e = SimConfig::from_toml_str(&format!("[replay]\ncpu_ghz = {v}\n"), "r.toml")
                .unwrap_err();
            assert!(e.0.contains("replay.cpu_ghz"), "{e}");
        }
        let c = SimConfig::from_toml_str("[replay]\ncpu_ghz = 0.001\n", "r.toml").unwrap();
        for clock in [TraceClock::Cpu, TraceClock::Memory] {
            assert!(c
                .trace_cycle_ps(clock)
                .checked_mul(u32::MAX as u64)
                .is_some());
        }
    }

    #[test]
    fn missing_preset_names_key_and_file() {
        let e = SimConfig::from_toml_str("preset = \"nope\"\n", "z.toml").unwrap_err();
        assert!(e.0.starts_with("z.toml: preset = \"nope\""), "{e}");
    }

    #[test]
    fn preset_override_merges() {
        let c = SimConfig::from_toml_str(
            "preset = \"optane\"\nname = \"mine\"\n[controller]\nadr = false\n",
            "m.toml",
        )
        .unwrap();
        let base = SimConfig::preset("optane").unwrap();
        assert!(!c.controller.adr);
        assert_eq!(c.device, base.device);
        assert_eq!(c.name, "mine");
    }

    #[test]
    fn overrides_apply_and_validate() {
        let base = SimConfig::preset("nvm-ppo").unwrap();
        let c = base
            .with_overrides(&["controller.adr=false".into(), "device.mapping=page".into()])
            .unwrap();
        assert!(!c.controller.adr);
        assert_eq!(c.device.mapping, MappingScheme::Page);
        assert!(base.with_overrides(&["controller.nope=1".into()]).is_err());
        assert!(base
            .with_overrides(&["controller.scheduler=magic".into()])
            .is_err());
        // A value of the wrong type names its key.
        let e = base
            .with_overrides(&["cpu.cores=2".into(), "controller.adr=maybe".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("controller.adr=maybe"), "{e}");
    }

    /// `--set preset=...` is refused: it changed the `preset` the config reported (its JSON, a
    /// sweep's rows) and none of the settings, which stayed those of the file's preset.
    #[test]
    fn the_preset_cannot_be_overridden() {
        let c = SimConfig::from_toml_str("preset = \"optane\"\n", "p.toml").unwrap();
        for base in [c, SimConfig::preset("optane").unwrap()] {
            let e = base.with_overrides(&["preset=nvm-ppo".into()]).unwrap_err();
            assert!(e.0.contains("chosen with --config"), "{e}");
        }
    }

    /// Settings that only the run's plug-ins looked at are checked with the config: a sweep
    /// found them after its other jobs had run, and a run without RDMA clients took any
    /// `network.fault`.
    #[test]
    fn faults_and_the_log_region_are_checked_with_the_config() {
        let base = SimConfig::preset("optane").unwrap();
        for (set, key) in [
            ("network.fault=nope", "network.fault"),
            ("controller.logging_fault=nope", "controller.logging_fault"),
            ("device.technology=DRAM", "device.technology"),
            // (named before the PM-support engine it needs is asked for)
            ("controller.predictor=zzz", "is not a known predictor"),
            (
                "controller.logging_fault=no-adr-flush",
                "controller.logging_fault",
            ),
        ] {
            let e = base.with_overrides(&[set.into()]).unwrap_err();
            assert!(e.0.contains(key) && !e.0.contains('\n'), "{set}: {e}");
        }
        let e = base
            .with_overrides(&[
                "controller.logging=redu".into(),
                "system.pm_bytes=67108864".into(),
            ])
            .unwrap_err();
        assert!(e.0.contains("system.pm_bytes must be at least"), "{e}");
        for bad in ["controller.log_bytes=4096", "controller.log_bytes=100000"] {
            let e = base.with_overrides(&[bad.into()]).unwrap_err();
            assert!(e.0.contains("controller.log_bytes"), "{bad}: {e}");
        }
        let e = base
            .with_overrides(&[
                "controller.logging=redu".into(),
                "controller.log_bytes=1073741824".into(),
                "system.pm_bytes=1073741824".into(),
            ])
            .unwrap_err();
        assert!(e.0.contains("(controller.log_bytes)"), "{e}");
        base.with_overrides(&[
            "controller.logging=redu".into(),
            "controller.log_bytes=65536".into(),
            "system.pm_bytes=131072".into(),
        ])
        .unwrap();
        for ok in [
            vec!["network.fault=fence-skips-ack"],
            vec![
                "controller.logging=blom",
                "controller.logging_fault=no-adr-flush",
            ],
            vec!["controller.logging=redu", "system.pm_bytes=134217728"],
        ] {
            let sets: Vec<String> = ok.iter().map(|s| s.to_string()).collect();
            let c = base.with_overrides(&sets).unwrap();
            assert!(crate::plugins::Plugins::build(&c).is_ok(), "{ok:?}");
        }
    }

    /// An inline table changes the keys it names and keeps the section's others (it once
    /// replaced the whole section, the preset's timings becoming the built-in defaults).
    #[test]
    fn an_inline_table_override_changes_only_its_keys() {
        let base = SimConfig::preset("nvm-ppo").unwrap();
        let c = base
            .with_overrides(&["device.timing={tck_ns=1.0, twr_ns=150.0}".into()])
            .unwrap();
        assert_eq!(c.device.timing.tck_ns, 1.0);
        assert_eq!(c.device.timing.twr_ns, 150.0);
        assert_eq!(c.device.timing.tcl_ns, base.device.timing.tcl_ns);
        assert_eq!(c.device.timing.tburst_ns, base.device.timing.tburst_ns);
        assert!(base
            .with_overrides(&["device.timing={nope=1}".into()])
            .is_err());
    }

    /// A config file above 1 MiB is refused before it is read whole (`/dev/zero` exhausted
    /// the machine's memory).
    #[test]
    fn an_endless_config_file_is_refused() {
        let e = SimConfig::load(Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("larger than 1024 KiB"), "{e}");
    }

    #[test]
    fn an_unknown_bare_name_lists_the_presets() {
        let e = SimConfig::load(Path::new("nosuchpreset"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("neither a preset") && e.contains("nvm-ppo") && e.contains("pcm-pmweaver"),
            "{e}"
        );
    }
}
