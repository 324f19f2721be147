//! Options: numbers, the sorted option list, uint values and Block values.
//!
//! Options are kept sorted by number; repeated options keep the order in
//! which they were added (which is their wire order).

use crate::error::{BlockError, DecodeError, OptionTooLong};
use crate::small::SmallBytes;

/// If-Match (1).
pub const IF_MATCH: u16 = 1;
/// Uri-Host (3).
pub const URI_HOST: u16 = 3;
/// ETag (4).
pub const ETAG: u16 = 4;
/// If-None-Match (5).
pub const IF_NONE_MATCH: u16 = 5;
/// Observe (6, RFC 7641).
pub const OBSERVE: u16 = 6;
/// Uri-Port (7).
pub const URI_PORT: u16 = 7;
/// Location-Path (8).
pub const LOCATION_PATH: u16 = 8;
/// Uri-Path (11).
pub const URI_PATH: u16 = 11;
/// Content-Format (12).
pub const CONTENT_FORMAT: u16 = 12;
/// Max-Age (14).
pub const MAX_AGE: u16 = 14;
/// Uri-Query (15).
pub const URI_QUERY: u16 = 15;
/// Accept (17).
pub const ACCEPT: u16 = 17;
/// Location-Query (20).
pub const LOCATION_QUERY: u16 = 20;
/// Block2 (23, RFC 7959).
pub const BLOCK2: u16 = 23;
/// Block1 (27, RFC 7959).
pub const BLOCK1: u16 = 27;
/// Size2 (28, RFC 7959).
pub const SIZE2: u16 = 28;
/// Proxy-Uri (35).
pub const PROXY_URI: u16 = 35;
/// Proxy-Scheme (39).
pub const PROXY_SCHEME: u16 = 39;
/// Size1 (60).
pub const SIZE1: u16 = 60;

/// Longest option value the option header can express: 65535 + 269.
pub const MAX_OPTION_VALUE_LEN: usize = 65_804;

/// Most options one message may carry; a decoder refuses more
/// ([`DecodeError::TooManyOptions`]). CoAP defines a few dozen option numbers and real
/// messages carry a handful; the cap bounds the work and memory a hostile datagram can cause
/// (a 1 500-byte datagram could otherwise hold 1 400 empty options).
pub const MAX_OPTIONS: usize = 128;

/// `true` iff option `number` is critical, i.e. odd (RFC 7252 §5.4.1).
pub const fn is_critical(number: u16) -> bool {
    number & 1 == 1
}

/// `true` iff option `number` is unsafe to forward (bit 1 set, RFC 7252 §5.4.2).
pub const fn is_unsafe(number: u16) -> bool {
    number & 2 == 2
}

/// Bytes needed for `value` as a uint option: minimal length, 0 → 0 bytes.
pub const fn uint_len(value: u64) -> usize {
    8 - (value.leading_zeros() / 8) as usize
}

/// Encodes a uint option value (RFC 7252 §3.2): big-endian, no leading zero
/// bytes, so 0 is the empty string.
pub fn encode_uint(value: u64) -> Vec<u8> {
    let be = value.to_be_bytes();
    be[8 - uint_len(value)..].to_vec()
}

/// Decodes a uint option value. Leading zero bytes are accepted (a sender
/// SHOULD but need not use the minimal form). Returns `None` for values
/// longer than 8 bytes.
pub fn decode_uint(value: &[u8]) -> Option<u64> {
    if value.len() > 8 {
        return None;
    }
    Some(value.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
}

/// One option instance, borrowed from its [`Options`] list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CoapOption<'a> {
    /// Option number.
    pub number: u16,
    /// Raw value bytes.
    pub value: &'a [u8],
}

/// A Block1/Block2 option value (RFC 7959 §2.2): `NUM | M | SZX`.
///
/// Fields are public; [`Block::new`] and [`Block::validate`] check the
/// ranges (NUM ≤ 2^20−1, SZX ≤ 6), and every encoding path validates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Block {
    /// Block number (0 ..= 2^20−1).
    pub num: u32,
    /// More flag: `true` if more blocks follow (meaningless, and 0, in a
    /// control Block2 of a request).
    pub more: bool,
    /// Size exponent: block size is 2^(SZX+4), 0 ..= 6.
    pub szx: u8,
}

impl Block {
    /// Largest NUM representable in 20 bits.
    pub const MAX_NUM: u32 = (1 << 20) - 1;

    /// Builds and validates a block value.
    pub fn new(num: u32, more: bool, szx: u8) -> Result<Block, BlockError> {
        let b = Block { num, more, szx };
        b.validate()?;
        Ok(b)
    }

    /// Checks NUM and SZX ranges.
    pub fn validate(&self) -> Result<(), BlockError> {
        if self.szx == 7 {
            return Err(BlockError::ReservedSzx);
        }
        if self.szx > 7 {
            return Err(BlockError::InvalidSzx { szx: self.szx });
        }
        if self.num > Self::MAX_NUM {
            return Err(BlockError::NumTooLarge { num: self.num });
        }
        Ok(())
    }

    /// Block size in bytes, 2^(SZX+4). Meaningful for SZX 0..=6 (16..=1024).
    pub fn block_size(&self) -> usize {
        1usize << (u32::from(self.szx.min(7)) + 4)
    }

    /// Byte offset of this block in the body: NUM · size.
    pub fn offset(&self) -> u64 {
        u64::from(self.num) * self.block_size() as u64
    }

    /// SZX for a block size of 16, 32, ..., 1024 bytes; `None` otherwise.
    pub fn szx_for_size(size: usize) -> Option<u8> {
        if (16..=1024).contains(&size) && size.is_power_of_two() {
            Some((size.trailing_zeros() - 4) as u8)
        } else {
            None
        }
    }

    /// The integer `NUM << 4 | M << 3 | SZX` (unvalidated).
    fn raw(&self) -> u32 {
        (self.num << 4) | (u32::from(self.more) << 3) | u32::from(self.szx & 0x7)
    }

    /// Encodes the option value: 0, 1, 2 or 3 bytes (minimal uint).
    pub fn encode_value(&self) -> Result<Vec<u8>, BlockError> {
        self.validate()?;
        Ok(encode_uint(u64::from(self.raw())))
    }

    /// Decodes an option value of 0–3 bytes.
    pub fn decode_value(value: &[u8]) -> Result<Block, BlockError> {
        if value.len() > 3 {
            return Err(BlockError::ValueTooLong { len: value.len() });
        }
        let raw = value.iter().fold(0u32, |acc, &b| (acc << 8) | u32::from(b));
        let b = Block { num: raw >> 4, more: raw & 0x8 != 0, szx: (raw & 0x7) as u8 };
        b.validate()?;
        Ok(b)
    }
}

/// The option list of a message, sorted by number; repeated options keep the order in which
/// they were added.
///
/// Stored as its wire encoding (option headers with deltas, then values; no payload marker)
/// in one contiguous buffer that is inline up to 30 bytes: decoding a datagram copies its
/// option bytes once, encoding copies them back, and the options of a typical request never
/// touch the heap. Lookups walk the encoding (a message carries a handful of options).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Options {
    /// Always a valid, canonical encoding (every value has exactly one RFC 7252 §3.1 form).
    enc: SmallBytes,
}

impl core::fmt::Debug for Options {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Iterator over the options of an [`Options`] list, in wire order.
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    buf: &'a [u8],
    pos: usize,
    number: u16,
}

impl<'a> Iter<'a> {
    /// Iterates over a checked encoding.
    pub(crate) fn over(buf: &'a [u8]) -> Iter<'a> {
        Iter { buf, pos: 0, number: 0 }
    }
}

impl<'a> Iterator for Iter<'a> {
    type Item = CoapOption<'a>;

    #[inline]
    fn next(&mut self) -> Option<CoapOption<'a>> {
        let a = option_at(self.buf, self.pos, self.number)?;
        self.pos = a.end;
        self.number = a.number;
        Some(CoapOption { number: a.number, value: &self.buf[a.value..a.end] })
    }
}

/// One option of an encoding: its number and where its header, value and end are.
struct At {
    number: u16,
    value: usize,
    end: usize,
}

/// The option whose header starts at `buf[pos]`, after option number `prev`. `None` at the
/// end (or, defensively, at anything that is not an option header).
#[inline]
fn option_at(buf: &[u8], pos: usize, prev: u16) -> Option<At> {
    let b = *buf.get(pos)?;
    let (dn, ln) = (b >> 4, b & 0x0F);
    if dn == 15 || ln == 15 {
        return None;
    }
    let mut p = pos + 1;
    let delta = read_ext(dn, buf, &mut p)?;
    let len = read_ext(ln, buf, &mut p)?;
    let number = u16::try_from(usize::from(prev) + delta).ok()?;
    let end = p.checked_add(len).filter(|&e| e <= buf.len())?;
    Some(At { number, value: p, end })
}

/// The header of an option `delta` after its predecessor with a value of `len` bytes
/// (both ≤ [`MAX_OPTION_VALUE_LEN`]): its bytes and their count.
fn header(delta: usize, len: usize) -> ([u8; 5], usize) {
    let mut h = [0u8; 5];
    h[0] = (nibble(delta) << 4) | nibble(len);
    let mut n = 1;
    for v in [delta, len] {
        match v {
            0..=12 => {}
            13..=268 => {
                h[n] = (v - 13) as u8;
                n += 1;
            }
            _ => {
                h[n..n + 2].copy_from_slice(&((v - 269) as u16).to_be_bytes());
                n += 2;
            }
        }
    }
    (h, n)
}

impl Options {
    /// An empty list.
    pub const fn new() -> Options {
        Options { enc: SmallBytes::new() }
    }

    /// The list whose encoding is `enc`, checked by [`split_options_and_payload`].
    pub(crate) fn from_checked(enc: &[u8]) -> Options {
        Options { enc: SmallBytes::from_slice(enc) }
    }

    /// The wire encoding of the options (what [`Options::encode`] appends).
    pub fn as_bytes(&self) -> &[u8] {
        self.enc.as_slice()
    }

    /// Iterates over all options in wire order.
    #[inline]
    pub fn iter(&self) -> Iter<'_> {
        Iter { buf: self.enc.as_slice(), pos: 0, number: 0 }
    }

    /// Number of option instances.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// `true` if there are no options.
    pub fn is_empty(&self) -> bool {
        self.enc.as_slice().is_empty()
    }

    /// Removes all options.
    pub fn clear(&mut self) {
        self.enc.clear();
    }

    /// As [`Options::add`], but returns an error instead of panicking when `value` is longer
    /// than [`MAX_OPTION_VALUE_LEN`] (for values that come from users).
    pub fn try_add(&mut self, number: u16, value: impl AsRef<[u8]>) -> Result<(), OptionTooLong> {
        let value = value.as_ref();
        if value.len() > MAX_OPTION_VALUE_LEN {
            return Err(OptionTooLong { number, len: value.len() });
        }
        self.insert(number, value);
        Ok(())
    }

    /// Adds an instance of `number`, after any existing instances of the same
    /// number (so repeated options keep insertion order).
    ///
    /// # Panics
    /// If `value` is longer than [`MAX_OPTION_VALUE_LEN`], which the wire
    /// format cannot express.
    pub fn add(&mut self, number: u16, value: impl AsRef<[u8]>) {
        let value = value.as_ref();
        assert!(
            value.len() <= MAX_OPTION_VALUE_LEN,
            "option value of {} bytes exceeds {MAX_OPTION_VALUE_LEN}",
            value.len()
        );
        self.insert(number, value);
    }

    /// Inserts `number` = `value` after every option numbered ≤ `number`: the new header
    /// and value go in, and the header of the option after it (if any) is re-encoded with
    /// its delta from `number`.
    fn insert(&mut self, number: u16, value: &[u8]) {
        let buf = self.enc.as_slice();
        let (mut pos, mut prev) = (0, 0u16);
        let mut next = None;
        while let Some(a) = option_at(buf, pos, prev) {
            if a.number > number {
                next = Some(a);
                break;
            }
            pos = a.end;
            prev = a.number;
        }
        let (h, hl) = header(usize::from(number - prev), value.len());
        let enc = match next {
            None => SmallBytes::concat(&[&buf[..pos], &h[..hl], value]),
            Some(a) => {
                let (h2, hl2) = header(usize::from(a.number - number), a.end - a.value);
                SmallBytes::concat(&[&buf[..pos], &h[..hl], value, &h2[..hl2], &buf[a.value..]])
            }
        };
        self.enc = enc;
    }

    /// Replaces all instances of `number` with a single one.
    ///
    /// # Panics
    /// As [`Options::add`].
    pub fn set(&mut self, number: u16, value: impl AsRef<[u8]>) {
        self.remove(number);
        self.add(number, value);
    }

    /// Removes all instances of `number`; returns how many were removed.
    pub fn remove(&mut self, number: u16) -> usize {
        // The common case, nothing to remove (a request or response built without the
        // option), decided by a walk that stops at the first larger number; the rebuild is
        // out of line.
        let mut it = self.iter();
        match it.find(|o| o.number >= number) {
            Some(o) if o.number == number => self.remove_present(number),
            _ => 0,
        }
    }

    /// [`Options::remove`] when `number` is present.
    #[inline(never)]
    fn remove_present(&mut self, number: u16) -> usize {
        let buf = self.enc.as_slice();
        let (mut pos, mut prev) = (0, 0u16);
        let (mut start, mut before, mut removed) = (0, 0u16, 0);
        let mut next = None;
        while let Some(a) = option_at(buf, pos, prev) {
            if a.number > number {
                next = Some(a);
                break;
            }
            if a.number == number {
                if removed == 0 {
                    (start, before) = (pos, prev);
                }
                removed += 1;
            }
            pos = a.end;
            prev = a.number;
        }
        if removed == 0 {
            return 0;
        }
        let enc = match next {
            None => SmallBytes::from_slice(&buf[..start]),
            Some(a) => {
                let (h, hl) = header(usize::from(a.number - before), a.end - a.value);
                SmallBytes::concat(&[&buf[..start], &h[..hl], &buf[a.value..]])
            }
        };
        self.enc = enc;
        removed
    }

    /// `true` if at least one instance of `number` is present.
    pub fn contains(&self, number: u16) -> bool {
        self.get(number).is_some()
    }

    /// Value of the first instance of `number`.
    pub fn get(&self, number: u16) -> Option<&[u8]> {
        self.get_all(number).next()
    }

    /// Values of all instances of `number`, in order.
    pub fn get_all(&self, number: u16) -> impl Iterator<Item = &[u8]> + '_ {
        self.iter().skip_while(move |o| o.number < number).take_while(move |o| o.number == number).map(|o| o.value)
    }

    /// First instance of `number` decoded as a uint; `None` if absent or
    /// longer than 8 bytes.
    pub fn get_uint(&self, number: u16) -> Option<u64> {
        self.get(number).and_then(decode_uint)
    }

    /// Sets `number` to the minimal uint encoding of `value`.
    pub fn set_uint(&mut self, number: u16, value: u64) {
        let be = value.to_be_bytes();
        self.set(number, &be[8 - uint_len(value)..]);
    }

    /// The first critical option for which `known` returns `false`, if any:
    /// RFC 7252 §5.4.1 says such a message must be rejected.
    pub fn first_unknown_critical(&self, known: impl Fn(u16) -> bool) -> Option<u16> {
        self.iter().map(|o| o.number).find(|&n| is_critical(n) && !known(n))
    }

    /// Uri-Path segments joined with `/` (no leading slash; lossy UTF-8).
    /// `GET /hello` gives `"hello"`; no Uri-Path gives `""`.
    pub fn uri_path(&self) -> String {
        join_lossy(self.get_all(URI_PATH), '/')
    }

    /// Appends Uri-Path options for `path`: one leading `/` is ignored, `""`
    /// and `"/"` add nothing, otherwise the rest is split on `/` and every
    /// segment (even an empty one) becomes an option, as in RFC 7252 §6.4.
    /// No percent-decoding is done.
    pub fn add_uri_path(&mut self, path: &str) {
        let path = path.strip_prefix('/').unwrap_or(path);
        if path.is_empty() {
            return;
        }
        for seg in path.split('/') {
            self.add(URI_PATH, seg.as_bytes());
        }
    }

    /// Uri-Query values in order (lossy UTF-8).
    pub fn uri_queries(&self) -> Vec<String> {
        self.get_all(URI_QUERY).map(|v| String::from_utf8_lossy(v).into_owned()).collect()
    }

    /// Appends one Uri-Query option (e.g. `"k=v"`).
    pub fn add_uri_query(&mut self, query: &str) {
        self.add(URI_QUERY, query.as_bytes());
    }

    /// Content-Format, if present and ≤ 65535.
    pub fn content_format(&self) -> Option<u16> {
        self.get_uint(CONTENT_FORMAT).and_then(|v| u16::try_from(v).ok())
    }

    /// Sets Content-Format.
    pub fn set_content_format(&mut self, format: u16) {
        self.set_uint(CONTENT_FORMAT, u64::from(format));
    }

    /// Block2, if present. `Err` if the value is malformed.
    pub fn block2(&self) -> Result<Option<Block>, BlockError> {
        self.get(BLOCK2).map(Block::decode_value).transpose()
    }

    /// Block1, if present. `Err` if the value is malformed.
    pub fn block1(&self) -> Result<Option<Block>, BlockError> {
        self.get(BLOCK1).map(Block::decode_value).transpose()
    }

    /// Sets (replaces) Block2. Leaves the options untouched on error.
    pub fn set_block2(&mut self, block: Block) -> Result<(), BlockError> {
        block.validate()?;
        self.set_uint(BLOCK2, u64::from(block.raw()));
        Ok(())
    }

    /// Sets (replaces) Block1. Leaves the options untouched on error.
    pub fn set_block1(&mut self, block: Block) -> Result<(), BlockError> {
        block.validate()?;
        self.set_uint(BLOCK1, u64::from(block.raw()));
        Ok(())
    }

    /// Size2 (RFC 7959 §4), if present and ≤ u32::MAX.
    pub fn size2(&self) -> Option<u32> {
        self.get_uint(SIZE2).and_then(|v| u32::try_from(v).ok())
    }

    /// Sets Size2.
    pub fn set_size2(&mut self, size: u32) {
        self.set_uint(SIZE2, u64::from(size));
    }

    /// Size1 (RFC 7959 §4), if present and ≤ u32::MAX.
    pub fn size1(&self) -> Option<u32> {
        self.get_uint(SIZE1).and_then(|v| u32::try_from(v).ok())
    }

    /// Sets Size1.
    pub fn set_size1(&mut self, size: u32) {
        self.set_uint(SIZE1, u64::from(size));
    }

    /// Encoded size of the options (headers, extensions and values).
    pub fn encoded_len(&self) -> usize {
        self.enc.as_slice().len()
    }

    /// Appends the encoded options to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.enc.as_slice());
    }
}

impl<'a> IntoIterator for &'a Options {
    type Item = CoapOption<'a>;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

fn join_lossy<'a>(parts: impl Iterator<Item = &'a [u8]>, sep: char) -> String {
    let mut s = String::new();
    for (i, p) in parts.enumerate() {
        if i > 0 {
            s.push(sep);
        }
        s.push_str(&String::from_utf8_lossy(p));
    }
    s
}

/// Nibble for a delta/length value (value must be ≤ MAX_OPTION_VALUE_LEN).
fn nibble(v: usize) -> u8 {
    match v {
        0..=12 => v as u8,
        13..=268 => 13,
        _ => 14,
    }
}

/// Encoded size of options given as `(number, value length)` pairs sorted by number: each
/// takes one header byte, the extended delta and length, and its value.
pub fn encoded_options_len(options: impl IntoIterator<Item = (u16, usize)>) -> usize {
    let mut prev = 0u16;
    let mut n = 0;
    for (number, len) in options {
        debug_assert!(number >= prev, "options must be sorted by number");
        n += 1 + ext_len(usize::from(number - prev)) + ext_len(len) + len;
        prev = number;
    }
    n
}

/// Bytes taken by the extended form of an option delta or length `v` (RFC 7252 §3.1): 0 for
/// 0–12, 1 for 13–268, 2 for 269–65 804. The one definition of the option header's size (the
/// simulator computes message sizes with it without encoding).
pub fn ext_len(v: usize) -> usize {
    match v {
        0..=12 => 0,
        13..=268 => 1,
        _ => 2,
    }
}

/// Reads an extended delta/length for `nib` at `buf[*pos..]`.
/// Returns `None` if truncated. `nib` must be ≤ 14.
fn read_ext(nib: u8, buf: &[u8], pos: &mut usize) -> Option<usize> {
    match nib {
        13 => {
            let b = *buf.get(*pos)?;
            *pos += 1;
            Some(usize::from(b) + 13)
        }
        14 => {
            let hi = *buf.get(*pos)?;
            let lo = *buf.get(*pos + 1)?;
            *pos += 2;
            Some(usize::from(u16::from_be_bytes([hi, lo])) + 269)
        }
        n => Some(usize::from(n)),
    }
}

/// Splits the part of a datagram after the token into the options' encoding and the payload
/// (without its marker), checking every option: the one strict reader of options, used by
/// [`decode_options_and_payload`] and by borrowed views. Allocates nothing.
pub(crate) fn split_options_and_payload(buf: &[u8]) -> Result<(&[u8], &[u8]), DecodeError> {
    let mut count = 0usize;
    let mut pos = 0usize;
    let mut number = 0u32;
    while pos < buf.len() {
        let b = buf[pos];
        if b == 0xFF {
            if pos + 1 == buf.len() {
                return Err(DecodeError::EmptyPayload);
            }
            return Ok((&buf[..pos], &buf[pos + 1..]));
        }
        pos += 1;
        let dn = b >> 4;
        let ln = b & 0x0F;
        if dn == 15 {
            return Err(DecodeError::ReservedOptionDelta);
        }
        if ln == 15 {
            return Err(DecodeError::ReservedOptionLength);
        }
        let delta = read_ext(dn, buf, &mut pos).ok_or(DecodeError::ExtendedDeltaTruncated)?;
        let len = read_ext(ln, buf, &mut pos).ok_or(DecodeError::ExtendedLengthTruncated)?;
        number += delta as u32;
        if number > u32::from(u16::MAX) {
            return Err(DecodeError::OptionNumberOverflow { number });
        }
        let available = buf.len() - pos;
        if len > available {
            return Err(DecodeError::OptionValueTruncated { number: number as u16, len, available });
        }
        if number == 0 {
            return Err(DecodeError::ReservedOptionNumber);
        }
        if count == MAX_OPTIONS {
            return Err(DecodeError::TooManyOptions { limit: MAX_OPTIONS });
        }
        count += 1;
        pos += len;
    }
    Ok((buf, &[]))
}

/// Parses options, then an optional payload marker and payload, consuming
/// all of `buf` (the part after the token).
pub(crate) fn decode_options_and_payload(buf: &[u8]) -> Result<(Options, Vec<u8>), DecodeError> {
    let (options, payload) = split_options_and_payload(buf)?;
    Ok((Options { enc: SmallBytes::from_slice(options) }, payload.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uint_roundtrip_and_minimal() {
        assert_eq!(encode_uint(0), Vec::<u8>::new());
        assert_eq!(encode_uint(1), vec![1]);
        assert_eq!(encode_uint(0x100), vec![1, 0]);
        assert_eq!(encode_uint(u64::MAX), vec![0xFF; 8]);
        assert_eq!(decode_uint(&[]), Some(0));
        assert_eq!(decode_uint(&[0, 0, 1]), Some(1));
        assert_eq!(decode_uint(&[0; 9]), None);
        for v in [0u64, 1, 255, 256, 65535, 65536, 1 << 40, u64::MAX] {
            assert_eq!(decode_uint(&encode_uint(v)), Some(v));
            assert_eq!(encode_uint(v).len(), uint_len(v));
        }
    }

    #[test]
    fn criticality() {
        assert!(is_critical(URI_PATH));
        assert!(is_critical(BLOCK2));
        assert!(is_critical(BLOCK1));
        assert!(!is_critical(CONTENT_FORMAT));
        assert!(!is_critical(SIZE2));
        assert!(is_unsafe(URI_HOST));
        assert!(!is_unsafe(ETAG));
    }

    #[test]
    fn nibble_boundaries() {
        for (v, n, e) in [(0, 0, 0), (12, 12, 0), (13, 13, 1), (268, 13, 1), (269, 14, 2), (65804, 14, 2)] {
            assert_eq!(nibble(v), n);
            assert_eq!(ext_len(v), e);
            let (h, hl) = header(v, 0);
            assert_eq!((h[0] >> 4, hl), (n, 1 + e));
            let mut pos = 1;
            assert_eq!(read_ext(n, &h[..hl], &mut pos), Some(v));
            assert_eq!(pos, hl);
        }
    }
}
