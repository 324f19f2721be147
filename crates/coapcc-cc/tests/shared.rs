//! One meaning per algorithm name, every preset for every algorithm, and the shared
//! transmission parameters set once for any algorithm.
mod common;
use coapcc_cc::common::DitherMode;
use coapcc_cc::{
    AlgorithmConfig, CongestionControl, Instant, Preset, SharedError, SplitMix64, TimeoutAction, TransmissionOverrides,
    ALGORITHMS, SHARED_PARAMS,
};
use common::PRESET_SHARED;

/// Algorithms without a backoff: every copy waits the RTO (makarem-rto, bdp-coap) or the
/// pacing of a rate-based control; they have no backed-off timer to cap.
const NO_BACKOFF: &[&str] =
    &["makarem-rto", "idc-coap", "idc-coap-extra", "idc-coap-probing", "idc-coap-exp", "mbc-coap", "bdp-coap"];

fn has_backoff(cfg: &AlgorithmConfig) -> bool {
    !NO_BACKOFF.contains(&cfg.name())
}

fn parse(spec: &str) -> AlgorithmConfig {
    AlgorithmConfig::parse(spec).unwrap_or_else(|e| panic!("{spec}: {e}"))
}

fn shared(cfg: &AlgorithmConfig, name: &str) -> String {
    cfg.shared_value(name).unwrap_or_else(|| panic!("{} lacks {name}", cfg.name())).to_string()
}

#[test]
fn every_algorithm_accepts_every_preset() {
    for a in ALGORITHMS {
        for (p, preset) in Preset::ALL {
            let cfg = parse(&format!("{}:preset={p}", a.name));
            let mut c = a.default_config();
            assert_eq!(c.apply_preset(*preset), Ok(()), "{} {p}", a.name);
            assert_eq!(c, cfg);
        }
    }
}

#[test]
fn a_name_alone_means_the_specification_defaults() {
    for a in ALGORITHMS {
        let plain = parse(a.name);
        assert_eq!(plain, parse(&format!("{}:preset=rfc7252", a.name)), "{}", a.name);
        // RFC 7252's transmission parameters.
        for (name, want) in [("ack_timeout", "2"), ("ack_random_factor", "1.5"), ("max_retransmit", "4")] {
            assert_eq!(shared(&plain, name), want, "{} {name}", a.name);
        }
    }
}

#[test]
fn a_preset_gives_every_algorithm_the_same_testbed() {
    for (p, text) in PRESET_SHARED {
        let testbed = parse(&format!("default:{text}"));
        for a in ALGORITHMS {
            let cfg = parse(&format!("{}:preset={p}", a.name));
            for name in ["ack_timeout", "ack_random_factor", "max_retransmit", "wait_after_last"] {
                assert_eq!(shared(&cfg, name), shared(&testbed, name), "{} under {p}: {name}", a.name);
            }
        }
    }
    // The dither of the client that ran each algorithm: libcoap's random byte for Default CoAP.
    assert_eq!(shared(&parse("default:preset=helsinki2018"), "dither"), "libcoap-8bit");
    assert_eq!(shared(&parse("cocoa:preset=helsinki2018"), "dither"), "uniform");
}

#[test]
fn every_algorithm_has_every_shared_parameter() {
    for a in ALGORITHMS {
        let mut cfg = a.default_config();
        let values: Vec<_> = cfg.shared_values().map(|(n, v)| (n, v.map(|v| v.to_string()))).collect();
        assert_eq!(values.len(), SHARED_PARAMS.len());
        assert!(values.iter().all(|(n, v)| v.is_some() || (*n == "backoff_cap" && !has_backoff(&cfg))), "{}", a.name);
        cfg.set_shared("max_retransmit", "20").unwrap();
        if !has_backoff(&cfg) {
            let e = cfg.set_shared("backoff_cap", "45").unwrap_err();
            assert_eq!(e, SharedError::NotApplicable { name: "backoff_cap", algorithm: a.name });
            assert!(e.to_string().contains("has no parameter"), "{e}");
            assert!(cfg.shared_value("backoff_cap").is_none());
            continue;
        }
        cfg.set_shared("backoff_cap", "45").unwrap();
        cfg.set_shared("ACK_TIMEOUT", "1.5").unwrap();
        assert_eq!(cfg.max_retransmit(), 20);
        assert_eq!(shared(&cfg, "backoff_cap"), "45", "{}", a.name);
        assert_eq!(shared(&cfg, "ack_timeout"), "1.5", "{}", a.name);
        // Through the algorithm's own key as well, and it round-trips through the text.
        let key = cfg.shared_param("backoff_cap").unwrap().key;
        assert_eq!(cfg.value(key).unwrap().to_string(), "45");
        assert_eq!(parse(&cfg.to_string()), cfg);
    }
    let cocoa = parse("cocoa:cap=12");
    assert_eq!(cocoa.shared_param("backoff_cap").unwrap().key, "cap");
    assert_eq!(shared(&cocoa, "backoff_cap"), "12");
    assert_eq!(parse("californium-cocoa").shared_param("backoff_cap").unwrap().key, "max_ack_timeout");
}

#[test]
fn shared_errors_are_clear() {
    let mut cfg = parse("cocoa");
    let e = cfg.set_shared("nstart", "2").unwrap_err();
    assert_eq!(e, SharedError::Unknown { name: "nstart" });
    assert!(e.to_string().contains("valid: ack_timeout, ack_random_factor"), "{e}");
    let e = cfg.set_shared("max_retransmit", "many").unwrap_err();
    assert!(e.to_string().contains("an integer 0..=255"), "{e}");
    let mut cf = parse("californium-cocoa");
    let e = cf.set_shared("backoff_cap", "none").unwrap_err().to_string();
    assert!(e.contains("max_ack_timeout") && e.contains("californium-cocoa"), "{e}");
    assert_eq!(cf, parse("californium-cocoa"), "a rejected value changes nothing");
}

#[test]
fn overrides_apply_after_the_preset() {
    let o = TransmissionOverrides { max_retransmit: Some(7), ..Default::default() };
    let mut cfg = parse("default:preset=helsinki2018");
    o.apply(&mut cfg).unwrap();
    assert_eq!(cfg.max_retransmit(), 7);
    assert_eq!(shared(&cfg, "backoff_cap"), "60", "the rest of the preset stays");
    // Typed overrides equal the same values set by name.
    let o = TransmissionOverrides {
        ack_timeout: Some(2.5),
        ack_random_factor: Some(1.25),
        max_retransmit: Some(9),
        dither: Some(DitherMode::Off),
        wait_after_last: Some(false),
        backoff_cap: Some(None),
    };
    for a in ALGORITHMS {
        let mut typed = a.default_config();
        let mut text = a.default_config();
        let r = o.apply(&mut typed);
        if a.name == "californium-cocoa" || !has_backoff(&typed) {
            assert!(r.is_err(), "Californium's MAX_ACK_TIMEOUT cannot be removed");
            continue;
        }
        r.unwrap();
        for (n, v) in [
            ("ack_timeout", "2.5"),
            ("ack_random_factor", "1.25"),
            ("max_retransmit", "9"),
            ("dither", "off"),
            ("wait_after_last", "off"),
            ("backoff_cap", "none"),
        ] {
            text.set_shared(n, v).unwrap();
        }
        assert_eq!(typed, text, "{}", a.name);
    }
}

/// The shared cap bounds every backed-off timer of every algorithm.
#[test]
fn shared_backoff_cap_bounds_every_algorithm() {
    for a in ALGORITHMS {
        let mut cfg = a.default_config();
        if !has_backoff(&cfg) {
            continue;
        }
        cfg.set_shared("backoff_cap", "5").unwrap();
        cfg.set_shared("max_retransmit", "8").unwrap();
        let mut cc = cfg.build();
        let mut rng = SplitMix64::new(1);
        let mut now = Instant::from_millis(5);
        let mut ex = cc.start_exchange(now, 0, &mut rng);
        let mut timers = vec![ex.timer().as_secs_f64()];
        loop {
            now = now + ex.timer();
            match cc.on_timeout(now, &mut ex) {
                TimeoutAction::Retransmit(t) => timers.push(t.as_secs_f64()),
                TimeoutAction::GiveUp => break,
            }
        }
        assert_eq!(timers.len(), 9, "{}", a.name);
        assert!(timers.iter().all(|t| *t <= 5.0 + 1e-9), "{}: {timers:?}", a.name);
        assert!(timers.iter().any(|t| (*t - 5.0).abs() < 1e-9), "{}: the cap binds: {timers:?}", a.name);
    }
}
