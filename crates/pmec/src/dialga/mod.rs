//! DIALGA: adaptive hardware/software prefetch scheduling for erasure coding on slow memory
//! (Xu et al., ICPP'25, §4), above the kernels and never mixed into them.
//!
//! * [`prefetch`] — the operator: prefetch-address arrays, XPLine-aware distances, shuffle
//!   mapping, 256 B bodies, and the executor that runs kernels under a [`Schedule`].
//! * [`tuner`] — hill climbing of the prefetch distance.
//! * [`coordinator`] — chooses the strategy from the I/O pattern and sampled latency.
//! * [`counters`] — hardware counters through `perf_event_open`, where the machine allows.

pub mod coordinator;
pub mod counters;
pub mod prefetch;
pub mod tuner;

pub use coordinator::{Coordinator, CoordinatorConfig, CoordinatorStats, Strategy};
pub use prefetch::{Schedule, StripeSet};
pub use tuner::Tuner;
