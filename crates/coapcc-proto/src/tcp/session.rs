//! The sans-IO part of a CoAP-over-TCP connection (RFC 8323): bytes in, messages out, with the
//! CSM rules (§4.3, §5.3) and a bound on what a peer can make us buffer.
//!
//! A [`Session`] is fed the bytes received ([`Session::push`]) and yields what the peer sent
//! ([`Session::next_inbound`]): every message after the peer's CSM, as an [`Inbound`]; a CSM is
//! validated and recorded in [`Session::peer`]; Empty messages and unknown signalling codes are
//! skipped (§3.4, §5). Every protocol violation is a [`ProtocolError`], after which the
//! connection is to be aborted. A frame announcing more than our Max-Message-Size is refused
//! from its header, before it is buffered.
//!
//! [`RateLimit`] is the token bucket a server uses to rate-limit a peer's Pings (each asks for
//! a Pong, so an unlimited Ping flood makes the server write as fast as the peer sends).
//!
//! The tokio edge (`coapcc-net`'s `tcp_session`) wraps a [`Session`] around a socket.

use core::fmt;

use coapcc_cc::Instant;

use super::{signal, FrameDecoder, TcpMessage};
use crate::{Code, DecodeError};

/// What the peer's CSMs said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerCaps {
    /// A CSM has arrived.
    pub csm_seen: bool,
    /// The peer's Max-Message-Size (1152 until it says otherwise).
    pub max_message_size: u32,
    /// The peer supports block-wise transfer.
    pub block_wise: bool,
}

impl Default for PeerCaps {
    fn default() -> Self {
        PeerCaps { csm_seen: false, max_message_size: signal::DEFAULT_MAX_MESSAGE_SIZE, block_wise: false }
    }
}

/// A message from the peer, after the CSM and Empty messages have been dealt with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Inbound {
    /// A request (0.01-0.31).
    Request(TcpMessage),
    /// A response (2.xx-5.xx).
    Response(TcpMessage),
    /// A Ping: answer with [`TcpMessage::pong`].
    Ping(TcpMessage),
    /// A Pong.
    Pong(TcpMessage),
    /// A Release: the peer is closing.
    Release(TcpMessage),
    /// The peer closed the connection cleanly (between frames); reported by the I/O layer.
    Closed,
}

/// A protocol violation of the peer: the connection is to be aborted (except
/// [`ProtocolError::Aborted`], the peer's own Abort).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProtocolError {
    /// The peer's first message was not a CSM (RFC 8323 §4.3).
    MissingCsm {
        /// What came instead.
        code: Code,
    },
    /// The peer's CSM carried an option we cannot accept (§5.3).
    BadCsm {
        /// The option number.
        option: u16,
        /// Why.
        reason: &'static str,
    },
    /// A frame announced a length above our Max-Message-Size.
    TooLarge {
        /// Announced frame length.
        len: u64,
        /// Our limit.
        max: u32,
    },
    /// A frame did not decode.
    Malformed(DecodeError),
    /// The peer sent Abort.
    Aborted {
        /// Its diagnostic payload.
        diagnostic: String,
    },
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::MissingCsm { code } => {
                write!(f, "peer's first message is {code}, not a CSM (7.01): RFC 8323 requires a CSM first")
            }
            ProtocolError::BadCsm { option, reason } => write!(f, "bad CSM: option {option} {reason}"),
            ProtocolError::TooLarge { len, max } => {
                write!(f, "peer announced a {len}-byte frame, above our Max-Message-Size of {max} bytes")
            }
            ProtocolError::Malformed(e) => write!(f, "malformed frame: {e}"),
            ProtocolError::Aborted { diagnostic } => write!(f, "peer aborted the connection: {diagnostic:?}"),
        }
    }
}

impl std::error::Error for ProtocolError {}

impl ProtocolError {
    /// The Abort to send the peer for this error (none for the peer's own Abort).
    pub fn abort_message(&self) -> Option<TcpMessage> {
        if let ProtocolError::Aborted { .. } = self {
            return None;
        }
        let mut m = TcpMessage::abort(&self.to_string());
        if let ProtocolError::BadCsm { option, .. } = self {
            m.options.set_uint(signal::ABORT_BAD_CSM_OPTION, u64::from(*option));
        }
        Some(m)
    }
}

fn validate_csm(m: &TcpMessage) -> Result<(), ProtocolError> {
    for o in m.options.iter() {
        match o.number {
            signal::CSM_MAX_MESSAGE_SIZE if o.value.len() > 4 => {
                return Err(ProtocolError::BadCsm {
                    option: o.number,
                    reason: "(Max-Message-Size) is longer than 4 bytes",
                })
            }
            signal::CSM_MAX_MESSAGE_SIZE => {}
            signal::CSM_BLOCK_WISE_TRANSFER if !o.value.is_empty() => {
                return Err(ProtocolError::BadCsm { option: o.number, reason: "(Block-Wise-Transfer) must be empty" })
            }
            signal::CSM_BLOCK_WISE_TRANSFER => {}
            n if n % 2 == 1 => {
                return Err(ProtocolError::BadCsm { option: n, reason: "is an unknown critical option" })
            }
            _ => {} // unknown elective options are ignored
        }
    }
    Ok(())
}

/// The receiving side of one connection. See the [module documentation](self).
#[derive(Clone, Debug)]
pub struct Session {
    dec: FrameDecoder,
    max: u32,
    /// What the peer announced.
    pub peer: PeerCaps,
}

impl Session {
    /// A session accepting frames up to `max_message_size` bytes (the Max-Message-Size we
    /// advertise).
    pub fn new(max_message_size: u32) -> Self {
        Session {
            dec: FrameDecoder::with_max_frame_len(max_message_size as usize),
            max: max_message_size,
            peer: PeerCaps::default(),
        }
    }

    /// Our Max-Message-Size.
    pub fn max_message_size(&self) -> u32 {
        self.max
    }

    /// Append received bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        self.dec.push(bytes);
    }

    /// Bytes received and not yet returned as messages (a partial frame).
    pub fn buffered(&self) -> usize {
        self.dec.buffered()
    }

    /// The next message, `Ok(None)` when more bytes are needed.
    pub fn next_inbound(&mut self) -> Result<Option<Inbound>, ProtocolError> {
        loop {
            let m = match self.dec.next_message() {
                Err(DecodeError::FrameTooLarge { len }) => return Err(ProtocolError::TooLarge { len, max: self.max }),
                Err(e) => return Err(ProtocolError::Malformed(e)),
                Ok(None) => return Ok(None),
                Ok(Some(m)) => m,
            };
            if let Some(x) = self.classify(m)? {
                return Ok(Some(x));
            }
        }
    }

    fn classify(&mut self, m: TcpMessage) -> Result<Option<Inbound>, ProtocolError> {
        if !self.peer.csm_seen && m.code != Code::CSM {
            return Err(ProtocolError::MissingCsm { code: m.code });
        }
        Ok(match m.code {
            Code::CSM => {
                validate_csm(&m)?;
                self.peer.csm_seen = true;
                if let Some(v) = m.options.get_uint(signal::CSM_MAX_MESSAGE_SIZE) {
                    self.peer.max_message_size = v as u32;
                }
                if m.options.contains(signal::CSM_BLOCK_WISE_TRANSFER) {
                    self.peer.block_wise = true;
                }
                None
            }
            Code::PING => Some(Inbound::Ping(m)),
            Code::PONG => Some(Inbound::Pong(m)),
            Code::RELEASE => Some(Inbound::Release(m)),
            Code::ABORT => {
                return Err(ProtocolError::Aborted { diagnostic: String::from_utf8_lossy(&m.payload).into_owned() })
            }
            c if c.is_request() => Some(Inbound::Request(m)),
            c if c.is_response() => Some(Inbound::Response(m)),
            _ => None,
        })
    }
}

/// A token bucket: at most `burst` events at once, refilled at `rate` per second. Sans-IO:
/// the caller passes `now`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimit {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
    /// Events refused so far.
    pub refused: u64,
}

impl RateLimit {
    /// A full bucket of `burst` tokens refilled at `rate` per second (both at least 0).
    pub fn new(rate: f64, burst: f64, now: Instant) -> Self {
        let (rate, burst) = (rate.max(0.0), burst.max(0.0));
        RateLimit { rate, burst, tokens: burst, last: now, refused: 0 }
    }

    /// Take a token at `now`: `true` if the event may happen.
    pub fn allow(&mut self, now: Instant) -> bool {
        if now > self.last {
            let dt = (now - self.last).as_secs_f64();
            self.tokens = (self.tokens + dt * self.rate).min(self.burst);
            self.last = now;
        }
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            self.refused += 1;
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Token;

    #[test]
    fn csm_first_then_messages() {
        let mut s = Session::new(1 << 16);
        let mut bytes = TcpMessage::csm(Some(5000), true).to_bytes();
        bytes.extend(TcpMessage::ping(Token::new(&[1]).unwrap()).to_bytes());
        bytes.extend(TcpMessage::new(Code::GET).to_bytes());
        bytes.extend(&[0x00, 0x00]); // Empty: skipped
        for b in &bytes {
            s.push(&[*b]);
        }
        assert!(matches!(s.next_inbound(), Ok(Some(Inbound::Ping(_)))));
        assert_eq!((s.peer.max_message_size, s.peer.block_wise), (5000, true));
        assert!(matches!(s.next_inbound(), Ok(Some(Inbound::Request(_)))));
        assert_eq!(s.next_inbound(), Ok(None));
        assert_eq!(s.buffered(), 0);
        let mut s = Session::new(1 << 16);
        s.push(&TcpMessage::new(Code::GET).to_bytes());
        assert_eq!(s.next_inbound(), Err(ProtocolError::MissingCsm { code: Code::GET }));
        let mut s = Session::new(100);
        s.push(&[0xF0, 0, 0, 0, 0x10]);
        assert!(matches!(s.next_inbound(), Err(ProtocolError::TooLarge { max: 100, .. })));
    }

    #[test]
    fn rate_limit() {
        let t0 = Instant::from_millis(1000);
        let mut r = RateLimit::new(10.0, 5.0, t0);
        assert_eq!((0..20).filter(|_| r.allow(t0)).count(), 5, "the burst");
        assert_eq!(r.refused, 15);
        let t1 = t0 + core::time::Duration::from_millis(500);
        assert_eq!((0..20).filter(|_| r.allow(t1)).count(), 5, "refilled at 10/s, capped at the burst");
        let t2 = t1 + core::time::Duration::from_millis(100);
        assert_eq!((0..20).filter(|_| r.allow(t2)).count(), 1);
    }
}
