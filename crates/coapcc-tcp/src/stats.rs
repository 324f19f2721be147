//! Per-connection counters and the per-segment / per-ACK trace.

use coapcc_cc::Instant;
use serde::Serialize;

use crate::cc::{BbrMode, CaState};

/// Counters of one endpoint (serialised with these field names in JSON reports).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Counters {
    /// Handshake duration at this end (SYN sent or received to established), seconds.
    pub setup_s: Option<f64>,
    /// Segments sent (SYN, data, pure ACKs).
    pub segments_sent: u64,
    /// Segments carrying data.
    pub data_segments_sent: u64,
    /// Data segments retransmitted.
    pub retransmitted_segments: u64,
    /// SYN or SYN-ACK retransmissions.
    pub syn_retransmissions: u64,
    /// Retransmission-timer expiries (including handshake timeouts).
    pub rto_expiries: u64,
    /// Fast retransmits (entries into fast recovery).
    pub fast_retransmits: u64,
    /// Duplicate ACKs received.
    pub dupacks_received: u64,
    /// In-order payload bytes received and delivered to the application.
    pub bytes_delivered: u64,
    /// Payload bytes received again after delivery (spurious retransmissions seen here).
    pub duplicate_bytes_received: u64,
    /// When the first retransmission timeout of data (not of the handshake) fired, seconds
    /// on the caller's clock.
    pub first_rto_at_s: Option<f64>,
    /// Data RTOs whose loss episode ended (Linux's `TCP_CA_Loss` from the RTO until the
    /// cumulative ACK covers everything sent before it, `high_seq`), or that the next RTO cut
    /// short.
    pub rto_episodes: u64,
    /// Summed over those RTOs: seconds from the RTO to the end of its episode (the go-back-N
    /// resending of everything outstanding at the RTO, until it is all acknowledged).
    pub rto_episode_s: f64,
    /// Summed over the same RTOs: seconds from the RTO to the last retransmission of its
    /// episode, the time the sender spends resending what was outstanding (the thesis's
    /// "each RTO is followed by roughly 5 s of resending"); 0 for an RTO that resent only
    /// the first unacknowledged segment.
    pub rto_resend_s: f64,
    /// New data segments (first transmissions) sent after the first duplicate ACK arrived.
    pub new_after_first_dupack: u64,
    /// Data segments retransmitted in fast recovery (the fast retransmits included).
    pub recovery_retransmits: u64,
    /// ACKs that advanced the cumulative ACK point in fast recovery (the partial ACKs and the
    /// ACK that ends recovery): the round trips of recovery.
    pub recovery_rounds: u64,
}

/// What a trace record describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TraceEvent {
    /// A new data segment was sent (`seq`, `len`).
    Send,
    /// A data segment was retransmitted.
    Retransmit,
    /// An ACK advanced or was processed (`seq` = the ACK number).
    Ack,
    /// A duplicate ACK arrived.
    DupAck,
    /// Fast retransmit: fast recovery begins.
    FastRetransmit,
    /// The retransmission timer expired.
    Rto,
}

impl TraceEvent {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            TraceEvent::Send => "send",
            TraceEvent::Retransmit => "retransmit",
            TraceEvent::Ack => "ack",
            TraceEvent::DupAck => "dupack",
            TraceEvent::FastRetransmit => "fast_retransmit",
            TraceEvent::Rto => "rto",
        }
    }
}

/// One trace record: the sender's state after the event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraceRecord {
    /// When.
    pub time: Instant,
    /// What.
    pub event: TraceEvent,
    /// Sequence number (data events) or ACK number (ACK events).
    pub seq: u64,
    /// Payload bytes (data events).
    pub len: u32,
    /// cwnd, segments.
    pub cwnd: u32,
    /// ssthresh, segments (`None` while infinite).
    pub ssthresh: Option<u32>,
    /// Segments in flight.
    pub in_flight: u32,
    /// Pacing rate, wire bytes per second (paced controllers only).
    pub pacing_rate: Option<f64>,
    /// BBR mode (BBR only).
    pub bbr_mode: Option<BbrMode>,
    /// Congestion-avoidance state.
    pub ca_state: CaState,
    /// Current (backed-off) RTO, seconds.
    pub rto: f64,
}

/// The JSON form of a [`TraceRecord`] (one line of a `--trace` file): times in seconds,
/// names in lower case.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TraceLine {
    /// When, seconds.
    pub time_s: f64,
    /// Flow (client) index, as the host numbers them.
    pub flow: u32,
    /// `send`, `retransmit`, `ack`, `dupack`, `fast_retransmit`, `rto`.
    pub event: &'static str,
    /// Sequence number (data) or ACK number (ACKs).
    pub seq: u64,
    /// Payload bytes (data).
    pub len: u32,
    /// cwnd, segments.
    pub cwnd: u32,
    /// ssthresh, segments (`null` while infinite).
    pub ssthresh: Option<u32>,
    /// Segments in flight.
    pub in_flight: u32,
    /// Pacing rate, bytes/s (BBR).
    pub pacing_rate: Option<f64>,
    /// BBR mode (`startup`, `drain`, `probe_bw`, `probe_rtt`).
    pub bbr_state: Option<&'static str>,
    /// `open`, `disorder`, `recovery`, `loss`.
    pub ca_state: &'static str,
    /// RTO, seconds.
    pub rto_s: f64,
}

impl TraceRecord {
    /// The JSON form, for flow `flow`.
    pub fn line(&self, flow: u32) -> TraceLine {
        TraceLine {
            time_s: self.time.as_secs_f64(),
            flow,
            event: self.event.name(),
            seq: self.seq,
            len: self.len,
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
            in_flight: self.in_flight,
            pacing_rate: self.pacing_rate,
            bbr_state: self.bbr_mode.map(BbrMode::name),
            ca_state: self.ca_state.name(),
            rto_s: self.rto,
        }
    }
}
