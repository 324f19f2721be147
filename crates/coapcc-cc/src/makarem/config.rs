//! [`MakaremConfig`]: the members, their named choices, the parameter tables (each parameter
//! declared once) and presets.

use super::estimator::{MkEstimatorParams, RtoVersion, RTO_VERSIONS};
use super::state::Makarem;
use crate::common::{Common, DitherMode};
use crate::params::{self, param, param_table, KvWriter, Param, ParamInfo, Params, Preset, SetError};
use crate::pcocoa::{SampleSource, SAMPLE_SOURCES};

/// Which algorithm of the thesis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MakaremVariant {
    /// `makarem-rto`: the thesis RTO estimator alone (no dither, no backoff).
    Rto,
    /// `cocoa-4state`: CoCoA strong estimator with the 4-state backoff.
    FourState,
    /// `idc-coap`: increase/decrease spacing (Algorithm 5).
    Idc,
    /// `idc-coap-extra`: Algorithm 7, a faster return after a loss.
    IdcExtra,
    /// `idc-coap-probing`: Algorithm 8, a 10-phase cycle probing at the congestion level.
    IdcProbing,
    /// `idc-coap-exp`: Algorithm 9, exponential growth back to the congestion level.
    IdcExp,
    /// `mbc-coap`: measurement-based spacing (Algorithm 6).
    Mbc,
}

impl MakaremVariant {
    /// The registry name.
    pub fn name(self) -> &'static str {
        match self {
            MakaremVariant::Rto => "makarem-rto",
            MakaremVariant::FourState => "cocoa-4state",
            MakaremVariant::Idc => "idc-coap",
            MakaremVariant::IdcExtra => "idc-coap-extra",
            MakaremVariant::IdcProbing => "idc-coap-probing",
            MakaremVariant::IdcExp => "idc-coap-exp",
            MakaremVariant::Mbc => "mbc-coap",
        }
    }

    /// An IDC-CoAP member.
    pub fn is_idc(self) -> bool {
        matches!(
            self,
            MakaremVariant::Idc | MakaremVariant::IdcExtra | MakaremVariant::IdcProbing | MakaremVariant::IdcExp
        )
    }

    /// A rate-based control (paces sends by a spacing).
    pub fn is_rate_based(self) -> bool {
        self.is_idc() || self == MakaremVariant::Mbc
    }
}

/// 4-state backoff (M-AMBIG-5): the order of scaling the timer and incrementing the state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FourStateOrder {
    /// `T_k = T_{k−1}·VBF_s`, then `s += 1` (the only order that reaches VBF_1).
    ScaleThenIncrement,
    /// `s += 1`, then `T_k = T_{k−1}·VBF_s`.
    IncrementThenScale,
}

/// Names of [`FourStateOrder`].
pub const FOUR_STATE_ORDERS: &[(&str, FourStateOrder)] = &[
    ("scale-then-increment", FourStateOrder::ScaleThenIncrement),
    ("increment-then-scale", FourStateOrder::IncrementThenScale),
];

/// Algorithm 8 (M-AMBIG-9): the printed `spacing = dw * spacing` without losses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeIncrease {
    /// As printed: `spacing = dw·spacing`.
    Multiply,
    /// `spacing = spacing − dw·spacing`, as Algorithm 5.
    Subtract,
}

/// Names of [`ProbeIncrease`].
pub const PROBE_INCREASES: &[(&str, ProbeIncrease)] =
    &[("multiply", ProbeIncrease::Multiply), ("subtract", ProbeIncrease::Subtract)];

/// Largest MBC window (`m`; the thesis evaluated 3 and 10).
pub const MBC_MAX_WINDOW: usize = 16;
/// IDC probing cycle (Algorithm 8) and exponential-growth counter target (Algorithm 9).
pub const IDC_CYCLE: u32 = 10;

/// Configuration of the thesis's algorithms. Fields a member does not use keep their
/// defaults and are neither settable nor written for it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MakaremConfig {
    /// Member.
    pub variant: MakaremVariant,
    /// RFC 7252 parameters: `ack_timeout` is the RTO before any sample (2 s), MAX_RETRANSMIT
    /// r = 4. `makarem-rto` and the rate-based controls do not dither the RTO.
    pub common: Common,
    /// Thesis estimator: version (`makarem-rto`; the others use the final version).
    pub version: RtoVersion,
    /// Thesis estimator α (1/8).
    pub alpha: f64,
    /// Thesis estimator γ (1/32).
    pub gamma: f64,
    /// Thesis estimator K (4).
    pub k: f64,
    /// Thesis estimator K after a spurious retransmission (7).
    pub k_spurious: f64,
    /// M-AMBIG-7: the sample after a retransmission.
    pub sample: SampleSource,
    /// Lower bound of every RTO estimate, seconds (a gap: 1 ms).
    pub min_rto: f64,
    /// 4-state factor VBF_1 (1.1).
    pub vbf1: f64,
    /// 4-state factor VBF_2 (1.3).
    pub vbf2: f64,
    /// 4-state factor VBF_3 (1.7).
    pub vbf3: f64,
    /// 4-state factor VBF_4 (2.5).
    pub vbf4: f64,
    /// M-AMBIG-5.
    pub four_state_order: FourStateOrder,
    /// M-AMBIG-5: the state persists across messages.
    pub four_state_persist: bool,
    /// 4-state cap of backed-off timers, seconds (60, as CoCoA+).
    pub backoff_cap: Option<f64>,
    /// IDC multiplicative spacing increase on a loss.
    pub iw: f64,
    /// IDC slow spacing decrease per ACK (and Algorithm 8's no-loss factor).
    pub dw: f64,
    /// IDC fast spacing decrease below the congestion level.
    pub fw: f64,
    /// IDC security margin on loss_spacing (Algorithms 8, 9: 1.01).
    pub margin: f64,
    /// M-AMBIG-8: initial spacing, seconds.
    pub spacing0: f64,
    /// M-AMBIG-8: initial loss_spacing, seconds.
    pub loss_spacing0: f64,
    /// M-AMBIG-9.
    pub probe_increase: ProbeIncrease,
    /// M-AMBIG-9: Algorithm 8 saves loss_spacing on a timeout (Algorithm 5 does; the print does not).
    pub probe_save_loss: bool,
    /// M-AMBIG-10: Algorithm 9's exponential factor (1/2; 3/4 tried).
    pub exp_factor: f64,
    /// Algorithms 8 and 9: the initial cycle index / counter (not given; 11 = "no loss yet").
    pub counter0: u32,
    /// MBC window m (10).
    pub m: u32,
    /// MBC probing pacing gain (1.25).
    pub probe_gain: f64,
    /// MBC preventive pacing gain (0.75).
    pub drain_gain: f64,
}

impl MakaremConfig {
    fn fixed(variant: MakaremVariant) -> Self {
        MakaremConfig {
            variant,
            common: Common::default(),
            version: RtoVersion::Final,
            alpha: 0.125,
            gamma: 0.03125,
            k: 4.0,
            k_spurious: 7.0,
            sample: SampleSource::AckedCopy,
            min_rto: 0.001,
            vbf1: 1.1,
            vbf2: 1.3,
            vbf3: 1.7,
            vbf4: 2.5,
            four_state_order: FourStateOrder::ScaleThenIncrement,
            four_state_persist: true,
            backoff_cap: Some(60.0),
            iw: 1.5,
            dw: 0.01,
            fw: 0.5,
            margin: 1.01,
            spacing0: 0.0,
            loss_spacing0: 0.0,
            probe_increase: ProbeIncrease::Multiply,
            probe_save_loss: false,
            exp_factor: 0.5,
            counter0: 11,
            m: 10,
            probe_gain: 1.25,
            drain_gain: 0.75,
        }
    }

    /// Defaults (the thesis's recommended constants, proposed gap resolutions) for `variant`.
    pub fn new(variant: MakaremVariant) -> Self {
        let mut c = MakaremConfig::fixed(variant);
        params::apply_defaults(c.table(), &mut c);
        c
    }

    /// The 4-state backoff factor of state `s` (1..=4).
    pub fn vbf(&self, s: u32) -> f64 {
        match s {
            0 | 1 => self.vbf1,
            2 => self.vbf2,
            3 => self.vbf3,
            _ => self.vbf4,
        }
    }

    /// A fresh algorithm instance.
    pub fn build(&self) -> Makarem {
        Makarem::new(*self)
    }

    /// The thesis estimator's constants (the final version except for `makarem-rto`).
    pub fn estimator_params(&self) -> MkEstimatorParams {
        MkEstimatorParams {
            version: if self.variant == MakaremVariant::Rto { self.version } else { RtoVersion::Final },
            alpha: self.alpha,
            gamma: self.gamma,
            k: self.k,
            k_spurious: self.k_spurious,
            min_rto: self.min_rto,
        }
    }

    fn table(&self) -> &'static [Param<MakaremConfig>] {
        match self.variant {
            MakaremVariant::Rto => RTO,
            MakaremVariant::FourState => FOUR_STATE,
            MakaremVariant::Idc => IDC,
            MakaremVariant::IdcExtra => IDC_EXTRA,
            MakaremVariant::IdcProbing => IDC_PROBING,
            MakaremVariant::IdcExp => IDC_EXP,
            MakaremVariant::Mbc => MBC,
        }
    }
}

const WEIGHT: &str = "a weight in 0..=1";

const P_VERSION: Param<MakaremConfig> = param!(MakaremConfig, "version" | "rto_version" = "final", "1 | 2 | final",
    "Thesis RTO version: 1 (Algorithm 2: RTTVAR moves only when R > SRTT, K = 4), 2 (Algorithm 3: gain gamma when the RTT falls) or final (Algorithm 4: K = k_spurious after a spurious retransmission).",
    choice(version, RTO_VERSIONS, "1, 2 or final"));
const P_ALPHA: Param<MakaremConfig> = param!(
    MakaremConfig,
    "alpha" | "mk_alpha" = "0.125",
    "0..=1",
    "Thesis estimator alpha: SRTT gain, and RTTVAR gain when R > SRTT (chosen: 1/8).",
    number(alpha, 0.0, 1.0, WEIGHT)
);
const P_GAMMA: Param<MakaremConfig> = param!(
    MakaremConfig,
    "gamma" | "mk_gamma" = "0.03125",
    "0..=1",
    "Thesis estimator gamma: RTTVAR gain when R <= SRTT (chosen: 1/32; design rule alpha > gamma).",
    number(gamma, 0.0, 1.0, WEIGHT)
);
const P_K: Param<MakaremConfig> = param!(
    MakaremConfig,
    "k" | "mk_k" = "4",
    ">= 0",
    "Thesis estimator K without a spurious retransmission (4).",
    number(k, 0.0, 100.0, "a number in 0..=100")
);
const P_K_SPURIOUS: Param<MakaremConfig> = param!(MakaremConfig, "k_spurious" | "mk_k_spurious" = "7", ">= 0",
    "Final version: K when the acknowledged exchange revealed a spurious retransmission (the ACK names an earlier copy than the last sent, Transmission Counter) (7).",
    number(k_spurious, 0.0, 100.0, "a number in 0..=100"));
const P_SAMPLE: Param<MakaremConfig> = param!(MakaremConfig,
    "sample" | "mk_sample_after_retx" = "acked-copy", "acked-copy | original",
    "Sample after retransmissions (M-AMBIG-7, the thesis is silent): the RTT of the copy the Transmission Counter names (none without it), or always from the original.",
    choice(sample, SAMPLE_SOURCES, "acked-copy or original"));

const FACTOR: &str = "a backoff factor from 1 to 100";
const P_VBF: [Param<MakaremConfig>; 4] = [
    param!(
        MakaremConfig,
        "vbf_1" = "1.1",
        "factor >= 1",
        "4-state backoff factor in state 1.",
        number(vbf1, 1.0, 100.0, FACTOR)
    ),
    param!(
        MakaremConfig,
        "vbf_2" = "1.3",
        "factor >= 1",
        "4-state backoff factor in state 2.",
        number(vbf2, 1.0, 100.0, FACTOR)
    ),
    param!(
        MakaremConfig,
        "vbf_3" = "1.7",
        "factor >= 1",
        "4-state backoff factor in state 3.",
        number(vbf3, 1.0, 100.0, FACTOR)
    ),
    param!(
        MakaremConfig,
        "vbf_4" = "2.5",
        "factor >= 1",
        "4-state backoff factor in state 4.",
        number(vbf4, 1.0, 100.0, FACTOR)
    ),
];
const P_ORDER: Param<MakaremConfig> = param!(MakaremConfig,
    "four_state_order" = "scale-then-increment", "scale-then-increment | increment-then-scale",
    "At a timeout, scale the timer by VBF_s then increment s (default: otherwise VBF_1 is unreachable), or increment first (M-AMBIG-5).",
    choice(four_state_order, FOUR_STATE_ORDERS, "scale-then-increment or increment-then-scale"));
const P_PERSIST: Param<MakaremConfig> = param!(MakaremConfig, "four_state_persist" = "on", "on | off",
    "The backoff state s persists across messages (+1 per retransmission up to 4, -1 per acknowledged transmission down to 1); off starts every message in state 1 (M-AMBIG-5).",
    flag(four_state_persist));
const P_BACKOFF_CAP: Param<MakaremConfig> = param!(
    MakaremConfig,
    "backoff_cap" = "60",
    "none | seconds",
    "Cap of the backed-off timers (not given by the thesis; CoCoA+'s 60 s).",
    opt_secs(backoff_cap),
    shared = "backoff_cap"
);

const P_IW_15: Param<MakaremConfig> = param!(MakaremConfig, "iw" = "1.5", ">= 1",
    "Spacing multiplier on a loss (RTO expiry): the multiplicative rate decrease (recommended 1.5; 1.1 also evaluated).",
    number(iw, 1.0, 100.0, "a number from 1 to 100"));
const P_IW_17: Param<MakaremConfig> = param!(
    MakaremConfig,
    "iw" = "1.7",
    ">= 1",
    "Spacing multiplier on a loss (Algorithm 7's 1.7, chosen with the steady-state goodput formula 6.1).",
    number(iw, 1.0, 100.0, "a number from 1 to 100")
);
const P_DW_001: Param<MakaremConfig> = param!(
    MakaremConfig,
    "dw" = "0.01",
    "0..=1",
    "Slow spacing decrease per ACK at or above the last congestion level: spacing -= dw * spacing (0.01).",
    number(dw, 0.0, 1.0, WEIGHT)
);
const P_DW_025: Param<MakaremConfig> = param!(
    MakaremConfig,
    "dw" = "0.25",
    "0..=1",
    "Algorithm 8's factor in the no-loss phase (the thesis illustrates 0.25); see probe_increase.",
    number(dw, 0.0, 1.0, WEIGHT)
);
const P_FW: Param<MakaremConfig> = param!(
    MakaremConfig,
    "fw" = "0.5",
    "0..=1",
    "Fast spacing decrease per ACK below the last congestion level: spacing -= fw * spacing (0.5).",
    number(fw, 0.0, 1.0, WEIGHT)
);
const P_MARGIN: Param<MakaremConfig> = param!(
    MakaremConfig,
    "margin" = "1.01",
    ">= 1",
    "Security margin on the congestion level: the spacing converges to margin * loss_spacing (1.01).",
    number(margin, 1.0, 100.0, "a number from 1 to 100")
);
const P_SPACING0: Param<MakaremConfig> = param!(
    MakaremConfig,
    "spacing0" | "idc_spacing0" = "0",
    "seconds >= 0",
    "Initial spacing (M-AMBIG-8): 0, so the first ACK sets spacing = RTT through the max().",
    custom(
        |c: &mut MakaremConfig, v: &str| -> Result<(), SetError> {
            c.spacing0 = params::parse_secs(v, true)?;
            Ok(())
        },
        |c: &MakaremConfig, k: &'static str, w: &mut KvWriter<'_>| w.kv(k, c.spacing0)
    )
);
const P_LOSS_SPACING0: Param<MakaremConfig> = param!(
    MakaremConfig,
    "loss_spacing0" | "idc_loss_spacing0" = "0",
    "seconds >= 0",
    "Initial loss_spacing, the congestion level before any loss (M-AMBIG-8): 0.",
    custom(
        |c: &mut MakaremConfig, v: &str| -> Result<(), SetError> {
            c.loss_spacing0 = params::parse_secs(v, true)?;
            Ok(())
        },
        |c: &MakaremConfig, k: &'static str, w: &mut KvWriter<'_>| w.kv(k, c.loss_spacing0)
    )
);
const P_PROBE_INCREASE: Param<MakaremConfig> = param!(
    MakaremConfig,
    "probe_increase" | "idc_probe_increase" = "multiply",
    "multiply | subtract",
    "Algorithm 8 without losses: spacing = dw * spacing as printed, or spacing -= dw * spacing (M-AMBIG-9).",
    choice(probe_increase, PROBE_INCREASES, "multiply or subtract")
);
const P_PROBE_SAVE: Param<MakaremConfig> = param!(
    MakaremConfig,
    "probe_save_loss" | "idc_probe_save_loss" = "off",
    "on | off",
    "Algorithm 8's timeout saves loss_spacing = spacing as Algorithm 5 does (the print does not) (M-AMBIG-9).",
    flag(probe_save_loss)
);
const P_EXP_FACTOR: Param<MakaremConfig> = param!(MakaremConfig,
    "exp_factor" | "idc_exp_factor" = "0.5", "0..=1",
    "Algorithm 9's exponential factor: spacing -= factor * (spacing - margin * loss_spacing) (1/2; 3/4 also tried; M-AMBIG-10).",
    number(exp_factor, 0.0, 1.0, WEIGHT));
const P_M: Param<MakaremConfig> = param!(
    MakaremConfig,
    "m" | "mbc_window" = "10",
    "1..=16",
    "Number of inter-ACK spacing samples in the window (recommended 10; 3 also evaluated).",
    int(m, 1, MBC_MAX_WINDOW as u32, "an integer 1..=16")
);
const P_MBC_PROBE: Param<MakaremConfig> = param!(
    MakaremConfig,
    "probe_gain" = "1.25",
    "> 0",
    "Pacing gain of the probing phase (first of 8; never on a retransmission): spacing = min / gain.",
    positive(probe_gain, 100.0, "a number > 0")
);
const P_MBC_DRAIN: Param<MakaremConfig> = param!(
    MakaremConfig,
    "drain_gain" = "0.75",
    "> 0",
    "Pacing gain of the preventive phase (second of 8, and a probing phase whose packet is a retransmission).",
    positive(drain_gain, 100.0, "a number > 0")
);
const P_COUNTER0: Param<MakaremConfig> = param!(MakaremConfig, "counter0" = "11", "1..=11",
    "Initial cycle index (Algorithm 8) or counter n (Algorithm 9); not given by the thesis: 11 is the no-loss phase, so the rate rises until the first loss sets the congestion level.",
    int(counter0, 1, 11, "an integer 1..=11"));

const P_MIN_RTO: Param<MakaremConfig> = param!(MakaremConfig, "min_rto" = "0.001", "seconds > 0",
    "Lower bound of the RTO estimate. Not in the thesis (gap): without it a zero RTT sample would arm a zero timer; 1 ms is below any RTT of the thesis's scenarios.",
    secs(min_rto));

param_table!(RTO, RTO_INFO: MakaremConfig = [P_VERSION, P_ALPHA, P_GAMMA, P_K, P_K_SPURIOUS, P_SAMPLE, P_MIN_RTO]);
param_table!(FOUR_STATE, FOUR_STATE_INFO: MakaremConfig = [
    P_VBF[0], P_VBF[1], P_VBF[2], P_VBF[3], P_ORDER, P_PERSIST, P_BACKOFF_CAP, P_MIN_RTO,
]);
param_table!(IDC, IDC_INFO: MakaremConfig = [
    P_IW_15, P_DW_001, P_FW, P_SPACING0, P_LOSS_SPACING0, P_ALPHA, P_GAMMA, P_K, P_K_SPURIOUS, P_SAMPLE, P_MIN_RTO,
]);
param_table!(IDC_EXTRA, IDC_EXTRA_INFO: MakaremConfig = [
    P_IW_17, P_DW_001, P_FW, P_SPACING0, P_LOSS_SPACING0, P_ALPHA, P_GAMMA, P_K, P_K_SPURIOUS, P_SAMPLE, P_MIN_RTO,
]);
param_table!(IDC_PROBING, IDC_PROBING_INFO: MakaremConfig = [
    P_IW_15, P_DW_025, P_MARGIN, P_PROBE_INCREASE, P_PROBE_SAVE, P_COUNTER0, P_SPACING0, P_LOSS_SPACING0, P_ALPHA, P_GAMMA, P_K,
    P_K_SPURIOUS, P_SAMPLE, P_MIN_RTO,
]);
param_table!(IDC_EXP, IDC_EXP_INFO: MakaremConfig = [
    P_IW_15, P_EXP_FACTOR, P_MARGIN, P_COUNTER0, P_SPACING0, P_LOSS_SPACING0, P_ALPHA, P_GAMMA, P_K, P_K_SPURIOUS, P_SAMPLE, P_MIN_RTO,
]);
param_table!(MBC, MBC_INFO: MakaremConfig = [
    P_M, P_MBC_PROBE, P_MBC_DRAIN, P_ALPHA, P_GAMMA, P_K, P_K_SPURIOUS, P_SAMPLE, P_MIN_RTO,
]);

impl Params for MakaremConfig {
    params::table_params!();

    fn apply_preset(&mut self, preset: Preset) -> Result<(), ()> {
        // makarem2021 is these algorithms' own publication: MAX_RETRANSMIT r = 4, ACK_TIMEOUT
        // 2 s (the RTO before any sample), and the recommended constants, which are the
        // defaults. Every other preset: its testbed's shared transmission parameters over the
        // defaults.
        *self = MakaremConfig::new(self.variant);
        self.common.apply_preset(preset, DitherMode::Uniform);
        Ok(())
    }

    fn info(&self) -> &'static [ParamInfo] {
        match self.variant {
            MakaremVariant::Rto => RTO_INFO,
            MakaremVariant::FourState => FOUR_STATE_INFO,
            MakaremVariant::Idc => IDC_INFO,
            MakaremVariant::IdcExtra => IDC_EXTRA_INFO,
            MakaremVariant::IdcProbing => IDC_PROBING_INFO,
            MakaremVariant::IdcExp => IDC_EXP_INFO,
            MakaremVariant::Mbc => MBC_INFO,
        }
    }
}
