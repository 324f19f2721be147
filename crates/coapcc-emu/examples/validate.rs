//! Agreement of the emulator with the simulator (issue "Real CoAP over UDP", item 6).
//!
//! Runs the short-lived workload (N clients × `--count` stop-and-wait exchanges) through the
//! emulator for each seed, runs `coapcc_sim::simulate` with the same configuration and seed,
//! and compares flow completion times. Needs root; build the binaries first:
//!
//! ```text
//! cargo build --release -p coapcc-emu --bins --examples
//! sudo target/release/examples/validate --clients 1 --errors none --seeds 1,2,3
//! sudo target/release/examples/validate --clients 10 --errors medium --seeds 1,2,3,4,5
//! ```
//!
//! Endpoints: by default the stand-in CoAP server and client of `coapcc-emu-probe` (same
//! packet sizes, algorithms and dither streams as the simulator). To validate the real
//! endpoints instead, give templates; `{server}` (198.18.0.2), `{port}`, `{count}`, `{cc}`,
//! `{seed}`, `{client}` (0-based index) and `{log}` (a per-client file) are substituted, one
//! client process is started per client, and the FCTs are then taken from the emulator's
//! per-flow record (first request in → last response out):
//!
//! ```text
//! validate --server-cmd 'coapcc server --bind 0.0.0.0:{port}' \
//!          --client-cmd 'coapcc client coap://{server}/hello --count {count} --cc {cc} --log {log}'
//! ```

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Parser;
use coapcc_emu::cli::ChildGuard;
use coapcc_emu::forward::percentile;
use coapcc_emu::{Emulator, EmulatorConfig, Side};
use coapcc_sim::link::{ErrorClock, LossModel};
use coapcc_sim::{GroupConfig, SimConfig};
use serde::Serialize;

#[derive(Parser, Debug)]
struct Args {
    /// Clients per run, all starting at once.
    #[arg(long, default_value_t = 1)]
    clients: u32,
    /// Exchanges per client.
    #[arg(long, default_value_t = 50)]
    count: u32,
    /// Link errors (both directions).
    #[arg(long, default_value = "none")]
    errors: String,
    /// Buffer, bytes.
    #[arg(long, default_value_t = 28_200)]
    buffer: u64,
    /// Congestion control.
    #[arg(long, default_value = "default:preset=helsinki2018")]
    cc: String,
    /// Seeds (comma-separated), one emulator run each.
    #[arg(long, default_value = "1,2,3")]
    seeds: String,
    /// Seeds of the simulator-only reference distribution (pooled median), 0 = none.
    #[arg(long, default_value_t = 200)]
    sim_reference_seeds: u64,
    /// Server command template (default: the stand-in server).
    #[arg(long)]
    server_cmd: Option<String>,
    /// Client command template, started once per client (default: the stand-in client,
    /// one process for all clients).
    #[arg(long)]
    client_cmd: Option<String>,
    /// Server UDP port.
    #[arg(long, default_value_t = 5683)]
    port: u16,
    /// Path of coapcc-emu-probe (default: next to this example's directory).
    #[arg(long)]
    probe: Option<PathBuf>,
    /// Emulator runs at once (each in its own namespaces).
    #[arg(long, default_value_t = 1)]
    parallel: usize,
    /// Write the results as JSON.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Relative tolerance on the median FCT (default 0.02 for 1 client, 0.05 otherwise).
    #[arg(long)]
    tolerance: Option<f64>,
}

#[derive(Serialize)]
struct SeedResult {
    seed: u64,
    emu_fct_s: Vec<f64>,
    emu_link_fct_s: Vec<f64>,
    sim_fct_s: Vec<f64>,
    emu_retransmissions: u64,
    sim_retransmissions: u64,
    emu_lateness_p99_us: f64,
    /// Link-error loss fraction [uplink, downlink], emulator and simulator.
    emu_error_loss: [f64; 2],
    /// IP sizes of request and response used by the simulator (as seen on the link).
    packet_bytes: (u32, u32),
    /// Simulator token length and response payload that give those sizes.
    sim_coap: (u8, u32),
    sim_error_loss: [f64; 2],
    wall_s: f64,
}

#[derive(Serialize)]
struct Summary {
    clients: u32,
    count: u32,
    errors: String,
    buffer: u64,
    cc: String,
    endpoints: String,
    seeds: Vec<SeedResult>,
    emu_median_s: f64,
    sim_median_same_seeds_s: f64,
    sim_reference_median_s: Option<f64>,
    rel_diff_same_seeds: f64,
    rel_diff_reference: Option<f64>,
    /// Relative standard deviation of the simulator's pooled median over as many seeds as
    /// the emulator ran (from the reference seeds).
    sim_sampling_sd: Option<f64>,
    tolerance: f64,
    pass: bool,
}

fn frac(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    percentile(&s, 0.5)
}

fn sim_config(a: &Args, seed: u64) -> Result<SimConfig> {
    let mut c = SimConfig { seed, ..SimConfig::default() };
    c.groups = vec![GroupConfig { cc: a.cc.clone(), clients: a.clients }];
    c.workload.exchanges = a.count;
    c.link.set_buffer_bytes(a.buffer);
    let loss = LossModel::parse(&a.errors, ErrorClock::Time, 5.0).map_err(|e| anyhow::anyhow!(e))?;
    c.link.set_loss(&loss);
    c.validate()?;
    Ok(c)
}

fn subst(t: &str, a: &Args, seed: u64, client: u32, log: &str) -> String {
    t.replace("{server}", &coapcc_emu::SERVER_ADDR.to_string())
        .replace("{port}", &a.port.to_string())
        .replace("{count}", &a.count.to_string())
        .replace("{cc}", &a.cc)
        .replace("{seed}", &seed.to_string())
        .replace("{client}", &client.to_string())
        .replace("{log}", log)
}

fn run_seed(a: &Args, probe: &str, seed: u64) -> Result<SeedResult> {
    let mut sim = sim_config(a, seed)?;
    let mut cfg = EmulatorConfig::testbed(
        a.buffer,
        LossModel::parse(&a.errors, ErrorClock::Time, 5.0).map_err(|e| anyhow::anyhow!(e))?,
    );
    cfg.seed = seed;
    let t0 = Instant::now();
    let emu = Emulator::start(&cfg)?;
    let server_line = match &a.server_cmd {
        Some(t) => subst(t, a, seed, 0, ""),
        None => format!("{probe} coap-server --bind 0.0.0.0:{} --max-seconds 7200", a.port),
    };
    let mut sc = emu.shell(Side::Server, &server_line);
    sc.stdin(Stdio::null()).stdout(Stdio::null());
    let _server = ChildGuard::spawn(sc)?;
    std::thread::sleep(Duration::from_millis(400));
    let bound = 7200.0;
    let mut emu_fct = Vec::new();
    let mut emu_rtx = 0;
    match &a.client_cmd {
        None => {
            let line = format!(
                "{probe} coap-client --server {}:{} --count {} --clients {} --cc '{}' --seed {seed} --max-seconds {bound}",
                coapcc_emu::SERVER_ADDR,
                a.port,
                a.count,
                a.clients,
                a.cc
            );
            let out = emu.shell(Side::Client, &line).stdin(Stdio::null()).output()?;
            if !out.status.success() {
                bail!("client failed: {}", String::from_utf8_lossy(&out.stderr));
            }
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).context("client output")?;
            for f in v["flows"].as_array().context("flows")? {
                emu_fct.push(f["fct_s"].as_f64().context("unfinished flow")?);
                emu_rtx += f["retransmissions"].as_u64().unwrap_or(0);
            }
        }
        Some(t) => {
            let mut kids = Vec::new();
            for c in 0..a.clients {
                let log = std::env::temp_dir().join(format!("coapcc-validate-{}-{seed}-{c}.log", std::process::id()));
                let line = subst(t, a, seed, c, &log.display().to_string());
                let mut cmd = emu.shell(Side::Client, &line);
                cmd.stdin(Stdio::null()).stdout(Stdio::null());
                kids.push(ChildGuard::spawn(cmd)?);
            }
            let end = Instant::now() + Duration::from_secs_f64(bound);
            for k in &mut kids {
                while k.try_wait()?.is_none() {
                    if Instant::now() > end {
                        bail!("clients did not finish within {bound} s");
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
    }
    let report = emu.stop()?;
    let link_fct: Vec<f64> = report
        .flows
        .iter()
        .filter(|f| f.proto == "udp" && f.server.ends_with(&format!(":{}", a.port)))
        .filter_map(|f| f.link_fct_s)
        .collect();
    if a.client_cmd.is_some() {
        emu_fct = link_fct.clone();
        emu_rtx = report.uplink.counters.offered_packets.saturating_sub(a.clients as u64 * a.count as u64);
    }
    // Packet sizes: the simulator is configured with the sizes the link actually carried
    // (token length and payload chosen to reproduce them), so endpoints that encode
    // differently from the simulator's defaults are compared like for like.
    let to_port: Vec<_> =
        report.flows.iter().filter(|f| f.proto == "udp" && f.server.ends_with(&format!(":{}", a.port))).collect();
    if let Some(f) = to_port.first() {
        if f.up_packets > 0 && f.down_packets > 0 {
            let (req, resp) = (f.up_bytes / f.up_packets, f.down_bytes / f.down_packets);
            let token = req as i64 - 38; // 39 B <-> 1-byte token with Uri-Path "hello"
            let payload = resp as i64 - 28 - 4 - token - 1;
            if (0..=8).contains(&token) && payload > 0 {
                sim.coap.token_len = token as u8;
                sim.coap.response_payload_bytes = payload as u32;
            } else {
                eprintln!(
                    "seed {seed}: link packet sizes {req}/{resp} B not representable; simulator keeps its defaults"
                );
            }
        }
    }
    let sizes = (sim.coap.request_bytes(), sim.coap.response_bytes());
    let sr = coapcc_sim::simulate(&sim)?;
    let sim_fct: Vec<f64> = sr.flows.iter().filter_map(|f| f.fct_s).collect();
    let sim_rtx = sr.flows.iter().map(|f| f.retransmissions).sum();
    Ok(SeedResult {
        seed,
        emu_fct_s: emu_fct,
        emu_link_fct_s: link_fct,
        sim_fct_s: sim_fct,
        emu_retransmissions: emu_rtx,
        sim_retransmissions: sim_rtx,
        emu_lateness_p99_us: report.uplink.lateness.p99_us.max(report.downlink.lateness.p99_us),
        packet_bytes: sizes,
        sim_coap: (sim.coap.token_len, sim.coap.response_payload_bytes),
        emu_error_loss: [
            frac(report.uplink.counters.error_loss_packets, report.uplink.counters.offered_packets),
            frac(report.downlink.counters.error_loss_packets, report.downlink.counters.offered_packets),
        ],
        sim_error_loss: [
            frac(sr.links.uplink.error_loss_packets, sr.links.uplink.offered_packets),
            frac(sr.links.downlink.error_loss_packets, sr.links.downlink.offered_packets),
        ],
        wall_s: t0.elapsed().as_secs_f64(),
    })
}

fn main() -> Result<()> {
    let a = Args::parse();
    let seeds: Vec<u64> = a.seeds.split(',').map(|s| s.trim().parse()).collect::<Result<_, _>>().context("--seeds")?;
    let probe = match &a.probe {
        Some(p) => p.clone(),
        None => std::env::current_exe()?.parent().and_then(|p| p.parent()).context("exe dir")?.join("coapcc-emu-probe"),
    };
    if a.client_cmd.is_none() && !probe.exists() {
        bail!("{} not found: build it first (cargo build -p coapcc-emu --bins)", probe.display());
    }
    let probe = probe.display().to_string();
    let mut results = Vec::new();
    let mut done: Vec<(u64, Result<SeedResult>)> = Vec::new();
    for chunk in seeds.chunks(a.parallel.max(1)) {
        std::thread::scope(|sc| {
            let (a, probe) = (&a, &probe);
            let hs: Vec<_> = chunk.iter().map(|&s| (s, sc.spawn(move || run_seed(a, probe, s)))).collect();
            for (s, h) in hs {
                done.push((s, h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("seed {s} panicked")))));
            }
        });
    }
    for (s, r) in done {
        let r = r?;
        eprintln!(
            "seed {s}: emulator FCT median {:.3} s {:?}, simulator {:.3} s; retransmissions {} vs {}; link FCT median {:.3} s; packets {:?} B; error loss up/down {:.3}/{:.3} vs {:.3}/{:.3}; p99 lateness {:.0} us; {:.0} s wall",
            median(&r.emu_fct_s),
            r.emu_fct_s.iter().map(|x| (x * 1000.0).round() / 1000.0).collect::<Vec<_>>(),
            median(&r.sim_fct_s),
            r.emu_retransmissions,
            r.sim_retransmissions,
            median(&r.emu_link_fct_s),
            r.packet_bytes,
            r.emu_error_loss[0],
            r.emu_error_loss[1],
            r.sim_error_loss[0],
            r.sim_error_loss[1],
            r.emu_lateness_p99_us,
            r.wall_s
        );
        results.push(r);
    }
    let emu_all: Vec<f64> = results.iter().flat_map(|r| r.emu_fct_s.clone()).collect();
    let sim_all: Vec<f64> = results.iter().flat_map(|r| r.sim_fct_s.clone()).collect();
    let (em, sm) = (median(&emu_all), median(&sim_all));
    // The simulator's own distribution over many seeds: its pooled median, and how much a
    // pooled median over as many seeds as the emulator ran scatters (the sampling error the
    // comparison has to live with once link-error trajectories diverge).
    let k = seeds.len().max(1);
    let (reference, sampling_sd) = if a.sim_reference_seeds > 0 {
        let mut per_seed = Vec::new();
        for s in 1..=a.sim_reference_seeds {
            let mut c = sim_config(&a, 1_000_000 + s)?;
            if let Some(r) = results.first() {
                (c.coap.token_len, c.coap.response_payload_bytes) = r.sim_coap;
            }
            let sr = coapcc_sim::simulate(&c)?;
            per_seed.push(sr.flows.iter().filter_map(|f| f.fct_s).collect::<Vec<f64>>());
        }
        let all: Vec<f64> = per_seed.iter().flatten().copied().collect();
        let groups: Vec<f64> = per_seed.chunks_exact(k).map(|g| median(&g.concat())).collect();
        let sd = if groups.len() >= 2 {
            let m = groups.iter().sum::<f64>() / groups.len() as f64;
            Some((groups.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (groups.len() - 1) as f64).sqrt() / m)
        } else {
            None
        };
        (Some(median(&all)), sd)
    } else {
        (None, None)
    };
    let tol = a.tolerance.unwrap_or(if a.clients == 1 { 0.02 } else { 0.05 });
    let d_same = (em - sm) / sm;
    let d_ref = reference.map(|r| (em - r) / r);
    // Error-free runs are deterministic given the seed: compare seed by seed. With link
    // errors the emulator's and the simulator's loss trajectories diverge after the first
    // differing packet order, so the comparison is against the simulator's distribution.
    let pass = if a.errors == "none" {
        d_same.abs() <= tol && d_ref.map_or(true, |d| d.abs() <= tol)
    } else {
        d_ref.map_or(d_same.abs() <= tol, |d| d.abs() <= tol)
    };
    let summary = Summary {
        clients: a.clients,
        count: a.count,
        errors: a.errors.clone(),
        buffer: a.buffer,
        cc: a.cc.clone(),
        endpoints: if a.client_cmd.is_some() { "templates".into() } else { "coapcc-emu-probe stand-in".into() },
        seeds: results,
        emu_median_s: em,
        sim_median_same_seeds_s: sm,
        sim_reference_median_s: reference,
        rel_diff_same_seeds: d_same,
        rel_diff_reference: d_ref,
        sim_sampling_sd: sampling_sd,
        tolerance: tol,
        pass,
    };
    println!(
        "emulator median FCT {em:.3} s over {} flows; simulator (same seeds) {sm:.3} s: {:+.2} %{}; tolerance {:.0} %: {}",
        emu_all.len(),
        100.0 * d_same,
        match (reference, d_ref) {
            (Some(r), Some(d)) => format!(
                "; simulator reference ({} seeds) {r:.3} s: {:+.2} %{}",
                a.sim_reference_seeds,
                100.0 * d,
                sampling_sd.map_or(String::new(), |sd| format!(" (sampling sd of a {k}-seed median: {:.1} %)", 100.0 * sd))
            ),
            _ => String::new(),
        },
        100.0 * tol,
        if pass { "PASS" } else { "FAIL" }
    );
    if let Some(p) = &a.out {
        std::fs::write(p, serde_json::to_string_pretty(&summary)?)?;
    }
    if !pass {
        std::process::exit(1);
    }
    Ok(())
}
