//! The network's counters: MAC and medium events ([`MacCounters`]), packets dropped by
//! cause ([`NetDrops`]; with the host's causes, [`LossCauses`]) and packet accounting ([`Conservation`]).

use serde::Serialize;

/// Packets the network dropped, by cause (every node; a request or response, any copy).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NetDrops {
    /// Packets dropped by a full node queue.
    pub buffer_overflow: u64,
    /// Packets dropped because every neighbour queue was taken by other next hops.
    pub neighbor_queues_full: u64,
    /// Packets dropped by the MAC after macMaxFrameRetries retransmissions without ACK.
    pub mac_no_ack: u64,
    /// Packets dropped by the MAC after macMaxCSMABackoffs busy CCAs.
    pub mac_channel_access: u64,
    /// Packets lost on the air to a collision at the next hop, without link-layer ACKs to
    /// recover them (Contiki's nullrdc on Sky and Z1).
    pub air_collision: u64,
    /// Packets lost on the air because the next hop's reception draw failed, without
    /// link-layer ACKs.
    pub air_fading: u64,
    /// Packets lost in the next hop's receive FIFO (overflow, or flushed after one).
    pub fifo_overflow: u64,
}

/// Why messages and packets were lost: the host's two causes (the message workload's) and
/// the network's ([`NetDrops`], its keys inline), as `coapcc mesh` reports them.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LossCauses {
    /// Messages lost by the no-caching rule.
    pub no_caching: u64,
    /// Messages lost because a unit gave up after MAX_RETRANSMIT.
    pub coap_give_up: u64,
    /// Packets the network dropped, by cause.
    #[serde(flatten)]
    pub net: NetDrops,
}

/// MAC and medium counters (all nodes).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MacCounters {
    /// Data-frame transmissions (retries included).
    pub data_tx: u64,
    /// MAC ACK transmissions.
    pub ack_tx: u64,
    /// Data frames acknowledged at the MAC.
    pub acked: u64,
    /// Busy CCAs.
    pub cca_busy: u64,
    /// Frames lost at their addressee to a collision (interference without capture, or the
    /// addressee busy with another frame or transmitting).
    pub collisions: u64,
    /// Frames lost at their addressee to the reception curve alone.
    pub fading: u64,
    /// Retransmitted data frames dropped as duplicates by their receiver.
    pub duplicates_suppressed: u64,
    /// Duplicates forwarded again (`duplicate_detection = false`).
    pub duplicates_forwarded: u64,
    /// MAC give-ups of frames the next hop had in fact received (not a loss).
    pub false_drops: u64,
    /// MAC ACKs not sent because the receiver was transmitting.
    pub acks_skipped: u64,
    /// Frames lost in a receive FIFO (RPL's and ACKs included).
    pub fifo_overflows: u64,
    /// Transmissions of RPL's DIOs and DAOs (included in `data_tx`).
    pub control_tx: u64,
}

/// Packet accounting: `created + duplicates_forwarded = delivered + dropped + in_network_at_end`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Conservation {
    /// Packets created by the application (request and response copies).
    pub created: u64,
    /// Packets that reached their final destination.
    pub delivered: u64,
    /// Packets dropped (buffer overflow, neighbour queues, MAC no-ACK, channel access, lost
    /// on the air without link-layer ACKs, receive FIFO).
    pub dropped: u64,
    /// Packets queued or being forwarded when the run ended.
    pub in_network_at_end: u64,
}
