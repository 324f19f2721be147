//! Replaying an RTT scenario through an RTO algorithm (Makarem 2021, chapter 5).
//!
//! No packet is ever lost: every message is acknowledged one scenario RTT after its original
//! transmission. The algorithm only decides when it *thinks* the message is lost, so every
//! retransmission is spurious. The rules:
//!
//! - Messages are sent back to back (NSTART = 1): the next one starts when the previous one is
//!   acknowledged (or, if MAX_RETRANSMIT retransmissions all fire before its ACK, when the
//!   algorithm gives up).
//! - Each message takes the next scenario value as its RTT. A timer that expires before the
//!   ACK (timer < RTT, strictly) sends a spurious retransmission; retransmissions do not
//!   consume scenario values, and the ACK that completes the message is the original's, at
//!   `start + RTT` (any copy sent later would be answered later). Algorithms that identify the
//!   acknowledged copy are told it is copy 0 with that RTT.
//! - RMSE(RTO, RTT) compares, message by message, the timer armed with the original
//!   transmission (the RTO in force when it was sent) with the message's RTT.

use core::time::Duration;

use coapcc_cc::{AckInfo, AlgorithmConfig, CongestionControl, GiveUpReason, Instant, SplitMix64, TimeoutAction};
use serde::Serialize;

/// Result of one scenario through one algorithm.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RttOutcome {
    /// Messages replayed (scenario values).
    pub messages: u64,
    /// Transmissions, originals and retransmissions.
    pub transmissions: u64,
    /// Spurious retransmissions (every retransmission here).
    pub spurious: u64,
    /// Messages whose every retransmission fired before the ACK (the algorithm gave up).
    pub gave_up: u64,
    /// sqrt(mean over messages of (RTO - RTT)^2), ms.
    pub rmse_ms: f64,
    /// Mean RTO at the original transmission, ms.
    pub mean_rto_ms: f64,
    /// Mean RTT, ms.
    pub mean_rtt_ms: f64,
    /// Simulated time, s.
    pub duration_s: f64,
}

/// One message of a traced replay (for RTO-vs-RTT plots).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RttPoint {
    /// Message index.
    pub i: u64,
    /// Time of the original transmission, s.
    pub t_s: f64,
    /// The message's RTT, ms.
    pub rtt_ms: f64,
    /// The timer armed with the original transmission, ms.
    pub rto_ms: f64,
    /// Retransmissions of this message (all spurious).
    pub retransmissions: u32,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Replay `rtts_ms` through a fresh instance of `cfg`; `seed` drives the algorithm's dithering.
/// With `trace`, one [`RttPoint`] per message is pushed.
pub fn replay(cfg: &AlgorithmConfig, rtts_ms: &[f64], seed: u64, mut trace: Option<&mut Vec<RttPoint>>) -> RttOutcome {
    let mut cc = cfg.build();
    let mut rng = SplitMix64::stream(seed, 0xCC);
    let copy_id = cc.uses_copy_id();
    let mut now = Instant::ZERO;
    cc.reset(now);
    let mut out = RttOutcome::default();
    let mut sq = 0.0;
    let mut sum_rto = 0.0;
    let mut sum_rtt = 0.0;
    for (i, &rtt_ms) in rtts_ms.iter().enumerate() {
        let start = cc.earliest_start(now).max(now);
        let rtt = Duration::from_nanos((rtt_ms * 1e6).round().max(1.0) as u64);
        let ack_at = start + rtt;
        let mut ex = cc.start_exchange(start, 0, &mut rng);
        out.transmissions += 1;
        let rto_ms = ms(ex.timer());
        sq += (rto_ms - rtt_ms) * (rto_ms - rtt_ms);
        sum_rto += rto_ms;
        sum_rtt += rtt_ms;
        let mut fire = start + ex.timer();
        let mut gave_up = false;
        while fire < ack_at {
            match cc.on_timeout(fire, &mut ex) {
                TimeoutAction::Retransmit(t) => {
                    out.transmissions += 1;
                    out.spurious += 1;
                    fire = fire + t;
                }
                TimeoutAction::GiveUp => {
                    cc.on_give_up(fire, &ex, GiveUpReason::Timeout);
                    gave_up = true;
                    break;
                }
            }
        }
        if gave_up {
            out.gave_up += 1;
            now = fire;
        } else {
            let info = if copy_id { AckInfo::with_copy(&ex, ack_at, 0, start) } else { AckInfo::new(&ex, ack_at) };
            cc.on_ack(ack_at, &ex, &info);
            now = ack_at;
        }
        if let Some(tr) = trace.as_deref_mut() {
            tr.push(RttPoint {
                i: i as u64,
                t_s: start.as_secs_f64(),
                rtt_ms,
                rto_ms,
                retransmissions: ex.retransmissions(),
            });
        }
    }
    let n = rtts_ms.len().max(1) as f64;
    out.messages = rtts_ms.len() as u64;
    out.rmse_ms = (sq / n).sqrt();
    out.mean_rto_ms = sum_rto / n;
    out.mean_rtt_ms = sum_rtt / n;
    out.duration_s = now.as_secs_f64();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_rtt_below_the_rto_is_never_spurious() {
        // Default CoAP: T_0 in [2, 3] s; an RTT of 1 s is always answered in time.
        let cfg = AlgorithmConfig::parse("default").unwrap();
        let o = replay(&cfg, &[1000.0; 500], 1, None);
        assert_eq!((o.messages, o.transmissions, o.spurious, o.gave_up), (500, 500, 0, 0));
        // RMSE of a U[2, 3] s timer against 1 s: sqrt(E[(T - 1)^2]) = sqrt(1.5^2 + 1/12) s.
        let expect = (2.25f64 + 1.0 / 12.0).sqrt() * 1e3;
        assert!((o.rmse_ms - expect).abs() < 30.0, "{} vs {expect}", o.rmse_ms);
        assert!((o.duration_s - 500.0).abs() < 1e-6);
    }

    #[test]
    fn long_rtt_counts_spurious_retransmissions() {
        // ack_random_factor = 1: T_0 = 2 s exactly, doubling: fires at 2, 6 (2 + 4) s; an
        // RTT of 7 s sees two spurious retransmissions per message.
        let cfg = AlgorithmConfig::parse("default:ack_random_factor=1").unwrap();
        let mut tr = Vec::new();
        let o = replay(&cfg, &[7000.0; 10], 1, Some(&mut tr));
        assert_eq!((o.transmissions, o.spurious, o.gave_up), (30, 20, 0));
        assert_eq!(tr.len(), 10);
        assert!(tr.iter().all(|p| p.retransmissions == 2 && p.rto_ms == 2000.0));
        assert!((tr[1].t_s - 7.0).abs() < 1e-9);
        // An RTT beyond every timer (2 + 4 + 8 + 16 + 32 = 62 s): the message is given up.
        let o = replay(&cfg, &[70_000.0], 1, None);
        assert_eq!((o.transmissions, o.spurious, o.gave_up), (5, 4, 1));
        assert!((o.duration_s - 62.0).abs() < 1e-9);
    }

    #[test]
    fn adaptive_estimators_track_the_rtt() {
        // CoCoA learns a 300 ms RTT: its RMSE is far below Default CoAP's.
        let rtts = [300.0; 2000];
        let cocoa = replay(&AlgorithmConfig::parse("cocoa").unwrap(), &rtts, 1, None);
        let default = replay(&AlgorithmConfig::parse("default").unwrap(), &rtts, 1, None);
        assert_eq!(cocoa.spurious, 0);
        assert!(cocoa.rmse_ms < default.rmse_ms / 2.0, "{} vs {}", cocoa.rmse_ms, default.rmse_ms);
    }

    #[test]
    fn deterministic() {
        let cfg = AlgorithmConfig::parse("cocoa-plus").unwrap();
        let rtts: Vec<f64> = (0..3000).map(|i| if (i / 100) % 2 == 0 { 200.0 } else { 3000.0 }).collect();
        assert_eq!(replay(&cfg, &rtts, 5, None), replay(&cfg, &rtts, 5, None));
    }
}
