//! Properties every algorithm must satisfy, over random event sequences (proptest).
//!
//! - no panic; every timer finite, positive and within the algorithm's documented cap;
//! - give-up after exactly MAX_RETRANSMIT retransmissions;
//! - `reset()` restores the initial state (same snapshot, same future timers);
//! - same seed, same events → same timers (determinism);
//! - the textual form round-trips and lists every parameter at its documented default.
use core::time::Duration;

use coapcc_cc::{
    AckInfo, Algorithm, AlgorithmConfig, CongestionControl, GiveUpReason, Instant, Preset, SplitMix64, TimeoutAction,
    ALGORITHMS, COMMON_INFO,
};
use proptest::prelude::*;

/// Every algorithm under its own defaults and under each preset that applies to it, with the
/// largest timer it may ever arm (None: no cap by design, e.g. RFC 7252 without a cap).
fn configurations() -> Vec<(String, Option<f64>)> {
    let mut out = vec![];
    for a in ALGORITHMS {
        out.push((a.name.to_string(), None));
        for (pname, p) in Preset::ALL {
            if a.default_config().apply_preset(*p).is_ok() {
                out.push((format!("{}:preset={pname}", a.name), None));
            }
        }
    }
    // Explicit caps with documented bounds.
    out.push(("default:preset=helsinki2018".into(), Some(60.0)));
    out.push(("default-fb1:preset=helsinki2018".into(), Some(60.0)));
    out.push(("default-fb2:preset=helsinki2018".into(), Some(60.0)));
    out.push(("default:backoff_cap=10,max_retransmit=20".into(), Some(15.0)));
    out
}

#[derive(Clone, Debug)]
enum Op {
    /// An exchange acknowledged after `n` retransmissions (clamped to MAX_RETRANSMIT), the ACK
    /// arriving `frac` of the way through the timer then armed; `in_flight` other exchanges.
    Exchange {
        n: u32,
        frac: f64,
        in_flight: u32,
    },
    /// An exchange that is never acknowledged.
    Unanswered,
    /// An exchange ended by RST after `n` retransmissions.
    Rst {
        n: u32,
    },
    /// Idle time, milliseconds.
    Idle(u64),
    Reset,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0u32..6, 0.0f64..1.0, prop_oneof![9 => Just(0u32), 1 => 1u32..4])
            .prop_map(|(n, frac, in_flight)| Op::Exchange { n, frac, in_flight }),
        1 => Just(Op::Unanswered),
        1 => (0u32..3).prop_map(|n| Op::Rst { n }),
        1 => (0u64..400_000).prop_map(Op::Idle),
        1 => Just(Op::Reset),
    ]
}

/// Drive `cc` through `ops`; returns every armed timer (seconds). Panics on a violated
/// invariant.
fn drive(cc: &mut Algorithm, ops: &[Op], seed: u64, bound: Option<f64>) -> Vec<f64> {
    let mut rng = SplitMix64::new(seed);
    let mut now = Instant::from_millis(1_000);
    let mut timers = vec![];
    let mr = cc.max_retransmit();
    let check = |t: Duration, timers: &mut Vec<f64>, last: bool| {
        let s = t.as_secs_f64();
        assert!(s.is_finite(), "{} armed a non-finite timer", cc_name(ops));
        if !last {
            assert!(s > 0.0, "zero timer");
        }
        if let Some(b) = bound {
            assert!(s <= b + 1e-9, "timer {s} above bound {b}");
        }
        timers.push(s);
    };
    for op in ops {
        match *op {
            Op::Idle(ms) => now = now + Duration::from_millis(ms),
            Op::Reset => cc.reset(now),
            Op::Exchange { n, frac, in_flight } => {
                let mut ex = cc.start_exchange(now, in_flight, &mut rng);
                assert!(cc.earliest_start(now) >= now);
                check(ex.timer(), &mut timers, false);
                let n = n.min(mr);
                for _ in 0..n {
                    now = now + ex.timer();
                    match cc.on_timeout(now, &mut ex) {
                        TimeoutAction::Retransmit(t) => {
                            let last = ex.retransmissions() == mr;
                            check(t, &mut timers, last)
                        }
                        TimeoutAction::GiveUp => panic!("gave up before MAX_RETRANSMIT"),
                    }
                }
                now = now + Duration::from_secs_f64(ex.timer().as_secs_f64() * frac * 0.999);
                let sent = ex.started();
                let ack = if cc.uses_copy_id() {
                    AckInfo::with_copy(&ex, now, ex.retransmissions(), sent)
                } else {
                    AckInfo::new(&ex, now)
                };
                cc.on_ack(now, &ex, &ack);
            }
            Op::Unanswered => {
                let mut ex = cc.start_exchange(now, 0, &mut rng);
                check(ex.timer(), &mut timers, false);
                let mut retransmissions = 0;
                loop {
                    now = now + ex.timer();
                    match cc.on_timeout(now, &mut ex) {
                        TimeoutAction::Retransmit(t) => {
                            retransmissions += 1;
                            assert_eq!(ex.retransmissions(), retransmissions);
                            check(t, &mut timers, retransmissions == mr);
                            assert!(retransmissions <= mr, "more than MAX_RETRANSMIT");
                        }
                        TimeoutAction::GiveUp => break,
                    }
                }
                assert_eq!(retransmissions, mr, "give-up after exactly MAX_RETRANSMIT");
                cc.on_give_up(now, &ex, GiveUpReason::Timeout);
            }
            Op::Rst { n } => {
                let mut ex = cc.start_exchange(now, 0, &mut rng);
                check(ex.timer(), &mut timers, false);
                for _ in 0..n.min(mr) {
                    now = now + ex.timer();
                    let _ = cc.on_timeout(now, &mut ex);
                }
                now = now + Duration::from_millis(10);
                cc.on_give_up(now, &ex, GiveUpReason::Reset);
            }
        }
        let snap = cc.snapshot();
        assert!(snap.rto.as_secs_f64().is_finite());
    }
    timers
}

fn cc_name(_: &[Op]) -> &'static str {
    "algorithm"
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_for_every_algorithm(ops in prop::collection::vec(op(), 1..40), seed in any::<u64>()) {
        for (spec, bound) in configurations() {
            let cfg = AlgorithmConfig::parse(&spec).unwrap();
            let mut a = cfg.build();
            let mut b = cfg.build();
            let ta = drive(&mut a, &ops, seed, bound);
            let tb = drive(&mut b, &ops, seed, bound);
            prop_assert_eq!(&ta, &tb, "{}: same seed, different timers", spec);
        }
    }

    #[test]
    fn reset_restores_initial_state(ops in prop::collection::vec(op(), 1..30), tail in prop::collection::vec(op(), 1..10), seed in any::<u64>()) {
        for (spec, _) in configurations() {
            let cfg = AlgorithmConfig::parse(&spec).unwrap();
            let mut used = cfg.build();
            drive(&mut used, &ops, seed, None);
            used.reset(Instant::from_millis(1_000));
            let mut fresh = cfg.build();
            fresh.reset(Instant::from_millis(1_000));
            prop_assert_eq!(used.snapshot(), fresh.snapshot(), "{}: snapshot after reset", spec);
            let a = drive(&mut used, &tail, seed ^ 1, None);
            let b = drive(&mut fresh, &tail, seed ^ 1, None);
            prop_assert_eq!(a, b, "{}: behaviour after reset", spec);
        }
    }
}

#[test]
fn textual_form_round_trips_and_lists_defaults() {
    for (spec, _) in configurations() {
        let cfg = AlgorithmConfig::parse(&spec).unwrap();
        let text = cfg.to_string();
        let again = AlgorithmConfig::parse(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(cfg, again, "{spec} -> {text}");
    }
    for a in ALGORITHMS {
        let text = a.default_config().to_string();
        assert!(text.starts_with(&format!("{}:", a.name)), "{text}");
        for p in a.default_config().params().iter().chain(COMMON_INFO) {
            let kv = format!("{}={}", p.key, p.default);
            assert!(text.split([':', ',']).any(|x| x == kv), "{}: {kv} missing in {text}", a.name);
            // Every alias is accepted.
            for alias in p.aliases {
                AlgorithmConfig::parse(&format!("{}:{alias}={}", a.name, p.default))
                    .unwrap_or_else(|e| panic!("{}: alias {alias}: {e}", a.name));
            }
        }
    }
}

#[test]
fn errors_name_the_valid_choices() {
    let e = AlgorithmConfig::parse("cocoa-minus").unwrap_err().to_string();
    assert!(e.contains("unknown algorithm 'cocoa-minus'") && e.contains("fasor-token"), "{e}");
    let e = AlgorithmConfig::parse("default:bogus=1").unwrap_err().to_string();
    assert!(e.contains("'bogus'") && e.contains("max_retransmit") && e.contains("backoff_cap"), "{e}");
    let e = AlgorithmConfig::parse("default:ack_random_factor=0.5").unwrap_err().to_string();
    assert!(e.contains("ack_random_factor") && e.contains(">= 1"), "{e}");
    let e = AlgorithmConfig::parse("default:preset=nope").unwrap_err().to_string();
    assert!(e.contains("helsinki2018"), "{e}");
    let e = AlgorithmConfig::parse("default:max_retransmit").unwrap_err().to_string();
    assert!(e.contains("key=value"), "{e}");
    // Every preset applies to every algorithm (its testbed's shared parameters at least).
    let c = AlgorithmConfig::parse("default-fb1:preset=ancillotti-cooja").unwrap().to_string();
    assert!(c.contains("ack_timeout=3") && c.contains("dither=contiki-ticks"), "{c}");
}

#[test]
fn preset_then_override_in_any_order() {
    let a = AlgorithmConfig::parse("default:max_retransmit=7,preset=helsinki2018").unwrap();
    let b = AlgorithmConfig::parse("default:preset=helsinki2018,max_retransmit=7").unwrap();
    assert_eq!(a, b);
    assert_eq!(a.max_retransmit(), 7);
    assert!(a.to_string().contains("backoff_cap=60"));
}
