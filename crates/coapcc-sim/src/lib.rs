//! # coapcc-sim: a deterministic simulator of the Helsinki constrained-link testbed
//!
//! Reproduces the short-lived CoAP workloads of Järvinen et al. (ANRW 2018) and the FASOR
//! paper (GLOBECOM 2018): N CoAP clients behind an NB-IoT-like link (60 kbit/s up, 30 kbit/s
//! down, 200/400 ms, byte-limited buffers, optional link errors) talking to one server, each
//! client running a congestion-control algorithm of [`coapcc_cc`].
//!
//! ```
//! use coapcc_sim::{simulate, SimConfig};
//! let mut cfg = SimConfig::default();          // CAL-1: one client, 50 exchanges
//! cfg.seed = 3;
//! let report = simulate(&cfg).unwrap();
//! let fct = report.flows[0].fct_s.unwrap();
//! assert!((32.9..33.3).contains(&fct));
//! ```
//!
//! ## Map
//! - [`params`]: the parameters of a run as experiment files, sweeps and Python name them, and
//!   their one schema and check (what `coapcc.SimConfig` is made of).
//! - [`config`]: [`SimConfig`], every field with its default and the ambiguity it resolves;
//!   [`SimConfig::validate`].
//! - [`link`]: the link model (the `coapcc-link` crate), reusable outside the simulator.
//! - [`message_sizes`]: exact message sizes. [`workload`]: what clients do: closed-loop flows
//!   (continuous, random, bulk) and the open-loop message workload (periodic, events).
//! - [`report`]: [`SimReport`] and its metrics. [`trace`]: optional per-exchange trace (and,
//!   on request, the queue of every link direction over time).
//! - [`cli`]: the `coapcc simulate` arguments and runner; [`mesh_command`]: `coapcc mesh`, a
//!   front for the simulator with a mesh topology and the message workload.
//! - Endpoint models ([`EndpointModel`]): the simulator's compact clients and server
//!   (default), or the real `coapcc_proto::endpoint::Endpoint`s exchanging encoded datagrams
//!   (`full`), with identical results wherever both model the same thing. The engine itself
//!   (protocols, workloads and their observers, one loop) is private; `docs/architecture.md`
//!   maps it.
//!
//! The model, its exactness arguments and the mapping to the papers are in
//! `docs/simulator.md`.
#![deny(missing_docs)]
// Denied everywhere; the two exceptions are hints that never change a result: the cache
// prefetch in `cache_hints::prefetch_line` and the huge-page advice in `cache_hints::madvise_huge`.
#![deny(unsafe_code)]

pub mod algorithms;
pub mod cli;
pub mod config;
mod engine;
pub mod message_sizes;
/// The link model ([`coapcc_link`]), reusable outside the simulator (pure, clock-injected).
pub use coapcc_link as link;
mod cache_hints;
pub mod mesh_command;
pub mod params;
pub mod report;
mod timer_queue;
pub mod trace;
pub mod workload;

pub use algorithms::CustomAlgorithms;
pub use coapcc_proto::endpoint::{Controller, ControllerFactory, FnFactory};
pub use config::{
    AccessLinkConfig, CoapConfig, ConfigError, DuplicateMode, EndpointModel, EndpointModelConfig, EventDist,
    FailedPolicy, GroupConfig, LinkConfig, MessagesConfig, MetricsConfig, ServerConfig, SimConfig, TopologyConfig,
    Transport, UnitMode, UnnecessaryDef, WorkloadConfig, WorkloadKind,
};
pub use engine::{
    STREAM_DITHER, STREAM_DOWNLINK, STREAM_ENDPOINT, STREAM_MESH_DITHER, STREAM_MESSAGES, STREAM_SERVER,
    STREAM_TCP_CLIENT, STREAM_TCP_SERVER, STREAM_UPLINK, STREAM_WORKLOAD,
};
pub use report::{
    AccessLinkReport, FlowReport, GroupReport, LinkReport, LinksReport, MeshLinkReport, MessageClientReport,
    MessagesReport, SimReport, Summary,
};
pub use trace::{ExchangeTrace, JsonLinesTrace, QueueTrace, TraceSink, UnitTrace};

/// Run one simulation. Validates the configuration first (no run starts with an invalid
/// one); the report's `config` is the fully resolved configuration.
pub fn simulate(cfg: &SimConfig) -> Result<SimReport, ConfigError> {
    run(cfg, None)
}

/// As [`simulate`], sending a record of every finished exchange to `trace`.
pub fn simulate_with_trace(cfg: &SimConfig, trace: &mut dyn TraceSink) -> Result<SimReport, ConfigError> {
    run(cfg, Some(trace))
}

/// As [`simulate`] (or [`simulate_with_trace`] when `trace` is given), where a group's `cc`
/// may also name an algorithm of `custom` (an algorithm written outside the registry:
/// a [`ControllerFactory`]). Registry groups run exactly as in [`simulate`].
pub fn simulate_custom(
    cfg: &SimConfig,
    custom: &CustomAlgorithms,
    trace: Option<&mut dyn TraceSink>,
) -> Result<SimReport, ConfigError> {
    run_with(cfg, custom, trace, None)
}

/// Where a running simulation is, for a progress display ([`simulate_with_progress`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Events processed so far.
    pub events: u64,
    /// Simulated time reached, seconds.
    pub sim_time_s: f64,
    /// Flows finished so far.
    pub finished: usize,
    /// Flows of the run.
    pub flows: usize,
}

/// As [`simulate`] (or [`simulate_with_trace`]), calling `progress` about every million
/// events (a few times a second at most; the results are the same). The callback decides what
/// to show and when (`coapcc simulate` prints a line on stderr once a run takes more than a
/// few seconds).
pub fn simulate_with_progress<'t>(
    cfg: &SimConfig,
    trace: Option<&'t mut dyn TraceSink>,
    progress: &'t mut dyn FnMut(&Progress),
) -> Result<SimReport, ConfigError> {
    run_with(cfg, &CustomAlgorithms::new(), trace, Some(progress))
}

fn run(cfg: &SimConfig, trace: Option<&mut dyn TraceSink>) -> Result<SimReport, ConfigError> {
    run_with(cfg, &CustomAlgorithms::new(), trace, None)
}

fn run_with<'t>(
    cfg: &SimConfig,
    custom: &CustomAlgorithms,
    trace: Option<&'t mut dyn TraceSink>,
    progress: Option<&'t mut dyn FnMut(&Progress)>,
) -> Result<SimReport, ConfigError> {
    use algorithms::GroupAlg;
    let t0 = std::time::Instant::now();
    let mut resolved = cfg.resolved_with(custom)?;
    if resolved.transport == Transport::Tcp {
        let mut report = engine::run_tcp(resolved, trace, progress)?;
        report.wall_s = t0.elapsed().as_secs_f64();
        return Ok(report);
    }
    if matches!(resolved.workload.kind, WorkloadKind::Bulk(_)) {
        // Block2 is the real endpoint's: bulk transfers run on the full endpoint model.
        resolved.endpoint.model = EndpointModel::Full;
    }
    let algs = resolved.group_algorithms(custom)?;
    let registry_only = algs.iter().all(|a| matches!(a, GroupAlg::Registry(_)));
    let mut report = if resolved.workload.kind.is_messages() {
        // The message workload runs on the compact model (the configuration check says so).
        if registry_only {
            engine::run_coap::<engine::Compact<coapcc_cc::Algorithm>, engine::Messages>(
                resolved, &algs, trace, progress,
            )?
        } else {
            engine::run_coap::<engine::Compact<Controller>, engine::Messages>(resolved, &algs, trace, progress)?
        }
    } else {
        match (resolved.endpoint.model, registry_only) {
            // Every group from the registry: static dispatch (the fast path).
            (EndpointModel::Compact, true) => {
                let all_default =
                    algs.iter().all(|a| matches!(a, GroupAlg::Registry(coapcc_cc::AlgorithmConfig::Default(_))));
                if all_default {
                    // Every group a Default CoAP variant: its own (small) type.
                    engine::run_coap::<engine::Compact<coapcc_cc::default::DefaultCoap>, engine::Flows>(
                        resolved, &algs, trace, progress,
                    )?
                } else {
                    engine::run_coap::<engine::Compact<coapcc_cc::Algorithm>, engine::Flows>(
                        resolved, &algs, trace, progress,
                    )?
                }
            }
            (EndpointModel::Compact, false) => {
                engine::run_coap::<engine::Compact<Controller>, engine::Flows>(resolved, &algs, trace, progress)?
            }
            (EndpointModel::Full, _) => {
                engine::run_coap::<engine::Full, engine::Flows>(resolved, &algs, trace, progress)?
            }
        }
    };
    report.wall_s = t0.elapsed().as_secs_f64();
    Ok(report)
}
