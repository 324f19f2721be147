//! CoAP over TCP framing (RFC 8323 §3.2) and signalling messages (§5).
//!
//! A frame is
//! `Len(4) | TKL(4) | Extended Length (0/1/2/4 B) | Code | Token | Options | 0xFF | Payload`,
//! where `Len` counts the bytes after the token. There is no version, type
//! or Message ID.
//!
//! [`decode_frame`] is stateless: call it on the bytes received so far; it
//! returns `Ok(None)` until a whole frame is present. [`FrameDecoder`] does
//! the buffering for you.
//!
//! Unlike [`crate::Message::decode`], frame decoding does not reject any
//! code class (class 7 is signalling here; what to do with 1.xx/6.xx or an
//! Empty message is left to the connection logic) and it imposes no
//! Empty-message rules (RFC 8323 §3.4: Empty messages are simply ignored).

pub mod session;

pub use session::{Inbound, PeerCaps, ProtocolError, RateLimit, Session};

use crate::accessors::option_accessors;
use crate::code::{Code, MessageType};
use crate::error::DecodeError;
use crate::message::Message;
use crate::option::{decode_options_and_payload, encode_uint, Options};
use crate::token::Token;

/// Option numbers of signalling messages (RFC 8323 §5). They are only
/// meaningful together with the 7.xx code they belong to.
pub mod signal {
    /// CSM: Max-Message-Size (uint).
    pub const CSM_MAX_MESSAGE_SIZE: u16 = 2;
    /// CSM: Block-Wise-Transfer (empty).
    pub const CSM_BLOCK_WISE_TRANSFER: u16 = 4;
    /// Ping/Pong: Custody (empty).
    pub const CUSTODY: u16 = 2;
    /// Release: Alternative-Address (string).
    pub const RELEASE_ALTERNATIVE_ADDRESS: u16 = 2;
    /// Release: Hold-Off (uint, seconds).
    pub const RELEASE_HOLD_OFF: u16 = 4;
    /// Abort: Bad-CSM-Option (uint).
    pub const ABORT_BAD_CSM_OPTION: u16 = 2;
    /// Max-Message-Size assumed until a CSM says otherwise.
    pub const DEFAULT_MAX_MESSAGE_SIZE: u32 = 1152;
}

/// Largest value of the Len field: 65805 + 2^32 − 1.
pub const MAX_BODY_LEN: u64 = 65_805 + u32::MAX as u64;

/// A CoAP message framed for TCP (RFC 8323): a [`Message`] without type and
/// Message ID.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct TcpMessage {
    /// Code (`class.detail`); 7.xx are signalling codes.
    pub code: Code,
    /// Token, 0–8 bytes.
    pub token: Token,
    /// Options, sorted by number.
    pub options: Options,
    /// Payload (empty means no marker).
    pub payload: Vec<u8>,
}

option_accessors!(TcpMessage);

impl TcpMessage {
    /// A message with no token, options or payload.
    pub fn new(code: Code) -> TcpMessage {
        TcpMessage { code, ..TcpMessage::default() }
    }

    /// Builder: sets the token.
    pub fn with_token(mut self, token: Token) -> TcpMessage {
        self.token = token;
        self
    }

    /// Builder: sets the payload.
    pub fn with_payload(mut self, payload: impl Into<Vec<u8>>) -> TcpMessage {
        self.payload = payload.into();
        self
    }

    /// A 7.01 CSM, optionally with Max-Message-Size and Block-Wise-Transfer.
    pub fn csm(max_message_size: Option<u32>, block_wise_transfer: bool) -> TcpMessage {
        let mut m = TcpMessage::new(Code::CSM);
        if let Some(size) = max_message_size {
            m.options.add(signal::CSM_MAX_MESSAGE_SIZE, encode_uint(u64::from(size)));
        }
        if block_wise_transfer {
            m.options.add(signal::CSM_BLOCK_WISE_TRANSFER, Vec::new());
        }
        m
    }

    /// A 7.02 Ping with the given token.
    pub fn ping(token: Token) -> TcpMessage {
        TcpMessage::new(Code::PING).with_token(token)
    }

    /// The 7.03 Pong answering `ping` (echoes its token).
    pub fn pong(ping: &TcpMessage) -> TcpMessage {
        TcpMessage::new(Code::PONG).with_token(ping.token)
    }

    /// A 7.04 Release without options.
    pub fn release() -> TcpMessage {
        TcpMessage::new(Code::RELEASE)
    }

    /// A 7.05 Abort with an optional diagnostic payload.
    pub fn abort(diagnostic: &str) -> TcpMessage {
        TcpMessage::new(Code::ABORT).with_payload(diagnostic.as_bytes())
    }

    /// Max-Message-Size of a CSM, if this is a CSM carrying it.
    pub fn csm_max_message_size(&self) -> Option<u32> {
        if self.code != Code::CSM {
            return None;
        }
        self.options.get_uint(signal::CSM_MAX_MESSAGE_SIZE).and_then(|v| u32::try_from(v).ok())
    }

    /// The value of the Len field: options + payload marker + payload.
    pub fn body_len(&self) -> usize {
        self.options.encoded_len() + if self.payload.is_empty() { 0 } else { 1 + self.payload.len() }
    }

    /// Exact frame size [`TcpMessage::encode`] produces.
    pub fn encoded_len(&self) -> usize {
        let body = self.body_len();
        header_len(body as u64) + self.token.len() + body
    }

    /// Appends the frame to `out`.
    ///
    /// # Panics
    /// If [`TcpMessage::body_len`] exceeds [`MAX_BODY_LEN`] (≈ 4 GiB).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let body = self.body_len() as u64;
        let (nib, ext) = len_field(body).expect("CoAP-over-TCP frame body exceeds MAX_BODY_LEN");
        out.reserve(self.encoded_len());
        out.push((nib << 4) | self.token.len() as u8);
        match nib {
            13 => out.push(ext as u8),
            14 => out.extend_from_slice(&(ext as u16).to_be_bytes()),
            15 => out.extend_from_slice(&ext.to_be_bytes()),
            _ => {}
        }
        out.push(self.code.raw());
        out.extend_from_slice(self.token.as_bytes());
        self.options.encode(out);
        if !self.payload.is_empty() {
            out.push(0xFF);
            out.extend_from_slice(&self.payload);
        }
    }

    /// Encodes into a new vector.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.encoded_len());
        self.encode(&mut v);
        v
    }

    /// Drops type and Message ID of a UDP message.
    pub fn from_message(m: Message) -> TcpMessage {
        TcpMessage { code: m.code, token: m.token, options: m.options, payload: m.payload }
    }

    /// Turns this into a UDP message with the given type and Message ID.
    pub fn into_message(self, mtype: MessageType, message_id: u16) -> Message {
        Message { mtype, code: self.code, message_id, token: self.token, options: self.options, payload: self.payload }
    }
}

impl From<Message> for TcpMessage {
    fn from(m: Message) -> TcpMessage {
        TcpMessage::from_message(m)
    }
}

/// The Len nibble and extended-length value for a body of `body_len` bytes
/// (RFC 8323 §3.2): 0–12 literal; 13 + (len−13) in 1 byte; 14 + (len−269)
/// in 2 bytes; 15 + (len−65805) in 4 bytes. `None` above [`MAX_BODY_LEN`].
/// For nibbles 0–12 the extension value is 0 and not transmitted.
pub fn len_field(body_len: u64) -> Option<(u8, u32)> {
    Some(match body_len {
        0..=12 => (body_len as u8, 0),
        13..=268 => (13, (body_len - 13) as u32),
        269..=65_804 => (14, (body_len - 269) as u32),
        _ if body_len <= MAX_BODY_LEN => (15, (body_len - 65_805) as u32),
        _ => return None,
    })
}

/// Bytes before the token for a body of `body_len` bytes: 2–6.
pub fn header_len(body_len: u64) -> usize {
    2 + match body_len {
        0..=12 => 0,
        13..=268 => 1,
        269..=65_804 => 2,
        _ => 4,
    }
}

fn ext_bytes(nib: u8) -> usize {
    match nib {
        13 => 1,
        14 => 2,
        15 => 4,
        _ => 0,
    }
}

/// Parsed frame header: (token length, offset of the code byte, body length).
fn parse_header(buf: &[u8]) -> Result<Option<(usize, usize, u64)>, DecodeError> {
    let Some(&first) = buf.first() else {
        return Ok(None);
    };
    let nib = first >> 4;
    let tkl = first & 0x0F;
    if usize::from(tkl) > Token::MAX_LEN {
        return Err(DecodeError::InvalidTokenLength { tkl });
    }
    let n = ext_bytes(nib);
    let Some(ext) = buf.get(1..1 + n) else {
        return Ok(None);
    };
    let ext = ext.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
    let body = match nib {
        13 => ext + 13,
        14 => ext + 269,
        15 => ext + 65_805,
        _ => u64::from(nib),
    };
    Ok(Some((usize::from(tkl), 1 + n, body)))
}

/// Total size of the frame starting at `buf[0]`, as soon as enough of its
/// header is present (1–5 bytes); `Ok(None)` before that. Lets a receiver
/// enforce a size limit before buffering a whole frame.
pub fn frame_len(buf: &[u8]) -> Result<Option<usize>, DecodeError> {
    let Some((tkl, code_at, body)) = parse_header(buf)? else {
        return Ok(None);
    };
    let total = body + (code_at + 1 + tkl) as u64;
    usize::try_from(total).map(Some).map_err(|_| DecodeError::FrameTooLarge { len: total })
}

/// Decodes the frame at the start of `buf`.
///
/// Returns `Ok(None)` if `buf` holds only part of a frame (call again with
/// more bytes), or the message and the number of bytes it took. Never
/// panics; an `Err` means the stream is corrupt (RFC 8323: the connection
/// should be aborted), since framing cannot be recovered.
pub fn decode_frame(buf: &[u8]) -> Result<Option<(TcpMessage, usize)>, DecodeError> {
    let Some((tkl, code_at, _)) = parse_header(buf)? else {
        return Ok(None);
    };
    let Some(total) = frame_len(buf)? else {
        return Ok(None);
    };
    if buf.len() < total {
        return Ok(None);
    }
    let code = Code(buf[code_at]);
    let tok_at = code_at + 1;
    let token =
        Token::new(&buf[tok_at..tok_at + tkl]).map_err(|_| DecodeError::InvalidTokenLength { tkl: tkl as u8 })?;
    let (options, payload) = decode_options_and_payload(&buf[tok_at + tkl..total])?;
    Ok(Some((TcpMessage { code, token, options, payload }, total)))
}

/// Appends the frame for `msg` to `out`; same as [`TcpMessage::encode`].
///
/// # Panics
/// As [`TcpMessage::encode`].
pub fn encode_frame(msg: &TcpMessage, out: &mut Vec<u8>) {
    msg.encode(out)
}

/// Largest buffer capacity a [`FrameDecoder`] keeps once it holds nothing.
const KEEP_CAPACITY: usize = 64 * 1024;

/// Incremental decoder for a byte stream: push bytes as they arrive, pull
/// complete messages.
///
/// After an error the decoder keeps returning it (the buffered bytes are
/// not consumed): the connection is to be aborted.
#[derive(Clone, Debug, Default)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    start: usize,
    max_frame_len: Option<usize>,
}

impl FrameDecoder {
    /// A decoder without a frame size limit.
    pub fn new() -> FrameDecoder {
        FrameDecoder::default()
    }

    /// A decoder that fails with [`DecodeError::FrameTooLarge`] as soon as a
    /// header announces a frame longer than `max` bytes (e.g. a
    /// Max-Message-Size learnt from a CSM).
    pub fn with_max_frame_len(max: usize) -> FrameDecoder {
        FrameDecoder { max_frame_len: Some(max), ..FrameDecoder::default() }
    }

    /// Appends received bytes.
    pub fn push(&mut self, data: &[u8]) {
        if self.start > 0 && self.start >= self.buf.len() / 2 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(data);
    }

    /// Bytes buffered but not yet returned as messages.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The next complete message, `Ok(None)` if more bytes are needed.
    pub fn next_message(&mut self) -> Result<Option<TcpMessage>, DecodeError> {
        let pending = &self.buf[self.start..];
        if let (Some(max), Some(len)) = (self.max_frame_len, frame_len(pending)?) {
            if len > max {
                return Err(DecodeError::FrameTooLarge { len: len as u64 });
            }
        }
        match decode_frame(pending)? {
            Some((m, used)) => {
                self.start += used;
                if self.start == self.buf.len() {
                    self.buf.clear();
                    self.start = 0;
                    // A large frame's buffer is not kept for the next small ones: what a
                    // decoder holds is what is in flight, not the largest frame ever seen.
                    if self.buf.capacity() > KEEP_CAPACITY {
                        self.buf = Vec::new();
                    }
                }
                Ok(Some(m))
            }
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn len_field_f1() {
        // F1: length after token → (nibble, extension)
        assert_eq!(len_field(0), Some((0, 0)));
        assert_eq!(len_field(12), Some((12, 0)));
        assert_eq!(len_field(13), Some((13, 0)));
        assert_eq!(len_field(268), Some((13, 255)));
        assert_eq!(len_field(269), Some((14, 0)));
        assert_eq!(len_field(65_804), Some((14, 65_535)));
        assert_eq!(len_field(65_805), Some((15, 0)));
        assert_eq!(len_field(MAX_BODY_LEN), Some((15, u32::MAX)));
        assert_eq!(len_field(MAX_BODY_LEN + 1), None);
        assert_eq!(header_len(0), 2);
        assert_eq!(header_len(13), 3);
        assert_eq!(header_len(269), 4);
        assert_eq!(header_len(65_805), 6);
    }
}
