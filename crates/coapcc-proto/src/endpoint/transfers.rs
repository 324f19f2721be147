//! Server-side block-wise transfer state (RFC 7959), kept per peer and bounded.
//!
//! Two kinds of state outlive a single request:
//!
//! - an **upload**: the request body being received in Block1 blocks (RFC 7959 §2.5);
//! - a **kept representation**: the answer to a request that changed state (any method but
//!   GET and FETCH) that is larger than one block. Its first block goes out with the answer;
//!   the later blocks are fetched by the client with the same request and a Block2 option
//!   (RFC 7959 §2.7, §3.3). They are served from the kept copy and never reach the resource
//!   again: asking a POST resource again with the payload-less follow-up would re-run it (the
//!   `/echo` resource stored an empty body that way).
//!
//! Both belong to their **peer** and to the request they continue, named by its
//! [`resource_key`] (method and options other than the block-wise and payload-describing
//! ones). Not the token: RFC 7959 lets a client choose a new token for each block (libcoap and
//! aiocoap do), and §2.5 says blocks belong together by endpoint and resource (a new Block1
//! sequence from the same endpoint to the same resource restarts it).
//!
//! Bounds ([`TransferLimits`]): at most `max_transfers` entries in all, `max_per_peer` per
//! peer, `max_bytes` bytes of bodies and representations in all, `max_body_size` bytes per
//! upload. When a peer exceeds its own share, its own least recently used entry makes room;
//! when the global budget is used up, a new transfer is refused with 5.03 Service Unavailable
//! and Max-Age: **another peer's active transfer is never evicted**. An entry not used for
//! `timeout` is dropped (libcoap expires partial block-wise state after MAX_TRANSMIT_WAIT,
//! `src/coap_block.c`; Californium after `BLOCKWISE_STATUS_LIFETIME`, `CoapConfig.java`).
//!
//! [`Transfers`] is sans-IO and transport-neutral: the UDP [`Endpoint`](super::Endpoint) keys it
//! by peer address, the CoAP-over-TCP server of `coapcc-net` by connection.

use std::collections::BTreeMap;

use core::time::Duration;

use coapcc_cc::Instant;

use super::Response;
use crate::{option, Block, Code, Options};

/// Bounds of the block-wise transfer state ([`Transfers`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransferLimits {
    /// Most uploads and kept representations at once, over all peers. Default 64.
    pub max_transfers: usize,
    /// Most of them for one peer; a peer over its share replaces its own least recently used
    /// one. Default 4.
    pub max_per_peer: usize,
    /// Largest request body reassembled from Block1 blocks; beyond, 4.13 Request Entity Too
    /// Large with Size1. Default 1 MiB.
    pub max_body_size: usize,
    /// Most bytes of bodies and kept representations at once, over all peers; beyond, new
    /// blocks get 5.03. Default 8 MiB.
    pub max_bytes: usize,
    /// An upload or kept representation not used for this long is dropped. Default 93 s
    /// (MAX_TRANSMIT_WAIT with RFC 7252's parameters: a client retransmitting a block for as
    /// long as RFC 7252 allows still finds its state).
    pub timeout: Duration,
    /// Max-Age, seconds, of the 5.03 answer when the global budget is used up. Default 2.
    pub busy_max_age_s: u32,
    /// A kept representation whose last block was served stays this long, for a client that
    /// asks for a block again after a lost answer (with a new Message ID, so the duplicate
    /// cache does not answer it); it is no longer active, so a new transfer of any peer may
    /// take its place. Default 8 s (libcoap keeps a block-wise answer 8 s after its last block,
    /// `src/coap_block.c`).
    pub linger: Duration,
}

impl Default for TransferLimits {
    fn default() -> Self {
        TransferLimits {
            max_transfers: 64,
            max_per_peer: 4,
            max_body_size: 1 << 20,
            max_bytes: 8 << 20,
            timeout: Duration::from_secs(93),
            busy_max_age_s: 2,
            linger: Duration::from_secs(8),
        }
    }
}

/// What a server does with one Block1 request ([`Transfers::upload_block`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Answer now with this response (2.31 Continue, or 4.00, 4.08, 4.13, 5.03).
    Answer(Response),
    /// The body is complete: hand the request to the application with it.
    Complete(Vec<u8>),
}

/// Counters of a [`Transfers`] table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransferStats {
    /// Uploads completed (the whole body reached the application).
    pub uploads_completed: u64,
    /// New transfers refused because the global budget was used up (5.03).
    pub refused: u64,
    /// Entries a peer replaced to stay within its own share.
    pub replaced: u64,
    /// Entries dropped after `timeout` without use.
    pub expired: u64,
    /// Block2 requests served from a kept representation.
    pub follow_ups: u64,
}

enum State {
    Upload(Vec<u8>),
    Kept(Response),
}

impl State {
    fn bytes(&self) -> usize {
        match self {
            State::Upload(b) => b.len(),
            State::Kept(r) => r.payload.len(),
        }
    }
}

struct Entry {
    state: State,
    last: Instant,
    /// A kept representation whose last block was served (lingering, not active).
    done: bool,
}

/// Uploads and kept representations of a server, by peer and [`resource_key`], within
/// [`TransferLimits`]. See the [module documentation](self).
pub struct Transfers<P> {
    limits: TransferLimits,
    table: BTreeMap<(P, Vec<u8>), Entry>,
    per_peer: BTreeMap<P, usize>,
    bytes: usize,
    stats: TransferStats,
}

/// The key of the request a block belongs to: its method and its options, except the
/// block-wise ones (Block1, Block2, Size1, Size2), Echo (RFC 9175: it may change between
/// blocks) and Content-Format (it describes a payload, which a Block2 follow-up lacks). Two
/// requests of one peer with the same key continue the same transfer (RFC 7959 §2.4, §2.5).
pub fn resource_key(code: Code, options: &Options) -> Vec<u8> {
    let mut k = vec![code.raw()];
    for o in options.iter() {
        if !matches!(
            o.number,
            option::BLOCK1 | option::BLOCK2 | option::SIZE1 | option::SIZE2 | option::CONTENT_FORMAT | super::ECHO
        ) {
            k.extend_from_slice(&o.number.to_be_bytes());
            k.extend_from_slice(&(o.value.len() as u32).to_be_bytes());
            k.extend_from_slice(o.value);
        }
    }
    k
}

/// Whether a request with `code` changes state, so that its block-wise answer is kept for the
/// follow-ups instead of asking the resource again (every method but GET and FETCH).
pub fn keeps_representation(code: Code) -> bool {
    code.is_request() && code != Code::GET && code != Code::FETCH
}

fn text(code: Code, s: &str) -> Response {
    Response::new(code).with_payload(s.as_bytes().to_vec())
}

impl<P: Ord + Clone> Transfers<P> {
    /// An empty table with `limits`.
    pub fn new(limits: TransferLimits) -> Self {
        Transfers { limits, table: BTreeMap::new(), per_peer: BTreeMap::new(), bytes: 0, stats: Default::default() }
    }

    /// The limits in force.
    pub fn limits(&self) -> &TransferLimits {
        &self.limits
    }

    /// Entries (uploads and kept representations) now.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// `true` when nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Uploads in progress now.
    pub fn uploads(&self) -> usize {
        self.table.values().filter(|e| matches!(e.state, State::Upload(_))).count()
    }

    /// Entries of `peer` now (never more than `max_per_peer`).
    pub fn peer_len(&self, peer: &P) -> usize {
        self.per_peer.get(peer).copied().unwrap_or(0)
    }

    /// Bytes of bodies and representations kept now (never more than `max_bytes`).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Counters.
    pub fn stats(&self) -> TransferStats {
        self.stats
    }

    fn remove(&mut self, key: &(P, Vec<u8>)) -> Option<State> {
        let e = self.table.remove(key)?;
        self.bytes -= e.state.bytes();
        if let Some(n) = self.per_peer.get_mut(&key.0) {
            *n -= 1;
            if *n == 0 {
                self.per_peer.remove(&key.0);
            }
        }
        Some(e.state)
    }

    fn insert(&mut self, key: (P, Vec<u8>), state: State, now: Instant) {
        self.bytes += state.bytes();
        *self.per_peer.entry(key.0.clone()).or_insert(0) += 1;
        self.table.insert(key, Entry { state, last: now, done: false });
    }

    /// Drop every entry not used for `timeout` (also done by every other call that takes
    /// `now`).
    pub fn expire(&mut self, now: Instant) {
        if self.table.is_empty() {
            return;
        }
        let (t, linger) = (self.limits.timeout, self.limits.linger.min(self.limits.timeout));
        let old: Vec<(P, Vec<u8>)> = self
            .table
            .iter()
            .filter(|(_, e)| e.last + if e.done { linger } else { t } <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for k in old {
            self.remove(&k);
            self.stats.expired += 1;
        }
    }

    /// Make room for one more entry of `peer` holding `bytes`: within its share by replacing
    /// its own least recently used entry; `false` when the global budget leaves no room even
    /// then (nothing is removed: not even the peer's own state).
    fn admit(&mut self, peer: &P, bytes: usize) -> bool {
        let lru = if self.peer_len(peer) >= self.limits.max_per_peer.max(1) {
            self.table
                .iter()
                .filter(|((p, _), _)| p == peer)
                .min_by_key(|(_, e)| e.last)
                .map(|(k, e)| (k.clone(), e.state.bytes()))
        } else {
            None
        };
        let (freed_count, freed_bytes) = lru.as_ref().map_or((0, 0), |(_, b)| (1, *b));
        let fits = |t: &Self| {
            t.table.len() - freed_count < t.limits.max_transfers.max(1)
                && t.bytes - freed_bytes + bytes <= t.limits.max_bytes
        };
        // Representations served to their end are no longer active: any peer's new transfer
        // may take their place, the oldest first.
        while !fits(self) {
            let done = self
                .table
                .iter()
                .filter(|(k, e)| e.done && !lru.as_ref().is_some_and(|(l, _)| l == *k))
                .min_by_key(|(_, e)| e.last)
                .map(|(k, _)| k.clone());
            match done {
                Some(k) => {
                    self.remove(&k);
                }
                None => {
                    self.stats.refused += 1;
                    return false;
                }
            }
        }
        if let Some((k, _)) = lru {
            self.remove(&k);
            self.stats.replaced += 1;
        }
        true
    }

    fn busy(&self, what: &str) -> Response {
        let mut r = text(Code::SERVICE_UNAVAILABLE, what);
        r.options.set_uint(option::MAX_AGE, u64::from(self.limits.busy_max_age_s));
        r
    }

    /// One Block1 request `b` of `peer`, for the request named `key` ([`resource_key`]),
    /// carrying `payload`.
    pub fn upload_block(&mut self, now: Instant, peer: &P, key: Vec<u8>, b: Block, payload: &[u8]) -> Step {
        self.expire(now);
        let key = (peer.clone(), key);
        let size = b.block_size();
        let offset = b.num as usize * size;
        if (b.more && payload.len() != size) || payload.len() > size {
            self.remove(&key);
            return Step::Answer(text(Code::BAD_REQUEST, "Block1 size mismatch"));
        }
        if b.num == 0 {
            // A new sequence replaces this peer's state for the same request (RFC 7959 §2.5).
            self.remove(&key);
            if !self.admit(peer, payload.len()) {
                return Step::Answer(self.busy("too many block-wise transfers in progress"));
            }
            self.insert(key.clone(), State::Upload(Vec::new()), now);
        }
        let (max_body, max_bytes, bytes) = (self.limits.max_body_size, self.limits.max_bytes, self.bytes);
        let Some(Entry { state: State::Upload(body), last, .. }) = self.table.get_mut(&key) else {
            return Step::Answer(incomplete());
        };
        if body.len() != offset {
            self.remove(&key);
            return Step::Answer(incomplete());
        }
        if offset + payload.len() > max_body {
            self.remove(&key);
            let mut r = Response::new(Code::REQUEST_ENTITY_TOO_LARGE);
            r.options.set_uint(option::SIZE1, max_body as u64);
            return Step::Answer(r);
        }
        if bytes + payload.len() > max_bytes {
            self.remove(&key);
            self.stats.refused += 1;
            return Step::Answer(self.busy("too many bytes of block-wise transfers in progress"));
        }
        body.extend_from_slice(payload);
        *last = now;
        self.bytes += payload.len();
        if b.more {
            let mut r = Response::new(Code::CONTINUE);
            let _ = r.options.set_block1(b);
            return Step::Answer(r);
        }
        match self.remove(&key) {
            Some(State::Upload(body)) => {
                self.stats.uploads_completed += 1;
                Step::Complete(body)
            }
            _ => Step::Answer(incomplete()),
        }
    }

    /// Keep `response` (an answer sent block-wise to a request that changed state) for the
    /// Block2 follow-ups of `peer`'s request `key`. `false` when the global budget leaves no
    /// room: the first block is still sent, and a follow-up gets 4.08.
    pub fn keep(&mut self, now: Instant, peer: &P, key: Vec<u8>, response: Response) -> bool {
        self.expire(now);
        let key = (peer.clone(), key);
        self.remove(&key);
        if !self.admit(peer, response.payload.len()) {
            return false;
        }
        self.insert(key, State::Kept(response), now);
        true
    }

    /// Take the representation kept for `peer`'s request `key` out of the table (to answer a
    /// follow-up from it); give it back with [`Transfers::restore`] unless that was its last
    /// block.
    pub fn take_kept(&mut self, now: Instant, peer: &P, key: &[u8]) -> Option<Response> {
        self.expire(now);
        let k = (peer.clone(), key.to_vec());
        if !matches!(self.table.get(&k), Some(Entry { state: State::Kept(_), .. })) {
            return None;
        }
        self.stats.follow_ups += 1;
        match self.remove(&k) {
            Some(State::Kept(r)) => Some(r),
            _ => None,
        }
    }

    /// Put back a representation taken with [`Transfers::take_kept`] (its place was just
    /// freed, so no budget check), marked as used at `now`; `done` when its last block was just
    /// served (it then lingers for `linger`, no longer active).
    pub fn restore(&mut self, now: Instant, peer: &P, key: Vec<u8>, response: Response, done: bool) {
        let key = (peer.clone(), key);
        self.insert(key.clone(), State::Kept(response), now);
        if let Some(e) = self.table.get_mut(&key) {
            e.done = done;
        }
    }

    /// Entries in progress: uploads, and kept representations with blocks still to serve.
    pub fn active(&self) -> usize {
        self.table.values().filter(|e| !e.done).count()
    }

    /// Forget everything of `peer` (a CoAP-over-TCP connection closed); returns how many
    /// entries it had.
    pub fn forget_peer(&mut self, peer: &P) -> usize {
        let keys: Vec<(P, Vec<u8>)> = self.table.keys().filter(|(p, _)| p == peer).cloned().collect();
        for k in &keys {
            self.remove(k);
        }
        keys.len()
    }
}

fn incomplete() -> Response {
    text(Code::REQUEST_ENTITY_INCOMPLETE, "Block1 out of sequence")
}

/// The answer to a Block2 follow-up of a request that changed state when no representation is
/// kept for it (expired, never kept, or another peer's): 4.08, never the resource again.
pub fn follow_up_unknown() -> Response {
    text(Code::REQUEST_ENTITY_INCOMPLETE, "no representation kept for this Block2 request")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blk(num: u32, more: bool) -> Block {
        Block { num, more, szx: 0 }
    }

    fn code(s: &Step) -> Code {
        match s {
            Step::Answer(r) => r.code,
            Step::Complete(_) => Code::CHANGED,
        }
    }

    fn key(n: u8) -> Vec<u8> {
        vec![Code::POST.raw(), n]
    }

    #[test]
    fn uploads_complete_and_are_refused_out_of_sequence() {
        let mut t = Transfers::<u8>::new(TransferLimits { max_body_size: 40, ..Default::default() });
        let now = Instant::ZERO;
        assert_eq!(code(&t.upload_block(now, &1, key(0), blk(0, true), &[1; 16])), Code::CONTINUE);
        assert_eq!(code(&t.upload_block(now, &1, key(0), blk(2, true), &[1; 16])), Code::REQUEST_ENTITY_INCOMPLETE);
        assert_eq!(t.len(), 0, "the broken upload is dropped");
        assert_eq!(code(&t.upload_block(now, &1, key(0), blk(0, true), &[1; 16])), Code::CONTINUE);
        // Another peer cannot continue it (its blocks are its own).
        assert_eq!(code(&t.upload_block(now, &2, key(0), blk(1, false), &[2; 5])), Code::REQUEST_ENTITY_INCOMPLETE);
        assert_eq!(
            t.upload_block(now, &1, key(0), blk(1, false), &[3; 5]),
            Step::Complete([&[1; 16][..], &[3; 5]].concat())
        );
        assert_eq!((t.len(), t.bytes(), t.stats().uploads_completed), (0, 0, 1));
        // Too large, size mismatch.
        assert_eq!(code(&t.upload_block(now, &1, key(0), blk(0, true), &[1; 16])), Code::CONTINUE);
        assert_eq!(code(&t.upload_block(now, &1, key(0), blk(1, true), &[1; 16])), Code::CONTINUE);
        assert_eq!(code(&t.upload_block(now, &1, key(0), blk(2, false), &[1; 9])), Code::REQUEST_ENTITY_TOO_LARGE);
        assert_eq!(code(&t.upload_block(now, &1, key(0), blk(0, true), &[1; 15])), Code::BAD_REQUEST);
        assert_eq!((t.len(), t.bytes()), (0, 0));
    }

    /// The probe's eviction attack: one peer starting uploads under ever new keys only ever
    /// replaces its own; another peer's upload runs to the end, and a peer that finds the
    /// global budget used up gets 5.03 instead of evicting anyone.
    #[test]
    fn a_peer_cannot_evict_another_peers_upload() {
        let limits = TransferLimits { max_transfers: 6, max_per_peer: 2, ..Default::default() };
        let mut t = Transfers::<u8>::new(limits);
        let now = Instant::from_millis(1);
        assert_eq!(code(&t.upload_block(now, &9, key(200), blk(0, true), &[7; 16])), Code::CONTINUE);
        for n in 0..1000u16 {
            let s = t.upload_block(
                now,
                &1,
                key(n as u8).into_iter().chain(n.to_be_bytes()).collect(),
                blk(0, true),
                &[0; 16],
            );
            assert_eq!(code(&s), Code::CONTINUE);
            assert_eq!(t.peer_len(&1), if n == 0 { 1 } else { 2 });
        }
        assert_eq!(t.peer_len(&9), 1);
        // Two more attackers fill the global budget; a fourth is refused.
        for (p, n) in [(2, 0), (2, 1), (3, 0)] {
            assert_eq!(code(&t.upload_block(now, &p, key(n), blk(0, true), &[0; 16])), Code::CONTINUE);
        }
        assert_eq!(t.len(), 6);
        let busy = t.upload_block(now, &4, key(0), blk(0, true), &[0; 16]);
        assert_eq!(code(&busy), Code::SERVICE_UNAVAILABLE);
        assert_eq!(t.stats().refused, 1);
        // A peer at its share may still replace its own when the table is full.
        assert_eq!(code(&t.upload_block(now, &2, key(9), blk(0, true), &[0; 16])), Code::CONTINUE);
        assert_eq!((t.len(), t.peer_len(&2)), (6, 2));
        // The victim completes.
        assert_eq!(
            t.upload_block(now, &9, key(200), blk(1, false), &[8; 3]),
            Step::Complete([&[7; 16][..], &[8; 3]].concat())
        );
    }

    #[test]
    fn bytes_are_bounded_and_entries_expire() {
        let limits = TransferLimits { max_bytes: 64, timeout: Duration::from_secs(10), ..Default::default() };
        let mut t = Transfers::<u8>::new(limits);
        let t0 = Instant::from_millis(1);
        for n in 0..3 {
            assert_eq!(code(&t.upload_block(t0, &1, key(0), blk(n, true), &[0; 16])), Code::CONTINUE);
        }
        assert_eq!(code(&t.upload_block(t0, &2, key(0), blk(0, true), &[0; 16])), Code::CONTINUE);
        assert_eq!(t.bytes(), 64);
        assert_eq!(code(&t.upload_block(t0, &2, key(0), blk(1, true), &[0; 16])), Code::SERVICE_UNAVAILABLE);
        assert_eq!(t.bytes(), 48);
        assert!(!t.keep(t0, &3, key(1), Response::content(vec![0; 17])), "no room for 17 more bytes");
        assert_eq!((t.len(), t.bytes()), (1, 48), "a refusal removes nothing");
        let later = t0 + Duration::from_secs(10);
        t.expire(later);
        assert_eq!((t.len(), t.bytes(), t.stats().expired), (0, 0, 1));
    }

    #[test]
    fn kept_representations_serve_follow_ups() {
        let mut t = Transfers::<u8>::new(TransferLimits::default());
        let now = Instant::ZERO;
        assert!(t.keep(now, &1, key(0), Response::content(vec![5; 3000])));
        assert_eq!(t.bytes(), 3000);
        assert!(t.take_kept(now, &2, &key(0)).is_none(), "another peer's representation");
        assert!(t.take_kept(now, &1, &key(1)).is_none(), "another request");
        let r = t.take_kept(now, &1, &key(0)).unwrap();
        assert_eq!((r.payload.len(), t.len(), t.bytes()), (3000, 0, 0));
        t.restore(now, &1, key(0), r, false);
        assert_eq!((t.len(), t.bytes(), t.stats().follow_ups), (1, 3000, 1));
        // A new upload of the same request replaces the kept representation.
        assert_eq!(code(&t.upload_block(now, &1, key(0), blk(0, true), &[1; 16])), Code::CONTINUE);
        assert!(t.take_kept(now, &1, &key(0)).is_none());
        assert_eq!((t.len(), t.bytes()), (1, 16));
        assert_eq!(t.forget_peer(&1), 1);
        assert_eq!((t.len(), t.bytes()), (0, 0));
        // Served to its end, a representation lingers (not active), then expires; another
        // peer's new transfer may take its place when the budget is full.
        let mut t = Transfers::<u8>::new(TransferLimits { max_transfers: 1, ..Default::default() });
        assert!(t.keep(now, &1, key(0), Response::content(vec![5; 3000])));
        let r = t.take_kept(now, &1, &key(0)).unwrap();
        t.restore(now, &1, key(0), r, true);
        assert_eq!((t.len(), t.active()), (1, 0));
        assert!(t.take_kept(now, &1, &key(0)).is_some(), "asked again within the linger time");
        let r = Response::content(vec![5; 3000]);
        t.restore(now, &1, key(0), r, true);
        assert_eq!(code(&t.upload_block(now, &2, key(1), blk(0, true), &[0; 16])), Code::CONTINUE);
        assert_eq!((t.len(), t.active(), t.peer_len(&1)), (1, 1, 0));
        let mut t = Transfers::<u8>::new(TransferLimits::default());
        assert!(t.keep(now, &1, key(0), Response::content(vec![5; 30])));
        let r = t.take_kept(now, &1, &key(0)).unwrap();
        t.restore(now, &1, key(0), r, true);
        t.expire(now + Duration::from_secs(8));
        assert_eq!(t.len(), 0, "gone after the linger time");
    }

    #[test]
    fn keys_ignore_block_options_and_content_format() {
        let mut a = Options::new();
        a.add_uri_path("echo");
        let mut b = a.clone();
        b.set_content_format(0);
        b.set_block2(Block { num: 3, more: false, szx: 6 }).unwrap();
        b.set_uint(option::SIZE1, 5);
        assert_eq!(resource_key(Code::POST, &a), resource_key(Code::POST, &b));
        assert_ne!(resource_key(Code::POST, &a), resource_key(Code::PUT, &a));
        b.add_uri_query("x=1");
        assert_ne!(resource_key(Code::POST, &a), resource_key(Code::POST, &b));
        assert!(keeps_representation(Code::POST) && keeps_representation(Code::PUT));
        assert!(!keeps_representation(Code::GET) && !keeps_representation(Code::FETCH));
    }
}
