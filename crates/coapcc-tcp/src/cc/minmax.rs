//! Kathleen Nichols' windowed running maximum, as Linux's `lib/win_minmax.c` computes it
//! (`minmax_running_max`, `minmax_subwin_update`), the filter behind BBR's bottleneck
//! bandwidth estimate since Linux 4.9.
//!
//! It keeps three samples (the best, and the best of later sub-windows) instead of every
//! sample of the window, so it is an estimate of the windowed maximum, not the exact one: the
//! best sample expires once more than `win` time units passed since it was taken, and the
//! second and third choices are refreshed when a quarter and a half of the window passed
//! without a new best.

/// One sample: its time (BBR: the round-trip count) and value.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sample {
    /// When it was taken (wrapping, as Linux's `u32`).
    pub t: u32,
    /// Its value.
    pub v: f64,
}

/// The three-sample windowed maximum.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MinMax {
    s: [Sample; 3],
}

impl MinMax {
    /// Forget every sample: all three become (`t`, `v`) (Linux `minmax_reset`).
    pub fn reset(&mut self, t: u32, v: f64) -> f64 {
        self.s = [Sample { t, v }; 3];
        v
    }

    /// The current estimate (Linux `minmax_get`).
    pub fn get(&self) -> f64 {
        self.s[0].v
    }

    /// The three samples, best first.
    pub fn samples(&self) -> [Sample; 3] {
        self.s
    }

    /// Take `v` measured at `t` into a window of `win` time units and return the new
    /// estimate (Linux `minmax_running_max`).
    pub fn running_max(&mut self, win: u32, t: u32, v: f64) -> f64 {
        let val = Sample { t, v };
        if v >= self.s[0].v || t.wrapping_sub(self.s[2].t) > win {
            return self.reset(t, v);
        }
        if v >= self.s[1].v {
            self.s[1] = val;
            self.s[2] = val;
        } else if v >= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }

    /// Linux `minmax_subwin_update`.
    fn subwin_update(&mut self, win: u32, val: Sample) -> f64 {
        let dt = val.t.wrapping_sub(self.s[0].t);
        if dt > win {
            // The whole window passed without a new best: the second choice becomes the
            // best, the third the second (twice, if the second is out of the window too).
            self.s = [self.s[1], self.s[2], val];
            if val.t.wrapping_sub(self.s[0].t) > win {
                self.s = [self.s[1], self.s[2], val];
            }
        } else if self.s[1].t == self.s[0].t && dt > win / 4 {
            // A quarter of the window without a new best: a second choice from the second
            // quarter.
            self.s[1] = val;
            self.s[2] = val;
        } else if self.s[2].t == self.s[1].t && dt > win / 2 {
            // Half the window: a third choice from the second half.
            self.s[2] = val;
        }
        self.s[0].v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_higher_sample_replaces_everything() {
        let mut m = MinMax::default();
        m.reset(0, 0.0);
        assert_eq!(m.running_max(10, 1, 5.0), 5.0);
        assert_eq!(m.running_max(10, 2, 7.0), 7.0);
        assert_eq!(m.samples(), [Sample { t: 2, v: 7.0 }; 3]);
    }

    #[test]
    fn the_best_lives_until_more_than_win_rounds_passed() {
        // Linux's window is inclusive: a best taken at round 1 is still the estimate at
        // round 11 (dt = 10 = win) and gives way at round 12.
        let mut m = MinMax::default();
        m.reset(0, 0.0);
        m.running_max(10, 1, 10.0);
        for t in 2..=11 {
            assert_eq!(m.running_max(10, t, 4.0), 10.0, "round {t}");
        }
        assert_eq!(m.running_max(10, 12, 4.0), 4.0);
    }

    #[test]
    fn sub_window_choices_are_an_estimate_not_the_exact_maximum() {
        // Hand-computed against lib/win_minmax.c: the best is 10 at round 0.
        let mut m = MinMax::default();
        m.reset(0, 10.0);
        // 6 at round 1 is below all three choices and no sub-window has passed: dropped.
        assert_eq!(m.running_max(10, 1, 6.0), 10.0);
        assert_eq!(m.samples(), [Sample { t: 0, v: 10.0 }; 3]);
        // A quarter of the window later (dt 3 > 10/4) 3 becomes the second and third choice,
        // and 5 replaces it at round 4.
        assert_eq!(m.running_max(10, 3, 3.0), 10.0);
        assert_eq!(m.samples()[1], Sample { t: 3, v: 3.0 });
        assert_eq!(m.running_max(10, 4, 5.0), 10.0);
        assert_eq!(m.samples()[1], Sample { t: 4, v: 5.0 });
        // Half the window later (dt 6 > 10/2) 2 becomes the third choice.
        assert_eq!(m.running_max(10, 6, 2.0), 10.0);
        assert_eq!(m.samples()[2], Sample { t: 6, v: 2.0 });
        // When the best expires (round 11, dt 11 > 10) the estimate is the second choice, 5,
        // where the exact maximum of rounds 1-11 is 6.
        assert_eq!(m.running_max(10, 11, 1.0), 5.0);
        assert_eq!(m.samples(), [Sample { t: 4, v: 5.0 }, Sample { t: 6, v: 2.0 }, Sample { t: 11, v: 1.0 }]);
    }
}
