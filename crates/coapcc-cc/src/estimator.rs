//! The RFC 6298 estimator, parameterised for every variant in scope (specification §3).

use crate::api::EstimatorSnapshot;
use crate::num::{fabs, jround};
use crate::time;

/// How the first sample initialises RTTVAR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FirstRttvar {
    /// `RTTVAR = R/2` (RFC 6298).
    Half,
    /// `RTTVAR = R/(2K)` (FASOR draft -00 text).
    HalfK,
}

/// Which of SRTT and RTTVAR is updated first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateOrder {
    /// RTTVAR first, with the old SRTT (RFC 6298).
    RttvarFirst,
    /// SRTT first; RTTVAR then uses the new SRTT (pCoCoA, Linux-style).
    SrttFirst,
}

/// Arithmetic of the estimator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounding {
    /// Real-valued.
    None,
    /// Integer milliseconds with Java `Math.round` (Eclipse Californium).
    JavaMillis,
}

/// Parameters of [`Estimator`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EstimatorParams {
    /// SRTT gain (RFC 6298: 1/8).
    pub alpha: f64,
    /// RTTVAR gain (RFC 6298: 1/4).
    pub beta: f64,
    /// Variance multiplier K (4; CoCoA's weak estimator: 1).
    pub k: f64,
    /// Clock granularity G, seconds (0 here; Californium: 0.1).
    pub g: f64,
    /// First-sample RTTVAR.
    pub first_rttvar: FirstRttvar,
    /// Lower clamp of the RTO, seconds.
    pub min_rto: Option<f64>,
    /// Upper clamp of the RTO, seconds.
    pub max_rto: Option<f64>,
    /// Update order.
    pub order: UpdateOrder,
    /// Arithmetic.
    pub rounding: Rounding,
}

impl EstimatorParams {
    /// RFC 6298 gains with the given K, G = 0, no clamps.
    pub const fn rfc6298(k: f64) -> Self {
        EstimatorParams {
            alpha: 0.125,
            beta: 0.25,
            k,
            g: 0.0,
            first_rttvar: FirstRttvar::Half,
            min_rto: None,
            max_rto: None,
            order: UpdateOrder::RttvarFirst,
            rounding: Rounding::None,
        }
    }

    /// Californium's "swapped" gains (SRTT 1/4, RTTVAR 1/8), real-valued, G = 0.
    pub const fn swapped(k: f64) -> Self {
        EstimatorParams { alpha: 0.25, beta: 0.125, ..EstimatorParams::rfc6298(k) }
    }

    /// Californium 3.x `Rto`: swapped gains, G = 100 ms, integer milliseconds.
    pub const fn californium(k: f64) -> Self {
        EstimatorParams { g: 0.1, rounding: Rounding::JavaMillis, ..EstimatorParams::swapped(k) }
    }
}

/// One smoothed-RTT estimator. All values in seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Estimator {
    /// Smoothed RTT.
    pub srtt: f64,
    /// RTT variation.
    pub rttvar: f64,
    /// `SRTT + max(G, K·RTTVAR)`, clamped.
    pub rto: f64,
    /// Samples since the last reset (0 = empty).
    pub samples: u32,
}

impl Estimator {
    /// An empty estimator.
    pub const fn new() -> Self {
        Estimator { srtt: 0.0, rttvar: 0.0, rto: 0.0, samples: 0 }
    }

    /// Has it taken a sample?
    pub fn is_empty(&self) -> bool {
        self.samples == 0
    }

    /// Feed sample `r` (seconds); returns the new RTO.
    pub fn sample(&mut self, p: &EstimatorParams, r: f64) -> f64 {
        match p.rounding {
            Rounding::None => self.sample_real(p, r),
            Rounding::JavaMillis => self.sample_millis(p, r),
        }
        self.samples = self.samples.saturating_add(1);
        self.rto
    }

    fn sample_real(&mut self, p: &EstimatorParams, r: f64) {
        if self.samples == 0 {
            self.srtt = r;
            self.rttvar = match p.first_rttvar {
                FirstRttvar::Half => r / 2.0,
                FirstRttvar::HalfK => r / (2.0 * p.k),
            };
        } else {
            match p.order {
                UpdateOrder::RttvarFirst => {
                    self.rttvar = (1.0 - p.beta) * self.rttvar + p.beta * fabs(self.srtt - r);
                    self.srtt = (1.0 - p.alpha) * self.srtt + p.alpha * r;
                }
                UpdateOrder::SrttFirst => {
                    self.srtt = (1.0 - p.alpha) * self.srtt + p.alpha * r;
                    self.rttvar = (1.0 - p.beta) * self.rttvar + p.beta * fabs(self.srtt - r);
                }
            }
        }
        self.rto = clamp(self.srtt + p.g.max(p.k * self.rttvar), p);
    }

    fn sample_millis(&mut self, p: &EstimatorParams, r: f64) {
        let r = jround(r * 1e3).max(1.0);
        let (mut srtt, mut rttvar) = (jround(self.srtt * 1e3), jround(self.rttvar * 1e3));
        if self.samples == 0 {
            srtt = r;
            rttvar = match p.first_rttvar {
                FirstRttvar::Half => ((r as i64) / 2) as f64,
                FirstRttvar::HalfK => ((r as i64) / (2 * p.k as i64).max(1)) as f64,
            };
        } else {
            match p.order {
                UpdateOrder::RttvarFirst => {
                    rttvar = jround((1.0 - p.beta) * rttvar + p.beta * fabs(srtt - r));
                    srtt = jround((1.0 - p.alpha) * srtt + p.alpha * r);
                }
                UpdateOrder::SrttFirst => {
                    srtt = jround((1.0 - p.alpha) * srtt + p.alpha * r);
                    rttvar = jround((1.0 - p.beta) * rttvar + p.beta * fabs(srtt - r));
                }
            }
        }
        let g = jround(p.g * 1e3);
        let rto = srtt + g.max(jround(p.k * rttvar));
        self.srtt = srtt / 1e3;
        self.rttvar = rttvar / 1e3;
        self.rto = clamp(rto / 1e3, p);
    }

    /// A snapshot for traces.
    pub fn snapshot(&self) -> Option<EstimatorSnapshot> {
        if self.samples == 0 {
            return None;
        }
        Some(EstimatorSnapshot {
            srtt: time::secs(self.srtt),
            rttvar: time::secs(self.rttvar),
            rto: time::secs(self.rto),
            samples: self.samples,
        })
    }
}

fn clamp(mut rto: f64, p: &EstimatorParams) -> f64 {
    if let Some(lo) = p.min_rto {
        rto = rto.max(lo);
    }
    if let Some(hi) = p.max_rto {
        rto = rto.min(hi);
    }
    rto
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        fabs(a - b) < 1e-9
    }

    fn run(p: EstimatorParams, samples: &[f64]) -> ([f64; 8], Estimator) {
        let mut e = Estimator::new();
        let mut out = [0.0; 8];
        for (i, r) in samples.iter().enumerate() {
            out[i] = e.sample(&p, *r);
        }
        (out, e)
    }

    #[test]
    fn e1_rfc6298() {
        let (_, e) = run(EstimatorParams::rfc6298(4.0), &[1.0, 2.0]);
        assert!(close(e.srtt, 1.125) && close(e.rttvar, 0.625) && close(e.rto, 3.625), "{e:?}");
    }

    #[test]
    fn e2_swapped_real_g100ms() {
        let p = EstimatorParams { g: 0.1, ..EstimatorParams::swapped(4.0) };
        let (_, e) = run(p, &[1.0, 2.0]);
        assert!(close(e.srtt, 1.25) && close(e.rttvar, 0.5625) && close(e.rto, 3.5), "{e:?}");
    }

    #[test]
    fn e3_californium_integer_ms() {
        let (rto, e) = run(EstimatorParams::californium(4.0), &[1.0, 2.0]);
        assert!(close(rto[0], 3.0) && close(rto[1], 3.502), "{rto:?}");
        assert!(close(e.srtt, 1.25) && close(e.rttvar, 0.563), "{e:?}");
    }

    #[test]
    fn e4_californium_sequence() {
        let (rto, _) = run(EstimatorParams::californium(4.0), &[1.0, 1.0, 1.0, 2.0]);
        let want = [3.0, 2.752, 2.532, 3.090];
        for i in 0..4 {
            assert!(close(rto[i], want[i]), "{i}: {} vs {}", rto[i], want[i]);
        }
    }

    #[test]
    fn e5_californium_converges_to_rtt_plus_g() {
        let p = EstimatorParams::californium(4.0);
        let mut e = Estimator::new();
        for _ in 0..200 {
            e.sample(&p, 1.0);
        }
        assert!(close(e.rto, 1.1), "{e:?}");
    }

    #[test]
    fn clamps_apply() {
        let p = EstimatorParams { max_rto: Some(60.0), min_rto: Some(1.0), ..EstimatorParams::rfc6298(4.0) };
        let mut e = Estimator::new();
        assert!(close(e.sample(&p, 100.0), 60.0));
        let mut e = Estimator::new();
        assert!(close(e.sample(&p, 0.1), 1.0));
    }
}
