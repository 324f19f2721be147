//! The topology's packet paths: a packet goes over its client's access link (the dumbbell's
//! links or an extra access link, with the queue trace), or into the mesh network
//! (`topology.mesh`): a multi-hop IEEE 802.15.4 network ([`coapcc_mesh::MeshNet`]: shared
//! radio medium, CSMA/CA MAC with ACKs and retries, per-node queues, storing-mode forwarding
//! along a DODAG) in place of the links, as one more event source of the engine's loop.
//!
//! Over a mesh the server sits at the sink, client c on the c-th node that is neither the
//! sink nor the DODAG root (round robin). A packet of `size` IP bytes becomes a frame of
//! `MeshNetConfig::psdu_of_coap(size - IP - UDP headers)` bytes: the CoAP message under the
//! compressed 6LoWPAN/UDP headers, the RPL option and the 802.15.4 header. The network
//! schedules its internal events (backoffs, CCAs, frames, ACKs, timeouts) with `seq` numbers
//! from the engine's own counter, so the loop merges them with every other source in
//! `(time, seq)` order; a frame delivered at its destination is handed to the protocol as a link
//! delivery would be. The network carries a handle into a slab of the engine's packets; with
//! MAC duplicate detection off, a packet the network delivers twice is handed over twice (a
//! copy stays in the slab).

use coapcc_mesh::{MacRecord, MeshNet, MeshNetConfig};
use slab::Slab;

use super::{step, Nanos, Packet, Placement, Protocol, Sim, Workload};
use crate::config::{ConfigError, SimConfig};
use crate::link::{Outcome, Transit};
use crate::report::MeshLinkReport;
use crate::trace::Direction;

/// The mesh network of a run and the engine packets it carries.
pub(crate) struct MeshHost<B> {
    net: MeshNet<u32>,
    cfg: MeshNetConfig,
    /// Packets in the network, by handle.
    slab: Slab<Packet<B>>,
    /// The node of each client.
    client_node: Vec<u16>,
    sink: u16,
    /// IP and UDP header bytes of a packet (removed from its IP size).
    ip_udp: u32,
    /// MAC duplicate detection is off: a delivered packet may come again, so it stays in
    /// the slab and the protocol gets a copy.
    duplicates: bool,
    /// Nodes that host clients.
    hosts: usize,
}

impl<B: Clone> MeshHost<B> {
    /// The network of `cfg.topology.mesh`, if any, with its clients placed.
    pub(crate) fn new(cfg: &SimConfig) -> Result<Option<Self>, ConfigError> {
        let Some(m) = &cfg.topology.mesh else { return Ok(None) };
        let err = |e: String| ConfigError::Invalid { field: "topology.mesh.topology".into(), problem: e };
        let net = MeshNet::new(m, cfg.seed).map_err(crate::config::mesh_error)?;
        let ip_udp = crate::message_sizes::ip_len(0, cfg.coap.ip_version) as u32;
        let hosts = host_nodes(&net);
        if hosts.is_empty() {
            return Err(err("the topology has no node for a client besides the root and the sink".into()));
        }
        let clients = cfg.total_clients() as usize;
        Ok(Some(MeshHost {
            client_node: (0..clients).map(|c| hosts[c % hosts.len()]).collect(),
            sink: net.sink() as u16,
            duplicates: !m.mac.duplicate_detection,
            hosts: hosts.len(),
            net,
            cfg: m.clone(),
            slab: Slab::new(),
            ip_udp,
        }))
    }

    /// Record every MAC event (for a trace sink that wants them).
    pub(crate) fn enable_mac_log(&mut self) {
        self.net.enable_mac_log();
    }

    /// The MAC events recorded.
    pub(crate) fn take_mac_log(&mut self) -> Option<Vec<MacRecord>> {
        self.net.take_mac_log()
    }

    /// The node of each client.
    pub(crate) fn client_nodes(&self) -> &[u16] {
        &self.client_node
    }

    /// Where the clients sit (for their random streams).
    pub(crate) fn placement(&self) -> Placement {
        Placement { nodes: Some(self.client_node.clone()), hosts: self.hosts }
    }

    fn psdu(&self, size: u32) -> u32 {
        self.cfg.psdu_of_coap(size.saturating_sub(self.ip_udp))
    }

    /// Client `p.client`'s packet of `size` IP bytes enters the network for the server.
    fn push_up(&mut self, now: Nanos, seq: &mut u64, size: u32, p: Packet<B>) {
        let (from, psdu) = (self.client_node[p.client as usize], self.psdu(size));
        let h = self.slab.insert(p) as u32;
        self.net.push(now, seq, from, self.sink, psdu, h);
    }

    /// The server's packet of `size` IP bytes enters the network for client `p.client`.
    fn push_down(&mut self, now: Nanos, seq: &mut u64, size: u32, p: Packet<B>) {
        let (to, psdu) = (self.client_node[p.client as usize], self.psdu(size));
        let h = self.slab.insert(p) as u32;
        self.net.push(now, seq, self.sink, to, psdu, h);
    }

    /// `(time, seq)` of the network's next event.
    #[inline]
    pub(crate) fn peek(&self) -> Option<(Nanos, u64)> {
        self.net.peek()
    }

    /// Run the network's next event; a packet it delivered, with whether it reached the
    /// server.
    fn poll(&mut self, seq: &mut u64) -> Option<(bool, Packet<B>)> {
        let d = self.net.poll(seq)?;
        let p = if self.duplicates {
            // The packet may come again: it stays.
            self.slab.get(d.payload as usize)?.clone()
        } else {
            self.slab.try_remove(d.payload as usize)?
        };
        Some((d.node == self.sink, p))
    }

    /// The network's part of the report; `waiting`: the server's answers held back by its
    /// processing delay (created, not in the network yet: counted as in it).
    pub(crate) fn report(&self, waiting: u64) -> MeshLinkReport {
        let dodag = self.net.dodag();
        let c = self.net.drop_causes();
        let topo = self.net.topology();
        let cons = self.net.conservation();
        MeshLinkReport {
            nodes: topo.len(),
            root: dodag.root,
            sink: self.sink as usize,
            client_nodes: self.client_node.clone(),
            client_hops: self.client_node.iter().map(|&v| dodag.hops(v as usize, self.sink as usize)).collect(),
            mac: self.net.mac_counters().clone(),
            drops: c.clone(),
            conservation: coapcc_mesh::report::Conservation {
                created: cons.created + waiting,
                in_network_at_end: cons.in_network_at_end + waiting,
                ..cons
            },
            parents: dodag.parent.clone(),
            depth: dodag.depth.clone(),
            positions: topo.positions.clone(),
        }
    }
}

/// The nodes that host clients: every node but the DODAG root and the sink, in order (the
/// root too with `routing.root_client`).
pub(crate) fn host_nodes<P: Copy>(net: &MeshNet<P>) -> Vec<u16> {
    let (n, root, sink) = (net.topology().len(), net.dodag().root, net.sink());
    let root_client = net.config().routing.root_client;
    (0..n).filter(|&v| (v != root || root_client) && v != sink).map(|v| v as u16).collect()
}

impl<M: Protocol<W>, W: Workload> Sim<'_, M, W> {
    /// Whether client `c` sits behind `up` and `down` (not an access link of its own).
    #[inline(always)]
    fn on_main_link(&self, c: usize) -> bool {
        self.extra.is_empty() || self.client_link.get(c).map_or(true, |&k| k == 0)
    }

    /// Client `c`'s uplink (its access link's).
    #[inline(always)]
    fn uplink(&mut self, c: usize) -> &mut crate::link::Link<Packet<M::Buf>> {
        if self.extra.is_empty() {
            return &mut self.up;
        }
        match self.client_link.get(c) {
            Some(&k) if k > 0 => &mut self.extra[k as usize - 1].0,
            _ => &mut self.up,
        }
    }

    /// Client `c`'s downlink.
    #[inline(always)]
    fn downlink(&mut self, c: usize) -> &mut crate::link::Link<Packet<M::Buf>> {
        if self.extra.is_empty() {
            return &mut self.down;
        }
        match self.client_link.get(c) {
            Some(&k) if k > 0 => &mut self.extra[k as usize - 1].1,
            _ => &mut self.down,
        }
    }

    /// Send client `c`'s packet of `size` IP bytes toward the server: over its access link, or
    /// into the mesh. Returns whether a link holds it now (it will be delivered; always
    /// `true` for the mesh, which decides later).
    #[inline(always)]
    pub(super) fn send_up(&mut self, c: usize, size: u32, p: Packet<M::Buf>) -> bool {
        let now = self.now;
        match self.mesh.as_mut() {
            Some(m) => {
                m.push_up(now, &mut self.seq, size, p);
                true
            }
            None => {
                let seq = p.seq;
                let tr = self.uplink(c).push(now, size, p);
                if self.qtrace.is_some() {
                    self.trace_queue(c, Direction::Uplink, &tr, size);
                }
                let held = tr.outcome == Outcome::Delivered;
                if held && self.on_main_link(c) {
                    self.up_head = self.up_head.min(step::ev_key(tr.at, seq));
                }
                held
            }
        }
    }

    /// Send the server's packet of `size` IP bytes toward client `p.client`. Returns whether
    /// a link holds it now, as [`Sim::send_up`].
    #[inline(always)]
    pub(super) fn send_down(&mut self, size: u32, p: Packet<M::Buf>) -> bool {
        let now = self.now;
        match self.mesh.as_mut() {
            Some(m) => {
                m.push_down(now, &mut self.seq, size, p);
                true
            }
            None => {
                let (c, seq) = (p.client as usize, p.seq);
                let tr = self.downlink(c).push(now, size, p);
                if self.qtrace.is_some() {
                    self.trace_queue(c, Direction::Downlink, &tr, size);
                }
                let held = tr.outcome == Outcome::Delivered;
                if held && self.on_main_link(c) {
                    self.down_head = self.down_head.min(step::ev_key(tr.at, seq));
                }
                held
            }
        }
    }

    /// Run the mesh's next event and hand what it delivered to the protocol.
    pub(super) fn mesh_event(&mut self) {
        let Some(m) = self.mesh.as_mut() else { return };
        match m.poll(&mut self.seq) {
            Some((true, p)) => M::at_server(self, p),
            Some((false, p)) => M::at_client(self, p),
            None => {}
        }
    }

    /// The mesh node of client `c` (`None` without a mesh).
    pub(crate) fn client_node(&self, c: usize) -> Option<u16> {
        self.mesh.as_ref().map(|m| m.client_nodes()[c])
    }

    /// Queue trace: client `c`'s access link in direction `dir` was handed a packet.
    #[cold]
    #[inline(never)]
    fn trace_queue(&mut self, c: usize, dir: Direction, tr: &Transit, size: u32) {
        let (Some(q), Some(sink)) = (self.qtrace.as_deref_mut(), self.trace.as_deref_mut()) else { return };
        let k = self.client_link.get(c).map_or(0, |&k| k as usize);
        let (u, d) = if k == 0 { (&self.up, &self.down) } else { (&self.extra[k - 1].0, &self.extra[k - 1].1) };
        let (idx, link) = if dir == Direction::Uplink { (2 * k, u) } else { (2 * k + 1, d) };
        q.observe(idx, link.path(), tr, size, sink);
    }

    /// The run ended: the queue trace's last leaves (up to the time bound if it was hit), and
    /// the mesh's MAC log to a sink that wants it.
    pub(in crate::engine) fn finish_trace(&mut self, truncated: bool) {
        if let (Some(q), Some(sink)) = (self.qtrace.as_deref_mut(), self.trace.as_deref_mut()) {
            q.finish(truncated.then_some(self.bound), sink);
        }
        if let (Some(m), Some(sink)) = (self.mesh.as_mut(), self.trace.as_deref_mut()) {
            for r in m.take_mac_log().unwrap_or_default() {
                sink.mac(&r);
            }
        }
    }
}
