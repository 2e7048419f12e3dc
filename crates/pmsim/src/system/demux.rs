//! Splits one interleaved trace stream into per-thread queues, reading ahead only as far as the
//! scheduler needs, with a bound so memory stays flat whatever the interleaving.

use pmtrace::{Op, TraceError, TraceEvent};
use std::collections::VecDeque;

/// Most events held in the per-thread queues at once.
pub const READ_AHEAD_CAP: usize = 1 << 16;

/// The events an `await` of thread `t` names must precede it in the trace: the file is one run's
/// interleaving, and reading ahead to find them could hold any number of other events (an edge
/// that cannot hold, or a cycle of them, would never be found). `event` is the await's position
/// in the trace (from 1), `before` the events of thread `src` read so far (the await itself
/// counted, where `src` is its own thread).
pub(crate) fn check_await_order(
    event: u64,
    t: usize,
    src: u16,
    count: u64,
    before: u64,
) -> Result<(), String> {
    if before < count {
        return Err(format!(
            "event {event}: thread {t} awaits event {count} of thread {src}, but only {before} \
             of thread {src}'s events come before it in the trace (an await must follow the \
             events it awaits)"
        ));
    }
    Ok(())
}

/// Checks the awaits of an event stream read in order (`check_await_order`): the full-system
/// model's reader and `pmlab trace import` apply the same rule.
#[derive(Clone, Default)]
pub struct AwaitOrder {
    read: u64,
    /// Events read per thread: an `await` must come after the events it awaits.
    read_of: Vec<u64>,
}

impl AwaitOrder {
    /// Events taken so far.
    pub fn events(&self) -> u64 {
        self.read
    }

    /// Takes the next event of the stream; an error when it awaits events not read yet.
    #[inline]
    pub fn take(&mut self, ev: &TraceEvent) -> Result<(), String> {
        self.read += 1;
        let t = ev.thread as usize;
        if t >= self.read_of.len() {
            self.read_of.resize(t + 1, 0);
        }
        self.read_of[t] += 1;
        if ev.op == Op::Await {
            let (src, count) = ev.awaited().expect("an await");
            let before = self.read_of.get(src as usize).copied().unwrap_or(0);
            check_await_order(self.read, t, src, count, before)?;
        }
        Ok(())
    }
}

/// Per-thread view of an interleaved event stream.
#[derive(Clone)]
pub struct Demux<I> {
    src: I,
    queues: Vec<VecDeque<TraceEvent>>,
    buffered: usize,
    eof: bool,
    max_threads: usize,
    order: AwaitOrder,
    /// Bytes no event may touch, `[lo, hi)`, and what they are (for the error).
    reserved: Option<(u64, u64, String)>,
}

/// Whether a thread has an event to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Its next event is at the front of its queue.
    Ready,
    /// Not known yet: the read-ahead bound was reached before the thread's next event.
    Unknown,
    /// The trace ended and the thread has nothing left.
    Finished,
}

impl<I> Demux<I>
where
    I: Iterator<Item = Result<TraceEvent, TraceError>>,
{
    /// A demultiplexer over `src` accepting threads `0..max_threads`.
    pub fn new(src: I, max_threads: usize) -> Self {
        Demux {
            src,
            queues: Vec::new(),
            buffered: 0,
            eof: false,
            max_threads,
            order: AwaitOrder::default(),
            reserved: None,
        }
    }

    /// Refuses events that touch bytes `[lo, hi)`, which are `what` (named in the error).
    pub fn reserve(&mut self, lo: u64, hi: u64, what: String) {
        self.reserved = Some((lo, hi, what));
    }

    /// Threads seen so far.
    pub fn threads(&self) -> usize {
        self.queues.len()
    }

    /// True once the whole trace was read.
    pub fn eof(&self) -> bool {
        self.eof
    }

    /// Reads one event into its thread's queue; false at the end of the trace.
    pub fn pull(&mut self) -> Result<bool, String> {
        if self.eof {
            return Ok(false);
        }
        match self.src.next() {
            None => {
                self.eof = true;
                Ok(false)
            }
            Some(Err(e)) => Err(e.to_string()),
            Some(Ok(ev)) => {
                let t = ev.thread as usize;
                if t >= self.max_threads {
                    return Err(format!(
                        "event {}: thread {t}, but the config has {} hardware threads \
                         (cpu.cores x cpu.threads_per_core)",
                        self.order.events() + 1,
                        self.max_threads
                    ));
                }
                if let Some((lo, hi, what)) = &self.reserved {
                    let end = ev.addr.saturating_add(u64::from(ev.size.max(1)));
                    if ev.op.has_address() && ev.addr < *hi && end > *lo {
                        return Err(format!(
                            "event {}: thread {t} accesses {:#x}, inside {what}",
                            self.order.events() + 1,
                            ev.addr
                        ));
                    }
                }
                if t >= self.queues.len() {
                    self.queues.resize_with(t + 1, VecDeque::new);
                }
                self.order.take(&ev)?;
                self.queues[t].push_back(ev);
                self.buffered += 1;
                Ok(true)
            }
        }
    }

    /// Makes thread `t`'s next event available if the read-ahead bound allows.
    pub fn next_for(&mut self, t: usize) -> Result<Next, String> {
        loop {
            if self.queues.get(t).is_some_and(|q| !q.is_empty()) {
                return Ok(Next::Ready);
            }
            if self.eof {
                return Ok(Next::Finished);
            }
            if self.buffered >= READ_AHEAD_CAP {
                return Ok(Next::Unknown);
            }
            self.pull()?;
        }
    }

    /// Thread `t`'s next event (after [`next_for`](Self::next_for) said `Ready`).
    #[inline]
    pub fn peek(&self, t: usize) -> &TraceEvent {
        self.queues[t].front().expect("next_for said Ready")
    }

    /// Consumes thread `t`'s next event.
    #[inline]
    pub fn pop(&mut self, t: usize) {
        self.queues[t].pop_front();
        self.buffered -= 1;
    }

    /// Whether thread `t` has an event queued now (without reading).
    pub fn has_queued(&self, t: usize) -> bool {
        self.queues.get(t).is_some_and(|q| !q.is_empty())
    }
}
