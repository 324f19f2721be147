//! The one piece of CoAP this crate drives: one Confirmable exchange at a time (NSTART = 1)
//! per client, on `coapcc-proto`'s reliability layer ([`ConExchange`]).
//!
//! Each unit of a message (a 32-byte frame in the study) is one reliable exchange:
//!
//! ```text
//! T_0 = start(now)               -> send copy 0, arm T_0
//! on_timer(now)  -> Retransmit   -> send copy k, arm T_k
//!                -> GiveUp       -> the exchange (and its message) failed
//! on_ack(now, k) -> Some(info)   -> the first ACK of the exchange (any copy k)
//! ```
//!
//! Every protocol decision (the first timer, retransmit or give up, what the first ACK tells
//! the algorithm, with the copy it identifies) is the layer's, the same functions the real
//! endpoint and the general simulator's compact model call; the estimator and backoff rules
//! are the algorithm's. This adapter only keeps what the mesh's message representation needs:
//! the exchange in flight and the send time of each copy (for copy identification).
//!
//! A unit starts when the previous one is acknowledged, unless the algorithm paces its
//! exchanges (`earliest_start`, e.g. IDC-/MBC-CoAP, `bdp-coap`): the engine then asks the
//! layer's pacing hook ([`ReliableSender::ready_at`], which is
//! [`coapcc_proto::endpoint::lifecycle::ready_at`]) and defers the start. The algorithms of
//! the Cooja study never pace, so for them a unit starts at once, as in its firmware.

use core::time::Duration;

use coapcc_cc::{Algorithm, CongestionControl, Entropy, Instant};
use coapcc_proto::endpoint::lifecycle::{ConExchange, Expiry};

/// What to do when the exchange's timer expires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerStep {
    /// Send copy `copy` now and arm `timer`.
    Retransmit {
        /// Ordinal of the copy to send (1 = first retransmission).
        copy: u32,
        /// The timer to arm.
        timer: Duration,
    },
    /// The exchange failed; the algorithm has been told.
    GiveUp,
}

/// The first ACK of an exchange.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Acked {
    /// Retransmissions sent before it arrived.
    pub retransmissions: u32,
    /// Time from the original transmission to the ACK.
    pub rtt: Duration,
}

/// One client's reliability state: its algorithm and the exchange in flight.
#[derive(Clone, Debug)]
pub struct ReliableSender {
    cc: Algorithm,
    ex: Option<ConExchange>,
    /// Send time of each copy of the exchange in flight.
    sent: Vec<Instant>,
}

impl ReliableSender {
    /// A sender with a fresh algorithm instance.
    pub fn new(cc: Algorithm) -> Self {
        ReliableSender { cc, ex: None, sent: Vec::with_capacity(8) }
    }

    /// When the next exchange may start under the algorithm's pacing: `None` for `now`.
    pub fn ready_at(&self, now: Instant) -> Option<Instant> {
        coapcc_proto::endpoint::lifecycle::ready_at(&self.cc, now)
    }

    /// Whether an exchange is in flight.
    pub fn busy(&self) -> bool {
        self.ex.is_some()
    }

    /// Start an exchange at `now`: send copy 0 and arm the returned `T_0`.
    ///
    /// # Panics
    /// If an exchange is already in flight (the engine never does this: NSTART = 1).
    pub fn start(&mut self, now: Instant, rng: &mut dyn Entropy) -> Duration {
        assert!(self.ex.is_none(), "NSTART = 1: one exchange at a time");
        let ex = ConExchange::start(&mut self.cc, now, 0, rng);
        self.sent.clear();
        self.sent.push(now);
        let t0 = ex.timer();
        self.ex = Some(ex);
        t0
    }

    /// The armed timer of the exchange in flight expired at `now`.
    pub fn on_timer(&mut self, now: Instant) -> TimerStep {
        let Some(ex) = self.ex.as_mut() else { return TimerStep::GiveUp };
        match ex.expire(&mut self.cc, now) {
            Expiry::Retransmit { ordinal, timer, .. } => {
                self.sent.push(now);
                TimerStep::Retransmit { copy: ordinal, timer }
            }
            Expiry::GiveUp => {
                self.ex = None;
                TimerStep::GiveUp
            }
        }
    }

    /// An ACK answering copy `copy` of the exchange in flight arrived at `now`. Returns the
    /// outcome for the first ACK; `None` when nothing is in flight (late or duplicate ACK).
    pub fn on_ack(&mut self, now: Instant, copy: u32) -> Option<Acked> {
        let ex = self.ex.take()?;
        let echoed = if self.cc.uses_copy_id() { self.sent.get(copy as usize).map(|&s| (copy, s)) } else { None };
        let info = ex.acknowledge(&mut self.cc, now, echoed);
        Some(Acked { retransmissions: ex.retransmissions(), rtt: info.rtt })
    }

    /// The algorithm's cross-exchange state (estimators, RTO).
    pub fn snapshot(&self) -> coapcc_cc::Snapshot {
        self.cc.snapshot()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coapcc_cc::{AlgorithmConfig, SplitMix64};

    #[test]
    fn default_coap_backs_off_and_gives_up_after_max_retransmit() {
        let mut s = ReliableSender::new(AlgorithmConfig::parse("default:preset=ancillotti-cooja").unwrap().build());
        let mut rng = SplitMix64::new(1);
        let mut now = Instant::ZERO;
        let t0 = s.start(now, &mut rng);
        assert!((3.0..=4.5).contains(&t0.as_secs_f64()), "{t0:?}");
        let mut timer = t0;
        for k in 1..=4 {
            now = now + timer;
            match s.on_timer(now) {
                TimerStep::Retransmit { copy, timer: t } => {
                    assert_eq!(copy, k);
                    assert_eq!(t, timer * 2);
                    timer = t;
                }
                TimerStep::GiveUp => panic!("gave up early"),
            }
        }
        now = now + timer;
        assert_eq!(s.on_timer(now), TimerStep::GiveUp);
        assert!(!s.busy());
        assert_eq!(s.on_ack(now, 0), None);
    }

    #[test]
    fn first_ack_completes_and_feeds_the_estimator() {
        let mut s = ReliableSender::new(AlgorithmConfig::parse("cocoa-plus:preset=ancillotti-cooja").unwrap().build());
        let mut rng = SplitMix64::new(1);
        s.start(Instant::ZERO, &mut rng);
        let a = s.on_ack(Instant::from_millis(120), 0).unwrap();
        assert_eq!(a.retransmissions, 0);
        assert_eq!(a.rtt, Duration::from_millis(120));
        assert_eq!(s.snapshot().strong.unwrap().samples, 1);
        assert!(s.on_ack(Instant::from_millis(130), 0).is_none());
    }
}
