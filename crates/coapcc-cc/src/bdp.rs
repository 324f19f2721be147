//! BDP-CoAP: Ancillotti & Bruno's BBR-derived CoAP congestion control, as Makarem's 2021
//! thesis describes and evaluates it.
//!
//! BBR with these differences (the thesis's list):
//! 1. a 10-phase pacing cycle: one probing phase (gain 1.2), one preventive phase (0.8), the
//!    others 1; the cycle advances with every ACK that gives a bandwidth sample;
//! 2. an ACK of a retransmitted CON updates neither the pacing gain nor the bandwidth
//!    estimate: its sample is discarded (`include_retx_samples` keeps it, an ablation);
//! 3. the bandwidth filter is `(1 − w)·max + w·min` of the samples, the weight `w` of the min
//!    growing with the retransmissions (`min_weight`; `max_filter_only` keeps the max, an
//!    ablation);
//! 4. no time window: the filter covers the last 10 transmission attempts (the window
//!    slides at every send, original or retransmission; an attempt's sample is the one its
//!    ACK gives, if any);
//! 5. a loss is detected when RTO_init expires; RTO_init is CoCoA+'s (the same code,
//!    [`crate::cocoa`]'s estimation with a CoCoA+ configuration: strong and weak
//!    estimators, blending, caps, ageing, dithering), and successive losses of a message are
//!    **not** backed off: every copy waits the exchange's dithered RTO_init;
//! 6. it computes the BDP (bandwidth estimate × min RTT) and limits the packets in flight to
//!    it; with NSTART = 1 the BDP is between 0 and 1, so the limit is NSTART's
//!    ([`BdpCoap::inflight_limit`]).
//!
//! **Pacing in the one interface**, as for the thesis's rate-based controls
//! ([`crate::makarem`]): sends are spaced by `1 / (bandwidth estimate × pacing gain)`. A new
//! exchange is held back through [`CongestionControl::earliest_start`]; a retransmission by
//! its timer, armed with `max(RTO_init, gap)` (`pace_retransmissions`). Before the first
//! bandwidth sample nothing is paced.
//!
//! **Bandwidth sample** (not given by the sources, `bw_sample`): one packet delivered per
//! ACK, over the time since the previous ACK (BBR's delivery rate with one packet in flight;
//! the first ACK measures from the first send, so its sample is 1/RTT), or 1/RTT.
//!
//! The [`Snapshot`] shows CoCoA+'s estimators and RTO, and the pacing phase as `state`:
//! `STARTUP` before the first sample, then `PROBE`, `DRAIN` or `CRUISE` by the gain in force.

use core::fmt;

use crate::api::{AckInfo, CongestionControl, Exchange, GiveUpReason, Snapshot, TimeoutAction};
use crate::cocoa::{estimator_params, CocoaConfig, CocoaVariant, Estimates, PLUS_RTO};
use crate::common::Common;
use crate::num::ratio;
use crate::params::{self, param, KvWriter, Param, ParamInfo, Params, Preset, SetError};
use crate::rng::Entropy;
use crate::time::{self, Instant};

/// Largest filter window (the thesis: the last 10 attempts).
pub const BDP_MAX_WINDOW: usize = 10;
/// Longest pacing cycle.
pub const BDP_MAX_CYCLE: u32 = 32;

/// How one ACK measures the bandwidth (packets per second).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BwSample {
    /// One packet over the time since the previous ACK (from the first send for the first
    /// ACK): BBR's delivery rate with one packet in flight.
    InterAck,
    /// One packet over the RTT of the acknowledged copy.
    Rtt,
}

/// Names of [`BwSample`] values.
pub const BW_SAMPLES: &[(&str, BwSample)] = &[("inter-ack", BwSample::InterAck), ("rtt", BwSample::Rtt)];

/// Configuration of `bdp-coap`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BdpConfig {
    /// The CoCoA+ configuration RTO_init comes from (member [`CocoaVariant::Plus`]); its
    /// `common` holds the RFC 7252 parameters. Its backoff parameters are unused.
    pub rto: CocoaConfig,
    /// Attempts in the filter window (10).
    pub window: u32,
    /// Phases of the pacing cycle (10).
    pub cycle: u32,
    /// The probing phase, 1-based; the preventive phase follows it (1: probing first, as in
    /// BBR's gain cycle).
    pub probe_phase: u32,
    /// Probing pacing gain (1.2).
    pub probe_gain: f64,
    /// Preventive pacing gain (0.8).
    pub drain_gain: f64,
    /// Ablation: ACKs of retransmitted CONs give samples and advance the cycle too.
    pub include_retx_samples: bool,
    /// Ablation: the filter is the max of the samples (BBR's max filter).
    pub max_filter_only: bool,
    /// Weight of the min in the filter: `None` = retransmissions among the window's attempts
    /// / window (the placeholder the thesis's silence leaves), or a fixed weight.
    pub min_weight: Option<f64>,
    /// How an ACK measures the bandwidth.
    pub bw_sample: BwSample,
    /// Retransmissions respect the pacing gap too (their timer is `max(RTO_init, gap)`).
    pub pace_retransmissions: bool,
}

impl BdpConfig {
    /// Defaults: CoCoA+'s defaults for RTO_init, the thesis's constants, proposed gap
    /// resolutions.
    pub fn new() -> Self {
        let mut c = BdpConfig {
            rto: CocoaConfig::new(CocoaVariant::Plus),
            window: 10,
            cycle: 10,
            probe_phase: 1,
            probe_gain: 1.2,
            drain_gain: 0.8,
            include_retx_samples: false,
            max_filter_only: false,
            min_weight: None,
            bw_sample: BwSample::InterAck,
            pace_retransmissions: true,
        };
        params::apply_defaults(BDP, &mut c);
        c
    }

    /// A fresh algorithm instance.
    pub fn build(&self) -> BdpCoap {
        BdpCoap::new(*self)
    }

    /// The pacing gain of phase `phase` (1-based; 0: before any sample, gain 1).
    pub fn gain(&self, phase: u32) -> f64 {
        if phase == 0 {
            1.0
        } else if phase == self.probe_phase {
            self.probe_gain
        } else if phase == self.probe_phase % self.cycle + 1 {
            self.drain_gain
        } else {
            1.0
        }
    }
}

impl Default for BdpConfig {
    fn default() -> Self {
        BdpConfig::new()
    }
}

fn set_min_weight(c: &mut BdpConfig, v: &str) -> Result<(), SetError> {
    c.min_weight = if params::eq_choice("retx-fraction", v) {
        None
    } else {
        Some(params::parse_f64(v, 0.0, 1.0, "retx-fraction or a weight in 0..=1")?)
    };
    Ok(())
}

fn write_min_weight(c: &BdpConfig, k: &'static str, w: &mut KvWriter<'_>) -> fmt::Result {
    match c.min_weight {
        None => w.kv(k, "retx-fraction"),
        Some(x) => w.kv(k, x),
    }
}

const BDP: &[Param<BdpConfig>] = &[
    param!(BdpConfig, "window" | "bdp_window" = "10", "1..=10",
        "Transmission attempts the bandwidth filter covers; it slides at every send, original or retransmission (the thesis: 10).",
        int(window, 1, BDP_MAX_WINDOW as u32, "an integer 1..=10")),
    param!(BdpConfig, "cycle" | "bdp_cycle" = "10", "2..=32",
        "Phases of the pacing cycle (10); it advances with every ACK that gives a bandwidth sample.",
        int(cycle, 2, BDP_MAX_CYCLE, "an integer 2..=32")),
    param!(BdpConfig, "probe_phase" = "1", "1..=cycle",
        "The probing phase of the cycle, 1-based; the preventive phase follows it. Not given: 1 puts probing first and the preventive phase second, as BBR's gain cycle.",
        int(probe_phase, 1, BDP_MAX_CYCLE, "an integer 1..=32")),
    param!(BdpConfig, "probe_gain" = "1.2", "> 0",
        "Pacing gain of the probing phase (1.2): the sending rate is the bandwidth estimate times the gain.",
        positive(probe_gain, 100.0, "a number > 0")),
    param!(BdpConfig, "drain_gain" = "0.8", "> 0",
        "Pacing gain of the preventive phase (0.8).",
        positive(drain_gain, 100.0, "a number > 0")),
    param!(BdpConfig, "min_weight" | "bdp_min_weight" = "retx-fraction", "retx-fraction | 0..=1",
        "Weight w of the min in the filter (1 - w) * max + w * min. The sources say only that it grows with the retransmissions: retx-fraction is (retransmissions among the window's attempts) / window, a placeholder; a number fixes w.",
        custom(set_min_weight, write_min_weight)),
    param!(BdpConfig, "include_retx_samples" | "bdp_include_retx_samples" = "off", "on | off",
        "Ablation of the thesis: ACKs of retransmitted CONs give bandwidth samples and advance the pacing cycle too (BDP-CoAP discards them).",
        flag(include_retx_samples)),
    param!(BdpConfig, "max_filter_only" | "bdp_max_filter_only" = "off", "on | off",
        "Ablation of the thesis: the min-max filter is replaced by the max of the window's samples.",
        flag(max_filter_only)),
    param!(BdpConfig, "bw_sample" = "inter-ack", "inter-ack | rtt",
        "Bandwidth sample of an ACK (not given): one packet over the time since the previous ACK (the first ACK: since the first send), BBR's delivery rate with one packet in flight; or one packet over the RTT.",
        choice(bw_sample, BW_SAMPLES, "inter-ack or rtt")),
    param!(BdpConfig, "pace_retransmissions" = "on", "on | off",
        "Retransmissions respect the pacing gap too: a copy's timer is max(RTO_init, gap); off: every copy waits RTO_init exactly.",
        flag(pace_retransmissions)),
];

const N_BDP: usize = BDP.len();
const N_INFO: usize = N_BDP + PLUS_RTO.len();
const BDP_INFOS: [ParamInfo; N_BDP] = params::infos::<BdpConfig, N_BDP>(BDP);
const PLUS_RTO_INFOS: [ParamInfo; PLUS_RTO.len()] = params::infos::<CocoaConfig, { PLUS_RTO.len() }>(PLUS_RTO);
const INFO_ARRAY: [ParamInfo; N_INFO] = params::concat_infos::<N_INFO>(&BDP_INFOS, &PLUS_RTO_INFOS);
const INFO: &[ParamInfo] = &INFO_ARRAY;

impl Params for BdpConfig {
    fn set(&mut self, key: &str, value: &str) -> Result<(), SetError> {
        if let Some(r) = params::set_param(BDP, self, key, value) {
            return r;
        }
        params::set_param(PLUS_RTO, &mut self.rto, key, value).unwrap_or_else(|| self.rto.common.set(key, value))
    }

    fn shared_key(&self, name: &str) -> Option<&'static str> {
        params::shared_key(BDP, name)
            .or_else(|| params::shared_key(PLUS_RTO, name))
            .or_else(|| Common::shared_key(name))
    }

    fn write_value(&self, key: &str, w: &mut dyn fmt::Write) -> Option<fmt::Result> {
        params::write_value(BDP, self, key, w)
            .or_else(|| params::write_value(PLUS_RTO, &self.rto, key, w))
            .or_else(|| self.rto.common.write_value(key, w))
    }

    fn write(&self, w: &mut dyn fmt::Write) -> fmt::Result {
        let mut w = KvWriter::new(w);
        self.rto.common.write(&mut w)?;
        params::write_params(BDP, self, &mut w)?;
        params::write_params(PLUS_RTO, &self.rto, &mut w)
    }

    fn apply_preset(&mut self, preset: Preset) -> Result<(), ()> {
        // RTO_init is CoCoA+'s under every preset: the preset's CoCoA+ settings (makarem2021:
        // the thesis's CoCoA+, swapped gains; ancillotti-cooja: Ancillotti & Bruno's Contiki
        // runs) and its shared transmission parameters. The BDP constants are the thesis's,
        // the defaults.
        // Only the fields of the RTO estimation are taken, so that the unused backoff fields
        // keep their defaults and the textual form (which lists the RTO parameters only)
        // round-trips.
        let mut p = CocoaConfig::new(CocoaVariant::Plus);
        p.apply_preset(preset)?;
        let mut c = BdpConfig::new();
        let r = &mut c.rto;
        r.common = p.common;
        r.gains = p.gains;
        r.weak_max_n = p.weak_max_n;
        r.overall_cap = p.overall_cap;
        r.initial_cap = p.initial_cap;
        r.aging = p.aging;
        r.aging_target = p.aging_target;
        r.aging_residual = p.aging_residual;
        r.aging_low_rule = p.aging_low_rule;
        r.blend_inverted = p.blend_inverted;
        r.strong_reset_after_3 = p.strong_reset_after_3;
        r.first_sample = p.first_sample;
        r.blind_rule = p.blind_rule;
        *self = c;
        Ok(())
    }

    fn info(&self) -> &'static [ParamInfo] {
        INFO
    }

    fn validate(&self) -> Result<(), (&'static str, &'static str)> {
        if self.probe_phase > self.cycle {
            return Err(("probe_phase", "must not exceed cycle"));
        }
        self.rto.validate()
    }
}

/// A BDP-CoAP instance for one destination endpoint.
#[derive(Clone, Debug)]
pub struct BdpCoap {
    cfg: BdpConfig,
    /// CoCoA+'s RTO estimation (the same state and code as `cocoa-plus`, without backoff).
    est: Estimates,
    /// Bandwidth samples of the last attempts (a ring), packets/s; 0: the attempt has none.
    win: [f64; BDP_MAX_WINDOW],
    /// Bit i: slot i holds a retransmission.
    retx_mask: u16,
    /// Next slot to write, and the number of slots in use.
    wpos: u8,
    wlen: u8,
    /// Pacing phase, 1-based (0: no sample yet).
    phase: u8,
    sent_any: bool,
    /// The latest send (original or retransmission).
    last_send: Instant,
    /// The latest ACK (the first send until then).
    last_ack: Instant,
    /// Minimum RTT seen, seconds (infinite: none).
    min_rtt: f64,
}

impl BdpCoap {
    /// A fresh instance.
    pub fn new(cfg: BdpConfig) -> Self {
        let mut b = BdpCoap {
            cfg,
            est: Estimates::new(&cfg.rto, Instant::ZERO),
            win: [0.0; BDP_MAX_WINDOW],
            retx_mask: 0,
            wpos: 0,
            wlen: 0,
            phase: 0,
            sent_any: false,
            last_send: Instant::ZERO,
            last_ack: Instant::ZERO,
            min_rtt: f64::INFINITY,
        };
        b.reset(Instant::ZERO);
        b
    }

    /// The configuration.
    pub fn config(&self) -> &BdpConfig {
        &self.cfg
    }

    fn slots(&self) -> usize {
        self.cfg.window.clamp(1, BDP_MAX_WINDOW as u32) as usize
    }

    /// Retransmissions among the attempts in the window.
    pub fn window_retransmissions(&self) -> u32 {
        self.retx_mask.count_ones()
    }

    /// The filter's weight of the min.
    pub fn min_weight(&self) -> f64 {
        match self.cfg.min_weight {
            Some(w) => w,
            None => self.window_retransmissions() as f64 / self.slots() as f64,
        }
    }

    /// The bandwidth estimate, packets/s: the filter over the window's samples; 0 without
    /// a sample.
    pub fn bandwidth(&self) -> f64 {
        let n = self.wlen as usize;
        let (mut max, mut min) = (0.0f64, f64::INFINITY);
        for &x in self.win[..n].iter().filter(|x| **x > 0.0) {
            max = max.max(x);
            min = min.min(x);
        }
        if max <= 0.0 {
            return 0.0;
        }
        if self.cfg.max_filter_only {
            return max;
        }
        let w = self.min_weight();
        (1.0 - w) * max + w * min
    }

    /// The pacing phase (1-based; 0 before the first sample).
    pub fn phase(&self) -> u32 {
        self.phase as u32
    }

    /// The pacing gain in force.
    pub fn pacing_gain(&self) -> f64 {
        self.cfg.gain(self.phase as u32)
    }

    /// The gap between sends, seconds: `1 / (bandwidth × gain)`; 0 before the first sample.
    pub fn gap(&self) -> f64 {
        let rate = self.bandwidth() * self.pacing_gain();
        if rate > 0.0 {
            1.0 / rate
        } else {
            0.0
        }
    }

    /// The minimum RTT seen, seconds (`None` before the first sample).
    pub fn min_rtt(&self) -> Option<f64> {
        self.min_rtt.is_finite().then_some(self.min_rtt)
    }

    /// The bandwidth-delay product, packets (0 before the first sample).
    pub fn bdp(&self) -> f64 {
        self.min_rtt().map_or(0.0, |r| self.bandwidth() * r)
    }

    /// Packets BDP-CoAP allows in flight: `max(1, ⌈BDP⌉)`. Endpoints admit at most NSTART
    /// exchanges besides; with NSTART = 1 (the thesis) this is always 1.
    pub fn inflight_limit(&self) -> u32 {
        let b = self.bdp();
        let mut n = b as u32;
        if (n as f64) < b {
            n += 1;
        }
        n.max(1)
    }

    /// A send at `now`: the window slides by one attempt.
    fn sent(&mut self, now: Instant, retransmission: bool) {
        if !self.sent_any {
            self.last_ack = now; // the first ACK measures from the first send
        }
        self.sent_any = true;
        self.last_send = now;
        let slots = self.slots();
        let i = self.wpos as usize % slots;
        self.win[i] = 0.0;
        if retransmission {
            self.retx_mask |= 1 << i;
        } else {
            self.retx_mask &= !(1 << i);
        }
        self.wpos = ((i + 1) % slots) as u8;
        self.wlen = (self.wlen as usize + 1).min(slots) as u8;
    }

    /// The timer of a copy sent now whose exchange started with `t0`.
    fn copy_timer(&self, t0: f64) -> f64 {
        if self.cfg.pace_retransmissions {
            t0.max(self.gap())
        } else {
            t0
        }
    }
}

impl CongestionControl for BdpCoap {
    fn name(&self) -> &'static str {
        "bdp-coap"
    }

    fn max_retransmit(&self) -> u32 {
        self.cfg.rto.common.max_retransmit
    }

    fn reset(&mut self, now: Instant) {
        self.est = Estimates::new(&self.cfg.rto, now);
        self.win = [0.0; BDP_MAX_WINDOW];
        self.retx_mask = 0;
        self.wpos = 0;
        self.wlen = 0;
        self.phase = 0;
        self.sent_any = false;
        self.last_send = Instant::ZERO;
        self.last_ack = Instant::ZERO;
        self.min_rtt = f64::INFINITY;
    }

    fn start_exchange(&mut self, now: Instant, in_flight: u32, rng: &mut dyn Entropy) -> Exchange {
        // CoCoA+'s RTO_init: ageing, the blind rule, the initial cap, dithering.
        let c = &self.cfg.rto;
        if c.aging {
            self.est.age(c, now);
        }
        let base = self.est.initial_base(c, in_flight);
        let t0 = c.common.dither(base, rng).max(0.0);
        self.sent(now, false);
        let mut ex = Exchange::new(now, self.copy_timer(t0), self.est.rto);
        ex.dither = ratio(t0, base);
        ex.series = t0; // every copy waits the same RTO_init: no backoff factor
        ex
    }

    fn on_timeout(&mut self, now: Instant, ex: &mut Exchange) -> TimeoutAction {
        let common = self.cfg.rto.common;
        if !common.may_retransmit(ex) {
            return TimeoutAction::GiveUp;
        }
        self.sent(now, true);
        self.est.on_retransmission(&self.cfg.rto);
        let t = self.copy_timer(ex.series);
        common.retransmit(ex, |_| t)
    }

    fn on_ack(&mut self, now: Instant, _ex: &Exchange, ack: &AckInfo) {
        let n = ack.retransmissions;
        let (sp, wp) = estimator_params(&self.cfg.rto);
        self.est.ack(&self.cfg.rto, (&sp, &wp), now, n, ack.rtt_secs());
        let since_ack = time::to_secs(now - self.last_ack);
        self.last_ack = now;
        if n > 0 && !self.cfg.include_retx_samples {
            return; // the sample is discarded; the gain stays
        }
        // The RTT of the acknowledged copy: from the original, or from the latest copy.
        let rtt = if n == 0 { ack.rtt_secs() } else { time::to_secs(now - self.last_send) };
        let interval = match self.cfg.bw_sample {
            BwSample::InterAck => since_ack,
            BwSample::Rtt => rtt,
        };
        if rtt > 0.0 {
            self.min_rtt = self.min_rtt.min(rtt);
        }
        if interval > 0.0 && self.wlen > 0 {
            let slots = self.slots();
            let latest = (self.wpos as usize + slots - 1) % slots;
            self.win[latest] = 1.0 / interval;
        }
        self.phase = (self.phase as u32 % self.cfg.cycle + 1) as u8;
    }

    fn on_give_up(&mut self, _now: Instant, _ex: &Exchange, _reason: GiveUpReason) {
        // No estimator update on failure (as CoCoA+); the window already holds the attempts.
    }

    fn earliest_start(&self, now: Instant) -> Instant {
        if self.sent_any {
            (self.last_send + time::secs(self.gap())).max(now)
        } else {
            now
        }
    }

    fn snapshot(&self) -> Snapshot {
        let g = self.pacing_gain();
        let state = if self.phase == 0 {
            "STARTUP"
        } else if g > 1.0 {
            "PROBE"
        } else if g < 1.0 {
            "DRAIN"
        } else {
            "CRUISE"
        };
        Snapshot {
            rto: time::secs(self.est.rto),
            strong: self.est.strong.snapshot(),
            weak: self.est.weak.snapshot(),
            state: Some(state),
            ..Snapshot::default()
        }
    }
}
