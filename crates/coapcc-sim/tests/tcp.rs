//! The TCP transport (`transport = tcp`) and the `bulk:BYTES` workload: the calibration
//! points, conservation, determinism and the JSON keys.

use coapcc_sim::cli::{run as cli_run, SimulateArgs};
use coapcc_sim::link::LossModel;
use coapcc_sim::trace::VecTrace;
use coapcc_sim::{
    simulate, simulate_with_progress, simulate_with_trace, GroupConfig, SimConfig, SimReport, Transport, WorkloadKind,
};
use serde_json::Value;

/// CSM (2 B) + the 102 408-byte response frame (8-byte header + token + marker + 102 400 B).
const BULK_APP_BYTES: u64 = 2 + 102_408;

fn json(r: &SimReport) -> Value {
    r.results_json()
}

fn tcp(cc: &str, clients: u32, buffer: u64, seed: u64) -> SimConfig {
    let mut c = SimConfig {
        seed,
        groups: vec![GroupConfig { cc: cc.into(), clients }],
        transport: Transport::Tcp,
        ..SimConfig::default()
    };
    c.workload.kind = WorkloadKind::Bulk(102_400);
    c.link.set_buffer_bytes(buffer);
    c
}

#[test]
fn ideal_newreno_transfer_calibration() {
    let r = simulate(&tcp("newreno:preset=helsinki2018", 1, 1_410_000, 1)).unwrap();
    let f = &r.flows[0];
    let fct = f.fct_s.unwrap();
    eprintln!("newreno ideal FCT {fct} s, setup {:?}", f.setup_s);
    // The published ideal figure is about 32.2 s; the model's is within 1 s of it.
    assert!((31.6..33.3).contains(&fct), "{fct}");
    assert_eq!(f.retransmitted_segments, Some(0));
    assert_eq!(f.rto_expiries, Some(0));
    // CSM (2 B) + the 102 408-byte response frame.
    assert_eq!(f.bytes_delivered, Some(102_410));
    assert!(!r.truncated);
}

fn udp_bulk(cc: &str, clients: u32, buffer: u64, seed: u64) -> SimConfig {
    let mut c = SimConfig { seed, groups: vec![GroupConfig { cc: cc.into(), clients }], ..SimConfig::default() };
    c.workload.kind = WorkloadKind::Bulk(102_400);
    c.link.set_buffer_bytes(buffer);
    c
}

#[test]
fn block2_over_udp_calibration_whatever_the_buffer() {
    let mut fcts = Vec::new();
    for buffer in [2_500, 14_100, 28_200, 1_410_000] {
        let r = simulate(&udp_bulk("default:preset=helsinki2018", 1, buffer, 1)).unwrap();
        let f = &r.flows[0];
        let fct = f.fct_s.unwrap();
        eprintln!("Block2 buffer {buffer}: FCT {fct} s, {} transmissions", f.transmissions);
        // 400 blocks of 256 B, stop-and-wait: about 285.7 s error-free.
        assert!((284.0..288.0).contains(&fct), "{fct}");
        assert_eq!(f.transmissions, 400);
        assert_eq!(f.retransmissions, 0);
        assert_eq!(f.completed_exchanges, 1);
        assert_eq!(r.retransmissions_per_exchange[0], 400);
        // Every block's response was useful, nothing else crossed the downlink.
        assert_eq!(r.useful_fraction, 1.0);
        assert_eq!(r.config.endpoint.model, coapcc_sim::EndpointModel::Full);
        assert!(f.setup_s.is_none() && f.bytes_delivered.is_none());
        fcts.push(fct);
    }
    // No queue builds up with one block in flight: the buffer does not matter.
    assert!(fcts.windows(2).all(|w| w[0] == w[1]), "{fcts:?}");
}

#[test]
fn ideal_bbr_transfer_completes_without_loss() {
    let r = simulate(&tcp("bbr:preset=helsinki2018", 1, 1_410_000, 1)).unwrap();
    let f = &r.flows[0];
    eprintln!("bbr ideal FCT {:?} s, {:?} segments", f.fct_s, f.segments_sent);
    assert!((31.6..40.0).contains(&f.fct_s.unwrap()), "{:?}", f.fct_s);
    assert_eq!(f.bytes_delivered, Some(BULK_APP_BYTES));
    assert_eq!(f.retransmitted_segments, Some(0));
}

#[test]
fn every_byte_arrives_under_congestion_and_errors() {
    let losses = [
        LossModel::None,
        LossModel::Bernoulli { p: 0.03 },
        LossModel::GilbertElliottTime { low_mean_s: 9.0, burst_mean_s: 1.0, loss_low: 0.0, loss_burst: 0.5 },
    ];
    for cc in ["newreno:preset=helsinki2018", "bbr:preset=helsinki2018"] {
        for buffer in [2_500, 28_200] {
            for (k, loss) in losses.iter().enumerate() {
                for clients in [1, 4] {
                    let mut c = tcp(cc, clients, buffer, 7 + k as u64);
                    c.link.set_loss(loss);
                    let r = simulate(&c).unwrap();
                    let what = format!("{cc} buffer {buffer} loss {k} clients {clients}");
                    assert!(!r.truncated, "{what}");
                    for f in &r.flows {
                        assert!(f.fct_s.is_some(), "{what}");
                        assert_eq!(f.bytes_delivered, Some(BULK_APP_BYTES), "{what}");
                        assert_eq!(f.completed_exchanges, 1, "{what}");
                        assert!(f.segments_sent.unwrap() >= 401, "{what}");
                        assert_eq!(f.retransmissions, f.retransmitted_segments.unwrap(), "{what}");
                    }
                    for l in [&r.links.uplink, &r.links.downlink] {
                        assert_eq!(
                            l.offered_packets,
                            l.delivered_packets + l.buffer_drop_packets + l.error_loss_packets,
                            "{what}"
                        );
                    }
                    if k > 0 {
                        assert!(r.links.downlink.error_loss_packets > 0, "{what}");
                        let rtx: u64 = r.flows.iter().map(|f| f.retransmitted_segments.unwrap()).sum();
                        assert!(rtx > 0, "{what}");
                    }
                }
            }
        }
    }
}

#[test]
fn small_buffer_drops_and_recovers() {
    // 2 500 B hold fewer than 9 full segments: slow start overflows it.
    let r = simulate(&tcp("newreno:preset=helsinki2018", 4, 2_500, 3)).unwrap();
    assert!(r.links.downlink.buffer_drop_packets > 0);
    let recoveries: u64 = r.flows.iter().map(|f| f.fast_retransmits.unwrap() + f.rto_expiries.unwrap()).sum();
    assert!(recoveries > 0);
    assert!(r.flows.iter().all(|f| f.bytes_delivered == Some(BULK_APP_BYTES)));
}

#[test]
fn runs_are_deterministic() {
    let mut c = tcp("bbr:preset=helsinki2018", 4, 14_100, 11);
    c.link.set_loss(&LossModel::Bernoulli { p: 0.02 });
    let a = json(&simulate(&c).unwrap());
    let b = json(&simulate(&c).unwrap());
    assert_eq!(a, b);
    c.seed = 12;
    assert_ne!(a, json(&simulate(&c).unwrap()));
}

#[test]
fn json_has_the_tcp_fields_and_udp_has_none() {
    let v = json(&simulate(&tcp("newreno", 2, 28_200, 1)).unwrap());
    assert_eq!(v["config"]["transport"], "tcp");
    assert_eq!(v["config"]["workload"]["kind"]["bulk"], 102_400);
    // The canonical form, with the MTU taken from the link.
    let cc = v["config"]["groups"][0]["cc"].as_str().unwrap();
    assert!(cc.starts_with("newreno:") && cc.contains("mtu=296"), "{cc}");
    for f in v["flows"].as_array().unwrap() {
        for key in [
            "fct_s",
            "setup_s",
            "segments_sent",
            "retransmitted_segments",
            "rto_expiries",
            "fast_retransmits",
            "bytes_delivered",
        ] {
            assert!(f.get(key).is_some_and(|x| !x.is_null()), "{key} missing in {f}");
        }
        assert_eq!(f["cc"], "newreno");
    }
    assert!(v["links"]["downlink"]["serialised_bytes"].as_u64().unwrap() > 102_400);
    let udp = json(&simulate(&SimConfig::default()).unwrap());
    assert!(udp["config"].get("transport").is_none());
    assert!(udp["flows"][0].get("setup_s").is_none() && udp["flows"][0].get("segments_sent").is_none());
}

#[test]
fn setup_is_one_round_trip_and_excluded_from_fct() {
    let r = simulate(&tcp("newreno:preset=helsinki2018", 1, 1_410_000, 1)).unwrap();
    let setup = r.flows[0].setup_s.unwrap().unwrap();
    // SYN: 40 B at 60 kbit/s, 200 ms, rest of path U[10, 20] ms; SYN-ACK: rest of path
    // U[10, 20] ms, 40 B at 30 kbit/s, 400 ms.
    let lo = 40.0 * 8.0 / 60e3 + 40.0 * 8.0 / 30e3 + 0.62;
    assert!((lo..=lo + 0.02).contains(&setup), "{setup}");
    assert!(r.sim_time_s > r.flows[0].fct_s.unwrap() + setup);
}

#[test]
fn trace_has_one_line_per_sender_event() {
    let mut t = VecTrace::default();
    let r = simulate_with_trace(&tcp("bbr:preset=helsinki2018", 1, 28_200, 1), &mut t).unwrap();
    let sends = t.records.iter().filter(|x| x["event"] == "send").count() as u64;
    let f = &r.flows[0];
    assert!(sends >= 401, "{sends}");
    let first = &t.records[0];
    for key in ["time_s", "flow", "seq", "cwnd", "ssthresh", "pacing_rate", "bbr_state", "ca_state", "rto_s"] {
        assert!(first.get(key).is_some(), "{key}");
    }
    assert!(t.records.iter().any(|x| x["bbr_state"] == "probe_bw"));
    let times: Vec<f64> = t.records.iter().map(|x| x["time_s"].as_f64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
    assert!(f.fct_s.is_some());
}

#[test]
fn continuous_and_random_run_over_tcp() {
    let mut c = tcp("newreno:preset=helsinki2018", 3, 28_200, 5);
    c.workload.kind = WorkloadKind::Continuous;
    let r = simulate(&c).unwrap();
    // One connection per flow: its CSM and 50 responses of 60 B of payload (65-byte frames).
    for f in &r.flows {
        assert_eq!(f.completed_exchanges, 50);
        assert_eq!(f.bytes_delivered, Some(2 + 50 * 65));
    }
    c.workload.kind = WorkloadKind::Random;
    let r = simulate(&c).unwrap();
    for f in &r.flows {
        assert_eq!(f.completed_exchanges, 50);
        // A new connection (and CSM) per batch of 1 to 10: at least 5 connections.
        let csm_bytes = f.bytes_delivered.unwrap() - 50 * 65;
        assert!(csm_bytes % 2 == 0 && (10..=100).contains(&csm_bytes), "{csm_bytes}");
        assert!(f.fct_s.unwrap() > 5.0 * f.setup_s.unwrap().unwrap());
    }
}

#[test]
fn bad_tcp_configurations_are_rejected_with_one_line() {
    let check = |c: SimConfig, needle: &str| {
        let e = simulate(&c).unwrap_err().to_string();
        assert!(e.contains(needle) && !e.contains('\n'), "{e:?} should contain {needle:?}");
    };
    check(tcp("cubic", 1, 28_200, 1), "unknown TCP congestion control 'cubic'");
    check(tcp("default:preset=helsinki2018", 1, 28_200, 1), "valid: newreno, bbr");
    check(tcp("newreno:mtu=576", 1, 28_200, 1), "MTU");
    check(tcp("newreno:init_cwnd=x", 1, 28_200, 1), "init_cwnd");
    let mut c = tcp("newreno", 1, 28_200, 1);
    c.workload.kind = WorkloadKind::Bulk(0);
    check(c, "bulk:0");
    let mut c = tcp("newreno", 1, 100, 1);
    c.workload.kind = WorkloadKind::Bulk(1000);
    check(c, "link.uplink");
    let mut c = udp_bulk("default", 1, 28_200, 1);
    c.workload.kind = WorkloadKind::Bulk(1 << 30);
    check(c, "bulk:");
}

#[test]
fn the_command_line_runs_both_transports() {
    let args = SimulateArgs {
        cc: vec!["bbr".into()],
        transport: Some(Transport::Tcp),
        workload: Some(WorkloadKind::Bulk(102_400)),
        clients: Some("2".into()),
        json: true,
        ..SimulateArgs::default()
    };
    let mut out = Vec::new();
    cli_run(&args, &mut out).unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["flows"].as_array().unwrap().len(), 2);
    assert_eq!(v["flows"][1]["bytes_delivered"], BULK_APP_BYTES);
    // --transport tcp without --cc: New Reno with the study's settings.
    let args = SimulateArgs { transport: Some(Transport::Tcp), ..SimulateArgs::default() };
    let cfg = coapcc_sim::cli::build_config(&args).unwrap();
    assert!(cfg.groups[0].cc.starts_with("newreno"));
    let mut out = Vec::new();
    cli_run(&args, &mut out).unwrap();
    assert!(String::from_utf8(out).unwrap().contains("newreno"));
}

#[test]
fn block2_under_errors_completes_and_is_deterministic() {
    let mut c = udp_bulk("cocoa:preset=helsinki2018", 2, 2_500, 4);
    c.link.set_loss(&LossModel::GilbertElliottTime {
        low_mean_s: 4.0,
        burst_mean_s: 1.0,
        loss_low: 0.0,
        loss_burst: 0.5,
    });
    let r = simulate(&c).unwrap();
    assert_eq!(json(&r), json(&simulate(&c).unwrap()));
    let mut rtx = 0;
    for f in &r.flows {
        assert!(f.fct_s.unwrap() > 285.7);
        assert_eq!(f.completed_exchanges, 1);
        // One first transmission per block, the rest retransmissions.
        assert_eq!(f.failed_exchanges, 0);
        assert_eq!(f.transmissions - f.retransmissions, 400);
        rtx += f.retransmissions;
    }
    assert!(rtx > 0);
    // One histogram entry per completed block.
    let blocks: u64 = r.retransmissions_per_exchange.iter().sum();
    assert!(blocks >= 800, "{blocks}");
}

#[test]
fn tcp_runs_within_the_event_budget() {
    // The engine's one loop hosts TCP: its event budget applies, with a clear error.
    let mut c = tcp("newreno:preset=helsinki2018", 2, 28_200, 1);
    c.max_events = Some(200);
    let e = simulate(&c).unwrap_err().to_string();
    assert!(e.contains("max_events") && e.contains("200 events"), "{e}");
    // The default budget counts a bulk transfer's 256-byte units: large transfers fit.
    c.max_events = None;
    c.workload.kind = WorkloadKind::Bulk(1 << 30);
    assert!(c.event_budget() >= 200 * 2 * (1 << 22), "{}", c.event_budget());
    c.workload.kind = WorkloadKind::Bulk(102_400);
    let r = simulate(&c).unwrap();
    assert!(r.events > 200 && r.events < c.event_budget() && !r.truncated, "{}", r.events);
}

#[test]
fn a_long_tcp_run_reports_progress() {
    // The engine's one loop calls the progress callback every 2^20 events, over TCP too
    // (a 160 MB transfer: about 1.1 million events).
    let mut c = tcp("bbr:preset=helsinki2018", 1, 1_410_000, 1);
    c.workload.kind = WorkloadKind::Bulk(160_000_000);
    let mut seen: Vec<(u64, f64, usize, usize)> = Vec::new();
    let mut cb = |p: &coapcc_sim::Progress| seen.push((p.events, p.sim_time_s, p.finished, p.flows));
    let r = simulate_with_progress(&c, None, &mut cb).unwrap();
    assert!(!r.truncated && r.flows[0].bytes_delivered == Some(2 + 160_000_008), "{:?}", r.flows[0]);
    assert!(!seen.is_empty() && r.events >= 1 << 20, "{} events", r.events);
    for (k, &(events, t, finished, flows)) in seen.iter().enumerate() {
        assert_eq!(events, (k as u64 + 1) << 20);
        assert!(t > 0.0 && t <= r.sim_time_s && finished == 0 && flows == 1, "{seen:?}");
    }
}
