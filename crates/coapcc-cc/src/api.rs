//! The one interface every algorithm implements.
//!
//! The shape follows quinn-proto and smoltcp: input is pushed with an explicit `now`, the
//! algorithm answers with timers; it never sleeps, reads a clock or touches a socket.
//!
//! Life of one Confirmable exchange (NSTART exchanges may run at once, each with its own
//! [`Exchange`] record owned by the caller):
//!
//! ```text
//! ex = cc.start_exchange(now, in_flight, rng)        // arm ex.timer() = T_0, send copy 0
//! loop on timer expiry:
//!     match cc.on_timeout(now, &mut ex) {
//!         Retransmit(T_k) => send copy k, arm T_k,
//!         GiveUp          => cc.on_give_up(now, &ex, Reason::Timeout); fail
//!     }
//! on the first ACK/response:  cc.on_ack(now, &ex, &AckInfo::new(&ex, now))
//! on RST:                     cc.on_give_up(now, &ex, Reason::Reset)
//! ```

use core::time::Duration;

use crate::rng::Entropy;
use crate::time::{self, Instant};

/// Per-exchange timer state, owned by the caller (the endpoint's exchange record).
///
/// Returned by [`CongestionControl::start_exchange`] and handed back on every later event of
/// the same exchange. It is `Copy`, fixed-size and allocation-free. The public accessors are
/// what endpoints and traces need; the remaining fields are algorithm bookkeeping.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Exchange {
    pub(crate) started: Instant,
    pub(crate) retransmissions: u32,
    /// Timer armed with the latest transmission, seconds.
    pub(crate) timer: f64,
    /// Algorithm-specific: dither factor `d` (T_0 / base) or FASOR's dither offset.
    pub(crate) dither: f64,
    /// Algorithm-specific: per-exchange backoff factor (CoCoA+ VBF).
    pub(crate) factor: f64,
    /// Algorithm-specific: series timer (FASOR), or 0.
    pub(crate) series: f64,
    /// The (undithered) RTO estimate in force when the exchange started, seconds.
    pub(crate) rto_start: f64,
}

impl Exchange {
    pub(crate) fn new(now: Instant, t0: f64, rto_start: f64) -> Self {
        Exchange { started: now, retransmissions: 0, timer: t0, dither: 1.0, factor: 0.0, series: 0.0, rto_start }
    }

    /// When the original transmission was sent (`t0` of the specification).
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Retransmissions sent so far (`n` of the specification).
    pub fn retransmissions(&self) -> u32 {
        self.retransmissions
    }

    /// The timer armed with the latest transmission (`T_n`).
    pub fn timer(&self) -> Duration {
        time::secs(self.timer)
    }

    /// The undithered RTO estimate the exchange started from.
    pub fn start_rto(&self) -> Duration {
        time::secs(self.rto_start)
    }

    /// For algorithms written outside this crate: an exchange started at `now` whose
    /// original transmission arms `timer`; `start_rto` is the undithered estimate it started
    /// from (reported in snapshots only).
    pub fn begin(now: Instant, timer: Duration, start_rto: Duration) -> Exchange {
        Exchange::new(now, time::to_secs(timer), time::to_secs(start_rto))
    }

    /// For algorithms written outside this crate, in `on_timeout`: retransmission
    /// `retransmissions() + 1` is sent with `timer`.
    pub fn record_retransmission(&mut self, timer: Duration) {
        self.retransmissions += 1;
        self.timer = time::to_secs(timer);
    }
}

/// What the caller must do when the armed timer expires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeoutAction {
    /// Send retransmission number [`Exchange::retransmissions`] now and arm this timer.
    Retransmit(Duration),
    /// MAX_RETRANSMIT retransmissions were sent and the last timer expired: the exchange
    /// fails. Call [`CongestionControl::on_give_up`] next.
    GiveUp,
}

/// Why an exchange failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GiveUpReason {
    /// The timer armed with retransmission MAX_RETRANSMIT expired.
    Timeout,
    /// The peer answered with RST.
    Reset,
}

/// The copy a response says it answers (token/counter variants: FASOR+token, pCoCoA).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyAck {
    /// Ordinal of the acknowledged copy (0 = original transmission).
    pub ordinal: u32,
    /// Time from sending that copy to the arrival of the response.
    pub rtt: Duration,
}

/// Everything the algorithms may learn from the first ACK/response of an exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckInfo {
    /// Retransmissions sent before this ACK arrived (`n`).
    pub retransmissions: u32,
    /// Time since the original transmission (`R = t_ack − t0`).
    pub rtt: Duration,
    /// When the response identifies the copy it answers: that copy and its own RTT.
    pub copy: Option<CopyAck>,
}

impl AckInfo {
    /// The ACK info for `ex` acknowledged at `now`, without copy identification.
    pub fn new(ex: &Exchange, now: Instant) -> Self {
        AckInfo { retransmissions: ex.retransmissions, rtt: now - ex.started, copy: None }
    }

    /// As [`AckInfo::new`], adding that the response answers copy `ordinal`, sent at `sent`.
    pub fn with_copy(ex: &Exchange, now: Instant, ordinal: u32, sent: Instant) -> Self {
        AckInfo { copy: Some(CopyAck { ordinal, rtt: now - sent }), ..AckInfo::new(ex, now) }
    }

    pub(crate) fn rtt_secs(&self) -> f64 {
        time::to_secs(self.rtt)
    }
}

/// One RFC 6298-style estimator's state.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EstimatorSnapshot {
    /// Smoothed RTT.
    pub srtt: Duration,
    /// RTT variation.
    pub rttvar: Duration,
    /// The estimator's own RTO (`SRTT + max(G, K·RTTVAR)`).
    pub rto: Duration,
    /// Samples taken since the last reset.
    pub samples: u32,
}

/// A read-only view of an algorithm's cross-exchange state, for traces and plots.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// The (undithered) RTO the next exchange would start from, before ageing.
    pub rto: Duration,
    /// The strong (or only) estimator, once it has a sample.
    pub strong: Option<EstimatorSnapshot>,
    /// CoCoA's weak estimator, once it has a sample.
    pub weak: Option<EstimatorSnapshot>,
    /// FASOR's SlowRTO, once set.
    pub slow_rto: Option<Duration>,
    /// A named backoff state (FASOR: `FAST`, `FSF`, `SF`).
    pub state: Option<&'static str>,
    /// A retained (FullBackoff) timer the next exchange will start with.
    pub retained: Option<Duration>,
}

/// A retransmission-timer / congestion-control algorithm for one destination endpoint.
///
/// Object safe; build instances from a [`crate::AlgorithmConfig`] (a plain value) so every
/// flow gets fresh state. All methods are cheap, allocation-free and never panic.
pub trait CongestionControl {
    /// Registry name of the algorithm (`"cocoa"`, ...).
    fn name(&self) -> &'static str;

    /// MAX_RETRANSMIT of this instance.
    fn max_retransmit(&self) -> u32;

    /// Return all cross-exchange state to its initial value (flow start, and each batch of a
    /// random client). Exchanges in flight keep their own [`Exchange`] records.
    fn reset(&mut self, now: Instant);

    /// A new exchange is admitted at `now`; `in_flight` is the number of exchanges to the same
    /// endpoint already in flight (0 with NSTART = 1). Applies ageing, retained backoff and
    /// dithering (drawn from `rng`). The returned record's [`Exchange::timer`] is `T_0`.
    fn start_exchange(&mut self, now: Instant, in_flight: u32, rng: &mut dyn Entropy) -> Exchange;

    /// The timer armed with the latest transmission of `ex` expired at `now`.
    fn on_timeout(&mut self, now: Instant, ex: &mut Exchange) -> TimeoutAction;

    /// The first ACK (or piggybacked response) of `ex` arrived at `now`. Later duplicate ACKs
    /// must not be reported.
    fn on_ack(&mut self, now: Instant, ex: &Exchange, ack: &AckInfo);

    /// `ex` failed (MAX_RETRANSMIT exhausted, or RST).
    fn on_give_up(&mut self, now: Instant, ex: &Exchange, reason: GiveUpReason);

    /// Does the algorithm use copy identification (the ordinal of the acknowledged copy,
    /// echoed by the server in the token or a counter option)? Endpoints and the simulator
    /// fill [`AckInfo::copy`] only for algorithms that return `true` (FASOR+token, pCoCoA),
    /// since only those put the ordinal on the wire. Default: `false`.
    fn uses_copy_id(&self) -> bool {
        false
    }

    /// Earliest time the next exchange may start (pacing for rate-based schemes). Default:
    /// `now`, i.e. no pacing. Endpoints must not start an exchange before it; the rate-based
    /// controls (`idc-coap`, `mbc-coap`, `bdp-coap`) return `last send + spacing` and pace their
    /// retransmissions through the timers they arm (see [`crate::makarem`]).
    fn earliest_start(&self, now: Instant) -> Instant {
        now
    }

    /// The current cross-exchange state.
    fn snapshot(&self) -> Snapshot;
}
