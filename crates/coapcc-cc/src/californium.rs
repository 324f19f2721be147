//! Eclipse Californium's alternative RTO estimators `BasicRto`, `LinuxRto` and
//! `PeakhopperRto` (specification §9.1).
//!
//! All three work on integer-millisecond RTT samples (`Math.round`, at least 1 ms), start from
//! `ack_timeout` (2 s) before any sample, arm the estimate undithered (`apply_dither=off` by
//! default; `on` applies the common `dither` mode) and back off binarily (×2) with every timer capped at `backoff_cap` (60 s, Californium's
//! MAX_ACK_TIMEOUT). Which ACKs give a sample: BasicRto takes strong and weak samples with at
//! most 2 retransmissions (Californium's layer filters out the rest); LinuxRto and PeakhopperRto
//! take strong samples (no retransmission) only. A failed exchange updates nothing.

use core::time::Duration;

use crate::api::{AckInfo, CongestionControl, EstimatorSnapshot, Exchange, GiveUpReason, Snapshot, TimeoutAction};
use crate::common::{Common, DitherMode};
use crate::num::{cap, fabs, jround, ratio};
use crate::params::{self, param, param_table, Param, ParamInfo, Params, Preset};
use crate::rng::Entropy;
use crate::time::{self, Instant};

/// Which Californium estimator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CfRtoVariant {
    /// `BasicRto`: RTO = `basic_rto_factor` × the last sample.
    Basic,
    /// `LinuxRto`: Linux TCP's mdev / mdev_max estimator.
    Linux,
    /// `PeakhopperRto` (PH-RTO): peak hopping over a 2-sample history.
    Peakhopper,
}

/// Largest number of retransmissions after which BasicRto still takes a (weak) sample.
pub const BASIC_MAX_N: u32 = 2;
/// LinuxRto's TCP_RTO_MIN analogue for mdev_max, ms.
pub const LINUX_MDEV_MIN_MS: i64 = 50;
/// PeakhopperRto's F (D = 1 − 1/F).
pub const PH_F: f64 = 24.0;
/// PeakhopperRto's B_max.
pub const PH_B_MAX: f64 = 1.0;
/// PeakhopperRto's granularity term, ms.
pub const PH_G_MS: f64 = 50.0;

/// Configuration of the Californium RTO estimators.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CfRtoConfig {
    /// Which estimator.
    pub variant: CfRtoVariant,
    /// RFC 7252 parameters; `ack_timeout` is the RTO before any sample. `dither` applies only
    /// with [`CfRtoConfig::apply_dither`].
    pub common: Common,
    /// Dither T_0 with the common `dither` mode. Off by default: Californium arms these
    /// estimates undithered (§9.1).
    pub apply_dither: bool,
    /// Cap of every armed timer, seconds (60).
    pub backoff_cap: Option<f64>,
    /// BasicRto's factor f (1.5 in 3.x; 1.0 in older 2.x code).
    pub basic_rto_factor: f64,
    /// PeakhopperRto: integer division in `delta = |R − RTT_prev| / R` (Californium).
    pub peakhopper_integer_delta: bool,
    /// PeakhopperRto: truncate the RTO to whole ms after each update (Californium stores a
    /// `long`; it also computes in float32, which is not reproduced).
    pub peakhopper_truncate: bool,
}

impl CfRtoConfig {
    /// Defaults for `variant`: the defaults of its parameter table; a parameter a variant does
    /// not list keeps the value shown here (unused by that variant).
    pub fn new(variant: CfRtoVariant) -> Self {
        let mut c = CfRtoConfig {
            variant,
            common: Common::default(),
            apply_dither: false,
            backoff_cap: Some(60.0),
            basic_rto_factor: 1.5,
            peakhopper_integer_delta: false,
            peakhopper_truncate: false,
        };
        params::apply_defaults(c.table(), &mut c);
        c
    }

    /// A fresh algorithm instance.
    pub fn build(&self) -> CfRto {
        CfRto::new(*self)
    }

    fn table(&self) -> &'static [Param<CfRtoConfig>] {
        match self.variant {
            CfRtoVariant::Basic => BASIC,
            CfRtoVariant::Linux => LINUX,
            CfRtoVariant::Peakhopper => PH,
        }
    }
}

const P_CAP: Param<CfRtoConfig> = param!(
    CfRtoConfig,
    "backoff_cap" | "max_ack_timeout" = "60",
    "none | seconds",
    "Cap of every armed timer; retransmissions double the timer (Californium MAX_ACK_TIMEOUT 60 s).",
    opt_secs(backoff_cap),
    shared = "backoff_cap"
);

const P_DITHER: Param<CfRtoConfig> = param!(
    CfRtoConfig,
    "apply_dither" | "californium_dither" = "off",
    "on | off",
    "Dither T_0 with the common `dither` mode; off (Californium, §9.1) arms the estimate as is.",
    flag(apply_dither)
);

param_table!(BASIC, BASIC_INFO: CfRtoConfig = [
    P_CAP,
    P_DITHER,
    param!(CfRtoConfig, "basic_rto_factor" = "1.5", "> 0",
        "RTO = f × last sample in integer ms (f = 1.5: R + R/2); 1.5 in Californium 3.x, 1.0 in older 2.x code.",
        positive(basic_rto_factor, 100.0, "a number > 0")),
]);

param_table!(LINUX, LINUX_INFO: CfRtoConfig = [P_CAP, P_DITHER]);

param_table!(PH, PH_INFO: CfRtoConfig = [
    P_CAP,
    P_DITHER,
    param!(CfRtoConfig, "peakhopper_integer_delta" = "off", "on | off",
        "Compute delta = |R − RTT_prev| / R with integer division, as Californium does (delta ∈ {0, 1, ...}).",
        flag(peakhopper_integer_delta)),
    param!(CfRtoConfig, "peakhopper_truncate" = "off", "on | off",
        "Truncate the RTO to whole ms after each update, as Californium's long arithmetic does (float32 is not reproduced).",
        flag(peakhopper_truncate)),
]);

impl Params for CfRtoConfig {
    params::table_params!();

    fn apply_preset(&mut self, preset: Preset) -> Result<(), ()> {
        // No publication ran these estimators on a reproduced testbed: every preset sets the
        // testbed's shared transmission parameters over the defaults (ACK_TIMEOUT is the RTO
        // before any sample; the dither mode matters only with apply_dither=on).
        *self = CfRtoConfig::new(self.variant);
        self.common.apply_preset(preset, DitherMode::Uniform);
        Ok(())
    }

    fn info(&self) -> &'static [ParamInfo] {
        match self.variant {
            CfRtoVariant::Basic => BASIC_INFO,
            CfRtoVariant::Linux => LINUX_INFO,
            CfRtoVariant::Peakhopper => PH_INFO,
        }
    }
}

/// Java `Math.round` to an integer (LinuxRto's `long` arithmetic).
fn ijround(x: f64) -> i64 {
    jround(x) as i64
}

/// LinuxRto state, integer ms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Linux {
    srtt: i64,
    mdev: i64,
    mdev_max: i64,
    rttvar: i64,
}

/// PeakhopperRto state, ms.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Peak {
    history: [f64; 2],
    rtt_prev: f64,
    b: f64,
}

/// Californium BasicRto, LinuxRto or PeakhopperRto.
#[derive(Clone, Debug)]
pub struct CfRto {
    cfg: CfRtoConfig,
    /// Current RTO, ms (`None` before any sample: `ack_timeout`).
    rto_ms: Option<f64>,
    samples: u32,
    /// Last sample taken, ms.
    last_ms: i64,
    linux: Linux,
    peak: Peak,
}

impl CfRto {
    /// A fresh instance.
    pub fn new(cfg: CfRtoConfig) -> Self {
        CfRto { cfg, rto_ms: None, samples: 0, last_ms: 0, linux: Linux::default(), peak: Peak::default() }
    }

    /// The configuration.
    pub fn config(&self) -> &CfRtoConfig {
        &self.cfg
    }

    /// LinuxRto's `mdev` (for traces and tests); `None` for the other variants or before a
    /// sample.
    pub fn linux_mdev(&self) -> Option<Duration> {
        (self.cfg.variant == CfRtoVariant::Linux && self.samples > 0)
            .then(|| Duration::from_millis(self.linux.mdev.max(0) as u64))
    }

    /// PeakhopperRto's current B (for traces and tests); `None` for the other variants or
    /// before a sample.
    pub fn peakhopper_b(&self) -> Option<f64> {
        (self.cfg.variant == CfRtoVariant::Peakhopper && self.samples > 0).then_some(self.peak.b)
    }

    fn rto(&self) -> f64 {
        match self.rto_ms {
            Some(ms) => ms / 1e3,
            None => self.cfg.common.ack_timeout,
        }
    }

    fn basic(&mut self, r: i64) {
        let f = self.cfg.basic_rto_factor;
        let rto = if f == 1.5 { r + r / 2 } else { (f * r as f64 + 1e-9) as i64 };
        self.rto_ms = Some(rto as f64);
    }

    fn linux_sample(&mut self, r: i64) {
        let l = &mut self.linux;
        if self.samples == 0 {
            l.srtt = r;
            l.mdev = r / 2;
            l.mdev_max = l.mdev.max(LINUX_MDEV_MIN_MS);
            l.rttvar = l.mdev_max;
        } else {
            l.srtt += ijround(0.125 * (r - l.srtt) as f64);
            let err = (r - l.srtt).abs();
            if r < l.srtt - l.mdev {
                l.mdev = ijround(0.96875 * l.mdev as f64 + 0.03125 * err as f64);
            } else {
                l.mdev = ijround(0.75 * l.mdev as f64) + ijround(0.25 * err as f64);
            }
            if l.mdev > l.mdev_max {
                l.mdev_max = l.mdev;
                if l.mdev_max > l.rttvar {
                    l.rttvar = l.mdev_max;
                }
            }
            if l.mdev_max < l.rttvar {
                l.rttvar = ijround(0.75 * l.rttvar as f64 + 0.25 * l.mdev_max as f64);
            }
            l.mdev_max = LINUX_MDEV_MIN_MS;
        }
        self.rto_ms = Some((l.srtt + 4 * l.rttvar) as f64);
    }

    fn peak_sample(&mut self, r: i64) {
        let d = 1.0 - 1.0 / PH_F;
        let rf = r as f64;
        let p = &mut self.peak;
        p.history = [p.history[1], rf];
        let rto = if self.samples == 0 {
            1.75 * rf // RTT_prev stays 0
        } else {
            let delta = if self.cfg.peakhopper_integer_delta {
                ((r - p.rtt_prev as i64).abs() / r) as f64
            } else {
                fabs(rf - p.rtt_prev) / rf
            };
            p.b = (2.0 * delta).max(d * p.b).min(PH_B_MAX);
            // B decays geometrically under steady RTTs; flush it to zero before it turns
            // subnormal (after ~700 identical samples), where float arithmetic is very slow.
            // Below 1e-12 it cannot change any RTO by even a nanosecond.
            if p.b < 1e-12 {
                p.b = 0.0;
            }
            let rtt_max = rf.max(p.rtt_prev);
            let rto_min = p.history[0].max(p.history[1]) + 2.0 * PH_G_MS;
            let old = self.rto_ms.unwrap_or(self.cfg.common.ack_timeout * 1e3);
            p.rtt_prev = rf;
            (d * old).max((1.0 + p.b) * rtt_max).max(rtt_max + (1.0 + PH_B_MAX) * PH_G_MS).max(rto_min)
        };
        let rto = if self.cfg.peakhopper_truncate { (rto as i64) as f64 } else { rto };
        self.rto_ms = Some(rto);
    }
}

impl CongestionControl for CfRto {
    fn name(&self) -> &'static str {
        match self.cfg.variant {
            CfRtoVariant::Basic => "basic-rto",
            CfRtoVariant::Linux => "linux-rto",
            CfRtoVariant::Peakhopper => "peakhopper-rto",
        }
    }

    fn max_retransmit(&self) -> u32 {
        self.cfg.common.max_retransmit
    }

    fn reset(&mut self, _now: Instant) {
        self.rto_ms = None;
        self.samples = 0;
        self.last_ms = 0;
        self.linux = Linux::default();
        self.peak = Peak::default();
    }

    fn start_exchange(&mut self, now: Instant, _in_flight: u32, rng: &mut dyn Entropy) -> Exchange {
        let rto = self.rto();
        let t = if self.cfg.apply_dither { self.cfg.common.dither(rto, rng) } else { rto };
        let t0 = cap(t, self.cfg.backoff_cap);
        let mut ex = Exchange::new(now, t0, rto);
        ex.dither = ratio(t0, rto);
        ex.factor = 2.0;
        ex
    }

    fn on_timeout(&mut self, _now: Instant, ex: &mut Exchange) -> TimeoutAction {
        let c = self.cfg.backoff_cap;
        self.cfg.common.retransmit(ex, |e| cap(2.0 * e.timer, c))
    }

    fn on_ack(&mut self, _now: Instant, _ex: &Exchange, ack: &AckInfo) {
        let n = ack.retransmissions;
        let max_n = match self.cfg.variant {
            CfRtoVariant::Basic => BASIC_MAX_N,
            CfRtoVariant::Linux | CfRtoVariant::Peakhopper => 0,
        };
        if n > max_n {
            return;
        }
        // Whole ms, Java Math.round, at least 1 ms (exact on the integer nanoseconds).
        let r = ((time::duration_nanos(ack.rtt).saturating_add(500_000) / 1_000_000).max(1)) as i64;
        match self.cfg.variant {
            CfRtoVariant::Basic => self.basic(r),
            CfRtoVariant::Linux => self.linux_sample(r),
            CfRtoVariant::Peakhopper => self.peak_sample(r),
        }
        self.last_ms = r;
        self.samples = self.samples.saturating_add(1);
    }

    fn on_give_up(&mut self, _now: Instant, _ex: &Exchange, _reason: GiveUpReason) {
        // AMBIG-20: no estimator update on failure.
    }

    fn snapshot(&self) -> Snapshot {
        let rto = time::secs(self.rto());
        let strong = (self.samples > 0).then(|| match self.cfg.variant {
            CfRtoVariant::Linux => EstimatorSnapshot {
                srtt: Duration::from_millis(self.linux.srtt.max(0) as u64),
                rttvar: Duration::from_millis(self.linux.rttvar.max(0) as u64),
                rto,
                samples: self.samples,
            },
            // No smoothing: SRTT is the last sample, RTTVAR is not kept.
            CfRtoVariant::Basic | CfRtoVariant::Peakhopper => EstimatorSnapshot {
                srtt: Duration::from_millis(self.last_ms as u64),
                rttvar: Duration::ZERO,
                rto,
                samples: self.samples,
            },
        });
        Snapshot { rto, strong, ..Snapshot::default() }
    }
}
