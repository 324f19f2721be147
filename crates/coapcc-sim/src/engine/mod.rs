//! The discrete-event engine: virtual clock, event queue, links and workloads. The transports
//! the nodes host are [`Model`]s: CoAP over UDP with the simulator's own endpoints
//! (`compact`) or the real ones (`full`), and CoAP over TCP (`tcp`). The metrics recorded
//! during a run are in `metrics`, the report and trace records assembled in `assemble`.
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
//! - retransmission timers: one timer slot per client (plus one for the server in the full
//!   model; two per flow over TCP) in a timing wheel of 268 ms slots ([`crate::timers`]):
//!   arming is an append, re-arming and cancelling rewrite the slot's state and leave the old
//!   entry to be dropped when it comes up, and only the current slot's timers are sorted
//!   (once, by a counting sort by millisecond), so the cost does not grow with the number of
//!   pending timers;
//! - everything else (flow starts, delayed exchange starts): a binary heap.
//!
//! Per client, the engine keeps a 64-byte hot record (the current exchange's record, counters
//! and flags read on every packet and timer event) apart from a cold one (workload position,
//! per-run counters; 128 bytes, two aligned cache lines, of which an exchange's end and the
//! next one's start touch only the first) touched once per exchange or at report time, and
//! the transmission log, kept only when tracing or when the model needs it, in a third
//! array. The compact model's client ([`Compact`]) is line-aligned too, with the algorithm's
//! state and the exchange's in its first two lines (Default CoAP: 64 bytes each), which is
//! all a timer that does not give up touches. A large population's per-client arrays ask
//! for transparent huge pages (`timers::advise_huge_pages`). So, at 100 000 clients, loading
//! ahead a firing timer's state costs four lines (timer word, hot record, algorithm,
//! exchange), and a response's or a timer's that carries the exchange's last copy (it will
//! give up) six (plus the model's third line and the cold record's first), on few TLB
//! entries. The client of the packet a link delivers a few packets from now is read from
//! the link's own FIFO ([`Link::held_nth`]), whose entries are loaded further ahead still
//! (with a long queue they were written long before).
//!
//! # Transports
//!
//! The engine ([`Sim`]) owns the clock, the queue, the links, the workloads, the time bound,
//! the event budget, the progress callback, the utilisation window and the report's common
//! part; a [`Model`] (a transport: the protocol logic of the clients and the server) is told
//! what happened (a flow starts, an exchange may start, a timer slot expired, a packet
//! arrived) and answers by calling the engine back (send a request copy, send a response, an
//! exchange completed or failed, or for TCP: push a segment, re-key a timer slot, a flow
//! finished). One loop drives every transport.
//! [`Compact`] is the simulator's own model (packets are
//! small structs, sizes from [`crate::coap`]); [`Full`] runs one real
//! [`coapcc_proto::endpoint::Endpoint`] per client and one for the server. Both consume
//! `seq` numbers in the same pattern (one per packet sent, one per timer armed with a request
//! copy or re-armed otherwise, one per delayed start or delayed server answer), so where they
//! do the same thing they produce the same event order, bit for bit. [`Tcp`](tcp::Tcp) hosts a
//! [`coapcc_tcp::Connection`] pair per flow: packets are segments, each end has its own
//! timer slot, and it consumes one `seq` per segment sent and one per timer re-keyed.
//!
//! # Random streams
//!
//! All streams are `SplitMix64::stream(seed, id)`: uplink element i → id 0x100 + i, downlink
//! element i → 0x200 + i (loss and rest-of-path delay, per direction), client c's dither →
//! 2^32 + c, client c's workload (batch sizes, start jitter) → 2·2^32 + c; full model only:
//! client c's endpoint (Message IDs, tokens) → 3·2^32 + c, the server endpoint → 0x300;
//! TCP only: flow c's client connections' seeds → 4·2^32 + c, its server connections' →
//! 5·2^32 + c.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use coapcc_cc::{CongestionControl, Instant, Snapshot, SplitMix64};
use coapcc_proto::endpoint::lifecycle::{self, ConExchange, Expiry};
use coapcc_proto::endpoint::{self as ep, Endpoint, Event, Request, Response, ServerRequestId, TransmitKind};
use coapcc_proto::{option, Code};

use crate::algorithms::{ClientCc, GroupAlg};
use crate::coap;
use crate::config::{ConfigError, DuplicateMode, SimConfig, UnnecessaryDef, WorkloadKind};
use crate::link::{ms_to_ns, Link, Nanos, Transit};
use crate::report::{secs, AccessLinkReport, FlowReport, GroupReport, LinkReport, LinksReport, SimReport, Summary};
use crate::timers::{self, TimerHeap};
use crate::trace::{Direction, ExchangeOutcome, ExchangeTrace, QueueTracer, TraceSink, TxTrace};
use crate::workload::{uniform_u64, FlowPlan, Next};

mod assemble;
mod compact;
mod full;
mod medium;
mod metrics;
mod study;
mod tcp;

use assemble::FlowPart;
pub(crate) use compact::Compact;
pub(crate) use full::Full;
use metrics::{ExRec, Group};
pub(crate) use study::StudyRun;
pub(crate) use tcp::{run as run_tcp, tcp_configs};
pub use tcp::{STREAM_TCP_CLIENT, STREAM_TCP_SERVER};

/// Stream id base of uplink elements.
pub const STREAM_UPLINK: u64 = 0x100;
/// Stream id base of downlink elements.
pub const STREAM_DOWNLINK: u64 = 0x200;
/// Stream id of the server endpoint (full endpoint model).
pub const STREAM_SERVER: u64 = 0x300;
/// Stream id base of client dither streams.
pub const STREAM_DITHER: u64 = 1 << 32;
/// Stream id base of client workload streams.
pub const STREAM_WORKLOAD: u64 = 2 << 32;
/// Stream id base of client endpoints' own randomness (Message IDs, tokens; full model).
pub const STREAM_ENDPOINT: u64 = 3 << 32;

/// "No copy": a packet that is not a request copy / not a response to one, or a metric
/// slot not filled yet.
const NONE: u16 = u16::MAX;

/// A message on the wire (both directions). `buf` is the model's payload: nothing for the
/// compact model, the encoded datagram for the full one.
#[derive(Clone, Debug)]
pub(crate) struct Packet<B> {
    seq: u64,
    client: u32,
    /// Exchange index within the client's flow (compact: the Message ID mod 2^16).
    exchange: u32,
    /// Request: its copy ordinal. Response: the copy whose arrival triggered it. `NONE` for
    /// other messages (Empty ACKs, RSTs, separate responses sent on a timer).
    copy: u16,
    /// Response: the ordinal echoed in it (AMBIG-21).
    echo: u16,
    buf: B,
}

impl<B> Packet<B> {
    /// (client, exchange, copy): what the engine's in-flight count of exchange records reads.
    #[inline(always)]
    fn key(&self) -> (u32, u32, u16) {
        (self.client, self.exchange, self.copy)
    }
}

#[derive(Clone, Copy, Debug)]
enum EvKind {
    /// A flow starts.
    FlowStart(u32),
    /// A client may start its next exchange (pacing, or a workload delay).
    Begin(u32),
    /// An event of the model's own ([`Model::event`]; the id is the model's).
    Model(u32),
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

/// The per-client engine state read or written on every packet and timer event of the
/// client, one cache line each (a run of 100 000 clients touches them at random).
#[repr(align(64))]
struct Client {
    /// The client's exchange records (the current one inline).
    recs: metrics::Recs,
    /// Request copies sent.
    transmissions: u64,
    /// Index of the current (or last) exchange in `recs`.
    cur: u32,
    /// An exchange is in progress.
    active: bool,
    /// Transmissions are logged (`ClientCold::log`).
    keep_log: bool,
}

const _: () = assert!(std::mem::size_of::<Client>() == 64);
const _: () = assert!(std::mem::size_of::<ClientCold>() == 128);

/// A client's workload position and its per-run measurements: touched once per exchange or
/// at report time only. Two cache lines (aligned; the transmission logs are apart, in
/// [`Sim::logs`]), of which an exchange's end and the next one's start touch only the first
/// (`repr(C)`: in this order): the workload, the group and the low halves of the counters
/// (their high halves are in the second line, touched once per 2^32 counted). The engine
/// loads that line ahead of a response; an exchange that gives up reads it unloaded.
#[repr(C, align(64))]
struct ClientCold {
    plan: FlowPlan,
    group: u32,
    /// Low halves of [`ClientCold::completed`], [`ClientCold::failed`],
    /// [`ClientCold::unnecessary`].
    completed_lo: u32,
    failed_lo: u32,
    unnecessary_lo: u32,
    /// First transmission of the current exchange (kept only when tracing: only a trace
    /// record reads it).
    started: Nanos,
    first_sent: Option<Nanos>,
    done_at: Option<Nanos>,
    completed_hi: u32,
    failed_hi: u32,
    unnecessary_hi: u32,
}

/// What an exchange's end and the next one's start touch is the first line.
const _: () = assert!(std::mem::offset_of!(ClientCold, started) == 64);

/// `hi:lo` plus `v` (a count kept as two halves, `lo` in a line touched often).
#[inline(always)]
fn add_split(lo: &mut u32, hi: &mut u32, v: u64) {
    let s = u64::from(*lo) + v;
    *lo = s as u32;
    if s >> 32 != 0 {
        *hi = hi.wrapping_add((s >> 32) as u32);
    }
}

impl ClientCold {
    /// Exchanges completed.
    fn completed(&self) -> u64 {
        u64::from(self.completed_hi) << 32 | u64::from(self.completed_lo)
    }

    /// Exchanges that gave up.
    fn failed(&self) -> u64 {
        u64::from(self.failed_hi) << 32 | u64::from(self.failed_lo)
    }

    /// Unnecessary retransmissions of the exchange records folded away.
    fn unnecessary(&self) -> u64 {
        u64::from(self.unnecessary_hi) << 32 | u64::from(self.unnecessary_lo)
    }

    /// An exchange completed.
    #[inline(always)]
    fn count_completed(&mut self) {
        add_split(&mut self.completed_lo, &mut self.completed_hi, 1);
    }

    /// An exchange gave up.
    #[inline(always)]
    fn count_failed(&mut self) {
        add_split(&mut self.failed_lo, &mut self.failed_hi, 1);
    }

    /// `n` more unnecessary retransmissions in records folded away.
    #[inline(always)]
    fn add_unnecessary(&mut self, n: u64) {
        add_split(&mut self.unnecessary_lo, &mut self.unnecessary_hi, n);
    }
}

/// What a response that completed an exchange carried: (answered copy, echoed copy, IP size).
type Answer = (u16, u16, u32);

/// A transport (endpoint model): the clients' and the server's protocol logic. Every hook is
/// told the event and calls the engine back. The CoAP hooks (`begin`, `server_send`,
/// `reset`, `snapshot`) are reached only through the engine's CoAP paths (an exchange
/// deferred, a delayed server answer, a workload batch, a trace record), which a transport
/// that does not use them (TCP) never takes.
pub(crate) trait Model: Sized {
    /// Payload of a packet (a CoAP datagram, or a TCP segment).
    type Buf;
    /// Whether every packet goes through [`Sim::send_copy`], [`Sim::send_other`] or
    /// [`Sim::send_response`], so that the engine can follow the dumbbell links' queues and
    /// load the state of the clients whose packets come next ahead of time.
    const LOOKAHEAD: bool = false;
    /// Whether the engine starts each client's flow ([`Model::flow_start`]); a model that
    /// schedules its own workload ([`Model::event`]) says `false`.
    const FLOW_STARTS: bool = true;
    /// The model for `cfg` (`algs`: each group's CoAP algorithm; empty for TCP), or why the
    /// configuration does not suit it. The engine calls it before building the links; the
    /// CoAP models cannot fail (the configuration was checked beforehand).
    fn try_new(cfg: &SimConfig, algs: &[GroupAlg]) -> Result<Self, ConfigError>;
    /// Client `c`'s flow starts. CoAP: the workload says what comes first.
    fn flow_start(sim: &mut Sim<'_, Self>, c: usize) {
        sim.flow_start(c);
    }
    /// Timer slots: one per client, plus any the model needs.
    fn timer_slots(&self, clients: usize) -> usize;
    /// Whether client `c`'s transmissions must be logged even without a trace.
    fn needs_log(&self, c: usize) -> bool;
    /// Client `c` may start its next exchange now (the model may defer it: pacing).
    fn begin(sim: &mut Sim<'_, Self>, c: usize);
    /// Timer slot `slot` expired.
    fn timer(sim: &mut Sim<'_, Self>, slot: usize);
    /// A packet reached the server.
    fn at_server(sim: &mut Sim<'_, Self>, p: Packet<Self::Buf>);
    /// The server's processing delay for request `sid` (the model's id) ended.
    fn server_send(sim: &mut Sim<'_, Self>, p: Packet<Self::Buf>, sid: u64);
    /// A packet reached its client.
    fn at_client(sim: &mut Sim<'_, Self>, p: Packet<Self::Buf>);
    /// Reset client `c`'s algorithm (random workload, batch boundary).
    fn reset(sim: &mut Sim<'_, Self>, c: usize);
    /// Client `c`'s algorithm state.
    fn snapshot(&self, c: usize) -> Snapshot;
    /// Start loading client `c`'s model state into the cache (a hint; an event of the client
    /// comes soon).
    #[inline(always)]
    fn prefetch(&self, _c: usize) {}
    /// As [`Model::prefetch`], for a timer of client `c` expiring soon: only what a timer
    /// needs (all of it by default). Returns whether the timer is expected to end the
    /// exchange (it gives up), so that the engine loads what an exchange's end touches too
    /// (a hint either way; `false` by default).
    #[inline(always)]
    fn prefetch_timer(&self, c: usize) -> bool {
        self.prefetch(c);
        false
    }
    /// Start loading the server's state for client `c` (a request of `c` arrives soon).
    #[inline(always)]
    fn prefetch_server(&self, _c: usize) {}
    /// The run is over and its report is being assembled: free what only the run needed
    /// (nothing by default; the report then calls only [`Model::flow_reports`]).
    fn release_run_state(&mut self) {}
    /// An event the model scheduled itself (`Sim::schedule_model`) is due.
    fn event(_sim: &mut Sim<'_, Self>, _id: u32) {}
    /// The report's per-flow and per-group part, at the end of the run. CoAP: from the
    /// engine's exchange records.
    fn flow_reports(sim: &mut Sim<'_, Self>, cfg: &SimConfig, def: UnnecessaryDef) -> FlowPart {
        sim.coap_flow_reports(cfg, def)
    }
}

/// An extra access link: (uplink, downlink).
type AccessPair<B> = (Link<Packet<B>>, Link<Packet<B>>);

/// One simulation run.
pub(crate) struct Sim<'t, M: Model> {
    now: Nanos,
    seq: u64,
    bound: Nanos,
    heap: BinaryHeap<Ev>,
    timers: TimerHeap,
    /// Delayed server answers: (time, packet, model's request id).
    server_q: VecDeque<(Nanos, Packet<M::Buf>, u64)>,
    up: Link<Packet<M::Buf>>,
    down: Link<Packet<M::Buf>>,
    /// The key ([`ev_key`]) of the packet `up` and `down` deliver next, [`NO_HEAD`] if
    /// none: kept as the links change (a push of an earlier packet, a delivery), so that the
    /// loop compares two keys instead of looking into both queues on every event.
    up_head: u128,
    down_head: u128,
    /// Extra access links of the topology: (uplink, downlink) each.
    extra: Vec<AccessPair<M::Buf>>,
    /// Per client: 0 = `up`/`down`, k = `extra[k - 1]` (empty for the dumbbell).
    client_link: Vec<u16>,
    clients: Vec<Client>,
    cold: Vec<ClientCold>,
    /// Per client, the transmissions of its active exchange (send time, armed timer), kept
    /// only when tracing or when the model needs them (compact copy identification): empty
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
    /// ([`timers::SEQ_LIMIT`]).
    seq_exhausted: bool,
    /// Called every [`PROGRESS_EVENTS`] events, if set.
    progress: Option<&'t mut dyn FnMut(&crate::Progress)>,
    trace: Option<&'t mut dyn TraceSink>,
    /// The queue trace, when the sink wants one ([`TraceSink::wants_queue`]).
    qtrace: Option<Box<QueueTracer>>,
    tx_buf: Vec<TxTrace>,
    /// The mesh network (`topology.mesh`), in place of the links.
    mesh: Option<medium::MeshLink<M::Buf>>,
    /// Whether the engine can follow the packets the links hold ([`Model::LOOKAHEAD`],
    /// dumbbell): to load client state ahead (`prefetch`) and to count each exchange
    /// record's packets in flight (`counting`).
    lookahead: bool,
    /// Whether the engine also loads the state of the clients whose events come next
    /// (`lookahead` and at least [`PREFETCH_CLIENTS`] clients: smaller populations stay in
    /// the caches, where following the queues would only cost instructions).
    prefetch: bool,
    /// Whether each exchange record counts its packets in flight ([`metrics::ExRec::held`]),
    /// so that the records no packet can change any more are folded away (`lookahead`
    /// only). On from the start from [`PREFETCH_CLIENTS`] clients; for a smaller population,
    /// off until the records kept exceed [`FOLD_AFTER`]: a run that keeps few records never
    /// pays the bookkeeping, a long or large one folds and its memory stays flat.
    counting: bool,
    /// Earlier exchanges' records kept while `counting` is off.
    kept_records: u64,
    /// When counting starts: [`FOLD_AFTER`] (tests lower it).
    fold_after: u64,
    /// Whether a [settled](metrics::ExRec::settled) record folds when the next exchange
    /// starts, counted or not: in the compact model (only packets reach its earlier records),
    /// not in the full one (it reads them). Tests turn it off to keep every record.
    fold_settled: bool,
    /// The run's definition of an unnecessary retransmission (for folding records).
    unnecessary_def: UnnecessaryDef,
    m: M,
}

/// No event: a key ([`ev_key`]) later than any event's.
const NO_HEAD: u128 = u128::MAX;

/// An event's `(time, seq)` as one key with the same order.
#[inline(always)]
fn ev_key(time: Nanos, seq: u64) -> u128 {
    (time as u128) << 64 | seq as u128
}

/// The key of the packet `link` delivers next, [`NO_HEAD`] if none.
#[inline(always)]
fn head_of<B>(link: &Link<Packet<B>>) -> u128 {
    link.peek().map_or(NO_HEAD, |(t, p)| ev_key(t, p.seq))
}

/// How many packets of a link ahead the engine loads a client's state (the client of the
/// packet that many places behind the one delivered, read from the link's FIFO).
const AHEAD: usize = 4;

/// How many packets of a link ahead the engine loads the FIFO's own entry: with a long queue
/// (a 1 410 000-byte buffer holds some ten thousand packets) an entry was written long before
/// it is delivered and has left the caches.
const FIFO_AHEAD: usize = 24;

/// The population from which the engine loads client state ahead ([`Sim::prefetch`]).
const PREFETCH_CLIENTS: usize = 4096;

/// The earlier exchanges' records (about 10 bytes each) the engine keeps before it starts
/// counting packets in flight and folding records ([`Sim::counting`]). Folding never changes
/// a result (a folded record's unnecessary retransmissions are summed as the report would
/// sum them), so the switch is only about cost: below this, every record is kept to the end.
const FOLD_AFTER: u64 = 1 << 16;

/// Events between two calls of the progress callback (and two checks of the sequence
/// numbers against [`timers::SEQ_LIMIT`]).
const PROGRESS_EVENTS: u64 = 1 << 20;

/// Every valid configuration's timer slots fit the timer queue (at most two per client, over
/// TCP, plus the full model's server slot): the check in [`Sim::with_model`] guards only
/// configurations that skipped validation.
const _: () = assert!(2 * crate::config::MAX_CLIENTS < timers::MAX_SLOTS as u64);

/// Sequence numbers kept in reserve below [`timers::SEQ_LIMIT`]: the run stops with an error
/// once it has used more than the rest, checked every [`PROGRESS_EVENTS`] events (an event
/// uses a few sequence numbers; 2^32 between two checks is far beyond any burst).
const SEQ_MARGIN: u64 = 1 << 32;

/// Run `cfg` (resolved and validated) with transport `M`.
pub(crate) fn run<'t, M: Model>(
    cfg: SimConfig,
    algs: &[GroupAlg],
    trace: Option<&'t mut dyn TraceSink>,
    progress: Option<&'t mut dyn FnMut(&crate::Progress)>,
) -> Result<SimReport, ConfigError> {
    let def = cfg.metrics.unnecessary_def;
    let mut sim = Sim::<M>::new(&cfg, algs, trace)?;
    sim.progress = progress;
    let truncated = sim.run();
    sim.finish_queue_trace(truncated);
    if sim.seq_exhausted {
        return Err(ConfigError::Invalid {
            field: "max_events".into(),
            problem: format!(
                "the run used {} sequence numbers by simulated time {:.3} s, the most the timer queue can tell apart (2^40); a run this long is not supported: split it into shorter runs",
                sim.seq,
                sim.now as f64 / 1e9
            ),
        });
    }
    if sim.events > sim.max_events {
        return Err(ConfigError::Invalid {
            field: "max_events".into(),
            problem: format!(
                "the run needed more than its budget of {} events (reached at simulated time {:.3} s); a timer far shorter than the link's delays or an endless retransmission storm is the usual cause; raise the budget with max_events (--max-events N) if the run is meant to be this long",
                sim.max_events,
                sim.now as f64 / 1e9
            ),
        });
    }
    Ok(sim.report(cfg, truncated, def))
}

impl<'t, M: Model> Sim<'t, M> {
    fn new(cfg: &SimConfig, algs: &[GroupAlg], trace: Option<&'t mut dyn TraceSink>) -> Result<Self, ConfigError> {
        Self::with_model(cfg, algs, M::try_new(cfg, algs)?, trace)
    }

    /// As [`Sim::new`], with the model already built.
    fn with_model(
        cfg: &SimConfig,
        algs: &[GroupAlg],
        m: M,
        trace: Option<&'t mut dyn TraceSink>,
    ) -> Result<Self, ConfigError> {
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
        let mut logs = Vec::new();
        timers::advise_huge_pages(&clients);
        timers::advise_huge_pages(&cold);
        let mut groups = Vec::with_capacity(algs.len());
        let mut heap = BinaryHeap::with_capacity(n + 16);
        let mut seq = 0u64;
        let jitter = ms_to_ns(cfg.workload.start_jitter_ms);
        for (g, gc) in cfg.groups.iter().enumerate() {
            // A transport without CoAP algorithms (TCP) has no histogram.
            let (name, rtx) = protos.get(g).map_or(("", 0), |p| (p.name(), p.max_retransmit()));
            groups.push(Group { name, hist: vec![0; rtx as usize + 1] });
            for _ in 0..gc.clients {
                let c = clients.len() as u64;
                let keep_log = tracing || m.needs_log(c as usize);
                let mut wl = SplitMix64::stream(seed, STREAM_WORKLOAD + c);
                let start = if jitter > 0 { uniform_u64(&mut wl, 0, jitter) } else { 0 };
                seq += 1;
                if M::FLOW_STARTS {
                    heap.push(Ev { time: start, seq, kind: EvKind::FlowStart(c as u32) });
                }
                clients.push(Client { recs: metrics::Recs::new(), transmissions: 0, cur: 0, active: false, keep_log });
                if keep_log {
                    // Every client before this one gets its (empty) slot first.
                    logs.resize_with(c as usize, Vec::new);
                    logs.push(Vec::with_capacity(max_rtx as usize + 1));
                }
                cold.push(ClientCold {
                    group: g as u32,
                    plan: FlowPlan::new(&cfg.workload, wl),
                    started: 0,
                    first_sent: None,
                    done_at: None,
                    completed_lo: 0,
                    completed_hi: 0,
                    failed_lo: 0,
                    failed_hi: 0,
                    unnecessary_lo: 0,
                    unnecessary_hi: 0,
                });
            }
        }
        let bound = (cfg.max_sim_time_s * 1e9).round() as Nanos;
        let qtrace = trace.as_deref().filter(|t| t.wants_queue()).map(|_| {
            let links = std::iter::once((&up, &down)).chain(extra.iter().map(|(u, d)| (u, d)));
            Box::new(QueueTracer::new(links.enumerate().flat_map(|(k, (u, d))| {
                [(k as u32, Direction::Uplink, u.path()), (k as u32, Direction::Downlink, d.path())]
            })))
        });
        let lookahead = M::LOOKAHEAD && cfg.topology.access_links.is_empty() && cfg.topology.mesh.is_none();
        let slots = m.timer_slots(n);
        if slots > timers::MAX_SLOTS {
            return Err(ConfigError::Invalid {
                field: "groups".into(),
                problem: format!(
                    "the run needs {slots} timer slots ({n} clients), more than the {} the simulator's timer queue can hold",
                    timers::MAX_SLOTS
                ),
            });
        }
        let mut timers = TimerHeap::new(slots);
        timers.set_look_ahead(lookahead && n >= PREFETCH_CLIENTS);
        Ok(Sim {
            now: 0,
            seq,
            bound,
            heap,
            timers,
            server_q: VecDeque::new(),
            up,
            down,
            up_head: NO_HEAD,
            down_head: NO_HEAD,
            extra_busy: vec![(0, 0); extra.len()],
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
            prefetch: lookahead && n >= PREFETCH_CLIENTS,
            counting: lookahead && n >= PREFETCH_CLIENTS,
            kept_records: 0,
            fold_after: FOLD_AFTER,
            fold_settled: M::LOOKAHEAD,
            unnecessary_def: cfg.metrics.unnecessary_def,
            mesh: medium::MeshLink::new(cfg)?,
            m,
        })
    }

    /// Whether client `c` sits behind `up` and `down` (not an access link of its own).
    #[inline(always)]
    fn on_main_link(&self, c: usize) -> bool {
        self.extra.is_empty() || self.client_link.get(c).map_or(true, |&k| k == 0)
    }

    /// Client `c`'s uplink (its access link's).
    #[inline(always)]
    fn uplink(&mut self, c: usize) -> &mut Link<Packet<M::Buf>> {
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
    fn downlink(&mut self, c: usize) -> &mut Link<Packet<M::Buf>> {
        if self.extra.is_empty() {
            return &mut self.down;
        }
        match self.client_link.get(c) {
            Some(&k) if k > 0 => &mut self.extra[k as usize - 1].1,
            _ => &mut self.down,
        }
    }

    /// Start loading client `c`'s state (engine, timer, model) into the cache: a hint, for a
    /// client whose event comes soon.
    #[inline(always)]
    fn prefetch_client(&self, c: usize) {
        if let Some(cl) = self.clients.get(c) {
            timers::prefetch(cl);
        }
        self.timers.prefetch(c as u32);
        self.m.prefetch(c);
    }

    /// Packet `p` (of client `c`, exchange `x`, copy `copy`) was handed to a link or the
    /// server's queue and is held: its exchange record counts it.
    #[inline(always)]
    fn held(&mut self, c: u32, x: u32, copy: u16) {
        count_held(&mut self.clients, (c, x, copy));
    }

    /// Start counting packets in flight ([`Sim::counting`]): every packet the links and the
    /// server's queue hold now is counted in its record, then each client's leading records
    /// that no packet can reach any more are folded away, which leaves the records as they
    /// would be had the engine counted from the start.
    #[cold]
    #[inline(never)]
    fn start_counting(&mut self) {
        self.counting = true;
        let held = self.up.held().chain(self.down.held()).chain(self.server_q.iter().map(|e| &e.1));
        for p in held {
            count_held(&mut self.clients, p.key());
        }
        for (cl, cold) in self.clients.iter_mut().zip(&mut self.cold) {
            cold.add_unnecessary(cl.recs.fold_front(self.unnecessary_def));
            cl.recs.release_if_folded();
        }
    }

    /// A held packet (its [`Packet::key`]) left its link or queue and the model handled
    /// it. When it was the last of an earlier exchange, the leading records no packet can
    /// change are folded away.
    #[inline(always)]
    fn landed(&mut self, (client, exchange, copy): (u32, u32, u16)) {
        if copy == NONE {
            return;
        }
        let c = client as usize;
        let Some(cl) = self.clients.get_mut(c) else { return };
        let x = exchange as usize;
        let Some(r) = cl.recs.get_mut(x) else { return };
        if r.held == u16::MAX {
            return; // too many to count: kept to the end
        }
        r.held -= 1;
        if r.held == 0 && x + 1 < cl.recs.len() {
            let folded = cl.recs.fold_front(self.unnecessary_def);
            if folded > 0 {
                self.cold[c].add_unnecessary(folded);
            }
        }
    }

    #[inline]
    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Run to completion (every flow finished and every packet delivered or dropped) or to
    /// the time bound. Returns whether the bound was hit.
    fn run(&mut self) -> bool {
        #[derive(Clone, Copy)]
        enum Src {
            Heap,
            Timer,
            Server,
            Up,
            Down,
            ExtraUp(usize),
            ExtraDown(usize),
            Mesh,
        }
        loop {
            let mut best: Option<(Nanos, u64, Src)> = self.timers.peek().map(|e| (e.time, e.seq(), Src::Timer));
            if self.prefetch {
                // The hot and model records of the clients whose timers come next (their cold
                // record is needed only when the exchange gives up: loading it too slowed the
                // 100 000-client runs).
                let (clients, cold, m) = (&self.clients, &self.cold, &self.m);
                self.timers.step(|c| {
                    if let Some(cl) = clients.get(c as usize) {
                        timers::prefetch(cl);
                    }
                    // A timer expected to give up also ends the exchange and starts the next:
                    // the first line of the cold record.
                    if m.prefetch_timer(c as usize) {
                        if let Some(k) = cold.get(c as usize) {
                            timers::prefetch_bytes(k, 64);
                        }
                    }
                });
            }
            if let Some(e) = self.heap.peek() {
                if best.map_or(true, |b| (e.time, e.seq) < (b.0, b.1)) {
                    best = Some((e.time, e.seq, Src::Heap));
                }
            }
            if let Some((t, p, _)) = self.server_q.front() {
                if best.map_or(true, |b| (*t, p.seq) < (b.0, b.1)) {
                    best = Some((*t, p.seq, Src::Server));
                }
            }
            debug_assert_eq!(self.up_head, head_of(&self.up));
            debug_assert_eq!(self.down_head, head_of(&self.down));
            let (up, down) = (self.up_head, self.down_head);
            let link = if up < down { (up, Src::Up) } else { (down, Src::Down) };
            if link.0 != NO_HEAD && best.map_or(true, |b| link.0 < ev_key(b.0, b.1)) {
                best = Some(((link.0 >> 64) as Nanos, link.0 as u64, link.1));
            }
            for (i, (u, d)) in self.extra.iter().enumerate() {
                if let Some((t, p)) = u.peek() {
                    if best.map_or(true, |b| (t, p.seq) < (b.0, b.1)) {
                        best = Some((t, p.seq, Src::ExtraUp(i)));
                    }
                }
                if let Some((t, p)) = d.peek() {
                    if best.map_or(true, |b| (t, p.seq) < (b.0, b.1)) {
                        best = Some((t, p.seq, Src::ExtraDown(i)));
                    }
                }
            }
            if let Some((t, s)) = self.mesh.as_ref().and_then(|m| m.peek()) {
                if best.map_or(true, |b| (t, s) < (b.0, b.1)) {
                    best = Some((t, s, Src::Mesh));
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
            if self.events > self.max_events {
                return false;
            }
            if self.events % PROGRESS_EVENTS == 0 {
                if self.seq >= timers::SEQ_LIMIT - SEQ_MARGIN {
                    self.seq_exhausted = true;
                    return false;
                }
                if let Some(p) = self.progress.as_mut() {
                    let (flows, finished) = (self.clients.len(), self.done);
                    p(&crate::Progress { events: self.events, sim_time_s: t as f64 / 1e9, finished, flows });
                }
            }
            match src {
                Src::Heap => {
                    let e = self.heap.pop().expect("peeked");
                    match e.kind {
                        EvKind::FlowStart(c) => M::flow_start(self, c as usize),
                        EvKind::Begin(c) => M::begin(self, c as usize),
                        EvKind::Model(id) => M::event(self, id),
                    }
                }
                Src::Timer => {
                    let slot = self.timers.peek().expect("peeked").client();
                    M::timer(self, slot as usize);
                }
                Src::Server => {
                    let (_, p, sid) = self.server_q.pop_front().expect("peeked");
                    let key = p.key();
                    // Counted when held iff counting already (the model may start it).
                    let counted = self.counting;
                    M::server_send(self, p, sid);
                    if counted {
                        self.landed(key);
                    }
                }
                Src::Up => {
                    let p = self.up.poll(t).expect("peeked");
                    self.up_head = head_of(&self.up);
                    let key = p.key();
                    // Counted when held iff counting already (the model may start it).
                    let counted = self.counting;
                    if self.prefetch {
                        // The server's side touches only the client's hot record.
                        if let Some(q) = self.up.held_nth(AHEAD) {
                            let c = q.client as usize;
                            if let Some(cl) = self.clients.get(c) {
                                timers::prefetch(cl);
                            }
                            self.m.prefetch_server(c);
                        }
                        if let Some(q) = self.up.held_nth(FIFO_AHEAD) {
                            timers::prefetch(q);
                        }
                    }
                    M::at_server(self, p);
                    if counted {
                        self.landed(key);
                    }
                }
                Src::Down => {
                    let p = self.down.poll(t).expect("peeked");
                    self.down_head = head_of(&self.down);
                    let key = p.key();
                    // Counted when held iff counting already (the model may start it).
                    let counted = self.counting;
                    if self.prefetch {
                        if let Some(q) = self.down.held_nth(AHEAD) {
                            let c = q.client as usize;
                            self.prefetch_client(c);
                            // The first line of the cold record: all that an exchange's end
                            // and the next one's start touch.
                            if let Some(k) = self.cold.get(c) {
                                timers::prefetch_bytes(k, 64);
                            }
                        }
                        if let Some(q) = self.down.held_nth(FIFO_AHEAD) {
                            timers::prefetch(q);
                        }
                    }
                    M::at_client(self, p);
                    if counted {
                        self.landed(key);
                    }
                }
                Src::ExtraUp(i) => {
                    let p = self.extra[i].0.poll(t).expect("peeked");
                    M::at_server(self, p);
                }
                Src::ExtraDown(i) => {
                    let p = self.extra[i].1.poll(t).expect("peeked");
                    M::at_client(self, p);
                }
                Src::Mesh => self.mesh_event(),
            }
        }
    }

    fn flow_start(&mut self, c: usize) {
        let next = self.cold[c].plan.start();
        self.follow(c, next);
    }

    /// Act on the workload's answer.
    fn follow(&mut self, c: usize, next: Next) {
        match next {
            Next::Done => {
                self.timers.remove(c as u32);
                self.cold[c].done_at = Some(self.now);
                self.done += 1;
                if self.done == self.clients.len() {
                    self.close_window(self.now);
                }
            }
            Next::Exchange { delay_ns, reset } => {
                if reset {
                    M::reset(self, c);
                }
                if delay_ns > 0 {
                    self.defer_begin(c, self.now + delay_ns);
                } else {
                    M::begin(self, c);
                }
            }
        }
    }

    /// Client `c` tries to start its next exchange at `time` instead of now.
    fn defer_begin(&mut self, c: usize, time: Nanos) {
        self.timers.remove(c as u32);
        let seq = self.next_seq();
        self.heap.push(Ev { time, seq, kind: EvKind::Begin(c as u32) });
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

    /// Client `c` starts an exchange now (its first copy follows with [`Sim::send_copy`]).
    fn start_exchange(&mut self, c: usize) {
        let now = self.now;
        let cl = &mut self.clients[c];
        let first = cl.recs.len() == 0;
        cl.cur = cl.recs.len() as u32;
        let (folded, kept) = cl.recs.push(ExRec::NEW, self.counting, self.fold_settled, self.unnecessary_def);
        cl.active = true;
        let keep_log = cl.keep_log;
        // Only the cold record's first line unless tracing or starting (a large population's
        // exchange that gave up starts the next one with that line unloaded).
        let cold = &mut self.cold[c];
        if self.trace.is_some() {
            cold.started = now;
        }
        cold.add_unnecessary(folded);
        if keep_log {
            self.logs[c].clear();
        }
        if first {
            cold.first_sent = Some(now);
        }
        if !self.counting && kept {
            self.kept_records += 1;
            if self.kept_records > self.fold_after && self.lookahead {
                self.start_counting();
            }
        }
    }

    /// Send the next copy (`size` IP bytes) of client `c`'s active exchange and arm its timer
    /// for `deadline`.
    #[inline(always)]
    fn send_copy(&mut self, c: usize, size: u32, deadline: Nanos, buf: M::Buf) {
        let now = self.now;
        let seq = self.next_seq();
        let tseq = self.next_seq();
        let cl = &mut self.clients[c];
        let rec = cl.recs.last_mut().expect("active exchange has a record");
        let copy = rec.tx;
        rec.tx = rec.tx.saturating_add(1);
        cl.transmissions += 1;
        if cl.keep_log {
            self.logs[c].push((now, deadline - now));
        }
        let pkt = Packet { seq, client: c as u32, exchange: cl.cur, copy, echo: copy, buf };
        self.first_packet.get_or_insert(now);
        self.send_up_noted(c, size, pkt);
        self.timers.set(c as u32, deadline, tseq);
    }

    /// Send a client message that is not a request copy (full model: Empty ACK, RST).
    fn send_other(&mut self, c: usize, size: u32, buf: M::Buf) {
        let seq = self.next_seq();
        let exchange = self.clients[c].cur;
        self.first_packet.get_or_insert(self.now);
        self.send_up_noted(c, size, Packet { seq, client: c as u32, exchange, copy: NONE, echo: NONE, buf });
    }

    /// [`Sim::send_up`], counting the packet in its record if the link holds it.
    #[inline(always)]
    fn send_up_noted(&mut self, c: usize, size: u32, p: Packet<M::Buf>) {
        if self.counting {
            let (x, copy) = (p.exchange, p.copy);
            if self.send_up(c, size, p) {
                self.held(c as u32, x, copy);
            }
        } else {
            self.send_up(c, size, p);
        }
    }

    /// The server answers `p` now (or after its processing delay; `sid` is the model's
    /// handle for the delayed answer).
    fn server_answer(&mut self, p: Packet<M::Buf>, size: u32, sid: u64) {
        if self.server_delay == 0 {
            self.send_response(p, size);
        } else {
            // A constant delay keeps the server's output in arrival order: a FIFO suffices.
            let seq = self.next_seq();
            if self.counting {
                self.held(p.client, p.exchange, p.copy);
            }
            self.server_q.push_back((self.now + self.server_delay, Packet { seq, ..p }, sid));
        }
    }

    #[inline(always)]
    fn send_response(&mut self, mut p: Packet<M::Buf>, size: u32) {
        p.seq = self.next_seq(); // the downlink event's own insertion order
        if self.counting {
            let (c, x, copy) = (p.client, p.exchange, p.copy);
            if self.send_down(size, p) {
                self.held(c, x, copy);
            }
        } else {
            self.send_down(size, p);
        }
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

    /// The run ended: the queue trace's last leaves (up to the time bound if it was hit).
    fn finish_queue_trace(&mut self, truncated: bool) {
        if let (Some(q), Some(sink)) = (self.qtrace.as_deref_mut(), self.trace.as_deref_mut()) {
            q.finish(truncated.then_some(self.bound), sink);
        }
    }

    /// Client `c`'s active exchange completed with a response (`answer`), after the model
    /// told the algorithm.
    fn exchange_done(&mut self, c: usize, answer: Answer) {
        self.clients[c].active = false;
        self.record_completed(c, answer);
        let next = self.cold[c].plan.after(true);
        self.follow(c, next);
    }

    /// Client `c`'s active exchange gave up, after the model told the algorithm.
    fn exchange_failed(&mut self, c: usize) {
        self.clients[c].active = false;
        self.record_failed(c);
        let next = self.cold[c].plan.after(false);
        self.follow(c, next);
    }
}

/// Count a packet held by a link or the server's queue (its [`Packet::key`]) in its exchange
/// record ([`metrics::ExRec::held`]).
#[inline(always)]
fn count_held(clients: &mut [Client], (c, x, copy): (u32, u32, u16)) {
    if copy == NONE {
        return; // not a request copy or a response to one: never changes a record
    }
    if let Some(cl) = clients.get_mut(c as usize) {
        if let Some(r) = cl.recs.get_mut(x as usize) {
            r.held = r.held.saturating_add(1);
        }
    }
}

/// The simulator's duplicate mode as the protocol layer's.
fn proto_duplicate_mode(m: DuplicateMode) -> ep::DuplicateMode {
    match m {
        DuplicateMode::AnswerEachCopy => ep::DuplicateMode::AnswerEachCopy,
        DuplicateMode::ReplayCached => ep::DuplicateMode::ReplayCached,
    }
}
