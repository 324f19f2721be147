//! Linux's delivery-rate sampling (`net/ipv4/tcp_rate.c`), the part the sender core does not
//! hold itself: which segment of a cumulative ACK gives the ACK's rate sample.

/// Whether a segment just acknowledged, sent when `delivered` segments had been delivered,
/// gives this ACK's rate sample instead of the one chosen so far (`prior`: its `delivered`),
/// as Linux's `tcp_rate_skb_delivered` decides (4.9-5.17:
/// `!rs->prior_delivered || after(scb->tx.delivered, rs->prior_delivered)`): the first
/// segment acknowledged, then only one sent after a later ACK, so of the segments sent
/// between the same two ACKs the earliest counts (while nothing had been delivered yet, the
/// latest).
pub(crate) fn gives_rate_sample(prior: Option<u64>, delivered: u64) -> bool {
    prior.map_or(true, |p| p == 0 || delivered > p)
}

#[cfg(test)]
mod tests {
    use super::gives_rate_sample;

    /// Which segment of one cumulative ACK gives the rate sample, in ACK order.
    fn chosen(delivered_at_send: &[u64]) -> usize {
        let mut prior = None;
        let mut idx = 0;
        for (i, d) in delivered_at_send.iter().enumerate() {
            if gives_rate_sample(prior, *d) {
                prior = Some(*d);
                idx = i;
            }
        }
        idx
    }

    #[test]
    fn the_earliest_segment_sent_after_the_latest_ack_gives_the_sample() {
        // Two sent after the ACK that brought `delivered` to 6, three after the one to 8:
        // the first of the three.
        assert_eq!(chosen(&[6, 6, 8, 8, 8]), 2);
        // A retransmission sent later (after delivered reached 9) wins wherever it is.
        assert_eq!(chosen(&[9, 6, 8, 8]), 0);
        assert_eq!(chosen(&[6, 9, 8]), 1);
        // Linux's `!rs->prior_delivered` test: segments sent before anything was delivered
        // give way to each other, so the last of them counts.
        assert_eq!(chosen(&[0, 0, 0]), 2);
        assert_eq!(chosen(&[0, 0, 3, 3]), 2);
    }
}
