//! Fuzzes the sans-IO CoAP-over-TCP session (RFC 8323 frames and the CSM rules,
//! `coapcc_proto::tcp::Session`) and its Ping rate limit. Invariants: no panic; nothing but a
//! CSM before the peer's CSM; what is buffered never exceeds the frame limit plus one chunk;
//! chunked input gives the same messages and the same error as the whole input; the peer's
//! capabilities are those of its last CSM; the rate limit never allows more than its burst plus
//! its rate times the time elapsed.
#![no_main]

use coapcc_cc::Instant;
use coapcc_proto::tcp::{signal, Inbound, ProtocolError, RateLimit, Session};
use coapcc_proto::Code;
use libfuzzer_sys::fuzz_target;

const MAX: u32 = 4096;

fn run(data: &[u8], step: usize) -> (Vec<Inbound>, Option<ProtocolError>, Session) {
    let mut s = Session::new(MAX);
    let mut got = Vec::new();
    for chunk in data.chunks(step.max(1)) {
        s.push(chunk);
        loop {
            match s.next_inbound() {
                Ok(Some(m)) => {
                    assert!(s.peer.csm_seen, "a message before the CSM: {m:?}");
                    got.push(m);
                }
                Ok(None) => break,
                Err(e) => return (got, Some(e), s),
            }
        }
        assert!(s.buffered() <= MAX as usize + chunk.len(), "{} buffered", s.buffered());
    }
    (got, None, s)
}

fuzz_target!(|data: &[u8]| {
    let step = usize::from(data.first().copied().unwrap_or(1)) % 23 + 1;
    let (whole, whole_err, ws) = run(data, data.len());
    let (chunked, chunked_err, cs) = run(data, step);
    assert_eq!(whole, chunked);
    assert_eq!(whole_err, chunked_err);
    assert_eq!(ws.peer, cs.peer);
    // The peer's capabilities are those its CSMs announced: a Max-Message-Size comes only
    // from a CSM option, and Block-Wise-Transfer only from one.
    if !ws.peer.csm_seen {
        assert_eq!(ws.peer.max_message_size, signal::DEFAULT_MAX_MESSAGE_SIZE);
        assert!(!ws.peer.block_wise);
    }
    for m in &whole {
        if let Inbound::Request(r) | Inbound::Response(r) | Inbound::Ping(r) | Inbound::Pong(r) | Inbound::Release(r) = m {
            assert_ne!(r.code, Code::CSM);
            assert_ne!(r.code, Code::ABORT);
        }
    }
    // The rate limit over times taken from the input (milliseconds, increasing).
    let rate = f64::from(data.get(1).copied().unwrap_or(10)) + 0.5;
    let burst = f64::from(data.get(2).copied().unwrap_or(5) % 32);
    let mut r = RateLimit::new(rate, burst, Instant::ZERO);
    let (mut t, mut allowed) = (0u64, 0u64);
    for &b in data.iter().skip(3) {
        t += u64::from(b % 16);
        allowed += u64::from(r.allow(Instant::from_millis(t)));
        assert!(allowed as f64 <= burst + rate * t as f64 / 1000.0 + 1e-9, "{allowed} in {t} ms");
    }
});
