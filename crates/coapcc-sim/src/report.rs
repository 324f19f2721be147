//! What a run reports (testbed spec §6), and summary statistics.

use serde::Serialize;

use crate::config::SimConfig;
use crate::link::LinkCounters;

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
    pub drops: MeshDrops,
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
    /// mesh study's own event loop processed each of them as an event; `coapcc mesh` counts
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

/// Packets a mesh network dropped, by cause.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MeshDrops {
    /// A node's queue was full.
    pub buffer_overflow: u64,
    /// Every neighbour queue was taken (`mac.max_neighbor_queues`).
    pub neighbor_queues_full: u64,
    /// No MAC ACK after the last retry.
    pub mac_no_ack: u64,
    /// Channel access failure (busy CCAs).
    pub mac_channel_access: u64,
    /// Lost on the air at the next hop without link-layer ACKs (a collision).
    pub air_collision: u64,
    /// Lost on the air at the next hop without link-layer ACKs (its reception draw failed).
    pub air_fading: u64,
    /// Lost in the next hop's receive FIFO.
    pub fifo_overflow: u64,
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

/// Order statistics of a sample (AMBIG-T10: linear interpolation between closest ranks), its
/// size and mean: the one summary of every report.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Number of values.
    pub count: usize,
    /// Mean (the sum taken in increasing order).
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
        let q = |p| percentile_sorted(&v, p);
        Some(Summary {
            count: v.len(),
            mean: v.iter().sum::<f64>() / v.len() as f64,
            min: v[0],
            p10: q(0.10),
            p25: q(0.25),
            median: q(0.5),
            p75: q(0.75),
            p90: q(0.90),
            p95: q(0.95),
            max: v[v.len() - 1],
        })
    }
}

/// A summary as its quantiles only (`min` to `max`): the form of the flow completion times in
/// every report since the first.
fn quantiles_only<S: serde::Serializer>(s: &Option<Summary>, out: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Quantiles {
        min: f64,
        p10: f64,
        p25: f64,
        median: f64,
        p75: f64,
        p90: f64,
        p95: f64,
        max: f64,
    }
    s.map(|s| Quantiles {
        min: s.min,
        p10: s.p10,
        p25: s.p25,
        median: s.median,
        p75: s.p75,
        p90: s.p90,
        p95: s.p95,
        max: s.max,
    })
    .serialize(out)
}

/// Percentile `p` ∈ [0, 1] of sorted, non-empty data by linear interpolation between closest
/// ranks (rank h = (n − 1)·p; numpy's default, R type 7).
pub fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    assert!(n > 0);
    let h = (n - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

// -- columnar export ---------------------------------------------------------------------------

/// One column of [`SimReport::flow_columns`]: a value per flow, in client order.
#[derive(Clone, Debug, PartialEq)]
pub enum FlowColumn {
    /// Unsigned integers.
    U32(Vec<u32>),
    /// Unsigned integers.
    U64(Vec<u64>),
    /// Unsigned integers, `None` where the flow has no value.
    OptU64(Vec<Option<u64>>),
    /// Floats, `None` where the flow has no value (a flow that did not finish).
    OptF64(Vec<Option<f64>>),
    /// Names.
    Str(Vec<&'static str>),
}

impl FlowColumn {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            FlowColumn::U32(v) => v.len(),
            FlowColumn::U64(v) => v.len(),
            FlowColumn::OptU64(v) => v.len(),
            FlowColumn::OptF64(v) => v.len(),
            FlowColumn::Str(v) => v.len(),
        }
    }

    /// Whether the column has no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A scalar of [`LinkReport::fields`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// A counter.
    U64(u64),
    /// A share or a duration.
    F64(f64),
}

impl SimReport {
    /// The report as JSON without the one machine-dependent field (`wall_s`): two runs of the
    /// same (configuration, seed) give equal values.
    pub fn results_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("a report serialises");
        if let Some(o) = v.as_object_mut() {
            o.remove("wall_s");
        }
        v
    }

    /// [`SimReport::results_json`] without the configuration either: for runs whose
    /// configurations differ in a way that must not change the results (the two endpoint
    /// models, an algorithm behind the factory or the registry).
    pub fn outcome_json(&self) -> serde_json::Value {
        let mut v = self.results_json();
        if let Some(o) = v.as_object_mut() {
            o.remove("config");
        }
        v
    }

    /// The per-flow records as columns, named and ordered as the fields of [`FlowReport`] in
    /// its JSON form (the TCP-only columns only when some flow has them, `None` for a flow
    /// without). For callers that turn a run into tables: no per-flow object, no JSON.
    pub fn flow_columns(&self) -> Vec<(&'static str, FlowColumn)> {
        let f = &self.flows;
        let u64s = |g: fn(&FlowReport) -> u64| FlowColumn::U64(f.iter().map(g).collect());
        let mut cols = vec![
            ("client", FlowColumn::U32(f.iter().map(|x| x.client).collect())),
            ("group", FlowColumn::U32(f.iter().map(|x| x.group).collect())),
            ("cc", FlowColumn::Str(f.iter().map(|x| x.cc).collect())),
            ("fct_s", FlowColumn::OptF64(f.iter().map(|x| x.fct_s).collect())),
            ("transmissions", u64s(|x| x.transmissions)),
            ("retransmissions", u64s(|x| x.retransmissions)),
            ("unnecessary_retransmissions", u64s(|x| x.unnecessary_retransmissions)),
            ("failed_exchanges", u64s(|x| x.failed_exchanges)),
            ("completed_exchanges", u64s(|x| x.completed_exchanges)),
        ];
        if f.iter().any(|x| x.setup_s.is_some()) {
            cols.push(("setup_s", FlowColumn::OptF64(f.iter().map(|x| x.setup_s.flatten()).collect())));
        }
        type Get = fn(&FlowReport) -> Option<u64>;
        let tcp: [(&'static str, Get); 5] = [
            ("segments_sent", |x| x.segments_sent),
            ("retransmitted_segments", |x| x.retransmitted_segments),
            ("rto_expiries", |x| x.rto_expiries),
            ("fast_retransmits", |x| x.fast_retransmits),
            ("bytes_delivered", |x| x.bytes_delivered),
        ];
        for (name, get) in tcp {
            if f.iter().any(|x| get(x).is_some()) {
                cols.push((name, FlowColumn::OptU64(f.iter().map(get).collect())));
            }
        }
        cols
    }
}

impl LinkReport {
    /// Every counter with its name, in the order of the JSON form.
    pub fn fields(&self) -> [(&'static str, Scalar); 13] {
        use Scalar::{F64, U64};
        [
            ("offered_bytes", U64(self.offered_bytes)),
            ("delivered_bytes", U64(self.delivered_bytes)),
            ("buffer_drop_bytes", U64(self.buffer_drop_bytes)),
            ("error_loss_bytes", U64(self.error_loss_bytes)),
            ("busy_fraction", F64(self.busy_fraction)),
            ("offered_packets", U64(self.offered_packets)),
            ("delivered_packets", U64(self.delivered_packets)),
            ("buffer_drop_packets", U64(self.buffer_drop_packets)),
            ("error_loss_packets", U64(self.error_loss_packets)),
            ("serialised_bytes", U64(self.serialised_bytes)),
            ("busy_s", F64(self.busy_s)),
            ("window_s", F64(self.window_s)),
            ("max_queue_bytes", U64(self.max_queue_bytes)),
        ]
    }
}

/// Nanoseconds to seconds.
pub(crate) fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_linearly() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile_sorted(&v, 0.5), 2.5);
        assert_eq!(percentile_sorted(&v, 0.0), 1.0);
        assert_eq!(percentile_sorted(&v, 1.0), 4.0);
        assert!((percentile_sorted(&v, 0.1) - 1.3).abs() < 1e-12);
        let s = Summary::of(&[5.0, 1.0, 3.0]).unwrap();
        assert_eq!((s.min, s.median, s.max), (1.0, 3.0, 5.0));
        assert!(Summary::of(&[]).is_none());
    }
    /// The keys of `json` (one serialised object, no nesting) in their order.
    fn keys_in_order(json: &str) -> Vec<String> {
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        let mut keys: Vec<(usize, String)> =
            v.as_object().unwrap().keys().map(|k| (json.find(&format!("\"{k}\":")).unwrap(), k.clone())).collect();
        keys.sort();
        keys.into_iter().map(|(_, k)| k).collect()
    }

    fn flow(client: u32, tcp: bool) -> FlowReport {
        let mut f = FlowReport::udp();
        f.client = client;
        f.cc = "cocoa";
        f.fct_s = if client == 0 { None } else { Some(1.5) };
        f.transmissions = 7 + client as u64;
        if tcp {
            f.setup_s = Some(if client == 0 { None } else { Some(0.25) });
            f.segments_sent = Some(3);
            f.retransmitted_segments = Some(1);
            f.rto_expiries = Some(0);
            f.fast_retransmits = Some(2);
            f.bytes_delivered = Some(999);
        }
        f
    }

    #[test]
    fn columns_have_the_json_names_order_and_values() {
        let link = LinkReport::new(LinkCounters::default(), 10, 5, 10, 3);
        let names: Vec<&str> = link.fields().iter().map(|(n, _)| *n).collect();
        assert_eq!(names, keys_in_order(&serde_json::to_string(&link).unwrap()));
        for tcp in [false, true] {
            let flows = vec![flow(0, tcp), flow(1, tcp)];
            let report = SimReport {
                config: SimConfig::default(),
                flows: flows.clone(),
                retransmissions_per_exchange: vec![],
                links: LinksReport { downlink: link.clone(), uplink: link.clone() },
                access_links: vec![],
                mesh: None,
                messages: None,
                useful_fraction: 0.0,
                sim_time_s: 0.0,
                wall_s: 0.0,
                events: 0,
                truncated: false,
                groups: vec![],
            };
            let cols = report.flow_columns();
            let names: Vec<&str> = cols.iter().map(|(n, _)| *n).collect();
            assert_eq!(names, keys_in_order(&serde_json::to_string(&flows[1]).unwrap()), "tcp {tcp}");
            // Every column's values are the JSON's, flow by flow.
            let json: Vec<serde_json::Value> = flows.iter().map(|f| serde_json::to_value(f).unwrap()).collect();
            for (name, col) in &cols {
                assert_eq!(col.len(), 2);
                let got: Vec<serde_json::Value> = match col {
                    FlowColumn::U32(v) => v.iter().map(|x| (*x).into()).collect(),
                    FlowColumn::U64(v) => v.iter().map(|x| (*x).into()).collect(),
                    FlowColumn::OptU64(v) => v.iter().map(|x| serde_json::to_value(x).unwrap()).collect(),
                    FlowColumn::OptF64(v) => v.iter().map(|x| serde_json::to_value(x).unwrap()).collect(),
                    FlowColumn::Str(v) => v.iter().map(|x| (*x).into()).collect(),
                };
                let want: Vec<serde_json::Value> = json.iter().map(|f| f[name].clone()).collect();
                assert_eq!(got, want, "{name}");
            }
        }
    }
}
