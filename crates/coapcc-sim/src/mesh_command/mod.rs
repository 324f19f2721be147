//! The `coapcc mesh` command: a front for the simulator with a mesh topology and the message
//! workload (the Cooja scenarios of Ancillotti & Bruno): its arguments ([`MeshArgs`]), its
//! flat configuration ([`MeshRun`], turned into a [`SimConfig`](crate::SimConfig)), its report
//! ([`MeshReport`], from the simulation's report) and runner ([`run`], [`simulate`]). Never
//! exits or panics on bad input; returns one-line errors.
//!
//! ```
//! use coapcc_sim::mesh_command::{simulate, MeshRun};
//! let mut run = MeshRun::preset("ancillotti-cooja").unwrap();
//! run.topology = "grid:3".into();
//! run.traffic = "periodic:0.5".into();
//! run.duration_s = 120.0;
//! let report = simulate(&run, None).unwrap();
//! assert_eq!(report.clients.len(), 7);     // every node but the root and the sink
//! assert!(report.plr_mean < 0.2);
//! ```

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::{anyhow, Context};
use clap::Args;

use crate::config::ConfigError;
use crate::trace::{JsonLinesTrace, TraceSink};

mod config;
mod report;

pub use config::{AppConfig, MeshRun, ANCILLOTTI_COAP_CC, ANCILLOTTI_COCOA_PLUS, DEFAULT_CC};
pub use report::{ClientReport, MeshReport, TopologyReport};

/// Run `run` (a trace of every unit to `trace`, when given): its report.
pub fn simulate(run: &MeshRun, trace: Option<&mut dyn TraceSink>) -> Result<MeshReport, ConfigError> {
    let cfg = run.to_sim()?;
    let report = match trace {
        None => crate::simulate(&cfg)?,
        Some(t) => crate::simulate_with_trace(&cfg, t)?,
    };
    mesh_report(run, report)
}

fn mesh_report(run: &MeshRun, report: crate::SimReport) -> Result<MeshReport, ConfigError> {
    MeshReport::new(run, report)
        .ok_or_else(|| ConfigError::Invalid { field: "topology".into(), problem: "not a mesh run".into() })
}

/// [`simulate`], calling `progress` now and then (as [`crate::simulate_with_progress`]).
pub fn simulate_with_progress<'t>(
    run: &MeshRun,
    trace: Option<&'t mut dyn TraceSink>,
    progress: &'t mut dyn FnMut(&crate::Progress),
) -> Result<MeshReport, ConfigError> {
    let cfg = run.to_sim()?;
    mesh_report(run, crate::simulate_with_progress(&cfg, trace, progress)?)
}

/// Arguments of `coapcc mesh`. Flags override `--config`, which overrides `--preset`.
#[derive(Args, Clone, Debug, Default, PartialEq)]
pub struct MeshArgs {
    /// Topology: grid:N | grid:NxM | chain:N | ring:N | dumbbell:K,M | file:PATH (lines `x y`,
    /// metres). Default grid:6.
    #[arg(long, value_name = "SPEC")]
    pub topology: Option<String>,
    /// Congestion control of every client, NAME[:key=value,...]. Default
    /// default:preset=ancillotti-cooja.
    #[arg(long = "cc", value_name = "SPEC")]
    pub cc: Option<String>,
    /// periodic:LOAD_KBPS (network-wide) or events:TB_S,SIZE_B. Default periodic:1.
    #[arg(long, value_name = "PATTERN")]
    pub traffic: Option<String>,
    /// Size of a periodic message in bytes (default 96).
    #[arg(long, value_name = "B")]
    pub message_bytes: Option<u32>,
    /// Simulated seconds (default 10800).
    #[arg(long, value_name = "S")]
    pub duration_s: Option<f64>,
    /// Master seed (default 1).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Start from a preset: ancillotti-cooja (the default; Contiki CSMA, no duty cycling),
    /// makarem2021 (ContikiMAC-like duty cycling) or ieee802154 (the standard CSMA/CA).
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
    /// Read a full configuration (JSON, as printed by --print-config).
    #[arg(long, value_name = "FILE.json")]
    pub config: Option<PathBuf>,
    /// Set any parameter, e.g. radio.capture_db=6, mac.queue_packets=4,
    /// app.unit_mode=block1 (repeatable; see --print-config for every key).
    #[arg(long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<String>,
    /// Print the report as one JSON object instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Write one JSON line per finished exchange to FILE.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Print the fully resolved configuration as JSON and exit.
    #[arg(long)]
    pub print_config: bool,
}

impl MeshArgs {
    /// The configuration these arguments describe (checked).
    pub fn to_config(&self) -> anyhow::Result<MeshRun> {
        let mut cfg = MeshRun::preset(self.preset.as_deref().unwrap_or("ancillotti-cooja")).map_err(|e| anyhow!(e))?;
        if let Some(p) = &self.config {
            let text = std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?;
            cfg = serde_json::from_str(&text).with_context(|| format!("bad configuration {}", p.display()))?;
        }
        if let Some(v) = &self.topology {
            cfg.topology = v.clone();
        }
        if let Some(v) = &self.cc {
            cfg.cc = v.clone();
        }
        if let Some(v) = &self.traffic {
            cfg.traffic = v.clone();
        }
        if let Some(v) = self.message_bytes {
            cfg.message_bytes = v;
        }
        if let Some(v) = self.duration_s {
            cfg.duration_s = v;
        }
        if let Some(v) = self.seed {
            cfg.seed = v;
        }
        for p in &self.params {
            let (k, v) = p.split_once('=').ok_or_else(|| anyhow!("--param {p:?}: expected KEY=VALUE"))?;
            cfg.set(k, v).map_err(|e| anyhow!(e))?;
        }
        cfg.to_sim().map_err(|e| anyhow!(e))?;
        Ok(cfg)
    }
}

/// Run `coapcc mesh`, writing the summary or JSON to `out`.
pub fn run(args: &MeshArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let cfg = args.to_config()?;
    if args.print_config {
        serde_json::to_writer_pretty(&mut *out, &cfg)?;
        writeln!(out)?;
        return Ok(());
    }
    // Progress lines on stderr for a long run, as `coapcc simulate` prints them.
    let t0 = std::time::Instant::now();
    let mut printer = crate::cli::ProgressPrinter::new("coapcc mesh");
    let mut progress = |p: &crate::Progress| {
        if let Some(line) = printer.line(t0.elapsed().as_secs_f64(), p) {
            let _ = writeln!(std::io::stderr(), "{line}");
        }
    };
    let report = match &args.trace {
        None => simulate_with_progress(&cfg, None, &mut progress)?,
        Some(p) => {
            let f = File::create(p).with_context(|| format!("cannot create trace file {}", p.display()))?;
            let mut sink = JsonLinesTrace::new(BufWriter::new(f));
            let r = simulate_with_progress(&cfg, Some(&mut sink), &mut progress)?;
            sink.finish().map_err(|e| anyhow!("cannot write the trace: {e}"))?;
            r
        }
    };
    if args.json {
        serde_json::to_writer(&mut *out, &report)?;
        writeln!(out)?;
    } else {
        write_summary(&report, out)?;
    }
    Ok(())
}

/// Human-readable summary of a report.
pub fn write_summary(r: &MeshReport, out: &mut dyn Write) -> std::io::Result<()> {
    let c = &r.config;
    writeln!(
        out,
        "mesh {} ({} nodes, root {}, sink {}), {} clients, traffic {}, {} s, seed {}",
        c.topology,
        r.topology.nodes,
        r.topology.root,
        r.topology.sink,
        r.clients.len(),
        c.traffic,
        c.duration_s,
        c.seed
    )?;
    writeln!(out, "cc {}", r.cc_resolved)?;
    writeln!(out, "PLR mean {:.4}  max {:.4}", r.plr_mean, r.plr_max)?;
    if let (Some(m), Some(x)) = (r.plr_event_mean, r.plr_event_max) {
        writeln!(out, "event PLR mean {m:.4}  max {x:.4}")?;
    }
    let l = &r.loss_causes;
    let n = &l.net;
    writeln!(
        out,
        "losses: no-caching {}  give-up {}  | packets: buffer overflow {}  neighbour queues {}  MAC no-ACK {}  \
         channel access {}  air collision {}  air fading {}  FIFO overflow {}",
        l.no_caching,
        l.coap_give_up,
        n.buffer_overflow,
        n.neighbor_queues_full,
        n.mac_no_ack,
        n.mac_channel_access,
        n.air_collision,
        n.air_fading,
        n.fifo_overflow
    )?;
    writeln!(
        out,
        "retransmissions/frame mean {:.3} max {:.3}; early retransmissions mean {:.3} max {:.3}",
        r.retransmissions_per_frame_mean,
        r.retransmissions_per_frame_max,
        r.early_retransmissions_mean,
        r.early_retransmissions_max
    )?;
    for (name, s) in [("RTO first tx", &r.rto_first_s), ("strong RTO", &r.rtt_strong_s), ("weak RTO", &r.rtt_weak_s)] {
        if let Some(s) = s {
            writeln!(
                out,
                "{name}: n {} mean {:.3} s  p10 {:.3}  median {:.3}  p90 {:.3}  max {:.3}",
                s.count, s.mean, s.p10, s.median, s.p90, s.max
            )?;
        }
    }
    writeln!(
        out,
        "MAC: {} data tx, {} ACKed, {} collisions, {} busy CCAs; {} events in {:.3} s wall",
        r.mac.data_tx, r.mac.acked, r.mac.collisions, r.mac.cca_busy, r.events, r.wall_s
    )?;
    Ok(())
}
