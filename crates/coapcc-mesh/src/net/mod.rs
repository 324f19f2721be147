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
//! - [`medium`](self::medium): transmissions on the shared channel, who receives what (the
//!   reception curve with capture, or Cooja's MRM rules), what CCA senses;
//! - `mac`: IEEE 802.15.4 unslotted CSMA/CA, and Contiki's rules over ContikiMAC;
//! - `contiki`: Contiki's `csma.c` over `nullrdc` (per-neighbour queues, synchronous sending,
//!   optional link-layer ACKs) with the motes' processor and receive FIFO;
//! - `control`: RPL's DIOs (Trickle) and DAOs.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use coapcc_cc::{Entropy, SplitMix64};

use crate::config::{CsmaMode, MediumConfig, MediumError, Rdc};
use crate::radio::Medium;
use crate::report::{Conservation, LossCauses, MacCounters};
use crate::routing::Dodag;
use crate::topology::Topology;

mod contiki;
mod control;
mod mac;
pub mod medium;

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

/// What a frame carries.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind<P> {
    /// A host packet (or a test frame).
    Host(P),
    /// An RPL DIO (link-local broadcast).
    Dio,
    /// An RPL DAO (to the root).
    Dao,
}

/// A packet in the network: its destination node, the next hop chosen at the node holding it,
/// its PSDU size and what it carries.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Frame<P> {
    pub(crate) dst: u16,
    pub(crate) next: u16,
    pub(crate) psdu: u32,
    /// Routed by the DODAG (every host packet); `false` for a test frame sent to a neighbour
    /// and for a DIO.
    pub(crate) routed: bool,
    pub(crate) kind: Kind<P>,
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
pub(crate) enum Ev {
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
    /// Contiki: a neighbour queue's timer (`ctimer`) fired.
    QueueTimer {
        node: u16,
        next: u16,
        token: u32,
    },
    /// Contiki: the processor finished its current step.
    Cpu {
        node: u16,
        token: u32,
    },
    /// RPL: a node's Trickle timer fires (send a DIO unless suppressed).
    DioFire {
        node: u16,
    },
    /// RPL: a node's Trickle interval ends (double it).
    DioInterval {
        node: u16,
    },
    /// RPL: a node sends its DAO.
    DaoSend {
        node: u16,
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

/// A transmission on the channel.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tx<P> {
    pub(crate) sender: u16,
    pub(crate) dst: u16,
    pub(crate) ack: bool,
    pub(crate) seq: u8,
    pub(crate) pkt: Option<Frame<P>>,
    pub(crate) start: Ns,
    /// The addressee's reception draw failed (MRM): a loss to fading, not to a collision.
    pub(crate) dst_faded: bool,
}

/// Per node: the MAC state of the 802.15.4 and ContikiMAC rules, the medium's reception
/// state, and the Contiki stack's queues, processor and FIFO.
pub(crate) struct Node<P> {
    // 802.15.4 / ContikiMAC MAC (one FIFO).
    pub(crate) queue: VecDeque<Frame<P>>,
    pub(crate) in_service: bool,
    pub(crate) nb: u8,
    pub(crate) be: u8,
    pub(crate) retries: u8,
    pub(crate) token: u32,
    pub(crate) dsn: u8,
    pub(crate) awaiting_ack: bool,
    pub(crate) head_accepted: bool,
    /// The previous frame was dropped (Contiki waits one time base before the next).
    pub(crate) last_failed: bool,
    // Medium.
    pub(crate) tx: Option<u32>,
    pub(crate) rx: Option<medium::Rx>,
    pub(crate) cca_count: u32,
    pub(crate) cca_last_end: Ns,
    pub(crate) mrm: medium::MrmRadio,
    // Contiki nullrdc stack.
    pub(crate) ck: contiki::Stack<P>,
    // RPL.
    pub(crate) rpl: control::Trickle,
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
            mrm: medium::MrmRadio::default(),
            ck: contiki::Stack::default(),
            rpl: control::Trickle::default(),
        }
    }
}

/// Why a packet left the network without arriving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropCause {
    /// The node's queue (buffer pool) was full.
    BufferOverflow,
    /// Every neighbour queue was taken by other next hops (`mac.max_neighbor_queues`).
    NeighborQueues,
    /// macMaxFrameRetries retransmissions without a MAC ACK.
    NoAck,
    /// macMaxCSMABackoffs busy CCAs.
    ChannelAccess,
    /// Lost on the air without link-layer ACKs: a collision at the next hop.
    AirCollision,
    /// Lost on the air without link-layer ACKs: the reception draw failed at the next hop.
    AirFading,
    /// The next hop's receive FIFO overflowed (or was flushed after an overflow).
    FifoOverflow,
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
    /// A received frame did not fit the receive FIFO (Contiki motes).
    FifoOverflow,
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
    pub(crate) cfg: MediumConfig,
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
    pub(crate) causes: LossCauses,
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
    /// [`MediumConfig::validate`]), its random streams from `seed`.
    pub fn new(cfg: &MediumConfig, seed: u64) -> Result<MeshNet<P>, MediumError> {
        cfg.validate()?;
        let cfg = cfg.clone();
        let topo = Topology::parse(&cfg.topology, cfg.spacing_m).map_err(|e| MediumError::new("topology", e))?;
        let n = topo.len();
        if n >= BCAST as usize {
            return Err(MediumError::new(
                "topology",
                format!("a mesh has at most {} nodes, the topology has {n}", BCAST - 1),
            ));
        }
        let sink = cfg.routing.sink.unwrap_or(0);
        if sink >= n {
            return Err(MediumError::new("routing.sink", format!("{sink} is not a node (the topology has {n})")));
        }
        let root = match cfg.routing.root {
            Some(r) if r >= n => {
                return Err(MediumError::new("routing.root", format!("{r} is not a node (the topology has {n})")))
            }
            Some(r) => r,
            None => topo.nearest_centre(sink),
        };
        let medium = Medium::new(&topo, &cfg.radio);
        let dodag = Dodag::build(&medium, &cfg.routing, root).map_err(|e| MediumError::new("topology", e))?;
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
            causes: LossCauses::default(),
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
    pub fn config(&self) -> &MediumConfig {
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
