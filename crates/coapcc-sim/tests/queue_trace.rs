//! The queue trace (`"kind": "queue"` records): on whole runs, over UDP (both endpoint
//! models, extra access links) and TCP, the traced queue stays within the buffer, conserves
//! bytes, agrees with the link counters of the report, is deterministic, changes nothing else,
//! and is off unless asked for.

use std::collections::BTreeMap;

use coapcc_sim::link::StageConfig;
use coapcc_sim::trace::VecTrace;
use coapcc_sim::{
    simulate, simulate_with_trace, AccessLinkConfig, EndpointModel, GroupConfig, JsonLinesTrace, LinkReport, SimConfig,
    SimReport, TopologyConfig, Transport, WorkloadKind,
};
use serde_json::Value;

fn congested(seed: u64) -> SimConfig {
    let mut c =
        SimConfig { seed, groups: vec![GroupConfig { cc: "cocoa".into(), clients: 40 }], ..SimConfig::default() };
    c.workload.exchanges = 10;
    c.link.set_buffer_bytes(1_000);
    c
}

fn traced(cfg: &SimConfig) -> (SimReport, Vec<Value>) {
    let mut sink = VecTrace { queue: true, ..VecTrace::default() };
    let r = simulate_with_trace(cfg, &mut sink).unwrap();
    (r, sink.records)
}

fn json(r: &SimReport) -> Value {
    r.results_json()
}

/// Queue records per (link, direction).
fn by_direction(recs: &[Value]) -> BTreeMap<(u64, String), Vec<&Value>> {
    let mut m: BTreeMap<(u64, String), Vec<&Value>> = BTreeMap::new();
    for r in recs.iter().filter(|r| r.get("kind").and_then(Value::as_str) == Some("queue")) {
        m.entry((r["link"].as_u64().unwrap(), r["direction"].as_str().unwrap().to_string())).or_default().push(r);
    }
    m
}

fn buffer_of(chain: &[StageConfig]) -> u64 {
    chain
        .iter()
        .find_map(|s| match s {
            StageConfig::Rate(r) => Some(r.buffer_bytes),
            _ => None,
        })
        .unwrap()
}

/// Every invariant of one direction's records against its configured buffer and its report.
fn check_direction(recs: &[&Value], buffer: u64, link: &LinkReport, finished: bool) {
    let (mut bytes, mut packets) = (0i64, 0i64);
    let (mut enq, mut enq_bytes, mut left, mut drops, mut drop_bytes, mut max) = (0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    let mut last_t = 0.0;
    for r in recs {
        let t = r["time_s"].as_f64().unwrap();
        assert!(t >= last_t, "records of a direction are in time order");
        last_t = t;
        let size = r["size"].as_u64().unwrap();
        let (b, p) = (r["bytes"].as_u64().unwrap(), r["packets"].as_u64().unwrap());
        match r["event"].as_str().unwrap() {
            "enqueue" => {
                bytes += size as i64;
                packets += 1;
                enq += 1;
                enq_bytes += size;
                max = max.max(b);
            }
            "leave" => {
                bytes -= size as i64;
                packets -= 1;
                left += 1;
            }
            "drop" => {
                drops += 1;
                drop_bytes += size;
                assert!(b + size > buffer, "a drop only when the packet would overflow: {b} + {size} <= {buffer}");
            }
            e => panic!("unknown event {e}"),
        }
        // The record's occupancy is the running sum of what entered and left.
        assert_eq!((b as i64, p as i64), (bytes, packets));
        assert!(b <= buffer, "occupancy {b} B above the {buffer} B buffer");
    }
    // Conservation: what entered either left or is still queued at the end.
    assert_eq!(enq, left + packets as u64);
    if finished {
        assert_eq!((bytes, packets), (0, 0), "a finished run leaves every queue empty");
    }
    // The link's own counters (one rate stage per direction: every drop is the buffer's).
    assert_eq!(drops, link.buffer_drop_packets);
    assert_eq!(drop_bytes, link.buffer_drop_bytes);
    assert_eq!(enq, link.offered_packets - link.buffer_drop_packets);
    assert_eq!(enq_bytes, link.serialised_bytes);
    assert_eq!(max, link.max_queue_bytes);
}

#[test]
fn the_queue_stays_within_the_buffer_and_matches_the_link_counters() {
    for model in [EndpointModel::Compact, EndpointModel::Full] {
        let mut cfg = congested(3);
        cfg.endpoint.model = model;
        let (r, recs) = traced(&cfg);
        let dirs = by_direction(&recs);
        assert_eq!(dirs.len(), 2, "{model:?}: both directions of the main link");
        let up = &dirs[&(0, "uplink".to_string())];
        let down = &dirs[&(0, "downlink".to_string())];
        assert!(r.links.downlink.buffer_drop_packets > 0, "{model:?}: the case must congest the downlink");
        check_direction(up, buffer_of(&cfg.link.uplink), &r.links.uplink, true);
        check_direction(down, buffer_of(&cfg.link.downlink), &r.links.downlink, true);
    }
}

#[test]
fn queue_tracing_changes_nothing_else_and_is_off_by_default() {
    let cfg = congested(5);
    let plain = simulate(&cfg).unwrap();
    let (queued, recs) = traced(&cfg);
    assert_eq!(json(&plain), json(&queued));
    // The same exchange records, in the same order, as a trace without queue records.
    let mut sink = VecTrace::default();
    simulate_with_trace(&cfg, &mut sink).unwrap();
    let exchanges: Vec<&Value> = recs.iter().filter(|r| r.get("kind").is_none()).collect();
    assert_eq!(exchanges, sink.records.iter().collect::<Vec<_>>());
    assert!(exchanges.len() < recs.len());
    // JSON lines: no queue record unless asked for.
    let mut off = JsonLinesTrace::new(Vec::new());
    simulate_with_trace(&cfg, &mut off).unwrap();
    let off = String::from_utf8(off.finish().unwrap()).unwrap();
    assert!(!off.contains("\"kind\":\"queue\""));
    let mut on = JsonLinesTrace::new(Vec::new()).with_queue(true);
    simulate_with_trace(&cfg, &mut on).unwrap();
    let on = String::from_utf8(on.finish().unwrap()).unwrap();
    let lines: Vec<Value> = on.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let again: Vec<Value> = recs.iter().map(|r| serde_json::from_str(&r.to_string()).unwrap()).collect();
    assert!(lines == again, "JSON lines and in-memory records differ ({} and {} records)", lines.len(), again.len());
}

#[test]
fn the_queue_trace_is_deterministic_by_seed() {
    let (_, a) = traced(&congested(11));
    let (_, b) = traced(&congested(11));
    let (_, c) = traced(&congested(12));
    assert!(a == b, "same seed, different queue trace");
    assert!(a != c, "different seeds, same queue trace");
}

#[test]
fn extra_access_links_have_their_own_queues() {
    let mut cfg = congested(4);
    cfg.groups.push(GroupConfig { cc: "default".into(), clients: 20 });
    cfg.topology = TopologyConfig {
        access_links: vec![AccessLinkConfig {
            groups: vec![1],
            uplink: cfg.link.uplink.clone(),
            downlink: cfg.link.downlink.clone(),
        }],
        ..Default::default()
    };
    let (r, recs) = traced(&cfg);
    let dirs = by_direction(&recs);
    assert_eq!(dirs.keys().map(|k| k.0).collect::<std::collections::BTreeSet<_>>().len(), 2);
    let a = &r.access_links[0].links;
    check_direction(&dirs[&(0, "uplink".into())], 1_000, &r.links.uplink, true);
    check_direction(&dirs[&(0, "downlink".into())], 1_000, &r.links.downlink, true);
    check_direction(&dirs[&(1, "uplink".into())], 1_000, &a.uplink, true);
    check_direction(&dirs[&(1, "downlink".into())], 1_000, &a.downlink, true);
}

#[test]
fn a_truncated_run_keeps_what_is_still_queued() {
    let mut cfg = congested(6);
    cfg.max_sim_time_s = 5.0;
    let (r, recs) = traced(&cfg);
    assert!(r.truncated);
    let dirs = by_direction(&recs);
    // Packets pushed before the bound are counted by the link (their fate is decided at
    // push), so they are traced too; the trace ends with what is still queued at the bound.
    let down = &dirs[&(0, "downlink".to_string())];
    check_direction(down, 1_000, &r.links.downlink, false);
    let last = down.last().unwrap();
    assert!(last["bytes"].as_u64().unwrap() > 0, "the downlink is still busy at 5 s: {last}");
}

#[test]
fn tcp_runs_trace_their_queues_too() {
    let mut cfg = SimConfig {
        seed: 2,
        groups: vec![GroupConfig { cc: "newreno:preset=helsinki2018".into(), clients: 3 }],
        transport: Transport::Tcp,
        ..SimConfig::default()
    };
    cfg.workload.kind = WorkloadKind::Bulk(20_000);
    cfg.link.set_buffer_bytes(2_000);
    let (r, recs) = traced(&cfg);
    let dirs = by_direction(&recs);
    assert!(r.links.downlink.buffer_drop_packets > 0, "the case must congest the downlink");
    check_direction(&dirs[&(0, "uplink".into())], 2_000, &r.links.uplink, true);
    check_direction(&dirs[&(0, "downlink".into())], 2_000, &r.links.downlink, true);
    // The TCP sender records are still there.
    assert!(recs.iter().any(|r| r.get("flow").is_some()));
}

#[test]
fn the_command_line_writes_queue_records_with_trace_queue() {
    use coapcc_sim::cli::{run as cli_run, SimulateArgs};
    let dir = std::env::temp_dir().join(format!("coapcc-queue-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let count = |queue: bool| {
        let path = dir.join(format!("t{queue}.jsonl"));
        let args = SimulateArgs {
            clients: Some("5".into()),
            exchanges: Some(3),
            trace: Some(path.clone()),
            trace_queue: queue,
            ..SimulateArgs::default()
        };
        cli_run(&args, &mut Vec::new()).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        text.lines().filter(|l| l.contains("\"kind\":\"queue\"")).count()
    };
    assert_eq!(count(false), 0);
    // 5 clients × 3 exchanges, no loss: every request and response is enqueued and leaves.
    assert_eq!(count(true), 4 * 15);
    std::fs::remove_dir_all(&dir).unwrap();
}
