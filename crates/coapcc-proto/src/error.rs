//! Error types.

use core::fmt;

use crate::code::Code;

/// Why a byte string is not a well-formed CoAP message or frame.
///
/// Every variant except [`DecodeError::ReservedCodeClass`] is a *message
/// format error* in the sense of RFC 7252 §3/§4.  Variants apply to UDP
/// ([`crate::Message::decode`]), TCP ([`crate::tcp::decode_frame`]) or both,
/// as noted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DecodeError {
    /// UDP: fewer than the 4 bytes of the fixed header.
    TooShort {
        /// Bytes available.
        len: usize,
    },
    /// UDP: the version field is not 1.
    BadVersion {
        /// The version found.
        version: u8,
    },
    /// Both: TKL is 9–15 (reserved).
    InvalidTokenLength {
        /// The TKL nibble found.
        tkl: u8,
    },
    /// Both: the datagram or frame ends inside the token.
    TokenTruncated {
        /// TKL.
        tkl: u8,
        /// Token bytes actually present.
        available: usize,
    },
    /// Both: an option delta nibble of 15 in a byte that is not the payload
    /// marker `0xFF`.
    ReservedOptionDelta,
    /// Both: an option length nibble of 15 (and the byte is not `0xFF`).
    ReservedOptionLength,
    /// Both: the message ends inside an extended option delta (nibble 13/14).
    ExtendedDeltaTruncated,
    /// Both: the message ends inside an extended option length (nibble 13/14).
    ExtendedLengthTruncated,
    /// Both: the message ends inside an option value.
    OptionValueTruncated {
        /// The option number being decoded.
        number: u16,
        /// Value length announced by the option header.
        len: usize,
        /// Bytes actually left.
        available: usize,
    },
    /// Both: the running option number exceeds 65535.
    OptionNumberOverflow {
        /// The number the delta would have produced.
        number: u32,
    },
    /// Both: a payload marker `0xFF` followed by a zero-length payload
    /// (RFC 7252 §3).
    EmptyPayload,
    /// UDP: an Empty message (0.00) whose TKL is not 0 (RFC 7252 §4.1).
    EmptyMessageWithToken {
        /// The TKL found.
        tkl: u8,
    },
    /// UDP: an Empty message (0.00) with bytes after the 4-byte header
    /// (RFC 7252 §4.1).
    EmptyMessageNotEmpty {
        /// Bytes present after the header.
        extra: usize,
    },
    /// UDP: code of reserved class 1, 6 or 7 (RFC 7252 §12.1).
    ///
    /// Only returned by [`crate::Message::decode`], and only when the rest of
    /// the message is well formed; [`crate::Message::decode_any_class`]
    /// accepts such codes.  The endpoint decides what to do (e.g. reject a
    /// CON with RST, or answer a request-like message with 4.05).
    ReservedCodeClass {
        /// The offending code.
        code: Code,
    },
    /// Both: option number 0, which RFC 7252 §12.2 reserves.
    ReservedOptionNumber,
    /// Both: more options than [`crate::option::MAX_OPTIONS`] in one message.
    TooManyOptions {
        /// The limit that was exceeded.
        limit: usize,
    },
    /// TCP: the announced frame length does not fit in memory (`usize`)
    /// or exceeds the limit configured on a [`crate::tcp::FrameDecoder`].
    FrameTooLarge {
        /// Total frame length announced by the header, in bytes.
        len: u64,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DecodeError::TooShort { len } => {
                write!(f, "message too short: {len} bytes, header needs 4")
            }
            DecodeError::BadVersion { version } => {
                write!(f, "unsupported CoAP version {version}")
            }
            DecodeError::InvalidTokenLength { tkl } => {
                write!(f, "reserved token length {tkl}")
            }
            DecodeError::TokenTruncated { tkl, available } => {
                write!(f, "token truncated: {available} of {tkl} bytes")
            }
            DecodeError::ReservedOptionDelta => f.write_str("option delta 15 outside payload marker"),
            DecodeError::ReservedOptionLength => f.write_str("option length 15 is reserved"),
            DecodeError::ExtendedDeltaTruncated => f.write_str("extended option delta truncated"),
            DecodeError::ExtendedLengthTruncated => f.write_str("extended option length truncated"),
            DecodeError::OptionValueTruncated { number, len, available } => {
                write!(f, "option {number} value truncated: {available} of {len} bytes")
            }
            DecodeError::OptionNumberOverflow { number } => {
                write!(f, "option number {number} exceeds 65535")
            }
            DecodeError::EmptyPayload => f.write_str("payload marker followed by empty payload"),
            DecodeError::EmptyMessageWithToken { tkl } => {
                write!(f, "empty message with token length {tkl}")
            }
            DecodeError::EmptyMessageNotEmpty { extra } => {
                write!(f, "empty message with {extra} bytes after the header")
            }
            DecodeError::ReservedCodeClass { code } => {
                write!(f, "code {code} is of a reserved class")
            }
            DecodeError::ReservedOptionNumber => f.write_str("option number 0 is reserved"),
            DecodeError::TooManyOptions { limit } => write!(f, "more than {limit} options in one message"),
            DecodeError::FrameTooLarge { len } => write!(f, "frame of {len} bytes too large"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// A token longer than 8 bytes was supplied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TokenTooLong {
    /// The length supplied.
    pub len: usize,
}

impl fmt::Display for TokenTooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "token of {} bytes exceeds 8", self.len)
    }
}

impl std::error::Error for TokenTooLong {}

/// An invalid Block1/Block2 value (RFC 7959 §2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BlockError {
    /// The option value is longer than 3 bytes.
    ValueTooLong {
        /// Length of the value.
        len: usize,
    },
    /// SZX 7 is reserved (used by BERT in RFC 8323; not supported here).
    ReservedSzx,
    /// SZX above 7 cannot be represented in 3 bits.
    InvalidSzx {
        /// The SZX supplied.
        szx: u8,
    },
    /// NUM does not fit in 20 bits.
    NumTooLarge {
        /// The NUM supplied.
        num: u32,
    },
}

impl fmt::Display for BlockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            BlockError::ValueTooLong { len } => {
                write!(f, "block option value of {len} bytes exceeds 3")
            }
            BlockError::ReservedSzx => f.write_str("block SZX 7 is reserved"),
            BlockError::InvalidSzx { szx } => write!(f, "block SZX {szx} out of range"),
            BlockError::NumTooLarge { num } => write!(f, "block NUM {num} exceeds 2^20-1"),
        }
    }
}

impl std::error::Error for BlockError {}

/// An option value longer than the wire format can express
/// ([`crate::option::MAX_OPTION_VALUE_LEN`]), or than the option's definition allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OptionTooLong {
    /// The option number.
    pub number: u16,
    /// The length supplied.
    pub len: usize,
}

impl fmt::Display for OptionTooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "option {} value of {} bytes is too long", self.number, self.len)
    }
}

impl std::error::Error for OptionTooLong {}
