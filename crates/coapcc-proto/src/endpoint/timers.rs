//! The endpoint's timers, kept in one ordered index: the next wake-up and the due timers
//! cost O(log n) whatever the number of exchanges queued or in flight.

use std::collections::BTreeSet;

use coapcc_cc::Instant;

use super::ServerRequestId;

/// What a timer belongs to.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum TimerKey<P> {
    /// An outgoing exchange (retransmission or response timeout).
    Out(u64),
    /// A server request still unanswered (its Empty ACK).
    Served(ServerRequestId),
    /// A peer whose queue head waits for the algorithm's pacing.
    Wake(P),
}

/// Ordered set of (deadline, owner). Every owner has at most one entry: callers pass the
/// old deadline when they re-arm.
pub(super) struct Timers<P> {
    set: BTreeSet<(Instant, TimerKey<P>)>,
}

impl<P: Clone + Ord> Timers<P> {
    pub(super) fn new() -> Self {
        Timers { set: BTreeSet::new() }
    }

    /// Move `key`'s timer from `old` to `new` (either may be `None`).
    pub(super) fn rearm(&mut self, key: TimerKey<P>, old: Option<Instant>, new: Option<Instant>) {
        if old == new {
            return;
        }
        // Insert before removing: a set holding one timer (a client's) never becomes empty
        // in between, so it keeps its node instead of freeing and allocating it again.
        match (old, new) {
            (Some(o), Some(n)) => {
                self.set.insert((n, key.clone()));
                self.set.remove(&(o, key));
            }
            (Some(o), None) => {
                self.set.remove(&(o, key));
            }
            (None, Some(n)) => {
                self.set.insert((n, key));
            }
            (None, None) => {}
        }
    }

    /// The earliest deadline.
    pub(super) fn next(&self) -> Option<Instant> {
        self.set.first().map(|(t, _)| *t)
    }

    /// Owners of the timers due at `now`, in deadline order.
    pub(super) fn due(&self, now: Instant) -> impl Iterator<Item = &TimerKey<P>> {
        self.set.iter().take_while(move |(t, _)| *t <= now).map(|(_, k)| k)
    }

    /// Timers armed.
    pub(super) fn len(&self) -> usize {
        self.set.len()
    }
}
