//! A packet's fate ([`Outcome`], [`Transit`]) and a direction's counters ([`LinkCounters`]).

use serde::Serialize;

use crate::Nanos;

/// What happened to a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Delivered at [`Transit::at`].
    Delivered,
    /// Tail-dropped by a rate stage's buffer at [`Transit::at`] (congestion drop).
    BufferDrop,
    /// Lost by a loss stage at [`Transit::at`] (link error).
    ErrorLoss,
    /// Larger than the MTU: refused, not counted as offered.
    Oversized,
}

/// A packet's fate and timestamps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transit {
    /// Fate.
    pub outcome: Outcome,
    /// Arrival at the first rate stage (enqueue time); the push time if there is none.
    pub enqueued: Nanos,
    /// Departure (last bit out) from the last rate stage it crossed; `enqueued` if none.
    pub departed: Nanos,
    /// Delivery time, or the time of the drop.
    pub at: Nanos,
}

/// Per-direction packet and byte counters (IP sizes). Fates are counted when the packet is
/// pushed, since they are decided then; `offered = delivered + buffer_drop + error_loss`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LinkCounters {
    /// Packets offered to the direction.
    pub offered_packets: u64,
    /// Bytes offered.
    pub offered_bytes: u64,
    /// Packets delivered (or that will be, at their delivery time).
    pub delivered_packets: u64,
    /// Bytes delivered.
    pub delivered_bytes: u64,
    /// Packets tail-dropped by a buffer.
    pub buffer_drop_packets: u64,
    /// Bytes tail-dropped.
    pub buffer_drop_bytes: u64,
    /// Packets lost to link errors.
    pub error_loss_packets: u64,
    /// Bytes lost to link errors.
    pub error_loss_bytes: u64,
}

impl LinkCounters {
    // The offered counters are derived when read (`offered = delivered + buffer_drop +
    // error_loss`): the per-packet path counts each packet once, under its fate.
    #[inline(always)]
    pub(crate) fn count_delivered(&mut self, size: u32) {
        self.delivered_packets += 1;
        self.delivered_bytes += size as u64;
    }

    #[inline(always)]
    pub(crate) fn count_buffer_drop(&mut self, size: u32) {
        self.buffer_drop_packets += 1;
        self.buffer_drop_bytes += size as u64;
    }

    #[inline(always)]
    pub(crate) fn count_error_loss(&mut self, size: u32) {
        self.error_loss_packets += 1;
        self.error_loss_bytes += size as u64;
    }

    pub(crate) fn with_offered(mut self) -> Self {
        self.offered_packets = self.delivered_packets + self.buffer_drop_packets + self.error_loss_packets;
        self.offered_bytes = self.delivered_bytes + self.buffer_drop_bytes + self.error_loss_bytes;
        self
    }
}

#[cfg(test)]
mod tests {
    use crate::*;

    #[test]
    fn counters_conserve_packets_and_bytes() {
        let chain = testbed_downlink(1_000, LossModel::Bernoulli { p: 0.1 });
        let mut l = LinkPath::new(&chain, 296, 5, 0).unwrap();
        for i in 0..5_000u64 {
            l.transmit(i * 5_000_000, 40 + (i % 200) as u32);
        }
        let c = l.counters();
        assert!(c.buffer_drop_packets > 0 && c.error_loss_packets > 0);
        assert_eq!(c.offered_packets, c.delivered_packets + c.buffer_drop_packets + c.error_loss_packets);
        assert_eq!(c.offered_bytes, c.delivered_bytes + c.buffer_drop_bytes + c.error_loss_bytes);
        let r = l.rate_stage().unwrap().stats();
        assert_eq!(r.admitted_packets + r.dropped_packets, c.offered_packets);
    }
}
