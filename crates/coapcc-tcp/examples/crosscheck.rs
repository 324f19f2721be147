//! The model's side of the ns-3 cross-check (`scripts/ns3_crosscheck.py`): one CoAP-over-TCP
//! transfer over `PipeConfig::testbed()` (the testbed chains of `coapcc-link`: 60/30 kbit/s,
//! 200/400 ms plus a constant 15 ms each way), printed as one JSON object, with the median wall
//! time of `--reps` runs.
//!
//! ```text
//! cargo run --release -p coapcc-tcp --example crosscheck -- --cc newreno:preset=helsinki2018 \
//!     --buffer 28200 --bytes 102408 --reps 200
//! ```

use std::time::Instant;

use coapcc_tcp::config::TcpCcConfig;
use coapcc_tcp::pipe::{Pipe, PipeConfig};

fn main() {
    let mut cc = "newreno:preset=helsinki2018".to_string();
    let mut buffer = 1_410_000u64;
    let mut bytes = 102_408u64;
    let mut reps = 100usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = |name: &str| args.next().unwrap_or_else(|| fail(&format!("{name} needs a value")));
        match a.as_str() {
            "--cc" => cc = val("--cc"),
            "--buffer" => buffer = val("--buffer").parse().unwrap_or_else(|_| fail("--buffer: bytes")),
            "--bytes" => bytes = val("--bytes").parse().unwrap_or_else(|_| fail("--bytes: bytes")),
            "--reps" => reps = val("--reps").parse().unwrap_or_else(|_| fail("--reps: a count")),
            o => fail(&format!("unknown argument '{o}' (--cc SPEC --buffer B --bytes N --reps R)")),
        }
    }
    if !(1..=100_000).contains(&reps) {
        fail("--reps must be in 1..=100000");
    }
    let cfg = TcpCcConfig::parse(&cc).unwrap_or_else(|e| fail(&format!("--cc {cc}: {e}")));
    let pipe = PipeConfig::testbed().with_buffer(buffer);
    let mut walls = Vec::with_capacity(reps);
    let mut last = None;
    for _ in 0..reps {
        let t = Instant::now();
        let r = Pipe::new(&cfg, pipe.clone(), 1)
            .unwrap()
            .transfer(bytes)
            .unwrap_or_else(|e| fail(&format!("transfer: {e:?}")));
        walls.push(t.elapsed().as_secs_f64());
        last = Some(r);
    }
    walls.sort_by(f64::total_cmp);
    let r = last.expect("at least one run");
    println!(
        "{{\"cc\": \"{cc}\", \"buffer\": {buffer}, \"bytes\": {bytes}, \"fct_s\": {}, \"setup_s\": {}, \
         \"request_at_s\": {}, \"server_segments_sent\": {}, \"server_data_segments_sent\": {}, \
         \"server_retransmitted\": {}, \"server_rtos\": {}, \"client_segments_sent\": {}, \
         \"buffer_drops_down\": {}, \"reps\": {reps}, \"wall_median_s\": {}}}",
        r.fct_s,
        r.setup_s,
        r.request_at_s,
        r.server.segments_sent,
        r.server.data_segments_sent,
        r.server.retransmitted_segments,
        r.server.rto_expiries,
        r.client.segments_sent,
        r.buffer_drops.1,
        walls[reps / 2]
    );
}

fn fail(msg: &str) -> ! {
    eprintln!("crosscheck: {msg}");
    std::process::exit(2);
}
