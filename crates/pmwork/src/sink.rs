//! Where generated events go.
//!
//! The heap collects events into batches of [`BATCH_EVENTS`] and hands each full batch to an
//! [`EventSink`] with one dynamic call, so a sink costs nothing per event beyond what it does
//! with the event. Sinks here: [`CountingSink`] (counts and discards: the speed baseline),
//! [`VecSink`] (keeps everything: tests), [`PmtSink`] (a `.pmt` file through
//! [`pmtrace::PmtWriter`]); the streaming adapter's channel sink lives in [`crate::stream`].

use pmtrace::{Op, PmtWriter, TraceEvent};
use std::any::Any;
use std::io::Write;

/// Events per batch handed to a sink.
pub const BATCH_EVENTS: usize = 4096;

/// A consumer of event batches.
pub trait EventSink: Send + 'static {
    /// Takes the events in `batch`, leaving it empty (a sink may swap in another buffer).
    /// An error stops generation; it is reported by the generator's result.
    fn consume(&mut self, batch: &mut Vec<TraceEvent>) -> Result<(), String>;

    /// Called once after the last batch.
    fn finish(&mut self) -> Result<(), String> {
        Ok(())
    }

    /// The sink as `Any`, so a caller can get its concrete sink back after generation.
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send>;
}

/// Counts events (in total and per operation) and discards them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CountingSink {
    /// Events consumed.
    pub events: u64,
    /// Events per [`Op`] code.
    pub per_op: [u64; Op::ALL.len()],
    /// Bytes carried as store values.
    pub value_bytes: u64,
}

impl EventSink for CountingSink {
    fn consume(&mut self, batch: &mut Vec<TraceEvent>) -> Result<(), String> {
        self.events += batch.len() as u64;
        for ev in batch.iter() {
            self.per_op[ev.op as usize] += 1;
            self.value_bytes += u64::from(ev.value_len);
        }
        batch.clear();
        Ok(())
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        self
    }
}

/// Drops every event without looking at it.
#[derive(Clone, Copy, Debug, Default)]
pub struct NullSink;

impl EventSink for NullSink {
    fn consume(&mut self, batch: &mut Vec<TraceEvent>) -> Result<(), String> {
        batch.clear();
        Ok(())
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        self
    }
}

/// Keeps every event in memory (for tests and small traces).
#[derive(Clone, Debug, Default)]
pub struct VecSink {
    /// The events, in emission order.
    pub events: Vec<TraceEvent>,
}

impl EventSink for VecSink {
    fn consume(&mut self, batch: &mut Vec<TraceEvent>) -> Result<(), String> {
        self.events.append(batch);
        Ok(())
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        self
    }
}

/// Writes events into a `.pmt` stream.
pub struct PmtSink<W: Write + Send + 'static> {
    writer: Option<PmtWriter<W>>,
    inner: Option<W>,
}

impl<W: Write + Send + 'static> PmtSink<W> {
    /// A sink writing through `writer` (whose header names the workload).
    pub fn new(writer: PmtWriter<W>) -> PmtSink<W> {
        PmtSink {
            writer: Some(writer),
            inner: None,
        }
    }

    /// Events written so far.
    pub fn events_written(&self) -> u64 {
        self.writer.as_ref().map_or(0, |w| w.events_written())
    }

    /// The underlying writer, once [`EventSink::finish`] has written the trailer.
    pub fn into_inner(self) -> Option<W> {
        self.inner
    }
}

impl<W: Write + Send + 'static> EventSink for PmtSink<W> {
    fn consume(&mut self, batch: &mut Vec<TraceEvent>) -> Result<(), String> {
        let w = self
            .writer
            .as_mut()
            .ok_or_else(|| "trace already finished".to_string())?;
        for ev in batch.iter() {
            w.write(ev).map_err(|e| e.to_string())?;
        }
        batch.clear();
        Ok(())
    }

    fn finish(&mut self) -> Result<(), String> {
        if let Some(w) = self.writer.take() {
            let mut inner = w.finish().map_err(|e| e.to_string())?;
            inner.flush().map_err(|e| e.to_string())?;
            self.inner = Some(inner);
        }
        Ok(())
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        self
    }
}
