//! Benchmark of issue 9 item 1: one attacker floods `coapcc server` with CON
//! `GET /slow?ms=1500` from one source port and never acknowledges, while another client
//! asks `/hello` back to back. Prints the other client's request rate before, during and
//! after the attack, the process's resident memory, and the server's counters.
//!
//! `cargo run --release -p coapcc-net --example slow_flood -- [ATTACK_SECS] [RATE_PER_S]`
//! (defaults 20 s at 1 000/s). Server, attacker and measuring client share this process, so
//! the memory figure is an upper bound for the server's.

use std::net::SocketAddr;
use std::time::Duration;

use coapcc_net::{Server, ServerArgs};
use coapcc_proto::{Code, Message, MessageType, Token};
use tokio::net::UdpSocket;
use tokio::time::Instant;

fn rss_mb() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb: f64 =
        s.lines().find_map(|l| l.strip_prefix("VmRSS:")?.trim().strip_suffix("kB")?.trim().parse().ok()).unwrap_or(0.0);
    kb / 1024.0
}

fn request(mid: u16, path: &str, query: Option<&str>) -> Vec<u8> {
    let mut m = Message::new(MessageType::Con, Code::GET, mid).with_token(Token::from_u64(u64::from(mid) + 1));
    m.add_uri_path(path);
    if let Some(q) = query {
        m.add_uri_query(q);
    }
    m.to_bytes()
}

/// Back-to-back `/hello` requests for `secs`; returns completed requests per second.
async fn hello_rate(sock: &UdpSocket, mid: &mut u16, secs: f64) -> f64 {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut done = 0u64;
    let mut buf = [0u8; 2048];
    while Instant::now() < end {
        *mid = mid.wrapping_add(1);
        sock.send(&request(*mid, "hello", None)).await.unwrap();
        let until = Instant::now() + Duration::from_millis(500);
        while let Ok(Ok(n)) = tokio::time::timeout_at(until, sock.recv(&mut buf)).await {
            if Message::decode(&buf[..n]).is_ok_and(|m| m.message_id == *mid && m.code == Code::CONTENT) {
                done += 1;
                break;
            }
        }
    }
    done as f64 / secs
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut argv = std::env::args().skip(1);
    let attack_secs: f64 = argv.next().and_then(|a| a.parse().ok()).unwrap_or(20.0);
    let rate: f64 = argv.next().and_then(|a| a.parse().ok()).unwrap_or(1000.0);
    let args = <ServerArgs as clap::Parser>::parse_from(["server", "--bind", "127.0.0.1:0", "--seed", "1"]);
    let mut server = Server::bind(&args).await.unwrap();
    let addr: SocketAddr = server.local_addr();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let srv = tokio::spawn(async move {
        let stats = server.run_until(async { stop_rx.await.ok() }).await.unwrap();
        (stats, server.endpoint().retained_exchanges())
    });

    let client = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    client.connect(addr).await.unwrap();
    let mut mid = 0u16;
    let rss0 = rss_mb();
    let base = hello_rate(&client, &mut mid, 3.0).await;
    println!("baseline: /hello {base:.0} requests/s, RSS {rss0:.1} MB");

    let attacker = tokio::spawn(async move {
        let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        sock.connect(addr).await.unwrap();
        let start = Instant::now();
        let total = (attack_secs * rate) as u64;
        for i in 0..total {
            let at = start + Duration::from_secs_f64(i as f64 / rate);
            tokio::time::sleep_until(at).await;
            let _ = sock.send(&request(i as u16, "slow", Some("ms=1500"))).await;
        }
        total
    });
    let mut during = Vec::new();
    let mut rss_max = rss0;
    let attack_end = Instant::now() + Duration::from_secs_f64(attack_secs);
    while Instant::now() + Duration::from_secs(1) <= attack_end {
        during.push(hello_rate(&client, &mut mid, 1.0).await);
        rss_max = rss_max.max(rss_mb());
    }
    let sent = attacker.await.unwrap();
    let mut after = Vec::new();
    for _ in 0..5 {
        after.push(hello_rate(&client, &mut mid, 1.0).await);
    }
    let rss_after = rss_mb();
    stop_tx.send(()).unwrap();
    let (stats, retained) = srv.await.unwrap();

    let mut sorted = during.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
    let min = sorted.first().copied().unwrap_or(0.0);
    println!("attack: {sent} CON /slow?ms=1500 from one port in {attack_secs} s ({rate:.0}/s), never acknowledged");
    println!(
        "during attack: /hello median {median:.0} requests/s ({:.2} of baseline), worst second {min:.0} ({:.2})",
        median / base,
        min / base
    );
    let after_txt: Vec<String> = after.iter().map(|r| format!("{r:.0}")).collect();
    println!(
        "after attack, per second: {} requests/s (first second {:.2} of baseline)",
        after_txt.join(", "),
        after[0] / base
    );
    println!("RSS: before {rss0:.1} MB, max during attack {rss_max:.1} MB, after {rss_after:.1} MB");
    println!(
        "server: {} requests admitted, {} answered 5.03 (over the per-peer limit), {} exchanges retained at the end",
        stats.requests_received, stats.requests_refused, retained
    );
}
