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
