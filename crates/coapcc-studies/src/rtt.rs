//! Replaying an RTT scenario through an RTO algorithm (Makarem 2021, chapter 5), on the one
//! CoAP reliability layer (`coapcc_proto::endpoint::lifecycle`: NSTART admission,
//! [`ConExchange`], its [`ReliabilityOptions`]).
//!
//! No packet is ever lost: every transmission is acknowledged one RTT after it is sent. The
//! algorithm only decides when it *thinks* the message is lost, so every retransmission is
//! spurious. The rules:
//!
//! - Timers ([`RetransmitTimer`](coapcc_proto::endpoint::lifecycle::RetransmitTimer)): the
//!   thesis's chapter 5 runs are "RTO only" (loss detection, not counteraction), so by default
//!   every copy waits the algorithm's undithered RTO estimate; `Algorithm` keeps each
//!   algorithm's dithering and backoff.
//! - One sender, NSTART = 1: the next message is admitted ([`Nstart`]) when the previous one
//!   is acknowledged or given up ([`ConExchange::expire`] after MAX_RETRANSMIT spurious
//!   retransmissions).
//! - Scenario values ([`RttConsumption`], the thesis's "each transmission takes the next RTT
//!   value"): [`RttConsumption::PerMessage`] (default, M-AMBIG-19) gives each message the next
//!   value and every copy of it that RTT; [`RttConsumption::PerTransmission`] gives every
//!   transmission, retransmissions included, the next value.
//! - The first ACK to arrive completes the message ([`ConExchange::acknowledge_with`]); a timer
//!   expiring strictly before it sends a (spurious) retransmission. The ACK identifies the copy
//!   it answers for algorithms that use copy identification, and for every algorithm under
//!   [`AckRtt::FromCopy`](coapcc_proto::endpoint::lifecycle::AckRtt::FromCopy).
//! - An ACK that arrives after its message was given up is a *late ACK*: under
//!   [`LateAck::Sample`](coapcc_proto::endpoint::lifecycle::LateAck::Sample) the algorithm
//!   still takes it ([`ConExchange::acknowledge_late`]), at its arrival, possibly while the
//!   next message is in flight.
//!
//! Metrics: spurious retransmissions (the thesis's definition: a retransmission fired while
//! the ACK was still on its way, i.e. the RTO that fired was smaller than the transmission's
//! RTT; here every retransmission), messages with at least one, give-ups, and RMSE(RTO, RTT):
//! per scenario value, the timer armed with its transmission (the RTO in force when it was
//! sent, `rmse_rto_point = at_send`) against its RTT.

use core::time::Duration;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use coapcc_cc::{AlgorithmConfig, CongestionControl, Instant, SplitMix64};
use coapcc_proto::endpoint::lifecycle::{Admission, ConExchange, Expiry, Nstart, ReliabilityOptions, Waiting};
use serde::Serialize;

/// Which transmissions take a scenario value (M-AMBIG-19).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RttConsumption {
    /// Each message takes the next value; all its copies have that RTT (the first ACK is the
    /// original's).
    #[default]
    PerMessage,
    /// Each transmission, retransmissions included, takes the next value; the run ends when
    /// the values do.
    PerTransmission,
}

/// Names of [`RttConsumption`] values.
pub const RTT_CONSUMPTIONS: &[(&str, RttConsumption)] =
    &[("per-message", RttConsumption::PerMessage), ("per-transmission", RttConsumption::PerTransmission)];

/// How a scenario is replayed: the reliability layer's options and the scenario consumption.
/// The default is the thesis's simulator ([`ReliabilityOptions::MAKAREM2021_RTO_ONLY`], per
/// message).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReplayOptions {
    /// Late ACKs and the RTT an ACK reports.
    pub reliability: ReliabilityOptions,
    /// Which transmissions take a scenario value.
    pub consumption: RttConsumption,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions { reliability: ReliabilityOptions::MAKAREM2021_RTO_ONLY, consumption: RttConsumption::PerMessage }
    }
}

/// Result of one scenario through one algorithm.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RttOutcome {
    /// Messages replayed.
    pub messages: u64,
    /// Transmissions, originals and retransmissions.
    pub transmissions: u64,
    /// Spurious retransmissions (every retransmission here).
    pub spurious: u64,
    /// Messages with at least one spurious retransmission.
    pub spurious_messages: u64,
    /// Messages whose every retransmission fired before the ACK (the algorithm gave up).
    pub gave_up: u64,
    /// ACKs the algorithm took after their message was given up.
    pub late_acks: u64,
    /// sqrt(mean over scenario values of (RTO - RTT)^2), ms.
    pub rmse_ms: f64,
    /// Mean RTO at the transmission that took a value, ms.
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
    /// The message's RTT (of its original transmission), ms.
    pub rtt_ms: f64,
    /// The timer armed with the original transmission, ms.
    pub rto_ms: f64,
    /// Retransmissions of this message (all spurious).
    pub retransmissions: u32,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn dur(rtt_ms: f64) -> Duration {
    Duration::from_nanos((rtt_ms * 1e6).round().max(1.0) as u64)
}

/// The earliest ACK on its way for the message in flight: (arrival, copy, its send time).
type Pending = Option<(Instant, u32, Instant)>;

/// A late ACK: (arrival, insertion order) for the heap, and the given-up exchange with the copy.
type Late = Reverse<(Instant, u64, LateAck)>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct LateAck {
    copy: u32,
    sent: Instant,
    /// Index into the replay's given-up exchanges.
    ex: usize,
}

/// Replay `rtts_ms` through a fresh instance of `cfg` under `opts`; `seed` drives the
/// algorithm's dithering. With `trace`, one [`RttPoint`] per message is pushed.
pub fn replay(
    cfg: &AlgorithmConfig,
    rtts_ms: &[f64],
    seed: u64,
    opts: &ReplayOptions,
    mut trace: Option<&mut Vec<RttPoint>>,
) -> RttOutcome {
    let mut cc = cfg.build();
    let mut rng = SplitMix64::stream(seed, 0xCC);
    let rel = opts.reliability;
    let copy_id = rel.needs_copy(cc.uses_copy_id());
    let per_tx = opts.consumption == RttConsumption::PerTransmission;
    let mut slots = Nstart::new(Waiting::default());
    let mut now = Instant::ZERO;
    cc.reset(now);
    let mut out = RttOutcome::default();
    let (mut sq, mut sum_rto, mut sum_rtt, mut points) = (0.0, 0.0, 0.0, 0u64);
    let mut late: BinaryHeap<Late> = BinaryHeap::new();
    let mut given_up: Vec<ConExchange> = Vec::new();
    let mut late_seq = 0u64;
    let mut next = 0usize; // next scenario value
    let mut msg = 0u64;
    // A late ACK at or before `t` is taken now (before a timer or an ACK at the same instant).
    let take_late = |cc: &mut coapcc_cc::Algorithm,
                     t: Instant,
                     late: &mut BinaryHeap<Late>,
                     given_up: &[ConExchange],
                     out: &mut RttOutcome| {
        while let Some(Reverse((at, _, l))) = late.peek().copied() {
            if at > t {
                break;
            }
            late.pop();
            let echoed = copy_id.then_some((l.copy, l.sent));
            if given_up[l.ex].acknowledge_late(cc, at, echoed, &rel).is_some() {
                out.late_acks += 1;
            }
        }
    };
    while next < rtts_ms.len() {
        // Admission: NSTART = 1 and the algorithm's pacing.
        slots.push_back(());
        let in_flight = loop {
            match slots.poll_start(1, &cc, now) {
                Admission::Start { in_flight, .. } => break in_flight,
                Admission::WaitUntil(t) => {
                    take_late(&mut cc, t, &mut late, &given_up, &mut out);
                    now = t;
                }
                Admission::Idle => unreachable!("the previous message released its slot"),
            }
        };
        take_late(&mut cc, now, &mut late, &given_up, &mut out);
        let start = now;
        let mut x = ConExchange::start_with(&mut cc, start, in_flight, &mut rng, &rel);
        let rtt0 = rtts_ms[next];
        next += 1;
        out.transmissions += 1;
        let rto0 = ms(x.armed_timer(&rel));
        sq += (rto0 - rtt0) * (rto0 - rtt0);
        sum_rto += rto0;
        sum_rtt += rtt0;
        points += 1;
        let mut ack: Pending = Some((start + dur(rtt0), 0, start));
        let mut done = false;
        while !done {
            let fire = x.deadline();
            let (at, copy, sent) = ack.expect("a lossless replay always has an ACK on its way");
            take_late(&mut cc, at.min(fire), &mut late, &given_up, &mut out);
            if at <= fire {
                let echoed = copy_id.then_some((copy, sent));
                x.acknowledge_with(&mut cc, at, echoed, &rel);
                now = at;
                done = true;
                continue;
            }
            match x.expire_with(&mut cc, fire, &rel) {
                Expiry::Retransmit { ordinal, timer, .. } => {
                    out.transmissions += 1;
                    out.spurious += 1;
                    if per_tx {
                        let Some(&r) = rtts_ms.get(next) else {
                            // The scenario's values are used up: the run ends here.
                            now = fire;
                            break;
                        };
                        next += 1;
                        let t = ms(timer);
                        sq += (t - r) * (t - r);
                        sum_rto += t;
                        sum_rtt += r;
                        points += 1;
                        let a = fire + dur(r);
                        if a < at {
                            ack = Some((a, ordinal, fire));
                        }
                    }
                }
                Expiry::GiveUp => {
                    out.gave_up += 1;
                    given_up.push(x);
                    late_seq += 1;
                    late.push(Reverse((at, late_seq, LateAck { copy, sent, ex: given_up.len() - 1 })));
                    now = fire;
                    done = true;
                }
            }
        }
        slots.release();
        if x.retransmissions() > 0 {
            out.spurious_messages += 1;
        }
        if let Some(tr) = trace.as_deref_mut() {
            tr.push(RttPoint {
                i: msg,
                t_s: start.as_secs_f64(),
                rtt_ms: rtt0,
                rto_ms: rto0,
                retransmissions: x.retransmissions(),
            });
        }
        msg += 1;
        if !done {
            break;
        }
    }
    let n = points.max(1) as f64;
    out.messages = msg;
    out.rmse_ms = (sq / n).sqrt();
    out.mean_rto_ms = sum_rto / n;
    out.mean_rtt_ms = sum_rtt / n;
    out.duration_s = now.as_secs_f64();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use coapcc_proto::endpoint::lifecycle::{AckRtt, LateAck, RetransmitTimer};

    fn rfc() -> ReplayOptions {
        ReplayOptions { reliability: ReliabilityOptions::default(), consumption: RttConsumption::PerMessage }
    }

    /// The thesis's replay with each algorithm's own timers (dithering, backoff).
    fn algo() -> ReplayOptions {
        ReplayOptions { reliability: ReliabilityOptions::MAKAREM2021, ..ReplayOptions::default() }
    }

    #[test]
    fn constant_rtt_below_the_rto_is_never_spurious() {
        // Default CoAP: T_0 in [2, 3] s; an RTT of 1 s is always answered in time.
        let cfg = AlgorithmConfig::parse("default").unwrap();
        let o = replay(&cfg, &[1000.0; 500], 1, &algo(), None);
        assert_eq!((o.messages, o.transmissions, o.spurious, o.gave_up), (500, 500, 0, 0));
        // RMSE of a U[2, 3] s timer against 1 s: sqrt(E[(T - 1)^2]) = sqrt(1.5^2 + 1/12) s.
        let expect = (2.25f64 + 1.0 / 12.0).sqrt() * 1e3;
        assert!((o.rmse_ms - expect).abs() < 30.0, "{} vs {expect}", o.rmse_ms);
        assert!((o.duration_s - 500.0).abs() < 1e-6);
        // RTO only: the undithered 2 s estimate against 1 s, exactly.
        let o = replay(&cfg, &[1000.0; 500], 1, &ReplayOptions::default(), None);
        assert_eq!((o.spurious, o.rmse_ms, o.mean_rto_ms), (0, 1000.0, 2000.0));
    }

    #[test]
    fn long_rtt_counts_spurious_retransmissions() {
        // ack_random_factor = 1: T_0 = 2 s exactly, doubling: fires at 2, 6 (2 + 4) s; an
        // RTT of 7 s sees two spurious retransmissions per message.
        let cfg = AlgorithmConfig::parse("default:ack_random_factor=1").unwrap();
        let mut tr = Vec::new();
        let o = replay(&cfg, &[7000.0; 10], 1, &algo(), Some(&mut tr));
        assert_eq!((o.transmissions, o.spurious, o.spurious_messages, o.gave_up), (30, 20, 10, 0));
        assert_eq!(tr.len(), 10);
        assert!(tr.iter().all(|p| p.retransmissions == 2 && p.rto_ms == 2000.0));
        assert!((tr[1].t_s - 7.0).abs() < 1e-9);
        // An RTT beyond every timer (2 + 4 + 8 + 16 + 32 = 62 s): the message is given up.
        let o = replay(&cfg, &[70_000.0], 1, &rfc(), None);
        assert_eq!((o.transmissions, o.spurious, o.gave_up, o.late_acks), (5, 4, 1, 0));
        assert!((o.duration_s - 62.0).abs() < 1e-9);
        // RTO only, no backoff: copies at 0, 2, 4, 6 s are sent before the 7 s ACK (three
        // spurious retransmissions per message).
        let o = replay(&cfg, &[7000.0; 10], 1, &ReplayOptions::default(), None);
        assert_eq!((o.transmissions, o.spurious, o.spurious_messages, o.gave_up), (40, 30, 10, 0));
    }

    /// Spurious counting on a hand-made sequence. makarem-rto, per message, RTO 2 s before any
    /// sample, no backoff: every copy waits the RTO its exchange started with.
    ///
    /// | msg | RTT | start | timer | copies sent at | first ACK | spurious | RTO after |
    /// |---|---|---|---|---|---|---|---|
    /// | 0 | 1 s | 0 | 2 | 0 | 1 (copy 0) | 0 | SRTT 1, RTTVAR 0.5, K 4: 3 |
    /// | 1 | 7 s | 1 | 3 | 1, 4, 7 | 8 (copy 0) | 2 | SRTT 1.75, RTTVAR 1.09375, K 7: 9.40625 |
    /// | 2 | 0.5 s | 8 | 9.40625 | 8 | 8.5 | 0 | |
    ///
    /// (SRTT = 7/8 * 1 + 1/8 * 7; R > SRTT, so RTTVAR = 7/8 * 0.5 + 1/8 * |1.75 - 7|; the ACK
    /// answers copy 0 of 3, so the exchange was spurious and K = 7.) Two spurious
    /// retransmissions, one message with spurious retransmissions.
    #[test]
    fn spurious_counting_on_a_hand_made_sequence() {
        let cfg = AlgorithmConfig::parse("makarem-rto:preset=makarem2021").unwrap();
        let mut tr = Vec::new();
        let o = replay(&cfg, &[1000.0, 7000.0, 500.0], 1, &ReplayOptions::default(), Some(&mut tr));
        assert_eq!((o.messages, o.transmissions, o.spurious, o.spurious_messages, o.gave_up), (3, 5, 2, 1, 0));
        let starts: Vec<f64> = tr.iter().map(|p| p.t_s).collect();
        assert_eq!(starts, [0.0, 1.0, 8.0]);
        let rtos: Vec<f64> = tr.iter().map(|p| p.rto_ms).collect();
        assert_eq!(rtos[..2], [2000.0, 3000.0]);
        assert!((rtos[2] - 9406.25).abs() < 1e-6, "{}", rtos[2]);
        assert!((o.duration_s - 8.5).abs() < 1e-9);
        // Message 1 with an RTT of 20 s: copies at 1, 4, 7, 10, 13, given up when the fifth
        // timer expires at 16 s (4 spurious). Message 2 (RTT 6 s) starts at 16 with the same
        // 3 s timer: copy 1 at 19 s (spurious); the late ACK of message 1 comes at 21 s and
        // is taken; message 2's ACK at 22 s (its timer would expire at 22 s: the ACK wins).
        let mut tr = Vec::new();
        let o = replay(&cfg, &[1000.0, 20_000.0, 6000.0], 1, &ReplayOptions::default(), Some(&mut tr));
        assert_eq!((o.spurious, o.spurious_messages, o.gave_up, o.late_acks), (5, 2, 1, 1));
        assert_eq!(tr.iter().map(|p| p.retransmissions).collect::<Vec<_>>(), [0, 4, 1]);
        assert!((o.duration_s - 22.0).abs() < 1e-9);
        // Under RFC 7252's reading the late ACK is dropped.
        assert_eq!(replay(&cfg, &[1000.0, 20_000.0, 6000.0], 1, &rfc(), None).late_acks, 0);
    }

    /// A late ACK unfreezes the estimator: with an RTT jump far above 5 RTOs, the RFC reading
    /// gives up every message with no sample; the thesis's reading takes the late sample.
    #[test]
    fn late_acks_unfreeze_the_thesis_estimator() {
        let cfg = AlgorithmConfig::parse("makarem-rto:preset=makarem2021").unwrap();
        let rtts: Vec<f64> = (0..400).map(|i| if i < 200 { 200.0 } else { 3000.0 }).collect();
        let frozen = replay(&cfg, &rtts, 1, &rfc(), None);
        assert_eq!(frozen.gave_up, 200, "every message of the high period is given up");
        assert_eq!(frozen.late_acks, 0);
        let thesis = replay(&cfg, &rtts, 1, &ReplayOptions::default(), None);
        assert!(thesis.gave_up <= 3, "{}", thesis.gave_up);
        assert!(thesis.late_acks >= 1 && thesis.spurious < frozen.spurious / 20, "{thesis:?}");
        let sample_only = ReplayOptions {
            reliability: ReliabilityOptions {
                late_ack: LateAck::Sample,
                ack_rtt: AckRtt::FromOriginal,
                retransmit_timer: RetransmitTimer::Estimate,
            },
            ..rfc()
        };
        assert_eq!(replay(&cfg, &rtts, 1, &sample_only, None), thesis, "per message, the ACK is the original's");
    }

    #[test]
    fn per_transmission_consumes_a_value_per_copy() {
        // ack_random_factor = 1, doubling: T_0 = 2 s. Values 3 s then 0.5 s: copy 0 (RTT 3 s)
        // fires at 2 s, copy 1 takes 0.5 s and is acknowledged at 2.5 s, before copy 0's 3 s.
        let cfg = AlgorithmConfig::parse("default:ack_random_factor=1").unwrap();
        let opts = ReplayOptions { consumption: RttConsumption::PerTransmission, ..algo() };
        let o = replay(&cfg, &[3000.0, 500.0, 1000.0], 1, &opts, None);
        assert_eq!((o.messages, o.transmissions, o.spurious), (2, 3, 1));
        assert!((o.duration_s - 3.5).abs() < 1e-9, "{}", o.duration_s);
        // RMSE over the three values: (2 - 3)^2, (4 - 0.5)^2, (2 - 1)^2.
        let expect = ((1.0 + 12.25 + 1.0) / 3.0f64).sqrt() * 1e3;
        assert!((o.rmse_ms - expect).abs() < 1e-6, "{} vs {expect}", o.rmse_ms);
    }

    #[test]
    fn adaptive_estimators_track_the_rtt() {
        // CoCoA learns a 300 ms RTT: its RMSE is far below Default CoAP's.
        let rtts = [300.0; 2000];
        let o = ReplayOptions::default();
        let cocoa = replay(&AlgorithmConfig::parse("cocoa").unwrap(), &rtts, 1, &o, None);
        let default = replay(&AlgorithmConfig::parse("default").unwrap(), &rtts, 1, &o, None);
        assert_eq!(cocoa.spurious, 0);
        assert!(cocoa.rmse_ms < default.rmse_ms / 2.0, "{} vs {}", cocoa.rmse_ms, default.rmse_ms);
    }

    #[test]
    fn deterministic() {
        let cfg = AlgorithmConfig::parse("cocoa-plus").unwrap();
        let rtts: Vec<f64> = (0..3000).map(|i| if (i / 100) % 2 == 0 { 200.0 } else { 3000.0 }).collect();
        let o = ReplayOptions::default();
        assert_eq!(replay(&cfg, &rtts, 5, &o, None), replay(&cfg, &rtts, 5, &o, None));
    }
}
