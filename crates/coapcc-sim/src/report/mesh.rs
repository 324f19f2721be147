//! The parts of a report over a mesh ([`MeshLinkReport`]: the network's counters and DODAG)
//! and of the message workload ([`MessagesReport`]: PLR, loss causes, early
//! retransmissions, RTO and RTT distributions).

use serde::Serialize;

use super::Summary;

/// The mesh network of a run (`topology.mesh`).
#[derive(Clone, Debug, Serialize)]
pub struct MeshLinkReport {
    /// Nodes of the topology.
    pub nodes: usize,
    /// The DODAG root.
    pub root: usize,
    /// The sink, where the server sits.
    pub sink: usize,
    /// The node of each client, in client order.
    pub client_nodes: Vec<u16>,
    /// Hops from each client's node to the sink.
    pub client_hops: Vec<u32>,
    /// MAC counters (frames, ACKs, busy CCAs, collisions, ...).
    pub mac: coapcc_mesh::report::MacCounters,
    /// Packets dropped in the network, by cause.
    pub drops: coapcc_mesh::report::NetDrops,
    /// Packets entered, delivered, dropped and still in the network at the end: entered +
    /// duplicates forwarded = delivered + dropped + in network. A response waiting out the
    /// server's processing delay counts as entered and in the network.
    pub conservation: coapcc_mesh::report::Conservation,
    /// Preferred parent of every node in the DODAG (`null` for the root).
    pub parents: Vec<Option<usize>>,
    /// Hops of every node to the DODAG root.
    pub depth: Vec<u32>,
    /// Node positions, metres.
    pub positions: Vec<(f64, f64)>,
}

/// The message workload's metrics (Ancillotti & Bruno's definitions):
/// - **PLR** per client = lost messages / messages generated, where lost = a unit gave up
///   after MAX_RETRANSMIT, or the message was generated while the previous one was still in
///   flight ("no caching"). Messages still in flight when the run ends are neither lost nor
///   delivered and leave the denominator (`in_flight_at_end`).
/// - **Retransmissions per unit** = retransmissions / exchanges (units) started.
/// - **Early retransmissions** = share of first transmissions received by the server whose
///   response came back to the client, yet which were retransmitted because the timer
///   expired first.
/// - **RTO of first transmissions** = the timer `T_0` armed with each unit's original copy.
/// - **Weak/strong RTT estimates** = the estimator's RTO (`SRTT + K·RTTVAR`) after each update.
#[derive(Clone, Debug, Serialize)]
pub struct MessagesReport {
    /// Per client, in client order.
    pub clients: Vec<MessageClientReport>,
    /// Mean per-client PLR.
    pub plr_mean: f64,
    /// Largest per-client PLR.
    pub plr_max: f64,
    /// Mean per-client PLR of global-event messages (`events` only).
    pub plr_event_mean: Option<f64>,
    /// Largest per-client PLR of global-event messages (`events` only).
    pub plr_event_max: Option<f64>,
    /// Messages lost by the no-caching rule, all clients.
    pub lost_no_caching: u64,
    /// Messages lost because a unit gave up after MAX_RETRANSMIT, all clients.
    pub lost_give_up: u64,
    /// Mean over clients of retransmissions per unit.
    pub retransmissions_per_unit_mean: f64,
    /// Largest per-client retransmissions per unit.
    pub retransmissions_per_unit_max: f64,
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
    /// Time from a unit's first transmission to its first response, seconds.
    pub unit_rtt_s: Option<Summary>,
    /// Retransmission timers a response disarmed whose deadline fell within the run (the
    /// first mesh simulator's event loop processed each of them as an event; `coapcc mesh` counts
    /// them in its `events`).
    pub disarmed_timers_due: u64,
}

/// One client's message metrics.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MessageClientReport {
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
    /// Global-event messages generated (`events` only).
    pub event_messages: u64,
    /// Global-event messages lost.
    pub event_lost: u64,
    /// Units (reliable exchanges) started.
    pub units: u64,
    /// Retransmissions sent.
    pub retransmissions: u64,
    /// retransmissions / units.
    pub retransmissions_per_unit: f64,
    /// retransmissions / messages started.
    pub retransmissions_per_message: f64,
    /// First transmissions that reached the server.
    pub first_tx_at_sink: u64,
    /// Of those, retransmitted although their response came back.
    pub early_retransmission_count: u64,
    /// early_retransmission_count / first_tx_at_sink (0 if none reached the server).
    pub early_retransmissions: f64,
    /// Units retransmitted at least once (the first retransmissions: early ones among them
    /// are `early_retransmission_count`).
    pub retransmitted_units: u64,
    /// Mean RTO armed with first transmissions, seconds.
    pub rto_first_mean_s: f64,
    /// Largest RTO armed with a first transmission, seconds.
    pub rto_first_max_s: f64,
}
