//! Stand-in endpoints for tests and validation (binary `coapcc-emu-probe`).
//!
//! - `coap-server` / `coap-client`: the simulator's workload on real sockets. The client
//!   sends `CON GET /hello` with a 1-byte token (11 B of CoAP, 39 B on the wire over IPv4);
//!   the server answers every copy with a piggybacked `ACK 2.05` carrying a 60-byte payload
//!   (66 B of CoAP, 94 B on the wire), the simulator's default sizes (`coapcc_sim::message_sizes`).
//!   The client runs N flows of `--count` stop-and-wait exchanges, each driven by a
//!   [`coapcc_cc`] algorithm with the simulator's dither stream, and reports each flow's FCT
//!   (first request sent → last response received), transmissions and failures as JSON.
//! - `udp-echo` / `udp-ping`: stop-and-wait RTT measurement.
//! - `udp-blast` / `udp-sink`: a bounded burst of datagrams and their arrival times.
//! - `tcp-send` / `tcp-sink`: a kernel TCP transfer and its byte arrival times.
//!
//! Every tool is bounded in time (`--max-seconds`) and count. Each asks for SCHED_FIFO
//! priority 5 (below the forwarder's 10) when permitted, so that its own wake-ups on a loaded
//! machine do not blur what is measured; none of them busy-waits.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use coapcc_cc::{
    AckInfo, Algorithm, AlgorithmConfig, CongestionControl, Exchange, GiveUpReason, SplitMix64, TimeoutAction,
};
use serde::Serialize;

use crate::sys;

#[derive(Parser, Debug)]
#[command(name = "coapcc-emu-probe", about = "Stand-in endpoints for the coapcc emulator's tests and validation")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Answer every CON request with ACK 2.05 and a fixed payload.
    CoapServer {
        #[arg(long, default_value = "0.0.0.0:5683")]
        bind: SocketAddr,
        /// Response payload bytes (default 60: 94-byte packets over IPv4).
        #[arg(long, default_value_t = 60)]
        payload: usize,
        #[arg(long, default_value_t = 3600.0)]
        max_seconds: f64,
    },
    /// Run N flows of stop-and-wait CoAP exchanges; print a JSON report.
    CoapClient {
        #[arg(long)]
        server: SocketAddr,
        /// Exchanges per flow.
        #[arg(long, default_value_t = 50)]
        count: u32,
        /// Concurrent flows (one socket each), all starting at once.
        #[arg(long, default_value_t = 1)]
        clients: u32,
        /// Congestion control `NAME[:key=value,...]`.
        #[arg(long, default_value = "default:preset=helsinki2018")]
        cc: String,
        /// Seed of the dither streams (stream 2^32 + client, as in the simulator).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Index of the first client (for dither streams when flows are split over
        /// processes).
        #[arg(long, default_value_t = 0)]
        first_client: u32,
        #[arg(long, default_value = "hello")]
        path: String,
        #[arg(long, default_value_t = 3600.0)]
        max_seconds: f64,
    },
    /// Echo every datagram back.
    UdpEcho {
        #[arg(long)]
        bind: SocketAddr,
        #[arg(long, default_value_t = 600.0)]
        max_seconds: f64,
    },
    /// Stop-and-wait pings; prints {"rtts_ms": [...], "lost": n}.
    UdpPing {
        #[arg(long)]
        server: SocketAddr,
        #[arg(long, default_value_t = 10)]
        count: u32,
        /// UDP payload bytes.
        #[arg(long, default_value_t = 11)]
        size: usize,
        /// Per-ping timeout, ms.
        #[arg(long, default_value_t = 5000)]
        timeout_ms: u64,
    },
    /// Send `count` datagrams of `size` payload bytes, `interval_us` apart (0: back to back).
    UdpBlast {
        #[arg(long)]
        server: SocketAddr,
        #[arg(long)]
        count: u32,
        #[arg(long, default_value_t = 268)]
        size: usize,
        #[arg(long, default_value_t = 0)]
        interval_us: u64,
    },
    /// Receive datagrams until `count` arrived or `idle_ms` passed without one (after the
    /// first); prints {"received", "seqs", "arrivals_s"}.
    UdpSink {
        #[arg(long)]
        bind: SocketAddr,
        #[arg(long)]
        count: u32,
        #[arg(long, default_value_t = 3000)]
        idle_ms: u64,
        #[arg(long, default_value_t = 120.0)]
        max_seconds: f64,
    },
    /// Connect and send `bytes` bytes, then close.
    TcpSend {
        #[arg(long)]
        server: SocketAddr,
        #[arg(long)]
        bytes: usize,
        #[arg(long, default_value_t = 120.0)]
        max_seconds: f64,
    },
    /// Accept one connection, read to EOF; prints {"bytes", "connected_s", "marks": [[bytes, s]...]}.
    TcpSink {
        #[arg(long)]
        bind: SocketAddr,
        #[arg(long, default_value_t = 120.0)]
        max_seconds: f64,
    },
}

/// Run the probe command line (`args` including the program name); returns the exit code.
pub fn main<I: IntoIterator<Item = String>>(args: I) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return 2;
        }
    };
    let _ = sys::set_process_fifo(5);
    match run(cli.cmd) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("coapcc-emu-probe: error: {e:#}");
            1
        }
    }
}

fn run(cmd: Cmd) -> Result<()> {
    match cmd {
        Cmd::CoapServer { bind, payload, max_seconds } => coap_server(bind, payload, max_seconds),
        Cmd::CoapClient { server, count, clients, cc, seed, first_client, path, max_seconds } => {
            let r = coap_client(&ClientConfig { server, count, clients, cc, seed, first_client, path, max_seconds })?;
            println!("{}", serde_json::to_string(&r)?);
            Ok(())
        }
        Cmd::UdpEcho { bind, max_seconds } => {
            let s = UdpSocket::bind(bind)?;
            let end = Instant::now() + Duration::from_secs_f64(max_seconds);
            let mut buf = [0u8; 65536];
            while Instant::now() < end {
                s.set_read_timeout(Some(Duration::from_millis(200)))?;
                if let Ok((n, from)) = s.recv_from(&mut buf) {
                    s.send_to(&buf[..n], from)?;
                }
            }
            Ok(())
        }
        Cmd::UdpPing { server, count, size, timeout_ms } => {
            let s = UdpSocket::bind(if server.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" })?;
            s.connect(server)?;
            s.set_read_timeout(Some(Duration::from_millis(timeout_ms)))?;
            let mut rtts = Vec::new();
            let (mut sent_ns, mut recv_ns) = (Vec::new(), Vec::new());
            let mut lost = 0;
            let mut buf = [0u8; 65536];
            for i in 0..count {
                let mut msg = vec![0u8; size.max(4)];
                msg[..4].copy_from_slice(&i.to_be_bytes());
                let t0 = Instant::now();
                sent_ns.push(sys::monotonic_ns());
                s.send(&msg)?;
                loop {
                    match s.recv(&mut buf) {
                        Ok(n) if n >= 4 && buf[..4] == i.to_be_bytes() => {
                            rtts.push(t0.elapsed().as_secs_f64() * 1e3);
                            recv_ns.push(sys::monotonic_ns());
                            break;
                        }
                        Ok(_) => continue,
                        Err(_) => {
                            lost += 1;
                            break;
                        }
                    }
                }
            }
            let j = serde_json::json!({ "rtts_ms": rtts, "lost": lost, "sent_monotonic_ns": sent_ns, "recv_monotonic_ns": recv_ns });
            println!("{j}");
            Ok(())
        }
        Cmd::UdpBlast { server, count, size, interval_us } => {
            let s = UdpSocket::bind(if server.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" })?;
            s.connect(server)?;
            let t0 = Instant::now();
            for i in 0..count {
                if interval_us > 0 {
                    let due = t0 + Duration::from_micros(interval_us * i as u64);
                    if let Some(d) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(d);
                    }
                }
                let mut msg = vec![0u8; size.max(4)];
                msg[..4].copy_from_slice(&i.to_be_bytes());
                // A full socket buffer only delays us; the link drops, not the sender.
                while let Err(e) = s.send(&msg) {
                    if e.kind() != std::io::ErrorKind::WouldBlock && e.raw_os_error() != Some(libc::ENOBUFS) {
                        return Err(e.into());
                    }
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
            Ok(())
        }
        Cmd::UdpSink { bind, count, idle_ms, max_seconds } => {
            let s = UdpSocket::bind(bind)?;
            let end = Instant::now() + Duration::from_secs_f64(max_seconds);
            let mut seqs = Vec::new();
            let mut arrivals = Vec::new();
            let mut t0: Option<Instant> = None;
            let mut last = Instant::now();
            let mut buf = [0u8; 65536];
            while (seqs.len() as u32) < count && Instant::now() < end {
                if t0.is_some() && last.elapsed() > Duration::from_millis(idle_ms) {
                    break;
                }
                s.set_read_timeout(Some(Duration::from_millis(50)))?;
                if let Ok(n) = s.recv(&mut buf) {
                    let now = Instant::now();
                    let base = *t0.get_or_insert(now);
                    last = now;
                    if n >= 4 {
                        seqs.push(u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]));
                        arrivals.push((now - base).as_secs_f64());
                    }
                }
            }
            println!("{}", serde_json::json!({ "received": seqs.len(), "seqs": seqs, "arrivals_s": arrivals }));
            Ok(())
        }
        Cmd::TcpSend { server, bytes, max_seconds } => {
            let mut s = TcpStream::connect_timeout(&server, Duration::from_secs_f64(max_seconds))?;
            s.set_write_timeout(Some(Duration::from_secs_f64(max_seconds)))?;
            s.set_read_timeout(Some(Duration::from_secs_f64(max_seconds)))?;
            let data = vec![0x5au8; bytes];
            s.write_all(&data)?;
            s.shutdown(std::net::Shutdown::Write)?;
            let mut rest = Vec::new();
            let _ = s.read_to_end(&mut rest); // wait for the peer's close
            Ok(())
        }
        Cmd::TcpSink { bind, max_seconds } => {
            let l = TcpListener::bind(bind)?;
            l.set_nonblocking(true)?;
            let end = Instant::now() + Duration::from_secs_f64(max_seconds);
            let (mut s, t0) = loop {
                match l.accept() {
                    Ok((s, _)) => break (s, Instant::now()),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        if Instant::now() >= end {
                            bail!("no connection within {max_seconds} s");
                        }
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    Err(e) => return Err(e.into()),
                }
            };
            s.set_nonblocking(false)?;
            s.set_read_timeout(Some(Duration::from_secs_f64(max_seconds)))?;
            let mut total = 0usize;
            let mut marks = Vec::new();
            let mut buf = [0u8; 65536];
            loop {
                let n = s.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                total += n;
                marks.push((total, t0.elapsed().as_secs_f64()));
                if Instant::now() >= end {
                    bail!("transfer not finished within {max_seconds} s");
                }
            }
            println!("{}", serde_json::json!({ "bytes": total, "marks": marks }));
            Ok(())
        }
    }
}

fn coap_server(bind: SocketAddr, payload: usize, max_seconds: f64) -> Result<()> {
    let s = UdpSocket::bind(bind).with_context(|| format!("bind {bind}"))?;
    let end = Instant::now() + Duration::from_secs_f64(max_seconds);
    let mut buf = [0u8; 2048];
    let body = vec![b'x'; payload];
    while Instant::now() < end {
        s.set_read_timeout(Some(Duration::from_millis(200)))?;
        let Ok((n, from)) = s.recv_from(&mut buf) else { continue };
        if let Some(resp) = coap_response(&buf[..n], &body) {
            let _ = s.send_to(&resp, from);
        }
    }
    Ok(())
}

/// The piggybacked `ACK 2.05` answering a CON request (`None` for anything else).
pub fn coap_response(req: &[u8], payload: &[u8]) -> Option<Vec<u8>> {
    if req.len() < 4 || req[0] >> 6 != 1 || (req[0] >> 4) & 3 != 0 {
        return None;
    }
    let tkl = (req[0] & 0x0f) as usize;
    if tkl > 8 || req.len() < 4 + tkl {
        return None;
    }
    let mut r = Vec::with_capacity(5 + tkl + payload.len());
    r.push(0x60 | tkl as u8); // ver 1, ACK
    r.push(0x45); // 2.05 Content
    r.extend_from_slice(&req[2..4 + tkl]); // Message ID and token
    if !payload.is_empty() {
        r.push(0xff);
        r.extend_from_slice(payload);
    }
    Some(r)
}

/// `CON GET /path` with a 1-byte token.
pub fn coap_request(mid: u16, token: u8, path: &str) -> Vec<u8> {
    let mut r = vec![0x41, 0x01];
    r.extend_from_slice(&mid.to_be_bytes());
    r.push(token);
    let mut prev = 0u16;
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        let delta = 11 - prev;
        let len = seg.len();
        assert!(len < 269, "segment too long");
        let (ln, ext): (u8, Vec<u8>) = if len < 13 { (len as u8, vec![]) } else { (13, vec![(len - 13) as u8]) };
        r.push(((delta as u8) << 4) | ln);
        r.extend(ext);
        r.extend_from_slice(seg.as_bytes());
        prev = 11;
    }
    r
}

/// Configuration of [`coap_client`].
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Server address.
    pub server: SocketAddr,
    /// Exchanges per flow (successful ones: a failed exchange is replaced).
    pub count: u32,
    /// Flows.
    pub clients: u32,
    /// Algorithm specification.
    pub cc: String,
    /// Seed of the dither streams.
    pub seed: u64,
    /// Index of the first flow (dither stream).
    pub first_client: u32,
    /// Uri-Path.
    pub path: String,
    /// Bound on the whole run, seconds.
    pub max_seconds: f64,
}

/// One flow's result.
#[derive(Clone, Debug, Serialize)]
pub struct ClientFlow {
    /// Flow index (dither stream).
    pub client: u32,
    /// Local UDP port.
    pub port: u16,
    /// First request sent → last response received, seconds (`None`: unfinished).
    pub fct_s: Option<f64>,
    /// Requests sent, retransmissions included.
    pub transmissions: u64,
    /// Retransmissions.
    pub retransmissions: u64,
    /// Exchanges completed.
    pub completed: u64,
    /// Exchanges given up.
    pub failed: u64,
}

/// The client's report.
#[derive(Clone, Debug, Serialize)]
pub struct ClientReport {
    /// Algorithm.
    pub cc: String,
    /// Per flow.
    pub flows: Vec<ClientFlow>,
    /// Whether `max_seconds` cut the run short.
    pub truncated: bool,
}

struct Flow {
    sock: UdpSocket,
    cc: Algorithm,
    dither: SplitMix64,
    ex: Option<Exchange>,
    msg: Vec<u8>,
    mid: u16,
    deadline: Option<Instant>,
    begin_at: Option<Instant>,
    first_sent: Option<Instant>,
    done_at: Option<Instant>,
    remaining: u32,
    tx: u64,
    completed: u64,
    failed: u64,
    exchanges: u32,
}

/// Random stream base of client `c`'s retransmission dither, `SplitMix64::stream(seed,
/// STREAM_DITHER + c)`: the simulator's, so the stand-in client draws the same dithers as the
/// simulated client with the same seed (a test of coapcc-sim checks the constants agree).
pub const STREAM_DITHER: u64 = 1 << 32;

/// Run the CoAP stand-in client (all flows in one thread, ns-precision timers).
pub fn coap_client(cfg: &ClientConfig) -> Result<ClientReport> {
    let alg = AlgorithmConfig::parse(&cfg.cc).map_err(|e| anyhow::anyhow!("--cc: {e}"))?;
    let epoch = Instant::now();
    let at = |t: Instant| coapcc_cc::Instant::from_nanos((t - epoch).as_nanos() as u64);
    let mut flows = Vec::new();
    for i in 0..cfg.clients {
        let c = cfg.first_client + i;
        let sock = UdpSocket::bind(if cfg.server.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" })?;
        sock.connect(cfg.server)?;
        sock.set_nonblocking(true)?;
        flows.push(Flow {
            sock,
            cc: alg.build(),
            dither: SplitMix64::stream(cfg.seed, STREAM_DITHER + c as u64),
            ex: None,
            msg: Vec::new(),
            mid: (c as u16).wrapping_mul(4099),
            deadline: None,
            begin_at: Some(epoch),
            first_sent: None,
            done_at: None,
            remaining: cfg.count,
            tx: 0,
            completed: 0,
            failed: 0,
            exchanges: 0,
        });
    }
    let end = epoch + Duration::from_secs_f64(cfg.max_seconds);
    let fds: Vec<_> = flows.iter().map(|f| f.sock.as_raw_fd()).collect();
    let mut buf = [0u8; 2048];
    let mut truncated = false;
    loop {
        let now = Instant::now();
        // Timers: exchange starts and retransmissions.
        for f in flows.iter_mut() {
            if f.begin_at.is_some_and(|b| b <= now) {
                f.begin_at = None;
                let e = f.cc.earliest_start(at(now));
                if e > at(now) {
                    f.begin_at = Some(epoch + Duration::from_nanos(e.as_nanos()));
                    continue;
                }
                let ex = f.cc.start_exchange(at(now), 0, &mut f.dither);
                f.mid = f.mid.wrapping_add(1);
                f.msg = coap_request(f.mid, f.exchanges as u8, &cfg.path);
                f.exchanges += 1;
                f.first_sent.get_or_insert(now);
                f.sock.send(&f.msg)?;
                f.tx += 1;
                f.deadline = Some(now + ex.timer());
                f.ex = Some(ex);
            }
            if f.deadline.is_some_and(|d| d <= now) {
                let mut ex = f.ex.expect("armed exchange");
                match f.cc.on_timeout(at(now), &mut ex) {
                    TimeoutAction::Retransmit(t) => {
                        f.sock.send(&f.msg)?;
                        f.tx += 1;
                        f.deadline = Some(now + t);
                        f.ex = Some(ex);
                    }
                    TimeoutAction::GiveUp => {
                        f.cc.on_give_up(at(now), &ex, GiveUpReason::Timeout);
                        f.failed += 1;
                        f.ex = None;
                        f.deadline = None;
                        f.begin_at = Some(now); // replaced by a new exchange
                    }
                }
            }
        }
        if flows.iter().all(|f| f.remaining == 0) {
            break;
        }
        if now >= end {
            truncated = true;
            break;
        }
        let next = flows.iter().flat_map(|f| [f.begin_at, f.deadline]).flatten().min().unwrap_or(end).min(end);
        let ready = sys::poll_many(&fds, Some(next.saturating_duration_since(Instant::now())))?;
        for (f, r) in flows.iter_mut().zip(ready) {
            if !r {
                continue;
            }
            while let Ok(n) = f.sock.recv(&mut buf) {
                let now = Instant::now();
                let p = &buf[..n];
                if n < 4 || p[0] >> 6 != 1 || (p[0] >> 4) & 3 != 2 || u16::from_be_bytes([p[2], p[3]]) != f.mid {
                    continue;
                }
                let Some(ex) = f.ex.take() else { continue }; // duplicate response
                f.cc.on_ack(at(now), &ex, &AckInfo::new(&ex, at(now)));
                f.deadline = None;
                f.completed += 1;
                f.remaining -= 1;
                if f.remaining == 0 {
                    f.done_at = Some(now);
                } else {
                    f.begin_at = Some(now);
                }
            }
        }
    }
    let flows = flows
        .iter()
        .enumerate()
        .map(|(i, f)| ClientFlow {
            client: cfg.first_client + i as u32,
            port: f.sock.local_addr().map(|a| a.port()).unwrap_or(0),
            fct_s: match (f.first_sent, f.done_at) {
                (Some(a), Some(b)) => Some((b - a).as_secs_f64()),
                _ => None,
            },
            transmissions: f.tx,
            retransmissions: f.tx - f.exchanges as u64,
            completed: f.completed,
            failed: f.failed,
        })
        .collect();
    Ok(ClientReport { cc: alg.to_string(), flows, truncated })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_sizes_match_the_simulator() {
        let req = coap_request(1, 0xa5, "hello");
        assert_eq!(req, [0x41, 0x01, 0x00, 0x01, 0xa5, 0xb5, b'h', b'e', b'l', b'l', b'o']);
        assert_eq!(req.len() + 28, coapcc_sim::CoapConfig::default().request_bytes() as usize);
        let resp = coap_response(&req, &[b'x'; 60]).unwrap();
        assert_eq!(resp.len() + 28, coapcc_sim::CoapConfig::default().response_bytes() as usize);
        assert_eq!(&resp[..5], &[0x61, 0x45, 0x00, 0x01, 0xa5]);
        assert!(coap_response(&resp, b"").is_none(), "an ACK is not answered");
        assert_eq!(STREAM_DITHER, coapcc_sim::STREAM_DITHER);
    }
}
