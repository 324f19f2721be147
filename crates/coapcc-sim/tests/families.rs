//! One end-to-end run per algorithm family, with the qualitative behaviour the papers
//! describe.
//!
//! Two scenarios:
//! - *small buffer*: 50 clients, 2 500 B buffers, 50 exchanges. The downlink is the
//!   bottleneck (50·50 responses of 94 B need 62.7 s of serialisation); every flow must finish
//!   without failures, with the downlink nearly always busy and few retransmissions.
//! - *bufferbloat*: 100 clients, 1 410 000 B buffers, 20 exchanges. Nothing is ever dropped,
//!   the queueing delay grows to many seconds, and Default CoAP's 2–3 s timers fire
//!   spuriously (ANRW 2018). Algorithms that retain the backoff (FullBackoff) or estimate the
//!   RTT (CoCoA, FASOR, pCoCoA, Californium's CoCoA) must retransmit less than Default CoAP.

use coapcc_sim::{simulate, GroupConfig, SimConfig, SimReport};

fn scenario(cc: &str, clients: u32, buffer: u64, exchanges: u32) -> SimConfig {
    let mut c = SimConfig { groups: vec![GroupConfig { cc: cc.into(), clients }], ..SimConfig::default() };
    c.link.set_buffer_bytes(buffer);
    c.workload.exchanges = exchanges;
    c
}

fn run(cfg: &SimConfig) -> SimReport {
    let r = simulate(cfg).unwrap_or_else(|e| panic!("{e}"));
    assert!(!r.truncated);
    for l in [&r.links.uplink, &r.links.downlink] {
        assert_eq!(l.offered_packets, l.delivered_packets + l.buffer_drop_packets + l.error_loss_packets);
    }
    r
}

fn retransmissions(r: &SimReport) -> u64 {
    r.flows.iter().map(|f| f.retransmissions).sum()
}

fn small_buffer(cc: &str) {
    let r = run(&scenario(cc, 50, 2_500, 50));
    let g = &r.groups[0];
    assert_eq!(g.finished_flows, 50, "{cc}");
    assert_eq!(g.failed_exchanges, 0, "{cc}");
    assert_eq!(g.completed_exchanges, 2_500, "{cc}");
    let fct = g.fct_s.unwrap();
    assert!(fct.median >= 55.0 && fct.median < 150.0, "{cc}: median FCT {}", fct.median);
    assert!(r.links.downlink.busy_fraction > 0.9, "{cc}: {}", r.links.downlink.busy_fraction);
    let per_exchange = retransmissions(&r) as f64 / 2_500.0;
    assert!(per_exchange < 1.0, "{cc}: {per_exchange} retransmissions per exchange");
}

fn bufferbloat(cc: &str) -> u64 {
    let r = run(&scenario(cc, 100, 1_410_000, 20));
    assert_eq!(r.groups[0].finished_flows, 100, "{cc}");
    assert_eq!(r.links.downlink.buffer_drop_packets, 0);
    // Nothing is lost: every retransmission is unnecessary.
    let unnecessary: u64 = r.flows.iter().map(|f| f.unnecessary_retransmissions).sum();
    assert_eq!(unnecessary, retransmissions(&r), "{cc}");
    retransmissions(&r)
}

fn fewer_than_default(cc: &str) {
    let default = bufferbloat("default:preset=helsinki2018");
    let other = bufferbloat(cc);
    assert!(other < default, "{cc}: {other} retransmissions, Default CoAP {default}");
}

#[test]
fn default_coap() {
    small_buffer("default:preset=helsinki2018");
    let n = bufferbloat("default:preset=helsinki2018");
    assert!(n > 100 * 20 / 2, "Default CoAP should retransmit spuriously under bufferbloat: {n}");
}

#[test]
fn default_full_backoff() {
    for cc in ["default-fb1:preset=helsinki2018", "default-fb2:preset=helsinki2018"] {
        small_buffer(cc);
        fewer_than_default(cc);
    }
}

#[test]
fn mixed_default_and_full_backoff() {
    // ANRW's mixed runs: half Default CoAP, half FullBackoff1.
    let mut c = scenario("default:preset=helsinki2018", 50, 1_410_000, 20);
    c.groups.push(GroupConfig { cc: "default-fb1:preset=helsinki2018".into(), clients: 50 });
    let r = run(&c);
    let (d, fb) = (&r.groups[0], &r.groups[1]);
    assert_eq!(d.finished_flows + fb.finished_flows, 100);
    assert!(fb.retransmissions < d.retransmissions, "{} vs {}", fb.retransmissions, d.retransmissions);
}

#[test]
fn cocoa_family() {
    for cc in ["cocoa:preset=helsinki2018", "cocoa-fb1:preset=helsinki2018", "cocoa-fb2:preset=helsinki2018"] {
        small_buffer(cc);
        fewer_than_default(cc);
    }
}

#[test]
fn fasor_family() {
    for cc in ["fasor:preset=helsinki2018", "fasor-token:preset=helsinki2018"] {
        small_buffer(cc);
        fewer_than_default(cc);
    }
}

#[test]
fn pcocoa() {
    small_buffer("pcocoa");
    fewer_than_default("pcocoa");
}

#[test]
fn californium_cocoa() {
    small_buffer("californium-cocoa");
    fewer_than_default("californium-cocoa");
}

#[test]
fn copy_identification_with_errors() {
    // FASOR+token takes the echoed ordinal; both server modes must run to completion.
    for mode in [coapcc_sim::DuplicateMode::AnswerEachCopy, coapcc_sim::DuplicateMode::ReplayCached] {
        let mut c = scenario("fasor-token:preset=helsinki2018", 10, 2_500, 50);
        c.link
            .set_loss(&coapcc_sim::link::LossModel::profile("high", coapcc_sim::link::ErrorClock::Time, 5.0).unwrap());
        c.server.duplicate_mode = mode;
        let r = run(&c);
        assert_eq!(r.groups[0].finished_flows, 10);
        assert!(r.links.downlink.error_loss_packets > 0);
    }
}
