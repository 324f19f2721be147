//! The backoff plateaus of Makarem (2021), chapter 6, on hand-computed timelines: which
//! retransmission of a backoff algorithm is the first to pass decides its level
//! 1/(RTT + Σ_{i≤j} b^i·T) (§7.6), and the loss rule decides j. These pin the mechanisms behind
//! claim M6 (docs/makarem.md, "M4 and M6 by mechanism").

use coapcc_cc::AlgorithmConfig;
use coapcc_studies::resbw::{run, SendPoint};
use coapcc_studies::{Dist, LossRule, ResBwConfig};

/// A message's copies: (offset from its original, s; lost).
type Copies = [(f64, bool)];

fn cc(spec: &str) -> AlgorithmConfig {
    AlgorithmConfig::parse(spec).unwrap()
}

/// A steady bandwidth and a constant 500 ms RTT.
fn steady(bw: f64, duration_s: f64, loss_rule: LossRule) -> ResBwConfig {
    ResBwConfig {
        resbw: Dist::Fixed { v: bw },
        rtt_ms: Dist::Fixed { v: 500.0 },
        duration_s,
        loss_rule,
        ..ResBwConfig::default()
    }
}

/// The sends after `from_s`, grouped into messages (a message starts with its original):
/// each as its copies' (offset from the original, lost).
fn cycles(trace: &[SendPoint], from_s: f64) -> Vec<Vec<(f64, bool)>> {
    let mut out: Vec<Vec<(f64, bool)>> = Vec::new();
    let mut t0 = 0.0;
    for p in trace.iter().filter(|p| p.t_s >= from_s) {
        if p.ordinal == 0 {
            t0 = p.t_s;
            out.push(Vec::new());
        }
        if let Some(m) = out.last_mut() {
            m.push((((p.t_s - t0) * 1e6).round() / 1e6, p.lost));
        }
    }
    out.pop(); // the last message may be cut by the end of the run
    out
}

/// pCoCoA without dithering (T_0 = RTO_init), RTT 500 ms, a steady 1.2 pkt/s (1/ResBW =
/// 0.833 s). Every sample is 0.5 s = SRTT, so Block 2 (R > SRTT) never runs and mdev_max keeps
/// its first value max(0.5/2, 0.25) = 0.25 s; RTTVAR decays by 7/8 per sample until
/// 4·RTTVAR < mdev_max, and from then on SRTO = 0.5 + 0.25 = 0.75 s, which RTO_init reaches
/// (δ = 0.5) long before 120 s. Below 1 s the backoff factor is 2.5. Each message's original
/// goes out at the ACK of the previous message, 0.5 s after the last delivered send, and is lost
/// (2 pkt/s). Then:
/// - `delivered`: the first retransmission, at +0.75 s, comes 1.25 s after the last delivery
///   (0.8 pkt/s <= 1.2) and passes: a message every 0.5 + 0.75 = 1.25 s, 0.8 pkt/s (j = 0);
/// - `rate-check`: the first retransmission is 0.75 s after the lost original (1.33 pkt/s >
///   1.2) and is lost; the second, 2.5 x 0.75 = 1.875 s later, passes: a message every
///   0.5 + 0.75 + 1.875 = 3.125 s, 0.32 pkt/s (j = 1, the case of the thesis's 0.3721 with its
///   dithered T = 1.25·RTO_init and RTO_init = 0.5 s).
///
/// Under `delivered` the first retransmission passes at every bandwidth >= 1/(RTT + T): pCoCoA
/// cannot sit on its j = 1 level above it, whatever the RTO (its RTO_init >= SRTT).
#[test]
fn pcocoa_j_is_the_loss_rules() {
    let spec = cc("pcocoa:preset=makarem2021,ack_random_factor=1");
    let want: [(LossRule, &Copies, f64); 2] = [
        (LossRule::Delivered, &[(0.0, true), (0.75, false)], 1.25),
        (LossRule::RateCheck, &[(0.0, true), (0.75, true), (2.625, false)], 3.125),
    ];
    for (rule, copies, period) in want {
        let mut tr = Vec::new();
        let o = run(&spec, &steady(1.2, 1200.0, rule), Some(&mut tr));
        let cs = cycles(&tr, 120.0);
        assert!(cs.len() > 300, "{rule:?}: {}", cs.len());
        for c in &cs {
            assert_eq!(c.as_slice(), copies, "{rule:?}");
        }
        // Consecutive originals one cycle apart (to the microsecond).
        let originals: Vec<f64> = tr.iter().filter(|p| p.t_s >= 120.0 && p.ordinal == 0).map(|p| p.t_s).collect();
        for w in originals.windows(2) {
            assert!((w[1] - w[0] - period).abs() < 1e-6, "{rule:?}: {}", w[1] - w[0]);
        }
        assert!((o.goodput_pps - 1.0 / period).abs() < 0.01, "{rule:?}: {}", o.goodput_pps);
    }
    // The j = 0 level holds at every steady bandwidth from 1/(RTT + T) = 0.8 pkt/s up.
    for bw in [0.8, 1.0, 1.6, 1.9] {
        let o = run(&spec, &steady(bw, 1200.0, LossRule::Delivered), None);
        assert!((o.goodput_pps - 0.8).abs() < 0.01, "{bw}: {}", o.goodput_pps);
    }
}

/// CoCoA-4-state's RTO is the strong estimator's only (Makarem §2.6.3): a sample comes only from
/// an ACK of an original. Once the bandwidth is below 1/RTT every original after the run's first
/// is lost, so the RTO stays at the first sample's 0.5 + 4 x 0.25 = 1.5 s. Without dithering:
/// original lost at t, the first retransmission at t + 1.5 passes under every rule (1.5 s since
/// the lost original, 2 s since the last delivery, both >= 1/ResBW = 1 s): a message every
/// 2 s. With the preset's dithering (mean 1.25 x 1.5 s) the level is 1/(0.5 + 1.875) = 0.4211
/// pkt/s: the value the thesis gives 4-state, by another route (its j = 1, b = 2 case with
/// RTO_init = RTT, 1/(0.5 + 1.25 x (0.5 + 2 x 0.5)), has the same denominator).
#[test]
fn four_state_keeps_its_first_rto() {
    for rule in [LossRule::Delivered, LossRule::RateCheck, LossRule::TokenBucket] {
        let mut tr = Vec::new();
        let o =
            run(&cc("cocoa-4state:preset=makarem2021,ack_random_factor=1"), &steady(1.0, 1200.0, rule), Some(&mut tr));
        let cs = cycles(&tr, 0.5);
        assert!(cs.len() > 500, "{rule:?}");
        for c in &cs {
            assert_eq!(c.as_slice(), &[(0.0, true), (1.5, false)], "{rule:?}");
        }
        assert!((o.goodput_pps - 0.5).abs() < 0.002, "{rule:?}: {}", o.goodput_pps);
        let o = run(&cc("cocoa-4state:preset=makarem2021"), &steady(1.0, 18_000.0, rule), None);
        assert!((o.goodput_pps - 1.0 / 2.375).abs() < 0.004, "{rule:?}: {}", o.goodput_pps);
    }
}
