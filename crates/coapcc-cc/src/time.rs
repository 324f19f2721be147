//! Integer time: the only notion of time the algorithms know.
//!
//! Nothing in this crate reads a clock. Callers pass an [`Instant`] (nanoseconds since an
//! arbitrary epoch of their choosing: simulation start, a monotonic clock's origin, ...) and
//! receive timers as [`core::time::Duration`].

use core::ops::{Add, Sub};
use core::time::Duration;

/// A point in time, in integer nanoseconds since a caller-defined epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

impl Instant {
    /// The epoch.
    pub const ZERO: Instant = Instant(0);

    /// An instant `nanos` nanoseconds after the epoch.
    pub const fn from_nanos(nanos: u64) -> Self {
        Instant(nanos)
    }

    /// An instant `millis` milliseconds after the epoch.
    pub const fn from_millis(millis: u64) -> Self {
        Instant(millis * 1_000_000)
    }

    /// An instant `secs` seconds after the epoch (rounded to the nearest nanosecond).
    pub fn from_secs_f64(secs: f64) -> Self {
        Instant(secs_to_nanos(secs))
    }

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Seconds since the epoch, as a float.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }

    /// `self - earlier`, or zero if `earlier` is later than `self`.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(duration_nanos(d)))
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Saturating difference (never panics).
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_since(earlier)
    }
}

/// Whole nanoseconds of a duration, saturating at `u64::MAX`.
pub fn duration_nanos(d: Duration) -> u64 {
    let n = d.as_nanos();
    if n > u64::MAX as u128 {
        u64::MAX
    } else {
        n as u64
    }
}

/// Seconds (non-negative, finite) to the nearest nanosecond; negative or NaN maps to 0,
/// overflow saturates.
pub(crate) fn secs_to_nanos(secs: f64) -> u64 {
    let ns = secs * 1e9 + 0.5;
    if ns.is_nan() || ns <= 0.0 {
        0
    } else {
        ns as u64 // `as` saturates
    }
}

/// Seconds to a [`Duration`], rounded to the nearest nanosecond.
pub(crate) fn secs(secs: f64) -> Duration {
    Duration::from_nanos(secs_to_nanos(secs))
}

/// A [`Duration`] as float seconds: whole nanoseconds × 10^-9, the conversion of
/// [`Instant::as_secs_f64`]. The only duration-to-seconds conversion of the algorithms (CoCoA
/// used `as_secs + subsec_nanos / 10^9` before; the two differ by at most one ulp, far below
/// the nanosecond every armed timer is rounded to: `secs(to_secs(d)) == d`, see the tests).
#[inline]
pub(crate) fn to_secs(d: Duration) -> f64 {
    duration_nanos(d) as f64 * 1e-9
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Entropy, SplitMix64};

    /// The conversion loses nothing a timer can show: every duration up to 10^6 s comes back
    /// to the same nanosecond, and it agrees with `Duration::as_secs_f64` within one ulp.
    #[test]
    fn to_secs_round_trips_to_the_nanosecond() {
        let mut rng = SplitMix64::new(3);
        for i in 0..200_000u64 {
            let ns = if i < 100_000 { i * 1_000_000 } else { rng.next_u64() % 1_000_000_000_000_000 };
            let d = Duration::from_nanos(ns);
            assert_eq!(secs(to_secs(d)), d, "{ns}");
            let (a, b) = (to_secs(d), d.as_secs_f64());
            assert!(a == b || f64::from_bits(a.to_bits() + 1) == b || f64::from_bits(a.to_bits() - 1) == b, "{ns}");
            assert_eq!(to_secs(d), Instant::from_nanos(ns).as_secs_f64());
        }
    }
}
