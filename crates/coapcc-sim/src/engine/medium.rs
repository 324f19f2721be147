//! The mesh topology (`topology.mesh`): a multi-hop IEEE 802.15.4 network
//! ([`coapcc_mesh::MeshNet`]: shared radio medium, CSMA/CA MAC with ACKs and retries, per-node
//! queues, storing-mode forwarding along a DODAG) in place of the links, as one more event
//! source of the engine's loop.
//!
//! The server sits at the sink, client c on the c-th node that is neither the sink nor the
//! DODAG root (round robin). A packet of `size` IP bytes becomes a frame of
//! `MediumConfig::psdu_of_coap(size - IP - UDP headers)` bytes: the CoAP message under the
//! compressed 6LoWPAN/UDP headers, the RPL option and the 802.15.4 header. The network
//! schedules its internal events (backoffs, CCAs, frames, ACKs, timeouts) with `seq` numbers
//! from the engine's own counter, so the loop merges them with every other source in
//! `(time, seq)` order; a frame delivered at its destination is handed to the model as a link
//! delivery would be. The network carries a handle into a slab of the engine's packets (the
//! configuration check rules out MAC duplicate forwarding, the only way a packet could be
//! delivered twice).

use coapcc_mesh::{MediumConfig, MeshConfig, MeshNet};
use slab::Slab;

use super::{Model, Nanos, Packet, Sim};
use crate::config::{ConfigError, SimConfig};
use crate::link::Outcome;
use crate::report::{MeshDrops, MeshLinkReport};
use crate::trace::Direction;

/// Copies a packet (for a network that may deliver it more than once).
pub(crate) type CopyPacket<B> = fn(&Packet<B>) -> Packet<B>;

/// The mesh network of a run and the engine packets it carries.
pub(crate) struct MeshLink<B> {
    net: MeshNet<u32>,
    cfg: MediumConfig,
    /// Packets in the network, by handle.
    slab: Slab<Packet<B>>,
    /// The node of each client.
    client_node: Vec<u16>,
    sink: u16,
    /// IP and UDP header bytes of a packet (removed from its IP size).
    ip_udp: u32,
    /// The sizes the model passes are frame sizes (PSDU bytes), not IP sizes (the mesh
    /// study sizes its frames itself).
    psdu_sizes: bool,
    /// How to copy a packet the network delivers more than once (MAC duplicate detection
    /// off): with it, a delivered packet stays in the slab and the model gets a copy.
    copy: Option<CopyPacket<B>>,
}

impl<B> MeshLink<B> {
    /// The network of `cfg.topology.mesh`, if any.
    pub(crate) fn new(cfg: &SimConfig) -> Result<Option<Self>, ConfigError> {
        let Some(m) = &cfg.topology.mesh else { return Ok(None) };
        let err = |e: String| ConfigError::Invalid { field: "topology.mesh".into(), problem: e };
        let net = MeshNet::new(&m.to_mesh(cfg.seed)).map_err(err)?;
        let ip_udp = crate::coap::ip_len(0, cfg.coap.ip_version) as u32;
        Self::build(net, m.clone(), Some(cfg.total_clients() as usize), ip_udp).map(Some).map_err(err)
    }

    /// The network of a mesh study's configuration, built from it as it is (every network
    /// field and the seed), with one client on each node but the root and the sink, its
    /// packets sized as frames ([`Sim::send_up`] and [`Sim::send_down`] take PSDU bytes);
    /// `copy` copies a packet the network delivers twice (MAC duplicate detection off).
    pub(crate) fn for_study(cfg: &MeshConfig, copy: CopyPacket<B>) -> Result<Self, String> {
        let net = MeshNet::new(cfg)?;
        let mut link = Self::build(net, MediumConfig::from_mesh(cfg), None, 0)?;
        link.psdu_sizes = true;
        link.copy = (!cfg.mac.duplicate_detection).then_some(copy);
        Ok(link)
    }

    /// `clients`: how many (round robin over the nodes, at least one node needed); `None`:
    /// one per node (possibly none).
    fn build(net: MeshNet<u32>, cfg: MediumConfig, clients: Option<usize>, ip_udp: u32) -> Result<Self, String> {
        let (n, root, sink) = (net.topology().len(), net.dodag().root, net.sink());
        let hosts: Vec<u16> = (0..n).filter(|&v| v != root && v != sink).map(|v| v as u16).collect();
        if hosts.is_empty() && clients.is_some() {
            return Err("the topology has no node for a client besides the root and the sink".into());
        }
        Ok(MeshLink {
            net,
            cfg,
            slab: Slab::new(),
            client_node: (0..clients.unwrap_or(hosts.len())).map(|c| hosts[c % hosts.len()]).collect(),
            sink: sink as u16,
            ip_udp,
            psdu_sizes: false,
            copy: None,
        })
    }

    /// The network.
    pub(crate) fn net(&self) -> &MeshNet<u32> {
        &self.net
    }

    /// The network, to change (MAC log).
    pub(crate) fn net_mut(&mut self) -> &mut MeshNet<u32> {
        &mut self.net
    }

    /// The node of each client.
    pub(crate) fn client_nodes(&self) -> &[u16] {
        &self.client_node
    }

    /// A bare frame of `psdu` bytes carrying `p`, handed to node `src`'s MAC for its
    /// neighbour `to` at `at` (no routing): for MAC tests.
    pub(crate) fn inject(&mut self, at: Nanos, seq: &mut u64, src: u16, to: u16, psdu: u32, p: Packet<B>) {
        let h = self.store(p);
        self.net.inject(at, seq, src, to, psdu, h);
    }

    fn psdu(&self, size: u32) -> u32 {
        if self.psdu_sizes {
            return size;
        }
        self.cfg.psdu_of_coap(size.saturating_sub(self.ip_udp))
    }

    /// A handle for `p` (a freed handle is reused first, the last freed first).
    fn store(&mut self, p: Packet<B>) -> u32 {
        self.slab.insert(p) as u32
    }

    /// Client `p.client`'s packet of `size` IP bytes enters the network for the server.
    fn push_up(&mut self, now: Nanos, seq: &mut u64, size: u32, p: Packet<B>) {
        let (from, psdu) = (self.client_node[p.client as usize], self.psdu(size));
        let h = self.store(p);
        self.net.push(now, seq, from, self.sink, psdu, h);
    }

    /// The server's packet of `size` IP bytes enters the network for client `p.client`.
    fn push_down(&mut self, now: Nanos, seq: &mut u64, size: u32, p: Packet<B>) {
        let (to, psdu) = (self.client_node[p.client as usize], self.psdu(size));
        let h = self.store(p);
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
        let p = match self.copy {
            // The packet may come again: it stays.
            Some(copy) => copy(self.slab.get(d.payload as usize)?),
            None => self.slab.try_remove(d.payload as usize)?,
        };
        Some((d.node == self.sink, p))
    }

    /// The network's part of the report.
    pub(crate) fn report(&self) -> MeshLinkReport {
        let dodag = self.net.dodag();
        let c = self.net.drop_causes();
        MeshLinkReport {
            nodes: self.net.topology().len(),
            root: dodag.root,
            sink: self.sink as usize,
            client_nodes: self.client_node.clone(),
            client_hops: self.client_node.iter().map(|&v| dodag.hops(v as usize, self.sink as usize)).collect(),
            mac: self.net.mac_counters().clone(),
            drops: MeshDrops {
                buffer_overflow: c.buffer_overflow,
                neighbor_queues_full: c.neighbor_queues_full,
                mac_no_ack: c.mac_no_ack,
                mac_channel_access: c.mac_channel_access,
                air_collision: c.air_collision,
                air_fading: c.air_fading,
                fifo_overflow: c.fifo_overflow,
            },
            conservation: self.net.conservation(),
        }
    }
}

impl<M: Model> Sim<'_, M> {
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
                    self.up_head = self.up_head.min(super::ev_key(tr.at, seq));
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
                    self.down_head = self.down_head.min(super::ev_key(tr.at, seq));
                }
                held
            }
        }
    }

    /// Run the mesh's next event and hand what it delivered to the model.
    pub(super) fn mesh_event(&mut self) {
        let Some(m) = self.mesh.as_mut() else { return };
        match m.poll(&mut self.seq) {
            Some((true, p)) => M::at_server(self, p),
            Some((false, p)) => M::at_client(self, p),
            None => {}
        }
    }
}
