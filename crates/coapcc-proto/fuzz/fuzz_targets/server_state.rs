//! Fuzzes a server's Block1 and Observe state machines (`coapcc_proto::endpoint`): a few
//! peers send block-wise uploads, Block2 follow-ups, GETs, Observe registrations and
//! deregistrations and raw datagrams, with time passing, to an `Endpoint` whose application
//! is the test server's `/echo` and an observable `/counter`. Invariants after every step: the
//! transfer state and the observations stay within their per-peer and global budgets (count and
//! bytes); no request reaching the application carries Block1 (uploads are reassembled) or is
//! a Block2 follow-up of a request that changes state (those are served from the kept
//! representation, never by the resource: the stored body changes only by a whole PUT/POST).
#![no_main]

use coapcc_cc::Instant;
use coapcc_proto::endpoint::{Endpoint, EndpointConfig, Event, Response, TransferLimits};
use coapcc_proto::{option, Block, Code, Message, MessageType, Token};
use core::time::Duration;
use libfuzzer_sys::fuzz_target;

const PEERS: u8 = 4;

fn config() -> EndpointConfig {
    EndpointConfig {
        transfers: TransferLimits {
            max_transfers: 6,
            max_per_peer: 2,
            max_body_size: 4096,
            max_bytes: 6000,
            timeout: Duration::from_secs(30),
            ..TransferLimits::default()
        },
        max_observations: 5,
        max_observations_per_peer: 2,
        max_unblocked_payload: 64,
        block_szx: 2,
        ..EndpointConfig::default()
    }
}

struct App {
    stored: Vec<u8>,
}

impl App {
    fn serve(&mut self, s: &mut Endpoint<u8>, now: Instant) {
        while let Some(ev) = s.poll_event() {
            let Event::Request { id, message, .. } = ev else { continue };
            assert!(!message.options.contains(option::BLOCK1), "a Block1 request reached the application");
            let follow_up = matches!(message.block2(), Ok(Some(b)) if b.num > 0);
            assert!(
                message.code == Code::GET || message.code == Code::FETCH || !follow_up,
                "a Block2 follow-up of {} reached the resource",
                message.code
            );
            let path = message.uri_path();
            let r = match (path.as_str(), message.code) {
                ("counter", Code::GET) if message.options.get_uint(option::OBSERVE) == Some(0) => {
                    let _ = s.observe(now, id, Response::content(b"1".to_vec()));
                    continue;
                }
                ("echo", Code::GET) => Response::content(self.stored.clone()),
                ("echo", Code::PUT | Code::POST) => {
                    self.stored = message.payload.clone();
                    Response::new(Code::CHANGED).with_payload(message.payload)
                }
                _ => Response::new(Code::NOT_FOUND),
            };
            let _ = s.respond(now, id, r);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut s = Endpoint::<u8>::with_seed(config(), 1);
    let mut app = App { stored: Vec::new() };
    let mut now = Instant::from_millis(1);
    let mut mid = 0u16;
    let mut i = 0;
    while i + 4 <= data.len() {
        let (op, a, b, c) = (data[i], data[i + 1], data[i + 2], data[i + 3]);
        i += 4;
        let peer = a % PEERS;
        mid = mid.wrapping_add(1);
        let method = if b & 1 == 0 { Code::POST } else { Code::PUT };
        let mut m = Message::new(MessageType::Con, Code::GET, mid).with_token(Token::from_u64(u64::from(c % 8)));
        match op % 7 {
            0 => {
                // A Block1 block of /echo (or /echo?k=N).
                m.code = method;
                m.add_uri_path("echo");
                if b & 2 != 0 {
                    m.add_uri_query(&format!("k={}", c % 5));
                }
                let szx = (b >> 2) % 3;
                let size = 16usize << szx;
                let num = u32::from(c % 12);
                let more = b & 0x40 != 0;
                let len = if more { size } else { usize::from(c) % (size + 1) };
                m.set_block1(Block { num, more, szx }).unwrap();
                m.payload = vec![b; len];
            }
            1 => {
                // A Block2 follow-up of a POST/PUT.
                m.code = method;
                m.add_uri_path("echo");
                m.set_block2(Block { num: u32::from(c % 6), more: false, szx: (b >> 2) % 3 }).unwrap();
            }
            2 => {
                m.add_uri_path("echo");
                if b & 2 != 0 {
                    m.set_block2(Block { num: u32::from(c % 6), more: false, szx: (b >> 2) % 3 }).unwrap();
                }
            }
            3 | 4 => {
                m.add_uri_path("counter");
                m.options.set_uint(option::OBSERVE, u64::from(op % 7 == 4));
            }
            5 => {
                now = now + Duration::from_millis(u64::from(b) * 250);
                s.handle_timeout(now);
                app.serve(&mut s, now);
                while s.poll_transmit(now).is_some() {}
                continue;
            }
            _ => {
                // Raw bytes from the input.
                let n = usize::from(c) % 24;
                let raw = &data[i..(i + n).min(data.len())];
                s.handle_datagram(now, peer, raw);
                i += raw.len();
                app.serve(&mut s, now);
                while s.poll_transmit(now).is_some() {}
                continue;
            }
        }
        s.handle_datagram(now, peer, &m.to_bytes());
        app.serve(&mut s, now);
        while s.poll_transmit(now).is_some() {}
        let t = s.transfers();
        let l = config().transfers;
        assert!(t.len() <= l.max_transfers && t.bytes() <= l.max_bytes, "{} transfers, {} bytes", t.len(), t.bytes());
        for p in 0..PEERS {
            assert!(t.peer_len(&p) <= l.max_per_peer);
            assert!(s.observations_of(&p) <= 2);
        }
        assert!(s.observations() <= 5);
    }
});
