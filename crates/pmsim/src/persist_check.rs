//! An independent checker of persist order: reads the order in which persists became durable
//! and verifies the two rules of buffered strict persistency (PPO Sec. IV-A; Kolli et al.
//! MICRO'16) without looking at any ordering model's state:
//!
//! 1. **Intra-thread**: no persist of epoch `e` of a stream (a thread's persists between its
//!    fences, or an RDMA channel's `rdma_pwrite` data blocks) becomes durable before every
//!    persist of the stream's earlier epochs is durable.
//! 2. **Inter-thread**: when thread B accessed a line thread A wrote last (the directory's
//!    last writer), every persist B issued afterwards becomes durable after every persist A
//!    had issued before the access.
//!
//! The full system records the log ([`crate::System::record_persist_order`]): each persist as
//! it leaves the caches (stream, epoch from the thread's own fence count), each dependency as
//! the directory reports it, and each acknowledgement of the persistence domain, in order.
//! "Before" is the order of acknowledgements, not their time stamps, so two persists made
//! durable in the same picosecond are still ordered.
//!
//! A third rule holds under every ordering model and for every PM write, ordered or not (the
//! logging engines' in-place updates, evictions, RDMA writes), checked by
//! [`check_line_order`]:
//!
//! 3. **Per line**: the writes of one line become durable in the order they left the caches
//!    (each carries bytes of the line as they were when it left, so one that lands after a
//!    newer one can put older bytes back). The rule is stricter than the bytes need where two
//!    writes carry disjoint parts of a line (non-temporal stores, RDMA pieces): their
//!    reordering is flagged too. It orders writes by when they left, not by when their bytes
//!    were taken.

use crate::fast_hash::FastMap;
use crate::time::Ps;
use std::collections::BTreeMap;

/// A persist as it was issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IssuedPersist {
    /// Request id.
    pub id: u64,
    /// A remote (`RdmaPwrite`) persist: its stream is the issuing thread's remote stream.
    pub remote: bool,
    /// Thread that owns the stream.
    pub stream: u16,
    /// Epoch within the stream: the thread's fences before it (remote: the `rdma_pwrite` verbs
    /// of the channel that reached the server before it).
    pub epoch: u64,
}

/// An inter-thread dependency the directory reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dependency {
    /// The thread that accessed the line.
    pub thread: u16,
    /// The line's last writer.
    pub source: u16,
    /// Persists issued (in all streams) before the access: an index into
    /// [`PersistOrderLog::issued`].
    pub after: usize,
}

/// What the checker reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PersistOrderLog {
    /// Persists in the order they were issued.
    pub issued: Vec<IssuedPersist>,
    /// Acknowledgements (time, id) in the order the persistence domain made them.
    pub durable: Vec<(Ps, u64)>,
    /// Inter-thread dependencies, in the order they arose.
    pub dependencies: Vec<Dependency>,
    /// Every PM write as it left the caches, (request id, line number), in that order.
    pub line_writes: Vec<(u64, u64)>,
    /// Request ids of every PM write acknowledgement, in the order the persistence domain made
    /// them.
    pub line_acks: Vec<u64>,
}

/// What a passing check covered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckSummary {
    /// Persists checked.
    pub persists: usize,
    /// Epochs (over all streams) with at least one persist.
    pub epochs: usize,
    /// Dependencies checked.
    pub dependencies: usize,
}

/// Per stream: (issue index, durable position) of its persists in issue order.
type StreamPersists = Vec<(usize, usize)>;

/// Per stream: (epoch, durable position, id) of its persists.
type StreamEpochs = Vec<(u64, usize, u64)>;

/// Checks `log`. With `complete` (the run ended without a crash) every issued persist must
/// have become durable; otherwise persists never acknowledged count as not yet durable.
pub fn check(log: &PersistOrderLog, complete: bool) -> Result<CheckSummary, String> {
    let mut pos: FastMap<u64, usize> = FastMap::default();
    pos.reserve(log.durable.len());
    for (i, &(_, id)) in log.durable.iter().enumerate() {
        if pos.insert(id, i).is_some() {
            return Err(format!("persist {id:#x} acknowledged twice"));
        }
    }
    let never = usize::MAX;
    let mut streams: BTreeMap<(bool, u16), StreamPersists> = BTreeMap::new();
    let mut epochs = 0;
    // Intra-thread: per stream, the latest durable position among earlier epochs must precede
    // every persist of a later epoch.
    let mut by_stream: BTreeMap<(bool, u16), StreamEpochs> = BTreeMap::new();
    for (i, p) in log.issued.iter().enumerate() {
        let at = match pos.get(&p.id) {
            Some(&d) => d,
            None if complete => {
                return Err(format!(
                    "persist {:#x} (thread {}, epoch {}) never became durable",
                    p.id, p.stream, p.epoch
                ))
            }
            None => never,
        };
        by_stream
            .entry((p.remote, p.stream))
            .or_default()
            .push((p.epoch, at, p.id));
        streams
            .entry((p.remote, p.stream))
            .or_default()
            .push((i, at));
    }
    // Positions are distinct and `never` is the largest, so "durable before" is `<` and the
    // latest of a set is its maximum.
    let show = |at: usize| {
        if at == never {
            "never".to_string()
        } else {
            format!("#{at}")
        }
    };
    for (&(remote, stream), list) in &mut by_stream {
        list.sort_by_key(|&(e, at, _)| (e, at));
        let kind = if remote { "remote stream" } else { "thread" };
        // The latest durable persist of the epochs before the current one: (position, id, epoch).
        let mut earlier: Option<(usize, u64, u64)> = None;
        let mut current: Option<(usize, u64, u64)> = None;
        for &(epoch, at, id) in list.iter() {
            if current.is_some_and(|c| c.2 != epoch) {
                epochs += 1;
                earlier = earlier.max(current);
                current = None;
            }
            if let Some((before, bid, be)) = earlier {
                if at != never && at < before {
                    return Err(format!(
                        "{kind} {stream}: persist {id:#x} of epoch {epoch} became durable \
                         (ack {}) before persist {bid:#x} of epoch {be} (ack {})",
                        show(at),
                        show(before)
                    ));
                }
            }
            current = current.max(Some((at, id, epoch)));
        }
        epochs += current.is_some() as usize;
    }
    // Inter-thread: per local stream, prefix maxima and suffix minima of durable positions
    // in issue order.
    let mut prefix_max: FastMap<u16, Vec<(usize, usize)>> = FastMap::default();
    let mut suffix_min: FastMap<u16, Vec<(usize, usize)>> = FastMap::default();
    for (&(remote, s), list) in &streams {
        if remote {
            continue;
        }
        let mut acc = 0usize;
        let pm: Vec<(usize, usize)> = list
            .iter()
            .map(|&(i, at)| {
                acc = acc.max(at);
                (i, acc)
            })
            .collect();
        let mut sm = vec![(0usize, 0usize); list.len()];
        let mut m = never;
        for k in (0..list.len()).rev() {
            m = m.min(list[k].1);
            sm[k] = (list[k].0, m);
        }
        prefix_max.insert(s, pm);
        suffix_min.insert(s, sm);
    }
    for d in &log.dependencies {
        let (Some(src), Some(dst)) = (prefix_max.get(&d.source), suffix_min.get(&d.thread)) else {
            continue;
        };
        // The source's persists issued before the access: the last with issue index < after.
        let k = src.partition_point(|&(i, _)| i < d.after);
        if k == 0 {
            continue;
        }
        let src_latest = src[k - 1].1;
        // The dependent's persists issued after the access.
        let k2 = dst.partition_point(|&(i, _)| i < d.after);
        if k2 == dst.len() {
            continue;
        }
        let dst_earliest = dst[k2].1;
        if dst_earliest != never && dst_earliest < src_latest {
            return Err(format!(
                "thread {} accessed a line thread {} wrote after {} persists were issued: a later \
                 persist of thread {} became durable (ack {}) before thread {}'s earlier persists \
                 were (ack {})",
                d.thread,
                d.source,
                d.after,
                d.thread,
                show(dst_earliest),
                d.source,
                show(src_latest)
            ));
        }
    }
    Ok(CheckSummary {
        persists: log.issued.len(),
        epochs,
        dependencies: log.dependencies.len(),
    })
}

/// Checks rule 3: per line, the writes' acknowledgements come in the order the writes left
/// the caches. With `complete` every write must have been acknowledged; otherwise (a cut run)
/// a write never acknowledged may only be followed by writes of its line never acknowledged.
/// Returns the number of lines checked.
pub fn check_line_order(log: &PersistOrderLog, complete: bool) -> Result<usize, String> {
    let mut pos: FastMap<u64, usize> = FastMap::default();
    pos.reserve(log.line_acks.len());
    for (i, &id) in log.line_acks.iter().enumerate() {
        if pos.insert(id, i).is_some() {
            return Err(format!("write {id:#x} acknowledged twice"));
        }
    }
    // Per line: the latest acknowledgement so far (usize::MAX: a write never acknowledged)
    // and the write it belongs to.
    let mut last: FastMap<u64, (usize, u64)> = FastMap::default();
    for &(id, line) in &log.line_writes {
        let at = match pos.get(&id) {
            Some(&at) => at,
            None if complete => {
                return Err(format!(
                    "write {id:#x} of line {:#x} never became durable",
                    line << 6
                ))
            }
            None => usize::MAX,
        };
        if let Some(&(before, older)) = last.get(&line) {
            if at < before {
                let when = |a: usize| match a {
                    usize::MAX => "never".to_string(),
                    a => format!("ack #{a}"),
                };
                return Err(format!(
                    "line {:#x}: write {id:#x} became durable ({}) before the older write \
                     {older:#x} of the line ({}), which then put older bytes back",
                    line << 6,
                    when(at),
                    when(before)
                ));
            }
        }
        last.insert(line, (at, id));
    }
    Ok(last.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issued(id: u64, stream: u16, epoch: u64) -> IssuedPersist {
        IssuedPersist {
            id,
            remote: false,
            stream,
            epoch,
        }
    }

    fn log(issued: Vec<IssuedPersist>, order: &[u64], deps: Vec<Dependency>) -> PersistOrderLog {
        PersistOrderLog {
            issued,
            durable: order.iter().map(|&id| (0, id)).collect(),
            dependencies: deps,
            ..Default::default()
        }
    }

    #[test]
    fn a_line_written_twice_must_become_durable_in_that_order() {
        let writes = vec![(1, 7), (2, 8), (3, 7), (4, 7)];
        let log = |acks: &[u64]| PersistOrderLog {
            line_writes: writes.clone(),
            line_acks: acks.to_vec(),
            ..Default::default()
        };
        // Other lines interleave freely.
        assert_eq!(check_line_order(&log(&[1, 3, 2, 4]), true), Ok(2));
        let e = check_line_order(&log(&[3, 1, 2, 4]), true).unwrap_err();
        assert!(
            e.contains("line 0x1c0: write 0x3") && e.contains("0x1"),
            "{e}"
        );
        // A cut run: the newest write may be missing, not an older one under a newer.
        assert!(check_line_order(&log(&[1, 2, 3]), false).is_ok());
        assert!(check_line_order(&log(&[1, 2, 3]), true)
            .unwrap_err()
            .contains("write 0x4 of line 0x1c0 never became durable"));
        let e = check_line_order(&log(&[2, 3]), false).unwrap_err();
        assert!(
            e.contains("(ack #1) before the older write 0x1 of the line (never)"),
            "{e}"
        );
        assert!(check_line_order(&log(&[1, 1]), false)
            .unwrap_err()
            .contains("twice"));
    }

    #[test]
    fn epochs_in_order_pass_and_out_of_order_fail() {
        let ps = vec![
            issued(1, 0, 0),
            issued(2, 0, 0),
            issued(3, 0, 1),
            issued(4, 1, 0),
        ];
        // Within an epoch any order; other threads interleave freely.
        let ok = log(ps.clone(), &[4, 2, 1, 3], vec![]);
        let s = check(&ok, true).unwrap();
        assert_eq!((s.persists, s.epochs), (4, 3));
        let bad = log(ps.clone(), &[1, 3, 2, 4], vec![]);
        let e = check(&bad, true).unwrap_err();
        assert!(
            e.contains("persist 0x3 of epoch 1") && e.contains("0x2"),
            "{e}"
        );
        // A crash: epoch 1 durable while epoch 0 is not.
        let cut = log(ps.clone(), &[1, 3], vec![]);
        assert!(check(&cut, false).unwrap_err().contains("never"));
        // A crash with a clean prefix passes; the complete-run check wants everything.
        let prefix = log(ps, &[1, 2], vec![]);
        assert!(check(&prefix, false).is_ok());
        assert!(check(&prefix, true)
            .unwrap_err()
            .contains("never became durable"));
    }

    #[test]
    fn dependencies_order_threads() {
        // Thread 1 read thread 0's line after persist 1 was issued (after = 1).
        let ps = vec![issued(1, 0, 0), issued(2, 1, 0), issued(3, 0, 0)];
        let dep = Dependency {
            thread: 1,
            source: 0,
            after: 1,
        };
        // 2 after 1: fine (3, issued after the access, is not a predecessor).
        assert!(check(&log(ps.clone(), &[3, 1, 2], vec![dep]), true).is_ok());
        let e = check(&log(ps, &[2, 1, 3], vec![dep]), true).unwrap_err();
        assert!(e.contains("thread 1 accessed a line thread 0 wrote"), "{e}");
    }

    #[test]
    fn double_acknowledgement_is_an_error() {
        let l = log(vec![issued(1, 0, 0)], &[1, 1], vec![]);
        assert!(check(&l, true).unwrap_err().contains("twice"));
    }
}
