//! The loop: each step takes the earliest head, by `(time, seq)`, of the event sources (the
//! timer queue, the event heap, the server's queue, both links of the dumbbell, the extra
//! access links, the mesh network), advances the clock and hands the event to the protocol;
//! and the bookkeeping that follows the links' queues (loading client state ahead, counting
//! each exchange record's packets in flight).

use super::*;
use crate::engine::workload::ExchangeObserver;

/// No event: a key ([`ev_key`]) later than any event's.
pub(super) const NO_HEAD: u128 = u128::MAX;

/// An event's `(time, seq)` as one key with the same order.
#[inline(always)]
pub(super) fn ev_key(time: Nanos, seq: u64) -> u128 {
    (time as u128) << 64 | seq as u128
}

/// The key of the packet `link` delivers next, [`NO_HEAD`] if none.
#[inline(always)]
pub(super) fn head_of<B>(link: &Link<Packet<B>>) -> u128 {
    link.peek().map_or(NO_HEAD, |(t, p)| ev_key(t, p.seq))
}

/// How many packets of a link ahead the engine loads a client's state (the client of the
/// packet that many places behind the one delivered, read from the link's FIFO).
pub(super) const AHEAD: usize = 4;

/// How many packets of a link ahead the engine loads the FIFO's own entry: with a long queue
/// (a 1 410 000-byte buffer holds some ten thousand packets) an entry was written long before
/// it is delivered and has left the caches.
pub(super) const FIFO_AHEAD: usize = 24;

/// The population from which the engine loads client state ahead ([`Sim::prefetch`]).
pub(super) const PREFETCH_CLIENTS: usize = 4096;

/// The earlier exchanges' records (about 10 bytes each) the engine keeps before it starts
/// counting packets in flight and folding records ([`Sim::counting`]). Folding never changes
/// a result (a folded record's unnecessary retransmissions are summed as the report would
/// sum them), so the switch is only about cost: below this, every record is kept to the end.
pub(super) const FOLD_AFTER: u64 = 1 << 16;

/// Events between two calls of the progress callback (and two checks of the sequence
/// numbers against [`timer_queue::SEQ_LIMIT`]).
pub(super) const PROGRESS_EVENTS: u64 = 1 << 20;

/// Sequence numbers kept in reserve below [`timer_queue::SEQ_LIMIT`]: the run stops with an error
/// once it has used more than the rest, checked every [`PROGRESS_EVENTS`] events (an event
/// uses a few sequence numbers; 2^32 between two checks is far beyond any burst).
const SEQ_MARGIN: u64 = 1 << 32;

/// Count a packet held by a link or the server's queue (its [`Packet::key`]) in its exchange
/// record ([`metrics::ExRec::held`]).
#[inline(always)]
fn count_held(clients: &mut [Client], (c, x, copy): (u32, u32, u16)) {
    if copy == NONE {
        return; // not a request copy or a response to one: never changes a record
    }
    if let Some(cl) = clients.get_mut(c as usize) {
        if let Some(r) = cl.recs.get_mut(x as usize) {
            r.held = r.held.saturating_add(1);
        }
    }
}

impl<'t, M: Protocol<W>, W: Workload> Sim<'t, M, W> {
    /// Start loading client `c`'s state (engine, timer, protocol) into the cache: a hint, for a
    /// client whose event comes soon.
    #[inline(always)]
    fn prefetch_client(&self, c: usize) {
        if let Some(cl) = self.clients.get(c) {
            cache_hints::prefetch(cl);
        }
        self.timers.prefetch(c as u32);
        self.m.prefetch(c);
    }

    /// Packet `p` (of client `c`, exchange `x`, copy `copy`) was handed to a link or the
    /// server's queue and is held: its exchange record counts it.
    #[inline(always)]
    pub(super) fn held(&mut self, c: u32, x: u32, copy: u16) {
        count_held(&mut self.clients, (c, x, copy));
    }

    /// Start counting packets in flight ([`Sim::counting`]): every packet the links and the
    /// server's queue hold now is counted in its record, then each client's leading records
    /// that no packet can reach any more are folded away, which leaves the records as they
    /// would be had the engine counted from the start.
    #[cold]
    #[inline(never)]
    pub(super) fn start_counting(&mut self) {
        self.counting = true;
        let held = self.up.held().chain(self.down.held()).chain(self.server_q.iter().map(|e| &e.1));
        for p in held {
            count_held(&mut self.clients, p.key());
        }
        let obs = &mut self.obs;
        for (c, (cl, cold)) in self.clients.iter_mut().zip(&mut self.cold).enumerate() {
            cold.add_unnecessary(cl.recs.fold_front(self.unnecessary_def, |r| obs.record_final(c, r)));
            cl.recs.release_if_folded();
        }
    }

    /// A held packet (its [`Packet::key`]) left its link or queue and the protocol handled
    /// it. When it was the last of an earlier exchange, the leading records no packet can
    /// change are folded away.
    #[inline(always)]
    pub(super) fn landed(&mut self, (client, exchange, copy): (u32, u32, u16)) {
        if copy == NONE {
            return;
        }
        let c = client as usize;
        let Some(cl) = self.clients.get_mut(c) else { return };
        let x = exchange as usize;
        let Some(r) = cl.recs.get_mut(x) else { return };
        if r.held == u16::MAX {
            return; // too many to count: kept to the end
        }
        r.held -= 1;
        if r.held == 0 && x + 1 < cl.recs.len() {
            let obs = &mut self.obs;
            let folded = cl.recs.fold_front(self.unnecessary_def, |r| obs.record_final(c, r));
            if folded > 0 {
                self.cold[c].add_unnecessary(folded);
            }
        }
    }

    /// Run to completion (every flow finished and every packet delivered or dropped) or to
    /// the time bound. Returns whether the bound was hit.
    pub(in crate::engine) fn run(&mut self) -> bool {
        #[derive(Clone, Copy)]
        enum Src {
            Heap,
            Timer,
            Server,
            Up,
            Down,
            ExtraUp(usize),
            ExtraDown(usize),
            Mesh,
        }
        loop {
            // The earliest head by `(time, seq)` as one key ([`ev_key`]; every `seq` comes
            // from the engine's one counter, so no two heads tie).
            let (mut key, mut src) = (self.timers.peek().map_or(NO_HEAD, |e| ev_key(e.time, e.seq())), Src::Timer);
            if self.prefetch {
                // The hot and protocol records of the clients whose timers come next (their cold
                // record is needed only when the exchange gives up: loading it too slowed the
                // 100 000-client runs).
                let (clients, cold, m) = (&self.clients, &self.cold, &self.m);
                self.timers.step(|c| {
                    if let Some(cl) = clients.get(c as usize) {
                        cache_hints::prefetch(cl);
                    }
                    // A timer expected to give up also ends the exchange and starts the next:
                    // the first line of the cold record.
                    if m.prefetch_timer(c as usize) {
                        if let Some(k) = cold.get(c as usize) {
                            cache_hints::prefetch_bytes(k, 64);
                        }
                    }
                });
            }
            if let Some(e) = self.heap.peek() {
                let k = ev_key(e.time, e.seq);
                if k < key {
                    (key, src) = (k, Src::Heap);
                }
            }
            if let Some((t, p, _, _)) = self.server_q.front() {
                let k = ev_key(*t, p.seq);
                if k < key {
                    (key, src) = (k, Src::Server);
                }
            }
            debug_assert_eq!(self.up_head, head_of(&self.up));
            debug_assert_eq!(self.down_head, head_of(&self.down));
            if self.up_head < key {
                (key, src) = (self.up_head, Src::Up);
            }
            if self.down_head < key {
                (key, src) = (self.down_head, Src::Down);
            }
            if self.other_sources {
                for (i, (u, d)) in self.extra.iter().enumerate() {
                    let k = head_of(u);
                    if k < key {
                        (key, src) = (k, Src::ExtraUp(i));
                    }
                    let k = head_of(d);
                    if k < key {
                        (key, src) = (k, Src::ExtraDown(i));
                    }
                }
                if let Some((t, s)) = self.mesh.as_ref().and_then(|m| m.peek()) {
                    let k = ev_key(t, s);
                    if k < key {
                        (key, src) = (k, Src::Mesh);
                    }
                }
            }
            if key == NO_HEAD {
                return false;
            }
            let t = (key >> 64) as Nanos;
            if t > self.bound {
                self.now = self.bound;
                return true;
            }
            self.now = t;
            self.last_event = t;
            self.events += 1;
            if self.events > self.max_events {
                return false;
            }
            if self.events % PROGRESS_EVENTS == 0 {
                if self.seq >= timer_queue::SEQ_LIMIT - SEQ_MARGIN {
                    self.seq_exhausted = true;
                    return false;
                }
                if let Some(p) = self.progress.as_mut() {
                    let (flows, finished) = (self.clients.len(), self.done);
                    p(&crate::Progress { events: self.events, sim_time_s: t as f64 / 1e9, finished, flows });
                }
            }
            match src {
                Src::Heap => {
                    let e = self.heap.pop().expect("peeked");
                    match e.kind {
                        EvKind::FlowStart(c) => M::flow_start(self, c as usize),
                        EvKind::Call(f, arg) => f(self, arg),
                    }
                }
                Src::Timer => {
                    let slot = self.timers.peek().expect("peeked").client();
                    M::timer(self, slot as usize);
                }
                Src::Server => {
                    let (_, p, sid, send) = self.server_q.pop_front().expect("peeked");
                    let key = p.key();
                    // Counted when held iff counting already (the protocol may start it).
                    let counted = self.counting;
                    send(self, p, sid);
                    if counted {
                        self.landed(key);
                    }
                }
                Src::Up => {
                    let p = self.up.poll(t).expect("peeked");
                    self.up_head = head_of(&self.up);
                    let key = p.key();
                    // Counted when held iff counting already (the protocol may start it).
                    let counted = self.counting;
                    if self.prefetch {
                        // The server's side touches only the client's hot record.
                        if let Some(q) = self.up.held_nth(AHEAD) {
                            let c = q.client as usize;
                            if let Some(cl) = self.clients.get(c) {
                                cache_hints::prefetch(cl);
                            }
                            self.m.prefetch_server(c);
                        }
                        if let Some(q) = self.up.held_nth(FIFO_AHEAD) {
                            cache_hints::prefetch(q);
                        }
                    }
                    M::at_server(self, p);
                    if counted {
                        self.landed(key);
                    }
                }
                Src::Down => {
                    let p = self.down.poll(t).expect("peeked");
                    self.down_head = head_of(&self.down);
                    let key = p.key();
                    // Counted when held iff counting already (the protocol may start it).
                    let counted = self.counting;
                    if self.prefetch {
                        if let Some(q) = self.down.held_nth(AHEAD) {
                            let c = q.client as usize;
                            self.prefetch_client(c);
                            // The first line of the cold record: all that an exchange's end
                            // and the next one's start touch.
                            if let Some(k) = self.cold.get(c) {
                                cache_hints::prefetch_bytes(k, 64);
                            }
                        }
                        if let Some(q) = self.down.held_nth(FIFO_AHEAD) {
                            cache_hints::prefetch(q);
                        }
                    }
                    M::at_client(self, p);
                    if counted {
                        self.landed(key);
                    }
                }
                Src::ExtraUp(i) => {
                    let p = self.extra[i].0.poll(t).expect("peeked");
                    M::at_server(self, p);
                }
                Src::ExtraDown(i) => {
                    let p = self.extra[i].1.poll(t).expect("peeked");
                    M::at_client(self, p);
                }
                Src::Mesh => self.mesh_event(),
            }
        }
    }
}
