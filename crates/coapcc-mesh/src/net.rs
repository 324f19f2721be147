//! The radio medium, the MAC, the per-node queues and storing-mode forwarding of a mesh, as
//! one component with an event-source interface: [`MeshNet`].
//!
//! A host (the general simulator's event loop, for its `topology.mesh` and for the mesh
//! study) hands it packets with [`MeshNet::push`] (a packet of `psdu` bytes entering the network
//! at one node for another), asks for the time of its next internal event with [`MeshNet::peek`] and runs
//! that event with [`MeshNet::poll`], which returns the packet it delivered at its destination,
//! if any. Every event carries `(time, seq)`; `seq` comes from the host's own insertion
//! counter (passed to every call that may schedule), so the host merges the medium's events
//! with its own in one `(time, seq)` order, exactly as one queue of all events would.
//! Randomness comes from the medium's own streams of the master seed: MAC backoffs (stream 1),
//! frame reception (stream 2) and duty-cycling phases (stream 4).
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
//! whole CSMA/CA procedure, up to macMaxFrameRetries times. With `mac.csma = contiki`, Contiki
//! 3.0's `csma.c` rules instead; with `mac.rdc = contikimac`, ContikiMAC-like duty cycling.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use coapcc_cc::rng::unit_f64;
use coapcc_cc::{Entropy, SplitMix64};

use crate::config::{CsmaMode, MeshNetConfig, MeshNetError, Rdc};
use crate::radio::Medium;
use crate::report::{Conservation, LossCauses, MacCounters};
use crate::routing::Dodag;
use crate::topology::Topology;

type Ns = u64;
const US: Ns = 1_000;
const NONE16: u16 = u16::MAX;

/// Random stream numbers of the medium (independent streams of the master seed).
pub const STREAM_MAC: u64 = 1;
/// Frame reception draws.
pub const STREAM_RADIO: u64 = 2;
/// Duty-cycling wake-up phases.
pub const STREAM_RDC: u64 = 4;

/// A packet in the network: its destination node, the next hop chosen at the node holding it,
/// its PSDU size and the host's payload.
#[derive(Clone, Copy, Debug)]
struct Frame<P> {
    dst: u16,
    next: u16,
    psdu: u32,
    /// Routed by the DODAG (every host packet); `false` for a test frame sent to a neighbour.
    routed: bool,
    payload: P,
}

/// A packet delivered at its destination node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery<P> {
    /// The destination node.
    pub node: u16,
    /// Its PSDU size, bytes.
    pub psdu: u32,
    /// The host's payload.
    pub payload: P,
}

#[derive(Clone, Copy, Debug)]
enum Ev {
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
    /// A packet parked in `MeshNet::parked` reaches `node`'s network layer (after the
    /// forwarding delay).
    Arrive {
        node: u16,
        slot: u32,
    },
    /// A test frame parked in `MeshNet::parked` is handed to `node`'s MAC.
    Inject {
        node: u16,
        slot: u32,
    },
    /// A parked packet with no route from its node is delivered there.
    Deliver {
        node: u16,
        slot: u32,
    },
}

/// A scheduled event of the network's queue; ordered by (time, insertion sequence) packed into
/// one key, earliest first (the heap is a max-heap, so the key is inverted).
pub(crate) struct Entry<E> {
    key: u128,
    pub(crate) ev: E,
}

impl<E> Entry<E> {
    pub(crate) fn new(t: Ns, seq: u64, ev: E) -> Self {
        Entry { key: !(((t as u128) << 64) | seq as u128), ev }
    }

    pub(crate) fn time(&self) -> Ns {
        ((!self.key) >> 64) as Ns
    }

    pub(crate) fn seq(&self) -> u64 {
        (!self.key) as u64
    }
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, o: &Self) -> Ordering {
        self.key.cmp(&o.key)
    }
}

#[derive(Clone, Copy, Debug)]
struct Tx<P> {
    sender: u16,
    dst: u16,
    ack: bool,
    seq: u8,
    pkt: Option<Frame<P>>,
}

#[derive(Clone, Copy, Debug)]
struct Rx {
    tx: u32,
    signal: f64,
    interference: f64,
    corrupted: bool,
}

struct Node<P> {
    queue: VecDeque<Frame<P>>,
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

impl<P> Default for Node<P> {
    fn default() -> Self {
        Node {
            queue: VecDeque::new(),
            in_service: false,
            nb: 0,
            be: 0,
            retries: 0,
            token: 0,
            dsn: 0,
            awaiting_ack: false,
            head_accepted: false,
            last_failed: false,
            tx: None,
            rx: None,
            cca_count: 0,
            cca_last_end: 0,
        }
    }
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

/// The radio medium, MAC, queues and forwarding of one mesh (see the module documentation).
/// `P` is the host's payload, carried untouched (copied when a frame is duplicated: a
/// retransmission whose MAC ACK was lost, forwarded twice without duplicate detection).
pub struct MeshNet<P> {
    cfg: MeshNetConfig,
    topo: Topology,
    medium: Medium,
    dodag: Dodag,
    sink: usize,
    // Inverse CCA table: who senses a transmission of node i.
    cca_hearers: Vec<Vec<u16>>,
    nodes: Vec<Node<P>>,
    last_seq: Vec<u16>,
    txs: Vec<Tx<P>>,
    free_tx: Vec<u32>,
    parked: Vec<Frame<P>>,
    free_parked: Vec<u32>,
    active: Vec<u32>,
    heap: BinaryHeap<Entry<Ev>>,
    /// The host's insertion counter, held during a call.
    seq: u64,
    now: Ns,
    rng_mac: SplitMix64,
    rng_radio: SplitMix64,
    // Timing (ns).
    unit_backoff: Ns,
    cca: Ns,
    turnaround: Ns,
    ack_wait: Ns,
    ack_air: Ns,
    forward_delay: Ns,
    // Metrics.
    mac: MacCounters,
    causes: LossCauses,
    cons: Conservation,
    pending_arrivals: u64,
    mac_log: Option<Vec<MacRecord>>,
    /// The packet the current event delivered.
    out: Option<Delivery<P>>,
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
}

impl<P: Copy> MeshNet<P> {
    /// Build the topology, medium tables and DODAG of `cfg` (checked with
    /// [`MeshNetConfig::validate`]), its random streams from `seed`.
    pub fn new(cfg: &MeshNetConfig, seed: u64) -> Result<MeshNet<P>, MeshNetError> {
        cfg.validate()?;
        let cfg = cfg.clone();
        let topo = Topology::parse(&cfg.topology, cfg.spacing_m).map_err(|e| MeshNetError::new("topology", e))?;
        let n = topo.len();
        if n > NONE16 as usize {
            return Err(MeshNetError::new(
                "topology",
                format!("a mesh has at most {} nodes, the topology has {n}", NONE16),
            ));
        }
        let sink = cfg.routing.sink.unwrap_or(0);
        if sink >= n {
            return Err(MeshNetError::new("routing.sink", format!("{sink} is not a node (the topology has {n})")));
        }
        let root = match cfg.routing.root {
            Some(r) if r >= n => {
                return Err(MeshNetError::new("routing.root", format!("{r} is not a node (the topology has {n})")))
            }
            Some(r) => r,
            None => topo.nearest_centre(sink),
        };
        let medium = Medium::new(&topo, &cfg.radio);
        let dodag = Dodag::build(&medium, &cfg.routing, root).map_err(|e| MeshNetError::new("topology", e))?;
        let mut cca_hearers = vec![Vec::new(); n];
        for (listener, senders) in medium.cca_senders.iter().enumerate() {
            for &s in senders {
                cca_hearers[s as usize].push(listener as u16);
            }
        }
        let m = &cfg.mac;
        let air = cfg.airtime_us(m.ack_frame_bytes) as Ns * US;
        let wake_period = (1e9 / m.channel_check_rate_hz).round().max(1.0) as Ns;
        let mut rng_rdc = SplitMix64::stream(seed, STREAM_RDC);
        let wake_phase = (0..n).map(|_| below(&mut rng_rdc, wake_period)).collect();
        Ok(MeshNet {
            duty_cycled: m.rdc == Rdc::Contikimac,
            wake_period,
            wake_phase,
            phase_known: vec![false; n * n],
            pending_strobe: None,
            capture_ratio: cfg.radio.capture_db.map(|db| libm::pow(10.0, db / 10.0)),
            contiki: m.csma == CsmaMode::Contiki,
            contiki_timebase: if m.rdc == Rdc::Contikimac { wake_period } else { m.contiki_timebase_us as Ns * US },
            contiki_tick: m.contiki_timebase_us as Ns * US,
            sink,
            cca_hearers,
            nodes: (0..n).map(|_| Node::default()).collect(),
            last_seq: vec![NONE16; n * n],
            txs: Vec::new(),
            free_tx: Vec::new(),
            parked: Vec::new(),
            free_parked: Vec::new(),
            active: Vec::new(),
            heap: BinaryHeap::new(),
            seq: 0,
            now: 0,
            rng_mac: SplitMix64::stream(seed, STREAM_MAC),
            rng_radio: SplitMix64::stream(seed, STREAM_RADIO),
            unit_backoff: m.unit_backoff_us as Ns * US,
            cca: m.cca_us as Ns * US,
            turnaround: m.turnaround_us as Ns * US,
            ack_wait: m.ack_wait_us as Ns * US,
            ack_air: air,
            forward_delay: cfg.routing.forward_delay_us as Ns * US,
            mac: MacCounters::default(),
            causes: LossCauses::default(),
            cons: Conservation::default(),
            pending_arrivals: 0,
            mac_log: None,
            out: None,
            topo,
            medium,
            dodag,
            cfg,
        })
    }

    /// A packet of `psdu` bytes enters the network at node `from` at `now`, for node `to`
    /// (routed hop by hop along the DODAG). `seq`: the host's insertion counter.
    ///
    /// # Panics
    /// If `from` or `to` is not a node of the topology (hosts place their endpoints on nodes
    /// when they are built).
    pub fn push(&mut self, now: u64, seq: &mut u64, from: u16, to: u16, psdu: u32, payload: P) {
        self.enter(now, seq);
        self.cons.created += 1;
        self.enqueue(from, Frame { dst: to, next: NONE16, psdu, routed: true, payload });
        *seq = self.seq;
    }

    /// A bare frame of `psdu` bytes for `src`'s neighbour `to`, handed to `src`'s MAC at
    /// `at_ns` (no routing): for MAC tests. Delivered (and returned by [`MeshNet::poll`]) at
    /// `to` if the MAC gets it there.
    ///
    /// # Panics
    /// When the frame is handed over, if `src` or `to` is not a node.
    pub fn inject(&mut self, at_ns: u64, seq: &mut u64, src: u16, to: u16, psdu: u32, payload: P) {
        self.seq = *seq;
        let slot = self.park(Frame { dst: to, next: to, psdu, routed: false, payload });
        self.schedule(at_ns, Ev::Inject { node: src, slot });
        *seq = self.seq;
    }

    /// `(time, seq)` of the next internal event.
    #[inline]
    pub fn peek(&self) -> Option<(u64, u64)> {
        self.heap.peek().map(|e| (e.time(), e.seq()))
    }

    /// Run the next internal event (at the time [`MeshNet::peek`] gave); returns the packet it
    /// delivered at its destination, if any. `seq`: the host's insertion counter.
    pub fn poll(&mut self, seq: &mut u64) -> Option<Delivery<P>> {
        let e = self.heap.pop()?;
        self.enter(e.time(), seq);
        self.handle(e.ev);
        *seq = self.seq;
        self.out.take()
    }

    fn enter(&mut self, now: Ns, seq: &u64) {
        debug_assert!(now >= self.now, "time runs forward");
        self.now = now;
        self.seq = *seq;
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
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
            Ev::Deliver { node, slot } => {
                let pkt = self.unpark(slot);
                self.deliver(node, pkt);
            }
        }
    }

    /// Record every MAC event (see [`MeshNet::mac_log`]).
    pub fn enable_mac_log(&mut self) {
        self.mac_log = Some(Vec::new());
    }

    /// The MAC events recorded so far.
    pub fn mac_log(&self) -> &[MacRecord] {
        self.mac_log.as_deref().unwrap_or(&[])
    }

    /// Take the MAC events recorded so far (`None` unless enabled).
    pub fn take_mac_log(&mut self) -> Option<Vec<MacRecord>> {
        self.mac_log.take()
    }

    /// With duty cycling, the first wake-up of `node` at or after `t_ns`; `None` when radios
    /// are always on.
    pub fn wake_up_after(&self, node: usize, t_ns: u64) -> Option<u64> {
        self.duty_cycled.then(|| self.next_wake(node, t_ns))
    }

    /// The node positions.
    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// The DODAG.
    pub fn dodag(&self) -> &Dodag {
        &self.dodag
    }

    /// The radio tables.
    pub fn medium(&self) -> &Medium {
        &self.medium
    }

    /// The sink node (`routing.sink`).
    pub fn sink(&self) -> usize {
        self.sink
    }

    /// The configuration the network was built from.
    pub fn config(&self) -> &MeshNetConfig {
        &self.cfg
    }

    /// MAC counters so far.
    pub fn mac_counters(&self) -> &MacCounters {
        &self.mac
    }

    /// Packets dropped so far, by cause (the MAC and queue causes; the CoAP causes are the
    /// host's and stay zero here).
    pub fn drop_causes(&self) -> &LossCauses {
        &self.causes
    }

    /// Packets pushed or injected, delivered and dropped so far, and those still in the
    /// network (queued or between hops). Invariant: created + duplicates forwarded =
    /// delivered + dropped + in network.
    pub fn conservation(&self) -> Conservation {
        let mut in_network = self.pending_arrivals;
        for n in &self.nodes {
            // A head frame the next hop already accepted (its MAC ACK was lost) is counted
            // there.
            in_network += n.queue.len() as u64 - (n.in_service && n.head_accepted) as u64;
        }
        in_network += self.heap.iter().filter(|e| matches!(e.ev, Ev::Deliver { .. })).count() as u64;
        Conservation { in_network_at_end: in_network, ..self.cons.clone() }
    }

    /// Keep a packet out of the event queue (events stay small and cheap to move).
    fn park(&mut self, pkt: Frame<P>) -> u32 {
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

    fn unpark(&mut self, slot: u32) -> Frame<P> {
        self.free_parked.push(slot);
        self.parked[slot as usize]
    }

    fn schedule(&mut self, t: Ns, ev: Ev) {
        self.seq += 1;
        self.heap.push(Entry::new(t, self.seq, ev));
    }

    fn log(&mut self, node: u16, what: MacWhat) {
        if let Some(l) = self.mac_log.as_mut() {
            l.push(MacRecord { t_ns: self.now, node, what });
        }
    }

    // ---------------------------------------------------------------- network layer

    fn enqueue(&mut self, node: u16, mut pkt: Frame<P>) {
        if pkt.routed {
            match self.dodag.next_hop(node as usize, pkt.dst as usize) {
                Some(h) => pkt.next = h as u16,
                None => {
                    // No route from here (only a packet pushed at its own destination):
                    // delivered at once, through the queue so `push` never re-enters the host.
                    let slot = self.park(pkt);
                    return self.schedule(self.now, Ev::Deliver { node, slot });
                }
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

    fn drop_packet(&mut self, node: u16, _pkt: Frame<P>, cause: DropCause) {
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
    fn arrive(&mut self, node: u16, pkt: Frame<P>) {
        if pkt.dst == node {
            self.deliver(node, pkt);
        } else {
            self.enqueue(node, pkt);
        }
    }

    fn deliver(&mut self, node: u16, pkt: Frame<P>) {
        self.cons.delivered += 1;
        if !pkt.routed {
            self.log(node, MacWhat::Delivered);
        }
        debug_assert!(self.out.is_none(), "one delivery per event");
        self.out = Some(Delivery { node, psdu: pkt.psdu, payload: pkt.payload });
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
        self.schedule(t, Ev::CcaEnd { node, token });
    }

    /// Contiki's retransmission delay T + U[0, 2^exp·T), drawn in clock ticks (`random_rand()
    /// % (2^exp · T)` with T in ticks): multiples of T over `nullrdc` (T = one tick), any tick
    /// of the span with duty cycling (T = the check interval).
    fn contiki_rexmit_delay(&mut self, exp: u8) -> Ns {
        let tick = self.contiki_tick;
        let span_ticks = ((self.contiki_timebase << exp) / tick).max(1);
        self.contiki_timebase + tick * below(&mut self.rng_mac, span_ticks)
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
            below(&mut self.rng_mac, max + 1) * self.wake_period
        } else {
            below(&mut self.rng_mac, 1u64 << be) * self.unit_backoff
        };
        let n = &mut self.nodes[node as usize];
        n.token = n.token.wrapping_add(1);
        let token = n.token;
        let dst = n.queue.front().map_or(NONE16, |p| p.next);
        let t = self.phase_snap(node, dst, self.now + delay + self.cca);
        self.schedule(t, Ev::CcaEnd { node, token });
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
            self.schedule(t, Ev::TxStart { node, token });
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

    fn start_transmission(&mut self, tx: Tx<P>, air: Ns) {
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
        self.schedule(t, Ev::TxEnd { tx: id });
        if let Some(at) = self.pending_strobe.take() {
            self.schedule(at, Ev::StrobeRx { tx: id });
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
        self.schedule(data_end + self.ack_wait, Ev::AckTimeout { node, token });
    }

    fn data_received(&mut self, r: u16, tx: Tx<P>) {
        let t = self.now + self.turnaround;
        self.schedule(t, Ev::AckStart { node: r, to: tx.sender, seq: tx.seq });
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
            self.schedule(t, Ev::Arrive { node: r, slot });
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
}

/// A uniform draw in `0..n`.
pub(crate) fn below(rng: &mut SplitMix64, n: u64) -> u64 {
    ((rng.next_u64() as u128 * n as u128) >> 64) as u64
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
