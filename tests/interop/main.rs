//! Interop tests: coapcc's endpoint against libcoap (`coap-server`, `coap-client`) and
//! aiocoap, in both roles.
//!
//! Built as the `interop` integration test of `crates/coapcc-net`, so `cargo test
//! --workspace` runs it. Both peers run as processes (ours is the `coapcc-net` binary), each
//! started through a [`Link`] on its side, so the cases can run over loopback today and
//! through the link emulator once it adds a `Link` variant. A test whose peer is not
//! installed prints `SKIPPED <test>: <reason>` and passes; `COAPCC_REQUIRE_INTEROP=1` makes
//! that a failure. See docs/interop.md.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use support::*;

// ---------------------------------------------------------------------------------------
// Our client against libcoap's coap-server
// ---------------------------------------------------------------------------------------

async fn client_vs_libcoap_server(link: Link) {
    let test = "our client vs libcoap coap-server";
    let bin = match libcoap("server") {
        Ok(b) => b,
        Err(e) => return skip(test, &e),
    };
    eprintln!("{test} [{}]: {}", link.name(), libcoap_version(&bin).await);
    let addr = SocketAddr::new(link.server_ip(), free_port(link.server_ip()));
    let mut cmd = link.command(Side::Server, &bin);
    cmd.args([
        "-A",
        &addr.ip().to_string(),
        "-p",
        &addr.port().to_string(),
        "-v",
        "0",
    ]);
    let _server = spawn(cmd);
    assert!(
        wait_ready(addr, Duration::from_secs(10)).await,
        "libcoap server did not come up"
    );

    // GET / (libcoap's banner), piggybacked.
    let r = our_client(&link, &uri(addr, "/"), &[]).await;
    assert_eq!(r.ok_failed(), (1, 0), "{r:?}");
    assert!(r.text().contains("libcoap"));
    assert_eq!(r.exchanges()[0]["outcome"], "piggybacked");

    // Discovery.
    let r = our_client(&link, &uri(addr, "/.well-known/core"), &[]).await;
    assert!(r.text().contains("</example_data>"), "{r:?}");

    // PUT 1000 bytes, then read them back block-wise in 32-byte blocks (early negotiation:
    // libcoap honours the smaller size).
    let body = "z".repeat(999) + "!";
    let r = our_client(
        &link,
        &uri(addr, "/example_data"),
        &["-m", "put", "-p", &body],
    )
    .await;
    assert_eq!(r.ok_failed(), (1, 0), "PUT /example_data: {r:?}");
    let r = our_client(&link, &uri(addr, "/example_data"), &["--block-size", "32"]).await;
    assert_eq!(r.text(), body);
    let ex = r.exchanges();
    assert_eq!(ex.len(), 32, "1000 bytes in 32-byte blocks");
    for (i, e) in ex.iter().enumerate() {
        assert_eq!(
            (e["block2"]["num"].as_u64(), e["block2"]["szx"].as_u64()),
            (Some(i as u64), Some(1))
        );
    }

    // Several algorithms, five back-to-back requests each.
    for cc in [
        "default",
        "cocoa",
        "cocoa-plus",
        "fasor",
        "fasor-token",
        "pcocoa",
        "linux-rto",
    ] {
        let r = our_client(&link, &uri(addr, "/"), &["--cc", cc, "-n", "5"]).await;
        assert_eq!(r.ok_failed(), (5, 0), "{cc}: {r:?}");
        assert!(r.exchanges().iter().all(|e| e["algorithm"] == cc));
    }
}

async fn client_vs_lossy_libcoap_server(link: Link) {
    // libcoap's `-l 1` drops the server's first datagram (the piggybacked response to copy
    // 0): our client retransmits, and with fasor-token learns which copy libcoap answered.
    let test = "our client vs lossy libcoap coap-server";
    let bin = match libcoap("server") {
        Ok(b) => b,
        Err(e) => return skip(test, &e),
    };
    let cases = [
        ("default:dither=off,ack_timeout=0.3", None),
        ("fasor-token:dither=off,ack_timeout=0.3", Some(1)),
    ];
    for (cc, expect_copy) in cases {
        let addr = SocketAddr::new(link.server_ip(), free_port(link.server_ip()));
        let mut cmd = link.command(Side::Server, &bin);
        cmd.args([
            "-A",
            &addr.ip().to_string(),
            "-p",
            &addr.port().to_string(),
            "-v",
            "0",
            "-l",
            "1",
        ]);
        let _server = spawn(cmd);
        // No readiness ping here: its RST would be the datagram that -l drops.
        assert!(wait_bound(addr, Duration::from_secs(10)).await);
        tokio::time::sleep(Duration::from_millis(100)).await;
        let r = our_client(&link, &uri(addr, "/"), &["--cc", cc]).await;
        assert_eq!(r.ok_failed(), (1, 0), "{cc}: {r:?}");
        let e = r.exchanges()[0];
        assert_eq!(
            e["retransmissions"], 1,
            "{cc}: the first response was dropped"
        );
        // libcoap 4.3.1 answers the retransmitted copy with that copy's token, so
        // fasor-token learns it answered copy 1 (AMBIG-21 answer-each-copy behaviour).
        assert_eq!(
            e["copy"]["ordinal"].as_u64(),
            expect_copy,
            "{cc}: copy {}",
            e["copy"]
        );
    }
}

#[tokio::test]
async fn our_client_vs_libcoap_server() {
    client_vs_libcoap_server(Link::Direct).await;
}

#[tokio::test]
async fn our_client_vs_lossy_libcoap_server() {
    client_vs_lossy_libcoap_server(Link::Direct).await;
}

// ---------------------------------------------------------------------------------------
// Our client against an aiocoap server
// ---------------------------------------------------------------------------------------

async fn client_vs_aiocoap_server(link: Link) {
    let test = "our client vs aiocoap server";
    let (py, version) = match aiocoap_python().await {
        Ok(p) => p,
        Err(e) => return skip(test, &e),
    };
    eprintln!("{test} [{}]: aiocoap {version}", link.name());
    let addr = SocketAddr::new(link.server_ip(), free_port(link.server_ip()));
    let mut cmd = link.command(Side::Server, &py);
    cmd.arg(script("aiocoap_server.py"))
        .args([addr.ip().to_string(), addr.port().to_string()]);
    let mut server = spawn(cmd);
    assert!(
        wait_line(&mut server, "ready", Duration::from_secs(30)).await,
        "aiocoap server did not start"
    );
    assert!(wait_ready(addr, Duration::from_secs(10)).await);

    let r = our_client(&link, &uri(addr, "/hello"), &[]).await;
    assert_eq!(r.body.as_deref(), Some(&coapcc_net::resources::HELLO[..]));

    // aiocoap chooses 1024-byte blocks: 100 exchanges.
    let r = our_client(&link, &uri(addr, "/large?size=102400"), &[]).await;
    assert!(
        r.body.as_deref() == Some(&large(102_400)[..]),
        "body differs"
    );
    assert_eq!(r.exchanges().len(), 100);
    // We ask for 256-byte blocks: the thesis transfer, 400 exchanges.
    let r = our_client(
        &link,
        &uri(addr, "/large?size=102400"),
        &["--block-size", "256"],
    )
    .await;
    assert!(
        r.body.as_deref() == Some(&large(102_400)[..]),
        "body differs"
    );
    assert_eq!(r.exchanges().len(), 400);

    let r = our_client(&link, &uri(addr, "/echo"), &["-m", "put", "-p", "interop"]).await;
    assert_eq!(
        (r.last_code().as_deref(), r.text().as_str()),
        (Some("2.04"), "interop")
    );
    let r = our_client(&link, &uri(addr, "/.well-known/core"), &[]).await;
    assert!(r.text().contains("</hello>"));
    let r = our_client(&link, &uri(addr, "/hello"), &["--non"]).await;
    assert_eq!(r.body.map(|b| b.len()), Some(60));
    let r = our_client(&link, &uri(addr, "/hello"), &["--cc", "cocoa", "-n", "10"]).await;
    assert_eq!(r.ok_failed(), (10, 0));
}

#[tokio::test]
async fn our_client_vs_aiocoap_server() {
    client_vs_aiocoap_server(Link::Direct).await;
}

// ---------------------------------------------------------------------------------------
// libcoap's coap-client against our server
// ---------------------------------------------------------------------------------------

async fn libcoap_client_vs_server(link: Link) {
    let test = "libcoap coap-client vs our server";
    let bin = match libcoap("client") {
        Ok(b) => b,
        Err(e) => return skip(test, &e),
    };
    eprintln!("{test} [{}]: {}", link.name(), libcoap_version(&bin).await);
    let (_server, addr) = our_server(&link, &[]).await;
    let coap_client = |method: &str, p: &str, extra: &[&str]| {
        let mut c = link.command(Side::Client, &bin);
        c.args(["-B", "20", "-m", method])
            .args(extra)
            .arg(uri(addr, p));
        c
    };
    // coap-client prints the payload followed by a newline.
    let body = |o: std::process::Output| {
        assert!(
            o.status.success(),
            "coap-client failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let mut v = o.stdout;
        if v.last() == Some(&b'\n') {
            v.pop();
        }
        v
    };
    assert_eq!(
        body(run(coap_client("get", "/hello", &[])).await),
        coapcc_net::resources::HELLO
    );
    // Block2 with the client's size (256) and with ours (1024).
    assert!(
        body(run(coap_client("get", "/large?size=102400", &["-b", "256"])).await) == large(102_400)
    );
    assert!(body(run(coap_client("get", "/large?size=5000", &[])).await) == large(5000));
    let wkc = body(run(coap_client("get", "/.well-known/core", &[])).await);
    assert!(String::from_utf8_lossy(&wkc).contains("</large>"));
    // Separate response: Empty ACK after 1 s, then a CON 2.05 that coap-client ACKs.
    assert_eq!(
        body(run(coap_client("get", "/slow?ms=1500", &[])).await),
        b"slow response after 1500 ms"
    );
    // NON request, NON response.
    assert_eq!(
        body(run(coap_client("get", "/hello", &["-N"])).await),
        coapcc_net::resources::HELLO
    );
    let put = run(coap_client("put", "/echo", &["-e", "from libcoap"])).await;
    assert_eq!(body(put), b"from libcoap");
    assert_eq!(
        body(run(coap_client("get", "/echo", &[])).await),
        b"from libcoap"
    );
}

#[tokio::test]
async fn libcoap_client_vs_our_server() {
    libcoap_client_vs_server(Link::Direct).await;
}

// ---------------------------------------------------------------------------------------
// An aiocoap client against our server
// ---------------------------------------------------------------------------------------

async fn aiocoap_client_vs_server(link: Link) {
    let test = "aiocoap client vs our server";
    let (py, version) = match aiocoap_python().await {
        Ok(p) => p,
        Err(e) => return skip(test, &e),
    };
    eprintln!("{test} [{}]: aiocoap {version}", link.name());
    let (_server, addr) = our_server(&link, &["--cc", "cocoa"]).await;
    let call = |method: &str, p: &str, extra: &[&str]| {
        let mut c = link.command(Side::Client, &py);
        c.arg(script("aiocoap_client.py"))
            .arg(method)
            .arg(uri(addr, p))
            .args(extra);
        c
    };
    let json = |o: std::process::Output| -> serde_json::Value {
        assert!(
            o.status.success(),
            "aiocoap client failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        serde_json::from_slice(&o.stdout).expect("JSON from aiocoap_client.py")
    };
    let r = json(run(call("get", "/hello", &[])).await);
    assert_eq!(
        (r["code"].as_str(), r["len"].as_u64()),
        (Some("2.05"), Some(60))
    );
    let out =
        std::env::temp_dir().join(format!("coapcc-interop-{}-aiocoap.bin", std::process::id()));
    let r = json(
        run(call(
            "get",
            "/large?size=102400",
            &["--out", out.to_str().unwrap()],
        ))
        .await,
    );
    assert_eq!(r["len"].as_u64(), Some(102_400));
    let got = std::fs::read(&out).expect("aiocoap client body");
    let _ = std::fs::remove_file(&out);
    assert!(got == large(102_400), "reassembled body differs");
    let r = json(run(call("get", "/slow?ms=1200", &[])).await);
    assert_eq!(r["payload"], "slow response after 1200 ms");
    let r = json(run(call("put", "/echo", &["--payload", "from aiocoap"])).await);
    assert_eq!(
        (r["code"].as_str(), r["payload"].as_str()),
        (Some("2.04"), Some("from aiocoap"))
    );
    let r = json(run(call("get", "/nope", &[])).await);
    assert_eq!(r["code"], "4.04");
    let r = json(run(call("get", "/.well-known/core", &[])).await);
    assert!(r["len"].as_u64().unwrap() > 50);
}

#[tokio::test]
async fn aiocoap_client_vs_our_server() {
    aiocoap_client_vs_server(Link::Direct).await;
}
