//! The CoAP reliability layer (RFC 7252 §4.2, §4.5, §4.7): NSTART admission, the lifecycle
//! of one confirmable exchange and the server's duplicate detection, independent of how
//! messages are represented.
//!
//! Everything here is what RFC 7252 and the congestion-control algorithms decide, and
//! nothing else: whether and when a queued exchange may start ([`Nstart::poll_start`]: a free
//! NSTART slot and the algorithm's pacing, [`ready_at`]), its first timer
//! ([`ConExchange::start`]), what a timer expiry does (retransmit copy *k* with a new timer,
//! or give up: [`ConExchange::expire`]), what the first ACK tells the algorithm, with the
//! copy it identifies ([`ConExchange::acknowledge`]), what an RST does
//! ([`ConExchange::reset`]), whether an arriving message is new or a duplicate and what a
//! duplicate gets ([`classify`], with [`DuplicateMode::echo`] choosing the copy its answer
//! identifies).
//!
//! Where hosts differ in how they read an acknowledgement (does an ACK after a give-up still
//! inform the algorithm? is an ACK's RTT counted from the original or from the copy it
//! answers?), the choice is a [`ReliabilityOptions`] value passed to
//! [`ConExchange::acknowledge_with`] and [`ConExchange::acknowledge_late`]; its default is RFC
//! 7252's reading, that of [`ConExchange::acknowledge`].
//!
//! Two users drive it with their own message representation:
//! - the real [`Endpoint`](super::Endpoint): encoded [`Message`](crate::Message)s, Message
//!   IDs, tokens whose last byte is the copy ordinal, an [`Nstart`] queue of exchange ids
//!   per peer, a bounded deduplication cache keyed by (peer, Message ID) holding the replies;
//! - the simulator's compact endpoint model: a message is (client, exchange, copy ordinal),
//!   each client has an [`Nstart`] counting its waiting exchanges ([`Waiting`]), the server
//!   a [`PerClientCache`] (the last exchange of each client and the first copy it received);
//!   sizes come from the real encoding.
//!
//! Both call the same functions at the same points, so their admissions, timers,
//! retransmissions, give-ups, duplicate answers and algorithm states are identical by
//! construction (the simulator's regression matrix and its differential test check it).

use core::time::Duration;

use coapcc_cc::{AckInfo, CongestionControl, Entropy, Exchange, GiveUpReason, Instant, TimeoutAction};

use super::DuplicateMode;

mod admission;
mod duplicates;
mod options;

pub use admission::{Admission, Nstart, WaitQueue, Waiting};
pub use duplicates::{
    classify, classify_entry, Arrival, ClientEntry, DuplicateAnswer, DuplicateCache, DuplicateEntry, DuplicateRules,
    PerClientCache, Remembered,
};
pub use options::{AckRtt, LateAck, ReliabilityOptions, RetransmitTimer};

/// When the next exchange may start under the algorithm's pacing (`earliest_start`): `None`
/// if it may start at `now`, else the instant to wait for.
#[inline]
pub fn ready_at<C: CongestionControl + ?Sized>(cc: &C, now: Instant) -> Option<Instant> {
    let t = cc.earliest_start(now);
    (t > now).then_some(t)
}

/// What a retransmission timer's expiry decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// Send copy `ordinal` now and arm `timer` (expiring at `deadline`).
    Retransmit {
        /// Ordinal of the copy to send (1 = first retransmission).
        ordinal: u32,
        /// The timer armed with it.
        timer: Duration,
        /// `now + timer`.
        deadline: Instant,
    },
    /// MAX_RETRANSMIT is exhausted: the exchange failed (the algorithm has been told).
    GiveUp,
}

/// The reliability state of one confirmable exchange (client role, or a server's separate
/// CON response): the algorithm's per-exchange record and the armed timer.
#[derive(Clone, Copy, Debug)]
pub struct ConExchange {
    ex: Exchange,
    deadline: Instant,
}

impl ConExchange {
    /// Admit a new exchange at `now` (`in_flight`: exchanges to the same peer already in
    /// flight): the algorithm draws the first timer; the original transmission (copy 0) is
    /// sent now and the timer expires at [`ConExchange::deadline`].
    #[inline]
    pub fn start<C: CongestionControl + ?Sized>(
        cc: &mut C,
        now: Instant,
        in_flight: u32,
        rng: &mut dyn Entropy,
    ) -> ConExchange {
        let ex = cc.start_exchange(now, in_flight, rng);
        ConExchange { deadline: now + ex.timer(), ex }
    }

    /// A value for a slot with no exchange in progress (started at time zero with a zero
    /// timer; never expire or acknowledge it).
    pub fn idle() -> ConExchange {
        ConExchange { ex: Exchange::begin(Instant::ZERO, Duration::ZERO, Duration::ZERO), deadline: Instant::ZERO }
    }

    /// The algorithm's per-exchange record.
    #[inline]
    pub fn exchange(&self) -> &Exchange {
        &self.ex
    }

    /// When the timer armed with the latest copy expires.
    #[inline]
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The timer armed with the latest copy.
    #[inline]
    pub fn timer(&self) -> Duration {
        self.ex.timer()
    }

    /// Copies sent so far minus one.
    #[inline]
    pub fn retransmissions(&self) -> u32 {
        self.ex.retransmissions()
    }

    /// When the original transmission was sent.
    #[inline]
    pub fn started(&self) -> Instant {
        self.ex.started()
    }

    /// The timer expired at `now` with no ACK: retransmit, or give up (the algorithm is told
    /// either way).
    #[inline]
    pub fn expire<C: CongestionControl + ?Sized>(&mut self, cc: &mut C, now: Instant) -> Expiry {
        match cc.on_timeout(now, &mut self.ex) {
            TimeoutAction::Retransmit(timer) => {
                self.deadline = now + timer;
                Expiry::Retransmit { ordinal: self.ex.retransmissions(), timer, deadline: self.deadline }
            }
            TimeoutAction::GiveUp => {
                cc.on_give_up(now, &self.ex, GiveUpReason::Timeout);
                Expiry::GiveUp
            }
        }
    }

    /// The first ACK (or response) arrived at `now`. `echoed`: the copy the response
    /// identifies and when that copy was sent, for algorithms with copy identification
    /// ([`CongestionControl::uses_copy_id`]); `None` otherwise. Returns what the algorithm
    /// was told.
    #[inline]
    pub fn acknowledge<C: CongestionControl + ?Sized>(
        &self,
        cc: &mut C,
        now: Instant,
        echoed: Option<(u32, Instant)>,
    ) -> AckInfo {
        let info = match echoed {
            Some((k, sent)) => AckInfo::with_copy(&self.ex, now, k, sent),
            None => AckInfo::new(&self.ex, now),
        };
        cc.on_ack(now, &self.ex, &info);
        info
    }

    /// The peer answered with RST at `now` (before any ACK): the exchange failed.
    #[inline]
    pub fn reset<C: CongestionControl + ?Sized>(&self, cc: &mut C, now: Instant) {
        cc.on_give_up(now, &self.ex, GiveUpReason::Reset);
    }
}

impl DuplicateMode {
    /// The identification a server's answer to a duplicate carries: the one of the copy
    /// being answered (`incoming`) under [`DuplicateMode::AnswerEachCopy`], the one cached
    /// with the first answer (`cached`) under [`DuplicateMode::ReplayCached`]. `T` is the
    /// representation's identification: the token in the real endpoint, the copy ordinal in
    /// the simulator's compact model.
    #[inline]
    pub fn echo<T>(self, cached: T, incoming: T) -> T {
        match self.echoed() {
            Echoed::Incoming => incoming,
            Echoed::Cached => cached,
        }
    }

    /// Whose identification the answer to a duplicate carries: the copy being answered
    /// ([`DuplicateMode::AnswerEachCopy`]) or the one remembered with the first answer
    /// ([`DuplicateMode::ReplayCached`]).
    #[inline]
    pub fn echoed(self) -> Echoed {
        match self {
            DuplicateMode::AnswerEachCopy => Echoed::Incoming,
            DuplicateMode::ReplayCached => Echoed::Cached,
        }
    }
}

/// Whose identification a server's answer to a duplicate carries ([`DuplicateMode::echoed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Echoed {
    /// The identification of the copy being answered.
    Incoming,
    /// The identification remembered with the first answer (that of the first copy received).
    Cached,
}

#[cfg(test)]
mod tests {
    use super::*;
    use coapcc_cc::{AlgorithmConfig, SplitMix64};

    #[test]
    fn a_lifecycle_to_give_up() {
        let mut cc = AlgorithmConfig::parse("default:max_retransmit=2").unwrap().build();
        let mut rng = SplitMix64::new(1);
        let now = Instant::from_millis(10);
        let mut x = ConExchange::start(&mut cc, now, 0, &mut rng);
        let t0 = x.timer();
        assert!(t0 >= Duration::from_secs(2) && t0 <= Duration::from_secs(3), "{t0:?}");
        assert_eq!(x.deadline(), now + t0);
        let Expiry::Retransmit { ordinal, timer, deadline } = x.expire(&mut cc, x.deadline()) else { panic!() };
        assert_eq!((ordinal, timer), (1, 2 * t0));
        assert_eq!(deadline, now + t0 + 2 * t0);
        assert!(matches!(x.expire(&mut cc, deadline), Expiry::Retransmit { ordinal: 2, .. }));
        assert_eq!(x.expire(&mut cc, x.deadline()), Expiry::GiveUp);
    }

    #[test]
    fn acknowledgement_with_and_without_copy() {
        let mut cc = AlgorithmConfig::parse("fasor-token").unwrap().build();
        let mut rng = SplitMix64::new(2);
        let t = Instant::from_millis;
        let mut x = ConExchange::start(&mut cc, t(0), 0, &mut rng);
        let first = x.deadline();
        x.expire(&mut cc, first);
        let a = x.acknowledge(&mut cc, first + Duration::from_millis(300), Some((1, first)));
        assert_eq!(a.retransmissions, 1);
        assert_eq!(a.copy.unwrap().rtt, Duration::from_millis(300));
        assert_eq!(a.rtt, first - t(0) + Duration::from_millis(300));
        let y = ConExchange::start(&mut cc, t(100_000), 0, &mut rng);
        assert_eq!(y.acknowledge(&mut cc, t(100_500), None).copy, None);
    }

    #[test]
    fn duplicate_answers() {
        assert_eq!(DuplicateMode::AnswerEachCopy.echo(0u16, 3), 3);
        assert_eq!(DuplicateMode::ReplayCached.echo(0u16, 3), 0);
    }
}
