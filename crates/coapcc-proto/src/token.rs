//! The message token: 0 to 8 opaque bytes, stored inline.

use core::fmt;

use crate::error::TokenTooLong;

/// A CoAP token (RFC 7252 §5.3.1): 0 to [`Token::MAX_LEN`] bytes.
///
/// Stored inline (fixed array plus length), so it is `Copy` and never
/// allocates. Unused bytes are always zero, so the derived comparisons and
/// hash only depend on the visible bytes.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Token {
    len: u8,
    bytes: [u8; 8],
}

impl Token {
    /// Longest token allowed by RFC 7252 (and RFC 8323 without RFC 8974).
    pub const MAX_LEN: usize = 8;

    /// The zero-length token.
    pub const EMPTY: Token = Token { len: 0, bytes: [0; 8] };

    /// Builds a token from up to 8 bytes.
    pub fn new(bytes: &[u8]) -> Result<Token, TokenTooLong> {
        if bytes.len() > Self::MAX_LEN {
            return Err(TokenTooLong { len: bytes.len() });
        }
        Ok(Token::from_short(bytes))
    }

    /// [`Token::new`] for at most [`Token::MAX_LEN`] bytes (checked by the caller; longer
    /// input keeps its first eight bytes, in release builds).
    #[inline(always)]
    pub(crate) fn from_short(bytes: &[u8]) -> Token {
        debug_assert!(bytes.len() <= Self::MAX_LEN);
        // Assembled in a register from two overlapping 4-byte loads (or up to three bytes)
        // and stored once: no call to `memcpy` for a few bytes, and no byte-wise stores that
        // a wider load of the token would then wait on. Tokens are read from every datagram.
        let n = bytes.len().min(Self::MAX_LEN);
        let v = if n >= 4 {
            let word =
                |at: usize| u64::from(u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]));
            // The two words overlap on identical bytes, so or-ing them is exact.
            word(0) | word(n - 4) << (8 * (n - 4))
        } else if n > 0 {
            u64::from(bytes[0]) | u64::from(bytes[n / 2]) << (8 * (n / 2)) | u64::from(bytes[n - 1]) << (8 * (n - 1))
        } else {
            0
        };
        Token { len: n as u8, bytes: v.to_le_bytes() }
    }

    /// The shortest big-endian encoding of `v` (0 gives the empty token).
    /// Handy for generating tokens from a counter.
    pub fn from_u64(v: u64) -> Token {
        let be = v.to_be_bytes();
        let skip = (v.leading_zeros() / 8) as usize;
        // `skip` ≤ 8 and the slice is at most 8 bytes, so this cannot fail.
        Token::new(&be[skip..]).unwrap_or_default()
    }

    /// The token bytes followed by zeros, [`Token::MAX_LEN`] in all (a fixed-size copy for
    /// encoders).
    pub(crate) fn padded(&self) -> [u8; Token::MAX_LEN] {
        self.bytes
    }

    /// The token bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// Token length in bytes (the TKL field).
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// `true` for the zero-length token.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl TryFrom<&[u8]> for Token {
    type Error = TokenTooLong;
    fn try_from(b: &[u8]) -> Result<Token, TokenTooLong> {
        Token::new(b)
    }
}

impl AsRef<[u8]> for Token {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token({self})")
    }
}

impl fmt::Display for Token {
    /// Lower-case hex, e.g. `a5`; the empty token prints as nothing.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Token;

    /// Every length keeps exactly its bytes, and the unused ones stay zero (so comparisons and
    /// hashes only see the visible bytes).
    #[test]
    fn new_keeps_the_bytes_of_every_length() {
        let src = [0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6, 0x07, 0x18, 0x29];
        for n in 0..=8 {
            let t = Token::new(&src[..n]).unwrap();
            assert_eq!(t.as_bytes(), &src[..n]);
            assert_eq!(t.len(), n);
            assert!(t.bytes[n..].iter().all(|&b| b == 0), "length {n}");
        }
        assert!(Token::new(&src).is_err());
    }
}
