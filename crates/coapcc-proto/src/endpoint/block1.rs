//! RFC 7959 Block1: block-wise request payloads, both roles.
//!
//! - **Server**: a request carrying Block1 with M = 1 is answered by the endpoint itself with
//!   2.31 Continue (echoing the Block1 option) and its payload is kept; the block with M = 0
//!   completes the body, and the application sees one request with the whole payload (no
//!   Block1 option). Its response carries Block1 (the last block's number, M = 0); when it is
//!   larger than a block, its first block goes with it (Block2 num 0) and the later ones are
//!   served from the kept representation (RFC 7959 §3.3). Uploads belong to their peer and
//!   request and are bounded per peer and in all ([`super::transfers`]): a block out of
//!   sequence gets 4.08 Request Entity Incomplete, a body over the size limit 4.13 Request
//!   Entity Too Large with Size1, a new upload when the global budget is used up 5.03.
//! - **Client**: a payload larger than
//!   [`EndpointConfig::max_unblocked_payload`](super::EndpointConfig::max_unblocked_payload)
//!   is sent in Block1 blocks of 2^([`EndpointConfig::block_szx`](super::EndpointConfig::block_szx)+4)
//!   bytes (Size1 on the first), each sent when the previous one got 2.31 Continue, never as one
//!   oversized datagram; a server asking for a smaller size gets it. With
//!   [`Request::with_block2_szx`](super::Request::with_block2_szx) the last block also asks for
//!   the answer's block size (Block2 NUM 0), and a block-wise answer is followed with it
//!   (RFC 7959 §3.3).

use super::block;
use super::transfers::{resource_key, Step};
use super::Request;
use super::{ClientReq, Endpoint, Peer};
use crate::{option, Block, Message};
use coapcc_cc::Instant;

/// Client side: where an outgoing block-wise payload stands.
#[derive(Clone, Copy, Debug)]
pub(super) struct Outgoing {
    /// Offset of the block being sent.
    pub(super) offset: usize,
    /// Its size exponent.
    pub(super) szx: u8,
}

impl<P: Peer> Endpoint<P> {
    /// Server: take one Block1 request `b` from `peer` (its state is kept per peer and
    /// request, within the budgets of [`EndpointConfig::transfers`](super::EndpointConfig::transfers)).
    pub(super) fn upload_block(&mut self, now: Instant, peer: &P, msg: &Message, b: Block) -> Step {
        let step = self.transfers.upload_block(now, peer, resource_key(msg.code, &msg.options), b, &msg.payload);
        if matches!(step, Step::Complete(_)) {
            self.stats.uploads_completed += 1;
        }
        step
    }

    /// Uploads in progress (server role).
    pub fn uploads_in_progress(&self) -> usize {
        self.transfers.uploads()
    }

    /// The server's block-wise transfer state (uploads and kept representations).
    pub fn transfers(&self) -> &super::Transfers<P> {
        &self.transfers
    }

    /// Client: does `request`'s payload need Block1, and with what first block?
    pub(super) fn plan_upload(&self, request: &Request) -> Option<Outgoing> {
        (request.payload.len() > self.config.max_unblocked_payload)
            .then_some(Outgoing { offset: 0, szx: self.config.block_szx.min(6) })
    }

    /// Client: 2.31 Continue arrived for the block of `req` in flight; returns the next
    /// block's message, or `None` when the answer does not fit (the request then fails).
    pub(super) fn continue_upload(req: &mut ClientReq, response: &Message) -> Option<Message> {
        let up = req.upload.as_mut()?;
        let sent = block::size(up.szx);
        let acked = response.block1().ok().flatten()?;
        up.offset += sent;
        up.szx = acked.szx.min(up.szx);
        if up.offset >= req.template.payload.len() || up.offset % block::size(up.szx) != 0 {
            return None;
        }
        Some(upload_request(&req.template, *up))
    }
}

/// The request carrying the block of `template`'s payload at `up`.
pub(super) fn upload_request(template: &Request, up: Outgoing) -> Message {
    let mut m = super::client::build_request(template, None);
    let size = block::size(up.szx);
    let len = template.payload.len();
    let end = (up.offset + size).min(len);
    m.payload = template.payload[up.offset..end].to_vec();
    let _ = m.set_block1(Block { num: (up.offset / size) as u32, more: end < len, szx: up.szx });
    if up.offset == 0 {
        m.options.set_uint(option::SIZE1, len as u64);
    }
    if let (true, Some(szx)) = (end == len, template.block2_szx) {
        // The last block asks for the answer's block size (RFC 7959 §2.7: a Block2 option in
        // a request with Block1 is control usage), so a block-wise answer comes in the blocks
        // the client asked for, not the server's default.
        let _ = m.set_block2(Block { num: 0, more: false, szx: szx.min(6) });
    }
    m
}

#[cfg(test)]
mod tests {
    use super::super::{Endpoint, EndpointConfig, Event, Request, Response, TransferLimits};
    use crate::{Block, Code, Message, MessageType, Token};
    use coapcc_cc::Instant;

    #[test]
    fn a_large_put_goes_in_block1_blocks_and_is_reassembled() {
        let now = Instant::from_millis(1);
        let cfg = EndpointConfig { block_szx: 4, max_unblocked_payload: 256, ..EndpointConfig::default() };
        let mut client = Endpoint::<u32>::with_seed(cfg, 1);
        let mut server = Endpoint::<u32>::with_seed(EndpointConfig::default(), 2);
        let body: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
        client.request(now, 2, Request::put("/upload", body.clone()));
        let (mut continues, mut got, mut largest) = (0, None, 0);
        for _ in 0..100 {
            let Some(t) = client.poll_transmit(now) else { break };
            largest = largest.max(t.bytes.len());
            server.handle_datagram(now, 1, &t.bytes);
            if let Some(Event::Request { id, message, .. }) = server.poll_event() {
                assert!(message.block1().unwrap().is_none());
                got = Some(message.payload);
                server.respond(now, id, Response::new(Code::CHANGED)).unwrap();
            }
            while let Some(a) = server.poll_transmit(now) {
                let m = Message::decode(&a.bytes).unwrap();
                if m.code == Code::CONTINUE {
                    continues += 1;
                }
                client.handle_datagram(now, 2, &a.bytes);
            }
        }
        assert_eq!(got.as_deref(), Some(&body[..]));
        assert_eq!(continues, 11, "12 blocks of 256 bytes, 11 answered 2.31");
        assert!(largest < 256 + 40, "no datagram larger than a block: {largest}");
        match client.poll_event() {
            Some(Event::Response { response, .. }) => {
                assert_eq!(response.code, Code::CHANGED);
                assert_eq!(response.block1().unwrap(), Some(Block { num: 11, more: false, szx: 4 }));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(server.uploads_in_progress(), 0);
        assert_eq!(server.stats().uploads_completed, 1);
    }

    fn block(mid: u16, num: u32, more: bool, len: usize) -> Vec<u8> {
        let mut m = Message::new(MessageType::Con, Code::POST, mid).with_token(Token::from_u64(1));
        m.add_uri_path("upload");
        m.set_block1(Block { num, more, szx: 0 }).unwrap();
        m.payload = vec![b'a'; len];
        m.to_bytes()
    }

    fn answer(s: &mut Endpoint<u32>, d: &[u8]) -> Code {
        s.handle_datagram(Instant::ZERO, 1, d);
        Message::decode(&s.poll_transmit(Instant::ZERO).expect("answered at once").bytes).unwrap().code
    }

    #[test]
    fn out_of_sequence_and_too_large_uploads_are_refused() {
        let mut s = Endpoint::<u32>::with_seed(
            EndpointConfig {
                transfers: TransferLimits { max_body_size: 40, ..Default::default() },
                ..Default::default()
            },
            1,
        );
        assert_eq!(answer(&mut s, &block(1, 0, true, 16)), Code::CONTINUE);
        assert_eq!(answer(&mut s, &block(2, 2, true, 16)), Code::REQUEST_ENTITY_INCOMPLETE);
        assert_eq!(answer(&mut s, &block(3, 1, true, 16)), Code::REQUEST_ENTITY_INCOMPLETE, "state dropped");
        assert_eq!(answer(&mut s, &block(4, 0, true, 16)), Code::CONTINUE);
        assert_eq!(answer(&mut s, &block(5, 1, true, 16)), Code::CONTINUE);
        assert_eq!(answer(&mut s, &block(6, 2, false, 16)), Code::REQUEST_ENTITY_TOO_LARGE);
        assert_eq!(s.uploads_in_progress(), 0);
        assert!(s.poll_event().is_none(), "nothing reached the application");
        // One peer's uploads under ever new keys stay within its share (it replaces its own).
        let mut s = Endpoint::<u32>::with_seed(EndpointConfig::default(), 1);
        for i in 0..10u16 {
            let mut m = Message::new(MessageType::Con, Code::POST, i).with_token(Token::from_u64(1));
            m.add_uri_path(&format!("u{i}"));
            m.set_block1(Block { num: 0, more: true, szx: 0 }).unwrap();
            m.payload = vec![0; 16];
            assert_eq!(answer(&mut s, &m.to_bytes()), Code::CONTINUE);
            assert!(s.uploads_in_progress() <= 4);
        }
    }
}

/// RFC 7959 §3.3 end to end between two endpoints: a body larger than a block goes up in
/// Block1, the echoed answer comes back in Block2, and the Block2 follow-ups are served from
/// the kept representation (the resource runs once per request).
#[cfg(test)]
mod combined {
    use super::super::{Endpoint, EndpointConfig, Event, Request, Response};
    use crate::{Block, Code, Message, MessageType, Token};
    use coapcc_cc::Instant;

    const C: u32 = 1;
    const S: u32 = 2;

    /// The `/echo` resource: PUT/POST store the payload and echo it, GET returns it.
    #[derive(Default)]
    struct Echo {
        stored: Vec<u8>,
        calls: u32,
    }

    impl Echo {
        fn serve(&mut self, server: &mut Endpoint<u32>, now: Instant) {
            while let Some(ev) = server.poll_event() {
                if let Event::Request { id, message, .. } = ev {
                    self.calls += 1;
                    let r = if message.code == Code::GET {
                        Response::content(self.stored.clone())
                    } else {
                        self.stored = message.payload.clone();
                        Response::new(Code::CHANGED).with_payload(message.payload)
                    };
                    server.respond(now, id, r).unwrap();
                }
            }
        }
    }

    /// Run `request` to its end; the response and the number of datagrams the client sent.
    fn run(client: &mut Endpoint<u32>, server: &mut Endpoint<u32>, app: &mut Echo, request: Request) -> (Message, u32) {
        let now = Instant::from_millis(5);
        client.request(now, S, request);
        let mut sent = 0;
        for _ in 0..10_000 {
            while let Some(t) = client.poll_transmit(now) {
                sent += 1;
                server.handle_datagram(now, C, &t.bytes);
            }
            app.serve(server, now);
            let mut moved = false;
            while let Some(t) = server.poll_transmit(now) {
                moved = true;
                client.handle_datagram(now, S, &t.bytes);
            }
            if let Some(ev) = client.poll_event() {
                match ev {
                    Event::Response { response, .. } => return (response, sent),
                    other => panic!("{other:?}"),
                }
            }
            assert!(moved, "stalled");
        }
        panic!("no end")
    }

    #[test]
    fn bodies_of_1_2_10_and_100_blocks_come_back_whole() {
        for blocks in [1usize, 2, 10, 100] {
            for len in [blocks * 1024 - 24, blocks * 1024] {
                let mut client = Endpoint::<u32>::with_seed(EndpointConfig::default(), 1);
                let mut server = Endpoint::<u32>::with_seed(EndpointConfig::default(), 2);
                let mut app = Echo::default();
                let body: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
                let (r, sent) = run(&mut client, &mut server, &mut app, Request::post("/echo", body.clone()));
                assert_eq!((r.code, r.payload.len()), (Code::CHANGED, len), "{blocks} blocks");
                assert_eq!(r.payload, body);
                assert_eq!(app.calls, 1, "the resource ran once for {len} bytes");
                // Blocks up, then (beyond one block) the rest of the echo down.
                let n = len.div_ceil(1024) as u32;
                assert_eq!(sent, if n == 1 { 1 } else { 2 * n - 1 }, "{len} bytes");
                assert_eq!(server.transfers().active(), 0, "the kept representation is done with its last block");
                let (r, _) = run(&mut client, &mut server, &mut app, Request::get("/echo"));
                assert_eq!(r.payload, body, "GET /echo after POST of {len} bytes");
                // A GET changes nothing: each of its blocks is asked of the resource.
                assert_eq!(app.calls, 1 + n);
            }
        }
    }

    /// A Block2 follow-up of a POST for which nothing is kept (another peer's, expired, or
    /// never sent) gets 4.08 and never reaches the resource, which keeps what it stored; within
    /// the linger time after the last block, a block asked for again is served.
    #[test]
    fn a_stray_follow_up_cannot_wipe_stored_state() {
        let mut client = Endpoint::<u32>::with_seed(EndpointConfig::default(), 1);
        let mut server = Endpoint::<u32>::with_seed(EndpointConfig::default(), 2);
        let mut app = Echo::default();
        let body = vec![7u8; 3000];
        run(&mut client, &mut server, &mut app, Request::post("/echo", body.clone()));
        // Within the linger time the representation answers a block asked for again; another
        // peer's request, or a block beyond the end, never reaches the resource; after it,
        // nothing is kept and a follow-up gets 4.08.
        let cases = [
            (10, 3u32, 1u32, Code::REQUEST_ENTITY_INCOMPLETE),
            (10, C, 5, Code::BAD_OPTION),
            (10, C, 2, Code::CHANGED),
        ];
        let later = [(9_000, C, 1, Code::REQUEST_ENTITY_INCOMPLETE), (9_000, C, 2, Code::REQUEST_ENTITY_INCOMPLETE)];
        for (ms, peer, num, want) in cases.into_iter().chain(later) {
            let mut m =
                Message::new(MessageType::Con, Code::POST, 77 + num as u16 + ms as u16).with_token(Token::from_u64(9));
            m.add_uri_path("echo");
            m.set_block2(Block { num, more: false, szx: 6 }).unwrap();
            let now = Instant::from_millis(ms);
            server.handle_datagram(now, peer, &m.to_bytes());
            app.serve(&mut server, now);
            let a = Message::decode(&server.poll_transmit(now).unwrap().bytes).unwrap();
            assert_eq!(a.code, want, "peer {peer}, block {num}, at {ms} ms");
        }
        assert_eq!((app.calls, app.stored.len()), (1, 3000));
    }
}
