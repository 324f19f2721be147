//! [`Makarem`]: the state machine of the thesis's algorithms (see the module documentation
//! for how the rate-based controls pace sends through the one interface).

use super::config::{FourStateOrder, MakaremConfig, MakaremVariant, ProbeIncrease, IDC_CYCLE, MBC_MAX_WINDOW};
use super::estimator::MkEstimator;
use crate::api::{AckInfo, CongestionControl, EstimatorSnapshot, Exchange, GiveUpReason, Snapshot, TimeoutAction};
use crate::estimator::{Estimator, EstimatorParams};
use crate::num::{cap, ratio};
use crate::pcocoa::SampleSource;
use crate::rng::Entropy;
use crate::time::{self, Instant};

/// IDC-CoAP's spacing state (seconds).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Idc {
    spacing: f64,
    loss_spacing: f64,
    /// The last event was a loss ("the previous packet was lost").
    lost_prev: bool,
    /// Algorithm 8's cycle_index, Algorithm 9's n (11: no loss yet).
    counter: u32,
    /// Algorithm 8's spacing_before_probing.
    before_probing: f64,
}

/// MBC-CoAP's window and pacing cycle.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Mbc {
    /// Inter-ACK spacings (a ring of `m`), seconds.
    win: [f64; MBC_MAX_WINDOW],
    wlen: u8,
    wpos: u8,
    cycle: u8,
    /// The spacing for the send after next (computed at the last event).
    spacing: f64,
    /// The last ACK (the first ACK fills the window with its RTT, which is the inter-ACK
    /// time from the first send: M-AMBIG-11's initial last_ACK_time).
    last_ack: Instant,
}

/// Per-member state (one at a time: the instance stays as small as the largest member).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// `makarem-rto`: the estimator only.
    Rto,
    /// CoCoA-4-state: the CoCoA strong estimator (gains 1/4, 1/8, K = 4) and the state s.
    FourState {
        strong: Estimator,
        s: u32,
    },
    Idc(Idc),
    Mbc(Mbc),
}

/// An instance of one of the thesis's algorithms for one destination endpoint.
#[derive(Clone, Debug)]
pub struct Makarem {
    cfg: MakaremConfig,
    /// The thesis estimator (makarem-rto, IDC, MBC).
    est: MkEstimator,
    kind: Kind,
    /// Gap from `last_send` to the next send (the pacing in force), seconds.
    next_gap: f64,
    /// Time of the latest send (original or retransmission), once `sent_any`.
    last_send: Instant,
    sent_any: bool,
    /// The RTO armed with the latest send (loss detection), seconds.
    copy_rto: f64,
    /// The loss of the latest copy has been accounted.
    loss_done: bool,
}

impl Makarem {
    /// A fresh instance.
    pub fn new(cfg: MakaremConfig) -> Self {
        let mut m = Makarem {
            cfg,
            est: MkEstimator::new(cfg.common.ack_timeout),
            kind: Kind::Rto,
            next_gap: 0.0,
            last_send: Instant::ZERO,
            sent_any: false,
            copy_rto: 0.0,
            loss_done: true,
        };
        m.reset(Instant::ZERO);
        m
    }

    /// The configuration.
    pub fn config(&self) -> &MakaremConfig {
        &self.cfg
    }

    /// The pacing spacing of a rate-based control, seconds (IDC: the current spacing; MBC:
    /// the spacing computed at the last event, for the send after next); 0 otherwise.
    pub fn spacing(&self) -> f64 {
        match &self.kind {
            Kind::Idc(st) => st.spacing,
            Kind::Mbc(st) => st.spacing,
            _ => 0.0,
        }
    }

    /// IDC-CoAP's congestion level (loss_spacing), seconds; 0 otherwise.
    pub fn loss_spacing(&self) -> f64 {
        match &self.kind {
            Kind::Idc(st) => st.loss_spacing,
            _ => 0.0,
        }
    }

    /// CoCoA-4-state's backoff state s (1..=4); 0 for the other members.
    pub fn four_state(&self) -> u32 {
        match self.kind {
            Kind::FourState { s, .. } => s,
            _ => 0,
        }
    }

    /// The thesis estimator (makarem-rto, IDC, MBC).
    pub fn estimator(&self) -> &MkEstimator {
        &self.est
    }

    /// The RTO of the next transmission (undithered), seconds.
    fn rto(&self) -> f64 {
        match &self.kind {
            Kind::FourState { strong, .. } if strong.is_empty() => self.cfg.common.ack_timeout,
            Kind::FourState { strong, .. } => strong.rto,
            _ => self.est.rto,
        }
    }

    // -- IDC-CoAP -------------------------------------------------------------------------

    /// The loss branch of Algorithms 5, 7, 8, 9 at the RTO expiry of a copy armed with `rto`.
    fn idc_loss(cfg: &MakaremConfig, mut st: Idc, rto: f64) -> Idc {
        if cfg.variant == MakaremVariant::IdcProbing {
            if cfg.probe_save_loss {
                st.loss_spacing = st.spacing;
            }
            st.spacing = if st.counter <= IDC_CYCLE { cfg.iw * st.spacing } else { st.before_probing };
        } else {
            st.loss_spacing = st.spacing;
            st.spacing *= cfg.iw;
        }
        st.spacing = st.spacing.max(rto); // max(spacing, now − last_send) at the expiry
        st.lost_prev = true;
        st
    }

    /// The ACK branch; `d` = time since the last send.
    fn idc_ack(c: &MakaremConfig, st: &mut Idc, d: f64) {
        let lvl = c.margin * st.loss_spacing;
        match c.variant {
            MakaremVariant::IdcExtra if st.lost_prev => st.spacing -= 3.0 * (st.spacing - st.loss_spacing) / 4.0,
            MakaremVariant::IdcProbing => {
                if st.counter == IDC_CYCLE {
                    st.counter += 1;
                    st.before_probing = st.spacing;
                    st.spacing = st.loss_spacing;
                } else if st.counter < IDC_CYCLE {
                    st.counter += 1;
                    st.spacing -= 3.0 * (st.spacing - lvl) / 4.0;
                } else {
                    st.spacing = match c.probe_increase {
                        ProbeIncrease::Multiply => c.dw * st.spacing,
                        ProbeIncrease::Subtract => st.spacing - c.dw * st.spacing,
                    };
                }
                if st.lost_prev {
                    st.spacing = if st.counter <= IDC_CYCLE {
                        st.spacing - 3.0 * (st.spacing - lvl) / 4.0
                    } else {
                        st.before_probing - 3.0 * (st.before_probing - lvl) / 4.0
                    };
                    st.counter = 1;
                }
            }
            MakaremVariant::IdcExp => {
                let f = c.exp_factor;
                if st.counter == IDC_CYCLE {
                    st.counter += 1;
                    st.spacing = st.loss_spacing;
                } else if st.counter < IDC_CYCLE {
                    st.counter += 1;
                    st.spacing -= (st.spacing - lvl) * f;
                } else {
                    st.spacing *= 0.5;
                }
                if st.lost_prev {
                    st.counter = 1;
                    st.spacing -= (st.spacing - lvl) * f;
                }
            }
            _ => {
                let w = if st.spacing >= st.loss_spacing { c.dw } else { c.fw };
                st.spacing -= w * st.spacing;
            }
        }
        st.spacing = st.spacing.max(d).max(0.0);
        st.lost_prev = false;
    }

    // -- MBC-CoAP -------------------------------------------------------------------------

    /// One event of Algorithm 6 (an ACK with its inter-ACK `sample`, or an RTO expiry): the
    /// next send uses the spacing computed at the previous event; then the cycle advances and
    /// the spacing is recomputed from the window. Returns the gap to the next send.
    fn mbc_event(c: &MakaremConfig, st: &mut Mbc, sample: Option<f64>, next_is_retx: bool) -> f64 {
        let m = c.m.clamp(1, MBC_MAX_WINDOW as u32) as u8;
        if let Some(x) = sample {
            st.win[st.wpos as usize] = x;
            st.wpos = (st.wpos + 1) % m;
            st.wlen = (st.wlen + 1).min(m);
        }
        let gap = st.spacing;
        st.cycle = (st.cycle + 1) % 8;
        let pg = match st.cycle {
            0 if next_is_retx => c.drain_gain,
            0 => c.probe_gain,
            1 => c.drain_gain,
            _ => 1.0,
        };
        if st.wlen > 0 {
            let min = st.win[..st.wlen as usize].iter().fold(f64::INFINITY, |a, b| a.min(*b));
            st.spacing = min / pg;
        }
        gap
    }

    // -- Sends and losses of the rate-based controls ---------------------------------------

    /// Timer of a copy sent now: the RTO, or the paced send time of the retransmission.
    fn send_timer(&self) -> f64 {
        match &self.kind {
            Kind::Idc(st) => Self::idc_loss(&self.cfg, *st, self.copy_rto).spacing,
            Kind::Mbc(st) => st.spacing.max(self.copy_rto),
            _ => self.copy_rto,
        }
    }

    /// Account the loss of the latest copy (its RTO expired); `next_is_retx`: the exchange
    /// continues with a retransmission.
    fn loss(&mut self, next_is_retx: bool) {
        if self.loss_done {
            return;
        }
        self.loss_done = true;
        let c = &self.cfg;
        match &mut self.kind {
            Kind::Idc(st) => {
                *st = Self::idc_loss(c, *st, self.copy_rto);
                self.next_gap = st.spacing;
            }
            Kind::Mbc(st) => self.next_gap = Self::mbc_event(c, st, None, next_is_retx),
            _ => {}
        }
    }

    fn sent(&mut self, now: Instant) {
        self.last_send = now;
        self.sent_any = true;
        self.loss_done = false;
    }

    /// The thesis estimator's sample and spurious flag for `ack`.
    fn thesis_sample(&self, ack: &AckInfo) -> (Option<f64>, bool) {
        let n = ack.retransmissions;
        let copy = ack.copy.filter(|c| c.ordinal <= n);
        let r = match (self.cfg.sample, copy) {
            (SampleSource::AckedCopy, Some(c)) => Some(time::to_secs(c.rtt)),
            (SampleSource::AckedCopy, None) if n == 0 => Some(ack.rtt_secs()),
            (SampleSource::AckedCopy, None) => None,
            (SampleSource::Original, _) => Some(ack.rtt_secs()),
        };
        (r, copy.is_some_and(|c| c.ordinal < n))
    }
}

impl CongestionControl for Makarem {
    fn name(&self) -> &'static str {
        self.cfg.variant.name()
    }

    fn max_retransmit(&self) -> u32 {
        self.cfg.common.max_retransmit
    }

    fn reset(&mut self, _now: Instant) {
        let c = &self.cfg;
        self.est = MkEstimator::new(c.common.ack_timeout);
        self.kind = match c.variant {
            MakaremVariant::Rto => Kind::Rto,
            MakaremVariant::FourState => Kind::FourState { strong: Estimator::new(), s: 1 },
            MakaremVariant::Mbc => Kind::Mbc(Mbc {
                win: [0.0; MBC_MAX_WINDOW],
                wlen: 0,
                wpos: 0,
                cycle: 0,
                spacing: 0.0,
                last_ack: Instant::ZERO,
            }),
            _ => Kind::Idc(Idc {
                spacing: c.spacing0,
                loss_spacing: c.loss_spacing0,
                lost_prev: false,
                counter: c.counter0,
                before_probing: c.spacing0,
            }),
        };
        self.next_gap = if c.variant.is_idc() { c.spacing0 } else { 0.0 };
        self.last_send = Instant::ZERO;
        self.sent_any = false;
        self.copy_rto = 0.0;
        self.loss_done = true;
    }

    fn start_exchange(&mut self, now: Instant, _in_flight: u32, rng: &mut dyn Entropy) -> Exchange {
        match &mut self.kind {
            Kind::FourState { strong, s } => {
                if !self.cfg.four_state_persist {
                    *s = 1;
                }
                let rto = if strong.is_empty() { self.cfg.common.ack_timeout } else { strong.rto };
                let t0 = self.cfg.common.dither(rto, rng);
                let mut ex = Exchange::new(now, t0, rto);
                ex.dither = ratio(t0, rto);
                ex
            }
            Kind::Rto => {
                let rto = self.est.rto;
                Exchange::new(now, rto, rto) // no dither, no backoff
            }
            _ => {
                // Rate-based: the loss of an earlier copy not yet accounted (an exchange that
                // failed by RST) is accounted now.
                self.loss(false);
                self.copy_rto = self.est.rto;
                self.sent(now);
                Exchange::new(now, self.send_timer(), self.copy_rto)
            }
        }
    }

    fn on_timeout(&mut self, now: Instant, ex: &mut Exchange) -> TimeoutAction {
        let c = self.cfg;
        match &mut self.kind {
            Kind::Rto => c.common.retransmit(ex, |e| e.timer),
            Kind::FourState { s, .. } => {
                let (mut s2, t) = (*s, ex.timer);
                let t = match c.four_state_order {
                    FourStateOrder::ScaleThenIncrement => {
                        let t = t * c.vbf(s2);
                        s2 = (s2 + 1).min(4);
                        t
                    }
                    FourStateOrder::IncrementThenScale => {
                        s2 = (s2 + 1).min(4);
                        t * c.vbf(s2)
                    }
                };
                let action = c.common.retransmit(ex, |_| cap(t, c.backoff_cap));
                if matches!(action, TimeoutAction::Retransmit(_)) {
                    *s = s2;
                }
                action
            }
            _ => {
                let more = c.common.may_retransmit(ex);
                self.loss(more);
                if !more {
                    return TimeoutAction::GiveUp;
                }
                self.sent(now);
                let t = self.send_timer();
                c.common.retransmit(ex, |_| t)
            }
        }
    }

    fn on_ack(&mut self, now: Instant, ex: &Exchange, ack: &AckInfo) {
        if let Kind::FourState { strong, s } = &mut self.kind {
            if ack.retransmissions == 0 {
                let sp = EstimatorParams { min_rto: Some(self.cfg.min_rto), ..EstimatorParams::swapped(4.0) };
                strong.sample(&sp, ack.rtt_secs());
            }
            *s = s.saturating_sub(1).max(1);
            return;
        }
        let (r, spurious) = self.thesis_sample(ack);
        if let Some(r) = r {
            self.est.sample(&self.cfg.estimator_params(), r, spurious);
        }
        if matches!(self.kind, Kind::Rto) {
            return;
        }
        // Rate-based: a loss declared at the copy's RTO comes first (strictly after it: an ACK
        // at the RTO's instant is taken first, as the hosts take it before the timer).
        let d = time::to_secs(now - self.last_send);
        if d > self.copy_rto {
            let more = self.cfg.common.may_retransmit(ex);
            self.loss(more);
        }
        self.loss_done = true;
        let c = &self.cfg;
        match &mut self.kind {
            Kind::Idc(st) => {
                Self::idc_ack(c, st, d);
                self.next_gap = st.spacing;
            }
            Kind::Mbc(st) => {
                let sample = if st.wlen == 0 {
                    // M-AMBIG-11: the window starts filled with the first RTT sample.
                    let m = c.m.clamp(1, MBC_MAX_WINDOW as u32) as u8;
                    let r = ack.rtt_secs();
                    st.win[..m as usize].fill(r);
                    st.wlen = m;
                    st.wpos = 0;
                    None
                } else {
                    Some(time::to_secs(now - st.last_ack))
                };
                st.last_ack = now;
                self.next_gap = Self::mbc_event(c, st, sample, false);
            }
            _ => {}
        }
    }

    fn on_give_up(&mut self, _now: Instant, _ex: &Exchange, _reason: GiveUpReason) {
        // No estimator update on failure (the thesis's RTO only detects losses).
    }

    fn uses_copy_id(&self) -> bool {
        self.cfg.variant != MakaremVariant::FourState
    }

    fn earliest_start(&self, now: Instant) -> Instant {
        if self.sent_any && self.cfg.variant.is_rate_based() {
            (self.last_send + time::secs(self.next_gap)).max(now)
        } else {
            now
        }
    }

    fn snapshot(&self) -> Snapshot {
        match &self.kind {
            Kind::FourState { strong, s } => Snapshot {
                rto: time::secs(self.rto()),
                strong: strong.snapshot(),
                state: Some(["S1", "S2", "S3", "S4"][(s.clamp(&1, &4) - 1) as usize]),
                ..Snapshot::default()
            },
            _ => {
                let e = &self.est;
                let strong = (e.samples > 0).then(|| EstimatorSnapshot {
                    srtt: time::secs(e.srtt),
                    rttvar: time::secs(e.rttvar),
                    rto: time::secs(e.rto),
                    samples: e.samples,
                });
                Snapshot { rto: time::secs(self.rto()), strong, ..Snapshot::default() }
            }
        }
    }
}
