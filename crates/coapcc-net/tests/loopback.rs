//! Our client against our server over real UDP on loopback.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use coapcc_net::resources::{large_body, HELLO};
use coapcc_net::server::bind_udp;
use coapcc_net::{run_client, ClientArgs, ClientSummary, Server, ServerArgs};
use coapcc_proto::endpoint::Stats;
use serde_json::Value;

async fn client(uri: &str, extra: &[&str]) -> anyhow::Result<(ClientSummary, Vec<Value>)> {
    let mut argv = vec!["client", uri, "--timeout", "30"];
    argv.extend_from_slice(extra);
    let args = <ClientArgs as clap::Parser>::parse_from(argv);
    let mut log = Vec::new();
    let s = run_client(args, &mut log).await?;
    let lines = String::from_utf8(log)?.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    Ok((s, lines))
}

fn uri(addr: SocketAddr, path: &str) -> String {
    match addr {
        SocketAddr::V4(a) => format!("coap://{a}{path}"),
        SocketAddr::V6(a) => format!("coap://[{}]:{}{path}", a.ip(), a.port()),
    }
}

fn exchanges(lines: &[Value]) -> Vec<&Value> {
    lines.iter().filter(|l| l["type"] == "exchange").collect()
}

/// Run `f` against our server bound at `bind`; returns the server's counters.
async fn with_server<F, Fut>(bind: &str, extra: &[&str], f: F) -> Stats
where
    F: FnOnce(SocketAddr) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut argv = vec!["server", "--bind", bind];
    argv.extend_from_slice(extra);
    let mut server = Server::bind(&<ServerArgs as clap::Parser>::parse_from(argv)).await.unwrap();
    let addr = server.local_addr();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let (stats, ()) = tokio::join!(server.run_until(rx), async move {
        f(addr).await;
        let _ = tx.send(());
    });
    assert_eq!(server.endpoint().pending_server_requests(), 0);
    stats.unwrap()
}

#[tokio::test]
async fn resources_over_loopback() {
    let stats = with_server("127.0.0.1:0", &[], |addr| async move {
        let (s, lines) = client(&uri(addr, "/hello"), &[]).await.unwrap();
        assert_eq!(s.last_payload.as_deref(), Some(&HELLO[..]));
        assert_eq!(lines.first().unwrap()["type"], "start");
        assert_eq!(lines.last().unwrap()["type"], "summary");
        let e = exchanges(&lines)[0];
        assert_eq!(
            (e["outcome"].as_str(), e["con"].as_bool(), e["code"].as_str()),
            (Some("piggybacked"), Some(true), Some("2.05"))
        );
        assert!(e["rtt_s"].as_f64().unwrap() > 0.0);
        assert_eq!(e["transmissions"][0]["ordinal"], 0);
        assert!(e["transmissions"][0]["timeout_s"].as_f64().unwrap() >= 2.0);
        assert_eq!(e["cc"]["rto_s"], 2.0);

        // The thesis transfer: 400 blocks of 256 bytes, one exchange line each.
        let (s, lines) =
            client(&uri(addr, "/large?size=102400"), &["--block-size", "256", "--cc", "cocoa"]).await.unwrap();
        assert!(s.last_payload.as_deref() == Some(&large_body(102_400)[..]));
        // A client new to the server first gets a small block with an Echo value (the
        // amplification limit, docs/robustness.md) and starts again with it: one more exchange.
        let ex = exchanges(&lines);
        assert_eq!(ex.len(), 401);
        let ex = &ex[1..];
        assert!(ex.iter().enumerate().all(|(i, e)| e["block2"]["num"] == i as u64 && e["block2"]["szx"] == 4));
        assert!(ex.last().unwrap()["cc"]["strong"]["samples"].as_u64().unwrap() > 0, "CoCoA sampled the RTT");
        // Server-chosen 1024-byte blocks.
        let (s, lines) = client(&uri(addr, "/large?size=3000"), &[]).await.unwrap();
        assert_eq!(s.last_payload.map(|p| p.len()), Some(3000));
        assert_eq!(exchanges(&lines).len(), 1 + 3);

        let (s, _) = client(&uri(addr, "/echo"), &["-m", "post", "-p", "posted"]).await.unwrap();
        assert_eq!(
            (s.last_code.unwrap().to_string(), s.last_payload.as_deref()),
            ("2.04".to_string(), Some(&b"posted"[..]))
        );
        let (s, _) = client(&uri(addr, "/echo"), &[]).await.unwrap();
        assert_eq!(s.last_payload.as_deref(), Some(&b"posted"[..]));

        // Separate response: Empty ACK after the 1 s piggyback timeout, then CON 2.05.
        let (s, lines) = client(&uri(addr, "/slow?ms=1300"), &["--cc", "fasor-token"]).await.unwrap();
        assert_eq!(s.last_payload.as_deref(), Some(&b"slow response after 1300 ms"[..]));
        let e = exchanges(&lines)[0];
        assert_eq!(e["outcome"], "separate");
        assert!(e["acked_s"].as_f64().unwrap() < e["response_s"].as_f64().unwrap());

        let (s, lines) = client(&uri(addr, "/hello"), &["--non", "-n", "3"]).await.unwrap();
        assert_eq!((s.success, s.failed), (3, 0));
        assert!(exchanges(&lines).iter().all(|e| e["outcome"] == "non-response" && e["con"] == false));

        let (s, _) = client(&uri(addr, "/nope"), &[]).await.unwrap();
        assert_eq!(s.last_code.unwrap().to_string(), "4.04");

        // Back-to-back requests with every algorithm of the registry.
        for info in coapcc_cc::ALGORITHMS {
            let (s, lines) = client(&uri(addr, "/hello"), &["--cc", info.name, "-n", "4"]).await.unwrap();
            assert_eq!((s.success, s.failed), (4, 0), "{}", info.name);
            assert!(exchanges(&lines).iter().all(|e| e["algorithm"] == info.name));
        }
    })
    .await;
    assert_eq!(stats.malformed, 0);
}

#[tokio::test]
async fn nstart_two_runs_requests_in_parallel() {
    with_server("127.0.0.1:0", &[], |addr| async move {
        let (s, lines) = client(&uri(addr, "/slow?ms=300"), &["-n", "4", "--nstart", "2"]).await.unwrap();
        assert_eq!(s.success, 4);
        let firsts: Vec<f64> =
            exchanges(&lines).iter().map(|e| e["transmissions"][0]["t_s"].as_f64().unwrap()).collect();
        let mut sorted = firsts.clone();
        sorted.sort_by(f64::total_cmp);
        assert!(sorted[1] - sorted[0] < 0.1, "two start at once: {sorted:?}");
        assert!(sorted[2] - sorted[0] > 0.25, "the third waits: {sorted:?}");
    })
    .await;
}

#[tokio::test]
async fn ipv6_loopback_and_dual_stack_default() {
    if std::net::UdpSocket::bind((IpAddr::V6(Ipv6Addr::LOCALHOST), 0)).is_err() {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "SKIPPED ipv6_loopback_and_dual_stack_default: no IPv6 loopback");
        return;
    }
    with_server("[::1]:0", &[], |addr| async move {
        assert!(addr.is_ipv6());
        let (s, _) = client(&uri(addr, "/hello"), &[]).await.unwrap();
        assert_eq!(s.last_payload.as_deref(), Some(&HELLO[..]));
    })
    .await;
    // The default wildcard `[::]` (here on port 0) is dual-stack: IPv4 clients reach it.
    with_server("[::]:0", &[], |addr| async move {
        let v4 = SocketAddr::new("127.0.0.1".parse().unwrap(), addr.port());
        let (s, _) = client(&uri(v4, "/hello"), &[]).await.unwrap();
        assert_eq!(s.last_payload.as_deref(), Some(&HELLO[..]));
    })
    .await;
}

#[tokio::test]
async fn errors_are_reported_not_panicked() {
    let err = |r: anyhow::Result<(ClientSummary, Vec<Value>)>| format!("{:#}", r.expect_err("an error"));
    let scheme = err(client("coaps://127.0.0.1/x", &[]).await);
    assert!(scheme.contains("use coap:// (CoAP over UDP) or coap+tcp:// (CoAP over TCP)"), "{scheme}");
    assert!(err(client("coap://127.0.0.1/x", &["--nstart", "0"]).await).contains("--nstart must be at least 1"));
    assert!(err(client("coap://127.0.0.1/x", &["--cc", "nope"]).await).contains("unknown algorithm"));
    assert!(err(client("coap://127.0.0.1/x", &["--block-size", "100"]).await).contains("--block-size"));
    assert!(bind_udp("not an address").await.is_err());
    let bad = <ServerArgs as clap::Parser>::parse_from(["server", "--bind", "127.0.0.1:0", "--block-size", "1000"]);
    assert!(Server::bind(&bad).await.is_err());
    // A peer that never answers: the exchange fails after MAX_RETRANSMIT (shortened here).
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let (s, lines) = client(
        &format!("coap://127.0.0.1:{port}/x"),
        &["--cc", "default:ack_timeout=0.05,max_retransmit=2,dither=off"],
    )
    .await
    .unwrap();
    assert_eq!((s.failed, s.first_failure.map(|f| f.as_str())), (1, Some("timeout")));
    let e = exchanges(&lines)[0];
    assert_eq!((e["outcome"].as_str(), e["retransmissions"].as_u64()), (Some("timeout"), Some(2)));
    let timers: Vec<f64> =
        e["transmissions"].as_array().unwrap().iter().map(|t| t["timeout_s"].as_f64().unwrap()).collect();
    assert_eq!(timers, [0.05, 0.1, 0.2]);
}

#[test]
fn default_args() {
    let a = ServerArgs::default();
    assert_eq!((a.bind.as_str(), a.cc.as_str(), a.dedup_capacity, a.block_size), ("[::]:5683", "default", 4096, 1024));
    let c = ClientArgs::get("coap://h/x");
    assert_eq!((c.count, c.non, c.nstart, c.cc.as_str()), (1, false, 1, "default"));
    assert!(<ClientArgs as clap::Parser>::try_parse_from(["client", "coap://h/", "--con", "--non"]).is_err());
}

/// `-n` is streamed: 20 000 back-to-back requests complete with every exchange logged in
/// order, and the client never holds more than NSTART + 1 requests (it used to submit all of
/// them at once, which made each packet's work grow with -n: 20 000 requests took 5.4 s and
/// 1 000 000 allocated 909 MB before the first was sent).
#[tokio::test]
async fn many_requests_are_streamed() {
    with_server("127.0.0.1:0", &[], |addr| async move {
        let (s, lines) = client(&uri(addr, "/hello"), &["-n", "20000", "--seed", "3"]).await.unwrap();
        assert_eq!((s.requests, s.responses, s.success, s.failed), (20_000, 20_000, 20_000, 0));
        let ids: Vec<u64> =
            lines.iter().filter(|l| l["type"] == "request").map(|l| l["id"].as_u64().unwrap()).collect();
        assert_eq!(ids.len(), 20_000);
        // Numbered 1, 2, ..., as over TCP (they used to be the endpoint's ids 1, 3, 5, ...).
        assert!(ids.iter().copied().eq(1..=20_000), "requests numbered from 1 in submission order");
        assert_eq!(lines.last().unwrap()["interrupted"], Value::Null);
    })
    .await;
}

/// Durations that cannot be represented are refused with a message naming the option
/// (`--timeout 1e300` used to panic in `Duration::from_secs_f64`).
#[tokio::test]
async fn extreme_durations_are_refused() {
    // Over UDP and over TCP alike (the TCP client used to panic on `--timeout 1e300`).
    for uri in ["coap://127.0.0.1:9/hello", "coap+tcp://127.0.0.1:9/hello"] {
        for flag in ["--timeout", "--response-timeout"] {
            for v in ["1e300", "-1", "0", "NaN", "inf"] {
                let arg = format!("{flag}={v}");
                let args = <ClientArgs as clap::Parser>::parse_from(["client", uri, &arg]);
                let err = run_client(args, &mut Vec::new()).await.unwrap_err().to_string();
                assert!(err.contains(flag) && err.contains("must be a number of seconds"), "{uri} {flag} {v}: {err}");
            }
        }
    }
    // Server limits: counts at least 1, durations bounded.
    for (flag, v) in
        [("--max-connections", "0"), ("--idle-timeout", "1e300"), ("--ping-rate", "NaN"), ("--accept-rate", "0")]
    {
        let arg = format!("{flag}={v}");
        let args = <ServerArgs as clap::Parser>::parse_from(["server", &arg]);
        let err = args.limits().unwrap_err().to_string();
        assert!(err.contains(flag), "{flag} {v}: {err}");
    }
    assert_eq!(ServerArgs::default().limits().unwrap(), coapcc_net::limits::ServerLimits::default());
    for v in ["1e300", "-1", "NaN"] {
        let arg = format!("--piggyback-timeout={v}");
        let args = <ServerArgs as clap::Parser>::parse_from(["server", &arg]);
        let err = args.endpoint_config().unwrap_err().to_string();
        assert!(err.contains("--piggyback-timeout must be"), "{v}: {err}");
    }
    // A 70 000-byte path segment is refused, not a panic in the option encoder.
    let long = format!("coap://127.0.0.1:9/{}", "a".repeat(70_000));
    let err = client(&long, &[]).await.unwrap_err().to_string();
    assert!(err.contains("exceeds CoAP's limit"), "{err}");
}

/// The client conventions of libcoap and aiocoap: case-insensitive methods, FETCH/PATCH/
/// iPATCH, content format and Accept by name or number, custom options, payload from a file.
#[tokio::test]
async fn client_conventions() {
    let dir = std::env::temp_dir().join(format!("coapcc-conv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("body.json");
    std::fs::write(&file, b"{\"a\": [1, 2, 3]}").unwrap();
    let f = file.to_str().unwrap().to_string();
    with_server("127.0.0.1:0", &[], |addr| async move {
        let echo = uri(addr, "/echo");
        // Payload from a file, Content-Format by name: echoed with the same format.
        let (s, lines) = client(&echo, &["-m", "PUT", "-f", &f, "-t", "json"]).await.unwrap();
        assert_eq!((s.success, s.last_payload.as_deref()), (1, Some(&b"{\"a\": [1, 2, 3]}"[..])));
        assert_eq!(exchanges(&lines)[0]["code"], "2.04");
        // Methods are case-insensitive; the text payload aliases -e/-p both work.
        let (s, _) = client(&echo, &["-m", "post", "-e", "x", "-t", "50"]).await.unwrap();
        assert_eq!((s.success, s.last_code.map(|c| c.to_string())), (1, Some("2.04".into())));
        // FETCH, PATCH, iPATCH reach the server (which does not implement them: 4.05).
        for m in ["FETCH", "patch", "iPATCH"] {
            let (s, _) = client(&echo, &["-m", m]).await.unwrap();
            assert_eq!((s.responses, s.client_errors, s.last_code.map(|c| c.to_string())), (1, 1, Some("4.05".into())));
        }
        // An elective custom option is ignored by the server; a critical unknown one gets 4.02.
        let (s, _) = client(&uri(addr, "/hello"), &["-O", "2048,0x0a0b", "-A", "text/plain"]).await.unwrap();
        assert_eq!(s.success, 1);
        let (s, _) = client(&uri(addr, "/hello"), &["-O", "2049,abc"]).await.unwrap();
        assert_eq!(s.last_code.map(|c| c.to_string()), Some("4.02".into()));
    })
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    for bad in [["-O", "0,x"], ["-O", "70000,x"], ["-O", "5,0xabc"], ["-t", "nope"], ["-m", "BREW"]] {
        let argv = [&["client", "coap://127.0.0.1/"][..], &bad[..]].concat();
        assert!(<ClientArgs as clap::Parser>::try_parse_from(argv).is_err(), "{bad:?} must be refused");
    }
}

/// A closed port answers with ICMP port unreachable: the client stops at once with a clear
/// message instead of retransmitting for MAX_TRANSMIT_WAIT (93 s).
#[tokio::test]
async fn port_unreachable_ends_the_run() {
    // Bind then drop a socket to find a port nobody listens on.
    let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let started = std::time::Instant::now();
    let err = client(&format!("coap://127.0.0.1:{port}/hello"), &[]).await.unwrap_err().to_string();
    assert!(err.contains("unreachable"), "{err}");
    // Well before the first retransmission (ACK_TIMEOUT 2 s x up to 1.5) would even be due;
    // bounded generously so a loaded machine cannot fail it.
    assert!(started.elapsed() < std::time::Duration::from_secs(25), "{:?}", started.elapsed());
}
