//! The simulation configuration: one schema, every field documented with its default and the
//! ambiguity (AMBIG-*) it resolves, validated before a run, printable in full.
//!
//! `AMBIG-Tn` refers to the ambiguity register of the testbed specification
//! (`testbed-and-workloads.md` §8), plain `AMBIG-n` to that of the UDP congestion-control
//! specification (§10).

//!
//! The parts: the run's configuration ([`SimConfig`], here, with its resolution, time bound,
//! event budget and memory estimate), its sections (`sections`), the workloads' kinds and
//! the message workload's parameters (`workload`), the checks (`validate`), the errors
//! (`error`) and the algorithm specs' composition (`specs`).

use coapcc_cc::CongestionControl;
use serde::{Deserialize, Serialize};

use crate::algorithms::{CustomAlgorithms, GroupAlg};
use crate::link::StageConfig;

mod error;
mod sections;
mod specs;
mod validate;
mod workload;

pub use error::ConfigError;
pub(crate) use error::{invalid, mesh_error};
pub use sections::*;
pub use specs::{compose_spec, profile_params, split_label};
pub use workload::{EventDist, MessagesConfig, UnitMode, WorkloadKind};

/// Default bottleneck buffer, bytes, both directions (28 200 B), defined by the link crate.
pub use crate::link::DEFAULT_BUFFER_BYTES;

/// Default algorithm of a group: Default CoAP with RFC 7252's parameters (an algorithm name
/// alone means its specification's defaults; a preset is asked for explicitly).
pub const DEFAULT_CC: &str = "default";

/// A complete simulation configuration. Missing fields take their defaults, unknown fields
/// are rejected.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimConfig {
    /// Master seed (default 1). Every random process draws from its own stream of it, so a run
    /// is a pure function of (configuration, seed).
    pub seed: u64,
    /// Client populations (default: one group of 1 client running `default`, RFC 7252's
    /// parameters). Client indices are assigned group by group.
    pub groups: Vec<GroupConfig>,
    /// What every client does.
    pub workload: WorkloadConfig,
    /// The constrained link.
    pub link: LinkConfig,
    /// Where the client groups sit (default: all behind `link`, the testbed's dumbbell). Left
    /// out of the serialised form when it is the default.
    #[serde(skip_serializing_if = "TopologyConfig::is_default")]
    pub topology: TopologyConfig,
    /// Message encoding, i.e. packet sizes (AMBIG-T5).
    pub coap: CoapConfig,
    /// The CoAP server.
    pub server: ServerConfig,
    /// Metric definitions.
    pub metrics: MetricsConfig,
    /// Which implementation of the clients and the server runs (default `compact`). Left
    /// out of the serialised form when it is the default, so compact reports are unchanged.
    #[serde(skip_serializing_if = "EndpointModelConfig::is_default")]
    pub endpoint: EndpointModelConfig,
    /// What carries CoAP (default `udp`). With `tcp`, each group's `cc` is a TCP congestion
    /// control (`newreno[:key=value,...]`, `bbr[:...]`, `coapcc_tcp::TcpCcConfig`). Left out
    /// of the serialised form when it is the default, so UDP reports are unchanged.
    #[serde(skip_serializing_if = "Transport::is_udp")]
    pub transport: Transport,
    /// Bound on simulated time, seconds (default 100 000 s ≈ 28 h, far beyond any published
    /// workload: 400 clients with the 1.41 MB buffer finish in well under an hour). The
    /// default scales with the work: a population whose exchanges need longer than 5 000 s
    /// of serialisation on the bottleneck gets 20 times that
    /// ([`SimConfig::scaled_time_bound`]; the resolved configuration shows the bound used), so
    /// the bound is reached only by a population that cannot finish. A run reaching it stops
    /// and reports `truncated: true`; no run can hang.
    pub max_sim_time_s: f64,
    /// Budget of simulation events (packet deliveries, timer expiries, ...). A run that needs
    /// more is refused with an error naming the budget (an impossible configuration, such as
    /// a 1 ns ACK_TIMEOUT, would otherwise run for hours). Default (absent):
    /// [`SimConfig::event_budget`], `DEFAULT_EVENTS_BASE + DEFAULT_EVENTS_PER_EXCHANGE` x
    /// clients x exchanges. Left out of the serialised form when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_events: Option<u64>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            seed: 1,
            groups: vec![GroupConfig { cc: DEFAULT_CC.into(), clients: 1 }],
            workload: WorkloadConfig::default(),
            link: LinkConfig::default(),
            topology: TopologyConfig::default(),
            coap: CoapConfig::default(),
            server: ServerConfig::default(),
            metrics: MetricsConfig::default(),
            endpoint: EndpointModelConfig::default(),
            transport: Transport::Udp,
            max_sim_time_s: DEFAULT_MAX_SIM_TIME_S,
            max_events: None,
        }
    }
}

/// Upper bound on the total number of clients.
pub const MAX_CLIENTS: u64 = 1_000_000;

/// The default bound on simulated time, seconds (scaled up for large populations:
/// [`SimConfig::scaled_time_bound`]).
pub const DEFAULT_MAX_SIM_TIME_S: f64 = 100_000.0;

/// Fixed part of the default event budget ([`SimConfig::event_budget`]).
pub const DEFAULT_EVENTS_BASE: u64 = 10_000_000;

/// Events per exchange of the default event budget: an exchange takes about 4 events without
/// loss (at most 7 per exchange over the whole regression matrix: congestion, link errors,
/// 1-3 s paths, separate responses), about 60 with MAX_RETRANSMIT 20 and every copy lost; 200
/// leaves room for several replaced failures per exchange.
pub const DEFAULT_EVENTS_PER_EXCHANGE: u64 = 200;

/// Largest estimated memory of a run, bytes (8 GiB; [`SimConfig::memory_estimate`]).
pub const MAX_MEMORY_BYTES: u64 = 8 << 30;

/// The smallest initial retransmission timer (ACK_TIMEOUT) the simulator runs, seconds: below
/// it every copy times out before a packet can cross any link, and the run only retransmits.
pub const MIN_ACK_TIMEOUT_S: f64 = 1e-3;

impl SimConfig {
    /// The configuration with every group's `cc` in canonical, fully resolved form (what a
    /// report prints).
    pub fn resolved(&self) -> Result<SimConfig, ConfigError> {
        self.resolved_with(&CustomAlgorithms::new())
    }

    /// As [`SimConfig::resolved`]; a custom algorithm's name stays as given.
    pub fn resolved_with(&self, custom: &CustomAlgorithms) -> Result<SimConfig, ConfigError> {
        if self.transport == Transport::Tcp {
            let tcp = crate::engine::tcp_configs(self)?;
            let mut c = self.clone();
            for (g, t) in c.groups.iter_mut().zip(&tcp) {
                g.cc = match split_label(&g.cc).0 {
                    Some(label) => format!("{label}={t}"),
                    None => t.to_string(),
                };
            }
            return Ok(c);
        }
        let algs = self.group_algorithms(custom)?;
        let mut c = self.with_messages_defaults();
        c.max_sim_time_s = self.scaled_time_bound();
        for (g, a) in c.groups.iter_mut().zip(&algs) {
            if let GroupAlg::Registry(a) = a {
                g.cc = match split_label(&g.cc).0 {
                    Some(label) => format!("{label}={a}"),
                    None => a.to_string(),
                };
            }
        }
        Ok(c)
    }

    /// The bound on simulated time the run uses: `max_sim_time_s` as given, except that the
    /// default ([`DEFAULT_MAX_SIM_TIME_S`]) grows to 20 times the serialisation time of every
    /// exchange's request and response (with the stage's per-packet overhead) on the first
    /// rate stage of the busier direction, when that
    /// is longer (capped at 1e9 s). Small populations keep 100 000 s.
    pub fn scaled_time_bound(&self) -> f64 {
        // An open-loop workload runs to the bound: it is the run's duration.
        if self.max_sim_time_s != DEFAULT_MAX_SIM_TIME_S || self.workload.kind.is_messages() {
            return self.max_sim_time_s;
        }
        // Seconds to serialise one packet of `bytes` on the first rate stage of `chain`.
        let serialise = |chain: &[StageConfig], bytes: u32| {
            chain.iter().find_map(|s| match s {
                StageConfig::Rate(r) if r.bits_per_s > 0 => {
                    Some((bytes as f64 + r.per_packet_overhead_bytes as f64) * 8.0 / r.bits_per_s as f64)
                }
                _ => None,
            })
        };
        let work: f64 = self.groups.iter().map(|g| g.clients as f64).sum::<f64>() * self.workload.exchanges as f64;
        let up = serialise(&self.link.uplink, self.coap.request_bytes()).unwrap_or(0.0);
        let down = serialise(&self.link.downlink, self.coap.response_bytes()).unwrap_or(0.0);
        (20.0 * work * up.max(down)).clamp(DEFAULT_MAX_SIM_TIME_S, 1e9)
    }

    /// The event budget of the run: `max_events`, or by default
    /// [`DEFAULT_EVENTS_BASE`] + [`DEFAULT_EVENTS_PER_EXCHANGE`] x clients x exchanges, where a
    /// `bulk:BYTES` transfer counts at least one exchange per 256 bytes (a Block2 block, or a
    /// TCP segment at the default MTU), so that large transfers fit.
    pub fn event_budget(&self) -> u64 {
        if self.workload.kind.is_messages() {
            // An open-loop workload runs for `max_sim_time_s`, which bounds it.
            return self.max_events.unwrap_or(u64::MAX);
        }
        self.max_events.unwrap_or_else(|| {
            let exchanges = match self.workload.kind {
                WorkloadKind::Bulk(bytes) => (self.workload.exchanges as u64).max(bytes.div_ceil(256)),
                _ => self.workload.exchanges as u64,
            };
            let work = self.groups.iter().map(|g| g.clients as u64).sum::<u64>().saturating_mul(exchanges);
            // Over a mesh every hop of every copy is several MAC events (CCA, frame, ACK).
            let per_exchange = match &self.topology.mesh {
                None => DEFAULT_EVENTS_PER_EXCHANGE,
                Some(m) => {
                    let nodes =
                        coapcc_mesh::topology::Topology::parse(&m.topology, m.spacing_m).map_or(64, |t| t.len());
                    DEFAULT_EVENTS_PER_EXCHANGE * (1 + nodes as u64)
                }
            };
            DEFAULT_EVENTS_BASE.saturating_add(per_exchange.saturating_mul(work))
        })
    }

    /// This configuration with the message workload's parameters at their defaults where
    /// absent (a message workload's resolved form).
    fn with_messages_defaults(&self) -> SimConfig {
        let mut c = self.clone();
        if c.workload.kind.is_messages() && c.workload.messages.is_none() {
            c.workload.messages = Some(MessagesConfig::default());
        }
        c
    }

    /// A rough upper estimate of the run's memory, bytes: per client (the compact model's
    /// client record and timers, about 1 KB; a real endpoint pair of the full model, about
    /// 12 KB, measured at 100 000 clients) plus a 40-byte record per exchange.
    pub fn memory_estimate(&self) -> u64 {
        let clients: u64 = self.groups.iter().map(|g| g.clients as u64).sum();
        if let Some(mc) = self.workload.messages.as_ref().filter(|_| self.workload.kind.is_messages()) {
            // Per client, and 40 bytes per exchange (kept to the end) for every unit of every
            // message the workload generates within the run.
            let d = self.max_sim_time_s;
            let (messages, largest) = match self.workload.kind {
                WorkloadKind::Periodic { load_kbps } => {
                    let period = clients.max(1) as f64 * mc.message_bytes as f64 * 8.0 / (load_kbps * 1e3);
                    (d / period, mc.message_bytes)
                }
                WorkloadKind::Events { tb_s, size_bytes } => {
                    (d / tb_s + d / mc.background_period_s, size_bytes.max(mc.background_bytes))
                }
                _ => (0.0, 0),
            };
            let units = if mc.unit_mode == UnitMode::Message { 1 } else { largest.div_ceil(mc.unit_bytes.max(1)) };
            let exchanges = ((messages + 1.0) * units as f64).min(1e15) as u64;
            return clients.saturating_mul(1_024u64.saturating_add(exchanges.saturating_mul(40)));
        }
        let per_client = match self.endpoint.model {
            EndpointModel::Compact => 1_024,
            EndpointModel::Full => 12 * 1_024,
        };
        clients.saturating_mul(per_client + 40 * self.workload.exchanges as u64)
    }

    /// Total number of clients.
    pub fn total_clients(&self) -> u32 {
        self.groups.iter().map(|g| g.clients).sum()
    }

    /// Largest MAX_RETRANSMIT over the groups (sizes the retransmission histogram).
    pub fn max_retransmit(&self) -> Result<u32, ConfigError> {
        Ok(self.algorithms()?.iter().map(|a| a.build().max_retransmit()).max().unwrap_or(0))
    }
}

#[cfg(test)]
mod tests;
