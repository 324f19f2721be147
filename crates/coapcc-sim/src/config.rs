//! The simulation configuration: one schema, every field documented with its default and the
//! ambiguity (AMBIG-*) it resolves, validated before a run, printable in full.
//!
//! `AMBIG-Tn` refers to the ambiguity register of the testbed specification
//! (`testbed-and-workloads.md` §8), plain `AMBIG-n` to that of the UDP congestion-control
//! specification (§10).

use coapcc_cc::{AlgorithmConfig, CongestionControl};
use serde::{Deserialize, Serialize};

use crate::algorithms::{CustomAlgorithms, GroupAlg};
use crate::coap;
use crate::link::{self, StageConfig};

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

/// The topology, as data: every client sits behind one access link (an uplink and a downlink
/// chain) to the one server. Groups not placed on an extra access link share `link` — with no
/// extra access link this is the testbed's dumbbell. Each extra access link has its own
/// elements and random streams (uplink element i of extra link k ≥ 1: stream
/// `0x100 + 0x10000·k + i`, downlink `0x200 + 0x10000·k + i`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TopologyConfig {
    /// Extra access links (default none).
    pub access_links: Vec<AccessLinkConfig>,
    /// A multi-hop IEEE 802.15.4 mesh instead of the links (default none): the server sits at
    /// the sink (`routing.sink`, node 0 by default), the clients on the other nodes except the
    /// DODAG root, client c on the c-th of them (round robin when there are more clients
    /// than nodes). Every packet crosses the shared radio medium hop by hop (CSMA/CA, MAC
    /// ACKs and retries, per-node queues); `link` is unused. Its random streams are the
    /// medium's (ids 1, 2 and 4 of the seed). Runs the compact endpoint model over UDP.
    /// Left out of the serialised form when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mesh: Option<coapcc_mesh::MediumConfig>,
}

impl TopologyConfig {
    /// No extra access link and no mesh: the dumbbell.
    pub fn is_default(&self) -> bool {
        self.access_links.is_empty() && self.mesh.is_none()
    }
}

/// An access link of its own for some client groups.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessLinkConfig {
    /// Indices of the groups behind it (each group sits behind at most one).
    pub groups: Vec<u32>,
    /// Client → server chain.
    pub uplink: Vec<StageConfig>,
    /// Server → client chain.
    pub downlink: Vec<StageConfig>,
}

/// Most extra access links.
pub const MAX_ACCESS_LINKS: usize = 1000;

/// A group of clients running the same algorithm (ANRW's mixed runs use two groups).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupConfig {
    /// Algorithm specification `NAME[:key=value,...]` (coapcc-cc registry). In a report's
    /// resolved configuration this is the canonical, fully resolved form.
    pub cc: String,
    /// Number of clients (may be 0 in one group, not in all).
    pub clients: u32,
}

/// Which workload the clients run: a closed-loop flow (spec §2: `continuous`, `random`,
/// `bulk`), or the open-loop message workload (`periodic`, `events`, `none`: application
/// messages arriving on their own schedule, cut into units, [`MessagesConfig`]; the mesh
/// study's workload).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    /// `exchanges` exchanges back to back, congestion-control state kept throughout.
    Continuous,
    /// The exchanges split into batches of random size; `reset()` before each batch.
    Random,
    /// One GET of a resource of this many bytes per client (`bulk:BYTES` on the command
    /// line; `exchanges` is not used). Over UDP a Block2 transfer, over TCP one RFC 8323
    /// response message.
    Bulk(u64),
    /// Continuous monitoring (`periodic:LOAD_KBPS`): `load_kbps` network-wide, every client
    /// sends a `messages.message_bytes` message every T = clients · message_bytes · 8 / load.
    Periodic {
        /// Network-wide offered load, kbit/s.
        load_kbps: f64,
    },
    /// Global event detection (`events:TB_S,SIZE_B`): on each event (mean inter-event time
    /// `tb_s`, `messages.event_dist`) every client sends `size_bytes` at once, plus one
    /// `messages.background_bytes` message every `messages.background_period_s`.
    Events {
        /// Mean time between events, seconds.
        tb_s: f64,
        /// Event message size, bytes.
        size_bytes: u32,
    },
    /// No application traffic (the clients never send).
    None,
}

impl WorkloadKind {
    /// Whether this is one of the open-loop message workloads.
    pub fn is_messages(&self) -> bool {
        matches!(self, WorkloadKind::Periodic { .. } | WorkloadKind::Events { .. } | WorkloadKind::None)
    }

    /// Parse the command line's form: `continuous`, `random`, `bulk:BYTES`,
    /// `periodic:LOAD_KBPS`, `events:TB_S,SIZE_B` or `none`.
    pub fn parse(s: &str) -> Result<WorkloadKind, String> {
        let s = s.trim();
        let (kind, arg) = match s.split_once(':') {
            Some((k, a)) => (k.trim().to_ascii_lowercase(), Some(a.trim())),
            None => (s.to_ascii_lowercase(), None),
        };
        let expected = "expected continuous, random, bulk:BYTES, periodic:LOAD_KBPS, events:TB_S,SIZE_B or none";
        match (kind.as_str(), arg) {
            ("continuous", None) => Ok(WorkloadKind::Continuous),
            ("random", None) => Ok(WorkloadKind::Random),
            ("none", None) => Ok(WorkloadKind::None),
            ("bulk", Some(n)) => match n.parse::<u64>() {
                Ok(b) if b > 0 => Ok(WorkloadKind::Bulk(b)),
                _ => Err(format!("bulk:BYTES needs a positive number of bytes, got '{n}'")),
            },
            ("bulk", None) => Err("bulk needs a size: bulk:BYTES (e.g. bulk:102400)".into()),
            ("periodic", Some(a)) => match a.parse::<f64>() {
                Ok(load_kbps) if load_kbps.is_finite() && load_kbps > 0.0 => Ok(WorkloadKind::Periodic { load_kbps }),
                _ => Err(format!("periodic:LOAD_KBPS needs a positive load in kbit/s, got '{a}'")),
            },
            ("events", Some(a)) => {
                let bad = || format!("events:TB_S,SIZE_B needs TB_S >= 0.001 and SIZE_B > 0, got '{a}'");
                let (tb, size) = a.split_once(',').ok_or_else(bad)?;
                let tb_s: f64 = tb.trim().parse().map_err(|_| bad())?;
                let size_bytes: u32 = size.trim().parse().map_err(|_| bad())?;
                if !(tb_s.is_finite() && tb_s >= 0.001) || size_bytes == 0 {
                    return Err(bad());
                }
                Ok(WorkloadKind::Events { tb_s, size_bytes })
            }
            _ => Err(format!("unknown workload '{s}': {expected}")),
        }
    }
}

impl std::fmt::Display for WorkloadKind {
    /// The command line's form ([`WorkloadKind::parse`] reads it back).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkloadKind::Continuous => write!(f, "continuous"),
            WorkloadKind::Random => write!(f, "random"),
            WorkloadKind::Bulk(b) => write!(f, "bulk:{b}"),
            WorkloadKind::Periodic { load_kbps } => write!(f, "periodic:{load_kbps}"),
            WorkloadKind::Events { tb_s, size_bytes } => write!(f, "events:{tb_s},{size_bytes}"),
            WorkloadKind::None => write!(f, "none"),
        }
    }
}

/// How a message of the message workload is cut into reliable exchanges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnitMode {
    /// Each `unit_bytes` unit is an independent Confirmable PUT (per-frame congestion
    /// control, Ancillotti & Bruno's rule).
    Frames,
    /// Each unit is one Block1 block of a PUT (adds the Block1 option to every request and
    /// response); `unit_bytes` must be a Block1 size (16..1024, a power of two).
    Block1,
    /// The whole message is one exchange (over a mesh it must fit one 802.15.4 frame).
    Message,
}

/// Distribution of the time between global events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventDist {
    /// Exponential with mean T_b (recommended; not published).
    Exponential,
    /// Exactly T_b.
    Fixed,
}

/// The message workload's parameters (`workload.kind` = `periodic`, `events` or `none`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MessagesConfig {
    /// Size of a periodic monitoring message, bytes (Ancillotti & Bruno: 96).
    pub message_bytes: u32,
    /// Unit of congestion control.
    pub unit_mode: UnitMode,
    /// Bytes of CoAP payload per unit (the study: 32).
    pub unit_bytes: u32,
    /// "No caching": a message generated while the previous one is still in flight is lost
    /// (the study). With `false` it waits in an unbounded client queue.
    pub no_caching: bool,
    /// Periodic monitoring: each client starts at a uniformly random phase in [0, T) (`true`,
    /// our reading of "asynchronous") or all at t = 0.
    pub random_phase: bool,
    /// Global events: inter-event distribution.
    pub event_dist: EventDist,
    /// Global events: background message period per client, seconds (the study: 60).
    pub background_period_s: f64,
    /// Global events: background message size, bytes (not published; default one unit).
    pub background_bytes: u32,
}

impl Default for MessagesConfig {
    fn default() -> Self {
        MessagesConfig {
            message_bytes: 96,
            unit_mode: UnitMode::Frames,
            unit_bytes: 32,
            no_caching: true,
            random_phase: true,
            event_dist: EventDist::Exponential,
            background_period_s: 60.0,
            background_bytes: 32,
        }
    }
}

/// The transport carrying CoAP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// CoAP over UDP (RFC 7252), the congestion control of `coapcc-cc`. Default.
    #[default]
    Udp,
    /// CoAP over TCP (RFC 8323) on the `coapcc-tcp` model.
    Tcp,
}

impl Transport {
    /// Whether this is the default (`udp`).
    pub fn is_udp(&self) -> bool {
        *self == Transport::Udp
    }
}

/// What a failed exchange (MAX_RETRANSMIT exhausted) means for the flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailedPolicy {
    /// The flow runs until `exchanges` exchanges *succeeded* (spec §2: "until 50 successful
    /// pairs"); a failed exchange is followed by a new one. Default.
    Replace,
    /// A failed exchange counts towards `exchanges`.
    Count,
}

/// Workload parameters (spec §2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkloadConfig {
    /// `continuous` (default) or `random`.
    pub kind: WorkloadKind,
    /// Exchanges per flow (default 50). NSTART = 1: one exchange at a time.
    pub exchanges: u32,
    /// AMBIG-T6 `batch_size_dist`: random batches are uniform integers in
    /// [`batch_min`, `batch_max`] (default 1..=10); the last is truncated to the total.
    pub batch_min: u32,
    /// See `batch_min`.
    pub batch_max: u32,
    /// AMBIG-T7 `start_jitter`: each client starts at U[0, start_jitter_ms] (default 0: all
    /// clients start at t = 0).
    pub start_jitter_ms: f64,
    /// `replace` (default) or `count`; see [`FailedPolicy`].
    pub failed_exchanges: FailedPolicy,
    /// The message workload's parameters (`periodic`, `events`, `none`; the resolved
    /// configuration of such a run always has them). Left out of the serialised form when
    /// absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<MessagesConfig>,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig {
            kind: WorkloadKind::Continuous,
            exchanges: 50,
            batch_min: 1,
            batch_max: 10,
            start_jitter_ms: 0.0,
            failed_exchanges: FailedPolicy::Replace,
            messages: None,
        }
    }
}

/// The link (both chains and the MTU): defined by the link crate, see [`crate::link`].
pub use crate::link::LinkConfig;

/// Message encoding (AMBIG-T5). Sizes are computed from the real CoAP encoding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CoapConfig {
    /// 4 (default; inferred from CAL-1) or 6: 20 or 40 bytes of IP header.
    pub ip_version: u8,
    /// Token length 0..=8 (default 1; FASOR+token's ordinal fits in it).
    pub token_len: u8,
    /// Path of the GET; one Uri-Path option per segment (default `hello`).
    pub uri_path: String,
    /// Payload of the piggybacked 2.05 response (default 60 bytes, spec §2).
    pub response_payload_bytes: u32,
    /// The clients' clock tick, ns (0: exact time, the default). With a tick, the CoAP code
    /// reads time as a tick counter, as Contiki's Erbium does (`clock_time()`, `CLOCK_SECOND`
    /// 128 on Sky and Z1: 7 812 500 ns): an exchange starts, retransmits and is acknowledged
    /// at the last tick (so RTT samples are whole ticks), and its retransmission timer (an
    /// `etimer`) expires at the first tick at or after its deadline.
    #[serde(skip_serializing_if = "is_zero")]
    pub clock_tick_ns: u64,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

impl Default for CoapConfig {
    fn default() -> Self {
        CoapConfig {
            ip_version: 4,
            token_len: 1,
            uri_path: "hello".into(),
            response_payload_bytes: 60,
            clock_tick_ns: 0,
        }
    }
}

impl CoapConfig {
    /// IP size of the request (39 B with the defaults).
    pub fn request_bytes(&self) -> u32 {
        coap::ip_len(coap::request_len(self.token_len as usize, &self.uri_path), self.ip_version) as u32
    }

    /// IP size of the response (94 B with the defaults).
    pub fn response_bytes(&self) -> u32 {
        coap::ip_len(coap::response_len(self.token_len as usize, self.response_payload_bytes as usize), self.ip_version)
            as u32
    }
}

/// AMBIG-21 `server_duplicate_mode`: what a retransmitted copy is answered with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DuplicateMode {
    /// Answer each copy, echoing the ordinal of the copy answered (default).
    AnswerEachCopy,
    /// Replay the cached response, which echoes the ordinal of the first copy received.
    ReplayCached,
}

/// The server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// AMBIG-T8 `server_delay`: processing delay before the response is sent, ms (default 0).
    pub processing_delay_ms: f64,
    /// AMBIG-21 (default `answer_each_copy`). Every copy gets a response either way (RFC 7252
    /// §4.5); only the echoed ordinal differs, which matters to copy-identifying algorithms.
    pub duplicate_mode: DuplicateMode,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig { processing_delay_ms: 0.0, duplicate_mode: DuplicateMode::AnswerEachCopy }
    }
}

/// AMBIG-T9 (= AMBIG-16) `unnecessary_def`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnnecessaryDef {
    /// Copy k is unnecessary iff an earlier copy j < k reached the server and the response
    /// to copy j reached the client, at any time (default, spec §6.2).
    ResponseDelivered,
    /// Only the first condition: an earlier copy reached the server.
    RequestDelivered,
}

/// Metric definitions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// AMBIG-T9 (default `response_delivered`).
    pub unnecessary_def: UnnecessaryDef,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig { unnecessary_def: UnnecessaryDef::ResponseDelivered }
    }
}

/// The implementation of the clients and the server (`docs/simulator.md`, "Endpoint models").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndpointModel {
    /// The simulator's own compact model: packets are small structs, sizes come from
    /// [`crate::coap`]. Default; the fastest.
    #[default]
    Compact,
    /// One real `coapcc_proto::endpoint::Endpoint<u32>` per client and one for the server
    /// (peers are node ids), exchanging real encoded datagrams; a packet's size is the
    /// datagram's length + 8 (UDP) + the IP header.
    Full,
}

/// Endpoint model selection.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EndpointModelConfig {
    /// `compact` (default) or `full`.
    pub model: EndpointModel,
}

impl EndpointModelConfig {
    /// Whether this is the default (`compact`).
    pub fn is_default(&self) -> bool {
        *self == EndpointModelConfig::default()
    }
}

/// Why a configuration cannot run. `Display` is one line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A group's algorithm specification does not parse.
    #[error("groups[{group}].cc: {message}")]
    Algorithm {
        /// Group index.
        group: usize,
        /// The registry's one-line message (lists the valid choices).
        message: String,
    },
    /// A field has an unusable value.
    #[error("{field}: {problem}")]
    Invalid {
        /// Dotted path of the field.
        field: String,
        /// What is wrong.
        problem: String,
    },
}

impl ConfigError {
    /// The dotted key of the field at fault (`groups[1].cc`, `workload.kind`,
    /// `topology.mesh.mac.min_be`).
    pub fn key(&self) -> String {
        match self {
            ConfigError::Algorithm { group, .. } => format!("groups[{group}].cc"),
            ConfigError::Invalid { field, .. } => field.clone(),
        }
    }

    /// What is wrong, without the key.
    pub fn problem(&self) -> &str {
        match self {
            ConfigError::Algorithm { message, .. } => message,
            ConfigError::Invalid { problem, .. } => problem,
        }
    }
}

pub(crate) fn invalid(field: &str, problem: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { field: field.into(), problem: problem.into() }
}

/// A mesh network's error, keyed within `topology.mesh`.
pub(crate) fn mesh_error(e: coapcc_mesh::MediumError) -> ConfigError {
    ConfigError::Invalid { field: format!("topology.mesh.{}", e.key), problem: e.problem }
}

/// A finite number in [0, `hi`], with the bound worded as Python words it (`must be finite`,
/// `must be >= 0`, `must be <= hi`).
fn check_range(field: &str, v: f64, hi: f64) -> Result<(), ConfigError> {
    if !v.is_finite() {
        return Err(invalid(field, format!("must be finite, got {v}")));
    }
    if v < 0.0 {
        return Err(invalid(field, format!("must be >= 0, got {v}")));
    }
    if v > hi {
        return Err(invalid(field, format!("must be <= {hi:e}, got {v}")));
    }
    Ok(())
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

/// The spec a group runs with run-wide settings applied, in the order of every front end
/// (Python's `compose_spec`): `[LABEL=]NAME:preset=P,<shared>,<the spec's own items>`. A preset
/// written in `spec` wins over `preset`; the spec's own items win over the `shared`
/// transmission parameters ([`coapcc_cc::SHARED_PARAMS`] names, written with the algorithm's
/// own key for each). An unknown algorithm is returned unchanged (validation reports it).
pub fn compose_spec(spec: &str, preset: Option<&str>, shared: &[(&str, String)]) -> Result<String, String> {
    if preset.is_none() && shared.is_empty() {
        return Ok(spec.to_string());
    }
    let (label, spec) = split_label(spec);
    let (name, params) = spec.split_once(':').unwrap_or((spec, ""));
    let name = name.trim();
    let Ok(base) = AlgorithmConfig::parse(name) else { return Ok(spec.to_string()) };
    let own: Vec<&str> = if params.is_empty() { Vec::new() } else { params.split(',').map(str::trim).collect() };
    let is_preset = |p: &str| p.split_once('=').is_some_and(|(k, _)| k.trim().eq_ignore_ascii_case("preset"));
    let mut parts: Vec<String> = own.iter().filter(|p| is_preset(p)).map(|p| p.to_string()).collect();
    if parts.is_empty() {
        parts.extend(preset.map(|p| format!("preset={p}")));
    }
    for (k, v) in shared {
        let p = base.shared_param(k).map_err(|e| e.to_string())?;
        parts.push(format!("{}={v}", p.key));
    }
    parts.extend(own.iter().filter(|p| !is_preset(p)).map(|p| p.to_string()));
    let label = label.map_or(String::new(), |l| format!("{l}="));
    Ok(format!("{label}{name}:{}", parts.join(",")))
}

/// The shared transmission parameters of testbed profile `name` (a reproduction preset):
/// its ACK_TIMEOUT, ACK_RANDOM_FACTOR and MAX_RETRANSMIT, as Python's `profile_params`.
pub fn profile_params(name: &str) -> Result<Vec<(&'static str, String)>, String> {
    let valid = || coapcc_cc::Preset::ALL.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ");
    if coapcc_cc::Preset::parse(name).is_none() {
        return Err(format!("unknown profile '{name}'; valid: {}", valid()));
    }
    let cfg = AlgorithmConfig::parse(&format!("default:preset={}", name.trim())).map_err(|e| e.to_string())?;
    Ok(["ack_timeout", "ack_random_factor", "max_retransmit"]
        .into_iter()
        .filter_map(|k| cfg.shared_value(k).map(|v| (k, v.to_string())))
        .collect())
}

/// `LABEL=SPEC` -> `(Some(LABEL), SPEC)`; a spec without a label -> `(None, spec)`. A label is
/// the part before an `=` that comes before any `:` (as in Python's `split_label`).
pub fn split_label(spec: &str) -> (Option<&str>, &str) {
    let head = spec.split(':').next().unwrap_or(spec);
    match head.find('=') {
        Some(i) => (Some(spec[..i].trim()), spec[i + 1..].trim()),
        None => (None, spec),
    }
}

impl SimConfig {
    /// Check the whole configuration; the error names the field and the problem.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.topology.mesh.is_some() && self.transport == Transport::Tcp {
            return Err(invalid("topology.mesh", "the mesh topology carries CoAP over UDP (transport = udp)"));
        }
        if self.transport == Transport::Tcp {
            return crate::engine::tcp_configs(self).map(|_| ());
        }
        self.algorithms().map(|_| ())
    }

    /// Parse every group's algorithm and check everything else: the algorithms, in group
    /// order.
    pub fn algorithms(&self) -> Result<Vec<AlgorithmConfig>, ConfigError> {
        let algs = self.group_algorithms(&CustomAlgorithms::new())?;
        Ok(algs.iter().map(GroupAlg::config).collect())
    }

    /// As [`SimConfig::algorithms`], with the custom algorithms of `custom` (a group whose
    /// `cc` is a custom name gets that algorithm).
    pub(crate) fn group_algorithms(&self, custom: &CustomAlgorithms) -> Result<Vec<GroupAlg>, ConfigError> {
        if self.groups.is_empty() {
            return Err(invalid("groups", "at least one client group is needed"));
        }
        let mut algs = Vec::with_capacity(self.groups.len());
        for (i, g) in self.groups.iter().enumerate() {
            if let Some(f) = custom.get(&g.cc) {
                algs.push(GroupAlg::Custom(f.clone()));
                continue;
            }
            let alg_err = |message: String| ConfigError::Algorithm { group: i, message };
            let (label, spec) = split_label(&g.cc);
            if label.is_some_and(|l| l.is_empty() || l.contains(',')) {
                return Err(alg_err(format!("bad label in '{}': expected LABEL=NAME[:key=value,...]", g.cc)));
            }
            if let Some((_, params)) = spec.split_once(':') {
                if !params.trim().is_empty() && params.split(',').any(|p| p.trim().is_empty()) {
                    return Err(alg_err(format!(
                        "empty key=value item in '{spec}': expected NAME[:key=value,...] without empty items"
                    )));
                }
            }
            let a = AlgorithmConfig::parse(spec).map_err(|e| alg_err(e.to_string()))?;
            if let Some(t) = a.shared_value("ack_timeout").and_then(|v| v.to_string().parse::<f64>().ok()) {
                if t.is_nan() || t < MIN_ACK_TIMEOUT_S {
                    return Err(alg_err(format!(
                        "ack_timeout {t:e} s: must be >= {MIN_ACK_TIMEOUT_S} s (a shorter timer fires before any packet crosses the link)"
                    )));
                }
            }
            algs.push(GroupAlg::Registry(a));
        }
        let total: u64 = self.groups.iter().map(|g| g.clients as u64).sum();
        if total == 0 {
            return Err(invalid("groups", "zero clients: at least one group needs clients > 0"));
        }
        if total > MAX_CLIENTS {
            return Err(invalid("groups", format!("clients in total must be <= {MAX_CLIENTS}, got {total}")));
        }
        let w = &self.workload;
        if w.exchanges == 0 {
            return Err(invalid("workload.exchanges", "must be >= 1, got 0"));
        }
        if w.batch_min == 0 || w.batch_min > w.batch_max {
            return Err(invalid(
                "workload.batch_min",
                format!("batch sizes need 1 <= batch_min <= batch_max (got {}..{})", w.batch_min, w.batch_max),
            ));
        }
        check_range("workload.start_jitter_ms", w.start_jitter_ms, 1e12)?;
        if let WorkloadKind::Bulk(b) = w.kind {
            // Block2 numbers blocks with 20 bits: at most 2^20 blocks of 256 B.
            if b == 0 || b > 1 << 28 {
                return Err(invalid("workload.kind", format!("bulk:{b}: over UDP the size must be 1 to 2^28 bytes")));
            }
        }
        let c = &self.coap;
        if c.ip_version != 4 && c.ip_version != 6 {
            return Err(invalid("coap.ip_version", format!("{} is not 4 or 6", c.ip_version)));
        }
        if c.token_len > 8 {
            return Err(invalid("coap.token_len", format!("{} exceeds the CoAP maximum of 8", c.token_len)));
        }
        if c.token_len == 0 && self.endpoint.model == EndpointModel::Full {
            return Err(invalid("coap.token_len", "the full endpoint model needs a token of 1 to 8 bytes"));
        }
        if c.clock_tick_ns > 0 && (self.endpoint.model == EndpointModel::Full || self.transport != Transport::Udp) {
            return Err(invalid("coap.clock_tick_ns", "a clock tick needs the compact endpoint model over UDP"));
        }
        if c.clock_tick_ns > 1_000_000_000 {
            return Err(invalid("coap.clock_tick_ns", format!("{} ns is more than a second", c.clock_tick_ns)));
        }
        let mtu = self.link.mtu_bytes;
        let (req, resp) = (c.request_bytes() as u64, c.response_bytes() as u64);
        if req > mtu as u64 {
            return Err(invalid("coap.uri_path", format!("the request is {req} B, larger than the {mtu} B MTU")));
        }
        if resp > mtu as u64 {
            return Err(invalid(
                "coap.response_payload_bytes",
                format!("the response is {resp} B, larger than the {mtu} B MTU"),
            ));
        }
        for (name, chain) in [("link.uplink", &self.link.uplink), ("link.downlink", &self.link.downlink)] {
            link::validate_chain(chain, req.max(resp) as u32).map_err(|e| invalid(name, e))?;
        }
        self.validate_access_links(req.max(resp) as u32)?;
        if let Some(m) = &self.topology.mesh {
            self.validate_mesh(m, req as u32, resp as u32)?;
        }
        self.validate_messages()?;
        let s = &self.server;
        check_range("server.processing_delay_ms", s.processing_delay_ms, 1e12)?;
        if self.max_sim_time_s <= 0.0 {
            return Err(invalid("max_sim_time_s", format!("must be > 0, got {}", self.max_sim_time_s)));
        }
        check_range("max_sim_time_s", self.max_sim_time_s, 1e9)?;
        if self.max_events == Some(0) {
            return Err(invalid("max_events", "must be >= 1"));
        }
        let need = self.memory_estimate();
        if need > MAX_MEMORY_BYTES {
            return Err(invalid(
                "groups",
                format!(
                    "{total} clients x {} exchanges with the {} endpoint model need about {} MB of memory, more than the limit of {} MB; use fewer clients or exchanges{}",
                    w.exchanges,
                    if self.endpoint.model == EndpointModel::Full { "full" } else { "compact" },
                    need >> 20,
                    MAX_MEMORY_BYTES >> 20,
                    if self.endpoint.model == EndpointModel::Full { ", or the compact endpoint model" } else { "" }
                ),
            ));
        }
        Ok(algs)
    }

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

    /// Check `topology.access_links`: each group behind at most one, every chain valid for
    /// packets of up to `largest` IP bytes (both transports).
    pub(crate) fn validate_access_links(&self, largest: u32) -> Result<(), ConfigError> {
        let access = &self.topology.access_links;
        if access.len() > MAX_ACCESS_LINKS {
            return Err(invalid("topology.access_links", format!("at most {MAX_ACCESS_LINKS} access links")));
        }
        let mut placed = vec![false; self.groups.len()];
        for (k, a) in access.iter().enumerate() {
            for &g in &a.groups {
                let field = format!("topology.access_links[{k}].groups");
                match placed.get_mut(g as usize) {
                    None => return Err(invalid(&field, format!("group {g} does not exist"))),
                    Some(true) => return Err(invalid(&field, format!("group {g} is already placed"))),
                    Some(p) => *p = true,
                }
            }
            for (dir, chain) in [("uplink", &a.uplink), ("downlink", &a.downlink)] {
                link::validate_chain(chain, largest)
                    .map_err(|e| invalid(&format!("topology.access_links[{k}].{dir}"), e))?;
            }
        }
        Ok(())
    }

    /// Check `topology.mesh` (the flow workloads' request and response of `req`/`resp` IP
    /// bytes; the message workload's units are checked with it, [`SimConfig::validate_messages`]).
    fn validate_mesh(&self, m: &coapcc_mesh::MediumConfig, req: u32, resp: u32) -> Result<(), ConfigError> {
        let field = "topology.mesh";
        if !self.topology.access_links.is_empty() {
            return Err(invalid(field, "a mesh topology has no access links (topology.access_links must be empty)"));
        }
        if self.endpoint.model != EndpointModel::Compact {
            return Err(invalid(field, "the mesh topology runs the compact endpoint model (endpoint.model = compact)"));
        }
        let net = coapcc_mesh::MeshNet::<u32>::new(m, self.seed).map_err(mesh_error)?;
        let (n, root, sink) = (net.topology().len(), net.dodag().root, net.sink());
        if (0..n).all(|v| v == root || v == sink) {
            return Err(invalid(
                "topology.mesh.topology",
                format!("the topology has no node for a client besides the root ({root}) and the sink ({sink})"),
            ));
        }
        if self.workload.kind.is_messages() {
            return Ok(());
        }
        for (what, ip) in [("request", req), ("response", resp)] {
            let psdu = m.psdu_of_coap(ip - crate::coap::ip_len(0, self.coap.ip_version) as u32);
            if psdu > m.frame.max_psdu_bytes {
                return Err(invalid(
                    "topology.mesh.frame.max_psdu_bytes",
                    format!("the {what} needs a {psdu}-byte 802.15.4 frame, above frame.max_psdu_bytes = {} (6LoWPAN fragmentation is not modelled)", m.frame.max_psdu_bytes),
                ));
            }
        }
        Ok(())
    }

    /// Check the message workload (`workload.kind` = `periodic`, `events` or `none`, and
    /// `workload.messages`).
    fn validate_messages(&self) -> Result<(), ConfigError> {
        let kind = self.workload.kind;
        let Some(mc) = self.workload.messages.as_ref().filter(|_| kind.is_messages()) else {
            if self.workload.messages.is_some() {
                return Err(invalid(
                    "workload.messages",
                    format!("applies to the message workloads (periodic, events, none), not to {kind}"),
                ));
            }
            return if kind.is_messages() { self.with_messages_defaults().validate_messages() } else { Ok(()) };
        };
        let Some(m) = &self.topology.mesh else {
            return Err(invalid(
                "workload.kind",
                format!("{kind} runs over a mesh (topology.mesh): its units are sized as the mesh's frames"),
            ));
        };
        if self.transport != Transport::Udp {
            return Err(invalid("workload.kind", format!("{kind} runs over UDP (transport = udp)")));
        }
        match kind {
            WorkloadKind::Periodic { load_kbps } if !(load_kbps.is_finite() && load_kbps > 0.0) => {
                return Err(invalid(
                    "workload.kind",
                    format!("periodic: the load must be a positive number of kbit/s, got {load_kbps}"),
                ));
            }
            WorkloadKind::Events { tb_s, size_bytes } if !(tb_s.is_finite() && tb_s >= 0.001) || size_bytes == 0 => {
                return Err(invalid(
                    "workload.kind",
                    format!("events: needs tb_s >= 0.001 and size_bytes > 0, got {tb_s}, {size_bytes}"),
                ));
            }
            _ => {}
        }
        let key = |k: &str| format!("workload.messages.{k}");
        if mc.unit_bytes == 0 {
            return Err(invalid(&key("unit_bytes"), "must be positive"));
        }
        if mc.unit_mode == UnitMode::Block1
            && !(mc.unit_bytes.is_power_of_two() && (16..=1024).contains(&mc.unit_bytes))
        {
            return Err(invalid(
                &key("unit_bytes"),
                format!("Block1 units must be 16, 32, ..., 1024 bytes, got {}", mc.unit_bytes),
            ));
        }
        if !(mc.background_period_s.is_finite() && mc.background_period_s >= 0.001) {
            return Err(invalid(&key("background_period_s"), "must be at least 0.001 s"));
        }
        if mc.message_bytes == 0 {
            return Err(invalid(&key("message_bytes"), "must be positive"));
        }
        if mc.background_bytes == 0 {
            return Err(invalid(&key("background_bytes"), "must be positive"));
        }
        let rng = coapcc_cc::SplitMix64::new(0);
        crate::workload::messages::Messages::new(kind, mc, self.total_clients() as usize, rng)
            .map_err(|e| invalid("workload.kind", e))?;
        // The largest request must fit one 802.15.4 frame.
        let largest = crate::workload::messages::Messages::largest_unit(mc, kind);
        let sizes = crate::workload::messages::UnitSizes::new(mc, &m.frame);
        let psdu = m.psdu_of_coap(sizes.request_len(largest, 4096));
        if psdu > m.frame.max_psdu_bytes {
            return Err(invalid(
                &key(if mc.unit_mode == UnitMode::Message { "unit_mode" } else { "unit_bytes" }),
                format!(
                    "a request of {largest} payload bytes needs a {psdu}-byte 802.15.4 frame, above the {}-byte limit \
                     (6LoWPAN fragmentation is not modelled): use smaller units",
                    m.frame.max_psdu_bytes
                ),
            ));
        }
        Ok(())
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
mod tests {
    use super::*;
    use crate::link::LossModel;

    #[test]
    fn defaults_validate_and_round_trip() {
        let c = SimConfig::default();
        c.validate().unwrap();
        let j = serde_json::to_string(&c).unwrap();
        let back: SimConfig = serde_json::from_str(&j).unwrap();
        assert_eq!(back, c);
        // A partial document takes the defaults.
        let p: SimConfig = serde_json::from_str(r#"{"seed": 7, "workload": {"exchanges": 3}}"#).unwrap();
        assert_eq!(p.seed, 7);
        assert_eq!(p.workload.exchanges, 3);
        assert_eq!(p.workload.batch_max, 10);
        assert_eq!(p.link, LinkConfig::default());
    }

    #[test]
    fn unknown_fields_are_rejected() {
        for bad in [
            r#"{"sead": 1}"#,
            r#"{"workload": {"exchange": 3}}"#,
            r#"{"link": {"uplink": [{"rate": {"bits_per_s": 1, "buffer_bytes": 1000, "rate": 3}}]}}"#,
            r#"{"link": {"uplink": [{"loss": {"model": "bernoulli", "p": 0.1, "q": 3}}]}}"#,
            r#"{"link": {"uplink": [{"teleport": {}}]}}"#,
        ] {
            assert!(serde_json::from_str::<SimConfig>(bad).is_err(), "{bad}");
        }
        let ok = r#"{"link": {"uplink": [{"loss": {"model": "gilbert_elliott", "p": 0.1, "r": 0.5, "loss_low": 0, "loss_burst": 1}}]}}"#;
        serde_json::from_str::<SimConfig>(ok).unwrap();
    }

    #[test]
    fn default_sizes() {
        let c = CoapConfig::default();
        assert_eq!((c.request_bytes(), c.response_bytes()), (39, 94));
    }

    #[test]
    fn invalid_configs_give_errors() {
        let check = |f: &dyn Fn(&mut SimConfig), needle: &str| {
            let mut c = SimConfig::default();
            f(&mut c);
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains(needle), "{e:?} should contain {needle:?}");
            assert!(!e.contains('\n'));
        };
        check(&|c| c.groups[0].cc = "reno".into(), "unknown algorithm 'reno'");
        check(&|c| c.groups[0].clients = 0, "zero clients");
        check(&|c| c.groups.clear(), "at least one client group");
        check(&|c| c.link.set_buffer_bytes(50), "smaller than one packet");
        check(&|c| c.coap.response_payload_bytes = 300, "MTU");
        check(&|c| c.coap.uri_path = "x".repeat(300), "MTU");
        check(&|c| c.coap.token_len = 9, "token_len");
        check(&|c| c.coap.ip_version = 5, "ip_version");
        check(
            &|c| {
                c.link.set_loss(&LossModel::Bernoulli { p: 1.5 });
            },
            "probability",
        );
        check(
            &|c| {
                c.link.set_loss(&LossModel::GilbertElliott { p: -0.1, r: 0.5, loss_low: 0.0, loss_burst: 1.0 });
            },
            "probability",
        );
        check(&|c| c.workload.exchanges = 0, "exchanges");
        check(&|c| c.workload.batch_min = 11, "batch");
        check(&|c| c.max_sim_time_s = f64::INFINITY, "max_sim_time_s");
        check(&|c| c.server.processing_delay_ms = -1.0, "processing_delay_ms");
    }
}
