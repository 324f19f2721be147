//! Makarem 2021: every numeric example of the specification, through the registry.
mod common;
use coapcc_cc::makarem::{Makarem, MkEstimator, MkEstimatorParams, RtoVersion};
use coapcc_cc::{AckInfo, Algorithm, AlgorithmConfig, CongestionControl, CopyAck, Instant, TimeoutAction, ALGORITHMS};
use common::*;

const EPS: f64 = 1e-12;

#[track_caller]
fn exact(got: f64, want: f64) {
    assert!((got - want).abs() < EPS, "{got} != {want}");
}

/// Armed timers are whole nanoseconds: exact to the nearest one.
#[track_caller]
fn exact_timer(got: f64, want: f64) {
    assert!((got - want).abs() <= 0.5e-9 + EPS, "{got} != {want}");
}

fn mk(d: &Driver) -> &Makarem {
    match &d.cc {
        Algorithm::Makarem(m) => m,
        other => panic!("not a Makarem algorithm: {}", other.name()),
    }
}

// ---------------------------------------------------------------------------------------------
// The thesis RTO estimator (MR1-MR3).

fn params(version: RtoVersion) -> MkEstimatorParams {
    MkEstimatorParams { version, alpha: 0.125, gamma: 0.03125, k: 4.0, k_spurious: 7.0, min_rto: 0.001 }
}

#[test]
fn mr1_mr3_estimator_vectors() {
    let want_final = [(0.5, 0.25, 1.5), (0.5125, 0.2296875, 1.43125), (0.4984375, 0.2255859375, 1.40078125)];
    let want_v1 = [(0.5, 0.25, 1.5), (0.5125, 0.2296875, 1.43125), (0.4984375, 0.2296875, 1.4171875)];
    for (version, want) in [(RtoVersion::Final, want_final), (RtoVersion::V2, want_final), (RtoVersion::V1, want_v1)] {
        let mut e = MkEstimator::new(2.0);
        for (r, (srtt, rttvar, rto)) in [0.5, 0.6, 0.4].into_iter().zip(want) {
            let got = e.sample(&params(version), r, false);
            exact(e.srtt, srtt);
            exact(e.rttvar, rttvar);
            exact(got, rto);
        }
    }
    // MR2: the third RTO after a spurious retransmission uses K = 7.
    let mut e = MkEstimator::new(2.0);
    e.sample(&params(RtoVersion::Final), 0.5, false);
    e.sample(&params(RtoVersion::Final), 0.6, false);
    exact(e.sample(&params(RtoVersion::Final), 0.4, true), 2.0775390625);
}

/// The same vectors through `makarem-rto`: the RTO is armed undithered and never backed off.
#[test]
fn mr_vectors_through_the_registry() {
    for (spec, third) in
        [("makarem-rto", 1.40078125), ("makarem-rto:version=2", 1.40078125), ("makarem-rto:version=1", 1.4171875)]
    {
        let mut d = Driver::new(spec);
        assert_eq!(d.peek(4), vec![2.0; 5], "{spec}: no dither, no backoff before any sample");
        d.exchange(0, 0.5);
        assert_eq!(d.peek(2), vec![1.5; 3]);
        d.exchange(0, 0.6);
        d.exchange(0, 0.4);
        let t = d.peek(3);
        for x in &t {
            exact(*x, third);
        }
    }
    // MR2: an ACK naming copy 0 after one retransmission reveals a spurious retransmission;
    // with the Transmission Counter the sample is the named copy's RTT.
    let mut d = Driver::new("makarem-rto");
    assert!(d.cc.uses_copy_id());
    d.exchange(0, 0.5);
    d.exchange(0, 0.6);
    let (_, ex) = d.exchange_until(1);
    let ack = AckInfo {
        retransmissions: 1,
        rtt: d.now + secs(0.4) - ex.started(),
        copy: Some(CopyAck { ordinal: 0, rtt: secs(0.4) }),
    };
    d.now = d.now + secs(0.4);
    d.cc.on_ack(d.now, &ex, &ack);
    exact_timer(d.peek(0)[0], 2.0775390625);
    // Without copy identification an ACK after a retransmission gives no sample (Karn).
    let mut d = Driver::new("makarem-rto");
    d.exchange(1, 2.5);
    assert_eq!(d.peek(0), vec![2.0]);
    let mut d = Driver::new("makarem-rto:sample=original");
    d.exchange(1, 2.5);
    exact(d.peek(0)[0], 2.5 + 4.0 * 1.25);
}

// ---------------------------------------------------------------------------------------------
// CoCoA-4-state (FS1, FS2).

#[test]
fn fs1_fs2_four_state_backoff() {
    let mut d = Driver::new("cocoa-4state:ack_timeout=1,dither=off");
    let (t, ex) = d.exchange_until(4);
    assert_seq(&t, &[1.0, 1.1, 1.43, 2.431, 6.0775]);
    assert_eq!(mk(&d).four_state(), 4);
    d.cc.on_ack(d.now, &ex, &AckInfo::new(&ex, d.now));
    assert_eq!(mk(&d).four_state(), 3);
    assert_eq!(d.cc.snapshot().state, Some("S3"));

    let mut d = Driver::new("cocoa-4state:ack_timeout=1,dither=off,four_state_order=increment-then-scale");
    let (t, _) = d.exchange_until(4);
    assert_seq(&t, &[1.0, 1.3, 2.21, 5.525, 13.8125]);

    // The state persists across messages (default), or restarts at 1.
    let mut d = Driver::new("cocoa-4state:ack_timeout=1,dither=off");
    d.exchange(2, 20.0); // s: 1 -> 3, the ACK -> 2
    assert_seq(&d.peek(1), &[1.0, 1.3]);
    let mut d = Driver::new("cocoa-4state:ack_timeout=1,dither=off,four_state_persist=off");
    d.exchange(2, 20.0);
    assert_seq(&d.peek(1), &[1.0, 1.1]);
    // The RTO is the CoCoA strong estimator (gains 1/4, 1/8, K = 4): 0.5 + 4 * 0.25.
    let mut d = Driver::new("cocoa-4state:dither=off");
    d.exchange(0, 0.5);
    assert_seq(&d.peek(0), &[1.5]);
}

// ---------------------------------------------------------------------------------------------
// IDC-CoAP (IDC1-IDC5).

/// Start an exchange at the earliest time the pacing allows (or `at`, if later).
fn start_paced(d: &mut Driver, at: f64) -> coapcc_cc::Exchange {
    let at = Instant::ZERO + secs(at);
    d.now = d.cc.earliest_start(d.now.max(at));
    d.cc.start_exchange(d.now, 0, &mut d.rng)
}

fn before(t: Instant, secs: f64) -> Instant {
    Instant::from_nanos(t.as_nanos() - (secs * 1e9).round() as u64)
}

fn ack_after(d: &mut Driver, ex: &coapcc_cc::Exchange, since_start: f64) {
    d.now = ex.started() + secs(since_start);
    let ack = AckInfo::with_copy(ex, d.now, ex.retransmissions(), ex.started());
    d.cc.on_ack(d.now, ex, &ack);
}

#[test]
fn idc1_to_idc5() {
    // IDC1: spacing 1.0, loss_spacing 0, an ACK: 0.99.
    let mut d = Driver::new("idc-coap:spacing0=1,k=1");
    let ex = start_paced(&mut d, 0.0);
    assert_eq!(s(ex.timer()), 2.0, "the first timer is the initial RTO");
    ack_after(&mut d, &ex, 0.5);
    exact(mk(&d).spacing(), 0.99);
    // The next exchange waits for the spacing.
    let next = d.cc.earliest_start(d.now);
    exact(s(next - Instant::ZERO), 0.99);
    // IDC2: the RTO (now 0.5 + 1 * 0.25 = 0.75) expires: loss_spacing 0.99, spacing 1.485,
    // and the retransmission is paced at last_send + 1.485.
    let mut ex = start_paced(&mut d, 0.0);
    exact(s(ex.timer()), 1.485);
    d.now = d.now + ex.timer();
    let t = d.cc.on_timeout(d.now, &mut ex);
    exact(mk(&d).loss_spacing(), 0.99);
    exact(mk(&d).spacing(), 1.485);
    match t {
        TimeoutAction::Retransmit(t) => exact(s(t), 1.485 * 1.5),
        TimeoutAction::GiveUp => panic!("gave up"),
    }
    // IDC3: an ACK at 1.485 >= 0.99: slow decrease to 1.47015.
    d.now = d.now + secs(0.3);
    let ack = AckInfo::with_copy(&ex, d.now, 1, before(d.now, 0.3));
    d.cc.on_ack(d.now, &ex, &ack);
    exact(mk(&d).spacing(), 1.47015);

    // IDC4: spacing 0.8 below loss_spacing 0.99: fast decrease to 0.4.
    let mut d = Driver::new("idc-coap:spacing0=0.8,loss_spacing0=0.99");
    let ex = start_paced(&mut d, 0.0);
    ack_after(&mut d, &ex, 0.3);
    exact(mk(&d).spacing(), 0.4);
    // IDC5: the same, the ACK 0.5 s after the send: spacing max(0.4, 0.5) = 0.5, next send now.
    let mut d = Driver::new("idc-coap:spacing0=0.8,loss_spacing0=0.99");
    let ex = start_paced(&mut d, 0.0);
    ack_after(&mut d, &ex, 0.5);
    exact(mk(&d).spacing(), 0.5);
    assert_eq!(d.cc.earliest_start(d.now), d.now);
}

/// An ACK between the RTO and the paced retransmission: the loss (declared at the RTO) first,
/// then the ACK, as in the thesis's loop.
#[test]
fn idc_ack_after_the_rto_applies_the_loss_first() {
    let mut d = Driver::new("idc-coap:spacing0=1,k=1");
    let ex = start_paced(&mut d, 0.0);
    ack_after(&mut d, &ex, 0.5); // spacing 0.99, RTO 0.75
    let ex = start_paced(&mut d, 0.0);
    exact(s(ex.timer()), 1.485);
    ack_after(&mut d, &ex, 1.0); // after the RTO (0.75), before the retransmission (1.485)
    exact(mk(&d).loss_spacing(), 0.99);
    exact(mk(&d).spacing(), 1.47015);
}

/// An ACK exactly at the RTO is an ACK, not a loss: the hosts (the reliability layer) take an
/// ACK before a timer expiring at the same instant, and so does the algorithm. With a constant
/// RTT the thesis estimator's RTTVAR decays towards 0 and its RTO reaches the RTT, so every
/// ACK then arrives at the RTO; counting those as losses grew the spacing by iw on every ACK.
#[test]
fn idc_ack_exactly_at_the_rto_is_not_a_loss() {
    // RTO after the first sample: SRTT 0.5 + K 1 * RTTVAR 0.25 = 0.75.
    let mut d = Driver::new("idc-coap:spacing0=1,k=1");
    let ex = start_paced(&mut d, 0.0);
    ack_after(&mut d, &ex, 0.5); // spacing 0.99
    let ex = start_paced(&mut d, 0.0);
    ack_after(&mut d, &ex, 0.75); // at the RTO: spacing 0.99 * 0.99, loss_spacing unchanged
    exact(mk(&d).loss_spacing(), 0.0);
    exact(mk(&d).spacing(), 0.99 * 0.99);
}

#[test]
fn idc_variants() {
    // Algorithm 7: the ACK after a loss returns 3/4 of the way to the congestion level.
    let mut d = Driver::new("idc-coap-extra:spacing0=1,k=1");
    assert_eq!(mk(&d).config().iw, 1.7);
    let ex = start_paced(&mut d, 0.0);
    ack_after(&mut d, &ex, 0.5); // 0.99
    let mut ex = start_paced(&mut d, 0.0);
    d.now = d.now + ex.timer();
    let _ = d.cc.on_timeout(d.now, &mut ex); // loss: loss_spacing 0.99, spacing 1.683
    exact(mk(&d).spacing(), 0.99 * 1.7);
    d.now = d.now + secs(0.2);
    let ack = AckInfo::with_copy(&ex, d.now, 1, before(d.now, 0.2));
    d.cc.on_ack(d.now, &ex, &ack);
    exact(mk(&d).spacing(), 1.683 - 3.0 * (1.683 - 0.99) / 4.0);

    // Algorithm 9: the ACK after a loss halves the distance to 1.01 * loss_spacing, then the
    // counter runs to 10 and probes at loss_spacing.
    let mut d = Driver::new("idc-coap-exp:spacing0=1,k=1");
    let ex = start_paced(&mut d, 0.0);
    ack_after(&mut d, &ex, 0.5); // no loss yet: spacing 0.5 * 1 = 0.5
    exact(mk(&d).spacing(), 0.5);
    let mut ex = start_paced(&mut d, 0.0);
    d.now = d.now + ex.timer();
    let _ = d.cc.on_timeout(d.now, &mut ex); // loss_spacing 0.5, spacing max(0.75, RTO 0.75)
    d.now = d.now + secs(0.1);
    let ack = AckInfo::with_copy(&ex, d.now, 1, before(d.now, 0.1));
    d.cc.on_ack(d.now, &ex, &ack); // n = 1: 0.5 * 0.5 ... then the lost-previous halving
    let sp: f64 = 0.75 * 0.5; // n was 11 (no loss yet): spacing = 0.5 * spacing
    let sp = sp - (sp - 1.01 * 0.5) * 0.5;
    exact(mk(&d).spacing(), sp.max(0.1));

    // The counter's start (a gap, counter0): 11 = no loss yet halves the spacing per ACK; below
    // 10 the spacing moves half-way to 1.01 * loss_spacing.
    for (counter0, want) in [(11, 0.5), (1, 1.0 - (1.0 - 1.01 * 0.2) * 0.5)] {
        let mut d = Driver::new(&format!("idc-coap-exp:spacing0=1,loss_spacing0=0.2,counter0={counter0}"));
        let ex = start_paced(&mut d, 0.0);
        ack_after(&mut d, &ex, 0.1);
        exact(mk(&d).spacing(), want);
    }

    // Algorithm 8 parses with its own constants.
    let d = Driver::new("idc-coap-probing");
    assert_eq!(mk(&d).config().dw, 0.25);
    assert!(AlgorithmConfig::parse("idc-coap-probing:probe_increase=subtract,probe_save_loss=on").is_ok());
}

// ---------------------------------------------------------------------------------------------
// MBC-CoAP (MBC1).

#[test]
fn mbc1_spacing_from_the_window() {
    // The first ACK (RTT 1.0) fills the window; inter-ACK samples 0.8 then 0.9 follow, so
    // min(Spacings) = 0.8 and the spacing is 0.8 / pacing gain: 0.64 in the probing phase
    // (event 8 of the cycle), 1.0667 in the preventive phase (event 9), 0.8 otherwise.
    let mut d = Driver::new("mbc-coap");
    let ex = start_paced(&mut d, 0.0);
    ack_after(&mut d, &ex, 1.0);
    exact(mk(&d).spacing(), 1.0 / 0.75); // event 1: preventive phase
    let mut ack_at = 1.0;
    let mut got = vec![];
    for k in 2..=9 {
        ack_at += if k == 2 { 0.8 } else { 0.9 };
        let ex = start_paced(&mut d, 0.0);
        let since = ack_at - s(ex.started() - Instant::ZERO);
        assert!(since > 0.0 && since < s(ex.timer()), "event {k}: the ACK must come before the RTO");
        ack_after(&mut d, &ex, since);
        got.push(mk(&d).spacing());
    }
    let want = [0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.64, 0.8 / 0.75];
    for (g, w) in got.iter().zip(want) {
        exact(*g, w);
    }
}

// ---------------------------------------------------------------------------------------------
// Registry, presets, parameters.

#[test]
fn registered_with_presets_and_gaps_as_parameters() {
    for name in
        ["makarem-rto", "cocoa-4state", "idc-coap", "idc-coap-extra", "idc-coap-probing", "idc-coap-exp", "mbc-coap"]
    {
        let info = ALGORITHMS.iter().find(|a| a.name == name).expect("registered");
        let cfg = info.default_config();
        assert_eq!(AlgorithmConfig::parse(&format!("{name}:preset=makarem2021")).unwrap(), cfg, "{name}");
        assert_eq!(AlgorithmConfig::parse(&cfg.to_string()).unwrap(), cfg);
        assert_eq!(cfg.max_retransmit(), 4, "r = 4");
    }
    for (spec, key) in [
        ("makarem-rto:version=3", "version"),
        ("idc-coap:iw=0.5", "iw"),
        ("mbc-coap:m=0", "m"),
        ("mbc-coap:m=17", "m"),
        ("idc-coap:m=3", "m"),
        ("cocoa-4state:four_state_order=sideways", "four_state_order"),
    ] {
        let e = AlgorithmConfig::parse(spec).unwrap_err().to_string();
        assert!(e.contains(key), "{spec}: {e}");
    }
    let cfg = AlgorithmConfig::parse("makarem-rto").unwrap().to_string();
    assert!(cfg.contains("version=final") && cfg.contains("gamma=0.03125") && cfg.contains("k_spurious=7"), "{cfg}");
    let cfg = AlgorithmConfig::parse("idc-coap").unwrap().to_string();
    assert!(cfg.contains("iw=1.5,dw=0.01,fw=0.5"), "{cfg}");
    let cfg = AlgorithmConfig::parse("mbc-coap").unwrap().to_string();
    assert!(cfg.contains("m=10,probe_gain=1.25,drain_gain=0.75"), "{cfg}");
}
