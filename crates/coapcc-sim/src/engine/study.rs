//! The mesh study's transport: CoAP clients that send the units of the message workload
//! ([`crate::messages`]) one reliable exchange at a time, and the sink that answers every
//! request copy, over the mesh network ([`MeshLink`], built from the study's configuration),
//! driven by the engine's loop.
//!
//! Each unit is one Confirmable exchange on `coapcc-proto`'s reliability layer through
//! [`ReliableSender`] (NSTART = 1, the algorithm's pacing deferring a start). The model
//! schedules its own events in the engine's queue ([`Model::event`]): the workload's arrivals,
//! each exchange's retransmission timer (one event per armed timer, tagged with the client's
//! token: a timer whose exchange finished still comes up, and is ignored) and deferred starts.
//! The sink's answers after its processing delay go through the engine's server queue. Every
//! event takes its `seq` from the engine's counter, so the loop orders the model's events, the
//! server's and the network's by `(time, seq)`: the order in which they were scheduled, as in
//! the study's own event loop before it ran on the engine (the mesh regression set holds the
//! same results, byte for byte).
//!
//! The metrics (PLR per client, loss causes, RTO and RTT distributions, early
//! retransmissions, hops) are the study's [`MeshReport`], assembled from the model's counters,
//! the network's and the engine's event count.

use std::io::Write;

use coapcc_cc::{AlgorithmConfig, EstimatorSnapshot, Instant, SplitMix64};
use coapcc_mesh::config::{MeshConfig, Traffic};
use coapcc_mesh::radio::Medium;
use coapcc_mesh::reliability::{ReliableSender, TimerStep};
use coapcc_mesh::report::{ClientReport, Conservation, LossCauses, MeshReport, Summary, TopologyReport};
use coapcc_mesh::MacRecord;
use slab::Slab;

use super::medium::MeshLink;
use super::*;
use crate::config::GroupConfig;
use crate::messages::{Arrival, Messages, Msg};

/// Stream id base of the clients' dither streams (plus the client's node), the study's
/// numbering.
pub(crate) const STREAM_STUDY_DITHER: u64 = 1000;

/// What a packet carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A copy of a request (one unit).
    Request,
    /// The sink's piggybacked response to one request copy.
    Response,
    /// A bare frame injected by a test (no CoAP).
    Raw,
}

/// An event the model schedules in the engine's queue.
#[derive(Clone, Copy, Debug)]
enum StudyEv {
    /// The workload's arrival.
    Arrival(Arrival),
    /// The retransmission timer armed for client `client`'s exchange when its token was
    /// `token`.
    Coap { client: u32, token: u32 },
    /// A unit whose start the algorithm's pacing deferred may start.
    Begin { client: u32 },
}

/// Per client: its node, its reliability state, dither, token and counters.
struct StudyClient {
    node: u16,
    rel: ReliableSender,
    rng: SplitMix64,
    /// Bumped whenever the exchange's timer is disarmed (ACK) or re-armed for a new unit.
    token: u32,
    frames: u64,
    retransmissions: u64,
    rto_first_sum: f64,
    rto_first_max: f64,
}

const AT_SINK0: u8 = 1;
const ACK_BACK0: u8 = 2;

/// Per exchange (unit): its client, retransmissions, whether copy 0 reached the sink and its
/// answer came back.
#[derive(Clone, Copy)]
struct ExRec {
    client: u32,
    retx: u32,
    flags: u8,
}

/// The mesh study's model (see the module documentation).
pub(crate) struct Study {
    cfg: MeshConfig,
    cc_resolved: String,
    wl: Messages,
    cl: Vec<StudyClient>,
    exrecs: Vec<ExRec>,
    /// Scheduled events by id (a slab; freed ids are reused).
    evs: Slab<StudyEv>,
    /// Scratch for the messages of an arrival.
    arrivals: Vec<(u32, u32, bool)>,
    response_psdu: u32,
    no_caching: u64,
    give_up: u64,
    rto_first: Vec<f64>,
    rtt_weak: Vec<f64>,
    rtt_strong: Vec<f64>,
    unit_rtt: Vec<f64>,
    trace: Option<Box<dyn Write>>,
    trace_error: Option<std::io::Error>,
}

impl Model for Study {
    type Buf = Kind;
    const FLOW_STARTS: bool = false;

    /// Refused: a study is built from its own configuration ([`StudyRun::new`]), never from
    /// a [`SimConfig`].
    fn try_new(_cfg: &SimConfig, _algs: &[GroupAlg]) -> Result<Self, ConfigError> {
        Err(ConfigError::Invalid {
            field: "topology.mesh".into(),
            problem: "the mesh study runs from a mesh configuration (coapcc mesh)".into(),
        })
    }

    fn timer_slots(&self, _clients: usize) -> usize {
        0
    }

    fn needs_log(&self, _c: usize) -> bool {
        false
    }

    fn begin(sim: &mut Sim<'_, Self>, c: usize) {
        start_unit(sim, c as u32);
    }

    /// No timer slots: the exchanges' timers are the model's own events.
    fn timer(_sim: &mut Sim<'_, Self>, _slot: usize) {}

    fn at_server(sim: &mut Sim<'_, Self>, p: Packet<Kind>) {
        if p.buf != Kind::Request {
            return;
        }
        if p.copy == 0 {
            sim.m.exrecs[p.exchange as usize].flags |= AT_SINK0;
        }
        // Block1 NUM 0: the option has the same size for NUM < 16 (messages up to 16 blocks).
        let psdu = sim.m.response_psdu;
        sim.server_answer(Packet { buf: Kind::Response, ..p }, psdu, 0);
    }

    fn server_send(sim: &mut Sim<'_, Self>, p: Packet<Kind>, _sid: u64) {
        let psdu = sim.m.response_psdu;
        sim.send_response(p, psdu);
    }

    fn at_client(sim: &mut Sim<'_, Self>, p: Packet<Kind>) {
        if p.buf == Kind::Response {
            client_receive(sim, p);
        }
    }

    fn reset(_sim: &mut Sim<'_, Self>, _c: usize) {}

    fn snapshot(&self, c: usize) -> Snapshot {
        self.cl[c].rel.snapshot()
    }

    fn event(sim: &mut Sim<'_, Self>, id: u32) {
        let ev = sim.m.evs.remove(id as usize);
        match ev {
            StudyEv::Arrival(a) => arrival(sim, a),
            StudyEv::Coap { client, token } => coap_timer(sim, client, token),
            StudyEv::Begin { client } => start_unit(sim, client),
        }
    }
}

impl<M: Model> Sim<'_, M> {
    /// Schedule the model's event `id` at `time` (its `seq` the next of the counter).
    pub(super) fn schedule_model(&mut self, time: Nanos, id: u32) {
        let seq = self.next_seq();
        self.heap.push(Ev { time, seq, kind: EvKind::Model(id) });
    }
}

/// Schedule `ev` at `t`.
fn schedule(sim: &mut Sim<'_, Study>, t: Nanos, ev: StudyEv) {
    let id = sim.m.evs.insert(ev) as u32;
    sim.schedule_model(t, id);
}

fn arrival(sim: &mut Sim<'_, Study>, a: Arrival) {
    let mut msgs = std::mem::take(&mut sim.m.arrivals);
    let next = sim.m.wl.arrive(sim.now, a, &mut msgs);
    for &(c, bytes, event) in &msgs {
        let lost_before = sim.m.wl.clients[c as usize].counts.lost_no_caching;
        if sim.m.wl.generate(c as usize, bytes, event).is_some() {
            start_unit(sim, c);
        } else if sim.m.wl.clients[c as usize].counts.lost_no_caching > lost_before {
            sim.m.no_caching += 1;
        }
    }
    sim.m.arrivals = msgs;
    if let Some((t, a)) = next {
        schedule(sim, t, StudyEv::Arrival(a));
    }
}

/// Client `c` starts its current unit now, or when the algorithm's pacing allows.
fn start_unit(sim: &mut Sim<'_, Study>, c: u32) {
    let now = sim.now;
    if let Some(t) = sim.m.cl[c as usize].rel.ready_at(Instant::from_nanos(now)) {
        schedule(sim, t.as_nanos(), StudyEv::Begin { client: c });
        return;
    }
    let m = &mut sim.m;
    let exch = m.exrecs.len() as u32;
    m.exrecs.push(ExRec { client: c, retx: 0, flags: 0 });
    let cl = &mut m.cl[c as usize];
    let t0 = cl.rel.start(Instant::from_nanos(now), &mut cl.rng);
    let t0s = t0.as_secs_f64();
    cl.frames += 1;
    cl.rto_first_sum += t0s;
    cl.rto_first_max = cl.rto_first_max.max(t0s);
    m.rto_first.push(t0s);
    cl.token = cl.token.wrapping_add(1);
    let token = cl.token;
    m.wl.clients[c as usize].cur.as_mut().expect("a message in flight").exch = exch;
    schedule(sim, now + t0.as_nanos() as Nanos, StudyEv::Coap { client: c, token });
    send_copy(sim, c, 0);
}

/// Client `c` sends copy `copy` of its current unit to the sink.
fn send_copy(sim: &mut Sim<'_, Study>, c: u32, copy: u32) {
    let m = sim.m.wl.clients[c as usize].cur.expect("a message in flight");
    let psdu = sim.m.cfg.request_psdu(sim.m.wl.unit_payload(&m), m.unit);
    let seq = sim.next_seq();
    let p = Packet { seq, client: c, exchange: m.exch, copy: copy as u16, echo: copy as u16, buf: Kind::Request };
    sim.send_up(c as usize, psdu, p);
}

fn coap_timer(sim: &mut Sim<'_, Study>, c: u32, token: u32) {
    let now = sim.now;
    let m = &mut sim.m;
    let cl = &mut m.cl[c as usize];
    let Some(cur) = m.wl.clients[c as usize].cur else { return };
    if cl.token != token {
        return;
    }
    match cl.rel.on_timer(Instant::from_nanos(now)) {
        TimerStep::Retransmit { copy, timer } => {
            cl.retransmissions += 1;
            m.exrecs[cur.exch as usize].retx += 1;
            schedule(sim, now + timer.as_nanos() as Nanos, StudyEv::Coap { client: c, token });
            send_copy(sim, c, copy);
        }
        TimerStep::GiveUp => {
            let msg = m.wl.unit_failed(c as usize).expect("checked");
            m.give_up += 1;
            trace_exchange(sim, c, &msg, "give_up", None);
            next_pending(sim, c);
        }
    }
}

fn next_pending(sim: &mut Sim<'_, Study>, c: u32) {
    if sim.m.wl.next_pending(c as usize).is_some() {
        start_unit(sim, c);
    }
}

/// A response reached its client.
fn client_receive(sim: &mut Sim<'_, Study>, p: Packet<Kind>) {
    let m = &mut sim.m;
    if p.copy == 0 {
        m.exrecs[p.exchange as usize].flags |= ACK_BACK0;
    }
    let c = p.client;
    let Some(cur) = m.wl.clients[c as usize].cur else { return };
    if cur.exch != p.exchange {
        return;
    }
    let cl = &mut m.cl[c as usize];
    let before = cl.rel.snapshot();
    let Some(acked) = cl.rel.on_ack(Instant::from_nanos(sim.now), p.copy as u32) else { return };
    let after = cl.rel.snapshot();
    let changed = |a: Option<EstimatorSnapshot>, b: Option<EstimatorSnapshot>| match (a, b) {
        (_, None) => None,
        (None, Some(b)) => Some(b.rto.as_secs_f64()),
        (Some(a), Some(b)) => (a != b).then_some(b.rto.as_secs_f64()),
    };
    m.rtt_strong.extend(changed(before.strong, after.strong));
    m.rtt_weak.extend(changed(before.weak, after.weak));
    let rtt = acked.rtt.as_secs_f64();
    m.unit_rtt.push(rtt);
    cl.token = cl.token.wrapping_add(1);
    let more = m.wl.unit_acked(c as usize);
    trace_exchange(sim, c, &cur, "acked", Some(rtt));
    if more {
        start_unit(sim, c);
    } else {
        next_pending(sim, c);
    }
}

/// One trace line for unit `m.unit` of client `c`'s message `m`.
fn trace_exchange(sim: &mut Sim<'_, Study>, c: u32, m: &Msg, outcome: &str, rtt: Option<f64>) {
    let s = &mut sim.m;
    let Some(out) = s.trace.as_mut() else { return };
    if s.trace_error.is_some() {
        return;
    }
    let rec = s.exrecs[m.exch as usize];
    let rtt = rtt.map_or("null".to_string(), |v| format!("{v:.9}"));
    let r = writeln!(
        out,
        "{{\"t_s\":{:.9},\"client\":{},\"node\":{},\"exchange\":{},\"unit\":{},\"units\":{},\"bytes\":{},\"event\":{},\"outcome\":\"{}\",\"retransmissions\":{},\"rto_first_s\":{:.9},\"rtt_s\":{}}}",
        sim.now as f64 / 1e9,
        c,
        s.cl[c as usize].node,
        m.exch,
        m.unit,
        m.units,
        m.bytes,
        m.event,
        outcome,
        rec.retx,
        s.rto_first[m.exch as usize],
        rtt
    );
    if let Err(e) = r {
        s.trace_error = Some(e);
    }
}

/// Copy a packet the network delivers again (MAC duplicate detection off).
fn copy_packet(p: &Packet<Kind>) -> Packet<Kind> {
    p.clone()
}

/// A mesh study run on the engine, ready to run.
pub(crate) struct StudyRun {
    sim: Sim<'static, Study>,
}

impl StudyRun {
    /// Validate `cfg`, build the network, the clients and the workload, and schedule the
    /// workload's first arrivals.
    pub(crate) fn new(cfg: &MeshConfig) -> Result<StudyRun, String> {
        cfg.validate()?;
        Traffic::parse(&cfg.traffic)?;
        let cc = AlgorithmConfig::parse(&cfg.cc).map_err(|e| format!("bad --cc {:?}: {e}", cfg.cc))?;
        let link = MeshLink::for_study(cfg, copy_packet)?;
        let hosts = link.client_nodes().to_vec();
        let wl = Messages::new(cfg, hosts.len())?;
        let cl = hosts
            .iter()
            .map(|&node| StudyClient {
                node,
                rel: ReliableSender::new(cc.build()),
                rng: SplitMix64::stream(cfg.seed, STREAM_STUDY_DITHER + node as u64),
                token: 0,
                frames: 0,
                retransmissions: 0,
                rto_first_sum: 0.0,
                rto_first_max: 0.0,
            })
            .collect();
        let model = Study {
            cc_resolved: cc.to_string(),
            wl,
            cl,
            exrecs: Vec::new(),
            evs: Slab::new(),
            arrivals: Vec::new(),
            response_psdu: cfg.response_psdu(0),
            no_caching: 0,
            give_up: 0,
            rto_first: Vec::new(),
            rtt_weak: Vec::new(),
            rtt_strong: Vec::new(),
            unit_rtt: Vec::new(),
            trace: None,
            trace_error: None,
            cfg: cfg.clone(),
        };
        // The engine's part: one group of clients (one per node but the root and the sink),
        // the study's duration as the time bound, no event budget (the duration bounds the
        // run), the sink's processing delay.
        let sim_cfg = SimConfig {
            seed: cfg.seed,
            groups: vec![GroupConfig { cc: cc.to_string(), clients: hosts.len() as u32 }],
            max_sim_time_s: cfg.duration_s,
            ..SimConfig::default()
        };
        let mut sim = Sim::with_model(&sim_cfg, &[], model, None).map_err(|e| e.to_string())?;
        sim.bound = (cfg.duration_s * 1e9).round() as Nanos;
        sim.max_events = u64::MAX;
        sim.server_delay = cfg.app.server_delay_us as Nanos * 1_000;
        sim.mesh = Some(link);
        for (t, a) in sim.m.wl.first_arrivals() {
            schedule(&mut sim, t, StudyEv::Arrival(a));
        }
        Ok(StudyRun { sim })
    }

    fn net(&self) -> &coapcc_mesh::MeshNet<u32> {
        self.sim.mesh.as_ref().expect("a study has a network").net()
    }

    /// Record every MAC event.
    pub(crate) fn enable_mac_log(&mut self) {
        self.sim.mesh.as_mut().expect("a study has a network").net_mut().enable_mac_log();
    }

    /// The MAC events recorded so far.
    pub(crate) fn mac_log(&self) -> &[MacRecord] {
        self.net().mac_log()
    }

    /// Write one JSON line per finished exchange to `out`.
    pub(crate) fn set_trace(&mut self, out: Box<dyn Write>) {
        self.sim.m.trace = Some(out);
    }

    /// With duty cycling, the first wake-up of `node` at or after `t_ns`.
    pub(crate) fn wake_up_after(&self, node: usize, t_ns: u64) -> Option<u64> {
        self.net().wake_up_after(node, t_ns)
    }

    /// The DODAG.
    pub(crate) fn dodag(&self) -> &coapcc_mesh::routing::Dodag {
        self.net().dodag()
    }

    /// The radio tables.
    pub(crate) fn medium(&self) -> &Medium {
        self.net().medium()
    }

    /// Inject a bare frame of `psdu` bytes at node `src` for its neighbour `to` at `at_ns`.
    pub(crate) fn inject(&mut self, at_ns: u64, src: usize, to: usize, psdu: u32) {
        let sim = &mut self.sim;
        let seq = sim.next_seq();
        let p = Packet { seq, client: 0, exchange: 0, copy: NONE, echo: NONE, buf: Kind::Raw };
        let link = sim.mesh.as_mut().expect("a study has a network");
        link.inject(at_ns, &mut sim.seq, src as u16, to as u16, psdu, p);
    }

    /// Run to the configured duration; the report, and the MAC log when `log` (empty unless
    /// [`StudyRun::enable_mac_log`] was called).
    pub(crate) fn run(mut self, log: bool) -> Result<(MeshReport, Vec<MacRecord>), String> {
        let wall = std::time::Instant::now();
        self.sim.run();
        let sim = &mut self.sim;
        if let Some(e) = sim.m.trace_error.take() {
            return Err(format!("cannot write the trace: {e}"));
        }
        if let Some(t) = sim.m.trace.as_mut() {
            t.flush().map_err(|e| format!("cannot write the trace: {e}"))?;
        }
        let mut r = self.report();
        r.wall_s = wall.elapsed().as_secs_f64();
        let mac_log = match (log, self.sim.mesh.as_mut().and_then(|m| m.net_mut().take_mac_log())) {
            (true, Some(l)) => l,
            _ => Vec::new(),
        };
        Ok((r, mac_log))
    }

    /// The study's report (all but `wall_s`).
    fn report(&self) -> MeshReport {
        let s = &self.sim.m;
        let net = self.net();
        let (topo, dodag, sink) = (net.topology(), net.dodag(), net.sink());
        let n = s.cl.len();
        let mut first_at_sink = vec![0u64; n];
        let mut early = vec![0u64; n];
        for e in &s.exrecs {
            if e.flags & AT_SINK0 != 0 {
                first_at_sink[e.client as usize] += 1;
                if e.flags & ACK_BACK0 != 0 && e.retx > 0 {
                    early[e.client as usize] += 1;
                }
            }
        }
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let clients: Vec<ClientReport> =
            s.cl.iter()
                .zip(&s.wl.clients)
                .enumerate()
                .map(|(i, (c, w))| {
                    let k = &w.counts;
                    let in_flight = w.cur.is_some() as u64 + w.pending.len() as u64;
                    let lost = k.lost_no_caching + k.lost_give_up;
                    let started = k.messages - k.lost_no_caching - w.pending.len() as u64;
                    ClientReport {
                        node: c.node as usize,
                        hops: dodag.hops(c.node as usize, sink),
                        messages: k.messages,
                        lost,
                        plr: ratio(lost, k.messages - in_flight),
                        lost_no_caching: k.lost_no_caching,
                        lost_give_up: k.lost_give_up,
                        delivered: k.delivered,
                        in_flight_at_end: in_flight,
                        event_messages: k.event_messages,
                        event_lost: k.event_lost,
                        frames: c.frames,
                        retransmissions: c.retransmissions,
                        retransmissions_per_frame: ratio(c.retransmissions, c.frames),
                        retransmissions_per_message: ratio(c.retransmissions, started),
                        first_tx_at_sink: first_at_sink[i],
                        early_retransmission_count: early[i],
                        early_retransmissions: ratio(early[i], first_at_sink[i]),
                        rto_first_mean_s: if c.frames == 0 { 0.0 } else { c.rto_first_sum / c.frames as f64 },
                        rto_first_max_s: c.rto_first_max,
                    }
                })
                .collect();
        let mean = |f: &dyn Fn(&ClientReport) -> f64| {
            if clients.is_empty() {
                0.0
            } else {
                clients.iter().map(f).sum::<f64>() / clients.len() as f64
            }
        };
        let max = |f: &dyn Fn(&ClientReport) -> f64| clients.iter().map(f).fold(0.0, f64::max);
        let events = matches!(s.wl.traffic(), Traffic::Events { .. });
        let event_plr = |c: &ClientReport| ratio(c.event_lost, c.event_messages);
        // Responses waiting for the server's delay were created but are not in the network
        // yet.
        let waiting = self.sim.server_q.len() as u64;
        let cons = net.conservation();
        let conservation = Conservation {
            created: cons.created + waiting,
            in_network_at_end: cons.in_network_at_end + waiting,
            ..cons
        };
        MeshReport {
            config: s.cfg.clone(),
            cc_resolved: s.cc_resolved.clone(),
            topology: TopologyReport {
                nodes: topo.len(),
                root: dodag.root,
                sink,
                parents: dodag.parent.clone(),
                depth: dodag.depth.clone(),
                positions: topo.positions.clone(),
            },
            plr_mean: mean(&|c| c.plr),
            plr_max: max(&|c| c.plr),
            plr_event_mean: events.then(|| mean(&event_plr)),
            plr_event_max: events.then(|| max(&event_plr)),
            loss_causes: LossCauses { no_caching: s.no_caching, coap_give_up: s.give_up, ..net.drop_causes().clone() },
            retransmissions_per_frame_mean: mean(&|c| c.retransmissions_per_frame),
            retransmissions_per_frame_max: max(&|c| c.retransmissions_per_frame),
            retransmissions_per_message_mean: mean(&|c| c.retransmissions_per_message),
            early_retransmissions_mean: mean(&|c| c.early_retransmissions),
            early_retransmissions_max: max(&|c| c.early_retransmissions),
            rto_first_s: Summary::of(&s.rto_first),
            rtt_weak_s: Summary::of(&s.rtt_weak),
            rtt_strong_s: Summary::of(&s.rtt_strong),
            unit_rtt_s: Summary::of(&s.unit_rtt),
            mac: net.mac_counters().clone(),
            conservation,
            sim_time_s: self.sim.bound as f64 / 1e9,
            wall_s: 0.0,
            events: self.sim.events,
            clients,
        }
    }
}
