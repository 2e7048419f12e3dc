//! Recovery oracles: is a crash image a state the program may legally recover to?
//!
//! Given a crash image and, per thread, how many of its events had *completed* when power
//! failed (the index just past the last fence whose persists were acknowledged), the oracle
//!
//! 1. builds a heap from the image (DRAM is gone) and, for each initialised thread, runs the
//!    model's recovery (undo rollback, redo replay) and the structure's own recovery;
//! 2. reads the structure back, checking its invariants and the allocator's
//!    ([`crate::Kernel::extract`]);
//! 3. replays the thread's operation stream on the in-memory model and requires the recovered
//!    state to equal the state after the committed operations (those whose commit index is
//!    within the completed count), or that state plus the one operation in flight: each
//!    thread has at most one operation in flight, and it must be all-or-nothing.
//!
//! 4. requires recovery's own repairs to be durable: if it wrote PM lines without writing them
//!    back and fencing (under the reference persistence model, [`crate::persist_model`]), the
//!    images a power failure right after recovery may leave (the guaranteed lines only, every
//!    line written, two random mixes) are recovered once more and must give the same states (an undo rollback whose log retirement persisted before the rolled-back
//!    data would leave the torn transaction behind for good).
//!
//! A thread whose setup had not persisted (no root magic: even an all-zero image) must read
//! as uninitialised, which is what the model expects before setup commits.

use std::fmt::Debug;

use pmtrace::TraceEvent;

use crate::heap::PmHeap;
use crate::image::CrashImage;
use crate::kernel::{op_rng, Kernel, Params, Workload};
use crate::models::Tx;
use crate::persist_model::{CutPolicy, PersistModel};
use crate::sink::EventSink;

/// Feeds recovery's events to the reference persistence model.
struct PersistSink(PersistModel);

impl EventSink for PersistSink {
    fn consume(&mut self, batch: &mut Vec<TraceEvent>) -> Result<(), String> {
        for ev in batch.iter() {
            self.0.apply(ev);
        }
        batch.clear();
        Ok(())
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        self
    }
}

/// Thread `t`'s state after the model's and the structure's recovery (`None`: the thread was
/// never initialised).
fn recover_state<K: Kernel>(
    k: &K,
    p: &Params,
    tx: &mut Tx,
    t: u16,
) -> Result<Option<K::State>, String> {
    let name = k.info().name;
    if tx
        .recover_thread(t)
        .map_err(|e| format!("{name}: recovery failed: {e}"))?
    {
        k.recover(tx, p, t)
            .map_err(|e| format!("{name}: thread {t}: structure recovery failed: {e}"))?;
        Ok(Some(k.extract(tx, p, t).map_err(|e| {
            format!("{name}: thread {t}: after recovery: {e}")
        })?))
    } else {
        Ok(None)
    }
}

/// Per thread, the thread's event count at each commit point: entry 0 is the end of the
/// thread's setup (its root magic persisted), entry `k >= 1` the end of its operation `k-1`
/// (its final fence or `TxEnd`). A unit is committed once the thread has completed at least
/// that many events.
///
/// `durable` holds, per unit, the event count from which the unit survives any crash (the
/// fence that makes its commit record durable). It equals the end for every model except
/// redo, whose commit record is durable before the in-place apply and the log retirement.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommitLog {
    /// Commit indices per thread, increasing.
    pub per_thread: Vec<Vec<u64>>,
    /// Durability points per thread, one per unit, each at most the unit's end (empty: the
    /// ends).
    pub durable: Vec<Vec<u64>>,
}

impl CommitLog {
    /// Units (setup + operations) of thread `t` committed within `completed` events.
    pub fn committed(&self, t: u16, completed: u64) -> usize {
        self.per_thread[t as usize].partition_point(|&c| c <= completed)
    }

    /// Checks that the log and the completed-event counts `completed` are for `threads`
    /// threads (`name`: the workload, for the message).
    pub fn check_threads(
        &self,
        name: &str,
        threads: usize,
        completed: &[u64],
    ) -> Result<(), String> {
        if completed.len() != threads || self.per_thread.len() != threads {
            return Err(format!(
                "{name}: {threads} threads, but {} completed counts and {} commit lists",
                completed.len(),
                self.per_thread.len()
            ));
        }
        Ok(())
    }

    /// Units of thread `t` that must survive a crash after `completed` events: those whose
    /// commit record is durable by then.
    pub fn required(&self, t: u16, completed: u64) -> usize {
        match self.durable.get(t as usize) {
            Some(d) if !d.is_empty() => d.partition_point(|&c| c <= completed),
            _ => self.committed(t, completed),
        }
    }

    /// Bytes of memory the log holds (8 per commit point).
    pub fn bytes(&self) -> usize {
        self.per_thread
            .iter()
            .chain(self.durable.iter())
            .map(|v| v.len() * 8)
            .sum()
    }
}

/// A workload run recorded for crash testing: everything the oracle needs besides the image.
pub struct Recording<'w> {
    /// The workload.
    pub workload: &'w dyn Workload,
    /// Its knobs.
    pub params: Params,
    /// Its commit indices.
    pub commits: CommitLog,
}

impl Recording<'_> {
    /// Checks `image` given each thread's completed-event count (see [`crate::oracle`]).
    pub fn oracle(&self, image: &CrashImage, completed: &[u64]) -> Result<(), String> {
        self.workload
            .oracle(&self.params, &self.commits, image, completed)
    }
}

/// Where two values' debug renderings first differ, with some context.
pub fn debug_diff<T: Debug>(got: &T, want: &T) -> String {
    let a = format!("{got:?}");
    let b = format!("{want:?}");
    let at = a
        .bytes()
        .zip(b.bytes())
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let window = |s: &str| {
        let mut lo = at.saturating_sub(60);
        while !s.is_char_boundary(lo) {
            lo -= 1;
        }
        let mut hi = (at + 60).min(s.len());
        while !s.is_char_boundary(hi) {
            hi += 1;
        }
        s[lo..hi].to_string()
    };
    format!("recovered …{}… expected …{}…", window(&a), window(&b))
}

/// The oracle for kernel `k` (see the module documentation).
pub fn check<K: Kernel>(
    k: &K,
    p: &Params,
    commits: &CommitLog,
    image: &CrashImage,
    completed: &[u64],
) -> Result<(), String> {
    crate::kernel::check_params(k, p)?;
    let name = k.info().name;
    commits.check_threads(name, p.threads as usize, completed)?;
    let model = k.info().model;
    let sink = PersistSink(PersistModel::over_image(p.threads, image));
    let mut tx = Tx::over(
        model,
        PmHeap::from_image_into(p.threads, image, Box::new(sink)),
    );
    let mut recovered = Vec::with_capacity(p.threads as usize);
    for t in 0..p.threads {
        let units = commits.per_thread[t as usize].len();
        let n = commits.required(t, completed[t as usize]);
        let actual = recover_state(k, p, &mut tx, t)?;
        recovered.push(actual.clone());
        let (committed, mut in_flight) = expected(k, p, t, n, units);
        // The unit in flight may show only once one of its events has executed.
        let started_after = if n == 0 {
            0
        } else {
            commits.per_thread[t as usize][n - 1]
        };
        if completed[t as usize] <= started_after {
            in_flight = None;
        }
        if actual == committed {
            continue;
        }
        if let Some(next) = &in_flight {
            if &actual == next {
                continue;
            }
        }
        let ops_done = n.saturating_sub(1);
        return Err(format!(
            "{name}: thread {t}: after {} completed events ({ops_done} operations committed{}), \
             the recovered state is neither the committed state nor that plus the operation in \
             flight: {}",
            completed[t as usize],
            if n == 0 { ", setup not yet" } else { "" },
            debug_diff(&actual, &committed)
        ));
    }
    // Recovery's repairs must survive a power failure right after it: where it left lines
    // not guaranteed durable, recover again the images such a failure may leave: only the
    // guaranteed lines, every line written, and two random mixes (x86 may persist some
    // unfenced repairs, a log's retirement say, and not others).
    let persisted = tx
        .finish()?
        .into_any()
        .downcast::<PersistSink>()
        .expect("the recovery heap's sink")
        .0;
    if persisted.undecided_lines() == 0 {
        return Ok(());
    }
    let mut rng = crate::rng::Rng::new(p.seed ^ 0x7265_636f_7665_7279);
    let policies = [
        ("guaranteed", CutPolicy::Durable),
        ("latest", CutPolicy::Latest),
        (
            "random",
            CutPolicy::Random(crate::rng::Rng::new(rng.next_u64())),
        ),
        (
            "random",
            CutPolicy::Random(crate::rng::Rng::new(rng.next_u64())),
        ),
    ];
    for (which, mut policy) in policies {
        let again = persisted.image(&mut policy);
        let mut tx = Tx::from_image(model, p.threads, &again);
        for t in 0..p.threads {
            let state = recover_state(k, p, &mut tx, t).map_err(|e| {
                format!("{e} (recovering again after a power failure right after recovery)")
            })?;
            if state != recovered[t as usize] {
                return Err(format!(
                    "{name}: thread {t}: recovery's repairs are not durable: a power failure \
                     right after recovery (which left PM lines written but not written back \
                     and fenced; {which} image) recovers to a different state: {}",
                    debug_diff(&state, &recovered[t as usize])
                ));
            }
        }
    }
    Ok(())
}

/// The model state after `n` committed units, and after `n + 1` (if there is such a unit).
type Expected<S> = (Option<S>, Option<Option<S>>);

fn expected<K: Kernel>(k: &K, p: &Params, t: u16, n: usize, units: usize) -> Expected<K::State> {
    if n == 0 {
        let next = (units > 0).then(|| Some(k.initial(p, t)));
        return (None, next);
    }
    let mut s = k.initial(p, t);
    let mut rng = op_rng(p.seed, t);
    for i in 0..(n - 1) as u64 {
        let op = k.gen_op(p, t, i, &mut rng);
        k.apply(&mut s, p, t, &op);
    }
    let next = (n < units).then(|| {
        let op = k.gen_op(p, t, (n - 1) as u64, &mut rng);
        let mut s2 = s.clone();
        k.apply(&mut s2, p, t, &op);
        Some(s2)
    });
    (Some(s), next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_diff_points_at_the_first_difference() {
        let d = debug_diff(&vec![1, 2, 3], &vec![1, 2, 4]);
        assert!(d.contains("[1, 2, 3]") && d.contains("[1, 2, 4]"), "{d}");
    }

    /// A structure whose recovery repairs a value once (a "repaired" flag in the root line
    /// keeps it from repairing twice), with or without writing the repair back.
    struct LazyRepair {
        info: crate::kernel::WorkloadInfo,
        persist_repair: bool,
    }

    impl LazyRepair {
        fn workload(persist_repair: bool) -> crate::kernel::KernelWorkload<LazyRepair> {
            crate::kernel::KernelWorkload(LazyRepair {
                info: crate::kernel::WorkloadInfo {
                    name: "lazy-repair",
                    model: crate::models::Model::Barrier,
                    suite: crate::kernel::Suite::Check,
                    default_ops: 4,
                    default_threads: 1,
                    size: "one word",
                    source: "test",
                    description: "recovery repairs a word once",
                },
                persist_repair,
            })
        }
    }

    impl Kernel for LazyRepair {
        type Op = ();
        type State = u64;

        fn info(&self) -> &crate::kernel::WorkloadInfo {
            &self.info
        }

        fn gen_op(&self, _p: &Params, _t: u16, _i: u64, _rng: &mut crate::rng::Rng) {}

        fn setup(&self, tx: &mut Tx, _p: &Params, t: u16) {
            let b = tx.alloc(64);
            tx.write(b, 5);
            tx.write(crate::layout::root_word(t, 1), b);
        }

        fn exec(&self, tx: &mut Tx, _p: &Params, _t: u16, _op: &()) {
            tx.compute(1);
        }

        fn initial(&self, _p: &Params, _t: u16) -> u64 {
            7
        }

        fn apply(&self, _s: &mut u64, _p: &Params, _t: u16, _op: &()) {}

        fn recover(&self, tx: &mut Tx, _p: &Params, t: u16) -> Result<(), String> {
            let flag = crate::layout::root_word(t, 2);
            if tx.read(flag) == 0 {
                let b = tx.read(crate::layout::root_word(t, 1));
                tx.write(b, 7);
                if self.persist_repair {
                    tx.persist(b, 8);
                }
                tx.write(flag, 1);
                tx.persist(flag, 8);
            }
            Ok(())
        }

        fn extract(&self, tx: &mut Tx, _p: &Params, t: u16) -> Result<u64, String> {
            let b = tx.read(crate::layout::root_word(t, 1));
            Ok(tx.read(b))
        }
    }

    #[test]
    fn a_repair_that_recovery_does_not_write_back_is_rejected() {
        let p = Params {
            ops: 4,
            threads: 1,
            seed: 1,
            remote_threads: 0,
            janus_hints: false,
            value_bytes: 8,
        };
        let cfg = crate::crashtest::SweepConfig::default();
        let r = crate::crashtest::sweep(&LazyRepair::workload(false), &p, &cfg).unwrap();
        let f = r
            .failures
            .first()
            .expect("an undurable repair was accepted");
        assert!(
            f.message.contains("repairs are not durable"),
            "{}",
            f.message
        );
        let r = crate::crashtest::sweep(&LazyRepair::workload(true), &p, &cfg).unwrap();
        assert!(r.failures.is_empty(), "{:?}", r.failures.first());
    }

    #[test]
    fn committed_counts_units_within_the_completed_events() {
        let c = CommitLog {
            per_thread: vec![vec![10, 20, 35]],
            durable: Vec::new(),
        };
        assert_eq!(c.committed(0, 9), 0);
        assert_eq!(c.committed(0, 10), 1);
        assert_eq!(c.committed(0, 34), 2);
        assert_eq!(c.committed(0, 1000), 3);
    }
}
