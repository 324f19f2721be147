//! Per-connection counters and the per-segment / per-ACK trace.

use coapcc_cc::Instant;

use crate::cc::{BbrMode, CaState};

/// Counters of one endpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
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
