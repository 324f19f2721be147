//! The sections of a [`SimConfig`](super::SimConfig): where the clients sit
//! ([`TopologyConfig`]), their groups, the closed-loop workload, the message encoding, the
//! server, the metrics' definitions, the endpoint model and the transport.

use serde::{Deserialize, Serialize};

use super::MessagesConfig;
use super::WorkloadKind;
use crate::link::StageConfig;
use crate::message_sizes;

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
    pub mesh: Option<coapcc_mesh::MeshNetConfig>,
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
        message_sizes::ip_len(message_sizes::request_len(self.token_len as usize, &self.uri_path), self.ip_version)
            as u32
    }

    /// IP size of the response (94 B with the defaults).
    pub fn response_bytes(&self) -> u32 {
        message_sizes::ip_len(
            message_sizes::response_len(self.token_len as usize, self.response_payload_bytes as usize),
            self.ip_version,
        ) as u32
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
    /// [`crate::message_sizes`]. Default; the fastest.
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
