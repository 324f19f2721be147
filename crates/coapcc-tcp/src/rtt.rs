//! The retransmission timer: RTT smoothing (RFC 6298, or Linux's `tcp_rtt_estimator`), the
//! minimum and maximum RTO, Karn's rule (the caller passes only samples from segments never
//! retransmitted) and exponential backoff with a choice of what ends it.

use crate::config::{RtoBackoffReset, RtoMinMode, RttEstimator, TcpConfig};

/// RTT estimator and RTO state.
#[derive(Clone, Debug)]
pub struct RtoEstimator {
    srtt: Option<f64>,
    /// RFC 6298 RTTVAR; with the Linux estimator its `mdev` (4 × the mean deviation).
    rttvar: f64,
    /// Linux: `mdev_max`, the largest `mdev` of the current round trip.
    mdev_max: f64,
    /// Linux: the RTO's variance term, at least `min_rto`, decayed once per round trip.
    linux_var: f64,
    /// Linux: `rtt_seq`, the round trip ends when `snd_una` passes it.
    rtt_seq: u64,
    base: f64,
    backoff: u32,
    min_rto: f64,
    max_rto: f64,
    mode: RtoMinMode,
    estimator: RttEstimator,
    reset: RtoBackoffReset,
}

impl RtoEstimator {
    /// Before any sample: RTO = `init_rto`.
    pub fn new(cfg: &TcpConfig) -> Self {
        RtoEstimator {
            srtt: None,
            rttvar: 0.0,
            mdev_max: 0.0,
            linux_var: 0.0,
            rtt_seq: 0,
            base: cfg.init_rto,
            backoff: 0,
            min_rto: cfg.min_rto,
            max_rto: cfg.max_rto,
            mode: cfg.rto_min_mode,
            estimator: cfg.rtt_estimator,
            reset: cfg.rto_backoff_reset,
        }
    }

    /// Feed one RTT sample (seconds), taken on an ACK that left `snd_una` while `snd_nxt` was
    /// the next sequence number to send. A valid sample also ends any backoff (Karn; Linux's
    /// `tcp_ack_update_rtt` zeroes `icsk_backoff` here and only here).
    ///
    /// RFC 6298 §2: the first sample sets SRTT = S, RTTVAR = S/2; later ones set RTTVAR to
    /// 3/4 RTTVAR plus 1/4 |SRTT - S| (first), then SRTT to 7/8 SRTT plus 1/8 S; RTO = SRTT +
    /// max(4 RTTVAR, min_rto) (`rto_min_mode = linux`) or max(min_rto, SRTT + 4 RTTVAR).
    ///
    /// Linux (`tcp_rtt_estimator`, `tcp_set_rto`): the same gains on `mdev` = 4 × RTTVAR, except
    /// that a sample below SRTT moves `mdev` with an eighth of the usual gain when it would grow
    /// it; the RTO's variance term is the largest `mdev` seen in the current round trip, never
    /// below `min_rto`, and it decays only once per round trip, by a quarter of its excess over
    /// that round trip's largest `mdev`. RTO = SRTT + that term.
    pub fn sample(&mut self, rtt: f64, snd_una: u64, snd_nxt: u64) {
        match self.estimator {
            RttEstimator::Rfc6298 => {
                match self.srtt {
                    None => {
                        self.srtt = Some(rtt);
                        self.rttvar = rtt / 2.0;
                    }
                    Some(s) => {
                        self.rttvar = 0.75 * self.rttvar + 0.25 * (s - rtt).abs();
                        self.srtt = Some(0.875 * s + 0.125 * rtt);
                    }
                }
                let srtt = self.srtt.unwrap_or(rtt);
                self.base = match self.mode {
                    RtoMinMode::Linux => srtt + (4.0 * self.rttvar).max(self.min_rto),
                    RtoMinMode::Rfc6298 => (srtt + 4.0 * self.rttvar).max(self.min_rto),
                };
            }
            RttEstimator::Linux => {
                match self.srtt {
                    None => {
                        self.srtt = Some(rtt);
                        self.rttvar = 2.0 * rtt;
                        self.linux_var = self.rttvar.max(self.min_rto);
                        self.mdev_max = self.linux_var;
                        self.rtt_seq = snd_nxt;
                    }
                    Some(s) => {
                        let err = rtt - s;
                        self.srtt = Some(s + err / 8.0);
                        let mut m = err.abs() - self.rttvar / 4.0;
                        if err < 0.0 && m > 0.0 {
                            m /= 8.0;
                        }
                        self.rttvar += m;
                        if self.rttvar > self.mdev_max {
                            self.mdev_max = self.rttvar;
                            if self.mdev_max > self.linux_var {
                                self.linux_var = self.mdev_max;
                            }
                        }
                        if snd_una > self.rtt_seq {
                            if self.mdev_max < self.linux_var {
                                self.linux_var -= (self.linux_var - self.mdev_max) / 4.0;
                            }
                            self.rtt_seq = snd_nxt;
                            self.mdev_max = self.min_rto;
                        }
                    }
                }
                self.base = self.srtt.unwrap_or(rtt) + self.linux_var;
            }
        }
        self.base = self.base.min(self.max_rto);
        self.backoff = 0;
    }

    /// An ACK acknowledged new data without giving an RTT sample (Karn: it also covered a
    /// retransmitted segment); `fresh` says whether it covered a segment never retransmitted.
    /// [`RtoBackoffReset::Sample`] (Linux) keeps the backoff; [`RtoBackoffReset::NewData`]
    /// ends it when `fresh`; [`RtoBackoffReset::Ack`] always ends it.
    pub fn new_data_acked(&mut self, fresh: bool) {
        match self.reset {
            RtoBackoffReset::Sample => {}
            RtoBackoffReset::NewData if !fresh => {}
            RtoBackoffReset::NewData | RtoBackoffReset::Ack => self.backoff = 0,
        }
    }

    /// Double the timer (a retransmission timeout happened).
    pub fn back_off(&mut self) {
        self.backoff = self.backoff.saturating_add(1);
    }

    /// The current RTO in seconds, backed off and capped at the maximum.
    pub fn rto(&self) -> f64 {
        let f = if self.backoff >= 63 { f64::INFINITY } else { (1u64 << self.backoff) as f64 };
        (self.base * f).min(self.max_rto)
    }

    /// The RTO without the backoff, seconds.
    pub fn base_rto(&self) -> f64 {
        self.base
    }

    /// Smoothed RTT, if sampled.
    pub fn srtt(&self) -> Option<f64> {
        self.srtt
    }

    /// Current backoff exponent.
    pub fn backoff(&self) -> u32 {
        self.backoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    fn rfc() -> TcpConfig {
        TcpConfig { rtt_estimator: RttEstimator::Rfc6298, ..TcpConfig::LINUX }
    }

    #[test]
    fn rfc6298_first_and_second_sample_linux_floor() {
        let mut e = RtoEstimator::new(&rfc());
        assert_eq!(e.rto(), 1.0);
        e.sample(0.6, 1, 1);
        // SRTT 0.6, RTTVAR 0.3 → 0.6 + max(1.2, 0.2)
        assert!(close(e.rto(), 1.8));
        e.sample(0.6, 1, 1);
        // RTTVAR = 0.225, SRTT = 0.6 → 0.6 + 0.9
        assert!(close(e.rto(), 1.5));
        for _ in 0..100 {
            e.sample(0.6, 1, 1);
        }
        // RTTVAR → 0: Linux keeps 200 ms above SRTT
        assert!((e.rto() - 0.8).abs() < 1e-6);
        let mut r = RtoEstimator::new(&TcpConfig { rto_min_mode: RtoMinMode::Rfc6298, ..rfc() });
        for _ in 0..100 {
            r.sample(0.6, 1, 1);
        }
        assert!((r.rto() - 0.6).abs() < 1e-6);
    }

    #[test]
    fn linux_estimator_tracks_the_round_trip_maximum_and_decays_once_per_round() {
        let mut e = RtoEstimator::new(&TcpConfig::LINUX);
        // First sample: mdev = 2 S, RTO = 3 S (tcp_rtt_estimator: "make sure rto = 3*rtt");
        // the round trip ends when snd_una passes 1000.
        e.sample(0.6, 1, 1000);
        assert!(close(e.rto(), 1.8));
        // The same RTT within the round: mdev falls to 0.9, the variance term keeps 1.2.
        e.sample(0.6, 500, 1500);
        assert!(close(e.rttvar, 0.9));
        assert!(close(e.rto(), 1.8));
        // The round ends (snd_una 1200 > 1000): its largest mdev was the first one (1.2), so
        // nothing decays; the next round ends at 2000 and tracks its own largest mdev.
        e.sample(0.6, 1200, 2000);
        assert!(close(e.rttvar, 0.675));
        assert!(close(e.rto(), 1.8));
        e.sample(0.6, 1500, 2500);
        assert!(close(e.mdev_max, 0.50625));
        // That round ends: the term decays by a quarter of its excess over 0.50625.
        e.sample(0.6, 2100, 3000);
        assert!(close(e.rto(), 0.6 + 1.2 - (1.2 - 0.50625) / 4.0));
        // A sample below SRTT grows mdev by an eighth of the usual step.
        let before = e.rttvar;
        e.sample(0.2, 2200, 3000);
        assert!(close(e.rttvar, before + (0.4 - before / 4.0) / 8.0));
        assert!(close(e.srtt().unwrap(), 0.6 - 0.05));
        // A steady RTT for many rounds: the term decays to min_rto, RTO = SRTT + 0.2.
        let mut una = 3000;
        for _ in 0..400 {
            una += 1000;
            e.sample(0.6, una, una + 500);
        }
        assert!((e.rto() - 0.8).abs() < 1e-3, "{}", e.rto());
    }

    #[test]
    fn backoff_doubles_caps_and_resets_on_sample() {
        let mut e = RtoEstimator::new(&TcpConfig { init_rto: 2.0, ..TcpConfig::LINUX });
        let mut seen = vec![];
        for _ in 0..8 {
            seen.push(e.rto());
            e.back_off();
        }
        assert_eq!(seen, vec![2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 120.0, 120.0]);
        e.sample(1.0, 1, 1);
        assert_eq!(e.backoff(), 0);
        assert!(close(e.rto(), 3.0));
        let mut r = RtoEstimator::new(&TcpConfig { init_rto: 2.0, ..rfc() });
        r.back_off();
        r.sample(1.0, 1, 1);
        assert_eq!(r.backoff(), 0);
    }

    #[test]
    fn what_ends_the_backoff_without_a_sample() {
        for (reset, fresh, stale) in
            [(RtoBackoffReset::Sample, 2, 2), (RtoBackoffReset::NewData, 0, 2), (RtoBackoffReset::Ack, 0, 0)]
        {
            let mut e = RtoEstimator::new(&TcpConfig { rto_backoff_reset: reset, ..TcpConfig::LINUX });
            e.back_off();
            e.back_off();
            let mut f = e.clone();
            f.new_data_acked(true);
            assert_eq!(f.backoff(), fresh, "{reset:?}");
            e.new_data_acked(false);
            assert_eq!(e.backoff(), stale, "{reset:?}");
        }
    }
}
