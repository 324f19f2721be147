//! Per-event cost of every algorithm: start of an exchange, a timer expiry, an ACK.
//!
//! Run with `cargo bench -p coapcc-cc --bench events`. Each iteration is one event on a warm
//! instance whose state has seen a realistic mix of clean and retransmitted exchanges.
use std::hint::black_box;
use std::time::Duration;

use coapcc_cc::{AckInfo, AlgorithmConfig, CongestionControl, Instant, SplitMix64, TimeoutAction, ALGORITHMS};
use criterion::{criterion_group, criterion_main, Criterion};

fn warm(spec: &str) -> (coapcc_cc::Algorithm, SplitMix64, Instant) {
    let mut cc = AlgorithmConfig::parse(spec).unwrap().build();
    let mut rng = SplitMix64::new(42);
    let mut now = Instant::ZERO;
    for i in 0..64u64 {
        let mut ex = cc.start_exchange(now, 0, &mut rng);
        if i % 5 == 0 {
            now = now + ex.timer();
            let _ = cc.on_timeout(now, &mut ex);
        }
        now = now + Duration::from_millis(600 + (i * 37) % 400);
        cc.on_ack(now, &ex, &AckInfo::new(&ex, now));
    }
    (cc, rng, now)
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("event");
    g.warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_millis(800)).sample_size(30);
    for info in ALGORITHMS {
        let spec = format!("{}:max_retransmit=20", info.name);
        let (mut cc, mut rng, now) = warm(&spec);
        g.bench_function(format!("{}/start", info.name), |b| {
            b.iter(|| black_box(cc.start_exchange(black_box(now), 0, &mut rng)))
        });
        let (mut cc, mut rng, now) = warm(&spec);
        let ex0 = cc.start_exchange(now, 0, &mut rng);
        g.bench_function(format!("{}/timeout", info.name), |b| {
            b.iter(|| {
                let mut ex = ex0;
                black_box(matches!(cc.on_timeout(black_box(now), &mut ex), TimeoutAction::Retransmit(_)))
            })
        });
        let (mut cc, mut rng, now) = warm(&spec);
        let ex = cc.start_exchange(now, 0, &mut rng);
        let t = now + Duration::from_millis(700);
        let ack = AckInfo::new(&ex, t);
        g.bench_function(format!("{}/ack", info.name), |b| {
            b.iter(|| cc.on_ack(black_box(t), black_box(&ex), black_box(&ack)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
