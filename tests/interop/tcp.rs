//! CoAP-over-TCP (RFC 8323) interop: coapcc's `coap+tcp` client and `server --tcp` against
//! libcoap's `coap-server`/`coap-client` (`coap+tcp://`) and aiocoap's TCP transport, both
//! directions, on the kernel's TCP: over loopback (one test per case) and through the link
//! emulator (the testbed link with the lossy profile, every case concurrently in its own
//! emulator, in `tcp_cases_through_lossy_emulator`), where the kernel's TCP retransmits and
//! every exchange must still complete.
//!
//! Built as the `interop_tcp` integration test of `crates/coapcc-net`. A missing peer (or,
//! for the emulated run, root/`ip`/TUN) prints `SKIPPED <test>: <reason>` and passes, unless
//! `COAPCC_REQUIRE_INTEROP=1` (CI), which makes it a failure. See docs/tcp.md.

mod support;

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::{Duration, Instant};

use support::*;

fn tcp_uri(addr: SocketAddr, path: &str) -> String {
    uri(addr, path).replacen("coap://", "coap+tcp://", 1)
}

/// Wait until a CoAP-over-TCP server answers `GET /hello`-style requests at `addr`, asking
/// from the server's side with our client (so the check never crosses the emulated link).
async fn wait_tcp_coap(link: &Link, addr: SocketAddr, path: &str, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while tokio::time::Instant::now() < deadline {
        let mut c = link.command(Side::Server, &coapcc_net());
        c.args(["client", &tcp_uri(addr, path), "--timeout", "2", "-q", "--log", "/dev/null"]);
        if run_for(c, Duration::from_secs(10)).await.status.success() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// Where our TCP server on `addr` writes its log.
fn server_log(addr: SocketAddr) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("coapcc-interop-tcp-{}-{}.jsonl", std::process::id(), addr.port()))
}

/// The connections of our TCP server on `addr` that did not end cleanly (for failure messages).
fn unclean_connections(addr: SocketAddr) -> String {
    let text = std::fs::read_to_string(server_log(addr)).unwrap_or_default();
    let bad: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.contains("\"type\":\"connection\"")
                && !l.contains("\"outcome\":\"release\"")
                && !l.contains("\"outcome\":\"closed\"")
        })
        .collect();
    format!("our server's unclean connections: {bad:?}")
}

/// Our server with `--tcp` on a free port on the server side of `link`.
async fn our_tcp_server(link: &Link) -> (tokio::process::Child, SocketAddr) {
    let addr = link.server_addr();
    let mut cmd = link.command(Side::Server, &coapcc_net());
    cmd.args(["server", "--tcp", "--bind", &addr.to_string(), "--log"]).arg(server_log(addr));
    let mut child = spawn(cmd);
    assert!(
        wait_tcp_coap(link, addr, "/hello", Duration::from_secs(20)).await,
        "our TCP server did not come up ({})",
        state(&mut child)
    );
    (child, addr)
}

/// End of a case: on a lossy emulated link, losses must have happened (so the kernel's TCP
/// had to recover) while every request completed (the case's assertions). Leaves a line.
fn tcp_finish(link: &Link, test: &str) -> Option<String> {
    let r = link.report()?;
    let (up, down) = (&r.uplink.counters, &r.downlink.counters);
    let line = format!(
        "{test} [{}]: {:.0} s; link: up {} packets, {} lost, {} tail-dropped; down {} packets, {} lost, {} tail-dropped",
        link.name(),
        r.elapsed_s,
        up.offered_packets,
        up.error_loss_packets,
        up.buffer_drop_packets,
        down.offered_packets,
        down.error_loss_packets,
        down.buffer_drop_packets
    );
    if link.lossy() {
        assert!(
            up.error_loss_packets + down.error_loss_packets > 0,
            "{line}: the link lost nothing, so TCP recovery was not exercised (try another COAPCC_INTEROP_SEED)"
        );
    }
    Some(line)
}

/// Our client over TCP. On a lossy emulated link each exchange may take the command's whole
/// budget (`--response-timeout`, default 300 s, longer than the test's): the kernel's backed-off retransmissions of a
/// segment whose data or ACKs are lost a few times in a row take tens of seconds there
/// (docs/robustness.md, `--frame-timeout`), and the exchange is sound all along.
async fn our_tcp_client(link: &Link, uri: &str, extra: &[&str]) -> ClientRun {
    let budget = (link.cmd_timeout().as_secs() - 10).to_string();
    let mut args: Vec<&str> = if link.lossy() { vec!["--response-timeout", &budget] } else { Vec::new() };
    args.extend_from_slice(extra);
    our_client(link, uri, &args).await
}

fn transport_is_tcp(r: &ClientRun) {
    let start = r.lines.iter().find(|l| l["type"] == "start").expect("start line");
    assert_eq!(start["transport"], "tcp", "{r:?}");
}

async fn client_vs_libcoap_server(link: Link) -> Option<String> {
    let test = "our coap+tcp client vs libcoap coap-server";
    let bin = match libcoap("server") {
        Ok(b) => b,
        Err(e) => {
            skip(test, &e);
            return None;
        }
    };
    eprintln!("{test} [{}]: {}", link.name(), libcoap_version(&bin).await);
    let addr = link.server_addr();
    let mut cmd = link.command(Side::Server, &bin);
    cmd.args(["-A", &addr.ip().to_string(), "-p", &addr.port().to_string(), "-v", "0"]);
    let mut server = spawn(cmd);
    // libcoap serves UDP and TCP on the same port: the UDP ping says it is up.
    assert!(link.wait_ready(addr, Duration::from_secs(10)).await, "libcoap server not up ({})", state(&mut server));

    let r = our_tcp_client(&link, &tcp_uri(addr, "/"), &[]).await;
    transport_is_tcp(&r);
    assert_eq!(r.ok_failed(), (1, 0), "{r:?}");
    assert!(r.text().contains("libcoap"));

    // PUT 3000 bytes (1000 on the lossy link), then read them back as one message, and
    // block-wise in 256-byte blocks.
    let len = link.pick(3000, 1000);
    let body = "t".repeat(len - 1) + "!";
    let r = our_tcp_client(&link, &tcp_uri(addr, "/example_data"), &["-m", "put", "-p", &body]).await;
    assert_eq!(r.ok_failed(), (1, 0), "PUT: {r:?}");
    let r = our_tcp_client(&link, &tcp_uri(addr, "/example_data"), &[]).await;
    assert_eq!(r.text(), body);
    assert_eq!(r.exchanges().len(), 1, "whole body in one message: {r:?}");
    let r = our_tcp_client(&link, &tcp_uri(addr, "/example_data"), &["--block-size", "256"]).await;
    assert_eq!(r.text(), body);
    let ex = r.exchanges();
    assert_eq!(ex.len(), len.div_ceil(256));
    for (i, e) in ex.iter().enumerate() {
        assert_eq!((e["block2"]["num"].as_u64(), e["block2"]["szx"].as_u64()), (Some(i as u64), Some(4)));
    }
    // Several requests on one connection.
    let n = link.pick(5, 3);
    let r = our_tcp_client(&link, &tcp_uri(addr, "/"), &["-n", &n.to_string()]).await;
    assert_eq!(r.ok_failed(), (n, 0), "{r:?}");
    tcp_finish(&link, test)
}

#[tokio::test]
async fn our_tcp_client_vs_libcoap_server() {
    client_vs_libcoap_server(Link::Direct).await;
}

async fn libcoap_client_vs_server(link: Link) -> Option<String> {
    let test = "libcoap coap-client (coap+tcp) vs our server --tcp";
    let bin = match libcoap("client") {
        Ok(b) => b,
        Err(e) => {
            skip(test, &e);
            return None;
        }
    };
    eprintln!("{test} [{}]: {}", link.name(), libcoap_version(&bin).await);
    let (_server, addr) = our_tcp_server(&link).await;
    let wait = link.pick("20", "120");
    let get = |p: &str, extra: &[&str]| {
        let mut c = link.command(Side::Client, &bin);
        c.args(["-B", wait]).args(extra).arg(tcp_uri(addr, p));
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
    let run = |c| link.run(c);
    assert_eq!(body(run(get("/hello", &[])).await), coapcc_net::resources::HELLO);
    // The thesis transfer: 102 400 bytes as one CoAP-over-TCP message (4 000 on the lossy
    // link: the full transfer takes over 30 s there even without loss).
    let big = link.pick(102_400, 4000);
    assert_same(&body(run(get(&format!("/large?size={big}"), &[])).await), &large(big), "GET /large");
    // Block2 requested by the client over TCP.
    let small = link.pick(5000, 1000);
    assert_same(&body(run(get(&format!("/large?size={small}"), &["-b", "256"])).await), &large(small), "-b 256");
    assert_eq!(body(run(get("/slow?ms=1200", &[])).await), b"slow response after 1200 ms");
    // A POST of 3 000 bytes to /echo comes back whole, in one message and in 1024-byte blocks
    // (-b: Block1 up, Block2 down over TCP, RFC 8323 §6), and GET /echo returns it.
    let f = std::env::temp_dir().join(format!(
        "coapcc-interop-tcp-{}-{}-echo.bin",
        std::process::id(),
        link.name().replace(' ', "-")
    ));
    std::fs::write(&f, large(3000)).unwrap();
    for extra in [&[][..], &["-b", "1024"]] {
        let mut args = vec!["-m", "post", "-f", f.to_str().unwrap()];
        args.extend_from_slice(extra);
        assert_same(&body(run(get("/echo", &args)).await), &large(3000), &format!("POST 3000 bytes {extra:?}"));
        assert_same(&body(run(get("/echo", extra)).await), &large(3000), &format!("GET /echo {extra:?}"));
    }
    let _ = std::fs::remove_file(&f);
    let put = body(run(get("/echo", &["-m", "put", "-e", "from libcoap over tcp"])).await);
    assert_eq!(put, b"from libcoap over tcp");
    assert_eq!(body(run(get("/echo", &[])).await), b"from libcoap over tcp");
    let wkc = body(run(get("/.well-known/core", &[])).await);
    assert!(String::from_utf8_lossy(&wkc).contains("</large>"));
    let _ = std::fs::remove_file(server_log(addr));
    tcp_finish(&link, test)
}

#[tokio::test]
async fn libcoap_tcp_client_vs_our_server() {
    libcoap_client_vs_server(Link::Direct).await;
}

async fn client_vs_aiocoap_server(link: Link) -> Option<String> {
    let test = "our coap+tcp client vs aiocoap server";
    let (py, version) = match aiocoap_python().await {
        Ok(p) => p,
        Err(e) => {
            skip(test, &e);
            return None;
        }
    };
    eprintln!("{test} [{}]: aiocoap {version}", link.name());
    let addr = link.server_addr();
    let mut cmd = link.command(Side::Server, &py);
    cmd.arg(script("aiocoap_server.py")).arg(addr.ip().to_string()).arg(addr.port().to_string());
    let mut server = spawn(cmd);
    assert!(wait_line(&mut server, "ready", Duration::from_secs(30)).await, "aiocoap server: {}", state(&mut server));
    assert!(
        wait_tcp_coap(&link, addr, "/hello", Duration::from_secs(20)).await,
        "aiocoap does not serve TCP on {addr}"
    );
    let r = our_tcp_client(&link, &tcp_uri(addr, "/hello"), &["-n", "3"]).await;
    transport_is_tcp(&r);
    assert_eq!(r.ok_failed(), (3, 0), "{r:?}");
    assert_eq!(r.body.as_deref(), Some(&coapcc_net::resources::HELLO[..]));
    let big = link.pick(102_400, 4000);
    let r = our_tcp_client(&link, &tcp_uri(addr, &format!("/large?size={big}")), &[]).await;
    assert_eq!(r.ok_failed(), (1, 0), "{r:?}");
    assert_same(r.body.as_deref().unwrap_or_default(), &large(big), "aiocoap /large over TCP");
    // A POST of 3 000 bytes to aiocoap's /echo over TCP comes back whole.
    let f = std::env::temp_dir().join(format!(
        "coapcc-interop-tcp-{}-{}-post.bin",
        std::process::id(),
        link.name().replace(' ', "-")
    ));
    std::fs::write(&f, large(3000)).unwrap();
    let r = our_tcp_client(&link, &tcp_uri(addr, "/echo"), &["-m", "post", "-f", f.to_str().unwrap()]).await;
    let _ = std::fs::remove_file(&f);
    assert_same(r.body.as_deref().unwrap_or_default(), &large(3000), "POST 3000 bytes to aiocoap over TCP");
    let r = our_tcp_client(&link, &tcp_uri(addr, "/echo"), &["-m", "put", "-p", "from coapcc over tcp"]).await;
    assert_eq!(r.last_code().as_deref(), Some("2.04"));
    let r = our_tcp_client(&link, &tcp_uri(addr, "/echo"), &[]).await;
    assert_eq!(r.text(), "from coapcc over tcp");
    tcp_finish(&link, test)
}

#[tokio::test]
async fn our_tcp_client_vs_aiocoap_server() {
    client_vs_aiocoap_server(Link::Direct).await;
}

async fn aiocoap_client_vs_server(link: Link) -> Option<String> {
    let test = "aiocoap client (coap+tcp) vs our server --tcp";
    let (py, version) = match aiocoap_python().await {
        Ok(p) => p,
        Err(e) => {
            skip(test, &e);
            return None;
        }
    };
    eprintln!("{test} [{}]: aiocoap {version}", link.name());
    let (_server, addr) = our_tcp_server(&link).await;
    let per_request = link.pick("30", "120");
    let call = |method: &str, p: &str, extra: &[&str]| {
        let mut c = link.command(Side::Client, &py);
        c.arg(script("aiocoap_client.py"))
            .arg(method)
            .arg(tcp_uri(addr, p))
            .args(["--timeout", per_request])
            .args(extra);
        c
    };
    let run = |c| link.run(c);
    let json = |o: std::process::Output| -> serde_json::Value {
        assert!(
            o.status.success(),
            "aiocoap client failed: {} ({})",
            String::from_utf8_lossy(&o.stderr),
            unclean_connections(addr)
        );
        serde_json::from_slice(&o.stdout).expect("JSON from aiocoap_client.py")
    };
    let r = json(run(call("get", "/hello", &["--repeat", "3"])).await);
    assert_eq!((r["code"].as_str(), r["len"].as_u64(), r["requests"].as_u64()), (Some("2.05"), Some(60), Some(3)));
    let big = link.pick(102_400, 4000);
    let out = std::env::temp_dir().join(format!(
        "coapcc-interop-tcp-{}-{}-aiocoap.bin",
        std::process::id(),
        link.name().replace(' ', "-")
    ));
    let r = json(run(call("get", &format!("/large?size={big}"), &["--out", out.to_str().unwrap()])).await);
    assert_eq!(r["len"].as_u64(), Some(big as u64));
    let got = std::fs::read(&out).expect("aiocoap client body");
    let _ = std::fs::remove_file(&out);
    assert_same(&got, &large(big), "aiocoap client GET /large over TCP");
    let r = json(run(call("get", "/slow?ms=1200", &[])).await);
    assert_eq!(r["payload"], "slow response after 1200 ms");
    // A POST of 3 000 bytes to /echo comes back whole; GET /echo returns it.
    let text = String::from_utf8(large(3000)).unwrap();
    let r = json(run(call("post", "/echo", &["--payload", &text])).await);
    assert_eq!((r["code"].as_str(), r["len"].as_u64()), (Some("2.04"), Some(3000)), "{r}");
    let r = json(run(call("get", "/echo", &["--out", out.to_str().unwrap()])).await);
    assert_eq!(r["len"].as_u64(), Some(3000), "{r}");
    assert_same(&std::fs::read(&out).unwrap(), &large(3000), "aiocoap GET /echo after POST over TCP");
    let _ = std::fs::remove_file(&out);
    let r = json(run(call("put", "/echo", &["--payload", "from aiocoap over tcp"])).await);
    assert_eq!((r["code"].as_str(), r["payload"].as_str()), (Some("2.04"), Some("from aiocoap over tcp")));
    let r = json(run(call("get", "/nope", &[])).await);
    assert_eq!(r["code"], "4.04");
    let _ = std::fs::remove_file(server_log(addr));
    tcp_finish(&link, test)
}

#[tokio::test]
async fn aiocoap_tcp_client_vs_our_server() {
    aiocoap_client_vs_server(Link::Direct).await;
}

// ---------------------------------------------------------------------------------------
// Every case through the link emulator with the lossy profile
// ---------------------------------------------------------------------------------------

type Case = fn(Link) -> Pin<Box<dyn Future<Output = Option<String>> + Send>>;

/// The cases, each with its own emulator seed (distinct from the UDP cases' 1-5).
const EMULATED: [(&str, u64, Case); 4] = [
    ("our coap+tcp client vs libcoap coap-server", 11, |l| Box::pin(client_vs_libcoap_server(l))),
    ("our coap+tcp client vs aiocoap server", 12, |l| Box::pin(client_vs_aiocoap_server(l))),
    ("libcoap coap-client vs our server --tcp", 13, |l| Box::pin(libcoap_client_vs_server(l))),
    ("aiocoap client vs our server --tcp", 14, |l| Box::pin(aiocoap_client_vs_server(l))),
];

/// Every case above through its own emulator (testbed link, the lossy profile on both
/// directions, the emulator's testbed TCP settings in the namespaces), all at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tcp_cases_through_lossy_emulator() {
    let test = "coap+tcp interop through the lossy emulator";
    if let Some(reason) = emulator_unavailable() {
        return skip(test, &reason);
    }
    let profile = lossy_profile();
    let t0 = Instant::now();
    let only = std::env::var("COAPCC_INTEROP_CASES").unwrap_or_default();
    let mut tasks = Vec::new();
    for (name, seed, case) in EMULATED {
        if !only.is_empty() && !only.split(',').any(|o| name.contains(o.trim())) {
            continue;
        }
        let profile = profile.clone();
        let seed = seed + seed_offset();
        tasks.push((
            name,
            tokio::spawn(async move {
                let link = tokio::task::spawn_blocking(move || Link::emulated(&profile, seed))
                    .await
                    .expect("emulator start")
                    .unwrap_or_else(|e| panic!("{e}"));
                let t = Instant::now();
                let line = case(link.clone()).await;
                tokio::task::spawn_blocking(move || drop(link)).await.expect("emulator stop");
                (t.elapsed(), line.unwrap_or_else(|| format!("{name}: skipped")))
            }),
        ));
    }
    let n = tasks.len();
    let mut failures = Vec::new();
    for (name, task) in tasks {
        match task.await {
            Ok((dt, line)) => eprintln!("{line} (case {:.1} s)", dt.as_secs_f64()),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    eprintln!("{test}: {n} cases in {:.1} s", t0.elapsed().as_secs_f64());
    assert!(failures.is_empty(), "{} of {n} cases failed ({profile}):\n{}", failures.len(), failures.join("\n"));
}
