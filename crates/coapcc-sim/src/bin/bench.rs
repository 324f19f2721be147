//! `coapcc-sim-bench`: speed, memory and scaling of the simulator (build with `--release`).
//!
//! ```text
//! cargo run --release -p coapcc-sim --bin coapcc-sim-bench [-- --quick]
//! ```
//!
//! Prints, as medians of several runs:
//! 1. the reference scenario (400 continuous `default:preset=helsinki2018` clients, 1 410 000 B
//!    buffers, 50 exchanges): wall time of `simulate()`, speed-up over simulated time,
//!    simulated packets/s and events/s, the same with the real endpoints (`endpoint.model =
//!    full`, checked identical), and peak memory (VmHWM of a child process that runs only the
//!    compact scenario);
//! 2. a scaling curve over clients × exchanges (cost per packet should stay flat);
//! 3. replications run in parallel on all cores, checked identical to serial runs;
//! 4. open algorithms: the reference scenario with the registry algorithm behind `dyn`
//!    (a `ControllerFactory` that does not announce itself as the registry), checked
//!    identical, and its cost per event against the static path.
//!
//! With `--baseline BIN` (a `coapcc-sim-bench` built from an earlier commit), the reference
//! scenario is also timed with that binary, interleaved with this one, and the ratio printed:
//!
//! ```text
//! cargo run --release -p coapcc-sim --bin coapcc-sim-bench -- --baseline /tmp/coapcc-sim-bench-main
//! ```

use std::process::Command;
use std::time::Instant;

use std::sync::Arc;

use coapcc_sim::{
    simulate, simulate_custom, ControllerFactory, CustomAlgorithms, EndpointModel, GroupConfig, SimConfig, SimReport,
};

/// The registry algorithm behind `dyn` (one dynamic call per event).
struct Opaque(coapcc_cc::AlgorithmConfig);

impl ControllerFactory for Opaque {
    fn build(&self) -> Box<dyn coapcc_cc::CongestionControl + Send> {
        Box::new(self.0.build())
    }
    fn describe(&self) -> String {
        format!("opaque {}", self.0)
    }
}

/// The reference wall time (ms) printed by another `coapcc-sim-bench` run with `--quick`.
fn baseline_ms(bin: &str) -> Option<f64> {
    let out = Command::new(bin).arg("--quick").output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let line = text.lines().find(|l| l.starts_with("wall time"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

fn scenario(clients: u32, exchanges: u32, buffer: u64, seed: u64) -> SimConfig {
    let mut c = SimConfig {
        seed,
        groups: vec![GroupConfig { cc: "default:preset=helsinki2018".into(), clients }],
        ..SimConfig::default()
    };
    c.workload.exchanges = exchanges;
    c.link.set_buffer_bytes(buffer);
    c
}

fn reference(seed: u64) -> SimConfig {
    scenario(400, 50, 1_410_000, seed)
}

fn packets(r: &SimReport) -> u64 {
    r.links.uplink.offered_packets + r.links.downlink.offered_packets
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    (v[(n - 1) / 2] + v[n / 2]) / 2.0
}

/// Peak resident memory of this process, kB.
fn vm_hwm_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Wall seconds (median of `reps`), the last report.
fn time_runs(cfg: &SimConfig, reps: usize) -> (f64, SimReport) {
    let mut walls = Vec::with_capacity(reps);
    let mut last = None;
    for _ in 0..reps {
        let t = Instant::now();
        let r = simulate(cfg).expect("valid scenario");
        walls.push(t.elapsed().as_secs_f64());
        last = Some(r);
    }
    (median(&mut walls), last.expect("reps > 0"))
}

/// Run one scenario in a child process; its peak memory in kB.
fn child_hwm(clients: u32, exchanges: u32, buffer: u64) -> Option<u64> {
    let exe = std::env::current_exe().ok()?;
    let out = Command::new(exe)
        .args(["--child", &clients.to_string(), &exchanges.to_string(), &buffer.to_string()])
        .output()
        .ok()?;
    String::from_utf8(out.stdout).ok()?.trim().parse().ok()
}

fn without_wall(r: &SimReport) -> String {
    let mut v = serde_json::to_value(r).expect("serialises");
    v.as_object_mut().expect("object").remove("wall_s");
    v.to_string()
}

fn without_wall_and_config(r: &SimReport) -> String {
    let mut v = serde_json::to_value(r).expect("serialises");
    let o = v.as_object_mut().expect("object");
    o.remove("wall_s");
    o.remove("config");
    v.to_string()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child") {
        let n = |i: usize| args.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
        if n(2) > 0 {
            let r = simulate(&scenario(n(2) as u32, n(3) as u32, n(4), 1)).expect("valid scenario");
            std::hint::black_box(&r);
        }
        println!("{}", vm_hwm_kb());
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let baseline = args.iter().position(|a| a == "--baseline").and_then(|i| args.get(i + 1)).cloned();
    if cfg!(debug_assertions) {
        println!("warning: debug build; run with --release for meaningful figures");
    }

    // 1. Reference scenario.
    let reps = if quick { 5 } else { 21 };
    let cfg = reference(1);
    simulate(&cfg).expect("warm-up");
    let (wall, r) = time_runs(&cfg, reps);
    let pk = packets(&r);
    println!(
        "== reference: 400 clients, default:preset=helsinki2018, buffer 1410000 B, 50 exchanges (median of {reps})"
    );
    println!("wall time          {:>10.2} ms", wall * 1e3);
    println!("simulated time     {:>10.1} s  (speed-up {:.0}x)", r.sim_time_s, r.sim_time_s / wall);
    println!("packets            {:>10}    ({:.2} M packets/s)", pk, pk as f64 / wall / 1e6);
    println!("events             {:>10}    ({:.2} M events/s)", r.events, r.events as f64 / wall / 1e6);
    // The same scenario with the real endpoints (`endpoint.model = full`).
    let mut full_cfg = cfg.clone();
    full_cfg.endpoint.model = EndpointModel::Full;
    simulate(&full_cfg).expect("warm-up");
    let full_reps = if quick { 3 } else { 7 };
    let (full_wall, fr) = time_runs(&full_cfg, full_reps);
    let same = without_wall_and_config(&fr) == without_wall_and_config(&r);
    println!(
        "full endpoints     {:>10.2} ms  ({:.1}x compact, median of {full_reps}; {:.2} M packets/s; results identical to compact: {same})",
        full_wall * 1e3,
        full_wall / wall,
        packets(&fr) as f64 / full_wall / 1e6
    );
    if let Some(bin) = &baseline {
        // Interleave: baseline (its own median of 5), this build (median of 5), three rounds.
        let (mut old, mut new) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            if let Some(ms) = baseline_ms(bin) {
                old.push(ms);
            }
            new.push(time_runs(&cfg, 5).0 * 1e3);
        }
        if old.is_empty() {
            println!("baseline           {bin} did not run");
        } else {
            let (o, n) = (median(&mut old), median(&mut new));
            println!("baseline           {o:>10.2} ms  ({bin}; this build {n:.2} ms, ratio {:.3}; medians of 3 interleaved rounds)", n / o);
        }
    }
    let base = child_hwm(0, 0, 0);
    let hwm = child_hwm(400, 50, 1_410_000);
    match (hwm, base) {
        (Some(h), Some(b)) => {
            println!("peak memory (VmHWM){:>9.1} MB  (process baseline {:.1} MB)", h as f64 / 1024.0, b as f64 / 1024.0)
        }
        _ => println!("peak memory        unavailable"),
    }

    // 2. Scaling curve.
    println!();
    println!("== scaling (default:preset=helsinki2018, buffer 28200 B; median of runs)");
    println!(
        "{:>8} {:>9} {:>10} {:>12} {:>11} {:>10} {:>9} {:>10}",
        "clients", "exchanges", "wall ms", "packets", "ns/packet", "sim s", "finished", "VmHWM MB"
    );
    let mut grid: Vec<(u32, u32)> =
        vec![(10, 50), (100, 50), (400, 50), (1000, 50), (3000, 50), (10_000, 50), (400, 10), (400, 200)];
    if quick {
        grid.retain(|&(c, e)| c <= 1000 && e <= 50);
    }
    for (clients, exchanges) in grid {
        let work = clients as u64 * exchanges as u64;
        let reps = if work >= 200_000 {
            3
        } else if work >= 20_000 {
            7
        } else {
            15
        };
        let cfg = scenario(clients, exchanges, 28_200, 1);
        let (wall, r) = time_runs(&cfg, reps);
        let finished: u32 = r.groups.iter().map(|g| g.finished_flows).sum();
        let hwm = child_hwm(clients, exchanges, 28_200).map_or(f64::NAN, |h| h as f64 / 1024.0);
        println!(
            "{:>8} {:>9} {:>10.2} {:>12} {:>11.1} {:>10.0} {:>9} {:>10.1}",
            clients,
            exchanges,
            wall * 1e3,
            packets(&r),
            wall * 1e9 / packets(&r) as f64,
            r.sim_time_s,
            format!("{finished}/{clients}{}", if r.truncated { "!" } else { "" }),
            hwm
        );
    }

    // 3. Parallel replications.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let n_rep = if quick { 4 } else { 2 * threads.max(2) * 2 };
    println!();
    println!("== {n_rep} replications of the reference scenario (seeds 1..={n_rep}), serial vs {threads} threads");
    let t = Instant::now();
    let serial: Vec<String> = (1..=n_rep as u64).map(|s| without_wall(&simulate(&reference(s)).unwrap())).collect();
    let t_serial = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut parallel: Vec<(u64, String)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                scope.spawn(move || {
                    (1..=n_rep as u64)
                        .filter(|s| (*s as usize - 1) % threads == k)
                        .map(|s| (s, without_wall(&simulate(&reference(s)).unwrap())))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("worker")).collect()
    });
    let t_parallel = t.elapsed().as_secs_f64();
    parallel.sort_by_key(|p| p.0);
    let identical = parallel.iter().map(|p| &p.1).eq(serial.iter());
    println!(
        "serial {:.1} ms, parallel {:.1} ms (speed-up {:.2}x on {threads} threads); results identical: {identical}",
        t_serial * 1e3,
        t_parallel * 1e3,
        t_serial / t_parallel
    );
    if !identical {
        std::process::exit(1);
    }

    // 4. Open algorithms.
    println!();
    println!("== open algorithms: the reference scenario with the registry algorithm behind dyn");
    let mut custom = CustomAlgorithms::new();
    let alg = coapcc_cc::AlgorithmConfig::parse("default:preset=helsinki2018").expect("registry");
    custom.add("opaque", Arc::new(Opaque(alg))).expect("a plain name");
    let mut dyn_cfg = reference(1);
    dyn_cfg.groups[0].cc = "opaque".into();
    let dyn_reps = if quick { 5 } else { 21 };
    let mut walls = Vec::new();
    let mut last = None;
    for _ in 0..dyn_reps {
        let t = Instant::now();
        last = Some(simulate_custom(&dyn_cfg, &custom, None).expect("valid scenario"));
        walls.push(t.elapsed().as_secs_f64());
    }
    let dyn_wall = median(&mut walls);
    let dr = last.expect("reps > 0");
    let (static_wall, sr) = time_runs(&reference(1), dyn_reps);
    let strip = |r: &SimReport| {
        let mut v = serde_json::to_value(r).expect("serialises");
        let o = v.as_object_mut().expect("object");
        o.remove("wall_s");
        o.remove("config");
        for g in o["groups"].as_array_mut().expect("groups") {
            g.as_object_mut().expect("group").remove("cc");
        }
        v
    };
    let same = strip(&dr) == strip(&sr);
    println!("static (registry)  {:>10.2} ms  {:.1} ns/event", static_wall * 1e3, static_wall * 1e9 / sr.events as f64);
    println!(
        "dyn (factory)      {:>10.2} ms  {:.1} ns/event  ({:.2}x; results identical: {same})",
        dyn_wall * 1e3,
        dyn_wall * 1e9 / dr.events as f64,
        dyn_wall / static_wall
    );
    if !same {
        std::process::exit(1);
    }
}
