//! The TCP transport: CoAP over TCP (RFC 8323) on the simulator's links, one
//! [`coapcc_tcp::Connection`] pair per flow (per batch for the random workload).
//!
//! The links are the same [`Link`]s the UDP models use (same chains, random streams and
//! counters); a packet is a [`Segment`], charged `seg.wire_len()` bytes (40-byte TCP/IP
//! header + payload) against the rate and the buffer. Data goes down the 30 kbit/s downlink,
//! the client's SYN, CSM, request and ACKs up the 60 kbit/s uplink.
//!
//! Per event: the connection is given the segment (`on_segment`) or its timer
//! (`on_timeout`), then its application ([`ClientApp`] / [`ServerApp`]) writes what is due,
//! then every segment `poll_transmit` yields is pushed into the link, and the connection's
//! timer slot is re-keyed to `poll_timeout()`. Events run in `(time, seq)` order as in the
//! UDP engine, so a run is a pure function of (configuration, seed).
//!
//! Random streams (in addition to the links'): client connections of flow c draw their
//! seeds from stream 4·2^32 + c, server connections from 5·2^32 + c, one draw per
//! connection; the workload (start jitter, random batch sizes) from 2·2^32 + c as over UDP.

use std::collections::BinaryHeap;

use coapcc_cc::{Entropy, Instant, SplitMix64};
use coapcc_tcp::app::{AppEvent, ClientApp, MessageSizes, ServerApp};
use coapcc_tcp::{Connection, Segment, State, TcpCcConfig, TcpConfig};

use crate::config::{invalid, ConfigError, EndpointModel, SimConfig, WorkloadKind, MAX_CLIENTS};
use crate::link::{self, ms_to_ns, Link, Nanos};
use crate::report::{secs, FlowReport, GroupReport, LinkReport, LinksReport, SimReport, Summary};
use crate::timers::TimerHeap;
use crate::trace::TraceSink;
use crate::workload::{uniform_u64, FlowPlan, Next};

use super::{Ev, EvKind, STREAM_DOWNLINK, STREAM_UPLINK, STREAM_WORKLOAD};

/// Stream id base of the client connections' seeds (TCP transport).
pub const STREAM_TCP_CLIENT: u64 = 4 << 32;
/// Stream id base of the server connections' seeds (TCP transport).
pub const STREAM_TCP_SERVER: u64 = 5 << 32;

/// Most events at one instant before a run is cut short as truncated (every client starting
/// at once is 1 event per client and its segments; far below this).
const SAME_INSTANT_LIMIT: u64 = 50_000_000;

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
    if !cfg.topology.access_links.is_empty() {
        return Err(invalid("topology.access_links", "extra access links are not supported over TCP yet"));
    }
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

/// A segment on the wire: its flow and connection generation (random batches open a new
/// connection pair; segments of an older one are delivered to nobody).
struct Pkt {
    seq: u64,
    flow: u32,
    generation: u32,
    seg: Segment,
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
    first_request: Option<Nanos>,
    done_at: Option<Nanos>,
    failed: bool,
    responses: u64,
    /// Counters of closed connections (random workload), summed.
    closed: Totals,
    setup_s: Option<f64>,
}

#[derive(Clone, Copy, Default)]
struct Totals {
    segments_sent: u64,
    data_segments_sent: u64,
    retransmitted_segments: u64,
    rto_expiries: u64,
    fast_retransmits: u64,
    bytes_delivered: u64,
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

struct TcpSim<'t> {
    now: Nanos,
    seq: u64,
    bound: Nanos,
    starts: BinaryHeap<Ev>,
    timers: TimerHeap,
    up: Link<Pkt>,
    down: Link<Pkt>,
    flows: Vec<Flow>,
    sizes: MessageSizes,
    done: usize,
    first_packet: Option<Nanos>,
    window_end: Option<Nanos>,
    busy_window: (u64, u64),
    last_event: Nanos,
    events: u64,
    trace: Option<&'t mut dyn TraceSink>,
}

/// Run `cfg` (validated, resolved, `transport = tcp`).
pub(crate) fn run(cfg: SimConfig, trace: Option<&mut dyn TraceSink>) -> Result<SimReport, ConfigError> {
    let tcp = tcp_configs(&cfg)?;
    let seed = cfg.seed;
    let mtu = cfg.link.mtu_bytes;
    let link_err = |field: &str, e: String| ConfigError::Invalid { field: field.into(), problem: e };
    let up = Link::new(&cfg.link.uplink, mtu, seed, STREAM_UPLINK).map_err(|e| link_err("link.uplink", e))?;
    let down = Link::new(&cfg.link.downlink, mtu, seed, STREAM_DOWNLINK).map_err(|e| link_err("link.downlink", e))?;
    let sizes = match cfg.workload.kind {
        WorkloadKind::Bulk(bytes) => MessageSizes::thesis(bytes),
        _ => MessageSizes::thesis(u64::from(cfg.coap.response_payload_bytes)),
    };
    let tracing = trace.is_some();
    let jitter = ms_to_ns(cfg.workload.start_jitter_ms);
    let n = cfg.total_clients() as usize;
    let mut flows = Vec::with_capacity(n);
    let mut starts = BinaryHeap::with_capacity(n);
    let mut seq = 0u64;
    for (g, (gc, t)) in cfg.groups.iter().zip(&tcp).enumerate() {
        for _ in 0..gc.clients {
            let c = flows.len() as u64;
            let mut wl = SplitMix64::stream(seed, STREAM_WORKLOAD + c);
            let start = if jitter > 0 { uniform_u64(&mut wl, 0, jitter) } else { 0 };
            // The connections' requests: every exchange on one connection, or one
            // connection per random batch (the plan draws the same batches as over UDP).
            let mut plan = FlowPlan::new(&cfg.workload, wl);
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
            let requests = batches.pop().unwrap_or(1);
            seq += 1;
            starts.push(Ev { time: start, seq, kind: EvKind::FlowStart(c as u32) });
            let mut f = Flow {
                group: g as u32,
                cfg: *t,
                client: Connection::client(t, 0),
                server: Connection::server(t, 0),
                capp: ClientApp::new(sizes, requests),
                sapp: ServerApp::new(sizes),
                requests,
                batches,
                generation: 0,
                client_seeds: SplitMix64::stream(seed, STREAM_TCP_CLIENT + c),
                server_seeds: SplitMix64::stream(seed, STREAM_TCP_SERVER + c),
                first_request: None,
                done_at: None,
                failed: false,
                responses: 0,
                closed: Totals::default(),
                setup_s: None,
            };
            f.open(tracing);
            flows.push(f);
        }
    }
    let mut sim = TcpSim {
        now: 0,
        seq,
        bound: (cfg.max_sim_time_s * 1e9).round() as Nanos,
        starts,
        timers: TimerHeap::new(2 * n),
        up,
        down,
        flows,
        sizes,
        done: 0,
        first_packet: None,
        window_end: None,
        busy_window: (0, 0),
        last_event: 0,
        events: 0,
        trace,
    };
    let truncated = sim.run();
    Ok(sim.report(cfg, truncated))
}

impl TcpSim<'_> {
    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn run(&mut self) -> bool {
        #[derive(Clone, Copy)]
        enum Src {
            Start,
            Timer,
            Up,
            Down,
        }
        let mut same_instant = 0u64;
        loop {
            let mut best: Option<(Nanos, u64, Src)> = self.timers.peek().map(|e| (e.time, e.seq, Src::Timer));
            for (cand, src) in [
                (self.starts.peek().map(|e| (e.time, e.seq)), Src::Start),
                (self.up.peek().map(|(t, p)| (t, p.seq)), Src::Up),
                (self.down.peek().map(|(t, p)| (t, p.seq)), Src::Down),
            ] {
                if let Some((t, s)) = cand {
                    if best.map_or(true, |b| (t, s) < (b.0, b.1)) {
                        best = Some((t, s, src));
                    }
                }
            }
            let Some((t, _, src)) = best else { return false };
            // Time must advance: a connection whose timer stayed due without progress would
            // otherwise spin at one instant (the model never does this; the guard keeps
            // the no-hang promise if it ever did).
            same_instant = if t == self.now { same_instant + 1 } else { 0 };
            if t > self.bound || same_instant > SAME_INSTANT_LIMIT {
                self.now = self.bound;
                return true;
            }
            self.now = t;
            self.last_event = t;
            self.events += 1;
            let now = Instant::from_nanos(t);
            match src {
                Src::Start => {
                    let Some(Ev { kind: EvKind::FlowStart(c), .. }) = self.starts.pop() else { continue };
                    self.flows[c as usize].client.connect(now);
                    self.service(c as usize, Side::Client);
                }
                Src::Timer => {
                    let slot = self.timers.peek().expect("peeked").client as usize;
                    let (c, side) = (slot / 2, if slot % 2 == 0 { Side::Client } else { Side::Server });
                    let f = &mut self.flows[c];
                    match side {
                        Side::Client => f.client.on_timeout(now),
                        Side::Server => f.server.on_timeout(now),
                    }
                    self.service(c, side);
                }
                Src::Up => {
                    let p = self.up.poll(t).expect("peeked");
                    let f = &mut self.flows[p.flow as usize];
                    if p.generation == f.generation {
                        f.server.on_segment(now, &p.seg);
                        self.service(p.flow as usize, Side::Server);
                    }
                }
                Src::Down => {
                    let p = self.down.poll(t).expect("peeked");
                    let f = &mut self.flows[p.flow as usize];
                    if p.generation == f.generation {
                        f.client.on_segment(now, &p.seg);
                        self.service(p.flow as usize, Side::Client);
                    }
                }
            }
        }
    }

    /// After an input to flow `c`'s `side`: its application writes, its segments go out,
    /// its timer is re-keyed.
    fn service(&mut self, c: usize, side: Side) {
        let now = Instant::from_nanos(self.now);
        let t = self.now;
        let f = &mut self.flows[c];
        let mut finished = false;
        match side {
            Side::Client => {
                let (first, last) = (&mut f.first_request, f.requests.saturating_sub(1));
                let mut last_response = false;
                f.capp.poll(&mut f.client, |e| match e {
                    AppEvent::RequestSent { .. } => {
                        first.get_or_insert(t);
                    }
                    AppEvent::ResponseReceived { index } => {
                        f.responses += 1;
                        last_response |= index == last;
                    }
                    AppEvent::Established => {}
                });
                if f.setup_s.is_none() {
                    f.setup_s = f.client.counters().setup_s;
                }
                if f.client.state() == State::Failed && f.done_at.is_none() {
                    f.failed = true;
                    finished = true;
                } else if last_response {
                    if f.batches.is_empty() {
                        finished = true;
                    } else {
                        // Random workload: the next batch on a new connection pair.
                        self.drain_trace(c);
                        let f = &mut self.flows[c];
                        f.closed.add(&f.client, &f.server);
                        f.generation += 1;
                        f.requests = f.batches.pop().expect("non-empty");
                        f.capp = ClientApp::new(self.sizes, f.requests);
                        f.sapp = ServerApp::new(self.sizes);
                        f.open(self.trace.is_some());
                        f.client.connect(now);
                        self.timers.remove(2 * c as u32 + 1);
                    }
                }
            }
            Side::Server => f.sapp.poll(&mut f.server),
        }
        if finished {
            let f = &mut self.flows[c];
            f.done_at = Some(t);
            self.done += 1;
            if self.done == self.flows.len() {
                self.close_window(t);
            }
        }
        let f = &mut self.flows[c];
        let conn = match side {
            Side::Client => &mut f.client,
            Side::Server => &mut f.server,
        };
        let (flow, generation) = (c as u32, f.generation);
        while let Some(seg) = conn.poll_transmit(now) {
            self.seq += 1;
            let p = Pkt { seq: self.seq, flow, generation, seg };
            self.first_packet.get_or_insert(t);
            let link = if side == Side::Client { &mut self.up } else { &mut self.down };
            link.push(t, seg.wire_len(), p);
        }
        let slot = 2 * c as u32 + u32::from(side == Side::Server);
        match conn.poll_timeout() {
            Some(at) => {
                let seq = self.next_seq();
                self.timers.set(slot, at.as_nanos().max(t), seq);
            }
            None => self.timers.remove(slot),
        }
        if side == Side::Server {
            self.drain_trace(c);
        }
    }

    fn drain_trace(&mut self, c: usize) {
        let Some(sink) = self.trace.as_deref_mut() else { return };
        for r in self.flows[c].server.take_trace() {
            sink.tcp(&r.line(c as u32));
        }
    }

    fn close_window(&mut self, end: Nanos) {
        if self.window_end.is_none() {
            self.window_end = Some(end);
            self.busy_window = (self.down.path().busy_ns_until(end), self.up.path().busy_ns_until(end));
        }
    }

    fn report(mut self, cfg: SimConfig, truncated: bool) -> SimReport {
        let end = if truncated { self.bound } else { self.last_event };
        self.close_window(end);
        let start = self.first_packet.unwrap_or(0);
        let window = self.window_end.unwrap_or(end).saturating_sub(start);
        let mut groups: Vec<GroupReport> = cfg
            .groups
            .iter()
            .enumerate()
            .map(|(i, g)| GroupReport::empty(i as u32, &g.cc, g.clients, Vec::new()))
            .collect();
        let mut fcts: Vec<Vec<f64>> = vec![Vec::new(); groups.len()];
        let mut delivered = 0u64;
        let mut flows = Vec::with_capacity(self.flows.len());
        for (i, f) in self.flows.iter().enumerate() {
            let mut tot = f.closed;
            tot.add(&f.client, &f.server);
            delivered += tot.bytes_delivered;
            let fct = match (f.first_request, f.done_at, f.failed) {
                (Some(s), Some(d), false) => Some(secs(d - s)),
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
            });
        }
        for (gr, f) in groups.iter_mut().zip(&fcts) {
            gr.fct_s = Summary::of(f);
        }
        let link = |l: &Link<Pkt>, busy: u64| {
            let path = l.path();
            let rs = path.rate_stage().map(|r| r.stats()).unwrap_or_default();
            LinkReport::new(path.counters(), rs.admitted_bytes, busy, window, rs.max_queue_bytes)
        };
        let downlink = link(&self.down, self.busy_window.0);
        let uplink = link(&self.up, self.busy_window.1);
        let serialised = downlink.serialised_bytes;
        SimReport {
            config: cfg,
            flows,
            retransmissions_per_exchange: Vec::new(),
            links: LinksReport { downlink, uplink },
            access_links: Vec::new(),
            useful_fraction: if serialised > 0 { delivered as f64 / serialised as f64 } else { 0.0 },
            sim_time_s: secs(end),
            wall_s: 0.0,
            events: self.events,
            truncated,
            groups,
            mesh: None,
        }
    }
}
