//! The discrete-event engine: virtual clock, event queue, endpoints.
//!
//! # Event queue
//!
//! Time is integer nanoseconds. Every event carries `(time, seq)`, `seq` being a global
//! insertion counter, and events run in `(time, seq)` order, so ties break by insertion and
//! a run is a pure function of (configuration, seed).
//!
//! The queue is split by kind, each part cheap for its own access pattern, and the engine
//! merges their heads by `(time, seq)`, which is exactly the order one binary heap of all
//! events would give:
//! - packets in flight: each direction is a [`Link`], which computes a packet's whole path
//!   when it is pushed and holds it in a FIFO until delivery (one event per packet);
//! - responses delayed by the server's constant processing delay: a FIFO;
//! - retransmission timers: an indexed heap with one slot per client, re-keyed in place when a
//!   timer is re-armed and emptied when it is cancelled (no stale entries);
//! - everything else (flow starts, paced or delayed exchange starts): a binary heap.
//!
//! # Random streams
//!
//! All streams are `SplitMix64::stream(seed, id)`: uplink element i → id 0x100 + i, downlink
//! element i → 0x200 + i (loss and rest-of-path delay, per direction), client c's dither →
//! 2^32 + c, client c's workload (batch sizes, start jitter) → 2·2^32 + c.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

use coapcc_cc::{AckInfo, Algorithm, CongestionControl, Exchange, GiveUpReason, Instant, SplitMix64, TimeoutAction};

use crate::config::{ConfigError, DuplicateMode, SimConfig, UnnecessaryDef};
use crate::link::{ms_to_ns, Link, Nanos};
use crate::report::{secs, FlowReport, GroupReport, LinkReport, LinksReport, SimReport, Summary};
use crate::timers::TimerHeap;
use crate::trace::{ExchangeOutcome, ExchangeTrace, TraceSink, TxTrace};
use crate::workload::{uniform_u64, FlowPlan, Next};

/// Stream id base of uplink elements.
pub const STREAM_UPLINK: u64 = 0x100;
/// Stream id base of downlink elements.
pub const STREAM_DOWNLINK: u64 = 0x200;
/// Stream id base of client dither streams.
pub const STREAM_DITHER: u64 = 1 << 32;
/// Stream id base of client workload streams.
pub const STREAM_WORKLOAD: u64 = 2 << 32;

const NONE: u16 = u16::MAX;

/// A message on the wire (both directions).
#[derive(Clone, Copy, Debug)]
struct Packet {
    seq: u64,
    client: u32,
    /// Exchange index within the client's flow: the Message ID (mod 2^16).
    exchange: u32,
    /// Request: its copy ordinal. Response: the copy whose arrival triggered it.
    copy: u16,
    /// Response: the ordinal echoed in it (AMBIG-21).
    echo: u16,
}

#[derive(Clone, Copy, Debug)]
enum EvKind {
    /// A flow starts.
    FlowStart(u32),
    /// A client may start its next exchange (pacing, or a workload delay).
    Begin(u32),
}

#[derive(Clone, Copy, Debug)]
struct Ev {
    time: Nanos,
    seq: u64,
    kind: EvKind,
}

impl PartialEq for Ev {
    fn eq(&self, o: &Self) -> bool {
        (self.time, self.seq) == (o.time, o.seq)
    }
}
impl Eq for Ev {}
impl PartialOrd for Ev {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Ev {
    fn cmp(&self, o: &Self) -> Ordering {
        (o.time, o.seq).cmp(&(self.time, self.seq))
    }
}

/// Per-exchange record kept until the end of the run (unnecessary-retransmission metric).
#[derive(Clone, Copy, Debug)]
struct ExRec {
    /// Copies sent.
    tx: u16,
    /// Smallest copy that reached the server.
    min_req: u16,
    /// Smallest copy whose response reached the client.
    min_resp: u16,
}

struct Client {
    group: u32,
    cc: Algorithm,
    dither: SplitMix64,
    plan: FlowPlan,
    active: bool,
    ex: Exchange,
    cur: u32,
    copy_id: bool,
    /// Transmissions of the active exchange (send time, armed timer): kept only when tracing
    /// or for copy identification.
    log: Vec<(Nanos, Nanos)>,
    keep_log: bool,
    first_sent: Option<Nanos>,
    done_at: Option<Nanos>,
    transmissions: u64,
    completed: u64,
    failed: u64,
    recs: Vec<ExRec>,
}

struct Group {
    name: &'static str,
    hist: Vec<u64>,
}

/// One simulation run.
pub(crate) struct Sim<'t> {
    now: Nanos,
    seq: u64,
    bound: Nanos,
    heap: BinaryHeap<Ev>,
    timers: TimerHeap,
    server_q: VecDeque<(Nanos, Packet)>,
    up: Link<Packet>,
    down: Link<Packet>,
    clients: Vec<Client>,
    groups: Vec<Group>,
    /// Server's duplicate-detection cache per client: (last Message ID, first copy received).
    server_cache: Vec<(u32, u16)>,
    duplicate_mode: DuplicateMode,
    server_delay: Nanos,
    req_size: u32,
    resp_size: u32,
    hist: Vec<u64>,
    useful_bytes: u64,
    first_packet: Option<Nanos>,
    done: usize,
    window_end: Option<Nanos>,
    busy_window: (u64, u64),
    last_event: Nanos,
    events: u64,
    trace: Option<&'t mut dyn TraceSink>,
    tx_buf: Vec<TxTrace>,
}

impl<'t> Sim<'t> {
    pub(crate) fn new(cfg: &SimConfig, trace: Option<&'t mut dyn TraceSink>) -> Result<Self, ConfigError> {
        let algs = cfg.algorithms()?;
        let seed = cfg.seed;
        let mtu = cfg.link.mtu_bytes;
        let link_err = |field: &str, e: String| ConfigError::Invalid { field: field.into(), problem: e };
        let up = Link::new(&cfg.link.uplink, mtu, seed, STREAM_UPLINK).map_err(|e| link_err("link.uplink", e))?;
        let down =
            Link::new(&cfg.link.downlink, mtu, seed, STREAM_DOWNLINK).map_err(|e| link_err("link.downlink", e))?;
        let tracing = trace.is_some();
        let n = cfg.total_clients() as usize;
        let max_rtx = algs.iter().map(|a| a.build().max_retransmit()).max().unwrap_or(0);
        let mut clients = Vec::with_capacity(n);
        let mut groups = Vec::with_capacity(algs.len());
        let mut heap = BinaryHeap::with_capacity(n + 16);
        let mut seq = 0u64;
        let jitter = ms_to_ns(cfg.workload.start_jitter_ms);
        let reserve = (cfg.workload.exchanges as usize).min(1024);
        for (g, (gc, alg)) in cfg.groups.iter().zip(&algs).enumerate() {
            let proto = alg.build();
            groups.push(Group { name: proto.name(), hist: vec![0; proto.max_retransmit() as usize + 1] });
            for _ in 0..gc.clients {
                let c = clients.len() as u64;
                let cc = proto.clone();
                let copy_id = cc.uses_copy_id();
                let keep_log = copy_id || tracing;
                let mut wl = SplitMix64::stream(seed, STREAM_WORKLOAD + c);
                let start = if jitter > 0 { uniform_u64(&mut wl, 0, jitter) } else { 0 };
                seq += 1;
                heap.push(Ev { time: start, seq, kind: EvKind::FlowStart(c as u32) });
                clients.push(Client {
                    group: g as u32,
                    dither: SplitMix64::stream(seed, STREAM_DITHER + c),
                    plan: FlowPlan::new(&cfg.workload, wl),
                    active: false,
                    ex: placeholder_exchange(&cc),
                    cc,
                    cur: 0,
                    copy_id,
                    log: if keep_log { Vec::with_capacity(max_rtx as usize + 1) } else { Vec::new() },
                    keep_log,
                    first_sent: None,
                    done_at: None,
                    transmissions: 0,
                    completed: 0,
                    failed: 0,
                    recs: Vec::with_capacity(reserve),
                });
            }
        }
        let bound = (cfg.max_sim_time_s * 1e9).round() as Nanos;
        Ok(Sim {
            now: 0,
            seq,
            bound,
            heap,
            timers: TimerHeap::new(n),
            server_q: VecDeque::new(),
            up,
            down,
            server_cache: vec![(u32::MAX, 0); n],
            clients,
            groups,
            duplicate_mode: cfg.server.duplicate_mode,
            server_delay: ms_to_ns(cfg.server.processing_delay_ms),
            req_size: cfg.coap.request_bytes(),
            resp_size: cfg.coap.response_bytes(),
            hist: vec![0; max_rtx as usize + 1],
            useful_bytes: 0,
            first_packet: None,
            done: 0,
            window_end: None,
            busy_window: (0, 0),
            last_event: 0,
            events: 0,
            trace,
            tx_buf: Vec::new(),
        })
    }

    #[inline]
    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Run to completion (every flow finished and every packet delivered or dropped) or to
    /// the time bound. Returns whether the bound was hit.
    pub(crate) fn run(&mut self) -> bool {
        #[derive(Clone, Copy)]
        enum Src {
            Heap,
            Timer,
            Server,
            Up,
            Down,
        }
        loop {
            let mut best: Option<(Nanos, u64, Src)> = self.timers.peek().map(|e| (e.time, e.seq, Src::Timer));
            if let Some(e) = self.heap.peek() {
                if best.map_or(true, |b| (e.time, e.seq) < (b.0, b.1)) {
                    best = Some((e.time, e.seq, Src::Heap));
                }
            }
            if let Some((t, p)) = self.server_q.front() {
                if best.map_or(true, |b| (*t, p.seq) < (b.0, b.1)) {
                    best = Some((*t, p.seq, Src::Server));
                }
            }
            if let Some((t, p)) = self.up.peek() {
                if best.map_or(true, |b| (t, p.seq) < (b.0, b.1)) {
                    best = Some((t, p.seq, Src::Up));
                }
            }
            if let Some((t, p)) = self.down.peek() {
                if best.map_or(true, |b| (t, p.seq) < (b.0, b.1)) {
                    best = Some((t, p.seq, Src::Down));
                }
            }
            let Some((t, _, src)) = best else { return false };
            if t > self.bound {
                self.now = self.bound;
                return true;
            }
            self.now = t;
            self.last_event = t;
            self.events += 1;
            match src {
                Src::Heap => {
                    let e = self.heap.pop().expect("peeked");
                    match e.kind {
                        EvKind::FlowStart(c) => self.flow_start(c as usize),
                        EvKind::Begin(c) => self.begin_exchange(c as usize),
                    }
                }
                Src::Timer => {
                    let c = self.timers.peek().expect("peeked").client;
                    self.on_timer(c as usize);
                }
                Src::Server => {
                    let (_, p) = self.server_q.pop_front().expect("peeked");
                    self.send_response(p);
                }
                Src::Up => {
                    let p = self.up.poll(t).expect("peeked");
                    self.on_request(p);
                }
                Src::Down => {
                    let p = self.down.poll(t).expect("peeked");
                    self.on_response(p);
                }
            }
        }
    }

    fn flow_start(&mut self, c: usize) {
        let next = self.clients[c].plan.start();
        self.follow(c, next);
    }

    /// Act on the workload's answer.
    fn follow(&mut self, c: usize, next: Next) {
        match next {
            Next::Done => {
                self.timers.remove(c as u32);
                self.clients[c].done_at = Some(self.now);
                self.done += 1;
                if self.done == self.clients.len() {
                    self.close_window(self.now);
                }
            }
            Next::Exchange { delay_ns, reset } => {
                if reset {
                    let now = Instant::from_nanos(self.now);
                    self.clients[c].cc.reset(now);
                }
                if delay_ns > 0 {
                    self.timers.remove(c as u32);
                    let seq = self.next_seq();
                    self.heap.push(Ev { time: self.now + delay_ns, seq, kind: EvKind::Begin(c as u32) });
                } else {
                    self.begin_exchange(c);
                }
            }
        }
    }

    /// The utilisation window ends (last flow finished, or the time bound).
    fn close_window(&mut self, end: Nanos) {
        if self.window_end.is_none() {
            self.window_end = Some(end);
            self.busy_window = (self.down.path().busy_ns_until(end), self.up.path().busy_ns_until(end));
        }
    }

    /// Start the next exchange now, unless the algorithm's pacing hook says later.
    fn begin_exchange(&mut self, c: usize) {
        let now = self.now;
        let cl = &mut self.clients[c];
        let earliest = cl.cc.earliest_start(Instant::from_nanos(now)).as_nanos();
        if earliest > now {
            self.timers.remove(c as u32);
            let seq = self.next_seq();
            self.heap.push(Ev { time: earliest, seq, kind: EvKind::Begin(c as u32) });
            return;
        }
        cl.cur = cl.recs.len() as u32;
        cl.recs.push(ExRec { tx: 0, min_req: NONE, min_resp: NONE });
        cl.ex = cl.cc.start_exchange(Instant::from_nanos(now), 0, &mut cl.dither);
        cl.active = true;
        cl.log.clear();
        cl.first_sent.get_or_insert(now);
        let timer = cl.ex.timer();
        self.send_copy(c, timer);
    }

    /// Send the next copy of client `c`'s active exchange and arm `timer` with it.
    fn send_copy(&mut self, c: usize, timer: Duration) {
        let now = self.now;
        let timer_ns = coapcc_cc::time::duration_nanos(timer);
        let seq = self.next_seq();
        let tseq = self.next_seq();
        let cl = &mut self.clients[c];
        let rec = cl.recs.last_mut().expect("active exchange has a record");
        let copy = rec.tx;
        rec.tx = rec.tx.saturating_add(1);
        cl.transmissions += 1;
        if cl.keep_log {
            cl.log.push((now, timer_ns));
        }
        let pkt = Packet { seq, client: c as u32, exchange: cl.cur, copy, echo: copy };
        self.first_packet.get_or_insert(now);
        self.up.push(now, self.req_size, pkt);
        self.timers.set(c as u32, now.saturating_add(timer_ns), tseq);
    }

    fn on_timer(&mut self, c: usize) {
        let now = Instant::from_nanos(self.now);
        let cl = &mut self.clients[c];
        if !cl.active {
            // Cannot happen (every path that deactivates a client re-arms or disarms it);
            // kept so a stray entry can never fire.
            self.timers.remove(c as u32);
            return;
        }
        match cl.cc.on_timeout(now, &mut cl.ex) {
            TimeoutAction::Retransmit(t) => self.send_copy(c, t),
            TimeoutAction::GiveUp => {
                cl.cc.on_give_up(now, &cl.ex, GiveUpReason::Timeout);
                cl.active = false;
                cl.failed += 1;
                self.emit_trace(c, ExchangeOutcome::GiveUp, None);
                let next = self.clients[c].plan.after(false);
                self.follow(c, next);
            }
        }
    }

    /// A request copy reaches the server: deduplicate by Message ID, answer.
    fn on_request(&mut self, p: Packet) {
        let c = p.client as usize;
        let rec = &mut self.clients[c].recs[p.exchange as usize];
        rec.min_req = rec.min_req.min(p.copy);
        let cache = &mut self.server_cache[c];
        let echo = if cache.0 == p.exchange {
            match self.duplicate_mode {
                DuplicateMode::AnswerEachCopy => p.copy,
                DuplicateMode::ReplayCached => cache.1,
            }
        } else {
            *cache = (p.exchange, p.copy);
            p.copy
        };
        let resp = Packet { echo, ..p };
        if self.server_delay == 0 {
            self.send_response(resp);
        } else {
            // A constant delay keeps the server's output in arrival order: a FIFO suffices.
            let seq = self.next_seq();
            self.server_q.push_back((self.now + self.server_delay, Packet { seq, ..resp }));
        }
    }

    fn send_response(&mut self, mut p: Packet) {
        p.seq = self.next_seq(); // the downlink event's own insertion order
        self.down.push(self.now, self.resp_size, p);
    }

    /// A response reaches its client.
    fn on_response(&mut self, p: Packet) {
        let c = p.client as usize;
        let cl = &mut self.clients[c];
        let rec = &mut cl.recs[p.exchange as usize];
        rec.min_resp = rec.min_resp.min(p.copy);
        if !(cl.active && cl.cur == p.exchange) {
            return; // a late duplicate, or the response to an exchange that gave up
        }
        let now = Instant::from_nanos(self.now);
        let ack = if cl.copy_id {
            let sent = cl.log.get(p.echo as usize).map_or(cl.ex.started(), |l| Instant::from_nanos(l.0));
            AckInfo::with_copy(&cl.ex, now, p.echo as u32, sent)
        } else {
            AckInfo::new(&cl.ex, now)
        };
        cl.cc.on_ack(now, &cl.ex, &ack);
        cl.active = false;
        cl.completed += 1;
        let n = cl.ex.retransmissions() as usize;
        let g = cl.group as usize;
        if let Some(h) = self.hist.get_mut(n) {
            *h += 1;
        }
        if let Some(h) = self.groups[g].hist.get_mut(n) {
            *h += 1;
        }
        self.useful_bytes += self.resp_size as u64;
        if self.trace.is_some() {
            self.emit_trace(c, ExchangeOutcome::Ack, Some(p));
        }
        let next = self.clients[c].plan.after(true);
        self.follow(c, next);
    }

    fn emit_trace(&mut self, c: usize, outcome: ExchangeOutcome, resp: Option<Packet>) {
        let Some(sink) = self.trace.as_deref_mut() else { return };
        let cl = &self.clients[c];
        self.tx_buf.clear();
        self.tx_buf.extend(cl.log.iter().map(|&(s, t)| TxTrace { sent_s: secs(s), timer_s: secs(t) }));
        let rec = ExchangeTrace {
            time_s: secs(self.now),
            client: c as u32,
            group: cl.group,
            exchange: cl.cur,
            outcome,
            transmissions: &self.tx_buf,
            rtt_s: resp.map(|_| secs(self.now - cl.ex.started().as_nanos())),
            answered_copy: resp.map(|p| p.copy as u32),
            echoed_copy: resp.map(|p| p.echo as u32),
            cc: cl.cc.snapshot().into(),
        };
        sink.exchange(&rec);
    }

    /// Assemble the report (everything but `wall_s`).
    pub(crate) fn report(mut self, cfg: SimConfig, truncated: bool, def: UnnecessaryDef) -> SimReport {
        let end = if truncated { self.bound } else { self.last_event };
        self.close_window(end);
        let start = self.first_packet.unwrap_or(0);
        let window = self.window_end.unwrap_or(end).saturating_sub(start);
        let mut flows = Vec::with_capacity(self.clients.len());
        let mut groups: Vec<GroupReport> = cfg
            .groups
            .iter()
            .enumerate()
            .map(|(i, g)| GroupReport {
                group: i as u32,
                cc: g.cc.clone(),
                clients: g.clients,
                finished_flows: 0,
                fct_s: None,
                completed_exchanges: 0,
                failed_exchanges: 0,
                transmissions: 0,
                retransmissions: 0,
                unnecessary_retransmissions: 0,
                retransmissions_per_exchange: self.groups[i].hist.clone(),
            })
            .collect();
        let mut fcts: Vec<Vec<f64>> = vec![Vec::new(); groups.len()];
        for (i, cl) in self.clients.iter().enumerate() {
            let unnecessary: u64 = cl
                .recs
                .iter()
                .map(|r| {
                    let m = match def {
                        UnnecessaryDef::ResponseDelivered => r.min_resp,
                        UnnecessaryDef::RequestDelivered => r.min_req,
                    };
                    if m == NONE {
                        0
                    } else {
                        (r.tx as u64).saturating_sub(1 + m as u64)
                    }
                })
                .sum();
            let fct = match (cl.first_sent, cl.done_at) {
                (Some(s), Some(d)) => Some(secs(d - s)),
                _ => None,
            };
            let g = cl.group as usize;
            let rtx = cl.transmissions - cl.recs.len() as u64;
            let gr = &mut groups[g];
            gr.completed_exchanges += cl.completed;
            gr.failed_exchanges += cl.failed;
            gr.transmissions += cl.transmissions;
            gr.retransmissions += rtx;
            gr.unnecessary_retransmissions += unnecessary;
            if let Some(f) = fct {
                gr.finished_flows += 1;
                fcts[g].push(f);
            }
            flows.push(FlowReport {
                client: i as u32,
                group: cl.group,
                cc: self.groups[g].name,
                fct_s: fct,
                transmissions: cl.transmissions,
                retransmissions: rtx,
                unnecessary_retransmissions: unnecessary,
                failed_exchanges: cl.failed,
                completed_exchanges: cl.completed,
            });
        }
        for (gr, f) in groups.iter_mut().zip(&fcts) {
            gr.fct_s = Summary::of(f);
        }
        let link = |l: &Link<Packet>, busy: u64| {
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
            retransmissions_per_exchange: std::mem::take(&mut self.hist),
            links: LinksReport { downlink, uplink },
            useful_fraction: if serialised > 0 { self.useful_bytes as f64 / serialised as f64 } else { 0.0 },
            sim_time_s: secs(end),
            wall_s: 0.0,
            events: self.events,
            truncated,
            groups,
        }
    }
}

/// An `Exchange` value to fill the slot of a client with no active exchange.
fn placeholder_exchange(cc: &Algorithm) -> Exchange {
    struct Zero;
    impl coapcc_cc::Entropy for Zero {
        fn next_u64(&mut self) -> u64 {
            0
        }
    }
    cc.clone().start_exchange(Instant::ZERO, 0, &mut Zero)
}
