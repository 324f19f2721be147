//! Bounded message-deduplication cache: received CON/NON by (peer, Message ID).

use std::collections::{BTreeMap, VecDeque};

use coapcc_cc::Instant;
use slab::Slab;

use super::hash::IdMap;
use super::lifecycle::{DuplicateCache, DuplicateEntry, Remembered};
use super::{ServerRequestId, TransmitKind};
use crate::small::SmallBytes;
use crate::{Message, Token};

/// What a duplicate of a remembered message gets.
#[derive(Clone, Debug)]
pub(crate) enum Cached {
    /// The request was handed to the application, which has not answered yet.
    Pending(ServerRequestId),
    /// Send this reply again (piggybacked response, Empty ACK or RST).
    Reply(Reply),
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
            Cached::Reply(r) => Remembered::Answered(r.token()),
            Cached::Silent => Remembered::Silent,
        }
    }

    fn count_reply(&mut self) -> u32 {
        self.replies = self.replies.saturating_add(1);
        self.replies
    }
}

impl Entry {
    /// Appends to `out` the datagram that answers a duplicate of this entry's message,
    /// carrying token `echo` (`None`: the reply's own), if the entry holds a reply; returns
    /// what it is.
    pub(crate) fn replay(&self, echo: Option<Token>, out: &mut Vec<u8>) -> Option<TransmitKind> {
        match &self.value {
            Cached::Reply(r) => {
                r.with_token(echo, out);
                Some(r.kind)
            }
            _ => None,
        }
    }
}

/// Replies up to this many bytes are kept inside the cache entry (a piggybacked answer of a
/// few dozen bytes: no allocation to remember it, none to free, and a duplicate reads it
/// next to the entry); longer ones on the heap.
const REPLY_INLINE: usize = 80;

/// A remembered reply, encoded once: duplicates get a copy of the datagram.
#[derive(Clone, Debug)]
pub(crate) struct Reply {
    bytes: SmallBytes<REPLY_INLINE>,
    kind: TransmitKind,
    /// Its token, read once from `bytes` ([`Reply::read_token`]): every duplicate asks.
    token: Option<Token>,
}

impl Reply {
    /// The reply `msg`, encoded.
    pub(crate) fn of(msg: &Message) -> Reply {
        Reply::encoded(&msg.to_bytes(), super::transmit_kind(msg))
    }

    /// A copy of a reply already encoded (`bytes`, of `kind`).
    #[inline]
    pub(crate) fn encoded(bytes: &[u8], kind: TransmitKind) -> Reply {
        let token = Reply::read_token(bytes);
        Reply { bytes: SmallBytes::from_slice(bytes), kind, token }
    }

    /// What it is.
    pub(crate) fn kind(&self) -> TransmitKind {
        self.kind
    }

    /// The reply's token, or `None` for a message without identification (an Empty ACK or
    /// an RST: code 0.00).
    fn token(&self) -> Option<Token> {
        self.token
    }

    fn read_token(bytes: &[u8]) -> Option<Token> {
        if bytes[1] == 0 {
            return None;
        }
        Token::new(&bytes[4..4 + usize::from(bytes[0] & 0x0F)]).ok()
    }

    /// Appends the datagram with token `echo` instead of its own to `out` (the token follows
    /// the 4-byte header, RFC 7252 §3; the TKL nibble is in the first byte).
    fn with_token(&self, echo: Option<Token>, out: &mut Vec<u8>) {
        let bytes = self.bytes.as_slice();
        let tkl = usize::from(bytes[0] & 0x0F);
        match echo {
            Some(t) if Some(t) == self.token => out.extend_from_slice(bytes),
            // The common case (copy identification: the same length, another last byte):
            // one copy, then the token written over in place.
            Some(t) if t.len() == tkl => {
                let at = out.len() + 4;
                out.extend_from_slice(bytes);
                out[at..at + tkl].copy_from_slice(t.as_bytes());
            }
            Some(t) if t.as_bytes() != &bytes[4..4 + tkl] => {
                out.reserve(bytes.len() + t.len() - tkl.min(t.len()));
                out.push((bytes[0] & 0xF0) | t.len() as u8);
                out.extend_from_slice(&bytes[1..4]);
                out.extend_from_slice(t.as_bytes());
                out.extend_from_slice(&bytes[4 + tkl..]);
            }
            _ => out.extend_from_slice(bytes),
        }
    }
}

/// The protocol layer's view: (peer, Message ID) → what was done, with its lifetime.
impl<P: Clone + Ord + core::hash::Hash> DuplicateCache for DedupCache<P> {
    type Key = (P, u16);
    type Entry = Entry;
    type Value = (Cached, Option<Instant>);

    fn entry(&mut self, (peer, mid): &(P, u16)) -> Option<&mut Entry> {
        self.map.get_mut(peer)?.get_mut(*mid)
    }

    fn remember(&mut self, (peer, mid): (P, u16), (value, expires): (Cached, Option<Instant>)) {
        self.insert(peer, mid, value, expires);
    }
}

type MidMap = IdMap<u16, Entry>;

/// What the cache keeps per peer: its remembered messages by Message ID, and how many of its
/// server requests are pending (unanswered, or answered by a separate response still in
/// flight; the per-peer limit reads it). One record, so that a new request and its answer
/// each find both with one lookup of the peer. A record goes when both are empty.
///
/// The peer's latest message is kept in the record itself (`last`), the others in a hash
/// table: the answer to a new request and the duplicates of the request in progress (a
/// client obeying NSTART = 1 has one) find it next to the record, without loading the
/// table's control bytes and bucket (cold in a server with many clients).
#[derive(Default)]
struct PeerTable {
    last: Option<(u16, Entry)>,
    pending: u32,
    mids: MidMap,
}

impl PeerTable {
    fn is_unused(&self) -> bool {
        self.pending == 0 && self.last.is_none() && self.mids.is_empty()
    }

    #[inline]
    fn get(&self, mid: u16) -> Option<&Entry> {
        match &self.last {
            Some((m, e)) if *m == mid => Some(e),
            _ => Self::older(&self.mids, mid),
        }
    }

    #[inline]
    fn get_mut(&mut self, mid: u16) -> Option<&mut Entry> {
        match &mut self.last {
            Some((m, e)) if *m == mid => Some(e),
            _ => Self::older_mut(&mut self.mids, mid),
        }
    }

    // The table of older messages, out of line: with a client obeying NSTART and a FIFO
    // path the latest message is the one asked for (its answer, its duplicates).
    #[inline(never)]
    fn older(mids: &MidMap, mid: u16) -> Option<&Entry> {
        mids.get(&mid)
    }

    #[inline(never)]
    fn older_mut(mids: &mut MidMap, mid: u16) -> Option<&mut Entry> {
        mids.get_mut(&mid)
    }

    /// Forget `mid`; whether it was there.
    fn remove(&mut self, mid: u16) -> bool {
        match &self.last {
            Some((m, _)) if *m == mid => {
                self.last = None;
                true
            }
            _ => self.mids.remove(&mid).is_some(),
        }
    }

    /// Remember `mid` (absent) as the latest; the previous latest moves to the table.
    fn insert_new(&mut self, mid: u16, entry: Entry) {
        if let Some((m, e)) = self.last.replace((mid, entry)) {
            self.mids.insert(m, e);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.mids.len() + usize::from(self.last.is_some())
    }
}

/// The per-peer records, by peer: an ordered map from peer to a slot of a slab of records,
/// with a direct-mapped cache of recently used peers in front (by a fixed hash of the peer).
/// A server with hundreds of clients finds a peer's record in the cache with one probe
/// instead of walking the tree; a peer missing from the cache (never seen, or its slot taken
/// by another peer) costs the ordered map's O(log n) lookup, whatever the peers' addresses.
/// Never iterated in a run (the records are found by peer only).
struct PeerTables<P> {
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
    fn new() -> Self {
        PeerTables { map: BTreeMap::new(), slots: Slab::new(), recent: Vec::new() }
    }

    #[inline]
    fn hash(&self, peer: &P) -> usize {
        use core::hash::{BuildHasher, BuildHasherDefault};
        let h = BuildHasherDefault::<super::hash::IdHasher>::default().hash_one(peer);
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

    fn get(&self, peer: &P) -> Option<&PeerTable> {
        self.slot(peer).map(|i| &self.slots[i])
    }

    /// `peer`'s record; a lookup that missed the cache puts `peer` there.
    #[inline]
    fn get_mut(&mut self, peer: &P) -> Option<&mut PeerTable> {
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
    fn insert(&mut self, peer: P, table: PeerTable) {
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
    fn remove(&mut self, peer: &P) {
        if let Some(i) = self.map.remove(peer) {
            self.slots.remove(i as usize);
            let h = self.hash(peer);
            if matches!(&self.recent[h], Some((p, _)) if p == peer) {
                self.recent[h] = None;
            }
        }
    }

    #[cfg(test)]
    fn values(&self) -> impl Iterator<Item = &PeerTable> {
        self.map.values().map(|i| &self.slots[*i as usize])
    }
}

/// A map (peer, MID) → [`Cached`] with a capacity and per-entry expiry: per peer, a hash
/// table by Message ID (lookups cost O(log peers) + O(1), whatever the number of entries).
/// Insertion order is kept in a queue, so both expiry (entries are inserted with
/// non-decreasing `now`) and eviction of the oldest entry are cheap. Keys are never
/// re-inserted while present, so the queue and the tables always hold the same keys.
// `repr(C)`: `timed`, which every datagram and wake-up reads (also at a client, whose cache
// is empty), comes first, next to the endpoint's other hot fields.
#[repr(C)]
pub(crate) struct DedupCache<P> {
    /// Whether any entry was inserted with a lifetime (otherwise nothing ever expires).
    timed: bool,
    /// Some entry's lifetime changed after insertion: the lifetimes in `order` are then not
    /// trusted and expiry looks every front entry up.
    restamped: bool,
    len: usize,
    capacity: usize,
    map: PeerTables<P>,
    /// Keys in insertion order, with the lifetime each had when inserted (so that expiry
    /// reads the front's lifetime without a lookup).
    order: VecDeque<(P, u16, Option<Instant>)>,
    pub(crate) evicted: u64,
    pub(crate) expired: u64,
}

impl<P: Clone + Ord + core::hash::Hash> DedupCache<P> {
    pub(crate) fn new(capacity: usize) -> Self {
        DedupCache {
            map: PeerTables::new(),
            len: 0,
            order: VecDeque::new(),
            restamped: false,
            capacity: capacity.max(1),
            evicted: 0,
            expired: 0,
            timed: false,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn get_entry(&self, peer: &P, mid: u16) -> Option<&Entry> {
        self.map.get(peer)?.get(mid)
    }

    fn get_entry_mut(&mut self, peer: &P, mid: u16) -> Option<&mut Entry> {
        self.map.get_mut(peer)?.get_mut(mid)
    }

    /// Forget (`peer`, `mid`) (present: it was at the front of the order queue).
    fn remove(&mut self, peer: &P, mid: u16) {
        if let Some(t) = self.map.get_mut(peer) {
            if t.remove(mid) {
                self.len -= 1;
            }
            if t.is_unused() {
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
    #[inline]
    pub(crate) fn expire(&mut self, now: Instant) {
        if self.timed {
            self.expire_timed(now);
        }
    }

    fn expire_timed(&mut self, now: Instant) {
        while let Some((peer, mid, queued)) = self.order.front() {
            if !self.restamped && !matches!(queued, Some(t) if *t <= now) {
                // The front's lifetime as inserted, which is its lifetime: still alive.
                break;
            }
            match self.get_entry(peer, *mid).and_then(|e| e.expires) {
                Some(t) if t <= now => {
                    let (peer, mid, _) = self.order.pop_front().expect("front exists");
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
        self.insert_counted(peer, mid, value, expires, false);
    }

    /// A new server request of `peer`: remember it as pending (`id`) and count it among the
    /// peer's pending requests ([`DedupCache::pending`]), with one lookup of the peer.
    pub(crate) fn insert_pending(&mut self, peer: P, mid: u16, id: ServerRequestId, expires: Option<Instant>) {
        self.insert_counted(peer, mid, Cached::Pending(id), expires, true);
    }

    /// How many server requests of `peer` are pending.
    pub(crate) fn pending(&self, peer: &P) -> u32 {
        self.map.get(peer).map_or(0, |t| t.pending)
    }

    /// One of `peer`'s pending server requests finished.
    pub(crate) fn release(&mut self, peer: &P) {
        if let Some(t) = self.map.get_mut(peer) {
            t.pending = t.pending.saturating_sub(1);
            if t.is_unused() {
                self.map.remove(peer);
            }
        }
    }

    /// [`DedupCache::update`] and, if `release`, [`DedupCache::release`], with one lookup of
    /// the peer.
    pub(crate) fn update_release(&mut self, peer: &P, mid: u16, value: Cached, release: bool) {
        if let Some(t) = self.map.get_mut(peer) {
            if let Some(e) = t.get_mut(mid) {
                e.value = value;
            }
            if release {
                t.pending = t.pending.saturating_sub(1);
                if t.is_unused() {
                    self.map.remove(peer);
                }
            }
        }
    }

    fn insert_counted(&mut self, peer: P, mid: u16, value: Cached, expires: Option<Instant>, pending: bool) {
        self.timed |= expires.is_some();
        if self.len < self.capacity {
            // Nothing to evict and the peer has a table: one lookup of the peer.
            if let Some(t) = self.map.get_mut(&peer) {
                t.pending += u32::from(pending);
                match t.get_mut(mid) {
                    Some(e) => {
                        e.value = value;
                        if e.expires != expires {
                            e.expires = expires;
                            self.restamped = true;
                        }
                    }
                    None => {
                        t.insert_new(mid, Entry { value, expires, replies: 0 });
                        self.order.push_back((peer, mid, expires));
                        self.len += 1;
                    }
                }
                return;
            }
        }
        self.insert_slow(peer, mid, value, expires, pending);
    }

    /// [`DedupCache::insert_counted`] when the cache is full or `peer` has no table yet (out
    /// of line: a server's steady state is neither).
    #[inline(never)]
    fn insert_slow(&mut self, peer: P, mid: u16, value: Cached, expires: Option<Instant>, pending: bool) {
        if let Some(t) = self.map.get_mut(&peer) {
            let pending_before = t.pending;
            if let Some(e) = t.get_mut(mid) {
                e.value = value;
                if e.expires != expires {
                    e.expires = expires;
                    self.restamped = true;
                }
                t.pending = pending_before + u32::from(pending);
                return;
            }
        }
        while self.len >= self.capacity {
            match self.order.pop_front() {
                Some((p, m, _)) => {
                    self.remove(&p, m);
                    self.evicted += 1;
                }
                None => break,
            }
        }
        self.order.push_back((peer.clone(), mid, expires));
        let entry = Entry { value, expires, replies: 0 };
        match self.map.get_mut(&peer) {
            Some(t) => {
                t.insert_new(mid, entry);
                t.pending += u32::from(pending);
            }
            None => {
                let t = PeerTable { last: Some((mid, entry)), pending: u32::from(pending), mids: MidMap::default() };
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
    fn replies_with_echoed_tokens() {
        use crate::{Code, MessageType};
        let t = |b: &[u8]| Token::new(b).unwrap();
        let mut m = Message::new(MessageType::Ack, Code::CONTENT, 7).with_token(t(&[1, 2]));
        m.payload = b"hi".to_vec();
        let r = Reply::of(&m);
        assert_eq!(r.token(), Some(t(&[1, 2])));
        assert_eq!(r.kind(), TransmitKind::Response);
        let with = |echo| {
            let mut out = vec![0xAA];
            r.with_token(echo, &mut out);
            assert_eq!(out[0], 0xAA, "appends");
            out.split_off(1)
        };
        assert_eq!(with(None), m.to_bytes());
        assert_eq!(with(Some(t(&[1, 2]))), m.to_bytes());
        for other in [t(&[1, 3]), t(&[9]), t(&[4, 5, 6, 7]), t(&[])] {
            let mut expected = m.clone();
            expected.token = other;
            assert_eq!(with(Some(other)), expected.to_bytes(), "{other:?}");
        }
        let ack = Reply::of(&Message::empty_ack(7));
        assert_eq!((ack.token(), ack.kind()), (None, TransmitKind::EmptyAck));
        assert_eq!(Reply::of(&Message::reset(7)).token(), None);
    }

    #[test]
    fn without_lifetimes_nothing_expires() {
        let mut c = DedupCache::<u32>::new(10);
        c.insert(1, 1, Cached::Silent, None);
        c.expire(Instant::from_millis(u64::MAX / 2_000_000));
        assert_eq!((c.len(), c.expired), (1, 0));
    }

    #[test]
    fn a_changed_lifetime_is_honoured() {
        let mut c = DedupCache::<u32>::new(10);
        c.insert(1, 1, Cached::Silent, Some(Instant::from_millis(100)));
        c.insert(1, 1, Cached::Silent, Some(Instant::from_millis(10)));
        c.expire(Instant::from_millis(15));
        assert!(c.get(&1, 1).is_none(), "expired at its new lifetime");
        c.insert(1, 2, Cached::Silent, Some(Instant::from_millis(10)));
        c.insert(1, 2, Cached::Silent, Some(Instant::from_millis(100)));
        c.expire(Instant::from_millis(15));
        assert!(c.get(&1, 2).is_some(), "kept until its new lifetime");
        assert_eq!(c.order.len(), c.len());
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
