//! pCoCoA (Bolettieri et al., Ad Hoc Networks 2018), **partial**: specification §8.
//!
//! Only a secondary description exists (Algorithm 1 as reproduced in Makarem's 2021 thesis),
//! so every gap is a named parameter here. The rules that *are* given:
//!
//! - a Transmission Counter echoed by the server identifies the acknowledged copy
//!   ([`AckInfo::copy`]); an ACK for an earlier copy than the last one sent reveals a spurious
//!   retransmission;
//! - first sample R: `SRTT = R`, `RTTVAR = R/2`, `mdev_max = max(R/2, 250 ms)`,
//!   `RTO = SRTT + mdev_max`; 2 s before any sample;
//! - Block 1: SRTT first (α = 1/8), then RTTVAR with weight γ if `R < SRTT − RTTVAR`,
//!   β = 1/4 if `|SRTT − R| > RTTVAR`, else α;
//! - Block 2 (only if `R > SRTT`): RTTVAR above mdev_max for 3 consecutive samples →
//!   mdev_max = mean of those 3 RTTVAR; second branch per `block2`;
//! - Block 3: k = 6 if this exchange revealed a spurious retransmission, else 4;
//! - Block 4: `SRTO = SRTT + max(k·RTTVAR, mdev_max)`, `RTO = (1−δ)·SRTO + δ·RTO`;
//! - CoCoA+ backoff: one variable backoff factor per exchange (table `betzler2015`),
//!   `T_0 = RTO·U[1, 1.5]`, caps as CoCoA+; no update on failure.

use core::fmt;

use crate::api::{AckInfo, CongestionControl, EstimatorSnapshot, Exchange, GiveUpReason, Snapshot, TimeoutAction};
use crate::common::{Common, DitherMode};
use crate::num::{cap, fabs, ratio};
use crate::params::{self, param, param_table, KvWriter, ParamInfo, Params, Preset, SetError};
use crate::rng::Entropy;
use crate::time::{self, Instant};

/// SRTT gain α of Algorithm 1 (also the "else" RTTVAR weight).
pub const ALPHA: f64 = 0.125;
/// RTTVAR weight β of Algorithm 1 (also the Block 2 decay weight).
pub const BETA: f64 = 0.25;
/// Lower bound of the initial mdev_max, seconds.
pub const MDEV_MAX_MIN: f64 = 0.25;

/// AMBIG-24: Block 2's second branch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block2 {
    /// Thesis prose: RTTVAR *below* mdev_max for 8 consecutive samples →
    /// `mdev_max ← (1−β)·mdev_max + β·RTTVAR`.
    DecayOn8Below,
    /// As printed ("RTTVAR > mdev_max for 8 consecutive times"): unreachable, because the
    /// 3-sample branch fires first, so mdev_max never decays.
    Literal,
}

/// Names of [`Block2`].
pub const BLOCK2_MODES: &[(&str, Block2)] =
    &[("decay-on-8-below", Block2::DecayOn8Below), ("literal", Block2::Literal)];

/// Which samples advance (or break) Block 2's consecutive-sample counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block2Counting {
    /// Only samples that enter Block 2 (R > SRTT); the others neither count nor reset.
    Block2Only,
    /// Every sample; the action itself still happens only in Block 2.
    EverySample,
}

/// Names of [`Block2Counting`].
pub const BLOCK2_COUNTINGS: &[(&str, Block2Counting)] =
    &[("block2-only", Block2Counting::Block2Only), ("every-sample", Block2Counting::EverySample)];

/// The RTT sample an ACK gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleSource {
    /// The RTT of the copy the ACK names (Transmission Counter); with no copy information
    /// an ACK after retransmissions gives no sample (Karn).
    AckedCopy,
    /// Always `t_ack − t0`, from the original transmission.
    Original,
}

/// Names of [`SampleSource`].
pub const SAMPLE_SOURCES: &[(&str, SampleSource)] =
    &[("acked-copy", SampleSource::AckedCopy), ("original", SampleSource::Original)];

// The VBF table and its selection value are CoCoA+'s (§6): shared with `cocoa`.
pub use crate::cocoa::{VbfSelect as VbfSelectOn, VbfTable, VBF_SELECTS as VBF_SELECT_ON, VBF_TABLES};

/// Configuration of pCoCoA.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PcocoaConfig {
    /// RFC 7252 parameters (`ack_timeout` is the RTO before any sample).
    pub common: Common,
    /// γ, the "falling RTT" RTTVAR weight (gap; 1/32).
    pub gamma: f64,
    /// δ of Block 4 (gap; 0.5).
    pub delta: f64,
    /// Block 2's second branch (AMBIG-24).
    pub block2: Block2,
    /// Block 2 counter scope (gap).
    pub block2_counting: Block2Counting,
    /// k without a spurious retransmission (4).
    pub k: f64,
    /// k after a spurious retransmission (6).
    pub k_spurious: f64,
    /// The sample after a retransmission (gap).
    pub sample: SampleSource,
    /// CoCoA+ VBF table (`betzler2015`).
    pub vbf_table: VbfTable,
    /// Whether exactly 3 s selects the high-RTO factor (Eq. 2.6: yes).
    pub vbf_high_inclusive: bool,
    /// AMBIG-11b.
    pub vbf_select_on: VbfSelectOn,
    /// Cap of the overall RTO estimate, seconds (CoCoA+: 60).
    pub max_rto: Option<f64>,
    /// Cap of the initial (undithered) RTO of an exchange, seconds (CoCoA+: 32).
    pub initial_cap: Option<f64>,
    /// Cap of the backed-off timers, seconds (CoCoA+: 60).
    pub backoff_cap: Option<f64>,
    /// Apply CoCoA+ aging to the RTO (gap: not part of Algorithm 1; off).
    pub aging: bool,
}

impl Default for PcocoaConfig {
    fn default() -> Self {
        PcocoaConfig::new()
    }
}

impl PcocoaConfig {
    /// Defaults: the specification's proposed gap resolutions (the defaults of the table).
    pub fn new() -> Self {
        let mut c = PcocoaConfig {
            common: Common::default(),
            gamma: 0.0,
            delta: 0.0,
            block2: Block2::DecayOn8Below,
            block2_counting: Block2Counting::Block2Only,
            k: 0.0,
            k_spurious: 0.0,
            sample: SampleSource::AckedCopy,
            vbf_table: VbfTable::BETZLER2015,
            vbf_high_inclusive: false,
            vbf_select_on: VbfSelectOn::Undithered,
            max_rto: None,
            initial_cap: None,
            backoff_cap: None,
            aging: false,
        };
        params::apply_defaults(PARAMS, &mut c);
        c
    }

    /// A fresh algorithm instance.
    pub fn build(&self) -> Pcocoa {
        Pcocoa::new(*self)
    }
}

param_table!(PARAMS, INFO: PcocoaConfig = [
    param!(PcocoaConfig, "gamma" | "pcocoa_gamma" = "0.03125", "0..=1",
        "GAP (AMBIG-24): RTTVAR weight when R < SRTT − RTTVAR (falling RTT); Linux/Californium's 1/32.",
        number(gamma, 0.0, 1.0, "a number in 0..=1")),
    param!(PcocoaConfig, "delta" | "pcocoa_delta" = "0.5", "0..=1",
        "GAP (AMBIG-24): Block 4 smoothing RTO = (1−δ)·SRTO + δ·RTO; 0 uses SRTO directly.",
        number(delta, 0.0, 1.0, "a number in 0..=1")),
    param!(PcocoaConfig, "block2" | "pcocoa_block2" = "decay-on-8-below", "decay-on-8-below | literal",
        "GAP (AMBIG-24): Block 2 second branch: decay mdev_max towards RTTVAR after 8 samples below it (thesis prose), or as printed (unreachable).",
        choice(block2, BLOCK2_MODES, "decay-on-8-below or literal")),
    param!(PcocoaConfig, "block2_counting" | "pcocoa_block2_counting" = "block2-only", "block2-only | every-sample",
        "GAP: which samples advance or reset Block 2's consecutive counters (a failing sample resets; a firing branch restarts its count).",
        choice(block2_counting, BLOCK2_COUNTINGS, "block2-only or every-sample")),
    param!(PcocoaConfig, "k" | "pcocoa_k" = "4", ">= 0",
        "Block 3: RTTVAR multiplier without a spurious retransmission.",
        number(k, 0.0, 100.0, "a number in 0..=100")),
    param!(PcocoaConfig, "k_spurious" | "pcocoa_k_spurious" = "6", ">= 0",
        "Block 3: RTTVAR multiplier when the ACK reveals a spurious retransmission (copy ordinal < n).",
        number(k_spurious, 0.0, 100.0, "a number in 0..=100")),
    param!(PcocoaConfig, "sample" | "pcocoa_sample" | "sample_after_retx" = "acked-copy", "acked-copy | original",
        "GAP: sample after retransmissions: RTT of the copy the Transmission Counter names (none without it), or always from the original.",
        choice(sample, SAMPLE_SOURCES, "acked-copy or original")),
    param!(PcocoaConfig, "vbf_table" = "betzler2015", "betzler2015 | ancillotti | draft03",
        "CoCoA+ backoff factors (<1 s / 1-3 s / >3 s), one per exchange (AMBIG-11).",
        choice(vbf_table, VBF_TABLES, "betzler2015, ancillotti or draft03")),
    param!(PcocoaConfig, "vbf_high_inclusive" = "on", "on | off",
        "RTO_init of exactly 3 s takes the high-RTO factor (Makarem Eq. 2.6; Contiki code: off).",
        flag(vbf_high_inclusive)),
    param!(PcocoaConfig, "vbf_select_on" = "undithered", "undithered | dithered",
        "Select the VBF on the undithered RTO_init or on the dithered T_0 (AMBIG-11b).",
        choice(vbf_select_on, VBF_SELECT_ON, "undithered or dithered")),
    param!(PcocoaConfig, "max_rto" | "overall_cap" | "cocoaplus_overall_cap" = "60", "none | seconds",
        "Cap of the overall RTO estimate (CoCoA+ Contiki code: 60 s).",
        opt_secs(max_rto)),
    param!(PcocoaConfig, "initial_cap" | "cocoaplus_initial_cap" = "32", "none | seconds",
        "Cap of the undithered initial RTO of an exchange (CoCoA+: 32 s), applied before dithering.",
        opt_secs(initial_cap)),
    param!(PcocoaConfig, "backoff_cap" | "cocoaplus_backoff_cap" = "60", "none | seconds",
        "Cap of the backed-off timers (CoCoA+/Californium: 60 s).",
        opt_secs(backoff_cap), shared = "backoff_cap"),
    param!(PcocoaConfig, "aging" | "cocoa_aging" = "off", "on | off",
        "GAP: CoCoA+ aging of the RTO when an exchange starts (<1 s idle >16·RTO: ×2; >3 s idle >4·RTO: 1+RTO/2). Not in Algorithm 1.",
        flag(aging)),
]);

impl Params for PcocoaConfig {
    fn set(&mut self, key: &str, value: &str) -> Result<(), SetError> {
        params::set_param(PARAMS, self, key, value).unwrap_or_else(|| self.common.set(key, value))
    }

    fn shared_key(&self, name: &str) -> Option<&'static str> {
        params::shared_key(PARAMS, name).or_else(|| Common::shared_key(name))
    }

    fn write_value(&self, key: &str, w: &mut dyn fmt::Write) -> Option<fmt::Result> {
        params::write_value(PARAMS, self, key, w).or_else(|| self.common.write_value(key, w))
    }

    fn write(&self, w: &mut dyn fmt::Write) -> fmt::Result {
        let mut w = KvWriter::new(w);
        self.common.write(&mut w)?;
        params::write_params(PARAMS, self, &mut w)
    }

    fn apply_preset(&mut self, preset: Preset) -> Result<(), ()> {
        // makarem2021 (the only publication source): MAX_RETRANSMIT 4, 2 s / 1.5, uniform
        // dither; CoCoA+ VBF betzler2015 per exchange on the undithered RTO_init; caps as the
        // Cooja CoCoA+ (§11), which are the defaults. Every other preset: the testbed's shared
        // transmission parameters over the defaults.
        *self = PcocoaConfig::new();
        self.common.apply_preset(preset, DitherMode::Uniform);
        Ok(())
    }

    fn info(&self) -> &'static [ParamInfo] {
        INFO
    }
}

/// pCoCoA.
#[derive(Clone, Debug)]
pub struct Pcocoa {
    cfg: PcocoaConfig,
    srtt: f64,
    rttvar: f64,
    mdev_max: f64,
    samples: u32,
    /// SRTO of the last update (Block 4).
    srto: f64,
    /// RTO_init: the overall estimate the next exchange starts from.
    rto: f64,
    /// Consecutive counted samples with RTTVAR > mdev_max, and their RTTVAR values.
    above: u32,
    above_vals: [f64; 3],
    /// Consecutive counted samples with RTTVAR < mdev_max.
    below: u32,
    /// The last ACK revealed a spurious retransmission.
    spurious: bool,
    /// Time of the last estimator update or aging check.
    t_upd: Instant,
}

impl Pcocoa {
    /// A fresh instance.
    pub fn new(cfg: PcocoaConfig) -> Self {
        let mut p = Pcocoa {
            cfg,
            srtt: 0.0,
            rttvar: 0.0,
            mdev_max: 0.0,
            samples: 0,
            srto: 0.0,
            rto: 0.0,
            above: 0,
            above_vals: [0.0; 3],
            below: 0,
            spurious: false,
            t_upd: Instant::ZERO,
        };
        p.reset(Instant::ZERO);
        p
    }

    /// The configuration.
    pub fn config(&self) -> &PcocoaConfig {
        &self.cfg
    }

    /// Current `mdev_max`, once a sample was taken.
    pub fn mdev_max(&self) -> Option<core::time::Duration> {
        (self.samples > 0).then(|| time::secs(self.mdev_max))
    }

    /// Whether the last ACK revealed a spurious retransmission (k = `k_spurious` was used).
    pub fn spurious(&self) -> bool {
        self.spurious
    }

    /// CoCoA+'s ageing steps (the CoCoA family's own, doubling below 1 s), checked when an
    /// exchange starts; the clock restarts at every check.
    fn age(&mut self, now: Instant) {
        let idle = time::to_secs(now - self.t_upd);
        if let Some((rto, _residual)) = crate::cocoa::age_value(self.rto, idle, crate::cocoa::AgingLowRule::Double) {
            self.rto = rto;
        }
        self.rto = cap(self.rto, self.cfg.max_rto);
        self.t_upd = now;
    }

    /// Feed one RTT sample (Algorithm 1).
    fn sample(&mut self, r: f64) {
        let c = &self.cfg;
        if self.samples == 0 {
            self.srtt = r;
            self.rttvar = r / 2.0;
            self.mdev_max = (r / 2.0).max(MDEV_MAX_MIN);
            self.srto = self.srtt + self.mdev_max;
            self.rto = cap(self.srto, c.max_rto);
            self.samples = 1;
            return;
        }
        // Block 1: SRTT first; the comparisons use the updated SRTT.
        self.srtt = (1.0 - ALPHA) * self.srtt + ALPHA * r;
        let err = fabs(self.srtt - r);
        let w = if r < self.srtt - self.rttvar {
            c.gamma
        } else if err > self.rttvar {
            BETA
        } else {
            ALPHA
        };
        self.rttvar = (1.0 - w) * self.rttvar + w * err;
        // Block 2.
        let in_block2 = r > self.srtt;
        if in_block2 || c.block2_counting == Block2Counting::EverySample {
            if self.rttvar > self.mdev_max {
                self.above_vals[(self.above % 3) as usize] = self.rttvar;
                self.above = self.above.saturating_add(1);
            } else {
                self.above = 0;
            }
            if self.rttvar < self.mdev_max {
                self.below = self.below.saturating_add(1);
            } else {
                self.below = 0;
            }
        }
        if in_block2 {
            if self.above >= 3 {
                self.mdev_max = (self.above_vals[0] + self.above_vals[1] + self.above_vals[2]) / 3.0;
                self.above = 0;
            } else if c.block2 == Block2::DecayOn8Below && self.below >= 8 {
                self.mdev_max = (1.0 - BETA) * self.mdev_max + BETA * self.rttvar;
                self.below = 0;
            }
            // Block2::Literal: "RTTVAR > mdev_max for 8 consecutive times" can never be
            // reached (the 3-sample branch fires first), so nothing happens.
        }
        // Block 3.
        let k = if self.spurious { c.k_spurious } else { c.k };
        // Block 4.
        self.srto = self.srtt + (k * self.rttvar).max(self.mdev_max);
        self.rto = cap((1.0 - c.delta) * self.srto + c.delta * self.rto, c.max_rto);
        self.samples = self.samples.saturating_add(1);
    }
}

impl CongestionControl for Pcocoa {
    fn name(&self) -> &'static str {
        "pcocoa"
    }

    fn max_retransmit(&self) -> u32 {
        self.cfg.common.max_retransmit
    }

    fn reset(&mut self, now: Instant) {
        self.srtt = 0.0;
        self.rttvar = 0.0;
        self.mdev_max = 0.0;
        self.samples = 0;
        self.srto = 0.0;
        self.rto = self.cfg.common.ack_timeout;
        self.above = 0;
        self.above_vals = [0.0; 3];
        self.below = 0;
        self.spurious = false;
        self.t_upd = now;
    }

    fn start_exchange(&mut self, now: Instant, _in_flight: u32, rng: &mut dyn Entropy) -> Exchange {
        if self.cfg.aging {
            self.age(now);
        }
        let rto_init = cap(self.rto, self.cfg.initial_cap);
        let t0 = self.cfg.common.dither(rto_init, rng);
        let on = match self.cfg.vbf_select_on {
            VbfSelectOn::Undithered => rto_init,
            VbfSelectOn::Dithered => t0,
        };
        let mut ex = Exchange::new(now, t0, rto_init);
        ex.factor = self.cfg.vbf_table.factor(on, self.cfg.vbf_high_inclusive);
        ex.dither = ratio(t0, rto_init);
        ex
    }

    fn on_timeout(&mut self, _now: Instant, ex: &mut Exchange) -> TimeoutAction {
        let c = self.cfg.backoff_cap;
        self.cfg.common.retransmit(ex, |e| cap(e.timer * e.factor, c))
    }

    fn on_ack(&mut self, now: Instant, _ex: &Exchange, ack: &AckInfo) {
        let n = ack.retransmissions;
        let copy = ack.copy.filter(|c| c.ordinal <= n);
        let r = match (self.cfg.sample, copy) {
            (SampleSource::AckedCopy, Some(c)) => Some(time::to_secs(c.rtt)),
            (SampleSource::AckedCopy, None) if n == 0 => Some(ack.rtt_secs()),
            (SampleSource::AckedCopy, None) => None,
            (SampleSource::Original, _) => Some(ack.rtt_secs()),
        };
        let Some(r) = r else { return };
        // Block 3's condition: the ACK names an earlier copy than the last one sent.
        self.spurious = copy.is_some_and(|c| c.ordinal < n);
        self.sample(r);
        self.t_upd = now;
    }

    fn on_give_up(&mut self, _now: Instant, _ex: &Exchange, _reason: GiveUpReason) {
        // AMBIG-20 / §8: no estimator update on failure.
    }

    fn uses_copy_id(&self) -> bool {
        true
    }

    fn snapshot(&self) -> Snapshot {
        let strong = (self.samples > 0).then(|| EstimatorSnapshot {
            srtt: time::secs(self.srtt),
            rttvar: time::secs(self.rttvar),
            rto: time::secs(self.srto),
            samples: self.samples,
        });
        Snapshot { rto: time::secs(self.rto), strong, ..Snapshot::default() }
    }
}
