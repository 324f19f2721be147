//! The two endpoint models (`endpoint.model`): `full` runs the real coapcc-proto endpoints
//! over the same link and must give the same results as `compact` wherever both model the
//! same thing — bit for bit: FCTs, transmissions, retransmissions, unnecessary
//! retransmissions, link counters, events, and the per-exchange trace.

use coapcc_sim::cli::{self, SimulateArgs};
use coapcc_sim::link::{ErrorClock, LossModel, StageConfig};
use coapcc_sim::message_sizes;
use coapcc_sim::trace::VecTrace;
use coapcc_sim::{
    simulate, simulate_with_trace, DuplicateMode, EndpointModel, GroupConfig, SimConfig, SimReport, WorkloadKind,
};

fn scenario(cc: &str, clients: u32, exchanges: u32) -> SimConfig {
    let mut c = SimConfig { groups: vec![GroupConfig { cc: cc.into(), clients }], ..SimConfig::default() };
    c.workload.exchanges = exchanges;
    c
}

fn run(cfg: &SimConfig, model: EndpointModel) -> (SimReport, VecTrace) {
    let mut c = cfg.clone();
    c.endpoint.model = model;
    let mut t = VecTrace::default();
    let r = simulate_with_trace(&c, &mut t).unwrap();
    assert_eq!(r.config.endpoint.model, model);
    (r, t)
}

/// Everything but the configuration (which names the model) and the wall time.
fn results(r: &SimReport) -> serde_json::Value {
    r.outcome_json()
}

/// Run both models; assert identical results, the named metrics first (clear messages).
fn assert_same(cfg: &SimConfig, what: &str) -> SimReport {
    let (a, ta) = run(cfg, EndpointModel::Compact);
    let (b, tb) = run(cfg, EndpointModel::Full);
    for (x, y) in a.flows.iter().zip(&b.flows) {
        let c = x.client;
        assert_eq!(x.fct_s, y.fct_s, "{what}: client {c} FCT");
        assert_eq!(x.transmissions, y.transmissions, "{what}: client {c} transmissions");
        assert_eq!(x.retransmissions, y.retransmissions, "{what}: client {c} retransmissions");
        assert_eq!(
            x.unnecessary_retransmissions, y.unnecessary_retransmissions,
            "{what}: client {c} unnecessary retransmissions"
        );
        assert_eq!(x.failed_exchanges, y.failed_exchanges, "{what}: client {c} failed exchanges");
    }
    for (name, x, y) in
        [("uplink", &a.links.uplink, &b.links.uplink), ("downlink", &a.links.downlink, &b.links.downlink)]
    {
        assert_eq!(serde_json::to_value(x).unwrap(), serde_json::to_value(y).unwrap(), "{what}: {name} counters");
    }
    assert_eq!(a.retransmissions_per_exchange, b.retransmissions_per_exchange, "{what}: histogram");
    assert_eq!(results(&a), results(&b), "{what}: whole report");
    assert_eq!(ta.records, tb.records, "{what}: trace");
    b
}

const CLIENTS: u32 = 100;

/// The matrix of the brief: 4 algorithms × 2 workloads × 2 buffers × {no errors, medium}.
/// Also checks the matrix is not trivial: it must produce retransmissions, unnecessary ones,
/// buffer drops and error losses, or the equality would prove little.
fn matrix(cc: &str) {
    let (mut rtx, mut unnecessary, mut drops, mut losses) = (0, 0, 0, 0);
    for workload in [WorkloadKind::Continuous, WorkloadKind::Random] {
        for buffer in [2_500u64, 1_410_000] {
            for errors in ["none", "medium"] {
                let mut c = scenario(&format!("{cc}:preset=helsinki2018"), CLIENTS, 10);
                c.seed = 11;
                c.workload.kind = workload;
                c.link.set_buffer_bytes(buffer);
                c.link.set_loss(&LossModel::profile(errors, ErrorClock::Time, 5.0).unwrap());
                let r = assert_same(&c, &format!("{cc} {workload:?} buffer {buffer} errors {errors}"));
                let finished: u32 = r.groups.iter().map(|g| g.finished_flows).sum();
                assert_eq!(finished, CLIENTS);
                rtx += r.groups[0].retransmissions;
                unnecessary += r.groups[0].unnecessary_retransmissions;
                drops += r.links.uplink.buffer_drop_packets + r.links.downlink.buffer_drop_packets;
                losses += r.links.uplink.error_loss_packets + r.links.downlink.error_loss_packets;
            }
        }
    }
    assert!(
        rtx > 1_000 && unnecessary > 100 && drops > 100 && losses > 100,
        "{cc}: {rtx} {unnecessary} {drops} {losses}"
    );
}

#[test]
fn full_matches_compact_default() {
    matrix("default");
}

#[test]
fn full_matches_compact_cocoa() {
    matrix("cocoa");
}

#[test]
fn full_matches_compact_fasor() {
    matrix("fasor");
}

#[test]
fn full_matches_compact_fasor_token() {
    matrix("fasor-token");
}

#[test]
fn full_matches_compact_mixed_options() {
    // Mixed groups (copy identification and not), start jitter, random batches, the other
    // duplicate mode, packet-clocked high errors, reordering on the uplink's last element,
    // other message sizes, a failure-prone MAX_RETRANSMIT, a truncated run.
    let base = || {
        let mut c = SimConfig {
            seed: 5,
            groups: vec![
                GroupConfig { cc: "default-fb1:preset=helsinki2018".into(), clients: 4 },
                GroupConfig { cc: "pcocoa".into(), clients: 4 },
                GroupConfig { cc: "californium-cocoa".into(), clients: 4 },
                GroupConfig { cc: "cocoa-fb1:preset=helsinki2018".into(), clients: 4 },
            ],
            ..SimConfig::default()
        };
        c.workload.exchanges = 15;
        c.link.set_buffer_bytes(2_500);
        c.link.set_loss(&LossModel::profile("high", ErrorClock::Packet, 5.0).unwrap());
        c
    };
    type Variant = (&'static str, Box<dyn Fn(&mut SimConfig)>);
    let variants: Vec<Variant> = vec![
        ("base", Box::new(|_| {})),
        (
            "random, start jitter",
            Box::new(|c| {
                c.workload.kind = WorkloadKind::Random;
                c.workload.start_jitter_ms = 3_000.0;
            }),
        ),
        ("replay_cached", Box::new(|c| c.server.duplicate_mode = DuplicateMode::ReplayCached)),
        (
            "ipv6, 8-byte token, two segments",
            Box::new(|c| {
                c.coap.ip_version = 6;
                c.coap.token_len = 8;
                c.coap.uri_path = "sensors//temp/".into();
            }),
        ),
        (
            "max_retransmit=1",
            Box::new(|c| {
                for g in &mut c.groups {
                    g.cc = format!("{}:max_retransmit=1", g.cc.split(':').next().unwrap());
                }
            }),
        ),
        (
            "reordering uplink",
            Box::new(|c| {
                for st in &mut c.link.uplink {
                    if let StageConfig::Jitter(j) = st {
                        j.allow_reordering = true;
                    }
                }
            }),
        ),
        ("truncated", Box::new(|c| c.max_sim_time_s = 20.0)),
    ];
    for (what, f) in &variants {
        let mut c = base();
        f(&mut c);
        assert_same(&c, what);
    }
}

#[test]
fn full_model_sizes_are_the_encoded_datagrams() {
    // One client, no contention: every packet is one request or one response.
    for (ip, tkl, path, payload) in [(4u8, 1u8, "hello", 60u32), (6, 4, "a/b", 0), (4, 8, "", 200)] {
        let mut c = scenario("default", 1, 5);
        c.coap.ip_version = ip;
        c.coap.token_len = tkl;
        c.coap.uri_path = path.into();
        c.coap.response_payload_bytes = payload;
        let r = assert_same(&c, &format!("sizes {ip} {tkl} {path:?} {payload}"));
        let up = &r.links.uplink;
        let down = &r.links.downlink;
        assert_eq!(up.offered_packets, 5);
        assert_eq!(
            up.offered_bytes,
            5 * message_sizes::ip_len(message_sizes::request_len(tkl as usize, path), ip) as u64
        );
        assert_eq!(
            down.offered_bytes,
            5 * message_sizes::ip_len(message_sizes::response_len(tkl as usize, payload as usize), ip) as u64
        );
    }
}

#[test]
fn server_delay_without_duplicates_matches() {
    // A processing delay changes nothing between the models while no copy arrives during
    // it (one client, no errors, timers far above the RTT).
    let mut c = scenario("cocoa:preset=helsinki2018", 3, 20);
    c.server.processing_delay_ms = 300.0;
    let r = assert_same(&c, "server delay 300 ms");
    assert_eq!(r.groups[0].retransmissions, 0);
}

#[test]
fn server_delay_with_duplicates_uses_the_real_server_behaviour() {
    // Beyond the piggyback timeout (1 s) the real server acknowledges with an Empty ACK and
    // sends the response separately as a CON, which the client acknowledges: the full model
    // carries those messages, the compact one (always piggybacked) does not.
    let mut c = scenario("default:preset=helsinki2018", 5, 10);
    c.server.processing_delay_ms = 1_500.0;
    let (compact, _) = run(&c, EndpointModel::Compact);
    let (full, _) = run(&c, EndpointModel::Full);
    assert_eq!(compact.groups[0].completed_exchanges, 50);
    assert_eq!(full.groups[0].completed_exchanges, 50);
    let tx: u64 = full.flows.iter().map(|f| f.transmissions).sum();
    // Uplink: request copies + one Empty ACK per separate response.
    assert!(full.links.uplink.offered_packets > tx, "{:?}", full.links.uplink);
    // Downlink: an Empty ACK and a separate response per exchange at least.
    assert!(full.links.downlink.offered_packets >= 100, "{:?}", full.links.downlink);
    let tx_compact: u64 = compact.flows.iter().map(|f| f.transmissions).sum();
    assert_eq!(compact.links.uplink.offered_packets, tx_compact);
    // The Empty ACK stops the retransmissions: fewer copies than the compact model sends.
    assert!(tx < tx_compact, "full {tx} compact {tx_compact}");
}

#[test]
fn endpoint_model_configuration() {
    // Default compact, left out of the serialised form; `full` round-trips.
    let c = SimConfig::default();
    assert_eq!(c.endpoint.model, EndpointModel::Compact);
    assert!(!serde_json::to_string(&c).unwrap().contains("endpoint"));
    let f: SimConfig = serde_json::from_str(r#"{"endpoint": {"model": "full"}}"#).unwrap();
    assert_eq!(f.endpoint.model, EndpointModel::Full);
    let j = serde_json::to_string(&f).unwrap();
    assert!(j.contains(r#""endpoint":{"model":"full"}"#), "{j}");
    assert_eq!(serde_json::from_str::<SimConfig>(&j).unwrap(), f);
    assert!(serde_json::from_str::<SimConfig>(r#"{"endpoint": {"model": "quic"}}"#).is_err());
    assert!(serde_json::from_str::<SimConfig>(r#"{"endpoint": {"modle": "full"}}"#).is_err());
    // The real endpoint needs a token.
    let mut z = f.clone();
    z.coap.token_len = 0;
    assert!(z.validate().unwrap_err().to_string().contains("coap.token_len"));
    z.endpoint.model = EndpointModel::Compact;
    z.validate().unwrap();
    assert!(simulate(&SimConfig { endpoint: f.endpoint.clone(), ..SimConfig::default() }).is_ok());
}

#[test]
fn cli_endpoint_flag() {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: SimulateArgs,
    }
    let out = |argv: &[&str]| {
        let cli = Cli::try_parse_from(std::iter::once("simulate").chain(argv.iter().copied())).unwrap();
        let mut buf = Vec::new();
        cli::run(&cli.args, &mut buf).map(|_| String::from_utf8(buf).unwrap())
    };
    let cfg = out(&["--endpoint", "full", "--print-config"]).unwrap();
    assert!(cfg.contains(r#""model": "full""#), "{cfg}");
    let compact = out(&["--clients", "3", "--exchanges", "4", "--json"]).unwrap();
    let full = out(&["--clients", "3", "--exchanges", "4", "--json", "--endpoint", "full"]).unwrap();
    let strip = |s: &str| {
        let mut v: serde_json::Value = serde_json::from_str(s).unwrap();
        let o = v.as_object_mut().unwrap();
        o.remove("wall_s");
        o.remove("config");
        v
    };
    assert_eq!(strip(&compact), strip(&full));
    let summary = out(&["--endpoint", "full", "--exchanges", "2"]).unwrap();
    assert!(summary.contains("full endpoints"), "{summary}");
    assert!(Cli::try_parse_from(["simulate", "--endpoint", "real"]).is_err());
    let e = out(&["--endpoint", "full", "--token-len", "0"]).unwrap_err().to_string();
    assert!(e.contains("token_len") && !e.contains('\n'), "{e}");
}
