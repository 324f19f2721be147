//! Client role: requests, and what comes back for them (ACKs, piggybacked and separate
//! responses, RSTs), with copy identification by the last token byte, and Block2
//! reassembly.

use super::dedup::{Cached, Reply};
use super::hash::Entry;
use super::timers::TimerKey;
use super::{
    ClientReq, Endpoint, Event, FailReason, Out, OutState, Outcome, Peer, PeerState, RecordKind, Request, RequestId,
};
use crate::option;
use crate::{Block, Code, Message, MessageRef, MessageType, Token};
use coapcc_cc::Instant;

impl<P: Peer> Endpoint<P> {
    /// Send `request` to `peer`. It starts now if `peer` has a free NSTART slot (and its
    /// algorithm's `earliest_start` allows), otherwise it waits in `peer`'s queue. The
    /// outcome arrives as [`Event::Response`] or [`Event::Failed`].
    pub fn request(&mut self, now: Instant, peer: P, request: Request) -> RequestId {
        let id = RequestId(self.fresh_id());
        let block = request.block2_szx.map(|szx| Block { num: 0, more: false, szx: szx.min(6) });
        // No payload, no Block1 upload (without reading the configuration).
        let upload = if request.payload.is_empty() { None } else { self.plan_upload(&request) };
        let msg = match upload {
            Some(up) => super::block1::upload_request(&request, up),
            None => build_request(&request, block),
        };
        let con = request.confirmable;
        // A fresh id: no lookup.
        self.requests.insert_new(Entry {
            key: id,
            value: ClientReq {
                template: request,
                body: Vec::new(),
                blockwise: false,
                block,
                blocks: 0,
                echo_retries: 0,
                upload,
            },
        });
        self.enqueue_and_pump(now, peer, RecordKind::Request(id), msg, con);
        id
    }

    // ----------------------------------------------------------------------------------
    // Client side: receiving
    // ----------------------------------------------------------------------------------

    /// An ACK (Empty, or carrying a piggybacked response), read in place: only a response
    /// that answers one of our requests is copied out.
    pub(super) fn handle_ack(&mut self, now: Instant, peer: P, msg: MessageRef<'_>) {
        let Some(&xid) = self.by_mid.get(&(peer.clone(), msg.message_id)) else {
            self.stats.unmatched += 1;
            return;
        };
        self.handle_matched_ack(now, peer, xid, msg);
    }

    /// An ACK whose Message ID is that of exchange `xid` (out of line: most ACKs in a
    /// congested network are late copies that match nothing).
    #[inline(never)]
    fn handle_matched_ack(&mut self, now: Instant, peer: P, xid: u64, msg: MessageRef<'_>) {
        let out = &self.outs[&xid];
        if !matches!(out.state, OutState::WaitAck { .. }) {
            self.stats.unmatched += 1;
            return;
        }
        if msg.code.is_empty() {
            self.ack_cc(now, xid, None);
            let out = self.outs.get_mut(&xid).expect("present");
            self.by_mid.remove(&(peer, msg.message_id));
            match out.kind {
                RecordKind::Request(_) => {
                    let old = out.state.deadline();
                    out.state = OutState::WaitResponse { deadline: now + self.response_timeout };
                    self.timers.rearm(TimerKey::Out(xid), old, out.state.deadline());
                }
                RecordKind::SeparateResponse(_) => {
                    self.finish(now, xid, Outcome::Acknowledged, None);
                }
            }
        } else if msg.code.is_response() && matches!(out.kind, RecordKind::Request(_)) {
            let Some(ordinal) = token_ordinal(out, &msg.token) else {
                self.stats.unmatched += 1;
                return;
            };
            // Acknowledged and finished with one lookup of the exchange and of its peer.
            let (kind, peer) = self.finish_with(now, xid, Some(ordinal), Outcome::Piggybacked, Some((now, msg.code)));
            if let RecordKind::Request(id) = kind {
                // The payload goes into a recycled buffer (the application may give it back).
                let m = msg.to_message_in(self.buffer());
                self.deliver(now, id, peer, m, ordinal);
            }
        } else {
            self.stats.unmatched += 1;
        }
    }

    #[inline(never)]
    pub(super) fn handle_rst(&mut self, now: Instant, peer: P, mid: u16) {
        let Some(&xid) = self.by_mid.get(&(peer, mid)) else {
            self.stats.unmatched += 1;
            return;
        };
        self.stats.rst_received += 1;
        let out = &self.outs[&xid];
        if let (Some(ex), OutState::WaitAck { .. }) = (out.con_ex, out.state) {
            if let Some(p) = self.peers.get_mut(&out.peer) {
                ex.reset(&mut p.cc, now);
            }
        }
        let (kind, peer) = self.finish(now, xid, Outcome::Failed(FailReason::Reset), None);
        self.fail(kind, peer, FailReason::Reset);
    }

    #[inline(never)]
    pub(super) fn handle_separate_response(&mut self, now: Instant, peer: P, msg: Message) {
        let con = msg.mtype == MessageType::Con;
        let expires = self.lifetime(now, con);
        let found = self.lookup_token(&peer, &msg.token);
        let Some((xid, ordinal)) = found else {
            if self.take_notification(now, &peer, &msg) {
                return;
            }
            // RFC 7252 §4.2/§4.3: a response we cannot match is rejected.
            self.stats.unmatched += 1;
            if con {
                let rst = Message::reset(msg.message_id);
                self.dedup.insert(peer.clone(), msg.message_id, Cached::Reply(Reply::of(&rst)), expires);
                self.send_rst(peer, msg.message_id);
            } else {
                self.dedup.insert(peer, msg.message_id, Cached::Silent, expires);
            }
            return;
        };
        if con {
            let ack = Message::empty_ack(msg.message_id);
            self.dedup.insert(peer.clone(), msg.message_id, Cached::Reply(Reply::of(&ack)), expires);
            self.send(peer, &ack);
        } else {
            self.dedup.insert(peer, msg.message_id, Cached::Silent, expires);
        }
        let out = &self.outs[&xid];
        let outcome = if out.con { Outcome::Separate } else { Outcome::NonResponse };
        if matches!(out.state, OutState::WaitAck { .. }) || !out.con {
            // The response overtook (or replaced) the ACK: it acknowledges the request too.
            // (For a NON request this only records the RTT and frees the NSTART slot.)
            self.ack_cc(now, xid, ordinal);
        }
        let (kind, peer) = self.finish(now, xid, outcome, Some((now, msg.code)));
        if let RecordKind::Request(id) = kind {
            self.deliver(now, id, peer, msg, ordinal);
        }
    }

    /// Find the request exchange a response token belongs to, with the copy ordinal it
    /// echoes (copy identification only).
    pub(super) fn lookup_token(&self, peer: &P, token: &Token) -> Option<(u64, Option<u32>)> {
        if let Some(&xid) = self.by_token.get(&(peer.clone(), *token)) {
            if !self.outs[&xid].copy_id {
                return Some((xid, None));
            }
        }
        let n = token.len();
        if n >= 1 {
            let base = Token::new(&token.as_bytes()[..n - 1]).ok()?;
            if let Some(&xid) = self.by_token.get(&(peer.clone(), base)) {
                let out = &self.outs[&xid];
                if out.copy_id {
                    return token_ordinal(out, token).map(|o| (xid, o));
                }
            }
        }
        None
    }

    /// Report the first ACK of `xid` to its algorithm and free its NSTART slot.
    pub(super) fn ack_cc(&mut self, now: Instant, xid: u64, ordinal: Option<u32>) {
        let out = self.outs.get_mut(&xid).expect("present");
        let p = self.peers.get_mut(&out.peer);
        acknowledge(out, p, now, ordinal);
    }

    /// Hand a response to the request layer: continue a Block2 transfer or report it.
    pub(super) fn deliver(&mut self, now: Instant, id: RequestId, peer: P, msg: Message, copy: Option<u32>) {
        let Some(req) = self.requests.get(&id) else {
            return;
        };
        // The common case inline: a whole response (no Block2, no Echo, no upload) to a
        // request that is not block-wise; everything else out of line (`deliver_other`),
        // which decides the same for this case.
        let (observe, block2, echo) = observe_block2_echo(&msg.options);
        let plain = msg.code != super::echo::UNAUTHORIZED
            && req.upload.is_none()
            && !req.blockwise
            && !echo
            && (!msg.code.is_success() || !block2);
        if !plain {
            return self.deliver_other(now, id, peer, msg, copy);
        }
        // Read in place, then dropped where it is (not copied out of the table).
        let observe_asked = observe.then(|| req.template.options.get_uint(option::OBSERVE) == Some(0));
        self.requests.discard(&id);
        if let Some(asked) = observe_asked {
            self.keep_observing(id, &peer, &msg, asked);
        }
        self.events.push_back(Event::Response { id, peer, response: msg, copy });
    }

    /// [`Endpoint::deliver`] for everything but a plain whole response: Echo retries, Block1
    /// uploads, Block2 transfers, bad blocks.
    #[inline(never)]
    fn deliver_other(&mut self, now: Instant, id: RequestId, peer: P, mut msg: Message, copy: Option<u32>) {
        let Some(req) = self.requests.get_mut(&id) else {
            return;
        };
        if msg.code == super::echo::UNAUTHORIZED && req.echo_retries < 2 {
            // RFC 9175: the server wants proof that we receive at our address; repeat the
            // request (the same block) with its Echo value.
            if let Some(echo) = msg.options.get(super::ECHO).filter(|e| e.len() <= 40) {
                req.echo_retries += 1;
                req.template.options.set(super::ECHO, echo);
                let m = rebuild(req);
                let con = req.template.confirmable;
                self.enqueue(now, peer, RecordKind::Request(id), m, con, true);
                return;
            }
        }
        if req.upload.is_some() {
            if msg.code == Code::CONTINUE {
                match Self::continue_upload(req, &msg) {
                    Some(m) => {
                        let con = req.template.confirmable;
                        self.enqueue(now, peer, RecordKind::Request(id), m, con, true);
                    }
                    None => self.fail(RecordKind::Request(id), peer, FailReason::BadBlock),
                }
                return;
            }
            if msg.code != super::echo::UNAUTHORIZED {
                // The final answer: the payload is delivered; Block2 follow-ups carry none.
                req.upload = None;
                req.template.payload.clear();
            }
        }
        let mut restart = false;
        if let Some(echo) = msg.options.get(super::ECHO).filter(|e| e.len() <= 40) {
            if req.template.options.get(super::ECHO) != Some(echo) {
                req.template.options.set(super::ECHO, echo);
                // A first block that came with a new Echo value was made small for an
                // unverified client (amplification limit): start again, verified, so the
                // transfer runs in the block size asked for.
                restart = req.echo_retries < 2 && matches!(msg.block2(), Ok(Some(b)) if b.num == 0 && b.more);
            }
        }
        if restart {
            req.echo_retries += 1;
            req.block = req.template.block2_szx.map(|szx| Block { num: 0, more: false, szx: szx.min(6) });
            let m = rebuild(req);
            let con = req.template.confirmable;
            self.enqueue(now, peer, RecordKind::Request(id), m, con, true);
            return;
        }
        let block = if msg.code.is_success() { msg.block2() } else { Ok(None) };
        match block {
            Ok(Some(b)) => {
                let (max_body, max_blocks) = (self.config.max_body_size, self.config.max_blocks);
                if let Err(reason) =
                    super::block::accept_block2(req.body.len(), req.blocks, b, msg.payload.len(), max_body, max_blocks)
                {
                    self.fail(RecordKind::Request(id), peer, reason);
                    return;
                }
                req.blockwise = true;
                req.blocks += 1;
                req.body.extend_from_slice(&msg.payload);
                if b.more {
                    let next = Block { num: b.num + 1, more: false, szx: b.szx };
                    req.block = Some(next);
                    let m = build_request(&req.template, Some(next));
                    let con = req.template.confirmable;
                    // The follow-up continues the same interaction: it goes first.
                    self.enqueue(now, peer, RecordKind::Request(id), m, con, true);
                    return;
                }
                let req = self.requests.remove(&id).expect("present");
                msg.payload = req.body;
                msg.options.remove(option::BLOCK2);
                self.events.push_back(Event::Response { id, peer, response: msg, copy });
            }
            Ok(None) if req.blockwise && msg.code.is_success() => {
                self.fail(RecordKind::Request(id), peer, FailReason::BadBlock);
            }
            Ok(None) => {
                let req = self.requests.remove(&id).expect("present");
                self.keep_observing(id, &peer, &msg, req.template.options.get_uint(option::OBSERVE) == Some(0));
                self.events.push_back(Event::Response { id, peer, response: msg, copy });
            }
            Err(_) => self.fail(RecordKind::Request(id), peer, FailReason::BadBlock),
        }
    }

    pub(super) fn fail(&mut self, kind: RecordKind, peer: P, reason: FailReason) {
        match kind {
            RecordKind::Request(id) => {
                if self.requests.remove(&id).is_some() {
                    self.events.push_back(Event::Failed { id, peer, reason });
                }
            }
            RecordKind::SeparateResponse(id) => self.events.push_back(Event::ResponseFailed { id, peer, reason }),
        }
    }
}

/// Whether `options` carry Observe, Block2 and Echo: the three a plain response is checked
/// for ([`Endpoint::deliver`]), in one walk (the options are sorted by number).
#[inline]
fn observe_block2_echo(options: &crate::Options) -> (bool, bool, bool) {
    let (mut observe, mut block2, mut echo) = (false, false, false);
    for o in options.iter() {
        match o.number {
            option::OBSERVE => observe = true,
            option::BLOCK2 => block2 = true,
            super::ECHO => echo = true,
            n if n > super::ECHO => break,
            _ => {}
        }
    }
    (observe, block2, echo)
}

/// The message repeating `req`'s current request (its Block1 block, or its Block2 request).
fn rebuild(req: &ClientReq) -> Message {
    match req.upload {
        Some(up) => super::block1::upload_request(&req.template, up),
        None => build_request(&req.template, req.block),
    }
}

/// The request message for `template`, with Block2 `block` if any (Message ID and token are
/// set when the exchange starts).
pub(super) fn build_request(template: &Request, block: Option<Block>) -> Message {
    let mtype = if template.confirmable { MessageType::Con } else { MessageType::Non };
    let mut m = Message::new(mtype, template.method, 0);
    m.options = template.options.clone();
    m.options.remove(option::BLOCK2);
    if let Some(b) = block {
        let _ = m.set_block2(b);
    }
    m.payload = template.payload.clone();
    m
}

/// The first ACK of `out` (the copy `ordinal` its token identifies, with copy
/// identification) told to its algorithm (in `p`, its peer's state), and its NSTART slot
/// freed.
pub(super) fn acknowledge<P>(out: &mut Out<P>, p: Option<&mut PeerState>, now: Instant, ordinal: Option<u32>) {
    out.acked_at = Some(now);
    let mut p = p;
    if let Some(ex) = out.con_ex {
        let echoed = match ordinal {
            Some(k) if (k as usize) < out.tx.len() => Some((k, out.tx[k as usize].at)),
            _ => None,
        };
        if let Some(p) = p.as_deref_mut() {
            let info = ex.acknowledge(&mut p.cc, now, echoed);
            out.rtt = Some(info.rtt);
            out.copy = info.copy;
            if out.holds_slot {
                out.holds_slot = false;
                p.slots.release();
            }
        }
    } else if out.sent > 0 {
        out.rtt = Some(now - out.started);
    }
    if out.holds_slot {
        out.holds_slot = false;
        if let Some(p) = p {
            p.slots.release();
        }
    }
}

/// The token of copy `ordinal`: `key` itself, or `key` followed by the ordinal byte.
pub(super) fn wire_token(key: Token, copy_id: bool, ordinal: u32) -> Token {
    if !copy_id {
        return key;
    }
    let n = key.len();
    if n >= Token::MAX_LEN {
        return key;
    }
    let mut b = [0u8; Token::MAX_LEN];
    b[..n].copy_from_slice(key.as_bytes());
    b[n] = ordinal.min(255) as u8;
    Token::new(&b[..=n]).unwrap_or(key)
}

/// Does `token` answer `out`? `Some(None)`: yes, no copy identification; `Some(Some(k))`:
/// yes, it echoes copy `k`; `None`: it belongs to something else.
pub(super) fn token_ordinal<P>(out: &Out<P>, token: &Token) -> Option<Option<u32>> {
    if !out.copy_id {
        return (*token == out.msg.token).then_some(None);
    }
    let sent = out.msg.token.as_bytes();
    let got = token.as_bytes();
    if got.len() != sent.len() || got.is_empty() || got[..got.len() - 1] != sent[..sent.len() - 1] {
        return None;
    }
    let k = u32::from(got[got.len() - 1]);
    (k < out.sent).then_some(Some(k))
}
