//! Options of the reliability layer: the points where a host, or the study it reproduces,
//! handles an acknowledgement differently from RFC 7252's reading. The defaults are RFC
//! 7252's and what every host did before the options existed, so a host that never sets
//! them behaves exactly as before.
//!
//! | option | default (RFC 7252) | alternative | who uses it |
//! |---|---|---|---|
//! | [`LateAck`] | [`LateAck::Ignore`]: an ACK for an exchange that gave up matches nothing and is dropped (§4.2, §4.5) | [`LateAck::Sample`]: the algorithm still learns from it | Makarem (2021)'s chapter 5 simulator |
//! | [`AckRtt`] | [`AckRtt::FromOriginal`]: the round-trip time of an ACK is counted from the original transmission (the CoCoA weak sample) | [`AckRtt::FromCopy`]: from the copy it answers | Makarem (2021)'s chapter 5 and 6 simulators |
//! | [`RetransmitTimer`] | [`RetransmitTimer::Algorithm`]: each copy waits the timer the algorithm arms (dithered, backed off) | [`RetransmitTimer::Estimate`]: each copy waits the undithered RTO estimate the exchange started from | Makarem (2021)'s chapter 5 ("RTO-only") runs |
//!
//! **Why these are options.** Makarem's thesis evaluates its RTO estimator and its rate-based
//! controls in an ad hoc simulator of one sender that knows the round-trip time of every
//! transmission: "each transmission takes the next RTT value of the scenario" and "the sample
//! fed to the estimator is that message's RTT" (chapter 5), and under a stable residual
//! bandwidth it reasons about CoCoA+ and pCoCoA with an "optimised RTO (RTO_init ≈ RTT)" (its
//! plateau formulas of chapter 6). Its estimator flow is "send, then wait for the ACK or the
//! RTO; on an ACK, take the new sample R" with acknowledgements matched to the copy they
//! answer (a Transmission Counter option, as pCoCoA's): every ACK is a sample, also one that
//! comes after the message was dropped. Its chapter 5 runs are "RTO only": they compare how
//! the algorithms *detect* a loss (the RTO against the RTT), not how they counteract it
//! (dithering, backoff), so every transmission waits the algorithm's RTO estimate. A real
//! endpoint cannot do the first without copy identification on the wire, RFC 7252 drops the
//! second, and the third is an evaluation mode. They are therefore choices of the host, here,
//! not of an algorithm: every host (the endpoint, the simulator, the mesh, the studies) may set
//! them, and every algorithm sees them through the one interface ([`CongestionControl`]).

use core::time::Duration;

use coapcc_cc::{AckInfo, CongestionControl, CopyAck, Entropy, Instant};

use super::{ConExchange, Expiry};

/// What an ACK that arrives after its exchange gave up does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LateAck {
    /// RFC 7252: the exchange is gone, the ACK matches nothing and is dropped; the algorithm
    /// never hears of it.
    #[default]
    Ignore,
    /// The algorithm is told, as the exchange's first ACK ([`ConExchange::acknowledge_late`]):
    /// an estimator takes its sample. Makarem (2021) ch. 5: the estimator takes a sample on
    /// every ACK, matched to its copy by a Transmission Counter.
    Sample,
}

/// From when the round-trip time an ACK reports is counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AckRtt {
    /// From the original transmission (`R = t_ack − t_0`; RFC 6298/CoCoA: an ACK after a
    /// retransmission is ambiguous, and CoCoA's weak estimator measures from the first
    /// transmission).
    #[default]
    FromOriginal,
    /// From the copy the ACK answers, when the host knows it (the `echoed` copy): the
    /// reported RTT is that copy's own, and the ACK identifies the copy for every algorithm.
    /// Makarem (2021) ch. 5-6: the simulator knows each transmission's RTT and feeds it.
    FromCopy,
}

/// Which timer a copy waits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RetransmitTimer {
    /// The timer the algorithm arms: its dithered first timer, its backoff for the later
    /// copies.
    #[default]
    Algorithm,
    /// Every copy, the original included, waits the undithered RTO estimate the exchange
    /// started from ([`Exchange::start_rto`](coapcc_cc::Exchange::start_rto)): loss detection
    /// only, no counteraction. The algorithm is still told every expiry (its retransmission
    /// count and state advance as usual); only the armed timer differs. Makarem (2021) ch. 5:
    /// the "RTO-only" runs that compare RTO estimators.
    Estimate,
}

/// The reliability layer's options (see the module documentation). `Default` is RFC 7252's
/// behaviour, that of every host before the options existed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ReliabilityOptions {
    /// What an ACK after a give-up does.
    pub late_ack: LateAck,
    /// From when an ACK's round-trip time counts.
    pub ack_rtt: AckRtt,
    /// Which timer a copy waits.
    pub retransmit_timer: RetransmitTimer,
}

impl ReliabilityOptions {
    /// The options of Makarem (2021)'s simulators: late ACKs are samples, and an ACK's RTT is
    /// that of the copy it answers.
    pub const MAKAREM2021: ReliabilityOptions = ReliabilityOptions {
        late_ack: LateAck::Sample,
        ack_rtt: AckRtt::FromCopy,
        retransmit_timer: RetransmitTimer::Algorithm,
    };

    /// Makarem (2021)'s chapter 5 "RTO-only" runs: [`ReliabilityOptions::MAKAREM2021`] with
    /// every copy waiting the RTO estimate.
    pub const MAKAREM2021_RTO_ONLY: ReliabilityOptions =
        ReliabilityOptions { retransmit_timer: RetransmitTimer::Estimate, ..ReliabilityOptions::MAKAREM2021 };

    /// Does the host need to identify the copy an ACK answers (and pass it as `echoed`) for
    /// an algorithm that does (`uses_copy_id`) or does not?
    #[inline]
    pub fn needs_copy(&self, uses_copy_id: bool) -> bool {
        uses_copy_id || self.ack_rtt == AckRtt::FromCopy
    }

    /// What an ACK of `x` arriving at `now` tells the algorithm (`echoed`: the copy it answers
    /// and when that copy was sent, if known).
    #[inline]
    pub fn ack_info(&self, x: &ConExchange, now: Instant, echoed: Option<(u32, Instant)>) -> AckInfo {
        let ex = x.exchange();
        match (echoed, self.ack_rtt) {
            (Some((k, sent)), AckRtt::FromCopy) => {
                let rtt = now - sent;
                AckInfo { retransmissions: ex.retransmissions(), rtt, copy: Some(CopyAck { ordinal: k, rtt }) }
            }
            (Some((k, sent)), AckRtt::FromOriginal) => AckInfo::with_copy(ex, now, k, sent),
            (None, _) => AckInfo::new(ex, now),
        }
    }
}

impl ConExchange {
    /// [`ConExchange::start`] under `opts`: under [`RetransmitTimer::Estimate`] the original
    /// waits the undithered estimate instead of the algorithm's first timer.
    #[inline]
    pub fn start_with<C: CongestionControl + ?Sized>(
        cc: &mut C,
        now: Instant,
        in_flight: u32,
        rng: &mut dyn Entropy,
        opts: &ReliabilityOptions,
    ) -> ConExchange {
        let mut x = ConExchange::start(cc, now, in_flight, rng);
        if opts.retransmit_timer == RetransmitTimer::Estimate {
            x.deadline = now + x.exchange().start_rto();
        }
        x
    }

    /// [`ConExchange::expire`] under `opts`: under [`RetransmitTimer::Estimate`] the copy
    /// waits the undithered estimate the exchange started from (the algorithm is told the
    /// expiry all the same).
    #[inline]
    pub fn expire_with<C: CongestionControl + ?Sized>(
        &mut self,
        cc: &mut C,
        now: Instant,
        opts: &ReliabilityOptions,
    ) -> Expiry {
        let e = self.expire(cc, now);
        match (e, opts.retransmit_timer) {
            (Expiry::Retransmit { ordinal, .. }, RetransmitTimer::Estimate) => {
                let timer = self.exchange().start_rto();
                self.deadline = now + timer;
                Expiry::Retransmit { ordinal, timer, deadline: self.deadline }
            }
            _ => e,
        }
    }

    /// The timer armed with the latest copy under `opts` ([`ConExchange::timer`] is the
    /// algorithm's).
    #[inline]
    pub fn armed_timer(&self, opts: &ReliabilityOptions) -> Duration {
        match opts.retransmit_timer {
            RetransmitTimer::Algorithm => self.timer(),
            RetransmitTimer::Estimate => self.exchange().start_rto(),
        }
    }

    /// [`ConExchange::acknowledge`] under `opts`: the first ACK arrived at `now`; the
    /// algorithm is told what [`ReliabilityOptions::ack_info`] says. With the default options this is
    /// exactly `acknowledge`.
    #[inline]
    pub fn acknowledge_with<C: CongestionControl + ?Sized>(
        &self,
        cc: &mut C,
        now: Instant,
        echoed: Option<(u32, Instant)>,
        opts: &ReliabilityOptions,
    ) -> AckInfo {
        let info = opts.ack_info(self, now, echoed);
        cc.on_ack(now, self.exchange(), &info);
        info
    }

    /// The first ACK of an exchange that already gave up ([`Expiry::GiveUp`])
    /// arrived at `now`. Under [`LateAck::Sample`] the algorithm is told as for any first ACK
    /// and the call returns what it was told; under [`LateAck::Ignore`] nothing happens
    /// (`None`). The host calls it at most once per exchange (later ACKs are duplicates).
    #[inline]
    pub fn acknowledge_late<C: CongestionControl + ?Sized>(
        &self,
        cc: &mut C,
        now: Instant,
        echoed: Option<(u32, Instant)>,
        opts: &ReliabilityOptions,
    ) -> Option<AckInfo> {
        match opts.late_ack {
            LateAck::Ignore => None,
            LateAck::Sample => Some(self.acknowledge_with(cc, now, echoed, opts)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coapcc_cc::{AlgorithmConfig, SplitMix64};

    fn ms(x: u64) -> Instant {
        Instant::from_millis(x)
    }

    /// The thesis estimator (no dither, no backoff): every copy waits the same RTO.
    fn mk() -> coapcc_cc::Algorithm {
        AlgorithmConfig::parse("makarem-rto:preset=makarem2021").unwrap().build()
    }

    #[test]
    fn defaults_are_rfc_7252_and_acknowledge_is_unchanged() {
        let o = ReliabilityOptions::default();
        assert_eq!((o.late_ack, o.ack_rtt), (LateAck::Ignore, AckRtt::FromOriginal));
        assert!(!o.needs_copy(false) && o.needs_copy(true));
        assert!(ReliabilityOptions::MAKAREM2021.needs_copy(false));
        // Same timeline under `acknowledge` and `acknowledge_with(default)`: same AckInfo,
        // same algorithm state after.
        for echoed in [None, Some((1u32, ms(2000)))] {
            let (mut a, mut b) = (mk(), mk());
            let mut rng = SplitMix64::new(1);
            let mut x = ConExchange::start(&mut a, ms(0), 0, &mut rng);
            let mut y = ConExchange::start(&mut b, ms(0), 0, &mut rng);
            x.expire(&mut a, ms(2000));
            y.expire(&mut b, ms(2000));
            let ia = x.acknowledge(&mut a, ms(2300), echoed);
            let ib = y.acknowledge_with(&mut b, ms(2300), echoed, &o);
            assert_eq!(ia, ib);
            assert_eq!(a.snapshot(), b.snapshot());
        }
    }

    /// Hand-computed: T_0 = 2 s (the RTO before any sample); copy 1 sent at 2 s is acknowledged
    /// at 2.3 s. From the original the RTT is 2.3 s, from the copy 0.3 s; the thesis estimator
    /// (acked-copy sample) takes 0.3 s either way, CoCoA+'s weak estimator takes what it is told.
    #[test]
    fn ack_rtt_from_the_copy() {
        let mut cc = AlgorithmConfig::parse("cocoa-plus:preset=makarem2021,ack_random_factor=1").unwrap().build();
        let mut rng = SplitMix64::new(1);
        let mut x = ConExchange::start(&mut cc, ms(0), 0, &mut rng);
        assert_eq!(x.deadline(), ms(2000));
        assert!(matches!(x.expire(&mut cc, ms(2000)), Expiry::Retransmit { ordinal: 1, .. }));
        let from_copy = ReliabilityOptions { ack_rtt: AckRtt::FromCopy, ..ReliabilityOptions::default() };
        let a = from_copy.ack_info(&x, ms(2300), Some((1, ms(2000))));
        assert_eq!((a.retransmissions, a.rtt), (1, Duration::from_millis(300)));
        assert_eq!(a.copy, Some(CopyAck { ordinal: 1, rtt: Duration::from_millis(300) }));
        let b = ReliabilityOptions::default().ack_info(&x, ms(2300), Some((1, ms(2000))));
        assert_eq!(b.rtt, Duration::from_millis(2300));
        // Without the copy, both count from the original.
        assert_eq!(from_copy.ack_info(&x, ms(2300), None).rtt, Duration::from_millis(2300));
        // CoCoA+: weak sample R: first weak sample SRTT_w = R, RTTVAR_w = R/2, E_w = 1.5 R;
        // RTO = 0.25 E_w + 0.75 * 2 s. R = 0.3: 1.6125 s; R = 2.3: 2.3625 s.
        let mut c2 = cc.clone();
        x.acknowledge_with(&mut cc, ms(2300), Some((1, ms(2000))), &from_copy);
        x.acknowledge_with(&mut c2, ms(2300), Some((1, ms(2000))), &ReliabilityOptions::default());
        assert!((cc.snapshot().rto.as_secs_f64() - 1.6125).abs() < 1e-9, "{:?}", cc.snapshot().rto);
        assert!((c2.snapshot().rto.as_secs_f64() - 2.3625).abs() < 1e-9, "{:?}", c2.snapshot().rto);
    }

    /// A late ACK after a give-up, hand-computed. makarem-rto, RTO 2 s before any sample, every
    /// copy waits 2 s: copies at 0, 2, 4, 6, 8 s; the exchange gives up at 10 s. The ACK of the
    /// original comes at 11 s (RTT 11 s). Ignored: the RTO stays 2 s. Sampled: the first sample
    /// gives SRTT = 11, RTTVAR = 5.5; the copy acknowledged (0) is older than the latest (4), so
    /// the exchange was spurious and K = 7: RTO = 11 + 7 * 5.5 = 49.5 s.
    #[test]
    fn late_ack_after_a_give_up() {
        let mut rng = SplitMix64::new(1);
        for (late, rto) in [(LateAck::Ignore, 2.0), (LateAck::Sample, 49.5)] {
            let opts = ReliabilityOptions { late_ack: late, ..ReliabilityOptions::default() };
            let mut cc = mk();
            let mut x = ConExchange::start(&mut cc, ms(0), 0, &mut rng);
            let mut sends = vec![ms(0)];
            loop {
                let fire = x.deadline();
                match x.expire(&mut cc, fire) {
                    Expiry::Retransmit { ordinal, timer, deadline } => {
                        assert_eq!((ordinal as usize, timer), (sends.len(), Duration::from_secs(2)));
                        assert_eq!(deadline, fire + timer);
                        sends.push(fire);
                    }
                    Expiry::GiveUp => break,
                }
            }
            assert_eq!(sends, [ms(0), ms(2000), ms(4000), ms(6000), ms(8000)]);
            assert_eq!(x.deadline(), ms(10_000), "gave up when the fifth timer expired");
            let told = x.acknowledge_late(&mut cc, ms(11_000), Some((0, ms(0))), &opts);
            assert_eq!(told.is_some(), late == LateAck::Sample);
            if let Some(info) = told {
                assert_eq!(info.retransmissions, 4);
                assert_eq!(info.copy.unwrap().rtt, Duration::from_secs(11));
            }
            assert!((cc.snapshot().rto.as_secs_f64() - rto).abs() < 1e-9, "{late:?}: {:?}", cc.snapshot().rto);
            // The next exchange starts from it.
            let y = ConExchange::start(&mut cc, ms(10_000), 0, &mut rng);
            assert!((y.timer().as_secs_f64() - rto).abs() < 1e-9);
        }
    }

    /// Estimate timers, hand-computed. Default CoAP at ack_timeout 1 s: the algorithm draws
    /// T_0 in [1, 1.5] s and doubles it; under `Estimate` every copy waits the undithered 1 s:
    /// copies at 0, 1, 2, 3, 4 s and the give-up at 5 s. The algorithm's own record still
    /// counts the retransmissions and backs its timer off.
    #[test]
    fn estimate_timers() {
        let opts = ReliabilityOptions { retransmit_timer: RetransmitTimer::Estimate, ..ReliabilityOptions::default() };
        let mut cc = AlgorithmConfig::parse("default:ack_timeout=1").unwrap().build();
        let mut rng = SplitMix64::new(7);
        let mut x = ConExchange::start_with(&mut cc, ms(0), 0, &mut rng, &opts);
        assert!(x.timer() > Duration::from_millis(1000), "the algorithm's dithered T_0: {:?}", x.timer());
        assert_eq!((x.deadline(), x.armed_timer(&opts)), (ms(1000), Duration::from_secs(1)));
        let mut fires = vec![];
        loop {
            let fire = x.deadline();
            fires.push(fire);
            match x.expire_with(&mut cc, fire, &opts) {
                Expiry::Retransmit { ordinal, timer, deadline } => {
                    assert_eq!((timer, deadline), (Duration::from_secs(1), fire + timer));
                    assert_eq!(x.retransmissions(), ordinal);
                    assert_eq!(x.timer(), x.exchange().timer(), "the algorithm's backed-off timer");
                    assert!(x.timer() >= Duration::from_secs(2 << (ordinal - 1)));
                }
                Expiry::GiveUp => break,
            }
        }
        assert_eq!(fires, [ms(1000), ms(2000), ms(3000), ms(4000), ms(5000)]);
        // The default options keep the algorithm's timers.
        let d = ReliabilityOptions::default();
        let mut cc = AlgorithmConfig::parse("default:ack_timeout=1").unwrap().build();
        let mut rng = SplitMix64::new(7);
        let mut y = ConExchange::start_with(&mut cc, ms(0), 0, &mut rng, &d);
        assert_eq!(y.deadline(), ms(0) + y.timer());
        let t0 = y.timer();
        let Expiry::Retransmit { timer, .. } = y.expire_with(&mut cc, y.deadline(), &d) else { panic!() };
        assert_eq!((timer, y.armed_timer(&d)), (2 * t0, 2 * t0));
    }
}
