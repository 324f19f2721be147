//! The values that cross the endpoint's interface: requests and responses the application
//! hands in, datagrams and events it pulls out, per-exchange records and counters.

use core::fmt;
use core::time::Duration;

use coapcc_cc::{CopyAck, Instant, Snapshot};

use crate::{Block, Code, Message, Options, Token};

/// Identifies a request this endpoint sent as a client (unique per endpoint).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(pub u64);

/// Identifies a request this endpoint received as a server (unique per endpoint).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServerRequestId(pub u64);

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for ServerRequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A request to send as a client. The endpoint adds Message ID, token and (for block-wise
/// transfers) the Block2 option.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Method code (GET, POST, PUT, DELETE, ...).
    pub method: Code,
    /// Options (Uri-Path, Uri-Query, Content-Format, ...). A Block2 option here is replaced.
    pub options: Options,
    /// Payload (sent in Block1 blocks when larger than
    /// [`EndpointConfig::max_unblocked_payload`](super::EndpointConfig::max_unblocked_payload)).
    pub payload: Vec<u8>,
    /// CON (the default) or NON.
    pub confirmable: bool,
    /// Ask for Block2 transfers with this size exponent from the first request on
    /// (RFC 7959 §2.4 early negotiation). `None`: let the server choose.
    pub block2_szx: Option<u8>,
}

impl Request {
    /// A confirmable request with `method` for `path` (`"/a/b"` or `"a/b"`; a `?query`
    /// part becomes Uri-Query options split on `&`).
    pub fn new(method: Code, path: &str) -> Request {
        let mut options = Options::new();
        let (path, query) = match path.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (path, None),
        };
        options.add_uri_path(path);
        for q in query.into_iter().flat_map(|q| q.split('&')).filter(|q| !q.is_empty()) {
            options.add_uri_query(q);
        }
        Request { method, options, payload: Vec::new(), confirmable: true, block2_szx: None }
    }

    /// A confirmable GET.
    pub fn get(path: &str) -> Request {
        Request::new(Code::GET, path)
    }

    /// A confirmable PUT with `payload`.
    pub fn put(path: &str, payload: impl Into<Vec<u8>>) -> Request {
        Request::new(Code::PUT, path).with_payload(payload)
    }

    /// A confirmable POST with `payload`.
    pub fn post(path: &str, payload: impl Into<Vec<u8>>) -> Request {
        Request::new(Code::POST, path).with_payload(payload)
    }

    /// Builder: sets the payload.
    pub fn with_payload(mut self, payload: impl Into<Vec<u8>>) -> Request {
        self.payload = payload.into();
        self
    }

    /// Builder: CON (`true`) or NON (`false`).
    pub fn confirmable(mut self, con: bool) -> Request {
        self.confirmable = con;
        self
    }

    /// Builder: request Block2 transfers of 2^(szx+4) bytes from the first block on.
    pub fn with_block2_szx(mut self, szx: u8) -> Request {
        self.block2_szx = Some(szx.min(6));
        self
    }

    /// Builder: register for notifications (RFC 7641 Observe = 0). Every notification comes
    /// as another [`Event::Response`] for the same request id.
    pub fn observe(mut self) -> Request {
        self.options.set_uint(crate::option::OBSERVE, 0);
        self
    }

    /// Builder: adds an option.
    pub fn with_option(mut self, number: u16, value: impl AsRef<[u8]>) -> Request {
        self.options.add(number, value);
        self
    }
}

/// A response the server application hands to [`Endpoint::respond`](super::Endpoint::respond).
/// The endpoint sets type, Message ID and token, and slices large payloads into Block2
/// blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// Response code (2.05 Content, 4.04 Not Found, ...).
    pub code: Code,
    /// Options (Content-Format, ...).
    pub options: Options,
    /// The whole representation.
    pub payload: Vec<u8>,
}

impl Response {
    /// A response with `code`, no options and no payload.
    pub fn new(code: Code) -> Response {
        Response { code, options: Options::new(), payload: Vec::new() }
    }

    /// 2.05 Content with `payload`.
    pub fn content(payload: impl Into<Vec<u8>>) -> Response {
        Response::new(Code::CONTENT).with_payload(payload)
    }

    /// Builder: sets the payload.
    pub fn with_payload(mut self, payload: impl Into<Vec<u8>>) -> Response {
        self.payload = payload.into();
        self
    }

    /// Builder: sets Content-Format.
    pub fn with_content_format(mut self, format: u16) -> Response {
        self.options.set_content_format(format);
        self
    }
}

/// A datagram to send now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transmit<P> {
    /// Destination.
    pub peer: P,
    /// The encoded CoAP message.
    pub bytes: Vec<u8>,
    /// What it is (so that a caller never has to parse it again).
    pub kind: TransmitKind,
    /// For an answer sent again for a duplicate request: whose identification it carries, as
    /// the reliability layer decided ([`DuplicateMode::echoed`](super::DuplicateMode::echoed)).
    /// `None` for every other datagram (a first answer carries the identification of the
    /// request it answers).
    pub echoed: Option<super::lifecycle::Echoed>,
}

/// What a [`Transmit`] carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransmitKind {
    /// A request (any copy).
    Request,
    /// A response: piggybacked in an ACK, separate, NON, or replayed for a duplicate.
    Response,
    /// An Empty ACK.
    EmptyAck,
    /// An RST.
    Reset,
}

/// Why a client request (or a server's separate response) failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailReason {
    /// MAX_RETRANSMIT retransmissions went unacknowledged (the algorithm gave up).
    Timeout,
    /// The peer answered with RST.
    Reset,
    /// No response arrived within the response timeout after an Empty ACK, or to a NON
    /// request.
    ResponseTimeout,
    /// A Block2 response did not continue the transfer (wrong block number or size).
    BadBlock,
    /// The reassembled body exceeded [`EndpointConfig::max_body_size`](super::EndpointConfig::max_body_size).
    BodyTooLarge,
    /// The transfer took more than [`EndpointConfig::max_blocks`](super::EndpointConfig::max_blocks) blocks.
    TooManyBlocks,
}

impl FailReason {
    /// Short lower-case name (`timeout`, `reset`, ...), as used in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            FailReason::Timeout => "timeout",
            FailReason::Reset => "reset",
            FailReason::ResponseTimeout => "response-timeout",
            FailReason::BadBlock => "bad-block",
            FailReason::BodyTooLarge => "body-too-large",
            FailReason::TooManyBlocks => "too-many-blocks",
        }
    }
}

impl fmt::Display for FailReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the endpoint tells the application ([`Endpoint::poll_event`](super::Endpoint::poll_event)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event<P> {
    /// Server role: a new request arrived (duplicates are answered by the endpoint and not
    /// reported). Answer every one with [`Endpoint::respond`](super::Endpoint::respond)
    /// (an unanswered request keeps a small entry until it is answered).
    Request {
        /// Handle for the answer.
        id: ServerRequestId,
        /// Who sent it.
        peer: P,
        /// The decoded request.
        message: Message,
    },
    /// Client role: the response to request `id`. For a block-wise transfer the payload is
    /// the reassembled body and the Block2 option is removed; the other fields are those of
    /// the last block.
    Response {
        /// The request.
        id: RequestId,
        /// The server.
        peer: P,
        /// The response.
        response: Message,
        /// With copy identification, the ordinal of the (last) request copy whose token the
        /// response carried (0 = the original); `None` otherwise.
        copy: Option<u32>,
    },
    /// Client role: request `id` failed.
    Failed {
        /// The request.
        id: RequestId,
        /// The server.
        peer: P,
        /// Why.
        reason: FailReason,
    },
    /// Server role: a separate CON response could not be delivered.
    ResponseFailed {
        /// The request it answered.
        id: ServerRequestId,
        /// The client.
        peer: P,
        /// Why.
        reason: FailReason,
    },
}

/// Role of a recorded exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordKind {
    /// One request exchange of client request `RequestId` (a block-wise transfer has one per
    /// block).
    Request(RequestId),
    /// A server's separate CON (or NON) response to request `ServerRequestId`.
    SeparateResponse(ServerRequestId),
}

/// How a recorded exchange ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The response came piggybacked on the ACK.
    Piggybacked,
    /// An Empty ACK, then a separate response.
    Separate,
    /// A response to a NON request.
    NonResponse,
    /// An ACK to our separate response (server role).
    Acknowledged,
    /// The exchange failed.
    Failed(FailReason),
}

impl Outcome {
    /// Short lower-case name (`piggybacked`, `separate`, ..., or the failure reason).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Piggybacked => "piggybacked",
            Outcome::Separate => "separate",
            Outcome::NonResponse => "non-response",
            Outcome::Acknowledged => "acknowledged",
            Outcome::Failed(r) => r.as_str(),
        }
    }

    /// `true` unless the exchange failed.
    pub fn is_success(self) -> bool {
        !matches!(self, Outcome::Failed(_))
    }
}

/// One transmission (copy) of a recorded exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransmissionRecord {
    /// Copy ordinal: 0 = original, k = k-th retransmission.
    pub ordinal: u32,
    /// When it was handed out by [`Endpoint::poll_transmit`](super::Endpoint::poll_transmit)'s queue.
    pub at: Instant,
    /// The retransmission timer armed with it (`None` for NON).
    pub timeout: Option<Duration>,
}

/// Everything about one finished exchange, for JSON-lines logs and analysis
/// ([`Endpoint::poll_record`](super::Endpoint::poll_record)).
#[derive(Clone, Debug, PartialEq)]
pub struct ExchangeRecord<P> {
    /// Client request or server separate response.
    pub kind: RecordKind,
    /// The peer.
    pub peer: P,
    /// Message ID of our message.
    pub message_id: u16,
    /// Token of the original transmission.
    pub token: Token,
    /// CON or NON.
    pub confirmable: bool,
    /// Block2 option sent with the request, if any.
    pub block2: Option<Block>,
    /// Registry name of the algorithm that timed the exchange.
    pub algorithm: &'static str,
    /// When the exchange was admitted (queued requests wait for NSTART first).
    pub queued_at: Instant,
    /// Every transmission, in order.
    pub transmissions: Vec<TransmissionRecord>,
    /// Arrival of the first ACK (or response, when it came first).
    pub acked_at: Option<Instant>,
    /// Arrival of the response (client role).
    pub response_at: Option<Instant>,
    /// `acked_at − first transmission`: the RTT the algorithm was given.
    pub rtt: Option<Duration>,
    /// The copy the response identified (copy identification only).
    pub copy: Option<CopyAck>,
    /// Code of the response (client role).
    pub response_code: Option<Code>,
    /// How it ended.
    pub outcome: Outcome,
    /// When it ended.
    pub finished_at: Instant,
    /// The algorithm's state after the exchange.
    pub snapshot: Snapshot,
}

impl<P> ExchangeRecord<P> {
    /// Retransmissions sent (transmissions − 1).
    pub fn retransmissions(&self) -> u32 {
        self.transmissions.len().saturating_sub(1) as u32
    }
}

/// Counters, for monitoring and for the bounded-state tests.
// `repr(C)`: the counters of the common datagrams first (one cache line).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Stats {
    /// Datagrams handed to `handle_datagram`.
    pub datagrams_in: u64,
    /// Datagrams queued for sending.
    pub datagrams_out: u64,
    /// ACKs, RSTs and responses that matched nothing (late duplicates, strays).
    pub unmatched: u64,
    /// Retransmissions sent.
    pub retransmissions: u64,
    /// Datagrams that failed to decode (dropped, or answered with RST).
    pub malformed: u64,
    /// RSTs sent (malformed CONs, pings, unexpected CON responses).
    pub rst_sent: u64,
    /// RSTs received that matched one of our exchanges.
    pub rst_received: u64,
    /// Duplicate CON/NON received (answered from the cache, or ignored).
    pub duplicates: u64,
    /// New requests reported as [`Event::Request`].
    pub requests_received: u64,
    /// Requests rejected by the endpoint itself (unknown critical option, bad Block2).
    pub requests_rejected: u64,
    /// Requests refused with 5.03 because their peer had
    /// [`EndpointConfig::max_pending_per_peer`](super::EndpointConfig::max_pending_per_peer)
    /// requests pending.
    pub requests_refused: u64,
    /// Deduplication entries evicted because the cache was full.
    pub dedup_evicted: u64,
    /// Deduplication entries dropped at the end of their lifetime.
    pub dedup_expired: u64,
    /// Deduplication entries now.
    pub dedup_len: u64,
    /// Timers armed now (exchanges in flight, unanswered requests, paced peers; never one
    /// per queued exchange).
    pub timers_armed: u64,
    /// Duplicates not answered because their message had been answered
    /// [`EndpointConfig::max_duplicate_replies`](super::EndpointConfig::max_duplicate_replies) times.
    pub duplicates_suppressed: u64,
    /// Answers replaced by 4.01 + Echo (amplification limit towards an unverified peer).
    pub echo_challenges: u64,
    /// Answers sent in smaller Block2 blocks (with an Echo value) to stay within the
    /// amplification limit towards an unverified peer.
    pub smaller_blocks: u64,
    /// Observe notifications received (client role).
    pub notifications_received: u64,
    /// Block1 uploads reassembled and handed to the application.
    pub uploads_completed: u64,
    /// Peers verified by echoing our Echo value.
    pub peers_verified: u64,
}
