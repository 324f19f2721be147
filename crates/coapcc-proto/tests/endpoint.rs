//! Pair-driven tests of the sans-IO endpoint with a virtual clock.

mod support;

use std::time::Duration;

use coapcc_cc::{AlgorithmConfig, Instant};
use coapcc_proto::endpoint::{
    lifecycle::Echoed, DuplicateMode, Endpoint, EndpointConfig, Event, FailReason, LifetimeMode, Outcome, RecordKind,
    Request, Response, TransmitKind,
};
use coapcc_proto::{Block, Code, Message, MessageType, Token};
use support::*;

fn cfg(cc: &str) -> EndpointConfig {
    EndpointConfig::with_cc(AlgorithmConfig::parse(cc).unwrap())
}

fn kinds(p: &Pair, dir: Dir) -> Vec<(MessageType, Code)> {
    p.sent(dir)
        .iter()
        .map(|w| {
            let m = w.msg.as_ref().unwrap();
            (m.mtype, m.code)
        })
        .collect()
}

#[test]
fn piggybacked_get() {
    let mut p = Pair::default_pair();
    let id = p.client.request(p.now, SERVER, Request::get("/hello"));
    p.drive();
    assert_eq!(kinds(&p, Dir::ToServer), [(MessageType::Con, Code::GET)]);
    assert_eq!(kinds(&p, Dir::ToClient), [(MessageType::Ack, Code::CONTENT)]);
    let req = p.sent(Dir::ToServer)[0].msg.clone().unwrap();
    let ack = p.sent(Dir::ToClient)[0].msg.clone().unwrap();
    assert_eq!(req.uri_path(), "hello");
    assert_eq!(req.token.len(), 4);
    assert_eq!((ack.message_id, ack.token), (req.message_id, req.token));
    match &p.client_events[..] {
        [Event::Response { id: rid, peer, response, copy: None }] => {
            assert_eq!((*rid, *peer), (id, SERVER));
            assert_eq!(response.payload.len(), 60);
            assert_eq!(response.code, Code::CONTENT);
        }
        e => panic!("{e:?}"),
    }
    let r = &p.records[0];
    assert_eq!(r.outcome, Outcome::Piggybacked);
    assert_eq!(r.kind, RecordKind::Request(id));
    assert_eq!(r.transmissions.len(), 1);
    assert_eq!(r.rtt, Some(Duration::from_millis(20)));
    assert_eq!(r.algorithm, "default");
    assert!(r.transmissions[0].timeout.unwrap() >= Duration::from_secs(2));
    assert!(p.client.is_idle() && p.server.is_idle());
}

#[test]
fn separate_response_after_piggyback_timeout() {
    let mut p = Pair::default_pair();
    p.app = App::Delayed(secs(1.5), Box::new(|_m: &Message| Response::content("late")));
    p.client.request(p.now, SERVER, Request::get("/slow"));
    p.drive();
    assert_eq!(kinds(&p, Dir::ToServer), [(MessageType::Con, Code::GET), (MessageType::Ack, Code::EMPTY)]);
    assert_eq!(kinds(&p, Dir::ToClient), [(MessageType::Ack, Code::EMPTY), (MessageType::Con, Code::CONTENT)]);
    let to_client = p.sent(Dir::ToClient);
    assert_eq!(to_client[0].at, at(1.01), "Empty ACK at the piggyback timeout");
    assert_eq!(to_client[1].at, at(1.51));
    let sep = to_client[1].msg.as_ref().unwrap();
    let req = p.sent(Dir::ToServer)[0].msg.clone().unwrap();
    assert_eq!(sep.token, req.token);
    assert_ne!(sep.message_id, req.message_id);
    // The client ACKs the CON response with its Message ID.
    assert_eq!(p.sent(Dir::ToServer)[1].msg.as_ref().unwrap().message_id, sep.message_id);
    assert_eq!(p.responses().len(), 1);
    assert_eq!(p.responses()[0].payload, b"late");
    let client_rec = p.records.iter().find(|r| matches!(r.kind, RecordKind::Request(_))).unwrap();
    assert_eq!(client_rec.outcome, Outcome::Separate);
    assert_eq!(client_rec.acked_at, Some(at(1.02)));
    assert_eq!(client_rec.response_at, Some(at(1.52)));
    // The server's CON response was acknowledged; nothing pending.
    let mut server_recs = Vec::new();
    while let Some(r) = p.server.poll_record() {
        server_recs.push(r);
    }
    assert_eq!(server_recs.len(), 1);
    assert_eq!(server_recs[0].outcome, Outcome::Acknowledged);
    assert!(p.client.is_idle() && p.server.is_idle());
}

#[test]
fn separate_response_by_defer_with_lost_empty_ack() {
    // The Empty ACK is lost: the CON response then acknowledges the request too.
    let mut p = Pair::default_pair();
    p.app = App::Manual;
    p.drop = Box::new(|dir, _, m| dir == Dir::ToClient && m.is_some_and(|m| m.code.is_empty()));
    p.client.request(p.now, SERVER, Request::get("/x"));
    p.drive_until(at(0.5));
    let Some(Event::Request { id, .. }) = p.server_events.first().cloned() else { panic!() };
    p.server.defer(id).unwrap();
    p.server.respond(p.now, id, Response::content("v")).unwrap();
    p.drive();
    assert_eq!(p.responses().len(), 1);
    assert_eq!(p.records[0].outcome, Outcome::Separate);
    assert_eq!(p.records[0].transmissions.len(), 1, "no retransmission needed");
    assert!(p.client.is_idle() && p.server.is_idle());
}

#[test]
fn lost_ack_retransmission_answered_from_cache_once() {
    let mut p = Pair::new(cfg("default:dither=off"), EndpointConfig::default());
    p.drop = Box::new(|dir, n, _| dir == Dir::ToClient && n == 0);
    let mut calls = 0;
    p.app = App::Immediate(Box::new(move |_m: &Message| {
        calls += 1;
        assert_eq!(calls, 1, "the application sees the request once");
        Response::content("once")
    }));
    p.client.request(p.now, SERVER, Request::get("/hello"));
    p.drive();
    let to_server = p.sent(Dir::ToServer);
    assert_eq!(to_server.len(), 2);
    assert_eq!(to_server[1].at, at(2.0), "retransmission after T0 = 2 s");
    assert_eq!(to_server[0].bytes, to_server[1].bytes, "same MID and token");
    let to_client = p.sent(Dir::ToClient);
    assert_eq!(to_client.len(), 2);
    assert_eq!(to_client[0].bytes, to_client[1].bytes, "the cached ACK is replayed");
    assert_eq!(p.requests_seen_by_app(), 1);
    assert_eq!(p.server.stats().duplicates, 1);
    assert_eq!(p.responses().len(), 1);
    assert_eq!(p.client_events.len(), 1);
    let r = &p.records[0];
    assert_eq!(r.retransmissions(), 1);
    assert_eq!(r.rtt, Some(Duration::from_millis(2020)));
}

/// The same run with the server answering each request's event (`respond`) and answering
/// inside `handle_datagram_with`: the same datagrams at the same times, the same client
/// records and server statistics; only the request events differ.
#[test]
fn answering_in_the_call_equals_answering_the_event() {
    let run = |in_call: bool| {
        let mut p = Pair::new(cfg("default:dither=off"), EndpointConfig::default());
        // Lose the first two answers and one later request: retransmissions, replays from
        // the duplicate cache, and a request that reaches the server late.
        p.drop = Box::new(|dir, n, _| (dir == Dir::ToClient && n < 2) || (dir == Dir::ToServer && n == 4));
        let r = Response::content(vec![b'x'; 60]);
        p.app = if in_call { App::InCall(r) } else { App::Immediate(Box::new(move |_m: &Message| r.clone())) };
        for path in ["/a", "/b", "/c"] {
            p.client.request(p.now, SERVER, Request::get(path));
        }
        p.client.request(p.now, SERVER, Request::get("/d").confirmable(false));
        p.drive();
        let wire: Vec<_> = p.wire.iter().map(|w| (w.at, w.dir, w.bytes.clone(), w.dropped)).collect();
        let records: Vec<_> = p.records.iter().map(|r| format!("{r:?}")).collect();
        (wire, records, p.server.stats(), p.requests_seen_by_app(), p.server.is_idle())
    };
    let (events, in_call) = (run(false), run(true));
    assert_eq!(events.0, in_call.0, "the same datagrams");
    assert_eq!(events.1, in_call.1, "the same exchanges");
    assert_eq!(events.2, in_call.2, "the same server statistics");
    assert!(events.2.duplicates >= 2, "duplicates were answered: {:?}", events.2);
    assert_eq!(events.2.requests_received, 4);
    assert_eq!((events.3, in_call.3), (4, 0), "requests reported only when answered by event");
    assert!(events.4 && in_call.4);
}

/// `handle_datagram_with` asks only for new requests that passed the option checks: a
/// request with an unknown critical option is still rejected by the endpoint, and `None`
/// reports the request as `handle_datagram` does.
#[test]
fn answering_in_the_call_is_asked_only_for_acceptable_requests() {
    let mut client = Endpoint::<u8>::with_seed(EndpointConfig::default(), 1);
    let mut server = Endpoint::<u8>::with_seed(EndpointConfig::default(), 2);
    let now = Instant::ZERO;
    client.request(now, SERVER, Request::get("/bad").with_option(9, vec![1u8]));
    client.request(now, 3, Request::get("/ok"));
    let bad = client.poll_transmit(now).unwrap().bytes;
    let ok = client.poll_transmit(now).unwrap().bytes;
    let mut asked = Vec::new();
    server.handle_datagram_with(now, CLIENT, &bad, &mut |m| {
        asked.push(m.uri_path());
        None
    });
    let answer = Message::decode(&server.poll_transmit(now).unwrap().bytes).unwrap();
    assert_eq!(answer.code, Code::BAD_OPTION);
    server.handle_datagram_with(now, CLIENT, &ok, &mut |m| {
        asked.push(m.uri_path());
        None
    });
    assert_eq!(asked, ["ok"]);
    assert!(server.poll_transmit(now).is_none(), "not answered yet");
    let Some(Event::Request { id, message, .. }) = server.poll_event() else { panic!("the request is reported") };
    assert_eq!(message.uri_path(), "ok");
    server.respond(now, id, Response::content("ok")).unwrap();
    assert_eq!(Message::decode(&server.poll_transmit(now).unwrap().bytes).unwrap().code, Code::CONTENT);
}

#[test]
fn late_duplicate_ack_is_ignored() {
    // The ACK is slow (3 s one way): the client retransmits, then gets two ACKs.
    let mut p = Pair::new(cfg("default:dither=off"), EndpointConfig::default());
    p.latency = secs(1.5);
    p.client.request(p.now, SERVER, Request::get("/hello"));
    p.drive();
    assert_eq!(p.sent(Dir::ToServer).len(), 2);
    assert_eq!(p.sent(Dir::ToClient).len(), 2);
    assert_eq!(p.client_events.len(), 1);
    assert_eq!(p.client.stats().unmatched, 1);
    assert_eq!(p.records[0].rtt, Some(secs(3.0)));
}

#[test]
fn rst_fails_the_exchange() {
    let mut p = Pair::default_pair();
    p.drop = Box::new(|dir, _, _| dir == Dir::ToServer);
    let id = p.client.request(p.now, SERVER, Request::get("/hello"));
    p.drive_until(at(0.1));
    let mid = p.sent(Dir::ToServer)[0].msg.as_ref().unwrap().message_id;
    p.inject_to_client(&Message::reset(mid).to_bytes());
    p.drive();
    assert_eq!(p.client_events, [Event::Failed { id, peer: SERVER, reason: FailReason::Reset }]);
    assert_eq!(p.records[0].outcome, Outcome::Failed(FailReason::Reset));
    assert_eq!(p.sent(Dir::ToServer).len(), 1, "no retransmission after RST");
    assert_eq!(p.client.stats().rst_received, 1);
    // A stray RST is ignored.
    p.inject_to_client(&Message::reset(mid.wrapping_add(7)).to_bytes());
    assert_eq!(p.client.stats().unmatched, 1);
}

#[test]
fn nstart_queues_requests_per_peer() {
    let mut p = Pair::default_pair();
    p.latency = secs(0.1);
    for i in 0..3 {
        p.client.request(p.now, SERVER, Request::get(&format!("/r{i}")));
    }
    p.drive();
    let sends: Vec<_> = p.sent(Dir::ToServer).iter().map(|w| (w.at, w.msg.as_ref().unwrap().uri_path())).collect();
    assert_eq!(sends, [(at(0.0), "r0".into()), (at(0.2), "r1".into()), (at(0.4), "r2".into())]);
    assert_eq!(p.responses().len(), 3);
    // Message IDs are sequential.
    let mids: Vec<u16> = p.sent(Dir::ToServer).iter().map(|w| w.msg.as_ref().unwrap().message_id).collect();
    assert_eq!(mids[1], mids[0].wrapping_add(1));
    assert_eq!(mids[2], mids[0].wrapping_add(2));

    let c = EndpointConfig { nstart: 2, ..EndpointConfig::default() };
    let mut p = Pair::new(c, EndpointConfig::default());
    p.latency = secs(0.1);
    for i in 0..3 {
        p.client.request(p.now, SERVER, Request::get(&format!("/r{i}")));
    }
    p.drive();
    let times: Vec<_> = p.sent(Dir::ToServer).iter().map(|w| w.at).collect();
    assert_eq!(times, [at(0.0), at(0.0), at(0.2)]);
}

#[test]
fn give_up_after_max_retransmit_with_rfc_timer_sequence() {
    let mut p = Pair::new(cfg("default:dither=off"), EndpointConfig::default());
    p.drop = Box::new(|dir, _, _| dir == Dir::ToServer);
    let id = p.client.request(p.now, SERVER, Request::get("/hello"));
    p.drive();
    let times: Vec<_> = p.sent(Dir::ToServer).iter().map(|w| w.at).collect();
    assert_eq!(times, [at(0.0), at(2.0), at(6.0), at(14.0), at(30.0)], "MAX_RETRANSMIT = 4 retransmissions");
    assert_eq!(p.client_events, [Event::Failed { id, peer: SERVER, reason: FailReason::Timeout }]);
    let r = &p.records[0];
    let timers: Vec<_> = r.transmissions.iter().map(|t| t.timeout.unwrap()).collect();
    assert_eq!(timers, [secs(2.0), secs(4.0), secs(8.0), secs(16.0), secs(32.0)]);
    assert_eq!(r.finished_at, at(62.0), "a full timer after the last retransmission");
    assert_eq!(r.outcome, Outcome::Failed(FailReason::Timeout));
    assert_eq!(p.client.stats().retransmissions, 4);
}

#[test]
fn give_up_helsinki_preset_20_retransmissions() {
    let mut p = Pair::new(cfg("default:preset=helsinki2018,dither=off"), EndpointConfig::default());
    p.drop = Box::new(|dir, _, _| dir == Dir::ToServer);
    p.client.request(p.now, SERVER, Request::get("/hello"));
    p.drive();
    assert_eq!(p.sent(Dir::ToServer).len(), 21);
    assert!(matches!(p.client_events[..], [Event::Failed { reason: FailReason::Timeout, .. }]));
}

fn large_app() -> App {
    App::Immediate(Box::new(|m: &Message| {
        let n: usize = m.uri_queries().iter().find_map(|q| q.strip_prefix("size=")?.parse().ok()).unwrap_or(0);
        Response::content((0..n).map(|i| (i % 251) as u8).collect::<Vec<u8>>())
    }))
}

fn check_block_transfer(p: &mut Pair, request: Request) {
    p.app = large_app();
    let id = p.client.request(p.now, SERVER, request);
    p.drive();
    let body: Vec<u8> = (0..102_400).map(|i| (i % 251) as u8).collect();
    match &p.client_events[..] {
        [Event::Response { id: rid, response, .. }] => {
            assert_eq!(*rid, id);
            assert!(response.payload == body, "reassembled body differs");
            assert!(response.block2().unwrap().is_none());
        }
        e => panic!("{e:?}"),
    }
    let acks = p.sent(Dir::ToClient);
    assert_eq!(acks.len(), 400);
    for (i, w) in acks.iter().enumerate() {
        let m = w.msg.as_ref().unwrap();
        let b = m.block2().unwrap().unwrap();
        assert_eq!((b.num, b.more, b.szx, m.payload.len()), (i as u32, i < 399, 4, 256));
    }
    let reqs = p.sent(Dir::ToServer);
    assert_eq!(reqs.len(), 400);
    for (i, w) in reqs.iter().enumerate().skip(1) {
        let b = w.msg.as_ref().unwrap().block2().unwrap().unwrap();
        assert_eq!((b.num, b.more, b.szx), (i as u32, false, 4));
    }
    assert_eq!(p.records.len(), 400, "one exchange record per block");
    assert!(p.records.iter().all(|r| r.kind == RecordKind::Request(id)));
    assert!(p.client.is_idle() && p.server.is_idle());
}

#[test]
fn block2_client_follows_server_szx() {
    let s = EndpointConfig { block_szx: 4, ..EndpointConfig::default() };
    let mut p = Pair::new(EndpointConfig::default(), s);
    check_block_transfer(&mut p, Request::get("/large?size=102400"));
    // Thesis wire vector W2: block 0 of the 256-byte transfer, 1-byte Block2 value 0x0C.
    let first = p.sent(Dir::ToClient)[0].msg.clone().unwrap();
    assert_eq!(first.option(coapcc_proto::option::BLOCK2), Some(&[0x0C][..]));
}

#[test]
fn block2_server_honours_requested_smaller_szx() {
    let mut p = Pair::default_pair();
    check_block_transfer(&mut p, Request::get("/large?size=102400").with_block2_szx(4));
}

#[test]
fn block2_default_sizes_and_out_of_range() {
    let mut p = Pair::default_pair();
    p.app = large_app();
    p.client.request(p.now, SERVER, Request::get("/large?size=2500"));
    p.drive();
    assert_eq!(p.responses()[0].payload.len(), 2500);
    let sizes: Vec<usize> = p.sent(Dir::ToClient).iter().map(|w| w.msg.as_ref().unwrap().payload.len()).collect();
    assert_eq!(sizes, [1024, 1024, 452]);
    assert_eq!(p.sent(Dir::ToClient)[0].msg.as_ref().unwrap().size2(), Some(2500));

    // A block beyond the end: 4.02.
    let mut server = Endpoint::<u8>::with_seed(EndpointConfig::default(), 5);
    let mut m = Message::new(MessageType::Con, Code::GET, 1).with_token(Token::from_u64(1));
    m.add_uri_path("large");
    m.set_block2(Block::new(5, false, 2).unwrap()).unwrap();
    server.handle_datagram(Instant::ZERO, 1, &m.to_bytes());
    let Some(Event::Request { id, .. }) = server.poll_event() else { panic!() };
    server.respond(Instant::ZERO, id, Response::content(vec![0u8; 100])).unwrap();
    let ack = Message::decode(&server.poll_transmit(Instant::ZERO).unwrap().bytes).unwrap();
    assert_eq!(ack.code, Code::BAD_OPTION);
}

#[test]
fn fasor_token_copy_identification() {
    // The first copy is lost: the server answers copy 1 and echoes its token.
    let mut p = Pair::new(cfg("fasor-token:dither=off"), EndpointConfig::default());
    p.drop = Box::new(|dir, n, _| dir == Dir::ToServer && n == 0);
    p.client.request(p.now, SERVER, Request::get("/hello"));
    p.drive();
    let reqs = p.sent(Dir::ToServer);
    assert_eq!(reqs.len(), 2);
    let (t0, t1) = (reqs[0].msg.as_ref().unwrap().token, reqs[1].msg.as_ref().unwrap().token);
    assert_eq!(reqs[0].msg.as_ref().unwrap().message_id, reqs[1].msg.as_ref().unwrap().message_id);
    assert_eq!(t0.as_bytes()[..3], t1.as_bytes()[..3]);
    assert_eq!((t0.as_bytes()[3], t1.as_bytes()[3]), (0, 1), "the last token byte is the ordinal");
    let ack = p.sent(Dir::ToClient)[0].msg.clone().unwrap();
    assert_eq!(ack.token, t1, "the server echoes the copy it answers");
    let r = &p.records[0];
    let copy = r.copy.expect("copy identified");
    assert_eq!(copy.ordinal, 1);
    assert_eq!(copy.rtt, Duration::from_millis(20), "RTT of copy 1 itself");
    assert_eq!(r.rtt, Some(r.transmissions[1].at - r.transmissions[0].at + Duration::from_millis(20)));
    // The unambiguous 20 ms sample reached FASOR's FastRTO.
    let snap = p.client.cc(&SERVER).unwrap();
    let strong = coapcc_cc::CongestionControl::snapshot(snap).strong.expect("FastRTO sampled");
    assert_eq!(strong.srtt, Duration::from_millis(20));
}

fn ack_loss_ordinal(mode: DuplicateMode) -> u32 {
    let s = EndpointConfig { duplicate_mode: mode, ..EndpointConfig::default() };
    let mut p = Pair::new(cfg("fasor-token:dither=off"), s);
    p.drop = Box::new(|dir, n, _| dir == Dir::ToClient && n == 0);
    p.client.request(p.now, SERVER, Request::get("/hello"));
    p.drive();
    assert_eq!(p.requests_seen_by_app(), 1);
    assert_eq!(p.responses().len(), 1);
    p.records[0].copy.unwrap().ordinal
}

#[test]
fn answer_each_copy_versus_replay_cached() {
    assert_eq!(ack_loss_ordinal(DuplicateMode::AnswerEachCopy), 1);
    assert_eq!(ack_loss_ordinal(DuplicateMode::ReplayCached), 0);
}

#[test]
fn plain_algorithms_do_not_vary_the_token() {
    let mut p = Pair::new(cfg("cocoa:dither=off"), EndpointConfig::default());
    p.drop = Box::new(|dir, n, _| dir == Dir::ToServer && n == 0);
    p.client.request(p.now, SERVER, Request::get("/hello"));
    p.drive();
    let reqs = p.sent(Dir::ToServer);
    assert_eq!(reqs[0].bytes, reqs[1].bytes);
    assert_eq!(p.records[0].copy, None);
}

#[test]
fn dedup_cache_is_bounded() {
    let s = EndpointConfig { dedup_capacity: 16, ..EndpointConfig::default() };
    let mut server = Endpoint::<u16>::with_seed(s, 5);
    let now = Instant::ZERO;
    for i in 0..200u16 {
        let mut m = Message::new(MessageType::Con, Code::GET, i).with_token(Token::from_u64(i as u64));
        m.add_uri_path("hello");
        server.handle_datagram(now, i % 7, &m.to_bytes());
        while let Some(Event::Request { id, .. }) = server.poll_event() {
            server.respond(now, id, Response::content("x")).unwrap();
        }
        assert!(server.dedup_len() <= 16);
    }
    let st = server.stats();
    assert_eq!((st.dedup_len, st.dedup_evicted, st.requests_received), (16, 184, 200));
    // The newest entries are still answered from the cache.
    let mut m = Message::new(MessageType::Con, Code::GET, 199).with_token(Token::from_u64(199));
    m.add_uri_path("hello");
    while server.poll_transmit(now).is_some() {}
    server.handle_datagram(now, 199 % 7, &m.to_bytes());
    assert!(server.poll_event().is_none());
    assert_eq!(server.stats().duplicates, 1);
    assert!(server.poll_transmit(now).is_some());
}

#[test]
fn lifetime_formula_expires_dedup_entries() {
    let s = EndpointConfig { lifetime_mode: LifetimeMode::Formula, ..EndpointConfig::default() };
    let mut server = Endpoint::<u8>::with_seed(s, 5);
    let mut m = Message::new(MessageType::Con, Code::GET, 9).with_token(Token::from_u64(1));
    m.add_uri_path("a");
    let answer = |server: &mut Endpoint<u8>, now| {
        while let Some(Event::Request { id, .. }) = server.poll_event() {
            server.respond(now, id, Response::content("x")).unwrap();
        }
    };
    server.handle_datagram(Instant::ZERO, 1, &m.to_bytes());
    answer(&mut server, Instant::ZERO);
    server.handle_datagram(at(246.0), 1, &m.to_bytes());
    assert_eq!(server.stats().duplicates, 1, "within EXCHANGE_LIFETIME = 247 s");
    server.handle_datagram(at(247.0), 1, &m.to_bytes());
    assert_eq!(server.stats().requests_received, 2, "a new message after EXCHANGE_LIFETIME");

    // until-complete: never expires by time.
    let mut server = Endpoint::<u8>::with_seed(EndpointConfig::default(), 5);
    server.handle_datagram(Instant::ZERO, 1, &m.to_bytes());
    answer(&mut server, Instant::ZERO);
    server.handle_datagram(at(1e6), 1, &m.to_bytes());
    assert_eq!(server.stats().requests_received, 1);
}

#[test]
fn malformed_con_gets_rst_others_are_dropped() {
    let mut server = Endpoint::<u8>::with_seed(EndpointConfig::default(), 5);
    let now = Instant::ZERO;
    // CON with TKL = 9 (format error), MID 0x1234.
    server.handle_datagram(now, 1, &[0x49, 0x01, 0x12, 0x34, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    let t = server.poll_transmit(now).expect("RST");
    assert_eq!(t.bytes, [0x70, 0x00, 0x12, 0x34]);
    // CON with a truncated option.
    server.handle_datagram(now, 1, &[0x40, 0x01, 0x00, 0x07, 0xB5, b'h']);
    assert_eq!(server.poll_transmit(now).unwrap().bytes, Message::reset(7).to_bytes());
    // CON with a reserved code class (1.xx).
    server.handle_datagram(now, 1, &[0x40, 0x21, 0x00, 0x08]);
    assert_eq!(server.poll_transmit(now).unwrap().bytes, Message::reset(8).to_bytes());
    // NON with TKL = 9, a too short datagram, a bad version: silently dropped.
    server.handle_datagram(now, 1, &[0x59, 0x01, 0x12, 0x35]);
    server.handle_datagram(now, 1, &[0x40, 0x01]);
    server.handle_datagram(now, 1, &[0x80, 0x01, 0x00, 0x01]);
    assert!(server.poll_transmit(now).is_none());
    // A CoAP ping (Empty CON) gets RST.
    server.handle_datagram(now, 1, &Message::empty(MessageType::Con, 99).to_bytes());
    assert_eq!(server.poll_transmit(now).unwrap().bytes, Message::reset(99).to_bytes());
    let st = server.stats();
    assert_eq!((st.malformed, st.rst_sent), (6, 4));
    assert!(server.poll_event().is_none());
}

#[test]
fn unknown_critical_option_is_rejected_with_4_02() {
    let mut p = Pair::default_pair();
    p.client.request(p.now, SERVER, Request::get("/hello").with_option(9, vec![1u8]));
    p.drive();
    assert_eq!(p.responses()[0].code, Code::BAD_OPTION);
    assert_eq!(p.requests_seen_by_app(), 0);
}

#[test]
fn non_request_gets_non_response() {
    let mut p = Pair::default_pair();
    p.client.request(p.now, SERVER, Request::get("/hello").confirmable(false));
    p.drive();
    assert_eq!(kinds(&p, Dir::ToServer), [(MessageType::Non, Code::GET)]);
    assert_eq!(kinds(&p, Dir::ToClient), [(MessageType::Non, Code::CONTENT)]);
    assert_eq!(p.records[0].outcome, Outcome::NonResponse);
    assert_eq!(p.responses().len(), 1);

    // A lost NON response fails after the response timeout.
    let c = EndpointConfig { response_timeout: Some(secs(5.0)), ..EndpointConfig::default() };
    let mut p = Pair::new(c, EndpointConfig::default());
    p.drop = Box::new(|dir, _, _| dir == Dir::ToClient);
    let id = p.client.request(p.now, SERVER, Request::get("/hello").confirmable(false));
    p.drive();
    assert_eq!(p.client_events, [Event::Failed { id, peer: SERVER, reason: FailReason::ResponseTimeout }]);
    assert_eq!(p.now, at(5.0));
}

#[test]
fn unexpected_con_response_gets_rst() {
    let mut p = Pair::default_pair();
    let m = Message::new(MessageType::Con, Code::CONTENT, 77).with_token(Token::from_u64(0xdead));
    p.inject_to_client(&m.to_bytes());
    assert_eq!(p.client.poll_transmit(p.now).unwrap().bytes, Message::reset(77).to_bytes());
}

#[test]
fn requests_to_two_peers_run_in_parallel() {
    let mut c = Endpoint::<u8>::with_seed(EndpointConfig::default(), 3);
    let now = Instant::ZERO;
    c.request(now, 7, Request::get("/a"));
    c.request(now, 8, Request::get("/a"));
    c.request(now, 7, Request::get("/b"));
    let peers: Vec<u8> = std::iter::from_fn(|| c.poll_transmit(now)).map(|t| t.peer).collect();
    assert_eq!(peers, [7, 8]);
    assert_eq!(c.pending_requests(), 3);
}

#[test]
fn every_registry_algorithm_drives_a_lossy_exchange() {
    for info in coapcc_cc::ALGORITHMS {
        let mut p = Pair::new(EndpointConfig::with_cc(info.default_config()), EndpointConfig::default());
        p.drop = Box::new(|_, n, _| n % 3 == 1);
        for i in 0..5 {
            p.client.request(p.now, SERVER, Request::get(&format!("/r{i}")));
        }
        p.drive();
        let done = p.client_events.len();
        assert_eq!(done, 5, "{}: {:?}", info.name, p.client_events);
        assert!(p.client.is_idle(), "{}", info.name);
    }
}

#[test]
fn endpoint_is_send() {
    fn assert_send<T: Send>() {}
    assert_send::<Endpoint<std::net::SocketAddr>>();
    assert_send::<Endpoint<u32>>();
}

/// The server's datagram for a duplicate says whose identification it carries, as the
/// reliability layer decided (what the simulator's full model reports as the echoed copy).
#[test]
fn a_replayed_answer_says_whose_identification_it_carries() {
    for (mode, want) in
        [(DuplicateMode::AnswerEachCopy, Echoed::Incoming), (DuplicateMode::ReplayCached, Echoed::Cached)]
    {
        let mut server =
            Endpoint::<u8>::with_seed(EndpointConfig { duplicate_mode: mode, ..EndpointConfig::default() }, 5);
        let copy = |last: u8| {
            let mut m = Message::new(MessageType::Con, Code::GET, 7).with_token(Token::new(&[9, last]).unwrap());
            m.add_uri_path("hello");
            m.to_bytes()
        };
        server.handle_datagram(Instant::ZERO, 1, &copy(0));
        let Some(Event::Request { id, .. }) = server.poll_event() else { panic!("a request") };
        server.respond(Instant::ZERO, id, Response::content(b"hi".to_vec())).unwrap();
        let first = server.poll_transmit(Instant::ZERO).expect("the piggybacked answer");
        assert_eq!((first.kind, first.echoed), (TransmitKind::Response, None));
        server.handle_datagram(Instant::from_millis(10), 1, &copy(1));
        assert!(server.poll_event().is_none(), "a duplicate never reaches the application");
        let again = server.poll_transmit(Instant::from_millis(10)).expect("the answer again");
        assert_eq!((again.kind, again.echoed), (TransmitKind::Response, Some(want)));
        let token = Message::decode(&again.bytes).unwrap().token;
        let expected = if want == Echoed::Incoming { [9, 1] } else { [9, 0] };
        assert_eq!(token.as_bytes(), expected, "{mode:?}");
    }
}

/// Datagrams whose type bits say ACK take their own, shorter path; it must keep the general
/// rules: malformed ACKs (too short, bad version, TKL 9, reserved code class, an Empty ACK
/// with a token) dropped and counted, late copies counted as unmatched, the response
/// delivered once; and a responder given to `handle_datagram_with` changes nothing for them.
#[test]
fn ack_datagrams_are_checked_matched_and_never_answered() {
    let now = Instant::ZERO;
    let mut a = Endpoint::<u8>::with_seed(EndpointConfig::default(), 11);
    let mut b = Endpoint::<u8>::with_seed(EndpointConfig::default(), 11);
    a.request(now, 2, Request::get("/hello"));
    b.request(now, 2, Request::get("/hello"));
    let req = Message::decode(&a.poll_transmit(now).unwrap().bytes).unwrap();
    assert_eq!(Message::decode(&b.poll_transmit(now).unwrap().bytes).unwrap(), req);
    let mid = req.message_id.to_be_bytes();
    let mut ack = Message::new(MessageType::Ack, Code::CONTENT, req.message_id);
    ack.token = req.token;
    ack.payload = b"hi".to_vec();
    let mut other = ack.clone();
    other.message_id = req.message_id.wrapping_add(1);
    let datagrams: Vec<Vec<u8>> = vec![
        vec![0x60, 0x45],                                            // too short
        vec![0xA0, 0x45, mid[0], mid[1]],                            // version 2, ACK type bits
        vec![0x69, 0x45, mid[0], mid[1], 0, 0, 0, 0, 0, 0, 0, 0, 0], // TKL 9
        vec![0x60, 0x21, mid[0], mid[1]],                            // reserved class 1.01
        vec![0x61, 0x00, mid[0], mid[1], 7],                         // Empty ACK with a token
        other.to_bytes(),                                            // matches nothing
        ack.to_bytes(),                                              // the response
        ack.to_bytes(),                                              // its late copy
    ];
    let t = now + Duration::from_millis(100);
    let answer = Response::content("never");
    for d in &datagrams {
        a.handle_datagram(t, 2, d);
        b.handle_datagram_with(t, 2, d, &mut |_| Some(&answer));
    }
    let drain = |e: &mut Endpoint<u8>| {
        let mut out = Vec::new();
        while let Some(ev) = e.poll_event() {
            out.push(format!("{ev:?}"));
        }
        while let Some(tx) = e.poll_transmit(t) {
            out.push(format!("{tx:?}"));
        }
        out.push(format!("{:?} {:?}", e.poll_timeout(), e.stats()));
        out
    };
    let (ea, eb) = (drain(&mut a), drain(&mut b));
    assert_eq!(ea, eb);
    let st = a.stats();
    assert_eq!((st.datagrams_in, st.malformed, st.unmatched), (8, 5, 2));
    assert!(ea[0].starts_with("Response"), "{ea:?}");
    assert_eq!(ea.len(), 2, "one response, no datagram: {ea:?}");
    assert!(a.is_idle());
}
