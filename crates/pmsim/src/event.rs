//! The deterministic event queue at the heart of the engine.
//!
//! Events are ordered by time, then by the order in which they were scheduled (a sequence
//! number), so two runs with the same inputs process the same events in the same order.
//! Components that can answer at once (queue forwarding, ADR acknowledgements) do not use the
//! queue at all; only work that completes in the future is scheduled here.

use crate::time::Ps;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A min-queue of `(time, payload)` with FIFO tie-break among equal times.
#[derive(Clone, Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Entry<E>>>,
    next_seq: u64,
    /// Time of the earliest pending event (`Ps::MAX` when none), kept beside the heap because
    /// the engine asks for it after every event.
    head: Ps,
}

#[derive(Clone, Debug)]
struct Entry<E> {
    time: Ps,
    seq: u64,
    payload: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.time, self.seq) == (other.time, other.seq)
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.time, self.seq).cmp(&(other.time, other.seq))
    }
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            next_seq: 0,
            head: Ps::MAX,
        }
    }

    /// Schedules `payload` at `time`.
    pub fn push(&mut self, time: Ps, payload: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Reverse(Entry { time, seq, payload }));
        self.head = self.head.min(time);
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time(&self) -> Option<Ps> {
        (!self.heap.is_empty()).then_some(self.head)
    }

    /// Time of the earliest pending event, `Ps::MAX` when none is pending.
    #[inline]
    pub fn next_time(&self) -> Ps {
        self.head
    }

    /// Removes and returns the earliest event if it is due at or before `limit`.
    pub fn pop_until(&mut self, limit: Ps) -> Option<(Ps, E)> {
        if self.peek_time()? <= limit {
            self.pop()
        } else {
            None
        }
    }

    /// Removes and returns the earliest event.
    pub fn pop(&mut self) -> Option<(Ps, E)> {
        let Reverse(e) = self.heap.pop()?;
        self.head = self.heap.peek().map_or(Ps::MAX, |Reverse(n)| n.time);
        Some((e.time, e.payload))
    }

    /// Number of events ever scheduled.
    pub fn scheduled(&self) -> u64 {
        self.next_seq
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_time_then_insertion() {
        let mut q = EventQueue::new();
        q.push(20, "c");
        q.push(10, "a");
        q.push(20, "d");
        q.push(10, "b");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(10, "a"), (10, "b"), (20, "c"), (20, "d")]);
    }

    #[test]
    fn next_time_follows_the_earliest_event() {
        let mut q = EventQueue::new();
        assert_eq!((q.next_time(), q.peek_time()), (Ps::MAX, None));
        q.push(30, 'a');
        q.push(10, 'b');
        q.push(20, 'c');
        assert_eq!((q.next_time(), q.peek_time()), (10, Some(10)));
        q.pop();
        assert_eq!(q.next_time(), 20);
        q.push(5, 'd');
        assert_eq!(q.next_time(), 5);
        while q.pop().is_some() {}
        assert_eq!((q.next_time(), q.peek_time()), (Ps::MAX, None));
    }

    #[test]
    fn pop_until_respects_limit() {
        let mut q = EventQueue::new();
        q.push(5, 1);
        q.push(15, 2);
        assert_eq!(q.pop_until(10), Some((5, 1)));
        assert_eq!(q.pop_until(10), None);
        assert_eq!(q.len(), 1);
    }
}
