//! CoAP over TCP (RFC 8323) on a byte stream: framing with a size limit, the CSM exchange
//! and its validation, signalling (Ping/Pong, Release, Abort) and bounded writes.
//!
//! [`FrameReader`] and [`FrameWriter`] wrap the two halves of any tokio stream (a
//! `TcpStream` in the endpoints, an in-memory duplex in tests). Every way a peer can
//! misbehave ends in a [`SessionError`], never a panic, and memory stays bounded: a frame
//! longer than our advertised Max-Message-Size is refused from its header, before it is
//! buffered; a peer that stops reading makes our writes time out.

use std::fmt;
use std::time::Duration;

use coapcc_proto::tcp::{signal, FrameDecoder, TcpMessage};
use coapcc_proto::{Code, DecodeError};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest message we accept (and advertise in our CSM's Max-Message-Size): 2 MiB, enough
/// for the test server's largest `/large` representation (1 MiB) in one message.
pub const DEFAULT_MAX_MESSAGE_SIZE: u32 = 2 * 1024 * 1024;

/// Settings of one connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionConfig {
    /// Max-Message-Size we advertise and enforce on receive.
    pub max_message_size: u32,
    /// Advertise Block-Wise-Transfer (RFC 8323 §5.3.2).
    pub block_wise: bool,
    /// Longest a single write may block (the peer stopped reading).
    pub write_timeout: Duration,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            block_wise: true,
            write_timeout: Duration::from_secs(30),
        }
    }
}

impl SessionConfig {
    /// Our CSM.
    pub fn csm(&self) -> TcpMessage {
        TcpMessage::csm(Some(self.max_message_size), self.block_wise)
    }
}

/// Why a connection ended abnormally.
#[derive(Debug)]
pub enum SessionError {
    /// The socket failed.
    Io(std::io::Error),
    /// The peer closed the connection in the middle of a frame.
    Truncated {
        /// Bytes of the unfinished frame.
        buffered: usize,
    },
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
    /// A write blocked longer than the write timeout (the peer stopped reading).
    WriteTimeout(Duration),
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionError::Io(e) => write!(f, "connection error: {e}"),
            SessionError::Truncated { buffered } => {
                write!(f, "peer closed the connection in the middle of a frame ({buffered} bytes of it received)")
            }
            SessionError::MissingCsm { code } => {
                write!(f, "peer's first message is {code}, not a CSM (7.01): RFC 8323 requires a CSM first")
            }
            SessionError::BadCsm { option, reason } => write!(f, "bad CSM: option {option} {reason}"),
            SessionError::TooLarge { len, max } => {
                write!(f, "peer announced a {len}-byte frame, above our Max-Message-Size of {max} bytes")
            }
            SessionError::Malformed(e) => write!(f, "malformed frame: {e}"),
            SessionError::Aborted { diagnostic } => write!(f, "peer aborted the connection: {diagnostic:?}"),
            SessionError::WriteTimeout(d) => {
                write!(f, "a write blocked for {:.1} s: the peer stopped reading", d.as_secs_f64())
            }
        }
    }
}

impl std::error::Error for SessionError {}

impl From<std::io::Error> for SessionError {
    fn from(e: std::io::Error) -> Self {
        SessionError::Io(e)
    }
}

impl SessionError {
    /// The Abort to send the peer for this error, if one is due (protocol violations only).
    pub fn abort_message(&self) -> Option<TcpMessage> {
        let mut m = match self {
            SessionError::MissingCsm { .. }
            | SessionError::BadCsm { .. }
            | SessionError::TooLarge { .. }
            | SessionError::Malformed(_) => TcpMessage::abort(&self.to_string()),
            _ => return None,
        };
        if let SessionError::BadCsm { option, .. } = self {
            m.options.set_uint(signal::ABORT_BAD_CSM_OPTION, u64::from(*option));
        }
        Some(m)
    }
}

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
    /// The peer closed the connection cleanly (between frames).
    Closed,
}

/// Reads frames from a stream.
pub struct FrameReader<R> {
    inner: R,
    dec: FrameDecoder,
    max: u32,
    buf: Vec<u8>,
    /// What the peer announced.
    pub peer: PeerCaps,
}

fn validate_csm(m: &TcpMessage) -> Result<(), SessionError> {
    for o in m.options.iter() {
        match o.number {
            signal::CSM_MAX_MESSAGE_SIZE if o.value.len() > 4 => {
                return Err(SessionError::BadCsm {
                    option: o.number,
                    reason: "(Max-Message-Size) is longer than 4 bytes",
                })
            }
            signal::CSM_MAX_MESSAGE_SIZE => {}
            signal::CSM_BLOCK_WISE_TRANSFER if !o.value.is_empty() => {
                return Err(SessionError::BadCsm { option: o.number, reason: "(Block-Wise-Transfer) must be empty" })
            }
            signal::CSM_BLOCK_WISE_TRANSFER => {}
            n if n % 2 == 1 => return Err(SessionError::BadCsm { option: n, reason: "is an unknown critical option" }),
            _ => {} // unknown elective options are ignored
        }
    }
    Ok(())
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// A reader accepting frames up to `max_message_size` bytes.
    pub fn new(inner: R, max_message_size: u32) -> Self {
        FrameReader {
            inner,
            dec: FrameDecoder::with_max_frame_len(max_message_size as usize),
            max: max_message_size,
            buf: vec![0; 16 * 1024],
            peer: PeerCaps::default(),
        }
    }

    /// The next message. CSMs are validated and recorded in [`FrameReader::peer`]; Empty
    /// messages and unknown signalling codes are skipped (RFC 8323 §3.4, §5).
    pub async fn next(&mut self) -> Result<Inbound, SessionError> {
        loop {
            match self.dec.next_message() {
                Err(DecodeError::FrameTooLarge { len }) => return Err(SessionError::TooLarge { len, max: self.max }),
                Err(e) => return Err(SessionError::Malformed(e)),
                Ok(Some(m)) => {
                    if let Some(x) = self.classify(m)? {
                        return Ok(x);
                    }
                    continue;
                }
                Ok(None) => {}
            }
            let n = self.inner.read(&mut self.buf).await?;
            if n == 0 {
                let buffered = self.dec.buffered();
                return if buffered > 0 { Err(SessionError::Truncated { buffered }) } else { Ok(Inbound::Closed) };
            }
            self.dec.push(&self.buf[..n]);
        }
    }

    fn classify(&mut self, m: TcpMessage) -> Result<Option<Inbound>, SessionError> {
        if !self.peer.csm_seen && m.code != Code::CSM {
            return Err(SessionError::MissingCsm { code: m.code });
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
                return Err(SessionError::Aborted { diagnostic: String::from_utf8_lossy(&m.payload).into_owned() })
            }
            c if c.is_request() => Some(Inbound::Request(m)),
            c if c.is_response() => Some(Inbound::Response(m)),
            _ => None,
        })
    }
}

/// Writes frames to a stream, each write bounded in time.
pub struct FrameWriter<W> {
    inner: W,
    timeout: Duration,
    buf: Vec<u8>,
    /// Frames written.
    pub frames: u64,
    /// Bytes written.
    pub bytes: u64,
}

impl<W: AsyncWrite + Unpin> FrameWriter<W> {
    /// A writer whose writes fail after `timeout`.
    pub fn new(inner: W, timeout: Duration) -> Self {
        FrameWriter { inner, timeout, buf: Vec::new(), frames: 0, bytes: 0 }
    }

    /// Send one message.
    pub async fn send(&mut self, m: &TcpMessage) -> Result<(), SessionError> {
        self.buf.clear();
        m.encode(&mut self.buf);
        let t = self.timeout;
        match tokio::time::timeout(t, async {
            self.inner.write_all(&self.buf).await?;
            self.inner.flush().await
        })
        .await
        {
            Ok(r) => r?,
            Err(_) => return Err(SessionError::WriteTimeout(t)),
        }
        self.frames += 1;
        self.bytes += self.buf.len() as u64;
        Ok(())
    }

    /// Best effort: send the Abort `error` calls for (if any) within one second, then shut
    /// the stream down.
    pub async fn abort_for(&mut self, error: &SessionError) {
        if let Some(m) = error.abort_message() {
            let saved = self.timeout;
            self.timeout = Duration::from_secs(1);
            let _ = self.send(&m).await;
            self.timeout = saved;
        }
        let _ = tokio::time::timeout(Duration::from_secs(1), self.inner.shutdown()).await;
    }

    /// Send Release and shut the stream down (best effort).
    pub async fn release(&mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            let _ = self.send(&TcpMessage::release()).await;
            let _ = self.inner.shutdown().await;
        })
        .await;
    }
}
