//! The TCP transport: CoAP over TCP (RFC 8323) on the simulator's links, one
//! [`coapcc_tcp::Connection`] pair per flow (per batch for the random workload), hosted by
//! the engine's one loop as the [`Tcp`] protocol.
//!
//! The links are the same [`Link`](crate::link::Link)s the UDP protocols use (same chains, random streams and
//! counters); a packet is a [`Packet`] whose payload is a [`Segment`], charged
//! `seg.wire_len()` bytes (40-byte TCP/IP header + payload) against the rate and the buffer.
//! Data goes down the 30 kbit/s downlink, the client's SYN, CSM, request and ACKs up the
//! 60 kbit/s uplink. The packet's `exchange` field carries the connection generation: random
//! batches open a new connection pair, and segments of an older one are delivered to nobody.
//!
//! Per event (the engine merges the sources, keeps the clock, the time bound, the event
//! budget and the progress callback): the connection is given the segment (`on_segment`) or
//! its timer (`on_timeout`), then its application ([`ClientApp`] / [`ServerApp`]) writes what
//! is due, then every segment `poll_transmit` yields is pushed into the link (one `seq`
//! each), and the connection's timer slot (2c for flow c's client, 2c + 1 for its server) is
//! re-keyed to `poll_timeout()` (one `seq`) or emptied. Events run in `(time, seq)` order as
//! over UDP, so a run is a pure function of (configuration, seed).
//!
//! Random streams (in addition to the links'): client connections of flow c draw their
//! seeds from stream 4·2^32 + c, server connections from 5·2^32 + c, one draw per
//! connection; the workload (start jitter, random batch sizes) from 2·2^32 + c as over UDP.

use coapcc_cc::{Entropy, SplitMix64};
use coapcc_tcp::app::{AppEvent, ClientApp, MessageSizes, ServerApp};
use coapcc_tcp::{Connection, Segment, State, TcpCcConfig, TcpConfig};

use super::protocol::Protocol;
use super::sim::{FlowPart, Packet, Sim};
use super::workload::Flows;
use super::Placement;
use crate::algorithms::GroupAlg;
use crate::config::{invalid, ConfigError, EndpointModel, SimConfig, UnnecessaryDef, WorkloadKind, MAX_CLIENTS};
use crate::link;
use crate::report::{secs, FlowReport, GroupReport, SimReport, Summary};
use crate::trace::{Direction, TraceSink};
use crate::workload::Next;

/// Stream id base of the client connections' seeds (TCP transport; the TCP model's harness
/// numbers them the same way).
pub const STREAM_TCP_CLIENT: u64 = coapcc_tcp::pipe::STREAM_CLIENT;
/// Stream id base of the server connections' seeds (TCP transport).
pub const STREAM_TCP_SERVER: u64 = coapcc_tcp::pipe::STREAM_SERVER;

/// Check a TCP configuration and return each group's TCP configuration (MTU from the link).
pub(crate) fn tcp_configs(cfg: &SimConfig) -> Result<Vec<TcpCcConfig>, ConfigError> {
    if cfg.groups.is_empty() {
        return Err(invalid("groups", "at least one client group is needed"));
    }
    let mtu = cfg.link.mtu_bytes;
    let mut out = Vec::with_capacity(cfg.groups.len());
    for (i, g) in cfg.groups.iter().enumerate() {
        let mut t = TcpCcConfig::parse(crate::config::split_label(&g.cc).1)
            .map_err(|e| ConfigError::Algorithm { group: i, message: e.0 })?;
        if t.tcp.mtu != mtu && t.tcp.mtu != TcpConfig::LINUX.mtu {
            return Err(ConfigError::Algorithm {
                group: i,
                message: format!("mtu={} differs from the link's MTU of {mtu} B (link.mtu_bytes)", t.tcp.mtu),
            });
        }
        t.tcp.mtu = mtu;
        if t.tcp.mss() == 0 {
            return Err(invalid("link.mtu_bytes", format!("{mtu} B leaves no room for TCP payload")));
        }
        out.push(t);
    }
    let total: u64 = cfg.groups.iter().map(|g| g.clients as u64).sum();
    if total == 0 {
        return Err(invalid("groups", "zero clients: at least one group needs clients > 0"));
    }
    if total > MAX_CLIENTS {
        return Err(invalid("groups", format!("{total} clients exceed the limit of {MAX_CLIENTS}")));
    }
    let w = &cfg.workload;
    if w.exchanges == 0 {
        return Err(invalid("workload.exchanges", "must be at least 1"));
    }
    if w.batch_min == 0 || w.batch_min > w.batch_max {
        return Err(invalid(
            "workload.batch_min",
            format!("batch sizes need 1 <= batch_min <= batch_max (got {}..{})", w.batch_min, w.batch_max),
        ));
    }
    if !(w.start_jitter_ms.is_finite() && (0.0..=1e12).contains(&w.start_jitter_ms)) {
        return Err(invalid("workload.start_jitter_ms", "must be a finite, non-negative number of ms"));
    }
    if let WorkloadKind::Bulk(b) = w.kind {
        if b == 0 || b > 1 << 40 {
            return Err(invalid("workload.kind", format!("bulk:{b}: the size must be 1 to 2^40 bytes")));
        }
    }
    // A segment is at most one MTU (the TCP configuration's MSS comes from it).
    cfg.validate_access_links(mtu)?;
    if cfg.endpoint.model != EndpointModel::Compact {
        return Err(invalid("endpoint.model", "the endpoint model applies to UDP only (transport tcp)"));
    }
    if cfg.server.processing_delay_ms != 0.0 {
        return Err(invalid("server.processing_delay_ms", "a server processing delay is not modelled over TCP"));
    }
    for (name, chain) in [("link.uplink", &cfg.link.uplink), ("link.downlink", &cfg.link.downlink)] {
        link::validate_chain(chain, mtu).map_err(|e| invalid(name, e))?;
    }
    if !(cfg.max_sim_time_s.is_finite() && cfg.max_sim_time_s > 0.0 && cfg.max_sim_time_s <= 1e9) {
        return Err(invalid("max_sim_time_s", "must be positive and at most 1e9 s"));
    }
    Ok(out)
}

/// One client's flow.
struct Flow {
    group: u32,
    cfg: TcpCcConfig,
    client: Connection,
    server: Connection,
    capp: ClientApp,
    sapp: ServerApp,
    /// Requests of the current connection.
    requests: u32,
    /// Requests of the connections still to open (random workload), in order.
    batches: Vec<u32>,
    generation: u32,
    client_seeds: SplitMix64,
    server_seeds: SplitMix64,
    failed: bool,
    responses: u64,
    /// Counters of closed connections (random workload), summed.
    closed: Totals,
    setup_s: Option<f64>,
}

impl Flow {
    /// The connection of `side`.
    fn conn(&mut self, side: Side) -> &mut Connection {
        match side {
            Side::Client => &mut self.client,
            Side::Server => &mut self.server,
        }
    }
}

#[derive(Clone, Copy, Default)]
struct Totals {
    segments_sent: u64,
    data_segments_sent: u64,
    retransmitted_segments: u64,
    rto_expiries: u64,
    fast_retransmits: u64,
    bytes_delivered: u64,
    /// The first data RTO of the flow's server connections, simulated seconds.
    first_rto_at_s: Option<f64>,
    rto_episodes: u64,
    rto_episode_s: f64,
    rto_resend_s: f64,
    new_after_first_dupack: u64,
    recovery_retransmits: u64,
    recovery_rounds: u64,
}

impl Totals {
    fn add(&mut self, client: &Connection, server: &Connection) {
        let (c, s) = (client.counters(), server.counters());
        self.segments_sent += s.segments_sent;
        self.data_segments_sent += s.data_segments_sent;
        self.retransmitted_segments += s.retransmitted_segments;
        self.rto_expiries += s.rto_expiries;
        self.fast_retransmits += s.fast_retransmits;
        self.bytes_delivered += c.bytes_delivered;
        self.first_rto_at_s = self.first_rto_at_s.or(s.first_rto_at_s);
        self.rto_episodes += s.rto_episodes;
        self.rto_episode_s += s.rto_episode_s;
        self.rto_resend_s += s.rto_resend_s;
        self.new_after_first_dupack += s.new_after_first_dupack;
        self.recovery_retransmits += s.recovery_retransmits;
        self.recovery_rounds += s.recovery_rounds;
    }
}

impl Flow {
    fn open(&mut self, tracing: bool) {
        self.client = Connection::client(&self.cfg, self.client_seeds.next_u64());
        self.server = Connection::server(&self.cfg, self.server_seeds.next_u64());
        if tracing {
            self.server.enable_trace();
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Client,
    Server,
}

/// The TCP transport: every flow's connection pair and applications.
pub(crate) struct Tcp {
    flows: Vec<Flow>,
    sizes: MessageSizes,
}

/// Run `cfg` (resolved, `transport = tcp`; checked by [`Tcp::try_new`]).
pub(crate) fn run<'t>(
    cfg: SimConfig,
    trace: Option<&'t mut dyn TraceSink>,
    progress: Option<&'t mut dyn FnMut(&crate::Progress)>,
) -> Result<SimReport, ConfigError> {
    super::run::<Tcp, Flows>(cfg, &[], trace, progress)
}

impl Protocol<Flows> for Tcp {
    type Buf = Segment;

    /// Check the configuration ([`tcp_configs`]); every flow's connection pair (opened when
    /// the flow starts).
    fn try_new(cfg: &SimConfig, _algs: &[GroupAlg], _placement: &Placement) -> Result<Self, ConfigError> {
        let tcp = tcp_configs(cfg)?;
        let sizes = match cfg.workload.kind {
            WorkloadKind::Bulk(bytes) => MessageSizes::thesis(bytes),
            _ => MessageSizes::thesis(u64::from(cfg.coap.response_payload_bytes)),
        };
        let mut flows = Vec::with_capacity(cfg.total_clients() as usize);
        for (g, (gc, t)) in cfg.groups.iter().zip(&tcp).enumerate() {
            for _ in 0..gc.clients {
                let c = flows.len() as u64;
                flows.push(Flow {
                    group: g as u32,
                    cfg: *t,
                    client: Connection::client(t, 0),
                    server: Connection::server(t, 0),
                    capp: ClientApp::new(sizes, 1),
                    sapp: ServerApp::new(sizes),
                    requests: 1,
                    batches: Vec::new(),
                    generation: 0,
                    client_seeds: SplitMix64::stream(cfg.seed, STREAM_TCP_CLIENT + c),
                    server_seeds: SplitMix64::stream(cfg.seed, STREAM_TCP_SERVER + c),
                    failed: false,
                    responses: 0,
                    closed: Totals::default(),
                    setup_s: None,
                });
            }
        }
        Ok(Tcp { flows, sizes })
    }

    fn timer_slots(&self, clients: usize) -> usize {
        2 * clients
    }

    /// The flow's connections: every exchange on one connection, or one connection per
    /// random batch (the workload draws the same batches as over UDP). The first pair opens
    /// and the client connects.
    fn flow_start(sim: &mut Sim<'_, Self, Flows>, c: usize) {
        let plan = sim.plan_mut(c);
        let mut batches: Vec<u32> = Vec::new();
        let mut next = plan.start();
        while let Next::Exchange { reset, .. } = next {
            match batches.last_mut() {
                Some(b) if !reset => *b += 1,
                _ => batches.push(1),
            }
            next = plan.after(true);
        }
        batches.reverse();
        let (tracing, now) = (sim.tracing(), sim.instant());
        let f = &mut sim.m.flows[c];
        f.requests = batches.pop().unwrap_or(1);
        f.batches = batches;
        f.capp = ClientApp::new(sim.m.sizes, f.requests);
        f.open(tracing);
        f.client.connect(now);
        service(sim, c, Side::Client);
    }

    /// Slot 2c is flow c's client connection, 2c + 1 its server connection.
    fn timer(sim: &mut Sim<'_, Self, Flows>, slot: usize) {
        let now = sim.instant();
        let (c, side) = (slot / 2, if slot % 2 == 0 { Side::Client } else { Side::Server });
        let f = &mut sim.m.flows[c];
        match side {
            Side::Client => f.client.on_timeout(now),
            Side::Server => f.server.on_timeout(now),
        }
        service(sim, c, side);
    }

    fn at_server(sim: &mut Sim<'_, Self, Flows>, p: Packet<Segment>) {
        let now = sim.instant();
        let f = &mut sim.m.flows[p.client as usize];
        if p.exchange == f.generation {
            f.server.on_segment(now, &p.buf);
            service(sim, p.client as usize, Side::Server);
        }
    }

    fn at_client(sim: &mut Sim<'_, Self, Flows>, p: Packet<Segment>) {
        let now = sim.instant();
        let f = &mut sim.m.flows[p.client as usize];
        if p.exchange == f.generation {
            f.client.on_segment(now, &p.buf);
            service(sim, p.client as usize, Side::Client);
        }
    }

    /// Per flow: the connections' counters (closed ones summed), responses, setup time.
    fn flow_reports(sim: &mut Sim<'_, Self, Flows>, cfg: &SimConfig, _def: UnnecessaryDef) -> FlowPart {
        let mut groups: Vec<GroupReport> = cfg
            .groups
            .iter()
            .enumerate()
            .map(|(i, g)| GroupReport::empty(i as u32, &g.cc, g.clients, Vec::new()))
            .collect();
        let mut fcts: Vec<Vec<f64>> = vec![Vec::new(); groups.len()];
        let mut delivered = 0u64;
        let mut flows = Vec::with_capacity(sim.m.flows.len());
        for (i, f) in sim.m.flows.iter().enumerate() {
            let mut tot = f.closed;
            tot.add(&f.client, &f.server);
            delivered += tot.bytes_delivered;
            let times = sim.flow_times(i);
            let fct = match (times, f.failed) {
                ((Some(s), Some(d)), false) => Some(secs(d - s)),
                _ => None,
            };
            let failed = u64::from(f.failed);
            let gr = &mut groups[f.group as usize];
            gr.completed_exchanges += f.responses;
            gr.failed_exchanges += failed;
            gr.transmissions += tot.data_segments_sent;
            gr.retransmissions += tot.retransmitted_segments;
            if let Some(x) = fct {
                gr.finished_flows += 1;
                fcts[f.group as usize].push(x);
            }
            flows.push(FlowReport {
                client: i as u32,
                group: f.group,
                cc: f.cfg.name(),
                fct_s: fct,
                transmissions: tot.data_segments_sent,
                retransmissions: tot.retransmitted_segments,
                unnecessary_retransmissions: 0,
                failed_exchanges: failed,
                completed_exchanges: f.responses,
                setup_s: Some(f.setup_s),
                segments_sent: Some(tot.segments_sent),
                retransmitted_segments: Some(tot.retransmitted_segments),
                rto_expiries: Some(tot.rto_expiries),
                fast_retransmits: Some(tot.fast_retransmits),
                bytes_delivered: Some(tot.bytes_delivered),
                first_rto_s: Some(match (tot.first_rto_at_s, times.0) {
                    (Some(r), Some(s)) => Some(r - secs(s)),
                    _ => None,
                }),
                rto_episode_s: Some((tot.rto_episodes > 0).then(|| tot.rto_episode_s / tot.rto_episodes as f64)),
                rto_resend_s: Some((tot.rto_episodes > 0).then(|| tot.rto_resend_s / tot.rto_episodes as f64)),
                new_after_first_dupack: Some(tot.new_after_first_dupack),
                recovery_retransmits: Some(tot.recovery_retransmits),
                recovery_rounds: Some(tot.recovery_rounds),
            });
        }
        for (gr, f) in groups.iter_mut().zip(&fcts) {
            gr.fct_s = Summary::of(f);
        }
        FlowPart { flows, groups, hist: Vec::new(), useful_bytes: delivered }
    }
}

/// After an input to flow `c`'s `side`: its application writes, its segments go out, its
/// timer slot is re-keyed.
fn service(sim: &mut Sim<'_, Tcp, Flows>, c: usize, side: Side) {
    let now = sim.instant();
    let t = sim.now();
    let done = sim.flow_done(c);
    let f = &mut sim.m.flows[c];
    let mut finished = false;
    let mut sent_request = false;
    match side {
        Side::Client => {
            let last = f.requests.saturating_sub(1);
            let mut last_response = false;
            f.capp.poll(&mut f.client, |e| match e {
                AppEvent::RequestSent { .. } => sent_request = true,
                AppEvent::ResponseReceived { index } => {
                    f.responses += 1;
                    last_response |= index == last;
                }
                AppEvent::Established => {}
            });
            if f.setup_s.is_none() {
                f.setup_s = f.client.counters().setup_s;
            }
            if f.client.state() == State::Failed && !done {
                f.failed = true;
                finished = true;
            } else if last_response {
                if f.batches.is_empty() {
                    finished = true;
                } else {
                    // Random workload: the next batch on a new connection pair.
                    drain_trace(sim, c);
                    let (sizes, tracing) = (sim.m.sizes, sim.tracing());
                    let f = &mut sim.m.flows[c];
                    f.closed.add(&f.client, &f.server);
                    f.generation += 1;
                    f.requests = f.batches.pop().expect("non-empty");
                    f.capp = ClientApp::new(sizes, f.requests);
                    f.sapp = ServerApp::new(sizes);
                    f.open(tracing);
                    f.client.connect(now);
                    sim.disarm_timer(2 * c + 1);
                }
            }
        }
        Side::Server => f.sapp.poll(&mut f.server),
    }
    if sent_request {
        sim.note_first_sent(c);
    }
    if finished {
        sim.flow_finished(c);
    }
    let generation = sim.m.flows[c].generation;
    // Over the client's access link (the testbed's, or its group's own), queue trace included.
    let dir = match side {
        Side::Client => Direction::Uplink,
        Side::Server => Direction::Downlink,
    };
    while let Some(seg) = sim.m.flows[c].conn(side).poll_transmit(now) {
        sim.send_plain(c, dir, generation, seg.wire_len(), seg);
    }
    let slot = 2 * c + usize::from(side == Side::Server);
    match sim.m.flows[c].conn(side).poll_timeout() {
        Some(at) => sim.arm_timer(slot, at.as_nanos().max(t)),
        None => sim.disarm_timer(slot),
    }
    if side == Side::Server {
        drain_trace(sim, c);
    }
}

/// Flow `c`'s server connection's trace records, to the sink.
fn drain_trace(sim: &mut Sim<'_, Tcp, Flows>, c: usize) {
    if !sim.tracing() {
        return;
    }
    let lines: Vec<_> = sim.m.flows[c].server.take_trace().into_iter().map(|r| r.line(c as u32)).collect();
    if let Some(sink) = sim.trace_sink() {
        for l in &lines {
            sink.tcp(l);
        }
    }
}
