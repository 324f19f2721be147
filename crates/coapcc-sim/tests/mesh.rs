//! The mesh topology (`topology.mesh`): CoAP clients of any registry algorithm over a
//! multi-hop 802.15.4 network (the mesh crate's radio medium, MAC, queues and forwarding), as
//! one more event source of the general simulator's loop.

use coapcc_mesh::MeshNetConfig;
use coapcc_sim::{simulate, simulate_with_trace, GroupConfig, JsonLinesTrace, SimConfig, SimReport};

fn mesh_cfg(preset: &str, topology: &str, cc: &str, clients: u32, exchanges: u32, seed: u64) -> SimConfig {
    let mut c = SimConfig { seed, groups: vec![GroupConfig { cc: cc.into(), clients }], ..SimConfig::default() };
    c.workload.exchanges = exchanges;
    let mut m = MeshNetConfig::preset(preset, topology).unwrap();
    // Flows end when their exchanges have; RPL's endless Trickle timers would keep the run
    // going to its time bound (`simulate --mesh-preset` turns them off the same way).
    m.routing.rpl.control = false;
    c.topology.mesh = Some(m);
    c
}

/// Run `c` with a trace: the report and the trace's JSON records.
fn run(c: &SimConfig) -> (SimReport, Vec<serde_json::Value>) {
    let mut trace = JsonLinesTrace::new(Vec::new());
    let r = simulate_with_trace(c, &mut trace).unwrap_or_else(|e| panic!("{e}"));
    let text = String::from_utf8(trace.finish().unwrap()).unwrap();
    (r, text.lines().map(|l| serde_json::from_str(l).unwrap()).collect())
}

/// Every exchange started is accounted for (completed or failed; every flow completed its
/// exchanges, failed ones being repeated), and every packet the network took in is
/// delivered, dropped or still in it.
fn accounted(r: &SimReport, trace: &[serde_json::Value], clients: u32, exchanges: u32) {
    let m = r.mesh.as_ref().expect("a mesh report");
    assert!(!r.truncated);
    assert_eq!(r.flows.len(), clients as usize);
    for f in &r.flows {
        let started = trace.iter().filter(|v| v["client"] == f.client).count() as u64;
        assert_eq!(f.completed_exchanges + f.failed_exchanges, started, "client {}", f.client);
        assert_eq!(f.completed_exchanges, exchanges as u64, "client {}", f.client);
    }
    let c = &m.conservation;
    assert_eq!(c.created + m.mac.duplicates_forwarded, c.delivered + c.dropped + c.in_network_at_end, "{c:?}");
    let d = &m.drops;
    let lost_on_air = d.air_collision + d.air_fading + d.fifo_overflow;
    assert_eq!(
        c.dropped,
        d.buffer_overflow + d.neighbor_queues_full + d.mac_no_ack + d.mac_channel_access + lost_on_air
    );
    // Every copy the clients sent entered the network.
    let sent: u64 = r.flows.iter().map(|f| f.transmissions).sum();
    assert!(c.created >= sent, "{} packets entered, {sent} request copies sent", c.created);
}

#[test]
fn mesh_runs_are_accounted_for() {
    for (preset, cc) in [
        ("ancillotti-cooja", "default:preset=ancillotti-cooja"),
        ("ancillotti-cooja", "cocoa-plus:preset=ancillotti-cooja"),
        ("ieee802154", "fasor-token"),
        ("makarem2021", "cocoa"),
    ] {
        let (r, trace) = run(&mesh_cfg(preset, "grid:3", cc, 7, 20, 1));
        accounted(&r, &trace, 7, 20);
        let m = r.mesh.as_ref().unwrap();
        assert_eq!((m.nodes, m.sink, m.root), (9, 0, 4));
        assert!(m.client_hops.iter().all(|&h| h >= 1));
        // Contiki's nullrdc on Sky and Z1 asks for no link-layer ACK (ancillotti-cooja).
        assert!(m.mac.data_tx > 0 && (m.mac.acked > 0) == (preset != "ancillotti-cooja"));
    }
}

#[test]
fn a_congested_mesh_loses_and_still_accounts() {
    // 40 clients on 7 nodes of a 3 x 3 grid, small queues: the network drops packets, the
    // clients retransmit and some give up; everything still adds up.
    let mut c = mesh_cfg("ieee802154", "grid:3", "default", 40, 10, 3);
    c.topology.mesh.as_mut().unwrap().mac.queue_packets = 2;
    let (r, trace) = run(&c);
    accounted(&r, &trace, 40, 10);
    let m = r.mesh.as_ref().unwrap();
    assert!(m.conservation.dropped > 0, "{:?}", m.drops);
    assert!(r.flows.iter().map(|f| f.retransmissions).sum::<u64>() > 0);
}

#[test]
fn mesh_runs_are_deterministic_by_seed() {
    let c = mesh_cfg("ancillotti-cooja", "grid:4", "cocoa", 14, 10, 7);
    let json = |c: &SimConfig| {
        let mut r = simulate(c).unwrap();
        r.wall_s = 0.0;
        serde_json::to_string(&r).unwrap()
    };
    assert_eq!(json(&c), json(&c));
    let mut other = c.clone();
    other.seed = 8;
    assert_ne!(json(&c), json(&other));
}

#[test]
fn one_hop_behaves_like_a_short_lossless_link() {
    // Chain of 2 nodes, 10 m apart (full reception), no duty cycling: the client at node 1,
    // the server at the sink 0, which is also the root. One client alone: no collisions.
    // Each exchange is one request frame, its MAC ACK, one response frame and its ACK, each
    // frame after a CSMA/CA backoff of 0..7 unit periods and a CCA.
    let mut c = mesh_cfg("ieee802154", "chain:2", "default", 1, 30, 1);
    let m = c.topology.mesh.as_mut().unwrap();
    m.routing.root = Some(0);
    let med = m.clone();
    let (r, trace) = run(&c);
    accounted(&r, &trace, 1, 30);
    let f = &r.flows[0];
    assert_eq!((f.completed_exchanges, f.retransmissions), (30, 0));
    let mesh = r.mesh.as_ref().unwrap();
    assert_eq!(mesh.client_hops, vec![1]);
    assert_eq!(mesh.conservation.dropped, 0);
    assert_eq!(mesh.mac.data_tx, 60);
    // An exchange takes at least the two frames with their CCA and turnaround; on top come
    // the CSMA/CA backoffs (0..7 unit periods each; the sink's response often meets its own
    // MAC ACK of the request at its CCA, then backs off again within 0..15) and the MAC ACK.
    let mc = med.clone();
    let (req, resp) = (c.coap.request_bytes(), c.coap.response_bytes());
    let ipudp = 28;
    let frame_us =
        |ip: u32| mc.airtime_us(med.psdu_of_coap(ip - ipudp)) as f64 + (mc.mac.cca_us + mc.mac.turnaround_us) as f64;
    let ack_us = (mc.mac.turnaround_us + mc.airtime_us(mc.mac.ack_frame_bytes)) as f64;
    let min_s = (frame_us(req) + frame_us(resp)) / 1e6;
    let unit = mc.mac.unit_backoff_us as f64;
    let extra_us = ack_us + (mc.mac.cca_us + mc.mac.turnaround_us) as f64 + (7.0 + 15.0 + 7.0) * unit;
    let max_s = min_s + extra_us / 1e6;
    let mut rtts: Vec<f64> = trace.iter().filter_map(|v| v["rtt_s"].as_f64()).collect();
    assert_eq!(rtts.len(), 30);
    for &rtt in &rtts {
        assert!((min_s..=max_s).contains(&rtt), "RTT {rtt} s outside [{min_s}, {max_s}]");
    }
    // Typical exchanges are close to the airtimes: the median within the mean backoffs.
    rtts.sort_by(f64::total_cmp);
    let median = rtts[15];
    let typical = min_s + (ack_us + (3.5 + 7.5 + 3.5) * unit) / 1e6;
    assert!(median <= typical, "median RTT {median} s above {typical} s");
}

#[test]
fn bad_mesh_configurations_are_clear_errors() {
    let mut c = mesh_cfg("ieee802154", "grid:x", "default", 1, 1, 1);
    assert!(simulate(&c).unwrap_err().to_string().contains("topology.mesh"));
    c.topology.mesh = Some(MeshNetConfig::preset("ieee802154", "chain:2").unwrap());
    // Chain of 2: node 1 is the root (nearest the centre), node 0 the sink: no client node.
    assert!(simulate(&c).unwrap_err().to_string().contains("no node for a client"));
    let mut c = mesh_cfg("ieee802154", "grid:3", "default", 1, 1, 1);
    c.coap.response_payload_bytes = 200;
    let e = simulate(&c).unwrap_err().to_string();
    assert!(e.contains("max_psdu_bytes"), "{e}");
}

#[test]
fn without_mac_duplicate_detection_duplicates_are_delivered_and_accounted() {
    // A retransmitted frame whose MAC ACK was lost is forwarded again: the server answers
    // both copies, the client takes the first response; everything still adds up.
    let mut c = mesh_cfg("ieee802154", "grid:4", "default", 30, 10, 3);
    let m = c.topology.mesh.as_mut().unwrap();
    m.mac.duplicate_detection = false;
    m.mac.queue_packets = 2;
    let (r, trace) = run(&c);
    accounted(&r, &trace, 30, 10);
    assert!(r.mesh.as_ref().unwrap().mac.duplicates_forwarded > 0);
}

#[test]
fn command_line_mesh_flags() {
    use coapcc_mesh::config::{CsmaMode, Rdc};
    use coapcc_sim::cli::{build_config, SimulateArgs};
    let args = SimulateArgs {
        mesh: Some("ring:6".into()),
        mesh_preset: Some("makarem2021".into()),
        mesh_param: vec!["mac.queue_packets=4".into()],
        ..SimulateArgs::default()
    };
    let m = build_config(&args).unwrap().topology.mesh.unwrap();
    assert_eq!(m.topology, "ring:6");
    assert_eq!((m.mac.csma, m.mac.rdc, m.mac.queue_packets), (CsmaMode::Contiki, Rdc::Contikimac, 4));
    let bad = SimulateArgs { mesh_param: vec!["mac.queue_packets".into()], ..SimulateArgs::default() };
    assert!(build_config(&bad).unwrap_err().to_string().contains("KEY=VALUE"));
    let bad = SimulateArgs { mesh_preset: Some("cooja".into()), ..SimulateArgs::default() };
    assert!(build_config(&bad).unwrap_err().to_string().contains("unknown mesh preset"));
    // Without mesh flags the topology stays the dumbbell.
    assert!(build_config(&SimulateArgs::default()).unwrap().topology.mesh.is_none());
}

#[test]
fn every_registry_algorithm_runs_over_a_mesh() {
    // Start jitter: under Contiki's CSMA rules the first attempt has no backoff, so clients
    // that start at the same instant with identical timers (no dither) collide in lockstep.
    for info in coapcc_cc::ALGORITHMS {
        let mut c = mesh_cfg("ancillotti-cooja", "grid:3", info.name, 7, 10, 2);
        c.workload.start_jitter_ms = 1000.0;
        let (r, trace) = run(&c);
        accounted(&r, &trace, 7, 10);
        let m = r.mesh.as_ref().unwrap();
        assert!(m.conservation.delivered > 0 && m.mac.acked == 0, "{}", info.name);
    }
}
