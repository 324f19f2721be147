//! Segments as the model sees them: sequence numbers, lengths and flags, no payload bytes.

/// One TCP segment.
///
/// Sequence numbers are 64-bit and never wrap: both ends use an initial sequence number of 0,
/// the SYN occupies sequence number 0 and data starts at 1. Payload content is not carried,
/// only its length: the application above counts bytes (see [`crate::Connection::take_delivered`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Sequence number of the first byte (of the SYN for a SYN segment).
    pub seq: u64,
    /// Payload bytes.
    pub len: u32,
    /// Cumulative acknowledgement (next byte expected), if the ACK flag is set.
    pub ack: Option<u64>,
    /// SYN flag.
    pub syn: bool,
    /// Sent before (a retransmission); for traces and counters only, the receiver ignores it.
    pub retransmission: bool,
    /// TCP/IP header bytes on the wire (40 without options).
    pub header_bytes: u32,
}

impl Segment {
    /// Bytes on the wire: headers plus payload.
    pub fn wire_len(&self) -> u32 {
        self.header_bytes + self.len
    }

    /// Sequence space consumed (payload, plus one for SYN).
    pub fn seq_len(&self) -> u64 {
        u64::from(self.len) + u64::from(self.syn)
    }

    /// A pure ACK: no payload, no SYN.
    pub fn is_pure_ack(&self) -> bool {
        self.len == 0 && !self.syn
    }
}
