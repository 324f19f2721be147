//! The `coapcc simulate` command: arguments ([`SimulateArgs`], clap derive) and runner
//! ([`run`]); the human summary of a report is [`summary()`] (its own module). The binary that exposes it lives elsewhere; this module never exits or panics on
//! bad input, it returns one-line errors.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;
use serde::de::DeserializeOwned;

use crate::config::{
    compose_spec, profile_params, DuplicateMode, EndpointModel, GroupConfig, SimConfig, Transport, UnnecessaryDef,
    WorkloadKind,
};
use crate::trace::JsonLinesTrace;

mod summary;

pub use summary::summary;

/// Arguments of `coapcc simulate`. Every flag overrides the corresponding field of
/// `--config` (or of the defaults).
#[derive(Args, Clone, Debug, Default, PartialEq)]
pub struct SimulateArgs {
    /// Congestion-control algorithm `[LABEL=]NAME[:key=value,...]`; repeat for mixed
    /// populations (one client group per --cc; LABEL names the group in the summary and the
    /// report). A name alone means the algorithm's own defaults. Default: default (RFC 7252).
    #[arg(long = "cc", value_name = "[LABEL=]SPEC")]
    pub cc: Vec<String>,
    /// Reproduction preset applied first to every group of every transport (a preset written
    /// in a --cc wins); over TCP newreno and bbr take it too, and a preset without TCP
    /// settings is refused.
    #[arg(long, value_name = "PRESET")]
    pub preset: Option<String>,
    /// Testbed profile: the ACK_TIMEOUT, ACK_RANDOM_FACTOR and MAX_RETRANSMIT of a preset
    /// (e.g. helsinki2018), for every group; each algorithm keeps its other defaults.
    #[arg(long, value_name = "PRESET")]
    pub profile: Option<String>,
    /// ACK_TIMEOUT in seconds for every group (after the preset and the profile, before a
    /// group's own key=value).
    #[arg(long, value_name = "S")]
    pub ack_timeout: Option<String>,
    /// ACK_RANDOM_FACTOR for every group.
    #[arg(long, value_name = "F")]
    pub ack_random_factor: Option<String>,
    /// MAX_RETRANSMIT for every group.
    #[arg(long, value_name = "N")]
    pub max_retransmit: Option<String>,
    /// Dither of the initial timer for every group: uniform, libcoap-8bit, contiki-ticks, off.
    #[arg(long, value_name = "MODE")]
    pub dither: Option<String>,
    /// Wait a full timer after the last retransmission (on|off) for every group.
    #[arg(long, value_name = "on|off")]
    pub wait_after_last: Option<String>,
    /// Cap of backed-off timers (seconds or none) for every group.
    #[arg(long, value_name = "S|none")]
    pub backoff_cap: Option<String>,
    /// Clients: N (split evenly over the groups, earlier groups take the remainder) or
    /// N1,N2,... (one count per group). Default: the config file's counts, or 1 per group.
    #[arg(long, value_name = "N|N1,N2")]
    pub clients: Option<String>,
    /// Link flags (buffer, errors, rest of path, overhead), shared with `coapcc emulate`.
    #[command(flatten)]
    pub link: LinkArgs,
    /// continuous (default), random (batches of 1-10 exchanges, reset before each) or
    /// bulk:BYTES (one GET of a BYTES-long resource: Block2 over UDP, one message over TCP).
    #[arg(long, value_name = "KIND", value_parser = parse_workload)]
    pub workload: Option<WorkloadKind>,
    /// Exchanges per flow. Default 50.
    #[arg(long, value_name = "N")]
    pub exchanges: Option<u32>,
    /// Master seed (default 1; always printed).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Print the report as one JSON object instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Write a per-exchange trace as JSON lines to FILE.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// With --trace: also write every change of each link direction's bottleneck queue
    /// (records with "kind": "queue").
    #[arg(long, requires = "trace")]
    pub trace_queue: bool,
    /// Read a full SimConfig (JSON); flags override its fields.
    #[arg(long, value_name = "FILE.json")]
    pub config: Option<PathBuf>,
    /// Print the fully resolved configuration as JSON and exit without running.
    #[arg(long)]
    pub print_config: bool,
    /// Each client starts at U[0, MS] ms (default 0: all at t = 0).
    #[arg(long, value_name = "MS")]
    pub start_jitter_ms: Option<f64>,
    /// IP version, 4 (default) or 6.
    #[arg(long, value_name = "4|6")]
    pub ip_version: Option<u8>,
    /// Token length in bytes (default 1).
    #[arg(long, value_name = "N")]
    pub token_len: Option<u8>,
    /// Uri-Path of the GET (default hello).
    #[arg(long, value_name = "PATH")]
    pub uri_path: Option<String>,
    /// Response payload bytes (default 60).
    #[arg(long, value_name = "BYTES")]
    pub payload_bytes: Option<u32>,
    /// Server processing delay in ms (default 0).
    #[arg(long, value_name = "MS")]
    pub server_delay_ms: Option<f64>,
    /// answer-each-copy (default) or replay-cached (AMBIG-21).
    #[arg(long, value_name = "MODE", value_parser = parse_enum::<DuplicateMode>)]
    pub duplicate_mode: Option<DuplicateMode>,
    /// response-delivered (default) or request-delivered (AMBIG-16).
    #[arg(long, value_name = "DEF", value_parser = parse_enum::<UnnecessaryDef>)]
    pub unnecessary_def: Option<UnnecessaryDef>,
    /// Bound on simulated time in seconds (default 100000).
    #[arg(long, value_name = "SECONDS")]
    pub max_sim_time_s: Option<f64>,
    /// Budget of simulation events; a run needing more is refused (default
    /// 10 000 000 + 200 x clients x exchanges).
    #[arg(long, value_name = "N")]
    pub max_events: Option<u64>,
    /// Endpoint model: compact (default; the simulator's own, fastest) or full (the real
    /// coapcc-proto endpoints exchanging encoded datagrams; same results, slower).
    #[arg(long, value_name = "compact|full", value_parser = parse_enum::<EndpointModel>)]
    pub endpoint: Option<EndpointModel>,
    /// Transport: udp (default; --cc names a CoAP algorithm) or tcp (CoAP over TCP on the
    /// TCP model; --cc is newreno|bbr[:key=value,...]).
    #[arg(long, value_name = "udp|tcp", value_parser = parse_enum::<Transport>)]
    pub transport: Option<Transport>,
    /// Run over a multi-hop IEEE 802.15.4 mesh instead of the links: grid:N, grid:NxM,
    /// chain:N, ring:N, dumbbell:K,M or file:PATH (the server at the sink, node 0; the clients
    /// on the other nodes but the DODAG root). Sets `topology.mesh`.
    #[arg(long, value_name = "TOPOLOGY")]
    pub mesh: Option<String>,
    /// The mesh's radio and MAC from a mesh preset: ieee802154 (default; the standard's
    /// CSMA/CA), ancillotti-cooja (Contiki's CSMA rules) or makarem2021 (plus ContikiMAC-like
    /// duty cycling).
    #[arg(long, value_name = "PRESET")]
    pub mesh_preset: Option<String>,
    /// Set one mesh parameter, KEY=VALUE with a dotted key of `topology.mesh`
    /// (`mac.queue_packets=4`, `radio.capture_db=null`); repeatable.
    #[arg(long = "mesh-param", value_name = "KEY=VALUE")]
    pub mesh_param: Vec<String>,
}

coapcc_link::link_args!(
    /// Link flags shared by `coapcc simulate` and `coapcc emulate`, declared once by the link
    /// crate's `link_args!` (their meaning and errors are `coapcc_link::LinkOverrides`'s).
    pub struct LinkArgs
);

/// Parse a configuration enum from its JSON name, accepting `-` for `_`.
fn parse_enum<T: DeserializeOwned>(s: &str) -> Result<T, String> {
    serde_json::from_value(serde_json::Value::String(s.trim().replace('-', "_"))).map_err(|e| {
        let msg = e.to_string();
        // serde: "unknown variant `x`, expected one of `a`, `b`"
        msg.split(" at line").next().unwrap_or(&msg).replace('_', "-")
    })
}

/// Algorithm of a group over TCP when no --cc is given.
pub const DEFAULT_TCP_CC: &str = "newreno:preset=helsinki2018";

/// Parse `--workload` ([`WorkloadKind::parse`]).
fn parse_workload(s: &str) -> Result<WorkloadKind, String> {
    WorkloadKind::parse(s)
}

/// `--mesh`, `--mesh-preset`, `--mesh-param` onto `cfg.topology.mesh`: a preset replaces the
/// section (keeping its topology unless `--mesh` gives one), then the parameters apply.
fn apply_mesh_args(args: &SimulateArgs, cfg: &mut SimConfig) -> anyhow::Result<()> {
    if args.mesh.is_none() && args.mesh_preset.is_none() && args.mesh_param.is_empty() {
        return Ok(());
    }
    let current = cfg.topology.mesh.take();
    let topology = args.mesh.clone().or_else(|| current.as_ref().map(|m| m.topology.clone()));
    let mut m = match (&args.mesh_preset, current) {
        // Without RPL's control traffic: a run of flows ends when its traffic has, and RPL's
        // Trickle timers never stop (`--mesh-param routing.rpl.control=true` turns it on; the
        // run then lasts until its time bound).
        (Some(p), _) => {
            let mut m = coapcc_mesh::MeshNetConfig::preset(p, topology.as_deref().unwrap_or("grid:3"))
                .map_err(|e| anyhow::anyhow!("--mesh-preset: {e}"))?;
            m.routing.rpl.control = false;
            m
        }
        (None, Some(m)) => m,
        (None, None) => coapcc_mesh::MeshNetConfig::default(),
    };
    if let Some(t) = topology {
        m.topology = t;
    }
    for kv in &args.mesh_param {
        let (k, v) = kv.split_once('=').ok_or_else(|| anyhow::anyhow!("--mesh-param {kv:?}: expected KEY=VALUE"))?;
        m.set(k, v).map_err(|e| anyhow::anyhow!("--mesh-param: {e}"))?;
    }
    cfg.topology.mesh = Some(m);
    Ok(())
}

/// Build the configuration the arguments describe (config file, then flags).
pub fn build_config(args: &SimulateArgs) -> anyhow::Result<SimConfig> {
    let mut cfg = match &args.config {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).with_context(|| format!("cannot read config {}", path.display()))?;
            let value: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("config {}: {e}", path.display()))?;
            if !value.is_object() {
                bail!("config {}: must be a JSON object of configuration fields", path.display());
            }
            serde_json::from_str::<SimConfig>(&text).map_err(|e| anyhow::anyhow!("config {}: {e}", path.display()))?
        }
        None => SimConfig::default(),
    };
    if !args.cc.is_empty() {
        cfg.groups = args.cc.iter().map(|cc| GroupConfig { cc: cc.clone(), clients: 0 }).collect();
        if args.clients.is_none() {
            // Default one client per group unless told otherwise.
            for g in &mut cfg.groups {
                g.clients = 1;
            }
        }
    }
    let mut shared: Vec<(&str, String)> = match &args.profile {
        Some(p) => profile_params(p).map_err(|e| anyhow::anyhow!("--profile: {e}"))?,
        None => Vec::new(),
    };
    for (name, v) in [
        ("ack_timeout", &args.ack_timeout),
        ("ack_random_factor", &args.ack_random_factor),
        ("max_retransmit", &args.max_retransmit),
        ("dither", &args.dither),
        ("wait_after_last", &args.wait_after_last),
        ("backoff_cap", &args.backoff_cap),
    ] {
        if let Some(v) = v {
            let flag = name.replace('_', "-");
            if v.trim().is_empty() || v.contains([',', '=', ':']) {
                bail!("--{flag}: expected a value, got '{v}'");
            }
            match shared.iter_mut().find(|(k, _)| *k == name) {
                Some(kv) => kv.1 = v.trim().to_string(),
                None => shared.push((name, v.trim().to_string())),
            }
        }
    }
    if let Some(p) = &args.preset {
        if coapcc_cc::Preset::parse(p).is_none() || p.contains([',', '=', ':']) {
            let valid: Vec<&str> = coapcc_cc::Preset::ALL.iter().map(|(n, _)| *n).collect();
            let hint = coapcc_cc::names::hint(p, valid.iter().copied());
            bail!("--preset: unknown preset '{p}'{hint}; valid: {}", valid.join(", "));
        }
    }
    for (i, g) in cfg.groups.iter_mut().enumerate() {
        g.cc = compose_spec(&g.cc, args.preset.as_deref().map(str::trim), &shared)
            .map_err(|e| anyhow::anyhow!("invalid configuration: groups[{i}].cc: {e}"))?;
    }
    if let Some(spec) = &args.clients {
        let counts = parse_clients(spec, cfg.groups.len())?;
        for (g, n) in cfg.groups.iter_mut().zip(counts) {
            g.clients = n;
        }
    }
    let mut link = args.link.overrides();
    // --errors medium|high under --preset: the preset's fitted error profile.
    link.preset = args.preset.as_deref().map(|p| p.trim().to_string());
    link.apply(&mut cfg.link).map_err(anyhow::Error::msg)?;
    if let Some(k) = args.workload {
        cfg.workload.kind = k;
    }
    if let Some(n) = args.exchanges {
        cfg.workload.exchanges = n;
    }
    if let Some(s) = args.seed {
        cfg.seed = s;
    }
    if let Some(j) = args.start_jitter_ms {
        cfg.workload.start_jitter_ms = j;
    }
    if let Some(v) = args.ip_version {
        cfg.coap.ip_version = v;
    }
    if let Some(t) = args.token_len {
        cfg.coap.token_len = t;
    }
    if let Some(p) = &args.uri_path {
        cfg.coap.uri_path = p.clone();
    }
    if let Some(p) = args.payload_bytes {
        cfg.coap.response_payload_bytes = p;
    }
    if let Some(d) = args.server_delay_ms {
        cfg.server.processing_delay_ms = d;
    }
    if let Some(m) = args.duplicate_mode {
        cfg.server.duplicate_mode = m;
    }
    if let Some(d) = args.unnecessary_def {
        cfg.metrics.unnecessary_def = d;
    }
    if let Some(t) = args.max_sim_time_s {
        cfg.max_sim_time_s = t;
    }
    if let Some(m) = args.endpoint {
        cfg.endpoint.model = m;
    }
    if let Some(t) = args.transport {
        cfg.transport = t;
        if t == Transport::Tcp && args.cc.is_empty() && args.config.is_none() {
            for g in &mut cfg.groups {
                g.cc = DEFAULT_TCP_CC.into();
            }
        }
    }
    if let Some(n) = args.max_events {
        cfg.max_events = Some(n);
    }
    apply_mesh_args(args, &mut cfg)?;
    cfg.validate().map_err(|e| anyhow::anyhow!("invalid configuration: {e}"))?;
    Ok(cfg)
}

/// `N` split over `groups` (earlier groups take the remainder), or one count per group.
pub fn parse_clients(spec: &str, groups: usize) -> anyhow::Result<Vec<u32>> {
    let max = crate::config::MAX_CLIENTS;
    let nums: Vec<u32> = spec
        .split(',')
        .map(str::trim)
        .map(|p| match p.parse::<i128>() {
            Ok(n) if (0..=i128::from(max)).contains(&n) => Ok(n as u32),
            Ok(_) => Err(anyhow::anyhow!("--clients: {p} is not in 0..={max}")),
            Err(_) => Err(anyhow::anyhow!("--clients: expected N or N1,N2,..., got '{spec}'")),
        })
        .collect::<anyhow::Result<_>>()?;
    if nums.len() == 1 {
        let (n, g) = (nums[0], groups.max(1) as u32);
        Ok((0..g).map(|i| n / g + u32::from(i < n % g)).collect())
    } else if nums.len() == groups {
        Ok(nums)
    } else {
        bail!("--clients: {} counts given for {} algorithm groups", nums.len(), groups)
    }
}

/// Run `coapcc simulate`: the JSON report with `--json`, else a short summary.
pub fn run(args: &SimulateArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let cfg = build_config(args)?;
    if args.print_config {
        let resolved = cfg.resolved().map_err(|e| anyhow::anyhow!("invalid configuration: {e}"))?;
        serde_json::to_writer_pretty(&mut *out, &resolved)?;
        writeln!(out)?;
        return Ok(());
    }
    let t0 = std::time::Instant::now();
    let mut printer = ProgressPrinter::default();
    let mut progress = |p: &crate::Progress| {
        if let Some(line) = printer.line(t0.elapsed().as_secs_f64(), p) {
            let _ = writeln!(std::io::stderr(), "{line}");
        }
    };
    let report = match &args.trace {
        Some(path) => {
            let f = File::create(path).with_context(|| format!("cannot create trace file {}", path.display()))?;
            let mut sink = JsonLinesTrace::new(BufWriter::new(f)).with_queue(args.trace_queue);
            let r = crate::simulate_with_progress(&cfg, Some(&mut sink), &mut progress)?;
            sink.finish().with_context(|| format!("cannot write trace file {}", path.display()))?;
            r
        }
        None => crate::simulate_with_progress(&cfg, None, &mut progress)?,
    };
    if args.json {
        serde_json::to_writer(&mut *out, &report)?;
        writeln!(out)?;
    } else {
        out.write_all(summary(&report).as_bytes())?;
    }
    Ok(())
}

/// Rate-limited progress lines for a long run (stderr, never the report's stdout): the first
/// after [`ProgressPrinter::FIRST_S`] seconds of wall time, then at intervals that double up
/// to a minute, so a run prints a handful of lines in its first minutes and one a minute
/// after.
#[derive(Clone, Debug)]
pub struct ProgressPrinter {
    next_s: f64,
    interval_s: f64,
    command: &'static str,
}

impl Default for ProgressPrinter {
    fn default() -> Self {
        Self::new("coapcc simulate")
    }
}

impl ProgressPrinter {
    /// Wall-clock seconds before the first line.
    pub const FIRST_S: f64 = 3.0;
    /// Longest interval between two lines, seconds.
    pub const MAX_INTERVAL_S: f64 = 60.0;

    /// A printer whose lines start with `command` (`coapcc mesh`).
    pub fn new(command: &'static str) -> Self {
        ProgressPrinter { next_s: Self::FIRST_S, interval_s: Self::FIRST_S, command }
    }

    /// The line to print at `elapsed_s` seconds into the run, if one is due.
    pub fn line(&mut self, elapsed_s: f64, p: &crate::Progress) -> Option<String> {
        if elapsed_s < self.next_s {
            return None;
        }
        self.interval_s = (self.interval_s * 2.0).min(Self::MAX_INTERVAL_S);
        self.next_s = elapsed_s + self.interval_s;
        Some(format!(
            "{}: {elapsed_s:.0} s: simulated {:.1} s, {}/{} flows finished, {} events",
            self.command, p.sim_time_s, p.finished, p.flows, p.events
        ))
    }
}
#[cfg(test)]
mod tests;
