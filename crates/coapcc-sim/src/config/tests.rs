use super::*;
use crate::link::LossModel;

#[test]
fn defaults_validate_and_round_trip() {
    let c = SimConfig::default();
    c.validate().unwrap();
    let j = serde_json::to_string(&c).unwrap();
    let back: SimConfig = serde_json::from_str(&j).unwrap();
    assert_eq!(back, c);
    // A partial document takes the defaults.
    let p: SimConfig = serde_json::from_str(r#"{"seed": 7, "workload": {"exchanges": 3}}"#).unwrap();
    assert_eq!(p.seed, 7);
    assert_eq!(p.workload.exchanges, 3);
    assert_eq!(p.workload.batch_max, 10);
    assert_eq!(p.link, LinkConfig::default());
}

#[test]
fn unknown_fields_are_rejected() {
    for bad in [
        r#"{"sead": 1}"#,
        r#"{"workload": {"exchange": 3}}"#,
        r#"{"link": {"uplink": [{"rate": {"bits_per_s": 1, "buffer_bytes": 1000, "rate": 3}}]}}"#,
        r#"{"link": {"uplink": [{"loss": {"model": "bernoulli", "p": 0.1, "q": 3}}]}}"#,
        r#"{"link": {"uplink": [{"teleport": {}}]}}"#,
    ] {
        assert!(serde_json::from_str::<SimConfig>(bad).is_err(), "{bad}");
    }
    let ok = r#"{"link": {"uplink": [{"loss": {"model": "gilbert_elliott", "p": 0.1, "r": 0.5, "loss_low": 0, "loss_burst": 1}}]}}"#;
    serde_json::from_str::<SimConfig>(ok).unwrap();
}

#[test]
fn default_sizes() {
    let c = CoapConfig::default();
    assert_eq!((c.request_bytes(), c.response_bytes()), (39, 94));
}

#[test]
fn invalid_configs_give_errors() {
    let check = |f: &dyn Fn(&mut SimConfig), needle: &str| {
        let mut c = SimConfig::default();
        f(&mut c);
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains(needle), "{e:?} should contain {needle:?}");
        assert!(!e.contains('\n'));
    };
    check(&|c| c.groups[0].cc = "reno".into(), "unknown algorithm 'reno'");
    check(&|c| c.groups[0].clients = 0, "zero clients");
    check(&|c| c.groups.clear(), "at least one client group");
    check(&|c| c.link.set_buffer_bytes(50), "smaller than one packet");
    check(&|c| c.coap.response_payload_bytes = 300, "MTU");
    check(&|c| c.coap.uri_path = "x".repeat(300), "MTU");
    check(&|c| c.coap.token_len = 9, "token_len");
    check(&|c| c.coap.ip_version = 5, "ip_version");
    check(
        &|c| {
            c.link.set_loss(&LossModel::Bernoulli { p: 1.5 });
        },
        "probability",
    );
    check(
        &|c| {
            c.link.set_loss(&LossModel::GilbertElliott { p: -0.1, r: 0.5, loss_low: 0.0, loss_burst: 1.0 });
        },
        "probability",
    );
    check(&|c| c.workload.exchanges = 0, "exchanges");
    check(&|c| c.workload.batch_min = 11, "batch");
    check(&|c| c.max_sim_time_s = f64::INFINITY, "max_sim_time_s");
    check(&|c| c.server.processing_delay_ms = -1.0, "processing_delay_ms");
}
