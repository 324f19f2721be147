//! Random distributions of the studies, drawn from an injected [`Entropy`] source.
//!
//! The textual form (used on the command line and in experiment files) is `uniform:A,B`,
//! `normal:M,SD`, `fixed:V`, `pareto:SHAPE,SCALE` (scale = the minimum value) or `exp:MEAN`.

use core::fmt;

use coapcc_cc::rng::unit_f64;
use coapcc_cc::Entropy;
use serde::{Deserialize, Serialize};

/// How negative (or zero) draws of a distribution that should be positive are handled
/// (the thesis's Normal(4000, 2000) can go negative; it does not say what it did).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Floor {
    /// Draw again until the value is positive (default). Bounded: after 64 failed draws the
    /// value is clipped to the minimum.
    #[default]
    Resample,
    /// Clip to the minimum.
    Clip,
    /// Keep any value (for quantities that may be zero, such as a residual bandwidth).
    None,
}

/// A distribution of one scalar quantity.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Dist {
    /// Uniform on `[a, b]`.
    Uniform {
        /// Lower bound.
        a: f64,
        /// Upper bound.
        b: f64,
    },
    /// Normal with mean `mean` and standard deviation `sd`.
    Normal {
        /// Mean.
        mean: f64,
        /// Standard deviation.
        sd: f64,
    },
    /// Always `v`.
    Fixed {
        /// The value.
        v: f64,
    },
    /// Pareto with shape α and scale m (the minimum value): `m / U^(1/α)`.
    Pareto {
        /// Shape α.
        shape: f64,
        /// Scale m, the minimum value.
        scale: f64,
    },
    /// Exponential with mean `mean`.
    Exp {
        /// Mean.
        mean: f64,
    },
}

/// A distribution that cannot be parsed or has invalid parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DistError(pub String);

impl fmt::Display for DistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DistError {}

impl Dist {
    /// Parse `uniform:A,B`, `normal:M,SD`, `fixed:V`, `pareto:SHAPE,SCALE` or `exp:MEAN`.
    ///
    /// ```
    /// use coapcc_studies::Dist;
    /// assert_eq!(Dist::parse("uniform:0.6,1").unwrap(), Dist::Uniform { a: 0.6, b: 1.0 });
    /// assert!(Dist::parse("uniform:2,1").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Dist, DistError> {
        let err = |m: &str| {
            DistError(format!("invalid distribution {text:?}: {m} (valid: uniform:A,B, normal:M,SD, fixed:V, pareto:SHAPE,SCALE, exp:MEAN)"))
        };
        let (kind, args) = text.trim().split_once(':').ok_or_else(|| err("missing ':'"))?;
        let nums: Vec<f64> = args
            .split(',')
            .map(|s| s.trim().parse::<f64>().map_err(|_| err(&format!("{s:?} is not a number"))))
            .collect::<Result<_, _>>()?;
        let want = |n: usize| if nums.len() == n { Ok(()) } else { Err(err(&format!("expected {n} number(s)"))) };
        let d = match kind.trim().to_ascii_lowercase().as_str() {
            "uniform" => {
                want(2)?;
                Dist::Uniform { a: nums[0], b: nums[1] }
            }
            "normal" => {
                want(2)?;
                Dist::Normal { mean: nums[0], sd: nums[1] }
            }
            "fixed" => {
                want(1)?;
                Dist::Fixed { v: nums[0] }
            }
            "pareto" => {
                want(2)?;
                Dist::Pareto { shape: nums[0], scale: nums[1] }
            }
            "exp" => {
                want(1)?;
                Dist::Exp { mean: nums[0] }
            }
            _ => return Err(err("unknown kind")),
        };
        d.validate().map_err(|m| err(&m))?;
        Ok(d)
    }

    /// Check the parameters (finite, ordered, positive where needed).
    pub fn validate(&self) -> Result<(), String> {
        let finite = |xs: &[f64]| xs.iter().all(|x| x.is_finite());
        match *self {
            Dist::Uniform { a, b } if !finite(&[a, b]) || a > b => Err(format!("uniform needs A <= B, got {a}, {b}")),
            Dist::Normal { mean, sd } if !finite(&[mean, sd]) || sd < 0.0 => {
                Err(format!("normal needs SD >= 0, got {sd}"))
            }
            Dist::Fixed { v } if !v.is_finite() => Err("fixed needs a finite value".into()),
            Dist::Pareto { shape, scale } if !finite(&[shape, scale]) || shape <= 0.0 || scale <= 0.0 => {
                Err(format!("pareto needs SHAPE > 0 and SCALE > 0, got {shape}, {scale}"))
            }
            Dist::Exp { mean } if !mean.is_finite() || mean <= 0.0 => Err(format!("exp needs MEAN > 0, got {mean}")),
            _ => Ok(()),
        }
    }

    /// The lowest value the distribution is meant to give, for range checks: the lower
    /// bound of `uniform`, `fixed` and `pareto`, the mean of `normal` (its tail below is
    /// handled by the caller's floor rule), the smallest positive number for `exp`.
    pub fn lowest(&self) -> f64 {
        match *self {
            Dist::Uniform { a, .. } => a,
            Dist::Normal { mean, .. } => mean,
            Dist::Fixed { v } => v,
            Dist::Pareto { scale, .. } => scale,
            Dist::Exp { .. } => f64::MIN_POSITIVE,
        }
    }

    /// The mean of the distribution (Pareto: infinite for shape <= 1).
    pub fn mean(&self) -> f64 {
        match *self {
            Dist::Uniform { a, b } => (a + b) / 2.0,
            Dist::Normal { mean, .. } => mean,
            Dist::Fixed { v } => v,
            Dist::Pareto { shape, scale } if shape > 1.0 => shape * scale / (shape - 1.0),
            Dist::Pareto { .. } => f64::INFINITY,
            Dist::Exp { mean } => mean,
        }
    }

    /// One raw draw (may be negative for a Normal).
    pub fn sample_raw(&self, rng: &mut dyn Entropy) -> f64 {
        match *self {
            Dist::Uniform { a, b } => a + (b - a) * unit_f64(rng),
            Dist::Normal { mean, sd } => mean + sd * std_normal(rng),
            Dist::Fixed { v } => v,
            Dist::Pareto { shape, scale } => scale / libm::pow(1.0 - unit_f64(rng), 1.0 / shape),
            Dist::Exp { mean } => -mean * libm::log(1.0 - unit_f64(rng)),
        }
    }

    /// One draw, with values below `min` handled by `floor`.
    pub fn sample(&self, rng: &mut dyn Entropy, floor: Floor, min: f64) -> f64 {
        let mut x = self.sample_raw(rng);
        match floor {
            Floor::None => x,
            Floor::Clip => x.max(min),
            Floor::Resample => {
                let mut tries = 0;
                while x < min && tries < 64 {
                    x = self.sample_raw(rng);
                    tries += 1;
                }
                x.max(min)
            }
        }
    }
}

impl fmt::Display for Dist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Dist::Uniform { a, b } => write!(f, "uniform:{a},{b}"),
            Dist::Normal { mean, sd } => write!(f, "normal:{mean},{sd}"),
            Dist::Fixed { v } => write!(f, "fixed:{v}"),
            Dist::Pareto { shape, scale } => write!(f, "pareto:{shape},{scale}"),
            Dist::Exp { mean } => write!(f, "exp:{mean}"),
        }
    }
}

/// A standard normal draw (Box-Muller, one value per call so streams stay simple).
fn std_normal(rng: &mut dyn Entropy) -> f64 {
    let u1 = 1.0 - unit_f64(rng); // (0, 1]
    let u2 = unit_f64(rng);
    (-2.0 * libm::log(u1)).sqrt() * libm::cos(2.0 * core::f64::consts::PI * u2)
}

/// `x` for a message: plain below 10^9, else in scientific notation (never 300 digits).
pub fn show(x: f64) -> String {
    if x.is_finite() && x.abs() < 1e9 {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coapcc_cc::SplitMix64;

    fn moments(d: Dist, n: usize) -> (f64, f64) {
        let mut rng = SplitMix64::new(3);
        let xs: Vec<f64> = (0..n).map(|_| d.sample_raw(&mut rng)).collect();
        let m = xs.iter().sum::<f64>() / n as f64;
        let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64;
        (m, v.sqrt())
    }

    #[test]
    fn parse_and_display_round_trip() {
        for t in ["uniform:100,300", "normal:3000,100", "fixed:1000", "pareto:3,1000", "exp:5"] {
            assert_eq!(Dist::parse(t).unwrap().to_string(), t);
        }
        for bad in ["uniform:1", "normal:1,-1", "gamma:1,2", "fixed", "exp:0", "pareto:0,1", "uniform:a,b"] {
            assert!(Dist::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sample_moments_match() {
        let (m, s) = moments(Dist::Normal { mean: 4000.0, sd: 200.0 }, 200_000);
        assert!((m - 4000.0).abs() < 2.0 && (s - 200.0).abs() < 2.0, "{m} {s}");
        let (m, s) = moments(Dist::Uniform { a: 100.0, b: 300.0 }, 200_000);
        assert!((m - 200.0).abs() < 0.5 && (s - 200.0 / 12f64.sqrt()).abs() < 0.5, "{m} {s}");
        let (m, _) = moments(Dist::Exp { mean: 5.0 }, 200_000);
        assert!((m - 5.0).abs() < 0.05, "{m}");
        // Pareto(5, 1000): mean 1250; every value >= the scale.
        let d = Dist::Pareto { shape: 5.0, scale: 1000.0 };
        let (m, _) = moments(d, 400_000);
        assert!((m - 1250.0).abs() < 5.0, "{m}");
        let mut rng = SplitMix64::new(9);
        assert!((0..10_000).all(|_| d.sample_raw(&mut rng) >= 1000.0));
    }

    #[test]
    fn floor_resamples_negative_normals() {
        let d = Dist::Normal { mean: 4000.0, sd: 2000.0 };
        let mut rng = SplitMix64::new(1);
        let xs: Vec<f64> = (0..50_000).map(|_| d.sample(&mut rng, Floor::Resample, 1.0)).collect();
        assert!(xs.iter().all(|&x| x >= 1.0));
        let mut rng = SplitMix64::new(1);
        let raw_neg = (0..50_000).filter(|_| d.sample_raw(&mut rng) < 0.0).count();
        assert!(raw_neg > 500, "Normal(4000, 2000) should go negative sometimes: {raw_neg}");
    }
}
