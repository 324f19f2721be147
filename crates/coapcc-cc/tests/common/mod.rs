//! Helpers shared by the integration tests: drive one exchange with explicit timestamps.
#![allow(dead_code)]

use coapcc_cc::{
    AckInfo, Algorithm, AlgorithmConfig, CongestionControl, Exchange, GiveUpReason, Instant, SplitMix64, TimeoutAction,
};
use core::time::Duration;

pub fn secs(s: f64) -> Duration {
    Duration::from_nanos((s * 1e9).round() as u64)
}

pub fn s(d: Duration) -> f64 {
    d.as_nanos() as f64 * 1e-9
}

pub fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[track_caller]
pub fn assert_close(a: f64, b: f64) {
    assert!(close(a, b), "{a} != {b}");
}

#[track_caller]
pub fn assert_seq(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "got {got:?}, want {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(close(*g, *w), "got {got:?}, want {want:?}");
    }
}

/// A test driver: one algorithm instance and a clock.
pub struct Driver {
    pub cc: Algorithm,
    pub now: Instant,
    pub rng: SplitMix64,
}

impl Driver {
    pub fn new(spec: &str) -> Self {
        let cfg = AlgorithmConfig::parse(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        Driver { cc: cfg.build(), now: Instant::ZERO, rng: SplitMix64::new(1) }
    }

    pub fn advance(&mut self, d: f64) {
        self.now = self.now + secs(d);
    }

    /// Run one exchange whose ACK arrives after `n` retransmissions, `rtt` seconds after the
    /// original transmission. Returns the timers armed.
    pub fn exchange(&mut self, n: u32, rtt: f64) -> Vec<f64> {
        let (timers, ex) = self.exchange_until(n);
        let t0 = ex.started();
        self.now = t0 + secs(rtt);
        self.cc.on_ack(self.now, &ex, &AckInfo::new(&ex, self.now));
        timers
    }

    /// Start an exchange and let `n` timers expire (n retransmissions). Returns the timers
    /// armed and the exchange; `self.now` is at the last retransmission.
    pub fn exchange_until(&mut self, n: u32) -> (Vec<f64>, Exchange) {
        let mut ex = self.cc.start_exchange(self.now, 0, &mut self.rng);
        let mut timers = vec![s(ex.timer())];
        for _ in 0..n {
            self.now = self.now + ex.timer();
            match self.cc.on_timeout(self.now, &mut ex) {
                TimeoutAction::Retransmit(t) => timers.push(s(t)),
                TimeoutAction::GiveUp => panic!("gave up early"),
            }
        }
        (timers, ex)
    }

    /// Run an exchange that is never acknowledged. Returns (timers, send times relative to
    /// start, give-up time relative to start).
    pub fn unanswered(&mut self) -> (Vec<f64>, Vec<f64>, f64) {
        let start = self.now;
        let mut ex = self.cc.start_exchange(self.now, 0, &mut self.rng);
        let mut timers = vec![s(ex.timer())];
        let mut sends = vec![0.0];
        loop {
            let mut armed = ex.timer();
            if let Some(&last) = timers.last() {
                armed = secs(last);
            }
            self.now = self.now + armed;
            match self.cc.on_timeout(self.now, &mut ex) {
                TimeoutAction::Retransmit(t) => {
                    timers.push(s(t));
                    sends.push(s(self.now - start));
                }
                TimeoutAction::GiveUp => {
                    self.cc.on_give_up(self.now, &ex, GiveUpReason::Timeout);
                    return (timers, sends, s(self.now - start));
                }
            }
        }
    }
}

impl Driver {
    /// The first `k + 1` timers the next exchange would arm if it were never acknowledged,
    /// computed on a copy so the driver's state is untouched.
    pub fn peek(&self, k: u32) -> Vec<f64> {
        let mut cc = self.cc.clone();
        let mut rng = SplitMix64::new(99);
        let mut now = self.now;
        let mut ex = cc.start_exchange(now, 0, &mut rng);
        let mut timers = vec![s(ex.timer())];
        for _ in 0..k {
            now = now + ex.timer();
            match cc.on_timeout(now, &mut ex) {
                TimeoutAction::Retransmit(t) => timers.push(s(t)),
                TimeoutAction::GiveUp => break,
            }
        }
        timers
    }

    /// An exchange with `n` retransmissions, acknowledged `rtt` after the original by a
    /// response naming copy `ordinal` (token/counter variants). Returns the timers armed.
    pub fn exchange_echo(&mut self, n: u32, rtt: f64, ordinal: u32) -> Vec<f64> {
        let start = self.now;
        let mut ex = self.cc.start_exchange(self.now, 0, &mut self.rng);
        let mut timers = vec![s(ex.timer())];
        let mut sends = vec![start];
        for _ in 0..n {
            self.now = self.now + ex.timer();
            match self.cc.on_timeout(self.now, &mut ex) {
                TimeoutAction::Retransmit(t) => timers.push(s(t)),
                TimeoutAction::GiveUp => panic!("gave up early"),
            }
            sends.push(self.now);
        }
        self.now = start + secs(rtt);
        let ack = AckInfo::with_copy(&ex, self.now, ordinal, sends[ordinal as usize]);
        self.cc.on_ack(self.now, &ex, &ack);
        timers
    }
}

/// The shared transmission parameters each preset sets for every algorithm (specification
/// §11), written as spec text: for an algorithm the preset's publication did not run, the
/// preset is exactly these over the algorithm's defaults.
pub const PRESET_SHARED: &[(&str, &str)] = &[
    ("rfc7252", "ack_timeout=2,ack_random_factor=1.5,max_retransmit=4,dither=uniform,wait_after_last=on"),
    ("helsinki2018", "ack_timeout=2,ack_random_factor=1.5,max_retransmit=20,dither=uniform,wait_after_last=on"),
    (
        "ancillotti-cooja",
        "ack_timeout=3,ack_random_factor=1.5,max_retransmit=4,dither=contiki-ticks,wait_after_last=on",
    ),
    ("makarem2021", "ack_timeout=2,ack_random_factor=1.5,max_retransmit=4,dither=uniform,wait_after_last=on"),
];
