//! Bounded message-deduplication cache: received CON/NON by (peer, Message ID).

use std::collections::{BTreeMap, VecDeque};

use coapcc_cc::Instant;

use super::hash::IdMap;
use super::lifecycle::{DuplicateCache, DuplicateEntry, Remembered};
use super::ServerRequestId;
use crate::{Message, Token};

/// What a duplicate of a remembered message gets.
#[derive(Clone, Debug)]
pub(crate) enum Cached {
    /// The request was handed to the application, which has not answered yet.
    Pending(ServerRequestId),
    /// Send this reply again (piggybacked response, Empty ACK or RST).
    Reply(Message),
    /// Nothing to send (a NON, or a message we did not answer).
    Silent,
}

pub(crate) struct Entry {
    value: Cached,
    expires: Option<Instant>,
    /// Duplicates answered from this entry.
    replies: u32,
}

impl DuplicateEntry for Entry {
    type Id = Token;

    /// A reply's identification is its token; an Empty ACK or an RST has none.
    fn remembered(&self) -> Remembered<Token> {
        match &self.value {
            Cached::Pending(_) => Remembered::Pending,
            Cached::Reply(m) => Remembered::Answered((!m.code.is_empty()).then_some(m.token)),
            Cached::Silent => Remembered::Silent,
        }
    }

    fn count_reply(&mut self) -> u32 {
        self.replies = self.replies.saturating_add(1);
        self.replies
    }
}

/// The protocol layer's view: (peer, Message ID) → what was done, with its lifetime.
impl<P: Clone + Ord> DuplicateCache for DedupCache<P> {
    type Key = (P, u16);
    type Entry = Entry;
    type Value = (Cached, Option<Instant>);

    fn entry(&mut self, (peer, mid): &(P, u16)) -> Option<&mut Entry> {
        self.map.get_mut(peer)?.get_mut(mid)
    }

    fn remember(&mut self, (peer, mid): (P, u16), (value, expires): (Cached, Option<Instant>)) {
        self.insert(peer, mid, value, expires);
    }
}

type MidMap = IdMap<u16, Entry>;

/// A map (peer, MID) → [`Cached`] with a capacity and per-entry expiry: per peer, a hash
/// table by Message ID (lookups cost O(log peers) + O(1), whatever the number of entries).
/// Insertion order is kept in a queue, so both expiry (entries are inserted with
/// non-decreasing `now`) and eviction of the oldest entry are cheap. Keys are never
/// re-inserted while present, so the queue and the tables always hold the same keys.
pub(crate) struct DedupCache<P> {
    map: BTreeMap<P, MidMap>,
    len: usize,
    order: VecDeque<(P, u16)>,
    capacity: usize,
    pub(crate) evicted: u64,
    pub(crate) expired: u64,
}

impl<P: Clone + Ord> DedupCache<P> {
    pub(crate) fn new(capacity: usize) -> Self {
        DedupCache {
            map: BTreeMap::new(),
            len: 0,
            order: VecDeque::new(),
            capacity: capacity.max(1),
            evicted: 0,
            expired: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn get_entry(&self, peer: &P, mid: u16) -> Option<&Entry> {
        self.map.get(peer)?.get(&mid)
    }

    fn get_entry_mut(&mut self, peer: &P, mid: u16) -> Option<&mut Entry> {
        self.map.get_mut(peer)?.get_mut(&mid)
    }

    /// Forget (`peer`, `mid`) (present: it was at the front of the order queue).
    fn remove(&mut self, peer: &P, mid: u16) {
        if let Some(t) = self.map.get_mut(peer) {
            if t.remove(&mid).is_some() {
                self.len -= 1;
            }
            if t.is_empty() {
                self.map.remove(peer);
            }
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Drop entries whose lifetime ended at or before `now`. Entries sit in insertion order
    /// and lifetimes are per message type, so stop at the first live entry of the front
    /// (a NON entry may outlive a later CON entry; it is then dropped a little late, which
    /// only errs on the safe side).
    pub(crate) fn expire(&mut self, now: Instant) {
        while let Some((peer, mid)) = self.order.front() {
            match self.get_entry(peer, *mid).and_then(|e| e.expires) {
                Some(t) if t <= now => {
                    let (peer, mid) = self.order.pop_front().expect("front exists");
                    self.remove(&peer, mid);
                    self.expired += 1;
                }
                _ => break,
            }
        }
    }

    pub(crate) fn get(&self, peer: &P, mid: u16) -> Option<&Cached> {
        self.get_entry(peer, mid).map(|e| &e.value)
    }

    /// Remember a new message. Evicts the oldest entry when full.
    pub(crate) fn insert(&mut self, peer: P, mid: u16, value: Cached, expires: Option<Instant>) {
        if let Some(e) = self.get_entry_mut(&peer, mid) {
            e.value = value;
            e.expires = expires;
            return;
        }
        while self.len >= self.capacity {
            match self.order.pop_front() {
                Some((p, m)) => {
                    self.remove(&p, m);
                    self.evicted += 1;
                }
                None => break,
            }
        }
        self.order.push_back((peer.clone(), mid));
        let entry = Entry { value, expires, replies: 0 };
        match self.map.get_mut(&peer) {
            Some(t) => {
                t.insert(mid, entry);
            }
            None => {
                let mut t = MidMap::default();
                t.insert(mid, entry);
                self.map.insert(peer, t);
            }
        }
        self.len += 1;
    }

    /// Replace the value of a remembered message (no-op if it was evicted meanwhile).
    pub(crate) fn update(&mut self, peer: &P, mid: u16, value: Cached) {
        if let Some(e) = self.get_entry_mut(peer, mid) {
            e.value = value;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_and_oldest_first() {
        let mut c = DedupCache::<u32>::new(3);
        for mid in 0..10u16 {
            c.insert(1, mid, Cached::Silent, None);
            assert!(c.len() <= 3);
        }
        assert_eq!(c.evicted, 7);
        assert!(c.get(&1, 6).is_none());
        assert!(c.get(&1, 7).is_some() && c.get(&1, 9).is_some());
        assert_eq!(c.order.len(), c.len());
        assert_eq!(c.map.values().map(|t| t.len()).sum::<usize>(), c.len());
    }

    #[test]
    fn expiry() {
        let mut c = DedupCache::<u32>::new(10);
        c.insert(1, 1, Cached::Silent, Some(Instant::from_millis(10)));
        c.insert(1, 2, Cached::Silent, Some(Instant::from_millis(20)));
        c.insert(1, 3, Cached::Silent, None);
        c.expire(Instant::from_millis(15));
        assert!(c.get(&1, 1).is_none() && c.get(&1, 2).is_some());
        c.expire(Instant::from_millis(25));
        assert_eq!(c.len(), 1);
        c.expire(Instant::from_millis(1_000_000));
        assert_eq!(c.len(), 1, "entries without lifetime stay");
    }
}
