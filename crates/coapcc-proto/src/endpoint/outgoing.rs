//! Outgoing exchanges: per-peer algorithm state and NSTART queue, Message IDs and tokens,
//! starting, timing out and finishing exchanges through the protocol layer
//! ([`lifecycle`](super::lifecycle)).

use std::collections::VecDeque;

use super::client::wire_token;
use super::hash::Entry;
use super::lifecycle::{Admission, ConExchange, Expiry, Nstart};
use super::timers::TimerKey;
use super::{
    Controller, Endpoint, ExchangeRecord, FailReason, IdTable, Out, OutState, Outcome, Peer, PeerState, RecordKind,
    TransmissionRecord, TransmitKind,
};
use crate::{Code, Message, MessageType, Token};
use coapcc_cc::{CongestionControl, Entropy, Instant};

impl<P: Peer> Endpoint<P> {
    // ----------------------------------------------------------------------------------
    // Outgoing exchanges
    // ----------------------------------------------------------------------------------

    pub(super) fn fresh_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    pub(super) fn peer_state(&mut self, peer: &P) -> &mut PeerState {
        self.use_tick += 1;
        let tick = self.use_tick;
        if !self.peers.contains_key(peer) {
            self.add_peer(peer, tick);
        }
        let p = self.peers.get_mut(peer).expect("just inserted");
        p.last_used = tick;
        p
    }

    /// A new peer's state (the least recently used idle one goes beyond `max_peers`); out
    /// of line: once per peer.
    #[cold]
    #[inline(never)]
    fn add_peer(&mut self, peer: &P, tick: u64) {
        if self.peers.len() >= self.config.max_peers.max(1) {
            let idle = self
                .peers
                .iter()
                .filter(|(_, p)| p.slots.is_idle())
                .min_by_key(|(_, p)| p.last_used)
                .map(|(k, _)| k.clone());
            if let Some(k) = idle {
                if let Some(p) = self.peers.remove(&k) {
                    self.timers.rearm(TimerKey::Wake(k), p.wake, None);
                }
            }
        }
        let cc = match &self.factory {
            Some(f) => Controller::from_factory(&**f),
            None => Controller::Registry(self.config.cc.build()),
        };
        self.peers
            .insert(peer.clone(), PeerState { cc, slots: Nstart::new(VecDeque::new()), wake: None, last_used: tick });
    }

    pub(super) fn enqueue(&mut self, now: Instant, peer: P, kind: RecordKind, msg: Message, con: bool, front: bool) {
        let xid = self.fresh_id();
        let p = self.peer_state(&peer);
        if front {
            p.slots.push_front(xid);
        } else {
            p.slots.push_back(xid);
        }
        self.queued_peers.insert(peer.clone());
        self.outs.insert(xid, queued_out(now, peer, kind, msg, con));
    }

    /// [`Endpoint::enqueue`] at the back of `peer`'s queue, then [`Endpoint::pump`], in one
    /// step when no peer has a queued exchange (a client whose previous request has finished,
    /// the common case): the new exchange is the only one `pump` would look at, so it is
    /// offered to the peer's NSTART state here ([`Nstart::offer`], one lookup of the peer),
    /// started at once when NSTART and the algorithm's pacing allow, and otherwise queued and
    /// timed exactly as `pump` would.
    pub(super) fn enqueue_and_pump(&mut self, now: Instant, peer: P, kind: RecordKind, msg: Message, con: bool) {
        if !self.queued_peers.is_empty() {
            return self.enqueue_then_pump(now, peer, kind, msg, con);
        }
        let xid = self.fresh_id();
        let nstart = self.hot.nstart;
        let p = self.peer_state(&peer);
        if p.slots.waiting() != 0 {
            // Never (a peer with a queued exchange is among the queued peers); kept exact
            // all the same.
            p.slots.push_back(xid);
            return self.queued_then_pump(now, xid, peer, kind, msg, con);
        }
        let admission = p.slots.offer(xid, nstart, &p.cc, now);
        let (old, new) = p.set_wake(&admission);
        self.timers.rearm(TimerKey::Wake(peer.clone()), old, new);
        // Built as the table's entry and started in its slot (`item` is `xid`): the table is
        // out of the endpoint meanwhile (`start_out` never reads it), so the exchange is moved
        // once, as it is built.
        let mut outs = core::mem::take(&mut self.outs);
        let out = outs.insert_new(Entry { key: xid, value: queued_out(now, peer, kind, msg, con) });
        match admission {
            Admission::Start { in_flight, .. } => self.start_out(now, xid, in_flight, out),
            _ => self.queued_peers.insert(out.peer.clone()),
        }
        self.outs = outs;
    }

    /// [`Endpoint::enqueue`] at the back of the queue, then [`Endpoint::pump`] (out of line:
    /// [`Endpoint::enqueue_and_pump`] when another exchange is queued).
    #[inline(never)]
    fn enqueue_then_pump(&mut self, now: Instant, peer: P, kind: RecordKind, msg: Message, con: bool) {
        self.enqueue(now, peer, kind, msg, con, false);
        self.pump(now);
    }

    /// The rest of [`Endpoint::enqueue`] for exchange `xid`, already in `peer`'s queue, then
    /// [`Endpoint::pump`].
    #[cold]
    #[inline(never)]
    fn queued_then_pump(&mut self, now: Instant, xid: u64, peer: P, kind: RecordKind, msg: Message, con: bool) {
        self.queued_peers.insert(peer.clone());
        self.outs.insert(xid, queued_out(now, peer, kind, msg, con));
        self.pump(now);
    }

    /// Start queued exchanges wherever NSTART and `earliest_start` allow (the protocol
    /// layer's [`Nstart::poll_start`] decides).
    #[inline]
    pub(super) fn pump(&mut self, now: Instant) {
        // Called after every input; nothing is queued most of the time.
        if !self.queued_peers.is_empty() {
            self.pump_queued(now);
        }
    }

    #[inline(never)]
    fn pump_queued(&mut self, now: Instant) {
        let nstart = self.hot.nstart;
        // The list reuses its allocation from call to call.
        let mut ready = core::mem::take(&mut self.ready_scratch);
        let peers = &self.peers;
        self.queued_peers.select(&mut ready, |k| peers.get(k).is_some_and(|p| p.slots.can_start(nstart)));
        for peer in ready.drain(..) {
            loop {
                let p = self.peers.get_mut(&peer).expect("present");
                let admission = p.slots.poll_start(nstart, &p.cc, now);
                let (old, new) = p.set_wake(&admission);
                let empty = p.slots.waiting() == 0;
                self.timers.rearm(TimerKey::Wake(peer.clone()), old, new);
                let Admission::Start { item: xid, in_flight } = admission else { break };
                if empty {
                    self.queued_peers.remove(&peer);
                }
                self.start(now, xid, in_flight);
            }
        }
        self.ready_scratch = ready;
    }

    pub(super) fn alloc_mid(&mut self, peer: &P) -> u16 {
        for _ in 0..=u16::MAX as u32 {
            let m = self.next_mid;
            self.next_mid = m.wrapping_add(1);
            if !self.by_mid.contains_key(&(peer.clone(), m)) {
                return m;
            }
        }
        self.next_mid
    }

    /// Start exchange `xid` (in its table), just admitted with `in_flight` others holding a
    /// slot (out of line: the queue's path; a request admitted at once is started before it
    /// enters the table, [`Endpoint::enqueue_and_pump`]).
    #[inline(never)]
    pub(super) fn start(&mut self, now: Instant, xid: u64, in_flight: u32) {
        let mut out = self.outs.remove(&xid).expect("starting a known exchange");
        self.start_out(now, xid, in_flight, &mut out);
        self.outs.insert(xid, out);
    }

    /// Start exchange `xid` (`out`, not in the table while it starts): Message ID, token and
    /// their index entries, the algorithm's first timer, the encoding, copy 0 queued. One
    /// lookup of the peer's state.
    fn start_out(&mut self, now: Instant, xid: u64, in_flight: u32, out: &mut Out<P>) {
        let (kind, con) = (out.kind, out.con);
        let mid = self.alloc_mid(&out.peer);
        let token_len = self.hot.token_len;
        let keep_records = self.hot.record_exchanges;
        let p = self.peers.get_mut(&out.peer).expect("an admitted exchange's peer has state");
        let (copy_id, token_key) = match kind {
            RecordKind::Request(_) => {
                let copy_id = con && p.cc.uses_copy_id();
                let len = usize::from(token_len.clamp(1, 8));
                let key_len = if copy_id { len - 1 } else { len };
                let key = random_token(&mut self.rng, key_len);
                let (key, indexed) = if self.by_token.contains_key(&(out.peer.clone(), key)) {
                    retry_token(&mut self.rng, &self.by_token, &out.peer, key_len)
                } else {
                    (key, true)
                };
                if indexed {
                    self.by_token.insert((out.peer.clone(), key), xid);
                }
                (copy_id, Some((key, indexed)))
            }
            RecordKind::SeparateResponse(_) => (false, None),
        };
        self.by_mid.insert((out.peer.clone(), mid), xid);
        let ex = if con {
            let rng: &mut dyn Entropy = match &mut self.cc_rng {
                Some(r) => r,
                None => &mut self.rng,
            };
            Some(ConExchange::start(&mut p.cc, now, in_flight, rng))
        } else {
            None
        };
        let keep_tx = copy_id || keep_records;
        out.keep_tx = keep_tx;
        out.sent = 1;
        out.started = now;
        out.msg.message_id = mid;
        out.msg.mtype = if con { MessageType::Con } else { MessageType::Non };
        out.copy_id = copy_id;
        out.holds_slot = true;
        if let Some((key, indexed)) = token_key {
            out.msg.token = wire_token(key, copy_id, 0);
            out.token_key = indexed.then_some(key);
        }
        out.con_ex = ex;
        let old = out.state.deadline();
        out.state = match ex {
            Some(x) => OutState::WaitAck { deadline: x.deadline() },
            None => OutState::WaitResponse { deadline: now + self.response_timeout },
        };
        self.timers.rearm(TimerKey::Out(xid), old, out.state.deadline());
        if keep_tx {
            let timeout = ex.map(|e| e.timer());
            record_transmission(out, &mut self.spare_tx, TransmissionRecord { ordinal: 0, at: now, timeout });
        }
        let mut bytes = self.buffer();
        out.msg.encode(&mut bytes);
        out.wire = crate::small::SmallBytes::from_slice(&bytes);
        let kind = super::transmit_kind(&out.msg);
        out.tkind = kind;
        self.send_bytes(out.peer.clone(), bytes, kind);
    }

    pub(super) fn on_out_timer(&mut self, now: Instant, xid: u64) {
        let Some(out) = self.outs.get_mut(&xid) else {
            return;
        };
        match out.state {
            OutState::WaitAck { .. } => {
                // The exchange's reliability state, updated in place (after a give-up the
                // exchange is removed, so nothing reads it again).
                let Some(ex) = out.con_ex.as_mut() else { return };
                let p = self.peers.get_mut(&out.peer).expect("peer of an active exchange");
                match ex.expire(&mut p.cc, now) {
                    Expiry::Retransmit { ordinal: k, timer, deadline } => {
                        // Copy k: the same message; with copy identification the last
                        // token byte is the ordinal (`wire_token`).
                        let last = out.copy_id.then(|| k.min(255) as u8);
                        out.sent += 1;
                        if out.keep_tx {
                            let t = TransmissionRecord { ordinal: k, at: now, timeout: Some(timer) };
                            record_transmission(out, &mut self.spare_tx, t);
                        }
                        let old = out.state.deadline();
                        out.state = OutState::WaitAck { deadline };
                        self.timers.rearm(TimerKey::Out(xid), old, Some(deadline));
                        self.stats.retransmissions += 1;
                        // A recycled buffer (`buffer`), without a second lookup of the exchange.
                        let mut b = self.spare.pop().unwrap_or_default();
                        let wire = out.wire.as_slice();
                        b.extend_from_slice(wire);
                        // The token (TKL: the first byte's low nibble) follows the 4-byte header.
                        let tkl = usize::from(wire[0] & 0x0F);
                        if let (Some(l), true) = (last, tkl > 0) {
                            b[4 + tkl - 1] = l;
                        }
                        let kind = out.tkind;
                        let peer = out.peer.clone();
                        self.send_bytes(peer, b, kind);
                    }
                    Expiry::GiveUp => self.give_up(now, xid, FailReason::Timeout),
                }
            }
            OutState::WaitResponse { .. } => self.give_up(now, xid, FailReason::ResponseTimeout),
            OutState::Queued => {}
        }
    }

    /// Exchange `xid` failed for `reason` on its timer (out of line: rare next to
    /// retransmissions).
    #[cold]
    #[inline(never)]
    fn give_up(&mut self, now: Instant, xid: u64, reason: FailReason) {
        let (kind, peer) = self.finish(now, xid, Outcome::Failed(reason), None);
        self.fail(kind, peer, reason);
    }

    /// Remove a finished exchange, free its slot and indexes, and record it. Returns what it
    /// was and its peer.
    #[inline(never)]
    pub(super) fn finish(
        &mut self,
        now: Instant,
        xid: u64,
        outcome: Outcome,
        response: Option<(Instant, Code)>,
    ) -> (RecordKind, P) {
        self.finish_with(now, xid, None, outcome, response)
    }

    /// [`Endpoint::finish`], after [`Endpoint::ack_cc`] with `ack` (the copy the ACK
    /// identifies) when it is `Some`: an exchange acknowledged and finished by one message
    /// (a piggybacked response) is looked up once.
    #[inline]
    pub(super) fn finish_with(
        &mut self,
        now: Instant,
        xid: u64,
        ack: Option<Option<u32>>,
        outcome: Outcome,
        response: Option<(Instant, Code)>,
    ) -> (RecordKind, P) {
        // Read and emptied in place, then dropped where it is (an exchange is a few hundred
        // bytes: not copied out of the table).
        let mut out = self.outs.get_mut(&xid).expect("finishing a known exchange");
        let (kind, peer) = (out.kind, out.peer.clone());
        // Only a server's separate response or notification has bookkeeping to finish
        // (notifications are sent as separate responses): a client's request exchange reads
        // nothing more.
        if matches!(kind, RecordKind::SeparateResponse(_)) {
            self.finish_response(xid, kind, &peer, &outcome);
            out = self.outs.get_mut(&xid).expect("finishing a known exchange");
        }
        self.timers.rearm(TimerKey::Out(xid), out.state.deadline(), None);
        // One lookup each: the index entries go if they are this exchange's.
        self.by_mid.remove_if(&(peer.clone(), out.msg.message_id), |x| *x == xid);
        if let Some(key) = out.token_key {
            self.by_token.remove_if(&(peer.clone(), key), |x| *x == xid);
        }
        let mut p = self.peers.get_mut(&peer);
        if let Some(ordinal) = ack {
            super::client::acknowledge(out, p.as_deref_mut(), now, ordinal);
        }
        if let Some(p) = p {
            if out.holds_slot {
                p.slots.release();
            }
            if self.hot.record_exchanges {
                let record = exchange_record(out, &p.cc, now, outcome, response);
                self.records.push_back(record);
            }
        }
        if out.tx.capacity() > 0 && self.spare_tx.len() < Self::SPARE_BUFFERS {
            let mut tx = core::mem::take(&mut out.tx);
            tx.clear();
            self.spare_tx.push(tx);
        }
        self.outs.discard(&xid);
        (kind, peer)
    }

    /// [`Endpoint::finish`] for a server's separate response, a notification included (out
    /// of line: a client's exchanges are neither): the observation's bookkeeping, and the
    /// peer's pending count for a separate response.
    #[cold]
    #[inline(never)]
    fn finish_response(&mut self, xid: u64, kind: RecordKind, peer: &P, outcome: &Outcome) {
        let notification =
            !self.notifications.is_empty() && self.notification_finished(xid, matches!(outcome, Outcome::Failed(_)));
        if let (RecordKind::SeparateResponse(_), false) = (kind, notification) {
            self.release_pending(peer);
        }
    }
}

/// Note transmission `t` in `out`'s list, which takes a spare list's allocation (`spare`)
/// if it has none (out of line: kept only for copy identification and exchange records).
#[cold]
#[inline(never)]
fn record_transmission<P>(out: &mut Out<P>, spare: &mut Vec<Vec<TransmissionRecord>>, t: TransmissionRecord) {
    if out.tx.capacity() == 0 {
        out.tx = spare.pop().unwrap_or_default();
    }
    out.tx.push(t);
}

/// A new exchange's state, waiting in its peer's NSTART queue.
fn queued_out<P>(now: Instant, peer: P, kind: RecordKind, msg: Message, con: bool) -> Out<P> {
    Out {
        peer,
        kind,
        msg,
        wire: crate::small::SmallBytes::new(),
        con,
        copy_id: false,
        tkind: TransmitKind::Request,
        state: OutState::Queued,
        con_ex: None,
        sent: 0,
        started: now,
        keep_tx: false,
        holds_slot: false,
        token_key: None,
        tx: Vec::new(),
        queued_at: now,
        acked_at: None,
        rtt: None,
        copy: None,
    }
}

/// The record of finished exchange `out` (with [`EndpointConfig::record_exchanges`], out of
/// line: the simulator and most drivers never ask for it).
///
/// [`EndpointConfig::record_exchanges`]: super::EndpointConfig::record_exchanges
#[inline(never)]
fn exchange_record<P: Clone>(
    out: &Out<P>,
    cc: &Controller,
    now: Instant,
    outcome: Outcome,
    response: Option<(Instant, Code)>,
) -> ExchangeRecord<P> {
    let block2 = match out.kind {
        RecordKind::Request(_) => out.msg.block2().ok().flatten(),
        RecordKind::SeparateResponse(_) => None,
    };
    ExchangeRecord {
        kind: out.kind,
        peer: out.peer.clone(),
        message_id: out.msg.message_id,
        token: out.msg.token,
        confirmable: out.con,
        block2,
        algorithm: cc.name(),
        queued_at: out.queued_at,
        transmissions: out.tx.to_vec(),
        acked_at: out.acked_at,
        response_at: response.map(|r| r.0),
        rtt: out.rtt,
        copy: out.copy,
        response_code: response.map(|r| r.1),
        outcome,
        finished_at: now,
        snapshot: cc.snapshot(),
    }
}

/// A random token of `len` bytes (at most 8) from `rng`.
fn random_token(rng: &mut super::entropy::Source, len: usize) -> Token {
    let bytes = rng.next_u64().to_be_bytes();
    Token::new(&bytes[..len.min(8)]).unwrap_or_default()
}

/// A new token for `peer` after a first draw that another exchange of `peer` holds (in
/// `by_token`): up to 16 more draws; the last one, not indexed, if all are taken (out of
/// line: a collision needs two exchanges to one peer with the same random token).
#[cold]
#[inline(never)]
fn retry_token<P: Peer>(
    rng: &mut super::entropy::Source,
    by_token: &IdTable<(P, Token), u64>,
    peer: &P,
    key_len: usize,
) -> (Token, bool) {
    let mut key = Token::EMPTY;
    for _ in 0..16 {
        key = random_token(rng, key_len);
        if !by_token.contains_key(&(peer.clone(), key)) {
            return (key, true);
        }
    }
    (key, false)
}
