//! A direction's chain as configuration data ([`StageConfig`]) and its check
//! ([`validate_chain`]).

use serde::{Deserialize, Serialize};

use crate::{DelayConfig, JitterConfig, LossModel, RateConfig};

/// One element of a direction's chain, as configuration data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageConfig {
    /// Rate + byte-limited tail-drop buffer.
    Rate(RateConfig),
    /// Fixed propagation delay.
    Delay(DelayConfig),
    /// Link-error process.
    Loss(LossModel),
    /// Random per-packet delay, FIFO by default (rest of path).
    Jitter(JitterConfig),
}

fn check_ms(what: &str, ms: f64) -> Result<(), String> {
    if ms.is_finite() && (0.0..=1e12).contains(&ms) {
        Ok(())
    } else {
        Err(format!("{what} = {ms} ms must be a finite, non-negative number of milliseconds"))
    }
}

/// Check a chain: rates positive, delays finite and non-negative, probabilities in [0, 1],
/// every buffer able to hold a packet of `largest_packet` bytes, reordering only where it
/// stays exact.
pub fn validate_chain(chain: &[StageConfig], largest_packet: u32) -> Result<(), String> {
    for (i, st) in chain.iter().enumerate() {
        let at = |m: String| format!("stage {i}: {m}");
        match st {
            StageConfig::Rate(r) => {
                match &r.schedule {
                    None if r.bits_per_s == 0 => return Err(at("rate bits_per_s must be positive".into())),
                    None => {}
                    Some(s) => s.validate(r.bits_per_s).map_err(at)?,
                }
                let need = largest_packet as u64 + r.per_packet_overhead_bytes as u64;
                if r.buffer_bytes < need {
                    return Err(at(format!(
                        "buffer_bytes = {} is smaller than one packet ({need} B counted for the largest packet)",
                        r.buffer_bytes
                    )));
                }
            }
            StageConfig::Delay(d) => check_ms("delay", d.ms).map_err(at)?,
            StageConfig::Loss(m) => m.validate().map_err(|e| at(format!("loss: {e}")))?,
            StageConfig::Jitter(j) => {
                check_ms("jitter min_ms", j.min_ms).map_err(at)?;
                check_ms("jitter max_ms", j.max_ms).map_err(at)?;
                if j.min_ms > j.max_ms {
                    return Err(at(format!("jitter min_ms = {} exceeds max_ms = {}", j.min_ms, j.max_ms)));
                }
                if j.allow_reordering && chain[i + 1..].iter().any(|s| !matches!(s, StageConfig::Delay(_))) {
                    return Err(at(
                        "allow_reordering is only supported when no rate, loss or jitter element follows".into()
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::*;

    #[test]
    fn chain_validation() {
        let mut up = testbed_uplink(100, LossModel::None);
        assert!(validate_chain(&up, 296).unwrap_err().contains("smaller than one packet"));
        up[0] = StageConfig::Rate(RateConfig {
            bits_per_s: 0,
            buffer_bytes: 1000,
            buffer_counts_in_service: true,
            per_packet_overhead_bytes: 0,
            schedule: None,
        });
        assert!(validate_chain(&up, 296).unwrap_err().contains("positive"));
        let mut down = testbed_downlink(28_200, LossModel::None);
        down[0] = StageConfig::Jitter(JitterConfig { min_ms: 10.0, max_ms: 20.0, allow_reordering: true });
        assert!(validate_chain(&down, 296).unwrap_err().contains("allow_reordering"));
        let mut up = testbed_uplink(28_200, LossModel::None);
        up[3] = StageConfig::Jitter(JitterConfig { min_ms: 10.0, max_ms: 20.0, allow_reordering: true });
        assert!(validate_chain(&up, 296).is_ok());
        up[3] = StageConfig::Jitter(JitterConfig { min_ms: 30.0, max_ms: 20.0, allow_reordering: false });
        assert!(validate_chain(&up, 296).is_err());
        up[3] = StageConfig::Delay(DelayConfig { ms: f64::NAN });
        assert!(validate_chain(&up, 296).is_err());
    }
}
