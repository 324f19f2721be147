use super::*;
use crate::config::{SimConfig, WorkloadKind};

fn norm(text: &str) -> R<Json> {
    normalize(&Json::parse(text).unwrap())
}

fn err(text: &str) -> ParamError {
    norm(text).and_then(|p| to_config(&p).map(|_| p)).unwrap_err()
}

#[test]
fn defaults_are_the_simulators() {
    let p = norm("{}").unwrap();
    let mut want = SimConfig::default();
    want.groups[0].cc = "default".into();
    assert_eq!(to_config(&p).unwrap(), want);
    // The parameters' own order, every one present.
    let names: Vec<&str> = match &p {
        Json::Obj(m) => m.iter().map(|(k, _)| k.as_str()).collect(),
        _ => unreachable!(),
    };
    assert_eq!(names, FIELDS.iter().map(|f| f.name).collect::<Vec<_>>());
}

#[test]
fn errors_name_the_parameter_at_fault() {
    let cases = [
        (r#"{"clients": 0}"#, "clients", "must be >= 1"),
        (r#"{"clients": 2.5}"#, "clients", "expected an integer"),
        (r#"{"clinets": 3}"#, "clinets", "did you mean 'clients'"),
        (r#"{"link.downlink_rate": 3}"#, "link.downlink_rate", "did you mean 'downlink_rate_bps'"),
        (r#"{"link": {"downlink_rate_bps": 0}}"#, "link.downlink_rate_bps", "> 0"),
        (r#"{"coap.ip_version": 5}"#, "coap.ip_version", "unknown value 5"),
        (r#"{"errors": "sometimes"}"#, "errors", "bernoulli"),
        (r#"{"workload": "bursty"}"#, "workload", "unknown value 'bursty'"),
        (r#"{"batch_min": 5, "batch_max": 2}"#, "batch_min", "exceeds batch_max"),
        (r#"{"groups": [{"algorithm": "default"}]}"#, "groups[0]", "exactly one of clients or share"),
        (r#"{"groups": [{"algoritm": "x", "clients": 1}]}"#, "groups[0].algoritm", "did you mean 'algorithm'"),
        (r#"{"preset": "helsinki18"}"#, "preset", "did you mean 'helsinki2018'"),
        (r#"{"max_retransmits": 3}"#, "max_retransmits", "unknown configuration key"),
        (
            r#"{"transmission": {"max_retransmits": 3}}"#,
            "transmission.max_retransmits",
            "did you mean 'max_retransmit'",
        ),
        (r#"{"algorithm": "reno"}"#, "algorithm", "unknown algorithm 'reno'"),
        (r#"{"coap.response_payload_bytes": 5000}"#, "coap.response_payload_bytes", "MTU"),
        (r#"{"topology": "grid:x"}"#, "topology", "grid"),
        (r#"{"topology": "grid:3", "mesh.mac.min_be": 9}"#, "mesh.mac.min_be", "max_be"),
        (r#"{"topology": "grid:3", "mesh": {"mac.nope": 1}}"#, "mesh.mac.nope", "unknown mesh parameter"),
        (r#"{"workload": "periodic:3"}"#, "workload", "over a mesh"),
        (
            r#"{"topology": "grid:3", "workload": "periodic:3", "messages.unit_bytes": 0}"#,
            "messages.unit_bytes",
            "positive",
        ),
        (r#"{"topology": "grid:3", "workload": "periodic:3", "messages.nope": 0}"#, "messages.nope", "unknown key"),
        (r#"{"access_links": [{"groups": [3]}]}"#, "access_links[0].groups", "does not exist"),
        (r#"{"access_links": [{"groups": [0], "errors": "x"}]}"#, "access_links[0].errors", "bernoulli"),
    ];
    for (text, key, needle) in cases {
        let e = err(text);
        assert_eq!(e.key, key, "{text}: {e}");
        assert!(e.to_string().contains(needle), "{text}: {e}");
        assert_eq!(e.to_string().lines().count(), 1);
    }
}

#[test]
fn a_mesh_run_and_access_links_are_parameters_too() {
    let p = norm(
        r#"{"topology": "grid:3", "mesh_preset": "ancillotti-cooja", "workload": "periodic:2",
                  "clients": 7, "max_sim_time_s": 60, "mesh.mac.queue_packets": 4, "messages": {"unit_bytes": 16}}"#,
    )
    .unwrap();
    let cfg = to_config(&p).unwrap();
    let m = cfg.topology.mesh.as_ref().unwrap();
    assert_eq!((m.topology.as_str(), m.mac.queue_packets), ("grid:3", 4));
    assert_eq!(m.mac.csma, coapcc_mesh::config::CsmaMode::Contiki);
    assert_eq!(cfg.workload.kind, WorkloadKind::Periodic { load_kbps: 2.0 });
    assert_eq!(cfg.workload.messages.as_ref().unwrap().unit_bytes, 16);
    let r = crate::simulate(&cfg).unwrap();
    assert!(r.messages.unwrap().clients.iter().all(|c| c.messages > 0));
    let p = norm(
        r#"{"groups": [{"algorithm": "cocoa", "clients": 2}, {"algorithm": "default", "clients": 3}],
                  "access_links": [{"groups": [1], "buffer_bytes": 2500, "downlink_delay_ms": 100}]}"#,
    )
    .unwrap();
    let cfg = to_config(&p).unwrap();
    assert_eq!(cfg.topology.access_links[0].groups, vec![1]);
    assert_eq!(cfg.total_clients(), 5);
}

#[test]
fn shares_split_by_largest_remainder_and_transmission_keeps_its_order() {
    assert_eq!(split_shares(11, &[0.5, 0.5]), vec![6, 5]);
    assert_eq!(split_shares(10, &[0.25, 0.25, 0.25, 0.25]), vec![3, 3, 2, 2]);
    let p = norm(
        r#"{"algorithm": "default:max_retransmit=4", "preset": "helsinki2018", "ack_timeout": 3, "dither": "off"}"#,
    )
    .unwrap();
    assert_eq!(
        algorithm_specs(&p).unwrap(),
        vec![("default:preset=helsinki2018,ack_timeout=3,dither=off,max_retransmit=4".to_string(), 1)]
    );
}
