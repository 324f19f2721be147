//! The thesis RTO estimator (Makarem 2021, chapter 5, Algorithms 2-4).
//!
//! EWMA-based; the first sample R gives SRTT = R, RTTVAR = R/2; SRTT is updated first and the
//! test `R > SRTT` and `|SRTT − R|` use the updated SRTT, as printed. Version 1 moves RTTVAR
//! only when `R > SRTT`; version 2 moves it with weight γ otherwise; the final version uses
//! K = `k_spurious` when the acknowledged exchange revealed a spurious retransmission.

use crate::num::fabs;

/// Which version of the estimator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RtoVersion {
    /// Algorithm 2: RTTVAR moves only when R > SRTT; RTO = SRTT + 4·RTTVAR.
    V1,
    /// Algorithm 3: RTTVAR moves with α when R > SRTT, with γ otherwise; RTO = SRTT + K·RTTVAR.
    V2,
    /// Algorithm 4: version 2 with K = `k_spurious` after a spurious retransmission.
    Final,
}

/// Names of [`RtoVersion`] values.
pub const RTO_VERSIONS: &[(&str, RtoVersion)] =
    &[("1", RtoVersion::V1), ("2", RtoVersion::V2), ("final", RtoVersion::Final)];

/// Constants of the estimator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MkEstimatorParams {
    /// Version.
    pub version: RtoVersion,
    /// α: SRTT gain, and RTTVAR gain when the RTT rises (1/8).
    pub alpha: f64,
    /// γ: RTTVAR gain when the RTT falls (1/32; design rule α > γ).
    pub gamma: f64,
    /// K without a spurious retransmission (4).
    pub k: f64,
    /// K after a spurious retransmission (7; final version only).
    pub k_spurious: f64,
    /// Lower bound of the RTO, seconds (not in the thesis: a zero RTT sample would arm a
    /// zero timer).
    pub min_rto: f64,
}

/// The estimator's state, seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MkEstimator {
    /// Smoothed RTT.
    pub srtt: f64,
    /// RTT variation.
    pub rttvar: f64,
    /// The RTO of the next transmission.
    pub rto: f64,
    /// Samples taken (0: empty, the RTO is the initial one).
    pub samples: u32,
}

impl MkEstimator {
    /// An empty estimator whose RTO is `initial` (2 s in the thesis).
    pub const fn new(initial: f64) -> Self {
        MkEstimator { srtt: 0.0, rttvar: 0.0, rto: initial, samples: 0 }
    }

    /// Feed sample `r` (seconds); `spurious`: the acknowledged exchange revealed a spurious
    /// retransmission. Returns the new RTO.
    pub fn sample(&mut self, p: &MkEstimatorParams, r: f64, spurious: bool) -> f64 {
        if self.samples == 0 {
            self.srtt = r;
            self.rttvar = r / 2.0;
        } else {
            self.srtt = (1.0 - p.alpha) * self.srtt + p.alpha * r;
            let err = fabs(self.srtt - r);
            if r > self.srtt {
                self.rttvar = (1.0 - p.alpha) * self.rttvar + p.alpha * err;
            } else if p.version != RtoVersion::V1 {
                self.rttvar = (1.0 - p.gamma) * self.rttvar + p.gamma * err;
            }
        }
        let k = match p.version {
            RtoVersion::V1 => 4.0,
            RtoVersion::V2 => p.k,
            RtoVersion::Final if spurious => p.k_spurious,
            RtoVersion::Final => p.k,
        };
        self.rto = (self.srtt + k * self.rttvar).max(p.min_rto);
        self.samples = self.samples.saturating_add(1);
        self.rto
    }
}
