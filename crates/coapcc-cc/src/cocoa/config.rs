//! [`CocoaConfig`]: the configuration of the CoCoA family, its parameter table (each
//! parameter declared once) and its reproduction presets.

use core::fmt;

use super::choices::*;
use super::state::Cocoa;
use crate::common::{Common, DitherMode};
use crate::default::FbRetained;
use crate::params::{self, param, param_table, KvWriter, Param, ParamInfo, Params, Preset, SetError};

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
    opt_secs(cap),
    shared = "backoff_cap"
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
    opt_secs(backoff_cap),
    shared = "backoff_cap"
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
    secs(max_ack_timeout),
    shared = "backoff_cap"
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

/// The CoCoA+ parameters of its RTO estimation alone (no backoff). BDP-CoAP's RTO_init is
/// CoCoA+'s: it takes these, declared once here.
pub(crate) const PLUS_RTO: &[Param<CocoaConfig>] = &[
    P_GAINS,
    P_WEAK_MAX_N,
    P_OVERALL_CAP,
    P_INITIAL_CAP,
    P_AGING,
    P_AGING_TARGET,
    P_AGING_RESIDUAL,
    P_AGING_LOW,
    P_BLEND_INVERTED,
    P_STRONG_RESET,
    P_FIRST_SAMPLE,
    P_BLIND_RULE,
];

param_table!(CALIFORNIUM, CALIFORNIUM_INFO: CocoaConfig = [
    P_SELECT_CF, P_WEAK_MAX_N, P_STRONG_ONLY, P_CF_AGING, P_MAX_ACK_TIMEOUT, P_CF2_PERSISTS,
]);

impl Params for CocoaConfig {
    params::table_params!();

    fn apply_preset(&mut self, preset: Preset) -> Result<(), ()> {
        use CocoaVariant as V;
        let mut c = CocoaConfig::new(self.variant);
        // Every preset sets the testbed's shared transmission parameters; the members a
        // publication ran also get the settings it used.
        c.common.apply_preset(preset, DitherMode::Uniform);
        match (preset, self.variant) {
            (Preset::Helsinki2018, V::Cocoa | V::Strong | V::FullBackoff1 | V::FullBackoff2) => {
                c.vbf = VbfMode::PerStep;
                c.cap = Some(32.0);
                c.cap_scope = CapScope::AllTimers;
                c.aging = false;
            }
            (Preset::AncillottiCooja, V::Plus) => {
                // Contiki Erbium (§9.3): ACK_TIMEOUT 3 s dithered in clock ticks (shared).
                c.vbf = VbfMode::PerExchange;
                c.vbf_table = VbfTable::ANCILLOTTI;
                c.gains = Gains::Rfc6298;
                c.aging = true;
                c.overall_cap = Some(60.0);
                c.initial_cap = Some(32.0);
                c.backoff_cap = Some(60.0);
            }
            (Preset::Makarem2021, V::Plus) => {
                c.vbf = VbfMode::PerExchange;
                c.vbf_table = VbfTable::BETZLER2015;
                c.vbf_high_inclusive = true; // Eq. 2.6: 1.5 for RTO_init >= 3 s
                c.vbf_select_on = VbfSelect::Undithered;
                c.gains = Gains::Swapped;
                c.overall_cap = Some(60.0);
                c.initial_cap = Some(32.0);
                c.backoff_cap = Some(60.0);
            }
            _ => {}
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
