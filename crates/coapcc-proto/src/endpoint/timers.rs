//! The endpoint's timers, kept in one ordered index: the next wake-up and the due timers
//! cost O(log n) whatever the number of exchanges queued or in flight.
//!
//! A client has one or two timers armed at a time, and re-arms one per transmission: while
//! few are armed they sit in a small sorted vector (a binary search and a short move, no
//! allocation, little code on the hot path); past [`SMALL`] they move to an ordered set for
//! good.

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
    /// Sorted ascending, no duplicates; used while `large` is `None`.
    small: Vec<Entry<P>>,
    // Boxed: 8 bytes next to the hot vector instead of 24 (the endpoint's hot fields share
    // a few cache lines); the extra indirection is paid only past the small size.
    #[allow(clippy::box_collection)]
    large: Option<Box<BTreeSet<Entry<P>>>>,
}

impl<P: Clone + Ord> Timers<P> {
    pub(super) fn new() -> Self {
        Timers { small: Vec::new(), large: None }
    }

    /// Move `key`'s timer from `old` to `new` (either may be `None`). The nothing-to-do check
    /// is inline (callers often re-arm a timer that stays off).
    #[inline]
    pub(super) fn rearm(&mut self, key: TimerKey<P>, old: Option<Instant>, new: Option<Instant>) {
        if old != new {
            self.rearm_changed(key, old, new);
        }
    }

    #[inline(never)]
    fn rearm_changed(&mut self, key: TimerKey<P>, old: Option<Instant>, new: Option<Instant>) {
        match (old, new) {
            (Some(o), Some(n)) if self.large.is_none() => self.moved(o, n, key),
            (Some(o), Some(n)) => {
                self.insert((n, key.clone()));
                self.remove(&(o, key));
            }
            (Some(o), None) => self.remove(&(o, key)),
            (None, Some(n)) => self.insert((n, key)),
            (None, None) => {}
        }
    }

    /// Re-arm `key` from `o` to `n` in the sorted vector: the entries between its old and
    /// new places shift by one (a client's one or two timers: nothing or one entry moves),
    /// no insertion and removal.
    fn moved(&mut self, o: Instant, n: Instant, key: TimerKey<P>) {
        // The commonest case, a client's one timer re-armed: written over, no search.
        if let [(t, k)] = self.small.as_mut_slice() {
            if *t == o && *k == key {
                *t = n;
                return;
            }
        }
        let old = (o, key);
        let Ok(i) = self.small.binary_search(&old) else {
            // Not armed (callers always pass the old deadline): arm it.
            return self.insert((n, old.1));
        };
        let new = (n, old.1);
        // Most often it keeps its place (a client has one or two timers): written over.
        let after_prev = i == 0 || self.small[i - 1] < new;
        if after_prev && !matches!(self.small.get(i + 1), Some(next) if *next <= new) {
            self.small[i] = new;
            return;
        }
        // Where the new entry goes with the old one still in place (never on it: the
        // deadlines differ and an owner has one entry).
        let j = self.small.binary_search(&new).unwrap_or_else(|j| j);
        if j <= i {
            for k in (j..i).rev() {
                self.small.swap(k, k + 1);
            }
            self.small[j] = new;
        } else {
            for k in i..j - 1 {
                self.small.swap(k, k + 1);
            }
            self.small[j - 1] = new;
        }
    }

    fn insert(&mut self, e: Entry<P>) {
        if self.large.is_some() {
            return self.insert_large(e);
        }
        // A client's one timer armed: nothing to search or move.
        if self.small.is_empty() {
            return self.small.push(e);
        }
        if let Err(i) = self.small.binary_search(&e) {
            self.small.insert(i, e);
            if self.small.len() > SMALL {
                self.grow();
            }
        }
    }

    // The ordered set's paths out of line: the hot path (a client's few timers) stays small.
    #[cold]
    #[inline(never)]
    fn insert_large(&mut self, e: Entry<P>) {
        if let Some(set) = &mut self.large {
            set.insert(e);
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        self.large = Some(Box::new(self.small.drain(..).collect()));
    }

    #[cold]
    #[inline(never)]
    fn remove_large(&mut self, e: &Entry<P>) {
        if let Some(set) = &mut self.large {
            set.remove(e);
        }
    }

    fn remove(&mut self, e: &Entry<P>) {
        if self.large.is_some() {
            self.remove_large(e);
        } else if let [only] = self.small.as_slice() {
            // A client's one timer disarmed: nothing to search or move.
            if only == e {
                self.small.pop();
            }
        } else if let Ok(i) = self.small.binary_search(e) {
            self.small.remove(i);
        }
    }

    /// The earliest deadline.
    pub(super) fn next(&self) -> Option<Instant> {
        match &self.large {
            Some(set) => set.first().map(|(t, _)| *t),
            None => self.small.first().map(|(t, _)| *t),
        }
    }

    /// Calls `f` with the owner of every timer due at `now`, in deadline order.
    pub(super) fn due(&self, now: Instant, mut f: impl FnMut(&TimerKey<P>)) {
        match &self.large {
            Some(set) => set.iter().take_while(|(t, _)| *t <= now).for_each(|(_, k)| f(k)),
            None => self.small.iter().take_while(|(t, _)| *t <= now).for_each(|(_, k)| f(k)),
        }
    }

    /// Timers armed.
    /// The exchange whose timer is the only one due at `now`, if that is the case (the
    /// common wake-up: one retransmission), without a walk over the due timers.
    #[inline]
    pub(super) fn single_due_out(&self, now: Instant) -> Option<u64> {
        if self.large.is_some() {
            return None;
        }
        match self.small.as_slice() {
            [(t, TimerKey::Out(x)), rest @ ..] if *t <= now && !matches!(rest.first(), Some((u, _)) if *u <= now) => {
                Some(*x)
            }
            _ => None,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.large.as_ref().map_or(self.small.len(), |s| s.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same operations on the timers and on a plain ordered set give the same next
    /// deadline, due owners and count, below and above the switch to the ordered set.
    #[test]
    fn behaves_like_an_ordered_set() {
        let mut t = Timers::<u8>::new();
        let mut model = BTreeSet::new();
        let mut at: Vec<Option<Instant>> = vec![None; 80];
        let mut x = 0x9E37_79B9_u64;
        for step in 0..4000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let owner = ((x >> 33) % if step < 2000 { 20 } else { 80 }) as usize;
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
        assert!(t.large.is_some(), "the test reached the ordered set");
    }
}
