//! `coapcc server --tcp`: the test server's resources over CoAP over TCP (RFC 8323) on the
//! kernel's TCP. The server sends its CSM as soon as a connection is accepted (as in the
//! Helsinki study), answers each request with the whole representation as one message when it
//! fits the client's Max-Message-Size (block-wise otherwise, or when the request carries
//! Block2), reassembles Block1 uploads, serves Observe (RFC 8323 §7: notifications on the
//! connection until it closes), answers Ping with Pong (rate-limited), and ends a connection
//! on Release, on Abort, or with an Abort of its own on a protocol error (missing or bad CSM,
//! oversized or malformed frame, a timeout).
//!
//! Every connection draws on one budget ([`ServerLimits`], `docs/robustness.md`): connection
//! slots (an idle connection is closed to admit a new one before a working one is refused),
//! CSM, frame and idle timeouts, partial frames, delayed answers (which end with their
//! connection), block-wise transfers and observations (keyed by connection), and Pings. The
//! connection itself is served by `tcp_conn`.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use coapcc_cc::Instant;
use coapcc_proto::endpoint::{Observers, Response, Transfers};
use coapcc_proto::tcp::{PeerCaps, RateLimit, TcpMessage};
use coapcc_proto::{Block, Code};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::Notify;

use crate::driver::to_instant;
use crate::limits::{ServerLimits, Shares};
use crate::log::LogSink;
use crate::resources::Resources;
use crate::server::ServerArgs;
use crate::tcp_session::SessionConfig;

/// Counters of a TCP server run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpServerStats {
    /// Connections accepted.
    pub connections: u64,
    /// Connections refused (every slot held by a working connection).
    pub refused: u64,
    /// Idle connections closed to admit a new one.
    pub evicted: u64,
    /// Requests answered.
    pub requests: u64,
    /// Connections ended by a protocol error of the peer (we sent Abort).
    pub protocol_errors: u64,
    /// Connections ended because the peer stopped reading.
    pub write_timeouts: u64,
    /// Connections aborted because the peer's CSM did not come in time.
    pub csm_timeouts: u64,
    /// Connections aborted because a frame did not arrive whole in time.
    pub frame_timeouts: u64,
    /// Connections closed after the idle timeout.
    pub idle_timeouts: u64,
    /// Connections aborted because the budget for partial frames was used up.
    pub buffer_refusals: u64,
    /// Connections ended by the peer's Abort.
    pub peer_aborts: u64,
    /// Connections ended by the peer's Release or a clean close.
    pub clean_closes: u64,
    /// Pings not answered (over the per-connection rate).
    pub pings_dropped: u64,
    /// Delayed requests answered 5.03 at once (over a share of the delayed budget).
    pub delayed_refused: u64,
}

/// What the server holds now: the bounded state, for tests and benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpUsage {
    /// Connections being served.
    pub connections: usize,
    /// Delayed answers pending.
    pub delayed: usize,
    /// Bytes of partial frames charged to the shared budget.
    pub buffered: usize,
    /// Block-wise transfers (uploads and kept representations).
    pub transfers: usize,
    /// Their bytes.
    pub transfer_bytes: usize,
    /// Observations.
    pub observations: usize,
}

/// A connection slot.
pub(crate) struct Slot {
    /// When the peer last sent a byte (or connected).
    pub(crate) last_active: tokio::time::Instant,
    /// Delayed answers or observations pending: not to be evicted.
    pub(crate) working: bool,
    /// Wakes the connection's task to close it.
    pub(crate) close: Arc<Notify>,
}

/// The state every connection shares.
pub(crate) struct Shared {
    pub(crate) limits: ServerLimits,
    pub(crate) session: SessionConfig,
    /// Time zero of the transfers' and observations' clock and of `/counter`.
    pub(crate) epoch: tokio::time::Instant,
    pub(crate) resources: Mutex<Resources>,
    pub(crate) stats: Arc<Mutex<TcpServerStats>>,
    pub(crate) log: Mutex<LogSink>,
    /// Delayed answers, in all and per client address.
    pub(crate) delayed: Mutex<Shares<IpAddr>>,
    /// Block-wise transfer state, by connection.
    pub(crate) transfers: Mutex<Transfers<u64>>,
    /// Observations, by connection and token.
    pub(crate) observers: Mutex<Observers<u64, ()>>,
    /// Bytes of partial frames charged to the shared budget.
    pub(crate) buffered: Mutex<usize>,
    pub(crate) slots: Mutex<BTreeMap<u64, Slot>>,
}

impl Shared {
    pub(crate) fn log(&self, v: &serde_json::Value) {
        if let Ok(mut l) = self.log.lock() {
            l.line(v);
            let _ = l.flush();
        }
    }

    pub(crate) fn stat(&self, f: impl FnOnce(&mut TcpServerStats)) {
        f(&mut self.stats.lock().expect("stats lock"));
    }

    fn usage(&self) -> TcpUsage {
        let t = self.transfers.lock().expect("transfers lock");
        TcpUsage {
            connections: self.slots.lock().expect("slots lock").len(),
            delayed: self.delayed.lock().expect("delayed lock").total(),
            buffered: *self.buffered.lock().expect("buffered lock"),
            transfers: t.len(),
            transfer_bytes: t.bytes(),
            observations: self.observers.lock().expect("observers lock").len(),
        }
    }

    /// A slot for connection `id`, closing the least recently active idle connection when all
    /// are taken (libcoap frees its oldest idle session the same way); `None` when every
    /// connection is working.
    fn admit(&self, id: u64) -> Option<Arc<Notify>> {
        let mut slots = self.slots.lock().expect("slots lock");
        if slots.len() >= self.limits.max_connections {
            let idlest = slots.iter().filter(|(_, s)| !s.working).min_by_key(|(_, s)| s.last_active).map(|(k, _)| *k);
            let victim = idlest.and_then(|k| slots.remove(&k))?;
            victim.close.notify_one();
            self.stat(|s| s.evicted += 1);
        }
        let close = Arc::new(Notify::new());
        let slot = Slot { last_active: tokio::time::Instant::now(), working: false, close: close.clone() };
        slots.insert(id, slot);
        Some(close)
    }
}

/// A live view of what a running server holds ([`TcpServer::usage_handle`]).
#[derive(Clone)]
pub struct UsageHandle(Arc<Shared>);

impl UsageHandle {
    /// What the server holds now.
    pub fn usage(&self) -> TcpUsage {
        self.0.usage()
    }
}

/// A bound CoAP-over-TCP server.
pub struct TcpServer {
    listener: TcpListener,
    shared: Arc<Shared>,
}

/// Build the message answering `req` with `resp`, fitted to what the peer accepts: the whole
/// representation when it fits the peer's Max-Message-Size and no block was asked for, else
/// the block asked for (or block 0 of the largest size that fits). Only that block's bytes are
/// copied.
pub fn fit_response(req: &TcpMessage, resp: &Response, peer: &PeerCaps) -> TcpMessage {
    let requested = match req.block2() {
        Ok(b) => b,
        Err(_) => {
            return TcpMessage::new(Code::BAD_OPTION).with_token(req.token).with_payload(b"bad Block2 option".to_vec())
        }
    };
    let total = resp.payload.len();
    let mut options = resp.options.clone();
    options.remove(coapcc_proto::option::BLOCK2);
    let body_len = options.encoded_len() + if total > 0 { total + 1 } else { 0 };
    let whole_len = coapcc_proto::tcp::header_len(body_len as u64) + req.token.len() + body_len;
    let block = match requested {
        Some(b) if resp.code.is_success() => Some((b.num, b.szx)),
        _ if whole_len > peer.max_message_size as usize => {
            if !(peer.block_wise && resp.code.is_success()) {
                return TcpMessage::new(Code::INTERNAL_SERVER_ERROR)
                    .with_token(req.token)
                    .with_payload(b"response exceeds the client's Max-Message-Size".to_vec());
            }
            // The largest block (16-1024 B) whose message fits the peer's limit.
            let overhead = whole_len - total + 16;
            let szx = (0u8..=6).rev().find(|s| (16usize << s) + overhead <= peer.max_message_size as usize);
            match szx {
                Some(s) => Some((0, s)),
                None => {
                    return TcpMessage::new(Code::INTERNAL_SERVER_ERROR)
                        .with_token(req.token)
                        .with_payload(b"client's Max-Message-Size too small".to_vec())
                }
            }
        }
        _ => None,
    };
    let mut m = TcpMessage { code: resp.code, token: req.token, options, payload: Vec::new() };
    match block {
        None => m.payload = resp.payload.clone(),
        Some((num, szx)) => {
            let size = 16usize << szx;
            let off = (num as usize).saturating_mul(size);
            if off >= total && !(off == 0 && total == 0) {
                return TcpMessage::new(Code::BAD_OPTION)
                    .with_token(req.token)
                    .with_payload(b"Block2 beyond the end of the representation".to_vec());
            }
            let end = (off + size).min(total);
            m.payload = resp.payload[off..end].to_vec();
            let b = Block::new(num, end < total, szx).expect("num and szx are in range");
            m.set_block2(b).expect("valid block");
            if num == 0 {
                m.set_size2(total as u32);
            }
        }
    }
    m
}

impl TcpServer {
    /// Bind the listener on `args.bind`, with the limits `args` describe.
    pub async fn bind(args: &ServerArgs) -> anyhow::Result<TcpServer> {
        let limits = args.limits()?;
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host(&args.bind)
            .await
            .with_context(|| format!("cannot resolve bind address '{}'", args.bind))?
            .collect();
        let mut last = None;
        let mut listener = None;
        for a in &addrs {
            match TcpListener::bind(a).await {
                Ok(l) => {
                    listener = Some(l);
                    break;
                }
                Err(e) => last = Some((*a, e)),
            }
        }
        let listener = match (listener, last) {
            (Some(l), _) => l,
            (None, Some((a, e))) if a.is_ipv6() && a.ip().is_unspecified() => {
                let v4 = SocketAddr::new(std::net::Ipv4Addr::UNSPECIFIED.into(), a.port());
                let l = TcpListener::bind(v4).await.with_context(|| format!("cannot bind {a} ({e}) nor {v4}"))?;
                eprintln!("coapcc server: cannot use IPv6 ({e}); listening on {v4} instead");
                l
            }
            (None, Some((a, e))) => anyhow::bail!("cannot bind TCP {a}: {e}"),
            (None, None) => anyhow::bail!("bind address '{}' resolved to nothing", args.bind),
        };
        let log = match &args.log {
            Some(p) => LogSink::create(p, limits.log_max_bytes)?,
            None => LogSink::none(),
        };
        let shared = Shared {
            session: SessionConfig::default(),
            epoch: tokio::time::Instant::now(),
            resources: Mutex::new(Resources::new()),
            stats: Arc::new(Mutex::new(TcpServerStats::default())),
            log: Mutex::new(log),
            delayed: Mutex::new(Shares::new(limits.max_delayed, limits.max_delayed_per_peer)),
            transfers: Mutex::new(Transfers::new(limits.transfers)),
            observers: Mutex::new(Observers::new(limits.max_observations, limits.max_observations_per_peer)),
            buffered: Mutex::new(0),
            slots: Mutex::new(BTreeMap::new()),
            limits,
        };
        let s = TcpServer { listener, shared: Arc::new(shared) };
        let addr = s.local_addr()?;
        s.shared.log(&json!({"type": "start", "role": "server", "transport": "tcp", "bind": addr.to_string()}));
        Ok(s)
    }

    /// Change the per-connection settings (tests use a short write timeout). Call before
    /// [`TcpServer::run_until`].
    pub fn set_session_config(&mut self, c: SessionConfig) {
        match Arc::get_mut(&mut self.shared) {
            Some(s) => s.session = c,
            None => panic!("set_session_config after the server started"),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &ServerLimits {
        &self.shared.limits
    }

    /// The listening address.
    pub fn local_addr(&self) -> anyhow::Result<SocketAddr> {
        Ok(self.listener.local_addr()?)
    }

    /// A live view of the counters, readable while [`TcpServer::run_until`] runs.
    pub fn shared_stats(&self) -> Arc<Mutex<TcpServerStats>> {
        self.shared.stats.clone()
    }

    /// A live view of what the server holds, readable while [`TcpServer::run_until`] runs.
    pub fn usage_handle(&self) -> UsageHandle {
        UsageHandle(self.shared.clone())
    }

    /// Counters so far.
    pub fn stats(&self) -> TcpServerStats {
        *self.shared.stats.lock().expect("stats lock")
    }

    /// Serve until `shutdown` completes.
    pub async fn run_until<F: Future>(&mut self, shutdown: F) -> anyhow::Result<TcpServerStats> {
        tokio::pin!(shutdown);
        let mut tasks = tokio::task::JoinSet::new();
        let mut next_id = 0u64;
        let rate = self.shared.limits.accept_rate;
        let mut accepts = RateLimit::new(rate, (rate / 10.0).max(1.0), Instant::ZERO);
        // Not accepting before this instant (over the accept rate).
        let mut accept_from = tokio::time::Instant::now();
        loop {
            let now = tokio::time::Instant::now();
            let waiting = accept_from > now;
            tokio::select! {
                _ = tokio::time::sleep_until(accept_from), if waiting => {}
                r = self.listener.accept(), if !waiting => {
                    if !accepts.allow(to_instant(now.saturating_duration_since(self.shared.epoch))) {
                        accept_from = now + std::time::Duration::from_secs_f64(1.0 / rate);
                    }
                    let (stream, peer) = match r {
                        Ok(x) => x,
                        Err(e) => { eprintln!("coapcc server: accept failed: {e}"); continue; }
                    };
                    next_id += 1;
                    let Some(close) = self.shared.admit(next_id) else {
                        self.shared.stat(|s| s.refused += 1);
                        drop(stream);
                        continue;
                    };
                    self.shared.stat(|s| s.connections += 1);
                    let shared = self.shared.clone();
                    let id = next_id;
                    tasks.spawn(crate::tcp_conn::serve(stream, peer, id, close, shared));
                }
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                _ = &mut shutdown => break,
            }
        }
        tasks.shutdown().await;
        let st = self.stats();
        self.shared.log(
            &json!({"type": "summary", "role": "server", "transport": "tcp", "connections": st.connections,
                    "requests": st.requests, "protocol_errors": st.protocol_errors, "write_timeouts": st.write_timeouts,
                    "peer_aborts": st.peer_aborts, "clean_closes": st.clean_closes, "refused": st.refused,
                    "evicted": st.evicted, "csm_timeouts": st.csm_timeouts, "frame_timeouts": st.frame_timeouts,
                    "idle_timeouts": st.idle_timeouts, "buffer_refusals": st.buffer_refusals,
                    "pings_dropped": st.pings_dropped, "delayed_refused": st.delayed_refused}),
        );
        self.shared.log.lock().expect("log lock").flush().context("writing the log")?;
        Ok(st)
    }
}

/// Run `coapcc server --tcp` until SIGINT or SIGTERM (the log gets its summary either way).
pub async fn run_tcp_server(args: ServerArgs) -> anyhow::Result<()> {
    let mut server = TcpServer::bind(&args).await?;
    // One write for the whole line (readers parse the address from it).
    let ready = format!("coapcc server: listening on {} (CoAP over TCP)\n", server.local_addr()?);
    {
        use std::io::Write as _;
        let _ = std::io::stderr().lock().write_all(ready.as_bytes());
    }
    let st = server
        .run_until(async {
            crate::args::shutdown_signal().await;
        })
        .await?;
    eprintln!(
        "coapcc server: stopped after {} connections, {} requests ({} protocol errors, {} write timeouts)",
        st.connections, st.requests, st.protocol_errors, st.write_timeouts
    );
    Ok(())
}
