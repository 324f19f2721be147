//! The retransmission timer: RFC 6298 smoothing with Linux's minimum and maximum, Karn's rule
//! (the caller passes only samples from segments never retransmitted) and exponential backoff.

use crate::config::{RtoBackoffReset, RtoMinMode, TcpConfig};

/// RTT estimator and RTO state.
#[derive(Clone, Debug)]
pub struct RtoEstimator {
    srtt: Option<f64>,
    rttvar: f64,
    base: f64,
    backoff: u32,
    min_rto: f64,
    max_rto: f64,
    mode: RtoMinMode,
    reset: RtoBackoffReset,
}

impl RtoEstimator {
    /// Before any sample: RTO = `init_rto`.
    pub fn new(cfg: &TcpConfig) -> Self {
        RtoEstimator {
            srtt: None,
            rttvar: 0.0,
            base: cfg.init_rto,
            backoff: 0,
            min_rto: cfg.min_rto,
            max_rto: cfg.max_rto,
            mode: cfg.rto_min_mode,
            reset: cfg.rto_backoff_reset,
        }
    }

    /// Feed one RTT sample (seconds). RFC 6298 §2: the first sets SRTT = S, RTTVAR = S/2;
    /// later ones RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - S| (first), then SRTT = 7/8 SRTT + 1/8 S.
    /// A valid sample also ends any backoff (Karn).
    pub fn sample(&mut self, rtt: f64) {
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
        }
        .min(self.max_rto);
        self.backoff = 0;
    }

    /// An ACK acknowledged new data without giving an RTT sample (Karn: it covered a
    /// retransmitted segment). With [`RtoBackoffReset::Sample`] (Linux) the backoff stays; with
    /// [`RtoBackoffReset::Ack`] it ends.
    pub fn new_data_acked(&mut self) {
        if self.reset == RtoBackoffReset::Ack {
            self.backoff = 0;
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

    #[test]
    fn rfc6298_first_and_second_sample_linux_floor() {
        let mut e = RtoEstimator::new(&TcpConfig::LINUX);
        assert_eq!(e.rto(), 1.0);
        e.sample(0.6);
        // SRTT 0.6, RTTVAR 0.3 → 0.6 + max(1.2, 0.2)
        assert!((e.rto() - 1.8).abs() < 1e-12);
        e.sample(0.6);
        // RTTVAR = 0.225, SRTT = 0.6 → 0.6 + 0.9
        assert!((e.rto() - 1.5).abs() < 1e-12);
        for _ in 0..100 {
            e.sample(0.6);
        }
        // RTTVAR → 0: Linux keeps 200 ms above SRTT
        assert!((e.rto() - 0.8).abs() < 1e-6);
        let mut r = RtoEstimator::new(&TcpConfig { rto_min_mode: RtoMinMode::Rfc6298, ..TcpConfig::LINUX });
        for _ in 0..100 {
            r.sample(0.6);
        }
        assert!((r.rto() - 0.6).abs() < 1e-6);
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
        e.sample(1.0);
        assert_eq!(e.backoff(), 0);
        assert!((e.rto() - 3.0).abs() < 1e-12);
    }
}
