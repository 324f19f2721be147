//! Message type (`T` field) and message code (`class.detail`).

use core::fmt;

/// CoAP message type, the 2-bit `T` field of the RFC 7252 header (§3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MessageType {
    /// Confirmable (0): retransmitted until acknowledged.
    Con = 0,
    /// Non-confirmable (1).
    Non = 1,
    /// Acknowledgement (2).
    Ack = 2,
    /// Reset (3).
    Rst = 3,
}

impl MessageType {
    /// Builds a type from the two low bits of `bits` (higher bits are ignored).
    pub const fn from_bits(bits: u8) -> MessageType {
        match bits & 0b11 {
            0 => MessageType::Con,
            1 => MessageType::Non,
            2 => MessageType::Ack,
            _ => MessageType::Rst,
        }
    }

    /// The 2-bit wire value.
    pub const fn bits(self) -> u8 {
        self as u8
    }
}

impl fmt::Display for MessageType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MessageType::Con => "CON",
            MessageType::Non => "NON",
            MessageType::Ack => "ACK",
            MessageType::Rst => "RST",
        })
    }
}

/// A CoAP code: 3-bit class and 5-bit detail, written `c.dd` (RFC 7252 §3, §12.1).
///
/// The raw byte is public so any value can be represented; [`Code::new`]
/// builds one from class and detail.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Code(pub u8);

impl Code {
    /// 0.00 Empty.
    pub const EMPTY: Code = Code::new(0, 0);
    /// 0.01 GET.
    pub const GET: Code = Code::new(0, 1);
    /// 0.02 POST.
    pub const POST: Code = Code::new(0, 2);
    /// 0.03 PUT.
    pub const PUT: Code = Code::new(0, 3);
    /// 0.04 DELETE.
    pub const DELETE: Code = Code::new(0, 4);
    /// 0.05 FETCH (RFC 8132).
    pub const FETCH: Code = Code::new(0, 5);
    /// 0.06 PATCH (RFC 8132).
    pub const PATCH: Code = Code::new(0, 6);
    /// 0.07 iPATCH (RFC 8132).
    pub const IPATCH: Code = Code::new(0, 7);
    /// 2.01 Created.
    pub const CREATED: Code = Code::new(2, 1);
    /// 2.02 Deleted.
    pub const DELETED: Code = Code::new(2, 2);
    /// 2.03 Valid.
    pub const VALID: Code = Code::new(2, 3);
    /// 2.04 Changed.
    pub const CHANGED: Code = Code::new(2, 4);
    /// 2.05 Content (0x45).
    pub const CONTENT: Code = Code::new(2, 5);
    /// 2.31 Continue (RFC 7959).
    pub const CONTINUE: Code = Code::new(2, 31);
    /// 4.00 Bad Request.
    pub const BAD_REQUEST: Code = Code::new(4, 0);
    /// 4.02 Bad Option.
    pub const BAD_OPTION: Code = Code::new(4, 2);
    /// 4.04 Not Found.
    pub const NOT_FOUND: Code = Code::new(4, 4);
    /// 4.05 Method Not Allowed.
    pub const METHOD_NOT_ALLOWED: Code = Code::new(4, 5);
    /// 4.08 Request Entity Incomplete (RFC 7959).
    pub const REQUEST_ENTITY_INCOMPLETE: Code = Code::new(4, 8);
    /// 4.13 Request Entity Too Large.
    pub const REQUEST_ENTITY_TOO_LARGE: Code = Code::new(4, 13);
    /// 5.00 Internal Server Error.
    pub const INTERNAL_SERVER_ERROR: Code = Code::new(5, 0);
    /// 5.01 Not Implemented.
    pub const NOT_IMPLEMENTED: Code = Code::new(5, 1);
    /// 5.03 Service Unavailable.
    pub const SERVICE_UNAVAILABLE: Code = Code::new(5, 3);
    /// 7.01 CSM, Capabilities and Settings Message (RFC 8323 signalling).
    pub const CSM: Code = Code::new(7, 1);
    /// 7.02 Ping (RFC 8323 signalling).
    pub const PING: Code = Code::new(7, 2);
    /// 7.03 Pong (RFC 8323 signalling).
    pub const PONG: Code = Code::new(7, 3);
    /// 7.04 Release (RFC 8323 signalling).
    pub const RELEASE: Code = Code::new(7, 4);
    /// 7.05 Abort (RFC 8323 signalling).
    pub const ABORT: Code = Code::new(7, 5);

    /// Builds `class.detail`. Only the low 3 bits of `class` and the low 5
    /// bits of `detail` are used.
    pub const fn new(class: u8, detail: u8) -> Code {
        Code(((class & 0x07) << 5) | (detail & 0x1f))
    }

    /// The class (0..=7).
    pub const fn class(self) -> u8 {
        self.0 >> 5
    }

    /// The detail (0..=31).
    pub const fn detail(self) -> u8 {
        self.0 & 0x1f
    }

    /// The raw wire byte.
    pub const fn raw(self) -> u8 {
        self.0
    }

    /// `true` for 0.00 Empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// `true` for a request method code: class 0 and detail ≠ 0.
    pub const fn is_request(self) -> bool {
        self.class() == 0 && self.detail() != 0
    }

    /// `true` for a response code: classes 2 to 5 (RFC 7252 §12.1 assigns
    /// the whole range 2.00–5.31 to responses; only 2, 4 and 5 are in use).
    pub const fn is_response(self) -> bool {
        matches!(self.class(), 2..=5)
    }

    /// `true` for a success response (class 2).
    pub const fn is_success(self) -> bool {
        self.class() == 2
    }

    /// `true` for an RFC 8323 signalling code (class 7).
    pub const fn is_signalling(self) -> bool {
        self.class() == 7
    }

    /// `true` for a class that RFC 7252 §12.1 reserves: 1, 6 and 7.
    /// (Class 7 is used by RFC 8323 signalling, which exists only over
    /// reliable transports; over UDP it stays reserved.)
    pub const fn is_reserved_class(self) -> bool {
        matches!(self.class(), 1 | 6 | 7)
    }

    /// The registered name of the code, if it is one of the constants above.
    pub const fn name(self) -> Option<&'static str> {
        Some(match self {
            Code::EMPTY => "Empty",
            Code::GET => "GET",
            Code::POST => "POST",
            Code::PUT => "PUT",
            Code::DELETE => "DELETE",
            Code::FETCH => "FETCH",
            Code::PATCH => "PATCH",
            Code::IPATCH => "iPATCH",
            Code::CREATED => "Created",
            Code::DELETED => "Deleted",
            Code::VALID => "Valid",
            Code::CHANGED => "Changed",
            Code::CONTENT => "Content",
            Code::CONTINUE => "Continue",
            Code::BAD_REQUEST => "Bad Request",
            Code::BAD_OPTION => "Bad Option",
            Code::NOT_FOUND => "Not Found",
            Code::METHOD_NOT_ALLOWED => "Method Not Allowed",
            Code::REQUEST_ENTITY_INCOMPLETE => "Request Entity Incomplete",
            Code::REQUEST_ENTITY_TOO_LARGE => "Request Entity Too Large",
            Code::INTERNAL_SERVER_ERROR => "Internal Server Error",
            Code::NOT_IMPLEMENTED => "Not Implemented",
            Code::SERVICE_UNAVAILABLE => "Service Unavailable",
            Code::CSM => "CSM",
            Code::PING => "Ping",
            Code::PONG => "Pong",
            Code::RELEASE => "Release",
            Code::ABORT => "Abort",
            _ => return None,
        })
    }
}

impl fmt::Display for Code {
    /// Formats as `c.dd`, e.g. `2.05`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:02}", self.class(), self.detail())
    }
}

impl fmt::Debug for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "Code({self} {n})"),
            None => write!(f, "Code({self})"),
        }
    }
}

impl Default for Code {
    /// 0.00 Empty.
    fn default() -> Code {
        Code::EMPTY
    }
}

impl From<u8> for Code {
    fn from(raw: u8) -> Code {
        Code(raw)
    }
}

impl From<Code> for u8 {
    fn from(c: Code) -> u8 {
        c.0
    }
}
