//! The parameters of a run, one entry each ([`FIELDS`], [`LINK`], [`COAP`], [`SERVER`]): name,
//! kind, default, range and documentation. This table is the schema every front reads
//! (Python's `coapcc.SimConfig` builds its fields from it, [`super::schema`]).

use super::json::Json;
use crate::config::{CoapConfig, FailedPolicy, ServerConfig, SimConfig, UnnecessaryDef, WorkloadConfig, MAX_CLIENTS};

/// What values a parameter takes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// An integer in `[min, max]`.
    Int {
        /// Smallest value.
        min: i128,
        /// Largest value.
        max: i128,
    },
    /// A finite number in `[min, max]` (`> 0` with `positive`).
    Float {
        /// Smallest value, if bounded.
        min: Option<f64>,
        /// Largest value, if bounded.
        max: Option<f64>,
        /// Strictly positive.
        positive: bool,
    },
    /// `true` or `false`.
    Bool,
    /// Text.
    Str,
    /// One of the listed words.
    Choice(&'static [&'static str]),
    /// A word of a list the registry gives ([`Kind::Choice`] of a run-time list), or unset.
    Named(Names),
    /// The run's special forms (algorithm specs, client groups, shared parameters, link
    /// errors, workloads, sections, topologies): checked by their own rules.
    Special,
}

/// A list of names known at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Names {
    /// The reproduction presets of the algorithm registry.
    Presets,
    /// The mesh presets.
    MeshPresets,
}

impl Names {
    /// The names.
    pub fn list(self) -> Vec<String> {
        match self {
            Names::Presets => coapcc_cc::Preset::ALL.iter().map(|(n, _)| n.to_string()).collect(),
            Names::MeshPresets => coapcc_mesh::config::PRESETS.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// One parameter.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    /// Its name (a key of an experiment file, a keyword of `coapcc.SimConfig`).
    pub name: &'static str,
    /// What values it takes.
    pub kind: Kind,
    /// What it means.
    pub doc: &'static str,
    /// Left out of a configuration's description while unset (added after the first
    /// datasets: leaving them out keeps every earlier run's identity).
    pub optional: bool,
}

const fn f(name: &'static str, kind: Kind, doc: &'static str) -> Field {
    Field { name, kind, doc, optional: false }
}

const fn opt(name: &'static str, kind: Kind, doc: &'static str) -> Field {
    Field { name, kind, doc, optional: true }
}

const U32: i128 = u32::MAX as i128;
const NONNEG: Kind = Kind::Float { min: Some(0.0), max: None, positive: false };

/// The run's parameters, in order.
pub const FIELDS: &[Field] = &[
    f("algorithm", Kind::Special, "Congestion-control algorithm spec `[LABEL=]NAME[:key=value,...]` (see `coapcc algorithms`); LABEL is the short name tables and plots show. Ignored when `groups` is given."),
    f("clients", Kind::Int { min: 1, max: MAX_CLIENTS as i128 }, "Number of simultaneous clients (flows). With `groups` given by `share`, the total."),
    f("groups", Kind::Special, "Mixed runs: groups of clients, each `{algorithm, clients or share, label}` with its own algorithm. Empty: every client runs `algorithm`."),
    f("preset", Kind::Named(Names::Presets), "Reproduction preset applied to every group's spec first (`helsinki2018`: ANRW 2018 and the FASOR paper). Unset: each algorithm's own defaults. A preset written in a spec wins."),
    opt("profile", Kind::Named(Names::Presets), "Testbed profile: the shared transmission parameters (ACK_TIMEOUT, ACK_RANDOM_FACTOR, MAX_RETRANSMIT) of a reproduction preset, for every group; each algorithm keeps its other parameters. UDP only."),
    opt("transmission", Kind::Special, "Shared transmission parameters applied to every group on top of the preset and the profile (`{max_retransmit = 20}`): the keys every algorithm shares. A parameter written in a group's spec wins. UDP only."),
    f("buffer_bytes", Kind::Int { min: 1, max: i64::MAX as i128 }, "Bottleneck buffer size in bytes, both directions (the papers: 2500, 14100, 28200, 1410000)."),
    f("errors", Kind::Special, "Link-error profile, both directions: `none`, `low`, `medium`, `high`, `bernoulli:P`, `ge:P,R,K,H` (per-packet chain; K, H = loss probabilities in the low and burst states) or `ge-time:T_L,T_B,K,H` (mean sojourns in s)."),
    f("error_clock", Kind::Choice(&["time", "packet"]), "Clock of the medium/high two-state chains: `time` (exponential sojourns, T_B = 1 s, inferred) or `packet` (one step per packet, mean burst `error_burst_packets`)."),
    f("error_burst_packets", Kind::Float { min: Some(1.0), max: Some(1e9), positive: false }, "Mean burst length in packets of the medium/high chains with `error_clock = packet`."),
    f("workload", Kind::Special, "`continuous`, `random` (batches of `batch_min`-`batch_max` exchanges, CC state reset between batches), `bulk:BYTES` (one GET of a BYTES-byte resource per client), or over a mesh the message workload: `periodic:LOAD_KBPS`, `events:TB_S,SIZE_B` or `none` (`messages`)."),
    opt("transport", Kind::Choice(&["udp", "tcp"]), "Transport carrying CoAP: `udp` (RFC 7252) or `tcp` (RFC 8323 on the simulator's TCP model: every group's algorithm is a TCP spec `newreno[:k=v]` or `bbr[:k=v]`)."),
    f("exchanges", Kind::Int { min: 1, max: U32 }, "Successful request-response pairs per flow (the papers: 50)."),
    f("batch_min", Kind::Int { min: 1, max: U32 }, "Random workload: batch sizes are uniform integers in [batch_min, batch_max] (the papers say \"1 to 10 exchanges\"; the distribution is our reading)."),
    f("batch_max", Kind::Int { min: 1, max: U32 }, "See `batch_min`."),
    f("start_jitter_ms", Kind::Float { min: Some(0.0), max: Some(1e12), positive: false }, "Each client starts at U[0, start_jitter_ms] (0 = all at t = 0, unpublished)."),
    f("failed_exchange_policy", Kind::Choice(&["replace", "count"]), "A failed exchange is `replace`-d by a new one (flows run until `exchanges` successes) or `count`-s towards `exchanges`."),
    f("unnecessary_def", Kind::Choice(&["response_delivered", "request_delivered"]), "When a retransmission counts as unnecessary: `response_delivered` (an earlier copy reached the server and its response reached the client) or `request_delivered` (an earlier copy reached the server)."),
    f("endpoint_model", Kind::Choice(&["compact", "full"]), "Implementation of the clients and the server: `compact` (the simulator's own model, fastest) or `full` (real `coapcc-proto` endpoints exchanging encoded datagrams)."),
    f("max_sim_time_s", Kind::Float { min: None, max: Some(1e9), positive: true }, "Bound on simulated time, seconds; a run reaching it reports `truncated` (the message workload's duration)."),
    f("seed", Kind::Int { min: 0, max: u64::MAX as i128 }, "Seed of every random process of the run."),
    f("link", Kind::Special, "The link (rates, delays, MTU...)."),
    f("coap", Kind::Special, "Message sizes."),
    f("server", Kind::Special, "The server."),
    opt("topology", Kind::Special, "Where the clients sit: unset for the testbed's link (`link`, `access_links`), or a multi-hop IEEE 802.15.4 mesh: `grid:N`, `grid:NxM`, `chain:N`, `ring:N`, `dumbbell:K,M` or `file:PATH` (the server at the sink, a client on every other node but the DODAG root, round robin)."),
    opt("mesh_preset", Kind::Named(Names::MeshPresets), "The mesh's radio and MAC from a mesh preset: `ieee802154` (the default; the standard's CSMA/CA), `ancillotti-cooja` (Contiki's CSMA rules) or `makarem2021` (plus ContikiMAC-like duty cycling)."),
    opt("mesh", Kind::Special, "Mesh parameters on top of the preset, dotted keys (`{\"mac.queue_packets\" = 4, \"radio.capture_db\" = 6}`; see `coapcc mesh --print-config`)."),
    opt("access_links", Kind::Special, "Extra access links: each `{groups = [i, ...], <link parameters>}` (`buffer_bytes`, `errors`, `error_clock`, `error_burst_packets` and the `link` section's names), the groups behind it with their own link."),
    opt("messages", Kind::Special, "The message workload's parameters (`message_bytes`, `unit_mode`, `unit_bytes`, `no_caching`, `random_phase`, `event_dist`, `background_period_s`, `background_bytes`)."),
    f("trace", Kind::Special, "Write the simulator's per-exchange trace (JSON lines) to this file. Does not change the results, so it is not part of the configuration's identity."),
];

/// The `link` section.
pub const LINK: &[Field] = &[
    f("uplink_rate_bps", Kind::Int { min: 0, max: i64::MAX as i128 }, "Uplink rate, bit/s, > 0 (testbed: 60 000)."),
    f("downlink_rate_bps", Kind::Int { min: 0, max: i64::MAX as i128 }, "Downlink rate, bit/s, > 0 (testbed: 30 000)."),
    f("uplink_delay_ms", NONNEG, "Uplink one-way propagation delay, ms (testbed: 200)."),
    f("downlink_delay_ms", NONNEG, "Downlink one-way propagation delay, ms (testbed: 400)."),
    f("rest_of_path_min_ms", NONNEG, "Rest-of-path delay U[min, max] ms per packet and direction, FIFO (the papers give the range, not the distribution: uniform is our reading; 10-20 ms)."),
    f("rest_of_path_max_ms", NONNEG, "See `rest_of_path_min_ms`."),
    f("per_packet_overhead_bytes", Kind::Int { min: 0, max: U32 }, "Bytes added to every packet by the rate stages (link-layer header; unpublished, 0)."),
    f("buffer_counts_in_service", Kind::Bool, "Whether the packet in service counts against the buffer (netem-like; unpublished)."),
    f("mtu_bytes", Kind::Int { min: 0, max: U32 }, "MTU, bytes, > 0 (testbed: 296)."),
];

/// The `coap` section.
pub const COAP: &[Field] = &[
    f("ip_version", Kind::Int { min: 0, max: 255 }, "4 or 6 (20 or 40 bytes of IP header)."),
    f("token_len", Kind::Int { min: 0, max: 255 }, "Token length, 0-8 bytes."),
    f("uri_path", Kind::Str, "Path of the GET (one Uri-Path option per segment)."),
    f(
        "response_payload_bytes",
        Kind::Int { min: 0, max: U32 },
        "Payload of the piggybacked 2.05 response, bytes (the papers: 60).",
    ),
    opt(
        "clock_tick_ns",
        Kind::Int { min: 0, max: 1_000_000_000 },
        "The clients' clock tick, ns (0: exact time). With a tick the CoAP code reads time as a tick counter, as Contiki's Erbium does (`CLOCK_SECOND` 128 on Sky and Z1: 7 812 500): exchanges start, retransmit and are acknowledged at the last tick, timers expire at the first tick at or after their deadline. Compact endpoints over UDP only.",
    ),
];

/// The `server` section.
pub const SERVER: &[Field] = &[
    f("processing_delay_ms", NONNEG, "Processing delay before the response is sent, ms (unpublished; 0)."),
    f("duplicate_mode", Kind::Choice(&["answer_each_copy", "replay_cached"]), "What a retransmitted copy is answered with: `answer_each_copy` (every copy gets its own response, echoing that copy) or `replay_cached` (the cached response of the first copy)."),
];

/// The keys of a group.
pub const GROUP_KEYS: &[&str] = &["algorithm", "clients", "share", "label"];

/// The shared transmission parameters (every algorithm's common parameters).
pub fn shared() -> Vec<&'static str> {
    coapcc_cc::COMMON_INFO.iter().map(|p| p.key).collect()
}

fn num(x: f64) -> Json {
    Json::Num(serde_json::Number::from_f64(x).expect("defaults are finite"))
}

fn word<T: serde::Serialize>(v: &T) -> Json {
    Json::from_value(&serde_json::to_value(v).expect("a word serialises"))
}

/// The default of every parameter, in [`FIELDS`] order (sections as objects).
pub fn defaults() -> Json {
    let s = SimConfig::default();
    let w = WorkloadConfig::default();
    let l = coapcc_link::LinkSpec::default();
    let (c, sv) = (CoapConfig::default(), ServerConfig::default());
    let link = Json::Obj(vec![
        ("uplink_rate_bps".into(), Json::Num(l.uplink_rate_bps.into())),
        ("downlink_rate_bps".into(), Json::Num(l.downlink_rate_bps.into())),
        ("uplink_delay_ms".into(), num(l.uplink_delay_ms)),
        ("downlink_delay_ms".into(), num(l.downlink_delay_ms)),
        ("rest_of_path_min_ms".into(), num(l.rest_of_path_min_ms)),
        ("rest_of_path_max_ms".into(), num(l.rest_of_path_max_ms)),
        ("per_packet_overhead_bytes".into(), Json::Num(l.per_packet_overhead_bytes.into())),
        ("buffer_counts_in_service".into(), Json::Bool(l.buffer_counts_in_service)),
        ("mtu_bytes".into(), Json::Num(l.mtu_bytes.into())),
    ]);
    let coap = Json::Obj(vec![
        ("ip_version".into(), Json::Num(c.ip_version.into())),
        ("token_len".into(), Json::Num(c.token_len.into())),
        ("uri_path".into(), Json::Str(c.uri_path)),
        ("response_payload_bytes".into(), Json::Num(c.response_payload_bytes.into())),
        ("clock_tick_ns".into(), Json::Num(c.clock_tick_ns.into())),
    ]);
    let server = Json::Obj(vec![
        ("processing_delay_ms".into(), num(sv.processing_delay_ms)),
        ("duplicate_mode".into(), word(&sv.duplicate_mode)),
    ]);
    let failed = match w.failed_exchanges {
        FailedPolicy::Replace => "replace",
        FailedPolicy::Count => "count",
    };
    let def = match s.metrics.unnecessary_def {
        UnnecessaryDef::ResponseDelivered => "response_delivered",
        UnnecessaryDef::RequestDelivered => "request_delivered",
    };
    Json::Obj(vec![
        ("algorithm".into(), Json::Str(crate::config::DEFAULT_CC.into())),
        ("clients".into(), Json::Num(1.into())),
        ("groups".into(), Json::Arr(Vec::new())),
        ("preset".into(), Json::Null),
        ("profile".into(), Json::Null),
        ("transmission".into(), Json::Obj(Vec::new())),
        ("buffer_bytes".into(), Json::Num(l.buffer_bytes.into())),
        ("errors".into(), Json::Str(l.errors.clone())),
        ("error_clock".into(), word(&l.error_clock)),
        ("error_burst_packets".into(), num(l.burst_packets)),
        ("workload".into(), Json::Str(w.kind.to_string())),
        ("transport".into(), word(&s.transport)),
        ("exchanges".into(), Json::Num(w.exchanges.into())),
        ("batch_min".into(), Json::Num(w.batch_min.into())),
        ("batch_max".into(), Json::Num(w.batch_max.into())),
        ("start_jitter_ms".into(), num(w.start_jitter_ms)),
        ("failed_exchange_policy".into(), Json::Str(failed.into())),
        ("unnecessary_def".into(), Json::Str(def.into())),
        ("endpoint_model".into(), word(&s.endpoint.model)),
        ("max_sim_time_s".into(), num(s.max_sim_time_s)),
        ("seed".into(), Json::Num(s.seed.into())),
        ("link".into(), link),
        ("coap".into(), coap),
        ("server".into(), server),
        ("topology".into(), Json::Null),
        ("mesh_preset".into(), Json::Null),
        ("mesh".into(), Json::Obj(Vec::new())),
        ("access_links".into(), Json::Arr(Vec::new())),
        ("messages".into(), Json::Obj(Vec::new())),
        ("trace".into(), Json::Null),
    ])
}
