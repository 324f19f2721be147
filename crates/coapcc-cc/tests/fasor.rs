//! Specification §7: FASOR and FASOR with token.
mod common;
use coapcc_cc::{Algorithm, AlgorithmConfig, CongestionControl, GiveUpReason, TimeoutAction};
use common::*;

/// (SRTT, RTTVAR, FastRTO) of the FastRTO estimator.
fn fast(d: &Driver) -> (f64, f64, f64) {
    let e = d.cc.snapshot().strong.expect("FastRTO has a sample");
    (s(e.srtt), s(e.rttvar), s(e.rto))
}

fn slow(d: &Driver) -> Option<f64> {
    d.cc.snapshot().slow_rto.map(s)
}

fn state(d: &Driver) -> &'static str {
    d.cc.snapshot().state.unwrap()
}

#[track_caller]
fn assert_fast(d: &Driver, srtt: f64, rttvar: f64, rto: f64) {
    let (a, b, c) = fast(d);
    assert!(close(a, srtt) && close(b, rttvar) && close(c, rto), "got ({a}, {b}, {c})");
}

#[test]
fn fa1_steps_1_to_5() {
    let mut d = Driver::new("fasor:dither=off,max_retransmit=20");
    // Step 1: FAST from the initial 2 s.
    assert_seq(&d.peek(2), &[2.0, 4.0, 8.0]);
    assert_eq!(state(&d), "FAST");
    assert_seq(&d.exchange(0, 0.66), &[2.0]);
    assert_fast(&d, 0.66, 0.0825, 0.99);
    assert_eq!(state(&d), "FAST");
    assert_eq!(slow(&d), None);
    // Step 2: FAST 0.99, 1.98, 3.96, sends at 0, 0.99, 2.97; ACK at 3.0 with n = 2.
    let start = d.now;
    let (timers, _) = d.clone_exchange_until(2);
    assert_seq(&timers, &[0.99, 1.98, 3.96]);
    assert_close(s(d.now - start), 2.97);
    d.now = start;
    assert_seq(&d.exchange(2, 3.0), &[0.99, 1.98, 3.96]);
    assert_close(slow(&d).unwrap(), 4.5);
    assert_eq!(state(&d), "FSF");
    assert_fast(&d, 0.66, 0.0825, 0.99);
    // Step 3: FSF 0.99, max(4.5, 1.98) = 4.5, 1.98, 3.96; ACK at 3.1 with n = 1.
    assert_seq(&d.peek(3), &[0.99, 4.5, 1.98, 3.96]);
    assert_seq(&d.exchange(1, 3.1), &[0.99, 4.5]);
    assert_close(slow(&d).unwrap(), 4.65);
    assert_eq!(state(&d), "SF");
    // Step 4: SF 4.65, 0.99, 1.98, 3.96; ACK at 2.8 with n = 0.
    assert_seq(&d.peek(3), &[4.65, 0.99, 1.98, 3.96]);
    assert_seq(&d.exchange(0, 2.8), &[4.65]);
    assert_fast(&d, 0.9275, 0.596875, 3.315);
    assert_eq!(state(&d), "FAST");
    assert_close(slow(&d).unwrap(), 4.65); // SlowRTO is kept
                                           // Step 5.
    assert_seq(&d.peek(3), &[3.315, 6.63, 13.26, 26.52]);
    assert_close(s(d.cc.snapshot().rto), 3.315);
}

trait CloneExchange {
    fn clone_exchange_until(&mut self, n: u32) -> (Vec<f64>, coapcc_cc::Exchange);
}

impl CloneExchange for Driver {
    /// `exchange_until` on a copy of the algorithm (advances only `now`).
    fn clone_exchange_until(&mut self, n: u32) -> (Vec<f64>, coapcc_cc::Exchange) {
        let saved = self.cc.clone();
        let r = self.exchange_until(n);
        self.cc = saved;
        r
    }
}

#[test]
fn fa2_slow_rto_below_double_fast() {
    let mut d = Driver::new("fasor:dither=off");
    d.exchange(0, 1.0);
    assert_close(fast(&d).2, 1.5);
    assert_seq(&d.exchange(1, 1.8), &[1.5, 3.0]);
    assert_close(slow(&d).unwrap(), 2.7);
    assert_eq!(state(&d), "FSF");
    assert_seq(&d.peek(3), &[1.5, 3.0, 3.0, 6.0]);
}

#[test]
fn fa3_slow_rto_capped() {
    let mut d = Driver::new("fasor:dither=off");
    assert_seq(&d.exchange(4, 50.0), &[2.0, 4.0, 8.0, 16.0, 32.0]);
    assert_close(slow(&d).unwrap(), 60.0);
    assert_eq!(state(&d), "FSF");
    assert_eq!(d.cc.snapshot().strong, None);
    assert_seq(&d.peek(3), &[2.0, 60.0, 4.0, 8.0]);
}

#[test]
fn cap_applies_to_every_timer() {
    let mut d = Driver::new("fasor:dither=off,max_retransmit=20");
    let (timers, _, _) = d.unanswered();
    assert_eq!(timers.len(), 21);
    assert_seq(&timers[..7], &[2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]);
    assert!(timers.iter().all(|&t| t <= 60.0 + 1e-9));
    let mut d = Driver::new("fasor:dither=off,cap=none");
    assert_seq(&d.unanswered().0, &[2.0, 4.0, 8.0, 16.0, 32.0]);
    let mut d = Driver::new("fasor:dither=off,cap=10");
    assert_seq(&d.unanswered().0, &[2.0, 4.0, 8.0, 10.0, 10.0]);
}

#[test]
fn fa4_initial_dither_range() {
    let mut d = Driver::new("fasor");
    let (lo, hi) = (2.0 + 2.0 / 12.0, 2.0 + 2.0 / 3.0);
    let (mut min, mut max) = (f64::MAX, 0.0f64);
    for _ in 0..5000 {
        let mut ex = d.cc.start_exchange(d.now, 0, &mut d.rng);
        let t0 = s(ex.timer());
        assert!(t0 >= lo - 1e-9 && t0 <= hi + 1e-9, "{t0}");
        min = min.min(t0);
        max = max.max(t0);
        // One draw per exchange: the series doubles the dithered F exactly.
        match d.cc.on_timeout(d.now, &mut ex) {
            TimeoutAction::Retransmit(t1) => assert_close(s(t1), 2.0 * t0),
            TimeoutAction::GiveUp => unreachable!(),
        }
    }
    assert!(min < lo + 0.005 && max > hi - 0.005, "[{min}, {max}]");
    // No state was changed by unanswered starts: dither=off gives exactly 2.
    let mut d = Driver::new("fasor:dither=off");
    assert_seq(&d.exchange(0, 0.5), &[2.0]);
}

#[test]
fn dither_after_a_sample_is_srtt_based() {
    let mut d = Driver::new("fasor");
    d.exchange(0, 0.66); // SRTT 0.66, FastRTO 0.99
    for _ in 0..500 {
        let ex = d.cc.start_exchange(d.now, 0, &mut d.rng);
        let t = s(ex.timer());
        assert!((0.99 + 0.165 - 1e-9..=0.99 + 0.66 + 1e-9).contains(&t), "{t}");
    }
}

#[test]
fn dither_per_timer_redraws_f() {
    let mut d = Driver::new("fasor:dither_scope=per-timer,max_retransmit=8");
    let (lo, hi) = (2.0 + 2.0 / 12.0, 2.0 + 2.0 / 3.0);
    let mut differs = 0;
    for _ in 0..200 {
        let mut ex = d.cc.start_exchange(d.now, 0, &mut d.rng);
        let t0 = s(ex.timer());
        assert!(t0 >= lo - 1e-9 && t0 <= hi + 1e-9, "{t0}");
        let TimeoutAction::Retransmit(t1) = d.cc.on_timeout(d.now, &mut ex) else { unreachable!() };
        let t1 = s(t1);
        assert!(t1 >= 2.0 * lo - 1e-9 && t1 <= 2.0 * hi + 1e-9, "{t1}");
        if !close(t1, 2.0 * t0) {
            differs += 1;
        }
    }
    assert!(differs > 150, "{differs}");
    // Off still means no dithering at all.
    let mut d = Driver::new("fasor:dither_scope=per-timer,dither=off");
    assert_seq(&d.unanswered().0, &[2.0, 4.0, 8.0, 16.0, 32.0]);
}

#[test]
fn first_rttvar_r_over_2() {
    let mut d = Driver::new("fasor:dither=off,first_rttvar=r-over-2");
    d.exchange(0, 0.66);
    assert_fast(&d, 0.66, 0.33, 1.98);
    let mut d = Driver::new("fasor:dither=off,fasor_first_rttvar=R/(2K)");
    d.exchange(0, 0.66);
    assert_fast(&d, 0.66, 0.0825, 0.99);
}

#[test]
fn slow_factor_parameter() {
    let mut d = Driver::new("fasor:dither=off,SLOWRTO_FACTOR=2");
    d.exchange(1, 3.0);
    assert_close(slow(&d).unwrap(), 6.0);
}

#[test]
fn initial_rto_is_ack_timeout() {
    let mut d = Driver::new("fasor:dither=off,initial_rto=3");
    assert_seq(&d.exchange(0, 0.5), &[3.0]);
    let cfg = AlgorithmConfig::parse("fasor:ack_timeout=3").unwrap();
    assert!(cfg.to_string().contains("initial_rto=3"), "{cfg}");
    // Before any sample the dither range follows INITIAL_RTO/3.
    let mut d = Driver::new("fasor:initial_rto=3");
    for _ in 0..200 {
        let t = s(d.cc.start_exchange(d.now, 0, &mut d.rng).timer());
        assert!((3.25 - 1e-9..=4.0 + 1e-9).contains(&t), "{t}");
    }
}

#[test]
fn ft1_token_ordinal_0() {
    let mut d = Driver::new("fasor-token:dither=off");
    assert_eq!(d.cc.name(), "fasor-token");
    d.exchange(0, 0.66);
    assert_fast(&d, 0.66, 0.0825, 0.99);
    let timers = d.exchange_echo(2, 3.0, 0);
    assert_seq(&timers, &[0.99, 1.98, 3.96]);
    assert_fast(&d, 0.9525, 0.646875, 3.54);
    assert_close(slow(&d).unwrap(), 4.5);
    assert_eq!(state(&d), "FSF");
    assert_seq(&d.peek(3), &[3.54, 7.08, 7.08, 14.16]);
    // Plain FASOR keeps F = 0.99 on the same events.
    let mut p = Driver::new("fasor:dither=off");
    p.exchange(0, 0.66);
    p.exchange_echo(2, 3.0, 0);
    assert_fast(&p, 0.66, 0.0825, 0.99);
    assert_seq(&p.peek(3), &[0.99, 4.5, 1.98, 3.96]);
}

#[test]
fn ft1_token_ordinal_2() {
    let mut d = Driver::new("fasor-token:dither=off");
    d.exchange(0, 0.66);
    d.exchange_echo(2, 3.0, 2); // copy 2 sent at 2.97: R_2 = 0.03
    assert_fast(&d, 0.58125, 0.219375, 1.45875);
    assert_close(slow(&d).unwrap(), 4.5);
    assert_eq!(state(&d), "FSF");
    assert_seq(&d.peek(3), &[1.45875, 4.5, 2.9175, 5.835]);
    // AMBIG-3 alternative base: max(FastRTO, previous t_ack − t0 = 3.0).
    let mut d = Driver::new("fasor-token:dither=off,token_series_base=max_fast_prev_total");
    d.exchange(0, 0.66);
    d.exchange_echo(2, 3.0, 2);
    assert_seq(&d.peek(3), &[3.0, 6.0, 6.0, 12.0]);
    let mut d = Driver::new("fasor-token:dither=off,token_series_base=fast-only");
    d.exchange(0, 0.66);
    d.exchange_echo(2, 3.0, 2);
    assert_seq(&d.peek(3), &[1.45875, 4.5, 2.9175, 5.835]);
}

#[test]
fn token_by_sample_transitions() {
    let mut d = Driver::new("fasor-token:dither=off,token_transitions=by_sample");
    d.exchange(0, 0.66);
    d.exchange_echo(2, 3.0, 0);
    assert_fast(&d, 0.9525, 0.646875, 3.54);
    assert_eq!(slow(&d), None);
    assert_eq!(state(&d), "FAST");
    assert_seq(&d.peek(3), &[3.54, 7.08, 14.16, 28.32]);
}

#[test]
fn token_without_echo_is_plain_fasor() {
    let mut d = Driver::new("fasor-token:dither=off");
    d.exchange(0, 0.66);
    d.exchange(2, 3.0); // Empty-ACK-like: no ordinal
    assert_fast(&d, 0.66, 0.0825, 0.99);
    assert_eq!(state(&d), "FSF");
    assert_seq(&d.peek(3), &[0.99, 4.5, 1.98, 3.96]);
}

#[test]
fn give_up_after_exactly_max_retransmit() {
    for (spec, n) in
        [("fasor:dither=off", 4usize), ("fasor-token:dither=off,max_retransmit=20", 20), ("fasor:max_retransmit=0", 0)]
    {
        let mut d = Driver::new(spec);
        let (timers, sends, _) = d.unanswered();
        assert_eq!(timers.len(), n + 1, "{spec}");
        assert_eq!(sends.len(), n + 1, "{spec}");
    }
    let mut d = Driver::new("fasor:dither=off");
    let (_, sends, give_up) = d.unanswered();
    assert_seq(&sends, &[0.0, 2.0, 6.0, 14.0, 30.0]);
    assert_close(give_up, 62.0);
}

#[test]
fn ambig20_give_up_downgrades_when_slow_rto_exists() {
    // No SlowRTO yet: the state stays FAST, nothing is learnt.
    let mut d = Driver::new("fasor:dither=off");
    d.exchange(0, 0.66);
    d.unanswered();
    assert_eq!(state(&d), "FAST");
    assert_eq!(slow(&d), None);
    assert_fast(&d, 0.66, 0.0825, 0.99);
    // With a SlowRTO: FAST → FSF → SF, SlowRTO unchanged, no estimator update.
    let mut d = Driver::new("fasor:dither=off");
    d.exchange(0, 0.66);
    d.exchange(1, 1.0); // SlowRTO 1.5, FSF
    d.exchange(0, 0.66); // back to FAST
    assert_eq!(state(&d), "FAST");
    d.unanswered();
    assert_eq!(state(&d), "FSF");
    assert_close(slow(&d).unwrap(), 1.5);
    d.unanswered();
    assert_eq!(state(&d), "SF");
    assert_close(slow(&d).unwrap(), 1.5);
    assert_eq!(d.cc.snapshot().strong.unwrap().samples, 2);
    // RST: no change.
    let mut d = Driver::new("fasor:dither=off");
    d.exchange(1, 3.0);
    d.exchange(0, 0.66);
    let ex = d.cc.start_exchange(d.now, 0, &mut d.rng);
    d.cc.on_give_up(d.now, &ex, GiveUpReason::Reset);
    assert_eq!(state(&d), "FAST");
}

#[test]
fn ambig20_alternative_policies() {
    let mut d = Driver::new("fasor:dither=off,give_up=ambiguous-ack");
    let (_, _, give_up) = d.unanswered();
    assert_close(give_up, 62.0);
    assert_close(slow(&d).unwrap(), 60.0); // min(1.5 · 62, 60)
    assert_eq!(state(&d), "FSF");
    let mut d = Driver::new("fasor:dither=off,on_give_up_policy=unchanged");
    d.exchange(1, 3.0);
    d.exchange(0, 0.66);
    d.unanswered();
    assert_eq!(state(&d), "FAST");
}

#[test]
fn reset_restores_initial_state() {
    let mut d = Driver::new("fasor-token:dither=off");
    d.exchange(0, 0.66);
    d.exchange(2, 3.0);
    d.cc.reset(d.now);
    let snap = d.cc.snapshot();
    assert_eq!((snap.strong, snap.slow_rto, snap.state), (None, None, Some("FAST")));
    assert_seq(&d.peek(2), &[2.0, 4.0, 8.0]);
}

#[test]
fn helsinki_preset_and_textual_form() {
    let cfg = AlgorithmConfig::parse("fasor-token:preset=helsinki2018").unwrap();
    assert_eq!(cfg.max_retransmit(), 20);
    let text = cfg.to_string();
    for kv in
        ["max_retransmit=20", "dither=uniform", "cap=60", "slow_factor=1.5", "token_transitions=by-retransmissions"]
    {
        assert!(text.contains(kv), "{text}");
    }
    // Presets without FASOR settings: the testbed's shared transmission parameters only.
    for (preset, shared) in common::PRESET_SHARED.iter().filter(|(p, _)| *p != "helsinki2018") {
        let want = AlgorithmConfig::parse(&format!("fasor:{shared}")).unwrap();
        assert_eq!(AlgorithmConfig::parse(&format!("fasor:preset={preset}")).unwrap(), want, "{preset}");
    }
    // Plain FASOR has no token parameters.
    assert!(AlgorithmConfig::parse("fasor:token_transitions=by-sample").is_err());
    let plain = AlgorithmConfig::parse("fasor").unwrap().to_string();
    assert!(!plain.contains("token"), "{plain}");
    // Round trip of the canonical form.
    let again = AlgorithmConfig::parse(&text).unwrap();
    assert_eq!(again, cfg);
}

#[test]
fn defaults_match_param_info() {
    for name in ["fasor", "fasor-token"] {
        let cfg = AlgorithmConfig::parse(name).unwrap();
        let text = cfg.to_string();
        for p in cfg.params() {
            let kv = format!("{}={}", p.key, p.default);
            assert!(text.split([':', ',']).any(|x| x == kv), "{name}: {kv} not in {text}");
        }
    }
}

#[test]
fn algorithm_enum_dispatch() {
    let d = Driver::new("fasor");
    assert!(matches!(d.cc, Algorithm::Fasor(_)));
    assert_eq!(d.cc.name(), "fasor");
}
