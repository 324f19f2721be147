//! Property tests: encode/decode round trips, `encoded_len` exactness, and
//! no panics (plus canonical re-encoding) on arbitrary input, for UDP
//! messages and chunked TCP streams.

use coapcc_proto::tcp::{self, FrameDecoder, TcpMessage};
use coapcc_proto::{peek_header, Code, DecodeError, Message, MessageType, Options, Token};
use proptest::collection::vec;
use proptest::prelude::*;

fn token() -> impl Strategy<Value = Token> {
    vec(any::<u8>(), 0..=8).prop_map(|b| Token::new(&b).unwrap())
}

fn option_value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => vec(any::<u8>(), 0..16),
        1 => vec(any::<u8>(), 260..280),
    ]
}

fn options() -> impl Strategy<Value = Options> {
    // Option number 0 is reserved (RFC 7252 §12.2) and refused by the decoder.
    let number = prop_oneof![4 => 1u16..64, 1 => 1u16..=u16::MAX, 1 => 65_000u16..=65_535];
    vec((number, option_value()), 0..8).prop_map(|list| {
        let mut o = Options::new();
        for (n, v) in list {
            o.add(n, v);
        }
        o
    })
}

fn payload() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![3 => Just(Vec::new()), 6 => vec(any::<u8>(), 1..64), 1 => vec(any::<u8>(), 250..400)]
}

/// Any message that `Message::decode` accepts.
fn valid_message() -> impl Strategy<Value = Message> {
    let code = any::<u8>().prop_map(Code).prop_filter("reserved class", |c| !c.is_reserved_class());
    (0u8..4, code, any::<u16>(), token(), options(), payload()).prop_map(|(t, code, mid, token, options, payload)| {
        let mut m = Message::new(MessageType::from_bits(t), code, mid);
        if !code.is_empty() {
            m.token = token;
            m.options = options;
            m.payload = payload;
        }
        m
    })
}

fn tcp_message() -> impl Strategy<Value = TcpMessage> {
    (any::<u8>(), token(), options(), payload()).prop_map(|(code, token, options, payload)| TcpMessage {
        code: Code(code),
        token,
        options,
        payload,
    })
}

/// Random bytes, half of them behind a plausible version-1 header.
fn datagram_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        vec(any::<u8>(), 0..48),
        (0x40u8..0x80, any::<u8>(), vec(any::<u8>(), 2..48)).prop_map(|(b0, code, mut rest)| {
            rest.insert(0, code);
            rest.insert(0, b0);
            rest
        }),
    ]
}

/// Splits `data` into chunks whose sizes cycle through `sizes`.
fn chunks<'a>(data: &'a [u8], sizes: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut i = 0;
    while at < data.len() {
        let n = sizes[i % sizes.len()].min(data.len() - at);
        out.push(&data[at..at + n]);
        at += n;
        i += 1;
    }
    out
}

/// Reference: repeatedly `decode_frame` on the whole buffer.
fn decode_all(mut buf: &[u8]) -> (Vec<TcpMessage>, Result<usize, DecodeError>) {
    let mut msgs = Vec::new();
    loop {
        match tcp::decode_frame(buf) {
            Ok(Some((m, n))) => {
                assert!(n > 0 && n <= buf.len());
                msgs.push(m);
                buf = &buf[n..];
            }
            Ok(None) => return (msgs, Ok(buf.len())),
            Err(e) => return (msgs, Err(e)),
        }
    }
}

/// Feeds `data` chunk by chunk into a `FrameDecoder`.
fn decode_chunked(data: &[u8], sizes: &[usize]) -> (Vec<TcpMessage>, Result<usize, DecodeError>) {
    let mut d = FrameDecoder::new();
    let mut msgs = Vec::new();
    for c in chunks(data, sizes) {
        d.push(c);
        loop {
            match d.next_message() {
                Ok(Some(m)) => msgs.push(m),
                Ok(None) => break,
                Err(e) => return (msgs, Err(e)),
            }
        }
    }
    (msgs, Ok(d.buffered()))
}

/// One edit of an option list: add, set or remove `number`.
#[derive(Clone, Debug)]
enum Edit {
    Add(u16, Vec<u8>),
    Set(u16, Vec<u8>),
    Remove(u16),
}

fn edit() -> impl Strategy<Value = Edit> {
    // Few distinct numbers (so that repeats and neighbours meet), and some far apart (so
    // that deltas cross the 13 / 269 extended forms in both directions).
    let number = prop_oneof![4 => 1u16..8, 1 => 1u16..400, 1 => 60_000u16..=u16::MAX];
    prop_oneof![
        3 => (number.clone(), option_value()).prop_map(|(n, v)| Edit::Add(n, v)),
        1 => (number.clone(), option_value()).prop_map(|(n, v)| Edit::Set(n, v)),
        1 => number.prop_map(Edit::Remove),
    ]
}

proptest! {
    /// `Options` (kept as its wire encoding) behaves like a list sorted by number in which
    /// repeats keep their insertion order, and always encodes what it holds.
    #[test]
    fn options_edit_like_a_sorted_list(edits in vec(edit(), 0..24)) {
        let mut o = Options::new();
        let mut model: Vec<(u16, Vec<u8>)> = Vec::new();
        for e in edits {
            match e {
                Edit::Add(n, v) => {
                    o.add(n, &v);
                    let at = model.partition_point(|(m, _)| *m <= n);
                    model.insert(at, (n, v));
                }
                Edit::Set(n, v) => {
                    o.set(n, &v);
                    model.retain(|(m, _)| *m != n);
                    let at = model.partition_point(|(m, _)| *m <= n);
                    model.insert(at, (n, v));
                }
                Edit::Remove(n) => {
                    let before = model.len();
                    model.retain(|(m, _)| *m != n);
                    prop_assert_eq!(o.remove(n), before - model.len());
                }
            }
            let got: Vec<(u16, Vec<u8>)> = o.iter().map(|x| (x.number, x.value.to_vec())).collect();
            prop_assert_eq!(&got, &model);
            prop_assert_eq!(o.len(), model.len());
            let mut m = Message::new(MessageType::Con, Code::GET, 1);
            m.options = o.clone();
            let b = m.to_bytes();
            prop_assert_eq!(b.len(), m.encoded_len());
            if model.len() <= coapcc_proto::option::MAX_OPTIONS {
                prop_assert_eq!(Message::decode(&b).unwrap().options, o.clone());
            }
            for (n, _) in &model {
                let all: Vec<&[u8]> = model.iter().filter(|(m, _)| m == n).map(|(_, v)| &v[..]).collect();
                prop_assert_eq!(o.get_all(*n).collect::<Vec<_>>(), all);
            }
        }
    }

    #[test]
    fn udp_roundtrip(m in valid_message()) {
        prop_assert_eq!(m.validate(), Ok(()));
        let b = m.to_bytes();
        prop_assert_eq!(b.len(), m.encoded_len());
        let d = Message::decode(&b).unwrap();
        prop_assert_eq!(&d, &m);
        let h = peek_header(&b).unwrap();
        prop_assert_eq!(h, m.header());
        // appending to a non-empty buffer works too
        let mut out = vec![0xAA];
        m.encode(&mut out);
        prop_assert_eq!(&out[1..], &b[..]);
    }

    #[test]
    fn udp_arbitrary_bytes(b in datagram_bytes()) {
        if let Ok(m) = Message::decode_any_class(&b) {
            // encoding is canonical: an accepted datagram re-encodes to itself
            prop_assert_eq!(m.to_bytes(), b.clone());
            prop_assert_eq!(m.encoded_len(), b.len());
            prop_assert_eq!(Message::decode_any_class(&m.to_bytes()).unwrap(), m.clone());
            prop_assert_eq!(peek_header(&b).unwrap(), m.header());
            let strict = Message::decode(&b);
            if m.code.is_reserved_class() {
                prop_assert_eq!(strict, Err(DecodeError::ReservedCodeClass { code: m.code }));
            } else {
                prop_assert_eq!(strict, Ok(m));
            }
        } else {
            prop_assert!(Message::decode(&b).is_err());
        }
    }

    #[test]
    fn udp_mutated_valid(m in valid_message(), idx in any::<prop::sample::Index>(), byte in any::<u8>(), cut in any::<prop::sample::Index>()) {
        let mut b = m.to_bytes();
        let i = idx.index(b.len());
        b[i] = byte;
        b.truncate(cut.index(b.len() + 1));
        if let Ok(d) = Message::decode(&b) {
            prop_assert_eq!(d.to_bytes(), b);
        }
    }

    #[test]
    fn tcp_roundtrip_chunked(msgs in vec(tcp_message(), 0..6), sizes in vec(1usize..40, 1..8)) {
        let mut stream = Vec::new();
        for m in &msgs {
            let before = stream.len();
            tcp::encode_frame(m, &mut stream);
            prop_assert_eq!(stream.len() - before, m.encoded_len());
            prop_assert_eq!(tcp::frame_len(&stream[before..]), Ok(Some(m.encoded_len())));
        }
        prop_assert_eq!(decode_all(&stream), (msgs.clone(), Ok(0)));
        prop_assert_eq!(decode_chunked(&stream, &sizes), (msgs, Ok(0)));
    }

    #[test]
    fn tcp_prefixes_need_more(m in tcp_message()) {
        let b = m.to_bytes();
        for n in 0..b.len() {
            prop_assert_eq!(tcp::decode_frame(&b[..n]), Ok(None));
        }
    }

    #[test]
    fn tcp_arbitrary_bytes_chunked(b in vec(any::<u8>(), 0..96), sizes in vec(1usize..17, 1..6)) {
        let (msgs, end) = decode_all(&b);
        // accepted frames re-encode to exactly the consumed bytes
        let mut re = Vec::new();
        for m in &msgs {
            m.encode(&mut re);
        }
        prop_assert_eq!(&re[..], &b[..re.len()]);
        if let Ok(left) = end {
            prop_assert_eq!(re.len() + left, b.len());
        }
        // chunked feeding yields the same messages and the same outcome
        prop_assert_eq!(decode_chunked(&b, &sizes), (msgs, end));
    }
}
