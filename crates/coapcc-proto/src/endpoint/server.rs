//! Server role: new requests, duplicates (answered by the protocol layer's duplicate rule),
//! piggybacked, separate and NON responses, Empty ACKs for slow requests, Block2 slicing.

use super::block::{self, Slice};
use super::dedup::{Cached, Reply};
use super::lifecycle::DuplicateAnswer;
use super::timers::TimerKey;
use super::transfers::{keeps_representation, resource_key};
use super::{
    known_critical, Endpoint, Event, Peer, RecordKind, Response, Served, ServerRequestId, TransmitKind, UnknownRequest,
};
use crate::message::encode_parts;
use crate::option;
use crate::{Code, Message, MessageType, Token};
use coapcc_cc::Instant;

impl<P: Peer> Endpoint<P> {
    /// Answer server request `id`. Before the piggyback timeout (and before any duplicate
    /// of the request arrived) the response rides in the ACK; after the Empty ACK it is
    /// sent as a separate CON (retransmitted under congestion control). NON requests get a
    /// NON response. Large payloads are sliced per the request's Block2 option and
    /// [`EndpointConfig::block_szx`](super::EndpointConfig::block_szx).
    pub fn respond(&mut self, now: Instant, id: ServerRequestId, response: Response) -> Result<(), UnknownRequest> {
        self.respond_ref(now, id, &response)
    }

    /// [`Endpoint::respond`] with a borrowed response (a server that sends the same
    /// response to many requests keeps one and copies nothing but the encoded datagram).
    pub fn respond_ref(
        &mut self,
        now: Instant,
        id: ServerRequestId,
        response: &Response,
    ) -> Result<(), UnknownRequest> {
        let s = self.served.remove(&id).ok_or(UnknownRequest(id))?;
        self.timers.rearm(TimerKey::Served(id), s.deadline, None);
        self.answer(now, id, s, response);
        Ok(())
    }

    /// Answer request `id` with `response` (`s`: its record, out of the table, its timer
    /// off).
    #[inline]
    fn answer(&mut self, now: Instant, id: ServerRequestId, s: Served<P>, response: &Response) {
        if !self.keep_keys.is_empty() {
            if let Some(key) = self.keep_keys.remove(&id) {
                self.keep_if_sliced(now, &s, key, response);
            }
        }
        // Answered in one message (not a separate response, which keeps the peer's pending
        // count until its own exchange finishes): the request is finished.
        if s.con && !s.acked {
            // Encoded once into a recycled buffer; the cache keeps its header, token and
            // (shared) body for duplicates.
            let mut b = self.buffer();
            let (kind, token) = if self.sent_whole(&s, response) {
                // The response as it is, without an intermediate message: the same bytes
                // as `build_response` would give (no Block2 to drop, no Block1 to echo, the
                // whole payload), with the header and token of the ACK.
                let (ack, code) = (MessageType::Ack, response.code);
                encode_parts(&mut b, ack, code, s.mid, &s.token, &response.options, &response.payload);
                (super::transmit_kind_of(ack, code), s.token)
            } else {
                let mut m = self.limit_amplification(&s, response);
                m.mtype = MessageType::Ack;
                m.message_id = s.mid;
                m.encode(&mut b);
                self.payload_spare = core::mem::take(&mut m.payload);
                (super::transmit_kind(&m), m.token)
            };
            self.dedup.answered(&s.peer, s.mid, &b, kind, token);
            self.send_bytes(s.peer, b, kind);
        } else {
            let msg = self.limit_amplification(&s, response);
            if !s.con {
                self.release_pending(&s.peer);
            }
            self.respond_apart(now, id, s, msg);
        }
        self.pump(now);
    }

    /// Whether the answer to `s` carrying `r` goes out in Block2 blocks with more to come.
    fn more_blocks(&self, s: &Served<P>, r: &Response) -> bool {
        let slice = block::slice(r.payload.len(), s.block2, self.config.block_szx, self.config.max_unblocked_payload);
        r.code.is_success() && matches!(slice, Slice::Block(b, _) if b.more)
    }

    /// Keep the answer `r` to a request that changed state for its Block2 follow-ups when it
    /// goes out block-wise (out of line: rare).
    #[cold]
    #[inline(never)]
    fn keep_if_sliced(&mut self, now: Instant, s: &Served<P>, key: Vec<u8>, r: &Response) {
        if self.more_blocks(s, r) {
            let mut kept = r.clone();
            kept.options.remove(option::BLOCK2);
            self.transfers.keep(now, &s.peer, key, kept);
        }
    }

    /// Answer request `id` (`s`, not in the table), a Block2 follow-up of request `key`, from
    /// the representation kept for it, or with 4.08 when none is kept (out of line: rare).
    #[cold]
    #[inline(never)]
    fn answer_follow_up(&mut self, now: Instant, id: ServerRequestId, s: Served<P>, key: Vec<u8>) {
        let peer = s.peer.clone();
        match self.transfers.take_kept(now, &peer, &key) {
            Some(r) => {
                let more = self.more_blocks(&s, &r);
                self.answer(now, id, s, &r);
                // After its last block it lingers a while, for a block asked for again.
                self.transfers.restore(now, &peer, key, r, !more);
            }
            None => self.answer(now, id, s, &super::transfers::follow_up_unknown()),
        }
    }

    /// Whether the answer to `s` is `r` as it is: the whole payload (not sliced into a
    /// Block2 block), no Block2 option of its own to drop, no Block1 option to echo, and no
    /// amplification limit that could replace it.
    #[inline]
    fn sent_whole(&self, s: &Served<P>, r: &Response) -> bool {
        self.config.amplification_limit.is_none()
            && s.block1.is_none()
            && (!r.code.is_success() || (s.block2.is_none() && r.payload.len() <= self.config.max_unblocked_payload))
            && !r.options.contains(option::BLOCK2)
    }

    /// [`Endpoint::respond_ref`] for a response not piggybacked: a separate CON after an
    /// Empty ACK, or the NON answer to a NON request (out of line).
    #[inline(never)]
    fn respond_apart(&mut self, now: Instant, id: ServerRequestId, s: Served<P>, msg: Message) {
        let mut m = msg;
        if s.con {
            m.mtype = MessageType::Con;
            self.enqueue(now, s.peer, RecordKind::SeparateResponse(id), m, true, false);
        } else {
            m.mtype = MessageType::Non;
            m.message_id = self.alloc_mid(&s.peer);
            self.dedup.update(&s.peer, s.mid, Cached::Silent);
            self.send(s.peer, &m);
        }
    }

    /// Acknowledge server request `id` with an Empty ACK now, so that its response will be
    /// separate. No-op for NON requests and requests already acknowledged.
    pub fn defer(&mut self, id: ServerRequestId) -> Result<(), UnknownRequest> {
        let s = self.served.get(&id).ok_or(UnknownRequest(id))?;
        if s.con && !s.acked {
            self.send_empty_ack(id);
        }
        Ok(())
    }

    // ----------------------------------------------------------------------------------
    // Server side
    // ----------------------------------------------------------------------------------

    pub(super) fn lifetime(&self, now: Instant, con: bool) -> Option<Instant> {
        let d = if con { self.con_lifetime } else { self.non_lifetime };
        d.map(|d| now + d)
    }

    /// Answer a duplicate as the protocol layer's duplicate rules decided
    /// ([`lifecycle::classify`](super::lifecycle::classify)).
    pub(super) fn handle_duplicate(
        &mut self,
        peer: P,
        mid: u16,
        answer: DuplicateAnswer<Token>,
        replay: Option<(Vec<u8>, TransmitKind)>,
    ) {
        self.stats.duplicates += 1;
        match answer {
            DuplicateAnswer::EmptyAck => self.ack_duplicate(peer, mid),
            DuplicateAnswer::Replay { .. } => {
                // The datagram (with the echoed token) was read from the entry by
                // `classify_entry`.
                if let Some((bytes, kind)) = replay {
                    self.send_bytes(peer.clone(), bytes, kind);
                    if let Some(t) = self.transmits.back_mut() {
                        t.echoed = Some(self.config.duplicate_mode.echoed());
                    }
                }
            }
            DuplicateAnswer::Suppressed => self.stats.duplicates_suppressed += 1,
            DuplicateAnswer::Ignore => {}
        }
    }

    /// A duplicate of request `mid` of `peer` that the application has not answered yet:
    /// acknowledge at once so the client stops retransmitting; the response will be
    /// separate (out of line: a server that answers at once never takes it).
    #[inline(never)]
    fn ack_duplicate(&mut self, peer: P, mid: u16) {
        match self.dedup.pending_id(&peer, mid).filter(|id| self.served.get(id).is_some_and(|s| !s.acked)) {
            Some(id) => self.send_empty_ack(id),
            None => self.send(peer, &Message::empty_ack(mid)),
        }
    }

    /// A new request (out of line: the dispatcher's common case is a duplicate or an ACK),
    /// answered at once if `respond` gives the answer ([`Endpoint::handle_datagram_with`]).
    #[inline(never)]
    pub(super) fn handle_request<'r>(
        &mut self,
        now: Instant,
        peer: P,
        msg: Message,
        respond: &mut dyn FnMut(&Message) -> Option<&'r Response>,
    ) {
        let con = msg.mtype == MessageType::Con;
        let expires = self.lifetime(now, con);
        if self.dedup.pending(&peer) as usize >= self.config.max_pending_per_peer {
            self.refuse(peer, msg, expires);
            return;
        }
        let id = ServerRequestId(self.fresh_id());
        // One walk over the options: which of those the request layer reads are present,
        // and the first unknown critical one; each is then parsed only when present.
        let (mut has_block2, mut has_block1, mut has_size2, mut has_observe) = (false, false, false, false);
        let mut unknown = None;
        for o in msg.options.iter() {
            match o.number {
                option::BLOCK2 => has_block2 = true,
                option::BLOCK1 => has_block1 = true,
                option::SIZE2 => has_size2 = true,
                option::OBSERVE => has_observe = true,
                n if unknown.is_none() && option::is_critical(n) && !known_critical(n) => unknown = Some(n),
                _ => {}
            }
        }
        let block2 = if has_block2 { msg.block2() } else { Ok(None) };
        let bad = unknown.is_some() || block2.is_err();
        let s = Served {
            peer: peer.clone(),
            mid: msg.message_id,
            token: msg.token,
            con,
            block2: block2.ok().flatten(),
            block1: None,
            size2: has_size2,
            acked: false,
            deadline: if con { Some(now + self.config.piggyback_timeout) } else { None },
            request_len: msg.encoded_len(),
            safe: msg.code == Code::GET || msg.code == Code::FETCH,
        };
        if self.config.amplification_limit.is_some() {
            self.check_echo(&peer, &msg);
        }
        if has_observe {
            self.deregister(&peer, &msg);
        }
        self.dedup.insert_pending(peer.clone(), msg.message_id, id, expires);
        if !bad && keeps_representation(msg.code) {
            let key = resource_key(msg.code, &msg.options);
            if !has_block1 && s.block2.is_some_and(|b| b.num > 0) {
                // A later block of an answer to a request that changed state: from the kept
                // representation, never from the resource again (RFC 7959 §3.3).
                self.stats.requests_received += 1;
                return self.answer_follow_up(now, id, s, key);
            }
            self.keep_keys.insert(id, key);
        }
        if !bad && !has_block1 {
            if let Some(r) = respond(&msg) {
                // As reported and answered at once: the record never enters the table and
                // its piggyback timer is never armed.
                self.stats.requests_received += 1;
                return self.answer(now, id, s, r);
            }
        }
        self.timers.rearm(TimerKey::Served(id), None, s.deadline);
        self.served.insert(id, s);
        if bad {
            return self.reject_options(now, id, unknown);
        }
        let mut msg = msg;
        if has_block1 {
            match self.request_block1(now, id, &peer, msg) {
                Some(m) => msg = m,
                None => return,
            }
        }
        self.stats.requests_received += 1;
        self.events.push_back(Event::Request { id, peer, message: msg });
    }

    /// Answer a request over the peer's limit with 5.03 Service Unavailable and Max-Age
    /// (RFC 7252 §5.9.3.4), piggybacked on the ACK of a CON or as a NON; remembered like any
    /// answer, so duplicates get the same reply. The application never sees the request.
    #[cold]
    #[inline(never)]
    fn refuse(&mut self, peer: P, msg: Message, expires: Option<Instant>) {
        self.stats.requests_refused += 1;
        let con = msg.mtype == MessageType::Con;
        let mut m = Message::new(MessageType::Ack, Code::SERVICE_UNAVAILABLE, msg.message_id).with_token(msg.token);
        m.options.add(option::MAX_AGE, option::encode_uint(u64::from(self.config.overload_max_age_s)));
        if con {
            self.dedup.insert(peer.clone(), msg.message_id, Cached::Reply(Reply::of(&m)), expires);
        } else {
            m.mtype = MessageType::Non;
            m.message_id = self.alloc_mid(&peer);
            self.dedup.insert(peer.clone(), msg.message_id, Cached::Silent, expires);
        }
        self.send(peer, &m);
    }

    /// Answer request `id` 4.02 Bad Option: its first unknown critical option `unknown`, else
    /// a malformed Block2 option (out of line: rare).
    #[cold]
    #[inline(never)]
    fn reject_options(&mut self, now: Instant, id: ServerRequestId, unknown: Option<u16>) {
        let text = match unknown {
            Some(n) => format!("unknown critical option {n}"),
            None => "malformed Block2 option".to_string(),
        };
        self.stats.requests_rejected += 1;
        let _ = self.respond(now, id, Response::new(Code::BAD_OPTION).with_payload(text));
    }

    /// A request with a Block1 option: the whole body once the last block is in (`None`:
    /// request `id` was answered here, a malformed option, or a block to acknowledge).
    #[inline(never)]
    fn request_block1(&mut self, now: Instant, id: ServerRequestId, peer: &P, mut msg: Message) -> Option<Message> {
        match msg.block1() {
            Err(_) => {
                self.stats.requests_rejected += 1;
                let r = Response::new(Code::BAD_OPTION).with_payload(b"malformed Block1 option".to_vec());
                let _ = self.respond(now, id, r);
                None
            }
            Ok(Some(b)) => match self.upload_block(now, peer, &msg, b) {
                super::transfers::Step::Answer(r) => {
                    let _ = self.respond(now, id, r);
                    None
                }
                super::transfers::Step::Complete(body) => {
                    msg.payload = body;
                    msg.options.remove(option::BLOCK1);
                    msg.options.remove(option::SIZE1);
                    if let Some(s) = self.served.get_mut(&id) {
                        s.block1 = Some(b);
                    }
                    Some(msg)
                }
            },
            Ok(None) => Some(msg),
        }
    }

    /// A server request of `peer` finished (answered in one message, or its separate
    /// response's exchange ended).
    pub(super) fn release_pending(&mut self, peer: &P) {
        self.dedup.release(peer);
    }

    pub(super) fn send_empty_ack(&mut self, id: ServerRequestId) {
        if let Some(s) = self.served.get_mut(&id) {
            s.acked = true;
            self.timers.rearm(TimerKey::Served(id), s.deadline.take(), None);
            let (peer, mid) = (s.peer.clone(), s.mid);
            let ack = Message::empty_ack(mid);
            let mut b = self.buffer();
            ack.encode(&mut b);
            let reply = Reply::encoded(&b, super::transmit_kind(&ack));
            self.send_bytes(peer.clone(), b, reply.kind());
            self.dedup.update(&peer, mid, Cached::Reply(reply));
        }
    }

    /// The answer to `s` carrying `r`, sliced into Block2 blocks of at most 2^(`max_szx`+4)
    /// bytes when larger than `max_unblocked` (or when the request asked for a block).
    #[inline]
    pub(super) fn build_response(&mut self, s: &Served<P>, r: &Response, max_szx: u8, max_unblocked: usize) -> Message {
        let mut m = Message::new(MessageType::Ack, r.code, 0).with_token(s.token);
        m.options = r.options.clone();
        m.options.remove(option::BLOCK2);
        if let Some(b) = s.block1 {
            let _ = m.set_block1(b);
        }
        let len = r.payload.len();
        let slice =
            if r.code.is_success() { block::slice(len, s.block2, max_szx, max_unblocked) } else { Slice::Whole };
        match slice {
            Slice::Whole => {
                // Into the buffer of the last piggybacked response (no allocation per answer).
                let mut p = core::mem::take(&mut self.payload_spare);
                p.clear();
                p.extend_from_slice(&r.payload);
                m.payload = p;
            }
            Slice::Block(b, range) => {
                let _ = m.set_block2(b);
                if s.size2 || (b.num == 0 && s.block2.is_none()) {
                    m.set_size2(len as u32);
                }
                m.payload = r.payload[range].to_vec();
            }
            Slice::OutOfRange => {
                m.code = Code::BAD_OPTION;
                m.options = Default::default();
                m.payload = b"Block2 out of range".to_vec();
            }
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::super::{EndpointConfig, Request};
    use super::*;
    use crate::Block;

    /// A piggybacked answer is the message `build_response` makes of the response, with the
    /// ACK's type and Message ID, whether it is sent as it is (whole, no Block options) or
    /// built (sliced, a Block2 option to drop, an Echo challenge): for every response shape
    /// and request, the datagram sent equals that message's encoding.
    #[test]
    fn piggybacked_answers_are_the_built_responses() {
        let big: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
        let mut with_block2 = Response::content(b"abc".to_vec());
        with_block2.options.set_block2(Block { num: 0, more: false, szx: 2 }).unwrap();
        let mut with_options = Response::content(b"xyz".to_vec());
        with_options.options.set_content_format(50);
        with_options.options.add(option::ETAG, [1, 2, 3]);
        let responses = [
            Response::content(vec![b'x'; 60]),
            Response::content(Vec::new()),
            Response::new(Code::CHANGED),
            with_options,
            with_block2,
            Response::content(big.clone()),
            Response::new(Code::NOT_FOUND).with_payload(big.clone()),
        ];
        let requests = [Request::get("/a"), Request::get("/a").with_block2_szx(3), Request::put("/b", b"up".to_vec())];
        for limit in [None, Some(3)] {
            for (ri, response) in responses.iter().enumerate() {
                for (qi, request) in requests.iter().enumerate() {
                    let cfg = EndpointConfig { amplification_limit: limit, ..Default::default() };
                    let mut client = Endpoint::<u8>::with_seed(EndpointConfig::default(), 7 + qi as u64);
                    let mut server = Endpoint::<u8>::with_seed(cfg, 9);
                    let now = Instant::ZERO;
                    client.request(now, 2, request.clone());
                    let t = client.poll_transmit(now).unwrap();
                    server.handle_datagram(now, 1, &t.bytes);
                    let Some(Event::Request { id, .. }) = server.poll_event() else { panic!("a request") };
                    let s = server.served.remove(&id).unwrap();
                    let mut expected = server.limit_amplification(&s, response);
                    expected.mtype = MessageType::Ack;
                    expected.message_id = s.mid;
                    server.served.insert(id, s);
                    server.respond_ref(now, id, response).unwrap();
                    let sent = server.poll_transmit(now).unwrap();
                    assert_eq!(sent.bytes, expected.to_bytes(), "response {ri}, request {qi}, limit {limit:?}");
                    assert_eq!(sent.kind, super::super::transmit_kind(&expected));
                }
            }
        }
    }
}
