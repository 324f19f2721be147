//! The event loop: radio medium, unslotted CSMA/CA, storing-mode forwarding, CoAP clients
//! and the sink.
//!
//! Time is integer nanoseconds. Events are ordered by (time, insertion sequence), so a run is
//! a pure function of the configuration and the seed. Randomness comes from independent
//! SplitMix64 streams of the seed: MAC backoffs, frame reception, workload, and one dither
//! stream per client.
//!
//! ## Medium
//! A transmission occupies the channel for its airtime. Every node within interference range
//! of the sender that is not itself transmitting either *locks* onto it (if idle and the link
//! PRR is positive) or counts it as *interference* on the frame it is receiving. A locked
//! frame survives while its power exceeds the sum of the concurrent interferers' powers by
//! the capture threshold (no capture: any overlap destroys it); at its end it is then received
//! with the link's PRR. A node that starts transmitting loses the frame it was receiving
//! (half duplex). CCA senses energy from every sender within CCA range at any moment of the
//! CCA window.
//!
//! ## MAC (per node)
//! Head of queue: NB = 0, BE = macMinBE; wait U{0..2^BE − 1} unit backoff periods, CCA
//! (`cca_us`); busy → NB += 1, BE = min(BE + 1, macMaxBE), give up after macMaxCSMABackoffs;
//! idle → transmit after the turnaround. The receiver answers a correct unicast frame with a
//! MAC ACK one turnaround after its end (no CCA). No ACK within macAckWaitDuration → retry the
//! whole CSMA/CA procedure, up to macMaxFrameRetries times.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::io::Write;

use coapcc_cc::rng::unit_f64;
use coapcc_cc::{AlgorithmConfig, Entropy, Instant, SplitMix64};

use crate::config::{CsmaMode, EventDist, MeshConfig, Rdc, Traffic, UnitMode};
use crate::radio::Medium;
use crate::reliability::{ReliableSender, TimerStep};
use crate::report::*;
use crate::routing::Dodag;
use crate::topology::Topology;

type Ns = u64;
const US: Ns = 1_000;
const NONE16: u16 = u16::MAX;

/// Random stream numbers (independent streams of the master seed).
const STREAM_MAC: u64 = 1;
const STREAM_RADIO: u64 = 2;
const STREAM_WORKLOAD: u64 = 3;
const STREAM_RDC: u64 = 4;
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

#[derive(Clone, Copy, Debug)]
struct Packet {
    kind: Kind,
    dst: u16,
    next: u16,
    client: u32,
    exch: u32,
    copy: u32,
    psdu: u32,
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
    CcaEnd {
        node: u16,
        token: u32,
    },
    TxStart {
        node: u16,
        token: u32,
    },
    TxEnd {
        tx: u32,
    },
    StrobeRx {
        tx: u32,
    },
    AckStart {
        node: u16,
        to: u16,
        seq: u8,
    },
    AckTimeout {
        node: u16,
        token: u32,
    },
    /// A packet parked in `MeshSim::parked` reaches `node`'s network layer (after a
    /// forwarding or server delay).
    Arrive {
        node: u16,
        slot: u32,
    },
    /// A test frame parked in `MeshSim::parked` is handed to `node`'s MAC.
    Inject {
        node: u16,
        slot: u32,
    },
}

/// A scheduled event; ordered by (time, insertion sequence) packed into one key, earliest
/// first (the heap is a max-heap, so the key is inverted).
struct Entry {
    key: u128,
    ev: Ev,
}

impl Entry {
    fn new(t: Ns, seq: u64, ev: Ev) -> Self {
        Entry { key: !(((t as u128) << 64) | seq as u128), ev }
    }

    fn time(&self) -> Ns {
        ((!self.key) >> 64) as Ns
    }
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> Ordering {
        self.key.cmp(&o.key)
    }
}

#[derive(Clone, Copy, Debug)]
struct Tx {
    sender: u16,
    dst: u16,
    ack: bool,
    seq: u8,
    pkt: Option<Packet>,
}

#[derive(Clone, Copy, Debug)]
struct Rx {
    tx: u32,
    signal: f64,
    interference: f64,
    corrupted: bool,
}

#[derive(Default)]
struct Node {
    queue: VecDeque<Packet>,
    in_service: bool,
    nb: u8,
    be: u8,
    retries: u8,
    token: u32,
    dsn: u8,
    awaiting_ack: bool,
    head_accepted: bool,
    /// The previous frame was dropped (Contiki waits one time base before the next).
    last_failed: bool,
    tx: Option<u32>,
    rx: Option<Rx>,
    cca_count: u32,
    cca_last_end: Ns,
}

/// Why a packet left the network without arriving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropCause {
    /// The node's queue was full.
    BufferOverflow,
    /// Every neighbour queue was taken by other next hops (`mac.max_neighbor_queues`).
    NeighborQueues,
    /// macMaxFrameRetries retransmissions without a MAC ACK.
    NoAck,
    /// macMaxCSMABackoffs busy CCAs.
    ChannelAccess,
}

/// One MAC-level event, recorded when the MAC log is enabled (tests, debugging).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MacWhat {
    /// CCA found the channel idle (at the end of the CCA window).
    CccIdle,
    /// CCA found the channel busy.
    CcaBusy,
    /// A data frame transmission started.
    TxData {
        /// Link-layer destination.
        to: u16,
        /// Retry number (0 = first attempt).
        retry: u8,
    },
    /// A MAC ACK transmission started.
    TxAck {
        /// The acknowledged sender.
        to: u16,
    },
    /// A data frame was received correctly by its addressee.
    RxData {
        /// Sender.
        from: u16,
        /// Dropped as a duplicate.
        duplicate: bool,
    },
    /// A data frame was lost at its addressee.
    RxLost {
        /// Sender.
        from: u16,
        /// Lost to a collision (else to the reception curve).
        collision: bool,
    },
    /// The MAC ACK of the head frame arrived.
    AckReceived,
    /// macAckWaitDuration expired without an ACK.
    AckTimeout,
    /// A packet was dropped.
    Drop(DropCause),
    /// A raw (injected) frame reached its destination.
    Delivered,
}

/// A MAC log record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MacRecord {
    /// Time, ns.
    pub t_ns: u64,
    /// The node it happened at.
    pub node: u16,
    /// What happened.
    pub what: MacWhat,
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
    topo: Topology,
    medium: Medium,
    dodag: Dodag,
    sink: usize,
    // Inverse CCA table: who senses a transmission of node i.
    cca_hearers: Vec<Vec<u16>>,
    nodes: Vec<Node>,
    last_seq: Vec<u16>,
    txs: Vec<Tx>,
    free_tx: Vec<u32>,
    parked: Vec<Packet>,
    free_parked: Vec<u32>,
    active: Vec<u32>,
    clients: Vec<Client>,
    exrecs: Vec<ExRec>,
    heap: BinaryHeap<Entry>,
    seq: u64,
    now: Ns,
    end: Ns,
    events: u64,
    rng_mac: SplitMix64,
    rng_radio: SplitMix64,
    rng_work: SplitMix64,
    period: Ns,
    // Timing (ns).
    unit_backoff: Ns,
    cca: Ns,
    turnaround: Ns,
    ack_wait: Ns,
    ack_air: Ns,
    forward_delay: Ns,
    server_delay: Ns,
    // Metrics.
    mac: MacCounters,
    causes: LossCauses,
    cons: Conservation,
    pending_arrivals: u64,
    rto_first: Vec<f64>,
    rtt_weak: Vec<f64>,
    rtt_strong: Vec<f64>,
    unit_rtt: Vec<f64>,
    mac_log: Option<Vec<MacRecord>>,
    // Duty cycling.
    duty_cycled: bool,
    wake_period: Ns,
    wake_phase: Vec<Ns>,
    phase_known: Vec<bool>,
    pending_strobe: Option<Ns>,
    /// `radio.capture_db` as a linear power ratio.
    capture_ratio: Option<f64>,
    /// Contiki `csma.c` rules, and its time base.
    contiki: bool,
    contiki_timebase: Ns,
    contiki_tick: Ns,
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
        let topo = Topology::parse(&cfg.topology, cfg.spacing_m)?;
        let n = topo.len();
        let sink = cfg.routing.sink.unwrap_or(0);
        if sink >= n {
            return Err(format!("routing.sink {sink} is not a node (the topology has {n})"));
        }
        let root = match cfg.routing.root {
            Some(r) if r >= n => return Err(format!("routing.root {r} is not a node (the topology has {n})")),
            Some(r) => r,
            None => topo.nearest_centre(sink),
        };
        let medium = Medium::new(&topo, &cfg.radio);
        let dodag = Dodag::build(&medium, &cfg.routing, root)?;
        let mut cca_hearers = vec![Vec::new(); n];
        for (listener, senders) in medium.cca_senders.iter().enumerate() {
            for &s in senders {
                cca_hearers[s as usize].push(listener as u16);
            }
        }
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
        let m = &cfg.mac;
        let air = cfg.airtime_us(m.ack_frame_bytes) as Ns * US;
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
                "traffic {} gives each of the {} clients a message every {:.3} ms; the smallest period accepted is                  1 ms (lower the load or the message size)",
                cfg.traffic,
                nclients,
                period as f64 / 1e6
            ));
        }
        let seed = cfg.seed;
        let wake_period = (1e9 / m.channel_check_rate_hz).round().max(1.0) as Ns;
        let mut rng_rdc = SplitMix64::stream(seed, STREAM_RDC);
        let wake_phase = (0..n).map(|_| Self::below(&mut rng_rdc, wake_period)).collect();
        let mut sim = MeshSim {
            duty_cycled: m.rdc == Rdc::Contikimac,
            wake_period,
            wake_phase,
            phase_known: vec![false; n * n],
            pending_strobe: None,
            capture_ratio: cfg.radio.capture_db.map(|db| 10f64.powf(db / 10.0)),
            contiki: m.csma == CsmaMode::Contiki,
            contiki_timebase: if m.rdc == Rdc::Contikimac { wake_period } else { m.contiki_timebase_us as Ns * US },
            contiki_tick: m.contiki_timebase_us as Ns * US,
            cc_resolved: cc.to_string(),
            traffic,
            sink,
            cca_hearers,
            nodes: (0..n).map(|_| Node::default()).collect(),
            last_seq: vec![NONE16; n * n],
            txs: Vec::new(),
            free_tx: Vec::new(),
            parked: Vec::new(),
            free_parked: Vec::new(),
            active: Vec::new(),
            clients,
            exrecs: Vec::new(),
            heap: BinaryHeap::new(),
            seq: 0,
            now: 0,
            end: (cfg.duration_s * 1e9).round() as Ns,
            events: 0,
            rng_mac: SplitMix64::stream(seed, STREAM_MAC),
            rng_radio: SplitMix64::stream(seed, STREAM_RADIO),
            rng_work: SplitMix64::stream(seed, STREAM_WORKLOAD),
            period,
            unit_backoff: m.unit_backoff_us as Ns * US,
            cca: m.cca_us as Ns * US,
            turnaround: m.turnaround_us as Ns * US,
            ack_wait: m.ack_wait_us as Ns * US,
            ack_air: air,
            forward_delay: cfg.routing.forward_delay_us as Ns * US,
            server_delay: cfg.app.server_delay_us as Ns * US,
            mac: MacCounters::default(),
            causes: LossCauses::default(),
            cons: Conservation::default(),
            pending_arrivals: 0,
            rto_first: Vec::new(),
            rtt_weak: Vec::new(),
            rtt_strong: Vec::new(),
            unit_rtt: Vec::new(),
            mac_log: None,
            trace: None,
            trace_error: None,
            topo,
            medium,
            dodag,
            cfg,
        };
        sim.schedule_workload();
        Ok(sim)
    }

    /// Record every MAC event (see [`MeshSim::mac_log`]).
    pub fn enable_mac_log(&mut self) {
        self.mac_log = Some(Vec::new());
    }

    /// The MAC events recorded so far.
    pub fn mac_log(&self) -> &[MacRecord] {
        self.mac_log.as_deref().unwrap_or(&[])
    }

    /// Write one JSON line per finished exchange to `out`.
    pub fn set_trace(&mut self, out: Box<dyn Write>) {
        self.trace = Some(out);
    }

    /// With duty cycling, the first wake-up of `node` at or after `t_ns`; `None` when radios
    /// are always on.
    pub fn wake_up_after(&self, node: usize, t_ns: u64) -> Option<u64> {
        self.duty_cycled.then(|| self.next_wake(node, t_ns))
    }

    /// The DODAG.
    pub fn dodag(&self) -> &Dodag {
        &self.dodag
    }

    /// The radio tables.
    pub fn medium(&self) -> &Medium {
        &self.medium
    }

    /// Inject a bare frame of `psdu` bytes at node `src` for its neighbour `to` at time
    /// `at_ns` (no CoAP, no routing): for MAC tests.
    pub fn inject(&mut self, at_ns: u64, src: usize, to: usize, psdu: u32) {
        let pkt = Packet { kind: Kind::Raw, dst: to as u16, next: to as u16, client: 0, exch: 0, copy: 0, psdu };
        let slot = self.park(pkt);
        self.push(at_ns, Ev::Inject { node: src as u16, slot });
    }

    /// Keep a packet out of the event queue (events stay small and cheap to move).
    fn park(&mut self, pkt: Packet) -> u32 {
        match self.free_parked.pop() {
            Some(i) => {
                self.parked[i as usize] = pkt;
                i
            }
            None => {
                self.parked.push(pkt);
                (self.parked.len() - 1) as u32
            }
        }
    }

    fn unpark(&mut self, slot: u32) -> Packet {
        self.free_parked.push(slot);
        self.parked[slot as usize]
    }

    fn push(&mut self, t: Ns, ev: Ev) {
        self.seq += 1;
        self.heap.push(Entry::new(t, self.seq, ev));
    }

    fn log(&mut self, node: u16, what: MacWhat) {
        if let Some(l) = self.mac_log.as_mut() {
            l.push(MacRecord { t_ns: self.now, node, what });
        }
    }

    fn below(rng: &mut SplitMix64, n: u64) -> u64 {
        ((rng.next_u64() as u128 * n as u128) >> 64) as u64
    }

    fn schedule_workload(&mut self) {
        match self.traffic {
            Traffic::None => {}
            Traffic::Periodic { .. } => {
                for c in 0..self.clients.len() as u32 {
                    let phase =
                        if self.cfg.app.random_phase { Self::below(&mut self.rng_work, self.period) } else { 0 };
                    self.push(phase, Ev::Periodic { client: c });
                }
            }
            Traffic::Events { .. } => {
                let bg = (self.cfg.app.background_period_s * 1e9).round() as Ns;
                for c in 0..self.clients.len() as u32 {
                    let phase = Self::below(&mut self.rng_work, bg);
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
        while let Some(e) = self.heap.pop() {
            let t = e.time();
            if t > self.end {
                break;
            }
            self.now = t;
            self.events += 1;
            self.handle(e.ev);
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
        if let (Some(out), Some(log)) = (log_out, self.mac_log.take()) {
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
            Ev::CcaEnd { node, token } => self.cca_end(node, token),
            Ev::TxStart { node, token } => self.tx_start(node, token),
            Ev::TxEnd { tx } => self.tx_end(tx),
            Ev::StrobeRx { tx } => self.strobe_rx(tx),
            Ev::AckStart { node, to, seq } => self.ack_start(node, to, seq),
            Ev::AckTimeout { node, token } => self.ack_timeout(node, token),
            Ev::Arrive { node, slot } => {
                let pkt = self.unpark(slot);
                self.pending_arrivals -= 1;
                self.arrive(node, pkt);
            }
            Ev::Inject { node, slot } => {
                let pkt = self.unpark(slot);
                self.cons.created += 1;
                self.enqueue(node, pkt);
            }
        }
    }

    // ---------------------------------------------------------------- network layer

    fn enqueue(&mut self, node: u16, mut pkt: Packet) {
        if pkt.kind != Kind::Raw {
            match self.dodag.next_hop(node as usize, pkt.dst as usize) {
                Some(h) => pkt.next = h as u16,
                None => return self.deliver(node, pkt),
            }
        }
        let cap = self.cfg.mac.queue_packets as usize;
        let max_neighbors = self.cfg.mac.max_neighbor_queues as usize;
        let n = &mut self.nodes[node as usize];
        if n.queue.len() >= cap {
            self.drop_packet(node, pkt, DropCause::BufferOverflow);
            return;
        }
        if max_neighbors > 0 && !n.queue.iter().any(|q| q.next == pkt.next) {
            // Contiki's csma.c allocates one queue per next hop from a small pool.
            let mut distinct = 0;
            for (i, q) in n.queue.iter().enumerate() {
                if !n.queue.iter().take(i).any(|e| e.next == q.next) {
                    distinct += 1;
                }
            }
            if distinct >= max_neighbors {
                self.drop_packet(node, pkt, DropCause::NeighborQueues);
                return;
            }
        }
        n.queue.push_back(pkt);
        if !n.in_service {
            self.start_next(node);
        }
    }

    fn drop_packet(&mut self, node: u16, _pkt: Packet, cause: DropCause) {
        self.cons.dropped += 1;
        match cause {
            DropCause::BufferOverflow => self.causes.buffer_overflow += 1,
            DropCause::NeighborQueues => self.causes.neighbor_queues_full += 1,
            DropCause::NoAck => self.causes.mac_no_ack += 1,
            DropCause::ChannelAccess => self.causes.mac_channel_access += 1,
        }
        self.log(node, MacWhat::Drop(cause));
    }

    /// A packet accepted by `node` from the MAC.
    fn arrive(&mut self, node: u16, pkt: Packet) {
        if pkt.dst == node {
            self.deliver(node, pkt);
        } else {
            self.enqueue(node, pkt);
        }
    }

    fn deliver(&mut self, node: u16, pkt: Packet) {
        self.cons.delivered += 1;
        match pkt.kind {
            Kind::Raw => self.log(node, MacWhat::Delivered),
            Kind::Request => self.sink_receive(pkt),
            Kind::Response => self.client_receive(pkt),
        }
    }

    // ---------------------------------------------------------------- MAC

    fn start_next(&mut self, node: u16) {
        let n = &mut self.nodes[node as usize];
        if n.queue.is_empty() {
            n.in_service = false;
            return;
        }
        n.in_service = true;
        n.dsn = n.dsn.wrapping_add(1);
        n.retries = 0;
        n.head_accepted = false;
        if self.contiki {
            // csma.c: at once after a success, one time base after a failure.
            n.nb = 0;
            let delay = if n.last_failed { self.contiki_timebase } else { 0 };
            self.schedule_cca(node, delay);
        } else {
            self.begin_csma(node);
        }
    }

    /// Contiki: CCA (then transmit) after `delay`.
    fn schedule_cca(&mut self, node: u16, delay: Ns) {
        let n = &mut self.nodes[node as usize];
        n.token = n.token.wrapping_add(1);
        let token = n.token;
        let dst = n.queue.front().map_or(NONE16, |p| p.next);
        let t = self.phase_snap(node, dst, self.now + delay + self.cca);
        self.push(t, Ev::CcaEnd { node, token });
    }

    /// Contiki's retransmission delay T + U[0, 2^exp·T), drawn in clock ticks (`random_rand()
    /// % (2^exp · T)` with T in ticks): multiples of T over `nullrdc` (T = one tick), any tick
    /// of the span with duty cycling (T = the check interval).
    fn contiki_rexmit_delay(&mut self, exp: u8) -> Ns {
        let tick = self.contiki_tick;
        let span_ticks = ((self.contiki_timebase << exp) / tick).max(1);
        self.contiki_timebase + tick * Self::below(&mut self.rng_mac, span_ticks)
    }

    fn begin_csma(&mut self, node: u16) {
        let n = &mut self.nodes[node as usize];
        n.nb = 0;
        n.be = self.cfg.mac.min_be;
        self.backoff(node);
    }

    fn backoff(&mut self, node: u16) {
        let (be, attempts) = {
            let n = &self.nodes[node as usize];
            (n.be, n.retries as u64 + n.nb as u64)
        };
        let delay = if self.duty_cycled {
            let max = attempts.min(self.cfg.mac.rdc_max_backoff_intervals as u64);
            Self::below(&mut self.rng_mac, max + 1) * self.wake_period
        } else {
            Self::below(&mut self.rng_mac, 1u64 << be) * self.unit_backoff
        };
        let n = &mut self.nodes[node as usize];
        n.token = n.token.wrapping_add(1);
        let token = n.token;
        let dst = n.queue.front().map_or(NONE16, |p| p.next);
        let t = self.phase_snap(node, dst, self.now + delay + self.cca);
        self.push(t, Ev::CcaEnd { node, token });
    }

    /// ContikiMAC phase optimisation: move a CCA planned at `t` so that the transmission
    /// starts `phase_guard_us` before the addressee's next wake-up (if its phase is known).
    fn phase_snap(&self, node: u16, dst: u16, t: Ns) -> Ns {
        if self.duty_cycled && self.cfg.mac.phase_lock && dst != NONE16 {
            let nn = self.nodes.len();
            if self.phase_known[node as usize * nn + dst as usize] {
                let lead = self.turnaround + self.cfg.mac.phase_guard_us as Ns * US;
                return self.next_wake(dst as usize, t + lead) - lead;
            }
        }
        t
    }

    fn channel_busy(&self, node: u16) -> bool {
        let n = &self.nodes[node as usize];
        n.tx.is_some() || n.cca_count > 0 || n.cca_last_end + self.cca > self.now
    }

    fn cca_end(&mut self, node: u16, token: u32) {
        if self.nodes[node as usize].token != token {
            return;
        }
        if self.channel_busy(node) {
            self.log(node, MacWhat::CcaBusy);
            self.csma_busy(node);
        } else {
            self.log(node, MacWhat::CccIdle);
            let t = self.now + self.turnaround;
            self.push(t, Ev::TxStart { node, token });
        }
    }

    fn csma_busy(&mut self, node: u16) {
        self.mac.cca_busy += 1;
        if self.contiki {
            let (max_tx, max_exp) = (self.cfg.mac.contiki_max_transmissions, self.cfg.mac.contiki_max_backoff_exponent);
            let n = &mut self.nodes[node as usize];
            n.nb += 1;
            if n.nb > max_exp {
                n.nb = 0;
                n.retries += 1;
            }
            if n.retries >= max_tx {
                self.give_up_head(node, DropCause::ChannelAccess);
            } else {
                let exp = n.nb;
                let delay = self.contiki_rexmit_delay(exp);
                self.schedule_cca(node, delay);
            }
            return;
        }
        let (min_be, max_be, max_nb) = (self.cfg.mac.min_be, self.cfg.mac.max_be, self.cfg.mac.max_csma_backoffs);
        let n = &mut self.nodes[node as usize];
        n.nb += 1;
        n.be = (n.be + 1).min(max_be).max(min_be);
        if n.nb > max_nb {
            self.give_up_head(node, DropCause::ChannelAccess);
        } else {
            self.backoff(node);
        }
    }

    fn give_up_head(&mut self, node: u16, cause: DropCause) {
        let n = &mut self.nodes[node as usize];
        let pkt = n.queue.pop_front().expect("a frame in service");
        n.token = n.token.wrapping_add(1);
        n.awaiting_ack = false;
        n.last_failed = true;
        if n.head_accepted {
            // The next hop has it: the MAC believes it lost, the network did not.
            self.mac.false_drops += 1;
        } else {
            self.drop_packet(node, pkt, cause);
        }
        self.start_next(node);
    }

    fn tx_start(&mut self, node: u16, token: u32) {
        if self.nodes[node as usize].token != token {
            return;
        }
        if self.nodes[node as usize].tx.is_some() {
            // Busy sending a MAC ACK: as a busy channel.
            self.log(node, MacWhat::CcaBusy);
            self.csma_busy(node);
            return;
        }
        let n = &mut self.nodes[node as usize];
        let pkt = *n.queue.front().expect("a frame in service");
        n.awaiting_ack = true;
        let (seq, retry) = (n.dsn, n.retries);
        let mut air = self.cfg.airtime_us(pkt.psdu) as Ns * US;
        if self.duty_cycled {
            // Copies every air + gap from now; the addressee takes the first whole copy that
            // starts at or after its wake-up.
            let wake = self.next_wake(pkt.next as usize, self.now);
            let stride = air + self.cfg.mac.strobe_gap_us as Ns * US;
            let copies_before = (wake - self.now).div_ceil(stride);
            let last_start = self.now + copies_before * stride;
            air += copies_before * stride;
            self.pending_strobe = Some(last_start);
        }
        self.mac.data_tx += 1;
        self.log(node, MacWhat::TxData { to: pkt.next, retry });
        self.start_transmission(Tx { sender: node, dst: pkt.next, ack: false, seq, pkt: Some(pkt) }, air);
    }

    fn ack_start(&mut self, node: u16, to: u16, seq: u8) {
        if self.nodes[node as usize].tx.is_some() {
            self.mac.acks_skipped += 1;
            let data_end = self.now - self.turnaround;
            self.arm_ack_timeout(to, data_end);
            return;
        }
        self.mac.ack_tx += 1;
        self.log(node, MacWhat::TxAck { to });
        let air = self.ack_air;
        self.start_transmission(Tx { sender: node, dst: to, ack: true, seq, pkt: None }, air);
    }

    fn start_transmission(&mut self, tx: Tx, air: Ns) {
        let id = match self.free_tx.pop() {
            Some(id) => {
                self.txs[id as usize] = tx;
                id
            }
            None => {
                self.txs.push(tx);
                (self.txs.len() - 1) as u32
            }
        };
        let s = tx.sender as usize;
        // Half duplex: a frame being received is lost.
        self.nodes[s].rx = None;
        self.nodes[s].tx = Some(id);
        let capture = self.capture_ratio;
        for i in 0..self.medium.hearers[s].len() {
            let h = self.medium.hearers[s][i];
            let r = h.node as usize;
            if self.nodes[r].tx.is_some() {
                continue;
            }
            match self.nodes[r].rx.as_mut() {
                Some(rx) => {
                    rx.interference += h.power;
                    rx.corrupted |= !survives(rx.signal, rx.interference, capture);
                }
                None if h.prr > 0.0 && (!self.duty_cycled || (tx.ack && r == tx.dst as usize)) => {
                    let mut interference = 0.0;
                    for &a in &self.active {
                        interference += self.medium.power(self.txs[a as usize].sender as usize, r);
                    }
                    self.nodes[r].rx = Some(Rx {
                        tx: id,
                        signal: h.power,
                        interference,
                        corrupted: !survives(h.power, interference, capture),
                    });
                }
                None => {}
            }
        }
        for i in 0..self.cca_hearers[s].len() {
            let l = self.cca_hearers[s][i] as usize;
            self.nodes[l].cca_count += 1;
        }
        self.active.push(id);
        let t = self.now + air;
        self.push(t, Ev::TxEnd { tx: id });
        if let Some(at) = self.pending_strobe.take() {
            self.push(at, Ev::StrobeRx { tx: id });
        }
    }

    /// Duty cycling: the addressee of a strobed frame wakes and locks onto its last copy.
    fn strobe_rx(&mut self, id: u32) {
        let tx = self.txs[id as usize];
        let (s, r) = (tx.sender as usize, tx.dst as usize);
        if self.nodes[r].tx.is_some() || self.nodes[r].rx.is_some() || self.medium.prr(s, r) <= 0.0 {
            return;
        }
        let mut interference = 0.0;
        for &a in &self.active {
            if a != id {
                interference += self.medium.power(self.txs[a as usize].sender as usize, r);
            }
        }
        let signal = self.medium.power(s, r);
        let corrupted = !survives(signal, interference, self.capture_ratio);
        self.nodes[r].rx = Some(Rx { tx: id, signal, interference, corrupted });
    }

    /// First wake-up of `node` at or after `t` (duty cycling).
    fn next_wake(&self, node: usize, t: Ns) -> Ns {
        let phase = self.wake_phase[node];
        if t <= phase {
            return phase;
        }
        phase + (t - phase).div_ceil(self.wake_period) * self.wake_period
    }

    fn tx_end(&mut self, id: u32) {
        let tx = self.txs[id as usize];
        let s = tx.sender as usize;
        self.active.retain(|&a| a != id);
        self.free_tx.push(id);
        self.nodes[s].tx = None;
        for i in 0..self.cca_hearers[s].len() {
            let l = self.cca_hearers[s][i] as usize;
            self.nodes[l].cca_count -= 1;
            self.nodes[l].cca_last_end = self.now;
        }
        let mut received = false;
        let mut locked_at_dst = false;
        for i in 0..self.medium.hearers[s].len() {
            let h = self.medium.hearers[s][i];
            let r = h.node as usize;
            let Some(rx) = self.nodes[r].rx.as_mut() else { continue };
            if rx.tx != id {
                rx.interference = (rx.interference - h.power).max(0.0);
                continue;
            }
            let corrupted = rx.corrupted;
            self.nodes[r].rx = None;
            if r != tx.dst as usize {
                continue;
            }
            locked_at_dst = true;
            if corrupted {
                if !tx.ack {
                    self.mac.collisions += 1;
                    self.log(r as u16, MacWhat::RxLost { from: tx.sender, collision: true });
                }
            } else if h.prr >= 1.0 || unit_f64(&mut self.rng_radio) < h.prr {
                received = true;
            } else if !tx.ack {
                self.mac.fading += 1;
                self.log(r as u16, MacWhat::RxLost { from: tx.sender, collision: false });
            }
        }
        if !received && !tx.ack && !locked_at_dst && self.medium.prr(s, tx.dst as usize) > 0.0 {
            // The addressee was busy with another frame or transmitting.
            self.mac.collisions += 1;
            self.log(tx.dst, MacWhat::RxLost { from: tx.sender, collision: true });
        }
        // The AckTimeout event is only scheduled when no ACK will arrive (data lost, ACK
        // skipped or lost), at data end + macAckWaitDuration: one event fewer per good hop.
        if tx.ack {
            if received {
                self.ack_received(tx.dst, tx.seq);
            } else {
                let data_end = self.now - self.ack_air - self.turnaround;
                self.arm_ack_timeout(tx.dst, data_end);
            }
        } else if received {
            self.data_received(tx.dst, tx);
        } else {
            self.arm_ack_timeout(tx.sender, self.now);
        }
    }

    fn arm_ack_timeout(&mut self, node: u16, data_end: Ns) {
        let token = self.nodes[node as usize].token;
        self.push(data_end + self.ack_wait, Ev::AckTimeout { node, token });
    }

    fn data_received(&mut self, r: u16, tx: Tx) {
        let t = self.now + self.turnaround;
        self.push(t, Ev::AckStart { node: r, to: tx.sender, seq: tx.seq });
        let n = self.nodes.len();
        let slot = r as usize * n + tx.sender as usize;
        let pkt = tx.pkt.expect("a data frame carries a packet");
        if self.last_seq[slot] == tx.seq as u16 {
            if self.cfg.mac.duplicate_detection {
                self.mac.duplicates_suppressed += 1;
                self.log(r, MacWhat::RxData { from: tx.sender, duplicate: true });
                return;
            }
            self.mac.duplicates_forwarded += 1;
        }
        self.last_seq[slot] = tx.seq as u16;
        self.nodes[tx.sender as usize].head_accepted = true;
        self.log(r, MacWhat::RxData { from: tx.sender, duplicate: false });
        if self.forward_delay > 0 {
            self.pending_arrivals += 1;
            let t = self.now + self.forward_delay;
            let slot = self.park(pkt);
            self.push(t, Ev::Arrive { node: r, slot });
        } else {
            self.arrive(r, pkt);
        }
    }

    fn ack_received(&mut self, node: u16, seq: u8) {
        let n = &mut self.nodes[node as usize];
        if !n.awaiting_ack || n.dsn != seq {
            return;
        }
        n.awaiting_ack = false;
        n.last_failed = false;
        let head = n.queue.pop_front();
        n.token = n.token.wrapping_add(1);
        if let (true, Some(p)) = (self.duty_cycled, head) {
            let nn = self.nodes.len();
            self.phase_known[node as usize * nn + p.next as usize] = true;
        }
        self.mac.acked += 1;
        self.log(node, MacWhat::AckReceived);
        self.start_next(node);
    }

    fn ack_timeout(&mut self, node: u16, token: u32) {
        let max_retries = self.cfg.mac.max_frame_retries;
        let n = &mut self.nodes[node as usize];
        if n.token != token || !n.awaiting_ack {
            return;
        }
        n.awaiting_ack = false;
        self.log(node, MacWhat::AckTimeout);
        let n = &mut self.nodes[node as usize];
        if self.contiki {
            n.retries += 1;
            n.nb = 0;
            if n.retries >= self.cfg.mac.contiki_max_transmissions {
                self.give_up_head(node, DropCause::NoAck);
            } else {
                let delay = self.contiki_rexmit_delay(0);
                self.schedule_cca(node, delay);
            }
            return;
        }
        if n.retries >= max_retries {
            self.give_up_head(node, DropCause::NoAck);
        } else {
            n.retries += 1;
            self.begin_csma(node);
        }
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
        let pkt =
            Packet { kind: Kind::Request, dst: self.sink as u16, next: NONE16, client: c, exch: m.exch, copy, psdu };
        let node = cl.node;
        self.cons.created += 1;
        self.enqueue(node, pkt);
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
        let resp =
            Packet { kind: Kind::Response, dst: client_node, next: NONE16, psdu: self.cfg.response_psdu(num), ..pkt };
        self.cons.created += 1;
        if self.server_delay > 0 {
            self.pending_arrivals += 1;
            let t = self.now + self.server_delay;
            let slot = self.park(resp);
            self.push(t, Ev::Arrive { node: self.sink as u16, slot });
        } else {
            self.enqueue(self.sink as u16, resp);
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
                    hops: self.dodag.hops(c.node as usize, self.sink),
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
        let mut in_network = self.pending_arrivals;
        for n in &self.nodes {
            // A head frame the next hop already accepted (its MAC ACK was lost) is counted
            // there.
            in_network += n.queue.len() as u64 - (n.in_service && n.head_accepted) as u64;
        }
        MeshReport {
            config: self.cfg.clone(),
            cc_resolved: self.cc_resolved.clone(),
            topology: TopologyReport {
                nodes: self.topo.len(),
                root: self.dodag.root,
                sink: self.sink,
                parents: self.dodag.parent.clone(),
                depth: self.dodag.depth.clone(),
                positions: self.topo.positions.clone(),
            },
            plr_mean: mean(&|c| c.plr),
            plr_max: max(&|c| c.plr),
            plr_event_mean: events.then(|| mean(&event_plr)),
            plr_event_max: events.then(|| max(&event_plr)),
            loss_causes: self.causes.clone(),
            retransmissions_per_frame_mean: mean(&|c| c.retransmissions_per_frame),
            retransmissions_per_frame_max: max(&|c| c.retransmissions_per_frame),
            retransmissions_per_message_mean: mean(&|c| c.retransmissions_per_message),
            early_retransmissions_mean: mean(&|c| c.early_retransmissions),
            early_retransmissions_max: max(&|c| c.early_retransmissions),
            rto_first_s: Summary::of(&self.rto_first),
            rtt_weak_s: Summary::of(&self.rtt_weak),
            rtt_strong_s: Summary::of(&self.rtt_strong),
            unit_rtt_s: Summary::of(&self.unit_rtt),
            mac: self.mac.clone(),
            conservation: Conservation { in_network_at_end: in_network, ..self.cons.clone() },
            sim_time_s: self.end as f64 / 1e9,
            wall_s: 0.0,
            events: self.events,
            clients,
        }
    }
}

/// Does a frame of power `signal` survive `interference` (linear powers)? `capture` is the
/// capture threshold as a linear power ratio (`None`: no capture, any interference destroys).
fn survives(signal: f64, interference: f64, capture: Option<f64>) -> bool {
    if interference <= 0.0 {
        return true;
    }
    match capture {
        None => false,
        Some(ratio) => signal >= ratio * interference,
    }
}
