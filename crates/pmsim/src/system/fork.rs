//! Many crash points of one run without re-running the trace from its start for each.
//!
//! A run cut at `t` ([`System::crash_at`]) is the uncut run up to the first decision that
//! compares a time with the crash point and finds it later than `t` (an event that would start
//! past the cut, a fence completing past it, a memory event due after it); from there it stops.
//! The uncut run records the latest such time it compared so far (its horizon), so a snapshot
//! of it taken while the horizon was at or before `t` is, field for field, the state the cut
//! run has at the same step. [`System::run_to_crash_points`] runs the trace once, keeps a
//! snapshot every so many steps ([`SNAPSHOT_EVERY`] for `pmlab crash`), and finishes each cut run from the newest
//! snapshot whose horizon is at or before its point (from a copy of it, except the last such
//! point, which takes the snapshot itself). The results are identical to
//! `crash_at(t)` runs from the start (tested on every point of runs under each ordering model,
//! logging engine, PM-support engine, RDMA clients and tiny caches: `tests/fork.rs`).

use super::demux::Demux;
use super::{System, SystemError};
use crate::time::Ps;
use pmtrace::{TraceError, TraceEvent};

/// A run's position in its trace: the trace reader (with the events it read ahead) and the
/// time of the next memory event.
#[derive(Clone)]
pub(super) struct Cursor<I> {
    pub(super) dx: Demux<I>,
    pub(super) next_mem: Ps,
}

/// Steps of the uncut run between two snapshots, the spacing `pmlab crash` passes to
/// [`System::run_to_crash_points`]. A cut run starts from the newest snapshot
/// whose horizon allows it: usually under this many steps before its point, more where one
/// step moved the horizon past several points. (A snapshot copies the whole system, caches
/// with their bytes included; 2048 steps keep those copies a small share of a crash check's
/// time.)
pub const SNAPSHOT_EVERY: u32 = 2048;

impl System {
    /// Runs `events` once and, for each time in `points`, finishes the run cut at that time
    /// exactly as [`crash_at`](Self::crash_at) makes it, handing it to `visit` with the
    /// point's index in `points`; points are visited in time order (ties in index order).
    /// A snapshot is taken every `snapshot_every` steps (at least 1; [`SNAPSHOT_EVERY`]): the
    /// results are the same at any spacing, only the cost moves (tests use a few steps, so
    /// that cut runs start right before their points).
    /// The system must not have a crash point of its own. The first error (of the run, a cut
    /// run or `visit`) ends the call.
    pub fn run_to_crash_points<I, F>(
        mut self,
        events: I,
        points: &[Ps],
        snapshot_every: u32,
        mut visit: F,
    ) -> Result<(), SystemError>
    where
        I: IntoIterator<Item = Result<TraceEvent, TraceError>>,
        I::IntoIter: Clone,
        F: FnMut(usize, System) -> Result<(), SystemError>,
    {
        if self.stop_at.is_some() {
            return Err(SystemError::Internal(
                "run_to_crash_points on a system with a crash point of its own".into(),
            ));
        }
        let mut order: Vec<usize> = (0..points.len()).collect();
        order.sort_by_key(|&i| (points[i], i));
        let mut cur = self.start(events.into_iter());
        let mut snapshot = Some((self.clone(), cur.clone()));
        // Points whose cut runs start from `snapshot`, in time order: the snapshot's horizon
        // is at or before each of them, and later snapshots' horizons may not be.
        let mut waiting = Vec::new();
        let mut since = 0;
        let mut running = true;
        for i in order {
            let t = points[i];
            while running && self.horizon <= t {
                if since >= snapshot_every.max(1) {
                    finish_cuts(&mut waiting, snapshot.take(), points, &mut visit)?;
                    snapshot = Some((self.clone(), cur.clone()));
                    since = 0;
                }
                running = self.advance::<_, true>(&mut cur, &mut |_| {})?;
                since += 1;
            }
            waiting.push(i);
        }
        finish_cuts(&mut waiting, snapshot, points, &mut visit)
    }
}

/// Finishes the cut runs of the points in `waiting` (emptied) from `snapshot`: a copy for each
/// but the last, which takes the snapshot itself (no later point needs it).
fn finish_cuts<I, F>(
    waiting: &mut Vec<usize>,
    mut snapshot: Option<(System, Cursor<I>)>,
    points: &[Ps],
    visit: &mut F,
) -> Result<(), SystemError>
where
    I: Iterator<Item = Result<TraceEvent, TraceError>> + Clone,
    F: FnMut(usize, System) -> Result<(), SystemError>,
{
    let n = waiting.len();
    for (k, i) in waiting.drain(..).enumerate() {
        let (mut sys, mut c) = if k + 1 == n {
            snapshot.take().expect("a snapshot for every waiting point")
        } else {
            let (s, c) = snapshot
                .as_ref()
                .expect("a snapshot for every waiting point");
            (s.clone(), c.clone())
        };
        sys.stop_at = Some(points[i]);
        while sys.advance::<_, false>(&mut c, &mut |_| {})? {}
        sys.finish(&c, |_| {})?;
        visit(i, sys)?;
    }
    Ok(())
}
