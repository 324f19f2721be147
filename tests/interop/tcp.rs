//! CoAP-over-TCP (RFC 8323) interop: coapcc's `coap+tcp` client and `server --tcp` against
//! libcoap's `coap-server`/`coap-client` (`coap+tcp://`) and aiocoap's TCP transport, both
//! directions, over loopback on the kernel's TCP.
//!
//! Built as the `interop_tcp` integration test of `crates/coapcc-net`. A missing peer prints
//! `SKIPPED <test>: <reason>` and passes, unless `COAPCC_REQUIRE_INTEROP=1` (CI), which
//! makes it a failure. See docs/tcp.md.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use support::*;

fn tcp_uri(addr: SocketAddr, path: &str) -> String {
    uri(addr, path).replacen("coap://", "coap+tcp://", 1)
}

/// Wait until something accepts TCP connections on `addr`.
async fn wait_tcp(addr: SocketAddr, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while tokio::time::Instant::now() < deadline {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// Our server with `--tcp` on a free loopback port.
async fn our_tcp_server() -> (tokio::process::Child, SocketAddr) {
    let addr = Link::Direct.server_addr();
    let mut cmd = tokio::process::Command::new(coapcc_net());
    cmd.args(["server", "--tcp", "--bind", &addr.to_string()]);
    let mut child = spawn(cmd);
    assert!(wait_tcp(addr, Duration::from_secs(20)).await, "our TCP server did not come up ({})", state(&mut child));
    (child, addr)
}

fn transport_is_tcp(r: &ClientRun) {
    let start = r.lines.iter().find(|l| l["type"] == "start").expect("start line");
    assert_eq!(start["transport"], "tcp", "{r:?}");
}

#[tokio::test]
async fn our_tcp_client_vs_libcoap_server() {
    let test = "our coap+tcp client vs libcoap coap-server";
    let bin = match libcoap("server") {
        Ok(b) => b,
        Err(e) => return skip(test, &e),
    };
    eprintln!("{test}: {}", libcoap_version(&bin).await);
    let link = Link::Direct;
    let addr = link.server_addr();
    let mut cmd = link.command(Side::Server, &bin);
    cmd.args(["-A", &addr.ip().to_string(), "-p", &addr.port().to_string(), "-v", "0"]);
    let mut server = spawn(cmd);
    assert!(wait_tcp(addr, Duration::from_secs(10)).await, "libcoap server not up on {addr} ({})", state(&mut server));

    let r = our_client(&link, &tcp_uri(addr, "/"), &[]).await;
    transport_is_tcp(&r);
    assert_eq!(r.ok_failed(), (1, 0), "{r:?}");
    assert!(r.text().contains("libcoap"));

    // PUT 3000 bytes, then read them back as one message, and block-wise in 256-byte blocks.
    let body = "t".repeat(2999) + "!";
    let r = our_client(&link, &tcp_uri(addr, "/example_data"), &["-m", "put", "-p", &body]).await;
    assert_eq!(r.ok_failed(), (1, 0), "PUT: {r:?}");
    let r = our_client(&link, &tcp_uri(addr, "/example_data"), &[]).await;
    assert_eq!(r.text(), body);
    assert_eq!(r.exchanges().len(), 1, "whole body in one message: {r:?}");
    let r = our_client(&link, &tcp_uri(addr, "/example_data"), &["--block-size", "256"]).await;
    assert_eq!(r.text(), body);
    let ex = r.exchanges();
    assert_eq!(ex.len(), 3000usize.div_ceil(256));
    for (i, e) in ex.iter().enumerate() {
        assert_eq!((e["block2"]["num"].as_u64(), e["block2"]["szx"].as_u64()), (Some(i as u64), Some(4)));
    }
    // Several requests on one connection.
    let r = our_client(&link, &tcp_uri(addr, "/"), &["-n", "5"]).await;
    assert_eq!(r.ok_failed(), (5, 0), "{r:?}");
}

#[tokio::test]
async fn libcoap_tcp_client_vs_our_server() {
    let test = "libcoap coap-client (coap+tcp) vs our server --tcp";
    let bin = match libcoap("client") {
        Ok(b) => b,
        Err(e) => return skip(test, &e),
    };
    eprintln!("{test}: {}", libcoap_version(&bin).await);
    let (_server, addr) = our_tcp_server().await;
    let get = |p: &str, extra: &[&str]| {
        let mut c = tokio::process::Command::new(&bin);
        c.args(["-B", "20"]).args(extra).arg(tcp_uri(addr, p));
        c
    };
    let body = |o: std::process::Output| {
        assert!(o.status.success(), "coap-client failed: {}", String::from_utf8_lossy(&o.stderr));
        let mut v = o.stdout;
        if v.last() == Some(&b'\n') {
            v.pop();
        }
        v
    };
    assert_eq!(body(run_for(get("/hello", &[]), CMD_TIMEOUT).await), coapcc_net::resources::HELLO);
    // The thesis transfer: 102 400 bytes as one CoAP-over-TCP message.
    assert_same(&body(run_for(get("/large?size=102400", &[]), CMD_TIMEOUT).await), &large(102_400), "GET /large");
    // Block2 requested by the client over TCP.
    assert_same(&body(run_for(get("/large?size=5000", &["-b", "256"]), CMD_TIMEOUT).await), &large(5000), "-b 256");
    assert_eq!(body(run_for(get("/slow?ms=1200", &[]), CMD_TIMEOUT).await), b"slow response after 1200 ms");
    let put = body(run_for(get("/echo", &["-m", "put", "-e", "from libcoap over tcp"]), CMD_TIMEOUT).await);
    assert_eq!(put, b"from libcoap over tcp");
    assert_eq!(body(run_for(get("/echo", &[]), CMD_TIMEOUT).await), b"from libcoap over tcp");
    let wkc = body(run_for(get("/.well-known/core", &[]), CMD_TIMEOUT).await);
    assert!(String::from_utf8_lossy(&wkc).contains("</large>"));
}

#[tokio::test]
async fn our_tcp_client_vs_aiocoap_server() {
    let test = "our coap+tcp client vs aiocoap server";
    let (py, version) = match aiocoap_python().await {
        Ok(p) => p,
        Err(e) => return skip(test, &e),
    };
    eprintln!("{test}: aiocoap {version}");
    let link = Link::Direct;
    let addr = link.server_addr();
    let mut cmd = tokio::process::Command::new(&py);
    cmd.arg(script("aiocoap_server.py")).arg(addr.ip().to_string()).arg(addr.port().to_string());
    let mut server = spawn(cmd);
    assert!(wait_line(&mut server, "ready", Duration::from_secs(30)).await, "aiocoap server: {}", state(&mut server));
    assert!(wait_tcp(addr, Duration::from_secs(10)).await, "aiocoap server does not accept TCP on {addr}");
    let r = our_client(&link, &tcp_uri(addr, "/hello"), &["-n", "3"]).await;
    transport_is_tcp(&r);
    assert_eq!(r.ok_failed(), (3, 0), "{r:?}");
    assert_eq!(r.body.as_deref(), Some(&coapcc_net::resources::HELLO[..]));
    let r = our_client(&link, &tcp_uri(addr, "/large?size=102400"), &[]).await;
    assert_eq!(r.ok_failed(), (1, 0), "{r:?}");
    assert_same(r.body.as_deref().unwrap_or_default(), &large(102_400), "aiocoap /large over TCP");
    let r = our_client(&link, &tcp_uri(addr, "/echo"), &["-m", "put", "-p", "from coapcc over tcp"]).await;
    assert_eq!(r.last_code().as_deref(), Some("2.04"));
    let r = our_client(&link, &tcp_uri(addr, "/echo"), &[]).await;
    assert_eq!(r.text(), "from coapcc over tcp");
}

#[tokio::test]
async fn aiocoap_tcp_client_vs_our_server() {
    let test = "aiocoap client (coap+tcp) vs our server --tcp";
    let (py, version) = match aiocoap_python().await {
        Ok(p) => p,
        Err(e) => return skip(test, &e),
    };
    eprintln!("{test}: aiocoap {version}");
    let (_server, addr) = our_tcp_server().await;
    let call = |method: &str, p: &str, extra: &[&str]| {
        let mut c = tokio::process::Command::new(&py);
        c.arg(script("aiocoap_client.py")).arg(method).arg(tcp_uri(addr, p)).args(["--timeout", "30"]).args(extra);
        c
    };
    let json = |o: std::process::Output| -> serde_json::Value {
        assert!(o.status.success(), "aiocoap client failed: {}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).expect("JSON from aiocoap_client.py")
    };
    let r = json(run_for(call("get", "/hello", &["--repeat", "3"]), CMD_TIMEOUT).await);
    assert_eq!((r["code"].as_str(), r["len"].as_u64(), r["requests"].as_u64()), (Some("2.05"), Some(60), Some(3)));
    let out = std::env::temp_dir().join(format!("coapcc-interop-tcp-{}-aiocoap.bin", std::process::id()));
    let r = json(run_for(call("get", "/large?size=102400", &["--out", out.to_str().unwrap()]), CMD_TIMEOUT).await);
    assert_eq!(r["len"].as_u64(), Some(102_400));
    let got = std::fs::read(&out).expect("aiocoap client body");
    let _ = std::fs::remove_file(&out);
    assert_same(&got, &large(102_400), "aiocoap client GET /large over TCP");
    let r = json(run_for(call("get", "/slow?ms=1200", &[]), CMD_TIMEOUT).await);
    assert_eq!(r["payload"], "slow response after 1200 ms");
    let r = json(run_for(call("put", "/echo", &["--payload", "from aiocoap over tcp"]), CMD_TIMEOUT).await);
    assert_eq!((r["code"].as_str(), r["payload"].as_str()), (Some("2.04"), Some("from aiocoap over tcp")));
    let r = json(run_for(call("get", "/nope", &[]), CMD_TIMEOUT).await);
    assert_eq!(r["code"], "4.04");
}
