//! Cooja's Multi-path Ray-tracer Medium (MRM) as it decides receptions on an open plane: its
//! parameters ([`MrmConfig`], the names and defaults of Cooja's `ChannelModel`) and its static
//! formulas (received power, packet reception ratio). The dynamic rules (which transmission a
//! radio locks onto, what interferes, what capture does, what clear channel assessment senses)
//! are in the network's medium (`net/medium.rs`), which asks only the tables built here
//! ([`crate::radio::Medium`]).
//!
//! Sources (Contiki 3.0, `tools/cooja/apps/mrm/java/org/contikios/mrm/`):
//! - `ChannelModel.getFSPL`, `getTransmissionData`: with no obstacles the ray tracer keeps the
//!   direct path only, and the received power is output power + system gain + transmitter
//!   gain + free-space path loss `−32.44 − 20·log10(f / MHz) − 20·log10(d / km)`, i.e.
//!   `−40.04 − 20·log10(d / m)` dB at 2 400 MHz (never a gain: capped at 0 dB).
//! - `ChannelModel.getSINR`, `getProbability`: SNR = power − max(background noise mean,
//!   interference) with the variance of the system gain plus that of the noise; the
//!   reception threshold is `snr_threshold`, raised to `rx_sensitivity − noise` when the
//!   receiver sensitivity lies above the noise; the reception probability is
//!   `1 − Φ((threshold − SNR) / σ)` (σ = √variance; 0 or 1 when the variance is 0). `MRM`
//!   always calls it without interference, so it is a function of distance alone.
//! - `MRM.createConnections`: one draw per transmission and radio against that probability.
//! - The output power is the radio's own (`RadioPair.getTxPower` →
//!   `Msp802154Radio.getCurrentOutputPower`): 0 dBm for a CC2420 at its default power level 31.
//! - Clear channel assessment: MSPSim's CC2420 (`CC2420.setRSSI`, `updateCCA`) reports busy
//!   when the radio's RSSI register (power − RSSI_OFFSET −45) reaches the CCA threshold
//!   register, which Contiki writes from `CC2420_CONF_CCA_THRESH` (−45 on Sky and Z1):
//!   busy at −90 dBm and above.
//!
//! The study tuned MRM "to 100 % success at 10 m and an interference range of 20 m"; how is not
//! published. The preset reaches it with the receiver sensitivity (the MRM parameter meant for
//! it) and a noise variance of 1 dB² (system-gain variance 0): 50 % at 14.14 m, the geometric
//! middle of 10 and 20 m, 99.87 % at 10 m, 0.13 % at 20 m. `docs/mesh.md` lists the curves
//! swept around it.

use serde::{Deserialize, Serialize};

/// How a later transmission that is not much weaker affects a radio already receiving
/// another frame, with MRM's capture effect on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CaptureMode {
    /// As Cooja's MRM decides for the connections (`MRM.createConnections` of Contiki 2.7–3.0):
    /// the later frame takes the radio over (the preamble test compares the new connection's
    /// start with itself, so it never interferes); the earlier frame is lost there.
    Connection,
    /// As the emulated CC2420 of an MSPSim mote then receives the bytes (`Msp802154Radio`
    /// streams each connection's bytes; `CC2420.receivedByte` counts a frame's bytes once it
    /// has found its start-of-frame delimiter): the later frame is received only if it
    /// starts within `capture_preamble_us` of the earlier one (the radio still searching for
    /// the delimiter); otherwise both frames are lost and the radio hears nothing until they
    /// have ended.
    Bytes,
}

/// Cooja MRM parameters (`ChannelModel.Parameter`, same names; defaults are Cooja's unless
/// stated) plus the CC2420's CCA threshold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MrmConfig {
    /// Transmitter output power, dBm (`Msp802154Radio.getCurrentOutputPower`: 0 dBm at the
    /// CC2420's default power level 31).
    pub tx_power_dbm: f64,
    /// Carrier frequency, MHz (`frequency`, 2 400).
    pub frequency_mhz: f64,
    /// Extra system gain mean, dB (`system_gain_mean`, 0).
    pub system_gain_mean_db: f64,
    /// Extra system gain variance, dB² (`system_gain_var`; Cooja's default 4, the preset 0).
    pub system_gain_var_db: f64,
    /// Background noise mean, dBm (`bg_noise_mean`, −100).
    pub bg_noise_mean_dbm: f64,
    /// Background noise variance, dB² (`bg_noise_var`, 1).
    pub bg_noise_var_db: f64,
    /// SNR reception threshold, dB (`snr_threshold`, 6).
    pub snr_threshold_db: f64,
    /// Receiver sensitivity, dBm (`rx_sensitivity`; Cooja's default −100, the preset −63.05:
    /// 50 % reception at 14.14 m).
    pub rx_sensitivity_dbm: f64,
    /// Capture effect (`captureEffect`, on): a frame more than `capture_threshold_db` weaker
    /// than what a radio already receives is ignored there, and a frame whose reception draw
    /// fails disturbs nobody. Off: every frame interferes, and a failed draw still
    /// interferes where its power exceeds the background noise.
    pub capture_effect: bool,
    /// Capture threshold, dB (`captureEffectSignalTreshold`, 3).
    pub capture_threshold_db: f64,
    /// Capture preamble window, µs (`captureEffectPreambleDuration`, 64: two bytes).
    pub capture_preamble_us: f64,
    /// What a later frame that is not ignored does to a radio receiving another (see
    /// [`CaptureMode`]; default `bytes`, the emulated motes of the study).
    pub capture_mode: CaptureMode,
    /// CCA threshold, dBm: a radio's CCA is busy while the strongest signal it senses (a
    /// frame it receives or is disturbed by) is at least this (−90: `CC2420_CONF_CCA_THRESH`
    /// −45 plus the CC2420's RSSI offset −45).
    pub cca_threshold_dbm: f64,
}

impl Default for MrmConfig {
    /// The `ancillotti-cooja` tuning (see the module documentation): Cooja's defaults but no
    /// randomness (both variances 0), no capture effect, and a system gain of −33.9 dB, so
    /// that a frame is received (SNR ≥ 6 dB) up to 10.07 m and disturbs (power above the
    /// −100 dBm noise) up to 20.09 m.
    fn default() -> Self {
        MrmConfig {
            tx_power_dbm: 0.0,
            frequency_mhz: 2400.0,
            system_gain_mean_db: -33.9,
            system_gain_var_db: 0.0,
            bg_noise_mean_dbm: -100.0,
            bg_noise_var_db: 0.0,
            snr_threshold_db: 6.0,
            rx_sensitivity_dbm: -100.0,
            capture_effect: false,
            capture_threshold_db: 3.0,
            capture_preamble_us: 64.0,
            capture_mode: CaptureMode::Bytes,
            cca_threshold_dbm: -90.0,
        }
    }
}

impl MrmConfig {
    /// Cooja's own defaults (`ChannelModel.Parameter.getDefaultValue`): variances 4 and 1,
    /// sensitivity −100 dBm, no extra gain, capture effect on.
    pub fn cooja() -> Self {
        MrmConfig {
            system_gain_mean_db: 0.0,
            system_gain_var_db: 4.0,
            bg_noise_var_db: 1.0,
            capture_effect: true,
            ..MrmConfig::default()
        }
    }

    /// A smooth curve with the capture effect, tuned by the receiver sensitivity: 50 %
    /// reception at `d50` metres, SNR standard deviation `sigma_db` (Cooja's capture effect
    /// on, strong signals: CCA senses every frame a radio registers).
    pub fn smooth(d50: f64, sigma_db: f64) -> Self {
        MrmConfig {
            system_gain_mean_db: 0.0,
            system_gain_var_db: 0.0,
            bg_noise_var_db: sigma_db * sigma_db,
            rx_sensitivity_dbm: sensitivity_for_d50(d50),
            capture_effect: true,
            ..MrmConfig::default()
        }
    }
}

/// Free-space path gain at `d` metres and `f_mhz`, dB (MRM's `getFSPL`: never positive).
pub fn fspl_db(f_mhz: f64, d: f64) -> f64 {
    let d = d.max(1e-3);
    (-32.44 - 20.0 * libm::log10(f_mhz) - 20.0 * libm::log10(d / 1000.0)).min(0.0)
}

/// The receiver sensitivity (dBm) that puts MRM's 50 % reception point at `d50` metres with
/// the other parameters at the preset's values (0 dBm output, 0 dB gain, 2 400 MHz).
pub fn sensitivity_for_d50(d50: f64) -> f64 {
    fspl_db(2400.0, d50)
}

/// The standard normal CDF (Abramowitz & Stegun 7.1.26 on erf: |error| < 1.5e-7, the
/// precision of Cooja's own `GaussianWrapper.cdfErrorAlgo`).
pub fn normal_cdf(z: f64) -> f64 {
    let x = z.abs() / core::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly =
        t * (0.254_829_592 + t * (-0.284_496_736 + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * libm::exp(-x * x);
    if z >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

impl MrmConfig {
    /// Received signal strength at `d` metres, dBm.
    pub fn power_dbm(&self, d: f64) -> f64 {
        self.tx_power_dbm + self.system_gain_mean_db + fspl_db(self.frequency_mhz, d)
    }

    /// The effective SNR threshold, dB: `snr_threshold`, or `rx_sensitivity − noise` when
    /// that is higher (MRM raises the threshold for a sensitivity above the noise floor).
    pub fn threshold_db(&self) -> f64 {
        let raised = self.rx_sensitivity_dbm - self.bg_noise_mean_dbm;
        if self.rx_sensitivity_dbm > self.bg_noise_mean_dbm && self.snr_threshold_db < raised {
            raised
        } else {
            self.snr_threshold_db
        }
    }

    /// Standard deviation of the SNR, dB.
    pub fn sigma_db(&self) -> f64 {
        (self.system_gain_var_db + self.bg_noise_var_db).max(0.0).sqrt()
    }

    /// Packet reception probability at `d` metres without interference (MRM's
    /// `getProbability` as `createConnections` calls it).
    pub fn prr(&self, d: f64) -> f64 {
        let snr = self.power_dbm(d) - self.bg_noise_mean_dbm;
        let threshold = self.threshold_db();
        let sigma = self.sigma_db();
        if sigma == 0.0 {
            return if threshold - snr > 0.0 { 0.0 } else { 1.0 };
        }
        let p = 1.0 - normal_cdf((threshold - snr) / sigma);
        // Below 1e-9 a draw never succeeds in a run (and the radio is not listed as a hearer).
        if p < 1e-9 {
            0.0
        } else {
            p.min(1.0)
        }
    }

    /// Check the parameters; the first problem as a one-line message.
    pub fn validate(&self) -> Result<(), String> {
        let finite = [
            ("tx_power_dbm", self.tx_power_dbm),
            ("system_gain_mean_db", self.system_gain_mean_db),
            ("bg_noise_mean_dbm", self.bg_noise_mean_dbm),
            ("snr_threshold_db", self.snr_threshold_db),
            ("rx_sensitivity_dbm", self.rx_sensitivity_dbm),
            ("capture_threshold_db", self.capture_threshold_db),
            ("cca_threshold_dbm", self.cca_threshold_dbm),
        ];
        if let Some((k, _)) = finite.iter().find(|(_, v)| !v.is_finite()) {
            return Err(format!("radio.mrm.{k} must be a finite number"));
        }
        let nonneg = [
            ("frequency_mhz", self.frequency_mhz),
            ("system_gain_var_db", self.system_gain_var_db),
            ("bg_noise_var_db", self.bg_noise_var_db),
            ("capture_preamble_us", self.capture_preamble_us),
        ];
        if let Some((k, _)) = nonneg.iter().find(|(_, v)| !(v.is_finite() && *v >= 0.0)) {
            return Err(format!("radio.mrm.{k} must be a non-negative number"));
        }
        if self.frequency_mhz == 0.0 {
            return Err("radio.mrm.frequency_mhz must be positive".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_space_loss_is_cooja_friis_at_2400_mhz() {
        // −32.44 − 20·log10(2400) − 20·log10(0.01) = −32.44 − 67.604 + 40 = −60.044 dB at 10 m.
        assert!((fspl_db(2400.0, 10.0) + 60.044).abs() < 1e-3);
        // Doubling the distance costs 6.02 dB (exponent 2).
        assert!((fspl_db(2400.0, 10.0) - fspl_db(2400.0, 20.0) - 6.0206).abs() < 1e-4);
        // Never a gain: capped at 0 dB very close.
        assert_eq!(fspl_db(2400.0, 0.001), 0.0);
    }

    #[test]
    fn reception_probability_by_hand() {
        // Cooja's defaults: σ² = 4 + 1, threshold 6 dB, noise −100 dBm, sensitivity −100:
        // at 10 m the SNR is 39.96 dB, so reception is certain; the 50 % point lies where the
        // SNR equals 6 dB, P = −94 dBm: d = 1 km · 10^((−32.44 − 20·log10(2400) + 94)/20) = 498.6 m.
        let cooja = MrmConfig::cooja();
        assert_eq!(cooja.threshold_db(), 6.0);
        assert_eq!(cooja.prr(10.0), 1.0);
        let d50 = 1000.0 * libm::pow(10.0, (-32.44 - 20.0 * libm::log10(2400.0) + 94.0) / 20.0);
        assert!((d50 - 498.6).abs() < 0.1, "{d50}");
        assert!((cooja.prr(d50) - 0.5).abs() < 1e-6);
        // One σ (√5 = 2.236 dB) nearer: 1 − Φ(−1) = 0.8413.
        let d = d50 * libm::pow(10.0, -5f64.sqrt() / 20.0);
        assert!((cooja.prr(d) - 0.841_34).abs() < 1e-3, "{}", cooja.prr(d));

        // Tuned by the sensitivity: −63.05 dBm lies above the noise, so the threshold is
        // raised to −63.0545 + 100 = 36.9455 dB; σ = 1 dB; the 50 % point at 14.142 m.
        let m = MrmConfig::smooth(14.142_135_623_730_951, 1.0);
        assert!((m.threshold_db() - 36.9455).abs() < 1e-3, "{}", m.threshold_db());
        assert_eq!(m.sigma_db(), 1.0);
        assert!((m.prr(14.142_135_6) - 0.5).abs() < 1e-6);
        // 10 m: SNR 39.956 dB, 3.010 dB (σ) above the threshold: Φ(3.01) = 0.99869.
        assert!((m.prr(10.0) - 0.998_69).abs() < 1e-4, "{}", m.prr(10.0));
        // 20 m: 3.010 dB below: 1 − Φ(3.01) = 0.00131.
        assert!((m.prr(20.0) - 0.001_31).abs() < 1e-4, "{}", m.prr(20.0));
        // 30 m: 6.53 dB below, p < 1e-9 -> no hearer.
        assert_eq!(m.prr(30.0), 0.0);
        // Zero variance: a step at the threshold.
        let step = MrmConfig { bg_noise_var_db: 0.0, ..m.clone() };
        assert_eq!((step.prr(14.0), step.prr(14.3)), (1.0, 0.0));
        // The preset: no variance, SNR(d) = −33.9 − 40.044 − 20·log10(d) + 100; 6 dB (the
        // threshold) is reached at 10.07 m and 0 dB (the noise floor) at 20.09 m.
        let p = MrmConfig::default();
        assert_eq!((p.prr(10.0), p.prr(10.06), p.prr(10.08), p.prr(14.14)), (1.0, 1.0, 0.0, 0.0));
        assert!(p.power_dbm(20.0) > p.bg_noise_mean_dbm && p.power_dbm(20.1) < p.bg_noise_mean_dbm);
    }

    #[test]
    fn cca_threshold_against_received_power() {
        // Tuned by the sensitivity, signals are strong: −60.04 dBm at 10 m and −66.06 dBm at
        // 20 m, both above the CC2420's −90 dBm CCA threshold.
        let m = MrmConfig::smooth(14.142, 1.0);
        assert!((m.power_dbm(10.0) + 60.044).abs() < 1e-3);
        assert!(m.power_dbm(20.0) > m.cca_threshold_dbm);
        // Tuned by the system gain instead (−30.95 dB for the same 50 % point at the
        // default sensitivity), a 10 m neighbour arrives at −90.99 dBm: below the threshold.
        let weak = MrmConfig { system_gain_mean_db: -30.95, ..m.clone() };
        let weak = MrmConfig { rx_sensitivity_dbm: -100.0, ..weak };
        assert!((weak.prr(14.142) - 0.5).abs() < 0.01);
        assert!(weak.power_dbm(10.0) < weak.cca_threshold_dbm);
        // The preset (gain −33.9 dB): −93.94 dBm at 10 m, so CCA never finds the channel busy.
        assert!(MrmConfig::default().power_dbm(10.0) < -93.9);
    }

    #[test]
    fn normal_cdf_matches_known_values() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-9);
        assert!((normal_cdf(1.0) - 0.841_344_7).abs() < 2e-7);
        assert!((normal_cdf(-1.96) - 0.024_997_9).abs() < 2e-7);
        assert!((normal_cdf(3.0) - 0.998_650_1).abs() < 2e-7);
    }
}
