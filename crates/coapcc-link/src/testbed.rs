//! The testbed's chains (spec §1.5) and MTU (spec §1.2).

use crate::{DelayConfig, JitterConfig, LossModel, RateConfig, StageConfig};

/// Testbed MTU, bytes (spec §1.2; the thesis's "295" is a misprint).
pub const TESTBED_MTU: u32 = 296;

/// The testbed uplink (client → server): rate 60 kbit/s + buffer → 200 ms → loss →
/// rest-of-path U[10, 20] ms.
pub fn testbed_uplink(buffer_bytes: u64, loss: LossModel) -> Vec<StageConfig> {
    vec![
        StageConfig::Rate(RateConfig {
            bits_per_s: 60_000,
            buffer_bytes,
            buffer_counts_in_service: true,
            per_packet_overhead_bytes: 0,
            schedule: None,
        }),
        StageConfig::Delay(DelayConfig { ms: 200.0 }),
        StageConfig::Loss(loss),
        StageConfig::Jitter(JitterConfig { min_ms: 10.0, max_ms: 20.0, allow_reordering: false }),
    ]
}

/// The testbed downlink (server → client): rest-of-path U[10, 20] ms → rate 30 kbit/s +
/// buffer → 400 ms → loss.
pub fn testbed_downlink(buffer_bytes: u64, loss: LossModel) -> Vec<StageConfig> {
    vec![
        StageConfig::Jitter(JitterConfig { min_ms: 10.0, max_ms: 20.0, allow_reordering: false }),
        StageConfig::Rate(RateConfig {
            bits_per_s: 30_000,
            buffer_bytes,
            buffer_counts_in_service: true,
            per_packet_overhead_bytes: 0,
            schedule: None,
        }),
        StageConfig::Delay(DelayConfig { ms: 400.0 }),
        StageConfig::Loss(loss),
    ]
}
