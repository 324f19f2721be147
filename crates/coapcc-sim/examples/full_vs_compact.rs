//! The cost of the `full` endpoint model (real sans-IO endpoints, encoded datagrams) against
//! the `compact` one on the reference scenario (400 continuous `default:preset=helsinki2018`
//! clients, 1 410 000 B buffers, 50 exchanges), measured in the same process, interleaved
//! (compact, full, compact, ...) so that load changes hit both alike; medians.
//!
//! ```text
//! cargo run --release -p coapcc-sim --example full_vs_compact [-- ROUNDS]
//! ```
//!
//! With `--full-only N` it runs only the full model N times (for a profiler).

use std::time::Instant;

use coapcc_sim::{simulate, EndpointModel, GroupConfig, SimConfig, SimReport};

fn reference(model: EndpointModel) -> SimConfig {
    let mut c = SimConfig {
        seed: 1,
        groups: vec![GroupConfig { cc: "default:preset=helsinki2018".into(), clients: 400 }],
        ..SimConfig::default()
    };
    c.workload.exchanges = 50;
    c.link.set_buffer_bytes(1_410_000);
    c.endpoint.model = model;
    c
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    (v[(n - 1) / 2] + v[n / 2]) / 2.0
}

fn timed(cfg: &SimConfig) -> (f64, SimReport) {
    let t = Instant::now();
    let r = simulate(cfg).expect("valid scenario");
    (t.elapsed().as_secs_f64() * 1e3, r)
}

/// The report without what may differ between the models' runs (wall time, configuration).
fn results(r: &SimReport) -> String {
    let mut v = serde_json::to_value(r).expect("serialises");
    let o = v.as_object_mut().expect("object");
    o.remove("wall_s");
    o.remove("config");
    v.to_string()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let full = reference(EndpointModel::Full);
    if args.first().map(String::as_str) == Some("--full-only") {
        let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(20);
        for _ in 0..n {
            std::hint::black_box(simulate(&full).expect("valid scenario"));
        }
        return;
    }
    let rounds: usize = args.first().and_then(|s| s.parse().ok()).unwrap_or(15);
    let compact = reference(EndpointModel::Compact);
    let (_, rc) = timed(&compact); // warm-up
    let (_, rf) = timed(&full);
    let same = results(&rc) == results(&rf);
    let (mut c, mut f, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (a, _) = timed(&compact);
        let (b, _) = timed(&full);
        c.push(a);
        f.push(b);
        ratio.push(b / a);
    }
    println!("reference scenario, {rounds} interleaved rounds (medians)");
    println!("compact   {:>8.2} ms", median(&mut c));
    println!("full      {:>8.2} ms", median(&mut f));
    println!("full/compact {:>5.2}x (median of per-round ratios); results identical: {same}", median(&mut ratio));
}
