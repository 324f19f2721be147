//! The endpoint's timers, kept in one ordered index: the next wake-up and the due timers
//! cost O(log n) whatever the number of exchanges queued or in flight.
//!
//! A client has one or two timers armed at a time, and re-arms one per transmission: a lone
//! timer is kept in the endpoint itself (reading, re-arming or disarming it touches nothing
//! else); while few are armed they sit in a small sorted vector (a binary search and a short
//! move, no allocation, little code on the hot path); past [`SMALL`] they move to an ordered
//! set for good.

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

/// Most timers kept in the sorted vector; one more moves them all to the ordered set.
pub(super) const SMALL: usize = 32;

type Entry<P> = (Instant, TimerKey<P>);

/// Ordered set of (deadline, owner). Every owner has at most one entry: callers pass the
/// old deadline when they re-arm.
pub(super) struct Timers<P> {
    /// The set when it holds exactly one timer (a client's exchange, a server's request
    /// waiting for its answer: the common case), kept in the endpoint itself, so that
    /// reading or re-arming it touches no other memory. `Some` only while `more` holds none.
    one: Option<Entry<P>>,
    /// The set when it holds two timers or more (allocated the first time, kept after);
    /// boxed: the endpoint's hot fields keep their few cache lines.
    more: Option<Box<More<P>>>,
}

/// [`Timers`] beyond one timer.
struct More<P> {
    /// Sorted ascending, no duplicates; used while `large` is `None`.
    small: Vec<Entry<P>>,
    large: Option<BTreeSet<Entry<P>>>,
}

impl<P: Clone + Ord> Timers<P> {
    pub(super) fn new() -> Self {
        Timers { one: None, more: None }
    }

    /// Move `key`'s timer from `old` to `new` (either may be `None`). The nothing-to-do check
    /// is inline (callers often re-arm a timer that stays off).
    /// A client's commonest changes are inline too, with no call: its one timer re-armed
    /// (every retransmission) is written over, disarmed (a finished exchange) or armed when
    /// no other is (a new one) is set in place.
    #[inline]
    pub(super) fn rearm(&mut self, key: TimerKey<P>, old: Option<Instant>, new: Option<Instant>) {
        if old == new {
            return;
        }
        match (old, new, &mut self.one) {
            (Some(o), Some(n), Some((t, k))) if *t == o && *k == key => {
                *t = n;
                return;
            }
            // `remove` with a lone timer: it goes if it is this one; nothing else is armed.
            (Some(o), None, Some((t, k))) => {
                if *t == o && *k == key {
                    self.one = None;
                }
                return;
            }
            // `insert` of the first timer: in place.
            (None, Some(n), None) if self.more.is_none() => {
                self.one = Some((n, key));
                return;
            }
            _ => {}
        }
        self.rearm_changed(key, old, new);
    }

    #[inline(never)]
    fn rearm_changed(&mut self, key: TimerKey<P>, old: Option<Instant>, new: Option<Instant>) {
        match (old, new) {
            (Some(o), Some(n)) => {
                // The commonest case, a client's one timer re-armed: written over, no search.
                if let Some((t, k)) = &mut self.one {
                    if *t == o && *k == key {
                        *t = n;
                        return;
                    }
                }
                if self.is_large() {
                    self.insert((n, key.clone()));
                    self.remove(&(o, key));
                } else {
                    self.moved(o, n, key);
                }
            }
            (Some(o), None) => self.remove(&(o, key)),
            (None, Some(n)) => self.insert((n, key)),
            (None, None) => {}
        }
    }

    fn is_large(&self) -> bool {
        self.more.as_ref().is_some_and(|m| m.large.is_some())
    }

    /// The sorted vector and ordered set, allocated on first use.
    fn more(&mut self) -> &mut More<P> {
        self.more.get_or_insert_with(|| Box::new(More { small: Vec::new(), large: None }))
    }

    /// Re-arm `key` from `o` to `n` in the sorted vector (`one` is not it): the entries
    /// between its old and new places shift by one (a client's one or two timers: nothing
    /// or one entry moves), no insertion and removal.
    fn moved(&mut self, o: Instant, n: Instant, key: TimerKey<P>) {
        let old = (o, key);
        let found = match self.more.as_deref() {
            Some(m) if self.one.is_none() => m.small.binary_search(&old).ok(),
            _ => None,
        };
        let Some(i) = found else {
            // Not armed (callers always pass the old deadline): arm it.
            return self.insert((n, old.1));
        };
        let small = &mut self.more().small;
        let new = (n, old.1);
        // Most often it keeps its place (a client has one or two timers): written over.
        let after_prev = i == 0 || small[i - 1] < new;
        if after_prev && !matches!(small.get(i + 1), Some(next) if *next <= new) {
            small[i] = new;
            return;
        }
        // Where the new entry goes with the old one still in place (never on it: the
        // deadlines differ and an owner has one entry).
        let j = small.binary_search(&new).unwrap_or_else(|j| j);
        if j <= i {
            for k in (j..i).rev() {
                small.swap(k, k + 1);
            }
            small[j] = new;
        } else {
            for k in i..j - 1 {
                small.swap(k, k + 1);
            }
            small[j - 1] = new;
        }
    }

    fn insert(&mut self, e: Entry<P>) {
        if self.is_large() {
            return self.insert_large(e);
        }
        let first = self.one.take();
        if first.is_none() && !self.more.as_ref().is_some_and(|m| !m.small.is_empty()) {
            // The first timer: in place.
            self.one = Some(e);
            return;
        }
        let m = self.more();
        // A second one: both go to the sorted vector.
        m.small.extend(first);
        if let Err(i) = m.small.binary_search(&e) {
            m.small.insert(i, e);
            if m.small.len() > SMALL {
                Self::grow(m);
            }
        }
    }

    // The ordered set's paths out of line: the hot path (a client's few timers) stays small.
    #[cold]
    #[inline(never)]
    fn insert_large(&mut self, e: Entry<P>) {
        if let Some(set) = &mut self.more().large {
            set.insert(e);
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(m: &mut More<P>) {
        m.large = Some(m.small.drain(..).collect());
    }

    #[cold]
    #[inline(never)]
    fn remove_large(&mut self, e: &Entry<P>) {
        if let Some(set) = &mut self.more().large {
            set.remove(e);
        }
    }

    fn remove(&mut self, e: &Entry<P>) {
        if let Some(only) = &self.one {
            // A lone timer disarmed: nothing to search or move.
            if only == e {
                self.one = None;
            }
        } else if self.is_large() {
            self.remove_large(e);
        } else if let Some(m) = self.more.as_deref_mut() {
            if let Ok(i) = m.small.binary_search(e) {
                m.small.remove(i);
                if m.small.len() == 1 {
                    // One left: back in place.
                    self.one = m.small.pop();
                }
            }
        }
    }

    /// The earliest deadline.
    pub(super) fn next(&self) -> Option<Instant> {
        if let Some((t, _)) = &self.one {
            return Some(*t);
        }
        self.more.as_deref().and_then(|m| match &m.large {
            Some(set) => set.first().map(|(t, _)| *t),
            None => m.small.first().map(|(t, _)| *t),
        })
    }

    /// Calls `f` with the owner of every timer due at `now`, in deadline order.
    pub(super) fn due(&self, now: Instant, mut f: impl FnMut(&TimerKey<P>)) {
        if let Some((t, k)) = &self.one {
            if *t <= now {
                f(k);
            }
            return;
        }
        match self.more.as_deref() {
            Some(More { large: Some(set), .. }) => set.iter().take_while(|(t, _)| *t <= now).for_each(|(_, k)| f(k)),
            Some(m) => m.small.iter().take_while(|(t, _)| *t <= now).for_each(|(_, k)| f(k)),
            None => {}
        }
    }

    /// The exchange whose timer is the only one due at `now`, if that is the case (the
    /// common wake-up: one retransmission), without a walk over the due timers.
    #[inline]
    pub(super) fn single_due_out(&self, now: Instant) -> Option<u64> {
        if let Some((t, k)) = &self.one {
            return match k {
                TimerKey::Out(x) if *t <= now => Some(*x),
                _ => None,
            };
        }
        match self.more.as_deref() {
            Some(More { small, large: None }) => match small.as_slice() {
                [(t, TimerKey::Out(x)), rest @ ..]
                    if *t <= now && !matches!(rest.first(), Some((u, _)) if *u <= now) =>
                {
                    Some(*x)
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// Timers armed.
    pub(super) fn len(&self) -> usize {
        if self.one.is_some() {
            return 1;
        }
        self.more.as_deref().map_or(0, |m| m.large.as_ref().map_or(m.small.len(), |s| s.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same operations on the timers and on a plain ordered set give the same next
    /// deadline, due owners and count, below and above the switch to the ordered set.
    #[test]
    fn behaves_like_an_ordered_set() {
        let t = check(|step| if step < 2000 { 20 } else { 80 });
        assert!(t.is_large(), "the test reached the ordered set");
    }

    /// The same with one to three owners (a client's timers): the lone timer armed,
    /// re-armed and disarmed in place (`rearm`'s inline paths), and moved to and from the
    /// sorted vector.
    #[test]
    fn lone_timer_behaves_like_an_ordered_set() {
        let t = check(|step| {
            if step < 1000 {
                1
            } else if step < 2500 {
                2
            } else {
                3
            }
        });
        assert!(!t.is_large());
    }

    /// 4000 random re-arms of owners `0..owners(step)`, checked against a plain ordered set
    /// after each.
    fn check(owners: impl Fn(u64) -> u64) -> Timers<u8> {
        let mut t = Timers::<u8>::new();
        let mut model = BTreeSet::new();
        let mut at: Vec<Option<Instant>> = vec![None; 80];
        let mut x = 0x9E37_79B9_u64;
        for step in 0..4000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let owner = ((x >> 33) % owners(step)) as usize;
            let new = ((x >> 20) % 4 != 0).then(|| Instant::from_millis((x >> 40) % 50));
            let key = if owner % 3 == 0 { TimerKey::Wake(owner as u8) } else { TimerKey::Out(owner as u64) };
            let old = at[owner];
            t.rearm(key.clone(), old, new);
            if let Some(o) = old {
                model.remove(&(o, key.clone()));
            }
            if let Some(n) = new {
                model.insert((n, key));
            }
            at[owner] = new;
            assert_eq!(t.len(), model.len());
            assert_eq!(t.next(), model.first().map(|(t, _)| *t));
            let now = Instant::from_millis(step % 50);
            let mut due = Vec::new();
            t.due(now, |k| due.push(k.clone()));
            let expected: Vec<_> = model.iter().take_while(|(d, _)| *d <= now).map(|(_, k)| k.clone()).collect();
            assert_eq!(due, expected);
        }
        t
    }
}
