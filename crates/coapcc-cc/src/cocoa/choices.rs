//! The members of the CoCoA family and the named choices of their ambiguities.

use crate::default::FbRetained;

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
