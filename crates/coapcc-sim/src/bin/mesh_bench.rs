//! `coapcc-mesh-bench`: speed of the mesh simulator (build with `--release`).
//!
//! ```text
//! cargo run --release -p coapcc-sim --bin coapcc-mesh-bench [-- --quick]
//! ```
//!
//! Prints medians of several runs of the reference scenario (a 3-hour 6x6 grid at 3 kbit/s,
//! the study's heaviest monitoring load, preset `ancillotti-cooja`), for both algorithms of the
//! study as its firmware ran them (`ANCILLOTTI_COAP_CC`, `ANCILLOTTI_COCOA_PLUS`), with the
//! speed-up over simulated time and events per second, plus the whole `ancillotti` monitoring
//! grid (4 grids x 6 loads x 2 algorithms) at one replication as a baseline for sweeps.
//!
//! With `--baseline BIN [--rounds N]` (a `coapcc-mesh-bench` built from an earlier commit, e.g.
//! the one before the study moved onto the general engine), it runs `BIN --quick` and its own
//! `--quick` alternately as child processes, N rounds (default 6), and prints for each
//! algorithm the median over the rounds of each build's CPU time on the reference scenario,
//! their ratio, and whether both builds counted the same events:
//!
//! ```text
//! cargo run --release -p coapcc-sim --bin coapcc-mesh-bench -- --baseline /tmp/coapcc-mesh-bench-7ad06fe
//! ```

use std::time::Instant;

use coapcc_sim::mesh_command::{simulate, MeshReport, MeshRun, ANCILLOTTI_COAP_CC, ANCILLOTTI_COCOA_PLUS};

fn scenario(topology: &str, cc: &str, load: f64, seed: u64) -> MeshRun {
    MeshRun {
        topology: topology.into(),
        cc: cc.into(),
        traffic: format!("periodic:{load}"),
        seed,
        ..MeshRun::preset("ancillotti-cooja").expect("a preset")
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    (v[(n - 1) / 2] + v[n / 2]) / 2.0
}

/// CPU time of this thread, seconds (from /proc; 0 where unavailable). On a shared machine
/// wall time includes waiting for a core, CPU time does not.
fn cpu_s() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse::<u64>().ok()))
        .map_or(0.0, |ns| ns as f64 / 1e9)
}

/// Median wall and CPU seconds of `reps` runs, and the last report.
fn time_runs(cfg: &MeshRun, reps: usize) -> (f64, f64, MeshReport) {
    let (mut walls, mut cpus) = (Vec::new(), Vec::new());
    let mut last = None;
    for _ in 0..reps {
        let (t, c) = (Instant::now(), cpu_s());
        let r = simulate(cfg, None).expect("valid scenario");
        walls.push(t.elapsed().as_secs_f64());
        cpus.push(cpu_s() - c);
        last = Some(r);
    }
    (median(&mut walls), median(&mut cpus), last.expect("reps > 0"))
}

/// Per algorithm of the reference scenario: (CPU seconds, events) from a `--quick` run's
/// output.
fn parse_quick(out: &str) -> Vec<(String, f64, u64)> {
    out.lines()
        .filter(|l| l.starts_with("grid:6 periodic:3"))
        .filter_map(|l| {
            let cc = l.split_whitespace().nth(4)?.trim_end_matches(':').to_string();
            let cpu = l.split("CPU ").nth(1)?.split_whitespace().next()?.parse().ok()?;
            let events = l.split(" events").next()?.rsplit(' ').next()?.parse().ok()?;
            Some((cc, cpu, events))
        })
        .collect()
}

/// One algorithm's figures over the rounds: (baseline, this build) each.
struct Row {
    cc: String,
    cpu: (Vec<f64>, Vec<f64>),
    events: (Vec<u64>, Vec<u64>),
}

/// `--baseline BIN`: both builds' `--quick` runs, alternately, as child processes.
fn compare(bin: &str, rounds: usize) {
    let me = std::env::current_exe().expect("the bench's own path");
    let run = |path: &std::path::Path| {
        let out = std::process::Command::new(path).arg("--quick").output();
        match out {
            Ok(o) if o.status.success() => parse_quick(&String::from_utf8_lossy(&o.stdout)),
            _ => Vec::new(),
        }
    };
    let mut rows: Vec<Row> = Vec::new();
    for round in 0..rounds {
        let (before, after) = (run(std::path::Path::new(bin)), run(&me));
        if before.is_empty() || after.is_empty() {
            println!(
                "round {round}: {} did not run (or printed no reference lines)",
                if before.is_empty() { bin } else { "this build" }
            );
            return;
        }
        for ((cc, cb, eb), (_, ca, ea)) in before.into_iter().zip(after) {
            match rows.iter_mut().find(|r| r.cc == cc) {
                Some(r) => {
                    r.cpu.0.push(cb);
                    r.cpu.1.push(ca);
                    r.events.0.push(eb);
                    r.events.1.push(ea);
                }
                None => rows.push(Row { cc, cpu: (vec![cb], vec![ca]), events: (vec![eb], vec![ea]) }),
            }
        }
    }
    println!("coapcc-mesh-bench --baseline {bin}: {rounds} alternating rounds of --quick (each a median of 3 runs)");
    for Row { cc, cpu: (mut b, mut a), events: (eb, ea) } in rows {
        let (mb, ma) = (median(&mut b), median(&mut a));
        println!(
            "{cc}: CPU s, median of rounds: baseline {mb:.3}, this build {ma:.3}, ratio {:.3}; events {}",
            ma / mb,
            if eb == ea { format!("equal ({})", ea[0]) } else { format!("DIFFER: {eb:?} vs {ea:?}") }
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(bin) = args.iter().position(|a| a == "--baseline").and_then(|i| args.get(i + 1)) {
        let rounds = args.iter().position(|a| a == "--rounds").and_then(|i| args.get(i + 1)?.parse().ok()).unwrap_or(6);
        compare(bin, rounds);
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let reps = if quick { 3 } else { 7 };
    println!("coapcc-mesh-bench: medians of {reps} runs (release build expected)");
    for cc in [ANCILLOTTI_COAP_CC, ANCILLOTTI_COCOA_PLUS] {
        let cfg = scenario("grid:6", cc, 3.0, 1);
        let (wall, cpu, r) = time_runs(&cfg, reps);
        println!(
            "grid:6 periodic:3 10800 s {cc}: wall {wall:.3} s, CPU {cpu:.3} s, speed-up {:.0}x (CPU), {} events \
             ({:.1} M events/CPU-s), {} data frames, PLR mean {:.4}",
            r.sim_time_s / cpu.max(1e-9),
            r.events,
            r.events as f64 / cpu.max(1e-9) / 1e6,
            r.mac.data_tx,
            r.plr_mean
        );
    }
    if quick {
        return;
    }
    let (t, c) = (Instant::now(), cpu_s());
    let mut runs = 0;
    println!("PLR mean (max) per grid and load, seed 1, default CoAP | CoCoA+:");
    for n in 3..=6 {
        for load in [0.5, 1.0, 1.5, 2.0, 2.5, 3.0] {
            let mut row = format!("  grid:{n} {load:.1} kbit/s:");
            for cc in [ANCILLOTTI_COAP_CC, ANCILLOTTI_COCOA_PLUS] {
                let r = simulate(&scenario(&format!("grid:{n}"), cc, load, 1), None).expect("valid scenario");
                row += &format!(" {:.4} ({:.4})", r.plr_mean, r.plr_max);
                runs += 1;
            }
            println!("{row}");
        }
    }
    let (wall, cpu) = (t.elapsed().as_secs_f64(), cpu_s() - c);
    println!(
        "monitoring grid (grids 3-6 x loads 0.5-3 x 2 algorithms, 3 h each, one replication): {runs} runs, \
         wall {wall:.2} s, CPU {cpu:.2} s on one core"
    );
    // The event blocks of the `ancillotti` experiment, one replication.
    let (t, c) = (Instant::now(), cpu_s());
    let mut runs = 0;
    let traffics = ["60,192", "120,192", "300,192", "600,192", "1200,192", "600,96", "600,288", "600,384", "600,192"];
    println!("event PLR mean (max) per grid and events:TB_S,SIZE_B, seed 1, default CoAP | CoCoA+:");
    for n in [5, 6] {
        for tr in &traffics[..8] {
            let mut row = format!("  grid:{n} events:{tr}:");
            for cc in [ANCILLOTTI_COAP_CC, ANCILLOTTI_COCOA_PLUS] {
                let mut cfg = scenario(&format!("grid:{n}"), cc, 1.0, 1);
                cfg.traffic = format!("events:{tr}");
                let r = simulate(&cfg, None).expect("valid scenario");
                row += &format!(" {:.4} ({:.4})", r.plr_event_mean.unwrap_or(0.0), r.plr_event_max.unwrap_or(0.0));
                runs += 1;
            }
            println!("{row}");
        }
    }
    let (wall, cpu) = (t.elapsed().as_secs_f64(), cpu_s() - c);
    println!(
        "event blocks (grids 5-6 x 8 traffic points x 2 algorithms, 3 h each, one replication; the experiment \
         runs events:600,192 in both blocks): {runs} runs, wall {wall:.2} s, CPU {cpu:.2} s on one core"
    );
}
