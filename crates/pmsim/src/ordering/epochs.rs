//! Persist buffers split into epochs, with inter-thread dependencies: the state both buffered
//! models ([`super::epoch`], [`super::broi`]) keep.
//!
//! A *stream* is one persist buffer: a hardware thread's (local) or an RDMA channel's
//! (remote). Its persists are grouped into epochs by barriers (fences; for a remote stream,
//! the end of each `rdma_pwrite` verb, marked by the client's fence). Epoch `e` of a stream may release persists only once every
//! epoch before it is persisted (acknowledged) and every inter-thread dependency it carries is
//! persisted; the models decide *which* of the releasable persists go when.

use super::Persist;
use crate::fast_hash::FastMap;
use crate::time::Ps;
use std::collections::VecDeque;

/// Which persist buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct StreamId {
    /// An RDMA channel's (remote) rather than a hardware thread's.
    pub remote: bool,
    /// Thread or channel number.
    pub index: u16,
}

impl StreamId {
    /// Hardware thread `thread`'s persist buffer.
    pub fn local(thread: u16) -> StreamId {
        StreamId {
            remote: false,
            index: thread,
        }
    }

    /// RDMA channel `channel`'s persist buffer.
    pub fn remote(channel: u16) -> StreamId {
        StreamId {
            remote: true,
            index: channel,
        }
    }

    /// The stream a persist belongs to.
    pub fn of(p: &Persist) -> StreamId {
        StreamId {
            remote: p.remote,
            index: p.thread,
        }
    }
}

/// A persist waiting in its buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Held {
    pub p: Persist,
    /// When it arrived.
    pub since: Ps,
}

/// One epoch of a stream.
#[derive(Clone, Debug, Default)]
pub(crate) struct Epoch {
    /// Persists not released yet, in arrival order.
    pub held: Vec<Held>,
    /// Released and not yet acknowledged.
    pub inflight: u32,
    /// A barrier ended it: no more persists join it.
    pub closed: bool,
    /// Epochs of other streams (stream, epoch number) that must be persisted before this one
    /// releases anything.
    pub deps: Vec<(StreamId, u64)>,
}

impl Epoch {
    /// Persists of the epoch not yet acknowledged.
    pub fn remaining(&self) -> usize {
        self.held.len() + self.inflight as usize
    }
}

/// One persist buffer.
#[derive(Clone, Debug, Default)]
pub(crate) struct Stream {
    /// Epochs not yet persisted, oldest first.
    pub epochs: VecDeque<Epoch>,
    /// Number of the front epoch: every epoch before it is persisted.
    pub base: u64,
}

impl Stream {
    /// The open epoch new persists join (a fresh one after a barrier).
    fn open(&mut self) -> (&mut Epoch, u64) {
        if self.epochs.back().is_none_or(|e| e.closed) {
            self.epochs.push_back(Epoch::default());
        }
        let n = self.base + self.epochs.len() as u64 - 1;
        (self.epochs.back_mut().expect("just ensured"), n)
    }

    /// A barrier: the open epoch, if it holds anything, is closed.
    pub fn barrier(&mut self) {
        if let Some(e) = self.epochs.back_mut() {
            if !e.closed && (e.remaining() > 0) {
                e.closed = true;
            }
        }
    }

    /// The newest epoch with persists not yet acknowledged, closing it if it is open (what a
    /// dependency on "everything issued so far" waits for); `None` when all are persisted.
    fn newest_pending(&mut self) -> Option<u64> {
        let base = self.base;
        let i = self.epochs.iter().rposition(|e| e.remaining() > 0)?;
        self.epochs[i].closed = true;
        Some(base + i as u64)
    }

    /// Drops the persisted epochs at the front.
    fn retire(&mut self) {
        while self
            .epochs
            .front()
            .is_some_and(|e| e.closed && e.remaining() == 0)
        {
            self.epochs.pop_front();
            self.base += 1;
        }
    }

    /// True when epoch `n` and all before it are persisted.
    pub fn persisted(&self, n: u64) -> bool {
        n < self.base
    }
}

/// Every persist buffer, and where each released persist sits.
#[derive(Clone, Debug, Default)]
pub(crate) struct Streams {
    local: Vec<Stream>,
    remote: Vec<Stream>,
    /// Released persists: id → (stream, epoch number, bank).
    released: FastMap<u64, (StreamId, u64, u32)>,
    /// Persists held (not released) in all streams.
    held: usize,
    /// Inter-thread dependencies recorded.
    pub dependencies: u64,
}

impl Streams {
    /// The stream `id` (created empty on first use).
    pub fn get(&mut self, id: StreamId) -> &mut Stream {
        let v = if id.remote {
            &mut self.remote
        } else {
            &mut self.local
        };
        let i = id.index as usize;
        if v.len() <= i {
            v.resize_with(i + 1, Stream::default);
        }
        &mut v[i]
    }

    /// The stream `id`, if it exists.
    pub fn peek(&self, id: StreamId) -> Option<&Stream> {
        let v = if id.remote { &self.remote } else { &self.local };
        v.get(id.index as usize)
    }

    /// Every stream id in use: local streams first, then remote ones, each by index.
    pub fn ids(&self) -> impl Iterator<Item = StreamId> + '_ {
        let l = (0..self.local.len()).map(|i| StreamId::local(i as u16));
        let r = (0..self.remote.len()).map(|i| StreamId::remote(i as u16));
        l.chain(r)
    }

    /// The streams whose oldest unpersisted epoch may release persists now (its dependencies
    /// are persisted), as (stream, that epoch's number), in [`ids`](Self::ids) order.
    pub fn ready_fronts(&self) -> impl Iterator<Item = (StreamId, u64)> + '_ {
        self.ids().filter_map(|id| {
            let s = self.peek(id)?;
            let front = s.epochs.front()?;
            self.deps_met(front).then_some((id, s.base))
        })
    }

    /// Files persist `p` (arrived at `now`) in its stream's open epoch; returns the epoch's
    /// number.
    pub fn push(&mut self, p: Persist, now: Ps) -> u64 {
        let (e, n) = self.get(StreamId::of(&p)).open();
        e.held.push(Held { p, since: now });
        self.held += 1;
        n
    }

    /// Records that stream `to`'s persists from now on depend on everything stream `from` has
    /// issued so far.
    pub fn depend(&mut self, to: StreamId, from: StreamId) {
        let Some(target) = self.get(from).newest_pending() else {
            return;
        };
        self.dependencies += 1;
        let s = self.get(to);
        if !s
            .epochs
            .back()
            .is_some_and(|e| !e.closed && e.remaining() == 0)
        {
            // Persists issued before the access do not depend: a new epoch takes the later ones.
            s.barrier();
            if s.epochs.back().is_none_or(|e| e.closed) {
                s.epochs.push_back(Epoch::default());
            }
        }
        let e = s.epochs.back_mut().expect("an open epoch");
        if !e.deps.contains(&(from, target)) {
            e.deps.push((from, target));
        }
    }

    /// True when the dependencies of `epoch` are all persisted.
    pub fn deps_met(&self, epoch: &Epoch) -> bool {
        epoch
            .deps
            .iter()
            .all(|&(s, n)| self.peek(s).is_some_and(|st| st.persisted(n)))
    }

    /// Marks held persist `i` of epoch `n` of stream `id` released; returns it.
    pub fn release(&mut self, id: StreamId, n: u64, i: usize) -> Persist {
        let s = self.get(id);
        let e = &mut s.epochs[(n - s.base) as usize];
        let h = e.held.remove(i);
        e.inflight += 1;
        self.held -= 1;
        self.released.insert(h.p.id, (id, n, h.p.bank));
        h.p
    }

    /// Persist `id` was acknowledged: returns its stream (whose persisted epochs are retired)
    /// and bank, or `None` for an id never released here.
    pub fn acked(&mut self, id: u64) -> Option<(StreamId, u32)> {
        let (sid, n, bank) = self.released.remove(&id)?;
        let s = self.get(sid);
        let e = &mut s.epochs[(n - s.base) as usize];
        e.inflight -= 1;
        s.retire();
        Some((sid, bank))
    }

    /// Persists held (not released) in all streams.
    pub fn held(&self) -> usize {
        self.held
    }
}
