//! `coapcc-sim-tcp-bench`: the cost of one 102 400-byte transfer through the simulator, over
//! TCP (`transport = tcp`, `bulk:102400`) and as Block2 over UDP (build with `--release`).
//!
//! ```text
//! cargo run --release -p coapcc-sim --bin coapcc-sim-tcp-bench
//! ```
//!
//! Prints medians of many runs (after a warm-up), error-free, one client, 28 200 B buffers:
//! the simulator's TCP transfer with New Reno and BBR (`helsinki2018`), the same transfer in
//! the TCP model's harness (`coapcc_tcp::pipe`, the baseline: the model alone on the same
//! `coapcc-link` chains, without the engine) and the ratio, a 4-client error-free run, and the
//! Block2 transfer over UDP on the full endpoint model.

use std::time::Instant;

use coapcc_sim::{simulate, GroupConfig, SimConfig, Transport, WorkloadKind};
use coapcc_tcp::pipe::{Pipe, PipeConfig};
use coapcc_tcp::TcpCcConfig;

fn bulk(cc: &str, clients: u32, transport: Transport) -> SimConfig {
    let mut c = SimConfig { groups: vec![GroupConfig { cc: cc.into(), clients }], transport, ..SimConfig::default() };
    c.workload.kind = WorkloadKind::Bulk(102_400);
    c.link.set_buffer_bytes(28_200);
    c
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median wall time of `f`, seconds, over `n` runs after `n / 10 + 1` warm-up runs.
fn time(n: usize, mut f: impl FnMut()) -> f64 {
    for _ in 0..n / 10 + 1 {
        f();
    }
    median(
        (0..n)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

fn main() {
    let n = 201;
    println!("one 102 400-byte transfer, error-free, 28 200 B buffers; medians of {n} runs");
    for cc in ["newreno:preset=helsinki2018", "bbr:preset=helsinki2018"] {
        let cfg = bulk(cc, 1, Transport::Tcp);
        let r = simulate(&cfg).expect("valid");
        let f = &r.flows[0];
        let sim = time(n, || {
            simulate(&cfg).expect("valid");
        });
        let tcc = TcpCcConfig::parse(cc).expect("valid");
        let pr = Pipe::new(&tcc, PipeConfig::testbed().with_buffer(28_200), 1)
            .unwrap()
            .transfer(102_408)
            .expect("completes");
        let pipe = time(n, || {
            Pipe::new(&tcc, PipeConfig::testbed().with_buffer(28_200), 1)
                .unwrap()
                .transfer(102_408)
                .expect("completes");
        });
        println!(
            "  {:8} simulator {:7.3} ms (FCT {:.3} s, {} segments, {} events) | pipe baseline {:7.3} ms \
             (FCT {:.3} s, {} segments) | ratio {:.2}",
            cc.split(':').next().unwrap_or(cc),
            sim * 1e3,
            f.fct_s.unwrap_or(f64::NAN),
            f.segments_sent.unwrap_or(0),
            r.events,
            pipe * 1e3,
            pr.fct_s,
            pr.server.segments_sent,
            sim / pipe
        );
    }
    let cfg = bulk("newreno:preset=helsinki2018", 4, Transport::Tcp);
    let t = time(n / 4, || {
        simulate(&cfg).expect("valid");
    });
    println!("  newreno, 4 clients sharing the link: {:.3} ms", t * 1e3);
    let cfg = bulk("default:preset=helsinki2018", 1, Transport::Udp);
    let r = simulate(&cfg).expect("valid");
    let t = time(n / 4, || {
        simulate(&cfg).expect("valid");
    });
    println!(
        "  Block2 over UDP (default, full endpoints): {:.3} ms (FCT {:.3} s, {} events)",
        t * 1e3,
        r.flows[0].fct_s.unwrap_or(f64::NAN),
        r.events
    );
}
