//! End-to-end runs: every algorithm on a grid, frame conservation, the no-caching rule,
//! early retransmissions, global events, determinism.

use coapcc_sim::mesh_command::{MeshReport, MeshRun};

/// Run `c` as `coapcc mesh` does; the error as its one line.
fn simulate(c: &MeshRun) -> Result<MeshReport, String> {
    coapcc_sim::mesh_command::simulate(c, None).map_err(|e| e.to_string())
}

fn cfg(topology: &str, cc: &str, traffic: &str, duration_s: f64) -> MeshRun {
    MeshRun {
        topology: topology.into(),
        cc: cc.into(),
        traffic: traffic.into(),
        duration_s,
        ..MeshRun::preset("ancillotti-cooja").unwrap()
    }
}

/// The study's grid with the standard's CSMA/CA (MAC ACKs and retries, duplicates after a lost
/// ACK, one FIFO per node) and no processor model or RPL traffic.
fn with_standard_mac(mut c: MeshRun) -> MeshRun {
    let d = MeshRun::default();
    (c.mac, c.radio, c.mote) = (d.mac, d.radio, d.mote);
    c.routing.rpl.control = false;
    c
}

fn conserved(r: &MeshReport) {
    let c = &r.conservation;
    assert_eq!(
        c.created + r.mac.duplicates_forwarded,
        c.delivered + c.dropped + c.in_network_at_end,
        "packets must be delivered, dropped or still queued: {c:?}"
    );
    let l = &r.loss_causes.net;
    let mac = l.buffer_overflow + l.neighbor_queues_full + l.mac_no_ack + l.mac_channel_access;
    assert_eq!(c.dropped, mac + l.air_collision + l.air_fading + l.fifo_overflow);
    for cl in &r.clients {
        assert_eq!(cl.lost, cl.lost_no_caching + cl.lost_give_up);
        assert_eq!(cl.messages, cl.delivered + cl.lost + cl.in_flight_at_end, "node {}", cl.node);
    }
}

#[test]
fn every_algorithm_runs_a_grid_end_to_end() {
    for info in coapcc_cc::ALGORITHMS {
        let r = simulate(&cfg("grid:3", info.name, "periodic:1", 600.0)).unwrap();
        conserved(&r);
        assert_eq!(r.clients.len(), 7);
        let messages: u64 = r.clients.iter().map(|c| c.messages).sum();
        // 7 clients, T = 7·96·8/1000 = 5.376 s: 111 or 112 messages each in 600 s.
        assert!((7 * 111..=7 * 112).contains(&messages), "{}: {messages}", info.name);
        // Without link-layer ACKs a rate-paced algorithm (IDC/MBC/BDP-CoAP) loses many
        // messages to the no-caching rule at this load; the study's algorithms few.
        let bound = if matches!(info.name, "default" | "cocoa-plus") { 0.2 } else { 0.9 };
        assert!(r.plr_mean < bound, "{}: PLR {}", info.name, r.plr_mean);
        let rto = r.rto_first_s.unwrap();
        assert_eq!(rto.count as u64, r.clients.iter().map(|c| c.frames).sum::<u64>());
        assert!(r.clients.iter().all(|c| c.delivered > 0), "{}", info.name);
    }
}

#[test]
fn default_and_cocoa_plus_on_the_study_grid() {
    let d = simulate(&cfg("grid:5", "default:preset=ancillotti-cooja", "periodic:3", 1800.0)).unwrap();
    let p = simulate(&cfg("grid:5", "cocoa-plus:preset=ancillotti-cooja", "periodic:3", 1800.0)).unwrap();
    for r in [&d, &p] {
        conserved(r);
        assert_eq!(r.clients.len(), 23);
        assert_eq!((r.topology.root, r.topology.sink), (12, 0));
        assert!(r.clients.iter().all(|c| c.hops >= 1 && c.messages > 0));
    }
    // Contiki's default CoAP: T_0 in [3, 4.5] s, no RTT estimates.
    let rto = d.rto_first_s.unwrap();
    assert!(rto.min >= 3.0 && rto.max <= 4.5, "{rto:?}");
    assert!(d.rtt_strong_s.is_none() && d.rtt_weak_s.is_none());
    // CoCoA+ learns the mesh RTT (tens of ms): its first-transmission RTOs fall well below
    // the 2 s initial value, and strong estimates exist.
    let rto = p.rto_first_s.unwrap();
    assert!(rto.median < 1.0, "{rto:?}");
    assert!(p.rtt_strong_s.unwrap().count > 1000);
}

#[test]
fn no_caching_loses_messages_generated_while_one_is_in_flight() {
    // One client (chain 0-1-2: sink 0, root 1, client 2), 32-byte messages every 0.5 s, and a
    // sink that answers after 1.2 s: each exchange lasts just over 1.2 s (below the 3 s
    // timer), so of every three messages the two generated during an exchange are lost.
    let mut c = cfg("chain:3", "default:preset=ancillotti-cooja", "periodic:0.512", 300.0);
    c.message_bytes = 32;
    c.app.server_delay_us = 1_200_000;
    c.app.random_phase = false;
    let r = simulate(&c).unwrap();
    conserved(&r);
    let cl = &r.clients[0];
    assert_eq!(cl.node, 2);
    assert_eq!(cl.lost_give_up, 0);
    assert_eq!(cl.retransmissions, 0);
    // Messages at 0, 0.5, 1.0, ... 300: 601; starts at 0, 1.5, 3.0, ...: 201.
    assert_eq!(cl.messages, 601);
    assert_eq!(cl.delivered + cl.in_flight_at_end, 201);
    assert_eq!(cl.lost_no_caching, 400);
    assert!((cl.plr - 400.0 / (601.0 - cl.in_flight_at_end as f64)).abs() < 1e-12);
    // With caching the messages wait instead: nothing is lost.
    c.app.no_caching = false;
    let r = simulate(&c).unwrap();
    conserved(&r);
    assert_eq!(r.clients[0].lost, 0);
    assert!(r.clients[0].in_flight_at_end > 300);
}

#[test]
fn spurious_timeouts_count_as_early_retransmissions() {
    // A 10 ms timer on a 4-hop path (RTT of tens of ms): most first transmissions reach the
    // sink and are acknowledged, yet retransmitted (with MAC ACKs, so that the copies do not
    // destroy each other on the air).
    let r = simulate(&with_standard_mac(cfg(
        "grid:3",
        "default:ack_timeout=0.01,ack_random_factor=1,max_retransmit=4",
        "periodic:0.5",
        300.0,
    )))
    .unwrap();
    conserved(&r);
    assert!(r.early_retransmissions_mean > 0.6, "{}", r.early_retransmissions_mean);
    // With Contiki's 3-4.5 s timer there are none.
    let r = simulate(&cfg("grid:3", "default:preset=ancillotti-cooja", "periodic:0.5", 300.0)).unwrap();
    assert_eq!(r.early_retransmissions_max, 0.0);
}

#[test]
fn global_events_make_every_client_send_at_once() {
    let mut c = cfg("grid:4", "cocoa-plus:preset=ancillotti-cooja", "events:100,192", 1000.0);
    c.app.event_dist = coapcc_sim::config::EventDist::Fixed;
    let r = simulate(&c).unwrap();
    conserved(&r);
    for cl in &r.clients {
        // Events at 100, 200, ..., 1000 s; background every 60 s from a random phase.
        assert_eq!(cl.event_messages, 10);
        assert!((16..=17).contains(&(cl.messages - cl.event_messages)), "{}", cl.messages);
        // 192-byte events are 6 units; background 1 unit.
        assert!(cl.frames >= cl.messages - cl.lost_no_caching);
    }
    assert!(r.plr_event_mean.is_some() && r.plr_event_max.unwrap() <= 1.0);
}

#[test]
fn runs_are_deterministic() {
    let c = cfg("grid:4", "cocoa-plus:preset=ancillotti-cooja", "periodic:2", 300.0);
    let json = |c: &MeshRun| {
        let mut r = simulate(c).unwrap();
        r.wall_s = 0.0;
        serde_json::to_string(&r).unwrap()
    };
    let a = json(&c);
    assert_eq!(a, json(&c));
    let mut other = c.clone();
    other.seed = 2;
    assert_ne!(a, json(&other));
}

/// A trace sink the test reads after the run: the unit lines and the MAC log.
#[derive(Default)]
struct Sink {
    units: Vec<u8>,
    mac: Vec<coapcc_mesh::MacRecord>,
}

impl coapcc_sim::TraceSink for Sink {
    fn exchange(&mut self, _rec: &coapcc_sim::ExchangeTrace<'_>) {}
    fn unit(&mut self, rec: &coapcc_sim::UnitTrace) {
        rec.write_line(&mut self.units).unwrap();
    }
    fn wants_mac(&self) -> bool {
        true
    }
    fn mac(&mut self, rec: &coapcc_mesh::MacRecord) {
        self.mac.push(*rec);
    }
}

#[test]
fn same_seed_same_bytes_with_trace_and_mac_log() {
    // Global events (every client at once), a server delay and duty cycling: the runs where
    // simultaneous events are the most frequent.
    let mut c = cfg("grid:4", "fasor-token", "events:20,192", 200.0);
    c.app.server_delay_us = 5_000;
    let mk = MeshRun::preset("makarem2021").unwrap();
    (c.mac, c.radio, c.mote, c.routing) = (mk.mac, mk.radio, mk.mote, mk.routing);
    let run = |c: &MeshRun| {
        let mut sink = Sink::default();
        let mut r = coapcc_sim::mesh_command::simulate(c, Some(&mut sink)).unwrap();
        r.wall_s = 0.0;
        conserved(&r);
        (serde_json::to_string(&r).unwrap(), sink.units, format!("{:?}", sink.mac))
    };
    let (a, b) = (run(&c), run(&c));
    assert!(a.1.iter().filter(|&&x| x == b'\n').count() > 100, "the trace has the units");
    assert!(!a.2.is_empty());
    assert!(a == b, "same configuration and seed, different bytes");
}

#[test]
fn conservation_holds_with_duplicates_and_forwarding_delay() {
    let mut c = with_standard_mac(cfg("grid:5", "default:preset=ancillotti-cooja", "periodic:3", 600.0));
    c.mac.duplicate_detection = false;
    c.routing.forward_delay_us = 2_000;
    c.mac.queue_packets = 2;
    let r = simulate(&c).unwrap();
    conserved(&r);
    assert!(r.loss_causes.net.buffer_overflow > 0);
    // One neighbour queue: a node holding packets for its parent drops those for a child.
    let mut c = with_standard_mac(cfg("grid:5", "default:preset=ancillotti-cooja", "periodic:3", 600.0));
    c.mac.max_neighbor_queues = 1;
    let r = simulate(&c).unwrap();
    conserved(&r);
    assert!(r.loss_causes.net.neighbor_queues_full > 0);
    assert!(r.conservation.in_network_at_end < 25 * 2 + 10);
}

#[test]
fn topologies_of_makarems_setups_run() {
    // Duty-cycled (ContikiMAC-like, 8 Hz) rings, chains and dumbbells at a light load.
    for t in ["ring:8", "chain:5", "dumbbell:3,2"] {
        let mut c = MeshRun::preset("makarem2021").unwrap();
        c.topology = t.into();
        c.traffic = "periodic:0.2".into();
        c.duration_s = 600.0;
        let r = simulate(&c).unwrap();
        conserved(&r);
        assert!(r.clients.iter().all(|c| c.delivered > 0), "{t}");
        // Strobing to sleeping receivers makes hops tens of ms long: the unit RTT grows
        // beyond the always-on mesh's.
        let on =
            simulate(&MeshRun { preset: "ancillotti-cooja".into(), mac: Default::default(), ..c.clone() }).unwrap();
        assert!(r.unit_rtt_s.unwrap().median > 2.0 * on.unit_rtt_s.unwrap().median, "{t}");
    }
}

#[test]
fn bad_configurations_are_refused_with_a_message() {
    let bad = |c: MeshRun| simulate(&c).unwrap_err();
    assert!(bad(cfg("grid:3", "default", "periodic:100000", 10.0)).contains("smallest period"));
    assert!(bad(cfg("grid:3", "default", "events:0,96", 10.0)).contains("TB_S"));
    assert!(bad(cfg("grid:3", "nope", "periodic:1", 10.0)).contains("unknown algorithm"));
    let mut c = cfg("chain:4", "default", "periodic:1", 10.0);
    c.spacing_m = 30.0;
    assert!(bad(c).contains("cannot reach"));
    let mut c = cfg("grid:3", "default", "periodic:1", 10.0);
    c.routing.sink = Some(9);
    assert!(bad(c).contains("not a node"));
    let mut c = cfg("grid:3", "default", "periodic:1", f64::NAN);
    assert!(bad(c.clone()).contains("duration_s"));
    c.duration_s = 10.0;
    c.routing.root = Some(0);
    // Root and sink on one node is allowed: it is both, and every other node is a client.
    assert_eq!(simulate(&c).unwrap().clients.len(), 8);
}

#[test]
fn both_csma_rules_run_the_study_grid() {
    // The standard's CSMA/CA (MAC ACKs, 1 + macMaxFrameRetries = 4 transmissions at most) and
    // Contiki's csma.c over nullrdc as the study's Sky and Z1 motes ran it (no link-layer
    // ACK: every frame goes out once per hop, a busy channel only delays it) on the same
    // loaded grid: both conserve packets.
    let mut std = cfg("grid:4", "default:preset=ancillotti-cooja", "periodic:3", 600.0);
    std.mac.csma = coapcc_mesh::config::CsmaMode::Ieee802154;
    std.mote.cpu = false;
    std.routing.rpl.control = false;
    let r = simulate(&std).unwrap();
    conserved(&r);
    let l = &r.loss_causes.net;
    let frames = r.mac.acked
        + l.mac_no_ack
        + l.mac_channel_access
        + r.mac.false_drops
        + r.conservation.in_network_at_end
        + r.topology.nodes as u64;
    assert!(r.mac.data_tx <= 4 * frames && r.mac.data_tx > r.mac.acked);
    let c = cfg("grid:4", "default:preset=ancillotti-cooja", "periodic:3", 600.0);
    assert_eq!(c.mac.csma, coapcc_mesh::config::CsmaMode::Contiki);
    let r = simulate(&c).unwrap();
    conserved(&r);
    assert_eq!((r.mac.acked, r.mac.ack_tx, r.loss_causes.net.mac_no_ack), (0, 0, 0));
    assert!(r.loss_causes.net.air_collision > 0 && r.mac.control_tx > 0);
}

#[test]
fn block1_and_whole_message_units() {
    use coapcc_sim::config::UnitMode;
    // Block1: 96-byte messages are still 3 exchanges of 32 bytes, with larger frames.
    let mut c = cfg("grid:3", "cocoa-plus:preset=ancillotti-cooja", "periodic:1", 300.0);
    c.app.unit_mode = UnitMode::Block1;
    let r = simulate(&c).unwrap();
    conserved(&r);
    for cl in &r.clients {
        let started = cl.messages - cl.lost_no_caching;
        assert!(cl.frames <= 3 * started && cl.frames + 3 > 3 * started, "{cl:?}");
    }
    // One exchange per (64-byte) message.
    let mut c = cfg("grid:3", "cocoa-plus:preset=ancillotti-cooja", "periodic:1", 300.0);
    c.app.unit_mode = UnitMode::Message;
    c.message_bytes = 64;
    let r = simulate(&c).unwrap();
    conserved(&r);
    for cl in &r.clients {
        assert_eq!(cl.frames, cl.messages - cl.lost_no_caching, "{cl:?}");
    }
}

#[test]
fn the_command_prints_the_documented_json_keys() {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: coapcc_sim::mesh_command::MeshArgs,
    }
    let cli = Cli::try_parse_from([
        "mesh",
        "--topology",
        "grid:3",
        "--cc",
        "cocoa-plus:preset=ancillotti-cooja",
        "--traffic",
        "periodic:2",
        "--duration-s",
        "120",
        "--seed",
        "4",
        "--json",
    ])
    .unwrap();
    let mut out = Vec::new();
    coapcc_sim::mesh_command::run(&cli.args, &mut out).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    for key in [
        "config",
        "clients",
        "plr_mean",
        "plr_max",
        "loss_causes",
        "rto_first_s",
        "rtt_weak_s",
        "rtt_strong_s",
        "sim_time_s",
        "wall_s",
        "events",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    for key in ["node", "hops", "messages", "lost", "plr", "retransmissions_per_frame", "early_retransmissions"] {
        assert!(v["clients"][0].get(key).is_some(), "missing clients[].{key}");
    }
    assert_eq!(v["config"]["seed"], 4);
    assert_eq!(v["sim_time_s"], 120.0);
    // Bad input: a one-line error, no panic.
    let bad = Cli::try_parse_from(["mesh", "--param", "radio.capture_db"]).unwrap();
    let e = coapcc_sim::mesh_command::run(&bad.args, &mut Vec::new()).unwrap_err();
    assert!(e.to_string().contains("KEY=VALUE"), "{e}");
}

#[test]
fn the_command_is_a_view_of_the_simulators_report() {
    // `coapcc mesh` is `simulate` with the mesh topology and the message workload: the same
    // run through `simulate` carries the same metrics in its `messages` and `mesh` parts.
    let run = cfg("grid:3", "cocoa-plus:preset=ancillotti-cooja", "events:20,96", 200.0);
    let view = simulate(&run).unwrap();
    let sim_cfg = run.to_sim().unwrap();
    assert_eq!(sim_cfg.workload.kind, coapcc_sim::WorkloadKind::Events { tb_s: 20.0, size_bytes: 96 });
    let r = coapcc_sim::simulate(&sim_cfg).unwrap();
    let (m, mesh) = (r.messages.as_ref().unwrap(), r.mesh.as_ref().unwrap());
    assert_eq!((m.plr_mean, m.plr_event_mean), (view.plr_mean, view.plr_event_mean));
    assert_eq!(m.rto_first_s, view.rto_first_s);
    assert_eq!(r.events + m.disarmed_timers_due, view.events);
    for (c, (f, v)) in r.flows.iter().zip(&view.clients).enumerate() {
        assert_eq!(f.retransmissions, v.retransmissions, "client {c}");
        assert_eq!(
            f.completed_exchanges + f.failed_exchanges,
            v.frames - u64::from(v.in_flight_at_end > 0),
            "client {c}"
        );
        assert_eq!(mesh.client_nodes[c] as usize, v.node);
    }
    // The flows of an open-loop workload never finish: the run lasts its duration.
    assert!(r.truncated && r.flows.iter().all(|f| f.fct_s.is_none()));
}

#[test]
fn the_study_firmware_draws_coap_cc_from_3_to_6_s_in_clock_ticks() {
    // ancillotti-cooja runs CoAP-CC as the study's firmware: T_0 = 3 s + U{0..384} ticks of
    // 1/128 s (the paper's footnote 1: [3, 6] s), on a 1/128 s clock, so the RTTs the CoAP
    // code measures are whole ticks.
    let c = MeshRun { topology: "grid:4".into(), traffic: "periodic:1".into(), duration_s: 1800.0, ..preset() };
    assert_eq!(c.cc, coapcc_sim::mesh_command::ANCILLOTTI_COAP_CC);
    assert_eq!(c.app.clock_tick_ns, 7_812_500);
    let mut sink = Units::default();
    let r = coapcc_sim::mesh_command::simulate(&c, Some(&mut sink)).unwrap();
    conserved(&r);
    let rto = r.rto_first_s.unwrap();
    assert!(rto.min >= 3.0 && rto.max <= 6.0 && rto.max > 5.8 && rto.min < 3.2, "{rto:?}");
    // The dither is uniform over the 385 ticks: mean 4.5 s.
    assert!((rto.mean - 4.5).abs() < 0.05, "{rto:?}");
    let ticks = |s: f64| (s * 128.0 - (s * 128.0).round()).abs() < 1e-6;
    let text = String::from_utf8(sink.0).unwrap();
    let mut n = 0;
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(ticks(v["rto_first_s"].as_f64().unwrap()), "{line}");
        if let Some(rtt) = v["rtt_s"].as_f64() {
            assert!(ticks(rtt), "{line}");
            n += 1;
        }
    }
    assert!(n > 100);
    // Contiki 3.0's own code draws from [3, 4.5] s (random factor 1.5).
    let code = MeshRun { cc: "default:preset=ancillotti-cooja,wait_after_last=off".into(), ..c };
    let rto = coapcc_sim::mesh_command::simulate(&code, None).unwrap().rto_first_s.unwrap();
    assert!(rto.min >= 3.0 && rto.max <= 4.5 && rto.max > 4.4, "{rto:?}");
}

fn preset() -> MeshRun {
    MeshRun::preset("ancillotti-cooja").unwrap()
}

/// The per-unit trace lines of a run.
#[derive(Default)]
struct Units(Vec<u8>);

impl coapcc_sim::TraceSink for Units {
    fn exchange(&mut self, _rec: &coapcc_sim::ExchangeTrace<'_>) {}
    fn unit(&mut self, rec: &coapcc_sim::UnitTrace) {
        rec.write_line(&mut self.0).unwrap();
    }
}
