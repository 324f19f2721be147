//! Bounded message-deduplication cache: received CON/NON by (peer, Message ID).
//!
//! [`DedupCache`] here; what an entry keeps (the remembered reply, its body in a shared
//! store) in `entry`; the per-peer records and their lookup by peer in `peers`.

mod entry;
mod peers;

use std::collections::VecDeque;

use coapcc_cc::Instant;

use super::lifecycle::DuplicateCache;
use super::{ServerRequestId, TransmitKind};
use crate::Token;

use entry::{Bodies, Value};
pub(crate) use entry::{Cached, Entry, Kept, Reply};
use peers::{PeerTable, PeerTables};

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
    /// The bodies of the entries' replies.
    bodies: Bodies,
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
            bodies: Bodies::default(),
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

    /// Forget (`peer`, `mid`) (present: it was at the front of the order queue).
    fn remove(&mut self, peer: &P, mid: u16) {
        if let Some(t) = self.map.get_mut(peer) {
            if let Some(e) = t.remove(mid) {
                self.bodies.drop_value(e.value);
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

    // Out of line: only with lifetimes (`lifetime_mode = formula`).
    #[inline(never)]
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

    /// Whether (`peer`, `mid`) is remembered.
    #[cfg(test)]
    fn contains(&self, peer: &P, mid: u16) -> bool {
        self.get_entry(peer, mid).is_some()
    }

    /// The request pending under (`peer`, `mid`), if that message is remembered as one.
    pub(crate) fn pending_id(&self, peer: &P, mid: u16) -> Option<ServerRequestId> {
        match self.get_entry(peer, mid)?.value {
            Value::Pending(id) => Some(id),
            _ => None,
        }
    }

    /// Appends to `out` the datagram `reply` (kept by this cache) with token `echo` instead
    /// of its own (`None`: its own). The same bytes as the reply sent first, apart from the
    /// token (and the TKL nibble of the first byte when the token's length differs).
    #[inline]
    pub(crate) fn replay(&self, reply: &Kept, echo: Option<Token>, out: &mut Vec<u8>) {
        let token = echo.unwrap_or(reply.token);
        let body = self.bodies.bytes(reply.body);
        // The header and the token in one fixed-size copy (the token's unused bytes cut off).
        let mut head = [0u8; 4 + Token::MAX_LEN];
        head[..4].copy_from_slice(&reply.head);
        head[0] = (reply.head[0] & 0xF0) | token.len() as u8;
        head[4..].copy_from_slice(&token.padded());
        // A fixed-size copy of all twelve bytes (no call to `memcpy`), the token's unused
        // bytes then cut off.
        let at = out.len() + 4 + token.len();
        out.reserve(head.len() + body.len());
        out.extend_from_slice(&head);
        out.truncate(at);
        out.extend_from_slice(body);
    }

    /// Remember a new message. Evicts the oldest entry when full.
    pub(crate) fn insert(&mut self, peer: P, mid: u16, value: Cached, expires: Option<Instant>) {
        let value = self.bodies.value(value);
        self.insert_counted(peer, mid, value, expires, false);
    }

    /// A new server request of `peer`: remember it as pending (`id`) and count it among the
    /// peer's pending requests ([`DedupCache::pending`]), with one lookup of the peer.
    pub(crate) fn insert_pending(&mut self, peer: P, mid: u16, id: ServerRequestId, expires: Option<Instant>) {
        self.insert_counted(peer, mid, Value::Pending(id), expires, true);
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

    /// Request `mid` of `peer` was answered with the encoded reply `bytes` (of `kind`) and
    /// is finished: [`DedupCache::update`] with the reply and [`DedupCache::release`], with one
    /// lookup of the peer and no copy of the reply but its token and body.
    pub(crate) fn answered(&mut self, peer: &P, mid: u16, bytes: &[u8], kind: TransmitKind, token: Token) {
        if let Some(t) = self.map.get_mut(peer) {
            if let Some(e) = t.get_mut(mid) {
                let v = Value::Reply(self.bodies.keep_with(bytes, kind, token));
                self.bodies.set(e, v);
            }
            t.pending = t.pending.saturating_sub(1);
            if t.is_unused() {
                self.map.remove(peer);
            }
        }
    }

    fn insert_counted(&mut self, peer: P, mid: u16, value: Value, expires: Option<Instant>, pending: bool) {
        self.timed |= expires.is_some();
        if self.len < self.capacity {
            // Nothing to evict and the peer has a table: one lookup of the peer.
            if let Some(t) = self.map.get_mut(&peer) {
                t.pending += u32::from(pending);
                match t.get_mut(mid) {
                    Some(e) => {
                        self.bodies.set(e, value);
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
    fn insert_slow(&mut self, peer: P, mid: u16, value: Value, expires: Option<Instant>, pending: bool) {
        if let Some(t) = self.map.get_mut(&peer) {
            let pending_before = t.pending;
            if let Some(e) = t.get_mut(mid) {
                self.bodies.set(e, value);
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
                let t = PeerTable { last: Some((mid, entry)), pending: u32::from(pending), ..PeerTable::default() };
                self.map.insert(peer, t);
            }
        }
        self.len += 1;
    }

    /// Replace the value of a remembered message (no-op if it was evicted meanwhile).
    pub(crate) fn update(&mut self, peer: &P, mid: u16, value: Cached) {
        if let Some(e) = self.map.get_mut(peer).and_then(|t| t.get_mut(mid)) {
            let v = self.bodies.value(value);
            self.bodies.set(e, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::lifecycle::{DuplicateEntry, Remembered};
    use super::*;
    use crate::Message;

    #[test]
    fn bounded_and_oldest_first() {
        let mut c = DedupCache::<u32>::new(3);
        for mid in 0..10u16 {
            c.insert(1, mid, Cached::Silent, None);
            assert!(c.len() <= 3);
        }
        assert_eq!(c.evicted, 7);
        assert!(!c.contains(&1, 6));
        assert!(c.contains(&1, 7) && c.contains(&1, 9));
        assert_eq!(c.order.len(), c.len());
        assert_eq!(c.map.values().map(|t| t.len()).sum::<usize>(), c.len());
    }

    /// The reference: the datagram a duplicate got when the cache kept each reply's whole
    /// encoding (`bytes`) and patched the token in a copy of it.
    fn with_token_reference(bytes: &[u8], echo: Option<Token>) -> Vec<u8> {
        let tkl = usize::from(bytes[0] & 0x0F);
        let own = if bytes[1] == 0 { None } else { Token::new(&bytes[4..4 + tkl]).ok() };
        let mut out = Vec::new();
        match echo {
            Some(t) if Some(t) == own => out.extend_from_slice(bytes),
            Some(t) if t.len() == tkl => {
                out.extend_from_slice(bytes);
                out[4..4 + tkl].copy_from_slice(t.as_bytes());
            }
            Some(t) if t.as_bytes() != &bytes[4..4 + tkl] => {
                out.push((bytes[0] & 0xF0) | t.len() as u8);
                out.extend_from_slice(&bytes[1..4]);
                out.extend_from_slice(t.as_bytes());
                out.extend_from_slice(&bytes[4 + tkl..]);
            }
            _ => out.extend_from_slice(bytes),
        }
        out
    }

    /// What a duplicate of (1, `mid`) gets from `c`, with token `echo`.
    fn replayed(c: &DedupCache<u32>, mid: u16, echo: Option<Token>) -> Option<(Vec<u8>, TransmitKind)> {
        let r = c.get_entry(&1, mid)?.reply()?;
        let mut out = vec![0xAA];
        c.replay(&r, echo, &mut out);
        assert_eq!(out[0], 0xAA, "appends");
        Some((out.split_off(1), r.kind()))
    }

    #[test]
    fn replies_with_echoed_tokens() {
        use crate::{Code, MessageType};
        let t = |b: &[u8]| Token::new(b).unwrap();
        let mut m = Message::new(MessageType::Ack, Code::CONTENT, 7).with_token(t(&[1, 2]));
        m.payload = b"hi".to_vec();
        let mut c = DedupCache::<u32>::new(10);
        c.insert(1, 7, Cached::Reply(Reply::of(&m)), None);
        let e = c.get_entry(&1, 7).unwrap();
        assert_eq!(e.remembered(), Remembered::Answered(Some(t(&[1, 2]))));
        let with = |echo| replayed(&c, 7, echo).unwrap();
        assert_eq!(with(None), (m.to_bytes(), TransmitKind::Response));
        assert_eq!(with(Some(t(&[1, 2]))).0, m.to_bytes());
        for other in [t(&[1, 3]), t(&[9]), t(&[4, 5, 6, 7]), t(&[])] {
            let mut expected = m.clone();
            expected.token = other;
            assert_eq!(with(Some(other)).0, expected.to_bytes(), "{other:?}");
        }
        c.insert(1, 8, Cached::Reply(Reply::of(&Message::empty_ack(8))), None);
        assert_eq!(c.get_entry(&1, 8).unwrap().remembered(), Remembered::Answered(None));
        assert_eq!(replayed(&c, 8, None), Some((Message::empty_ack(8).to_bytes(), TransmitKind::EmptyAck)));
        c.insert(1, 9, Cached::Reply(Reply::of(&Message::reset(9))), None);
        assert_eq!(c.get_entry(&1, 9).unwrap().remembered(), Remembered::Answered(None));
        assert_eq!(replayed(&c, 9, None), Some((Message::reset(9).to_bytes(), TransmitKind::Reset)));
        c.insert(1, 10, Cached::Silent, None);
        assert_eq!(replayed(&c, 10, None), None);
    }

    /// Replies with equal bodies share one stored body; a body goes with its last reply
    /// (evicted, replaced, or its entry's value changed).
    #[test]
    fn bodies_are_shared_and_released() {
        use crate::{Code, MessageType};
        let reply = |mid: u16, tok: u8, payload: &[u8]| {
            let mut m = Message::new(MessageType::Ack, Code::CONTENT, mid).with_token(Token::new(&[tok]).unwrap());
            m.payload = payload.to_vec();
            m
        };
        let mut c = DedupCache::<u32>::new(3);
        for mid in 0..3u16 {
            c.insert(1, mid, Cached::Reply(Reply::of(&reply(mid, mid as u8, b"same"))), None);
        }
        assert_eq!(c.bodies.slots.len(), 1, "equal bodies are stored once");
        c.update(&1, 0, Cached::Reply(Reply::of(&reply(0, 0, b"other"))));
        assert_eq!(c.bodies.slots.len(), 2);
        assert_eq!(replayed(&c, 0, None).unwrap().0, reply(0, 0, b"other").to_bytes());
        assert_eq!(replayed(&c, 1, None).unwrap().0, reply(1, 1, b"same").to_bytes());
        // Evicts mid 0 (the oldest): its body "other" goes.
        c.insert(1, 3, Cached::Silent, None);
        assert_eq!(c.bodies.slots.len(), 1);
        c.update(&1, 1, Cached::Silent);
        c.insert_pending(1, 4, ServerRequestId(4), None);
        assert_eq!(c.pending_id(&1, 4), Some(ServerRequestId(4)));
        assert_eq!(c.bodies.slots.len(), 1, "mid 2 still refers to it");
        c.answered(&1, 4, &reply(4, 4, b"same").to_bytes(), TransmitKind::Response, Token::new(&[4]).unwrap());
        assert_eq!(c.pending_id(&1, 4), None);
        assert_eq!(replayed(&c, 4, Some(Token::new(&[9, 9]).unwrap())).unwrap().0, {
            let mut m = reply(4, 4, b"same");
            m.token = Token::new(&[9, 9]).unwrap();
            m.to_bytes()
        });
        for mid in 5..8u16 {
            c.insert(1, mid, Cached::Silent, None);
        }
        assert_eq!((c.len(), c.bodies.slots.len(), c.bodies.last), (3, 0, None), "every body released");
    }

    /// Feeds `msgs` (peer, Message ID) to a cache of `capacity` and checks after each that it
    /// holds exactly the last `capacity` distinct messages, oldest evicted first.
    fn holds_exactly_the_last(
        msgs: &[(u32, u16)],
        capacity: usize,
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let mut c = DedupCache::<u32>::new(capacity);
        let mut order: VecDeque<(u32, u16)> = VecDeque::new();
        for (i, &(peer, mid)) in msgs.iter().enumerate() {
            let present = order.contains(&(peer, mid));
            proptest::prop_assert_eq!(c.contains(&peer, mid), present);
            proptest::prop_assert_eq!(DuplicateCache::entry(&mut c, &(peer, mid)).is_some(), present);
            c.insert_pending(peer, mid, ServerRequestId(i as u64), None);
            if !present {
                if order.len() == capacity {
                    order.pop_front();
                }
                order.push_back((peer, mid));
            }
            proptest::prop_assert_eq!(c.len(), order.len());
            for p in 0..3 {
                for &(_, m) in msgs {
                    proptest::prop_assert_eq!(c.contains(&p, m), order.contains(&(p, m)), "peer {} mid {}", p, m);
                }
            }
            for &(p, m) in &order {
                proptest::prop_assert_eq!(c.pending_id(&p, m).is_some(), true);
            }
        }
        Ok(())
    }

    proptest::proptest! {
        /// Whatever the peers' Message IDs (in any order, wrapping, repeated), the cache holds
        /// exactly the last `capacity` distinct messages received, oldest evicted first, and
        /// finds each of them.
        #[test]
        fn finds_exactly_the_remembered_messages(
            msgs in proptest::collection::vec((0u32..3, proptest::prop_oneof![0u16..40, 65_500u16..=65_535, proptest::num::u16::ANY]), 1..200),
            capacity in 1usize..40,
        ) {
            holds_exactly_the_last(&msgs, capacity)?;
        }

        /// The same with Message IDs mostly counting upwards per peer (across the wrap from
        /// 65 535 to 0), now and then jumping or going back: the consecutive and indexed
        /// ways of finding a peer's older messages, and the switches between them.
        #[test]
        fn finds_mostly_consecutive_messages(
            steps in proptest::collection::vec((0u32..3, proptest::prop_oneof![8 => proptest::strategy::Just(1u16), 1 => 0u16..5, 1 => proptest::num::u16::ANY]), 1..300),
            capacity in 1usize..60,
        ) {
            let mut next = [65_520u16, 7, 65_535];
            let msgs: Vec<(u32, u16)> = steps
                .iter()
                .map(|&(p, step)| {
                    let m = next[p as usize];
                    next[p as usize] = m.wrapping_add(step);
                    (p, m)
                })
                .collect();
            holds_exactly_the_last(&msgs, capacity)?;
        }

        /// Whatever the replies (options, payloads, token lengths, Empty ACKs and RSTs),
        /// their order and the tokens duplicates carry, a duplicate gets the same datagram as
        /// from the reference, which kept each reply's whole encoding.
        #[test]
        fn replays_exactly_what_whole_encodings_did(
            replies in proptest::collection::vec(
                (0u8..4, proptest::collection::vec(0u8..=255, 0..=8), 0u8..3, proptest::collection::vec(0u8..4, 0..100)),
                1..40,
            ),
            echoes in proptest::collection::vec(proptest::option::of(proptest::collection::vec(0u8..=255, 0..=8)), 1..8),
            capacity in 1usize..24,
        ) {
            use crate::{option, Code, MessageType};
            let mut c = DedupCache::<u32>::new(capacity);
            let mut model: std::collections::BTreeMap<u16, Vec<u8>> = Default::default();
            for (i, (shape, tok, opts, payload)) in replies.iter().enumerate() {
                let mid = i as u16;
                let m = match shape {
                    0 => Message::empty_ack(mid),
                    1 => Message::reset(mid),
                    _ => {
                        let mut m = Message::new(MessageType::Ack, Code::CONTENT, mid).with_token(Token::new(tok).unwrap());
                        for k in 0..*opts {
                            m.options.add(option::CONTENT_FORMAT + u16::from(k), [k]);
                        }
                        // Few distinct payloads, so that bodies are shared and released.
                        m.payload = if *shape == 2 { payload.clone() } else { payload.iter().map(|b| b % 2).collect() };
                        m
                    }
                };
                if i % 3 == 0 {
                    c.insert_pending(1, mid, ServerRequestId(i as u64), None);
                    c.answered(&1, mid, &m.to_bytes(), super::super::transmit_kind(&m), m.token);
                } else {
                    c.insert(1, mid, Cached::Reply(Reply::of(&m)), None);
                }
                model.insert(mid, m.to_bytes());
                while model.len() > capacity {
                    model.pop_first();
                }
                for (mid, bytes) in &model {
                    for echo in &echoes {
                        let echo = echo.as_ref().map(|t| Token::new(t).unwrap());
                        let got = replayed(&c, *mid, echo).expect("remembered").0;
                        proptest::prop_assert_eq!(got, with_token_reference(bytes, echo));
                    }
                }
                let live: std::collections::BTreeSet<&[u8]> = model
                    .values()
                    .map(|b| &b[4 + usize::from(b[0] & 0x0F)..])
                    .filter(|b| !b.is_empty())
                    .collect();
                proptest::prop_assert!(c.bodies.slots.len() <= model.len());
                proptest::prop_assert!(c.bodies.slots.iter().all(|(_, b)| b.refs > 0 && live.contains(b.bytes.as_slice())));
            }
        }
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
        assert!(!c.contains(&1, 1), "expired at its new lifetime");
        c.insert(1, 2, Cached::Silent, Some(Instant::from_millis(10)));
        c.insert(1, 2, Cached::Silent, Some(Instant::from_millis(100)));
        c.expire(Instant::from_millis(15));
        assert!(c.contains(&1, 2), "kept until its new lifetime");
        assert_eq!(c.order.len(), c.len());
    }

    #[test]
    fn expiry() {
        let mut c = DedupCache::<u32>::new(10);
        c.insert(1, 1, Cached::Silent, Some(Instant::from_millis(10)));
        c.insert(1, 2, Cached::Silent, Some(Instant::from_millis(20)));
        c.insert(1, 3, Cached::Silent, None);
        c.expire(Instant::from_millis(15));
        assert!(!c.contains(&1, 1) && c.contains(&1, 2));
        c.expire(Instant::from_millis(25));
        assert_eq!(c.len(), 1);
        c.expire(Instant::from_millis(1_000_000));
        assert_eq!(c.len(), 1, "entries without lifetime stay");
    }
}
