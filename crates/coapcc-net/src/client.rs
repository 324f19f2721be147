//! The logging client: N requests to one URI, one JSON line per exchange.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::{Parser, ValueEnum};
use coapcc_cc::AlgorithmConfig;
use coapcc_proto::endpoint::{EndpointConfig, Event, FailReason, RecordKind, Request, RequestId};
use coapcc_proto::{option, Block, Code, Options};
use serde_json::json;
use tokio::net::UdpSocket;

use crate::args::{shutdown_signal, Shutdown};
use crate::driver::{random_seed, to_instant, UdpDriver, Wake};
use crate::log::{exchange_json, secs, to_line};
use crate::uri::CoapUri;

/// Request method (case-insensitive on the command line: `get`, `GET`, `iPATCH`, ...).
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
    /// FETCH (RFC 8132).
    Fetch,
    /// PATCH (RFC 8132).
    Patch,
    /// iPATCH (RFC 8132).
    #[value(name = "ipatch")]
    IPatch,
}

impl Method {
    /// The method code.
    pub fn code(self) -> Code {
        match self {
            Method::Get => Code::GET,
            Method::Put => Code::PUT,
            Method::Post => Code::POST,
            Method::Delete => Code::DELETE,
            Method::Fetch => Code::FETCH,
            Method::Patch => Code::PATCH,
            Method::IPatch => Code::IPATCH,
        }
    }
}

/// Content formats known by name (RFC 7252 §12.3 and the IANA registry); any number
/// 0..=65535 is accepted as well.
pub const CONTENT_FORMATS: &[(&str, u16)] = &[
    ("text/plain", 0),
    ("text", 0),
    ("application/link-format", 40),
    ("link-format", 40),
    ("application/xml", 41),
    ("xml", 41),
    ("application/octet-stream", 42),
    ("octet-stream", 42),
    ("application/exi", 47),
    ("exi", 47),
    ("application/json", 50),
    ("json", 50),
    ("application/cbor", 60),
    ("cbor", 60),
    ("application/senml+json", 110),
    ("application/senml+cbor", 112),
];

/// Parse a content format: a number (0..=65535) or a name of [`CONTENT_FORMATS`].
pub fn parse_content_format(s: &str) -> Result<u16, String> {
    if let Ok(n) = s.parse::<u16>() {
        return Ok(n);
    }
    CONTENT_FORMATS.iter().find(|(name, _)| name.eq_ignore_ascii_case(s)).map(|&(_, n)| n).ok_or_else(|| {
        let names: Vec<&str> = CONTENT_FORMATS.iter().map(|(n, _)| *n).collect();
        format!("'{s}' is neither a number 0..=65535 nor a known content format ({})", names.join(", "))
    })
}

/// A custom option from the command line: `NUMBER,VALUE`, where VALUE is text, or hex bytes
/// after `0x` (`-O 2048,0x0a0b`), or empty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CustomOption {
    /// The option number (1..=65535).
    pub number: u16,
    /// The option value.
    pub value: Vec<u8>,
}

/// Parse `NUMBER,VALUE` (see [`CustomOption`]).
pub fn parse_custom_option(s: &str) -> Result<CustomOption, String> {
    let (num, value) = s.split_once(',').unwrap_or((s, ""));
    let number = match num.trim().parse::<u16>() {
        Ok(0) => return Err("option number 0 is reserved".into()),
        Ok(n) => n,
        Err(_) => return Err(format!("'{num}' is not an option number 1..=65535 (expected NUMBER,VALUE)")),
    };
    let value = match value.strip_prefix("0x").or_else(|| value.strip_prefix("0X")) {
        Some(hex) => {
            if hex.len() % 2 != 0 {
                return Err(format!("hex value '{hex}' has an odd number of digits"));
            }
            (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16))
                .collect::<Result<Vec<u8>, _>>()
                .map_err(|_| format!("'{hex}' is not hex"))?
        }
        None => value.as_bytes().to_vec(),
    };
    if value.len() > option::MAX_OPTION_VALUE_LEN {
        return Err(format!("option value of {} bytes is too long", value.len()));
    }
    Ok(CustomOption { number, value })
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
    /// Request method (case-insensitive).
    #[arg(long, short = 'm', value_enum, ignore_case = true, default_value_t = Method::Get)]
    pub method: Method,
    /// Request payload (UTF-8 text; libcoap's -e).
    #[arg(long, short = 'p', visible_short_alias = 'e', conflicts_with = "payload_file")]
    pub payload: Option<String>,
    /// Request payload read from FILE (raw bytes; libcoap's -f).
    #[arg(long, short = 'f', value_name = "FILE")]
    pub payload_file: Option<PathBuf>,
    /// Content-Format of the payload: a number or a name such as `json`, `cbor`,
    /// `text/plain` (libcoap's -t). Default with a payload: text/plain (0).
    #[arg(long, short = 't', value_name = "FORMAT", value_parser = parse_content_format)]
    pub content_format: Option<u16>,
    /// Accept option: the content format wanted in the response (libcoap's -A).
    #[arg(long, short = 'A', value_name = "FORMAT", value_parser = parse_content_format)]
    pub accept: Option<u16>,
    /// A custom option NUMBER,VALUE (VALUE text, or hex after 0x); repeatable (libcoap's -O).
    #[arg(long = "option", short = 'O', value_name = "NUMBER,VALUE", value_parser = parse_custom_option)]
    pub options: Vec<CustomOption>,
    /// Exit 0 whenever every request got a response, whatever its code (libcoap's
    /// coap-client behaviour). Without it a 4.xx response exits 4 and a 5.xx response 5.
    #[arg(long)]
    pub lenient_exit: bool,
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
    /// without it the server chooses. A payload larger than this (default 1024) is sent in
    /// Block1 blocks of this size (RFC 7959), never as one oversized datagram.
    #[arg(long, value_name = "BYTES")]
    pub block_size: Option<usize>,
    /// Seconds to wait for a separate response or a NON response (default: MAX_TRANSMIT_WAIT);
    /// over coap+tcp://, for connecting and for each exchange (default 300 s).
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
    /// Most Block2 blocks of one response (each is one exchange and one log line); a longer
    /// transfer fails with `too-many-blocks`. The body is also limited to 16 MiB.
    #[arg(long, default_value_t = 16_384, value_name = "N")]
    pub max_blocks: u32,
    /// Observe the resource (RFC 7641): register with the first request and log each
    /// notification (`"type": "notification"`), ending after N notifications (or at
    /// --observe-for). Needs --count 1.
    #[arg(long, value_name = "N")]
    pub observe: Option<u32>,
    /// With --observe: stop observing after this many seconds even if fewer notifications came.
    #[arg(long, value_name = "SECS")]
    pub observe_for: Option<f64>,
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
    /// Responses with a 4.xx code.
    pub client_errors: u32,
    /// Responses with a 5.xx code.
    pub server_errors: u32,
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
    /// Requests received from the server's address and answered 4.04 (the client serves
    /// nothing).
    pub requests_refused: u64,
    /// Observe notifications received (`--observe`).
    pub notifications: u32,
}

impl ClientSummary {
    /// A summary of `requests` requests to `peer` before any was answered.
    pub fn new(seed: u64, peer: SocketAddr, requests: u32) -> Self {
        ClientSummary {
            seed,
            peer,
            requests,
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
        }
    }

    /// Count a response of class `code` (2.xx, 4.xx, 5.xx are tallied apart).
    pub fn count_response(&mut self, code: Code) {
        self.responses += 1;
        match code.class() {
            2 => self.success += 1,
            4 => self.client_errors += 1,
            5 => self.server_errors += 1,
            _ => {}
        }
        self.last_code = Some(code);
    }
}

/// The request `args` describe for `uri` (options, payload, content formats, Block2 size):
/// one definition for the UDP and the TCP client.
pub(crate) fn request_from(args: &ClientArgs, uri: &CoapUri) -> anyhow::Result<Request> {
    let mut options = Options::new();
    for seg in &uri.path {
        options.add(option::URI_PATH, seg.as_bytes());
    }
    for q in &uri.query {
        options.add(option::URI_QUERY, q.as_bytes());
    }
    for o in &args.options {
        options.try_add(o.number, &o.value)?;
    }
    if let Some(a) = args.accept {
        options.set_uint(option::ACCEPT, u64::from(a));
    }
    let mut r = Request::new(args.method.code(), "");
    r.options = options;
    let payload = match (&args.payload, &args.payload_file) {
        (Some(p), _) => Some(p.as_bytes().to_vec()),
        (None, Some(f)) => {
            Some(std::fs::read(f).with_context(|| format!("cannot read --payload-file {}", f.display()))?)
        }
        (None, None) => None,
    };
    if let Some(p) = payload {
        r.payload = p;
        r.options.set_content_format(args.content_format.unwrap_or(0));
    } else if let Some(cf) = args.content_format {
        r.options.set_content_format(cf);
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
    let mut request = request_from(&args, &uri)?;
    if args.observe.is_some() {
        if args.count != 1 {
            bail!("--observe needs --count 1");
        }
        request = request.observe();
    }
    // Measured on the driver's clock (time since the run started).
    let observe_until =
        args.observe_for.map(|s| crate::args::secs("--observe-for", s, false)).transpose()?.map(to_instant);
    let mut observing: Option<coapcc_proto::endpoint::RequestId> = None;
    if args.count == 0 {
        bail!("--count must be at least 1");
    }
    if args.nstart == 0 {
        bail!("--nstart must be at least 1");
    }
    let peer = tokio::net::lookup_host((uri.host.as_str(), uri.port))
        .await
        .with_context(|| format!("cannot resolve host '{}'", uri.host))?
        .next()
        .with_context(|| format!("host '{}' has no address", uri.host))?;
    let local: SocketAddr = if peer.is_ipv4() { "0.0.0.0:0".parse()? } else { "[::]:0".parse()? };
    let socket = UdpSocket::bind(local).await.with_context(|| format!("cannot bind a UDP socket on {local}"))?;
    // Connected, so that an ICMP port unreachable is reported to us (as ConnectionRefused)
    // and ends the run at once instead of after MAX_TRANSMIT_WAIT.
    socket.connect(peer).await.with_context(|| format!("cannot reach {peer}"))?;
    let seed = args.seed.unwrap_or_else(random_seed);
    let mut config = EndpointConfig::with_cc(cc);
    config.nstart = args.nstart.max(1);
    config.record_exchanges = true;
    if let Some(szx) = request.block2_szx {
        // Block1 uploads in blocks of --block-size.
        config.block_szx = szx;
        config.max_unblocked_payload = Block { num: 0, more: false, szx }.block_size();
    }
    if args.max_blocks == 0 {
        bail!("--max-blocks must be at least 1");
    }
    config.max_blocks = args.max_blocks;
    if let Some(s) = args.response_timeout {
        config.response_timeout = Some(crate::args::secs("--response-timeout", s, false)?);
    }
    let deadline = args.timeout.map(|s| crate::args::secs("--timeout", s, false)).transpose()?;
    let mut driver = UdpDriver::new(socket, config, seed);
    let start = std::time::Instant::now();
    writeln!(
        log,
        "{}",
        to_line(&json!({"type": "start", "role": "client", "uri": args.uri, "peer": peer.to_string(), "seed": seed,
               "cc": cc.to_string(), "count": args.count, "con": !args.non, "nstart": args.nstart.max(1)}))
    )?;
    // Requests are submitted as earlier ones finish, keeping NSTART + 1 submitted so the
    // endpoint starts the next one the moment one completes (back to back, as if all had been
    // queued at once), while memory and per-packet work stay independent of --count.
    let window = u64::from(args.nstart.max(1)) + 1;
    let mut submitted: u32 = 0;
    // Requests are numbered 1, 2, ... in the log (as over TCP), whatever ids the endpoint uses.
    let mut ordinal: std::collections::HashMap<RequestId, u32> = Default::default();
    let mut s = ClientSummary::new(seed, peer, args.count);
    let signal = shutdown_signal();
    tokio::pin!(signal);
    let mut interrupted = None;
    loop {
        let done = u64::from(s.responses + s.failed);
        while submitted < args.count && u64::from(submitted) < done + window {
            let now = driver.now();
            let rid = driver.endpoint().request(now, peer, request.clone());
            submitted += 1;
            ordinal.insert(rid, submitted);
        }
        driver.flush().await;
        if s.exchanges == 0 && s.responses == 0 {
            if let Some(e) = driver.take_send_error() {
                bail!("cannot send to {peer}: {e}");
            }
        }
        while let Some(r) = driver.endpoint().poll_record() {
            s.exchanges += 1;
            s.retransmissions += r.retransmissions();
            let mut line = exchange_json(&r);
            if let RecordKind::Request(rid) = r.kind {
                if let Some(n) = ordinal.get(&rid) {
                    line["id"] = json!(n);
                }
            }
            writeln!(log, "{}", to_line(&line))?;
        }
        let now = driver.now();
        while let Some(ev) = driver.endpoint().poll_event() {
            let line = match ev {
                Event::Response { id, response, .. } if observing.is_some() => {
                    let id = RequestId(u64::from(ordinal.get(&id).copied().unwrap_or(0)));
                    s.notifications += 1;
                    let seq = response.options.get_uint(option::OBSERVE);
                    s.last_code = Some(response.code);
                    let line = json!({"type": "notification", "id": id.0, "observe": seq, "code": response.code.to_string(),
                                      "bytes": response.payload.len(), "t_s": secs(now)});
                    s.last_payload = Some(response.payload);
                    if !response.code.is_success() {
                        observing = None;
                    }
                    line
                }
                Event::Response { id, response, .. } => {
                    observing = (args.observe.is_some() && response.options.contains(option::OBSERVE)).then_some(id);
                    let id = RequestId(u64::from(if observing.is_some() {
                        ordinal.get(&id).copied().unwrap_or(0)
                    } else {
                        ordinal.remove(&id).unwrap_or(0)
                    }));
                    s.count_response(response.code);
                    let line = json!({"type": "request", "id": id.0, "outcome": "ok", "code": response.code.to_string(),
                                      "bytes": response.payload.len(), "t_s": secs(now)});
                    s.last_payload = Some(response.payload);
                    line
                }
                Event::Failed { id, reason, .. } => {
                    let id = RequestId(u64::from(ordinal.remove(&id).unwrap_or(0)));
                    s.failed += 1;
                    s.first_failure.get_or_insert(reason);
                    json!({"type": "request", "id": id.0, "outcome": reason.as_str(), "code": null, "bytes": 0, "t_s": secs(now)})
                }
                Event::Request { id, .. } => {
                    // The client serves nothing: answer at once, so requests sent to it keep
                    // no state (they used to wait forever, each a timer scanned per packet).
                    s.requests_refused += 1;
                    let nf = coapcc_proto::endpoint::Response::new(Code::NOT_FOUND);
                    let _ = driver.endpoint().respond(
                        now,
                        id,
                        nf.with_payload(b"coapcc client serves no resources".to_vec()),
                    );
                    continue;
                }
                Event::ResponseFailed { .. } => continue,
            };
            writeln!(log, "{}", to_line(&line))?;
        }
        // Answers to requests received (and anything else queued meanwhile) go out now.
        driver.flush().await;
        let observe_done = observing.is_none()
            || args.observe.is_some_and(|n| s.notifications >= n)
            || observe_until.is_some_and(|t| driver.now() >= t);
        if s.responses + s.failed >= s.requests && observe_done {
            if let Some(id) = observing {
                // Forget the observation: the server's next notification gets RST.
                driver.endpoint().stop_observing(id);
            }
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
        // While observing, also wake at --observe-for.
        let wake = match (until, observe_until.filter(|_| observing.is_some())) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        tokio::select! {
            r = driver.wait(wake) => {
                if r.context("receiving")? == Wake::Unreachable {
                    bail!("{peer} is unreachable (ICMP port unreachable: no CoAP server listens there)");
                }
            }
            sig = &mut signal => { interrupted = Some(sig); break; }
        }
    }
    s.elapsed = start.elapsed();
    writeln!(
        log,
        "{}",
        to_line(
            &json!({"type": "summary", "role": "client", "requests": s.requests, "responses": s.responses, "success": s.success,
               "failed": s.failed, "exchanges": s.exchanges, "retransmissions": s.retransmissions, "notifications": s.notifications,
               "elapsed_s": s.elapsed.as_secs_f64(), "interrupted": interrupted.map(|i| i.name())})
        )
    )?;
    log.flush()?;
    if let Some(sig) = interrupted {
        return Err(sig.into());
    }
    Ok(s)
}

/// `coapcc client` entry point: builds a tokio runtime, runs [`run_client`] with the log on
/// `--log FILE` or stderr, prints the last response body on stdout (or writes it to
/// `--output FILE`), and prints one-line
/// errors. Exit code 0 when every request got a 2.xx response (any response with
/// `--lenient-exit`), 1 when a request got none, 4 or 5 when one got a 4.xx or 5.xx response,
/// 128 + the signal number after SIGINT or SIGTERM.
pub fn client_main(args: ClientArgs) -> i32 {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("coapcc client: error: cannot start the runtime: {e}");
            return 1;
        }
    };
    let quiet = args.quiet;
    let lenient = args.lenient_exit;
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
            } else if !lenient && s.server_errors > 0 {
                5
            } else if !lenient && s.client_errors > 0 {
                4
            } else {
                0
            }
        }
        Err(e) => {
            eprintln!("coapcc client: error: {e:#}");
            e.downcast_ref::<Shutdown>().map_or(1, |sig| sig.exit_code())
        }
    }
}
