//! RFC 7252 messages (CoAP over UDP): [`Message`], [`Header`], [`peek_header`].

use crate::accessors::option_accessors;
use crate::code::{Code, MessageType};
use crate::error::DecodeError;
use crate::option::{self, split_options_and_payload, Options};
use crate::token::Token;

/// The only CoAP version (the 2-bit `Ver` field).
pub const VERSION: u8 = 1;

/// Size of the fixed RFC 7252 header.
pub const HEADER_LEN: usize = 4;

/// The fixed 4-byte header of a datagram, read without decoding the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Header {
    /// Message type.
    pub mtype: MessageType,
    /// The raw TKL nibble, 0–15 (not validated: 9–15 is still returned so
    /// that a malformed CON can be answered with RST).
    pub tkl: u8,
    /// Message code.
    pub code: Code,
    /// Message ID.
    pub message_id: u16,
}

impl Header {
    /// The RST that rejects this message (RFC 7252 §4.2/§4.3): an Empty
    /// message of type RST with the same Message ID.
    pub fn reset(&self) -> Message {
        Message::reset(self.message_id)
    }
}

/// Reads only the fixed header: checks length ≥ 4 and version 1, nothing
/// else.
///
/// Use it for cheap de-duplication by Message ID, and to react to a datagram
/// that [`Message::decode`] rejects: RFC 7252 §4.2 says a CON with a message
/// format error is rejected with an RST carrying its Message ID (see
/// [`Header::reset`]) when the header is readable, and silently dropped
/// otherwise (a NON may be rejected the same way or ignored; ACK and RST are
/// silently dropped).
pub fn peek_header(buf: &[u8]) -> Result<Header, DecodeError> {
    if buf.len() < HEADER_LEN {
        return Err(DecodeError::TooShort { len: buf.len() });
    }
    let version = buf[0] >> 6;
    if version != VERSION {
        return Err(DecodeError::BadVersion { version });
    }
    Ok(Header {
        mtype: MessageType::from_bits(buf[0] >> 4),
        tkl: buf[0] & 0x0F,
        code: Code(buf[1]),
        message_id: u16::from_be_bytes([buf[2], buf[3]]),
    })
}

/// A CoAP message as carried over UDP (RFC 7252 §3).
///
/// The version is implicit (always [`VERSION`]). Any field combination can be
/// encoded; [`Message::validate`] tells whether [`Message::decode`] would
/// accept the result.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Message {
    /// Message type (CON, NON, ACK, RST).
    pub mtype: MessageType,
    /// Code (`class.detail`).
    pub code: Code,
    /// Message ID.
    pub message_id: u16,
    /// Token, 0–8 bytes.
    pub token: Token,
    /// Options, sorted by number.
    pub options: Options,
    /// Payload (without the `0xFF` marker; empty means no marker).
    pub payload: Vec<u8>,
}

option_accessors!(Message);

impl Message {
    /// A message with no token, options or payload.
    pub fn new(mtype: MessageType, code: Code, message_id: u16) -> Message {
        Message { mtype, code, message_id, token: Token::EMPTY, options: Options::new(), payload: Vec::new() }
    }

    /// An Empty message (code 0.00) of the given type.
    pub fn empty(mtype: MessageType, message_id: u16) -> Message {
        Message::new(mtype, Code::EMPTY, message_id)
    }

    /// An Empty ACK for `message_id` (RFC 7252 §4.2; separate response).
    pub fn empty_ack(message_id: u16) -> Message {
        Message::empty(MessageType::Ack, message_id)
    }

    /// An RST for `message_id` (RFC 7252 §4.2/§4.3).
    pub fn reset(message_id: u16) -> Message {
        Message::empty(MessageType::Rst, message_id)
    }

    /// Builder: sets the token.
    pub fn with_token(mut self, token: Token) -> Message {
        self.token = token;
        self
    }

    /// Builder: sets the payload.
    pub fn with_payload(mut self, payload: impl Into<Vec<u8>>) -> Message {
        self.payload = payload.into();
        self
    }

    /// The fixed header of this message.
    pub fn header(&self) -> Header {
        Header { mtype: self.mtype, tkl: self.token.len() as u8, code: self.code, message_id: self.message_id }
    }

    /// Exact number of bytes [`Message::encode`] appends, computed without
    /// encoding.
    pub fn encoded_len(&self) -> usize {
        HEADER_LEN
            + self.token.len()
            + self.options.encoded_len()
            + if self.payload.is_empty() { 0 } else { 1 + self.payload.len() }
    }

    /// Appends the datagram to `out`. The payload marker is written only for
    /// a non-empty payload.
    pub fn encode(&self, out: &mut Vec<u8>) {
        encode_parts(out, self.mtype, self.code, self.message_id, &self.token, &self.options, &self.payload);
    }

    /// Encodes into a new vector.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.encoded_len());
        self.encode(&mut v);
        v
    }

    /// Decodes one datagram, rejecting every message format error (see
    /// [`DecodeError`]) and codes of reserved classes 1, 6, 7.
    ///
    /// The reserved-class check comes last, so
    /// [`DecodeError::ReservedCodeClass`] means "well formed apart from the
    /// code".
    pub fn decode(buf: &[u8]) -> Result<Message, DecodeError> {
        let m = Message::decode_any_class(buf)?;
        if m.code.is_reserved_class() {
            return Err(DecodeError::ReservedCodeClass { code: m.code });
        }
        Ok(m)
    }

    /// As [`Message::decode`] but accepts codes of reserved classes.
    pub fn decode_any_class(buf: &[u8]) -> Result<Message, DecodeError> {
        MessageRef::decode_any_class(buf).map(|m| m.to_message())
    }

    /// Checks the rules that [`Message::decode`] enforces but the type does
    /// not: an Empty message has no token, options or payload, and the code
    /// class is not reserved. `Ok` means `decode(encode(m)) == m`.
    pub fn validate(&self) -> Result<(), DecodeError> {
        if self.code.is_empty() {
            if !self.token.is_empty() {
                return Err(DecodeError::EmptyMessageWithToken { tkl: self.token.len() as u8 });
            }
            let extra = self.encoded_len() - HEADER_LEN;
            if extra > 0 {
                return Err(DecodeError::EmptyMessageNotEmpty { extra });
            }
        }
        if self.code.is_reserved_class() {
            return Err(DecodeError::ReservedCodeClass { code: self.code });
        }
        Ok(())
    }
}

/// Appends the datagram of the message made of these parts ([`Message::encode`]; a server
/// answering with a response it keeps encodes the response's options and payload from where
/// they are, with no message built around them).
pub(crate) fn encode_parts(
    out: &mut Vec<u8>,
    mtype: MessageType,
    code: Code,
    message_id: u16,
    token: &Token,
    options: &Options,
    payload: &[u8],
) {
    let tkl = token.len();
    out.reserve(HEADER_LEN + tkl + options.encoded_len() + if payload.is_empty() { 0 } else { 1 + payload.len() });
    // The header and the token in one copy (the token's unused bytes are zeros, cut off).
    let mut head = [0u8; HEADER_LEN + Token::MAX_LEN];
    head[0] = (VERSION << 6) | (mtype.bits() << 4) | tkl as u8;
    head[1] = code.raw();
    head[2..4].copy_from_slice(&message_id.to_be_bytes());
    head[HEADER_LEN..].copy_from_slice(&token.padded());
    out.extend_from_slice(&head[..HEADER_LEN + tkl]);
    options.encode(out);
    if !payload.is_empty() {
        out.push(0xFF);
        out.extend_from_slice(payload);
    }
}

/// A decoded datagram that borrows its options and payload from the received bytes: the
/// same checks as [`Message::decode`], no allocation. An endpoint reads the header, token
/// and options of every datagram through it and copies a [`Message`] out
/// ([`MessageRef::to_message`]) only for what it hands to the application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageRef<'a> {
    /// Message type (CON, NON, ACK, RST).
    pub mtype: MessageType,
    /// Code (`class.detail`).
    pub code: Code,
    /// Message ID.
    pub message_id: u16,
    /// Token, 0–8 bytes.
    pub token: Token,
    /// The options' encoding (checked).
    options: &'a [u8],
    /// Payload (without the `0xFF` marker).
    pub payload: &'a [u8],
}

impl<'a> MessageRef<'a> {
    /// Decodes one datagram as [`Message::decode`] does (same errors, in the same order).
    #[inline(always)]
    pub fn decode(buf: &'a [u8]) -> Result<MessageRef<'a>, DecodeError> {
        let m = MessageRef::decode_any_class(buf)?;
        if m.code.is_reserved_class() {
            return Err(DecodeError::ReservedCodeClass { code: m.code });
        }
        Ok(m)
    }

    /// As [`MessageRef::decode`] but accepts codes of reserved classes.
    #[inline(always)]
    pub fn decode_any_class(buf: &'a [u8]) -> Result<MessageRef<'a>, DecodeError> {
        let h = peek_header(buf)?;
        if h.tkl > Token::MAX_LEN as u8 {
            return Err(DecodeError::InvalidTokenLength { tkl: h.tkl });
        }
        if h.code.is_empty() {
            if h.tkl != 0 {
                return Err(DecodeError::EmptyMessageWithToken { tkl: h.tkl });
            }
            if buf.len() > HEADER_LEN {
                return Err(DecodeError::EmptyMessageNotEmpty { extra: buf.len() - HEADER_LEN });
            }
        }
        let rest = &buf[HEADER_LEN..];
        let tkl = usize::from(h.tkl);
        if rest.len() < tkl {
            return Err(DecodeError::TokenTruncated { tkl: h.tkl, available: rest.len() });
        }
        // `tkl` ≤ 8 was checked above.
        let token = Token::from_short(&rest[..tkl]);
        // A message without options (a response's commonest form), inline: nothing after the
        // token, or the payload marker and a payload; anything else is read and checked.
        let body = &rest[tkl..];
        let (options, payload) = match body {
            [] => (body, body),
            [0xFF, payload @ ..] if !payload.is_empty() => (&body[..0], payload),
            _ => split_options_and_payload(body)?,
        };
        Ok(MessageRef { mtype: h.mtype, code: h.code, message_id: h.message_id, token, options, payload })
    }

    /// Iterates over the options in wire order.
    pub fn options(&self) -> option::Iter<'a> {
        option::Iter::over(self.options)
    }

    /// Value of the first option `number`.
    pub fn option(&self, number: u16) -> Option<&'a [u8]> {
        self.options().skip_while(|o| o.number < number).take_while(|o| o.number == number).map(|o| o.value).next()
    }

    /// The owned message (copies the options, inline when short, and the payload).
    pub fn to_message(&self) -> Message {
        self.to_message_in(Vec::new())
    }

    /// [`MessageRef::to_message`] with the payload copied into `payload` (cleared first): a
    /// buffer given back by the application saves the allocation.
    pub fn to_message_in(&self, mut payload: Vec<u8>) -> Message {
        payload.clear();
        payload.extend_from_slice(self.payload);
        Message {
            mtype: self.mtype,
            code: self.code,
            message_id: self.message_id,
            token: self.token,
            options: Options::from_checked(self.options),
            payload,
        }
    }
}
