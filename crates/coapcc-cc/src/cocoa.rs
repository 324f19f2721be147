//! The CoCoA family: CoCoA (draft-ietf-core-cocoa-03), CoCoA-S, CoCoA FullBackoff1/2,
//! CoCoA+ and Eclipse Californium's CoCoA. Specification §5, §6, §9.1 and §9.2.
//!
//! All members share one state object, [`Cocoa`]: a strong (K = 4) and a weak (K = 1)
//! RFC 6298 [`Estimator`], an overall RTO blended from them, the ageing clock, and for the
//! FullBackoff variants the retained timer. What differs between the members, and every
//! ambiguity of the sources, is a named parameter of [`CocoaConfig`] (see
//! `docs/algorithms-cocoa.md` for the full table with sources).
//!
//! Invariants kept by every member:
//! - the overall RTO changes only on an ACK and by ageing, never by the backoff (the draft
//!   pseudocode's write of the backed-off value into "RTO" is not followed), except for the
//!   Californium 2.x compatibility flag [`CocoaConfig::californium2_backoff_persists`];
//! - only `T_0` is dithered; backoffs multiply the armed (dithered) timer;
//! - the exchange fails after MAX_RETRANSMIT retransmissions ([`Common::retransmit`]); a
//!   failure updates no estimator (AMBIG-20).

use core::fmt;
use core::time::Duration;

use crate::api::{AckInfo, CongestionControl, EstimatorSnapshot, Exchange, GiveUpReason, Snapshot, TimeoutAction};
use crate::common::{cap, Common, DitherMode};
use crate::default::FbRetained;
use crate::estimator::{Estimator, EstimatorParams};
use crate::params::{self, param, param_table, KvWriter, Param, ParamInfo, Params, Preset, SetError};
use crate::rng::Entropy;
use crate::time::{self, Instant};

/// Which member of the family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CocoaVariant {
    /// `cocoa`: draft-ietf-core-cocoa-03 (§5.1).
    Cocoa,
    /// `cocoa-strong`: CoCoA-S, the strong estimator only (§5.4).
    Strong,
    /// `cocoa-fb1`: CoCoA with FullBackoff1 retention of the backed-off timer (§5.2).
    FullBackoff1,
    /// `cocoa-fb2`: CoCoA FullBackoff2, the retained timer re-derived from the larger RTO (§5.3).
    FullBackoff2,
    /// `cocoa-plus`: CoCoA+ with a per-exchange VBF table and 60 s caps (§6, §9.2).
    Plus,
    /// `californium-cocoa`: Eclipse Californium 3.x `Cocoa` (integer ms) (§9.1).
    Californium,
}

/// AMBIG-7: when the variable backoff factor is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VbfMode {
    /// At every retransmission, from the current (already backed-off, dithered) timer.
    PerStep,
    /// Once per exchange, then applied to every retransmission: `T_k = T_0 · VBF^k`, capped.
    PerExchange,
}

/// Names of [`VbfMode`] values.
pub const VBF_MODES: &[(&str, VbfMode)] = &[("per-step", VbfMode::PerStep), ("per-exchange", VbfMode::PerExchange)];

/// AMBIG-11b: the value a per-exchange VBF is chosen from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VbfSelect {
    /// The undithered initial RTO (`RTO_init`, after the blind rule and the initial cap).
    Undithered,
    /// The armed, dithered `T_0` (after its caps/clamps).
    Dithered,
}

/// Names of [`VbfSelect`] values.
pub const VBF_SELECTS: &[(&str, VbfSelect)] =
    &[("undithered", VbfSelect::Undithered), ("dithered", VbfSelect::Dithered)];

/// Lower VBF threshold, seconds: a selection value below it gets [`VbfTable::low`].
pub const VBF_LOW_THRESHOLD: f64 = 1.0;
/// Upper VBF threshold, seconds: a value above it gets [`VbfTable::high`].
pub const VBF_HIGH_THRESHOLD: f64 = 3.0;

/// The three backoff factors of a VBF table (AMBIG-11), thresholds 1 s and 3 s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VbfTable {
    /// Factor for a selection value below 1 s.
    pub low: f64,
    /// Factor between 1 s and 3 s.
    pub mid: f64,
    /// Factor above 3 s (at 3 s too with `high_inclusive`).
    pub high: f64,
}

impl VbfTable {
    /// Ancillotti & Bruno, Eq. 3: 3 / 2 / 1.3.
    pub const ANCILLOTTI: VbfTable = VbfTable { low: 3.0, mid: 2.0, high: 1.3 };
    /// Betzler et al. 2015 as in Makarem's thesis Eq. 2.6 and Betzler's Contiki code: 2.5 / 2 / 1.5.
    pub const BETZLER2015: VbfTable = VbfTable { low: 2.5, mid: 2.0, high: 1.5 };
    /// draft-ietf-core-cocoa-03: 3 / 2 / 1.5.
    pub const DRAFT03: VbfTable = VbfTable { low: 3.0, mid: 2.0, high: 1.5 };

    /// The factor for selection value `t` (seconds). At exactly 1 s the middle factor applies;
    /// at exactly 3 s the middle one unless `high_inclusive`.
    pub fn factor(&self, t: f64, high_inclusive: bool) -> f64 {
        if t < VBF_LOW_THRESHOLD {
            self.low
        } else if t > VBF_HIGH_THRESHOLD || (high_inclusive && t >= VBF_HIGH_THRESHOLD) {
            self.high
        } else {
            self.mid
        }
    }

    /// The preset name of this table, or `"custom"`.
    pub fn name(&self) -> &'static str {
        VBF_TABLES.iter().find(|(_, t)| t == self).map(|(n, _)| *n).unwrap_or("custom")
    }
}

/// Named VBF tables (`vbf_table`); `custom` is any other combination of `vbf_low/mid/high`.
pub const VBF_TABLES: &[(&str, VbfTable)] =
    &[("ancillotti", VbfTable::ANCILLOTTI), ("betzler2015", VbfTable::BETZLER2015), ("draft03", VbfTable::DRAFT03)];

/// AMBIG-22: what CoCoA's cap bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapScope {
    /// Every armed timer (`T_0` and the backoff) and the overall RTO estimate are ≤ cap.
    AllTimers,
    /// Only backed-off timers: `T_k = min(VBF·T_{k−1}, cap)` (may shrink a larger `T_0`).
    BackoffOnly,
    /// Backed-off timers without shrinking: `T_k = min(VBF·T_{k−1}, max(cap, T_{k−1}))`.
    BackoffNoShrink,
}

/// Names of [`CapScope`] values.
pub const CAP_SCOPES: &[(&str, CapScope)] = &[
    ("all-timers", CapScope::AllTimers),
    ("backoff-only", CapScope::BackoffOnly),
    ("backoff-no-shrink", CapScope::BackoffNoShrink),
];

/// AMBIG-9b: which values are aged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgingTarget {
    /// The overall RTO only (draft pseudocode, Californium, Contiki).
    Overall,
    /// The overall RTO and, each on its own update clock, the strong and weak estimators
    /// (their SRTT and RTTVAR are scaled so that `E` takes the aged value).
    Estimators,
}

/// Names of [`AgingTarget`] values.
pub const AGING_TARGETS: &[(&str, AgingTarget)] =
    &[("overall", AgingTarget::Overall), ("estimators", AgingTarget::Estimators)];

/// AMBIG-9b: the idle time not consumed by an ageing step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgingResidual {
    /// Restart the ageing clock at `now` after a step (draft pseudocode, Californium).
    Discard,
    /// Keep the unconsumed idle time: the clock restarts at `now − residual`.
    Keep,
}

/// Names of [`AgingResidual`] values.
pub const AGING_RESIDUALS: &[(&str, AgingResidual)] =
    &[("discard", AgingResidual::Discard), ("keep", AgingResidual::Keep)];

/// §9.2: the ageing step for an RTO below 1 s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgingLowRule {
    /// Double it (draft, Ancillotti & Bruno, Californium).
    Double,
    /// Set it to 1 s (Betzler's Contiki code).
    SetTo1s,
}

/// Names of [`AgingLowRule`] values.
pub const AGING_LOW_RULES: &[(&str, AgingLowRule)] =
    &[("double", AgingLowRule::Double), ("set-to-1s", AgingLowRule::SetTo1s)];

/// AMBIG-10: how CoCoA FullBackoff2 derives the retained timer after a retransmitted exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fb2Rule {
    /// `n` VBF steps applied to `d·max(RTO_before, RTO_after)`, with the caps.
    RebackoffFromMax,
    /// `max(T in force at the ACK, d·RTO_after)`.
    MaxTimerAndEstimate,
}

/// Names of [`Fb2Rule`] values.
pub const FB2_RULES: &[(&str, Fb2Rule)] =
    &[("rebackoff-from-max", Fb2Rule::RebackoffFromMax), ("max-timer-and-estimate", Fb2Rule::MaxTimerAndEstimate)];

/// Names of the FullBackoff retained value (AMBIG-4). For CoCoA "next-doubled" is the next
/// VBF step, so `next-step` is accepted as a synonym.
pub const FB_RETAINED_NAMES: &[(&str, FbRetained)] = &[
    ("last-armed", FbRetained::LastArmed),
    ("next-doubled", FbRetained::NextDoubled),
    ("next-step", FbRetained::NextDoubled),
];

/// Estimator gains of CoCoA+ (§3, §6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gains {
    /// RFC 6298: SRTT gain 1/8, RTTVAR gain 1/4.
    Rfc6298,
    /// Californium's and Makarem's swapped gains: SRTT 1/4, RTTVAR 1/8 (real-valued, G = 0).
    Swapped,
}

/// Names of [`Gains`] values.
pub const GAINS: &[(&str, Gains)] =
    &[("rfc6298", Gains::Rfc6298), ("californium", Gains::Swapped), ("swapped", Gains::Swapped)];

/// §9.2: how an estimator's first sample is recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FirstSample {
    /// By its sample count (RFC 6298).
    Count,
    /// Betzler's Contiki code: an estimator whose RTO equals ACK_TIMEOUT is treated as empty,
    /// so a coincidentally equal value re-initialises it.
    RtoEqualsInitial,
}

/// Names of [`FirstSample`] values.
pub const FIRST_SAMPLES: &[(&str, FirstSample)] =
    &[("count", FirstSample::Count), ("rto-equals-initial", FirstSample::RtoEqualsInitial)];

/// §5.1/§9.2: the blind RTO of an exchange admitted while others are in flight and no
/// estimator has a sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlindRule {
    /// `RTO × (in_flight + 1)` (draft, Californium).
    Multiply,
    /// `RTO × 2^in_flight` (Betzler's Contiki code: a shift per ongoing exchange).
    DoublePerExchange,
}

/// Names of [`BlindRule`] values.
pub const BLIND_RULES: &[(&str, BlindRule)] =
    &[("multiply", BlindRule::Multiply), ("double-per-exchange", BlindRule::DoublePerExchange)];

/// Californium's lower clamp of the initial timer, seconds (MIN_RTO = 500 ms).
pub const CALIFORNIUM_MIN_RTO: f64 = 0.5;
/// Californium's hard upper bound of every timer, seconds (MAX_RTO = 60 s).
pub const CALIFORNIUM_MAX_RTO: f64 = 60.0;
/// Californium's and the draft's cap of the initial RTO, seconds.
pub const INITIAL_RTO_CAP: f64 = 32.0;

/// Configuration of the CoCoA family. Fields a variant does not use keep their defaults and
/// are neither settable nor written for it (see [`Params::info`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CocoaConfig {
    /// Family member.
    pub variant: CocoaVariant,
    /// RFC 7252 parameters (ACK_TIMEOUT is the blind RTO).
    pub common: Common,
    /// AMBIG-7 (`vbf`): per step (CoCoA default) or per exchange (CoCoA+, Californium).
    pub vbf: VbfMode,
    /// AMBIG-11b (`vbf_select_on`): the value a per-exchange factor is chosen from.
    pub vbf_select_on: VbfSelect,
    /// AMBIG-11 (`vbf_table`, `vbf_low/mid/high`): the factors (CoCoA and Californium: draft-03).
    pub vbf_table: VbfTable,
    /// AMBIG-11 (`vbf_high_inclusive`): the high factor applies at exactly 3 s too.
    pub vbf_high_inclusive: bool,
    /// CoCoA cap (`cap`), seconds; draft-03: 32.
    pub cap: Option<f64>,
    /// AMBIG-22 (`cap_scope`).
    pub cap_scope: CapScope,
    /// AMBIG-9 (`aging`): draft §4.3 ageing.
    pub aging: bool,
    /// AMBIG-9b (`aging_target`).
    pub aging_target: AgingTarget,
    /// AMBIG-9b (`aging_residual`).
    pub aging_residual: AgingResidual,
    /// §9.2 (`aging_low_rule`), CoCoA+ only.
    pub aging_low_rule: AgingLowRule,
    /// AMBIG-8 (`literal_pseudocode`): the draft pseudocode's estimator update.
    pub literal_pseudocode: bool,
    /// `weak_max_n`: largest `n` giving a weak sample (`None` = unlimited).
    pub weak_max_n: Option<u32>,
    /// AMBIG-23 (`s_weight`): CoCoA-S blend weight.
    pub s_weight: f64,
    /// AMBIG-4 (`fb_retained`), FullBackoff variants.
    pub fb_retained: FbRetained,
    /// AMBIG-5 (`fb_redither`), FullBackoff variants.
    pub fb_redither: bool,
    /// AMBIG-10 (`fb2_rule`), FullBackoff2.
    pub fb2_rule: Fb2Rule,
    /// CoCoA+ estimator gains (`gains`).
    pub gains: Gains,
    /// CoCoA+ cap on the overall RTO (`overall_cap`), seconds.
    pub overall_cap: Option<f64>,
    /// CoCoA+ cap on `RTO_init` before dithering (`initial_cap`), seconds.
    pub initial_cap: Option<f64>,
    /// CoCoA+ cap on backed-off timers (`backoff_cap`), seconds.
    pub backoff_cap: Option<f64>,
    /// §9.2 (`blend_inverted`), CoCoA+.
    pub blend_inverted: bool,
    /// §9.2 (`strong_reset_after_3`), CoCoA+.
    pub strong_reset_after_3: bool,
    /// §9.2 (`first_sample`), CoCoA+.
    pub first_sample: FirstSample,
    /// §9.2 (`blind_rule`), CoCoA+.
    pub blind_rule: BlindRule,
    /// Californium COCOA_STRONG (`strong_only`).
    pub strong_only: bool,
    /// Californium MAX_ACK_TIMEOUT (`max_ack_timeout`), seconds; effective `min(value, 60)`.
    pub max_ack_timeout: f64,
    /// §9.1 (`californium2_backoff_persists`): Californium 2.x accidental FullBackoff.
    pub californium2_backoff_persists: bool,
}

impl CocoaConfig {
    /// The rules of what a member does not expose as a parameter (draft-03's table, no
    /// CoCoA+-only or Californium-only behaviour, ...). [`CocoaConfig::new`] starts from
    /// these and sets every listed parameter to its table default.
    fn fixed(variant: CocoaVariant) -> CocoaConfig {
        CocoaConfig {
            variant,
            common: Common::default(),
            // Californium always chooses one factor per exchange (not a parameter there).
            vbf: if variant == CocoaVariant::Californium { VbfMode::PerExchange } else { VbfMode::PerStep },
            vbf_select_on: VbfSelect::Dithered,
            vbf_table: VbfTable::DRAFT03,
            vbf_high_inclusive: false,
            cap: Some(32.0),
            cap_scope: CapScope::AllTimers,
            aging: true,
            aging_target: AgingTarget::Overall,
            aging_residual: AgingResidual::Discard,
            aging_low_rule: AgingLowRule::Double,
            literal_pseudocode: false,
            weak_max_n: Some(2),
            s_weight: 0.5,
            fb_retained: FbRetained::LastArmed,
            fb_redither: false,
            fb2_rule: Fb2Rule::RebackoffFromMax,
            gains: Gains::Rfc6298,
            overall_cap: Some(60.0),
            initial_cap: Some(INITIAL_RTO_CAP),
            backoff_cap: Some(60.0),
            blend_inverted: false,
            strong_reset_after_3: false,
            first_sample: FirstSample::Count,
            blind_rule: BlindRule::Multiply,
            strong_only: false,
            max_ack_timeout: 60.0,
            californium2_backoff_persists: false,
        }
    }

    /// Defaults (RFC 7252 parameters, recommended resolutions of §10) for `variant`: the
    /// defaults of its parameter table over the fixed rules of the family.
    pub fn new(variant: CocoaVariant) -> Self {
        let mut c = CocoaConfig::fixed(variant);
        params::apply_defaults(c.table(), &mut c);
        c
    }

    /// A fresh algorithm instance.
    pub fn build(&self) -> Cocoa {
        Cocoa::new(*self)
    }

    fn table(&self) -> &'static [Param<CocoaConfig>] {
        match self.variant {
            CocoaVariant::Cocoa => COCOA,
            CocoaVariant::Strong => STRONG,
            CocoaVariant::FullBackoff1 => FB1,
            CocoaVariant::FullBackoff2 => FB2,
            CocoaVariant::Plus => PLUS,
            CocoaVariant::Californium => CALIFORNIUM,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Parameters: each declared once (description, default, parser, writer).

const FACTOR: &str = "a backoff factor from 1 to 100";

fn set_weak_max_n(c: &mut CocoaConfig, v: &str) -> Result<(), SetError> {
    c.weak_max_n = if params::eq_choice("unlimited", v) {
        None
    } else {
        Some(params::parse_u32(v, 0, 255, "an integer 0..=255 or unlimited")?)
    };
    Ok(())
}

fn write_weak_max_n(c: &CocoaConfig, k: &'static str, w: &mut KvWriter<'_>) -> fmt::Result {
    match c.weak_max_n {
        Some(n) => w.kv(k, n),
        None => w.kv(k, "unlimited"),
    }
}

fn set_vbf_table(c: &mut CocoaConfig, v: &str) -> Result<(), SetError> {
    if !params::eq_choice("custom", v) {
        c.vbf_table = params::parse_choice(v, VBF_TABLES, "ancillotti, betzler2015, draft03 or custom")?;
    }
    Ok(())
}

fn write_vbf_table(c: &CocoaConfig, k: &'static str, w: &mut KvWriter<'_>) -> fmt::Result {
    w.kv(k, c.vbf_table.name())
}

const P_VBF_STEP: Param<CocoaConfig> = param!(CocoaConfig, "vbf" | "vbf_mode" = "per-step", "per-step | per-exchange",
    "Variable backoff factor re-chosen at every retransmission from the current timer (draft-03 text, Helsinki experiments), or chosen once per exchange (AMBIG-7).",
    choice(vbf, VBF_MODES, "per-step or per-exchange"));

const P_VBF_EXCH: Param<CocoaConfig> = param!(CocoaConfig, "vbf" | "vbf_mode" = "per-exchange", "per-step | per-exchange",
    "CoCoA+ chooses one factor per exchange from the VBF table; per-step re-chooses it from the current timer with the same table (AMBIG-7).",
    choice(vbf, VBF_MODES, "per-step or per-exchange"));

const P_SELECT_CORE: Param<CocoaConfig> = param!(CocoaConfig, "vbf_select_on" = "dithered", "dithered | undithered",
    "With vbf=per-exchange: choose the factor from the armed T_0 (as the draft's backOffRTO does at its first step) or from the undithered RTO (AMBIG-11b). No effect with per-step.",
    choice(vbf_select_on, VBF_SELECTS, "undithered or dithered"));

const P_SELECT_PLUS: Param<CocoaConfig> = param!(CocoaConfig, "vbf_select_on" = "undithered", "undithered | dithered",
    "Value the per-exchange factor is chosen from: the undithered RTO_init (Makarem) or the dithered T_0 (Californium 3.x) (AMBIG-11b).",
    choice(vbf_select_on, VBF_SELECTS, "undithered or dithered"));

const P_SELECT_CF: Param<CocoaConfig> = param!(CocoaConfig, "vbf_select_on" = "dithered", "dithered | undithered",
    "Californium 3.x chooses the VBF from the dithered, clamped T_0; 2.x from the undithered RTO at registration (AMBIG-11b, §9.1).",
    choice(vbf_select_on, VBF_SELECTS, "undithered or dithered"));

const P_CAP: Param<CocoaConfig> = param!(
    CocoaConfig,
    "cap" | "cocoa_cap" = "32",
    "none | seconds",
    "CoCoA timer cap: draft-03 truncates the backoff at 32 s; what it bounds is cap_scope (AMBIG-22).",
    opt_secs(cap)
);

const P_CAP_SCOPE: Param<CocoaConfig> = param!(CocoaConfig, "cap_scope" | "cocoa_cap_scope" = "all-timers", "all-timers | backoff-only | backoff-no-shrink",
    "What the cap bounds (AMBIG-22): every armed timer and the overall RTO; only backed-off timers (min(VBF*T, cap), may shrink a larger T_0); or backed-off timers without shrinking (min(VBF*T, max(cap, T))).",
    choice(cap_scope, CAP_SCOPES, "all-timers, backoff-only or backoff-no-shrink"));

const P_AGING: Param<CocoaConfig> = param!(CocoaConfig, "aging" | "cocoa_aging" = "on", "on | off",
    "Ageing of a stale RTO (draft §4.3), checked when an exchange is admitted: < 1 s and idle > 16*RTO doubles; > 3 s and idle > 4*RTO gives 1 + RTO/2 (AMBIG-9; the Helsinki experiments ran without).",
    flag(aging));

const P_AGING_TARGET: Param<CocoaConfig> = param!(CocoaConfig, "aging_target" = "overall", "overall | estimators",
    "Values aged (AMBIG-9b): the overall RTO only (draft pseudocode, Californium, Contiki), or also the strong and weak estimators, each on its own update clock (SRTT and RTTVAR scaled to the aged E).",
    choice(aging_target, AGING_TARGETS, "overall or estimators"));

const P_AGING_RESIDUAL: Param<CocoaConfig> = param!(CocoaConfig, "aging_residual" = "discard", "discard | keep",
    "After an ageing step the clock restarts at now (discard), or keeps the idle time the steps did not consume (keep) (AMBIG-9b).",
    choice(aging_residual, AGING_RESIDUALS, "discard or keep"));

const P_LITERAL: Param<CocoaConfig> = param!(CocoaConfig, "literal_pseudocode" | "cocoa_literal_pseudocode" = "off", "on | off",
    "Estimator update of the draft's Appendix pseudocode taken literally: no abs() in the RTTVAR update and no first-sample branch (estimators start from SRTT = RTTVAR = 0) (AMBIG-8).",
    flag(literal_pseudocode));

const P_WEAK_MAX_N: Param<CocoaConfig> = param!(CocoaConfig, "weak_max_n" = "2", "0..=255 | unlimited",
    "Largest retransmission count whose ACK still feeds the weak estimator (draft-03, Ancillotti & Bruno, Californium: 2; Betzler's Contiki code: unlimited).",
    custom(set_weak_max_n, write_weak_max_n));

const P_S_WEIGHT: Param<CocoaConfig> = param!(
    CocoaConfig,
    "s_weight" | "cocoa_s_weight" = "0.5",
    "(0, 1]",
    "CoCoA-S blend RTO = w*E_s + (1-w)*RTO (AMBIG-23; Californium 0.5; 1 makes RTO = E_s).",
    positive(s_weight, 1.0, "a weight in (0, 1]")
);

const P_FB_RETAINED: Param<CocoaConfig> = param!(CocoaConfig, "fb_retained" | "fb_retained_value" = "last-armed", "last-armed | next-doubled (= next-step)",
    "Timer retained after a retransmitted exchange: the one in force at the ACK, or the next value the VBF backoff would arm (AMBIG-4).",
    choice(fb_retained, FB_RETAINED_NAMES, "last-armed or next-doubled"));

const P_FB_REDITHER: Param<CocoaConfig> = param!(
    CocoaConfig,
    "fb_redither" = "off",
    "on | off",
    "Re-dither the retained timer when it starts the next exchange (AMBIG-5).",
    flag(fb_redither)
);

const P_FB2_RULE: Param<CocoaConfig> = param!(CocoaConfig, "fb2_rule" | "cocoa_fb2_rule" = "rebackoff-from-max", "rebackoff-from-max | max-timer-and-estimate",
    "FullBackoff2 retained timer (AMBIG-10): n VBF steps applied to d*max(RTO_before, RTO_after), or max(timer in force at the ACK, d*RTO_after).",
    choice(fb2_rule, FB2_RULES, "rebackoff-from-max or max-timer-and-estimate"));

const P_VBF_TABLE: Param<CocoaConfig> = param!(CocoaConfig, "vbf_table" = "ancillotti", "ancillotti | betzler2015 | draft03 | custom",
    "CoCoA+ factors for < 1 s / 1-3 s / > 3 s (AMBIG-11): ancillotti 3/2/1.3, betzler2015 2.5/2/1.5, draft03 3/2/1.5; any other vbf_low/mid/high is custom.",
    custom(set_vbf_table, write_vbf_table));

const P_VBF_LOW: Param<CocoaConfig> = param!(
    CocoaConfig,
    "vbf_low" = "3",
    "factor >= 1",
    "VBF for a selection value below 1 s (sets vbf_table to custom unless it matches a named table).",
    number(vbf_table.low, 1.0, 100.0, FACTOR)
);

const P_VBF_MID: Param<CocoaConfig> = param!(
    CocoaConfig,
    "vbf_mid" = "2",
    "factor >= 1",
    "VBF for a selection value from 1 s to 3 s.",
    number(vbf_table.mid, 1.0, 100.0, FACTOR)
);

const P_VBF_HIGH: Param<CocoaConfig> = param!(
    CocoaConfig,
    "vbf_high" = "1.3",
    "factor >= 1",
    "VBF for a selection value above 3 s.",
    number(vbf_table.high, 1.0, 100.0, FACTOR)
);

const P_VBF_HIGH_INCLUSIVE: Param<CocoaConfig> = param!(CocoaConfig, "vbf_high_inclusive" = "off", "on | off",
    "The high factor applies at exactly 3 s too (Makarem's Eq. 2.6: >= 3 s); off: only above 3 s (Ancillotti & Bruno, Betzler's code) (AMBIG-11).",
    flag(vbf_high_inclusive));

const P_GAINS: Param<CocoaConfig> = param!(CocoaConfig, "gains" | "estimator_gains" = "rfc6298", "rfc6298 | californium (= swapped)",
    "Estimator gains: RFC 6298 (SRTT 1/8, RTTVAR 1/4) or the swapped gains of Californium and Makarem's thesis (1/4, 1/8), real-valued (§3, §6).",
    choice(gains, GAINS, "rfc6298 or californium"));

const P_OVERALL_CAP: Param<CocoaConfig> = param!(
    CocoaConfig,
    "overall_cap" = "60",
    "none | seconds",
    "Cap on the overall RTO estimate (Betzler's Contiki code, §6).",
    opt_secs(overall_cap)
);

const P_INITIAL_CAP: Param<CocoaConfig> = param!(
    CocoaConfig,
    "initial_cap" = "32",
    "none | seconds",
    "Cap on the blind/initial RTO_init (after the blind rule, before dithering) (§6).",
    opt_secs(initial_cap)
);

const P_BACKOFF_CAP: Param<CocoaConfig> = param!(
    CocoaConfig,
    "backoff_cap" | "cocoaplus_backoff_cap" = "60",
    "none | seconds",
    "Cap on backed-off timers (Californium's 60 s, §6).",
    opt_secs(backoff_cap)
);

const P_AGING_LOW: Param<CocoaConfig> = param!(
    CocoaConfig,
    "aging_low_rule" = "double",
    "double | set-to-1s",
    "Ageing of an RTO below 1 s: doubled (draft, Ancillotti & Bruno) or set to 1 s (Betzler's Contiki code, §9.2).",
    choice(aging_low_rule, AGING_LOW_RULES, "double or set-to-1s")
);

const P_BLEND_INVERTED: Param<CocoaConfig> = param!(
    CocoaConfig,
    "blend_inverted" = "off",
    "on | off",
    "Betzler's Contiki code: RTO = (1-w)*E + w*RTO, so the weak estimator weighs 0.75 (§9.2).",
    flag(blend_inverted)
);

const P_STRONG_RESET: Param<CocoaConfig> = param!(CocoaConfig, "strong_reset_after_3" = "off", "on | off",
    "Betzler's Contiki code: the strong estimator is reset (emptied) once more than 3 retransmissions accumulate without a strong sample (§9.2).",
    flag(strong_reset_after_3));

const P_FIRST_SAMPLE: Param<CocoaConfig> = param!(CocoaConfig, "first_sample" | "first_sample_detection" = "count", "count | rto-equals-initial",
    "First-sample detection: by sample count, or as in Betzler's Contiki code by the estimator's RTO equalling ACK_TIMEOUT (a coincidental equal value re-initialises) (§9.2).",
    choice(first_sample, FIRST_SAMPLES, "count or rto-equals-initial"));

const P_BLIND_RULE: Param<CocoaConfig> = param!(CocoaConfig, "blind_rule" = "multiply", "multiply | double-per-exchange",
    "Blind RTO with exchanges in flight and no sample yet: RTO*(in_flight+1) (draft), or RTO*2^in_flight (Betzler's Contiki shift, §9.2).",
    choice(blind_rule, BLIND_RULES, "multiply or double-per-exchange"));

const P_STRONG_ONLY: Param<CocoaConfig> = param!(
    CocoaConfig,
    "strong_only" = "off",
    "on | off",
    "Californium COCOA_STRONG: weak samples are dropped (§9.1).",
    flag(strong_only)
);

const P_CF_AGING: Param<CocoaConfig> = param!(CocoaConfig, "aging" | "cocoa_aging" = "on", "on | off",
    "Californium ageing: overall RTO only, integer ms, checked only when an exchange is admitted, cumulative loop, residual discarded (§9.1).",
    flag(aging));

const P_MAX_ACK_TIMEOUT: Param<CocoaConfig> = param!(
    CocoaConfig,
    "max_ack_timeout" | "MAX_ACK_TIMEOUT" = "60",
    "seconds >= 0.5",
    "Californium MAX_ACK_TIMEOUT: upper clamp of T_0 and cap of the backoff, in effect min(value, 60 s) (§9.1).",
    secs(max_ack_timeout)
);

const P_CF2_PERSISTS: Param<CocoaConfig> = param!(CocoaConfig, "californium2_backoff_persists" | "cf2_backoff_persists" = "off", "on | off",
    "Californium 2.x accidental FullBackoff: after an exchange with more than weak_max_n retransmissions (or a failure after retransmitting) the last backed-off timer is the next exchange's RTO, until a usable sample arrives (§9.1).",
    flag(californium2_backoff_persists));

param_table!(COCOA, COCOA_INFO: CocoaConfig = [
    P_VBF_STEP, P_SELECT_CORE, P_CAP, P_CAP_SCOPE, P_AGING, P_AGING_TARGET, P_AGING_RESIDUAL, P_LITERAL,
    P_WEAK_MAX_N,
]);

param_table!(STRONG, STRONG_INFO: CocoaConfig = [
    P_VBF_STEP, P_SELECT_CORE, P_CAP, P_CAP_SCOPE, P_AGING, P_AGING_TARGET, P_AGING_RESIDUAL, P_LITERAL, P_S_WEIGHT,
]);

param_table!(FB1, FB1_INFO: CocoaConfig = [
    P_VBF_STEP, P_SELECT_CORE, P_CAP, P_CAP_SCOPE, P_AGING, P_AGING_TARGET, P_AGING_RESIDUAL, P_LITERAL,
    P_WEAK_MAX_N, P_FB_RETAINED, P_FB_REDITHER,
]);

param_table!(FB2, FB2_INFO: CocoaConfig = [
    P_VBF_STEP, P_SELECT_CORE, P_CAP, P_CAP_SCOPE, P_AGING, P_AGING_TARGET, P_AGING_RESIDUAL, P_LITERAL,
    P_WEAK_MAX_N, P_FB_RETAINED, P_FB_REDITHER, P_FB2_RULE,
]);

param_table!(PLUS, PLUS_INFO: CocoaConfig = [
    P_VBF_EXCH, P_VBF_TABLE, P_VBF_LOW, P_VBF_MID, P_VBF_HIGH, P_VBF_HIGH_INCLUSIVE, P_SELECT_PLUS, P_GAINS,
    P_WEAK_MAX_N, P_OVERALL_CAP, P_INITIAL_CAP, P_BACKOFF_CAP, P_AGING, P_AGING_TARGET, P_AGING_RESIDUAL,
    P_AGING_LOW, P_BLEND_INVERTED, P_STRONG_RESET, P_FIRST_SAMPLE, P_BLIND_RULE,
]);

param_table!(CALIFORNIUM, CALIFORNIUM_INFO: CocoaConfig = [
    P_SELECT_CF, P_WEAK_MAX_N, P_STRONG_ONLY, P_CF_AGING, P_MAX_ACK_TIMEOUT, P_CF2_PERSISTS,
]);

impl Params for CocoaConfig {
    fn set(&mut self, key: &str, value: &str) -> Result<(), SetError> {
        params::set_param(self.table(), self, key, value).unwrap_or_else(|| self.common.set(key, value))
    }

    fn write(&self, w: &mut dyn fmt::Write) -> fmt::Result {
        let mut w = KvWriter::new(w);
        self.common.write(&mut w)?;
        params::write_params(self.table(), self, &mut w)
    }

    fn apply_preset(&mut self, preset: Preset) -> Result<(), ()> {
        use CocoaVariant as V;
        let mut c = CocoaConfig::new(self.variant);
        match (preset, self.variant) {
            (Preset::Rfc7252, _) => c.common.apply_preset(preset, DitherMode::Uniform),
            (Preset::Helsinki2018, V::Cocoa | V::Strong | V::FullBackoff1 | V::FullBackoff2) => {
                c.common.apply_preset(preset, DitherMode::Uniform);
                c.vbf = VbfMode::PerStep;
                c.cap = Some(32.0);
                c.cap_scope = CapScope::AllTimers;
                c.aging = false;
            }
            (Preset::AncillottiCooja, V::Plus) => {
                // Contiki Erbium (§9.3): ACK_TIMEOUT 3 s dithered in clock ticks.
                c.common.apply_preset(preset, DitherMode::Uniform);
                c.common.ack_timeout = 3.0;
                c.common.dither = DitherMode::ContikiTicks;
                c.vbf = VbfMode::PerExchange;
                c.vbf_table = VbfTable::ANCILLOTTI;
                c.gains = Gains::Rfc6298;
                c.aging = true;
                c.overall_cap = Some(60.0);
                c.initial_cap = Some(32.0);
                c.backoff_cap = Some(60.0);
            }
            (Preset::Makarem2021, V::Plus) => {
                c.common.apply_preset(preset, DitherMode::Uniform);
                c.vbf = VbfMode::PerExchange;
                c.vbf_table = VbfTable::BETZLER2015;
                c.vbf_high_inclusive = true; // Eq. 2.6: 1.5 for RTO_init >= 3 s
                c.vbf_select_on = VbfSelect::Undithered;
                c.gains = Gains::Swapped;
                c.overall_cap = Some(60.0);
                c.initial_cap = Some(32.0);
                c.backoff_cap = Some(60.0);
            }
            _ => return Err(()),
        }
        *self = c;
        Ok(())
    }

    fn info(&self) -> &'static [ParamInfo] {
        match self.variant {
            CocoaVariant::Cocoa => COCOA_INFO,
            CocoaVariant::Strong => STRONG_INFO,
            CocoaVariant::FullBackoff1 => FB1_INFO,
            CocoaVariant::FullBackoff2 => FB2_INFO,
            CocoaVariant::Plus => PLUS_INFO,
            CocoaVariant::Californium => CALIFORNIUM_INFO,
        }
    }

    fn validate(&self) -> Result<(), (&'static str, &'static str)> {
        if self.variant == CocoaVariant::Californium && self.max_ack_timeout < CALIFORNIUM_MIN_RTO {
            return Err(("max_ack_timeout", "must be at least Californium's MIN_RTO of 0.5 s"));
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Arithmetic helpers (no_std: no floor/round/powi).

/// Seconds of a duration, correctly rounded (2.5 s is exactly 2.5).
fn secs_of(d: Duration) -> f64 {
    d.as_secs() as f64 + d.subsec_nanos() as f64 / 1e9
}

/// Java `Math.round` for non-negative values.
fn jround(x: f64) -> f64 {
    if x <= 0.0 {
        0.0
    } else {
        ((x + 0.5) as i64) as f64
    }
}

/// Seconds to whole milliseconds (Java rounding); values held in ms are exact.
fn to_ms(s: f64) -> f64 {
    jround(s * 1e3)
}

/// Floor of a non-negative value (with a guard against representation error).
fn floor_pos(x: f64) -> f64 {
    if x <= 0.0 {
        0.0
    } else {
        ((x + 1e-6) as i64) as f64
    }
}

fn pow2(n: u32) -> f64 {
    let mut f = 1.0;
    for _ in 0..n.min(64) {
        f *= 2.0;
    }
    f
}

fn ratio(t: f64, base: f64) -> f64 {
    if base > 0.0 {
        t / base
    } else {
        1.0
    }
}

/// One draft §4.3 ageing check of `rto` after `age` idle seconds. Returns the aged value and
/// the idle time not consumed, or `None` when no step applies.
fn age_value(rto: f64, age: f64, low: AgingLowRule) -> Option<(f64, f64)> {
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
        Some(s) if s.samples > 0 => {
            Estimator { srtt: secs_of(s.srtt), rttvar: secs_of(s.rttvar), rto: secs_of(s.rto), samples: s.samples }
        }
        _ => Estimator::new(),
    }
}

// ---------------------------------------------------------------------------------------------

/// A CoCoA-family instance for one destination endpoint.
#[derive(Clone, Debug)]
pub struct Cocoa {
    cfg: CocoaConfig,
    /// Strong and weak estimator parameters.
    sp: EstimatorParams,
    wp: EstimatorParams,
    strong: Estimator,
    weak: Estimator,
    /// Overall RTO, seconds (Californium: whole milliseconds).
    rto: f64,
    /// Ageing clocks: overall (last estimator update, reset or ageing step), strong, weak.
    t_upd: Instant,
    t_upd_s: Instant,
    t_upd_w: Instant,
    /// FullBackoff retained timer B, or Californium 2.x's persisted backoff.
    retained: Option<f64>,
    /// Dither factor of the exchange that produced `retained`.
    retained_d: f64,
    /// Retransmissions since the last strong sample (`strong_reset_after_3`).
    retx_since_strong: u32,
}

impl Cocoa {
    /// A fresh instance; the ageing clock starts at [`Instant::ZERO`] (use
    /// [`CongestionControl::reset`] to start it elsewhere).
    pub fn new(cfg: CocoaConfig) -> Self {
        let (sp, wp) = match cfg.variant {
            CocoaVariant::Californium => (EstimatorParams::californium(4.0), EstimatorParams::californium(1.0)),
            CocoaVariant::Plus if cfg.gains == Gains::Swapped => {
                (EstimatorParams::swapped(4.0), EstimatorParams::swapped(1.0))
            }
            _ => (EstimatorParams::rfc6298(4.0), EstimatorParams::rfc6298(1.0)),
        };
        let mut c = Cocoa {
            cfg,
            sp,
            wp,
            strong: Estimator::new(),
            weak: Estimator::new(),
            rto: 0.0,
            t_upd: Instant::ZERO,
            t_upd_s: Instant::ZERO,
            t_upd_w: Instant::ZERO,
            retained: None,
            retained_d: 1.0,
            retx_since_strong: 0,
        };
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
        self.rto = secs_of(snap.rto);
        if self.cfg.variant == CocoaVariant::Californium {
            self.rto = to_ms(self.rto) / 1e3;
        }
        self.strong = estimator_from(snap.strong);
        let has_weak = !(self.cfg.variant == CocoaVariant::Strong
            || (self.cfg.variant == CocoaVariant::Californium && self.cfg.strong_only));
        self.weak = if has_weak { estimator_from(snap.weak) } else { Estimator::new() };
        self.retained = if self.keeps_retained() { snap.retained.map(secs_of) } else { None };
        self.retained_d = 1.0;
        self.t_upd = now;
        self.t_upd_s = now;
        self.t_upd_w = now;
        self.retx_since_strong = 0;
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
        self.strong.is_empty() && self.weak.is_empty()
    }

    fn weak_ok(&self, n: u32) -> bool {
        n >= 1 && self.cfg.weak_max_n.map_or(true, |m| n <= m)
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

    /// Cap of the overall estimate.
    fn cap_overall(&self, rto: f64) -> f64 {
        match self.cfg.variant {
            CocoaVariant::Plus => cap(rto, self.cfg.overall_cap),
            CocoaVariant::Californium => rto,
            _ if self.cfg.cap_scope == CapScope::AllTimers => cap(rto, self.cfg.cap),
            _ => rto,
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

    fn blend(&mut self, w: f64, e: f64) {
        let (a, b) = if self.cfg.blend_inverted { (1.0 - w, w) } else { (w, 1.0 - w) };
        self.rto = self.cap_overall(a * e + b * self.rto);
    }

    /// Lazy ageing (draft §4.3 / §6 / §9.2), when an exchange is admitted.
    fn age(&mut self, now: Instant) {
        if self.cfg.variant == CocoaVariant::Californium {
            return self.age_californium(now);
        }
        let low = self.cfg.aging_low_rule;
        let keep = self.cfg.aging_residual == AgingResidual::Keep;
        if let Some((rto, residual)) = age_value(self.rto, secs_of(now - self.t_upd), low) {
            self.rto = self.cap_overall(rto);
            self.t_upd = clock_after(now, residual, keep);
        }
        if self.cfg.aging_target == AgingTarget::Estimators {
            for (e, t) in [(&mut self.strong, &mut self.t_upd_s), (&mut self.weak, &mut self.t_upd_w)] {
                if e.is_empty() {
                    continue;
                }
                if let Some((v, residual)) = age_value(e.rto, secs_of(now - *t), low) {
                    let s = v / e.rto; // e.rto > 0: age_value steps only positive values
                    e.srtt *= s;
                    e.rttvar *= s;
                    e.rto = v;
                    *t = clock_after(now, residual, keep);
                }
            }
        }
    }

    /// Californium 3.x `checkAging`: integer ms, cumulative within one check, the timestamp
    /// reset at every step.
    fn age_californium(&mut self, now: Instant) {
        let mut age = (now - self.t_upd).as_millis() as f64;
        let mut rto = to_ms(self.rto);
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
            self.rto = rto / 1e3;
            self.t_upd = now;
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
                let mut base = self.rto;
                if in_flight > 0 && self.is_blind() {
                    base *= match (self.cfg.variant, self.cfg.blind_rule) {
                        (CocoaVariant::Plus, BlindRule::DoublePerExchange) => pow2(in_flight),
                        _ => in_flight as f64 + 1.0,
                    };
                }
                if self.cfg.variant == CocoaVariant::Plus {
                    base = cap(base, self.cfg.initial_cap);
                }
                let t = c.dither(base, rng);
                (base, t, ratio(t, base))
            }
        };
        let t0 = self.cap_initial(t0).max(0.0);
        let mut ex = Exchange::new(now, t0, self.rto);
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
        let mut base = to_ms(self.retained.unwrap_or(self.rto));
        if in_flight > 0 && self.is_blind() {
            base *= in_flight as f64 + 1.0;
        }
        let base = base.min(INITIAL_RTO_CAP * 1e3);
        // Dithered to [RTO, 1.5 RTO] in whole ms, clamped to [MIN_RTO, min(MAX_ACK_TIMEOUT, 60 s)].
        let dithered = self.cfg.common.dither(base / 1e3, rng);
        let max = to_ms(self.cfg.max_ack_timeout.min(CALIFORNIUM_MAX_RTO));
        let t0 = floor_pos(dithered * 1e3).max(CALIFORNIUM_MIN_RTO * 1e3).min(max);
        let mut ex = Exchange::new(now, t0 / 1e3, self.rto);
        ex.dither = ratio(dithered, base / 1e3);
        ex.factor = self.vbf(match self.cfg.vbf_select_on {
            VbfSelect::Dithered => t0 / 1e3,
            VbfSelect::Undithered => base / 1e3,
        });
        ex
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

    fn ack_core(&mut self, now: Instant, ex: &Exchange, n: u32, r: f64) {
        if n == 0 {
            self.retx_since_strong = 0;
            let e = Self::feed(&mut self.strong, &self.sp, r, &self.cfg);
            let w = if self.cfg.variant == CocoaVariant::Strong { self.cfg.s_weight } else { 0.5 };
            self.blend(w, e);
            self.t_upd = now;
            self.t_upd_s = now;
        } else if self.cfg.variant != CocoaVariant::Strong && self.weak_ok(n) {
            let e = Self::feed(&mut self.weak, &self.wp, r, &self.cfg);
            self.blend(0.25, e);
            self.t_upd = now;
            self.t_upd_w = now;
        }
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
        let rto_after = self.rto;
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
        if !(n == 0 || self.weak_ok(n)) {
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
            if n == 0 { (self.strong.sample(&self.sp, r), 0.5) } else { (self.weak.sample(&self.wp, r), 0.25) };
        self.rto = jround(w * to_ms(e) + (1.0 - w) * to_ms(self.rto)) / 1e3;
        self.t_upd = now;
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
        self.rto = self.cfg.common.ack_timeout;
        if self.cfg.variant == CocoaVariant::Californium {
            self.rto = to_ms(self.rto) / 1e3;
        }
        self.strong = Estimator::new();
        self.weak = Estimator::new();
        self.t_upd = now;
        self.t_upd_s = now;
        self.t_upd_w = now;
        self.retained = None;
        self.retained_d = 1.0;
        self.retx_since_strong = 0;
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
        if matches!(action, TimeoutAction::Retransmit(_))
            && self.cfg.variant == CocoaVariant::Plus
            && self.cfg.strong_reset_after_3
        {
            self.retx_since_strong = self.retx_since_strong.saturating_add(1);
            if self.retx_since_strong > 3 {
                self.strong = Estimator::new();
            }
        }
        action
    }

    fn on_ack(&mut self, now: Instant, ex: &Exchange, ack: &AckInfo) {
        let r = secs_of(ack.rtt);
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
            rto: time::secs(self.rto),
            strong: self.strong.snapshot(),
            weak: self.weak.snapshot(),
            retained: self.retained.map(time::secs),
            ..Snapshot::default()
        }
    }
}
