//! Contiki's CSMA driver over `nullrdc`, as the Sky and Z1 firmware of the Cooja study builds
//! them ([`NullrdcConfig`]; the behaviour is in `net/contiki.rs`).
//!
//! Sources (Contiki 2.7 and 3.0, `core/net/mac/csma.c`, `core/net/mac/nullrdc.c`,
//! `dev/cc2420/cc2420.c`, `core/net/netstack.h`, `platform/{sky,z1}/contiki-conf.h`):
//! - **Neighbour queues** (`csma.c`): one queue per next hop, at most
//!   `CSMA_MAX_NEIGHBOR_QUEUES` (2) at once, packets from a pool of `QUEUEBUF_NUM` (4 on a Z1
//!   with IPv6, 8 on a Sky), and (3.0) at most `CSMA_MAX_PACKET_PER_NEIGHBOR` = `QUEUEBUF_NUM`
//!   per queue; a packet that finds no queue or no buffer is dropped. The first packet of a
//!   queue is sent at once (`ctimer_set(…, 0, …)`).
//! - **Sending a queue** (`nullrdc.c` `send_list`): every packet of the queue, one after the
//!   other, until one fails; each is one `send_one_packet`.
//! - **One transmission** (`cc2420_transmit`): `SRXON`, wait for a valid RSSI (8 symbols),
//!   `STXONCCA`: the radio transmits 12 symbols later if its CCA is clear, otherwise the send
//!   returns `RADIO_TX_COLLISION`.
//! - **No link-layer ACK** on Sky and Z1 (`NULLRDC_802154_AUTOACK` and `…_AUTOACK_HW` default
//!   to 0 and neither platform sets them): `nullrdc` does not ask for an ACK
//!   (`PACKETBUF_ATTR_MAC_ACK` stays 0, so the frame's ACK-request bit is clear and the
//!   CC2420's hardware auto-ACK never answers), a transmission that went out is `MAC_TX_OK`,
//!   and a frame lost on the air is lost. With `autoack` (`NULLRDC_CONF_802154_AUTOACK=1`, the
//!   Cooja native platform's setting) `nullrdc` waits `ACK_WAIT_TIME` (RTIMER_SECOND/2500 =
//!   400 µs) after the frame, and if it then senses a frame, `AFTER_ACK_DETECTED_WAIT_TIME`
//!   (RTIMER_SECOND/1500 = 667 µs) more, and reads what arrived: the ACK with its sequence
//!   number is `MAC_TX_OK`, anything else `MAC_TX_COLLISION`, nothing `MAC_TX_NOACK`.
//! - **Retries** (`csma.c` `packet_sent`): after `MAC_TX_COLLISION` or `MAC_TX_NOACK` the
//!   queue retries after T + U{0 … k·T − 1} clock ticks, T = `CLOCK_SECOND /
//!   NETSTACK_RDC_CHANNEL_CHECK_RATE` = 128 / 8 = 16 ticks = 125 ms (nullrdc has no channel
//!   check interval), k = 2^min(n, 3) in 3.0 and min(n + 1, 3) in 2.7, n the transmissions
//!   so far. Collisions do not count as transmissions: a packet that keeps finding the
//!   channel busy is retried for ever; one that is not acknowledged is dropped after
//!   `CSMA_MAX_MAC_TRANSMISSIONS` (3, `mac.contiki_max_transmissions`).

use serde::{Deserialize, Serialize};

/// The retry backoff of Contiki's `csma.c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CsmaBackoff {
    /// Contiki 3.0: T + U{0 … 2^min(n, 3)·T − 1} ticks.
    Exponential,
    /// Contiki 2.7: T + U{0 … min(n + 1, 3)·T − 1} ticks.
    Linear,
}

/// `nullrdc` and the release-dependent details of `csma.c` (used with `mac.csma = contiki`
/// and `mac.rdc = none`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NullrdcConfig {
    /// `NULLRDC_802154_AUTOACK`: ask for and wait for link-layer ACKs (off on Sky and Z1).
    pub autoack: bool,
    /// `ACK_WAIT_TIME`, µs after the end of the frame (400).
    pub ack_wait_us: u32,
    /// `AFTER_ACK_DETECTED_WAIT_TIME`, µs (667).
    pub after_ack_detected_us: u32,
    /// `CLOCK_SECOND`, ticks per second (128 on Sky and Z1).
    pub clock_second: u32,
    /// Retry backoff: `exponential` (3.0) or `linear` (2.7).
    pub backoff: CsmaBackoff,
    /// `CSMA_MAX_PACKET_PER_NEIGHBOR`: most packets in one neighbour queue (0: only the pool
    /// limits it, as in 2.7; 3.0 sets it to `QUEUEBUF_NUM`, i.e. the pool, the default).
    pub max_per_neighbor: u32,
}

impl Default for NullrdcConfig {
    fn default() -> Self {
        NullrdcConfig {
            autoack: false,
            ack_wait_us: 400,
            after_ack_detected_us: 667,
            clock_second: 128,
            backoff: CsmaBackoff::Exponential,
            max_per_neighbor: 0,
        }
    }
}

impl NullrdcConfig {
    /// Check the parameters; the first problem as a one-line message.
    pub fn validate(&self) -> Result<(), String> {
        if self.clock_second == 0 {
            return Err("mac.nullrdc.clock_second must be positive".into());
        }
        Ok(())
    }
}
