//! Reading a trace on a second core: [`Pipelined`] runs any event iterator (a
//! [`TraceSource`](crate::TraceSource), say) on a background thread and hands its events over in
//! batches, so parsing and decoding overlap with whatever consumes them (a simulator).

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use crate::{ErrorKind, TraceError, TraceEvent};

/// Events per batch handed between the threads.
const BATCH: usize = 4096;
/// Batches in flight: the reader runs at most this far ahead.
const IN_FLIGHT: usize = 4;

/// An event iterator read on a background thread. Events arrive in order; an error ends the
/// stream after the events before it. Dropping it stops the reader.
pub struct Pipelined {
    rx: Receiver<(Vec<TraceEvent>, Option<TraceError>)>,
    recycle: SyncSender<Vec<TraceEvent>>,
    batch: Vec<TraceEvent>,
    pos: usize,
    error: Option<TraceError>,
    done: bool,
    reader: Option<JoinHandle<()>>,
}

impl Pipelined {
    /// Starts reading `source` on a thread of its own.
    pub fn new<I>(source: I) -> Pipelined
    where
        I: Iterator<Item = Result<TraceEvent, TraceError>> + Send + 'static,
    {
        let (tx, rx) = sync_channel::<(Vec<TraceEvent>, Option<TraceError>)>(IN_FLIGHT);
        let (recycle, free) = sync_channel::<Vec<TraceEvent>>(IN_FLIGHT + 2);
        let reader = std::thread::Builder::new()
            .name("pmtrace-reader".into())
            .spawn(move || {
                let mut source = source;
                loop {
                    let mut batch = free
                        .try_recv()
                        .unwrap_or_else(|_| Vec::with_capacity(BATCH));
                    batch.clear();
                    let mut error = None;
                    for item in source.by_ref() {
                        match item {
                            Ok(ev) => {
                                batch.push(ev);
                                if batch.len() == BATCH {
                                    break;
                                }
                            }
                            Err(e) => {
                                error = Some(e);
                                break;
                            }
                        }
                    }
                    let last = error.is_some() || batch.len() < BATCH;
                    if tx.send((batch, error)).is_err() || last {
                        return; // consumer gone, or the stream ended
                    }
                }
            });
        // A thread that cannot start (the process's threads or memory exhausted, as by a sweep
        // with many workers) ends the stream with an error; it panicked.
        let (reader, error) = match reader {
            Ok(r) => (Some(r), None),
            Err(e) => (
                None,
                Some(TraceError::from(ErrorKind::Io {
                    context: "starting the trace reader thread".into(),
                    source: e,
                })),
            ),
        };
        Pipelined {
            rx,
            recycle,
            batch: Vec::new(),
            pos: 0,
            done: error.is_some(),
            error,
            reader,
        }
    }

    /// Takes the next batch; false when the stream has ended.
    #[cold]
    fn refill(&mut self) -> bool {
        if self.done {
            return false;
        }
        let old = std::mem::take(&mut self.batch);
        if old.capacity() > 0 {
            let _ = self.recycle.try_send(old);
        }
        match self.rx.recv() {
            Ok((batch, error)) => {
                self.done = error.is_some() || batch.len() < BATCH;
                self.error = error;
                self.batch = batch;
                self.pos = 0;
                true
            }
            Err(_) => {
                // The reader ends by sending its last batch: hanging up without one means it
                // panicked, and the events so far are not the whole trace.
                self.done = true;
                let why = match self.reader.take().map(JoinHandle::join) {
                    Some(Err(panic)) => panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "no message".into()),
                    _ => "no message".into(),
                };
                self.error = Some(TraceError::from(ErrorKind::Io {
                    context: "reading the trace on the reader thread".into(),
                    source: std::io::Error::other(format!(
                        "the reader stopped before the end of the trace ({why})"
                    )),
                }));
                true
            }
        }
    }
}

impl Iterator for Pipelined {
    type Item = Result<TraceEvent, TraceError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(ev) = self.batch.get(self.pos) {
                self.pos += 1;
                return Some(Ok(*ev));
            }
            if let Some(e) = self.error.take() {
                return Some(Err(e));
            }
            if !self.refill() {
                return None;
            }
        }
    }
}

impl Drop for Pipelined {
    fn drop(&mut self) {
        // Hang up first so a reader blocked on a full channel returns, then wait for it.
        let (_tx, rx) = sync_channel(0);
        drop(std::mem::replace(&mut self.rx, rx));
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Location, Op};

    fn events(n: u64) -> Vec<TraceEvent> {
        (0..n)
            .map(|i| TraceEvent::access(Op::Load, 0, 0, i * 64, 8, 1))
            .collect()
    }

    #[test]
    fn a_reader_that_panics_ends_the_stream_with_an_error() {
        // Found by an audit: the events before the panic came back as a whole, shorter trace.
        let items = events(5000).into_iter().enumerate().map(|(i, ev)| {
            assert!(i < 4500, "parser bug");
            Ok(ev)
        });
        let got: Vec<Result<TraceEvent, TraceError>> = Pipelined::new(items).collect();
        assert_eq!(got.len(), BATCH + 1);
        let e = got.last().unwrap().as_ref().unwrap_err().to_string();
        assert!(
            e.contains("stopped before the end") && e.contains("parser bug"),
            "{e}"
        );
    }

    #[test]
    fn hands_over_every_event_in_order() {
        for n in [0, 1, BATCH as u64 - 1, BATCH as u64, 3 * BATCH as u64 + 17] {
            let want = events(n);
            let got: Vec<TraceEvent> = Pipelined::new(want.clone().into_iter().map(Ok))
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(got, want, "{n} events");
        }
    }

    #[test]
    fn an_error_ends_the_stream_after_the_events_before_it() {
        let mut items: Vec<Result<TraceEvent, TraceError>> =
            events(5000).into_iter().map(Ok).collect();
        items.push(Err(TraceError::new(
            ErrorKind::Syntax {
                reason: "bad".into(),
            },
            Location::Unknown,
        )));
        items.extend(events(10).into_iter().map(Ok));
        let got: Vec<_> = Pipelined::new(items.into_iter()).collect();
        assert_eq!(got.len(), 5001);
        assert!(got[..5000].iter().all(|r| r.is_ok()));
        assert!(got[5000].is_err());
    }

    #[test]
    fn dropping_it_early_stops_the_reader() {
        let mut p =
            Pipelined::new((0..).map(|i| Ok(TraceEvent::access(Op::Load, 0, 0, i * 64, 8, 1))));
        assert!(p.next().is_some());
        drop(p); // must not hang on the endless source
    }
}
