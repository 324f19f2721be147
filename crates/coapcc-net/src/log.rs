//! JSON-lines records of exchanges, requests and summaries.
//!
//! Every line is one JSON object with a `"type"` field:
//!
//! - `start`: `seed`, `cc` (canonical algorithm spec), `peer`/`bind`, `uri`, `count`, `con`.
//! - `exchange`: one finished message-layer exchange ([`exchange_json`]).
//! - `request`: one finished client request (`id`, `outcome` = `ok` or the failure reason,
//!   `code`, `bytes` of the reassembled body, `t_s`).
//! - `summary`: the run's totals (client or server).
//!
//! Times (`*_s`) are seconds since the driver started (the endpoint's clock); durations are
//! seconds.

use std::net::SocketAddr;
use std::time::Duration;

use coapcc_cc::{EstimatorSnapshot, Instant, Snapshot};
use coapcc_proto::endpoint::{ExchangeRecord, RecordKind};
use serde_json::{json, Value};

fn t(i: Instant) -> f64 {
    i.as_nanos() as f64 / 1e9
}

fn d(x: Duration) -> f64 {
    x.as_nanos() as f64 / 1e9
}

/// Seconds since the epoch of `i`, as logged (`nanoseconds / 1e9`, so short decimals).
pub fn secs(i: Instant) -> f64 {
    t(i)
}

/// One JSON line for `v`: like `v.to_string()`, but an object's `"type"` field comes first
/// (the other keys keep serde_json's order), so lines are easy to scan and grep.
pub fn to_line(v: &Value) -> String {
    let Value::Object(map) = v else {
        return v.to_string();
    };
    let mut out = String::from("{");
    let mut first = true;
    let ty = map.get("type").into_iter().map(|t| ("type", t));
    for (k, val) in ty.chain(map.iter().filter(|(k, _)| k.as_str() != "type").map(|(k, v)| (k.as_str(), v))) {
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str(&Value::String(k.to_string()).to_string());
        out.push(':');
        out.push_str(&val.to_string());
    }
    out.push('}');
    out
}

fn estimator(e: &Option<EstimatorSnapshot>) -> Value {
    match e {
        Some(e) => {
            json!({"srtt_s": d(e.srtt), "rttvar_s": d(e.rttvar), "rto_s": d(e.rto), "samples": e.samples})
        }
        None => Value::Null,
    }
}

/// An algorithm snapshot as JSON: `rto_s`, `strong`, `weak` (each `{srtt_s, rttvar_s,
/// rto_s, samples}` or null), `slow_rto_s`, `state`, `retained_s`.
pub fn snapshot_json(s: &Snapshot) -> Value {
    json!({
        "rto_s": d(s.rto),
        "strong": estimator(&s.strong),
        "weak": estimator(&s.weak),
        "slow_rto_s": s.slow_rto.map(d),
        "state": s.state,
        "retained_s": s.retained.map(d),
    })
}

/// One exchange record as a JSON object (`"type": "exchange"`):
///
/// `role` (`request`/`separate-response`), `id`, `peer`, `mid`, `token` (hex), `con`,
/// `block2` (`{num, szx}` or null), `algorithm`, `queued_s`, `transmissions` (list of
/// `{ordinal, t_s, timeout_s}`), `retransmissions`, `acked_s`, `response_s`, `rtt_s`, `copy`
/// (`{ordinal, rtt_s}` or null), `code`, `outcome` (`piggybacked`, `separate`,
/// `non-response`, `acknowledged`, `timeout`, `reset`, `response-timeout`, ...),
/// `finished_s`, `cc` ([`snapshot_json`] after the exchange).
pub fn exchange_json(r: &ExchangeRecord<SocketAddr>) -> Value {
    let (role, id) = match r.kind {
        RecordKind::Request(id) => ("request", id.0),
        RecordKind::SeparateResponse(id) => ("separate-response", id.0),
    };
    let tx: Vec<Value> = r
        .transmissions
        .iter()
        .map(|x| json!({"ordinal": x.ordinal, "t_s": t(x.at), "timeout_s": x.timeout.map(d)}))
        .collect();
    json!({
        "type": "exchange",
        "role": role,
        "id": id,
        "peer": r.peer.to_string(),
        "mid": r.message_id,
        "token": r.token.to_string(),
        "con": r.confirmable,
        "block2": r.block2.map(|b| json!({"num": b.num, "szx": b.szx})),
        "algorithm": r.algorithm,
        "queued_s": t(r.queued_at),
        "transmissions": tx,
        "retransmissions": r.retransmissions(),
        "acked_s": r.acked_at.map(t),
        "response_s": r.response_at.map(t),
        "rtt_s": r.rtt.map(d),
        "copy": r.copy.map(|c| json!({"ordinal": c.ordinal, "rtt_s": d(c.rtt)})),
        "code": r.response_code.map(|c| c.to_string()),
        "outcome": r.outcome.as_str(),
        "finished_s": t(r.finished_at),
        "cc": snapshot_json(&r.snapshot),
    })
}

/// A server's `--log` file: each line is written as the event happens (the writer is flushed
/// at the end of every batch of events, [`LogSink::flush`]), and the file is rotated when it
/// reaches its size limit: `FILE` is renamed `FILE.1` (replacing an older one) and a new
/// `FILE` begins with a `{"type": "log-rotated"}` line. So the log is readable while the
/// server runs and takes at most twice the limit on disk, however much connection churn
/// there is.
pub struct LogSink {
    inner: Option<Sink>,
}

struct Sink {
    path: std::path::PathBuf,
    file: std::io::BufWriter<std::fs::File>,
    written: u64,
    max_bytes: u64,
    rotations: u64,
}

impl LogSink {
    /// No log.
    pub fn none() -> LogSink {
        LogSink { inner: None }
    }

    /// Log to `path` (created or truncated), rotated at `max_bytes` (0: never).
    pub fn create(path: &std::path::Path, max_bytes: u64) -> anyhow::Result<LogSink> {
        use anyhow::Context;
        let file = std::fs::File::create(path).with_context(|| format!("cannot create log file {}", path.display()))?;
        Ok(LogSink {
            inner: Some(Sink {
                path: path.to_path_buf(),
                file: std::io::BufWriter::new(file),
                written: 0,
                max_bytes,
                rotations: 0,
            }),
        })
    }

    /// Whether a log is being written.
    pub fn is_on(&self) -> bool {
        self.inner.is_some()
    }

    /// Times the file was rotated.
    pub fn rotations(&self) -> u64 {
        self.inner.as_ref().map_or(0, |s| s.rotations)
    }

    /// Write one JSON line (errors are ignored: a full disk must not stop the server).
    pub fn line(&mut self, v: &Value) {
        let Some(s) = &mut self.inner else { return };
        let mut line = to_line(v);
        line.push('\n');
        if s.max_bytes > 0 && s.written > 0 && s.written + line.len() as u64 > s.max_bytes {
            s.rotate();
        }
        use std::io::Write;
        if s.file.write_all(line.as_bytes()).is_ok() {
            s.written += line.len() as u64;
        }
    }

    /// Push what was written to the file.
    pub fn flush(&mut self) -> std::io::Result<()> {
        use std::io::Write;
        match &mut self.inner {
            Some(s) => s.file.flush(),
            None => Ok(()),
        }
    }
}

impl Sink {
    fn rotate(&mut self) {
        use std::io::Write;
        let _ = self.file.flush();
        let mut old = self.path.clone().into_os_string();
        old.push(".1");
        let _ = std::fs::rename(&self.path, &old);
        if let Ok(f) = std::fs::File::create(&self.path) {
            self.file = std::io::BufWriter::new(f);
            self.rotations += 1;
            let head = to_line(
                &json!({"type": "log-rotated", "rotations": self.rotations, "previous": old.to_string_lossy()}),
            );
            self.written = 0;
            if writeln!(self.file, "{head}").is_ok() {
                self.written = head.len() as u64 + 1;
            }
        }
    }
}

#[cfg(test)]
mod sink_tests {
    use super::*;

    #[test]
    fn lines_are_readable_at_once_and_the_file_is_rotated() {
        let dir = std::env::temp_dir().join(format!("coapcc-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("server.jsonl");
        let mut log = LogSink::create(&path, 1000).unwrap();
        log.line(&json!({"type": "start"}));
        log.flush().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"type\":\"start\"}\n");
        for i in 0..200 {
            log.line(&json!({"type": "connection", "n": i}));
        }
        log.flush().unwrap();
        let now = std::fs::metadata(&path).unwrap().len();
        let old = std::fs::metadata(dir.join("server.jsonl.1")).unwrap().len();
        assert!(now <= 1000 && old <= 1000, "{now} {old}");
        assert!(log.rotations() >= 5);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("{\"type\":\"log-rotated\""), "{text}");
        assert!(text.ends_with("\"n\":199}\n"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
