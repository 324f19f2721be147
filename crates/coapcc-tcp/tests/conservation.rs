//! Conservation and determinism under random loss.

use std::cell::RefCell;
use std::rc::Rc;

use coapcc_cc::{Entropy, SplitMix64};
use coapcc_tcp::pipe::{Dir, Pipe, PipeConfig};
use coapcc_tcp::TcpCcConfig;
use proptest::prelude::*;

const RESPONSE: u64 = 20_000;

/// Run one transfer with independent random loss in both directions; return the result and
/// the union of downlink payload ranges that actually reached the client.
fn lossy(spec: &str, buffer: u64, loss: f64, seed: u64) -> (coapcc_tcp::pipe::TransferResult, Vec<(u64, u64)>) {
    let cfg = TcpCcConfig::parse(spec).unwrap();
    let mut p = Pipe::new(&cfg, PipeConfig::testbed().with_buffer(buffer), seed).unwrap();
    let arrived = Rc::new(RefCell::new(Vec::<(u64, u64)>::new()));
    let a2 = arrived.clone();
    let mut rng = SplitMix64::new(seed ^ 0x5eed);
    p.set_drop_rule(move |d, s, _| {
        let lost = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= loss;
        if !lost && d == Dir::Down && s.len > 0 {
            a2.borrow_mut().push((s.seq, s.seq + u64::from(s.len)));
        }
        lost
    });
    let r = p.transfer(RESPONSE).expect("transfer completes");
    let mut v = arrived.borrow().clone();
    v.sort();
    (r, v)
}

/// Length of the prefix starting at sequence number 1 covered by the ranges.
fn covered_prefix(ranges: &[(u64, u64)]) -> u64 {
    let mut next = 1;
    for &(s, e) in ranges {
        if s > next {
            break;
        }
        next = next.max(e);
    }
    next - 1
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_byte_delivered_once_in_order(
        bbr in any::<bool>(),
        buffer in prop::sample::select(vec![2_500u64, 14_100, 1_410_000]),
        loss in 0.0f64..0.25,
        seed in any::<u64>(),
    ) {
        let spec = if bbr { "bbr:preset=helsinki2018" } else { "newreno:preset=helsinki2018" };
        let (r, arrived) = lossy(spec, buffer, loss, seed);
        // The client delivered exactly the server's CSM and the response, no more ...
        prop_assert_eq!(r.client.bytes_delivered, 2 + RESPONSE);
        // ... and only bytes that did arrive, contiguously from the start.
        prop_assert!(covered_prefix(&arrived) >= 2 + RESPONSE);
        // Every data segment was sent once, plus retransmissions.
        let segs = (2 + RESPONSE).div_ceil(256) + 1;
        prop_assert!(r.server.data_segments_sent >= segs);
        prop_assert_eq!(r.server.data_segments_sent, segs + r.server.retransmitted_segments);
        if loss == 0.0 && buffer > 100_000 {
            prop_assert_eq!(r.server.retransmitted_segments, 0);
        }
    }
}

#[test]
fn same_seed_same_run() {
    for spec in ["newreno:preset=helsinki2018", "bbr:preset=helsinki2018"] {
        let a = lossy(spec, 14_100, 0.05, 42);
        let b = lossy(spec, 14_100, 0.05, 42);
        assert_eq!(a.0.fct_s, b.0.fct_s);
        assert_eq!(a.0.server, b.0.server);
        assert_eq!(a.1, b.1);
    }
}
