//! The discrete-event engine: virtual clock, event queue, links (or the mesh network),
//! workloads and observers. The protocol logic the nodes run is a [`Protocol`]: CoAP over UDP
//! with the simulator's own endpoints ([`Compact`], the `compact` endpoint model) or the real
//! ones ([`Full`], `full`), and CoAP over TCP ([`tcp::Tcp`]). What clients do is a
//! [`Workload`]: the closed-loop flows ([`workload::Flows`]) or the open-loop message workload
//! ([`messages::Messages`]), each with the observer of exchange events its study needs (a
//! study is a workload and its observers).
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
//! - packets in flight: each direction is a [`Link`](crate::link::Link), which computes a
//!   packet's whole path when it is pushed and holds it in a FIFO until delivery (one event
//!   per packet); over a mesh, the network's own events ([`coapcc_mesh::MeshNet`]);
//! - responses delayed by the server's constant processing delay: a FIFO;
//! - retransmission timers: one timer slot per client (plus one for the server in the full
//!   model; two per flow over TCP) in a timing wheel of 268 ms slots
//!   ([`crate::timer_queue`]): arming is an append, re-arming and cancelling rewrite the
//!   slot's state and leave the old entry to be dropped when it comes up, and only the
//!   current slot's timers are sorted (once, by a counting sort by millisecond), so the cost
//!   does not grow with the number of pending timers;
//! - everything else (flow starts, deferred exchange starts, the message workload's
//!   arrivals): a binary heap.
//!
//! Per client, the engine keeps a 64-byte hot record (the current exchange's record, counters
//! and flags read on every packet and timer event) apart from a cold one (workload position,
//! per-run counters; 128 bytes, two aligned cache lines, of which an exchange's end and the
//! next one's start touch only the first) touched once per exchange or at report time, and
//! the transmission log, kept only when tracing or when the protocol needs it, in a third
//! array. The compact model's client ([`Compact`]) is line-aligned too, with the algorithm's
//! state and the exchange's in its first two lines (Default CoAP: 64 bytes each), which is
//! all a timer that does not give up touches. A large population's per-client arrays ask
//! for transparent huge pages (`cache_hints::advise_huge_pages`). So, at 100 000
//! clients, loading ahead a firing timer's state costs four lines (timer word, hot record,
//! algorithm, exchange), and a response's or a timer's that carries the exchange's last copy
//! (it will give up) six (plus the protocol's third line and the cold record's first), on few
//! TLB entries. The client of the packet a link delivers a few packets from now is read from
//! the link's own FIFO ([`crate::link::Link::held_nth`]), whose entries are loaded further
//! ahead still (with a long queue they were written long before).
//!
//! # Protocols
//!
//! The engine ([`Sim`]) owns the clock, the queue, the links, the workload, the time bound,
//! the event budget, the progress callback, the utilisation window and the report's common
//! part; a [`Protocol`] (the protocol logic of the clients and the server) is told what
//! happened (a flow starts, a timer slot expired, a packet arrived) and answers by calling
//! the engine's methods (send a request copy, send a response, an exchange completed or
//! failed, or for TCP: send a segment, re-key a timer slot, a flow finished). The CoAP
//! endpoints over UDP also implement [`CoapEndpoints`] (an exchange may start, the server's
//! delayed answer, a batch's reset, the algorithm's state for traces), reached only through
//! the engine's CoAP paths. One loop drives every protocol. [`Compact`] is the simulator's
//! own endpoints (packets are small structs, sizes from [`crate::message_sizes`]); [`Full`] runs one real
//! [`coapcc_proto::endpoint::Endpoint`] per client and one for the server. Both consume
//! `seq` numbers in the same pattern (one per packet sent, one per timer armed with a request
//! copy or re-armed otherwise, one per delayed start or delayed server answer), so where they
//! do the same thing they produce the same event order, bit for bit. [`tcp::Tcp`] hosts a
//! [`coapcc_tcp::Connection`] pair per flow: packets are segments, each end has its own
//! timer slot, and it consumes one `seq` per segment sent and one per timer re-keyed.
//!
//! # Random streams
//!
//! Every stream is `SplitMix64::stream(seed, id)`, one numbering for every run:
//!
//! | id | stream |
//! |---|---|
//! | 1, 2, 4 | the mesh network: MAC backoffs, radio reception, duty-cycle phases (`topology.mesh`) |
//! | 3 | the message workload's arrivals (phases, event gaps) |
//! | 0x100 + i, 0x200 + i | uplink / downlink element i (loss, rest-of-path delay); extra access link k: + 0x10000·k |
//! | 0x300 | the server endpoint (full model) |
//! | 1000 + n + 2^16·k | over a mesh, the dither of the k-th client on node n |
//! | 2^32 + c | behind links, client c's dither |
//! | 2·2^32 + c | client c's flow workload (batch sizes, start jitter) |
//! | 3·2^32 + c | client c's endpoint (Message IDs, tokens; full model) |
//! | 4·2^32 + c, 5·2^32 + c | flow c's client and server TCP connections' seeds |

use coapcc_proto::endpoint as ep;

use crate::algorithms::GroupAlg;
use crate::config::{ConfigError, DuplicateMode, SimConfig};
use crate::report::SimReport;
use crate::trace::TraceSink;

mod compact;
mod full;
mod messages;
mod protocol;
mod sim;
mod tcp;
mod workload;

pub(crate) use compact::Compact;
pub(crate) use full::Full;
pub(crate) use messages::Messages;
use protocol::{CoapEndpoints, Protocol};
use sim::Sim;
pub(crate) use tcp::{run as run_tcp, tcp_configs};
pub use tcp::{STREAM_TCP_CLIENT, STREAM_TCP_SERVER};
pub(crate) use workload::{Flows, Workload};

/// The nodes of a mesh that host clients (every node but the DODAG root and the sink; the
/// root too with `routing.root_client`).
pub(crate) fn host_count<P: Copy>(net: &coapcc_mesh::MeshNet<P>) -> usize {
    sim::host_nodes(net).len()
}

/// Stream id base of uplink elements.
pub const STREAM_UPLINK: u64 = 0x100;
/// Stream id base of downlink elements.
pub const STREAM_DOWNLINK: u64 = 0x200;
/// Stream id of the server endpoint (full endpoint model).
pub const STREAM_SERVER: u64 = 0x300;
/// Stream id base of client dither streams (clients behind links).
pub const STREAM_DITHER: u64 = 1 << 32;
/// Stream id base of the dither streams of clients over a mesh (plus the client's node, plus
/// 2^16 for each client placed on that node before it).
pub const STREAM_MESH_DITHER: u64 = 1000;
/// Stream id base of client workload streams.
pub const STREAM_WORKLOAD: u64 = 2 << 32;
/// Stream id base of client endpoints' own randomness (Message IDs, tokens; full model).
pub const STREAM_ENDPOINT: u64 = 3 << 32;
/// Stream id of the message workload's arrivals (phases, event gaps).
pub const STREAM_MESSAGES: u64 = 3;

/// Where the clients sit, as far as their random streams are concerned: behind links (client
/// c's dither is stream 2^32 + c) or on the nodes of a mesh (1000 + node + 2^16·k for the
/// k-th client of the node).
pub(crate) struct Placement {
    /// The node of each client, over a mesh.
    nodes: Option<Vec<u16>>,
    /// Host nodes of the mesh (clients go round robin over them).
    hosts: usize,
}

impl Placement {
    /// Client `c`'s dither stream id.
    pub(crate) fn dither_stream(&self, c: usize) -> u64 {
        match &self.nodes {
            None => STREAM_DITHER + c as u64,
            Some(nodes) => STREAM_MESH_DITHER + u64::from(nodes[c]) + ((c / self.hosts.max(1)) as u64) * (1 << 16),
        }
    }
}

/// Run `cfg` (resolved and validated) with protocol `M` and workload `W`.
pub(crate) fn run<'t, M: Protocol<W>, W: Workload>(
    cfg: SimConfig,
    algs: &[GroupAlg],
    trace: Option<&'t mut dyn TraceSink>,
    progress: Option<&'t mut dyn FnMut(&crate::Progress)>,
) -> Result<SimReport, ConfigError> {
    run_with::<M, W>(cfg, algs, trace, progress, |_| {})
}

/// Run `cfg` (resolved and validated) with the CoAP endpoints `M` and workload `W`.
pub(crate) fn run_coap<'t, M: CoapEndpoints<W>, W: Workload>(
    cfg: SimConfig,
    algs: &[GroupAlg],
    trace: Option<&'t mut dyn TraceSink>,
    progress: Option<&'t mut dyn FnMut(&crate::Progress)>,
) -> Result<SimReport, ConfigError> {
    run_with::<M, W>(cfg, algs, trace, progress, |sim| sim.coap_setup())
}

fn run_with<'t, M: Protocol<W>, W: Workload>(
    cfg: SimConfig,
    algs: &[GroupAlg],
    trace: Option<&'t mut dyn TraceSink>,
    progress: Option<&'t mut dyn FnMut(&crate::Progress)>,
    setup: impl FnOnce(&mut Sim<'t, M, W>),
) -> Result<SimReport, ConfigError> {
    let def = cfg.metrics.unnecessary_def;
    let mut sim = Sim::<M, W>::new(&cfg, algs, trace)?;
    sim.set_progress(progress);
    setup(&mut sim);
    let truncated = sim.run();
    sim.finish_trace(truncated);
    if let Some(e) = sim.seq_exhausted().or_else(|| sim.over_budget()) {
        return Err(e);
    }
    Ok(sim.report(cfg, truncated, def))
}

/// The simulator's duplicate mode as the protocol layer's.
fn proto_duplicate_mode(m: DuplicateMode) -> ep::DuplicateMode {
    match m {
        DuplicateMode::AnswerEachCopy => ep::DuplicateMode::AnswerEachCopy,
        DuplicateMode::ReplayCached => ep::DuplicateMode::ReplayCached,
    }
}
