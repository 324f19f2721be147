//! Exact-byte test vectors from the project spec (W1–W3, Block table, F1–F4).

use coapcc_proto::option::{BLOCK2, URI_PATH};
use coapcc_proto::tcp::{self, FrameDecoder, TcpMessage};
use coapcc_proto::{peek_header, Block, Code, Message, MessageType, Token};

fn tok() -> Token {
    Token::new(&[0xA5]).unwrap()
}

fn check_udp(m: &Message, expected: &[u8]) {
    let bytes = m.to_bytes();
    assert_eq!(bytes, expected);
    assert_eq!(m.encoded_len(), expected.len());
    assert_eq!(&Message::decode(expected).unwrap(), m);
}

#[test]
fn w1_con_get_hello() {
    let mut m = Message::new(MessageType::Con, Code::GET, 0x0001).with_token(tok());
    m.add_uri_path("/hello");
    let expected = [0x41, 0x01, 0x00, 0x01, 0xA5, 0xB5, 0x68, 0x65, 0x6C, 0x6C, 0x6F];
    check_udp(&m, &expected);
    assert_eq!(expected.len(), 11);
    let d = Message::decode(&expected).unwrap();
    assert_eq!(d.uri_path(), "hello");
    assert!(d.code.is_request());
    assert_eq!(d.block2(), Ok(None));
}

#[test]
fn w2_ack_content_block2() {
    let payload: Vec<u8> = (0..=255u8).collect();
    let mut m = Message::new(MessageType::Ack, Code::CONTENT, 0x0001).with_token(tok()).with_payload(payload.clone());
    m.set_block2(Block::new(0, true, 4).unwrap()).unwrap();
    let mut expected = vec![0x61, 0x45, 0x00, 0x01, 0xA5, 0xD1, 0x0A, 0x0C, 0xFF];
    expected.extend_from_slice(&payload);
    assert_eq!(expected.len(), 265);
    check_udp(&m, &expected);
    let d = Message::decode(&expected).unwrap();
    assert_eq!(d.block2(), Ok(Some(Block { num: 0, more: true, szx: 4 })));
    assert_eq!(d.block2().unwrap().unwrap().block_size(), 256);
    // + 8 B UDP + 20 B IPv4 = 293 ≤ 296-byte MTU
    assert_eq!(m.encoded_len() + 28, 293);
}

#[test]
fn w3_con_get_hello_block2() {
    let mut m = Message::new(MessageType::Con, Code::GET, 0x0002).with_token(tok());
    m.add_uri_path("hello");
    m.set_block2(Block::new(1, false, 4).unwrap()).unwrap();
    let expected = [0x41, 0x01, 0x00, 0x02, 0xA5, 0xB5, 0x68, 0x65, 0x6C, 0x6C, 0x6F, 0xC1, 0x14];
    check_udp(&m, &expected);
    // insertion order must not matter: Block2 first, Uri-Path second
    let mut m2 = Message::new(MessageType::Con, Code::GET, 0x0002).with_token(tok());
    m2.set_block2(Block::new(1, false, 4).unwrap()).unwrap();
    m2.add_uri_path("hello");
    assert_eq!(m2.to_bytes(), expected);
    let opts: Vec<u16> = m2.options.iter().map(|o| o.number).collect();
    assert_eq!(opts, [URI_PATH, BLOCK2]);
}

#[test]
fn block_value_table() {
    let table: [(u32, bool, u8, &[u8]); 6] = [
        (0, true, 4, &[0x0C]),
        (1, false, 4, &[0x14]),
        (15, true, 4, &[0xFC]),
        (16, true, 4, &[0x01, 0x0C]),
        (399, false, 4, &[0x18, 0xF4]),
        (0, false, 0, &[]),
    ];
    for (num, more, szx, bytes) in table {
        let b = Block::new(num, more, szx).unwrap();
        assert_eq!(b.encode_value().unwrap(), bytes, "{num}/{more}/{szx}");
        assert_eq!(Block::decode_value(bytes).unwrap(), b);
    }
    // 102 400 / 256 = 400 blocks, NUM 0..=399; the last one starts at 102 144
    let last = Block::new(399, false, 4).unwrap();
    assert_eq!(last.offset() + last.block_size() as u64, 102_400);
}

#[test]
fn f1_tcp_length_nibbles() {
    // (length after token, nibble, extension bytes)
    let cases: [(usize, u8, &[u8]); 7] = [
        (0, 0, &[]),
        (12, 12, &[]),
        (13, 13, &[0]),
        (268, 13, &[255]),
        (269, 14, &[0, 0]),
        (65_804, 14, &[0xFF, 0xFF]),
        (65_805, 15, &[0, 0, 0, 0]),
    ];
    for (len, nib, ext) in cases {
        // body = marker + (len − 1) payload bytes (or nothing for 0)
        let m = TcpMessage::new(Code::CONTENT).with_payload(vec![0x55; len.saturating_sub(1)]);
        assert_eq!(m.body_len(), len);
        let f = m.to_bytes();
        assert_eq!(f[0] >> 4, nib, "len {len}");
        assert_eq!(f[0] & 0xF, 0);
        assert_eq!(&f[1..1 + ext.len()], ext, "len {len}");
        assert_eq!(f[1 + ext.len()], 0x45);
        assert_eq!(f.len(), m.encoded_len());
        let (d, used) = tcp::decode_frame(&f).unwrap().unwrap();
        assert_eq!(used, f.len());
        assert_eq!(d, m);
    }
}

#[test]
fn f2_experiment_response() {
    let payload = vec![0x42u8; 102_400];
    let m = TcpMessage::new(Code::CONTENT).with_token(tok()).with_payload(payload.clone());
    assert_eq!(m.body_len(), 102_401);
    let mut f = Vec::new();
    tcp::encode_frame(&m, &mut f);
    assert_eq!(&f[..8], &[0xF1, 0x00, 0x00, 0x8E, 0xF4, 0x45, 0xA5, 0xFF]);
    assert_eq!(&f[8..], &payload[..]);
    assert_eq!(f.len(), 102_408);
    assert_eq!(m.encoded_len(), 102_408);
    assert_eq!(tcp::frame_len(&f[..5]), Ok(Some(102_408)));
    assert_eq!(tcp::decode_frame(&f[..f.len() - 1]), Ok(None));
    let (d, used) = tcp::decode_frame(&f).unwrap().unwrap();
    assert_eq!((d, used), (m, 102_408));
}

#[test]
fn f3_empty_signals() {
    for (m, bytes) in [
        (TcpMessage::csm(None, false), [0x00, 0xE1]),
        (TcpMessage::ping(Token::EMPTY), [0x00, 0xE2]),
        (TcpMessage::pong(&TcpMessage::ping(Token::EMPTY)), [0x00, 0xE3]),
    ] {
        assert_eq!(m.to_bytes(), bytes);
        assert_eq!(tcp::decode_frame(&bytes), Ok(Some((m, 2))));
    }
    assert_eq!(TcpMessage::release().to_bytes(), [0x00, 0xE4]);
    assert_eq!(TcpMessage::abort("").to_bytes(), [0x00, 0xE5]);
    assert!(Code::CSM.is_signalling());
    assert_eq!(Code::ABORT.to_string(), "7.05");
}

#[test]
fn f4_tcp_get_hello() {
    let mut m = TcpMessage::new(Code::GET).with_token(tok());
    m.add_uri_path("hello");
    let expected = [0x61, 0x01, 0xA5, 0xB5, 0x68, 0x65, 0x6C, 0x6C, 0x6F];
    assert_eq!(m.to_bytes(), expected);
    assert_eq!(m.encoded_len(), 9);
    assert_eq!(tcp::decode_frame(&expected), Ok(Some((m.clone(), 9))));
    // fed one byte at a time
    let mut dec = FrameDecoder::new();
    for (i, b) in expected.iter().enumerate() {
        dec.push(&[*b]);
        let got = dec.next_message().unwrap();
        if i + 1 < expected.len() {
            assert_eq!(got, None);
        } else {
            assert_eq!(got, Some(m.clone()));
        }
    }
    assert_eq!(dec.buffered(), 0);
}

#[test]
fn csm_with_options() {
    let m = TcpMessage::csm(Some(1152), true);
    let bytes = m.to_bytes();
    // Len 4: option 2 len 2 (0x04 0x80), option 4 delta 2 len 0
    assert_eq!(bytes, [0x40, 0xE1, 0x22, 0x04, 0x80, 0x20]);
    let (d, _) = tcp::decode_frame(&bytes).unwrap().unwrap();
    assert_eq!(d.csm_max_message_size(), Some(1152));
}

#[test]
fn code_display_and_predicates() {
    assert_eq!(Code::CONTENT.to_string(), "2.05");
    assert_eq!(Code::CONTENT.raw(), 0x45);
    assert_eq!(Code::GET.to_string(), "0.01");
    assert_eq!(Code::new(4, 4), Code::NOT_FOUND);
    assert_eq!(format!("{:?}", Code::CONTENT), "Code(2.05 Content)");
    assert!(Code::EMPTY.is_empty() && !Code::EMPTY.is_request() && !Code::EMPTY.is_response());
    assert!(Code::DELETE.is_request());
    assert!(Code::CONTENT.is_response() && Code::SERVICE_UNAVAILABLE.is_response());
    for c in [1u8, 6, 7] {
        assert!(Code::new(c, 0).is_reserved_class());
    }
    assert!(!Code::new(3, 0).is_reserved_class());
}

#[test]
fn peek_header_and_reset() {
    let w1 = [0x41, 0x01, 0x00, 0x01, 0xA5, 0xB5, 0x68, 0x65, 0x6C, 0x6C, 0x6F];
    let h = peek_header(&w1).unwrap();
    assert_eq!((h.mtype, h.tkl, h.code, h.message_id), (MessageType::Con, 1, Code::GET, 1));
    // malformed CON (TKL 9) still has a readable header → RST with same MID
    let bad = [0x49, 0x01, 0x12, 0x34];
    assert!(Message::decode(&bad).is_err());
    let h = peek_header(&bad).unwrap();
    assert_eq!(h.mtype, MessageType::Con);
    let rst = h.reset();
    assert_eq!(rst.to_bytes(), [0x70, 0x00, 0x12, 0x34]);
    assert_eq!(Message::decode(&rst.to_bytes()).unwrap(), rst);
    assert_eq!(Message::empty_ack(7).to_bytes(), [0x60, 0x00, 0x00, 0x07]);
}

#[test]
fn uri_path_and_query_helpers() {
    let mut m = Message::new(MessageType::Con, Code::GET, 1);
    m.add_uri_path("/a/b");
    m.add_uri_query("x=1");
    m.add_uri_query("y");
    m.add_uri_path("c");
    assert_eq!(m.uri_path(), "a/b/c");
    assert_eq!(m.uri_queries(), ["x=1", "y"]);
    let d = Message::decode(&m.to_bytes()).unwrap();
    assert_eq!(d, m);
    let mut e = Message::new(MessageType::Con, Code::GET, 1);
    e.add_uri_path("/");
    e.add_uri_path("");
    assert!(e.options.is_empty());
    e.add_uri_path("a//");
    assert_eq!(e.option_values(URI_PATH).count(), 3);
    assert_eq!(e.uri_path(), "a//");
}

#[test]
fn repeated_and_large_options_roundtrip() {
    let mut m = Message::new(MessageType::Non, Code::POST, 0xBEEF).with_token(Token::from_u64(0x0102030405060708));
    m.add_option(4, vec![1, 2]);
    m.add_option(4, vec![3]);
    m.add_option(1, vec![]);
    m.add_option(300, vec![7; 13]);
    m.add_option(65535, vec![9; 300]);
    m.add_option(60, vec![0; 269]);
    m.set_content_format(50);
    m.set_size2(102_400);
    m.payload = b"body".to_vec();
    let b = m.to_bytes();
    assert_eq!(b.len(), m.encoded_len());
    let d = Message::decode(&b).unwrap();
    assert_eq!(d, m);
    assert_eq!(d.option_values(4).collect::<Vec<_>>(), [&[1u8, 2][..], &[3][..]]);
    assert_eq!(d.content_format(), Some(50));
    assert_eq!(d.size2(), Some(102_400));
    assert_eq!(d.token.len(), 8);
    assert_eq!(m.remove_option(4), 2);
    assert_eq!(d.options.first_unknown_critical(|n| n == 1), Some(65535));
}

#[test]
fn udp_tcp_conversion() {
    let mut m = Message::new(MessageType::Con, Code::GET, 9).with_token(tok());
    m.add_uri_path("hello");
    let t = TcpMessage::from(m.clone());
    assert_eq!(t.to_bytes(), [0x61, 0x01, 0xA5, 0xB5, 0x68, 0x65, 0x6C, 0x6C, 0x6F]);
    assert_eq!(t.into_message(MessageType::Con, 9), m);
}
