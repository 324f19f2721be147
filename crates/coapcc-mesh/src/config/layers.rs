//! The sections of a mesh network's configuration, one per layer: the radio medium
//! ([`RadioConfig`]), the MAC ([`MacConfig`]), the frame sizes ([`FrameConfig`]) and the
//! routing ([`RoutingConfig`]), each with its defaults (IEEE 802.15.4 at 2.4 GHz, Contiki's
//! stack sizes) and, where the published experiments fixed one, the value they used.

use serde::{Deserialize, Serialize};

use crate::contiki::NullrdcConfig;
use crate::mrm::MrmConfig;
use crate::rpl::RplConfig;

/// Shape of the packet-reception-ratio curve between `range_full_m` and
/// `interference_range_m`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Curve {
    /// PRR falls linearly from 1 at `range_full_m` to 0 at `interference_range_m`.
    Linear,
    /// Unit-disk (Cooja UDGM-like): PRR 1 up to `range_full_m`, 0 beyond.
    Step,
}

/// Physical layer and radio medium.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RadioConfig {
    /// Bit rate, bit/s (802.15.4 at 2.4 GHz: 250 000).
    pub bitrate_bps: u32,
    /// Distance up to which every frame is received (no interference), metres. The study
    /// tuned Cooja's MRM to 100 % success at 10 m.
    pub range_full_m: f64,
    /// Interference range, metres: a transmission from closer than this (inclusive) interferes
    /// with a reception; the study used 20 m. Frames from farther away are neither received nor
    /// heard.
    pub interference_range_m: f64,
    /// Reception curve between the two ranges. The study's curve (its Fig. 1) is not
    /// available numerically; the default is linear.
    pub curve: Curve,
    /// Energy-detection range of clear channel assessment, metres (default: the interference
    /// range, i.e. a node senses every transmission that could disturb its neighbours).
    pub cca_range_m: f64,
    /// Capture threshold, dB: a locked frame survives interference while its power exceeds the
    /// sum of the interferers' by at least this much. `null` disables capture (any overlap
    /// destroys both frames). Default 3 dB (CC2420-class co-channel rejection).
    pub capture_db: Option<f64>,
    /// Path-loss exponent of the log-distance power model used only for capture decisions.
    pub path_loss_exponent: f64,
    /// PHY header: preamble 4 + SFD 1 + length 1 bytes.
    pub phy_header_bytes: u32,
    /// Cooja's MRM reception rules (`null`: the reception curve, `capture_db` and the ranges
    /// above). With MRM, `curve`, `range_full_m`, `interference_range_m`, `cca_range_m`,
    /// `capture_db` and `path_loss_exponent` are not used.
    pub mrm: Option<MrmConfig>,
}

/// Unslotted CSMA/CA (IEEE 802.15.4-2006 §7.5.1.4) with acknowledged unicast frames.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MacConfig {
    /// macMinBE (standard default 3).
    pub min_be: u8,
    /// macMaxBE (standard default 5).
    pub max_be: u8,
    /// macMaxCSMABackoffs (standard default 4): busy CCAs tolerated before a channel access
    /// failure.
    pub max_csma_backoffs: u8,
    /// macMaxFrameRetries (standard default 3): retransmissions after a missing ACK.
    pub max_frame_retries: u8,
    /// aUnitBackoffPeriod, µs (20 symbols = 320 µs).
    pub unit_backoff_us: u32,
    /// CCA duration, µs (8 symbols = 128 µs).
    pub cca_us: u32,
    /// aTurnaroundTime, µs (12 symbols = 192 µs): CCA-to-transmit and receive-to-ACK.
    pub turnaround_us: u32,
    /// macAckWaitDuration, µs after the end of a data frame (54 symbols = 864 µs).
    pub ack_wait_us: u32,
    /// MAC ACK frame without the PHY header: FCF 2 + sequence 1 + FCS 2 bytes.
    pub ack_frame_bytes: u32,
    /// Packets a node can hold (in service included): Contiki's `QUEUEBUF_NUM` (8 on a Sky, 4
    /// on a Z1 with IPv6 and in `rpl-border-router`).
    pub queue_packets: u32,
    /// Most distinct next hops with packets queued at once (0: unlimited, the default).
    /// Contiki's `csma.c` keeps one queue per next hop from a fixed pool,
    /// `CSMA_MAX_NEIGHBOR_QUEUES` = 2 in 2.7 and 3.0; a packet for a further next hop is
    /// dropped.
    pub max_neighbor_queues: u32,
    /// Drop duplicate data frames (same sender and sequence number) after a lost MAC ACK, as
    /// Contiki does. With `false` a duplicate is forwarded again.
    pub duplicate_detection: bool,
    /// Channel-access and retransmission rules: `ieee802154` (the standard's unslotted
    /// CSMA/CA with the constants above) or `contiki` (Contiki's `csma.c`: over `nullrdc`
    /// with `rdc = none`, `crate::contiki`; over ContikiMAC with `rdc = contikimac`).
    pub csma: CsmaMode,
    /// `contiki` over ContikiMAC: the clock tick, µs (1/128 s = 7 812.5 µs) in which the
    /// random part of a retransmission delay is drawn (the time base T is the channel check
    /// interval). Over `nullrdc`, T is `nullrdc.clock_second / channel_check_rate_hz` ticks.
    pub contiki_timebase_us: u32,
    /// `contiki`: CSMA_MAX_MAC_TRANSMISSIONS (3): transmissions of a frame before it is
    /// dropped (busy-channel rounds count once per `contiki_max_backoff_exponent + 1`).
    pub contiki_max_transmissions: u8,
    /// `contiki`: CSMA_MAX_BACKOFF_EXPONENT (3): a busy CCA retries after T·(1 + U{0..2^c − 1}),
    /// c = busy CCAs so far, up to this exponent.
    pub contiki_max_backoff_exponent: u8,
    /// Radio duty cycling: `none` (the study: radios always on) or `contikimac`.
    pub rdc: Rdc,
    /// ContikiMAC channel check rate, Hz (Contiki's default 8): each node wakes every
    /// 1/rate seconds at its own random phase.
    pub channel_check_rate_hz: f64,
    /// ContikiMAC: gap between two copies of a strobed frame, µs (Contiki: 0.4 ms).
    pub strobe_gap_us: u32,
    /// ContikiMAC phase optimisation: after a first MAC-acknowledged frame to a neighbour the
    /// sender knows its wake-up phase and starts strobing `phase_guard_us` before it.
    pub phase_lock: bool,
    /// Phase optimisation guard time, µs.
    pub phase_guard_us: u32,
    /// With duty cycling and the `ieee802154` rules, the most channel check intervals a backoff
    /// may last: U{0..min(n, max)} whole intervals, n = attempts so far (the first attempt
    /// goes at once), instead of unit periods, since a strobe keeps the channel busy for up to
    /// one interval. Default 3. (The `contiki` rules use the interval as their time base.)
    pub rdc_max_backoff_intervals: u32,
    /// Contiki's `nullrdc` and the release details of its `csma.c` (with `csma = contiki`
    /// and `rdc = none`).
    pub nullrdc: NullrdcConfig,
}

/// Channel access and MAC retransmission rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CsmaMode {
    /// IEEE 802.15.4-2006 unslotted CSMA/CA: random backoff of U{0..2^BE − 1} unit periods
    /// before every CCA, macMaxCSMABackoffs, macMaxFrameRetries.
    Ieee802154,
    /// Contiki 3.0 `csma.c`: a frame is sent at once (one CCA); a busy channel or a missing
    /// ACK retries after T·(1 + U{0..2^c − 1}) (c = busy CCAs, capped; 0 after a missing ACK),
    /// at most `contiki_max_transmissions` transmissions; after a failed frame the next one
    /// waits T.
    Contiki,
}

/// Radio duty cycling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rdc {
    /// Radios always on (Cooja runs of Ancillotti & Bruno; Contiki's nullrdc).
    None,
    /// ContikiMAC-like: receivers sleep between periodic channel checks; a unicast frame is
    /// strobed (repeated copies) until the receiver's next wake-up, which receives the first
    /// whole copy after it. Makarem's Contiki setups.
    Contikimac,
}

/// Bytes each layer adds to a 32-byte CoAP unit. The defaults describe Contiki's stack:
/// 802.15.4 frames with 64-bit addresses and PAN-ID compression, 6LoWPAN IPHC with
/// context-derived addresses, NHC-compressed UDP with non-compressible ports (5683), the RPL
/// hop-by-hop option (RFC 6553) of storing mode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FrameConfig {
    /// 802.15.4 MAC header + FCS: FCF 2 + sequence 1 + PAN 2 + destination 8 + source 8 +
    /// FCS 2 = 23 bytes.
    pub mac_header_bytes: u32,
    /// Largest PSDU (aMaxPHYPacketSize = 127). Larger frames are rejected (6LoWPAN
    /// fragmentation is not modelled).
    pub max_psdu_bytes: u32,
    /// 6LoWPAN IPHC-compressed IPv6 header: dispatch/IPHC 2 + context id 1 bytes.
    pub lowpan_ipv6_bytes: u32,
    /// NHC-compressed UDP header: NHC 1 + ports 4 + checksum 2 bytes.
    pub lowpan_udp_bytes: u32,
    /// IPv6 hop-by-hop header with the RPL option (RFC 6553) carried by data packets in
    /// storing mode: 8 bytes (0 to omit).
    pub rpl_option_bytes: u32,
    /// CoAP fixed header (4 bytes).
    pub coap_header_bytes: u32,
    /// CoAP token length (Contiki Erbium's client: 2 bytes).
    pub coap_token_bytes: u32,
    /// Options of a request other than Block1 (Uri-Path "res": 1 + 3 bytes).
    pub coap_request_option_bytes: u32,
}

/// Objective function of the DODAG.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Objective {
    /// Expected transmission count, link ETX = 1 / PRR² (data and ACK directions): like
    /// Contiki's MRHOF.
    Etx,
    /// Hop count over links of PRR ≥ `min_link_prr` (like OF0), ties to the lowest parent
    /// index.
    Hops,
    /// Hop count over links of PRR ≥ `min_link_prr`, ties to the link of higher PRR: Contiki's
    /// MRHOF when links are not acknowledged (`rpl-mrhof.c`: every new neighbour starts at the
    /// same link metric, and an unacknowledged transmission always reports one attempt, so a
    /// link's ETX never grows with its losses).
    HopsLink,
}

/// DODAG construction and storing-mode forwarding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RoutingConfig {
    /// Objective function (default ETX, as Contiki's MRHOF).
    pub objective: Objective,
    /// Links with a PRR below this are never used as routes.
    pub min_link_prr: f64,
    /// DODAG root (border router) node index; `null`: the node nearest the geometric centre
    /// of the topology, lowest index on ties (never the sink).
    pub root: Option<usize>,
    /// CoAP sink (server) node index; `null`: node 0 (a corner of a grid).
    pub sink: Option<usize>,
    /// Processing delay per hop before a received packet is queued for forwarding, µs.
    pub forward_delay_us: u32,
    /// RPL control traffic (DIO Trickle, DAO).
    pub rpl: RplConfig,
    /// Whether the DODAG root also hosts a client (a host places one client on every node
    /// but the sink, instead of every node but the root and the sink). The Cooja study does
    /// not say: `false`, n² − 2 clients in an n × n grid, is our reading.
    pub root_client: bool,
}

impl Default for RadioConfig {
    fn default() -> Self {
        RadioConfig {
            bitrate_bps: 250_000,
            range_full_m: 10.0,
            interference_range_m: 20.0,
            curve: Curve::Linear,
            cca_range_m: 20.0,
            capture_db: Some(3.0),
            path_loss_exponent: 3.0,
            phy_header_bytes: 6,
            mrm: None,
        }
    }
}

impl Default for MacConfig {
    fn default() -> Self {
        MacConfig {
            min_be: 3,
            max_be: 5,
            max_csma_backoffs: 4,
            max_frame_retries: 3,
            unit_backoff_us: 320,
            cca_us: 128,
            turnaround_us: 192,
            ack_wait_us: 864,
            ack_frame_bytes: 5,
            queue_packets: 8,
            max_neighbor_queues: 0,
            duplicate_detection: true,
            csma: CsmaMode::Ieee802154,
            contiki_timebase_us: 7_813,
            contiki_max_transmissions: 3,
            contiki_max_backoff_exponent: 3,
            rdc: Rdc::None,
            channel_check_rate_hz: 8.0,
            strobe_gap_us: 400,
            phase_lock: true,
            phase_guard_us: 2_000,
            rdc_max_backoff_intervals: 3,
            nullrdc: NullrdcConfig::default(),
        }
    }
}

impl Default for FrameConfig {
    fn default() -> Self {
        FrameConfig {
            mac_header_bytes: 23,
            max_psdu_bytes: 127,
            lowpan_ipv6_bytes: 3,
            lowpan_udp_bytes: 7,
            rpl_option_bytes: 8,
            coap_header_bytes: 4,
            coap_token_bytes: 2,
            coap_request_option_bytes: 4,
        }
    }
}

impl Default for RoutingConfig {
    fn default() -> Self {
        RoutingConfig {
            objective: Objective::Etx,
            min_link_prr: 0.1,
            root: None,
            sink: None,
            forward_delay_us: 0,
            rpl: RplConfig::default(),
            root_client: false,
        }
    }
}
