//! One simulation run ([`Sim`]): the clock, the event sources and their merge
//! ([`step`]), the per-client records ([`clients`]), the CoAP exchange paths ([`exchanges`]),
//! the topology's packet paths ([`topology`]), the metrics ([`metrics`]) and the report
//! ([`assemble`]). Its fields are private to this module: a protocol ([`super::Protocol`])
//! works through the methods below.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use coapcc_cc::{CongestionControl, Instant, SplitMix64};

use super::protocol::{CoapEndpoints, Protocol};
use super::workload::{ExchangeObserver, Workload};
use super::{Placement, STREAM_DOWNLINK, STREAM_UPLINK, STREAM_WORKLOAD};
use crate::algorithms::GroupAlg;
use crate::cache_hints;
use crate::config::{ConfigError, SimConfig, UnnecessaryDef};
use crate::link::{ms_to_ns, Link, Nanos};
use crate::timer_queue::{self, TimerQueue};
use crate::trace::{Direction, QueueTracer, TraceSink, TxTrace};
use crate::workload::uniform_u64;

mod assemble;
mod clients;
mod exchanges;
mod metrics;
mod step;
mod topology;

pub(crate) use assemble::FlowPart;
use clients::{Client, ClientCold};
pub(crate) use metrics::ExRec;
use metrics::Group;
pub(crate) use topology::host_nodes;

/// "No copy": a packet that is not a request copy / not a response to one, or a metric
/// slot not filled yet.
pub(crate) const NONE: u16 = u16::MAX;

/// A message on the wire (both directions). `buf` is the protocol's payload: nothing for the
/// compact model, the encoded datagram for the full one, a segment for TCP.
#[derive(Clone, Debug)]
pub(crate) struct Packet<B> {
    /// The insertion counter of the event that delivers it (set by the engine when sent).
    pub(crate) seq: u64,
    pub(crate) client: u32,
    /// Exchange index within the client's flow (compact: the Message ID mod 2^16; TCP: the
    /// connection generation).
    pub(crate) exchange: u32,
    /// Request: its copy ordinal. Response: the copy whose arrival triggered it. `NONE` for
    /// other messages (Empty ACKs, RSTs, separate responses sent on a timer, segments).
    pub(crate) copy: u16,
    /// Response: the ordinal echoed in it (AMBIG-21).
    pub(crate) echo: u16,
    pub(crate) buf: B,
}

impl<B> Packet<B> {
    /// (client, exchange, copy): what the engine's in-flight count of exchange records reads.
    #[inline(always)]
    fn key(&self) -> (u32, u32, u16) {
        (self.client, self.exchange, self.copy)
    }
}

/// What a response that completed an exchange carried: (answered copy, echoed copy, IP size).
pub(crate) type Answer = (u16, u16, u32);

/// A deferred call of the protocol's or the workload's own (an exchange start the pacing
/// delays, an arrival of the message workload): made by the engine's CoAP paths, which only
/// a CoAP endpoints takes, and run by the loop when its time comes.
pub(crate) type Call<M, W> = for<'s, 't> fn(&'s mut Sim<'t, M, W>, u32);

/// The server's answer held back by its processing delay: what the protocol does when the
/// delay ends (its [`CoapEndpoints::server_send`]).
type ServerCall<M, W> = for<'s, 't> fn(&'s mut Sim<'t, M, W>, Packet<<M as Protocol<W>>::Buf>, u64);

/// A delayed server answer: (time, packet, the protocol's request id, what the protocol does then).
type Delayed<M, W> = (Nanos, Packet<<M as Protocol<W>>::Buf>, u64, ServerCall<M, W>);

enum EvKind<M: Protocol<W>, W: Workload> {
    /// A flow starts.
    FlowStart(u32),
    /// A deferred call, with its argument.
    Call(Call<M, W>, u32),
}

impl<M: Protocol<W>, W: Workload> Clone for EvKind<M, W> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<M: Protocol<W>, W: Workload> Copy for EvKind<M, W> {}

struct Ev<M: Protocol<W>, W: Workload> {
    time: Nanos,
    seq: u64,
    kind: EvKind<M, W>,
}

impl<M: Protocol<W>, W: Workload> PartialEq for Ev<M, W> {
    fn eq(&self, o: &Self) -> bool {
        (self.time, self.seq) == (o.time, o.seq)
    }
}
impl<M: Protocol<W>, W: Workload> Eq for Ev<M, W> {}
impl<M: Protocol<W>, W: Workload> PartialOrd for Ev<M, W> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<M: Protocol<W>, W: Workload> Ord for Ev<M, W> {
    fn cmp(&self, o: &Self) -> Ordering {
        (o.time, o.seq).cmp(&(self.time, self.seq))
    }
}

/// An extra access link: (uplink, downlink).
type AccessPair<B> = (Link<Packet<B>>, Link<Packet<B>>);

/// One simulation run of protocol `M` and workload `W`.
pub(crate) struct Sim<'t, M: Protocol<W>, W: Workload> {
    now: Nanos,
    seq: u64,
    bound: Nanos,
    /// The clients' clock tick (`coap.clock_tick_ns`; 0: exact time).
    tick: Nanos,
    heap: BinaryHeap<Ev<M, W>>,
    timers: TimerQueue,
    /// Delayed server answers, in the order they are due.
    server_q: VecDeque<Delayed<M, W>>,
    up: Link<Packet<M::Buf>>,
    down: Link<Packet<M::Buf>>,
    /// The key ([`step::ev_key`]) of the packet `up` and `down` deliver next,
    /// [`step::NO_HEAD`] if none: kept as the links change (a push of an earlier packet, a
    /// delivery), so that the loop compares two keys instead of looking into both queues on
    /// every event.
    up_head: u128,
    down_head: u128,
    /// Extra access links of the topology: (uplink, downlink) each.
    extra: Vec<AccessPair<M::Buf>>,
    /// Whether the loop has event sources besides the timers, the event heap, the server's
    /// queue and `up`/`down` (extra access links, a mesh): a dumbbell's loop skips them.
    other_sources: bool,
    /// Per client: 0 = `up`/`down`, k = `extra[k - 1]` (empty for the dumbbell).
    client_link: Vec<u16>,
    clients: Vec<Client>,
    cold: Vec<ClientCold<W::Plan>>,
    /// Per client, the transmissions of its active exchange (send time, armed timer), kept
    /// only when tracing or when the protocol needs them (compact copy identification): empty
    /// (no vector at all) if no client keeps one.
    logs: Vec<Vec<(Nanos, Nanos)>>,
    groups: Vec<Group>,
    server_delay: Nanos,
    hist: Vec<u64>,
    useful_bytes: u64,
    first_packet: Option<Nanos>,
    done: usize,
    window_end: Option<Nanos>,
    busy_window: (u64, u64),
    /// Busy time of each extra access link in the window: (downlink, uplink).
    extra_busy: Vec<(u64, u64)>,
    last_event: Nanos,
    events: u64,
    /// The event budget ([`SimConfig::event_budget`]); the run stops after it.
    max_events: u64,
    /// The run stopped because its sequence numbers neared what a timer can hold
    /// ([`timer_queue::SEQ_LIMIT`]).
    seq_exhausted: bool,
    /// Called every [`step::PROGRESS_EVENTS`] events, if set.
    progress: Option<&'t mut dyn FnMut(&crate::Progress)>,
    trace: Option<&'t mut dyn TraceSink>,
    /// The queue trace, when the sink wants one ([`TraceSink::wants_queue`]).
    qtrace: Option<Box<QueueTracer>>,
    tx_buf: Vec<TxTrace>,
    /// The mesh network (`topology.mesh`), in place of the links.
    mesh: Option<topology::MeshHost<M::Buf>>,
    /// Whether the engine can follow the packets the links hold ([`Protocol::LOOKAHEAD`],
    /// dumbbell): to load client state ahead (`prefetch`) and to count each exchange
    /// record's packets in flight (`counting`).
    lookahead: bool,
    /// Whether the engine also loads the state of the clients whose events come next
    /// (`lookahead` and at least [`step::PREFETCH_CLIENTS`] clients: smaller populations
    /// stay in the caches, where following the queues would only cost instructions).
    prefetch: bool,
    /// Whether each exchange record counts its packets in flight ([`metrics::ExRec::held`]),
    /// so that the records no packet can change any more are folded away (`lookahead`
    /// only). On from the start from [`step::PREFETCH_CLIENTS`] clients; for a smaller
    /// population, off until the records kept exceed [`step::FOLD_AFTER`]: a run that keeps
    /// few records never pays the bookkeeping, a long or large one folds and its memory
    /// stays flat.
    counting: bool,
    /// Earlier exchanges' records kept while `counting` is off.
    kept_records: u64,
    /// When counting starts: [`step::FOLD_AFTER`] (tests lower it).
    fold_after: u64,
    /// Whether a [settled](metrics::ExRec::settled) record folds when the next exchange
    /// starts, counted or not: in the compact model (only packets reach its earlier records),
    /// not in the full one (it reads them). Tests turn it off to keep every record.
    fold_settled: bool,
    /// The run's definition of an unnecessary retransmission (for folding records).
    unnecessary_def: UnnecessaryDef,
    /// The workload.
    w: W,
    /// What the workload's study measures of the exchanges.
    obs: W::Observer,
    /// The protocol's own state.
    pub(crate) m: M,
}

/// Every valid configuration's timer slots fit the timer queue (at most two per client, over
/// TCP, plus the full model's server slot): the check in [`Sim::new`] guards only
/// configurations that skipped validation.
const _: () = assert!(2 * crate::config::MAX_CLIENTS < timer_queue::MAX_SLOTS as u64);

impl<'t, M: Protocol<W>, W: Workload> Sim<'t, M, W> {
    /// The run of `cfg` (resolved and validated) with protocol `M`: links (or the mesh),
    /// clients, workload, and every flow's start when the workload starts flows.
    pub(in crate::engine) fn new(
        cfg: &SimConfig,
        algs: &[GroupAlg],
        trace: Option<&'t mut dyn TraceSink>,
    ) -> Result<Self, ConfigError> {
        let mut mesh = topology::MeshHost::new(cfg)?;
        let placement = mesh.as_ref().map_or(Placement { nodes: None, hosts: 0 }, |m| m.placement());
        let m = M::try_new(cfg, algs, &placement)?;
        let (w, obs) = W::new(cfg)?;
        let seed = cfg.seed;
        let mtu = cfg.link.mtu_bytes;
        let link_err = |field: &str, e: String| ConfigError::Invalid { field: field.into(), problem: e };
        let up = Link::new(&cfg.link.uplink, mtu, seed, STREAM_UPLINK).map_err(|e| link_err("link.uplink", e))?;
        let down =
            Link::new(&cfg.link.downlink, mtu, seed, STREAM_DOWNLINK).map_err(|e| link_err("link.downlink", e))?;
        let mut extra = Vec::with_capacity(cfg.topology.access_links.len());
        let mut group_link = vec![0u16; cfg.groups.len()];
        for (i, a) in cfg.topology.access_links.iter().enumerate() {
            let k = i as u64 + 1;
            let field = |d: &str| format!("topology.access_links[{i}].{d}");
            let u = Link::new(&a.uplink, mtu, seed, STREAM_UPLINK + (k << 16))
                .map_err(|e| link_err(&field("uplink"), e))?;
            let d = Link::new(&a.downlink, mtu, seed, STREAM_DOWNLINK + (k << 16))
                .map_err(|e| link_err(&field("downlink"), e))?;
            extra.push((u, d));
            for &g in &a.groups {
                group_link[g as usize] = k as u16;
            }
        }
        let client_link: Vec<u16> = if extra.is_empty() {
            Vec::new()
        } else {
            cfg.groups
                .iter()
                .zip(&group_link)
                .flat_map(|(g, &k)| std::iter::repeat(k).take(g.clients as usize))
                .collect()
        };
        let tracing = trace.is_some();
        let n = cfg.total_clients() as usize;
        let protos: Vec<_> = algs.iter().map(GroupAlg::instance).collect();
        let max_rtx = protos.iter().map(|a| a.max_retransmit()).max().unwrap_or(0);
        let mut clients = Vec::with_capacity(n);
        let mut cold = Vec::with_capacity(n);
        cache_hints::advise_huge_pages(&clients);
        cache_hints::advise_huge_pages(&cold);
        let mut groups = Vec::with_capacity(algs.len());
        let mut heap = BinaryHeap::with_capacity(n + 16);
        let mut seq = 0u64;
        let jitter = ms_to_ns(cfg.workload.start_jitter_ms);
        for (g, gc) in cfg.groups.iter().enumerate() {
            // A protocol without CoAP algorithms (TCP) has no histogram.
            let (name, rtx) = protos.get(g).map_or(("", 0), |p| (p.name(), p.max_retransmit()));
            groups.push(Group { name, hist: vec![0; rtx as usize + 1] });
            for _ in 0..gc.clients {
                let c = clients.len() as u64;
                let mut wl = SplitMix64::stream(seed, STREAM_WORKLOAD + c);
                let start = if jitter > 0 { uniform_u64(&mut wl, 0, jitter) } else { 0 };
                seq += 1;
                if W::FLOW_STARTS {
                    heap.push(Ev { time: start, seq, kind: EvKind::FlowStart(c as u32) });
                }
                clients.push(Client::new(tracing));
                cold.push(ClientCold::new(w.plan(c as usize, wl), g as u32));
            }
        }
        // Every client's log when tracing; else the protocol asks for some (`coap_setup`).
        let logs =
            if tracing { (0..n).map(|_| Vec::with_capacity(max_rtx as usize + 1)).collect() } else { Vec::new() };
        let bound = (cfg.max_sim_time_s * 1e9).round() as Nanos;
        let qtrace = trace.as_deref().filter(|t| t.wants_queue()).map(|_| {
            let links = std::iter::once((&up, &down)).chain(extra.iter().map(|(u, d)| (u, d)));
            Box::new(QueueTracer::new(links.enumerate().flat_map(|(k, (u, d))| {
                [(k as u32, Direction::Uplink, u.path()), (k as u32, Direction::Downlink, d.path())]
            })))
        });
        let lookahead = M::LOOKAHEAD && cfg.topology.access_links.is_empty() && cfg.topology.mesh.is_none();
        let slots = m.timer_slots(n);
        if slots > timer_queue::MAX_SLOTS {
            return Err(ConfigError::Invalid {
                field: "groups".into(),
                problem: format!(
                    "the run needs {slots} timer slots ({n} clients), more than the {} the simulator's timer queue can hold",
                    timer_queue::MAX_SLOTS
                ),
            });
        }
        let mut timers = TimerQueue::new(slots);
        let loads_ahead = lookahead && n >= step::PREFETCH_CLIENTS;
        timers.set_look_ahead(loads_ahead);
        if let (Some(m), Some(t)) = (mesh.as_mut(), trace.as_deref()) {
            if t.wants_mac() {
                m.enable_mac_log();
            }
        }
        Ok(Sim {
            now: 0,
            seq,
            bound,
            tick: cfg.coap.clock_tick_ns,
            heap,
            timers,
            server_q: VecDeque::new(),
            up,
            down,
            up_head: step::NO_HEAD,
            down_head: step::NO_HEAD,
            extra_busy: vec![(0, 0); extra.len()],
            other_sources: !extra.is_empty() || mesh.is_some(),
            extra,
            client_link,
            clients,
            cold,
            logs,
            groups,
            server_delay: ms_to_ns(cfg.server.processing_delay_ms),
            hist: vec![0; max_rtx as usize + 1],
            useful_bytes: 0,
            first_packet: None,
            done: 0,
            window_end: None,
            busy_window: (0, 0),
            last_event: 0,
            events: 0,
            max_events: cfg.event_budget(),
            seq_exhausted: false,
            progress: None,
            trace,
            qtrace,
            tx_buf: Vec::new(),
            lookahead,
            prefetch: loads_ahead,
            counting: loads_ahead,
            kept_records: 0,
            fold_after: step::FOLD_AFTER,
            fold_settled: M::LOOKAHEAD && !<W::Observer as ExchangeObserver>::RECORDS,
            unnecessary_def: cfg.metrics.unnecessary_def,
            mesh,
            w,
            obs,
            m,
        })
    }

    /// Set the progress callback.
    pub(in crate::engine) fn set_progress(&mut self, progress: Option<&'t mut dyn FnMut(&crate::Progress)>) {
        self.progress = progress;
    }

    /// The run stopped because its sequence numbers ran out: the error to report.
    pub(in crate::engine) fn seq_exhausted(&self) -> Option<ConfigError> {
        self.seq_exhausted.then(|| ConfigError::Invalid {
            field: "max_events".into(),
            problem: format!(
                "the run used {} sequence numbers by simulated time {:.3} s, the most the timer queue can tell apart (2^40); a run this long is not supported: split it into shorter runs",
                self.seq,
                self.now as f64 / 1e9
            ),
        })
    }

    /// The run needed more events than its budget: the error to report.
    pub(in crate::engine) fn over_budget(&self) -> Option<ConfigError> {
        (self.events > self.max_events).then(|| ConfigError::Invalid {
            field: "max_events".into(),
            problem: format!(
                "the run needed more than its budget of {} events (reached at simulated time {:.3} s); a timer far shorter than the link's delays or an endless retransmission storm is the usual cause; raise the budget with max_events (--max-events N) if the run is meant to be this long",
                self.max_events,
                self.now as f64 / 1e9
            ),
        })
    }

    // -- what a protocol reads --------------------------------------------------------

    /// The simulated time, ns.
    #[inline(always)]
    pub(crate) fn now(&self) -> Nanos {
        self.now
    }

    /// The simulated time as the protocol code's clock (the last clock tick with
    /// `coap.clock_tick_ns`).
    #[inline(always)]
    pub(crate) fn instant(&self) -> Instant {
        if self.tick == 0 {
            return Instant::from_nanos(self.now);
        }
        Instant::from_nanos(self.now - self.now % self.tick)
    }

    /// When a timer armed for `deadline` fires: then, or at the next clock tick.
    #[inline(always)]
    pub(crate) fn timer_time(&self, deadline: Nanos) -> Nanos {
        if self.tick == 0 {
            return deadline;
        }
        deadline.div_ceil(self.tick) * self.tick
    }

    /// Whether the engine loads the state of the clients whose events come next (a large
    /// population on the dumbbell): a protocol keeps its hints for it up to date only then.
    #[inline(always)]
    pub(crate) fn loads_ahead(&self) -> bool {
        self.prefetch
    }

    /// Whether the run is traced.
    #[inline(always)]
    pub(crate) fn tracing(&self) -> bool {
        self.trace.is_some()
    }

    /// The trace sink, when the run is traced.
    pub(crate) fn trace_sink(&mut self) -> Option<&mut dyn TraceSink> {
        match self.trace.as_deref_mut() {
            Some(s) => Some(s),
            None => None,
        }
    }

    /// Whether the server holds its answers back (a processing delay).
    #[inline(always)]
    pub(crate) fn server_delays(&self) -> bool {
        self.server_delay != 0
    }

    /// Whether client `c` has an exchange in progress.
    #[inline(always)]
    pub(crate) fn exchange_active(&self, c: usize) -> bool {
        self.clients[c].active
    }

    /// Client `c`'s current (or last) exchange.
    #[inline(always)]
    pub(crate) fn current_exchange(&self, c: usize) -> u32 {
        self.clients[c].cur
    }

    /// When client `c` sent copy `copy` of its active exchange (kept when its log is, see
    /// [`CoapEndpoints::needs_log`]).
    #[inline(always)]
    pub(crate) fn copy_sent_at(&self, c: usize, copy: u16) -> Option<Nanos> {
        self.logs.get(c).and_then(|l| l.get(copy as usize)).map(|l| l.0)
    }

    /// The workload.
    pub(crate) fn workload(&self) -> &W {
        &self.w
    }

    /// The workload, to change (its own state: arrivals, messages).
    pub(crate) fn workload_mut(&mut self) -> &mut W {
        &mut self.w
    }

    /// The workload's observer.
    pub(crate) fn observer(&self) -> &W::Observer {
        &self.obs
    }

    /// Client `c`'s current (or last) exchange record.
    pub(crate) fn current_record(&self, c: usize) -> ExRec {
        let cl = &self.clients[c];
        cl.recs[cl.cur as usize]
    }

    /// Client `c`'s exchanges started and request copies sent.
    pub(crate) fn exchange_counts(&self, c: usize) -> (u64, u64) {
        let cl = &self.clients[c];
        (cl.recs.len() as u64, cl.transmissions)
    }

    /// Client `c`'s plan (its workload position).
    pub(crate) fn plan_mut(&mut self, c: usize) -> &mut W::Plan {
        &mut self.cold[c].plan
    }

    /// When client `c` sent its first packet and finished its flow.
    pub(crate) fn flow_times(&self, c: usize) -> (Option<Nanos>, Option<Nanos>) {
        (self.cold[c].first_sent, self.cold[c].done_at)
    }

    // -- what a protocol changes ------------------------------------------------------

    /// Arm timer slot `slot` for `time` (the next insertion number orders it among events
    /// of the same time).
    #[inline(always)]
    pub(crate) fn arm_timer(&mut self, slot: usize, time: Nanos) {
        let seq = self.next_seq();
        self.timers.set(slot as u32, time, seq);
    }

    /// Disarm timer slot `slot` (nothing if it is not armed).
    #[inline(always)]
    pub(crate) fn disarm_timer(&mut self, slot: usize) {
        self.timers.remove(slot as u32);
    }

    /// Timer slot `slot` at `time` (`None`: disarmed), re-armed only if that changes it.
    #[inline(always)]
    pub(crate) fn set_timer(&mut self, slot: usize, time: Option<Nanos>) {
        match time {
            None => self.timers.remove(slot as u32),
            Some(t) if self.timers.time_of(slot as u32) != Some(t) => self.arm_timer(slot, t),
            Some(_) => {}
        }
    }

    /// The time timer slot `slot` is armed for.
    #[inline(always)]
    pub(crate) fn timer_deadline(&self, slot: usize) -> Option<Nanos> {
        self.timers.time_of(slot as u32)
    }

    /// Client `c` sent its first packet now (if it had not).
    pub(crate) fn note_first_sent(&mut self, c: usize) {
        self.cold[c].first_sent.get_or_insert(self.now);
    }

    /// Client `c`'s flow finished now (its last response arrived, or it failed for good).
    pub(crate) fn flow_finished(&mut self, c: usize) {
        self.cold[c].done_at = Some(self.now);
        self.done += 1;
        if self.done == self.clients.len() {
            self.close_window(self.now);
        }
    }

    /// Whether client `c`'s flow has finished.
    pub(crate) fn flow_done(&self, c: usize) -> bool {
        self.cold[c].done_at.is_some()
    }

    /// Send `buf` (`size` IP bytes) between client `c` and the server in direction `dir`,
    /// as a message of no exchange record (`exchange`: the protocol's tag).
    pub(crate) fn send_plain(&mut self, c: usize, dir: Direction, exchange: u32, size: u32, buf: M::Buf) {
        let seq = self.next_seq();
        let p = Packet { seq, client: c as u32, exchange, copy: NONE, echo: NONE, buf };
        self.first_packet.get_or_insert(self.now);
        match dir {
            Direction::Uplink => self.send_up(c, size, p),
            Direction::Downlink => self.send_down(size, p),
        };
    }

    #[inline]
    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// The utilisation window ends (last flow finished, or the time bound).
    fn close_window(&mut self, end: Nanos) {
        if self.window_end.is_none() {
            self.window_end = Some(end);
            self.busy_window = (self.down.path().busy_ns_until(end), self.up.path().busy_ns_until(end));
            for (b, (u, d)) in self.extra_busy.iter_mut().zip(&self.extra) {
                *b = (d.path().busy_ns_until(end), u.path().busy_ns_until(end));
            }
        }
    }
}

impl<M: CoapEndpoints<W>, W: Workload> Sim<'_, M, W> {
    /// The CoAP endpoints's part of the setup: the transmission logs it needs, and the
    /// workload's own events.
    pub(in crate::engine) fn coap_setup(&mut self) {
        if self.logs.is_empty() {
            let need: Vec<bool> = (0..self.clients.len()).map(|c| self.m.needs_log(c)).collect();
            if let Some(last) = need.iter().rposition(|&b| b) {
                let max_rtx = self.hist.len();
                self.logs =
                    (0..=last).map(|c| if need[c] { Vec::with_capacity(max_rtx) } else { Vec::new() }).collect();
                for (cl, &b) in self.clients.iter_mut().zip(&need) {
                    cl.keep_log = b;
                }
            }
        }
        W::setup(self);
    }
}
