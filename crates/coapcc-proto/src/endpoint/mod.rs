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
mod block1;
mod client;
mod config;
mod dedup;
mod echo;
mod entropy;
mod factory;
mod hash;
mod index;
pub mod lifecycle;
mod limits;
pub mod observe;
mod outgoing;
mod peerset;
mod server;
#[cfg(test)]
mod tests;
mod timers;
pub mod transfers;
mod types;

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Debug;
use std::hash::Hash;

use std::sync::Arc;

use coapcc_cc::{CongestionControl, Entropy, Instant, SplitMix64};
use core::time::Duration;

pub use block::accept_block2;
pub use config::{DuplicateMode, EndpointConfig, LifetimeMode, TransmissionParams};
pub use echo::ECHO;
pub use observe::{Observers, Registered};
pub use transfers::{TransferLimits, TransferStats, Transfers};
pub use types::{
    Event, ExchangeRecord, FailReason, Outcome, RecordKind, Request, RequestId, Response, ServerRequestId, Stats,
    TransmissionRecord, Transmit, TransmitKind,
};

use dedup::DedupCache;
pub use factory::{Controller, ControllerFactory, FnFactory};
use hash::IdTable;
pub use lifecycle::{ConExchange, Expiry};
use timers::{TimerKey, Timers};

use crate::option;
use crate::{peek_header, Block, Message, MessageRef, MessageType, Token};

/// What a peer address type must offer: cloneable, totally ordered (state that is walked
/// is kept in ordered maps, so runs are deterministic), hashable (the indexes that are only
/// looked up are hash tables with a fixed hasher, never iterated) and printable.
pub trait Peer: Clone + Ord + Hash + Debug {}
impl<T: Clone + Ord + Hash + Debug> Peer for T {}

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
/// option is rejected with 4.02 Bad Option (RFC 7252 §5.4.1).
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
            | option::BLOCK1
    )
}

/// The first critical option of a request that the request layer does not understand, if
/// any: such a request is answered 4.02 Bad Option (RFC 7252 §5.4.1), over UDP by the
/// [`Endpoint`] and over TCP by `coapcc-net`'s server (the same rule for both).
pub fn unknown_critical_option(options: &crate::Options) -> Option<u16> {
    options.iter().map(|o| o.number).find(|&n| option::is_critical(n) && !known_critical(n))
}

/// Per-peer congestion-control and NSTART state.
// `repr(C)`: the algorithm first, next to the peer's key (a retransmission reads only the
// algorithm), then the NSTART state.
#[repr(C)]
struct PeerState {
    cc: Controller,
    /// Exchanges holding an NSTART slot, and those waiting for one, in order.
    slots: lifecycle::Nstart<VecDeque<u64>>,
    /// `cc.earliest_start` of the queue head, when it lies in the future.
    wake: Option<Instant>,
    /// For least-recently-used eviction.
    last_used: u64,
}

impl PeerState {
    /// Record the pacing wake-up an admission asks for (at `WaitUntil`'s instant; none
    /// otherwise); returns the previous one and the new one, for [`Timers::rearm`].
    #[inline]
    fn set_wake<T>(&mut self, admission: &lifecycle::Admission<T>) -> (Option<Instant>, Option<Instant>) {
        let new = match admission {
            lifecycle::Admission::WaitUntil(t) => Some(*t),
            _ => None,
        };
        (core::mem::replace(&mut self.wake, new), new)
    }
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

impl OutState {
    /// The armed timer, if any.
    fn deadline(self) -> Option<Instant> {
        match self {
            OutState::Queued => None,
            OutState::WaitAck { deadline } | OutState::WaitResponse { deadline } => Some(deadline),
        }
    }
}

/// One outgoing message-layer exchange: a CON or NON request, or a server's CON separate
/// response.
// `repr(C)`: what a retransmission reads and writes first, together (the state, the
// reliability state, the counters, the peer and flags, the encoding: three cache lines with
// the table entry's key before them), then what the acknowledgement writes, then what only
// starting the exchange and exchange records read.
#[repr(C)]
struct Out<P> {
    state: OutState,
    /// The reliability state of a CON (`None` for NON).
    con_ex: Option<ConExchange>,
    /// Copies sent so far.
    sent: u32,
    peer: P,
    /// Every transmission is kept in `tx` (copy identification, which needs each copy's
    /// time, or exchange records).
    keep_tx: bool,
    /// Copy identification: the last token byte is the transmission ordinal.
    copy_id: bool,
    /// What `msg` is, as a datagram (set at start).
    tkind: TransmitKind,
    con: bool,
    holds_slot: bool,
    /// Its encoding, kept at start: a retransmission copies it (and patches the token's
    /// ordinal byte) instead of encoding again.
    wire: crate::small::SmallBytes,
    kind: RecordKind,
    /// Key in `by_token` (requests only).
    token_key: Option<Token>,
    acked_at: Option<Instant>,
    rtt: Option<Duration>,
    copy: Option<coapcc_cc::CopyAck>,
    /// Every transmission, kept only when something reads it (`keep_tx`).
    tx: Vec<TransmissionRecord>,
    /// When copy 0 was sent.
    started: Instant,
    /// The message as sent for copy 0 (Message ID and token set at start).
    msg: Message,
    queued_at: Instant,
}

/// A client request (one or more exchanges, for Block2).
struct ClientReq {
    template: Request,
    body: Vec<u8>,
    /// Whether the transfer is block-wise (a response carried Block2).
    blockwise: bool,
    /// The Block2 option of the latest request sent (to repeat it with an Echo value).
    block: Option<Block>,
    /// Blocks received so far.
    blocks: u32,
    /// Times the request was repeated with a server's Echo value.
    echo_retries: u8,
    /// The Block1 transfer of the payload, while it runs.
    upload: Option<block1::Outgoing>,
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
    /// Size of the request datagram (for the amplification limit).
    request_len: usize,
    /// GET or FETCH (answers of other methods are never replaced by an Echo challenge).
    safe: bool,
    /// The last Block1 option of a reassembled request (echoed in the response).
    block1: Option<Block>,
}

/// Copies of [`EndpointConfig`]'s fields that every exchange reads (the configuration is
/// never changed after [`Endpoint::new`]). Packed (6 bytes): it fills the padding after the
/// Message ID counter, so no later field moves.
#[derive(Clone, Copy)]
#[repr(C, packed)]
struct HotConfig {
    nstart: u32,
    token_len: u8,
    record_exchanges: bool,
}

/// A sans-IO CoAP-over-UDP endpoint, client and server at once. See the [module
/// documentation](self).
// `repr(C)`: the fields keep this order, so that what every datagram and wake-up of a
// client touches (timers, its exchange, the output queues, the counters) shares a few
// cache lines (a simulator interleaves hundreds of endpoints, whose state is cold each
// time one comes back); the rarely used state follows. Aligned to a cache line, so that
// where the lines fall does not depend on where the allocator put it.
#[repr(C, align(64))]
pub struct Endpoint<P> {
    /// Every armed timer (exchanges, unanswered requests, paced peers), ordered.
    timers: Timers<P>,
    outs: IdTable<u64, Out<P>>,
    peers: peerset::PeerMap<P, PeerState>,
    /// Exchanges waiting for an ACK or RST, by (peer, our Message ID).
    by_mid: index::OneOrTable<(P, u16), u64>,
    transmits: VecDeque<Transmit<P>>,
    events: VecDeque<Event<P>>,
    /// Datagram buffers given back ([`Endpoint::recycle`]), encoded into before allocating.
    spare: Vec<Vec<u8>>,
    /// Peers with a non-empty NSTART queue (so that starting exchanges never scans every
    /// peer).
    queued_peers: peerset::PeerSet<P>,
    /// Received CON/NON by (peer, Message ID), and each peer's pending server requests.
    dedup: DedupCache<P>,
    stats: Stats,
    next_mid: u16,
    /// The configuration every exchange reads, copied next to the Message ID counter (in
    /// what was its padding), so that starting and finishing an exchange reads no line of
    /// `config`.
    hot: HotConfig,
    next_id: u64,
    use_tick: u64,
    /// Request exchanges by (peer, token key).
    by_token: IdTable<(P, Token), u64>,
    requests: IdTable<RequestId, ClientReq>,
    served: IdTable<ServerRequestId, Served<P>>,
    rng: entropy::Source,
    /// Separate source for the algorithms' dithering ([`Endpoint::with_cc_entropy`]);
    /// `None`: `rng`.
    cc_rng: Option<entropy::Source>,
    /// Transmission lists of finished exchanges, kept for their allocation.
    spare_tx: Vec<Vec<TransmissionRecord>>,
    /// The payload buffer of the last piggybacked response, kept for its allocation.
    payload_spare: Vec<u8>,
    /// Scratch list of `pump` (peers that may start an exchange).
    ready_scratch: Vec<P>,
    response_timeout: Duration,
    con_lifetime: Option<Duration>,
    non_lifetime: Option<Duration>,
    config: EndpointConfig,
    params: TransmissionParams,
    /// Where per-peer algorithm instances come from ([`Endpoint::with_controller`]);
    /// `None`: [`EndpointConfig::cc`].
    factory: Option<Arc<dyn ControllerFactory>>,
    /// Scratch lists of [`Endpoint::handle_timeout`] (kept for their allocation).
    due_scratch: Vec<u64>,
    slow_scratch: Vec<ServerRequestId>,
    /// Secret of the Echo values (drawn only when the amplification limit is on).
    echo_key: u64,
    /// Peers that echoed our Echo value, and their order for eviction.
    verified: std::collections::BTreeSet<P>,
    verified_order: VecDeque<P>,
    /// Block1 uploads being received and representations kept for Block2 follow-ups, by
    /// peer and request, bounded.
    transfers: Transfers<P>,
    /// Requests that may change state, not answered yet: the key their block-wise answer is
    /// kept under ([`transfers::resource_key`]).
    keep_keys: BTreeMap<ServerRequestId, Vec<u8>>,
    /// Registered observers by (peer, token), within the per-peer and global limits.
    observers: Observers<P, ServerRequestId>,
    /// Registered observers (server role), by registering request.
    observations: BTreeMap<ServerRequestId, observe::Observation<P>>,
    /// Outgoing CON notifications: exchange -> observation.
    notifications: BTreeMap<u64, ServerRequestId>,
    /// Requests we observe (client role): (server, token) -> request.
    observing: BTreeMap<(P, Token), RequestId>,
    records: VecDeque<ExchangeRecord<P>>,
}

impl<P: Peer> Endpoint<P> {
    /// A new endpoint drawing its randomness from `rng`. The first Message ID is random,
    /// later ones are sequential (RFC 7252 §4.4).
    pub fn new(config: EndpointConfig, rng: Box<dyn Entropy + Send>) -> Self {
        Endpoint::from_source(config, entropy::Source::Boxed(rng))
    }

    /// [`Endpoint::new`] with a [`SplitMix64`] generator, kept in the endpoint itself (no
    /// separate allocation to reach at every exchange); the same streams as
    /// `Endpoint::new(config, Box::new(rng))`.
    pub fn with_split_mix(config: EndpointConfig, rng: SplitMix64) -> Self {
        Endpoint::from_source(config, entropy::Source::SplitMix(rng))
    }

    fn from_source(config: EndpointConfig, mut rng: entropy::Source) -> Self {
        // Drawn first and only when needed, so that configurations without the limit keep
        // their Message ID and token streams.
        let echo_key = if config.amplification_limit.is_some() { rng.next_u64() } else { 0 };
        let params = config.params();
        let (con_lifetime, non_lifetime) = match config.lifetime_mode {
            LifetimeMode::Formula => (Some(params.exchange_lifetime()), Some(params.non_lifetime())),
            LifetimeMode::UntilComplete => (None, None),
        };
        let response_timeout = config.response_timeout.unwrap_or_else(|| params.max_transmit_wait());
        let next_mid = rng.next_u64() as u16;
        let hot =
            HotConfig { nstart: config.nstart, token_len: config.token_len, record_exchanges: config.record_exchanges };
        Endpoint {
            echo_key,
            verified: Default::default(),
            verified_order: VecDeque::new(),
            transfers: Transfers::new(config.transfers),
            keep_keys: BTreeMap::new(),
            observers: Observers::new(config.max_observations, config.max_observations_per_peer),
            observations: BTreeMap::new(),
            notifications: BTreeMap::new(),
            observing: BTreeMap::new(),
            dedup: DedupCache::new(config.dedup_capacity),
            due_scratch: Vec::new(),
            slow_scratch: Vec::new(),
            ready_scratch: Vec::new(),
            config,
            params,
            con_lifetime,
            non_lifetime,
            response_timeout,
            rng,
            cc_rng: None,
            factory: None,
            next_mid,
            hot,
            next_id: 1,
            use_tick: 0,
            peers: peerset::PeerMap::new(),
            timers: Timers::new(),
            queued_peers: peerset::PeerSet::new(),
            outs: IdTable::default(),
            by_mid: Default::default(),
            by_token: IdTable::default(),
            requests: IdTable::default(),
            served: IdTable::default(),
            transmits: VecDeque::new(),
            spare: Vec::new(),
            spare_tx: Vec::new(),
            payload_spare: Vec::new(),
            events: VecDeque::new(),
            records: VecDeque::new(),
            stats: Stats::default(),
        }
    }

    /// A new endpoint with a [`SplitMix64`] generator seeded with `seed`.
    pub fn with_seed(config: EndpointConfig, seed: u64) -> Self {
        Endpoint::with_split_mix(config, SplitMix64::new(seed))
    }

    /// Builder: draw the algorithms' dithering (`start_exchange`) from `rng`, and Message
    /// IDs and tokens only from the endpoint's own source. A simulator uses this to give each
    /// client's algorithm the same dither stream whatever the protocol layer draws.
    pub fn with_cc_entropy(mut self, rng: Box<dyn Entropy + Send>) -> Self {
        self.cc_rng = Some(entropy::Source::Boxed(rng));
        self
    }

    /// [`Endpoint::with_cc_entropy`] with a [`SplitMix64`] generator, kept in the endpoint
    /// itself; the same stream as `with_cc_entropy(Box::new(rng))`.
    pub fn with_cc_split_mix(mut self, rng: SplitMix64) -> Self {
        self.cc_rng = Some(entropy::Source::SplitMix(rng));
        self
    }

    /// Builder: time retransmissions with instances from `factory` (one per peer) instead
    /// of [`EndpointConfig::cc`], e.g. an algorithm written outside the registry. The
    /// transmission parameters that derive lifetimes and the response timeout
    /// ([`Endpoint::params`]) still come from [`EndpointConfig::cc`]; MAX_RETRANSMIT and every
    /// timer come from the factory's instances.
    pub fn with_controller(mut self, factory: Arc<dyn ControllerFactory>) -> Self {
        self.factory = Some(factory);
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
        s.timers_armed = self.timers.len() as u64;
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
    pub fn cc(&self, peer: &P) -> Option<&Controller> {
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

    /// Process one received datagram from `peer`.
    pub fn handle_datagram(&mut self, now: Instant, peer: P, datagram: &[u8]) {
        // Checked here too, so that an ACK does not even enter the general dispatch's frame.
        if type_bits_say_ack(datagram) {
            return self.handle_ack_datagram(now, peer, datagram);
        }
        self.handle_datagram_with(now, peer, datagram, &mut |_| None);
    }

    /// Count `datagram`, expire the deduplication cache and decode it; `None` if it is
    /// malformed (then handled as such). The common start of every datagram's path.
    #[inline(always)]
    fn receive<'d>(&mut self, now: Instant, peer: &P, datagram: &'d [u8]) -> Option<MessageRef<'d>> {
        self.stats.datagrams_in += 1;
        self.dedup.expire(now);
        match MessageRef::decode(datagram) {
            Ok(m) => Some(m),
            Err(_) => {
                self.malformed(peer.clone(), datagram);
                None
            }
        }
    }

    /// A datagram whose type bits say ACK (the datagram a client receives most: responses
    /// and their late copies): its own, shorter path, out of line.
    #[inline(never)]
    fn handle_ack_datagram(&mut self, now: Instant, peer: P, datagram: &[u8]) {
        if let Some(msg) = self.receive(now, &peer, datagram) {
            debug_assert_eq!(msg.mtype, MessageType::Ack);
            self.handle_ack(now, peer, msg);
            self.pump(now);
        }
    }

    /// [`Endpoint::handle_datagram`] for a server that can answer some requests at once (a
    /// static resource, a simulated server without processing delay): a new request for
    /// which `respond` returns a response is answered inside the call, exactly as
    /// [`Endpoint::respond_ref`] would answer its [`Event::Request`] right after the call
    /// (the same datagrams, duplicate-cache entry and statistics), and no event is reported
    /// for it. `respond` is called at most once per call, for a new request that passed the option
    /// checks and carries no Block1 option; `None` reports the request as usual.
    pub fn handle_datagram_with<'r>(
        &mut self,
        now: Instant,
        peer: P,
        datagram: &[u8],
        respond: &mut dyn FnMut(&Message) -> Option<&'r Response>,
    ) {
        if type_bits_say_ack(datagram) {
            return self.handle_ack_datagram(now, peer, datagram);
        }
        let Some(msg) = self.receive(now, &peer, datagram) else { return };
        match msg.mtype {
            MessageType::Con | MessageType::Non => {
                if msg.code.is_empty() {
                    // CoAP ping (RFC 7252 §4.3) gets RST; an Empty NON is meaningless.
                    if msg.mtype == MessageType::Con {
                        self.send_rst(peer, msg.message_id);
                    } else {
                        self.stats.malformed += 1;
                    }
                } else {
                    let rules = lifecycle::DuplicateRules {
                        mode: self.config.duplicate_mode,
                        max_replies: self.config.max_duplicate_replies,
                    };
                    let key = (peer, msg.message_id);
                    let con = msg.mtype == MessageType::Con;
                    let (arrival, entry) = lifecycle::classify_entry(&mut self.dedup, rules, &key, con, msg.token);
                    let replay = match (arrival, entry) {
                        (lifecycle::Arrival::Duplicate(lifecycle::DuplicateAnswer::Replay { echo }), Some(e)) => {
                            // Into a recycled buffer, if the entry holds a reply.
                            match e.reply() {
                                Some(r) => {
                                    let mut buf = self.buffer();
                                    self.dedup.replay(&r, echo, &mut buf);
                                    Some((buf, r.kind()))
                                }
                                None => None,
                            }
                        }
                        _ => None,
                    };
                    let peer = key.0;
                    match arrival {
                        lifecycle::Arrival::Duplicate(answer) => {
                            self.handle_duplicate(peer, msg.message_id, answer, replay)
                        }
                        lifecycle::Arrival::New if msg.code.is_request() => {
                            self.handle_request(now, peer, msg.to_message(), respond)
                        }
                        lifecycle::Arrival::New => self.handle_separate_response(now, peer, msg.to_message()),
                    }
                }
            }
            // Not reached: the type bits said ACK above.
            MessageType::Ack => self.handle_ack(now, peer, msg),
            MessageType::Rst => self.handle_rst(now, peer, msg.message_id),
        }
        self.pump(now);
    }

    /// A datagram that does not decode. RFC 7252 §4.2: a CON with a message format error is
    /// rejected with RST when the header is readable; everything else is silently dropped.
    #[cold]
    #[inline(never)]
    fn malformed(&mut self, peer: P, datagram: &[u8]) {
        self.stats.malformed += 1;
        if let Ok(h) = peek_header(datagram) {
            if h.mtype == MessageType::Con {
                self.send_rst(peer, h.message_id);
            }
        }
    }

    /// The next datagram to send, if any. Send it now.
    pub fn poll_transmit(&mut self, _now: Instant) -> Option<Transmit<P>> {
        self.transmits.pop_front()
    }

    /// Give back a datagram buffer: a received datagram once [`Endpoint::handle_datagram`]
    /// returned, or a [`Transmit`]'s bytes once sent. Later datagrams are encoded into it
    /// instead of a new allocation (a driver that never recycles loses nothing but that).
    /// At most [`Endpoint::SPARE_BUFFERS`] are kept.
    pub fn recycle(&mut self, mut buffer: Vec<u8>) {
        if self.spare.len() < Self::SPARE_BUFFERS && buffer.capacity() > 0 {
            buffer.clear();
            self.spare.push(buffer);
        }
    }

    /// How many buffers [`Endpoint::recycle`] keeps.
    pub const SPARE_BUFFERS: usize = 8;

    /// An empty buffer to encode a datagram into: a recycled one if any.
    pub(super) fn buffer(&mut self) -> Vec<u8> {
        self.spare.pop().unwrap_or_default()
    }

    /// `true` when a datagram or an event waits to be polled ([`Endpoint::poll_transmit`],
    /// [`Endpoint::poll_event`]). With [`Endpoint::poll_timeout`], it tells a driver whether
    /// an input changed anything it must act on (most late copies of a response change
    /// nothing).
    pub fn has_output(&self) -> bool {
        !self.transmits.is_empty() || !self.events.is_empty()
    }

    /// When [`Endpoint::handle_timeout`] must be called next (`None`: only on new input).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next()
    }

    /// Process every timer due at `now`: retransmissions, give-ups, response timeouts,
    /// Empty ACKs for slow server requests, paced starts.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.dedup.expire(now);
        // The common case, one exchange's timer due alone: no lists to fill and sort.
        match self.timers.single_due_out(now) {
            Some(xid) => self.on_out_timer(now, xid),
            None => self.handle_due_timers(now),
        }
        self.pump(now);
    }

    /// [`Endpoint::handle_timeout`]'s general case: every timer due at `now`.
    #[inline(never)]
    fn handle_due_timers(&mut self, now: Instant) {
        // Exchanges first, then unanswered requests, each in id order (the lists reuse
        // their allocation from call to call).
        let mut due = core::mem::take(&mut self.due_scratch);
        let mut slow = core::mem::take(&mut self.slow_scratch);
        self.timers.due(now, |k| match k {
            TimerKey::Out(x) => due.push(*x),
            TimerKey::Served(id) => slow.push(*id),
            TimerKey::Wake(_) => {}
        });
        due.sort_unstable();
        slow.sort_unstable();
        for &xid in &due {
            self.on_out_timer(now, xid);
        }
        slow.retain(|id| self.served.get(id).is_some_and(|s| s.deadline.is_some_and(|d| d <= now)));
        for &id in &slow {
            self.send_empty_ack(id);
        }
        due.clear();
        slow.clear();
        self.due_scratch = due;
        self.slow_scratch = slow;
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
    // Output
    // ----------------------------------------------------------------------------------

    pub(super) fn send(&mut self, peer: P, msg: &Message) {
        let mut b = self.buffer();
        msg.encode(&mut b);
        self.send_bytes(peer, b, transmit_kind(msg));
    }

    /// Queue an encoded datagram of `kind` for `peer`.
    pub(super) fn send_bytes(&mut self, peer: P, bytes: Vec<u8>, kind: TransmitKind) {
        self.stats.datagrams_out += 1;
        self.transmits.push_back(Transmit { peer, bytes, kind, echoed: None });
    }

    #[cold]
    #[inline(never)]
    pub(super) fn send_rst(&mut self, peer: P, mid: u16) {
        self.stats.rst_sent += 1;
        self.send(peer, &Message::reset(mid));
    }
}

/// What a datagram carrying `msg` is.
/// Whether a datagram's type bits say ACK (whether it is well formed is checked later).
#[inline(always)]
fn type_bits_say_ack(datagram: &[u8]) -> bool {
    datagram.first().is_some_and(|&b| MessageType::from_bits(b >> 4) == MessageType::Ack)
}

fn transmit_kind(msg: &Message) -> TransmitKind {
    transmit_kind_of(msg.mtype, msg.code)
}

/// [`transmit_kind`] of a message of type `mtype` and code `code`.
fn transmit_kind_of(mtype: MessageType, code: crate::Code) -> TransmitKind {
    if code.is_request() {
        TransmitKind::Request
    } else if code.is_response() {
        TransmitKind::Response
    } else if mtype == MessageType::Rst {
        TransmitKind::Reset
    } else {
        TransmitKind::EmptyAck
    }
}
