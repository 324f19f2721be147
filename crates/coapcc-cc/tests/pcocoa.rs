//! Specification §8: pCoCoA (partial; the gaps are parameters).
mod common;
use coapcc_cc::{Algorithm, AlgorithmConfig, CongestionControl, TimeoutAction};
use common::*;

/// (SRTT, RTTVAR, SRTO, RTO_init, mdev_max).
fn st(d: &Driver) -> (f64, f64, f64, f64, f64) {
    let snap = d.cc.snapshot();
    let e = snap.strong.expect("a sample was taken");
    let Algorithm::Pcocoa(p) = &d.cc else { panic!("not pcocoa") };
    (s(e.srtt), s(e.rttvar), s(e.rto), s(snap.rto), s(p.mdev_max().unwrap()))
}

#[track_caller]
fn assert_st(d: &Driver, want: (f64, f64, f64, f64, f64)) {
    let got = st(d);
    assert_seq(&[got.0, got.1, got.2, got.3, got.4], &[want.0, want.1, want.2, want.3, want.4]);
}

#[test]
fn pc1_init() {
    let mut d = Driver::new("pcocoa:dither=off");
    assert_close(s(d.cc.snapshot().rto), 2.0);
    assert_eq!(d.cc.snapshot().strong, None);
    assert_seq(&d.exchange(0, 0.4), &[2.0]);
    assert_st(&d, (0.4, 0.2, 0.65, 0.65, 0.25));
}

#[test]
fn second_sample_blocks_1_to_4() {
    let mut d = Driver::new("pcocoa:dither=off");
    d.exchange(0, 0.4);
    d.exchange(0, 0.6);
    // SRTT first: 0.425; |SRTT − R| = 0.175 ≤ RTTVAR → weight α: 0.196875;
    // SRTO = 0.425 + max(4 · 0.196875, 0.25) = 1.2125; RTO = (1.2125 + 0.65)/2.
    assert_st(&d, (0.425, 0.196875, 1.2125, 0.93125, 0.25));
}

#[test]
fn falling_rtt_uses_gamma_and_delta() {
    let mut d = Driver::new("pcocoa:dither=off");
    d.exchange(0, 0.4);
    d.exchange_echo(1, 0.7, 1); // copy 1 sent at 0.65: R_1 = 0.05, not spurious
    assert_st(&d, (0.35625, 0.2033203125, 1.16953125, 0.909765625, 0.25));
    let Algorithm::Pcocoa(p) = &d.cc else { unreachable!() };
    assert!(!p.spurious());
    let mut d = Driver::new("pcocoa:dither=off,pcocoa_gamma=0,pcocoa_delta=0");
    d.exchange(0, 0.4);
    d.exchange_echo(1, 0.7, 1);
    assert_st(&d, (0.35625, 0.2, 1.15625, 1.15625, 0.25));
}

#[test]
fn spurious_retransmission_gives_k6() {
    let mut d = Driver::new("pcocoa:dither=off");
    d.exchange(0, 0.4);
    // T_0 = 0.65 expires, copy 1 goes out; the ACK answers copy 0 at 0.7: spurious.
    assert_seq(&d.exchange_echo(1, 0.7, 0), &[0.65, 1.625]);
    assert_st(&d, (0.4375, 0.215625, 1.73125, 1.190625, 0.25));
    let Algorithm::Pcocoa(p) = &d.cc else { unreachable!() };
    assert!(p.spurious());
    // k_spurious is a parameter (Makarem's thesis RTO uses 7).
    let mut d = Driver::new("pcocoa:dither=off,k_spurious=4");
    d.exchange(0, 0.4);
    d.exchange_echo(1, 0.7, 0);
    assert_st(&d, (0.4375, 0.215625, 1.3, 0.975, 0.25));
}

#[test]
fn sample_source_and_karn_fallback() {
    // Without copy identification an ACK after retransmissions gives no sample.
    let mut d = Driver::new("pcocoa:dither=off");
    d.exchange(0, 0.4);
    d.exchange(1, 0.7);
    assert_st(&d, (0.4, 0.2, 0.65, 0.65, 0.25));
    // `original`: always t_ack − t0 (still detecting the spurious retransmission: k = 6).
    let mut d = Driver::new("pcocoa:dither=off,sample=original");
    d.exchange(0, 0.4);
    d.exchange_echo(1, 0.7, 1);
    assert_st(&d, (0.4375, 0.215625, 1.3, 0.975, 0.25));
    let mut d = Driver::new("pcocoa:dither=off,sample=original");
    d.exchange(0, 0.4);
    d.exchange(1, 0.7);
    assert_st(&d, (0.4375, 0.215625, 1.3, 0.975, 0.25));
}

#[test]
fn block2_mean_of_three() {
    let mut d = Driver::new("pcocoa:dither=off");
    for r in [0.4, 2.0, 2.0] {
        d.exchange(0, r);
    }
    assert_close(st(&d).4, 0.25);
    d.exchange(0, 2.0);
    let (srtt, rttvar, srto, rto, mdev) = st(&d);
    assert_seq(&[srtt, rttvar, mdev], &[0.928125, 0.77890625, (0.5 + 0.68125 + 0.77890625) / 3.0]);
    assert_seq(&[srto, rto], &[4.04375, 3.303125]);
}

#[test]
fn block2_decay_on_8_below_and_literal() {
    let run = |spec: &str| {
        let mut d = Driver::new(spec);
        d.exchange(0, 1.0);
        let mut m = vec![];
        for _ in 0..8 {
            d.exchange(0, 1.01);
            m.push(st(&d).4);
        }
        (m, st(&d))
    };
    let (m, (_, rttvar, _, rto, _)) = run("pcocoa:dither=off");
    assert_seq(&m[..7], &[0.5; 7]);
    assert_close(m[7], 0.75 * 0.5 + 0.25 * rttvar);
    assert_close(m[7], 0.4188101367652416);
    assert_close(rto, 1.813983369171619);
    let (m, _) = run("pcocoa:dither=off,block2=literal");
    assert_seq(&m, &[0.5; 8]);
}

#[test]
fn block2_counting_every_sample() {
    // RTTVAR rises above mdev_max on two rising samples, decays below it on ten falling
    // ones (R < SRTT: outside Block 2), then one more rising sample. Counting only Block 2
    // samples completes the run of three; counting every sample breaks it.
    let mut seq = vec![1.0, 3.0, 3.0];
    seq.extend([1.0; 10]);
    seq.push(3.0);
    let mut a = Driver::new("pcocoa:dither=off");
    let mut b = Driver::new("pcocoa:dither=off,block2_counting=every-sample");
    for r in seq {
        a.exchange(0, r);
        b.exchange(0, r);
    }
    assert_close(st(&a).4, 0.8421955282595567);
    assert_close(st(&b).4, 0.5);
}

#[test]
fn vbf_per_exchange_betzler2015() {
    let mut d = Driver::new("pcocoa:dither=off");
    assert_seq(&d.peek(4), &[2.0, 4.0, 8.0, 16.0, 32.0]);
    d.exchange(0, 0.4); // RTO 0.65 < 1 s → 2.5
    assert_seq(&d.peek(4), &[0.65, 1.625, 4.0625, 10.15625, 25.390625]);
    let mut d = Driver::new("pcocoa:dither=off,vbf_table=ancillotti");
    d.exchange(0, 0.4);
    assert_seq(&d.peek(2), &[0.65, 1.95, 5.85]);
    // Exactly 3 s: high factor with the inclusive boundary (Eq. 2.6), middle without.
    let d = Driver::new("pcocoa:dither=off,ack_timeout=3");
    assert_seq(&d.peek(2), &[3.0, 4.5, 6.75]);
    let d = Driver::new("pcocoa:dither=off,ack_timeout=3,vbf_high_inclusive=off");
    assert_seq(&d.peek(2), &[3.0, 6.0, 12.0]);
}

#[test]
fn vbf_select_on_dithered() {
    // RTO 0.9 (< 1 s) dithered up to 1.35: the dithered selection sometimes picks 2.
    let mut d = Driver::new("pcocoa:ack_timeout=0.9,vbf_select_on=dithered");
    let mut factors = std::collections::BTreeSet::new();
    for _ in 0..200 {
        let mut ex = d.cc.start_exchange(d.now, 0, &mut d.rng);
        let t0 = s(ex.timer());
        assert!((0.9 - 1e-9..=1.35 + 1e-9).contains(&t0));
        let TimeoutAction::Retransmit(t1) = d.cc.on_timeout(d.now, &mut ex) else { unreachable!() };
        let f = s(t1) / t0;
        factors.insert((f * 100.0).round() as u32);
        assert_eq!(f < 2.25, t0 >= 1.0, "{t0} {f}");
    }
    assert_eq!(factors.into_iter().collect::<Vec<_>>(), vec![200, 250]);
}

#[test]
fn caps_as_cocoa_plus() {
    let mut d = Driver::new("pcocoa:dither=off");
    d.exchange(0, 40.0); // RTO = 40 + 20 = 60 (overall cap 60)
    assert_close(s(d.cc.snapshot().rto), 60.0);
    // Initial RTO capped at 32 before dithering; VBF 1.5; backoff capped at 60.
    assert_seq(&d.peek(4), &[32.0, 48.0, 60.0, 60.0, 60.0]);
    let mut d = Driver::new("pcocoa:dither=off,max_rto=none,initial_cap=none,backoff_cap=none");
    d.exchange(0, 50.0);
    assert_close(s(d.cc.snapshot().rto), 75.0);
    assert_seq(&d.peek(2), &[75.0, 112.5, 168.75]);
    // Dithering applies after the initial cap: T_0 in [32, 48].
    let mut d = Driver::new("pcocoa");
    d.exchange(0, 40.0);
    for _ in 0..100 {
        let t = s(d.cc.start_exchange(d.now, 0, &mut d.rng).timer());
        assert!((32.0 - 1e-9..=48.0 + 1e-9).contains(&t), "{t}");
    }
}

#[test]
fn aging_is_optional() {
    let mut d = Driver::new("pcocoa:dither=off");
    d.exchange(0, 0.4);
    d.advance(10.5);
    assert_close(d.peek(0)[0], 0.65);
    assert_seq(&d.exchange(0, 0.4)[..1], &[0.65]);
    let mut d = Driver::new("pcocoa:dither=off,aging=on");
    d.exchange(0, 0.4);
    d.advance(10.3); // 16 · 0.65 = 10.4
    let mut e = Driver::new("pcocoa:dither=off,aging=on");
    e.exchange(0, 0.4);
    e.advance(10.5);
    assert_seq(&d.exchange_until(0).0, &[0.65]);
    let (timers, _) = e.exchange_until(1);
    assert_seq(&timers, &[1.3, 2.6]);
}

#[test]
fn give_up_after_exactly_max_retransmit_without_update() {
    for (spec, n) in [("pcocoa:dither=off", 4usize), ("pcocoa:dither=off,max_retransmit=20", 20)] {
        let mut d = Driver::new(spec);
        let (timers, _, give_up) = d.unanswered();
        assert_eq!(timers.len(), n + 1);
        if n == 4 {
            assert_seq(&timers, &[2.0, 4.0, 8.0, 16.0, 32.0]);
            assert_close(give_up, 62.0);
        } else {
            assert_seq(&timers[4..8], &[32.0, 60.0, 60.0, 60.0]);
        }
        assert_eq!(d.cc.snapshot().strong, None);
        assert_close(s(d.cc.snapshot().rto), 2.0);
    }
    let mut d = Driver::new("pcocoa:dither=off");
    d.exchange(0, 0.4);
    let before = d.cc.snapshot();
    d.unanswered();
    assert_eq!(d.cc.snapshot(), before);
}

#[test]
fn dithered_initial_timer() {
    let mut d = Driver::new("pcocoa");
    d.exchange(0, 0.4);
    for _ in 0..200 {
        let t = s(d.cc.start_exchange(d.now, 0, &mut d.rng).timer());
        assert!((0.65 - 1e-9..=0.975 + 1e-9).contains(&t), "{t}");
    }
}

#[test]
fn reset_and_presets() {
    let mut d = Driver::new("pcocoa:dither=off");
    d.exchange(0, 0.4);
    d.cc.reset(d.now);
    assert_eq!(d.cc.snapshot().strong, None);
    assert_close(s(d.cc.snapshot().rto), 2.0);
    let cfg = AlgorithmConfig::parse("pcocoa:preset=makarem2021").unwrap();
    assert_eq!(cfg, AlgorithmConfig::parse("pcocoa").unwrap());
    for (p, shared) in common::PRESET_SHARED.iter().filter(|(p, _)| *p != "makarem2021") {
        let want = AlgorithmConfig::parse(&format!("pcocoa:{shared}")).unwrap();
        assert_eq!(AlgorithmConfig::parse(&format!("pcocoa:preset={p}")).unwrap(), want, "{p}");
    }
    let text = cfg.to_string();
    assert_eq!(AlgorithmConfig::parse(&text).unwrap(), cfg);
    for p in cfg.params() {
        let kv = format!("{}={}", p.key, p.default);
        assert!(text.split([':', ',']).any(|x| x == kv), "{kv} not in {text}");
    }
}
