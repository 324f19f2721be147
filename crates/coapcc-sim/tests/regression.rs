//! The regression matrix: results must not change when the code is restructured.
//!
//! `tests/data/regression.jsonl` holds one JSON object per case: its name, the input
//! configuration, the canonical algorithm strings the run resolved, the report (without
//! `config`, which is the input with the canonical strings, and without `wall_s`) and an
//! FNV-1a digest of the per-exchange trace (JSON lines). The test recomputes every case and
//! asserts byte equality, naming the case on a mismatch. The matrix:
//! - every registry algorithm (its defaults) × {continuous, random} × buffers {250 B,
//!   1 410 000 B} × errors {none, medium} × seeds {1, 2, 3}, 6 clients, 10 exchanges;
//! - every algorithm congested (30 clients, 4 exchanges, buffers {1 000 B, 1 410 000 B}) and
//!   behind a 1-3 s rest of path (10 clients: RTTs beyond the initial timers);
//! - every algorithm under every reproduction preset it accepts (one scenario each);
//! - the same scenario for every algorithm with the real endpoints (`endpoint.model = full`);
//! - mixed populations (two to four groups) and variants: random batches with start jitter,
//!   `replay_cached`, packet-clocked high errors, reordering, a short MAX_RETRANSMIT, a
//!   truncated run, a server processing delay (full model: separate responses), under both
//!   endpoint models;
//! - packet-size variants (IPv6, token lengths 0/1/8, Uri-Path segments, response payloads).
//!
//! It also stores, per algorithm and preset, the canonical textual form alone.
//!
//! `tests/data/regression-tcp.jsonl` holds the same kind of line for the TCP transport
//! (`transport = tcp`): New Reno and BBR (their defaults and `helsinki2018`) × {continuous,
//! random, `bulk:20000`} × buffers {2 500 B, 1 410 000 B} × errors {none, medium} × seeds
//! {1, 2}, 4 clients, 10 exchanges; a 102 400-byte transfer per algorithm; connections that
//! give up (few SYN retries, high errors); and mixed New Reno and BBR populations (random
//! batches with start jitter, packet-clocked high errors, reordering, a truncated run).
//! `COAPCC_REGEN=1` regenerates both files; to regenerate one, select its test with
//! `-- --exact results_are_unchanged` or `-- --exact tcp_results_are_unchanged`.
//!
//! Regenerate after an intended change of results (and say why in the commit):
//!
//! ```text
//! COAPCC_REGEN=1 cargo test -p coapcc-sim --test regression
//! ```

use std::fmt::Write as _;
use std::path::PathBuf;

use coapcc_cc::{AlgorithmConfig, Preset, ALGORITHMS};
use coapcc_sim::link::{ErrorClock, LossModel, StageConfig};
use coapcc_sim::{
    simulate, simulate_with_trace, DuplicateMode, EndpointModel, GroupConfig, JsonLinesTrace, SimConfig, Transport,
    WorkloadKind,
};
use serde_json::{json, Value};

fn data_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/regression.jsonl")
}

fn tcp_data_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/regression-tcp.jsonl")
}

fn base(groups: &[(&str, u32)], seed: u64) -> SimConfig {
    let mut c = SimConfig {
        seed,
        groups: groups.iter().map(|(cc, n)| GroupConfig { cc: (*cc).into(), clients: *n }).collect(),
        ..SimConfig::default()
    };
    c.workload.exchanges = 10;
    c
}

fn errors(c: &mut SimConfig, profile: &str, clock: ErrorClock) {
    c.link.set_loss(&LossModel::profile(profile, clock, 5.0).expect("a known profile"));
}

/// Every case, in a fixed order: (name, configuration).
fn cases() -> Vec<(String, SimConfig)> {
    let mut out = Vec::new();
    // 1. The main matrix.
    for alg in ALGORITHMS {
        for (wname, kind) in [("continuous", WorkloadKind::Continuous), ("random", WorkloadKind::Random)] {
            for buffer in [250u64, 1_410_000] {
                for err in ["none", "medium"] {
                    for seed in 1..=3u64 {
                        let mut c = base(&[(alg.name, 6)], seed);
                        c.workload.kind = kind;
                        c.link.set_buffer_bytes(buffer);
                        errors(&mut c, err, ErrorClock::Time);
                        out.push((format!("{} {wname} buffer={buffer} errors={err} seed={seed}", alg.name), c));
                    }
                }
            }
        }
    }
    // 2. Congestion: many clients, few exchanges (drops; spurious timeouts under bufferbloat).
    for alg in ALGORITHMS {
        for buffer in [1_000u64, 1_410_000] {
            let mut c = base(&[(alg.name, 30)], 1);
            c.workload.exchanges = 4;
            c.link.set_buffer_bytes(buffer);
            out.push((format!("{} congested 30 clients buffer={buffer} seed=1", alg.name), c));
        }
        // A long rest of path: RTTs beyond the initial timers (spurious retransmissions).
        let mut c = base(&[(alg.name, 10)], 2);
        c.link.set_buffer_bytes(1_410_000);
        c.link.set_rest_of_path_ms(1_000.0, 3_000.0);
        out.push((format!("{} rest of path 1-3 s seed=2", alg.name), c));
    }
    // 3. Presets, and 4. the full endpoint model, per algorithm.
    for alg in ALGORITHMS {
        for (pname, _) in Preset::ALL {
            let spec = format!("{}:preset={pname}", alg.name);
            if AlgorithmConfig::parse(&spec).is_err() {
                continue;
            }
            let mut c = base(&[(&spec, 8)], 4);
            c.link.set_buffer_bytes(1_000);
            errors(&mut c, "medium", ErrorClock::Time);
            out.push((format!("{spec} continuous buffer=1000 errors=medium seed=4"), c));
        }
        let mut c = base(&[(alg.name, 8)], 5);
        c.link.set_buffer_bytes(1_000);
        errors(&mut c, "medium", ErrorClock::Time);
        c.endpoint.model = EndpointModel::Full;
        out.push((format!("{} full endpoints buffer=1000 errors=medium seed=5", alg.name), c));
    }
    // 5. Mixed populations and variants, both endpoint models.
    let mixes: [&[(&str, u32)]; 3] = [
        &[("default:preset=helsinki2018", 4), ("cocoa:preset=helsinki2018", 4)],
        &[("fasor", 3), ("fasor-token", 3), ("pcocoa", 3)],
        &[
            ("default-fb1:preset=helsinki2018", 3),
            ("pcocoa", 3),
            ("californium-cocoa", 3),
            ("cocoa-fb1:preset=helsinki2018", 3),
        ],
    ];
    let variants = variants();
    for (m, mix) in mixes.iter().enumerate() {
        for (vname, f) in &variants {
            for model in [EndpointModel::Compact, EndpointModel::Full] {
                let mut c = base(mix, 6 + m as u64);
                c.link.set_buffer_bytes(2_500);
                errors(&mut c, "medium", ErrorClock::Time);
                f(&mut c);
                c.endpoint.model = model;
                out.push((format!("mix {m} {vname} {model:?}"), c));
            }
        }
    }
    // 6. Packet sizes.
    let sizes: [(u8, u8, &str, u32); 5] =
        [(6, 8, "sensors//temp/", 60), (4, 1, "hello", 0), (6, 4, "a/b", 200), (4, 8, "", 240), (4, 0, "x", 60)];
    for (ip, tkl, path, payload) in sizes {
        for model in [EndpointModel::Compact, EndpointModel::Full] {
            if tkl == 0 && model == EndpointModel::Full {
                continue; // the real endpoint needs a token
            }
            let mut c = base(&[("cocoa", 4), ("fasor-token", 4)], 9);
            c.coap.ip_version = ip;
            c.coap.token_len = tkl;
            c.coap.uri_path = path.into();
            c.coap.response_payload_bytes = payload;
            c.link.set_buffer_bytes(1_500);
            errors(&mut c, "medium", ErrorClock::Time);
            c.endpoint.model = model;
            out.push((format!("sizes ipv{ip} token={tkl} path={path:?} payload={payload} {model:?}"), c));
        }
    }
    out
}

/// The TCP transport's cases, in a fixed order: (name, configuration).
fn tcp_cases() -> Vec<(String, SimConfig)> {
    let tcp = |groups: &[(&str, u32)], seed: u64| {
        let mut c = base(groups, seed);
        c.transport = Transport::Tcp;
        c
    };
    let mut out = Vec::new();
    // 1. The main matrix.
    for alg in ["newreno", "bbr", "newreno:preset=helsinki2018", "bbr:preset=helsinki2018"] {
        let workloads = [
            ("continuous", WorkloadKind::Continuous),
            ("random", WorkloadKind::Random),
            ("bulk:20000", WorkloadKind::Bulk(20_000)),
        ];
        for (wname, kind) in workloads {
            for buffer in [2_500u64, 1_410_000] {
                for err in ["none", "medium"] {
                    for seed in 1..=2u64 {
                        let mut c = tcp(&[(alg, 4)], seed);
                        c.workload.kind = kind;
                        c.link.set_buffer_bytes(buffer);
                        errors(&mut c, err, ErrorClock::Time);
                        out.push((format!("tcp {alg} {wname} buffer={buffer} errors={err} seed={seed}"), c));
                    }
                }
            }
        }
    }
    // 2. One 102 400-byte transfer per algorithm (the thesis' calibration scenario, with errors).
    for alg in ["newreno:preset=helsinki2018", "bbr:preset=helsinki2018"] {
        let mut c = tcp(&[(alg, 1)], 3);
        c.workload.kind = WorkloadKind::Bulk(102_400);
        c.link.set_buffer_bytes(28_200);
        errors(&mut c, "medium", ErrorClock::Time);
        out.push((format!("tcp {alg} bulk:102400 buffer=28200 errors=medium seed=3"), c));
    }
    // 3. Connections that give up (SYN retries exhausted under heavy losses).
    for alg in ["newreno:syn_retries=1", "bbr:syn_retries=0"] {
        let mut c = tcp(&[(alg, 6)], 4);
        errors(&mut c, "high", ErrorClock::Time);
        out.push((format!("tcp {alg} errors=high seed=4"), c));
    }
    // 4. Mixed populations and variants.
    // The UDP mixes' variants that apply to TCP (no duplicate mode, MAX_RETRANSMIT or server
    // delay over TCP).
    let tcp_variants = ["base", "random, start jitter", "high packet-clocked errors", "reordering uplink", "truncated"];
    let variants: Vec<Variant> = variants().into_iter().filter(|(n, _)| tcp_variants.contains(n)).collect();
    let mixes: [&[(&str, u32)]; 2] =
        [&[("newreno", 3), ("bbr", 3)], &[("bbr:preset=helsinki2018", 4), ("newreno:preset=helsinki2018", 4)]];
    for (m, mix) in mixes.iter().enumerate() {
        for (vname, f) in &variants {
            let mut c = tcp(mix, 6 + m as u64);
            c.link.set_buffer_bytes(2_500);
            errors(&mut c, "medium", ErrorClock::Time);
            f(&mut c);
            out.push((format!("tcp mix {m} {vname}"), c));
        }
    }
    out
}

/// A variant of a mixed population: its name (part of the case name) and what it changes.
type Variant = (&'static str, fn(&mut SimConfig));

/// The variants applied to every mixed population.
fn variants() -> [Variant; 8] {
    [
        ("base", |_| {}),
        ("random, start jitter", |c| {
            c.workload.kind = WorkloadKind::Random;
            c.workload.start_jitter_ms = 3_000.0;
            c.workload.batch_min = 2;
            c.workload.batch_max = 5;
        }),
        ("replay_cached", |c| c.server.duplicate_mode = DuplicateMode::ReplayCached),
        ("high packet-clocked errors", |c| errors(c, "high", ErrorClock::Packet)),
        ("reordering uplink", |c| {
            for st in &mut c.link.uplink {
                if let StageConfig::Jitter(j) = st {
                    j.allow_reordering = true;
                }
            }
        }),
        ("max_retransmit=1", |c| {
            for g in &mut c.groups {
                g.cc = format!("{}:max_retransmit=1", g.cc.split(':').next().expect("a name"));
            }
        }),
        ("truncated", |c| c.max_sim_time_s = 20.0),
        ("server delay 1500 ms", |c| c.server.processing_delay_ms = 1_500.0),
    ]
}

/// FNV-1a, 64 bits.
fn fnv1a(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// One case's stored line.
fn compute(name: &str, cfg: &SimConfig) -> String {
    let report = simulate(cfg).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut sink = JsonLinesTrace::new(Vec::new());
    let traced = simulate_with_trace(cfg, &mut sink).unwrap_or_else(|e| panic!("{name}: {e}"));
    let trace = sink.finish().expect("in-memory trace");
    let body = report.outcome_json();
    assert_eq!(body, traced.outcome_json(), "{name}: tracing changed the report");
    let canonical: Vec<&str> = report.config.groups.iter().map(|g| g.cc.as_str()).collect();
    let mut resolved = cfg.clone();
    for (g, c) in resolved.groups.iter_mut().zip(&canonical) {
        g.cc = (*c).to_string();
    }
    assert_eq!(report.config, resolved, "{name}: the report's configuration is the input, canonicalised");
    json!({
        "case": name,
        "config": cfg,
        "canonical": canonical,
        "report": body,
        "trace_fnv1a": fnv1a(&trace),
        "trace_records": trace.iter().filter(|b| **b == b'\n').count(),
    })
    .to_string()
}

/// Canonical textual form of every algorithm under every preset it accepts.
fn canonical_lines() -> Vec<String> {
    let mut out = Vec::new();
    for alg in ALGORITHMS {
        let mut specs = vec![alg.name.to_string()];
        specs.extend(Preset::ALL.iter().map(|(p, _)| format!("{}:preset={p}", alg.name)));
        for spec in specs {
            if let Ok(a) = AlgorithmConfig::parse(&spec) {
                out.push(json!({"case": format!("canonical {spec}"), "canonical": a.to_string()}).to_string());
            }
        }
    }
    out
}

fn all_lines() -> Vec<String> {
    let mut lines: Vec<String> = cases().iter().map(|(n, c)| compute(n, c)).collect();
    lines.extend(canonical_lines());
    lines
}

/// Compare `now` with the lines stored in `path` (or store them, with `COAPCC_REGEN=1`).
fn check(path: &std::path::Path, now: Vec<String>) {
    if std::env::var_os("COAPCC_REGEN").is_some_and(|v| v == "1") {
        let mut text = String::new();
        for l in now {
            writeln!(text, "{l}").expect("string");
        }
        std::fs::create_dir_all(path.parent().expect("parent")).expect("data directory");
        std::fs::write(path, text).expect("write the regression file");
        eprintln!("regenerated {}", path.display());
        return;
    }
    let stored =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e} (COAPCC_REGEN=1 creates it)", path.display()));
    let stored: Vec<&str> = stored.lines().collect();
    let mut bad = Vec::new();
    for (i, line) in now.iter().enumerate() {
        match stored.get(i) {
            Some(s) if *s == line.as_str() => {}
            other => {
                let name = serde_json::from_str::<Value>(line).ok().and_then(|v| v["case"].as_str().map(String::from));
                bad.push(format!(
                    "case {i} ({}):\n  stored:   {}\n  computed: {}",
                    name.unwrap_or_default(),
                    other.map_or("<missing>", |s| &s[..s.len().min(600)]),
                    &line[..line.len().min(600)]
                ));
            }
        }
    }
    if stored.len() != now.len() {
        bad.push(format!("{} stored cases, {} computed", stored.len(), now.len()));
    }
    assert!(bad.is_empty(), "{} of {} cases differ:\n{}", bad.len(), now.len(), bad.join("\n"));
}

#[test]
fn results_are_unchanged() {
    check(&data_file(), all_lines());
}

#[test]
fn tcp_results_are_unchanged() {
    let lines = tcp_cases().iter().map(|(n, c)| compute(n, c)).collect();
    check(&tcp_data_file(), lines);
}

#[test]
fn the_matrix_is_not_trivial() {
    // The equality proves little unless the cases retransmit, drop, lose and give up.
    let stored = std::fs::read_to_string(data_file()).expect("the regression file");
    let (mut rtx, mut unnecessary, mut drops, mut losses, mut failed) = (0u64, 0u64, 0u64, 0u64, 0u64);
    for line in stored.lines() {
        let v: Value = serde_json::from_str(line).expect("JSON lines");
        let Some(r) = v.get("report") else { continue };
        for g in r["groups"].as_array().expect("groups") {
            rtx += g["retransmissions"].as_u64().expect("u64");
            unnecessary += g["unnecessary_retransmissions"].as_u64().expect("u64");
            failed += g["failed_exchanges"].as_u64().expect("u64");
        }
        for d in ["uplink", "downlink"] {
            drops += r["links"][d]["buffer_drop_packets"].as_u64().expect("u64");
            losses += r["links"][d]["error_loss_packets"].as_u64().expect("u64");
        }
    }
    assert!(
        rtx > 4_000 && unnecessary > 500 && drops > 500 && losses > 2_000 && failed > 5,
        "{rtx} {unnecessary} {drops} {losses} {failed}"
    );
}

#[test]
fn the_tcp_matrix_is_not_trivial() {
    // The equality proves little unless segments are retransmitted (fast and on timeouts),
    // dropped and lost, flows fail, and several connections run one after another.
    let stored = std::fs::read_to_string(tcp_data_file()).expect("the TCP regression file");
    let (mut rtx, mut rto, mut fast, mut drops, mut losses, mut failed, mut traced) = (0u64, 0, 0, 0, 0, 0, 0);
    for line in stored.lines() {
        let v: Value = serde_json::from_str(line).expect("JSON lines");
        let r = &v["report"];
        for f in r["flows"].as_array().expect("flows") {
            rtx += f["retransmitted_segments"].as_u64().expect("u64");
            rto += f["rto_expiries"].as_u64().expect("u64");
            fast += f["fast_retransmits"].as_u64().expect("u64");
            failed += f["failed_exchanges"].as_u64().expect("u64");
        }
        for d in ["uplink", "downlink"] {
            drops += r["links"][d]["buffer_drop_packets"].as_u64().expect("u64");
            losses += r["links"][d]["error_loss_packets"].as_u64().expect("u64");
        }
        traced += v["trace_records"].as_u64().expect("u64");
    }
    eprintln!("{rtx} {rto} {fast} {drops} {losses} {failed} {traced}");
    assert!(
        rtx > 200 && rto > 20 && fast > 20 && drops > 50 && losses > 100 && failed > 0 && traced > 10_000,
        "{rtx} {rto} {fast} {drops} {losses} {failed} {traced}"
    );
}
