//! `coapcc-studies-bench`: the speed figures of BENCHMARKS.md (medians of repeated runs).
//!
//! ```sh
//! cargo run --release -p coapcc-studies --bin coapcc-studies-bench
//! ```
//! Prints, for one RTT scenario of 100 000 values replayed through several algorithms (on the
//! reliability layer, with the thesis's replay options) and for a 5-hour residual-bandwidth
//! run, the median wall time, plus the scenario generation alone as the baseline measured in
//! the same run.

use std::time::Instant;

use coapcc_cc::AlgorithmConfig;
use coapcc_studies::{resbw, rtt, scenarios, Dist, ResBwConfig, ScenarioOptions};

fn median_ms(reps: usize, mut f: impl FnMut()) -> f64 {
    let mut v: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let reps = 15;
    let opts = ScenarioOptions::default();
    let gen = median_ms(reps, || {
        std::hint::black_box(scenarios::generate(21, 1, &opts, None).unwrap());
    });
    println!("scenario 21 generation (100 000 values): median {gen:.2} ms  [baseline]");
    let rtts = scenarios::generate(21, 1, &opts, None).unwrap();
    for spec in ["default", "cocoa", "cocoa-plus", "pcocoa", "makarem-rto"] {
        let cfg = AlgorithmConfig::parse(spec).unwrap();
        let t = median_ms(reps, || {
            std::hint::black_box(rtt::replay(&cfg, &rtts, 1, &rtt::ReplayOptions::default(), None));
        });
        println!("rtt scenario 21, 100 000 messages, {spec:<12}: median {t:.2} ms ({:.1}x generation)", t / gen);
    }
    let cfg = ResBwConfig::default();
    let good = ResBwConfig {
        resbw: Dist::Uniform { a: 0.4, b: 0.6 },
        good: Some(Dist::Uniform { a: 1.7, b: 1.9 }),
        good_mean_s: 60.0,
        bad_mean_s: 300.0,
        ..ResBwConfig::default()
    };
    for spec in ["default", "cocoa-plus", "pcocoa", "idc-coap", "mbc-coap", "bdp-coap"] {
        let cc = AlgorithmConfig::parse(spec).unwrap();
        let mut n = 0;
        let t = median_ms(reps, || {
            n = std::hint::black_box(resbw::run(&cc, &cfg, None)).transmissions;
        });
        let t2 = median_ms(reps, || {
            std::hint::black_box(resbw::run(&cc, &good, None));
        });
        println!("resbw 5 h, U(0.6,1), {spec:<11}: median {t:.2} ms ({n} transmissions); good/bad set: {t2:.2} ms");
    }
}
