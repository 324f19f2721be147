//! Reliability: flood the server from loopback with 20 000 random and malformed datagrams
//! while a client keeps doing requests. The server keeps serving, its state stays bounded by
//! the deduplication capacity, and malformed CONs get RST.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::Duration;

use coapcc_cc::{Entropy, SplitMix64};
use coapcc_net::{run_client, ClientArgs, Server, ServerArgs};
use coapcc_proto::{Code, Message, MessageType, Token};
use tokio::net::UdpSocket;

const FLOOD: usize = 20_000;
const CAPACITY: usize = 512;
const FLOOD_SOCKETS: usize = 4;

fn rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines().find_map(|l| l.strip_prefix("VmRSS:")?.trim().strip_suffix("kB")?.trim().parse().ok())
}

/// One flood datagram; returns it and, for a malformed CON, its Message ID.
fn datagram(rng: &mut SplitMix64) -> (Vec<u8>, Option<u16>) {
    let r = rng.next_u64();
    let mid = (r >> 16) as u16;
    match r % 5 {
        // Random bytes (mostly undecodable).
        0 => {
            let n = (r >> 40) as usize % 80;
            ((0..n).map(|_| rng.next_u64() as u8).collect(), None)
        }
        // Malformed CON with a readable header: TKL 9..15.
        1 => {
            let tkl = 9 + (r >> 8) as u8 % 7;
            let mut b = vec![0x40 | tkl, 0x01, (mid >> 8) as u8, mid as u8];
            b.extend((0..(r >> 48) as usize % 20).map(|_| rng.next_u64() as u8));
            (b, Some(mid))
        }
        // Malformed CON: a truncated option.
        2 => (vec![0x40, 0x01, (mid >> 8) as u8, mid as u8, 0xB5, b'h', b'e'], Some(mid)),
        // A valid new CON request (fills the deduplication cache).
        3 => {
            let mut m = Message::new(MessageType::Con, Code::GET, mid).with_token(Token::from_u64(r >> 32));
            m.add_uri_path(if r & 1 == 0 { "hello" } else { "nothing" });
            (m.to_bytes(), None)
        }
        // Valid but stray NON / ACK / RST / responses.
        _ => {
            let t = MessageType::from_bits(((r >> 8) as u8 % 3) + 1);
            let code = if t == MessageType::Rst { Code::EMPTY } else { Code::CONTENT };
            let tok = if code.is_empty() { Token::EMPTY } else { Token::from_u64(r >> 40) };
            (Message::new(t, code, mid).with_token(tok).to_bytes(), None)
        }
    }
}

#[tokio::test]
async fn flood_keeps_serving_with_bounded_state() {
    let cap = CAPACITY.to_string();
    let args = <ServerArgs as clap::Parser>::parse_from(["server", "--bind", "127.0.0.1:0", "--dedup-capacity", &cap]);
    let mut server = Server::bind(&args).await.unwrap();
    let addr: SocketAddr = server.local_addr();
    let rss_before = rss_kib();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();

    let work = async move {
        let flood = async {
            let mut socks = Vec::new();
            for _ in 0..FLOOD_SOCKETS {
                socks.push(UdpSocket::bind("127.0.0.1:0").await.unwrap());
            }
            let mut rng = SplitMix64::new(0xF100D);
            let mut malformed_cons = HashSet::new();
            let mut sent = 0;
            let mut rsts = 0;
            let mut matched = HashSet::new();
            let mut buf = [0u8; 2048];
            // Count the RSTs that answer our malformed CONs (read as we go, so that the flood
            // sockets' own receive buffers do not overflow).
            let mut drain = |socks: &[UdpSocket],
                             malformed: &HashSet<(usize, u16)>,
                             rsts: &mut usize,
                             matched: &mut HashSet<(usize, u16)>| {
                for (k, s) in socks.iter().enumerate() {
                    while let Ok((n, _)) = s.try_recv_from(&mut buf) {
                        if let Ok(m) = Message::decode(&buf[..n]) {
                            if m.mtype == MessageType::Rst {
                                *rsts += 1;
                                if malformed.contains(&(k, m.message_id)) {
                                    matched.insert((k, m.message_id));
                                }
                            }
                        }
                    }
                }
            };
            for i in 0..FLOOD {
                let (bytes, mid) = datagram(&mut rng);
                let s = &socks[i % FLOOD_SOCKETS];
                if s.send_to(&bytes, addr).await.is_ok() {
                    sent += 1;
                    if let Some(m) = mid {
                        malformed_cons.insert((i % FLOOD_SOCKETS, m));
                    }
                }
                // Let the server (same task, via join!) run; pace to ~20k datagrams/s so the
                // loopback buffers do not simply drop everything.
                if i % 50 == 49 {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    drain(&socks, &malformed_cons, &mut rsts, &mut matched);
                }
            }
            for _ in 0..10 {
                tokio::time::sleep(Duration::from_millis(30)).await;
                drain(&socks, &malformed_cons, &mut rsts, &mut matched);
            }
            (sent, malformed_cons.len(), rsts, matched.len())
        };
        let requests = async {
            // A client doing requests throughout the flood (a short ACK_TIMEOUT so that a
            // request lost in an overflowing socket buffer is retried quickly).
            let uri = format!("coap://{addr}/hello");
            let mut total = 0;
            for round in 0..10 {
                let argv =
                    ["client", &uri, "-n", "5", "--cc", "cocoa:ack_timeout=0.25,max_retransmit=8", "--timeout", "60"];
                let args = <ClientArgs as clap::Parser>::parse_from(argv);
                let s = run_client(args, &mut std::io::sink()).await.unwrap();
                assert_eq!((s.success, s.failed), (5, 0), "round {round}");
                total += s.success;
            }
            total
        };
        let (flood_result, served) = tokio::join!(flood, requests);
        let _ = tx.send(());
        (flood_result, served)
    };
    let (stats, ((sent, malformed_sent, rsts, matched), served)) = tokio::join!(server.run_until(rx), work);
    let stats = stats.unwrap();
    eprintln!(
        "flood: sent {sent}, server got {} ({} malformed, {} requests, {} RST sent, dedup {} / evicted {}), \
         flood sockets got {rsts} RSTs ({matched} distinct malformed CONs of {malformed_sent} answered); client got {served} responses",
        stats.datagrams_in, stats.malformed, stats.requests_received, stats.rst_sent, stats.dedup_len, stats.dedup_evicted
    );
    assert_eq!(sent, FLOOD);
    assert_eq!(served, 50, "the client was served throughout");
    assert!(stats.datagrams_in >= FLOOD as u64 / 2, "the server processed the flood");
    assert!(stats.dedup_len as usize <= CAPACITY, "deduplication state bounded");
    assert!(stats.dedup_evicted > 0, "the cache filled and evicted");
    assert!(stats.malformed > 0 && stats.rst_sent > 0);
    // Nearly every malformed CON got its RST back (a few may be lost in socket buffers, and a
    // random MID may repeat).
    assert!(matched * 10 >= malformed_sent * 8, "malformed CONs get RST: {matched} of {malformed_sent}");
    let ep = server.endpoint();
    assert_eq!(ep.pending_server_requests(), 0);
    assert!(ep.dedup_len() <= CAPACITY);
    if let (Some(before), Some(after)) = (rss_before, rss_kib()) {
        assert!(after.saturating_sub(before) < 64 * 1024, "RSS grew from {before} to {after} KiB");
    }
}
