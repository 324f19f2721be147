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
//! 2. a scaling curve over clients (100 ... 100 000, `--quick`: up to 4 000) for both buffers
//!    (28 200 B and 1 410 000 B), continuous `default:preset=helsinki2018`, 50 exchanges: each
//!    point in its own child process (`--point`), with ns/packet, events/s, packets/s, peak
//!    memory (VmHWM of that child) and the cost per packet relative to 400 clients;
//! 3. replications run in parallel on all cores, checked identical to serial runs;
//! 4. open algorithms: the reference scenario with the registry algorithm behind `dyn`
//!    (a `ControllerFactory` that does not announce itself as the registry), checked
//!    identical, and its cost per event against the static path.
//!
//! With `--baseline BIN` (a `coapcc-sim-bench` built from an earlier commit), the reference
//! scenario is also timed with that binary, interleaved with this one, in child processes whose
//! start-up (an empty child, timed the same way) is subtracted, and the ratio printed:
//!
//! ```text
//! cargo run --release -p coapcc-sim --bin coapcc-sim-bench -- --baseline /tmp/coapcc-sim-bench-main
//! ```
//!
//! Child modes (what the parent runs; every build since the reference had `--child`):
//! `--child N EXCHANGES BUFFER` runs one scenario and prints its VmHWM (kB; `N = 0`: nothing);
//! `--point N EXCHANGES BUFFER RUNS` runs it `RUNS` times and prints the median wall time (s),
//! packets, events, simulated time (s), finished flows, truncated (0/1) and VmHWM (kB).

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

/// Wall time, seconds, of one child process of `bin` that runs the reference scenario once
/// (`--child 400 50 1410000`; every build of this benchmark has that mode), or nothing
/// (`--child 0 0 0`: the process alone, to subtract).
fn child_wall(bin: &str, run: bool) -> Option<f64> {
    let args = if run { ["--child", "400", "50", "1410000"] } else { ["--child", "0", "0", "0"] };
    let t = Instant::now();
    let out = Command::new(bin).args(args).output().ok()?;
    out.status.success().then(|| t.elapsed().as_secs_f64())
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

/// One point of the scaling curve, measured in a child process (so its peak memory is that
/// run's alone).
struct Point {
    wall_s: f64,
    packets: u64,
    events: u64,
    sim_s: f64,
    finished: u32,
    truncated: bool,
    hwm_kb: u64,
}

fn child_point(clients: u32, exchanges: u32, buffer: u64, reps: usize) -> Option<Point> {
    let exe = std::env::current_exe().ok()?;
    let out = Command::new(exe)
        .args(["--point", &clients.to_string(), &exchanges.to_string(), &buffer.to_string(), &reps.to_string()])
        .output()
        .ok()?;
    let s = String::from_utf8(out.stdout).ok()?;
    let v: Vec<&str> = s.split_whitespace().collect();
    Some(Point {
        wall_s: v.first()?.parse().ok()?,
        packets: v.get(1)?.parse().ok()?,
        events: v.get(2)?.parse().ok()?,
        sim_s: v.get(3)?.parse().ok()?,
        finished: v.get(4)?.parse().ok()?,
        truncated: *v.get(5)? == "1",
        hwm_kb: v.get(6)?.parse().ok()?,
    })
}

/// What `--help` prints.
const USAGE: &str = "coapcc-sim-bench: speed, memory and scaling of the simulator (build with --release)

usage: coapcc-sim-bench [--quick] [--baseline BIN]
       coapcc-sim-bench --point N EXCHANGES BUFFER RUNS
       coapcc-sim-bench --child N EXCHANGES BUFFER

  (no option)      the reference run, the scaling curve (100 ... 100 000 clients, buffers
                   28 200 B and 1 410 000 B), parallel replications and open algorithms
  --quick          fewer repetitions, the curve up to 4 000 clients
  --baseline BIN   also time the reference run with BIN (an earlier coapcc-sim-bench),
                   interleaved with this build in child processes, and print the ratio
  --point ...      one curve point: prints the median wall time (s), packets, events,
                   simulated time (s), finished flows, truncated (0/1) and VmHWM (kB)
  --child ...      one run (N = 0: none); prints VmHWM (kB); with COAPCC_BENCH_STATUS set,
                   also the process's memory status and resident memory per mapping on stderr
  -h, --help       this text";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let known = ["--quick", "--baseline", "--point", "--child"];
    if args.iter().skip(1).any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return;
    }
    let mode = args.get(1).map(String::as_str);
    if !matches!(mode, Some("--point" | "--child")) {
        // Flags only (and --baseline's value): anything else is a mistake, not a full run.
        let mut i = 1;
        while let Some(a) = args.get(i) {
            if !known.contains(&a.as_str()) {
                eprintln!("coapcc-sim-bench: unknown argument {a:?}\n\n{USAGE}");
                std::process::exit(2);
            }
            i += if a == "--baseline" { 2 } else { 1 };
        }
        if let Some(i) = args.iter().position(|a| a == "--baseline") {
            if args.get(i + 1).is_none() {
                eprintln!("coapcc-sim-bench: --baseline needs a binary\n\n{USAGE}");
                std::process::exit(2);
            }
        }
    }
    if args.get(1).map(String::as_str) == Some("--point") {
        let n = |i: usize| args.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
        let cfg = scenario(n(2) as u32, n(3) as u32, n(4), 1);
        let (wall, r) = time_runs(&cfg, n(5).max(1) as usize);
        let finished: u32 = r.groups.iter().map(|g| g.finished_flows).sum();
        println!(
            "{} {} {} {} {} {} {}",
            wall,
            packets(&r),
            r.events,
            r.sim_time_s,
            finished,
            u8::from(r.truncated),
            vm_hwm_kb()
        );
        return;
    }
    if args.get(1).map(String::as_str) == Some("--child") {
        let n = |i: usize| args.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
        if n(2) > 0 {
            let r = simulate(&scenario(n(2) as u32, n(3) as u32, n(4), 1)).expect("valid scenario");
            std::hint::black_box(&r);
        }
        if std::env::var_os("COAPCC_BENCH_STATUS").is_some() {
            let st = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
            eprintln!(
                "{}",
                st.lines().filter(|l| l.starts_with("Vm") || l.starts_with("Rss")).collect::<Vec<_>>().join("\n")
            );
            // Resident memory per mapping.
            let maps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
            let mut name = "";
            for l in maps.lines() {
                if let Some(v) = l.strip_prefix("Rss:") {
                    eprintln!("{:>8}  {name}", v.trim());
                } else if l.split_whitespace().next().is_some_and(|w| w.contains('-') && !w.ends_with(':')) {
                    name = l;
                }
            }
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
    let same = fr.outcome_json() == r.outcome_json();
    println!(
        "full endpoints     {:>10.2} ms  ({:.1}x compact, median of {full_reps}; {:.2} M packets/s; results identical to compact: {same})",
        full_wall * 1e3,
        full_wall / wall,
        packets(&fr) as f64 / full_wall / 1e6
    );
    if let Some(bin) = &baseline {
        // Interleaved child processes (baseline, this build, each with and without the run):
        // load changes hit both alike, and the medians of the empty processes are subtracted
        // so the ratio is that of the simulations, not of process start-up.
        let me = std::env::current_exe().expect("own path").to_string_lossy().into_owned();
        let rounds = if quick { 11 } else { 41 };
        let (mut old, mut new, mut old0, mut new0) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            if let (Some(o), Some(n), Some(o0), Some(n0)) =
                (child_wall(bin, true), child_wall(&me, true), child_wall(bin, false), child_wall(&me, false))
            {
                old.push(o * 1e3);
                new.push(n * 1e3);
                old0.push(o0 * 1e3);
                new0.push(n0 * 1e3);
            }
        }
        if old.is_empty() {
            println!("baseline           {bin} did not run");
        } else {
            let k = old.len();
            let (o, n, o0, n0) = (median(&mut old), median(&mut new), median(&mut old0), median(&mut new0));
            println!(
                "baseline           {:>10.2} ms  the reference run in a child process of {bin}, process start-up ({o0:.2} ms) subtracted",
                o - o0
            );
            println!(
                "this build         {:>10.2} ms  the same ({n0:.2} ms subtracted); ratio {:.3} (medians of {k} interleaved rounds)",
                n - n0,
                (n - n0) / (o - o0)
            );
        }
    }
    let base = child_hwm(0, 0, 0);
    let hwm = child_hwm(400, 50, 1_410_000);
    match (hwm, base) {
        (Some(h), Some(b)) => println!(
            "peak memory (VmHWM){:>9.2} MB  of a child process that runs only the reference run (under 4 MB: {}); the run's own share over the empty process ({:.2} MB): {:.2} MB",
            h as f64 / 1024.0,
            h < 4 * 1024,
            b as f64 / 1024.0,
            h.saturating_sub(b) as f64 / 1024.0
        ),
        _ => println!("peak memory        unavailable"),
    }

    // 2. Scaling curve: each point in its own child process.
    let curve: &[u32] =
        if quick { &[100, 400, 1_000, 4_000] } else { &[100, 400, 1_000, 4_000, 10_000, 40_000, 100_000] };
    for buffer in [28_200u64, 1_410_000] {
        println!();
        println!(
            "== scaling: continuous default:preset=helsinki2018, 50 exchanges, buffer {buffer} B (one child process per point; median wall of its runs)"
        );
        println!(
            "{:>8} {:>5} {:>10} {:>11} {:>11} {:>10} {:>10} {:>10} {:>9} {:>9}",
            "clients", "runs", "wall ms", "packets", "ns/packet", "M ev/s", "M pkt/s", "sim s", "finished", "VmHWM MB"
        );
        let mut at400 = None;
        for &clients in curve {
            let work = clients as u64 * 50;
            let reps = if work >= 500_000 {
                1
            } else if work >= 50_000 {
                3
            } else if quick {
                5
            } else {
                11
            };
            let Some(p) = child_point(clients, 50, buffer, reps) else {
                println!("{clients:>8} point failed");
                continue;
            };
            let ns = p.wall_s * 1e9 / p.packets as f64;
            if clients == 400 {
                at400 = Some(ns);
            }
            println!(
                "{:>8} {:>5} {:>10.1} {:>11} {:>11.1} {:>10.2} {:>10.2} {:>10.0} {:>9} {:>9.1}{}",
                clients,
                reps,
                p.wall_s * 1e3,
                p.packets,
                ns,
                p.events as f64 / p.wall_s / 1e6,
                p.packets as f64 / p.wall_s / 1e6,
                p.sim_s,
                format!("{}/{clients}{}", p.finished, if p.truncated { "!" } else { "" }),
                p.hwm_kb as f64 / 1024.0,
                at400.map_or(String::new(), |a| format!("  ({:.2}x the 400-client cost)", ns / a))
            );
        }
    }

    // 3. Parallel replications.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let n_rep = if quick { 4 } else { 2 * threads.max(2) * 2 };
    println!();
    println!("== {n_rep} replications of the reference scenario (seeds 1..={n_rep}), serial vs {threads} threads");
    let t = Instant::now();
    let serial: Vec<String> =
        (1..=n_rep as u64).map(|s| simulate(&reference(s)).unwrap().results_json().to_string()).collect();
    let t_serial = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut parallel: Vec<(u64, String)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                scope.spawn(move || {
                    (1..=n_rep as u64)
                        .filter(|s| (*s as usize - 1) % threads == k)
                        .map(|s| (s, simulate(&reference(s)).unwrap().results_json().to_string()))
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
        let mut v = r.outcome_json();
        let o = v.as_object_mut().expect("object");
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
