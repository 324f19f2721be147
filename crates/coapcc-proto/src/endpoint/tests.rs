//! Unit tests of the endpoint's entropy split and `reset_cc`.

use super::*;
use coapcc_cc::AlgorithmConfig;

fn get(e: &mut Endpoint<u32>, now: Instant) -> (Message, Instant) {
    e.request(now, 2, Request::get("/hello"));
    let t = e.poll_transmit(now).expect("the request goes out at once");
    (Message::decode(&t.bytes).unwrap(), e.poll_timeout().unwrap())
}

#[test]
fn cc_entropy_is_separate_from_ids_and_tokens() {
    let cc = AlgorithmConfig::parse("cocoa").unwrap();
    let cfg = EndpointConfig::with_cc(cc);
    let now = Instant::from_millis(5);
    let mut a = Endpoint::<u32>::with_seed(cfg.clone(), 7).with_cc_entropy(Box::new(SplitMix64::new(100)));
    let mut b = Endpoint::<u32>::with_seed(cfg.clone(), 7).with_cc_entropy(Box::new(SplitMix64::new(200)));
    let (ma, ta) = get(&mut a, now);
    let (mb, tb) = get(&mut b, now);
    // Same protocol stream: same Message ID and token; different dither: different timer.
    assert_eq!((ma.message_id, ma.token), (mb.message_id, mb.token));
    assert_ne!(ta, tb);
    // The timer is exactly what the algorithm draws from the dither stream alone.
    let mut alg = cc.build();
    let ex = alg.start_exchange(now, 0, &mut SplitMix64::new(100));
    assert_eq!(ta, now + ex.timer());
    // Without a separate source, the dither comes from the endpoint's own stream.
    let mut c = Endpoint::<u32>::with_seed(cfg, 7);
    let (mc, _) = get(&mut c, now);
    assert_eq!(mc.message_id, ma.message_id);
}

#[test]
fn reset_cc_of_a_new_peer_creates_its_state() {
    let cfg = EndpointConfig::with_cc(AlgorithmConfig::parse("cocoa").unwrap());
    let mut e = Endpoint::<u32>::with_seed(cfg, 1);
    assert!(e.cc(&9).is_none());
    e.reset_cc(Instant::from_millis(1), &9);
    assert!(e.cc(&9).is_some());
    e.reset_cc(Instant::from_millis(2), &9);
    assert!(e.is_idle());
}

/// A flood of requests from one peer that the application never answers: beyond
/// `max_pending_per_peer` they are refused with 5.03 + Max-Age without reaching the
/// application, state stays bounded, duplicates of a refusal get the same refusal, another
/// peer is served normally, and the peer is admitted again once its requests are answered.
#[test]
fn per_peer_pending_requests_are_bounded() {
    use crate::{Code, MessageType, Token};
    let cfg = EndpointConfig { max_pending_per_peer: 4, overload_max_age_s: 7, ..EndpointConfig::default() };
    let mut server = Endpoint::<u32>::with_seed(cfg, 1);
    let now = Instant::from_millis(1);
    let req = |mid: u16| {
        let mut m = Message::new(MessageType::Con, Code::GET, mid).with_token(Token::new(&[mid as u8]).unwrap());
        m.add_uri_path("slow");
        m.to_bytes()
    };
    let mut ids = Vec::new();
    let mut refused = 0;
    for mid in 0..1000u16 {
        server.handle_datagram(now, 7, &req(mid));
        while let Some(ev) = server.poll_event() {
            if let Event::Request { id, .. } = ev {
                ids.push(id);
            }
        }
        while let Some(t) = server.poll_transmit(now) {
            let m = Message::decode(&t.bytes).unwrap();
            assert_eq!((m.mtype, m.code, m.message_id), (MessageType::Ack, Code::SERVICE_UNAVAILABLE, mid));
            assert_eq!(m.options.get(crate::option::MAX_AGE), Some(&[7u8][..]));
            refused += 1;
        }
    }
    assert_eq!(ids.len(), 4);
    assert_eq!(refused, 996);
    assert_eq!(server.pending_server_requests(), 4);
    assert_eq!(server.stats().requests_refused, 996);
    assert!(server.stats().timers_armed <= 4, "{:?}", server.stats());
    // A duplicate of a refused request gets the same refusal.
    server.handle_datagram(now, 7, &req(999));
    let m = Message::decode(&server.poll_transmit(now).unwrap().bytes).unwrap();
    assert_eq!((m.code, m.message_id), (Code::SERVICE_UNAVAILABLE, 999));
    // Another peer is served.
    server.handle_datagram(now, 8, &req(5000));
    assert!(matches!(server.poll_event(), Some(Event::Request { peer: 8, .. })));
    // Answering frees the slots: the flooding peer is admitted again.
    for id in ids {
        server.respond(now, id, Response::content("x")).unwrap();
    }
    while server.poll_transmit(now).is_some() {}
    server.handle_datagram(now, 7, &req(2000));
    assert!(matches!(server.poll_event(), Some(Event::Request { peer: 7, .. })));
}

/// Timers are indexed: many requests queued behind NSTART arm no timer, and the next
/// wake-up is the exchange in flight's.
#[test]
fn queued_exchanges_arm_no_timer() {
    let mut client = Endpoint::<u32>::with_seed(EndpointConfig::default(), 3);
    let now = Instant::from_millis(2);
    for _ in 0..10_000 {
        client.request(now, 2, Request::get("/x"));
    }
    assert_eq!(client.pending_requests(), 10_000);
    assert_eq!(client.stats().timers_armed, 1);
    let t = client.poll_timeout().unwrap();
    assert!(t > now);
    client.handle_timeout(t);
    assert!(client.poll_timeout().unwrap() > t);
    assert_eq!(client.stats().timers_armed, 1);
}

/// `has_output` tells whether a datagram or an event waits: a request queues its copy, a
/// response its event, and a late copy of an answered response (matching nothing) neither,
/// nor does it move the next wake-up.
#[test]
fn has_output_follows_the_queues() {
    let mut client = Endpoint::<u32>::with_seed(EndpointConfig::default(), 4);
    let mut server = Endpoint::<u32>::with_seed(EndpointConfig::default(), 5);
    let now = Instant::from_millis(3);
    assert!(!client.has_output());
    client.request(now, 2, Request::get("/x"));
    client.request(now, 2, Request::get("/y"));
    assert!(client.has_output());
    let t = client.poll_transmit(now).unwrap();
    assert!(!client.has_output(), "the second request waits for NSTART");
    server.handle_datagram(now, 1, &t.bytes);
    let Some(Event::Request { id, .. }) = server.poll_event() else { panic!("a request") };
    server.respond(now, id, Response::content("hi")).unwrap();
    let answer = server.poll_transmit(now).unwrap().bytes;
    client.handle_datagram(now, 2, &answer);
    assert!(client.has_output(), "the response's event and the next request's copy");
    assert!(matches!(client.poll_event(), Some(Event::Response { .. })));
    assert!(client.poll_transmit(now).is_some());
    assert!(!client.has_output());
    let wake = client.poll_timeout();
    let unmatched = client.stats().unmatched;
    client.handle_datagram(now, 2, &answer);
    assert!(!client.has_output());
    assert_eq!(client.poll_timeout(), wake);
    assert_eq!(client.stats().unmatched, unmatched + 1);
}

/// A generator kept in the endpoint (`with_split_mix`, `with_cc_split_mix`) gives the same
/// Message IDs, tokens and timers as the same generator boxed.
#[test]
fn split_mix_in_place_is_the_boxed_stream() {
    let cfg = EndpointConfig::with_cc(AlgorithmConfig::parse("cocoa").unwrap());
    let now = Instant::from_millis(5);
    let mut boxed =
        Endpoint::<u32>::new(cfg.clone(), Box::new(SplitMix64::new(7))).with_cc_entropy(Box::new(SplitMix64::new(100)));
    let mut inline = Endpoint::<u32>::with_split_mix(cfg, SplitMix64::new(7)).with_cc_split_mix(SplitMix64::new(100));
    let (a, mut ta) = get(&mut boxed, now);
    let (b, mut tb) = get(&mut inline, now);
    assert_eq!((a.message_id, a.token, ta), (b.message_id, b.token, tb));
    // Every retransmission (the dither drawn at the start decides their timers) and the
    // give-up, alike.
    for _ in 0..8 {
        boxed.handle_timeout(ta);
        inline.handle_timeout(tb);
        assert_eq!(boxed.poll_transmit(ta).map(|x| x.bytes), inline.poll_transmit(tb).map(|x| x.bytes));
        let (Some(na), Some(nb)) = (boxed.poll_timeout(), inline.poll_timeout()) else { break };
        (ta, tb) = (na, nb);
        assert_eq!(ta, tb);
    }
    assert_eq!(boxed.poll_timeout(), inline.poll_timeout());
    // The next request: the same Message ID, token and timer.
    let (a, ta) = get(&mut boxed, ta);
    let (b, tb) = get(&mut inline, tb);
    assert_eq!((a.message_id, a.token, ta), (b.message_id, b.token, tb));
}
