//! Amplification limits (RFC 7252 §11.3, RFC 9175 §2.4).
//!
//! Two rules, both off in [`EndpointConfig::default`](super::EndpointConfig::default) (the
//! simulator's servers answer every copy) and on in `coapcc server`:
//!
//! - **Duplicate replies per message**
//!   ([`EndpointConfig::max_duplicate_replies`](super::EndpointConfig::max_duplicate_replies)):
//!   the cached answer to a CON is replayed for at most that many duplicates; later
//!   duplicates are dropped (`stats().duplicates_suppressed`). A compliant client sends at
//!   most MAX_RETRANSMIT retransmissions, so it never notices.
//! - **Unverified peers get at most `amplification_limit` × the request's size**
//!   ([`EndpointConfig::amplification_limit`](super::EndpointConfig::amplification_limit)):
//!   a GET or FETCH whose answer would be larger than that, from a peer that has not shown
//!   it receives at its address, is answered 4.01 Unauthorized with an Echo option
//!   (RFC 9175); a request carrying that Echo value verifies the peer, whose later answers
//!   are unrestricted. The Echo value is a keyed hash of the peer address (no per-peer state
//!   before verification); verified peers are remembered up to
//!   [`EndpointConfig::max_peers`](super::EndpointConfig::max_peers), oldest forgotten first.
//!   The client role of the endpoint repeats a request answered this way with the Echo
//!   value (at most twice per request), as libcoap and aiocoap do.

use std::hash::{Hash, Hasher};

use super::{Endpoint, Peer, Response, Served};
use crate::{Code, Message};

/// The Echo option (RFC 9175): elective, safe to forward, 0–40 bytes.
pub const ECHO: u16 = 252;

/// 4.01 Unauthorized.
pub(super) const UNAUTHORIZED: Code = Code::new(4, 1);

impl<P: Peer> Endpoint<P> {
    /// The Echo value this endpoint gives `peer`: 8 bytes of a hash keyed with a secret drawn
    /// at start-up, so it can be checked without state and not guessed by a third party.
    pub(super) fn echo_value(&self, peer: &P) -> [u8; 8] {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.echo_key.hash(&mut h);
        format!("{peer:?}").hash(&mut h);
        h.finish().to_be_bytes()
    }

    /// Has `peer` shown that it receives at its address?
    pub fn is_verified(&self, peer: &P) -> bool {
        self.config.amplification_limit.is_none() || self.verified.contains(peer)
    }

    /// Note a request's Echo option: the right value verifies its sender.
    #[inline(never)]
    pub(super) fn check_echo(&mut self, peer: &P, msg: &Message) {
        if self.config.amplification_limit.is_none() || self.verified.contains(peer) {
            return;
        }
        if msg.options.get(ECHO) == Some(&self.echo_value(peer)[..]) {
            while self.verified.len() >= self.config.max_peers.max(1) {
                match self.verified_order.pop_front() {
                    Some(old) => {
                        self.verified.remove(&old);
                    }
                    None => break,
                }
            }
            self.verified.insert(peer.clone());
            self.verified_order.push_back(peer.clone());
            self.stats.peers_verified += 1;
        }
    }

    /// Replace an answer to an unverified peer that would amplify by more than the limit
    /// with 4.01 Unauthorized + Echo (safe methods only: an unsafe request has had its
    /// effect, and its answer is seldom large).
    pub(super) fn limit_amplification(&mut self, s: &Served<P>, r: &Response) -> Message {
        let msg = self.build_response(s, r, self.config.block_szx, self.config.max_unblocked_payload);
        match self.config.amplification_limit {
            None => msg,
            Some(limit) => self.within_amplification_limit(s, r, msg, limit),
        }
    }

    /// [`Endpoint::limit_amplification`] with the limit on (out of line).
    #[inline(never)]
    fn within_amplification_limit(&mut self, s: &Served<P>, r: &Response, msg: Message, limit: u32) -> Message {
        if !s.safe || self.verified.contains(&s.peer) {
            return msg;
        }
        let allowed = s.request_len.saturating_mul(limit as usize).max(self.config.amplification_floor);
        if msg.encoded_len() <= allowed {
            return msg;
        }
        let echo = self.echo_value(&s.peer);
        if r.code.is_success() {
            // Smaller blocks, each within the limit (RFC 7959 lets the server choose a smaller
            // size; every client continues with it), with our Echo value: a client that
            // returns it is verified and gets full-size blocks from then on.
            let first = s.block2.map_or(self.config.block_szx, |b| b.szx.min(self.config.block_szx));
            for szx in (0..first).rev() {
                let mut m = self.build_response(s, r, szx, 0);
                m.options.add(ECHO, echo);
                if m.encoded_len() <= allowed {
                    self.stats.smaller_blocks += 1;
                    return m;
                }
            }
        }
        self.stats.echo_challenges += 1;
        let mut m = Message::new(msg.mtype, UNAUTHORIZED, msg.message_id).with_token(msg.token);
        m.options.add(ECHO, echo);
        m
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Endpoint, EndpointConfig, Event, FailReason, Request, Response};
    use super::{ECHO, UNAUTHORIZED};
    use crate::{Code, Message, MessageType, Token};
    use coapcc_cc::Instant;

    const C: u32 = 1;
    const S: u32 = 2;

    /// Run client and server to quiescence; the server answers every request with `body`.
    /// Returns (bytes client → server, bytes server → client, client events).
    fn exchange(
        client: &mut Endpoint<u32>,
        server: &mut Endpoint<u32>,
        body: &[u8],
    ) -> (usize, usize, Vec<Event<u32>>) {
        let now = Instant::from_millis(1);
        let (mut up, mut down, mut events) = (0, 0, Vec::new());
        for _ in 0..100_000 {
            let mut moved = false;
            while let Some(t) = client.poll_transmit(now) {
                up += t.bytes.len();
                server.handle_datagram(now, C, &t.bytes);
                moved = true;
            }
            while let Some(ev) = server.poll_event() {
                if let Event::Request { id, .. } = ev {
                    server.respond(now, id, Response::content(body.to_vec())).unwrap();
                }
            }
            while let Some(t) = server.poll_transmit(now) {
                down += t.bytes.len();
                client.handle_datagram(now, S, &t.bytes);
                moved = true;
            }
            events.extend(std::iter::from_fn(|| client.poll_event()));
            if !moved {
                break;
            }
        }
        (up, down, events)
    }

    #[test]
    fn large_answers_to_unverified_peers_wait_for_echo() {
        let scfg = EndpointConfig { amplification_limit: Some(3), ..EndpointConfig::default() };
        let mut server = Endpoint::<u32>::with_seed(scfg, 1);
        let mut client = Endpoint::<u32>::with_seed(EndpointConfig::default(), 2);
        let body: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        // A raw first request: the answer is a small 4.01 with Echo, not 1 KiB.
        let mut m = Message::new(MessageType::Con, Code::GET, 7).with_token(Token::from_u64(9));
        m.add_uri_path("large");
        let req = m.to_bytes();
        server.handle_datagram(Instant::ZERO, C, &req);
        let Some(Event::Request { id, .. }) = server.poll_event() else { panic!() };
        server.respond(Instant::ZERO, id, Response::content(body.clone())).unwrap();
        let t = server.poll_transmit(Instant::ZERO).unwrap();
        assert!(t.bytes.len() <= (3 * req.len()).max(128), "{} > 3 x {}", t.bytes.len(), req.len());
        let a = Message::decode(&t.bytes).unwrap();
        // A small first block, with our Echo value.
        assert_eq!((a.code, a.message_id), (Code::CONTENT, 7));
        let b = a.block2().unwrap().unwrap();
        assert!(b.num == 0 && b.more && b.szx < 6, "{b:?}");
        assert_eq!(a.options.get(ECHO).map(<[u8]>::len), Some(8));
        assert!(!server.is_verified(&C));
        // An error answer cannot be sliced: 4.01 with Echo.
        let mut m2 = Message::new(MessageType::Con, Code::GET, 8).with_token(Token::from_u64(10));
        m2.add_uri_path("missing");
        server.handle_datagram(Instant::ZERO, C, &m2.to_bytes());
        let Some(Event::Request { id, .. }) = server.poll_event() else { panic!() };
        server.respond(Instant::ZERO, id, Response::new(Code::NOT_FOUND).with_payload(vec![b'n'; 500])).unwrap();
        let a = Message::decode(&server.poll_transmit(Instant::ZERO).unwrap().bytes).unwrap();
        assert_eq!((a.code, a.message_id), (UNAUTHORIZED, 8));
        assert!(a.options.get(ECHO).is_some());
        // Our client repeats with the Echo value and gets the whole body.
        client.request(Instant::ZERO, S, Request::get("/large"));
        let (_, _, events) = exchange(&mut client, &mut server, &body);
        match &events[..] {
            [Event::Response { response, .. }] => assert_eq!(response.payload, body),
            other => panic!("{other:?}"),
        }
        assert!(server.is_verified(&C));
        assert_eq!(server.stats().peers_verified, 1);
        // Small answers are never challenged; a wrong Echo value verifies nothing.
        let mut other = Endpoint::<u32>::with_seed(EndpointConfig::default(), 3);
        let mut srv2 =
            Endpoint::<u32>::with_seed(EndpointConfig { amplification_limit: Some(3), ..EndpointConfig::default() }, 4);
        other.request(Instant::ZERO, S, Request::get("/hello").with_option(ECHO, vec![1, 2, 3]));
        let (_, _, ev) = exchange(&mut other, &mut srv2, b"hi");
        assert!(matches!(&ev[..], [Event::Response { response, .. }] if response.payload == b"hi"));
        assert!(!srv2.is_verified(&C));
    }

    #[test]
    fn duplicates_are_answered_a_bounded_number_of_times() {
        for (cap, want) in [(u32::MAX, 1000), (20, 20)] {
            let mut server =
                Endpoint::<u32>::with_seed(EndpointConfig { max_duplicate_replies: cap, ..Default::default() }, 1);
            let mut m = Message::new(MessageType::Con, Code::GET, 3).with_token(Token::from_u64(5));
            m.add_uri_path("large");
            let req = m.to_bytes();
            server.handle_datagram(Instant::ZERO, C, &req);
            let Some(Event::Request { id, .. }) = server.poll_event() else { panic!() };
            server.respond(Instant::ZERO, id, Response::content(vec![b'x'; 1024])).unwrap();
            assert!(server.poll_transmit(Instant::ZERO).is_some());
            let mut out = 0;
            for _ in 0..1000 {
                server.handle_datagram(Instant::ZERO, C, &req);
                while server.poll_transmit(Instant::ZERO).is_some() {
                    out += 1;
                }
            }
            assert_eq!(out, want, "cap {cap}");
            assert_eq!(server.stats().duplicates_suppressed, 1000 - want as u64);
        }
    }

    #[test]
    fn block2_chains_are_bounded_in_blocks() {
        let scfg = EndpointConfig { block_szx: 0, max_unblocked_payload: 16, ..EndpointConfig::default() };
        let mut server = Endpoint::<u32>::with_seed(scfg, 1);
        let mut client = Endpoint::<u32>::with_seed(EndpointConfig { max_blocks: 10, ..Default::default() }, 2);
        client.request(Instant::ZERO, S, Request::get("/endless"));
        let (_, _, ev) = exchange(&mut client, &mut server, &[7u8; 1000]);
        assert!(matches!(&ev[..], [Event::Failed { reason: FailReason::TooManyBlocks, .. }]), "{ev:?}");
        // Within the bound the transfer completes.
        let mut client = Endpoint::<u32>::with_seed(EndpointConfig { max_blocks: 63, ..Default::default() }, 2);
        client.request(Instant::ZERO, S, Request::get("/endless"));
        let (_, _, ev) = exchange(&mut client, &mut server, &[7u8; 1000]);
        assert!(matches!(&ev[..], [Event::Response { response, .. }] if response.payload.len() == 1000), "{ev:?}");
    }
}
