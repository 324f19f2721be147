//! BBR's long-term ("policer") bandwidth sampling and ProbeRTT's application-limited marking,
//! on hand-made ACK sequences, against Linux's `tcp_bbr.c` (4.9-4.18): `bbr_lt_bw_sampling`,
//! `bbr_lt_bw_interval_done`, `bbr_update_min_rtt`.
//!
//! Each ACK below is one round trip (its rate sample's `prior_delivered` is the delivered
//! count before it), 1 s apart, delivering 10 segments: a delivery rate of 10 segments/s.

use coapcc_cc::{Instant, SplitMix64};
use coapcc_tcp::cc::{Bbr, BbrMode, CaState, CcCtx, RateSample, TcpCongestionControl};
use coapcc_tcp::config::{BbrParams, TcpConfig};

struct Run {
    bbr: Bbr,
    ctx: CcCtx,
    rng: SplitMix64,
}

impl Run {
    fn new(p: BbrParams) -> Run {
        let mut ctx = CcCtx {
            cwnd: 10,
            ssthresh: u32::MAX,
            cwnd_cnt: 0,
            in_flight: 4,
            delivered: 0,
            delivered_time: Instant::ZERO,
            lost: 0,
            app_limited: 0,
            ca_state: CaState::Open,
            cwnd_limited: true,
            srtt: Some(0.5),
            min_rtt: Some(0.5),
            mtu: 296,
            init_cwnd: 4,
            abc_limit: None,
        };
        let mut bbr = Bbr::new(p, &TcpConfig::HELSINKI2018);
        bbr.init(&mut ctx, Instant::ZERO);
        Run { bbr, ctx, rng: SplitMix64::new(1) }
    }

    /// An ACK at `t` seconds delivering 10 segments, `lost` of them newly marked lost on it;
    /// `rtt` its RTT sample; `app_limited` whether the acknowledged segment was sent while
    /// the sample was marked application-limited.
    fn ack(&mut self, t: f64, lost: u32, rtt: f64, app_limited: bool) {
        let now = Instant::from_secs_f64(t);
        let prior = self.ctx.delivered;
        self.ctx.delivered += 10;
        self.ctx.delivered_time = now;
        self.ctx.lost += u64::from(lost);
        if self.ctx.app_limited != 0 && self.ctx.delivered > self.ctx.app_limited {
            self.ctx.app_limited = 0;
        }
        let rs = RateSample {
            delivered: 10,
            interval: 1.0,
            prior_delivered: prior,
            is_app_limited: app_limited,
            rtt: Some(rtt),
            losses: lost,
            acked_sacked: 10,
            prior_in_flight: self.ctx.in_flight,
        };
        self.bbr.cong_control(&mut self.ctx, &rs, now, &mut self.rng);
    }
}

/// RTT samples equal to the minimum keep the RTprop filter fresh (no ProbeRTT).
const MIN: f64 = 0.5;

#[test]
fn two_lossy_intervals_of_consistent_rate_make_bbr_pace_at_their_average_for_48_rounds() {
    let mut r = Run::new(BbrParams::default());
    // t = 1: the first loss starts an interval (delivered 10, lost 1 at its start).
    r.ack(1.0, 1, MIN, false);
    assert!(r.bbr.lt_is_sampling());
    r.ack(2.0, 0, MIN, false);
    r.ack(3.0, 0, MIN, false);
    // t = 4: 4 round trips, a loss, 6 lost of 30 delivered in the interval: 20 % >= 50/256.
    // The interval ends with 30 segments in 3 s; the rate is remembered, not used yet.
    r.ack(4.0, 6, MIN, false);
    assert!(!r.bbr.lt_use_bw());
    assert_eq!(r.bbr.mode(), BbrMode::ProbeBw, "Startup found the pipe full at t = 4");
    // The second interval: 8 of 40 lost (20 %), 40 segments in 4 s: the same rate. BBR now
    // takes the two intervals' average as the policed rate and paces at gain 1.
    for t in [5.0, 6.0, 7.0] {
        r.ack(t, 0, MIN, false);
    }
    r.ack(8.0, 8, MIN, false);
    assert!(r.bbr.lt_use_bw());
    assert_eq!(r.bbr.bw(), 10.0);
    assert_eq!(r.bbr.pacing_gain(), 1.0);
    // 48 ProbeBW round trips later it stops using it (and gain cycling restarts).
    for k in 1..48 {
        r.ack(8.0 + f64::from(k), 0, MIN, false);
        assert!(r.bbr.lt_use_bw(), "round {k}");
        assert_eq!(r.bbr.pacing_gain(), 1.0, "round {k}");
    }
    r.ack(56.0, 0, MIN, false);
    assert!(!r.bbr.lt_use_bw());
    assert!(!r.bbr.lt_is_sampling());
}

#[test]
fn an_interval_below_the_loss_threshold_or_shorter_than_4_rounds_does_not_end() {
    // 5 of 30 lost (16.7 % < 50/256): the interval goes on.
    let mut r = Run::new(BbrParams::default());
    r.ack(1.0, 1, MIN, false);
    r.ack(2.0, 0, MIN, false);
    r.ack(3.0, 0, MIN, false);
    r.ack(4.0, 5, MIN, false);
    // A second interval as lossy as the first of the test above would make a pair, but the
    // first never ended: the rates compared would be this one's only.
    for t in [5.0, 6.0, 7.0] {
        r.ack(t, 0, MIN, false);
    }
    r.ack(8.0, 20, MIN, false);
    assert!(!r.bbr.lt_use_bw());
    // Heavy loss after 3 round trips only: still too short.
    let mut r = Run::new(BbrParams::default());
    r.ack(1.0, 1, MIN, false);
    r.ack(2.0, 0, MIN, false);
    r.ack(3.0, 9, MIN, false);
    r.ack(4.0, 0, MIN, false);
    r.ack(5.0, 0, MIN, false);
    r.ack(6.0, 0, MIN, false);
    r.ack(7.0, 9, MIN, false);
    assert!(!r.bbr.lt_use_bw());
    assert!(r.bbr.lt_is_sampling());
}

#[test]
fn probe_rtt_marks_rate_samples_application_limited_which_restarts_long_term_sampling() {
    let mut r = Run::new(BbrParams::default());
    // A loss at t = 1 starts a long-term interval; RTT samples above the minimum let the
    // 10 s RTprop window (started at t = 0) expire.
    r.ack(1.0, 1, 0.6, false);
    for k in 2..=10 {
        r.ack(f64::from(k), 0, 0.6, false);
    }
    assert!(r.bbr.lt_is_sampling());
    assert_eq!(r.bbr.mode(), BbrMode::ProbeBw);
    assert_eq!(r.ctx.app_limited, 0);
    // t = 10.5: the window expired: ProbeRTT. Linux marks everything sent from now until
    // what is in flight now is delivered as application-limited (`tp->app_limited =
    // delivered + in flight`), on every ACK of ProbeRTT.
    r.ack(10.5, 0, 0.6, false);
    assert_eq!(r.bbr.mode(), BbrMode::ProbeRtt);
    assert_eq!(r.ctx.app_limited, r.ctx.delivered + u64::from(r.ctx.in_flight));
    // The interval survives that ACK (its segment was sent before the mark) ...
    assert!(r.bbr.lt_is_sampling());
    // ... but the first application-limited sample ends it: a long-term interval never spans
    // a ProbeRTT.
    r.ack(11.0, 0, 0.6, true);
    assert!(!r.bbr.lt_is_sampling());
    assert_eq!(r.ctx.app_limited, r.ctx.delivered + u64::from(r.ctx.in_flight));
}
