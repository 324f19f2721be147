//! The mesh regression set: results must not change when the mesh code is restructured
//! (its CoAP reliability moving onto the protocol layer, the radio medium becoming a
//! component shared with the general simulator).
//!
//! `tests/data/mesh_regression.jsonl` holds one JSON object per case: its name, the report of
//! `coapcc mesh` ([`MeshReport`], with `wall_s` zeroed), an FNV-1a digest of the per-unit
//! trace and, for some cases, of the MAC event log. The test recomputes every case and asserts byte
//! equality, naming the case on a mismatch. The matrix: algorithms {Contiki's default CoAP,
//! CoCoA, CoCoA+, FASOR with copy identification, IDC-CoAP} × traffic {periodic monitoring,
//! global events} × seeds {1, 2} × {no duty cycling (`ancillotti-cooja`, Contiki CSMA),
//! ContikiMAC-like duty cycling (`makarem2021`)} on a 3 x 3 grid, plus variants: the standard's
//! CSMA/CA (`ieee802154`) on a 4 x 4 grid, Block1 units, whole messages, a ring with capture
//! off and no duplicate detection, a forwarding and server delay, and a chain with MAC logs;
//! the study firmware's CoAP-CC and CoCoA+ on a 4 x 4 grid, nullrdc with link-layer ACKs, and
//! a smooth MRM curve with ETX routes.
//!
//! Regenerate only after an intended change of results (and say why in the commit):
//!
//! ```text
//! COAPCC_REGEN=1 cargo test -p coapcc-sim --test mesh_regression
//! ```

use std::fmt::Write as _;
use std::path::PathBuf;

use coapcc_mesh::MacRecord;
use coapcc_sim::mesh_command::{simulate, MeshReport, MeshRun, ANCILLOTTI_COAP_CC, ANCILLOTTI_COCOA_PLUS};
use coapcc_sim::trace::{ExchangeTrace, TraceSink, UnitTrace};
use serde_json::{json, Value};

fn data_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/mesh_regression.jsonl")
}

fn base(preset: &str, topology: &str, cc: &str, traffic: &str, seed: u64) -> MeshRun {
    MeshRun {
        topology: topology.into(),
        cc: cc.into(),
        traffic: traffic.into(),
        duration_s: 300.0,
        seed,
        ..MeshRun::preset(preset).expect("a known preset")
    }
}

/// Every case, in a fixed order: (name, configuration, record the MAC log).
fn cases() -> Vec<(String, MeshRun, bool)> {
    let mut out = Vec::new();
    let algs =
        ["default:preset=ancillotti-cooja", "cocoa", "cocoa-plus:preset=ancillotti-cooja", "fasor-token", "idc-coap"];
    for preset in ["ancillotti-cooja", "makarem2021"] {
        for cc in algs {
            for traffic in ["periodic:2", "events:30,192"] {
                for seed in [1, 2] {
                    let name = format!("{preset}/grid:3/{cc}/{traffic}/seed={seed}");
                    out.push((name, base(preset, "grid:3", cc, traffic, seed), false));
                }
            }
        }
    }
    for cc in ["default", "cocoa-plus"] {
        for seed in [1, 2] {
            let name = format!("ieee802154/grid:4/{cc}/periodic:3/seed={seed}");
            out.push((name, base("ieee802154", "grid:4", cc, "periodic:3", seed), false));
        }
    }
    let mut c = base("ancillotti-cooja", "grid:3", "cocoa-plus", "periodic:2", 3);
    c.set("app.unit_mode", "block1").unwrap();
    out.push(("variant/block1".into(), c, false));
    let mut c = base("ancillotti-cooja", "grid:3", "cocoa", "events:20,64", 3);
    c.set("app.unit_mode", "message").unwrap();
    c.message_bytes = 64;
    c.app.background_bytes = 64;
    out.push(("variant/whole-messages".into(), c, false));
    let mut c = base("ieee802154", "ring:8", "fasor", "periodic:4", 4);
    c.radio.capture_db = None;
    c.mac.duplicate_detection = false;
    c.mac.queue_packets = 4;
    out.push(("variant/ring-no-capture-no-dedup".into(), c, false));
    let mut c = base("ancillotti-cooja", "grid:3", "default", "periodic:2", 5);
    c.routing.forward_delay_us = 1500;
    c.app.server_delay_us = 20_000;
    out.push(("variant/forward-and-server-delay".into(), c, false));
    // The study's firmware (the preset's algorithms) and the Contiki stack's options.
    for (name, cc) in [("coap-cc", ANCILLOTTI_COAP_CC), ("cocoa-plus", ANCILLOTTI_COCOA_PLUS)] {
        let c = base("ancillotti-cooja", "grid:4", cc, "periodic:2.5", 8);
        out.push((format!("firmware/{name}/grid:4"), c, false));
    }
    let mut c = base("ancillotti-cooja", "grid:3", ANCILLOTTI_COCOA_PLUS, "periodic:2", 9);
    c.mac.nullrdc.autoack = true;
    out.push(("variant/nullrdc-autoack".into(), c, false));
    let mut c = base("ancillotti-cooja", "grid:3", ANCILLOTTI_COAP_CC, "periodic:2", 10);
    c.radio.mrm = Some(coapcc_mesh::mrm::MrmConfig::smooth(14.142, 1.0));
    c.routing.objective = coapcc_mesh::config::Objective::Etx;
    out.push(("variant/mrm-smooth-etx".into(), c, false));
    let mut c = base("makarem2021", "chain:4", "cocoa", "periodic:1", 6);
    c.duration_s = 120.0;
    out.push(("maclog/makarem2021/chain:4".into(), c, true));
    let mut c = base("ancillotti-cooja", "grid:3", "default", "events:20,192", 7);
    c.duration_s = 120.0;
    out.push(("maclog/ancillotti-cooja/grid:3".into(), c, true));
    out
}

fn fnv1a(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The trace as the command writes it (one JSON line per unit) and the MAC log.
#[derive(Default)]
struct Sink {
    units: Vec<u8>,
    mac: Option<Vec<MacRecord>>,
}

impl TraceSink for Sink {
    fn exchange(&mut self, _rec: &ExchangeTrace<'_>) {}
    fn unit(&mut self, rec: &UnitTrace) {
        rec.write_line(&mut self.units).unwrap();
    }
    fn wants_mac(&self) -> bool {
        self.mac.is_some()
    }
    fn mac(&mut self, rec: &MacRecord) {
        self.mac.as_mut().unwrap().push(*rec);
    }
}

fn record(name: &str, cfg: &MeshRun, mac_log: bool) -> Value {
    let mut sink = Sink { units: Vec::new(), mac: mac_log.then(Vec::new) };
    let mut report: MeshReport = simulate(cfg, Some(&mut sink)).unwrap_or_else(|e| panic!("{name}: {e}"));
    report.wall_s = 0.0;
    let trace = &sink.units;
    let mut v = json!({
        "name": name,
        "report": serde_json::to_value(&report).unwrap(),
        "trace_lines": trace.iter().filter(|&&b| b == b'\n').count(),
        "trace_fnv1a": fnv1a(trace),
    });
    if let Some(log) = &sink.mac {
        let mut text = String::new();
        for r in log {
            writeln!(text, "{r:?}").unwrap();
        }
        v["mac_log_records"] = json!(log.len());
        v["mac_log_fnv1a"] = json!(fnv1a(text.as_bytes()));
    }
    v
}

#[test]
fn mesh_results_are_unchanged() {
    let cases = cases();
    let lines: Vec<String> =
        cases.iter().map(|(name, cfg, log)| serde_json::to_string(&record(name, cfg, *log)).unwrap()).collect();
    if std::env::var_os("COAPCC_REGEN").is_some() {
        let mut text = lines.join("\n");
        text.push('\n');
        std::fs::create_dir_all(data_file().parent().unwrap()).unwrap();
        std::fs::write(data_file(), text).unwrap();
        return;
    }
    let stored =
        std::fs::read_to_string(data_file()).expect("tests/data/mesh_regression.jsonl (COAPCC_REGEN=1 writes it)");
    let stored: Vec<&str> = stored.lines().collect();
    assert_eq!(stored.len(), lines.len(), "the number of cases changed");
    let mut bad = Vec::new();
    for ((name, _, _), (got, want)) in cases.iter().zip(lines.iter().zip(&stored)) {
        if got != want {
            bad.push(name.clone());
        }
    }
    assert!(bad.is_empty(), "{} of {} mesh cases changed: {bad:?}", bad.len(), lines.len());
}
