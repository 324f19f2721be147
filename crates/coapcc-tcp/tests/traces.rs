//! Hand-computed traces of the TCP model.

mod common;

use std::cell::RefCell;
use std::rc::Rc;

use coapcc_tcp::pipe::{Dir, Pipe, PipeConfig, PipeError};
use coapcc_tcp::{BbrMode, CaState, TcpCcConfig, TraceEvent};
use common::{close, drop_last_tx_once, fast_link, seg};

fn helsinki(cc: &str) -> TcpCcConfig {
    TcpCcConfig::parse(&format!("{cc}:preset=helsinki2018")).unwrap()
}

#[test]
fn handshake_timing_on_the_testbed() {
    // SYN: 40 B at 60 kbit/s = 5.333 ms + 215 ms; SYN-ACK: 40 B at 30 kbit/s = 10.667 ms + 415 ms.
    let mut p = Pipe::new(&helsinki("newreno"), PipeConfig::testbed(), 1).unwrap();
    let r = p.transfer(100).unwrap();
    assert!(close(r.setup_s, 0.646, 1e-6), "{}", r.setup_s);
    assert_eq!(r.client.rto_expiries, 0);
}

#[test]
fn lost_syns_are_retried_after_2_4_s() {
    for (lost, expect) in [(1u32, 2.646), (2, 6.646), (3, 14.646)] {
        let mut p = Pipe::new(&helsinki("newreno"), PipeConfig::testbed(), 1).unwrap();
        let mut n = 0;
        p.set_drop_rule(move |d, s, _| {
            if d == Dir::Up && s.syn && n < lost {
                n += 1;
                return true;
            }
            false
        });
        let r = p.transfer(100).unwrap();
        assert!(close(r.setup_s, expect, 1e-6), "{lost}: {}", r.setup_s);
        assert_eq!(r.client.rto_expiries, u64::from(lost));
        assert_eq!(r.client.syn_retransmissions, u64::from(lost));
    }
}

#[test]
fn syn_retries_are_bounded() {
    let cfg = TcpCcConfig::parse("newreno:preset=helsinki2018,syn_retries=2").unwrap();
    let mut p = Pipe::new(&cfg, PipeConfig::testbed(), 1).unwrap();
    p.set_drop_rule(|d, s, _| d == Dir::Up && s.syn);
    assert_eq!(p.transfer(100).unwrap_err(), PipeError::HandshakeFailed);
    assert_eq!(p.client.counters().segments_sent, 3);
}

#[test]
fn slow_start_with_delayed_acks_doubles_per_round() {
    // IW 4, RFC 5681's receiver: the client ACKs every second segment, each ACK covers 2
    // segments, Linux adds 2 per ACK: 4 -> 6, 8 | 10, 12, 14, 16 | ...
    let rfc = TcpCcConfig::parse("newreno:preset=helsinki2018,receiver=rfc5681").unwrap();
    let mut p = Pipe::new(&rfc, fast_link(0.1), 1).unwrap();
    p.server.enable_trace();
    let r = p.transfer(256 * 64).unwrap();
    let acks: Vec<_> = r.server_trace.iter().filter(|t| t.event == TraceEvent::Ack).collect();
    let cw: Vec<u32> = acks.iter().take(6).map(|t| t.cwnd).collect();
    assert_eq!(cw, [6, 8, 10, 12, 14, 16]);
    // Handshake ends at 0.3 s (three 0.1 s crossings); rounds are 0.2 s.
    assert!(close(acks[0].time.as_secs_f64(), 0.5, 1e-4));
    assert!(close(acks[2].time.as_secs_f64(), 0.7, 1e-4));
    // RFC 5681's one SMSS per ACK (abc_limit=1): 4 -> 5, 6 | 7, 8, 9 | ...
    let cfg = TcpCcConfig::parse("newreno:preset=helsinki2018,receiver=rfc5681,abc_limit=1").unwrap();
    let mut p = Pipe::new(&cfg, fast_link(0.1), 1).unwrap();
    p.server.enable_trace();
    let r = p.transfer(256 * 64).unwrap();
    let cw: Vec<u32> = r.server_trace.iter().filter(|t| t.event == TraceEvent::Ack).take(5).map(|t| t.cwnd).collect();
    assert_eq!(cw, [5, 6, 7, 8, 9]);
}

#[test]
fn slow_start_with_linux_acks_while_the_window_opens() {
    // Linux's receiver ACKs every segment while its window grows (tcp_grow_window), so each
    // ACK covers one segment and adds one: 4 -> 5, 6, 7, 8 | 9, ..., 16 | ..., still doubling
    // per round trip, with twice the ACKs.
    let mut p = Pipe::new(&helsinki("newreno"), fast_link(0.1), 1).unwrap();
    p.server.enable_trace();
    let r = p.transfer(256 * 64).unwrap();
    let acks: Vec<_> = r.server_trace.iter().filter(|t| t.event == TraceEvent::Ack).collect();
    let cw: Vec<u32> = acks.iter().take(12).map(|t| t.cwnd).collect();
    assert_eq!(cw, [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
    assert!(close(acks[0].time.as_secs_f64(), 0.5, 1e-4));
    assert!(close(acks[4].time.as_secs_f64(), 0.7, 1e-4));
    // 64 segments, each ACKed on its own (the window is still opening at segment 64).
    assert_eq!(acks.len(), 64);
}

/// Drop the first transmission of the data segments starting at these sequence numbers.
fn drop_first_tx(p: &mut Pipe, seqs: &'static [u64]) {
    p.set_drop_rule(move |d, s, _| d == Dir::Down && s.len > 0 && !s.retransmission && seqs.contains(&s.seq));
}

#[test]
fn fast_retransmit_and_newreno_partial_ack() {
    // Segments 12 and 14 of the response lost in one window, on the testbed (the server's
    // 2-byte CSM comes first, so segment k starts at 3 + 256 k).
    const LOST: &[u64] = &[3 + 256 * 12, 3 + 256 * 14];
    for prr in ["on", "off"] {
        let cfg = TcpCcConfig::parse(&format!("newreno:preset=helsinki2018,prr={prr}")).unwrap();
        let mut p = Pipe::new(&cfg, PipeConfig::testbed(), 1).unwrap();
        p.server.enable_trace();
        drop_first_tx(&mut p, LOST);
        let r = p.transfer(102_408).unwrap();
        let t = &r.server_trace;
        assert_eq!(r.server.fast_retransmits, 1, "prr={prr}");
        assert_eq!(r.server.rto_expiries, 0, "prr={prr}");
        assert_eq!(r.server.retransmitted_segments, 2, "prr={prr}");
        // Both retransmissions in recovery, each one round trip (the partial ACK, then the
        // ACK that ends recovery); Limited Transmit sent new data after the first dupack.
        assert_eq!((r.server.recovery_retransmits, r.server.recovery_rounds), (2, 2), "prr={prr}");
        assert!(r.server.new_after_first_dupack >= 2, "prr={prr}");
        assert_eq!(r.server.first_rto_at_s, None);
        assert_eq!(r.client.bytes_delivered, 2 + 102_408);
        let fr = t.iter().position(|x| x.event == TraceEvent::FastRetransmit).unwrap();
        let before = t[..fr].iter().rev().find(|x| x.event == TraceEvent::Ack).unwrap();
        assert_eq!(t[fr].seq, LOST[0], "prr={prr}");
        assert_eq!(t[fr].ssthresh, Some((before.cwnd / 2).max(2)), "prr={prr}");
        // Fast retransmit of the first hole right after the third duplicate ACK.
        // (the record of the third duplicate ACK follows the fast-retransmit record).
        assert_eq!(t[fr + 1].event, TraceEvent::DupAck);
        let earlier: Vec<_> = t[..fr].iter().rev().take(4).map(|x| x.event).collect();
        // Limited Transmit: each of the first two duplicate ACKs released one new segment.
        assert_eq!(earlier, [TraceEvent::Send, TraceEvent::DupAck, TraceEvent::Send, TraceEvent::DupAck], "prr={prr}");
        let rtx: Vec<_> = t.iter().filter(|x| x.event == TraceEvent::Retransmit).collect();
        assert_eq!(rtx[0].seq, LOST[0]);
        assert_eq!(rtx[0].time, t[fr].time);
        // The partial ACK (covering the first hole, not `recover`) retransmits the second at once.
        assert_eq!(rtx[1].seq, LOST[1]);
        let partial = t.iter().find(|x| x.event == TraceEvent::Ack && x.seq == LOST[1]).unwrap();
        assert_eq!(partial.time, rtx[1].time, "prr={prr}");
        assert_eq!(partial.ca_state, CaState::Recovery);
        // Recovery ends on the ACK covering `recover`, with cwnd = ssthresh.
        let exit = t.iter().find(|x| x.event == TraceEvent::Ack && x.time > rtx[1].time && x.ca_state == CaState::Open);
        let exit = exit.unwrap();
        assert!(exit.cwnd <= t[fr].ssthresh.unwrap() + 1, "prr={prr}: {} vs {:?}", exit.cwnd, t[fr].ssthresh);
        // PRR: cwnd during recovery never exceeds in flight + what was delivered.
        if prr == "on" {
            for x in t.iter().filter(|x| x.ca_state == CaState::Recovery && x.event == TraceEvent::DupAck) {
                assert!(x.cwnd <= x.in_flight + 2, "{x:?}");
            }
        }
    }
}

#[test]
fn rto_backoff_and_karn_on_a_lost_tail() {
    // The last segment and its first two retransmissions are lost: no duplicate ACKs can
    // come, so the timer fires three times, doubling each time.
    let mut p = Pipe::new(&helsinki("newreno"), PipeConfig::testbed(), 1).unwrap();
    p.server.enable_trace();
    let last = 1 + 2 + 256 * 400;
    let n = Rc::new(RefCell::new(0));
    let n2 = n.clone();
    p.set_drop_rule(move |d, s, _| {
        if d == Dir::Down && s.seq == last && s.len > 0 && *n2.borrow() < 3 {
            *n2.borrow_mut() += 1;
            return true;
        }
        false
    });
    let r = p.transfer(102_408).unwrap();
    assert_eq!(*n.borrow(), 3);
    assert_eq!(r.server.rto_expiries, 3);
    assert_eq!(r.server.fast_retransmits, 0);
    let rtos: Vec<_> = r.server_trace.iter().filter(|x| x.event == TraceEvent::Rto).collect();
    assert_eq!(rtos.len(), 3);
    for w in rtos.windows(2) {
        // The next expiry comes one (backed-off) RTO after the previous one ...
        let gap = (w[1].time - w[0].time).as_secs_f64();
        assert!(close(gap, w[0].rto, 1e-6), "{gap} vs {}", w[0].rto);
        // ... and each expiry doubles it (up to the 120 s maximum).
        assert!(close(w[1].rto, (2.0 * w[0].rto).min(120.0), 1e-9));
    }
    // Karn: the ACK of the retransmission gives no RTT sample, so the backoff stays.
    assert!(close(p.server.rto(), rtos[2].rto, 1e-9), "{} vs {}", p.server.rto(), rtos[2].rto);
}

#[test]
fn rto_after_an_ack_of_retransmitted_data_keeps_or_ends_the_backoff() {
    // The last two segments A and B are lost, and B's first retransmission too. RTO 1 (at one
    // RTO `base` after the tail was sent) doubles the timer and retransmits A alone (cwnd 1).
    // A's ACK acknowledges new data but gives no RTT sample (Karn: A was retransmitted), and
    // re-arms the timer; B's retransmission is lost, so RTO 2 fires one timer length after that
    // ACK. Linux (`rto_backoff_reset=sample`, the default): the backoff stays, the timer is
    // 2 base and RTO 2 makes it 4 base. `ack`: the ACK ends the backoff, the timer is base and
    // RTO 2 makes it 2 base.
    let b_seq = 3 + 256 * 400;
    let a_seq = b_seq - 256;
    for (mode, after_ack, after_rto2) in [("sample", 2.0, 4.0), ("ack", 1.0, 2.0)] {
        let cfg = TcpCcConfig::parse(&format!("newreno:preset=helsinki2018,receiver=rfc5681,rto_backoff_reset={mode}"))
            .unwrap();
        let mut p = Pipe::new(&cfg, PipeConfig::testbed(), 1).unwrap();
        p.server.enable_trace();
        let b_drops = Rc::new(RefCell::new(0));
        let b2 = b_drops.clone();
        p.set_drop_rule(move |d, s, _| {
            if d != Dir::Down || s.len == 0 {
                return false;
            }
            if s.seq == a_seq && !s.retransmission {
                return true;
            }
            if s.seq == b_seq && *b2.borrow() < 2 {
                *b2.borrow_mut() += 1;
                return true;
            }
            false
        });
        let r = p.transfer(102_408).unwrap();
        assert_eq!(*b_drops.borrow(), 2, "{mode}");
        assert_eq!(r.server.rto_expiries, 2, "{mode}");
        assert_eq!(r.server.fast_retransmits, 0, "{mode}");
        let t = &r.server_trace;
        let rtos: Vec<_> = t.iter().filter(|x| x.event == TraceEvent::Rto).collect();
        assert_eq!(rtos.len(), 2);
        assert_eq!(rtos[0].seq, a_seq);
        assert_eq!(rtos[1].seq, b_seq);
        // The unbacked RTO: RTO 1's record shows it doubled.
        let base = rtos[0].rto / 2.0;
        let ack = t.iter().find(|x| x.event == TraceEvent::Ack && x.time > rtos[0].time).unwrap();
        assert_eq!(ack.seq, b_seq, "{mode}: the ACK of A");
        assert!(close(ack.rto, after_ack * base, 1e-9), "{mode}: {} vs {}", ack.rto, after_ack * base);
        let gap = (rtos[1].time - ack.time).as_secs_f64();
        assert!(close(gap, after_ack * base, 1e-6), "{mode}: {gap} vs {}", after_ack * base);
        assert!(close(rtos[1].rto, after_rto2 * base, 1e-9), "{mode}: {} vs {}", rtos[1].rto, after_rto2 * base);
        assert_eq!(r.client.bytes_delivered, 2 + 102_408);
    }
}

#[test]
fn bbr_states_and_gains_on_the_testbed() {
    let mut p = Pipe::new(&helsinki("bbr"), PipeConfig::testbed(), 1).unwrap();
    p.server.enable_trace();
    let r = p.transfer(102_408).unwrap();
    let t = &r.server_trace;
    let mut modes: Vec<BbrMode> = vec![];
    for x in t {
        let m = x.bbr_mode.unwrap();
        if modes.last() != Some(&m) {
            modes.push(m);
        }
    }
    assert_eq!(&modes[..2], &[BbrMode::Startup, BbrMode::Drain], "{modes:?}");
    assert!(modes.contains(&BbrMode::ProbeBw) && modes.contains(&BbrMode::ProbeRtt), "{modes:?}");
    // The bottleneck is 30 kbit/s = 3750 B/s of 296-byte packets: BtlBw is exact, so every
    // ProbeBW pacing rate is one of the cycle gains times 3750 B/s.
    let link = 3750.0;
    for x in t.iter().filter(|x| x.bbr_mode == Some(BbrMode::ProbeBw)) {
        let g = x.pacing_rate.unwrap() / link;
        assert!([1.25, 0.75, 1.0].iter().any(|c| close(g, *c, 1e-6)), "{g}");
    }
    // Drain paces at 1/2.885 of it; ProbeRTT holds cwnd at 4.
    let drain = t.iter().find(|x| x.bbr_mode == Some(BbrMode::Drain)).unwrap();
    assert!(close(drain.pacing_rate.unwrap() / (link / 2.885), 1.0, 1e-6), "{:?}", drain.pacing_rate);
    for x in t.iter().filter(|x| x.bbr_mode == Some(BbrMode::ProbeRtt) && x.event == TraceEvent::Ack) {
        assert!(x.cwnd <= 4);
    }
    // The 4-segment floor holds outside loss recovery.
    for x in t.iter().filter(|x| x.event == TraceEvent::Ack) {
        assert!(x.cwnd >= 4, "{x:?}");
    }
    // ProbeRTT comes when the 10 s RTprop window expires without a lower sample.
    let first_rtt = t.iter().find(|x| x.bbr_mode == Some(BbrMode::ProbeRtt)).unwrap();
    let established = p.server.handshake_times().1.unwrap();
    let since = (first_rtt.time - established).as_secs_f64();
    assert!((10.0..11.5).contains(&since), "{since}");
}

#[test]
fn bbr_first_probe_bw_phase_is_never_the_drain_phase() {
    let mut seen_probe_up = false;
    for seed in 0..40 {
        let mut p = Pipe::new(&helsinki("bbr"), PipeConfig::testbed(), seed).unwrap();
        p.server.enable_trace();
        let r = p.transfer(102_408).unwrap();
        let first = r.server_trace.iter().find(|x| x.bbr_mode == Some(BbrMode::ProbeBw)).unwrap();
        let g = first.pacing_rate.unwrap() / 3750.0;
        assert!(!close(g, 0.75, 1e-6), "seed {seed}");
        seen_probe_up |= close(g, 1.25, 1e-6);
    }
    assert!(seen_probe_up);
}

#[test]
fn bbr_rto_sets_cwnd_to_one_then_restores() {
    // Tail loss under BBR: the RTO marks everything lost, cwnd 1, and the episode ends with
    // the saved cwnd restored. A 60 s RTprop window keeps ProbeRTT (which caps cwnd at 4
    // whatever the restore) out of the way.
    let cfg = TcpCcConfig::parse("bbr:preset=helsinki2018,min_rtt_window=60").unwrap();
    let mut p = Pipe::new(&cfg, PipeConfig::testbed(), 1).unwrap();
    drop_last_tx_once(&mut p, 20_000);
    let r = p.transfer(20_000).unwrap();
    assert_eq!(r.server.rto_expiries, 1);
    let i = r.server_trace.iter().position(|x| x.event == TraceEvent::Rto).unwrap();
    let before = r.server_trace[..i].iter().rev().find(|x| x.event == TraceEvent::Ack).unwrap().cwnd;
    assert_eq!(r.server_trace[i].cwnd, 1);
    assert_eq!(r.server_trace[i].ca_state, CaState::Loss);
    let after = r.server_trace[i + 1..].iter().find(|x| x.event == TraceEvent::Ack).unwrap();
    assert_eq!(after.ca_state, CaState::Open);
    assert!(after.cwnd >= before, "{} < {before}", after.cwnd);
}

#[test]
fn rto_backoff_rule_on_a_hand_made_loss_sequence() {
    // RFC 5681's receiver (ACK every second segment). A 12-segment response on a fast link
    // (0.1 s each way, RTO `base` = 0.6 s from the handshake's 0.2 s sample). Every first transmission is lost except segment 5's. RTO 1
    // fires one base after the initial window (segments 1-4) went out, doubles the timer and
    // starts go-back-N: retransmit 1 (cwnd 1) | 2, 3 (cwnd 2) | 4 and the new 5, 6 (cwnd 3).
    // The ACKs of 1 and of 2-3 cover only retransmitted data; the ACK of 4 and 5 is the one
    // ACK that covers a retransmitted segment and a segment sent once. Segment 6 is lost with
    // nothing behind it, so RTO 2 follows. What ends the backoff decides when and how long:
    //   sample (Linux): no ACK gives an RTT sample: RTO 2 comes 2 base after that ACK, 4 base long;
    //   new_data (the thesis's wording): that ACK ends it: RTO 2 comes 1 base after it, 2 base long;
    //   ack (ns-3): already the ACK of segment 1 ended it: the same as new_data here.
    for (mode, gap, rto2) in [("sample", 2.0, 4.0), ("new_data", 1.0, 2.0), ("ack", 1.0, 2.0)] {
        let cfg = TcpCcConfig::parse(&format!("newreno:preset=helsinki2018,receiver=rfc5681,rto_backoff_reset={mode}"))
            .unwrap();
        let mut p = Pipe::new(&cfg, fast_link(0.1), 1).unwrap();
        p.server.enable_trace();
        p.set_drop_rule(move |d, s, _| d == Dir::Down && s.len > 0 && !s.retransmission && s.seq != seg(5));
        let r = p.transfer(12 * 256).unwrap();
        assert_eq!(r.client.bytes_delivered, 12 * 256, "{mode}");
        let t = &r.server_trace;
        let rtos: Vec<_> = t.iter().filter(|x| x.event == TraceEvent::Rto).collect();
        assert!(rtos.len() >= 2, "{mode}: {rtos:?}");
        assert_eq!(rtos[0].seq, seg(1));
        let base = rtos[0].rto / 2.0;
        assert!(close(base, 0.6, 1e-5), "{mode}: {base}");
        let i = t.iter().position(|x| x.event == TraceEvent::Rto).unwrap();
        let sent: Vec<(TraceEvent, u64)> = t[i..]
            .iter()
            .filter(|x| matches!(x.event, TraceEvent::Send | TraceEvent::Retransmit))
            .take(6)
            .map(|x| (x.event, x.seq))
            .collect();
        let (rt, nw) = (TraceEvent::Retransmit, TraceEvent::Send);
        assert_eq!(
            sent,
            [(rt, seg(1)), (rt, seg(2)), (rt, seg(3)), (rt, seg(4)), (nw, seg(5)), (nw, seg(6))],
            "{mode}"
        );
        // The ACK of 4 and 5 (its number: the start of 6), then RTO 2 for segment 6.
        let mixed = t.iter().find(|x| x.event == TraceEvent::Ack && x.seq == seg(6)).unwrap();
        assert_eq!(rtos[1].seq, seg(6), "{mode}");
        let g = (rtos[1].time - mixed.time).as_secs_f64();
        assert!(close(g, gap * base, 1e-6), "{mode}: RTO 2 {g} s after the ACK, want {} s", gap * base);
        assert!(close(rtos[1].rto, rto2 * base, 1e-9), "{mode}: {} vs {}", rtos[1].rto, rto2 * base);
        // The counters behind the thesis's trace statements: the first RTO's time, and the
        // RTOs' loss episodes. RTO 1's ends with the ACK of 4 and 5 (everything sent before
        // it acknowledged); RTO 2's are RTO 2 to the ACK of segment 6's retransmission, and so on.
        assert_eq!(r.server.first_rto_at_s, Some(rtos[0].time.as_secs_f64()));
        assert_eq!(r.server.rto_episodes, r.server.rto_expiries, "{mode}");
        let first = (mixed.time - rtos[0].time).as_secs_f64();
        assert!(r.server.rto_episode_s > first, "{mode}");
    }
}

#[test]
fn rto_resending_and_loss_episode_on_a_hand_made_loss_sequence() {
    // RFC 5681's receiver. A 12-segment response on a fast link (0.1 s each way): the
    // initial window (segments 1-4) is lost, nothing else. RTO 1 resends 1 alone (cwnd 1); the receiver holds its ACK
    // for the 200 ms delayed-ACK timer (one segment, in order), so the ACK is back 0.4 s
    // after the RTO; 2 and 3 go out (cwnd 2) and their ACK, at once (two full segments), is
    // back 0.6 s after the RTO; 4 goes out with the new 5-7 (cwnd 4), the last resend. The
    // ACK of 4 and 5 (two full segments, at once) covers everything sent before the RTO
    // 0.8 s after it. So the RTO is followed by 0.6 s of resending (`rto_resend_s`) and a
    // 0.8 s loss episode (`rto_episode_s`).
    let rfc = TcpCcConfig::parse("newreno:preset=helsinki2018,receiver=rfc5681").unwrap();
    let mut p = Pipe::new(&rfc, fast_link(0.1), 1).unwrap();
    p.server.enable_trace();
    p.set_drop_rule(move |d, s, _| d == Dir::Down && s.len > 0 && !s.retransmission && s.seq <= seg(4));
    let r = p.transfer(12 * 256).unwrap();
    assert_eq!(r.client.bytes_delivered, 12 * 256);
    assert_eq!(r.server.rto_expiries, 1);
    assert_eq!(r.server.rto_episodes, 1);
    let t = &r.server_trace;
    let rto = t.iter().find(|x| x.event == TraceEvent::Rto).unwrap().time;
    let resent: Vec<(u64, f64)> =
        t.iter().filter(|x| x.event == TraceEvent::Retransmit).map(|x| (x.seq, (x.time - rto).as_secs_f64())).collect();
    let want = [(seg(1), 0.0), (seg(2), 0.4), (seg(3), 0.4), (seg(4), 0.6)];
    assert_eq!(resent.len(), want.len(), "{resent:?}");
    for ((s, dt), (ws, wdt)) in resent.iter().zip(want) {
        assert_eq!(*s, ws);
        assert!(close(*dt, wdt, 1e-4), "segment at {s}: {dt} s after the RTO, want {wdt}");
    }
    assert!(close(r.server.rto_resend_s, 0.6, 1e-4), "{}", r.server.rto_resend_s);
    assert!(close(r.server.rto_episode_s, 0.8, 1e-4), "{}", r.server.rto_episode_s);
}

#[test]
fn bbr_leaves_ssthresh_infinite_and_recovery_leaves_its_cwnd() {
    // Linux 4.15: `bbr_ssthresh` returns TCP_INFINITE_SSTHRESH, and `tcp_end_cwnd_reduction`
    // does nothing for a controller with `cong_control`, so leaving fast recovery does not
    // cut BBR's cwnd to ssthresh. Segment 30 of the response lost once on the testbed: a fast
    // recovery, then RTOs.
    let mut p = Pipe::new(&helsinki("bbr"), PipeConfig::testbed(), 1).unwrap();
    p.server.enable_trace();
    drop_first_tx(&mut p, &[3 + 256 * 30]);
    let r = p.transfer(102_408).unwrap();
    // (In Startup the queue outgrows the RTO: the retransmission's ACK is late, RTOs too.)
    assert!(r.server.fast_retransmits >= 1 && r.server.rto_expiries >= 1);
    let t = &r.server_trace;
    assert!(t.iter().all(|x| x.ssthresh.is_none()));
    // (So the end of recovery cannot cut cwnd to ssthresh.) Recovery ended.
    let fr = t.iter().position(|x| x.event == TraceEvent::FastRetransmit).unwrap();
    assert!(t[fr..].iter().any(|x| x.event == TraceEvent::Ack && x.ca_state == CaState::Open));
}

#[test]
fn the_minimum_rtt_is_the_last_acknowledged_segments() {
    // Linux tcp_ack_update_rtt: an ACK covering segments sent at 0 and 0.05 s, back at 0.3 s,
    // feeds the estimator with the first one's RTT (0.3 s: SRTT = 0.3 s) and the minimum RTT
    // (`tcp_update_rtt_min(sk, ca_rtt_us)`) with the last one's (0.25 s). No handshake sample.
    use coapcc_cc::Instant;
    use coapcc_tcp::{Connection, Segment};
    let cfg = TcpCcConfig::parse("newreno:preset=helsinki2018,handshake_rtt=off").unwrap();
    let mut s = Connection::server(&cfg, 1);
    let seg = |seq: u64, len: u32, ack: Option<u64>, syn: bool| Segment {
        seq,
        len,
        ack,
        syn,
        retransmission: false,
        header_bytes: 40,
    };
    let t = Instant::from_secs_f64;
    s.on_segment(t(0.0), &seg(0, 0, None, true));
    assert!(s.poll_transmit(t(0.0)).is_some_and(|x| x.syn));
    s.on_segment(t(0.0), &seg(1, 0, Some(1), false));
    assert!(s.is_established() && s.min_rtt().is_none());
    s.write(512);
    let a = s.poll_transmit(t(0.0)).unwrap();
    let b = s.poll_transmit(t(0.05)).unwrap();
    assert_eq!((a.seq, a.len, b.seq, b.len), (1, 256, 257, 256));
    s.on_segment(t(0.3), &seg(1, 0, Some(513), false));
    assert!(close(s.srtt().unwrap(), 0.3, 1e-9), "{:?}", s.srtt());
    assert!(close(s.min_rtt().unwrap(), 0.25, 1e-9), "{:?}", s.min_rtt());
}
