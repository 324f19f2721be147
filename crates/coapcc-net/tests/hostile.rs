//! The hostile-peer battery (issue 28): every attack of the robustness probe against the
//! server over UDP and TCP, and hostile servers against the client. Each case asserts the
//! bounds on the server's state (counts and bytes it holds, from its own accounting), the
//! attacker's answers, and that another client is still served: all of its requests complete
//! within a generous time. No assertion depends on the machine being idle; the rates under
//! attack are measured by `cargo run --release -p coapcc-net --example hostile`
//! (docs/robustness.md).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coapcc_net::tcp_server::{TcpServer, TcpServerStats, TcpUsage, UsageHandle};
use coapcc_net::{run_client, ClientArgs, ClientSummary, Server, ServerArgs};
use coapcc_proto::tcp::{decode_frame, TcpMessage};
use coapcc_proto::{option, Block, Code, Message, MessageType, Token};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::oneshot;

/// Generous bound on anything a case waits for (a busy CI machine is slow, not stuck).
const LIMIT: Duration = Duration::from_secs(60);

async fn client(uri: &str, extra: &[&str]) -> (anyhow::Result<ClientSummary>, Vec<Value>) {
    let mut argv = vec!["client", uri, "--timeout", "60"];
    argv.extend_from_slice(extra);
    let args = <ClientArgs as clap::Parser>::parse_from(argv);
    let mut log = Vec::new();
    let r = run_client(args, &mut log).await;
    let lines = String::from_utf8(log).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (r, lines)
}

/// Another client's `/hello`, `n` times: every request must succeed.
async fn victim(uri: &str, n: u32) {
    let (r, _) = client(uri, &["-n", &n.to_string(), "-q"]).await;
    let s = r.expect("the other client is served");
    assert_eq!((s.success, s.failed), (n, 0), "{s:?}");
}

fn server_args(tcp: bool, extra: &[&str]) -> ServerArgs {
    let mut argv = vec!["server", "--bind", "127.0.0.1:0", "--seed", "1"];
    if tcp {
        argv.push("--tcp");
    }
    argv.extend_from_slice(extra);
    <ServerArgs as clap::Parser>::parse_from(argv)
}

struct Tcp {
    addr: SocketAddr,
    stats: Arc<Mutex<TcpServerStats>>,
    usage: UsageHandle,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<TcpServerStats>,
}

async fn tcp_server(extra: &[&str]) -> Tcp {
    let mut s = TcpServer::bind(&server_args(true, extra)).await.unwrap();
    let (addr, stats, usage) = (s.local_addr().unwrap(), s.shared_stats(), s.usage_handle());
    let (stop, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        s.run_until(async {
            let _ = rx.await;
        })
        .await
        .unwrap()
    });
    Tcp { addr, stats, usage, stop, task }
}

impl Tcp {
    fn uri(&self, path: &str) -> String {
        format!("coap+tcp://{}{path}", self.addr)
    }

    fn stats(&self) -> TcpServerStats {
        *self.stats.lock().unwrap()
    }

    /// Wait (bounded) until `cond` holds for the live counters and usage.
    async fn until(&self, what: &str, cond: impl Fn(&TcpServerStats, &TcpUsage) -> bool) {
        let deadline = tokio::time::Instant::now() + LIMIT;
        loop {
            let (s, u) = (self.stats(), self.usage.usage());
            if cond(&s, &u) {
                return;
            }
            assert!(tokio::time::Instant::now() < deadline, "{what}: not reached: {s:?} {u:?}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    async fn finish(self) -> TcpServerStats {
        let _ = self.stop.send(());
        tokio::time::timeout(LIMIT, self.task).await.expect("server stops").expect("server task")
    }
}

/// A raw connection that has sent its CSM.
async fn raw(addr: SocketAddr, max_message_size: u32) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&TcpMessage::csm(Some(max_message_size), true).to_bytes()).await.unwrap();
    s
}

fn get(tok: u64, path: &str) -> TcpMessage {
    let mut m = TcpMessage::new(Code::GET).with_token(Token::from_u64(tok));
    let (p, q) = path.split_once('?').unwrap_or((path, ""));
    for seg in p.split('/').filter(|s| !s.is_empty()) {
        m.options.add(option::URI_PATH, seg.as_bytes());
    }
    if !q.is_empty() {
        m.options.add(option::URI_QUERY, q.as_bytes());
    }
    m
}

/// Read frames from `s` until `n` messages other than the server's CSM came (bounded).
async fn read_messages(s: &mut TcpStream, n: usize) -> Vec<TcpMessage> {
    let mut buf = Vec::new();
    let mut got = Vec::new();
    let mut chunk = vec![0u8; 65536];
    tokio::time::timeout(LIMIT, async {
        while got.len() < n {
            let k = s.read(&mut chunk).await.unwrap();
            assert!(k > 0, "the server closed the connection after {} messages", got.len());
            buf.extend_from_slice(&chunk[..k]);
            while let Ok(Some((m, used))) = decode_frame(&buf) {
                buf.drain(..used);
                if m.code != Code::CSM {
                    got.push(m);
                }
            }
        }
    })
    .await
    .expect("messages arrive");
    got
}

// ---------------------------------------------------------------------------------------
// TCP server
// ---------------------------------------------------------------------------------------

/// Probe item 1: connect, 64 × `GET /slow?ms=60000` + `GET /hello`, close, again and again.
/// Each connection holds at most its share of delayed answers (the rest get 5.03 at once),
/// and they end with it: nothing outlives the connection.
#[tokio::test]
async fn tcp_slow_flood_with_churn_holds_nothing_after_the_connections() {
    let srv = tcp_server(&[]).await;
    for round in 0..20 {
        let mut s = raw(srv.addr, 1 << 16).await;
        let mut bytes = Vec::new();
        for i in 0..64 {
            bytes.extend(get(i, "/slow?ms=60000").to_bytes());
        }
        bytes.extend(get(999, "/hello").to_bytes());
        s.write_all(&bytes).await.unwrap();
        // 56 refused at once (8 per connection) and /hello answered.
        let got = read_messages(&mut s, 57).await;
        assert_eq!(got.iter().filter(|m| m.code == Code::SERVICE_UNAVAILABLE).count(), 56, "round {round}");
        assert!(got.iter().any(|m| m.code == Code::CONTENT && m.payload.len() == 60));
        let u = srv.usage.usage();
        assert!(u.delayed <= 16, "per address: {u:?}");
        drop(s);
    }
    srv.until("every delayed answer ended with its connection", |_, u| u.delayed == 0 && u.connections == 0).await;
    victim(&srv.uri("/hello"), 20).await;
    let st = srv.finish().await;
    assert_eq!(st.delayed_refused, 20 * 56);
}

/// Probe item 2: idle sockets fill every slot. A new client still gets in (the least
/// recently active idle socket is closed for it), and sockets that never send their CSM are
/// aborted after the CSM timeout.
#[tokio::test]
async fn tcp_idle_sockets_cannot_shut_others_out() {
    let srv = tcp_server(&["--max-connections", "16", "--csm-timeout", "1"]).await;
    let mut idle = Vec::new();
    for _ in 0..16 {
        idle.push(TcpStream::connect(srv.addr).await.unwrap());
    }
    srv.until("16 connections", |s, _| s.connections == 16).await;
    victim(&srv.uri("/hello"), 5).await;
    srv.until("the victim's connection closed", |s, _| s.clean_closes >= 1).await;
    let st = srv.stats();
    assert!(st.evicted >= 1 && st.refused == 0, "{st:?}");
    srv.until("CSM timeouts", |s, _| s.csm_timeouts >= 15).await;
    srv.until("all gone", |_, u| u.connections == 0).await;
    drop(idle);
    srv.finish().await;
}

/// Probe item 2: sockets each holding a partial 2 MiB frame. What they make the server buffer
/// stays within `--max-buffered` (beyond 16 KiB each), connections that would exceed it are
/// aborted, the others by the frame timeout (their frames stopped arriving); another client is
/// served meanwhile.
#[tokio::test]
async fn tcp_partial_frames_are_bounded() {
    let srv = tcp_server(&["--max-buffered", "1048576", "--frame-timeout", "4"]).await;
    let mut holders = Vec::new();
    // A frame of almost 2 MiB (the server's Max-Message-Size), then the first 300 KiB of it.
    let ext = (2u32 << 20) - 100 - 65_805;
    let mut head = vec![0xF1];
    head.extend(ext.to_be_bytes());
    head.extend([Code::PUT.raw(), 7]);
    let chunk = vec![0u8; 300 << 10];
    for _ in 0..32 {
        let mut s = raw(srv.addr, 1 << 16).await;
        s.write_all(&head).await.unwrap();
        let _ = s.write_all(&chunk).await;
        holders.push(s);
        let u = srv.usage.usage();
        assert!(u.buffered <= 1 << 20, "{u:?}");
    }
    victim(&srv.uri("/hello"), 5).await;
    srv.until("refusals and frame timeouts", |s, u| {
        assert!(u.buffered <= 1 << 20, "{u:?}");
        s.buffer_refusals >= 1 && s.buffer_refusals + s.frame_timeouts >= 32
    })
    .await;
    srv.until("nothing buffered", |_, u| u.buffered == 0).await;
    drop(holders);
    srv.finish().await;
}

/// Probe item 14: a Ping flood gets at most the per-connection rate of Pongs, the flooding
/// connection is no longer read (TCP flow control slows the flooder to the rate), and another
/// client is served meanwhile.
#[tokio::test]
async fn tcp_ping_flood_is_rate_limited() {
    let srv = tcp_server(&["--ping-rate", "10"]).await;
    let t0 = std::time::Instant::now();
    let s = raw(srv.addr, 1 << 16).await;
    let (mut r, mut w) = s.into_split();
    let flood = tokio::spawn(async move {
        let ping = TcpMessage::ping(Token::EMPTY).to_bytes();
        let burst: Vec<u8> = ping.iter().copied().cycle().take(ping.len() * 5000).collect();
        let mut sent = 0u64;
        for _ in 0..40 {
            match tokio::time::timeout(Duration::from_secs(2), w.write_all(&burst)).await {
                Ok(Ok(())) => sent += 5000,
                _ => break,
            }
        }
        (sent, w)
    });
    victim(&srv.uri("/hello"), 50).await;
    let (sent, _w) = flood.await.unwrap();
    // Collect the Pongs that came (the server's CSM first).
    let (mut all, mut chunk) = (Vec::new(), vec![0u8; 65536]);
    while let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(300), r.read(&mut chunk)).await {
        if n == 0 {
            break;
        }
        all.extend_from_slice(&chunk[..n]);
    }
    let secs = t0.elapsed().as_secs_f64();
    let mut rest = &all[..];
    let mut pongs = 0u64;
    while let Ok(Some((m, used))) = decode_frame(rest) {
        pongs += u64::from(m.code == Code::PONG);
        rest = &rest[used..];
    }
    // A burst of 10, then 10 per second at most.
    assert!(pongs >= 10 && pongs as f64 <= 10.0 + 10.0 * secs + 1.0, "{pongs} Pongs in {secs:.1} s");
    let st = srv.stats();
    assert!(st.pings_dropped >= 1, "{st:?}");
    // The flooder was no longer read: most of what it sent is still unread.
    assert!(st.pings_dropped + pongs < sent, "{} read of {sent}", st.pings_dropped + pongs);
    srv.finish().await;
}

/// Probe item 11: unknown critical options get 4.02 over TCP as over UDP; every resource
/// of `/.well-known/core` works over TCP, `/counter` with Observe (RFC 8323 §7).
#[tokio::test]
async fn tcp_conformance() {
    let srv = tcp_server(&[]).await;
    for n in ["9", "2049", "65001"] {
        let (r, _) = client(&srv.uri("/hello"), &["-O", &format!("{n},x"), "-q"]).await;
        let s = r.unwrap();
        assert_eq!(s.last_code, Some(Code::BAD_OPTION), "option {n}");
        assert!(String::from_utf8_lossy(s.last_payload.as_deref().unwrap()).contains(n));
    }
    // Requests are numbered from 1, as over UDP.
    let (r, lines) = client(&srv.uri("/hello"), &["-n", "3", "-q"]).await;
    assert_eq!(r.unwrap().success, 3);
    let ids: Vec<u64> = lines.iter().filter(|l| l["type"] == "request").map(|l| l["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, [1, 2, 3]);
    let (r, _) = client(&srv.uri("/.well-known/core"), &["-q"]).await;
    let wkc = String::from_utf8(r.unwrap().last_payload.unwrap()).unwrap();
    // Each link is `<path>;attributes` (a title may hold a comma: split on '<').
    let links: Vec<&str> = wkc.split('<').skip(1).collect();
    assert_eq!(links.len(), 6, "{wkc}");
    for link in links {
        let path = &link[..link.find('>').unwrap()];
        let (method, extra): (&str, &[&str]) = match path {
            "/echo" | "/upload" => ("put", &["-p", "x"]),
            "/slow" => ("get", &[]),
            _ => ("get", &[]),
        };
        let uri = srv.uri(if path == "/slow" { "/slow?ms=10" } else { path });
        let mut args = vec!["-m", method, "-q"];
        args.extend_from_slice(extra);
        let (r, _) = client(&uri, &args).await;
        let s = r.unwrap();
        assert!(s.last_code.is_some_and(|c| c.is_success()), "{path}: {:?}", s.last_code);
        if link.contains(";obs") {
            let (r, lines) = client(&srv.uri(&format!("{path}?period=100")), &["--observe", "3", "-q"]).await;
            assert_eq!(r.unwrap().notifications, 3, "Observe of {path} over TCP");
            let seqs: Vec<u64> =
                lines.iter().filter(|l| l["type"] == "notification").map(|l| l["observe"].as_u64().unwrap()).collect();
            assert_eq!(seqs, [1, 2, 3]);
        }
    }
    srv.until("observations end with their connection", |_, u| u.observations == 0).await;
    srv.finish().await;
}

/// Probe items 5 and 7 over TCP with a peer whose Max-Message-Size is small: a POST of 3 000
/// bytes to `/echo` comes back in blocks served from the kept representation, `GET /echo`
/// returns the 3 000 bytes; one connection re-registering again and again holds one
/// observation (the same token) or its share (new tokens), and gets one copy of each
/// notification.
#[tokio::test]
async fn tcp_block_wise_echo_and_observe_state_per_connection() {
    let srv = tcp_server(&[]).await;
    let body: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
    let mut s = raw(srv.addr, 1152).await;
    let mut post = TcpMessage::new(Code::POST).with_token(Token::from_u64(1)).with_payload(body.clone());
    post.options.add(option::URI_PATH, b"echo");
    s.write_all(&post.to_bytes()).await.unwrap();
    let mut got = Vec::new();
    for num in 0..3u32 {
        if num > 0 {
            let mut m = TcpMessage::new(Code::POST).with_token(Token::from_u64(10 + u64::from(num)));
            m.options.add(option::URI_PATH, b"echo");
            m.set_block2(Block { num, more: false, szx: 6 }).unwrap();
            s.write_all(&m.to_bytes()).await.unwrap();
        }
        let a = read_messages(&mut s, 1).await.remove(0);
        assert_eq!(a.code, Code::CHANGED);
        let b = a.block2().unwrap().unwrap();
        assert_eq!((b.num, b.more), (num, num < 2));
        got.extend(a.payload);
    }
    assert_eq!(got, body);
    srv.until("the kept representation ends with its last block", |_, u| u.transfers == 0).await;
    let (r, _) = client(&srv.uri("/echo"), &["-q"]).await;
    assert_eq!(r.unwrap().last_payload.unwrap(), body, "GET /echo after the POST");
    // The same body uploaded in BERT blocks (RFC 8323 §6: SZX 7, NUM in 1024-byte units,
    // several units per message), as aiocoap sends it: 2 units, then the last 952 bytes.
    let mut bert = raw(srv.addr, 1 << 20).await;
    for (num, more, part) in [(0u64, true, &body[..2048]), (2, false, &body[2048..])] {
        let mut m = TcpMessage::new(Code::PUT).with_token(Token::from_u64(50 + num)).with_payload(part.to_vec());
        m.options.add(option::URI_PATH, b"echo");
        m.options.set(option::BLOCK1, option::encode_uint((num << 4) | (u64::from(more) << 3) | 7));
        bert.write_all(&m.to_bytes()).await.unwrap();
        let a = read_messages(&mut bert, 1).await.remove(0);
        let echo = option::decode_uint(a.options.get(option::BLOCK1).unwrap()).unwrap();
        assert_eq!(echo, (num << 4) | (u64::from(more) << 3) | 7, "the BERT option echoed");
        if more {
            assert_eq!(a.code, Code::CONTINUE);
        } else {
            assert_eq!((a.code, &a.payload), (Code::CHANGED, &body), "the whole body, reassembled");
        }
    }
    // Observe: the same token 64 times, then 64 new tokens, on one connection.
    let mut obs = Vec::new();
    for i in 0..64 {
        let mut m = get(7, "/counter?period=60000");
        m.options.set_uint(option::OBSERVE, 0);
        obs.extend(m.to_bytes());
        let mut m = get(100 + i, "/counter?period=60000");
        m.options.set_uint(option::OBSERVE, 0);
        obs.extend(m.to_bytes());
    }
    s.write_all(&obs).await.unwrap();
    let answers = read_messages(&mut s, 128).await;
    let registered = answers.iter().filter(|m| m.options.contains(option::OBSERVE)).count();
    // Token 7 each time (replacing itself) and three new tokens fill the share of 4.
    assert_eq!(registered, 64 + 3);
    assert_eq!(srv.usage.usage().observations, 4);
    // Another client still registers.
    let (r, _) = client(&srv.uri("/counter?period=100"), &["--observe", "2", "-q"]).await;
    assert_eq!(r.unwrap().notifications, 2);
    drop(s);
    srv.until("observations end with their connection", |_, u| u.observations == 0).await;
    srv.finish().await;
}

/// Probe item 13: the TCP server's log is written as events happen (a connection held open
/// is in it at once).
#[tokio::test]
async fn tcp_log_is_written_as_events_happen() {
    let path = std::env::temp_dir().join(format!("coapcc-hostile-{}.jsonl", std::process::id()));
    let srv = tcp_server(&["--log", path.to_str().unwrap()]).await;
    let _held = raw(srv.addr, 1 << 16).await;
    let deadline = tokio::time::Instant::now() + LIMIT;
    while !std::fs::read_to_string(&path).unwrap_or_default().contains("connection-open") {
        assert!(tokio::time::Instant::now() < deadline, "the open connection is not in the log");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    srv.finish().await;
    let _ = std::fs::remove_file(&path);
}

// ---------------------------------------------------------------------------------------
// UDP server
// ---------------------------------------------------------------------------------------

/// Run `f` against our UDP server; returns the server (stopped) for inspection.
async fn with_udp<F, Fut>(extra: &[&str], f: F) -> Server
where
    F: FnOnce(SocketAddr) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut server = Server::bind(&server_args(false, extra)).await.unwrap();
    let addr = server.local_addr();
    let (tx, rx) = oneshot::channel::<()>();
    let (stats, ()) = tokio::join!(server.run_until(rx), async move {
        f(addr).await;
        let _ = tx.send(());
    });
    stats.unwrap();
    server
}

fn con(mid: u16, tok: u64, path: &str) -> Message {
    let mut m = Message::new(MessageType::Con, Code::GET, mid).with_token(Token::from_u64(tok));
    let (p, q) = path.split_once('?').unwrap_or((path, ""));
    m.add_uri_path(p);
    if !q.is_empty() {
        m.add_uri_query(q);
    }
    m
}

/// Delayed answers over UDP: 64 sockets × 4 `/slow?ms=60000` against `--max-delayed 32`:
/// exactly 32 are kept, every other one is answered 5.03 at once; another client is served.
#[tokio::test]
async fn udp_delayed_answers_are_bounded_in_all() {
    let server = with_udp(&["--max-delayed", "32"], |addr| async move {
        let mut refused = 0;
        for s in 0..64u16 {
            let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            for i in 0..4u16 {
                sock.send_to(&con(s * 4 + i, u64::from(i), "slow?ms=60000").to_bytes(), addr).await.unwrap();
            }
            if s >= 8 {
                for _ in 0..4 {
                    let mut buf = [0u8; 512];
                    let n = tokio::time::timeout(LIMIT, sock.recv(&mut buf)).await.unwrap().unwrap();
                    refused += u32::from(Message::decode(&buf[..n]).unwrap().code == Code::SERVICE_UNAVAILABLE);
                }
            }
        }
        assert_eq!(refused, (64 - 8) * 4);
        victim(&format!("coap://{addr}/hello"), 20).await;
    })
    .await;
    assert_eq!(server.delayed(), 32);
}

/// Probe item 6: while another client uploads 20 kB in 256-byte Block1 blocks, one port
/// starts uploads under ever new `?k=N` keys (100 between each of the victim's blocks). The
/// victim's upload completes; the attacker only ever replaces its own.
#[tokio::test]
async fn udp_an_upload_cannot_be_evicted() {
    let body: Vec<u8> = (0..20_000u32).map(|i| (i % 249) as u8).collect();
    let b = body.clone();
    let server = with_udp(&[], |addr| async move {
        let (attacker, victim_sock) =
            (UdpSocket::bind("127.0.0.1:0").await.unwrap(), UdpSocket::bind("127.0.0.1:0").await.unwrap());
        let mut buf = [0u8; 1024];
        let mut k = 0u32;
        let blocks = b.len().div_ceil(256);
        let mut last = None;
        for num in 0..blocks {
            let end = ((num + 1) * 256).min(b.len());
            let mut m = Message::new(MessageType::Con, Code::PUT, num as u16).with_token(Token::from_u64(num as u64));
            m.add_uri_path("upload");
            m.set_block1(Block { num: num as u32, more: end < b.len(), szx: 4 }).unwrap();
            m.payload = b[num * 256..end].to_vec();
            victim_sock.send_to(&m.to_bytes(), addr).await.unwrap();
            let n = tokio::time::timeout(LIMIT, victim_sock.recv(&mut buf)).await.unwrap().unwrap();
            let a = Message::decode(&buf[..n]).unwrap();
            last = Some(a.clone());
            if end < b.len() {
                assert_eq!(a.code, Code::CONTINUE, "block {num}");
            }
            for _ in 0..100 {
                let mut m = Message::new(MessageType::Con, Code::PUT, 30_000 + k as u16).with_token(Token::from_u64(1));
                m.add_uri_path("upload");
                m.add_uri_query(&format!("k={k}"));
                m.set_block1(Block { num: 0, more: true, szx: 0 }).unwrap();
                m.payload = vec![0; 16];
                attacker.send_to(&m.to_bytes(), addr).await.unwrap();
                let n = tokio::time::timeout(LIMIT, attacker.recv(&mut buf)).await.unwrap().unwrap();
                assert_eq!(Message::decode(&buf[..n]).unwrap().code, Code::CONTINUE);
                k += 1;
            }
        }
        let a = last.unwrap();
        assert_eq!((a.code, a.payload.as_slice()), (Code::CHANGED, &b"received 20000 bytes"[..]));
        let (r, _) = client(&format!("coap://{addr}/upload"), &["-q"]).await;
        assert_eq!(r.unwrap().last_payload.unwrap(), b);
    })
    .await;
    let t = server.endpoint().transfers();
    assert_eq!(t.len(), 4, "the attacker's share");
    assert_eq!(t.stats().refused, 0);
    assert!(t.stats().replaced >= 7_800, "{:?}", t.stats());
}

/// Probe item 7 over UDP: 64 registrations from one socket with the same token are one
/// observation; with new tokens, the socket's share; another client registers and gets its
/// notifications.
#[tokio::test]
async fn udp_one_socket_cannot_hold_every_observation() {
    let server = with_udp(&[], |addr| async move {
        let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let mut buf = [0u8; 512];
        let mut registered = 0;
        for i in 0..128u16 {
            let tok = if i < 64 { 7 } else { u64::from(i) };
            let mut m = con(i, tok, "counter?period=60000");
            m.options.set_uint(option::OBSERVE, 0);
            sock.send_to(&m.to_bytes(), addr).await.unwrap();
            let n = tokio::time::timeout(LIMIT, sock.recv(&mut buf)).await.unwrap().unwrap();
            registered += u32::from(Message::decode(&buf[..n]).unwrap().options.contains(option::OBSERVE));
        }
        assert_eq!(registered, 64 + 3);
        let (r, _) = client(&format!("coap://{addr}/counter?period=100"), &["--observe", "2", "-q"]).await;
        assert_eq!(r.unwrap().notifications, 2);
    })
    .await;
    assert!(server.endpoint().observations() <= 5, "{}", server.endpoint().observations());
    assert!(server.observers() <= server.endpoint().observations(), "the server's own map is as bounded");
}

/// Probe item 5 over UDP: a POST of 3 000 bytes to `/echo` comes back whole, and `GET /echo`
/// returns the 3 000 bytes.
#[tokio::test]
async fn udp_post_3000_bytes_to_echo() {
    let file = std::env::temp_dir().join(format!("coapcc-hostile-echo-{}.bin", std::process::id()));
    let body: Vec<u8> = (0..3000u32).map(|i| (i % 247) as u8).collect();
    std::fs::write(&file, &body).unwrap();
    let f = file.clone();
    let b = body.clone();
    with_udp(&[], |addr| async move {
        let (r, _) = client(&format!("coap://{addr}/echo"), &["-m", "post", "-f", f.to_str().unwrap(), "-q"]).await;
        assert_eq!(r.unwrap().last_payload.unwrap(), b);
        let (r, _) = client(&format!("coap://{addr}/echo"), &["-q"]).await;
        assert_eq!(r.unwrap().last_payload.unwrap(), b);
    })
    .await;
    let _ = std::fs::remove_file(&file);
}

// ---------------------------------------------------------------------------------------
// Hostile servers against the TCP client
// ---------------------------------------------------------------------------------------

/// A fake CoAP-over-TCP server: sends its CSM, then answers every request with `answer`.
async fn fake_tcp_server(answer: fn(&TcpMessage) -> TcpMessage) -> (SocketAddr, tokio::task::JoinHandle<u32>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        s.write_all(&TcpMessage::csm(Some(4 << 20), true).to_bytes()).await.unwrap();
        let (mut buf, mut chunk, mut served) = (Vec::new(), vec![0u8; 65536], 0);
        loop {
            let Ok(Ok(k)) = tokio::time::timeout(LIMIT, s.read(&mut chunk)).await else { break };
            if k == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..k]);
            while let Ok(Some((m, used))) = decode_frame(&buf) {
                buf.drain(..used);
                if m.code.is_request() {
                    served += 1;
                    if s.write_all(&answer(&m).to_bytes()).await.is_err() {
                        return served;
                    }
                }
            }
        }
        served
    });
    (addr, task)
}

/// Probe item 3: a server answering every request with 2.05, Block2 more=1, szx=6 and a
/// 2 MB payload. The client checks the payload against the SZX and fails the request at the
/// first such block (it used to follow the chain to 5 GB).
#[tokio::test]
async fn tcp_client_refuses_oversized_blocks() {
    let (addr, task) = fake_tcp_server(|req| {
        let mut m = TcpMessage::new(Code::CONTENT).with_token(req.token).with_payload(vec![b'z'; 2_000_000]);
        m.set_block2(Block { num: req.block2().unwrap().map_or(0, |b| b.num), more: true, szx: 6 }).unwrap();
        m
    })
    .await;
    let (r, _) = client(&format!("coap+tcp://{addr}/x"), &["-q"]).await;
    let s = r.unwrap();
    assert_eq!((s.failed, s.first_failure.map(|f| f.as_str()), s.exchanges), (1, Some("bad-block"), 1));
    assert_eq!(task.await.unwrap(), 1, "no second block was asked for");
}

/// An endless chain of valid blocks ends at `--max-blocks`, over TCP as over UDP.
#[tokio::test]
async fn tcp_client_cuts_an_endless_chain_at_max_blocks() {
    let (addr, task) = fake_tcp_server(|req| {
        let mut m = TcpMessage::new(Code::CONTENT).with_token(req.token).with_payload(vec![b'z'; 1024]);
        m.set_block2(Block { num: req.block2().unwrap().map_or(0, |b| b.num), more: true, szx: 6 }).unwrap();
        m
    })
    .await;
    let (r, lines) = client(&format!("coap+tcp://{addr}/x"), &["--max-blocks", "50", "-q"]).await;
    let s = r.unwrap();
    assert_eq!((s.failed, s.first_failure.map(|f| f.as_str())), (1, Some("too-many-blocks")));
    assert_eq!(task.await.unwrap(), 50);
    assert_eq!(lines.iter().filter(|l| l["type"] == "exchange").count(), 50);
}
