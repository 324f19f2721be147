//! BDP-CoAP through the registry: the thesis's rules (10-phase gains 1.2/0.8, min-max filter
//! over the last 10 attempts with the retransmission-fraction weight, retransmission samples
//! discarded, RTO_init exactly CoCoA+'s and never backed off, BDP <= 1 with NSTART = 1) on
//! hand-computed traces, and the ablation flags.
mod common;
use coapcc_cc::bdp::BdpCoap;
use coapcc_cc::{AckInfo, Algorithm, AlgorithmConfig, CongestionControl, Exchange, Instant, SplitMix64, TimeoutAction};
use common::*;

#[track_caller]
fn near(got: f64, want: f64) {
    assert!((got - want).abs() < 1e-9, "{got} != {want}");
}

fn bdp(cc: &Algorithm) -> &BdpCoap {
    match cc {
        Algorithm::Bdp(b) => b,
        other => panic!("not bdp-coap: {}", other.name()),
    }
}

fn at(t: f64) -> Instant {
    Instant::ZERO + secs(t)
}

struct D {
    cc: Algorithm,
    rng: SplitMix64,
}

impl D {
    fn new(spec: &str) -> Self {
        let cfg = AlgorithmConfig::parse(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        D { cc: cfg.build(), rng: SplitMix64::new(3) }
    }
    fn b(&self) -> &BdpCoap {
        bdp(&self.cc)
    }
    fn start(&mut self, t: f64) -> Exchange {
        self.cc.start_exchange(at(t), 0, &mut self.rng)
    }
    fn ack(&mut self, ex: &Exchange, t: f64) {
        self.cc.on_ack(at(t), ex, &AckInfo::new(ex, at(t)));
    }
    fn timeout(&mut self, ex: &mut Exchange, t: f64) -> Option<f64> {
        match self.cc.on_timeout(at(t), ex) {
            TimeoutAction::Retransmit(d) => Some(s(d)),
            TimeoutAction::GiveUp => None,
        }
    }
    fn earliest(&self, now: f64) -> f64 {
        s(self.cc.earliest_start(at(now)) - Instant::ZERO)
    }
}

/// The hand trace of the module documentation, dither off, CoCoA+'s default (RFC 6298)
/// gains. Exchanges 1-3 are acknowledged after 0.5 s; exchange 4 loses its original.
#[test]
fn hand_trace_pacing_filter_and_rto() {
    let mut d = D::new("bdp-coap:dither=off");
    assert_eq!(d.cc.name(), "bdp-coap");
    assert_eq!(d.b().gap(), 0.0, "nothing paced before the first sample");
    // Exchange 1 at 0: T_0 = ACK_TIMEOUT = 2 s. ACK at 0.5: sample 1/0.5 = 2 pkt/s (from the
    // first send), phase 1 = probing, gain 1.2, gap 1/(2 x 1.2).
    let ex = d.start(0.0);
    near(s(ex.timer()), 2.0);
    d.ack(&ex, 0.5);
    near(d.b().bandwidth(), 2.0);
    assert_eq!(d.b().phase(), 1);
    near(d.b().pacing_gain(), 1.2);
    near(d.b().gap(), 1.0 / 2.4);
    near(d.earliest(0.5), 0.5); // 0 + 0.41667 is already past
                                // CoCoA+: strong E = 0.5 + 4 x 0.25 = 1.5, RTO = 0.5 x 1.5 + 0.5 x 2 = 1.75.
    near(s(d.cc.snapshot().rto), 1.75);
    // Exchange 2 at 0.5, ACK at 1.0: 2 pkt/s again, phase 2 = preventive, gain 0.8.
    let ex = d.start(0.5);
    near(s(ex.timer()), 1.75);
    d.ack(&ex, 1.0);
    assert_eq!(d.b().phase(), 2);
    near(d.b().gap(), 1.0 / 1.6);
    near(d.earliest(1.0), 1.125);
    near(s(d.cc.snapshot().rto), 1.5); // RTTVAR 0.1875, E = 1.25
                                       // Exchange 3 at 1.125, ACK at 1.625: inter-ACK 0.625 s, sample 1.6 pkt/s; w = 0, so the
                                       // filter is the max, 2; phase 3, gain 1.
    let ex = d.start(1.125);
    d.ack(&ex, 1.625);
    near(d.b().bandwidth(), 2.0);
    near(d.b().gap(), 0.5);
    near(s(d.cc.snapshot().rto), 1.28125); // RTTVAR 0.140625, E = 1.0625
                                           // BDP = 2 pkt/s x min RTT 0.5 s = 1: within [0, 1] with NSTART = 1.
    near(d.b().bdp(), 1.0);
    assert_eq!(d.b().inflight_limit(), 1);
    // Exchange 4 at 1.625: T_0 = 1.28125 (> gap 0.5). The original is lost: the
    // retransmission at 2.90625 waits the same 1.28125 (no backoff factor) and slides the
    // window: 1 retransmission in 10 attempts, filter 0.9 x 2 + 0.1 x 1.6 = 1.96.
    let mut ex = d.start(1.625);
    near(s(ex.timer()), 1.28125);
    near(d.timeout(&mut ex, 2.90625).unwrap(), 1.28125);
    assert_eq!(d.b().window_retransmissions(), 1);
    near(d.b().min_weight(), 0.1);
    near(d.b().bandwidth(), 1.96);
    // Its ACK 0.5 s later: the bandwidth sample is discarded and the phase stays; CoCoA+'s
    // weak estimator takes R = 1.78125 from the original: E_w = 1.78125 + 0.890625,
    // RTO = 0.25 x 2.671875 + 0.75 x 1.28125.
    d.ack(&ex, 3.40625);
    assert_eq!(d.b().phase(), 3);
    near(d.b().bandwidth(), 1.96);
    near(s(d.cc.snapshot().rto), 1.62890625);
    near(d.earliest(3.40625), 2.90625 + 1.0 / 1.96);
}

fn warm(d: &mut D) {
    // The first three exchanges of the hand trace: samples 2, 2, 1.6 pkt/s, phase 3.
    for (t0, t1) in [(0.0, 0.5), (0.5, 1.0), (1.125, 1.625)] {
        let ex = d.start(t0);
        d.ack(&ex, t1);
    }
}

/// The window slides at every attempt: a failed exchange (1 + 4 attempts) leaves 8 attempts,
/// 4 of them retransmissions (w = 0.4); 2 more attempts push the samples 2 and 2 out.
#[test]
fn window_of_attempts() {
    let mut d = D::new("bdp-coap:dither=off,pace_retransmissions=off");
    warm(&mut d);
    let mut ex = d.start(1.625);
    let t0 = s(ex.timer());
    let mut t = 1.625;
    let mut timers = vec![t0];
    loop {
        t += timers[timers.len() - 1];
        match d.timeout(&mut ex, t) {
            Some(x) => timers.push(x),
            None => break,
        }
    }
    assert_seq(&timers, &[t0; 5]); // every copy waits RTO_init: no backoff
    assert_eq!(d.b().window_retransmissions(), 4);
    near(d.b().bandwidth(), 0.6 * 2.0 + 0.4 * 1.6);
    // Two more attempts (an original and one retransmission) fill the window: 10 attempts,
    // 5 retransmissions, w = 0.5.
    let mut ex = d.start(t);
    t += t0;
    d.timeout(&mut ex, t).unwrap();
    assert_eq!(d.b().window_retransmissions(), 5);
    near(d.b().bandwidth(), 0.5 * 2.0 + 0.5 * 1.6);
    d.ack(&ex, t + 0.5); // a retransmitted CON: its sample is discarded
    t += 0.5;
    // From now on every attempt pushes the oldest out: the first sample 2 (an original
    // replaces it), the second 2 (a retransmission), then 1.6: nothing is left to pace by.
    let mut ex = d.start(t);
    near(d.b().bandwidth(), 0.5 * 2.0 + 0.5 * 1.6);
    t += t0;
    d.timeout(&mut ex, t).unwrap();
    assert_eq!(d.b().window_retransmissions(), 6);
    near(d.b().bandwidth(), 1.6);
    t += t0;
    d.timeout(&mut ex, t).unwrap();
    assert_eq!(d.b().bandwidth(), 0.0);
    assert_eq!(d.b().gap(), 0.0);
    near(d.earliest(t), t);
}

/// The 10-phase cycle: probing (1.2) first, then preventive (0.8), then eight phases of 1,
/// repeating; `probe_phase` moves both.
#[test]
fn ten_phase_gain_cycle() {
    for (spec, probe) in [("bdp-coap", 1usize), ("bdp-coap:probe_phase=10", 10)] {
        let mut d = D::new(spec);
        let mut gains = vec![];
        let mut t = 0.0;
        for _ in 0..20 {
            let ex = d.start(t);
            t += 0.5;
            d.ack(&ex, t);
            gains.push(d.b().pacing_gain());
        }
        let drain = probe % 10 + 1;
        let want: Vec<f64> = (0..20)
            .map(|i| {
                let phase = i % 10 + 1;
                if phase == probe {
                    1.2
                } else if phase == drain {
                    0.8
                } else {
                    1.0
                }
            })
            .collect();
        assert_seq(&gains, &want);
    }
}

/// The ablation flags and the fixed weight.
#[test]
fn ablations() {
    // bdp_max_filter_only: the max, whatever the retransmissions.
    let mut d = D::new("bdp-coap:dither=off,bdp_max_filter_only=on");
    warm(&mut d);
    let mut ex = d.start(1.625);
    d.timeout(&mut ex, 2.90625).unwrap();
    near(d.b().bandwidth(), 2.0);
    // bdp_include_retx_samples: the ACK of the retransmitted CON gives a sample (inter-ACK
    // 3.40625 - 1.625 = 1.78125 s) in the retransmission's slot and advances the phase.
    let mut d = D::new("bdp-coap:dither=off,bdp_include_retx_samples=on");
    warm(&mut d);
    let mut ex = d.start(1.625);
    d.timeout(&mut ex, 2.90625).unwrap();
    d.ack(&ex, 3.40625);
    assert_eq!(d.b().phase(), 4);
    near(d.b().bandwidth(), 0.9 * 2.0 + 0.1 * (1.0 / 1.78125));
    // A fixed min weight.
    let mut d = D::new("bdp-coap:bdp_min_weight=0.5");
    warm(&mut d);
    near(d.b().bandwidth(), 0.5 * 2.0 + 0.5 * 1.6);
    // bw_sample=rtt: 1/RTT, so the third sample is 2 too and the filter is 2 at any weight.
    let mut d = D::new("bdp-coap:bw_sample=rtt,bdp_min_weight=1");
    warm(&mut d);
    near(d.b().bandwidth(), 2.0);
}

/// A retransmission respects the pacing gap: with a gap larger than RTO_init its timer is
/// the gap (pace_retransmissions=on), RTO_init otherwise. Filter = min (weight 1): samples 2
/// and 0.25 pkt/s (ACK 4 s after the previous one), phase 2 (gain 0.8): gap 1/(0.25 x 0.8) =
/// 5 s. CoCoA+: strong samples 0.5 and 4: E = 0.9375 + 4 x 1.0625, RTO = 3.46875.
#[test]
fn paced_retransmission() {
    for (pace, want) in [("on", 5.0), ("off", 3.46875)] {
        let mut d = D::new(&format!("bdp-coap:dither=off,bdp_min_weight=1,pace_retransmissions={pace}"));
        let ex = d.start(0.0);
        d.ack(&ex, 0.5);
        let ex = d.start(0.5);
        d.ack(&ex, 4.5);
        near(d.b().bandwidth(), 0.25);
        near(d.b().gap(), 5.0);
        near(s(d.cc.snapshot().rto), 3.46875);
        near(d.earliest(4.5), 5.5);
        let mut ex = d.start(5.5);
        near(s(ex.timer()), want);
        near(ex.start_rto().as_secs_f64(), 3.46875);
        near(d.timeout(&mut ex, 5.5 + want).unwrap(), want);
    }
}

/// RTO_init is exactly CoCoA+'s (the same code): the same ACK/loss history gives the same
/// estimators, the same RTO and the same dithered T_0, under every preset; only the
/// retransmission timers differ (CoCoA+ backs off, BDP-CoAP does not).
#[test]
fn rto_init_is_cocoa_plus() {
    for preset in ["", ":preset=makarem2021", ":preset=ancillotti-cooja", ":preset=rfc7252"] {
        let spec_b = format!("bdp-coap{preset}");
        let spec_c = format!("cocoa-plus{preset}");
        let mut b = AlgorithmConfig::parse(&spec_b).unwrap().build();
        let mut c = AlgorithmConfig::parse(&spec_c).unwrap().build();
        let (mut rb, mut rc) = (SplitMix64::new(9), SplitMix64::new(9));
        let mut script = SplitMix64::new(42);
        let mut now = Instant::ZERO;
        for i in 0..300 {
            use coapcc_cc::Entropy;
            let x = script.next_u64();
            now = now + secs((x % 40_000) as f64 * 1e-3); // idle 0-40 s: ageing applies
            let mut eb = b.start_exchange(now, 0, &mut rb);
            let mut ec = c.start_exchange(now, 0, &mut rc);
            assert_eq!(eb.start_rto(), ec.start_rto(), "{spec_b} #{i}");
            assert_eq!(b.snapshot().rto, c.snapshot().rto, "{spec_b} #{i}");
            let n = ((x >> 20) % 4) as u32; // retransmissions before the ACK (3: no ACK)
            let mut t = now;
            let mut gave_up = false;
            for _ in 0..n.min(3) {
                t = t + ec.timer();
                let _ = b.on_timeout(t, &mut eb);
                if c.on_timeout(t, &mut ec) == TimeoutAction::GiveUp {
                    gave_up = true;
                }
            }
            if n < 3 && !gave_up {
                let rtt = secs(0.05 + ((x >> 32) % 3000) as f64 * 1e-3);
                let t = t + rtt;
                b.on_ack(t, &eb, &AckInfo { rtt: t - eb.started(), ..AckInfo::new(&eb, t) });
                c.on_ack(t, &ec, &AckInfo { rtt: t - ec.started(), ..AckInfo::new(&ec, t) });
                now = t;
            } else {
                now = t;
            }
            let (sb, sc) = (b.snapshot(), c.snapshot());
            assert_eq!((sb.rto, sb.strong, sb.weak), (sc.rto, sc.strong, sc.weak), "{spec_b} #{i}");
        }
    }
}

/// With NSTART = 1 the BDP stays within [0, 1] whatever the RTTs and losses.
#[test]
fn bdp_within_one_with_nstart_1() {
    use coapcc_cc::Entropy;
    for spec in ["bdp-coap", "bdp-coap:bdp_include_retx_samples=on", "bdp-coap:bw_sample=rtt,bdp_max_filter_only=on"] {
        let mut d = D::new(spec);
        let mut script = SplitMix64::new(7);
        let mut t = 0.0;
        for _ in 0..500 {
            let x = script.next_u64();
            t = d.earliest(t) + (x % 100) as f64 * 1e-3;
            let mut ex = d.start(t);
            let lost = (x >> 8) % 4;
            let mut sent = t;
            for _ in 0..lost {
                sent += s(ex.timer());
                if d.timeout(&mut ex, sent).is_none() {
                    break;
                }
            }
            if ex.retransmissions() == lost as u32 && lost < 4 {
                t = sent + 0.01 + ((x >> 16) % 2000) as f64 * 1e-3;
                d.ack(&ex, t);
            } else {
                t = sent + s(ex.timer());
            }
            let b = d.b().bdp();
            assert!((0.0..=1.0 + 1e-12).contains(&b), "{spec}: BDP {b}");
            assert_eq!(d.b().inflight_limit(), 1);
        }
    }
}

/// Registered with a makarem2021 preset (the thesis's CoCoA+: swapped gains, r = 4) and every
/// gap as a parameter; bad values are clear errors.
#[test]
fn registry_preset_and_parameters() {
    let info = coapcc_cc::lookup("bdp-coap").expect("registered");
    let text = info.default_config().to_string();
    for kv in [
        "window=10",
        "cycle=10",
        "probe_gain=1.2",
        "drain_gain=0.8",
        "min_weight=retx-fraction",
        "include_retx_samples=off",
        "max_filter_only=off",
        "gains=rfc6298",
    ] {
        assert!(text.split([':', ',']).any(|x| x == kv), "{kv} missing in {text}");
    }
    let m = AlgorithmConfig::parse("bdp-coap:preset=makarem2021").unwrap();
    assert_eq!(m.max_retransmit(), 4);
    assert_eq!(m.value("gains").unwrap().to_string(), "californium");
    assert_eq!(m.value("bdp_min_weight").unwrap().to_string(), "retx-fraction");
    // The thesis's CoCoA+ estimator: the same RTO as cocoa-plus:preset=makarem2021 after a
    // sample of 0.5 s (swapped gains: E = 1.5, RTO = 1.75 either way; a second sample 0.7 s
    // separates the gains: RTTVAR = 0.875 x 0.25 + 0.125 x 0.2, SRTT = 0.75 x 0.5 + 0.25 x 0.7).
    let mut d = D::new("bdp-coap:preset=makarem2021,dither=off");
    let ex = d.start(0.0);
    d.ack(&ex, 0.5);
    let ex = d.start(1.0);
    d.ack(&ex, 1.7);
    let e = 0.55 + 4.0 * (0.875 * 0.25 + 0.125 * 0.2);
    near(s(d.cc.snapshot().rto), 0.5 * e + 0.5 * 1.75);
    for (spec, key) in [
        ("bdp-coap:window=11", "window"),
        ("bdp-coap:cycle=1", "cycle"),
        ("bdp-coap:probe_phase=11", "probe_phase"),
        ("bdp-coap:bdp_min_weight=2", "bdp_min_weight"),
        ("bdp-coap:bw_sample=ewma", "bw_sample"),
        ("bdp-coap:vbf_table=draft03", "vbf_table"),
    ] {
        let e = AlgorithmConfig::parse(spec).unwrap_err().to_string();
        assert!(e.contains(key), "{spec}: {e}");
    }
}
