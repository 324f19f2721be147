//! The link model's configuration schema as data: named error profiles with their derived
//! parameters, the formulas that turn a profile into a chain, the textual error-model forms,
//! the testbed's defaults and the default chains. The Python front end reads this (through
//! `coapcc._native.link_schema_json()`) instead of keeping its own copy.

use serde::Serialize;

use crate::{
    ErrorClock, LinkConfig, LinkSpec, LossModel, Profile, ProfileKind, DEFAULT_BURST_PACKETS, PROFILES,
    PROFILE_BURST_MEAN_S, STREAM_DOWNLINK, STREAM_UPLINK,
};

/// Version of the schema's shape; bumped when a field changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 1;

/// One named profile with what it resolves to.
#[derive(Clone, Debug, Serialize)]
pub struct ProfileSchema {
    /// The profile's published parameters.
    #[serde(flatten)]
    pub profile: Profile,
    /// Long-run share of the burst state, π_B (0 without a chain).
    pub burst_share: f64,
    /// Long-run loss probability.
    pub mean_loss: f64,
    /// The loss model with the time clock (the default).
    pub model_time_clock: LossModel,
    /// The loss model with the packet clock and the default burst length.
    pub model_packet_clock: LossModel,
}

/// One textual error-model form accepted by [`LossModel::parse`].
#[derive(Clone, Debug, Serialize)]
pub struct ErrorFormSchema {
    /// The form, e.g. `ge:P,R,K,H`.
    pub form: &'static str,
    /// The `model` tag of the [`LossModel`] it gives.
    pub model: &'static str,
    /// What each parameter means.
    pub params: Vec<(&'static str, &'static str)>,
}

/// The whole schema.
#[derive(Clone, Debug, Serialize)]
pub struct LinkSchema {
    /// [`SCHEMA_VERSION`].
    pub version: u32,
    /// The named profiles (`none`, `low`, `medium`, `high`).
    pub profiles: Vec<ProfileSchema>,
    /// The textual error forms.
    pub error_forms: Vec<ErrorFormSchema>,
    /// Valid error clocks, default first.
    pub error_clocks: Vec<ErrorClock>,
    /// Mean burst sojourn of the two-state profiles with the time clock, seconds (inferred).
    pub profile_burst_mean_s: f64,
    /// The sojourns reproduction presets fitted ([`crate::PRESET_FITS`]).
    pub preset_fits: Vec<crate::ProfileFit>,
    /// Default mean burst length with the packet clock, packets (not published).
    pub default_burst_packets: f64,
    /// How a two-state profile becomes a chain, as formulas in the profile's and the options'
    /// names.
    pub formulas: Vec<(&'static str, &'static str)>,
    /// The testbed link's typed parameters with their defaults ([`LinkSpec`]).
    pub spec_defaults: LinkSpec,
    /// The default link (both chains, as a simulator configuration's `link`).
    pub default_link: LinkConfig,
    /// Element kinds of a chain (the keys of a stage object).
    pub stage_kinds: Vec<&'static str>,
    /// Text form of a rate schedule (trace file lines; `;` separates them inline) and its
    /// JSON form (the `schedule` field of a rate stage).
    pub schedule_text_form: &'static str,
    /// See `schedule_text_form`.
    pub schedule_json_form: &'static str,
    /// Random stream bases of the uplink's and the downlink's elements.
    pub stream_uplink: u64,
    /// See `stream_uplink`.
    pub stream_downlink: u64,
}

/// The schema.
pub fn link_schema() -> LinkSchema {
    let profiles = PROFILES
        .iter()
        .map(|p| {
            let time = LossModel::profile(p.name, ErrorClock::Time, DEFAULT_BURST_PACKETS).expect("known profile");
            let packet = LossModel::profile(p.name, ErrorClock::Packet, DEFAULT_BURST_PACKETS).expect("known profile");
            let burst_share = match p.kind {
                ProfileKind::TwoState { loss_low, loss_burst, average } => {
                    (average - loss_low) / (loss_burst - loss_low)
                }
                _ => 0.0,
            };
            ProfileSchema {
                profile: *p,
                burst_share,
                mean_loss: time.mean_loss(),
                model_time_clock: time,
                model_packet_clock: packet,
            }
        })
        .collect();
    let form =
        |form, model, params: &[(&'static str, &'static str)]| ErrorFormSchema { form, model, params: params.to_vec() };
    LinkSchema {
        version: SCHEMA_VERSION,
        profiles,
        error_forms: vec![
            form("none", "none", &[]),
            form("low", "bernoulli", &[]),
            form("medium", "gilbert_elliott_time", &[]),
            form("high", "gilbert_elliott_time", &[]),
            form("bernoulli:P", "bernoulli", &[("P", "loss probability")]),
            form(
                "ge:P,R,K,H",
                "gilbert_elliott",
                &[
                    ("P", "P(low -> burst) per packet"),
                    ("R", "P(burst -> low) per packet"),
                    ("K", "loss probability in the low-error state"),
                    ("H", "loss probability in the burst state"),
                ],
            ),
            form(
                "ge-time:T_L,T_B,K,H",
                "gilbert_elliott_time",
                &[
                    ("T_L", "mean low-error sojourn, s"),
                    ("T_B", "mean burst sojourn, s"),
                    ("K", "loss probability in the low-error state"),
                    ("H", "loss probability in the burst state"),
                ],
            ),
        ],
        error_clocks: vec![ErrorClock::Time, ErrorClock::Packet],
        profile_burst_mean_s: PROFILE_BURST_MEAN_S,
        preset_fits: crate::PRESET_FITS.to_vec(),
        default_burst_packets: DEFAULT_BURST_PACKETS,
        formulas: vec![
            ("pi_b", "(average - loss_low) / (loss_burst - loss_low)"),
            ("time.burst_mean_s", "profile_burst_mean_s, or the preset's fit (preset_fits, clock time)"),
            ("time.low_mean_s", "profile_burst_mean_s * (1 - pi_b) / pi_b"),
            ("packet.r", "1 / burst_packets, or 1 / the preset's fit (preset_fits, clock packet)"),
            ("packet.p", "r * pi_b / (1 - pi_b)"),
        ],
        spec_defaults: LinkSpec::default(),
        default_link: LinkConfig::default(),
        stage_kinds: vec!["rate", "delay", "loss", "jitter"],
        schedule_text_form:
            "TIME_S RATE_BPS [LOSS] per line (whitespace or commas; # comments); inline: lines separated by ;",
        schedule_json_form: "rate.schedule = {\"points\": [{\"at_s\": S, \"bits_per_s\": N, \"loss\": P}, ...]}",
        stream_uplink: STREAM_UPLINK,
        stream_downlink: STREAM_DOWNLINK,
    }
}

/// [`link_schema`] as JSON text.
pub fn link_schema_json() -> String {
    serde_json::to_string(&link_schema()).expect("the schema serialises")
}

/// The [`LinkConfig`] (JSON) of a [`LinkSpec`] given as JSON: missing fields take the
/// testbed's defaults, unknown fields and invalid values are one-line errors.
pub fn link_config_json(spec_json: &str) -> Result<String, String> {
    let spec: LinkSpec = serde_json::from_str(spec_json).map_err(|e| format!("link spec: {e}"))?;
    let link = spec.build()?;
    serde_json::to_string(&link).map_err(|e| e.to_string())
}

/// The [`LossModel`] (JSON) of an error-model text with the given clock and burst length:
/// what `--errors` resolves to, or a one-line error.
pub fn loss_model_json(errors: &str, clock: &str, burst_packets: f64) -> Result<String, String> {
    let spec = LinkSpec { errors: errors.into(), error_clock: clock.parse()?, burst_packets, ..LinkSpec::default() };
    let m = spec.loss_model()?;
    serde_json::to_string(&m).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn schema_describes_the_profiles_the_code_builds() {
        let v: Value = serde_json::from_str(&link_schema_json()).unwrap();
        assert_eq!(v["version"], 1);
        let names: Vec<&str> = v["profiles"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["none", "low", "medium", "high"]);
        let high = &v["profiles"][3];
        assert_eq!(high["kind"], "two_state");
        assert_eq!(high["loss_burst"], 0.8);
        assert!((high["burst_share"].as_f64().unwrap() - 0.16 / 0.78).abs() < 1e-15);
        assert!((high["mean_loss"].as_f64().unwrap() - 0.18).abs() < 1e-12);
        assert_eq!(high["model_time_clock"]["model"], "gilbert_elliott_time");
        assert_eq!(high["model_time_clock"]["low_mean_s"], 3.875);
        assert_eq!(v["profiles"][1]["p"], 0.02);
        assert_eq!(v["spec_defaults"]["buffer_bytes"], 28_200);
        assert_eq!(v["default_link"], serde_json::to_value(LinkConfig::default()).unwrap());
        // The formulas, evaluated by hand, give the code's numbers.
        let m = LossModel::profile("medium", ErrorClock::Packet, 5.0).unwrap();
        let pi_b: f64 = (0.10 - 0.0) / (0.5 - 0.0);
        let r = 1.0 / 5.0;
        assert_eq!(m, LossModel::GilbertElliott { p: r * pi_b / (1.0 - pi_b), r, loss_low: 0.0, loss_burst: 0.5 });
    }

    #[test]
    fn json_entry_points() {
        let l = link_config_json(r#"{"buffer_bytes": 2500, "errors": "bernoulli:0.1"}"#).unwrap();
        let l: LinkConfig = serde_json::from_str(&l).unwrap();
        assert_eq!(l.uplink, crate::testbed_uplink(2500, LossModel::Bernoulli { p: 0.1 }));
        assert!(link_config_json(r#"{"errors": "wifi"}"#).unwrap_err().contains("unknown error model"));
        assert!(link_config_json(r#"{"bufer": 1}"#).unwrap_err().contains("unknown field"));
        assert!(link_config_json("[").is_err());
        let m = loss_model_json("high", "packet", 4.0).unwrap();
        let m: LossModel = serde_json::from_str(&m).unwrap();
        assert_eq!(m, LossModel::profile("high", ErrorClock::Packet, 4.0).unwrap());
        assert!(loss_model_json("high", "wall", 4.0).unwrap_err().contains("error clock"));
        assert!(loss_model_json("ge:1,2", "time", 5.0).unwrap_err().contains("ge:P,R,K,H"));
    }
}
