//! The simulator's size functions agree with the real CoAP encoder (coapcc-proto).

use coapcc_proto::{Code, Message, MessageType, Token};
use coapcc_sim::message_sizes::{request_len, response_len};

#[test]
fn sizes_match_the_encoder() {
    let token_bytes = [0xA5u8, 1, 2, 3, 4, 5, 6, 7];
    for tkl in 0..=8usize {
        let token = Token::new(&token_bytes[..tkl]).unwrap();
        for path in ["", "hello", "a/b", "sensors/temperature/room-1", &"x".repeat(13), &"y".repeat(300)] {
            let mut m = Message::new(MessageType::Con, Code::GET, 0x1234).with_token(token);
            m.add_uri_path(path);
            assert_eq!(m.to_bytes().len(), request_len(tkl, path), "tkl {tkl} path {path:?}");
        }
        for payload in [0usize, 1, 60, 256, 1000] {
            let m = Message::new(MessageType::Ack, Code::CONTENT, 0x1234)
                .with_token(token)
                .with_payload(vec![7u8; payload]);
            assert_eq!(m.to_bytes().len(), response_len(tkl, payload), "tkl {tkl} payload {payload}");
        }
    }
}
