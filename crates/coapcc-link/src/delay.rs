//! Fixed propagation delay and the rest-of-path jitter element.

use coapcc_cc::{Entropy, SplitMix64};
use serde::{Deserialize, Serialize};

use crate::{ms_to_ns, Nanos};

/// A fixed delay (propagation), milliseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelayConfig {
    /// One-way delay, ms (testbed: 200 uplink, 400 downlink).
    pub ms: f64,
}

/// A random per-packet delay drawn uniformly from `[min_ms, max_ms]` (integer nanoseconds,
/// both ends included): the rest of the path (AMBIG-T1 `rest_of_path_delay`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JitterConfig {
    /// Lower bound, ms (testbed: 10).
    pub min_ms: f64,
    /// Upper bound, ms (testbed: 20).
    pub max_ms: f64,
    /// AMBIG-T1 `allow_reordering`: `false` (default) makes the element a FIFO, delivery =
    /// max(arrival + U, previous delivery); `true` delivers at arrival + U.
    #[serde(default)]
    pub allow_reordering: bool,
}

/// The running jitter element.
#[derive(Clone, Debug)]
pub struct JitterFifo {
    min: Nanos,
    span: u64,
    reorder: bool,
    last: Nanos,
    rng: SplitMix64,
}

impl JitterFifo {
    /// A jitter element drawing from `rng`.
    pub fn new(cfg: &JitterConfig, rng: SplitMix64) -> Self {
        let min = ms_to_ns(cfg.min_ms);
        let max = ms_to_ns(cfg.max_ms).max(min);
        JitterFifo { min, span: max - min + 1, reorder: cfg.allow_reordering, last: 0, rng }
    }

    /// The output time of a packet entering at `t`.
    #[inline]
    pub fn pass(&mut self, t: Nanos) -> Nanos {
        // Uniform integer in [0, span) by multiply-high (bias < span / 2^64).
        let u = ((self.rng.next_u64() as u128 * self.span as u128) >> 64) as u64;
        let out = t + self.min + u;
        if self.reorder {
            out
        } else {
            self.last = self.last.max(out);
            self.last
        }
    }
}
