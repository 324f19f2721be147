//! CoAP over TCP (RFC 8323) on a byte stream: framing with a size limit, the CSM exchange
//! and its validation, signalling (Ping/Pong, Release, Abort) and bounded writes. The
//! protocol rules are `coapcc_proto::tcp::Session` (sans-IO); this is its tokio edge.
//!
//! [`FrameReader`] and [`FrameWriter`] wrap the two halves of any tokio stream (a
//! `TcpStream` in the endpoints, an in-memory duplex in tests). Every way a peer can
//! misbehave ends in a [`SessionError`], never a panic, and memory stays bounded: a frame
//! longer than our advertised Max-Message-Size is refused from its header, before it is
//! buffered; a peer that stops reading makes our writes time out.

use std::fmt;
use std::time::Duration;

pub use coapcc_proto::tcp::{Inbound, PeerCaps};
use coapcc_proto::tcp::{ProtocolError, Session, TcpMessage};
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
    /// Longest a single write may block (the peer stopped reading). Default
    /// [`PEER_SILENCE_TIMEOUT`](crate::limits::PEER_SILENCE_TIMEOUT): a write also waits out
    /// the kernel's retransmission backoff, as a frame's arrival does.
    pub write_timeout: Duration,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            block_wise: true,
            write_timeout: crate::limits::PEER_SILENCE_TIMEOUT,
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
    /// The peer broke RFC 8323 (no CSM first, a bad CSM, an oversized or malformed frame),
    /// or sent Abort: the sans-IO session's verdict.
    Protocol(ProtocolError),
    /// A write blocked longer than the write timeout (the peer stopped reading).
    WriteTimeout(Duration),
    /// The peer's CSM did not arrive within the CSM timeout.
    CsmTimeout(Duration),
    /// A frame the peer started stopped arriving: no byte of it for the frame timeout.
    FrameTimeout(Duration),
    /// The peer sent nothing and had nothing pending for the idle timeout.
    IdleTimeout(Duration),
    /// The server's budget for partial frames (over all connections) was used up.
    BufferBudget {
        /// Bytes of this connection's partial frame.
        buffered: usize,
    },
    /// The connection was idle and closed to make room for a new one.
    Evicted,
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionError::Io(e) => write!(f, "connection error: {e}"),
            SessionError::Truncated { buffered } => {
                write!(f, "peer closed the connection in the middle of a frame ({buffered} bytes of it received)")
            }
            SessionError::Protocol(e) => write!(f, "{e}"),
            SessionError::WriteTimeout(d) => {
                write!(f, "a write blocked for {:.1} s: the peer stopped reading", d.as_secs_f64())
            }
            SessionError::CsmTimeout(d) => write!(f, "no CSM from the peer within {:.1} s", d.as_secs_f64()),
            SessionError::FrameTimeout(d) => {
                write!(f, "a frame stopped arriving: no byte of it for {:.1} s", d.as_secs_f64())
            }
            SessionError::IdleTimeout(d) => write!(f, "idle for {:.1} s", d.as_secs_f64()),
            SessionError::BufferBudget { buffered } => write!(
                f,
                "server busy: no room for a partial frame of {buffered} bytes (the budget for partial frames is used up)"
            ),
            SessionError::Evicted => write!(f, "idle connection closed to make room for a new one"),
        }
    }
}

impl std::error::Error for SessionError {}

impl From<std::io::Error> for SessionError {
    fn from(e: std::io::Error) -> Self {
        SessionError::Io(e)
    }
}

impl From<ProtocolError> for SessionError {
    fn from(e: ProtocolError) -> Self {
        SessionError::Protocol(e)
    }
}

impl SessionError {
    /// The Abort to send the peer for this error, if one is due (protocol violations, timeouts
    /// and a used-up buffer budget; a clean idle close or an eviction is a Release instead).
    pub fn abort_message(&self) -> Option<TcpMessage> {
        match self {
            SessionError::Protocol(e) => e.abort_message(),
            SessionError::CsmTimeout(_) | SessionError::FrameTimeout(_) | SessionError::BufferBudget { .. } => {
                Some(TcpMessage::abort(&self.to_string()))
            }
            _ => None,
        }
    }

    /// Whether the connection ends with a Release (not an error of the peer's).
    pub fn is_release(&self) -> bool {
        matches!(self, SessionError::IdleTimeout(_) | SessionError::Evicted)
    }
}

/// Reads frames from a stream.
pub struct FrameReader<R> {
    inner: R,
    session: Session,
    buf: Vec<u8>,
}

/// Size of a connection's read buffer.
pub const READ_BUFFER: usize = 16 * 1024;

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// A reader accepting frames up to `max_message_size` bytes.
    pub fn new(inner: R, max_message_size: u32) -> Self {
        FrameReader { inner, session: Session::new(max_message_size), buf: vec![0; READ_BUFFER] }
    }

    /// What the peer announced in its CSMs.
    pub fn peer(&self) -> &PeerCaps {
        &self.session.peer
    }

    /// Bytes of a partial frame received so far.
    pub fn buffered(&self) -> usize {
        self.session.buffered()
    }

    /// The next message among the bytes already received (`Ok(None)`: more are needed).
    pub fn try_next(&mut self) -> Result<Option<Inbound>, SessionError> {
        Ok(self.session.next_inbound()?)
    }

    /// Read once from the stream (cancel-safe: nothing is lost if the future is dropped
    /// before it completes). `Ok(Some(Inbound::Closed))` at a clean end of the stream.
    pub async fn fill(&mut self) -> Result<Option<Inbound>, SessionError> {
        let n = self.inner.read(&mut self.buf).await?;
        if n == 0 {
            let buffered = self.session.buffered();
            return if buffered > 0 { Err(SessionError::Truncated { buffered }) } else { Ok(Some(Inbound::Closed)) };
        }
        self.session.push(&self.buf[..n]);
        Ok(None)
    }

    /// The next message. CSMs are validated and recorded ([`FrameReader::peer`]); Empty
    /// messages and unknown signalling codes are skipped (RFC 8323 §3.4, §5).
    pub async fn next(&mut self) -> Result<Inbound, SessionError> {
        loop {
            if let Some(m) = self.try_next()? {
                return Ok(m);
            }
            if let Some(closed) = self.fill().await? {
                return Ok(closed);
            }
        }
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
        self.queue(m);
        self.flush().await
    }

    /// Add one message to what the next [`FrameWriter::flush`] writes (a server answering a
    /// batch of pipelined requests writes their answers at once, not one system call each).
    pub fn queue(&mut self, m: &TcpMessage) {
        m.encode(&mut self.buf);
        self.frames += 1;
    }

    /// Bytes queued and not written yet.
    pub fn queued(&self) -> usize {
        self.buf.len()
    }

    /// Write what was queued, within the write timeout.
    pub async fn flush(&mut self) -> Result<(), SessionError> {
        if self.buf.is_empty() {
            return Ok(());
        }
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
        self.bytes += self.buf.len() as u64;
        self.buf.clear();
        // A large frame's buffer is not kept for the small ones that follow.
        if self.buf.capacity() > 64 * 1024 {
            self.buf = Vec::new();
        }
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
