//! The test server's resources, as a pure function from request to answer (no I/O, so it is
//! unit-tested directly and could serve a simulated server too).
//!
//! | Path | Methods | Answer |
//! |---|---|---|
//! | `/hello` | GET | 2.05, a 60-byte text payload ([`HELLO`]) |
//! | `/large?size=N` | GET | 2.05, `N` bytes (default 102 400, at most [`MAX_LARGE`]) of a repeating text pattern ([`large_body`]); served block-wise by the endpoint |
//! | `/echo` | PUT, POST | 2.04 Changed, echoing the request payload, which is also stored |
//! | `/echo` | GET | 2.05, the last stored payload (empty at start) |
//! | `/upload` | PUT, POST | 2.04 Changed, `received N bytes` (the payload is stored; uploads larger than a block arrive in Block1 blocks, reassembled by the endpoint) |
//! | `/upload` | GET | 2.05, the last uploaded payload (block-wise when large) |
//! | `/slow?ms=N` | GET | 2.05 after `N` ms (default 3000, at most 60 000): a separate response when `N` exceeds the piggyback timeout |
//! | `/counter?period=MS` | GET | 2.05, the number of whole periods (default 1000 ms, 100..=60 000) since the server started; observable (RFC 7641): observers get a CON notification each period (handled by the server, which owns the clock) |
//! | `/.well-known/core` | GET | 2.05, RFC 6690 link format (content format 40) |
//!
//! Unknown paths get 4.04, other methods 4.05.

use std::time::Duration;

use coapcc_proto::endpoint::Response;
use coapcc_proto::{Code, Message};

/// The `/hello` payload: exactly 60 bytes (the workload of the Helsinki experiments).
pub const HELLO: &[u8; 60] = b"Hello from coapcc! CoAP congestion-control test server ....\n";

/// Largest `/large` representation (1 MiB): the endpoint slices the representation again
/// for every block request, so very large sizes would cost quadratic copying.
pub const MAX_LARGE: usize = 1 << 20;

/// Default `/large` size: the thesis transfer of 400 blocks of 256 bytes.
pub const DEFAULT_LARGE: usize = 102_400;

/// Longest `/slow` delay.
pub const MAX_SLOW_MS: u64 = 60_000;

/// Content-Format text/plain;charset=utf-8.
pub const TEXT_PLAIN: u16 = 0;
/// Content-Format application/link-format.
pub const LINK_FORMAT: u16 = 40;

/// The `/.well-known/core` document.
pub const WELL_KNOWN_CORE: &str = concat!(
    "</hello>;rt=\"coapcc.hello\";ct=0;sz=60,",
    "</large>;rt=\"coapcc.large\";ct=0;title=\"GET ?size=N: N bytes, block-wise\",",
    "</echo>;rt=\"coapcc.echo\";ct=0;title=\"PUT/POST: store and echo; GET: last payload\",",
    "</slow>;rt=\"coapcc.slow\";ct=0;title=\"GET ?ms=N: separate response after N ms\",",
    "</upload>;rt=\"coapcc.upload\";ct=0;title=\"PUT/POST: store (Block1); GET: last upload\",",
    "</counter>;rt=\"coapcc.counter\";ct=0;obs;title=\"GET ?period=MS: periods since start, observable\""
);

/// `n` bytes of the `/large` pattern: the 64-character line
/// `0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-\n` repeated, so that every
/// byte's offset can be checked and a block in the wrong place is visible.
///
/// The pattern is built once per process (1 MiB); each call is one copy of its first `n`
/// bytes, so a block request for a large body costs a `memcpy`, not a rebuild. Sizes above
/// [`MAX_LARGE`] are built directly.
pub fn large_body(n: usize) -> Vec<u8> {
    static PATTERN: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    if n > MAX_LARGE {
        return pattern(n);
    }
    PATTERN.get_or_init(|| pattern(MAX_LARGE))[..n].to_vec()
}

fn pattern(n: usize) -> Vec<u8> {
    const LINE: &[u8; 64] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-\n";
    LINE.iter().copied().cycle().take(n).collect()
}

/// The period of `/counter?period=MS` (default 1000 ms, 100..=60 000).
pub fn counter_period(queries: &[String]) -> Result<Duration, &'static str> {
    match query(queries, "period").map(str::parse::<u64>) {
        None => Ok(Duration::from_millis(1000)),
        Some(Ok(ms)) if (100..=60_000).contains(&ms) => Ok(Duration::from_millis(ms)),
        Some(_) => Err("period must be an integer 100..=60000 (ms)"),
    }
}

/// The `/counter` representation of value `n`.
pub fn counter_response(n: u64) -> Response {
    text(Code::CONTENT, &n.to_string())
}

/// What the server does with a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Answer now (piggybacked on the ACK of a CON).
    Respond(Response),
    /// Answer after a delay (a separate response once the piggyback timeout passed).
    Delay(Duration, Response),
}

/// The resource tree and its little state (the `/echo` store).
#[derive(Clone, Debug, Default)]
pub struct Resources {
    stored: Vec<u8>,
    uploaded: Vec<u8>,
}

fn text(code: Code, s: &str) -> Response {
    Response::new(code).with_payload(s.as_bytes().to_vec()).with_content_format(TEXT_PLAIN)
}

fn query<'a>(queries: &'a [String], key: &str) -> Option<&'a str> {
    queries.iter().find_map(|q| q.strip_prefix(key)?.strip_prefix('='))
}

impl Resources {
    /// A fresh resource tree.
    pub fn new() -> Self {
        Resources::default()
    }

    /// Answer `req`.
    pub fn handle(&mut self, req: &Message) -> Action {
        let path = req.uri_path();
        let queries = req.uri_queries();
        let get = req.code == Code::GET;
        let not_allowed = || Action::Respond(text(Code::METHOD_NOT_ALLOWED, "method not allowed"));
        match path.as_str() {
            "hello" if get => Action::Respond(Response::content(HELLO.to_vec()).with_content_format(TEXT_PLAIN)),
            "large" if get => {
                let size = match query(&queries, "size") {
                    None => DEFAULT_LARGE,
                    Some(s) => match s.parse::<usize>() {
                        Ok(n) if n <= MAX_LARGE => n,
                        _ => return Action::Respond(text(Code::BAD_REQUEST, "size must be an integer 0..=1048576")),
                    },
                };
                Action::Respond(Response::content(large_body(size)).with_content_format(TEXT_PLAIN))
            }
            "echo" if get => Action::Respond(Response::content(self.stored.clone())),
            "echo" if req.code == Code::PUT || req.code == Code::POST => {
                self.stored = req.payload.clone();
                let mut r = Response::new(Code::CHANGED).with_payload(req.payload.clone());
                if let Some(cf) = req.content_format() {
                    r = r.with_content_format(cf);
                }
                Action::Respond(r)
            }
            "upload" if get => Action::Respond(Response::content(self.uploaded.clone())),
            "upload" if req.code == Code::PUT || req.code == Code::POST => {
                self.uploaded = req.payload.clone();
                Action::Respond(text(Code::CHANGED, &format!("received {} bytes", req.payload.len())))
            }
            "slow" if get => {
                let ms = match query(&queries, "ms").map(str::parse::<u64>) {
                    None => 3000,
                    Some(Ok(ms)) => ms.min(MAX_SLOW_MS),
                    Some(Err(_)) => return Action::Respond(text(Code::BAD_REQUEST, "ms must be an integer")),
                };
                Action::Delay(Duration::from_millis(ms), text(Code::CONTENT, &format!("slow response after {ms} ms")))
            }
            ".well-known/core" if get => {
                Action::Respond(Response::content(WELL_KNOWN_CORE.as_bytes().to_vec()).with_content_format(LINK_FORMAT))
            }
            "hello" | "large" | "slow" | ".well-known/core" | "echo" | "upload" => not_allowed(),
            _ => Action::Respond(text(Code::NOT_FOUND, "not found")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coapcc_proto::MessageType;

    fn req(code: Code, path: &str) -> Message {
        let mut m = Message::new(MessageType::Con, code, 1);
        let (p, q) = path.split_once('?').unwrap_or((path, ""));
        m.add_uri_path(p);
        for q in q.split('&').filter(|q| !q.is_empty()) {
            m.add_uri_query(q);
        }
        m
    }

    fn respond(a: Action) -> Response {
        match a {
            Action::Respond(r) => r,
            Action::Delay(..) => panic!("delayed"),
        }
    }

    #[test]
    fn resources() {
        let mut r = Resources::new();
        assert_eq!(respond(r.handle(&req(Code::GET, "/hello"))).payload.len(), 60);
        assert_eq!(respond(r.handle(&req(Code::GET, "/large"))).payload.len(), 102_400);
        assert_eq!(respond(r.handle(&req(Code::GET, "/large?size=5"))).payload, b"01234");
        assert_eq!(respond(r.handle(&req(Code::GET, "/large?size=x"))).code, Code::BAD_REQUEST);
        assert_eq!(respond(r.handle(&req(Code::GET, "/large?size=99999999"))).code, Code::BAD_REQUEST);
        assert_eq!(respond(r.handle(&req(Code::GET, "/nope"))).code, Code::NOT_FOUND);
        assert_eq!(respond(r.handle(&req(Code::DELETE, "/hello"))).code, Code::METHOD_NOT_ALLOWED);
        let mut put = req(Code::PUT, "/echo");
        put.payload = b"abc".to_vec();
        let a = respond(r.handle(&put));
        assert_eq!((a.code, a.payload.as_slice()), (Code::CHANGED, &b"abc"[..]));
        assert_eq!(respond(r.handle(&req(Code::GET, "/echo"))).payload, b"abc");
        let wk = respond(r.handle(&req(Code::GET, "/.well-known/core")));
        assert_eq!(wk.options.content_format(), Some(40));
        assert!(String::from_utf8(wk.payload).unwrap().contains("</hello>"));
        assert!(
            matches!(r.handle(&req(Code::GET, "/slow?ms=10")), Action::Delay(d, _) if d == Duration::from_millis(10))
        );
    }

    #[test]
    fn large_pattern() {
        for n in [0, 1, 64, 1000, MAX_LARGE, MAX_LARGE + 1] {
            assert_eq!(large_body(n), pattern(n), "{n}");
        }
        let b = large_body(130);
        assert_eq!(&b[..10], b"0123456789");
        assert_eq!(b[63], b'\n');
        assert_eq!(b[64..], b[..66]);
    }
}
