//! RFC 7959 Block1: block-wise request payloads, both roles.
//!
//! - **Server**: a request carrying Block1 with M = 1 is answered by the endpoint itself with
//!   2.31 Continue (echoing the Block1 option) and its payload is kept; the block with M = 0
//!   completes the body, and the application sees one request with the whole payload (no
//!   Block1 option). Its response carries Block1 (the last block's number, M = 0). At most
//!   [`EndpointConfig::max_uploads`](super::EndpointConfig::max_uploads) uploads are in
//!   progress (the oldest is dropped beyond), each at most
//!   [`EndpointConfig::max_upload_size`](super::EndpointConfig::max_upload_size) bytes
//!   (4.13 Request Entity Too Large with Size1 beyond); a block out of sequence gets 4.08
//!   Request Entity Incomplete.
//! - **Client**: a payload larger than
//!   [`EndpointConfig::max_unblocked_payload`](super::EndpointConfig::max_unblocked_payload)
//!   is sent in Block1 blocks of 2^([`EndpointConfig::block_szx`](super::EndpointConfig::block_szx)+4)
//!   bytes (Size1 on the first), each sent when the previous one got 2.31 Continue, never as one
//!   oversized datagram; a server asking for a smaller size gets it.

use super::block;
use super::Request;
use super::{ClientReq, Endpoint, Peer};
use crate::{option, Block, Code, Message};
use coapcc_cc::Instant;

/// A request payload being received block by block.
pub(super) struct Upload {
    body: Vec<u8>,
    started: Instant,
}

/// Client side: where an outgoing block-wise payload stands.
#[derive(Clone, Copy, Debug)]
pub(super) struct Outgoing {
    /// Offset of the block being sent.
    pub(super) offset: usize,
    /// Its size exponent.
    pub(super) szx: u8,
}

/// What the server does with one Block1 request.
pub(super) enum Step {
    /// Answer now with this response (2.31, 4.08 or 4.13).
    Answer(super::Response),
    /// The body is complete: hand the request to the application with it.
    Complete(Vec<u8>),
}

/// The key of an upload: the peer and the request's options other than the block-wise ones
/// (RFC 7959 §2.4: blocks belong together when their requests match).
fn upload_key(msg: &Message) -> Vec<u8> {
    let mut k = vec![msg.code.raw()];
    for o in msg.options.iter() {
        if !matches!(o.number, option::BLOCK1 | option::BLOCK2 | option::SIZE1 | option::SIZE2 | super::ECHO) {
            k.extend_from_slice(&o.number.to_be_bytes());
            k.extend_from_slice(&(o.value.len() as u32).to_be_bytes());
            k.extend_from_slice(o.value);
        }
    }
    k
}

impl<P: Peer> Endpoint<P> {
    /// Server: take one Block1 request `b` from `peer`.
    pub(super) fn upload_block(&mut self, now: Instant, peer: &P, msg: &Message, b: Block) -> Step {
        let key = (peer.clone(), upload_key(msg));
        let size = b.block_size();
        let offset = b.num as usize * size;
        if b.more && msg.payload.len() != size {
            self.uploads.remove(&key);
            return Step::Answer(
                super::Response::new(Code::BAD_REQUEST).with_payload(b"Block1 size mismatch".to_vec()),
            );
        }
        if b.num == 0 {
            while self.uploads.len() >= self.config.max_uploads.max(1) {
                let oldest = self.uploads.iter().min_by_key(|(_, u)| u.started).map(|(k, _)| k.clone());
                match oldest {
                    Some(k) => {
                        self.uploads.remove(&k);
                    }
                    None => break,
                }
            }
            self.uploads.insert(key.clone(), Upload { body: Vec::new(), started: now });
        }
        let Some(up) = self.uploads.get_mut(&key) else {
            return Step::Answer(incomplete());
        };
        if up.body.len() != offset {
            self.uploads.remove(&key);
            return Step::Answer(incomplete());
        }
        if offset + msg.payload.len() > self.config.max_upload_size {
            self.uploads.remove(&key);
            let mut r = super::Response::new(Code::REQUEST_ENTITY_TOO_LARGE);
            r.options.set_uint(option::SIZE1, self.config.max_upload_size as u64);
            return Step::Answer(r);
        }
        up.body.extend_from_slice(&msg.payload);
        if b.more {
            let mut r = super::Response::new(Code::CONTINUE);
            let _ = r.options.set_block1(b);
            return Step::Answer(r);
        }
        let up = self.uploads.remove(&key).expect("present");
        self.stats.uploads_completed += 1;
        Step::Complete(up.body)
    }

    /// Uploads in progress (server role).
    pub fn uploads_in_progress(&self) -> usize {
        self.uploads.len()
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

fn incomplete() -> super::Response {
    super::Response::new(Code::REQUEST_ENTITY_INCOMPLETE).with_payload(b"Block1 out of sequence".to_vec())
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
    m
}

#[cfg(test)]
mod tests {
    use super::super::{Endpoint, EndpointConfig, Event, Request, Response};
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
        let mut s = Endpoint::<u32>::with_seed(EndpointConfig { max_upload_size: 40, ..Default::default() }, 1);
        assert_eq!(answer(&mut s, &block(1, 0, true, 16)), Code::CONTINUE);
        assert_eq!(answer(&mut s, &block(2, 2, true, 16)), Code::REQUEST_ENTITY_INCOMPLETE);
        assert_eq!(answer(&mut s, &block(3, 1, true, 16)), Code::REQUEST_ENTITY_INCOMPLETE, "state dropped");
        assert_eq!(answer(&mut s, &block(4, 0, true, 16)), Code::CONTINUE);
        assert_eq!(answer(&mut s, &block(5, 1, true, 16)), Code::CONTINUE);
        assert_eq!(answer(&mut s, &block(6, 2, false, 16)), Code::REQUEST_ENTITY_TOO_LARGE);
        assert_eq!(s.uploads_in_progress(), 0);
        assert!(s.poll_event().is_none(), "nothing reached the application");
        // Bounded number of uploads in progress.
        let mut s = Endpoint::<u32>::with_seed(EndpointConfig { max_uploads: 3, ..Default::default() }, 1);
        for i in 0..10u16 {
            let mut m = Message::new(MessageType::Con, Code::POST, i).with_token(Token::from_u64(1));
            m.add_uri_path(&format!("u{i}"));
            m.set_block1(Block { num: 0, more: true, szx: 0 }).unwrap();
            m.payload = vec![0; 16];
            assert_eq!(answer(&mut s, &m.to_bytes()), Code::CONTINUE);
            assert!(s.uploads_in_progress() <= 3);
        }
    }
}
