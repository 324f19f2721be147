//! Link configuration as data: both chains and the MTU ([`LinkConfig`]), the testbed link from
//! typed parameters ([`LinkSpec`]), and the command-line overrides ([`LinkOverrides`]).
//! Every function here returns a one-line error for bad input; none panics.

use serde::{Deserialize, Serialize};

use crate::{
    testbed_downlink, testbed_uplink, validate_chain, DelayConfig, ErrorClock, JitterConfig, LossModel, RateConfig,
    RateSchedule, StageConfig, TESTBED_MTU,
};

/// Default bottleneck buffer, bytes, both directions: 28 200 B (one of the published sizes,
/// spec §1.3; no source fixes a default).
pub const DEFAULT_BUFFER_BYTES: u64 = 28_200;

/// Default mean burst length, packets, of the `medium`/`high` profiles with the packet clock
/// (not published; see [`LossModel::profile`]).
pub const DEFAULT_BURST_PACKETS: f64 = 5.0;

/// The link: each direction is a chain of elements (see the crate documentation). This is
/// the `link` object of a simulator configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LinkConfig {
    /// MTU, bytes (default 296). A message larger than this is a configuration error.
    pub mtu_bytes: u32,
    /// Client → server chain. Default: rate 60 kbit/s + 28 200 B buffer → 200 ms → no loss →
    /// rest of path U[10, 20] ms FIFO.
    pub uplink: Vec<StageConfig>,
    /// Server → client chain. Default: rest of path U[10, 20] ms FIFO → rate 30 kbit/s +
    /// 28 200 B buffer → 400 ms → no loss.
    pub downlink: Vec<StageConfig>,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            mtu_bytes: TESTBED_MTU,
            uplink: testbed_uplink(DEFAULT_BUFFER_BYTES, LossModel::None),
            downlink: testbed_downlink(DEFAULT_BUFFER_BYTES, LossModel::None),
        }
    }
}

impl LinkConfig {
    fn stages_mut(&mut self) -> impl Iterator<Item = &mut StageConfig> {
        self.uplink.iter_mut().chain(self.downlink.iter_mut())
    }

    /// Set the buffer of every rate stage (fixed or scheduled) in both directions.
    pub fn set_buffer_bytes(&mut self, bytes: u64) {
        for st in self.stages_mut() {
            if let StageConfig::Rate(r) = st {
                r.buffer_bytes = bytes;
            }
        }
    }

    /// Set the model of every loss stage in both directions (each direction keeps its own,
    /// independent random stream). Returns the number of loss stages changed.
    pub fn set_loss(&mut self, model: &LossModel) -> usize {
        let mut n = 0;
        for st in self.stages_mut() {
            if let StageConfig::Loss(m) = st {
                *m = model.clone();
                n += 1;
            }
        }
        n
    }

    /// Set `per_packet_overhead_bytes` of every rate stage (fixed or scheduled).
    pub fn set_overhead_bytes(&mut self, bytes: u32) {
        for st in self.stages_mut() {
            if let StageConfig::Rate(r) = st {
                r.per_packet_overhead_bytes = bytes;
            }
        }
    }

    /// Set the bounds of every jitter (rest-of-path) element.
    pub fn set_rest_of_path_ms(&mut self, min_ms: f64, max_ms: f64) {
        for st in self.stages_mut() {
            if let StageConfig::Jitter(j) = st {
                j.min_ms = min_ms;
                j.max_ms = max_ms;
            }
        }
    }

    /// Give the first rate stage of the uplink (`uplink = true`) or the downlink a schedule
    /// (its buffer, overhead and initial rate stay). Fails when the chain has no rate stage.
    pub fn set_schedule(&mut self, uplink: bool, schedule: RateSchedule) -> Result<(), String> {
        let chain = if uplink { &mut self.uplink } else { &mut self.downlink };
        for st in chain.iter_mut() {
            if let StageConfig::Rate(r) = st {
                schedule.validate(r.bits_per_s)?;
                r.schedule = Some(schedule);
                return Ok(());
            }
        }
        Err(format!("the {} chain has no rate stage", if uplink { "uplink" } else { "downlink" }))
    }

    /// Check both chains against the MTU (every buffer must hold an MTU-sized packet).
    pub fn validate(&self) -> Result<(), String> {
        if self.mtu_bytes == 0 {
            return Err("mtu_bytes must be positive".into());
        }
        validate_chain(&self.uplink, self.mtu_bytes).map_err(|e| format!("uplink: {e}"))?;
        validate_chain(&self.downlink, self.mtu_bytes).map_err(|e| format!("downlink: {e}"))
    }
}

/// Parse `MIN,MAX` (milliseconds) as given to `--rest-of-path-ms`.
pub fn parse_min_max_ms(s: &str) -> Result<(f64, f64), String> {
    let err = || format!("expected MIN,MAX in ms, got '{s}'");
    let v: Vec<f64> = s.split(',').map(|x| x.trim().parse::<f64>()).collect::<Result<_, _>>().map_err(|_| err())?;
    match v[..] {
        [a, b] => Ok((a, b)),
        _ => Err(err()),
    }
}

/// The link flags shared by `coapcc simulate` and `coapcc emulate`, as plain data (no clap):
/// each given field overrides the corresponding part of a [`LinkConfig`]. The clap struct
/// that fills it is declared by [`link_args!`](crate::link_args) in each command line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkOverrides {
    /// Buffer of every rate stage, bytes.
    pub buffer: Option<u64>,
    /// Error model text ([`LossModel::parse`]) for every loss stage.
    pub errors: Option<String>,
    /// Clock of the `medium`/`high` profiles (needs `errors`).
    pub error_clock: Option<ErrorClock>,
    /// Mean burst length in packets of the profiles with the packet clock (needs `errors`).
    pub burst_packets: Option<f64>,
    /// Rest-of-path bounds `MIN,MAX` in ms.
    pub rest_of_path_ms: Option<String>,
    /// Bytes added per packet by the rate stages.
    pub overhead_bytes: Option<u32>,
    /// Reproduction preset whose fitted error profiles `errors` names (`helsinki2018`: the
    /// fitted burst sojourns of `medium` and `high`); `None`: the inferred ones.
    pub preset: Option<String>,
    /// Rate/loss schedule of the uplink's rate stage: a trace file or inline points
    /// ([`RateSchedule::from_file_or_inline`]).
    pub uplink_schedule: Option<String>,
    /// Same for the downlink.
    pub downlink_schedule: Option<String>,
}

impl LinkOverrides {
    /// Apply the given overrides to `link`. Errors name the flag (`--errors: ...`).
    pub fn apply(&self, link: &mut LinkConfig) -> Result<(), String> {
        for (uplink, spec, flag) in [
            (true, &self.uplink_schedule, "--uplink-schedule"),
            (false, &self.downlink_schedule, "--downlink-schedule"),
        ] {
            if let Some(spec) = spec {
                let s = RateSchedule::from_file_or_inline(spec).map_err(|m| format!("{flag}: {m}"))?;
                link.set_schedule(uplink, s).map_err(|m| format!("{flag}: {m}"))?;
            }
        }
        if let Some(b) = self.buffer {
            link.set_buffer_bytes(b);
        }
        if self.errors.is_none() && (self.error_clock.is_some() || self.burst_packets.is_some()) {
            return Err("--error-clock and --burst-packets apply to a profile given with --errors".into());
        }
        if let Some(e) = &self.errors {
            let burst = self.burst_packets.unwrap_or(DEFAULT_BURST_PACKETS);
            check_burst_packets(burst).map_err(|m| format!("--burst-packets: {m}"))?;
            let clock = self.error_clock.unwrap_or(ErrorClock::Time);
            if self.burst_packets.is_some() {
                fitted_burst(e, self.preset.as_deref(), clock).map_err(|m| format!("--burst-packets: {m}"))?;
            }
            let model =
                LossModel::parse_for(e, self.preset.as_deref(), clock, burst).map_err(|m| format!("--errors: {m}"))?;
            if link.set_loss(&model) == 0 {
                return Err("--errors: the configured link chains have no loss stage".into());
            }
        }
        if let Some(r) = &self.rest_of_path_ms {
            let (a, b) = parse_min_max_ms(r).map_err(|m| format!("--rest-of-path-ms: {m}"))?;
            link.set_rest_of_path_ms(a, b);
        }
        if let Some(o) = self.overhead_bytes {
            link.set_overhead_bytes(o);
        }
        Ok(())
    }
}

/// A burst length given for a profile the preset fitted with the packet clock would be
/// ignored: refuse it with a message instead.
fn fitted_burst(errors: &str, preset: Option<&str>, clock: ErrorClock) -> Result<(), String> {
    match crate::preset_fit(errors.trim(), preset, ErrorClock::Packet) {
        Some(b) if clock == ErrorClock::Packet => Err(format!(
            "the {} preset fits the burst length of '{}' ({b} packets); drop the preset or give the chain as ge:P,R,K,H",
            preset.unwrap_or("").trim(),
            errors.trim()
        )),
        _ => Ok(()),
    }
}

fn check_burst_packets(b: f64) -> Result<(), String> {
    if b.is_finite() && (1.0..=1e12).contains(&b) {
        Ok(())
    } else {
        Err(format!("must be at least 1 packet (got {b})"))
    }
}

/// The testbed link (spec §1) from typed parameters: what the Python front end's link
/// fields describe. [`LinkSpec::build`] gives the [`LinkConfig`]; the defaults are the
/// testbed's, so `LinkSpec::default().build()` is `LinkConfig::default()`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LinkSpec {
    /// MTU, bytes (296).
    pub mtu_bytes: u32,
    /// Buffer of both rate stages, bytes (28 200).
    pub buffer_bytes: u64,
    /// Whether the packet in service counts in the buffer (true, netem-like).
    pub buffer_counts_in_service: bool,
    /// Bytes added per packet by both rate stages (0).
    pub per_packet_overhead_bytes: u32,
    /// Uplink rate, bit/s (60 000).
    pub uplink_rate_bps: u64,
    /// Downlink rate, bit/s (30 000).
    pub downlink_rate_bps: u64,
    /// Uplink propagation delay, ms (200).
    pub uplink_delay_ms: f64,
    /// Downlink propagation delay, ms (400).
    pub downlink_delay_ms: f64,
    /// Rest-of-path lower bound, ms (10).
    pub rest_of_path_min_ms: f64,
    /// Rest-of-path upper bound, ms (20).
    pub rest_of_path_max_ms: f64,
    /// Error model text, both directions ([`LossModel::parse`]; `none`).
    pub errors: String,
    /// Clock of the `medium`/`high` profiles (`time`).
    pub error_clock: ErrorClock,
    /// Mean burst length of the profiles with the packet clock, packets (5).
    pub burst_packets: f64,
    /// Reproduction preset whose fitted error profiles `errors` names (`helsinki2018`); absent:
    /// the inferred ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
}

impl Default for LinkSpec {
    fn default() -> Self {
        LinkSpec {
            mtu_bytes: TESTBED_MTU,
            buffer_bytes: DEFAULT_BUFFER_BYTES,
            buffer_counts_in_service: true,
            per_packet_overhead_bytes: 0,
            uplink_rate_bps: 60_000,
            downlink_rate_bps: 30_000,
            uplink_delay_ms: 200.0,
            downlink_delay_ms: 400.0,
            rest_of_path_min_ms: 10.0,
            rest_of_path_max_ms: 20.0,
            errors: "none".into(),
            error_clock: ErrorClock::Time,
            burst_packets: DEFAULT_BURST_PACKETS,
            preset: None,
        }
    }
}

impl LinkSpec {
    /// The loss model `errors` describes (validated).
    pub fn loss_model(&self) -> Result<LossModel, String> {
        check_burst_packets(self.burst_packets).map_err(|m| format!("burst_packets: {m}"))?;
        if self.burst_packets != DEFAULT_BURST_PACKETS {
            fitted_burst(&self.errors, self.preset.as_deref(), self.error_clock)
                .map_err(|m| format!("burst_packets: {m}"))?;
        }
        LossModel::parse_for(&self.errors, self.preset.as_deref(), self.error_clock, self.burst_packets)
            .map_err(|m| format!("errors: {m}"))
    }

    /// The testbed chains with these parameters, validated against the MTU.
    pub fn build(&self) -> Result<LinkConfig, String> {
        let loss = self.loss_model()?;
        let rate = |bits_per_s| {
            StageConfig::Rate(RateConfig {
                bits_per_s,
                buffer_bytes: self.buffer_bytes,
                buffer_counts_in_service: self.buffer_counts_in_service,
                per_packet_overhead_bytes: self.per_packet_overhead_bytes,
                schedule: None,
            })
        };
        let jitter = StageConfig::Jitter(JitterConfig {
            min_ms: self.rest_of_path_min_ms,
            max_ms: self.rest_of_path_max_ms,
            allow_reordering: false,
        });
        let link = LinkConfig {
            mtu_bytes: self.mtu_bytes,
            uplink: vec![
                rate(self.uplink_rate_bps),
                StageConfig::Delay(DelayConfig { ms: self.uplink_delay_ms }),
                StageConfig::Loss(loss.clone()),
                jitter.clone(),
            ],
            downlink: vec![
                jitter,
                rate(self.downlink_rate_bps),
                StageConfig::Delay(DelayConfig { ms: self.downlink_delay_ms }),
                StageConfig::Loss(loss),
            ],
        };
        link.validate()?;
        Ok(link)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_spec_is_the_default_link() {
        assert_eq!(LinkSpec::default().build().unwrap(), LinkConfig::default());
        let mut spec = LinkSpec { errors: "high".into(), buffer_bytes: 2500, ..LinkSpec::default() };
        let want = LinkConfig {
            mtu_bytes: 296,
            uplink: testbed_uplink(2500, LossModel::profile("high", ErrorClock::Time, 5.0).unwrap()),
            downlink: testbed_downlink(2500, LossModel::profile("high", ErrorClock::Time, 5.0).unwrap()),
        };
        assert_eq!(spec.build().unwrap(), want);
        spec.buffer_bytes = 100;
        assert!(spec.build().unwrap_err().contains("smaller than one packet"));
        spec.buffer_bytes = 2500;
        spec.burst_packets = 0.5;
        assert!(spec.build().unwrap_err().starts_with("burst_packets"));
        let e: Result<LinkSpec, _> = serde_json::from_str(r#"{"buffer": 1}"#);
        assert!(e.unwrap_err().to_string().contains("unknown field"));
    }

    #[test]
    fn a_preset_selects_its_fitted_error_profiles() {
        use crate::{
            HELSINKI2018_HIGH_BURST_PACKETS, HELSINKI2018_HIGH_BURST_S, HELSINKI2018_MEDIUM_BURST_PACKETS,
            HELSINKI2018_MEDIUM_BURST_S,
        };
        let fitted = |errors: &str, clock: ErrorClock| {
            let spec = LinkSpec {
                errors: errors.into(),
                preset: Some("helsinki2018".into()),
                error_clock: clock,
                ..LinkSpec::default()
            };
            spec.loss_model().unwrap()
        };
        for (name, t_b, b, pi_b) in [
            ("medium", HELSINKI2018_MEDIUM_BURST_S, HELSINKI2018_MEDIUM_BURST_PACKETS, 0.2),
            ("high", HELSINKI2018_HIGH_BURST_S, HELSINKI2018_HIGH_BURST_PACKETS, 0.16 / 0.78),
        ] {
            match fitted(name, ErrorClock::Time) {
                LossModel::GilbertElliottTime { low_mean_s, burst_mean_s, .. } => {
                    assert_eq!(burst_mean_s, t_b, "{name}");
                    assert!((low_mean_s - t_b * (1.0 - pi_b) / pi_b).abs() < 1e-12, "{name}");
                }
                m => panic!("{name}: {m:?}"),
            }
            match fitted(name, ErrorClock::Packet) {
                LossModel::GilbertElliott { p, r, .. } => {
                    assert_eq!(r, 1.0 / b, "{name}");
                    assert!((p - r * pi_b / (1.0 - pi_b)).abs() < 1e-12, "{name}");
                }
                m => panic!("{name}: {m:?}"),
            }
            // The published averages hold whatever the sojourn.
            for clock in [ErrorClock::Time, ErrorClock::Packet] {
                let plain = LossModel::profile(name, clock, 5.0).unwrap();
                assert!((fitted(name, clock).mean_loss() - plain.mean_loss()).abs() < 1e-12);
            }
        }
        // Other presets, no preset and the other profiles: as before.
        let plain = LinkSpec { errors: "medium".into(), ..LinkSpec::default() }.loss_model().unwrap();
        assert_eq!(plain, LossModel::profile("medium", ErrorClock::Time, 5.0).unwrap());
        let other = LinkSpec { errors: "medium".into(), preset: Some("rfc7252".into()), ..LinkSpec::default() };
        assert_eq!(other.loss_model().unwrap(), plain);
        assert_eq!(fitted("low", ErrorClock::Packet), LossModel::Bernoulli { p: 0.02 });
        let bad = LinkSpec { errors: "medium".into(), preset: Some("nope".into()), ..LinkSpec::default() };
        assert!(bad.loss_model().unwrap_err().contains("unknown preset 'nope'"));
        // A burst length for a fitted profile is refused, not ignored.
        let both = LinkSpec {
            errors: "high".into(),
            preset: Some("helsinki2018".into()),
            error_clock: ErrorClock::Packet,
            burst_packets: 3.0,
            ..LinkSpec::default()
        };
        assert!(both.loss_model().unwrap_err().contains("fits the burst length of 'high'"));
        let mut l = LinkConfig::default();
        let o =
            LinkOverrides { errors: Some("high".into()), preset: Some("helsinki2018".into()), ..Default::default() };
        o.apply(&mut l).unwrap();
        assert_eq!(l.uplink[2], StageConfig::Loss(fitted("high", ErrorClock::Time)));
        let o = LinkOverrides { burst_packets: Some(2.0), error_clock: Some(ErrorClock::Packet), ..o };
        assert!(o.apply(&mut l).unwrap_err().starts_with("--burst-packets: the helsinki2018 preset fits"));
        // The preset is left out of the JSON when absent (the default spec is unchanged).
        assert!(!serde_json::to_string(&LinkSpec::default()).unwrap().contains("preset"));
    }

    #[test]
    fn overrides_apply_and_name_the_flag() {
        let mut l = LinkConfig::default();
        let o = LinkOverrides {
            buffer: Some(2500),
            errors: Some("medium".into()),
            error_clock: Some(ErrorClock::Packet),
            burst_packets: Some(4.0),
            rest_of_path_ms: Some("5, 6".into()),
            overhead_bytes: Some(14),
            ..Default::default()
        };
        o.apply(&mut l).unwrap();
        let m = LossModel::profile("medium", ErrorClock::Packet, 4.0).unwrap();
        let spec = LinkSpec {
            buffer_bytes: 2500,
            per_packet_overhead_bytes: 14,
            rest_of_path_min_ms: 5.0,
            rest_of_path_max_ms: 6.0,
            ..LinkSpec::default()
        };
        let mut want = spec.build().unwrap();
        want.set_loss(&m);
        assert_eq!(l, want);
        let bad = |o: LinkOverrides| o.apply(&mut LinkConfig::default()).unwrap_err();
        assert!(bad(LinkOverrides { error_clock: Some(ErrorClock::Packet), ..Default::default() })
            .contains("apply to a profile"));
        assert!(bad(LinkOverrides { errors: Some("wifi".into()), ..Default::default() }).starts_with("--errors:"));
        let e = bad(LinkOverrides { errors: Some("high".into()), burst_packets: Some(f64::NAN), ..Default::default() });
        assert!(e.starts_with("--burst-packets:"), "{e}");
        assert!(bad(LinkOverrides { rest_of_path_ms: Some("1".into()), ..Default::default() })
            .starts_with("--rest-of-path-ms:"));
        let mut no_loss = LinkConfig { uplink: vec![], downlink: vec![], mtu_bytes: 296 };
        assert!(LinkOverrides { errors: Some("low".into()), ..Default::default() }
            .apply(&mut no_loss)
            .unwrap_err()
            .contains("no loss stage"));
    }
}
