//! Optional per-exchange trace: the simulator is the trace source, a [`TraceSink`] the sink.

use std::io::{self, Write};

use coapcc_cc::{EstimatorSnapshot, Snapshot};
use serde::Serialize;

/// One transmission (copy) of a request.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TxTrace {
    /// When the copy was sent, seconds.
    pub sent_s: f64,
    /// The timer armed with it, seconds.
    pub timer_s: f64,
}

/// How an exchange ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExchangeOutcome {
    /// The first response arrived.
    Ack,
    /// MAX_RETRANSMIT exhausted.
    GiveUp,
}

/// One finished exchange.
#[derive(Clone, Debug, Serialize)]
pub struct ExchangeTrace<'a> {
    /// When it ended (response arrival or give-up), seconds.
    pub time_s: f64,
    /// Client index.
    pub client: u32,
    /// Group index.
    pub group: u32,
    /// Exchange index within the client's flow (0, 1, ...; the compact model uses it as the
    /// Message ID, modulo 2^16).
    pub exchange: u32,
    /// How it ended.
    pub outcome: ExchangeOutcome,
    /// Every copy sent, in order; copy k was sent when the timer of copy k − 1 expired.
    pub transmissions: &'a [TxTrace],
    /// Response arrival − first transmission, seconds (`null` on give-up).
    pub rtt_s: Option<f64>,
    /// The copy whose arrival at the server triggered the completing response.
    pub answered_copy: Option<u32>,
    /// The ordinal the response echoed (differs from `answered_copy` only with
    /// `replay_cached`); reported to the algorithm only if it uses copy identification.
    pub echoed_copy: Option<u32>,
    /// The algorithm's state after the ACK (or give-up).
    pub cc: CcSnapshot,
}

/// Serialisable view of [`coapcc_cc::Snapshot`], seconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CcSnapshot {
    /// RTO the next exchange would start from (undithered).
    pub rto_s: f64,
    /// Strong (or only) estimator.
    pub strong: Option<EstimatorView>,
    /// CoCoA weak estimator.
    pub weak: Option<EstimatorView>,
    /// FASOR SlowRTO.
    pub slow_rto_s: Option<f64>,
    /// Named backoff state.
    pub state: Option<&'static str>,
    /// Retained (FullBackoff) timer.
    pub retained_s: Option<f64>,
}

/// One estimator.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct EstimatorView {
    /// SRTT.
    pub srtt_s: f64,
    /// RTTVAR.
    pub rttvar_s: f64,
    /// The estimator's RTO.
    pub rto_s: f64,
    /// Samples since reset.
    pub samples: u32,
}

impl From<EstimatorSnapshot> for EstimatorView {
    fn from(e: EstimatorSnapshot) -> Self {
        EstimatorView {
            srtt_s: e.srtt.as_secs_f64(),
            rttvar_s: e.rttvar.as_secs_f64(),
            rto_s: e.rto.as_secs_f64(),
            samples: e.samples,
        }
    }
}

impl From<Snapshot> for CcSnapshot {
    fn from(s: Snapshot) -> Self {
        CcSnapshot {
            rto_s: s.rto.as_secs_f64(),
            strong: s.strong.map(Into::into),
            weak: s.weak.map(Into::into),
            slow_rto_s: s.slow_rto.map(|d| d.as_secs_f64()),
            state: s.state,
            retained_s: s.retained.map(|d| d.as_secs_f64()),
        }
    }
}

/// Receives trace records as the run produces them (in simulated-time order).
pub trait TraceSink {
    /// An exchange ended.
    fn exchange(&mut self, rec: &ExchangeTrace<'_>);
    /// A TCP sender event (transport `tcp`: every data segment sent and every ACK of data
    /// received by a server connection). Ignored unless the sink overrides it.
    fn tcp(&mut self, _rec: &coapcc_tcp::stats::TraceLine) {}
}

/// Writes each record as one JSON line.
pub struct JsonLinesTrace<W: Write> {
    out: W,
    error: Option<io::Error>,
}

impl<W: Write> JsonLinesTrace<W> {
    /// A sink writing to `out` (wrap files in a `BufWriter`).
    pub fn new(out: W) -> Self {
        JsonLinesTrace { out, error: None }
    }

    /// Flush and return the writer, or the first write error.
    pub fn finish(mut self) -> io::Result<W> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: Write> JsonLinesTrace<W> {
    fn line(&mut self, rec: &impl serde::Serialize) {
        if self.error.is_some() {
            return;
        }
        let r =
            serde_json::to_writer(&mut self.out, rec).map_err(io::Error::from).and_then(|_| self.out.write_all(b"\n"));
        if let Err(e) = r {
            self.error = Some(e);
        }
    }
}

impl<W: Write> TraceSink for JsonLinesTrace<W> {
    fn exchange(&mut self, rec: &ExchangeTrace<'_>) {
        self.line(rec);
    }

    fn tcp(&mut self, rec: &coapcc_tcp::stats::TraceLine) {
        self.line(rec);
    }
}

/// Collects records in memory (tests, small runs).
#[derive(Clone, Debug, Default)]
pub struct VecTrace {
    /// Each record as a JSON value.
    pub records: Vec<serde_json::Value>,
}

impl TraceSink for VecTrace {
    fn exchange(&mut self, rec: &ExchangeTrace<'_>) {
        self.records.push(serde_json::to_value(rec).expect("trace records serialise"));
    }

    fn tcp(&mut self, rec: &coapcc_tcp::stats::TraceLine) {
        self.records.push(serde_json::to_value(rec).expect("trace records serialise"));
    }
}
