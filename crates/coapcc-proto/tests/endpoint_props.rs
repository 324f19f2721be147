//! Property tests: arbitrary datagrams never panic an endpoint, and its state stays bounded.

use std::time::Duration;

use coapcc_cc::Instant;
use coapcc_proto::endpoint::{Endpoint, EndpointConfig, Event, Request, Response};
use coapcc_proto::{Code, Message, MessageType, Token};
use proptest::prelude::*;

/// A datagram: random bytes, or a valid message (any type/code/MID/token) possibly mutated.
fn datagram() -> impl Strategy<Value = Vec<u8>> {
    let valid = (
        0u8..4,
        any::<u8>(),
        0u16..64,
        proptest::collection::vec(any::<u8>(), 0..9),
        proptest::collection::vec(any::<u8>(), 0..40),
        any::<bool>(),
    )
        .prop_map(|(t, code, mid, tok, payload, path)| {
            let mut m = Message::new(MessageType::from_bits(t), Code(code), mid).with_token(Token::new(&tok).unwrap());
            if path {
                m.add_uri_path("hello");
            }
            m.payload = payload;
            m.to_bytes()
        });
    let mutated = (valid.clone(), any::<prop::sample::Index>(), any::<u8>()).prop_map(|(mut b, i, v)| {
        let i = i.index(b.len());
        b[i] = v;
        b
    });
    prop_oneof![
        3 => valid,
        2 => mutated,
        1 => proptest::collection::vec(any::<u8>(), 0..64),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn random_datagrams_never_panic_and_state_stays_bounded(
        input in proptest::collection::vec((0u8..6, datagram(), 0u64..3_000, any::<bool>()), 1..300),
    ) {
        let cfg = EndpointConfig { dedup_capacity: 32, max_peers: 4, ..EndpointConfig::default() };
        let mut ep = Endpoint::<u8>::with_seed(cfg, 9);
        let mut now = Instant::ZERO;
        // Some client state too, so that ACK/RST/response paths can match.
        for peer in 0..3u8 {
            ep.request(now, peer, Request::get("/x"));
        }
        let mut sent = 0usize;
        for (peer, bytes, advance_ms, answer) in input {
            now = now + Duration::from_millis(advance_ms);
            if ep.poll_timeout().is_some_and(|t| t <= now) {
                ep.handle_timeout(now);
            }
            ep.handle_datagram(now, peer, &bytes);
            while let Some(e) = ep.poll_event() {
                if let Event::Request { id, .. } = e {
                    if answer {
                        ep.respond(now, id, Response::content(vec![7u8; 3000])).unwrap();
                    } else {
                        ep.defer(id).unwrap();
                        ep.respond(now, id, Response::new(Code::NOT_FOUND)).unwrap();
                    }
                }
            }
            while let Some(t) = ep.poll_transmit(now) {
                prop_assert!(t.bytes.len() <= 1152 + 64);
                prop_assert!(Message::decode(&t.bytes).is_ok(), "we only send valid messages");
                sent += 1;
            }
            prop_assert!(ep.dedup_len() <= 32);
            prop_assert_eq!(ep.pending_server_requests(), 0);
            if let Some(t) = ep.poll_timeout() {
                prop_assert!(t >= now);
            }
        }
        let st = ep.stats();
        prop_assert!(sent as u64 == st.datagrams_out);
        // Run every timer out: everything finishes.
        for _ in 0..10_000 {
            match ep.poll_timeout() {
                Some(t) => { now = now.max(t); ep.handle_timeout(now); }
                None => break,
            }
            while ep.poll_transmit(now).is_some() {}
            while ep.poll_event().is_some() {}
        }
        prop_assert!(ep.poll_timeout().is_none());
        prop_assert_eq!(ep.pending_requests(), 0);
    }
}
