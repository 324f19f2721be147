//! What a protocol implements: [`Protocol`], the hooks every protocol has, and [`CoapEndpoints`], the
//! hooks of the CoAP endpoints over UDP only.
//!
//! A protocol is told what happened (a flow starts, a timer slot expired, a packet arrived)
//! and answers by calling the engine's methods ([`Sim`]): send a packet, arm or disarm a timer
//! slot, an exchange completed or failed, a flow finished. It never touches the engine's
//! fields (they are private to `engine::sim`). The CoAP endpoints' own deferred work (an
//! exchange start the algorithm's pacing delays, an answer the server's processing delay
//! holds back) goes into the engine's queue as calls of their [`CoapEndpoints`] hooks, made by the
//! engine's CoAP paths, which only [`CoapEndpoints`] take.

use coapcc_cc::Snapshot;

use super::sim::{FlowPart, Packet, Sim};
use super::workload::Workload;
use super::Placement;
use crate::algorithms::GroupAlg;
use crate::config::{ConfigError, SimConfig, UnnecessaryDef};

/// A protocol (the CoAP endpoints of an endpoint model, or TCP): the clients' and the server's logic, for workload
/// `W`. Every hook is told the event and calls the engine back.
pub(crate) trait Protocol<W: Workload>: Sized {
    /// Payload of a packet (a CoAP datagram, or a TCP segment): copied when a mesh without
    /// MAC duplicate detection delivers a packet twice.
    type Buf: Clone;
    /// Whether every packet goes through [`Sim::send_copy`], [`Sim::send_other`] or
    /// [`Sim::send_response`], so that the engine can follow the dumbbell links' queues and
    /// load the state of the clients whose packets come next ahead of time.
    const LOOKAHEAD: bool = false;
    /// The protocol for `cfg` (`algs`: each group's CoAP algorithm; empty for TCP; `placement`:
    /// where the clients sit, for their random streams), or why the configuration does not
    /// suit it.
    fn try_new(cfg: &SimConfig, algs: &[GroupAlg], placement: &Placement) -> Result<Self, ConfigError>;
    /// Timer slots: one per client, plus any the protocol needs.
    fn timer_slots(&self, clients: usize) -> usize;
    /// Client `c`'s flow starts (the workload's first step).
    fn flow_start(sim: &mut Sim<'_, Self, W>, c: usize);
    /// Timer slot `slot` expired.
    fn timer(sim: &mut Sim<'_, Self, W>, slot: usize);
    /// A packet reached the server.
    fn at_server(sim: &mut Sim<'_, Self, W>, p: Packet<Self::Buf>);
    /// A packet reached its client.
    fn at_client(sim: &mut Sim<'_, Self, W>, p: Packet<Self::Buf>);
    /// The report's per-flow and per-group part, at the end of the run.
    fn flow_reports(sim: &mut Sim<'_, Self, W>, cfg: &SimConfig, def: UnnecessaryDef) -> FlowPart;

    // Hints: they never change a result, and a protocol without them loses nothing but
    // speed (the engine loads state ahead only for populations of thousands of clients).

    /// Start loading client `c`'s protocol state into the cache (an event of the client comes
    /// soon).
    #[inline(always)]
    fn prefetch(&self, _c: usize) {}
    /// As [`Protocol::prefetch`], for a timer of client `c` expiring soon: only what a timer
    /// needs. Returns whether the timer is expected to end the exchange (it gives up), so
    /// that the engine loads what an exchange's end touches too.
    #[inline(always)]
    fn prefetch_timer(&self, c: usize) -> bool {
        self.prefetch(c);
        false
    }
    /// Start loading the server's state for client `c` (a request of `c` arrives soon).
    #[inline(always)]
    fn prefetch_server(&self, _c: usize) {}
    /// The run is over and its report is being assembled: free what only the run needed
    /// (the report then calls only [`Protocol::flow_reports`]).
    fn release_run_state(&mut self) {}
}

/// The hooks of CoAP endpoints over UDP: the engine's exchange paths (the workload's next
/// exchange, pacing, the server's processing delay, a random workload's batches, trace
/// records) call them.
pub(crate) trait CoapEndpoints<W: Workload>: Protocol<W> {
    /// Whether client `c`'s transmissions must be logged even without a trace (copy
    /// identification reads their send times).
    fn needs_log(&self, c: usize) -> bool;
    /// Client `c` may start its next exchange now (the protocol may defer it: pacing).
    fn begin(sim: &mut Sim<'_, Self, W>, c: usize);
    /// The server's processing delay for request `sid` (the protocol's id) ended.
    fn server_send(sim: &mut Sim<'_, Self, W>, p: Packet<Self::Buf>, sid: u64);
    /// Reset client `c`'s algorithm (random workload, batch boundary).
    fn reset(sim: &mut Sim<'_, Self, W>, c: usize);
    /// Client `c`'s algorithm state.
    fn snapshot(&self, c: usize) -> Snapshot;
}
