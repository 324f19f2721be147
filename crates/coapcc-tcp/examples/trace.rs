//! Print the server's trace of one transfer: `cargo run -p coapcc-tcp --example trace -- SPEC [BUFFER]`.
use coapcc_tcp::pipe::{Pipe, PipeConfig};
use coapcc_tcp::TcpCcConfig;

fn main() {
    let mut args = std::env::args().skip(1);
    let spec = args.next().unwrap_or_else(|| "newreno:preset=helsinki2018".into());
    let buffer: u64 = args.next().map(|b| b.parse().expect("buffer bytes")).unwrap_or(1_410_000);
    let cfg = TcpCcConfig::parse(&spec).unwrap_or_else(|e| panic!("{e}"));
    let mut p = Pipe::new(&cfg, PipeConfig::testbed().with_buffer(buffer), 1).unwrap();
    p.server.enable_trace();
    let r = p.transfer(102_408).expect("transfer completes");
    println!("time,event,seq,len,cwnd,ssthresh,in_flight,pacing_rate,bbr_mode,ca_state,rto");
    for t in &r.server_trace {
        println!(
            "{:.6},{},{},{},{},{},{},{},{},{},{:.3}",
            t.time.as_secs_f64(),
            t.event.name(),
            t.seq,
            t.len,
            t.cwnd,
            t.ssthresh.map(|s| s.to_string()).unwrap_or_default(),
            t.in_flight,
            t.pacing_rate.map(|s| format!("{s:.1}")).unwrap_or_default(),
            t.bbr_mode.map(|m| m.name()).unwrap_or(""),
            t.ca_state.name(),
            t.rto
        );
    }
    eprintln!("fct {:.3} s setup {:.3} s drops {:?} server {:?}", r.fct_s, r.setup_s, r.buffer_drops, r.server);
}
