//! Linux 4.15's receiver (`receiver=linux`), driven segment by segment: quick-ACK mode and its
//! count, the window's growth, immediate ACKs for duplicates and out-of-order data, the
//! delayed-ACK estimate `ato`, interactive (pingpong) mode and the ACK a read sends. Each
//! expected value is worked out in the comments from the rules in docs/tcp.md.

mod common;

use coapcc_cc::Instant;
use coapcc_tcp::recv::{DataKind, Receiver, RecvCtx, ATO_MIN};
use coapcc_tcp::{TcpCcConfig, TcpConfig};
use common::close;

const MSS: u32 = 256;
/// The connection's own RTT estimate (0.1 s) and RTO (0.3 s), as after one 100 ms handshake
/// sample.
const CTX: RecvCtx = RecvCtx { srtt: Some(0.1), rto: 0.3 };

fn cfg(extra: &str) -> TcpConfig {
    TcpCcConfig::parse(&format!("newreno:preset=helsinki2018{extra}")).unwrap().tcp
}

fn ms(t: f64) -> Instant {
    Instant::from_nanos((t * 1e6).round() as u64)
}

/// Segment `k` (1-based) of full segments starting at sequence number 1.
fn seq(k: u64) -> u64 {
    1 + u64::from(MSS) * (k - 1)
}

/// Deliver segment `k` at `t` ms; `true` when an ACK goes out at once (then it is sent).
fn data(r: &mut Receiver, c: &TcpConfig, t: f64, k: u64) -> bool {
    r.on_data(ms(t), seq(k), MSS, c, CTX);
    r.take(c);
    send_if_due(r)
}

fn send_if_due(r: &mut Receiver) -> bool {
    let now = r.ack_now;
    if now {
        r.ack_sent();
    }
    now
}

#[test]
fn quick_acks_at_the_start_then_ato_adapts_to_the_arrival_spacing() {
    // No window growth (the clamp is the initial 10-segment window): the first data segment
    // starts the delayed-ACK engine with quick = 2560 / (2 x 256) = 5 (tcp_incr_quickack), so
    // segments 1-5 are ACKed at once. Leaving quick-ACK mode resets ato to 40 ms.
    let c = cfg(",rcv_clamp=2560");
    let mut r = Receiver::new(1, &c);
    let mut t = 1000.0;
    for k in 1..=5 {
        assert!(data(&mut r, &c, t, k), "segment {k}");
        t += 90.0;
    }
    assert_eq!(r.quick_acks(), 0);
    assert!(close(r.ato, ATO_MIN, 1e-12));
    // Segment 6 (t = 1450): one segment, not quick: the timer is ato = 40 ms.
    assert!(!data(&mut r, &c, t, 6));
    assert_eq!(r.delack, Some(ms(t + 40.0)));
    // It fires (the next segment is 90 ms away): ACK, and a missed delayed ACK doubles ato.
    r.on_delack(ms(t + 40.0), &c, CTX.rto);
    assert!(send_if_due(&mut r));
    assert!(close(r.ato, 0.080, 1e-12));
    // Segment 7, 90 ms after 6 (m = 90 ms >= ato): ato stays 80 ms; timer 80 ms; fires; 160 ms.
    t += 90.0;
    assert!(!data(&mut r, &c, t, 7));
    assert_eq!(r.delack, Some(ms(t + 80.0)));
    r.on_delack(ms(t + 80.0), &c, CTX.rto);
    assert!(send_if_due(&mut r));
    assert!(close(r.ato, 0.160, 1e-12));
    // Segment 8 (m = 90 < 160): ato = 160/2 + 90 = 170 ms; the timer is bounded by the
    // smoothed RTT, 100 ms, so segment 9 (90 ms later) arrives first: two full segments, ACK.
    t += 90.0;
    assert!(!data(&mut r, &c, t, 8));
    assert!(close(r.ato, 0.170, 1e-12));
    assert_eq!(r.delack, Some(ms(t + 100.0)));
    t += 90.0;
    assert!(data(&mut r, &c, t, 9));
    assert_eq!(r.delack, None);
    // From then on every second segment: ato converges to 2 x 90 ms, the timer stays 100 ms.
    for k in 10..=20 {
        t += 90.0;
        assert_eq!(data(&mut r, &c, t, k), k % 2 == 1, "segment {k}");
    }
    assert_eq!(r.rcv_nxt, seq(21));
}

#[test]
fn every_segment_is_acked_while_the_window_opens() {
    // tcp_grow_window: each in-order segment of at least 128 bytes raises rcv_ssthresh by two
    // segments (2560 -> 90 624, the 4.15 clamp at MSS 256: half of tcp_fixup_rcvbuf's
    // 4 x 2 x 1136 B x 20 segments, less one segment) and sets quick |= 1. Segments 1-172
    // grow it (2560 + 171 x 512 < 90 624), and quick never drops below 4 meanwhile (5, 4
    // after the ACK, 4 | 1 = 5 again), so four more quick ACKs follow: 176 in all.
    let c = cfg("");
    assert_eq!(c.window_clamp(), 90_624);
    let mut r = Receiver::new(1, &c);
    let mut t = 1000.0;
    for k in 1..=176 {
        assert!(data(&mut r, &c, t, k), "segment {k}");
        t += 50.0;
    }
    assert_eq!(r.quick_acks(), 0);
    assert_eq!(r.rcv_wnd, 90_624);
    assert!(!data(&mut r, &c, t, 177));
    assert_eq!(r.delack, Some(ms(t + 40.0)));
    // RFC 5681's receiver ACKs every second segment from the start.
    let c = cfg(",receiver=rfc5681");
    let mut r = Receiver::new(1, &c);
    let acks: Vec<bool> = (1..=6).map(|k| data(&mut r, &c, 1000.0 + 50.0 * k as f64, k)).collect();
    assert_eq!(acks, [false, true, false, true, false, true]);
}

/// A receiver past its start: 10 240-byte window (quick count 16), no growth, 30 segments in.
fn warm(extra: &str) -> (TcpConfig, Receiver, f64) {
    let c = cfg(&format!(",init_rwnd=40,rcv_clamp=10240{extra}"));
    let mut r = Receiver::new(1, &c);
    let mut t = 1000.0;
    for k in 1..=30 {
        data(&mut r, &c, t, k);
        t += 90.0;
    }
    assert_eq!(r.quick_acks(), 0);
    // Segment 30 was the second of a pair: acknowledged, no timer.
    assert_eq!(r.delack, None);
    (c, r, t)
}

#[test]
fn a_duplicate_is_acked_at_once_and_starts_sixteen_quick_acks() {
    let (c, mut r, mut t) = warm("");
    // A resent segment already delivered: tcp_data_queue's "A retransmit, 2nd most common
    // case. Force an immediate ack." enters quick-ACK mode: quick = min(10240 / 512, 16).
    assert_eq!(r.on_data(ms(t), seq(12), MSS, &c, CTX), DataKind::Duplicate);
    assert!(send_if_due(&mut r));
    assert_eq!(r.quick_acks(), 15);
    assert_eq!(r.duplicate_bytes, u64::from(MSS));
    // The next 15 new segments are each ACKed at once, then every second one again.
    for k in 31..=45 {
        t += 90.0;
        assert!(data(&mut r, &c, t, k), "segment {k}");
    }
    t += 90.0;
    assert!(!data(&mut r, &c, t, 46));
    t += 90.0;
    assert!(data(&mut r, &c, t, 47));
    // RFC 5681's receiver ACKs the duplicate, then goes on pairing segments.
    let (c, mut r, mut t) = warm(",receiver=rfc5681");
    r.on_data(ms(t), seq(12), MSS, &c, CTX);
    assert!(send_if_due(&mut r));
    let acks: Vec<bool> = (31..=34)
        .map(|k| {
            t += 90.0;
            data(&mut r, &c, t, k)
        })
        .collect();
    assert_eq!(acks, [false, true, false, true]);
}

#[test]
fn out_of_order_data_enters_quick_ack_mode_up_to_linux_4_17() {
    for (ofo, quick_after) in [("on", true), ("off", false)] {
        let (c, mut r, mut t) = warm(&format!(",quickack_ofo={ofo}"));
        // Segment 32 before 31: ACKed at once either way (data held out of order).
        t += 90.0;
        assert_eq!(r.on_data(ms(t), seq(32), MSS, &c, CTX), DataKind::OutOfOrder);
        assert!(send_if_due(&mut r));
        assert_eq!(r.rcv_nxt, seq(31));
        // 31 fills the hole: two segments at once, ACKed at once either way.
        t += 90.0;
        assert!(data(&mut r, &c, t, 31));
        assert_eq!(r.rcv_nxt, seq(33));
        // Segment 33: quick-ACKed only if the out-of-order segment entered quick-ACK mode.
        t += 90.0;
        assert_eq!(data(&mut r, &c, t, 33), quick_after, "quickack_ofo={ofo}");
    }
}

#[test]
fn a_reply_within_ato_makes_the_connection_interactive() {
    // The server side of a request/response exchange: 9-byte requests, replies at once.
    let c = cfg("");
    let mut r = Receiver::new(1, &c);
    // First request: first data, quick-ACK mode: ACKed at once. The reply goes out 1 ms
    // later, within ato (40 ms) of the request: pingpong (tcp_event_data_sent).
    r.on_data(ms(1000.0), 1, 9, &c, CTX);
    assert!(send_if_due(&mut r));
    assert_eq!(r.take(&c), 9);
    r.data_sent(ms(1001.0), &c);
    assert!(r.pingpong);
    // Second request, 2 s later: quick ACKs are off in interactive mode and the read does
    // not ACK a single short segment; the delayed ACK waits ato = 40 ms (bounded by 200 ms).
    r.on_data(ms(3000.0), 10, 9, &c, CTX);
    assert_eq!(r.take(&c), 9);
    assert!(!r.ack_now);
    assert_eq!(r.delack, Some(ms(3040.0)));
    // No reply in time: the timer ends interactive mode (tcp_delack_timer_handler).
    r.on_delack(ms(3040.0), &c, CTX.rto);
    assert!(send_if_due(&mut r));
    assert!(!r.pingpong);
    assert!(close(r.ato, ATO_MIN, 1e-12));
    // Not interactive: the read of a short segment sends the ACK (tcp_cleanup_rbuf), before
    // anything the application writes next. A 2-segment window: one quick ACK (512 / 512).
    let c = cfg(",init_rwnd=2,rcv_clamp=512");
    let mut r = Receiver::new(1, &c);
    r.on_data(ms(1000.0), 1, 9, &c, CTX);
    assert!(send_if_due(&mut r));
    assert_eq!(r.take(&c), 9);
    r.on_data(ms(1200.0), 10, 9, &c, CTX);
    assert!(!r.ack_now, "quick ACKs used up");
    assert_eq!(r.delack, Some(ms(1240.0)));
    assert_eq!(r.take(&c), 9);
    assert!(r.ack_now && r.read_ack);
}

#[test]
fn a_long_silence_restarts_quick_acks() {
    // tcp_event_data_recv: data after more than one RTO of silence ("sender failed to
    // restart window") gets quick ACKs again.
    let (c, mut r, t) = warm("");
    assert!(data(&mut r, &c, t + 500.0, 31), "0.5 s > RTO 0.3 s");
    assert_eq!(r.quick_acks(), 15);
}

#[test]
fn a_fixed_delayed_ack_timer_is_an_option() {
    let (c, mut r, t) = warm(",delack_timer=fixed");
    assert!(!data(&mut r, &c, t, 31));
    assert_eq!(r.delack, Some(ms(t + 200.0)));
}
