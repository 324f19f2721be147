//! The CoAP exchange paths, common to the CoAP endpoints over UDP ([`CoapEndpoints`]): the
//! workload's next step, deferred starts, an exchange's records and copies, the server's
//! answers (now or after its processing delay), an exchange's end; and what the endpoints
//! tell the workload's observer.

use core::time::Duration;

use super::*;
use crate::engine::workload::{Acked, ExchangeObserver};
use crate::workload::Next;

/// The workload's next exchange of client `c` may start (the protocol's [`CoapEndpoints::begin`]), as a
/// deferred call.
fn begin_call<M: CoapEndpoints<W>, W: Workload>(sim: &mut Sim<'_, M, W>, c: u32) {
    M::begin(sim, c as usize);
}

impl<M: CoapEndpoints<W>, W: Workload> Sim<'_, M, W> {
    /// Client `c`'s flow starts: the workload's first step.
    pub(crate) fn coap_flow_start(&mut self, c: usize) {
        let next = self.w.first(c, &mut self.cold[c].plan);
        self.follow(c, next);
    }

    /// Act on the workload's answer.
    pub(crate) fn follow(&mut self, c: usize, next: Next) {
        match next {
            Next::Done => {
                self.timers.remove(c as u32);
                self.flow_finished(c);
            }
            Next::Idle => self.timers.remove(c as u32),
            Next::Exchange { delay_ns, reset } => {
                if reset {
                    M::reset(self, c);
                }
                if delay_ns > 0 {
                    self.defer_begin(c, self.now + delay_ns);
                } else {
                    M::begin(self, c);
                }
            }
        }
    }

    /// Client `c` tries to start its next exchange at `time` instead of now.
    pub(crate) fn defer_begin(&mut self, c: usize, time: Nanos) {
        self.timers.remove(c as u32);
        self.schedule(time, begin_call::<M, W>, c as u32);
    }

    /// Run `f(sim, arg)` at `time` (its insertion number the next).
    pub(crate) fn schedule(&mut self, time: Nanos, f: Call<M, W>, arg: u32) {
        let seq = self.next_seq();
        self.heap.push(Ev { time, seq, kind: EvKind::Call(f, arg) });
    }

    /// The CoAP length of client `c`'s current request, when the workload sets it.
    #[inline(always)]
    pub(crate) fn request_len(&self, c: usize) -> Option<u32> {
        self.w.request_len(c)
    }

    /// Client `c` starts an exchange now (its first copy follows with [`Sim::send_copy`]).
    pub(crate) fn start_exchange(&mut self, c: usize) {
        let now = self.now;
        let cl = &mut self.clients[c];
        let first = cl.recs.len() == 0;
        cl.cur = cl.recs.len() as u32;
        let obs = &mut self.obs;
        let (folded, kept) = cl
            .recs
            .push(ExRec::NEW, self.counting, self.fold_settled, self.unnecessary_def, |r| obs.record_final(c, r));
        cl.active = true;
        let keep_log = cl.keep_log;
        // Only the cold record's first line unless tracing or starting (a large population's
        // exchange that gave up starts the next one with that line unloaded).
        let cold = &mut self.cold[c];
        if self.trace.is_some() {
            cold.started = now;
        }
        cold.add_unnecessary(folded);
        if keep_log {
            self.logs[c].clear();
        }
        if first {
            cold.first_sent = Some(now);
        }
        if !self.counting && kept {
            self.kept_records += 1;
            if self.kept_records > self.fold_after && self.lookahead {
                self.start_counting();
            }
        }
    }

    /// Client `c` started an exchange whose first timer is `t0` (for the workload's observer).
    #[inline(always)]
    pub(crate) fn observe_started(&mut self, c: usize, t0: Duration) {
        self.obs.started(c, t0);
    }

    /// Whether the workload's observer wants the algorithm's state around a response.
    #[inline(always)]
    pub(crate) const fn observes_snapshots(&self) -> bool {
        <W::Observer as ExchangeObserver>::SNAPSHOTS
    }

    /// Client `c`'s exchange got its first response (for the workload's observer).
    #[inline(always)]
    pub(crate) fn observe_acked(&mut self, c: usize, a: &Acked) {
        self.obs.acked(c, a);
    }

    /// Send the next copy (`size` IP bytes) of client `c`'s active exchange and arm its timer
    /// for `deadline`.
    #[inline(always)]
    pub(crate) fn send_copy(&mut self, c: usize, size: u32, deadline: Nanos, buf: M::Buf) {
        let now = self.now;
        let deadline = self.timer_time(deadline).max(now);
        let seq = self.next_seq();
        let tseq = self.next_seq();
        let cl = &mut self.clients[c];
        let rec = cl.recs.last_mut().expect("active exchange has a record");
        let copy = rec.tx;
        rec.tx = rec.tx.saturating_add(1);
        cl.transmissions += 1;
        if cl.keep_log {
            self.logs[c].push((now, deadline - now));
        }
        let pkt = Packet { seq, client: c as u32, exchange: cl.cur, copy, echo: copy, buf };
        self.first_packet.get_or_insert(now);
        self.send_up_noted(c, size, pkt);
        self.timers.set(c as u32, deadline, tseq);
    }

    /// Send a client message that is not a request copy (full model: Empty ACK, RST).
    pub(crate) fn send_other(&mut self, c: usize, size: u32, buf: M::Buf) {
        let seq = self.next_seq();
        let exchange = self.clients[c].cur;
        self.first_packet.get_or_insert(self.now);
        self.send_up_noted(c, size, Packet { seq, client: c as u32, exchange, copy: NONE, echo: NONE, buf });
    }

    /// [`Sim::send_up`], counting the packet in its record if the link holds it.
    #[inline(always)]
    fn send_up_noted(&mut self, c: usize, size: u32, p: Packet<M::Buf>) {
        if self.counting {
            let (x, copy) = (p.exchange, p.copy);
            if self.send_up(c, size, p) {
                self.held(c as u32, x, copy);
            }
        } else {
            self.send_up(c, size, p);
        }
    }

    /// The server answers `p` now (or after its processing delay; `sid` is the protocol's
    /// handle for the delayed answer, handed to its [`CoapEndpoints::server_send`]).
    pub(crate) fn server_answer(&mut self, p: Packet<M::Buf>, size: u32, sid: u64) {
        if self.server_delay == 0 {
            self.send_response(p, size);
        } else {
            // A constant delay keeps the server's output in arrival order: a FIFO suffices.
            let seq = self.next_seq();
            if self.counting {
                self.held(p.client, p.exchange, p.copy);
            }
            self.server_q.push_back((self.now + self.server_delay, Packet { seq, ..p }, sid, M::server_send));
        }
    }

    /// Send the server's response `p` (`size` IP bytes) to its client.
    #[inline(always)]
    pub(crate) fn send_response(&mut self, mut p: Packet<M::Buf>, size: u32) {
        p.seq = self.next_seq(); // the downlink event's own insertion order
        if self.counting {
            let (c, x, copy) = (p.client, p.exchange, p.copy);
            if self.send_down(size, p) {
                self.held(c, x, copy);
            }
        } else {
            self.send_down(size, p);
        }
    }

    /// Client `c`'s active exchange completed with a response (`answer`), after the protocol
    /// told the algorithm.
    pub(crate) fn exchange_done(&mut self, c: usize, answer: Answer) {
        self.clients[c].active = false;
        self.record_completed(c, answer);
        let next = self.w.after(c, &mut self.cold[c].plan, true);
        self.follow(c, next);
    }

    /// Client `c`'s active exchange gave up, after the protocol told the algorithm.
    pub(crate) fn exchange_failed(&mut self, c: usize) {
        self.clients[c].active = false;
        self.record_failed(c);
        let next = self.w.after(c, &mut self.cold[c].plan, false);
        self.follow(c, next);
    }
}
