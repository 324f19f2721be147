//! The cost of the `full` endpoint model (real sans-IO endpoints, encoded datagrams) against
//! the `compact` one on the reference scenario (400 continuous `default:preset=helsinki2018`
//! clients, 1 410 000 B buffers, 50 exchanges), measured in the same process, interleaved
//! (a batch of compact runs, a batch of full runs, ...) so that load changes hit both alike.
//! Prints the median wall time per run of each model and the median of the per-round ratios,
//! by wall time and by CPU time of the process (user + system, from `/proc/self/stat`; less
//! sensitive to a shared machine's scheduling, 10 ms resolution, hence the batches).
//!
//! ```text
//! cargo run --release -p coapcc-sim --example full_vs_compact [-- ROUNDS [BATCH]]
//! ```
//!
//! With `--full-only N` (`--compact-only N`) it runs only the full (compact) model N times,
//! for a profiler or an instruction count (`valgrind --tool=cachegrind`).

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

/// CPU time of this process so far, seconds (user + system; Linux clock ticks of 10 ms).
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) + tick(12)) / 100.0
}

/// `batch` runs of `cfg`: wall and CPU milliseconds per run, the last report.
fn timed(cfg: &SimConfig, batch: usize) -> (f64, f64, SimReport) {
    let (t, c) = (Instant::now(), cpu_s());
    let mut last = None;
    for _ in 0..batch {
        last = Some(simulate(cfg).expect("valid scenario"));
    }
    let n = batch as f64;
    (t.elapsed().as_secs_f64() * 1e3 / n, (cpu_s() - c) * 1e3 / n, last.expect("batch > 0"))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let full = reference(EndpointModel::Full);
    let only = match args.first().map(String::as_str) {
        Some("--full-only") => Some(EndpointModel::Full),
        Some("--compact-only") => Some(EndpointModel::Compact),
        _ => None,
    };
    if let Some(model) = only {
        let cfg = reference(model);
        let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(20);
        for _ in 0..n {
            std::hint::black_box(simulate(&cfg).expect("valid scenario"));
        }
        return;
    }
    let rounds: usize = args.first().and_then(|s| s.parse().ok()).unwrap_or(15).max(1);
    let batch: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10).max(1);
    let compact = reference(EndpointModel::Compact);
    let (_, _, rc) = timed(&compact, 1); // warm-up
    let (_, _, rf) = timed(&full, 1);
    let same = rc.outcome_json() == rf.outcome_json();
    let (mut c, mut f, mut ratio, mut cpu_ratio) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (a, ac, _) = timed(&compact, batch);
        let (b, bc, _) = timed(&full, batch);
        c.push(a);
        f.push(b);
        ratio.push(b / a);
        if ac > 0.0 {
            cpu_ratio.push(bc / ac);
        }
    }
    println!("reference scenario, {rounds} interleaved rounds of {batch} runs per model (medians)");
    println!("compact   {:>8.2} ms per run (wall)", median(&mut c));
    println!("full      {:>8.2} ms per run (wall)", median(&mut f));
    println!("full/compact {:>5.2}x by wall time (median of per-round ratios)", median(&mut ratio));
    if !cpu_ratio.is_empty() {
        println!("full/compact {:>5.2}x by CPU time (median of per-round ratios)", median(&mut cpu_ratio));
    }
    println!("results identical: {same}");
}
