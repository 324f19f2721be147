//! The engine's per-client records: a hot one read on every packet and timer event of the
//! client, a cold one touched once per exchange or at report time (see the engine's module
//! documentation for the cache-line layout).

use super::metrics;
use crate::link::Nanos;

/// The per-client engine state read or written on every packet and timer event of the
/// client, one cache line each (a run of 100 000 clients touches them at random).
#[repr(align(64))]
pub(super) struct Client {
    /// The client's exchange records (the current one inline).
    pub(super) recs: metrics::Recs,
    /// Request copies sent.
    pub(super) transmissions: u64,
    /// Index of the current (or last) exchange in `recs`.
    pub(super) cur: u32,
    /// An exchange is in progress.
    pub(super) active: bool,
    /// Transmissions are logged ([`super::Sim::logs`]).
    pub(super) keep_log: bool,
}

const _: () = assert!(std::mem::size_of::<Client>() == 64);
const _: () = assert!(std::mem::size_of::<ClientCold<crate::workload::FlowPlan>>() == 128);

impl Client {
    pub(super) fn new(keep_log: bool) -> Self {
        Client { recs: metrics::Recs::new(), transmissions: 0, cur: 0, active: false, keep_log }
    }
}

/// A client's workload position (`P`, the workload's per-client plan) and its per-run
/// measurements: touched once per exchange or at report time only. With the flow workloads,
/// two cache lines (aligned; the transmission logs are apart, in [`super::Sim::logs`]), of
/// which an exchange's end and the next one's start touch only the first (`repr(C)`: in this
/// order): the workload, the group and the low halves of the counters (their high halves
/// are in the second line, touched once per 2^32 counted). The engine loads that line ahead
/// of a response; an exchange that gives up reads it unloaded.
#[repr(C, align(64))]
pub(super) struct ClientCold<P> {
    pub(super) plan: P,
    pub(super) group: u32,
    /// Low halves of [`ClientCold::completed`], [`ClientCold::failed`],
    /// [`ClientCold::unnecessary`].
    completed_lo: u32,
    failed_lo: u32,
    unnecessary_lo: u32,
    /// First transmission of the current exchange (kept only when tracing: only a trace
    /// record reads it).
    pub(super) started: Nanos,
    pub(super) first_sent: Option<Nanos>,
    pub(super) done_at: Option<Nanos>,
    completed_hi: u32,
    failed_hi: u32,
    unnecessary_hi: u32,
}

/// What an exchange's end and the next one's start touch (the plan, the group, the low
/// halves) is the first line.
const _: () = assert!(std::mem::offset_of!(ClientCold<crate::workload::FlowPlan>, unnecessary_lo) + 4 <= 64);

/// `hi:lo` plus `v` (a count kept as two halves, `lo` in a line touched often).
#[inline(always)]
fn add_split(lo: &mut u32, hi: &mut u32, v: u64) {
    let s = u64::from(*lo) + v;
    *lo = s as u32;
    if s >> 32 != 0 {
        *hi = hi.wrapping_add((s >> 32) as u32);
    }
}

impl<P> ClientCold<P> {
    /// A client of group `group` at the start of its plan.
    pub(super) fn new(plan: P, group: u32) -> Self {
        ClientCold {
            plan,
            group,
            completed_lo: 0,
            failed_lo: 0,
            unnecessary_lo: 0,
            started: 0,
            first_sent: None,
            done_at: None,
            completed_hi: 0,
            failed_hi: 0,
            unnecessary_hi: 0,
        }
    }

    /// Exchanges completed.
    pub(super) fn completed(&self) -> u64 {
        u64::from(self.completed_hi) << 32 | u64::from(self.completed_lo)
    }

    /// Exchanges that gave up.
    pub(super) fn failed(&self) -> u64 {
        u64::from(self.failed_hi) << 32 | u64::from(self.failed_lo)
    }

    /// Unnecessary retransmissions of the exchange records folded away.
    pub(super) fn unnecessary(&self) -> u64 {
        u64::from(self.unnecessary_hi) << 32 | u64::from(self.unnecessary_lo)
    }

    /// An exchange completed.
    #[inline(always)]
    pub(super) fn count_completed(&mut self) {
        add_split(&mut self.completed_lo, &mut self.completed_hi, 1);
    }

    /// An exchange gave up.
    #[inline(always)]
    pub(super) fn count_failed(&mut self) {
        add_split(&mut self.failed_lo, &mut self.failed_hi, 1);
    }

    /// `n` more unnecessary retransmissions in records folded away.
    #[inline(always)]
    pub(super) fn add_unnecessary(&mut self, n: u64) {
        add_split(&mut self.unnecessary_lo, &mut self.unnecessary_hi, n);
    }
}
