//! Interop tests: coapcc's endpoint against libcoap (`coap-server`, `coap-client`) and
//! aiocoap, in both roles.
//!
//! Built as the `interop` integration test of `crates/coapcc-net`, so `cargo test
//! --workspace` runs it. Both peers run as processes (ours is the `coapcc-net` binary), each
//! started through a [`Link`] on its side, so every case runs twice: over loopback (one test
//! per case) and through the link emulator (`coapcc-emu`: the testbed link with a lossy
//! profile, every case concurrently in its own emulator, in
//! `all_cases_through_lossy_emulator`), where retransmissions happen and every exchange must
//! still complete. A test whose peer (or, for the emulated run, root/`ip`/TUN) is missing
//! prints `SKIPPED <test>: <reason>` and passes; `COAPCC_REQUIRE_INTEROP=1` makes that a
//! failure. See docs/interop.md.

mod support;

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use support::*;

// ---------------------------------------------------------------------------------------
// Our client against libcoap's coap-server
// ---------------------------------------------------------------------------------------

/// A file holding `n` bytes of the `/large` pattern, to upload (RFC 7959 Block1 tests).
fn upload_file(tag: &str, n: usize) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("coapcc-interop-{}-{tag}-upload.bin", std::process::id()));
    std::fs::write(&p, large(n)).expect("upload file");
    p
}

/// RFC 7959 §3.3 sizes: bodies of 1, 2, 10 and 100 blocks of `block` bytes (the last block
/// 24 bytes short), over loopback 1024-byte blocks; on the lossy link 128-byte blocks and up to
/// 10 blocks (every datagram within the emulated MTU, and the run within minutes).
fn block_bodies(link: &Link) -> (usize, Vec<usize>) {
    let (block, counts): (usize, &[usize]) = link.pick((1024, &[1, 2, 10, 100]), (128, &[1, 2, 10]));
    (block, counts.iter().map(|n| n * block - 24).collect())
}

async fn client_vs_libcoap_server(link: Link) {
    let test = "our client vs libcoap coap-server";
    let bin = match libcoap("server") {
        Ok(b) => b,
        Err(e) => return skip(test, &e),
    };
    eprintln!("{test} [{}]: {}", link.name(), libcoap_version(&bin).await);
    let addr = link.server_addr();
    let mut cmd = link.command(Side::Server, &bin);
    cmd.args(["-A", &addr.ip().to_string(), "-p", &addr.port().to_string(), "-v", "0"]);
    let mut server = spawn(cmd);
    assert!(
        link.wait_ready(addr, Duration::from_secs(10)).await,
        "libcoap server did not come up on {addr} ({})",
        state(&mut server)
    );

    // GET / (libcoap's banner), piggybacked.
    let r = our_client(&link, &uri(addr, "/"), &[]).await;
    assert_eq!(r.ok_failed(), (1, 0), "{r:?}");
    assert!(r.text().contains("libcoap"));
    assert_eq!(r.exchanges()[0]["outcome"], "piggybacked");

    // Discovery.
    let r = our_client(&link, &uri(addr, "/.well-known/core"), &[]).await;
    assert!(r.text().contains("</example_data>"), "{r:?}");

    // PUT 1000 bytes (200 on the lossy link), then read them back block-wise in 32-byte
    // blocks (early negotiation: libcoap honours the smaller size).
    let len = link.pick(1000, 200);
    let body = "z".repeat(len - 1) + "!";
    let r = our_client(&link, &uri(addr, "/example_data"), &["-m", "put", "-p", &body]).await;
    assert_eq!(r.ok_failed(), (1, 0), "PUT /example_data: {r:?}");
    let r = our_client(&link, &uri(addr, "/example_data"), &["--block-size", "32"]).await;
    assert_eq!(r.text(), body);
    let ex = r.exchanges();
    assert_eq!(ex.len(), len.div_ceil(32), "{len} bytes in 32-byte blocks");
    for (i, e) in ex.iter().enumerate() {
        assert_eq!((e["block2"]["num"].as_u64(), e["block2"]["szx"].as_u64()), (Some(i as u64), Some(1)));
    }

    // Block1 (RFC 7959): 3000 bytes (600 on the lossy link) PUT in 256-byte blocks, each
    // answered 2.31 Continue, never one oversized datagram; read back whole.
    let n = link.pick(3000, 600);
    let f = upload_file(&format!("libcoap-{}", link.name().replace(' ', "-")), n);
    let r = our_client(
        &link,
        &uri(addr, "/example_data"),
        &["-m", "put", "-f", f.to_str().unwrap(), "--block-size", "256"],
    )
    .await;
    let _ = std::fs::remove_file(&f);
    assert_eq!(r.ok_failed(), (1, 0), "Block1 PUT /example_data: {r:?}");
    assert_eq!(r.exchanges().len(), n.div_ceil(256), "one exchange per Block1 block");
    let r = our_client(&link, &uri(addr, "/example_data"), &["--block-size", "256"]).await;
    assert_same(r.body.as_deref().unwrap_or_default(), &large(n), "Block1 upload read back from libcoap");

    // Block1 then Block2 for bodies of 1, 2, 10 and 100 blocks (libcoap's /example_data takes
    // PUT, not POST: the body goes up in one request and comes back in another).
    let (bs, sizes) = block_bodies(&link);
    let bs_arg = bs.to_string();
    for n in sizes {
        let f = upload_file(&format!("libcoap-blocks-{n}-{}", link.name().replace(' ', "-")), n);
        let r = our_client(
            &link,
            &uri(addr, "/example_data"),
            &["-m", "put", "-f", f.to_str().unwrap(), "--block-size", &bs_arg],
        )
        .await;
        let _ = std::fs::remove_file(&f);
        assert_eq!(r.ok_failed(), (1, 0), "PUT {n} bytes to /example_data: {}", r.failures());
        assert_eq!(r.exchanges().len(), n.div_ceil(bs), "one exchange per Block1 block");
        let r = our_client(&link, &uri(addr, "/example_data"), &["--block-size", &bs_arg]).await;
        assert_same(r.body.as_deref().unwrap_or_default(), &large(n), &format!("{n} bytes read back from libcoap"));
    }

    // Observe (RFC 7641): libcoap's /time changes every second; two notifications (loopback
    // only: libcoap sends most notifications as NON, which a lossy link may drop).
    if !link.lossy() {
        let r = our_client(&link, &uri(addr, "/time"), &["--observe", "2"]).await;
        assert_eq!(r.summary()["notifications"], 2, "{r:?}");
    }

    // Several algorithms, five back-to-back requests each (one on the lossy link).
    let n = link.pick(5, 1);
    for cc in ["default", "cocoa", "cocoa-plus", "fasor", "fasor-token", "pcocoa", "linux-rto"] {
        let r = our_client(&link, &uri(addr, "/"), &["--cc", cc, "-n", &n.to_string()]).await;
        assert_eq!(r.ok_failed(), (n, 0), "{cc}: {r:?}");
        assert!(r.exchanges().iter().all(|e| e["algorithm"] == cc));
    }
    link.finish(test, None);
}

async fn client_vs_lossy_libcoap_server(link: Link) {
    // libcoap's `-l 1` drops the server's first datagram (the piggybacked response to copy
    // 0): our client retransmits, and with fasor-token learns which copy libcoap answered.
    // Over loopback the ACK timeout is cut to 0.3 s; on the emulated link (0.66 s RTT) the
    // algorithms keep their own, and the link's losses come on top of libcoap's.
    let test = "our client vs lossy libcoap coap-server";
    let bin = match libcoap("server") {
        Ok(b) => b,
        Err(e) => return skip(test, &e),
    };
    let at = link.pick(",ack_timeout=0.3", "");
    let cases = [(format!("default:dither=off{at}"), false), (format!("fasor-token:dither=off{at}"), true)];
    for (cc, token) in cases {
        let addr = link.server_addr();
        let mut cmd = link.command(Side::Server, &bin);
        cmd.args(["-A", &addr.ip().to_string(), "-p", &addr.port().to_string(), "-v", "0", "-l", "1"]);
        let mut server = spawn(cmd);
        // No readiness ping here: its RST would be the datagram that -l drops.
        assert!(
            link.wait_bound(addr, Duration::from_secs(10)).await,
            "libcoap server did not bind {addr} ({})",
            state(&mut server)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        let r = our_client(&link, &uri(addr, "/"), &["--cc", &cc]).await;
        assert_eq!(r.ok_failed(), (1, 0), "{cc}: {r:?}");
        let e = r.exchanges()[0];
        let retx = e["retransmissions"].as_u64().unwrap();
        let copy = e["copy"]["ordinal"].as_u64();
        if !link.lossy() {
            assert_eq!(retx, 1, "{cc}: the first response was dropped");
            // libcoap 4.3.1 answers the retransmitted copy with that copy's token, so
            // fasor-token learns it answered copy 1 (AMBIG-21 answer-each-copy behaviour).
            assert_eq!(copy, token.then_some(1), "{cc}: copy {}", e["copy"]);
        } else {
            // The first response libcoap sends is dropped whatever the link does, so the
            // answered copy is never copy 0.
            assert!(retx >= 1, "{cc}: the first response was dropped");
            if token {
                assert!(
                    copy.is_some_and(|c| (1..=retx).contains(&c)),
                    "{cc}: copy {} of {retx} retransmissions",
                    e["copy"]
                );
            } else {
                assert_eq!(copy, None, "{cc}: copy {}", e["copy"]);
            }
        }
    }
    link.finish(test, None);
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
    let addr = link.server_addr();
    let mut cmd = link.command(Side::Server, &py);
    cmd.arg(script("aiocoap_server.py")).args([addr.ip().to_string(), addr.port().to_string()]);
    let mut server = spawn(cmd);
    assert!(
        wait_line(&mut server, "ready", Duration::from_secs(30)).await,
        "aiocoap server did not start ({})",
        state(&mut server)
    );
    assert!(link.wait_ready(addr, Duration::from_secs(10)).await);

    let r = our_client(&link, &uri(addr, "/hello"), &[]).await;
    assert_eq!(r.body.as_deref(), Some(&coapcc_net::resources::HELLO[..]));

    // 100 kB (2 kB on the lossy link).
    let size = link.pick(102_400, 2048);
    let large_uri = uri(addr, &format!("/large?size={size}"));
    let check = |r: &ClientRun, what: &str| {
        let what = format!("{what} ({})", r.failures());
        assert_same(r.body.as_deref().unwrap_or_default(), &large(size), &what);
    };
    // aiocoap chooses 1024-byte blocks: 100 exchanges. Loopback only: at the emulated link's
    // MTU (296) a 1024-byte block is four IP fragments, lost when any one is; with 10 % loss
    // an attempt fails 41 % of the time, and all 5 transmissions for 1.2 % of the exchanges.
    if !link.lossy() {
        let r = our_client(&link, &large_uri, &[]).await;
        check(&r, "aiocoap's block size");
        assert_eq!(r.exchanges().len(), size / 1024);
    }
    // We ask for 256-byte blocks (one packet each): the thesis transfer, 400 exchanges.
    let r = our_client(&link, &large_uri, &["--block-size", "256"]).await;
    check(&r, "--block-size 256");
    assert_eq!(r.exchanges().len(), size / 256);

    let r = our_client(&link, &uri(addr, "/echo"), &["-m", "put", "-p", "interop"]).await;
    assert_eq!((r.last_code().as_deref(), r.text().as_str()), (Some("2.04"), "interop"));
    // Block1 (RFC 7959): 3000 bytes (600 on the lossy link) PUT in 256-byte blocks; aiocoap
    // echoes the body, which comes back in Block2 blocks.
    let n = link.pick(3000, 600);
    let f = upload_file(&format!("aiocoap-{}", link.name().replace(' ', "-")), n);
    let r =
        our_client(&link, &uri(addr, "/echo"), &["-m", "put", "-f", f.to_str().unwrap(), "--block-size", "256"]).await;
    let _ = std::fs::remove_file(&f);
    assert_eq!(r.last_code().as_deref(), Some("2.04"), "{}", r.failures());
    assert_same(r.body.as_deref().unwrap_or_default(), &large(n), "Block1 PUT echoed by aiocoap");
    // RFC 7959 §3.3: a POST of 1, 2, 10 and 100 blocks goes up in Block1; aiocoap's answer
    // echoes it, which comes back in Block2 after the last Block1; GET /echo returns it.
    let (bs, sizes) = block_bodies(&link);
    let bs_arg = bs.to_string();
    for n in sizes {
        let f = upload_file(&format!("aiocoap-echo-{n}-{}", link.name().replace(' ', "-")), n);
        let r =
            our_client(&link, &uri(addr, "/echo"), &["-m", "post", "-f", f.to_str().unwrap(), "--block-size", &bs_arg])
                .await;
        let _ = std::fs::remove_file(&f);
        assert_eq!(r.last_code().as_deref(), Some("2.04"), "POST {n} bytes: {}", r.failures());
        assert_same(r.body.as_deref().unwrap_or_default(), &large(n), &format!("POST {n} bytes echoed by aiocoap"));
        // The echo came back in the block size asked for (Block2 in the last Block1 block).
        let sizes: Vec<u64> = r.exchanges().iter().filter_map(|e| e["block2"]["szx"].as_u64()).collect();
        assert!(sizes.iter().all(|&z| 16 << z == bs as u64), "{n} bytes: Block2 sizes {sizes:?}");
        let r = our_client(&link, &uri(addr, "/echo"), &["--block-size", &bs_arg]).await;
        let what = format!("GET /echo after POST of {n} bytes ({})", r.failures());
        assert_same(r.body.as_deref().unwrap_or_default(), &large(n), &what);
    }
    let r = our_client(&link, &uri(addr, "/.well-known/core"), &[]).await;
    assert!(r.text().contains("</hello>"));
    // NON is never retransmitted: a lost NON request or response fails by design, so it is
    // exercised over loopback only.
    if !link.lossy() {
        let r = our_client(&link, &uri(addr, "/hello"), &["--non"]).await;
        assert_eq!(r.body.map(|b| b.len()), Some(60));
    }
    let n = link.pick(10, 5);
    let r = our_client(&link, &uri(addr, "/hello"), &["--cc", "cocoa", "-n", &n.to_string()]).await;
    assert_eq!(r.ok_failed(), (n, 0));
    link.finish(test, None);
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
    // On the lossy link our server's blocks are 128 bytes, so that every datagram fits the
    // 296-byte MTU (a fragmented datagram is lost when any fragment is).
    let server = our_server(&link, link.pick(&[], &["--block-size", "128"])).await;
    let addr = server.addr;
    // coap-client gives up after -B seconds; one exchange may take up to MAX_TRANSMIT_WAIT
    // (93 s) on the lossy link.
    let wait = link.pick("20", "120");
    let coap_client = |method: &str, p: &str, extra: &[&str]| {
        let mut c = link.command(Side::Client, &bin);
        c.args(["-B", wait, "-m", method]).args(extra).arg(uri(addr, p));
        c
    };
    // coap-client prints the payload followed by a newline.
    let body = |o: std::process::Output| {
        assert!(o.status.success(), "coap-client failed: {}", String::from_utf8_lossy(&o.stderr));
        let mut v = o.stdout;
        if v.last() == Some(&b'\n') {
            v.pop();
        }
        v
    };
    let run = |c| link.run(c);
    assert_eq!(body(run(coap_client("get", "/hello", &[])).await), coapcc_net::resources::HELLO);
    // Block2 with the client's size and with ours: over loopback 100 kB in 256-byte blocks
    // (-b 256) and 5000 B in our 1024-byte blocks; on the lossy link 512 B in 64-byte blocks
    // and 1024 B in our 128-byte blocks (8 exchanges each).
    let (big, client_block, small) = link.pick((102_400, &["-b", "256"], 5000), (512, &["-b", "64"], 1024));
    let get_large = |n: usize, extra: &'static [&'static str]| {
        let p = format!("/large?size={n}");
        let cmd = coap_client("get", &p, extra);
        async move {
            let o = run(cmd).await;
            let err = String::from_utf8_lossy(&o.stderr).to_string();
            let what = format!("coap-client GET {p} {extra:?} (stderr: {err})");
            assert_same(&body(o), &large(n), &what);
        }
    };
    get_large(big, client_block).await;
    get_large(small, &[]).await;
    let wkc = body(run(coap_client("get", "/.well-known/core", &[])).await);
    assert!(String::from_utf8_lossy(&wkc).contains("</large>"));
    // Separate response: Empty ACK after 1 s, then a CON 2.05 that coap-client ACKs.
    assert_eq!(body(run(coap_client("get", "/slow?ms=1500", &[])).await), b"slow response after 1500 ms");
    // NON request, NON response (loopback only: NON is not retransmitted).
    if !link.lossy() {
        assert_eq!(body(run(coap_client("get", "/hello", &["-N"])).await), coapcc_net::resources::HELLO);
    }
    let put = run(coap_client("put", "/echo", &["-e", "from libcoap"])).await;
    assert_eq!(body(put), b"from libcoap");
    // Block1 (RFC 7959): coap-client -b 256 PUTs 3000 bytes (600 on the lossy link) block by
    // block; our server answers 2.31 Continue per block, then 2.04 (it used to say 4.02).
    let n = link.pick(3000, 600);
    let f = upload_file(&format!("libcoap-client-{}", link.name().replace(' ', "-")), n);
    let put = run(coap_client("put", "/upload", &["-b", "256", "-f", f.to_str().unwrap()])).await;
    let _ = std::fs::remove_file(&f);
    assert_eq!(body(put), format!("received {n} bytes").as_bytes());
    assert_same(&body(run(coap_client("get", "/upload", &["-b", "256"])).await), &large(n), "libcoap Block1 upload");
    // RFC 7959 §3.3: coap-client POSTs 1, 2, 10 and 100 blocks (and 3 000 bytes) to /echo in
    // Block1; the echo comes back in Block2 after the last block, each later block served from
    // the representation our server kept (it used to ask the resource again, which stored an
    // empty body: "4.02 Block2 out of range"); GET /echo then returns the body.
    let (bs, mut sizes) = block_bodies(&link);
    // 3 000 bytes over loopback only: in 128-byte blocks through the lossy link it is 47
    // exchanges, beyond coap-client's -B limit (it then prints what it has and exits 0).
    if !link.lossy() {
        sizes.push(3000);
    }
    let b_arg = bs.to_string();
    for n in sizes {
        let f = upload_file(&format!("libcoap-client-echo-{n}-{}", link.name().replace(' ', "-")), n);
        let echoed = run(coap_client("post", "/echo", &["-b", &b_arg, "-f", f.to_str().unwrap()])).await;
        let _ = std::fs::remove_file(&f);
        assert_same(&body(echoed), &large(n), &format!("coap-client POST of {n} bytes to /echo"));
        let got = body(run(coap_client("get", "/echo", &["-b", &b_arg])).await);
        assert_same(&got, &large(n), &format!("coap-client GET /echo after POST of {n} bytes"));
    }
    let put = run(coap_client("put", "/echo", &["-e", "from libcoap"])).await;
    assert_eq!(body(put), b"from libcoap");
    // Observe (RFC 7641): coap-client -s 3 observes /counter (a new value every 500 ms) for 3 s:
    // the first answer and CON notifications, acknowledged by coap-client.
    if !link.lossy() {
        let o = run(coap_client("get", "/counter?period=500", &["-s", "3"])).await;
        let out = body(o);
        assert!(out.len() >= 4, "first answer and notifications, got {:?}", String::from_utf8_lossy(&out));
    }
    assert_eq!(body(run(coap_client("get", "/echo", &[])).await), b"from libcoap");
    let summary = server.stop().await;
    link.finish(test, Some(&summary));
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
    let server = our_server(&link, link.pick(&["--cc", "cocoa"], &["--cc", "cocoa", "--block-size", "128"])).await;
    let addr = server.addr;
    // Per-request limit of the script (one exchange may take up to MAX_TRANSMIT_WAIT, 93 s,
    // on the lossy link).
    let per_request = link.pick("60", "120");
    let call = |method: &str, p: &str, extra: &[&str]| {
        let mut c = link.command(Side::Client, &py);
        c.arg(script("aiocoap_client.py")).arg(method).arg(uri(addr, p)).args(["--timeout", per_request]).args(extra);
        c
    };
    let run = |c| link.run(c);
    let json = |o: std::process::Output| -> serde_json::Value {
        assert!(o.status.success(), "aiocoap client failed: {}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).expect("JSON from aiocoap_client.py")
    };
    // Several requests in a row from one aiocoap context.
    let n = link.pick(3, 5);
    let r = json(run(call("get", "/hello", &["--repeat", &n.to_string()])).await);
    assert_eq!((r["code"].as_str(), r["len"].as_u64(), r["requests"].as_u64()), (Some("2.05"), Some(60), Some(n)));
    // 100 kB over loopback in our 1024-byte blocks; 1 kB in 128-byte blocks on the lossy link.
    let size = link.pick(102_400, 1024);
    let out = std::env::temp_dir().join(format!(
        "coapcc-interop-{}-{}-aiocoap.bin",
        std::process::id(),
        link.name().replace(' ', "-")
    ));
    let r = json(run(call("get", &format!("/large?size={size}"), &["--out", out.to_str().unwrap()])).await);
    assert_eq!(r["len"].as_u64(), Some(size as u64));
    let got = std::fs::read(&out).expect("aiocoap client body");
    let _ = std::fs::remove_file(&out);
    assert_same(&got, &large(size), "aiocoap client GET /large");
    let r = json(run(call("get", "/slow?ms=1200", &[])).await);
    assert_eq!(r["payload"], "slow response after 1200 ms");
    let r = json(run(call("put", "/echo", &["--payload", "from aiocoap"])).await);
    assert_eq!((r["code"].as_str(), r["payload"].as_str()), (Some("2.04"), Some("from aiocoap")));
    // Block1 (RFC 7959): aiocoap sends a payload over 1024 bytes in 1024-byte blocks by
    // itself (3000 bytes: 2.31, 2.31, 2.04). Loopback only: on the emulated link a 1024-byte
    // block is four IP fragments.
    if !link.lossy() {
        let text = "b".repeat(3000);
        let r = json(run(call("put", "/upload", &["--payload", &text])).await);
        assert_eq!((r["code"].as_str(), r["payload"].as_str()), (Some("2.04"), Some("received 3000 bytes")));
    }
    // RFC 7959 §3.3: aiocoap POSTs bodies of 1, 2, 10 and 100 of its 1024-byte blocks (and
    // 3 000 bytes) to /echo, gets the echo back in Block2, and GET /echo returns the body.
    // Loopback only: on the emulated link a 1024-byte block is four IP fragments.
    if !link.lossy() {
        let (_, mut sizes) = block_bodies(&link);
        sizes.push(3000);
        for n in sizes {
            let text = String::from_utf8(large(n)).unwrap();
            let out = std::env::temp_dir().join(format!("coapcc-interop-{}-aiocoap-echo-{n}.bin", std::process::id()));
            let r = json(run(call("post", "/echo", &["--payload", &text, "--out", out.to_str().unwrap()])).await);
            assert_eq!((r["code"].as_str(), r["len"].as_u64()), (Some("2.04"), Some(n as u64)), "POST {n}: {r}");
            assert_same(&std::fs::read(&out).unwrap(), &large(n), &format!("aiocoap POST of {n} bytes to /echo"));
            let r = json(run(call("get", "/echo", &["--out", out.to_str().unwrap()])).await);
            assert_eq!(r["len"].as_u64(), Some(n as u64), "GET /echo after POST of {n}: {r}");
            assert_same(&std::fs::read(&out).unwrap(), &large(n), &format!("aiocoap GET /echo after POST of {n}"));
            let _ = std::fs::remove_file(&out);
        }
    }
    // Observe (RFC 7641): aiocoap registers, gets three notifications of /counter (one every
    // 200 ms, consecutive values), and cancels.
    if !link.lossy() {
        let r = json(run(call("get", "/counter?period=200", &["--observe", "3"])).await);
        let first: u64 = r["first"].as_str().unwrap().parse().unwrap();
        let notes: Vec<u64> =
            r["notifications"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().parse().unwrap()).collect();
        assert_eq!(notes.len(), 3, "{r}");
        assert!(notes[0] > first && notes.windows(2).all(|w| w[1] > w[0]), "{r}");
    }
    let r = json(run(call("get", "/nope", &[])).await);
    assert_eq!(r["code"], "4.04");
    let r = json(run(call("get", "/.well-known/core", &[])).await);
    assert!(r["len"].as_u64().unwrap() > 50);
    let summary = server.stop().await;
    link.finish(test, Some(&summary));
}

#[tokio::test]
async fn aiocoap_client_vs_our_server() {
    aiocoap_client_vs_server(Link::Direct).await;
}

// ---------------------------------------------------------------------------------------
// Every case through the link emulator with a lossy profile
// ---------------------------------------------------------------------------------------

type Case = fn(Link) -> Pin<Box<dyn Future<Output = ()> + Send>>;

/// The cases, each with its own emulator seed.
const EMULATED: [(&str, u64, Case); 5] = [
    ("our client vs libcoap coap-server", 1, |l| Box::pin(client_vs_libcoap_server(l))),
    ("our client vs lossy libcoap coap-server", 2, |l| Box::pin(client_vs_lossy_libcoap_server(l))),
    ("our client vs aiocoap server", 3, |l| Box::pin(client_vs_aiocoap_server(l))),
    ("libcoap coap-client vs our server", 4, |l| Box::pin(libcoap_client_vs_server(l))),
    ("aiocoap client vs our server", 5, |l| Box::pin(aiocoap_client_vs_server(l))),
];

fn panic_message(e: tokio::task::JoinError) -> String {
    match e.try_into_panic() {
        Ok(p) => p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".into()),
        Err(e) => e.to_string(),
    }
}

/// Every case above through its own emulator (testbed link, [`LOSSY_PROFILE`] on both
/// directions), all at once: each case's requests must all complete, and retransmissions must
/// have happened (see [`Link::finish`]). One test, so that the cases run concurrently whatever
/// the harness's thread count; a failure names every case that failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn all_cases_through_lossy_emulator() {
    let test = "interop through the lossy emulator";
    if let Some(reason) = emulator_unavailable() {
        return skip(test, &reason);
    }
    let profile = lossy_profile();
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    let only = std::env::var("COAPCC_INTEROP_CASES").unwrap_or_default();
    for (name, seed, case) in EMULATED {
        if !only.is_empty() && !only.split(',').any(|o| name.contains(o.trim())) {
            continue;
        }
        let profile = profile.clone();
        let seed = seed + seed_offset();
        let task = tokio::spawn(async move {
            let link = tokio::task::spawn_blocking(move || Link::emulated(&profile, seed))
                .await
                .expect("emulator start")
                .unwrap_or_else(|e| panic!("{e}"));
            let t = Instant::now();
            case(link.clone()).await;
            let line = link.summary().unwrap_or_else(|| format!("{name} [{}]: skipped", link.name()));
            // Stop the emulator (joins its threads, deletes the namespaces) off the runtime.
            tokio::task::spawn_blocking(move || drop(link)).await.expect("emulator stop");
            (t.elapsed(), line)
        });
        tasks.push((name, task));
    }
    let mut failures = Vec::new();
    let tasks_run = tasks.len();
    for (name, task) in tasks {
        match task.await {
            Ok((dt, line)) => eprintln!("{line} (case {:.1} s)", dt.as_secs_f64()),
            Err(e) => failures.push(format!("{name}: {}", panic_message(e))),
        }
    }
    let n = tasks_run;
    eprintln!("{test}: {n} cases in {:.1} s", t0.elapsed().as_secs_f64());
    assert!(
        failures.is_empty(),
        "{} of {n} cases failed through the emulator ({profile}):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
