//! The mesh study's host: CoAP clients that split messages into units, the sink, the
//! workloads and the metrics, on top of the network component ([`MeshNet`]: radio medium,
//! MAC, queues, forwarding).
//!
//! Time is integer nanoseconds. The host's own events (workload, CoAP timers, delayed server
//! answers) and the network's are ordered by (time, insertion sequence) from one counter, and
//! the loop merges the two queues in that order, so a run is a pure function of the
//! configuration and the seed. Randomness comes from independent SplitMix64 streams of the
//! seed: the network's (MAC backoffs, frame reception, duty-cycling phases; see
//! [`crate::net`]), the workload, and one dither stream per client.

use std::collections::{BinaryHeap, VecDeque};
use std::io::Write;

use coapcc_cc::rng::unit_f64;
use coapcc_cc::{AlgorithmConfig, Instant, SplitMix64};

use crate::config::{EventDist, MeshConfig, Traffic, UnitMode};
use crate::net::{below, Delivery, Entry, MacRecord, MeshNet};
use crate::radio::Medium;
use crate::reliability::{ReliableSender, TimerStep};
use crate::report::*;
use crate::routing::Dodag;

type Ns = u64;

/// Random stream numbers (independent streams of the master seed; 1, 2 and 4 are the
/// network's).
const STREAM_WORKLOAD: u64 = 3;
const STREAM_DITHER_BASE: u64 = 1000;

/// What a packet carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A copy of a CoAP request (one unit).
    Request,
    /// The sink's piggybacked response to one request copy.
    Response,
    /// A bare frame injected by a test (no CoAP).
    Raw,
}

/// The host's payload of a network packet.
#[derive(Clone, Copy, Debug)]
struct Packet {
    kind: Kind,
    client: u32,
    exch: u32,
    copy: u32,
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    Periodic {
        client: u32,
    },
    Background {
        client: u32,
    },
    GlobalEvent,
    Coap {
        client: u32,
        token: u32,
    },
    /// A unit whose start the algorithm's pacing deferred may start.
    Begin {
        client: u32,
    },
    /// The sink's response, after its processing delay, enters the network.
    ServerSend {
        to: u16,
        psdu: u32,
        pkt: Packet,
    },
}

#[derive(Clone, Copy)]
struct Msg {
    bytes: u32,
    units: u32,
    unit: u32,
    exch: u32,
    event: bool,
}

#[derive(Default)]
struct ClientStats {
    messages: u64,
    event_messages: u64,
    lost_no_caching: u64,
    lost_give_up: u64,
    event_lost: u64,
    delivered: u64,
    frames: u64,
    retransmissions: u64,
    rto_first_sum: f64,
    rto_first_max: f64,
}

struct Client {
    node: u16,
    rel: ReliableSender,
    rng: SplitMix64,
    token: u32,
    cur: Option<Msg>,
    pending: VecDeque<(u32, bool)>,
    stats: ClientStats,
}

const AT_SINK0: u8 = 1;
const ACK_BACK0: u8 = 2;

#[derive(Clone, Copy)]
struct ExRec {
    client: u32,
    retx: u32,
    flags: u8,
}

/// A mesh simulation, ready to run.
pub struct MeshSim {
    cfg: MeshConfig,
    cc_resolved: String,
    traffic: Traffic,
    net: MeshNet<Packet>,
    clients: Vec<Client>,
    exrecs: Vec<ExRec>,
    heap: BinaryHeap<Entry<Ev>>,
    /// The insertion counter shared with the network.
    seq: u64,
    now: Ns,
    end: Ns,
    events: u64,
    rng_work: SplitMix64,
    period: Ns,
    server_delay: Ns,
    /// Responses created and waiting for the server's delay.
    server_pending: u64,
    // Metrics (the CoAP loss causes; the network's are the network's).
    causes: LossCauses,
    rto_first: Vec<f64>,
    rtt_weak: Vec<f64>,
    rtt_strong: Vec<f64>,
    unit_rtt: Vec<f64>,
    trace: Option<Box<dyn Write>>,
    trace_error: Option<std::io::Error>,
}

impl MeshSim {
    /// Validate `cfg`, build the topology, medium tables and DODAG.
    pub fn new(cfg: &MeshConfig) -> Result<MeshSim, String> {
        cfg.validate()?;
        let cfg = cfg.clone();
        let traffic = Traffic::parse(&cfg.traffic)?;
        let cc = AlgorithmConfig::parse(&cfg.cc).map_err(|e| format!("bad --cc {:?}: {e}", cfg.cc))?;
        let net = MeshNet::new(&cfg)?;
        let (n, root, sink) = (net.topology().len(), net.dodag().root, net.sink());
        let mut clients = Vec::new();
        for v in 0..n {
            if v != root && v != sink {
                clients.push(Client {
                    node: v as u16,
                    rel: ReliableSender::new(cc.build()),
                    rng: SplitMix64::stream(cfg.seed, STREAM_DITHER_BASE + v as u64),
                    token: 0,
                    cur: None,
                    pending: VecDeque::new(),
                    stats: ClientStats::default(),
                });
            }
        }
        let nclients = clients.len().max(1) as f64;
        let period = match traffic {
            Traffic::Periodic { load_kbps } => {
                let t = nclients * cfg.message_bytes as f64 * 8.0 / (load_kbps * 1000.0);
                (t * 1e9).round() as Ns
            }
            _ => 0,
        };
        if matches!(traffic, Traffic::Periodic { .. }) && period < 1_000_000 {
            return Err(format!(
                "traffic {} gives each of the {} clients a message every {:.3} ms; the smallest period accepted is \
                 1 ms (lower the load or the message size)",
                cfg.traffic,
                nclients,
                period as f64 / 1e6
            ));
        }
        let seed = cfg.seed;
        let mut sim = MeshSim {
            cc_resolved: cc.to_string(),
            traffic,
            net,
            clients,
            exrecs: Vec::new(),
            heap: BinaryHeap::new(),
            seq: 0,
            now: 0,
            end: (cfg.duration_s * 1e9).round() as Ns,
            events: 0,
            rng_work: SplitMix64::stream(seed, STREAM_WORKLOAD),
            period,
            server_delay: cfg.app.server_delay_us as Ns * 1_000,
            server_pending: 0,
            causes: LossCauses::default(),
            rto_first: Vec::new(),
            rtt_weak: Vec::new(),
            rtt_strong: Vec::new(),
            unit_rtt: Vec::new(),
            trace: None,
            trace_error: None,
            cfg,
        };
        sim.schedule_workload();
        Ok(sim)
    }

    /// Record every MAC event (see [`MeshSim::mac_log`]).
    pub fn enable_mac_log(&mut self) {
        self.net.enable_mac_log();
    }

    /// The MAC events recorded so far.
    pub fn mac_log(&self) -> &[MacRecord] {
        self.net.mac_log()
    }

    /// Write one JSON line per finished exchange to `out`.
    pub fn set_trace(&mut self, out: Box<dyn Write>) {
        self.trace = Some(out);
    }

    /// With duty cycling, the first wake-up of `node` at or after `t_ns`; `None` when radios
    /// are always on.
    pub fn wake_up_after(&self, node: usize, t_ns: u64) -> Option<u64> {
        self.net.wake_up_after(node, t_ns)
    }

    /// The DODAG.
    pub fn dodag(&self) -> &Dodag {
        self.net.dodag()
    }

    /// The radio tables.
    pub fn medium(&self) -> &Medium {
        self.net.medium()
    }

    /// Inject a bare frame of `psdu` bytes at node `src` for its neighbour `to` at time
    /// `at_ns` (no CoAP, no routing): for MAC tests.
    pub fn inject(&mut self, at_ns: u64, src: usize, to: usize, psdu: u32) {
        let pkt = Packet { kind: Kind::Raw, client: 0, exch: 0, copy: 0 };
        self.net.inject(at_ns, &mut self.seq, src as u16, to as u16, psdu, pkt);
    }

    fn push(&mut self, t: Ns, ev: Ev) {
        self.seq += 1;
        self.heap.push(Entry::new(t, self.seq, ev));
    }

    fn schedule_workload(&mut self) {
        match self.traffic {
            Traffic::None => {}
            Traffic::Periodic { .. } => {
                for c in 0..self.clients.len() as u32 {
                    let phase = if self.cfg.app.random_phase { below(&mut self.rng_work, self.period) } else { 0 };
                    self.push(phase, Ev::Periodic { client: c });
                }
            }
            Traffic::Events { .. } => {
                let bg = (self.cfg.app.background_period_s * 1e9).round() as Ns;
                for c in 0..self.clients.len() as u32 {
                    let phase = below(&mut self.rng_work, bg);
                    self.push(phase, Ev::Background { client: c });
                }
                let first = self.next_event_gap();
                self.push(first, Ev::GlobalEvent);
            }
        }
    }

    fn next_event_gap(&mut self) -> Ns {
        let Traffic::Events { tb_s, .. } = self.traffic else { return 0 };
        let gap = match self.cfg.app.event_dist {
            EventDist::Fixed => tb_s,
            EventDist::Exponential => -(1.0 - unit_f64(&mut self.rng_work)).ln() * tb_s,
        };
        (gap * 1e9).round().max(1.0) as Ns
    }

    /// Run to the configured duration and report, returning the MAC log too (empty unless
    /// [`MeshSim::enable_mac_log`] was called).
    pub fn run_with_log(self) -> Result<(MeshReport, Vec<MacRecord>), String> {
        let mut log = Vec::new();
        let report = self.run_inner(Some(&mut log))?;
        Ok((report, log))
    }

    /// Run to the configured duration and report.
    pub fn run(self) -> Result<MeshReport, String> {
        self.run_inner(None)
    }

    fn run_inner(mut self, log_out: Option<&mut Vec<MacRecord>>) -> Result<MeshReport, String> {
        let wall = std::time::Instant::now();
        loop {
            // The earlier of the two queues' heads by (time, seq).
            let own = self.heap.peek().map(|e| (e.time(), e.seq()));
            let (t, from_net) = match (own, self.net.peek()) {
                (None, None) => break,
                (Some(a), None) => (a.0, false),
                (None, Some(b)) => (b.0, true),
                (Some(a), Some(b)) => {
                    if b < a {
                        (b.0, true)
                    } else {
                        (a.0, false)
                    }
                }
            };
            if t > self.end {
                break;
            }
            self.now = t;
            self.events += 1;
            if from_net {
                if let Some(d) = self.net.poll(&mut self.seq) {
                    self.deliver(d);
                }
            } else {
                let e = self.heap.pop().expect("peeked");
                self.handle(e.ev);
            }
        }
        self.now = self.end;
        if let Some(e) = self.trace_error.take() {
            return Err(format!("cannot write the trace: {e}"));
        }
        if let Some(t) = self.trace.as_mut() {
            t.flush().map_err(|e| format!("cannot write the trace: {e}"))?;
        }
        let mut r = self.report();
        r.wall_s = wall.elapsed().as_secs_f64();
        if let (Some(out), Some(log)) = (log_out, self.net.take_mac_log()) {
            *out = log;
        }
        Ok(r)
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::Periodic { client } => {
                let bytes = self.cfg.message_bytes;
                self.generate(client, bytes, false);
                let t = self.now + self.period;
                self.push(t, Ev::Periodic { client });
            }
            Ev::Background { client } => {
                let bytes = self.cfg.app.background_bytes;
                self.generate(client, bytes, false);
                let t = self.now + (self.cfg.app.background_period_s * 1e9).round() as Ns;
                self.push(t, Ev::Background { client });
            }
            Ev::GlobalEvent => {
                if let Traffic::Events { size_bytes, .. } = self.traffic {
                    for c in 0..self.clients.len() as u32 {
                        self.generate(c, size_bytes, true);
                    }
                }
                let t = self.now + self.next_event_gap();
                self.push(t, Ev::GlobalEvent);
            }
            Ev::Coap { client, token } => self.coap_timer(client, token),
            Ev::Begin { client } => self.start_unit(client),
            Ev::ServerSend { to, psdu, pkt } => {
                self.server_pending -= 1;
                self.send_response(to, psdu, pkt);
            }
        }
    }

    /// A packet the network delivered at its destination.
    fn deliver(&mut self, d: Delivery<Packet>) {
        match d.payload.kind {
            Kind::Raw => {}
            Kind::Request => self.sink_receive(d.payload),
            Kind::Response => self.client_receive(d.payload),
        }
    }

    fn send_response(&mut self, to: u16, psdu: u32, pkt: Packet) {
        let (now, sink) = (self.now, self.net.sink() as u16);
        self.net.push(now, &mut self.seq, sink, to, psdu, pkt);
    }

    // ---------------------------------------------------------------- CoAP

    fn generate(&mut self, c: u32, bytes: u32, event: bool) {
        let cl = &mut self.clients[c as usize];
        cl.stats.messages += 1;
        if event {
            cl.stats.event_messages += 1;
        }
        if cl.cur.is_some() {
            if self.cfg.app.no_caching {
                cl.stats.lost_no_caching += 1;
                if event {
                    cl.stats.event_lost += 1;
                }
                self.causes.no_caching += 1;
            } else {
                cl.pending.push_back((bytes, event));
            }
            return;
        }
        self.start_message(c, bytes, event);
    }

    fn start_message(&mut self, c: u32, bytes: u32, event: bool) {
        let units = match self.cfg.app.unit_mode {
            UnitMode::Message => 1,
            _ => bytes.div_ceil(self.cfg.app.unit_bytes),
        };
        self.clients[c as usize].cur = Some(Msg { bytes, units, unit: 0, exch: 0, event });
        self.start_unit(c);
    }

    fn unit_payload(&self, m: &Msg) -> u32 {
        match self.cfg.app.unit_mode {
            UnitMode::Message => m.bytes,
            _ => (m.bytes - m.unit * self.cfg.app.unit_bytes).min(self.cfg.app.unit_bytes),
        }
    }

    fn start_unit(&mut self, c: u32) {
        if let Some(t) = self.clients[c as usize].rel.ready_at(Instant::from_nanos(self.now)) {
            self.push(t.as_nanos(), Ev::Begin { client: c });
            return;
        }
        let exch = self.exrecs.len() as u32;
        self.exrecs.push(ExRec { client: c, retx: 0, flags: 0 });
        let now = Instant::from_nanos(self.now);
        let cl = &mut self.clients[c as usize];
        let t0 = cl.rel.start(now, &mut cl.rng);
        let t0s = t0.as_secs_f64();
        cl.stats.frames += 1;
        cl.stats.rto_first_sum += t0s;
        cl.stats.rto_first_max = cl.stats.rto_first_max.max(t0s);
        self.rto_first.push(t0s);
        cl.token = cl.token.wrapping_add(1);
        let token = cl.token;
        let m = cl.cur.as_mut().expect("a message in flight");
        m.exch = exch;
        let t = self.now + t0.as_nanos() as Ns;
        self.push(t, Ev::Coap { client: c, token });
        self.send_copy(c, 0);
    }

    fn send_copy(&mut self, c: u32, copy: u32) {
        let cl = &self.clients[c as usize];
        let m = cl.cur.as_ref().expect("a message in flight");
        let psdu = self.cfg.request_psdu(self.unit_payload(m), m.unit);
        let pkt = Packet { kind: Kind::Request, client: c, exch: m.exch, copy };
        let (now, node, sink) = (self.now, cl.node, self.net.sink() as u16);
        self.net.push(now, &mut self.seq, node, sink, psdu, pkt);
    }

    fn coap_timer(&mut self, c: u32, token: u32) {
        let cl = &mut self.clients[c as usize];
        if cl.token != token || cl.cur.is_none() {
            return;
        }
        match cl.rel.on_timer(Instant::from_nanos(self.now)) {
            TimerStep::Retransmit { copy, timer } => {
                cl.stats.retransmissions += 1;
                let exch = cl.cur.as_ref().expect("checked").exch;
                self.exrecs[exch as usize].retx += 1;
                let t = self.now + timer.as_nanos() as Ns;
                self.push(t, Ev::Coap { client: c, token });
                self.send_copy(c, copy);
            }
            TimerStep::GiveUp => {
                let m = cl.cur.take().expect("checked");
                cl.stats.lost_give_up += 1;
                if m.event {
                    cl.stats.event_lost += 1;
                }
                self.causes.coap_give_up += 1;
                self.trace_exchange(c, &m, "give_up", None);
                self.next_pending(c);
            }
        }
    }

    fn next_pending(&mut self, c: u32) {
        if let Some((bytes, event)) = self.clients[c as usize].pending.pop_front() {
            self.start_message(c, bytes, event);
        }
    }

    fn sink_receive(&mut self, pkt: Packet) {
        if pkt.copy == 0 {
            self.exrecs[pkt.exch as usize].flags |= AT_SINK0;
        }
        let client_node = self.clients[pkt.client as usize].node;
        let num = 0; // Block1 NUM; the option has the same size for NUM < 16 (messages up to 16 blocks).
        let resp = Packet { kind: Kind::Response, ..pkt };
        let psdu = self.cfg.response_psdu(num);
        if self.server_delay > 0 {
            self.server_pending += 1;
            let t = self.now + self.server_delay;
            self.push(t, Ev::ServerSend { to: client_node, psdu, pkt: resp });
        } else {
            self.send_response(client_node, psdu, resp);
        }
    }

    fn client_receive(&mut self, pkt: Packet) {
        if pkt.copy == 0 {
            self.exrecs[pkt.exch as usize].flags |= ACK_BACK0;
        }
        let c = pkt.client;
        let cl = &mut self.clients[c as usize];
        let Some(m) = cl.cur.as_ref() else { return };
        if m.exch != pkt.exch {
            return;
        }
        let before = cl.rel.snapshot();
        let Some(acked) = cl.rel.on_ack(Instant::from_nanos(self.now), pkt.copy) else { return };
        let after = cl.rel.snapshot();
        let changed = |a: Option<coapcc_cc::EstimatorSnapshot>, b: Option<coapcc_cc::EstimatorSnapshot>| match (a, b) {
            (_, None) => None,
            (None, Some(b)) => Some(b.rto.as_secs_f64()),
            (Some(a), Some(b)) => (a != b).then_some(b.rto.as_secs_f64()),
        };
        let (strong, weak) = (changed(before.strong, after.strong), changed(before.weak, after.weak));
        self.rtt_strong.extend(strong);
        self.rtt_weak.extend(weak);
        self.unit_rtt.push(acked.rtt.as_secs_f64());
        let cl = &mut self.clients[c as usize];
        cl.token = cl.token.wrapping_add(1);
        let m = cl.cur.as_mut().expect("checked");
        m.unit += 1;
        if m.unit < m.units {
            if self.trace.is_some() {
                let snapshot = Msg { unit: m.unit - 1, ..*m };
                self.trace_exchange(c, &snapshot, "acked", Some(acked.rtt.as_secs_f64()));
            }
            self.start_unit(c);
        } else {
            let m = cl.cur.take().expect("checked");
            cl.stats.delivered += 1;
            if self.trace.is_some() {
                let snapshot = Msg { unit: m.unit - 1, ..m };
                self.trace_exchange(c, &snapshot, "acked", Some(acked.rtt.as_secs_f64()));
            }
            self.next_pending(c);
        }
    }

    fn trace_exchange(&mut self, c: u32, m: &Msg, outcome: &str, rtt: Option<f64>) {
        let Some(out) = self.trace.as_mut() else { return };
        if self.trace_error.is_some() {
            return;
        }
        let rec = self.exrecs[m.exch as usize];
        let rtt = rtt.map_or("null".to_string(), |v| format!("{v:.9}"));
        let r = writeln!(
            out,
            "{{\"t_s\":{:.9},\"client\":{},\"node\":{},\"exchange\":{},\"unit\":{},\"units\":{},\"bytes\":{},\"event\":{},\"outcome\":\"{}\",\"retransmissions\":{},\"rto_first_s\":{:.9},\"rtt_s\":{}}}",
            self.now as f64 / 1e9,
            c,
            self.clients[c as usize].node,
            m.exch,
            m.unit,
            m.units,
            m.bytes,
            m.event,
            outcome,
            rec.retx,
            self.rto_first[m.exch as usize],
            rtt
        );
        if let Err(e) = r {
            self.trace_error = Some(e);
        }
    }

    // ---------------------------------------------------------------- report

    fn report(&self) -> MeshReport {
        let (topo, dodag, sink) = (self.net.topology(), self.net.dodag(), self.net.sink());
        let mut first_at_sink = vec![0u64; self.clients.len()];
        let mut early = vec![0u64; self.clients.len()];
        for e in &self.exrecs {
            if e.flags & AT_SINK0 != 0 {
                first_at_sink[e.client as usize] += 1;
                if e.flags & ACK_BACK0 != 0 && e.retx > 0 {
                    early[e.client as usize] += 1;
                }
            }
        }
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let clients: Vec<ClientReport> = self
            .clients
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let s = &c.stats;
                let in_flight = c.cur.is_some() as u64 + c.pending.len() as u64;
                let lost = s.lost_no_caching + s.lost_give_up;
                let started = s.messages - s.lost_no_caching - c.pending.len() as u64;
                ClientReport {
                    node: c.node as usize,
                    hops: dodag.hops(c.node as usize, sink),
                    messages: s.messages,
                    lost,
                    plr: ratio(lost, s.messages - in_flight),
                    lost_no_caching: s.lost_no_caching,
                    lost_give_up: s.lost_give_up,
                    delivered: s.delivered,
                    in_flight_at_end: in_flight,
                    event_messages: s.event_messages,
                    event_lost: s.event_lost,
                    frames: s.frames,
                    retransmissions: s.retransmissions,
                    retransmissions_per_frame: ratio(s.retransmissions, s.frames),
                    retransmissions_per_message: ratio(s.retransmissions, started),
                    first_tx_at_sink: first_at_sink[i],
                    early_retransmission_count: early[i],
                    early_retransmissions: ratio(early[i], first_at_sink[i]),
                    rto_first_mean_s: if s.frames == 0 { 0.0 } else { s.rto_first_sum / s.frames as f64 },
                    rto_first_max_s: s.rto_first_max,
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
        let events = matches!(self.traffic, Traffic::Events { .. });
        let event_plr = |c: &ClientReport| ratio(c.event_lost, c.event_messages);
        // Responses waiting for the server's delay were created but are not in the network
        // yet.
        let net = self.net.conservation();
        let conservation = Conservation {
            created: net.created + self.server_pending,
            in_network_at_end: net.in_network_at_end + self.server_pending,
            ..net
        };
        MeshReport {
            config: self.cfg.clone(),
            cc_resolved: self.cc_resolved.clone(),
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
            loss_causes: LossCauses {
                no_caching: self.causes.no_caching,
                coap_give_up: self.causes.coap_give_up,
                ..self.net.drop_causes().clone()
            },
            retransmissions_per_frame_mean: mean(&|c| c.retransmissions_per_frame),
            retransmissions_per_frame_max: max(&|c| c.retransmissions_per_frame),
            retransmissions_per_message_mean: mean(&|c| c.retransmissions_per_message),
            early_retransmissions_mean: mean(&|c| c.early_retransmissions),
            early_retransmissions_max: max(&|c| c.early_retransmissions),
            rto_first_s: Summary::of(&self.rto_first),
            rtt_weak_s: Summary::of(&self.rtt_weak),
            rtt_strong_s: Summary::of(&self.rtt_strong),
            unit_rtt_s: Summary::of(&self.unit_rtt),
            mac: self.net.mac_counters().clone(),
            conservation,
            sim_time_s: self.end as f64 / 1e9,
            wall_s: 0.0,
            events: self.events,
            clients,
        }
    }
}
