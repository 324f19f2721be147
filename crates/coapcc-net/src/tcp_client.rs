//! `coapcc client coap+tcp://...`: the logging client over CoAP over TCP (RFC 8323) on the
//! kernel's TCP. It connects, sends its CSM at once followed by the requests (one at a time,
//! each with a fresh token), follows Block2 when the server answers block-wise, answers Ping
//! with Pong, and ends with Release. One JSON line per exchange, as the UDP client writes.

use std::io::Write;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{bail, Context};
use coapcc_cc::{Entropy, SplitMix64};
use coapcc_proto::tcp::TcpMessage;
use coapcc_proto::{option, Block, Token};
use serde_json::json;
use tokio::net::TcpStream;

use crate::client::{ClientArgs, ClientSummary};
use crate::driver::random_seed;
use crate::log::to_line;
use crate::tcp_session::{FrameReader, FrameWriter, Inbound, SessionConfig, SessionError};
use crate::uri::CoapUri;

/// Default limit on connecting and on each exchange when `--response-timeout` is not given.
pub const DEFAULT_TCP_TIMEOUT: Duration = Duration::from_secs(60);

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

/// Run the client of `args` (whose URI is `coap+tcp://`), writing JSON lines to `log`.
pub async fn run_tcp_client(args: ClientArgs, log: &mut dyn Write) -> anyhow::Result<ClientSummary> {
    let uri = parse_tcp_uri(&args.uri)?;
    if args.count == 0 {
        bail!("--count must be at least 1");
    }
    let per_exchange = match args.response_timeout {
        Some(s) if s.is_finite() && s > 0.0 => Duration::from_secs_f64(s),
        Some(_) => bail!("--response-timeout must be a positive number of seconds"),
        None => DEFAULT_TCP_TIMEOUT,
    };
    let overall = match args.timeout {
        Some(s) if s.is_finite() && s > 0.0 => Some(Duration::from_secs_f64(s)),
        Some(_) => bail!("--timeout must be a positive number of seconds"),
        None => None,
    };
    let szx = match args.block_size {
        Some(bs) => Some(
            Block::szx_for_size(bs).with_context(|| format!("--block-size {bs} is not one of 16, 32, ..., 1024"))?,
        ),
        None => None,
    };
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
    let run = run_exchanges(&args, &uri, peer, szx, per_exchange, &mut rng, log);
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
                        "retransmissions": 0, "elapsed_s": s.elapsed.as_secs_f64()}))
    )?;
    log.flush()?;
    Ok(s)
}

async fn run_exchanges(
    args: &ClientArgs,
    uri: &CoapUri,
    peer: SocketAddr,
    szx: Option<u8>,
    per_exchange: Duration,
    rng: &mut SplitMix64,
    log: &mut dyn Write,
) -> anyhow::Result<ClientSummary> {
    let t0 = std::time::Instant::now();
    let stream = tokio::time::timeout(per_exchange, TcpStream::connect(peer))
        .await
        .with_context(|| format!("connecting to {peer} timed out"))?
        .with_context(|| format!("cannot connect to {peer}"))?;
    let setup = t0.elapsed();
    let _ = stream.set_nodelay(true);
    let cfg = SessionConfig::default();
    let (r, w) = stream.into_split();
    let mut reader = FrameReader::new(r, cfg.max_message_size);
    let mut writer = FrameWriter::new(w, cfg.write_timeout);
    let mut s = ClientSummary {
        seed: 0,
        peer,
        requests: args.count,
        responses: 0,
        success: 0,
        client_errors: 0,
        server_errors: 0,
        failed: 0,
        first_failure: None,
        exchanges: 0,
        retransmissions: 0,
        last_code: None,
        last_payload: None,
        elapsed: Duration::ZERO,
        requests_refused: 0,
        notifications: 0,
    };
    let result: Result<(), SessionError> = async {
        // The CSM first, then at once the requests (the study's client does not wait for the
        // server's CSM).
        writer.send(&cfg.csm()).await?;
        writeln!(log, "{}", to_line(&json!({"type": "connected", "transport": "tcp", "setup_s": setup.as_secs_f64()})))
            .map_err(SessionError::Io)?;
        for id in 0..args.count {
            let t_req = std::time::Instant::now();
            let mut body = Vec::new();
            let mut num = 0u32;
            // Block size: ours (early negotiation) if given, then whatever the server chose.
            let mut follow_szx = szx;
            let code = loop {
                let mut m = TcpMessage::new(args.method.code()).with_token(token(rng));
                for seg in &uri.path {
                    m.options.add(option::URI_PATH, seg.as_bytes().to_vec());
                }
                for q in &uri.query {
                    m.options.add(option::URI_QUERY, q.as_bytes().to_vec());
                }
                if let Some(p) = &args.payload {
                    m.payload = p.as_bytes().to_vec();
                    m.options.set_content_format(0);
                }
                if let Some(z) = follow_szx {
                    m.set_block2(Block::new(num, false, z).expect("valid block")).expect("valid block");
                }
                let t_ex = std::time::Instant::now();
                writer.send(&m).await?;
                let resp = match tokio::time::timeout(per_exchange, wait_response(&mut reader, &mut writer, &m)).await {
                    Ok(r) => r?,
                    Err(_) => return Err(SessionError::Io(std::io::Error::new(std::io::ErrorKind::TimedOut, "no response within the response timeout"))),
                };
                s.exchanges += 1;
                let block = resp.block2().ok().flatten();
                let line = json!({"type": "exchange", "transport": "tcp", "request": id, "code": resp.code.to_string(),
                                  "bytes": resp.payload.len(), "rtt_s": t_ex.elapsed().as_secs_f64(),
                                  "block2": block.map(|b| json!({"num": b.num, "more": b.more, "szx": b.szx}))});
                writeln!(log, "{}", to_line(&line)).map_err(SessionError::Io)?;
                body.extend_from_slice(&resp.payload);
                match block {
                    Some(b) if b.more && resp.code.is_success() => {
                        if b.num != num {
                            return Err(SessionError::Io(std::io::Error::new(std::io::ErrorKind::InvalidData, "server answered the wrong Block2 number")));
                        }
                        num += 1;
                        follow_szx = Some(b.szx);
                    }
                    _ => break resp.code,
                }
            };
            s.responses += 1;
            match code.class() {
                2 => s.success += 1,
                4 => s.client_errors += 1,
                5 => s.server_errors += 1,
                _ => {}
            }
            s.last_code = Some(code);
            let line = json!({"type": "request", "id": id, "outcome": "ok", "code": code.to_string(), "bytes": body.len(),
                              "t_s": t_req.elapsed().as_secs_f64()});
            writeln!(log, "{}", to_line(&line)).map_err(SessionError::Io)?;
            s.last_payload = Some(body);
        }
        Ok(())
    }
    .await;
    match result {
        Ok(()) => {
            writer.release().await;
            Ok(s)
        }
        Err(e) => {
            writer.abort_for(&e).await;
            Err(anyhow::anyhow!("{e}"))
        }
    }
}

/// Wait for the response to `req` (matching token), answering Pings on the way.
async fn wait_response<R, W>(
    reader: &mut FrameReader<R>,
    writer: &mut FrameWriter<W>,
    req: &TcpMessage,
) -> Result<TcpMessage, SessionError>
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    loop {
        match reader.next().await? {
            Inbound::Response(m) if m.token == req.token => return Ok(m),
            Inbound::Response(_) | Inbound::Pong(_) | Inbound::Request(_) => {}
            Inbound::Ping(p) => writer.send(&TcpMessage::pong(&p)).await?,
            Inbound::Release(_) | Inbound::Closed => {
                return Err(SessionError::Io(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "server closed the connection before responding",
                )))
            }
        }
    }
}
