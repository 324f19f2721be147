//! What a run reports (testbed spec §6): [`SimReport`] with its flows, groups and links
//! (here), the mesh network's and the message workload's parts (`mesh`), the one summary of
//! a sample (`summary`) and the report's columns for tables (`columns`).

use serde::Serialize;

use crate::config::SimConfig;
use crate::link::LinkCounters;

mod columns;
mod mesh;
mod summary;

pub use columns::{FlowColumn, Scalar};
pub use mesh::{MeshLinkReport, MessageClientReport, MessagesReport};
use summary::quantiles_only;
pub use summary::{percentile_sorted, Summary};

/// The result of one run. Serialised as one JSON object whose fields appear in this order.
///
/// Determinism: the same configuration and seed give a byte-identical serialisation except
/// for `wall_s` (host wall-clock time of the run).
#[derive(Clone, Debug, Serialize)]
pub struct SimReport {
    /// The configuration, fully resolved: every default filled in, the seed, and each group's
    /// algorithm in canonical form.
    pub config: SimConfig,
    /// One entry per client, in client order.
    pub flows: Vec<FlowReport>,
    /// Element k: number of completed exchanges with exactly k retransmissions (pooled over
    /// all clients; length = largest MAX_RETRANSMIT + 1). Failed exchanges are not counted.
    pub retransmissions_per_exchange: Vec<u64>,
    /// Per-direction link counters (of `link`, the access link shared by every group not
    /// placed elsewhere).
    pub links: LinksReport,
    /// The extra access links of `topology`, in order (absent for the dumbbell).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub access_links: Vec<AccessLinkReport>,
    /// Useful share of the downlink: bytes of the response that completed each exchange (one
    /// per completed exchange) / bytes serialised by the downlink's first rate stage (every
    /// admitted response, including duplicates and those later lost to link errors). IP
    /// sizes, over the whole run. 0 if nothing was serialised.
    pub useful_fraction: f64,
    /// Simulated time at which the run ended: the last packet delivery or live timer, or
    /// `max_sim_time_s` if the run was truncated.
    pub sim_time_s: f64,
    /// Host wall-clock seconds `simulate()` took (the only non-deterministic field).
    pub wall_s: f64,
    /// Events processed: packet deliveries, live timer expiries, exchange starts and delayed
    /// server sends (cancelled timers are not counted).
    pub events: u64,
    /// Whether the run hit `max_sim_time_s` before every flow finished.
    pub truncated: bool,
    /// The metrics split by client group.
    pub groups: Vec<GroupReport>,
    /// The mesh network of `topology.mesh` (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mesh: Option<MeshLinkReport>,
    /// The message workload's metrics (`periodic`, `events`, `none`; absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<MessagesReport>,
}
/// One client's flow.
#[derive(Clone, Debug, Serialize)]
pub struct FlowReport {
    /// Client index (0-based, assigned group by group).
    pub client: u32,
    /// Group index.
    pub group: u32,
    /// Registry name of the group's algorithm (the full specification is in
    /// `config.groups[group].cc`).
    pub cc: &'static str,
    /// `fct_anrw`: from sending the first request to receiving the response that completes
    /// the last exchange, seconds; `null` if the flow did not finish.
    pub fct_s: Option<f64>,
    /// Request copies sent, retransmissions included.
    pub transmissions: u64,
    /// `transmissions` − exchanges started.
    pub retransmissions: u64,
    /// Retransmissions that were unnecessary (`metrics.unnecessary_def`; spec §6.2),
    /// evaluated over everything that arrived until the end of the run.
    pub unnecessary_retransmissions: u64,
    /// Exchanges that gave up after MAX_RETRANSMIT.
    pub failed_exchanges: u64,
    /// Exchanges that completed.
    pub completed_exchanges: u64,
    /// TCP only: SYN sent to handshake complete at the client, seconds (`null` if the
    /// handshake failed). Over TCP, `transmissions` and `retransmissions` count the server's
    /// data segments and retransmitted data segments, and an exchange fails only when the
    /// handshake does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setup_s: Option<Option<f64>>,
    /// TCP only: segments the server sent (SYN-ACK, data, pure ACKs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segments_sent: Option<u64>,
    /// TCP only: data segments the server retransmitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmitted_segments: Option<u64>,
    /// TCP only: the server's retransmission-timer expiries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rto_expiries: Option<u64>,
    /// TCP only: the server's fast retransmits (entries into fast recovery).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fast_retransmits: Option<u64>,
    /// TCP only: in-order payload bytes delivered to the client application (CSM and
    /// response frames).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_delivered: Option<u64>,
    /// TCP only: seconds from the first request to the server's first retransmission
    /// timeout of data (`null` without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_rto_s: Option<Option<f64>>,
    /// TCP only: mean seconds of a data RTO's loss episode, from the RTO until everything
    /// sent before it is acknowledged (Linux's `TCP_CA_Loss` state) or the next RTO
    /// (`null` without an RTO).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rto_episode_s: Option<Option<f64>>,
    /// TCP only: mean seconds from a data RTO to the last retransmission of its loss
    /// episode, the time spent resending what was outstanding (`null` without an RTO).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rto_resend_s: Option<Option<f64>>,
    /// TCP only: new data segments the server sent after the first duplicate ACK arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_after_first_dupack: Option<u64>,
    /// TCP only: data segments the server retransmitted in fast recovery.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery_retransmits: Option<u64>,
    /// TCP only: round trips of fast recovery (ACKs that advanced the cumulative ACK point
    /// in it: partial ACKs and the ACK that ended it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery_rounds: Option<u64>,
}

impl FlowReport {
    /// A UDP flow's report with every field zero and no TCP fields (fill in the rest).
    pub(crate) fn udp() -> Self {
        FlowReport {
            client: 0,
            group: 0,
            cc: "",
            fct_s: None,
            transmissions: 0,
            retransmissions: 0,
            unnecessary_retransmissions: 0,
            failed_exchanges: 0,
            completed_exchanges: 0,
            setup_s: None,
            segments_sent: None,
            retransmitted_segments: None,
            rto_expiries: None,
            fast_retransmits: None,
            bytes_delivered: None,
            first_rto_s: None,
            rto_episode_s: None,
            rto_resend_s: None,
            new_after_first_dupack: None,
            recovery_retransmits: None,
            recovery_rounds: None,
        }
    }
}

/// An extra access link of the topology.
#[derive(Clone, Debug, Serialize)]
pub struct AccessLinkReport {
    /// The groups behind it.
    pub groups: Vec<u32>,
    /// Its counters.
    pub links: LinksReport,
}

/// Both directions of a link.
#[derive(Clone, Debug, Serialize)]
pub struct LinksReport {
    /// Server → client.
    pub downlink: LinkReport,
    /// Client → server.
    pub uplink: LinkReport,
}

/// One direction's counters (IP sizes).
#[derive(Clone, Debug, Serialize)]
pub struct LinkReport {
    /// Bytes offered to the direction.
    pub offered_bytes: u64,
    /// Bytes delivered to the far end.
    pub delivered_bytes: u64,
    /// Bytes tail-dropped by the buffer (congestion).
    pub buffer_drop_bytes: u64,
    /// Bytes lost to link errors.
    pub error_loss_bytes: u64,
    /// Share of the utilisation window during which the first rate stage was serialising
    /// (`link_utilisation`, spec §6.5; window from the first packet of the run to the
    /// completion of the last flow, AMBIG-T13). Includes packets later lost to link errors.
    pub busy_fraction: f64,
    /// Packets offered.
    pub offered_packets: u64,
    /// Packets delivered.
    pub delivered_packets: u64,
    /// Packets tail-dropped.
    pub buffer_drop_packets: u64,
    /// Packets lost to link errors.
    pub error_loss_packets: u64,
    /// Bytes serialised by the first rate stage (admitted packets).
    pub serialised_bytes: u64,
    /// Serialisation time within the utilisation window, seconds.
    pub busy_s: f64,
    /// Length of the utilisation window, seconds.
    pub window_s: f64,
    /// Largest buffer occupancy seen, bytes.
    pub max_queue_bytes: u64,
}

impl LinkReport {
    pub(crate) fn new(c: LinkCounters, serialised: u64, busy_ns: u64, window_ns: u64, max_queue: u64) -> Self {
        LinkReport {
            offered_bytes: c.offered_bytes,
            delivered_bytes: c.delivered_bytes,
            buffer_drop_bytes: c.buffer_drop_bytes,
            error_loss_bytes: c.error_loss_bytes,
            busy_fraction: if window_ns > 0 { busy_ns as f64 / window_ns as f64 } else { 0.0 },
            offered_packets: c.offered_packets,
            delivered_packets: c.delivered_packets,
            buffer_drop_packets: c.buffer_drop_packets,
            error_loss_packets: c.error_loss_packets,
            serialised_bytes: serialised,
            busy_s: secs(busy_ns),
            window_s: secs(window_ns),
            max_queue_bytes: max_queue,
        }
    }
}

/// Metrics of one client group.
#[derive(Clone, Debug, Serialize)]
pub struct GroupReport {
    /// Group index.
    pub group: u32,
    /// The group's short label (`LABEL=SPEC` in its `cc`), absent if it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Canonical algorithm specification (without the label).
    pub cc: String,
    /// Clients in the group.
    pub clients: u32,
    /// Flows that finished.
    pub finished_flows: u32,
    /// FCT summary over the finished flows, seconds (`null` if none finished): its
    /// quantiles (without `count` and `mean`).
    #[serde(serialize_with = "quantiles_only")]
    pub fct_s: Option<Summary>,
    /// Completed exchanges.
    pub completed_exchanges: u64,
    /// Failed exchanges.
    pub failed_exchanges: u64,
    /// Request copies sent.
    pub transmissions: u64,
    /// Retransmissions.
    pub retransmissions: u64,
    /// Unnecessary retransmissions.
    pub unnecessary_retransmissions: u64,
    /// As the run's `retransmissions_per_exchange`, for this group.
    pub retransmissions_per_exchange: Vec<u64>,
}

impl GroupReport {
    /// An empty report of group `group` whose configured `cc` is `[LABEL=]SPEC` (the label
    /// split off into [`GroupReport::label`]), with `clients` clients and the given histogram.
    pub fn empty(group: u32, cc: &str, clients: u32, retransmissions_per_exchange: Vec<u64>) -> Self {
        let (label, cc) = crate::config::split_label(cc);
        GroupReport {
            group,
            label: label.map(Into::into),
            cc: cc.into(),
            clients,
            finished_flows: 0,
            fct_s: None,
            completed_exchanges: 0,
            failed_exchanges: 0,
            transmissions: 0,
            retransmissions: 0,
            unnecessary_retransmissions: 0,
            retransmissions_per_exchange,
        }
    }
}

/// Nanoseconds to seconds.
pub(crate) fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

#[cfg(test)]
mod tests;
