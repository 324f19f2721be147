//! Specification §2 and §4: RFC 7252 rule, Default CoAP and its FullBackoff variants.
mod common;
use coapcc_cc::CongestionControl;
use common::*;

#[test]
fn d1a_rfc_defaults_t0_2() {
    let mut d = Driver::new("default:dither=off");
    let (timers, sends, give_up) = d.unanswered();
    assert_seq(&timers, &[2.0, 4.0, 8.0, 16.0, 32.0]);
    assert_seq(&sends, &[0.0, 2.0, 6.0, 14.0, 30.0]);
    assert_close(give_up, 62.0);
}

#[test]
fn d1b_rfc_defaults_t0_3_is_max_transmit_wait() {
    // T_0 = 3 is the top of U[2, 3]: ack_timeout 3 with dithering off gives the same timers.
    let mut d = Driver::new("default:dither=off,ack_timeout=3");
    let (timers, sends, give_up) = d.unanswered();
    assert_seq(&timers, &[3.0, 6.0, 12.0, 24.0, 48.0]);
    assert_seq(&sends, &[0.0, 3.0, 9.0, 21.0, 45.0]);
    assert_close(give_up, 93.0);
}

#[test]
fn d2_helsinki_cap_60() {
    let mut d = Driver::new("default:dither=off,ack_timeout=2.5,max_retransmit=20,backoff_cap=60");
    let (timers, sends, give_up) = d.unanswered();
    assert_eq!(timers.len(), 21);
    assert_seq(&timers[..8], &[2.5, 5.0, 10.0, 20.0, 40.0, 60.0, 60.0, 60.0]);
    assert_seq(&sends[..9], &[0.0, 2.5, 7.5, 17.5, 37.5, 77.5, 137.5, 197.5, 257.5]);
    assert_close(give_up, 77.5 + 16.0 * 60.0);
}

#[test]
fn rfc3_rfc4_give_up_times() {
    for (t0, last, give_up) in [(2.0, 962.0, 1022.0), (3.0, 993.0, 1053.0)] {
        let mut d = Driver::new(&format!("default:dither=off,ack_timeout={t0},max_retransmit=20,backoff_cap=60"));
        let (_, sends, g) = d.unanswered();
        assert_close(*sends.last().unwrap(), last);
        assert_close(g, give_up);
    }
}

#[test]
fn d3_nothing_carries_over() {
    let mut d = Driver::new("default");
    d.exchange(1, 4.0);
    for _ in 0..50 {
        let t = d.exchange(0, 0.5)[0];
        assert!((2.0..=3.0).contains(&t), "{t}");
    }
}

#[test]
fn fb1_vectors() {
    let mut d = Driver::new("default-fb1:dither=off");
    let mut got = vec![];
    let mut b = vec![];
    for n in [1, 1, 0, 0] {
        got.push(d.exchange(n, 0.1 + n as f64 * 10.0));
        b.push(d.cc.snapshot().retained.map(s));
    }
    assert_eq!(got, vec![vec![2.0, 4.0], vec![4.0, 8.0], vec![8.0], vec![2.0]]);
    assert_eq!(b, vec![Some(4.0), Some(8.0), None, None]);

    let mut d = Driver::new("default-fb1:dither=off");
    let got: Vec<_> = [3, 0, 0].iter().map(|&n| d.exchange(n, 40.0)).collect();
    assert_eq!(got, vec![vec![2.0, 4.0, 8.0, 16.0], vec![16.0], vec![2.0]]);
}

#[test]
fn fb2_vectors() {
    let mut d = Driver::new("default-fb2:dither=off");
    let mut got = vec![];
    let mut b = vec![];
    for n in [1, 1, 0, 0, 0] {
        got.push(d.exchange(n, 0.1 + n as f64 * 10.0));
        b.push(d.cc.snapshot().retained.map(s));
    }
    assert_eq!(got, vec![vec![2.0, 4.0], vec![4.0, 8.0], vec![8.0], vec![4.0], vec![2.0]]);
    assert_eq!(b, vec![Some(4.0), Some(8.0), Some(4.0), None, None]);

    let mut d = Driver::new("default-fb2:dither=off");
    let mut b = vec![];
    let got: Vec<_> = [3, 0, 0, 0, 0]
        .iter()
        .map(|&n| {
            let t = d.exchange(n, 40.0);
            b.push(d.cc.snapshot().retained.map(s));
            t
        })
        .collect();
    assert_eq!(got, vec![vec![2.0, 4.0, 8.0, 16.0], vec![16.0], vec![8.0], vec![4.0], vec![2.0]]);
    assert_eq!(b, vec![Some(16.0), Some(8.0), Some(4.0), None, None]);
}

#[test]
fn fb_ambiguity_parameters() {
    // AMBIG-4 next-doubled retains 2T.
    let mut d = Driver::new("default-fb1:dither=off,fb_retained=next-doubled");
    d.exchange(1, 5.0);
    assert_eq!(d.cc.snapshot().retained.map(s), Some(8.0));
    // AMBIG-6 use the floor once.
    let mut d = Driver::new("default-fb2:dither=off,fb2_use_floor_once=on");
    let got: Vec<_> = [1, 0, 0, 0].iter().map(|&n| d.exchange(n, 3.0)).collect();
    assert_eq!(got, vec![vec![2.0, 4.0], vec![4.0], vec![2.0], vec![2.0]]);
    assert_eq!(d.cc.snapshot().retained, None);
    // AMBIG-5 re-dither: the retained 4 s becomes U[4, 6].
    let mut d = Driver::new("default-fb1:fb_redither=on");
    d.exchange(1, 5.0);
    let b = s(d.cc.snapshot().retained.unwrap());
    let t = d.exchange(0, 0.5)[0];
    assert!(t >= b && t <= 1.5 * b, "{t} {b}");
}

#[test]
fn fb_give_up_retains_last_armed_timer() {
    let mut d = Driver::new("default-fb1:dither=off");
    let (timers, _, _) = d.unanswered();
    assert_eq!(d.cc.snapshot().retained.map(s), Some(*timers.last().unwrap()));
}

#[test]
fn dither_modes() {
    // libcoap: 256 values from 2.0 to 2.99609375 s, on a 1 ms grid.
    let mut d = Driver::new("default:dither=libcoap-8bit");
    for _ in 0..300 {
        let t = d.exchange(0, 0.1)[0];
        assert!((2.0..=2.997).contains(&t), "{t}");
        assert!(close((t * 1000.0).round(), t * 1000.0), "{t}");
    }
    // Contiki: 3 s + k/128 s, k in 0..=192.
    let mut d = Driver::new("default:preset=ancillotti-cooja");
    let mut max: f64 = 0.0;
    for _ in 0..2000 {
        let t = d.exchange(0, 0.1)[0];
        assert!((3.0..=4.5).contains(&t), "{t}");
        let k = (t - 3.0) * 128.0;
        assert!(close(k, k.round()), "{t}");
        max = max.max(t);
    }
    assert!(max > 4.45);
}

#[test]
fn contiki_no_wait_after_last() {
    let mut d = Driver::new("default:dither=off,wait_after_last=off");
    let (timers, sends, give_up) = d.unanswered();
    assert_seq(&timers, &[2.0, 4.0, 8.0, 16.0, 0.0]);
    assert_close(*sends.last().unwrap(), 30.0);
    assert_close(give_up, 30.0);
}
