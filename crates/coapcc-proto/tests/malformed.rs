//! One test per malformation kind.

use coapcc_proto::tcp::{self, FrameDecoder, TcpMessage};
use coapcc_proto::{Block, BlockError, Code, DecodeError as E, Message, Token};

fn dec(b: &[u8]) -> Result<Message, E> {
    Message::decode(b)
}

#[test]
fn too_short() {
    for n in 0..4 {
        assert_eq!(dec(&[0x40, 0x01, 0x00][..n.min(3)]), Err(E::TooShort { len: n.min(3) }));
    }
    assert_eq!(coapcc_proto::peek_header(&[0x40]), Err(E::TooShort { len: 1 }));
}

#[test]
fn wrong_version() {
    for (b0, v) in [(0x01u8, 0u8), (0x81, 2), (0xC1, 3)] {
        assert_eq!(dec(&[b0, 0x01, 0, 1, 0xA5]), Err(E::BadVersion { version: v }));
    }
}

#[test]
fn reserved_token_length() {
    for tkl in 9..=15u8 {
        let mut b = vec![0x40 | tkl, 0x01, 0, 1];
        b.extend_from_slice(&[0; 15]);
        assert_eq!(dec(&b), Err(E::InvalidTokenLength { tkl }));
    }
}

#[test]
fn token_truncated() {
    assert_eq!(dec(&[0x48, 0x01, 0, 1, 1, 2, 3]), Err(E::TokenTruncated { tkl: 8, available: 3 }));
}

#[test]
fn reserved_option_delta() {
    // 0xF0: delta 15, length 0 — not the payload marker
    assert_eq!(dec(&[0x40, 0x01, 0, 1, 0xF0]), Err(E::ReservedOptionDelta));
    assert_eq!(dec(&[0x40, 0x01, 0, 1, 0xF1, 0]), Err(E::ReservedOptionDelta));
}

#[test]
fn reserved_option_length() {
    assert_eq!(dec(&[0x40, 0x01, 0, 1, 0xBF, 0]), Err(E::ReservedOptionLength));
}

#[test]
fn extended_delta_truncated() {
    assert_eq!(dec(&[0x40, 0x01, 0, 1, 0xD0]), Err(E::ExtendedDeltaTruncated));
    assert_eq!(dec(&[0x40, 0x01, 0, 1, 0xE0, 0x00]), Err(E::ExtendedDeltaTruncated));
}

#[test]
fn extended_length_truncated() {
    assert_eq!(dec(&[0x40, 0x01, 0, 1, 0x1D]), Err(E::ExtendedLengthTruncated));
    assert_eq!(dec(&[0x40, 0x01, 0, 1, 0xDE, 0x00, 0x01]), Err(E::ExtendedLengthTruncated));
}

#[test]
fn option_value_truncated() {
    assert_eq!(
        dec(&[0x40, 0x01, 0, 1, 0xB5, b'h', b'i']),
        Err(E::OptionValueTruncated { number: 11, len: 5, available: 2 })
    );
}

#[test]
fn option_number_overflow() {
    // 65535 + 1: delta 14 with ext 0xFFFF → 65804 alone overflows
    assert_eq!(dec(&[0x40, 0x01, 0, 1, 0xE0, 0xFF, 0xFF]), Err(E::OptionNumberOverflow { number: 65_804 }));
    // exactly 65535 is fine, then +1 overflows
    let ok = [0x40, 0x01, 0, 1, 0xE0, 0xFE, 0xF2];
    assert_eq!(dec(&ok).unwrap().options.iter().next().unwrap().number, 65_535);
    assert_eq!(dec(&[0x40, 0x01, 0, 1, 0xE0, 0xFE, 0xF2, 0x10]), Err(E::OptionNumberOverflow { number: 65_536 }));
}

#[test]
fn payload_marker_without_payload() {
    assert_eq!(dec(&[0x40, 0x01, 0, 1, 0xFF]), Err(E::EmptyPayload));
    assert_eq!(dec(&[0x41, 0x45, 0, 1, 0xA5, 0xB1, b'x', 0xFF]), Err(E::EmptyPayload));
}

#[test]
fn empty_message_rules() {
    assert!(dec(&[0x40, 0x00, 0, 1]).is_ok());
    assert_eq!(dec(&[0x41, 0x00, 0, 1, 0xA5]), Err(E::EmptyMessageWithToken { tkl: 1 }));
    // TKL is checked before anything else of an Empty message, even if truncated
    assert_eq!(dec(&[0x48, 0x00, 0, 1]), Err(E::EmptyMessageWithToken { tkl: 8 }));
    assert_eq!(dec(&[0x60, 0x00, 0, 1, 0xFF, 1]), Err(E::EmptyMessageNotEmpty { extra: 2 }));
    assert_eq!(dec(&[0x70, 0x00, 0, 1, 0x00]), Err(E::EmptyMessageNotEmpty { extra: 1 }));
    // validate() predicts it on the encode side
    let mut m = Message::reset(1);
    m.payload = vec![1];
    assert_eq!(m.validate(), Err(E::EmptyMessageNotEmpty { extra: 2 }));
    m.payload.clear();
    m.token = Token::new(&[1]).unwrap();
    assert_eq!(m.validate(), Err(E::EmptyMessageWithToken { tkl: 1 }));
}

#[test]
fn reserved_code_classes() {
    for class in [1u8, 6, 7] {
        let code = Code::new(class, 1);
        let b = [0x40, code.raw(), 0, 1];
        assert_eq!(dec(&b), Err(E::ReservedCodeClass { code }));
        let m = Message::decode_any_class(&b).unwrap();
        assert_eq!(m.code, code);
        assert_eq!(m.validate(), Err(E::ReservedCodeClass { code }));
    }
    // a format error takes precedence over the reserved class
    assert_eq!(dec(&[0x40, 0xE1, 0, 1, 0xFF]), Err(E::EmptyPayload));
    // classes 3 (response range, unassigned) and unknown methods decode fine
    assert!(dec(&[0x40, 0x61, 0, 1]).is_ok());
    assert!(dec(&[0x40, 0x1F, 0, 1]).is_ok());
}

#[test]
fn errors_display() {
    let e = E::OptionValueTruncated { number: 11, len: 5, available: 2 };
    assert_eq!(e.to_string(), "option 11 value truncated: 2 of 5 bytes");
    let _: &dyn std::error::Error = &e;
}

#[test]
fn block_errors() {
    assert_eq!(Block::decode_value(&[0x0F]), Err(BlockError::ReservedSzx));
    assert_eq!(Block::decode_value(&[1, 2, 3, 4]), Err(BlockError::ValueTooLong { len: 4 }));
    assert_eq!(Block::new(1 << 20, false, 4), Err(BlockError::NumTooLarge { num: 1 << 20 }));
    assert_eq!(Block::new(0, false, 7), Err(BlockError::ReservedSzx));
    assert_eq!(Block::new(0, false, 8), Err(BlockError::InvalidSzx { szx: 8 }));
    assert_eq!(Block::new(Block::MAX_NUM, true, 6).unwrap().encode_value().unwrap(), [0xFF, 0xFF, 0xFE]);
    // non-minimal encodings are accepted
    assert_eq!(Block::decode_value(&[0, 0, 0x14]).unwrap(), Block { num: 1, more: false, szx: 4 });
    let mut m = Message::new(coapcc_proto::MessageType::Con, Code::GET, 1);
    assert_eq!(m.set_block2(Block { num: 0, more: false, szx: 7 }), Err(BlockError::ReservedSzx));
    assert!(m.options.is_empty());
    m.add_option(coapcc_proto::option::BLOCK1, vec![0x07]);
    assert_eq!(m.block1(), Err(BlockError::ReservedSzx));
    assert_eq!(Block::szx_for_size(256), Some(4));
    assert_eq!(Block::szx_for_size(2048), None);
    assert_eq!(Token::new(&[0; 9]).unwrap_err().len, 9);
}

#[test]
fn tcp_malformations() {
    use tcp::decode_frame as df;
    // TKL 9..15
    assert_eq!(df(&[0x09]), Err(E::InvalidTokenLength { tkl: 9 }));
    // partial headers need more bytes
    assert_eq!(df(&[]), Ok(None));
    assert_eq!(df(&[0xD0]), Ok(None));
    assert_eq!(df(&[0xF0, 0, 0, 0]), Ok(None));
    assert_eq!(df(&[0x01, 0x45]), Ok(None));
    // options inside the Len window
    assert_eq!(df(&[0x10, 0x45, 0xF0]), Err(E::ReservedOptionDelta));
    assert_eq!(df(&[0x10, 0x45, 0x0F]), Err(E::ReservedOptionLength));
    assert_eq!(df(&[0x10, 0x45, 0xD0]), Err(E::ExtendedDeltaTruncated));
    assert_eq!(df(&[0x10, 0x45, 0x0D]), Err(E::ExtendedLengthTruncated));
    // value runs past Len even though more stream bytes follow
    assert_eq!(df(&[0x20, 0x45, 0x02, 0xAA, 0xBB]), Err(E::OptionValueTruncated { number: 0, len: 2, available: 1 }));
    assert_eq!(df(&[0x10, 0x45, 0xFF]), Err(E::EmptyPayload));
    // option number 0 is reserved (RFC 7252 §12.2), also inside a frame
    assert_eq!(df(&[0x10, 0x45, 0x00]), Err(E::ReservedOptionNumber));
    assert_eq!(df(&[0x30, 0x45, 0xE0, 0xFF, 0xFF]), Err(E::OptionNumberOverflow { number: 65_804 }));
    // signalling and reserved classes are not rejected by the framing layer
    assert!(df(&[0x00, 0x25]).unwrap().is_some());
    // size limit in the stream decoder
    let big = TcpMessage::new(Code::CONTENT).with_payload(vec![0; 2000]).to_bytes();
    let mut d = FrameDecoder::with_max_frame_len(1152);
    d.push(&big[..3]);
    assert_eq!(d.next_message(), Err(E::FrameTooLarge { len: big.len() as u64 }));
}

/// Option number 0 is reserved; a message may carry at most `MAX_OPTIONS` options (a
/// 1 500-byte datagram could otherwise hold 1 400 empty options).
#[test]
fn reserved_option_number_and_option_count() {
    use coapcc_proto::option::MAX_OPTIONS;
    // CON GET, MID 1, no token, option delta 0 (number 0), empty value.
    assert_eq!(Message::decode(&[0x40, 0x01, 0x00, 0x01, 0x00]), Err(E::ReservedOptionNumber));
    // Option 1 (If-Match) then MAX_OPTIONS more repeats with delta 0: one too many.
    let mut d = vec![0x40, 0x01, 0x00, 0x01, 0x10];
    d.extend(std::iter::repeat_n(0x00, MAX_OPTIONS - 1));
    assert!(Message::decode(&d).is_ok(), "exactly MAX_OPTIONS options are accepted");
    d.push(0x00);
    assert_eq!(Message::decode(&d), Err(E::TooManyOptions { limit: MAX_OPTIONS }));
}
