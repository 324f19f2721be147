//! [`MeshReport`]: the metrics of one run (the JSON of `coapcc mesh --json`).
//!
//! Definitions follow the Cooja study of Ancillotti & Bruno:
//! - **PLR** per client = lost messages / messages generated, where lost = a unit gave up
//!   after MAX_RETRANSMIT, or the message was generated while the previous one was still in
//!   flight ("no caching"). Messages still in flight when the run ends are neither lost nor
//!   delivered and leave the denominator (`in_flight_at_end`).
//! - **Retransmissions per frame** = retransmissions / exchanges (units) started.
//! - **Early retransmissions** = share of first transmissions received at the sink whose ACK
//!   came back to the client, yet which were retransmitted because the timer expired first.
//! - **RTO of first transmissions** = the timer `T_0` armed with each unit's original copy.
//! - **Weak/strong RTT estimates** = the estimator's RTO (`SRTT + K·RTTVAR`) after each update.

use serde::Serialize;

use crate::config::MeshConfig;

/// Order statistics of a sample (linear interpolation between closest ranks).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Number of values.
    pub count: usize,
    /// Mean.
    pub mean: f64,
    /// Smallest value.
    pub min: f64,
    /// 10th percentile.
    pub p10: f64,
    /// 25th percentile.
    pub p25: f64,
    /// Median.
    pub median: f64,
    /// 75th percentile.
    pub p75: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// Largest value.
    pub max: f64,
}

impl Summary {
    /// Summary of `values` (any order); `None` if empty.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let q = |p: f64| {
            let h = (n - 1) as f64 * p;
            let lo = h.floor() as usize;
            let hi = (lo + 1).min(n - 1);
            v[lo] + (h - lo as f64) * (v[hi] - v[lo])
        };
        Some(Summary {
            count: n,
            mean: v.iter().sum::<f64>() / n as f64,
            min: v[0],
            p10: q(0.10),
            p25: q(0.25),
            median: q(0.5),
            p75: q(0.75),
            p90: q(0.90),
            p95: q(0.95),
            max: v[n - 1],
        })
    }
}

/// One client's results.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClientReport {
    /// Node index.
    pub node: usize,
    /// Hops from the client to the sink.
    pub hops: u32,
    /// Messages generated.
    pub messages: u64,
    /// Messages lost (no caching + give-ups).
    pub lost: u64,
    /// lost / (messages − in_flight_at_end).
    pub plr: f64,
    /// Lost because the previous message was still in flight.
    pub lost_no_caching: u64,
    /// Lost because a unit exhausted MAX_RETRANSMIT.
    pub lost_give_up: u64,
    /// Messages complete (every unit acknowledged).
    pub delivered: u64,
    /// Messages still in flight at the end of the run.
    pub in_flight_at_end: u64,
    /// Global-event messages generated (events traffic only).
    pub event_messages: u64,
    /// Global-event messages lost.
    pub event_lost: u64,
    /// Units (reliable exchanges) started.
    pub frames: u64,
    /// Retransmissions sent.
    pub retransmissions: u64,
    /// retransmissions / frames.
    pub retransmissions_per_frame: f64,
    /// retransmissions / messages started.
    pub retransmissions_per_message: f64,
    /// First transmissions that reached the sink.
    pub first_tx_at_sink: u64,
    /// Of those, retransmitted although their ACK came back.
    pub early_retransmission_count: u64,
    /// early_retransmission_count / first_tx_at_sink (0 if none reached the sink).
    pub early_retransmissions: f64,
    /// Mean RTO armed with first transmissions, seconds.
    pub rto_first_mean_s: f64,
    /// Largest RTO armed with a first transmission, seconds.
    pub rto_first_max_s: f64,
}

/// Why messages and frames were lost.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LossCauses {
    /// Messages lost by the no-caching rule.
    pub no_caching: u64,
    /// Messages lost because a unit gave up after MAX_RETRANSMIT.
    pub coap_give_up: u64,
    /// Packets (CoAP requests or responses, any copy) dropped by a full node queue.
    pub buffer_overflow: u64,
    /// Packets dropped because every neighbour queue was taken by other next hops.
    pub neighbor_queues_full: u64,
    /// Packets dropped by the MAC after macMaxFrameRetries retransmissions without ACK.
    pub mac_no_ack: u64,
    /// Packets dropped by the MAC after macMaxCSMABackoffs busy CCAs.
    pub mac_channel_access: u64,
    /// Packets lost on the air to a collision at the next hop, without link-layer ACKs to
    /// recover them (Contiki's nullrdc on Sky and Z1).
    pub air_collision: u64,
    /// Packets lost on the air because the next hop's reception draw failed, without
    /// link-layer ACKs.
    pub air_fading: u64,
    /// Packets lost in the next hop's receive FIFO (overflow, or flushed after one).
    pub fifo_overflow: u64,
}

/// MAC and medium counters (all nodes).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MacCounters {
    /// Data-frame transmissions (retries included).
    pub data_tx: u64,
    /// MAC ACK transmissions.
    pub ack_tx: u64,
    /// Data frames acknowledged at the MAC.
    pub acked: u64,
    /// Busy CCAs.
    pub cca_busy: u64,
    /// Frames lost at their addressee to a collision (interference without capture, or the
    /// addressee busy with another frame or transmitting).
    pub collisions: u64,
    /// Frames lost at their addressee to the reception curve alone.
    pub fading: u64,
    /// Retransmitted data frames dropped as duplicates by their receiver.
    pub duplicates_suppressed: u64,
    /// Duplicates forwarded again (`duplicate_detection = false`).
    pub duplicates_forwarded: u64,
    /// MAC give-ups of frames the next hop had in fact received (not a loss).
    pub false_drops: u64,
    /// MAC ACKs not sent because the receiver was transmitting.
    pub acks_skipped: u64,
    /// Frames lost in a receive FIFO (RPL's and ACKs included).
    pub fifo_overflows: u64,
    /// Transmissions of RPL's DIOs and DAOs (included in `data_tx`).
    pub control_tx: u64,
}

/// Packet accounting: `created + duplicates_forwarded = delivered + dropped + in_network_at_end`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Conservation {
    /// Packets created by the application (request and response copies).
    pub created: u64,
    /// Packets that reached their final destination.
    pub delivered: u64,
    /// Packets dropped (buffer overflow, neighbour queues, MAC no-ACK, channel access, lost
    /// on the air without link-layer ACKs, receive FIFO).
    pub dropped: u64,
    /// Packets queued or being forwarded when the run ended.
    pub in_network_at_end: u64,
}

/// The DODAG as built.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TopologyReport {
    /// Number of nodes.
    pub nodes: usize,
    /// DODAG root.
    pub root: usize,
    /// CoAP sink.
    pub sink: usize,
    /// Preferred parent of every node (`null` for the root).
    pub parents: Vec<Option<usize>>,
    /// Hops of every node to the root.
    pub depth: Vec<u32>,
    /// Node positions, metres.
    pub positions: Vec<(f64, f64)>,
}

/// Everything one run measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MeshReport {
    /// The fully resolved configuration.
    pub config: MeshConfig,
    /// The resolved congestion-control specification.
    pub cc_resolved: String,
    /// Topology and DODAG.
    pub topology: TopologyReport,
    /// Per client, in node order.
    pub clients: Vec<ClientReport>,
    /// Mean per-client PLR.
    pub plr_mean: f64,
    /// Largest per-client PLR.
    pub plr_max: f64,
    /// Mean per-client PLR of global-event messages (events traffic only).
    pub plr_event_mean: Option<f64>,
    /// Largest per-client PLR of global-event messages (events traffic only).
    pub plr_event_max: Option<f64>,
    /// Loss causes.
    pub loss_causes: LossCauses,
    /// Mean over clients of retransmissions per frame.
    pub retransmissions_per_frame_mean: f64,
    /// Largest per-client retransmissions per frame.
    pub retransmissions_per_frame_max: f64,
    /// Mean over clients of retransmissions per message.
    pub retransmissions_per_message_mean: f64,
    /// Mean over clients of the early-retransmission share.
    pub early_retransmissions_mean: f64,
    /// Largest per-client early-retransmission share.
    pub early_retransmissions_max: f64,
    /// RTO armed with every first transmission, seconds.
    pub rto_first_s: Option<Summary>,
    /// Weak-estimator RTO after each weak update, seconds (CoCoA family).
    pub rtt_weak_s: Option<Summary>,
    /// Strong-estimator RTO after each strong update, seconds.
    pub rtt_strong_s: Option<Summary>,
    /// Time from a unit's first transmission to its first ACK, seconds.
    pub unit_rtt_s: Option<Summary>,
    /// MAC counters.
    pub mac: MacCounters,
    /// Packet accounting.
    pub conservation: Conservation,
    /// Simulated time, seconds.
    pub sim_time_s: f64,
    /// Wall-clock time of the run, seconds (the only non-deterministic field).
    pub wall_s: f64,
    /// Events processed.
    pub events: u64,
}
