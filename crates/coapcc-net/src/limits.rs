//! The server's resource budget: one set of limits for its UDP and its TCP side, each a
//! `coapcc server` flag with a default (see `docs/robustness.md`, which lists each with its
//! test).
//!
//! What a peer can make the server hold, and the bound on it:
//!
//! | state | bound |
//! |---|---|
//! | delayed (`/slow`) answers | `max_delayed` in all, `max_delayed_per_peer` per client (UDP: address and port; TCP: address), `max_delayed_per_connection` per TCP connection; beyond, 5.03 at once. A TCP connection's delayed answers end with it. |
//! | TCP connections | `accept_rate` new ones per second; `max_connections` at once; when full, the connection whose peer sent nothing for the longest and that has no delayed answer or observation is closed (Release) to admit a new one, and a new one is refused only when every connection has pending work (libcoap's `coap_context_set_max_idle_sessions`, `src/coap_session.c`) |
//! | a TCP connection's time | `csm_timeout` for the peer's CSM, `frame_timeout` for a frame that stopped arriving, `idle_timeout` without a frame or pending work: each 300 s, libcoap's `coap_context_set_session_timeout` (`src/coap_io.c`), which is also what ends a libcoap TCP session whose PDU stopped arriving (it keeps `session->partial_pdu` until then); no shorter, because the server cannot tell a stalled peer from TCP retransmitting on a slow lossy path (see [`ServerLimits::frame_timeout`]) |
//! | partial TCP frames | `max_buffered` bytes in all, beyond [`FREE_PARTIAL`] per connection; a connection that would exceed it is aborted |
//! | Pings | `ping_rate` per second per connection (a burst of one second's worth); beyond, no Pong |
//! | block-wise state | [`TransferLimits`] (uploads and kept representations per peer and in all, their timeout and linger) |
//! | observations | `max_observations` in all, `max_observations_per_peer` per peer (UDP: address and port; TCP: connection) |
//! | the `--log` file | rotated at `log_max_bytes` (one older file kept) |
//!
//! Californium bounds the same state per peer (`CoapConfig.java`: `MAX_ACTIVE_PEERS`,
//! `MAX_PEER_INACTIVITY_PERIOD`, `PEERS_MARK_AND_SWEEP_MESSAGES`, `MAX_RESOURCE_BODY_SIZE`,
//! `BLOCKWISE_STATUS_LIFETIME`, `MAX_SERVER_OBSERVES`).

use std::collections::BTreeMap;
use std::time::Duration;

use coapcc_proto::endpoint::TransferLimits;

/// Bytes of a partial frame a TCP connection may hold without drawing on the shared
/// `max_buffered` budget (one read buffer's worth: every small request fits).
pub const FREE_PARTIAL: usize = 16 * 1024;

/// The default time a TCP connection may wait for a byte from its peer in the middle of
/// something (its CSM, the rest of a frame): libcoap's session timeout, 300 s
/// (`COAP_DEFAULT_SESSION_TIMEOUT`). See [`ServerLimits::frame_timeout`] for why it is no
/// shorter.
pub const PEER_SILENCE_TIMEOUT: Duration = Duration::from_secs(300);

/// Every limit of a server. [`ServerLimits::default`] is what `coapcc server` uses without
/// flags.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerLimits {
    /// Delayed answers pending in all. Default 1024.
    pub max_delayed: usize,
    /// Delayed answers pending per client. Default 16.
    pub max_delayed_per_peer: usize,
    /// Delayed answers pending per TCP connection. Default 8.
    pub max_delayed_per_connection: usize,
    /// TCP connections at once. Default 256.
    pub max_connections: usize,
    /// TCP connections accepted per second (a burst of a tenth of a second's worth); further ones wait in
    /// the kernel's accept queue, so connection churn cannot take the server from the
    /// connections it serves. Default 100 (a burst of 10).
    pub accept_rate: f64,
    /// A TCP connection without a frame from the peer and without pending work for this long
    /// is closed with Release. Default 300 s (libcoap's session timeout).
    pub idle_timeout: Duration,
    /// The peer's CSM must arrive within this time of the connection. Default 300 s, as
    /// [`ServerLimits::frame_timeout`]: the CSM is the peer's first data segment and TCP
    /// retransmits it on the same schedule. Meanwhile a connection without its CSM is the
    /// first to be closed for a new one, so a silent socket cannot keep others out.
    pub csm_timeout: Duration,
    /// A frame that stopped arriving (no byte of it for this long) aborts the connection; a
    /// large frame on a slow link keeps arriving. Default 300 s ([`PEER_SILENCE_TIMEOUT`]).
    ///
    /// A receiver cannot tell a peer that stopped sending from a segment that TCP is still
    /// retransmitting. Linux doubles the retransmission timeout (RTO) at every expiry
    /// (RFC 6298 §5.5, `tcp_retransmit_timer` in `net/ipv4/tcp_timer.c`, at most
    /// `TCP_RTO_MAX` = 120 s) and keeps the doubled value until an RTT sample from a segment
    /// that was not retransmitted (`tcp_ack_update_rtt` in `net/ipv4/tcp_input.c`; without
    /// TCP timestamps, as on the testbed, Karn's rule gives none from a retransmission), so
    /// on a slow lossy path a few losses in a row, of data or of its ACKs, leave the receiver
    /// without a byte for tens of seconds while the connection is sound. On the testbed link
    /// (RTO about 2 s, 10 % loss each way) a 30 s frame timeout fired after 4 round trips of
    /// one segment failed (RTO 2, 4, 8, 16 s); 300 s outlasts 7 (2 + 4 + ... + 64 s, then
    /// 120 s). libcoap waits as long: it keeps a partial PDU until its session timeout.
    pub frame_timeout: Duration,
    /// Bytes of partial frames in all, beyond [`FREE_PARTIAL`] per connection. Default 8 MiB.
    pub max_buffered: usize,
    /// Pings answered per second per TCP connection (burst: one second's worth); beyond, no
    /// Pong. Default 10.
    pub ping_rate: f64,
    /// Block-wise transfer state.
    pub transfers: TransferLimits,
    /// Observations in all. Default 64.
    pub max_observations: usize,
    /// Observations per peer. Default 4.
    pub max_observations_per_peer: usize,
    /// The log file is rotated (to `FILE.1`) when it reaches this many bytes; 0: never.
    /// Default 16 MiB.
    pub log_max_bytes: u64,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_delayed: 1024,
            max_delayed_per_peer: 16,
            max_delayed_per_connection: 8,
            max_connections: 256,
            accept_rate: 100.0,
            idle_timeout: Duration::from_secs(300),
            csm_timeout: PEER_SILENCE_TIMEOUT,
            frame_timeout: PEER_SILENCE_TIMEOUT,
            max_buffered: 8 << 20,
            ping_rate: 10.0,
            transfers: TransferLimits::default(),
            max_observations: 64,
            max_observations_per_peer: 4,
            log_max_bytes: 16 << 20,
        }
    }
}

/// A count held against a global cap and per-key shares (delayed answers by client).
#[derive(Clone, Debug)]
pub struct Shares<K> {
    total: usize,
    per: BTreeMap<K, usize>,
    max_total: usize,
    max_per: usize,
}

impl<K: Ord + Clone> Shares<K> {
    /// No units taken; at most `max_total` in all and `max_per` per key.
    pub fn new(max_total: usize, max_per: usize) -> Self {
        Shares { total: 0, per: BTreeMap::new(), max_total, max_per }
    }

    /// Take one unit for `key`: `false` (nothing taken) over the key's share or the cap.
    pub fn try_take(&mut self, key: &K) -> bool {
        let n = self.of(key);
        if n >= self.max_per || self.total >= self.max_total {
            return false;
        }
        self.per.insert(key.clone(), n + 1);
        self.total += 1;
        true
    }

    /// Give back `n` units of `key`.
    pub fn give_back(&mut self, key: &K, n: usize) {
        if let Some(c) = self.per.get_mut(key) {
            let n = n.min(*c);
            *c -= n;
            self.total -= n;
            if *c == 0 {
                self.per.remove(key);
            }
        }
    }

    /// Units taken in all.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Units taken for `key`.
    pub fn of(&self, key: &K) -> usize {
        self.per.get(key).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// When the segment sent at time 0 arrives if its first `failures` round trips fail:
    /// Linux's schedule, the RTO doubled at every expiry up to `TCP_RTO_MAX` (120 s).
    fn arrival_after_failures(rto: Duration, failures: u32) -> Duration {
        (0..failures).map(|i| (rto * 2u32.pow(i)).min(Duration::from_secs(120))).sum()
    }

    #[test]
    fn peer_silence_timeouts_outlast_tcp_retransmission_on_the_testbed_link() {
        // The testbed link's RTO is about 2 s (RTT 0.65 s): a stall of 4 failed round trips
        // is 30 s, the former default, which aborted sound connections in the interop tests.
        let rto = Duration::from_secs(2);
        assert_eq!(arrival_after_failures(rto, 4), Duration::from_secs(30));
        let l = ServerLimits::default();
        let client_side =
            [crate::tcp_client::DEFAULT_TCP_TIMEOUT, crate::tcp_session::SessionConfig::default().write_timeout];
        for t in [l.frame_timeout, l.csm_timeout].into_iter().chain(client_side) {
            assert!(arrival_after_failures(rto, 7) < t, "{t:?}");
        }
        assert!(arrival_after_failures(rto, 8) > l.frame_timeout, "no longer than needed");
    }

    #[test]
    fn shares() {
        let mut s = Shares::new(5, 2);
        assert!(s.try_take(&1) && s.try_take(&1));
        assert!(!s.try_take(&1), "over the key's share");
        assert!(s.try_take(&2) && s.try_take(&2) && s.try_take(&3));
        assert!(!s.try_take(&4), "over the cap");
        s.give_back(&1, 5);
        assert_eq!((s.total(), s.of(&1)), (3, 0));
        assert!(s.try_take(&4));
    }
}
