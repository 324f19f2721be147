//! Workloads on the engine: [`Workload`], what starts a client's exchanges and what follows
//! each outcome, and [`ExchangeObserver`], what a study measures of the engine's exchange
//! events beyond the engine's own metrics. A study is a workload and its observer.
//!
//! Two workloads implement it: [`Flows`] (the closed-loop flows of [`crate::workload::FlowPlan`]:
//! continuous, random batches, one bulk transfer), whose plans the engine starts itself (one
//! flow start per client), and the open-loop message workload
//! ([`crate::workload::messages`], hosted by [`super::messages`]), which owns its arrival
//! events.

use core::time::Duration;

use coapcc_cc::{Snapshot, SplitMix64};

use super::protocol::{CoapEndpoints, Protocol};
use super::sim::{Answer, ExRec, Sim};
use crate::config::{ConfigError, SimConfig};
use crate::link::Nanos;
use crate::report::MessagesReport;
use crate::trace::ExchangeOutcome;
use crate::workload::{FlowPlan, Next};

/// What the clients of a run do (see the module documentation).
pub(crate) trait Workload: Sized {
    /// A client's position in the workload, kept in the engine's cold client record (what
    /// an exchange's end reads).
    type Plan;
    /// What the workload's study measures of the exchanges.
    type Observer: ExchangeObserver;
    /// Whether the engine starts each client's flow (an event per client at U[0, start
    /// jitter]); a workload with its own arrival events starts its clients itself.
    const FLOW_STARTS: bool;
    /// The workload and its observer for `cfg`.
    fn new(cfg: &SimConfig) -> Result<(Self, Self::Observer), ConfigError>;
    /// Client `c`'s plan, drawing from `rng` (the client's workload stream).
    fn plan(&self, c: usize, rng: SplitMix64) -> Self::Plan;
    /// Client `c`'s flow starts: its first step.
    fn first(&mut self, c: usize, plan: &mut Self::Plan) -> Next;
    /// Client `c`'s exchange ended (`success`: its response arrived): what follows.
    fn after(&mut self, c: usize, plan: &mut Self::Plan, success: bool) -> Next;
    /// The CoAP length of client `c`'s current request when the workload sets it (`None`: the
    /// configured GET, [`crate::config::CoapConfig`]).
    fn request_len(&self, c: usize) -> Option<u32>;
    /// The engine's CoAP endpoints is ready: schedule the workload's own events.
    fn setup<M: CoapEndpoints<Self>>(sim: &mut Sim<'_, M, Self>);
    /// Client `c`'s exchange ended with `outcome` (`answer`: the response that completed it):
    /// write its trace record (only called when the run is traced).
    fn trace<M: CoapEndpoints<Self>>(
        sim: &mut Sim<'_, M, Self>,
        c: usize,
        outcome: ExchangeOutcome,
        answer: Option<Answer>,
    );
    /// The workload's part of the report (`None` for the flow workloads), once the
    /// transport's part is done (every exchange record final).
    fn report<M: Protocol<Self>>(sim: &Sim<'_, M, Self>) -> Option<MessagesReport>;
}

/// What the first response of an exchange tells an observer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Acked {
    /// From the exchange's first transmission to the response.
    pub(crate) rtt: Duration,
    /// The deadline of the retransmission timer the response disarmed.
    pub(crate) deadline: Nanos,
    /// The algorithm's state just before and just after the response (only when the
    /// observer asks for them, [`ExchangeObserver::SNAPSHOTS`]; else defaults).
    pub(crate) before: Snapshot,
    pub(crate) after: Snapshot,
}

/// A study's measurements of the engine's exchange events (all no-ops by default: the flow
/// workloads' metrics are the engine's own).
pub(crate) trait ExchangeObserver {
    /// Whether [`ExchangeObserver::acked`] wants the algorithm's state before and after.
    const SNAPSHOTS: bool = false;
    /// Whether the observer reads every exchange record ([`ExchangeObserver::record_final`]):
    /// the engine then folds a record away only once no packet can change it (not as soon
    /// as it is settled for the unnecessary-retransmission count).
    const RECORDS: bool = false;
    /// Client `c` started an exchange whose first timer is `t0`.
    #[inline(always)]
    fn started(&mut self, _c: usize, _t0: Duration) {}
    /// Client `c`'s exchange got its first response.
    #[inline(always)]
    fn acked(&mut self, _c: usize, _a: &Acked) {}
    /// Client `c`'s exchange gave up.
    #[inline(always)]
    fn gave_up(&mut self, _c: usize) {}
    /// No packet can change client `c`'s exchange record `rec` any more (it is folded away
    /// or the run ended).
    #[inline(always)]
    fn record_final(&mut self, _c: usize, _rec: &ExRec) {}
}

/// The flow workloads observe nothing beyond the engine's metrics.
impl ExchangeObserver for () {}

/// The closed-loop flow workloads ([`crate::config::WorkloadKind::Continuous`], `Random`,
/// `Bulk`): each client's [`FlowPlan`] says what follows each exchange.
pub(crate) struct Flows {
    cfg: crate::config::WorkloadConfig,
}

impl Workload for Flows {
    type Plan = FlowPlan;
    type Observer = ();
    const FLOW_STARTS: bool = true;

    fn new(cfg: &SimConfig) -> Result<(Self, ()), ConfigError> {
        Ok((Flows { cfg: cfg.workload.clone() }, ()))
    }

    fn plan(&self, _c: usize, rng: SplitMix64) -> FlowPlan {
        FlowPlan::new(&self.cfg, rng)
    }

    #[inline(always)]
    fn first(&mut self, _c: usize, plan: &mut FlowPlan) -> Next {
        plan.start()
    }

    #[inline(always)]
    fn after(&mut self, _c: usize, plan: &mut FlowPlan, success: bool) -> Next {
        plan.after(success)
    }

    #[inline(always)]
    fn request_len(&self, _c: usize) -> Option<u32> {
        None
    }

    /// The engine starts every flow itself.
    fn setup<M: CoapEndpoints<Self>>(_sim: &mut Sim<'_, M, Self>) {}

    /// The engine's record of the exchange ([`crate::trace::ExchangeTrace`]).
    fn trace<M: CoapEndpoints<Self>>(
        sim: &mut Sim<'_, M, Self>,
        c: usize,
        outcome: ExchangeOutcome,
        answer: Option<Answer>,
    ) {
        sim.emit_trace(c, outcome, answer);
    }

    fn report<M: Protocol<Self>>(_sim: &Sim<'_, M, Self>) -> Option<MessagesReport> {
        None
    }
}
