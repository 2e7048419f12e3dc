//! `pmsim`: a fast, functional, trace-driven simulator of persistent-memory systems.
//!
//! Time is integer picoseconds ([`time`]); one deterministic [`event::EventQueue`] drives the
//! components; the [`memsys::MemorySystem`] holds a controller ([`controller`]) and a device
//! model ([`device`]) per channel and the durable [`image::PmImage`]. Mechanisms are plug-ins
//! selected by name in the TOML [`config`]: request [`scheduler`]s, persist [`ordering`] models,
//! PM-support ([`bmo`]) engines, write predictors ([`predict`]) that precompute for them,
//! hardware [`logging`] engines and [`network`] persistence modes; [`plugins`] is the registry.
//! [`replay`] feeds a memory trace ([`pmtrace`]) straight to the memory system; [`system`]
//! runs a full-system trace on cores and caches in front of DRAM and PM.

pub mod bmo;
pub mod config;
pub mod controller;
mod dense;
pub mod device;
pub mod event;
pub mod fast_hash;
pub mod image;
pub mod line_map;
pub mod logging;
pub mod memsys;
pub mod network;
pub mod ordering;
pub mod persist_check;
pub mod plugins;
pub mod predict;
pub mod replay;
pub mod scheduler;
pub mod stats;
pub mod system;
pub mod time;

pub use config::{ConfigError, SimConfig};
pub use pmtrace;
pub use replay::{Replay, ReplayError, ReplaySummary};
pub use stats::{Histogram, Stats};
pub use system::{System, SystemError, SystemSummary, SNAPSHOT_EVERY};
