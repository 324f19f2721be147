//! The cache's per-peer records ([`PeerTable`]: a peer's remembered messages by Message ID
//! and its pending requests) and their lookup by peer ([`PeerTables`]).

use std::collections::{BTreeMap, VecDeque};

use slab::Slab;

use super::super::hash::IdMap;
use super::Entry;

/// What the cache keeps per peer: its remembered messages by Message ID, and how many of its
/// server requests are pending (unanswered, or answered by a separate response still in
/// flight; the per-peer limit reads it). One record, so that a new request and its answer
/// each find both with one lookup of the peer. A record goes when both are empty.
///
/// The peer's latest message is kept in the record itself (`last`): the answer to a new
/// request and the duplicates of the request in progress (a client obeying NSTART = 1 has
/// one) find it next to the record. The older ones are kept oldest first in a ring (they
/// leave in that order: the cache evicts and expires its oldest entry first, and a peer's
/// entries are a subsequence of the cache's): a new message only appends to it, with no
/// table to rehash as it grows. While their Message IDs are consecutive (a client numbers
/// its messages upwards, RFC 7252 §4.4), a Message ID's place in the ring is its distance
/// from the first one's, and the record's first line says which IDs the ring holds, so a
/// new message is known absent without touching the ring; otherwise (IDs out of order,
/// skipped or repeated) a hash table by Message ID gives each one's place.
// `repr(C, align(64))`: what a duplicate of the latest message and a new message read first
// (the IDs the ring holds, the latest message) fills the record's first cache line.
#[derive(Default)]
#[repr(C, align(64))]
pub(super) struct PeerTable {
    /// Consecutive mode: the ring holds Message IDs `front`, `front + 1`, ... up to
    /// `next - 1` (wrapping; empty when equal).
    pub(super) front: u16,
    pub(super) next: u16,
    /// Indexed mode: the ring's Message IDs are not consecutive; `index` has their places.
    pub(super) indexed: bool,
    pub(super) last: Option<(u16, Entry)>,
    pub(super) pending: u32,
    /// Indexed mode: the sequence number of the ring's first entry (`index` maps a Message ID
    /// to its entry's sequence number).
    pub(super) head: u32,
    pub(super) ring: VecDeque<(u16, Entry)>,
    pub(super) index: IdMap<u16, u32>,
}

impl PeerTable {
    pub(super) fn is_unused(&self) -> bool {
        self.pending == 0 && self.last.is_none() && self.ring.is_empty()
    }

    #[inline]
    pub(super) fn get(&self, mid: u16) -> Option<&Entry> {
        match &self.last {
            Some((m, e)) if *m == mid => Some(e),
            _ => self.older(mid).map(|i| &self.ring[i].1),
        }
    }

    #[inline]
    pub(super) fn get_mut(&mut self, mid: u16) -> Option<&mut Entry> {
        let older = match &self.last {
            Some((m, _)) if *m == mid => None,
            _ => Some(self.older(mid)),
        };
        match older {
            None => self.last.as_mut().map(|(_, e)| e),
            Some(i) => i.map(|i| &mut self.ring[i].1),
        }
    }

    /// The place of `mid` in the ring of older messages, if there.
    #[inline]
    fn older(&self, mid: u16) -> Option<usize> {
        if self.indexed {
            return self.indexed_place(mid);
        }
        let i = mid.wrapping_sub(self.front);
        (i < self.next.wrapping_sub(self.front)).then_some(usize::from(i))
    }

    // Out of line: a client numbering its messages upwards never needs it.
    #[cold]
    #[inline(never)]
    fn indexed_place(&self, mid: u16) -> Option<usize> {
        let seq = *self.index.get(&mid)?;
        Some(seq.wrapping_sub(self.head) as usize)
    }

    /// Forget `mid`; its entry, if it was there.
    pub(super) fn remove(&mut self, mid: u16) -> Option<Entry> {
        if matches!(&self.last, Some((m, _)) if *m == mid) {
            return self.last.take().map(|(_, e)| e);
        }
        match self.older(mid)? {
            // The oldest (the cache removes its oldest entry, so always).
            0 => self.pop_older().map(|(_, e)| e),
            i => self.remove_older_at(i),
        }
    }

    /// Remember `mid` (absent) as the latest; the previous latest moves to the ring.
    pub(super) fn insert_new(&mut self, mid: u16, entry: Entry) {
        if let Some((m, e)) = self.last.replace((mid, entry)) {
            self.push_older(m, e);
        }
    }

    #[inline]
    fn push_older(&mut self, mid: u16, entry: Entry) {
        if self.ring.len() == self.ring.capacity() {
            self.grow();
        }
        if !self.indexed {
            if self.ring.is_empty() {
                (self.front, self.next) = (mid, mid.wrapping_add(1));
                self.ring.push_back((mid, entry));
                return;
            }
            // The next ID, and room for it (65 536 IDs would read as none).
            if mid == self.next && mid.wrapping_add(1) != self.front {
                self.next = mid.wrapping_add(1);
                self.ring.push_back((mid, entry));
                return;
            }
            self.reindex();
        }
        let seq = self.head.wrapping_add(self.ring.len() as u32);
        self.index.insert(mid, seq);
        self.ring.push_back((mid, entry));
    }

    /// Room for three times as many more older messages (the ring grows fourfold: fewer
    /// copies of its entries than doubling).
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        self.ring.reserve(3 * self.ring.len().max(1));
    }

    /// Take the oldest of the older messages.
    fn pop_older(&mut self) -> Option<(u16, Entry)> {
        let (m, e) = self.ring.pop_front()?;
        if self.indexed {
            self.index.remove(&m);
            self.head = self.head.wrapping_add(1);
        } else {
            self.front = self.front.wrapping_add(1);
        }
        if self.ring.is_empty() {
            // Consecutive mode again, for the next messages.
            (self.indexed, self.head, self.front, self.next) = (false, 0, 0, 0);
            self.index.clear();
        }
        Some((m, e))
    }

    /// Remove the older message at place `i` (not the oldest: never, as the cache removes
    /// its oldest entries; kept general).
    #[cold]
    #[inline(never)]
    fn remove_older_at(&mut self, i: usize) -> Option<Entry> {
        let (_, e) = self.ring.remove(i)?;
        self.reindex();
        Some(e)
    }

    /// Switch to (or rebuild) indexed mode: each older message's place by Message ID.
    #[cold]
    #[inline(never)]
    fn reindex(&mut self) {
        self.index.clear();
        self.head = 0;
        for (i, (m, _)) in self.ring.iter().enumerate() {
            self.index.insert(*m, i as u32);
        }
        self.indexed = true;
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.ring.len() + usize::from(self.last.is_some())
    }
}

/// The per-peer records, by peer: an ordered map from peer to a slot of a slab of records,
/// with a direct-mapped cache of recently used peers in front (by a fixed hash of the peer).
/// A server with hundreds of clients finds a peer's record in the cache with one probe
/// instead of walking the tree; a peer missing from the cache (never seen, or its slot taken
/// by another peer) costs the ordered map's O(log n) lookup, whatever the peers' addresses.
/// Never iterated in a run (the records are found by peer only).
pub(super) struct PeerTables<P> {
    map: BTreeMap<P, u32>,
    /// The records (a removed record's slot is reused first).
    slots: Slab<PeerTable>,
    /// Direct-mapped: (peer, slot) by hash; empty until the first record, then at least
    /// four times as many entries as records (up to [`MAX_RECENT`]).
    recent: Vec<Option<(P, u32)>>,
}

/// Most entries of the recent-peer cache.
const MAX_RECENT: usize = 1 << 16;

impl<P: Clone + Ord + core::hash::Hash> PeerTables<P> {
    pub(super) fn new() -> Self {
        PeerTables { map: BTreeMap::new(), slots: Slab::new(), recent: Vec::new() }
    }

    #[inline]
    fn hash(&self, peer: &P) -> usize {
        use core::hash::{BuildHasher, BuildHasherDefault};
        let h = BuildHasherDefault::<super::super::hash::IdHasher>::default().hash_one(peer);
        (h >> 32) as usize & (self.recent.len() - 1)
    }

    /// The slot of `peer`'s record, if any (from the cache when it holds `peer`).
    #[inline]
    fn slot(&self, peer: &P) -> Option<usize> {
        if self.recent.is_empty() {
            return None;
        }
        match &self.recent[self.hash(peer)] {
            Some((p, i)) if p == peer => Some(*i as usize),
            _ => self.slot_in_map(peer).map(|i| i as usize),
        }
    }

    pub(super) fn get(&self, peer: &P) -> Option<&PeerTable> {
        self.slot(peer).map(|i| &self.slots[i])
    }

    /// `peer`'s record; a lookup that missed the cache puts `peer` there.
    #[inline]
    pub(super) fn get_mut(&mut self, peer: &P) -> Option<&mut PeerTable> {
        if self.recent.is_empty() {
            return None;
        }
        let h = self.hash(peer);
        let i = match &self.recent[h] {
            Some((p, i)) if p == peer => *i,
            _ => self.cache_from_map(h, peer)?,
        };
        Some(&mut self.slots[i as usize])
    }

    // The ordered map's lookups, out of line: most lookups hit the cache, and the tree walk
    // inlined into each would spread the server's per-request code over more cache lines.
    #[cold]
    #[inline(never)]
    fn slot_in_map(&self, peer: &P) -> Option<u32> {
        self.map.get(peer).copied()
    }

    /// `peer`'s slot from the ordered map, put in the cache at `h`.
    #[cold]
    #[inline(never)]
    fn cache_from_map(&mut self, h: usize, peer: &P) -> Option<u32> {
        let i = *self.map.get(peer)?;
        self.recent[h] = Some((peer.clone(), i));
        Some(i)
    }

    /// Adds `peer`'s record (absent).
    pub(super) fn insert(&mut self, peer: P, table: PeerTable) {
        let i = self.slots.insert(table) as u32;
        self.map.insert(peer.clone(), i);
        if self.recent.len() < MAX_RECENT && self.recent.len() < 4 * self.map.len() {
            // Grown (emptied: the entries are found again through the map).
            let n = (4 * self.map.len()).next_power_of_two().clamp(64, MAX_RECENT);
            self.recent = vec![None; n];
        }
        let h = self.hash(&peer);
        self.recent[h] = Some((peer, i));
    }

    #[inline(never)]
    pub(super) fn remove(&mut self, peer: &P) {
        if let Some(i) = self.map.remove(peer) {
            self.slots.remove(i as usize);
            let h = self.hash(peer);
            if matches!(&self.recent[h], Some((p, _)) if p == peer) {
                self.recent[h] = None;
            }
        }
    }

    #[cfg(test)]
    pub(super) fn values(&self) -> impl Iterator<Item = &PeerTable> {
        self.map.values().map(|i| &self.slots[*i as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The records found through the recent-peer cache are those of an ordered map, under
    /// insertions and removals of many peers (the cache's entries collide and are replaced).
    #[test]
    fn peer_tables_behave_like_an_ordered_map() {
        let mut t = PeerTables::<u32>::new();
        let mut model = BTreeMap::new();
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        for step in 0..20_000u32 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let p = ((x >> 33) % 700) as u32;
            match (x >> 20) % 4 {
                0 => {
                    t.remove(&p);
                    model.remove(&p);
                }
                1 if !model.contains_key(&p) => {
                    t.insert(p, PeerTable { pending: step, ..PeerTable::default() });
                    model.insert(p, step);
                }
                _ => {
                    if let Some(r) = t.get_mut(&p) {
                        r.pending += 1;
                    }
                    if let Some(v) = model.get_mut(&p) {
                        *v += 1;
                    }
                }
            }
            let q = ((x >> 40) % 700) as u32;
            assert_eq!(t.get(&q).map(|r| r.pending), model.get(&q).copied());
            assert_eq!(t.get(&p).map(|r| r.pending), model.get(&p).copied());
        }
        assert!(t.values().map(|r| r.pending).eq(model.values().copied()));
        assert!(t.map.values().all(|&i| i < 700), "slots are reused");
    }
}
