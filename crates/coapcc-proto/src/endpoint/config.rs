//! Endpoint configuration and the RFC 7252 §4.8.2 derived times.

use core::time::Duration;

use coapcc_cc::AlgorithmConfig;

/// How long message-deduplication state is kept (specification AMBIG-1, `lifetime_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LifetimeMode {
    /// RFC 7252 §4.8.2 literally: a received CON is remembered for EXCHANGE_LIFETIME and a
    /// received NON for NON_LIFETIME, both computed from the configured algorithm's
    /// ACK_TIMEOUT, ACK_RANDOM_FACTOR and MAX_RETRANSMIT (see [`TransmissionParams`]).
    Formula,
    /// The specification's recommended default: keep deduplication state for the whole run
    /// (no time-based expiry; with MAX_RETRANSMIT = 20 the formula gives 36 days anyway).
    /// Memory stays bounded by [`EndpointConfig::dedup_capacity`]: the oldest entry is
    /// evicted when the cache is full.
    UntilComplete,
}

impl LifetimeMode {
    /// Parse `formula` or `until-complete` (`until_complete`).
    pub fn parse(s: &str) -> Option<LifetimeMode> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "formula" => Some(LifetimeMode::Formula),
            "until-complete" => Some(LifetimeMode::UntilComplete),
            _ => None,
        }
    }
}

/// How a server answers a duplicate CON it has already answered (specification AMBIG-21,
/// `server_duplicate_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DuplicateMode {
    /// Answer each copy: replay the cached response, but with the token of the copy being
    /// answered, so that a client using copy identification (FASOR+token) learns which copy
    /// the answer belongs to. Identical to [`DuplicateMode::ReplayCached`] for clients whose
    /// retransmissions keep the token (RFC 7252 §4.2). The default.
    AnswerEachCopy,
    /// Replay the cached response byte for byte (it carries the token of the first copy
    /// received).
    ReplayCached,
}

impl DuplicateMode {
    /// Parse `answer-each-copy` or `replay-cached` (underscores accepted).
    pub fn parse(s: &str) -> Option<DuplicateMode> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "answer-each-copy" => Some(DuplicateMode::AnswerEachCopy),
            "replay-cached" => Some(DuplicateMode::ReplayCached),
            _ => None,
        }
    }
}

/// Everything an [`Endpoint`](super::Endpoint) can be told. A plain value; every field has a
/// documented default ([`EndpointConfig::default`]).
#[derive(Clone, Debug, PartialEq)]
pub struct EndpointConfig {
    /// Retransmission-timer / congestion-control algorithm: the factory of one fresh
    /// instance per destination peer (for CON requests, and for a server's CON separate
    /// responses). Default: `default` (RFC 7252).
    pub cc: AlgorithmConfig,
    /// NSTART: outstanding interactions per peer (RFC 7252 §4.7). Further requests to the
    /// same peer wait in a FIFO queue. Default 1; values below 1 are treated as 1.
    pub nstart: u32,
    /// How long deduplication state is kept. Default [`LifetimeMode::UntilComplete`].
    pub lifetime_mode: LifetimeMode,
    /// Server handling of duplicate CONs. Default [`DuplicateMode::AnswerEachCopy`].
    pub duplicate_mode: DuplicateMode,
    /// Capacity of the deduplication cache, in entries (one per received CON/NON, keyed
    /// by peer and Message ID). When full, the oldest entry is evicted. Each entry holds at
    /// most one cached reply (≤ one message), so memory is bounded. Default 4096.
    pub dedup_capacity: usize,
    /// Token length of our requests, 1–8 bytes (default 4). With copy identification the
    /// last byte is the transmission ordinal and the others are random.
    pub token_len: u8,
    /// Largest Block2 size exponent the server uses when it slices a representation
    /// (block size 2^(SZX+4); default 6 = 1024 bytes). A client asking for a smaller size
    /// gets the smaller size.
    pub block_szx: u8,
    /// Representations up to this many bytes are sent in one message when the request
    /// carries no Block2 option; larger ones are sliced. Default 1024 (RFC 7252 §4.6).
    pub max_unblocked_payload: usize,
    /// Largest body a client reassembles from Block2 responses; a larger transfer fails
    /// with [`FailReason::BodyTooLarge`](super::FailReason::BodyTooLarge). Default 16 MiB.
    pub max_body_size: usize,
    /// A server request not answered within this time gets an Empty ACK, and its response
    /// is then sent separately (RFC 7252 §5.2.2). Default 1 s (half the default
    /// ACK_TIMEOUT). A duplicate of a request still unanswered is acknowledged at once.
    pub piggyback_timeout: Duration,
    /// How long a client waits for a response after an Empty ACK, or for the response to a
    /// NON request, before failing with
    /// [`FailReason::ResponseTimeout`](super::FailReason::ResponseTimeout). `None` (the
    /// default): MAX_TRANSMIT_WAIT of the algorithm's parameters.
    pub response_timeout: Option<Duration>,
    /// MAX_LATENCY of RFC 7252 §4.8.2 (default 100 s), used by the derived lifetimes.
    pub max_latency: Duration,
    /// Keep one [`ExchangeRecord`](super::ExchangeRecord) per finished exchange for
    /// [`Endpoint::poll_record`](super::Endpoint::poll_record). Default off (records are
    /// only queued when someone will drain them).
    pub record_exchanges: bool,
    /// Most peers with congestion-control state (peers we sent a CON to). When a new peer
    /// would exceed it, the least recently used idle peer is forgotten. Default 4096.
    pub max_peers: usize,
    /// Most server requests one peer may have pending (unanswered, or answered by a
    /// separate response still being delivered). A new request beyond it is answered at once
    /// with 5.03 Service Unavailable and Max-Age [`EndpointConfig::overload_max_age_s`]
    /// instead of reaching the application, so one peer cannot grow the server's state or
    /// queue without bound (RFC 7252 §11; Californium bounds exchanges per peer the same
    /// way). Default 16 (a client obeying NSTART = 1 never has more than one).
    pub max_pending_per_peer: usize,
    /// Max-Age, seconds, of the 5.03 answer to a request over the per-peer limit. Default 2.
    pub overload_max_age_s: u32,
    /// Most duplicates of one received CON answered from the deduplication cache; later
    /// duplicates are dropped (RFC 7252 §11.3 amplification). Default `u32::MAX` (every
    /// duplicate answered); `coapcc server` uses 20, the largest MAX_RETRANSMIT of the
    /// presets, so a compliant client never notices.
    pub max_duplicate_replies: u32,
    /// Largest answer to a GET/FETCH from a peer not yet verified, as a multiple of the
    /// request's size; a larger one is replaced by 4.01 Unauthorized with an Echo option
    /// (RFC 9175 §2.4), and a request echoing it verifies the peer. `None` (the default): no
    /// limit; `coapcc server` uses 3 (the factor RFC 9175 and QUIC suggest).
    pub amplification_limit: Option<u32>,
    /// Answers up to this many bytes are never challenged under
    /// [`EndpointConfig::amplification_limit`] (a 60-byte `/hello` answer to a 15-byte
    /// request stays one round trip). Default 128.
    pub amplification_floor: usize,
    /// Most Block2 blocks a client reassembles for one request (as well as
    /// [`EndpointConfig::max_body_size`] bytes); a longer transfer fails with
    /// [`FailReason::TooManyBlocks`](super::FailReason::TooManyBlocks). Default 16 384
    /// (16 MiB in 1 024-byte blocks, 256 KiB in 16-byte blocks).
    pub max_blocks: u32,
    /// Bounds of a server's block-wise transfer state: Block1 uploads being reassembled and
    /// representations kept for Block2 follow-ups, per peer and in all
    /// ([`TransferLimits`](super::TransferLimits): 64 in all, 4 per peer, 1 MiB per body,
    /// 8 MiB in all, dropped after 93 s unused).
    pub transfers: super::TransferLimits,
    /// Most observations at once, per role: clients registered with us (server) and requests
    /// we observe (client). Default 64.
    pub max_observations: usize,
    /// Most observations one peer may have registered with us (server); a registration beyond
    /// it is answered without Observe (RFC 7641 §4.1), and never displaces another peer's.
    /// A registration with the same peer and token replaces the earlier one. Default 4.
    pub max_observations_per_peer: usize,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            cc: AlgorithmConfig::parse("default").expect("the default algorithm exists"),
            nstart: 1,
            lifetime_mode: LifetimeMode::UntilComplete,
            duplicate_mode: DuplicateMode::AnswerEachCopy,
            dedup_capacity: 4096,
            token_len: 4,
            block_szx: 6,
            max_unblocked_payload: 1024,
            max_body_size: 16 << 20,
            piggyback_timeout: Duration::from_secs(1),
            response_timeout: None,
            max_latency: Duration::from_secs(100),
            record_exchanges: false,
            max_peers: 4096,
            max_pending_per_peer: 16,
            overload_max_age_s: 2,
            max_duplicate_replies: u32::MAX,
            amplification_limit: None,
            amplification_floor: 128,
            max_blocks: 16_384,
            transfers: super::TransferLimits::default(),
            max_observations: 64,
            max_observations_per_peer: 4,
        }
    }
}

impl EndpointConfig {
    /// The default configuration with algorithm `cc`.
    pub fn with_cc(cc: AlgorithmConfig) -> Self {
        EndpointConfig { cc, ..EndpointConfig::default() }
    }

    /// The RFC 7252 transmission parameters of this configuration.
    pub fn params(&self) -> TransmissionParams {
        TransmissionParams::from_algorithm(&self.cc, self.max_latency)
    }
}

/// RFC 7252 §4.8 transmission parameters and the §4.8.2 derived times.
///
/// ACK_TIMEOUT, ACK_RANDOM_FACTOR and MAX_RETRANSMIT come from the algorithm configuration
/// (its canonical textual form, so every algorithm's common parameters are honoured);
/// PROCESSING_DELAY = ACK_TIMEOUT as in the RFC.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TransmissionParams {
    /// ACK_TIMEOUT, seconds.
    pub ack_timeout: f64,
    /// ACK_RANDOM_FACTOR.
    pub ack_random_factor: f64,
    /// MAX_RETRANSMIT.
    pub max_retransmit: u32,
    /// MAX_LATENCY, seconds.
    pub max_latency: f64,
}

impl TransmissionParams {
    /// The parameters of `cc` with the given MAX_LATENCY.
    pub fn from_algorithm(cc: &AlgorithmConfig, max_latency: Duration) -> Self {
        let common = cc.common();
        TransmissionParams {
            ack_timeout: common.ack_timeout,
            ack_random_factor: common.ack_random_factor,
            max_retransmit: common.max_retransmit,
            max_latency: max_latency.as_secs_f64(),
        }
    }

    /// The RFC defaults (2 s, 1.5, 4, 100 s).
    pub fn rfc7252() -> Self {
        TransmissionParams { ack_timeout: 2.0, ack_random_factor: 1.5, max_retransmit: 4, max_latency: 100.0 }
    }

    fn pow2m1(&self, extra: u32) -> f64 {
        2f64.powi((self.max_retransmit + extra) as i32) - 1.0
    }

    /// MAX_TRANSMIT_SPAN = ACK_TIMEOUT · (2^MAX_RETRANSMIT − 1) · ACK_RANDOM_FACTOR.
    pub fn max_transmit_span(&self) -> Duration {
        secs_sat(self.ack_timeout * self.pow2m1(0) * self.ack_random_factor)
    }

    /// MAX_TRANSMIT_WAIT = ACK_TIMEOUT · (2^(MAX_RETRANSMIT+1) − 1) · ACK_RANDOM_FACTOR.
    pub fn max_transmit_wait(&self) -> Duration {
        secs_sat(self.ack_timeout * self.pow2m1(1) * self.ack_random_factor)
    }

    /// PROCESSING_DELAY = ACK_TIMEOUT.
    pub fn processing_delay(&self) -> Duration {
        secs_sat(self.ack_timeout)
    }

    /// MAX_RTT = 2 · MAX_LATENCY + PROCESSING_DELAY.
    pub fn max_rtt(&self) -> Duration {
        secs_sat(2.0 * self.max_latency + self.ack_timeout)
    }

    /// EXCHANGE_LIFETIME = MAX_TRANSMIT_SPAN + 2 · MAX_LATENCY + PROCESSING_DELAY.
    pub fn exchange_lifetime(&self) -> Duration {
        secs_sat(self.ack_timeout * self.pow2m1(0) * self.ack_random_factor + 2.0 * self.max_latency + self.ack_timeout)
    }

    /// NON_LIFETIME = MAX_TRANSMIT_SPAN + MAX_LATENCY.
    pub fn non_lifetime(&self) -> Duration {
        secs_sat(self.ack_timeout * self.pow2m1(0) * self.ack_random_factor + self.max_latency)
    }
}

/// Seconds to a duration, saturating at ~31 700 years instead of panicking.
fn secs_sat(s: f64) -> Duration {
    const MAX: f64 = 1e12;
    if s.is_nan() || s <= 0.0 {
        Duration::ZERO
    } else if s >= MAX {
        Duration::from_secs(MAX as u64)
    } else {
        Duration::from_secs_f64(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(d: Duration) -> f64 {
        d.as_secs_f64()
    }

    #[test]
    fn rfc1_defaults() {
        let p = EndpointConfig::default().params();
        assert_eq!(p, TransmissionParams::rfc7252());
        assert_eq!(secs(p.max_transmit_span()), 45.0);
        assert_eq!(secs(p.max_transmit_wait()), 93.0);
        assert_eq!(secs(p.max_rtt()), 202.0);
        assert_eq!(secs(p.exchange_lifetime()), 247.0);
        assert_eq!(secs(p.non_lifetime()), 145.0);
    }

    #[test]
    fn rfc2_max_retransmit_20() {
        let cc = AlgorithmConfig::parse("cocoa:preset=helsinki2018").unwrap();
        let p = EndpointConfig::with_cc(cc).params();
        assert_eq!(p.max_retransmit, 20);
        assert_eq!(secs(p.max_transmit_span()), 3_145_725.0);
        assert_eq!(secs(p.max_transmit_wait()), 6_291_453.0);
        assert_eq!(secs(p.exchange_lifetime()), 3_145_927.0);
        assert_eq!(secs(p.non_lifetime()), 3_145_825.0);
    }

    #[test]
    fn reads_common_parameters_of_any_algorithm() {
        let cc = AlgorithmConfig::parse("fasor:ack_timeout=3,ack_random_factor=1.25,max_retransmit=2").unwrap();
        let p = TransmissionParams::from_algorithm(&cc, Duration::from_secs(100));
        assert_eq!((p.ack_timeout, p.ack_random_factor, p.max_retransmit), (3.0, 1.25, 2));
        let huge = AlgorithmConfig::parse("default:max_retransmit=255").unwrap();
        let p = TransmissionParams::from_algorithm(&huge, Duration::from_secs(100));
        assert!(p.exchange_lifetime() > Duration::from_secs(1_000_000));
    }

    #[test]
    fn parse_modes() {
        assert_eq!(LifetimeMode::parse("until_complete"), Some(LifetimeMode::UntilComplete));
        assert_eq!(LifetimeMode::parse("formula"), Some(LifetimeMode::Formula));
        assert_eq!(DuplicateMode::parse("replay_cached"), Some(DuplicateMode::ReplayCached));
        assert_eq!(DuplicateMode::parse("answer-each-copy"), Some(DuplicateMode::AnswerEachCopy));
        assert_eq!(DuplicateMode::parse("x"), None);
    }
}
