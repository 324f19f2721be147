//! What an entry keeps: its value ([`Cached`] as handed in, `Value` as kept), a remembered
//! reply ([`Kept`]: header and token, its body in the cache's shared store, `Bodies`) and a
//! reply handed to the cache ([`Reply`]).

use coapcc_cc::Instant;
use slab::Slab;

use super::super::lifecycle::{DuplicateEntry, Remembered};
use super::super::{ServerRequestId, TransmitKind};
use crate::small::SmallBytes;
use crate::{Message, Token};

/// What a duplicate of a remembered message gets (what the endpoint hands the cache; a
/// request handed to the application and not answered yet is remembered with
/// [`DedupCache::insert_pending`](super::DedupCache::insert_pending)).
#[derive(Clone, Debug)]
pub(crate) enum Cached {
    /// Send this reply again (piggybacked response, Empty ACK or RST).
    Reply(Reply),
    /// Nothing to send (a NON, or a message we did not answer).
    Silent,
}

/// [`Cached`] as an entry keeps it: a reply as its header, its token and a reference to the
/// bytes after the token in the cache's shared store ([`Bodies`]).
#[derive(Clone, Copy, Debug)]
pub(super) enum Value {
    Pending(ServerRequestId),
    Reply(Kept),
    Silent,
}

pub(crate) struct Entry {
    pub(super) value: Value,
    pub(super) expires: Option<Instant>,
    /// Duplicates answered from this entry.
    pub(super) replies: u32,
}

impl DuplicateEntry for Entry {
    type Id = Token;

    /// A reply's identification is its token; an Empty ACK or an RST has none.
    fn remembered(&self) -> Remembered<Token> {
        match &self.value {
            Value::Pending(_) => Remembered::Pending,
            Value::Reply(r) => Remembered::Answered(r.token()),
            Value::Silent => Remembered::Silent,
        }
    }

    fn count_reply(&mut self) -> u32 {
        self.replies = self.replies.saturating_add(1);
        self.replies
    }
}

impl Entry {
    /// The reply this entry's message gets again, if it holds one (written out with
    /// [`DedupCache::replay`](super::DedupCache::replay)).
    #[inline]
    pub(crate) fn reply(&self) -> Option<Kept> {
        match self.value {
            Value::Reply(r) => Some(r),
            _ => None,
        }
    }
}

/// A remembered reply as kept (20 bytes): the datagram's 4-byte header and its token as
/// sent, and the bytes after the token (options and payload) as a reference into the cache's
/// store of bodies, shared by the replies whose bodies are equal (a server that answers
/// many requests alike keeps the body once). Written out again, it is the same datagram
/// byte for byte.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Kept {
    pub(super) head: [u8; 4],
    /// The token as sent (the header's TKL bytes).
    pub(super) token: Token,
    kind: TransmitKind,
    /// Index in [`Bodies`]; [`NO_BODY`] when nothing follows the token.
    pub(super) body: u32,
}

/// [`Kept::body`] of a reply that ends with its token (an Empty ACK, an RST).
const NO_BODY: u32 = u32::MAX;

impl Kept {
    /// What it is.
    pub(crate) fn kind(&self) -> TransmitKind {
        self.kind
    }

    /// The reply's identification: its token, or `None` for a message without
    /// identification (an Empty ACK or an RST: code 0.00).
    fn token(&self) -> Option<Token> {
        (self.head[1] != 0).then_some(self.token)
    }
}

/// Bodies of kept replies up to this many bytes are stored inline in the store's slot (a
/// piggybacked answer of a few dozen bytes: no allocation), longer ones on the heap.
const BODY_INLINE: usize = 80;

/// The bodies of the kept replies (what follows the token), reference-counted. A new body
/// equal to the one stored last is shared with it; a body goes when its last reply does.
#[derive(Default)]
pub(super) struct Bodies {
    pub(super) slots: Slab<Body>,
    /// The body stored or shared last.
    pub(super) last: Option<u32>,
}

pub(super) struct Body {
    pub(super) bytes: SmallBytes<BODY_INLINE>,
    pub(super) refs: u32,
}

impl Bodies {
    /// Keep `bytes` (an encoded reply of `kind`, RFC 7252 §3: header, token, rest).
    #[inline]
    fn keep(&mut self, bytes: &[u8], kind: TransmitKind) -> Kept {
        let tkl = usize::from(bytes[0] & 0x0F);
        let token = Token::new(&bytes[4..4 + tkl]).expect("an encoded reply has a valid token length");
        self.keep_with(bytes, kind, token)
    }

    /// [`Bodies::keep`] of a reply whose token (`token`) the caller knows.
    #[inline]
    pub(super) fn keep_with(&mut self, bytes: &[u8], kind: TransmitKind, token: Token) -> Kept {
        let tkl = token.len();
        debug_assert_eq!(&bytes[4..4 + tkl], token.as_bytes());
        let head = [bytes[0], bytes[1], bytes[2], bytes[3]];
        let rest = &bytes[4 + tkl..];
        let body = if rest.is_empty() { NO_BODY } else { self.share(rest) };
        Kept { head, token, kind, body }
    }

    /// The index of a body equal to `rest`, shared with the last one when equal.
    #[inline]
    fn share(&mut self, rest: &[u8]) -> u32 {
        if let Some(i) = self.last {
            let b = &mut self.slots[i as usize];
            if b.bytes.as_slice() == rest {
                b.refs += 1;
                return i;
            }
        }
        self.add(rest)
    }

    #[inline(never)]
    fn add(&mut self, rest: &[u8]) -> u32 {
        let i = self.slots.insert(Body { bytes: SmallBytes::from_slice(rest), refs: 1 }) as u32;
        self.last = Some(i);
        i
    }

    /// A reply referring to body `i` went.
    #[inline]
    fn release(&mut self, i: u32) {
        if i == NO_BODY {
            return;
        }
        let b = &mut self.slots[i as usize];
        b.refs -= 1;
        if b.refs == 0 {
            self.slots.remove(i as usize);
            if self.last == Some(i) {
                self.last = None;
            }
        }
    }

    #[inline]
    pub(super) fn bytes(&self, i: u32) -> &[u8] {
        if i == NO_BODY {
            &[]
        } else {
            self.slots[i as usize].bytes.as_slice()
        }
    }

    /// `value` as an entry keeps it.
    #[inline]
    pub(super) fn value(&mut self, value: Cached) -> Value {
        match value {
            Cached::Reply(r) => Value::Reply(self.keep(r.bytes.as_slice(), r.kind)),
            Cached::Silent => Value::Silent,
        }
    }

    /// An entry's value `old` went.
    #[inline]
    pub(super) fn drop_value(&mut self, old: Value) {
        if let Value::Reply(r) = old {
            self.release(r.body);
        }
    }

    /// Set `e`'s value, releasing the old one's body.
    #[inline]
    pub(super) fn set(&mut self, e: &mut Entry, value: Value) {
        let old = core::mem::replace(&mut e.value, value);
        self.drop_value(old);
    }
}

/// Replies up to this many bytes are kept inline in a [`Reply`] (no allocation).
const REPLY_INLINE: usize = 80;

/// A reply handed to the cache, encoded (the cache keeps it as a [`Kept`]).
#[derive(Clone, Debug)]
pub(crate) struct Reply {
    bytes: SmallBytes<REPLY_INLINE>,
    kind: TransmitKind,
}

impl Reply {
    /// The reply `msg`, encoded.
    pub(crate) fn of(msg: &Message) -> Reply {
        Reply::encoded(&msg.to_bytes(), super::super::transmit_kind(msg))
    }

    /// A copy of a reply already encoded (`bytes`, of `kind`).
    #[inline]
    pub(crate) fn encoded(bytes: &[u8], kind: TransmitKind) -> Reply {
        Reply { bytes: SmallBytes::from_slice(bytes), kind }
    }

    /// What it is.
    pub(crate) fn kind(&self) -> TransmitKind {
        self.kind
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry keeps a reply in 48 bytes whatever the reply's length (its body is shared).
    #[test]
    fn entries_are_small() {
        assert!(core::mem::size_of::<Entry>() <= 48, "{}", core::mem::size_of::<Entry>());
    }
}
