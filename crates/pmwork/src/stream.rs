//! Streaming generation: a workload runs on a background thread and hands batches of events
//! through a bounded channel, so a consumer (the simulator, a trace writer) pulls events
//! without the trace ever existing in memory. At most [`CHANNEL_BATCHES`] batches of
//! [`crate::sink::BATCH_EVENTS`] events are in flight; spent batch buffers
//! travel back to the generator for reuse, so memory stays flat.
//!
//! ```
//! let w = pmwork::workload("btree").unwrap();
//! let p = pmwork::Params { ops: 50, threads: 1, seed: 1, remote_threads: 0, janus_hints: false, value_bytes: 8 };
//! let mut s = pmwork::EventStream::spawn(w, p, false);
//! let n = s.by_ref().count();
//! let done = s.finish().unwrap();
//! assert_eq!(n as u64, done.events);
//! ```

use std::any::Any;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::thread::JoinHandle;

use pmtrace::{TraceEvent, TraceHeader};

use crate::kernel::{GenOptions, Params, Workload};
use crate::oracle::CommitLog;
use crate::sink::{EventSink, BATCH_EVENTS};

/// Batches in flight between generator and consumer.
pub const CHANNEL_BATCHES: usize = 4;

/// A sink that sends full batches through a bounded channel.
pub struct ChannelSink {
    tx: SyncSender<Vec<TraceEvent>>,
    recycled: Receiver<Vec<TraceEvent>>,
}

impl EventSink for ChannelSink {
    fn consume(&mut self, batch: &mut Vec<TraceEvent>) -> Result<(), String> {
        let fresh = match self.recycled.try_recv() {
            Ok(mut v) => {
                v.clear();
                v
            }
            Err(TryRecvError::Empty) | Err(TryRecvError::Disconnected) => {
                Vec::with_capacity(BATCH_EVENTS)
            }
        };
        let full = std::mem::replace(batch, fresh);
        self.tx
            .send(full)
            .map_err(|_| "event stream consumer hung up".to_string())
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        self
    }
}

/// What a finished stream reports.
#[derive(Clone, Debug)]
pub struct StreamSummary {
    /// Events generated.
    pub events: u64,
    /// Events per thread.
    pub events_per_thread: Vec<u64>,
    /// Commit indices, if they were recorded.
    pub commits: Option<CommitLog>,
}

/// An iterator over a workload's events, generated on a background thread.
pub struct EventStream {
    header: TraceHeader,
    rx: Option<Receiver<Vec<TraceEvent>>>,
    recycle: Option<SyncSender<Vec<TraceEvent>>>,
    cur: Vec<TraceEvent>,
    pos: usize,
    handle: Option<Result<JoinHandle<Result<StreamSummary, String>>, String>>,
}

impl EventStream {
    /// Starts generating `w` with `p` on a background thread; `record_commits` keeps the
    /// commit log for [`EventStream::finish`].
    pub fn spawn(w: &'static dyn Workload, p: Params, record_commits: bool) -> EventStream {
        let header = w.header(&p);
        let (tx, rx) = sync_channel(CHANNEL_BATCHES);
        let (recycle, recycled) = sync_channel(CHANNEL_BATCHES + 1);
        let handle = std::thread::Builder::new()
            .name(format!("pmwork-{}", w.info().name))
            .spawn(move || {
                let sink = Box::new(ChannelSink { tx, recycled });
                let opts = GenOptions {
                    record_commits,
                    fault: None,
                };
                let g = w.generate(&p, sink, opts)?;
                Ok(StreamSummary {
                    events: g.events,
                    events_per_thread: g.events_per_thread,
                    commits: g.commits,
                })
            })
            // A thread that cannot start (the process's threads or memory exhausted, as by a
            // sweep with many workers): the stream is empty and `finish` says why; it panicked.
            .map_err(|e| format!("cannot start the generator thread: {e}"));
        EventStream {
            header,
            rx: Some(rx),
            recycle: Some(recycle),
            cur: Vec::new(),
            pos: 0,
            handle: Some(handle),
        }
    }

    /// The trace header describing the stream.
    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    /// Waits for the generator (dropping unread events) and returns its summary, or its
    /// error (a panic in the generator is reported as an error too).
    pub fn finish(mut self) -> Result<StreamSummary, String> {
        self.rx = None;
        self.recycle = None;
        let h = self.handle.take().expect("finish once")?;
        match h.join() {
            Ok(r) => r,
            Err(e) => Err(format!(
                "generator panicked: {}",
                e.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()
            )),
        }
    }

    #[cold]
    fn refill(&mut self) -> bool {
        let Some(rx) = &self.rx else { return false };
        match rx.recv() {
            Ok(batch) => {
                let spent = std::mem::replace(&mut self.cur, batch);
                if let Some(r) = &self.recycle {
                    let _ = r.try_send(spent);
                }
                self.pos = 0;
                true
            }
            Err(_) => {
                self.rx = None;
                false
            }
        }
    }
}

impl Iterator for EventStream {
    type Item = TraceEvent;

    #[inline]
    fn next(&mut self) -> Option<TraceEvent> {
        loop {
            if let Some(ev) = self.cur.get(self.pos) {
                self.pos += 1;
                return Some(*ev);
            }
            if !self.refill() {
                return None;
            }
        }
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        self.rx = None;
        self.recycle = None;
        if let Some(Ok(h)) = self.handle.take() {
            let _ = h.join();
        }
    }
}
