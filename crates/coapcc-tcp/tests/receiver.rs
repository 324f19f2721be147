//! The receiver on a connection, driven segment by segment: RFC 5681's fixed rule
//! (`receiver=rfc5681`); Linux's receiver is `tests/linux_receiver.rs`.

use coapcc_cc::Instant;
use coapcc_tcp::{Connection, Segment, TcpCcConfig};

fn ms(t: u64) -> Instant {
    Instant::from_millis(t)
}

/// A client connection established at t = 0 (SYN out, SYN-ACK in, ACK out).
fn established_client() -> Connection {
    let cfg = TcpCcConfig::parse("newreno:preset=helsinki2018,receiver=rfc5681").unwrap();
    let mut c = Connection::client(&cfg, 1);
    c.connect(ms(0));
    let syn = c.poll_transmit(ms(0)).unwrap();
    assert!(syn.syn && syn.ack.is_none());
    let synack = Segment { seq: 0, len: 0, ack: Some(1), syn: true, retransmission: false, header_bytes: 40 };
    c.on_segment(ms(100), &synack);
    assert!(c.is_established());
    let ack = c.poll_transmit(ms(100)).unwrap();
    assert!(ack.is_pure_ack() && ack.ack == Some(1));
    assert!(c.poll_transmit(ms(100)).is_none());
    c
}

fn data(seq: u64, len: u32) -> Segment {
    Segment { seq, len, ack: Some(1), syn: false, retransmission: false, header_bytes: 40 }
}

#[test]
fn one_segment_is_acked_after_the_200_ms_timer() {
    let mut c = established_client();
    c.on_segment(ms(1000), &data(1, 256));
    assert!(c.poll_transmit(ms(1000)).is_none(), "no ACK for a single segment");
    assert_eq!(c.poll_timeout(), Some(ms(1200)));
    c.on_timeout(ms(1200));
    let a = c.poll_transmit(ms(1200)).unwrap();
    assert_eq!(a.ack, Some(257));
    assert_eq!(c.take_delivered(), 256);
}

#[test]
fn every_second_full_segment_is_acked_at_once() {
    let mut c = established_client();
    c.on_segment(ms(1000), &data(1, 256));
    assert!(c.poll_transmit(ms(1000)).is_none());
    c.on_segment(ms(1010), &data(257, 256));
    assert_eq!(c.poll_transmit(ms(1010)).unwrap().ack, Some(513));
    // The timer was cancelled by the ACK.
    assert_eq!(c.poll_timeout(), None);
    // Small segments (the CSM, the GET) wait for the timer even when two arrive.
    c.on_segment(ms(2000), &data(513, 2));
    c.on_segment(ms(2001), &data(515, 9));
    assert!(c.poll_transmit(ms(2001)).is_none());
    assert_eq!(c.poll_timeout(), Some(ms(2200)));
}

#[test]
fn out_of_order_data_is_acked_at_once_and_kept() {
    let mut c = established_client();
    // Segment 2 before segment 1: an immediate duplicate ACK for 1.
    c.on_segment(ms(1000), &data(257, 256));
    assert_eq!(c.poll_transmit(ms(1000)).unwrap().ack, Some(1));
    c.on_segment(ms(1001), &data(513, 256));
    assert_eq!(c.poll_transmit(ms(1001)).unwrap().ack, Some(1));
    assert_eq!(c.take_delivered(), 0);
    // The hole filled: an immediate ACK for everything held.
    c.on_segment(ms(1002), &data(1, 256));
    assert_eq!(c.poll_transmit(ms(1002)).unwrap().ack, Some(769));
    assert_eq!(c.take_delivered(), 768);
    // A duplicate of old data: an immediate ACK, nothing delivered twice.
    c.on_segment(ms(1003), &data(257, 256));
    assert_eq!(c.poll_transmit(ms(1003)).unwrap().ack, Some(769));
    assert_eq!(c.take_delivered(), 0);
    assert_eq!(c.counters().duplicate_bytes_received, 256);
    assert_eq!(c.bytes_received(), 768);
}

#[test]
fn handshake_rtt_sets_the_linux_rto() {
    let c = established_client();
    // One 100 ms sample: SRTT 0.1, RTTVAR 0.05: RTO = 0.1 + max(0.2, 0.2) = 0.3 s.
    assert!((c.rto() - 0.3).abs() < 1e-9, "{}", c.rto());
}
