//! The 102 400-byte CoAP-over-TCP transfer of the Helsinki study on the kernel's TCP, through
//! the link emulator, against the simulator's TCP transport (`coapcc simulate --transport tcp`:
//! the TCP model on the same `coapcc-link` chains, seed and rest of the path as the emulator).
//!
//! For each congestion control (reno, bbr) and buffer it starts an emulator with the testbed
//! link (error-free) and the study's Linux TCP settings ([`TcpProfile::Testbed`], i.e.
//! `--tcp-profile helsinki2018 --tcp-cc CC`), runs `coapcc server --tcp` in the server
//! namespace and one `coapcc client coap+tcp://198.18.0.2/large?size=102400` in the client
//! namespace, and reads
//! - the FCT (GET written to the last byte of the response) and the setup time from the
//!   client's JSON log,
//! - segments sent (`TcpOutSegs + TcpRetransSegs`: Linux's OutSegs leaves retransmissions
//!   out), retransmitted segments, RTO expiries (`TCPTimeouts`) and fast recoveries
//!   (`TCPRenoRecovery`) from the kernel's counters in each namespace (`nstat -asz`; each
//!   namespace is fresh, so the counters are this transfer's and include the connection's
//!   close: Release, FIN and their ACKs, which the model does not run),
//! - link drops from the emulator's per-flow record,
//!
//! and runs the simulator with the same link (chains, MTU, seed) and the `helsinki2018` preset
//! (`--model-params` adds `key=value` pairs, e.g. `prr=on,rto_backoff_reset=sample` for the
//! kernel's own recovery and backoff rules). The rest of the path is a constant 15 ms by
//! default, as in the study's reproduction (`--rest-of-path-ms 10,20` draws it per packet).
//! Needs root:
//!
//! ```text
//! cargo build --release -p coapcc-cli -p coapcc-emu --bins --examples
//! sudo target/release/examples/tcp_validate [--quick] [--parallel 4] [--out results.json]
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Parser;
use coapcc_emu::cli::ChildGuard;
use coapcc_emu::{Emulator, EmulatorConfig, Side, TcpProfile};
use coapcc_link::{parse_min_max_ms, LinkConfig, LossModel};
use coapcc_sim::{simulate, GroupConfig, SimConfig, Transport, WorkloadKind};
use serde::Serialize;

/// The study's object: 102 400 bytes of payload.
const OBJECT: u64 = 102_400;

#[derive(Parser, Debug)]
struct Args {
    /// Buffers, bytes (comma-separated; both directions).
    #[arg(long, default_value = "2500,14100,28200,1410000")]
    buffers: String,
    /// Kernel congestion controls (comma-separated).
    #[arg(long, default_value = "reno,bbr")]
    cc: String,
    /// Only the 28 200-byte buffer (two runs at once, about 100 s: New Reno takes 95 s).
    #[arg(long)]
    quick: bool,
    /// Emulators running at once.
    #[arg(long, default_value_t = 4)]
    parallel: usize,
    /// Link seed (rest-of-path jitter) and simulation seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Rest-of-path delay MIN,MAX in ms, both directions (a constant when equal).
    #[arg(long, default_value = "15,15")]
    rest_of_path_ms: String,
    /// Extra `key=value` pairs for the simulated TCP (after `preset=helsinki2018`).
    #[arg(long, default_value = "")]
    model_params: String,
    /// The `coapcc` binary (`coapcc-rs` of coapcc-cli) with `server --tcp` and `client`.
    #[arg(long)]
    coapcc: Option<PathBuf>,
    /// Give up on a transfer after this many seconds.
    #[arg(long, default_value_t = 900.0)]
    timeout: f64,
    /// Write every case as JSON here.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// One side's kernel counters (nstat names). Linux's `TcpOutSegs` leaves out segments that
/// carry only retransmitted data (RFC 1213's tcpOutSegs), so segments sent =
/// `out_segs + retrans_segs`.
#[derive(Clone, Debug, Default, Serialize)]
struct Kernel {
    out_segs: u64,
    retrans_segs: u64,
    timeouts: u64,
    reno_recoveries: u64,
    delayed_acks: u64,
}

#[derive(Clone, Debug, Serialize)]
struct Model {
    fct_s: f64,
    setup_s: f64,
    server_segments: u64,
    server_retransmitted: u64,
    server_rtos: u64,
    server_fast_retransmits: u64,
    buffer_drops_down: u64,
    wall_s: f64,
}

#[derive(Clone, Debug, Serialize)]
struct Case {
    cc: String,
    buffer: u64,
    fct_s: Option<f64>,
    setup_s: Option<f64>,
    bytes: Option<u64>,
    link_fct_s: Option<f64>,
    server: Kernel,
    client: Kernel,
    down_packets: u64,
    down_dropped: u64,
    up_packets: u64,
    up_dropped: u64,
    max_lateness_us: f64,
    warnings: Vec<String>,
    error: Option<String>,
    model: Option<Model>,
}

fn parse_list<T: std::str::FromStr>(s: &str, what: &str) -> Result<Vec<T>> {
    s.split(',').map(|x| x.trim().parse().map_err(|_| anyhow::anyhow!("--{what}: bad value '{x}'"))).collect()
}

fn nstat(emu: &Emulator, side: Side) -> Result<Kernel> {
    let out = emu.command(side, "nstat", &["-asz"]).stdin(Stdio::null()).output().context("nstat (iproute2)")?;
    if !out.status.success() {
        bail!("nstat failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let m: BTreeMap<String, u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((it.next()?.to_string(), it.next()?.parse().ok()?))
        })
        .collect();
    let g = |k: &str| m.get(k).copied().unwrap_or(0);
    Ok(Kernel {
        out_segs: g("TcpOutSegs"),
        retrans_segs: g("TcpRetransSegs"),
        timeouts: g("TcpExtTCPTimeouts"),
        reno_recoveries: g("TcpExtTCPRenoRecovery"),
        delayed_acks: g("TcpExtDelayedACKs"),
    })
}

/// The emulated link of a case: the testbed chains with `buffer`, no link errors, the rest
/// of the path as `--rest-of-path-ms` says.
fn link(a: &Args, buffer: u64) -> Result<LinkConfig> {
    let emu = EmulatorConfig::testbed(buffer, LossModel::None);
    let mut link = LinkConfig { mtu_bytes: emu.mtu, uplink: emu.uplink, downlink: emu.downlink };
    let (lo, hi) = parse_min_max_ms(&a.rest_of_path_ms).map_err(|e| anyhow::anyhow!("--rest-of-path-ms: {e}"))?;
    link.set_rest_of_path_ms(lo, hi);
    Ok(link)
}

/// The simulator's TCP transport on the case's link: one client, the study's transfer.
fn model(a: &Args, cc: &str, buffer: u64) -> Result<Model> {
    let name = if cc == "reno" { "newreno" } else { cc };
    let extra = if a.model_params.trim().is_empty() { String::new() } else { format!(",{}", a.model_params.trim()) };
    let cfg = SimConfig {
        seed: a.seed,
        transport: Transport::Tcp,
        groups: vec![GroupConfig { cc: format!("{name}:preset=helsinki2018{extra}"), clients: 1 }],
        link: link(a, buffer)?,
        ..SimConfig::default()
    };
    let mut cfg = cfg;
    cfg.workload.kind = WorkloadKind::Bulk(OBJECT);
    let t = Instant::now();
    let r = simulate(&cfg).map_err(|e| anyhow::anyhow!("model: {e}"))?;
    let f = r.flows.first().context("model: no flow")?;
    Ok(Model {
        fct_s: f.fct_s.context("model: the transfer did not finish")?,
        setup_s: f.setup_s.flatten().unwrap_or(f64::NAN),
        server_segments: f.segments_sent.unwrap_or(0),
        server_retransmitted: f.retransmitted_segments.unwrap_or(0),
        server_rtos: f.rto_expiries.unwrap_or(0),
        server_fast_retransmits: f.fast_retransmits.unwrap_or(0),
        buffer_drops_down: r.links.downlink.buffer_drop_packets,
        wall_s: t.elapsed().as_secs_f64(),
    })
}

fn run_case(a: &Args, coapcc: &str, cc: &str, buffer: u64, tmp: &std::path::Path) -> Case {
    let mut case = Case {
        cc: cc.to_string(),
        buffer,
        fct_s: None,
        setup_s: None,
        bytes: None,
        link_fct_s: None,
        server: Kernel::default(),
        client: Kernel::default(),
        down_packets: 0,
        down_dropped: 0,
        up_packets: 0,
        up_dropped: 0,
        max_lateness_us: 0.0,
        warnings: Vec::new(),
        error: None,
        model: None,
    };
    match model(a, cc, buffer) {
        Ok(m) => case.model = Some(m),
        Err(e) => case.error = Some(format!("{e:#}")),
    }
    if let Err(e) = run_kernel(a, coapcc, &mut case, tmp) {
        case.error = Some(format!("{e:#}"));
    }
    case
}

fn run_kernel(a: &Args, coapcc: &str, case: &mut Case, tmp: &std::path::Path) -> Result<()> {
    let link = link(a, case.buffer)?;
    let cfg = EmulatorConfig {
        seed: a.seed,
        tcp_cc: Some(case.cc.clone()),
        tcp_profile: TcpProfile::Testbed,
        uplink: link.uplink,
        downlink: link.downlink,
        mtu: link.mtu_bytes,
        ..EmulatorConfig::testbed(case.buffer, LossModel::None)
    };
    let emu = Emulator::start(&cfg)?;
    case.warnings = emu.report().warnings;
    let log = tmp.join(format!("tcp-validate-{}-{}-{}.log", std::process::id(), case.cc, case.buffer));
    let _ = std::fs::remove_file(&log);
    let mut sc = emu.command(Side::Server, coapcc, &["server", "--tcp", "--bind", "0.0.0.0:5683"]);
    sc.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    let server = ChildGuard::spawn(sc)?;
    std::thread::sleep(Duration::from_millis(500));
    let uri = format!("coap+tcp://{}/large?size={OBJECT}", coapcc_emu::SERVER_ADDR);
    let rt = format!("{}", a.timeout);
    let logs = log.to_string_lossy().to_string();
    let mut cc = emu.command(
        Side::Client,
        coapcc,
        &["client", &uri, "--count", "1", "--response-timeout", &rt, "--log", &logs, "--quiet"],
    );
    cc.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    let mut client = ChildGuard::spawn(cc)?;
    let deadline = Instant::now() + Duration::from_secs_f64(a.timeout + 10.0);
    let status = loop {
        if let Some(s) = client.try_wait()? {
            break s;
        }
        if Instant::now() > deadline {
            bail!("the transfer did not finish within {} s", a.timeout);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // Let the last ACKs and the Release cross the link before reading the counters.
    std::thread::sleep(Duration::from_millis(1500));
    case.server = nstat(&emu, Side::Server)?;
    case.client = nstat(&emu, Side::Client)?;
    // Stop the server before the emulator, so its cgroup is empty when the emulator removes it.
    drop(server);
    drop(client);
    let r = emu.stop()?;
    if let Some(f) = r.flows.iter().find(|f| f.proto == "tcp") {
        case.link_fct_s = f.link_fct_s;
        case.down_packets = f.down_packets;
        case.down_dropped = f.down_dropped;
        case.up_packets = f.up_packets;
        case.up_dropped = f.up_dropped;
    }
    case.max_lateness_us = r.downlink.lateness.max_us.max(r.uplink.lateness.max_us);
    let text = std::fs::read_to_string(&log).with_context(|| format!("client log {}", log.display()))?;
    let _ = std::fs::remove_file(&log);
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        match v["type"].as_str() {
            Some("connected") => case.setup_s = v["setup_s"].as_f64(),
            Some("exchange") => {
                case.fct_s = v["rtt_s"].as_f64();
                case.bytes = v["bytes"].as_u64();
            }
            _ => {}
        }
    }
    if !status.success() {
        bail!("client exited with {status} (log: {})", text.lines().last().unwrap_or(""));
    }
    if case.bytes != Some(OBJECT) {
        bail!("client received {:?} bytes, not {OBJECT}", case.bytes);
    }
    Ok(())
}

fn pct(a: f64, b: f64) -> String {
    format!("{:+.1} %", (a - b) / b * 100.0)
}

fn main() -> Result<()> {
    let a = Args::parse();
    let buffers: Vec<u64> = if a.quick { vec![28_200] } else { parse_list(&a.buffers, "buffers")? };
    let ccs: Vec<String> = parse_list(&a.cc, "cc")?;
    if a.parallel == 0 || a.parallel > 16 {
        bail!("--parallel must be in 1..=16");
    }
    if !(a.timeout.is_finite() && a.timeout > 0.0 && a.timeout <= 86_400.0) {
        bail!("--timeout must be in (0, 86400] seconds");
    }
    let coapcc = match &a.coapcc {
        Some(p) => p.clone(),
        None => std::env::current_exe()?
            .parent()
            .and_then(|p| p.parent())
            .map(|p| p.join("coapcc-rs"))
            .context("cannot locate coapcc-rs; give --coapcc")?,
    };
    if !coapcc.exists() {
        bail!("{} not found: cargo build --release -p coapcc-cli (or give --coapcc)", coapcc.display());
    }
    let coapcc = coapcc.to_string_lossy().to_string();
    let tmp = std::env::temp_dir();
    let cases: Vec<(String, u64)> = ccs.iter().flat_map(|c| buffers.iter().map(move |&b| (c.clone(), b))).collect();
    let t0 = Instant::now();
    let mut results: Vec<Case> = Vec::new();
    for chunk in cases.chunks(a.parallel) {
        let got: Vec<Case> = std::thread::scope(|s| {
            let hs: Vec<_> = chunk.iter().map(|(c, b)| s.spawn(|| run_case(&a, &coapcc, c, *b, &tmp))).collect();
            hs.into_iter().map(|h| h.join().expect("case thread")).collect()
        });
        for c in &got {
            eprintln!(
                "{} {} B: kernel FCT {:?} s, simulator {:?} s{}",
                c.cc,
                c.buffer,
                c.fct_s,
                c.model.as_ref().map(|m| m.fct_s),
                c.error.as_ref().map(|e| format!(" ERROR {e}")).unwrap_or_default()
            );
        }
        results.extend(got);
    }
    println!(
        "| CC | Buffer (B) | FCT kernel (s) | FCT simulator (s) | diff | setup kernel / simulator (s) | server segments kernel / simulator | retransmitted kernel / simulator | RTOs kernel / simulator | fast recoveries kernel / simulator | downlink drops kernel / simulator |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for c in &results {
        let m = c.model.as_ref();
        let f = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.3}"));
        let mo = |g: fn(&Model) -> u64| m.map_or("-".into(), |m| g(m).to_string());
        println!(
            "| {} | {} | {} | {} | {} | {} / {} | {} / {} | {} / {} | {} / {} | {} / {} | {} / {} |",
            c.cc,
            c.buffer,
            f(c.fct_s),
            f(m.map(|m| m.fct_s)),
            match (c.fct_s, m) {
                (Some(k), Some(m)) => pct(k, m.fct_s),
                _ => "-".into(),
            },
            f(c.setup_s),
            f(m.map(|m| m.setup_s)),
            c.server.out_segs + c.server.retrans_segs,
            mo(|m| m.server_segments),
            c.server.retrans_segs,
            mo(|m| m.server_retransmitted),
            c.server.timeouts,
            mo(|m| m.server_rtos),
            c.server.reno_recoveries,
            mo(|m| m.server_fast_retransmits),
            c.down_dropped,
            mo(|m| m.buffer_drops_down),
        );
        if let Some(e) = &c.error {
            println!("|   | error: {e} ||||||||||");
        }
    }
    let model_wall: f64 = results.iter().filter_map(|c| c.model.as_ref()).map(|m| m.wall_s).sum();
    println!(
        "\n{} cases in {:.1} s wall ({} at once); the simulator took {:.3} ms in all",
        results.len(),
        t0.elapsed().as_secs_f64(),
        a.parallel,
        model_wall * 1e3
    );
    if let Some(p) = &a.out {
        std::fs::write(p, serde_json::to_string_pretty(&results)?)?;
    }
    if results.iter().any(|c| c.error.is_some()) {
        std::process::exit(1);
    }
    Ok(())
}
