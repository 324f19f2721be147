//! The receiving half: in-order delivery, an out-of-order store (no SACK is sent, but
//! segments above a hole are kept, as every real stack does), and the delayed-ACK rule.

use coapcc_cc::Instant;

use crate::config::TcpConfig;

/// Receiver state of one connection.
#[derive(Clone, Debug, Default)]
pub struct Receiver {
    /// Next byte expected.
    pub rcv_nxt: u64,
    /// Out-of-order ranges `[start, end)`, sorted and disjoint, all above `rcv_nxt`.
    ooo: Vec<(u64, u64)>,
    /// In-order bytes received since the last ACK was sent.
    unacked: u64,
    /// Delayed-ACK deadline.
    pub delack: Option<Instant>,
    /// An ACK must go out at once.
    pub ack_now: bool,
    /// Quick ACKs left.
    quick_left: u32,
    /// In-order bytes not yet taken by the application.
    pub pending: u64,
    /// In-order bytes delivered in total.
    pub delivered_total: u64,
    /// Duplicate data bytes received (already delivered before).
    pub duplicate_bytes: u64,
}

/// What a data segment was to the receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataKind {
    /// Advanced `rcv_nxt`.
    InOrder,
    /// Above a hole.
    OutOfOrder,
    /// Entirely below `rcv_nxt`.
    Duplicate,
}

impl Receiver {
    /// Start receiving at `rcv_nxt`.
    pub fn new(rcv_nxt: u64, cfg: &TcpConfig) -> Self {
        Receiver { rcv_nxt, quick_left: cfg.quickack, ..Receiver::default() }
    }

    /// Take a data segment `[seq, seq + len)`.
    pub fn on_data(&mut self, now: Instant, seq: u64, len: u32, cfg: &TcpConfig) -> DataKind {
        let end = seq + u64::from(len);
        if end <= self.rcv_nxt {
            self.duplicate_bytes += u64::from(len);
            self.ack_now = true;
            return DataKind::Duplicate;
        }
        if seq > self.rcv_nxt {
            self.insert_ooo(seq, end);
            self.ack_now = true;
            return DataKind::OutOfOrder;
        }
        let had_hole = !self.ooo.is_empty();
        let old = self.rcv_nxt;
        self.rcv_nxt = end;
        while let Some(&(s, e)) = self.ooo.first() {
            if s > self.rcv_nxt {
                break;
            }
            self.rcv_nxt = self.rcv_nxt.max(e);
            self.ooo.remove(0);
        }
        let newly = self.rcv_nxt - old;
        self.pending += newly;
        self.delivered_total += newly;
        self.unacked += u64::from(len);
        if had_hole {
            // RFC 5681 §4.2: ACK at once a segment that fills (part of) a gap.
            self.ack_now = true;
        } else if self.quick_left > 0 {
            self.quick_left -= 1;
            self.ack_now = true;
        } else if self.unacked > u64::from(cfg.ack_every.saturating_sub(1)) * u64::from(cfg.mss()) {
            self.ack_now = true;
        } else if self.delack.is_none() {
            self.delack = Some(now + core::time::Duration::from_nanos((cfg.delack * 1e9).round() as u64));
        }
        DataKind::InOrder
    }

    fn insert_ooo(&mut self, s: u64, e: u64) {
        let i = self.ooo.partition_point(|r| r.1 < s);
        let mut ns = s;
        let mut ne = e;
        let mut j = i;
        while j < self.ooo.len() && self.ooo[j].0 <= ne {
            ns = ns.min(self.ooo[j].0);
            ne = ne.max(self.ooo[j].1);
            j += 1;
        }
        self.ooo.splice(i..j, [(ns, ne)]);
    }

    /// The delayed-ACK timer fired.
    pub fn on_delack(&mut self, now: Instant) {
        if self.delack.is_some_and(|d| d <= now) {
            self.delack = None;
            self.ack_now = true;
        }
    }

    /// An ACK (pure or piggybacked) carrying `rcv_nxt` was sent.
    pub fn ack_sent(&mut self) {
        self.unacked = 0;
        self.delack = None;
        self.ack_now = false;
    }

    /// Bytes held above a hole.
    pub fn out_of_order_bytes(&self) -> u64 {
        self.ooo.iter().map(|r| r.1 - r.0).sum()
    }
}
