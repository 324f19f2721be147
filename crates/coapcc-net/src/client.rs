//! The logging client: N requests to one URI, one JSON line per exchange.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::{Parser, ValueEnum};
use coapcc_cc::AlgorithmConfig;
use coapcc_proto::endpoint::{EndpointConfig, Event, FailReason, Request};
use coapcc_proto::{option, Block, Code, Options};
use serde_json::json;
use tokio::net::UdpSocket;

use crate::driver::{random_seed, to_instant, UdpDriver};
use crate::log::{exchange_json, secs, to_line};
use crate::uri::CoapUri;

/// Request method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Method {
    /// GET.
    Get,
    /// PUT.
    Put,
    /// POST.
    Post,
    /// DELETE.
    Delete,
}

impl Method {
    /// The method code.
    pub fn code(self) -> Code {
        match self {
            Method::Get => Code::GET,
            Method::Put => Code::PUT,
            Method::Post => Code::POST,
            Method::Delete => Code::DELETE,
        }
    }
}

/// `coapcc client`: send requests to a CoAP server and log every exchange as JSON lines.
///
/// The response body of the last request goes to stdout (unless --quiet, or to --output
/// FILE); JSON lines go to --log FILE, or to stderr without --log.
#[derive(Parser, Debug, Clone, PartialEq)]
#[command(name = "client")]
pub struct ClientArgs {
    /// Target, e.g. `coap://127.0.0.1:5683/hello` or `coap://[::1]/large?size=102400`;
    /// `coap+tcp://...` for CoAP over TCP (RFC 8323).
    pub uri: String,
    /// Request method.
    #[arg(long, short = 'm', value_enum, default_value_t = Method::Get)]
    pub method: Method,
    /// Request payload (UTF-8 text).
    #[arg(long, short = 'p')]
    pub payload: Option<String>,
    /// Retransmission-timer / congestion-control algorithm, NAME[:key=value,...]
    /// (see `coapcc algorithms`).
    #[arg(long, default_value = "default", value_name = "SPEC")]
    pub cc: String,
    /// Number of requests. All are submitted at once and queued per NSTART, so with
    /// NSTART = 1 they run back to back (one algorithm instance keeps its state across them).
    #[arg(long, short = 'n', default_value_t = 1)]
    pub count: u32,
    /// Send confirmable requests (the default).
    #[arg(long, conflicts_with = "non")]
    pub con: bool,
    /// Send non-confirmable requests.
    #[arg(long)]
    pub non: bool,
    /// NSTART: requests outstanding at once.
    #[arg(long, default_value_t = 1)]
    pub nstart: u32,
    /// Ask for Block2 blocks of this many bytes from the first request on (16..1024);
    /// without it the server chooses.
    #[arg(long, value_name = "BYTES")]
    pub block_size: Option<usize>,
    /// Seconds to wait for a separate response or a NON response (default: MAX_TRANSMIT_WAIT).
    #[arg(long, value_name = "SECS")]
    pub response_timeout: Option<f64>,
    /// Give up on the whole run after this many seconds.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// JSON-lines log file (default: stderr).
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Write the last response body to FILE (raw bytes) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Seed for Message IDs, tokens and dithering (random if absent; logged).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Do not print the response body.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

impl ClientArgs {
    /// Arguments for a GET of `uri` with every default.
    pub fn get(uri: &str) -> ClientArgs {
        ClientArgs::parse_from(["client", uri])
    }
}

/// What a client run did.
#[derive(Clone, Debug, PartialEq)]
pub struct ClientSummary {
    /// The seed used.
    pub seed: u64,
    /// The server's address.
    pub peer: SocketAddr,
    /// Requests sent.
    pub requests: u32,
    /// Requests that got a response (any code).
    pub responses: u32,
    /// Responses with a 2.xx code.
    pub success: u32,
    /// Requests that failed (no response).
    pub failed: u32,
    /// The first failure's reason.
    pub first_failure: Option<FailReason>,
    /// Message-layer exchanges (one per block of a block-wise transfer).
    pub exchanges: u32,
    /// Retransmissions over all exchanges.
    pub retransmissions: u32,
    /// Code of the last response.
    pub last_code: Option<Code>,
    /// Body of the last response (reassembled).
    pub last_payload: Option<Vec<u8>>,
    /// Wall-clock duration of the run.
    pub elapsed: Duration,
}

fn request_from(args: &ClientArgs, uri: &CoapUri) -> anyhow::Result<Request> {
    let mut options = Options::new();
    for seg in &uri.path {
        options.add(option::URI_PATH, seg.as_bytes().to_vec());
    }
    for q in &uri.query {
        options.add(option::URI_QUERY, q.as_bytes().to_vec());
    }
    let mut r = Request::new(args.method.code(), "");
    r.options = options;
    if let Some(p) = &args.payload {
        r.payload = p.as_bytes().to_vec();
        r.options.set_content_format(0);
    }
    r.confirmable = !args.non;
    if let Some(bs) = args.block_size {
        let szx =
            Block::szx_for_size(bs).with_context(|| format!("--block-size {bs} is not one of 16, 32, ..., 1024"))?;
        r.block2_szx = Some(szx);
    }
    Ok(r)
}

/// Run the client described by `args`, writing JSON lines to `log`.
pub async fn run_client(args: ClientArgs, log: &mut dyn Write) -> anyhow::Result<ClientSummary> {
    if crate::tcp_client::is_tcp_uri(&args.uri) {
        return crate::tcp_client::run_tcp_client(args, log).await;
    }
    let uri = CoapUri::parse(&args.uri)?;
    let cc = AlgorithmConfig::parse(&args.cc).map_err(|e| anyhow::anyhow!("--cc: {e}"))?;
    let request = request_from(&args, &uri)?;
    if args.count == 0 {
        bail!("--count must be at least 1");
    }
    let peer = tokio::net::lookup_host((uri.host.as_str(), uri.port))
        .await
        .with_context(|| format!("cannot resolve host '{}'", uri.host))?
        .next()
        .with_context(|| format!("host '{}' has no address", uri.host))?;
    let local: SocketAddr = if peer.is_ipv4() { "0.0.0.0:0".parse()? } else { "[::]:0".parse()? };
    let socket = UdpSocket::bind(local).await.with_context(|| format!("cannot bind a UDP socket on {local}"))?;
    let seed = args.seed.unwrap_or_else(random_seed);
    let mut config = EndpointConfig::with_cc(cc);
    config.nstart = args.nstart.max(1);
    config.record_exchanges = true;
    if let Some(s) = args.response_timeout {
        if !(s.is_finite() && s > 0.0) {
            bail!("--response-timeout must be a positive number of seconds");
        }
        config.response_timeout = Some(Duration::from_secs_f64(s));
    }
    let deadline = match args.timeout {
        Some(s) if s.is_finite() && s > 0.0 => Some(Duration::from_secs_f64(s)),
        Some(_) => bail!("--timeout must be a positive number of seconds"),
        None => None,
    };
    let mut driver = UdpDriver::new(socket, config, seed);
    let start = std::time::Instant::now();
    writeln!(
        log,
        "{}",
        to_line(&json!({"type": "start", "role": "client", "uri": args.uri, "peer": peer.to_string(), "seed": seed,
               "cc": cc.to_string(), "count": args.count, "con": !args.non, "nstart": args.nstart.max(1)}))
    )?;
    let now = driver.now();
    for _ in 0..args.count {
        driver.endpoint().request(now, peer, request.clone());
    }
    let mut s = ClientSummary {
        seed,
        peer,
        requests: args.count,
        responses: 0,
        success: 0,
        failed: 0,
        first_failure: None,
        exchanges: 0,
        retransmissions: 0,
        last_code: None,
        last_payload: None,
        elapsed: Duration::ZERO,
    };
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        driver.flush().await;
        if s.exchanges == 0 && s.responses == 0 {
            if let Some(e) = driver.take_send_error() {
                bail!("cannot send to {peer}: {e}");
            }
        }
        while let Some(r) = driver.endpoint().poll_record() {
            s.exchanges += 1;
            s.retransmissions += r.retransmissions();
            writeln!(log, "{}", to_line(&exchange_json(&r)))?;
        }
        let now = driver.now();
        while let Some(ev) = driver.endpoint().poll_event() {
            let line = match ev {
                Event::Response { id, response, .. } => {
                    s.responses += 1;
                    if response.code.is_success() {
                        s.success += 1;
                    }
                    s.last_code = Some(response.code);
                    let line = json!({"type": "request", "id": id.0, "outcome": "ok", "code": response.code.to_string(),
                                      "bytes": response.payload.len(), "t_s": secs(now)});
                    s.last_payload = Some(response.payload);
                    line
                }
                Event::Failed { id, reason, .. } => {
                    s.failed += 1;
                    s.first_failure.get_or_insert(reason);
                    json!({"type": "request", "id": id.0, "outcome": reason.as_str(), "code": null, "bytes": 0, "t_s": secs(now)})
                }
                Event::Request { .. } | Event::ResponseFailed { .. } => continue,
            };
            writeln!(log, "{}", to_line(&line))?;
        }
        if s.responses + s.failed >= s.requests {
            break;
        }
        let until = deadline.map(to_instant);
        if until.is_some_and(|u| driver.now() >= u) {
            bail!(
                "gave up after --timeout {} s with {} of {} requests unfinished",
                args.timeout.unwrap_or(0.0),
                s.requests - s.responses - s.failed,
                s.requests
            );
        }
        tokio::select! {
            r = driver.wait(until) => { r.context("receiving")?; }
            _ = &mut ctrl_c => bail!("interrupted"),
        }
    }
    s.elapsed = start.elapsed();
    writeln!(
        log,
        "{}",
        to_line(
            &json!({"type": "summary", "role": "client", "requests": s.requests, "responses": s.responses, "success": s.success,
               "failed": s.failed, "exchanges": s.exchanges, "retransmissions": s.retransmissions,
               "elapsed_s": s.elapsed.as_secs_f64()})
        )
    )?;
    log.flush()?;
    Ok(s)
}

/// `coapcc client` entry point: builds a tokio runtime, runs [`run_client`] with the log on
/// `--log FILE` or stderr, prints the last response body on stdout (or writes it to
/// `--output FILE`), and prints one-line
/// errors. Exit code 0 when every request got a response, 1 otherwise.
pub fn client_main(args: ClientArgs) -> i32 {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("coapcc client: error: cannot start the runtime: {e}");
            return 1;
        }
    };
    let quiet = args.quiet;
    let output = args.output.clone();
    let mut log: Box<dyn Write> = match &args.log {
        Some(p) => match File::create(p) {
            Ok(f) => Box::new(BufWriter::new(f)),
            Err(e) => {
                eprintln!("coapcc client: error: cannot create log file {}: {e}", p.display());
                return 1;
            }
        },
        None => Box::new(std::io::stderr()),
    };
    match rt.block_on(run_client(args, &mut *log)) {
        Ok(s) => {
            if let (Some(path), Some(p)) = (&output, &s.last_payload) {
                if let Err(e) = std::fs::write(path, p) {
                    eprintln!("coapcc client: error: cannot write {}: {e}", path.display());
                    return 1;
                }
            } else if let (false, Some(p)) = (quiet, &s.last_payload) {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(p);
                if !p.is_empty() && !p.ends_with(b"\n") {
                    let _ = out.write_all(b"\n");
                }
                let _ = out.flush();
            }
            if let Some(c) = s.last_code.filter(|c| !c.is_success()) {
                eprintln!("coapcc client: last response {c}{}", c.name().map(|n| format!(" {n}")).unwrap_or_default());
            }
            if s.failed > 0 {
                eprintln!(
                    "coapcc client: error: {} of {} requests failed (first: {})",
                    s.failed,
                    s.requests,
                    s.first_failure.map(|r| r.as_str()).unwrap_or("?")
                );
                1
            } else {
                0
            }
        }
        Err(e) => {
            eprintln!("coapcc client: error: {e:#}");
            1
        }
    }
}
