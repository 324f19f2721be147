//! Sans-IO wire codec for CoAP: no sockets, no clock, no global state.
//!
//! Module map:
//!
//! - [`message`]: RFC 7252 datagrams — [`Message`], [`MessageRef`] (decoded in place,
//!   no allocation), [`Header`],
//!   [`peek_header`] (cheap header read for de-duplication and for the RST
//!   answering a malformed CON).
//! - [`code`]: [`MessageType`] (CON/NON/ACK/RST) and [`Code`] (`c.dd`).
//! - [`token`]: [`Token`], 0–8 bytes stored inline.
//! - [`option`]: option-number constants, [`Options`] (sorted list,
//!   repeats allowed, kept as its wire encoding, inline when short), uint values ([`option::encode_uint`],
//!   [`option::decode_uint`]), criticality, and RFC 7959 [`Block`] values.
//! - [`tcp`]: RFC 8323 framing ([`tcp::TcpMessage`], [`tcp::encode_frame`],
//!   [`tcp::decode_frame`], [`tcp::FrameDecoder`]) and signalling (7.01
//!   CSM … 7.05 Abort).
//! - [`error`]: [`DecodeError`] (one variant per malformation),
//!   [`BlockError`], [`TokenTooLong`].
//!
//! Decoding is strict: every message format error of RFC 7252 §3/§4.1 is a
//! distinct [`DecodeError`]. Codes of the reserved classes 1, 6 and 7 are
//! reported separately ([`DecodeError::ReservedCodeClass`], checked last) by
//! [`Message::decode`]; [`Message::decode_any_class`] accepts them.
//! Encoding is canonical (shortest option and length forms), so for any
//! accepted input `decode(b)` re-encodes to exactly `b`.
//!
//! Fuzzing: `crates/coapcc-proto/fuzz` is a standalone cargo-fuzz crate
//! (`cargo +nightly fuzz run decode -- -max_total_time=60`), fuzzing
//! [`Message::decode`] and [`tcp::decode_frame`] / [`tcp::FrameDecoder`].
//!
//! ```
//! use coapcc_proto::{Block, Code, Message, MessageType, Token};
//!
//! let mut m = Message::new(MessageType::Con, Code::GET, 2).with_token(Token::new(&[0xA5]).unwrap());
//! m.add_uri_path("hello");
//! m.set_block2(Block::new(1, false, 4).unwrap()).unwrap();
//! let bytes = m.to_bytes();
//! assert_eq!(bytes, [0x41, 0x01, 0x00, 0x02, 0xA5, 0xB5, b'h', b'e', b'l', b'l', b'o', 0xC1, 0x14]);
//! assert_eq!(m.encoded_len(), bytes.len());
//! assert_eq!(Message::decode(&bytes).unwrap(), m);
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod accessors;
pub mod code;
pub mod endpoint;
pub mod error;
pub mod message;
pub mod option;
mod small;
pub mod tcp;
pub mod token;

pub use code::{Code, MessageType};
pub use error::{BlockError, DecodeError, OptionTooLong, TokenTooLong};
pub use message::{peek_header, Header, Message, MessageRef, HEADER_LEN, VERSION};
pub use option::{is_critical, Block, CoapOption, Options};
pub use tcp::{decode_frame, encode_frame, TcpMessage};
pub use token::Token;
