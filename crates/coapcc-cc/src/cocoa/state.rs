//! [`Cocoa`]: the state machine shared by every member of the CoCoA family.

use super::choices::*;
use super::config::CocoaConfig;
use crate::api::{AckInfo, CongestionControl, EstimatorSnapshot, Exchange, GiveUpReason, Snapshot, TimeoutAction};
use crate::default::FbRetained;
use crate::estimator::{Estimator, EstimatorParams};
use crate::num::{cap, floor_pos, jround, pow2, ratio};
use crate::rng::Entropy;
use crate::time::{self, Instant};

// ---------------------------------------------------------------------------------------------
// Helpers of the family (ageing steps, integer milliseconds, the literal pseudocode).

/// Seconds to whole milliseconds (Java rounding); values held in ms are exact.
fn to_ms(s: f64) -> f64 {
    jround(s * 1e3)
}

/// One draft §4.3 ageing check of `rto` after `age` idle seconds. Returns the aged value and
/// the idle time not consumed, or `None` when no step applies.
pub(crate) fn age_value(rto: f64, age: f64, low: AgingLowRule) -> Option<(f64, f64)> {
    let (mut rto, mut age, mut stepped) = (rto, age, false);
    for _ in 0..256 {
        if rto > 0.0 && rto < 1.0 && age > 16.0 * rto {
            age -= 16.0 * rto;
            rto = match low {
                AgingLowRule::Double => 2.0 * rto,
                AgingLowRule::SetTo1s => 1.0,
            };
        } else if rto > 3.0 && age > 4.0 * rto {
            age -= 4.0 * rto;
            rto = 1.0 + 0.5 * rto;
        } else {
            break;
        }
        stepped = true;
    }
    if stepped {
        Some((rto, age))
    } else {
        None
    }
}

/// The ageing clock after a step at `now` with `residual` unconsumed idle seconds.
fn clock_after(now: Instant, residual: f64, keep: bool) -> Instant {
    if keep {
        Instant::from_nanos(now.as_nanos().saturating_sub(time::secs_to_nanos(residual)))
    } else {
        now
    }
}

/// The draft Appendix pseudocode update taken literally (AMBIG-8): no abs(), no first-sample
/// branch. Operates on the shared [`Estimator`]'s state.
fn literal_sample(e: &mut Estimator, p: &EstimatorParams, r: f64) -> f64 {
    e.rttvar = (1.0 - p.beta) * e.rttvar + p.beta * (e.srtt - r);
    e.srtt = (1.0 - p.alpha) * e.srtt + p.alpha * r;
    e.rto = e.srtt + p.k * e.rttvar;
    e.samples = e.samples.saturating_add(1);
    e.rto
}

fn estimator_from(s: Option<EstimatorSnapshot>) -> Estimator {
    match s {
        Some(s) if s.samples > 0 => Estimator {
            srtt: time::to_secs(s.srtt),
            rttvar: time::to_secs(s.rttvar),
            rto: time::to_secs(s.rto),
            samples: s.samples,
        },
        _ => Estimator::new(),
    }
}

// ---------------------------------------------------------------------------------------------

/// The estimator parameters (strong, weak) of a family member.
pub(crate) fn estimator_params(cfg: &CocoaConfig) -> (EstimatorParams, EstimatorParams) {
    match cfg.variant {
        CocoaVariant::Californium => (EstimatorParams::californium(4.0), EstimatorParams::californium(1.0)),
        CocoaVariant::Plus if cfg.gains == Gains::Swapped => {
            (EstimatorParams::swapped(4.0), EstimatorParams::swapped(1.0))
        }
        _ => (EstimatorParams::rfc6298(4.0), EstimatorParams::rfc6298(1.0)),
    }
}

/// Does an ACK after `n` retransmissions feed the weak estimator?
fn weak_ok(cfg: &CocoaConfig, n: u32) -> bool {
    n >= 1 && cfg.weak_max_n.map_or(true, |m| n <= m)
}

/// Cap of the overall estimate.
fn cap_overall(cfg: &CocoaConfig, rto: f64) -> f64 {
    match cfg.variant {
        CocoaVariant::Plus => cap(rto, cfg.overall_cap),
        CocoaVariant::Californium => rto,
        _ if cfg.cap_scope == CapScope::AllTimers => cap(rto, cfg.cap),
        _ => rto,
    }
}

/// The RTO estimation of the family without its backoff: the strong and weak estimators, the
/// overall RTO blended from them and the ageing clocks. [`Cocoa`] keeps one; BDP-CoAP
/// ([`crate::bdp`]) keeps one of its own with a CoCoA+ configuration, so that its RTO_init is
/// CoCoA+'s by construction (the same code), without carrying the rest of a [`Cocoa`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Estimates {
    pub(crate) strong: Estimator,
    pub(crate) weak: Estimator,
    /// Overall RTO, seconds (Californium: whole milliseconds).
    pub(crate) rto: f64,
    /// Ageing clocks: overall (last estimator update, reset or ageing step), strong, weak.
    pub(crate) t_upd: Instant,
    pub(crate) t_upd_s: Instant,
    pub(crate) t_upd_w: Instant,
    /// Retransmissions since the last strong sample (`strong_reset_after_3`).
    pub(crate) retx_since_strong: u32,
}

impl Estimates {
    /// The initial state at `now`: RTO = ACK_TIMEOUT, no sample.
    pub(crate) fn new(cfg: &CocoaConfig, now: Instant) -> Self {
        let mut rto = cfg.common.ack_timeout;
        if cfg.variant == CocoaVariant::Californium {
            rto = to_ms(rto) / 1e3;
        }
        Estimates {
            strong: Estimator::new(),
            weak: Estimator::new(),
            rto,
            t_upd: now,
            t_upd_s: now,
            t_upd_w: now,
            retx_since_strong: 0,
        }
    }

    /// Only the blind estimate exists.
    #[inline]
    pub(crate) fn is_blind(&self) -> bool {
        self.strong.is_empty() && self.weak.is_empty()
    }

    fn blend(&mut self, cfg: &CocoaConfig, w: f64, e: f64) {
        let (a, b) = if cfg.blend_inverted { (1.0 - w, w) } else { (w, 1.0 - w) };
        self.rto = cap_overall(cfg, a * e + b * self.rto);
    }

    /// Lazy ageing (draft §4.3 / §6 / §9.2) of every member but Californium's.
    #[inline]
    pub(crate) fn age(&mut self, cfg: &CocoaConfig, now: Instant) {
        let low = cfg.aging_low_rule;
        let keep = cfg.aging_residual == AgingResidual::Keep;
        if let Some((rto, residual)) = age_value(self.rto, time::to_secs(now - self.t_upd), low) {
            self.rto = cap_overall(cfg, rto);
            self.t_upd = clock_after(now, residual, keep);
        }
        if cfg.aging_target == AgingTarget::Estimators {
            for (e, t) in [(&mut self.strong, &mut self.t_upd_s), (&mut self.weak, &mut self.t_upd_w)] {
                if e.is_empty() {
                    continue;
                }
                if let Some((v, residual)) = age_value(e.rto, time::to_secs(now - *t), low) {
                    let s = v / e.rto; // e.rto > 0: age_value steps only positive values
                    e.srtt *= s;
                    e.rttvar *= s;
                    e.rto = v;
                    *t = clock_after(now, residual, keep);
                }
            }
        }
    }

    /// The undithered initial timer of an exchange admitted with `in_flight` others in
    /// flight: the overall RTO, the blind rule, CoCoA+'s initial cap (every member but
    /// Californium's).
    #[inline]
    pub(crate) fn initial_base(&self, cfg: &CocoaConfig, in_flight: u32) -> f64 {
        let mut base = self.rto;
        if in_flight > 0 && self.is_blind() {
            base *= match (cfg.variant, cfg.blind_rule) {
                (CocoaVariant::Plus, BlindRule::DoublePerExchange) => pow2(in_flight),
                _ => in_flight as f64 + 1.0,
            };
        }
        if cfg.variant == CocoaVariant::Plus {
            base = cap(base, cfg.initial_cap);
        }
        base
    }

    fn feed(e: &mut Estimator, p: &EstimatorParams, r: f64, cfg: &CocoaConfig) -> f64 {
        if cfg.first_sample == FirstSample::RtoEqualsInitial && !e.is_empty() && e.rto == cfg.common.ack_timeout {
            *e = Estimator::new();
        }
        if cfg.literal_pseudocode {
            literal_sample(e, p, r)
        } else {
            e.sample(p, r)
        }
    }

    /// The estimator update of an ACK after `n` retransmissions with RTT `r` (seconds, from
    /// the original transmission), every member but Californium's; `p` = (strong, weak)
    /// parameters from [`estimator_params`].
    pub(crate) fn ack(
        &mut self,
        cfg: &CocoaConfig,
        p: (&EstimatorParams, &EstimatorParams),
        now: Instant,
        n: u32,
        r: f64,
    ) {
        if n == 0 {
            self.retx_since_strong = 0;
            let e = Self::feed(&mut self.strong, p.0, r, cfg);
            let w = if cfg.variant == CocoaVariant::Strong { cfg.s_weight } else { 0.5 };
            self.blend(cfg, w, e);
            self.t_upd = now;
            self.t_upd_s = now;
        } else if cfg.variant != CocoaVariant::Strong && weak_ok(cfg, n) {
            let e = Self::feed(&mut self.weak, p.1, r, cfg);
            self.blend(cfg, 0.25, e);
            self.t_upd = now;
            self.t_upd_w = now;
        }
    }

    /// A retransmission was sent (CoCoA+'s `strong_reset_after_3`).
    pub(crate) fn on_retransmission(&mut self, cfg: &CocoaConfig) {
        if cfg.variant == CocoaVariant::Plus && cfg.strong_reset_after_3 {
            self.retx_since_strong = self.retx_since_strong.saturating_add(1);
            if self.retx_since_strong > 3 {
                self.strong = Estimator::new();
            }
        }
    }
}

/// A CoCoA-family instance for one destination endpoint.
#[derive(Clone, Debug)]
pub struct Cocoa {
    cfg: CocoaConfig,
    /// Strong and weak estimator parameters.
    sp: EstimatorParams,
    wp: EstimatorParams,
    /// The estimators, the overall RTO and their ageing clocks.
    est: Estimates,
    /// FullBackoff retained timer B, or Californium 2.x's persisted backoff.
    retained: Option<f64>,
    /// Dither factor of the exchange that produced `retained`.
    retained_d: f64,
}

impl Cocoa {
    /// A fresh instance; the ageing clock starts at [`Instant::ZERO`] (use
    /// [`CongestionControl::reset`] to start it elsewhere).
    pub fn new(cfg: CocoaConfig) -> Self {
        let (sp, wp) = estimator_params(&cfg);
        let mut c = Cocoa { cfg, sp, wp, est: Estimates::new(&cfg, Instant::ZERO), retained: None, retained_d: 1.0 };
        c.reset(Instant::ZERO);
        c
    }

    /// The configuration.
    pub fn config(&self) -> &CocoaConfig {
        &self.cfg
    }

    /// Load cross-exchange state, e.g. kept from an earlier flow to the same endpoint (the
    /// draft recommends keeping it for 255 s) or a test vector's starting state: the overall
    /// RTO, both estimators, and the retained timer (FullBackoff variants, or Californium 2.x
    /// persistence when enabled). All ageing clocks restart at `now`. The inverse of
    /// [`CongestionControl::snapshot`].
    pub fn restore(&mut self, now: Instant, snap: &Snapshot) {
        self.est.rto = time::to_secs(snap.rto);
        if self.cfg.variant == CocoaVariant::Californium {
            self.est.rto = to_ms(self.est.rto) / 1e3;
        }
        self.est.strong = estimator_from(snap.strong);
        let has_weak = !(self.cfg.variant == CocoaVariant::Strong
            || (self.cfg.variant == CocoaVariant::Californium && self.cfg.strong_only));
        self.est.weak = if has_weak { estimator_from(snap.weak) } else { Estimator::new() };
        self.retained = if self.keeps_retained() { snap.retained.map(time::to_secs) } else { None };
        self.retained_d = 1.0;
        self.est.t_upd = now;
        self.est.t_upd_s = now;
        self.est.t_upd_w = now;
        self.est.retx_since_strong = 0;
    }

    fn keeps_retained(&self) -> bool {
        match self.cfg.variant {
            CocoaVariant::FullBackoff1 | CocoaVariant::FullBackoff2 => true,
            CocoaVariant::Californium => self.cfg.californium2_backoff_persists,
            _ => false,
        }
    }

    fn is_fb(&self) -> bool {
        matches!(self.cfg.variant, CocoaVariant::FullBackoff1 | CocoaVariant::FullBackoff2)
    }

    /// Only the blind estimate exists.
    fn is_blind(&self) -> bool {
        self.est.is_blind()
    }

    fn vbf(&self, t: f64) -> f64 {
        self.cfg.vbf_table.factor(t, self.cfg.vbf_high_inclusive)
    }

    /// Cap of an initial (or retained) timer.
    fn cap_initial(&self, t: f64) -> f64 {
        match self.cfg.variant {
            CocoaVariant::Plus | CocoaVariant::Californium => t,
            _ if self.cfg.cap_scope == CapScope::AllTimers => cap(t, self.cfg.cap),
            _ => t,
        }
    }

    /// The backed-off timer after `prev` with factor `f`, capped.
    fn backoff(&self, prev: f64, f: f64) -> f64 {
        match self.cfg.variant {
            CocoaVariant::Plus => cap(f * prev, self.cfg.backoff_cap),
            CocoaVariant::Californium => {
                let max = to_ms(self.cfg.max_ack_timeout.min(CALIFORNIUM_MAX_RTO));
                floor_pos(f * to_ms(prev)).min(max) / 1e3
            }
            _ => match (self.cfg.cap, self.cfg.cap_scope) {
                (None, _) => f * prev,
                (Some(c), CapScope::BackoffNoShrink) => (f * prev).min(c.max(prev)),
                (Some(c), _) => (f * prev).min(c),
            },
        }
    }

    /// `T_{k+1}` of `ex`.
    fn next_timer(&self, ex: &Exchange) -> f64 {
        let f = if ex.factor > 0.0 { ex.factor } else { self.vbf(ex.timer) };
        self.backoff(ex.timer, f)
    }

    fn retain_from(&self, ex: &Exchange) -> f64 {
        match self.cfg.fb_retained {
            FbRetained::LastArmed => ex.timer,
            FbRetained::NextDoubled => self.next_timer(ex),
        }
    }

    /// Lazy ageing (draft §4.3 / §6 / §9.2), when an exchange is admitted.
    fn age(&mut self, now: Instant) {
        if self.cfg.variant == CocoaVariant::Californium {
            return self.age_californium(now);
        }
        self.est.age(&self.cfg, now);
    }

    /// Californium 3.x `checkAging`: integer ms, cumulative within one check, the timestamp
    /// reset at every step.
    fn age_californium(&mut self, now: Instant) {
        let mut age = (now - self.est.t_upd).as_millis() as f64;
        let mut rto = to_ms(self.est.rto);
        let mut stepped = false;
        for _ in 0..256 {
            if rto > 0.0 && rto < 1000.0 && age > 16.0 * rto {
                age -= 16.0 * rto;
                rto *= 2.0;
            } else if rto > 3000.0 && age > 4.0 * rto {
                age -= 4.0 * rto;
                rto = 1000.0 + ((rto as i64) / 2) as f64;
            } else {
                break;
            }
            stepped = true;
        }
        if stepped {
            self.est.rto = rto / 1e3;
            self.est.t_upd = now;
        }
    }

    fn start_core(&mut self, now: Instant, in_flight: u32, rng: &mut dyn Entropy) -> Exchange {
        let c = self.cfg.common;
        let (base, t0, d) = match self.retained {
            Some(b) if self.is_fb() => {
                if self.cfg.fb_redither {
                    let t = c.dither(b, rng);
                    (b, t, ratio(t, b))
                } else {
                    (b, b, self.retained_d)
                }
            }
            _ => {
                let base = self.est.initial_base(&self.cfg, in_flight);
                let t = c.dither(base, rng);
                (base, t, ratio(t, base))
            }
        };
        let t0 = self.cap_initial(t0).max(0.0);
        let mut ex = Exchange::new(now, t0, self.est.rto);
        ex.dither = d;
        if self.cfg.vbf == VbfMode::PerExchange {
            ex.factor = self.vbf(match self.cfg.vbf_select_on {
                VbfSelect::Dithered => t0,
                VbfSelect::Undithered => base,
            });
        }
        ex
    }

    fn start_californium(&mut self, now: Instant, in_flight: u32, rng: &mut dyn Entropy) -> Exchange {
        // RemoteEndpoint.getRTO(): current RTO (x exchanges in flight while blind), <= 32 s.
        let mut base = to_ms(self.retained.unwrap_or(self.est.rto));
        if in_flight > 0 && self.is_blind() {
            base *= in_flight as f64 + 1.0;
        }
        let base = base.min(INITIAL_RTO_CAP * 1e3);
        // Dithered to [RTO, 1.5 RTO] in whole ms, clamped to [MIN_RTO, min(MAX_ACK_TIMEOUT, 60 s)].
        let dithered = self.cfg.common.dither(base / 1e3, rng);
        let max = to_ms(self.cfg.max_ack_timeout.min(CALIFORNIUM_MAX_RTO));
        let t0 = floor_pos(dithered * 1e3).max(CALIFORNIUM_MIN_RTO * 1e3).min(max);
        let mut ex = Exchange::new(now, t0 / 1e3, self.est.rto);
        ex.dither = ratio(dithered, base / 1e3);
        ex.factor = self.vbf(match self.cfg.vbf_select_on {
            VbfSelect::Dithered => t0 / 1e3,
            VbfSelect::Undithered => base / 1e3,
        });
        ex
    }

    fn ack_core(&mut self, now: Instant, ex: &Exchange, n: u32, r: f64) {
        self.est.ack(&self.cfg, (&self.sp, &self.wp), now, n, r);
        match self.cfg.variant {
            CocoaVariant::FullBackoff1 => {
                self.retained = if n >= 1 { Some(self.retain_from(ex)) } else { None };
                self.retained_d = ex.dither;
            }
            CocoaVariant::FullBackoff2 => {
                self.retained = if n >= 1 { Some(self.fb2_retained(ex, n)) } else { None };
                self.retained_d = ex.dither;
            }
            _ => {}
        }
    }

    /// AMBIG-10: the FullBackoff2 retained timer after an exchange ACKed with `n ≥ 1`.
    fn fb2_retained(&self, ex: &Exchange, n: u32) -> f64 {
        let rto_after = self.est.rto;
        match self.cfg.fb2_rule {
            Fb2Rule::RebackoffFromMax => {
                let base = ex.rto_start.max(rto_after);
                let start = self.cap_initial(ex.dither * base);
                let f = match (self.cfg.vbf, self.cfg.vbf_select_on) {
                    (VbfMode::PerStep, _) => 0.0,
                    (VbfMode::PerExchange, VbfSelect::Dithered) => self.vbf(start),
                    (VbfMode::PerExchange, VbfSelect::Undithered) => self.vbf(base),
                };
                let mut t = start;
                for _ in 0..n {
                    let g = if f > 0.0 { f } else { self.vbf(t) };
                    t = self.backoff(t, g);
                }
                t
            }
            Fb2Rule::MaxTimerAndEstimate => self.retain_from(ex).max(self.cap_initial(ex.dither * rto_after)),
        }
    }

    fn ack_californium(&mut self, now: Instant, ex: &Exchange, n: u32, r: f64) {
        let persists = self.cfg.californium2_backoff_persists;
        if !(n == 0 || weak_ok(&self.cfg, n)) {
            // RtoType.NONE: no sample. 2.x kept the backed-off value as its current RTO.
            if persists {
                self.retained = Some(ex.timer);
            }
            return;
        }
        if persists {
            self.retained = None; // 2.x matchCurrentRTO()
        }
        if n > 0 && self.cfg.strong_only {
            return;
        }
        let (e, w) =
            if n == 0 { (self.est.strong.sample(&self.sp, r), 0.5) } else { (self.est.weak.sample(&self.wp, r), 0.25) };
        self.est.rto = jround(w * to_ms(e) + (1.0 - w) * to_ms(self.est.rto)) / 1e3;
        self.est.t_upd = now;
    }
}

impl CongestionControl for Cocoa {
    fn name(&self) -> &'static str {
        match self.cfg.variant {
            CocoaVariant::Cocoa => "cocoa",
            CocoaVariant::Strong => "cocoa-strong",
            CocoaVariant::FullBackoff1 => "cocoa-fb1",
            CocoaVariant::FullBackoff2 => "cocoa-fb2",
            CocoaVariant::Plus => "cocoa-plus",
            CocoaVariant::Californium => "californium-cocoa",
        }
    }

    fn max_retransmit(&self) -> u32 {
        self.cfg.common.max_retransmit
    }

    fn reset(&mut self, now: Instant) {
        self.est = Estimates::new(&self.cfg, now);
        self.retained = None;
        self.retained_d = 1.0;
    }

    fn start_exchange(&mut self, now: Instant, in_flight: u32, rng: &mut dyn Entropy) -> Exchange {
        if self.cfg.aging {
            self.age(now);
        }
        match self.cfg.variant {
            CocoaVariant::Californium => self.start_californium(now, in_flight, rng),
            _ => self.start_core(now, in_flight, rng),
        }
    }

    fn on_timeout(&mut self, _now: Instant, ex: &mut Exchange) -> TimeoutAction {
        let action = {
            let this = &*self;
            this.cfg.common.retransmit(ex, |ex| this.next_timer(ex))
        };
        if matches!(action, TimeoutAction::Retransmit(_)) {
            self.est.on_retransmission(&self.cfg);
        }
        action
    }

    fn on_ack(&mut self, now: Instant, ex: &Exchange, ack: &AckInfo) {
        let r = time::to_secs(ack.rtt);
        match self.cfg.variant {
            CocoaVariant::Californium => self.ack_californium(now, ex, ack.retransmissions, r),
            _ => self.ack_core(now, ex, ack.retransmissions, r),
        }
    }

    fn on_give_up(&mut self, _now: Instant, ex: &Exchange, _reason: GiveUpReason) {
        // AMBIG-20: no estimator update; FullBackoff keeps the last armed timer.
        if self.is_fb() {
            self.retained = Some(ex.timer);
            self.retained_d = ex.dither;
        } else if self.cfg.variant == CocoaVariant::Californium
            && self.cfg.californium2_backoff_persists
            && ex.retransmissions > 0
        {
            self.retained = Some(ex.timer);
        }
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            rto: time::secs(self.est.rto),
            strong: self.est.strong.snapshot(),
            weak: self.est.weak.snapshot(),
            retained: self.retained.map(time::secs),
            ..Snapshot::default()
        }
    }
}
