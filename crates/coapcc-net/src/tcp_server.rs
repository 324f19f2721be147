//! `coapcc server --tcp`: the test server's resources over CoAP over TCP (RFC 8323) on the
//! kernel's TCP. The server sends its CSM as soon as a connection is accepted (as in the
//! Helsinki study), answers each request with the whole representation as one message when it
//! fits the client's Max-Message-Size (block-wise otherwise, or when the request carries
//! Block2), answers Ping with Pong, and ends a connection on Release, on Abort, or with an
//! Abort of its own on a protocol error (missing or bad CSM, oversized or malformed frame).

use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use coapcc_proto::endpoint::Response;
use coapcc_proto::tcp::TcpMessage;
use coapcc_proto::{Block, Code, MessageType};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};

use crate::log::to_line;
use crate::resources::{Action, Resources};
use crate::server::ServerArgs;
use crate::tcp_session::{FrameReader, FrameWriter, Inbound, PeerCaps, SessionConfig, SessionError};

/// Most connections served at once; further ones are closed at once.
pub const MAX_CONNECTIONS: usize = 256;

/// Most delayed (`/slow`) answers pending per connection; beyond, requests get 5.03.
const MAX_DELAYED_PER_CONN: usize = 64;

/// Counters of a TCP server run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpServerStats {
    /// Connections accepted.
    pub connections: u64,
    /// Connections refused (over [`MAX_CONNECTIONS`]).
    pub refused: u64,
    /// Requests answered.
    pub requests: u64,
    /// Connections ended by a protocol error of the peer (we sent Abort).
    pub protocol_errors: u64,
    /// Connections ended because the peer stopped reading.
    pub write_timeouts: u64,
    /// Connections ended by the peer's Abort.
    pub peer_aborts: u64,
    /// Connections ended by the peer's Release or a clean close.
    pub clean_closes: u64,
}

type Log = Arc<Mutex<Option<Box<dyn Write + Send>>>>;

/// A bound CoAP-over-TCP server.
pub struct TcpServer {
    listener: TcpListener,
    session: SessionConfig,
    resources: Arc<Mutex<Resources>>,
    stats: Arc<Mutex<TcpServerStats>>,
    log: Log,
}

fn log_line(log: &Log, v: &serde_json::Value) {
    if let Ok(mut g) = log.lock() {
        if let Some(w) = g.as_mut() {
            let _ = writeln!(w, "{}", to_line(v));
        }
    }
}

/// Build the message answering `req` with `resp`, fitted to what the peer accepts.
pub fn fit_response(req: &TcpMessage, resp: Response, peer: &PeerCaps) -> TcpMessage {
    let mut m = TcpMessage { code: resp.code, token: req.token, options: resp.options, payload: resp.payload };
    let requested = match req.block2() {
        Ok(b) => b,
        Err(_) => {
            return TcpMessage::new(Code::BAD_OPTION).with_token(req.token).with_payload(b"bad Block2 option".to_vec())
        }
    };
    let total = m.payload.len();
    let block = match requested {
        Some(b) if m.code.is_success() => Some((b.num, b.szx)),
        _ if m.encoded_len() > peer.max_message_size as usize => {
            if !(peer.block_wise && m.code.is_success()) {
                return TcpMessage::new(Code::INTERNAL_SERVER_ERROR)
                    .with_token(req.token)
                    .with_payload(b"response exceeds the client's Max-Message-Size".to_vec());
            }
            // The largest block (16-1024 B) whose message fits the peer's limit.
            let overhead = m.encoded_len() - total + 16;
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
    if let Some((num, szx)) = block {
        let size = 16usize << szx;
        let off = num as usize * size;
        if off >= total && !(off == 0 && total == 0) {
            return TcpMessage::new(Code::BAD_OPTION)
                .with_token(req.token)
                .with_payload(b"Block2 beyond the end of the representation".to_vec());
        }
        let end = (off + size).min(total);
        let more = end < total;
        m.payload = m.payload[off..end].to_vec();
        let b = Block::new(num, more, szx).expect("num and szx are in range");
        m.set_block2(b).expect("valid block");
        if num == 0 {
            m.set_size2(total as u32);
        }
    }
    m
}

impl TcpServer {
    /// Bind the listener on `args.bind`.
    pub async fn bind(args: &ServerArgs) -> anyhow::Result<TcpServer> {
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
        let log: Option<Box<dyn Write + Send>> = match &args.log {
            Some(p) => Some(Box::new(std::io::BufWriter::new(
                std::fs::File::create(p).with_context(|| format!("cannot create log file {}", p.display()))?,
            ))),
            None => None,
        };
        let s = TcpServer {
            listener,
            session: SessionConfig::default(),
            resources: Arc::new(Mutex::new(Resources::new())),
            stats: Arc::new(Mutex::new(TcpServerStats::default())),
            log: Arc::new(Mutex::new(log)),
        };
        let addr = s.local_addr()?;
        log_line(&s.log, &json!({"type": "start", "role": "server", "transport": "tcp", "bind": addr.to_string()}));
        Ok(s)
    }

    /// Change the per-connection settings (tests use a short write timeout).
    pub fn set_session_config(&mut self, c: SessionConfig) {
        self.session = c;
    }

    /// The listening address.
    pub fn local_addr(&self) -> anyhow::Result<SocketAddr> {
        Ok(self.listener.local_addr()?)
    }

    /// A live view of the counters, readable while [`TcpServer::run_until`] runs.
    pub fn shared_stats(&self) -> Arc<Mutex<TcpServerStats>> {
        self.stats.clone()
    }

    /// Counters so far.
    pub fn stats(&self) -> TcpServerStats {
        *self.stats.lock().expect("stats lock")
    }

    /// Serve until `shutdown` completes.
    pub async fn run_until<F: Future>(&mut self, shutdown: F) -> anyhow::Result<TcpServerStats> {
        tokio::pin!(shutdown);
        let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
        let mut tasks = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                r = self.listener.accept() => {
                    let (stream, peer) = match r {
                        Ok(x) => x,
                        Err(e) => { eprintln!("coapcc server: accept failed: {e}"); continue; }
                    };
                    let Ok(permit) = slots.clone().try_acquire_owned() else {
                        self.stats.lock().expect("stats lock").refused += 1;
                        drop(stream);
                        continue;
                    };
                    self.stats.lock().expect("stats lock").connections += 1;
                    let (session, resources, stats, log) =
                        (self.session.clone(), self.resources.clone(), self.stats.clone(), self.log.clone());
                    tasks.spawn(async move {
                        let _permit = permit;
                        serve_connection(stream, peer, session, resources, stats, log).await;
                    });
                }
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                _ = &mut shutdown => break,
            }
        }
        tasks.shutdown().await;
        let st = self.stats();
        log_line(
            &self.log,
            &json!({"type": "summary", "role": "server", "transport": "tcp", "connections": st.connections,
                    "requests": st.requests, "protocol_errors": st.protocol_errors, "write_timeouts": st.write_timeouts,
                    "peer_aborts": st.peer_aborts, "clean_closes": st.clean_closes, "refused": st.refused}),
        );
        if let Ok(mut g) = self.log.lock() {
            if let Some(w) = g.as_mut() {
                w.flush().context("writing the log")?;
            }
        }
        Ok(st)
    }
}

async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    cfg: SessionConfig,
    resources: Arc<Mutex<Resources>>,
    stats: Arc<Mutex<TcpServerStats>>,
    log: Log,
) {
    let _ = stream.set_nodelay(true);
    let (r, w) = stream.into_split();
    let mut reader = FrameReader::new(r, cfg.max_message_size);
    let mut writer = FrameWriter::new(w, cfg.write_timeout);
    let (tx, mut rx) = mpsc::channel::<TcpMessage>(MAX_DELAYED_PER_CONN);
    let mut delayed = 0usize;
    let mut requests = 0u64;
    let result: Result<&'static str, SessionError> = async {
        // The server speaks first: its CSM goes out without waiting for the client's.
        writer.send(&cfg.csm()).await?;
        loop {
            let inbound = tokio::select! {
                i = reader.next() => i?,
                Some(m) = rx.recv() => {
                    delayed -= 1;
                    writer.send(&m).await?;
                    continue;
                }
            };
            match inbound {
                Inbound::Request(req) => {
                    requests += 1;
                    let action = {
                        let mut res = resources.lock().expect("resources lock");
                        res.handle(&req.clone().into_message(MessageType::Con, 0))
                    };
                    match action {
                        Action::Respond(resp) => writer.send(&fit_response(&req, resp, &reader.peer)).await?,
                        Action::Delay(d, resp) if delayed < MAX_DELAYED_PER_CONN => {
                            delayed += 1;
                            let m = fit_response(&req, resp, &reader.peer);
                            let tx = tx.clone();
                            tokio::spawn(async move {
                                tokio::time::sleep(d).await;
                                let _ = tx.send(m).await;
                            });
                        }
                        Action::Delay(..) => {
                            let busy = TcpMessage::new(Code::SERVICE_UNAVAILABLE)
                                .with_token(req.token)
                                .with_payload(b"too many delayed requests".to_vec());
                            writer.send(&busy).await?;
                        }
                    }
                }
                Inbound::Ping(p) => writer.send(&TcpMessage::pong(&p)).await?,
                Inbound::Pong(_) | Inbound::Response(_) => {}
                Inbound::Release(_) => return Ok("release"),
                Inbound::Closed => return Ok("closed"),
            }
        }
    }
    .await;
    let outcome = match &result {
        Ok(how) => {
            stats.lock().expect("stats lock").clean_closes += 1;
            writer.release().await;
            (*how).to_string()
        }
        Err(e) => {
            {
                let mut s = stats.lock().expect("stats lock");
                match e {
                    SessionError::WriteTimeout(_) => s.write_timeouts += 1,
                    SessionError::Aborted { .. } => s.peer_aborts += 1,
                    e if e.abort_message().is_some() => s.protocol_errors += 1,
                    _ => {}
                }
            }
            writer.abort_for(e).await;
            e.to_string()
        }
    };
    stats.lock().expect("stats lock").requests += requests;
    log_line(
        &log,
        &json!({"type": "connection", "transport": "tcp", "peer": peer.to_string(), "requests": requests,
                "frames_out": writer.frames, "bytes_out": writer.bytes,
                "peer_max_message_size": reader.peer.max_message_size, "peer_block_wise": reader.peer.block_wise,
                "outcome": outcome}),
    );
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
