//! The message workload on the engine ([`Messages`]): the open-loop arrivals of
//! [`crate::workload::messages`] as the workload's own events in the engine's queue, each
//! unit one exchange of the CoAP endpoints, and the study's metrics as an observer of the
//! exchange events ([`MessageMetrics`]: PLR per client, loss causes, RTO and RTT
//! distributions, early retransmissions), assembled into [`MessagesReport`].
//!
//! A client sends one unit at a time: the workload starts a unit when a message arrives for
//! an idle client, and after each unit's end it answers with the message's next unit, the
//! next queued message, or nothing (the client waits for its next arrival).

use core::time::Duration;

use coapcc_cc::{EstimatorSnapshot, SplitMix64};
use slab::Slab;

use super::protocol::{CoapEndpoints, Protocol};
use super::sim::{Answer, ExRec, Sim};
use super::workload::{Acked, ExchangeObserver, Workload};
use super::STREAM_MESSAGES;
use crate::config::{invalid, ConfigError, SimConfig, WorkloadKind};
use crate::link::Nanos;
use crate::report::{MessageClientReport, MessagesReport, Summary};
use crate::trace::{ExchangeOutcome, UnitTrace};
use crate::workload::messages::{self as wl, Arrival, UnitSizes};
use crate::workload::Next;

/// The message workload of a run, hosted by the engine.
pub(crate) struct Messages {
    wl: wl::Messages,
    sizes: UnitSizes,
    /// Scheduled arrivals, by id (a slab: freed ids are reused).
    arrivals: Slab<Arrival>,
    /// Scratch for the messages of an arrival.
    scratch: Vec<(u32, u32, bool)>,
}

/// The arrival `id` is due.
fn arrival_call<M: CoapEndpoints<Messages>>(sim: &mut Sim<'_, M, Messages>, id: u32) {
    let now = sim.now();
    let w = sim.workload_mut();
    let a = w.arrivals.remove(id as usize);
    let mut msgs = std::mem::take(&mut w.scratch);
    let next = w.wl.arrive(now, a, &mut msgs);
    for &(c, bytes, event) in &msgs {
        if sim.workload_mut().wl.generate(c as usize, bytes, event).is_some() {
            M::begin(sim, c as usize);
        }
    }
    sim.workload_mut().scratch = msgs;
    if let Some((t, a)) = next {
        schedule(sim, t, a);
    }
}

/// Schedule arrival `a` at `t`.
fn schedule<M: CoapEndpoints<Messages>>(sim: &mut Sim<'_, M, Messages>, t: Nanos, a: Arrival) {
    let id = sim.workload_mut().arrivals.insert(a) as u32;
    sim.schedule(t, arrival_call::<M>, id);
}

impl Workload for Messages {
    type Plan = ();
    type Observer = MessageMetrics;
    const FLOW_STARTS: bool = false;

    fn new(cfg: &SimConfig) -> Result<(Self, MessageMetrics), ConfigError> {
        let mc = cfg.workload.messages.clone().unwrap_or_default();
        let n = cfg.total_clients() as usize;
        let rng = SplitMix64::stream(cfg.seed, STREAM_MESSAGES);
        let w = wl::Messages::new(cfg.workload.kind, &mc, n, rng).map_err(|e| invalid("workload.kind", e))?;
        let frame = cfg.topology.mesh.as_ref().map(|m| m.frame.clone()).unwrap_or_default();
        let bound = (cfg.max_sim_time_s * 1e9).round() as Nanos;
        let this = Messages { wl: w, sizes: UnitSizes::new(&mc, &frame), arrivals: Slab::new(), scratch: Vec::new() };
        Ok((this, MessageMetrics::new(n, bound)))
    }

    fn plan(&self, _c: usize, _rng: SplitMix64) {}

    /// A client waits for its first message (the engine starts no flow for this workload,
    /// [`Workload::FLOW_STARTS`]: its arrivals start the clients).
    fn first(&mut self, _c: usize, _plan: &mut ()) -> Next {
        Next::Idle
    }

    fn after(&mut self, c: usize, _plan: &mut (), success: bool) -> Next {
        let more = if success {
            self.wl.unit_acked(c)
        } else {
            self.wl.unit_failed(c);
            false
        };
        if more || self.wl.next_pending(c).is_some() {
            Next::Exchange { delay_ns: 0, reset: false }
        } else {
            Next::Idle
        }
    }

    fn request_len(&self, c: usize) -> Option<u32> {
        let m = self.wl.current(c)?;
        Some(self.sizes.request_len(self.wl.unit_payload(m), m.unit))
    }

    /// The first arrivals.
    fn setup<M: CoapEndpoints<Self>>(sim: &mut Sim<'_, M, Self>) {
        for (t, a) in sim.workload_mut().wl.first_arrivals() {
            schedule(sim, t, a);
        }
    }

    /// One record per unit ([`UnitTrace`]).
    fn trace<M: CoapEndpoints<Self>>(
        sim: &mut Sim<'_, M, Self>,
        c: usize,
        outcome: ExchangeOutcome,
        answer: Option<Answer>,
    ) {
        let Some(m) = sim.workload().wl.current(c).copied() else { return };
        let rec = sim.current_record(c);
        let obs = sim.observer();
        let x = obs.current[c];
        let rtt = answer.and_then(|_| obs.unit_rtt.last().copied());
        let t = UnitTrace {
            t_s: sim.now() as f64 / 1e9,
            client: c as u32,
            node: sim.client_node(c).unwrap_or(0),
            exchange: x,
            unit: m.unit,
            units: m.units,
            bytes: m.bytes,
            event: m.event,
            outcome: match outcome {
                ExchangeOutcome::Ack => "acked",
                ExchangeOutcome::GiveUp => "give_up",
            },
            retransmissions: u32::from(rec.tx.saturating_sub(1)),
            rto_first_s: obs.rto_first[x as usize],
            rtt_s: rtt,
        };
        if let Some(sink) = sim.trace_sink() {
            sink.unit(&t);
        }
    }

    fn report<M: Protocol<Self>>(sim: &Sim<'_, M, Self>) -> Option<MessagesReport> {
        Some(sim.workload().report(sim))
    }
}

impl Messages {
    /// The CoAP length of the server's answer to a unit.
    pub(crate) fn response_len(cfg: &SimConfig) -> Option<u32> {
        if !cfg.workload.kind.is_messages() {
            return None;
        }
        let mc = cfg.workload.messages.clone().unwrap_or_default();
        let frame = cfg.topology.mesh.as_ref().map(|m| m.frame.clone()).unwrap_or_default();
        Some(UnitSizes::new(&mc, &frame).response_len())
    }

    /// The workload's part of the report.
    fn report<M: Protocol<Self>>(&self, sim: &Sim<'_, M, Self>) -> MessagesReport {
        let obs = sim.observer();
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let clients: Vec<MessageClientReport> = self
            .wl
            .clients
            .iter()
            .enumerate()
            .map(|(c, w)| {
                let k = &w.counts;
                let (units, transmissions) = sim.exchange_counts(c);
                let retransmissions = transmissions - units;
                let in_flight = w.cur.is_some() as u64 + w.pending.len() as u64;
                let lost = k.lost_no_caching + k.lost_give_up;
                let started = k.messages - k.lost_no_caching - w.pending.len() as u64;
                let (sink0, early, retx) = (obs.first_at_sink[c], obs.early[c], obs.retransmitted[c]);
                MessageClientReport {
                    messages: k.messages,
                    lost,
                    plr: ratio(lost, k.messages - in_flight),
                    lost_no_caching: k.lost_no_caching,
                    lost_give_up: k.lost_give_up,
                    delivered: k.delivered,
                    in_flight_at_end: in_flight,
                    event_messages: k.event_messages,
                    event_lost: k.event_lost,
                    units,
                    retransmissions,
                    retransmissions_per_unit: ratio(retransmissions, units),
                    retransmissions_per_message: ratio(retransmissions, started),
                    first_tx_at_sink: sink0,
                    early_retransmission_count: early,
                    early_retransmissions: ratio(early, sink0),
                    retransmitted_units: retx,
                    rto_first_mean_s: if units == 0 { 0.0 } else { obs.rto_first_sum[c] / units as f64 },
                    rto_first_max_s: obs.rto_first_max[c],
                }
            })
            .collect();
        let mean = |f: &dyn Fn(&MessageClientReport) -> f64| {
            if clients.is_empty() {
                0.0
            } else {
                clients.iter().map(f).sum::<f64>() / clients.len() as f64
            }
        };
        let max = |f: &dyn Fn(&MessageClientReport) -> f64| clients.iter().map(f).fold(0.0, f64::max);
        let events = matches!(self.wl.traffic(), WorkloadKind::Events { .. });
        let event_plr = |c: &MessageClientReport| ratio(c.event_lost, c.event_messages);
        MessagesReport {
            plr_mean: mean(&|c| c.plr),
            plr_max: max(&|c| c.plr),
            plr_event_mean: events.then(|| mean(&event_plr)),
            plr_event_max: events.then(|| max(&event_plr)),
            lost_no_caching: clients.iter().map(|c| c.lost_no_caching).sum(),
            lost_give_up: obs.give_ups,
            retransmissions_per_unit_mean: mean(&|c| c.retransmissions_per_unit),
            retransmissions_per_unit_max: max(&|c| c.retransmissions_per_unit),
            retransmissions_per_message_mean: mean(&|c| c.retransmissions_per_message),
            early_retransmissions_mean: mean(&|c| c.early_retransmissions),
            early_retransmissions_max: max(&|c| c.early_retransmissions),
            rto_first_s: Summary::of(&obs.rto_first),
            rtt_weak_s: Summary::of(&obs.rtt_weak),
            rtt_strong_s: Summary::of(&obs.rtt_strong),
            unit_rtt_s: Summary::of(&obs.unit_rtt),
            disarmed_timers_due: obs.disarmed_due,
            clients,
        }
    }
}

/// What the message workload's study measures of the exchanges (see [`MessagesReport`]).
pub(crate) struct MessageMetrics {
    /// The run's time bound (a disarmed timer counts when due within it).
    bound: Nanos,
    /// Exchanges started, all clients.
    exchanges: u32,
    /// Per client: the run-wide index of its current exchange.
    current: Vec<u32>,
    /// Per client: sum and largest of the first timers.
    rto_first_sum: Vec<f64>,
    rto_first_max: Vec<f64>,
    /// Per client: exchanges whose copy 0 reached the server; of those, retransmitted although
    /// copy 0's response came back.
    first_at_sink: Vec<u64>,
    early: Vec<u64>,
    /// Per client: exchanges retransmitted at least once.
    retransmitted: Vec<u64>,
    /// The first timer of every exchange, by run-wide index.
    rto_first: Vec<f64>,
    rtt_weak: Vec<f64>,
    rtt_strong: Vec<f64>,
    unit_rtt: Vec<f64>,
    give_ups: u64,
    disarmed_due: u64,
}

impl MessageMetrics {
    fn new(clients: usize, bound: Nanos) -> Self {
        MessageMetrics {
            bound,
            exchanges: 0,
            current: vec![0; clients],
            rto_first_sum: vec![0.0; clients],
            rto_first_max: vec![0.0; clients],
            first_at_sink: vec![0; clients],
            early: vec![0; clients],
            retransmitted: vec![0; clients],
            rto_first: Vec::new(),
            rtt_weak: Vec::new(),
            rtt_strong: Vec::new(),
            unit_rtt: Vec::new(),
            give_ups: 0,
            disarmed_due: 0,
        }
    }
}

/// The estimator's RTO after an update: when it changed (or appeared).
fn changed(before: Option<EstimatorSnapshot>, after: Option<EstimatorSnapshot>) -> Option<f64> {
    match (before, after) {
        (_, None) => None,
        (None, Some(b)) => Some(b.rto.as_secs_f64()),
        (Some(a), Some(b)) => (a != b).then_some(b.rto.as_secs_f64()),
    }
}

impl ExchangeObserver for MessageMetrics {
    const SNAPSHOTS: bool = true;
    const RECORDS: bool = true;

    fn started(&mut self, c: usize, t0: Duration) {
        self.current[c] = self.exchanges;
        self.exchanges += 1;
        let t = t0.as_secs_f64();
        self.rto_first_sum[c] += t;
        self.rto_first_max[c] = self.rto_first_max[c].max(t);
        self.rto_first.push(t);
    }

    fn acked(&mut self, _c: usize, a: &Acked) {
        self.rtt_strong.extend(changed(a.before.strong, a.after.strong));
        self.rtt_weak.extend(changed(a.before.weak, a.after.weak));
        self.unit_rtt.push(a.rtt.as_secs_f64());
        if a.deadline <= self.bound {
            self.disarmed_due += 1;
        }
    }

    fn gave_up(&mut self, _c: usize) {
        self.give_ups += 1;
    }

    fn record_final(&mut self, c: usize, r: &ExRec) {
        self.retransmitted[c] += (r.tx > 1) as u64;
        if r.min_req == 0 {
            self.first_at_sink[c] += 1;
            if r.min_resp == 0 && r.tx > 1 {
                self.early[c] += 1;
            }
        }
    }
}
