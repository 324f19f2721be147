//! `coapcc client coap+tcp://...`: the logging client over CoAP over TCP (RFC 8323) on the
//! kernel's TCP. It connects, sends its CSM at once followed by the requests (one at a time,
//! each with a fresh token), follows Block2 when the server answers block-wise (within the
//! same bounds as the UDP client: `--max-blocks`, the 16 MiB body limit, each block's size
//! checked against its SZX, `coapcc_proto::endpoint::accept_block2`), observes with
//! `--observe` (RFC 8323 §7: notifications are responses with the registration's token),
//! answers Ping with Pong, and ends with Release. One JSON line per exchange, as the UDP
//! client writes; requests are numbered from 1, as over UDP.
//!
//! Options that cannot apply over TCP are refused: `--non` (RFC 8323 has no message types)
//! and `--nstart` other than 1 (requests go one at a time on the connection).

use std::io::Write;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{bail, Context};
use coapcc_cc::{Entropy, SplitMix64};
use coapcc_proto::endpoint::{accept_block2, EndpointConfig, FailReason};
use coapcc_proto::tcp::TcpMessage;
use coapcc_proto::{option, Block, Token};
use serde_json::json;
use tokio::net::TcpStream;

use crate::client::{ClientArgs, ClientSummary};
use crate::driver::random_seed;
use crate::log::to_line;
use crate::tcp_session::{FrameReader, FrameWriter, Inbound, SessionConfig, SessionError};
use crate::uri::CoapUri;

/// Default limit on connecting and on each exchange when `--response-timeout` is not given:
/// [`PEER_SILENCE_TIMEOUT`](crate::limits::PEER_SILENCE_TIMEOUT), the server's frame and CSM
/// timeouts. A shorter limit gives up on sound connections over slow lossy links, where
/// Linux's doubled RTO stalls a connection for tens of seconds (docs/tcp.md).
pub const DEFAULT_TCP_TIMEOUT: Duration = crate::limits::PEER_SILENCE_TIMEOUT;

/// Is `uri` a `coap+tcp://` URI?
pub fn is_tcp_uri(uri: &str) -> bool {
    uri.split_once("://").is_some_and(|(s, _)| s.eq_ignore_ascii_case("coap+tcp"))
}

/// Parse a `coap+tcp://host[:port]/path?query` URI (default port 5683, RFC 8323 §8.1).
pub fn parse_tcp_uri(uri: &str) -> anyhow::Result<CoapUri> {
    let Some((_, rest)) = uri.split_once("://").filter(|_| is_tcp_uri(uri)) else {
        bail!("'{uri}' is not a coap+tcp:// URI");
    };
    CoapUri::parse(&format!("coap://{rest}"))
}

fn token(rng: &mut SplitMix64) -> Token {
    let b = rng.next_u64().to_be_bytes();
    Token::new(&b[..4]).expect("4-byte token")
}

/// The client's settings over TCP, checked.
struct Plan {
    per_exchange: Duration,
    szx: Option<u8>,
    max_blocks: u32,
    max_body: usize,
    observe: Option<u32>,
    observe_for: Option<Duration>,
}

fn plan(args: &ClientArgs) -> anyhow::Result<(Plan, Option<Duration>)> {
    if args.count == 0 {
        bail!("--count must be at least 1");
    }
    if args.non {
        bail!("--non does not apply to CoAP over TCP (RFC 8323 has no message types: every request is reliable)");
    }
    if args.nstart == 0 {
        bail!("--nstart must be at least 1");
    }
    if args.nstart != 1 {
        bail!("--nstart does not apply to CoAP over TCP (requests go one at a time on the connection)");
    }
    if args.max_blocks == 0 {
        bail!("--max-blocks must be at least 1");
    }
    if args.observe.is_some() && args.count != 1 {
        bail!("--observe needs --count 1");
    }
    let per_exchange = match args.response_timeout {
        Some(s) => crate::args::secs("--response-timeout", s, false)?,
        None => DEFAULT_TCP_TIMEOUT,
    };
    let overall = args.timeout.map(|s| crate::args::secs("--timeout", s, false)).transpose()?;
    let observe_for = args.observe_for.map(|s| crate::args::secs("--observe-for", s, false)).transpose()?;
    let szx = match args.block_size {
        Some(bs) => Some(
            Block::szx_for_size(bs).with_context(|| format!("--block-size {bs} is not one of 16, 32, ..., 1024"))?,
        ),
        None => None,
    };
    let max_body = EndpointConfig::default().max_body_size;
    Ok((Plan { per_exchange, szx, max_blocks: args.max_blocks, max_body, observe: args.observe, observe_for }, overall))
}

/// Run the client of `args` (whose URI is `coap+tcp://`), writing JSON lines to `log`.
pub async fn run_tcp_client(args: ClientArgs, log: &mut dyn Write) -> anyhow::Result<ClientSummary> {
    let uri = parse_tcp_uri(&args.uri)?;
    let (plan, overall) = plan(&args)?;
    let peer: SocketAddr = tokio::net::lookup_host((uri.host.as_str(), uri.port))
        .await
        .with_context(|| format!("cannot resolve host '{}'", uri.host))?
        .next()
        .with_context(|| format!("host '{}' has no address", uri.host))?;
    let seed = args.seed.unwrap_or_else(random_seed);
    let mut rng = SplitMix64::new(seed);
    let start = std::time::Instant::now();
    writeln!(
        log,
        "{}",
        to_line(
            &json!({"type": "start", "role": "client", "transport": "tcp", "uri": args.uri, "peer": peer.to_string(),
                        "seed": seed, "count": args.count})
        )
    )?;
    let run = run_exchanges(&args, &uri, peer, &plan, &mut rng, log);
    let mut s = match overall {
        Some(t) => match tokio::time::timeout(t, run).await {
            Ok(r) => r?,
            Err(_) => bail!("gave up after --timeout {} s", t.as_secs_f64()),
        },
        None => run.await?,
    };
    s.seed = seed;
    s.elapsed = start.elapsed();
    writeln!(
        log,
        "{}",
        to_line(&json!({"type": "summary", "role": "client", "transport": "tcp", "requests": s.requests,
                        "responses": s.responses, "success": s.success, "failed": s.failed, "exchanges": s.exchanges,
                        "retransmissions": 0, "notifications": s.notifications, "elapsed_s": s.elapsed.as_secs_f64()}))
    )?;
    log.flush()?;
    Ok(s)
}

fn io_error(kind: std::io::ErrorKind, what: &str) -> SessionError {
    SessionError::Io(std::io::Error::new(kind, what.to_string()))
}

/// One request to its end: the final response (with the reassembled body), or why it failed.
async fn request<R, W>(
    (reader, writer): (&mut FrameReader<R>, &mut FrameWriter<W>),
    template: &coapcc_proto::endpoint::Request,
    plan: &Plan,
    id: u32,
    rng: &mut SplitMix64,
    s: &mut ClientSummary,
    log: &mut dyn Write,
) -> Result<Result<TcpMessage, FailReason>, SessionError>
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let mut body = Vec::new();
    let mut blocks = 0u32;
    let mut num = 0u32;
    // Block size: ours (early negotiation) if given, then whatever the server chose.
    let mut follow_szx = plan.szx;
    loop {
        let mut m = TcpMessage::new(template.method).with_token(token(rng));
        m.options = template.options.clone();
        m.options.remove(option::BLOCK2);
        if num == 0 {
            // Later blocks of the answer are asked for without the payload (RFC 7959 §3.3).
            m.payload = template.payload.clone();
        }
        if let Some(z) = follow_szx {
            m.set_block2(Block::new(num, false, z).expect("valid block")).expect("valid block");
        }
        let t_ex = std::time::Instant::now();
        writer.send(&m).await?;
        let resp = match tokio::time::timeout(plan.per_exchange, wait_response(reader, writer, m.token)).await {
            Ok(r) => r?,
            Err(_) => return Err(io_error(std::io::ErrorKind::TimedOut, "no response within the response timeout")),
        };
        s.exchanges += 1;
        let block = resp.block2();
        let line = json!({"type": "exchange", "transport": "tcp", "id": id, "code": resp.code.to_string(),
                          "bytes": resp.payload.len(), "rtt_s": t_ex.elapsed().as_secs_f64(),
                          "block2": block.ok().flatten().map(|b| json!({"num": b.num, "more": b.more, "szx": b.szx}))});
        writeln!(log, "{}", to_line(&line)).map_err(SessionError::Io)?;
        let block = match block {
            Ok(b) if resp.code.is_success() => b,
            Ok(_) => None,
            Err(_) => return Ok(Err(FailReason::BadBlock)),
        };
        match block {
            Some(b) => {
                let n = resp.payload.len();
                if let Err(reason) = accept_block2(body.len(), blocks, b, n, plan.max_body, plan.max_blocks) {
                    return Ok(Err(reason));
                }
                blocks += 1;
                body.extend_from_slice(&resp.payload);
                if !b.more {
                    let mut resp = resp;
                    resp.payload = body;
                    resp.options.remove(option::BLOCK2);
                    return Ok(Ok(resp));
                }
                num = b.num + 1;
                follow_szx = Some(b.szx);
            }
            // A success without Block2 in the middle of a transfer does not continue it.
            None if blocks > 0 && resp.code.is_success() => return Ok(Err(FailReason::BadBlock)),
            None if resp.payload.len() > plan.max_body => return Ok(Err(FailReason::BodyTooLarge)),
            None => return Ok(Ok(resp)),
        }
    }
}

async fn run_exchanges(
    args: &ClientArgs,
    uri: &CoapUri,
    peer: SocketAddr,
    plan: &Plan,
    rng: &mut SplitMix64,
    log: &mut dyn Write,
) -> anyhow::Result<ClientSummary> {
    // Options, payload and content formats exactly as the UDP client builds them.
    let mut template = crate::client::request_from(args, uri)?;
    if plan.observe.is_some() {
        template.options.set_uint(option::OBSERVE, 0);
    }
    let t0 = std::time::Instant::now();
    let stream = tokio::time::timeout(plan.per_exchange, TcpStream::connect(peer))
        .await
        .with_context(|| format!("connecting to {peer} timed out"))?
        .with_context(|| format!("cannot connect to {peer}"))?;
    let setup = t0.elapsed();
    let _ = stream.set_nodelay(true);
    let cfg = SessionConfig::default();
    let (r, w) = stream.into_split();
    let mut reader = FrameReader::new(r, cfg.max_message_size);
    let mut writer = FrameWriter::new(w, cfg.write_timeout);
    let mut s = ClientSummary::new(0, peer, args.count);
    let result: Result<(), SessionError> = async {
        // The CSM first, then at once the requests (the study's client does not wait for the
        // server's CSM).
        writer.send(&cfg.csm()).await?;
        writeln!(log, "{}", to_line(&json!({"type": "connected", "transport": "tcp", "setup_s": setup.as_secs_f64()})))
            .map_err(SessionError::Io)?;
        let mut observing = None;
        for id in 1..=args.count {
            let t_req = std::time::Instant::now();
            let line = match request((&mut reader, &mut writer), &template, plan, id, rng, &mut s, log).await? {
                Ok(resp) => {
                    s.count_response(resp.code);
                    if plan.observe.is_some() && resp.code.is_success() && resp.options.contains(option::OBSERVE) {
                        observing = Some(resp.token);
                    }
                    let line = json!({"type": "request", "id": id, "outcome": "ok", "code": resp.code.to_string(),
                                      "bytes": resp.payload.len(), "t_s": t_req.elapsed().as_secs_f64()});
                    s.last_payload = Some(resp.payload);
                    line
                }
                Err(reason) => {
                    s.failed += 1;
                    s.first_failure.get_or_insert(reason);
                    json!({"type": "request", "id": id, "outcome": reason.as_str(), "code": null, "bytes": 0,
                           "t_s": t_req.elapsed().as_secs_f64()})
                }
            };
            writeln!(log, "{}", to_line(&line)).map_err(SessionError::Io)?;
        }
        if let (Some(tok), Some(n)) = (observing, plan.observe) {
            observe(&mut reader, &mut writer, tok, n, plan.observe_for, &mut s, log).await?;
        }
        Ok(())
    }
    .await;
    match result {
        Ok(()) => {
            // Release ends the connection, and with it the server's observation.
            writer.release().await;
            Ok(s)
        }
        Err(e) => {
            writer.abort_for(&e).await;
            Err(anyhow::anyhow!("{e}"))
        }
    }
}

/// Log the notifications of the observation with `tok` until `n` came, or `until` passed, or
/// one is not a success (RFC 7641 §3.2: the observation ended).
async fn observe<R, W>(
    reader: &mut FrameReader<R>,
    writer: &mut FrameWriter<W>,
    tok: Token,
    n: u32,
    until: Option<Duration>,
    s: &mut ClientSummary,
    log: &mut dyn Write,
) -> Result<(), SessionError>
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let t0 = std::time::Instant::now();
    let deadline = until.map(|d| tokio::time::Instant::now() + d);
    while s.notifications < n {
        let next = wait_response(reader, writer, tok);
        let m = match deadline {
            Some(d) => match tokio::time::timeout_at(d, next).await {
                Ok(m) => m?,
                Err(_) => break,
            },
            None => next.await?,
        };
        s.notifications += 1;
        s.last_code = Some(m.code);
        let line = json!({"type": "notification", "id": 1, "observe": m.options.get_uint(option::OBSERVE),
                          "code": m.code.to_string(), "bytes": m.payload.len(), "t_s": t0.elapsed().as_secs_f64()});
        writeln!(log, "{}", to_line(&line)).map_err(SessionError::Io)?;
        let done = !m.code.is_success();
        s.last_payload = Some(m.payload);
        if done {
            break;
        }
    }
    Ok(())
}

/// Wait for the response with `token`, answering Pings on the way.
async fn wait_response<R, W>(
    reader: &mut FrameReader<R>,
    writer: &mut FrameWriter<W>,
    token: Token,
) -> Result<TcpMessage, SessionError>
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    loop {
        match reader.next().await? {
            Inbound::Response(m) if m.token == token => return Ok(m),
            Inbound::Response(_) | Inbound::Pong(_) | Inbound::Request(_) => {}
            Inbound::Ping(p) => writer.send(&TcpMessage::pong(&p)).await?,
            Inbound::Release(_) | Inbound::Closed => {
                return Err(io_error(
                    std::io::ErrorKind::ConnectionReset,
                    "server closed the connection before responding",
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(extra: &[&str]) -> ClientArgs {
        let mut v = vec!["client", "coap+tcp://127.0.0.1:9/hello"];
        v.extend_from_slice(extra);
        ClientArgs::parse_from(v)
    }

    #[test]
    fn options_that_cannot_apply_are_refused() {
        for (extra, msg) in [
            (&["--non"][..], "--non does not apply"),
            (&["--nstart", "2"], "--nstart does not apply"),
            (&["--nstart", "0"], "--nstart must be at least 1"),
            (&["--max-blocks", "0"], "--max-blocks must be at least 1"),
            (&["--timeout", "1e300"], "--timeout must be"),
            (&["--response-timeout", "1e300"], "--response-timeout must be"),
            (&["--observe", "2", "-n", "2"], "--observe needs --count 1"),
        ] {
            let e = plan(&args(extra)).err().unwrap_or_else(|| panic!("{extra:?} accepted")).to_string();
            assert!(e.contains(msg), "{extra:?}: {e}");
        }
        assert!(plan(&args(&["--nstart", "1", "--timeout", "5"])).is_ok());
    }
}
