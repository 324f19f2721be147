//! `recover_hold`: Linux's hold of Recovery and an RTO's Loss while the ACKs reach
//! `high_seq` exactly (`tcp_try_undo_recovery`, Reno), on hand-made loss sequences, and the
//! default (off), which ends the episode there.

mod common;

use std::cell::RefCell;
use std::rc::Rc;

use coapcc_tcp::app::MessageSizes;
use coapcc_tcp::pipe::{Dir, Pipe, PipeConfig};
use coapcc_tcp::{CaState, TcpCcConfig, TraceEvent};
use common::{close, drop_last_tx_once, fast_link, seg};

#[test]
fn bbr_rto_with_recover_hold_is_held_until_the_next_exchange() {
    // Tail loss under BBR (traces.rs's bbr_rto_sets_cwnd_to_one_then_restores) with
    // `recover_hold=on`: the RTO sets cwnd 1, the resend's ACK covers exactly `high_seq`, so
    // the episode is held in Loss (Linux tcp_try_undo_recovery, Reno) until the next
    // exchange's data is acknowledged, which ends it with the saved cwnd restored. A 60 s
    // RTprop window keeps ProbeRTT (which caps cwnd at 4) out of the way.
    let cfg = TcpCcConfig::parse("bbr:preset=helsinki2018,min_rtt_window=60,recover_hold=on").unwrap();
    let mut p = Pipe::new(&cfg, PipeConfig::testbed(), 1).unwrap();
    drop_last_tx_once(&mut p, 20_000);
    let r = p.exchanges(MessageSizes { csm: 2, request: 9, response: 20_000 }, 2).unwrap();
    assert_eq!(r.server.rto_expiries, 1);
    let i = r.server_trace.iter().position(|x| x.event == TraceEvent::Rto).unwrap();
    let before = r.server_trace[..i].iter().rev().find(|x| x.event == TraceEvent::Ack).unwrap().cwnd;
    assert_eq!(r.server_trace[i].cwnd, 1);
    assert_eq!(r.server_trace[i].ca_state, CaState::Loss);
    let held = r.server_trace[i + 1..].iter().find(|x| x.event == TraceEvent::Ack).unwrap();
    assert_eq!((held.seq, held.ca_state), (1 + 2 + 20_000, CaState::Loss));
    let after = r.server_trace[i + 1..].iter().find(|x| x.event == TraceEvent::Ack && x.seq > held.seq).unwrap();
    assert_eq!(after.ca_state, CaState::Open);
    assert!(after.cwnd >= before, "{} < {before}", after.cwnd);
}

/// New Reno (helsinki2018, RFC 5681's receiver, `extra` parameters) on a fast link (0.1 s
/// each way), a 12-segment response whose segments 1-5 are lost on their first transmission.
fn first_five_lost(extra: &str) -> coapcc_tcp::pipe::TransferResult {
    let rfc = TcpCcConfig::parse(&format!("newreno:preset=helsinki2018,receiver=rfc5681,{extra}")).unwrap();
    let mut p = Pipe::new(&rfc, fast_link(0.1), 1).unwrap();
    p.server.enable_trace();
    p.set_drop_rule(move |d, s, _| d == Dir::Down && s.len > 0 && !s.retransmission && s.seq <= seg(5));
    let r = p.transfer(12 * 256).unwrap();
    assert_eq!(r.client.bytes_delivered, 12 * 256, "{extra}");
    r
}

/// New Reno (helsinki2018, RFC 5681's receiver, `extra` parameters) on a fast link, a
/// 40-segment response: segment 9's first transmission is lost, and so is the first new
/// segment sent after its fast retransmission (the one starting at `high_seq`). Returns the
/// result and that segment's sequence number.
fn hole_then_loss_at_high_seq(extra: &str) -> (coapcc_tcp::pipe::TransferResult, u64) {
    let cfg = TcpCcConfig::parse(&format!("newreno:preset=helsinki2018,receiver=rfc5681,{extra}")).unwrap();
    let mut p = Pipe::new(&cfg, fast_link(0.1), 1).unwrap();
    p.server.enable_trace();
    let lost_after = Rc::new(RefCell::new(None::<u64>));
    let l = Rc::clone(&lost_after);
    let mut seen_rtx = false;
    p.set_drop_rule(move |d, s, _| {
        if d != Dir::Down || s.len == 0 {
            return false;
        }
        if s.seq == seg(9) {
            seen_rtx |= s.retransmission;
            return !s.retransmission;
        }
        if seen_rtx && !s.retransmission && l.borrow().is_none() {
            *l.borrow_mut() = Some(s.seq);
            return true;
        }
        false
    });
    let r = p.transfer(40 * 256).unwrap();
    assert_eq!(r.client.bytes_delivered, 40 * 256, "{extra}");
    let high = lost_after.borrow().expect("a new segment followed the fast retransmit");
    (r, high)
}

#[test]
fn a_loss_episode_acked_exactly_to_high_seq_is_held_until_the_next_rto() {
    // `recover_hold=on`, Linux tcp_try_undo_recovery (Reno): the episode is held until an ACK covers more than
    // `high_seq`; duplicate ACKs meanwhile count for nothing. RFC 5681's receiver, a fast link
    // (0.1 s each way), a 12-segment response; the first transmissions of 1-5 are lost.
    // RTO 1 (at T, RTO 0.6 s) resends 1, cwnd 1, ssthresh 2. Its ACK (delayed 200 ms) at
    // T + 0.4: cwnd 2, 2 and 3 resent; their ACK at T + 0.6: cwnd 3 (slow start to ssthresh,
    // then one in congestion avoidance), 4 resent with the new 5 (lost again) and 6. 6 comes
    // out of order, so the ACK of 4, exactly `high_seq`, is back at T + 0.8: held in Loss,
    // 2 in flight, the new 7 goes out. Its duplicate ACK (T + 1.0) starts nothing; 3 in
    // flight fill cwnd. RTO 2 comes one backed-off RTO (1.2 s) after that ACK and resends 5;
    // its ACK (T2 + 0.2) covers 5-7, again exactly `high_seq` (the end of 7): held, nothing
    // left to resend, 8-10 go out, and the ACK of 8 and 9 (T2 + 0.4) ends the episode. Two
    // RTOs, five retransmissions, no fast retransmit (leaving Loss at `high_seq`, the model
    // had sent 8 and 9 on the duplicate ACKs and fast-retransmitted 5 at T + 1.4).
    let r = first_five_lost("recover_hold=on");
    assert_eq!((r.server.rto_expiries, r.server.fast_retransmits), (2, 0));
    let t = &r.server_trace;
    let rtos: Vec<_> = t.iter().filter(|x| x.event == TraceEvent::Rto).collect();
    let t1 = rtos[0].time;
    let at =
        |x: &coapcc_tcp::TraceRecord, t0: coapcc_cc::Instant, dt: f64| close((x.time - t0).as_secs_f64(), dt, 1e-4);
    let resent: Vec<u64> = t.iter().filter(|x| x.event == TraceEvent::Retransmit).map(|x| x.seq).collect();
    assert_eq!(resent, [seg(1), seg(2), seg(3), seg(4), seg(5)]);
    let held = t.iter().find(|x| x.event == TraceEvent::Ack && x.seq == seg(5)).unwrap();
    assert!(at(held, t1, 0.8), "{:?}", held.time - t1);
    assert_eq!((held.ca_state, held.cwnd, held.in_flight), (CaState::Loss, 3, 2));
    let dups: Vec<_> = t.iter().filter(|x| x.event == TraceEvent::DupAck && x.time < rtos[1].time).collect();
    assert_eq!(dups.len(), 1, "{dups:?}");
    assert!(at(dups[0], t1, 1.0));
    assert_eq!((dups[0].seq, dups[0].ca_state, dups[0].in_flight), (seg(5), CaState::Loss, 3));
    // RTO 2: one backed-off RTO (2 x 0.6 s) after the held ACK, resending 5.
    assert!(close(held.rto, 1.2, 1e-4) && at(rtos[1], held.time, 1.2));
    let rtx5 = t.iter().find(|x| x.event == TraceEvent::Retransmit && x.seq == seg(5)).unwrap();
    assert_eq!(rtx5.time, rtos[1].time);
    let again = t.iter().find(|x| x.event == TraceEvent::Ack && x.seq == seg(8)).unwrap();
    assert!(at(again, rtos[1].time, 0.2));
    assert_eq!(again.ca_state, CaState::Loss);
    let open = t.iter().find(|x| x.event == TraceEvent::Ack && x.seq == seg(10)).unwrap();
    assert!(at(open, rtos[1].time, 0.4));
    assert_eq!(open.ca_state, CaState::Open);
}

#[test]
fn a_recovery_acked_exactly_to_high_seq_starts_no_second_fast_retransmit() {
    // One hole (segment 9) repaired by fast retransmit; the first new segment sent after that
    // retransmission (the one starting at `high_seq`) is lost too. The retransmission's ACK
    // is then exactly `high_seq`: with `recover_hold=on` Recovery is held (Linux tcp_try_undo_recovery; RFC 6582 §3.2
    // step 2), the duplicate ACKs that follow start no second fast retransmit, and the lost
    // segment waits for the RTO. With PRR and with RFC 6582's inflation.
    for prr in ["on", "off"] {
        let (r, high) = hole_then_loss_at_high_seq(&format!("prr={prr},recover_hold=on"));
        let t = &r.server_trace;
        assert_eq!((r.server.fast_retransmits, r.server.rto_expiries), (1, 1), "prr={prr}");
        let full = t.iter().find(|x| x.event == TraceEvent::Ack && x.seq == high).unwrap();
        assert_eq!(full.ca_state, CaState::Recovery, "prr={prr}");
        let rto = t.iter().find(|x| x.event == TraceEvent::Rto).unwrap();
        let dups: Vec<_> =
            t.iter().filter(|x| x.event == TraceEvent::DupAck && x.time > full.time && x.time < rto.time).collect();
        assert!(dups.len() >= 3, "prr={prr}: {} duplicate ACKs", dups.len());
        assert!(dups.iter().all(|x| x.ca_state == CaState::Recovery && x.seq == high), "prr={prr}");
        let rtx: Vec<_> = t.iter().filter(|x| x.event == TraceEvent::Retransmit).map(|x| (x.seq, x.time)).collect();
        assert_eq!(rtx[1], (high, rto.time), "prr={prr}: {rtx:?}");
    }
}

#[test]
fn recover_hold_is_off_by_default_and_an_ack_of_high_seq_ends_the_episode() {
    // Linux's and the study's presets leave `recover_hold` off (the option alone takes the
    // model further from a real kernel: docs/tcp.md), and the two scenarios above then run as
    // before the option existed.
    for spec in ["newreno", "bbr", "newreno:preset=helsinki2018", "bbr:preset=helsinki2018"] {
        let c = TcpCcConfig::parse(spec).unwrap();
        assert!(!c.tcp.recover_hold && c.to_string().contains(",recover_hold=off"), "{spec}");
    }
    // Segments 1-5 lost: the ACK of 4, exactly `high_seq`, ends the RTO's episode; the
    // duplicate ACKs that follow count, and 5 is fast-retransmitted (held, the model waits for
    // a second RTO instead).
    let r = first_five_lost("");
    let t = &r.server_trace;
    assert_eq!((r.server.rto_expiries, r.server.fast_retransmits), (1, 1));
    let rto = t.iter().find(|x| x.event == TraceEvent::Rto).unwrap();
    let full = t.iter().find(|x| x.event == TraceEvent::Ack && x.seq == seg(5)).unwrap();
    assert!(close((full.time - rto.time).as_secs_f64(), 0.8, 1e-4), "{:?}", full.time - rto.time);
    assert_eq!(full.ca_state, CaState::Open);
    let fr = t.iter().find(|x| x.event == TraceEvent::FastRetransmit).unwrap();
    assert_eq!(fr.seq, seg(5));
    assert!(fr.time > full.time);
    // A hole, then a loss at `high_seq`: the retransmission's ACK ends Recovery and the
    // duplicate ACKs start a second fast retransmit, of that segment, before any RTO.
    for prr in ["on", "off"] {
        let (r, high) = hole_then_loss_at_high_seq(&format!("prr={prr}"));
        let t = &r.server_trace;
        let full = t.iter().find(|x| x.event == TraceEvent::Ack && x.seq == high).unwrap();
        assert_eq!(full.ca_state, CaState::Open, "prr={prr}");
        let frs: Vec<_> = t.iter().filter(|x| x.event == TraceEvent::FastRetransmit).map(|x| x.seq).collect();
        assert_eq!(frs, [seg(9), high], "prr={prr}");
        assert_eq!(r.server.rto_expiries, 0, "prr={prr}");
    }
}
