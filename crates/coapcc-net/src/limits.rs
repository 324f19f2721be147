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
//! | a TCP connection's time | `csm_timeout` for the peer's CSM, `frame_timeout` for a frame that stopped arriving (libcoap clears half-open sessions after 30 s, `COAP_PARTIAL_SESSION_TIMEOUT_TICKS`), `idle_timeout` without a frame or pending work (libcoap's `coap_context_set_session_timeout`, 300 s, `src/coap_io.c`; Californium's `TCP.CONNECTION_IDLE_TIMEOUT`) |
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
    /// The peer's CSM must arrive within this time of the connection. Default 30 s (a
    /// connection without its CSM is half-open: libcoap clears half-open sessions after 30 s;
    /// meanwhile such a connection is the first to be closed for a new one).
    pub csm_timeout: Duration,
    /// A frame that stopped arriving (no byte of it for this long) aborts the connection; a
    /// large frame on a slow link keeps arriving. Default 30 s (libcoap's time for a half-open
    /// session).
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
            csm_timeout: Duration::from_secs(30),
            frame_timeout: Duration::from_secs(30),
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
