//! [`MeshReport`]: what `coapcc mesh` reports (its `--json` object, Python's
//! `coapcc.mesh()` report): the simulation's report ([`SimReport`]) of a [`MeshRun`] in the
//! command's form, with the metrics of Ancillotti & Bruno's study (see
//! [`crate::report::MessagesReport`] for their definitions).

use serde::Serialize;

use coapcc_mesh::report::{Conservation, LossCauses, MacCounters};

use super::config::MeshRun;
use crate::report::{SimReport, Summary};

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
    /// Units (reliable exchanges) started ("frames" in the paper's per-frame congestion
    /// control).
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
    /// Frames (units) retransmitted at least once: the first retransmissions, of which
    /// `early_retransmission_count` were early.
    pub retransmitted_frames: u64,
    /// Mean RTO armed with first transmissions, seconds.
    pub rto_first_mean_s: f64,
    /// Largest RTO armed with a first transmission, seconds.
    pub rto_first_max_s: f64,
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

/// Everything one run measured, as `coapcc mesh --json` prints it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MeshReport {
    /// The fully resolved configuration.
    pub config: MeshRun,
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
    /// Events processed, counting each armed retransmission timer once (a timer its response
    /// disarmed counts at its deadline, within the run: the first mesh simulator's loop processed it).
    pub events: u64,
}

impl MeshReport {
    /// The report of `run`, from its simulation's report `r` (of a mesh with the message
    /// workload: `None` otherwise).
    pub fn new(run: &MeshRun, r: SimReport) -> Option<MeshReport> {
        let (mesh, msgs) = (r.mesh?, r.messages?);
        let clients = msgs
            .clients
            .iter()
            .enumerate()
            .map(|(c, m)| ClientReport {
                node: mesh.client_nodes[c] as usize,
                hops: mesh.client_hops[c],
                messages: m.messages,
                lost: m.lost,
                plr: m.plr,
                lost_no_caching: m.lost_no_caching,
                lost_give_up: m.lost_give_up,
                delivered: m.delivered,
                in_flight_at_end: m.in_flight_at_end,
                event_messages: m.event_messages,
                event_lost: m.event_lost,
                frames: m.units,
                retransmissions: m.retransmissions,
                retransmissions_per_frame: m.retransmissions_per_unit,
                retransmissions_per_message: m.retransmissions_per_message,
                first_tx_at_sink: m.first_tx_at_sink,
                early_retransmission_count: m.early_retransmission_count,
                early_retransmissions: m.early_retransmissions,
                retransmitted_frames: m.retransmitted_units,
                rto_first_mean_s: m.rto_first_mean_s,
                rto_first_max_s: m.rto_first_max_s,
            })
            .collect();
        Some(MeshReport {
            config: run.clone(),
            cc_resolved: r.config.groups.first().map(|g| g.cc.clone()).unwrap_or_default(),
            topology: TopologyReport {
                nodes: mesh.nodes,
                root: mesh.root,
                sink: mesh.sink,
                parents: mesh.parents,
                depth: mesh.depth,
                positions: mesh.positions,
            },
            clients,
            plr_mean: msgs.plr_mean,
            plr_max: msgs.plr_max,
            plr_event_mean: msgs.plr_event_mean,
            plr_event_max: msgs.plr_event_max,
            loss_causes: LossCauses {
                no_caching: msgs.lost_no_caching,
                coap_give_up: msgs.lost_give_up,
                net: mesh.drops.clone(),
            },
            retransmissions_per_frame_mean: msgs.retransmissions_per_unit_mean,
            retransmissions_per_frame_max: msgs.retransmissions_per_unit_max,
            retransmissions_per_message_mean: msgs.retransmissions_per_message_mean,
            early_retransmissions_mean: msgs.early_retransmissions_mean,
            early_retransmissions_max: msgs.early_retransmissions_max,
            rto_first_s: msgs.rto_first_s,
            rtt_weak_s: msgs.rtt_weak_s,
            rtt_strong_s: msgs.rtt_strong_s,
            unit_rtt_s: msgs.unit_rtt_s,
            mac: mesh.mac,
            conservation: mesh.conservation,
            sim_time_s: (run.duration_s * 1e9).round() as u64 as f64 / 1e9,
            wall_s: r.wall_s,
            events: r.events + msgs.disarmed_timers_due,
        })
    }
}
