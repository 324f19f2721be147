//! One connection of `coapcc server --tcp` ([`crate::tcp_server`]): its frames, its requests
//! (resources, Block1 uploads, Block2 follow-ups from kept representations, Observe of
//! `/counter`), its delayed answers and notifications, its timeouts, and its share of the
//! server's budget, given back when it ends however it ends ([`Held`]).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use coapcc_cc::Instant;
use coapcc_proto::endpoint::transfers::{follow_up_unknown, keeps_representation, resource_key, Step};
use coapcc_proto::endpoint::{unknown_critical_option, Registered};
use coapcc_proto::tcp::{PeerCaps, ProtocolError, RateLimit, TcpMessage};
use coapcc_proto::{option, Block, Code, MessageType, Token};
use serde_json::json;
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::Instant as TInstant;

use crate::driver::to_instant;
use crate::limits::FREE_PARTIAL;
use crate::resources::{counter_period, counter_response, Action};
use crate::tcp_server::{fit_response, Shared};
use crate::tcp_session::{FrameReader, FrameWriter, Inbound, SessionError};

/// An observation of `/counter` on this connection (RFC 8323 §7: notifications are plain
/// responses with the registration's token, until the connection closes or the client
/// deregisters).
struct Observation {
    period: Duration,
    next: TInstant,
    seq: u32,
}

/// What a connection holds of the shared budget; given back when dropped (at the
/// connection's end, also when its task is cancelled).
struct Held {
    shared: Arc<Shared>,
    id: u64,
    peer: SocketAddr,
    /// Delayed answers: (due, order) → the answer.
    delayed: BTreeMap<(TInstant, u64), TcpMessage>,
    observations: BTreeMap<Token, Observation>,
    /// Bytes of the partial frame charged to the shared budget.
    charged: usize,
}

impl Drop for Held {
    fn drop(&mut self) {
        let s = &self.shared;
        if let Ok(mut d) = s.delayed.lock() {
            d.give_back(&self.peer.ip(), self.delayed.len());
        }
        if let Ok(mut b) = s.buffered.lock() {
            *b -= self.charged;
        }
        if let Ok(mut t) = s.transfers.lock() {
            t.forget_peer(&self.id);
        }
        if let Ok(mut o) = s.observers.lock() {
            o.remove_peer(&self.id);
        }
        if let Ok(mut sl) = s.slots.lock() {
            sl.remove(&self.id);
        }
    }
}

impl Held {
    /// Charge a partial frame of `buffered` bytes (beyond [`FREE_PARTIAL`]) to the shared
    /// budget; an error when the budget has no room for it.
    fn charge(&mut self, buffered: usize) -> Result<(), SessionError> {
        let want = buffered.saturating_sub(FREE_PARTIAL);
        if want == self.charged {
            return Ok(());
        }
        let mut b = self.shared.buffered.lock().expect("buffered lock");
        if want > self.charged {
            let extra = want - self.charged;
            if *b + extra > self.shared.limits.max_buffered {
                return Err(SessionError::BufferBudget { buffered });
            }
            *b += extra;
        } else {
            *b -= self.charged - want;
        }
        self.charged = want;
        Ok(())
    }

    /// Delayed answers or observations pending: not to be closed to admit another.
    fn working(&self) -> bool {
        !self.delayed.is_empty() || !self.observations.is_empty()
    }
}

struct Conn {
    held: Held,
    requests: u64,
    pings: RateLimit,
    order: u64,
}

fn error(req: &TcpMessage, code: Code, text: &str) -> TcpMessage {
    TcpMessage::new(code).with_token(req.token).with_payload(text.as_bytes().to_vec())
}

impl Conn {
    fn shared(&self) -> &Shared {
        &self.held.shared
    }

    /// The transfers' and observations' clock.
    fn now_cc(&self, now: TInstant) -> Instant {
        to_instant(now.saturating_duration_since(self.shared().epoch))
    }

    /// Update this connection's slot (for the choice of an idle connection to close).
    fn touch(&self, last_active: TInstant, working: bool) {
        if let Some(slot) = self.shared().slots.lock().expect("slots lock").get_mut(&self.held.id) {
            slot.last_active = last_active;
            slot.working = working;
        }
    }

    /// The answer to one request, if one is due now (a delayed answer is queued instead).
    fn request(&mut self, req: TcpMessage, caps: &PeerCaps) -> Option<TcpMessage> {
        self.requests += 1;
        let now = TInstant::now();
        let now_cc = self.now_cc(now);
        let id = self.held.id;
        // RFC 7252 §5.4.1, as over UDP (one rule: `unknown_critical_option`).
        if let Some(n) = unknown_critical_option(&req.options) {
            return Some(error(&req, Code::BAD_OPTION, &format!("unknown critical option {n}")));
        }
        let mut req = req;
        // BERT (RFC 8323 §6: SZX 7, 1024-byte units, several per message) in a Block2 request
        // asks for the same offset as SZX 6.
        if let Some((num, more, 7)) = raw_block(&req.options, option::BLOCK2) {
            req.options.set(option::BLOCK2, option::encode_uint(block_value(num, more, 6)));
        }
        let Ok(block2) = req.block2() else {
            return Some(error(&req, Code::BAD_OPTION, "bad Block2 option"));
        };
        // The Block1 option the final answer echoes (RFC 7959 §2.3).
        let mut block1: Option<u64> = None;
        if req.options.contains(option::BLOCK1) && raw_block(&req.options, option::BLOCK1).is_none() {
            return Some(error(&req, Code::BAD_OPTION, "malformed Block1 option"));
        }
        if let Some((num, more, szx)) = raw_block(&req.options, option::BLOCK1) {
            let key = resource_key(req.code, &req.options);
            let mut transfers = self.shared().transfers.lock().expect("transfers lock");
            // A BERT block is that many 1024-byte blocks, one after the other.
            let (size, units): (usize, u32) = match szx {
                7 => {
                    if more && (req.payload.len() % 1024 != 0 || req.payload.is_empty()) {
                        return Some(error(&req, Code::BAD_REQUEST, "BERT block size mismatch"));
                    }
                    (1024, req.payload.len().div_ceil(1024).max(1) as u32)
                }
                s => (16usize << s, 1),
            };
            let mut done = None;
            for i in 0..units {
                let Ok(b) = Block::new(num.saturating_add(i), more || i + 1 < units, szx.min(6)) else {
                    return Some(error(&req, Code::BAD_OPTION, "malformed Block1 option"));
                };
                let from = (i as usize * size).min(req.payload.len());
                let to = if szx == 7 { (from + size).min(req.payload.len()) } else { req.payload.len() };
                match transfers.upload_block(now_cc, &id, key.clone(), b, &req.payload[from..to]) {
                    Step::Answer(r) if r.code == Code::CONTINUE && i + 1 < units => {}
                    Step::Answer(mut r) => {
                        if r.code == Code::CONTINUE {
                            r.options.set(option::BLOCK1, option::encode_uint(block_value(num, more, szx)));
                        }
                        return Some(fit_response(&req, &r, caps));
                    }
                    Step::Complete(body) => {
                        done = Some(body);
                        break;
                    }
                }
            }
            drop(transfers);
            let Some(body) = done else {
                return Some(error(&req, Code::REQUEST_ENTITY_INCOMPLETE, "Block1 out of sequence"));
            };
            req.payload = body;
            req.options.remove(option::BLOCK1);
            req.options.remove(option::SIZE1);
            block1 = Some(block_value(num, false, szx));
        }
        let key = resource_key(req.code, &req.options);
        if keeps_representation(req.code) && block1.is_none() && block2.is_some_and(|b| b.num > 0) {
            // A later block of an answer to a request that changed state: from the kept
            // representation, never from the resource again (RFC 7959 §3.3).
            let kept = self.shared().transfers.lock().expect("transfers lock").take_kept(now_cc, &id, &key);
            return Some(match kept {
                Some(r) => {
                    let m = fit_response(&req, &r, caps);
                    // Over TCP nothing is lost: no need to keep it after its last block.
                    if more(&m) {
                        self.shared().transfers.lock().expect("transfers lock").restore(now_cc, &id, key, r, false);
                    }
                    m
                }
                None => fit_response(&req, &follow_up_unknown(), caps),
            });
        }
        if req.uri_path() == "counter" {
            return Some(self.counter(&req, now, caps));
        }
        let action = {
            let mut res = self.shared().resources.lock().expect("resources lock");
            res.handle(&req.clone().into_message(MessageType::Con, 0))
        };
        match action {
            Action::Respond(r) => {
                let mut m = fit_response(&req, &r, caps);
                if let Some(v) = block1 {
                    m.options.set(option::BLOCK1, option::encode_uint(v));
                }
                if keeps_representation(req.code) && more(&m) {
                    let mut kept = r;
                    kept.options.remove(option::BLOCK2);
                    self.shared().transfers.lock().expect("transfers lock").keep(now_cc, &id, key, kept);
                }
                Some(m)
            }
            Action::Delay(d, r) => {
                let ip = self.held.peer.ip();
                let own = self.held.delayed.len() < self.shared().limits.max_delayed_per_connection;
                if own && self.shared().delayed.lock().expect("delayed lock").try_take(&ip) {
                    self.order += 1;
                    self.held.delayed.insert((now + d, self.order), fit_response(&req, &r, caps));
                    None
                } else {
                    self.shared().stat(|s| s.delayed_refused += 1);
                    let mut busy = error(&req, Code::SERVICE_UNAVAILABLE, "too many delayed requests");
                    busy.options.set_uint(option::MAX_AGE, 2);
                    Some(busy)
                }
            }
        }
    }

    /// `GET /counter?period=MS`, observable: Observe = 0 registers (the same token replaces
    /// the registration, RFC 7641 §4.1; within the per-connection and global limits, else the
    /// answer carries no Observe), Observe = 1 deregisters.
    fn counter(&mut self, req: &TcpMessage, now: TInstant, caps: &PeerCaps) -> TcpMessage {
        if req.code != Code::GET {
            return error(req, Code::METHOD_NOT_ALLOWED, "method not allowed");
        }
        let period = match counter_period(&req.uri_queries()) {
            Ok(p) => p,
            Err(e) => return error(req, Code::BAD_REQUEST, e),
        };
        let elapsed = now.saturating_duration_since(self.shared().epoch);
        let n = (elapsed.as_nanos() / period.as_nanos()) as u64;
        let mut r = counter_response(n);
        let id = self.held.id;
        match req.options.get_uint(option::OBSERVE) {
            Some(0) => {
                let reg = self.shared().observers.lock().expect("observers lock").register(&id, req.token, ());
                if !matches!(reg, Registered::Refused) {
                    let next = self.shared().epoch + period * (n as u32 + 1);
                    self.held.observations.insert(req.token, Observation { period, next, seq: 1 });
                    r.options.set_uint(option::OBSERVE, 0);
                }
            }
            Some(1) => {
                self.shared().observers.lock().expect("observers lock").remove(&id, req.token);
                self.held.observations.remove(&req.token);
            }
            _ => {}
        }
        fit_response(req, &r, caps)
    }

    /// When a delayed answer or a notification is due next.
    fn next_due(&self) -> Option<TInstant> {
        let d = self.held.delayed.keys().next().map(|k| k.0);
        let o = self.held.observations.values().map(|o| o.next).min();
        d.into_iter().chain(o).min()
    }

    /// Send the delayed answers and notifications due now.
    async fn send_due(
        &mut self,
        writer: &mut FrameWriter<impl tokio::io::AsyncWrite + Unpin>,
    ) -> Result<(), SessionError> {
        let now = TInstant::now();
        while let Some(entry) = self.held.delayed.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let m = entry.remove();
            self.shared().delayed.lock().expect("delayed lock").give_back(&self.held.peer.ip(), 1);
            writer.queue(&m);
        }
        let epoch = self.shared().epoch;
        let due: Vec<Token> = self.held.observations.iter().filter(|(_, o)| o.next <= now).map(|(t, _)| *t).collect();
        for token in due {
            let Some(o) = self.held.observations.get_mut(&token) else { continue };
            let n = (now.saturating_duration_since(epoch).as_nanos() / o.period.as_nanos()) as u64;
            let r = counter_response(n);
            let mut m = TcpMessage { code: r.code, token, options: r.options, payload: r.payload };
            m.options.set_uint(option::OBSERVE, u64::from(o.seq));
            o.seq = (o.seq + 1) & 0x00FF_FFFF;
            o.next = epoch + o.period * (n as u32 + 1);
            writer.queue(&m);
        }
        writer.flush().await
    }

    async fn run<R, W>(
        &mut self,
        reader: &mut FrameReader<R>,
        writer: &mut FrameWriter<W>,
        close: &Notify,
    ) -> Result<&'static str, SessionError>
    where
        R: tokio::io::AsyncRead + Unpin,
        W: tokio::io::AsyncWrite + Unpin,
    {
        let limits = self.shared().limits.clone();
        // The server speaks first: its CSM goes out without waiting for the client's.
        writer.send(&self.shared().session.csm()).await?;
        let opened = TInstant::now();
        let mut last_frame = opened;
        // When the peer last sent a byte (a frame arriving slowly is progress).
        let mut last_byte = opened;
        // Not read before this instant (a Ping flood's pause).
        let mut read_from = opened;
        loop {
            // At most FRAMES_PER_TURN frames, their answers written at once; then the other
            // connections have their turn (a peer pipelining or flooding frames cannot keep
            // the server to itself).
            let mut frames = 0;
            while frames < FRAMES_PER_TURN {
                let Some(inbound) = reader.try_next()? else { break };
                frames += 1;
                last_frame = TInstant::now();
                match inbound {
                    Inbound::Request(req) => {
                        let caps = *reader.peer();
                        if let Some(m) = self.request(req, &caps) {
                            writer.queue(&m);
                        }
                    }
                    Inbound::Ping(p) => {
                        if self.pings.allow(self.now_cc(last_frame)) {
                            writer.queue(&TcpMessage::pong(&p));
                        } else {
                            // No Pong, and the connection is not read until this Ping would
                            // have been within the rate: TCP flow control then slows a
                            // flooding peer to the rate, at no cost to the others.
                            self.shared().stat(|s| s.pings_dropped += 1);
                            let pause = Duration::from_secs_f64(
                                (1.0 / limits.ping_rate).min(limits.idle_timeout.as_secs_f64()),
                            );
                            read_from = read_from.max(last_frame) + pause;
                        }
                    }
                    Inbound::Pong(_) | Inbound::Response(_) => {}
                    Inbound::Release(_) => {
                        writer.flush().await?;
                        return Ok("release");
                    }
                    Inbound::Closed => return Ok("closed"),
                }
                if writer.queued() > FLUSH_AT {
                    writer.flush().await?;
                }
            }
            writer.flush().await?;
            if frames == FRAMES_PER_TURN {
                tokio::task::yield_now().await;
                continue;
            }
            let now = TInstant::now();
            let buffered = reader.buffered();
            self.held.charge(buffered)?;
            let working = self.held.working();
            self.touch(last_byte, working);
            // The earliest of the deadlines that apply: the CSM, a frame that stopped arriving
            // (no byte of it for the frame timeout: a slow link's large frame keeps its
            // connection, a stalled one does not), an idle connection.
            let deadlines = [
                (!reader.peer().csm_seen)
                    .then(|| (opened + limits.csm_timeout, SessionError::CsmTimeout(limits.csm_timeout))),
                (buffered > 0)
                    .then(|| (last_byte + limits.frame_timeout, SessionError::FrameTimeout(limits.frame_timeout))),
                (!working && buffered == 0)
                    .then(|| (last_frame + limits.idle_timeout, SessionError::IdleTimeout(limits.idle_timeout))),
            ];
            let deadline = deadlines.into_iter().flatten().min_by_key(|(t, _)| *t);
            let deadline_at = deadline.as_ref().map(|(t, _)| *t);
            let due = self.next_due();
            let paused = read_from > now;
            tokio::select! {
                r = reader.fill(), if !paused => {
                    if let Some(Inbound::Closed) = r? {
                        return Ok("closed");
                    }
                    last_byte = TInstant::now();
                }
                _ = tokio::time::sleep_until(read_from), if paused => {}
                _ = tokio::time::sleep_until(due.unwrap_or(now)), if due.is_some() => self.send_due(writer).await?,
                _ = tokio::time::sleep_until(deadline_at.unwrap_or(now)), if deadline_at.is_some() => {
                    return Err(deadline.expect("a deadline").1);
                }
                _ = close.notified() => return Err(SessionError::Evicted),
            }
        }
    }
}

/// A Block option's (NUM, M, SZX), SZX 7 (BERT) included; `None` when absent or longer than
/// 3 bytes.
fn raw_block(options: &coapcc_proto::Options, number: u16) -> Option<(u32, bool, u8)> {
    let v = options.get(number)?;
    if v.len() > 3 {
        return None;
    }
    let v = option::decode_uint(v)?;
    Some(((v >> 4) as u32, v & 0x08 != 0, (v & 0x07) as u8))
}

/// The value of a Block option.
fn block_value(num: u32, more: bool, szx: u8) -> u64 {
    (u64::from(num) << 4) | (u64::from(more) << 3) | u64::from(szx)
}

/// Frames a connection handles before the others have their turn.
const FRAMES_PER_TURN: usize = 64;

/// Answers queued beyond this many bytes are written at once.
const FLUSH_AT: usize = 64 * 1024;

fn more(m: &TcpMessage) -> bool {
    matches!(m.block2(), Ok(Some(Block { more: true, .. })))
}

/// Serve connection `id` from `peer` until it ends; `close` asks it to end (eviction).
pub(crate) async fn serve(stream: TcpStream, peer: SocketAddr, id: u64, close: Arc<Notify>, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    shared.log(&json!({"type": "connection-open", "transport": "tcp", "id": id, "peer": peer.to_string()}));
    let (r, w) = stream.into_split();
    let cfg = shared.session.clone();
    let mut reader = FrameReader::new(r, cfg.max_message_size);
    let mut writer = FrameWriter::new(w, cfg.write_timeout);
    let pings = RateLimit::new(shared.limits.ping_rate, shared.limits.ping_rate.max(1.0), Instant::ZERO);
    let held =
        Held { shared: shared.clone(), id, peer, delayed: BTreeMap::new(), observations: BTreeMap::new(), charged: 0 };
    let mut conn = Conn { held, requests: 0, pings, order: 0 };
    let result = conn.run(&mut reader, &mut writer, &close).await;
    let outcome = match &result {
        Ok(how) => {
            shared.stat(|s| s.clean_closes += 1);
            writer.release().await;
            (*how).to_string()
        }
        Err(e) => {
            shared.stat(|s| match e {
                SessionError::WriteTimeout(_) => s.write_timeouts += 1,
                SessionError::Protocol(ProtocolError::Aborted { .. }) => s.peer_aborts += 1,
                SessionError::CsmTimeout(_) => s.csm_timeouts += 1,
                SessionError::FrameTimeout(_) => s.frame_timeouts += 1,
                SessionError::IdleTimeout(_) => s.idle_timeouts += 1,
                SessionError::BufferBudget { .. } => s.buffer_refusals += 1,
                e if e.abort_message().is_some() => s.protocol_errors += 1,
                _ => {}
            });
            if e.is_release() {
                writer.release().await;
            } else {
                writer.abort_for(e).await;
            }
            e.to_string()
        }
    };
    let requests = conn.requests;
    shared.stat(|s| s.requests += requests);
    shared.log(
        &json!({"type": "connection", "transport": "tcp", "id": id, "peer": peer.to_string(), "requests": requests,
                "frames_out": writer.frames, "bytes_out": writer.bytes,
                "peer_max_message_size": reader.peer().max_message_size, "peer_block_wise": reader.peer().block_wise,
                "outcome": outcome}),
    );
    drop(conn);
}
