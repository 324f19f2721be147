//! RFC 7641 Observe, both roles.
//!
//! - **Server**: the application answers a request carrying Observe = 0 with
//!   [`Endpoint::observe`] instead of [`Endpoint::respond`]: the answer carries an Observe
//!   sequence number and the client is registered under the request's id. Each
//!   [`Endpoint::notify`] sends a notification: a CON one is an exchange like any other,
//!   queued behind NSTART and retransmitted under the peer's congestion-control instance (the
//!   same algorithm as every other CON), a NON one is sent at once. While a CON notification
//!   waits for its turn, a newer one replaces it (RFC 7641 §4.5.2: only the newest state
//!   matters). The observation ends when a CON notification is reset or times out (reported
//!   as [`Event::ResponseFailed`] for the registering request),
//!   when the client deregisters (a request with Observe = 1 and the same token), or with
//!   [`Endpoint::cancel_observation`]. Observers are kept in an [`Observers`] registry keyed
//!   by peer and token: a registration with the same peer and token replaces the earlier one
//!   (RFC 7641 §4.1), so a client never holds two observations, nor gets two copies of a
//!   notification, under one token; at most
//!   [`EndpointConfig::max_observations_per_peer`](super::EndpointConfig::max_observations_per_peer)
//!   per peer and [`EndpointConfig::max_observations`](super::EndpointConfig::max_observations)
//!   in all. Beyond either, [`Endpoint::observe`] answers without registering (and without the
//!   Observe option), and never displaces another peer's observation.
//! - **Client**: a request with [`Request::observe`](super::Request::observe) keeps its token
//!   after the first answer if that answer carries Observe; every later notification with
//!   that token is acknowledged and reported as another
//!   [`Event::Response`] for the same request id (its Observe option
//!   tells them apart). [`Endpoint::stop_observing`] forgets it, so the next notification
//!   gets RST (RFC 7641 §3.6). Notifications are delivered whole (a notification carrying
//!   Block2 delivers its first block).

use std::collections::BTreeMap;

use super::dedup::{Cached, Reply};
use super::{Endpoint, Event, Peer, RecordKind, RequestId, Response, ServerRequestId, UnknownRequest};
use crate::{option, Message, MessageType, Token};
use coapcc_cc::Instant;

/// What [`Observers::register`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Registered<V> {
    /// A new observation.
    New,
    /// The peer already observed with this token: its entry now holds the new value, the old
    /// one is returned (RFC 7641 §4.1).
    Replaced(V),
    /// Over the peer's share or the global limit: not registered.
    Refused,
}

/// Registered observers, keyed by peer and token (RFC 7641 §4.1), at most `max_per_peer` per
/// peer and `max_total` in all; a refused registration never displaces anyone. Sans-IO and
/// transport-neutral: the UDP [`Endpoint`] keys it by peer address, the CoAP-over-TCP server
/// of `coapcc-net` by connection.
#[derive(Clone, Debug)]
pub struct Observers<P, V> {
    by_key: BTreeMap<(P, Token), V>,
    per_peer: BTreeMap<P, usize>,
    max_total: usize,
    max_per_peer: usize,
    refused: u64,
}

impl<P: Ord + Clone, V> Observers<P, V> {
    /// An empty registry.
    pub fn new(max_total: usize, max_per_peer: usize) -> Self {
        Observers { by_key: BTreeMap::new(), per_peer: BTreeMap::new(), max_total, max_per_peer, refused: 0 }
    }

    /// Register `peer`'s observation with `token`, holding `value`.
    pub fn register(&mut self, peer: &P, token: Token, value: V) -> Registered<V> {
        if let Some(v) = self.by_key.get_mut(&(peer.clone(), token)) {
            return Registered::Replaced(core::mem::replace(v, value));
        }
        if self.peer_len(peer) >= self.max_per_peer || self.by_key.len() >= self.max_total {
            self.refused += 1;
            return Registered::Refused;
        }
        *self.per_peer.entry(peer.clone()).or_insert(0) += 1;
        self.by_key.insert((peer.clone(), token), value);
        Registered::New
    }

    /// Remove `peer`'s observation with `token`.
    pub fn remove(&mut self, peer: &P, token: Token) -> Option<V> {
        let v = self.by_key.remove(&(peer.clone(), token))?;
        if let Some(n) = self.per_peer.get_mut(peer) {
            *n -= 1;
            if *n == 0 {
                self.per_peer.remove(peer);
            }
        }
        Some(v)
    }

    /// Remove every observation of `peer` (a CoAP-over-TCP connection closed).
    pub fn remove_peer(&mut self, peer: &P) -> Vec<V> {
        let tokens: Vec<Token> = self.by_key.keys().filter(|(p, _)| p == peer).map(|(_, t)| *t).collect();
        tokens.into_iter().filter_map(|t| self.remove(peer, t)).collect()
    }

    /// The value of `peer`'s observation with `token`.
    pub fn get_mut(&mut self, peer: &P, token: Token) -> Option<&mut V> {
        self.by_key.get_mut(&(peer.clone(), token))
    }

    /// Every observation, in (peer, token) order.
    pub fn iter(&self) -> impl Iterator<Item = (&(P, Token), &V)> {
        self.by_key.iter()
    }

    /// Observations registered now.
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// `true` when nobody observes.
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// Observations of `peer` now.
    pub fn peer_len(&self, peer: &P) -> usize {
        self.per_peer.get(peer).copied().unwrap_or(0)
    }

    /// Registrations refused so far (over a share or the limit).
    pub fn refused(&self) -> u64 {
        self.refused
    }
}

/// A registered observer (server role).
pub(super) struct Observation<P> {
    peer: P,
    token: Token,
    /// Next Observe sequence number (24 bits).
    seq: u32,
    /// A CON notification queued and not started yet (replaced by newer ones).
    queued: Option<u64>,
}

impl<P: Peer> Endpoint<P> {
    /// Answer request `id` (which carried Observe = 0) and register its client for
    /// notifications; `Ok(true)` when registered, `Ok(false)` when the limit of observations
    /// was reached (the answer then carries no Observe option, RFC 7641 §4.1).
    pub fn observe(&mut self, now: Instant, id: ServerRequestId, response: Response) -> Result<bool, UnknownRequest> {
        let s = self.served.get(&id).ok_or(UnknownRequest(id))?;
        let (peer, token) = (s.peer.clone(), s.token);
        let ok = response.code.is_success()
            && match self.observers.register(&peer, token, id) {
                super::Registered::New => true,
                super::Registered::Replaced(old) => {
                    // RFC 7641 §4.1: the same client and token replace the entry.
                    self.observations.remove(&old);
                    true
                }
                super::Registered::Refused => false,
            };
        let mut response = response;
        if ok {
            response.options.set_uint(option::OBSERVE, 0);
            self.observations.insert(id, Observation { peer, token, seq: 1, queued: None });
        }
        self.respond(now, id, response)?;
        Ok(ok)
    }

    /// Send the registered observer of `id` a notification carrying `response` (CON when
    /// `confirmable`). Fails when the observation has ended.
    pub fn notify(
        &mut self,
        now: Instant,
        id: ServerRequestId,
        response: Response,
        confirmable: bool,
    ) -> Result<(), UnknownRequest> {
        let o = self.observations.get_mut(&id).ok_or(UnknownRequest(id))?;
        let seq = o.seq;
        o.seq = (o.seq + 1) & 0x00FF_FFFF;
        let mut m = Message::new(MessageType::Con, response.code, 0).with_token(o.token);
        m.options = response.options;
        m.options.set_uint(option::OBSERVE, u64::from(seq));
        m.payload = response.payload;
        let peer = o.peer.clone();
        if !confirmable {
            m.mtype = MessageType::Non;
            m.message_id = self.alloc_mid(&peer);
            self.send(peer, &m);
            return Ok(());
        }
        if let Some(xid) = o.queued {
            if let Some(out) = self.outs.get_mut(&xid) {
                if out.sent == 0 {
                    // Still waiting for its turn: the newer state replaces it.
                    out.msg = m;
                    return Ok(());
                }
            }
        }
        let xid = self.next_id;
        self.enqueue(now, peer, RecordKind::SeparateResponse(id), m, true, false);
        self.notifications.insert(xid, id);
        if let Some(o) = self.observations.get_mut(&id) {
            o.queued = Some(xid);
        }
        self.pump(now);
        Ok(())
    }

    /// End the observation of `id` (no more notifications; the client is not told).
    pub fn cancel_observation(&mut self, id: ServerRequestId) -> bool {
        self.end_observation(id)
    }

    /// Forget observation `id` in both indexes.
    fn end_observation(&mut self, id: ServerRequestId) -> bool {
        match self.observations.remove(&id) {
            Some(o) => {
                if self.observers.get_mut(&o.peer, o.token).is_some_and(|v| *v == id) {
                    self.observers.remove(&o.peer, o.token);
                }
                true
            }
            None => false,
        }
    }

    /// Observations `peer` has registered now (at most
    /// [`EndpointConfig::max_observations_per_peer`](super::EndpointConfig::max_observations_per_peer)).
    pub fn observations_of(&self, peer: &P) -> usize {
        self.observers.peer_len(peer)
    }

    /// Whether the observation registered by request `id` is still in force (a registration
    /// with the same peer and token, a deregistration or a failed notification ends it).
    pub fn is_observing(&self, id: ServerRequestId) -> bool {
        self.observations.contains_key(&id)
    }

    /// Observations registered now (server role).
    pub fn observations(&self) -> usize {
        self.observations.len()
    }

    /// A request with Observe = 1 deregisters its client's observation with that token.
    #[inline(never)]
    pub(super) fn deregister(&mut self, peer: &P, msg: &Message) {
        if msg.options.get_uint(option::OBSERVE) != Some(1) {
            return;
        }
        if let Some(id) = self.observers.remove(peer, msg.token) {
            self.observations.remove(&id);
        }
    }

    /// An outgoing exchange finished: if it was a notification, forget it, and end its
    /// observation when it failed. Returns whether it was a notification.
    pub(super) fn notification_finished(&mut self, xid: u64, failed: bool) -> bool {
        let Some(id) = self.notifications.remove(&xid) else { return false };
        if let Some(o) = self.observations.get_mut(&id) {
            if o.queued == Some(xid) {
                o.queued = None;
            }
            if failed {
                self.end_observation(id);
            }
        }
        true
    }

    /// Client: after the first answer to an observe request, keep its token.
    pub(super) fn keep_observing(&mut self, id: RequestId, peer: &P, msg: &Message, observe_asked: bool) {
        if observe_asked && msg.options.contains(option::OBSERVE) && msg.code.is_success() {
            while self.observing.len() >= self.config.max_observations.max(1) {
                let Some(k) = self.observing.keys().next().cloned() else { break };
                self.observing.remove(&k);
            }
            self.observing.insert((peer.clone(), msg.token), id);
        }
    }

    /// Client: a separate response matched no exchange; is it a notification we observe?
    pub(super) fn take_notification(&mut self, now: Instant, peer: &P, msg: &Message) -> bool {
        let Some(&id) = self.observing.get(&(peer.clone(), msg.token)) else { return false };
        let con = msg.mtype == MessageType::Con;
        let expires = self.lifetime(now, con);
        if con {
            let ack = Message::empty_ack(msg.message_id);
            self.dedup.insert(peer.clone(), msg.message_id, Cached::Reply(Reply::of(&ack)), expires);
            self.send(peer.clone(), &ack);
        } else {
            self.dedup.insert(peer.clone(), msg.message_id, Cached::Silent, expires);
        }
        if !msg.code.is_success() {
            self.observing.remove(&(peer.clone(), msg.token));
        }
        self.stats.notifications_received += 1;
        self.events.push_back(Event::Response { id, peer: peer.clone(), response: msg.clone(), copy: None });
        true
    }

    /// Client: stop observing request `id`; the next notification gets RST.
    pub fn stop_observing(&mut self, id: RequestId) -> bool {
        let before = self.observing.len();
        self.observing.retain(|_, v| *v != id);
        self.observing.len() != before
    }

    /// Client: requests being observed now.
    pub fn observing(&self) -> usize {
        self.observing.len()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Endpoint, EndpointConfig, Event, FailReason, Request, Response};
    use crate::{option, Code, Message, MessageType};
    use coapcc_cc::Instant;

    const C: u32 = 1;
    const S: u32 = 2;

    fn pass(from: &mut Endpoint<u32>, to: &mut Endpoint<u32>, who: u32, now: Instant) -> Vec<Message> {
        let mut seen = Vec::new();
        while let Some(t) = from.poll_transmit(now) {
            seen.push(Message::decode(&t.bytes).unwrap());
            to.handle_datagram(now, who, &t.bytes);
        }
        seen
    }

    #[test]
    fn notifications_are_exchanges_under_congestion_control() {
        let mut client = Endpoint::<u32>::with_seed(EndpointConfig::default(), 1);
        let mut server = Endpoint::<u32>::with_seed(EndpointConfig::default(), 2);
        let t0 = Instant::from_millis(1);
        let rid = client.request(t0, S, Request::get("/counter").observe());
        pass(&mut client, &mut server, C, t0);
        let Some(Event::Request { id, message, .. }) = server.poll_event() else { panic!() };
        assert_eq!(message.options.get_uint(option::OBSERVE), Some(0));
        assert!(server.observe(t0, id, Response::content("0")).unwrap());
        pass(&mut server, &mut client, S, t0);
        assert!(matches!(client.poll_event(), Some(Event::Response { id, .. }) if id == rid));
        assert_eq!(client.observing(), 1);
        // Three CON notifications and one NON; each arrives as a response to the same request.
        for (k, con) in [(1, true), (2, true), (3, false), (4, true)] {
            let now = Instant::from_millis(1000 * k);
            server.notify(now, id, Response::content(k.to_string()), con).unwrap();
            let sent = pass(&mut server, &mut client, S, now);
            assert_eq!(sent[0].mtype, if con { MessageType::Con } else { MessageType::Non });
            assert_eq!(sent[0].options.get_uint(option::OBSERVE), Some(k));
            let acks = pass(&mut client, &mut server, C, now);
            assert_eq!(acks.len(), usize::from(con));
            match client.poll_event() {
                Some(Event::Response { id: r, response, .. }) => {
                    assert_eq!((r, response.payload), (rid, k.to_string().into_bytes()));
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(server.cc(&C).is_some(), "CON notifications are timed by the peer's algorithm");
        assert_eq!(client.stats().notifications_received, 4);
        // An unacknowledged CON notification is retransmitted on the algorithm's timer.
        let now = Instant::from_millis(10_000);
        server.notify(now, id, Response::content("5"), true).unwrap();
        let first = Message::decode(&server.poll_transmit(now).unwrap().bytes).unwrap();
        let t = server.poll_timeout().unwrap();
        assert!(t >= now + core::time::Duration::from_secs(2), "ACK_TIMEOUT of the default algorithm");
        server.handle_timeout(t);
        let again = Message::decode(&server.poll_transmit(t).unwrap().bytes).unwrap();
        assert_eq!((again.message_id, &again.payload), (first.message_id, &first.payload));
        // While it is in flight, newer states queue as one (the newest replaces the older).
        server.notify(t, id, Response::content("6"), true).unwrap();
        server.notify(t, id, Response::content("7"), true).unwrap();
        client.handle_datagram(t, S, &again.to_bytes());
        pass(&mut client, &mut server, C, t);
        let next = pass(&mut server, &mut client, S, t);
        assert_eq!(next.len(), 1);
        assert_eq!(next[0].payload, b"7");
        pass(&mut client, &mut server, C, t);
        // The client stops: the next notification gets RST, which ends the observation.
        while client.poll_event().is_some() {}
        assert!(client.stop_observing(rid));
        server.notify(t, id, Response::content("8"), true).unwrap();
        pass(&mut server, &mut client, S, t);
        let rst = pass(&mut client, &mut server, C, t);
        assert_eq!(rst[0].mtype, MessageType::Rst);
        assert!(matches!(server.poll_event(), Some(Event::ResponseFailed { reason: FailReason::Reset, .. })));
        assert_eq!(server.observations(), 0);
        assert!(server.notify(t, id, Response::content("9"), true).is_err());
        assert_eq!(server.pending_from(&C), 0, "notifications do not count as pending requests");
    }

    #[test]
    fn deregistration_and_limit() {
        let cfg = EndpointConfig { max_observations: 1, ..EndpointConfig::default() };
        let mut server = Endpoint::<u32>::with_seed(cfg, 2);
        let now = Instant::ZERO;
        let req = |mid: u16, tok: u64, obs: u64| {
            let mut m = Message::new(MessageType::Con, Code::GET, mid).with_token(crate::Token::from_u64(tok));
            m.add_uri_path("counter");
            m.options.set_uint(option::OBSERVE, obs);
            m.to_bytes()
        };
        server.handle_datagram(now, C, &req(1, 7, 0));
        let Some(Event::Request { id, .. }) = server.poll_event() else { panic!() };
        assert!(server.observe(now, id, Response::content("0")).unwrap());
        server.handle_datagram(now, 3, &req(2, 8, 0));
        let Some(Event::Request { id: id2, .. }) = server.poll_event() else { panic!() };
        assert!(!server.observe(now, id2, Response::content("0")).unwrap(), "over the limit");
        // GET with Observe = 1 and the same token deregisters.
        server.handle_datagram(now, C, &req(3, 7, 1));
        assert_eq!(server.observations(), 0);
    }

    /// The probe's attack: one socket registering again and again. With the same token each
    /// registration replaces the last (RFC 7641 §4.1): one observation, one copy of each
    /// notification. With new tokens it stays within its share, and another client registers.
    #[test]
    fn re_registration_replaces_and_a_peer_keeps_to_its_share() {
        let mut server = Endpoint::<u32>::with_seed(EndpointConfig::default(), 2);
        let now = Instant::ZERO;
        let req = |mid: u16, tok: u64| {
            let mut m = Message::new(MessageType::Con, Code::GET, mid).with_token(crate::Token::from_u64(tok));
            m.add_uri_path("counter");
            m.options.set_uint(option::OBSERVE, 0);
            m.to_bytes()
        };
        let register = |server: &mut Endpoint<u32>, peer: u32, mid: u16, tok: u64| {
            server.handle_datagram(now, peer, &req(mid, tok));
            let Some(Event::Request { id, .. }) = server.poll_event() else { panic!() };
            let ok = server.observe(now, id, Response::content("0")).unwrap();
            let answer = Message::decode(&server.poll_transmit(now).unwrap().bytes).unwrap();
            assert_eq!(answer.options.contains(option::OBSERVE), ok);
            (id, ok)
        };
        let mut last = None;
        for mid in 0..64 {
            let (id, ok) = register(&mut server, C, mid, 7);
            assert!(ok);
            last = Some(id);
        }
        assert_eq!((server.observations(), server.observations_of(&C)), (1, 1));
        server.notify(now, last.unwrap(), Response::content("1"), false).unwrap();
        let sent: Vec<_> = std::iter::from_fn(|| server.poll_transmit(now)).collect();
        assert_eq!(sent.len(), 1, "one copy of each notification");
        for mid in 100..164 {
            register(&mut server, C, mid, u64::from(mid));
        }
        assert_eq!(server.observations_of(&C), 4, "the default per-peer share");
        let (_, ok) = register(&mut server, S, 500, 7);
        assert!(ok, "another client's registration is accepted");
        assert_eq!(server.observations(), 5);
    }
}
