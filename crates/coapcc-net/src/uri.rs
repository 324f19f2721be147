//! `coap://` URIs (RFC 7252 §6.1), enough for a command-line client.

use anyhow::{bail, Context};

/// A parsed `coap://host[:port]/path?query` URI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoapUri {
    /// Host name or address (IPv6 without brackets).
    pub host: String,
    /// Port (default 5683).
    pub port: u16,
    /// Percent-decoded path segments (`/a/b` → `["a", "b"]`; `/` → none).
    pub path: Vec<String>,
    /// Percent-decoded query items, split on `&`.
    pub query: Vec<String>,
}

/// Longest Uri-Path segment or Uri-Query item CoAP can carry (RFC 7252 §5.10).
pub const MAX_URI_COMPONENT: usize = 255;

fn percent_decode(s: &str) -> anyhow::Result<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3).context("truncated percent-escape")?;
            out.push(u8::from_str_radix(hex, 16).with_context(|| format!("bad percent-escape %{hex}"))?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).context("percent-decoded text is not UTF-8")
}

impl CoapUri {
    /// Parse `uri`. Only the `coap` scheme (UDP, no DTLS) is parsed here; `coap+tcp://` URIs
    /// are parsed by [`crate::tcp_client::parse_tcp_uri`], which maps them to this form.
    pub fn parse(uri: &str) -> anyhow::Result<CoapUri> {
        let rest = match uri.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("coap") => rest,
            Some((scheme, _)) => {
                bail!("unsupported URI scheme '{scheme}': use coap:// (CoAP over UDP) or coap+tcp:// (CoAP over TCP)")
            }
            None => bail!("'{uri}' is not a coap:// or coap+tcp:// URI"),
        };
        let rest = rest.split('#').next().unwrap_or("");
        let (authority, path_query) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => match rest.find('?') {
                Some(i) => (&rest[..i], &rest[i..]),
                None => (rest, ""),
            },
        };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6.split_once(']').context("unterminated IPv6 literal in URI")?;
            let port = match after.strip_prefix(':') {
                Some(p) => Some(p),
                None if after.is_empty() => None,
                None => bail!("unexpected '{after}' after IPv6 literal"),
            };
            (h.to_string(), port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (authority.to_string(), None),
            }
        };
        if host.is_empty() {
            bail!("URI '{uri}' has no host");
        }
        let port = match port {
            Some(p) => p.parse::<u16>().with_context(|| format!("bad port '{p}' in URI"))?,
            None => 5683,
        };
        let (path, query) = match path_query.split_once('?') {
            Some((p, q)) => (p, q),
            None => (path_query, ""),
        };
        let path = path.strip_prefix('/').unwrap_or(path);
        let path =
            if path.is_empty() { Vec::new() } else { path.split('/').map(percent_decode).collect::<Result<_, _>>()? };
        let query: Vec<String> =
            query.split('&').filter(|q| !q.is_empty()).map(percent_decode).collect::<Result<_, _>>()?;
        // RFC 7252 §5.10: Uri-Path and Uri-Query values are 0..=255 bytes each.
        for (what, items) in [("path segment", &path), ("query item", &query)] {
            if let Some(long) = items.iter().find(|s| s.len() > MAX_URI_COMPONENT) {
                bail!("URI {what} of {} bytes exceeds CoAP's limit of {MAX_URI_COMPONENT} bytes", long.len());
            }
        }
        Ok(CoapUri { host, port, path, query })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse() {
        let u = CoapUri::parse("coap://127.0.0.1:5683/hello").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.clone(), u.query.len()),
            ("127.0.0.1", 5683, vec!["hello".to_string()], 0)
        );
        let u = CoapUri::parse("coap://[::1]:7000/large?size=10&x=%41").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("::1", 7000));
        assert_eq!(u.query, ["size=10", "x=A"]);
        let u = CoapUri::parse("coap://localhost").unwrap();
        assert_eq!((u.port, u.path.len()), (5683, 0));
        let u = CoapUri::parse("coap://h/a/b%2Fc/").unwrap();
        assert_eq!(u.path, ["a", "b/c", ""]);
        assert!(CoapUri::parse("coaps://h/").is_err());
        let e = CoapUri::parse("http://h/").unwrap_err().to_string();
        assert!(e.contains("coap://") && e.contains("coap+tcp://"), "{e}");
        assert!(CoapUri::parse("coap://:5/").is_err());
        assert!(CoapUri::parse("coap://h:99999/").is_err());
        let long = "a".repeat(70_000);
        let err = CoapUri::parse(&format!("coap://h/{long}")).unwrap_err().to_string();
        assert!(err.contains("70000 bytes exceeds"), "{err}");
        assert!(CoapUri::parse(&format!("coap://h/x?{}", "q".repeat(256))).is_err());
        assert!(CoapUri::parse(&format!("coap://h/{}", "a".repeat(255))).is_ok());
    }
}
