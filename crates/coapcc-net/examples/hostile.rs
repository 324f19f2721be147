//! Benchmark of issue 28's "must hold": under each attack of the robustness probe, another
//! client's `/hello` rate against its rate just before the attack (the same run), the
//! process's peak resident memory during the attack, and what the server holds.
//!
//! `cargo run --release -p coapcc-net --example hostile -- [SECS] [ATTACK,...|all] [SERVER FLAGS]`
//! (default 5 s of baseline and 5 s of attack per case, every case, the server's defaults). The server runs on its
//! own thread and current-thread runtime (as `coapcc server` does), the attacker and the
//! measuring client each on their own thread; all in one process, so the memory figure is an
//! upper bound for the server's. The measuring client keeps one connection (TCP) or port
//! (UDP) and asks `/hello` back to back; a request unanswered within 500 ms counts as lost.
//! At the end of each attack a new client (a new connection or port) times its first
//! `/hello`. Prints one line per case, in a table for BENCHMARKS.md.
//!
//! `cargo run --release -p coapcc-net --example hostile -- client`: the client against hostile
//! servers (2 MB "blocks", endless block chains over TCP and UDP, a Ping flood), with how each
//! run ended and the process's peak resident memory.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use coapcc_net::tcp_server::{TcpServer, TcpUsage};
use coapcc_net::{Server, ServerArgs};
use coapcc_proto::tcp::{decode_frame, TcpMessage};
use coapcc_proto::{option, Block, Code, Message, MessageType, Token};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};
use tokio::time::Instant;

fn status_mb(key: &str) -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb: f64 =
        s.lines().find_map(|l| l.strip_prefix(key)?.trim().strip_suffix("kB")?.trim().parse().ok()).unwrap_or(0.0);
    kb / 1024.0
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Attack {
    TcpSlowChurn,
    TcpIdle,
    TcpPartial,
    TcpPing,
    UdpSlow,
    UdpUpload,
    UdpObserve,
}

const ATTACKS: [(&str, Attack, &str); 7] = [
    ("tcp-slow-churn", Attack::TcpSlowChurn, "connect, 64 x GET /slow?ms=60000 + /hello, close; again"),
    ("tcp-idle", Attack::TcpIdle, "new idle sockets (no CSM) without end, 300 held"),
    ("tcp-partial", Attack::TcpPartial, "sockets holding 1 MiB of a 2 MiB frame, 256 held"),
    ("tcp-ping", Attack::TcpPing, "4 connections sending Pings as fast as they can"),
    ("udp-slow", Attack::UdpSlow, "CON GET /slow?ms=60000 from 64 ports, 2000/s, never acknowledged"),
    ("udp-upload", Attack::UdpUpload, "Block1 PUT /upload?k=N, block 0 under new keys, one port, flat out"),
    ("udp-observe", Attack::UdpObserve, "GET /counter Observe=0 from one port, same and new tokens, flat out"),
];

impl Attack {
    fn tcp(self) -> bool {
        matches!(self, Attack::TcpSlowChurn | Attack::TcpIdle | Attack::TcpPartial | Attack::TcpPing)
    }
}

fn tcp_get(tok: u64, path: &str, query: Option<&str>) -> Vec<u8> {
    let mut m = TcpMessage::new(Code::GET).with_token(Token::from_u64(tok));
    m.options.add(option::URI_PATH, path.as_bytes());
    if let Some(q) = query {
        m.options.add(option::URI_QUERY, q.as_bytes());
    }
    m.to_bytes()
}

fn udp_get(mid: u16, tok: u64, path: &str, query: Option<&str>) -> Message {
    let mut m = Message::new(MessageType::Con, Code::GET, mid).with_token(Token::from_u64(tok));
    m.add_uri_path(path);
    if let Some(q) = query {
        m.add_uri_query(q);
    }
    m
}

/// The measuring client: one TCP connection kept open (reopened if the server closes it),
/// or one UDP socket.
struct Victim {
    addr: SocketAddr,
    tcp: bool,
    conn: Option<TcpStream>,
    buf: Vec<u8>,
    udp: Option<UdpSocket>,
    n: u64,
}

impl Victim {
    fn new(addr: SocketAddr, tcp: bool) -> Victim {
        Victim { addr, tcp, conn: None, buf: Vec::new(), udp: None, n: 0 }
    }

    /// One `/hello`, answered within 500 ms?
    async fn hello(&mut self) -> bool {
        self.n += 1;
        let tok = self.n;
        if self.tcp {
            if self.conn.is_none() {
                let Ok(Ok(mut s)) =
                    tokio::time::timeout(Duration::from_millis(500), TcpStream::connect(self.addr)).await
                else {
                    return false;
                };
                let _ = s.set_nodelay(true);
                if s.write_all(&TcpMessage::csm(Some(1 << 16), true).to_bytes()).await.is_err() {
                    return false;
                }
                self.buf.clear();
                self.conn = Some(s);
            }
            let s = self.conn.as_mut().unwrap();
            if s.write_all(&tcp_get(tok, "hello", None)).await.is_err() {
                self.conn = None;
                return false;
            }
            let mut chunk = [0u8; 4096];
            loop {
                while let Ok(Some((m, used))) = decode_frame(&self.buf) {
                    self.buf.drain(..used);
                    if m.code == Code::CONTENT && m.token == Token::from_u64(tok) {
                        return true;
                    }
                }
                match tokio::time::timeout(Duration::from_millis(500), s.read(&mut chunk)).await {
                    Ok(Ok(n)) if n > 0 => self.buf.extend_from_slice(&chunk[..n]),
                    Ok(_) => {
                        self.conn = None;
                        return false;
                    }
                    Err(_) => return false,
                }
            }
        } else {
            if self.udp.is_none() {
                let s = UdpSocket::bind("127.0.0.1:0").await.unwrap();
                s.connect(self.addr).await.unwrap();
                self.udp = Some(s);
            }
            let s = self.udp.as_ref().unwrap();
            let mid = tok as u16;
            let _ = s.send(&udp_get(mid, tok, "hello", None).to_bytes()).await;
            let until = Instant::now() + Duration::from_millis(500);
            let mut buf = [0u8; 2048];
            while let Ok(Ok(n)) = tokio::time::timeout_at(until, s.recv(&mut buf)).await {
                if Message::decode(&buf[..n]).is_ok_and(|m| m.message_id == mid && m.code == Code::CONTENT) {
                    return true;
                }
            }
            false
        }
    }

    /// Requests answered in one second of back-to-back `/hello`.
    async fn second(&mut self) -> u64 {
        let end = Instant::now() + Duration::from_secs(1);
        let mut done = 0;
        while Instant::now() < end {
            done += u64::from(self.hello().await);
        }
        done
    }
}

/// How long a new client (a new connection, or a new port) waits for its first `/hello`
/// (milliseconds; 10 000 when it gets none within 10 s).
async fn fresh_client(addr: SocketAddr, tcp: bool) -> f64 {
    let t0 = Instant::now();
    let mut v = Victim::new(addr, tcp);
    while t0.elapsed() < Duration::from_secs(10) {
        if v.hello().await {
            return t0.elapsed().as_secs_f64() * 1e3;
        }
    }
    10_000.0
}

/// Run `attack` against `addr` until `stop`; returns how many attack messages or connections
/// it sent.
async fn attack(a: Attack, addr: SocketAddr, stop: Arc<AtomicBool>) -> u64 {
    let sent = Arc::new(AtomicU64::new(0));
    let going = || !stop.load(Ordering::Relaxed);
    match a {
        Attack::TcpSlowChurn => {
            let mut req = TcpMessage::csm(Some(1 << 16), true).to_bytes();
            for i in 0..64 {
                req.extend(tcp_get(i, "slow", Some("ms=60000")));
            }
            req.extend(tcp_get(999, "hello", None));
            let mut chunk = vec![0u8; 65536];
            while going() {
                let Ok(mut s) = TcpStream::connect(addr).await else { continue };
                let _ = s.write_all(&req).await;
                // Read until the /hello answer (the 5.03s come first), then reset.
                let mut got = Vec::new();
                while let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(500), s.read(&mut chunk)).await {
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&chunk[..n]);
                    if got.windows(60).any(|w| w.starts_with(b"Hello from coapcc")) {
                        break;
                    }
                }
                sent.fetch_add(1, Ordering::Relaxed);
            }
        }
        Attack::TcpIdle => {
            let mut held = std::collections::VecDeque::new();
            while going() {
                if let Ok(Ok(s)) = tokio::time::timeout(Duration::from_millis(200), TcpStream::connect(addr)).await {
                    held.push_back(s);
                    sent.fetch_add(1, Ordering::Relaxed);
                }
                if held.len() > 300 {
                    held.pop_front();
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        Attack::TcpPartial => {
            let mut head = TcpMessage::csm(Some(1 << 16), true).to_bytes();
            head.push(0xF1);
            head.extend(((2u32 << 20) - 100 - 65_805).to_be_bytes());
            head.extend([Code::PUT.raw(), 7]);
            head.extend(vec![0u8; 1 << 20]);
            let mut held = std::collections::VecDeque::new();
            while going() {
                if let Ok(Ok(mut s)) = tokio::time::timeout(Duration::from_millis(200), TcpStream::connect(addr)).await
                {
                    let _ = tokio::time::timeout(Duration::from_millis(200), s.write_all(&head)).await;
                    held.push_back(s);
                    sent.fetch_add(1, Ordering::Relaxed);
                }
                if held.len() > 256 {
                    held.pop_front();
                }
            }
        }
        Attack::TcpPing => {
            let ping = TcpMessage::ping(Token::EMPTY).to_bytes();
            let burst: Vec<u8> = ping.iter().copied().cycle().take(ping.len() * 32_768).collect();
            let mut tasks = Vec::new();
            for _ in 0..4 {
                let (burst, stop, sent) = (burst.clone(), stop.clone(), sent.clone());
                tasks.push(tokio::spawn(async move {
                    let mut s = raw_csm(addr).await;
                    while !stop.load(Ordering::Relaxed) {
                        if s.write_all(&burst).await.is_err() {
                            s = raw_csm(addr).await;
                        }
                        sent.fetch_add(32_768, Ordering::Relaxed);
                    }
                }));
            }
            for t in tasks {
                let _ = t.await;
            }
        }
        Attack::UdpSlow => {
            let mut socks = Vec::new();
            for _ in 0..64 {
                let s = UdpSocket::bind("127.0.0.1:0").await.unwrap();
                s.connect(addr).await.unwrap();
                socks.push(s);
            }
            let start = Instant::now();
            let mut i = 0u64;
            while going() {
                tokio::time::sleep_until(start + Duration::from_micros(500 * i)).await;
                let m = udp_get(i as u16, i, "slow", Some("ms=60000"));
                let _ = socks[(i % 64) as usize].send(&m.to_bytes()).await;
                i += 1;
            }
            sent.store(i, Ordering::Relaxed);
        }
        Attack::UdpUpload | Attack::UdpObserve => {
            let s = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            s.connect(addr).await.unwrap();
            let mut buf = [0u8; 2048];
            let mut i = 0u64;
            while going() {
                let m = if a == Attack::UdpUpload {
                    let mut m = Message::new(MessageType::Con, Code::PUT, i as u16).with_token(Token::from_u64(1));
                    m.add_uri_path("upload");
                    m.add_uri_query(&format!("k={i}"));
                    m.set_block1(Block { num: 0, more: true, szx: 0 }).unwrap();
                    m.payload = vec![0; 16];
                    m
                } else {
                    let mut m = udp_get(i as u16, if i % 2 == 0 { 7 } else { i }, "counter", Some("period=60000"));
                    m.options.set_uint(option::OBSERVE, 0);
                    m
                };
                let _ = s.send(&m.to_bytes()).await;
                // Drain what came back without waiting for it.
                while let Ok(Ok(_)) = tokio::time::timeout(Duration::ZERO, s.recv(&mut buf)).await {}
                i += 1;
                if i % 64 == 0 {
                    tokio::task::yield_now().await;
                }
            }
            sent.store(i, Ordering::Relaxed);
        }
    }
    sent.load(Ordering::Relaxed)
}

async fn raw_csm(addr: SocketAddr) -> TcpStream {
    loop {
        if let Ok(mut s) = TcpStream::connect(addr).await {
            if s.write_all(&TcpMessage::csm(Some(1 << 16), true).to_bytes()).await.is_ok() {
                return s;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// What the server held at the end of the attack.
enum Held {
    Tcp(TcpUsage),
    Udp { delayed: usize, transfers: usize, transfer_bytes: usize, observations: usize },
}

fn run_case(a: Attack, name: &str, secs: u32, extra: &[String]) {
    let tcp = a.tcp();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let extra = extra.to_vec();
    let server = std::thread::spawn(move || {
        rt().block_on(async move {
            let mut argv = vec!["server", "--bind", "127.0.0.1:0", "--seed", "1"];
            if tcp {
                argv.push("--tcp");
            }
            argv.extend(extra.iter().map(String::as_str));
            let args = <ServerArgs as clap::Parser>::parse_from(argv);
            if tcp {
                let mut s = TcpServer::bind(&args).await.unwrap();
                let usage = s.usage_handle();
                addr_tx.send((s.local_addr().unwrap(), Some(usage.clone()))).unwrap();
                s.run_until(async { stop_rx.await.ok() }).await.unwrap();
                None
            } else {
                let mut s = Server::bind(&args).await.unwrap();
                addr_tx.send((s.local_addr(), None)).unwrap();
                s.run_until(async { stop_rx.await.ok() }).await.unwrap();
                let e = s.endpoint();
                Some(Held::Udp {
                    delayed: s.delayed(),
                    transfers: e.transfers().len(),
                    transfer_bytes: e.transfers().bytes(),
                    observations: e.observations(),
                })
            }
        })
    });
    let (addr, usage) = addr_rx.recv().unwrap();
    let victim = rt();
    let rss0 = status_mb("VmRSS:");
    let mut v = Victim::new(addr, tcp);
    let base: Vec<u64> = (0..secs).map(|_| victim.block_on(v.second())).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let attacker = std::thread::spawn(move || rt().block_on(attack(a, addr, st)));
    // Let the attack build up before measuring.
    std::thread::sleep(Duration::from_millis(500));
    let rss_probe = Arc::new(AtomicBool::new(true));
    let (rp, rss_max) = (rss_probe.clone(), Arc::new(AtomicU64::new(0)));
    let rm = rss_max.clone();
    let sampler = std::thread::spawn(move || {
        while rp.load(Ordering::Relaxed) {
            rm.fetch_max((status_mb("VmRSS:") * 10.0) as u64, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    let during: Vec<u64> = (0..secs).map(|_| victim.block_on(v.second())).collect();
    let fresh = victim.block_on(fresh_client(addr, tcp));
    let held_tcp = usage.map(|u| u.usage());
    stop.store(true, Ordering::Relaxed);
    let sent = attacker.join().unwrap();
    rss_probe.store(false, Ordering::Relaxed);
    sampler.join().unwrap();
    stop_tx.send(()).unwrap();
    let held = server.join().unwrap().or(held_tcp.map(Held::Tcp)).expect("server state");
    let median = |v: &[u64]| {
        let mut s = v.to_vec();
        s.sort_unstable();
        s[s.len() / 2] as f64
    };
    let (b, d) = (median(&base), median(&during));
    let worst = *during.iter().min().unwrap() as f64;
    let held = match held {
        Held::Tcp(u) => format!(
            "{} conns, {} delayed, {} B partial frames, {} transfers, {} observations",
            u.connections, u.delayed, u.buffered, u.transfers, u.observations
        ),
        Held::Udp { delayed, transfers, transfer_bytes, observations } => {
            format!("{delayed} delayed, {transfers} transfers ({transfer_bytes} B), {observations} observations")
        }
    };
    println!(
        "| {name} | {b:.0} | {d:.0} | {:.2} | {:.2} | {fresh:.1} | {rss0:.1} -> {:.1} | {sent} | {held} |",
        d / b.max(1.0),
        worst / b.max(1.0),
        rss_max.load(Ordering::Relaxed) as f64 / 10.0
    );
}

/// A fake server for the client cases, on its own thread: `tcp` or UDP, answering each
/// request with what `kind` says; runs until the process ends.
fn fake_server(kind: &'static str) -> SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        rt().block_on(async move {
            if kind.starts_with("client-udp") {
                let s = UdpSocket::bind("127.0.0.1:0").await.unwrap();
                tx.send(s.local_addr().unwrap()).unwrap();
                let mut buf = [0u8; 2048];
                loop {
                    let Ok((n, from)) = s.recv_from(&mut buf).await else { continue };
                    let Ok(req) = Message::decode(&buf[..n]) else { continue };
                    let num = req.block2().ok().flatten().map_or(0, |b| b.num);
                    let mut a = Message::new(MessageType::Ack, Code::CONTENT, req.message_id).with_token(req.token);
                    a.set_block2(Block { num, more: true, szx: 6 }).unwrap();
                    a.payload = vec![b'z'; 1024];
                    let _ = s.send_to(&a.to_bytes(), from).await;
                }
            }
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(l.local_addr().unwrap()).unwrap();
            loop {
                let Ok((mut s, _)) = l.accept().await else { continue };
                tokio::spawn(async move {
                    let _ = s.write_all(&TcpMessage::csm(Some(4 << 20), true).to_bytes()).await;
                    let (mut buf, mut chunk) = (Vec::new(), vec![0u8; 65536]);
                    while let Ok(n) = s.read(&mut chunk).await {
                        if n == 0 {
                            return;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                        while let Ok(Some((req, used))) = decode_frame(&buf) {
                            buf.drain(..used);
                            if !req.code.is_request() {
                                continue;
                            }
                            let num = req.block2().ok().flatten().map_or(0, |b| b.num);
                            let (len, pings) = match kind {
                                "client-tcp-2mb-blocks" => (2_000_000, 0),
                                "client-tcp-ping-flood" => (1024, 200_000),
                                _ => (1024, 0),
                            };
                            if pings > 0 {
                                let ping = TcpMessage::ping(Token::EMPTY).to_bytes();
                                let burst: Vec<u8> = ping.iter().copied().cycle().take(ping.len() * pings).collect();
                                let _ = s.write_all(&burst).await;
                            }
                            let mut a =
                                TcpMessage::new(Code::CONTENT).with_token(req.token).with_payload(vec![b'z'; len]);
                            a.set_block2(Block { num, more: pings == 0, szx: 6 }).unwrap();
                            if s.write_all(&a.to_bytes()).await.is_err() {
                                return;
                            }
                        }
                    }
                });
            }
        })
    });
    rx.recv().unwrap()
}

const CLIENT_CASES: [(&str, &str); 4] = [
    ("client-tcp-2mb-blocks", "every answer 2.05, Block2 more=1 szx=6, a 2 MB payload"),
    ("client-tcp-endless-blocks", "an endless chain of valid 1024-byte blocks"),
    ("client-udp-endless-blocks", "the same over UDP"),
    ("client-tcp-ping-flood", "200 000 Pings before each answer"),
];

/// The client against a hostile server: how its run ended, and the process's peak RSS.
fn client_case(name: &'static str) {
    let addr = fake_server(name);
    let scheme = if name.starts_with("client-udp") { "coap" } else { "coap+tcp" };
    let (probe, rss_max) = (Arc::new(AtomicBool::new(true)), Arc::new(AtomicU64::new(0)));
    let (p, m) = (probe.clone(), rss_max.clone());
    let sampler = std::thread::spawn(move || {
        while p.load(Ordering::Relaxed) {
            m.fetch_max((status_mb("VmRSS:") * 10.0) as u64, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let t0 = std::time::Instant::now();
    let uri = format!("{scheme}://{addr}/x");
    let args = <coapcc_net::ClientArgs as clap::Parser>::parse_from(["client", &uri, "--timeout", "120"]);
    let r = rt().block_on(coapcc_net::run_client(args, &mut std::io::sink()));
    probe.store(false, Ordering::Relaxed);
    sampler.join().unwrap();
    let outcome = match r {
        Ok(s) => format!(
            "{} exchanges, {}",
            s.exchanges,
            s.first_failure
                .map_or_else(|| format!("{} bytes", s.last_payload.map_or(0, |p| p.len())), |f| f.to_string())
        ),
        Err(e) => format!("error: {e}"),
    };
    println!(
        "| {name} | {outcome} | {:.1} | {:.1} |",
        t0.elapsed().as_secs_f64(),
        rss_max.load(Ordering::Relaxed) as f64 / 10.0
    );
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("client") {
        println!("The client against hostile servers (default flags: --max-blocks 16384, 16 MiB body):");
        for (name, what) in CLIENT_CASES {
            println!("- {name}: {what}");
        }
        println!("| hostile server | client's outcome | seconds | process RSS max (MB) |");
        println!("|---|---|---|---|");
        for (name, _) in CLIENT_CASES {
            client_case(name);
        }
        return;
    }
    let mut argv = std::env::args().skip(1);
    let secs: u32 = argv.next().and_then(|a| a.parse().ok()).unwrap_or(5).max(1);
    let only: Vec<String> =
        argv.next().filter(|s| s != "all").map(|s| s.split(',').map(str::to_string).collect()).unwrap_or_default();
    // Further arguments are `coapcc server` flags (the defaults without them).
    let extra: Vec<String> = argv.collect();
    println!(
        "{secs} s baseline then {secs} s under attack per case; /hello requests per second (median of 1-s windows)"
    );
    for (name, _, what) in ATTACKS.iter().filter(|(n, _, _)| only.is_empty() || only.iter().any(|o| o == n)) {
        println!("- {name}: {what}");
    }
    println!(
        "| attack | baseline /hello/s | during /hello/s | ratio | worst second | new client's first /hello (ms) | RSS MB (before -> max during) | attack sent | server holds at the end |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (name, a, _) in ATTACKS {
        if only.is_empty() || only.iter().any(|o| o == name) {
            run_case(a, name, secs, &extra);
        }
    }
}
