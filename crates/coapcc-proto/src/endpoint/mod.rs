//! Sans-IO CoAP-over-UDP endpoint (RFC 7252 message and request/response layers, RFC 7959
//! Block2), with retransmissions timed by any algorithm of `coapcc-cc`.
//!
//! The [`Endpoint`] never reads a clock, owns no socket and uses no global random generator:
//! every entry point takes `now` ([`coapcc_cc::Instant`]), datagrams are pushed in with
//! [`Endpoint::handle_datagram`] and pulled out with [`Endpoint::poll_transmit`], the next
//! wake-up is [`Endpoint::poll_timeout`] and it is delivered with
//! [`Endpoint::handle_timeout`]; what happened comes out as typed [`Event`]s
//! ([`Endpoint::poll_event`]) and, optionally, one [`ExchangeRecord`] per finished exchange
//! ([`Endpoint::poll_record`]). Randomness (first Message ID, tokens, the algorithms'
//! dithering) comes from the [`Entropy`] source given to [`Endpoint::new`]; the dithering can
//! have its own source ([`Endpoint::with_cc_entropy`]). The peer address
//! type is generic: `std::net::SocketAddr` for real I/O, an integer node id in a simulator.
//!
//! One endpoint is client and server at once:
//!
//! ```
//! use coapcc_proto::endpoint::{Endpoint, EndpointConfig, Event, Request, Response};
//! use coapcc_cc::Instant;
//!
//! let mut client = Endpoint::<u8>::with_seed(EndpointConfig::default(), 1);
//! let mut server = Endpoint::<u8>::with_seed(EndpointConfig::default(), 2);
//! let now = Instant::ZERO;
//! let id = client.request(now, 2, Request::get("/hello"));
//! let t = client.poll_transmit(now).unwrap();           // CON GET /hello to node 2
//! server.handle_datagram(now, 1, &t.bytes);
//! let Some(Event::Request { id: sid, .. }) = server.poll_event() else { panic!() };
//! server.respond(now, sid, Response::content("hi")).unwrap();
//! let ack = server.poll_transmit(now).unwrap();          // ACK 2.05, piggybacked
//! client.handle_datagram(now, 2, &ack.bytes);
//! match client.poll_event() {
//!     Some(Event::Response { id: rid, response, .. }) => {
//!         assert_eq!(rid, id);
//!         assert_eq!(response.payload, b"hi");
//!     }
//!     other => panic!("{other:?}"),
//! }
//! ```
//!
//! See `docs/endpoints.md` for the design, the parameters and how the simulator and the
//! tokio driver (`coapcc-net`) share this state machine.

mod block;
mod config;
mod dedup;
#[cfg(test)]
mod tests;
mod types;

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Debug;

use coapcc_cc::{
    AckInfo, Algorithm, CongestionControl, Entropy, Exchange, GiveUpReason, Instant, SplitMix64, TimeoutAction,
};
use core::time::Duration;

pub use config::{DuplicateMode, EndpointConfig, LifetimeMode, TransmissionParams};
pub use types::{
    Event, ExchangeRecord, FailReason, Outcome, RecordKind, Request, RequestId, Response, ServerRequestId, Stats,
    TransmissionRecord, Transmit,
};

use block::Slice;
use dedup::{Cached, DedupCache};

use crate::option;
use crate::{peek_header, Block, Code, Message, MessageType, Token};

/// What a peer address type must offer: cloneable, totally ordered (state is kept in
/// ordered maps, so runs are deterministic) and printable.
pub trait Peer: Clone + Ord + Debug {}
impl<T: Clone + Ord + Debug> Peer for T {}

/// [`Endpoint::respond`] or [`Endpoint::defer`] named a request that is unknown or already
/// answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownRequest(pub ServerRequestId);

impl core::fmt::Display for UnknownRequest {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "unknown or already answered server request {}", self.0)
    }
}

impl std::error::Error for UnknownRequest {}

/// Critical options the request layer understands; a request with any other critical
/// option is rejected with 4.02 Bad Option (RFC 7252 §5.4.1). Block1 is not implemented.
fn known_critical(number: u16) -> bool {
    matches!(
        number,
        option::IF_MATCH
            | option::URI_HOST
            | option::IF_NONE_MATCH
            | option::URI_PORT
            | option::URI_PATH
            | option::URI_QUERY
            | option::ACCEPT
            | option::BLOCK2
    )
}

/// Per-peer congestion-control and NSTART state.
struct PeerState {
    cc: Algorithm,
    /// Exchanges holding an NSTART slot.
    active: u32,
    /// Exchanges waiting for a slot, in order.
    queue: VecDeque<u64>,
    /// `cc.earliest_start` of the queue head, when it lies in the future.
    wake: Option<Instant>,
    /// For least-recently-used eviction.
    last_used: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OutState {
    /// Waiting for an NSTART slot (and `earliest_start`).
    Queued,
    /// CON sent, waiting for ACK/RST until `deadline` (the armed timer).
    WaitAck { deadline: Instant },
    /// Waiting for a separate response (after an Empty ACK), or for the response to a NON.
    WaitResponse { deadline: Instant },
}

/// One outgoing message-layer exchange: a CON or NON request, or a server's CON separate
/// response.
struct Out<P> {
    peer: P,
    kind: RecordKind,
    /// The message as sent for copy 0 (Message ID and token set at start).
    msg: Message,
    con: bool,
    /// Copy identification: the last token byte is the transmission ordinal.
    copy_id: bool,
    state: OutState,
    cc_ex: Option<Exchange>,
    holds_slot: bool,
    /// Key in `by_token` (requests only).
    token_key: Option<Token>,
    tx: Vec<TransmissionRecord>,
    queued_at: Instant,
    acked_at: Option<Instant>,
    rtt: Option<Duration>,
    copy: Option<coapcc_cc::CopyAck>,
}

/// A client request (one or more exchanges, for Block2).
struct ClientReq {
    template: Request,
    body: Vec<u8>,
    /// Whether the transfer is block-wise (a response carried Block2).
    blockwise: bool,
}

/// A request received as a server and not answered yet.
struct Served<P> {
    peer: P,
    mid: u16,
    token: Token,
    con: bool,
    block2: Option<Block>,
    size2: bool,
    /// Empty ACK sent: the response will be separate.
    acked: bool,
    /// When to send the Empty ACK if still unanswered (CON only).
    deadline: Option<Instant>,
}

/// A sans-IO CoAP-over-UDP endpoint, client and server at once. See the [module
/// documentation](self).
pub struct Endpoint<P> {
    config: EndpointConfig,
    params: TransmissionParams,
    con_lifetime: Option<Duration>,
    non_lifetime: Option<Duration>,
    response_timeout: Duration,
    rng: Box<dyn Entropy + Send>,
    /// Separate source for the algorithms' dithering ([`Endpoint::with_cc_entropy`]);
    /// `None`: `rng`.
    cc_rng: Option<Box<dyn Entropy + Send>>,
    next_mid: u16,
    next_id: u64,
    use_tick: u64,
    peers: BTreeMap<P, PeerState>,
    outs: BTreeMap<u64, Out<P>>,
    by_mid: BTreeMap<(P, u16), u64>,
    by_token: BTreeMap<(P, Token), u64>,
    requests: BTreeMap<RequestId, ClientReq>,
    served: BTreeMap<ServerRequestId, Served<P>>,
    dedup: DedupCache<P>,
    transmits: VecDeque<Transmit<P>>,
    events: VecDeque<Event<P>>,
    records: VecDeque<ExchangeRecord<P>>,
    stats: Stats,
}

impl<P: Peer> Endpoint<P> {
    /// A new endpoint drawing its randomness from `rng`. The first Message ID is random,
    /// later ones are sequential (RFC 7252 §4.4).
    pub fn new(config: EndpointConfig, mut rng: Box<dyn Entropy + Send>) -> Self {
        let params = config.params();
        let (con_lifetime, non_lifetime) = match config.lifetime_mode {
            LifetimeMode::Formula => (Some(params.exchange_lifetime()), Some(params.non_lifetime())),
            LifetimeMode::UntilComplete => (None, None),
        };
        let response_timeout = config.response_timeout.unwrap_or_else(|| params.max_transmit_wait());
        let next_mid = rng.next_u64() as u16;
        Endpoint {
            dedup: DedupCache::new(config.dedup_capacity),
            config,
            params,
            con_lifetime,
            non_lifetime,
            response_timeout,
            rng,
            cc_rng: None,
            next_mid,
            next_id: 1,
            use_tick: 0,
            peers: BTreeMap::new(),
            outs: BTreeMap::new(),
            by_mid: BTreeMap::new(),
            by_token: BTreeMap::new(),
            requests: BTreeMap::new(),
            served: BTreeMap::new(),
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            records: VecDeque::new(),
            stats: Stats::default(),
        }
    }

    /// A new endpoint with a [`SplitMix64`] generator seeded with `seed`.
    pub fn with_seed(config: EndpointConfig, seed: u64) -> Self {
        Endpoint::new(config, Box::new(SplitMix64::new(seed)))
    }

    /// Builder: draw the algorithms' dithering (`start_exchange`) from `rng`, and Message
    /// IDs and tokens only from the endpoint's own source. A simulator uses this to give each
    /// client's algorithm the same dither stream whatever the protocol layer draws.
    pub fn with_cc_entropy(mut self, rng: Box<dyn Entropy + Send>) -> Self {
        self.cc_rng = Some(rng);
        self
    }

    /// The configuration.
    pub fn config(&self) -> &EndpointConfig {
        &self.config
    }

    /// The transmission parameters in force (from the algorithm configuration).
    pub fn params(&self) -> &TransmissionParams {
        &self.params
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        let mut s = self.stats;
        s.dedup_len = self.dedup.len() as u64;
        s.dedup_evicted = self.dedup.evicted;
        s.dedup_expired = self.dedup.expired;
        s
    }

    /// Entries in the deduplication cache now (never more than its capacity).
    pub fn dedup_len(&self) -> usize {
        self.dedup.len()
    }

    /// Capacity of the deduplication cache.
    pub fn dedup_capacity(&self) -> usize {
        self.dedup.capacity()
    }

    /// The congestion-control instance for `peer`, if we have sent it anything confirmable.
    pub fn cc(&self, peer: &P) -> Option<&Algorithm> {
        self.peers.get(peer).map(|p| &p.cc)
    }

    /// Reset the cross-exchange state of `peer`'s algorithm (e.g. at a random client's batch
    /// boundary). Exchanges in flight keep their own records. A peer without algorithm state
    /// gets a fresh instance, reset at `now` (so a reset before the first request has the
    /// same effect as one between requests: algorithms that age their estimators measure
    /// from `now`).
    pub fn reset_cc(&mut self, now: Instant, peer: &P) {
        self.peer_state(peer).cc.reset(now);
    }

    /// Client requests not finished yet.
    pub fn pending_requests(&self) -> usize {
        self.requests.len()
    }

    /// Server requests not answered yet.
    pub fn pending_server_requests(&self) -> usize {
        self.served.len()
    }

    /// `true` when nothing is in flight, queued, unanswered or waiting to be polled.
    pub fn is_idle(&self) -> bool {
        self.outs.is_empty()
            && self.served.is_empty()
            && self.transmits.is_empty()
            && self.events.is_empty()
            && self.requests.is_empty()
    }

    // ----------------------------------------------------------------------------------
    // Public entry points
    // ----------------------------------------------------------------------------------

    /// Send `request` to `peer`. It starts now if `peer` has a free NSTART slot (and its
    /// algorithm's `earliest_start` allows), otherwise it waits in `peer`'s queue. The
    /// outcome arrives as [`Event::Response`] or [`Event::Failed`].
    pub fn request(&mut self, now: Instant, peer: P, request: Request) -> RequestId {
        let id = RequestId(self.fresh_id());
        let block = request.block2_szx.map(|szx| Block { num: 0, more: false, szx: szx.min(6) });
        let msg = build_request(&request, block);
        let con = request.confirmable;
        self.requests.insert(id, ClientReq { template: request, body: Vec::new(), blockwise: false });
        self.enqueue(now, peer, RecordKind::Request(id), msg, con, false);
        self.pump(now);
        id
    }

    /// Answer server request `id`. Before the piggyback timeout (and before any duplicate
    /// of the request arrived) the response rides in the ACK; after the Empty ACK it is
    /// sent as a separate CON (retransmitted under congestion control). NON requests get a
    /// NON response. Large payloads are sliced per the request's Block2 option and
    /// [`EndpointConfig::block_szx`].
    pub fn respond(&mut self, now: Instant, id: ServerRequestId, response: Response) -> Result<(), UnknownRequest> {
        let s = self.served.remove(&id).ok_or(UnknownRequest(id))?;
        let msg = self.build_response(&s, response);
        if s.con && !s.acked {
            let mut m = msg;
            m.mtype = MessageType::Ack;
            m.message_id = s.mid;
            self.dedup.update(&s.peer, s.mid, Cached::Reply(m.clone()));
            self.send(s.peer, &m);
        } else if s.con {
            let mut m = msg;
            m.mtype = MessageType::Con;
            self.enqueue(now, s.peer, RecordKind::SeparateResponse(id), m, true, false);
        } else {
            let mut m = msg;
            m.mtype = MessageType::Non;
            m.message_id = self.alloc_mid(&s.peer);
            self.dedup.update(&s.peer, s.mid, Cached::Silent);
            self.send(s.peer, &m);
        }
        self.pump(now);
        Ok(())
    }

    /// Acknowledge server request `id` with an Empty ACK now, so that its response will be
    /// separate. No-op for NON requests and requests already acknowledged.
    pub fn defer(&mut self, id: ServerRequestId) -> Result<(), UnknownRequest> {
        let s = self.served.get(&id).ok_or(UnknownRequest(id))?;
        if s.con && !s.acked {
            self.send_empty_ack(id);
        }
        Ok(())
    }

    /// Process one received datagram from `peer`.
    pub fn handle_datagram(&mut self, now: Instant, peer: P, datagram: &[u8]) {
        self.stats.datagrams_in += 1;
        self.dedup.expire(now);
        let msg = match Message::decode(datagram) {
            Ok(m) => m,
            Err(_) => {
                self.stats.malformed += 1;
                // RFC 7252 §4.2: a CON with a message format error is rejected with RST
                // when the header is readable; everything else is silently dropped.
                if let Ok(h) = peek_header(datagram) {
                    if h.mtype == MessageType::Con {
                        self.send_rst(peer, h.message_id);
                    }
                }
                return;
            }
        };
        match msg.mtype {
            MessageType::Con | MessageType::Non => {
                if msg.code.is_empty() {
                    // CoAP ping (RFC 7252 §4.3) gets RST; an Empty NON is meaningless.
                    if msg.mtype == MessageType::Con {
                        self.send_rst(peer, msg.message_id);
                    } else {
                        self.stats.malformed += 1;
                    }
                } else if let Some(cached) = self.dedup.get(&peer, msg.message_id).cloned() {
                    self.handle_duplicate(peer, msg, cached);
                } else if msg.code.is_request() {
                    self.handle_request(now, peer, msg);
                } else {
                    self.handle_separate_response(now, peer, msg);
                }
            }
            MessageType::Ack => self.handle_ack(now, peer, msg),
            MessageType::Rst => self.handle_rst(now, peer, msg),
        }
        self.pump(now);
    }

    /// The next datagram to send, if any. Send it now.
    pub fn poll_transmit(&mut self, _now: Instant) -> Option<Transmit<P>> {
        self.transmits.pop_front()
    }

    /// When [`Endpoint::handle_timeout`] must be called next (`None`: only on new input).
    pub fn poll_timeout(&self) -> Option<Instant> {
        let outs = self.outs.values().filter_map(|o| match o.state {
            OutState::WaitAck { deadline } | OutState::WaitResponse { deadline } => Some(deadline),
            OutState::Queued => None,
        });
        let served = self.served.values().filter_map(|s| s.deadline);
        let wakes = self.peers.values().filter_map(|p| p.wake);
        outs.chain(served).chain(wakes).min()
    }

    /// Process every timer due at `now`: retransmissions, give-ups, response timeouts,
    /// Empty ACKs for slow server requests, paced starts.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.dedup.expire(now);
        let due: Vec<u64> = self
            .outs
            .iter()
            .filter(|(_, o)| match o.state {
                OutState::WaitAck { deadline } | OutState::WaitResponse { deadline } => deadline <= now,
                OutState::Queued => false,
            })
            .map(|(x, _)| *x)
            .collect();
        for xid in due {
            self.on_out_timer(now, xid);
        }
        let slow: Vec<ServerRequestId> =
            self.served.iter().filter(|(_, s)| s.deadline.is_some_and(|d| d <= now)).map(|(id, _)| *id).collect();
        for id in slow {
            self.send_empty_ack(id);
        }
        self.pump(now);
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<Event<P>> {
        self.events.pop_front()
    }

    /// The next finished-exchange record, if any (only with
    /// [`EndpointConfig::record_exchanges`]).
    pub fn poll_record(&mut self) -> Option<ExchangeRecord<P>> {
        self.records.pop_front()
    }

    // ----------------------------------------------------------------------------------
    // Server side
    // ----------------------------------------------------------------------------------

    fn lifetime(&self, now: Instant, con: bool) -> Option<Instant> {
        let d = if con { self.con_lifetime } else { self.non_lifetime };
        d.map(|d| now + d)
    }

    fn handle_duplicate(&mut self, peer: P, msg: Message, cached: Cached) {
        self.stats.duplicates += 1;
        if msg.mtype != MessageType::Con {
            return;
        }
        match cached {
            Cached::Pending(id) => {
                // A retransmission while the application is still working: acknowledge at
                // once so the client stops retransmitting; the response will be separate.
                match self.served.get(&id) {
                    Some(s) if !s.acked => self.send_empty_ack(id),
                    _ => self.send(peer, &Message::empty_ack(msg.message_id)),
                }
            }
            Cached::Reply(mut reply) => {
                if self.config.duplicate_mode == DuplicateMode::AnswerEachCopy && !reply.code.is_empty() {
                    reply.token = msg.token;
                }
                self.send(peer, &reply);
            }
            Cached::Silent => {}
        }
    }

    fn handle_request(&mut self, now: Instant, peer: P, msg: Message) {
        let con = msg.mtype == MessageType::Con;
        let expires = self.lifetime(now, con);
        let id = ServerRequestId(self.fresh_id());
        let block2 = msg.block2();
        let bad = match (&block2, msg.options.first_unknown_critical(known_critical)) {
            (_, Some(n)) => Some(format!("unknown critical option {n}")),
            (Err(_), None) => Some("malformed Block2 option".to_string()),
            _ => None,
        };
        let s = Served {
            peer: peer.clone(),
            mid: msg.message_id,
            token: msg.token,
            con,
            block2: block2.ok().flatten(),
            size2: msg.options.contains(option::SIZE2),
            acked: false,
            deadline: if con { Some(now + self.config.piggyback_timeout) } else { None },
        };
        self.served.insert(id, s);
        self.dedup.insert(peer.clone(), msg.message_id, Cached::Pending(id), expires);
        if let Some(text) = bad {
            self.stats.requests_rejected += 1;
            let _ = self.respond(now, id, Response::new(Code::BAD_OPTION).with_payload(text));
            return;
        }
        self.stats.requests_received += 1;
        self.events.push_back(Event::Request { id, peer, message: msg });
    }

    fn send_empty_ack(&mut self, id: ServerRequestId) {
        if let Some(s) = self.served.get_mut(&id) {
            s.acked = true;
            s.deadline = None;
            let (peer, mid) = (s.peer.clone(), s.mid);
            let ack = Message::empty_ack(mid);
            self.dedup.update(&peer, mid, Cached::Reply(ack.clone()));
            self.send(peer, &ack);
        }
    }

    fn build_response(&self, s: &Served<P>, r: Response) -> Message {
        let mut m = Message::new(MessageType::Ack, r.code, 0).with_token(s.token);
        m.options = r.options;
        m.options.remove(option::BLOCK2);
        let len = r.payload.len();
        let slice = if r.code.is_success() {
            block::slice(len, s.block2, self.config.block_szx, self.config.max_unblocked_payload)
        } else {
            Slice::Whole
        };
        match slice {
            Slice::Whole => m.payload = r.payload,
            Slice::Block(b, range) => {
                let _ = m.set_block2(b);
                if s.size2 || (b.num == 0 && s.block2.is_none()) {
                    m.set_size2(len as u32);
                }
                m.payload = r.payload[range].to_vec();
            }
            Slice::OutOfRange => {
                m.code = Code::BAD_OPTION;
                m.options = Default::default();
                m.payload = b"Block2 out of range".to_vec();
            }
        }
        m
    }

    // ----------------------------------------------------------------------------------
    // Client side: receiving
    // ----------------------------------------------------------------------------------

    fn handle_ack(&mut self, now: Instant, peer: P, msg: Message) {
        let Some(&xid) = self.by_mid.get(&(peer.clone(), msg.message_id)) else {
            self.stats.unmatched += 1;
            return;
        };
        let out = &self.outs[&xid];
        if !matches!(out.state, OutState::WaitAck { .. }) {
            self.stats.unmatched += 1;
            return;
        }
        if msg.code.is_empty() {
            self.ack_cc(now, xid, None);
            let out = self.outs.get_mut(&xid).expect("present");
            self.by_mid.remove(&(peer, msg.message_id));
            match out.kind {
                RecordKind::Request(_) => {
                    out.state = OutState::WaitResponse { deadline: now + self.response_timeout };
                }
                RecordKind::SeparateResponse(_) => {
                    self.finish(now, xid, Outcome::Acknowledged, None);
                }
            }
        } else if msg.code.is_response() && matches!(out.kind, RecordKind::Request(_)) {
            let Some(ordinal) = token_ordinal(out, &msg.token) else {
                self.stats.unmatched += 1;
                return;
            };
            self.ack_cc(now, xid, ordinal);
            let out = self.finish(now, xid, Outcome::Piggybacked, Some((now, msg.code)));
            if let RecordKind::Request(id) = out.kind {
                self.deliver(now, id, out.peer, msg);
            }
        } else {
            self.stats.unmatched += 1;
        }
    }

    fn handle_rst(&mut self, now: Instant, peer: P, msg: Message) {
        let Some(&xid) = self.by_mid.get(&(peer, msg.message_id)) else {
            self.stats.unmatched += 1;
            return;
        };
        self.stats.rst_received += 1;
        let out = &self.outs[&xid];
        if let (Some(ex), OutState::WaitAck { .. }) = (out.cc_ex, out.state) {
            if let Some(p) = self.peers.get_mut(&out.peer) {
                p.cc.on_give_up(now, &ex, GiveUpReason::Reset);
            }
        }
        let out = self.finish(now, xid, Outcome::Failed(FailReason::Reset), None);
        self.fail(out.kind, out.peer, FailReason::Reset);
    }

    fn handle_separate_response(&mut self, now: Instant, peer: P, msg: Message) {
        let con = msg.mtype == MessageType::Con;
        let expires = self.lifetime(now, con);
        let found = self.lookup_token(&peer, &msg.token);
        let Some((xid, ordinal)) = found else {
            // RFC 7252 §4.2/§4.3: a response we cannot match is rejected.
            self.stats.unmatched += 1;
            if con {
                let rst = Message::reset(msg.message_id);
                self.dedup.insert(peer.clone(), msg.message_id, Cached::Reply(rst), expires);
                self.send_rst(peer, msg.message_id);
            } else {
                self.dedup.insert(peer, msg.message_id, Cached::Silent, expires);
            }
            return;
        };
        if con {
            let ack = Message::empty_ack(msg.message_id);
            self.dedup.insert(peer.clone(), msg.message_id, Cached::Reply(ack.clone()), expires);
            self.send(peer, &ack);
        } else {
            self.dedup.insert(peer, msg.message_id, Cached::Silent, expires);
        }
        let out = &self.outs[&xid];
        let outcome = if out.con { Outcome::Separate } else { Outcome::NonResponse };
        if matches!(out.state, OutState::WaitAck { .. }) || !out.con {
            // The response overtook (or replaced) the ACK: it acknowledges the request too.
            // (For a NON request this only records the RTT and frees the NSTART slot.)
            self.ack_cc(now, xid, ordinal);
        }
        let out = self.finish(now, xid, outcome, Some((now, msg.code)));
        if let RecordKind::Request(id) = out.kind {
            self.deliver(now, id, out.peer, msg);
        }
    }

    /// Find the request exchange a response token belongs to, with the copy ordinal it
    /// echoes (copy identification only).
    fn lookup_token(&self, peer: &P, token: &Token) -> Option<(u64, Option<u32>)> {
        if let Some(&xid) = self.by_token.get(&(peer.clone(), *token)) {
            if !self.outs[&xid].copy_id {
                return Some((xid, None));
            }
        }
        let n = token.len();
        if n >= 1 {
            let base = Token::new(&token.as_bytes()[..n - 1]).ok()?;
            if let Some(&xid) = self.by_token.get(&(peer.clone(), base)) {
                let out = &self.outs[&xid];
                if out.copy_id {
                    return token_ordinal(out, token).map(|o| (xid, o));
                }
            }
        }
        None
    }

    /// Report the first ACK of `xid` to its algorithm and free its NSTART slot.
    fn ack_cc(&mut self, now: Instant, xid: u64, ordinal: Option<u32>) {
        let out = self.outs.get_mut(&xid).expect("present");
        out.acked_at = Some(now);
        if let Some(ex) = out.cc_ex {
            let info = match ordinal {
                Some(k) if (k as usize) < out.tx.len() => AckInfo::with_copy(&ex, now, k, out.tx[k as usize].at),
                _ => AckInfo::new(&ex, now),
            };
            out.rtt = Some(info.rtt);
            out.copy = info.copy;
            if let Some(p) = self.peers.get_mut(&out.peer) {
                p.cc.on_ack(now, &ex, &info);
            }
        } else if let Some(first) = out.tx.first() {
            out.rtt = Some(now - first.at);
        }
        if out.holds_slot {
            out.holds_slot = false;
            if let Some(p) = self.peers.get_mut(&out.peer) {
                p.active = p.active.saturating_sub(1);
            }
        }
    }

    /// Hand a response to the request layer: continue a Block2 transfer or report it.
    fn deliver(&mut self, now: Instant, id: RequestId, peer: P, mut msg: Message) {
        let Some(req) = self.requests.get_mut(&id) else {
            return;
        };
        let block = if msg.code.is_success() { msg.block2() } else { Ok(None) };
        match block {
            Ok(Some(b)) => {
                let size = b.block_size();
                let offset = b.num as usize * size;
                if offset != req.body.len() || (b.more && msg.payload.len() != size) || msg.payload.len() > size {
                    self.fail(RecordKind::Request(id), peer, FailReason::BadBlock);
                    return;
                }
                if req.body.len() + msg.payload.len() > self.config.max_body_size {
                    self.fail(RecordKind::Request(id), peer, FailReason::BodyTooLarge);
                    return;
                }
                req.blockwise = true;
                req.body.extend_from_slice(&msg.payload);
                if b.more {
                    if b.num >= Block::MAX_NUM {
                        self.fail(RecordKind::Request(id), peer, FailReason::BadBlock);
                        return;
                    }
                    let next = Block { num: b.num + 1, more: false, szx: b.szx };
                    let m = build_request(&req.template, Some(next));
                    let con = req.template.confirmable;
                    // The follow-up continues the same interaction: it goes first.
                    self.enqueue(now, peer, RecordKind::Request(id), m, con, true);
                    return;
                }
                let req = self.requests.remove(&id).expect("present");
                msg.payload = req.body;
                msg.options.remove(option::BLOCK2);
                self.events.push_back(Event::Response { id, peer, response: msg });
            }
            Ok(None) if req.blockwise && msg.code.is_success() => {
                self.fail(RecordKind::Request(id), peer, FailReason::BadBlock);
            }
            Ok(None) => {
                self.requests.remove(&id);
                self.events.push_back(Event::Response { id, peer, response: msg });
            }
            Err(_) => self.fail(RecordKind::Request(id), peer, FailReason::BadBlock),
        }
    }

    fn fail(&mut self, kind: RecordKind, peer: P, reason: FailReason) {
        match kind {
            RecordKind::Request(id) => {
                if self.requests.remove(&id).is_some() {
                    self.events.push_back(Event::Failed { id, peer, reason });
                }
            }
            RecordKind::SeparateResponse(id) => self.events.push_back(Event::ResponseFailed { id, peer, reason }),
        }
    }

    // ----------------------------------------------------------------------------------
    // Outgoing exchanges
    // ----------------------------------------------------------------------------------

    fn fresh_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    fn peer_state(&mut self, peer: &P) -> &mut PeerState {
        self.use_tick += 1;
        let tick = self.use_tick;
        if !self.peers.contains_key(peer) {
            if self.peers.len() >= self.config.max_peers.max(1) {
                let idle = self
                    .peers
                    .iter()
                    .filter(|(_, p)| p.active == 0 && p.queue.is_empty())
                    .min_by_key(|(_, p)| p.last_used)
                    .map(|(k, _)| k.clone());
                if let Some(k) = idle {
                    self.peers.remove(&k);
                }
            }
            let cc = self.config.cc.build();
            self.peers
                .insert(peer.clone(), PeerState { cc, active: 0, queue: VecDeque::new(), wake: None, last_used: tick });
        }
        let p = self.peers.get_mut(peer).expect("just inserted");
        p.last_used = tick;
        p
    }

    fn enqueue(&mut self, now: Instant, peer: P, kind: RecordKind, msg: Message, con: bool, front: bool) {
        let xid = self.fresh_id();
        let p = self.peer_state(&peer);
        if front {
            p.queue.push_front(xid);
        } else {
            p.queue.push_back(xid);
        }
        self.outs.insert(
            xid,
            Out {
                peer,
                kind,
                msg,
                con,
                copy_id: false,
                state: OutState::Queued,
                cc_ex: None,
                holds_slot: false,
                token_key: None,
                tx: Vec::new(),
                queued_at: now,
                acked_at: None,
                rtt: None,
                copy: None,
            },
        );
    }

    /// Start queued exchanges wherever NSTART and `earliest_start` allow.
    fn pump(&mut self, now: Instant) {
        let nstart = self.config.nstart.max(1);
        let ready: Vec<P> = self
            .peers
            .iter()
            .filter(|(_, p)| !p.queue.is_empty() && p.active < nstart)
            .map(|(k, _)| k.clone())
            .collect();
        for peer in ready {
            loop {
                let p = self.peers.get_mut(&peer).expect("present");
                if p.active >= nstart || p.queue.is_empty() {
                    p.wake = None;
                    break;
                }
                let t = p.cc.earliest_start(now);
                if t > now {
                    p.wake = Some(t);
                    break;
                }
                p.wake = None;
                let xid = p.queue.pop_front().expect("not empty");
                self.start(now, xid);
            }
        }
    }

    fn alloc_mid(&mut self, peer: &P) -> u16 {
        for _ in 0..=u16::MAX as u32 {
            let m = self.next_mid;
            self.next_mid = m.wrapping_add(1);
            if !self.by_mid.contains_key(&(peer.clone(), m)) {
                return m;
            }
        }
        self.next_mid
    }

    fn random_token(&mut self, len: usize) -> Token {
        let bytes = self.rng.next_u64().to_be_bytes();
        Token::new(&bytes[..len.min(8)]).unwrap_or_default()
    }

    fn start(&mut self, now: Instant, xid: u64) {
        let (peer, kind, con) = {
            let o = &self.outs[&xid];
            (o.peer.clone(), o.kind, o.con)
        };
        let mid = self.alloc_mid(&peer);
        let uses_copy_id = self.peers[&peer].cc.uses_copy_id();
        let (copy_id, token_key) = match kind {
            RecordKind::Request(_) => {
                let copy_id = con && uses_copy_id;
                let len = usize::from(self.config.token_len.clamp(1, 8));
                let key_len = if copy_id { len - 1 } else { len };
                let mut key = self.random_token(key_len);
                for _ in 0..16 {
                    if !self.by_token.contains_key(&(peer.clone(), key)) {
                        break;
                    }
                    key = self.random_token(key_len);
                }
                let indexed = !self.by_token.contains_key(&(peer.clone(), key));
                if indexed {
                    self.by_token.insert((peer.clone(), key), xid);
                }
                (copy_id, Some((key, indexed)))
            }
            RecordKind::SeparateResponse(_) => (false, None),
        };
        self.by_mid.insert((peer.clone(), mid), xid);
        let in_flight = self.peers[&peer].active;
        let ex = if con {
            let PeerState { cc, .. } = self.peers.get_mut(&peer).expect("present");
            let rng: &mut dyn Entropy = match &mut self.cc_rng {
                Some(r) => &mut **r,
                None => &mut *self.rng,
            };
            Some(cc.start_exchange(now, in_flight, rng))
        } else {
            None
        };
        let p = self.peers.get_mut(&peer).expect("present");
        p.active += 1;
        let response_timeout = self.response_timeout;
        let out = self.outs.get_mut(&xid).expect("present");
        out.msg.message_id = mid;
        out.msg.mtype = if con { MessageType::Con } else { MessageType::Non };
        out.copy_id = copy_id;
        out.holds_slot = true;
        if let Some((key, indexed)) = token_key {
            out.msg.token = wire_token(key, copy_id, 0);
            out.token_key = indexed.then_some(key);
        }
        out.cc_ex = ex;
        let timeout = ex.map(|e| e.timer());
        out.state = match timeout {
            Some(t) => OutState::WaitAck { deadline: now + t },
            None => OutState::WaitResponse { deadline: now + response_timeout },
        };
        out.tx.push(TransmissionRecord { ordinal: 0, at: now, timeout });
        let msg = out.msg.clone();
        self.send(peer, &msg);
    }

    fn on_out_timer(&mut self, now: Instant, xid: u64) {
        let Some(out) = self.outs.get_mut(&xid) else {
            return;
        };
        match out.state {
            OutState::WaitAck { .. } => {
                let Some(mut ex) = out.cc_ex else { return };
                let p = self.peers.get_mut(&out.peer).expect("peer of an active exchange");
                match p.cc.on_timeout(now, &mut ex) {
                    TimeoutAction::Retransmit(t) => {
                        out.cc_ex = Some(ex);
                        let k = ex.retransmissions();
                        let mut copy = out.msg.clone();
                        if out.copy_id {
                            copy.token = wire_token(base_of(&out.msg.token), true, k);
                        }
                        out.tx.push(TransmissionRecord { ordinal: k, at: now, timeout: Some(t) });
                        out.state = OutState::WaitAck { deadline: now + t };
                        let peer = out.peer.clone();
                        self.stats.retransmissions += 1;
                        self.send(peer, &copy);
                    }
                    TimeoutAction::GiveUp => {
                        p.cc.on_give_up(now, &ex, GiveUpReason::Timeout);
                        let out = self.finish(now, xid, Outcome::Failed(FailReason::Timeout), None);
                        self.fail(out.kind, out.peer, FailReason::Timeout);
                    }
                }
            }
            OutState::WaitResponse { .. } => {
                let out = self.finish(now, xid, Outcome::Failed(FailReason::ResponseTimeout), None);
                self.fail(out.kind, out.peer, FailReason::ResponseTimeout);
            }
            OutState::Queued => {}
        }
    }

    /// Remove a finished exchange, free its slot and indexes, and record it.
    fn finish(&mut self, now: Instant, xid: u64, outcome: Outcome, response: Option<(Instant, Code)>) -> Out<P> {
        let out = self.outs.remove(&xid).expect("finishing a known exchange");
        if self.by_mid.get(&(out.peer.clone(), out.msg.message_id)) == Some(&xid) {
            self.by_mid.remove(&(out.peer.clone(), out.msg.message_id));
        }
        if let Some(key) = out.token_key {
            if self.by_token.get(&(out.peer.clone(), key)) == Some(&xid) {
                self.by_token.remove(&(out.peer.clone(), key));
            }
        }
        let p = self.peers.get_mut(&out.peer);
        if let Some(p) = p {
            if out.holds_slot {
                p.active = p.active.saturating_sub(1);
            }
            if self.config.record_exchanges {
                let block2 = match out.kind {
                    RecordKind::Request(_) => out.msg.block2().ok().flatten(),
                    RecordKind::SeparateResponse(_) => None,
                };
                self.records.push_back(ExchangeRecord {
                    kind: out.kind,
                    peer: out.peer.clone(),
                    message_id: out.msg.message_id,
                    token: out.msg.token,
                    confirmable: out.con,
                    block2,
                    algorithm: p.cc.name(),
                    queued_at: out.queued_at,
                    transmissions: out.tx.clone(),
                    acked_at: out.acked_at,
                    response_at: response.map(|r| r.0),
                    rtt: out.rtt,
                    copy: out.copy,
                    response_code: response.map(|r| r.1),
                    outcome,
                    finished_at: now,
                    snapshot: p.cc.snapshot(),
                });
            }
        }
        out
    }

    // ----------------------------------------------------------------------------------
    // Output
    // ----------------------------------------------------------------------------------

    fn send(&mut self, peer: P, msg: &Message) {
        self.stats.datagrams_out += 1;
        self.transmits.push_back(Transmit { peer, bytes: msg.to_bytes() });
    }

    fn send_rst(&mut self, peer: P, mid: u16) {
        self.stats.rst_sent += 1;
        self.send(peer, &Message::reset(mid));
    }
}

/// The request message for `template`, with Block2 `block` if any (Message ID and token are
/// set when the exchange starts).
fn build_request(template: &Request, block: Option<Block>) -> Message {
    let mtype = if template.confirmable { MessageType::Con } else { MessageType::Non };
    let mut m = Message::new(mtype, template.method, 0);
    m.options = template.options.clone();
    m.options.remove(option::BLOCK2);
    if let Some(b) = block {
        let _ = m.set_block2(b);
    }
    m.payload = template.payload.clone();
    m
}

/// The token of copy `ordinal`: `key` itself, or `key` followed by the ordinal byte.
fn wire_token(key: Token, copy_id: bool, ordinal: u32) -> Token {
    if !copy_id {
        return key;
    }
    let mut b = key.as_bytes().to_vec();
    b.push(ordinal.min(255) as u8);
    Token::new(&b).unwrap_or(key)
}

/// The token without its last (ordinal) byte.
fn base_of(token: &Token) -> Token {
    let b = token.as_bytes();
    Token::new(&b[..b.len().saturating_sub(1)]).unwrap_or_default()
}

/// Does `token` answer `out`? `Some(None)`: yes, no copy identification; `Some(Some(k))`:
/// yes, it echoes copy `k`; `None`: it belongs to something else.
fn token_ordinal<P>(out: &Out<P>, token: &Token) -> Option<Option<u32>> {
    if !out.copy_id {
        return (*token == out.msg.token).then_some(None);
    }
    let sent = out.msg.token.as_bytes();
    let got = token.as_bytes();
    if got.len() != sent.len() || got.is_empty() || got[..got.len() - 1] != sent[..sent.len() - 1] {
        return None;
    }
    let k = u32::from(got[got.len() - 1]);
    ((k as usize) < out.tx.len()).then_some(Some(k))
}
