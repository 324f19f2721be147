//! Helpers for the interop tests: finding the peers (libcoap, aiocoap, our `coapcc-net`
//! binary), starting them as processes on free ports with timeouts, and the [`Link`] that
//! decides where each side runs: on loopback, or in the two network namespaces of a
//! `coapcc-emu` link emulator (then readiness checks run inside the server's namespace, so
//! they never cross the emulated link, and all traffic stays in the emulator's namespaces).
#![allow(dead_code)]

use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket as StdUdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coapcc_emu::{EmuReport, EmulateArgs, Emulator};
use coapcc_proto::{Message, MessageType};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::UdpSocket;
use tokio::process::{Child, Command};

/// Ports handed out by [`Link::server_addr`], counted from a start that differs from process
/// to process (so two test processes at once rarely probe the same ports).
static NEXT_PORT: AtomicU64 = AtomicU64::new(0);

/// The ports [`Link::server_addr`] picks from: `[low, high)`, just below the kernel's
/// ephemeral range (`/proc/sys/net/ipv4/ip_local_port_range`; 32 768 if unreadable), where
/// no `bind(0)` lands.
fn below_ephemeral() -> (u16, u16) {
    static RANGE: std::sync::OnceLock<(u16, u16)> = std::sync::OnceLock::new();
    *RANGE.get_or_init(|| {
        let first = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
            .ok()
            .and_then(|t| t.split_whitespace().next()?.parse::<u16>().ok())
            .unwrap_or(32_768);
        let high = first.max(2_048);
        let low = high.saturating_sub(8_192).max(1_024);
        NEXT_PORT.store(u64::from(std::process::id()) * 97, Ordering::Relaxed);
        (low, high)
    })
}

/// Longest any single external command may run over loopback.
pub const CMD_TIMEOUT: Duration = Duration::from_secs(60);

/// Longest any single external command may run through the emulated lossy link (one CoAP
/// exchange may take up to MAX_TRANSMIT_WAIT = 93 s there).
pub const EMU_CMD_TIMEOUT: Duration = Duration::from_secs(150);

/// The repository root (the tests live in `tests/interop/`, the crate in `crates/coapcc-net`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repository root")
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
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
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
    Err(format!("libcoap's coap-{kind} not found on PATH (Debian: apt-get install libcoap3-bin)"))
}

/// libcoap's version line (`coap-client-notls v4.3.1 -- ...`).
pub async fn libcoap_version(bin: &Path) -> String {
    let out = Command::new(bin).arg("-h").stdin(Stdio::null()).output().await;
    let text = out
        .map(|o| String::from_utf8_lossy(&o.stderr).to_string() + &String::from_utf8_lossy(&o.stdout))
        .unwrap_or_default();
    text.lines().find(|l| l.contains(" v4.") || l.contains(" v3.")).unwrap_or("unknown").trim().to_string()
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
            .args(["-c", "import aiocoap, aiocoap.meta; print(aiocoap.meta.version)"])
            .stdin(Stdio::null())
            .output()
            .await;
        if let Ok(o) = out {
            if o.status.success() {
                return Ok((py, String::from_utf8_lossy(&o.stdout).trim().to_string()));
            }
        }
    }
    Err("no Python with aiocoap found (pip install aiocoap into .venv, or set COAPCC_PYTHON)".into())
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

/// Whether a started peer is still running, for messages.
pub fn state(child: &mut Child) -> String {
    match child.try_wait() {
        Ok(None) => "process still running".into(),
        Ok(Some(s)) => format!("process exited: {s}"),
        Err(e) => format!("process state unknown: {e}"),
    }
}

/// Run a command to completion, with `timeout`.
pub async fn run_for(mut cmd: Command, timeout: Duration) -> Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Ok(r) => r.expect("wait"),
        Err(_) => panic!("command timed out after {timeout:?}: {cmd:?}"),
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

impl From<Side> for coapcc_emu::Side {
    fn from(s: Side) -> Self {
        match s {
            Side::Server => coapcc_emu::Side::Server,
            Side::Client => coapcc_emu::Side::Client,
        }
    }
}

/// The loss profile of the emulated interop runs: independent 10 % loss per packet in each
/// direction (see docs/interop.md for the choice). `COAPCC_INTEROP_ERRORS` overrides it with
/// any `coapcc emulate --errors` model.
pub const LOSSY_PROFILE: &str = "bernoulli:0.1";

/// The emulated link's profile: [`LOSSY_PROFILE`] or `$COAPCC_INTEROP_ERRORS`.
pub fn lossy_profile() -> String {
    std::env::var("COAPCC_INTEROP_ERRORS").unwrap_or_else(|_| LOSSY_PROFILE.to_string())
}

/// Added to every emulated case's seed: `$COAPCC_INTEROP_SEED` (default 0), to try other loss
/// patterns.
pub fn seed_offset() -> u64 {
    std::env::var("COAPCC_INTEROP_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// Why this machine cannot run the link emulator (it needs root, `ip` and /dev/net/tun).
pub fn emulator_unavailable() -> Option<String> {
    let root = coapcc_emu::sys::euid() == 0;
    let ip = std::process::Command::new("ip")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let tun = Path::new("/dev/net/tun").exists();
    if root && ip && tun {
        None
    } else {
        Some(format!(
            "the link emulator needs root, `ip` (iproute2) and /dev/net/tun \
             (root={root}, ip={ip}, tun={tun})"
        ))
    }
}

/// What our client did across a case (emulated links only).
#[derive(Clone, Copy, Debug, Default)]
pub struct Tally {
    /// Client runs.
    pub runs: u64,
    /// Requests that completed.
    pub ok: u64,
    /// Requests that failed.
    pub failed: u64,
    /// Exchanges (a block-wise request has one per block).
    pub exchanges: u64,
    /// Retransmissions over all exchanges.
    pub retransmissions: u64,
}

/// An emulator instance that a [`Link::Emulated`] runs its processes through.
pub struct Emulated {
    emu: Emulator,
    errors: String,
    seed: u64,
    tally: Mutex<Tally>,
    summary: Mutex<Option<String>>,
}

/// How client and server are connected. Every interop case takes a `Link` and only uses
/// [`Link::command`] to start processes, [`Link::server_addr`] to pick the server's address
/// and [`Link::wait_ready`]/[`Link::wait_bound`] to see it come up, so the same cases run over
/// loopback and through the link emulator.
#[derive(Clone)]
pub enum Link {
    /// Both sides on this host's loopback.
    Direct,
    /// Client and server in the two network namespaces of a `coapcc-emu` emulator (testbed
    /// link: 60/30 kbit/s, 200/400 ms, MTU 296), with a loss profile.
    Emulated(Arc<Emulated>),
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

impl Link {
    /// Start an emulator with the testbed link, `errors` (a `coapcc emulate --errors` model)
    /// on both directions and `seed`. Blocking (it runs `ip`); needs root.
    pub fn emulated(errors: &str, seed: u64) -> Result<Link, String> {
        let args = EmulateArgs {
            link: coapcc_emu::cli::LinkArgs { errors: Some(errors.to_string()), ..Default::default() },
            seed: Some(seed),
            tcp_cc: "reno".into(),
            tcp_profile: "testbed".into(),
            spin_us: 100,
            server_start_ms: 300,
            ..EmulateArgs::default()
        };
        let cfg = coapcc_emu::cli::build_config(&args).map_err(|e| format!("{e:#}"))?;
        let emu = Emulator::start(&cfg).map_err(|e| format!("cannot start the emulator: {e:#}"))?;
        Ok(Link::Emulated(Arc::new(Emulated {
            emu,
            errors: errors.to_string(),
            seed,
            tally: Mutex::new(Tally::default()),
            summary: Mutex::new(None),
        })))
    }

    /// A short name for messages.
    pub fn name(&self) -> String {
        match self {
            Link::Direct => "direct".into(),
            Link::Emulated(e) => format!("emulated {} seed {}", e.errors, e.seed),
        }
    }

    /// Whether the link loses packets (an emulated link with a loss profile).
    pub fn lossy(&self) -> bool {
        matches!(self, Link::Emulated(e) if e.errors != "none")
    }

    /// `direct` on an error-free link, `lossy` on a lossy one: the emulated testbed link (0.66 s
    /// RTT, 30 kbit/s down) gets a smaller workload.
    pub fn pick<T>(&self, direct: T, lossy: T) -> T {
        if self.lossy() {
            lossy
        } else {
            direct
        }
    }

    /// Longest any single external command may run on this link.
    pub fn cmd_timeout(&self) -> Duration {
        match self {
            Link::Direct => CMD_TIMEOUT,
            Link::Emulated(_) => EMU_CMD_TIMEOUT,
        }
    }

    /// The address the server binds, as seen from the client side.
    pub fn server_ip(&self) -> IpAddr {
        match self {
            Link::Direct => IpAddr::V4(Ipv4Addr::LOCALHOST),
            Link::Emulated(e) => IpAddr::V4(e.emu.addr(coapcc_emu::Side::Server)),
        }
    }

    /// A command running `program` on `side`.
    pub fn command(&self, side: Side, program: &Path) -> Command {
        match self {
            Link::Direct => {
                let _ = side;
                Command::new(program)
            }
            Link::Emulated(e) => {
                let prog = program.to_str().expect("a UTF-8 program path");
                Command::from(e.emu.command(side.into(), prog, &[]))
            }
        }
    }

    /// Run `f` with the network of the server's side: here, or on a thread inside the
    /// emulator's server namespace (so readiness checks never cross the emulated link).
    fn on_server_side<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> std::io::Result<T> + Send + 'static,
    ) -> std::io::Result<T> {
        match self {
            Link::Direct => f(),
            Link::Emulated(e) => {
                let ns = e.emu.netns(coapcc_emu::Side::Server);
                coapcc_emu::sys::in_netns(&coapcc_emu::netns::NetnsPair::path(ns), f)
            }
        }
    }

    /// A server address: the server IP and a port that was free a moment ago on the server
    /// side, for UDP and TCP. The port is below the kernel's ephemeral range
    /// ([`below_ephemeral`]): a port the kernel had handed out for a `bind(0)` and taken
    /// back could be handed out again, to a client of a test running alongside, between
    /// this probe and the server's own bind (a server that then fails to start). Below that
    /// range only explicit binds take ports, and this process hands out each port once.
    pub fn server_addr(&self) -> SocketAddr {
        let ip = self.server_ip();
        let (low, high) = below_ephemeral();
        let span = u64::from(high - low);
        for _ in 0..span {
            let port = low + (NEXT_PORT.fetch_add(1, Ordering::Relaxed) % span) as u16;
            let addr = SocketAddr::new(ip, port);
            let free = self.on_server_side(move || {
                let udp = StdUdpSocket::bind(addr)?;
                let tcp = std::net::TcpListener::bind(addr)?;
                drop((udp, tcp));
                Ok(())
            });
            if free.is_ok() {
                return addr;
            }
        }
        panic!("no free port in {low}..{high} on the server side")
    }

    /// Wait until a CoAP server answers a ping (Empty CON → RST) at `addr`, pinging from the
    /// server's side.
    pub async fn wait_ready(&self, addr: SocketAddr, within: Duration) -> bool {
        let local: SocketAddr = if addr.is_ipv4() { "0.0.0.0:0".parse().unwrap() } else { "[::]:0".parse().unwrap() };
        let Ok(sock) = self.on_server_side(move || {
            let s = StdUdpSocket::bind(local)?;
            s.set_nonblocking(true)?;
            Ok(s)
        }) else {
            return false;
        };
        let Ok(sock) = UdpSocket::from_std(sock) else {
            return false;
        };
        let ping = Message::empty(MessageType::Con, 0x7777).to_bytes();
        let deadline = tokio::time::Instant::now() + within;
        let mut buf = [0u8; 1500];
        while tokio::time::Instant::now() < deadline {
            let _ = sock.send_to(&ping, addr).await;
            let reply = tokio::time::timeout(Duration::from_millis(100), sock.recv_from(&mut buf)).await;
            if let Ok(Ok((n, _))) = reply {
                if n >= 4 {
                    return true;
                }
            }
        }
        false
    }

    /// Wait until some process has bound UDP port `addr.port()` on the server's side, without
    /// sending it anything. Reads the namespace's socket table (`/proc/thread-self/net/udp`,
    /// `udp6`) rather than probing with a bind of our own, which could make the server's bind
    /// fail if it came at the same moment.
    pub async fn wait_bound(&self, addr: SocketAddr, within: Duration) -> bool {
        let port = format!(":{:04X}", addr.port());
        let deadline = tokio::time::Instant::now() + within;
        while tokio::time::Instant::now() < deadline {
            let port = port.clone();
            let bound = self.on_server_side(move || {
                let mut found = false;
                for table in ["/proc/thread-self/net/udp", "/proc/thread-self/net/udp6"] {
                    let text = std::fs::read_to_string(table).unwrap_or_default();
                    // "sl local_address rem_address st ...": local_address is ADDR:PORT in hex.
                    found |= text
                        .lines()
                        .skip(1)
                        .filter_map(|l| l.split_whitespace().nth(1))
                        .any(|local| local.ends_with(&port));
                }
                Ok(found)
            });
            if bound.unwrap_or(false) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    /// Run a command to completion, with [`Link::cmd_timeout`].
    pub async fn run(&self, cmd: Command) -> Output {
        run_for(cmd, self.cmd_timeout()).await
    }

    /// Count a run of our client (emulated links).
    fn record(&self, r: &ClientRun) {
        if let Link::Emulated(e) = self {
            let (ok, failed) = r.ok_failed();
            let mut t = e.tally.lock().unwrap();
            t.runs += 1;
            t.ok += ok;
            t.failed += failed;
            for x in r.exchanges() {
                t.exchanges += 1;
                t.retransmissions += x["retransmissions"].as_u64().unwrap_or(0);
            }
        }
    }

    /// What our client did so far (emulated links; zero otherwise).
    pub fn tally(&self) -> Tally {
        match self {
            Link::Direct => Tally::default(),
            Link::Emulated(e) => *e.tally.lock().unwrap(),
        }
    }

    /// The emulator's counters so far.
    pub fn report(&self) -> Option<EmuReport> {
        match self {
            Link::Direct => None,
            Link::Emulated(e) => Some(e.emu.report()),
        }
    }

    /// The line [`Link::finish`] left, if it did.
    pub fn summary(&self) -> Option<String> {
        match self {
            Link::Direct => None,
            Link::Emulated(e) => e.summary.lock().unwrap().clone(),
        }
    }

    /// End of a case on a lossy link: every request of our client completed, and
    /// retransmissions happened. Evidence: our client's logged retransmissions when the case
    /// ran our client; our server's duplicate count plus the requests the link lost on the
    /// uplink (each one was necessarily retransmitted, since the peer's requests all completed)
    /// when it ran our server (`server` = its summary line). Leaves a summary line.
    pub fn finish(&self, test: &str, server: Option<&Value>) {
        let Link::Emulated(e) = self else { return };
        let r = e.emu.report();
        let t = self.tally();
        let (up, down) = (&r.uplink, &r.downlink);
        let dups = server.map(|s| s["duplicates"].as_u64().expect("duplicates"));
        let server_retx = server.map(|s| s["retransmissions"].as_u64().unwrap_or(0));
        let mut line = format!(
            "{test} [{}]: {:.0} s; link: up {} packets, {} lost, {} tail-dropped; down {} packets, \
             {} lost, {} tail-dropped",
            self.name(),
            r.elapsed_s,
            up.counters.offered_packets,
            up.counters.error_loss_packets,
            up.counters.buffer_drop_packets,
            down.counters.offered_packets,
            down.counters.error_loss_packets,
            down.counters.buffer_drop_packets,
        );
        if t.runs > 0 {
            line += &format!(
                "; our client: {} runs, {} requests completed, {} failed, {} exchanges, {} retransmissions",
                t.runs, t.ok, t.failed, t.exchanges, t.retransmissions
            );
        }
        if let (Some(d), Some(sr)) = (dups, server_retx) {
            line += &format!(
                "; our server: {} requests, {d} duplicates, {sr} retransmitted separate responses",
                server.unwrap()["requests"]
            );
        }
        *e.summary.lock().unwrap() = Some(line.clone());
        assert!(e.emu.failed().is_none(), "{line}: emulator failed: {:?}", e.emu.failed());
        if !self.lossy() {
            return;
        }
        // With random loss a case can see no loss at all, or an exchange whose every
        // transmission is lost; the fixed seeds avoid both (docs/interop.md).
        let hint = "(with this seed's loss pattern: see docs/interop.md)";
        if t.runs > 0 {
            assert_eq!(t.failed, 0, "{line}: our client's requests must all complete {hint}");
            assert!(t.retransmissions > 0, "{line}: our client retransmitted nothing {hint}");
        }
        if let Some(d) = dups {
            assert!(
                d + up.counters.error_loss_packets > 0,
                "{line}: no retransmitted request reached or left the client {hint}"
            );
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
        self.lines.iter().rev().find(|l| l["type"] == "summary").expect("a summary line")
    }

    /// `(success, failed)` counts of the summary.
    pub fn ok_failed(&self) -> (u64, u64) {
        let s = self.summary();
        (s["success"].as_u64().unwrap(), s["failed"].as_u64().unwrap())
    }

    /// The exchange lines.
    pub fn exchanges(&self) -> Vec<&Value> {
        self.lines.iter().filter(|l| l["type"] == "exchange").collect()
    }

    /// Code of the last finished request (`"2.05"`, ...).
    pub fn last_code(&self) -> Option<String> {
        let r = self.lines.iter().rev().find(|l| l["type"] == "request")?;
        r["code"].as_str().map(str::to_string)
    }

    /// The summary and every request or exchange line that did not end well, for messages.
    pub fn failures(&self) -> String {
        let bad = self.lines.iter().filter(|l| {
            (l["type"] == "request" && l["outcome"] != "ok")
                || (l["type"] == "exchange"
                    && !matches!(l["outcome"].as_str(), Some("piggybacked" | "separate" | "non-response")))
        });
        let mut v: Vec<String> = bad.map(|l| l.to_string()).collect();
        v.extend(self.lines.iter().filter(|l| l["type"] == "summary").map(|l| l.to_string()));
        if !self.stderr.is_empty() {
            v.push(format!("stderr: {}", self.stderr.trim()));
        }
        v.join("; ")
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
    let timeout = (link.cmd_timeout().as_secs() - 10).to_string();
    cmd.args(["client", uri, "--timeout", &timeout, "--log"]).arg(&log).arg("--output").arg(&out).args(extra);
    let o = link.run(cmd).await;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let lines = text.lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect();
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
    link.record(&r);
    r
}

/// Our server (`coapcc-net server`) running on the server side of a link.
pub struct OurServer {
    /// The process (killed when dropped).
    pub child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    log: PathBuf,
}

impl OurServer {
    /// Stop it with SIGINT (as Ctrl-C) and return its summary line (`requests`,
    /// `duplicates`, ...), with `retransmissions` added: the retransmissions of its CON
    /// separate responses, from its exchange lines.
    pub async fn stop(mut self) -> Value {
        if let Some(pid) = self.child.id() {
            let _ = Command::new("kill").args(["-INT", &pid.to_string()]).status().await;
        }
        let exited = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
        assert!(matches!(exited, Ok(Ok(_))), "our server did not stop on SIGINT");
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let _ = std::fs::remove_file(&self.log);
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect();
        let retx: u64 =
            lines.iter().filter(|l| l["type"] == "exchange").map(|l| l["retransmissions"].as_u64().unwrap_or(0)).sum();
        let mut summary = lines
            .into_iter()
            .rev()
            .find(|l| l["type"] == "summary")
            .unwrap_or_else(|| panic!("no summary line in our server's log: {text}"));
        summary["retransmissions"] = retx.into();
        summary
    }
}

/// Our server (`coapcc-net server --log ...`) on the server side of `link`, on a free port;
/// killed when dropped, or stopped by [`OurServer::stop`].
pub async fn our_server(link: &Link, extra: &[&str]) -> OurServer {
    let addr = link.server_addr();
    let log = temp_file("server.jsonl");
    let mut cmd = link.command(Side::Server, &coapcc_net());
    cmd.args(["server", "--bind", &addr.to_string(), "--log"]).arg(&log).args(extra);
    let mut child = spawn(cmd);
    assert!(
        link.wait_ready(addr, Duration::from_secs(20)).await,
        "our server did not come up on {addr} ({})",
        state(&mut child)
    );
    OurServer { child, addr, log }
}

/// Assert that a received body is `want`, saying where it differs.
pub fn assert_same(got: &[u8], want: &[u8], what: &str) {
    if got != want {
        let at = got.iter().zip(want).position(|(a, b)| a != b);
        panic!(
            "{what}: body differs: {} bytes received, {} expected, first difference at byte {}",
            got.len(),
            want.len(),
            at.map_or("-".to_string(), |i| i.to_string())
        );
    }
}

/// The `/large` pattern (same as `coapcc_net::resources::large_body`).
pub fn large(n: usize) -> Vec<u8> {
    coapcc_net::resources::large_body(n)
}
