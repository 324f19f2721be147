//! The test server: [`Resources`] behind a [`UdpDriver`].

use std::collections::BTreeMap;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Parser, ValueEnum};
use coapcc_cc::{AlgorithmConfig, Instant};
use coapcc_proto::endpoint::{
    DuplicateMode, EndpointConfig, Event, LifetimeMode, Response, ServerRequestId, Stats, TransferLimits,
};
use coapcc_proto::{Block, Code};
use serde_json::json;
use tokio::net::UdpSocket;

use crate::args::{shutdown_signal, Shutdown};
use crate::driver::{random_seed, UdpDriver};
use crate::limits::{ServerLimits, Shares};
use crate::log::{exchange_json, LogSink};
use crate::resources::{Action, Resources};

/// Server handling of duplicate CONs (specification AMBIG-21).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DuplicateArg {
    /// Answer each copy from the cache with that copy's token (echoes FASOR+token ordinals).
    AnswerEachCopy,
    /// Replay the cached response byte for byte.
    ReplayCached,
}

/// Lifetime of deduplication state (specification AMBIG-1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LifetimeArg {
    /// Keep for the whole run, bounded by --dedup-capacity.
    UntilComplete,
    /// EXCHANGE_LIFETIME / NON_LIFETIME of RFC 7252 §4.8.2.
    Formula,
}

/// `coapcc server`: a CoAP-over-UDP test server.
///
/// Resources: /hello (60 bytes), /large?size=N (block-wise), /echo (PUT/POST store and echo,
/// GET last payload), /slow?ms=N (separate response), /.well-known/core.
#[derive(Parser, Debug, Clone, PartialEq)]
#[command(name = "server")]
pub struct ServerArgs {
    /// Address to listen on. The default `[::]:5683` is dual-stack; if IPv6 is unavailable
    /// the server falls back to 0.0.0.0 on the same port and says so.
    #[arg(long, default_value = "[::]:5683", value_name = "HOST:PORT")]
    pub bind: String,
    /// Congestion control for the server's CON separate responses (NAME[:key=value,...]);
    /// its MAX_RETRANSMIT etc. also set the deduplication lifetimes.
    #[arg(long, default_value = "default", value_name = "SPEC")]
    pub cc: String,
    /// How duplicate CONs are answered.
    #[arg(long, value_enum, default_value_t = DuplicateArg::AnswerEachCopy)]
    pub duplicate_mode: DuplicateArg,
    /// How long deduplication state is kept.
    #[arg(long, value_enum, default_value_t = LifetimeArg::UntilComplete)]
    pub lifetime_mode: LifetimeArg,
    /// Capacity of the deduplication cache (oldest entries are evicted).
    #[arg(long, default_value_t = 4096, value_name = "N")]
    pub dedup_capacity: usize,
    /// Largest Block2 size in bytes (16, 32, ..., 1024); clients may ask for less.
    #[arg(long, default_value_t = 1024, value_name = "BYTES")]
    pub block_size: usize,
    /// Seconds before an unanswered CON request gets an Empty ACK (separate response).
    #[arg(long, default_value_t = 1.0, value_name = "SECS")]
    pub piggyback_timeout: f64,
    /// Seed for Message IDs and dithering (random if absent).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write JSON lines (separate-response exchanges and a final summary) to FILE.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Serve CoAP over TCP (RFC 8323) on --bind instead of UDP.
    #[arg(long)]
    pub tcp: bool,
    /// Most requests one client (address and port) may have pending; beyond, requests are
    /// answered at once with 5.03 Service Unavailable and Max-Age 2.
    #[arg(long, default_value_t = 16, value_name = "N")]
    pub max_pending_per_peer: usize,
    /// Most duplicates of one CON answered from the deduplication cache (later ones are
    /// dropped); a compliant client retransmits at most MAX_RETRANSMIT times.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub max_duplicate_replies: u32,
    /// Largest answer to a GET/FETCH from a client not yet verified, as a multiple of the
    /// request's size; larger answers become 4.01 with an Echo option (RFC 9175) that the
    /// client repeats to prove it receives at its address. 0: no limit.
    #[arg(long, default_value_t = 3, value_name = "FACTOR")]
    pub amplification_limit: u32,
    /// Most delayed (`/slow`) answers pending in all (UDP peers and TCP connections); beyond,
    /// requests are answered 5.03 at once.
    #[arg(long, default_value_t = 1024, value_name = "N")]
    pub max_delayed: usize,
    /// Most delayed answers pending per client (UDP: address and port; TCP: address).
    #[arg(long, default_value_t = 16, value_name = "N")]
    pub max_delayed_per_peer: usize,
    /// TCP: most delayed answers pending per connection (they end with it).
    #[arg(long, default_value_t = 8, value_name = "N")]
    pub max_delayed_per_connection: usize,
    /// TCP: most connections at once. When full, the connection whose peer sent nothing for
    /// the longest (without delayed answers or observations) is closed to admit a new one; a
    /// new one is refused only when every connection has such pending work.
    #[arg(long, default_value_t = 256, value_name = "N")]
    pub max_connections: usize,
    /// TCP: connections accepted per second (a burst of a tenth of a second's worth); the
    /// others wait in the kernel's accept queue.
    #[arg(long, default_value_t = 100.0, value_name = "N")]
    pub accept_rate: f64,
    /// TCP: close a connection that sent no frame and has nothing pending for this long.
    #[arg(long, default_value_t = 300.0, value_name = "SECS")]
    pub idle_timeout: f64,
    /// TCP: abort a connection whose CSM has not arrived within this time.
    #[arg(long, default_value_t = 300.0, value_name = "SECS")]
    pub csm_timeout: f64,
    /// TCP: abort a connection whose frame stopped arriving (no byte of it for this long; on
    /// a slow lossy path TCP's backed-off retransmissions can take minutes).
    #[arg(long, default_value_t = 300.0, value_name = "SECS")]
    pub frame_timeout: f64,
    /// TCP: most bytes of partial frames buffered over all connections (each connection may
    /// hold 16 KiB besides); a connection that would exceed it is aborted.
    #[arg(long, default_value_t = 8 << 20, value_name = "BYTES")]
    pub max_buffered: usize,
    /// TCP: Pings answered per second per connection (a burst of one second's worth); the
    /// rest get no Pong.
    #[arg(long, default_value_t = 10.0, value_name = "N")]
    pub ping_rate: f64,
    /// Most block-wise transfers (Block1 uploads, representations kept for Block2
    /// follow-ups) in all; beyond, a new one is answered 5.03.
    #[arg(long, default_value_t = 64, value_name = "N")]
    pub max_transfers: usize,
    /// Most block-wise transfers per peer (a peer over its share replaces its own oldest).
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub max_transfers_per_peer: usize,
    /// Largest request body reassembled from Block1 blocks; beyond, 4.13.
    #[arg(long, default_value_t = 1 << 20, value_name = "BYTES")]
    pub max_upload_size: usize,
    /// Most bytes of block-wise transfers in all.
    #[arg(long, default_value_t = 8 << 20, value_name = "BYTES")]
    pub max_transfer_bytes: usize,
    /// A block-wise transfer not continued for this long is dropped.
    #[arg(long, default_value_t = 93.0, value_name = "SECS")]
    pub transfer_timeout: f64,
    /// A representation served to its last block is kept this long more, for a block asked
    /// for again after a lost answer (no longer counted as active).
    #[arg(long, default_value_t = 8.0, value_name = "SECS")]
    pub transfer_linger: f64,
    /// Most observations (RFC 7641) in all.
    #[arg(long, default_value_t = 64, value_name = "N")]
    pub max_observations: usize,
    /// Most observations per peer (UDP: address and port; TCP: connection); the same peer
    /// and token replace an observation.
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub max_observations_per_peer: usize,
    /// Rotate the --log file (to FILE.1) when it reaches this many bytes; 0: never.
    #[arg(long, default_value_t = 16 << 20, value_name = "BYTES")]
    pub log_max_bytes: u64,
}

impl Default for ServerArgs {
    fn default() -> Self {
        ServerArgs::parse_from(["server"])
    }
}

fn at_least_one(flag: &str, n: usize) -> anyhow::Result<usize> {
    if n == 0 {
        bail!("{flag} must be at least 1");
    }
    Ok(n)
}

impl ServerArgs {
    /// The resource limits these arguments describe (checked: counts at least 1, durations
    /// positive and finite).
    pub fn limits(&self) -> anyhow::Result<ServerLimits> {
        use crate::args::secs;
        if !(self.ping_rate.is_finite() && self.ping_rate >= 0.0 && self.ping_rate <= 1e9) {
            bail!("--ping-rate must be a number of Pings per second from 0 to 1e9, got {}", self.ping_rate);
        }
        if !(self.accept_rate.is_finite() && self.accept_rate >= 1.0 && self.accept_rate <= 1e9) {
            bail!("--accept-rate must be a number of connections per second from 1 to 1e9, got {}", self.accept_rate);
        }
        Ok(ServerLimits {
            max_delayed: at_least_one("--max-delayed", self.max_delayed)?,
            max_delayed_per_peer: at_least_one("--max-delayed-per-peer", self.max_delayed_per_peer)?,
            max_delayed_per_connection: at_least_one("--max-delayed-per-connection", self.max_delayed_per_connection)?,
            max_connections: at_least_one("--max-connections", self.max_connections)?,
            accept_rate: self.accept_rate,
            idle_timeout: secs("--idle-timeout", self.idle_timeout, false)?,
            csm_timeout: secs("--csm-timeout", self.csm_timeout, false)?,
            frame_timeout: secs("--frame-timeout", self.frame_timeout, false)?,
            max_buffered: self.max_buffered,
            ping_rate: self.ping_rate,
            transfers: TransferLimits {
                max_transfers: at_least_one("--max-transfers", self.max_transfers)?,
                max_per_peer: at_least_one("--max-transfers-per-peer", self.max_transfers_per_peer)?,
                max_body_size: at_least_one("--max-upload-size", self.max_upload_size)?,
                max_bytes: at_least_one("--max-transfer-bytes", self.max_transfer_bytes)?,
                timeout: secs("--transfer-timeout", self.transfer_timeout, false)?,
                linger: secs("--transfer-linger", self.transfer_linger, true)?,
                ..TransferLimits::default()
            },
            max_observations: at_least_one("--max-observations", self.max_observations)?,
            max_observations_per_peer: at_least_one("--max-observations-per-peer", self.max_observations_per_peer)?,
            log_max_bytes: self.log_max_bytes,
        })
    }

    /// The endpoint configuration these arguments describe.
    pub fn endpoint_config(&self) -> anyhow::Result<EndpointConfig> {
        let cc = AlgorithmConfig::parse(&self.cc).map_err(|e| anyhow::anyhow!("--cc: {e}"))?;
        let szx = Block::szx_for_size(self.block_size).with_context(|| {
            format!("--block-size {} is not one of 16, 32, 64, 128, 256, 512, 1024", self.block_size)
        })?;
        let piggyback_timeout = crate::args::secs("--piggyback-timeout", self.piggyback_timeout, true)?;
        if self.dedup_capacity == 0 {
            bail!("--dedup-capacity must be at least 1");
        }
        let mut c = EndpointConfig::with_cc(cc);
        c.duplicate_mode = match self.duplicate_mode {
            DuplicateArg::AnswerEachCopy => DuplicateMode::AnswerEachCopy,
            DuplicateArg::ReplayCached => DuplicateMode::ReplayCached,
        };
        c.lifetime_mode = match self.lifetime_mode {
            LifetimeArg::UntilComplete => LifetimeMode::UntilComplete,
            LifetimeArg::Formula => LifetimeMode::Formula,
        };
        c.dedup_capacity = self.dedup_capacity;
        c.block_szx = szx;
        c.max_unblocked_payload = self.block_size;
        c.piggyback_timeout = piggyback_timeout;
        c.record_exchanges = self.log.is_some();
        if self.max_pending_per_peer == 0 {
            bail!("--max-pending-per-peer must be at least 1");
        }
        c.max_pending_per_peer = self.max_pending_per_peer;
        c.max_duplicate_replies = self.max_duplicate_replies;
        c.amplification_limit = (self.amplification_limit > 0).then_some(self.amplification_limit);
        let limits = self.limits()?;
        c.transfers = limits.transfers;
        c.max_observations = limits.max_observations;
        c.max_observations_per_peer = limits.max_observations_per_peer;
        Ok(c)
    }
}

/// Bind a UDP socket to `spec` (`HOST:PORT`). If the address is the IPv6 wildcard and IPv6
/// is unavailable, fall back to the IPv4 wildcard on the same port (with a notice on stderr).
pub async fn bind_udp(spec: &str) -> anyhow::Result<UdpSocket> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host(spec)
        .await
        .with_context(|| format!("cannot resolve bind address '{spec}' (expected HOST:PORT, e.g. [::]:5683)"))?
        .collect();
    let mut last = None;
    for a in &addrs {
        match UdpSocket::bind(a).await {
            Ok(s) => return Ok(s),
            Err(e) => last = Some((*a, e)),
        }
    }
    let Some((a, e)) = last else { bail!("bind address '{spec}' resolved to nothing") };
    if a.is_ipv6() && a.ip().is_unspecified() {
        let v4 = SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), a.port());
        if let Ok(s) = UdpSocket::bind(v4).await {
            eprintln!("coapcc server: cannot use IPv6 ({e}); listening on {v4} instead");
            return Ok(s);
        }
    }
    bail!("cannot bind {a}: {e}{}", if a.is_ipv6() { " (is IPv6 available? try --bind 0.0.0.0:5683)" } else { "" })
}

/// A bound server, ready to [`Server::run_until`].
pub struct Server {
    driver: UdpDriver,
    resources: Resources,
    /// `/slow` answers due later: (due, request) → (client, response).
    delayed: BTreeMap<(Instant, ServerRequestId), (SocketAddr, Response)>,
    /// The delayed answers' budget: in all and per client.
    delayed_shares: Shares<SocketAddr>,
    /// Observers of `/counter`: registering request → (next notification, period).
    observers: BTreeMap<ServerRequestId, (Instant, std::time::Duration)>,
    log: LogSink,
    seed: u64,
}

impl Server {
    /// Bind the socket and build the endpoint described by `args`.
    pub async fn bind(args: &ServerArgs) -> anyhow::Result<Server> {
        let config = args.endpoint_config()?;
        let limits = args.limits()?;
        let socket = bind_udp(&args.bind).await?;
        let seed = args.seed.unwrap_or_else(random_seed);
        let log = match &args.log {
            Some(p) => LogSink::create(p, limits.log_max_bytes)?,
            None => LogSink::none(),
        };
        let mut s = Server {
            driver: UdpDriver::new(socket, config.clone(), seed),
            resources: Resources::new(),
            delayed: BTreeMap::new(),
            delayed_shares: Shares::new(limits.max_delayed, limits.max_delayed_per_peer),
            observers: BTreeMap::new(),
            log,
            seed,
        };
        let line = json!({"type": "start", "role": "server", "bind": s.local_addr().to_string(), "seed": seed, "cc": config.cc.to_string()});
        s.write_log(&line);
        Ok(s)
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.driver.local_addr().expect("a bound socket has an address")
    }

    /// The endpoint's counters.
    pub fn stats(&self) -> Stats {
        self.driver.endpoint_ref().stats()
    }

    /// The sans-IO endpoint (for inspection: pending requests, deduplication cache, ...).
    pub fn endpoint(&self) -> &coapcc_proto::endpoint::Endpoint<SocketAddr> {
        self.driver.endpoint_ref()
    }

    /// `/slow` answers waiting (at most `--max-delayed`).
    pub fn delayed(&self) -> usize {
        self.delayed.len()
    }

    /// Observations of `/counter` the server notifies (never more than the endpoint holds).
    pub fn observers(&self) -> usize {
        self.observers.len()
    }

    /// `/slow` answers waiting for `peer` (at most `--max-delayed-per-peer`).
    pub fn delayed_for(&self, peer: &SocketAddr) -> usize {
        self.delayed_shares.of(peer)
    }

    /// The seed in use.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    fn write_log(&mut self, v: &serde_json::Value) {
        self.log.line(v);
    }

    fn handle_events(&mut self) {
        let now = self.driver.now();
        while let Some(ev) = self.driver.endpoint().poll_event() {
            match ev {
                Event::Request { id, message, .. } if message.uri_path() == "counter" => {
                    self.counter(now, id, &message);
                }
                Event::Request { id, message, peer } => match self.resources.handle(&message) {
                    Action::Respond(r) => {
                        let _ = self.driver.endpoint().respond(now, id, r);
                    }
                    Action::Delay(d, r) if self.delayed_shares.try_take(&peer) => {
                        self.delayed.insert((now + d, id), (peer, r));
                    }
                    Action::Delay(..) => {
                        let busy = Response::new(Code::SERVICE_UNAVAILABLE)
                            .with_payload(b"too many delayed requests".to_vec());
                        let _ = self.driver.endpoint().respond(now, id, busy);
                    }
                },
                Event::ResponseFailed { id, peer, reason } => {
                    self.observers.remove(&id);
                    let line = json!({"type": "response-failed", "id": id.0, "peer": peer.to_string(), "reason": reason.as_str()});
                    self.write_log(&line);
                }
                Event::Response { .. } | Event::Failed { .. } => {}
            }
        }
        while let Some(r) = self.driver.endpoint().poll_record() {
            let line = exchange_json(&r);
            self.write_log(&line);
        }
    }

    /// `GET /counter?period=MS`: the number of whole periods since the server started;
    /// observable (RFC 7641): an observer gets a CON notification each period.
    fn counter(&mut self, now: Instant, id: ServerRequestId, req: &coapcc_proto::Message) {
        let ep = self.driver.endpoint();
        if req.code != Code::GET {
            let _ = ep.respond(now, id, Response::new(Code::METHOD_NOT_ALLOWED));
            return;
        }
        let queries = req.uri_queries();
        let period = match crate::resources::counter_period(&queries) {
            Ok(p) => p,
            Err(e) => {
                let _ = ep.respond(now, id, Response::new(Code::BAD_REQUEST).with_payload(e.as_bytes().to_vec()));
                return;
            }
        };
        let n = now.as_nanos() / period.as_nanos() as u64;
        let r = crate::resources::counter_response(n);
        if req.options.get_uint(coapcc_proto::option::OBSERVE) == Some(0) {
            if let Ok(true) = ep.observe(now, id, r) {
                let next = Instant::from_nanos((n + 1) * period.as_nanos() as u64);
                self.observers.insert(id, (next, period));
                // A registration may have replaced an earlier one (same client and token): keep
                // only those the endpoint still holds, so this map is as bounded as they are.
                if self.observers.len() > ep.observations() {
                    self.observers.retain(|id, _| ep.is_observing(*id));
                }
            }
        } else {
            let _ = ep.respond(now, id, r);
        }
    }

    fn notify_due(&mut self) {
        let now = self.driver.now();
        let due: Vec<ServerRequestId> = self.observers.iter().filter(|(_, o)| o.0 <= now).map(|(k, _)| *k).collect();
        for id in due {
            let (_, period) = self.observers[&id];
            let n = now.as_nanos() / period.as_nanos() as u64;
            match self.driver.endpoint().notify(now, id, crate::resources::counter_response(n), true) {
                Ok(()) => {
                    self.observers.insert(id, (Instant::from_nanos((n + 1) * period.as_nanos() as u64), period));
                }
                Err(_) => {
                    self.observers.remove(&id);
                }
            }
        }
    }

    fn answer_due(&mut self) {
        self.notify_due();
        let now = self.driver.now();
        while let Some(entry) = self.delayed.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let ((_, id), (peer, r)) = entry.remove_entry();
            self.delayed_shares.give_back(&peer, 1);
            let _ = self.driver.endpoint().respond(now, id, r);
        }
    }

    /// Serve until `shutdown` completes; returns the endpoint's counters.
    pub async fn run_until<F: Future>(&mut self, shutdown: F) -> anyhow::Result<Stats> {
        tokio::pin!(shutdown);
        loop {
            self.answer_due();
            self.handle_events();
            self.driver.flush().await;
            // What happened is in the log file before the server waits again.
            let _ = self.log.flush();
            let next_notification = self.observers.values().map(|o| o.0).min();
            let until = [self.delayed.keys().next().map(|k| k.0), next_notification].into_iter().flatten().min();
            tokio::select! {
                r = self.driver.wait(until) => { r.context("receiving")?; }
                _ = &mut shutdown => break,
            }
        }
        self.driver.flush().await;
        let stats = self.stats();
        let line = json!({
            "type": "summary", "role": "server",
            "datagrams_in": stats.datagrams_in, "datagrams_out": stats.datagrams_out,
            "requests": stats.requests_received, "duplicates": stats.duplicates,
            "malformed": stats.malformed, "rst_sent": stats.rst_sent,
            "dedup_len": stats.dedup_len, "dedup_evicted": stats.dedup_evicted,
        });
        self.write_log(&line);
        self.log.flush().context("writing the log")?;
        Ok(stats)
    }
}

/// Run the server described by `args` until SIGINT or SIGTERM; the log gets its summary line
/// and is flushed either way. Returns the signal that stopped it.
pub async fn run_server(args: ServerArgs) -> anyhow::Result<Shutdown> {
    let mut server = Server::bind(&args).await?;
    let signal = shutdown_signal();
    tokio::pin!(signal);
    // Install the handlers before announcing readiness, so a signal right after is not lost.
    let _ = futures_poll_once(signal.as_mut()).await;
    // One write for the whole line: scripts and tests read the address from it, and a line
    // formatted piece by piece reaches a reader in fragments ("127", ".", "0", ...).
    let ready =
        format!("coapcc server: listening on {} (cc {}, seed {})\n", server.local_addr(), args.cc, server.seed());
    {
        use std::io::Write as _;
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(ready.as_bytes());
        let _ = err.flush();
    }
    let mut got = Shutdown::Interrupt;
    let stats = server
        .run_until(async {
            got = signal.await;
        })
        .await?;
    eprintln!(
        "coapcc server: stopped ({}) after {} requests ({} duplicates, {} malformed, {} RST sent)",
        got.name(),
        stats.requests_received,
        stats.duplicates,
        stats.malformed,
        stats.rst_sent
    );
    Ok(got)
}

/// Poll `fut` once (to run its set-up, such as installing signal handlers) without waiting.
async fn futures_poll_once<F: Future + Unpin>(fut: F) -> Option<F::Output> {
    let mut fut = fut;
    std::future::poll_fn(|cx| match std::pin::Pin::new(&mut fut).poll(cx) {
        std::task::Poll::Ready(v) => std::task::Poll::Ready(Some(v)),
        std::task::Poll::Pending => std::task::Poll::Ready(None),
    })
    .await
}

/// `coapcc server` entry point: builds a tokio runtime, runs [`run_server`], prints a
/// one-line error. Returns the process exit code.
pub fn server_main(args: ServerArgs) -> i32 {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("coapcc server: error: cannot start the runtime: {e}");
            return 1;
        }
    };
    let run = async {
        if args.tcp {
            crate::tcp_server::run_tcp_server(args).await
        } else {
            run_server(args).await.map(|_| ())
        }
    };
    match rt.block_on(run) {
        // Stopping on a signal is the server's normal end.
        Ok(()) => 0,
        Err(e) => {
            eprintln!("coapcc server: error: {e:#}");
            1
        }
    }
}
