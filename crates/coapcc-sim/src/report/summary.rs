//! [`Summary`]: the one summary of a sample in every report (its size, mean and quantiles).

use serde::Serialize;

/// Order statistics of a sample (AMBIG-T10: linear interpolation between closest ranks), its
/// size and mean: the one summary of every report.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Number of values.
    pub count: usize,
    /// Mean (the sum taken in increasing order).
    pub mean: f64,
    /// Smallest value.
    pub min: f64,
    /// 10th percentile.
    pub p10: f64,
    /// 25th percentile.
    pub p25: f64,
    /// Median.
    pub median: f64,
    /// 75th percentile.
    pub p75: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// Largest value.
    pub max: f64,
}

impl Summary {
    /// Summary of `values` (any order); `None` if empty.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let q = |p| percentile_sorted(&v, p);
        Some(Summary {
            count: v.len(),
            mean: v.iter().sum::<f64>() / v.len() as f64,
            min: v[0],
            p10: q(0.10),
            p25: q(0.25),
            median: q(0.5),
            p75: q(0.75),
            p90: q(0.90),
            p95: q(0.95),
            max: v[v.len() - 1],
        })
    }
}

/// A summary as its quantiles only (`min` to `max`): the form of the flow completion times in
/// every report since the first.
pub(super) fn quantiles_only<S: serde::Serializer>(s: &Option<Summary>, out: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Quantiles {
        min: f64,
        p10: f64,
        p25: f64,
        median: f64,
        p75: f64,
        p90: f64,
        p95: f64,
        max: f64,
    }
    s.map(|s| Quantiles {
        min: s.min,
        p10: s.p10,
        p25: s.p25,
        median: s.median,
        p75: s.p75,
        p90: s.p90,
        p95: s.p95,
        max: s.max,
    })
    .serialize(out)
}

/// Percentile `p` ∈ [0, 1] of sorted, non-empty data by linear interpolation between closest
/// ranks (rank h = (n − 1)·p; numpy's default, R type 7).
pub fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    assert!(n > 0);
    let h = (n - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}
