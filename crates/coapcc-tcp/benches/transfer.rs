//! One error-free 102 400-byte CoAP-over-TCP transfer (102 408 bytes with the CoAP header)
//! over the testbed link, New Reno and BBR (helsinki2018). Target: under 2 ms each.
//! Baseline in the same run: the bare handshake plus a one-segment exchange.
//!
//! `nice -n 10 cargo bench -p coapcc-tcp --bench transfer`

use criterion::{black_box, criterion_group, criterion_main, Criterion};

use coapcc_tcp::pipe::{Pipe, PipeConfig};
use coapcc_tcp::TcpCcConfig;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("tcp_transfer");
    for spec in ["newreno:preset=helsinki2018", "bbr:preset=helsinki2018"] {
        let cfg = TcpCcConfig::parse(spec).expect("valid spec");
        g.bench_function(format!("{}/102408B", cfg.name()), |b| {
            b.iter(|| {
                let mut p = Pipe::new(&cfg, PipeConfig::testbed(), 1).unwrap();
                black_box(p.transfer(102_408).expect("completes").fct_s)
            })
        });
        g.bench_function(format!("{}/baseline_1seg", cfg.name()), |b| {
            b.iter(|| {
                let mut p = Pipe::new(&cfg, PipeConfig::testbed(), 1).unwrap();
                black_box(p.transfer(64).expect("completes").fct_s)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
