//! The radio medium, the MAC, the motes and storing-mode forwarding of a mesh, as one
//! component with an event-source interface: [`MeshNet`].
//!
//! A host (the general simulator's event loop, for its `topology.mesh` and for the mesh
//! study) hands it packets with [`MeshNet::push`] (a packet of `psdu` bytes entering the network
//! at one node for another), asks for the time of its next internal event with [`MeshNet::peek`] and runs
//! that event with [`MeshNet::poll`], which returns the packet it delivered at its destination,
//! if any. Every event carries `(time, seq)`; `seq` comes from the host's own insertion
//! counter (passed to every call that may schedule), so the host merges the medium's events
//! with its own in one `(time, seq)` order, exactly as one queue of all events would.
//! Randomness comes from the medium's own streams of the master seed: MAC backoffs (stream 1),
//! frame reception (stream 2), duty-cycling phases (stream 4) and RPL's Trickle (stream 5).
//!
//! The parts:
//! - [`medium`]: transmissions on the shared channel, who receives what (the
//!   reception curve with capture, or Cooja's MRM rules), what CCA senses;
//! - `mac`: IEEE 802.15.4 unslotted CSMA/CA, and Contiki's rules over ContikiMAC;
//! - `contiki`: Contiki's `csma.c` over `nullrdc` (per-neighbour queues, synchronous sending,
//!   optional link-layer ACKs) with the motes' processor and receive FIFO;
//! - `control`: RPL's DIOs (Trickle) and DAOs.
//! - `types`: frames, events, per-node state, the MAC log's records.

use std::collections::BinaryHeap;

use coapcc_cc::{Entropy, SplitMix64};

use crate::config::{CsmaMode, MeshNetConfig, MeshNetError, Rdc};
use crate::radio::Medium;
use crate::report::{Conservation, MacCounters, NetDrops};
use crate::routing::Dodag;
use crate::topology::Topology;

mod contiki;
mod control;
mod mac;
pub mod medium;
mod types;

pub use types::{Delivery, DropCause, MacRecord, MacWhat};
pub(crate) use types::{Entry, Ev, Frame, Kind, Node, Tx};

pub(crate) type Ns = u64;
pub(crate) const US: Ns = 1_000;
pub(crate) const NONE16: u16 = u16::MAX;
/// The link-layer broadcast address (a node index no topology reaches).
pub(crate) const BCAST: u16 = u16::MAX - 1;

/// Random stream numbers of the medium (independent streams of the master seed).
pub const STREAM_MAC: u64 = 1;
/// Frame reception draws.
pub const STREAM_RADIO: u64 = 2;
/// Duty-cycling wake-up phases.
pub const STREAM_RDC: u64 = 4;
/// RPL's Trickle timers and DAO delays.
pub const STREAM_RPL: u64 = 5;

/// The radio medium, MAC, queues and forwarding of one mesh (see the module documentation).
/// `P` is the host's payload, carried untouched (copied when a frame is duplicated: a
/// retransmission whose MAC ACK was lost, forwarded twice without duplicate detection).
pub struct MeshNet<P> {
    pub(crate) cfg: MeshNetConfig,
    pub(crate) topo: Topology,
    pub(crate) medium: Medium,
    pub(crate) dodag: Dodag,
    pub(crate) sink: usize,
    /// Inverse CCA table: who senses a transmission of node i (reception-curve model).
    pub(crate) cca_hearers: Vec<Vec<u16>>,
    pub(crate) nodes: Vec<Node<P>>,
    pub(crate) last_seq: Vec<u16>,
    pub(crate) txs: Vec<Tx<P>>,
    pub(crate) free_tx: Vec<u32>,
    pub(crate) parked: Vec<Frame<P>>,
    pub(crate) free_parked: Vec<u32>,
    pub(crate) active: Vec<u32>,
    pub(crate) heap: BinaryHeap<Entry<Ev>>,
    /// The host's insertion counter, held during a call.
    pub(crate) seq: u64,
    pub(crate) now: Ns,
    pub(crate) rng_mac: SplitMix64,
    pub(crate) rng_radio: SplitMix64,
    pub(crate) rng_rpl: SplitMix64,
    // Timing (ns).
    pub(crate) unit_backoff: Ns,
    pub(crate) cca: Ns,
    pub(crate) turnaround: Ns,
    pub(crate) ack_wait: Ns,
    pub(crate) ack_air: Ns,
    pub(crate) forward_delay: Ns,
    // Metrics.
    pub(crate) mac: MacCounters,
    pub(crate) causes: NetDrops,
    pub(crate) cons: Conservation,
    pub(crate) pending_arrivals: u64,
    pub(crate) mac_log: Option<Vec<MacRecord>>,
    /// The packet the current event delivered.
    pub(crate) out: Option<Delivery<P>>,
    // Duty cycling.
    pub(crate) duty_cycled: bool,
    pub(crate) wake_period: Ns,
    pub(crate) wake_phase: Vec<Ns>,
    pub(crate) phase_known: Vec<bool>,
    pub(crate) pending_strobe: Option<Ns>,
    /// `radio.capture_db` as a linear power ratio.
    pub(crate) capture_ratio: Option<f64>,
    /// Cooja's MRM rules (`radio.mrm`).
    pub(crate) mrm: Option<medium::MrmRules>,
    /// Contiki `csma.c` rules (ContikiMAC), and its time base.
    pub(crate) contiki: bool,
    pub(crate) contiki_timebase: Ns,
    pub(crate) contiki_tick: Ns,
    /// Contiki's `csma.c` over `nullrdc` (`net/contiki.rs`).
    pub(crate) nullrdc: Option<contiki::Params>,
    /// Scratch: the receivers of the transmission that just ended.
    pub(crate) rx_scratch: Vec<u16>,
}

impl<P: Copy> MeshNet<P> {
    /// Build the topology, medium tables and DODAG of `cfg` (checked with
    /// [`MeshNetConfig::validate`]), its random streams from `seed`.
    pub fn new(cfg: &MeshNetConfig, seed: u64) -> Result<MeshNet<P>, MeshNetError> {
        cfg.validate()?;
        let cfg = cfg.clone();
        let topo = Topology::parse(&cfg.topology, cfg.spacing_m).map_err(|e| MeshNetError::new("topology", e))?;
        let n = topo.len();
        if n >= BCAST as usize {
            return Err(MeshNetError::new(
                "topology",
                format!("a mesh has at most {} nodes, the topology has {n}", BCAST - 1),
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
        let nullrdc = cfg.nullrdc_stack().then(|| contiki::Params::new(&cfg, root));
        let mut net = MeshNet {
            duty_cycled: m.rdc == Rdc::Contikimac,
            wake_period,
            wake_phase,
            phase_known: vec![false; n * n],
            pending_strobe: None,
            capture_ratio: cfg.radio.capture_db.map(|db| libm::pow(10.0, db / 10.0)),
            mrm: cfg.radio.mrm.as_ref().map(medium::MrmRules::new),
            contiki: m.csma == CsmaMode::Contiki,
            contiki_timebase: if m.rdc == Rdc::Contikimac { wake_period } else { m.contiki_timebase_us as Ns * US },
            contiki_tick: m.contiki_timebase_us as Ns * US,
            nullrdc,
            rx_scratch: Vec::new(),
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
            rng_rpl: SplitMix64::stream(seed, STREAM_RPL),
            unit_backoff: m.unit_backoff_us as Ns * US,
            cca: m.cca_us as Ns * US,
            turnaround: m.turnaround_us as Ns * US,
            ack_wait: m.ack_wait_us as Ns * US,
            ack_air: air,
            forward_delay: cfg.routing.forward_delay_us as Ns * US,
            mac: MacCounters::default(),
            causes: NetDrops::default(),
            cons: Conservation::default(),
            pending_arrivals: 0,
            mac_log: None,
            out: None,
            topo,
            medium,
            dodag,
            cfg,
        };
        if net.cfg.routing.rpl.control {
            net.start_rpl();
        }
        Ok(net)
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
        let pkt = Frame { dst: to, next: NONE16, psdu, routed: true, kind: Kind::Host(payload) };
        if self.nullrdc.is_some() {
            self.ck_local_send(from, pkt);
        } else {
            self.enqueue(from, pkt);
        }
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
        let slot = self.park(Frame { dst: to, next: to, psdu, routed: false, kind: Kind::Host(payload) });
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
                if self.nullrdc.is_some() {
                    self.ck_local_send(node, pkt);
                } else {
                    self.enqueue(node, pkt);
                }
            }
            Ev::Deliver { node, slot } => {
                let pkt = self.unpark(slot);
                self.deliver(node, pkt);
            }
            Ev::QueueTimer { node, next, token } => self.ck_queue_timer(node, next, token),
            Ev::Cpu { node, token } => self.ck_cpu(node, token),
            Ev::DioFire { node } => self.dio_fire(node),
            Ev::DioInterval { node } => self.dio_interval(node),
            Ev::DaoSend { node } => self.dao_send(node),
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
    pub fn drop_causes(&self) -> &NetDrops {
        &self.causes
    }

    /// Packets pushed or injected, delivered and dropped so far, and those still in the
    /// network (queued, between hops, in a receive FIFO or in a processor). Invariant:
    /// `created + duplicates forwarded = delivered + dropped + in network`. RPL's own DIOs and
    /// DAOs are not counted.
    pub fn conservation(&self) -> Conservation {
        let mut in_network = self.pending_arrivals;
        for n in &self.nodes {
            // A head frame the next hop already accepted (its MAC ACK was lost) is counted
            // there.
            in_network += n.queue.len() as u64 - (n.in_service && n.head_accepted) as u64;
            in_network += n.ck.host_packets();
        }
        in_network += self.heap.iter().filter(|e| matches!(e.ev, Ev::Deliver { .. })).count() as u64;
        Conservation { in_network_at_end: in_network, ..self.cons.clone() }
    }

    /// Keep a packet out of the event queue (events stay small and cheap to move).
    pub(crate) fn park(&mut self, pkt: Frame<P>) -> u32 {
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

    pub(crate) fn unpark(&mut self, slot: u32) -> Frame<P> {
        self.free_parked.push(slot);
        self.parked[slot as usize]
    }

    pub(crate) fn schedule(&mut self, t: Ns, ev: Ev) {
        self.seq += 1;
        self.heap.push(Entry::new(t, self.seq, ev));
    }

    pub(crate) fn log(&mut self, node: u16, what: MacWhat) {
        if let Some(l) = self.mac_log.as_mut() {
            l.push(MacRecord { t_ns: self.now, node, what });
        }
    }

    // ---------------------------------------------------------------- network layer

    /// The next hop of `pkt` at `node`; `false` when `node` is its destination (no route
    /// onward).
    pub(crate) fn route(&self, node: u16, pkt: &mut Frame<P>) -> bool {
        if pkt.routed {
            match self.dodag.next_hop(node as usize, pkt.dst as usize) {
                Some(h) => pkt.next = h as u16,
                None => return false,
            }
        }
        true
    }

    fn enqueue(&mut self, node: u16, mut pkt: Frame<P>) {
        if !self.route(node, &mut pkt) {
            // No route from here (only a packet pushed at its own destination): delivered at
            // once, through the queue so `push` never re-enters the host.
            let slot = self.park(pkt);
            return self.schedule(self.now, Ev::Deliver { node, slot });
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

    /// Count a dropped packet (RPL's own frames are not counted: they are not the host's).
    pub(crate) fn drop_packet(&mut self, node: u16, pkt: Frame<P>, cause: DropCause) {
        self.log(node, MacWhat::Drop(cause));
        if !matches!(pkt.kind, Kind::Host(_)) {
            return;
        }
        self.cons.dropped += 1;
        let c = &mut self.causes;
        match cause {
            DropCause::BufferOverflow => c.buffer_overflow += 1,
            DropCause::NeighborQueues => c.neighbor_queues_full += 1,
            DropCause::NoAck => c.mac_no_ack += 1,
            DropCause::ChannelAccess => c.mac_channel_access += 1,
            DropCause::AirCollision => c.air_collision += 1,
            DropCause::AirFading => c.air_fading += 1,
            DropCause::FifoOverflow => c.fifo_overflow += 1,
        }
    }

    /// A packet accepted by `node` from the MAC.
    pub(crate) fn arrive(&mut self, node: u16, pkt: Frame<P>) {
        if pkt.dst == node {
            self.deliver(node, pkt);
        } else {
            self.enqueue(node, pkt);
        }
    }

    pub(crate) fn deliver(&mut self, node: u16, pkt: Frame<P>) {
        let Kind::Host(payload) = pkt.kind else { return };
        self.cons.delivered += 1;
        if !pkt.routed {
            self.log(node, MacWhat::Delivered);
        }
        debug_assert!(self.out.is_none(), "one delivery per event");
        self.out = Some(Delivery { node, psdu: pkt.psdu, payload });
    }
}

/// A uniform draw in `0..n`.
pub(crate) fn below(rng: &mut SplitMix64, n: u64) -> u64 {
    ((rng.next_u64() as u128 * n as u128) >> 64) as u64
}
