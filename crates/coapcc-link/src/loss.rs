//! Wireless loss processes (testbed spec §1.4, §1.5 "loss-model convention").
//!
//! # Convention
//!
//! Parameters are named by **loss** probability: `loss_low` is the probability that a packet
//! is lost while the chain is in the low-error ("good") state, `loss_burst` in the burst
//! ("bad") state. Transitions are `p` = P(low → burst) and `r` = P(burst → low) per packet
//! (packet clock), or mean exponential sojourns `low_mean_s` / `burst_mean_s` (time clock).
//!
//! For every packet the chain is **stepped first** (packet clock: one Bernoulli transition
//! draw; time clock: advanced to the packet's time), **then** the loss is drawn with the loss
//! probability of the state it is now in. All draws come from the stage's own random stream,
//! transition first.
//!
//! The time-clocked chain is advanced lazily: while the packet's time is inside the current
//! sojourn nothing is drawn; once the sojourn has ended, the state at the packet's time is
//! drawn from the chain's closed-form transition probability and a fresh exponential sojourn
//! starts (exact by the Markov property and memorylessness, and O(1) per packet whatever the
//! sojourn means).
//!
//! The initial state is drawn from the stationary distribution (π_B = p/(p+r), or
//! `burst_mean/(burst_mean+low_mean)`), so the stationary loss rate applies from the first
//! packet on.
//!
//! # netem conversion
//!
//! Classic Gilbert–Elliott literature and netem use *success* probabilities `k` (good state)
//! and `h` (bad state). netem's command line takes `loss gemodel p r 1-h 1-k` in percent, i.e.
//! in our names `loss gemodel 100·p% 100·r% 100·loss_burst% 100·loss_low%`. netem draws the
//! loss with the state the packet found *before* the transition of the same packet; its chain
//! is ours shifted by one packet (same stationary loss rate and burst-length distribution).
//! netem has no time-clocked chain; [`LossModel::GilbertElliottTime`] has no netem equivalent.

use coapcc_cc::{Entropy, SplitMix64};
use serde::{Deserialize, Serialize};

use crate::Nanos;

/// A loss process (one per loss stage, i.e. per direction in the testbed chain).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case", deny_unknown_fields)]
pub enum LossModel {
    /// No link errors (all loss is congestion).
    None,
    /// Each packet lost independently with probability `p`.
    Bernoulli {
        /// Loss probability.
        p: f64,
    },
    /// Two-state chain stepped once per packet (`error_clock = packet`).
    GilbertElliott {
        /// P(low → burst) per packet.
        p: f64,
        /// P(burst → low) per packet; the mean burst length is 1/r packets.
        r: f64,
        /// Loss probability in the low-error state.
        loss_low: f64,
        /// Loss probability in the burst state.
        loss_burst: f64,
    },
    /// Two-state continuous-time chain with exponential sojourns (`error_clock = time`),
    /// the inferred model of the testbed profiles (AMBIG-T3).
    GilbertElliottTime {
        /// Mean sojourn in the low-error state, seconds (T_L).
        low_mean_s: f64,
        /// Mean sojourn in the burst state, seconds (T_B).
        burst_mean_s: f64,
        /// Loss probability in the low-error state.
        loss_low: f64,
        /// Loss probability in the burst state.
        loss_burst: f64,
    },
}

/// Which clock drives a two-state error chain (AMBIG-T3 `error_clock`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClock {
    /// Exponential sojourns in simulated time (default).
    Time,
    /// One transition draw per packet.
    Packet,
}

impl std::str::FromStr for ErrorClock {
    type Err = String;

    /// `time` or `packet`.
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "time" => Ok(ErrorClock::Time),
            "packet" => Ok(ErrorClock::Packet),
            o => Err(format!("unknown error clock '{o}', expected one of time, packet")),
        }
    }
}

/// Mean burst sojourn of the testbed profiles, seconds (**inferred**, no source: spec §1.4).
/// A reproduction preset may fit its own ([`PRESET_FITS`]).
pub const PROFILE_BURST_MEAN_S: f64 = 1.0;

/// A two-state profile's unpublished sojourn, fitted by a reproduction preset: with the time
/// clock the mean burst sojourn T_B in seconds, with the packet clock the mean burst length in
/// packets (T_L, or p, follows from it and the published average).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ProfileFit {
    /// The preset.
    pub preset: &'static str,
    /// The profile (`medium`, `high`).
    pub profile: &'static str,
    /// The clock the value is for.
    pub clock: ErrorClock,
    /// T_B in seconds (time clock) or the mean burst length in packets (packet clock).
    pub value: f64,
}

/// The fitted sojourns. `helsinki2018`: fitted to the Default-CoAP-over-UDP column of the
/// Helsinki CoAP-over-TCP thesis (its Tables 9, 10, 12 and 13: one 102 400-byte Block2
/// transfer, 2 500 B buffer, 1 and 4 clients) by `scripts/fit-errors`
/// (`coapcc.studies.error_fit`; docs/tcp.md gives the procedure, the residuals and the check
/// on the other columns). The packet clock is netem's (`loss gemodel` steps its chain once per
/// packet, `sch_netem.c`), the one the study's emulator used; the time clock's fit is kept for
/// runs that choose it.
pub const PRESET_FITS: &[ProfileFit] = &[
    ProfileFit {
        preset: "helsinki2018",
        profile: "medium",
        clock: ErrorClock::Packet,
        value: HELSINKI2018_MEDIUM_BURST_PACKETS,
    },
    ProfileFit {
        preset: "helsinki2018",
        profile: "high",
        clock: ErrorClock::Packet,
        value: HELSINKI2018_HIGH_BURST_PACKETS,
    },
    ProfileFit {
        preset: "helsinki2018",
        profile: "medium",
        clock: ErrorClock::Time,
        value: HELSINKI2018_MEDIUM_BURST_S,
    },
    ProfileFit { preset: "helsinki2018", profile: "high", clock: ErrorClock::Time, value: HELSINKI2018_HIGH_BURST_S },
];

/// `helsinki2018`'s fitted mean burst length of the `medium` profile with the packet clock.
pub const HELSINKI2018_MEDIUM_BURST_PACKETS: f64 = 1.414;
/// `helsinki2018`'s fitted mean burst length of the `high` profile with the packet clock.
pub const HELSINKI2018_HIGH_BURST_PACKETS: f64 = 1.419;
/// `helsinki2018`'s fitted mean burst sojourn of the `medium` profile with the time clock, s.
pub const HELSINKI2018_MEDIUM_BURST_S: f64 = 0.164;
/// `helsinki2018`'s fitted mean burst sojourn of the `high` profile with the time clock, s.
pub const HELSINKI2018_HIGH_BURST_S: f64 = 0.083;

/// The sojourn `preset` fitted for two-state profile `name` with `clock`, if any.
pub fn preset_fit(name: &str, preset: Option<&str>, clock: ErrorClock) -> Option<f64> {
    let p = preset?.trim();
    PRESET_FITS
        .iter()
        .find(|f| f.preset.eq_ignore_ascii_case(p) && f.profile == name && f.clock == clock)
        .map(|f| f.value)
}

/// The mean burst sojourn (time clock) of two-state profile `name` under `preset`: the
/// preset's fitted value, else the inferred [`PROFILE_BURST_MEAN_S`].
pub fn profile_burst_mean_s(name: &str, preset: Option<&str>) -> f64 {
    preset_fit(name, preset, ErrorClock::Time).unwrap_or(PROFILE_BURST_MEAN_S)
}

/// Check a preset name given for the error profiles: a reproduction preset of the registry.
pub fn check_preset(preset: &str) -> Result<(), String> {
    if coapcc_cc::Preset::parse(preset).is_some() {
        Ok(())
    } else {
        let valid: Vec<&str> = coapcc_cc::Preset::ALL.iter().map(|(n, _)| *n).collect();
        let hint = coapcc_cc::names::hint(preset, valid.iter().copied());
        Err(format!("unknown preset '{preset}'{hint}; valid: {}", valid.join(", ")))
    }
}

/// What a named error profile is.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProfileKind {
    /// No link errors.
    None,
    /// Independent losses.
    Bernoulli {
        /// Loss probability.
        p: f64,
    },
    /// Two-state chain given by its published state loss rates and average; the burst share
    /// is derived, the clock and sojourns are inferred (see [`LossModel::profile`]).
    TwoState {
        /// Loss probability in the low-error state.
        loss_low: f64,
        /// Loss probability in the burst state.
        loss_burst: f64,
        /// Published average loss rate.
        average: f64,
    },
}

/// A named error profile of the testbed (spec §1.4).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Profile {
    /// Name as accepted by [`LossModel::parse`].
    pub name: &'static str,
    /// Parameters.
    #[serde(flatten)]
    pub kind: ProfileKind,
}

/// The named error profiles: `none`, `low` (Bernoulli 2 %), `medium` (0 % / 50 %, average
/// 10 %), `high` (2 % / 80 %, average 18 %).
pub const PROFILES: [Profile; 4] = [
    Profile { name: "none", kind: ProfileKind::None },
    Profile { name: "low", kind: ProfileKind::Bernoulli { p: 0.02 } },
    Profile { name: "medium", kind: ProfileKind::TwoState { loss_low: 0.0, loss_burst: 0.5, average: 0.10 } },
    Profile { name: "high", kind: ProfileKind::TwoState { loss_low: 0.02, loss_burst: 0.8, average: 0.18 } },
];

impl LossModel {
    /// A named error profile of the testbed (spec §1.4): `none`, `low` (Bernoulli 2 %),
    /// `medium` (0 % / 50 %, average 10 %), `high` (2 % / 80 %, average 18 %).
    ///
    /// The burst share π_B is derived from the published averages; the clock, T_B = 1 s and
    /// T_L = T_B(1 − π_B)/π_B (4 s medium, 3.875 s high) are **inferred**. With
    /// `ErrorClock::Packet` the chain has mean burst `burst_packets` packets
    /// (r = 1/burst_packets, p = r·π_B/(1 − π_B)); that length is not published either.
    pub fn profile(name: &str, clock: ErrorClock, burst_packets: f64) -> Option<LossModel> {
        LossModel::profile_for(name, None, clock, burst_packets)
    }

    /// [`LossModel::profile`] under a reproduction preset: a two-state profile the preset
    /// fitted for `clock` takes the fitted sojourn ([`PRESET_FITS`]: T_B for the time clock,
    /// the burst length, instead of `burst_packets`, for the packet clock).
    pub fn profile_for(name: &str, preset: Option<&str>, clock: ErrorClock, burst_packets: f64) -> Option<LossModel> {
        let p = PROFILES.iter().find(|p| p.name == name)?;
        let (low, burst, avg) = match p.kind {
            ProfileKind::None => return Some(LossModel::None),
            ProfileKind::Bernoulli { p } => return Some(LossModel::Bernoulli { p }),
            ProfileKind::TwoState { loss_low, loss_burst, average } => (loss_low, loss_burst, average),
        };
        let pi_b: f64 = (avg - low) / (burst - low);
        let t_b = profile_burst_mean_s(name, preset);
        Some(match clock {
            ErrorClock::Time => LossModel::GilbertElliottTime {
                low_mean_s: t_b * (1.0 - pi_b) / pi_b,
                burst_mean_s: t_b,
                loss_low: low,
                loss_burst: burst,
            },
            ErrorClock::Packet => {
                let r = 1.0 / preset_fit(name, preset, ErrorClock::Packet).unwrap_or(burst_packets);
                LossModel::GilbertElliott { p: r * pi_b / (1.0 - pi_b), r, loss_low: low, loss_burst: burst }
            }
        })
    }

    /// Parse the textual form used by the CLI:
    /// `none | low | medium | high | bernoulli:P | ge:P,R,K,H | ge-time:T_L,T_B,K,H`.
    ///
    /// In `ge:` and `ge-time:`, **K is the loss probability in the low-error state and H the
    /// loss probability in the burst state** (not the classic success probabilities; see the
    /// module documentation for the netem conversion). T_L and T_B are mean sojourns in
    /// seconds. Profiles use `clock` and `burst_packets` as in [`LossModel::profile`].
    pub fn parse(s: &str, clock: ErrorClock, burst_packets: f64) -> Result<LossModel, String> {
        LossModel::parse_for(s, None, clock, burst_packets)
    }

    /// [`LossModel::parse`] under a reproduction preset (its fitted profiles, see
    /// [`LossModel::profile_for`]); an unknown preset is an error.
    pub fn parse_for(
        s: &str,
        preset: Option<&str>,
        clock: ErrorClock,
        burst_packets: f64,
    ) -> Result<LossModel, String> {
        let s = s.trim();
        if let Some(p) = preset {
            check_preset(p)?;
        }
        if let Some(m) = LossModel::profile_for(s, preset, clock, burst_packets) {
            return Ok(m);
        }
        let nums = |rest: &str, n: usize, what: &str| -> Result<Vec<f64>, String> {
            let v: Result<Vec<f64>, _> = rest.split(',').map(|x| x.trim().parse::<f64>()).collect();
            match v {
                Ok(v) if v.len() == n => Ok(v),
                _ => Err(format!("bad error model '{s}': expected {what}")),
            }
        };
        let m = if let Some(rest) = s.strip_prefix("bernoulli:") {
            LossModel::Bernoulli { p: nums(rest, 1, "bernoulli:P")?[0] }
        } else if let Some(rest) = s.strip_prefix("ge:") {
            let v = nums(rest, 4, "ge:P,R,K,H (K, H = loss probabilities in the low and burst states)")?;
            LossModel::GilbertElliott { p: v[0], r: v[1], loss_low: v[2], loss_burst: v[3] }
        } else if let Some(rest) = s.strip_prefix("ge-time:") {
            let v = nums(rest, 4, "ge-time:T_L,T_B,K,H (mean sojourns in s, loss probabilities)")?;
            LossModel::GilbertElliottTime { low_mean_s: v[0], burst_mean_s: v[1], loss_low: v[2], loss_burst: v[3] }
        } else {
            return Err(format!(
                "unknown error model '{s}'; valid: none, low, medium, high, bernoulli:P, ge:P,R,K,H, ge-time:T_L,T_B,K,H"
            ));
        };
        m.validate()?;
        Ok(m)
    }

    /// Check every probability is in [0, 1] and every mean positive and finite.
    pub fn validate(&self) -> Result<(), String> {
        let prob = |name: &str, v: f64| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(format!("{name} = {v} is not a probability in [0, 1]"))
            }
        };
        let mean = |name: &str, v: f64| {
            if v.is_finite() && v > 0.0 && v <= 1e9 {
                Ok(())
            } else {
                Err(format!("{name} = {v} must be a positive number of seconds (at most 1e9)"))
            }
        };
        match *self {
            LossModel::None => Ok(()),
            LossModel::Bernoulli { p } => prob("p", p),
            LossModel::GilbertElliott { p, r, loss_low, loss_burst } => {
                prob("p", p)?;
                prob("r", r)?;
                prob("loss_low", loss_low)?;
                prob("loss_burst", loss_burst)
            }
            LossModel::GilbertElliottTime { low_mean_s, burst_mean_s, loss_low, loss_burst } => {
                mean("low_mean_s", low_mean_s)?;
                mean("burst_mean_s", burst_mean_s)?;
                prob("loss_low", loss_low)?;
                prob("loss_burst", loss_burst)
            }
        }
    }

    /// Long-run share of the burst state, π_B.
    pub fn burst_share(&self) -> f64 {
        match *self {
            LossModel::None | LossModel::Bernoulli { .. } => 0.0,
            LossModel::GilbertElliott { p, r, .. } => {
                if p + r > 0.0 {
                    p / (p + r)
                } else {
                    0.0
                }
            }
            LossModel::GilbertElliottTime { low_mean_s, burst_mean_s, .. } => {
                burst_mean_s / (low_mean_s + burst_mean_s)
            }
        }
    }

    /// Long-run loss probability of a packet (for the time clock: of a packet sampled at a
    /// time independent of the chain).
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossModel::None => 0.0,
            LossModel::Bernoulli { p } => p,
            LossModel::GilbertElliott { loss_low, loss_burst, .. }
            | LossModel::GilbertElliottTime { loss_low, loss_burst, .. } => {
                let b = self.burst_share();
                b * loss_burst + (1.0 - b) * loss_low
            }
        }
    }
}

#[inline]
pub(crate) fn unit(rng: &mut SplitMix64) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// The running loss process of one loss stage.
#[derive(Clone, Debug)]
pub struct LossStage {
    model: LossModel,
    rng: SplitMix64,
    burst: bool,
    /// Time clock: when the current sojourn ends.
    next_switch: Nanos,
    lost: u64,
    passed: u64,
}

impl LossStage {
    /// A loss process starting at time 0 in a state drawn from the stationary distribution.
    pub fn new(model: LossModel, mut rng: SplitMix64) -> Self {
        let burst = match model {
            LossModel::GilbertElliott { .. } | LossModel::GilbertElliottTime { .. } => {
                unit(&mut rng) < model.burst_share()
            }
            _ => false,
        };
        let mut s = LossStage { model, rng, burst, next_switch: 0, lost: 0, passed: 0 };
        if let LossModel::GilbertElliottTime { .. } = s.model {
            s.next_switch = s.sojourn();
        }
        s
    }

    fn sojourn(&mut self) -> Nanos {
        let mean_s = match self.model {
            LossModel::GilbertElliottTime { low_mean_s, burst_mean_s, .. } => {
                if self.burst {
                    burst_mean_s
                } else {
                    low_mean_s
                }
            }
            _ => unreachable!(),
        };
        let u = 1.0 - unit(&mut self.rng); // (0, 1]
        ((-libm::log(u) * mean_s * 1e9).round() as u64).max(1)
    }

    /// Is the chain in the burst state (after the last packet)?
    pub fn in_burst(&self) -> bool {
        self.burst
    }

    /// Packets lost / passed so far.
    pub fn counts(&self) -> (u64, u64) {
        (self.lost, self.passed)
    }

    /// Decide the fate of a packet crossing the stage at time `t` (non-decreasing across
    /// calls). Returns `true` if it is lost.
    pub fn lose(&mut self, t: Nanos) -> bool {
        let p_loss = match self.model {
            LossModel::None => 0.0,
            LossModel::Bernoulli { p } => p,
            LossModel::GilbertElliott { p, r, loss_low, loss_burst } => {
                let u = unit(&mut self.rng);
                if self.burst {
                    if u < r {
                        self.burst = false;
                    }
                } else if u < p {
                    self.burst = true;
                }
                if self.burst {
                    loss_burst
                } else {
                    loss_low
                }
            }
            LossModel::GilbertElliottTime { low_mean_s, burst_mean_s, loss_low, loss_burst } => {
                if self.next_switch <= t {
                    // The chain left its state at `next_switch`. By the Markov property its
                    // state at t depends only on the state entered then and Δ = t − next_switch:
                    // P(burst at t) = π_B + (1{entered burst} − π_B)·exp(−(λ + μ)Δ), with
                    // λ = 1/T_L, μ = 1/T_B. By memorylessness the sojourn left from t is a fresh
                    // exponential of the state found. Exact in distribution, O(1) per packet
                    // however many transitions fit between two packets.
                    let (lam, mu) = (1.0 / low_mean_s, 1.0 / burst_mean_s);
                    let pi_b = lam / (lam + mu);
                    let entered_burst = if self.burst { 0.0 } else { 1.0 };
                    let dt = (t - self.next_switch) as f64 * 1e-9;
                    let p_burst = pi_b + (entered_burst - pi_b) * libm::exp(-(lam + mu) * dt);
                    self.burst = unit(&mut self.rng) < p_burst;
                    self.next_switch = t.saturating_add(self.sojourn());
                }
                if self.burst {
                    loss_burst
                } else {
                    loss_low
                }
            }
        };
        let lost = p_loss > 0.0 && unit(&mut self.rng) < p_loss;
        if lost {
            self.lost += 1;
        } else {
            self.passed += 1;
        }
        lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(model: LossModel, n: u64, spacing_ns: u64, seed: u64) -> f64 {
        let mut s = LossStage::new(model, SplitMix64::stream(seed, 7));
        let mut lost = 0;
        for i in 0..n {
            if s.lose(i * spacing_ns) {
                lost += 1;
            }
        }
        lost as f64 / n as f64
    }

    #[test]
    fn bernoulli_rate() {
        let r = rate(LossModel::Bernoulli { p: 0.02 }, 1_000_000, 1, 1);
        assert!((r - 0.02).abs() < 0.0006, "{r}");
        assert_eq!(rate(LossModel::Bernoulli { p: 0.0 }, 10_000, 1, 1), 0.0);
        assert_eq!(rate(LossModel::Bernoulli { p: 1.0 }, 10_000, 1, 1), 1.0);
        assert_eq!(rate(LossModel::None, 10_000, 1, 1), 0.0);
    }

    #[test]
    fn profiles_match_the_published_averages() {
        // Time clock, a packet every 25 ms over ~14 h of simulated time: ≈ 50 000 sojourns.
        for (name, avg) in [("medium", 0.10), ("high", 0.18)] {
            let m = LossModel::profile(name, ErrorClock::Time, 5.0).unwrap();
            assert!((m.mean_loss() - avg).abs() < 1e-12, "{name} {}", m.mean_loss());
            for seed in [1, 2] {
                let r = rate(m.clone(), 2_000_000, 25_000_000, seed);
                assert!((r - avg).abs() < 0.006, "{name} seed {seed}: {r}");
            }
            let m = LossModel::profile(name, ErrorClock::Packet, 5.0).unwrap();
            assert!((m.mean_loss() - avg).abs() < 1e-12);
            let r = rate(m, 2_000_000, 1, 3);
            assert!((r - avg).abs() < 0.004, "{name} packet clock: {r}");
        }
        match LossModel::profile("high", ErrorClock::Time, 5.0).unwrap() {
            LossModel::GilbertElliottTime { low_mean_s, burst_mean_s, .. } => {
                assert!((low_mean_s - 3.875).abs() < 1e-12);
                assert_eq!(burst_mean_s, 1.0);
            }
            _ => unreachable!(),
        }
        match LossModel::profile("medium", ErrorClock::Time, 5.0).unwrap() {
            LossModel::GilbertElliottTime { low_mean_s, .. } => assert!((low_mean_s - 4.0).abs() < 1e-12),
            _ => unreachable!(),
        }
    }

    #[test]
    fn time_clock_with_tiny_sojourns_is_fast_and_right() {
        // 1 µs sojourns, a packet every 10 s for 10^5 packets: 10^12 transitions in between
        // would hang a stepping implementation.
        let m = LossModel::GilbertElliottTime { low_mean_s: 3e-6, burst_mean_s: 1e-6, loss_low: 0.0, loss_burst: 1.0 };
        let r = rate(m, 100_000, 10_000_000_000, 4);
        assert!((r - 0.25).abs() < 0.01, "{r}");
    }

    #[test]
    fn time_clock_sojourns_have_the_configured_means() {
        // loss_burst = 1, loss_low = 0: runs of lost packets (1 ms apart) are burst sojourns.
        let m = LossModel::GilbertElliottTime { low_mean_s: 4.0, burst_mean_s: 1.0, loss_low: 0.0, loss_burst: 1.0 };
        let mut s = LossStage::new(m, SplitMix64::new(12));
        let (mut bursts, mut lost, mut prev) = (0u64, 0u64, false);
        for i in 0..4_000_000u64 {
            let l = s.lose(i * 1_000_000);
            if l {
                lost += 1;
                if !prev {
                    bursts += 1;
                }
            }
            prev = l;
        }
        let mean_burst_s = lost as f64 * 1e-3 / bursts as f64;
        let mean_low_s = (4_000_000 - lost) as f64 * 1e-3 / bursts as f64;
        assert!((mean_burst_s - 1.0).abs() < 0.1, "{mean_burst_s}");
        assert!((mean_low_s - 4.0).abs() < 0.4, "{mean_low_s}");
    }

    #[test]
    fn packet_clock_steps_first_then_draws() {
        // p = r = 1 alternates the state on every packet; loss_low = 0, loss_burst = 1 make
        // the fate reveal the state the loss was drawn in.
        let m = LossModel::GilbertElliott { p: 1.0, r: 1.0, loss_low: 0.0, loss_burst: 1.0 };
        let mut s = LossStage::new(m, SplitMix64::new(1));
        let first_state = s.in_burst();
        let l1 = s.lose(0);
        // Stepped first: the loss follows the *new* state.
        assert_eq!(l1, !first_state);
        let l2 = s.lose(1);
        assert_eq!(l2, first_state);
        assert_ne!(l1, l2);
    }

    #[test]
    fn burst_lengths_packet_clock() {
        // Mean burst run of burst-state packets = 1/r.
        let m = LossModel::GilbertElliott { p: 0.05, r: 0.25, loss_low: 0.0, loss_burst: 1.0 };
        let mut s = LossStage::new(m, SplitMix64::new(9));
        let (mut runs, mut lost, mut prev) = (0u64, 0u64, false);
        for i in 0..1_000_000 {
            let l = s.lose(i);
            if l {
                lost += 1;
                if !prev {
                    runs += 1;
                }
            }
            prev = l;
        }
        let mean_run = lost as f64 / runs as f64;
        assert!((mean_run - 4.0).abs() < 0.1, "{mean_run}");
    }

    #[test]
    fn parse_forms() {
        let c = ErrorClock::Time;
        assert_eq!(LossModel::parse("none", c, 5.0).unwrap(), LossModel::None);
        assert_eq!(LossModel::parse("bernoulli:0.1", c, 5.0).unwrap(), LossModel::Bernoulli { p: 0.1 });
        assert_eq!(
            LossModel::parse("ge:0.01,0.2,0,0.5", c, 5.0).unwrap(),
            LossModel::GilbertElliott { p: 0.01, r: 0.2, loss_low: 0.0, loss_burst: 0.5 }
        );
        assert!(LossModel::parse("bernoulli:1.5", c, 5.0).unwrap_err().contains("probability"));
        assert!(LossModel::parse("ge:0.1,0.2", c, 5.0).is_err());
        assert!(LossModel::parse("wifi", c, 5.0).unwrap_err().contains("valid"));
        assert!(LossModel::parse("ge-time:0,1,0,1", c, 5.0).is_err());
        assert!(LossModel::parse("bernoulli:NaN", c, 5.0).is_err());
    }
}
