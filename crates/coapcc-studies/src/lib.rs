//! # coapcc-studies: the simulation studies of Makarem (2021)
//!
//! Two small, fast, deterministic simulators that run **any** algorithm of the `coapcc-cc`
//! registry through its ordinary sans-IO interface:
//!
//! - [`rtt`] + [`scenarios`] (chapter 5): the 40 RTT scenarios of the thesis's Table 5.1 as
//!   seeded generators, replayed through an RTO algorithm to count spurious retransmissions
//!   and the RMSE between the RTO and the RTT.
//! - [`resbw`] (chapter 6): one sender facing a residual bandwidth that changes by good and bad
//!   periods, under a named loss rule (the thesis's is unstated; `delivered` by default);
//!   goodput, overhead and application loss ratio.
//!
//! The JSON entry points ([`rtt_scenarios_json`], [`resbw_json`], [`rtt_trace_json`]) are what
//! the command line and the Python bindings call. The clap front ends live in the `cli` module
//! (feature `cli`), so the library itself has no command-line dependency.
//!
//! ```
//! use coapcc_cc::AlgorithmConfig;
//! use coapcc_studies::{resbw, Dist};
//! // Default CoAP at a steady 0.5 pkt/s with RTT 500 ms: every new message is sent 0.5 s
//! // after the previous ACK'd copy (2 pkt/s > 0.5) and lost; its first retransmission, after
//! // T_0 ~ U[2, 3] s, passes. Goodput 1/(0.5 + 1.25 * 2) = 1/3 pkt/s (thesis §7.6 plateau).
//! let cfg = resbw::ResBwConfig {
//!     resbw: Dist::Fixed { v: 0.5 },
//!     rtt_ms: Dist::Fixed { v: 500.0 },
//!     duration_s: 20_000.0,
//!     ..Default::default()
//! };
//! let out = resbw::run(&AlgorithmConfig::parse("default").unwrap(), &cfg, None);
//! assert!((out.goodput_pps - 1.0 / 3.0).abs() < 0.005);
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod dist;
pub mod resbw;
pub mod rtt;
pub mod scenarios;

#[cfg(feature = "cli")]
pub mod cli;

use coapcc_cc::AlgorithmConfig;
use coapcc_proto::endpoint::lifecycle::{AckRtt, LateAck, ReliabilityOptions, RetransmitTimer};
use serde::{Deserialize, Serialize};

pub use dist::{Dist, Floor};
pub use resbw::{LossRule, ResBwConfig, ResBwOutcome, RttDraw};
pub use rtt::{ReplayOptions, RttConsumption, RttOutcome, RttPoint};
pub use scenarios::{Scenario, Scenario33, ScenarioOptions, TABLE_5_1};

/// Parse an algorithm spec, with the registry's message on error.
pub fn parse_cc(spec: &str) -> Result<AlgorithmConfig, String> {
    AlgorithmConfig::parse(spec).map_err(|e| e.to_string())
}

/// Names of [`LateAck`] values (`late_ack`).
pub const LATE_ACKS: &[(&str, LateAck)] = &[("sample", LateAck::Sample), ("ignore", LateAck::Ignore)];
/// Names of [`AckRtt`] values (`ack_rtt`).
pub const ACK_RTTS: &[(&str, AckRtt)] = &[("copy", AckRtt::FromCopy), ("original", AckRtt::FromOriginal)];
/// Names of [`RetransmitTimer`] values (`retransmit_timer`).
pub const RETRANSMIT_TIMERS: &[(&str, RetransmitTimer)] =
    &[("estimate", RetransmitTimer::Estimate), ("algorithm", RetransmitTimer::Algorithm)];

/// The name of `v` in `table` (the inverse of [`choice`]).
fn name_of<T: Copy + PartialEq>(table: &[(&'static str, T)], v: T) -> &'static str {
    table.iter().find(|(_, t)| *t == v).map_or("?", |(n, _)| *n)
}

fn choice<T: Copy>(key: &str, v: Option<&str>, table: &[(&str, T)], default: T) -> Result<T, String> {
    match v {
        None => Ok(default),
        Some(x) => table.iter().find(|(n, _)| *n == x).map(|(_, t)| *t).ok_or_else(|| {
            let valid: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
            format!("{key}: unknown value {x:?} (valid: {})", valid.join(", "))
        }),
    }
}

/// The reliability layer's options from their names (`late_ack`, `ack_rtt`,
/// `retransmit_timer`); a missing one takes its value in `defaults` (the thesis's simulator:
/// [`ReliabilityOptions::MAKAREM2021_RTO_ONLY`] for the RTT scenarios,
/// [`ReliabilityOptions::MAKAREM2021`] for the residual bandwidth).
pub fn reliability_options(
    late_ack: Option<&str>,
    ack_rtt: Option<&str>,
    retransmit_timer: Option<&str>,
    defaults: ReliabilityOptions,
) -> Result<ReliabilityOptions, String> {
    let d = defaults;
    Ok(ReliabilityOptions {
        late_ack: choice("late_ack", late_ack, LATE_ACKS, d.late_ack)?,
        ack_rtt: choice("ack_rtt", ack_rtt, ACK_RTTS, d.ack_rtt)?,
        retransmit_timer: choice("retransmit_timer", retransmit_timer, RETRANSMIT_TIMERS, d.retransmit_timer)?,
    })
}

/// A request for the RTT-scenario study (the input of [`rtt_scenarios_json`]).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RttStudyRequest {
    /// Algorithm specs (at least one).
    pub cc: Vec<String>,
    /// Scenario ids; empty = all 40 (5 and 6 only when `trace` is given).
    pub scenarios: Vec<u32>,
    /// Master seed (default 0).
    pub seed: u64,
    /// Values per scenario (default 100 000).
    pub len: Option<usize>,
    /// RTT trace (ms per value) used for the real-trace scenarios 5 and 6.
    pub trace: Option<Vec<f64>>,
    /// Label of the trace (e.g. its file name), reported with scenarios 5 and 6.
    pub trace_label: Option<String>,
    /// `table` (default) or `text`.
    pub scenario33: Option<String>,
    /// Non-positive draws: `resample` (default) or `clip`.
    pub rtt_floor: Option<String>,
    /// An ACK after a give-up: `sample` (default, the thesis's simulator) or `ignore` (RFC 7252).
    pub late_ack: Option<String>,
    /// An ACK's RTT: from the `copy` it answers (default, the thesis's simulator) or from the
    /// `original` transmission.
    pub ack_rtt: Option<String>,
    /// Scenario values: `per-message` (default, M-AMBIG-19) or `per-transmission`.
    pub rtt_consumption: Option<String>,
    /// The timer every copy waits: the algorithm's undithered RTO `estimate` (default: the
    /// thesis's "RTO-only" runs) or the `algorithm`'s own (dithering, backoff).
    pub retransmit_timer: Option<String>,
}

/// One (scenario, algorithm) result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RttRow {
    /// Scenario id.
    pub scenario: u32,
    /// The algorithm, as given.
    pub cc: String,
    /// The algorithm, canonical form (every parameter).
    pub cc_resolved: String,
    /// Spurious retransmissions.
    pub spurious: u64,
    /// Messages with at least one spurious retransmission.
    pub spurious_messages: u64,
    /// ACKs taken after their message was given up.
    pub late_acks: u64,
    /// RMSE(RTO, RTT), ms.
    pub rmse_ms: f64,
    /// Transmissions.
    pub transmissions: u64,
    /// Messages (scenario values).
    pub messages: u64,
    /// Messages given up (every retransmission fired before the ACK).
    pub gave_up: u64,
    /// Mean RTO at the original transmission, ms.
    pub mean_rto_ms: f64,
    /// Mean RTT, ms.
    pub mean_rtt_ms: f64,
    /// For the real-trace scenarios: the trace used (a substitute for the thesis's
    /// unpublished traces).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
}

impl RttStudyRequest {
    /// The request as JSON (the input of [`rtt_scenarios_json`] and [`rtt_trace_json`]).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::json!({
            "cc": self.cc,
            "scenarios": self.scenarios,
            "seed": self.seed,
            "len": self.len,
            "trace": self.trace,
            "trace_label": self.trace_label,
            "scenario33": self.scenario33,
            "rtt_floor": self.rtt_floor,
            "late_ack": self.late_ack,
            "ack_rtt": self.ack_rtt,
            "rtt_consumption": self.rtt_consumption,
            "retransmit_timer": self.retransmit_timer,
        })
    }

    fn options(&self) -> Result<ScenarioOptions, String> {
        let mut o = ScenarioOptions::default();
        if let Some(n) = self.len {
            if n == 0 || n > 100_000_000 {
                return Err(format!("len must be in 1..=100000000, got {n}"));
            }
            o.len = n;
        }
        o.scenario33 = match self.scenario33.as_deref() {
            None | Some("table") => Scenario33::Table,
            Some("text") => Scenario33::Text,
            Some(x) => return Err(format!("scenario33: unknown value {x:?} (valid: table, text)")),
        };
        o.floor = match self.rtt_floor.as_deref() {
            None | Some("resample") => Floor::Resample,
            Some("clip") => Floor::Clip,
            Some(x) => return Err(format!("rtt_floor: unknown value {x:?} (valid: resample, clip)")),
        };
        Ok(o)
    }

    /// How the scenarios are replayed (the thesis's simulator unless a field says otherwise).
    pub fn replay_options(&self) -> Result<ReplayOptions, String> {
        Ok(ReplayOptions {
            reliability: reliability_options(
                self.late_ack.as_deref(),
                self.ack_rtt.as_deref(),
                self.retransmit_timer.as_deref(),
                ReliabilityOptions::MAKAREM2021_RTO_ONLY,
            )?,
            consumption: choice(
                "rtt_consumption",
                self.rtt_consumption.as_deref(),
                rtt::RTT_CONSUMPTIONS,
                RttConsumption::PerMessage,
            )?,
        })
    }

    /// The scenario ids to run: the requested ones, or all (5 and 6 only with a trace).
    pub fn scenario_ids(&self) -> Vec<u32> {
        if self.scenarios.is_empty() {
            (1..=40).filter(|&id| self.trace.is_some() || !matches!(id, 5 | 6)).collect()
        } else {
            self.scenarios.clone()
        }
    }

    /// Run the study.
    pub fn run(&self) -> Result<Vec<RttRow>, String> {
        if self.cc.is_empty() {
            return Err("give at least one algorithm (--cc SPEC)".into());
        }
        let ccs: Vec<AlgorithmConfig> = self.cc.iter().map(|s| parse_cc(s)).collect::<Result<_, _>>()?;
        let opts = self.options()?;
        let replay = self.replay_options()?;
        let mut rows = Vec::new();
        for id in self.scenario_ids() {
            let rtts = scenarios::generate(id, self.seed, &opts, self.trace.as_deref()).map_err(|e| e.to_string())?;
            let trace = matches!(id, 5 | 6).then(|| self.trace_label.clone().unwrap_or_else(|| "trace".into()));
            for (spec, cfg) in self.cc.iter().zip(&ccs) {
                let o = rtt::replay(cfg, &rtts, self.seed, &replay, None);
                rows.push(RttRow {
                    scenario: id,
                    cc: spec.clone(),
                    cc_resolved: cfg.to_string(),
                    spurious: o.spurious,
                    spurious_messages: o.spurious_messages,
                    late_acks: o.late_acks,
                    rmse_ms: o.rmse_ms,
                    transmissions: o.transmissions,
                    messages: o.messages,
                    gave_up: o.gave_up,
                    mean_rto_ms: o.mean_rto_ms,
                    mean_rtt_ms: o.mean_rtt_ms,
                    trace: trace.clone(),
                });
            }
        }
        Ok(rows)
    }
}

/// The RTT-scenario study from a JSON [`RttStudyRequest`]; returns a JSON list of [`RttRow`].
pub fn rtt_scenarios_json(request: &str) -> Result<String, String> {
    let req: RttStudyRequest = serde_json::from_str(request).map_err(|e| format!("invalid request: {e}"))?;
    serde_json::to_string(&req.run()?).map_err(|e| e.to_string())
}

/// Per-message RTO and RTT of one scenario through one algorithm (JSON list of [`RttPoint`]),
/// for RTO-vs-RTT plots. `request` is an [`RttStudyRequest`] with exactly one `cc` and one
/// scenario; `first` and `count` select the messages returned.
pub fn rtt_trace_json(request: &str, first: usize, count: usize) -> Result<String, String> {
    let req: RttStudyRequest = serde_json::from_str(request).map_err(|e| format!("invalid request: {e}"))?;
    let (Some(cc), Some(&id), 1, 1) = (req.cc.first(), req.scenarios.first(), req.cc.len(), req.scenarios.len()) else {
        return Err("a trace needs exactly one algorithm and one scenario".into());
    };
    let cfg = parse_cc(cc)?;
    let rtts = scenarios::generate(id, req.seed, &req.options()?, req.trace.as_deref()).map_err(|e| e.to_string())?;
    let mut pts = Vec::new();
    rtt::replay(&cfg, &rtts, req.seed, &req.replay_options()?, Some(&mut pts));
    let end = first.saturating_add(count).min(pts.len());
    let start = first.min(end);
    serde_json::to_string(&pts[start..end]).map_err(|e| e.to_string())
}

/// A request for one residual-bandwidth run (the input of [`resbw_json`]); distributions in
/// their textual form (`uniform:A,B`, `normal:M,SD`, `fixed:V`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ResBwRequest {
    /// Algorithm spec.
    pub cc: String,
    /// Bad-period residual bandwidth, packets/s.
    pub resbw: String,
    /// Good-period residual bandwidth, packets/s (optional).
    pub good: Option<String>,
    /// Mean good period, s.
    pub good_mean_s: f64,
    /// Mean bad period, s.
    pub bad_mean_s: f64,
    /// RTT, ms.
    pub rtt_ms: String,
    /// Simulated time, s.
    pub duration_s: f64,
    /// Seed.
    pub seed: u64,
    /// Return every transmission too (`trace` key).
    pub trace: bool,
    /// An ACK after a give-up: `sample` (default, the thesis's simulator) or `ignore`.
    pub late_ack: Option<String>,
    /// An ACK's RTT: from the `copy` it answers (default) or from the `original`.
    pub ack_rtt: Option<String>,
    /// The timer every copy waits: the `algorithm`'s (default) or its undithered `estimate`.
    pub retransmit_timer: Option<String>,
    /// When the RTT is drawn: `per-transmission` (default) or `per-period`.
    pub rtt_draw: Option<String>,
    /// The bandwidth loss rule: `delivered` (default), `rate-check` or `token-bucket`.
    pub loss_rule: Option<String>,
}

impl Default for ResBwRequest {
    fn default() -> Self {
        let d = ResBwConfig::default();
        ResBwRequest {
            cc: "default".into(),
            resbw: d.resbw.to_string(),
            good: None,
            good_mean_s: d.good_mean_s,
            bad_mean_s: d.bad_mean_s,
            rtt_ms: d.rtt_ms.to_string(),
            duration_s: d.duration_s,
            seed: d.seed,
            trace: false,
            late_ack: None,
            ack_rtt: None,
            retransmit_timer: None,
            rtt_draw: None,
            loss_rule: None,
        }
    }
}

/// The output of [`resbw_json`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResBwReport {
    /// The algorithm, as given.
    pub cc: String,
    /// The algorithm, canonical form (every parameter).
    pub cc_resolved: String,
    /// Seed.
    pub seed: u64,
    /// The named choices the run used (each resolved, defaults included).
    #[serde(flatten)]
    pub choices: ResBwChoices,
    /// The metrics.
    #[serde(flatten)]
    pub outcome: ResBwOutcome,
    /// Every transmission, when requested.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<Vec<resbw::SendPoint>>,
}

/// The named choices of a residual-bandwidth run, by name (part of [`ResBwReport`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResBwChoices {
    /// `late_ack`.
    pub late_ack: &'static str,
    /// `ack_rtt`.
    pub ack_rtt: &'static str,
    /// `retransmit_timer`.
    pub retransmit_timer: &'static str,
    /// `rtt_draw`.
    pub rtt_draw: &'static str,
    /// `loss_rule`.
    pub loss_rule: &'static str,
}

impl ResBwChoices {
    /// The names of `cfg`'s choices.
    pub fn of(cfg: &ResBwConfig) -> Self {
        let r = &cfg.reliability;
        ResBwChoices {
            late_ack: name_of(LATE_ACKS, r.late_ack),
            ack_rtt: name_of(ACK_RTTS, r.ack_rtt),
            retransmit_timer: name_of(RETRANSMIT_TIMERS, r.retransmit_timer),
            rtt_draw: name_of(resbw::RTT_DRAWS, cfg.rtt_draw),
            loss_rule: name_of(resbw::LOSS_RULES, cfg.loss_rule),
        }
    }
}

impl ResBwRequest {
    /// The simulator configuration, validated.
    pub fn config(&self) -> Result<ResBwConfig, String> {
        let dist = |name: &str, s: &str| Dist::parse(s).map_err(|e| format!("{name}: {e}"));
        let cfg = ResBwConfig {
            resbw: dist("resbw", &self.resbw)?,
            good: self.good.as_deref().map(|g| dist("good", g)).transpose()?,
            good_mean_s: self.good_mean_s,
            bad_mean_s: self.bad_mean_s,
            rtt_ms: dist("rtt_ms", &self.rtt_ms)?,
            duration_s: self.duration_s,
            seed: self.seed,
            reliability: reliability_options(
                self.late_ack.as_deref(),
                self.ack_rtt.as_deref(),
                self.retransmit_timer.as_deref(),
                ReliabilityOptions::MAKAREM2021,
            )?,
            rtt_draw: choice("rtt_draw", self.rtt_draw.as_deref(), resbw::RTT_DRAWS, resbw::RttDraw::PerTransmission)?,
            loss_rule: choice("loss_rule", self.loss_rule.as_deref(), resbw::LOSS_RULES, LossRule::Delivered)?,
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// Run it.
    pub fn run(&self) -> Result<ResBwReport, String> {
        let cc = parse_cc(&self.cc)?;
        let cfg = self.config()?;
        let mut tr = Vec::new();
        let outcome = resbw::run(&cc, &cfg, self.trace.then_some(&mut tr));
        Ok(ResBwReport {
            cc: self.cc.clone(),
            cc_resolved: cc.to_string(),
            seed: self.seed,
            choices: ResBwChoices::of(&cfg),
            outcome,
            trace: self.trace.then_some(tr),
        })
    }
}

/// One residual-bandwidth run from a JSON [`ResBwRequest`]; returns a JSON [`ResBwReport`].
pub fn resbw_json(request: &str) -> Result<String, String> {
    let req: ResBwRequest = serde_json::from_str(request).map_err(|e| format!("invalid request: {e}"))?;
    serde_json::to_string(&req.run()?).map_err(|e| e.to_string())
}
