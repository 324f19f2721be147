//! Helpers for the interop tests: finding the peers (libcoap, aiocoap, our `coapcc-net`
//! binary), starting them as processes on free ports with timeouts, and the [`Link`] that
//! decides where each side runs.
#![allow(dead_code)]

use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket as StdUdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use coapcc_proto::{Message, MessageType};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::UdpSocket;
use tokio::process::{Child, Command};

/// Longest any single external command may run.
pub const CMD_TIMEOUT: Duration = Duration::from_secs(60);

/// The repository root (the tests live in `tests/interop/`, the crate in `crates/coapcc-net`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// A helper script of `tests/interop/`.
pub fn script(name: &str) -> PathBuf {
    repo_root().join("tests/interop").join(name)
}

/// Our own endpoint as a program: `coapcc-net server|client ...`.
pub fn coapcc_net() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_coapcc-net"))
}

/// Report a skipped test. With `COAPCC_REQUIRE_INTEROP=1` a missing peer is a failure.
pub fn skip(test: &str, reason: &str) {
    if std::env::var("COAPCC_REQUIRE_INTEROP").is_ok_and(|v| v == "1") {
        panic!("{test}: {reason} (COAPCC_REQUIRE_INTEROP=1)");
    }
    // Written to the real stderr (not through `eprintln!`, which the test harness captures)
    // so that the reason shows in a normal `cargo test` run.
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// libcoap's example `coap-server`/`coap-client` (`kind` = "server" or "client"). Debian's
/// libcoap3-bin installs them as `coap-KIND-notls`, `-openssl`, `-gnutls`; some builds as
/// plain `coap-KIND`.
pub fn libcoap(kind: &str) -> Result<PathBuf, String> {
    for suffix in ["", "-notls", "-openssl", "-gnutls"] {
        if let Some(p) = on_path(&format!("coap-{kind}{suffix}")) {
            return Ok(p);
        }
    }
    Err(format!(
        "libcoap's coap-{kind} not found on PATH (Debian: apt-get install libcoap3-bin)"
    ))
}

/// libcoap's version line (`coap-client-notls v4.3.1 -- ...`).
pub async fn libcoap_version(bin: &Path) -> String {
    let out = Command::new(bin)
        .arg("-h")
        .stdin(Stdio::null())
        .output()
        .await;
    let text = out
        .map(|o| {
            String::from_utf8_lossy(&o.stderr).to_string() + &String::from_utf8_lossy(&o.stdout)
        })
        .unwrap_or_default();
    text.lines()
        .find(|l| l.contains(" v4.") || l.contains(" v3."))
        .unwrap_or("unknown")
        .trim()
        .to_string()
}

/// A Python interpreter that can `import aiocoap` (`$COAPCC_PYTHON`, the project's
/// `.venv/bin/python`, or `python3`), with aiocoap's version.
pub async fn aiocoap_python() -> Result<(PathBuf, String), String> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = std::env::var_os("COAPCC_PYTHON") {
        candidates.push(p.into());
    }
    candidates.push(repo_root().join(".venv/bin/python"));
    if let Some(p) = on_path("python3") {
        candidates.push(p);
    }
    for py in candidates {
        if !py.exists() {
            continue;
        }
        let out = Command::new(&py)
            .args([
                "-c",
                "import aiocoap, aiocoap.meta; print(aiocoap.meta.version)",
            ])
            .stdin(Stdio::null())
            .output()
            .await;
        if let Ok(o) = out {
            if o.status.success() {
                return Ok((py, String::from_utf8_lossy(&o.stdout).trim().to_string()));
            }
        }
    }
    Err(
        "no Python with aiocoap found (pip install aiocoap into .venv, or set COAPCC_PYTHON)"
            .into(),
    )
}

/// A UDP port that was free a moment ago on `ip`.
pub fn free_port(ip: IpAddr) -> u16 {
    StdUdpSocket::bind(SocketAddr::new(ip, 0))
        .and_then(|s| s.local_addr())
        .expect("a free port")
        .port()
}

/// Wait until a CoAP server answers a ping (Empty CON → RST) at `addr`.
pub async fn wait_ready(addr: SocketAddr, within: Duration) -> bool {
    let local = if addr.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    };
    let Ok(sock) = UdpSocket::bind(local).await else {
        return false;
    };
    let ping = Message::empty(MessageType::Con, 0x7777).to_bytes();
    let deadline = tokio::time::Instant::now() + within;
    let mut buf = [0u8; 1500];
    while tokio::time::Instant::now() < deadline {
        let _ = sock.send_to(&ping, addr).await;
        let reply =
            tokio::time::timeout(Duration::from_millis(100), sock.recv_from(&mut buf)).await;
        if let Ok(Ok((n, _))) = reply {
            if n >= 4 {
                return true;
            }
        }
    }
    false
}

/// Wait until some process has bound UDP `addr` (detected by our own bind failing), without
/// sending it anything.
pub async fn wait_bound(addr: SocketAddr, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while tokio::time::Instant::now() < deadline {
        if StdUdpSocket::bind(addr).is_err() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// Start a long-running peer (killed when dropped).
pub fn spawn(mut cmd: Command) -> Child {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"))
}

/// Run a command to completion, with [`CMD_TIMEOUT`].
pub async fn run(mut cmd: Command) -> Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    match tokio::time::timeout(CMD_TIMEOUT, child.wait_with_output()).await {
        Ok(r) => r.expect("wait"),
        Err(_) => panic!("command timed out after {CMD_TIMEOUT:?}: {cmd:?}"),
    }
}

/// Wait until a started peer prints `line` on stdout.
pub async fn wait_line(child: &mut Child, line: &str, within: Duration) -> bool {
    let Some(out) = child.stdout.take() else {
        return false;
    };
    let mut lines = BufReader::new(out).lines();
    let found = tokio::time::timeout(within, async {
        while let Ok(Some(l)) = lines.next_line().await {
            if l.trim() == line {
                return true;
            }
        }
        false
    })
    .await;
    found.unwrap_or(false)
}

/// Where a process runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The server's side of the link.
    Server,
    /// The client's side of the link.
    Client,
}

/// How client and server are connected. Every interop case takes a `Link` and only uses
/// [`Link::command`] to start processes and [`Link::server_ip`] to address the server, so a
/// variant that starts `coapcc-emu` (server and client in the emulator's two network
/// namespaces, e.g. via its `Emulator::command(side, ..)`) runs the same cases through the
/// emulated testbed link.
#[derive(Clone, Debug)]
pub enum Link {
    /// Both sides on this host's loopback.
    Direct,
}

impl Link {
    /// A short name for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Link::Direct => "direct",
        }
    }

    /// The address the server binds, as seen from the client side.
    pub fn server_ip(&self) -> IpAddr {
        match self {
            Link::Direct => IpAddr::V4(Ipv4Addr::LOCALHOST),
        }
    }

    /// A command running `program` on `side`.
    pub fn command(&self, side: Side, program: &Path) -> Command {
        match self {
            Link::Direct => {
                let _ = side;
                Command::new(program)
            }
        }
    }
}

/// `coap://` URI of `path` on `addr`.
pub fn uri(addr: SocketAddr, path: &str) -> String {
    match addr {
        SocketAddr::V4(a) => format!("coap://{a}{path}"),
        SocketAddr::V6(a) => format!("coap://[{}]:{}{path}", a.ip(), a.port()),
    }
}

static UNIQUE: AtomicU64 = AtomicU64::new(0);

fn temp_file(tag: &str) -> PathBuf {
    let n = UNIQUE.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("coapcc-interop-{}-{n}-{tag}", std::process::id()))
}

/// What one run of our client (`coapcc-net client`) did.
#[derive(Debug)]
pub struct ClientRun {
    /// Exit code.
    pub code: i32,
    /// Every JSON line of its log.
    pub lines: Vec<Value>,
    /// The last response body (`--output`).
    pub body: Option<Vec<u8>>,
    /// Its stderr.
    pub stderr: String,
}

impl ClientRun {
    /// The summary line.
    pub fn summary(&self) -> &Value {
        self.lines
            .iter()
            .rev()
            .find(|l| l["type"] == "summary")
            .expect("a summary line")
    }

    /// `(success, failed)` counts of the summary.
    pub fn ok_failed(&self) -> (u64, u64) {
        let s = self.summary();
        (
            s["success"].as_u64().unwrap(),
            s["failed"].as_u64().unwrap(),
        )
    }

    /// The exchange lines.
    pub fn exchanges(&self) -> Vec<&Value> {
        self.lines
            .iter()
            .filter(|l| l["type"] == "exchange")
            .collect()
    }

    /// Code of the last finished request (`"2.05"`, ...).
    pub fn last_code(&self) -> Option<String> {
        let r = self.lines.iter().rev().find(|l| l["type"] == "request")?;
        r["code"].as_str().map(str::to_string)
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(self.body.as_deref().unwrap_or_default()).to_string()
    }
}

/// Run our client on the client side of `link`: `coapcc-net client URI EXTRA...`.
pub async fn our_client(link: &Link, uri: &str, extra: &[&str]) -> ClientRun {
    let log = temp_file("log.jsonl");
    let out = temp_file("body");
    let mut cmd = link.command(Side::Client, &coapcc_net());
    cmd.args(["client", uri, "--timeout", "50", "--log"])
        .arg(&log)
        .arg("--output")
        .arg(&out)
        .args(extra);
    let o = run(cmd).await;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let lines = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    let body = std::fs::read(&out).ok();
    let _ = std::fs::remove_file(&log);
    let _ = std::fs::remove_file(&out);
    let r = ClientRun {
        code: o.status.code().unwrap_or(-1),
        lines,
        body,
        stderr: String::from_utf8_lossy(&o.stderr).to_string(),
    };
    assert!(r.code == 0 || r.code == 1, "client {uri} crashed: {r:?}");
    r
}

/// Our server (`coapcc-net server`) on the server side of `link`, on a free port; killed
/// when the returned child is dropped.
pub async fn our_server(link: &Link, extra: &[&str]) -> (Child, SocketAddr) {
    let addr = SocketAddr::new(link.server_ip(), free_port(link.server_ip()));
    let mut cmd = link.command(Side::Server, &coapcc_net());
    cmd.args(["server", "--bind", &addr.to_string()])
        .args(extra);
    let child = spawn(cmd);
    assert!(
        wait_ready(addr, Duration::from_secs(20)).await,
        "our server did not come up on {addr}"
    );
    (child, addr)
}

/// The `/large` pattern (same as `coapcc_net::resources::large_body`).
pub fn large(n: usize) -> Vec<u8> {
    coapcc_net::resources::large_body(n)
}
