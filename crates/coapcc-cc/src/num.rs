//! Arithmetic helpers the crate needs without `std` (no `floor`, `round`, `powi`, `abs` on
//! `f64` in `core`), each written once.

/// Absolute value.
#[inline]
pub(crate) fn fabs(x: f64) -> f64 {
    if x < 0.0 {
        -x
    } else {
        x
    }
}

/// Minimum with an optional cap.
#[inline]
pub(crate) fn cap(x: f64, cap: Option<f64>) -> f64 {
    match cap {
        Some(c) if x > c => c,
        _ => x,
    }
}

/// Java's `Math.round`: `floor(x + 0.5)`, for any sign (Californium's integer-millisecond
/// arithmetic). NaN gives 0; values beyond the `i64` range saturate.
#[inline]
pub(crate) fn jround(x: f64) -> f64 {
    let y = x + 0.5;
    let t = (y as i64) as f64; // truncates towards zero
    if t > y {
        t - 1.0
    } else {
        t
    }
}

/// Floor of a non-negative value, with a guard of 10^-6 against representation error (a
/// product meant to be a whole number of milliseconds, such as 1.5 × 2000, may land just
/// below it); 0 for values ≤ 0.
#[inline]
pub(crate) fn floor_pos(x: f64) -> f64 {
    if x <= 0.0 {
        0.0
    } else {
        ((x + 1e-6) as i64) as f64
    }
}

/// `2^n`, exact (powers of two are exact in `f64`); infinite from `n = 1024` on.
#[inline]
pub(crate) fn pow2(n: u32) -> f64 {
    if n < 1024 {
        f64::from_bits(u64::from(n + 1023) << 52)
    } else {
        f64::INFINITY
    }
}

/// `t / base`, or 1 when `base` is not positive (a dither factor).
#[inline]
pub(crate) fn ratio(t: f64, base: f64) -> f64 {
    if base > 0.0 {
        t / base
    } else {
        1.0
    }
}

/// Round a positive value to the nearest multiple of `tick` (ties away from zero).
#[inline]
pub(crate) fn round_to(x: f64, tick: f64) -> f64 {
    ((x / tick + 0.5) as u64) as f64 * tick
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jround_is_java_math_round() {
        // Java: Math.round(2.5) = 3, Math.round(-2.5) = -2, Math.round(-2.6) = -3.
        for (x, want) in [(2.5, 3.0), (2.4, 2.0), (0.0, 0.0), (-0.4, 0.0), (-2.5, -2.0), (-2.6, -3.0), (-0.6, -1.0)] {
            assert_eq!(jround(x), want, "{x}");
        }
        assert_eq!(jround(f64::NAN), 0.0);
    }

    #[test]
    fn pow2_is_exact_and_overflows_to_infinity() {
        let mut m = 1.0;
        for n in 0..1100 {
            assert_eq!(pow2(n), m, "{n}");
            m *= 2.0;
        }
        assert_eq!(pow2(u32::MAX), f64::INFINITY);
    }

    #[test]
    fn floor_pos_guards_representation_error() {
        assert_eq!(floor_pos(2999.9999999), 3000.0);
        assert_eq!(floor_pos(2999.5), 2999.0);
        assert_eq!(floor_pos(-1.0), 0.0);
    }
}
